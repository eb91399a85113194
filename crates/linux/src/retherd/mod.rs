//! The RETHER agent daemon (`rtlan rether --config FILE`): the host-transparent bump in the wire
//! ([`rtlan_core::rether::agent::Agent`]; RETHER, Venkatramani and Chiueh, §3 and §3.1;
//! `docs/rether.md` §7) run by the one data-plane [`driver`](crate::driver) on two ports — the
//! far end of the host's link and the host's attachment to the shared segment.
//!
//! The control socket speaks the one management envelope (`docs/mgmt.md`) and carries the §3.1
//! interface: `open`, `admit` (answered when the token brings the admission test's result),
//! `close`, `send` and `recv` of data units (base64; with `"block": true` the answer waits for a
//! free buffer or a unit, up to `timeout_ms`), `listen`, `unlisten`, plus `sessions`, `status`,
//! `stats`, `reset_token_gap` and `ping`. A session belongs to the client that opened it and is
//! closed when that client goes, unless it was opened with `"keep": true` (a 5-tuple session
//! reserved for an unmodified application by a tool that exits).

mod bridge_config;
mod bridged;
mod config;
mod daemon;

use std::sync::atomic::AtomicBool;

pub use bridge_config::{BridgePortConfig, RetherBridgeConfig};
pub use bridged::{BridgeRunReport, PortReport};
pub use config::RetherDaemonConfig;

use crate::switchd::ConfigError;

/// The agent could not start or its loop failed.
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
        source: crate::xdp::AnyPortError,
    },
    /// The control socket could not be set up.
    #[error("control socket: {0}")]
    Control(#[from] crate::mgmt::ServerError),
    /// The data-plane driver failed.
    #[error("data-plane driver: {0}")]
    Driver(#[from] crate::driver::DriverError),
}

/// What a run did, returned when it stops.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RunReport {
    /// The configured name.
    pub name: String,
    /// The station's id.
    pub id: u16,
    /// How long the loop ran, ns.
    pub uptime_ns: u64,
    /// The agent's counters.
    pub agent: rtlan_core::rether::agent::AgentStats,
    /// The station's counters.
    pub station: rtlan_core::rether::Stats,
    /// The shell's per-port counters (host port, segment port).
    pub ports: Vec<crate::driver::PortStats>,
}

/// Runs the agent on the calling thread until `shutdown` becomes true (checked at least every
/// 100 ms), then reports.
pub fn run(config: RetherDaemonConfig, shutdown: &AtomicBool) -> Result<RunReport, Error> {
    crate::driver::thread::prepare_unpinned(config.realtime_priority);
    let mut daemon = daemon::Daemon::new(config)?;
    daemon.run(shutdown)?;
    Ok(daemon.report())
}

/// Runs a RETHER bridge (`rtlan rether-bridge`, RETHER §2.5) on the calling thread until
/// `shutdown` becomes true (checked at least every 100 ms), then reports.
pub fn run_bridge(
    config: RetherBridgeConfig,
    shutdown: &AtomicBool,
) -> Result<BridgeRunReport, Error> {
    crate::driver::thread::prepare_unpinned(config.realtime_priority);
    let mut daemon = bridged::BridgeDaemon::new(config)?;
    daemon.run(shutdown)?;
    Ok(daemon.report())
}
