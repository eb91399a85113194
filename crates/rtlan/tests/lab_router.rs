//! Routers in the lab (docs/lab.md "Routers", docs/qsr.md §2.3): `topologies/routed.toml`
//! (a — r1 — r2 — b, 100 Mbit/s links) with rtlan routers and static routes, the same with the
//! kernel forwarding (`kind = "linux-router"`, the baseline), and a BIRD OSPF triangle in which
//! a link fails and the rtlan router's mirrored route — and so the traffic — moves to the other
//! path. Real `ping` and `iperf3` in the hosts. Needs root; skips without it. The OSPF test needs
//! `bird` (Debian `bird2`, `scripts/install-deps`) and fails without it.
//!
//! Tolerances and why:
//! - **TTL**: exact. Every router on the path decrements once; anything else is a bug.
//! - **UDP loss < 1 %** at 20 Mbit/s over two rtlan routers: a fifth of the line rate, so no
//!   queue anywhere is ever loaded; what loss remains is the 2-core machine preempting a
//!   router's data plane long enough for a socket buffer to fill. A router that drops under
//!   load, paces wrongly or forwards only some packets loses far more.
//! - **route change within 10 s** of the link going down (measured 3.4–4.4 s in four runs,
//!   1.1 s by hand when the link fails long after start-up). The link is set down at both ends,
//!   so BIRD sees its interfaces go down at once (netlink) rather than after the 4 s dead
//!   interval, but it may originate its new router LSA only `MinLSInterval` (5 s, RFC 2328
//!   appendix B, fixed in BIRD) after the previous one — and the test fails the link just after
//!   convergence, when r1 has just originated one. Then it recomputes routes (at once, or at the
//!   next 1 s tick), exports them to the kernel at once, and `rtlan router` re-reads the kernel
//!   table on the route notification: at most 5 + 1 s and a few ms. Had the failure only been
//!   seen by the dead interval, 4 s + 1 s tick + one lost LSA update retransmitted (2 s) = 7 s.
//!   10 s leaves 3 s for a loaded machine; a router that does not follow the kernel table never
//!   moves and fails.

mod common;

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use common::*;
use rtlan_lab::tools::{self, Iperf3Opts, Iperf3Server};
use rtlan_lab::Lab;

/// The bound on the route change after a link failure (see the module doc).
const REROUTE_BOUND: Duration = Duration::from_secs(10);
/// How long OSPF may take to converge after `up`: adjacencies on point-to-point links form
/// within a few hellos (1 s), plus the database exchange and a tick; generous for a loaded
/// machine.
const CONVERGE_BOUND: Duration = Duration::from_secs(30);

