//! Switches and routers on AF_XDP ports in the lab (docs/afxdp.md). Needs root; skips without it.
//!
//! - Routers: `topologies/routed.toml` (a — r1 — r2 — b) with `data_plane = "af_xdp"` on both
//!   rtlan routers. The XDP program hands transit IPv4 to the router and leaves ARP and the
//!   routers' own traffic to their kernels, so everything that worked on AF_PACKET must work the
//!   same: ARP through the kernel and the tap, TTL, time exceeded from the router's own address,
//!   20 Mbit/s of UDP whole, and an RSVP reservation switched by label. Tolerances as in
//!   `lab_router.rs` (loss < 1 % at a fifth of the line rate; exact TTLs).
//! - Switches: the program hands the switch every frame. `topologies/default.toml` on AF_XDP
//!   learns, answers and forwards as `lab_switch.rs` checks on AF_PACKET (same tolerances), and
//!   the guarantee demo on AF_XDP keeps `lab_guarantee.rs`'s criterion (50 Mbit/s within 3 %,
//!   no loss, under two floods).

mod common;

use std::time::Duration;

use common::*;
use rtlan_lab::tools::{self, Iperf3Opts, Iperf3Server};
use rtlan_lab::{Lab, LabOptions, Topology};
use rtlan_linux::xdp::DataPlane;

/// `topologies/<file>` as a lab whose rtlan switches and routers run on AF_XDP ports.
fn up_xdp(file: &str, tag: &str) -> Lab {
    let path = format!("{}/../../topologies/{file}", env!("CARGO_MANIFEST_DIR"));
    let topology = Topology::from_file(&path).expect("repository topology");
    let name = lab_name(tag);
    let _ = rtlan_lab::down(&name);
    let mut options = LabOptions::new(env!("CARGO_BIN_EXE_rtlan"));
    options.data_plane = DataPlane::AfXdp;
    Lab::up(&topology, &name, &options).expect("lab up")
}

#[test]
fn routers_on_af_xdp_ports_forward_route_and_switch_as_on_af_packet() {
    if !root_or_skip("routers_on_af_xdp_ports_forward_route_and_switch_as_on_af_packet") {
        return;
    }
    let _serial = rtlan_lab::serial_lock().expect("lab lock");
    let lab = up_xdp("routed.toml", "xdp");
    for r in ["r1", "r2"] {
        lab.router_wait_routes(r, Duration::from_secs(5))
            .expect("static routes");
        let stats = ctl_router(&lab, r, "stats");
        for p in stats["shell"]["ports"].as_array().expect("ports") {
            assert_eq!(p["kind"], "af_xdp", "{r}: {p}");
        }
    }
    let b = ip(&lab, "b");
    ping_ok(&lab, "a", "b");
    let out = lab
        .exec("a", &["ping", "-n", "-c1", "-W2", "-t2", &b.to_string()])
        .unwrap()
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Time to live exceeded"),
        "time exceeded from r2:\n{text}"
    );
    let ttl = exec_ok(&lab, "a", &["ping", "-n", "-c1", "-W1", &b.to_string()]);
    assert!(ttl.contains("ttl=62"), "two router hops: {ttl}");

    let ns = |n| lab.netns(n).unwrap();
    let server = Iperf3Server::start(ns("b"), 5201).unwrap();
    let udp = tools::iperf3_udp(ns("a"), b, 5201, 3, 20_000_000, &Iperf3Opts::default()).unwrap();
    eprintln!(
        "UDP over AF_XDP routers: {:.2} Mbit/s, {} of {} lost",
        udp.receiver_bps / 1e6,
        udp.lost_packets,
        udp.packets
    );
    assert!(udp.packets > 1000 && udp.loss_percent < 1.0, "{udp:?}");
    drop(server);

    // RSVP through the XDP program (protocol 46 and the Router Alert go to the router), and
    // the switched path's MPLS frames too.
    let rtcd_a = Daemon::start_with_config(&lab, "a", "signalling = \"rsvp\"\n");
    let _rtcd_b = Daemon::start_with_config(&lab, "b", "signalling = \"rsvp\"\n");
    let mut client = rtcd_a.client();
    let opened = client
        .open(&rtlan_linux::rtcd::OpenParams {
            dst_ip: b,
            dst_port: 5004,
            src_port: 4000,
            rate_bps: 10_000_000,
            max_burst: 15_000,
            max_packet: 1514,
            delay_us: None,
        })
        .expect("reserved across both routers");
    let _video = Iperf3Server::start(ns("b"), 5004).unwrap();
    let opts = Iperf3Opts {
        length: Some(1000),
        client_port: Some(4000),
        ..Iperf3Opts::default()
    };
    let video = tools::iperf3_udp(ns("a"), b, 5004, 2, 5_000_000, &opts).unwrap();
    let r2 = ctl_router(&lab, "r2", "stats");
    let switched = r2["router"]["labelled_switched"].as_u64().unwrap_or(0);
    assert!(
        switched >= video.packets * 9 / 10,
        "r2 switched the stream by label: {switched} of {}",
        video.packets
    );
    assert!(video.loss_percent < 1.0, "{video:?}");
    client.close(opened.conn).expect("closed");
    drop(client);
    down_clean(lab);
}

