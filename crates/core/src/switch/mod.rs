//! The learning switch core: EtheReal §3.3 (destination classes, output queueing, non-real-time
//! queue sized at twice rate × cycle time) and §3.4 (backward learning, ARP probing from 0.0.0.0,
//! the switch's internal ARP cache), with output pacing on virtual time (DESIGN.md §7).
//!
//! The core is sans-IO: every call takes `now`, nothing reads a clock or touches a socket. See
//! [`Switch`] for the order in which a driver calls it. Each output port's queues, buffer pools,
//! pacer and cyclic scheduler live in [`crate::egress`], shared with the other node kinds.
//! Submodules, by concern: `learning` (the learning table), `arp_cache` (the internal ARP
//! cache), `pending` (frames held
//! while their destination is probed), `ingress` (what happens to a received frame), `control`
//! (the EtheReal §2.2/§3.4 signalling: SETUP hop by hop, HELLO) with its real-time state in
//! `signal`, `teardown` (TEARDOWN with retransmission, REFRESH soft state), `introspect`
//! (reporting: connections, bookings, per-hop setup latency), `rt` (connection table, ids,
//! admission, the data path) and `sched` (EtheReal §3.3: the preemptive-discard meter of each
//! host-facing input port, and the cyclic scheduler re-exported from [`crate::egress`]);
//! `protect` (control-plane protection: per-port policing, control budget, per-port shares),
//! `arp_guard` (no ARP-driven move of a bound address without re-probing its owner) and
//! `setups` (the indexed table of SETUPs in progress).

use std::net::Ipv4Addr;
use std::time::Duration;

use rtlan_wire::ethernet::Address;

use crate::time::Instant;
use crate::timer::{TimerKind, TimerTable};

mod arp_cache;
mod arp_guard;
mod bound;
mod control;
mod failure;
mod fastpath;
mod ingress;
mod introspect;
mod learning;
mod pending;
pub(crate) mod protect;
mod recovery;
pub mod rt;
pub mod sched;
mod security;
mod setups;
mod signal;
mod stp;
mod teardown;
#[cfg(test)]
mod tests;

pub use crate::egress::{PACING_CATCHUP, PACING_LATE_THRESHOLD};
pub use arp_cache::ARP_CACHE_CAPACITY;
pub use arp_guard::MAX_CHALLENGES;
pub use bound::{control_burst_bytes, hop_terms, port_server, work_budget, HopTerms, ServerParams};
pub use introspect::{
    ConnectionInfo, LatencyBuckets, RtPortInfo, SchedPortInfo, SetupLatency,
    SETUP_LATENCY_BOUNDS_NS, SETUP_LATENCY_SAMPLES,
};
pub use protect::{
    PortLimits, ProtectConfig, ProtectPortStats, ProtectStats, Rate, StaticBinding,
    DEFAULT_ARP_REPROBE_TIMEOUT, DEFAULT_CONTROL_BUDGET, HOST_LIMITS, TRUNK_LIMITS,
};
pub use rtlan_wire::cost::{tx_time, wire_bits, MIN_FRAME_BYTES, WIRE_OVERHEAD_BYTES};
pub use security::{PortRole, PortSecurity};
pub use stp::{StpConfig, StpCounters, StpPortConfig, StpPortInfo, StpStatus};

use crate::egress::{PortScheduler, SchedulerKind};
use crate::node::Medium;
use arp_cache::ArpCache;
pub use fastpath::FdbSync;
use learning::Fdb;
pub use learning::{FdbChange, FDB_CAPACITY, MAX_FDB_CHANGES};
use pending::Pending;
use rtlan_wire::control::ProxyMacPlan;
use sched::{NrtMeter, SchedConfig};
use signal::RtState;

/// Longest frame (without FCS) the switch accepts; longer ones are counted as malformed.
pub const MAX_FRAME_LEN: usize = 2048;

/// Default [`RtConfig::lateness_budget`]: 400 µs, so each send may be 200 µs late — exactly what
/// the pacer makes up after a late wake-up ([`crate::egress::PACING_CATCHUP`]). A quiet host
/// wakes within tens of µs; the 2-core lab machine under floods was measured late by up to
/// 3.2 ms with three switches, and its topologies declare their own budget (`docs/delay.md`).
pub const DEFAULT_LATENESS_BUDGET: Duration = Duration::from_micros(400);

/// Default [`RtConfig::reshape_allowance`]: 100 ms, longer than the worst stall of a lab host's
/// transmit path measured on the 2-core lab machine (≈ 70 ms, docs/delay.md §3).
pub const DEFAULT_RESHAPE_ALLOWANCE: Duration = Duration::from_millis(100);

/// Default [`RtConfig::reshape_buffer_bytes`]: 4 MiB, 100 ms of 330 Mbit/s of held frames.
pub const DEFAULT_RESHAPE_BUFFER_BYTES: usize = 4 << 20;

/// Default [`RtConfig::max_frame_bytes`]: an 802.1Q-tagged 1500-byte-MTU frame without FCS.
pub const DEFAULT_MAX_FRAME_BYTES: usize = 1518;

/// Smallest default non-real-time queue bound of a paced port, in bytes.
pub const MIN_NRT_QUEUE_BYTES: usize = 64 * 1024;

