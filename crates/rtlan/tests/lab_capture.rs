//! Lab test of per-port capture from the rtlan switch (`capture` on the control socket,
//! docs/switch.md): the frames received on and transmitted from one switch port land in a pcap
//! file that tshark reads.
//!
//! No timing tolerance is involved: the test counts frames. The capture's queue (4096 frames) is
//! far larger than the few dozen frames of the test, so nothing may be dropped.

mod common;
#[path = "../../wire/tests/tshark_util/mod.rs"]
mod tshark_util;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::*;
use rtlan_lab::Lab;
use serde_json::{json, Value};

const PINGS: u32 = 5;

/// Sends `request` to s1's control socket; `Ok(data)` or `Err(code: message)`.
fn ctl_json(lab: &Lab, request: Value) -> Result<Value, String> {
    let socket = lab.switch_socket("s1").expect("an rtlan switch");
    rtlan_linux::ctl::request_json(&socket, request, Duration::from_secs(5)).map_err(|e| match e {
        rtlan_linux::ctl::CtlError::Refused(reason) => reason,
        other => panic!("control request failed: {other}"),
    })
}

fn refused_code(lab: &Lab, request: Value) -> String {
    let reason = ctl_json(lab, request.clone()).expect_err("refused");
    reason
        .split_once(':')
        .map_or(reason.clone(), |(code, _)| code.to_string())
}

/// Removes the scratch directory even when the test fails.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `(eth.src, icmp.type)` of every ICMP frame in the pcap, as tshark reads it.
fn tshark_icmp(path: &Path) -> Vec<(String, String)> {
    let out = Command::new("tshark")
        .args(["-r"])
        .arg(path)
        .args([
            "-Y",
            "icmp",
            "-T",
            "fields",
            "-e",
            "eth.src",
            "-e",
            "icmp.type",
        ])
        .output()
        .expect("tshark runs");
    assert!(
        out.status.success(),
        "tshark failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (src, ty) = l.split_once('\t')?;
            Some((src.to_string(), ty.to_string()))
        })
        .collect()
}

