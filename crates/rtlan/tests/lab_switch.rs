//! Lab tests of the rtlan switch with real Linux hosts and real tools (issue 2, item 5).
//!
//! Each test builds a lab of network namespaces, starts the real `rtlan switch` binary in them and
//! drives unmodified host stacks with ping, socat, iperf3 and tcpdump. Timing-sensitive tests take
//! the lab's serial lock so they never overlap on the 2-core machine.
//!
//! Tolerances: TCP goodput over a 100 Mbit/s line carrying 1448-byte segments is at most
//! 100 × 1448/1538 = 94.1 Mbit/s (Ethernet, IP, TCP+timestamps headers, FCS, preamble and IFG
//! counted); the issue asks for ≥ 90% of the line rate, i.e. 90 Mbit/s. A switch that does not pace
//! its own port is caught by `switch_paces_its_output_port`, where nothing but the switch limits the
//! rate.

mod common;

use std::time::Duration;

use common::*;
use rtlan_lab::tools::{self, Iperf3Opts, Iperf3Server};

const LINE_RATE: f64 = 100e6;

#[test]
fn one_switch_three_hosts_ping_udp_tcp_and_learning() {
    if !root_or_skip("one_switch_three_hosts") {
        return;
    }
    let _serial = rtlan_lab::serial_lock().expect("lab lock");
    let lab = up_file("default.toml", "one");

    assert_serves_default_topology(&lab);
    down_clean(lab);
}

#[test]
fn two_chained_switches_ping_udp_tcp_and_learning() {
    if !root_or_skip("two_chained_switches") {
        return;
    }
    let _serial = rtlan_lab::serial_lock().expect("lab lock");
    let lab = up_file("chain.toml", "chn");
    for (from, to) in [("a", "b"), ("a", "c"), ("b", "c")] {
        ping_ok(&lab, from, to);
    }
    // Both switches learnt every host, on the port that leads towards it.
    for (switch, host, via) in [
        ("s1", "a", "a"),
        ("s1", "b", "b"),
        ("s1", "c", "s2"),
        ("s2", "a", "s1"),
        ("s2", "b", "s1"),
        ("s2", "c", "c"),
    ] {
        let mac = host_mac(&lab, host);
        let want = port_towards(&lab, switch, via);
        let table = fdb(&lab, switch);
        let got = table.iter().find(|(m, _)| *m == mac).map(|(_, p)| *p);
        assert_eq!(
            got,
            Some(want),
            "{switch}: {host} should be behind {via}: {table:?}"
        );
    }
    let ns = |n| lab.netns(n).unwrap();
    assert!(tools::socat_tcp_transfer(ns("c"), ns("a"), ip(&lab, "c"), 5001, 1 << 20).unwrap());
    assert!(tools::socat_udp_transfer(ns("c"), ns("b"), ip(&lab, "c"), 5002, 64 << 10).unwrap());
    let _server = Iperf3Server::start(ns("c"), 5201).unwrap();
    let r = tools::iperf3_tcp(ns("a"), ip(&lab, "c"), 5201, 5, &Iperf3Opts::default()).unwrap();
    assert!(
        r.receiver_bps >= 0.90 * LINE_RATE && r.receiver_bps <= LINE_RATE,
        "TCP a->c across two switches {:.1} Mbit/s, want 90..100",
        r.receiver_bps / 1e6
    );
    down_clean(lab);
}

#[test]
fn unknown_destination_draws_arp_probe_from_zero_address() {
    if !root_or_skip("unknown_destination_draws_arp_probe") {
        return;
    }
    let _serial = rtlan_lab::serial_lock().expect("lab lock");
    let lab = up_file("default.toml", "prb");
    let c_ip = ip(&lab, "c").to_string();
    let c_mac = host_mac(&lab, "c");
    let p2 = port_towards(&lab, "s1", "c");
    let port_mac =
        rtlan_wire::ethernet::Address(lab.mac("s1", &format!("p{p2}")).unwrap()).to_string();

    // a knows c's MAC without ever asking, so the first frame to c is unknown unicast at s1
    // (c has sent nothing yet: IPv6 is off in the lab, so hosts are silent until spoken to).
    exec_ok(
        &lab,
        "a",
        &[
            "ip",
            "neigh",
            "replace",
            &c_ip,
            "lladdr",
            &c_mac,
            "dev",
            "eth0",
            "nud",
            "permanent",
        ],
    );
    assert!(
        !fdb(&lab, "s1").iter().any(|(m, _)| *m == c_mac),
        "c must be unknown to s1 before the test"
    );

    // Capture ARP on c, and listen for the UDP datagram that will be held by the switch.
    let mut capture = lab
        .exec(
            "c",
            &[
                "timeout", "10", "tcpdump", "-i", "eth0", "-nn", "-e", "-l", "-c", "1", "arp",
            ],
        )
        .unwrap()
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let listener = lab
        .exec(
            "c",
            &["timeout", "10", "socat", "-u", "UDP-RECV:6000", "STDOUT"],
        )
        .unwrap()
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700)); // tcpdump and socat attach
    exec_ok(
        &lab,
        "a",
        &[
            "sh",
            "-c",
            &format!("echo held-then-released | socat -u STDIN UDP-SENDTO:{c_ip}:6000"),
        ],
    );

    let _ = capture.wait();
    let mut line = String::new();
    use std::io::Read;
    capture
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut line)
        .unwrap();
    // e.g. "… 02:…:p2mac > ff:ff:ff:ff:ff:ff, ethertype ARP (0x0806), length 42: Request who-has
    //       198.18.0.3 tell 0.0.0.0, length 28"
    assert!(
        line.contains(&format!("{port_mac} > ff:ff:ff:ff:ff:ff")),
        "probe source: {line}"
    );
    assert!(
        line.contains(&format!("who-has {c_ip} tell 0.0.0.0")),
        "probe: {line}"
    );

    // The held datagram was released once c answered the probe.
    let out = listener.wait_with_output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "held-then-released"
    );
    let stats = ctl(&lab, "s1", "stats");
    assert!(
        stats["switch"]["arp_probes_sent"].as_u64().unwrap() >= 1,
        "{stats}"
    );
    assert_eq!(stats["switch"]["drop_pending_timeout"], 0, "{stats}");
    assert!(fdb(&lab, "s1").iter().any(|(m, p)| *m == c_mac && *p == p2));
    // The 0.0.0.0 sender keeps the probe out of c's ARP cache (EtheReal §3.4).
    let neigh = exec_ok(&lab, "c", &["ip", "neigh", "show"]);
    assert!(!neigh.contains(&port_mac), "c cached the probe: {neigh}");
    down_clean(lab);
}