/// Default non-real-time queue bound of an unpaced port, in bytes.
pub const UNPACED_NRT_QUEUE_BYTES: usize = 4 * 1024 * 1024;

/// Largest non-real-time queue bound a port may have, in bytes (storage is allocated up front).
pub const MAX_NRT_QUEUE_BYTES: usize = 256 * 1024 * 1024;

/// Largest `pending_capacity` (each held frame has a preallocated [`MAX_FRAME_LEN`] slot).
pub const MAX_PENDING_CAPACITY: usize = 65_536;

/// How often [`Switch::handle_timeout`] sweeps aged entries out of the learning table and the ARP
/// cache. (Lookups treat an aged entry as absent at once; the sweep only frees memory.)
pub const AGEING_CHECK_INTERVAL: Duration = Duration::from_secs(1);

/// Default [`RtConfig::refresh_timeout`]: three of the host daemon's default 10 s REFRESH
/// periods.
pub const DEFAULT_REFRESH_TIMEOUT: Duration = Duration::from_secs(30);

pub use crate::node::PortId;

pub use rtlan_topology::UnknownUnicast;

/// One port of the switch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortConfig {
    /// Human-readable name (the interface name in the Linux shell).
    pub name: String,
    /// The port's own MAC address (source of ARP probes sent on it).
    pub mac: Address,
    /// What the port transmits on: [`Medium::FullDuplex`] is paced at its rate by the switch;
    /// [`Medium::Unpaced`] and [`Medium::Shared`] are not (the driver serialises).
    pub medium: Medium,
    /// Who may speak on the port and the link's keys (default: auto, no keys).
    pub security: PortSecurity,
}

/// Default size of the connection table ([`RtConfig::max_connections`]): above the 10,000
/// connections per switch issue 4 asks for, and what one port's scheduler holds by default.
pub const DEFAULT_MAX_CONNECTIONS: usize = 16_384;

/// Real-time configuration of a switch (EtheReal §2.2, §2.3, §3.3): the proxy-MAC plan,
/// admission and signalling parameters. [`RtConfig::default`] gives the documented defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RtConfig {
    /// Proxy-MAC plan: which destination MACs are connection ids and which is the control MAC.
    pub plan: ProxyMacPlan,
    /// Share of an output port's line rate real-time reservations may book, percent (paper: 60).
    pub cap_percent: u8,
    /// Line rate admission assumes for an unpaced port, wire bit/s.
    pub unpaced_line_rate_bps: u64,
    /// Most connections the switch holds (table size, preallocated). A SETUP that finds the table
    /// full is refused with reason BUFFER (connection state memory).
    pub max_connections: usize,
    /// Storage of each port's control FIFO in bytes (signalling messages, served before the
    /// real-time connections; allocated up front).
    pub control_queue_bytes: usize,
    /// Memory for real-time connection queues, whole switch, bytes: admission refuses a
    /// connection (BUFFER) whose queue (its backlog bound, docs/delay.md) no longer fits.
    pub rt_buffer_bytes: usize,
    /// Backplane capacity in wire bit/s: admission refuses (BACKPLANE) a connection that would
    /// take the sum of all reservations through the switch above it; `None` = unlimited.
    pub backplane_bps: Option<u64>,
    /// Scheduler cost per connection per cycle (EtheReal §4.3), for the CPU check.
    pub cpu_cost_per_connection: Duration,
    /// Share of the cycle the scheduler may spend on connections, percent: admission refuses
    /// (CPU) a connection once connections × cost would exceed it.
    pub cpu_budget_percent: u8,
    /// EtheReal §3.3 preemptive discard: meter non-real-time frames entering on host-facing
    /// ports and drop those beyond the port's residual bandwidth (rate − reservations entering
    /// there).
    pub preemptive_discard: bool,
    /// Sliding window of the preemptive-discard meter.
    pub discard_window: Duration,
    /// Wait before the first retransmission of a SETUP sent downstream; doubles after each try.
    pub retransmit_initial: Duration,
    /// Transmissions of a downstream SETUP in all (first one included).
    pub max_attempts: u8,
    /// HELLO period; `None` = send no HELLO (ports count as host-facing unless a switch HELLO is
    /// heard).
    pub hello_interval: Option<Duration>,
    /// How long a SETUP waits for its destination to be found by ARP probing before it is
    /// refused (SETUP_FAIL, NO_ROUTE).
    pub route_timeout: Duration,
    /// A connection that sees no REFRESH for this long is released and torn down both ways
    /// (soft state, `docs/protocol.md` §5); zero = never expire. Checked once a second.
    pub refresh_timeout: Duration,
    /// How late the driver may wake (receive or transmit) without breaking a bound: part of
    /// every hop's latency (`docs/delay.md`). A send later than this is a guarantee violation,
    /// counted per port.
    pub lateness_budget: Duration,
    /// How long the first switch may hold a frame that arrived ahead of its connection's T-SPEC
    /// until it conforms, instead of dropping it (reshaping, `docs/delay.md` §3): what the
    /// sender's own stack bunched becomes delay, not loss. Zero = police: drop at once.
    pub reshape_allowance: Duration,
    /// Bytes of held frames the whole switch keeps at most; a frame beyond is policed.
    pub reshape_buffer_bytes: usize,
    /// Propagation delay of each output link, part of every hop's latency.
    pub link_delay: Duration,
    /// Largest frame (bytes, without FCS) any class may send on a port: the non-preemptive
    /// blocking term of every hop's latency. Longer frames are not forwarded.
    pub max_frame_bytes: usize,
    /// The real-time scheduler of every output port: EtheReal's cyclic round robin, or QSR's
    /// rate-controlled timing wheel (docs/scheduler.md).
    pub scheduler: SchedulerKind,
    /// This start's boot epoch, carried in every control message (EPOCH TLV,
    /// `docs/protocol.md` §5 "Restarts"): the shell picks a new one at every start (time and
    /// randomness), so neighbours see the restart and request ids never alias.
    pub epoch: u64,
    /// Sequence number of the first control message signed on each port with keys; the shell
    /// passes a boot value (wall-clock ns at start) so numbers keep growing across restarts
    /// (RFC 2747 §3, [`crate::auth`]).
    pub auth_seq_base: u64,
    /// Control-plane protection: policers, control budget, per-port shares, ARP guard.
    pub protect: ProtectConfig,
}

