//! EtheReal's cyclic round-robin scheduler for one output port (EtheReal §3.3; cost figure §4.3).
//!
//! Time is cut into cycles of fixed length (default 10 ms). Each real-time connection (a *flow* of
//! the [`Scheduler`] contract, addressed by its [`FlowHandle`]) has its own bounded queue (2 × its
//! maximum burst) and a *quota* = reserved rate × cycle, in wire bits ([`wire_bits`]: the frame
//! padded to 60 bytes plus FCS, preamble, SFD and inter-frame gap). A
//! connection holds a *credit*: a head frame may go when its wire bits fit the credit, and at each
//! cycle boundary a backlogged connection's credit becomes `min(leftover, L_i) + quota`, `L_i` the
//! wire bits of its maximum packet (deficit round robin: a backlogged connection's leftover is
//! below its head frame, so the cap only cuts credit a connection still held at the boundary, and
//! the long-run rate is exact to one packet). So between two consecutive boundaries a connection
//! sends at most `quota + L_i` wire bits: the per-cycle work `w_i = Q_i + L_i` admission books
//! (`rtlan_calculus::servers::cyclic_cycle_work_bits`). A connection whose queue empties loses its
//! credit ("the scheduler simply empties out the queue") at the next cycle boundary: it may still
//! spend what is left within the current cycle, and when a frame reaches it in a later cycle it
//! starts again from exactly one quota.
//!
//! Service order at every transmit opportunity: control frames within the port's control bucket
//! ([`SchedConfig::control_rate_bps`], [`SchedConfig::control_burst_bytes`]); real-time
//! connections that have credit for their head frame, round robin one frame per visit; control
//! frames beyond the bucket; then the non-real-time FIFO. Real-time service is
//! non-work-conserving: a connection never sends beyond its credit, even on an idle line. Unlike the
//! paper, which "never turns back" to real-time traffic once non-real-time service has begun in a
//! cycle, a real-time frame that arrives mid-cycle while its connection still has credit goes ahead
//! of the queued non-real-time frames: its delay drops from up to a cycle to one frame's line time,
//! and the per-cycle guarantee is unchanged because the frame only spends credit the connection
//! already had. On a [`Medium::FullDuplex`] port all output is paced at line rate by the port's
//! pacer; on other media the driver serialises and frames go as soon as they may (real-time
//! ones still within their per-cycle quota).
//!
//! Every queue charges its bytes to the port's [`BufferPools`] (QSR §3.1): the control FIFO to the
//! control pool, each connection's queue to the reserved pool, the non-real-time FIFO to the
//! default pool. [`SchedConfig::new`] leaves the pools unlimited, so only the queues' own bounds
//! apply unless a configuration sizes them.
//!
//! Cycles advance lazily: a cycle boundary is processed by the first call at or after it. Only
//! backlogged connections are touched, so a cycle costs O(backlogged connections). A late call that
//! finds several boundaries passed grants a backlogged connection `min(leftover, L_i)` plus at most
//! [`CATCHUP_CYCLES`] quotas; with wake-ups less than a cycle late (the analysis' precondition
//! `Δ + λ ≤ T`) every boundary is processed on its own and this never happens, so no connection
//! holds more than `quota + L_i` of credit.

use std::collections::VecDeque;
use std::time::Duration;

use rtlan_wire::cost::wire_bits;

use super::bucket::TokenBucket;
pub use super::config::{SchedConfig, SchedError};
use super::pacer::{Pacer, PACING_LATE_THRESHOLD};
use super::pool::{BufferPools, TrafficClass};
use super::queue::{charge, FrameQueue};
use super::sched::{ConnStats, FlowHandle, FlowSlab, FlowSpec, SchedStats, Scheduler};
use crate::node::Medium;
use crate::time::Instant;

#[cfg(test)]
mod tests;

/// Shortest allowed cycle.
pub const MIN_CYCLE: Duration = Duration::from_micros(100);
/// Longest allowed cycle.
pub const MAX_CYCLE: Duration = Duration::from_secs(1);
/// The paper's cycle (EtheReal §3.3: "the cycle time is chosen to be 10 msec").
pub const DEFAULT_CYCLE: Duration = Duration::from_millis(10);
/// Most quotas a backlogged connection is granted when one call finds several cycle boundaries
/// passed (a wake-up more than a cycle late: the current cycle's and one missed); quotas of further
/// missed cycles are lost. A call that finds one boundary passed grants one quota.
pub const CATCHUP_CYCLES: u64 = 2;

