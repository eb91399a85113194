//! Unit and property tests for `curve`.

use super::*;
use proptest::prelude::*;

fn q(n: i64) -> Q {
    Q::int(n)
}

fn tb(r: i64, b: i64) -> TokenBucket {
    TokenBucket::new(q(r), q(b)).unwrap()
}

#[test]
fn envelope_drops_dominated_pieces() {
    // (10,5) is above (4,5)... (4,5) has smaller rate and equal burst: dominates (10,5).
    let a = ArrivalCurve::from_buckets(&[tb(10, 5), tb(4, 5), tb(1, 100)]).unwrap();
    assert_eq!(a.pieces(), &[tb(4, 5), tb(1, 100)]);
    // (5, 10) is never the minimum between (10, 0) and (1, 10): crossings at 2 and 0.
    let a = ArrivalCurve::from_buckets(&[tb(10, 0), tb(5, 10), tb(1, 10)]).unwrap();
    assert_eq!(a.pieces(), &[tb(10, 0), tb(1, 10)]);
    assert_eq!(a.breakpoints().unwrap(), vec![Q::new(10, 9).unwrap()]);
}

#[test]
fn tspec_eval_and_breakpoint() {
    // min(100t + 10, 10t + 100): crosses at t = 1.
    let a = ArrivalCurve::tspec(q(100), q(10), q(10), q(100)).unwrap();
    assert_eq!(a.breakpoints().unwrap(), vec![q(1)]);
    assert_eq!(a.eval(Q::new(1, 2).unwrap()).unwrap(), q(60));
    assert_eq!(a.eval(q(3)).unwrap(), q(130));
    assert_eq!(a.eval(q(0)).unwrap(), q(0));
    assert_eq!(a.burst(), q(10));
}

#[test]
fn sum_of_tspecs_has_three_slopes() {
    // Figure 2 of seed 004: slopes 2C, C + r1, r1 + r2.
    let a1 = ArrivalCurve::tspec(q(100), q(10), q(10), q(100)).unwrap(); // g = 1
    let a2 = ArrivalCurve::tspec(q(100), q(10), q(20), q(170)).unwrap(); // g = 2
    let s = a1.add(&a2).unwrap();
    let rates: Vec<Q> = s.pieces().iter().map(|p| p.rate).collect();
    assert_eq!(rates, vec![q(200), q(110), q(30)]);
    assert_eq!(s.breakpoints().unwrap(), vec![q(1), q(2)]);
    assert_eq!(s.eval(q(2)).unwrap(), q(120 + 210));
}

#[test]
fn rate_latency_concat() {
    let b1 = RateLatency::new(q(10), q(2)).unwrap();
    let b2 = RateLatency::new(q(5), q(3)).unwrap();
    let c = b1.concat(&b2).unwrap();
    assert_eq!((c.rate, c.latency), (q(5), q(5)));
    assert_eq!(c.eval(q(7)).unwrap(), q(10));
    assert_eq!(c.eval(q(4)).unwrap(), q(0));
}

#[test]
fn token_bucket_through_rate_latency_textbook() {
    // γ_{r,b} through β_{R,T}: backlog b + rT, delay T + b/R, output γ_{r, b + rT}.
    let a = ArrivalCurve::token_bucket(q(2), q(10)).unwrap();
    let b = RateLatency::new(q(5), q(3)).unwrap();
    assert_eq!(backlog_bound(&a, &b).unwrap(), q(16));
    assert_eq!(delay_bound(&a, &b).unwrap(), q(5));
    let o = output_curve(&a, &b).unwrap();
    assert_eq!(o.pieces(), &[tb(2, 16)]);
}

#[test]
fn unstable_is_an_error() {
    let a = ArrivalCurve::token_bucket(q(6), q(10)).unwrap();
    let b = RateLatency::new(q(5), q(3)).unwrap();
    assert!(matches!(
        delay_bound(&a, &b),
        Err(CurveError::Unstable { .. })
    ));
    assert!(TokenBucket::new(q(-1), q(0)).is_err());
    assert!(ArrivalCurve::from_buckets(&[]).is_err());
}

#[test]
fn output_curve_keeps_line_of_service_rate() {
    // α = min(100t + 10, 10t + 100), t0 = 1, α(1) = 110. With R = 50, T = 0 the output is
    // min(50t + 60, 10t + 100): the part of α steeper than R is replaced by the slope-R line.
    let a = ArrivalCurve::tspec(q(100), q(10), q(10), q(100)).unwrap();
    let o = output_curve(&a, &RateLatency::new(q(50), q(0)).unwrap()).unwrap();
    assert_eq!(o.pieces(), &[tb(50, 60), tb(10, 100)]);
    // With T = 1 the line through (0, 110) is dominated by γ_{10,110}.
    let o = output_curve(&a, &RateLatency::new(q(50), q(1)).unwrap()).unwrap();
    assert_eq!(o.pieces(), &[tb(10, 110)]);
}

