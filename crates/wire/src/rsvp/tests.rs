//! RSVP tests: hand-annotated messages (checksums computed independently), round trips of
//! every object and message kind, and bad input.

use std::net::Ipv4Addr;

use proptest::prelude::*;

use super::*;

/// A Path from 198.18.0.1:5001 to 198.18.0.2:5000 (UDP): token bucket r = 125000 B/s
/// (1 Mbit/s), b = 3000 B, p = +inf, m = 64, M = 1500; ADSPEC with 1 IS hop, 12.5 MB/s,
/// latency 0, MTU 1500, Guaranteed terms C = 1500 B, D = 1000 µs, and a Controlled-Load
/// fragment.
pub(super) const PATH: [u8; 172] = [
    0x10, 0x01, 0xec, 0x57, // version 1, flags 0 | type 1 Path | checksum
    0x40, 0x00, 0x00, 0xac, // Send_TTL 64 | reserved | length 172
    0x00, 0x0c, 0x01, 0x01, // SESSION, IPv4: length 12, class 1, C-Type 1
    0xc6, 0x12, 0x00, 0x02, //   destination 198.18.0.2
    0x11, 0x00, 0x13, 0x88, //   protocol 17 (UDP) | flags 0 | port 5000
    0x00, 0x0c, 0x03, 0x01, // RSVP_HOP, IPv4: length 12, class 3, C-Type 1
    0xc6, 0x12, 0x00, 0x01, //   previous hop 198.18.0.1
    0x00, 0x00, 0x00, 0x00, //   LIH 0
    0x00, 0x08, 0x05, 0x01, // TIME_VALUES: length 8, class 5, C-Type 1
    0x00, 0x00, 0x75, 0x30, //   R = 30000 ms
    0x00, 0x0c, 0x0b, 0x01, // SENDER_TEMPLATE, IPv4: length 12, class 11, C-Type 1
    0xc6, 0x12, 0x00, 0x01, //   source 198.18.0.1
    0x00, 0x00, 0x13, 0x89, //   reserved | port 5001
    0x00, 0x24, 0x0c, 0x02, // SENDER_TSPEC, Intserv: length 36, class 12, C-Type 2
    0x00, 0x00, 0x00, 0x07, //   version 0 | 7 words follow
    0x01, 0x00, 0x00, 0x06, //   service 1 (general) | 6 words
    0x7f, 0x00, 0x00, 0x05, //   parameter 127 (token bucket) | flags 0 | 5 words
    0x47, 0xf4, 0x24, 0x00, //     r = 125000.0
    0x45, 0x3b, 0x80, 0x00, //     b = 3000.0
    0x7f, 0x80, 0x00, 0x00, //     p = +inf
    0x00, 0x00, 0x00, 0x40, //     m = 64
    0x00, 0x00, 0x05, 0xdc, //     M = 1500
    0x00, 0x54, 0x0d, 0x02, // ADSPEC, Intserv: length 84, class 13, C-Type 2
    0x00, 0x00, 0x00, 0x13, //   version 0 | 19 words follow
    0x01, 0x00, 0x00, 0x08, //   service 1 (general), no break | 8 words
    0x04, 0x00, 0x00, 0x01, //     parameter 4 (IS hops) | 1 word
    0x00, 0x00, 0x00, 0x01, //       1
    0x06, 0x00, 0x00, 0x01, //     parameter 6 (path bandwidth) | 1 word
    0x4b, 0x3e, 0xbc, 0x20, //       12500000.0
    0x08, 0x00, 0x00, 0x01, //     parameter 8 (minimum latency) | 1 word
    0x00, 0x00, 0x00, 0x00, //       0 µs
    0x0a, 0x00, 0x00, 0x01, //     parameter 10 (composed MTU) | 1 word
    0x00, 0x00, 0x05, 0xdc, //       1500
    0x02, 0x00, 0x00, 0x08, //   service 2 (Guaranteed), no break | 8 words
    0x85, 0x00, 0x00, 0x01, //     parameter 133 (C_tot) | 1 word
    0x00, 0x00, 0x05, 0xdc, //       1500 B
    0x86, 0x00, 0x00, 0x01, //     parameter 134 (D_tot) | 1 word
    0x00, 0x00, 0x03, 0xe8, //       1000 µs
    0x87, 0x00, 0x00, 0x01, //     parameter 135 (C_sum) | 1 word
    0x00, 0x00, 0x05, 0xdc, //       1500 B
    0x88, 0x00, 0x00, 0x01, //     parameter 136 (D_sum) | 1 word
    0x00, 0x00, 0x03, 0xe8, //       1000 µs
    0x05, 0x00, 0x00, 0x00, //   service 5 (Controlled-Load), no break | 0 words
];

