//! Lab tests of the RTTR library and the `reserve`/`send`/`recv` tools (EtheReal §3.2): a
//! reserved stream shaped by the paper's timer-driven leaky bucket arrives complete at the
//! reserved rate; the daemon's kernel shaping (an HTB class per connection) holds an unshaped
//! sender to its reservation; and the daemon's priority class keeps a reserved stream ahead of
//! its own host's TCP traffic. Real `rtlan rtcd`, real rtlan switch, the real Linux stack on the
//! hosts (`topologies/default.toml`, 100 Mbit/s links).

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::time::Duration;

use common::*;
use rtlan_lab::Lab;
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_rtlan");

/// Starts `rtlan recv --json` on `host`:`port`; it stops 1 s after the stream went idle.
fn start_recv(lab: &Lab, host: &str, port: u16) -> Child {
    spawn_recv(lab, host, port, &["--idle", "1s", "--duration", "30s"])
}

/// Waits for a `recv` started by [`start_recv`] and parses its report.
fn recv_report(child: Child) -> Value {
    let out = child.wait_with_output().expect("recv ran");
    assert!(out.status.success(), "recv failed: {out:?}");
    serde_json::from_slice(&out.stdout).expect("recv prints JSON")
}

fn f64_of(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("no number {key} in {v}"))
}

/// Kills a child we started if the test fails half-way.
struct Reaper(Option<Child>);

impl Drop for Reaper {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            signal(c.id(), libc::SIGTERM);
            let _ = c.wait();
        }
    }
}

#[test]
fn leaky_bucket_stream_arrives_complete_at_the_reserved_rate() {
    if !root_or_skip("leaky_bucket_stream_arrives_complete_at_the_reserved_rate") {
        return;
    }
    let _serial = rtlan_lab::serial_lock().expect("lab lock");
    let lab = up_file("default.toml", "tr1");
    let daemon = Daemon::start(&lab, "a");
    let recv = Reaper(Some(start_recv(&lab, "c", 5004)));
    let to = format!("{}:5004", ip(&lab, "c"));
    let socket = daemon.socket.to_str().expect("utf-8 path").to_string();
    let sent = exec_ok(
        &lab,
        "a",
        &[
            BIN,
            "send",
            "--to",
            &to,
            "--rate",
            "20mbit",
            "--size",
            "1000",
            "--duration",
            "3s",
            "--reserve",
            "--socket",
            &socket,
            "--json",
        ],
    );
    let sent: Value = serde_json::from_str(&sent).expect("send prints JSON");
    let mut recv = recv;
    let report = recv_report(recv.0.take().expect("started"));
    let switch = ctl(&lab, "s1", "stats");
    eprintln!("send: {sent}\nrecv: {report}\ns1: {switch}");
    assert!(report["packets"].as_u64().unwrap_or(0) > 1000, "{report}");
    // Loss: the reservation and the shaper leave no room for queue overflow on the path (the
    // connection's switch queue is 2 × max_burst, and max_burst covers the shaper's largest
    // burst). What remains is the user-space switch's AF_PACKET receive side losing a frame when
    // its loop is descheduled for milliseconds on this shared 2-core machine: observed 1–2 in
    // ~6900 that reached the switch's veth (`ip -s link`) but not its rx counters. 0.1 % allows
    // that and still fails a shaper that bursts past the reserved queue (which loses percents).
    let lost = report["lost"].as_u64().expect("lost");
    let packets = report["packets"].as_u64().expect("packets");
    assert!(
        lost * 1000 <= packets,
        "a reserved stream loses (almost) nothing: {report}\ns1: {switch}"
    );
    assert_eq!(report["ignored"], 0, "{report}");
    // 3 %: the leaky bucket's long-run rate is exact (credit in bit·ns over the measured T_m);
    // what remains is the start and end of a 3 s stream measured first → last arrival (one
    // tick, 1 ms, and one datagram of credit: < 0.1 %), and wake-ups later than the buffer
    // covers (10 ms, see `docs/rttr.md`) on this shared 2-core machine, whose credit is
    // forfeit. A payload-only rate would be 6.6 % off (1000 vs 1066 bytes), a broken bucket
    // far more.
    let wire = f64_of(&report, "wire_bps");
    assert!(
        (wire - 20e6).abs() <= 0.03 * 20e6,
        "wire rate {wire} not within 3 % of 20 Mbit/s: {report}"
    );
    drop(daemon);
    down_clean(lab);
}

/// The `tc class show dev eth0` output of host `a`.
fn classes(lab: &Lab) -> String {
    exec_ok(lab, "a", &["tc", "class", "show", "dev", "eth0"])
}

