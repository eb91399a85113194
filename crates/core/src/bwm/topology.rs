//! The network the bandwidth manager books: switches (multiplexing delay `t_mux`, buffer memory)
//! and links (rate), the quantities of Löser/Härtig, "Low-latency hard real-time communication over
//! switched Ethernet", §2.2 and §3.2. Hosts are the link ends that are not switches. Paths are
//! shortest paths in hops through switches only (hosts never forward), ties broken by link order
//! so a path is reproducible.
//!
//! A switch is either an off-the-shelf FIFO switch (`t_mux`, Löser/Härtig §2.2) or an rtlan
//! real-time switch ([`RtSwitchSpec`]): each output port then runs a real-time scheduler —
//! EtheReal §3.3's cyclic round robin or QSR §3.1's rate-controlled timing wheel — summarised as
//! a rate-latency server per connection (`crate::switch::port_server`).
//!
//! Files are read by the one topology reader (`rtlan_topology`, the reader of `rtlan analyze` and
//! the lab); [`Topology::from_model`] is the one place the manager's integer view (also the
//! `topology` reply of the protocol) is derived from that model.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use rtlan_topology::{SchedulerKind, SwitchKind};
use serde::{Deserialize, Serialize};

use crate::switch::rt::DEFAULT_RT_BUFFER_BYTES;
use crate::switch::ServerParams;

/// Errors in a topology.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TopologyError {
    /// Two switches share a name.
    #[error("switch `{0}` is declared twice")]
    DuplicateSwitch(String),
    /// A link joins a node to itself.
    #[error("link {0} joins `{1}` to itself")]
    SelfLink(usize, String),
    /// A link has rate zero.
    #[error("link {0} has rate zero")]
    ZeroRate(usize),
    /// A link joins two hosts (no switch in between).
    #[error("link {0} joins two hosts `{1}` and `{2}`; one end must be a switch")]
    HostToHost(usize, String, String),
    /// The network file is invalid; the message starts with `file:line:column:`.
    #[error("{0}")]
    File(String),
    /// The model lacks a value the manager needs (a `linux-bridge` switch without `t_mux` or
    /// `buffer`, a link without `rate`).
    #[error("{origin}: {what} is missing; the bandwidth manager needs it")]
    Missing {
        /// The file.
        origin: String,
        /// Which value.
        what: String,
    },
    /// A switch's description cannot be analysed: both a FIFO `t_mux` and a real-time
    /// `scheduler`, or a link of an rtlan switch with an `effective_rate`.
    #[error("{origin}: {message}")]
    Ambiguous {
        /// The file.
        origin: String,
        /// What is wrong.
        message: String,
    },
}

/// A switch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SwitchSpec {
    /// Name.
    pub name: String,
    /// Multiplexing delay `t_mux`, ns (0 and unused for an rtlan real-time switch).
    pub t_mux_ns: u64,
    /// Shared buffer memory, bytes (an rtlan switch's memory for real-time queues).
    pub buffer_bytes: u64,
}

/// An rtlan real-time switch: what its output ports' service curves depend on besides the line
/// rate (`crate::switch::ServerParams`), each value the switch's own default where the model
/// gives none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RtSwitchSpec {
    /// Name (of a switch in [`Topology::switches`]).
    pub name: String,
    /// The real-time scheduler of every output port.
    pub scheduler: SchedulerKind,
    /// Cycle `T` of the cyclic scheduler, ns.
    pub cycle_time_ns: u64,
    /// Real-time cap `U`, percent of the line rate.
    pub cap_percent: u8,
    /// Largest frame any class may send, bytes without FCS.
    pub max_frame_bytes: u64,
    /// Lateness budget `λ`, ns.
    pub lateness_budget_ns: u64,
    /// Propagation delay of the output links, ns: the longest of the switch's links (one figure
    /// per switch, as the switch is configured).
    pub link_delay_ns: u64,
}

impl RtSwitchSpec {
    /// The switch parameters of its service curves.
    pub fn params(&self) -> ServerParams {
        ServerParams {
            scheduler: self.scheduler,
            cycle_time: Duration::from_nanos(self.cycle_time_ns),
            cap_percent: self.cap_percent,
            max_frame_bytes: usize::try_from(self.max_frame_bytes).unwrap_or(usize::MAX),
            lateness_budget: Duration::from_nanos(self.lateness_budget_ns),
            link_delay: Duration::from_nanos(self.link_delay_ns),
        }
    }
}

/// A full-duplex link; both directions have the same rate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkSpec {
    /// The two ends (switch or host names).
    pub ends: [String; 2],
    /// The rate the bounds use (the effective rate after framing overhead when known), bit/s.
    pub rate_bps: u64,
}

/// A host's address, so that clients may name it by IP (`[[host]]` of the network file).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostSpec {
    /// The host's name (a link end that is not a switch).
    pub name: String,
    /// Its IPv4 address.
    pub ip: std::net::Ipv4Addr,
}