/// Credit is kept in nano-bits (bits × 10⁹) so that `rate × cycle` is exact for any rate.
const SCALE: u128 = 1_000_000_000;

/// The longest frame a queue can hold (its length is stored as `u16`).
const MAX_PACKET: usize = u16::MAX as usize;

/// One real-time connection.
#[derive(Debug)]
struct Conn {
    rate_bps: u64,
    max_packet: usize,
    queue: FrameQueue,
    /// Per-cycle quota in nano-bits.
    quota: u128,
    /// Current credit in nano-bits, ≤ `quota + max_frame` (`CATCHUP_CYCLES × quota + max_frame`
    /// after a call that found several boundaries passed); lapses at the next boundary if the
    /// queue is empty then.
    credit: u128,
    /// `L_i`: cost of the maximum packet in nano-bits, the most credit carried across a boundary.
    max_frame: u128,
    /// Cycle index up to which credit has been granted.
    stamp: u64,
    /// In `eligible` or `waiting` (exactly when the queue is non-empty).
    listed: bool,
    stats: ConnStats,
}

impl Conn {
    /// Processes, for a backlogged connection, the boundaries since `stamp` (all found by one
    /// call: [`CyclicScheduler::advance`] refreshes every listed connection): credit becomes
    /// `min(leftover, L_i) + quota`, or `+ CATCHUP_CYCLES` quotas if several boundaries passed.
    fn refresh(&mut self, cycle: u64) {
        if cycle > self.stamp {
            let n = (cycle - self.stamp).min(CATCHUP_CYCLES);
            self.credit = self.credit.min(self.max_frame) + u128::from(n) * self.quota;
            self.stamp = cycle;
            self.note_credit();
        }
    }

    fn note_credit(&mut self) {
        let bits = u64::try_from(self.credit / SCALE).unwrap_or(u64::MAX);
        self.stats.max_credit_bits = self.stats.max_credit_bits.max(bits);
    }

    /// Cost of the head frame in nano-bits, if any.
    fn head_cost(&self) -> Option<u128> {
        self.queue.front().map(|(len, _)| cost(len))
    }

    fn head_fits(&self) -> bool {
        self.head_cost().is_some_and(|c| c <= self.credit)
    }

    /// Pops the head frame into `out` (see [`FrameQueue::pop_into`]) and gives its bytes back
    /// to the reserved pool.
    fn pop_into(&mut self, out: &mut [u8], pools: &mut BufferPools) -> Option<usize> {
        let len = self.queue.pop_into(out)?;
        pools.release(TrafficClass::Reserved, charge(len));
        Some(len)
    }

    fn drop_frame(&mut self, len: usize) {
        self.stats.frames_dropped += 1;
        self.stats.bytes_dropped += len as u64;
    }
}

/// Credit a frame of `len` bytes costs, in nano-bits.
fn cost(len: usize) -> u128 {
    u128::from(wire_bits(len)) * SCALE
}

/// The scheduler of one output port (see the module docs).
///
/// Driver call order: that of the [`Scheduler`] trait, which it implements; its inherent methods
/// of the same names are the same calls.
#[derive(Debug)]
pub struct CyclicScheduler {
    cycle_ns: u64,
    line_rate_bps: u64,
    /// [`SchedConfig::late_budget`].
    late_budget: Option<Duration>,
    max_connections: usize,
    /// Start of cycle 0.
    epoch: Instant,
    /// Index of the current cycle (as of the last call).
    cycle_index: u64,
    cycle_start: Instant,
    pacer: Pacer,
    medium: Medium,
    /// Whether the medium is paced here (full duplex): otherwise frames go as soon as they are
    /// eligible; cycles and quotas still apply.
    paced: bool,
    /// Control frames (empty bound unless [`CyclicScheduler::with_control_queue`]): first while
    /// `control_bucket` allows, else after the connections with credit.
    control: FrameQueue,
    control_bucket: TokenBucket,
    nrt: FrameQueue,
    pools: BufferPools,
    /// The connections, addressed by [`FlowHandle`]; `eligible` and `waiting` hold slot indexes.
    slots: FlowSlab<Conn>,
    /// Backlogged connections whose credit covers their head frame, in round-robin order.
    eligible: VecDeque<usize>,
    /// Backlogged connections waiting for the next cycle's quota.
    waiting: Vec<usize>,
    reserved_bps: u64,
    /// The control bucket's rate, booked against the line like a reservation.
    control_rate_bps: u64,
    stats: SchedStats,
}