/// The FF Resv answering [`PATH`]: NHOP 198.18.0.2 with label 1000 in the LIH, Guaranteed
/// FLOWSPEC with R = 125000 B/s and S = 0, for the sender 198.18.0.1:5001.
pub(super) const RESV_FF: [u8; 108] = [
    0x10, 0x02, 0x61, 0xd9, // version 1, flags 0 | type 2 Resv | checksum
    0x40, 0x00, 0x00, 0x6c, // Send_TTL 64 | reserved | length 108
    0x00, 0x0c, 0x01, 0x01, // SESSION, IPv4
    0xc6, 0x12, 0x00, 0x02, //   destination 198.18.0.2
    0x11, 0x00, 0x13, 0x88, //   UDP | flags 0 | port 5000
    0x00, 0x0c, 0x03, 0x01, // RSVP_HOP, IPv4
    0xc6, 0x12, 0x00, 0x02, //   next hop 198.18.0.2
    0x00, 0x00, 0x03, 0xe8, //   LIH = label 1000
    0x00, 0x08, 0x05, 0x01, // TIME_VALUES
    0x00, 0x00, 0x75, 0x30, //   R = 30000 ms
    0x00, 0x08, 0x08, 0x01, // STYLE: length 8, class 8, C-Type 1
    0x00, 0x00, 0x00, 0x0a, //   flags 0 | option vector 0x0a (FF)
    0x00, 0x30, 0x09, 0x02, // FLOWSPEC, Intserv: length 48, class 9, C-Type 2
    0x00, 0x00, 0x00, 0x0a, //   version 0 | 10 words follow
    0x02, 0x00, 0x00, 0x09, //   service 2 (Guaranteed) | 9 words
    0x7f, 0x00, 0x00, 0x05, //   parameter 127 (token bucket) | 5 words
    0x47, 0xf4, 0x24, 0x00, //     r = 125000.0
    0x45, 0x3b, 0x80, 0x00, //     b = 3000.0
    0x7f, 0x80, 0x00, 0x00, //     p = +inf
    0x00, 0x00, 0x00, 0x40, //     m = 64
    0x00, 0x00, 0x05, 0xdc, //     M = 1500
    0x82, 0x00, 0x00, 0x02, //   parameter 130 (Guaranteed RSpec) | 2 words
    0x47, 0xf4, 0x24, 0x00, //     R = 125000.0
    0x00, 0x00, 0x00, 0x00, //     S = 0 µs
    0x00, 0x0c, 0x0a, 0x01, // FILTER_SPEC, IPv4
    0xc6, 0x12, 0x00, 0x01, //   source 198.18.0.1
    0x00, 0x00, 0x13, 0x89, //   reserved | port 5001
];

const SENDER: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 1);
const RECEIVER: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 2);

pub(super) fn session() -> Session {
    Session {
        dst_addr: RECEIVER,
        protocol_id: 17,
        flags: 0,
        dst_port: 5000,
    }
}

pub(super) fn sender() -> FilterSpec {
    FilterSpec {
        src_addr: SENDER,
        src_port: 5001,
    }
}

pub(super) fn tspec() -> TokenBucket {
    TokenBucket {
        rate: F32Bits::from_f32(125_000.0),
        size: F32Bits::from_f32(3000.0),
        peak: F32Bits::from_f32(f32::INFINITY),
        min_policed_unit: 64,
        max_packet_size: 1500,
    }
}

pub(super) fn adspec() -> Adspec {
    Adspec {
        general: GeneralAdspec {
            break_bit: false,
            hop_count: 1,
            path_bandwidth: F32Bits::from_f32(12_500_000.0),
            min_latency: 0,
            composed_mtu: 1500,
        },
        guaranteed: Some(GuaranteedAdspec {
            break_bit: false,
            terms: Some(GuaranteedTerms {
                c_tot: 1500,
                d_tot: 1000,
                c_sum: 1500,
                d_sum: 1000,
            }),
        }),
        controlled_load: Some(ControlledLoadAdspec { break_bit: false }),
    }
}

pub(super) fn path() -> Path {
    Path {
        session: session(),
        hop: RsvpHop {
            address: SENDER,
            lih: 0,
        },
        time_values: TimeValues {
            refresh_period_ms: 30_000,
        },
        sender: SenderDescriptor {
            sender_template: sender(),
            sender_tspec: tspec(),
            adspec: Some(adspec()),
        },
    }
}

pub(super) fn guaranteed() -> Flowspec {
    Flowspec::Guaranteed {
        tspec: tspec(),
        rspec: Rspec {
            rate: F32Bits::from_f32(125_000.0),
            slack: 0,
        },
    }
}

pub(super) fn resv_ff() -> Resv {
    Resv {
        session: session(),
        hop: RsvpHop::with_label(RECEIVER, 1000),
        time_values: TimeValues {
            refresh_period_ms: 30_000,
        },
        resv_confirm: None,
        descriptors: FlowDescriptors::FixedFilter(vec![(guaranteed(), sender())]),
    }
}

