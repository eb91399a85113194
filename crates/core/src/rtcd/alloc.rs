//! Allocation of local connection ids on the host's link (EtheReal §3.2): each id names one
//! connection and, through [`super::ProxyPrefix::ip_for`], one proxy IP, so allocating the id
//! allocates the proxy IP. Ids are handed out round-robin so a just-released id (whose late
//! replies may still be in flight) is the last to be reused.

use std::collections::BTreeSet;

/// Connection ids `first..=last` with the ones in use.
#[derive(Debug, Clone)]
pub(super) struct IdAllocator {
    first: u16,
    last: u16,
    next: u16,
    used: BTreeSet<u16>,
}

impl IdAllocator {
    /// Ids `first..=last`; the caller guarantees `first <= last`.
    pub(super) fn new(first: u16, last: u16) -> IdAllocator {
        IdAllocator {
            first,
            last,
            next: first,
            used: BTreeSet::new(),
        }
    }

    /// A free id, or `None` if all are in use.
    pub(super) fn allocate(&mut self) -> Option<u16> {
        let span = u32::from(self.last) - u32::from(self.first) + 1;
        for _ in 0..span {
            let id = self.next;
            self.next = if id >= self.last { self.first } else { id + 1 };
            if self.used.insert(id) {
                return Some(id);
            }
        }
        None
    }

    /// Returns `id` to the pool; false if it was not allocated.
    pub(super) fn release(&mut self, id: u16) -> bool {
        self.used.remove(&id)
    }

    /// Whether `id` is allocated.
    #[cfg(test)]
    pub(super) fn contains(&self, id: u16) -> bool {
        self.used.contains(&id)
    }

    /// Number of allocated ids.
    pub(super) fn in_use(&self) -> usize {
        self.used.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocates_round_robin_and_exhausts() {
        let mut a = IdAllocator::new(16, 18);
        assert_eq!(a.allocate(), Some(16));
        assert_eq!(a.allocate(), Some(17));
        assert!(a.release(16));
        assert_eq!(a.allocate(), Some(18));
        assert_eq!(a.allocate(), Some(16));
        assert_eq!(a.allocate(), None);
        assert!(!a.release(99));
        assert_eq!(a.in_use(), 3);
    }
}
