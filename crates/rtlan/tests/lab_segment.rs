//! Lab tests of the shared segment (`kind = "segment"`, docs/segment.md): five hosts on one
//! emulated 10 Mbit/s CSMA/CD medium (`rtlan segment`, the medium of RETHER, Venkatramani and
//! Chiueh §1–§2), each behind its bump namespace.
//!
//! Tolerances:
//! - The medium carries one frame at a time, so the UDP payload delivered to all receivers
//!   together is at most 10 Mbit/s × 1400/1466 = 9.55 Mbit/s (1400-byte datagrams: UDP, IP and
//!   Ethernet headers, FCS, preamble and inter-frame gap make 1466 wire bytes). iperf3 divides
//!   the bytes received by the sender's duration, and frames still queued at the segment when
//!   the senders stop (at most 64 per attachment, 2 × 64 × 1466 B ≈ 1.5 Mbit) arrive after it:
//!   over 6 s that adds up to 2.5 %. The bound is 5 % above 9.55 Mbit/s; a medium that let two
//!   stations transmit at once would deliver the 16 Mbit/s offered.
//! - A ping across an idle segment costs two 98-byte frames (0.2 ms of medium) plus the hosts'
//!   and the segment's scheduling. Under a flood that keeps the medium busy, each echo first
//!   waits for the frame on the medium (1.17 ms when whole) and then contends, colliding and
//!   backing off: the mean RTT must grow by at least 1 ms. Machine noise only adds to it, so
//!   the test cannot pass by accident on a broken (unserialised) medium only if noise alone
//!   adds a millisecond; the idle RTT is measured first in the same run for that reason.

mod common;

use std::time::Duration;

use common::*;
use rtlan_lab::tools::{self, Iperf3Opts, Iperf3Server};

/// The segment's rate in `topologies/segment.toml`.
const RATE_BPS: f64 = 10e6;
/// iperf3's datagram payload in the flood.
const PAYLOAD: u32 = 1400;

/// The segment's `stats`.
fn stats(lab: &rtlan_lab::Lab) -> serde_json::Value {
    let socket = lab.segment_socket("seg").expect("a segment");
    rtlan_linux::ctl::request(&socket, "stats").expect("stats")
}

fn counter(stats: &serde_json::Value, name: &str) -> u64 {
    stats["bus"][name]
        .as_u64()
        .unwrap_or_else(|| panic!("bus.{name} in {stats}"))
}

#[test]
fn five_hosts_on_a_segment_ping_each_other_through_their_bumps() {
    if !root_or_skip("five_hosts_on_a_segment") {
        return;
    }
    let _serial = rtlan_lab::serial_lock().expect("lab lock");
    let lab = up_file("segment.toml", "sg");
    let name = lab.name().to_string();
    let hosts = ["a", "b", "c", "d", "e"];

    // One namespace per host, one bump per host, one for the segment.
    let spaces = rtlan_lab::lab_namespaces(&name).expect("ip netns list");
    assert_eq!(spaces.len(), 11, "{spaces:?}");
    for h in hosts {
        let bump = lab.bump_netns(h).expect("every host has a bump");
        assert_eq!(bump, format!("rtl-{name}-{h}-bump"));
        assert!(spaces.iter().any(|s| s == bump), "{bump} in {spaces:?}");
        let config = lab.bump_agent_config(h).expect("agent config path");
        assert_eq!(config, lab.state_dir().join(format!("{h}.rether.toml")));
        // Its RETHER agent runs and answers, in CSMA mode while nobody reserves.
        let socket = lab.bump_agent_socket(h).expect("agent socket");
        let status = rtlan_linux::ctl::request(socket, "status").expect("status");
        assert_eq!(status["mode"], "csma", "{h}: {status}");
    }
    assert_eq!(lab.segments(), ["seg"]);
    assert!(lab.switch_socket("seg").is_none(), "a segment is no switch");
    let pid = lab.segment_pid("seg").expect("the segment runs");

    // The segment emulates the rate: no qdisc on the bump's or the segment's veths; the host's
    // own eth0 is held to the line rate like a NIC.
    let bump_a = lab.bump_netns("a").expect("bump");
    for (ns, ifname) in [(bump_a, "h0"), (bump_a, "s0")] {
        let out = std::process::Command::new("ip")
            .args(["netns", "exec", ns, "tc", "qdisc", "show", "dev", ifname])
            .output()
            .expect("tc runs");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(!text.contains("tbf"), "{ns} {ifname}: {text}");
    }
    let seg_q = exec_ok(&lab, "seg", &["tc", "qdisc", "show", "dev", "p0"]);
    assert!(!seg_q.contains("tbf"), "{seg_q}");
    let host_q = exec_ok(&lab, "a", &["tc", "qdisc", "show", "dev", "eth0"]);
    assert!(
        host_q.contains("tbf") && host_q.contains("10Mbit"),
        "{host_q}"
    );

    for (i, from) in hosts.iter().enumerate() {
        for to in &hosts[i + 1..] {
            let r = tools::ping(
                lab.netns(from).expect("ns"),
                ip(&lab, to),
                2,
                Duration::from_millis(50),
            )
            .expect("ping runs");
            assert_eq!(r.received, 2, "ping {from} -> {to}: {r:?}");
        }
    }
    let s = stats(&lab);
    // 10 pairs × 2 echoes × 2 frames, plus ARP: every one went over the medium.
    assert!(counter(&s, "frames") >= 40, "{s}");
    assert_eq!(counter(&s, "excessive_collisions"), 0, "{s}");
    assert_eq!(s["attachments"].as_array().map(Vec::len), Some(5), "{s}");

    // `down` stops the segment (SIGTERM) and removes every namespace, the bumps included.
    let report = lab.down().expect("lab down");
    assert!(report.terminated.contains(&pid), "{report}");
    assert_eq!(report.namespaces.len(), 11, "{report}");
    let left = rtlan_lab::lab_namespaces(&name).expect("ip netns list");
    assert!(left.is_empty(), "namespaces left behind: {left:?}");
}

