//! Frames held while the switch probes for their destination (EtheReal §3.4: "if routing table
//! look-up for an incoming packet fails ... the switch sends out an ARP query ... with the packet's
//! destination IP address as the argument").
//!
//! The held frames live in a slot pool allocated when the switch is built (`capacity` slots of
//! [`MAX_FRAME_LEN`](super::MAX_FRAME_LEN) bytes). Since every frame waits the same `timeout`,
//! the oldest frame always expires first: an arrival-order queue gives expiry in O(1). An index
//! by destination MAC hands a learnt destination its frames without a scan of the pool, and
//! each input port may hold at most its share of the slots (the caller passes the port's limit,
//! `[protect]`'s `pending_share_percent`), so one port flooding frames to unknown addresses
//! cannot take the pool from the others. Alongside, a bounded table remembers which IP
//! addresses were probed when, so a burst of frames to one unknown host sends one probe.
//!
//! A released frame leaves a stale entry in the arrival queue (its slot's generation moved
//! on); stale entries are skipped when they reach the front, and the queue is compacted when
//! they outnumber the slots several times over, so its length stays within a constant factor
//! of `capacity`.

use std::collections::{HashMap, VecDeque};
use std::net::Ipv4Addr;
use std::time::Duration;

use rtlan_wire::ethernet::Address;

use super::{PortId, MAX_FRAME_LEN};
use crate::time::Instant;

/// Most outstanding probes remembered at once (beyond the pending capacity).
const MIN_PROBE_TABLE: usize = 64;

/// The arrival queue is compacted when it is longer than this many times the capacity.
const STALE_FACTOR: usize = 4;

#[derive(Debug, Clone, Copy)]
struct Held {
    len: usize,
    dst: Address,
    ingress: PortId,
    arrived: Instant,
}

/// Why [`Pending::hold`] did not keep a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HoldRefused {
    /// Every slot is taken (or the frame is longer than a slot).
    Full,
    /// The input port already holds its share of the slots.
    PortShare,
}

/// The held frames and the outstanding probes.
#[derive(Debug)]
pub(crate) struct Pending {
    slots: Box<[u8]>,
    /// What each slot holds (`None`: free).
    held: Vec<Option<Held>>,
    /// Each slot's generation, moved on when the slot is freed.
    generation: Vec<u32>,
    free: Vec<usize>,
    /// (slot, generation) in arrival order; entries whose generation moved on are stale.
    order: VecDeque<(usize, u32)>,
    /// Slots held per destination MAC, in arrival order.
    by_dst: HashMap<Address, VecDeque<usize>>,
    /// Frames held per input port.
    per_port: Vec<usize>,
    live: usize,
    probes: HashMap<Ipv4Addr, Instant>,
    probe_capacity: usize,
    timeout: Duration,
}

impl Pending {
    /// Room for `capacity` frames from `ports` input ports, each held for at most `timeout`.
    pub(crate) fn new(capacity: usize, timeout: Duration, ports: usize) -> Pending {
        let probe_capacity = capacity.max(MIN_PROBE_TABLE);
        Pending {
            slots: vec![0u8; capacity * MAX_FRAME_LEN].into_boxed_slice(),
            held: vec![None; capacity],
            generation: vec![0; capacity],
            free: (0..capacity).rev().collect(),
            order: VecDeque::with_capacity(capacity),
            by_dst: HashMap::with_capacity(capacity.min(1024)),
            per_port: vec![0; ports],
            live: 0,
            probes: HashMap::with_capacity(probe_capacity),
            probe_capacity,
            timeout,
        }
    }

    /// Number of frames held.
    pub(crate) fn len(&self) -> usize {
        self.live
    }

    /// Number of slots.
    pub(crate) fn capacity(&self) -> usize {
        self.held.len()
    }

    /// Frames held from `port`.
    pub(crate) fn held_from(&self, port: PortId) -> usize {
        self.per_port.get(usize::from(port.0)).copied().unwrap_or(0)
    }

    /// Holds a copy of `frame` (at most `MAX_FRAME_LEN` bytes) that arrived on `ingress`, which
    /// may hold at most `port_limit` frames.
    pub(crate) fn hold(
        &mut self,
        frame: &[u8],
        dst: Address,
        ingress: PortId,
        now: Instant,
        port_limit: usize,
    ) -> Result<(), HoldRefused> {
        if frame.len() > MAX_FRAME_LEN {
            return Err(HoldRefused::Full);
        }
        if self.held_from(ingress) >= port_limit {
            return Err(HoldRefused::PortShare);
        }
        let Some(slot) = self.free.pop() else {
            return Err(HoldRefused::Full);
        };
        let start = slot * MAX_FRAME_LEN;
        self.slots[start..start + frame.len()].copy_from_slice(frame);
        self.held[slot] = Some(Held {
            len: frame.len(),
            dst,
            ingress,
            arrived: now,
        });
        if self.order.len() >= STALE_FACTOR * self.held.len().max(1) {
            self.compact();
        }
        self.order.push_back((slot, self.generation[slot]));
        self.by_dst.entry(dst).or_default().push_back(slot);
        if let Some(n) = self.per_port.get_mut(usize::from(ingress.0)) {
            *n += 1;
        }
        self.live += 1;
        Ok(())
    }