impl Default for RtConfig {
    /// Default plan, 60 % cap, 1 Gbit/s for unpaced ports, 1024 connections, 64 KiB control
    /// FIFO per port, 64 MiB of real-time queues, unlimited backplane, 1 µs per connection per
    /// cycle within 50 % of the cycle, preemptive discard over 10 ms, 100 ms initial
    /// retransmission over 5 attempts, HELLO every second, 500 ms to find a destination, 30 s
    /// without REFRESH (3 × the daemon's 10 s period) before release.
    fn default() -> RtConfig {
        RtConfig {
            plan: ProxyMacPlan::DEFAULT,
            cap_percent: rt::DEFAULT_RT_CAP_PERCENT,
            unpaced_line_rate_bps: 1_000_000_000,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            control_queue_bytes: 64 * 1024,
            rt_buffer_bytes: rt::DEFAULT_RT_BUFFER_BYTES,
            backplane_bps: None,
            cpu_cost_per_connection: rt::DEFAULT_CPU_COST_PER_CONNECTION,
            cpu_budget_percent: rt::DEFAULT_CPU_BUDGET_PERCENT,
            preemptive_discard: true,
            discard_window: sched::DEFAULT_WINDOW,
            retransmit_initial: Duration::from_millis(100),
            max_attempts: 5,
            hello_interval: Some(Duration::from_secs(1)),
            route_timeout: Duration::from_millis(500),
            refresh_timeout: DEFAULT_REFRESH_TIMEOUT,
            lateness_budget: DEFAULT_LATENESS_BUDGET,
            reshape_allowance: DEFAULT_RESHAPE_ALLOWANCE,
            reshape_buffer_bytes: DEFAULT_RESHAPE_BUFFER_BYTES,
            link_delay: Duration::ZERO,
            max_frame_bytes: DEFAULT_MAX_FRAME_BYTES,
            scheduler: SchedulerKind::Cyclic,
            epoch: 1,
            auth_seq_base: 0,
            protect: ProtectConfig::default(),
        }
    }
}

/// Switch configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct SwitchConfig {
    /// The switch's own (management) MAC address.
    pub mac: Address,
    /// The switch's management IP: ARP requests for it are answered.
    pub mgmt_ip: Option<Ipv4Addr>,
    /// The ports, indexed by [`PortId`].
    pub ports: Vec<PortConfig>,
    /// Unknown-unicast policy.
    pub unknown_unicast: UnknownUnicast,
    /// Scheduling cycle time (EtheReal: 10 ms; 100 µs ..= 1 s): each output port's cyclic
    /// scheduler grants every connection its quota once per cycle; also sizes the non-real-time
    /// queues.
    pub cycle_time: Duration,
    /// Learning-table entries not refreshed for this long are removed.
    pub ageing_time: Duration,
    /// Non-real-time queue bound per port in bytes; `None` = 2 × rate × cycle time (EtheReal §3.3).
    pub nrt_queue_bytes: Option<usize>,
    /// Frames held while their destination is probed (whole switch).
    pub pending_capacity: usize,
    /// How long a held frame waits for its destination to be learnt before it is dropped.
    pub pending_timeout: Duration,
    /// Real-time connections and signalling.
    pub rt: RtConfig,
    /// Spanning tree (IEEE 802.1D-1998 clause 8, docs/stp.md); `None` = off, for loop-free
    /// networks.
    pub stp: Option<StpConfig>,
}