/// Every port of `switch` reports the AF_XDP socket.
fn assert_af_xdp_ports(lab: &Lab, switch: &str) {
    let stats = ctl(lab, switch, "stats");
    let ports = stats["shell"]["ports"].as_array().expect("ports");
    assert!(!ports.is_empty(), "{stats}");
    for p in ports {
        assert_eq!(p["kind"], "af_xdp", "{switch}: {p}");
    }
}

#[test]
fn a_switch_on_af_xdp_ports_learns_answers_and_forwards_as_on_af_packet() {
    if !root_or_skip("a_switch_on_af_xdp_ports_learns_answers_and_forwards_as_on_af_packet") {
        return;
    }
    let _serial = rtlan_lab::serial_lock().expect("lab lock");
    let lab = up_xdp("default.toml", "xsw");
    assert_af_xdp_ports(&lab, "s1");

    // As lab_switch.rs on AF_PACKET: ARP now reaches the switch through the socket, not a tap,
    // and an AF_XDP send skips the qdiscs, so only the switch's pacing limits TCP.
    assert_serves_default_topology(&lab);
    down_clean(lab);
}

#[test]
fn the_guarantee_demo_holds_on_af_xdp_switch_ports() {
    if !root_or_skip("the_guarantee_demo_holds_on_af_xdp_switch_ports") {
        return;
    }
    let (doc, code) = run_demo(&["--data-plane", "af_xdp"]);
    assert_eq!(doc["data_plane"], "af_xdp", "{doc}");
    // lab_guarantee.rs's criterion and reasoning: d's port is offered about 250 Mbit/s for 100;
    // a switch that did not serve the connection first would deliver about 20 Mbit/s with
    // about 60 % loss.
    assert_demo_guarantee(&doc, "rtlan on AF_XDP");
    assert_eq!(code, Some(0), "demo exit status");
}