    /// Frees `slot` (it must be held): its generation moves on, its port's count goes down.
    fn free_slot(&mut self, slot: usize) -> Option<Held> {
        let held = self.held.get_mut(slot)?.take()?;
        self.generation[slot] = self.generation[slot].wrapping_add(1);
        self.free.push(slot);
        if let Some(n) = self.per_port.get_mut(usize::from(held.ingress.0)) {
            *n = n.saturating_sub(1);
        }
        self.live -= 1;
        Some(held)
    }

    /// Whether the arrival-queue entry (`slot`, `generation`) still names a held frame.
    fn is_live(&self, (slot, generation): (usize, u32)) -> bool {
        self.generation.get(slot) == Some(&generation) && self.held[slot].is_some()
    }

    /// Drops stale entries from the front of the arrival queue.
    fn purge_front(&mut self) {
        while let Some(&front) = self.order.front() {
            if self.is_live(front) {
                break;
            }
            self.order.pop_front();
        }
    }

    /// Drops every stale entry of the arrival queue.
    fn compact(&mut self) {
        let order = std::mem::take(&mut self.order);
        self.order = order.into_iter().filter(|e| self.is_live(*e)).collect();
    }

    /// Drops the frames held for `timeout` or longer at `now`; returns how many.
    pub(crate) fn expire(&mut self, now: Instant) -> u64 {
        let mut dropped = 0;
        self.purge_front();
        while let Some(&(slot, _)) = self.order.front() {
            let Some(held) = self.held[slot] else { break };
            if now.saturating_duration_since(held.arrived) < self.timeout {
                break;
            }
            self.order.pop_front();
            // The oldest frame of its destination is this one: every list is in arrival order.
            if let Some(list) = self.by_dst.get_mut(&held.dst) {
                if list.front() == Some(&slot) {
                    list.pop_front();
                } else {
                    list.retain(|s| *s != slot);
                }
                if list.is_empty() {
                    self.by_dst.remove(&held.dst);
                }
            }
            self.free_slot(slot);
            dropped += 1;
            self.purge_front();
        }
        dropped
    }

    /// When the oldest held frame expires.
    pub(crate) fn next_expiry(&self) -> Option<Instant> {
        self.order
            .iter()
            .find(|e| self.is_live(**e))
            .and_then(|&(slot, _)| self.held[slot])
            .map(|held| held.arrived + self.timeout)
    }

    /// Takes every frame held for `dst`, oldest first, and hands each to `deliver` with its ingress
    /// port and whether it expired (held `timeout` or longer at `now`).
    pub(crate) fn release(
        &mut self,
        dst: Address,
        now: Instant,
        mut deliver: impl FnMut(&[u8], PortId, bool),
    ) {
        let Some(list) = self.by_dst.remove(&dst) else {
            return;
        };
        for slot in list {
            let Some(held) = self.free_slot(slot) else {
                continue;
            };
            let start = slot * MAX_FRAME_LEN;
            let expired = now.saturating_duration_since(held.arrived) >= self.timeout;
            deliver(&self.slots[start..start + held.len], held.ingress, expired);
        }
        self.purge_front();
    }

    /// Whether a probe for `ip` was sent less than `timeout` before `now`.
    pub(crate) fn probe_outstanding(&self, ip: Ipv4Addr, now: Instant) -> bool {
        self.probes
            .get(&ip)
            .is_some_and(|sent| now.saturating_duration_since(*sent) < self.timeout)
    }

    /// Remembers that `ip` was probed at `now` (forgotten silently if the table is full of
    /// outstanding probes).
    pub(crate) fn record_probe(&mut self, ip: Ipv4Addr, now: Instant) {
        if self.probes.len() >= self.probe_capacity && !self.probes.contains_key(&ip) {
            self.forget_old_probes(now);
            if self.probes.len() >= self.probe_capacity {
                return;
            }
        }
        self.probes.insert(ip, now);
    }