/// Per-port counters.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct PortStats {
    /// Frames received.
    pub rx_frames: u64,
    /// Bytes received.
    pub rx_bytes: u64,
    /// Frames transmitted.
    pub tx_frames: u64,
    /// Bytes transmitted.
    pub tx_bytes: u64,
    /// Frames dropped because the port's non-real-time queue was full.
    pub drop_queue_full: u64,
    /// Frames accepted into the port's non-real-time or real-time queue (forwarded, flooded
    /// copies, ARP probes and replies, real-time data, control messages). Always
    /// `tx_frames + drop_tx_buffer + frames still queued`.
    pub tx_queued: u64,
    /// Real-time frames dropped on this output port: a connection's queue was full (data), or the
    /// control FIFO was full (signalling).
    pub rt_drop_queue_full: u64,
    /// Non-real-time frames received on this (host-facing) port and dropped by preemptive
    /// discard (EtheReal §3.3) because they exceeded the port's residual bandwidth.
    pub nrt_preemptive_drops: u64,
    /// Frames discarded at transmit because the driver's buffer was shorter than the frame.
    pub drop_tx_buffer: u64,
    /// Non-real-time frames (forwarded, flooded, ARP probes and replies) not queued here because
    /// the spanning tree has the port in a state other than Forwarding.
    pub stp_blocked: u64,
    /// Largest lateness of a send, in ns: how long after the frame became due (line free and
    /// frame queued) [`Switch::poll_transmit`] handed it out.
    pub pacing_late_max_ns: u64,
    /// Sends later than [`PACING_LATE_THRESHOLD`] (50 µs).
    pub pacing_late_sends: u64,
    /// Sends later than half the switch's lateness budget (docs/delay.md §4): each may have
    /// broken a connection's delay bound. A guarantee violation, logged by the driver.
    pub guarantee_violations: u64,
}

/// Switch-wide counters.
///
/// Every frame received on a valid port ends up in exactly one of: `drop_malformed`,
/// `drop_to_switch`, `to_switch_arp`, `drop_same_port`, `drop_pending_full`, `drop_policed`,
/// `drop_pending_timeout`, `flooded`, `forwarded`, `rt_data` (then counted in [`rt::RtStats`]
/// as forwarded or dropped), `control_rx`, `drop_control`, `drop_preemptive`, or is still held
/// ([`Switch::pending_len`]); with spanning tree on, also the tree's `link_local_rx` and
/// `discarded` ([`Switch::stp_status`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct SwitchStats {
    /// Per-port counters, indexed by port.
    pub ports: Vec<PortStats>,
    /// Frames too short or otherwise malformed.
    pub drop_malformed: u64,
    /// Non-real-time frames dropped by preemptive discard (sum of
    /// [`PortStats::nrt_preemptive_drops`]).
    pub drop_preemptive: u64,
    /// Frames addressed to the switch that are not ARP (EtheReal §3.3: discarded).
    pub drop_to_switch: u64,
    /// Frames whose destination is the port they came in on.
    pub drop_same_port: u64,
    /// Held frames dropped because the pending queue was full.
    pub drop_pending_full: u64,
    /// Held frames dropped because their destination was not learnt in time.
    pub drop_pending_timeout: u64,
    /// Frames flooded.
    pub flooded: u64,
    /// ARP probes (sender IP 0.0.0.0) sent: one per probed IP address, each going out of every
    /// port but the one the held frame came in on.
    pub arp_probes_sent: u64,
    /// ARP replies the switch sent for its management IP.
    pub arp_replies_sent: u64,
    /// Frames handed to [`Switch::handle_frame`] with a port id out of range (not counted anywhere
    /// else).
    pub drop_bad_port: u64,
    /// Unicast frames handed to one output queue, directly or after being held (a full queue then
    /// drops them and counts `drop_queue_full`).
    pub forwarded: u64,
    /// ARP frames consumed by the switch: addressed to one of its MACs, or requests for its
    /// management IP.
    pub to_switch_arp: u64,
    /// Frames put on hold while their destination was probed.
    pub held: u64,
    /// Held frames released to their destination once it was learnt.
    pub released: u64,
    /// Stations not learnt because the learning table was full ([`FDB_CAPACITY`]).
    pub fdb_full: u64,
    /// ARP mappings not cached because the cache was full ([`ARP_CACHE_CAPACITY`]).
    pub arp_cache_full: u64,
    /// Frames addressed to a connection id (EtheReal §3.3 real-time class).
    pub rt_data: u64,
    /// The real-time data path and admission counters.
    pub rt: rt::RtStats,
    /// Control frames that parsed and were handled.
    pub control_rx: u64,
    /// Frames to a reserved control address that were dropped: wrong EtherType, reserved id other
    /// than the control id, a control message that does not parse, or one refused by its port's
    /// keys (counted in [`SwitchStats::auth`]) or role ([`SwitchStats::control_refused_role`]).
    pub drop_control: u64,
    /// Control messages a host port refused because only a switch sends them ([`PortRole::Host`]).
    pub control_refused_role: u64,
    /// Authentication of control messages, all ports together.
    pub auth: crate::auth::AuthStats,
    /// Signalling counters.
    pub signal: SignalStats,
    /// Control and ARP frames dropped by their input port's policer or the switch-wide control
    /// budget (by port and reason in [`SwitchStats::protect`]).
    pub drop_policed: u64,
    /// Control-plane protection counters.
    pub protect: ProtectStats,
}

