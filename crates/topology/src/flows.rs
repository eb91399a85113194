//! `[[flow]]` tables: flows with their T-SPEC (Löser/Härtig, "Low-latency hard real-time
//! communication over switched Ethernet", §3: token rate `r`, bucket `b = r·Ts + M` or given,
//! maximum packet `M`), each along a path host → switch(es) → host over existing links.

use foldhash::{HashSet, HashSetExt as _};
use std::time::Duration;

use rtlan_calculus::Q;
use serde::Deserialize;
use toml::Spanned;

use crate::parse::Locator;
use crate::units::{parse_duration, parse_rate, parse_size};
use crate::{Bucket, Flow, Link, Switch, TopologyError};

/// A `[[flow]]` table as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawFlow {
    pub(crate) name: Spanned<String>,
    pub(crate) path: Spanned<Vec<Spanned<String>>>,
    pub(crate) rate: Spanned<String>,
    pub(crate) max_packet: Spanned<i64>,
    pub(crate) shaping_interval: Option<Spanned<String>>,
    pub(crate) burst: Option<Spanned<String>>,
    pub(crate) host_delay: Option<Spanned<String>>,
    pub(crate) deadline: Option<Spanned<String>>,
}

/// Largest `max_packet`, bytes.
const MAX_PACKET_LIMIT: i64 = 1 << 32;

/// Checks every flow against the switches and links already resolved.
pub(crate) fn resolve<'a>(
    raw: &'a [RawFlow],
    loc: &Locator<'_>,
    switches: &'a [Switch],
    links: &'a [Link],
) -> Result<Vec<Flow>, TopologyError> {
    // Indexes, not scans: every hop of every flow looks up its link and its node's kind
    // (foldhash: short keys, many lookups, and no set here is iterated).
    let ordered = |a: &'a str, b: &'a str| if a < b { (a, b) } else { (b, a) };
    let mut pairs: HashSet<(&str, &str)> = HashSet::with_capacity(links.len());
    pairs.extend(
        links
            .iter()
            .map(|l| ordered(&l.ends[0].node, &l.ends[1].node)),
    );
    let linked = |a: &'a str, b: &'a str| pairs.contains(&ordered(a, b));
    let mut switch_names: HashSet<&str> = HashSet::with_capacity(switches.len());
    switch_names.extend(switches.iter().map(|s| s.name.as_str()));
    let is_switch = |n: &str| switch_names.contains(n);
    let mut names: HashSet<&str> = HashSet::with_capacity(raw.len());
    let mut out = Vec::with_capacity(raw.len());
    // The nodes of the path being checked, kept across flows to allocate once.
    let mut seen: HashSet<&str> = HashSet::new();
    for f in raw {
        let name = f.name.get_ref();
        let err = |span: std::ops::Range<usize>, reason: String| TopologyError::BadFlow {
            at: loc.at(&span),
            flow: name.clone(),
            reason,
        };
        if name.is_empty() || !names.insert(name) {
            return Err(err(
                f.name.span(),
                "duplicate or empty flow name".to_string(),
            ));
        }
        let path: Vec<String> = f
            .path
            .get_ref()
            .iter()
            .map(|p| p.get_ref().clone())
            .collect();
        if path.len() < 3 {
            return Err(err(
                f.path.span(),
                "a path runs host, switch(es), host".to_string(),
            ));
        }
        for (i, node) in f.path.get_ref().iter().enumerate() {
            let end = i == 0 || i + 1 == path.len();
            if end == is_switch(node.get_ref()) {
                let want = if end {
                    "a host (not a switch)"
                } else {
                    "a switch"
                };
                return Err(err(
                    node.span(),
                    format!("`{}` must be {want}", node.get_ref()),
                ));
            }
            let written = f.path.get_ref();
            if i > 0 && !linked(written[i - 1].get_ref(), node.get_ref()) {
                return Err(err(
                    node.span(),
                    format!("no link between {} and {}", path[i - 1], path[i]),
                ));
            }
        }
        seen.clear();
        if !f.path.get_ref().iter().all(|n| seen.insert(n.get_ref())) {
            return Err(err(f.path.span(), "a path visits a node twice".to_string()));
        }
        let rate_bps =
            parse_rate(f.rate.get_ref()).map_err(|e| err(f.rate.span(), format!("rate: {e}")))?;
        let m = *f.max_packet.get_ref();
        if !(1..=MAX_PACKET_LIMIT).contains(&m) {
            return Err(err(
                f.max_packet.span(),
                "max_packet must be 1..=2^32 bytes".to_string(),
            ));
        }
        // In range 1..=2^32 just above.
        let max_packet_bytes = m.unsigned_abs();
        let duration = |v: &Spanned<String>, what: &str| {
            parse_duration(v.get_ref()).map_err(|e| err(v.span(), format!("{what}: {e}")))
        };
        let bucket = match (&f.shaping_interval, &f.burst) {
            (Some(ts), None) => {
                let d = duration(ts, "shaping_interval")?;
                // b = r·Ts + M must fit the calculus's exact arithmetic.
                burst_bits(rate_bps, max_packet_bytes, d)
                    .map_err(|e| err(ts.span(), format!("shaping_interval: {e}")))?;
                Bucket::ShapingInterval(d)
            }
            (None, Some(b)) => {
                let v =
                    parse_size(b.get_ref()).map_err(|e| err(b.span(), format!("burst: {e}")))?;
                if v < max_packet_bytes {
                    return Err(err(
                        b.span(),
                        "burst is smaller than max_packet".to_string(),
                    ));
                }
                Bucket::Burst(v)
            }
            _ => {
                return Err(err(
                    f.name.span(),
                    "give exactly one of shaping_interval and burst".to_string(),
                ))
            }
        };
        let host_delay = match &f.host_delay {
            Some(h) => duration(h, "host_delay")?,
            None => Duration::ZERO,
        };
        let deadline = match &f.deadline {
            Some(d) => Some(duration(d, "deadline")?),
            None => None,
        };
        out.push(Flow {
            name: name.clone(),
            path,
            rate_bps,
            max_packet_bytes,
            bucket,
            host_delay,
            deadline,
        });
    }
    Ok(out)
}

/// `b = r·Ts + M` in bits, exactly.
pub(crate) fn burst_bits(
    rate_bps: u64,
    max_packet_bytes: u64,
    ts: Duration,
) -> Result<Q, rtlan_calculus::ArithError> {
    let r = Q::new(i128::from(rate_bps), 1)?;
    let ts = Q::new(
        i128::try_from(ts.as_nanos()).unwrap_or(i128::MAX),
        1_000_000_000,
    )?;
    r.mul(ts)?.add(Q::new(i128::from(max_packet_bytes) * 8, 1)?)
}
