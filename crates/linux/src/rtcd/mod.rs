//! The host daemon (`rtlan rtcd`): the Linux shell around the sans-IO RTCD core
//! ([`rtlan_core::rtcd`]; EtheReal §2.2 connection setup on behalf of unmodified applications,
//! §3.2 proxy IP / proxy MAC neighbour entries, §3.4 setup messages to the first switch).
//!
//! [`run`] opens the control link (`AF_PACKET`/`SOCK_DGRAM`, EtherType 0x88B5) on the host's
//! interface, a netlink socket and the clients' Unix socket (the management envelope of
//! `docs/mgmt.md`, operations in `docs/rtcd.md`), and runs one single-threaded `epoll` loop
//! until the shutdown flag is set. On shutdown it releases
//! every connection, removes the neighbour entries and the route it installed, and removes its
//! socket file. [`client`] is the blocking client used by the RTTR library and tests.

pub mod client;
mod clients;
mod config;
mod daemon;
mod json;
mod link;
mod manager;
mod policy;
mod rsvp_socket;
mod tc;
mod tc_save;

#[doc(hidden)]
pub use tc_save::fuzz_dump as fuzz_tc_dump;

use std::io;
use std::net::Ipv4Addr;
use std::os::fd::AsRawFd;
use std::sync::atomic::AtomicBool;

pub use crate::ethtool::link_speed;

/// A connection phase's name, as the protocol and the metrics page write it.
pub fn phase_label(phase: rtlan_core::rtcd::ConnPhase) -> &'static str {
    json::phase_name(phase)
}
pub use client::{ClientError, ListedConn, OpenParams, Opened, RtcdClient};
pub use clients::{ClientsError, MAX_CLIENTS, MAX_LINE};
pub use config::{
    parse_admission, parse_prefix, Config, ConfigError, DEFAULT_MANAGER_TIMEOUT, DEFAULT_SOCKET,
};
pub use json::{
    decode_request, error_code, id_of, parse_request, render, tag_of, LineError, Rendered,
};
pub use link::{ControlLink, LinkError, Received};

use crate::netlink::{Netlink, NetlinkError};
use crate::timer::TimerError;