/// Counters of the signalling (control-plane) state machine.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct SignalStats {
    /// SETUPs received (first transmissions and duplicates).
    pub setup_rx: u64,
    /// Duplicate SETUPs (answered from the stored reply, or ignored while in progress).
    pub setup_duplicates: u64,
    /// Connections installed.
    pub setup_ok: u64,
    /// SETUPs refused here or downstream (SETUP_FAIL sent upstream).
    pub setup_fail: u64,
    /// SETUPs sent downstream (retransmissions included).
    pub setup_tx: u64,
    /// Downstream SETUPs retransmitted.
    pub setup_retransmits: u64,
    /// TEARDOWNs received.
    pub teardown_rx: u64,
    /// Connections removed (TEARDOWN from either side, or REFRESH expiry).
    pub teardowns: u64,
    /// TEARDOWNs sent (forwarded, originated, retransmitted).
    pub teardown_tx: u64,
    /// TEARDOWNs retransmitted for want of TEARDOWN_ACK.
    pub teardown_retransmits: u64,
    /// TEARDOWNs given up without TEARDOWN_ACK after the last attempt.
    pub teardown_given_up: u64,
    /// Connections closed by their sender (TEARDOWN `closed` from upstream) with frames still
    /// queued here: held until those frames left, the TEARDOWN going on downstream after them.
    pub close_drained: u64,
    /// Of those, connections whose queue had not emptied by the drain deadline (twice this
    /// hop's latency θ, at least two cycles): the rest was dropped and counted by the scheduler.
    pub close_drain_expired: u64,
    /// REFRESHes received.
    pub refresh_rx: u64,
    /// Connections released because no REFRESH came within `refresh_timeout`.
    pub refresh_expired: u64,
    /// HELLOs sent.
    pub hello_tx: u64,
    /// HELLOs received.
    pub hello_rx: u64,
    /// Replies or messages that matched no state (late, forged or unsupported here).
    pub unmatched: u64,
    /// SETUPs that reused a request id of their sender's epoch with other content (refused
    /// MALFORMED, never answered from the stored reply).
    pub setup_id_reuse: u64,
    /// Neighbours heard with a new boot epoch (restarted daemon or switch).
    pub neighbour_restarts: u64,
    /// Connections released because a neighbour on their path restarted.
    pub restart_released: u64,
    /// REFRESHes for a connection this switch does not hold, answered with TEARDOWN
    /// (reason STATE_LOST) so the sender re-signals.
    pub refresh_unknown: u64,
    /// Neighbours not tracked for restarts because their port's table was full.
    pub neighbours_untracked: u64,
    /// SETUPs refused because the reservations entering by their input port would exceed the
    /// cap share of that port's line rate.
    pub ingress_cap_refusals: u64,
    /// Ports whose carrier went down.
    pub link_down: u64,
    /// Switch neighbours that stopped sending HELLO (for `HELLO_MISSES` periods).
    pub neighbour_lost: u64,
    /// Connections released because a link of their path went down or its neighbour went
    /// silent (torn down both ways, reason LINK_DOWN or NEIGHBOUR_LOST).
    pub failure_released: u64,
}

/// A learning-table entry, for reporting.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FdbEntry {
    /// The station's MAC.
    pub mac: String,
    /// The port it was last seen on.
    pub port: u16,
    /// Nanoseconds since it was last seen.
    pub age_ns: u64,
}

/// An internal ARP-cache entry, for reporting.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ArpEntry {
    /// The IP address.
    pub ip: Ipv4Addr,
    /// The MAC it maps to.
    pub mac: String,
}

/// A configuration the switch cannot run with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// No ports, or more than `u16::MAX`.
    #[error("a switch needs between 1 and 65535 ports, got {0}")]
    PortCount(usize),
    /// A port whose medium has a rate of zero.
    #[error("port {0}: a port's rate must be above 0 bit/s")]
    ZeroRate(String),
    /// A port's non-real-time queue bound exceeds [`MAX_NRT_QUEUE_BYTES`].
    #[error("port {port}: non-real-time queue of {bytes} bytes exceeds the {max}-byte limit")]
    QueueTooLarge {
        /// The port's name.
        port: String,
        /// The bound asked for (or computed from rate × cycle time).
        bytes: u128,
        /// [`MAX_NRT_QUEUE_BYTES`].
        max: usize,
    },
    /// `pending_capacity` exceeds [`MAX_PENDING_CAPACITY`].
    #[error("pending capacity {0} exceeds the limit of {MAX_PENDING_CAPACITY} frames")]
    PendingTooLarge(usize),
    /// A port's scheduler cannot be built (cycle time outside 100 µs ..= 1 s).
    #[error("port {port}: {error}")]
    Scheduler {
        /// The port's name.
        port: String,
        /// What the scheduler refused.
        error: sched::SchedError,
    },
    /// The preemptive-discard window is unusable.
    #[error("preemptive discard: {0}")]
    Discard(sched::DiscardError),
    /// A static ARP binding names a port the switch does not have.
    #[error("static ARP binding of {ip}: port {port} does not exist")]
    StaticArpPort {
        /// The binding's address.
        ip: Ipv4Addr,
        /// The port it names.
        port: u16,
    },
    /// The spanning tree configuration is refused (timers, costs, port count).
    #[error("spanning tree: {0}")]
    Stp(crate::stp::ConfigError),
}

/// One port's state: its output scheduler and its input meter.
#[derive(Debug)]
struct Port {
    /// Output: the control FIFO, a queue per real-time connection leaving here, and the
    /// non-real-time FIFO (EtheReal §3.3). A port that is not full duplex is not paced but its
    /// scheduler still polices each connection to its quota per cycle, with the admission line
    /// rate (the medium's, or [`RtConfig::unpaced_line_rate_bps`]) as its nominal rate.
    sched: PortScheduler,
    /// Input: preemptive discard of non-real-time frames while the port is host-facing; `None`
    /// when disabled.
    meter: Option<NrtMeter>,
    /// The line rate admission and the meter assume, wire bit/s.
    line_rate_bps: u64,
    /// Whether non-real-time frames may be queued here: the spanning tree port state is
    /// Forwarding (always with spanning tree off).
    forwarding: bool,
}

