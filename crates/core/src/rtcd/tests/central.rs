//! Central admission (seed 004 §3.2): the daemon asks the bandwidth manager first; central-only
//! connections send plainly to the receiver, "both" continues with per-hop SETUP; every path
//! that ends a connection gives the manager's booking back exactly once.

use super::*;

fn daemon_with(admission: Admission) -> Rtcd {
    let config = Config {
        admission,
        refresh_period: Duration::ZERO,
        ..Config::new(HOST_MAC, HOST_IP, 100_000_000)
    };
    started(config)
}

/// The single `ManagerAdmit` in `actions`.
fn asked(actions: &[Action]) -> (ConnHandle, ManagerRequest) {
    let asks: Vec<_> = actions
        .iter()
        .filter_map(|a| match a {
            Action::ManagerAdmit { conn, request } => Some((*conn, *request)),
            _ => None,
        })
        .collect();
    assert_eq!(asks.len(), 1, "{actions:?}");
    asks[0]
}

fn released(actions: &[Action]) -> Vec<u64> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::ManagerRelease { manager_conn } => Some(*manager_conn),
            _ => None,
        })
        .collect()
}

fn admitted(manager_conn: u64) -> ManagerAnswer {
    ManagerAnswer::Admitted {
        manager_conn,
        delay_bound_us: 9368,
        hops: 1,
    }
}

#[test]
fn central_only_asks_the_manager_and_sends_plainly_to_the_receiver() {
    let mut d = daemon_with(Admission::Central);
    register(&mut d, ALICE, 100);
    d.handle_client_request(
        ms(1),
        ALICE,
        5,
        open_with(40_000_000, DaemonShaping::Kernel, Some(9_500)),
    );
    let a = drain(&mut d);
    assert!(
        sent(&a).is_empty(),
        "no SETUP before the manager answered: {a:?}"
    );
    let (conn, request) = asked(&a);
    assert_eq!(
        request,
        ManagerRequest {
            src_ip: HOST_IP,
            dst_ip: DST,
            rate_bps: 40_000_000,
            max_packet: 1514,
            burst_bytes: 3028,
            delay_us: Some(9_500),
            // Central-only: the manager's own t_os stands for the host.
            host_delay_us: None,
            per_hop: false,
        }
    );
    // Phase admitting in the list, the rate counts against the local cap meanwhile.
    assert_eq!(d.reserved_bps(), 40_000_000);
    d.handle_client_request(ms(1), ALICE, 6, Request::List { all: false });
    match replies(&drain(&mut d)).pop() {
        Some((_, 6, Reply::List(list))) => assert_eq!(list[0].phase, ConnPhase::Admitting),
        other => panic!("expected a list, got {other:?}"),
    }
    d.handle_manager_answer(ms(2), conn, admitted(77));
    let a = drain(&mut d);
    assert!(sent(&a).is_empty(), "central-only sends no SETUP: {a:?}");
    assert!(
        !a.iter().any(|x| matches!(
            x,
            Action::InstallNeighbour { .. } | Action::InstallRoute { .. }
        )),
        "no proxy on central-only admission: {a:?}"
    );
    let Some(Action::InstallShaper {
        proxy_ip, dst_port, ..
    }) = a.first().cloned()
    else {
        panic!("expected the kernel shaper first: {a:?}");
    };
    assert_eq!((proxy_ip, dst_port), (DST, Some(5004)));
    let Some((_, 5, Reply::Opened { id, .. })) = replies(&a).pop() else {
        panic!("expected Opened: {a:?}");
    };
    assert_eq!(
        replies(&a).pop().map(|r| r.2),
        Some(Reply::Opened {
            conn,
            proxy_ip: DST,
            proxy_mac: None,
            id,
            hops: 1,
            delay_bound_us: Some(9368),
        })
    );
    d.check_invariants();
    // Closing releases at the manager at once, without any control frame.
    d.handle_client_request(ms(3), ALICE, 7, Request::Close { conn });
    let a = drain(&mut d);
    assert_eq!(released(&a), vec![77]);
    assert!(sent(&a).is_empty());
    assert!(a.iter().any(|x| matches!(x, Action::RemoveShaper { .. })));
    assert!(replies(&a).contains(&(ALICE, 7, Reply::Closed { conn })));
    assert_eq!((d.connection_count(), d.reserved_bps()), (0, 0));
    d.check_invariants();
}

