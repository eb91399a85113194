//! The timing wheel proper: a ring of `N` slot lists (N a power of two, ≥ 64) holding the flows
//! whose head frame becomes eligible in each of the next `N` slots, a bitmap of the non-empty
//! slots, and an overflow heap for release slots beyond the wheel's horizon (QSR §3.1 maps
//! Guaranteed Service flows onto a non-work-conserving timing wheel; the CHARM chip keeps one).
//!
//! Entries are flow slot indexes (each flow has at most one entry: its head frame's release
//! slot), linked through arrays indexed by the flow's slot, so an insert is O(1) and allocates
//! nothing. The arrays and the overflow heap's capacity grow in [`TimingWheel::ensure`], which the
//! scheduler calls from `add_flow`; memory follows the flows actually added.
//!
//! Time is counted in absolute slot numbers `k` (the boundary `epoch + k × granularity`). Every
//! entry in the ring has `now_slot < k ≤ now_slot + N`, so bucket `k mod N` holds entries of one
//! `k` only; entries further out wait in the overflow heap and move into the ring as the horizon
//! reaches them.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// No entry (end of a list).
const NONE: u32 = u32::MAX;

/// Where an entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    Absent,
    Ring,
    Overflow,
}

/// A timing wheel of flow slot indexes (see the module docs).
#[derive(Debug)]
pub(crate) struct TimingWheel {
    /// First entry of each bucket's list.
    heads: Box<[u32]>,
    /// Bit `b` set iff bucket `b` is non-empty.
    bitmap: Box<[u64]>,
    /// `N - 1`.
    mask: u64,
    /// The last boundary processed: every entry has a release slot after it.
    now_slot: u64,
    next: Vec<u32>,
    prev: Vec<u32>,
    /// Each entry's release slot.
    at: Vec<u64>,
    place: Vec<Place>,
    overflow: BinaryHeap<Reverse<(u64, u32)>>,
}

impl TimingWheel {
    /// A wheel of `slots` buckets (a power of two, ≥ 64: checked by the scheduler's
    /// configuration) whose current slot is 0.
    pub(crate) fn new(slots: usize) -> TimingWheel {
        let slots = slots.max(64).next_power_of_two();
        TimingWheel {
            heads: vec![NONE; slots].into_boxed_slice(),
            bitmap: vec![0; slots / 64].into_boxed_slice(),
            mask: slots as u64 - 1,
            now_slot: 0,
            next: Vec::new(),
            prev: Vec::new(),
            at: Vec::new(),
            place: Vec::new(),
            overflow: BinaryHeap::new(),
        }
    }

    /// The wheel's horizon in slots.
    pub(crate) fn slots(&self) -> u64 {
        self.mask + 1
    }

    /// Makes room for entry `id` and for `flows` entries in the overflow heap (control path).
    pub(crate) fn ensure(&mut self, id: u32, flows: usize) {
        let need = id as usize + 1;
        if self.next.len() < need {
            self.next.resize(need, NONE);
            self.prev.resize(need, NONE);
            self.at.resize(need, 0);
            self.place.resize(need, Place::Absent);
        }
        self.overflow
            .reserve(flows.saturating_sub(self.overflow.len()));
    }

    /// Schedules `id` (absent, and made room for by [`TimingWheel::ensure`]) for release at slot
    /// `k`. `false` (and nothing stored) if `k` is not after the current slot: the entry is due
    /// already.
    pub(crate) fn insert(&mut self, id: u32, k: u64) -> bool {
        if k <= self.now_slot {
            return false;
        }
        let i = id as usize;
        self.at[i] = k;
        if k - self.now_slot > self.slots() {
            self.place[i] = Place::Overflow;
            // Capacity for one entry per flow was reserved in `ensure`.
            self.overflow.push(Reverse((k, id)));
        } else {
            self.link(id, k);
        }
        true
    }

    fn link(&mut self, id: u32, k: u64) {
        let i = id as usize;
        let b = (k & self.mask) as usize;
        let head = self.heads[b];
        self.next[i] = head;
        self.prev[i] = NONE;
        if head != NONE {
            self.prev[head as usize] = id;
        }
        self.heads[b] = id;
        self.bitmap[b / 64] |= 1 << (b % 64);
        self.place[i] = Place::Ring;
    }

    /// Takes `id` out of the wheel if it is there (control path: O(flows) for an overflow
    /// entry).
    pub(crate) fn remove(&mut self, id: u32) {
        let i = id as usize;
        match self.place.get(i).copied() {
            Some(Place::Ring) => {
                let (p, n) = (self.prev[i], self.next[i]);
                if p == NONE {
                    let b = (self.at[i] & self.mask) as usize;
                    self.heads[b] = n;
                    if n == NONE {
                        self.bitmap[b / 64] &= !(1 << (b % 64));
                    }
                } else {
                    self.next[p as usize] = n;
                }
                if n != NONE {
                    self.prev[n as usize] = p;
                }
            }
            Some(Place::Overflow) => self.overflow.retain(|Reverse((_, e))| *e != id),
            Some(Place::Absent) | None => return,
        }
        self.place[i] = Place::Absent;
    }