/// The best-effort fast path (docs/fastpath.md) in the lab: a, b and c on one rtlan switch over
/// unlimited links (unpaced ports) on AF_XDP. Pings between learnt hosts are forwarded by the
/// ports' XDP programs (their counters grow, the core's forwarded count does not); a
/// reservation a → c closes a's and c's ports (its booking, before SETUP_OK) while b's stays
/// open, pings then take the core's path and still arrive; closing it opens the ports again.
#[test]
fn best_effort_frames_take_the_fast_path_except_across_reserved_ports() {
    if !root_or_skip("best_effort_frames_take_the_fast_path_except_across_reserved_ports") {
        return;
    }
    let _serial = rtlan_lab::serial_lock().expect("lab lock");
    let mut text = String::new();
    for h in ["a", "b", "c"] {
        text.push_str(&format!(
            "[[host]]\nname = \"{h}\"\n[[link]]\nends = [\"{h}\", \"s1\"]\n"
        ));
    }
    text.push_str("[[switch]]\nname = \"s1\"\nkind = \"rtlan\"\n");
    let topology = Topology::from_str(&text, "inline").expect("topology");
    let name = lab_name("fast");
    let _ = rtlan_lab::down(&name);
    let mut options = LabOptions::new(env!("CARGO_BIN_EXE_rtlan"));
    options.data_plane = DataPlane::AfXdp;
    let lab = Lab::up(&topology, &name, &options).expect("lab up");
    assert_af_xdp_ports(&lab, "s1");
    let (pa, pb, pc) = (
        port_towards(&lab, "s1", "a") as usize,
        port_towards(&lab, "s1", "b") as usize,
        port_towards(&lab, "s1", "c") as usize,
    );
    let fast = |port: usize| {
        let stats = ctl(&lab, "s1", "stats");
        let f = &stats["shell"]["fast_path"][port];
        (
            f["state"].as_str().unwrap_or("?").to_string(),
            f["frames"].as_u64().expect("frames"),
            stats["switch"]["forwarded"].as_u64().expect("forwarded"),
        )
    };
    for p in [pa, pb, pc] {
        assert_eq!(fast(p).0, "open", "port {p} before any reservation");
    }
    let ping = |from: &str, to: &str, count: u32| {
        let r = rtlan_lab::tools::ping(
            lab.netns(from).expect("ns"),
            lab.host_ip(to).expect("ip"),
            count,
            Duration::from_millis(20),
        )
        .expect("ping runs");
        assert_eq!(r.received, count, "ping {from} -> {to}: {r:?}");
    };
    // The first ping learns a and b in the core; the rest go by XDP both ways.
    ping("a", "b", 3);
    let (_, a0, fwd0) = fast(pa);
    let (_, b0, _) = fast(pb);
    ping("a", "b", 20);
    let (_, a1, fwd1) = fast(pa);
    let (_, b1, _) = fast(pb);
    assert!(
        a1 - a0 >= 20 && b1 - b0 >= 20,
        "fast frames a {a0}->{a1}, b {b0}->{b1}"
    );
    assert!(
        fwd1 - fwd0 < 5,
        "the core forwarded {} of them",
        fwd1 - fwd0
    );

    // A reservation a -> c closes the ports it crosses, at once.
    let daemon = Daemon::start(&lab, "a");
    let mut client = daemon.client();
    ping("a", "c", 3);
    let opened = client
        .open(&open_params(lab.host_ip("c").expect("ip"), 7000))
        .expect("reservation a -> c");
    assert_eq!(fast(pa).0, "reservations enter");
    assert_eq!(fast(pc).0, "reservations leave");
    assert_eq!(fast(pb).0, "open");
    let (_, a2, fwd2) = fast(pa);
    let (_, b2, _) = fast(pb);
    ping("a", "b", 20);
    ping("b", "c", 5);
    let (_, a3, fwd3) = fast(pa);
    let (_, b3, _) = fast(pb);
    assert_eq!(
        (a3, b3),
        (a2, b2),
        "nothing bypassed the core across a reserved port"
    );
    assert!(
        fwd3 - fwd2 >= 50,
        "the core forwarded them: {}",
        fwd3 - fwd2
    );

    // Closed: the ports open again once the connection has drained.
    client.close(opened.conn).expect("close");
    let (reopened, took) = wait_until(Duration::from_secs(5), || {
        fast(pa).0 == "open" && fast(pc).0 == "open"
    });
    assert!(
        reopened,
        "ports still closed after {took:?}: {:?} {:?}",
        fast(pa),
        fast(pc)
    );
    ping("a", "c", 10);
    assert!(fast(pa).1 >= a3 + 10, "the fast path again after the close");
    drop((client, daemon));
    down_clean(lab);
}

