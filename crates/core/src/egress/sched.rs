//! The contract every output-port scheduler keeps (EtheReal §3.3 cyclic round robin; QSR §3.1's
//! timing wheel for Guaranteed Service and weighted fair queueing for Controlled Load), and the
//! flow handles it hands out.
//!
//! A scheduler serves three kinds of traffic on one port: *control* frames (signalling, served
//! first within the port's control bucket), *reserved flows* (one queue per flow, each served within its reservation), and
//! *default* non-real-time traffic (one FIFO, served with what is left) — the three buffer-pool
//! classes of QSR §3.1 ([`super::pool`]). A flow is added once, when its reservation is installed,
//! and from then on addressed by the [`FlowHandle`] `add_flow` returned: enqueueing a frame on a
//! flow is an index into a slab, never a hash lookup.
//!
//! A handle is a slot index plus the slot's generation. Removing a flow bumps its slot's
//! generation, so a handle kept past `remove_flow` is refused (the frame dropped and counted)
//! and never reaches the flow that reuses the slot.

use crate::node::Medium;
use crate::time::Instant;

/// A reserved flow on one scheduler: slot index and generation (see the module docs). Handles
/// order by slot index, the order [`Scheduler::flows`] lists them in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FlowHandle {
    slot: u32,
    generation: u32,
}

impl FlowHandle {
    /// The slot index (dense, reused after removal).
    pub fn slot(self) -> usize {
        // u32 → usize: every target we build for has at least 32-bit pointers.
        self.slot as usize
    }

    /// The slot's generation when the flow was added.
    pub fn generation(self) -> u32 {
        self.generation
    }

    /// A handle of slot `slot`, generation 0, for tests of code that only carries handles.
    #[cfg(test)]
    pub(crate) fn for_tests(slot: u32) -> FlowHandle {
        FlowHandle {
            slot,
            generation: 0,
        }
    }
}

/// Which Integrated Services class a reserved flow is (QSR §3.1): where a [`super::Port`] of
/// kind [`super::SchedulerKind::Qsr`] serves it, and which buffer pool its queue charges.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Service {
    /// Guaranteed Service (RFC 2212): non-work-conserving at the flow's rate `R` on the timing
    /// wheel (or the cyclic scheduler's quota), the [`super::TrafficClass::Guaranteed`] pool.
    /// Every reservation of the EtheReal switch is one.
    #[default]
    Guaranteed,
    /// Controlled Load (RFC 2211): work-conserving weighted fair queueing at a weight equal to
    /// the flow's token rate `r`, sharing idle bandwidth with the other Controlled-Load flows
    /// and default traffic; the [`super::TrafficClass::ControlledLoad`] pool. Only a port of
    /// kind [`super::SchedulerKind::Qsr`] accepts such flows.
    ControlledLoad,
}

/// What a reserved flow asks of a scheduler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowSpec {
    /// Reserved rate in wire bit/s ([`rtlan_wire::cost::wire_bits`] per frame), > 0.
    pub rate_bps: u64,
    /// Bytes the sender may send back to back (≥ `max_packet`).
    pub max_burst: usize,
    /// Longest frame of the flow, bytes without FCS (1 ..= 65535).
    pub max_packet: usize,
    /// The flow's queue bound in charged bytes (`max(len, 60)` per frame): the backlog bound of
    /// the flow at this hop, from its burst at this hop and the scheduler's latency
    /// (`rtlan_calculus::servers`). 0 = EtheReal §3.3's fixed rule, 2 × `max_burst`.
    pub queue_bytes: usize,
    /// The flow's service class: Guaranteed (the timing wheel, or the cyclic scheduler) or
    /// Controlled Load (weighted fair queueing, QSR ports only).
    pub service: Service,
}

/// Counters of one reserved flow.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct ConnStats {
    /// Frames sent.
    pub frames_sent: u64,
    /// Bytes sent (frame lengths, without FCS).
    pub bytes_sent: u64,
    /// Wire bits sent ([`rtlan_wire::cost::wire_bits`] of each frame): what the flow was charged.
    pub wire_bits_sent: u64,
    /// Frames dropped: queue full (sending faster than reserved), longer than the maximum packet,
    /// no room in the reserved buffer pool, output buffer too short, or still queued when the
    /// flow was removed.
    pub frames_dropped: u64,
    /// Bytes of the dropped frames.
    pub bytes_dropped: u64,
    /// Largest credit the flow ever held, in wire bits (rounded down; 0 for schedulers without
    /// credit).
    pub max_credit_bits: u64,
}

