//! tshark decodes every RSVP message we emit: one Ethernet/IPv4 frame per message type (Path
//! with ADSPEC and Router Alert, Resv FF with a Guaranteed FLOWSPEC, Resv SE with a
//! Controlled-Load FLOWSPEC, PathTear, ResvTear, PathErr, ResvErr, ResvConf), written to a
//! pcap and read back with `tshark -T fields`, IP and RSVP checksum validation on.
//!
//! Without `tshark` on the PATH the test says so and passes — except under `CI=true`, where a
//! missing `tshark` fails it (`scripts/install-deps` installs it).

use std::net::Ipv4Addr;

mod tshark_util;

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::DataLink;
use rtlan_wire::ethernet::{self, Address, EtherType, Frame};
use rtlan_wire::ipv4;
use rtlan_wire::rsvp::{
    Adspec, ControlledLoadAdspec, ErrorCode, ErrorSpec, F32Bits, FilterSpec, FlowDescriptors,
    Flowspec, GeneralAdspec, GuaranteedAdspec, GuaranteedTerms, MessageType, Packet, Path, PathErr,
    PathTear, Repr, Resv, ResvConf, ResvConfirm, ResvErr, ResvTear, Rspec, RsvpHop,
    SenderDescriptor, Session, TimeValues, TokenBucket, IP_PROTOCOL,
};

const SENDER: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 1);
const ROUTER: Ipv4Addr = Ipv4Addr::new(198, 18, 1, 1);
const RECEIVER: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 2);
/// The label the router's downstream neighbour chose for the switched path.
const LABEL: u32 = 4242;

fn session() -> Session {
    Session {
        dst_addr: RECEIVER,
        protocol_id: 17,
        flags: 0,
        dst_port: 5000,
    }
}

fn sender(port: u16) -> FilterSpec {
    FilterSpec {
        src_addr: SENDER,
        src_port: port,
    }
}

/// r = 125000 B/s (1 Mbit/s), b = 3000 B, p = 250000 B/s, m = 64, M = 1500.
fn tspec() -> TokenBucket {
    TokenBucket {
        rate: F32Bits::from_f32(125_000.0),
        size: F32Bits::from_f32(3000.0),
        peak: F32Bits::from_f32(250_000.0),
        min_policed_unit: 64,
        max_packet_size: 1500,
    }
}

fn guaranteed() -> Flowspec {
    Flowspec::Guaranteed {
        tspec: tspec(),
        rspec: Rspec {
            rate: F32Bits::from_f32(150_000.0),
            slack: 100,
        },
    }
}

fn sender_descriptor() -> SenderDescriptor {
    SenderDescriptor {
        sender_template: sender(5001),
        sender_tspec: tspec(),
        adspec: Some(Adspec {
            general: GeneralAdspec {
                break_bit: false,
                hop_count: 2,
                path_bandwidth: F32Bits::from_f32(12_500_000.0),
                min_latency: 120,
                composed_mtu: 1500,
            },
            guaranteed: Some(GuaranteedAdspec {
                break_bit: false,
                terms: Some(GuaranteedTerms {
                    c_tot: 1500,
                    d_tot: 800,
                    c_sum: 1500,
                    d_sum: 800,
                }),
            }),
            controlled_load: Some(ControlledLoadAdspec { break_bit: false }),
        }),
    }
}

fn error(code: ErrorCode, value: u16) -> ErrorSpec {
    ErrorSpec {
        node: ROUTER,
        flags: 0,
        code,
        value,
    }
}

