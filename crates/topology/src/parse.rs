//! From TOML text to a validated [`Topology`]: the raw tables are read with their spans
//! (`toml::Spanned`) — straight from the parser's events ([`events`]) for the plain files we
//! write, else by serde over toml's document tree — then the checks below turn spans into
//! `line:column` for every error. The [`Profile`] decides the rules that differ between a lab
//! topology and a network file.

use std::collections::{BTreeMap, HashMap};

use foldhash::{HashMap as FastMap, HashMapExt as _, HashSet as FastSet};
use std::net::Ipv4Addr;
use std::ops::Range;

use crate::events;
use crate::flows::{self, RawFlow};
use crate::routed;
use crate::units::{parse_duration, parse_rate, parse_size};
use crate::{Profile, SchedulerKind, UnknownUnicast};
use serde::Deserialize;
use toml::Spanned;

use crate::{
    Host, Link, LinkEnd, Location, RtlanSwitch, SharedSegment, Switch, SwitchKind, Topology,
    TopologyError, DEFAULT_SEGMENT_RATE_BPS, HOST_IFNAME,
};

/// The top-level tables of a topology file; any other top-level key is refused by
/// [`unknown_tables`] unless the caller reads it itself (see [`parse`]'s `extras`).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct RawFile {
    pub(crate) lab: Option<RawLab>,
    #[serde(default)]
    pub(crate) host: Vec<RawHost>,
    #[serde(default)]
    pub(crate) switch: Vec<RawSwitch>,
    #[serde(default)]
    pub(crate) router: Vec<RawRouter>,
    #[serde(default)]
    pub(crate) link: Vec<RawLink>,
    #[serde(default)]
    pub(crate) flow: Vec<RawFlow>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawLab {
    pub(crate) offloads: Option<bool>,
    pub(crate) ipv6: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawHost {
    pub(crate) name: Spanned<String>,
    pub(crate) ip: Option<Spanned<String>>,
    pub(crate) host_delay: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRouter {
    pub(crate) name: Spanned<String>,
    pub(crate) kind: Option<Spanned<String>>,
    pub(crate) rsvp: Option<Spanned<bool>>,
    pub(crate) ospf: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSwitch {
    pub(crate) name: Spanned<String>,
    pub(crate) kind: Option<Spanned<String>>,
    pub(crate) unknown_unicast: Option<Spanned<String>>,
    pub(crate) mgmt_ip: Option<Spanned<String>>,
    pub(crate) cycle_time: Option<Spanned<String>>,
    pub(crate) nrt_queue_bytes: Option<Spanned<u64>>,
    pub(crate) cpu: Option<Spanned<u32>>,
    pub(crate) scheduler: Option<Spanned<String>>,
    pub(crate) lateness_budget: Option<Spanned<String>>,
    pub(crate) t_mux: Option<Spanned<String>>,
    pub(crate) buffer: Option<Spanned<String>>,
    pub(crate) stp: Option<Spanned<bool>>,
    pub(crate) auth: Option<Spanned<bool>>,
    pub(crate) rate: Option<Spanned<String>>,
    pub(crate) propagation: Option<Spanned<String>>,
    pub(crate) seed: Option<Spanned<u64>>,
    pub(crate) trt: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawLink {
    pub(crate) ends: Spanned<Vec<Spanned<String>>>,
    pub(crate) rate: Option<Spanned<String>>,
    pub(crate) effective_rate: Option<Spanned<String>>,
    pub(crate) delay: Option<Spanned<String>>,
}

/// Turns byte spans into [`Location`]s.
pub(crate) struct Locator<'a> {
    text: &'a str,
    origin: &'a str,
}

impl<'a> Locator<'a> {
    /// Locates spans of `text`, named `origin` in the locations.
    pub(crate) fn new(text: &'a str, origin: &'a str) -> Self {
        Locator { text, origin }
    }

    pub(crate) fn at(&self, span: &Range<usize>) -> Location {
        let offset = span.start.min(self.text.len());
        // Spans from the TOML parser fall on character boundaries; if one did not, walk back.
        let mut start = offset;
        while !self.text.is_char_boundary(start) {
            start -= 1;
        }
        let before = &self.text[..start];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let column = before[line_start..].chars().count() + 1;
        Location {
            origin: self.origin.to_string(),
            line,
            column,
        }
    }

    /// Option `option`'s duration text `value` (units.md), an error at its location if bad.
    fn duration(
        &self,
        value: &Spanned<String>,
        option: &'static str,
    ) -> Result<std::time::Duration, TopologyError> {
        parse_duration(value.get_ref()).map_err(|e| TopologyError::BadOption {
            at: self.at(&value.span()),
            option,
            reason: e.to_string(),
        })
    }

    pub(crate) fn line(&self, span: &Range<usize>) -> usize {
        self.at(span).line
    }
}

fn valid_node_name(name: &str) -> bool {
    let b = name.as_bytes();
    (1..=8).contains(&b.len())
        && b[0].is_ascii_lowercase()
        && b[1..]
            .iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
}

/// A network file's node name: not empty, no white space or control characters.
fn valid_network_name(name: &str) -> bool {
    !name.is_empty() && !name.chars().any(|c| c.is_whitespace() || c.is_control())
}

fn valid_name(profile: Profile, name: &str) -> bool {
    match profile {
        Profile::Lab => valid_node_name(name),
        Profile::Network => valid_network_name(name),
    }
}

fn bad_name(profile: Profile, at: Location, name: &str) -> TopologyError {
    let name = name.to_string();
    match profile {
        Profile::Lab => TopologyError::BadName { at, name },
        Profile::Network => TopologyError::BadNetworkName { at, name },
    }
}

/// Parses `a.b.c.d` or `a.b.c.d/len` (default /16) and refuses addresses a host cannot have.
#[cfg(test)]
pub(super) fn parse_cidr(text: &str) -> Result<(Ipv4Addr, u8), String> {
    parse_cidr_or(text, 16)
}

/// [`parse_cidr`] with `default_len` when the text gives no length.
pub(super) fn parse_cidr_or(text: &str, default_len: u8) -> Result<(Ipv4Addr, u8), String> {
    let (addr, len) = match text.split_once('/') {
        Some((a, l)) => {
            let len: u8 = l
                .parse()
                .map_err(|_| format!("prefix length `{l}` is not a number"))?;
            (a, len)
        }
        None => (text, default_len),
    };
    let ip: Ipv4Addr = addr
        .parse()
        .map_err(|_| "not an IPv4 address (a.b.c.d or a.b.c.d/len)".to_string())?;
    if !(1..=32).contains(&len) {
        return Err(format!("prefix length {len} is not in 1..=32"));
    }
    if ip.is_unspecified() || ip.is_loopback() || ip.is_multicast() || ip.is_broadcast() {
        return Err("not a unicast address".to_string());
    }
    if len <= 30 {
        let host_bits = u32::from(ip) & (u32::MAX >> len);
        if host_bits == 0 {
            return Err(format!("it is the network address of /{len}"));
        }
        if host_bits == u32::MAX >> len {
            return Err(format!("it is the broadcast address of /{len}"));
        }
    }
    Ok((ip, len))
}

/// The `n`-th (0-based) automatic host address: 198.18.0.1 … 198.18.0.254, 198.18.1.1, … stopping
/// before 198.18.255.0/24, which is kept for switch management addresses.
fn auto_host_ip(n: usize) -> Option<Ipv4Addr> {
    let third = n / 254;
    let fourth = n % 254 + 1;
    (third < 255).then(|| Ipv4Addr::new(198, 18, third as u8, fourth as u8))
}

/// The `n`-th (0-based) automatic management address: 198.18.255.1 … 198.18.255.254.
fn auto_mgmt_ip(n: usize) -> Option<Ipv4Addr> {
    (n < 254).then(|| Ipv4Addr::new(198, 18, 255, (n + 1) as u8))
}

/// An IP address being assigned: explicit ones are checked first, then automatic ones fill the
/// gaps.
struct IpPlan {
    used: HashMap<Ipv4Addr, String>,
}

/// The addresses taken so far and by whom.
pub(crate) type Used = HashMap<Ipv4Addr, String>;

impl IpPlan {
    /// Takes `ip` for `node`; `at` (the line and column of the claim, computed only for an error)
    /// names where a duplicate was written.
    fn claim(
        &mut self,
        ip: Ipv4Addr,
        node: &str,
        at: impl FnOnce() -> Location,
    ) -> Result<(), TopologyError> {
        if let Some(other) = self.used.get(&ip) {
            return Err(TopologyError::DuplicateIp {
                at: at(),
                ip,
                other: other.clone(),
            });
        }
        self.used.insert(ip, node.to_string());
        Ok(())
    }

    fn next_free(
        &mut self,
        gen: fn(usize) -> Option<Ipv4Addr>,
        cursor: &mut usize,
    ) -> Option<Ipv4Addr> {
        loop {
            let ip = gen(*cursor)?;
            *cursor += 1;
            if !self.used.contains_key(&ip) {
                return Some(ip);
            }
        }
    }
}

/// The top-level tables this reader knows.
const TABLES: [&str; 6] = ["lab", "host", "switch", "router", "link", "flow"];

/// Reads `text` into [`RawFile`]: straight from the parser's events when the file has the
/// plain shape [`events`] takes, else with [`read_general`] (which also reports every error).
fn read_raw(text: &str, loc: &Locator<'_>, extras: &[&str]) -> Result<RawFile, TopologyError> {
    let Some(raw) = events::read(text) else {
        return read_general(text, loc, extras);
    };
    // Both readers give the same tables, spans included; debug builds (tests, fuzzing) check.
    #[cfg(debug_assertions)]
    {
        let general = read_general(text, loc, extras).map(|g| format!("{g:?}"));
        debug_assert_eq!(
            general.as_deref().ok(),
            Some(format!("{raw:?}").as_str()),
            "the event reader and the general reader disagree on {text:?}"
        );
    }
    Ok(raw)
}

/// Reads `text` into [`RawFile`] with one TOML parse into toml's document tree, then serde. A
/// syntax error is reported at the first problem in the file (the parser recovers and collects
/// every error; the earliest is the one a reader fixes first). A top-level key that is neither
/// one of [`TABLES`] nor one of `extras` (tables another reader of the same file takes, such as
/// the simulator's) is refused at the first line that opens or assigns it.
pub(crate) fn read_general(
    text: &str,
    loc: &Locator<'_>,
    extras: &[&str],
) -> Result<RawFile, TopologyError> {
    let syntax = |e: &toml::de::Error| TopologyError::Syntax {
        at: loc.at(&e.span().unwrap_or(0..0)),
        message: e.message().trim().to_string(),
    };
    let (doc, errors) = toml::de::DeTable::parse_recoverable(text);
    if let Some(first) = errors
        .iter()
        .min_by_key(|e| e.span().map_or(0, |s| s.start))
    {
        return Err(syntax(first));
    }
    let unknown = doc.get_ref().keys().find(|k| {
        let k: &str = k.get_ref();
        !TABLES.contains(&k) && !extras.contains(&k)
    });
    let Some(key) = unknown else {
        return RawFile::deserialize(toml::de::Deserializer::from(doc)).map_err(|e| syntax(&e));
    };
    let key: &str = key.get_ref();
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let t = line.trim_start().trim_start_matches('[').trim_start();
        if t.strip_prefix(key).is_some_and(|rest| {
            let rest = rest.trim_start();
            rest.starts_with(']') || rest.starts_with('=') || rest.starts_with('.')
        }) {
            offset += line.len() - line.trim_start().len();
            break;
        }
        offset += line.len();
    }
    let mut expected: Vec<&str> = TABLES.to_vec();
    expected.extend_from_slice(extras);
    Err(TopologyError::Syntax {
        at: loc.at(&(offset..offset)),
        message: format!(
            "unknown table `{key}`, expected one of `{}`",
            expected.join("`, `")
        ),
    })
}

/// The location of byte `offset` of `text`, for readers of other tables of a topology file.
pub(crate) fn locate(text: &str, origin: &str, offset: usize) -> Location {
    Locator::new(text, origin).at(&(offset..offset))
}

/// Parses and validates a topology; top-level tables named in `extras` are left to the caller.
pub(super) fn parse(
    text: &str,
    origin: &str,
    extras: &[&str],
    profile: Profile,
) -> Result<Topology, TopologyError> {
    let loc = Locator::new(text, origin);
    let raw = read_raw(text, &loc, extras)?;
    if raw.host.is_empty() && raw.switch.is_empty() && raw.router.is_empty() {
        return Err(TopologyError::Empty {
            at: loc.at(&(0..0)),
        });
    }
    if let (Profile::Network, Some(r)) = (profile, raw.router.first()) {
        return Err(TopologyError::RoutersNotAnalysed {
            at: loc.at(&r.name.span()),
        });
    }
    let routed = !raw.router.is_empty();

    // Names: valid and unique across hosts, switches and routers.
    let mut defined: BTreeMap<String, Range<usize>> = BTreeMap::new();
    let names = raw
        .host
        .iter()
        .map(|h| &h.name)
        .chain(raw.switch.iter().map(|s| &s.name))
        .chain(raw.router.iter().map(|r| &r.name));
    for name in names {
        if !valid_name(profile, name.get_ref()) {
            return Err(bad_name(profile, loc.at(&name.span()), name.get_ref()));
        }
        if let Some(first) = defined.get(name.get_ref()) {
            return Err(TopologyError::DuplicateName {
                at: loc.at(&name.span()),
                name: name.get_ref().clone(),
                first_line: loc.line(first),
            });
        }
        defined.insert(name.get_ref().clone(), name.span());
    }

    // Explicit addresses are claimed in file order, so a duplicate is reported at its second use.
    let mut explicit = Vec::new();
    let mut switches = Vec::with_capacity(raw.switch.len());
    let mut mgmt_pending = Vec::new();
    for (i, s) in raw.switch.iter().enumerate() {
        let (switch, needs_auto_ip) = resolve_switch(s, &loc, &mut explicit, profile, routed)?;
        if needs_auto_ip {
            mgmt_pending.push(i);
        }
        switches.push(switch);
    }
    let mut hosts = Vec::with_capacity(raw.host.len());
    let mut host_pending = Vec::new();
    for (i, h) in raw.host.iter().enumerate() {
        let (ip, prefix_len) = match &h.ip {
            Some(text) => {
                let (ip, len) =
                    parse_cidr_or(text.get_ref(), default_len(routed)).map_err(|reason| {
                        TopologyError::BadIp {
                            at: loc.at(&text.span()),
                            text: text.get_ref().clone(),
                            reason,
                        }
                    })?;
                explicit.push((text.span(), ip, h.name.get_ref().clone()));
                (ip, len)
            }
            None => {
                host_pending.push(i);
                (Ipv4Addr::UNSPECIFIED, default_len(routed))
            }
        };
        let host_delay = h
            .host_delay
            .as_ref()
            .map(|v| loc.duration(v, "host_delay"))
            .transpose()?;
        hosts.push(Host {
            name: h.name.get_ref().clone(),
            ip,
            prefix_len,
            host_delay,
            gateway: None,
        });
    }
    let kinds = routed::resolve_kinds(&raw.router, &loc)?;
    let rsvp = routed::resolve_rsvp(&raw.router, &kinds, &loc)?;
    let ospf = routed::resolve_ospf(&raw.router, &loc)?;
    let mut plan = IpPlan {
        used: HashMap::new(),
    };
    explicit.sort_by_key(|(span, _, _)| span.start);
    for (span, ip, node) in explicit {
        plan.claim(ip, &node, || loc.at(&span))?;
    }
    if routed {
        let links = resolve_links(&raw, &loc, &defined, profile)?;
        let plan = routed::Plan {
            raw: &raw,
            loc: &loc,
            used: plan.used,
            ospf: &ospf,
            kinds: &kinds,
            rsvp: &rsvp,
        };
        let (routers, segments) = plan.assign(
            &mut hosts,
            &host_pending,
            &mut switches,
            &mgmt_pending,
            &links,
        )?;
        let flows = flows::resolve(&raw.flow, &loc, &switches, &links)?;
        return Ok(Topology {
            origin: origin.to_string(),
            offloads: raw.lab.as_ref().and_then(|l| l.offloads).unwrap_or(false),
            ipv6: raw.lab.as_ref().and_then(|l| l.ipv6).unwrap_or(false),
            hosts,
            switches,
            routers,
            segments,
            links,
            flows,
        });
    }
    let mut cursor = 0;
    for i in mgmt_pending {
        let ip = plan.next_free(auto_mgmt_ip, &mut cursor).ok_or_else(|| {
            TopologyError::AddressesExhausted {
                at: loc.at(&raw.switch[i].name.span()),
                name: switches[i].name.clone(),
                subnet: "198.18.255.0/24".to_string(),
            }
        })?;
        plan.claim(ip, &switches[i].name, || loc.at(&raw.switch[i].name.span()))?;
        if let SwitchKind::Rtlan(opts) = &mut switches[i].kind {
            opts.mgmt_ip = ip;
        }
    }
    let mut cursor = 0;
    for i in host_pending {
        let ip = plan.next_free(auto_host_ip, &mut cursor).ok_or_else(|| {
            TopologyError::AddressesExhausted {
                at: loc.at(&raw.host[i].name.span()),
                name: hosts[i].name.clone(),
                subnet: "198.18.0.0/16".to_string(),
            }
        })?;
        plan.claim(ip, &hosts[i].name, || loc.at(&raw.host[i].name.span()))?;
        hosts[i].ip = ip;
    }

    let links = resolve_links(&raw, &loc, &defined, profile)?;
    let flows = flows::resolve(&raw.flow, &loc, &switches, &links)?;
    Ok(Topology {
        origin: origin.to_string(),
        offloads: raw.lab.as_ref().and_then(|l| l.offloads).unwrap_or(false),
        ipv6: raw.lab.as_ref().and_then(|l| l.ipv6).unwrap_or(false),
        hosts,
        switches,
        routers: Vec::new(),
        segments: Vec::new(),
        links,
        flows,
    })
}

/// The prefix length of a host address written without one: /16 in a flat lab, /24 (a
/// segment's subnet) with routers.
fn default_len(routed: bool) -> u8 {
    if routed {
        24
    } else {
        16
    }
}

/// Resolves one `[[switch]]`; the bool says whether it still needs an automatic management IP.
fn resolve_switch(
    s: &RawSwitch,
    loc: &Locator<'_>,
    explicit: &mut Vec<(Range<usize>, Ipv4Addr, String)>,
    profile: Profile,
    routed: bool,
) -> Result<(Switch, bool), TopologyError> {
    let name = s.name.get_ref().clone();
    if let Some(k) = &s.kind {
        if profile == Profile::Network {
            let at = loc.at(&k.span());
            match k.get_ref().as_str() {
                "segment" => return Err(TopologyError::SegmentsNotAnalysed { at }),
                "rether-bridge" => return Err(TopologyError::RetherBridgesNotAnalysed { at }),
                _ => {}
            }
        }
    }
    let t_mux = s
        .t_mux
        .as_ref()
        .map(|v| loc.duration(v, "t_mux"))
        .transpose()?;
    let buffer_bytes = match &s.buffer {
        Some(v) => Some(
            parse_size(v.get_ref()).map_err(|e| TopologyError::BadOption {
                at: loc.at(&v.span()),
                option: "buffer",
                reason: e.to_string(),
            })?,
        ),
        None => None,
    };
    if profile == Profile::Network {
        // A switch is either an off-the-shelf FIFO switch (`t_mux`, `buffer`) or an rtlan
        // real-time switch (`scheduler`; its buffer defaults to the switch's real-time memory).
        if let (Some(_), Some(sched)) = (&t_mux, &s.scheduler) {
            return Err(TopologyError::BadOption {
                at: loc.at(&sched.span()),
                option: "scheduler",
                reason: "a switch has either `t_mux` (a FIFO switch) or a `scheduler` (an rtlan \
                         real-time switch), not both"
                    .to_string(),
            });
        }
        let fifo = s.scheduler.is_none();
        for (field, missing) in [
            ("t_mux", fifo && t_mux.is_none()),
            ("buffer", fifo && buffer_bytes.is_none()),
        ] {
            if missing {
                return Err(TopologyError::Missing {
                    at: loc.at(&s.name.span()),
                    table: "[[switch]]",
                    field,
                });
            }
        }
    }
    let kind = match &s.kind {
        None => "rtlan",
        Some(k) => match k.get_ref().as_str() {
            kind @ ("rtlan" | "linux-bridge" | "segment" | "rether-bridge") => kind,
            other => {
                return Err(TopologyError::UnknownKind {
                    at: loc.at(&k.span()),
                    kind: other.to_string(),
                })
            }
        },
    };
    if kind == "segment" {
        return resolve_segment(s, loc).map(|switch| (switch, false));
    }
    let segment_only = [
        ("rate", s.rate.as_ref().map(|v| v.span())),
        ("propagation", s.propagation.as_ref().map(|v| v.span())),
        ("seed", s.seed.as_ref().map(|v| v.span())),
        ("trt", s.trt.as_ref().map(|v| v.span())),
    ];
    if let Some((option, Some(span))) = segment_only.into_iter().find(|(_, sp)| sp.is_some()) {
        return Err(TopologyError::OptionNotForKind {
            at: loc.at(&span),
            option,
            kinds: "\"segment\"",
        });
    }
    if kind == "linux-bridge" || kind == "rether-bridge" {
        let rtlan_only = [
            (
                "unknown_unicast",
                s.unknown_unicast.as_ref().map(|v| v.span()),
            ),
            ("mgmt_ip", s.mgmt_ip.as_ref().map(|v| v.span())),
            ("cycle_time", s.cycle_time.as_ref().map(|v| v.span())),
            (
                "nrt_queue_bytes",
                s.nrt_queue_bytes.as_ref().map(|v| v.span()),
            ),
            ("cpu", s.cpu.as_ref().map(|v| v.span())),
            ("scheduler", s.scheduler.as_ref().map(|v| v.span())),
            (
                "lateness_budget",
                s.lateness_budget.as_ref().map(|v| v.span()),
            ),
            ("stp", s.stp.as_ref().map(|v| v.span())),
            ("auth", s.auth.as_ref().map(|v| v.span())),
        ];
        if let Some((option, Some(span))) = rtlan_only.into_iter().find(|(_, sp)| sp.is_some()) {
            return Err(TopologyError::OptionNotForKind {
                at: loc.at(&span),
                option,
                kinds: "\"rtlan\"",
            });
        }
        if kind == "rether-bridge" {
            return resolve_rether_bridge(s, loc).map(|switch| (switch, false));
        }
        return Ok((
            Switch {
                name,
                kind: SwitchKind::LinuxBridge,
                t_mux,
                buffer_bytes,
            },
            false,
        ));
    }
    let unknown_unicast = match &s.unknown_unicast {
        None => None,
        Some(v) => Some(match v.get_ref().as_str() {
            "arp-probe" => UnknownUnicast::ArpProbe,
            "flood" => UnknownUnicast::Flood,
            other => {
                return Err(TopologyError::BadOption {
                    at: loc.at(&v.span()),
                    option: "unknown_unicast",
                    reason: format!("`{other}` (expected \"arp-probe\" or \"flood\")"),
                })
            }
        }),
    };
    let cycle_time = match &s.cycle_time {
        None => None,
        Some(v) => {
            let d = loc.duration(v, "cycle_time")?;
            if d.is_zero() {
                return Err(TopologyError::BadOption {
                    at: loc.at(&v.span()),
                    option: "cycle_time",
                    reason: "must be greater than zero".to_string(),
                });
            }
            Some(d)
        }
    };
    let scheduler = match &s.scheduler {
        None => None,
        Some(v) => Some(match v.get_ref().as_str() {
            "cyclic" => SchedulerKind::Cyclic,
            "wheel" => SchedulerKind::Wheel,
            "qsr" => SchedulerKind::Qsr,
            other => {
                return Err(TopologyError::BadOption {
                    at: loc.at(&v.span()),
                    option: "scheduler",
                    reason: format!("`{other}` (expected \"cyclic\", \"wheel\" or \"qsr\")"),
                })
            }
        }),
    };
    let lateness_budget = s
        .lateness_budget
        .as_ref()
        .map(|v| loc.duration(v, "lateness_budget"))
        .transpose()?;
    let nrt_queue_bytes = match &s.nrt_queue_bytes {
        Some(v) if *v.get_ref() == 0 => {
            return Err(TopologyError::BadOption {
                at: loc.at(&v.span()),
                option: "nrt_queue_bytes",
                reason: "must be greater than zero".to_string(),
            })
        }
        v => v.as_ref().map(|v| *v.get_ref()),
    };
    let (mgmt_ip, mgmt_prefix_len, auto) = match &s.mgmt_ip {
        Some(text) => {
            let (ip, len) =
                parse_cidr_or(text.get_ref(), default_len(routed)).map_err(|reason| {
                    TopologyError::BadIp {
                        at: loc.at(&text.span()),
                        text: text.get_ref().clone(),
                        reason,
                    }
                })?;
            explicit.push((text.span(), ip, name.clone()));
            (ip, len, false)
        }
        None => (Ipv4Addr::UNSPECIFIED, default_len(routed), true),
    };
    Ok((
        Switch {
            name,
            kind: SwitchKind::Rtlan(RtlanSwitch {
                mgmt_ip,
                mgmt_prefix_len,
                unknown_unicast,
                cycle_time,
                nrt_queue_bytes,
                cpu: s.cpu.as_ref().map(|v| *v.get_ref()),
                scheduler,
                lateness_budget,
                stp: s.stp.as_ref().is_some_and(|v| *v.get_ref()),
                auth: s.auth.as_ref().is_some_and(|v| *v.get_ref()),
            }),
            t_mux,
            buffer_bytes,
        },
        auto,
    ))
}

/// Resolves a `kind = "rether-bridge"` switch once the options of segments and rtlan switches
/// are refused: the network calculus's `t_mux` and `buffer` are refused too (a bridge has no
/// options; each port takes its segment's rate and TRT).
fn resolve_rether_bridge(s: &RawSwitch, loc: &Locator<'_>) -> Result<Switch, TopologyError> {
    let calculus = [
        ("t_mux", s.t_mux.as_ref().map(|v| v.span())),
        ("buffer", s.buffer.as_ref().map(|v| v.span())),
    ];
    if let Some((option, Some(span))) = calculus.into_iter().find(|(_, sp)| sp.is_some()) {
        return Err(TopologyError::OptionNotForKind {
            at: loc.at(&span),
            option,
            kinds: "\"rtlan\" and \"linux-bridge\"",
        });
    }
    Ok(Switch {
        name: s.name.get_ref().clone(),
        kind: SwitchKind::RetherBridge,
        t_mux: None,
        buffer_bytes: None,
    })
}

/// Resolves a `kind = "segment"` switch: its rate (default [`DEFAULT_SEGMENT_RATE_BPS`]),
/// propagation delay and seed; every option of the other kinds is refused.
fn resolve_segment(s: &RawSwitch, loc: &Locator<'_>) -> Result<Switch, TopologyError> {
    let others = [
        (
            "unknown_unicast",
            s.unknown_unicast.as_ref().map(|v| v.span()),
        ),
        ("mgmt_ip", s.mgmt_ip.as_ref().map(|v| v.span())),
        ("cycle_time", s.cycle_time.as_ref().map(|v| v.span())),
        (
            "nrt_queue_bytes",
            s.nrt_queue_bytes.as_ref().map(|v| v.span()),
        ),
        ("cpu", s.cpu.as_ref().map(|v| v.span())),
        ("scheduler", s.scheduler.as_ref().map(|v| v.span())),
        (
            "lateness_budget",
            s.lateness_budget.as_ref().map(|v| v.span()),
        ),
        ("stp", s.stp.as_ref().map(|v| v.span())),
        ("auth", s.auth.as_ref().map(|v| v.span())),
    ];
    if let Some((option, Some(span))) = others.into_iter().find(|(_, sp)| sp.is_some()) {
        return Err(TopologyError::OptionNotForKind {
            at: loc.at(&span),
            option,
            kinds: "\"rtlan\"",
        });
    }
    let calculus = [
        ("t_mux", s.t_mux.as_ref().map(|v| v.span())),
        ("buffer", s.buffer.as_ref().map(|v| v.span())),
    ];
    if let Some((option, Some(span))) = calculus.into_iter().find(|(_, sp)| sp.is_some()) {
        return Err(TopologyError::OptionNotForKind {
            at: loc.at(&span),
            option,
            kinds: "\"rtlan\" and \"linux-bridge\"",
        });
    }
    let rate_bps = match &s.rate {
        None => DEFAULT_SEGMENT_RATE_BPS,
        Some(r) => {
            let bps = parse_rate(r.get_ref()).map_err(|source| TopologyError::BadRate {
                at: loc.at(&r.span()),
                source: Box::new(source),
            })?;
            if bps == 0 {
                return Err(TopologyError::BadOption {
                    at: loc.at(&r.span()),
                    option: "rate",
                    reason: "must be greater than zero".to_string(),
                });
            }
            bps
        }
    };
    let propagation = s
        .propagation
        .as_ref()
        .map(|v| loc.duration(v, "propagation"))
        .transpose()?;
    let trt = match &s.trt {
        None => None,
        Some(v) => {
            let d = loc.duration(v, "trt")?;
            if d.is_zero() || d > std::time::Duration::from_secs(1) {
                return Err(TopologyError::BadOption {
                    at: loc.at(&v.span()),
                    option: "trt",
                    reason: "the token rotation time is above 0 and at most 1s".to_string(),
                });
            }
            Some(d)
        }
    };
    Ok(Switch {
        name: s.name.get_ref().clone(),
        kind: SwitchKind::Segment(SharedSegment {
            rate_bps,
            propagation,
            seed: s.seed.as_ref().map(|v| *v.get_ref()),
            trt,
        }),
        t_mux: None,
        buffer_bytes: None,
    })
}

/// Union-find over node names, to refuse loops (and, with routers, to find segments).
#[derive(Default)]
pub(crate) struct Components {
    parent: HashMap<String, String>,
}

impl Components {
    pub(crate) fn root(&mut self, node: &str) -> String {
        let mut cur = node.to_string();
        while let Some(p) = self.parent.get(&cur) {
            if *p == cur {
                break;
            }
            cur = p.clone();
        }
        cur
    }

    /// Joins the components of `a` and `b`; false if they were already joined.
    pub(crate) fn join(&mut self, a: &str, b: &str) -> bool {
        let (ra, rb) = (self.root(a), self.root(b));
        if ra == rb {
            return false;
        }
        self.parent.insert(ra, rb);
        true
    }
}

fn resolve_links<'a>(
    raw: &'a RawFile,
    loc: &Locator<'_>,
    defined: &BTreeMap<String, Range<usize>>,
    profile: Profile,
) -> Result<Vec<Link>, TopologyError> {
    // Indexes, not scans: every link looks its ends up here (a dozen lookups of short names per
    // link, hence foldhash rather than SipHash; these maps are never iterated).
    let switch_by_name: FastMap<&str, &RawSwitch> = raw
        .switch
        .iter()
        .map(|s| (s.name.get_ref().as_str(), s))
        .collect();
    let routers: FastSet<&str> = raw
        .router
        .iter()
        .map(|r| r.name.get_ref().as_str())
        .collect();
    let is_switch = |n: &str| switch_by_name.contains_key(n);
    let is_router = |n: &str| routers.contains(n);
    let is_bridge = |n: &str| {
        switch_by_name
            .get(n)
            .and_then(|s| s.kind.as_ref())
            .is_some_and(|k| k.get_ref() == "rether-bridge")
    };
    // The rate of each shared segment (validated in `resolve_segment`).
    let segment_rate = |n: &str| {
        let s = switch_by_name.get(n)?;
        let kind = s.kind.as_ref()?;
        (kind.get_ref() == "segment").then(|| {
            s.rate
                .as_ref()
                .and_then(|r| parse_rate(r.get_ref()).ok())
                .unwrap_or(DEFAULT_SEGMENT_RATE_BPS)
        })
    };
    // Loops are safe only when every switch runs the spanning tree (docs/stp.md): a kernel
    // bridge here has STP off, an rtlan switch has it when `stp = true`.
    let loops_allowed = !raw.switch.is_empty()
        && raw.switch.iter().all(|s| {
            s.kind.as_ref().is_none_or(|k| k.get_ref() == "rtlan")
                && s.stp.as_ref().is_some_and(|v| *v.get_ref())
        });
    // Keyed by names borrowed from the file: no string copies per link.
    let nodes = raw.host.len() + raw.switch.len() + raw.router.len();
    let mut host_link: FastMap<&str, Range<usize>> = FastMap::with_capacity(nodes);
    let mut next_port: FastMap<&str, usize> = FastMap::with_capacity(nodes);
    let mut pairs: FastMap<(&str, &str), Range<usize>> = FastMap::with_capacity(raw.link.len());
    // (bridge, segment) → its link's span: one port per segment.
    let mut bridge_ports: FastMap<(&str, &str), Range<usize>> = FastMap::new();
    let mut components = Components {
        parent: HashMap::new(),
    };
    let mut links = Vec::with_capacity(raw.link.len());
    for l in &raw.link {
        let ends = l.ends.get_ref();
        if ends.len() != 2 {
            return Err(TopologyError::EndCount {
                at: loc.at(&l.ends.span()),
                count: ends.len(),
            });
        }
        for end in ends {
            if defined.contains_key(end.get_ref()) {
                continue;
            }
            // A network file's hosts may be implied by link ends; the lab declares every node.
            match profile {
                Profile::Lab => {
                    return Err(TopologyError::UnknownEnd {
                        at: loc.at(&end.span()),
                        name: end.get_ref().clone(),
                    })
                }
                Profile::Network if !valid_network_name(end.get_ref()) => {
                    return Err(bad_name(profile, loc.at(&end.span()), end.get_ref()))
                }
                Profile::Network => {}
            }
        }
        let (a, b) = (ends[0].get_ref(), ends[1].get_ref());
        if a == b {
            return Err(TopologyError::SelfLink {
                at: loc.at(&l.ends.span()),
                name: a.clone(),
            });
        }
        // Keys are per link (docs/protocol.md §8): two rtlan switches on one link either both
        // authenticate or neither does, or each would drop the other's control messages.
        let auth_of = |n: &str| {
            switch_by_name
                .get(n)
                .filter(|s| s.kind.as_ref().is_none_or(|k| k.get_ref() == "rtlan"))
                .map(|s| s.auth.as_ref().is_some_and(|v| *v.get_ref()))
        };
        if let (Some(auth_a), Some(auth_b)) = (auth_of(a), auth_of(b)) {
            if auth_a != auth_b {
                let (on, off) = if auth_a { (a, b) } else { (b, a) };
                return Err(TopologyError::AuthMismatch {
                    at: loc.at(&l.ends.span()),
                    on: on.clone(),
                    off: off.clone(),
                });
            }
        }
        // A RETHER bridge is a station on each segment it joins (RETHER §2.5): linked to
        // segments only, once to each. Checked before loops, which a second link also closes.
        for (bridge, other) in [(a, b), (b, a)] {
            if !is_bridge(bridge) {
                continue;
            }
            if segment_rate(other).is_none() {
                let what = if is_bridge(other) {
                    "rether-bridge"
                } else if is_switch(other) {
                    "switch"
                } else if is_router(other) {
                    "router"
                } else {
                    "host"
                };
                return Err(TopologyError::RetherBridgeLink {
                    at: loc.at(&l.ends.span()),
                    bridge: bridge.clone(),
                    what,
                    other: other.clone(),
                });
            }
            if let Some(first) = bridge_ports.get(&(bridge.as_str(), other.as_str())) {
                return Err(TopologyError::RetherBridgeTwoPorts {
                    at: loc.at(&l.ends.span()),
                    bridge: bridge.clone(),
                    segment: other.clone(),
                    first_line: loc.line(first),
                });
            }
            bridge_ports.insert((bridge.as_str(), other.as_str()), l.ends.span());
        }
        match profile {
            Profile::Lab => {
                for end in ends {
                    if !is_switch(end.get_ref()) && !is_router(end.get_ref()) {
                        if let Some(first) = host_link.get(end.get_ref().as_str()) {
                            return Err(TopologyError::HostHasTwoLinks {
                                at: loc.at(&end.span()),
                                name: end.get_ref().clone(),
                                first_line: loc.line(first),
                            });
                        }
                        host_link.insert(end.get_ref().as_str(), end.span());
                    }
                }
                // A router ends every Ethernet segment: loops through routers are IP routing's
                // business, not a broadcast storm (`routed` refuses two ports of one router on
                // one segment).
                let through_router = is_router(a) || is_router(b);
                if !through_router && !components.join(a, b) && !loops_allowed {
                    return Err(TopologyError::Loop {
                        at: loc.at(&l.ends.span()),
                        a: a.clone(),
                        b: b.clone(),
                    });
                }
            }
            Profile::Network => {
                if !is_switch(a) && !is_switch(b) {
                    return Err(TopologyError::HostToHost {
                        at: loc.at(&l.ends.span()),
                        a: a.clone(),
                        b: b.clone(),
                    });
                }
                let key = if a < b {
                    (a.as_str(), b.as_str())
                } else {
                    (b.as_str(), a.as_str())
                };
                if let Some(first) = pairs.get(&key) {
                    return Err(TopologyError::DuplicateLink {
                        at: loc.at(&l.ends.span()),
                        a: a.clone(),
                        b: b.clone(),
                        first_line: loc.line(first),
                    });
                }
                pairs.insert(key, l.ends.span());
                for end in ends {
                    host_link
                        .entry(end.get_ref().as_str())
                        .or_insert_with(|| end.span());
                }
            }
        }
        // A segment's stations are hosts and RETHER bridges, and their links run at the
        // segment's rate.
        let segment_end = [(a, b), (b, a)]
            .into_iter()
            .find_map(|(seg, other)| Some((seg, other, segment_rate(seg)?)));
        if let Some((seg, other, seg_rate)) = segment_end {
            let what = if segment_rate(other).is_some() {
                Some("segment")
            } else if is_bridge(other) {
                None
            } else if is_switch(other) {
                Some("switch")
            } else if is_router(other) {
                Some("router")
            } else {
                None
            };
            if let Some(what) = what {
                return Err(TopologyError::SegmentStation {
                    at: loc.at(&l.ends.span()),
                    segment: seg.clone(),
                    what,
                    other: other.clone(),
                });
            }
            if let Some(r) = &l.rate {
                if parse_rate(r.get_ref()).ok() != Some(seg_rate) {
                    return Err(TopologyError::BadOption {
                        at: loc.at(&r.span()),
                        option: "rate",
                        reason: format!(
                            "a link to segment `{seg}` runs at the segment's rate ({seg_rate} bit/s); \
                             leave `rate` out or set it on the segment"
                        ),
                    });
                }
            }
            if let Some(d) = &l.delay {
                return Err(TopologyError::BadOption {
                    at: loc.at(&d.span()),
                    option: "delay",
                    reason: format!(
                        "a link to segment `{seg}` has none: the segment's `propagation` is its delay"
                    ),
                });
            }
        }
        let rate_bps = match &l.rate {
            _ if segment_end.is_some() => segment_end.map(|(_, _, r)| r),
            None if profile == Profile::Network => {
                return Err(TopologyError::Missing {
                    at: loc.at(&l.ends.span()),
                    table: "[[link]]",
                    field: "rate",
                })
            }
            None => None,
            Some(r) => Some(
                parse_rate(r.get_ref()).map_err(|source| TopologyError::BadRate {
                    at: loc.at(&r.span()),
                    source: Box::new(source),
                })?,
            ),
        };
        let effective_rate_bps = match &l.effective_rate {
            None => None,
            Some(e) => {
                let bad = |reason: String| TopologyError::BadOption {
                    at: loc.at(&e.span()),
                    option: "effective_rate",
                    reason,
                };
                let v = parse_rate(e.get_ref()).map_err(|err| bad(err.to_string()))?;
                // An rtlan real-time switch books wire bits at the line rate (docs/bwm.md).
                let scheduled =
                    |n: &str| switch_by_name.get(n).is_some_and(|s| s.scheduler.is_some());
                if profile == Profile::Network && (scheduled(a) || scheduled(b)) {
                    return Err(bad(
                        "an rtlan switch (with a `scheduler`) books wire bits at the line `rate`"
                            .to_string(),
                    ));
                }
                match rate_bps {
                    None => return Err(bad("needs the link's `rate`".to_string())),
                    Some(r) if v > r => return Err(bad("exceeds rate".to_string())),
                    Some(_) => Some(v),
                }
            }
        };
        let delay = match &l.delay {
            None => std::time::Duration::ZERO,
            Some(d) => loc.duration(d, "delay")?,
        };
        let mut end_of = |node: &'a str| {
            let n = next_port.entry(node).or_insert(0);
            *n += 1;
            let ifname = match (is_switch(node) || is_router(node), *n - 1) {
                (true, k) => format!("p{k}"),
                (false, 0) => HOST_IFNAME.to_string(),
                (false, k) => format!("eth{k}"),
            };
            LinkEnd {
                node: node.to_string(),
                ifname,
            }
        };
        links.push(Link {
            ends: [end_of(a), end_of(b)],
            rate_bps,
            effective_rate_bps,
            delay,
        });
    }
    for h in &raw.host {
        if !host_link.contains_key(h.name.get_ref().as_str()) {
            return Err(TopologyError::HostWithoutLink {
                at: loc.at(&h.name.span()),
                name: h.name.get_ref().clone(),
            });
        }
    }
    for s in &raw.switch {
        if !next_port.contains_key(s.name.get_ref().as_str()) {
            return Err(TopologyError::SwitchWithoutLink {
                at: loc.at(&s.name.span()),
                name: s.name.get_ref().clone(),
            });
        }
    }
    for s in raw.switch.iter().filter(|s| is_bridge(s.name.get_ref())) {
        if next_port.get(s.name.get_ref().as_str()) == Some(&1) {
            return Err(TopologyError::RetherBridgeOneSegment {
                at: loc.at(&s.name.span()),
                name: s.name.get_ref().clone(),
            });
        }
    }
    for r in &raw.router {
        if !next_port.contains_key(r.name.get_ref().as_str()) {
            return Err(TopologyError::RouterWithoutLink {
                at: loc.at(&r.name.span()),
                name: r.name.get_ref().clone(),
            });
        }
    }
    Ok(links)
}