#[test]
fn manager_refusal_or_silence_fails_the_open_and_frees_everything() {
    for answer in [
        ManagerAnswer::Refused("refused: delay 9368 > 9000".into()),
        ManagerAnswer::Unreachable("connection refused".into()),
    ] {
        let mut d = daemon_with(Admission::Central);
        register(&mut d, ALICE, 100);
        d.handle_client_request(ms(1), ALICE, 5, open_req(1_000_000));
        let (conn, _) = asked(&drain(&mut d));
        d.handle_manager_answer(ms(2), conn, answer.clone());
        let a = drain(&mut d);
        assert!(released(&a).is_empty(), "nothing was booked: {a:?}");
        let Some((ALICE, 5, Reply::Failed { conn: c, error })) = replies(&a).pop() else {
            panic!("expected Failed: {a:?}");
        };
        assert_eq!(c, Some(conn));
        match (&answer, &error) {
            (ManagerAnswer::Refused(t), RtcdError::ManagerRefused(e))
            | (ManagerAnswer::Unreachable(t), RtcdError::ManagerUnreachable(e)) => {
                assert_eq!(t, e);
            }
            other => panic!("wrong error mapping: {other:?}"),
        }
        assert_eq!(
            (d.connection_count(), d.ids_in_use(), d.reserved_bps()),
            (0, 0, 0)
        );
        // A late duplicate answer for the dead handle books nothing and releases nothing.
        d.handle_manager_answer(ms(3), conn, ManagerAnswer::Refused("again".into()));
        assert!(drain(&mut d).is_empty());
    }
}

#[test]
fn closed_while_admitting_releases_a_late_admission() {
    let mut d = daemon_with(Admission::Central);
    register(&mut d, ALICE, 100);
    d.handle_client_request(ms(1), ALICE, 5, open_req(1_000_000));
    let (conn, _) = asked(&drain(&mut d));
    d.handle_client_request(ms(2), ALICE, 6, Request::Close { conn });
    let a = drain(&mut d);
    let r = replies(&a);
    assert!(r.contains(&(
        ALICE,
        5,
        Reply::Failed {
            conn: Some(conn),
            error: RtcdError::Cancelled
        }
    )));
    assert!(r.contains(&(ALICE, 6, Reply::Closed { conn })));
    assert_eq!(d.connection_count(), 0);
    // The manager booked it after all: give it back.
    d.handle_manager_answer(ms(3), conn, admitted(12));
    assert_eq!(released(&drain(&mut d)), vec![12]);
    d.check_invariants();
}

#[test]
fn client_gone_releases_every_central_booking_once() {
    let mut d = daemon_with(Admission::Central);
    register(&mut d, ALICE, 100);
    let mut conns = Vec::new();
    for (i, tag) in [(0u64, 1u64), (1, 2)] {
        d.handle_client_request(ms(1), ALICE, tag, open_req(1_000_000));
        let (conn, _) = asked(&drain(&mut d));
        d.handle_manager_answer(ms(2), conn, admitted(100 + i));
        drain(&mut d);
        conns.push(conn);
    }
    d.handle_client_gone(ms(3), ALICE);
    let mut r = released(&drain(&mut d));
    r.sort_unstable();
    assert_eq!(r, vec![100, 101]);
    assert_eq!(d.connection_count(), 0);
    d.check_invariants();
}

