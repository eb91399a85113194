//! Annotated byte vectors (identical to the hex examples in `docs/protocol.md` §5), round trips
//! and bad input for the control protocol.

use std::net::Ipv4Addr;

use proptest::prelude::*;

use super::*;
use crate::ethernet::{self, Address, EtherType, Frame};

const CONN: u16 = 0x0309;

/// SETUP from the host daemon: 198.18.0.1 → 198.18.0.32:5004, 50 Mbit/s, burst 15140 B,
/// max frame 1514 B, connection id 03:09 on the host's link.
const SETUP: [u8; 42] = [
    0x52, 0x54, // magic "RT"
    0x01, // version 1
    0x01, // type SETUP
    0x00, // flags
    0x00, // hop 0 (host daemon)
    0x00, 0x2a, // length 42
    0x00, 0x00, 0x00, 0x01, // request id 1
    0xc6, 0x12, 0x00, 0x01, // source IP 198.18.0.1
    0xc6, 0x12, 0x00, 0x20, // destination IP 198.18.0.32
    0x13, 0x8c, // destination UDP port 5004
    0x00, 0x00, // source UDP port: any
    0x00, 0x00, 0x00, 0x00, 0x02, 0xfa, 0xf0, 0x80, // rate 50 000 000 bit/s
    0x00, 0x00, 0x3b, 0x24, // max burst 15140 bytes
    0x05, 0xea, // max packet 1514 bytes
    0x03, 0x09, // connection id 03:09
    0x10, // hop limit 16
    0x00, // reserved
];

/// SETUP_OK relayed by the first switch to the host: connection 03:09, two switches on the path.
const SETUP_OK: [u8; 16] = [
    0x52, 0x54, 0x01, // magic, version
    0x02, // type SETUP_OK
    0x00, // flags
    0x01, // hop 1
    0x00, 0x10, // length 16
    0x00, 0x00, 0x00, 0x01, // request id 1 (echo)
    0x03, 0x09, // connection id
    0x02, // hops on the path
    0x00, // reserved
];

/// SETUP_FAIL relayed by the first switch: the second switch (198.18.255.2) lacked bandwidth.
const SETUP_FAIL: [u8; 20] = [
    0x52, 0x54, 0x01, // magic, version
    0x03, // type SETUP_FAIL
    0x00, // flags
    0x01, // hop 1
    0x00, 0x14, // length 20
    0x00, 0x00, 0x00, 0x01, // request id 1 (echo)
    0x01, // reason: bandwidth
    0x02, // failed hop 2
    0x03, 0x09, // connection id
    0xc6, 0x12, 0xff, 0x02, // refusing switch 198.18.255.2
];

/// TEARDOWN from the host daemon, second transmission.
const TEARDOWN: [u8; 16] = [
    0x52, 0x54, 0x01, // magic, version
    0x04, // type TEARDOWN
    0x01, // flags: retransmission
    0x00, // hop 0
    0x00, 0x10, // length 16
    0x00, 0x00, 0x00, 0x02, // request id 2
    0x03, 0x09, // connection id
    0x00, 0x00, // reserved
];

/// TEARDOWN_ACK from the first switch.
const TEARDOWN_ACK: [u8; 16] = [
    0x52, 0x54, 0x01, 0x05, 0x00, 0x01, 0x00, 0x10, 0x00, 0x00, 0x00, 0x02, // header
    0x03, 0x09, 0x00, 0x00, // connection id, reserved
];

/// HELLO from a switch's port 3.
const HELLO: [u8; 26] = [
    0x52, 0x54, 0x01, // magic, version
    0x06, // type HELLO
    0x00, // flags
    0x01, // hop 1
    0x00, 0x1a, // length 26
    0x00, 0x00, 0x00, 0x07, // request id 7 (sequence number)
    0x02, // role: switch
    0x00, // reserved
    0x00, 0x03, // port 3
    0x02, 0x00, 0x00, 0x00, 0x01, 0x03, // MAC 02:00:00:00:01:03
    0xc6, 0x12, 0xff, 0x01, // management IP 198.18.255.1
];

