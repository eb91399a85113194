//! RETHER frames: the byte vectors of `docs/rether.md`, every refusal, and round trips.

use proptest::prelude::*;

use super::*;

fn hex(text: &str) -> Vec<u8> {
    text.split_whitespace()
        .map(|t| u8::from_str_radix(t, 16).unwrap())
        .collect()
}

fn id(n: u16) -> NodeId {
    NodeId::new(n).unwrap()
}

/// docs/rether.md §5, vector 1: station 3 proposes generation 7, TRT 33.333 ms, T_NRT 5 ms,
/// first attempt.
const SWITCH: &str = "52 45 01 01 00 00 00 1c 00 00 00 07 00 03 ff ff \
    01 fc a0 54 00 4c 4b 40 00 00 00 00";

/// docs/rether.md §5, vector 2: station 1 passes the token of generation 7 to station 3 for its
/// RT visit (session 0 of 1): residual 30 ms of 33.333 ms, cycle 12, stations 1, 3 and dead 5;
/// the RT-set holds station 3's session 1 to station 1, THT 1.3 ms, 6,250 bytes per TRT.
const TOKEN: &str = "52 45 01 03 00 00 00 42 00 00 00 07 00 01 00 03 \
    01 c9 c3 80 01 fc a0 54 00 4c 4b 40 00 00 00 0c 00 00 00 00 00 03 00 01 00 00 00 00 \
    00 01 00 03 80 05 \
    00 01 00 03 00 01 00 00 00 13 d6 20 00 00 18 6a";

fn token_repr() -> Repr {
    Repr {
        generation: 7,
        source: id(1),
        dest: Dest::Node(id(3)),
        message: Message::Token(TokenRepr {
            residual_ns: 30_000_000,
            trt_ns: 33_333_332,
            t_nrt_ns: 5_000_000,
            cycle: 12,
            phase: Phase::RealTime,
            rt_next: 0,
            nrt_next: None,
            pass: 0,
            members: vec![
                Member {
                    id: id(1),
                    dead: false,
                },
                Member {
                    id: id(3),
                    dead: false,
                },
                Member {
                    id: id(5),
                    dead: true,
                },
            ],
            sessions: vec![SessionEntry {
                session: 1,
                sender: id(3),
                receiver: Some(id(1)),
                closing: false,
                tht_ns: 1_300_000,
                bytes_per_trt: 6_250,
            }],
        }),
    }
}

fn parse(bytes: &[u8]) -> Result<Repr> {
    Repr::parse(&Packet::new_checked(bytes)?)
}

fn emit(repr: &Repr) -> Vec<u8> {
    let mut buf = vec![0u8; repr.buffer_len()];
    repr.emit(&mut Packet::new_unchecked(&mut buf[..])).unwrap();
    buf
}

#[test]
fn switch_vector() {
    let bytes = hex(SWITCH);
    let repr = parse(&bytes).unwrap();
    let want = Repr {
        generation: 7,
        source: id(3),
        dest: Dest::All,
        message: Message::Switch(SwitchRepr {
            trt_ns: 33_333_332,
            t_nrt_ns: 5_000_000,
            attempt: 0,
            regenerate: false,
        }),
    };
    assert_eq!(repr, want);
    assert_eq!(emit(&want), bytes);
    assert_eq!(
        repr.to_string(),
        "RETHER g7 3→all SWITCH trt=33333332ns t_nrt=5000000ns attempt=0"
    );
}

#[test]
fn token_vector() {
    let bytes = hex(TOKEN);
    assert_eq!(bytes.len(), 66);
    assert_eq!(parse(&bytes), Ok(token_repr()));
    assert_eq!(emit(&token_repr()), bytes);
}