impl CyclicScheduler {
    /// A scheduler with no connections whose cycle 0 starts at `now`.
    pub fn new(cfg: SchedConfig, now: Instant) -> Result<CyclicScheduler, SchedError> {
        if !(MIN_CYCLE..=MAX_CYCLE).contains(&cfg.cycle) {
            return Err(SchedError::CycleOutOfRange(cfg.cycle));
        }
        if cfg.line_rate_bps == 0 || cfg.medium.rate_bps() == Some(0) {
            return Err(SchedError::ZeroLineRate);
        }
        let control_bucket = cfg.control_bucket()?;
        let pacing_rate = cfg.medium.pacing_rate_bps();
        // MAX_CYCLE is 1 s, so the nanoseconds fit a u64.
        let cycle_ns = u64::try_from(cfg.cycle.as_nanos()).unwrap_or(u64::MAX);
        let nrt_bytes = cfg.nrt_queue_bytes.unwrap_or_else(|| {
            let bytes = 2 * u128::from(cfg.line_rate_bps) * u128::from(cycle_ns) / 8 / SCALE;
            usize::try_from(bytes).unwrap_or(usize::MAX)
        });
        let n = cfg.max_connections;
        Ok(CyclicScheduler {
            cycle_ns,
            line_rate_bps: cfg.line_rate_bps,
            late_budget: cfg.late_budget,
            max_connections: n,
            epoch: now,
            cycle_index: 0,
            cycle_start: now,
            pacer: Pacer::new(pacing_rate.unwrap_or(cfg.line_rate_bps))
                .with_catchup(cfg.late_budget.unwrap_or_default()),
            medium: cfg.medium,
            paced: pacing_rate.is_some(),
            control: FrameQueue::new(0),
            control_bucket,
            control_rate_bps: cfg.control_rate_bps,
            nrt: FrameQueue::new(nrt_bytes),
            pools: BufferPools::new(cfg.pools),
            slots: FlowSlab::with_capacity(n),
            eligible: VecDeque::with_capacity(n),
            waiting: Vec::with_capacity(n),
            reserved_bps: 0,
            stats: SchedStats::default(),
        })
    }

    /// The same scheduler with a control FIFO of `bytes` (allocated now): frames queued with
    /// [`CyclicScheduler::enqueue_control`] go before any real-time or non-real-time frame while
    /// the control bucket holds their wire bits, and after the real-time connections with credit
    /// (still before non-real-time frames) when it does not.
    pub fn with_control_queue(mut self, bytes: usize) -> CyclicScheduler {
        self.control = FrameQueue::new(bytes);
        self
    }

    /// Whether output is paced at the line rate (the medium is full duplex).
    pub fn is_paced(&self) -> bool {
        self.paced
    }

    /// The medium the port transmits on.
    pub fn medium(&self) -> Medium {
        self.medium
    }

    /// The port's buffer pools (QSR §3.1).
    pub fn pools(&self) -> &BufferPools {
        &self.pools
    }

    /// When the line is booked until by frames already sent (`Instant::ZERO` if unpaced).
    pub fn busy_until(&self) -> Instant {
        self.pacer.busy_until()
    }

    /// Bytes charged against the non-real-time FIFO's bound (frames count at least 60 bytes).
    pub fn nrt_queued_bytes(&self) -> usize {
        self.nrt.charged_bytes()
    }

    /// The non-real-time FIFO's bound in bytes.
    pub fn nrt_bound(&self) -> usize {
        self.nrt.bound()
    }

