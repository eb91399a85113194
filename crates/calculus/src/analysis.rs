//! Whole-network analysis for `rtlan analyze` (issue 5 item 2): the closed forms of seed 004
//! §2.2 — backlog bound (4), backlog estimate (5), delay bound (6), delay estimate (7) — at every
//! switch output port, chained over multi-hop paths by total flow analysis, and the admission
//! verdict (link capacity, eq. (1); switch buffer memory; finite bounds; optional deadlines).
//!
//! Model of one port (switch `s`, next node `n`): rate `C` = effective rate of link `s – n`,
//! latency `t_mux` of `s`. Flow `k` arrives with the T-SPEC `min(p_k·t + M_k, r_k·t + b_k)`,
//! where the peak `p_k` is `max(C, rate of the link it arrived on)` (a valid upper bound either
//! way, and `p_k ≥ C` keeps equations (4) and (6) exact — they evaluate the curves at `g_max`).
//! With `p_k = C` (the paper's setting) these are exactly equations (2), (4) and (6).
//! Multi-hop: a flow leaves a port with delay bound `d` as `min(C·t + M, r·t + b + r·d)` — the
//! closed form of `α ⊘ δ_d` capped by the link — so its burst grows by `r·d` per hop (TFA).
//! When `g_max < t_mux`, the backlog is taken at `t_mux` instead: `Σb + Σr·t_mux` (the generic
//! vertical deviation).
//!
//! A flow's end-to-end bound is the tightest of TFA (Σ of its ports' bounds) and the methods of
//! [`crate::methods`] — FIFO-aware TFA, SFA and PMOO — computed here after a second, FIFO-aware
//! propagation of the bursts; [`FlowReport`] records every method's bound and which one won. The
//! port reports and the buffer check stay TFA's.
//!
//! Rounding (all upward for bounds, see `docs/analyze.md`): each inflexion time `g_k` is rounded
//! *down* to [`GRID`] (1 ps), which can only raise (4) and (6); each port delay bound is rounded
//! *up* to the grid before it is reported or propagated.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use crate::booking::FastMap;
use crate::methods::{self, LpUse, Method, MethodBounds, PortView};
use crate::netfile::{FlowSpec, NetFile};
use crate::network::GRID;
use crate::rational::{ArithError, Q};

/// Errors from building the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnalysisError {
    /// Exact arithmetic overflowed.
    #[error(transparent)]
    Arith(#[from] ArithError),
    /// A flow path names an unknown node or a missing link.
    #[error("flow `{0}`: path is not host, switch(es), host over existing links")]
    BadPath(String),
}

/// A switch output port: switch index and next-node index in [`Topology`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PortKey {
    /// The switch.
    pub switch: usize,
    /// The node the port sends to.
    pub to: usize,
}

/// Nodes, switch parameters and link rates, indexed.
#[derive(Debug, Clone, Default)]
pub struct Topology {
    names: Vec<String>,
    index: HashMap<String, usize>,
    /// Per node: `Some((t_mux, buffer))` for switches.
    switch: Vec<Option<(Q, Q)>>,
    /// Effective rate per unordered node pair `(min, max)`.
    links: HashMap<(usize, usize), Q>,
}

/// One hop of a resolved flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hop {
    /// The output port.
    pub port: PortKey,
    /// The peak rate `p` of the flow's arrival curve at this port (bit/s).
    pub peak: Q,
}

/// A flow resolved against a [`Topology`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flow {
    /// Name.
    pub name: String,
    /// The switch output ports crossed, in order.
    pub hops: Vec<Hop>,
    /// Token rate `r`, bit/s.
    pub rate: Q,
    /// Maximum packet `M`, bits.
    pub max_packet: Q,
    /// Bucket `b` at the first switch, bits.
    pub burst: Q,
    /// Host delay added to the end-to-end bound, s.
    pub host_delay: Q,
    /// Required end-to-end bound, s.
    pub deadline: Option<Q>,
}

