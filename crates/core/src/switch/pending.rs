//! Frames held while the switch probes for their destination (EtheReal §3.4: "if routing table
//! look-up for an incoming packet fails ... the switch sends out an ARP query ... with the packet's
//! destination IP address as the argument").
//!
//! The held frames live in a slot pool allocated when the switch is built (`capacity` slots of
//! [`MAX_FRAME_LEN`](super::MAX_FRAME_LEN) bytes), in arrival order. Since every frame waits the
//! same `timeout`, the oldest frame always expires first. Alongside, a bounded table remembers
//! which IP addresses were probed when, so a burst of frames to one unknown host sends one probe.

use std::collections::{HashMap, VecDeque};
use std::net::Ipv4Addr;
use std::time::Duration;

use rtlan_wire::ethernet::Address;

use super::{PortId, MAX_FRAME_LEN};
use crate::time::Instant;

/// Most outstanding probes remembered at once (beyond the pending capacity).
const MIN_PROBE_TABLE: usize = 64;

#[derive(Debug, Clone, Copy)]
struct Held {
    slot: usize,
    len: usize,
    dst: Address,
    ingress: PortId,
    arrived: Instant,
}

/// The held frames and the outstanding probes.
#[derive(Debug)]
pub(crate) struct Pending {
    slots: Box<[u8]>,
    free: Vec<usize>,
    order: VecDeque<Held>,
    probes: HashMap<Ipv4Addr, Instant>,
    probe_capacity: usize,
    timeout: Duration,
}

impl Pending {
    /// Room for `capacity` frames, each held for at most `timeout`.
    pub(crate) fn new(capacity: usize, timeout: Duration) -> Pending {
        let probe_capacity = capacity.max(MIN_PROBE_TABLE);
        Pending {
            slots: vec![0u8; capacity * MAX_FRAME_LEN].into_boxed_slice(),
            free: (0..capacity).rev().collect(),
            order: VecDeque::with_capacity(capacity),
            probes: HashMap::with_capacity(probe_capacity),
            probe_capacity,
            timeout,
        }
    }

    /// Number of frames held.
    pub(crate) fn len(&self) -> usize {
        self.order.len()
    }

    /// Holds a copy of `frame` (at most `MAX_FRAME_LEN` bytes); `false` if every slot is taken.
    pub(crate) fn hold(
        &mut self,
        frame: &[u8],
        dst: Address,
        ingress: PortId,
        now: Instant,
    ) -> bool {
        if frame.len() > MAX_FRAME_LEN {
            return false;
        }
        let Some(slot) = self.free.pop() else {
            return false;
        };
        let start = slot * MAX_FRAME_LEN;
        self.slots[start..start + frame.len()].copy_from_slice(frame);
        self.order.push_back(Held {
            slot,
            len: frame.len(),
            dst,
            ingress,
            arrived: now,
        });
        true
    }

    /// Drops the frames held for `timeout` or longer at `now`; returns how many.
    pub(crate) fn expire(&mut self, now: Instant) -> u64 {
        let mut dropped = 0;
        while let Some(front) = self.order.front() {
            if now.saturating_duration_since(front.arrived) < self.timeout {
                break;
            }
            self.free.push(front.slot);
            self.order.pop_front();
            dropped += 1;
        }
        dropped
    }

    /// When the oldest held frame expires.
    pub(crate) fn next_expiry(&self) -> Option<Instant> {
        self.order.front().map(|held| held.arrived + self.timeout)
    }

    /// Takes every frame held for `dst`, oldest first, and hands each to `deliver` with its ingress
    /// port and whether it expired (held `timeout` or longer at `now`).
    pub(crate) fn release(
        &mut self,
        dst: Address,
        now: Instant,
        mut deliver: impl FnMut(&[u8], PortId, bool),
    ) {
        let Pending {
            slots,
            free,
            order,
            timeout,
            ..
        } = self;
        order.retain(|held| {
            if held.dst != dst {
                return true;
            }
            let start = held.slot * MAX_FRAME_LEN;
            let expired = now.saturating_duration_since(held.arrived) >= *timeout;
            deliver(&slots[start..start + held.len], held.ingress, expired);
            free.push(held.slot);
            false
        });
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
        let mut p = Pending::new(3, timeout);
        let t0 = Instant::ZERO;
        assert!(p.hold(&[1; 20], A, PortId(0), t0));
        assert!(p.hold(&[2; 30], B, PortId(1), t0 + Duration::from_millis(10)));
        assert!(p.hold(&[3; 40], A, PortId(2), t0 + Duration::from_millis(20)));
        assert!(!p.hold(&[4; 40], A, PortId(2), t0));
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
            assert!(p.hold(&[5; MAX_FRAME_LEN], A, PortId(0), t0));
        }
        assert!(!p.hold(&[5; 10], A, PortId(0), t0));
    }

    #[test]
    fn probes_are_outstanding_for_the_timeout() {
        let timeout = Duration::from_millis(100);
        let mut p = Pending::new(0, timeout);
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
