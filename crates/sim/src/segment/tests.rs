//! The segment in the simulator: a RETHER stream on a flooded bus keeps its deadline, the same
//! stream on plain CSMA/CD misses (RETHER §1 Table 1, §2); runs are reproducible.

use std::time::Duration;

use super::*;

/// 6 stations at 10 Mbit/s: station 0 sends 6,000 bytes every 33.33 ms to station 3 (about an
/// MPEG-I stream), stations 1 and 2 flood each other from 100 ms on (after the switch to
/// RETHER: on a segment already saturated, 802.3's capture effect can hold the SWITCH in the
/// initiator's NIC for longer than its four 20 ms attempts), a light probe 4 → 5.
fn segment(reserve: bool, seed: u64) -> SegmentConfig {
    let mut c = SegmentConfig::new(6, 10_000_000);
    c.seed = seed;
    c.warmup = Duration::from_millis(500);
    c.window = Duration::from_secs(3);
    let trt = c.trt;
    c.flows = vec![
        FlowSpec {
            from: 0,
            to: 3,
            source: Source::Cbr {
                period: trt,
                bytes: 6_000,
            },
            // One frame more than the stream needs, so that what waited for the admission drains.
            reserve: reserve.then_some(7_500),
            deadline: Some(trt * 2),
            start: Duration::from_millis(10),
        },
        FlowSpec {
            from: 1,
            to: 2,
            source: Source::Flood {
                bytes: 1500,
                backlog: 8,
            },
            reserve: None,
            deadline: None,
            start: Duration::from_millis(100),
        },
        FlowSpec {
            from: 2,
            to: 1,
            source: Source::Flood {
                bytes: 1000,
                backlog: 8,
            },
            reserve: None,
            deadline: None,
            start: Duration::from_millis(100),
        },
        FlowSpec {
            from: 4,
            to: 5,
            source: Source::Poisson {
                mean_interval: Duration::from_millis(20),
                bytes: 100,
            },
            reserve: None,
            deadline: None,
            start: Duration::ZERO,
        },
    ];
    c
}

#[test]
fn a_reserved_stream_on_a_flooded_bus_misses_no_deadline_where_csma_misses() {
    let rether = run(&segment(true, 3)).unwrap();
    let csma = run(&segment(false, 3)).unwrap();
    let (r, c) = (&rether.flows[0], &csma.flows[0]);
    eprintln!("RETHER: {r:?}\nCSMA: {c:?}");
    assert_eq!(r.admitted, Some(true));
    assert!(r.units >= 89, "{} units", r.units);
    assert_eq!(r.delivered, r.units, "every unit arrives");
    assert_eq!(r.deadline_misses, 0, "RETHER keeps the deadline");
    // Within one rotation plus its own visit: 33.3 ms + 5 frames at 10 Mbit/s.
    assert!(r.delay.max_us < 33_400.0 + 6_000.0, "{:?}", r.delay);
    // The floods keep the segment busy and still get most of what is left.
    assert!(rether.flows[1].bytes_delivered + rether.flows[2].bytes_delivered > 2_000_000);
    assert_eq!(rether.deaths, 0);
    // On CSMA/CD the same stream waits behind the floods' contention.
    assert!(c.deadline_misses > 0, "CSMA missed nothing: {:?}", c.delay);
    assert!(csma.bus.collisions > 100, "{}", csma.bus.collisions);
    assert!(rether.switch_us.is_some());
    // NRT visits were seen at every station once in RETHER mode.
    assert!(
        rether.visits.iter().all(|v| v.count > 10),
        "{:?}",
        rether.visits
    );
}

#[test]
fn the_same_seed_gives_the_same_run_and_another_seed_another() {
    let mut c = segment(false, 5);
    c.window = Duration::from_millis(500);
    let a = run(&c).unwrap();
    let b = run(&c).unwrap();
    assert_eq!(a.flows[0].delays_ns, b.flows[0].delays_ns);
    assert_eq!(a.bus, b.bus);
    c.seed = 6;
    let d = run(&c).unwrap();
    assert_ne!(a.bus, d.bus, "the backoff depends on the seed");
}

#[test]
fn host_costs_stretch_the_token_pass_to_the_papers_table_2() {
    // A token of 72 bytes (16 header + 28 fixed + 5 stations) between two i486 hosts on
    // 10 Mbit/s: about Table 2's 247 µs.
    let pass = HostTiming::PAPER_ISA.token_pass(14 + 16 + 28 + 10 + 4, 10_000_000);
    assert!(
        (Duration::from_micros(200)..Duration::from_micros(260)).contains(&pass),
        "{pass:?}"
    );
    assert_eq!(
        HostTiming::IDEAL.token_pass(72, 10_000_000),
        rtlan_wire::tx_time(72, 10_000_000)
    );
}

#[test]
fn a_bad_configuration_is_refused() {
    let mut c = SegmentConfig::new(1, 10_000_000);
    assert!(run(&c).is_err());
    c.stations = 3;
    c.flows.push(FlowSpec {
        from: 0,
        to: 0,
        source: Source::Cbr {
            period: Duration::from_millis(1),
            bytes: 10,
        },
        reserve: None,
        deadline: None,
        start: Duration::ZERO,
    });
    assert!(run(&c).is_err());
}
