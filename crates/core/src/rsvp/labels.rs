//! The label space of one output link, owned by its upstream end (QSR paper §3.1: "the label
//! space of the VCs on the link is currently owned by the sender"): MPLS labels 16 … 2²⁰ − 1
//! (0–15 are reserved, RFC 3032 §2.1), handed out round robin so that a label just freed is not
//! reused at once while a late frame with it may still be in flight.

use std::collections::HashSet;

use rtlan_wire::mpls::MAX_LABEL;

/// The first label that is not reserved.
pub const FIRST_LABEL: u32 = 16;

/// The labels of one link in use.
#[derive(Debug, Clone, Default)]
pub(crate) struct LabelSpace {
    next: u32,
    in_use: HashSet<u32>,
}

impl LabelSpace {
    /// A free label, or `None` when all 2²⁰ − 16 are in use.
    pub(crate) fn allocate(&mut self) -> Option<u32> {
        let span = MAX_LABEL - FIRST_LABEL + 1;
        if self.in_use.len() as u32 >= span {
            return None;
        }
        loop {
            let label = FIRST_LABEL + self.next % span;
            self.next = (self.next + 1) % span;
            if self.in_use.insert(label) {
                return Some(label);
            }
        }
    }

    /// Returns `label` to the space.
    pub(crate) fn free(&mut self, label: u32) {
        self.in_use.remove(&label);
    }

    /// Labels in use.
    pub(crate) fn len(&self) -> usize {
        self.in_use.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_start_above_the_reserved_ones_and_are_not_reused_at_once() {
        let mut s = LabelSpace::default();
        let a = s.allocate().unwrap();
        let b = s.allocate().unwrap();
        assert_eq!((a, b), (16, 17));
        s.free(a);
        assert_eq!(s.allocate(), Some(18));
        assert_eq!(s.len(), 2);
    }
}