#[test]
fn both_books_centrally_then_sets_up_per_hop() {
    let mut d = daemon_with(Admission::Both);
    register(&mut d, ALICE, 100);
    d.handle_client_request(ms(1), ALICE, 5, open_req(1_000_000));
    let (conn, request) = asked(&drain(&mut d));
    // The manager's bound starts with the same host term as the switches'.
    assert_eq!(request.host_delay_us, Some(2_000));
    assert!(request.per_hop, "booked with the switches' curves");
    d.handle_manager_answer(ms(2), conn, admitted(40));
    let setup = sent(&drain(&mut d))
        .pop()
        .expect("SETUP after the manager admitted");
    let delay = setup
        .delay()
        .expect("a well-formed DELAY")
        .expect("SETUP carries DELAY");
    assert_eq!(delay.accumulated_ns, 2_000_000);
    d.handle_control(ms(3), &setup_ok(&setup));
    let a = drain(&mut d);
    let Some((
        _,
        5,
        Reply::Opened {
            proxy_ip,
            proxy_mac,
            delay_bound_us,
            ..
        },
    )) = replies(&a).pop()
    else {
        panic!("expected Opened: {a:?}");
    };
    assert!(ProxyPrefix::DEFAULT.contains(proxy_ip));
    assert!(proxy_mac.is_some());
    assert_eq!(delay_bound_us, Some(9368));
    assert!(a
        .iter()
        .any(|x| matches!(x, Action::InstallNeighbour { .. })));
    // Close: the manager's booking goes at once, the TEARDOWN runs as usual.
    d.handle_client_request(ms(4), ALICE, 6, Request::Close { conn });
    let a = drain(&mut d);
    assert_eq!(released(&a), vec![40]);
    let td = sent(&a).pop().expect("TEARDOWN");
    assert!(matches!(td.message, Message::Teardown { .. }));
    d.check_invariants();

    // A switch refusing after the manager admitted gives the booking back too.
    d.handle_client_request(ms(5), ALICE, 7, open_req(1_000_000));
    let (conn, _) = asked(&drain(&mut d));
    d.handle_manager_answer(ms(6), conn, admitted(41));
    let setup = sent(&drain(&mut d)).pop().expect("SETUP");
    let Message::Setup(s) = setup.message else {
        panic!("not a SETUP");
    };
    let fail = Repr::new(
        1,
        setup.request_id,
        Message::SetupFail {
            reason: FailReason::Bandwidth,
            failed_hop: 1,
            connection_id: s.connection_id,
            switch_ip: Ipv4Addr::new(198, 18, 255, 1),
        },
    );
    d.handle_control(ms(7), &fail);
    let a = drain(&mut d);
    assert_eq!(released(&a), vec![41]);
    assert!(matches!(
        replies(&a).pop(),
        Some((
            _,
            7,
            Reply::Failed {
                error: RtcdError::Refused { .. },
                ..
            }
        ))
    ));
    d.check_invariants();
}

#[test]
fn bookings_are_refreshed_and_a_lost_one_revokes_its_connection() {
    for admission in [Admission::Central, Admission::Both] {
        let config = Config {
            admission,
            ..Config::new(HOST_MAC, HOST_IP, 100_000_000)
        };
        let mut d = started(config);
        register(&mut d, ALICE, 100);
        d.handle_client_request(ms(1), ALICE, 5, open_req(1_000_000));
        let (conn, _) = asked(&drain(&mut d));
        d.handle_manager_answer(ms(2), conn, admitted(77));
        if admission == Admission::Both {
            let setup = sent(&drain(&mut d)).pop().expect("SETUP");
            d.handle_control(ms(3), &setup_ok(&setup));
        }
        drain(&mut d);
        // Every refresh period the manager's lease is renewed; a central-only connection sends
        // no REFRESH to switches (there are none on its path to tell).
        let due = d.poll_timeout().expect("refresh timer");
        assert_eq!(due, ms(10_000));
        d.handle_timeout(due);
        let a = drain(&mut d);
        assert!(a.contains(&Action::ManagerRefresh {
            manager_conns: vec![77]
        }));
        let refreshes = sent(&a)
            .iter()
            .filter(|r| matches!(r.message, Message::Refresh { .. }))
            .count();
        assert_eq!(refreshes, usize::from(admission == Admission::Both));
        // The manager lost it (lease ran out while it was unreachable): revoked, nothing to give
        // back, and under `both` the switches are told.
        d.handle_manager_lost(ms(10_001), &[77, 78]);
        let a = drain(&mut d);
        assert!(
            replies(&a)
                .iter()
                .any(|r| matches!(r, (ALICE, 0, Reply::Revoked { conn: c, .. }) if *c == conn)),
            "{a:?}"
        );
        assert!(released(&a).is_empty(), "{a:?}");
        let teardowns = sent(&a)
            .iter()
            .filter(|r| matches!(r.message, Message::Teardown { .. }))
            .count();
        assert_eq!(teardowns, usize::from(admission == Admission::Both));
        if admission == Admission::Central {
            assert_eq!(d.connection_count(), 0);
        }
        d.check_invariants();
        // A second report of the same loss changes nothing.
        d.handle_manager_lost(ms(10_002), &[77]);
        assert!(released(&drain(&mut d)).is_empty());
    }
}