    /// Forgets the probe record of `ip` (its answer arrived).
    pub(crate) fn forget_probe(&mut self, ip: Ipv4Addr) {
        self.probes.remove(&ip);
    }

    /// Forgets every probe record (the ARP cache was flushed).
    pub(crate) fn forget_all_probes(&mut self) {
        self.probes.clear();
    }

    /// Forgets probes that are no longer outstanding.
    pub(crate) fn forget_old_probes(&mut self, now: Instant) {
        let timeout = self.timeout;
        self.probes
            .retain(|_, sent| now.saturating_duration_since(*sent) < timeout);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: Address = Address([2, 0, 0, 0, 0, 1]);
    const B: Address = Address([2, 0, 0, 0, 0, 2]);

    #[test]
    fn hold_release_in_order_and_expire() {
        let timeout = Duration::from_millis(100);
        let mut p = Pending::new(3, timeout, 3);
        let t0 = Instant::ZERO;
        assert!(p.hold(&[1; 20], A, PortId(0), t0, 3).is_ok());
        assert!(p
            .hold(&[2; 30], B, PortId(1), t0 + Duration::from_millis(10), 3)
            .is_ok());
        assert!(p
            .hold(&[3; 40], A, PortId(2), t0 + Duration::from_millis(20), 3)
            .is_ok());
        assert_eq!(
            p.hold(&[4; 40], A, PortId(2), t0, 3),
            Err(HoldRefused::Full)
        );
        assert_eq!(p.next_expiry(), Some(t0 + timeout));

        let mut got = Vec::new();
        p.release(A, t0 + Duration::from_millis(50), |frame, port, expired| {
            got.push((frame.to_vec(), port, expired));
        });
        assert_eq!(
            got,
            vec![
                (vec![1; 20], PortId(0), false),
                (vec![3; 40], PortId(2), false)
            ]
        );
        assert_eq!(p.len(), 1);
        assert_eq!(p.next_expiry(), Some(t0 + Duration::from_millis(110)));
        assert_eq!(p.expire(t0 + Duration::from_millis(109)), 0);
        assert_eq!(p.expire(t0 + Duration::from_millis(110)), 1);
        assert_eq!(p.len(), 0);
        // All three slots are free again.
        for _ in 0..3 {
            assert!(p.hold(&[5; MAX_FRAME_LEN], A, PortId(0), t0, 3).is_ok());
        }
        assert_eq!(
            p.hold(&[5; 10], A, PortId(0), t0, 4),
            Err(HoldRefused::Full)
        );
    }

    #[test]
    fn a_port_holds_at_most_its_share_and_the_others_still_find_room() {
        let timeout = Duration::from_millis(100);
        let mut p = Pending::new(8, timeout, 2);
        let t0 = Instant::ZERO;
        for i in 0..2u8 {
            assert!(p
                .hold(&[i; 60], Address([2, 0, 0, 0, 1, i]), PortId(0), t0, 2)
                .is_ok());
        }
        assert_eq!(
            p.hold(&[9; 60], A, PortId(0), t0, 2),
            Err(HoldRefused::PortShare)
        );
        assert_eq!(p.held_from(PortId(0)), 2);
        assert!(p.hold(&[7; 60], B, PortId(1), t0, 2).is_ok());
        // Releasing gives the port its share back.
        p.release(Address([2, 0, 0, 0, 1, 0]), t0, |_, _, _| {});
        assert_eq!(p.held_from(PortId(0)), 1);
        assert!(p.hold(&[9; 60], A, PortId(0), t0, 2).is_ok());
    }

    #[test]
    fn released_frames_leave_no_trace_in_expiry_and_the_queue_stays_bounded() {
        let timeout = Duration::from_millis(100);
        let mut p = Pending::new(4, timeout, 1);
        let t0 = Instant::ZERO;
        // Many holds and releases within one timeout: the arrival queue is compacted.
        for i in 0..1_000u32 {
            let dst = Address([2, 0, 0, 0, (i >> 8) as u8, i as u8]);
            assert!(p.hold(&[1; 60], dst, PortId(0), t0, 4).is_ok());
            p.release(dst, t0, |_, _, _| {});
            assert!(p.order.len() <= STALE_FACTOR * 4 + 1, "{}", p.order.len());
        }
        assert_eq!(p.len(), 0);
        assert_eq!(p.next_expiry(), None);
        assert_eq!(p.expire(t0 + timeout), 0);
        // A frame held later expires at its own time, not at a released one's.
        assert!(p
            .hold(&[1; 60], A, PortId(0), t0 + Duration::from_millis(40), 4)
            .is_ok());
        assert_eq!(p.next_expiry(), Some(t0 + Duration::from_millis(140)));
    }

    /// One step of the model test.
    #[derive(Debug, Clone)]
    enum Op {
        Hold { dst: u8, port: u8, at_ms: u8 },
        Release { dst: u8, at_ms: u8 },
        Expire { at_ms: u8 },
    }

    fn op() -> impl proptest::strategy::Strategy<Value = Op> {
        use proptest::prelude::*;
        prop_oneof![
            (0..6u8, 0..3u8, 0..20u8).prop_map(|(dst, port, at_ms)| Op::Hold { dst, port, at_ms }),
            (0..6u8, 0..20u8).prop_map(|(dst, at_ms)| Op::Release { dst, at_ms }),
            (0..20u8).prop_map(|at_ms| Op::Expire { at_ms }),
        ]
    }

    proptest::proptest! {
        /// The indexed pool behaves like a plain list of held frames scanned every time: same
        /// frames kept, refused, released (in order, with the same expiry flag) and expired.
        #[test]
        fn the_indexed_pool_agrees_with_a_scanned_list(ops in proptest::collection::vec(op(), 0..200)) {
            let timeout = Duration::from_millis(30);
            let (capacity, limit) = (6usize, 3usize);
            let mut p = Pending::new(capacity, timeout, 3);
            // The model: (frame tag, dst, port, arrived) in arrival order.
            let mut model: Vec<(u8, u8, u8, Instant)> = Vec::new();
            let mut now = Instant::ZERO;
            let mut tag = 0u8;
            for op in ops {
                match op {
                    Op::Hold { dst, port, at_ms } => {
                        now += Duration::from_millis(u64::from(at_ms));
                        tag = tag.wrapping_add(1);
                        let held_from = model.iter().filter(|m| m.2 == port).count();
                        let want = if held_from >= limit {
                            Err(HoldRefused::PortShare)
                        } else if model.len() >= capacity {
                            Err(HoldRefused::Full)
                        } else {
                            model.push((tag, dst, port, now));
                            Ok(())
                        };
                        let got = p.hold(&[tag; 60], Address([2, 0, 0, 0, 0, dst]), PortId(u16::from(port)), now, limit);
                        proptest::prop_assert_eq!(got, want);
                    }
                    Op::Release { dst, at_ms } => {
                        now += Duration::from_millis(u64::from(at_ms));
                        let want: Vec<(u8, u16, bool)> = model
                            .iter()
                            .filter(|m| m.1 == dst)
                            .map(|m| (m.0, u16::from(m.2), now.saturating_duration_since(m.3) >= timeout))
                            .collect();
                        model.retain(|m| m.1 != dst);
                        let mut got = Vec::new();
                        p.release(Address([2, 0, 0, 0, 0, dst]), now, |frame, port, expired| {
                            got.push((frame[0], port.0, expired));
                        });
                        proptest::prop_assert_eq!(got, want);
                    }
                    Op::Expire { at_ms } => {
                        now += Duration::from_millis(u64::from(at_ms));
                        let before = model.len();
                        model.retain(|m| now.saturating_duration_since(m.3) < timeout);
                        proptest::prop_assert_eq!(p.expire(now), (before - model.len()) as u64);
                    }
                }
                proptest::prop_assert_eq!(p.len(), model.len());
                proptest::prop_assert_eq!(p.next_expiry(), model.first().map(|m| m.3 + timeout));
                for port in 0..3u8 {
                    let n = model.iter().filter(|m| m.2 == port).count();
                    proptest::prop_assert_eq!(p.held_from(PortId(u16::from(port))), n);
                }
            }
        }
    }

    #[test]
    fn probes_are_outstanding_for_the_timeout() {
        let timeout = Duration::from_millis(100);
        let mut p = Pending::new(0, timeout, 1);
        let ip = Ipv4Addr::new(198, 18, 0, 9);
        assert!(!p.probe_outstanding(ip, Instant::ZERO));
        p.record_probe(ip, Instant::ZERO);
        assert!(p.probe_outstanding(ip, Instant::ZERO + Duration::from_millis(99)));
        assert!(!p.probe_outstanding(ip, Instant::ZERO + Duration::from_millis(100)));
        // A full table of outstanding probes forgets new ones rather than growing.
        for i in 0..MIN_PROBE_TABLE as u32 {
            p.record_probe(Ipv4Addr::from(i + 100), Instant::ZERO);
        }
        p.record_probe(Ipv4Addr::from(7), Instant::ZERO);
        assert!(!p.probe_outstanding(Ipv4Addr::from(7), Instant::ZERO));
        assert!(p.probes.len() <= MIN_PROBE_TABLE);
    }
}
