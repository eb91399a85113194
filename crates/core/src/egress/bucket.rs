//! An exact token bucket on virtual time, in wire bits: the per-flow regulator of the timing wheel
//! (QSR §3.1: a Guaranteed Service flow's bucket "set to the maximum packet size M", rate R) and
//! the control bucket that bounds how much signalling may go ahead of reserved traffic.
//!
//! Tokens are kept in nano-bits (bits × 10⁹). Time inside the bucket is kept *scaled*, in units
//! of `1 / rate` nanoseconds (an instant `t` ns is `t × rate`), so the instant at which the bucket
//! holds a frame's bits is exact even when it falls between two nanoseconds: a rate of `R` bit/s
//! adds exactly `R` nano-bits per nanosecond, i.e. one nano-bit per scaled unit. The bucket's state
//! is therefore never rounded and a long run keeps the rate exactly; only the instants reported
//! to the scheduler are rounded, *up* to the next nanosecond (never early). The real conformance
//! instants satisfy the bucket exactly: at most `depth + rate × t` bits in any window of length
//! `t`.

/// Nano-bits per bit.
const SCALE: u128 = 1_000_000_000;

/// A token bucket of `rate_bps` bit/s and `depth` bits (see the module docs).
#[derive(Debug, Clone)]
pub(crate) struct TokenBucket {
    rate: u128,
    /// Depth in nano-bits.
    depth: u128,
    /// Tokens in nano-bits at `t_ref` (≤ `depth`).
    tokens: u128,
    /// Reference instant, scaled (ns × rate).
    t_ref: u128,
}

impl TokenBucket {
    /// A full bucket of `depth_bits` filling at `rate_bps` (0: it never refills).
    pub(crate) fn new(rate_bps: u64, depth_bits: u64) -> TokenBucket {
        let depth = u128::from(depth_bits) * SCALE;
        TokenBucket {
            rate: u128::from(rate_bps),
            depth,
            tokens: depth,
            t_ref: 0,
        }
    }

    /// `t` ns, scaled.
    pub(crate) fn scale(&self, t: u64) -> u128 {
        u128::from(t) * self.rate
    }

    /// A scaled instant rounded up to whole nanoseconds (`u64::MAX` if it does not fit or the
    /// rate is 0).
    pub(crate) fn ceil_ns(&self, scaled: u128) -> u64 {
        if self.rate == 0 {
            return u64::MAX;
        }
        u64::try_from(scaled.div_ceil(self.rate)).unwrap_or(u64::MAX)
    }

    /// Tokens in nano-bits at scaled instant `t` (an instant before the reference reads the
    /// reference).
    fn tokens_at(&self, t: u128) -> u128 {
        (self.tokens + t.saturating_sub(self.t_ref)).min(self.depth)
    }

    /// Whether `bits` may go at `t` ns.
    pub(crate) fn conforms(&self, t: u64, bits: u64) -> bool {
        u128::from(bits) * SCALE <= self.tokens_at(self.scale(t))
    }

    /// The exact (scaled) earliest instant at or after both `arrival` ns and the reference at
    /// which the bucket holds `bits`: the eligibility time of a frame of `bits` wire bits arriving
    /// at `arrival`. `None` if the bucket never holds that many (rate 0 and too few tokens, or
    /// `bits` beyond the depth).
    pub(crate) fn eligible_at(&self, arrival: u64, bits: u64) -> Option<u128> {
        let need = u128::from(bits) * SCALE;
        let from = self.scale(arrival).max(self.t_ref);
        let have = self.tokens_at(from);
        if have >= need {
            return Some(from);
        }
        if need > self.depth || self.rate == 0 {
            return None;
        }
        // One nano-bit per scaled unit.
        Some(from + (need - have))
    }

    /// Takes `bits` at scaled instant `t` (≥ the reference, and the bucket holds them;
    /// otherwise the tokens saturate at zero). `t` becomes the reference.
    pub(crate) fn take_scaled(&mut self, t: u128, bits: u64) {
        let t = t.max(self.t_ref);
        self.tokens = self.tokens_at(t).saturating_sub(u128::from(bits) * SCALE);
        self.t_ref = t;
    }