/// REFRESH from the host daemon.
const REFRESH: [u8; 16] = [
    0x52, 0x54, 0x01, 0x07, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x03, // header
    0x03, 0x09, 0x00, 0x00, // connection id, reserved
];

/// REFRESH_ACK from the first switch.
const REFRESH_ACK: [u8; 16] = [
    0x52, 0x54, 0x01, 0x08, 0x00, 0x01, 0x00, 0x10, 0x00, 0x00, 0x00, 0x03, // header
    0x03, 0x09, 0x00, 0x00, // connection id, reserved
];

/// REFRESH with an unknown TLV (type 0x7f, "abc") and an authentication TLV, then 2 bytes of
/// Ethernet padding that the length excludes.
const REFRESH_TLVS: [u8; 29] = [
    0x52, 0x54, 0x01, 0x07, // magic, version, REFRESH
    0x02, // flags: authenticated
    0x00, // hop 0
    0x00, 0x1b, // length 27
    0x00, 0x00, 0x00, 0x03, // request id 3
    0x03, 0x09, 0x00, 0x00, // connection id, reserved
    0x7f, 0x03, 0x61, 0x62, 0x63, // TLV 0x7f, length 3, "abc"
    0x01, 0x04, 0xde, 0xad, 0xbe, 0xef, // TLV AUTH, length 4
    0x00, 0x00, // padding
];

fn setup_repr() -> SetupRepr {
    SetupRepr {
        src_ip: Ipv4Addr::new(198, 18, 0, 1),
        dst_ip: Ipv4Addr::new(198, 18, 0, 32),
        dst_port: 5004,
        src_port: 0,
        rate: 50_000_000,
        max_burst: 15140,
        max_packet: 1514,
        connection_id: CONN,
        hop_limit: 16,
    }
}

fn examples() -> Vec<(&'static [u8], Repr)> {
    let mut teardown = Repr::new(
        0,
        2,
        Message::Teardown {
            connection_id: CONN,
        },
    );
    teardown.flags = FLAG_RETRANSMISSION;
    vec![
        (&SETUP[..], Repr::new(0, 1, Message::Setup(setup_repr()))),
        (
            &SETUP_OK[..],
            Repr::new(
                1,
                1,
                Message::SetupOk {
                    connection_id: CONN,
                    hops: 2,
                },
            ),
        ),
        (
            &SETUP_FAIL[..],
            Repr::new(
                1,
                1,
                Message::SetupFail {
                    reason: FailReason::Bandwidth,
                    failed_hop: 2,
                    connection_id: CONN,
                    switch_ip: Ipv4Addr::new(198, 18, 255, 2),
                },
            ),
        ),
        (&TEARDOWN[..], teardown),
        (
            &TEARDOWN_ACK[..],
            Repr::new(
                1,
                2,
                Message::TeardownAck {
                    connection_id: CONN,
                },
            ),
        ),
        (
            &HELLO[..],
            Repr::new(
                1,
                7,
                Message::Hello(HelloRepr {
                    role: Role::Switch,
                    port: 3,
                    mac: Address([2, 0, 0, 0, 1, 3]),
                    management_ip: Ipv4Addr::new(198, 18, 255, 1),
                }),
            ),
        ),
        (
            &REFRESH[..],
            Repr::new(
                0,
                3,
                Message::Refresh {
                    connection_id: CONN,
                },
            ),
        ),
        (
            &REFRESH_ACK[..],
            Repr::new(
                1,
                3,
                Message::RefreshAck {
                    connection_id: CONN,
                },
            ),
        ),
    ]
}

