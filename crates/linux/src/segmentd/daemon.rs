//! The segment daemon's loop: the [`Bus`] as the driver's node and the control socket on the
//! same `epoll` (requests are rare, so they share the thread rather than needing locks).

use std::sync::atomic::AtomicBool;

use rtlan_core::segment::{Bus, BusStats};
use rtlan_core::PortId;

use super::{AttachmentReport, Error, RunReport, SegmentDaemonConfig};
use crate::driver::{Driver, DriverOptions, PortStats};
use crate::mgmt::MgmtError;
use crate::packet::PortOptions;
use crate::switchd::control::ControlServer;
use crate::timer::LatenessStats;
use crate::xdp::{AnyPort, Steering};

/// A control request (`docs/segment.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
enum Request {
    /// Liveness; answers `"pong"`.
    Ping,
    /// The medium's counters, each attachment's queue, the shell's port counters.
    Stats,
    /// The configuration in force.
    Config,
}

/// The `data` of a `stats` reply.
#[derive(serde::Serialize)]
struct StatsReply<'a> {
    name: &'a str,
    uptime_ns: u64,
    rate_bps: u64,
    bus: &'a BusStats,
    attachments: Vec<AttachmentReport>,
    ports: Vec<PortStats>,
    loop_iterations: u64,
    timer: &'a LatenessStats,
}

pub(super) struct Daemon {
    config: SegmentDaemonConfig,
    driver: Driver<Bus, AnyPort>,
    control: Option<ControlServer>,
}

impl Daemon {
    pub(super) fn new(config: SegmentDaemonConfig) -> Result<Daemon, Error> {
        let options = PortOptions::default();
        let ports = crate::xdp::open_ports(
            config.ports.iter().map(String::as_str),
            config.data_plane,
            &Steering::Everything,
            &options,
        )
        .map_err(|(ifname, e)| match e.split() {
            Ok(source) => Error::Port { ifname, source },
            Err(source) => Error::Xdp(source),
        })?;
        let bus = Bus::new(config.bus_config());
        let driver = Driver::new(bus, ports, DriverOptions::default())?;
        let control = match &config.control_socket {
            Some(path) => Some(ControlServer::bind(path, driver.epoll())?),
            None => None,
        };
        tracing::info!(
            name = %config.name,
            rate_bps = config.rate_bps,
            propagation_ns = config.propagation_ns,
            ports = ?config.ports,
            "segment running"
        );
        Ok(Daemon {
            config,
            driver,
            control,
        })
    }

    /// Runs until `shutdown` is set.
    pub(super) fn run(&mut self, shutdown: &AtomicBool) -> Result<(), Error> {
        let Daemon {
            config,
            driver,
            control,
        } = self;
        driver.run(shutdown, |driver, token, flags| {
            let Some(control) = control.as_mut() else {
                return;
            };
            driver.read_kernel_drops();
            let ports = driver.port_stats();
            let loop_iterations = driver.loop_iterations();
            let timer = driver.lateness().clone();
            let uptime_ns = nanos(driver.uptime());
            let (epoll, bus) = driver.epoll_and_node();
            control.on_event(epoll, token, flags, |request: Request| {
                let value = match request {
                    Request::Ping => Ok(serde_json::Value::String("pong".to_string())),
                    Request::Stats => serde_json::to_value(StatsReply {
                        name: &config.name,
                        uptime_ns,
                        rate_bps: config.rate_bps,
                        bus: bus.stats(),
                        attachments: attachments(bus, config),
                        ports: ports.clone(),
                        loop_iterations,
                        timer: &timer,
                    }),
                    Request::Config => serde_json::to_value(&*config),
                };
                value.map_err(|e| MgmtError::new("internal", e.to_string()))
            });
        })?;
        tracing::info!(name = %self.config.name, "segment stopped");
        Ok(())
    }

    /// The final report.
    pub(super) fn report(&mut self) -> RunReport {
        self.driver.read_kernel_drops();
        let bus = self.driver.node();
        RunReport {
            name: self.config.name.clone(),
            uptime_ns: nanos(self.driver.uptime()),
            bus: bus.stats().clone(),
            attachments: attachments(bus, &self.config),
            ports: self.driver.port_stats(),
        }
    }
}

/// Each attachment's queue, in port order.
fn attachments(bus: &Bus, config: &SegmentDaemonConfig) -> Vec<AttachmentReport> {
    config
        .ports
        .iter()
        .enumerate()
        .map(|(i, ifname)| AttachmentReport {
            ifname: ifname.clone(),
            queued: bus.queued(PortId(u16::try_from(i).unwrap_or(u16::MAX))),
        })
        .collect()
}

fn nanos(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_documented_op_parses_and_others_do_not() {
        for (op, request) in [
            ("ping", Request::Ping),
            ("stats", Request::Stats),
            ("config", Request::Config),
        ] {
            let line = format!(r#"{{"op":"{op}","id":1}}"#);
            let envelope = crate::mgmt::parse_line(line.as_bytes()).expect("envelope");
            assert_eq!(envelope.decode::<Request>(), Ok(request), "{op}");
        }
        for op in ["fdb", "Stats", "reset"] {
            let line = format!(r#"{{"op":"{op}"}}"#);
            let envelope = crate::mgmt::parse_line(line.as_bytes()).expect("envelope");
            assert!(envelope.decode::<Request>().is_err(), "{op}");
        }
    }
}