/// Counters of one port's scheduler.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct SchedStats {
    /// Real-time frames sent.
    pub rt_frames_sent: u64,
    /// Real-time bytes sent.
    pub rt_bytes_sent: u64,
    /// Real-time frames dropped (all flows, including stale handles and removals).
    pub rt_frames_dropped: u64,
    /// Non-real-time frames sent.
    pub nrt_frames_sent: u64,
    /// Non-real-time bytes sent.
    pub nrt_bytes_sent: u64,
    /// Non-real-time frames dropped (FIFO or default pool full, or output buffer too short).
    pub nrt_frames_dropped: u64,
    /// Cycle boundaries passed (cyclic scheduler; 0 elsewhere).
    pub cycles: u64,
    /// Cycle boundaries reached while real-time frames with credit were still waiting for the line.
    pub cycle_overruns: u64,
    /// Cycle boundaries processed only after the next one had passed (late wake-up).
    pub cycles_skipped: u64,
    /// Control frames (signalling) sent, within their bucket or not.
    pub control_frames_sent: u64,
    /// Control frames dropped (control FIFO or pools full, or output buffer too short).
    pub control_frames_dropped: u64,
    /// Largest lateness of a send, in ns: how long after the frame became due (line free, frame
    /// queued and, for real-time frames, its service allowed) it was handed out.
    pub late_max_ns: u64,
    /// Sends later than [`super::PACING_LATE_THRESHOLD`] (50 µs).
    pub late_sends: u64,
    /// Sends later than the port's lateness budget ([`super::SchedConfig::late_budget`]): each
    /// one may have broken a delay bound — a guarantee violation, never silent.
    pub budget_violations: u64,
    /// Reserved frames handed out too late to finish by their deadline (timing wheel: the
    /// frame's eligibility time plus its flow's relative deadline; 0 for the cyclic scheduler,
    /// which has no per-frame deadline, and never for Controlled-Load frames, whose bound is a
    /// service curve, not a per-frame deadline). Zero while the driver wakes on time and the
    /// reservations plus the control rate fit the line; late wake-ups cause them.
    pub deadline_misses: u64,
}

/// One output port's scheduler (see the module docs).
///
/// Driver call order, all with the current virtual time: [`Scheduler::enqueue_flow`] /
/// [`Scheduler::enqueue_control`] / [`Scheduler::enqueue_nrt`] for each frame routed to the port;
/// then [`Scheduler::poll_transmit`] until it returns `None` (on a [`Medium::FullDuplex`] port at
/// any time — the scheduler paces itself; on other media only when the line is free); then arm a
/// timer at [`Scheduler::poll_timeout`] (`None`: nothing until the next enqueue; an instant at or
/// before now: poll again at once).
pub trait Scheduler {
    /// Why a flow was refused.
    type Error;

    /// The medium the port transmits on (whether the scheduler paces).
    fn medium(&self) -> Medium;

    /// Adds a reserved flow and allocates its queue.
    fn add_flow(&mut self, spec: FlowSpec) -> Result<FlowHandle, Self::Error>;

    /// Removes `flow`, dropping (and counting) its queued frames; its final counters, or `None`
    /// for a stale or unknown handle.
    fn remove_flow(&mut self, flow: FlowHandle) -> Option<ConnStats>;

    /// Queues a copy of `frame` on `flow`. `false` if dropped (stale handle, frame too long, queue
    /// or pool full), counted.
    fn enqueue_flow(&mut self, now: Instant, flow: FlowHandle, frame: &[u8]) -> bool;

    /// Queues a copy of `frame` in the default (non-real-time) FIFO; `false` if dropped.
    fn enqueue_nrt(&mut self, now: Instant, frame: &[u8]) -> bool;

    /// Queues a copy of `frame` in the control FIFO (served first within the port's control
    /// bucket, then behind reserved frames that may go); `false` if dropped.
    fn enqueue_control(&mut self, now: Instant, frame: &[u8]) -> bool;

    /// The next frame to send at `now`, copied into `buf`; its length, or `None` if the line is
    /// busy or nothing may go. A frame longer than `buf` is dropped and counted.
    fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize>;

    /// The earliest instant at which [`Scheduler::poll_transmit`] may return a frame.
    fn poll_timeout(&self) -> Option<Instant>;

    /// The port's counters.
    fn stats(&self) -> &SchedStats;

    /// Counters of `flow` (`None` for a stale or unknown handle).
    fn flow_stats(&self, flow: FlowHandle) -> Option<ConnStats>;