#[test]
fn examples_parse_and_emit() {
    for (bytes, repr) in examples() {
        let packet = Packet::new_checked(bytes).unwrap();
        assert_eq!(usize::from(packet.length()), bytes.len());
        assert_eq!(packet.message_type(), repr.message.message_type());
        assert_eq!(packet.request_id(), repr.request_id);
        assert_eq!(Repr::parse(&packet).as_ref(), Ok(&repr));
        assert_eq!(repr.buffer_len(), bytes.len());
        let mut buf = vec![0xaa; bytes.len() + 1];
        repr.emit(&mut Packet::new_unchecked(&mut buf[..])).unwrap();
        assert_eq!(&buf[..bytes.len()], bytes, "{repr}");
        assert_eq!(buf[bytes.len()], 0xaa, "nothing written past the message");
    }
}

#[test]
fn every_truncation_is_an_error() {
    let bytes: Vec<&[u8]> = examples().iter().map(|(b, _)| *b).collect();
    for bytes in bytes.into_iter().chain([&REFRESH_TLVS[..27]]) {
        for len in 0..bytes.len() {
            let short = &bytes[..len];
            match Packet::new_checked(short) {
                Err(e) => assert_eq!(e, Error::Truncated, "len {len}"),
                Ok(p) => panic!("len {len} accepted: {p:?}"),
            }
        }
    }
}

#[test]
fn short_length_field_is_malformed() {
    // A length that ends inside the body, or inside a TLV.
    for (bytes, _) in examples() {
        for length in HEADER_LEN..bytes.len() {
            let mut b = bytes.to_vec();
            b[6..8].copy_from_slice(&(length as u16).to_be_bytes());
            let packet = Packet::new_checked(&b[..]).unwrap();
            assert_eq!(
                Repr::parse(&packet),
                Err(Error::Malformed),
                "length {length}"
            );
        }
    }
    let mut b = SETUP_OK;
    b[7] = 11;
    assert_eq!(Packet::new_checked(&b[..]), Err(Error::Malformed));
    let mut b = REFRESH_TLVS;
    b[7] = 26; // cuts the AUTH TLV's value short
    assert_eq!(
        Repr::parse(&Packet::new_checked(&b[..]).unwrap()),
        Err(Error::Malformed)
    );
}

#[test]
fn wrong_version_magic_type_or_flags() {
    let mut b = SETUP;
    b[2] = 2;
    assert_eq!(
        Repr::parse(&Packet::new_checked(&b[..]).unwrap()),
        Err(Error::Unsupported)
    );
    let mut b = SETUP;
    b[0] = 0x53;
    assert_eq!(
        Repr::parse(&Packet::new_checked(&b[..]).unwrap()),
        Err(Error::Malformed)
    );
    let mut b = SETUP_OK;
    b[3] = 0x09;
    let packet = Packet::new_checked(&b[..]).unwrap();
    assert_eq!(packet.message_type(), MessageType::Unknown(9));
    assert_eq!(Repr::parse(&packet), Err(Error::Unsupported));
    let mut b = SETUP_OK;
    b[4] = 0x04;
    assert_eq!(
        Repr::parse(&Packet::new_checked(&b[..]).unwrap()),
        Err(Error::Malformed)
    );
    // Authenticated flag without an AUTH TLV.
    let mut b = SETUP_OK;
    b[4] = FLAG_AUTHENTICATED;
    assert_eq!(
        Repr::parse(&Packet::new_checked(&b[..]).unwrap()),
        Err(Error::Malformed)
    );
    // AUTH TLV without the flag.
    let mut b = REFRESH_TLVS;
    b[4] = 0;
    assert_eq!(
        Repr::parse(&Packet::new_checked(&b[..]).unwrap()),
        Err(Error::Malformed)
    );
}