#[test]
fn small_messages_round_trip_and_the_regenerate_flag_is_switch_only() {
    let mut regen = parse(&hex(SWITCH)).unwrap();
    if let Message::Switch(s) = &mut regen.message {
        s.regenerate = true;
        s.attempt = 2;
    }
    let bytes = emit(&regen);
    assert_eq!(bytes[4], FLAG_REGENERATE);
    assert_eq!(parse(&bytes), Ok(regen));
    for message in [
        Message::SwitchAck { initiator: id(3) },
        Message::SwitchToCsma,
        Message::Join,
        Message::Leave,
    ] {
        let repr = Repr {
            generation: 1,
            source: id(9),
            dest: Dest::All,
            message,
        };
        let mut bytes = emit(&repr);
        assert_eq!(parse(&bytes), Ok(repr.clone()), "{repr}");
        bytes[4] = FLAG_REGENERATE;
        assert_eq!(parse(&bytes), Err(Error::Malformed), "flag on {repr}");
    }
}

#[test]
fn header_refusals() {
    let good = hex(SWITCH);
    let with = |at: usize, value: u8| {
        let mut b = good.clone();
        b[at] = value;
        b
    };
    assert_eq!(parse(&with(0, 0x53)), Err(Error::Malformed), "magic");
    assert_eq!(parse(&with(2, 2)), Err(Error::Unsupported), "version");
    assert_eq!(parse(&with(3, 99)), Err(Error::Unsupported), "type");
    assert_eq!(
        parse(&with(4, 0x02)),
        Err(Error::Malformed),
        "undefined flag"
    );
    // Source 0 and source 0x8000 are no station; destination 0 neither.
    assert_eq!(parse(&with(13, 0)), Err(Error::Malformed), "source 0");
    assert_eq!(
        parse(&with(12, 0x80)),
        Err(Error::Malformed),
        "source > 0x7fff"
    );
    let mut dest0 = good.clone();
    dest0[14..16].fill(0);
    assert_eq!(parse(&dest0), Err(Error::Malformed), "dest 0");
    // Length: below the header, beyond the buffer, not the type's body.
    assert_eq!(Packet::new_checked(&with(7, 15)[..]), Err(Error::Malformed));
    assert_eq!(Packet::new_checked(&with(7, 29)[..]), Err(Error::Truncated));
    assert_eq!(
        parse(&with(7, 27)),
        Err(Error::Truncated),
        "body shorter than fixed"
    );
    let mut long = good.clone();
    long.push(0);
    long[7] = 29;
    assert_eq!(
        parse(&long),
        Err(Error::Malformed),
        "body longer than a SWITCH"
    );
    // Padding after the length is ignored.
    let mut padded = good.clone();
    padded.extend_from_slice(&[0xee; 20]);
    assert!(parse(&padded).is_ok());
    // TRT 0, and T_NRT above TRT.
    let mut trt0 = good.clone();
    trt0[16..20].fill(0);
    assert_eq!(parse(&trt0), Err(Error::Malformed));
    assert_eq!(parse(&with(20, 0x02)), Err(Error::Malformed), "t_nrt > trt");
}

#[test]
fn token_refusals() {
    let good = hex(TOKEN);
    let with = |at: usize, value: u8| {
        let mut b = good.clone();
        b[at] = value;
        b
    };
    let body = HEADER_LEN;
    assert_eq!(
        parse(&with(body, 0x03)),
        Err(Error::Malformed),
        "residual > trt"
    );
    assert_eq!(parse(&with(body + 16, 2)), Err(Error::Malformed), "phase 2");
    assert_eq!(
        parse(&with(body + 25, 2)),
        Err(Error::Malformed),
        "rt_next > sessions"
    );
    // Stations out of order (3 before 1), and a station id 0.
    assert_eq!(
        parse(&with(body + 29, 3)),
        Err(Error::Malformed),
        "1,3 → 3,3"
    );
    assert_eq!(
        parse(&with(body + 29, 0)),
        Err(Error::Malformed),
        "station 0"
    );
    // The counts must match the length exactly.
    assert_eq!(
        parse(&with(body + 21, 4)),
        Err(Error::Truncated),
        "4 members"
    );
    assert_eq!(
        parse(&with(body + 21, 2)),
        Err(Error::Malformed),
        "2 members"
    );
    let mut too_many = good.clone();
    too_many[body + 20..body + 22].copy_from_slice(&257u16.to_be_bytes());
    assert_eq!(parse(&too_many), Err(Error::Malformed), "257 members");
    // A session's undefined flag bit, sender 0.
    let session = body + TOKEN_FIXED + 6;
    assert_eq!(
        parse(&with(session + 7, 2)),
        Err(Error::Malformed),
        "session flag"
    );
    assert_eq!(
        parse(&with(session + 3, 0)),
        Err(Error::Malformed),
        "sender 0"
    );
}

