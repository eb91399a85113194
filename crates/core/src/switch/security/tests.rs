//! Port roles and authenticated signalling on one switch driven by hand on virtual time.

use std::time::Duration;

use rtlan_wire::control::auth as wire_auth;
use rtlan_wire::control::{
    DelayTlv, EpochTlv, HelloRepr, Message, Packet, ProxyMacPlan, Repr, Role, SetupRepr,
    FLAG_RETRANSMISSION,
};

use super::super::control::CONTROL_FRAME_MAX;
use super::super::tests::*;
use super::*;
use crate::auth::{AuthStats, Key};

const PLAN: ProxyMacPlan = ProxyMacPlan::DEFAULT;

fn secs(s: u64) -> Instant {
    Instant::ZERO + Duration::from_secs(s)
}

fn keys(list: Vec<Key>) -> KeyChain {
    KeyChain::new(list).expect("valid chain")
}

fn windowed(id: u32, secret: &[u8], from: Option<u64>, to: Option<u64>) -> Key {
    Key {
        not_before: from.map(Duration::from_secs),
        not_after: to.map(Duration::from_secs),
        ..Key::new(id, secret)
    }
}

/// A 2-port switch whose port 0 has `security`, B's address known behind port 1 (a host-facing
/// port, so the switch is the last hop and answers a SETUP itself).
fn switch_with(security: PortSecurity) -> Switch {
    let mut cfg = config(2);
    cfg.ports[0].security = security;
    cfg.rt.auth_seq_base = 5_000;
    let mut sw = Switch::new(cfg, Instant::ZERO).expect("valid");
    let garp = arp_frame(Address::BROADCAST, B, 1, B, IP_B, Address([0; 6]), IP_B);
    sw.handle_frame(ms(0), PortId(1), &garp);
    drain_all(&mut sw, ms(0));
    sw
}

fn setup(request_id: u32, id: u16) -> Repr {
    Repr::new(
        0,
        request_id,
        Message::Setup(SetupRepr {
            src_ip: IP_A,
            dst_ip: IP_B,
            dst_port: 5004,
            src_port: 0,
            rate: 1_000_000,
            max_burst: 3028,
            max_packet: 1514,
            connection_id: id,
            hop_limit: 16,
        }),
    )
}

/// `repr` as a control frame from `src`, signed by `auth` at `now` when given.
fn frame(src: Address, repr: &Repr, auth: Option<(&mut Authenticator, Instant)>) -> Vec<u8> {
    let mut repr = repr.clone();
    if let Some((auth, now)) = auth {
        auth.sign(now, &mut repr, src).expect("a key is valid");
    }
    let mut buf = vec![0u8; 256];
    let len = repr
        .emit_frame(src, PLAN.control_mac(), &mut buf)
        .expect("fits");
    buf.truncate(len.max(60));
    buf
}

/// The control messages `sw` sends on port 0 at `now`, with their payloads.
fn sent(sw: &mut Switch, now: Instant) -> Vec<(Repr, Vec<u8>)> {
    drain(sw, now, 0)
        .into_iter()
        .filter_map(|f| {
            let payload = f.get(14..)?.to_vec();
            let repr = Packet::new_checked(&payload[..])
                .and_then(|p| Repr::parse(&p))
                .ok()?;
            Some((repr, payload))
        })
        .collect()
}

