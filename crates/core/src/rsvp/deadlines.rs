//! Per-state deadlines in one ordered index (docs/rsvp.md §7.1): arming, re-arming or
//! disarming a state's timer is one map update and one ordered-set removal and insertion, and
//! the next deadline is the set's first element — never a scan over the states.

use std::collections::{BTreeSet, HashMap};
use std::hash::Hash;

use crate::time::Instant;

/// At most one deadline per key `K`.
#[derive(Debug, Clone)]
pub(crate) struct Deadlines<K: Copy + Ord + Hash> {
    by_time: BTreeSet<(Instant, K)>,
    by_key: HashMap<K, Instant>,
}

impl<K: Copy + Ord + Hash> Default for Deadlines<K> {
    fn default() -> Self {
        Deadlines {
            by_time: BTreeSet::new(),
            by_key: HashMap::new(),
        }
    }
}

impl<K: Copy + Ord + Hash> Deadlines<K> {
    /// Arms `key` at `at`, replacing its previous deadline.
    pub(crate) fn set(&mut self, key: K, at: Instant) {
        if let Some(old) = self.by_key.insert(key, at) {
            self.by_time.remove(&(old, key));
        }
        self.by_time.insert((at, key));
    }

    /// Disarms `key`.
    pub(crate) fn remove(&mut self, key: K) {
        if let Some(old) = self.by_key.remove(&key) {
            self.by_time.remove(&(old, key));
        }
    }

    /// The earliest deadline.
    pub(crate) fn next(&self) -> Option<Instant> {
        self.by_time.first().map(|(at, _)| *at)
    }

    /// Removes and returns a key whose deadline is at or before `now`, earliest first (ties in
    /// key order).
    pub(crate) fn pop_expired(&mut self, now: Instant) -> Option<K> {
        let &(at, key) = self.by_time.first()?;
        if at > now {
            return None;
        }
        self.by_time.remove(&(at, key));
        self.by_key.remove(&key);
        Some(key)
    }

    /// How many keys are armed.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.by_key.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn re_arming_replaces_and_expiry_is_in_time_order() {
        let t = |ms| Instant::ZERO + Duration::from_millis(ms);
        let mut d = Deadlines::default();
        d.set(1u32, t(30));
        d.set(2, t(10));
        d.set(1, t(5));
        d.set(3, t(20));
        d.remove(3);
        assert_eq!(d.len(), 2);
        assert_eq!(d.next(), Some(t(5)));
        assert_eq!(d.pop_expired(t(4)), None);
        assert_eq!(d.pop_expired(t(50)), Some(1));
        assert_eq!(d.pop_expired(t(50)), Some(2));
        assert_eq!(d.pop_expired(t(50)), None);
        assert_eq!(d.next(), None);
    }
}