    /// Frames queued in the control FIFO.
    pub fn control_queued(&self) -> usize {
        self.control.len()
    }

    /// Frames queued on all real-time connections (O(connections)).
    pub fn rt_queued_total(&self) -> usize {
        self.slots.iter().map(|(_, c)| c.queue.len()).sum()
    }

    /// The cycle length.
    pub fn cycle(&self) -> Duration {
        Duration::from_nanos(self.cycle_ns)
    }

    /// The line rate in bit/s.
    pub fn line_rate_bps(&self) -> u64 {
        self.line_rate_bps
    }

    /// Sum of the connections' reserved rates in bit/s.
    pub fn reserved_bps(&self) -> u64 {
        self.reserved_bps
    }

    /// The port's counters.
    pub fn stats(&self) -> &SchedStats {
        &self.stats
    }

    /// Handles of the real-time connections, in slot order.
    pub fn connections(&self) -> impl Iterator<Item = FlowHandle> + '_ {
        self.slots.iter().map(|(handle, _)| handle)
    }

    /// Number of real-time connections.
    pub fn connection_count(&self) -> usize {
        self.slots.len()
    }

    /// Counters of the connection `flow` (`None` for a stale handle).
    pub fn connection_stats(&self, flow: FlowHandle) -> Option<ConnStats> {
        self.slots.get(flow).map(|c| c.stats)
    }

    /// Frames queued on connection `flow` (`None` for a stale handle).
    pub fn rt_queued(&self, flow: FlowHandle) -> Option<usize> {
        self.slots.get(flow).map(|c| c.queue.len())
    }

    /// Frames queued in the non-real-time FIFO.
    pub fn nrt_queued(&self) -> usize {
        self.nrt.len()
    }

    /// Start of the current cycle (as of the last call that took `now`).
    pub fn cycle_start(&self) -> Instant {
        self.cycle_start
    }

    /// Adds a real-time connection reserving `spec.rate_bps` of the line, with a queue of
    /// `spec.queue_bytes` (0: 2 × `spec.max_burst`) bytes, accepting frames of at most `spec.max_packet` bytes. Allocates
    /// the queue; the handle addresses the connection from now on.
    pub fn add_flow(&mut self, spec: FlowSpec) -> Result<FlowHandle, SchedError> {
        let FlowSpec {
            rate_bps,
            max_burst,
            max_packet,
            queue_bytes,
        } = spec;
        if self.slots.len() >= self.max_connections {
            return Err(SchedError::TooManyConnections(self.max_connections));
        }
        if rate_bps == 0 {
            return Err(SchedError::ZeroRate);
        }
        if max_packet == 0 || max_packet > MAX_PACKET {
            return Err(SchedError::BadMaxPacket(max_packet));
        }
        if max_burst < max_packet {
            return Err(SchedError::BurstBelowPacket {
                burst: max_burst,
                packet: max_packet,
            });
        }
        let total = self.reserved_bps.saturating_add(rate_bps);
        let booked = total.saturating_add(self.control_rate_bps);
        if booked > self.line_rate_bps {
            return Err(SchedError::Oversubscribed {
                total_bps: booked,
                line_bps: self.line_rate_bps,
            });
        }
        let quota = u128::from(rate_bps) * u128::from(self.cycle_ns);
        let conn = Conn {
            rate_bps,
            max_packet,
            queue: FrameQueue::new(if queue_bytes == 0 {
                max_burst.saturating_mul(2)
            } else {
                queue_bytes
            }),
            quota,
            // A new connection may use the current cycle's quota.
            credit: quota,
            max_frame: cost(max_packet),
            stamp: self.cycle_index,
            listed: false,
            stats: ConnStats::default(),
        };
        let handle = self
            .slots
            .insert(conn)
            .ok_or(SchedError::TooManyConnections(self.max_connections))?;
        self.reserved_bps = total;
        Ok(handle)
    }

    /// Removes connection `flow`, dropping (and counting) its queued frames. Returns its final
    /// counters, or `None` for a stale handle.
    pub fn remove_flow(&mut self, flow: FlowHandle) -> Option<ConnStats> {
        let mut conn = self.slots.remove(flow)?;
        let slot = flow.slot();
        if conn.listed {
            self.eligible.retain(|&s| s != slot);
            self.waiting.retain(|&s| s != slot);
        }
        while let Some(len) = conn.pop_into(&mut [], &mut self.pools) {
            conn.drop_frame(len);
            self.stats.rt_frames_dropped += 1;
        }
        self.reserved_bps -= conn.rate_bps;
        Some(conn.stats)
    }

    /// Processes the cycle boundaries up to `now` (O(backlogged connections)): every listed
    /// connection is refreshed here, so its carry is capped at every boundary, and the ones waiting
    /// for credit whose head frame now fits become eligible.
    fn advance(&mut self, now: Instant) {
        let elapsed = (now - self.epoch).as_nanos();
        let index = u64::try_from(elapsed / u128::from(self.cycle_ns)).unwrap_or(u64::MAX);
        if index <= self.cycle_index {
            return;
        }
        let passed = index - self.cycle_index;
        self.stats.cycles += passed;
        self.stats.cycles_skipped += passed - 1;
        if !self.eligible.is_empty() {
            self.stats.cycle_overruns += 1;
        }
        self.cycle_index = index;
        self.cycle_start = self.epoch + Duration::from_nanos(index.saturating_mul(self.cycle_ns));
        let Self {
            waiting,
            slots,
            eligible,
            ..
        } = self;
        for &slot in eligible.iter() {
            if let Some(conn) = slots.slot_mut(slot) {
                conn.refresh(index);
            }
        }
        waiting.retain(|&slot| {
            let Some(conn) = slots.slot_mut(slot) else {
                return false;
            };
            conn.refresh(index);
            if conn.head_fits() {
                eligible.push_back(slot);
                false
            } else {
                true
            }
        });
    }

    /// Queues a copy of `frame` on connection `flow`. `false` if dropped: stale handle, frame
    /// longer than the connection's maximum packet, queue full (the connection sends too fast),
    /// or no room in the reserved buffer pool.
    pub fn enqueue_flow(&mut self, now: Instant, flow: FlowHandle, frame: &[u8]) -> bool {
        self.advance(now);
        let cycle = self.cycle_index;
        let slot = flow.slot();
        let Some(conn) = self.slots.get_mut(flow) else {
            self.stats.rt_frames_dropped += 1;
            return false;
        };
        let accepted = frame.len() <= conn.max_packet
            && conn.queue.fits(frame.len())
            && self
                .pools
                .charge(TrafficClass::Reserved, charge(frame.len()));
        if !accepted {
            conn.drop_frame(frame.len());
            self.stats.rt_frames_dropped += 1;
            return false;
        }
        // `fits` said yes, so the push succeeds.
        conn.queue.push(frame, now);
        if !conn.listed {
            // An idle connection keeps its leftover credit within the cycle it was granted in;
            // in a later cycle the leftover lapses and it starts from one quota.
            if conn.stamp < cycle {
                conn.credit = conn.quota;
                conn.stamp = cycle;
                conn.note_credit();
            }
            conn.listed = true;
            if conn.head_fits() {
                self.eligible.push_back(slot);
            } else {
                self.waiting.push(slot);
            }
        }
        true
    }

    /// Queues a copy of `frame` in the control FIFO; `false` if it is full (frame dropped).
    pub fn enqueue_control(&mut self, now: Instant, frame: &[u8]) -> bool {
        self.advance(now);
        if push_charged(
            &mut self.control,
            &mut self.pools,
            TrafficClass::Control,
            frame,
            now,
        ) {
            true
        } else {
            self.stats.control_frames_dropped += 1;
            false
        }
    }

    /// Books the line for a frame of `len` bytes that became due at `due`, and records how late
    /// it goes.
    fn on_send(&mut self, now: Instant, due: Instant, len: usize) {
        book_send(
            &mut self.pacer,
            self.paced,
            self.late_budget,
            &mut self.stats,
            (now, due, len),
        );
    }

    /// Queues a copy of `frame` in the non-real-time FIFO; `false` if it is full (frame dropped).
    pub fn enqueue_nrt(&mut self, now: Instant, frame: &[u8]) -> bool {
        self.advance(now);
        if push_charged(
            &mut self.nrt,
            &mut self.pools,
            TrafficClass::Default,
            frame,
            now,
        ) {
            true
        } else {
            self.stats.nrt_frames_dropped += 1;
            false
        }
    }

    /// The next frame to send at `now`, copied into `buf`; its length, or `None` if the line is
    /// busy or nothing may go. A frame longer than `buf` is dropped and counted.
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        self.advance(now);
        if self.paced && now < self.pacer.busy_until() {
            return None;
        }
        if let Some(len) = self.send_control(now, buf, true) {
            return Some(len);
        }
        while let Some(&slot) = self.eligible.front() {
            self.eligible.pop_front();
            let cycle = self.cycle_index;
            let cycle_start = self.cycle_start;
            let Some(conn) = self.slots.slot_mut(slot) else {
                continue;
            };
            conn.refresh(cycle);
            let Some((len, enqueued)) = conn.queue.front() else {
                conn.listed = false;
                continue;
            };
            let charge = cost(len);
            if charge > conn.credit {
                self.waiting.push(slot);
                continue;
            }
            let fits = len <= buf.len();
            conn.pop_into(buf, &mut self.pools);
            if fits {
                conn.credit -= charge;
                conn.stats.frames_sent += 1;
                conn.stats.bytes_sent += len as u64;
                conn.stats.wire_bits_sent += wire_bits(len);
            } else {
                conn.drop_frame(len);
            }
            if conn.queue.len() == 0 {
                conn.listed = false;
            } else if conn.head_fits() {
                self.eligible.push_back(slot);
            } else {
                self.waiting.push(slot);
            }
            if fits {
                self.stats.rt_frames_sent += 1;
                self.stats.rt_bytes_sent += len as u64;
                self.on_send(now, enqueued.max(cycle_start), len);
                return Some(len);
            }
            self.stats.rt_frames_dropped += 1;
        }
        if let Some(len) = self.send_control(now, buf, false) {
            return Some(len);
        }
        while let Some((len, enqueued)) = self.nrt.front() {
            self.nrt.pop_into(buf);
            self.pools.release(TrafficClass::Default, charge(len));
            if len <= buf.len() {
                self.stats.nrt_frames_sent += 1;
                self.stats.nrt_bytes_sent += len as u64;
                self.on_send(now, enqueued, len);
                return Some(len);
            }
            self.stats.nrt_frames_dropped += 1;
        }
        None
    }

    /// Sends the head control frame into `buf`: if `in_bucket`, only when the control bucket holds
    /// its wire bits (and takes them); otherwise regardless of the bucket. Frames longer than
    /// `buf` are dropped and counted.
    fn send_control(&mut self, now: Instant, buf: &mut [u8], in_bucket: bool) -> Option<usize> {
        let (len, enqueued) = pop_control(
            &mut self.control,
            &mut self.control_bucket,
            &mut self.pools,
            &mut self.stats,
            (now, buf, in_bucket),
        )?;
        self.on_send(now, enqueued, len);
        Some(len)
    }

    /// The earliest instant at which [`CyclicScheduler::poll_transmit`] may return a frame: the
    /// pacer's ready time for the earliest-queued frame that may go (control, a real-time
    /// connection with credit, non-real-time), else the next cycle start if a credit-starved
    /// connection is backlogged, else `None`.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let rt_head = self.eligible.front().and_then(|&slot| {
            let (_, enqueued) = self.slots.slot(slot)?.queue.front()?;
            Some(enqueued.max(self.cycle_start))
        });
        let head = [
            self.control.front().map(|(_, t)| t),
            rt_head,
            self.nrt.front().map(|(_, t)| t),
        ]
        .into_iter()
        .flatten()
        .min();
        if let Some(enqueued) = head {
            return Some(if self.paced {
                self.pacer.ready_at(enqueued)
            } else {
                enqueued
            });
        }
        if !self.waiting.is_empty() {
            let next = self.cycle_start + Duration::from_nanos(self.cycle_ns);
            return Some(next.max(self.pacer.busy_until()));
        }
        None
    }
}