impl Topology {
    /// Indexes the nodes (switches, then hosts in order of appearance) and links of a file.
    pub fn from_netfile(file: &NetFile) -> Topology {
        let mut t = Topology::default();
        for s in &file.switches {
            let i = t.node(&s.name);
            t.switch[i] = Some((s.t_mux, s.buffer));
        }
        for l in &file.links {
            let (a, b) = (t.node(&l.ends[0]), t.node(&l.ends[1]));
            t.links.insert((a.min(b), a.max(b)), l.effective_rate);
        }
        for f in &file.flows {
            for n in &f.path {
                t.node(n);
            }
        }
        t
    }

    fn node(&mut self, name: &str) -> usize {
        if let Some(&i) = self.index.get(name) {
            return i;
        }
        self.names.push(name.to_string());
        self.switch.push(None);
        self.index.insert(name.to_string(), self.names.len() - 1);
        self.names.len() - 1
    }

    /// The name of node `i` (empty if out of range).
    pub fn name(&self, i: usize) -> &str {
        self.names.get(i).map_or("", String::as_str)
    }

    /// `(C, t_mux, buffer)` of a port, if it exists.
    pub fn port(&self, key: PortKey) -> Option<(Q, Q, Q)> {
        let (t_mux, buffer) = (*self.switch.get(key.switch)?)?;
        let c = self.link(key.switch, key.to)?;
        Some((c, t_mux, buffer))
    }

    /// Buffer memory of switch `i` (bits).
    pub fn buffer(&self, i: usize) -> Option<Q> {
        self.switch.get(i).copied().flatten().map(|s| s.1)
    }

    fn link(&self, a: usize, b: usize) -> Option<Q> {
        self.links.get(&(a.min(b), a.max(b))).copied()
    }

    /// Resolves a flow's path into output ports with their peak rates.
    pub fn resolve(&self, f: &FlowSpec) -> Result<Flow, AnalysisError> {
        let bad = || AnalysisError::BadPath(f.name.clone());
        let ids = f
            .path
            .iter()
            .map(|n| self.index.get(n).copied().ok_or_else(bad))
            .collect::<Result<Vec<_>, _>>()?;
        if ids.len() < 3 {
            return Err(bad());
        }
        let mut hops = Vec::new();
        for w in ids.windows(3) {
            let port = PortKey {
                switch: w[1],
                to: w[2],
            };
            let (c, _, _) = self.port(port).ok_or_else(bad)?;
            let inbound = self.link(w[0], w[1]).ok_or_else(bad)?;
            hops.push(Hop {
                port,
                peak: c.max(inbound),
            });
        }
        if self.switch[ids[0]].is_some() || self.switch[ids[ids.len() - 1]].is_some() {
            return Err(bad());
        }
        Ok(Flow {
            name: f.name.clone(),
            hops,
            rate: f.rate,
            max_packet: f.max_packet,
            burst: f.burst,
            host_delay: f.host_delay,
            deadline: f.deadline,
        })
    }
}

/// Equation (2) with peak `p`, rounded down to the grid: `g = (b − M)/(p − r)`; needs `r < p`.
pub(crate) fn inflexion(b: Q, m: Q, peak: Q, r: Q) -> Result<Q, ArithError> {
    Q::new(inflexion_grid(b, m, peak, r)?, GRID)
}

/// [`inflexion`] as a whole number of grid steps (ps): `⌊(b − M)·GRID / (p − r)⌋`, by one
/// integer division when the products fit in `i128` (else through exact rationals).
pub(crate) fn inflexion_grid(b: Q, m: Q, peak: Q, r: Q) -> Result<i128, ArithError> {
    let (u, v) = (b.sub(m)?, peak.sub(r)?);
    if v.numer() == 0 {
        return Err(ArithError::DivisionByZero);
    }
    // u/v = (u.n·v.d) / (u.d·v.n); denominators are positive, so the sign sits on v.n.
    let sign = v.numer().signum();
    let fast = u
        .numer()
        .checked_mul(v.denom())
        .and_then(|x| x.checked_mul(GRID))
        .and_then(|x| x.checked_mul(sign))
        .zip(u.denom().checked_mul(v.numer().abs()));
    match fast {
        Some((n, d)) => Ok(n.div_euclid(d)),
        None => Ok(u.div(v)?.mul(Q::new(GRID, 1)?)?.floor()),
    }
}

