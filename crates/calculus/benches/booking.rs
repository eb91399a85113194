//! Criterion benchmarks for issue 5 item 6: admitting one flow into a leaf–spine network with
//! 10,000 booked flows (incremental), the full analysis of 1,000 flows over 100 switches, and
//! admitting one flow into that 1,000-flow network.
//!
//! `admit_one_into_10k` admits one fixed flow over a random spine; `admit_random_into_10k` is
//! what `rtlan bench bwm` measures through the manager: 10,000 flows between random host pairs
//! routed like the manager routes them (shortest path, ties by link order, so every inter-leaf
//! flow crosses spine `s0`), and each iteration admits and releases the next of 64 other random
//! flows, so adding one flow moves the bursts of most of the network.

#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, Criterion};
use rtlan_calculus::analysis::{analyze, Flow, Topology};
use rtlan_calculus::booking::Booking;
use rtlan_calculus::netfile::FlowSpec;
use rtlan_calculus::Q;

#[allow(dead_code)]
mod nets;

use nets::{lcg, leaf_spine, HOSTS_PER_LEAF, LEAVES};

/// The leaf–spine network of `nets::leaf_spine_flows`.
fn network(n: usize) -> (Topology, Vec<Flow>) {
    nets::leaf_spine_flows(n)
}

/// `rtlan bench bwm`'s network: the same leaf–spine topology with 64 MiB buffers, `n` flows
/// between random host pairs drawn by the same generator (100 kbit/s, M = 1514 B, b = 3028 B,
/// host delay 80 µs), each inter-leaf flow over `s0`; then `extra` more flows of the same kind.
fn bwm_network(n: usize, extra: usize) -> (Topology, Vec<Flow>, Vec<Flow>) {
    let f = leaf_spine(64);
    let mut next = lcg();
    let mut specs = Vec::new();
    while specs.len() < n + extra {
        let (a, ha) = (next(LEAVES), next(HOSTS_PER_LEAF));
        let (b, hb) = (next(LEAVES), next(HOSTS_PER_LEAF));
        if (a, ha) == (b, hb) {
            continue;
        }
        let (src, dst) = (format!("h{a}x{ha}"), format!("h{b}x{hb}"));
        let path = if a == b {
            vec![src, format!("l{a}"), dst]
        } else {
            vec![src, format!("l{a}"), "s0".into(), format!("l{b}"), dst]
        };
        specs.push(FlowSpec {
            name: format!("f{}", specs.len()),
            path,
            rate: Q::int(100_000),
            max_packet: Q::bytes(1514),
            burst: Q::bytes(3028),
            host_delay: Q::micros(80),
            deadline: None,
        });
    }
    let topo = Topology::from_netfile(&f);
    let mut flows: Vec<Flow> = specs
        .iter()
        .map(|x| topo.resolve(x).expect("generated paths are valid"))
        .collect();
    let probes = flows.split_off(n);
    (topo, flows, probes)
}

fn bench(c: &mut Criterion) {
    let (topo, flows) = network(10_001);
    let mut booking = Booking::new(topo);
    let (last, rest) = flows.split_last().expect("non-empty");
    for f in rest {
        booking
            .try_admit(f.clone())
            .expect("no overflow")
            .expect("admitted");
    }
    let mut g = c.benchmark_group("issue5");
    g.sample_size(20);
    g.bench_function("admit_one_into_10k", |b| {
        b.iter(|| {
            let v = booking
                .try_admit(last.clone())
                .expect("no overflow")
                .expect("admitted");
            booking.release(v.id).expect("booked");
        })
    });
    let (topo, flows, probes) = bwm_network(10_000, 64);
    let mut booking = Booking::new(topo);
    match booking.try_admit_all(flows).expect("no overflow") {
        Ok(_) => {}
        Err(r) => panic!("the booked flows fit: {r}"),
    }
    let mut i = 0;
    g.bench_function("admit_random_into_10k", |b| {
        b.iter(|| {
            let v = booking
                .try_admit(probes[i % probes.len()].clone())
                .expect("no overflow")
                .expect("admitted");
            booking.release(v.id).expect("booked");
            i += 1;
        })
    });
    let (topo1k, flows1k) = network(1_000);
    g.bench_function("analyze_1k_flows_100_switches", |b| {
        b.iter(|| analyze(&topo1k, &flows1k).expect("no overflow"))
    });
    // The 1,000-flow network booked, then each iteration admits and releases the next of the
    // 64 flows drawn after them (different leaves and spines each time).
    let (topo1k, mut flows1k) = network(1_064);
    let probes = flows1k.split_off(flows1k.len() - 64);
    let mut booking = Booking::new(topo1k);
    match booking.try_admit_all(flows1k).expect("no overflow") {
        Ok(_) => {}
        Err(r) => panic!("the booked flows fit: {r}"),
    }
    let mut i = 0;
    g.bench_function("admit_random_into_1k_100_switches", |b| {
        b.iter(|| {
            let v = booking
                .try_admit(probes[i % probes.len()].clone())
                .expect("no overflow")
                .expect("admitted");
            booking.release(v.id).expect("booked");
            i += 1;
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
