//! Latency statistics in bounded memory: one [`Histogram`] that every delay report of the product
//! records into (`rtlan recv`'s one-way delay, the Löser/Härtig delay tables, the setup-latency
//! benchmark), so that a p99 is rounded the same way everywhere and a long run does not keep
//! every sample.
//!
//! # Range, precision and memory
//!
//! Values are nanoseconds from 0 to [`Histogram::HIGHEST_NS`] (one hour) at
//! [`Histogram::SIGNIFICANT_DIGITS`] = 3 significant decimal digits (HdrHistogram's buckets): a
//! bucket is at most 1/1024 of its value wide, so a percentile is exact to 0.1 % (and exact
//! below 2048 ns). The buckets are allocated once, about 270 KiB, whatever the number of samples.
//! A value above one hour is counted in the top bucket (its percentiles saturate there).
//!
//! The count, smallest, largest and sum are kept exactly beside the buckets, so
//! [`Histogram::min_ns`], [`Histogram::max_ns`] and [`Histogram::mean_ns`] are exact.
//!
//! # Rounding rule
//!
//! [`Histogram::quantile_ns`] is the nearest-rank quantile of [`crate::stats::nearest_rank`]
//! (rank `⌈q·n⌉`, no interpolation), reported as the highest value of that sample's bucket,
//! capped at the exact largest sample. The reported value is therefore never below the exact
//! nearest-rank value and at most 0.1 % above it: an upper bound, the side a delay bound is
//! checked from.
//!
//! The buckets are the `hdrhistogram` crate's (the Rust port of Gil Tene's HdrHistogram), with
//! its serialization and sync features off; only the rank walk is ours, to share the rounding
//! rule with [`crate::stats::nearest_rank`].

use crate::stats::rank_of;

/// A bounded latency histogram over nanoseconds (module doc: range, precision, rounding).
#[derive(Debug, Clone)]
pub struct Histogram {
    buckets: hdrhistogram::Histogram<u64>,
    count: u64,
    min_ns: u64,
    max_ns: u64,
    sum_ns: u128,
}

impl Default for Histogram {
    fn default() -> Histogram {
        Histogram::new()
    }
}

impl Histogram {
    /// The largest value told apart from larger ones: one hour, in nanoseconds.
    pub const HIGHEST_NS: u64 = 3_600 * 1_000_000_000;
    /// Significant decimal digits of every bucket (module doc: exact to 0.1 %).
    pub const SIGNIFICANT_DIGITS: u8 = 3;

    /// An empty histogram (allocates its buckets once).
    pub fn new() -> Histogram {
        // The bounds are constants that hdrhistogram accepts (lowest 1 ≥ 1, highest ≥ 2 · lowest,
        // 3 ≤ 5 significant digits), so construction cannot fail.
        let buckets =
            hdrhistogram::Histogram::new_with_bounds(1, Self::HIGHEST_NS, Self::SIGNIFICANT_DIGITS)
                .expect("constant bounds are valid");
        Histogram {
            buckets,
            count: 0,
            min_ns: u64::MAX,
            max_ns: 0,
            sum_ns: 0,
        }
    }

    /// Records one sample of `ns` nanoseconds.
    pub fn record(&mut self, ns: u64) {
        self.buckets.saturating_record(ns);
        self.count += 1;
        self.min_ns = self.min_ns.min(ns);
        self.max_ns = self.max_ns.max(ns);
        self.sum_ns += u128::from(ns);
    }

    /// Adds every sample of `other`.
    pub fn merge(&mut self, other: &Histogram) {
        if other.count == 0 {
            return;
        }
        // Both histograms have the same constant bounds, which is all `add` checks.
        self.buckets
            .add(&other.buckets)
            .expect("histograms of equal bounds add");
        self.count += other.count;
        self.min_ns = self.min_ns.min(other.min_ns);
        self.max_ns = self.max_ns.max(other.max_ns);
        self.sum_ns += other.sum_ns;
    }

    /// Samples recorded.
    pub fn len(&self) -> u64 {
        self.count
    }

    /// Whether no sample was recorded.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The smallest sample, exact; `None` when empty.
    pub fn min_ns(&self) -> Option<u64> {
        (self.count > 0).then_some(self.min_ns)
    }

    /// The largest sample, exact; `None` when empty.
    pub fn max_ns(&self) -> Option<u64> {
        (self.count > 0).then_some(self.max_ns)
    }

    /// The mean of the samples, exact up to `f64` rounding; `None` when empty.
    pub fn mean_ns(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum_ns as f64 / self.count as f64)
    }

    /// The nearest-rank `q`-quantile (`0 < q ≤ 1`; 0.99 for p99) under the module's rounding
    /// rule: the top of the bucket of the sample of rank `⌈q·n⌉`, capped at the largest sample.
    /// `None` when empty.
    pub fn quantile_ns(&self, q: f64) -> Option<u64> {
        if self.count == 0 {
            return None;
        }
        let rank = rank_of(self.count, q);
        let mut below = 0u64;
        for bucket in self.buckets.iter_recorded() {
            below += bucket.count_at_value();
            if below >= rank {
                let top = self.buckets.highest_equivalent(bucket.value_iterated_to());
                return Some(top.min(self.max_ns));
            }
        }
        // The buckets hold `count` samples, so the walk reaches `rank ≤ count`; kept total.
        Some(self.max_ns)
    }
}