/// Per-port aggregate → `(delay bound (grid, up), backlog bound)`: equations (6) and (4) (or the
/// vertical deviation at `t_mux` when `g_max < t_mux`). Needs `Σr ≤ C`.
pub(crate) fn port_bounds(
    c: Q,
    t_mux: Q,
    sum_b: Q,
    sum_r: Q,
    g_max: Q,
) -> Result<(Q, Q), ArithError> {
    let delay = sum_b
        .div(c)?
        .add(t_mux)?
        .sub(g_max.mul(Q::ONE.sub(sum_r.div(c)?)?)?)?
        .round_up(GRID)?;
    let t = g_max.max(t_mux);
    let backlog = sum_b.add(sum_r.mul(t)?)?.sub(c.mul(t.sub(t_mux)?)?)?;
    Ok((delay, backlog))
}

/// Bounds and estimates at one port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortReport {
    /// The port.
    pub key: PortKey,
    /// Switch name.
    pub switch: String,
    /// Next node name.
    pub to: String,
    /// Equation (4), bits; `None` when not finite.
    pub backlog_bound: Option<Q>,
    /// Equation (5), bits; `None` when an input burst is not finite.
    pub backlog_estimate: Option<Q>,
    /// Equation (6), s (rounded up to 1 ps); `None` when not finite.
    pub delay_bound: Option<Q>,
    /// Equation (7), s; `None` when an input burst is not finite.
    pub delay_estimate: Option<Q>,
    /// `Σr / C`.
    pub utilization: Q,
}

/// End-to-end bound of one flow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowReport {
    /// Name.
    pub name: String,
    /// The tightest sound bound (host delay included), s: the minimum of [`FlowReport::bounds`];
    /// `None` when not finite.
    pub delay_bound: Option<Q>,
    /// The method that gave [`FlowReport::delay_bound`].
    pub method: Option<Method>,
    /// The bound of every method (TFA: Σ port delay bounds + host delay).
    pub bounds: MethodBounds,
}

impl FlowReport {
    /// The report of a flow from its bounds by every method.
    pub fn from_bounds(name: String, bounds: MethodBounds) -> FlowReport {
        let best = bounds.best();
        FlowReport {
            name,
            delay_bound: best.map(|b| b.0),
            method: best.map(|b| b.1),
            bounds,
        }
    }
}

/// A violated admission constraint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Violation {
    /// Equation (1): the rates crossing a port exceed its effective rate.
    RateOverCapacity {
        /// Switch.
        switch: String,
        /// Next node.
        to: String,
        /// Σr, bit/s.
        rate: Q,
        /// C, bit/s.
        capacity: Q,
    },
    /// The backlog bounds of a switch's ports exceed its buffer memory.
    BufferOverMemory {
        /// Switch.
        switch: String,
        /// Σ backlog bounds, bits.
        backlog: Q,
        /// Buffer memory, bits.
        buffer: Q,
    },
    /// A flow's rate is not below a port's rate on its path.
    RateAtLinkSpeed {
        /// Flow.
        flow: String,
    },
    /// The ports of a flow's path depend on each other in a cycle (TFA needs feed-forward).
    Cyclic {
        /// Flow.
        flow: String,
    },
    /// A flow has no finite bound (a consequence of another violation on its path).
    Unbounded {
        /// Flow.
        flow: String,
    },
    /// A flow's bound exceeds its deadline.
    DeadlineMissed {
        /// Flow.
        flow: String,
        /// Bound, s.
        bound: Q,
        /// Deadline, s.
        deadline: Q,
    },
}

fn us(q: &Q) -> String {
    format!("{:.1}", q.to_f64() * 1e6)
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::RateOverCapacity {
                switch,
                to,
                rate,
                capacity,
            } => write!(
                f,
                "rate over capacity at {switch}->{to}: {} > {} bit/s",
                rate.to_f64(),
                capacity.to_f64()
            ),
            Violation::BufferOverMemory {
                switch,
                backlog,
                buffer,
            } => write!(
                f,
                "buffer over switch memory at {switch}: {} > {} bytes",
                backlog.ceil_bytes().unwrap_or(i128::MAX),
                buffer.ceil_bytes().unwrap_or(i128::MAX)
            ),
            Violation::RateAtLinkSpeed { flow } => {
                write!(f, "flow {flow}: rate not below a link rate on its path")
            }
            Violation::Cyclic { flow } => write!(f, "flow {flow}: cyclic port dependency"),
            Violation::Unbounded { flow } => write!(f, "flow {flow}: delay bound not finite"),
            Violation::DeadlineMissed {
                flow,
                bound,
                deadline,
            } => write!(
                f,
                "flow {flow}: delay bound {} us over deadline {} us",
                us(bound),
                us(deadline)
            ),
        }
    }
}

