//! The timing wheel's end-to-end bound is tight on an adversarial chain (docs/delay.md; the
//! `multihop` experiment's `experiments/multihop/chain3-wheel.toml`): three reserved
//! connections through 3 switches send their whole bucket (16 maximum-size frames) at once on one
//! grid, so the bursts reach the first switch together, while line-rate floods enter every hop
//! and a greedy TCP sender competes; the switches declare a zero lateness budget (the simulator
//! never wakes late), and each sender the host term its one connection needs (`host_delay =
//! "124us"`: one frame, 12,336 bits at 100 Mbit/s, kept by the daemon's admission — the 2 ms
//! default would pad every bound by 1.9 ms the host cannot use, tightness 0.728).
//!
//! What must hold:
//! - no loss, no real-time drop at any switch, every delay within its connection's bound (no
//!   tolerance: the simulator is exact, so a delay above the bound is a broken scheduler,
//!   signalling or calculus);
//! - the per-hop terms are needed: the largest observed delay exceeds the burst term b/r alone
//!   (12.8 ms here), so a bound of b/r without its latencies would be violated (b/r + D_h,
//!   12,924 µs, is not: the burst term is reached only up to one frame, and the hops' realised
//!   ≈ 3 × 323 µs do not make up its 988 µs);
//! - the scenario stays adversarial: tightness (observed max / bound) of the worst connection
//!   ≥ [`MIN_TIGHTNESS`]. The first switch's regulator releases a burst of 16 frames at the
//!   reserved rate, which alone makes the last frame wait (16 − 1)·L/R ≈ 11.8 ms of the 15.84 ms
//!   bound b/r + D_h + 3θ (0.75); the host link's first frame (what D_h covers), the floods'
//!   blocking frame and the competing aligned connections add the rest (measured 0.815). If the
//!   bursts were shaped away (a two-frame bucket) or no longer aligned, tightness falls to about
//!   0.15–0.25 (the repository's `scenarios/chain3-wheel.toml`: 0.23).

mod common;

use std::path::PathBuf;

use rtlan_sim::results::FlowResult;
use rtlan_sim::scenario::SourceKind;
use rtlan_sim::{RunOptions, Scenario};

/// Measured 0.815 (bound 15,842 µs, observed 12,905 µs); the margin allows small changes of the
/// bound's rounding or of the non-real-time phase, not a non-adversarial scenario (≈ 0.23), the
/// regulator's 0.75 alone, nor the 2 ms default host term (0.728).
const MIN_TIGHTNESS: f64 = 0.8;

fn scenario() -> Scenario {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../experiments/multihop/chain3-wheel.toml");
    Scenario::from_file(&path).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn aligned_bursts_on_the_wheel_come_close_to_the_bound_without_crossing_it() {
    let scenario = scenario();
    // The burst term b/r of the connections (all alike), µs: what a bound without Σθ would be.
    let burst_term_us = scenario
        .traffic
        .iter()
        .filter_map(|t| {
            let r = t.reserve?;
            assert!(matches!(t.kind, SourceKind::Burst { frames: 16, .. }));
            Some(f64::from(r.burst) * 8.0 * 1e6 / r.rate_bps as f64)
        })
        .fold(0.0f64, f64::max);
    assert!((burst_term_us - 12_800.0).abs() < 1.0, "{burst_term_us}");

    let results = common::simulate(&scenario, &RunOptions::default()).results;
    let flows: Vec<&FlowResult> = results
        .flows
        .iter()
        .filter(|f| f.reserved_bps.is_some())
        .collect();
    assert_eq!(flows.len(), 3);
    let mut worst: f64 = 0.0;
    let mut largest_max_us: f64 = 0.0;
    for f in &flows {
        assert_eq!(f.reservation, "opened", "{}: {:?}", f.name, f.refusal);
        assert_eq!(f.hops, Some(3), "{}", f.name);
        assert_eq!(f.loss_frames, Some(0), "{}: lost frames", f.name);
        let bound = f.bound_us.expect("a granted bound") as f64;
        let delay = f.delay.expect("delay samples");
        assert!(
            delay.samples > 2000,
            "{}: {} samples",
            f.name,
            delay.samples
        );
        assert!(
            delay.max_us <= bound,
            "{}: observed {} µs above the bound {bound} µs",
            f.name,
            delay.max_us
        );
        worst = worst.max(f.tightness.expect("tightness"));
        largest_max_us = largest_max_us.max(delay.max_us);
    }
    for s in &results.switches {
        assert_eq!(s.stats.rt.queue_drops, 0, "{}", s.name);
        assert_eq!(s.stats.rt.nonconforming_drops, 0, "{}", s.name);
    }
    assert!(
        largest_max_us > burst_term_us,
        "observed {largest_max_us} µs ≤ b/r = {burst_term_us} µs: the per-hop terms were not exercised"
    );
    assert!(
        worst >= MIN_TIGHTNESS,
        "tightness {worst:.3} < {MIN_TIGHTNESS}: the scenario is no longer adversarial"
    );
}
