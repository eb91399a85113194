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
    // The demo takes the lab serial lock itself and removes its labs on every path.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rtlan"))
        .args(["demo", "--json", "--no-plot", "--seconds", "4"])
        .args(["--data-plane", "af_xdp"])
        .output()
        .expect("run rtlan demo");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "demo printed no JSON ({e}): {stdout}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    eprintln!("{doc:#}");
    assert_eq!(doc["data_plane"], "af_xdp", "{doc}");
    // lab_guarantee.rs's criterion and reasoning: d's port is offered about 250 Mbit/s for 100;
    // a switch that did not serve the connection first would deliver about 20 Mbit/s with
    // about 60 % loss.
    let rt = demo_reserved_flow(&doc, "rtlan");
    let delivered = rt["delivered_bps"].as_f64().expect("delivered_bps");
    assert!(
        (delivered - 50e6).abs() <= 0.03 * 50e6,
        "rtlan on AF_XDP: reserved flow delivered {delivered} bit/s, not within 3 %: {rt}"
    );
    assert_eq!(rt["loss_pct"].as_f64(), Some(0.0), "lost datagrams: {rt}");
    assert_eq!(out.status.code(), Some(0), "demo exit status");
}