#[test]
fn kernel_shaping_holds_an_unshaped_sender_to_its_reservation() {
    if !root_or_skip("kernel_shaping_holds_an_unshaped_sender_to_its_reservation") {
        return;
    }
    let _serial = rtlan_lab::serial_lock().expect("lab lock");
    let lab = up_file("default.toml", "tr2");
    let daemon = Daemon::start(&lab, "a");
    let to = format!("{}:5005", ip(&lab, "c"));
    let socket = daemon.socket.to_str().expect("utf-8 path").to_string();
    let mut reserve = Reaper(Some(
        lab.exec(
            "a",
            &[
                BIN,
                "reserve",
                "--to",
                &to,
                "--rate",
                "10mbit",
                "--shaping",
                "kernel",
                "--socket",
                &socket,
                "--duration",
                "60s",
                "--json",
            ],
        )
        .expect("host exists")
        .stdout(Stdio::piped())
        .spawn()
        .expect("rtlan reserve starts"),
    ));
    let stdout = reserve
        .0
        .as_mut()
        .and_then(|c| c.stdout.take())
        .expect("piped stdout");
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("reserve prints its answer");
    let opened: Value = serde_json::from_str(&line).expect("reserve --json prints JSON");
    let proxy_ip = opened["proxy_ip"].as_str().expect("proxy_ip").to_string();
    let id = opened["id"].as_u64().expect("id");
    let class = format!("class htb 1:{id:x} ");
    let shown = classes(&lab);
    let ours = shown
        .lines()
        .find(|l| l.starts_with(&class))
        .unwrap_or_else(|| panic!("no {class} while open: {shown}"));
    assert!(ours.contains("rate 10Mbit ceil 10Mbit"), "{ours}");

    let recv = Reaper(Some(start_recv(&lab, "c", 5005)));
    let proxy = format!("{proxy_ip}:5005");
    exec_ok(
        &lab,
        "a",
        &[
            BIN,
            "send",
            "--to",
            &proxy,
            "--rate",
            "40mbit",
            "--size",
            "1000",
            "--duration",
            "3s",
        ],
    );
    let mut recv = recv;
    let report = recv_report(recv.0.take().expect("started"));
    eprintln!("recv: {report}");
    // 10 %: HTB's rate is exact over the long run (the size table counts whole frames like the
    // switch); its token bucket lets burst = max_burst through at once and the qdisc's queue
    // drains for a while after the sender stops, both small against a 3 s run; a sender four
    // times over its reservation that HTB did not hold would show up at ~40 Mbit/s.
    let wire = f64_of(&report, "wire_bps");
    assert!(
        (wire - 10e6).abs() <= 0.10 * 10e6,
        "wire rate {wire} not within 10 % of 10 Mbit/s: {report}"
    );

    if let Some(c) = reserve.0.take() {
        signal(c.id(), libc::SIGTERM);
        let out = c.wait_with_output().expect("reserve exits");
        assert!(out.status.success(), "reserve: {out:?}");
    }
    let (gone, took) = wait_until(Duration::from_secs(2), || {
        !classes(&lab).lines().any(|l| l.starts_with(&class))
    });
    assert!(
        gone,
        "{class} still there {took:?} after close: {}",
        classes(&lab)
    );
    drop(daemon);
    let qdisc = exec_ok(&lab, "a", &["tc", "qdisc", "show", "dev", "eth0"]);
    assert!(
        !qdisc.contains("htb"),
        "the daemon removes its root qdisc on exit: {qdisc}"
    );
    down_clean(lab);
}