#[test]
fn a_keyed_port_refuses_forged_setups_and_accepts_a_signed_one() {
    let link = keys(vec![Key::new(1, "link-a")]);
    let mut sw = switch_with(PortSecurity {
        role: PortRole::Host,
        keys: link.clone(),
    });
    let mut host = Authenticator::new(link.clone(), Instant::ZERO, 100);
    // No AUTH TLV.
    sw.handle_frame(ms(1), PortId(0), &frame(A, &setup(1, 0x0310), None));
    // Right key id, wrong secret.
    let mut forger = Authenticator::new(keys(vec![Key::new(1, "guess")]), Instant::ZERO, 100);
    sw.handle_frame(
        ms(1),
        PortId(0),
        &frame(A, &setup(2, 0x0310), Some((&mut forger, ms(1)))),
    );
    // A key id the port does not have.
    let mut stranger = Authenticator::new(keys(vec![Key::new(2, "link-a")]), Instant::ZERO, 100);
    sw.handle_frame(
        ms(1),
        PortId(0),
        &frame(A, &setup(3, 0x0310), Some((&mut stranger, ms(1)))),
    );
    // Signed by A's key, but sent by another station.
    let stolen = frame(A, &setup(4, 0x0310), Some((&mut host.clone(), ms(1))));
    let mut from_c = stolen.clone();
    from_c[6..12].copy_from_slice(&C.0);
    sw.handle_frame(ms(1), PortId(0), &from_c);
    assert!(sent(&mut sw, ms(1)).is_empty());
    assert_eq!(sw.stats().signal.setup_rx, 0);
    let s = sw.stats().auth;
    assert_eq!((s.unsigned_dropped, s.bad_digest, s.unknown_key), (1, 2, 1));

    // The real one is admitted and answered with a signed SETUP_OK.
    let good = frame(A, &setup(5, 0x0310), Some((&mut host, ms(2))));
    sw.handle_frame(ms(2), PortId(0), &good);
    let out = sent(&mut sw, ms(2));
    let [(ok, bytes)] = &out[..] else {
        panic!("expected one answer, got {out:?}");
    };
    assert!(matches!(ok.message, Message::SetupOk { .. }), "{ok}");
    let mut host_rx = Authenticator::new(link, Instant::ZERO, 0);
    assert_eq!(host_rx.verify(ms(2), bytes, port_mac(0)), Ok(()));
    assert_eq!(wire_auth::signature(bytes).map(|a| a.seq), Ok(5_000));
    assert_eq!(sw.connections().len(), 1);

    // The same frame again is a replay: dropped, not answered from the stored reply.
    sw.handle_frame(ms(3), PortId(0), &good);
    assert!(sent(&mut sw, ms(3)).is_empty());
    assert_eq!(sw.stats().auth.replayed, 1);
    // A genuine retransmission (fresh sequence number) gets the stored answer, freshly signed.
    let mut again = setup(5, 0x0310);
    again.flags = FLAG_RETRANSMISSION;
    sw.handle_frame(
        ms(4),
        PortId(0),
        &frame(A, &again, Some((&mut host, ms(4)))),
    );
    let out = sent(&mut sw, ms(4));
    assert_eq!(out.len(), 1);
    assert_eq!(host_rx.verify(ms(4), &out[0].1, port_mac(0)), Ok(()));
    assert_eq!(wire_auth::signature(&out[0].1).map(|a| a.seq), Ok(5_001));
    assert_eq!(sw.stats().signal.setup_duplicates, 1);
    let s = sw.stats();
    assert_eq!((s.auth.verified, s.auth.signed), (2, 2));
    // Every control frame lands in exactly one of control_rx and drop_control.
    assert_eq!((s.drop_control, s.control_rx), (5, 2));
}

#[test]
fn rotation_old_key_until_its_end_new_messages_with_the_new_key() {
    let link = keys(vec![
        windowed(1, b"old-key", None, Some(100)),
        windowed(2, b"new-key", Some(60), None),
    ]);
    let mut sw = switch_with(PortSecurity {
        role: PortRole::Auto,
        keys: link.clone(),
    });
    let mut host = Authenticator::new(link.clone(), Instant::ZERO, 1);
    let mut host_rx = Authenticator::new(link, Instant::ZERO, 0);
    // Signed at 50 s with key 1, arriving at 90 s (inside the overlap): accepted, and answered
    // with key 2, the newest valid one.
    let old = frame(A, &setup(1, 0x0310), Some((&mut host, secs(50))));
    assert_eq!(wire_auth::signature(&old[14..]).map(|a| a.key_id), Ok(1));
    sw.handle_frame(secs(90), PortId(0), &old);
    let out = sent(&mut sw, secs(90));
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(wire_auth::signature(&out[0].1).map(|a| a.key_id), Ok(2));
    assert_eq!(host_rx.verify(secs(90), &out[0].1, port_mac(0)), Ok(()));
    // Once key 1 has expired it is refused, however fresh its sequence number.
    let mut stale = Authenticator::new(keys(vec![Key::new(1, "old-key")]), Instant::ZERO, 1_000);
    let late = frame(A, &setup(2, 0x0311), Some((&mut stale, secs(100))));
    sw.handle_frame(secs(100), PortId(0), &late);
    assert!(sent(&mut sw, secs(100)).is_empty());
    assert_eq!(sw.stats().auth.unknown_key, 1);
    // The host, at 100 s, signs with key 2 and is accepted.
    let new = frame(A, &setup(3, 0x0311), Some((&mut host, secs(100))));
    assert_eq!(wire_auth::signature(&new[14..]).map(|a| a.key_id), Ok(2));
    sw.handle_frame(secs(100), PortId(0), &new);
    assert_eq!(sent(&mut sw, secs(100)).len(), 1);
}

