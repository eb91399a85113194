//! EtheReal's cyclic round-robin scheduler for one output port (EtheReal §3.3; cost figure §4.3).
//!
//! Time is cut into cycles of fixed length (default 10 ms). Each real-time connection (a *flow* of
//! the [`super::sched::Scheduler`] contract, addressed by its [`FlowHandle`]) has its own bounded queue (2 × its
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
//! already had. On a [`crate::node::Medium::FullDuplex`] port all output is paced at line rate by the port's
//! pacer; on other media the driver serialises and frames go as soon as they may (real-time
//! ones still within their per-cycle quota).
//!
//! This module is the real-time discipline ([`CyclicDiscipline`]); the control FIFO and bucket,
//! the non-real-time FIFO, the pacer and the counters are the port's shared part
//! ([`super::port_core`]), and [`CyclicScheduler`] is the two together. Every queue charges its
//! bytes to the port's [`super::pool::BufferPools`] (QSR §3.1): the control FIFO to the control
//! pool, each connection's queue to the reserved pool, the non-real-time FIFO to the default
//! pool. [`SchedConfig::new`] leaves the pools unlimited, so only the queues' own bounds
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

pub use super::config::{SchedConfig, SchedError};
use super::port_core::{Discipline, FlowQueue, Port, PortCore};
use super::sched::{FlowHandle, FlowSlab, SchedStats};
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

/// One real-time connection: its queue and counters ([`FlowQueue`]) and its credit.
#[derive(Debug)]
struct Conn {
    flow: FlowQueue,
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
}

impl Conn {
    /// Processes, for a backlogged connection, the boundaries since `stamp` (all found by one
    /// call: [`CyclicDiscipline::advance`] refreshes every listed connection): credit becomes
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
        self.flow.stats.max_credit_bits = self.flow.stats.max_credit_bits.max(bits);
    }

    /// Cost of the head frame in nano-bits, if any.
    fn head_cost(&self) -> Option<u128> {
        self.flow.queue.front().map(|(len, _)| cost(len))
    }

    fn head_fits(&self) -> bool {
        self.head_cost().is_some_and(|c| c <= self.credit)
    }
}

/// Credit a frame of `len` bytes costs, in nano-bits.
fn cost(len: usize) -> u128 {
    u128::from(wire_bits(len)) * SCALE
}

/// EtheReal's cyclic round-robin scheduler of one output port: the shared port part and the
/// cyclic discipline (see the module docs).
pub type CyclicScheduler = Port<CyclicDiscipline>;

/// The real-time discipline of [`CyclicScheduler`]: cycles, quotas and credit (see the module
/// docs).
#[derive(Debug)]
pub struct CyclicDiscipline {
    cycle_ns: u64,
    /// Start of cycle 0.
    epoch: Instant,
    /// Index of the current cycle (as of the last call).
    cycle_index: u64,
    cycle_start: Instant,
    /// The connections, addressed by [`FlowHandle`]; `eligible` and `waiting` hold slot indexes.
    slots: FlowSlab<Conn>,
    /// Backlogged connections whose credit covers their head frame, in round-robin order.
    eligible: VecDeque<usize>,
    /// Backlogged connections waiting for the next cycle's quota.
    waiting: Vec<usize>,
}

impl Port<CyclicDiscipline> {
    /// A scheduler with no connections whose cycle 0 starts at `now`.
    pub fn new(cfg: SchedConfig, now: Instant) -> Result<CyclicScheduler, SchedError> {
        if !(MIN_CYCLE..=MAX_CYCLE).contains(&cfg.cycle) {
            return Err(SchedError::CycleOutOfRange(cfg.cycle));
        }
        let core = PortCore::new(&cfg, MAX_PACKET, cfg.cycle)?;
        // MAX_CYCLE is 1 s, so the nanoseconds fit a u64.
        let cycle_ns = u64::try_from(cfg.cycle.as_nanos()).unwrap_or(u64::MAX);
        let n = cfg.max_connections;
        Ok(Port {
            core,
            rt: CyclicDiscipline {
                cycle_ns,
                epoch: now,
                cycle_index: 0,
                cycle_start: now,
                slots: FlowSlab::with_capacity(n),
                eligible: VecDeque::with_capacity(n),
                waiting: Vec::with_capacity(n),
            },
        })
    }

    /// The cycle length.
    pub fn cycle(&self) -> Duration {
        self.rt.unit()
    }

