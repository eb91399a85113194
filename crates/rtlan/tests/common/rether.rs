//! Helpers of the RETHER lab tests (lab_rether, lab_rether_bridge, lab_rether_faults): the
//! agents' sockets, a measured stream (`rtlan send` → `rtlan recv`) and its report.

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

use rtlan_lab::Lab;
use serde_json::Value;

/// The UDP port the streams go to.
pub const STREAM_PORT: u16 = 5004;

/// One request on a daemon's control socket; panics with the request if it fails.
pub fn request(socket: &Path, request: Value) -> Value {
    rtlan_linux::ctl::request_json(socket, request.clone(), Duration::from_secs(10))
        .unwrap_or_else(|e| panic!("{}: {request}: {e}", socket.display()))
}

/// One request to the RETHER agent of `host`.
pub fn agent(lab: &Lab, host: &str, req: Value) -> Value {
    request(lab.bump_agent_socket(host).expect("agent socket"), req)
}

/// `rtlan recv --json` on `host` for [`STREAM_PORT`], until it has been idle for 1.5 s; returns
/// once its socket is bound ([`super::wait_bound`]; one CI run lost a sequence number so).
pub fn receiver(lab: &Lab, host: &str) -> Child {
    super::spawn_recv(lab, host, STREAM_PORT, &["--idle", "1500ms"])
}

/// `from`'s stream to `to`: 1000-byte datagrams at 1.6 Mbit/s (about an MPEG-I video) for
/// `secs`.
pub fn stream(lab: &Lab, from: &str, to: &str, secs: u32) -> Child {
    let to = format!("{}:{STREAM_PORT}", super::ip(lab, to));
    let duration = format!("{secs}s");
    lab.exec(
        from,
        &[
            env!("CARGO_BIN_EXE_rtlan"),
            "send",
            "--to",
            &to,
            "--rate",
            "1.6mbit",
            "--size",
            "1000",
            "--duration",
            &duration,
        ],
    )
    .expect("exec")
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .expect("rtlan send starts")
}

/// `rtlan recv`'s report once it ends.
pub fn report(child: Child) -> Value {
    let out = child.wait_with_output().expect("rtlan recv ends");
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

/// The report's largest one-way delay.
pub fn max_delay(r: &Value) -> Duration {
    Duration::from_secs_f64(r["delay_us"]["max"].as_f64().expect("delay max") / 1e6)
}

/// One measured run: `from`'s stream to `to` for `secs` while the loads `floods(secs + 2)`
/// starts run (started 700 ms ahead); `rtlan recv`'s report.
pub fn loaded_run(
    lab: &Lab,
    from: &str,
    to: &str,
    secs: u32,
    floods: impl FnOnce(u32) -> Vec<std::thread::JoinHandle<()>>,
) -> Value {
    let rx = receiver(lab, to);
    let floods = floods(secs + 2);
    std::thread::sleep(Duration::from_millis(700));
    let tx = stream(lab, from, to, secs);
    let out = tx.wait_with_output().expect("rtlan send ends");
    assert!(out.status.success(), "rtlan send: {:?}", out.status);
    for f in floods {
        f.join().expect("flood thread");
    }
    report(rx)
}
