//! tshark reads every control message we emit through `tools/wireshark/rtlan.lua`: one frame
//! per message type (SETUP with DELAY and EPOCH, SETUP_OK with BOUND, SETUP_FAIL with a known
//! and an unknown reason, TEARDOWN retransmitted with a REASON, TEARDOWN_ACK, HELLO from a
//! switch and from a host, REFRESH signed with the AUTH TLV of `docs/protocol.md` §8's example,
//! REFRESH_ACK with an unknown TLV), built by `rtlan_wire::control::Repr`, written to a pcap and
//! read back with `tshark -X lua_script:… -T fields`: every `rtlan.*` field of every frame is
//! compared with the value the Repr holds, and fields a message does not carry must be empty.
//! Then ten broken messages, each refused by `Repr::parse`, must each draw the dissector's
//! expert info with the reason (bad magic, version, length, flags, TLV area, T-SPEC, AUTH flag);
//! so must a signed message whose AUTH TLV is not last (`auth::verify` refuses it), and an
//! undefined message type draws a warning. Short frames' Ethernet padding is `rtlan.padding`.
//! The frames the simulated switches and daemons emit are checked in
//! `crates/rtlan/tests/control_tshark_sim.rs`.
//!
//! Without `tshark` on the PATH the test says so and passes — except under `CI=true`, where a
//! missing `tshark` fails it (`scripts/install-deps` installs it).

mod tshark_util;

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::path::Path;

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::DataLink;
use rtlan_wire::control::{
    auth, BoundTlv, DelayTlv, EpochTlv, FailReason, HelloRepr, Message, Packet, ProxyMacPlan, Repr,
    Role, SetupRepr, TeardownReason, Tlv, CONTROL_ID, FLAG_AUTHENTICATED, FLAG_RETRANSMISSION,
    TLV_AUTH,
};
use rtlan_wire::ethernet::{self, Address};

/// The sender of every frame (the MAC `docs/protocol.md` §8's AUTH example is signed for).
const SRC: Address = Address([2, 0, 0, 0, 0, 1]);

/// Every field the test reads, in the order of the `-e` options.
const FIELDS: &[&str] = &[
    "rtlan.type",
    "rtlan.flags",
    "rtlan.flags.retransmission",
    "rtlan.flags.authenticated",
    "rtlan.hop",
    "rtlan.length",
    "rtlan.request_id",
    "rtlan.connection_id",
    "rtlan.setup.src_ip",
    "rtlan.setup.dst_ip",
    "rtlan.setup.dst_port",
    "rtlan.setup.src_port",
    "rtlan.setup.rate",
    "rtlan.setup.max_burst",
    "rtlan.setup.max_packet",
    "rtlan.setup.hop_limit",
    "rtlan.setup_ok.hops",
    "rtlan.fail.reason",
    "rtlan.fail.hop",
    "rtlan.fail.switch_ip",
    "rtlan.hello.role",
    "rtlan.hello.port",
    "rtlan.hello.mac",
    "rtlan.hello.mgmt_ip",
    "rtlan.tlv.type",
    "rtlan.tlv.length",
    "rtlan.tlv.value",
    "rtlan.delay.required_ns",
    "rtlan.delay.accumulated_ns",
    "rtlan.bound.bound_ns",
    "rtlan.bound.latency_ns",
    "rtlan.epoch",
    "rtlan.teardown.reason",
    "rtlan.auth.key_id",
    "rtlan.auth.seq",
    "rtlan.auth.digest",
    "rtlan.padding",
    "_ws.expert.message",
];

/// The header fields every message carries (type, flags, hop, length, request id) and the
/// Ethernet padding [`frame`] adds after a short message.
fn header(repr: &Repr) -> Vec<(&'static str, String)> {
    let flags = repr.flags;
    let bit = |mask: u8| if flags & mask != 0 { "1" } else { "0" }.to_string();
    let padding = 60usize.saturating_sub(ethernet::HEADER_LEN + repr.buffer_len());
    let padding = (padding > 0).then(|| ("rtlan.padding", "00".repeat(padding)));
    let fields = vec![
        (
            "rtlan.type",
            u8::from(repr.message.message_type()).to_string(),
        ),
        ("rtlan.flags", format!("0x{flags:02x}")),
        ("rtlan.flags.retransmission", bit(FLAG_RETRANSMISSION)),
        ("rtlan.flags.authenticated", bit(FLAG_AUTHENTICATED)),
        ("rtlan.hop", repr.hop.to_string()),
        ("rtlan.length", repr.buffer_len().to_string()),
        ("rtlan.request_id", repr.request_id.to_string()),
    ];
    fields.into_iter().chain(padding).collect()
}

