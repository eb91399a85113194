//! A guarantee across three hops (issue 11, docs/delay.md): `topologies/chain3-flood.toml`, a
//! reserved 20 Mbit/s stream a → c across three rtlan switches running the timing wheel, while
//! f1 and f2 flood c at their full 100 Mbit/s and f1 sends TCP to c — every output port on the
//! path is offered two to three times its line rate. Real `rtlan rtcd`, `rtlan send` (token-
//! bucket shaping, reserving through the daemon), `rtlan recv` and iperf3. Needs root; skips
//! without it. A second test runs the same with every veth's offloads on (docs/offload.md): f1's
//! TCP then reaches s1 as super-frames, which s1's core must cut before its scheduler.
//!
//! Tolerances and why:
//! - **zero loss** of the reserved stream (sent − received): every hop's queue is the
//!   connection's backlog bound and only the first switch polices, so a conforming stream loses
//!   nothing by construction. A FIFO port loses most of it (c's port is offered ≈ 220 Mbit/s for
//!   100), and a per-hop queue of 2 × burst lost 0.16–0.5 % in exactly this setting before
//!   (issue 11), so either would fail.
//! - **delivered within 0.5 % of offered** (both measured on the wire over the run): zero loss
//!   already implies it up to the first/last-arrival window; the 0.5 % is that window's slack.
//! - **observed maximum ≤ the bound the sender was granted**: the bound counts the switches'
//!   declared 4 ms lateness budget (see the topology file for why that figure); the sender's and
//!   receiver's own stacks are outside it, so the bound is compared with a margin of 2 ms for
//!   the two hosts' stacks on this 2-core machine. The delay ends at the kernel's receive
//!   timestamp on c (`rtlan recv`, docs/rttr.md), not when `rtlan recv` got a CPU to read it — stated here, not hidden: a FIFO port's
//!   delays are tens to hundreds of ms (the floods fill c's queue), far above bound + 2 ms. When
//!   a switch stalls beyond its budget anyway (counted as guarantee violations), the bound is
//!   checked with the lateness that actually happened in place of the budget.

mod common;

use std::time::Duration;

use common::*;
use rtlan_experiments::kit::lab::{iperf3_client, iperf3_server};
use rtlan_experiments::labkit::{spawn, Receiver, Stream};

const SECONDS: u64 = 5;

#[test]
fn a_reserved_stream_keeps_rate_loss_and_bound_across_three_flooded_hops() {
    if !root_or_skip("a_reserved_stream_keeps_rate_loss_and_bound_across_three_flooded_hops") {
        return;
    }
    three_flooded_hops(false);
}

/// The same with every veth's offloads on (docs/offload.md): f1's TCP leaves f1 as super-frames
/// (up to the 12.5 KB burst of its link's tbf, which cuts larger ones) and crosses s1's core,
/// since the trunk it leaves by carries the reservation; s1 cuts them before its scheduler, so
/// the same criterion holds.
#[test]
fn the_three_hop_guarantee_holds_with_offloads_on() {
    if !root_or_skip("the_three_hop_guarantee_holds_with_offloads_on") {
        return;
    }
    three_flooded_hops(true);
}

