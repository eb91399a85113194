//! Offload pass-through in the lab (docs/offload.md). Needs root; skips
//! without it.
//!
//! - `[lab] offloads = true`: hosts a, b and c on one rtlan switch on AF_PACKET ports over
//!   unlimited links, every veth with its offloads on, so hosts send 64 KB TCP super-frames and
//!   leave checksums partial. While a's and b's ports are open, a's TCP to b crosses the
//!   switch's TC fast path as super-frames: b's interface receives packets of several KB on
//!   average. A reservation c → a closes a's port; the same TCP then goes through the core,
//!   which receives the super-frames on its super-frame sockets and cuts them: b receives wire
//!   frames (at most 1,514 bytes) and the switch counts the super-frames and their segments.
//!   TCP must carry at least 100 Mbit/s both ways: a port that truncated super-frames (as
//!   before) would stall TCP in retransmission timeouts far below that, while the slower of the
//!   two paths carried over 1 Gbit/s on this machine.
//! - A crash of the switch (SIGKILL, then the same command line again) and a link going down and
//!   up while a's TCP to b sends super-frames: the crash takes the TC programs with the process's
//!   descriptors, the restarted switch relearns and reopens both ports, the link's port closes
//!   (`link down`) and reopens, TCP carries on, and afterwards super-frames cross whole again at
//!   over 100 Mbit/s with none dropped by a port.
//! - The guarantee demo with offloads on keeps `lab_guarantee.rs`'s criterion (50 Mbit/s within
//!   3 %, no loss, under two UDP floods and a TCP flow sending super-frames): super-frames are
//!   cut before the scheduler, so they change no guarantee.

mod common;

use std::time::Duration;

use common::*;
use rtlan_lab::tools::{Iperf3Opts, Iperf3Server};
use rtlan_lab::Lab;

/// `hosts` on one rtlan switch s1 over unlimited links, every veth's offloads on.
fn offloaded_star(hosts: &[&str]) -> String {
    let mut text = String::from("[lab]\noffloads = true\n\n");
    for h in hosts {
        text.push_str(&format!(
            "[[host]]\nname = \"{h}\"\n[[link]]\nends = [\"{h}\", \"s1\"]\n"
        ));
    }
    text.push_str("[[switch]]\nname = \"s1\"\nkind = \"rtlan\"\n");
    text
}

/// b's `eth0` receive counters: (packets, bytes).
fn rx_counters(lab: &Lab, host: &str) -> (u64, u64) {
    let read = |what: &str| -> u64 {
        exec_ok(
            lab,
            host,
            &["cat", &format!("/sys/class/net/eth0/statistics/{what}")],
        )
        .trim()
        .parse()
        .expect("a counter")
    };
    (read("rx_packets"), read("rx_bytes"))
}

/// TCP from `from` to `to` for 2 s: (bit/s at the receiver, bytes per packet received on
/// `to`'s interface).
fn tcp(lab: &Lab, from: &str, to: &str, port: u16) -> (f64, f64) {
    tcp_for(lab, from, to, port, 2)
}

/// [`tcp`] for `secs` seconds.
fn tcp_for(lab: &Lab, from: &str, to: &str, port: u16, secs: u32) -> (f64, f64) {
    let server = Iperf3Server::start(lab.netns(to).expect("ns"), port).expect("iperf3 server");
    let (p0, b0) = rx_counters(lab, to);
    let r = rtlan_lab::tools::iperf3_tcp(
        lab.netns(from).expect("ns"),
        lab.host_ip(to).expect("ip"),
        server.port(),
        secs,
        &Iperf3Opts::default(),
    )
    .expect("iperf3 runs");
    let (p1, b1) = rx_counters(lab, to);
    drop(server);
    (r.receiver_bps, (b1 - b0) as f64 / (p1 - p0).max(1) as f64)
}

/// Port `port`'s shell counters of switch s1.
fn shell_port(lab: &Lab, port: u64) -> serde_json::Value {
    ctl(lab, "s1", "stats")["shell"]["ports"][port as usize].clone()
}

/// Waits (up to 10 s) until port `port` of s1 has fast-path state `state`.
fn wait_fast_state(lab: &Lab, port: u64, state: &str) {
    let (reached, took) = wait_until(Duration::from_secs(10), || fast_state(lab, port) == state);
    assert!(
        reached,
        "port {port} not `{state}` after {took:?}: {}",
        fast_state(lab, port)
    );
}

fn fast_state(lab: &Lab, port: u64) -> String {
    ctl(lab, "s1", "stats")["shell"]["fast_path"][port as usize]["state"]
        .as_str()
        .unwrap_or("?")
        .to_string()
}