/// The non-real-time queue bound of `port` (EtheReal §3.3: twice the output link bandwidth times
/// the cycle time), before the [`MAX_NRT_QUEUE_BYTES`] check.
fn queue_bound(config: &SwitchConfig, port: &PortConfig) -> u128 {
    if let Some(bytes) = config.nrt_queue_bytes {
        return bytes as u128;
    }
    match port.medium.pacing_rate_bps() {
        None => UNPACED_NRT_QUEUE_BYTES as u128,
        Some(rate) => {
            let bytes = 2 * u128::from(rate) * config.cycle_time.as_nanos() / 8_000_000_000;
            bytes.max(MIN_NRT_QUEUE_BYTES as u128)
        }
    }
}

/// The rate admission, the preemptive-discard meter and the scheduler's quotas assume for
/// `port`: its medium's rate, or [`RtConfig::unpaced_line_rate_bps`] if it has none.
pub(crate) fn line_rate(config: &SwitchConfig, port: &PortConfig) -> u64 {
    port.medium
        .rate_bps()
        .unwrap_or(config.rt.unpaced_line_rate_bps)
}

/// The learning switch.
///
/// Driver call order: after [`Switch::new`], repeatedly
/// 1. [`Switch::handle_frame`] for each received frame (in batches),
/// 2. [`Switch::poll_transmit`] per port until it returns `None`,
/// 3. [`Switch::handle_timeout`] when the time from [`Switch::poll_timeout`] has come,
///
/// then sleep until the next receive or `poll_timeout`.
///
/// `poll_timeout` may return a time already past: then a port has a frame ready or a timer is
/// due, and the driver should poll the ports and call `handle_timeout` before sleeping (a driver
/// that never calls `handle_timeout` keeps being told the ageing sweep is due). `handle_timeout`
/// is cheap and may be called at any time.
#[derive(Debug)]
pub struct Switch {
    config: SwitchConfig,
    ports: Vec<Port>,
    fdb: Fdb,
    arp: ArpCache,
    pending: Pending,
    stats: SwitchStats,
    timers: TimerTable<SwitchTimer, 2>,
    rt: RtState,
    security: security::SecurityState,
    protect: protect::ProtectState,
    /// The spanning tree bridge (`None` when off).
    stp: Option<stp::StpState>,
}

/// The switch's node-level timers (its [`TimerTable`]). Per-request deadlines (held frames,
/// SETUPs waiting for a route or an answer, unacknowledged TEARDOWNs) stay with their requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SwitchTimer {
    /// The next round of HELLOs (armed only when HELLO is enabled).
    Hello,
    /// The next sweep of aged learning-table and ARP-cache entries, old probes and answers, and
    /// connections without REFRESH.
    Ageing,
}

impl TimerKind for SwitchTimer {
    const ALL: &'static [SwitchTimer] = &[SwitchTimer::Hello, SwitchTimer::Ageing];

    fn index(self) -> usize {
        self as usize
    }
}

impl Switch {
    /// Builds a switch; allocates all queues and buffers up front.
    pub fn new(config: SwitchConfig, now: Instant) -> Result<Self, ConfigError> {
        let count = config.ports.len();
        if count == 0 || count > usize::from(u16::MAX) {
            return Err(ConfigError::PortCount(count));
        }
        if config.pending_capacity > MAX_PENDING_CAPACITY {
            return Err(ConfigError::PendingTooLarge(config.pending_capacity));
        }
        if let Some(binding) = config
            .rt
            .protect
            .static_arp
            .iter()
            .find(|b| usize::from(b.port.0) >= count)
        {
            return Err(ConfigError::StaticArpPort {
                ip: binding.ip,
                port: binding.port.0,
            });
        }
        let mut ports = Vec::with_capacity(count);
        for port in &config.ports {
            if port.medium.rate_bps() == Some(0) {
                return Err(ConfigError::ZeroRate(port.name.clone()));
            }
            let bound = queue_bound(&config, port);
            let bound = usize::try_from(bound)
                .ok()
                .filter(|b| *b <= MAX_NRT_QUEUE_BYTES)
                .ok_or_else(|| ConfigError::QueueTooLarge {
                    port: port.name.clone(),
                    bytes: bound,
                    max: MAX_NRT_QUEUE_BYTES,
                })?;
            let line_rate_bps = line_rate(&config, port);
            let cfg = SchedConfig {
                cycle: config.cycle_time,
                nrt_queue_bytes: Some(bound),
                max_connections: config.rt.max_connections,
                max_frame: config.rt.max_frame_bytes,
                // Half the hop's budget per send (docs/delay.md §4).
                late_budget: Some(config.rt.lateness_budget / 2),
                control_burst_bytes: bound::control_burst_bytes(),
                ..SchedConfig::for_medium(port.medium, line_rate_bps)
            };
            let sched_error = |error| ConfigError::Scheduler {
                port: port.name.clone(),
                error,
            };
            let sched = PortScheduler::new(config.rt.scheduler, cfg, now)
                .map_err(sched_error)?
                .with_control_queue(config.rt.control_queue_bytes.min(MAX_NRT_QUEUE_BYTES));
            let meter = if config.rt.preemptive_discard {
                let meter = NrtMeter::new(
                    config.rt.discard_window,
                    sched::DEFAULT_BUCKETS,
                    line_rate_bps,
                )
                .map_err(ConfigError::Discard)?;
                Some(meter)
            } else {
                None
            };
            ports.push(Port {
                sched,
                meter,
                line_rate_bps,
                forwarding: config.stp.is_none(),
            });
        }
        let stp = match &config.stp {
            Some(stp) => Some(stp::StpState::new(stp, &config, now)?),
            None => None,
        };
        let own = std::iter::once(config.mac).chain(config.ports.iter().map(|p| p.mac));
        let mut switch = Switch {
            fdb: Fdb::new(own, config.ageing_time),
            arp: ArpCache::new(config.ageing_time),
            pending: Pending::new(
                config.pending_capacity,
                config.pending_timeout,
                config.ports.len(),
            ),
            stats: SwitchStats {
                ports: vec![PortStats::default(); count],
                protect: ProtectStats {
                    ports: vec![ProtectPortStats::default(); count],
                    ..ProtectStats::default()
                },
                ..SwitchStats::default()
            },
            ports,
            timers: {
                let mut timers = TimerTable::new();
                timers.set(SwitchTimer::Ageing, now + AGEING_CHECK_INTERVAL);
                if config.rt.hello_interval.is_some() {
                    // The first HELLOs go out at once.
                    timers.set(SwitchTimer::Hello, now);
                }
                timers
            },
            rt: RtState::new(&config),
            security: security::SecurityState::new(&config, now),
            protect: protect::ProtectState::new(&config),
            stp,
            config,
        };
        switch.init_work_budgets();
        // The bridge's first Configuration BPDUs.
        switch.stp_drain(now);
        Ok(switch)
    }

