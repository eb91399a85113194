//! BPDU vectors: three frames the Linux bridge (kernel STP, `stp_state 1`) sent on a veth in a
//! throwaway namespace, captured with tcpdump, and one hand-annotated RST BPDU that tshark
//! decodes as RSTP (`tshark_decodes_what_we_emit`).

use super::*;
use proptest::prelude::*;

/// Configuration BPDU from the root bridge 1000.020000000000b0 (priority 4096) on its port
/// 0x8001, timers max age 6 s, hello 1 s, forward delay 4 s; no flags.
const KERNEL_CONFIG: [u8; 52] = [
    0x01, 0x80, 0xc2, 0x00, 0x00, 0x00, // destination: Bridge Group Address
    0x02, 0x00, 0x00, 0x00, 0x00, 0xb1, // source: the port's MAC
    0x00, 0x26, // 802.3 length 38 = LLC 3 + BPDU 35
    0x42, 0x42, 0x03, // LLC: DSAP 0x42, SSAP 0x42, control UI
    0x00, 0x00, // protocol identifier
    0x00, // version 0 (STP)
    0x00, // type: Configuration
    0x00, // flags
    0x10, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00,
    0xb0, // root identifier 4096 / 02:00:00:00:00:b0
    0x00, 0x00, 0x00, 0x00, // root path cost 0
    0x10, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0xb0, // bridge identifier (the root itself)
    0x80, 0x01, // port identifier 0x8001
    0x00, 0x00, // message age 0
    0x06, 0x00, // max age 6 s (1536/256)
    0x01, 0x00, // hello time 1 s
    0x04, 0x00, // forward delay 4 s
];

/// The same root's BPDU answering a TCN: flags 0x81 = Topology Change Acknowledgment + Topology
/// Change.
const KERNEL_CONFIG_TC_TCA: [u8; 52] = [
    0x01, 0x80, 0xc2, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0xb1, 0x00, 0x26, // Eth
    0x42, 0x42, 0x03, // LLC
    0x00, 0x00, 0x00, 0x00, // protocol 0, version 0, type Configuration
    0x81, // flags: TCA | TC
    0x10, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0xb0, // root
    0x00, 0x00, 0x00, 0x00, // cost
    0x10, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0xb0, // bridge
    0x80, 0x01, // port
    0x00, 0x00, 0x06, 0x00, 0x01, 0x00, 0x04, 0x00, // age 0, max 6 s, hello 1 s, fwd 4 s
];

/// Topology Change Notification from the non-root bridge's root port (02:00:00:00:00:a1).
const KERNEL_TCN: [u8; 21] = [
    0x01, 0x80, 0xc2, 0x00, 0x00, 0x00, // destination
    0x02, 0x00, 0x00, 0x00, 0x00, 0xa1, // source
    0x00, 0x07, // length 7 = LLC 3 + BPDU 4
    0x42, 0x42, 0x03, // LLC
    0x00, 0x00, // protocol identifier
    0x00, // version 0
    0x80, // type: TCN
];

/// An RST BPDU from a designated, forwarding port proposing, with Topology Change: flags
/// 0b0011_1111 = 0x3f (TC 0x01, proposal 0x02, role designated 3 << 2 = 0x0c, learning 0x10,
/// forwarding 0x20). Root 8000/02:00:00:00:00:01 at cost 20000 via bridge 8000/02:00:00:00:00:02
/// port 0x8002, message age 1 s, max age 20 s, hello 2 s, forward delay 15 s.
const RST_DESIGNATED: [u8; 53] = [
    0x01, 0x80, 0xc2, 0x00, 0x00, 0x00, // destination
    0x02, 0x00, 0x00, 0x00, 0x00, 0x22, // source
    0x00, 0x27, // length 39 = LLC 3 + BPDU 36
    0x42, 0x42, 0x03, // LLC
    0x00, 0x00, // protocol identifier
    0x02, // version 2 (RSTP)
    0x02, // type: RST
    0x3f, // flags
    0x80, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, // root identifier
    0x00, 0x00, 0x4e, 0x20, // root path cost 20000
    0x80, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x02, // bridge identifier
    0x80, 0x02, // port identifier
    0x01, 0x00, // message age 1 s
    0x14, 0x00, // max age 20 s
    0x02, 0x00, // hello time 2 s
    0x0f, 0x00, // forward delay 15 s
    0x00, // version 1 length 0
];

fn bridge(priority: u16, last: u8) -> BridgeId {
    BridgeId {
        priority,
        addr: Address([0x02, 0, 0, 0, 0, last]),
    }
}

