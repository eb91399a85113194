//! The benchmark networks (`benches/nets/mod.rs`, not a bench target of its own), shared by `benches/booking.rs`, `benches/tfa.rs` and
//! `examples/method_wins.rs` (each includes this file with `#[path]`), so that the figures of
//! docs/benchmarks.md and docs/calculus.md all come from the same networks.

use rtlan_calculus::analysis::{Flow, Topology};
use rtlan_calculus::netfile::{FlowSpec, LinkSpec, NetFile, SwitchSpec};
use rtlan_calculus::Q;

/// Leaf switches of the leaf–spine network.
pub(crate) const LEAVES: usize = 90;
/// Spine switches.
pub(crate) const SPINES: usize = 10;
/// Hosts on each leaf.
pub(crate) const HOSTS_PER_LEAF: usize = 8;

/// A deterministic generator (an LCG) of indices below `m`; `rtlan bench bwm` and
/// `tools/dnc/gen-network` draw the same sequence.
pub(crate) fn lcg() -> impl FnMut(usize) -> usize {
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    move |m: usize| {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) as usize % m
    }
}

/// A 1 Gbit/s link.
pub(crate) fn gbit_link(a: String, b: String) -> LinkSpec {
    LinkSpec {
        ends: [a, b],
        rate: Q::int(1_000_000_000),
        effective_rate: Q::int(1_000_000_000),
    }
}

/// A switch with t_mux 10 µs and `buffer_mib` MiB of buffer.
pub(crate) fn switch(name: String, buffer_mib: i64) -> SwitchSpec {
    SwitchSpec {
        name,
        t_mux: Q::micros(10),
        buffer: Q::bytes(buffer_mib << 20),
    }
}

/// The file's topology and its flows resolved on it.
pub(crate) fn resolve(f: &NetFile) -> (Topology, Vec<Flow>) {
    let topo = Topology::from_netfile(f);
    let flows = f
        .flows
        .iter()
        .map(|x| topo.resolve(x).expect("generated paths are valid"))
        .collect();
    (topo, flows)
}

/// 90 leaf and 10 spine switches (1 Gbit/s, t_mux 10 µs, `buffer_mib` MiB each), 8 hosts per
/// leaf at 1 Gbit/s, no flows.
pub(crate) fn leaf_spine(buffer_mib: i64) -> NetFile {
    let mut f = NetFile::default();
    for l in 0..LEAVES {
        f.switches.push(switch(format!("l{l}"), buffer_mib));
        for h in 0..HOSTS_PER_LEAF {
            f.links
                .push(gbit_link(format!("h{l}x{h}"), format!("l{l}")));
        }
        for s in 0..SPINES {
            f.links.push(gbit_link(format!("l{l}"), format!("s{s}")));
        }
    }
    for s in 0..SPINES {
        f.switches.push(switch(format!("s{s}"), buffer_mib));
    }
    f
}

/// The leaf–spine network with 16 MiB buffers and up to `n` flows of 100 kbit/s (M = 1514 B,
/// b = 1639 B, host delay 80 µs) between random host pairs: host → leaf → a random spine → leaf
/// → host, or within one leaf (pairs of the same host are skipped).
pub(crate) fn leaf_spine_flows(n: usize) -> (Topology, Vec<Flow>) {
    let mut f = leaf_spine(16);
    let mut next = lcg();
    for i in 0..n {
        let (a, b) = (next(LEAVES), next(LEAVES));
        let (ha, hb) = (next(HOSTS_PER_LEAF), next(HOSTS_PER_LEAF));
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
                format!("s{}", next(SPINES)),
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

/// 100 switches in a line (1 Gbit/s, t_mux 10 µs, 16 MiB), 1,000 flows of 0.5 Mbit/s
/// (M = 1514 B, b = M + 5,000 bits), each from its own host over 2–8 consecutive switches to its
/// own host.
pub(crate) fn line() -> (Topology, Vec<Flow>) {
    let mut f = NetFile::default();
    for k in 0..100 {
        f.switches.push(switch(format!("s{k}"), 16));
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
