//! The network file read by `rtlan analyze` and the bandwidth manager (issue 5 item 2): switches
//! with their multiplexing delay `t_mux` and buffer memory (seed 004 §2.2), links with their
//! (effective) rates, and flows with their T-SPECs (seed 004 §3: `b = r·Ts + M`). Format: see
//! `docs/analyze.md`. Every error names `line:column`.

use std::collections::{HashMap, HashSet};
use std::ops::Range;

use serde::Deserialize;
use toml::Spanned;

use crate::rational::Q;
use crate::units::{parse_duration, parse_rate, parse_size};

/// Errors from reading a network file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NetfileError {
    /// TOML syntax error, unknown key, missing key or wrong type.
    #[error("{line}:{column}: {message}")]
    Syntax {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// A value is well-formed TOML but not acceptable.
    #[error("{line}:{column}: {message}")]
    Invalid {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What is wrong.
        message: String,
    },
}

/// A switch: name, multiplexing delay `t_mux` (s) and shared buffer memory (bits).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwitchSpec {
    /// Name, unique among nodes.
    pub name: String,
    /// Multiplexing delay `t_mux`, seconds.
    pub t_mux: Q,
    /// Buffer memory, bits.
    pub buffer: Q,
}

/// A full-duplex link; `effective_rate` defaults to `rate`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkSpec {
    /// The two node names.
    pub ends: [String; 2],
    /// Line rate, bit/s.
    pub rate: Q,
    /// Rate after framing overhead, bit/s: the `C` of seed 004.
    pub effective_rate: Q,
}

/// A flow with its T-SPEC `(C, M, r, b)`; the peak `C` comes from the links it crosses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowSpec {
    /// Name, unique among flows.
    pub name: String,
    /// Node names from sending host through switches to receiving host.
    pub path: Vec<String>,
    /// Token rate `r`, bit/s.
    pub rate: Q,
    /// Maximum packet size `M`, bits.
    pub max_packet: Q,
    /// Bucket size `b`, bits (`r·Ts + M` when given as `shaping_interval`).
    pub burst: Q,
    /// Host delay `t_os` added to the end-to-end bound, seconds (default 0).
    pub host_delay: Q,
    /// Optional end-to-end delay the flow requires, seconds.
    pub deadline: Option<Q>,
}

/// A host's address (`[[host]]`): lets clients of the bandwidth manager name a host by IP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostSpec {
    /// The host's name: a link end that is not a switch.
    pub name: String,
    /// Its IPv4 address, unique in the file.
    pub ip: std::net::Ipv4Addr,
}