/// The daemon could not start or its loop failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The configuration is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The control link could not be opened.
    #[error(transparent)]
    Link(#[from] LinkError),
    /// The link rate is not configured and the interface does not report one.
    #[error(
        "interface `{ifname}` reports no link speed ({why}); set link_rate in the \
         configuration (or --link-rate)"
    )]
    NoLinkSpeed {
        /// The interface.
        ifname: String,
        /// What the kernel said.
        why: String,
    },
    /// The interface has no IPv4 address and none is configured.
    #[error("interface `{0}` has no IPv4 address; set host_ip")]
    NoAddress(String),
    /// The netlink socket could not be opened.
    #[error("netlink: {0}")]
    Netlink(#[from] NetlinkError),
    /// The client socket could not be set up.
    #[error(transparent)]
    Clients(#[from] ClientsError),
    /// The timer failed.
    #[error(transparent)]
    Timer(#[from] TimerError),
    /// `epoll` failed.
    #[error("epoll: {0}")]
    Epoll(#[source] io::Error),
    /// The bandwidth manager's worker thread could not start.
    #[error("bandwidth manager worker: {0}")]
    Manager(#[source] io::Error),
    /// The core refused the configuration.
    #[error("rtcd core: {0}")]
    Core(#[from] rtlan_core::rtcd::RtcdError),
    /// The metrics endpoint could not be bound.
    #[error(transparent)]
    Metrics(crate::metrics::server::MetricsError),
    /// The RSVP socket could not be opened (`signalling = "rsvp"` needs CAP_NET_RAW).
    #[error("RSVP socket: {0}")]
    Rsvp(#[source] io::Error),
}

/// The daemon's counters, returned when it stops.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct RunReport {
    /// Control messages sent to the first switch.
    pub control_sent: u64,
    /// Control messages received.
    pub control_received: u64,
    /// Received control messages that did not parse.
    pub control_malformed: u64,
    /// Control sends that failed.
    pub send_errors: u64,
    /// Request lines received from clients.
    pub client_requests: u64,
    /// Replies with `"ok":false`.
    pub client_errors: u64,
    /// Netlink changes that failed (logged, not fatal).
    pub netlink_errors: u64,
    /// `tc` commands for kernel shaping that failed (logged, not fatal).
    pub shaper_errors: u64,
    /// Client connections accepted.
    pub clients_accepted: u64,
    /// Carrier changes of the host's interface seen (each one interrupted or recovered the
    /// open connections).
    pub carrier_changes: u64,
    /// Authentication of control messages (`docs/protocol.md` §8): signed, verified, and why
    /// others were dropped.
    pub auth: rtlan_core::auth::AuthStats,
}

/// The IPv4 address of `ifname` (`SIOCGIFADDR`), `None` if it has none.
fn interface_ipv4(fd: i32, ifname: &str) -> Option<Ipv4Addr> {
    let bytes = ifname.as_bytes();
    if bytes.is_empty() || bytes.len() >= libc::IFNAMSIZ {
        return None;
    }
    // SAFETY: `ifreq` is plain C data for which all-zero bytes are valid.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, &src) in req.ifr_name.iter_mut().zip(bytes) {
        *dst = src as libc::c_char;
    }
    // SAFETY: `fd` is an open socket, `req` names the interface; the call writes only `req`.
    let rc = unsafe { libc::ioctl(fd, libc::SIOCGIFADDR, &mut req) };
    if rc < 0 {
        return None;
    }
    // SAFETY: after a successful SIOCGIFADDR the union holds a sockaddr, which for AF_INET has
    // the layout of sockaddr_in (same size); we read it by value.
    let addr: libc::sockaddr_in = unsafe {
        std::ptr::read_unaligned((&req.ifr_ifru.ifru_addr as *const libc::sockaddr).cast())
    };
    if i32::from(addr.sin_family) != libc::AF_INET {
        return None;
    }
    Some(Ipv4Addr::from(u32::from_be(addr.sin_addr.s_addr)))
}

/// Removes what an earlier start of the daemon may have left on `ifname` (it was killed, or the
/// host lost power): neighbour entries for proxy IPs and the on-link route of the proxy prefix.
/// Left in place they would send an application's stream to whatever connection now has that
/// id (`docs/protocol.md` §5 "Restarts").
fn remove_leftovers(
    netlink: &mut Netlink,
    ifname: &str,
    prefix: rtlan_core::rtcd::ProxyPrefix,
) -> Result<(), Error> {
    let mut neighbours = 0usize;
    for (ip, _, _) in netlink.neighbours(ifname)? {
        if prefix.contains(ip) {
            netlink.delete_neighbour(ifname, ip)?;
            neighbours += 1;
        }
    }
    let mut routes = 0usize;
    for (network, len) in netlink.routes(ifname)? {
        if network == prefix.network() && len == prefix.prefix_len() {
            netlink.delete_route(ifname, network, len)?;
            routes += 1;
        }
    }
    if neighbours + routes > 0 {
        tracing::warn!(
            interface = ifname,
            neighbours,
            routes,
            "removed proxy entries an earlier start left behind"
        );
    }
    Ok(())
}

/// Runs the daemon on the calling thread (in its current network namespace) until `shutdown`
/// becomes true (checked at least every 100 ms), then cleans up and reports.
pub fn run(config: &Config, shutdown: &AtomicBool) -> Result<RunReport, Error> {
    let link = ControlLink::open(&config.interface)?;
    let host_ip = match config.host_ip {
        Some(ip) => ip,
        None => interface_ipv4(link.as_raw_fd(), &config.interface)
            .ok_or_else(|| Error::NoAddress(config.interface.clone()))?,
    };
    let link_rate_bps = match config.link_rate_bps {
        Some(rate) => rate,
        None => {
            let rate = link_speed(link.as_raw_fd(), &config.interface).map_err(|why| {
                Error::NoLinkSpeed {
                    ifname: config.interface.clone(),
                    why,
                }
            })?;
            tracing::info!(
                interface = %config.interface,
                link_rate_bps = rate,
                "link rate read from the interface (set link_rate to override)"
            );
            rate
        }
    };
    let mut core = config.core_config(link.mac(), host_ip, link_rate_bps)?;
    // A new boot epoch every start: the first switch releases what an earlier start left.
    core.epoch = crate::epoch::boot_epoch();
    // Signed sequence numbers keep growing across restarts (RFC 2747 §3).
    core.auth_seq_base = crate::keys::sequence_base();
    let mut netlink = Netlink::open()?;
    remove_leftovers(&mut netlink, &config.interface, core.proxy_prefix)?;
    let rtcd = rtlan_core::rtcd::Rtcd::new(core.clone(), crate::clock::now())?;
    let manager = match config.manager {
        Some(addr) if core.admission != rtlan_core::rtcd::Admission::Local => Some(
            manager::ManagerLink::start(addr, config.manager_timeout, config.manager_token.clone())
                .map_err(Error::Manager)?,
        ),
        _ => None,
    };
    let mut daemon = daemon::Daemon::new(
        config.interface.clone(),
        rtcd,
        link,
        netlink,
        &config.socket,
        daemon::HostQueues {
            link_rate_bps: core.link_rate_bps,
            realtime_cap_percent: core.realtime_cap_percent,
            priority_queue: config.priority_queue,
        },
        manager,
    )?;
    clients::set_access(
        &config.socket,
        config.socket_mode,
        config.socket_group.as_deref(),
    )?;
    tracing::info!(
        interface = %config.interface,
        mac = %core.host_mac,
        ip = %core.host_ip,
        proxy_prefix = %core.proxy_prefix,
        admission = ?core.admission,
        socket = %config.socket.display(),
        host_delay_us = core.host_delay_ns() / 1000,
        epoch = format_args!("{:#018x}", core.epoch),
        "rtcd running"
    );
    if !config.priority_queue && core.admission != rtlan_core::rtcd::Admission::Central {
        tracing::warn!(
            "priority_queue = false: reserved frames share the host's queue with its other \
             traffic, so the host_delay term of every bound is not enforced on this host"
        );
    }
    if let Some(addr) = config.metrics_listen {
        daemon.set_metrics(crate::metrics::Exporter::bind(addr).map_err(Error::Metrics)?);
    }
    crate::service::ready(&format!(
        "serving {} on {}",
        config.socket.display(),
        config.interface
    ));
    let result = daemon.run(shutdown);
    let report = daemon.report();
    drop(daemon);
    tracing::info!("rtcd stopped");
    result.map(|()| report)
}