/// The result of an analysis.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Report {
    /// Ports that carry at least one flow, ordered by (switch, next node) index.
    pub ports: Vec<PortReport>,
    /// Flows, in input order.
    pub flows: Vec<FlowReport>,
    /// Violated constraints (empty: admitted).
    pub violations: Vec<Violation>,
}

impl Report {
    /// True if no constraint is violated.
    pub fn admitted(&self) -> bool {
        self.violations.is_empty()
    }
}

/// Full analysis of a set of flows (issue 5 item 2).
pub fn analyze(topo: &Topology, flows: &[Flow]) -> Result<Report, AnalysisError> {
    analyze_with(topo, flows, LpUse::default())
}

/// [`analyze`], with the LP bound for the flows `lp` names.
pub fn analyze_with(topo: &Topology, flows: &[Flow], lp: LpUse) -> Result<Report, AnalysisError> {
    Ok(analyze_with_bursts(topo, flows, lp)?.0)
}

/// `[f][h]`: a burst of flow `f` at its `h`-th hop, `None` where not finite.
pub(crate) type HopBursts = Vec<Vec<Option<Q>>>;

/// [`analyze`], and every flow's FIFO-aware burst at every hop (`None` where not finite).
pub(crate) fn analyze_with_bursts(
    topo: &Topology,
    flows: &[Flow],
    lp: LpUse,
) -> Result<(Report, HopBursts), AnalysisError> {
    let mut report = Report::default();
    // Ports and the (flow, hop) entries at each.
    let mut at: BTreeMap<PortKey, Vec<(usize, usize)>> = BTreeMap::new();
    let mut succ: HashMap<PortKey, Vec<PortKey>> = HashMap::new();
    let mut indeg: HashMap<PortKey, usize> = HashMap::new();
    for (fi, f) in flows.iter().enumerate() {
        for (h, hop) in f.hops.iter().enumerate() {
            at.entry(hop.port).or_default().push((fi, h));
            indeg.entry(hop.port).or_insert(0);
            if let Some(next) = f.hops.get(h + 1) {
                succ.entry(hop.port).or_default().push(next.port);
                *indeg.entry(next.port).or_insert(0) += 1;
            }
        }
    }
    let mut order: Vec<PortKey> = indeg
        .iter()
        .filter(|(_, &d)| d == 0)
        .map(|(&k, _)| k)
        .collect();
    order.sort();
    let mut i = 0;
    while i < order.len() {
        for n in succ.get(&order[i]).map_or(&[][..], Vec::as_slice) {
            let d = indeg.get_mut(n).ok_or(ArithError::Overflow)?;
            *d -= 1;
            if *d == 0 {
                order.push(*n);
            }
        }
        i += 1;
    }
    // bursts[f][h]: Some(b) once known.
    let mut bursts: Vec<Vec<Option<Q>>> = flows
        .iter()
        .map(|f| {
            let mut v = vec![None; f.hops.len()];
            v[0] = Some(f.burst);
            v
        })
        .collect();
    let mut delays: HashMap<PortKey, Q> = HashMap::new();
    let mut results: HashMap<PortKey, PortReport> = HashMap::new();
    for key in &order {
        let entries = &at[key];
        // Invariant: every port key comes from a resolved hop, whose port exists.
        let (c, t_mux, _) = topo
            .port(*key)
            .ok_or_else(|| AnalysisError::BadPath(String::new()))?;
        let sum_r = crate::rational::sum(entries.iter().map(|&(f, _)| flows[f].rate))?;
        let mut ok = sum_r <= c;
        if !ok {
            report.violations.push(Violation::RateOverCapacity {
                switch: topo.name(key.switch).into(),
                to: topo.name(key.to).into(),
                rate: sum_r,
                capacity: c,
            });
        }
        let mut sum_b = Some(Q::ZERO);
        let mut g_max = Q::ZERO;
        for &(f, h) in entries {
            let fl = &flows[f];
            if fl.rate >= c {
                ok = false;
                report.violations.push(Violation::RateAtLinkSpeed {
                    flow: fl.name.clone(),
                });
            }
            match (bursts[f][h], sum_b) {
                (Some(b), Some(s)) => {
                    sum_b = Some(s.add(b)?);
                    if ok {
                        g_max = g_max.max(inflexion(b, fl.max_packet, fl.hops[h].peak, fl.rate)?);
                    }
                }
                _ => sum_b = None,
            }
        }
        let bounds = match (ok, sum_b) {
            (true, Some(sb)) => Some(port_bounds(c, t_mux, sb, sum_r, g_max)?),
            _ => None,
        };
        if let Some((d, _)) = bounds {
            delays.insert(*key, d);
            for &(f, h) in entries {
                if h + 1 < flows[f].hops.len() {
                    if let Some(b) = bursts[f][h] {
                        bursts[f][h + 1] = Some(b.add(flows[f].rate.mul(d)?)?);
                    }
                }
            }
        }
        results.insert(
            *key,
            port_report(topo, *key, c, t_mux, sum_b, sum_r, bounds)?,
        );
    }
    for (k, entries) in &at {
        if !results.contains_key(k) {
            for &(f, _) in entries {
                report.violations.push(Violation::Cyclic {
                    flow: flows[f].name.clone(),
                });
            }
        }
    }
    report.ports = at.keys().filter_map(|k| results.remove(k)).collect();
    let mut per_switch: BTreeMap<usize, Option<Q>> = BTreeMap::new();
    for p in &report.ports {
        let e = per_switch.entry(p.key.switch).or_insert(Some(Q::ZERO));
        *e = match (*e, p.backlog_bound) {
            (Some(a), Some(b)) => Some(a.add(b)?),
            _ => None,
        };
    }
    for (s, total) in per_switch {
        if let (Some(total), Some(buffer)) = (total, topo.buffer(s)) {
            if total > buffer {
                report.violations.push(Violation::BufferOverMemory {
                    switch: topo.name(s).into(),
                    backlog: total,
                    buffer,
                });
            }
        }
    }
    let fifo = fifo_pass(topo, flows, &order, &at, &delays)?;
    for (fi, f) in flows.iter().enumerate() {
        let mut total = Some(f.host_delay);
        for hop in &f.hops {
            total = match (total, delays.get(&hop.port)) {
                (Some(t), Some(d)) => Some(t.add(*d)?),
                _ => None,
            };
        }
        let bounds = match total {
            Some(tfa) => fifo.flow_bounds(flows, &at, fi, tfa, lp)?,
            None => MethodBounds::default(),
        };
        let fr = FlowReport::from_bounds(f.name.clone(), bounds);
        check_flow(f, fr.delay_bound, &mut report.violations);
        report.flows.push(fr);
    }
    Ok((report, fifo.bursts))
}