#[test]
fn parse_path_vector() {
    let packet = Packet::new_checked(&PATH[..]).unwrap();
    assert_eq!(packet.version(), 1);
    assert_eq!(packet.flags(), 0);
    assert_eq!(packet.msg_type(), MessageType::Path);
    assert_eq!(packet.checksum(), 0xec57);
    assert_eq!(packet.send_ttl(), 64);
    assert_eq!(packet.length(), 172);
    assert!(packet.verify_checksum());
    let classes: Vec<_> = packet
        .objects()
        .map(|o| {
            let o = o.unwrap();
            (o.class_num(), o.ctype(), o.length())
        })
        .collect();
    assert_eq!(
        classes,
        [
            (ClassNum::Session, 1, 12),
            (ClassNum::RsvpHop, 1, 12),
            (ClassNum::TimeValues, 1, 8),
            (ClassNum::SenderTemplate, 1, 12),
            (ClassNum::SenderTspec, 2, 36),
            (ClassNum::Adspec, 2, 84),
        ]
    );
    let repr = Repr::parse(&packet).unwrap();
    assert_eq!(repr, path().to_repr(64));
    assert_eq!(repr.validate(), Ok(()));
}

#[test]
fn emit_path_matches_vector() {
    let repr = path().to_repr(64);
    assert_eq!(repr.buffer_len(), PATH.len());
    let mut buf = [0xaa; 180];
    repr.emit(&mut Packet::new_unchecked(&mut buf[..])).unwrap();
    assert_eq!(buf[..PATH.len()], PATH[..]);
    assert_eq!(buf[PATH.len()], 0xaa, "nothing written past the message");
}

#[test]
fn resv_vector_both_ways() {
    let repr = Repr::parse(&Packet::new_checked(&RESV_FF[..]).unwrap()).unwrap();
    assert_eq!(repr, resv_ff().to_repr(64));
    assert_eq!(repr.validate(), Ok(()));
    let Some(ObjectRepr::RsvpHop(hop)) = repr.find(ClassNum::RsvpHop) else {
        panic!("RSVP_HOP present");
    };
    assert_eq!(hop.label(), Some(1000));
    assert_eq!(repr.to_bytes().unwrap(), RESV_FF);
}

#[test]
fn checksum_rules() {
    // Zero means "no checksum transmitted" and is accepted.
    let mut bytes = PATH;
    bytes[2..4].fill(0);
    assert!(Repr::parse(&Packet::new_checked(&bytes[..]).unwrap()).is_ok());
    // Any changed byte is caught.
    for at in [0usize, 1, 4, 5, 9, 20, 100, 171] {
        let mut bytes = PATH;
        bytes[at] ^= 0x01;
        let err = Repr::parse(&Packet::new_checked(&bytes[..]).unwrap()).unwrap_err();
        assert!(
            matches!(err, RsvpError::Checksum | RsvpError::Version(_)),
            "byte {at}: {err:?}"
        );
    }
    // A message whose computed checksum is 0 sends 0xffff, which verifies: choose the last
    // word of an unknown object so that the message sums to 0xffff with the field zeroed.
    let repr = Repr::new(
        MessageType::Path,
        64,
        vec![ObjectRepr::Unknown {
            class: 200,
            ctype: 1,
            body: vec![0; 4],
        }],
    );
    let mut bytes = repr.to_bytes().unwrap();
    let mut p = Packet::new_unchecked(&mut bytes[..]);
    p.set_checksum(0);
    let word = !crate::checksum::data(p.message());
    p.objects_bytes_mut()[6..8].copy_from_slice(&word.to_be_bytes());
    p.fill_checksum();
    assert_eq!(p.checksum(), 0xffff);
    assert!(p.verify_checksum());
    assert!(Repr::parse(&p).is_ok());
}

#[test]
fn every_truncation_is_an_error() {
    for len in 0..PATH.len() {
        let err = Packet::new_checked(&PATH[..len]).unwrap_err();
        assert_eq!(err, RsvpError::Truncated, "len {len}");
    }
    // A shorter RSVP Length cuts the last object: the walk reports it.
    let mut bytes = PATH;
    bytes[2..4].fill(0);
    bytes[6..8].copy_from_slice(&168u16.to_be_bytes());
    let err = Repr::parse(&Packet::new_checked(&bytes[..]).unwrap()).unwrap_err();
    assert_eq!(err, RsvpError::Truncated);
}

/// PATH with the checksum disabled and `edit` applied.
fn edited(edit: impl FnOnce(&mut [u8; 172])) -> Result<Repr> {
    let mut bytes = PATH;
    bytes[2..4].fill(0);
    edit(&mut bytes);
    Repr::parse(&Packet::new_checked(&bytes[..])?)
}

