//! Buffer pools of one output port (QSR §3.1): "Both the reserved flows and control traffic have
//! distinct buffer pools, each allocated a dedicated amount of memory, but also capable of sharing
//! a common pool of excess buffers. Default IP traffic is constrained to its own buffer pool and is
//! not allowed to share any of the excess buffers."
//!
//! Three traffic classes ([`TrafficClass`]) each have a dedicated pool of bytes; one shared excess
//! pool backs the control and reserved classes once their dedicated pool is used up. A class's
//! *borrowed* bytes are what it holds beyond its dedicated pool, `max(0, used − dedicated)`; the
//! sum of the borrowed bytes never exceeds the excess pool, and the default class never borrows.
//! When a class frees bytes its borrowed share shrinks first, so excess goes back to the common
//! pool as soon as possible.
//!
//! The pools bound memory *across* queues; each queue keeps its own bound too (a real-time
//! connection's 2 × maximum burst, EtheReal §3.3). A frame is queued only when both its queue and
//! its class's pools have room, and it is charged what the queue charges it (`max(len, 60)`).
//! Pools only count: the bytes themselves live in each queue's preallocated storage.

/// Which buffer pool a queue charges (QSR §3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub enum TrafficClass {
    /// Signalling (control protocol, RSVP): dedicated pool, may borrow excess.
    Control,
    /// Reserved (real-time, guaranteed) flows: dedicated pool, may borrow excess.
    Reserved,
    /// Default (best-effort, non-real-time) traffic: its own pool only, never the excess.
    Default,
}

impl TrafficClass {
    /// All classes, in pool order.
    pub const ALL: [TrafficClass; 3] = [
        TrafficClass::Control,
        TrafficClass::Reserved,
        TrafficClass::Default,
    ];

    /// Whether the class may borrow from the shared excess pool (QSR §3.1: all but default).
    pub fn may_borrow(self) -> bool {
        !matches!(self, TrafficClass::Default)
    }

    fn index(self) -> usize {
        match self {
            TrafficClass::Control => 0,
            TrafficClass::Reserved => 1,
            TrafficClass::Default => 2,
        }
    }
}

/// Sizes of one port's pools, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct PoolConfig {
    /// Dedicated to control traffic.
    pub control: usize,
    /// Dedicated to reserved flows (all of them together).
    pub reserved: usize,
    /// Dedicated to default traffic; its only pool.
    pub default: usize,
    /// Shared excess that control and reserved traffic may borrow.
    pub excess: usize,
}

impl PoolConfig {
    /// No pool limit: every dedicated pool is unbounded and there is no excess, so only the
    /// queues' own bounds apply (the EtheReal switch, whose memory is bounded per queue and by
    /// admission).
    pub const UNLIMITED: PoolConfig = PoolConfig {
        control: usize::MAX,
        reserved: usize::MAX,
        default: usize::MAX,
        excess: 0,
    };

    fn dedicated(&self, class: TrafficClass) -> usize {
        match class {
            TrafficClass::Control => self.control,
            TrafficClass::Reserved => self.reserved,
            TrafficClass::Default => self.default,
        }
    }
}

/// Counters of one class's pools.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct PoolStats {
    /// Bytes the class holds now (dedicated and borrowed).
    pub used_bytes: usize,
    /// Of `used_bytes`, the bytes borrowed from the excess pool now.
    pub borrowed_bytes: usize,
    /// Largest `borrowed_bytes` ever.
    pub max_borrowed_bytes: usize,
    /// Charges that borrowed excess bytes (at least one byte).
    pub borrows: u64,
    /// Charges refused because neither the dedicated pool nor (where allowed) the excess had room.
    pub refusals: u64,
}

/// The buffer pools of one output port (see the module docs).
#[derive(Debug, Clone)]
pub struct BufferPools {
    config: PoolConfig,
    stats: [PoolStats; 3],
    /// Sum of the classes' `borrowed_bytes`, ≤ `config.excess`.
    excess_used: usize,
}

impl BufferPools {
    /// Empty pools of the given sizes.
    pub fn new(config: PoolConfig) -> BufferPools {
        BufferPools {
            config,
            stats: [PoolStats::default(); 3],
            excess_used: 0,
        }
    }

    /// The sizes.
    pub fn config(&self) -> &PoolConfig {
        &self.config
    }

    /// Counters of `class`.
    pub fn stats(&self, class: TrafficClass) -> &PoolStats {
        &self.stats[class.index()]
    }

    /// Bytes of the excess pool lent out now.
    pub fn excess_used(&self) -> usize {
        self.excess_used
    }

    /// Charges `bytes` to `class`: from its dedicated pool, then, for control and reserved
    /// traffic, from the excess. `false` (nothing charged, a refusal counted) if they lack room.
    pub fn charge(&mut self, class: TrafficClass, bytes: usize) -> bool {
        let dedicated = self.config.dedicated(class);
        let excess_free = self.config.excess - self.excess_used;
        let stats = &mut self.stats[class.index()];
        let Some(used) = stats.used_bytes.checked_add(bytes) else {
            stats.refusals += 1;
            return false;
        };
        let borrowed = used.saturating_sub(dedicated);
        let more = borrowed - stats.borrowed_bytes;
        if more > 0 && (!class.may_borrow() || more > excess_free) {
            stats.refusals += 1;
            return false;
        }
        stats.used_bytes = used;
        if more > 0 {
            stats.borrowed_bytes = borrowed;
            stats.max_borrowed_bytes = stats.max_borrowed_bytes.max(borrowed);
            stats.borrows += 1;
            self.excess_used += more;
        }
        true
    }

