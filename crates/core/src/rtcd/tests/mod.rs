//! Deterministic virtual-time tests of the RTCD core against a fake first switch.

use std::net::Ipv4Addr;
use std::time::Duration;

use proptest::prelude::*;
use rtlan_wire::control::{
    EpochTlv, FailReason, Message, ProxyMacPlan, Repr, TeardownReason, FLAG_RETRANSMISSION,
    TLV_EPOCH,
};
use rtlan_wire::ethernet::Address;

use super::*;
use crate::time::Instant;

const HOST_MAC: Address = Address([0x02, 0, 0, 0, 0, 1]);
const HOST_IP: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 1);
const DST: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 2);
const ALICE: ClientId = ClientId(1);
const BOB: ClientId = ClientId(2);

fn ms(n: u64) -> Instant {
    Instant::from_nanos(n * 1_000_000)
}

fn daemon() -> Rtcd {
    // 100 Mbit/s link, 60 Mbit/s real-time cap.
    started(Config::new(HOST_MAC, HOST_IP, 100_000_000))
}

/// As [`daemon`], sending no REFRESH (timer tests that count on the reclaim period alone).
fn daemon_without_refresh() -> Rtcd {
    let config = Config {
        refresh_period: Duration::ZERO,
        ..Config::new(HOST_MAC, HOST_IP, 100_000_000)
    };
    started(config)
}

/// A daemon started at 0 with `config`, its start HELLO (checked) taken out.
fn started(config: Config) -> Rtcd {
    let mut d = Rtcd::new(config, Instant::ZERO).expect("valid config");
    match drain(&mut d).as_slice() {
        [Action::SendControl { repr, .. }] => {
            assert!(matches!(repr.message, Message::Hello(_)), "{repr}");
        }
        other => panic!("a daemon starts with one HELLO, not {other:?}"),
    }
    d
}

fn drain(d: &mut Rtcd) -> Vec<Action> {
    std::iter::from_fn(|| d.poll_action()).collect()
}

fn open_req(rate: u64) -> Request {
    open_with(rate, DaemonShaping::None, None)
}

/// An `open` of `rate` to DST:5004 with `shaping` and an optional delay requirement.
fn open_with(rate: u64, shaping: DaemonShaping, delay_us: Option<u64>) -> Request {
    Request::Open {
        dst_ip: DST,
        dst_port: 5004,
        src_port: 0,
        rate_bps: rate,
        max_burst: 3028,
        max_packet: 1514,
        shaping,
        delay_us,
    }
}

fn register(d: &mut Rtcd, client: ClientId, pid: u32) {
    d.handle_client_request(Instant::ZERO, client, 0, Request::Register { pid });
    assert_eq!(
        drain(d),
        vec![Action::Reply {
            client,
            tag: 0,
            reply: Reply::Registered { pid }
        }]
    );
}

/// The single control message in `actions`, checked to go to the control MAC.
/// The control messages in `actions` other than HELLOs, without their EPOCH TLV (every message
/// carries the daemon's epoch: checked here, then stripped so tests compare the rest).
fn sent(actions: &[Action]) -> Vec<Repr> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::SendControl { dst, repr } => {
                assert_eq!(*dst, ProxyMacPlan::DEFAULT.control_mac());
                Some(strip_epoch(repr))
            }
            _ => None,
        })
        .filter(|r| !matches!(r.message, Message::Hello(_)))
        .collect()
}

/// `repr` without its EPOCH TLV, which must be there and carry the test daemon's epoch.
fn strip_epoch(repr: &Repr) -> Repr {
    assert_eq!(
        repr.epoch(),
        Ok(Some(EpochTlv(Config::new(HOST_MAC, HOST_IP, 1).epoch))),
        "{repr}"
    );
    let mut repr = repr.clone();
    repr.tlvs.retain(|t| t.kind != TLV_EPOCH);
    repr
}

fn replies(actions: &[Action]) -> Vec<(ClientId, u64, Reply)> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Reply { client, tag, reply } => Some((*client, *tag, reply.clone())),
            _ => None,
        })
        .collect()
}

fn setup_ok(setup: &Repr) -> Repr {
    let Message::Setup(s) = setup.message else {
        panic!("not a SETUP: {setup}");
    };
    Repr::new(
        1,
        setup.request_id,
        Message::SetupOk {
            connection_id: s.connection_id,
            hops: 2,
        },
    )
}

