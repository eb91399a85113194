//! The segment daemon's configuration file (`rtlan segment --config FILE`, `docs/segment.md`):
//! TOML, every error at its `line:column`, unknown keys refused.
//!
//! ```toml
//! name = "seg"
//! control_socket = "/run/rtlan/seg.sock"  # optional
//! rate = "10Mbit/s"                       # the medium's rate (units.md)
//! propagation = "12800ns"                 # optional: one-way delay; default a quarter slot
//! queue_frames = 64                       # optional: frames an attachment holds for the medium
//! seed = 1                                # optional: seed of the backoff generator
//! data_plane = "af_packet"                # or "af_xdp", or "auto" (docs/afxdp.md)
//! realtime_priority = 20                  # SCHED_FIFO priority; 0 = normal scheduling
//!
//! [[port]]
//! ifname = "p0"                           # one per station's attachment
//! ```

use std::path::{Path, PathBuf};
use std::time::Duration;

use rtlan_core::segment::BusConfig;
use rtlan_core::units::{parse_duration, parse_rate};
use serde::Deserialize;
use toml::Spanned;

use crate::switchd::config::Source;
use crate::switchd::ConfigError;

/// Most frames one attachment may hold (a NIC's transmit ring is a few hundred at most).
pub const MAX_QUEUE_FRAMES: usize = 4096;

/// Longest propagation delay accepted: 802.3 allows half a slot (25.6 µs at 10 Mbit/s); a
/// millisecond leaves room for experiments with long segments without overflowing anything.
const MAX_PROPAGATION: Duration = Duration::from_millis(1);

/// The segment daemon's configuration.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SegmentDaemonConfig {
    /// Name used in logs and reports.
    pub name: String,
    /// Path of the Unix control socket; `None` = none.
    pub control_socket: Option<PathBuf>,
    /// The medium's rate, bit/s (> 0).
    pub rate_bps: u64,
    /// One-way propagation delay, ns.
    pub propagation_ns: u64,
    /// Frames each attachment holds waiting for the medium.
    pub queue_frames: usize,
    /// Seed of the backoff generator.
    pub seed: u64,
    /// The ports' sockets.
    pub data_plane: crate::xdp::DataPlane,
    /// SCHED_FIFO priority of the data plane; 0 = normal scheduling.
    pub realtime_priority: u8,
    /// The attachments' interfaces, in port order.
    pub ports: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    name: Option<String>,
    control_socket: Option<PathBuf>,
    rate: Option<Spanned<String>>,
    propagation: Option<Spanned<String>>,
    queue_frames: Option<Spanned<usize>>,
    seed: Option<u64>,
    data_plane: Option<crate::xdp::DataPlane>,
    realtime_priority: Option<Spanned<u8>>,
    #[serde(default)]
    port: Vec<RawPort>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPort {
    ifname: Spanned<String>,
}

impl SegmentDaemonConfig {
    /// Reads and validates `path`.
    pub fn from_file(path: &Path) -> Result<SegmentDaemonConfig, ConfigError> {
        SegmentDaemonConfig::from_toml_str(&crate::switchd::config::read_config(path)?)
    }

    /// Parses and validates a configuration.
    pub fn from_toml_str(text: &str) -> Result<SegmentDaemonConfig, ConfigError> {
        let src = Source(text);
        let raw: RawConfig = src.parse()?;
        let Some(rate) = raw.rate else {
            return Err(src.error(
                0..0,
                "rate: the segment needs its rate, like rate = \"10Mbit/s\"",
            ));
        };
        let rate_bps = parse_rate(rate.get_ref())
            .ok()
            .filter(|&bps| bps > 0)
            .ok_or_else(|| {
                src.error(
                    rate.span(),
                    "rate: expected a rate above 0, like \"10Mbit/s\"",
                )
            })?;
        let defaults = BusConfig::new(1, rate_bps);
        let propagation = match raw.propagation {
            None => defaults.propagation,
            Some(p) => parse_duration(p.get_ref())
                .ok()
                .filter(|d| *d <= MAX_PROPAGATION)
                .ok_or_else(|| {
                    src.error(
                        p.span(),
                        "propagation: expected a duration up to 1ms, like \"2us\"",
                    )
                })?,
        };
        let queue_frames = match raw.queue_frames {
            None => defaults.queue_frames,
            Some(q) if (1..=MAX_QUEUE_FRAMES).contains(q.get_ref()) => *q.get_ref(),
            Some(q) => {
                return Err(src.error(q.span(), format!("queue_frames: 1 to {MAX_QUEUE_FRAMES}")))
            }
        };
        let realtime_priority = src.realtime_priority(raw.realtime_priority.as_ref())?;
        if raw.port.is_empty() {
            return Err(ConfigError::NoPorts);
        }
        let mut ports: Vec<String> = Vec::with_capacity(raw.port.len());
        for p in raw.port {
            let ifname = p.ifname.get_ref().clone();
            if ifname.is_empty() || ifname.len() > 15 {
                return Err(src.error(p.ifname.span(), "ifname must be 1 to 15 characters"));
            }
            if ports.contains(&ifname) {
                return Err(src.error(p.ifname.span(), format!("port {ifname} is listed twice")));
            }
            ports.push(ifname);
        }
        if ports.len() > usize::from(u16::MAX) {
            return Err(ConfigError::Invalid {
                line: 1,
                column: 1,
                message: format!("at most {} ports", u16::MAX),
            });
        }
        Ok(SegmentDaemonConfig {
            name: raw.name.unwrap_or_else(|| "segment".to_string()),
            control_socket: raw.control_socket,
            rate_bps,
            propagation_ns: u64::try_from(propagation.as_nanos()).unwrap_or(u64::MAX),
            queue_frames,
            seed: raw.seed.unwrap_or(defaults.seed),
            data_plane: raw.data_plane.unwrap_or_default(),
            realtime_priority,
            ports,
        })
    }

