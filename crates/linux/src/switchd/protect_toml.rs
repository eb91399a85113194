//! The `[protect]` table of the switch configuration (`docs/switch.md`): control-plane
//! protection — per-port policers for host and trunk ports, the switch-wide control budget,
//! per-port shares, the ARP guard and static ARP bindings — parsed into the core's
//! [`ProtectConfig`], every error at its line.

use std::net::Ipv4Addr;

use rtlan_core::switch::{PortId, PortLimits, ProtectConfig, Rate, StaticBinding};
use rtlan_core::units::format_duration;
use serde::Deserialize;
use toml::Spanned;

use super::{parse_mac, ConfigError, PortSpec, Source};

/// The raw `[protect]` table.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawProtect {
    host: Option<RawLimits>,
    trunk: Option<RawLimits>,
    control_budget: Option<Spanned<RawRate>>,
    arp_guard: Option<bool>,
    arp_reprobe_timeout: Option<Spanned<String>>,
    #[serde(default)]
    static_arp: Vec<RawStatic>,
}

/// `[protect.host]` or `[protect.trunk]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLimits {
    control: Option<Spanned<RawRate>>,
    arp: Option<Spanned<RawRate>>,
    arp_probes: Option<Spanned<RawRate>>,
    connection_share_percent: Option<Spanned<u8>>,
    max_setups_in_progress: Option<Spanned<usize>>,
    pending_share_percent: Option<Spanned<u8>>,
}

/// `{ rate = messages per second, burst = messages }`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRate {
    rate: u32,
    burst: u32,
}

/// One `[[protect.static_arp]]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStatic {
    ip: Spanned<String>,
    mac: Spanned<String>,
    port: Spanned<String>,
}

fn rate(
    src: &Source<'_>,
    value: Option<Spanned<RawRate>>,
    key: &str,
    default: Rate,
) -> Result<Rate, ConfigError> {
    let Some(v) = value else { return Ok(default) };
    let span = v.span();
    let raw = v.into_inner();
    if raw.rate == 0 || raw.burst == 0 {
        return Err(src.error(span, format!("{key}: rate and burst must be above 0")));
    }
    Ok(Rate {
        per_second: raw.rate,
        burst: raw.burst,
    })
}

fn limits(
    src: &Source<'_>,
    raw: Option<RawLimits>,
    class: &str,
    default: PortLimits,
) -> Result<PortLimits, ConfigError> {
    let Some(raw) = raw else { return Ok(default) };
    let connection_share_percent = match raw.connection_share_percent {
        None => default.connection_share_percent,
        Some(v) if (1..=100).contains(v.get_ref()) => *v.get_ref(),
        Some(v) => {
            return Err(src.error(
                v.span(),
                format!("protect.{class}.connection_share_percent must be between 1 and 100"),
            ))
        }
    };
    let pending_share_percent = match raw.pending_share_percent {
        None => default.pending_share_percent,
        Some(v) if (1..=100).contains(v.get_ref()) => *v.get_ref(),
        Some(v) => {
            return Err(src.error(
                v.span(),
                format!("protect.{class}.pending_share_percent must be between 1 and 100"),
            ))
        }
    };
    let max_setups_in_progress = match &raw.max_setups_in_progress {
        None => default.max_setups_in_progress,
        Some(v) => Some(src.bounded(
            v,
            &format!("protect.{class}.max_setups_in_progress"),
            usize::MAX,
        )?),
    };
    Ok(PortLimits {
        control: rate(
            src,
            raw.control,
            &format!("protect.{class}.control"),
            default.control,
        )?,
        arp: rate(src, raw.arp, &format!("protect.{class}.arp"), default.arp)?,
        arp_probes: rate(
            src,
            raw.arp_probes,
            &format!("protect.{class}.arp_probes"),
            default.arp_probes,
        )?,
        connection_share_percent,
        max_setups_in_progress,
        pending_share_percent,
    })
}