#[test]
fn inconsistent_setup_is_malformed() {
    let zero_rate = {
        let mut b = SETUP;
        b[24..32].fill(0);
        b
    };
    let zero_packet = {
        let mut b = SETUP;
        b[36..38].fill(0);
        b
    };
    let burst_below_packet = {
        let mut b = SETUP;
        b[32..36].copy_from_slice(&1513u32.to_be_bytes());
        b
    };
    for b in [zero_rate, zero_packet, burst_below_packet] {
        assert_eq!(
            Repr::parse(&Packet::new_checked(&b[..]).unwrap()),
            Err(Error::Malformed)
        );
    }
    let mut b = SETUP;
    b[32..36].copy_from_slice(&1514u32.to_be_bytes());
    assert!(Repr::parse(&Packet::new_checked(&b[..]).unwrap()).is_ok());
}

#[test]
fn unknown_tlv_is_skipped_and_padding_ignored() {
    let packet = Packet::new_checked(&REFRESH_TLVS[..]).unwrap();
    let repr = Repr::parse(&packet).unwrap();
    assert_eq!(
        repr.message,
        Message::Refresh {
            connection_id: CONN
        }
    );
    assert_eq!(repr.flags, FLAG_AUTHENTICATED);
    assert_eq!(
        repr.tlvs,
        vec![
            Tlv {
                kind: 0x7f,
                value: b"abc".to_vec()
            },
            Tlv {
                kind: TLV_AUTH,
                value: vec![0xde, 0xad, 0xbe, 0xef]
            },
        ]
    );
    let mut buf = [0u8; 29];
    repr.emit(&mut Packet::new_unchecked(&mut buf[..])).unwrap();
    assert_eq!(buf[..27], REFRESH_TLVS[..27]);
}

#[test]
fn emit_errors_write_nothing() {
    let (_, repr) = examples().swap_remove(0);
    let mut buf = [0xaa; 41];
    assert_eq!(
        repr.emit(&mut Packet::new_unchecked(&mut buf[..])),
        Err(Error::Truncated)
    );
    assert!(buf.iter().all(|&b| b == 0xaa));
    let mut big = repr.clone();
    big.tlvs.push(Tlv {
        kind: 9,
        value: vec![0; 256],
    });
    let mut buf = vec![0xaa; 400];
    assert_eq!(
        big.emit(&mut Packet::new_unchecked(&mut buf[..])),
        Err(Error::Malformed)
    );
    assert!(buf.iter().all(|&b| b == 0xaa));
    let mut huge = repr;
    huge.tlvs = vec![
        Tlv {
            kind: 9,
            value: vec![0; 255]
        };
        257
    ];
    let mut buf = vec![0u8; huge.buffer_len()];
    assert_eq!(
        huge.emit(&mut Packet::new_unchecked(&mut buf[..])),
        Err(Error::Malformed)
    );
}

#[test]
fn emit_frame_to_control_mac() {
    let plan = ProxyMacPlan::default();
    let (bytes, repr) = examples().swap_remove(0);
    let src = Address([2, 0, 0, 0, 0, 1]);
    let mut buf = [0u8; 80];
    let len = repr.emit_frame(src, plan.control_mac(), &mut buf).unwrap();
    assert_eq!(len, ethernet::HEADER_LEN + bytes.len());
    let frame = Frame::new_checked(&buf[..len]).unwrap();
    assert_eq!(frame.ethertype(), EtherType::Unknown(0x88b5));
    assert!(plan.is_control(&frame.dst_addr()));
    assert_eq!(frame.payload(), bytes);
    assert_eq!(
        repr.emit_frame(src, src, &mut buf[..len - 1]),
        Err(Error::Truncated)
    );
}

#[test]
fn code_conversions() {
    for v in 0..=255u8 {
        assert_eq!(u8::from(MessageType::from(v)), v);
        assert_eq!(u8::from(FailReason::from(v)), v);
        assert_eq!(u8::from(Role::from(v)), v);
    }
    assert_eq!(MessageType::from(8), MessageType::RefreshAck);
    assert_eq!(MessageType::from(0), MessageType::Unknown(0));
    assert_eq!(FailReason::from(8), FailReason::Unauthorized);
    assert_eq!(FailReason::from(9), FailReason::Delay);
    assert_eq!(FailReason::from(10), FailReason::PortLimit);
    assert_eq!(FailReason::from(6), FailReason::IdsExhausted);
    assert_eq!(Role::from(1), Role::HostDaemon);
}