/// Pushes a copy of `frame` on `queue` if both the queue and `class`'s pools have room (charging
/// the pools); `false` and nothing changed otherwise.
pub(super) fn push_charged(
    queue: &mut FrameQueue,
    pools: &mut BufferPools,
    class: TrafficClass,
    frame: &[u8],
    now: Instant,
) -> bool {
    if !queue.fits(frame.len()) || !pools.charge(class, charge(frame.len())) {
        return false;
    }
    // `fits` said yes, so the push succeeds.
    queue.push(frame, now)
}

/// Takes the head control frame of `queue` into `buf` for a send at `now`: if `in_bucket`, only
/// when `bucket` holds its wire bits (and takes them); otherwise regardless of the bucket. Frames
/// longer than `buf` are dropped and counted. Returns the length and enqueue time of the frame
/// to send; the caller books the send. Shared by both schedulers.
pub(super) fn pop_control(
    queue: &mut FrameQueue,
    bucket: &mut TokenBucket,
    pools: &mut BufferPools,
    stats: &mut SchedStats,
    (now, buf, in_bucket): (Instant, &mut [u8], bool),
) -> Option<(usize, Instant)> {
    while let Some((len, enqueued)) = queue.front() {
        let bits = wire_bits(len);
        let fits = len <= buf.len();
        if in_bucket && fits {
            if !bucket.conforms(now.as_nanos(), bits) {
                return None;
            }
            bucket.take(now.as_nanos(), bits);
        }
        queue.pop_into(buf);
        pools.release(TrafficClass::Control, charge(len));
        if fits {
            stats.control_frames_sent += 1;
            return Some((len, enqueued));
        }
        stats.control_frames_dropped += 1;
    }
    None
}

