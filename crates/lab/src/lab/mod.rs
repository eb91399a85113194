//! A running lab (DESIGN.md §5): built by [`Lab::up`], found again by [`Lab::open`], entered with
//! [`Lab::exec`], removed by [`Lab::down`] — or on drop, unless [`Lab::keep`] was called.

pub(crate) mod bump;
mod up;

use std::ffi::OsStr;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::cmd::CmdError;
use crate::daemon::DaemonError;
use crate::down::{DownError, DownReport};
use crate::state::{self, LabState, NodeState};
use crate::topology::Topology;

/// Something went wrong building, opening or using a lab.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// The lab name is not `[a-z0-9]{1,10}`.
    #[error("bad lab name `{0}`: lab names are 1 to 10 lowercase letters or digits")]
    InvalidName(String),
    /// A lab of that name (state directory or namespaces) exists.
    #[error("lab `{0}` already exists; run `rtlan lab down --name {0}`")]
    AlreadyExists(String),
    /// No lab of that name is running (no `state.json`).
    #[error("lab `{name}` is not running (no {})", path.display())]
    NotFound {
        /// The lab.
        name: String,
        /// The state file looked for.
        path: PathBuf,
    },
    /// `state.json` could not be parsed.
    #[error("{}: {source}", path.display())]
    BadState {
        /// The state file.
        path: PathBuf,
        /// The parse error.
        source: serde_json::Error,
    },
    /// A file or directory operation failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The operating-system error.
        source: std::io::Error,
    },
    /// A setup command failed.
    #[error(transparent)]
    Command(#[from] CmdError),
    /// The topology has rtlan switches but the rtlan executable is missing.
    #[error("rtlan executable {} not found (needed to run the topology's rtlan switches)", .0.display())]
    RtlanExe(PathBuf),
    /// An rtlan switch did not come up.
    #[error("switch `{switch}`: {source}")]
    Switch {
        /// The switch.
        switch: String,
        /// Why.
        source: DaemonError,
    },
    /// A shared segment (`rtlan segment`) did not come up.
    #[error("segment `{segment}`: {source}")]
    Segment {
        /// The segment.
        segment: String,
        /// Why.
        source: DaemonError,
    },
    /// A RETHER bridge (`rtlan rether-bridge`) did not come up.
    #[error("rether-bridge `{bridge}`: {source}")]
    RetherBridge {
        /// The bridge.
        bridge: String,
        /// Why.
        source: DaemonError,
    },
    /// A host's RETHER agent (`rtlan rether` in its bump namespace) did not come up.
    #[error("RETHER agent of `{host}`: {source}")]
    Agent {
        /// The host.
        host: String,
        /// Why.
        source: DaemonError,
    },
    /// An rtlan router did not come up.
    #[error("router `{router}`: {source}")]
    Router {
        /// The router.
        router: String,
        /// Why.
        source: DaemonError,
    },
    /// BIRD did not come up in a router's namespace.
    #[error("router `{router}`: BIRD: {source}")]
    Bird {
        /// The router.
        router: String,
        /// Why.
        source: DaemonError,
    },
    /// One of FRR's daemons (zebra, ospfd) did not come up in a router's namespace; the
    /// error names its command line or its log and socket.
    #[error("router `{router}`: FRR: {source}")]
    Frr {
        /// The router.
        router: String,
        /// Why.
        source: DaemonError,
    },
    /// A router's routes did not cover every segment in time.
    #[error("router `{router}` has no route to {missing} after {waited:?}")]
    RoutesMissing {
        /// The router.
        router: String,
        /// The segments still without a route, comma-separated.
        missing: String,
        /// How long we waited.
        waited: Duration,
    },
    /// A router's control socket did not answer a request.
    #[error("router `{router}`: {source}")]
    RouterControl {
        /// The router.
        router: String,
        /// Why.
        source: rtlan_linux::ctl::CtlError,
    },
    /// Interfaces did not become operationally up in time.
    #[error("{netns}: interfaces {interfaces} did not come up within 5 s")]
    NotOperational {
        /// The namespace.
        netns: String,
        /// The interfaces still down.
        interfaces: String,
    },
    /// A termination signal arrived during `up`; what was built has been removed.
    #[error("interrupted by a signal; the partly built lab was removed")]
    Interrupted,
    /// The node is not in this lab.
    #[error("lab `{lab}` has no node `{node}`")]
    UnknownNode {
        /// The lab.
        lab: String,
        /// The node asked for.
        node: String,
    },
    /// The node exists but is not of the kind the call needs.
    #[error("`{node}` is not {expected}")]
    WrongKind {
        /// The node.
        node: String,
        /// What was needed ("a host", "a switch").
        expected: &'static str,
    },
    /// The node has no such interface.
    #[error("`{node}` has no interface `{ifname}`")]
    UnknownInterface {
        /// The node.
        node: String,
        /// The interface asked for.
        ifname: String,
    },
    /// `exec` was given no command.
    #[error("no command given to run in `{0}`")]
    EmptyCommand(String),
    /// Removing the lab failed.
    #[error(transparent)]
    Down(#[from] DownError),
}

/// How to build a lab.
#[derive(Debug, Clone)]
pub struct LabOptions {
    /// The rtlan executable (`std::env::current_exe()` in the binary,
    /// `env!("CARGO_BIN_EXE_rtlan")` in its tests); only used for rtlan switches and routers.
    pub rtlan_exe: PathBuf,
    /// How long a switch, router or BIRD may take until its control socket accepts a
    /// connection.
    pub switch_timeout: Duration,
    /// The sockets of the rtlan switches' and routers' ports (`data_plane` in their
    /// configuration, docs/afxdp.md); AF_PACKET unless a benchmark or test asks otherwise.
    pub data_plane: rtlan_linux::xdp::DataPlane,
    /// On AF_XDP, let the rtlan switches and routers forward best-effort frames in XDP between
    /// ports no reservation crosses (docs/fastpath.md; their default). The other ends of links
    /// to them then receive with GRO, as physical NICs do by default.
    pub fast_path: bool,
    /// The rtlan switches kick each AF_PACKET port's TX ring from a thread of the port's own
    /// (`tx_threads`, docs/threads.md); off by default, as in the switch.
    pub tx_threads: bool,
    /// The rtlan switches and routers receive on each unpaced port in a kernel thread of its own
    /// (`napi_threads`, docs/threads.md "Threaded receive"); off by default, as in them.
    pub napi_threads: bool,
}

impl LabOptions {
    /// Options with the given rtlan executable and a 10 s switch start-up timeout.
    pub fn new(rtlan_exe: impl Into<PathBuf>) -> LabOptions {
        LabOptions {
            rtlan_exe: rtlan_exe.into(),
            switch_timeout: Duration::from_secs(10),
            data_plane: rtlan_linux::xdp::DataPlane::AfPacket,
            fast_path: true,
            tx_threads: false,
            napi_threads: false,
        }
    }
}

/// A running lab. Dropping it tears the lab down (like [`Lab::down`], errors printed to stderr)
/// unless it came from [`Lab::open`] or [`Lab::keep`] was called.
#[derive(Debug)]
pub struct Lab {
    state: LabState,
    armed: bool,
}

impl Lab {
    /// Builds `topology` as lab `name` (see docs/lab.md for every step). Refuses if a lab of that
    /// name exists. On failure everything already created is removed before the error returns.
    pub fn up(topology: &Topology, name: &str, options: &LabOptions) -> Result<Lab, LabError> {
        let state = up::up(topology, name, options)?;
        Ok(Lab { state, armed: true })
    }

    /// Opens the running lab `name` from its `state.json` (for `rtlan lab exec`). The returned
    /// value does not tear the lab down when dropped.
    pub fn open(name: &str) -> Result<Lab, LabError> {
        if !crate::valid_lab_name(name) {
            return Err(LabError::InvalidName(name.to_string()));
        }
        let path = state::state_file(&state::state_dir(name));
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(LabError::NotFound {
                    name: name.to_string(),
                    path,
                })
            }
            Err(source) => {
                return Err(LabError::Io {
                    what: format!("reading {}", path.display()),
                    source,
                })
            }
        };
        let state = serde_json::from_str(&text).map_err(|source| LabError::BadState {
            path: path.clone(),
            source,
        })?;
        Ok(Lab {
            state,
            armed: false,
        })
    }

    /// The lab's name.
    pub fn name(&self) -> &str {
        &self.state.name
    }

    /// The lab's state directory (`/run/rtlan/labs/<name>`).
    pub fn state_dir(&self) -> &Path {
        &self.state.state_dir
    }

    /// The topology the lab was built from.
    pub fn topology(&self) -> &Topology {
        &self.state.topology
    }

    /// The host daemon's configuration lines that come from the topology for `host` (its
    /// `host_delay`, and its link's `keys` when the switch it is linked to has `auth = true`),
    /// to put into an `rtlan rtcd --config` file beside the caller's own; empty when the
    /// topology declares nothing for it.
    pub fn rtcd_config_lines(&self, host: &str) -> String {
        let topology = self.topology();
        let declared = topology.hosts.iter().find(|h| h.name == host);
        let mut lines = match declared.and_then(|h| h.host_delay) {
            Some(delay) => format!("host_delay = \"{}ns\"\n", delay.as_nanos()),
            None => String::new(),
        };
        // The host's one link: its emulated rate (veth reports 10 Gbit/s, which the daemon would
        // otherwise book and shape), and its key when the switch at the other end authenticates.
        if let Some((_, peer, rate)) = topology.interfaces(host).first() {
            if let Some(rate) = rate {
                lines.push_str(&format!("link_rate = \"{rate}bit\"\n"));
            }
            if topology.link_authenticated(host, &peer.node) {
                let keys = crate::keys::keys_value(&self.state.state_dir, host, &peer.node);
                lines.push_str(&format!("keys = {keys}\n"));
            }
        }
        lines
    }

    fn node(&self, node: &str) -> Result<&NodeState, LabError> {
        self.state
            .nodes
            .iter()
            .find(|n| n.name == node)
            .ok_or_else(|| LabError::UnknownNode {
                lab: self.state.name.clone(),
                node: node.to_string(),
            })
    }

    /// The namespace of `node` (`rtl-<lab>-<node>`).
    pub fn netns(&self, node: &str) -> Result<&str, LabError> {
        Ok(&self.node(node)?.netns)
    }

    /// A command running `args` inside `node`'s namespace: `ip netns exec NS args…`.
    pub fn exec<S: AsRef<OsStr>>(&self, node: &str, args: &[S]) -> Result<Command, LabError> {
        let netns = self.netns(node)?;
        if args.is_empty() {
            return Err(LabError::EmptyCommand(node.to_string()));
        }
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", netns]).args(args);
        Ok(cmd)
    }

    /// A host's IPv4 address.
    pub fn host_ip(&self, node: &str) -> Result<Ipv4Addr, LabError> {
        self.host_cidr(node).map(|(ip, _)| ip)
    }

    /// A host's IPv4 address and prefix length.
    pub fn host_cidr(&self, node: &str) -> Result<(Ipv4Addr, u8), LabError> {
        self.node(node)?.ip.ok_or_else(|| LabError::WrongKind {
            node: node.to_string(),
            expected: "a host",
        })
    }

    /// The MAC address of interface `ifname` (`eth0`, `p0`, …) of `node`.
    pub fn mac(&self, node: &str, ifname: &str) -> Result<[u8; 6], LabError> {
        let n = self.node(node)?;
        let unknown = || LabError::UnknownInterface {
            node: node.to_string(),
            ifname: ifname.to_string(),
        };
        let iface = n
            .interfaces
            .iter()
            .find(|i| i.ifname == ifname)
            .ok_or_else(unknown)?;
        // `up` read these from `ip -j link`; a hand-edited state.json may not parse.
        state::parse_mac(&iface.mac).ok_or_else(unknown)
    }

    /// The names of the hosts, in file order.
    pub fn hosts(&self) -> Vec<&str> {
        self.state
            .topology
            .hosts
            .iter()
            .map(|h| h.name.as_str())
            .collect()
    }

    /// The names of the switches, in file order.
    pub fn switches(&self) -> Vec<&str> {
        let t = &self.state.topology;
        t.switches.iter().map(|s| s.name.as_str()).collect()
    }

    /// The names of the routers, in file order.
    pub fn routers(&self) -> Vec<&str> {
        let t = &self.state.topology;
        t.routers.iter().map(|r| r.name.as_str()).collect()
    }

    /// The node `name` if its role is `role`.
    fn node_of_role(&self, name: &str, role: &str) -> Option<&NodeState> {
        self.node(name).ok().filter(|n| n.role == role)
    }

    /// The control socket of an rtlan switch; `None` for hosts, bridges, routers and unknown
    /// names.
    pub fn switch_socket(&self, switch: &str) -> Option<PathBuf> {
        self.node_of_role(switch, state::ROLE_RTLAN_SWITCH)?
            .socket
            .clone()
    }

    /// The PID of an rtlan switch process; `None` for hosts, bridges, routers and unknown names.
    pub fn switch_pid(&self, switch: &str) -> Option<u32> {
        self.node_of_role(switch, state::ROLE_RTLAN_SWITCH)?.pid
    }

    /// The log file (stdout and stderr) of an rtlan switch.
    pub fn switch_log(&self, switch: &str) -> Option<PathBuf> {
        self.node_of_role(switch, state::ROLE_RTLAN_SWITCH)?
            .log
            .clone()
    }

    /// The names of the shared segments (`kind = "segment"`), in file order.
    pub fn segments(&self) -> Vec<&str> {
        let t = &self.state.topology;
        t.switches
            .iter()
            .filter(|s| matches!(s.kind, crate::SwitchKind::Segment(_)))
            .map(|s| s.name.as_str())
            .collect()
    }

    /// The control socket of a shared segment (docs/segment.md); `None` for other nodes.
    pub fn segment_socket(&self, segment: &str) -> Option<PathBuf> {
        self.node_of_role(segment, state::ROLE_SEGMENT)?
            .socket
            .clone()
    }

    /// The PID of a shared segment's `rtlan segment` process.
    pub fn segment_pid(&self, segment: &str) -> Option<u32> {
        self.node_of_role(segment, state::ROLE_SEGMENT)?.pid
    }

    /// The log file (stdout and stderr) of a shared segment's process.
    pub fn segment_log(&self, segment: &str) -> Option<PathBuf> {
        self.node_of_role(segment, state::ROLE_SEGMENT)?.log.clone()
    }

    /// The names of the RETHER bridges (`kind = "rether-bridge"`), in file order.
    pub fn rether_bridges(&self) -> Vec<&str> {
        let t = &self.state.topology;
        t.switches
            .iter()
            .filter(|s| s.kind == crate::SwitchKind::RetherBridge)
            .map(|s| s.name.as_str())
            .collect()
    }

    /// The control socket of a RETHER bridge (docs/rether-bridge.md); `None` for other nodes.
    pub fn rether_bridge_socket(&self, bridge: &str) -> Option<PathBuf> {
        self.node_of_role(bridge, state::ROLE_RETHER_BRIDGE)?
            .socket
            .clone()
    }

    /// The PID of a RETHER bridge's `rtlan rether-bridge` process.
    pub fn rether_bridge_pid(&self, bridge: &str) -> Option<u32> {
        self.node_of_role(bridge, state::ROLE_RETHER_BRIDGE)?.pid
    }

    /// The log file (stdout and stderr) of a RETHER bridge's process.
    pub fn rether_bridge_log(&self, bridge: &str) -> Option<PathBuf> {
        self.node_of_role(bridge, state::ROLE_RETHER_BRIDGE)?
            .log
            .clone()
    }

    /// The config file of a RETHER bridge (`<state>/<bridge>.toml`).
    pub fn rether_bridge_config(&self, bridge: &str) -> Option<PathBuf> {
        self.node_of_role(bridge, state::ROLE_RETHER_BRIDGE)?
            .config
            .clone()
    }

    /// The namespace of the bump between host `host` and its shared segment
    /// (`rtl-<lab>-<host>-bump`, docs/segment.md); `None` for a host on no segment.
    pub fn bump_netns(&self, host: &str) -> Option<&str> {
        Some(self.node(host).ok()?.bump.as_ref()?.netns.as_str())
    }

    /// The control socket of host `host`'s RETHER agent (docs/rether-agent.md); `None` for a
    /// host on no segment.
    pub fn bump_agent_socket(&self, host: &str) -> Option<&Path> {
        let bump = self.node(host).ok()?.bump.as_ref()?;
        Some(bump.agent.as_ref()?.socket.as_path())
    }

    /// The PID of host `host`'s RETHER agent.
    pub fn bump_agent_pid(&self, host: &str) -> Option<u32> {
        Some(self.node(host).ok()?.bump.as_ref()?.agent.as_ref()?.pid)
    }

    /// Where host `host`'s RETHER agent reads its configuration
    /// (`<state>/<host>.rether.toml`); `None` for a host on no segment.
    pub fn bump_agent_config(&self, host: &str) -> Option<&Path> {
        Some(self.node(host).ok()?.bump.as_ref()?.agent_config.as_path())
    }

    /// The control socket of an rtlan router (docs/router.md); `None` for a `linux-router`,
    /// other nodes and unknown names.
    pub fn router_socket(&self, router: &str) -> Option<PathBuf> {
        self.node_of_role(router, state::ROLE_RTLAN_ROUTER)?
            .socket
            .clone()
    }

    /// The PID of an rtlan router process.
    pub fn router_pid(&self, router: &str) -> Option<u32> {
        self.node_of_role(router, state::ROLE_RTLAN_ROUTER)?.pid
    }

    /// The log file (stdout and stderr) of an rtlan router.
    pub fn router_log(&self, router: &str) -> Option<PathBuf> {
        self.node_of_role(router, state::ROLE_RTLAN_ROUTER)?
            .log
            .clone()
    }

    /// The PID of the BIRD daemon of a router with `ospf = "bird"`.
    pub fn bird_pid(&self, router: &str) -> Option<u32> {
        Some(self.node(router).ok()?.bird.as_ref()?.pid)
    }

    /// The control socket of a router's BIRD (for `birdc -s SOCKET`).
    pub fn bird_socket(&self, router: &str) -> Option<PathBuf> {
        Some(self.node(router).ok()?.bird.as_ref()?.socket.clone())
    }

    /// The log file of a router's BIRD.
    pub fn bird_log(&self, router: &str) -> Option<PathBuf> {
        Some(self.node(router).ok()?.bird.as_ref()?.log.clone())
    }

    /// The PIDs of FRR's zebra and ospfd of a router with `ospf = "frr"`.
    pub fn frr_pids(&self, router: &str) -> Option<(u32, u32)> {
        let node = self.node(router).ok()?;
        Some((node.zebra.as_ref()?.pid, node.ospfd.as_ref()?.pid))
    }

    /// The directory of a router's FRR vty sockets (for `vtysh --vty_socket DIR`).
    pub fn frr_vty_dir(&self, router: &str) -> Option<PathBuf> {
        let node = self.node(router).ok()?;
        Some(node.ospfd.as_ref()?.socket.parent()?.to_path_buf())
    }

    /// The log files of a router's FRR zebra and ospfd.
    pub fn frr_logs(&self, router: &str) -> Option<(PathBuf, PathBuf)> {
        let node = self.node(router).ok()?;
        Some((
            node.zebra.as_ref()?.log.clone(),
            node.ospfd.as_ref()?.log.clone(),
        ))
    }

    /// A router's ports as `(ifname, peer node)` in port order.
    pub fn router_ports(&self, router: &str) -> Result<Vec<(String, String)>, LabError> {
        if self.state.topology.router(router).is_none() {
            self.node(router)?;
            return Err(LabError::WrongKind {
                node: router.to_string(),
                expected: "a router",
            });
        }
        Ok(self.state.topology.switch_ports(router))
    }

    /// The segments (`prefix/len`) `router` has no route to yet: for an rtlan router, the routes
    /// its control socket lists (its connected, static and mirrored kernel routes); for a
    /// `linux-router`, its namespace's main kernel table.
    pub fn router_missing_routes(&self, router: &str) -> Result<Vec<String>, LabError> {
        let Some(r) = self.state.topology.router(router) else {
            self.node(router)?;
            return Err(LabError::WrongKind {
                node: router.to_string(),
                expected: "a router",
            });
        };
        let have: Vec<String> = match self.router_socket(router) {
            Some(socket) => {
                let routes = rtlan_linux::ctl::request(&socket, "routes").map_err(|source| {
                    LabError::RouterControl {
                        router: router.to_string(),
                        source,
                    }
                })?;
                routes
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|r| r["prefix"].as_str().map(str::to_string))
                    .collect()
            }
            None => {
                let text = crate::cmd::ip(&["-j", "-4", "-n", self.netns(router)?, "route"])?;
                let routes: Vec<serde_json::Value> =
                    serde_json::from_str(&text).map_err(|source| LabError::BadState {
                        path: format!("<output of ip -j -4 -n {} route>", r.name).into(),
                        source,
                    })?;
                routes
                    .iter()
                    .filter_map(|r| r["dst"].as_str().map(str::to_string))
                    .collect()
            }
        };
        Ok(self
            .state
            .topology
            .segments
            .iter()
            .map(|s| s.to_string())
            .filter(|s| !have.contains(s))
            .collect())
    }

    /// Waits until `router` has a route to every segment of the topology (see
    /// [`Lab::router_missing_routes`]), polling every 50 ms for at most `timeout`; returns how
    /// long it took. With OSPF, this is the wait for convergence.
    pub fn router_wait_routes(
        &self,
        router: &str,
        timeout: Duration,
    ) -> Result<Duration, LabError> {
        let start = std::time::Instant::now();
        loop {
            let missing = self.router_missing_routes(router)?;
            if missing.is_empty() {
                return Ok(start.elapsed());
            }
            if start.elapsed() >= timeout {
                return Err(LabError::RoutesMissing {
                    router: router.to_string(),
                    missing: missing.join(", "),
                    waited: start.elapsed(),
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// A switch's ports as `(ifname, peer node)` in port order, so that port index `i` of the
    /// switch's forwarding table is the `i`-th entry.
    pub fn switch_ports(&self, switch: &str) -> Result<Vec<(String, String)>, LabError> {
        if self.state.topology.switch(switch).is_none() {
            self.node(switch)?;
            return Err(LabError::WrongKind {
                node: switch.to_string(),
                expected: "a switch",
            });
        }
        Ok(self.state.topology.switch_ports(switch))
    }

    /// Removes the lab (see [`crate::down`]) and reports what was removed.
    pub fn down(mut self) -> Result<DownReport, LabError> {
        self.armed = false;
        Ok(crate::down::down(&self.state.name)?)
    }

    /// Leaves the lab running when this value is dropped (`rtlan lab up`), and stops signal
    /// clean-up from removing it. Also the way tests simulate a crash.
    pub fn keep(mut self) {
        self.armed = false;
        crate::registry::unregister(&self.state.name);
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        if self.armed {
            if let Err(e) = crate::down::down(&self.state.name) {
                eprintln!("rtlan: tearing down lab `{}`: {e}", self.state.name);
            }
        }
    }
}
