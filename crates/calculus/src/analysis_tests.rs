//! Tests for [`crate::analysis`] and [`crate::booking`]: Table 4 of seed 004 from the shipped
//! experiment files, multi-hop propagation, violations, and incremental = full (proptest).

use proptest::prelude::*;

use crate::analysis::{analyze, analyze_file, Flow, Report, Topology, Violation};
use crate::booking::Booking;
use crate::loser::{self, Port, Tspec};
use crate::netfile::{parse, FlowSpec, LinkSpec, NetFile, SwitchSpec};
use crate::rational::Q;

const TS10MS: &str = include_str!("../../../experiments/loser/table4-ts10ms.toml");
const TS1MS: &str = include_str!("../../../experiments/loser/table4-ts1ms.toml");
const TS100US: &str = include_str!("../../../experiments/loser/table4-ts100us.toml");

fn within(ours: f64, paper: f64, tol: f64) -> bool {
    (ours - paper).abs() / paper <= tol
}

#[test]
fn table4_reproduced_within_2_percent() {
    // Seed 004 Table 4: buffer bound (KByte = 1024), t_max (µs), t_est (µs).
    for (text, kb, tmax, test) in [
        (TS10MS, 111.8, 9357.0, 9731.0),
        (TS1MS, 15.7, 1380.0, 1345.0),
        (TS100US, 6.1, 582.0, 506.0),
    ] {
        let r = analyze_file(&parse(text).unwrap()).unwrap();
        assert!(r.admitted(), "{:?}", r.violations);
        assert_eq!(r.ports.len(), 1);
        let p = &r.ports[0];
        assert_eq!((p.switch.as_str(), p.to.as_str()), ("s1", "B"));
        let buf = p.backlog_bound.unwrap().to_f64() / 8.0 / 1024.0;
        let est = p.delay_estimate.unwrap().to_f64() * 1e6;
        let a = r.flows.iter().find(|f| f.name == "A-B").unwrap();
        let t = a.delay_bound.unwrap().to_f64() * 1e6;
        assert!(within(buf, kb, 0.02), "buffer {buf} vs {kb}");
        assert!(within(t, tmax, 0.02), "t_max {t} vs {tmax}");
        assert!(within(est, test, 0.02), "t_est {est} vs {test}");
    }
}

#[test]
fn single_port_equals_loser_closed_forms() {
    // Without the test flow, the port is exactly seed 004's setting (peak = C).
    let mut file = parse(TS1MS).unwrap();
    file.flows.retain(|f| f.name != "A-B");
    let r = analyze_file(&file).unwrap();
    let port = Port {
        rate: Q::int(98_600_000),
        t_mux: Q::micros(45),
    };
    let tspecs: Vec<Tspec> = file
        .flows
        .iter()
        .map(|f| Tspec {
            max_packet: f.max_packet,
            rate: f.rate,
            bucket: f.burst,
        })
        .collect();
    let p = &r.ports[0];
    // Bounds are at most 1 ps (delay) / one grid step of g (backlog) above the exact values.
    let d = loser::delay_bound(&port, &tspecs).unwrap();
    let got = p.delay_bound.unwrap();
    assert!(got >= d && got.sub(d).unwrap() <= Q::new(1, 1_000_000_000_000).unwrap());
    let b = loser::backlog_bound(&port, &tspecs).unwrap();
    let got = p.backlog_bound.unwrap();
    assert!(got >= b && got.sub(b).unwrap() <= Q::new(1, 10_000).unwrap());
    assert_eq!(
        p.delay_estimate,
        Some(loser::delay_estimate(&port, &tspecs).unwrap())
    );
    assert_eq!(
        p.backlog_estimate,
        Some(loser::backlog_estimate(&port, &tspecs).unwrap())
    );
}

const TANDEM: &str = r#"
[[switch]]
name = "s1"
t_mux = "10us"
buffer = "1MiB"
[[switch]]
name = "s2"
t_mux = "10us"
buffer = "1MiB"
[[link]]
ends = ["a", "s1"]
rate = "100mbit"
[[link]]
ends = ["s1", "s2"]
rate = "100mbit"
[[link]]
ends = ["s2", "b"]
rate = "100mbit"
[[flow]]
name = "f"
path = ["a", "s1", "s2", "b"]
rate = "10mbit"
max_packet = 1000
burst = "11000B"
host_delay = "5us"
"#;