fn kernel_config(flags: u8) -> Repr {
    Repr::Config(Config {
        flags: Flags(flags),
        root_id: bridge(0x1000, 0xb0),
        root_path_cost: 0,
        bridge_id: bridge(0x1000, 0xb0),
        port_id: PortIdentifier(0x8001),
        message_age: Time(0),
        max_age: Time::from_secs(6),
        hello_time: Time::from_secs(1),
        forward_delay: Time::from_secs(4),
    })
}

fn rst_designated() -> Repr {
    Repr::Rst(Config {
        flags: Flags::default()
            .with_topology_change(true)
            .with_proposal(true)
            .with_port_role(PortRole::Designated)
            .with_learning(true)
            .with_forwarding(true),
        root_id: bridge(0x8000, 0x01),
        root_path_cost: 20_000,
        bridge_id: bridge(0x8000, 0x02),
        port_id: PortIdentifier::new(128, 2),
        message_age: Time::from_secs(1),
        max_age: Time::from_secs(20),
        hello_time: Time::from_secs(2),
        forward_delay: Time::from_secs(15),
    })
}

/// (frame, its Repr, the sender's port MAC) for every vector.
fn vectors() -> Vec<(&'static [u8], Repr, Address)> {
    vec![
        (
            &KERNEL_CONFIG[..],
            kernel_config(0x00),
            Address([2, 0, 0, 0, 0, 0xb1]),
        ),
        (
            &KERNEL_CONFIG_TC_TCA[..],
            kernel_config(0x81),
            Address([2, 0, 0, 0, 0, 0xb1]),
        ),
        (&KERNEL_TCN[..], Repr::Tcn, Address([2, 0, 0, 0, 0, 0xa1])),
        (
            &RST_DESIGNATED[..],
            rst_designated(),
            Address([2, 0, 0, 0, 0, 0x22]),
        ),
    ]
}

#[test]
fn parse_kernel_config_view() {
    let frame = Frame::new_checked(&KERNEL_CONFIG[..]).unwrap();
    assert_eq!(frame.dst_addr(), BRIDGE_GROUP_ADDRESS);
    let packet = Packet::new_checked(&frame.payload()[LLC_HEADER_LEN..]).unwrap();
    assert_eq!(packet.protocol_id(), 0);
    assert_eq!(packet.version(), VERSION_STP);
    assert_eq!(packet.bpdu_type(), BpduType::Config);
    assert_eq!(packet.root_id().to_string(), "1000.0200000000b0");
    assert_eq!(packet.port_id().priority(), 128);
    assert_eq!(packet.port_id().number(), 1);
    assert_eq!(packet.max_age().to_duration(), Duration::from_secs(6));
    assert_eq!(packet.forward_delay().to_string(), "4s");
}

#[test]
fn parse_every_vector() {
    for (bytes, repr, _) in vectors() {
        assert_eq!(parse_frame(bytes), Ok(repr), "{repr}");
    }
    let Repr::Config(c) = kernel_config(0x81) else {
        unreachable!()
    };
    assert!(c.flags.topology_change() && c.flags.topology_change_ack());
    let Some(rst) = rst_designated().config().copied() else {
        unreachable!()
    };
    assert_eq!(rst.flags.0, 0x3f);
    assert_eq!(rst.flags.port_role(), PortRole::Designated);
    assert!(rst.flags.proposal() && rst.flags.learning() && rst.flags.forwarding());
    assert!(!rst.flags.agreement() && !rst.flags.topology_change_ack());
}

#[test]
fn emit_every_vector_byte_for_byte() {
    for (bytes, repr, src) in vectors() {
        let mut buf = [0xaa; 64];
        let len = repr.emit_frame(src, &mut buf).unwrap();
        assert_eq!(len, bytes.len());
        assert_eq!(len, repr.frame_len());
        assert_eq!(&buf[..len], bytes, "{repr}");
        assert_eq!(buf[len], 0xaa, "nothing written past the frame");
        assert_eq!(
            repr.emit_frame(src, &mut buf[..len - 1]),
            Err(Error::Truncated)
        );
    }
}

#[test]
fn padding_after_the_length_field_is_ignored() {
    let mut padded = KERNEL_TCN.to_vec();
    padded.resize(60, 0x5a);
    assert_eq!(parse_frame(&padded), Ok(Repr::Tcn));
}

#[test]
fn version_rules() {
    // A Configuration BPDU is one whatever its version (802.1D-2004 §9.3.4).
    let mut bytes = KERNEL_CONFIG;
    bytes[19] = 3;
    assert_eq!(parse_frame(&bytes), Ok(kernel_config(0)));
    // An RST BPDU needs version 2 or more; an MST BPDU (3) reads as its RST prefix.
    let mut bytes = RST_DESIGNATED;
    bytes[19] = 1;
    assert_eq!(parse_frame(&bytes), Err(Error::Unsupported));
    bytes[19] = 3;
    assert_eq!(parse_frame(&bytes), Ok(rst_designated()));
    // The Version 1 Length is ignored on receipt.
    let mut bytes = RST_DESIGNATED;
    bytes[52] = 7;
    assert_eq!(parse_frame(&bytes), Ok(rst_designated()));
}