#[test]
fn rejects_bad_headers_and_objects() {
    assert_eq!(edited(|b| b[0] = 0x20), Err(RsvpError::Version(2)));
    assert_eq!(
        Packet::new_checked(&[0x10, 1, 0, 0, 64, 0, 0, 4][..]),
        Err(RsvpError::Length(4))
    );
    let mut bytes = PATH;
    bytes[7] = 170;
    assert_eq!(Packet::new_checked(&bytes[..]), Err(RsvpError::Length(170)));
    // SESSION Length 0, 2, 6: below the header or not a multiple of 4.
    for length in [0u8, 2, 6] {
        assert_eq!(
            edited(|b| b[9] = length),
            Err(RsvpError::ObjectLength {
                class: 1,
                length: u16::from(length)
            })
        );
    }
    // SESSION claiming 16 bytes: its body is 12, the wrong size for SESSION IPv4.
    assert_eq!(
        edited(|b| b[9] = 16),
        Err(RsvpError::ObjectSize {
            class: 1,
            ctype: 1,
            length: 12,
            expected: 8
        })
    );
    // ADSPEC claiming more bytes than the message has.
    assert_eq!(edited(|b| b[89] = 0x58), Err(RsvpError::Truncated));
}

#[test]
fn unknown_objects_are_kept() {
    // SESSION with C-Type 7 and a class-200 object stay as bytes and round-trip.
    let repr = edited(|b| b[11] = 7).unwrap();
    assert_eq!(
        repr.objects[0],
        ObjectRepr::Unknown {
            class: 1,
            ctype: 7,
            body: PATH[12..20].to_vec()
        }
    );
    let mut repr = path().to_repr(64);
    let policy = ObjectRepr::Unknown {
        class: 14,
        ctype: 1,
        body: vec![1, 2, 3, 4, 5, 6, 7, 8],
    };
    repr.objects.insert(3, policy.clone());
    let bytes = repr.to_bytes().unwrap();
    let parsed = Repr::parse(&Packet::new_checked(&bytes[..]).unwrap()).unwrap();
    assert_eq!(parsed, repr);
    assert_eq!(policy.class_num(), ClassNum::PolicyData);
    assert_eq!(parsed.validate(), Ok(()));
}

#[test]
fn non_canonical_intserv_is_unknown() {
    // Flags on the token bucket parameter, a break bit in the SENDER_TSPEC's service header,
    // an Intserv version 1: all kept as bytes.
    for at in [65usize, 61, 56] {
        let repr = edited(|b| b[at] |= 0x10).unwrap();
        let ObjectRepr::Unknown { class, ctype, body } = &repr.objects[4] else {
            panic!("byte {at}: {:?}", repr.objects[4]);
        };
        assert_eq!((*class, *ctype, body.len()), (12, 2, 32));
        let again = Repr::parse(&Packet::new_checked(&repr.to_bytes().unwrap()[..]).unwrap());
        assert_eq!(again, Ok(repr));
    }
    // An ADSPEC whose Controlled-Load fragment carries data, or with a word too many.
    let repr = edited(|b| b[171] = 1).unwrap();
    assert!(matches!(
        repr.objects[5],
        ObjectRepr::Unknown { class: 13, .. }
    ));
}

#[test]
fn adspec_forms() {
    let mut a = adspec();
    for (gs, cl) in [
        (None, None),
        (
            Some(GuaranteedAdspec {
                break_bit: true,
                terms: None,
            }),
            Some(ControlledLoadAdspec { break_bit: true }),
        ),
        (None, Some(ControlledLoadAdspec { break_bit: false })),
    ] {
        a.general.break_bit = gs.is_some();
        a.guaranteed = gs;
        a.controlled_load = cl;
        let object = ObjectRepr::Adspec(a);
        let mut buf = vec![0u8; object.buffer_len()];
        object
            .emit(&mut Object::new_unchecked(&mut buf[..]))
            .unwrap();
        let view = Object::new_checked(&buf[..]).unwrap();
        assert_eq!(ObjectRepr::parse(&view), Ok(object));
    }
    // Only the general fragment: 10 words, the break bit 0x0080_0000 of the service header.
    a.general.break_bit = true;
    a.guaranteed = None;
    a.controlled_load = None;
    let object = ObjectRepr::Adspec(a);
    assert_eq!(object.buffer_len(), 4 + 40);
    let mut buf = [0u8; 44];
    object
        .emit(&mut Object::new_unchecked(&mut buf[..]))
        .unwrap();
    assert_eq!(&buf[4..12], &[0, 0, 0, 9, 1, 0x80, 0, 8]);
}