#[test]
fn multi_hop_burst_grows_by_rate_times_delay() {
    let r = analyze_file(&parse(TANDEM).unwrap()).unwrap();
    let (p1, p2) = (&r.ports[0], &r.ports[1]);
    assert_eq!((p1.switch.as_str(), p2.switch.as_str()), ("s1", "s2"));
    // Hop 1: g = 80000 bit / 90 Mbit/s; d1 = b/C + t_mux − g·(1 − r/C).
    let d1 = p1.delay_bound.unwrap();
    let exact = Q::new(88_000, 100_000_000)
        .unwrap()
        .add(Q::micros(10))
        .unwrap()
        .sub(
            Q::new(80_000, 90_000_000)
                .unwrap()
                .mul(Q::new(9, 10).unwrap())
                .unwrap(),
        )
        .unwrap();
    assert!(d1 >= exact && d1.sub(exact).unwrap() < Q::new(1, 100_000_000_000).unwrap());
    // Hop 2 sees b + r·d1: its estimate (7) is (b + r·d1)/C + t_mux.
    let b2 = Q::bytes(11_000)
        .add(Q::int(10_000_000).mul(d1).unwrap())
        .unwrap();
    let est2 = b2
        .div(Q::int(100_000_000))
        .unwrap()
        .add(Q::micros(10))
        .unwrap();
    assert_eq!(p2.delay_estimate, Some(est2));
    let total = d1
        .add(p2.delay_bound.unwrap())
        .unwrap()
        .add(Q::micros(5))
        .unwrap();
    assert_eq!(r.flows[0].delay_bound, Some(total));
}

#[test]
fn violations_are_named() {
    let over = TS10MS.replace("rate = \"40mbit\"", "rate = \"70mbit\"");
    let r = analyze_file(&parse(&over).unwrap()).unwrap();
    assert!(!r.admitted());
    assert!(matches!(
        r.violations[0],
        Violation::RateOverCapacity { .. }
    ));
    assert!(r.flows.iter().all(|f| f.delay_bound.is_none()));
    let small = TS10MS.replace("128KiB", "100KiB");
    let r = analyze_file(&parse(&small).unwrap()).unwrap();
    assert_eq!(r.violations.len(), 1);
    assert!(r.violations[0]
        .to_string()
        .contains("buffer over switch memory at s1"));
    let r = analyze_file(&parse(TS1MS).unwrap()).unwrap();
    assert!(r.admitted());
}

// ---- incremental = full ----

fn random_net(
    switches: usize,
    flows: &[(usize, usize, usize, u8, u8)],
    buffer_kib: i64,
) -> (Topology, Vec<Flow>) {
    // Switches in a full mesh, one host per switch; a flow goes host(a) → a → … → b → host(b)
    // through at most one intermediate switch.
    let mut f = NetFile::default();
    for s in 0..switches {
        f.switches.push(SwitchSpec {
            name: format!("s{s}"),
            t_mux: Q::micros(5 + s as i64 * 7),
            buffer: Q::bytes(buffer_kib * 1024),
        });
        f.links.push(LinkSpec {
            ends: [format!("h{s}"), format!("s{s}")],
            rate: Q::int(100_000_000),
            effective_rate: Q::int(100_000_000),
        });
        for t in 0..s {
            let rate = Q::int(100_000_000 + 50_000_000 * ((s + t) % 2) as i64);
            f.links.push(LinkSpec {
                ends: [format!("s{t}"), format!("s{s}")],
                rate,
                effective_rate: rate,
            });
        }
    }
    for (i, &(a, b, mid, rate, ts)) in flows.iter().enumerate() {
        let (a, b, mid) = (a % switches, b % switches, mid % switches);
        let mut path = vec![format!("h{a}"), format!("s{a}")];
        if mid != a && mid != b && a != b {
            path.push(format!("s{mid}"));
        }
        if b != a {
            path.push(format!("s{b}"));
        }
        path.push(format!("h{b}x{i}"));
        f.links.push(LinkSpec {
            ends: [format!("s{b}"), format!("h{b}x{i}")],
            rate: Q::int(100_000_000),
            effective_rate: Q::int(100_000_000),
        });
        let r = Q::int(1_000_000 * (1 + rate as i64 % 30));
        f.flows.push(FlowSpec {
            name: format!("f{i}"),
            path,
            rate: r,
            max_packet: Q::bytes(1514),
            burst: r
                .mul(Q::micros(100 * (1 + ts as i64 % 50)))
                .unwrap()
                .add(Q::bytes(1514))
                .unwrap(),
            host_delay: Q::micros(80),
            deadline: (ts % 3 == 0).then(|| Q::micros(2_000)),
        });
    }
    let topo = Topology::from_netfile(&f);
    let fl = f.flows.iter().map(|x| topo.resolve(x).unwrap()).collect();
    (topo, fl)
}