#[test]
fn tcp_super_frames_cross_the_fast_path_whole_and_the_core_cut() {
    if !root_or_skip("tcp_super_frames_cross_the_fast_path_whole_and_the_core_cut") {
        return;
    }
    let _serial = rtlan_lab::serial_lock().expect("lab lock");
    let lab = up_str(&offloaded_star(&["a", "b", "c"]), "offl");
    let (pa, pb) = (port_towards(&lab, "s1", "a"), port_towards(&lab, "s1", "b"));
    ping_ok(&lab, "a", "b");
    ping_ok(&lab, "a", "c");
    for p in [pa, pb] {
        assert_eq!(
            fast_state(&lab, p),
            "open",
            "port {p} before any reservation"
        );
    }

    // Open ports: super-frames cross whole.
    let before = shell_port(&lab, pa);
    let (bps, per_packet) = tcp(&lab, "a", "b", 5201);
    eprintln!(
        "fast path: {:.2} Gbit/s, {per_packet:.0} bytes per packet at b",
        bps / 1e9
    );
    assert!(bps > 100e6, "TCP over the fast path: {bps} bit/s");
    assert!(
        per_packet > 3000.0,
        "b received {per_packet:.0} bytes per packet: super-frames were cut on the way"
    );
    let after = shell_port(&lab, pa);
    let core_super =
        after["rx_superframes"].as_u64().unwrap() - before["rx_superframes"].as_u64().unwrap();
    assert!(
        core_super < 10,
        "{core_super} super-frames reached the core across open ports"
    );

    // A reservation c → a closes a's port (it leaves by it; one entering by it would meter a's
    // best-effort input, EtheReal's preemptive discard): the same TCP goes through the core,
    // cut there.
    let daemon = Daemon::start(&lab, "c");
    let mut client = daemon.client();
    client
        .open(&open_params(lab.host_ip("a").expect("ip"), 7000))
        .expect("reservation c -> a");
    assert_eq!(fast_state(&lab, pa), "reservations leave");
    let before = shell_port(&lab, pa);
    let (bps, per_packet) = tcp(&lab, "a", "b", 5202);
    let after = shell_port(&lab, pa);
    let counter = |name: &str| after[name].as_u64().unwrap() - before[name].as_u64().unwrap();
    let (supers, segments) = (counter("rx_superframes"), counter("rx_superframe_segments"));
    eprintln!(
        "through the core: {:.2} Gbit/s, {per_packet:.0} bytes per packet at b, \
         {supers} super-frames cut into {segments} frames, {} partial checksums filled",
        bps / 1e9,
        counter("rx_csum_not_ready")
    );
    assert!(bps > 100e6, "TCP through the core: {bps} bit/s");
    assert!(
        per_packet <= 1514.0,
        "b received {per_packet:.0} bytes per packet through the core"
    );
    assert!(supers > 0, "no super-frame reached the core's port");
    assert!(
        segments >= 2 * supers,
        "{supers} super-frames gave only {segments} frames"
    );
    assert_eq!(counter("rx_superframe_dropped"), 0, "{after}");
    assert_eq!(counter("rx_truncated"), 0, "{after}");
    assert_eq!(counter("rx_csum_unfilled"), 0, "{after}");
    drop((client, daemon));
    down_clean(lab);
}

#[test]
fn super_frames_survive_a_switch_crash_and_a_link_going_down() {
    if !root_or_skip("super_frames_survive_a_switch_crash_and_a_link_going_down") {
        return;
    }
    let _serial = rtlan_lab::serial_lock().expect("lab lock");
    let lab = up_str(&offloaded_star(&["a", "b"]), "offr");
    let (pa, pb) = (port_towards(&lab, "s1", "a"), port_towards(&lab, "s1", "b"));
    let pb_ifname = lab.switch_ports("s1").expect("ports")[pb as usize]
        .0
        .clone();
    ping_ok(&lab, "a", "b");
    wait_fast_state(&lab, pa, "open");
    wait_fast_state(&lab, pb, "open");

    let (restarted, (bps, per_packet)) = std::thread::scope(|scope| {
        let flow = scope.spawn(|| tcp_for(&lab, "a", "b", 5203, 8));
        std::thread::sleep(Duration::from_millis(1500));
        crash_switch(&lab, "s1");
        let restarted = restart_switch(&lab, "s1");
        // TCP's retransmissions teach the new process where a and b are.
        wait_fast_state(&lab, pa, "open");
        wait_fast_state(&lab, pb, "open");
        std::thread::sleep(Duration::from_millis(500));
        exec_ok(&lab, "s1", &["ip", "link", "set", &pb_ifname, "down"]);
        wait_fast_state(&lab, pb, "link down");
        std::thread::sleep(Duration::from_millis(300));
        exec_ok(&lab, "s1", &["ip", "link", "set", &pb_ifname, "up"]);
        wait_fast_state(&lab, pb, "open");
        (restarted, flow.join().expect("the TCP thread"))
    });
    eprintln!(
        "TCP across the crash and the link flap: {:.2} Gbit/s, {per_packet:.0} bytes per packet",
        bps / 1e9
    );
    assert!(bps > 0.0, "TCP never carried on");
    let before: Vec<_> = [pa, pb].map(|p| shell_port(&lab, p)).to_vec();
    let (bps, per_packet) = tcp(&lab, "a", "b", 5204);
    eprintln!(
        "afterwards: {:.2} Gbit/s, {per_packet:.0} bytes per packet at b",
        bps / 1e9
    );
    assert!(bps > 100e6, "TCP after the crash and the flap: {bps} bit/s");
    assert!(
        per_packet > 3000.0,
        "b received {per_packet:.0} bytes per packet: super-frames no longer cross whole"
    );
    for (i, p) in [pa, pb].into_iter().enumerate() {
        let after = shell_port(&lab, p);
        assert_eq!(after["rx_superframe_dropped"], 0, "port {p}: {after}");
        assert_eq!(after["rx_truncated"], 0, "port {p}: {after}");
        assert!(
            after["rx_superframes"].as_u64()
                <= before[i]["rx_superframes"].as_u64().map(|n| n + 10),
            "super-frames reached the core across open ports: {after}"
        );
    }
    signal(restarted.id(), libc::SIGTERM);
    let mut restarted = restarted;
    let _ = restarted.wait();
    down_clean(lab);
}

#[test]
fn the_guarantee_demo_holds_with_offloads_on() {
    if !root_or_skip("the_guarantee_demo_holds_with_offloads_on") {
        return;
    }
    let (doc, code) = run_demo(&["--offloads"]);
    assert_eq!(doc["offloads"], true, "{doc}");
    assert_demo_guarantee(&doc, "rtlan with offloads on");
    assert_eq!(code, Some(0), "demo exit status");
}