/// Brute-force reference on a fine grid (exact rationals), for property tests.
fn grid_sup(f: impl Fn(Q) -> Q, horizon: i64, steps: i64) -> Q {
    let mut best = f(Q::new(1, 1_000_000).unwrap());
    for i in 1..=steps * horizon {
        let t = Q::new(i as i128, steps as i128).unwrap();
        best = best.max(f(t));
    }
    best
}

fn arb_curve() -> impl Strategy<Value = ArrivalCurve> {
    prop::collection::vec((1i64..50, 0i64..200), 1..4).prop_map(|v| {
        let b: Vec<TokenBucket> = v.into_iter().map(|(r, b)| tb(r, b)).collect();
        ArrivalCurve::from_buckets(&b).unwrap()
    })
}

proptest! {
    #[test]
    fn envelope_equals_min_of_inputs(v in prop::collection::vec((0i64..50, 0i64..200), 1..6),
                                     t in 1i64..400) {
        let buckets: Vec<TokenBucket> = v.iter().map(|&(r, b)| tb(r, b)).collect();
        let a = ArrivalCurve::from_buckets(&buckets).unwrap();
        let t = Q::new(t as i128, 10).unwrap();
        let direct = buckets.iter().map(|p| p.at(t).unwrap()).min().unwrap();
        prop_assert_eq!(a.eval(t).unwrap(), direct);
    }

    #[test]
    fn add_is_pointwise_sum(a in arb_curve(), b in arb_curve(), t in 1i64..400) {
        let s = a.add(&b).unwrap();
        let t = Q::new(t as i128, 10).unwrap();
        prop_assert_eq!(s.eval(t).unwrap(), a.eval(t).unwrap().add(b.eval(t).unwrap()).unwrap());
    }

    #[test]
    fn deviations_match_grid_search(a in arb_curve(), r in 50i64..100, lat in 0i64..5) {
        let b = RateLatency::new(q(r), q(lat)).unwrap();
        let v = backlog_bound(&a, &b).unwrap();
        let d = delay_bound(&a, &b).unwrap();
        // A grid can only under-estimate a supremum, and by at most Lipschitz constant × step.
        let gv = grid_sup(|t| a.eval(t).unwrap().sub(b.eval(t).unwrap()).unwrap(), 250, 4);
        let gd = grid_sup(|t| b.latency.add(a.eval(t).unwrap().div(b.rate).unwrap()).unwrap()
            .sub(t).unwrap(), 250, 4);
        prop_assert!(gv <= v);
        prop_assert!(gd <= d);
        let lip = a.pieces()[0].rate.add(b.rate).unwrap();
        prop_assert!(v.sub(gv).unwrap() <= lip.div(q(4)).unwrap());
        prop_assert!(d.sub(gd).unwrap() <= lip.div(b.rate).unwrap().div(q(4)).unwrap());
    }

    #[test]
    fn output_curve_is_the_deconvolution(a in arb_curve(), r in 50i64..100, lat in 0i64..5,
                                         t in 0i64..100) {
        // (α ⊘ β)(t) = sup_{u >= 0} α(t + u) − β(u), checked on a grid of u (a lower estimate) and
        // at the exact maximiser candidates (breakpoints of α shifted by t, and T).
        let b = RateLatency::new(q(r), q(lat)).unwrap();
        let o = output_curve(&a, &b).unwrap();
        let t = Q::new(t as i128, 10).unwrap();
        let mut cands = vec![Q::ZERO, b.latency];
        for bp in a.breakpoints().unwrap() {
            let u = bp.sub(t).unwrap();
            if !u.is_negative() { cands.push(u); }
        }
        let f = |u: Q| -> Q {
            let x = t.add(u).unwrap();
            let ax = if x.is_positive() { a.eval(x).unwrap() } else { a.burst() };
            ax.sub(b.eval(u).unwrap()).unwrap()
        };
        let exact = cands.into_iter().map(f).max().unwrap();
        let ot = if t.is_positive() { o.eval(t).unwrap() } else { o.burst() };
        prop_assert_eq!(ot, exact);
    }

    #[test]
    fn convolution_is_below_both(a in arb_curve(), r in 1i64..100, lat in 0i64..5, t in 0i64..100) {
        let b = RateLatency::new(q(r), q(lat)).unwrap();
        let t = Q::new(t as i128, 10).unwrap();
        let c = convolve_at(&a, &b, t).unwrap();
        // α ⊗ β <= α and <= β, and equals inf over s of α(s) + β(t − s) at s ∈ {0, t − T}.
        prop_assert!(c <= a.eval(t).unwrap());
        prop_assert!(c <= b.eval(t).unwrap());
        let s = t.sub(b.latency).unwrap();
        let at_s = if s.is_positive() { a.eval(s).unwrap() } else { Q::ZERO };
        prop_assert!(c <= at_s.add(b.eval(t.sub(s).unwrap()).unwrap()).unwrap());
    }
}
