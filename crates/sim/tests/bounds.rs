//! Guarantees across hops (issue 11, docs/delay.md): chains of 3 and 5 rtlan switches with
//! floods into every hop and greedy TCP, once with EtheReal's cyclic scheduler and once with the
//! QSR timing wheel. Every reserved connection is granted a bound, loses nothing, and every one
//! of its delays stays within the bound; the wheel's bound for the example connection
//! (30 Mbit/s of 1000-byte datagrams, two-frame burst, 3 hops, 200 µs lateness budget) is at most
//! 3 ms, the cyclic scheduler's tens of milliseconds.
//!
//! Tolerance: none on the bound — the simulator wakes exactly, so an observed delay above the
//! bound is a broken scheduler, signalling or calculus, not noise. A FIFO port (or a per-hop
//! queue of only 2 × burst) fails these runs: the floods fill a FIFO for tens of ms.

mod common;

use rtlan_sim::results::{FlowResult, Results};
use rtlan_sim::RunOptions;

fn run(name: &str) -> Results {
    let scenario = common::load(name);
    common::simulate(&scenario, &RunOptions::default()).results
}

fn reserved(results: &Results) -> Vec<&FlowResult> {
    results
        .flows
        .iter()
        .filter(|f| f.reserved_bps.is_some())
        .collect()
}

/// Every reserved flow: opened with a bound, no loss, delays within the bound; returns the
/// flows for scenario-specific checks.
fn check_held(name: &str, results: &Results, hops: u8) {
    let flows = reserved(results);
    assert!(!flows.is_empty(), "{name}: no reserved flow");
    for f in flows {
        assert_eq!(
            f.reservation, "opened",
            "{name} {}: {:?}",
            f.name, f.refusal
        );
        assert_eq!(f.hops, Some(hops), "{name} {}", f.name);
        assert_eq!(f.loss_frames, Some(0), "{name} {}: lost frames", f.name);
        let bound = f
            .bound_us
            .unwrap_or_else(|| panic!("{name} {}: no bound", f.name));
        let delay = f
            .delay
            .unwrap_or_else(|| panic!("{name} {}: no samples", f.name));
        assert!(
            delay.samples > 100,
            "{name} {}: {} samples",
            f.name,
            delay.samples
        );
        assert!(
            delay.max_us <= bound as f64,
            "{name} {}: observed max {} µs above the bound {bound} µs",
            f.name,
            delay.max_us
        );
        let tightness = f.tightness.expect("tightness with a bound and samples");
        assert!(
            tightness > 0.0 && tightness <= 1.0,
            "{name} {}: {tightness}",
            f.name
        );
    }
    // Every switch forwarded the reserved frames without a real-time drop anywhere.
    for s in &results.switches {
        assert_eq!(
            s.stats.rt.queue_drops, 0,
            "{name} {}: real-time queue drops",
            s.name
        );
        assert_eq!(
            s.stats.rt.nonconforming_drops, 0,
            "{name} {}: policed",
            s.name
        );
    }
}

fn bound_of(results: &Results, flow: &str) -> u64 {
    results
        .flows
        .iter()
        .find(|f| f.name.starts_with(flow))
        .and_then(|f| f.bound_us)
        .unwrap_or_else(|| panic!("no bound for {flow}"))
}

#[test]
fn three_switches_wheel() {
    let r = run("chain3-wheel.toml");
    check_held("chain3-wheel", &r, 3);
    let bound = bound_of(&r, "r1 ");
    assert!(
        bound <= 3000,
        "the wheel bounds the 30 Mbit/s connection by {bound} µs > 3 ms"
    );
}

#[test]
fn three_switches_cyclic() {
    let r = run("chain3-cyclic.toml");
    check_held("chain3-cyclic", &r, 3);
    let bound = bound_of(&r, "r1 ");
    assert!(
        (10_000..100_000).contains(&bound),
        "the cyclic scheduler at 10 ms should bound it by tens of ms, not {bound} µs"
    );
}

#[test]
fn five_switches_both_schedulers() {
    check_held("chain5-wheel", &run("chain5-wheel.toml"), 5);
    check_held("chain5-cyclic", &run("chain5-cyclic.toml"), 5);
}