    /// Takes `bits` at `t` ns (see [`TokenBucket::take_scaled`]).
    pub(crate) fn take(&mut self, t: u64, bits: u64) {
        self.take_scaled(self.scale(t), bits);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Runs a greedy regulator over `frames` (arrival ns, bits) in order, as the wheel does: each
    /// frame's eligibility is computed once its predecessor has been released.
    /// Returns the exact (scaled) eligibility instants.
    fn regulate(bucket: &mut TokenBucket, frames: &[(u64, u64)]) -> Vec<u128> {
        frames
            .iter()
            .map(|&(arrival, bits)| {
                let e = bucket
                    .eligible_at(arrival, bits)
                    .expect("bits within depth");
                assert!(bucket.conforms(bucket.ceil_ns(e), bits));
                bucket.take_scaled(e, bits);
                e
            })
            .collect()
    }

    #[test]
    fn saturated_source_gets_exactly_the_rate() {
        // 3 bit/s, depth 704 bits, 704-bit frames all present at 0: frame k (from 0) conforms at
        // exactly 704 k / 3 s, reported rounded up; after 3 frames past the first, exactly 704 s
        // have passed — no rounding carried from one frame to the next.
        let mut b = TokenBucket::new(3, 704);
        let e: Vec<u64> = regulate(&mut b, &[(0, 704); 4])
            .into_iter()
            .map(|t| b.ceil_ns(t))
            .collect();
        assert_eq!(e, [0, 234_666_666_667, 469_333_333_334, 704_000_000_000]);
        // A million frames later the schedule is still exact.
        for _ in 0..1_000_000 {
            let t = b.eligible_at(0, 704).expect("within depth");
            b.take_scaled(t, 704);
        }
        // 704 s + 10⁶ × 234.666… s, rounded up once at the end.
        assert_eq!(
            b.ceil_ns(b.t_ref),
            704_000_000_000 + 234_666_666_666_666_667
        );
    }

    #[test]
    fn an_idle_bucket_refills_only_to_its_depth() {
        let mut b = TokenBucket::new(1_000_000, 12_000);
        b.take(0, 12_000);
        // A long pause fills the bucket to 12,000 bits, not more.
        assert!(b.conforms(1_000_000_000, 12_000));
        assert!(!b.conforms(1_000_000_000, 12_001));
        b.take(1_000_000_000, 12_000);
        let e = b.eligible_at(1_000_000_000, 1_000).expect("within depth");
        assert_eq!(b.ceil_ns(e), 1_001_000_000);
        assert_eq!(b.eligible_at(0, 12_001), None);
        let mut dry = TokenBucket::new(0, 1_000);
        assert!(dry.conforms(5, 1_000));
        dry.take(5, 1_000);
        assert!(!dry.conforms(u64::MAX, 1));
        assert_eq!(dry.eligible_at(9, 1), None);
    }

    proptest! {
        /// The greedy regulator never releases more than `depth + rate × t` in any window, and
        /// releases every frame as early as that allows (a nanosecond earlier would break the
        /// bound or precede the frame's arrival or its predecessor).
        #[test]
        fn releases_conform_and_are_as_early_as_possible(
            rate in 1_000u64..1_000_000_000,
            sizes in proptest::collection::vec(672u64..=12_304, 1..40),
            gaps in proptest::collection::vec(0u64..2_000_000, 40),
            extra in 0u64..20_000,
        ) {
            let depth = 12_304 + extra;
            let mut arrival = 0;
            let frames: Vec<(u64, u64)> = sizes
                .iter()
                .zip(&gaps)
                .map(|(&bits, &gap)| {
                    arrival += gap;
                    (arrival, bits)
                })
                .collect();
            let b = TokenBucket::new(rate, depth);
            let e = regulate(&mut b.clone(), &frames);
            for k in 0..frames.len() {
                let arrival = b.scale(frames[k].0);
                prop_assert!(e[k] >= arrival);
                prop_assert!(k == 0 || e[k] >= e[k - 1]);
                let mut sum = 0u128;
                let mut binding = e[k] == arrival || (k > 0 && e[k] == e[k - 1]);
                for j in (0..=k).rev() {
                    sum += u128::from(frames[j].1) * SCALE;
                    // Window [e_j, e_k] (one scaled unit is one nano-bit of tokens):
                    // bits released ≤ depth + rate × (e_k − e_j), exactly.
                    let allowance = u128::from(depth) * SCALE + (e[k] - e[j]);
                    prop_assert!(sum <= allowance, "window {j}..={k} over budget");
                    // Any earlier instant would break this window's budget (the window of the
                    // frame alone does not move).
                    if j < k && sum == allowance {
                        binding = true;
                    }
                }
                prop_assert!(binding, "frame {k} released later than necessary");
            }
        }
    }
}