#[test]
fn builders_follow_rfc_order_and_validate() {
    let ff = FlowDescriptors::FixedFilter(vec![(guaranteed(), sender())]);
    let se = FlowDescriptors::SharedExplicit(
        Flowspec::ControlledLoad { tspec: tspec() },
        vec![
            sender(),
            FilterSpec {
                src_addr: Ipv4Addr::new(198, 18, 0, 3),
                src_port: 5001,
            },
        ],
    );
    let error = ErrorSpec {
        node: Ipv4Addr::new(198, 18, 0, 9),
        flags: 0,
        code: ErrorCode::AdmissionControlFailure,
        value: 2,
    };
    let hop = RsvpHop::with_label(RECEIVER, 17);
    let messages = [
        path().to_repr(64),
        resv_ff().to_repr(64),
        Resv {
            descriptors: se.clone(),
            resv_confirm: Some(ResvConfirm { receiver: RECEIVER }),
            ..resv_ff()
        }
        .to_repr(64),
        PathTear {
            session: session(),
            hop: path().hop,
            sender: Some(path().sender),
        }
        .to_repr(64),
        ResvTear {
            session: session(),
            hop,
            descriptors: ff.clone(),
        }
        .to_repr(64),
        PathErr {
            session: session(),
            error,
            sender: None,
        }
        .to_repr(64),
        ResvErr {
            session: session(),
            hop,
            error,
            descriptors: se.clone(),
        }
        .to_repr(64),
        ResvConf {
            session: session(),
            error: ErrorSpec {
                code: ErrorCode::Confirmation,
                value: 0,
                ..error
            },
            resv_confirm: ResvConfirm { receiver: RECEIVER },
            descriptors: FlowDescriptors::WildcardFilter(guaranteed()),
        }
        .to_repr(64),
    ];
    let classes = |r: &Repr| {
        r.objects
            .iter()
            .map(|o| u8::from(o.class_num()))
            .collect::<Vec<_>>()
    };
    let expected: [&[u8]; 8] = [
        &[1, 3, 5, 11, 12, 13],
        &[1, 3, 5, 8, 9, 10],
        &[1, 3, 5, 15, 8, 9, 10, 10],
        &[1, 3, 11, 12, 13],
        &[1, 3, 8, 9, 10],
        &[1, 6],
        &[1, 3, 6, 8, 9, 10, 10],
        &[1, 6, 15, 8, 9],
    ];
    for (repr, expected) in messages.iter().zip(expected) {
        assert_eq!(classes(repr), expected, "{repr}");
        assert_eq!(repr.validate(), Ok(()), "{repr}");
        let bytes = repr.to_bytes().unwrap();
        assert_eq!(
            Repr::parse(&Packet::new_checked(&bytes[..]).unwrap()).as_ref(),
            Ok(repr)
        );
    }
    let types: Vec<_> = messages.iter().map(|r| u8::from(r.msg_type)).collect();
    assert_eq!(types, [1, 2, 2, 5, 6, 3, 4, 7]);
}

#[test]
fn validate_names_the_missing_object() {
    let mut repr = path().to_repr(64);
    repr.objects.remove(2);
    assert_eq!(
        repr.validate(),
        Err(RsvpError::MissingObject {
            message: MessageType::Path,
            class: ClassNum::TimeValues
        })
    );
    let mut repr = path().to_repr(64);
    repr.objects.remove(4);
    assert_eq!(
        repr.validate(),
        Err(RsvpError::MissingObject {
            message: MessageType::Path,
            class: ClassNum::SenderTspec
        })
    );
    let mut repr = resv_ff().to_repr(64);
    repr.objects.pop();
    assert_eq!(
        repr.validate(),
        Err(RsvpError::MissingObject {
            message: MessageType::Resv,
            class: ClassNum::FilterSpec
        })
    );
    repr.objects[3] = ObjectRepr::Style(Style::wildcard_filter());
    assert_eq!(repr.validate(), Ok(()));
    let conf = Repr::new(
        MessageType::ResvConf,
        1,
        vec![ObjectRepr::Session(session())],
    );
    assert_eq!(
        conf.validate(),
        Err(RsvpError::MissingObject {
            message: MessageType::ResvConf,
            class: ClassNum::ErrorSpec
        })
    );
    assert_eq!(
        Repr::new(MessageType::Unknown(20), 1, vec![]).validate(),
        Ok(())
    );
}

#[test]
fn emit_errors() {
    let mut repr = path().to_repr(64);
    let mut short = [0u8; 171];
    assert_eq!(
        repr.emit(&mut Packet::new_unchecked(&mut short[..])),
        Err(RsvpError::Truncated)
    );
    assert!(short.iter().all(|&b| b == 0), "nothing written");
    repr.objects.push(ObjectRepr::Unknown {
        class: 200,
        ctype: 1,
        body: vec![1, 2, 3],
    });
    assert_eq!(repr.to_bytes(), Err(RsvpError::Unencodable));
    repr.objects.pop();
    repr.objects.push(ObjectRepr::Unknown {
        class: 200,
        ctype: 1,
        body: vec![0; MAX_LEN],
    });
    assert_eq!(repr.to_bytes(), Err(RsvpError::Unencodable));
}

#[test]
fn codes_and_styles() {
    for v in 0..=255u8 {
        assert_eq!(u8::from(MessageType::from(v)), v);
        assert_eq!(u8::from(ClassNum::from(v)), v);
        assert_eq!(u8::from(ErrorCode::from(v)), v);
    }
    assert_eq!(MessageType::from(9), MessageType::Unknown(9));
    assert_eq!(ClassNum::from(2), ClassNum::Unknown(2));
    assert!(MessageType::Path.router_alert() && MessageType::ResvConf.router_alert());
    assert!(MessageType::PathTear.router_alert() && !MessageType::Resv.router_alert());
    assert_eq!(Style::fixed_filter().kind(), StyleKind::FixedFilter);
    assert_eq!(Style::shared_explicit().kind(), StyleKind::SharedExplicit);
    assert_eq!(Style::wildcard_filter().kind(), StyleKind::WildcardFilter);
    assert_eq!(
        Style {
            flags: 0,
            options: 0x09
        }
        .kind(),
        StyleKind::Unknown(9)
    );
    assert_eq!(RsvpHop::with_label(RECEIVER, 0x12_3456).lih, 0x2_3456);
    assert_eq!(
        RsvpHop {
            address: RECEIVER,
            lih: 0x10_0000
        }
        .label(),
        None
    );
    assert_eq!(
        crate::Error::from(RsvpError::Checksum),
        crate::Error::Malformed
    );
}