/// A parsed and checked network file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NetFile {
    /// Host addresses, in file order (optional tables).
    pub hosts: Vec<HostSpec>,
    /// Switches, in file order.
    pub switches: Vec<SwitchSpec>,
    /// Links, in file order.
    pub links: Vec<LinkSpec>,
    /// Flows, in file order.
    pub flows: Vec<FlowSpec>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    host: Vec<RawHost>,
    #[serde(default)]
    switch: Vec<RawSwitch>,
    #[serde(default)]
    link: Vec<RawLink>,
    #[serde(default)]
    flow: Vec<RawFlow>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHost {
    name: Spanned<String>,
    ip: Spanned<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSwitch {
    name: Spanned<String>,
    t_mux: Spanned<String>,
    buffer: Spanned<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLink {
    ends: Spanned<Vec<Spanned<String>>>,
    rate: Spanned<String>,
    effective_rate: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFlow {
    name: Spanned<String>,
    path: Spanned<Vec<Spanned<String>>>,
    rate: Spanned<String>,
    max_packet: Spanned<i64>,
    shaping_interval: Option<Spanned<String>>,
    burst: Option<Spanned<String>>,
    host_delay: Option<Spanned<String>>,
    deadline: Option<Spanned<String>>,
}

fn position(text: &str, span: &Range<usize>) -> (usize, usize) {
    let mut start = span.start.min(text.len());
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    let before = &text[..start];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}

struct Ctx<'a> {
    text: &'a str,
}

impl Ctx<'_> {
    fn err(&self, span: &Range<usize>, message: impl Into<String>) -> NetfileError {
        let (line, column) = position(self.text, span);
        NetfileError::Invalid {
            line,
            column,
            message: message.into(),
        }
    }

    fn value<T, E: std::fmt::Display>(
        &self,
        s: &Spanned<String>,
        what: &str,
        f: impl Fn(&str) -> Result<T, E>,
    ) -> Result<T, NetfileError> {
        f(s.get_ref()).map_err(|e| self.err(&s.span(), format!("{what}: {e}")))
    }

    fn positive(&self, s: &Spanned<String>, what: &str, v: Q) -> Result<Q, NetfileError> {
        if v.is_positive() {
            Ok(v)
        } else {
            Err(self.err(&s.span(), format!("{what} must be positive")))
        }
    }
}

/// Parses and checks a network file: unique names, links between known nodes, paths that run
/// host → switch(es) → host over existing links, and T-SPECs with `b ≥ M > 0`.
pub fn parse(text: &str) -> Result<NetFile, NetfileError> {
    let raw: RawFile = toml::from_str(text).map_err(|e| {
        let (line, column) = e.span().map_or((1, 1), |s| position(text, &s));
        NetfileError::Syntax {
            line,
            column,
            message: e.message().to_string(),
        }
    })?;
    let cx = Ctx { text };
    let mut out = NetFile::default();
    let mut switch_names = HashSet::new();
    for s in &raw.switch {
        let name = s.name.get_ref().clone();
        if name.is_empty() || !switch_names.insert(name.clone()) {
            return Err(cx.err(
                &s.name.span(),
                format!("duplicate or empty switch name `{name}`"),
            ));
        }
        let t_mux = cx.value(&s.t_mux, "t_mux", parse_duration)?;
        let buffer = cx.value(&s.buffer, "buffer", parse_size)?;
        out.switches.push(SwitchSpec {
            name,
            t_mux,
            buffer,
        });
    }
    let mut links: HashMap<(String, String), ()> = HashMap::new();
    for l in &raw.link {
        let ends = l.ends.get_ref();
        if ends.len() != 2 || ends[0].get_ref() == ends[1].get_ref() {
            return Err(cx.err(&l.ends.span(), "a link has exactly two different ends"));
        }
        let (a, b) = (ends[0].get_ref().clone(), ends[1].get_ref().clone());
        if !switch_names.contains(&a) && !switch_names.contains(&b) {
            return Err(cx.err(&l.ends.span(), "a link needs at least one switch end"));
        }
        let key = if a < b {
            (a.clone(), b.clone())
        } else {
            (b.clone(), a.clone())
        };
        if links.insert(key, ()).is_some() {
            return Err(cx.err(&l.ends.span(), format!("duplicate link {a} – {b}")));
        }
        let rate = cx.value(&l.rate, "rate", parse_rate)?;
        let rate = cx.positive(&l.rate, "rate", rate)?;
        let effective_rate = match &l.effective_rate {
            Some(e) => {
                let v = cx.value(e, "effective_rate", parse_rate)?;
                let v = cx.positive(e, "effective_rate", v)?;
                if v > rate {
                    return Err(cx.err(&e.span(), "effective_rate exceeds rate"));
                }
                v
            }
            None => rate,
        };
        out.links.push(LinkSpec {
            ends: [a, b],
            rate,
            effective_rate,
        });
    }
    hosts(&cx, &raw.host, &switch_names, &out.links, &mut out.hosts)?;
    let mut flow_names = HashSet::new();
    for f in &raw.flow {
        out.flows
            .push(flow(&cx, f, &switch_names, &links, &mut flow_names)?);
    }
    Ok(out)
}

/// Checks the `[[host]]` tables: each names a link end that is not a switch, once, with an IPv4
/// address no other host has.
fn hosts(
    cx: &Ctx<'_>,
    raw: &[RawHost],
    switches: &HashSet<String>,
    links: &[LinkSpec],
    out: &mut Vec<HostSpec>,
) -> Result<(), NetfileError> {
    for h in raw {
        let name = h.name.get_ref();
        if switches.contains(name) {
            return Err(cx.err(&h.name.span(), format!("`{name}` is a switch, not a host")));
        }
        if !links.iter().any(|l| l.ends.contains(name)) {
            return Err(cx.err(&h.name.span(), format!("host `{name}` has no link")));
        }
        if out.iter().any(|o| &o.name == name) {
            return Err(cx.err(&h.name.span(), format!("host `{name}` is listed twice")));
        }
        let ip: std::net::Ipv4Addr = cx.value(&h.ip, "ip", |t| t.trim().parse())?;
        if ip.is_unspecified() || ip.is_broadcast() || ip.is_multicast() || ip.is_loopback() {
            return Err(cx.err(&h.ip.span(), "ip must be a unicast host address"));
        }
        if let Some(o) = out.iter().find(|o| o.ip == ip) {
            return Err(cx.err(
                &h.ip.span(),
                format!("ip {ip} is already host `{}`'s", o.name),
            ));
        }
        out.push(HostSpec {
            name: name.clone(),
            ip,
        });
    }
    Ok(())
}

fn flow(
    cx: &Ctx<'_>,
    f: &RawFlow,
    switches: &HashSet<String>,
    links: &HashMap<(String, String), ()>,
    names: &mut HashSet<String>,
) -> Result<FlowSpec, NetfileError> {
    let name = f.name.get_ref().clone();
    if name.is_empty() || !names.insert(name.clone()) {
        return Err(cx.err(
            &f.name.span(),
            format!("duplicate or empty flow name `{name}`"),
        ));
    }
    let path: Vec<String> = f
        .path
        .get_ref()
        .iter()
        .map(|p| p.get_ref().clone())
        .collect();
    if path.len() < 3 {
        return Err(cx.err(&f.path.span(), "a path runs host, switch(es), host"));
    }
    for (i, node) in f.path.get_ref().iter().enumerate() {
        let is_switch = switches.contains(node.get_ref());
        let end = i == 0 || i + 1 == path.len();
        if end == is_switch {
            let want = if end {
                "a host (not a switch)"
            } else {
                "a switch"
            };
            return Err(cx.err(&node.span(), format!("`{}` must be {want}", node.get_ref())));
        }
        if i > 0 {
            let (a, b) = (&path[i - 1], &path[i]);
            let key = if a < b {
                (a.clone(), b.clone())
            } else {
                (b.clone(), a.clone())
            };
            if !links.contains_key(&key) {
                return Err(cx.err(&node.span(), format!("no link between {a} and {b}")));
            }
        }
    }
    let mut seen = HashSet::new();
    if !path.iter().all(|n| seen.insert(n)) {
        return Err(cx.err(&f.path.span(), "a path visits a node twice"));
    }
    let rate = cx.value(&f.rate, "rate", parse_rate)?;
    let rate = cx.positive(&f.rate, "rate", rate)?;
    if *f.max_packet.get_ref() <= 0 || *f.max_packet.get_ref() > 1 << 32 {
        return Err(cx.err(&f.max_packet.span(), "max_packet must be 1..=2^32 bytes"));
    }
    let max_packet = Q::bytes(*f.max_packet.get_ref());
    let burst = match (&f.shaping_interval, &f.burst) {
        (Some(ts), None) => {
            let ts_v = cx.value(ts, "shaping_interval", parse_duration)?;
            rate.mul(ts_v)
                .and_then(|x| x.add(max_packet))
                .map_err(|e| cx.err(&ts.span(), e.to_string()))?
        }
        (None, Some(b)) => {
            let v = cx.value(b, "burst", parse_size)?;
            if v < max_packet {
                return Err(cx.err(&b.span(), "burst is smaller than max_packet"));
            }
            v
        }
        _ => {
            return Err(cx.err(
                &f.name.span(),
                "give exactly one of shaping_interval and burst",
            ))
        }
    };
    let host_delay = match &f.host_delay {
        Some(h) => cx.value(h, "host_delay", parse_duration)?,
        None => Q::ZERO,
    };
    let deadline = match &f.deadline {
        Some(d) => Some(cx.value(d, "deadline", parse_duration)?),
        None => None,
    };
    Ok(FlowSpec {
        name,
        path,
        rate,
        max_packet,
        burst,
        host_delay,
        deadline,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
[[switch]]
name = "s1"
t_mux = "45us"
buffer = "128KiB"
[[link]]
ends = ["C", "s1"]
rate = "100mbit"
effective_rate = "98.6mbit"
[[link]]
ends = ["s1", "B"]
rate = "100mbit"
[[flow]]
name = "C-B"
path = ["C", "s1", "B"]
rate = "40mbit"
max_packet = 1514
shaping_interval = "10ms"
host_delay = "80us"
"#;

    #[test]
    fn parses_the_issue_example() {
        let n = parse(GOOD).unwrap();
        assert_eq!(n.switches[0].t_mux, Q::micros(45));
        assert_eq!(n.switches[0].buffer, Q::bytes(131_072));
        assert_eq!(n.links[0].effective_rate, Q::int(98_600_000));
        assert_eq!(n.links[1].effective_rate, Q::int(100_000_000));
        assert_eq!(n.flows[0].burst, Q::bytes(51_514));
        assert_eq!(n.flows[0].host_delay, Q::micros(80));
    }

    fn err_at(text: &str) -> (usize, usize, String) {
        match parse(text).unwrap_err() {
            NetfileError::Syntax {
                line,
                column,
                message,
            }
            | NetfileError::Invalid {
                line,
                column,
                message,
            } => (line, column, message),
        }
    }

    #[test]
    fn unknown_key_is_refused_with_position() {
        let (line, _, msg) = err_at(&GOOD.replace("t_mux = ", "colour = \"red\"\nt_mux = "));
        assert_eq!(line, 4);
        assert!(msg.contains("colour"), "{msg}");
    }

    #[test]
    fn bad_values_name_line_and_column() {
        let (line, col, msg) = err_at(&GOOD.replace("\"40mbit\"", "\"40 furlongs\""));
        assert_eq!((line, col), (16, 8));
        assert!(msg.contains("rate"), "{msg}");
        let (line, _, msg) = err_at(&GOOD.replace("[\"C\", \"s1\", \"B\"]", "[\"C\", \"B\"]"));
        assert_eq!(line, 15);
        assert!(msg.contains("path"), "{msg}");
        let (_, _, msg) =
            err_at(&GOOD.replace("\"s1\", \"B\"]\nrate = \"40", "\"s1\", \"X\"]\nrate = \"40"));
        assert!(msg.contains("no link between s1 and X"), "{msg}");
        let (_, _, msg) = err_at(&GOOD.replace("shaping_interval = \"10ms\"", "burst = \"1000B\""));
        assert!(msg.contains("smaller than max_packet"), "{msg}");
        let (_, _, msg) = err_at(&GOOD.replace("shaping_interval = \"10ms\"", ""));
        assert!(msg.contains("exactly one"), "{msg}");
        let (_, _, msg) = err_at(&GOOD.replace("\"98.6mbit\"", "\"198mbit\""));
        assert!(msg.contains("exceeds rate"), "{msg}");
        let (_, _, msg) = err_at(&GOOD.replace("max_packet = 1514", "max_packet = -1"));
        assert!(msg.contains("max_packet"), "{msg}");
        let (line, _, _) = err_at("[[switch]\nname=");
        assert_eq!(line, 1);
    }

    #[test]
    fn host_tables_give_addresses_and_are_checked() {
        let hosts = "[[host]]\nname = \"C\"\nip = \"198.18.0.3\"\n[[host]]\nname = \"B\"\nip = \"198.18.0.2\"\n";
        let n = parse(&format!("{hosts}{GOOD}")).unwrap();
        assert_eq!(n.hosts.len(), 2);
        assert_eq!(n.hosts[0].name, "C");
        assert_eq!(n.hosts[1].ip, std::net::Ipv4Addr::new(198, 18, 0, 2));
        let bad = |h: &str| err_at(&format!("{h}{GOOD}")).2;
        assert!(bad("[[host]]\nname = \"s1\"\nip = \"198.18.0.9\"\n").contains("is a switch"));
        assert!(bad("[[host]]\nname = \"Z\"\nip = \"198.18.0.9\"\n").contains("no link"));
        assert!(bad("[[host]]\nname = \"C\"\nip = \"198.18.0\"\n").contains("ip"));
        assert!(bad("[[host]]\nname = \"C\"\nip = \"224.0.0.1\"\n").contains("unicast"));
        let dup_ip = hosts.replace("198.18.0.2", "198.18.0.3");
        assert!(bad(&dup_ip).contains("already host `C`"));
        let dup_name = hosts.replace("\"B\"", "\"C\"");
        assert!(bad(&dup_name).contains("listed twice"));
        assert!(bad("[[host]]\nname = \"C\"\n").contains("ip"));
    }
}
