//! The router's look-up structures (QSR paper §4.1, §4.2, §5) at the sizes of docs/router.md:
//!
//! * `lpm/*`: longest prefix match over 10⁵ IPv4 routes, one group member per candidate
//!   structure — `prefix_trie` (through [`Fib`], the one we use), `ip_network_table-deps-treebitmap`
//!   and `iptrie` (its mutable radix trie and its read-only level-compressed trie);
//! * `rsvp_5tuple/*`: the RSVP classifier at 10⁵ flows — exact hit, hit through the sender's
//!   wildcard port, and miss (both look-ups fail);
//! * `psip_cidr/*`: the PSIP classifier at 10³ pipes, hit and miss;
//! * `decide/*`: the whole ingress order (traps → RSVP → PSIP → LPM) on all three tables.
//!
//! Each iteration looks up 4,096 precomputed keys, so criterion's throughput is look-ups per
//! second. Before the timed runs the benchmark prints each structure's memory, counted by this
//! binary's global allocator (the live heap bytes a structure adds while it is built, plus its
//! inline size), its build time, and what the crates report about themselves.

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::HashSet;
use std::hint::black_box;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant as WallClock;

use criterion::{criterion_main, Criterion, Throughput};
use iptrie::IpPrefix;
use rtlan_core::router::{
    CidrFilter, Decision, Fib, FlowKey, Ipv4Prefix, NextHop, PacketFields, PsipClassifier, Route,
    RouteSource, RsvpClassifier, Tables,
};
use rtlan_core::PortId;

/// Counts the bytes currently allocated through it, then hands every call to the system
/// allocator.
struct Counting;

static LIVE_BYTES: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so `System`'s
// guarantees are ours; the counter is only arithmetic on the side.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract, which is `System`'s.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            LIVE_BYTES.fetch_add(layout.size(), Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            LIVE_BYTES.fetch_add(layout.size(), Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` (through us) with `layout`, as the caller
        // guarantees.
        unsafe { System.dealloc(ptr, layout) };
        LIVE_BYTES.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller upholds `GlobalAlloc::realloc`'s contract, which is `System`'s.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            LIVE_BYTES.fetch_sub(layout.size(), Ordering::Relaxed);
            LIVE_BYTES.fetch_add(new_size, Ordering::Relaxed);
        }
        new
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Builds a structure and returns it with the bytes it holds (heap bytes still live after the
/// build, plus its own size) and the build time in milliseconds. Single-threaded at this point,
/// so nothing else allocates meanwhile.
fn measured<T>(build: impl FnOnce() -> T) -> (T, usize, f64) {
    let before = LIVE_BYTES.load(Ordering::Relaxed);
    let start = WallClock::now();
    let value = build();
    let ms = start.elapsed().as_secs_f64() * 1e3;
    let heap = LIVE_BYTES.load(Ordering::Relaxed).saturating_sub(before);
    (value, heap + std::mem::size_of::<T>(), ms)
}

const ROUTES: usize = 100_000;
const FLOWS: u32 = 100_000;
const PIPES: usize = 1_000;
const PROBES: usize = 4_096;
const INTERLEAVED_ROUNDS: usize = 30;

/// SplitMix64: a seeded, dependency-free source of reproducible tables.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn u32(&mut self) -> u32 {
        (self.next() >> 32) as u32
    }

    /// Uniform in `lo ..= hi`.
    fn range(&mut self, lo: u32, hi: u32) -> u32 {
        lo + (self.next() % u64::from(hi - lo + 1)) as u32
    }
}

/// A prefix length drawn from a mix like a full Internet table's (mostly /24) with host routes
/// added: 60 % /24, 15 % /22–/23, 10 % /16–/21, 10 % /32, 5 % /8–/15.
fn route_len(rng: &mut Rng) -> u8 {
    let len = match rng.range(0, 99) {
        0..=59 => 24,
        60..=74 => rng.range(22, 23),
        75..=84 => rng.range(16, 21),
        85..=94 => 32,
        _ => rng.range(8, 15),
    };
    len as u8 // at most 32
}