/// The fields of `repr`'s body and TLVs, as tshark prints them (`-E occurrence=a`, `,`).
fn body(repr: &Repr) -> Vec<(&'static str, String)> {
    let id = |c: u16| ("rtlan.connection_id", format!("0x{c:04x}"));
    let mut out = match repr.message {
        Message::Setup(s) => vec![
            ("rtlan.setup.src_ip", s.src_ip.to_string()),
            ("rtlan.setup.dst_ip", s.dst_ip.to_string()),
            ("rtlan.setup.dst_port", s.dst_port.to_string()),
            ("rtlan.setup.src_port", s.src_port.to_string()),
            ("rtlan.setup.rate", s.rate.to_string()),
            ("rtlan.setup.max_burst", s.max_burst.to_string()),
            ("rtlan.setup.max_packet", s.max_packet.to_string()),
            id(s.connection_id),
            ("rtlan.setup.hop_limit", s.hop_limit.to_string()),
        ],
        Message::SetupOk {
            connection_id,
            hops,
        } => vec![id(connection_id), ("rtlan.setup_ok.hops", hops.to_string())],
        Message::SetupFail {
            reason,
            failed_hop,
            connection_id,
            switch_ip,
        } => vec![
            ("rtlan.fail.reason", u8::from(reason).to_string()),
            ("rtlan.fail.hop", failed_hop.to_string()),
            id(connection_id),
            ("rtlan.fail.switch_ip", switch_ip.to_string()),
        ],
        Message::Teardown { connection_id }
        | Message::TeardownAck { connection_id }
        | Message::Refresh { connection_id }
        | Message::RefreshAck { connection_id } => vec![id(connection_id)],
        Message::Hello(h) => vec![
            ("rtlan.hello.role", u8::from(h.role).to_string()),
            ("rtlan.hello.port", h.port.to_string()),
            ("rtlan.hello.mac", h.mac.to_string()),
            ("rtlan.hello.mgmt_ip", h.management_ip.to_string()),
        ],
    };
    let join = |items: Vec<String>| items.join(",");
    if !repr.tlvs.is_empty() {
        out.push((
            "rtlan.tlv.type",
            join(repr.tlvs.iter().map(|t| t.kind.to_string()).collect()),
        ));
        out.push((
            "rtlan.tlv.length",
            join(
                repr.tlvs
                    .iter()
                    .map(|t| t.value.len().to_string())
                    .collect(),
            ),
        ));
        // The dissector shows the raw value of the TLVs it has no fields for.
        let unknown: Vec<String> = repr
            .tlvs
            .iter()
            .filter(|t| !(1..=5).contains(&t.kind))
            .map(|t| hex(&t.value))
            .collect();
        if !unknown.is_empty() {
            out.push(("rtlan.tlv.value", join(unknown)));
        }
    }
    if let Some(d) = repr.delay().unwrap() {
        out.push(("rtlan.delay.required_ns", d.required_ns.to_string()));
        out.push(("rtlan.delay.accumulated_ns", d.accumulated_ns.to_string()));
    }
    if let Some(b) = repr.bound().unwrap() {
        out.push(("rtlan.bound.bound_ns", b.bound_ns.to_string()));
        out.push(("rtlan.bound.latency_ns", b.latency_ns.to_string()));
    }
    if let Some(e) = repr.epoch().unwrap() {
        out.push(("rtlan.epoch", format!("0x{:016x}", e.0)));
    }
    if let Some(r) = repr.reason().unwrap() {
        out.push(("rtlan.teardown.reason", u8::from(r).to_string()));
    }
    if let Some(t) = repr.tlvs.iter().find(|t| t.kind == TLV_AUTH) {
        let a = auth::AuthTlv::parse(&t.value).unwrap();
        out.push(("rtlan.auth.key_id", a.key_id.to_string()));
        out.push(("rtlan.auth.seq", a.seq.to_string()));
        out.push(("rtlan.auth.digest", hex(&a.digest)));
    }
    out
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn with_tlvs(mut repr: Repr, tlvs: Vec<Tlv>) -> Repr {
    repr.tlvs = tlvs;
    repr
}

const EPOCH: EpochTlv = EpochTlv(0x6740_0000_dead_beef);

/// One message of every type, most with the TLVs rtlan's nodes put on them.
fn messages() -> Vec<Repr> {
    let setup = SetupRepr {
        src_ip: Ipv4Addr::new(198, 18, 0, 1),
        dst_ip: Ipv4Addr::new(198, 18, 0, 32),
        dst_port: 5004,
        src_port: 0,
        rate: 50_000_000,
        max_burst: 15_140,
        max_packet: 1514,
        connection_id: 0x0309,
        hop_limit: 16,
    };
    let delay = DelayTlv {
        required_ns: 3_000_000,
        accumulated_ns: 2_000_000,
    };
    let bound = BoundTlv {
        bound_ns: 12_345_678_901,
        latency_ns: 4_000_000,
    };
    let mut teardown = Repr::new(
        0,
        2,
        Message::Teardown {
            connection_id: 0x0309,
        },
    );
    teardown.flags = FLAG_RETRANSMISSION;
    teardown.tlvs = vec![TeardownReason::NeighbourRestarted.to_tlv(), EPOCH.to_tlv()];
    // docs/protocol.md §8's example: the REFRESH of §7 signed by 02:00:00:00:00:01.
    let mut signed = Repr::new(
        0,
        3,
        Message::Refresh {
            connection_id: 0x0309,
        },
    );
    auth::sign(
        &mut signed,
        1,
        0x0102_0304_0506_0708,
        b"rtlan-test-key-1",
        SRC,
    )
    .unwrap();
    let hello = |role, port, mac: [u8; 6], ip| {
        Message::Hello(HelloRepr {
            role,
            port,
            mac: Address(mac),
            management_ip: ip,
        })
    };
    vec![
        with_tlvs(
            Repr::new(0, 1, Message::Setup(setup)),
            vec![delay.to_tlv(), EPOCH.to_tlv()],
        ),
        with_tlvs(
            Repr::new(
                1,
                1,
                Message::SetupOk {
                    connection_id: 0x0309,
                    hops: 2,
                },
            ),
            vec![bound.to_tlv(), EPOCH.to_tlv()],
        ),
        Repr::new(
            1,
            1,
            Message::SetupFail {
                reason: FailReason::Bandwidth,
                failed_hop: 2,
                connection_id: 0x0309,
                switch_ip: Ipv4Addr::new(198, 18, 255, 2),
            },
        ),
        Repr::new(
            2,
            9,
            Message::SetupFail {
                reason: FailReason::Unknown(42),
                failed_hop: 3,
                connection_id: 0xfff0,
                switch_ip: Ipv4Addr::UNSPECIFIED,
            },
        ),
        teardown,
        Repr::new(
            1,
            2,
            Message::TeardownAck {
                connection_id: 0x0309,
            },
        ),
        Repr::new(
            1,
            7,
            hello(
                Role::Switch,
                3,
                [2, 0, 0, 0, 1, 3],
                Ipv4Addr::new(198, 18, 255, 1),
            ),
        ),
        with_tlvs(
            Repr::new(
                0,
                0,
                hello(
                    Role::HostDaemon,
                    0,
                    [2, 0, 0xc6, 0x12, 0, 1],
                    Ipv4Addr::new(198, 18, 0, 1),
                ),
            ),
            vec![EPOCH.to_tlv()],
        ),
        signed,
        with_tlvs(
            Repr::new(
                1,
                3,
                Message::RefreshAck {
                    connection_id: 0x0309,
                },
            ),
            vec![Tlv {
                kind: 0x7f,
                value: b"abc".to_vec(),
            }],
        ),
    ]
}

/// The Ethernet frame carrying `repr` to the control MAC, padded to 60 bytes as a NIC would.
fn frame(repr: &Repr) -> Vec<u8> {
    let mut buf = vec![0u8; 1600];
    let dst = ProxyMacPlan::default().mac_for(CONTROL_ID);
    let len = repr.emit_frame(SRC, dst, &mut buf).expect("emits");
    buf.truncate(len.max(60));
    buf
}

fn write_pcap(path: &Path, frames: &[Vec<u8>]) {
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

fn tshark(pcap: &Path, args: &[&str]) -> String {
    let script = format!(
        "lua_script:{}/../../tools/wireshark/rtlan.lua",
        env!("CARGO_MANIFEST_DIR")
    );
    tshark_util::run(&["-X", &script], pcap, args)
}

/// Every frame's `FIELDS`, by name.
fn fields(pcap: &Path) -> Vec<BTreeMap<&'static str, String>> {
    let mut args = vec!["-T", "fields", "-E", "occurrence=a", "-E", "aggregator=,"];
    for f in FIELDS {
        args.extend(["-e", f]);
    }
    let out = tshark(pcap, &args);
    out.lines()
        .map(|line| {
            let values: Vec<&str> = line.split('\t').collect();
            assert_eq!(values.len(), FIELDS.len(), "{line}");
            FIELDS
                .iter()
                .zip(values)
                .map(|(k, v)| (*k, v.to_string()))
                .collect()
        })
        .collect()
}

/// Removes the file when dropped (on success and on a failed assertion alike).
struct Remove(std::path::PathBuf);

impl Drop for Remove {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn temp_pcap(name: &str) -> (std::path::PathBuf, Remove) {
    let path = std::env::temp_dir().join(format!("rtlan-{name}-{}.pcap", std::process::id()));
    (path.clone(), Remove(path))
}

#[test]
fn tshark_reads_every_control_message_through_the_lua_dissector() {
    if !tshark_util::available() {
        return;
    }
    let (pcap, _cleanup) = temp_pcap("control");
    let reprs = messages();
    let frames: Vec<Vec<u8>> = reprs.iter().map(frame).collect();
    // What rtlan's own receivers make of these frames: every one parses, the signed one verifies.
    for f in &frames {
        let packet = Packet::new_checked(&f[ethernet::HEADER_LEN..]).expect("checked");
        Repr::parse(&packet).expect("parses");
    }
    let refresh = &frames[8][ethernet::HEADER_LEN..];
    auth::verify(refresh, SRC, b"rtlan-test-key-1").expect("verifies");
    write_pcap(&pcap, &frames);

    let rows = fields(&pcap);
    assert_eq!(rows.len(), reprs.len());
    for (i, (row, repr)) in rows.iter().zip(&reprs).enumerate() {
        let want: BTreeMap<&str, String> = header(repr).into_iter().chain(body(repr)).collect();
        for name in FIELDS {
            let expected = want.get(name).map_or("", String::as_str);
            assert_eq!(row[name], expected, "frame {i} ({repr}), field {name}");
        }
    }
    // The digest of docs/protocol.md §8's example, as the document prints it.
    assert_eq!(
        rows[8]["rtlan.auth.digest"],
        "a3222014e0c85bc371ce0831d8d21610"
    );

    let tree = tshark(&pcap, &["-V"]);
    for text in [
        "rtlan control protocol, SETUP",
        "Type: SETUP_OK (2)",
        "Reason: BANDWIDTH (1)",
        "Reason: Unknown (42)",
        "Retransmission: True",
        "Teardown reason: neighbour_restarted (4)",
        "Role: switch (2)",
        "Role: host daemon (1)",
        "MAC: 02:00:00:00:01:03",
        "Source UDP port: 0 (any)",
        "TLV type: AUTH (1)",
        "TLV type: Unknown (127)",
        "Authenticated: True",
    ] {
        assert!(tree.contains(text), "`{text}` missing from:\n{tree}");
    }
    let info = tshark(&pcap, &["-T", "fields", "-e", "_ws.col.Info"]);
    let info: Vec<&str> = info.lines().collect();
    assert_eq!(
        info[0],
        "SETUP req=1 hop=0 id=0x0309 198.18.0.1 -> 198.18.0.32:5004 rate=50000000 burst=15140 \
         max_packet=1514 required=3000000ns accumulated=2000000ns"
    );
    assert_eq!(
        info[2],
        "SETUP_FAIL req=1 hop=1 id=0x0309 BANDWIDTH at hop 2 (198.18.255.2)"
    );
    assert_eq!(
        info[4],
        "TEARDOWN req=2 hop=0 [retransmission] id=0x0309 reason=neighbour_restarted"
    );
    assert_eq!(
        info[6],
        "HELLO seq=7 hop=1 switch port 3 02:00:00:00:01:03 198.18.255.1"
    );
    assert_eq!(
        info[8],
        "REFRESH req=3 hop=0 [authenticated] id=0x0309 key=1 seq=72623859790382856"
    );
}

/// A broken copy of a good message (which `Repr::parse` must refuse) and the words the
/// dissector's expert info must say about it.
struct Broken {
    frame: Vec<u8>,
    says: &'static str,
}

/// Ten messages rtlan's receivers drop, each broken in one way.
fn broken() -> Vec<Broken> {
    let good = messages();
    let at = ethernet::HEADER_LEN;
    // Frame 0: SETUP, 30-byte body, then DELAY (18 bytes) and EPOCH (10 bytes); length 70.
    let setup = frame(&good[0]);
    // Frame 5: TEARDOWN_ACK, 16 bytes, no TLVs.
    let ack = frame(&good[5]);
    let edit = |base: &Vec<u8>, f: &dyn Fn(&mut Vec<u8>)| {
        let mut frame = base.clone();
        f(&mut frame);
        frame
    };
    vec![
        Broken {
            frame: edit(&ack, &|f| f[at] = b'X'),
            says: "magic is not \"RT\"",
        },
        Broken {
            frame: edit(&ack, &|f| f[at + 2] = 2),
            says: "version 2, only 1 is defined",
        },
        Broken {
            frame: edit(&ack, &|f| f[at + 4] = 0x80),
            says: "undefined flag bits set",
        },
        Broken {
            frame: edit(&ack, &|f| f[at + 7] = 200),
            says: "length 200 outside 12..46",
        },
        Broken {
            frame: edit(&ack, &|f| f[at + 7] = 14),
            says: "length 14 is shorter than the header and the 4-byte TEARDOWN_ACK body",
        },
        Broken {
            // The EPOCH TLV claims 9 bytes: it runs one past the length.
            frame: edit(&setup, &|f| f[at + 61] = 9),
            says: "TLV runs past the message length",
        },
        Broken {
            // One more byte, counted in the length: a lone byte after the TLVs.
            frame: edit(&setup, &|f| {
                f.push(0);
                f[at + 7] = 71;
            }),
            says: "a single byte left over after the TLVs",
        },
        Broken {
            // EPOCH made 7 bytes long, the message one byte shorter.
            frame: edit(&setup, &|f| {
                f[at + 7] = 69;
                f[at + 61] = 7;
            }),
            says: "EPOCH TLV is 7 bytes, must be 8",
        },
        Broken {
            // Rate 0 in the SETUP.
            frame: edit(&setup, &|f| f[at + 12 + 12..at + 12 + 20].fill(0)),
            says: "inconsistent T-SPEC",
        },
        Broken {
            frame: edit(&ack, &|f| f[at + 4] = FLAG_AUTHENTICATED),
            says: "AUTHENTICATED flag disagrees with the presence of an AUTH TLV",
        },
    ]
}

#[test]
fn the_dissector_flags_what_receivers_drop() {
    if !tshark_util::available() {
        return;
    }
    let (pcap, _cleanup) = temp_pcap("control-broken");
    let cases = broken();
    for case in &cases {
        let packet = Packet::new_checked(&case.frame[ethernet::HEADER_LEN..]);
        let parsed = packet.and_then(|p| Repr::parse(&p));
        assert!(parsed.is_err(), "{}: parsed as {parsed:?}", case.says);
    }
    write_pcap(
        &pcap,
        &cases.iter().map(|c| c.frame.clone()).collect::<Vec<_>>(),
    );
    let rows = fields(&pcap);
    assert_eq!(rows.len(), cases.len());
    for (row, case) in rows.iter().zip(&cases) {
        assert!(
            row["_ws.expert.message"].contains(case.says),
            "expected `{}`, expert info: `{}`",
            case.says,
            row["_ws.expert.message"]
        );
    }

    // A signed message with a TLV after the AUTH TLV: it parses, but does not verify.
    let mut late = messages()[8].clone();
    late.tlvs.push(EPOCH.to_tlv());
    let late = frame(&late);
    assert!(auth::verify(&late[ethernet::HEADER_LEN..], SRC, b"rtlan-test-key-1").is_err());
    write_pcap(&pcap, &[late]);
    let rows = fields(&pcap);
    assert_eq!(
        rows[0]["_ws.expert.message"],
        "AUTH TLV is not the last TLV"
    );

    // An undefined type is not malformed, but unknown: a warning, and the rest as data.
    let mut unknown = frame(&messages()[5]);
    unknown[ethernet::HEADER_LEN + 3] = 9;
    write_pcap(&pcap, &[unknown]);
    let tree = tshark(&pcap, &["-V"]);
    assert!(
        tree.contains("type 9 is not defined in version 1"),
        "{tree}"
    );
    assert!(tree.contains("Type: Unknown (9)"), "{tree}");
}