    /// Start of the current cycle (as of the last call that took `now`).
    pub fn cycle_start(&self) -> Instant {
        self.rt.cycle_start
    }
}

impl Discipline for CyclicDiscipline {
    /// Processes the cycle boundaries up to `now` (O(backlogged connections)): every listed
    /// connection is refreshed here, so its carry is capped at every boundary, and the ones waiting
    /// for credit whose head frame now fits become eligible.
    fn advance(&mut self, now: Instant, stats: &mut SchedStats) {
        let elapsed = (now - self.epoch).as_nanos();
        let index = u64::try_from(elapsed / u128::from(self.cycle_ns)).unwrap_or(u64::MAX);
        if index <= self.cycle_index {
            return;
        }
        let passed = index - self.cycle_index;
        stats.cycles += passed;
        stats.cycles_skipped += passed - 1;
        if !self.eligible.is_empty() {
            stats.cycle_overruns += 1;
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

    /// A new connection may use the current cycle's quota.
    fn add(&mut self, flow: FlowQueue, core: &PortCore) -> Result<FlowHandle, SchedError> {
        let quota = u128::from(flow.rate_bps) * u128::from(self.cycle_ns);
        let max_frame = cost(flow.max_packet);
        let conn = Conn {
            flow,
            quota,
            credit: quota,
            max_frame,
            stamp: self.cycle_index,
            listed: false,
        };
        self.slots.insert(conn).ok_or(core.too_many())
    }

    fn remove(&mut self, flow: FlowHandle) -> Option<FlowQueue> {
        let conn = self.slots.remove(flow)?;
        let slot = flow.slot();
        if conn.listed {
            self.eligible.retain(|&s| s != slot);
            self.waiting.retain(|&s| s != slot);
        }
        Some(conn.flow)
    }

    fn on_enqueued(&mut self, flow: FlowHandle) {
        let cycle = self.cycle_index;
        let Some(conn) = self.slots.get_mut(flow) else {
            return;
        };
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
                self.eligible.push_back(flow.slot());
            } else {
                self.waiting.push(flow.slot());
            }
        }
    }

    /// The connections with credit for their head frame, round robin one frame per visit.
    fn send(&mut self, now: Instant, buf: &mut [u8], core: &mut PortCore) -> Option<usize> {
        while let Some(slot) = self.eligible.pop_front() {
            let Some(conn) = self.slots.slot_mut(slot) else {
                continue;
            };
            conn.refresh(self.cycle_index);
            let Some((len, enqueued)) = conn.flow.queue.front() else {
                conn.listed = false;
                continue;
            };
            let charge = cost(len);
            if charge > conn.credit {
                self.waiting.push(slot);
                continue;
            }
            let (_, fits) = conn.flow.take_head(buf, core)?;
            if fits {
                conn.credit -= charge;
            }
            if conn.flow.len() == 0 {
                conn.listed = false;
            } else if conn.head_fits() {
                self.eligible.push_back(slot);
            } else {
                self.waiting.push(slot);
            }
            if fits {
                core.book_send(now, enqueued.max(self.cycle_start), len);
                return Some(len);
            }
        }
        None
    }

    /// The head of the first eligible connection became due at its enqueue time, or at the
    /// start of the cycle if it was queued before.
    fn due(&self) -> Option<Instant> {
        let &slot = self.eligible.front()?;
        let (_, enqueued) = self.slots.slot(slot)?.flow.queue.front()?;
        Some(enqueued.max(self.cycle_start))
    }

    /// The next cycle start, if a credit-starved connection is backlogged.
    fn wake(&self) -> Option<Instant> {
        if self.waiting.is_empty() {
            return None;
        }
        Some(self.cycle_start + Duration::from_nanos(self.cycle_ns))
    }

    fn flow(&self, flow: FlowHandle) -> Option<&FlowQueue> {
        self.slots.get(flow).map(|c| &c.flow)
    }

    fn flow_mut(&mut self, flow: FlowHandle) -> Option<&mut FlowQueue> {
        self.slots.get_mut(flow).map(|c| &mut c.flow)
    }

    fn flows(&self) -> impl Iterator<Item = (FlowHandle, &FlowQueue)> {
        self.slots.iter().map(|(handle, c)| (handle, &c.flow))
    }

    fn len(&self) -> usize {
        self.slots.len()
    }

    fn unit(&self) -> Duration {
        Duration::from_nanos(self.cycle_ns)
    }
}
