//! Configuration and errors shared by the output-port schedulers: EtheReal's cyclic scheduler
//! (EtheReal §3.3), the timing wheel and the QSR port with weighted fair queueing (QSR §3.1), plus the port's control bucket that bounds
//! signalling ahead of reserved traffic in both. `docs/scheduler.md` §1c and §7 explain the
//! fields.

use std::time::Duration;

use super::bucket::TokenBucket;
use super::cyclic::DEFAULT_CYCLE;
use super::pool::PoolConfig;
use crate::node::Medium;

/// Errors of the output-port schedulers (cyclic and timing wheel).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchedError {
    /// The cycle is outside [`super::MIN_CYCLE`] ..= [`super::MAX_CYCLE`].
    #[error("cycle time {0:?} is outside 100 µs ..= 1 s")]
    CycleOutOfRange(Duration),
    /// The line rate (or the medium's rate) is zero.
    #[error("line rate must be positive")]
    ZeroLineRate,
    /// The configured maximum number of connections is reached.
    #[error("connection table full ({0} connections)")]
    TooManyConnections(usize),
    /// The reserved rate is zero.
    #[error("reserved rate must be positive")]
    ZeroRate,
    /// The maximum packet is 0 or longer than 65535 bytes.
    #[error("maximum packet of {0} bytes is outside 1 ..= 65535")]
    BadMaxPacket(usize),
    /// The maximum burst is smaller than the maximum packet.
    #[error("maximum burst of {burst} bytes is smaller than the maximum packet of {packet} bytes")]
    BurstBelowPacket {
        /// Requested maximum burst in bytes.
        burst: usize,
        /// Requested maximum packet in bytes.
        packet: usize,
    },
    /// The reservations, the control bucket's rate and the default floor would exceed the line
    /// rate.
    #[error("reservations would total {total_bps} bit/s, above the line rate of {line_bps} bit/s")]
    Oversubscribed {
        /// Sum of the reservations including the refused one, plus the control bucket's rate and
        /// the default floor.
        total_bps: u64,
        /// The port's line rate.
        line_bps: u64,
    },
    /// The control bucket's rate is not below the line rate, or its depth is below one
    /// minimum-size frame (84 wire bytes).
    #[error("control bucket of {rate_bps} bit/s and {burst_bytes} bytes does not fit the line")]
    BadControlBucket {
        /// Configured rate in bit/s.
        rate_bps: u64,
        /// Configured depth in wire bytes.
        burst_bytes: usize,
    },
    /// The timing wheel's granularity is outside [`MIN_GRANULARITY`] ..= [`MAX_GRANULARITY`].
    #[error("timing wheel granularity {0:?} is outside 1 µs ..= 10 ms")]
    GranularityOutOfRange(Duration),
    /// The timing wheel's slot count is not a power of two in 64 ..= 2²⁰.
    #[error("timing wheel of {0} slots: must be a power of two in 64 ..= 1048576")]
    BadWheelSlots(usize),
    /// The port's largest frame is outside 60 ..= 65535 bytes.
    #[error("largest frame of {0} bytes is outside 60 ..= 65535")]
    BadMaxFrame(usize),
    /// The default-traffic floor and the control rate together exceed the line rate.
    #[error(
        "default floor of {floor_bps} bit/s and the control rate exceed the {line_bps} bit/s line"
    )]
    BadDefaultFloor {
        /// Configured floor, bit/s.
        floor_bps: u64,
        /// The port's line rate.
        line_bps: u64,
    },
    /// The port's scheduler does not offer the flow's service: Controlled-Load flows need a
    /// port of kind [`super::SchedulerKind::Qsr`].
    #[error("this port's scheduler does not offer {0:?} service")]
    UnsupportedService(super::Service),
}

/// Shortest timing-wheel slot.
pub const MIN_GRANULARITY: Duration = Duration::from_micros(1);
/// Longest timing-wheel slot.
pub const MAX_GRANULARITY: Duration = Duration::from_millis(10);
/// Default timing-wheel slot: releases are at most 10 µs late, a few frame times at 1 Gbit/s.
pub const DEFAULT_GRANULARITY: Duration = Duration::from_micros(10);
/// Default number of timing-wheel slots: with [`DEFAULT_GRANULARITY`] a 10.24 ms horizon, beyond
/// which release times wait in the overflow heap.
pub const DEFAULT_WHEEL_SLOTS: usize = 1024;
/// Default largest frame a port sends: 1514 bytes without FCS (a 1518-byte Ethernet frame).
pub const DEFAULT_MAX_FRAME: usize = 1514;
/// Default control bucket depth in wire bytes: two maximum-size frames (2 × 1538), so a SETUP
/// and its answer, or a HELLO and a SETUP, can go back to back without waiting for tokens.
pub const DEFAULT_CONTROL_BURST_BYTES: usize = 2 * 1538;
/// The default control rate is the line rate divided by this (1 %).
pub const CONTROL_RATE_DIVISOR: u64 = 100;

