//! Unit tests of the ownership rules ([`auth`]): who may release, refresh and list which
//! booking, and that the owner survives a snapshot and a journal replay.

use super::*;

fn star() -> Topology {
    Topology {
        switches: vec![SwitchSpec {
            name: "s1".into(),
            t_mux_ns: 45_000,
            buffer_bytes: 1 << 20,
        }],
        links: ["A", "B", "C"]
            .iter()
            .map(|h| LinkSpec {
                ends: [h.to_string(), "s1".into()],
                rate_bps: 98_600_000,
            })
            .collect(),
        hosts: Vec::new(),
        rtlan: Vec::new(),
    }
}

fn spec(src: &str) -> ConnSpec {
    ConnSpec {
        src: src.into(),
        dst: "B".into(),
        rate_bps: 1_000_000,
        max_packet: 1514,
        shaping_interval_us: None,
        burst_bytes: Some(3028),
        delay_us: None,
        host_delay_us: None,
    }
}

fn caller(principal: &str, role: Role) -> Caller {
    Caller {
        principal: principal.into(),
        role,
    }
}

fn ask(m: &mut Manager, who: &Caller, op: Op) -> Reply {
    m.handle_request_as(Instant::ZERO, who, Request { id: 1, op })
        .reply
}

fn admitted(r: Reply) -> ConnId {
    match r {
        Reply::Admitted { conn, .. } => conn,
        other => panic!("expected admitted, got {other:?}"),
    }
}

fn code(r: &Reply) -> Option<ErrorCode> {
    match r {
        Reply::Error { code, .. } => Some(*code),
        _ => None,
    }
}

fn listed(m: &mut Manager, who: &Caller) -> Vec<(ConnId, String)> {
    match ask(m, who, Op::List) {
        Reply::List { connections } => connections.into_iter().map(|c| (c.conn, c.owner)).collect(),
        other => panic!("expected a list, got {other:?}"),
    }
}

#[test]
fn a_client_manages_only_its_own_bookings_an_operator_all() {
    let mut m = Manager::new(
        star(),
        ManagerConfig {
            lease: Some(std::time::Duration::from_secs(30)),
            ..ManagerConfig::default()
        },
    )
    .expect("valid");
    let (a, b) = (
        caller("host-a", Role::Client),
        caller("host-c", Role::Client),
    );
    let op = caller("alice", Role::Operator);
    let ca = admitted(ask(&mut m, &a, Op::Admit(spec("A"))));
    let cb = admitted(ask(&mut m, &b, Op::AdmitPerHop(spec("C"))));

    // list: a client sees its own booking only, with its owner; the operator sees both.
    assert_eq!(listed(&mut m, &a), vec![(ca, "host-a".to_string())]);
    assert_eq!(listed(&mut m, &b), vec![(cb, "host-c".to_string())]);
    assert_eq!(listed(&mut m, &op).len(), 2);

    // release / refresh of another's booking: forbidden, and nothing changes.
    let r = ask(&mut m, &a, Op::Release { conn: cb });
    assert_eq!(code(&r), Some(ErrorCode::Forbidden), "{r:?}");
    let r = ask(
        &mut m,
        &a,
        Op::Refresh {
            conns: vec![ca, cb],
        },
    );
    assert_eq!(code(&r), Some(ErrorCode::Forbidden), "{r:?}");
    assert!(m
        .take_changes()
        .iter()
        .all(|c| matches!(c, Change::Booked(_))));
    assert_eq!(listed(&mut m, &op).len(), 2);

    // Its own: allowed; an id nobody holds stays `unknown`, not forbidden.
    let r = ask(
        &mut m,
        &a,
        Op::Refresh {
            conns: vec![ca, 99],
        },
    );
    assert_eq!(
        r,
        Reply::Refreshed {
            renewed: vec![ca],
            unknown: vec![99]
        }
    );
    let r = ask(&mut m, &a, Op::Release { conn: 99 });
    assert_eq!(code(&r), Some(ErrorCode::UnknownConnection));

    // The operator may refresh and release anyone's.
    let r = ask(&mut m, &op, Op::Refresh { conns: vec![cb] });
    assert!(matches!(r, Reply::Refreshed { .. }), "{r:?}");
    assert_eq!(
        ask(&mut m, &op, Op::Release { conn: cb }),
        Reply::Released { conn: cb }
    );
    assert_eq!(
        ask(&mut m, &a, Op::Release { conn: ca }),
        Reply::Released { conn: ca }
    );
    assert!(listed(&mut m, &op).is_empty());
}

