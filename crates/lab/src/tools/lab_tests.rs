//! Root-only tests that run every wrapper for real between two namespaces
//! (`rtl-tools<pid>-a`, `rtl-tools<pid>-b`) joined by one veth pair. They skip with a message when
//! not root or a tool is missing, hold the lab's serial lock (DESIGN.md §7), and always remove
//! their namespaces (the [`NsPair`] guard runs on panic too).

use super::process::run_ip;
use super::*;
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

const IP_A: Ipv4Addr = Ipv4Addr::new(198, 18, 77, 1);
const IP_B: Ipv4Addr = Ipv4Addr::new(198, 18, 77, 2);
/// An address on the link that nobody owns.
const IP_NOBODY: Ipv4Addr = Ipv4Addr::new(198, 18, 77, 99);

/// Two namespaces joined by a veth pair; deleted on drop.
struct NsPair {
    a: String,
    b: String,
    if_a: String,
    if_b: String,
}

impl NsPair {
    fn create() -> Result<Self> {
        let pid = std::process::id();
        let pair = NsPair {
            a: format!("rtl-tools{pid}-a"),
            b: format!("rtl-tools{pid}-b"),
            if_a: format!("rtt{pid}a"),
            if_b: format!("rtt{pid}b"),
        };
        // From here on, Drop removes whatever was created, also if a step fails.
        pair.remove();
        let t = Duration::from_secs(10);
        run_ip(["netns", "add", &pair.a], t)?;
        run_ip(["netns", "add", &pair.b], t)?;
        // Created directly inside the namespaces: nothing appears in the root namespace.
        run_ip(
            [
                "link", "add", &pair.if_a, "netns", &pair.a, "type", "veth", "peer", "name",
                &pair.if_b, "netns", &pair.b,
            ],
            t,
        )?;
        for (ns, ifname, ip) in [(&pair.a, &pair.if_a, IP_A), (&pair.b, &pair.if_b, IP_B)] {
            let cidr = format!("{ip}/16");
            run_ip(["-n", ns, "addr", "add", &cidr, "dev", ifname], t)?;
            run_ip(["-n", ns, "link", "set", ifname, "up"], t)?;
            run_ip(["-n", ns, "link", "set", "lo", "up"], t)?;
            let offloads = [
                "-K", ifname, "tx", "off", "tso", "off", "gso", "off", "gro", "off",
            ];
            process::run_in_ns(ns, Tool::Ethtool, offloads, t)?.success(Tool::Ethtool)?;
        }
        Ok(pair)
    }

    fn remove(&self) {
        for ns in [&self.a, &self.b] {
            let _ = run_ip(["netns", "del", ns], Duration::from_secs(10));
        }
    }
}

impl Drop for NsPair {
    fn drop(&mut self) {
        self.remove();
    }
}

/// A lab for one test: the pair, then the serial lock (fields drop in this order).
struct TestLab {
    pair: NsPair,
    _lock: crate::LabLock,
}

fn is_root() -> bool {
    // SAFETY: geteuid(2) takes no arguments, cannot fail and touches no memory.
    unsafe { libc::geteuid() == 0 }
}

/// The lab, or `None` (after saying why) when the test cannot run here.
fn lab(tools: &[Tool]) -> Option<TestLab> {
    if !is_root() {
        eprintln!("skipping: needs root (network namespaces)");
        return None;
    }
    for tool in [Tool::Ip, Tool::Ss, Tool::Ethtool].iter().chain(tools) {
        if let Err(err) = tool.locate() {
            eprintln!("skipping: {err}");
            return None;
        }
    }
    let lock = match crate::serial_lock() {
        Ok(lock) => lock,
        Err(err) => {
            eprintln!("skipping: {err}");
            return None;
        }
    };
    let pair = NsPair::create().expect("creating the namespace pair");
    Some(TestLab { pair, _lock: lock })
}

