//! One timer table per node (STYLE.md item 12; the shape of quinn-proto's `connection/timer.rs`):
//! each node kind names its timers in an enum, and the table keeps at most one deadline per kind.
//! A node's `poll_timeout` is the table's [`TimerTable::next`] combined with its schedulers'
//! readiness, and its `handle_timeout` runs what [`TimerTable::poll_expired`] hands out — in the
//! order the kinds are listed in [`TimerKind::ALL`], so simultaneous timers always run in the same
//! order (DESIGN.md §2: same inputs, same outputs).
//!
//! The table holds node-level timers (ageing sweeps, HELLO rounds, REFRESH rounds). Deadlines
//! per request stay with their requests; a node exposes their minimum next to the table's.

use std::marker::PhantomData;

use crate::time::Instant;

/// The timers of one node kind: a small enum listing every kind once.
pub trait TimerKind: Copy + Eq + std::fmt::Debug + 'static {
    /// Every kind, in the order simultaneous expiries are handed out.
    const ALL: &'static [Self];

    /// This kind's position in [`TimerKind::ALL`].
    fn index(self) -> usize;
}

/// At most one deadline per timer kind (see the module docs). `N` is the number of kinds.
#[derive(Debug, Clone)]
pub struct TimerTable<K: TimerKind, const N: usize> {
    deadlines: [Option<Instant>; N],
    kind: PhantomData<K>,
}

impl<K: TimerKind, const N: usize> Default for TimerTable<K, N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: TimerKind, const N: usize> TimerTable<K, N> {
    /// A table with no timer armed.
    pub fn new() -> Self {
        const { assert!(K::ALL.len() == N, "N must be the number of timer kinds") };
        TimerTable {
            deadlines: [None; N],
            kind: PhantomData,
        }
    }

    /// Arms (or re-arms) `kind` to expire at `at`.
    pub fn set(&mut self, kind: K, at: Instant) {
        if let Some(slot) = self.deadlines.get_mut(kind.index()) {
            *slot = Some(at);
        }
    }

    /// Disarms `kind`.
    pub fn stop(&mut self, kind: K) {
        if let Some(slot) = self.deadlines.get_mut(kind.index()) {
            *slot = None;
        }
    }

    /// When `kind` expires, if armed.
    pub fn get(&self, kind: K) -> Option<Instant> {
        self.deadlines.get(kind.index()).copied().flatten()
    }

    /// Whether `kind` is armed and due at `now`.
    pub fn is_expired(&self, kind: K, now: Instant) -> bool {
        self.get(kind).is_some_and(|at| at <= now)
    }

    /// The earliest deadline of all armed timers (O(kinds), a handful).
    pub fn next(&self) -> Option<Instant> {
        self.deadlines.iter().flatten().copied().min()
    }

    /// The first kind (in [`TimerKind::ALL`] order) due at `now`, disarmed; `None` when nothing
    /// is due. A handler that re-arms its timer for a later instant is not handed out again in
    /// the same round.
    pub fn poll_expired(&mut self, now: Instant) -> Option<K> {
        let kind = K::ALL
            .iter()
            .copied()
            .find(|kind| self.is_expired(*kind, now))?;
        self.stop(kind);
        Some(kind)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum T {
        A,
        B,
        C,
    }

    impl TimerKind for T {
        const ALL: &'static [T] = &[T::A, T::B, T::C];
        fn index(self) -> usize {
            self as usize
        }
    }

    fn at(ms: u64) -> Instant {
        Instant::ZERO + Duration::from_millis(ms)
    }

    #[test]
    fn next_is_the_earliest_armed_deadline() {
        let mut t = TimerTable::<T, 3>::new();
        assert_eq!(t.next(), None);
        t.set(T::C, at(30));
        t.set(T::B, at(20));
        assert_eq!(t.next(), Some(at(20)));
        t.set(T::B, at(40));
        assert_eq!(t.next(), Some(at(30)));
        t.stop(T::C);
        assert_eq!(t.next(), Some(at(40)));
        assert_eq!(t.get(T::A), None);
        assert!(!t.is_expired(T::B, at(39)));
        assert!(t.is_expired(T::B, at(40)));
    }

    #[test]
    fn simultaneous_expiries_come_out_in_kind_order_once() {
        let mut t = TimerTable::<T, 3>::new();
        t.set(T::C, at(10));
        t.set(T::A, at(10));
        t.set(T::B, at(11));
        let mut fired = Vec::new();
        while let Some(kind) = t.poll_expired(at(10)) {
            fired.push(kind);
        }
        assert_eq!(fired, [T::A, T::C]);
        assert_eq!(t.next(), Some(at(11)));
        assert_eq!(t.poll_expired(at(12)), Some(T::B));
        assert_eq!(t.poll_expired(at(12)), None);
    }
}
