//! Buffer pools of one output port (QSR §3.1): "Both the reserved flows and control traffic have
//! distinct buffer pools, each allocated a dedicated amount of memory, but also capable of sharing
//! a common pool of excess buffers. Default IP traffic is constrained to its own buffer pool and is
//! not allowed to share any of the excess buffers."
//!
//! Four traffic classes ([`TrafficClass`]) each have a dedicated pool of bytes: control,
//! Guaranteed Service flows, Controlled-Load flows (the paper's "buffer pool dedicated to GS
//! flows" and "separate buffer pool assigned to CL flows") and default traffic. One shared excess
//! pool backs the control, Guaranteed and Controlled-Load classes once their dedicated pool is
//! used up. A class's
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
    /// Guaranteed Service flows (QSR §3.1's timing wheel, and every reserved flow of the
    /// EtheReal switch): dedicated pool, may borrow excess.
    Guaranteed,
    /// Controlled-Load flows (QSR §3.1, RFC 2211): dedicated pool, may borrow excess.
    ControlledLoad,
    /// Default (best-effort, non-real-time) traffic: its own pool only, never the excess.
    Default,
}

impl TrafficClass {
    /// All classes, in pool order.
    pub const ALL: [TrafficClass; 4] = [
        TrafficClass::Control,
        TrafficClass::Guaranteed,
        TrafficClass::ControlledLoad,
        TrafficClass::Default,
    ];

    /// Whether the class may borrow from the shared excess pool (QSR §3.1: all but default).
    pub fn may_borrow(self) -> bool {
        !matches!(self, TrafficClass::Default)
    }

    fn index(self) -> usize {
        match self {
            TrafficClass::Control => 0,
            TrafficClass::Guaranteed => 1,
            TrafficClass::ControlledLoad => 2,
            TrafficClass::Default => 3,
        }
    }
}

/// Sizes of one port's pools, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct PoolConfig {
    /// Dedicated to control traffic.
    pub control: usize,
    /// Dedicated to Guaranteed Service flows (all of them together).
    pub guaranteed: usize,
    /// Dedicated to Controlled-Load flows (all of them together): the `B` of the Gaussian
    /// buffer test ([`super::admission`]).
    pub controlled_load: usize,
    /// Dedicated to default traffic; its only pool.
    pub default: usize,
    /// Shared excess that control, Guaranteed and Controlled-Load traffic may borrow.
    pub excess: usize,
}

impl PoolConfig {
    /// No pool limit: every dedicated pool is unbounded and there is no excess, so only the
    /// queues' own bounds apply (the EtheReal switch, whose memory is bounded per queue and by
    /// admission).
    pub const UNLIMITED: PoolConfig = PoolConfig {
        control: usize::MAX,
        guaranteed: usize::MAX,
        controlled_load: usize::MAX,
        default: usize::MAX,
        excess: 0,
    };

    fn dedicated(&self, class: TrafficClass) -> usize {
        match class {
            TrafficClass::Control => self.control,
            TrafficClass::Guaranteed => self.guaranteed,
            TrafficClass::ControlledLoad => self.controlled_load,
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
    stats: [PoolStats; 4],
    /// Sum of the classes' `borrowed_bytes`, ≤ `config.excess`.
    excess_used: usize,
}

impl BufferPools {
    /// Empty pools of the given sizes.
    pub fn new(config: PoolConfig) -> BufferPools {
        BufferPools {
            config,
            stats: [PoolStats::default(); 4],
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

    /// Charges `bytes` to `class`: from its dedicated pool, then, for control, Guaranteed and
    /// Controlled-Load traffic, from the excess. `false` (nothing charged, a refusal counted) if they lack room.
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
            guaranteed: 1_000,
            controlled_load: 400,
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
    fn guaranteed_traffic_borrows_and_gives_back() {
        let mut p = pools();
        assert!(p.charge(TrafficClass::Guaranteed, 900));
        assert_eq!(p.excess_used(), 0);
        // 200 bytes: 100 from the dedicated pool, 100 borrowed.
        assert!(p.charge(TrafficClass::Guaranteed, 200));
        assert_eq!(p.excess_used(), 100);
        let s = *p.stats(TrafficClass::Guaranteed);
        assert_eq!((s.used_bytes, s.borrowed_bytes, s.borrows), (1_100, 100, 1));
        // Up to the excess (300 in all), not beyond.
        assert!(p.charge(TrafficClass::Guaranteed, 200));
        assert!(!p.charge(TrafficClass::Guaranteed, 1));
        assert_eq!(p.stats(TrafficClass::Guaranteed).refusals, 1);
        // Releasing gives the borrowed bytes back first.
        p.release(TrafficClass::Guaranteed, 250);
        assert_eq!(p.excess_used(), 50);
        assert_eq!(p.stats(TrafficClass::Guaranteed).borrowed_bytes, 50);
        p.release(TrafficClass::Guaranteed, 1_000);
        assert_eq!(p.excess_used(), 0);
        assert_eq!(p.stats(TrafficClass::Guaranteed).max_borrowed_bytes, 300);
    }

    #[test]
    fn control_guaranteed_and_controlled_load_share_one_excess() {
        let mut p = pools();
        assert!(p.charge(TrafficClass::Control, 100 + 100));
        assert!(p.charge(TrafficClass::Guaranteed, 1_000 + 100));
        // Controlled Load has its own 400 bytes, then borrows the last 100 of the excess.
        assert!(p.charge(TrafficClass::ControlledLoad, 400));
        assert_eq!(p.excess_used(), 200);
        assert!(p.charge(TrafficClass::ControlledLoad, 100));
        // The excess (300) is now lent out in full.
        assert!(!p.charge(TrafficClass::Control, 1));
        assert!(!p.charge(TrafficClass::Guaranteed, 1));
        assert!(!p.charge(TrafficClass::ControlledLoad, 1));
        p.release(TrafficClass::Control, 150);
        assert!(p.charge(TrafficClass::Guaranteed, 100));
        assert_eq!(p.excess_used(), 300);
        // Controlled Load giving back its borrowed bytes frees them for Guaranteed traffic,
        // never for default traffic beyond its own pool.
        p.release(TrafficClass::ControlledLoad, 100);
        assert!(p.charge(TrafficClass::Guaranteed, 100));
        let s = p.stats(TrafficClass::ControlledLoad);
        assert_eq!(
            (s.used_bytes, s.borrowed_bytes, s.max_borrowed_bytes),
            (400, 0, 100)
        );
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
        fn pool_invariants(ops in proptest::collection::vec((0usize..4, any::<bool>(), 1usize..400), 1..200)) {
            let mut p = pools();
            let mut held = [0usize; 4];
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