/// Opens a connection for `client` and answers SETUP_OK; returns (handle, id).
fn open_ok(d: &mut Rtcd, now: Instant, client: ClientId, rate: u64) -> (ConnHandle, u16) {
    d.handle_client_request(now, client, 7, open_req(rate));
    let setup = sent(&drain(d)).pop().expect("SETUP sent");
    d.handle_control(now, &setup_ok(&setup));
    match replies(&drain(d)).pop() {
        Some((_, 7, Reply::Opened { conn, id, .. })) => (conn, id),
        other => panic!("expected Opened, got {other:?}"),
    }
}

/// Closes `conn` and acknowledges the TEARDOWN.
fn close_ack(d: &mut Rtcd, now: Instant, client: ClientId, conn: ConnHandle) {
    d.handle_client_request(now, client, 9, Request::Close { conn });
    let actions = drain(d);
    assert!(replies(&actions).contains(&(client, 9, Reply::Closed { conn })));
    let td = sent(&actions).pop().expect("TEARDOWN sent");
    let Message::Teardown { connection_id } = td.message else {
        panic!("not a TEARDOWN: {td}");
    };
    d.handle_control(
        now,
        &Repr::new(1, td.request_id, Message::TeardownAck { connection_id }),
    );
    assert!(drain(d).is_empty());
}

#[test]
fn happy_path_actions_in_order() {
    let mut d = daemon();
    register(&mut d, ALICE, 100);
    d.handle_client_request(ms(1), ALICE, 5, open_req(10_000_000));
    let a = drain(&mut d);
    assert_eq!(a.len(), 1);
    let setup = sent(&a).remove(0);
    assert_eq!(setup.hop, 0);
    assert_eq!(setup.flags, 0);
    let Message::Setup(s) = setup.message else {
        panic!("not a SETUP");
    };
    assert_eq!(
        (s.src_ip, s.dst_ip, s.dst_port, s.rate),
        (HOST_IP, DST, 5004, 10_000_000)
    );
    assert_eq!(s.connection_id, ProxyMacPlan::DEFAULT.reserved);
    let id = s.connection_id;
    let proxy_ip = Ipv4Addr::new(198, 19, 0, 16);
    let proxy_mac = ProxyMacPlan::DEFAULT.mac_for(id);

    d.handle_control(ms(2), &setup_ok(&setup));
    let a = drain(&mut d);
    assert_eq!(
        a,
        vec![
            Action::InstallNeighbour {
                proxy_ip,
                proxy_mac
            },
            Action::InstallRoute {
                prefix: ProxyPrefix::DEFAULT
            },
            Action::Reply {
                client: ALICE,
                tag: 5,
                reply: Reply::Opened {
                    conn: ConnHandle(1),
                    proxy_ip,
                    proxy_mac: Some(proxy_mac),
                    id,
                    hops: 2,
                    delay_bound_us: None,
                }
            },
        ]
    );
    // A second connection installs no second route.
    let (c2, id2) = open_ok(&mut d, ms(3), ALICE, 1_000_000);
    assert_ne!(id2, id);
    // Closing the first keeps the route; closing the last removes it.
    d.handle_client_request(
        ms(4),
        ALICE,
        6,
        Request::Close {
            conn: ConnHandle(1),
        },
    );
    let a = drain(&mut d);
    assert_eq!(a[0], Action::RemoveNeighbour { proxy_ip });
    assert!(matches!(&a[1], Action::SendControl { repr, .. }
        if repr.message == Message::Teardown { connection_id: id }));
    assert_eq!(
        a[2],
        Action::Reply {
            client: ALICE,
            tag: 6,
            reply: Reply::Closed {
                conn: ConnHandle(1)
            }
        }
    );
    assert_eq!(a.len(), 3);
    d.handle_client_request(ms(5), ALICE, 8, Request::Close { conn: c2 });
    let a = drain(&mut d);
    assert!(a.contains(&Action::RemoveRoute {
        prefix: ProxyPrefix::DEFAULT
    }));
    d.check_invariants();
}

