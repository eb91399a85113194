//! `rtlan recv --duration D` counts what reached the host within D, whether or not the process
//! got a CPU in time: a receiver stalled past its deadline (SIGSTOP here; 180 ms behind the lab
//! switches' SCHED_FIFO threads in practice) reads what waits in its buffer, kernel-stamped
//! within the window, and stops at the first datagram stamped after it. Loopback only: no root.

use std::net::UdpSocket;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

const RTLAN: &str = env!("CARGO_BIN_EXE_rtlan");

fn free_port() -> u16 {
    let s = UdpSocket::bind("127.0.0.1:0").expect("a free port");
    s.local_addr().expect("bound").port()
}

fn signal(child: &Child, sig: libc::c_int) {
    let pid = libc::pid_t::try_from(child.id()).expect("pid fits");
    // SAFETY: kill(2) has no memory-safety preconditions; `pid` is our child.
    unsafe { libc::kill(pid, sig) };
}

/// A stopped `rtlan recv` on `port` with `--duration window`, bound before it stopped.
fn stalled_receiver(port: u16, window: &str) -> Child {
    let child = Command::new(RTLAN)
        .args(["recv", "--bind", "127.0.0.1", "--port", &port.to_string()])
        .args(["--duration", window, "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rtlan recv starts");
    std::thread::sleep(Duration::from_millis(300));
    signal(&child, libc::SIGSTOP);
    child
}

/// `rtlan send` of 10 Mbit/s, 1000-byte probes to `port` for `length`; its JSON.
fn send(port: u16, length: &str) -> Value {
    let out = Command::new(RTLAN)
        .args(["send", "--to", &format!("127.0.0.1:{port}")])
        .args([
            "--rate",
            "10mbit",
            "--size",
            "1000",
            "--duration",
            length,
            "--json",
        ])
        .output()
        .expect("rtlan send runs");
    serde_json::from_slice(&out.stdout).expect("rtlan send JSON")
}

/// Resumes the receiver and returns its report.
fn resume(child: Child) -> Value {
    signal(&child, libc::SIGCONT);
    let out = child.wait_with_output().expect("rtlan recv ends");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "rtlan recv printed no JSON ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[test]
fn a_receiver_stalled_past_its_window_counts_what_arrived_within_it() {
    // Everything is sent within the 2 s window while the receiver is stopped; it wakes at ≈ 3 s.
    let port = free_port();
    let rx = stalled_receiver(port, "2s");
    let sent = send(port, "500ms");
    std::thread::sleep(Duration::from_millis(2_500));
    let got = resume(rx);
    let n = sent["sent"].as_u64().expect("sent");
    assert!(n > 300, "{sent}");
    assert_eq!(got["packets"].as_u64(), Some(n), "{got}");
    assert_eq!(got["lost"].as_u64(), Some(0), "{got}");
    assert!(
        got["read_lag_us"]["max"].as_f64().expect("read lag") > 1e6,
        "the wait shows as read lag, not delay: {got}"
    );
    assert!(
        got["delay_us"]["max"].as_f64().expect("delay") < 1e6,
        "{got}"
    );
}

#[test]
fn what_arrived_after_the_window_is_not_counted() {
    // The stream runs 2 s from ≈ 0.3 s; the window ends at 1 s: only a first part counts, in
    // order and without gaps.
    let port = free_port();
    let rx = stalled_receiver(port, "1s");
    let sent = send(port, "2s");
    let got = resume(rx);
    let n = sent["sent"].as_u64().expect("sent");
    let packets = got["packets"].as_u64().expect("packets");
    assert!(
        packets > n / 10 && packets < n * 6 / 10,
        "≈ 0.7 s of a 2 s stream: {packets} of {n}"
    );
    assert_eq!(got["first_seq"].as_u64(), Some(0), "{got}");
    assert_eq!(got["last_seq"].as_u64(), Some(packets - 1), "{got}");
    assert_eq!(got["lost"].as_u64(), Some(0), "{got}");
}
