//! Order statistics every report of the product shares: the nearest-rank percentile (the simulator's
//! delay statistics, the experiments' tables, `rtlan send --json`) and the summary of a set of
//! intervals (timer ticks `T_m` of EtheReal §4.4's shaping library, inter-arrival times of its
//! Figure 6). One definition so that a p99 means the same in every JSON document.
//! Latency samples of unbounded runs go through [`crate::latency::Histogram`] instead, which
//! ranks by the same rule in bounded memory.
//!
//! Written here rather than taken from a statistics crate: two functions over a sorted slice, and
//! the exact nearest-rank rule (no interpolation) is what the papers' tables report.

use serde::Serialize;

/// Nearest-rank `q`-quantile (`0 < q ≤ 1`) of `sorted` (ascending): the element of rank
/// `⌈q·n⌉`, clamped to `1..=n`. `None` when empty.
///
/// The rank is computed with a 1e-9 tolerance so that an exact rank stays exact (0.999 · 1000 is
/// 999.0000000000001 in `f64`, which must be rank 999, not 1000).
pub fn nearest_rank<T: Copy>(sorted: &[T], q: f64) -> Option<T> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    // The rank is at most n, which is a slice length.
    let rank = rank_of(n as u64, q) as usize;
    Some(sorted[rank - 1])
}

/// The 1-based nearest rank `⌈q·n⌉` of the `q`-quantile among `n > 0` samples, clamped to
/// `1..=n`, with the 1e-9 tolerance of [`nearest_rank`]; shared with
/// [`crate::latency::Histogram`] so that both round alike.
pub(crate) fn rank_of(n: u64, q: f64) -> u64 {
    let rank = (q * n as f64 - 1e-9).ceil();
    // A NaN or negative `q` gives rank 0 → the smallest; anything above n → the largest.
    if rank.is_nan() || rank < 1.0 {
        1
    } else {
        (rank as u64).min(n)
    }
}

/// Distribution of a set of intervals (timer ticks, inter-arrival times), milliseconds; the
/// shape `rtlan send --json` reports its ticks in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct IntervalSummary {
    /// How many intervals.
    pub count: u64,
    /// Mean.
    pub mean_ms: f64,
    /// Population standard deviation.
    pub stddev_ms: f64,
    /// Smallest.
    pub min_ms: f64,
    /// Median (nearest rank).
    pub p50_ms: f64,
    /// 99th percentile (nearest rank).
    pub p99_ms: f64,
    /// Largest.
    pub max_ms: f64,
}

/// Summarizes intervals given in nanoseconds (all zero for none).
pub fn summarize_intervals(ns: &[u64]) -> IntervalSummary {
    let mut sorted = ns.to_vec();
    sorted.sort_unstable();
    let (Some(&first), Some(&last)) = (sorted.first(), sorted.last()) else {
        return IntervalSummary::default();
    };
    let n = sorted.len() as f64;
    let ms = |v: u64| v as f64 / 1e6;
    let mean = sorted.iter().map(|&v| ms(v)).sum::<f64>() / n;
    let var = sorted.iter().map(|&v| (ms(v) - mean).powi(2)).sum::<f64>() / n;
    let rank = |q: f64| nearest_rank(&sorted, q).map_or(0.0, ms);
    IntervalSummary {
        count: sorted.len() as u64,
        mean_ms: mean,
        stddev_ms: var.sqrt(),
        min_ms: ms(first),
        p50_ms: rank(0.5),
        p99_ms: rank(0.99),
        max_ms: ms(last),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn nearest_rank_picks_the_ceiling_rank() {
        let v: Vec<u32> = (1..=1000).collect();
        assert_eq!(nearest_rank(&v, 0.999), Some(999));
        assert_eq!(nearest_rank(&v, 0.99), Some(990));
        assert_eq!(nearest_rank(&v, 0.5), Some(500));
        assert_eq!(nearest_rank(&v, 1.0), Some(1000));
        assert_eq!(nearest_rank(&[7u8, 9], 0.5), Some(7));
        assert_eq!(nearest_rank(&[7u8, 9], 0.51), Some(9));
        assert_eq!(nearest_rank::<u8>(&[], 0.5), None);
        assert_eq!(nearest_rank(&[1, 2, 3], f64::NAN), Some(1));
        assert_eq!(nearest_rank(&[1, 2, 3], 7.0), Some(3));
    }

    #[test]
    fn intervals_summary() {
        let s = summarize_intervals(&[9_000_000, 10_000_000, 11_000_000, 10_000_000]);
        assert_eq!(s.count, 4);
        assert!((s.mean_ms - 10.0).abs() < 1e-9);
        assert!((s.stddev_ms - 0.5f64.sqrt()).abs() < 1e-9);
        assert_eq!(
            (s.min_ms, s.p50_ms, s.p99_ms, s.max_ms),
            (9.0, 10.0, 11.0, 11.0)
        );
        assert_eq!(summarize_intervals(&[]), IntervalSummary::default());
    }

    proptest! {
        #[test]
        fn at_least_q_of_the_samples_lie_at_or_below_it(
            mut v in proptest::collection::vec(0u32..1000, 1..200),
            q in 0.001f64..=1.0,
        ) {
            v.sort_unstable();
            let x = nearest_rank(&v, q).unwrap();
            let below = v.iter().filter(|&&s| s <= x).count() as f64;
            let strictly = v.iter().filter(|&&s| s < x).count() as f64;
            prop_assert!(below >= q * v.len() as f64 - 1e-6);
            prop_assert!(strictly < q * v.len() as f64 + 1e-6);
        }
    }
}
