//! Unit tests of the bandwidth manager on virtual time, one per admission rule.

use std::time::Duration;

use super::*;

const C: u64 = 98_600_000;

fn star(buffer: u64) -> Topology {
    Topology {
        switches: vec![SwitchSpec {
            name: "s1".into(),
            t_mux_ns: 45_000,
            buffer_bytes: buffer,
        }],
        links: ["A", "B", "C1", "C2", "C3"]
            .iter()
            .map(|h| LinkSpec {
                ends: [h.to_string(), "s1".into()],
                rate_bps: C,
            })
            .collect(),
        hosts: Vec::new(),
        rtlan: Vec::new(),
    }
}

fn spec(src: &str, dst: &str, mbit: u64, ts_us: u64, delay_us: Option<u64>) -> ConnSpec {
    ConnSpec {
        src: src.into(),
        dst: dst.into(),
        rate_bps: mbit * 1_000_000,
        max_packet: 1514,
        shaping_interval_us: Some(ts_us),
        burst_bytes: None,
        delay_us,
        host_delay_us: None,
    }
}

fn req(m: &mut Manager, now: Instant, id: u64, op: Op) -> Response {
    m.handle_request(now, Request { id, op })
}

// A test helper: the reply is inspected, not propagated.
#[allow(clippy::result_large_err)]
fn admit(m: &mut Manager, s: ConnSpec) -> Result<(ConnId, u64), Reply> {
    admit_op(m, Op::Admit(s))
}

/// Sends `op` (an admission) and returns the connection and its bound, or the error reply.
// A test helper: the reply is inspected, not propagated.
#[allow(clippy::result_large_err)]
pub(super) fn admit_op(m: &mut Manager, op: Op) -> Result<(ConnId, u64), Reply> {
    let r = req(m, Instant::ZERO, 7, op);
    assert_eq!(r.id, Some(7));
    match r.reply {
        Reply::Admitted {
            conn,
            delay_bound_us,
            ..
        } => {
            assert!(r.ok);
            Ok((conn, delay_bound_us))
        }
        other => {
            assert!(!r.ok);
            Err(other)
        }
    }
}

