//! The RETHER agent's configuration file (`rtlan rether --config FILE`, `docs/rether.md` §7):
//! TOML, every error at its `line:column`, unknown keys refused.
//!
//! ```toml
//! name = "h1"
//! id = 1                                  # the station's id on the segment, 1..=32767
//! host_port = "h0"                        # the far end of the host's link
//! segment_port = "s0"                     # the host's attachment to the segment
//! rate = "10mbit"                         # the segment's rate
//! control_socket = "/run/rtlan/h1.sock"   # optional: the §3.1 API and counters
//! data_plane = "af_packet"                # or "af_xdp", or "auto" (docs/afxdp.md)
//! trt = "33.333ms"                        # token rotation time, ≤ 1 s
//! t_nrt = "3.333ms"                       # per cycle kept for non-real-time traffic
//! nrt_policy = "one"                      # or "fit", or "at_most:4" (§2.2.3)
//! frame_overhead = "5us"                  # a of eq. (7)
//! visit_overhead = "20us"                 # b of eq. (7)
//! token_cost = "50us"                     # one token pass (Table 2's total)
//! switch_timeout = "20ms"                 # per Switch-to-RETHER attempt
//! switch_attempts = 4
//! ack_slack = "2ms"                       # the drivers' latency in every acknowledgement timer
//! host_queue = 1024                       # frames waiting for the host
//! realtime_priority = 20                  # SCHED_FIFO priority; 0 = normal scheduling
//! ```
//!
//! Every key but `id`, `host_port`, `segment_port` and `rate` has the default shown
//! ([`rtlan_core::rether::Config::new`]).
//!
//! `realtime_priority`: RETHER ran in each host's network driver (§3), above every user process.
//! The agent stands in for that driver, so its one thread runs under SCHED_FIFO like a switch's
//! data plane: a busy host delays its applications, not the token or the reserved frames.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rtlan_core::rether::{Config, NrtPolicy};
use rtlan_core::units::{parse_duration, parse_rate};
use rtlan_wire::ethernet::Address;
use rtlan_wire::rether::{NodeId, MAX_NODE_ID};
use serde::Deserialize;
use toml::Spanned;

use crate::switchd::config::Source;
use crate::switchd::ConfigError;

/// The agent's configuration.
#[derive(Debug, Clone)]
pub struct RetherDaemonConfig {
    /// Name used in logs and reports.
    pub name: String,
    /// The interface towards the host.
    pub host_port: String,
    /// The interface on the segment.
    pub segment_port: String,
    /// Path of the Unix control socket; `None` = none.
    pub control_socket: Option<PathBuf>,
    /// The ports' sockets.
    pub data_plane: crate::xdp::DataPlane,
    /// The station's parameters (its MAC is the segment port's, set at start).
    pub station: Config,
    /// Frames waiting for the host.
    pub host_queue: usize,
    /// SCHED_FIFO priority of the agent's thread; 0 = normal scheduling.
    pub realtime_priority: u8,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    name: Option<String>,
    id: Spanned<i64>,
    host_port: Spanned<String>,
    segment_port: Spanned<String>,
    rate: Spanned<String>,
    control_socket: Option<PathBuf>,
    data_plane: Option<crate::xdp::DataPlane>,
    trt: Option<Spanned<String>>,
    t_nrt: Option<Spanned<String>>,
    nrt_policy: Option<Spanned<String>>,
    frame_overhead: Option<Spanned<String>>,
    visit_overhead: Option<Spanned<String>>,
    token_cost: Option<Spanned<String>>,
    switch_timeout: Option<Spanned<String>>,
    switch_attempts: Option<Spanned<i64>>,
    ack_slack: Option<Spanned<String>>,
    host_queue: Option<Spanned<i64>>,
    realtime_priority: Option<Spanned<u8>>,
}