    /// Copies the next frame due on `port` at `now` into `buf` and returns its length, or `None`
    /// if the port's queue is empty or its pacer says the line is still busy.
    ///
    /// `buf` should hold [`MAX_FRAME_LEN`] bytes: a frame longer than `buf` is discarded (counted
    /// in [`PortStats::drop_tx_buffer`]) and the next one is tried.
    pub fn poll_transmit(&mut self, now: Instant, port: PortId, buf: &mut [u8]) -> Option<usize> {
        let index = usize::from(port.0);
        let out = self.ports.get_mut(index)?;
        let stats = self.stats.ports.get_mut(index)?;
        let dropped = |s: &sched::SchedStats| {
            s.rt_frames_dropped + s.nrt_frames_dropped + s.control_frames_dropped
        };
        let control_out = |s: &sched::SchedStats| (s.control_frames_sent, s.control_frames_dropped);
        let before = dropped(out.sched.stats());
        let (control_sent, control_dropped) = control_out(out.sched.stats());
        let sent = out.sched.poll_transmit(now, buf);
        let s = out.sched.stats();
        // Only a too-short `buf` drops frames inside `poll_transmit`.
        stats.drop_tx_buffer += dropped(s) - before;
        let (sent_after, dropped_after) = control_out(s);
        if sent_after + dropped_after > control_sent + control_dropped {
            self.rt.setup_times.on_dequeued(
                index,
                sent_after + dropped_after - control_sent - control_dropped,
                sent_after > control_sent,
                now,
            );
        }
        stats.pacing_late_max_ns = s.late_max_ns;
        stats.pacing_late_sends = s.late_sends;
        stats.guarantee_violations = s.budget_violations;
        let len = sent?;
        stats.tx_frames += 1;
        stats.tx_bytes += len as u64;
        if !self.rt.draining.is_empty() {
            self.finish_drained(now);
        }
        Some(len)
    }

    /// The earliest time at which [`Switch::poll_transmit`] or [`Switch::handle_timeout`] has
    /// work, if any.
    ///
    /// A time at or before the current time means a port has a frame ready now. Costs one check
    /// per port.
    pub fn poll_timeout(&self) -> Option<Instant> {
        // Always `Some`: the ageing timer is always armed.
        let ports = self.ports.iter().filter_map(|p| p.sched.poll_timeout());
        [
            self.timers.next(),
            self.pending.next_expiry(),
            self.rt.next_timeout(),
            self.rt.reshaper.next_timeout(),
            self.protect.guard.next_timeout(),
            self.stp_poll_timeout(),
        ]
        .into_iter()
        .flatten()
        .chain(ports)
        .min()
    }

    /// Runs timers due at `now`: reshaped frames' releases, pending-frame expiry, learning-table ageing, HELLOs, SETUP and
    /// TEARDOWN retransmissions, route timeouts and REFRESH expiry.
    pub fn handle_timeout(&mut self, now: Instant) {
        if !self.rt.reshaper.is_empty() {
            self.release_reshaped(now);
        }
        self.stats.drop_pending_timeout += self.pending.expire(now);
        self.signal_timeout(now);
        if !self.rt.draining.is_empty() {
            self.finish_drained(now);
        }
        self.guard_timeout(now);
        self.stp_timeout(now);
        if self.timers.is_expired(SwitchTimer::Ageing, now) {
            self.fdb.age(now);
            self.arp.age(now);
            self.pending.forget_old_probes(now);
            self.rt.forget_old_answers(now);
            self.expire_unrefreshed(now);
            self.detect_silent_neighbours(now);
            self.timers
                .set(SwitchTimer::Ageing, now + AGEING_CHECK_INTERVAL);
        }
    }