fn route(i: u32) -> Route {
    Route {
        next_hop: NextHop {
            gateway: Some(Ipv4Addr::from_bits(0xc000_0200 | (i % 254 + 1))),
            port: PortId((i % 48) as u16),
        },
        source: RouteSource::Kernel,
        metric: i % 16,
    }
}

/// `ROUTES` distinct prefixes (a default route among them) with their routes.
fn routes() -> Vec<(Ipv4Prefix, Route)> {
    let mut rng = Rng(1);
    let mut seen = HashSet::new();
    let mut out = vec![(Ipv4Prefix::DEFAULT, route(0))];
    seen.insert(Ipv4Prefix::DEFAULT);
    while out.len() < ROUTES {
        let len = route_len(&mut rng);
        let prefix = Ipv4Prefix::new(Ipv4Addr::from_bits(rng.u32()), len).expect("len ≤ 32");
        if seen.insert(prefix) {
            out.push((prefix, route(out.len() as u32)));
        }
    }
    out
}

/// An address inside `prefix` (random host bits).
fn inside(rng: &mut Rng, prefix: Ipv4Prefix) -> Ipv4Addr {
    let host_bits = 32 - u32::from(prefix.prefix_len());
    let host = if host_bits == 0 {
        0
    } else {
        rng.u32() >> (32 - host_bits)
    };
    Ipv4Addr::from_bits(prefix.network().to_bits() | host)
}

/// Destinations to look up: 90 % inside a random route's prefix, 10 % uniformly random.
fn destinations(routes: &[(Ipv4Prefix, Route)]) -> Vec<Ipv4Addr> {
    let mut rng = Rng(2);
    (0..PROBES)
        .map(|_| {
            if rng.range(0, 9) == 0 {
                Ipv4Addr::from_bits(rng.u32())
            } else {
                let (prefix, _) = routes[rng.range(0, ROUTES as u32 - 1) as usize];
                inside(&mut rng, prefix)
            }
        })
        .collect()
}

fn iptrie_prefix(prefix: Ipv4Prefix) -> iptrie::Ipv4Prefix {
    iptrie::Ipv4Prefix::new(prefix.network(), prefix.prefix_len()).expect("a valid prefix")
}

fn report(name: &str, entries: usize, bytes: usize, build_ms: f64, note: &str) {
    println!(
        "memory {name:<28} {bytes:>11} B for {entries} entries = {:>6.1} B/entry, built in {build_ms:>7.1} ms{note}",
        bytes as f64 / entries as f64
    );
}