#[test]
fn foreign_frames_are_unsupported() {
    // Another protocol identifier.
    let mut bytes = KERNEL_CONFIG;
    bytes[18] = 1;
    assert_eq!(parse_frame(&bytes), Err(Error::Unsupported));
    // An unknown BPDU type.
    let mut bytes = KERNEL_TCN;
    bytes[20] = 0x81;
    assert_eq!(parse_frame(&bytes), Err(Error::Unsupported));
    // Another LLC SAP or control.
    for at in [14, 15, 16] {
        let mut bytes = KERNEL_CONFIG;
        bytes[at] ^= 0x01;
        assert_eq!(parse_frame(&bytes), Err(Error::Unsupported), "byte {at}");
    }
    // An Ethernet II frame (type, not length).
    let mut bytes = KERNEL_CONFIG;
    bytes[12..14].copy_from_slice(&[0x08, 0x00]);
    assert_eq!(parse_frame(&bytes), Err(Error::Unsupported));
}

#[test]
fn length_field_is_checked() {
    // Longer than the frame.
    let mut bytes = KERNEL_CONFIG;
    bytes[13] = 0x27;
    assert_eq!(parse_frame(&bytes), Err(Error::Truncated));
    // Too short for LLC + BPDU header.
    let mut bytes = KERNEL_TCN;
    bytes[13] = 6;
    assert_eq!(parse_frame(&bytes), Err(Error::Malformed));
    // Covers a TCN but cuts a Configuration BPDU short.
    let mut bytes = KERNEL_CONFIG;
    bytes[13] = 0x25;
    assert_eq!(parse_frame(&bytes), Err(Error::Truncated));
}

#[test]
fn every_truncation_is_an_error() {
    for (bytes, repr, _) in vectors() {
        let bpdu = &bytes[ethernet::HEADER_LEN + LLC_HEADER_LEN..];
        for len in 0..repr.buffer_len() {
            assert_eq!(
                Packet::new_checked(&bpdu[..len]),
                Err(Error::Truncated),
                "{repr} len {len}"
            );
        }
        for len in 0..bytes.len() {
            assert!(
                parse_frame(&bytes[..len]).is_err(),
                "{repr} frame len {len}"
            );
        }
    }
}

#[test]
fn tcn_view_reads_config_fields_as_zero() {
    let packet = Packet::new_checked(&KERNEL_TCN[17..]).unwrap();
    assert_eq!(packet.root_id(), BridgeId::default());
    assert_eq!(packet.forward_delay(), Time(0));
    assert_eq!(packet.version_1_len(), 0);
}

#[test]
fn identifiers_and_times() {
    assert!(
        bridge(0x1000, 0xff) < bridge(0x8000, 0x00),
        "priority first"
    );
    assert!(bridge(0x8000, 0x01) < bridge(0x8000, 0x02));
    let id = bridge(0x8000, 0x01);
    assert_eq!(BridgeId::from_bytes(id.to_bytes()), id);
    assert_eq!(PortIdentifier::new(0x8f, 0x1234), PortIdentifier(0x8234));
    assert_eq!(Time::from_duration(Duration::from_millis(1500)), Time(384));
    assert_eq!(Time(384).to_duration(), Duration::from_millis(1500));
    assert_eq!(
        Time::from_duration(Duration::from_secs(1000)),
        Time(u16::MAX)
    );
    assert_eq!(Time(3).to_string(), "3/256s");
    for code in 0..=255u8 {
        assert_eq!(u8::from(BpduType::from(code)), code);
    }
    let mut flags = Flags(0xff);
    for role in [
        PortRole::Unknown,
        PortRole::AlternateOrBackup,
        PortRole::Root,
        PortRole::Designated,
    ] {
        flags = flags.with_port_role(role);
        assert_eq!(flags.port_role(), role);
        assert_eq!(flags.0 & !0x0c, 0xf3, "other bits untouched");
    }
}

/// What `emit_frame` writes for a root 0000.020000000001 equals, byte for byte, the frame that
/// was injected (AF_PACKET) into a kernel bridge's port in a throwaway namespace: the kernel took
/// it (root_id became 0000.020000000001, root port 1, root path cost 2), while the RST BPDU with
/// the same vector was ignored (the kernel accepts only version 0).
#[test]
fn frame_the_kernel_bridge_accepted() {
    const ACCEPTED: &str = "0180c20000000200000000110026424203000000000000000200000000010000\
                            0000000002000000000180010000060001000400";
    let root = bridge(0x0000, 0x01);
    let repr = Repr::Config(Config {
        flags: Flags::default(),
        root_id: root,
        root_path_cost: 0,
        bridge_id: root,
        port_id: PortIdentifier(0x8001),
        message_age: Time(0),
        max_age: Time::from_secs(6),
        hello_time: Time::from_secs(1),
        forward_delay: Time::from_secs(4),
    });
    let mut buf = [0u8; MAX_FRAME_LEN];
    let len = repr
        .emit_frame(Address([2, 0, 0, 0, 0, 0x11]), &mut buf)
        .unwrap();
    let hex: String = buf[..len].iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, ACCEPTED);
}