/// Packets counted by HTB class `1:<minor>` on host `a`'s eth0 (`tc -s class`), 0 if absent.
fn class_packets(lab: &Lab, minor: &str) -> u64 {
    let classid = format!("1:{minor}");
    let shown = exec_ok(
        lab,
        "a",
        &[
            "tc", "-s", "class", "show", "dev", "eth0", "classid", &classid,
        ],
    );
    // " Sent 11519712 bytes 42984 pkt (dropped 0, ...)"
    shown
        .split_whitespace()
        .skip_while(|w| *w != "bytes")
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

#[test]
fn reserved_stream_goes_ahead_of_its_own_hosts_tcp() {
    if !root_or_skip("reserved_stream_goes_ahead_of_its_own_hosts_tcp") {
        return;
    }
    let _serial = rtlan_lab::serial_lock().expect("lab lock");
    let lab = up_file("default.toml", "tr3");
    let daemon = Daemon::start(&lab, "a");
    let socket = daemon.socket.to_str().expect("utf-8 path").to_string();
    // A TCP bulk flow a → b keeps a's egress queue full for the whole stream.
    let _server = Reaper(Some(
        lab.exec("b", &["iperf3", "-s", "-1"])
            .expect("host exists")
            .stdout(Stdio::null())
            .spawn()
            .expect("iperf3 -s starts"),
    ));
    std::thread::sleep(Duration::from_millis(300));
    let b = ip(&lab, "b").to_string();
    let _bulk = Reaper(Some(
        lab.exec("a", &["iperf3", "-c", &b, "-t", "8"])
            .expect("host exists")
            .stdout(Stdio::null())
            .spawn()
            .expect("iperf3 -c starts"),
    ));
    let recv = Reaper(Some(start_recv(&lab, "c", 5006)));
    std::thread::sleep(Duration::from_millis(700));
    // The small-packet case: 20 Mbit/s of 200-byte payloads (266 wire bytes each,
    // 9 398 datagrams/s), shaped by seed 004's token bucket, whose output leaves the library
    // when it was due, so the receiver's delay is the path's, not a library buffer's. Ts = 5 ms:
    // the bucket b = r·Ts + M = 12 766 bytes, so the connection's switch queue (2 b) holds 10 ms
    // of its traffic; with Ts = 1 ms it holds 2.2 ms, less than this shared machine's late
    // switch wake-ups (10 of ~35 000 frames dropped there in one run with the host class: the
    // switch's side, not the host's).
    let to = format!("{}:5006", ip(&lab, "c"));
    let sent = exec_ok(
        &lab,
        "a",
        &[
            BIN,
            "send",
            "--to",
            &to,
            "--rate",
            "20mbit",
            "--size",
            "200",
            "--duration",
            "4s",
            "--reserve",
            "--shaping",
            "token",
            "--shaping-interval",
            "5ms",
            "--socket",
            &socket,
            "--json",
        ],
    );
    let sent: Value = serde_json::from_str(&sent).expect("send prints JSON");
    let mut recv = recv;
    let report = recv_report(recv.0.take().expect("started"));
    let switch = ctl(&lab, "s1", "stats");
    let reserved_class = class_packets(&lab, "fffe");
    eprintln!("send: {sent}\nrecv: {report}\nclass 1:fffe: {reserved_class} pkt\ns1: {switch}");
    let datagrams = sent["sent"].as_u64().expect("sent");
    assert!(datagrams > 30_000, "{sent}");
    // Every reserved frame left a through the reserved class, not the host's shared queue.
    assert!(
        reserved_class >= datagrams,
        "{reserved_class} packets in class 1:fffe for {datagrams} sent"
    );
    // Zero loss at the switch: the stream leaves the host as its shaper released it, so it fits
    // the connection's queue (2 b). Behind the TCP flow in one FIFO it left in clumps: 17 of
    // ~44 000 frames dropped in that queue with Ts = 1 ms (docs/benchmarks.md).
    assert_eq!(
        switch["switch"]["rt"]["queue_drops"], 0,
        "no real-time frame is dropped in the switch: {switch}"
    );
    // Beyond the switch: the AF_PACKET receive side losing a frame while descheduled (see the
    // leaky-bucket test above): 0.1 %.
    let lost = report["lost"].as_u64().expect("lost");
    let packets = report["packets"].as_u64().expect("packets");
    assert!(lost * 1000 <= packets, "{report}\ns1: {switch}");
    // Delivered: within 10 % below the reservation and never above it (+1 %: first → last
    // arrival over 4 s adds at most one bucket, 12.8 KB, i.e. 0.13 %). The 10 % is the token bucket's own loss on this
    // 2-core machine, not the network's: a wake-up later than M/r = 106 µs after the gate finds
    // the bucket full and forfeits tokens (measured 19.72–19.90 Mbit/s here; 17.4–18.9 with
    // Ts = 1 ms and busy loops, docs/benchmarks.md).
    let wire = f64_of(&report, "wire_bps");
    assert!(
        (0.90 * 20e6..=1.01 * 20e6).contains(&wire),
        "wire rate {wire} not within -10 %/+1 % of 20 Mbit/s: {report}"
    );
    // Delay: with its own class a frame waits on a for at most the TCP frame in transmission
    // (123 µs), plus the shaper's gate and the switch: measured median 0.03–0.42 ms in three
    // runs. In the host's shared queue it waited behind the TCP flow's backlog: median 3.07 ms
    // (two runs, `priority_queue = false`). 1 ms separates them with room for this machine's
    // scheduling noise.
    let p50 = f64_of(&report["delay_us"], "p50");
    assert!(
        p50 <= 1000.0,
        "median delay {p50} µs: the reserved stream queues behind the host's TCP: {report}"
    );
    drop(daemon);
    down_clean(lab);
}