fn lpm(c: &mut Criterion) {
    let routes = routes();
    let dsts = destinations(&routes);

    let (fib, bytes, ms) = measured(|| {
        let mut fib = Fib::new();
        for (prefix, route) in &routes {
            fib.replace(*prefix, *route);
        }
        fib
    });
    report(
        "prefix-trie (Fib)",
        fib.len(),
        bytes,
        ms,
        &format!(" (its mem_size: {} B)", fib.mem_size()),
    );

    let (tbm, bytes, ms) = measured(|| {
        let mut t = ip_network_table_deps_treebitmap::IpLookupTable::<Ipv4Addr, Route>::new();
        for (prefix, route) in &routes {
            t.insert(prefix.network(), u32::from(prefix.prefix_len()), *route);
        }
        t
    });
    let (nodes, results) = tbm.mem_usage();
    report(
        "treebitmap",
        tbm.len(),
        bytes,
        ms,
        &format!(" (its mem_usage: {} B)", nodes + results),
    );

    let (radix, bytes, ms) = measured(|| {
        let mut t = iptrie::map::RTrieMap::<iptrie::Ipv4Prefix, Option<Route>>::with_root(None);
        for (prefix, route) in &routes {
            t.insert(iptrie_prefix(*prefix), Some(*route));
        }
        t
    });
    report("iptrie RTrieMap", routes.len(), bytes, ms, "");
    let (lc, bytes, ms) = measured(|| radix.clone().compress());
    report(
        "iptrie LCTrieMap",
        routes.len(),
        bytes,
        ms,
        " (read-only; build = clone + compress)",
    );

    // Every candidate must give the same answer before its speed means anything.
    for &dst in &dsts {
        let want = fib.lookup(dst).map(|(p, r)| (p, *r));
        let tbm_got = tbm
            .longest_match(dst)
            .map(|(a, len, r)| (Ipv4Prefix::new(a, len as u8).expect("len ≤ 32"), *r));
        assert_eq!(tbm_got, want, "treebitmap, {dst}");
        let (k, v) = radix.lookup(&dst);
        let radix_got = (*v).map(|r| (Ipv4Prefix::new(k.network(), k.len()).expect("≤ 32"), r));
        assert_eq!(radix_got, want, "iptrie RTrieMap, {dst}");
        let (k, v) = lc.lookup(&dst);
        let lc_got = (*v).map(|r| (Ipv4Prefix::new(k.network(), k.len()).expect("≤ 32"), r));
        assert_eq!(lc_got, want, "iptrie LCTrieMap, {dst}");
    }

    // The machine is shared, and criterion runs the candidates one after the other, so load
    // that comes and goes skews their comparison. Interleaved rounds, best of each, do not.
    let candidates: [(&str, &dyn Fn() -> usize); 4] = [
        ("prefix-trie", &|| {
            dsts.iter()
                .filter(|&&d| fib.next_hop(black_box(d)).is_some())
                .count()
        }),
        ("treebitmap", &|| {
            dsts.iter()
                .filter(|&&d| tbm.longest_match(black_box(d)).is_some())
                .count()
        }),
        ("iptrie radix", &|| {
            dsts.iter()
                .filter(|&&d| radix.lookup(black_box(&d)).1.is_some())
                .count()
        }),
        ("iptrie lc", &|| {
            dsts.iter()
                .filter(|&&d| lc.lookup(black_box(&d)).1.is_some())
                .count()
        }),
    ];
    let mut best = [f64::INFINITY; 4];
    for _round in 0..INTERLEAVED_ROUNDS {
        for (i, (_, run)) in candidates.iter().enumerate() {
            let start = WallClock::now();
            for _ in 0..20 {
                black_box(run());
            }
            let ns = start.elapsed().as_secs_f64() * 1e9 / (20 * PROBES) as f64;
            best[i] = best[i].min(ns);
        }
    }
    for ((name, _), ns) in candidates.iter().zip(best) {
        println!(
            "interleaved {name:<14} best of {INTERLEAVED_ROUNDS} rounds: {ns:>6.1} ns/lookup = {:>5.1} M lookups/s",
            1e3 / ns
        );
    }

    let mut g = c.benchmark_group("lpm");
    g.throughput(Throughput::Elements(PROBES as u64));
    g.bench_function("prefix_trie_100k", |b| {
        b.iter(|| {
            for &dst in &dsts {
                black_box(fib.next_hop(black_box(dst)));
            }
        })
    });
    g.bench_function("treebitmap_100k", |b| {
        b.iter(|| {
            for &dst in &dsts {
                black_box(
                    tbm.longest_match(black_box(dst))
                        .map(|(_, _, r)| r.next_hop),
                );
            }
        })
    });
    g.bench_function("iptrie_radix_100k", |b| {
        b.iter(|| {
            for &dst in &dsts {
                black_box(radix.lookup(black_box(&dst)).1.map(|r| r.next_hop));
            }
        })
    });
    g.bench_function("iptrie_lc_100k", |b| {
        b.iter(|| {
            for &dst in &dsts {
                black_box(lc.lookup(black_box(&dst)).1.map(|r| r.next_hop));
            }
        })
    });
    g.finish();
}

/// `FLOWS` reserved UDP flows: senders in 10.0.0.0/8 to 16 receivers; every 8th flow is a
/// wildcard-port filter (a sender whose port RSVP does not know).
fn flows() -> Vec<FlowKey> {
    (0..FLOWS)
        .map(|i| FlowKey {
            src: Ipv4Addr::from_bits(0x0a00_0000 | i),
            dst: Ipv4Addr::from_bits(0xc633_6400 | (i % 16)),
            protocol: 17,
            src_port: if i % 8 == 7 {
                0
            } else {
                5000 + (i % 1000) as u16
            },
            dst_port: 6000 + (i % 16) as u16,
        })
        .collect()
}