const TOKEN_FIXED: usize = 28;

#[test]
fn data_frames_carry_their_payload() {
    let repr = Repr {
        generation: 3,
        source: id(2),
        dest: Dest::Node(id(4)),
        message: Message::Data(DataRepr {
            session: 5,
            unit: 77,
            fragment: 1,
            fragments: 3,
            payload_len: 5,
        }),
    };
    let mut buf = [0u8; 100];
    let (src, dst) = (Address([2, 0, 0, 0, 0, 2]), Address([2, 0, 0, 0, 0, 4]));
    let len = emit_frame(&repr, src, dst, b"hello", &mut buf).unwrap();
    assert_eq!(len, 14 + 16 + 12 + 5);
    let (back, payload) = parse_frame(&buf[..len]).unwrap();
    assert_eq!((back, payload), (repr.clone(), &b"hello"[..]));
    // Padded to the Ethernet minimum: the padding is not payload.
    let (_, payload) = parse_frame(&buf[..64]).unwrap();
    assert_eq!(payload, b"hello");
    assert_eq!(
        emit_frame(&repr, src, dst, b"hell", &mut buf),
        Err(Error::Malformed),
        "payload length must match"
    );
    assert_eq!(
        emit_frame(&repr, src, dst, b"hello", &mut buf[..40]),
        Err(Error::Truncated)
    );
    // Fragment index beyond the count, zero fragments.
    let mut bad = buf[..len].to_vec();
    bad[14 + 16 + 9] = 3;
    assert_eq!(parse_frame(&bad).map(|r| r.0), Err(Error::Malformed));
    bad[14 + 16 + 11] = 0;
    assert_eq!(parse_frame(&bad).map(|r| r.0), Err(Error::Malformed));
    // Another EtherType, or a VLAN tag: not RETHER.
    let mut other = buf[..len].to_vec();
    other[12..14].copy_from_slice(&0x88b5u16.to_be_bytes());
    assert_eq!(parse_frame(&other).map(|r| r.0), Err(Error::Unsupported));
}

#[test]
fn emit_refuses_what_parse_refuses() {
    let mut repr = token_repr();
    if let Message::Token(t) = &mut repr.message {
        t.members.swap(0, 1);
    }
    let mut buf = vec![0u8; repr.buffer_len()];
    assert_eq!(
        repr.emit(&mut Packet::new_unchecked(&mut buf[..])),
        Err(Error::Malformed)
    );
    let mut big = token_repr();
    if let Message::Token(t) = &mut big.message {
        t.sessions = vec![t.sessions[0]; MAX_SESSIONS + 1];
    }
    let mut buf = vec![0u8; big.buffer_len()];
    assert_eq!(
        big.emit(&mut Packet::new_unchecked(&mut buf[..])),
        Err(Error::Malformed)
    );
    let mut short = vec![0u8; token_repr().buffer_len() - 1];
    assert_eq!(
        token_repr().emit(&mut Packet::new_unchecked(&mut short[..])),
        Err(Error::Truncated)
    );
}

#[test]
fn the_largest_token_fits_one_ethernet_payload() {
    let mut repr = token_repr();
    if let Message::Token(t) = &mut repr.message {
        t.members = (1..=MAX_MEMBERS as u16)
            .map(|n| Member {
                id: id(n),
                dead: n % 7 == 0,
            })
            .collect();
        t.sessions = vec![t.sessions[0]; MAX_SESSIONS];
    }
    assert_eq!(repr.buffer_len(), 1452);
    assert!(repr.buffer_len() <= 1500);
    assert_eq!(parse(&emit(&repr)), Ok(repr));
}