#[test]
fn switch_captures_a_ports_received_and_transmitted_frames_to_pcap() {
    if !root_or_skip("switch_captures_a_port") {
        return;
    }
    let _serial = rtlan_lab::serial_lock().expect("lab lock");
    let dir = std::env::temp_dir().join(format!("rtl-capture-lab-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let scratch = Scratch(dir.clone());
    let lab = up_file("default.toml", "cap");
    let port = port_towards(&lab, "s1", "a");
    let ifname = format!("p{port}");
    let pcap = dir.join("s1-a.pcap");

    // Refusals, each with its code, before anything is created.
    let path = pcap.to_str().expect("utf-8 path");
    for (request, code) in [
        (json!({"op": "capture-status"}), "no_capture"),
        (json!({"op": "capture-stop"}), "no_capture"),
        (
            json!({"op": "capture", "port": ifname, "path": "s1-a.pcap", "frames": 10}),
            "relative_path",
        ),
        (
            json!({"op": "capture", "port": ifname, "path": path}),
            "no_stop_condition",
        ),
        (
            json!({"op": "capture", "port": "eth9", "path": path, "frames": 10}),
            "no_such_port",
        ),
        (
            json!({"op": "capture", "port": ifname, "path": path, "seconds": 1e9}),
            "bad_limit",
        ),
    ] {
        assert_eq!(refused_code(&lab, request.clone()), code, "{request}");
    }
    assert!(!pcap.exists(), "a refused capture creates no file");
    let existing = dir.join("existing.pcap");
    std::fs::write(&existing, b"keep").expect("write");
    let request = json!({"op": "capture", "port": port, "path": existing, "frames": 10});
    assert_eq!(refused_code(&lab, request), "file_exists");
    assert_eq!(std::fs::read(&existing).expect("read"), b"keep");

    // Start it the operator's way: `rtlan ctl`.
    let socket = lab.switch_socket("s1").expect("socket");
    let out = Command::new(env!("CARGO_BIN_EXE_rtlan"))
        .args(["ctl", "--socket"])
        .arg(&socket)
        .args([
            "capture",
            &format!("port={ifname}"),
            &format!("path={path}"),
            "frames=1000",
            "seconds=60",
        ])
        .output()
        .expect("rtlan ctl runs");
    assert!(
        out.status.success(),
        "rtlan ctl capture: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let status = ctl_json(&lab, json!({"op": "capture-status"})).expect("status");
    assert_eq!(status["state"], "running", "{status}");
    assert_eq!(status["ifname"], ifname.as_str());
    let again = json!({"op": "capture", "port": 0, "path": dir.join("second.pcap"), "frames": 1});
    assert_eq!(refused_code(&lab, again), "capture_running");

    let b = lab.host_ip("b").expect("b's ip");
    let r = rtlan_lab::tools::ping(
        lab.netns("a").expect("ns"),
        b,
        PINGS,
        Duration::from_millis(200),
    )
    .expect("ping runs");
    assert_eq!(r.received, PINGS, "ping a -> b: {r:?}");

    let stopped = ctl_json(&lab, json!({"op": "capture_stop"})).expect("stop");
    assert_eq!(stopped["stop_reason"], "stopped", "{stopped}");
    let (done, _) = wait_until(Duration::from_secs(5), || {
        ctl_json(&lab, json!({"op": "capture-status"})).expect("status")["state"] == "done"
    });
    let status = ctl_json(&lab, json!({"op": "capture-status"})).expect("status");
    assert!(done, "the writer closes the file: {status}");
    let count = |k: &str| {
        status[k]
            .as_u64()
            .unwrap_or_else(|| panic!("{k}: {status}"))
    };
    assert_eq!(count("dropped"), 0, "{status}");
    assert!(
        count("rx_frames") >= u64::from(PINGS) && count("tx_frames") >= u64::from(PINGS),
        "{status}"
    );
    assert_eq!(
        count("written"),
        count("rx_frames") + count("tx_frames"),
        "{status}"
    );

    // The pcap: a's echo requests received on the port, b's replies transmitted from it.
    let a_mac = host_mac(&lab, "a");
    let b_mac = host_mac(&lab, "b");
    let icmp = tshark_icmp(&pcap);
    let requests = icmp.iter().filter(|(s, t)| *s == a_mac && t == "8").count();
    let replies = icmp.iter().filter(|(s, t)| *s == b_mac && t == "0").count();
    assert_eq!(
        (requests, replies, icmp.len()),
        (PINGS as usize, PINGS as usize, 2 * PINGS as usize),
        "tshark: {icmp:?}"
    );

    // Stopped captures let a new one start (and an existing file be replaced on request).
    let request =
        json!({"op": "capture", "port": port, "path": existing, "frames": 1, "overwrite": true});
    ctl_json(&lab, request).expect("a new capture after the last one ended");
    ctl_json(&lab, json!({"op": "capture-stop"})).expect("stop");

    down_clean(lab);
    drop(scratch);
}

/// Issue 15 item 4: the Wireshark Lua dissector (`tools/wireshark/rtlan.lua`) decodes the control
/// frames a running `rtlan switch` received and sent, as its own capture wrote them: a's port
/// while a's rtcd opens and closes a connection to c. Every 0x88B5 frame is dissected with its
/// type, request id and EPOCH TLV, nothing is flagged, and the five message types of an open and
/// a close (SETUP, SETUP_OK, TEARDOWN, TEARDOWN_ACK, HELLO) are all there.
#[test]
fn the_lua_dissector_decodes_the_signalling_a_running_switch_captured() {
    if !root_or_skip("the_lua_dissector_decodes_the_signalling_a_running_switch_captured") {
        return;
    }
    if !tshark_util::available() {
        return;
    }
    let _serial = rtlan_lab::serial_lock().expect("lab lock");
    let dir = std::env::temp_dir().join(format!("rtl-capture-lua-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let scratch = Scratch(dir.clone());
    let lab = up_file("default.toml", "clua");
    let port = port_towards(&lab, "s1", "a");
    let pcap = dir.join("s1-a-control.pcap");
    ctl_json(
        &lab,
        json!({"op": "capture", "port": port, "path": pcap, "seconds": 30}),
    )
    .expect("capture starts");
    let daemon = Daemon::start(&lab, "a");
    // Let a HELLO or two cross the port each way.
    std::thread::sleep(Duration::from_millis(1500));
    let mut client = daemon.client();
    let opened = client
        .open(&open_params(lab.host_ip("c").expect("ip"), 7000))
        .expect("open a -> c");
    client.close(opened.conn).expect("close");
    std::thread::sleep(Duration::from_millis(300));
    ctl_json(&lab, json!({"op": "capture-stop"})).expect("stop");
    let (done, _) = wait_until(Duration::from_secs(5), || {
        ctl_json(&lab, json!({"op": "capture-status"})).expect("status")["state"] == "done"
    });
    assert!(done, "the writer closes the file");
    drop((client, daemon));

    let rows = tshark_util::control_rows(&pcap);
    eprintln!("{rows:?}");
    let types: std::collections::BTreeSet<u8> = rows.iter().map(|r| r.msg_type).collect();
    // SETUP 1, SETUP_OK 2, TEARDOWN 4, TEARDOWN_ACK 5, HELLO 6 (docs/protocol.md §4).
    for t in [1u8, 2, 4, 5, 6] {
        assert!(types.contains(&t), "type {t} missing: {rows:?}");
    }
    down_clean(lab);
    drop(scratch);
}