/// docs/fastpath.md "What it does not protect", measured: b floods c with minimum-size frames
/// as fast as trafgen can send them, through the fast path (s1's port to s2 is open while no
/// reservation crosses it), while a opens and closes reservations a -> c one after another. The
/// SETUP from s1 to s2 shares the link with the flood until s1 books it and closes the port.
/// Every open must succeed; the test prints how long each took, and the flood's fast-path count
/// shows it really took the fast path. While a reservation holds s1's ports closed, the flood
/// goes through the switch's user-space path, which is slower than trafgen: the veth then
/// pushes back and trafgen gives up ("Flushing TX_RING failed"), so the flood is restarted in
/// one-second pieces until the opens are done.
#[test]
fn setups_cross_a_trunk_flooded_through_the_fast_path() {
    if !root_or_skip("setups_cross_a_trunk_flooded_through_the_fast_path") {
        return;
    }
    let _serial = rtlan_lab::serial_lock().expect("lab lock");
    let text = "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[host]]\nname = \"c\"\n\
                [[switch]]\nname = \"s1\"\nkind = \"rtlan\"\n\
                [[switch]]\nname = \"s2\"\nkind = \"rtlan\"\n\
                [[link]]\nends = [\"a\", \"s1\"]\n[[link]]\nends = [\"b\", \"s1\"]\n\
                [[link]]\nends = [\"s1\", \"s2\"]\n[[link]]\nends = [\"c\", \"s2\"]\n";
    let topology = Topology::from_str(text, "inline").expect("topology");
    let name = lab_name("ffl");
    let _ = rtlan_lab::down(&name);
    let mut options = LabOptions::new(env!("CARGO_BIN_EXE_rtlan"));
    options.data_plane = DataPlane::AfXdp;
    let lab = Lab::up(&topology, &name, &options).expect("lab up");
    ping_ok(&lab, "b", "c");
    ping_ok(&lab, "a", "c");
    let pb = port_towards(&lab, "s1", "b") as usize;
    let fast_b = || {
        ctl(&lab, "s1", "stats")["shell"]["fast_path"][pb]["frames"]
            .as_u64()
            .expect("frames")
    };
    let before = fast_b();
    let mut flood = rtlan_lab::tools::TrafgenUdp::new(
        "eth0",
        lab.mac("b", "eth0").expect("mac"),
        lab.mac("c", "eth0").expect("mac"),
        lab.host_ip("b").expect("ip"),
        lab.host_ip("c").expect("ip"),
    );
    flood.duration = Duration::from_secs(1);
    let ns_b = lab.netns("b").expect("ns").to_string();
    let daemon = Daemon::start(&lab, "a");
    let mut client = daemon.client();
    let c_ip = lab.host_ip("c").expect("ip");
    let took = opens_under_a_flood(&mut client, &ns_b, &flood, c_ip);
    let fast = fast_b() - before;
    eprintln!("opens under the flood took {took:?}; {fast} flood frames by the fast path");
    assert!(
        fast > 100_000,
        "the flood took the fast path: {fast} frames"
    );
    drop((client, daemon));
    down_clean(lab);
}

/// Opens and closes 20 reservations to `dst` through `client`, 100 ms apart, while `flood`
/// runs from namespace `ns`, and returns how long each open took; panics if one fails. The
/// flood goes in one-second pieces, restarted when the veth's push-back ends trafgen
/// ("Flushing TX_RING failed"), and stops however the opens end.
fn opens_under_a_flood(
    client: &mut rtlan_linux::rtcd::RtcdClient,
    ns: &str,
    flood: &rtlan_lab::tools::TrafgenUdp,
    dst: std::net::Ipv4Addr,
) -> Vec<Duration> {
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        let flooding = scope.spawn(|| {
            let (mut pieces, mut pushed_back) = (0u32, 0u32);
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                match rtlan_lab::tools::trafgen_udp(ns, flood) {
                    Ok(_) => pieces += 1,
                    Err(rtlan_lab::tools::ToolError::Failed { stderr_tail, .. })
                        if stderr_tail.contains("Flushing TX_RING failed") =>
                    {
                        pushed_back += 1;
                    }
                    Err(e) => panic!("trafgen: {e}"),
                }
            }
            (pieces, pushed_back)
        });
        // A panic here waits for the scope's threads: the guard ends the flood first.
        let _stop = StopOnDrop(&done);
        std::thread::sleep(Duration::from_secs(1));
        let mut took = Vec::new();
        for i in 0..20u16 {
            let start = std::time::Instant::now();
            let opened = client
                .open(&open_params(dst, 7000 + i))
                .unwrap_or_else(|e| panic!("open {i} under the flood: {e}"));
            took.push(start.elapsed());
            client.close(opened.conn).expect("close");
            std::thread::sleep(Duration::from_millis(100));
        }
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        let (pieces, pushed_back) = flooding.join().expect("trafgen thread");
        eprintln!("flood: {pieces} one-second pieces whole, {pushed_back} ended by push-back");
        took
    })
}