fn three_flooded_hops(offloads: bool) {
    let _serial = rtlan_lab::serial_lock().expect("lab lock");
    let lab = if offloads {
        let path = format!(
            "{}/../../topologies/chain3-flood.toml",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(path).expect("topology file");
        up_str(&format!("[lab]\noffloads = true\n\n{text}"), "mh3o")
    } else {
        up_file("chain3-flood.toml", "mh3")
    };
    let f1_port = port_towards(&lab, "s1", "f1") as usize;
    let f1_counters =
        |lab: &rtlan_lab::Lab| ctl(lab, "s1", "stats")["shell"]["ports"][f1_port].clone();
    let f1_before = f1_counters(&lab);
    let exe = std::path::Path::new(env!("CARGO_BIN_EXE_rtlan"));
    let ip_c = ip(&lab, "c");
    // The switches learn where c is before anything floods.
    ping_ok(&lab, "a", "c");
    ping_ok(&lab, "f1", "c");
    ping_ok(&lab, "f2", "c");
    let daemon = Daemon::start(&lab, "a");
    let run = Duration::from_secs(SECONDS);

    // The receiver ends 1 s after the stream, however late the stream starts: on a loaded
    // machine the reservation and `rtlan send`'s start took over a second, and a fixed window
    // cut the stream's end off (10 s is only the safety net).
    let receiver = Receiver::start(
        exe,
        &lab,
        "c",
        6000,
        run + Duration::from_secs(10),
        &["--idle", "1s"],
    )
    .expect("rtlan recv");
    let iperf_server =
        spawn(&lab, "c", &iperf3_server(), "iperf3 server".into()).expect("iperf3 -s");
    std::thread::sleep(Duration::from_millis(300));
    let flood = |to_port: u16| Stream {
        to: format!("{ip_c}:{to_port}"),
        rate: "100mbit".into(),
        size: 1472,
        duration: run + Duration::from_secs(1),
        reserve: None,
        shaping: None,
    };
    let f1 = flood(6001).start(exe, &lab, "f1").expect("flood from f1");
    let f2 = flood(6002).start(exe, &lab, "f2").expect("flood from f2");
    let tcp = spawn(
        &lab,
        "f1",
        &iperf3_client(ip_c, SECONDS as f64 + 1.0),
        "iperf3 -c".into(),
    )
    .expect("iperf3 -c");
    std::thread::sleep(Duration::from_millis(500));
    let reserved = Stream {
        to: format!("{ip_c}:6000"),
        rate: "20mbit".into(),
        size: 1000,
        duration: run,
        reserve: Some(daemon.socket.clone()),
        shaping: Some("token".into()),
    };
    let c_before = host_drop_counters(&lab, "c");
    let sent = reserved.run(exe, &lab, "a").expect("reserved stream");
    let got = receiver.report().expect("receiver report");
    let _ = f1.finish(Duration::from_secs(10));
    let _ = f2.finish(Duration::from_secs(10));
    let _ = tcp.finish(Duration::from_secs(10));
    drop(iperf_server);
    let f1_after = f1_counters(&lab);
    let f1_count = |name: &str| {
        f1_after[name].as_u64().expect("a counter") - f1_before[name].as_u64().expect("a counter")
    };
    let (supers, segments) = (
        f1_count("rx_superframes"),
        f1_count("rx_superframe_segments"),
    );
    eprintln!("s1, f1's port: {supers} super-frames cut into {segments} frames");
    if offloads {
        assert!(supers > 0, "no super-frame reached s1's core: {f1_after}");
        assert!(
            segments >= 2 * supers,
            "{supers} super-frames, {segments} frames"
        );
        assert_eq!(f1_count("rx_superframe_dropped"), 0, "{f1_after}");
        assert_eq!(f1_count("rx_csum_unfilled"), 0, "{f1_after}");
    } else {
        assert_eq!(supers, 0, "super-frames with offloads off: {f1_after}");
    }
    let stats: Vec<_> = ["s1", "s2", "s3"]
        .iter()
        .map(|s| (s.to_string(), ctl(&lab, s, "stats")["switch"].clone()))
        .collect();
    eprintln!("sent: {sent:#}\nreceived: {got:#}");
    eprintln!(
        "c's drop counters before: {c_before}\nafter: {}",
        host_drop_counters(&lab, "c")
    );
    for (name, s) in &stats {
        eprintln!(
            "{name}: rt {} ports {}",
            s["rt"],
            s["ports"]
                .as_array()
                .map(|p| p
                    .iter()
                    .map(|p| format!(
                        "late_max {} µs violations {}",
                        p["pacing_late_max_ns"].as_u64().unwrap_or(0) / 1000,
                        p["guarantee_violations"]
                    ))
                    .collect::<Vec<_>>()
                    .join("; "))
                .unwrap_or_default()
        );
    }

    let bound = sent["reservation"]["delay_bound_us"]
        .as_f64()
        .unwrap_or_else(|| panic!("the reservation carries a bound: {sent}"));
    assert_eq!(sent["reservation"]["hops"].as_u64(), Some(3), "{sent}");
    let sent_n = sent["sent"].as_u64().expect("sent count");
    let got_n = got["packets"].as_u64().expect("received count");
    assert!(sent_n > 1000, "the stream ran: {sent}");
    // `rtlan recv` asks for a 4 MiB receive buffer: c's `rtlan recv` has waited 110–180 ms for
    // a CPU here (the switches run under SCHED_FIFO on the same two CPUs), which overflowed
    // Linux's default 208 KiB buffer. A drop there is the receiving host's, named as such.
    assert_eq!(
        got["socket"]["drops"].as_u64(),
        Some(0),
        "c's receive buffer overflowed: {got}"
    );
    assert_eq!(
        got_n, sent_n,
        "reserved datagrams lost: sent {sent_n}, received {got_n}"
    );
    let offered = sent["wire_bps"].as_f64().expect("offered");
    let delivered = got["wire_bps"].as_f64().expect("delivered");
    assert!(
        (delivered - offered).abs() <= 0.005 * offered,
        "delivered {delivered} bit/s vs offered {offered}"
    );
    let max = got["delay_us"]["max"].as_f64().expect("max delay");
    // The bound assumes every send at most λ/2 late (docs/delay.md §4). When a switch counted
    // guarantee violations (sends later than that — this 2-core machine has shown 20–30 ms
    // stalls under a full test run), the bound is recomputed with the lateness that happened:
    // each switch may add twice its worst excess over λ/2 (a late receive and a late send).
    // Without violations the bound stands as granted.
    let half_budget_us = 2000.0;
    let excess_us: f64 = stats
        .iter()
        .map(|(_, s)| {
            let late_us = s["ports"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|p| p["pacing_late_max_ns"].as_f64())
                .fold(0.0, f64::max)
                / 1000.0;
            2.0 * (late_us - half_budget_us).max(0.0)
        })
        .sum();
    let violations: u64 = stats
        .iter()
        .flat_map(|(_, s)| s["ports"].as_array().cloned().unwrap_or_default())
        .filter_map(|p| p["guarantee_violations"].as_u64())
        .sum();
    assert!(
        (violations == 0) == (excess_us == 0.0),
        "violations ({violations}) are counted exactly when a send was later than λ/2"
    );
    assert!(
        max <= bound + excess_us + 2000.0,
        "observed maximum {max} µs above the bound {bound} µs (+ {excess_us} µs of lateness \
         beyond the budget, + 2 ms for the hosts' stacks)"
    );
    for (name, s) in &stats {
        assert_eq!(
            s["rt"]["queue_drops"].as_u64(),
            Some(0),
            "{name}: {}",
            s["rt"]
        );
        assert_eq!(
            s["rt"]["nonconforming_drops"].as_u64(),
            Some(0),
            "{name}: {}",
            s["rt"]
        );
    }
    drop(daemon);
    down_clean(lab);
}

/// A host's receive-side drop counters as text, printed when a test fails: the kernel's UDP
/// counters (a receive buffer that overflowed) and the interface's (a veth NAPI ring that did).
fn host_drop_counters(lab: &rtlan_lab::Lab, host: &str) -> String {
    let snmp = exec_ok(lab, host, &["cat", "/proc/net/snmp"]);
    let udp: Vec<&str> = snmp.lines().filter(|l| l.starts_with("Udp:")).collect();
    let link = exec_ok(lab, host, &["ip", "-s", "-s", "link"]);
    let stats = exec_ok(lab, host, &["sh", "-c", "for i in /sys/class/net/*; do n=${i##*/}; [ $n = lo ] || ethtool -S $n | grep -v ': 0$'; done"]);
    format!("{}\n{link}\n{stats}", udp.join("\n"))
}
