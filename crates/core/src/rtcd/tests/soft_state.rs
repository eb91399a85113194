//! Soft state and kernel shaping: REFRESH timing, revocation by a switch, HTB shaper actions.

use super::*;

#[test]
fn refresh_goes_out_for_open_connections_every_period() {
    let mut d = daemon();
    register(&mut d, ALICE, 100);
    let (_, open_id) = open_ok(&mut d, Instant::ZERO, ALICE, 1_000_000);
    // A second connection still opening (its SETUP unanswered) gets no REFRESH.
    d.handle_client_request(Instant::ZERO, ALICE, 8, open_req(1_000));
    drain(&mut d);
    let mut rounds = Vec::new();
    let mut now = Instant::ZERO;
    while let Some(next) = d.poll_timeout().filter(|&t| t <= ms(35_000)) {
        now = next.max(now);
        d.handle_timeout(now);
        let refreshes: Vec<Repr> = sent(&drain(&mut d))
            .into_iter()
            .filter(|r| matches!(r.message, Message::Refresh { .. }))
            .collect();
        if !refreshes.is_empty() {
            assert_eq!(
                refreshes.iter().map(|r| r.message).collect::<Vec<_>>(),
                vec![Message::Refresh {
                    connection_id: open_id
                }]
            );
            assert_eq!(refreshes[0].hop, 0);
            rounds.push(now);
        }
    }
    assert_eq!(rounds, vec![ms(10_000), ms(20_000), ms(30_000)]);
}

#[test]
fn teardown_from_the_switch_revokes_and_stops_refreshing() {
    let mut d = daemon();
    register(&mut d, ALICE, 100);
    let (conn, id) = open_ok(&mut d, Instant::ZERO, ALICE, 1_000_000);
    let mut teardown = Repr::new(1, 4242, Message::Teardown { connection_id: id });
    teardown.set_tlv(TeardownReason::NeighbourLost.to_tlv());
    d.handle_control(ms(5_000), &teardown);
    let a = drain(&mut d);
    let revoked = Reply::Revoked {
        conn,
        reason: TeardownReason::NeighbourLost,
        error: None,
    };
    assert!(replies(&a).contains(&(ALICE, 0, revoked)));
    let acks = sent(&a);
    assert_eq!(acks.len(), 1);
    assert_eq!(acks[0].request_id, 4242);
    assert_eq!(acks[0].message, Message::TeardownAck { connection_id: id });
    assert_eq!(d.connection_count(), 0);
    d.handle_timeout(ms(10_000));
    assert!(
        sent(&drain(&mut d)).is_empty(),
        "no REFRESH for a revoked connection"
    );
    d.check_invariants();
}

#[test]
fn kernel_shaping_installs_before_neighbour_and_removes_on_release() {
    let mut d = daemon();
    register(&mut d, ALICE, 100);
    let shaped = |rate| open_with(rate, DaemonShaping::Kernel, None);
    d.handle_client_request(ms(1), ALICE, 5, shaped(10_000_000));
    let setup = sent(&drain(&mut d)).remove(0);
    // Nothing is installed before the path admitted.
    d.handle_control(ms(2), &setup_ok(&setup));
    let a = drain(&mut d);
    let proxy_ip = Ipv4Addr::new(198, 19, 0, 16);
    let Some(Action::InstallShaper {
        id,
        proxy_ip: ip,
        dst_port: None,
        rate_bps,
        max_burst,
        max_packet,
    }) = a.first().cloned()
    else {
        panic!("expected InstallShaper first, got {a:?}");
    };
    assert_eq!(
        (ip, rate_bps, max_burst, max_packet),
        (proxy_ip, 10_000_000, 3028, 1514)
    );
    assert!(matches!(a[1], Action::InstallNeighbour { .. }), "{a:?}");
    d.handle_client_request(
        ms(3),
        ALICE,
        6,
        Request::Close {
            conn: ConnHandle(1),
        },
    );
    let a = drain(&mut d);
    assert!(a.contains(&Action::RemoveShaper { id, proxy_ip }), "{a:?}");
    // An unshaped connection gets no shaper actions.
    let _ = open_ok(&mut d, ms(4), ALICE, 1_000_000);
    d.handle_client_gone(ms(5), ALICE);
    assert!(!drain(&mut d).iter().any(|x| matches!(
        x,
        Action::InstallShaper { .. } | Action::RemoveShaper { .. }
    )));
}

/// The SETUP among `actions`, if any.
fn setup_sent(actions: &[Action]) -> Option<Repr> {
    sent(actions)
        .into_iter()
        .find(|r| matches!(r.message, Message::Setup(_)))
}

#[test]
fn after_a_topology_change_no_route_is_retried_with_backoff_until_the_window_closes() {
    let mut d = daemon();
    register(&mut d, ALICE, 100);
    let (_, id) = open_ok(&mut d, Instant::ZERO, ALICE, 1_000_000);
    let mut teardown = Repr::new(1, 77, Message::Teardown { connection_id: id });
    teardown.set_tlv(TeardownReason::TopologyChange.to_tlv());
    let cut = ms(1_000);
    d.handle_control(cut, &teardown);
    let mut setup = setup_sent(&drain(&mut d)).expect("signalled again at once");
    let mut now = cut;
    let mut gaps = Vec::new();
    loop {
        // The new path does not forward yet: the first switch refuses.
        let fail = Message::SetupFail {
            reason: rtlan_wire::control::FailReason::NoRoute,
            failed_hop: 1,
            connection_id: id,
            switch_ip: std::net::Ipv4Addr::UNSPECIFIED,
        };
        d.handle_control(now, &Repr::new(1, setup.request_id, fail));
        let a = drain(&mut d);
        if replies(&a)
            .iter()
            .any(|(_, _, r)| matches!(r, Reply::Revoked { .. }))
        {
            break;
        }
        // The next SETUP (other timers, REFRESH and HELLO, may fire first).
        let before = now;
        setup = loop {
            let next = d.poll_timeout().expect("a retry is scheduled");
            assert!(next <= before + Duration::from_secs(1), "retry too late");
            now = next;
            d.handle_timeout(now);
            if let Some(s) = setup_sent(&drain(&mut d)) {
                break s;
            }
        };
        gaps.push(now.saturating_duration_since(before));
    }
    let ms_ = |v: u64| Duration::from_millis(v);
    assert_eq!(
        gaps[..5],
        [ms_(100), ms_(200), ms_(400), ms_(800), ms_(1_000)]
    );
    assert!(gaps[5..].iter().all(|g| *g == ms_(1_000)), "{gaps:?}");
    // Given up once topology_resignal (50 s) had passed since the teardown.
    let elapsed = now.saturating_duration_since(cut);
    assert!(elapsed >= Duration::from_secs(50) && elapsed <= Duration::from_secs(51));
    assert_eq!(d.connection_count(), 0);
    d.check_invariants();
}