/// Sets its flag when dropped: ends a flood thread however the test's scope ends.
struct StopOnDrop<'a>(&'a std::sync::atomic::AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// The router's port towards `peer`: (index, interface name).
fn router_port(lab: &Lab, router: &str, peer: &str) -> (usize, String) {
    lab.router_ports(router)
        .expect("router ports")
        .into_iter()
        .enumerate()
        .find(|(_, (_, p))| p == peer)
        .map(|(i, (ifname, _))| (i, ifname))
        .unwrap_or_else(|| panic!("{router} has no port towards {peer}"))
}

/// The fast-path state of every port of `router` (`stats` → `shell.fast_path.ports`).
fn router_fast_states(lab: &Lab, router: &str) -> Vec<String> {
    ctl_router(lab, router, "stats")["shell"]["fast_path"]["ports"]
        .as_array()
        .expect("the router's fast path is on")
        .iter()
        .map(|p| p["state"].as_str().expect("state").to_string())
        .collect()
}

/// Waits until every port of `router` is open to the fast path, or panics with their states.
fn wait_router_open(lab: &Lab, router: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let states = router_fast_states(lab, router);
        if states.iter().all(|s| s == "open") {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{router}'s ports did not open: {states:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The router's fast path (docs/fastpath.md "The router") on a — r1 — r2 — b with unlimited
/// links and RSVP on both routers:
///
/// - plain IPv4 takes the fast path at both routers once the next hops are resolved (counters),
///   with the TTL the core would leave (62 at b), and time-exceeded still comes from r2's core;
/// - the paper's order holds: while a reservation a → b is installed, r1 (its classifier's
///   ingress) closes every port and r2 closes the port the reservation leaves by, and pings
///   cross the cores with the fast-path counters standing still; tearing it down reopens them;
/// - QSR §6.2 with the fast path: trafgen floods a → b through both routers' fast paths while
///   rtcd opens and closes 20 RSVP reservations a → b; every one must succeed (a lost Path or
///   Resv is not resent before the 30-s refresh, so the open would fail), and the flood must have
///   taken the fast path. The flood restarts in one-second pieces when push-back ends trafgen,
///   as in `setups_cross_a_trunk_flooded_through_the_fast_path`;
/// - a hostile host: the same 20 opens while a flood aims at r1's own address (which the
///   program leaves to the kernel, and which must not share RSVP's ring);
/// - a link down closes its port ("link down") and, back up, the port reopens and a reaches b;
/// - a restart of r1: the new process's program forwards (its fresh counters see the pings),
///   nothing of the old one is left in the way.
#[test]
fn routers_forward_on_the_fast_path_and_keep_rsvp_ahead_of_it() {
    if !root_or_skip("routers_forward_on_the_fast_path_and_keep_rsvp_ahead_of_it") {
        return;
    }
    routers_fast_path_case(DataPlane::AfXdp, "rfp");
}

/// The same with AF_PACKET ports, where the fast path is the routers' TC program
/// (docs/fastpath.md "The router on AF_PACKET"), and RSVP reaches the core through the
/// ports' control sockets.
#[test]
fn routers_forward_on_the_tc_fast_path_and_keep_rsvp_ahead_of_it() {
    if !root_or_skip("routers_forward_on_the_tc_fast_path_and_keep_rsvp_ahead_of_it") {
        return;
    }
    routers_fast_path_case(DataPlane::AfPacket, "rtc");
}

fn routers_fast_path_case(plane: DataPlane, prefix: &str) {
    let _serial = rtlan_lab::serial_lock().expect("lab lock");
    let text = "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n\
                [[router]]\nname = \"r1\"\n[[router]]\nname = \"r2\"\n\
                [[link]]\nends = [\"a\", \"r1\"]\n[[link]]\nends = [\"r1\", \"r2\"]\n\
                [[link]]\nends = [\"r2\", \"b\"]\n";
    let topology = Topology::from_str(text, "inline").expect("topology");
    let name = lab_name(prefix);
    let _ = rtlan_lab::down(&name);
    let mut options = LabOptions::new(env!("CARGO_BIN_EXE_rtlan"));
    options.data_plane = plane;
    let lab = Lab::up(&topology, &name, &options).expect("lab up");
    for r in ["r1", "r2"] {
        lab.router_wait_routes(r, Duration::from_secs(5))
            .expect("static routes");
    }
    let b = ip(&lab, "b");
    ping_ok(&lab, "a", "b");
    for r in ["r1", "r2"] {
        wait_router_open(&lab, r);
    }
    let (r1_a, r1_a_ifname) = router_port(&lab, "r1", "a");
    let (r2_r1, _) = router_port(&lab, "r2", "r1");
    let (r2_b, _) = router_port(&lab, "r2", "b");
    let fast = |r: &str, port: usize| {
        ctl_router(&lab, r, "stats")["shell"]["fast_path"]["ports"][port]["frames"]
            .as_u64()
            .expect("frames")
    };
    let (r1_before, r2_before) = (fast("r1", r1_a), fast("r2", r2_r1));
    let pings = exec_ok(
        &lab,
        "a",
        &["ping", "-n", "-q", "-c20", "-i0.01", "-W1", &b.to_string()],
    );
    assert!(pings.contains(" 0% packet loss"), "{pings}");
    let (r1_fast, r2_fast) = (fast("r1", r1_a) - r1_before, fast("r2", r2_r1) - r2_before);
    assert!(
        r1_fast >= 20 && r2_fast >= 20,
        "the echo requests took both fast paths: r1 {r1_fast}, r2 {r2_fast}"
    );
    let ttl = exec_ok(&lab, "a", &["ping", "-n", "-c1", "-W1", &b.to_string()]);
    assert!(ttl.contains("ttl=62"), "two router hops: {ttl}");
    let out = lab
        .exec("a", &["ping", "-n", "-c1", "-W2", "-t2", &b.to_string()])
        .unwrap()
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Time to live exceeded"),
        "time exceeded from r2's core:\n{text}"
    );

    // A reservation closes the ports the paper's order needs the cores for.
    let rtcd_a = Daemon::start_with_config(&lab, "a", "signalling = \"rsvp\"\n");
    let _rtcd_b = Daemon::start_with_config(&lab, "b", "signalling = \"rsvp\"\n");
    let mut client = rtcd_a.client();
    let opened = client.open(&open_params(b, 5004)).expect("reserved");
    let r1_states = router_fast_states(&lab, "r1");
    let (r1_r2, _) = router_port(&lab, "r1", "r2");
    assert_eq!(
        (r1_states[r1_a].as_str(), r1_states[r1_r2].as_str()),
        ("reservations classified", "reservations leave"),
        "r1 is the reservation's ingress"
    );
    let r2_states = router_fast_states(&lab, "r2");
    assert_eq!(r2_states[r2_b], "reservations leave", "{r2_states:?}");
    let (r1_before, r2_before) = (fast("r1", r1_a), fast("r2", r2_b));
    ping_ok(&lab, "a", "b");
    assert_eq!(
        (fast("r1", r1_a), fast("r2", r2_b)),
        (r1_before, r2_before),
        "nothing bypassed the cores across closed ports"
    );
    client.close(opened.conn).expect("closed");
    for r in ["r1", "r2"] {
        wait_router_open(&lab, r);
    }

    // RSVP under a flood through both fast paths.
    let mut flood = rtlan_lab::tools::TrafgenUdp::new(
        "eth0",
        lab.mac("a", "eth0").expect("mac"),
        lab.mac("r1", &r1_a_ifname).expect("mac"),
        lab.host_ip("a").expect("ip"),
        b,
    );
    flood.duration = Duration::from_secs(1);
    let ns_a = lab.netns("a").expect("ns").to_string();
    let flood_before = fast("r1", r1_a);
    let took = opens_under_a_flood(&mut client, &ns_a, &flood, b);
    let flooded = fast("r1", r1_a) - flood_before;
    let stats = ctl_router(&lab, "r1", "stats");
    eprintln!(
        "RSVP opens under the flood took {took:?}; {flooded} flood frames by r1's fast path; \
         r1 fast path: {}",
        stats["shell"]["fast_path"]
    );
    assert!(
        flooded > 100_000,
        "the flood took the fast path: {flooded} frames"
    );

    // A hostile host floods the router's own address: the program leaves those packets to
    // the kernel, and they must not crowd RSVP out of the core's control ring.
    let route = exec_ok(&lab, "a", &["ip", "-4", "route", "show", "default"]);
    let r1_addr: std::net::Ipv4Addr = route
        .split_whitespace()
        .skip_while(|w| *w != "via")
        .nth(1)
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("a's gateway: {route}"));
    let received = |lab: &Lab| -> u64 {
        let path = format!("/sys/class/net/{r1_a_ifname}/statistics/rx_packets");
        exec_ok(lab, "r1", &["cat", &path])
            .trim()
            .parse()
            .expect("count")
    };
    let mut at_router = flood.clone();
    at_router.dst_ip = r1_addr;
    let before = received(&lab);
    let took = opens_under_a_flood(&mut client, &ns_a, &at_router, b);
    let hit = received(&lab) - before;
    eprintln!("RSVP opens under a flood at r1's own address ({hit} frames) took {took:?}");
    assert!(hit > 100_000, "the flood reached r1: {hit} frames");
    drop((client, rtcd_a));

    // A link going down closes its port and sends its routes to the core; back up, the
    // port reopens once its neighbour answers again.
    let (r1_r2, r1_r2_ifname) = router_port(&lab, "r1", "r2");
    exec_ok(&lab, "r1", &["ip", "link", "set", &r1_r2_ifname, "down"]);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while router_fast_states(&lab, "r1")[r1_r2] != "link down" {
        assert!(
            std::time::Instant::now() < deadline,
            "r1's port to r2 did not close: {:?}",
            router_fast_states(&lab, "r1")
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    exec_ok(&lab, "r1", &["ip", "link", "set", &r1_r2_ifname, "up"]);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while lab
        .exec("a", &["ping", "-n", "-c1", "-W1", &b.to_string()])
        .unwrap()
        .output()
        .map(|o| !o.status.success())
        .unwrap_or(true)
    {
        assert!(
            std::time::Instant::now() < deadline,
            "a reaches b again after the link came back"
        );
    }
    wait_router_open(&lab, "r1");

    // A restart: the old process's programs and maps go with its descriptors (as on a crash),
    // and the new process's program carries the traffic, counted in its fresh maps.
    let restarted = rtlan_experiments::kit::routed::restart_router(
        std::path::Path::new(env!("CARGO_BIN_EXE_rtlan")),
        &lab,
        "r1",
        "restart",
        |text| Ok(text.to_string()),
    )
    .expect("r1 restarted");
    lab.router_wait_routes("r1", Duration::from_secs(5))
        .expect("r1's routes after the restart");
    ping_ok(&lab, "a", "b");
    wait_router_open(&lab, "r1");
    let before = fast("r1", r1_a);
    let pings = exec_ok(
        &lab,
        "a",
        &["ping", "-n", "-q", "-c20", "-i0.01", "-W1", &b.to_string()],
    );
    assert!(pings.contains(" 0% packet loss"), "{pings}");
    let after = fast("r1", r1_a) - before;
    assert!(
        after >= 20,
        "the new r1's fast path took the echo requests: {after}"
    );
    drop(restarted);
    down_clean(lab);
}