fn ip() -> impl Strategy<Value = Ipv4Addr> {
    any::<[u8; 4]>().prop_map(Ipv4Addr::from)
}

fn message() -> impl Strategy<Value = Message> {
    let setup = (
        (ip(), ip(), any::<u16>(), any::<u16>(), 1..=u64::MAX),
        (1..=u16::MAX, any::<u32>(), any::<u16>(), any::<u8>()),
    )
        .prop_map(
            |((src_ip, dst_ip, dst_port, src_port, rate), (mp, extra, id, hl))| {
                Message::Setup(SetupRepr {
                    src_ip,
                    dst_ip,
                    dst_port,
                    src_port,
                    rate,
                    max_burst: u32::from(mp).saturating_add(extra),
                    max_packet: mp,
                    connection_id: id,
                    hop_limit: hl,
                })
            },
        );
    prop_oneof![
        setup,
        (any::<u16>(), any::<u8>()).prop_map(|(connection_id, hops)| Message::SetupOk {
            connection_id,
            hops
        }),
        (any::<u8>(), any::<u8>(), any::<u16>(), ip()).prop_map(|(r, h, c, ip)| {
            Message::SetupFail {
                reason: FailReason::from(r),
                failed_hop: h,
                connection_id: c,
                switch_ip: ip,
            }
        }),
        any::<u16>().prop_map(|connection_id| Message::Teardown { connection_id }),
        any::<u16>().prop_map(|connection_id| Message::TeardownAck { connection_id }),
        (any::<u8>(), any::<u16>(), any::<[u8; 6]>(), ip()).prop_map(|(r, port, mac, ip)| {
            Message::Hello(HelloRepr {
                role: Role::from(r),
                port,
                mac: Address(mac),
                management_ip: ip,
            })
        }),
        any::<u16>().prop_map(|connection_id| Message::Refresh { connection_id }),
        any::<u16>().prop_map(|connection_id| Message::RefreshAck { connection_id }),
    ]
}

pub(super) fn repr() -> impl Strategy<Value = Repr> {
    // Untyped TLVs (types without a fixed layout), then at most one of each typed one.
    let tlv = ((6..=255u8), prop::collection::vec(any::<u8>(), 0..40))
        .prop_map(|(kind, value)| Tlv { kind, value });
    let delay = prop::option::of((any::<u64>(), any::<u64>()).prop_map(|(r, a)| {
        DelayTlv {
            required_ns: r,
            accumulated_ns: a,
        }
        .to_tlv()
    }));
    let bound = prop::option::of((any::<u64>(), any::<u32>()).prop_map(|(b, l)| {
        BoundTlv {
            bound_ns: b,
            latency_ns: l,
        }
        .to_tlv()
    }));
    (
        any::<bool>(),
        any::<bool>(),
        any::<u8>(),
        any::<u32>(),
        message(),
        (prop::collection::vec(tlv, 0..4), delay, bound),
        (
            prop::option::of(any::<u64>().prop_map(|e| EpochTlv(e).to_tlv())),
            prop::option::of(any::<u8>().prop_map(|r| TeardownReason::from(r).to_tlv())),
        ),
    )
        .prop_map(
            |(retx, auth, hop, request_id, message, (mut tlvs, delay, bound), (epoch, reason))| {
                tlvs.extend(delay);
                tlvs.extend(bound);
                tlvs.extend(epoch);
                tlvs.extend(reason);
                let mut flags = if retx { FLAG_RETRANSMISSION } else { 0 };
                if auth {
                    flags |= FLAG_AUTHENTICATED;
                    tlvs.push(Tlv {
                        kind: TLV_AUTH,
                        value: vec![0x5a; 32],
                    });
                }
                Repr {
                    flags,
                    hop,
                    request_id,
                    message,
                    tlvs,
                }
            },
        )
}