/// Books a send at `now` of a frame of `len` bytes that became due at `due`: its lateness
/// (largest, late sends, sends beyond the lateness budget) and, on a paced port, the line.
/// Shared by both schedulers.
pub(super) fn book_send(
    pacer: &mut Pacer,
    paced: bool,
    late_budget: Option<Duration>,
    stats: &mut SchedStats,
    (now, due, len): (Instant, Instant, usize),
) {
    let ready = if paced { pacer.ready_at(due) } else { due };
    let late = now.saturating_duration_since(ready);
    let late_ns = u64::try_from(late.as_nanos()).unwrap_or(u64::MAX);
    stats.late_max_ns = stats.late_max_ns.max(late_ns);
    if late > PACING_LATE_THRESHOLD {
        stats.late_sends += 1;
    }
    if late_budget.is_some_and(|budget| late > budget) {
        stats.budget_violations += 1;
    }
    if paced {
        pacer.on_send(now, due, len);
    }
}

impl Scheduler for CyclicScheduler {
    type Error = SchedError;

    fn medium(&self) -> Medium {
        self.medium
    }

    fn add_flow(&mut self, spec: FlowSpec) -> Result<FlowHandle, SchedError> {
        CyclicScheduler::add_flow(self, spec)
    }

    fn remove_flow(&mut self, flow: FlowHandle) -> Option<ConnStats> {
        CyclicScheduler::remove_flow(self, flow)
    }

    fn enqueue_flow(&mut self, now: Instant, flow: FlowHandle, frame: &[u8]) -> bool {
        CyclicScheduler::enqueue_flow(self, now, flow, frame)
    }

    fn enqueue_nrt(&mut self, now: Instant, frame: &[u8]) -> bool {
        CyclicScheduler::enqueue_nrt(self, now, frame)
    }

    fn enqueue_control(&mut self, now: Instant, frame: &[u8]) -> bool {
        CyclicScheduler::enqueue_control(self, now, frame)
    }

    fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        CyclicScheduler::poll_transmit(self, now, buf)
    }

    fn poll_timeout(&self) -> Option<Instant> {
        CyclicScheduler::poll_timeout(self)
    }

    fn stats(&self) -> &SchedStats {
        CyclicScheduler::stats(self)
    }

    fn flow_stats(&self, flow: FlowHandle) -> Option<ConnStats> {
        self.connection_stats(flow)
    }

    fn flows(&self) -> Vec<FlowHandle> {
        self.connections().collect()
    }
}
