//! The daemon signs what it sends and refuses what does not verify, when it has keys.

use std::net::Ipv4Addr;

use rtlan_wire::control::{Message, Packet, ProxyMacPlan, Repr};
use rtlan_wire::ethernet::Address;

use super::super::super::api::{Action, ClientId, DaemonShaping, Reply, Request};
use super::super::super::Config;
use super::*;
use crate::auth::{Key, KeyChain};

const HOST_MAC: Address = Address([0x02, 0, 0, 0, 0, 1]);
const SWITCH_PORT: Address = Address([0x02, 0x5e, 0, 0, 1, 0]);
const CLIENT: ClientId = ClientId(1);

fn ms(n: u64) -> Instant {
    Instant::from_nanos(n * 1_000_000)
}

fn link() -> KeyChain {
    KeyChain::new(vec![Key::new(4, "host-link-key")]).expect("valid")
}

fn daemon(keys: KeyChain) -> Rtcd {
    let config = Config {
        keys,
        auth_seq_base: 1_700_000_000_000_000_000,
        ..Config::new(HOST_MAC, Ipv4Addr::new(198, 18, 0, 1), 100_000_000)
    };
    Rtcd::new(config, Instant::ZERO).expect("valid config")
}

fn drain(d: &mut Rtcd) -> Vec<Action> {
    std::iter::from_fn(|| d.poll_action()).collect()
}

fn emit(repr: &Repr) -> Vec<u8> {
    let mut buf = vec![0u8; repr.buffer_len()];
    repr.emit(&mut Packet::new_unchecked(&mut buf[..]))
        .expect("sized");
    buf
}

/// Registers a client and asks for a connection; returns the SETUP sent.
fn open(d: &mut Rtcd) -> Repr {
    d.handle_client_request(ms(0), CLIENT, 0, Request::Register { pid: 42 });
    d.handle_client_request(
        ms(0),
        CLIENT,
        7,
        Request::Open {
            dst_ip: Ipv4Addr::new(198, 18, 0, 2),
            dst_port: 5004,
            src_port: 0,
            rate_bps: 1_000_000,
            max_burst: 3028,
            max_packet: 1514,
            shaping: DaemonShaping::None,
            delay_us: None,
        },
    );
    // (The daemon's HELLO at start goes first.)
    let mut setups = drain(d).into_iter().filter_map(|a| match a {
        Action::SendControl { dst, repr } if matches!(repr.message, Message::Setup(_)) => {
            assert_eq!(dst, ProxyMacPlan::DEFAULT.control_mac());
            Some(repr)
        }
        _ => None,
    });
    setups.next().expect("SETUP sent")
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
            hops: 1,
        },
    )
}

fn opened(d: &mut Rtcd) -> bool {
    drain(d).iter().any(|a| {
        matches!(
            a,
            Action::Reply {
                reply: Reply::Opened { .. },
                ..
            }
        )
    })
}

#[test]
fn with_keys_the_daemon_signs_and_accepts_only_what_verifies() {
    let mut d = daemon(link());
    let setup = open(&mut d);
    // The SETUP is signed with the link key as sent by the host's MAC.
    let mut switch = Authenticator::new(link(), Instant::ZERO, 9);
    assert_eq!(switch.verify(ms(0), &emit(&setup), HOST_MAC), Ok(()));
    // The HELLO at start and the SETUP.
    assert_eq!(d.auth_stats().signed, 2);

    // An unsigned answer, or one signed with another key, is refused and changes nothing.
    let answer = setup_ok(&setup);
    assert!(d
        .handle_control_frame(ms(1), SWITCH_PORT, &emit(&answer))
        .is_err());
    assert!(d.handle_control_payload(ms(1), &emit(&answer)).is_err());
    let mut forger = Authenticator::new(
        KeyChain::new(vec![Key::new(4, "guess")]).expect("valid"),
        Instant::ZERO,
        9,
    );
    let mut forged = answer.clone();
    forger.sign(ms(1), &mut forged, SWITCH_PORT).expect("key");
    assert!(d
        .handle_control_frame(ms(1), SWITCH_PORT, &emit(&forged))
        .is_err());
    assert!(!opened(&mut d));

    // The switch's signed answer opens the connection; its replay is refused.
    let mut signed = answer;
    switch.sign(ms(2), &mut signed, SWITCH_PORT).expect("key");
    let bytes = emit(&signed);
    assert_eq!(d.handle_control_frame(ms(2), SWITCH_PORT, &bytes), Ok(()));
    assert!(opened(&mut d));
    assert!(d.handle_control_frame(ms(3), SWITCH_PORT, &bytes).is_err());
    let s = d.auth_stats();
    assert_eq!(
        (s.unsigned_dropped, s.bad_digest, s.replayed, s.verified),
        (1, 1, 1, 1)
    );
}

#[test]
fn without_keys_nothing_changes() {
    let mut d = daemon(KeyChain::default());
    let setup = open(&mut d);
    assert!(setup.tlvs.iter().all(|t| t.kind != 1));
    assert_eq!(setup.flags, 0);
    let answer = emit(&setup_ok(&setup));
    assert_eq!(d.handle_control_frame(ms(1), SWITCH_PORT, &answer), Ok(()));
    assert!(opened(&mut d));
    assert_eq!(*d.auth_stats(), AuthStats::default());
}
