//! `state.json`: what a running lab consists of (topology, namespaces, interfaces with their MACs,
//! host IPs, PIDs and files of switches, routers and BIRD), so that `rtlan lab exec` and tests can find their way around
//! a lab another process built. `down` never needs it: it works from namespace names alone.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::topology::Topology;

/// Version of the `state.json` layout.
pub(crate) const STATE_VERSION: u32 = 1;

/// Role of a host.
pub(crate) const ROLE_HOST: &str = "host";
/// Role of an rtlan switch.
pub(crate) const ROLE_RTLAN_SWITCH: &str = "rtlan";
/// Role of a kernel bridge.
pub(crate) const ROLE_LINUX_BRIDGE: &str = "linux-bridge";
/// Role of a shared segment (`rtlan segment`, docs/segment.md).
pub(crate) const ROLE_SEGMENT: &str = "segment";
/// Role of a RETHER bridge (`rtlan rether-bridge`, docs/rether-bridge.md).
pub(crate) const ROLE_RETHER_BRIDGE: &str = "rether-bridge";
/// Role of an rtlan router.
pub(crate) const ROLE_RTLAN_ROUTER: &str = "rtlan-router";
/// Role of a kernel router.
pub(crate) const ROLE_LINUX_ROUTER: &str = "linux-router";

/// The whole of `state.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct LabState {
    /// Layout version ([`STATE_VERSION`]).
    pub(crate) version: u32,
    /// Lab name.
    pub(crate) name: String,
    /// `/run/rtlan/labs/<name>`.
    pub(crate) state_dir: PathBuf,
    /// The topology the lab was built from.
    pub(crate) topology: Topology,
    /// One entry per node, hosts first.
    pub(crate) nodes: Vec<NodeState>,
}

/// One node of a running lab.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct NodeState {
    /// Node name.
    pub(crate) name: String,
    /// Its namespace, `rtl-<lab>-<node>`.
    pub(crate) netns: String,
    /// `host`, `rtlan` (an rtlan switch), `linux-bridge`, `segment`, `rether-bridge`,
    /// `rtlan-router` or `linux-router`.
    pub(crate) role: String,
    /// A host's address and prefix length.
    pub(crate) ip: Option<(Ipv4Addr, u8)>,
    /// The node's link interfaces, in port order.
    pub(crate) interfaces: Vec<IfaceState>,
    /// PID of an rtlan switch or router process.
    pub(crate) pid: Option<u32>,
    /// Control socket of an rtlan switch or router.
    pub(crate) socket: Option<PathBuf>,
    /// Config file of an rtlan switch or router.
    pub(crate) config: Option<PathBuf>,
    /// Log file of an rtlan switch or router.
    pub(crate) log: Option<PathBuf>,
    /// The BIRD daemon of a router with `ospf = "bird"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) bird: Option<DaemonState>,
    /// FRR's `zebra` of a router with `ospf = "frr"` (its socket: `zebra.vty`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) zebra: Option<DaemonState>,
    /// FRR's `ospfd` of a router with `ospf = "frr"` (its socket: `ospfd.vty`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) ospfd: Option<DaemonState>,
    /// The bump namespace of a host attached to a shared segment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) bump: Option<BumpState>,
}

/// The bump namespace between a host and its shared segment (docs/segment.md): `h0` towards
/// the host's `eth0`, `s0` towards the segment's port; the RETHER agent's place.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct BumpState {
    /// Its namespace, `rtl-<lab>-<host>-bump`.
    pub(crate) netns: String,
    /// The segment.
    pub(crate) segment: String,
    /// The segment's port at the other end of `s0`.
    pub(crate) segment_port: String,
    /// Where the host's RETHER agent reads its configuration (`<state>/<host>.rether.toml`).
    pub(crate) agent_config: PathBuf,
    /// The RETHER agent, once the lab starts one; `None` while a bridge stands in.
    pub(crate) agent: Option<DaemonState>,
    /// The kernel bridge joining `h0` and `s0` while no agent runs (`br0`).
    pub(crate) bridge: Option<String>,
}

/// A daemon the lab started beside a node's own process (BIRD, or FRR's zebra and ospfd, in a
/// router's namespace).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct DaemonState {
    /// Its PID.
    pub(crate) pid: u32,
    /// Its control socket.
    pub(crate) socket: PathBuf,
    /// Its config file.
    pub(crate) config: PathBuf,
    /// Its log file (stdout and stderr).
    pub(crate) log: PathBuf,
}

/// One link interface of a node.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct IfaceState {
    /// Interface name in the node's namespace.
    pub(crate) ifname: String,
    /// Its MAC address, `aa:bb:cc:dd:ee:ff`.
    pub(crate) mac: String,
    /// The node at the other end.
    pub(crate) peer_node: String,
    /// The interface at the other end.
    pub(crate) peer_ifname: String,
    /// Emulated line rate, bit/s.
    pub(crate) rate_bps: Option<u64>,
    /// The egress qdisc the lab installed on it, as passed to `tc`, if any.
    pub(crate) qdisc: Option<String>,
}

/// The state directory of lab `name`.
pub(crate) fn state_dir(name: &str) -> PathBuf {
    Path::new(crate::LABS_DIR).join(name)
}

/// The path of `state.json` in `dir`.
pub(crate) fn state_file(dir: &Path) -> PathBuf {
    dir.join("state.json")
}

/// Parses `aa:bb:cc:dd:ee:ff`.
pub(crate) fn parse_mac(text: &str) -> Option<[u8; 6]> {
    let mut out = [0u8; 6];
    let mut parts = text.split(':');
    for byte in &mut out {
        let p = parts.next()?;
        if p.len() != 2 {
            return None;
        }
        *byte = u8::from_str_radix(p, 16).ok()?;
    }
    parts.next().is_none().then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn macs() {
        assert_eq!(
            parse_mac("02:aB:00:10:ff:7e"),
            Some([0x02, 0xab, 0x00, 0x10, 0xff, 0x7e])
        );
        assert_eq!(parse_mac("02:ab:00:10:ff"), None);
        assert_eq!(parse_mac("02:ab:00:10:ff:7e:01"), None);
        assert_eq!(parse_mac("02:ab:00:10:ff:7"), None);
        assert_eq!(parse_mac("02:ab:00:10:ff:zz"), None);
    }
}