    /// The medium's parameters for the core.
    pub fn bus_config(&self) -> BusConfig {
        BusConfig {
            propagation: Duration::from_nanos(self.propagation_ns),
            queue_frames: self.queue_frames,
            seed: self.seed,
            ..BusConfig::new(self.ports.len(), self.rate_bps)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::switchd::config::DEFAULT_REALTIME_PRIORITY;

    #[test]
    fn a_full_file_parses_and_defaults_follow_the_core() {
        let c = SegmentDaemonConfig::from_toml_str(
            "name = \"seg\"\ncontrol_socket = \"/run/seg.sock\"\nrate = \"10Mbit/s\"\n\
             propagation = \"2us\"\nqueue_frames = 16\nseed = 9\ndata_plane = \"auto\"\n\
             realtime_priority = 0\n[[port]]\nifname = \"p0\"\n[[port]]\nifname = \"p1\"\n",
        )
        .expect("valid");
        assert_eq!(c.name, "seg");
        assert_eq!(c.rate_bps, 10_000_000);
        assert_eq!((c.propagation_ns, c.queue_frames, c.seed), (2_000, 16, 9));
        assert_eq!(c.data_plane, crate::xdp::DataPlane::Auto);
        assert_eq!(c.realtime_priority, 0);
        assert_eq!(c.ports, ["p0", "p1"]);
        let bus = c.bus_config();
        assert_eq!((bus.ports, bus.rate_bps, bus.seed), (2, 10_000_000, 9));
        assert_eq!(bus.propagation, Duration::from_micros(2));

        let d =
            SegmentDaemonConfig::from_toml_str("rate = \"100mbit\"\n[[port]]\nifname = \"p0\"\n")
                .expect("valid");
        let core = BusConfig::new(1, 100_000_000);
        assert_eq!(d.name, "segment");
        assert_eq!(d.propagation_ns, 1_280, "a quarter slot at 100 Mbit/s");
        assert_eq!((d.queue_frames, d.seed), (core.queue_frames, core.seed));
        assert_eq!(d.data_plane, crate::xdp::DataPlane::AfPacket);
        assert_eq!(d.realtime_priority, DEFAULT_REALTIME_PRIORITY);
    }

    #[test]
    fn errors_name_their_line_and_column() {
        let port = "[[port]]\nifname = \"p0\"\n";
        for (text, line, column, needle) in [
            (format!("rate = \"fast\"\n{port}"), 1, 8, "rate"),
            (format!("rate = \"0bit\"\n{port}"), 1, 8, "above 0"),
            (format!("rate = \"10mbps\"\n{port}"), 1, 8, "rate"),
            (port.to_string(), 1, 1, "needs its rate"),
            (
                format!("rate = \"10mbit\"\npropagation = \"2s\"\n{port}"),
                2,
                15,
                "propagation",
            ),
            (
                format!("rate = \"10mbit\"\nqueue_frames = 0\n{port}"),
                2,
                16,
                "queue_frames",
            ),
            (
                format!("rate = \"10mbit\"\nrealtime_priority = 100\n{port}"),
                2,
                21,
                "realtime_priority",
            ),
            (
                format!("rate = \"10mbit\"\ncolour = \"red\"\n{port}"),
                2,
                1,
                "colour",
            ),
            (format!("rate = \"10mbit\"\nseed = -3\n{port}"), 2, 8, ""),
            (format!("rate = \"10mbit\"\n{port}{port}"), 5, 10, "twice"),
            (
                "rate = \"10mbit\"\n[[port]]\nifname = \"\"\n".to_string(),
                3,
                10,
                "ifname",
            ),
            (
                "rate = \"10mbit\"\n[[port]]\nname = \"p0\"\n".to_string(),
                3,
                1,
                "name",
            ),
        ] {
            match SegmentDaemonConfig::from_toml_str(&text) {
                Err(ConfigError::Invalid {
                    line: l,
                    column: c,
                    message,
                }) => {
                    assert_eq!((l, c), (line, column), "{text}: {message}");
                    assert!(message.contains(needle), "{text}: {message}");
                }
                other => panic!("{text}: {other:?}"),
            }
        }
        assert!(matches!(
            SegmentDaemonConfig::from_toml_str("rate = \"10mbit\"\n"),
            Err(ConfigError::NoPorts)
        ));
    }
}