#[test]
fn setup_retransmits_with_backoff_then_times_out() {
    let mut d = daemon();
    register(&mut d, ALICE, 100);
    d.handle_client_request(Instant::ZERO, ALICE, 3, open_req(1_000_000));
    let first = sent(&drain(&mut d)).remove(0);
    let mut times = Vec::new();
    let mut now;
    let failed_at = loop {
        now = d.poll_timeout().expect("a deadline is armed");
        d.handle_timeout(now);
        let a = drain(&mut d);
        if let Some((ALICE, 3, Reply::Failed { error, .. })) = replies(&a).pop() {
            assert_eq!(error, RtcdError::Timeout);
            break now;
        }
        let r = sent(&a).remove(0);
        assert_eq!(r.request_id, first.request_id);
        assert_eq!(r.flags & FLAG_RETRANSMISSION, FLAG_RETRANSMISSION);
        assert_eq!(r.message, first.message);
        times.push(now.as_nanos() / 1_000_000);
    };
    assert_eq!(times, vec![100, 300, 700, 1500]);
    assert_eq!(failed_at, ms(3100));
    // The reservation is released locally at once; the id only after the TEARDOWN runs out.
    assert_eq!(d.reserved_bps(), 0);
    for _ in 0..10 {
        now = d.poll_timeout().expect("deadline");
        d.handle_timeout(now);
        drain(&mut d);
    }
    assert_eq!(d.ids_in_use(), 0);
    d.check_invariants();
}

#[test]
fn duplicate_setup_ok_ignored() {
    let mut d = daemon();
    register(&mut d, ALICE, 100);
    d.handle_client_request(Instant::ZERO, ALICE, 1, open_req(1_000_000));
    let setup = sent(&drain(&mut d)).remove(0);
    let ok = setup_ok(&setup);
    d.handle_control(ms(1), &ok);
    assert_eq!(drain(&mut d).len(), 3);
    d.handle_control(ms(2), &ok);
    assert!(drain(&mut d).is_empty());
    // A SETUP_OK with a wrong request id does not open anything either.
    let mut stray = ok.clone();
    stray.request_id = 999;
    d.handle_control(ms(3), &stray);
    assert!(drain(&mut d).is_empty());
    d.check_invariants();
}

#[test]
fn setup_fail_releases_id_and_proxy_ip() {
    let mut d = daemon();
    register(&mut d, ALICE, 100);
    d.handle_client_request(Instant::ZERO, ALICE, 1, open_req(1_000_000));
    let setup = sent(&drain(&mut d)).remove(0);
    let Message::Setup(s) = setup.message else {
        panic!("not a SETUP")
    };
    let fail = Repr::new(
        1,
        setup.request_id,
        Message::SetupFail {
            reason: FailReason::Bandwidth,
            failed_hop: 2,
            connection_id: s.connection_id,
            switch_ip: Ipv4Addr::new(198, 18, 255, 2),
        },
    );
    d.handle_control(ms(1), &fail);
    let r = replies(&drain(&mut d));
    assert_eq!(
        r,
        vec![(
            ALICE,
            1,
            Reply::Failed {
                conn: Some(ConnHandle(1)),
                error: RtcdError::Refused {
                    hop: 2,
                    reason: FailReason::Bandwidth,
                    switch_ip: Ipv4Addr::new(198, 18, 255, 2)
                }
            }
        )]
    );
    assert_eq!(
        (d.ids_in_use(), d.connection_count(), d.reserved_bps()),
        (0, 0, 0)
    );
    // A late duplicate SETUP_FAIL is ignored, and the next open works and gets a fresh id.
    d.handle_control(ms(2), &fail);
    assert!(drain(&mut d).is_empty());
    let (_, id) = open_ok(&mut d, ms(3), ALICE, 1_000_000);
    assert_ne!(
        id, s.connection_id,
        "round-robin avoids reusing a just-released id"
    );
    d.check_invariants();
}

#[test]
fn ids_unique_over_1000_cycles_and_no_leak() {
    let mut d = daemon();
    register(&mut d, ALICE, 100);
    let (_, pinned) = open_ok(&mut d, Instant::ZERO, ALICE, 1_000);
    for i in 0..1000 {
        let now = ms(i);
        let (c1, id1) = open_ok(&mut d, now, ALICE, 1_000);
        let (c2, id2) = open_ok(&mut d, now, ALICE, 1_000);
        assert!(id1 != id2 && id1 != pinned && id2 != pinned);
        close_ack(&mut d, now, ALICE, c1);
        close_ack(&mut d, now, ALICE, c2);
        d.check_invariants();
    }
    assert_eq!((d.ids_in_use(), d.connection_count()), (1, 1));
    assert_eq!(d.reserved_bps(), 1_000);
}