#[test]
fn ping_and_counters() {
    let Some(lab) = lab(&[Tool::Ping]) else {
        return;
    };
    let pair = &lab.pair;
    let before = iface_counters(&pair.a, &pair.if_a).expect("counters");
    let r = ping(&pair.a, IP_B, 5, Duration::from_millis(50)).expect("ping runs");
    assert_eq!((r.transmitted, r.received), (5, 5), "{r:?}");
    let rtt = r.rtt.expect("replies have RTTs");
    assert!(rtt.min_ms > 0.0 && rtt.min_ms <= rtt.max_ms, "{rtt:?}");
    let delta = iface_counters(&pair.a, &pair.if_a)
        .expect("counters")
        .since(&before);
    // 5 echo requests (98 bytes each) plus an ARP exchange.
    assert!(delta.tx_packets >= 5 && delta.rx_packets >= 5, "{delta:?}");
    assert!(delta.tx_bytes >= 5 * 98, "{delta:?}");

    let lost = ping(&pair.a, IP_NOBODY, 2, Duration::from_millis(50)).expect("ping runs");
    assert_eq!((lost.transmitted, lost.received), (2, 0), "{lost:?}");
    assert_eq!(lost.rtt, None);

    let mac = iface_mac(&pair.b, &pair.if_b).expect("mac");
    assert_ne!(mac, [0; 6]);
    assert_ne!(mac, iface_mac(&pair.a, &pair.if_a).expect("mac"));
    assert!(matches!(
        iface_counters(&pair.a, "nope0"),
        Err(ToolError::Failed { .. })
    ));
    assert!(matches!(
        ping(
            "rtl-tools-does-not-exist",
            IP_B,
            1,
            Duration::from_millis(10)
        ),
        Err(ToolError::Failed { .. })
    ));
}

#[test]
fn iperf3_tcp_and_udp() {
    let Some(lab) = lab(&[Tool::Iperf3]) else {
        return;
    };
    let pair = &lab.pair;
    let server = Iperf3Server::start(&pair.b, 5201).expect("server");
    assert_eq!(server.port(), 5201);
    let tcp = iperf3_tcp(&pair.a, IP_B, 5201, 1, &Iperf3Opts::default()).expect("tcp");
    // A veth moves Gbit/s; 10 Mbit/s only fails if nothing really flowed.
    assert!(tcp.receiver_bps > 10e6, "{tcp:?}");
    assert!(
        tcp.received_bytes > 0 && tcp.received_bytes <= tcp.sent_bytes,
        "{tcp:?}"
    );

    eprintln!("iperf3 tcp: {tcp:?}");
    // The same server serves a second, UDP test.
    let target = 20_000_000;
    let udp = iperf3_udp(&pair.a, IP_B, 5201, 1, target, &Iperf3Opts::default()).expect("udp");
    eprintln!("iperf3 udp: {udp:?}");
    assert_eq!(udp.target_bps, target);
    assert!(
        udp.receiver_bps > 0.7 * target as f64 && udp.receiver_bps < 1.3 * target as f64,
        "{udp:?}"
    );
    // 20 Mbit/s over an idle veth: no loss except under extreme host load.
    assert!(udp.loss_percent < 5.0, "{udp:?}");

    let err = iperf3_tcp(&pair.a, IP_B, 5299, 1, &Iperf3Opts::default())
        .expect_err("nobody listens on 5299");
    assert!(
        matches!(err, ToolError::Reported { .. } | ToolError::Failed { .. }),
        "{err:?}"
    );
    let pid = server.pid();
    drop(server);
    assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());
}

#[test]
fn sockperf_latency() {
    let Some(lab) = lab(&[Tool::Sockperf]) else {
        return;
    };
    let pair = &lab.pair;
    let _server = SockperfServer::start(&pair.b, 11111).expect("server");
    let opts = SockperfOpts { mps: Some(2000) };
    let r = sockperf_pingpong_with(&pair.a, IP_B, 11111, 1, 64, opts).expect("ping-pong");
    eprintln!("sockperf: {r:?}");
    assert!(r.round_trip);
    // ~0.5 s of measured time at 2000 messages/s.
    assert!(r.observations > 100, "{r:?}");
    assert!(
        r.min_us <= r.p50_us && r.p50_us <= r.p99_us && r.p99_us <= r.max_us,
        "{r:?}"
    );
    assert!(r.min_us > 0.0 && r.received > 0, "{r:?}");

    let err = sockperf_pingpong(&pair.a, IP_B, 11112, 1, 64).expect_err("no server on 11112");
    assert!(matches!(err, ToolError::Reported { .. }), "{err:?}");
}