fn switch_hello() -> Repr {
    Repr::new(
        1,
        7,
        Message::Hello(HelloRepr {
            role: Role::Switch,
            port: 3,
            mac: C,
            management_ip: MGMT_IP,
        }),
    )
}

#[test]
fn a_host_port_refuses_what_only_a_switch_sends() {
    let mut sw = switch_with(PortSecurity {
        role: PortRole::Host,
        keys: KeyChain::default(),
    });
    sw.handle_frame(ms(1), PortId(0), &frame(C, &switch_hello(), None));
    assert!(!sw.is_switch_facing(PortId(0), ms(1)));
    // A SETUP claiming to come from a switch (hop 1), and replies a host never writes.
    let mut relayed = setup(1, 0x0310);
    relayed.hop = 1;
    sw.handle_frame(ms(1), PortId(0), &frame(A, &relayed, None));
    let ok = Repr::new(
        0,
        1,
        Message::SetupOk {
            connection_id: 0x0310,
            hops: 1,
        },
    );
    sw.handle_frame(ms(1), PortId(0), &frame(A, &ok, None));
    let ack = Repr::new(0, 1, Message::RefreshAck { connection_id: 9 });
    sw.handle_frame(ms(1), PortId(0), &frame(A, &ack, None));
    assert!(sent(&mut sw, ms(1)).is_empty());
    let s = sw.stats();
    assert_eq!(
        (s.control_refused_role, s.signal.setup_rx, s.signal.hello_rx),
        (4, 0, 0)
    );
    // What a host daemon sends passes: a host HELLO and a SETUP at hop 0.
    let host_hello = Repr::new(
        0,
        1,
        Message::Hello(HelloRepr {
            role: Role::HostDaemon,
            port: 0,
            mac: A,
            management_ip: IP_A,
        }),
    );
    sw.handle_frame(ms(2), PortId(0), &frame(A, &host_hello, None));
    sw.handle_frame(ms(2), PortId(0), &frame(A, &setup(2, 0x0310), None));
    assert_eq!(sent(&mut sw, ms(2)).len(), 1);
    assert_eq!(sw.stats().control_refused_role, 4);
    assert_eq!(sw.stats().auth, AuthStats::default());
    assert_eq!((sw.stats().drop_control, sw.stats().control_rx), (4, 2));

    // A trunk (or auto) port takes the switch HELLO.
    for role in [PortRole::Trunk, PortRole::Auto] {
        let mut sw = switch_with(PortSecurity {
            role,
            keys: KeyChain::default(),
        });
        sw.handle_frame(ms(1), PortId(0), &frame(C, &switch_hello(), None));
        assert!(sw.is_switch_facing(PortId(0), ms(1)), "{role:?}");
        assert_eq!(sw.stats().control_refused_role, 0);
    }
}

#[test]
fn the_largest_signed_message_fits_a_control_frame() {
    let mut repr = setup(u32::MAX, 0xffff);
    repr.hop = u8::MAX;
    repr.set_tlv(
        DelayTlv {
            required_ns: u64::MAX,
            accumulated_ns: u64::MAX,
        }
        .to_tlv(),
    );
    repr.set_tlv(EpochTlv(u64::MAX).to_tlv());
    let mut auth = Authenticator::new(keys(vec![Key::new(1, "k")]), Instant::ZERO, 0);
    auth.sign(ms(0), &mut repr, A).expect("key valid");
    let mut buf = [0u8; CONTROL_FRAME_MAX];
    let len = repr
        .emit_frame(A, PLAN.control_mac(), &mut buf)
        .expect("a signed SETUP with DELAY fits");
    assert_eq!(len, 14 + 12 + 30 + 18 + 10 + 30);
}