impl Extend<u64> for Histogram {
    fn extend<I: IntoIterator<Item = u64>>(&mut self, samples: I) {
        for ns in samples {
            self.record(ns);
        }
    }
}

impl FromIterator<u64> for Histogram {
    fn from_iter<I: IntoIterator<Item = u64>>(samples: I) -> Histogram {
        let mut h = Histogram::new();
        h.extend(samples);
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::nearest_rank;
    use proptest::prelude::*;

    /// Whether `got` is the exact value or at most 0.1 % above it (the module's promise).
    fn within_rule(got: u64, exact: u64) -> bool {
        got >= exact && (got - exact) as f64 <= exact as f64 / 1000.0
    }

    #[test]
    fn uniform_microseconds_are_exact_to_a_tenth_of_a_percent() {
        // 1..=1000 µs: nearest-rank p50 = 500 µs, p99 = 990 µs, p99.9 = 999 µs.
        let h: Histogram = (1..=1000u64).rev().map(|us| us * 1000).collect();
        assert_eq!(h.len(), 1000);
        assert_eq!(h.min_ns(), Some(1000));
        assert_eq!(h.max_ns(), Some(1_000_000));
        assert_eq!(h.mean_ns(), Some(500_500.0));
        for (q, exact) in [(0.5, 500_000), (0.99, 990_000), (0.999, 999_000)] {
            let got = h.quantile_ns(q).unwrap();
            assert!(within_rule(got, exact), "q {q}: {got} vs {exact}");
        }
        // The top rank is the largest sample, exactly (the cap).
        assert_eq!(h.quantile_ns(1.0), Some(1_000_000));
    }

    #[test]
    fn small_values_are_exact() {
        // Below 2048 ns every bucket is one nanosecond wide.
        let h: Histogram = (1..=1000u64).collect();
        assert_eq!(h.quantile_ns(0.5), Some(500));
        assert_eq!(h.quantile_ns(0.99), Some(990));
        assert_eq!(h.quantile_ns(0.999), Some(999), "0.999 · 1000 is rank 999");
        assert_eq!(h.quantile_ns(0.0), Some(1));
        let two: Histogram = [7u64, 9].into_iter().collect();
        assert_eq!(two.quantile_ns(0.5), Some(7));
        assert_eq!(two.quantile_ns(0.51), Some(9));
    }

    #[test]
    fn empty_has_no_statistics() {
        let h = Histogram::new();
        assert!(h.is_empty());
        assert_eq!(h.len(), 0);
        assert_eq!(h.min_ns(), None);
        assert_eq!(h.max_ns(), None);
        assert_eq!(h.mean_ns(), None);
        assert_eq!(h.quantile_ns(0.5), None);
    }

    #[test]
    fn a_million_samples_do_not_grow_it() {
        let mut h = Histogram::new();
        let buckets = h.buckets.distinct_values();
        // A spread from 1 ns to past the top of the range.
        for i in 0..1_000_000u64 {
            h.record(i.wrapping_mul(2_654_435_761) % (2 * Histogram::HIGHEST_NS));
        }
        assert_eq!(h.len(), 1_000_000);
        assert_eq!(h.buckets.distinct_values(), buckets);
        // Above the range: the largest stays exact, the percentiles saturate at the top bucket.
        assert!(h.max_ns().unwrap() > Histogram::HIGHEST_NS);
        let top = h.quantile_ns(0.999).unwrap();
        assert!(
            top >= Histogram::HIGHEST_NS && top < h.max_ns().unwrap(),
            "{top}"
        );
    }

    #[test]
    fn merge_adds_samples() {
        let mut a: Histogram = [10u64, 20].into_iter().collect();
        let b: Histogram = [5u64, 40].into_iter().collect();
        a.merge(&b);
        a.merge(&Histogram::new());
        assert_eq!(a.len(), 4);
        assert_eq!((a.min_ns(), a.max_ns()), (Some(5), Some(40)));
        assert_eq!(a.mean_ns(), Some(18.75));
        assert_eq!(a.quantile_ns(0.5), Some(10));
    }

    proptest! {
        #[test]
        fn quantiles_follow_the_rounding_rule(
            mut v in proptest::collection::vec(0u64..10_000_000_000, 1..300),
            q in 0.001f64..=1.0,
        ) {
            let h: Histogram = v.iter().copied().collect();
            v.sort_unstable();
            let exact = nearest_rank(&v, q).unwrap();
            let got = h.quantile_ns(q).unwrap();
            prop_assert!(within_rule(got, exact), "{} vs {}", got, exact);
            prop_assert!(got <= *v.last().unwrap());
            prop_assert_eq!(h.min_ns(), v.first().copied());
        }
    }
}