fn rsvp(c: &mut Criterion) {
    let flows = flows();
    let (classifier, bytes, ms) = measured(|| {
        let mut c = RsvpClassifier::new();
        for (i, key) in flows.iter().enumerate() {
            c.insert(*key, i as u32).expect("distinct keys");
        }
        c
    });
    report("rsvp 5-tuple (HashMap)", classifier.len(), bytes, ms, "");

    let mut rng = Rng(3);
    let pick = |rng: &mut Rng, wildcard: bool| loop {
        let key = flows[rng.range(0, FLOWS - 1) as usize];
        if key.is_src_port_wildcard() == wildcard {
            break key;
        }
    };
    let exact: Vec<FlowKey> = (0..PROBES).map(|_| pick(&mut rng, false)).collect();
    let wildcard: Vec<FlowKey> = (0..PROBES)
        .map(|_| FlowKey {
            src_port: rng.range(1024, 65535) as u16,
            ..pick(&mut rng, true)
        })
        .collect();
    // A port no exact filter has, from a sender with no wildcard: both look-ups miss.
    let miss: Vec<FlowKey> = exact
        .iter()
        .map(|k| FlowKey {
            src_port: 4000,
            ..*k
        })
        .collect();
    for k in &exact {
        assert!(classifier.classify(k).is_some());
    }
    for k in &wildcard {
        assert!(classifier.classify(k).is_some());
    }
    for k in &miss {
        assert!(classifier.classify(k).is_none());
    }

    let mut g = c.benchmark_group("rsvp_5tuple");
    g.throughput(Throughput::Elements(PROBES as u64));
    for (name, keys) in [
        ("hit_exact_100k", &exact),
        ("hit_wildcard_100k", &wildcard),
        ("miss_100k", &miss),
    ] {
        g.bench_function(name, |b| {
            b.iter(|| {
                for key in keys {
                    black_box(classifier.classify(black_box(key)));
                }
            })
        });
    }
    g.finish();
}

/// `PIPES` CIDR filters: destinations /16–/24 inside 10.0.0.0/8; half from any source, half
/// from a /16–/24 inside 172.16.0.0/12.
fn pipes() -> Vec<CidrFilter> {
    let mut rng = Rng(4);
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    while out.len() < PIPES {
        let dst = Ipv4Prefix::new(
            Ipv4Addr::from_bits(0x0a00_0000 | (rng.u32() >> 8)),
            rng.range(16, 24) as u8,
        )
        .expect("len ≤ 32");
        let src = if rng.range(0, 1) == 0 {
            Ipv4Prefix::DEFAULT
        } else {
            Ipv4Prefix::new(
                Ipv4Addr::from_bits(0xac10_0000 | (rng.u32() >> 12)),
                rng.range(16, 24) as u8,
            )
            .expect("len ≤ 32")
        };
        let filter = CidrFilter { src, dst };
        if seen.insert(filter) {
            out.push(filter);
        }
    }
    out
}

fn psip(c: &mut Criterion) {
    let filters = pipes();
    let (classifier, bytes, ms) = measured(|| {
        let mut c = PsipClassifier::new();
        for (i, f) in filters.iter().enumerate() {
            c.insert(*f, i as u32).expect("distinct filters");
        }
        c
    });
    report("psip cidr (trie of tries)", classifier.len(), bytes, ms, "");

    let mut rng = Rng(5);
    let hits: Vec<(Ipv4Addr, Ipv4Addr)> = (0..PROBES)
        .map(|_| {
            let f = filters[rng.range(0, PIPES as u32 - 1) as usize];
            (inside(&mut rng, f.src), inside(&mut rng, f.dst))
        })
        .collect();
    // Destinations outside 10.0.0.0/8: no filter's destination contains them.
    let misses: Vec<(Ipv4Addr, Ipv4Addr)> = (0..PROBES)
        .map(|_| {
            let dst = Ipv4Addr::from_bits(0x0b00_0000 | (rng.u32() >> 8));
            (Ipv4Addr::from_bits(rng.u32()), dst)
        })
        .collect();
    for &(s, d) in &hits {
        assert!(classifier.classify(s, d).is_some());
    }
    for &(s, d) in &misses {
        assert!(classifier.classify(s, d).is_none());
    }

    let mut g = c.benchmark_group("psip_cidr");
    g.throughput(Throughput::Elements(PROBES as u64));
    for (name, packets) in [("hit_1k", &hits), ("miss_1k", &misses)] {
        g.bench_function(name, |b| {
            b.iter(|| {
                for &(s, d) in packets {
                    black_box(classifier.classify(black_box(s), black_box(d)));
                }
            })
        });
    }
    g.finish();
}