fn node_id() -> impl Strategy<Value = NodeId> {
    (1..=MAX_NODE_ID).prop_map(id)
}

fn token() -> impl Strategy<Value = TokenRepr> {
    (
        (1..=u32::MAX),
        prop::collection::btree_map(node_id(), any::<bool>(), 0..40),
        prop::collection::vec(
            (
                any::<u16>(),
                node_id(),
                prop::option::of(node_id()),
                any::<bool>(),
                any::<u32>(),
                any::<u32>(),
            ),
            0..=MAX_SESSIONS,
        ),
        any::<u32>(),
        any::<bool>(),
        prop::option::of(node_id()),
        any::<(u32, u32, u16)>(),
    )
        .prop_map(
            |(trt, members, sessions, cycle, nrt, nrt_next, (res, tnrt, next))| TokenRepr {
                residual_ns: res % (trt.saturating_add(1).max(1)),
                trt_ns: trt,
                t_nrt_ns: tnrt.min(trt),
                cycle,
                phase: if nrt {
                    Phase::NonRealTime
                } else {
                    Phase::RealTime
                },
                rt_next: next % (sessions.len() as u16 + 1),
                nrt_next,
                pass: next.wrapping_mul(7),
                members: members
                    .into_iter()
                    .map(|(id, dead)| Member { id, dead })
                    .collect(),
                sessions: sessions
                    .into_iter()
                    .map(
                        |(session, sender, receiver, closing, tht_ns, bytes_per_trt)| {
                            SessionEntry {
                                session,
                                sender,
                                receiver,
                                closing,
                                tht_ns,
                                bytes_per_trt,
                            }
                        },
                    )
                    .collect(),
            },
        )
}

fn message() -> impl Strategy<Value = Message> {
    prop_oneof![
        (1..=u32::MAX, any::<u32>(), any::<u8>(), any::<bool>()).prop_map(
            |(trt, tnrt, attempt, regenerate)| Message::Switch(SwitchRepr {
                trt_ns: trt,
                t_nrt_ns: tnrt.min(trt),
                attempt,
                regenerate,
            })
        ),
        node_id().prop_map(|initiator| Message::SwitchAck { initiator }),
        token().prop_map(Message::Token),
        Just(Message::SwitchToCsma),
        Just(Message::Join),
        Just(Message::Leave),
        (
            any::<u16>(),
            any::<u32>(),
            1..=u16::MAX,
            any::<u16>(),
            0..1400u16
        )
            .prop_map(
                |(session, unit, fragments, fragment, payload_len)| Message::Data(DataRepr {
                    session,
                    unit,
                    fragment: fragment % fragments,
                    fragments,
                    payload_len,
                })
            ),
    ]
}

fn repr() -> impl Strategy<Value = Repr> {
    (
        any::<u32>(),
        node_id(),
        prop::option::of(node_id()),
        message(),
    )
        .prop_map(|(generation, source, dest, message)| Repr {
            generation,
            source,
            dest: dest.map_or(Dest::All, Dest::Node),
            message,
        })
}

proptest! {
    #[test]
    fn repr_round_trip(repr in repr(), padding in 0..50usize) {
        let mut buf = vec![0u8; repr.buffer_len() + padding];
        repr.emit(&mut Packet::new_unchecked(&mut buf[..])).unwrap();
        let packet = Packet::new_checked(&buf[..]).unwrap();
        prop_assert_eq!(usize::from(packet.length()), repr.buffer_len());
        prop_assert_eq!(Repr::parse(&packet), Ok(repr.clone()));
        for len in (0..repr.buffer_len()).step_by(7) {
            let short = Packet::new_checked(&buf[..len]).and_then(|p| Repr::parse(&p));
            prop_assert!(short.is_err());
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..120)) {
        if let Ok(packet) = Packet::new_checked(&bytes[..]) {
            let _ = (packet.flags(), packet.generation(), packet.source(), packet.dest());
            if let Ok(repr) = Repr::parse(&packet) {
                let again = emit(&repr);
                prop_assert_eq!(parse(&again), Ok(repr));
            }
        }
        let _ = parse_frame(&bytes);
    }
}
