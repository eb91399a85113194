//! A generated leaf–spine network with reserved connections and background floods (the
//! `[generate]` table of a scenario), for runs too large to write out by hand.
//!
//! The topology model refuses loops (no spanning tree yet), so the "leaf–spine" is a tree:
//! `leaves` leaf switches with `hosts_per_leaf` hosts each; leaf `i` is homed on spine
//! `i mod spines`; every spine hangs off one core switch. Switches = leaves + spines + 1.
//!
//! Traffic: `reserved` constant-rate connections, each reserved at its rate through the host
//! daemons (EtheReal §2.2), spread round-robin over the hosts as senders with a seeded random
//! receiver, starts staggered over the first `setup_spread`; plus `floods` Poisson background
//! sources between random host pairs.

use std::fmt::Write as _;
use std::time::Duration;

use rand::rngs::Xoshiro256PlusPlus;
use rand::{Rng, SeedableRng};
use rtlan_core::shaper::{wire_bytes, UDP_FRAME_OVERHEAD};
use rtlan_topology::units::format_rate;
use rtlan_topology::Topology;
use serde::Deserialize;
use toml::Spanned;

use crate::scenario::{ReserveSpec, ScenarioError, Source, SourceKind, TrafficSpec};
use crate::traffic::{mix, PAYLOAD_HEADER_LEN};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawGenerate {
    kind: Spanned<String>,
    leaves: Spanned<u32>,
    hosts_per_leaf: Spanned<u32>,
    spines: Spanned<u32>,
    host_rate: Spanned<String>,
    leaf_rate: Spanned<String>,
    spine_rate: Spanned<String>,
    reserved: u32,
    reserved_rate: Option<Spanned<String>>,
    reserved_size: Option<Spanned<u32>>,
    floods: u32,
    flood_rate: Option<Spanned<String>>,
    flood_size: Option<Spanned<u32>>,
    setup_spread: Option<Spanned<String>>,
    seed: Option<u64>,
    scheduler: Option<Spanned<String>>,
    lateness_budget: Option<Spanned<String>>,
    flood_kind: Option<Spanned<String>>,
    greedy: Option<u32>,
    reserved_burst: Option<Spanned<u32>>,
    host_delay: Option<Spanned<String>>,
}

/// The parameters of a generated leaf–spine scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct LeafSpine {
    /// Leaf switches.
    pub leaves: u32,
    /// Hosts per leaf.
    pub hosts_per_leaf: u32,
    /// Spine switches.
    pub spines: u32,
    /// Host link rate, bit/s.
    pub host_rate: u64,
    /// Leaf–spine link rate, bit/s.
    pub leaf_rate: u64,
    /// Spine–core link rate, bit/s.
    pub spine_rate: u64,
    /// Reserved connections.
    pub reserved: u32,
    /// Rate of each, bit/s.
    pub reserved_rate: u64,
    /// UDP payload of each, bytes.
    pub reserved_size: usize,
    /// Background Poisson floods.
    pub floods: u32,
    /// Mean rate of each, bit/s.
    pub flood_rate: u64,
    /// UDP payload of each, bytes.
    pub flood_size: usize,
    /// Reserved connections start evenly over this span.
    pub setup_spread: Duration,
    /// Seed of the random receivers.
    pub seed: u64,
    /// `scheduler` of every generated switch (`cyclic` or `wheel`); `None` = not written (the
    /// switch's default).
    pub scheduler: Option<String>,
    /// `lateness_budget` of every generated switch, as written; `None` = the switch's default.
    pub lateness_budget: Option<String>,
    /// What the floods send: Poisson (the default) or constant rate.
    pub flood_kind: SourceKind,
    /// Greedy TCP-like sources between random host pairs, from `setup_spread` on.
    pub greedy: u32,
    /// `Some(k)`: every reserved connection is a burst source of `k` datagrams per period on
    /// the common grid of phase 0 (all aligned), its bucket exactly those `k` frames' wire
    /// bytes; `None`: constant rate with a two-frame bucket.
    pub reserved_burst: Option<u32>,
    /// `host_delay` of every generated host (its daemon's term in every bound, `docs/delay.md`
    /// § "The host's term"), as written; `None` = the daemon's default (2 ms). It must cover the
    /// host's own connections, or the daemon refuses the ones that do not fit.
    pub host_delay: Option<String>,
}