/// The FIFO-aware TFA propagation of a whole network (see [`crate::methods`]): per port
/// `(Σr, Σb, delay bound)` with FIFO-aware bursts, and every flow's burst at every hop.
struct FifoPass {
    ports: FastMap<PortKey, PortView>,
    delays: FastMap<PortKey, Q>,
    bursts: HopBursts,
    /// Per pair of consecutive hops (a → b): Σ of the bursts at b of the flows that go a → b.
    from_prev: FastMap<(PortKey, PortKey), Q>,
}

/// Runs the FIFO-aware propagation over the ports that have a TFA bound (`tfa_delays`), in the
/// topological `order`.
fn fifo_pass(
    topo: &Topology,
    flows: &[Flow],
    order: &[PortKey],
    at: &BTreeMap<PortKey, Vec<(usize, usize)>>,
    tfa_delays: &HashMap<PortKey, Q>,
) -> Result<FifoPass, AnalysisError> {
    let mut bursts: HopBursts = flows
        .iter()
        .map(|f| {
            let mut v = vec![None; f.hops.len()];
            v[0] = Some(f.burst);
            v
        })
        .collect();
    let mut ports = FastMap::default();
    let mut delays = FastMap::default();
    for key in order {
        if !tfa_delays.contains_key(key) {
            continue;
        }
        let entries = &at[key];
        let (c, t_mux, _) = topo
            .port(*key)
            .ok_or_else(|| AnalysisError::BadPath(String::new()))?;
        let mut sum_r = Q::ZERO;
        let mut sum_b = Some(Q::ZERO);
        let mut g_max = Q::ZERO;
        for &(f, h) in entries {
            let fl = &flows[f];
            sum_r = sum_r.add(fl.rate)?;
            sum_b = match (sum_b, bursts[f][h]) {
                (Some(s), Some(b)) => {
                    g_max = g_max.max(inflexion(b, fl.max_packet, fl.hops[h].peak, fl.rate)?);
                    Some(s.add(b)?)
                }
                _ => None,
            };
        }
        let Some(sum_b) = sum_b else { continue };
        // Both are bounds on the port's delay (each from valid arrival curves); the minimum
        // also keeps FIFO-aware TFA at or below TFA despite the grid rounding of g.
        let d = port_bounds(c, t_mux, sum_b, sum_r, g_max)?
            .0
            .min(tfa_delays[key]);
        let step = methods::FifoGrowth::new(c, t_mux, sum_b, d)?;
        for &(f, h) in entries {
            if h + 1 < flows[f].hops.len() {
                if let Some(b) = bursts[f][h] {
                    bursts[f][h + 1] = Some(b.add(flows[f].rate.mul(step.growth(b)?)?)?);
                }
            }
        }
        delays.insert(*key, d);
        ports.insert(
            *key,
            PortView {
                key: *key,
                c,
                t_mux,
                sum_r,
                sum_b,
            },
        );
    }
    let mut from_prev: FastMap<(PortKey, PortKey), Q> = FastMap::default();
    for (f, fl) in flows.iter().enumerate() {
        for (w, b) in fl.hops.windows(2).zip(&bursts[f][1..]) {
            if let Some(b) = b {
                let e = from_prev.entry((w[0].port, w[1].port)).or_insert(Q::ZERO);
                *e = e.add(*b)?;
            }
        }
    }
    Ok(FifoPass {
        ports,
        delays,
        bursts,
        from_prev,
    })
}

