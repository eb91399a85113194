//! Routers on AF_XDP ports in the lab (docs/afxdp.md): `topologies/routed.toml` (a — r1 — r2 —
//! b) with `data_plane = "af_xdp"` on both rtlan routers. The XDP program hands transit IPv4
//! to the router and leaves ARP and the routers' own traffic to their kernels, so everything
//! that worked on AF_PACKET must work the same: ARP through the kernel and the tap, TTL,
//! time exceeded from the router's own address, 20 Mbit/s of UDP whole, and an RSVP
//! reservation switched by label. Needs root; skips without it.
//!
//! Tolerances as in `lab_router.rs` (loss < 1 % at a fifth of the line rate; exact TTLs).

mod common;

use std::time::Duration;

use common::*;
use rtlan_lab::tools::{self, Iperf3Opts, Iperf3Server};
use rtlan_lab::{Lab, LabOptions, Topology};
use rtlan_linux::xdp::DataPlane;

fn up_xdp() -> Lab {
    let path = format!(
        "{}/../../topologies/routed.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let topology = Topology::from_file(&path).expect("routed.toml");
    let name = lab_name("xdp");
    let _ = rtlan_lab::down(&name);
    let mut options = LabOptions::new(env!("CARGO_BIN_EXE_rtlan"));
    options.router_data_plane = DataPlane::AfXdp;
    Lab::up(&topology, &name, &options).expect("lab up")
}

#[test]
fn routers_on_af_xdp_ports_forward_route_and_switch_as_on_af_packet() {
    if !root_or_skip("routers_on_af_xdp_ports_forward_route_and_switch_as_on_af_packet") {
        return;
    }
    let _serial = rtlan_lab::serial_lock().expect("lab lock");
    let lab = up_xdp();
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