/// The messages, with what tshark must show for each: `rsvp.msg` and the Router Alert.
fn messages() -> Vec<(Repr, u8)> {
    let time_values = TimeValues {
        refresh_period_ms: 30_000,
    };
    let hop = RsvpHop::with_label(ROUTER, LABEL);
    let ff = FlowDescriptors::FixedFilter(vec![(guaranteed(), sender(5001))]);
    let se = FlowDescriptors::SharedExplicit(
        Flowspec::ControlledLoad { tspec: tspec() },
        vec![sender(5001), sender(5003)],
    );
    vec![
        (
            Path {
                session: session(),
                hop: RsvpHop {
                    address: SENDER,
                    lih: 0,
                },
                time_values,
                sender: sender_descriptor(),
            }
            .to_repr(64),
            1,
        ),
        (
            Resv {
                session: session(),
                hop,
                time_values,
                resv_confirm: Some(ResvConfirm { receiver: RECEIVER }),
                descriptors: ff.clone(),
            }
            .to_repr(64),
            2,
        ),
        (
            Resv {
                session: session(),
                hop,
                time_values,
                resv_confirm: None,
                descriptors: se.clone(),
            }
            .to_repr(64),
            2,
        ),
        (
            PathTear {
                session: session(),
                hop: RsvpHop {
                    address: SENDER,
                    lih: 0,
                },
                sender: Some(sender_descriptor()),
            }
            .to_repr(64),
            5,
        ),
        (
            ResvTear {
                session: session(),
                hop,
                descriptors: ff.clone(),
            }
            .to_repr(64),
            6,
        ),
        (
            PathErr {
                session: session(),
                error: error(ErrorCode::ConflictingSrcPorts, 0),
                sender: Some(SenderDescriptor {
                    adspec: None,
                    ..sender_descriptor()
                }),
            }
            .to_repr(64),
            3,
        ),
        (
            ResvErr {
                session: session(),
                hop,
                error: error(ErrorCode::AdmissionControlFailure, 2),
                descriptors: se,
            }
            .to_repr(64),
            4,
        ),
        (
            ResvConf {
                session: session(),
                error: error(ErrorCode::Confirmation, 0),
                resv_confirm: ResvConfirm { receiver: RECEIVER },
                descriptors: ff,
            }
            .to_repr(64),
            7,
        ),
    ]
}

/// An Ethernet/IPv4 frame carrying `repr`, with the Router Alert option where RFC 2205 asks
/// for it. Path, PathTear and ResvConf go towards the receiver, the others towards the sender.
fn frame(repr: &Repr) -> Vec<u8> {
    let rsvp = repr.to_bytes().expect("message fits");
    let alert = repr.msg_type.router_alert();
    let ip_header_len = if alert {
        ipv4::ROUTER_ALERT_HEADER_LEN
    } else {
        ipv4::HEADER_LEN
    };
    let (src_addr, dst_addr) = match repr.msg_type {
        MessageType::Path | MessageType::PathTear => (SENDER, RECEIVER),
        MessageType::ResvConf => (ROUTER, RECEIVER),
        _ => (ROUTER, SENDER),
    };
    let ip = ipv4::Repr {
        src_addr,
        dst_addr,
        protocol: IP_PROTOCOL,
        payload_len: rsvp.len(),
        ttl: repr.send_ttl,
        dscp_ecn: 0,
    };
    let mut buf = vec![0u8; ethernet::HEADER_LEN + ip_header_len + rsvp.len()];
    ethernet::Repr {
        src_addr: Address([2, 0, 0, 0, 0, 1]),
        dst_addr: Address([2, 0, 0, 0, 0, 2]),
        ethertype: EtherType::Ipv4,
    }
    .emit(&mut Frame::new_unchecked(&mut buf[..]));
    let mut packet = ipv4::Packet::new_unchecked(&mut buf[ethernet::HEADER_LEN..]);
    if alert {
        ip.emit_with_router_alert(&mut packet);
    } else {
        ip.emit(&mut packet);
    }
    buf[ethernet::HEADER_LEN + ip_header_len..].copy_from_slice(&rsvp);
    buf
}

#[test]
fn frames_parse_back() {
    for (repr, _) in messages() {
        assert_eq!(repr.validate(), Ok(()), "{repr}");
        let bytes = frame(&repr);
        let eth = Frame::new_checked(&bytes[..]).unwrap();
        let ip = ipv4::Packet::new_checked(eth.payload()).unwrap();
        assert!(ip.verify_checksum());
        assert_eq!(ip.router_alert().is_some(), repr.msg_type.router_alert());
        let packet = Packet::new_checked(ip.payload()).unwrap();
        assert_eq!(Repr::parse(&packet).as_ref(), Ok(&repr));
    }
}

/// What tshark must show for one frame, as `-T fields` prints it.
struct Expected {
    /// `rsvp.msg`.
    msg: u8,
    /// `ip.opt.ra`: "0" with the Router Alert option, empty without.
    router_alert: &'static str,
    /// `rsvp.hop.logical_interface`: the LIH (our label in the Resv family).
    lih: &'static str,
    /// `rsvp.tspec.token_bucket_rate`.
    tspec_rate: &'static str,
    /// `rsvp.flowspec.token_bucket_rate`.
    flowspec_rate: &'static str,
    /// `rsvp.style.style`.
    style: &'static str,
    /// Text the `-V` tree of the frame must contain.
    text: &'static [&'static str],
}

