//! The RETHER bridge's configuration file (`rtlan rether-bridge --config FILE`,
//! `docs/rether-bridge.md`): TOML, every error at its `line:column`, unknown keys refused.
//!
//! ```toml
//! name = "br"
//! control_socket = "/run/rtlan/br.sock"   # optional: sub-connections and counters
//! data_plane = "af_packet"                # or "af_xdp", or "auto" (docs/afxdp.md)
//! rate = "10mbit"                         # every port's segment rate unless the port says
//! trt = "20ms"                            # every port's TRT unless the port says
//! table_capacity = 4096                   # MACs learnt (802.1D table)
//! realtime_priority = 20                  # SCHED_FIFO priority; 0 = normal scheduling
//! # and the agent's station keys, for every port: t_nrt, nrt_policy, frame_overhead,
//! # visit_overhead, token_cost, switch_timeout, switch_attempts, ack_slack
//!
//! [[port]]                                # one per segment, at least two
//! ifname = "p0"
//! id = 4                                  # the bridge's station id on that segment
//! rate = "10mbit"                         # optional
//! trt = "20ms"                            # optional
//! t_nrt = "2ms"                           # optional
//! ```
//!
//! Each port's station is a [`Config`] with the port's id, rate, TRT and T_NRT and the shared
//! keys; its MAC is the port's, set at start.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rtlan_core::rether::Config;
use rtlan_wire::ethernet::Address;
use serde::Deserialize;
use toml::Spanned;

use super::config::{ifname, rate, station_id, trt_and_t_nrt, StationKeys};
use crate::switchd::config::Source;
use crate::switchd::ConfigError;

/// The bridge's configuration.
#[derive(Debug, Clone)]
pub struct RetherBridgeConfig {
    /// Name used in logs and reports.
    pub name: String,
    /// Path of the Unix control socket; `None` = none.
    pub control_socket: Option<PathBuf>,
    /// The ports' sockets.
    pub data_plane: crate::xdp::DataPlane,
    /// One per segment, in port order.
    pub ports: Vec<BridgePortConfig>,
    /// Most MACs learnt.
    pub table_capacity: usize,
    /// SCHED_FIFO priority of the bridge's thread; 0 = normal scheduling (the agent's reason,
    /// `super::config`).
    pub realtime_priority: u8,
}

