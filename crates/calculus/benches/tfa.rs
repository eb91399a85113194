//! Criterion benchmarks: total flow analysis of 1,000 T-SPEC flows over 100 nodes on generic
//! curves (`Network::tfa`), and the whole-network analysis of `rtlan analyze` (TFA, FIFO-aware
//! TFA, SFA and PMOO per flow, `analysis::analyze`) on the same shape: 100 switches in a line,
//! 1,000 flows over 2–8 consecutive switches, each from its own host to its own host.

#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, Criterion};

#[allow(dead_code)]
mod nets;

use rtlan_calculus::analysis::{analyze, Topology};
use rtlan_calculus::{ArrivalCurve, Flow, Network, Node, RateLatency, Q};

/// A deterministic feed-forward network: 100 nodes in a line (1 Gbit/s, 10 µs), 1,000 flows of
/// 0.5 Mbit/s with 1514-byte peaks and 10 ms shaping intervals, each over 2–8 consecutive nodes.
fn network() -> Network {
    let nodes = (0..100)
        .map(|i| Node {
            name: format!("n{i}"),
            service: RateLatency::new(Q::int(1_000_000_000), Q::micros(10)).expect("valid"),
        })
        .collect();
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        seed >> 33
    };
    let flows = (0..1000)
        .map(|i| {
            let start = (next() % 100) as usize;
            let len = 2 + (next() % 7) as usize;
            let end = (start + len).min(100);
            let rate = Q::int(500_000);
            let bucket = Q::bytes(1514)
                .add(Q::new(5_000, 1).expect("valid"))
                .expect("small");
            Flow {
                name: format!("f{i}"),
                arrival: ArrivalCurve::tspec(Q::int(100_000_000), Q::bytes(1514), rate, bucket)
                    .expect("valid T-SPEC"),
                path: (start..end).collect(),
            }
        })
        .collect();
    Network { nodes, flows }
}

/// The same line as [`network`] for `analysis::analyze` (`nets::line`).
fn line() -> (Topology, Vec<rtlan_calculus::analysis::Flow>) {
    nets::line()
}

fn bench_tfa(c: &mut Criterion) {
    let net = network();
    // Sanity: the analysis succeeds (no overflow) before timing it.
    let report = net.tfa().expect("tfa succeeds on the bench network");
    assert_eq!(report.flow_delays.len(), 1000);
    c.bench_function("tfa_1000_flows_100_nodes", |b| {
        b.iter(|| net.tfa().expect("tfa succeeds"))
    });
    let (topo, flows) = line();
    c.bench_function("analyze_best_of_1000_flows_100_switch_line", |b| {
        b.iter(|| analyze(&topo, &flows).expect("no overflow"))
    });
}

criterion_group!(benches, bench_tfa);
criterion_main!(benches);