#[test]
fn orphan_reclaim_tears_down_dead_pid_only() {
    let mut d = daemon_without_refresh();
    register(&mut d, ALICE, 100);
    register(&mut d, BOB, 200);
    let (_, a_id) = open_ok(&mut d, Instant::ZERO, ALICE, 1_000_000);
    let (b_conn, _) = open_ok(&mut d, Instant::ZERO, BOB, 1_000_000);
    assert_eq!(d.poll_timeout(), Some(ms(60_000)));
    d.handle_timeout(ms(60_000));
    assert_eq!(drain(&mut d), vec![Action::CheckPids(vec![100, 200])]);
    d.handle_dead_pids(ms(60_001), &[100]);
    let a = drain(&mut d);
    let proxy_ip = ProxyPrefix::DEFAULT.ip_for(a_id);
    assert_eq!(a[0], Action::RemoveNeighbour { proxy_ip });
    assert_eq!(
        sent(&a).iter().map(|r| r.message).collect::<Vec<_>>(),
        vec![Message::Teardown {
            connection_id: a_id
        }]
    );
    assert!(replies(&a).is_empty());
    assert!(!a.iter().any(|x| matches!(x, Action::RemoveRoute { .. })));
    // Bob is untouched and still served; Alice is no longer registered.
    d.handle_client_request(ms(60_002), BOB, 1, Request::List { all: false });
    let list = replies(&drain(&mut d));
    let [(BOB, 1, Reply::List(l))] = list.as_slice() else {
        panic!("{list:?}")
    };
    assert_eq!(l.len(), 1);
    assert_eq!((l[0].conn, l[0].phase), (b_conn, ConnPhase::Open));
    d.handle_client_request(ms(60_003), ALICE, 2, open_req(1));
    assert!(matches!(
        replies(&drain(&mut d)).as_slice(),
        [(
            ALICE,
            2,
            Reply::Failed {
                error: RtcdError::NotRegistered,
                ..
            }
        )]
    ));
    d.check_invariants();
}

/// The policy: the group audio (29) together holds at most 10 Mbit/s, user 1001 is denied, and
/// nobody else is allowed; what a refused client asks for never reaches the switch, and what
/// a group member closes is free for the group again.
#[test]
fn the_reservation_policy_limits_a_group_together_and_refuses_the_unlisted() {
    use super::policy::{Policy, PolicyRefusal, Principal, Rule, Who};
    let rule = Rule::allow;
    let config = Config {
        policy: Policy {
            rules: vec![
                Rule {
                    deny: true,
                    ..rule(Who::Uid(1001), "user 1001")
                },
                Rule {
                    max_total_bps: Some(10_000_000),
                    ..rule(Who::Gid(29), "group audio")
                },
            ],
        },
        ..Config::new(HOST_MAC, HOST_IP, 100_000_000)
    };
    let mut d = started(config);
    const CAROL: ClientId = ClientId(3);
    const ROOT: ClientId = ClientId(4);
    for (client, pid, uid, gids) in [
        (ALICE, 100, 1000, vec![1000, 29]),
        (BOB, 101, 1002, vec![1002, 29]),
        (CAROL, 102, 1001, vec![1001, 29]),
        (ROOT, 103, 0, vec![0]),
    ] {
        register(&mut d, client, pid);
        d.set_principal(client, Some(Principal { uid, gids }));
    }
    let (alice_conn, _) = open_ok(&mut d, Instant::ZERO, ALICE, 6_000_000);
    let refused = |d: &mut Rtcd, client, rate| {
        d.handle_client_request(ms(1), client, 4, open_req(rate));
        let a = drain(d);
        assert!(sent(&a).is_empty(), "refused before sending SETUP");
        match replies(&a).pop() {
            Some((
                _,
                4,
                Reply::Failed {
                    error: RtcdError::Policy(why),
                    ..
                },
            )) => why,
            other => panic!("expected a policy refusal, got {other:?}"),
        }
    };
    // Bob is in audio too: 6 + 5 > 10.
    assert!(matches!(
        refused(&mut d, BOB, 5_000_000),
        PolicyRefusal::Total {
            held: 6_000_000,
            limit: 10_000_000,
            ..
        }
    ));
    open_ok(&mut d, ms(2), BOB, 4_000_000);
    assert!(matches!(
        refused(&mut d, CAROL, 1),
        PolicyRefusal::Denied { .. }
    ));
    // Root is never limited.
    open_ok(&mut d, ms(3), ROOT, 30_000_000);
    // Once Alice closes, the group has room again.
    close_ack(&mut d, ms(4), ALICE, alice_conn);
    open_ok(&mut d, ms(5), BOB, 6_000_000);
    // A client the shell could not identify is governed by an `everyone` rule only: none here.
    d.set_principal(ALICE, None);
    assert!(matches!(
        refused(&mut d, ALICE, 1),
        PolicyRefusal::NoRule { .. }
    ));
    d.check_invariants();
}