#[test]
fn label_object_round_trips() {
    let object = ObjectRepr::Label(Label { value: 1000 });
    let mut buf = [0u8; 8];
    object
        .emit(&mut Object::new_unchecked(&mut buf[..]))
        .unwrap();
    assert_eq!(buf, [0, 8, 16, 1, 0, 0, 0x03, 0xe8]);
    assert_eq!(
        ObjectRepr::parse(&Object::new_checked(&buf[..]).unwrap()),
        Ok(object)
    );
}

fn finite() -> impl Strategy<Value = F32Bits> {
    any::<f32>()
        .prop_filter("finite", |v| v.is_finite())
        .prop_map(F32Bits::from_f32)
}

fn addr() -> impl Strategy<Value = Ipv4Addr> {
    any::<[u8; 4]>().prop_map(Ipv4Addr::from)
}

fn token_bucket() -> impl Strategy<Value = TokenBucket> {
    (finite(), finite(), finite(), any::<u32>(), any::<u32>()).prop_map(|(r, b, p, m, big_m)| {
        TokenBucket {
            rate: r,
            size: b,
            peak: p,
            min_policed_unit: m,
            max_packet_size: big_m,
        }
    })
}

fn flowspec() -> impl Strategy<Value = Flowspec> {
    prop_oneof![
        (token_bucket(), finite(), any::<u32>()).prop_map(|(tspec, rate, slack)| {
            Flowspec::Guaranteed {
                tspec,
                rspec: Rspec { rate, slack },
            }
        }),
        token_bucket().prop_map(|tspec| Flowspec::ControlledLoad { tspec }),
    ]
}

fn adspec_strategy() -> impl Strategy<Value = Adspec> {
    let terms = any::<[u32; 4]>().prop_map(|t| GuaranteedTerms {
        c_tot: t[0],
        d_tot: t[1],
        c_sum: t[2],
        d_sum: t[3],
    });
    (
        (
            any::<bool>(),
            any::<u32>(),
            finite(),
            any::<u32>(),
            any::<u32>(),
        ),
        proptest::option::of((any::<bool>(), proptest::option::of(terms))),
        proptest::option::of(any::<bool>()),
    )
        .prop_map(|((brk, hops, bw, lat, mtu), gs, cl)| Adspec {
            general: GeneralAdspec {
                break_bit: brk,
                hop_count: hops,
                path_bandwidth: bw,
                min_latency: lat,
                composed_mtu: mtu,
            },
            guaranteed: gs.map(|(break_bit, terms)| GuaranteedAdspec { break_bit, terms }),
            controlled_load: cl.map(|break_bit| ControlledLoadAdspec { break_bit }),
        })
}

fn object() -> impl Strategy<Value = ObjectRepr> {
    let filter = || {
        (addr(), any::<u16>()).prop_map(|(src_addr, src_port)| FilterSpec { src_addr, src_port })
    };
    prop_oneof![
        (addr(), any::<u8>(), any::<u8>(), any::<u16>()).prop_map(|(a, p, f, port)| {
            ObjectRepr::Session(Session {
                dst_addr: a,
                protocol_id: p,
                flags: f,
                dst_port: port,
            })
        }),
        (addr(), any::<u32>())
            .prop_map(|(address, lih)| ObjectRepr::RsvpHop(RsvpHop { address, lih })),
        any::<u32>().prop_map(|r| ObjectRepr::TimeValues(TimeValues {
            refresh_period_ms: r
        })),
        (addr(), any::<u8>(), any::<u8>(), any::<u16>()).prop_map(|(node, flags, code, value)| {
            ObjectRepr::ErrorSpec(ErrorSpec {
                node,
                flags,
                code: ErrorCode::from(code),
                value,
            })
        }),
        (any::<u8>(), 0u32..0x100_0000)
            .prop_map(|(flags, options)| ObjectRepr::Style(Style { flags, options })),
        flowspec().prop_map(ObjectRepr::Flowspec),
        filter().prop_map(ObjectRepr::FilterSpec),
        filter().prop_map(ObjectRepr::SenderTemplate),
        token_bucket().prop_map(ObjectRepr::SenderTspec),
        adspec_strategy().prop_map(ObjectRepr::Adspec),
        addr().prop_map(|receiver| ObjectRepr::ResvConfirm(ResvConfirm { receiver })),
        any::<u32>().prop_map(|value| ObjectRepr::Label(Label { value })),
        // Classes we never interpret (INTEGRITY, SCOPE, POLICY_DATA, unassigned).
        (
            prop_oneof![Just(4u8), Just(7), Just(14), 17u8..=255],
            any::<u8>(),
            proptest::collection::vec(any::<[u8; 4]>(), 0..6)
        )
            .prop_map(|(class, ctype, words)| ObjectRepr::Unknown {
                class,
                ctype,
                body: words.concat(),
            }),
    ]
}