    /// Handles of the flows, in slot order.
    fn flows(&self) -> Vec<FlowHandle>;
}

/// One slot of a [`FlowSlab`].
#[derive(Debug)]
struct Slot<T> {
    generation: u32,
    value: Option<T>,
}

/// Per-flow state of a scheduler, addressed by [`FlowHandle`]: a dense vector of slots with
/// generations and a free list. Storage for `capacity` flows is reserved up front.
#[derive(Debug)]
pub(crate) struct FlowSlab<T> {
    slots: Vec<Slot<T>>,
    free: Vec<u32>,
    len: usize,
}

impl<T> FlowSlab<T> {
    /// An empty slab with room for `capacity` flows before it reallocates.
    pub(crate) fn with_capacity(capacity: usize) -> FlowSlab<T> {
        FlowSlab {
            slots: Vec::with_capacity(capacity),
            free: Vec::with_capacity(capacity),
            len: 0,
        }
    }

    /// Number of flows.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Stores `value` in a free slot (the lowest-numbered free one is not guaranteed) and returns
    /// its handle; `None` if `u32::MAX` slots are in use.
    pub(crate) fn insert(&mut self, value: T) -> Option<FlowHandle> {
        let slot = match self.free.pop() {
            Some(slot) => slot,
            None => {
                let slot = u32::try_from(self.slots.len()).ok()?;
                self.slots.push(Slot {
                    generation: 0,
                    value: None,
                });
                slot
            }
        };
        let entry = self.slots.get_mut(slot as usize)?;
        entry.value = Some(value);
        self.len += 1;
        Some(FlowHandle {
            slot,
            generation: entry.generation,
        })
    }

    /// The flow `handle` names, if it is still there.
    pub(crate) fn get(&self, handle: FlowHandle) -> Option<&T> {
        let entry = self.slots.get(handle.slot())?;
        if entry.generation != handle.generation {
            return None;
        }
        entry.value.as_ref()
    }

    /// The flow `handle` names, if it is still there.
    pub(crate) fn get_mut(&mut self, handle: FlowHandle) -> Option<&mut T> {
        let entry = self.slots.get_mut(handle.slot())?;
        if entry.generation != handle.generation {
            return None;
        }
        entry.value.as_mut()
    }

    /// The flow in slot `slot`, whatever its generation (for a scheduler's own lists of slots).
    pub(crate) fn slot(&self, slot: usize) -> Option<&T> {
        self.slots.get(slot)?.value.as_ref()
    }

    /// The flow in slot `slot`, whatever its generation.
    pub(crate) fn slot_mut(&mut self, slot: usize) -> Option<&mut T> {
        self.slots.get_mut(slot)?.value.as_mut()
    }

    /// Removes the flow `handle` names; the slot's generation moves on, so `handle` (and every
    /// copy of it) is stale from now on.
    pub(crate) fn remove(&mut self, handle: FlowHandle) -> Option<T> {
        let entry = self.slots.get_mut(handle.slot())?;
        if entry.generation != handle.generation {
            return None;
        }
        let value = entry.value.take()?;
        entry.generation = entry.generation.wrapping_add(1);
        self.free.push(handle.slot);
        self.len -= 1;
        Some(value)
    }

    /// The flows with their handles, in slot order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (FlowHandle, &T)> {
        self.slots.iter().zip(0u32..).filter_map(|(entry, slot)| {
            let value = entry.value.as_ref()?;
            Some((
                FlowHandle {
                    slot,
                    generation: entry.generation,
                },
                value,
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_handles_never_alias_a_new_flow() {
        let mut slab = FlowSlab::with_capacity(2);
        let a = slab.insert("a").expect("room");
        let b = slab.insert("b").expect("room");
        assert_eq!(slab.get(a), Some(&"a"));
        assert_eq!(slab.remove(a), Some("a"));
        // The slot is reused by the next flow, under a new generation.
        let c = slab.insert("c").expect("room");
        assert_eq!(c.slot(), a.slot());
        assert_ne!(c.generation(), a.generation());
        assert_eq!(slab.get(a), None);
        assert_eq!(slab.get_mut(a), None);
        assert_eq!(slab.remove(a), None);
        assert_eq!(slab.get(c), Some(&"c"));
        assert_eq!(slab.len(), 2);
        let listed: Vec<_> = slab.iter().map(|(h, v)| (h, *v)).collect();
        assert_eq!(listed, vec![(c, "c"), (b, "b")]);
    }
}
