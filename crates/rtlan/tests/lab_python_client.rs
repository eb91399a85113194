//! The Python client (`clients/python`, docs/python.md) against a real host daemon in a lab:
//! the default topology (a, b, c on one rtlan switch, 100 Mbit/s links), rtcd on a. The
//! example `audio48k.py` reserves through a's daemon and streams 1 ms audio packets (48 stereo
//! samples each, 1,000 packets/s) to b for 3 s, shaped by the package's RTTR token bucket;
//! `audio48k.py recv` on b counts them. A reservation over the host's real-time share is
//! refused with the protocol's code, as a Python exception.
//!
//! Tolerances: no packet may be lost or duplicated (a reserved stream far below its link); the
//! received rate must be within 5 % of what the sender achieved (the receiver's span starts at
//! its first packet, the sender's at its start; CPython's sleep on this loaded 2-core VM is the
//! noise, measured at ±1 % in docs/python.md) — a sender that was not shaped at the reserved
//! rate, or a path that dropped, fails both.

mod common;

use std::path::PathBuf;
use std::time::Duration;

use common::{ip, root_or_skip, up_file, wait_until, Daemon};
use serde_json::Value;

fn python_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../clients/python")
}

/// `python3 ARGS` in `node`, with the package on its path.
fn python(lab: &rtlan_lab::Lab, node: &str, args: &[&str]) -> std::process::Command {
    let mut all = vec!["python3"];
    all.extend_from_slice(args);
    let mut cmd = lab.exec(node, &all).expect("node exists");
    cmd.env("PYTHONPATH", python_dir().join("src"))
        .env("PYTHONDONTWRITEBYTECODE", "1");
    cmd
}

fn json_line(out: &std::process::Output, what: &str) -> Value {
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{what} failed ({}): {text}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(text.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{what}: {e}: {text}"))
}

#[test]
fn the_python_client_reserves_streams_and_is_refused_through_a_real_rtcd() {
    if !root_or_skip("the_python_client_reserves_streams_and_is_refused_through_a_real_rtcd") {
        return;
    }
    let _serial = rtlan_lab::serial_lock().expect("lab lock");
    let lab = up_file("default.toml", "py");
    std::thread::sleep(Duration::from_millis(1500)); // HELLOs
    let daemon = Daemon::start(&lab, "a");
    let socket = daemon.socket.to_str().expect("utf-8").to_string();
    let example = python_dir().join("examples/audio48k.py");
    let example = example.to_str().expect("utf-8");
    let to = format!("{}:5004", ip(&lab, "b"));

    let receiver = python(
        &lab,
        "b",
        &[
            example,
            "recv",
            "--port",
            "5004",
            "--seconds",
            "10",
            "--idle",
            "1.5",
            "--json",
        ],
    )
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .expect("receiver starts");
    std::thread::sleep(Duration::from_millis(500));
    let sender = python(
        &lab,
        "a",
        &[
            example,
            "send",
            "--to",
            &to,
            "--seconds",
            "3",
            "--samples-per-packet",
            "48",
            "--socket",
            &socket,
            "--json",
        ],
    )
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .expect("sender starts");

    // While it streams, the daemon lists its reservation and the switch holds it.
    let list_all = || {
        rtlan_linux::ctl::request_json(
            &daemon.socket,
            serde_json::json!({"op": "list", "all": true}),
            Duration::from_secs(2),
        )
        .expect("rtcd answers list")
    };
    let (listed, _) = wait_until(Duration::from_secs(3), || {
        list_all()["connections"].as_array().is_some_and(|c| {
            c.iter()
                .any(|c| c["dst_port"] == 5004 && c["phase"] == "open")
        })
    });
    assert!(listed, "the reservation is listed: {}", list_all());
    let conn = list_all()["connections"][0].clone();
    assert_eq!(common::connections(&lab, "s1").len(), 1, "s1 holds it");

    let sent = json_line(&sender.wait_with_output().expect("sender ends"), "sender");
    let got = json_line(
        &receiver.wait_with_output().expect("receiver ends"),
        "receiver",
    );
    eprintln!("sent {sent}\nreceived {got}\nreservation {conn}");
    assert_eq!(
        conn["rate_bps"], sent["rate_bps"],
        "reserved what the sender shapes to"
    );
    let (n, m) = (sent["packets"].as_u64(), got["packets"].as_u64());
    assert!(
        n.is_some_and(|n| n >= 2900),
        "about 1,000 packets/s for 3 s: {sent}"
    );
    assert_eq!(m, n, "every packet arrived: {got}");
    assert_eq!(
        (got["lost"].as_u64(), got["duplicates"].as_u64()),
        (Some(0), Some(0))
    );
    let (tx, rx) = (
        sent["packets_per_s"].as_f64().expect("rate"),
        got["packets_per_s"].as_f64().expect("rate"),
    );
    assert!(
        (rx - tx).abs() <= 0.05 * tx,
        "received {rx}/s against sent {tx}/s"
    );
    // Closed with the client: nothing left.
    let (gone, _) = wait_until(Duration::from_secs(3), || {
        list_all()["connections"]
            .as_array()
            .is_some_and(Vec::is_empty)
    });
    assert!(gone, "released when the client went: {}", list_all());

    // Over the host's real-time share (60 % of 100 Mbit/s): a Python exception with the code.
    let script = format!(
        "from rtlan import Client, RtcdError\n\
         c = Client({socket:?}); c.register()\n\
         try:\n    c.open({host:?}, 5005, rate_bps=70_000_000, burst_bytes=30000, max_packet=1514)\n    print('opened')\n\
         except RtcdError as e:\n    print(e.code)\n",
        host = ip(&lab, "b").to_string(),
    );
    let out = python(&lab, "a", &["-c", &script])
        .output()
        .expect("python runs");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(said.trim(), "local_admission");
    drop(daemon);
    common::down_clean(lab);
}
