//! Bump namespaces: every host attached to a shared segment (`kind = "segment"`) reaches it
//! through a namespace of its own between the two, where the host's RETHER agent runs
//! (`rtlan rether`, docs/rether.md §7, docs/segment.md). Venkatramani and Chiueh put RETHER
//! directly above the host's network interface, transparent to TCP/IP (RETHER §3); rtlan
//! leaves hosts unmodified, so that layer becomes a bump in the wire beside the host:
//!
//! ```text
//! host ns            bump ns rtl-<lab>-<host>-bump          segment ns
//!  eth0 ──veth── h0 ═[agent; today a kernel bridge]═ s0 ──veth── pN (rtlan segment)
//! ```
//!
//! [`render_agent_config`] writes the agent's configuration (`<state>/<host>.rether.toml`): ports
//! `h0` towards the host and `s0` towards the segment, the segment's rate and TRT, the station
//! id ([`station_id`]: the host's link's place among the segment's links, from 1) and the lab's
//! acknowledgement slack;
//! `lab::up` starts `rtlan rether` with it in the bump namespace once the segment runs.

use std::path::{Path, PathBuf};

use rtlan_core::units::{format_duration, format_rate};
use rtlan_linux::xdp::DataPlane;
use serde::Serialize;

use crate::daemon::DaemonError;
use crate::state::{BumpState, DaemonState};
use crate::topology::{SharedSegment, Topology};

/// The bump's interface towards its host (the veth peer of the host's `eth0`).
pub(crate) const BUMP_HOST_IFNAME: &str = "h0";
/// The bump's interface towards the segment (the veth peer of the segment's port).
pub(crate) const BUMP_SEGMENT_IFNAME: &str = "s0";
/// What the lab adds to every acknowledgement timer of its agents (the agent's `ack_slack`):
/// on the 2-core machine a lab shares with its hosts and tools, a daemon's wake-up is late by
/// milliseconds under floods (3.2 ms measured with three switches), and a pass crosses two of
/// them (the agent and the segment); 2 ms, the agent's default for real hosts, would declare
/// live stations dead.
pub(crate) const LAB_ACK_SLACK: &str = "8ms";

/// What one token pass costs in the lab (the agent's `token_cost`, eq. 1's share of each visit):
/// the sender's agent, the wire (a 72-byte token: 76 µs at 10 Mbit/s with preamble and gap), the
/// segment daemon and the receiver's agent. `rtlan experiment rether-fig7` calibrated the
/// simulator on this machine's lab at 54 µs per frame sent and per frame received, about 185 µs
/// a pass; 200 µs keeps the soft clock from running slow, so that cycles stay one TRT long
/// (the multi-segment bound of docs/rether.md §9 assumes it).
pub(crate) const LAB_TOKEN_COST: &str = "200us";

/// A host attached to a segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Bump {
    /// The host.
    pub(super) host: String,
    /// The segment.
    pub(super) segment: String,
    /// The segment's port the bump is linked to (`pN`).
    pub(super) port: String,
}

/// Every host attached to a segment, in link order (a RETHER bridge on a segment is a station
/// too, but of its own: no bump).
pub(super) fn bumps(topology: &Topology) -> Vec<Bump> {
    topology
        .links
        .iter()
        .filter_map(|l| {
            let [a, b] = &l.ends;
            let (host, seg) = if topology.segment(&b.node).is_some() {
                (a, b)
            } else if topology.segment(&a.node).is_some() {
                (b, a)
            } else {
                return None;
            };
            topology.host(&host.node)?;
            Some(Bump {
                host: host.node.clone(),
                segment: seg.node.clone(),
                port: seg.ifname.clone(),
            })
        })
        .collect()
}

/// Where host `host`'s RETHER agent reads its configuration: `<state>/<host>.rether.toml`.
pub(crate) fn agent_config_path(dir: &Path, host: &str) -> PathBuf {
    dir.join(format!("{host}.rether.toml"))
}

/// The RETHER station id of `station` (a host's agent or a RETHER bridge's port) on `segment`:
/// its link's place among the segment's links, from 1 — the segment's port `pN` is station
/// `N + 1`. Hosts and bridges are numbered alike, so ids are unique on a segment and stable
/// when a station of another kind is added after them. `None` if they are not linked.
pub(crate) fn station_id(topology: &Topology, segment: &str, station: &str) -> Option<u16> {
    let place = topology
        .switch_ports(segment)
        .iter()
        .position(|(_, peer)| peer == station)?;
    Some(u16::try_from(place + 1).unwrap_or(u16::MAX))
}

/// The station id of every bump's agent ([`station_id`]).
pub(super) fn station_ids(topology: &Topology, bumps: &[Bump]) -> Vec<u16> {
    bumps
        .iter()
        .map(|b| station_id(topology, &b.segment, &b.host).unwrap_or(u16::MAX))
        .collect()
}

/// The agent's config file as `rtlan rether --config` reads it (docs/rether-agent.md).
#[derive(Debug, Serialize)]
struct AgentFile {
    name: String,
    id: u16,
    host_port: &'static str,
    segment_port: &'static str,
    rate: String,
    control_socket: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    trt: Option<String>,
    ack_slack: &'static str,
    token_cost: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    data_plane: Option<DataPlane>,
}