const EXPECTED: [Expected; 8] = [
    Expected {
        msg: 1,
        router_alert: "0",
        lih: "0",
        tspec_rate: "125000",
        flowspec_rate: "",
        style: "",
        text: &[
            "Message Type: PATH Message.",
            "End-to-end composed value for D: 800",
            "Path b/w estimate: 12500000",
            "Controlled Load",
        ],
    },
    Expected {
        msg: 2,
        router_alert: "",
        lih: "4242",
        tspec_rate: "",
        flowspec_rate: "125000",
        style: "0x00000a",
        text: &[
            "STYLE: Fixed Filter (10)",
            "FLOWSPEC: Guaranteed Rate: Token Bucket, 125000 bytes/sec. RSpec, 150000 bytes/sec.",
            "Slack term: 100",
            "CONFIRM: Receiver 198.18.0.2",
        ],
    },
    Expected {
        msg: 2,
        router_alert: "",
        lih: "4242",
        tspec_rate: "",
        flowspec_rate: "125000",
        style: "0x000012",
        text: &[
            "STYLE: Shared-Explicit (18)",
            "FLOWSPEC: Controlled Load: Token Bucket, 125000 bytes/sec.",
            "Sender port number: 5003",
        ],
    },
    Expected {
        msg: 5,
        router_alert: "0",
        lih: "0",
        tspec_rate: "125000",
        flowspec_rate: "",
        style: "",
        text: &["Message Type: PATH TEAR Message."],
    },
    Expected {
        msg: 6,
        router_alert: "",
        lih: "4242",
        tspec_rate: "",
        flowspec_rate: "125000",
        style: "0x00000a",
        text: &["Message Type: RESV TEAR Message."],
    },
    Expected {
        msg: 3,
        router_alert: "",
        lih: "",
        tspec_rate: "125000",
        flowspec_rate: "",
        style: "",
        text: &[
            "Error code: Conflicting source ports",
            "Error Node: 198.18.1.1",
        ],
    },
    Expected {
        msg: 4,
        router_alert: "",
        lih: "4242",
        tspec_rate: "",
        flowspec_rate: "125000",
        style: "0x000012",
        text: &["Error code: Admission Control Failure , Value: 2"],
    },
    Expected {
        msg: 7,
        router_alert: "0",
        lih: "",
        tspec_rate: "",
        flowspec_rate: "125000",
        style: "0x00000a",
        text: &["Error code: Confirmation", "CONFIRM: Receiver 198.18.0.2"],
    },
];

/// The IP preference that turns header checksum validation on; tshark's RSVP dissector
/// always validates the RSVP checksum (it has no preference for it).
const IP_CHECK_CHECKSUM: &str = "ip.check_checksum:TRUE";

fn tshark(args: &[&str], pcap: &std::path::Path) -> String {
    tshark_util::run(&["-o", IP_CHECK_CHECKSUM], pcap, args)
}