/// a's link is unlimited, b's is 100 Mbit/s: only the switch's pacing of its port towards b keeps
/// the rate down. iperf3 offers 250 Mbit/s of UDP; b must receive at most the line's payload rate
/// (1448-byte datagrams: 100 × 1448/1538 = 94.1 Mbit/s) and the switch must count queue drops.
/// Tolerance: ±3% of the line rate for measurement-window edges; an unpaced switch delivers
/// far more than 97 Mbit/s here, a switch that loses rate delivers less than 85.
#[test]
fn switch_paces_its_output_port() {
    if !root_or_skip("switch_paces_its_output_port") {
        return;
    }
    let _serial = rtlan_lab::serial_lock().expect("lab lock");
    let lab = up_str(
        r#"
        [[host]]
        name = "a"
        [[host]]
        name = "b"
        [[switch]]
        name = "s1"
        [[link]]
        ends = ["a", "s1"]
        [[link]]
        ends = ["s1", "b"]
        rate = "100mbit"
        "#,
        "pace",
    );
    ping_ok(&lab, "a", "b");
    let ns = |n| lab.netns(n).unwrap();
    let _server = Iperf3Server::start(ns("b"), 5201).unwrap();
    let opts = Iperf3Opts {
        length: Some(1448),
        ..Iperf3Opts::default()
    };
    let r = tools::iperf3_udp(ns("a"), ip(&lab, "b"), 5201, 3, 250_000_000, &opts).unwrap();
    let mbit = r.receiver_bps / 1e6;
    assert!(
        r.sender_bps > 150e6,
        "the sender must overload the link for this test to mean anything: {r:?}"
    );
    assert!(
        (85.0..=97.0).contains(&mbit),
        "b received {mbit:.1} Mbit/s: {r:?}"
    );
    let stats = ctl(&lab, "s1", "stats");
    let to_b = port_towards(&lab, "s1", "b") as usize;
    let drops = stats["switch"]["ports"][to_b]["drop_queue_full"]
        .as_u64()
        .unwrap();
    assert!(
        drops > 0,
        "overload must be dropped and counted at the paced port: {stats}"
    );
    down_clean(lab);
}

/// Garbage from a host is dropped and counted; the switch keeps forwarding.
#[test]
fn malformed_frames_are_counted_not_fatal() {
    if !root_or_skip("malformed_frames_are_counted_not_fatal") {
        return;
    }
    let _serial = rtlan_lab::serial_lock().expect("lab lock");
    let lab = up_file("default.toml", "junk");
    ping_ok(&lab, "a", "b");
    // Frames from a raw socket: a multicast and a broadcast source address (both reach the switch
    // and must be dropped by it), and VLAN tags cut short (the kernel may drop these first; either
    // way the switch must survive them).
    let script = r#"
import socket
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(("eth0", 0))
bcast = b"\xff" * 6
for frame in [
    bcast + b"\x01\x00\x5e\x00\x00\x01" + b"\x08\x00" + b"\x00" * 46,
    bcast + bcast + b"\x08\x06" + b"\x00" * 46,
    bcast + b"\x02\x00\x00\x00\x00\x99" + b"\x81\x00\x00",
    bcast + b"\x02\x00\x00\x00\x00\x98" + b"\x81\x00",
]:
    s.send(frame)
"#;
    exec_ok(&lab, "a", &["python3", "-c", script]);
    std::thread::sleep(Duration::from_millis(200));
    let stats = ctl(&lab, "s1", "stats");
    let malformed = stats["switch"]["drop_malformed"].as_u64().unwrap();
    assert!(malformed >= 2, "malformed frames must be counted: {stats}");
    ping_ok(&lab, "b", "c");
    down_clean(lab);
}