fn duration(
    src: &Source<'_>,
    value: Option<Spanned<String>>,
    key: &str,
    default: Duration,
    max: Duration,
) -> Result<Duration, ConfigError> {
    let Some(v) = value else {
        return Ok(default);
    };
    parse_duration(v.get_ref())
        .ok()
        .filter(|d| *d <= max)
        .ok_or_else(|| {
            src.error(
                v.span(),
                format!("{key}: expected a duration up to {max:?}, like \"20ms\""),
            )
        })
}

pub(super) fn ifname(
    src: &Source<'_>,
    v: &Spanned<String>,
    key: &str,
) -> Result<String, ConfigError> {
    let name = v.get_ref();
    if name.is_empty() || name.len() > 15 || name.contains(['/', ' ']) {
        return Err(src.error(
            v.span(),
            format!("{key}: an interface name of 1 to 15 characters"),
        ));
    }
    Ok(name.clone())
}

/// The station keys an agent and a bridge share (every one optional).
pub(super) struct StationKeys {
    pub(super) nrt_policy: Option<Spanned<String>>,
    pub(super) frame_overhead: Option<Spanned<String>>,
    pub(super) visit_overhead: Option<Spanned<String>>,
    pub(super) token_cost: Option<Spanned<String>>,
    pub(super) switch_timeout: Option<Spanned<String>>,
    pub(super) switch_attempts: Option<Spanned<i64>>,
    pub(super) ack_slack: Option<Spanned<String>>,
}

impl StationKeys {
    /// Sets what the keys give on `c`, the defaults of [`Config::new`] elsewhere.
    pub(super) fn apply(self, src: &Source<'_>, c: &mut Config) -> Result<(), ConfigError> {
        if let Some(p) = self.nrt_policy {
            c.nrt_policy = match p.get_ref().as_str() {
                "one" => NrtPolicy::One,
                "fit" => NrtPolicy::AsManyAsFit,
                other => other
                    .strip_prefix("at_most:")
                    .and_then(|k| k.parse::<u16>().ok())
                    .filter(|&k| k > 0)
                    .map(NrtPolicy::AtMost)
                    .ok_or_else(|| {
                        src.error(
                            p.span(),
                            "nrt_policy: \"one\", \"fit\" or \"at_most:K\" with K ≥ 1",
                        )
                    })?,
            };
        }
        let ms = Duration::from_millis(100);
        let second = Duration::from_secs(1);
        c.frame_overhead = duration(
            src,
            self.frame_overhead,
            "frame_overhead",
            c.frame_overhead,
            ms,
        )?;
        c.visit_overhead = duration(
            src,
            self.visit_overhead,
            "visit_overhead",
            c.visit_overhead,
            ms,
        )?;
        c.token_cost = duration(src, self.token_cost, "token_cost", c.token_cost, ms)?;
        c.switch_timeout = duration(
            src,
            self.switch_timeout,
            "switch_timeout",
            c.switch_timeout,
            second,
        )?;
        c.ack_slack = duration(src, self.ack_slack, "ack_slack", c.ack_slack, second)?;
        if let Some(a) = self.switch_attempts {
            c.switch_attempts = u8::try_from(*a.get_ref())
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| src.error(a.span(), "switch_attempts: 1 to 255"))?;
        }
        Ok(())
    }
}

pub(super) fn station_id(src: &Source<'_>, id: &Spanned<i64>) -> Result<NodeId, ConfigError> {
    u16::try_from(*id.get_ref())
        .ok()
        .and_then(NodeId::new)
        .ok_or_else(|| src.error(id.span(), format!("id: 1 to {MAX_NODE_ID}")))
}

pub(super) fn rate(src: &Source<'_>, v: &Spanned<String>) -> Result<u64, ConfigError> {
    parse_rate(v.get_ref())
        .ok()
        .filter(|&r| r > 0)
        .ok_or_else(|| src.error(v.span(), "rate: expected a rate above 0, like \"10mbit\""))
}

