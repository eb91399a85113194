//! First-hop policing (`docs/delay.md` "Buffers from the bound"): the switch a connection enters
//! the network at checks each of its frames against the connection's T-SPEC — a token bucket
//! of its wire rate and wire burst — and drops what does not conform, counting it per
//! connection as non-conforming. Later hops never police: every hop's queue holds the backlog
//! bound of a conforming connection, so conformance at the edge makes the path lossless.
//! (EtheReal §3.3 leaves overload to the per-connection queue; Löser/Härtig §3 and RFC 2212
//! assume the source conforms to its T-SPEC — this is where that is enforced.)
//!
//! Exact: tokens are kept in wire bits × 10⁹ (bits·ns per s), so a rate never loses a fraction.

use crate::time::Instant;

/// A token bucket of `rate_bps` wire bit/s and `depth_bits` wire bits, full at creation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policer {
    rate_bps: u64,
    /// Depth in bits × 10⁹.
    depth: u128,
    /// Tokens in bits × 10⁹, as of `last`.
    tokens: u128,
    last: Instant,
}

const SCALE: u128 = 1_000_000_000;

impl Policer {
    /// A full bucket at `now`.
    pub fn new(rate_bps: u64, depth_bits: u64, now: Instant) -> Policer {
        let depth = u128::from(depth_bits) * SCALE;
        Policer {
            rate_bps,
            depth,
            tokens: depth,
            last: now,
        }
    }

    /// Whether a frame costing `bits` wire bits conforms at `now`; if so its tokens are taken.
    /// Time going backwards adds nothing.
    pub fn conforms(&mut self, now: Instant, bits: u64) -> bool {
        let elapsed = u128::from(now.saturating_duration_since(self.last).as_nanos() as u64);
        if now > self.last {
            self.last = now;
        }
        self.tokens = self
            .tokens
            .saturating_add(elapsed.saturating_mul(u128::from(self.rate_bps)))
            .min(self.depth);
        let cost = u128::from(bits) * SCALE;
        if cost <= self.tokens {
            self.tokens -= cost;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn burst_then_rate() {
        // 1 Mbit/s, two 1000-bit frames of depth.
        let mut p = Policer::new(1_000_000, 2000, Instant::ZERO);
        assert!(p.conforms(Instant::ZERO, 1000));
        assert!(p.conforms(Instant::ZERO, 1000));
        assert!(!p.conforms(Instant::ZERO, 1000), "bucket empty");
        // 999 µs refill 999 bits: still short by one.
        assert!(!p.conforms(Instant::from_nanos(999_000), 1000));
        assert!(p.conforms(Instant::from_nanos(1_000_000), 1000));
        // A long idle refills only to the depth.
        assert!(p.conforms(Instant::from_nanos(60_000_000_000), 2000));
        assert!(!p.conforms(Instant::from_nanos(60_000_000_000), 1));
    }

    proptest! {
        /// What conforms in any prefix never exceeds depth + rate × elapsed, and a source that
        /// itself keeps to that curve is never refused.
        #[test]
        fn passes_exactly_the_token_bucket(
            rate in 1_000u64..1_000_000_000,
            depth in 1_000u64..100_000,
            gaps in proptest::collection::vec(0u64..2_000_000, 1..200),
            sizes in proptest::collection::vec(1u64..1_000, 200),
        ) {
            let mut p = Policer::new(rate, depth, Instant::ZERO);
            let mut now = 0u64;
            let mut passed: u128 = 0;
            for (gap, size) in gaps.iter().zip(&sizes) {
                now += gap;
                if p.conforms(Instant::from_nanos(now), *size) {
                    passed += u128::from(*size);
                }
                let curve = u128::from(depth) + u128::from(rate) * u128::from(now) / SCALE;
                prop_assert!(passed <= curve);
            }
            // A conforming source: frames of 100 bits spaced exactly 100/rate apart after a
            // burst of depth/100 frames.
            let mut q = Policer::new(rate, depth, Instant::ZERO);
            for _ in 0..depth / 100 {
                prop_assert!(q.conforms(Instant::ZERO, 100));
            }
            let spacing = (100 * SCALE).div_ceil(u128::from(rate)) as u64;
            for k in 1..50u64 {
                prop_assert!(q.conforms(Instant::from_nanos(k * spacing), 100));
            }
        }
    }
}