/// A(host, key H) — port 0 [S1] port 1 —(trunk, key T)— port 0 [S2] port 1 — B: the SETUP and
/// its SETUP_OK are re-signed on every link with that link's key.
#[test]
fn each_link_signs_with_its_own_key() {
    let host_key = keys(vec![Key::new(1, "host-link-key")]);
    let trunk_key = keys(vec![Key::new(7, "trunk-link-key")]);
    let mut cfg1 = config(2);
    cfg1.ports[0].security = PortSecurity {
        role: PortRole::Host,
        keys: host_key.clone(),
    };
    cfg1.ports[1].security = PortSecurity {
        role: PortRole::Trunk,
        keys: trunk_key.clone(),
    };
    let mut s1 = Switch::new(cfg1, Instant::ZERO).expect("valid");
    let mut cfg2 = config(2);
    cfg2.ports[0].security = PortSecurity {
        role: PortRole::Trunk,
        keys: trunk_key.clone(),
    };
    let s2_port0 = Address([0x02, 0x5e, 0, 2, 1, 0]);
    cfg2.ports[0].mac = s2_port0;
    cfg2.mac = Address([0x02, 0x5e, 0, 2, 0, 0xfe]);
    let mut s2 = Switch::new(cfg2, Instant::ZERO).expect("valid");
    // S2 announces itself to S1 (signed with the trunk key); B is behind S1's port 1 and S2's
    // port 1.
    let mut s2_side = Authenticator::new(trunk_key.clone(), Instant::ZERO, 1);
    let hello = Repr::new(
        1,
        1,
        Message::Hello(HelloRepr {
            role: Role::Switch,
            port: 0,
            mac: s2_port0,
            management_ip: MGMT_IP,
        }),
    );
    s1.handle_frame(
        ms(0),
        PortId(1),
        &frame(s2_port0, &hello, Some((&mut s2_side, ms(0)))),
    );
    assert!(s1.is_switch_facing(PortId(1), ms(0)));
    let garp = arp_frame(Address::BROADCAST, B, 1, B, IP_B, Address([0; 6]), IP_B);
    s1.handle_frame(ms(0), PortId(1), &garp);
    s2.handle_frame(ms(0), PortId(1), &garp);
    drain_all(&mut s1, ms(0));
    drain_all(&mut s2, ms(0));

    let mut host = Authenticator::new(host_key.clone(), Instant::ZERO, 10);
    s1.handle_frame(
        ms(1),
        PortId(0),
        &frame(A, &setup(1, 0x0310), Some((&mut host, ms(1)))),
    );
    let down = drain(&mut s1, ms(1), 1);
    assert_eq!(down.len(), 1);
    assert_eq!(
        wire_auth::signature(&down[0][14..]).map(|a| a.key_id),
        Ok(7)
    );
    s2.handle_frame(ms(1), PortId(0), &down[0]);
    let up = drain(&mut s2, ms(1), 0);
    assert_eq!(up.len(), 1);
    assert_eq!(wire_auth::signature(&up[0][14..]).map(|a| a.key_id), Ok(7));
    s1.handle_frame(ms(2), PortId(1), &up[0]);
    let out = sent(&mut s1, ms(2));
    let [(ok, bytes)] = &out[..] else {
        panic!("expected SETUP_OK, got {out:?}");
    };
    assert!(
        matches!(ok.message, Message::SetupOk { hops: 2, .. }),
        "{ok}"
    );
    let mut host_rx = Authenticator::new(host_key, Instant::ZERO, 0);
    assert_eq!(host_rx.verify(ms(2), bytes, port_mac(0)), Ok(()));
    assert_eq!(s1.stats().auth.verified, 3);
    assert_eq!(s2.stats().auth.verified, 1);
    // A frame from the host link replayed onto the trunk does not verify there.
    s2.handle_frame(
        ms(3),
        PortId(0),
        &frame(A, &setup(2, 0x0311), Some((&mut host, ms(3)))),
    );
    assert_eq!(s2.stats().auth.unknown_key, 1);
}