/// The configuration of host `bump.host`'s agent, station `id` on a segment `segment`.
pub(super) fn render_agent_config(
    bump: &Bump,
    id: u16,
    segment: &SharedSegment,
    data_plane: DataPlane,
    socket: &Path,
) -> Result<String, DaemonError> {
    let file = AgentFile {
        name: bump.host.clone(),
        id,
        host_port: BUMP_HOST_IFNAME,
        segment_port: BUMP_SEGMENT_IFNAME,
        rate: format_rate(segment.rate_bps),
        control_socket: socket.display().to_string(),
        trt: segment.trt.map(format_duration),
        ack_slack: LAB_ACK_SLACK,
        token_cost: LAB_TOKEN_COST,
        data_plane: (data_plane != DataPlane::AfPacket).then_some(data_plane),
    };
    Ok(toml::to_string(&file)?)
}

/// The bump's record once its agent runs.
pub(super) fn record(bump: &Bump, netns: &str, agent: DaemonState) -> BumpState {
    BumpState {
        netns: netns.to_string(),
        segment: bump.segment.clone(),
        segment_port: bump.port.clone(),
        agent_config: agent.config.clone(),
        agent: Some(agent),
        bridge: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_host_on_a_segment_gets_a_bump_and_no_other_host_does() {
        let topo = Topology::from_str(
            "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[host]]\nname = \"c\"\n\
             [[switch]]\nname = \"g\"\nkind = \"segment\"\n[[switch]]\nname = \"s\"\n\
             [[link]]\nends = [\"g\", \"a\"]\n[[link]]\nends = [\"c\", \"s\"]\n\
             [[link]]\nends = [\"b\", \"g\"]\n",
            "t.toml",
        )
        .expect("valid");
        let found = bumps(&topo);
        assert_eq!(
            found,
            vec![
                Bump {
                    host: "a".into(),
                    segment: "g".into(),
                    port: "p0".into()
                },
                Bump {
                    host: "b".into(),
                    segment: "g".into(),
                    port: "p1".into()
                },
            ]
        );
        assert_eq!(
            agent_config_path(Path::new("/run/rtlan/labs/x"), "a"),
            Path::new("/run/rtlan/labs/x/a.rether.toml")
        );
        assert_eq!(crate::bump_netns_name("x", "a"), "rtl-x-a-bump");
    }

    #[test]
    fn hosts_and_bridges_are_numbered_by_their_link_on_the_segment() {
        // On g: a (link 1), the bridge (2), b (3); on h: c (1), the bridge (2).
        let topo = Topology::from_str(
            "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[host]]\nname = \"c\"\n\
             [[switch]]\nname = \"g\"\nkind = \"segment\"\n\
             [[switch]]\nname = \"h\"\nkind = \"segment\"\n\
             [[switch]]\nname = \"br\"\nkind = \"rether-bridge\"\n\
             [[link]]\nends = [\"a\", \"g\"]\n[[link]]\nends = [\"c\", \"h\"]\n\
             [[link]]\nends = [\"g\", \"br\"]\n[[link]]\nends = [\"br\", \"h\"]\n\
             [[link]]\nends = [\"b\", \"g\"]\n",
            "t.toml",
        )
        .expect("valid");
        let found = bumps(&topo);
        let hosts: Vec<&str> = found.iter().map(|b| b.host.as_str()).collect();
        assert_eq!(hosts, ["a", "c", "b"], "no bump for the bridge");
        assert_eq!(station_ids(&topo, &found), vec![1, 1, 3]);
        assert_eq!(station_id(&topo, "g", "br"), Some(2));
        assert_eq!(station_id(&topo, "h", "br"), Some(2));
        assert_eq!(station_id(&topo, "h", "a"), None);
    }

    #[test]
    fn each_agent_gets_its_place_on_its_segment_and_a_config_it_reads_back() {
        let topo = Topology::from_str(
            "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[host]]\nname = \"c\"\n\
             [[switch]]\nname = \"g\"\nkind = \"segment\"\nrate = \"10mbit\"\ntrt = \"20ms\"\n\
             [[switch]]\nname = \"h\"\nkind = \"segment\"\n\
             [[link]]\nends = [\"g\", \"a\"]\n[[link]]\nends = [\"c\", \"h\"]\n\
             [[link]]\nends = [\"b\", \"g\"]\n",
            "t.toml",
        )
        .expect("valid");
        let found = bumps(&topo);
        assert_eq!(
            station_ids(&topo, &found),
            vec![1, 1, 2],
            "a and b on g, c alone on h"
        );
        let seg = topo.segment("g").expect("segment");
        let text = render_agent_config(
            &found[2],
            2,
            seg,
            DataPlane::AfPacket,
            Path::new("/run/x/b.rether.sock"),
        )
        .expect("renders");
        let c = rtlan_linux::retherd::RetherDaemonConfig::from_toml_str(&text).expect("reads back");
        assert_eq!(c.name, "b");
        assert_eq!(c.station.id.get(), 2);
        assert_eq!(
            (c.host_port.as_str(), c.segment_port.as_str()),
            ("h0", "s0")
        );
        assert_eq!(c.station.rate_bps, 10_000_000);
        assert_eq!(c.station.trt, std::time::Duration::from_millis(20));
        assert_eq!(c.station.ack_slack, std::time::Duration::from_millis(8));
        assert_eq!(c.station.token_cost, std::time::Duration::from_micros(200));
        assert_eq!(
            c.control_socket.as_deref(),
            Some(Path::new("/run/x/b.rether.sock"))
        );
    }
}
