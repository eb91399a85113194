//! Per-link connection-id allocation (EtheReal §2.2, §3.3; `docs/protocol.md` §1, §5).
//!
//! Connection ids are only unique per link: the node upstream of a link picks the id that frames
//! of a connection carry on that link, and swaps it hop by hop. An [`IdAllocator`] owns the ids of
//! one link (one switch output port). It is a fixed 8 KiB bitmap over the 16-bit id space, so
//! memory is bounded whatever the number of connections; allocation scans from a rotating cursor
//! (a few 64-bit words in the common case), so a released id is not handed out again at once —
//! frames still in flight with an old id are then less likely to hit a new connection.

use rtlan_wire::control::{FailReason, ProxyMacPlan};

/// Number of 64-bit words in the bitmap (65 536 bits).
const WORDS: usize = 65_536 / 64;

/// Why an id could not be allocated or released.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    /// Every connection id of the link is in use.
    #[error("no free connection id on this link")]
    Exhausted,
    /// The id is reserved for control by the proxy-MAC plan.
    #[error("id {0:#06x} is reserved for control")]
    Reserved(u16),
    /// The id is already in use.
    #[error("id {0:#06x} is already in use")]
    InUse(u16),
    /// The id was not in use (double release, or never allocated).
    #[error("id {0:#06x} is not in use")]
    NotInUse(u16),
}

impl IdError {
    /// The reason code a SETUP_FAIL carries for this error.
    pub fn reason(&self) -> FailReason {
        match self {
            IdError::Exhausted => FailReason::IdsExhausted,
            IdError::Reserved(_) | IdError::InUse(_) | IdError::NotInUse(_) => {
                FailReason::Malformed
            }
        }
    }
}

/// The connection ids of one link: which are in use, which are free.
#[derive(Clone)]
pub struct IdAllocator {
    /// Bit `id % 64` of word `id / 64` is set when `id` is in use or reserved.
    bits: Box<[u64; WORDS]>,
    /// Lowest usable id (`plan.reserved`).
    first: u16,
    /// Word where the next search starts.
    cursor: usize,
    /// Ids in use (not counting reserved ones).
    in_use: u32,
}

impl std::fmt::Debug for IdAllocator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdAllocator")
            .field("first", &self.first)
            .field("in_use", &self.in_use)
            .finish_non_exhaustive()
    }
}

impl IdAllocator {
    /// An allocator with every connection id of `plan` free.
    pub fn new(plan: &ProxyMacPlan) -> IdAllocator {
        let mut bits = Box::new([0u64; WORDS]);
        // Mark the reserved ids as taken so the search never returns them.
        for id in 0..plan.reserved {
            bits[usize::from(id) / 64] |= 1 << (id % 64);
        }
        IdAllocator {
            bits,
            first: plan.reserved,
            cursor: usize::from(plan.reserved) / 64,
            in_use: 0,
        }
    }

    /// How many connection ids the link has in total.
    pub fn capacity(&self) -> u32 {
        65_536 - u32::from(self.first)
    }

    /// How many connection ids are in use.
    pub fn in_use(&self) -> u32 {
        self.in_use
    }

    /// Whether `id` is currently allocated (reserved ids report `false`).
    pub fn is_allocated(&self, id: u16) -> bool {
        id >= self.first && self.bit(id)
    }

    fn bit(&self, id: u16) -> bool {
        self.bits[usize::from(id) / 64] & (1 << (id % 64)) != 0
    }

    /// Allocates a free connection id; [`IdError::Exhausted`] when none is left.
    pub fn allocate(&mut self) -> Result<u16, IdError> {
        if self.in_use >= self.capacity() {
            return Err(IdError::Exhausted);
        }
        for step in 0..WORDS {
            let index = (self.cursor + step) % WORDS;
            let word = self.bits[index];
            if word != u64::MAX {
                let bit = (!word).trailing_zeros();
                self.bits[index] |= 1 << bit;
                self.in_use += 1;
                // Start the next search after this word, so released ids rest for a while.
                self.cursor = (index + 1) % WORDS;
                // index < 1024 and bit < 64, so the id fits in 16 bits.
                let id = index as u32 * 64 + bit;
                return u16::try_from(id).map_err(|_| IdError::Exhausted);
            }
        }
        Err(IdError::Exhausted)
    }

    /// Marks a specific `id` as in use (e.g. one chosen by a peer for a link this node accepts).
    pub fn claim(&mut self, id: u16) -> Result<(), IdError> {
        if id < self.first {
            return Err(IdError::Reserved(id));
        }
        if self.bit(id) {
            return Err(IdError::InUse(id));
        }
        self.bits[usize::from(id) / 64] |= 1 << (id % 64);
        self.in_use += 1;
        Ok(())
    }

    /// Returns `id` to the free pool.
    pub fn release(&mut self, id: u16) -> Result<(), IdError> {
        if id < self.first {
            return Err(IdError::Reserved(id));
        }
        if !self.bit(id) {
            return Err(IdError::NotInUse(id));
        }
        self.bits[usize::from(id) / 64] &= !(1 << (id % 64));
        self.in_use -= 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn allocates_unique_non_reserved_ids() {
        let plan = ProxyMacPlan::default();
        let mut ids = IdAllocator::new(&plan);
        let mut seen = HashSet::new();
        for _ in 0..5000 {
            let id = ids.allocate().unwrap();
            assert!(plan.is_connection_id(id), "{id:#x} is reserved");
            assert!(seen.insert(id), "{id:#x} handed out twice");
            assert!(ids.is_allocated(id));
        }
        assert_eq!(ids.in_use(), 5000);
    }

    #[test]
    fn exhaustion_then_release_and_reuse() {
        let plan = ProxyMacPlan::paper();
        let mut ids = IdAllocator::new(&plan);
        assert_eq!(ids.capacity(), 65_536 - 11);
        let mut all = HashSet::new();
        for _ in 0..ids.capacity() {
            assert!(all.insert(ids.allocate().unwrap()));
        }
        assert_eq!(ids.allocate(), Err(IdError::Exhausted));
        assert_eq!(IdError::Exhausted.reason(), FailReason::IdsExhausted);
        ids.release(0x1234).unwrap();
        assert_eq!(ids.release(0x1234), Err(IdError::NotInUse(0x1234)));
        assert_eq!(ids.allocate(), Ok(0x1234), "the only free id");
        assert_eq!(ids.allocate(), Err(IdError::Exhausted));
    }

    #[test]
    fn reserved_ids_cannot_be_claimed_or_released() {
        let plan = ProxyMacPlan::default();
        let mut ids = IdAllocator::new(&plan);
        assert_eq!(ids.claim(0x000f), Err(IdError::Reserved(0x000f)));
        assert_eq!(ids.release(0x0000), Err(IdError::Reserved(0)));
        assert!(!ids.is_allocated(0x0000));
        ids.claim(0x0010).unwrap();
        assert_eq!(ids.claim(0x0010), Err(IdError::InUse(0x0010)));
        assert_ne!(ids.allocate().unwrap(), 0x0010);
    }

    #[test]
    fn released_id_is_not_reused_immediately() {
        let mut ids = IdAllocator::new(&ProxyMacPlan::default());
        let a = ids.allocate().unwrap();
        ids.release(a).unwrap();
        let b = ids.allocate().unwrap();
        assert_ne!(a, b);
    }
}
