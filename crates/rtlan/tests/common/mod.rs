//! Shared helpers for the lab tests: root check, unique lab names, control-socket queries.
#![allow(dead_code, unreachable_pub)]

use std::net::Ipv4Addr;
use std::time::Duration;

use rtlan_lab::{Lab, LabOptions, Topology};

/// Whether we can build labs (root); prints why a test is skipped otherwise.
pub fn root_or_skip(test: &str) -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        eprintln!("skipping {test}: lab tests need root (network namespaces)");
    }
    root
}

/// A lab name unique to this process and test: `t<tag><pid>`; tags of at most 4 characters keep
/// it within the 10 characters a lab name may have.
pub fn lab_name(tag: &str) -> String {
    let pid = std::process::id() % 100_000;
    format!("t{tag}{pid}")
}

/// Builds a topology file from the repository as a lab.
pub fn up_file(file: &str, tag: &str) -> Lab {
    let path = format!("{}/../../topologies/{file}", env!("CARGO_MANIFEST_DIR"));
    let topology = Topology::from_file(&path).expect("repository topology parses");
    up(&topology, tag)
}

/// Builds an inline topology as a lab.
pub fn up_str(text: &str, tag: &str) -> Lab {
    let topology = Topology::from_str(text, "inline").expect("inline topology parses");
    up(&topology, tag)
}

fn up(topology: &Topology, tag: &str) -> Lab {
    let name = lab_name(tag);
    // A crashed earlier run of this very test may have left the lab behind.
    let _ = rtlan_lab::down(&name);
    Lab::up(
        topology,
        &name,
        &LabOptions::new(env!("CARGO_BIN_EXE_rtlan")),
    )
    .expect("lab up")
}

/// Asks a switch's control socket.
pub fn ctl(lab: &Lab, switch: &str, cmd: &str) -> serde_json::Value {
    let socket = lab.switch_socket(switch).expect("an rtlan switch");
    rtlan_linux::ctl::request(&socket, cmd).expect("control request")
}

/// The learning table of `switch` as (mac, port index) pairs.
pub fn fdb(lab: &Lab, switch: &str) -> Vec<(String, u64)> {
    ctl(lab, switch, "fdb")
        .as_array()
        .expect("fdb is an array")
        .iter()
        .map(|e| {
            (
                e["mac"].as_str().expect("mac").to_string(),
                e["port"].as_u64().expect("port"),
            )
        })
        .collect()
}

/// The port index of `switch` whose link leads to `peer`.
pub fn port_towards(lab: &Lab, switch: &str, peer: &str) -> u64 {
    let ports = lab.switch_ports(switch).expect("switch ports");
    ports
        .iter()
        .position(|(_, p)| p == peer)
        .unwrap_or_else(|| panic!("{switch} has no port towards {peer}")) as u64
}

/// MAC of a host's eth0 as text.
pub fn host_mac(lab: &Lab, host: &str) -> String {
    rtlan_wire::ethernet::Address(lab.mac(host, "eth0").expect("mac")).to_string()
}

/// Pings `to` from `from` and asserts every reply came back.
pub fn ping_ok(lab: &Lab, from: &str, to: &str) {
    let ip = lab.host_ip(to).expect("host ip");
    let r = rtlan_lab::tools::ping(
        lab.netns(from).expect("ns"),
        ip,
        3,
        Duration::from_millis(200),
    )
    .expect("ping runs");
    assert_eq!(r.received, 3, "ping {from} -> {to} ({ip}): {r:?}");
}

/// Runs a command in a node and returns its stdout; panics with stderr on failure.
pub fn exec_ok(lab: &Lab, node: &str, args: &[&str]) -> String {
    let out = lab
        .exec(node, args)
        .expect("node exists")
        .output()
        .expect("command runs");
    assert!(
        out.status.success(),
        "{args:?} in {node} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Tears the lab down and asserts that none of its namespaces is left.
pub fn down_clean(lab: Lab) {
    let name = lab.name().to_string();
    lab.down().expect("lab down");
    let left = rtlan_lab::lab_namespaces(&name).expect("ip netns list");
    assert!(left.is_empty(), "namespaces left behind: {left:?}");
}

/// A host's IP.
pub fn ip(lab: &Lab, host: &str) -> Ipv4Addr {
    lab.host_ip(host).expect("host ip")
}
