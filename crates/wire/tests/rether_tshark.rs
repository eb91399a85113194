//! tshark reads every RETHER message we emit through `tools/wireshark/rtlan.lua`: one frame per
//! message type (SWITCH with REGENERATE, SWITCH_ACK, a TOKEN with stations and an RT-set,
//! SWITCH_TO_CSMA, JOIN, LEAVE, DATA with a payload) written to a pcap and read back with
//! `tshark -X lua_script:… -T fields`, and the dissector flags a token whose counts disagree
//! with its length as malformed.
//!
//! Without `tshark` on the PATH the test says so and passes — except under `CI=true`, where a
//! missing `tshark` fails it (`scripts/install-deps` installs it).

mod tshark_util;

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::DataLink;
use rtlan_wire::ethernet::Address;
use rtlan_wire::rether::{
    emit_frame, DataRepr, Dest, Member, Message, NodeId, Phase, Repr, SessionEntry, SwitchRepr,
    TokenRepr, GROUP,
};

fn id(n: u16) -> NodeId {
    NodeId::new(n).unwrap()
}

fn repr(source: u16, dest: Dest, message: Message) -> Repr {
    Repr {
        generation: 7,
        source: id(source),
        dest,
        message,
    }
}

fn token() -> TokenRepr {
    TokenRepr {
        residual_ns: 30_000_000,
        trt_ns: 33_333_332,
        t_nrt_ns: 5_000_000,
        cycle: 12,
        phase: Phase::NonRealTime,
        rt_next: 0,
        nrt_next: Some(id(3)),
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
        sessions: vec![
            SessionEntry {
                session: 1,
                sender: id(3),
                receiver: Some(id(1)),
                closing: false,
                tht_ns: 1_300_000,
                bytes_per_trt: 6_250,
            },
            SessionEntry {
                session: 2,
                sender: id(1),
                receiver: None,
                closing: true,
                tht_ns: 700_000,
                bytes_per_trt: 3_000,
            },
        ],
    }
}

/// The frames, each with the `-T fields` line tshark must print for it: type, source,
/// destination, generation, residual, members, sessions, the station list, the RT senders,
/// the data unit.
fn frames() -> Vec<(Vec<u8>, &'static str)> {
    let data = DataRepr {
        session: 4,
        unit: 99,
        fragment: 1,
        fragments: 2,
        payload_len: 5,
    };
    let cases: Vec<(Repr, &[u8], &str)> = vec![
        (
            repr(
                3,
                Dest::All,
                Message::Switch(SwitchRepr {
                    trt_ns: 33_333_332,
                    t_nrt_ns: 5_000_000,
                    attempt: 1,
                    regenerate: true,
                }),
            ),
            b"",
            "1\t3\t65535\t7\t\t\t\t\t\t",
        ),
        (
            repr(
                2,
                Dest::Node(id(3)),
                Message::SwitchAck { initiator: id(3) },
            ),
            b"",
            "2\t2\t3\t7\t\t\t\t\t\t",
        ),
        (
            repr(1, Dest::Node(id(3)), Message::Token(token())),
            b"",
            "3\t1\t3\t7\t30000000\t3\t2\t1,3,5\t3,1\t",
        ),
        (
            repr(1, Dest::All, Message::SwitchToCsma),
            b"",
            "4\t1\t65535\t7\t\t\t\t\t\t",
        ),
        (
            repr(9, Dest::All, Message::Join),
            b"",
            "5\t9\t65535\t7\t\t\t\t\t\t",
        ),
        (
            repr(9, Dest::All, Message::Leave),
            b"",
            "6\t9\t65535\t7\t\t\t\t\t\t",
        ),
        (
            repr(2, Dest::Node(id(4)), Message::Data(data)),
            b"hello",
            "7\t2\t4\t7\t\t\t\t\t\t99",
        ),
    ];
    cases
        .into_iter()
        .map(|(repr, payload, want)| {
            let mut buf = vec![0u8; 1600];
            let dst = match repr.message {
                Message::SwitchAck { .. } | Message::Data(_) => Address([2, 0, 0, 0, 0, 4]),
                _ => GROUP,
            };
            let len = emit_frame(&repr, Address([2, 0, 0, 0, 0, 1]), dst, payload, &mut buf)
                .expect("emits");
            buf.truncate(len.max(60));
            (buf, want)
        })
        .collect()
}

fn write_pcap(path: &std::path::Path, frames: &[Vec<u8>]) {
    let file = std::fs::File::create(path).unwrap();
    let header = PcapHeader {
        datalink: DataLink::ETHERNET,
        ..PcapHeader::default()
    };
    let mut writer = PcapWriter::with_header(file, header).unwrap();
    for (i, f) in frames.iter().enumerate() {
        let packet = PcapPacket::new(
            std::time::Duration::from_millis(i as u64),
            f.len() as u32,
            f,
        );
        writer.write_packet(&packet).unwrap();
    }
}

fn lua_script() -> String {
    format!(
        "{}/../../tools/wireshark/rtlan.lua",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn tshark(pcap: &std::path::Path, args: &[&str]) -> String {
    let script = format!("lua_script:{}", lua_script());
    tshark_util::run(&["-X", &script], pcap, args)
}

/// Removes the file when dropped (on success and on a failed assertion alike).
struct Remove(std::path::PathBuf);

impl Drop for Remove {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn tshark_reads_every_rether_message_through_the_lua_dissector() {
    if !tshark_util::available() {
        return;
    }
    let pcap = std::env::temp_dir().join(format!("rtlan-rether-{}.pcap", std::process::id()));
    let _cleanup = Remove(pcap.clone());
    let cases = frames();
    write_pcap(
        &pcap,
        &cases.iter().map(|(f, _)| f.clone()).collect::<Vec<_>>(),
    );
    let fields = tshark(
        &pcap,
        &[
            "-T",
            "fields",
            "-E",
            "occurrence=a",
            "-E",
            "aggregator=,",
            "-e",
            "rether.type",
            "-e",
            "rether.source",
            "-e",
            "rether.dest",
            "-e",
            "rether.generation",
            "-e",
            "rether.token.residual_ns",
            "-e",
            "rether.token.members",
            "-e",
            "rether.token.sessions",
            "-e",
            "rether.member",
            "-e",
            "rether.rt.sender",
            "-e",
            "rether.data.unit",
        ],
    );
    let lines: Vec<&str> = fields.lines().collect();
    assert_eq!(lines.len(), cases.len(), "{fields}");
    for (line, (_, want)) in lines.iter().zip(&cases) {
        assert_eq!(line, want);
    }
    let tree = tshark(&pcap, &["-V"]);
    for text in [
        "RETHER timed-token protocol",
        "Type: TOKEN (3)",
        "Regenerate: True",
        "Phase: non-real-time (1)",
        "Dead: True",
        "Receiver: none (0)",
        "Closing: True",
        "Payload: 68656c6c6f",
    ] {
        assert!(tree.contains(text), "`{text}` missing from:\n{tree}");
    }
    assert!(!tree.contains("Malformed RETHER"), "{tree}");

    // A token that claims four stations but carries three: the dissector says so.
    let mut bad = cases[2].0.clone();
    bad[14 + 16 + 21] = 4;
    write_pcap(&pcap, &[bad]);
    let tree = tshark(&pcap, &["-V"]);
    assert!(
        tree.contains("list counts do not match the length"),
        "{tree}"
    );
}
