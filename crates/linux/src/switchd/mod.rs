//! The switch daemon (`rtlan switch --config FILE`): the Linux shell around the sans-IO EtheReal
//! switch core (EtheReal §3.3–3.4, DESIGN.md §3 "a frame through a switch", §7).
//!
//! [`run`] opens one [`PacketPort`] per configured interface, builds the core
//! [`Switch`](rtlan_core::switch::Switch) with the interfaces' MACs, and runs one data-plane loop
//! on the calling thread:
//!
//! 1. `epoll_wait` over the ports, the timer and the control socket — sleeping when idle, for at
//!    most 100 ms so that `shutdown` is seen promptly (or not at all with `busy_poll`);
//! 2. drain up to [`RX_BATCH`] frames per port into `handle_frame`, interleaving the ports in
//!    rounds of [`RX_QUANTUM`];
//! 3. `handle_timeout` when the core's deadline has come;
//! 4. per port, `poll_transmit` straight into free TX-ring slots, then one flush per port;
//! 5. arm the timerfd at `poll_timeout()`.
//!
//! Non-fatal errors (send failures, full rings, bad control requests) are counted in
//! [`ShellStats`], never returned.

pub mod calibrate;
mod config;
mod control;
mod daemon;
pub(crate) mod epoll;

use std::io;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use rtlan_core::switch::SwitchStats;

pub use config::{
    format_duration, parse_mac, Config, ConfigError, CpuCost, PortSpec, DEFAULT_AGEING_TIME,
    DEFAULT_CYCLE_TIME, DEFAULT_PENDING_CAPACITY, DEFAULT_PENDING_TIMEOUT, DEFAULT_RING_FRAMES,
    MAX_RING_FRAMES,
};
pub use control::{ControlError, Request, MAX_CONNECTIONS, MAX_REQUEST_LINE};

use crate::packet::{PacketError, PacketPort, PortCounters};
use crate::timer::{LatenessStats, TimerError};

/// Most frames taken from one port's RX ring per loop iteration.
pub const RX_BATCH: usize = 64;

/// Frames taken from one port before the next port gets a turn, within an iteration's
/// [`RX_BATCH`]: ports are interleaved in rounds of this many frames, so ingress is shared fairly.
pub const RX_QUANTUM: usize = 8;

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
    /// The core refused the configuration.
    #[error("switch core: {0}")]
    Core(#[from] rtlan_core::switch::ConfigError),
    /// The timer failed.
    #[error(transparent)]
    Timer(#[from] TimerError),
    /// `epoll` failed.
    #[error("epoll: {0}")]
    Epoll(#[source] io::Error),
    /// The control socket could not be set up.
    #[error(transparent)]
    Control(#[from] ControlError),
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

/// The shell's counters for one port.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ShellPortStats {
    /// Interface name.
    pub ifname: String,
    /// Interface index.
    pub ifindex: u32,
    /// Interface MAC.
    pub mac: String,
    /// Ring and socket counters.
    #[serde(flatten)]
    pub counters: PortCounters,
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
    /// Control requests answered.
    pub control_requests: u64,
    /// Control requests answered with an error.
    pub control_errors: u64,
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

/// Runs the switch on the calling thread until `shutdown` becomes true (checked at least every
/// 100 ms), then closes everything (removing the control socket file) and reports.
pub fn run(config: Config, shutdown: &AtomicBool) -> Result<RunReport, Error> {
    if let Some(cpu) = config.cpu {
        pin_to_cpu(cpu)?;
    }
    reduce_timer_slack();
    set_realtime_priority(config.realtime_priority);
    let options = crate::packet::PortOptions {
        ring_frames: config.ring_frames,
        qdisc_bypass: config.qdisc_bypass,
    };
    let ports = config
        .ports
        .iter()
        .map(|p| {
            PacketPort::open(&p.ifname, &options).map_err(|source| Error::Port {
                ifname: p.ifname.clone(),
                source,
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let control_path: Option<PathBuf> = config.control_socket.clone();
    let mut daemon = daemon::Daemon::new(config, ports, control_path.as_deref())?;
    daemon.run(shutdown)?;
    Ok(daemon.report())
}

/// Asks the kernel to fire this thread's timers on time: the default timer slack of 50 µs lets
/// `timerfd` expirations be deferred by that much, which shows directly as pacing lateness.
fn reduce_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes a plain integer and affects only the calling thread.
    let rc = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
    if rc != 0 {
        tracing::debug!("PR_SET_TIMERSLACK: {}", io::Error::last_os_error());
    }
}

/// Runs the calling thread under SCHED_FIFO at `priority` (0: leave it alone). A refusal (no
/// CAP_SYS_NICE, or a cgroup without real-time runtime) is logged, not fatal: the switch still
/// works, with millisecond stalls whenever the host is busy.
fn set_realtime_priority(priority: u8) {
    if priority == 0 {
        return;
    }
    let param = libc::sched_param {
        sched_priority: libc::c_int::from(priority),
    };
    // SAFETY: `param` is a valid sched_param that outlives the call; pid 0 is the calling thread.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
    if rc != 0 {
        tracing::warn!(
            priority,
            "SCHED_FIFO refused ({}); running with normal scheduling",
            io::Error::last_os_error()
        );
    } else {
        tracing::info!(priority, "data plane runs under SCHED_FIFO");
    }
}

/// Pins the calling thread to `cpu`.
fn pin_to_cpu(cpu: usize) -> Result<(), Error> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(Error::Affinity {
            cpu,
            source: io::Error::from_raw_os_error(libc::EINVAL),
        });
    }
    // SAFETY: `cpu_set_t` is a plain bit array; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu < CPU_SETSIZE` (checked above), so the bit lies inside the set.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: `set` is a valid cpu_set_t of the size passed; pid 0 = the calling thread.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc < 0 {
        return Err(Error::Affinity {
            cpu,
            source: io::Error::last_os_error(),
        });
    }
    Ok(())
}