/// Switches, links and host addresses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Topology {
    /// Switches.
    pub switches: Vec<SwitchSpec>,
    /// Links.
    pub links: Vec<LinkSpec>,
    /// Host addresses (optional; hosts without one are known by name only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<HostSpec>,
    /// The switches that are rtlan real-time switches, with their scheduler (the others are
    /// FIFO switches with `t_mux`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rtlan: Vec<RtSwitchSpec>,
}

impl Topology {
    /// The manager's view of the one topology model: every switch with its `t_mux` (whole ns) and
    /// buffer (bytes), every link with the rate the bounds use (the effective rate if given), and
    /// the declared hosts' addresses. `[[flow]]` tables are not booked.
    ///
    /// A switch with `t_mux` is a FIFO switch. An `rtlan` switch without one is an rtlan real-time
    /// switch ([`RtSwitchSpec`]): its scheduler, cycle, lateness budget and buffer are the model's
    /// where given and otherwise the switch's defaults ([`ServerParams::default`],
    /// `rtlan_core::switch::rt::DEFAULT_RT_BUFFER_BYTES`); its link delay is the longest of its
    /// links'. Its links must not have an `effective_rate`: the switch counts wire bits at the
    /// line rate.
    pub fn from_model(model: &rtlan_topology::Topology) -> Result<Topology, TopologyError> {
        let missing = |what: String| TopologyError::Missing {
            origin: model.origin.clone(),
            what,
        };
        let ambiguous = |message: String| TopologyError::Ambiguous {
            origin: model.origin.clone(),
            message,
        };
        let nanos = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        let mut topo = Topology::default();
        for s in &model.switches {
            let rtlan = match &s.kind {
                SwitchKind::Rtlan(o) => Some(o),
                // Network files refuse segments and RETHER bridges
                // (rtlan_topology::TopologyError::{SegmentsNotAnalysed, RetherBridgesNotAnalysed}).
                SwitchKind::LinuxBridge | SwitchKind::Segment(_) | SwitchKind::RetherBridge => None,
            };
            let buffer = || {
                s.buffer_bytes
                    .ok_or_else(|| missing(format!("switch `{}` buffer", s.name)))
            };
            let spec = match (s.t_mux, rtlan) {
                (Some(_), Some(o)) if o.scheduler.is_some() => {
                    return Err(ambiguous(format!(
                        "switch `{}` has both `t_mux` (a FIFO switch) and a `scheduler` (an rtlan \
                         real-time switch)",
                        s.name
                    )))
                }
                (Some(t_mux), _) => SwitchSpec {
                    name: s.name.clone(),
                    t_mux_ns: u64::try_from(t_mux.as_nanos())
                        .map_err(|_| missing(format!("switch `{}` t_mux below 2^64 ns", s.name)))?,
                    buffer_bytes: buffer()?,
                },
                (None, None) => return Err(missing(format!("switch `{}` t_mux", s.name))),
                (None, Some(o)) => {
                    let defaults = ServerParams::default();
                    let links = model
                        .links
                        .iter()
                        .filter(|l| l.ends.iter().any(|e| e.node == s.name));
                    let mut link_delay = Duration::ZERO;
                    for l in links {
                        if l.effective_rate_bps.is_some() {
                            return Err(ambiguous(format!(
                                "link {}–{} of rtlan switch `{}` has an `effective_rate`; an \
                                 rtlan switch books wire bits at the line `rate`",
                                l.ends[0].node, l.ends[1].node, s.name
                            )));
                        }
                        link_delay = link_delay.max(l.delay);
                    }
                    topo.rtlan.push(RtSwitchSpec {
                        name: s.name.clone(),
                        scheduler: o.scheduler.unwrap_or(defaults.scheduler),
                        cycle_time_ns: nanos(o.cycle_time.unwrap_or(defaults.cycle_time)),
                        cap_percent: defaults.cap_percent,
                        max_frame_bytes: u64::try_from(defaults.max_frame_bytes)
                            .unwrap_or(u64::MAX),
                        lateness_budget_ns: nanos(
                            o.lateness_budget.unwrap_or(defaults.lateness_budget),
                        ),
                        link_delay_ns: nanos(link_delay),
                    });
                    SwitchSpec {
                        name: s.name.clone(),
                        t_mux_ns: 0,
                        buffer_bytes: match s.buffer_bytes {
                            Some(b) => b,
                            None => u64::try_from(DEFAULT_RT_BUFFER_BYTES).unwrap_or(u64::MAX),
                        },
                    }
                }
            };
            topo.switches.push(spec);
        }
        for l in &model.links {
            let ends = l.ends.clone().map(|e| e.node);
            let rate_bps = l
                .bound_rate_bps()
                .ok_or_else(|| missing(format!("link {}–{} rate", ends[0], ends[1])))?;
            topo.links.push(LinkSpec { ends, rate_bps });
        }
        topo.hosts = model
            .hosts
            .iter()
            .map(|h| HostSpec {
                name: h.name.clone(),
                ip: h.ip,
            })
            .collect();
        Ok(topo)
    }