fn decide(c: &mut Criterion) {
    let routes = routes();
    let flows = flows();
    let filters = pipes();
    let mut tables: Tables<u32, u32> = Tables::new();
    for (prefix, route) in &routes {
        tables.fib.replace(*prefix, *route);
    }
    for (i, key) in flows.iter().enumerate() {
        tables.rsvp.replace(*key, i as u32);
    }
    for (i, f) in filters.iter().enumerate() {
        tables.psip.replace(*f, i as u32);
    }

    // The mix: 5 % trapped (options), 30 % reserved, 15 % into a pipe, 50 % forwarded.
    let mut rng = Rng(6);
    let dsts = destinations(&routes);
    let plain = |src: Ipv4Addr, dst: Ipv4Addr| PacketFields {
        src,
        dst,
        protocol: 17,
        ports: Some((40_000, 53)),
        has_options: false,
        router_alert: false,
        to_router: false,
    };
    let mix: Vec<PacketFields> = (0..PROBES)
        .map(|i| match rng.range(0, 19) {
            0 => PacketFields {
                has_options: true,
                ..plain(Ipv4Addr::from_bits(rng.u32()), dsts[i])
            },
            1..=6 => {
                let k = flows[rng.range(0, FLOWS - 1) as usize];
                PacketFields {
                    ports: Some((k.src_port.max(1), k.dst_port)),
                    ..plain(k.src, k.dst)
                }
            }
            7..=9 => {
                let f = filters[rng.range(0, PIPES as u32 - 1) as usize];
                plain(inside(&mut rng, f.src), inside(&mut rng, f.dst))
            }
            _ => plain(Ipv4Addr::from_bits(0xc000_0201), dsts[i]),
        })
        .collect();
    // Best effort only: every stage is consulted and misses before the forwarding table (the
    // few destinations that fall into a pipe are left out).
    let forwarded: Vec<PacketFields> = dsts
        .iter()
        .map(|&dst| plain(Ipv4Addr::from_bits(0xc000_0201), dst))
        .filter(|p| {
            matches!(
                tables.decide(p),
                Decision::Forward(_) | Decision::Unreachable
            )
        })
        .collect();
    let mut counts = [0usize; 5];
    for p in &mix {
        counts[match tables.decide(p) {
            Decision::Trap(_) => 0,
            Decision::Reserved(_) => 1,
            Decision::Pipe(_) => 2,
            Decision::Forward(_) => 3,
            Decision::Unreachable => 4,
        }] += 1;
    }
    println!(
        "decide mix: {} trapped, {} reserved, {} piped, {} forwarded, {} unreachable",
        counts[0], counts[1], counts[2], counts[3], counts[4]
    );

    let mut g = c.benchmark_group("decide");
    for (name, packets) in [("mix", &mix), ("best_effort", &forwarded)] {
        g.throughput(Throughput::Elements(packets.len() as u64));
        g.bench_function(name, |b| {
            b.iter(|| {
                for p in packets {
                    black_box(tables.decide(black_box(p)));
                }
            })
        });
    }
    g.finish();
}

