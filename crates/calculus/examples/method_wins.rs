//! Which analysis gives each flow's bound, and by how much it beats TFA, on the two benchmark
//! networks (the 1,000-flow / 100-switch leaf–spine of `benches/booking.rs` and a 100-switch
//! line with 1,000 flows over 2–8 consecutive switches, the shape of `benches/tfa.rs`).
//!
//! The LP bound is computed for every flow whose path fits (`LpUse::All`); the time of each
//! whole analysis is printed with and without it.
//!
//! `cargo run --release -p rtlan-calculus --example method_wins`

use std::time::Instant;

use rtlan_calculus::analysis::{analyze_with, Flow, Report};
use rtlan_calculus::methods::{LpUse, Method};

#[allow(dead_code)]
#[path = "../benches/nets/mod.rs"]
mod nets;

fn summary(name: &str, flows: &[Flow], r: &Report) {
    println!("{name}: {} flows", r.flows.len());
    for m in Method::ALL {
        let wins = r.flows.iter().filter(|f| f.method == Some(m)).count();
        println!("  {m:>8}: tightest for {wins} flows");
    }
    for hops in [1usize, 2, 3, 4, 5, 8] {
        let mut ratios: Vec<f64> = flows
            .iter()
            .zip(&r.flows)
            .filter(|(f, _)| f.hops.len() == hops)
            .filter_map(|(_, fr)| Some(fr.bounds.tfa?.to_f64() / fr.delay_bound?.to_f64()))
            .collect();
        if ratios.is_empty() {
            continue;
        }
        ratios.sort_by(f64::total_cmp);
        println!(
            "  {hops} hop(s), {} flows: TFA / tightest median {:.3}, max {:.3}",
            ratios.len(),
            ratios[ratios.len() / 2],
            ratios[ratios.len() - 1]
        );
        let mut gains: Vec<f64> = r
            .flows
            .iter()
            .zip(flows)
            .filter(|(_, f)| f.hops.len() == hops)
            .filter_map(|(fr, _)| {
                let b = fr.bounds;
                let others = [b.tfa, b.fifo_tfa, b.sfa, b.pmoo]
                    .into_iter()
                    .flatten()
                    .min()?;
                Some(others.to_f64() / b.lp?.to_f64())
            })
            .collect();
        if !gains.is_empty() {
            gains.sort_by(f64::total_cmp);
            println!(
                "  {hops} hop(s), {} flows with an LP bound: best other / LP median {:.4}, max {:.4}, min {:.6}",
                gains.len(),
                gains[gains.len() / 2],
                gains[gains.len() - 1],
                gains[0]
            );
        }
    }
}

fn timed(topo: &rtlan_calculus::analysis::Topology, flows: &[Flow], lp: LpUse) -> Report {
    let t = Instant::now();
    let r = analyze_with(topo, flows, lp).expect("no overflow");
    println!(
        "  analysis with {lp:?}: {:.1} ms",
        t.elapsed().as_secs_f64() * 1e3
    );
    r
}

fn main() {
    let (topo, flows) = nets::leaf_spine_flows(1_000);
    summary(
        "leaf-spine, no LP",
        &flows,
        &timed(&topo, &flows, LpUse::Never),
    );
    summary("leaf-spine, LP", &flows, &timed(&topo, &flows, LpUse::All));
    let (topo, flows) = nets::line();
    summary("line, no LP", &flows, &timed(&topo, &flows, LpUse::Never));
    summary("line, LP", &flows, &timed(&topo, &flows, LpUse::All));
}