impl FifoPass {
    /// Every method's bound for flow `fi`, whose TFA bound (host delay included) is `tfa`.
    #[cfg_attr(not(test), allow(unused_variables))]
    fn flow_bounds(
        &self,
        flows: &[Flow],
        at: &BTreeMap<PortKey, Vec<(usize, usize)>>,
        fi: usize,
        tfa: Q,
        lp: LpUse,
    ) -> Result<MethodBounds, ArithError> {
        let f = &flows[fi];
        let mut bounds = MethodBounds {
            tfa: Some(tfa),
            ..MethodBounds::default()
        };
        let views: Option<Vec<PortView>> = f
            .hops
            .iter()
            .map(|h| self.ports.get(&h.port).copied())
            .collect();
        let own: Option<Vec<Q>> = self.bursts[fi].iter().copied().collect();
        let (Some(views), Some(own)) = (views, own) else {
            return Ok(bounds);
        };
        let mut t = f.host_delay;
        for v in &views {
            // Invariant: a port with a view has a delay.
            t = t.add(self.delays.get(&v.key).copied().unwrap_or(Q::ZERO))?;
        }
        bounds.fifo_tfa = Some(t);
        // An overflow in SFA or PMOO leaves that method out; TFA still bounds the flow.
        bounds.sfa = methods::sfa(f, &views, &own).unwrap_or(None);
        let from_prev: Vec<Q> = (0..views.len())
            .map(|k| {
                k.checked_sub(1)
                    .and_then(|p| self.from_prev.get(&(views[p].key, views[k].key)))
                    .copied()
                    .unwrap_or(Q::ZERO)
            })
            .collect();
        bounds.pmoo = methods::pmoo(f, &views, &own, &from_prev).unwrap_or(None);
        #[cfg(test)]
        {
            // The per-port sum equals the paper's run-by-run sum (checked on every analysis the
            // tests run).
            let by_runs = methods::pmoo_by_runs(f, &views, |j, push| {
                for &(g, h) in &at[&views[j].key] {
                    if g != fi {
                        push(methods::Cross {
                            flow: &flows[g],
                            hop: h,
                            burst: self.bursts[g][h].unwrap_or(Q::ZERO),
                        })?;
                    }
                }
                Ok(())
            })
            .unwrap_or(None);
            assert_eq!(bounds.pmoo, by_runs, "PMOO of flow {}", f.name);
        }
        if lp.wants(f, &bounds) {
            let cross: Vec<Vec<(usize, usize)>> = views
                .iter()
                .map(|v| {
                    at.get(&v.key).map_or_else(Vec::new, |e| {
                        e.iter().copied().filter(|&(g, _)| g != fi).collect()
                    })
                })
                .collect();
            bounds.lp = methods::lp(
                f,
                &views,
                &own,
                &cross,
                |g| flows.get(g),
                |g, h| self.bursts.get(g)?.get(h).copied().flatten(),
            )
            .unwrap_or(None);
        }
        Ok(bounds)
    }
}