#[test]
fn local_admission_refuses_over_cap() {
    let mut d = daemon();
    register(&mut d, ALICE, 100);
    open_ok(&mut d, Instant::ZERO, ALICE, 50_000_000);
    d.handle_client_request(ms(1), ALICE, 4, open_req(10_000_001));
    let a = drain(&mut d);
    assert!(sent(&a).is_empty(), "refused before sending SETUP");
    assert_eq!(
        replies(&a),
        vec![(
            ALICE,
            4,
            Reply::Failed {
                conn: None,
                error: RtcdError::LocalAdmission {
                    requested: 10_000_001,
                    available: 10_000_000
                }
            }
        )]
    );
    // Exactly the cap fits.
    open_ok(&mut d, ms(2), ALICE, 10_000_000);
    assert_eq!(d.reserved_bps(), 60_000_000);
    d.check_invariants();
}

#[test]
fn unregistered_and_absurd_requests_refused() {
    let mut d = daemon();
    d.handle_client_request(Instant::ZERO, ALICE, 1, open_req(1_000));
    assert!(matches!(
        replies(&drain(&mut d)).as_slice(),
        [(
            ALICE,
            1,
            Reply::Failed {
                error: RtcdError::NotRegistered,
                ..
            }
        )]
    ));
    register(&mut d, ALICE, 100);
    let bad = [
        open_req(0),
        Request::Open {
            dst_ip: DST,
            dst_port: 1,
            src_port: 0,
            rate_bps: 1,
            max_burst: 100,
            max_packet: 1514,
            shaping: DaemonShaping::None,
            delay_us: None,
        },
        Request::Open {
            dst_ip: DST,
            dst_port: 1,
            src_port: 0,
            rate_bps: 1,
            max_burst: 100,
            max_packet: 0,
            shaping: DaemonShaping::None,
            delay_us: None,
        },
        Request::Open {
            dst_ip: DST,
            dst_port: 0,
            src_port: 0,
            rate_bps: 1,
            max_burst: 100,
            max_packet: 64,
            shaping: DaemonShaping::None,
            delay_us: None,
        },
        Request::Open {
            dst_ip: Ipv4Addr::BROADCAST,
            dst_port: 1,
            src_port: 0,
            rate_bps: 1,
            max_burst: 100,
            max_packet: 64,
            shaping: DaemonShaping::None,
            delay_us: None,
        },
    ];
    for req in bad {
        d.handle_client_request(Instant::ZERO, ALICE, 2, req);
        let a = drain(&mut d);
        assert!(sent(&a).is_empty());
        assert!(
            matches!(
                replies(&a).as_slice(),
                [(
                    ALICE,
                    2,
                    Reply::Failed {
                        error: RtcdError::Malformed(_),
                        ..
                    }
                )]
            ),
            "{req:?}"
        );
    }
    assert_eq!(d.ids_in_use(), 0);
}

#[test]
fn closing_anothers_connection_refused() {
    let mut d = daemon();
    register(&mut d, ALICE, 100);
    register(&mut d, BOB, 200);
    let (conn, _) = open_ok(&mut d, Instant::ZERO, ALICE, 1_000);
    d.handle_client_request(ms(1), BOB, 3, Request::Close { conn });
    let a = drain(&mut d);
    assert_eq!(
        a,
        vec![Action::Reply {
            client: BOB,
            tag: 3,
            reply: Reply::Failed {
                conn: Some(conn),
                error: RtcdError::NotOwner
            }
        }]
    );
    d.handle_client_request(
        ms(1),
        BOB,
        4,
        Request::Close {
            conn: ConnHandle(999),
        },
    );
    assert!(matches!(
        replies(&drain(&mut d)).as_slice(),
        [(
            BOB,
            4,
            Reply::Failed {
                error: RtcdError::UnknownConnection,
                ..
            }
        )]
    ));
    assert_eq!(d.connection_count(), 1);
}

