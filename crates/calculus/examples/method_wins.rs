//! Which analysis gives each flow's bound, and by how much it beats TFA, on the two benchmark
//! networks (the 1,000-flow / 100-switch leaf–spine of `benches/booking.rs` and a 100-switch
//! line with 1,000 flows over 2–8 consecutive switches, the shape of `benches/tfa.rs`).
//!
//! `cargo run --release -p rtlan-calculus --example method_wins`

use rtlan_calculus::analysis::{analyze, Flow, Report};
use rtlan_calculus::methods::Method;

#[allow(dead_code)]
#[path = "../benches/nets/mod.rs"]
mod nets;

fn summary(name: &str, flows: &[Flow], r: &Report) {
    println!("{name}: {} flows", r.flows.len());
    for m in Method::ALL {
        let wins = r.flows.iter().filter(|f| f.method == Some(m)).count();
        println!("  {m:>8}: tightest for {wins} flows");
    }
    for hops in [1usize, 2, 3, 5, 8] {
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
    }
}

fn main() {
    let (topo, flows) = nets::leaf_spine_flows(1_000);
    summary(
        "leaf-spine",
        &flows,
        &analyze(&topo, &flows).expect("no overflow"),
    );
    let (topo, flows) = nets::line();
    summary(
        "line",
        &flows,
        &analyze(&topo, &flows).expect("no overflow"),
    );
}