pub(crate) fn check_flow(f: &Flow, total: Option<Q>, violations: &mut Vec<Violation>) {
    match (total, f.deadline) {
        (None, _) => violations.push(Violation::Unbounded {
            flow: f.name.clone(),
        }),
        (Some(bound), Some(deadline)) if bound > deadline => {
            violations.push(Violation::DeadlineMissed {
                flow: f.name.clone(),
                bound,
                deadline,
            })
        }
        _ => {}
    }
}

/// Builds a [`PortReport`] from a port's aggregates.
pub(crate) fn port_report(
    topo: &Topology,
    key: PortKey,
    c: Q,
    t_mux: Q,
    sum_b: Option<Q>,
    sum_r: Q,
    bounds: Option<(Q, Q)>,
) -> Result<PortReport, ArithError> {
    let (backlog_estimate, delay_estimate) = match sum_b {
        Some(sb) => (Some(sb.add(c.mul(t_mux)?)?), Some(sb.div(c)?.add(t_mux)?)),
        None => (None, None),
    };
    Ok(PortReport {
        key,
        switch: topo.name(key.switch).into(),
        to: topo.name(key.to).into(),
        backlog_bound: bounds.map(|b| b.1),
        backlog_estimate,
        delay_bound: bounds.map(|b| b.0),
        delay_estimate,
        utilization: sum_r.div(c)?,
    })
}

/// Parses nothing: resolves every flow of a file and analyses them.
pub fn analyze_file(file: &NetFile) -> Result<Report, AnalysisError> {
    analyze_file_with(file, LpUse::default())
}

/// [`analyze_file`], with the LP bound for the flows `lp` names.
pub fn analyze_file_with(file: &NetFile, lp: LpUse) -> Result<Report, AnalysisError> {
    let topo = Topology::from_netfile(file);
    let flows = file
        .flows
        .iter()
        .map(|f| topo.resolve(f))
        .collect::<Result<Vec<_>, _>>()?;
    analyze_with(&topo, &flows, lp)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The one-division inflexion time equals the exact rational one rounded down.
        #[test]
        fn inflexion_grid_matches_rationals(b in 0i128..1 << 40, bd in 1i128..1 << 40,
                                            m in 0i128..100_000, p in 1i128..1 << 34,
                                            r in 0i128..1 << 34, rd in prop_oneof![Just(1i128), 1i128..1 << 20]) {
            let (b, m, p, r) = (Q::new(b, bd).unwrap(), Q::int(m as i64), Q::int(p as i64), Q::new(r, rd).unwrap());
            let exact = b.sub(m).unwrap().div(p.sub(r).unwrap());
            match exact {
                Ok(x) => {
                    let want = x.mul(Q::new(GRID, 1).unwrap()).unwrap().floor();
                    prop_assert_eq!(inflexion_grid(b, m, p, r).unwrap(), want);
                    prop_assert_eq!(inflexion(b, m, p, r).unwrap(), Q::new(want, GRID).unwrap());
                }
                Err(e) => prop_assert_eq!(inflexion_grid(b, m, p, r), Err(e)),
            }
        }
    }
}