/// Validates `[protect]` against the parsed `ports` (static bindings name a port by interface).
pub(super) fn protect(
    src: &Source<'_>,
    raw: Option<RawProtect>,
    ports: &[PortSpec],
) -> Result<ProtectConfig, ConfigError> {
    let default = ProtectConfig::default();
    let Some(raw) = raw else { return Ok(default) };
    let mut static_arp: Vec<StaticBinding> = Vec::with_capacity(raw.static_arp.len());
    for s in raw.static_arp {
        let ip: Ipv4Addr = s.ip.get_ref().parse().map_err(|_| {
            src.error(
                s.ip.span(),
                format!("static_arp ip: `{}` is not an IPv4 address", s.ip.get_ref()),
            )
        })?;
        let mac = parse_mac(s.mac.get_ref())
            .filter(|m| m.is_unicast())
            .ok_or_else(|| {
                src.error(
                    s.mac.span(),
                    format!("static_arp mac: `{}` is not a unicast MAC", s.mac.get_ref()),
                )
            })?;
        let index = ports
            .iter()
            .position(|p| &p.ifname == s.port.get_ref())
            .ok_or_else(|| {
                src.error(
                    s.port.span(),
                    format!("static_arp port: no [[port]] `{}`", s.port.get_ref()),
                )
            })?;
        if static_arp.iter().any(|b| b.ip == ip) {
            return Err(src.error(s.ip.span(), format!("static_arp: {ip} is bound twice")));
        }
        static_arp.push(StaticBinding {
            ip,
            mac,
            // `Config::from_toml_str` refuses more than u16::MAX ports.
            port: PortId(u16::try_from(index).unwrap_or(u16::MAX)),
        });
    }
    Ok(ProtectConfig {
        host: limits(src, raw.host, "host", default.host)?,
        trunk: limits(src, raw.trunk, "trunk", default.trunk)?,
        control_budget: rate(
            src,
            raw.control_budget,
            "protect.control_budget",
            default.control_budget,
        )?,
        arp_guard: raw.arp_guard.unwrap_or(default.arp_guard),
        arp_reprobe_timeout: src.duration(
            raw.arp_reprobe_timeout,
            "protect.arp_reprobe_timeout",
            default.arp_reprobe_timeout,
        )?,
        static_arp,
    })
}

#[derive(serde::Serialize)]
struct RateView {
    rate: u32,
    burst: u32,
}

impl From<Rate> for RateView {
    fn from(rate: Rate) -> RateView {
        RateView {
            rate: rate.per_second,
            burst: rate.burst,
        }
    }
}

#[derive(serde::Serialize)]
struct LimitsView {
    control: RateView,
    arp: RateView,
    arp_probes: RateView,
    connection_share_percent: u8,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_setups_in_progress: Option<usize>,
    pending_share_percent: u8,
}

impl From<PortLimits> for LimitsView {
    fn from(limits: PortLimits) -> LimitsView {
        LimitsView {
            control: limits.control.into(),
            arp: limits.arp.into(),
            arp_probes: limits.arp_probes.into(),
            connection_share_percent: limits.connection_share_percent,
            max_setups_in_progress: limits.max_setups_in_progress,
            pending_share_percent: limits.pending_share_percent,
        }
    }
}

#[derive(serde::Serialize)]
struct StaticView<'a> {
    ip: Ipv4Addr,
    mac: String,
    port: &'a str,
}

/// `[protect]` in the file's own spelling.
#[derive(serde::Serialize)]
pub(super) struct ProtectView<'a> {
    arp_guard: bool,
    arp_reprobe_timeout: String,
    control_budget: RateView,
    host: LimitsView,
    trunk: LimitsView,
    static_arp: Vec<StaticView<'a>>,
}

impl<'a> ProtectView<'a> {
    pub(super) fn new(protect: &ProtectConfig, ports: &'a [PortSpec]) -> ProtectView<'a> {
        ProtectView {
            arp_guard: protect.arp_guard,
            arp_reprobe_timeout: format_duration(protect.arp_reprobe_timeout),
            control_budget: protect.control_budget.into(),
            host: protect.host.into(),
            trunk: protect.trunk.into(),
            static_arp: protect
                .static_arp
                .iter()
                .map(|b| StaticView {
                    ip: b.ip,
                    mac: b.mac.to_string(),
                    port: ports
                        .get(usize::from(b.port.0))
                        .map_or("", |p| p.ifname.as_str()),
                })
                .collect(),
        }
    }
}
