//! Tests for [`crate::analysis`] and [`crate::booking`]: incremental = full (proptest). The tests
//! that read network files (Table 4 of Löser/Härtig from the shipped experiment files, multi-hop
//! propagation, violations) live in `rtlan-topology`'s `tests/analysis.rs`, next to the reader.

use proptest::prelude::*;

use crate::analysis::{analyze, Flow, Report, Topology};
use crate::booking::Booking;
use crate::netfile::{FlowSpec, LinkSpec, NetFile, SwitchSpec};
use crate::rational::Q;

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