pub(super) fn violations(reply: Reply) -> Vec<Violation> {
    match reply {
        Reply::Error {
            code: ErrorCode::Refused,
            violations,
            ..
        } => violations,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

fn manager() -> Manager {
    Manager::new(star(128 * 1024), ManagerConfig::default()).expect("valid topology")
}

#[test]
fn table4_bound_with_three_senders() {
    // Seed 004 Table 4, Ts = 10 ms: t_max = eq. (6) + 80 µs ≈ 9357 µs (docs/calculus.md).
    let mut m = manager();
    let (a, _) = admit(&mut m, spec("C1", "B", 40, 10_000, None)).expect("admitted");
    let (b, _) = admit(&mut m, spec("C2", "B", 32, 10_000, None)).expect("admitted");
    let (c, bound) = admit(&mut m, spec("C3", "B", 20, 10_000, None)).expect("admitted");
    assert!(
        (9_357.0 - bound as f64).abs() / 9_357.0 < 0.01,
        "bound {bound}"
    );
    // All three share the one port, so the earlier ones' bounds were raised to the same value.
    for id in [a, b, c] {
        assert_eq!(m.delay_bound_ns(id).map(port::ceil_us), Some(bound));
    }
    // Buffer booked on s1 = eq. (4) ≈ 111.8 KiB.
    let Reply::Topology { switches, .. } = req(&mut m, Instant::ZERO, 1, Op::Topology).reply else {
        panic!("topology reply")
    };
    let kib = switches[0].booked_bytes as f64 / 1024.0;
    assert!((kib - 111.8).abs() / 111.8 < 0.01, "{kib} KiB");
}

#[test]
fn refuses_new_connection_whose_own_bound_is_too_large() {
    let mut m = manager();
    admit(&mut m, spec("C1", "B", 40, 10_000, None)).expect("admitted");
    admit(&mut m, spec("C2", "B", 32, 10_000, None)).expect("admitted");
    let v = violations(admit(&mut m, spec("C3", "B", 20, 10_000, Some(9_000))).unwrap_err());
    assert!(
        matches!(v.as_slice(), [Violation::Delay { conn: None, delay_bound_us, delay_us: 9_000 }]
            if *delay_bound_us > 9_000),
        "{v:?}"
    );
    // Nothing was booked: a looser requirement is admitted with the same bound as before.
    let (_, bound) = admit(&mut m, spec("C3", "B", 20, 10_000, Some(9_500))).expect("admitted");
    assert!(bound > 9_000 && bound <= 9_500);
}

#[test]
fn protects_existing_connections_requirements() {
    let mut m = manager();
    let (first, alone) = admit(&mut m, spec("C1", "B", 40, 1_000, None)).expect("admitted");
    admit(&mut m, spec("C2", "B", 32, 1_000, None)).expect("admitted");
    let _ = first;
    let (tight, tight_bound) =
        admit(&mut m, spec("A", "B", 5, 1_000, Some(1_200))).expect("admitted");
    assert!(tight_bound > alone);
    // A large burst to B would push `tight` over its 1.2 ms.
    let v = violations(admit(&mut m, spec("C3", "B", 20, 10_000, None)).unwrap_err());
    assert!(
        v.iter()
            .any(|x| matches!(x, Violation::Delay { conn: Some(c), .. } if *c == tight)),
        "{v:?}"
    );
    // The same flow to another receiver shares no port with `tight`: admitted.
    admit(&mut m, spec("C3", "A", 20, 10_000, None)).expect("admitted");
    assert_eq!(
        m.delay_bound_ns(tight).map(port::ceil_us),
        Some(tight_bound)
    );
}

#[test]
fn refuses_rate_over_capacity_and_release_frees_it() {
    let mut m = manager();
    let (a, _) = admit(&mut m, spec("C1", "B", 60, 1_000, None)).expect("admitted");
    let v = violations(admit(&mut m, spec("C2", "B", 40, 1_000, None)).unwrap_err());
    assert_eq!(
        v,
        vec![Violation::Capacity {
            switch: "s1".into(),
            to: "B".into(),
            rate_bps: 100_000_000,
            capacity_bps: C,
        }]
    );
    let r = req(&mut m, Instant::ZERO, 3, Op::Release { conn: a });
    assert_eq!(r.reply, Reply::Released { conn: a });
    admit(&mut m, spec("C2", "B", 40, 1_000, None)).expect("admitted after release");
    let r = req(&mut m, Instant::ZERO, 4, Op::Release { conn: a });
    assert!(matches!(
        r.reply,
        Reply::Error {
            code: ErrorCode::UnknownConnection,
            ..
        }
    ));
}

#[test]
fn refuses_backlog_over_switch_buffer() {
    let mut m = Manager::new(star(100 * 1024), ManagerConfig::default()).expect("valid");
    // Table 4 at Ts = 10 ms needs 111.8 KiB for three flows; two need ≈ 69 KiB.
    admit(&mut m, spec("C1", "B", 40, 10_000, None)).expect("admitted");
    admit(&mut m, spec("C2", "B", 32, 10_000, None)).expect("admitted");
    let v = violations(admit(&mut m, spec("C3", "B", 20, 10_000, None)).unwrap_err());
    assert!(
        matches!(v.as_slice(), [Violation::Buffer { switch, backlog_bytes, buffer_bytes: 102_400 }]
            if switch == "s1" && *backlog_bytes > 111 * 1024),
        "{v:?}"
    );
    admit(&mut m, spec("C3", "B", 20, 1_000, None)).expect("smaller bucket fits");
}

#[test]
fn best_effort_books_every_port_and_expires() {
    let mut m = manager();
    let t0 = Instant::from_nanos(1_000_000_000);
    let r = req(
        &mut m,
        t0,
        1,
        Op::BestEffort(BestEffortSpec {
            src: "A".into(),
            rate_bps: 50_000_000,
            max_packet: 1514,
            shaping_interval_us: Some(1_000),
            burst_bytes: None,
        }),
    );
    assert_eq!(
        r.reply,
        Reply::BestEffort {
            conn: 1,
            expires_in_us: 300_000
        }
    );
    assert_eq!(m.poll_timeout(), Some(t0 + Duration::from_millis(300)));
    // Every port but the one towards A carries 50 Mbit/s now.
    let Reply::Topology { ports, .. } = req(&mut m, t0, 2, Op::Topology).reply else {
        panic!("topology")
    };
    for p in &ports {
        let want = if p.to == "A" { 0 } else { 50_000_000 };
        assert_eq!(p.booked_bps, want, "{p:?}");
    }
    let blocked = req(&mut m, t0, 3, Op::Admit(spec("C1", "C2", 60, 1_000, None)));
    assert!(!blocked.ok);
    m.handle_timeout(t0 + Duration::from_millis(299));
    assert_eq!(m.list().len(), 1);
    // Expired by the time of the next request: the admission goes through.
    let later = t0 + Duration::from_millis(300);
    let ok = req(
        &mut m,
        later,
        4,
        Op::Admit(spec("C1", "C2", 60, 1_000, None)),
    );
    assert!(ok.ok, "{ok:?}");
    assert_eq!(m.poll_timeout(), None);
    // Best-effort bookings are not persisted.
    assert_eq!(m.snapshot().bookings.len(), 1);
}

/// Standing reservations of 64 kbit/s between host A and every other host.
pub(super) fn standing_config() -> ManagerConfig {
    ManagerConfig {
        standing: Some(StandingConfig {
            manager_host: "A".into(),
            rate_bps: 64_000,
            max_packet: 1514,
            burst_bytes: 3028,
        }),
        ..ManagerConfig::default()
    }
}

#[test]
fn standing_reservations_are_booked_at_start() {
    let config = standing_config();
    let mut m = Manager::new(star(128 * 1024), config).expect("valid");
    let standing: Vec<ConnInfo> = m.list();
    assert_eq!(standing.len(), 8, "4 hosts, both directions");
    assert!(standing.iter().all(|c| c.kind == Kind::Standing));
    assert!(standing
        .iter()
        .any(|c| c.src == "B" && c.dst.as_deref() == Some("A")));
    // They occupy capacity: a flow that would fill the port to A completely is refused.
    let mut big = spec("B", "A", 0, 1_000, None);
    big.rate_bps = 98_400_000;
    let v = violations(admit(&mut m, big.clone()).unwrap_err());
    assert!(matches!(v[0], Violation::Capacity { .. }));
    big.dst = "C1".into();
    admit(&mut m, big).expect("no standing reservation on s1->C1 from B");
    let r = req(
        &mut m,
        Instant::ZERO,
        1,
        Op::Release {
            conn: standing[0].conn,
        },
    );
    assert!(matches!(
        r.reply,
        Reply::Error {
            code: ErrorCode::BadRequest,
            ..
        }
    ));
    assert_eq!(
        m.snapshot().bookings.len(),
        1,
        "standing reservations are not persisted"
    );
    // A manager host that is not in the topology is an error.
    let bad = ManagerConfig {
        standing: Some(StandingConfig {
            manager_host: "nowhere".into(),
            rate_bps: 64_000,
            max_packet: 1514,
            burst_bytes: 3028,
        }),
        ..ManagerConfig::default()
    };
    assert!(matches!(
        Manager::new(star(1024), bad),
        Err(BwmError::Standing { .. })
    ));
}

#[test]
fn restore_rebooks_and_keeps_ids() {
    let mut m = manager();
    let (a, _) = admit(&mut m, spec("C1", "B", 40, 10_000, None)).expect("admitted");
    let (b, bound) = admit(&mut m, spec("C2", "B", 32, 10_000, Some(20_000))).expect("ok");
    assert!(m.take_changed());
    assert!(!m.take_changed());
    let state = m.snapshot();
    let mut n = manager();
    assert!(n.restore(state.clone()).is_empty());
    assert_eq!(n.list(), m.list());
    assert_eq!(n.delay_bound_ns(b).map(port::ceil_us), Some(bound));
    let (c, _) = admit(&mut n, spec("C3", "B", 20, 10_000, None)).expect("admitted");
    assert!(c > a && c > b);
    // On a smaller switch the second booking no longer fits and is reported.
    let mut small = Manager::new(star(64 * 1024), ManagerConfig::default()).expect("valid");
    let refused = small.restore(state);
    assert_eq!(refused.len(), 1);
    assert_eq!(refused[0].0, b);
}

#[test]
fn disjoint_paths_do_not_interact() {
    // A - s1 - s2 - B, and C - s2 - D: the port s2->B is shared, s2->D is not.
    let link = |a: &str, b: &str| LinkSpec {
        ends: [a.into(), b.into()],
        rate_bps: C,
    };
    let sw = |n: &str| SwitchSpec {
        name: n.into(),
        t_mux_ns: 45_000,
        buffer_bytes: 1 << 20,
    };
    let topo = Topology {
        switches: vec![sw("s1"), sw("s2")],
        links: vec![
            link("A", "s1"),
            link("s1", "s2"),
            link("s2", "B"),
            link("C", "s2"),
            link("s2", "D"),
        ],
        hosts: Vec::new(),
        rtlan: Vec::new(),
    };
    let mut m = Manager::new(topo, ManagerConfig::default()).expect("valid");
    let r = req(
        &mut m,
        Instant::ZERO,
        1,
        Op::Admit(spec("A", "B", 10, 1_000, None)),
    );
    let Reply::Admitted {
        conn: ab,
        path,
        delay_bound_us,
        ..
    } = r.reply
    else {
        panic!("{r:?}")
    };
    assert_eq!(path, ["A", "s1", "s2", "B"]);
    admit(&mut m, spec("C", "D", 50, 10_000, None)).expect("admitted");
    assert_eq!(
        m.delay_bound_ns(ab).map(port::ceil_us),
        Some(delay_bound_us)
    );
    admit(&mut m, spec("C", "B", 50, 10_000, None)).expect("admitted");
    assert!(m.delay_bound_ns(ab).map(port::ceil_us) > Some(delay_bound_us));
}

#[test]
fn bad_requests_are_refused_without_booking() {
    let mut m = manager();
    let mut s = spec("A", "Z", 1, 1_000, None);
    let r = req(&mut m, Instant::ZERO, 1, Op::Admit(s.clone()));
    assert!(matches!(
        r.reply,
        Reply::Error {
            code: ErrorCode::UnknownHost,
            ..
        }
    ));
    s.dst = "s1".into();
    let r = req(&mut m, Instant::ZERO, 1, Op::Admit(s.clone()));
    assert!(
        matches!(
            r.reply,
            Reply::Error {
                code: ErrorCode::UnknownHost,
                ..
            }
        ),
        "a switch is not a host"
    );
    s.dst = "A".into();
    let r = req(&mut m, Instant::ZERO, 1, Op::Admit(s.clone()));
    assert!(matches!(
        r.reply,
        Reply::Error {
            code: ErrorCode::NoPath,
            ..
        }
    ));
    s.dst = "B".into();
    s.burst_bytes = Some(10_000);
    let r = req(&mut m, Instant::ZERO, 1, Op::Admit(s.clone()));
    assert!(matches!(
        r.reply,
        Reply::Error {
            code: ErrorCode::BadRequest,
            ..
        }
    ));
    s.shaping_interval_us = None;
    s.burst_bytes = Some(100);
    let r = req(&mut m, Instant::ZERO, 1, Op::Admit(s.clone()));
    assert!(matches!(
        r.reply,
        Reply::Error {
            code: ErrorCode::BadRequest,
            ..
        }
    ));
    s.burst_bytes = Some(3028);
    s.rate_bps = 0;
    let r = req(&mut m, Instant::ZERO, 1, Op::Admit(s));
    assert!(matches!(
        r.reply,
        Reply::Error {
            code: ErrorCode::BadRequest,
            ..
        }
    ));
    assert!(m.list().is_empty());
    assert!(!m.take_changed());
}

#[test]
fn json_shapes() {
    let r: Request = serde_json::from_str(
        r#"{"id":5,"op":"admit","src":"A","dst":"B","rate_bps":1000000,"max_packet":1514,"shaping_interval_us":1000}"#,
    )
    .expect("valid admit");
    assert_eq!(r.id, 5);
    assert!(matches!(r.op, Op::Admit(ConnSpec { delay_us: None, .. })));
    let r: Request = serde_json::from_str(r#"{"op":"list","id":6}"#).expect("valid list");
    assert_eq!(r.op, Op::List);
    let r: Request = serde_json::from_str(r#"{"id":7,"op":"release","conn":3}"#).expect("release");
    assert_eq!(r.op, Op::Release { conn: 3 });
    assert!(serde_json::from_str::<Request>(r#"{"id":7,"op":"explode"}"#).is_err());
    let r: Request = serde_json::from_str(
        r#"{"id":8,"op":"besteffort","src":"A","rate_bps":1000,"max_packet":64,"burst_bytes":64}"#,
    )
    .expect("valid besteffort");
    assert!(matches!(
        r.op,
        Op::BestEffort(BestEffortSpec {
            burst_bytes: Some(64),
            ..
        })
    ));
    let resp = Response::new(Some(1), Reply::Released { conn: 3 });
    assert_eq!(
        serde_json::to_string(&resp).expect("serialises"),
        r#"{"id":1,"ok":true,"result":"released","conn":3}"#
    );
    let back: Response = serde_json::from_str(
        &serde_json::to_string(&Response::error(None, ErrorCode::BadRequest, "x")).expect("ser"),
    )
    .expect("round trip");
    assert!(!back.ok);
}

/// Seed 004 §2.2 on a 2-switch path: the burst of a flow grows by `r·d` at `s1 → s2`, so the
/// bound at `s2 → B` (and end to end) exceeds the sum of per-port eq. (6) bounds computed from the
/// sender T-SPECs, and equals `rtlan analyze` on the same flows.
#[test]
fn two_switch_bound_includes_propagated_burst_and_matches_analyze() {
    use rtlan_calculus::analysis::{analyze, Topology as Model};
    use rtlan_calculus::loser::{self, Port};
    use rtlan_calculus::methods::Method;

    const NET: &str = r#"
[[switch]]
name = "s1"
t_mux = "45us"
buffer = "1MiB"
[[switch]]
name = "s2"
t_mux = "45us"
buffer = "1MiB"
[[link]]
ends = ["A", "s1"]
rate = "98.6mbit"
[[link]]
ends = ["X", "s1"]
rate = "98.6mbit"
[[link]]
ends = ["s1", "s2"]
rate = "98.6mbit"
[[link]]
ends = ["s2", "B"]
rate = "98.6mbit"
[[flow]]
name = "A-B"
path = ["A", "s1", "s2", "B"]
rate = "20mbit"
max_packet = 1514
shaping_interval = "10ms"
host_delay = "80us"
[[flow]]
name = "X-B"
path = ["X", "s1", "s2", "B"]
rate = "30mbit"
max_packet = 1514
shaping_interval = "10ms"
host_delay = "80us"
"#;
    let file = rtlan_topology::Topology::network_from_str(NET, "net.toml")
        .expect("valid network file")
        .network()
        .expect("complete network");
    let model = Model::from_netfile(&file);
    let flows: Vec<_> = file
        .flows
        .iter()
        .map(|f| model.resolve(f).expect("valid path"))
        .collect();
    let report = analyze(&model, &flows).expect("analysis");
    assert!(report.admitted(), "{:?}", report.violations);

    let sw = |n: &str| SwitchSpec {
        name: n.into(),
        t_mux_ns: 45_000,
        buffer_bytes: 1 << 20,
    };
    let link = |a: &str, b: &str| LinkSpec {
        ends: [a.into(), b.into()],
        rate_bps: C,
    };
    let topo = Topology {
        switches: vec![sw("s1"), sw("s2")],
        links: vec![
            link("A", "s1"),
            link("X", "s1"),
            link("s1", "s2"),
            link("s2", "B"),
        ],
        hosts: Vec::new(),
        rtlan: Vec::new(),
    };
    // The one derivation from the topology model gives the same manager view.
    assert_eq!(Topology::parse(NET, "net.toml"), Ok(topo.clone()));
    let mut m = Manager::new(topo, ManagerConfig::default()).expect("valid");
    let (ab, _) = admit(&mut m, spec("A", "B", 20, 10_000, None)).expect("admitted");
    let (xb, xb_us) = admit(&mut m, spec("X", "B", 30, 10_000, None)).expect("admitted");

    // Equal to `rtlan analyze` (exact bound rounded up to µs) for both flows.
    for (conn, fr) in [(ab, &report.flows[0]), (xb, &report.flows[1])] {
        let exact = fr.delay_bound.expect("finite bound");
        let us = exact
            .mul(Q::int(1_000_000))
            .expect("small")
            .ceil()
            .try_into()
            .ok();
        assert_eq!(m.delay_bound_ns(conn).map(port::ceil_us), us);
    }
    assert_eq!(m.delay_bound_ns(xb).map(port::ceil_us), Some(xb_us));

    // The old per-port sum from sender T-SPECs is strictly below: the burst growth is included.
    let port = Port {
        rate: Q::int(98_600_000),
        t_mux: Q::new(45, 1_000_000).expect("valid"),
    };
    let tspec = |mbit: i64| {
        Tspec::with_shaping_interval(
            Q::int(1514 * 8),
            Q::int(mbit * 1_000_000),
            Q::new(1, 100).expect("valid"),
        )
        .expect("valid T-SPEC")
    };
    let per_port = loser::delay_bound(&port, &[tspec(20), tspec(30)]).expect("bound");
    let old = per_port
        .add(per_port)
        .and_then(|t| t.add(Q::new(80, 1_000_000)?))
        .expect("small");
    let old_us = u64::try_from(old.mul(Q::int(1_000_000)).expect("small").ceil()).ok();
    // The manager books the tightest bound (PMOO here, 6049 µs); TFA's shows the burst growth.
    assert_eq!(report.flows[0].method, Some(Method::Pmoo));
    let tfa = report.flows[0].bounds.tfa.expect("finite bound");
    let new_us = u64::try_from(tfa.mul(Q::int(1_000_000)).expect("small").ceil()).ok();
    assert!(new_us > old_us, "{new_us:?} vs old {old_us:?}");
    // Growth at s2 → B by eq. (6): Σb grows by Σr·d1 (+ Σr·d1/C) and g_max (flow X-B) by
    // r_X·d1/(C − r_X) (− that · (1 − Σr/C)); about 0.29·d1 ≈ 935 µs.
    let d1_us = per_port.to_f64() * 1e6;
    let c = 98.6;
    let expected = d1_us * (50.0 / c - 30.0 / (c - 30.0) * (1.0 - 50.0 / c));
    let grown = new_us.unwrap_or(0) as f64 - old_us.unwrap_or(0) as f64;
    assert!(
        (grown - expected).abs() <= 2.0,
        "growth {grown} µs, expected {expected} µs"
    );

    // The per-port bounds of the topology reply match the analysis' too.
    let Reply::Topology { ports, .. } = req(&mut m, Instant::ZERO, 2, Op::Topology).reply else {
        panic!("expected a topology reply")
    };
    for pr in &report.ports {
        let info = ports
            .iter()
            .find(|p| p.switch == pr.switch && p.to == pr.to)
            .expect("port listed");
        let d = pr.delay_bound.expect("finite");
        let us: Option<u64> = d
            .mul(Q::int(1_000_000))
            .expect("small")
            .ceil()
            .try_into()
            .ok();
        assert_eq!(Some(info.delay_bound_us), us, "{}->{}", pr.switch, pr.to);
        assert_eq!(info.connections, 2);
    }
}

#[test]
fn hosts_can_be_named_by_address_and_bookings_keep_names() {
    let mut topo = star(128 * 1024);
    topo.hosts = vec![
        HostSpec {
            name: "C1".into(),
            ip: "198.18.0.3".parse().expect("literal"),
        },
        HostSpec {
            name: "B".into(),
            ip: "198.18.0.2".parse().expect("literal"),
        },
    ];
    let mut m = Manager::new(topo, ManagerConfig::default()).expect("valid topology");
    let (by_ip, bound_ip) = admit(&mut m, spec("198.18.0.3", "198.18.0.2", 40, 10_000, None))
        .expect("admitted by address");
    let listed = m.list();
    assert_eq!(listed[0].src, "C1");
    assert_eq!(listed[0].dst.as_deref(), Some("B"));
    let snap = m.snapshot();
    assert_eq!(
        snap.bookings[0].spec.src, "C1",
        "the state file keeps names"
    );
    // The same flow by name gets the same bound as by address once the first is released.
    req(&mut m, Instant::ZERO, 8, Op::Release { conn: by_ip });
    let (_, bound_name) = admit(&mut m, spec("C1", "B", 40, 10_000, None)).expect("by name");
    assert_eq!(bound_ip, bound_name);
    // An address no host has is unknown.
    let err = admit(&mut m, spec("198.18.0.99", "B", 1, 10_000, None)).expect_err("unknown");
    assert!(matches!(
        err,
        Reply::Error {
            code: ErrorCode::UnknownHost,
            ..
        }
    ));
}

#[test]
fn leases_expire_unless_refreshed_and_restored_bookings_get_a_fresh_one() {
    let config = ManagerConfig {
        lease: Some(Duration::from_secs(30)),
        ..ManagerConfig::default()
    };
    let mut m = Manager::new(star(128 * 1024), config.clone()).expect("valid");
    let t = |s: u64| Instant::from_nanos(s * 1_000_000_000);
    let admit_at = |m: &mut Manager, at, src: &str| match req(
        m,
        at,
        1,
        Op::Admit(spec(src, "B", 30, 10_000, None)),
    )
    .reply
    {
        Reply::Admitted { conn, lease_us, .. } => {
            assert_eq!(lease_us, Some(30_000_000));
            conn
        }
        other => panic!("expected admission, got {other:?}"),
    };
    let a = admit_at(&mut m, t(0), "C1");
    let b = admit_at(&mut m, t(0), "C2");
    assert_eq!(m.poll_timeout(), Some(t(30)));
    // a is refreshed at 20 s, b is not; an unknown id is reported as such.
    match req(
        &mut m,
        t(20),
        2,
        Op::Refresh {
            conns: vec![a, 999],
        },
    )
    .reply
    {
        Reply::Refreshed { renewed, unknown } => {
            assert_eq!((renewed, unknown), (vec![a], vec![999]));
        }
        other => panic!("expected refreshed, got {other:?}"),
    }
    assert!(m.take_changed());
    m.handle_timeout(t(30));
    let ids: Vec<ConnId> = m.list().iter().map(|c| c.conn).collect();
    assert_eq!(ids, vec![a], "b's lease ran out");
    assert!(m.take_changed(), "an expiry changes the persisted state");
    match req(&mut m, t(30), 3, Op::Refresh { conns: vec![b] }).reply {
        Reply::Refreshed { renewed, unknown } => {
            assert!(renewed.is_empty());
            assert_eq!(unknown, vec![b], "an expired booking is unknown to refresh");
        }
        other => panic!("expected refreshed, got {other:?}"),
    }
    // b's capacity is free again: 30 + 30 + 30 fit beside a on B's port (98.6 Mbit/s).
    admit_at(&mut m, t(31), "C3");
    // After a restart the bookings are re-armed from the first tick, not expired at once.
    let mut n = Manager::new(star(128 * 1024), config).expect("valid");
    assert!(n.restore(m.snapshot()).is_empty());
    assert_eq!(n.poll_timeout(), Some(Instant::ZERO), "leases to arm");
    n.handle_timeout(t(100));
    assert_eq!(n.list().len(), 2);
    assert_eq!(n.poll_timeout(), Some(t(130)));
    n.handle_timeout(t(130));
    assert!(n.list().is_empty());
}