fn sender_descriptor() -> impl Strategy<Value = SenderDescriptor> {
    (
        addr(),
        any::<u16>(),
        token_bucket(),
        proptest::option::of(adspec_strategy()),
    )
        .prop_map(
            |(src_addr, src_port, sender_tspec, adspec)| SenderDescriptor {
                sender_template: FilterSpec { src_addr, src_port },
                sender_tspec,
                adspec,
            },
        )
}

fn descriptors() -> impl Strategy<Value = FlowDescriptors> {
    let filter = || {
        (addr(), any::<u16>()).prop_map(|(src_addr, src_port)| FilterSpec { src_addr, src_port })
    };
    prop_oneof![
        flowspec().prop_map(FlowDescriptors::WildcardFilter),
        proptest::collection::vec((flowspec(), filter()), 1..4)
            .prop_map(FlowDescriptors::FixedFilter),
        (flowspec(), proptest::collection::vec(filter(), 1..4))
            .prop_map(|(f, filters)| FlowDescriptors::SharedExplicit(f, filters)),
    ]
}

/// Every typed message the builders can make.
fn message() -> impl Strategy<Value = Message> {
    let session = || {
        (addr(), any::<u8>(), any::<u8>(), any::<u16>()).prop_map(|(a, p, f, port)| Session {
            dst_addr: a,
            protocol_id: p,
            flags: f,
            dst_port: port,
        })
    };
    let hop = || (addr(), any::<u32>()).prop_map(|(address, lih)| RsvpHop { address, lih });
    let time = || {
        any::<u32>().prop_map(|r| TimeValues {
            refresh_period_ms: r,
        })
    };
    let error = || {
        (addr(), any::<u8>(), any::<u8>(), any::<u16>()).prop_map(|(node, flags, code, value)| {
            ErrorSpec {
                node,
                flags,
                code: ErrorCode::from(code),
                value,
            }
        })
    };
    let confirm = || addr().prop_map(|receiver| ResvConfirm { receiver });
    prop_oneof![
        (session(), hop(), time(), sender_descriptor()).prop_map(
            |(session, hop, time_values, sender)| {
                Message::Path(Path {
                    session,
                    hop,
                    time_values,
                    sender,
                })
            }
        ),
        (
            session(),
            hop(),
            time(),
            proptest::option::of(confirm()),
            descriptors()
        )
            .prop_map(|(session, hop, time_values, resv_confirm, descriptors)| {
                Message::Resv(Resv {
                    session,
                    hop,
                    time_values,
                    resv_confirm,
                    descriptors,
                })
            }),
        (
            session(),
            error(),
            proptest::option::of(sender_descriptor())
        )
            .prop_map(|(session, error, sender)| Message::PathErr(PathErr {
                session,
                error,
                sender
            })),
        (session(), hop(), error(), descriptors()).prop_map(
            |(session, hop, error, descriptors)| {
                Message::ResvErr(ResvErr {
                    session,
                    hop,
                    error,
                    descriptors,
                })
            }
        ),
        (session(), hop(), proptest::option::of(sender_descriptor())).prop_map(
            |(session, hop, sender)| Message::PathTear(PathTear {
                session,
                hop,
                sender
            })
        ),
        (session(), hop(), descriptors()).prop_map(
            |(session, hop, descriptors)| Message::ResvTear(ResvTear {
                session,
                hop,
                descriptors
            })
        ),
        (session(), error(), confirm(), descriptors()).prop_map(
            |(session, error, resv_confirm, descriptors)| {
                Message::ResvConf(ResvConf {
                    session,
                    error,
                    resv_confirm,
                    descriptors,
                })
            }
        ),
    ]
}