#[test]
fn tshark_decodes_every_message() {
    if !tshark_util::available() {
        return;
    }
    let messages = messages();
    let path = std::env::temp_dir().join(format!("rtlan-rsvp-{}.pcap", std::process::id()));
    {
        let file = std::fs::File::create(&path).unwrap();
        let header = PcapHeader {
            datalink: DataLink::ETHERNET,
            ..PcapHeader::default()
        };
        let mut writer = PcapWriter::with_header(file, header).unwrap();
        for (i, (repr, _)) in messages.iter().enumerate() {
            let data = frame(repr);
            let len = u32::try_from(data.len()).unwrap();
            let at = std::time::Duration::from_millis(i as u64);
            writer
                .write_packet(&PcapPacket::new(at, len, &data))
                .unwrap();
        }
        // A control frame: the Path with its RSVP checksum broken (IP header left intact).
        let mut bad = frame(&messages[0].0);
        bad[ethernet::HEADER_LEN + ipv4::ROUTER_ALERT_HEADER_LEN + 3] ^= 0x01;
        let len = u32::try_from(bad.len()).unwrap();
        let at = std::time::Duration::from_millis(messages.len() as u64);
        writer
            .write_packet(&PcapPacket::new(at, len, &bad))
            .unwrap();
    }
    let fields = tshark(
        &[
            "-T",
            "fields",
            "-E",
            "separator=|",
            "-E",
            "occurrence=f",
            "-e",
            "frame.protocols",
            "-e",
            "ip.checksum.status",
            "-e",
            "ip.opt.ra",
            "-e",
            "rsvp.msg",
            "-e",
            "rsvp.session.ip",
            "-e",
            "rsvp.session.port",
            "-e",
            "rsvp.hop.logical_interface",
            "-e",
            "rsvp.tspec.token_bucket_rate",
            "-e",
            "rsvp.flowspec.token_bucket_rate",
            "-e",
            "rsvp.style.style",
        ],
        &path,
    );
    let lines: Vec<&str> = fields.lines().collect();
    assert_eq!(lines.len(), messages.len() + 1, "{fields}");
    for (i, (line, want)) in lines.iter().zip(&EXPECTED).enumerate() {
        let f: Vec<&str> = line.split('|').collect();
        assert_eq!(f.len(), 10, "frame {}: {line}", i + 1);
        assert_eq!(f[0], "eth:ethertype:ip:rsvp", "frame {}", i + 1);
        assert_eq!(f[1], "1", "frame {}: IP header checksum good", i + 1);
        assert_eq!(f[2], want.router_alert, "frame {}: router alert", i + 1);
        assert_eq!(f[3], want.msg.to_string(), "frame {}: message type", i + 1);
        assert_eq!(messages[i].1, want.msg);
        assert_eq!(
            (f[4], f[5]),
            ("198.18.0.2", "5000"),
            "frame {}: session",
            i + 1
        );
        assert_eq!(f[6], want.lih, "frame {}: LIH", i + 1);
        assert_eq!(f[7], want.tspec_rate, "frame {}: SENDER_TSPEC r", i + 1);
        assert_eq!(f[8], want.flowspec_rate, "frame {}: FLOWSPEC r", i + 1);
        assert_eq!(f[9], want.style, "frame {}: style", i + 1);
    }

    // The detail view, frame by frame: the RSVP checksum verified, nothing malformed.
    let detail = tshark(&["-V"], &path);
    let frames: Vec<&str> = detail
        .split("\nFrame ")
        .filter(|f| !f.trim().is_empty())
        .collect();
    assert_eq!(frames.len(), messages.len() + 1);
    for (i, (frame, want)) in frames.iter().zip(&EXPECTED).enumerate() {
        let checksum = frame
            .lines()
            .find(|l| l.contains("Message Checksum:"))
            .unwrap_or_else(|| panic!("frame {}: no RSVP checksum shown", i + 1));
        assert!(
            checksum.ends_with("[correct]"),
            "frame {}: {checksum}",
            i + 1
        );
        assert!(
            frame.contains("[Header checksum status: Good]"),
            "frame {}",
            i + 1
        );
        for bad in ["Malformed", "Expert Info (Error", "Expert Info (Warning"] {
            assert!(!frame.contains(bad), "frame {}: {bad}\n{frame}", i + 1);
        }
        for text in want.text {
            assert!(
                frame.contains(text),
                "frame {}: no {text:?}\n{frame}",
                i + 1
            );
        }
    }
    // The control frame, a Path with one RSVP checksum bit flipped, shows that tshark checks.
    assert!(
        frames[messages.len()].contains("[incorrect, should be"),
        "{}",
        frames[messages.len()]
    );
    let _ = std::fs::remove_file(&path);
}

/// `fuzz/seeds/rsvp/` holds exactly these messages (bare RSVP, no IP header), so the fuzz
/// target starts from every message kind. `RTLAN_WRITE_SEEDS=1` rewrites them.
#[test]
fn fuzz_seeds_are_the_messages_we_emit() {
    const NAMES: [&str; 8] = [
        "path",
        "resv-ff",
        "resv-se",
        "path-tear",
        "resv-tear",
        "path-err",
        "resv-err",
        "resv-conf",
    ];
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds/rsvp");
    let write = std::env::var("RTLAN_WRITE_SEEDS").is_ok_and(|v| v == "1");
    if write {
        std::fs::create_dir_all(&dir).unwrap();
    }
    for (name, (repr, _)) in NAMES.iter().zip(messages()) {
        let bytes = repr.to_bytes().unwrap();
        let file = dir.join(name);
        if write {
            std::fs::write(&file, &bytes).unwrap();
        }
        let seed = std::fs::read(&file)
            .unwrap_or_else(|e| panic!("{}: {e} (RTLAN_WRITE_SEEDS=1 writes it)", file.display()));
        assert_eq!(
            seed,
            bytes,
            "{} is stale (RTLAN_WRITE_SEEDS=1)",
            file.display()
        );
    }
}