/// Writes every vector and a few emitted BPDUs into a pcap and checks that tshark (when
/// installed) decodes each as STP or RSTP with the fields we meant.
#[test]
fn tshark_decodes_what_we_emit() {
    use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
    use pcap_file::DataLink;

    let Ok(out) = std::process::Command::new("tshark").arg("-v").output() else {
        println!("note: tshark not installed, skipping the decode check");
        return;
    };
    assert!(out.status.success());

    let mut frames: Vec<Vec<u8>> = vectors().iter().map(|(b, _, _)| b.to_vec()).collect();
    let mut agreement = rst_designated();
    if let Repr::Rst(c) = &mut agreement {
        c.flags = Flags::default()
            .with_port_role(PortRole::Root)
            .with_agreement(true)
            .with_forwarding(true);
    }
    for repr in [agreement, Repr::Tcn] {
        let mut buf = [0u8; MAX_FRAME_LEN];
        let len = repr
            .emit_frame(Address([2, 0, 0, 0, 0, 9]), &mut buf)
            .unwrap();
        frames.push(buf[..len].to_vec());
    }

    let path = std::env::temp_dir().join(format!("rtlan-stp-{}.pcap", std::process::id()));
    {
        let file = std::fs::File::create(&path).unwrap();
        let header = PcapHeader {
            datalink: DataLink::ETHERNET,
            ..PcapHeader::default()
        };
        let mut writer = PcapWriter::with_header(file, header).unwrap();
        for (i, frame) in frames.iter().enumerate() {
            let len = u32::try_from(frame.len()).unwrap();
            let ts = Duration::from_secs(u64::try_from(i).unwrap());
            writer
                .write_packet(&PcapPacket::new(ts, len, frame))
                .unwrap();
        }
    }
    let out = std::process::Command::new("tshark")
        .arg("-r")
        .arg(&path)
        .args(["-T", "fields", "-E", "separator=|"])
        .args([
            "-e",
            "frame.protocols",
            "-e",
            "stp.version",
            "-e",
            "stp.type",
        ])
        .args(["-e", "stp.flags", "-e", "stp.root.hw", "-e", "stp.port"])
        .args(["-e", "stp.forward", "-e", "_ws.malformed"])
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&path);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let expected = [
        "eth:llc:stp|0|0x00|0x00|02:00:00:00:00:b0|0x8001|4|",
        "eth:llc:stp|0|0x00|0x81|02:00:00:00:00:b0|0x8001|4|",
        "eth:llc:stp|0|0x80|||||",
        "eth:llc:stp|2|0x02|0x3f|02:00:00:00:00:01|0x8002|15|",
        "eth:llc:stp|2|0x02|0x68|02:00:00:00:00:01|0x8002|15|",
        "eth:llc:stp|0|0x80|||||",
    ];
    assert_eq!(lines, expected, "tshark's reading of our frames");
}

proptest! {
    #[test]
    fn repr_round_trip(
        kind in 0u8..3,
        flags in any::<u8>(),
        root in any::<(u16, [u8; 6])>(),
        cost in any::<u32>(),
        bridge in any::<(u16, [u8; 6])>(),
        port in any::<u16>(),
        times in any::<[u16; 4]>(),
    ) {
        let config = Config {
            flags: Flags(flags),
            root_id: BridgeId { priority: root.0, addr: Address(root.1) },
            root_path_cost: cost,
            bridge_id: BridgeId { priority: bridge.0, addr: Address(bridge.1) },
            port_id: PortIdentifier(port),
            message_age: Time(times[0]),
            max_age: Time(times[1]),
            hello_time: Time(times[2]),
            forward_delay: Time(times[3]),
        };
        let repr = match kind {
            0 => Repr::Config(config),
            1 => Repr::Tcn,
            _ => Repr::Rst(config),
        };
        let mut buf = [0u8; MAX_FRAME_LEN];
        let len = repr.emit_frame(Address([2, 0, 0, 0, 0, 1]), &mut buf).unwrap();
        prop_assert_eq!(parse_frame(&buf[..len]), Ok(repr));
        let bpdu = &buf[ethernet::HEADER_LEN + LLC_HEADER_LEN..len];
        prop_assert_eq!(Repr::parse(&Packet::new_checked(bpdu).unwrap()), Ok(repr));
    }
}
