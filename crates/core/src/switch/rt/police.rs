//! First-hop policing (`docs/delay.md` "Buffers from the bound"): the switch a connection enters
//! the network at checks each of its frames against the connection's T-SPEC — a token bucket
//! of its wire rate and wire burst — and drops what does not conform, counting it per
//! connection as non-conforming. Later hops never police: every hop's queue holds the backlog
//! bound of a conforming connection, so conformance at the edge makes the path lossless.
//! (EtheReal §3.3 leaves overload to the per-connection queue; Löser/Härtig §3 and RFC 2212
//! assume the source conforms to its T-SPEC — this is where that is enforced.)
//!
//! **Reshaping** ([`Policer::regulate`]): a frame that does not conform *yet* may instead be held
//! until the bucket covers it, if that is at most a given allowance away — the switch then
//! releases it at that time ([`super::Reshaper`]). Held frames leave in arrival order and each at
//! the earliest time the token bucket allows, so what leaves conforms to the same T-SPEC and
//! every later hop sees what it was promised; a frame that conformed on arrival is never held
//! (nothing of its connection waits), so a conforming source sees no change. This is the network
//! calculus's "reshaping is for free" (Le Boudec/Thiran §1.5.3) used as an edge regulator, as
//! IEEE 802.1Qcr's asynchronous traffic shaping does at every hop. Why: a sender's own stack
//! bunches a stream that left its shaper conforming (on the lab machine a host's transmit path
//! stalled for 4–70 ms behind the switches' `SCHED_FIFO` threads, measured at the switch port:
//! arrivals needing an 87 KB bucket from a shaper that emits at most 64 KB); a pure policer
//! turns that into loss the sender did nothing to earn, a regulator into delay. A source that
//! really sends too much still gets exactly its rate: what would wait longer than the allowance
//! is dropped as before.
//!
//! Exact: tokens are kept in wire bits × 10⁹ (bits·ns per s), so a rate never loses a fraction.

