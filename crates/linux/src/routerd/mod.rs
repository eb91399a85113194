//! The router daemon (`rtlan router --config FILE`): the QSR router core
//! ([`rtlan_core::router::Router`], default IP forwarding, QSR paper §4.1; `docs/qsr.md` §2.2)
//! run by the one data-plane [`driver`](crate::driver) on AF_XDP or AF_PACKET ports.
//!
//! The router's namespace keeps its interface addresses in the kernel, with forwarding off:
//! the kernel answers ARP and pings for them and runs the routing daemons (BIRD, FRR) while this
//! daemon forwards. [`run`] therefore
//!
//! - refuses to start while `net.ipv4.ip_forward` is 1 in the namespace (both would forward
//!   every packet);
//! - reads each port's IPv4 address and prefix from its interface (rtnetlink);
//! - mirrors the kernel's main routing table into the core ([`RouteSource::Kernel`] routes):
//!   dumped at start and again whenever a route or address notification arrives
//!   (`RTMGRP_IPV4_ROUTE`, `RTMGRP_IPV4_IFADDR`) — netlink says when, the dump says what, as
//!   for carrier changes ([`crate::linkwatch`]);
//! - serves a control socket (`ping`, `stats`, `routes`, `neighbours`, `config`, `pipes`,
//!   `pipe_create`, `pipe_delete`) from the same loop;
//! - with `[psip] http`, serves the provisioned pipes' web page and JSON API (QSR §5,
//!   [`pipes`]) through the same loop;
//! - with AF_XDP ports, mirrors the core's resolved forwarding table and its ports' openness
//!   into the ports' XDP fast path (`fastpath`, docs/fastpath.md "The router").
//!
//! [`RouteSource::Kernel`]: rtlan_core::router::RouteSource::Kernel

mod config;
mod daemon;
mod fastpath;
mod pipes;

use std::io;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

pub use config::{RouteSpec, RouterDaemonConfig, RouterPortSpec};
pub use pipes::{http_answer, PipeRequest};

use crate::netlink::NetlinkError;
use crate::packet::PacketError;
use crate::switchd::ConfigError;

/// The router daemon could not start or its loop failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The configuration file is unusable.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The kernel forwards too.
    #[error("the kernel of this namespace forwards IPv4 (net.ipv4.ip_forward = 1); set it to 0 — rtlan router forwards instead, and both would send every packet")]
    KernelForwards,
    /// A port could not be opened.
    #[error("port `{ifname}`: {source}")]
    Port {
        /// The interface.
        ifname: String,
        /// Why.
        #[source]
        source: PacketError,
    },
    /// An AF_XDP port could not be opened (`data_plane = "af_xdp"`).
    #[error(transparent)]
    Xdp(#[from] crate::xdp::XdpError),
    /// Threaded receive (`napi_threads`) could not be turned on for a port.
    #[error("port `{ifname}`: threaded receive (napi_threads): {source}")]
    ThreadedReceive {
        /// The interface.
        ifname: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A port has no IPv4 address.
    #[error("port `{0}` has no IPv4 address: give the interface one (`ip address add … dev {0}`)")]
    NoAddress(String),
    /// Netlink failed.
    #[error("netlink: {0}")]
    Netlink(#[from] NetlinkError),
    /// The core refused the configuration.
    #[error("router core: {0}")]
    Core(#[from] rtlan_core::router::RouterConfigError),
    /// The control socket could not be set up.
    #[error(transparent)]
    Control(#[from] crate::switchd::ControlError),
    /// The data-plane driver failed.
    #[error("data-plane driver: {0}")]
    Driver(#[from] crate::driver::DriverError),
    /// The file of pipes kept across restarts (`[psip] state`) is unreadable.
    #[error("pipe state: {0}")]
    PipeState(String),
    /// Another system call failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The system error.
        #[source]
        source: io::Error,
    },
}

/// What a run did, returned when it stops.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RunReport {
    /// The configured name.
    pub name: String,
    /// How long the loop ran, ns.
    pub uptime_ns: u64,
    /// The core's counters.
    pub router: rtlan_core::router::RouterStats,
    /// The shell's per-port counters.
    pub ports: Vec<crate::driver::PortStats>,
    /// Times the kernel's routing table was read again after a notification.
    pub route_syncs: u64,
}

/// Whether the kernel of the current namespace forwards IPv4.
fn kernel_forwards() -> Result<bool, Error> {
    let text =
        std::fs::read_to_string("/proc/sys/net/ipv4/ip_forward").map_err(|source| Error::Io {
            what: "reading /proc/sys/net/ipv4/ip_forward",
            source,
        })?;
    Ok(text.trim() != "0")
}

/// Runs the router on the calling thread until `shutdown` becomes true (checked at least every
/// 100 ms), then reports.
pub fn run(config: RouterDaemonConfig, shutdown: &AtomicBool) -> Result<RunReport, Error> {
    if kernel_forwards()? {
        return Err(Error::KernelForwards);
    }
    crate::driver::thread::prepare_unpinned(config.realtime_priority);
    // As the switch does (crate::napi): settings a killed router left on its ports go back
    // first; then unpaced ports receive in threads of their own if asked, restored on return.
    let ports = config.ports.iter().map(|p| {
        (
            p.ifname.as_str(),
            config.napi_threads && p.rate_bps.is_none(),
        )
    });
    let _threaded_receive = crate::napi::take_ports(ports)
        .map_err(|(ifname, source)| Error::ThreadedReceive { ifname, source })?;
    let mut daemon = daemon::Daemon::new(config)?;
    daemon.run(shutdown)?;
    Ok(daemon.report())
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
