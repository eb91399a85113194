//! Running tshark from the wire tests (`rsvp_tshark.rs`, `rether_tshark.rs`) and from the rtlan
//! tests that read what the simulator or a running switch wrote (`control_tshark_sim.rs`,
//! `lab_capture.rs`).

use std::path::Path;
use std::process::Command;

/// Whether tshark is installed; without it a test says so and passes, except under `CI=true`,
/// where a missing tshark fails it (`scripts/install-deps` installs it).
pub(crate) fn available() -> bool {
    if Command::new("tshark").arg("--version").output().is_ok() {
        return true;
    }
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    assert!(
        !ci,
        "tshark is not installed (scripts/install-deps installs it)"
    );
    println!("note: tshark not installed, skipping the tshark check");
    false
}

/// `tshark <before…> -r pcap <args…>`'s standard output; a failing tshark fails the test.
pub(crate) fn run(before: &[&str], pcap: &Path, args: &[&str]) -> String {
    let out = Command::new("tshark")
        .args(before)
        .arg("-r")
        .arg(pcap)
        .args(args)
        .output()
        .expect("tshark runs");
    // tshark run as root warns on stderr; only the exit status and stdout matter.
    assert!(
        out.status.success(),
        "tshark {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("tshark prints UTF-8")
}

/// One control-protocol frame (EtherType 0x88B5) as the Lua dissector decoded it.
#[allow(dead_code)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ControlRow {
    /// `rtlan.type`, the message type code.
    pub(crate) msg_type: u8,
    /// `rtlan.request_id`.
    pub(crate) request_id: String,
    /// `rtlan.fail.reason` (SETUP_FAIL), else empty.
    pub(crate) fail_reason: String,
    /// `rtlan.teardown.reason` (TEARDOWN), else empty.
    pub(crate) teardown_reason: String,
}

/// Every control frame of `pcap`, read with `tools/wireshark/rtlan.lua`. Asserts what holds for
/// every frame a real switch or host daemon emits: it is dissected (type and request id), it
/// carries the EPOCH TLV, no expert info or malformation is flagged, and the dissector raises no
/// Lua error.
#[allow(dead_code)]
pub(crate) fn control_rows(pcap: &Path) -> Vec<ControlRow> {
    let script = format!(
        "lua_script:{}/../../tools/wireshark/rtlan.lua",
        env!("CARGO_MANIFEST_DIR")
    );
    let fields = run(
        &["-X", &script],
        pcap,
        &[
            "-Y",
            "eth.type == 0x88b5",
            "-T",
            "fields",
            "-E",
            "occurrence=a",
            "-E",
            "aggregator=,",
            "-e",
            "rtlan.type",
            "-e",
            "rtlan.request_id",
            "-e",
            "rtlan.fail.reason",
            "-e",
            "rtlan.teardown.reason",
            "-e",
            "rtlan.epoch",
            "-e",
            "_ws.expert.message",
            "-e",
            "_ws.malformed",
        ],
    );
    let name = pcap.display();
    let rows = fields
        .lines()
        .map(|line| {
            let v: Vec<&str> = line.split('\t').collect();
            assert_eq!(v.len(), 7, "{name}: {line}");
            assert!(
                !v[0].is_empty() && !v[1].is_empty(),
                "{name}: not dissected: {line}"
            );
            assert!(!v[4].is_empty(), "{name}: no EPOCH TLV: {line}");
            assert!(
                v[5].is_empty() && v[6].is_empty(),
                "{name}: flagged: {line}"
            );
            ControlRow {
                msg_type: v[0].parse().expect("a type code"),
                request_id: v[1].to_string(),
                fail_reason: v[2].to_string(),
                teardown_reason: v[3].to_string(),
            }
        })
        .collect();
    let tree = run(&["-X", &script], pcap, &["-Y", "rtlan", "-V"]);
    assert!(!tree.contains("Lua Error"), "{name}:\n{tree}");
    rows
}
