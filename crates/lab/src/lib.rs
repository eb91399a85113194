//! The lab testbed (DESIGN.md §5): topology files become network namespaces, veth links and
//! emulated link rates; switches and routers run inside; everything is removed afterwards.
//!
//! The flow is: [`Topology::from_file`] reads and validates a topology file (every error names its
//! line and column), [`Lab::up`] builds it (one namespace `rtl-<lab>-<node>` per node, veth pairs
//! created directly inside the namespaces, `tbf` qdiscs for link rates, switches, routers and
//! their BIRD started), and [`Lab::down`] or [`down`] removes it again — also after a crash, from
//! the namespace names alone.
//! A [`Lab`] tears itself down when dropped unless [`Lab::keep`] was called, and
//! [`install_signal_cleanup`] extends that to SIGINT/SIGTERM/SIGHUP.
//!
//! Everything is done with the iproute2/ethtool command-line tools rather than netlink from Rust:
//! they are the documented interface for `tc` size tables and `ethtool -K`, their error messages
//! are what users search for, and every step can be replayed by hand from the debug log.

mod cmd;
mod daemon;
mod down;
mod keys;
mod lab;
mod lock;
mod registry;
mod rether_bridges;
mod routers;
pub use routers::PSIP_HTTP_PORT;
mod segments;
mod shaping;
mod state;
mod switches;
pub mod tools;
pub use rtlan_topology as topology;

pub use cmd::CmdError;
pub use daemon::DaemonError;
pub use down::{down, DownError, DownReport};
pub use lab::{Lab, LabError, LabOptions};
pub use lock::{serial_lock, LabLock, LockError, LOCK_PATH};
pub use registry::{install_signal_cleanup, SignalError};
pub use shaping::{TbfParams, FRAME_OVERHEAD, MAX_WIRE_FRAME, MIN_WIRE_FRAME};
pub use topology::{
    Host, Link, LinkEnd, Ospf, Router, RouterKind, RtlanSwitch, Switch, SwitchKind, Topology,
    TopologyError,
};

/// Directory holding one state directory per lab (`/run/rtlan/labs/<lab>/`).
pub const LABS_DIR: &str = "/run/rtlan/labs";

/// Prefix of every namespace the lab creates: `rtl-<lab>-<node>`.
pub const NETNS_PREFIX: &str = "rtl-";

/// The namespace name of `node` in lab `lab`: `rtl-<lab>-<node>`.
pub fn netns_name(lab: &str, node: &str) -> String {
    format!("{NETNS_PREFIX}{lab}-{node}")
}

/// The namespace of the bump between host `host` and its shared segment in lab `lab`:
/// `rtl-<lab>-<host>-bump` (a `-` never appears in node or lab names, so it names no node).
pub fn bump_netns_name(lab: &str, host: &str) -> String {
    format!("{}-bump", netns_name(lab, host))
}

/// The namespaces that exist now for lab `name` (`rtl-<name>-*`), whoever made them.
pub fn lab_namespaces(name: &str) -> Result<Vec<String>, CmdError> {
    let prefix = netns_name(name, "");
    Ok(cmd::list_netns()?
        .into_iter()
        .filter(|n| n.starts_with(&prefix))
        .collect())
}

/// Whether `name` is a valid lab name: `[a-z0-9]{1,10}`.
pub fn valid_lab_name(name: &str) -> bool {
    (1..=10).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}