    /// Gives back `bytes` that were charged to `class` (borrowed bytes first).
    pub fn release(&mut self, class: TrafficClass, bytes: usize) {
        let dedicated = self.config.dedicated(class);
        let stats = &mut self.stats[class.index()];
        stats.used_bytes = stats.used_bytes.saturating_sub(bytes);
        let borrowed = stats.used_bytes.saturating_sub(dedicated);
        self.excess_used -= stats.borrowed_bytes - borrowed;
        stats.borrowed_bytes = borrowed;
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn pools() -> BufferPools {
        BufferPools::new(PoolConfig {
            control: 100,
            reserved: 1_000,
            default: 500,
            excess: 300,
        })
    }

    #[test]
    fn default_traffic_never_takes_the_excess() {
        let mut p = pools();
        assert!(p.charge(TrafficClass::Default, 500));
        // The excess is entirely free, yet one more byte of default traffic is refused.
        assert!(!p.charge(TrafficClass::Default, 1));
        assert_eq!(p.excess_used(), 0);
        let s = p.stats(TrafficClass::Default);
        assert_eq!((s.used_bytes, s.borrowed_bytes, s.refusals), (500, 0, 1));
        // Freeing its own pool lets it in again, within the dedicated amount only.
        p.release(TrafficClass::Default, 60);
        assert!(p.charge(TrafficClass::Default, 60));
        assert!(!p.charge(TrafficClass::Default, 60));
    }

    #[test]
    fn reserved_traffic_borrows_and_gives_back() {
        let mut p = pools();
        assert!(p.charge(TrafficClass::Reserved, 900));
        assert_eq!(p.excess_used(), 0);
        // 200 bytes: 100 from the dedicated pool, 100 borrowed.
        assert!(p.charge(TrafficClass::Reserved, 200));
        assert_eq!(p.excess_used(), 100);
        let s = *p.stats(TrafficClass::Reserved);
        assert_eq!((s.used_bytes, s.borrowed_bytes, s.borrows), (1_100, 100, 1));
        // Up to the excess (300 in all), not beyond.
        assert!(p.charge(TrafficClass::Reserved, 200));
        assert!(!p.charge(TrafficClass::Reserved, 1));
        assert_eq!(p.stats(TrafficClass::Reserved).refusals, 1);
        // Releasing gives the borrowed bytes back first.
        p.release(TrafficClass::Reserved, 250);
        assert_eq!(p.excess_used(), 50);
        assert_eq!(p.stats(TrafficClass::Reserved).borrowed_bytes, 50);
        p.release(TrafficClass::Reserved, 1_000);
        assert_eq!(p.excess_used(), 0);
        assert_eq!(p.stats(TrafficClass::Reserved).max_borrowed_bytes, 300);
    }

    #[test]
    fn control_and_reserved_share_one_excess() {
        let mut p = pools();
        assert!(p.charge(TrafficClass::Control, 100 + 200));
        assert!(p.charge(TrafficClass::Reserved, 1_000 + 100));
        // The excess (300) is now lent out in full.
        assert!(!p.charge(TrafficClass::Control, 1));
        assert!(!p.charge(TrafficClass::Reserved, 1));
        p.release(TrafficClass::Control, 250);
        assert!(p.charge(TrafficClass::Reserved, 200));
        assert_eq!(p.excess_used(), 300);
    }

    #[test]
    fn unlimited_never_refuses() {
        let mut p = BufferPools::new(PoolConfig::UNLIMITED);
        for class in TrafficClass::ALL {
            assert!(p.charge(class, 1 << 40));
        }
        assert_eq!(p.excess_used(), 0);
    }

    proptest! {
        /// Whatever the sequence of charges and releases: the excess lent never exceeds the
        /// excess pool, default traffic never holds more than its dedicated pool, and each
        /// class's borrowed bytes are exactly what it holds beyond its dedicated pool.
        #[test]
        fn pool_invariants(ops in proptest::collection::vec((0usize..3, any::<bool>(), 1usize..400), 1..200)) {
            let mut p = pools();
            let mut held = [0usize; 3];
            for (c, charge, bytes) in ops {
                let class = TrafficClass::ALL[c];
                if charge {
                    if p.charge(class, bytes) {
                        held[c] += bytes;
                    }
                } else {
                    let bytes = bytes.min(held[c]);
                    p.release(class, bytes);
                    held[c] -= bytes;
                }
                prop_assert!(p.excess_used() <= p.config().excess);
                prop_assert!(p.stats(TrafficClass::Default).used_bytes <= p.config().default);
                let mut lent = 0;
                for (i, class) in TrafficClass::ALL.into_iter().enumerate() {
                    let s = p.stats(class);
                    prop_assert_eq!(s.used_bytes, held[i]);
                    prop_assert_eq!(s.borrowed_bytes, held[i].saturating_sub(p.config().dedicated(class)));
                    lent += s.borrowed_bytes;
                }
                prop_assert_eq!(lent, p.excess_used());
            }
        }
    }
}
