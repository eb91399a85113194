//! Which analysis gives each flow's bound, and by how much it beats TFA, on the two benchmark
//! networks (the 1,000-flow / 100-switch leaf–spine of `benches/booking.rs` and a 100-switch
//! line with 1,000 flows over 2–8 consecutive switches, the shape of `benches/tfa.rs`).
//!
//! `cargo run --release -p rtlan-calculus --example method_wins`

use rtlan_calculus::analysis::{analyze, Flow, Report, Topology};
use rtlan_calculus::methods::Method;
use rtlan_calculus::netfile::{FlowSpec, LinkSpec, NetFile, SwitchSpec};
use rtlan_calculus::Q;

/// The generator of the benchmarks (an LCG).
fn lcg() -> impl FnMut(usize) -> usize {
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    move |m: usize| {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) as usize % m
    }
}

fn gbit_link(a: String, b: String) -> LinkSpec {
    LinkSpec {
        ends: [a, b],
        rate: Q::int(1_000_000_000),
        effective_rate: Q::int(1_000_000_000),
    }
}

fn switch(name: String) -> SwitchSpec {
    SwitchSpec {
        name,
        t_mux: Q::micros(10),
        buffer: Q::bytes(16 << 20),
    }
}

fn resolve(f: &NetFile) -> (Topology, Vec<Flow>) {
    let topo = Topology::from_netfile(f);
    let flows = f
        .flows
        .iter()
        .map(|x| topo.resolve(x).expect("generated paths are valid"))
        .collect();
    (topo, flows)
}

/// `benches/booking.rs`'s `network(1_000)`: 90 leaves, 10 spines, 8 hosts per leaf, 100 kbit/s
/// flows (M = 1514 B, b = 1639 B) over a random spine.
fn leaf_spine() -> (Topology, Vec<Flow>) {
    let mut f = NetFile::default();
    for l in 0..90 {
        f.switches.push(switch(format!("l{l}")));
        for h in 0..8 {
            f.links
                .push(gbit_link(format!("h{l}x{h}"), format!("l{l}")));
        }
        for s in 0..10 {
            f.links.push(gbit_link(format!("l{l}"), format!("s{s}")));
        }
    }
    for s in 0..10 {
        f.switches.push(switch(format!("s{s}")));
    }
    let mut next = lcg();
    for i in 0..1_000 {
        let (a, b) = (next(90), next(90));
        let (ha, hb) = (next(8), next(8));
        let (src, dst) = (format!("h{a}x{ha}"), format!("h{b}x{hb}"));
        let path = if a == b {
            if ha == hb {
                continue;
            }
            vec![src, format!("l{a}"), dst]
        } else {
            vec![
                src,
                format!("l{a}"),
                format!("s{}", next(10)),
                format!("l{b}"),
                dst,
            ]
        };
        f.flows.push(FlowSpec {
            name: format!("f{i}"),
            path,
            rate: Q::int(100_000),
            max_packet: Q::bytes(1514),
            burst: Q::bytes(1514 + 125),
            host_delay: Q::micros(80),
            deadline: None,
        });
    }
    resolve(&f)
}

/// 100 switches in a line (1 Gbit/s, t_mux 10 µs), 1,000 flows of 0.5 Mbit/s (M = 1514 B,
/// b = M + 5,000 bits), each from its own host over 2–8 consecutive switches to its own host.
fn line() -> (Topology, Vec<Flow>) {
    let mut f = NetFile::default();
    for k in 0..100 {
        f.switches.push(switch(format!("s{k}")));
        if k > 0 {
            f.links
                .push(gbit_link(format!("s{}", k - 1), format!("s{k}")));
        }
    }
    let mut next = lcg();
    for i in 0..1_000 {
        let start = next(100);
        let len = 2 + next(7);
        let end = (start + len).min(100);
        let (a, z) = (format!("a{i}"), format!("z{i}"));
        f.links.push(gbit_link(a.clone(), format!("s{start}")));
        f.links.push(gbit_link(format!("s{}", end - 1), z.clone()));
        let mut path = vec![a];
        path.extend((start..end).map(|k| format!("s{k}")));
        path.push(z);
        f.flows.push(FlowSpec {
            name: format!("f{i}"),
            path,
            rate: Q::int(500_000),
            max_packet: Q::bytes(1514),
            burst: Q::bytes(1514).add(Q::int(5_000)).expect("small"),
            host_delay: Q::ZERO,
            deadline: None,
        });
    }
    resolve(&f)
}

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
    let (topo, flows) = leaf_spine();
    summary(
        "leaf-spine",
        &flows,
        &analyze(&topo, &flows).expect("no overflow"),
    );
    let (topo, flows) = line();
    summary(
        "line",
        &flows,
        &analyze(&topo, &flows).expect("no overflow"),
    );
}
