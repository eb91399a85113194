//! `signalling = "rsvp"`: the sender's daemon opens with Path and answers when the receiver's
//! daemon's Resv comes back; close sends PathTear; no receiver means a clear failure.

use std::net::Ipv4Addr;

use rtlan_wire::rsvp::{Message, Packet, Repr};

use super::*;

const A: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 1);
const B: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 2);

/// A daemon signalling with RSVP, started at 0: it sends no HELLO (no switch to greet).
fn rsvp_daemon(ip: Ipv4Addr) -> Rtcd {
    rsvp_daemon_with(Config {
        signalling: Signalling::Rsvp,
        ..Config::new(HOST_MAC, ip, 100_000_000)
    })
}

fn rsvp_daemon_with(config: Config) -> Rtcd {
    let mut d = Rtcd::new(config, Instant::ZERO).expect("valid config");
    assert_eq!(drain(&mut d), vec![], "no HELLO under RSVP");
    d
}

/// The RSVP messages among `actions`: (destination, Router Alert, decoded).
fn rsvp_sent(actions: &[Action]) -> Vec<(Ipv4Addr, bool, Message)> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::SendRsvp {
                dst,
                router_alert,
                message,
                ..
            } => {
                let repr = Repr::parse(&Packet::new_checked(&message[..]).unwrap()).unwrap();
                Some((*dst, *router_alert, Message::from_repr(&repr).unwrap()))
            }
            _ => None,
        })
        .collect()
}

/// Delivers every RSVP message of `actions` to `to` (as if from `from`), returning `to`'s
/// actions.
fn deliver(actions: &[Action], from: Ipv4Addr, to: &mut Rtcd, now: Instant) -> Vec<Action> {
    for a in actions {
        if let Action::SendRsvp { message, ttl, .. } = a {
            to.handle_rsvp(now, from, *ttl, message).expect("parses");
        }
    }
    drain(to)
}

#[test]
fn an_open_sends_path_and_opens_when_the_receivers_resv_comes_back() {
    let mut a = rsvp_daemon(A);
    let mut b = rsvp_daemon(B);
    register(&mut a, ALICE, 10);
    let open = Request::Open {
        dst_ip: B,
        dst_port: 5004,
        src_port: 4000,
        rate_bps: 10_000_000,
        max_burst: 3028,
        max_packet: 1514,
        shaping: DaemonShaping::None,
        delay_us: None,
    };
    a.handle_client_request(ms(1), ALICE, 7, open);
    let out = drain(&mut a);
    let sent = rsvp_sent(&out);
    assert_eq!(sent.len(), 1, "{out:?}");
    let (dst, alert, Message::Path(path)) = &sent[0] else {
        panic!("a Path: {sent:?}")
    };
    assert_eq!((*dst, *alert), (B, true));
    assert_eq!(path.session.dst_port, 5004);
    assert_eq!(path.sender.sender_template.src_port, 4000);
    // 10 Mbit/s of 1514-byte frames on the wire: 1500 of every 1538 bytes are IP.
    let r = path.sender.sender_tspec.rate.to_f32();
    assert!((r - 1_250_000.0 * 1500.0 / 1538.0).abs() < 1.0, "{r}");
    assert!(
        !out.iter().any(|a| matches!(a, Action::Reply { .. })),
        "not open yet"
    );

    // b reserves for the sender it hears of, a opens.
    let back = deliver(&out, A, &mut b, ms(2));
    let resv = rsvp_sent(&back);
    assert!(
        matches!(resv.as_slice(), [(dst, false, Message::Resv(_))] if *dst == A),
        "{resv:?}"
    );
    let replies = deliver(&back, B, &mut a, ms(3));
    let opened = replies.iter().find_map(|x| match x {
        Action::Reply {
            tag: 7,
            reply:
                Reply::Opened {
                    conn,
                    proxy_ip,
                    proxy_mac,
                    ..
                },
            ..
        } => Some((*conn, *proxy_ip, *proxy_mac)),
        _ => None,
    });
    let Some((conn, proxy_ip, proxy_mac)) = opened else {
        panic!("{replies:?}")
    };
    assert_eq!((proxy_ip, proxy_mac), (B, None), "direct to the receiver");
    a.check_invariants();

    // Close: PathTear to b, which forgets the sender.
    a.handle_client_request(ms(4), ALICE, 8, Request::Close { conn });
    let out = drain(&mut a);
    assert!(rsvp_sent(&out)
        .iter()
        .any(|(_, alert, m)| *alert && matches!(m, Message::PathTear(_))));
    deliver(&out, A, &mut b, ms(5));
    assert_eq!(b.rsvp_stats().map(|s| s.paths), Some(0));
    assert_eq!(a.connection_count(), 0);
    a.check_invariants();
}

#[test]
fn without_a_receiver_daemon_the_open_fails_with_a_clear_error() {
    let mut a = rsvp_daemon(A);
    register(&mut a, ALICE, 10);
    a.handle_client_request(ms(1), ALICE, 7, open_req(10_000_000));
    drain(&mut a);
    let at = ms(1) + crate::rtcd::RSVP_OPEN_TIMEOUT;
    assert!(a.poll_timeout().unwrap() <= at);
    a.handle_timeout(at);
    let out = drain(&mut a);
    let failed = out.iter().find_map(|x| match x {
        Action::Reply {
            tag: 7,
            reply: Reply::Failed { error, .. },
            ..
        } => Some(error.clone()),
        _ => None,
    });
    let Some(RtcdError::Rsvp(text)) = failed else {
        panic!("{out:?}")
    };
    assert!(text.contains("no reservation from 198.18.0.2"), "{text}");
    // The Path goes with it.
    assert!(rsvp_sent(&out)
        .iter()
        .any(|(_, _, m)| matches!(m, Message::PathTear(_))));
    assert_eq!(a.connection_count(), 0);
    a.check_invariants();
}

#[test]
fn a_receiver_that_does_not_accept_reserves_nothing() {
    let mut a = rsvp_daemon(A);
    let mut b = rsvp_daemon_with(Config {
        signalling: Signalling::Rsvp,
        rsvp_accept: false,
        ..Config::new(HOST_MAC, B, 100_000_000)
    });
    register(&mut a, ALICE, 10);
    a.handle_client_request(ms(1), ALICE, 7, open_req(10_000_000));
    let out = drain(&mut a);
    let back = deliver(&out, A, &mut b, ms(2));
    assert!(rsvp_sent(&back).is_empty());
}