/// Configuration of one port's scheduler.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchedConfig {
    /// Cycle length, [`super::MIN_CYCLE`] ..= [`super::MAX_CYCLE`].
    pub cycle: Duration,
    /// What the port transmits on: a [`Medium::FullDuplex`] port is paced at its rate, other
    /// media are not paced (the driver serialises).
    pub medium: Medium,
    /// Rate the reservations are checked against and the default non-real-time FIFO is sized
    /// from, bit/s (> 0): the medium's rate, or a nominal rate for an unpaced port.
    pub line_rate_bps: u64,
    /// Bound of the non-real-time FIFO in bytes; `None` = 2 × line rate × cycle (EtheReal §3.3).
    pub nrt_queue_bytes: Option<usize>,
    /// Most real-time connections this port accepts.
    pub max_connections: usize,
    /// The port's buffer pools (QSR §3.1).
    pub pools: PoolConfig,
    /// Rate of the control bucket in wire bit/s (< line rate; 0: only the depth, once). Control frames within
    /// the bucket go ahead of everything; beyond it they wait behind reserved frames that may go
    /// (still ahead of non-real-time frames), so at most `control_burst_bytes × 8 + rate × t`
    /// wire bits of control ever go ahead of reserved traffic in a window of length `t`.
    /// Default 1 % of the line rate: far above what signalling needs (a SETUP per connection,
    /// a HELLO per second) and a small, bounded dent in every real-time bound.
    pub control_rate_bps: u64,
    /// Depth of the control bucket in wire bytes ([`rtlan_wire::cost::wire_bytes`], ≥ 84);
    /// default [`DEFAULT_CONTROL_BURST_BYTES`].
    pub control_burst_bytes: usize,
    /// Lateness a single send may have without breaking a delay bound: half the node's
    /// lateness budget (a frame may meet one late receive and one late send at a hop; docs/delay.md
    /// §4). A later send is counted in [`super::SchedStats::budget_violations`]. `None`: not
    /// checked.
    pub late_budget: Option<Duration>,
    /// Slot length of the timing wheel ([`super::WheelScheduler`]): a reserved frame is released
    /// at the first slot boundary at or after its eligibility time, so at most this late.
    pub granularity: Duration,
    /// Number of timing-wheel slots (a power of two, 64 ..= 2²⁰); release times beyond
    /// `wheel_slots × granularity` wait in an overflow heap.
    pub wheel_slots: usize,
    /// Largest frame the port may send, bytes without FCS (60 ..= 65535): the non-preemptive
    /// blocking term of the timing wheel's deadlines. The wheel drops longer frames (counted)
    /// and refuses flows whose maximum packet is longer.
    pub max_frame: usize,
    /// The nominal rate set aside for default (non-real-time) traffic, wire bit/s (QSR §3.1:
    /// "the base amount of bandwidth set aside for default IP traffic"): booked like a
    /// reservation, so `Σ reserved + control rate + floor ≤ line rate` at every `add_flow`, and
    /// on a [`super::SchedulerKind::Qsr`] port the default FIFO's weight in the fair queueing
    /// discipline. Default 0: nothing set aside (default traffic gets what is left).
    pub default_floor_bps: u64,
}

impl SchedConfig {
    /// The paper's defaults for a full-duplex port of `line_rate_bps`, paced: 10 ms cycle,
    /// non-real-time FIFO of 2 × rate × cycle, up to 16384 connections, unlimited pools.
    pub fn new(line_rate_bps: u64) -> SchedConfig {
        SchedConfig {
            cycle: DEFAULT_CYCLE,
            medium: Medium::FullDuplex {
                rate_bps: line_rate_bps,
            },
            line_rate_bps,
            nrt_queue_bytes: None,
            max_connections: 16_384,
            pools: PoolConfig::UNLIMITED,
            control_rate_bps: line_rate_bps / CONTROL_RATE_DIVISOR,
            control_burst_bytes: DEFAULT_CONTROL_BURST_BYTES,
            late_budget: None,
            granularity: DEFAULT_GRANULARITY,
            wheel_slots: DEFAULT_WHEEL_SLOTS,
            max_frame: DEFAULT_MAX_FRAME,
            default_floor_bps: 0,
        }
    }

    /// The same defaults on `medium`; `line_rate_bps` is the medium's rate where it has one and
    /// `nominal_rate_bps` for an [`Medium::Unpaced`] port.
    pub fn for_medium(medium: Medium, nominal_rate_bps: u64) -> SchedConfig {
        let line_rate_bps = medium.rate_bps().unwrap_or(nominal_rate_bps);
        SchedConfig {
            medium,
            ..SchedConfig::new(line_rate_bps)
        }
    }

    /// The control bucket (full), after checking it fits the line.
    pub(crate) fn control_bucket(&self) -> Result<TokenBucket, SchedError> {
        let bad = SchedError::BadControlBucket {
            rate_bps: self.control_rate_bps,
            burst_bytes: self.control_burst_bytes,
        };
        if self.control_rate_bps >= self.line_rate_bps
            || (self.control_burst_bytes as u64) < rtlan_wire::cost::MIN_WIRE_BYTES
        {
            return Err(bad);
        }
        let depth_bits = u64::try_from(self.control_burst_bytes)
            .ok()
            .and_then(|b| b.checked_mul(8))
            .ok_or(bad)?;
        Ok(TokenBucket::new(self.control_rate_bps, depth_bits))
    }
}
