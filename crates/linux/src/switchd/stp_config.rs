//! The `[stp]` section of the switch's configuration file and the per-port `stp_cost` /
//! `stp_priority` keys (docs/stp.md §7 item 1; the protocol is IEEE 802.1D-1998 clause 8, whose
//! Table 8-3 gives the ranges checked here). Off by default: a loop-free network needs none of
//! it, and a switch without `[stp]` behaves exactly as before.

use std::ops::Range;
use std::time::Duration;

use rtlan_core::stp::Timers;
use rtlan_core::switch::{StpConfig, StpPortConfig};
use rtlan_core::units::{format_duration, parse_duration};
use serde::Deserialize;
use toml::Spanned;

use super::config::ConfigError;

/// The spanning tree settings of a switch daemon.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StpSpec {
    /// Whether the switch runs the spanning tree (default `false`).
    pub enabled: bool,
    /// Bridge priority (default 0x8000 = 32768).
    pub priority: u16,
    /// Max age, hello time, forward delay (defaults 20 s, 2 s, 15 s).
    pub timers: Timers,
    /// Per port, in port order: path cost and port priority (`None` = default).
    pub ports: Vec<StpPortConfig>,
}

impl Default for StpSpec {
    fn default() -> Self {
        StpSpec {
            enabled: false,
            priority: 0x8000,
            timers: Timers::default(),
            ports: Vec::new(),
        }
    }
}

impl StpSpec {
    /// The core's configuration, `None` when off.
    pub fn core_config(&self) -> Option<StpConfig> {
        self.enabled.then(|| StpConfig {
            priority: self.priority,
            timers: self.timers,
            ports: self.ports.clone(),
        })
    }
}

/// `[stp]` as read, with spans for errors.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawStp {
    enabled: Option<bool>,
    priority: Option<Spanned<u32>>,
    max_age: Option<Spanned<String>>,
    hello_time: Option<Spanned<String>>,
    forward_delay: Option<Spanned<String>>,
}

/// A port's `stp_cost` and `stp_priority` as read.
pub(super) type RawPortStp = (Option<Spanned<u32>>, Option<Spanned<u32>>);

/// Validates `[stp]` and the ports' keys; `error` turns a span and a message into a located
/// error.
pub(super) fn build(
    raw: Option<Spanned<RawStp>>,
    ports: &[RawPortStp],
    error: impl Fn(Range<usize>, String) -> ConfigError,
) -> Result<StpSpec, ConfigError> {
    let mut spec = StpSpec::default();
    let mut port_configs = Vec::with_capacity(ports.len());
    for (cost, priority) in ports {
        let cost = match cost {
            None => None,
            Some(c) if (1..=65_535).contains(c.get_ref()) => Some(*c.get_ref()),
            Some(c) => return Err(error(c.span(), "stp_cost must be 1..=65535".into())),
        };
        let priority = match priority {
            None => None,
            Some(p) if *p.get_ref() <= 240 && p.get_ref() % 16 == 0 => Some(*p.get_ref() as u8),
            Some(p) => {
                return Err(error(
                    p.span(),
                    "stp_priority must be 0..=240 in steps of 16".into(),
                ))
            }
        };
        port_configs.push(StpPortConfig { cost, priority });
    }
    spec.ports = port_configs;
    let Some(raw) = raw else {
        return Ok(spec);
    };
    let section = raw.span();
    let raw = raw.into_inner();
    spec.enabled = raw.enabled.unwrap_or(false);
    if let Some(p) = raw.priority {
        spec.priority = u16::try_from(*p.get_ref())
            .map_err(|_| error(p.span(), "priority must be 0..=65535".into()))?;
    }
    let duration = |v: Option<Spanned<String>>, key: &str, default: Duration| match v {
        None => Ok(default),
        Some(v) => parse_duration(v.get_ref()).map_err(|e| error(v.span(), format!("{key}: {e}"))),
    };
    let defaults = Timers::default();
    spec.timers = Timers {
        max_age: duration(raw.max_age, "max_age", defaults.max_age)?,
        hello_time: duration(raw.hello_time, "hello_time", defaults.hello_time)?,
        forward_delay: duration(raw.forward_delay, "forward_delay", defaults.forward_delay)?,
        hold_time: defaults.hold_time,
    };
    spec.timers
        .validate()
        .map_err(|e| error(section, format!("[stp]: {e}")))?;
    Ok(spec)
}

/// `[stp]` in the file's own spelling.
#[derive(serde::Serialize)]
pub(super) struct StpView {
    enabled: bool,
    priority: u16,
    max_age: String,
    hello_time: String,
    forward_delay: String,
}

impl From<&StpSpec> for StpView {
    fn from(spec: &StpSpec) -> Self {
        StpView {
            enabled: spec.enabled,
            priority: spec.priority,
            max_age: format_duration(spec.timers.max_age),
            hello_time: format_duration(spec.timers.hello_time),
            forward_delay: format_duration(spec.timers.forward_delay),
        }
    }
}