proptest! {
    #[test]
    fn repr_round_trip(repr in repr(), padding in 0..50usize) {
        let mut buf = vec![0u8; repr.buffer_len() + padding];
        repr.emit(&mut Packet::new_unchecked(&mut buf[..])).unwrap();
        let packet = Packet::new_checked(&buf[..]).unwrap();
        prop_assert_eq!(usize::from(packet.length()), repr.buffer_len());
        prop_assert_eq!(Repr::parse(&packet), Ok(repr.clone()));
        for len in 0..repr.buffer_len() {
            prop_assert_eq!(Packet::new_checked(&buf[..len]), Err(Error::Truncated));
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..80)) {
        if let Ok(packet) = Packet::new_checked(&bytes[..]) {
            if let Ok(repr) = Repr::parse(&packet) {
                let mut buf = vec![0u8; repr.buffer_len()];
                repr.emit(&mut Packet::new_unchecked(&mut buf[..])).unwrap();
                prop_assert_eq!(Repr::parse(&Packet::new_checked(&buf[..]).unwrap()), Ok(repr));
            }
        }
    }
}

/// SETUP with delay terms (docs/protocol.md §7): 30 Mbit/s, required 3 ms, 0 accumulated.
const SETUP_DELAY: &str = "52 54 01 01 00 00 00 3c 00 00 00 05 \
    c6 12 00 01 c6 12 00 20 13 8c 00 00 00 00 00 00 01 c9 c3 80 00 00 08 24 04 12 03 09 10 00 \
    02 10 00 00 00 00 00 2d c6 c0 00 00 00 00 00 00 00 00";

/// SETUP_OK carrying a bound of 2.5 ms, of which 1.9 ms per-hop latency.
const SETUP_OK_BOUND: &str = "52 54 01 02 00 01 00 1e 00 00 00 05 03 09 03 00 \
    03 0c 00 00 00 00 00 26 25 a0 00 1c fd e0";

fn hex(text: &str) -> Vec<u8> {
    text.split_whitespace()
        .map(|t| u8::from_str_radix(t, 16).unwrap())
        .collect()
}

#[test]
fn setup_with_delay_terms_vector() {
    let bytes = hex(SETUP_DELAY);
    let repr = Repr::parse(&Packet::new_checked(&bytes[..]).unwrap()).unwrap();
    let Message::Setup(setup) = repr.message else {
        panic!("not a SETUP: {repr}");
    };
    assert_eq!(
        (setup.rate, setup.max_burst, setup.max_packet),
        (30_000_000, 2084, 1042)
    );
    assert_eq!(
        repr.delay(),
        Ok(Some(DelayTlv {
            required_ns: 3_000_000,
            accumulated_ns: 0
        }))
    );
    assert_eq!(repr.bound(), Ok(None));
    let mut out = vec![0u8; repr.buffer_len()];
    repr.emit(&mut Packet::new_unchecked(&mut out[..])).unwrap();
    assert_eq!(out, bytes);
}

#[test]
fn setup_ok_with_bound_vector() {
    let bytes = hex(SETUP_OK_BOUND);
    let repr = Repr::parse(&Packet::new_checked(&bytes[..]).unwrap()).unwrap();
    assert_eq!(
        repr.message,
        Message::SetupOk {
            connection_id: 0x0309,
            hops: 3
        }
    );
    assert_eq!(
        repr.bound(),
        Ok(Some(BoundTlv {
            bound_ns: 2_500_000,
            latency_ns: 1_900_000
        }))
    );
    let mut out = vec![0u8; repr.buffer_len()];
    repr.emit(&mut Packet::new_unchecked(&mut out[..])).unwrap();
    assert_eq!(out, bytes);
}

