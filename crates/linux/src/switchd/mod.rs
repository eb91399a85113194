//! The switch daemon (`rtlan switch --config FILE`): the EtheReal switch core (EtheReal
//! §3.3–3.4, DESIGN.md §3 "a frame through a switch") run by the one data-plane
//! [`driver`](crate::driver), plus what is the switch's own: its configuration file and its
//! control socket.
//!
//! [`run`] prepares the thread (CPU pinning, SCHED_FIFO), opens one port per configured
//! interface (an AF_PACKET [`PacketPort`](crate::packet::PacketPort) or, with `data_plane`, an
//! AF_XDP [`XdpPort`](crate::xdp::XdpPort) steered to take every frame), builds the core [`Switch`](rtlan_core::switch::Switch) with the
//! interfaces' MACs, and hands both to a [`Driver`](crate::driver::Driver), whose loop also
//! serves the control socket's requests between data-plane iterations.
//!
//! Non-fatal errors (send failures, full rings, bad control requests) are counted in
//! [`ShellStats`], never returned.

pub mod calibrate;
pub(crate) mod config;
pub(crate) mod control;
mod daemon;
pub mod fastpath;
mod stp_config;

use std::io;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use rtlan_core::switch::SwitchStats;

pub use config::{
    format_duration, parse_mac, parse_toml_file, Config, ConfigError, CpuCost, PortSpec,
    DEFAULT_AGEING_TIME, DEFAULT_CYCLE_TIME, DEFAULT_PENDING_CAPACITY, DEFAULT_PENDING_TIMEOUT,
    DEFAULT_RING_FRAMES, MAX_RING_FRAMES,
};
pub use control::{ControlError, Request, MAX_CONNECTIONS, MAX_REQUEST_LINE};
pub use stp_config::StpSpec;

use crate::driver::DriverError;
use crate::packet::PacketError;
use crate::timer::{LatenessStats, TimerError};
use crate::xdp::{AnyPort, Steering};

pub use crate::driver::{PortStats as ShellPortStats, RX_BATCH, RX_QUANTUM};