    /// Counters.
    pub fn stats(&self) -> &SwitchStats {
        &self.stats
    }

    /// The learning table at `now` (without the switch's own addresses), sorted by MAC.
    pub fn fdb(&self, now: Instant) -> Vec<FdbEntry> {
        let mut stations: Vec<_> = self.fdb.stations(now).collect();
        stations.sort_unstable_by_key(|(mac, _, _)| *mac);
        stations
            .into_iter()
            .map(|(mac, port, age)| FdbEntry {
                mac: mac.to_string(),
                port: port.0,
                age_ns: u64::try_from(age.as_nanos()).unwrap_or(u64::MAX),
            })
            .collect()
    }

    /// The internal ARP cache, sorted by IP address.
    pub fn arp_cache(&self) -> Vec<ArpEntry> {
        let mut entries: Vec<_> = self.arp.iter().collect();
        entries.sort_unstable_by_key(|(ip, _)| *ip);
        entries
            .into_iter()
            .map(|(ip, mac)| ArpEntry {
                ip,
                mac: mac.to_string(),
            })
            .collect()
    }

    /// The configuration in force.
    pub fn config(&self) -> &SwitchConfig {
        &self.config
    }

    /// Number of ports.
    pub fn port_count(&self) -> usize {
        self.ports.len()
    }

    /// The MAC the internal ARP cache maps `ip` to (EtheReal §3.4: used to route connection setup
    /// by the receiver's IP address).
    pub fn arp_lookup(&self, ip: Ipv4Addr) -> Option<Address> {
        self.static_binding(ip)
            .map(|b| b.mac)
            .or_else(|| self.arp.get(ip))
    }

    /// The port the learning table sends frames for `mac` to at `now`, if it is a learnt station.
    pub fn lookup(&self, mac: Address, now: Instant) -> Option<PortId> {
        match self.fdb.lookup(&mac, now) {
            learning::Lookup::Port(port) => Some(port),
            learning::Lookup::Local | learning::Lookup::Unknown => None,
        }
    }

    /// Frames currently held while their destination is probed.
    pub fn pending_len(&self) -> usize {
        self.pending.len()
    }

    /// Frames waiting in `port`'s non-real-time queue (0 for an unknown port).
    pub fn queue_len(&self, port: PortId) -> usize {
        self.ports
            .get(usize::from(port.0))
            .map_or(0, |p| p.sched.nrt_queued())
    }

    /// Bytes charged against `port`'s non-real-time queue bound (frames count at least 60 bytes).
    pub fn queue_bytes(&self, port: PortId) -> usize {
        self.ports
            .get(usize::from(port.0))
            .map_or(0, |p| p.sched.nrt_queued_bytes())
    }

    /// `port`'s non-real-time queue bound in bytes, if the port exists.
    pub fn queue_bound(&self, port: PortId) -> Option<usize> {
        self.ports
            .get(usize::from(port.0))
            .map(|p| p.sched.nrt_bound())
    }

    /// When `port`'s line is booked until by frames already sent (`None` if unpaced or unknown).
    pub fn busy_until(&self, port: PortId) -> Option<Instant> {
        self.ports
            .get(usize::from(port.0))
            .filter(|p| p.sched.is_paced())
            .map(|p| p.sched.busy_until())
    }

    /// `port`'s output scheduler (EtheReal §3.3), for introspection.
    pub fn scheduler(&self, port: PortId) -> Option<&PortScheduler> {
        self.ports.get(usize::from(port.0)).map(|p| &p.sched)
    }

    /// `port`'s preemptive-discard meter (`None` if disabled or the port is unknown).
    pub fn discard_meter(&self, port: PortId) -> Option<&NrtMeter> {
        self.ports
            .get(usize::from(port.0))
            .and_then(|p| p.meter.as_ref())
    }
}

/// The switch as a node of the one contract ([`crate::node`]): the same calls as its inherent
/// methods.
impl crate::node::Node for Switch {
    fn handle_link(&mut self, now: Instant, port: PortId, up: bool) {
        Switch::handle_link(self, now, port, up);
    }

    fn guarantee_violations(&self, port: PortId) -> u64 {
        self.stats
            .ports
            .get(usize::from(port.0))
            .map_or(0, |p| p.guarantee_violations)
    }

    fn port_count(&self) -> usize {
        self.ports.len()
    }

    fn medium(&self, port: PortId) -> Medium {
        self.config
            .ports
            .get(usize::from(port.0))
            .map_or(Medium::Unpaced, |p| p.medium)
    }

    fn handle_frame(&mut self, now: Instant, port: PortId, frame: &[u8]) {
        Switch::handle_frame(self, now, port, frame);
    }

    fn poll_transmit(&mut self, now: Instant, port: PortId, buf: &mut [u8]) -> Option<usize> {
        Switch::poll_transmit(self, now, port, buf)
    }

    fn handle_timeout(&mut self, now: Instant) {
        Switch::handle_timeout(self, now);
    }

    fn poll_timeout(&self) -> Option<Instant> {
        Switch::poll_timeout(self)
    }
}