use std::time::Duration;

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

    /// When a frame costing `bits` wire bits that arrived at `now` may leave: `Some(now)` when it
    /// conforms at once and no earlier frame is still held, `Some(t)` with `t ≤ now + allowance`
    /// when it must be held until `t` (its tokens are taken at `t`, so the next frame queues
    /// behind it), `None` when that would be longer than `allowance` — a non-conforming frame,
    /// nothing taken. With a zero allowance this is [`Policer::conforms`].
    pub fn regulate(&mut self, now: Instant, bits: u64, allowance: Duration) -> Option<Instant> {
        // Held frames took their tokens at their release times: a later arrival is measured
        // from the last of them.
        let from = now.max(self.last);
        let tokens = self.tokens_at(from);
        let cost = u128::from(bits) * SCALE;
        let wait_ns = if cost <= tokens {
            0
        } else if self.rate_bps == 0 || cost > self.depth {
            return None;
        } else {
            u64::try_from((cost - tokens).div_ceil(u128::from(self.rate_bps))).ok()?
        };
        let at = from + Duration::from_nanos(wait_ns);
        if at.saturating_duration_since(now) > allowance {
            return None;
        }
        let earned = u128::from(wait_ns) * u128::from(self.rate_bps);
        self.tokens = (tokens + earned).min(self.depth) - cost;
        self.last = at;
        Some(at)
    }

    /// The tokens at `t` (bits × 10⁹): those at `last` plus what `t − last` earned, up to the
    /// depth; a `t` before `last` earns nothing.
    fn tokens_at(&self, t: Instant) -> u128 {
        let elapsed = u128::from(t.saturating_duration_since(self.last).as_nanos() as u64);
        self.tokens
            .saturating_add(elapsed.saturating_mul(u128::from(self.rate_bps)))
            .min(self.depth)
    }

    /// Whether a frame costing `bits` wire bits conforms at `now`; if so its tokens are taken.
    /// Time going backwards adds nothing.
    pub fn conforms(&mut self, now: Instant, bits: u64) -> bool {
        self.tokens = self.tokens_at(now);
        if now > self.last {
            self.last = now;
        }
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

    #[test]
    fn regulate_holds_what_the_allowance_covers_and_drops_the_rest() {
        // 1 Mbit/s, two 1000-bit frames of depth; 2.5 ms of allowance.
        let allowance = Duration::from_micros(2_500);
        let mut p = Policer::new(1_000_000, 2000, Instant::ZERO);
        let t = Instant::from_nanos;
        assert_eq!(p.regulate(t(0), 1000, allowance), Some(t(0)));
        assert_eq!(p.regulate(t(0), 1000, allowance), Some(t(0)));
        // The bucket is empty: the next two wait 1 ms each, in order.
        assert_eq!(p.regulate(t(0), 1000, allowance), Some(t(1_000_000)));
        assert_eq!(p.regulate(t(0), 1000, allowance), Some(t(2_000_000)));
        // A third would wait 3 ms > 2.5 ms: dropped, and nothing taken.
        assert_eq!(p.regulate(t(0), 1000, allowance), None);
        // Arriving at 1.5 ms it queues behind the one held until 2 ms: leaves at 3 ms.
        assert_eq!(
            p.regulate(t(1_500_000), 1000, allowance),
            Some(t(3_000_000))
        );
        // After a long idle the bucket is full again and nothing waits.
        assert_eq!(
            p.regulate(t(60_000_000), 1000, allowance),
            Some(t(60_000_000))
        );
        // Zero allowance is the policer.
        let mut q = Policer::new(1_000_000, 2000, Instant::ZERO);
        let mut r = q;
        for now in [0u64, 0, 0, 400_000, 999_000, 1_000_000, 1_700_000] {
            assert_eq!(
                q.regulate(t(now), 1000, Duration::ZERO).is_some(),
                r.conforms(t(now), 1000),
                "at {now} ns"
            );
        }
        // A frame larger than the bucket never conforms, whatever the allowance.
        assert_eq!(
            q.regulate(t(90_000_000), 2001, Duration::from_secs(1)),
            None
        );
    }

    proptest! {
        /// What `regulate` releases conforms to the token bucket at the release times, release
        /// times never go back, no frame waits longer than the allowance, and a frame refused
        /// would have had to wait longer than it.
        #[test]
        fn regulated_output_conforms_in_order(
            rate in 1_000u64..1_000_000_000,
            depth in 1_000u64..100_000,
            allowance_us in 0u64..20_000,
            gaps in proptest::collection::vec(0u64..2_000_000, 1..200),
            sizes in proptest::collection::vec(1u64..1_000, 200),
        ) {
            let allowance = Duration::from_micros(allowance_us);
            let mut p = Policer::new(rate, depth, Instant::ZERO);
            let mut now = 0u64;
            let mut out: Vec<(u64, u64)> = Vec::new();
            for (gap, size) in gaps.iter().zip(&sizes) {
                now += gap;
                if let Some(at) = p.regulate(Instant::from_nanos(now), *size, allowance) {
                    let at = at.as_nanos();
                    prop_assert!(at >= now);
                    prop_assert!(at - now <= allowance_us * 1000);
                    if let Some(&(last, _)) = out.last() {
                        prop_assert!(at >= last, "released out of order");
                    }
                    out.push((at, *size));
                }
            }
            // Every window of the releases is within depth + rate × its length.
            for i in 0..out.len() {
                let mut sum: u128 = 0;
                for &(at, size) in &out[i..] {
                    sum += u128::from(size);
                    let span = u128::from(at - out[i].0);
                    // Exact, in bits × 10⁹.
                    let curve = u128::from(depth) * SCALE + u128::from(rate) * span;
                    prop_assert!(sum * SCALE <= curve, "window from {i}: {sum} bits");
                }
            }
        }
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