/// The TRT (above 0, at most 1 s; `default` when absent) and T_NRT (at most the TRT; 10 % of
/// it when absent, whatever the TRT).
pub(super) fn trt_and_t_nrt(
    src: &Source<'_>,
    trt: Option<&Spanned<String>>,
    t_nrt: Option<&Spanned<String>>,
    default: Duration,
) -> Result<(Duration, Duration), ConfigError> {
    let second = Duration::from_secs(1);
    let trt_value = duration(src, trt.cloned(), "trt", default, second)?;
    if trt_value.is_zero() {
        let span = trt.map(|t| t.span()).unwrap_or(0..0);
        return Err(src.error(span, "trt: above 0"));
    }
    let t_nrt_value = duration(src, t_nrt.cloned(), "t_nrt", trt_value / 10, second)?;
    if t_nrt_value > trt_value {
        let span = t_nrt.map(|t| t.span()).unwrap_or(0..0);
        return Err(src.error(span, "t_nrt: at most the trt (eq. 3)"));
    }
    Ok((trt_value, t_nrt_value))
}

impl RetherDaemonConfig {
    /// Reads and validates `path`.
    pub fn from_file(path: &Path) -> Result<RetherDaemonConfig, ConfigError> {
        RetherDaemonConfig::from_toml_str(&crate::switchd::config::read_config(path)?)
    }