#[test]
fn best_effort_bookings_have_owners_too() {
    let mut m = Manager::new(star(), ManagerConfig::default()).expect("valid");
    let (a, b) = (
        caller("host-a", Role::Client),
        caller("host-c", Role::Client),
    );
    let be = BestEffortSpec {
        src: "A".into(),
        rate_bps: 1_000_000,
        max_packet: 1514,
        shaping_interval_us: None,
        burst_bytes: Some(3028),
    };
    let Reply::BestEffort { conn, .. } = ask(&mut m, &a, Op::BestEffort(be)) else {
        panic!("best effort booked");
    };
    assert!(listed(&mut m, &b).is_empty());
    let r = ask(&mut m, &b, Op::Release { conn });
    assert_eq!(code(&r), Some(ErrorCode::Forbidden));
    assert_eq!(
        ask(&mut m, &a, Op::Release { conn }),
        Reply::Released { conn }
    );
}

#[test]
fn standing_reservations_belong_to_the_manager() {
    let config = ManagerConfig {
        standing: Some(StandingConfig {
            manager_host: "A".into(),
            rate_bps: 64_000,
            max_packet: 1514,
            burst_bytes: 3028,
        }),
        ..ManagerConfig::default()
    };
    let mut m = Manager::new(star(), config).expect("valid");
    let a = caller("host-a", Role::Client);
    assert!(listed(&mut m, &a).is_empty(), "a client sees none of them");
    let all = listed(&mut m, &Caller::anonymous());
    assert!(!all.is_empty() && all.iter().all(|(_, o)| o == MANAGER));
    let r = ask(
        &mut m,
        &a,
        Op::Refresh {
            conns: vec![all[0].0],
        },
    );
    assert_eq!(code(&r), Some(ErrorCode::Forbidden));
}

#[test]
fn the_owner_survives_snapshot_journal_and_restore() {
    let mut m = Manager::new(star(), ManagerConfig::default()).expect("valid");
    let a = caller("host-a", Role::Client);
    let ca = admitted(ask(&mut m, &a, Op::Admit(spec("A"))));
    let changes = m.take_changes();
    assert!(
        matches!(&changes[..], [Change::Booked(b)] if b.owner == "host-a"),
        "{changes:?}"
    );
    let snap = m.snapshot();
    assert_eq!(snap.bookings[0].owner, "host-a");
    let mut again = Manager::new(star(), ManagerConfig::default()).expect("valid");
    assert!(again.restore(snap).is_empty());
    let c = caller("host-c", Role::Client);
    let r = ask(&mut again, &c, Op::Release { conn: ca });
    assert_eq!(
        code(&r),
        Some(ErrorCode::Forbidden),
        "still host-a's after a restart"
    );
    assert_eq!(listed(&mut again, &a), vec![(ca, "host-a".to_string())]);
}

#[test]
fn bookings_persisted_without_an_owner_load_as_anonymous() {
    let old = r#"{"version":1,"next_conn":2,"bookings":[{"conn":1,"spec":{"src":"A","dst":"B",
        "rate_bps":1000000,"max_packet":1514,"burst_bytes":3028}}]}"#;
    let state: State = serde_json::from_str(old).expect("old state loads");
    assert_eq!(state.bookings[0].owner, ANONYMOUS);
    let change: Change =
        serde_json::from_str(r#"{"booked":{"conn":3,"spec":{"src":"A","dst":"B","rate_bps":1,"max_packet":64,"burst_bytes":64}}}"#)
            .expect("old journal line loads");
    assert!(matches!(change, Change::Booked(b) if b.owner == ANONYMOUS));
    let mut m = Manager::new(star(), ManagerConfig::default()).expect("valid");
    assert!(m.restore(state).is_empty());
    // Only an operator may manage an anonymous booking once tokens are configured.
    let a = caller("host-a", Role::Client);
    assert!(listed(&mut m, &a).is_empty());
    let r = ask(&mut m, &a, Op::Release { conn: 1 });
    assert_eq!(code(&r), Some(ErrorCode::Forbidden));
    // The open manager's caller (no tokens) is the anonymous operator: today's behaviour.
    let r = m.handle_request(
        Instant::ZERO,
        Request {
            id: 2,
            op: Op::Release { conn: 1 },
        },
    );
    assert_eq!(r.reply, Reply::Released { conn: 1 });
}