fn routed_toml() -> String {
    let path = format!(
        "{}/../../topologies/routed.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(path).expect("topologies/routed.toml")
}

/// One `ping -c1 -W1` from `from` to `to`: the reply's TTL, or `None` without a reply.
fn ping_ttl(lab: &Lab, from: &str, to: Ipv4Addr) -> Option<u8> {
    let out = lab
        .exec(from, &["ping", "-n", "-c1", "-W1", &to.to_string()])
        .expect("node exists")
        .output()
        .expect("ping runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let at = text.find("ttl=")? + 4;
    let digits: String = text[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// The address of `router`'s port towards `peer`.
fn port_ip(lab: &Lab, router: &str, peer: &str) -> Ipv4Addr {
    let ports = lab.router_ports(router).expect("a router");
    let index = ports
        .iter()
        .position(|(_, p)| p == peer)
        .unwrap_or_else(|| panic!("{router} has no port towards {peer}"));
    lab.topology().router(router).expect("router").ports[index].ip
}

/// The interface name of `router`'s port towards `peer`.
fn port_name(lab: &Lab, router: &str, peer: &str) -> String {
    let ports = lab.router_ports(router).expect("a router");
    ports
        .into_iter()
        .find(|(_, p)| p == peer)
        .unwrap_or_else(|| panic!("{router} has no port towards {peer}"))
        .0
}

/// The subnet of `host` as the routers list it (`198.18.2.0/24`).
fn host_segment(lab: &Lab, host: &str) -> String {
    let ip = lab.host_ip(host).expect("host");
    lab.topology()
        .segments
        .iter()
        .find(|s| s.contains(ip))
        .expect("the host's segment")
        .to_string()
}

/// The route an rtlan router's control socket lists for `prefix`.
fn router_route(lab: &Lab, router: &str, prefix: &str) -> Option<serde_json::Value> {
    let socket = lab.router_socket(router).expect("an rtlan router");
    let routes = rtlan_linux::ctl::request(&socket, "routes").expect("routes request");
    routes
        .as_array()
        .expect("routes is an array")
        .iter()
        .find(|r| r["prefix"].as_str() == Some(prefix))
        .cloned()
}

/// Whether `node`'s interface `ifname` has a `tbf` root qdisc.
fn has_tbf(lab: &Lab, node: &str, ifname: &str) -> bool {
    exec_ok(lab, node, &["tc", "qdisc", "show", "dev", ifname]).contains("qdisc tbf")
}

#[test]
fn two_rtlan_routers_forward_with_static_routes() {
    if !root_or_skip("two_rtlan_routers_forward_with_static_routes") {
        return;
    }
    let _serial = rtlan_lab::serial_lock().expect("lab lock");
    let lab = up_file("routed.toml", "rtr");
    assert_eq!(lab.routers(), ["r1", "r2"]);
    for r in ["r1", "r2"] {
        lab.router_wait_routes(r, Duration::from_secs(5))
            .expect("static routes to every segment");
        assert!(lab.router_pid(r).is_some() && lab.router_log(r).is_some());
        assert_eq!(
            exec_ok(&lab, r, &["sysctl", "-n", "net.ipv4.ip_forward"]).trim(),
            "0",
            "the kernel must not forward beside the rtlan router"
        );
        for (ifname, _) in lab.router_ports(r).unwrap() {
            assert!(
                !has_tbf(&lab, r, &ifname),
                "{r} {ifname}: an rtlan router paces itself"
            );
        }
    }
    assert!(has_tbf(&lab, "a", "eth0"), "hosts are shaped by tbf");
    // `rtlan lab` commands find routers through state.json.
    let opened = Lab::open(lab.name()).expect("state.json");
    assert_eq!(opened.router_socket("r1"), lab.router_socket("r1"));
    assert_eq!(opened.switch_socket("r1"), None, "a router is not a switch");

    let b = ip(&lab, "b");
    ping_ok(&lab, "a", "b");
    assert_eq!(
        ping_ttl(&lab, "a", b),
        Some(62),
        "b's reply crosses two routers"
    );

    // TTL 2: r1 forwards it with TTL 1, r2 answers from its address on the r1–r2 segment.
    let out = lab
        .exec("a", &["ping", "-n", "-c1", "-W2", "-t2", &b.to_string()])
        .unwrap()
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let r2 = port_ip(&lab, "r2", "r1");
    assert!(
        text.contains(&format!("From {r2}")) && text.contains("Time to live exceeded"),
        "expected time exceeded from r2 ({r2}):\n{text}"
    );

    let to_b = host_segment(&lab, "b");
    let route = router_route(&lab, "r1", &to_b).expect("r1 has a route to b's segment");
    assert_eq!(route["source"], "static", "{route}");
    assert_eq!(route["gateway"], r2.to_string(), "{route}");
    assert_eq!(route["port"], port_name(&lab, "r1", "r2"), "{route}");

    let ns = |n| lab.netns(n).unwrap();
    let server = Iperf3Server::start(ns("b"), 5201).unwrap();
    let udp = tools::iperf3_udp(ns("a"), b, 5201, 3, 20_000_000, &Iperf3Opts::default()).unwrap();
    println!(
        "UDP a -> b over r1, r2: {:.2} Mbit/s received, {} of {} lost ({:.3} %)",
        udp.receiver_bps / 1e6,
        udp.lost_packets,
        udp.packets,
        udp.loss_percent
    );
    assert!(udp.packets > 1000, "{udp:?}");
    assert!(udp.loss_percent < 1.0, "{udp:?}");
    assert!(
        (19.0e6..=21.0e6).contains(&udp.receiver_bps),
        "20 Mbit/s offered: {udp:?}"
    );
    drop(server);
    down_clean(lab);
}

#[test]
fn linux_routers_are_the_baseline() {
    if !root_or_skip("linux_routers_are_the_baseline") {
        return;
    }
    let _serial = rtlan_lab::serial_lock().expect("lab lock");
    let text = routed_toml().replace(
        "[[router]]\nname = \"r1\"\n",
        "[[router]]\nname = \"r1\"\nkind = \"linux-router\"\n",
    );
    let text = text.replace(
        "[[router]]\nname = \"r2\"\n",
        "[[router]]\nname = \"r2\"\nkind = \"linux-router\"\n",
    );
    let lab = up_str(&text, "rtl");
    for r in ["r1", "r2"] {
        assert_eq!(lab.router_socket(r), None, "{r} runs no rtlan router");
        assert_eq!(
            exec_ok(&lab, r, &["sysctl", "-n", "net.ipv4.ip_forward"]).trim(),
            "1"
        );
        lab.router_wait_routes(r, Duration::from_secs(5))
            .expect("static routes in the kernel");
        for (ifname, _) in lab.router_ports(r).unwrap() {
            assert!(
                has_tbf(&lab, r, &ifname),
                "{r} {ifname}: paced like a bridge"
            );
        }
    }
    ping_ok(&lab, "a", "b");
    assert_eq!(ping_ttl(&lab, "a", ip(&lab, "b")), Some(62));
    down_clean(lab);
}

/// a on r1, b on r3; r1–r2, r2–r3 and r1–r3 links; every router rtlan with OSPF.
const TRIANGLE: &str = r#"
[[host]]
name = "a"
[[host]]
name = "b"
[[router]]
name = "r1"
ospf = "bird"
[[router]]
name = "r2"
ospf = "bird"
[[router]]
name = "r3"
ospf = "bird"
[[link]]
ends = ["a", "r1"]
rate = "100mbit"
[[link]]
ends = ["r1", "r2"]
rate = "100mbit"
[[link]]
ends = ["r2", "r3"]
rate = "100mbit"
[[link]]
ends = ["r1", "r3"]
rate = "100mbit"
[[link]]
ends = ["r3", "b"]
rate = "100mbit"
"#;

#[test]
fn ospf_moves_traffic_to_the_other_path_when_a_link_fails() {
    if !root_or_skip("ospf_moves_traffic_to_the_other_path_when_a_link_fails") {
        return;
    }
    let _serial = rtlan_lab::serial_lock().expect("lab lock");
    let lab = up_str(TRIANGLE, "rto");
    for r in ["r1", "r2", "r3"] {
        assert!(lab.bird_pid(r).is_some(), "{r} runs BIRD");
        let took = lab
            .router_wait_routes(r, CONVERGE_BOUND)
            .expect("OSPF converges");
        println!(
            "{r}: a route to every segment {:.2} s after up",
            took.as_secs_f64()
        );
    }
    let b = ip(&lab, "b");
    let to_b = host_segment(&lab, "b");
    let direct = port_ip(&lab, "r3", "r1");
    let around = port_ip(&lab, "r2", "r1");
    let route = router_route(&lab, "r1", &to_b).expect("r1 routes b's segment");
    assert_eq!(route["source"], "kernel", "BIRD's route, mirrored: {route}");
    assert_eq!(
        route["gateway"],
        direct.to_string(),
        "the direct path: {route}"
    );
    ping_ok(&lab, "a", "b");
    assert_eq!(ping_ttl(&lab, "a", b), Some(62), "a → r1 → r3 → b");

    let r1_port = port_name(&lab, "r1", "r3");
    let r3_port = port_name(&lab, "r3", "r1");
    let failed = Instant::now();
    exec_ok(&lab, "r1", &["ip", "link", "set", &r1_port, "down"]);
    exec_ok(&lab, "r3", &["ip", "link", "set", &r3_port, "down"]);

    let moved = loop {
        let route = router_route(&lab, "r1", &to_b);
        let gateway = route
            .as_ref()
            .and_then(|r| r["gateway"].as_str().map(String::from));
        if gateway.as_deref() == Some(&around.to_string()) {
            break failed.elapsed();
        }
        assert!(
            failed.elapsed() < REROUTE_BOUND,
            "r1's route to {to_b} still {route:?} {REROUTE_BOUND:?} after the r1–r3 link \
             went down"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let pinged = loop {
        if ping_ttl(&lab, "a", b) == Some(61) {
            break failed.elapsed();
        }
        assert!(
            failed.elapsed() < REROUTE_BOUND,
            "no reply with TTL 61 (a → r1 → r2 → r3 → b) {REROUTE_BOUND:?} after the link \
             went down"
        );
    };
    println!(
        "r1–r3 down: r1's mirrored route via r2 after {:.2} s, first ping over r2 (TTL 61) after \
         {:.2} s (bound {} s)",
        moved.as_secs_f64(),
        pinged.as_secs_f64(),
        REROUTE_BOUND.as_secs()
    );
    let route = router_route(&lab, "r1", &to_b).expect("still routed");
    assert_eq!(route["port"], port_name(&lab, "r1", "r2"), "{route}");
    ping_ok(&lab, "a", "b");
    down_clean(lab);
}

/// a and c on r1, b on r2, the r1–r2 link the bottleneck (100 Mbit/s), c on a 1 Gbit/s link.
const BLAST: &str = r#"
[[host]]
name = "a"
[[host]]
name = "c"
[[host]]
name = "b"
[[router]]
name = "r1"
[[router]]
name = "r2"
[[link]]
ends = ["a", "r1"]
rate = "100mbit"
[[link]]
ends = ["c", "r1"]
rate = "1gbit"
[[link]]
ends = ["r1", "r2"]
rate = "100mbit"
[[link]]
ends = ["r2", "b"]
rate = "100mbit"
"#;

/// QSR §6's video under blast, with unmodified applications: rtcd on a and b speak RSVP
/// (`signalling = "rsvp"`), a reserves 10 Mbit/s to b:5004 from port 4000 through both rtlan
/// routers, and an 8 Mbit/s iperf3 stream from that port keeps ≥ 99.9 % of its datagrams
/// while c blasts b at 150 Mbit/s into the 100 Mbit/s r1–r2 link. The switched path is seen in
/// the routers: r1 classifies the stream (5-tuple) and r2 switches it by label.
///
/// Tolerance: 0.1 % loss (the issue's "≥ 99.9 % of its rate"); measured 0 of 4000 in every
/// run. That the blast really overloads the queue the reservation bypasses is asserted on the
/// blast itself: it loses more than a quarter of what it sends (about 42 % measured: 150 Mbit/s
/// offered, about 87 received). How much an *unreserved* stream loses to it is not asserted:
/// the drop-tail queue drops the smooth 8 Mbit/s stream far less often than the bursty blast,
/// and how much less depends on the machine's timing (6.1 % in one run, 0.15 % in another with
/// release binaries); the simulator shows the contrast deterministically
/// (`sim/tests/routers.rs::a_reservation_across_routers_keeps_its_stream_whole_under_a_blast`).
#[test]
fn an_rsvp_reservation_keeps_a_stream_whole_through_two_routers_under_a_blast() {
    if !root_or_skip("an_rsvp_reservation_keeps_a_stream_whole_through_two_routers_under_a_blast") {
        return;
    }
    let _serial = rtlan_lab::serial_lock().expect("lab lock");
    let lab = up_str(BLAST, "rsvp");
    for host in ["a", "c"] {
        ping_ok(&lab, host, "b");
    }
    let rtcd_a = Daemon::start_with_config(&lab, "a", "signalling = \"rsvp\"\n");
    let _rtcd_b = Daemon::start_with_config(&lab, "b", "signalling = \"rsvp\"\n");
    let b = ip(&lab, "b");
    let mut client = rtcd_a.client();
    let params = rtlan_linux::rtcd::OpenParams {
        dst_ip: b,
        dst_port: 5004,
        src_port: 4000,
        rate_bps: 10_000_000,
        max_burst: 15_000,
        max_packet: 1514,
        delay_us: None,
    };
    let opened = client.open(&params).expect("reserved across both routers");
    assert_eq!(opened.proxy_ip, b, "RSVP needs no proxy: {opened:?}");
    let labels = ctl_router(&lab, "r2", "stats");
    assert!(
        labels
            .pointer("/router/rsvp/resvs")
            .and_then(|v| v.as_u64())
            == Some(1),
        "r2 holds the reservation: {labels}"
    );

    let ns = |n| lab.netns(n).unwrap();
    let _video_server = Iperf3Server::start(ns("b"), 5004).unwrap();
    let _blast_server = Iperf3Server::start(ns("b"), 5201).unwrap();
    let video_opts = Iperf3Opts {
        length: Some(1000),
        client_port: Some(4000),
        ..Iperf3Opts::default()
    };
    // The blast's datagrams are the stream's size: a byte-bounded queue then favours neither.
    let blast_opts = Iperf3Opts {
        length: Some(1000),
        ..Iperf3Opts::default()
    };
    let (video, blast) = std::thread::scope(|s| {
        let blast =
            s.spawn(|| tools::iperf3_udp(ns("c"), b, 5201, 6, 150_000_000, &blast_opts).unwrap());
        std::thread::sleep(Duration::from_millis(500));
        let video = tools::iperf3_udp(ns("a"), b, 5004, 4, 8_000_000, &video_opts).unwrap();
        (video, blast.join().unwrap())
    });
    eprintln!(
        "video {} of {} lost ({:.3} %), blast {:.1} Mbit/s sent, {:.1} received",
        video.lost_packets,
        video.packets,
        video.loss_percent,
        blast.sender_bps / 1e6,
        blast.receiver_bps / 1e6
    );
    assert!(
        blast.receiver_bps < 0.75 * blast.sender_bps,
        "the blast overloads r1's default queue: {blast:?}"
    );
    let r1 = ctl_router(&lab, "r1", "stats");
    let r2 = ctl_router(&lab, "r2", "stats");
    let reserved_in = r1.pointer("/router/reserved_in").and_then(|v| v.as_u64());
    let switched = r2
        .pointer("/router/labelled_switched")
        .and_then(|v| v.as_u64());
    assert!(
        reserved_in.unwrap_or(0) >= video.packets * 9 / 10,
        "r1 put the stream on its reservation: {reserved_in:?} of {}",
        video.packets
    );
    assert!(switched.unwrap_or(0) > 0, "r2 switched it by label: {r2}");
    assert!(
        video.loss_percent <= 0.1,
        "the reserved stream lost {} of {} datagrams under the blast\nr1 {}\nr2 {}",
        video.lost_packets,
        video.packets,
        r1["router"],
        r2["router"]
    );

    // Closing sends PathTear: both routers forget the session at once.
    client.close(opened.conn).expect("closed");
    let (released, _) = wait_until(Duration::from_secs(2), || {
        ["r1", "r2"].iter().all(|r| {
            ctl_router(&lab, r, "stats")
                .pointer("/router/rsvp/paths")
                .and_then(|v| v.as_u64())
                == Some(0)
        })
    });
    assert!(released, "the routers still hold the session after close");
    drop(client);
    down_clean(lab);
}

/// A router's control-socket reply.
fn ctl_router(lab: &Lab, router: &str, cmd: &str) -> serde_json::Value {
    let socket = lab.router_socket(router).expect("an rtlan router");
    rtlan_linux::ctl::request(&socket, cmd).expect("control request")
}