    /// Parses and validates a configuration.
    pub fn from_toml_str(text: &str) -> Result<RetherDaemonConfig, ConfigError> {
        let src = Source(text);
        let raw: RawConfig = src.parse()?;
        let id = station_id(&src, &raw.id)?;
        let host_port = ifname(&src, &raw.host_port, "host_port")?;
        let segment_port = ifname(&src, &raw.segment_port, "segment_port")?;
        if host_port == segment_port {
            return Err(src.error(
                raw.segment_port.span(),
                "segment_port: must differ from host_port",
            ));
        }
        let rate_bps = rate(&src, &raw.rate)?;
        let mut c = Config::new(id, Address([0; 6]), rate_bps);
        (c.trt, c.t_nrt) = trt_and_t_nrt(&src, raw.trt.as_ref(), raw.t_nrt.as_ref(), c.trt)?;
        StationKeys {
            nrt_policy: raw.nrt_policy,
            frame_overhead: raw.frame_overhead,
            visit_overhead: raw.visit_overhead,
            token_cost: raw.token_cost,
            switch_timeout: raw.switch_timeout,
            switch_attempts: raw.switch_attempts,
            ack_slack: raw.ack_slack,
        }
        .apply(&src, &mut c)?;
        let host_queue = match raw.host_queue {
            None => 1024,
            Some(q) => usize::try_from(*q.get_ref())
                .ok()
                .filter(|&n| (1..=1 << 20).contains(&n))
                .ok_or_else(|| src.error(q.span(), "host_queue: 1 to 1048576 frames"))?,
        };
        Ok(RetherDaemonConfig {
            name: raw.name.unwrap_or_else(|| format!("station{}", id.get())),
            host_port,
            segment_port,
            control_socket: raw.control_socket,
            data_plane: raw.data_plane.unwrap_or_default(),
            station: c,
            host_queue,
            realtime_priority: src.realtime_priority(raw.realtime_priority.as_ref())?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = "id = 3\nhost_port = \"h0\"\nsegment_port = \"s0\"\nrate = \"10mbit\"\n";

    #[test]
    fn a_minimal_file_takes_the_defaults() {
        let c = RetherDaemonConfig::from_toml_str(MINIMAL).expect("valid");
        assert_eq!(c.name, "station3");
        assert_eq!(c.station.id.get(), 3);
        assert_eq!(c.station.rate_bps, 10_000_000);
        assert_eq!(c.station.trt, Duration::from_nanos(33_333_333));
        assert_eq!(c.station.t_nrt, Duration::from_nanos(3_333_333));
        assert_eq!(c.station.nrt_policy, NrtPolicy::One);
        assert_eq!(c.host_queue, 1024);
        assert_eq!(
            c.realtime_priority, 20,
            "a switch's, the driver it stands in for"
        );
        assert!(c.control_socket.is_none());
    }

    #[test]
    fn every_key_is_read() {
        let text = format!(
            "{MINIMAL}name = \"h1\"\ncontrol_socket = \"/run/x.sock\"\ntrt = \"20ms\"\nnrt_policy = \"at_most:3\"\n\
             frame_overhead = \"7us\"\nvisit_overhead = \"30us\"\ntoken_cost = \"80us\"\nswitch_timeout = \"15ms\"\n\
             switch_attempts = 2\nack_slack = \"5ms\"\nhost_queue = 64\ndata_plane = \"af_packet\"\n\
             realtime_priority = 0\n"
        );
        let c = RetherDaemonConfig::from_toml_str(&text).expect("valid");
        assert_eq!(c.name, "h1");
        assert_eq!(c.station.trt, Duration::from_millis(20));
        assert_eq!(c.station.t_nrt, Duration::from_millis(2), "10 % of the trt");
        assert_eq!(c.station.nrt_policy, NrtPolicy::AtMost(3));
        assert_eq!(c.station.frame_overhead, Duration::from_micros(7));
        assert_eq!(c.station.visit_overhead, Duration::from_micros(30));
        assert_eq!(c.station.token_cost, Duration::from_micros(80));
        assert_eq!(c.station.switch_timeout, Duration::from_millis(15));
        assert_eq!(c.station.switch_attempts, 2);
        assert_eq!(c.station.ack_slack, Duration::from_millis(5));
        assert_eq!(c.host_queue, 64);
        assert_eq!(c.realtime_priority, 0);
        assert_eq!(c.control_socket, Some(PathBuf::from("/run/x.sock")));
    }

    #[test]
    fn mistakes_are_named_at_their_place() {
        for (text, line, needle) in [
            ("id = 0\nhost_port = \"h0\"\nsegment_port = \"s0\"\nrate = \"10mbit\"\n", 1, "id: 1 to"),
            ("id = 40000\nhost_port = \"h0\"\nsegment_port = \"s0\"\nrate = \"10mbit\"\n", 1, "id: 1 to"),
            ("id = 1\nhost_port = \"h0\"\nsegment_port = \"h0\"\nrate = \"10mbit\"\n", 3, "must differ"),
            ("id = 1\nhost_port = \"h0\"\nsegment_port = \"s0\"\nrate = \"fast\"\n", 4, "rate:"),
            (&format!("{MINIMAL}trt = \"2s\"\n"), 5, "trt:"),
            (&format!("{MINIMAL}trt = \"0s\"\n"), 5, "trt: above 0"),
            (&format!("{MINIMAL}trt = \"10ms\"\nt_nrt = \"11ms\"\n"), 6, "eq. 3"),
            (&format!("{MINIMAL}nrt_policy = \"some\"\n"), 5, "nrt_policy"),
            (&format!("{MINIMAL}nrt_policy = \"at_most:0\"\n"), 5, "nrt_policy"),
            (&format!("{MINIMAL}switch_attempts = 0\n"), 5, "switch_attempts"),
            (&format!("{MINIMAL}host_queue = -1\n"), 5, "host_queue"),
            (&format!("{MINIMAL}realtime_priority = 100\n"), 5, "realtime_priority"),
            (&format!("{MINIMAL}colour = \"red\"\n"), 5, "unknown field"),
            ("host_port = \"h0\"\nsegment_port = \"s0\"\nrate = \"10mbit\"\n", 1, "missing field `id`"),
            ("id = 1\nhost_port = \"a-very-long-interface\"\nsegment_port = \"s0\"\nrate = \"10mbit\"\n", 2, "host_port"),
        ] {
            match RetherDaemonConfig::from_toml_str(text) {
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