#[test]
fn typed_tlvs_of_the_wrong_length_or_repeated_are_malformed() {
    let ok = Repr::new(
        1,
        5,
        Message::SetupOk {
            connection_id: 1,
            hops: 1,
        },
    );
    let parse = |repr: &Repr| {
        let mut buf = vec![0u8; repr.buffer_len()];
        repr.emit(&mut Packet::new_unchecked(&mut buf[..])).unwrap();
        Repr::parse(&Packet::new_checked(&buf[..]).unwrap())
    };
    for (kind, len) in [
        (TLV_DELAY, 15),
        (TLV_DELAY, 17),
        (TLV_BOUND, 8),
        (TLV_BOUND, 0),
        (TLV_EPOCH, 7),
        (TLV_EPOCH, 9),
        (TLV_REASON, 0),
        (TLV_REASON, 2),
    ] {
        let mut bad = ok.clone();
        bad.tlvs.push(Tlv {
            kind,
            value: vec![0; len],
        });
        assert_eq!(
            parse(&bad),
            Err(Error::Malformed),
            "type {kind} length {len}"
        );
    }
    let mut twice = ok.clone();
    twice.tlvs.push(BoundTlv::default().to_tlv());
    twice.tlvs.push(BoundTlv::default().to_tlv());
    assert_eq!(parse(&twice), Err(Error::Malformed));
    let mut replaced = ok.clone();
    replaced.set_tlv(BoundTlv::default().to_tlv());
    replaced.set_tlv(
        BoundTlv {
            bound_ns: 7,
            latency_ns: 1,
        }
        .to_tlv(),
    );
    assert_eq!(replaced.tlvs.len(), 1);
    assert_eq!(
        parse(&replaced).unwrap().bound(),
        Ok(Some(BoundTlv {
            bound_ns: 7,
            latency_ns: 1
        }))
    );
}

/// TEARDOWN from switch 2 towards the sender, with its boot epoch and the reason (§6, §7).
const TEARDOWN_EPOCH_REASON: &[u8] = &[
    0x52, 0x54, 0x01, 0x04, 0x00, 0x02, 0x00, 0x1d, 0x00, 0x00, 0x00, 0x09, // header: len 29
    0x03, 0x09, 0x00, 0x00, // connection id 03:09
    0x04, 0x08, 0x65, 0x43, 0x21, 0x00, 0xde, 0xad, 0xbe, 0xef, // EPOCH 0x65432100_deadbeef
    0x05, 0x01, 0x03, // REASON state_lost
];

#[test]
fn epoch_and_reason_vector() {
    let repr = Repr::parse(&Packet::new_checked(TEARDOWN_EPOCH_REASON).unwrap()).unwrap();
    assert_eq!(repr.epoch(), Ok(Some(EpochTlv(0x6543_2100_dead_beef))));
    assert_eq!(repr.reason(), Ok(Some(TeardownReason::StateLost)));
    let mut built = Repr::new(
        2,
        9,
        Message::Teardown {
            connection_id: 0x0309,
        },
    );
    built.set_tlv(EpochTlv(0x6543_2100_dead_beef).to_tlv());
    built.set_tlv(TeardownReason::StateLost.to_tlv());
    let mut buf = vec![0u8; built.buffer_len()];
    built
        .emit(&mut Packet::new_unchecked(&mut buf[..]))
        .unwrap();
    assert_eq!(buf, TEARDOWN_EPOCH_REASON);
    assert_eq!(
        Repr::new(0, 1, Message::Teardown { connection_id: 1 }).epoch(),
        Ok(None)
    );
}

#[test]
fn teardown_reasons_round_trip_and_say_whether_to_resignal() {
    for code in 0..=u8::MAX {
        assert_eq!(u8::from(TeardownReason::from(code)), code);
    }
    let resignal: Vec<u8> = (0..=u8::MAX)
        .filter(|&c| TeardownReason::from(c).resignal())
        .collect();
    assert_eq!(resignal, [2, 3, 4, 5]);
    assert_eq!(TeardownReason::LinkDown.name(), "link_down");
}