#[test]
fn a_client_lists_its_own_connections_and_all_lists_every_one_with_its_owner() {
    let mut d = daemon();
    register(&mut d, ALICE, 100);
    register(&mut d, BOB, 200);
    let (alices, _) = open_ok(&mut d, Instant::ZERO, ALICE, 1_000);
    let (bobs, _) = open_ok(&mut d, Instant::ZERO, BOB, 2_000);
    let listed = |d: &mut Rtcd, all: bool| -> Vec<(ConnHandle, Option<u32>)> {
        d.handle_client_request(ms(1), BOB, 9, Request::List { all });
        match replies(&drain(d)).as_slice() {
            [(BOB, 9, Reply::List(l))] => l.iter().map(|c| (c.conn, c.owner_pid)).collect(),
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(listed(&mut d, false), vec![(bobs, Some(200))]);
    let mut every = listed(&mut d, true);
    every.sort_by_key(|(c, _)| c.0);
    let mut want = vec![(alices, Some(100)), (bobs, Some(200))];
    want.sort_by_key(|(c, _)| c.0);
    assert_eq!(every, want);
}

#[test]
fn paper_mode_addresses_and_small_prefix_limits_ids() {
    let cfg = Config::paper(HOST_MAC, HOST_IP, 100_000_000);
    let mut d = started(cfg);
    register(&mut d, ALICE, 1);
    d.handle_client_request(Instant::ZERO, ALICE, 1, open_req(1));
    let setup = sent_paper(&drain(&mut d));
    d.handle_control(ms(1), &setup_ok(&setup));
    let r = replies(&drain(&mut d));
    let [(
        _,
        _,
        Reply::Opened {
            proxy_ip,
            proxy_mac,
            id,
            ..
        },
    )] = r.as_slice()
    else {
        panic!("{r:?}")
    };
    assert_eq!(*id, 0x000b);
    assert_eq!(*proxy_ip, Ipv4Addr::new(1, 1, 0, 0x0b));
    assert_eq!(
        *proxy_mac,
        Some(Address([0xff, 0xff, 0xff, 0xff, 0x00, 0x0b]))
    );

    // A /27 has hosts 1..=30: ids 16..=30, i.e. 15 connections (a host term roomy enough for
    // all their bursts, so only the ids run out).
    let mut cfg = Config::new(HOST_MAC, HOST_IP, 100_000_000);
    cfg.host_delay = Duration::from_secs(1);
    cfg.proxy_prefix = ProxyPrefix::new(Ipv4Addr::new(198, 19, 7, 9), 27).expect("valid prefix");
    let mut d = started(cfg);
    register(&mut d, ALICE, 1);
    for _ in 0..15 {
        d.handle_client_request(Instant::ZERO, ALICE, 1, open_req(1));
        assert_eq!(sent(&drain(&mut d)).len(), 1);
    }
    d.handle_client_request(Instant::ZERO, ALICE, 1, open_req(1));
    assert!(matches!(
        replies(&drain(&mut d)).as_slice(),
        [(
            _,
            _,
            Reply::Failed {
                error: RtcdError::IdsExhausted,
                ..
            }
        )]
    ));
    let mut cfg = Config::new(HOST_MAC, HOST_IP, 100_000_000);
    cfg.proxy_prefix = ProxyPrefix::new(Ipv4Addr::new(198, 19, 7, 9), 28).expect("valid prefix");
    assert!(matches!(
        Rtcd::new(cfg, Instant::ZERO),
        Err(RtcdError::Config(_))
    ));
}

fn sent_paper(actions: &[Action]) -> Repr {
    match actions {
        [Action::SendControl { dst, repr }] => {
            assert_eq!(*dst, ProxyMacPlan::paper().control_mac());
            repr.clone()
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn malformed_control_payload_rejected_and_teardown_from_switch_revokes() {
    let mut d = daemon();
    assert!(d
        .handle_control_payload(Instant::ZERO, &[0x52, 0x54, 9])
        .is_err());
    register(&mut d, ALICE, 1);
    let (conn, id) = open_ok(&mut d, Instant::ZERO, ALICE, 1);
    let mut teardown = Repr::new(1, 77, Message::Teardown { connection_id: id });
    teardown.set_tlv(TeardownReason::LinkDown.to_tlv());
    d.handle_control(ms(1), &teardown);
    let a = drain(&mut d);
    assert_eq!(
        sent(&a),
        vec![Repr::new(0, 77, Message::TeardownAck { connection_id: id })]
    );
    let revoked = Reply::Revoked {
        conn,
        reason: TeardownReason::LinkDown,
        error: None,
    };
    assert!(replies(&a).contains(&(ALICE, 0, revoked)));
    assert!(a.contains(&Action::RemoveRoute {
        prefix: ProxyPrefix::DEFAULT
    }));
    assert_eq!(d.connection_count(), 0);
    d.check_invariants();
}

#[test]
fn request_json_lines_map_onto_request() {
    let r: Request = serde_json::from_str(
        r#"{"op":"open","dst_ip":"198.18.0.2","dst_port":5004,"src_port":0,"rate_bps":1000000,"max_burst":3028,"max_packet":1514}"#,
    )
    .expect("valid JSON request");
    assert_eq!(
        r,
        Request::Open {
            dst_ip: DST,
            dst_port: 5004,
            src_port: 0,
            rate_bps: 1_000_000,
            max_burst: 3028,
            max_packet: 1514,
            shaping: DaemonShaping::None,
            delay_us: None,
        }
    );
    let c: Request =
        serde_json::from_str(r#"{"op":"close","conn":7}"#).expect("valid JSON request");
    assert_eq!(
        c,
        Request::Close {
            conn: ConnHandle(7)
        }
    );
    assert!(serde_json::from_str::<Request>(r#"{"op":"open","dst_ip":"x"}"#).is_err());
}

#[derive(Debug, Clone)]
enum Step {
    Register(u8, u32),
    Open(u8, u64, u16),
    Close(u8, u64),
    List(u8),
    /// Answer the n-th SETUP seen so far: 0 = OK, 1 = FAIL, 2 = dup OK.
    Answer(usize, u8),
    /// Ack the n-th TEARDOWN seen so far.
    Ack(usize),
    Advance(u64),
    Dead(u32),
    Gone(u8),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (0u8..3, 0u32..4).prop_map(|(c, p)| Step::Register(c, p)),
        (0u8..3, 0u64..40_000_000, 0u16..3000).prop_map(|(c, r, p)| Step::Open(c, r, p)),
        (0u8..3, 0u64..12).prop_map(|(c, h)| Step::Close(c, h)),
        (0u8..3).prop_map(Step::List),
        (0usize..20, 0u8..3).prop_map(|(n, k)| Step::Answer(n, k)),
        (0usize..20).prop_map(Step::Ack),
        (0u64..5_000).prop_map(Step::Advance),
        (0u32..4).prop_map(Step::Dead),
        (0u8..3).prop_map(Step::Gone),
    ]
}

proptest! {
    #[test]
    fn random_sequences_never_panic_nor_leak(steps in proptest::collection::vec(step(), 1..80)) {
        let mut d = daemon();
        let mut now = Instant::ZERO;
        let mut setups: Vec<Repr> = Vec::new();
        let mut teardowns: Vec<Repr> = Vec::new();
        for s in steps {
            match s {
                Step::Register(c, pid) => d.handle_client_request(now, ClientId(c.into()), 0, Request::Register { pid }),
                Step::Open(c, rate, packet) => d.handle_client_request(now, ClientId(c.into()), 0, Request::Open {
                    dst_ip: DST, dst_port: 1, src_port: 0, rate_bps: rate, max_burst: 2000, max_packet: packet,
                    shaping: DaemonShaping::None, delay_us: None }),
                Step::Close(c, h) => d.handle_client_request(now, ClientId(c.into()), 0, Request::Close { conn: ConnHandle(h) }),
                Step::List(c) => d.handle_client_request(now, ClientId(c.into()), 0, Request::List { all: false }),
                Step::Answer(n, kind) => if let Some(setup) = setups.get(n) {
                    let Message::Setup(s) = setup.message else { continue };
                    let reply = if kind == 1 {
                        Repr::new(1, setup.request_id, Message::SetupFail { reason: FailReason::Cpu, failed_hop: 1,
                            connection_id: s.connection_id, switch_ip: Ipv4Addr::LOCALHOST })
                    } else { setup_ok(setup) };
                    d.handle_control(now, &reply);
                    if kind == 2 { d.handle_control(now, &reply); }
                },
                Step::Ack(n) => if let Some(td) = teardowns.get(n) {
                    let Message::Teardown { connection_id } = td.message else { continue };
                    d.handle_control(now, &Repr::new(1, td.request_id, Message::TeardownAck { connection_id }));
                },
                Step::Advance(ms_) => {
                    now += Duration::from_millis(ms_);
                    while d.poll_timeout().is_some_and(|t| t <= now) { d.handle_timeout(now); }
                }
                Step::Dead(pid) => d.handle_dead_pids(now, &[pid]),
                Step::Gone(c) => d.handle_client_gone(now, ClientId(c.into())),
            }
            for a in drain(&mut d) {
                if let Action::SendControl { repr, .. } = a {
                    match repr.message {
                        Message::Setup(_) => setups.push(repr),
                        Message::Teardown { .. } => teardowns.push(repr),
                        _ => {}
                    }
                }
            }
            d.check_invariants();
            prop_assert!(d.reserved_bps() <= d.config().realtime_capacity());
        }
    }
}

mod central;
mod host_term;
mod rsvp;
mod soft_state;

#[test]
fn delay_requirement_goes_out_and_the_paths_bound_comes_back() {
    use rtlan_wire::control::{BoundTlv, DelayTlv};
    let mut d = daemon();
    register(&mut d, ALICE, 100);
    // Required 3 ms: the SETUP carries it, with the host's term (2 ms by default) as the latency
    // so far.
    d.handle_client_request(
        ms(1),
        ALICE,
        4,
        open_with(30_000_000, DaemonShaping::None, Some(3000)),
    );
    let setup = sent(&drain(&mut d)).pop().expect("SETUP sent");
    assert_eq!(
        setup.delay(),
        Ok(Some(DelayTlv {
            required_ns: 3_000_000,
            accumulated_ns: 2_000_000
        }))
    );
    // The last switch's bound, 2,345,001 ns, reaches the client rounded up to whole µs.
    let mut ok = setup_ok(&setup);
    ok.set_tlv(
        BoundTlv {
            bound_ns: 2_345_001,
            latency_ns: 1_800_000,
        }
        .to_tlv(),
    );
    d.handle_control(ms(2), &ok);
    match replies(&drain(&mut d)).pop() {
        Some((ALICE, 4, Reply::Opened { delay_bound_us, .. })) => {
            assert_eq!(delay_bound_us, Some(2346));
        }
        other => panic!("expected Opened, got {other:?}"),
    }
    d.handle_client_request(ms(3), ALICE, 5, Request::List { all: false });
    match replies(&drain(&mut d)).pop() {
        Some((ALICE, 5, Reply::List(list))) => assert_eq!(list[0].delay_bound_us, Some(2346)),
        other => panic!("expected List, got {other:?}"),
    }

    // Without a requirement the SETUP still asks for the bound (required 0); a refusal for
    // delay names the hop and the reason.
    d.handle_client_request(
        ms(4),
        ALICE,
        6,
        open_with(1_000_000, DaemonShaping::None, None),
    );
    let setup = sent(&drain(&mut d)).pop().expect("SETUP sent");
    assert_eq!(setup.delay().unwrap().unwrap().required_ns, 0);
    let Message::Setup(s) = setup.message else {
        panic!("not a SETUP")
    };
    let fail = Repr::new(
        1,
        setup.request_id,
        Message::SetupFail {
            reason: FailReason::Delay,
            failed_hop: 3,
            connection_id: s.connection_id,
            switch_ip: Ipv4Addr::new(198, 18, 255, 3),
        },
    );
    d.handle_control(ms(5), &fail);
    match replies(&drain(&mut d)).pop() {
        Some((ALICE, 6, Reply::Failed { error, .. })) => {
            assert_eq!(
                error,
                RtcdError::Refused {
                    hop: 3,
                    reason: FailReason::Delay,
                    switch_ip: Ipv4Addr::new(198, 18, 255, 3)
                }
            );
            let text = error.to_string();
            assert!(text.contains("hop 3") && text.contains("delay"), "{text}");
        }
        other => panic!("expected Failed, got {other:?}"),
    }
}