/// A two-port router (unpaced ports, so the scheduler hands each frame out at once) with
/// `extra` more routes in its table, B's MAC learnt from B's ARP request, and the 60-byte UDP
/// frame from A to B it will forward.
fn forwarding_router(extra: &[(Ipv4Prefix, Route)]) -> (rtlan_core::router::Router, Vec<u8>) {
    use rtlan_core::router::{Router, RouterConfig, RouterPort};
    use rtlan_core::{Instant, Medium, Node};
    use rtlan_wire::ethernet::Address;
    let port = |i: u8| RouterPort {
        name: format!("p{i}"),
        mac: Address([2, 0xaa, 0, 0, 0, i]),
        addr: Ipv4Addr::new(10, 200, i, 1),
        prefix_len: 24,
        medium: Medium::Unpaced,
    };
    let mut router =
        Router::new(RouterConfig::new(vec![port(0), port(1)]), Instant::ZERO).expect("valid");
    for &(prefix, route) in extra {
        router.install_route(
            prefix,
            Route {
                next_hop: NextHop {
                    gateway: Some(Ipv4Addr::new(10, 200, 1, 2)),
                    port: PortId(1),
                },
                ..route
            },
        );
    }
    let (mac_a, mac_b) = (Address([2, 0, 0, 0, 0, 1]), Address([2, 0, 0, 0, 0, 2]));
    let arp = rtlan_wire::arp::Repr {
        operation: rtlan_wire::arp::Operation::Request,
        source_hardware_addr: mac_b,
        source_protocol_addr: Ipv4Addr::new(10, 200, 1, 2),
        target_hardware_addr: Address([0; 6]),
        target_protocol_addr: Ipv4Addr::new(10, 200, 1, 1),
    };
    let mut buf = [0u8; 60];
    arp.emit_frame(mac_b, Address::BROADCAST, &mut buf)
        .expect("fits");
    router.handle_frame(Instant::ZERO, PortId(1), &buf);
    let mut out = [0u8; 1514];
    while router
        .poll_transmit(Instant::ZERO, PortId(1), &mut out)
        .is_some()
    {}
    // A minimum-size frame (60 bytes without FCS): 14 + 20 + 8 + 18 bytes of payload.
    let mut frame = vec![0u8; 60];
    frame[..6].copy_from_slice(&[2, 0xaa, 0, 0, 0, 0]);
    frame[6..12].copy_from_slice(&mac_a.0);
    frame[12..14].copy_from_slice(&[0x08, 0x00]);
    rtlan_wire::ipv4::Repr {
        src_addr: Ipv4Addr::new(10, 200, 0, 2),
        dst_addr: Ipv4Addr::new(10, 200, 1, 2),
        protocol: rtlan_wire::ipv4::Protocol::Udp,
        payload_len: 26,
        ttl: 64,
        dscp_ecn: 0,
    }
    .emit(&mut rtlan_wire::ipv4::Packet::new_unchecked(
        &mut frame[14..],
    ));
    (router, frame)
}

/// Default forwarding through the whole router node (QSR paper §4.1; §6.1 measures this loop):
/// `handle_frame` of a minimum-size UDP frame and `poll_transmit` of the forwarded one — parse,
/// checks, traps, classifiers, LPM, ARP look-up, TTL rewrite, queue and dequeue — with only the
/// connected routes, and with 10⁵ routes.
fn forward(c: &mut Criterion) {
    use rtlan_core::{Instant, Node};
    let mut group = c.benchmark_group("forward");
    const BATCH: u64 = 1024;
    group.throughput(Throughput::Elements(BATCH));
    let table = routes();
    for (name, extra) in [("connected", &table[..0]), ("routes_100k", &table[..])] {
        let (mut router, frame) = forwarding_router(extra);
        let mut out = [0u8; 1514];
        let mut now = Instant::ZERO;
        group.bench_function(name, |b| {
            b.iter(|| {
                for _ in 0..BATCH {
                    now += std::time::Duration::from_nanos(10);
                    router.handle_frame(now, PortId(0), black_box(&frame));
                    black_box(router.poll_transmit(now, PortId(1), &mut out));
                }
            })
        });
        assert!(
            router.stats().forwarded > 0,
            "the benchmark forwarded nothing"
        );
        assert_eq!(router.stats().held, 0, "{:?}", router.stats());
    }
    group.finish();
}

/// The benchmark group (in its own module because `criterion_group!` writes an undocumented
/// `pub fn`).
pub mod group {
    #![allow(missing_docs)]
    criterion::criterion_group!(
        benches,
        super::lpm,
        super::rsvp,
        super::psip,
        super::decide,
        super::forward
    );
}

criterion_main!(group::benches);