fn same_bounds(a: &Report, b: &Report) -> bool {
    a.ports == b.ports && a.flows == b.flows
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn incremental_equals_full(
        switches in 2usize..6,
        flows in prop::collection::vec((0usize..6, 0usize..6, 0usize..6, any::<u8>(), any::<u8>()), 1..14),
        buffer_kib in 16i64..400,
        release in prop::collection::vec(any::<prop::sample::Index>(), 0..6),
    ) {
        let (topo, flows) = random_net(switches, &flows, buffer_kib);
        let mut booking = Booking::new(topo.clone());
        let mut booked: Vec<(u64, Flow)> = Vec::new();
        for f in &flows {
            let mut with: Vec<Flow> = booked.iter().map(|(_, f)| f.clone()).collect();
            with.push(f.clone());
            let full = analyze(&topo, &with).unwrap();
            match booking.try_admit(f.clone()).unwrap() {
                Ok(v) => {
                    prop_assert!(full.admitted(), "booking admitted, full says {:?}", full.violations);
                    prop_assert_eq!(Some(v.delay_bound), full.flows.last().unwrap().delay_bound);
                    booked.push((v.id, f.clone()));
                }
                Err(refusal) => {
                    prop_assert!(!full.admitted(), "booking refused {:?}", refusal.violations);
                }
            }
            let now: Vec<Flow> = booked.iter().map(|(_, f)| f.clone()).collect();
            prop_assert!(same_bounds(&booking.report().unwrap(), &analyze(&topo, &now).unwrap()));
        }
        for idx in release {
            if booked.is_empty() { break; }
            let (id, _) = booked.remove(idx.index(booked.len()));
            booking.release(id).unwrap();
            let now: Vec<Flow> = booked.iter().map(|(_, f)| f.clone()).collect();
            prop_assert!(same_bounds(&booking.report().unwrap(), &analyze(&topo, &now).unwrap()));
        }
        prop_assert!(booking.release(u64::MAX).is_err());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// Booking a set of flows at once agrees with a full analysis (admitted exactly when the
    /// full analysis admits the whole set, with the same bounds), and a refusal leaves the
    /// booking as it was.
    #[test]
    fn bulk_admission_equals_full(
        switches in 2usize..6,
        flows in prop::collection::vec((0usize..6, 0usize..6, 0usize..6, any::<u8>(), any::<u8>()), 1..14),
        buffer_kib in 16i64..400,
        first in 0usize..4,
    ) {
        let (topo, flows) = random_net(switches, &flows, buffer_kib);
        let mut booking = Booking::new(topo.clone());
        let mut booked: Vec<Flow> = Vec::new();
        // Some flows one by one first, so the bulk meets an existing state.
        for f in flows.iter().take(first) {
            if booking.try_admit(f.clone()).unwrap().is_ok() {
                booked.push(f.clone());
            }
        }
        let before = booking.report().unwrap();
        let rest: Vec<Flow> = flows.iter().skip(first).cloned().collect();
        let mut all = booked.clone();
        all.extend(rest.iter().cloned());
        let full = analyze(&topo, &all).unwrap();
        match booking.try_admit_all(rest.clone()).unwrap() {
            Ok(verdicts) => {
                prop_assert!(full.admitted(), "bulk admitted, full says {:?}", full.violations);
                prop_assert_eq!(verdicts.len(), rest.len());
                for (v, fr) in verdicts.iter().zip(&full.flows[booked.len()..]) {
                    prop_assert_eq!(Some(v.delay_bound), fr.delay_bound);
                }
                prop_assert!(same_bounds(&booking.report().unwrap(), &full));
            }
            Err(refusal) => {
                prop_assert!(!full.admitted(), "bulk refused {:?}", refusal.violations);
                prop_assert!(same_bounds(&booking.report().unwrap(), &before));
            }
        }
    }
}