impl LeafSpine {
    pub(crate) fn from_raw(
        src: &Source<'_>,
        raw: &Spanned<RawGenerate>,
    ) -> Result<LeafSpine, ScenarioError> {
        let r = raw.get_ref();
        if r.kind.get_ref() != "leaf-spine" {
            return Err(src.invalid(r.kind.span().start, "the only generator is `leaf-spine`"));
        }
        let count = |v: &Spanned<u32>, what: &str, max: u32| {
            if *v.get_ref() == 0 || *v.get_ref() > max {
                Err(src.invalid(v.span().start, format!("`{what}` must be 1 ..= {max}")))
            } else {
                Ok(*v.get_ref())
            }
        };
        let leaves = count(&r.leaves, "leaves", 999)?;
        let hosts_per_leaf = count(&r.hosts_per_leaf, "hosts_per_leaf", 999)?;
        let spines = count(&r.spines, "spines", 99)?;
        if u64::from(leaves) * u64::from(hosts_per_leaf) > 60_000 {
            return Err(src.invalid(r.leaves.span().start, "at most 60000 hosts"));
        }
        let size = |v: &Option<Spanned<u32>>, default: usize| match v {
            Some(s) if (*s.get_ref() as usize) < PAYLOAD_HEADER_LEN || *s.get_ref() > 1472 => {
                Err(src.invalid(
                    s.span().start,
                    format!("sizes must be {PAYLOAD_HEADER_LEN} ..= 1472"),
                ))
            }
            Some(s) => Ok(*s.get_ref() as usize),
            None => Ok(default),
        };
        let opt_rate = |v: &Option<Spanned<String>>, what: &str, default: u64| match v {
            Some(v) => src.rate(v, what),
            None => Ok(default),
        };
        let setup_spread = match &r.setup_spread {
            Some(v) => src.duration(v, "setup_spread")?,
            None => Duration::from_millis(100),
        };
        let scheduler = match &r.scheduler {
            Some(v) if v.get_ref() != "cyclic" && v.get_ref() != "wheel" => {
                return Err(src.invalid(v.span().start, "`scheduler` must be cyclic or wheel"));
            }
            Some(v) => Some(v.get_ref().clone()),
            None => None,
        };
        let lateness_budget = match &r.lateness_budget {
            Some(v) => {
                src.duration(v, "lateness_budget")?;
                Some(v.get_ref().clone())
            }
            None => None,
        };
        let host_delay = match &r.host_delay {
            Some(v) => {
                src.duration(v, "host_delay")?;
                Some(v.get_ref().clone())
            }
            None => None,
        };
        let flood_kind = match &r.flood_kind {
            None => SourceKind::Poisson,
            Some(v) if v.get_ref() == "poisson" => SourceKind::Poisson,
            Some(v) if v.get_ref() == "constant" => SourceKind::Constant,
            Some(v) => {
                return Err(src.invalid(v.span().start, "`flood_kind` must be poisson or constant"));
            }
        };
        Ok(LeafSpine {
            scheduler,
            lateness_budget,
            host_delay,
            flood_kind,
            greedy: r.greedy.unwrap_or(0),
            reserved_burst: match &r.reserved_burst {
                Some(k) if *k.get_ref() == 0 => {
                    return Err(src.invalid(k.span().start, "`reserved_burst` must be above 0"));
                }
                Some(k) => Some(*k.get_ref()),
                None => None,
            },
            leaves,
            hosts_per_leaf,
            spines,
            host_rate: src.rate(&r.host_rate, "host_rate")?,
            leaf_rate: src.rate(&r.leaf_rate, "leaf_rate")?,
            spine_rate: src.rate(&r.spine_rate, "spine_rate")?,
            reserved: r.reserved,
            reserved_rate: opt_rate(&r.reserved_rate, "reserved_rate", 200_000)?,
            reserved_size: size(&r.reserved_size, 200)?,
            floods: r.floods,
            flood_rate: opt_rate(&r.flood_rate, "flood_rate", 100_000_000)?,
            flood_size: size(&r.flood_size, 1000)?,
            setup_spread,
            seed: r.seed.unwrap_or(1),
        })
    }

    /// Hosts in all.
    pub fn host_count(&self) -> u32 {
        self.leaves * self.hosts_per_leaf
    }

    /// The topology tables (`[[host]]`, `[[switch]]`, `[[link]]`) of the network.
    pub fn topology_text(&self) -> String {
        let mut t = String::new();
        let host_options = match &self.host_delay {
            Some(d) => format!("host_delay = \"{d}\"\n"),
            None => String::new(),
        };
        for h in 1..=self.host_count() {
            let _ = writeln!(t, "[[host]]\nname = \"h{h}\"\n{host_options}");
        }
        let mut options = String::new();
        if let Some(s) = &self.scheduler {
            let _ = writeln!(options, "scheduler = \"{s}\"");
        }
        if let Some(l) = &self.lateness_budget {
            let _ = writeln!(options, "lateness_budget = \"{l}\"");
        }
        let names = (1..=self.leaves)
            .map(|l| format!("l{l}"))
            .chain((1..=self.spines).map(|s| format!("s{s}")))
            .chain(std::iter::once("core".to_string()));
        for name in names {
            let _ = writeln!(
                t,
                "[[switch]]\nname = \"{name}\"\nkind = \"rtlan\"\n{options}"
            );
        }
        let link = |t: &mut String, a: &str, b: &str, rate: u64| {
            let _ = writeln!(
                t,
                "[[link]]\nends = [\"{a}\", \"{b}\"]\nrate = \"{}\"\n",
                format_rate(rate)
            );
        };
        for h in 1..=self.host_count() {
            let leaf = (h - 1) / self.hosts_per_leaf + 1;
            link(
                &mut t,
                &format!("h{h}"),
                &format!("l{leaf}"),
                self.host_rate,
            );
        }
        for l in 1..=self.leaves {
            let spine = (l - 1) % self.spines + 1;
            link(
                &mut t,
                &format!("l{l}"),
                &format!("s{spine}"),
                self.leaf_rate,
            );
        }
        for s in 1..=self.spines {
            link(&mut t, &format!("s{s}"), "core", self.spine_rate);
        }
        t
    }