#[test]
fn trafgen_minimum_frames() {
    let Some(lab) = lab(&[Tool::Trafgen, Tool::Taskset]) else {
        return;
    };
    let pair = &lab.pair;
    let mac_a = iface_mac(&pair.a, &pair.if_a).expect("mac");
    let mac_b = iface_mac(&pair.b, &pair.if_b).expect("mac");
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut spec = TrafgenUdp::new(&pair.if_a, mac_a, mac_b, IP_A, IP_B);
    spec.pacing = TrafgenPacing::Gap(Duration::from_micros(200));
    // trafgen pins its worker to CPU 0 by itself; asking for the last CPU exercises re-pinning.
    spec.cpu = Some(cpus - 1);
    let rx_before = iface_counters(&pair.b, &pair.if_b).expect("counters");
    let run = trafgen_udp(&pair.a, &spec).expect("trafgen runs");
    let rx = iface_counters(&pair.b, &pair.if_b)
        .expect("counters")
        .since(&rx_before);
    eprintln!("trafgen: {run:?}; receiver: {rx:?}");
    let sent = run.trafgen_packets.expect("trafgen printed its summary");
    // At most 5000 frames (one per 200 µs for ~1 s); ~4300 on an idle dev VM, and the lower
    // bound leaves room for a loaded machine.
    assert!((500..=5100).contains(&sent), "{run:?}");
    // The interface saw trafgen's frames, plus at most a few packets from the stack.
    assert!(
        run.tx_packets >= sent && run.tx_packets <= sent + 20,
        "{run:?}"
    );
    assert_eq!(run.trafgen_bytes, Some(sent * 60), "{run:?}");
    assert!(run.tx_bytes >= sent * 60, "{run:?}");
    assert!(rx.rx_packets >= sent, "{rx:?} vs {run:?}");
    if cpus > 1 {
        assert!(run.repins > 0, "trafgen's worker was never moved: {run:?}");
    }

    // Full-size frames, unpinned, through the qdisc layer.
    let mut big = spec.clone();
    big.frame_len = 1518;
    big.cpu = None;
    big.qdisc_path = true;
    big.pacing = TrafgenPacing::PerSecond(1000);
    big.duration = Duration::from_millis(500);
    let run = trafgen_udp(&pair.a, &big).expect("trafgen runs");
    eprintln!("trafgen 1518: {run:?}");
    let sent = run.trafgen_packets.expect("trafgen printed its summary");
    // The per-second budget goes out as one burst: up to all 1000 frames in half a second,
    // never more.
    assert!((100..=1000).contains(&sent), "{run:?}");
    assert_eq!(run.trafgen_bytes, Some(sent * 1514), "{run:?}");
    assert!(run.tx_bytes >= sent * 1514, "{run:?}");
    assert_eq!(run.repins, 0);

    let mut bad = spec.clone();
    bad.ifname = "nope0".into();
    let started = Instant::now();
    assert!(trafgen_udp(&pair.a, &bad).is_err());
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn socat_integrity() {
    let Some(lab) = lab(&[Tool::Socat]) else {
        return;
    };
    let pair = &lab.pair;
    assert!(socat_tcp_transfer(&pair.b, &pair.a, IP_B, 7000, 256 * 1024).expect("tcp runs"));
    assert!(socat_udp_transfer(&pair.b, &pair.a, IP_B, 7001, 64 * 1024).expect("udp runs"));
    // The other direction, same port again (reuseaddr).
    assert!(socat_tcp_transfer(&pair.a, &pair.b, IP_A, 7000, 1000).expect("tcp runs"));

    // Nobody answers ARP for IP_NOBODY: the client fails, the call returns.
    let started = Instant::now();
    let err = socat_tcp_transfer(&pair.b, &pair.a, IP_NOBODY, 7002, 1000)
        .expect_err("unreachable address");
    assert!(matches!(err, ToolError::Failed { .. }), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(15));
}
