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
//! Until the agent exists, [`start_bump`] joins `h0` and `s0` with a kernel bridge, a
//! transparent placeholder: the host is then a plain CSMA/CD station. [`start_bump`] is the one
//! place where the agent is to be started instead.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::LabError;
use crate::cmd;
use crate::state::BumpState;
use crate::topology::Topology;

/// The bump's interface towards its host (the veth peer of the host's `eth0`).
pub(crate) const BUMP_HOST_IFNAME: &str = "h0";
/// The bump's interface towards the segment (the veth peer of the segment's port).
pub(crate) const BUMP_SEGMENT_IFNAME: &str = "s0";
/// The placeholder bridge joining the two while no agent runs.
const BUMP_BRIDGE: &str = "br0";
/// How long the placeholder bridge may take to come up.
const BRIDGE_UP_TIMEOUT: Duration = Duration::from_secs(5);

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

/// Every host attached to a segment, in link order.
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

/// Joins bump `bump`'s two interfaces in its namespace `netns`, once the segment runs.
///
/// **THE RETHER AGENT IS TO BE STARTED HERE** (docs/rether.md §7): write its configuration to
/// [`agent_config_path`] (`<state>/<host>.rether.toml`: ports `h0` towards the host and `s0`
/// towards the segment, the segment's rate), launch `rtlan rether --config <that file>` in
/// `netns` with [`crate::daemon::start`] as the switches are (log `<state>/<host>.rether.log`,
/// socket `<state>/<host>.rether.sock`), record it in [`BumpState::agent`], and drop the
/// bridge below. Until then a kernel bridge (STP off, forward delay 0) passes every frame
/// both ways unchanged: the host is a plain CSMA/CD station.
pub(super) fn start_bump(bump: &Bump, netns: &str, dir: &Path) -> Result<BumpState, LabError> {
    cmd::ip(&[
        "-n",
        netns,
        "link",
        "add",
        BUMP_BRIDGE,
        "type",
        "bridge",
        "stp_state",
        "0",
        "forward_delay",
        "0",
    ])?;
    for ifname in [BUMP_HOST_IFNAME, BUMP_SEGMENT_IFNAME] {
        cmd::ip(&["-n", netns, "link", "set", ifname, "master", BUMP_BRIDGE])?;
    }
    cmd::ip(&["-n", netns, "link", "set", BUMP_BRIDGE, "up"])?;
    super::up::wait_oper_up(
        netns,
        &[BUMP_BRIDGE.to_string()],
        Instant::now() + BRIDGE_UP_TIMEOUT,
    )?;
    Ok(BumpState {
        netns: netns.to_string(),
        segment: bump.segment.clone(),
        segment_port: bump.port.clone(),
        agent_config: agent_config_path(dir, &bump.host),
        agent: None,
        bridge: Some(BUMP_BRIDGE.to_string()),
    })
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
}