    /// The generated traffic; hosts are found by name in `topology`.
    pub(crate) fn traffic(
        &self,
        topology: &Topology,
        duration: Duration,
        scenario_seed: u64,
    ) -> Vec<TrafficSpec> {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(mix(self.seed, scenario_seed));
        let hosts = self.host_count();
        let index = |h: u32| {
            topology
                .hosts
                .iter()
                .position(|x| x.name == format!("h{h}"))
        };
        let pick_other = |src: u32, rng: &mut Xoshiro256PlusPlus| {
            let r = (rng.next_u64() % u64::from(hosts - 1)) as u32 + 1;
            (src - 1 + r) % hosts + 1
        };
        let mut out = Vec::new();
        if hosts < 2 {
            return out;
        }
        let frame = self.reserved_size + UDP_FRAME_OVERHEAD;
        let max_packet = u16::try_from(frame).unwrap_or(u16::MAX);
        let (kind, burst) = match self.reserved_burst {
            // The host's shaper counts wire bytes: a bucket of k frames' wire bytes lets the
            // whole burst through at once.
            Some(frames) => (
                SourceKind::Burst {
                    frames,
                    phase: Duration::ZERO,
                },
                u32::try_from(u64::from(frames) * wire_bytes(self.reserved_size))
                    .unwrap_or(u32::MAX),
            ),
            None => (SourceKind::Constant, 2 * u32::from(max_packet)),
        };
        for i in 0..self.reserved {
            let src = i % hosts + 1;
            let dst = pick_other(src, &mut rng);
            let (Some(s), Some(d)) = (index(src), index(dst)) else {
                continue;
            };
            let nth = u16::try_from(i / hosts).unwrap_or(u16::MAX - 5000);
            let offset = self.setup_spread.as_nanos() * u128::from(i) / u128::from(self.reserved);
            out.push(TrafficSpec {
                name: format!("r{i} h{src}→h{dst}"),
                src: s,
                dst: d,
                kind,
                rate_bps: self.reserved_rate,
                size: self.reserved_size,
                dst_port: 5000u16.saturating_add(nth),
                src_port: 5000u16.saturating_add(nth),
                start: Duration::from_nanos(u64::try_from(offset).unwrap_or(0)),
                stop: duration,
                reserve: Some(ReserveSpec {
                    rate_bps: self.reserved_rate,
                    burst,
                    max_packet,
                    delay: None,
                }),
                shape: None,
            });
        }
        for i in 0..self.floods {
            let src = (rng.next_u64() % u64::from(hosts)) as u32 + 1;
            let dst = pick_other(src, &mut rng);
            let (Some(s), Some(d)) = (index(src), index(dst)) else {
                continue;
            };
            out.push(TrafficSpec {
                name: format!("f{i} h{src}→h{dst}"),
                src: s,
                dst: d,
                kind: self.flood_kind,
                rate_bps: self.flood_rate,
                size: self.flood_size,
                dst_port: 40000u16.saturating_add(u16::try_from(i).unwrap_or(0)),
                src_port: 40000u16.saturating_add(u16::try_from(i).unwrap_or(0)),
                start: self.setup_spread,
                stop: duration,
                reserve: None,
                shape: None,
            });
        }
        // Drawn after the floods, so adding greedy sources leaves the rest of the traffic as it was.
        for i in 0..self.greedy {
            let src = (rng.next_u64() % u64::from(hosts)) as u32 + 1;
            let dst = pick_other(src, &mut rng);
            let (Some(s), Some(d)) = (index(src), index(dst)) else {
                continue;
            };
            let port = 30000u16.saturating_add(u16::try_from(i).unwrap_or(0));
            out.push(TrafficSpec {
                name: format!("g{i} h{src}→h{dst} tcp"),
                src: s,
                dst: d,
                kind: SourceKind::Greedy,
                rate_bps: 0,
                size: 1448,
                dst_port: port,
                src_port: port,
                start: self.setup_spread,
                stop: duration,
                reserve: None,
                shape: None,
            });
        }
        out
    }
}