#[test]
fn decoding_names_what_is_missing_and_reads_ff_filters_sharing_a_flowspec() {
    let repr = Repr::parse(&Packet::new_checked(&RESV_FF[..]).unwrap()).unwrap();
    let Message::Resv(resv) = Message::from_repr(&repr).unwrap() else {
        panic!("a Resv")
    };
    assert_eq!(resv.hop.label(), Some(1000));
    let FlowDescriptors::FixedFilter(pairs) = &resv.descriptors else {
        panic!("FF")
    };
    assert_eq!(pairs.len(), 1);
    // A second FILTER_SPEC without its own FLOWSPEC shares the one before it (§3.1.4).
    let mut two = repr.clone();
    let second = FilterSpec {
        src_addr: Ipv4Addr::new(198, 18, 0, 9),
        src_port: 7,
    };
    two.objects.push(ObjectRepr::FilterSpec(second));
    let Message::Resv(resv) = Message::from_repr(&two).unwrap() else {
        panic!("a Resv")
    };
    let FlowDescriptors::FixedFilter(pairs) = &resv.descriptors else {
        panic!("FF")
    };
    assert_eq!(pairs.len(), 2);
    assert_eq!((pairs[1].0, pairs[1].1), (pairs[0].0, second));
    // Missing objects and unknown styles and types are named.
    let mut no_style = repr.clone();
    no_style
        .objects
        .retain(|o| !matches!(o, ObjectRepr::Style(_)));
    assert_eq!(
        Message::from_repr(&no_style),
        Err(RsvpError::MissingObject {
            message: MessageType::Resv,
            class: ClassNum::Style
        })
    );
    let mut odd = repr.clone();
    for o in &mut odd.objects {
        if let ObjectRepr::Style(s) = o {
            s.options = 0x1f;
        }
    }
    assert_eq!(Message::from_repr(&odd), Err(RsvpError::UnknownStyle(0x1f)));
    let unknown = Repr::new(MessageType::Unknown(9), 64, repr.objects.clone());
    assert_eq!(
        Message::from_repr(&unknown),
        Err(RsvpError::UnknownMessage(9))
    );
    let path = Repr::parse(&Packet::new_checked(&PATH[..]).unwrap()).unwrap();
    let mut no_template = path.clone();
    no_template
        .objects
        .retain(|o| !matches!(o, ObjectRepr::SenderTemplate(_)));
    assert_eq!(
        Message::from_repr(&no_template),
        Err(RsvpError::MissingObject {
            message: MessageType::Path,
            class: ClassNum::SenderTemplate
        })
    );
    assert!(matches!(Message::from_repr(&path), Ok(Message::Path(_))));
}

#[test]
fn ip_packet_carries_the_message_with_or_without_router_alert() {
    let src = Ipv4Addr::new(198, 18, 0, 1);
    let dst = Ipv4Addr::new(198, 18, 0, 2);
    for alert in [false, true] {
        let p = ip_packet(src, dst, 63, alert, &PATH);
        let ip = crate::ipv4::Packet::new_checked(&p[..]).unwrap();
        assert!(ip.verify_checksum());
        assert_eq!(ip.protocol(), IP_PROTOCOL);
        assert_eq!((ip.src_addr(), ip.dst_addr(), ip.ttl()), (src, dst, 63));
        assert_eq!(ip.router_alert().is_some(), alert);
        assert_eq!(ip.payload(), &PATH[..]);
    }
}

proptest! {
    /// A typed message survives writing and decoding exactly.
    #[test]
    fn message_round_trip(message in message(), ttl in any::<u8>()) {
        let repr = message.to_repr(ttl);
        let bytes = repr.to_bytes().unwrap();
        let parsed = Repr::parse(&Packet::new_checked(&bytes[..]).unwrap()).unwrap();
        prop_assert_eq!(parsed.msg_type, message.msg_type());
        prop_assert_eq!(Message::from_repr(&parsed), Ok(message));
    }

    #[test]
    fn repr_round_trip(
        msg_type in any::<u8>(),
        flags in 0u8..16,
        send_ttl in any::<u8>(),
        objects in proptest::collection::vec(object(), 0..10),
    ) {
        let repr = Repr { msg_type: MessageType::from(msg_type), flags, send_ttl, objects };
        let bytes = repr.to_bytes().unwrap();
        let packet = Packet::new_checked(&bytes[..]).unwrap();
        prop_assert!(packet.verify_checksum());
        prop_assert_ne!(packet.checksum(), 0);
        prop_assert_eq!(usize::from(packet.length()), bytes.len());
        prop_assert_eq!(Repr::parse(&packet), Ok(repr));
    }

    #[test]
    fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..200)) {
        if let Ok(packet) = Packet::new_checked(&data[..]) {
            let _ = (packet.verify_checksum(), packet.flags(), packet.reserved());
            for object in packet.objects().flatten() {
                prop_assert!(object.length() >= 4 && object.body().len() + 4 == usize::from(object.length()));
                let _ = ObjectRepr::parse(&object);
            }
            if let Ok(repr) = Repr::parse(&packet) {
                let bytes = repr.to_bytes().unwrap();
                prop_assert_eq!(Repr::parse(&Packet::new_checked(&bytes[..]).unwrap()), Ok(repr));
            }
        }
        let _ = Objects::new(&data).count();
    }

    #[test]
    fn object_walk_never_panics(data in proptest::collection::vec(any::<u8>(), 0..64)) {
        // Whatever the bytes, the walk ends, yields at most one error and covers the data.
        let items: Vec<_> = Objects::new(&data).collect();
        let errors = items.iter().filter(|i| i.is_err()).count();
        prop_assert!(errors <= 1);
        if errors == 0 {
            let total: usize = items.iter().flatten().map(|o| usize::from(o.length())).sum();
            prop_assert_eq!(total, data.len());
        }
    }
}