    /// Moves the current slot to `to` (if later), handing every entry whose release slot is at
    /// or before it to `release`. Cost: O(min(to − now_slot, N) + released + moved from overflow).
    pub(crate) fn advance(&mut self, to: u64, mut release: impl FnMut(u32)) {
        if to <= self.now_slot {
            return;
        }
        let steps = (to - self.now_slot).min(self.slots());
        for s in 1..=steps {
            let b = ((self.now_slot + s) & self.mask) as usize;
            let mut id = self.heads[b];
            if id == NONE {
                continue;
            }
            // All entries of the ring are due within `steps ≤ N` slots of `now_slot`.
            self.heads[b] = NONE;
            self.bitmap[b / 64] &= !(1 << (b % 64));
            while id != NONE {
                let i = id as usize;
                self.place[i] = Place::Absent;
                let n = self.next[i];
                release(id);
                id = n;
            }
        }
        self.now_slot = to;
        let horizon = to.saturating_add(self.slots());
        while let Some(&Reverse((k, id))) = self.overflow.peek() {
            if k > horizon {
                break;
            }
            self.overflow.pop();
            if k <= to {
                self.place[id as usize] = Place::Absent;
                release(id);
            } else {
                self.link(id, k);
            }
        }
    }

    /// The earliest release slot of any entry.
    pub(crate) fn next_slot(&self) -> Option<u64> {
        let n = self.slots();
        let start = (self.now_slot + 1) & self.mask;
        let words = self.bitmap.len();
        let sw = (start / 64) as usize;
        let sb = start % 64;
        for step in 0..=words {
            let w = (sw + step) % words;
            let mut bits = self.bitmap[w];
            if step == 0 {
                bits &= !0u64 << sb;
            } else if step == words {
                bits &= (1u64 << sb).wrapping_sub(1);
            }
            if bits != 0 {
                let b = w as u64 * 64 + u64::from(bits.trailing_zeros());
                return Some(self.now_slot + 1 + (b + n - start) % n);
            }
        }
        self.overflow.peek().map(|Reverse((k, _))| *k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wheel(flows: u32) -> TimingWheel {
        let mut w = TimingWheel::new(64);
        for id in 0..flows {
            w.ensure(id, flows as usize);
        }
        w
    }

    #[test]
    fn releases_in_slot_order_across_the_wrap_and_the_overflow() {
        let mut w = wheel(5);
        // Slot 200 is beyond the 64-slot horizon: overflow.
        for (id, k) in [(0, 3), (1, 63), (2, 64), (3, 200), (4, 65)] {
            assert!(w.insert(id, k));
        }
        assert!(!w.insert(0, 0), "slot 0 is the current one: due");
        assert_eq!(w.next_slot(), Some(3));
        let mut out = Vec::new();
        w.advance(2, |id| out.push(id));
        assert!(out.is_empty());
        w.advance(3, |id| out.push(id));
        assert_eq!(out, vec![0]);
        assert_eq!(w.next_slot(), Some(63));
        let mut got = Vec::new();
        w.advance(64, |id| got.push(id));
        got.sort_unstable();
        assert_eq!(got, vec![1, 2]);
        // Slot 65 was beyond the horizon when inserted (65 − 0 > 64): it moved from the
        // overflow into the ring when the current slot passed 1.
        assert_eq!(w.next_slot(), Some(65));
        let mut got = Vec::new();
        w.advance(199, |id| got.push(id));
        assert_eq!(got, vec![4]);
        assert_eq!(w.next_slot(), Some(200));
        let mut got = Vec::new();
        w.advance(10_000, |id| got.push(id));
        assert_eq!(got, vec![3]);
        assert_eq!(w.next_slot(), None);
    }

    #[test]
    fn a_late_advance_releases_everything_due_once() {
        let mut w = wheel(64);
        for id in 0..64 {
            assert!(w.insert(id, 1 + u64::from(id) * 3));
        }
        let mut got = Vec::new();
        w.advance(100, |id| got.push(id));
        got.sort_unstable();
        assert_eq!(got, (0..34).collect::<Vec<_>>());
        let mut rest = Vec::new();
        w.advance(1_000_000, |id| rest.push(id));
        assert_eq!(rest.len(), 30);
        assert_eq!(w.next_slot(), None);
    }

    #[test]
    fn removal_unlinks_from_ring_and_overflow() {
        let mut w = wheel(4);
        assert!(w.insert(0, 5));
        assert!(w.insert(1, 5));
        assert!(w.insert(2, 5));
        assert!(w.insert(3, 500));
        w.remove(1);
        w.remove(3);
        w.remove(3);
        let mut got = Vec::new();
        w.advance(1_000, |id| got.push(id));
        got.sort_unstable();
        assert_eq!(got, vec![0, 2]);
        w.remove(0);
        assert!(w.insert(0, 1_001));
        assert_eq!(w.next_slot(), Some(1_001));
        w.remove(0);
        assert_eq!(w.next_slot(), None);
    }
}
