//! Routers in the lab (docs/lab.md "Routers", docs/qsr.md §2.3): `topologies/routed.toml`
//! (a — r1 — r2 — b, 100 Mbit/s links) with rtlan routers and static routes, the same with the
//! kernel forwarding (`kind = "linux-router"`, the baseline), an OSPF triangle — BIRD, and FRR's
//! zebra and ospfd — in which a link fails and the rtlan router's mirrored route, and so the
//! traffic, moves to the other path, and an RSVP reservation that follows that reroute (QSR
//! §3.2). Real `ping` and `iperf3` in the hosts. Needs root; skips without it. The OSPF tests
//! need `bird` (Debian `bird2`) and FRR (Debian `frr`; `scripts/install-deps` installs both) and
//! fail without them.
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

/// The triangle with every router running `daemon` (`"bird"` or `"frr"`).
fn triangle(daemon: &str) -> String {
    TRIANGLE.replace("ospf = \"bird\"", &format!("ospf = \"{daemon}\""))
}

/// Brings up the triangle with `daemon` and waits until OSPF gave every router a route to
/// every segment.
fn triangle_up(daemon: &str, tag: &str) -> Lab {
    let lab = up_str(&triangle(daemon), tag);
    for r in ["r1", "r2", "r3"] {
        match daemon {
            "bird" => assert!(lab.bird_pid(r).is_some(), "{r} runs BIRD"),
            _ => assert!(lab.frr_pids(r).is_some(), "{r} runs FRR's zebra and ospfd"),
        }
        let took = lab
            .router_wait_routes(r, CONVERGE_BOUND)
            .expect("OSPF converges");
        println!(
            "{r}: a route to every segment {:.2} s after up ({daemon})",
            took.as_secs_f64()
        );
    }
    lab
}

/// Sets the r1–r3 link down at both ends.
fn fail_r1_r3(lab: &Lab) {
    let r1_port = port_name(lab, "r1", "r3");
    let r3_port = port_name(lab, "r3", "r1");
    exec_ok(lab, "r1", &["ip", "link", "set", &r1_port, "down"]);
    exec_ok(lab, "r3", &["ip", "link", "set", &r3_port, "down"]);
}

#[test]
fn ospf_moves_traffic_to_the_other_path_when_a_link_fails() {
    if !root_or_skip("ospf_moves_traffic_to_the_other_path_when_a_link_fails") {
        return;
    }
    let _serial = rtlan_lab::serial_lock().expect("lab lock");
    reroute_around_a_failed_link("bird", "rto");
}

/// The same with FRR's zebra and ospfd in each router's namespace instead of BIRD. FRR, too,
/// originates a router LSA at most every 5 s (`MinLSInterval`, its default LSA throttle) and
/// computes routes within 50 ms of one (`timers throttle spf 0 50 1000`); zebra writes them to
/// the kernel at once: the same 10 s bound holds for the same reasons.
#[test]
fn frr_ospf_moves_traffic_to_the_other_path_when_a_link_fails() {
    if !root_or_skip("frr_ospf_moves_traffic_to_the_other_path_when_a_link_fails") {
        return;
    }
    let _serial = rtlan_lab::serial_lock().expect("lab lock");
    reroute_around_a_failed_link("frr", "rtf");
}