/// The daemon could not start or its event loop failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A port could not be opened.
    #[error("port `{ifname}`: {source}")]
    Port {
        /// The interface.
        ifname: String,
        /// Why.
        #[source]
        source: PacketError,
    },
    /// A port could not be switched to threaded receive (`napi_threads = true`).
    #[error("port `{ifname}`: threaded receive (napi_threads): {source}")]
    ThreadedReceive {
        /// The interface.
        ifname: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// An AF_XDP port could not be opened (`data_plane = "af_xdp"`).
    #[error(transparent)]
    Xdp(#[from] crate::xdp::XdpError),
    /// The core refused the configuration.
    #[error("switch core: {0}")]
    Core(#[from] rtlan_core::switch::ConfigError),
    /// The timer failed.
    #[error(transparent)]
    Timer(#[from] TimerError),
    /// The metrics endpoint could not be started.
    #[error(transparent)]
    Metrics(#[from] crate::metrics::MetricsError),
    /// `epoll` failed.
    #[error("epoll: {0}")]
    Epoll(#[source] io::Error),
    /// The control socket could not be set up.
    #[error(transparent)]
    Control(#[from] ControlError),
    /// The driver refused the node and its ports.
    #[error("data-plane driver: {0}")]
    Driver(#[source] DriverError),
    /// Pinning the data-plane thread to the configured CPU failed.
    #[error("cannot pin the data plane to CPU {cpu}: {source}")]
    Affinity {
        /// The configured CPU.
        cpu: usize,
        /// The system error.
        #[source]
        source: io::Error,
    },
}

impl From<DriverError> for Error {
    fn from(e: DriverError) -> Self {
        match e {
            DriverError::Timer(e) => Error::Timer(e),
            DriverError::Epoll(e) => Error::Epoll(e),
            e @ DriverError::PortCount { .. } => Error::Driver(e),
        }
    }
}

impl From<crate::driver::thread::AffinityError> for Error {
    fn from(e: crate::driver::thread::AffinityError) -> Self {
        Error::Affinity {
            cpu: e.cpu,
            source: e.source,
        }
    }
}

/// The shell's counters (the core's are in [`SwitchStats`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ShellStats {
    /// Per-port counters, indexed like the core's ports.
    pub ports: Vec<ShellPortStats>,
    /// Loop iterations (one per `epoll_wait` return).
    pub loop_iterations: u64,
    /// Times the core's next deadline was already past after all due work was done although no
    /// TX ring was full (the loop then waits 100 µs instead of spinning).
    pub stale_deadlines: u64,
    /// Carrier changes seen on the ports (each also logged as a warning).
    pub link_changes: u64,
    /// Control requests answered.
    pub control_requests: u64,
    /// Control requests answered with an error.
    pub control_errors: u64,
    /// Per port: the best-effort fast path's state and what it forwarded (empty when off;
    /// docs/fastpath.md).
    pub fast_path: Vec<fastpath::FastPathPortStats>,
    /// Fast-path map updates that failed (each closes the fast path for good).
    pub fast_path_errors: u64,
}

/// What a run did, returned when it stops.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RunReport {
    /// The configured switch name.
    pub name: String,
    /// How long the data-plane loop ran (JSON: `uptime_ns`).
    #[serde(rename = "uptime_ns", serialize_with = "serialize_nanos")]
    pub uptime: Duration,
    /// The core's counters.
    pub switch: SwitchStats,
    /// The shell's counters.
    pub shell: ShellStats,
    /// Timer wake-up lateness.
    pub timer: LatenessStats,
}

fn serialize_nanos<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// Warns for every port whose configured `rate` is above the speed its NIC reports: the pacer
/// would then hand the NIC more than it sends, frames would queue in the driver where the
/// scheduler cannot see them, and no bound would hold (docs/physical-nics.md §8). A port whose
/// NIC reports no speed is not checked (a veth reports 10 Gbit/s).
pub fn check_port_rates(ports: &[PortSpec]) {
    let Ok(socket) = std::net::UdpSocket::bind("127.0.0.1:0") else {
        return;
    };
    let fd = std::os::fd::AsRawFd::as_raw_fd(&socket);
    for port in ports {
        let Some(rate) = port.rate_bps else { continue };
        if let Ok(speed) = crate::ethtool::link_speed(fd, &port.ifname) {
            if rate > speed {
                tracing::warn!(
                    port = %port.ifname,
                    rate_bps = rate,
                    nic_bps = speed,
                    "port {} is paced at {} but its NIC runs at {}: frames will queue in the NIC \
                     and the delay bounds do not hold; set rate to at most the NIC's speed",
                    port.ifname,
                    rtlan_core::units::format_rate(rate),
                    rtlan_core::units::format_rate(speed)
                );
            }
        }
    }
}

/// Where port `port`'s transmit thread runs: the configured `tx_cpus` in turn, else any CPU but
/// the data plane's (docs/threads.md).
pub(crate) fn tx_thread_cpu(config: &Config, port: usize) -> crate::packet::TxThreadCpu {
    use crate::packet::TxThreadCpu;
    match (config.tx_cpus.is_empty(), config.cpu) {
        (false, _) => TxThreadCpu::Cpu(config.tx_cpus[port % config.tx_cpus.len()]),
        (true, Some(cpu)) => TxThreadCpu::AnyBut(cpu),
        (true, None) => TxThreadCpu::Any,
    }
}

/// Runs the switch on the calling thread until `shutdown` becomes true (checked at least every
/// 100 ms), then closes everything (removing the control socket file) and reports.
pub fn run(config: Config, shutdown: &AtomicBool) -> Result<RunReport, Error> {
    crate::driver::thread::prepare(config.cpu, config.realtime_priority)?;
    let options = crate::packet::PortOptions {
        ring_frames: config.ring_frames,
        qdisc_bypass: config.qdisc_bypass,
        ..crate::packet::PortOptions::default()
    };
    // The fast path's maps come first: every port's program (XDP or TC) is built with them.
    let maps = crate::xdp::fastpath::maps_for(config.fast_path, || {
        crate::xdp::FastPath::new(config.ports.len() as u32)
    });
    // A switch killed on these ports may have left threaded receive on them (crate::napi): put
    // back first, whatever this configuration asks for. Then, like transmit threads, threaded
    // receive only where no pacer keeps the port's rate: a paced port's receive stays in the
    // softirq, with no thread's wake-up between a frame and the core. Restored (threaded NAPI
    // and GRO as they were) when the switch stops.
    let threaded = config.ports.iter().map(|p| {
        (
            p.ifname.as_str(),
            config.napi_threads && p.rate_bps.is_none(),
        )
    });
    let _threaded_receive = crate::napi::take_ports(threaded)
        .map_err(|(ifname, source)| Error::ThreadedReceive { ifname, source })?;
    let mut ports = Vec::with_capacity(config.ports.len());
    for (i, spec) in config.ports.iter().enumerate() {
        let steering = match &maps {
            Some(maps) => Steering::Switch(
                maps.program_for(i as u32, rtlan_core::switch::MAX_FRAME_LEN as u32),
            ),
            None => Steering::Everything,
        };
        let options = crate::packet::PortOptions {
            // A paced port's departures are the pacer's (the link emulation or the wire behind
            // it sees them): it kicks inline, so a late thread cannot bunch them up.
            tx_thread: (config.tx_threads && spec.rate_bps.is_none())
                .then(|| tx_thread_cpu(&config, i)),
            ..options
        };
        let port = AnyPort::open(&spec.ifname, config.data_plane, &steering, &options).map_err(
            |e| match e.split() {
                Ok(source) => Error::Port {
                    ifname: spec.ifname.clone(),
                    source,
                },
                Err(source) => Error::Xdp(source),
            },
        )?;
        tracing::info!(ifname = %spec.ifname, kind = port.kind(), "port open");
        ports.push(port);
    }
    let mirror = maps.map(|maps| fastpath::Mirror::new(maps, &ports));
    check_port_rates(&config.ports);
    let control_path: Option<PathBuf> = config.control_socket.clone();
    let mut daemon = daemon::Daemon::new(config, ports, mirror, control_path.as_deref())?;
    daemon.run(shutdown)?;
    Ok(daemon.report())
}