/// One port: the bridge's station on one segment.
#[derive(Debug, Clone)]
pub struct BridgePortConfig {
    /// The interface on the segment.
    pub ifname: String,
    /// The station's parameters (its MAC is the port's, set at start).
    pub station: Config,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBridge {
    name: Option<String>,
    control_socket: Option<PathBuf>,
    data_plane: Option<crate::xdp::DataPlane>,
    rate: Option<Spanned<String>>,
    trt: Option<Spanned<String>>,
    t_nrt: Option<Spanned<String>>,
    nrt_policy: Option<Spanned<String>>,
    frame_overhead: Option<Spanned<String>>,
    visit_overhead: Option<Spanned<String>>,
    token_cost: Option<Spanned<String>>,
    switch_timeout: Option<Spanned<String>>,
    switch_attempts: Option<Spanned<i64>>,
    ack_slack: Option<Spanned<String>>,
    table_capacity: Option<Spanned<i64>>,
    realtime_priority: Option<Spanned<u8>>,
    port: Option<Spanned<Vec<RawPort>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPort {
    ifname: Spanned<String>,
    id: Spanned<i64>,
    rate: Option<Spanned<String>>,
    trt: Option<Spanned<String>>,
    t_nrt: Option<Spanned<String>>,
}

impl RetherBridgeConfig {
    /// Reads and validates `path`.
    pub fn from_file(path: &Path) -> Result<RetherBridgeConfig, ConfigError> {
        RetherBridgeConfig::from_toml_str(&crate::switchd::config::read_config(path)?)
    }

    /// Parses and validates a configuration.
    pub fn from_toml_str(text: &str) -> Result<RetherBridgeConfig, ConfigError> {
        let src = Source(text);
        let raw: RawBridge = src.parse()?;
        let default_rate = raw.rate.as_ref().map(|r| rate(&src, r)).transpose()?;
        let Some(raw_ports) = raw.port else {
            return Err(src.error(0..0, "a bridge has [[port]] tables, at least two"));
        };
        let ports_span = raw_ports.span();
        let raw_ports = raw_ports.into_inner();
        if raw_ports.len() < 2 {
            return Err(src.error(ports_span, "port: a bridge joins at least two segments"));
        }
        let mut ports: Vec<BridgePortConfig> = Vec::with_capacity(raw_ports.len());
        for p in &raw_ports {
            let name = ifname(&src, &p.ifname, "ifname")?;
            if ports.iter().any(|o| o.ifname == name) {
                return Err(src.error(p.ifname.span(), "ifname: two ports on one interface"));
            }
            let id = station_id(&src, &p.id)?;
            let rate_bps = match (&p.rate, default_rate) {
                (Some(r), _) => rate(&src, r)?,
                (None, Some(r)) => r,
                (None, None) => {
                    return Err(src.error(
                        p.ifname.span(),
                        "rate: give the port's segment rate, here or at the top",
                    ))
                }
            };
            let mut c = Config::new(id, Address([0; 6]), rate_bps);
            let trt = p.trt.as_ref().or(raw.trt.as_ref());
            let t_nrt = p.t_nrt.as_ref().or(raw.t_nrt.as_ref());
            (c.trt, c.t_nrt) = trt_and_t_nrt(&src, trt, t_nrt, c.trt)?;
            StationKeys {
                nrt_policy: raw.nrt_policy.clone(),
                frame_overhead: raw.frame_overhead.clone(),
                visit_overhead: raw.visit_overhead.clone(),
                token_cost: raw.token_cost.clone(),
                switch_timeout: raw.switch_timeout.clone(),
                switch_attempts: raw.switch_attempts.clone(),
                ack_slack: raw.ack_slack.clone(),
            }
            .apply(&src, &mut c)?;
            ports.push(BridgePortConfig {
                ifname: name,
                station: c,
            });
        }
        let table_capacity = match raw.table_capacity {
            None => 4096,
            Some(q) => usize::try_from(*q.get_ref())
                .ok()
                .filter(|&n| (1..=1 << 20).contains(&n))
                .ok_or_else(|| src.error(q.span(), "table_capacity: 1 to 1048576 MACs"))?,
        };
        Ok(RetherBridgeConfig {
            name: raw.name.unwrap_or_else(|| "rether-bridge".to_string()),
            control_socket: raw.control_socket,
            data_plane: raw.data_plane.unwrap_or_default(),
            ports,
            table_capacity,
            realtime_priority: src.realtime_priority(raw.realtime_priority.as_ref())?,
        })
    }

    /// The core's configuration: these ports' stations (MACs still unset), this table.
    pub fn bridge_config(&self) -> rtlan_core::rether::bridge::BridgeConfig {
        let mut c = rtlan_core::rether::bridge::BridgeConfig::new(
            self.ports.iter().map(|p| p.station.clone()).collect(),
        );
        c.table_capacity = self.table_capacity;
        c.aging = Duration::from_secs(300);
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: &str = "rate = \"10mbit\"\n[[port]]\nifname = \"p0\"\nid = 4\n\
                       [[port]]\nifname = \"p1\"\nid = 2\nrate = \"100mbit\"\ntrt = \"10ms\"\n";

    #[test]
    fn ports_take_the_shared_keys_and_their_own() {
        let text = format!(
            "name = \"br\"\ntrt = \"20ms\"\ntoken_cost = \"200us\"\nack_slack = \"8ms\"\n{TWO}"
        );
        let c = RetherBridgeConfig::from_toml_str(&text).expect("valid");
        assert_eq!(c.name, "br");
        assert_eq!(c.ports.len(), 2);
        let (a, b) = (&c.ports[0], &c.ports[1]);
        assert_eq!((a.ifname.as_str(), b.ifname.as_str()), ("p0", "p1"));
        assert_eq!((a.station.id.get(), b.station.id.get()), (4, 2));
        assert_eq!(
            (a.station.rate_bps, b.station.rate_bps),
            (10_000_000, 100_000_000)
        );
        assert_eq!(a.station.trt, Duration::from_millis(20));
        assert_eq!(b.station.trt, Duration::from_millis(10));
        assert_eq!(
            b.station.t_nrt,
            Duration::from_millis(1),
            "10 % of its own TRT"
        );
        for p in &c.ports {
            assert_eq!(p.station.token_cost, Duration::from_micros(200));
            assert_eq!(p.station.ack_slack, Duration::from_millis(8));
        }
        assert_eq!(c.table_capacity, 4096);
        assert_eq!(c.realtime_priority, 20);
        assert_eq!(c.bridge_config().stations.len(), 2);
    }

    #[test]
    fn mistakes_are_named_at_their_place() {
        for (text, line, needle) in [
            ("rate = \"10mbit\"\n", 1, "[[port]]"),
            (
                "rate = \"10mbit\"\n[[port]]\nifname = \"p0\"\nid = 1\n",
                2,
                "at least two",
            ),
            (
                "[[port]]\nifname = \"p0\"\nid = 1\n[[port]]\nifname = \"p1\"\nid = 2\n",
                2,
                "rate:",
            ),
            (&TWO.replace("id = 4", "id = 0"), 4, "id: 1 to"),
            (&TWO.replace("\"p1\"", "\"p0\""), 6, "two ports"),
            (&TWO.replace("\"10ms\"", "\"0s\""), 9, "trt: above 0"),
            (&format!("t_nrt = \"30ms\"\n{TWO}"), 1, "eq. 3"),
            (&format!("table_capacity = 0\n{TWO}"), 1, "table_capacity"),
            (
                &format!("realtime_priority = 120\n{TWO}"),
                1,
                "realtime_priority",
            ),
            (&format!("colour = \"red\"\n{TWO}"), 1, "unknown field"),
            (
                &TWO.replace("id = 2", "id = 2\nhost_port = \"h0\""),
                8,
                "unknown field",
            ),
        ] {
            match RetherBridgeConfig::from_toml_str(text) {
                Err(ConfigError::Invalid {
                    line: l, message, ..
                }) => {
                    assert_eq!(l, line, "{text}: {message}");
                    assert!(message.contains(needle), "{text}: {message}");
                }
                other => panic!("{text}: {other:?}"),
            }
        }
    }
}