    /// The rtlan real-time switch called `name`, if it is one.
    pub fn rtlan_switch(&self, name: &str) -> Option<&RtSwitchSpec> {
        self.rtlan.iter().find(|r| r.name == name)
    }

    /// Reads network-file `text` (`docs/analyze.md`; errors start with `origin:line:column:`)
    /// and derives the manager's view with [`Topology::from_model`].
    pub fn parse(text: &str, origin: &str) -> Result<Topology, TopologyError> {
        let model = rtlan_topology::Topology::network_from_str(text, origin)
            .map_err(|e| TopologyError::File(e.to_string()))?;
        Topology::from_model(&model)
    }
}

/// A switch output port: switch `switch` sending towards node `to` over `link`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PortId {
    /// Node index of the switch.
    pub(crate) switch: usize,
    /// Node index of the neighbour.
    pub(crate) to: usize,
    /// Link index.
    pub(crate) link: usize,
}

/// The topology indexed for path finding.
#[derive(Debug, Clone)]
pub(crate) struct Graph {
    /// Node names; switches first, in declaration order, then hosts in order of appearance.
    pub(crate) names: Vec<String>,
    /// Switch index by node index (`None` for hosts).
    pub(crate) switch_of: Vec<Option<usize>>,
    /// Output ports (of switches only).
    pub(crate) ports: Vec<PortId>,
    /// Per node: (neighbour, port index if this node is a switch).
    adjacency: Vec<Vec<(usize, Option<usize>)>>,
    by_name: BTreeMap<String, usize>,
}

impl Graph {
    /// Indexes `topo`.
    pub(crate) fn new(topo: &Topology) -> Result<Graph, TopologyError> {
        let mut names = Vec::new();
        let mut by_name = BTreeMap::new();
        let mut switch_of = Vec::new();
        for (i, s) in topo.switches.iter().enumerate() {
            if by_name.insert(s.name.clone(), names.len()).is_some() {
                return Err(TopologyError::DuplicateSwitch(s.name.clone()));
            }
            names.push(s.name.clone());
            switch_of.push(Some(i));
        }
        let mut ends = Vec::new();
        for (li, l) in topo.links.iter().enumerate() {
            if l.ends[0] == l.ends[1] {
                return Err(TopologyError::SelfLink(li, l.ends[0].clone()));
            }
            if l.rate_bps == 0 {
                return Err(TopologyError::ZeroRate(li));
            }
            let mut idx = [0; 2];
            for (k, end) in l.ends.iter().enumerate() {
                idx[k] = *by_name.entry(end.clone()).or_insert_with(|| {
                    names.push(end.clone());
                    switch_of.push(None);
                    names.len() - 1
                });
            }
            if switch_of[idx[0]].is_none() && switch_of[idx[1]].is_none() {
                return Err(TopologyError::HostToHost(
                    li,
                    l.ends[0].clone(),
                    l.ends[1].clone(),
                ));
            }
            ends.push(idx);
        }
        let mut ports = Vec::new();
        let mut adjacency = vec![Vec::new(); names.len()];
        for (li, [a, b]) in ends.into_iter().enumerate() {
            for (from, to) in [(a, b), (b, a)] {
                let port = switch_of[from].map(|_| {
                    ports.push(PortId {
                        switch: from,
                        to,
                        link: li,
                    });
                    ports.len() - 1
                });
                adjacency[from].push((to, port));
            }
        }
        Ok(Graph {
            names,
            switch_of,
            ports,
            adjacency,
            by_name,
        })
    }

    /// The node index of a host (not a switch).
    pub(crate) fn host(&self, name: &str) -> Option<usize> {
        self.by_name
            .get(name)
            .copied()
            .filter(|&i| self.switch_of[i].is_none())
    }

    /// Host node indices.
    pub(crate) fn hosts(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.names.len()).filter(|&i| self.switch_of[i].is_none())
    }

    /// Shortest path from host `src` to host `dst` through switches: the nodes and the switch
    /// output ports crossed. `None` if there is none (or `src == dst`).
    pub(crate) fn route(&self, src: usize, dst: usize) -> Option<(Vec<usize>, Vec<usize>)> {
        if src == dst {
            return None;
        }
        let mut prev: Vec<Option<(usize, Option<usize>)>> = vec![None; self.names.len()];
        let mut seen = vec![false; self.names.len()];
        seen[src] = true;
        let mut queue = VecDeque::from([src]);
        while let Some(n) = queue.pop_front() {
            if n == dst {
                break;
            }
            // Hosts other than the source do not forward.
            if n != src && self.switch_of[n].is_none() {
                continue;
            }
            for &(m, port) in &self.adjacency[n] {
                if !seen[m] {
                    seen[m] = true;
                    prev[m] = Some((n, port));
                    queue.push_back(m);
                }
            }
        }
        if !seen[dst] {
            return None;
        }
        let (mut nodes, mut ports) = (vec![dst], Vec::new());
        let mut n = dst;
        while let Some((p, port)) = prev[n] {
            nodes.push(p);
            ports.extend(port);
            n = p;
        }
        nodes.reverse();
        ports.reverse();
        Some((nodes, ports))
    }
}
