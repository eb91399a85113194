//! The segment daemon (`rtlan segment --config FILE`, `docs/segment.md`): an emulated shared
//! Ethernet segment — one transmission at a time at the configured rate, collisions when
//! transmissions overlap, truncated binary exponential backoff (IEEE 802.3 clause 4) — the
//! medium RETHER runs on (Venkatramani and Chiueh, RETHER §1–§2: in CSMA mode "nodes compete
//! for the channel … and on sensing collision, back off for a random time interval").
//!
//! The medium is the sans-IO core [`rtlan_core::segment::Bus`]; this shell runs it with the one
//! data-plane [`driver`](crate::driver) on one AF_PACKET (or, with `data_plane`, AF_XDP) port per
//! station's attachment: a frame received on port `i` is what station `i` transmits, and once
//! the medium has carried it without collision it leaves every other port. The core decides in
//! virtual time when a frame ends and who collides, so the shell's wake-up lateness delays
//! deliveries but never changes the schedule. A control socket (the one JSON-lines envelope,
//! `docs/mgmt.md`) answers `ping`, `stats` and `config` from the same loop.

mod config;
mod daemon;

use std::sync::atomic::AtomicBool;

pub use config::{SegmentDaemonConfig, MAX_QUEUE_FRAMES};

use crate::packet::PacketError;
use crate::switchd::{ConfigError, ControlError};

/// The segment daemon could not start or its loop failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The configuration file is unusable.
    #[error(transparent)]
    Config(#[from] ConfigError),
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
    /// Preparing the data-plane thread (SCHED_FIFO) failed.
    #[error("cannot prepare the data-plane thread: {0}")]
    Thread(#[source] std::io::Error),
    /// The control socket could not be set up.
    #[error(transparent)]
    Control(#[from] ControlError),
    /// The data-plane driver failed.
    #[error("data-plane driver: {0}")]
    Driver(#[from] crate::driver::DriverError),
}

/// One attachment in a report.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct AttachmentReport {
    /// Its interface.
    pub ifname: String,
    /// Frames waiting for the medium (the station's NIC transmit buffer).
    pub queued: usize,
}

/// What a run did, returned when it stops.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RunReport {
    /// The configured name.
    pub name: String,
    /// How long the loop ran, ns.
    pub uptime_ns: u64,
    /// The medium's counters: frames carried, collisions, drops by reason, busy time.
    pub bus: rtlan_core::segment::BusStats,
    /// Per attachment: frames waiting.
    pub attachments: Vec<AttachmentReport>,
    /// The shell's per-port counters.
    pub ports: Vec<crate::driver::PortStats>,
}

/// Runs the segment on the calling thread until `shutdown` becomes true (checked at least every
/// 100 ms), then reports.
pub fn run(config: SegmentDaemonConfig, shutdown: &AtomicBool) -> Result<RunReport, Error> {
    crate::driver::thread::prepare(None, config.realtime_priority)
        .map_err(|e| Error::Thread(e.source))?;
    let mut daemon = daemon::Daemon::new(config)?;
    daemon.run(shutdown)?;
    Ok(daemon.report())
}