#[test]
fn a_flood_collides_delays_pings_and_never_exceeds_the_rate() {
    if !root_or_skip("a_flood_collides") {
        return;
    }
    let _serial = rtlan_lab::serial_lock().expect("lab lock");
    let lab = up_file("segment.toml", "sgf");
    let ns = |h: &str| lab.netns(h).expect("ns").to_string();

    let idle = tools::ping(&ns("e"), ip(&lab, "c"), 10, Duration::from_millis(50)).expect("ping");
    assert_eq!(idle.received, 10, "idle: {idle:?}");
    let idle_ms = idle.rtt.expect("replies").avg_ms;

    let before = stats(&lab);
    let server_c = Iperf3Server::start(&ns("c"), 5201).expect("iperf3 -s on c");
    let server_d = Iperf3Server::start(&ns("d"), 5201).expect("iperf3 -s on d");
    let opts = Iperf3Opts {
        length: Some(PAYLOAD),
        ..Iperf3Opts::default()
    };
    let secs = 6;
    let flood = |from: String, to| {
        let opts = opts.clone();
        std::thread::spawn(move || tools::iperf3_udp(&from, to, 5201, secs, 8_000_000, &opts))
    };
    let a = flood(ns("a"), ip(&lab, "c"));
    let b = flood(ns("b"), ip(&lab, "d"));
    std::thread::sleep(Duration::from_secs(1));
    let loaded =
        tools::ping(&ns("e"), ip(&lab, "c"), 20, Duration::from_millis(100)).expect("ping");
    let a = a.join().expect("thread").expect("iperf3 a -> c");
    let b = b.join().expect("thread").expect("iperf3 b -> d");
    let after = stats(&lab);
    drop((server_c, server_d));

    let collisions = counter(&after, "collisions") - counter(&before, "collisions");
    assert!(
        collisions >= 20,
        "two stations flooding must collide: {collisions} collisions; {after}"
    );
    let loaded_ms = loaded.rtt.map_or(f64::INFINITY, |r| r.avg_ms);
    assert!(
        loaded.received > 0 && loaded_ms >= idle_ms + 1.0,
        "the flood must delay pings: idle {idle_ms:.2} ms, loaded {loaded:?}"
    );
    let excessive =
        counter(&after, "excessive_collisions") - counter(&before, "excessive_collisions");
    let queue_drops = counter(&after, "queue_drops") - counter(&before, "queue_drops");
    let delivered = a.receiver_bps + b.receiver_bps;
    let capacity = RATE_BPS * f64::from(PAYLOAD) / f64::from(PAYLOAD + 66);
    eprintln!(
        "segment flood: idle ping {idle_ms:.2} ms, loaded {loaded_ms:.2} ms ({}/20), \
         {collisions} collisions ({excessive} frames dropped after 16, {queue_drops} for a full \
         queue), delivered {:.2} + {:.2} = {:.2} Mbit/s of {:.2}",
        loaded.received,
        a.receiver_bps / 1e6,
        b.receiver_bps / 1e6,
        delivered / 1e6,
        capacity / 1e6
    );
    assert!(
        delivered <= capacity * 1.05,
        "delivered {delivered} bit/s exceeds the medium's {capacity} bit/s"
    );
    assert!(
        delivered >= capacity * 0.5,
        "the medium carried too little: {delivered} bit/s of {capacity}"
    );
    down_clean(lab);
}