fn reroute_around_a_failed_link(daemon: &str, tag: &str) {
    let lab = triangle_up(daemon, tag);
    let b = ip(&lab, "b");
    let to_b = host_segment(&lab, "b");
    let direct = port_ip(&lab, "r3", "r1");
    let around = port_ip(&lab, "r2", "r1");
    let route = router_route(&lab, "r1", &to_b).expect("r1 routes b's segment");
    assert_eq!(
        route["source"], "kernel",
        "{daemon}'s route, mirrored: {route}"
    );
    assert_eq!(
        route["gateway"],
        direct.to_string(),
        "the direct path: {route}"
    );
    ping_ok(&lab, "a", "b");
    assert_eq!(ping_ttl(&lab, "a", b), Some(62), "a → r1 → r3 → b");

    let failed = Instant::now();
    fail_r1_r3(&lab);

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
        "r1–r3 down ({daemon}): r1's mirrored route via r2 after {:.2} s, first ping over r2 \
         (TTL 61) after {:.2} s (bound {} s)",
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
    // The blast's datagrams are the largest a 1,500-byte MTU carries: the routers run under
    // SCHED_FIFO ahead of iperf3 on this 2-core machine, and with 1,000-byte datagrams the
    // CPU-bound blaster sent only 77.5 Mbit/s — too little to overload anything. The same
    // byte rate in 2/3 of the packets does.
    let blast_opts = Iperf3Opts {
        length: Some(1472),
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

/// One counter of a router's `stats` (a JSON pointer under `/router`), 0 if absent.
fn router_counter(lab: &Lab, router: &str, pointer: &str) -> u64 {
    ctl_router(lab, router, "stats")
        .pointer(&format!("/router{pointer}"))
        .and_then(|v| v.as_u64())
        .unwrap_or(0)
}

/// The routing daemon of the reservation-reroute test: BIRD, the slower of the two to reroute
/// (its 5 s `MinLSInterval`; FRR rerouted within 0.1 s here), so the bound below is the one
/// argued in the module doc. With `"frr"` the test passes as well (reserved again after 0.33
/// and 1.85 s in two runs).
const RESV_REROUTE_DAEMON: &str = "bird";

/// The hosts' RSVP refresh period R in the reservation-reroute test.
const HOST_R: Duration = Duration::from_secs(2);

/// A reserved stream follows OSPF (QSR §3.2: "when the RSVP protocol detects a route change,
/// the switched path is immediately taken down. It is reestablished along the new route as
/// PATH and RESV messages change their course"). In the OSPF triangle, a reserves 10 Mbit/s to
/// b with RSVP (rtcd `signalling = "rsvp"`) over r1 → r3, the direct path; an 8 Mbit/s stream
/// is put on the reservation by r1 (5-tuple) and popped by r3. The r1–r3 link fails: OSPF
/// moves r1's route to b's segment to r2. r1 takes the switched path down the moment its port
/// loses carrier (`route_changed`: unspliced, reservation released, PathTear on the old route);
/// with no route left at that instant its engine drops the path state (docs/rsvp.md §7.3), so
/// the sender's next Path refresh, once OSPF has moved the route, sets it up along r1 → r2 →
/// r3; r3 sees the session's Path arrive from r2 and sends the reservation back up at once (no
/// wait for b's refresh), r2 admits and splices it, r1 splices its classifier entry onto the
/// new port. The same stream then runs reserved again: classified at r1, switched by label at
/// r2. The hosts refresh every [`HOST_R`] = 2 s (rtcd `rsvp_refresh`) so that the test waits
/// seconds, not RFC 2205's 30 s, for that refresh.
///
/// Tolerances: the reservation is back at r2 within the reroute bound (10 s, see the module
/// doc) + the longest refresh interval of the sender (1.5 × R = 3 s) + 2 s for three RSVP
/// messages on a loaded machine (milliseconds when idle); measured 1.75–4.32 s with BIRD in
/// eight runs. At least
/// 90 % of the stream's datagrams counted on the reservation at r1 and on a label at r2 (the
/// first datagrams of a run may pass while the daemon's shaper starts; measured: all of them);
/// loss < 1 % (as for the unreserved UDP test above: the stream is a tenth of the line rate,
/// what is lost is the 2-core machine preempting a router; measured 0).
#[test]
fn an_rsvp_reservation_follows_an_ospf_reroute() {
    if !root_or_skip("an_rsvp_reservation_follows_an_ospf_reroute") {
        return;
    }
    let _serial = rtlan_lab::serial_lock().expect("lab lock");
    let lab = triangle_up(RESV_REROUTE_DAEMON, "rsvr");
    ping_ok(&lab, "a", "b");
    // The hosts refresh their state every R = 2 s (see the test's doc).
    let rsvp = format!(
        "signalling = \"rsvp\"\nrsvp_refresh = \"{}s\"\n",
        HOST_R.as_secs()
    );
    let rtcd_a = Daemon::start_with_config(&lab, "a", &rsvp);
    let _rtcd_b = Daemon::start_with_config(&lab, "b", &rsvp);
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
    let opened = client.open(&params).expect("reserved over r1 → r3");
    let resvs = |r: &str| router_counter(&lab, r, "/rsvp/resvs");
    assert_eq!(
        (resvs("r1"), resvs("r2"), resvs("r3")),
        (1, 0, 1),
        "the reservation takes the direct path"
    );

    let ns = |n| lab.netns(n).unwrap();
    let _server = Iperf3Server::start(ns("b"), 5004).unwrap();
    let opts = Iperf3Opts {
        length: Some(1000),
        client_port: Some(4000),
        ..Iperf3Opts::default()
    };
    // A stream of 8 Mbit/s from the reserved port; how much of it r1 put on the reservation
    // and r2 switched by label.
    let stream = |seconds| {
        let before = (
            router_counter(&lab, "r1", "/reserved_in"),
            router_counter(&lab, "r2", "/labelled_switched"),
        );
        let run = tools::iperf3_udp(ns("a"), b, 5004, seconds, 8_000_000, &opts).unwrap();
        let reserved = router_counter(&lab, "r1", "/reserved_in") - before.0;
        let switched = router_counter(&lab, "r2", "/labelled_switched") - before.1;
        (run, reserved, switched)
    };
    let (run, reserved, switched) = stream(2);
    eprintln!(
        "direct path: {} of {} datagrams lost, {reserved} on the reservation at r1, {switched} \
         switched at r2",
        run.lost_packets, run.packets
    );
    assert!(
        reserved >= run.packets * 9 / 10,
        "r1 classified the stream: {reserved} of {}",
        run.packets
    );
    assert_eq!(switched, 0, "r2 is not on the path yet");
    assert!(run.loss_percent < 1.0, "{run:?}");

    let failed = Instant::now();
    fail_r1_r3(&lab);
    let to_b = host_segment(&lab, "b");
    let around = port_ip(&lab, "r2", "r1").to_string();
    let (back, took) = wait_until(
        REROUTE_BOUND + HOST_R * 3 / 2 + Duration::from_secs(2),
        || {
            let via_r2 = router_route(&lab, "r1", &to_b)
                .is_some_and(|r| r["gateway"].as_str() == Some(around.as_str()));
            via_r2 && resvs("r2") == 1 && resvs("r1") == 1
        },
    );
    assert!(
        back,
        "no reservation over r2 {took:?} after r1–r3 went down: r1 {}\nr2 {}",
        ctl_router(&lab, "r1", "stats")["router"]["rsvp"],
        ctl_router(&lab, "r2", "stats")["router"]["rsvp"]
    );
    let rerouted = router_counter(&lab, "r1", "/rsvp/rerouted");
    eprintln!(
        "r1–r3 down ({RESV_REROUTE_DAEMON}): reserved over r1 → r2 → r3 after {:.2} s \
         (r1 re-routed {rerouted} paths)",
        failed.elapsed().as_secs_f64()
    );
    assert!(rerouted >= 1, "r1 saw the route change");
    assert_eq!(resvs("r3"), 1, "r3 keeps the session, now from r2");

    let (run, reserved, switched) = stream(3);
    eprintln!(
        "around: {} of {} datagrams lost, {reserved} on the reservation at r1, {switched} \
         switched by label at r2",
        run.lost_packets, run.packets
    );
    assert!(
        reserved >= run.packets * 9 / 10,
        "r1 classified the stream again: {reserved} of {}",
        run.packets
    );
    assert!(
        switched >= run.packets * 9 / 10,
        "r2 switched it by label: {switched} of {}",
        run.packets
    );
    assert!(run.loss_percent < 1.0, "{run:?}");

    client.close(opened.conn).expect("closed");
    drop(client);
    down_clean(lab);
}
