//! Incremental admission for the bandwidth manager (issue 5 items 3 and 6; seed 004 §3.2, seed
//! 001 §3.2): keeps per-port aggregates (Σr, Σb, the multiset of inflexion times `g_k`) so that
//! admitting or releasing a flow recomputes only the ports on its path and the ports downstream
//! of them whose inputs actually change — not a full re-analysis. The results are exactly those
//! of [`crate::analysis::analyze`] on the booked set (a proptest checks it).
//!
//! Speed (issue 5 item 6): in a leaf–spine network where most flows cross one spine, one more
//! flow moves the bursts of nearly every booked flow, so the per-flow work must be small. The
//! inflexion times are kept as whole grid steps (ps) so the `g_max` multiset compares integers,
//! the maps use a small Fx-style hasher (the keys are our own indices, not attacker-chosen),
//! and deadlines are re-checked only for flows that have one.
//!
//! Call order: [`Booking::new`] once, then any sequence of [`Booking::try_admit`] and
//! [`Booking::release`]; read [`Booking::report`] or [`Booking::flow_bound`] at any time.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

use crate::analysis::{
    check_flow, inflexion_grid, port_bounds, port_report, Flow, FlowReport, PortKey, Report,
    Topology, Violation,
};
use crate::methods::{self, LpUse, MethodBounds, PortView};
use crate::network::GRID;
use crate::rational::{ArithError, Q};

/// FxHash (rustc's hasher): one multiply per word. The keys are port and flow indices this
/// module hands out, so the DoS resistance of the default SipHash buys nothing here and costs
/// a large part of an admission.
#[derive(Default, Clone, Copy)]
pub(crate) struct FxHasher(u64);

impl FxHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
    }

    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

pub(crate) type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;
type FastSet<K> = HashSet<K, BuildHasherDefault<FxHasher>>;

/// Errors from booking (refusals are [`Refusal`], not errors).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BookingError {
    /// Exact arithmetic overflowed.
    #[error(transparent)]
    Arith(#[from] ArithError),
    /// No booked flow has this id.
    #[error("no booked flow {0}")]
    UnknownFlow(u64),
    /// A hop names a port that is not in the topology.
    #[error("flow `{0}` crosses a port that is not in the topology")]
    BadPort(String),
}

/// Why a flow was refused: the constraints its admission would violate.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("refused: {}", .violations.iter().map(|v| v.to_string()).collect::<Vec<_>>().join("; "))]
pub struct Refusal {
    /// The violated constraints.
    pub violations: Vec<Violation>,
}

/// An admitted flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdict {
    /// Its id, for [`Booking::release`].
    pub id: u64,
    /// Its end-to-end delay bound (s).
    pub delay_bound: Q,
}

#[derive(Debug, Clone)]
struct PortState {
    c: Q,
    t_mux: Q,
    /// Flow id → hop index at this port.
    flows: FastMap<u64, usize>,
    sum_r: Q,
    sum_b: Q,
    /// Multiset of the inflexion times `g_k` here, in grid steps.
    g: BTreeMap<i128, u32>,
    delay: Q,
    backlog: Q,
    /// Σb of the FIFO-aware bursts here (see [`crate::methods`]).
    fsum_b: Q,
    /// `fsum_b` when the port was last recomputed (θ of every flow here depends on it).
    fsum_b_settled: Q,
    /// Multiset of the inflexion times of the FIFO-aware bursts, in grid steps.
    fg: BTreeMap<i128, u32>,
    /// Delay bound with the FIFO-aware bursts.
    fdelay: Q,
    /// Next ports of the flows here, with multiplicity.
    succ: FastMap<PortKey, u32>,
}

#[derive(Debug, Clone)]
struct Booked {
    flow: Flow,
    bursts: Vec<Q>,
    /// Inflexion time at each hop, in grid steps.
    gs: Vec<i128>,
    /// FIFO-aware burst at each hop.
    fbursts: Vec<Q>,
    /// Inflexion time of the FIFO-aware burst at each hop, in grid steps.
    fgs: Vec<i128>,
}

/// The booked state of a network (see the module doc).
#[derive(Debug, Clone)]
pub struct Booking {
    topo: Topology,
    ports: FastMap<PortKey, PortState>,
    flows: FastMap<u64, Booked>,
    switch_backlog: FastMap<usize, Q>,
    next_id: u64,
}

enum Outcome {
    Done,
    Cyclic,
}

impl Booking {
    /// An empty booking over a topology.
    pub fn new(topo: Topology) -> Booking {
        Booking {
            topo,
            ports: FastMap::default(),
            flows: FastMap::default(),
            switch_backlog: FastMap::default(),
            next_id: 0,
        }
    }

    /// The topology.
    pub fn topology(&self) -> &Topology {
        &self.topo
    }

    /// Number of booked flows.
    pub fn len(&self) -> usize {
        self.flows.len()
    }

    /// True if nothing is booked.
    pub fn is_empty(&self) -> bool {
        self.flows.is_empty()
    }

    /// Admits `flow` if, with it, every port stays within capacity, every switch within its
    /// buffer memory and every booked flow (the new one included) within its deadline; otherwise
    /// leaves the booking unchanged and returns the violations.
    pub fn try_admit(&mut self, flow: Flow) -> Result<Result<Verdict, Refusal>, BookingError> {
        // Cheap checks first: equation (1) and r < C on every hop, without touching state.
        let mut violations = self.rate_violations(std::slice::from_ref(&flow))?;
        if !violations.is_empty() {
            return Ok(Err(Refusal { violations }));
        }
        let id = self.next_id;
        self.next_id += 1;
        let mut touched = Touched::default();
        let outcome = self.insert(id, flow, &mut touched)?;
        if let Outcome::Cyclic = outcome {
            let name = self.flows[&id].flow.name.clone();
            self.remove(id, &mut Touched::default())?;
            return Ok(Err(Refusal {
                violations: vec![Violation::Cyclic { flow: name }],
            }));
        }
        for s in &touched.switches {
            if let (Some(buffer), Some(&b)) = (self.topo.buffer(*s), self.switch_backlog.get(s)) {
                if b > buffer {
                    violations.push(Violation::BufferOverMemory {
                        switch: self.topo.name(*s).into(),
                        backlog: b,
                        buffer,
                    });
                }
            }
        }
        // Only a flow with a deadline can miss it (every bound here is finite).
        let mut checked = FastSet::default();
        for p in touched
            .ports
            .iter()
            .chain(self.flows[&id].flow.hops.iter().map(|h| &h.port))
        {
            for &f in self.ports[p].flows.keys() {
                let b = &self.flows[&f].flow;
                if let Some(deadline) = b.deadline {
                    if checked.insert(f) {
                        // TFA alone often settles it; the other methods only when it does not.
                        if self.tfa_bound(b)? > deadline {
                            check_flow(b, Some(self.best_of(f)?), &mut violations);
                        }
                    }
                }
            }
        }
        if violations.is_empty() {
            let delay_bound = self.best_of(id)?;
            Ok(Ok(Verdict { id, delay_bound }))
        } else {
            self.remove(id, &mut Touched::default())?;
            Ok(Err(Refusal { violations }))
        }
    }

    /// Releases a booked flow; the bounds of the others are updated.
    pub fn release(&mut self, id: u64) -> Result<(), BookingError> {
        if !self.flows.contains_key(&id) {
            return Err(BookingError::UnknownFlow(id));
        }
        self.remove(id, &mut Touched::default())
    }

    /// The end-to-end bound of a booked flow (s).
    pub fn flow_bound(&self, id: u64) -> Option<Q> {
        self.best_of(id).ok()
    }

    fn ids_in_order(&self) -> Vec<u64> {
        let mut ids: Vec<u64> = self.flows.keys().copied().collect();
        ids.sort_unstable();
        ids
    }

    /// The TFA bound of a booked flow: Σ port delays + host delay.
    fn tfa_bound(&self, f: &Flow) -> Result<Q, ArithError> {
        let mut t = f.host_delay;
        for h in &f.hops {
            t = t.add(self.ports.get(&h.port).map_or(Q::ZERO, |p| p.delay))?;
        }
        Ok(t)
    }

    /// The tightest bound of booked flow `id` (see [`crate::methods`]).
    fn best_of(&self, id: u64) -> Result<Q, BookingError> {
        self.bounds_of(id)?
            .best()
            .map(|b| b.0)
            .ok_or(BookingError::UnknownFlow(id))
    }

    /// Every method's bound for booked flow `id`, from the booked state: exactly what
    /// [`crate::analysis::analyze`] computes for the booked set.
    fn bounds_of(&self, id: u64) -> Result<MethodBounds, BookingError> {
        let b = self.flows.get(&id).ok_or(BookingError::UnknownFlow(id))?;
        let f = &b.flow;
        let mut views = Vec::with_capacity(f.hops.len());
        let mut fifo_tfa = f.host_delay;
        for h in &f.hops {
            // Invariant: every hop of a booked flow has a port state.
            let p = self
                .ports
                .get(&h.port)
                .ok_or_else(|| BookingError::BadPort(f.name.clone()))?;
            fifo_tfa = fifo_tfa.add(p.fdelay)?;
            views.push(PortView {
                key: h.port,
                c: p.c,
                t_mux: p.t_mux,
                sum_r: p.sum_r,
                sum_b: p.fsum_b,
            });
        }
        // PMOO's S_k, gathered here rather than kept on every burst move: this runs for one
        // flow per admission (and for deadline flows TFA cannot settle), a move for thousands.
        let mut from_prev = vec![Q::ZERO; views.len()];
        for k in 1..views.len() {
            let prev = views[k - 1].key;
            for (&g, &h) in &self.ports[&views[k].key].flows {
                if let Some(x) = self.flows.get(&g) {
                    if h > 0 && x.flow.hops[h - 1].port == prev {
                        from_prev[k] = from_prev[k].add(x.fbursts[h])?;
                    }
                }
            }
        }
        // As in `analyze`: an overflow in SFA or PMOO leaves that method out.
        let pmoo = methods::pmoo(f, &views, &b.fbursts, &from_prev).unwrap_or(None);
        let mut bounds = MethodBounds {
            tfa: Some(self.tfa_bound(f)?),
            fifo_tfa: Some(fifo_tfa),
            sfa: methods::sfa(f, &views, &b.fbursts).unwrap_or(None),
            pmoo,
            lp: None,
        };
        // As `analyze` by default: the LP for a deadline the other methods miss.
        if LpUse::Deadlines.wants(f, &bounds) {
            let mut cross: Vec<Vec<(u64, usize)>> = Vec::with_capacity(views.len());
            for v in &views {
                let mut at: Vec<(u64, usize)> = self.ports[&v.key]
                    .flows
                    .iter()
                    .filter(|&(&g, _)| g != id)
                    .map(|(&g, &h)| (g, h))
                    .collect();
                at.sort_unstable();
                cross.push(at);
            }
            bounds.lp = methods::lp(
                f,
                &views,
                &b.fbursts,
                &cross,
                |g| self.flows.get(&g).map(|x| &x.flow),
                |g, h| self.flows.get(&g)?.fbursts.get(h).copied(),
            )
            .unwrap_or(None);
        }
        Ok(bounds)
    }

    /// The same report [`crate::analysis::analyze`] gives for the booked flows in id order.
    pub fn report(&self) -> Result<Report, BookingError> {
        let mut r = Report::default();
        let mut keys: Vec<&PortKey> = self.ports.keys().collect();
        keys.sort();
        for k in keys {
            let p = &self.ports[k];
            r.ports.push(port_report(
                &self.topo,
                *k,
                p.c,
                p.t_mux,
                Some(p.sum_b),
                p.sum_r,
                Some((p.delay, p.backlog)),
            )?);
        }
        for id in self.ids_in_order() {
            r.flows.push(FlowReport::from_bounds(
                self.flows[&id].flow.name.clone(),
                self.bounds_of(id)?,
            ));
        }
        Ok(r)
    }

    /// Admits `flows` together, as a restart re-books what was persisted: they are inserted
    /// first and every port they cross is then settled once (instead of once per flow), then
    /// every check of [`Booking::try_admit`] runs for the whole network. All or nothing: on any
    /// violation nothing is booked and every violation is returned (a caller that must know
    /// which flows fit then admits them one by one). Ids are handed out in order.
    pub fn try_admit_all(
        &mut self,
        flows: Vec<Flow>,
    ) -> Result<Result<Vec<Verdict>, Refusal>, BookingError> {
        let violations = self.rate_violations(&flows)?;
        if !violations.is_empty() {
            return Ok(Err(Refusal { violations }));
        }
        let backup = self.clone();
        match self.admit_all_unchecked(flows) {
            Ok(Ok(verdicts)) => Ok(Ok(verdicts)),
            other => {
                *self = backup;
                other
            }
        }
    }

    /// Equation (1) and r < C for `flows` added together to what is booked: a flow at or above
    /// a port's rate is reported (and not counted there), then every port whose total would exceed
    /// its rate, once.
    fn rate_violations(&self, flows: &[Flow]) -> Result<Vec<Violation>, BookingError> {
        let mut violations = Vec::new();
        let mut sums: BTreeMap<PortKey, Q> = BTreeMap::new();
        for flow in flows {
            for hop in &flow.hops {
                let (c, _, _) = self
                    .topo
                    .port(hop.port)
                    .ok_or_else(|| BookingError::BadPort(flow.name.clone()))?;
                if flow.rate >= c {
                    violations.push(Violation::RateAtLinkSpeed {
                        flow: flow.name.clone(),
                    });
                    continue;
                }
                let used = self.ports.get(&hop.port).map_or(Q::ZERO, |p| p.sum_r);
                let sum = sums.entry(hop.port).or_insert(used);
                *sum = sum.add(flow.rate)?;
            }
        }
        for (port, total) in &sums {
            if let Some((c, _, _)) = self.topo.port(*port) {
                if *total > c {
                    violations.push(Violation::RateOverCapacity {
                        switch: self.topo.name(port.switch).into(),
                        to: self.topo.name(port.to).into(),
                        rate: *total,
                        capacity: c,
                    });
                }
            }
        }
        Ok(violations)
    }

    fn admit_all_unchecked(
        &mut self,
        flows: Vec<Flow>,
    ) -> Result<Result<Vec<Verdict>, Refusal>, BookingError> {
        let mut ids = Vec::with_capacity(flows.len());
        let mut seeds = Vec::new();
        let mut pending = Pending::default();
        for flow in flows {
            let id = self.next_id;
            self.next_id += 1;
            for s in self.insert_unsettled(id, flow)? {
                pending.entry(s).or_default().push(id);
                seeds.push(s);
            }
            ids.push(id);
        }
        let mut touched = Touched::default();
        if let Outcome::Cyclic = self.settle(&seeds, pending, &mut touched)? {
            let flow = ids
                .first()
                .map(|id| self.flows[id].flow.name.clone())
                .unwrap_or_default();
            return Ok(Err(Refusal {
                violations: vec![Violation::Cyclic { flow }],
            }));
        }
        let mut violations = Vec::new();
        let mut switches: Vec<usize> = self.switch_backlog.keys().copied().collect();
        switches.sort_unstable();
        for s in switches {
            if let (Some(buffer), Some(&b)) = (self.topo.buffer(s), self.switch_backlog.get(&s)) {
                if b > buffer {
                    violations.push(Violation::BufferOverMemory {
                        switch: self.topo.name(s).into(),
                        backlog: b,
                        buffer,
                    });
                }
            }
        }
        for id in self.ids_in_order() {
            check_flow(
                &self.flows[&id].flow,
                Some(self.best_of(id)?),
                &mut violations,
            );
        }
        if !violations.is_empty() {
            return Ok(Err(Refusal { violations }));
        }
        ids.into_iter()
            .map(|id| {
                let delay_bound = self.best_of(id)?;
                Ok(Verdict { id, delay_bound })
            })
            .collect::<Result<Vec<_>, BookingError>>()
            .map(Ok)
    }

    fn insert(
        &mut self,
        id: u64,
        flow: Flow,
        touched: &mut Touched,
    ) -> Result<Outcome, BookingError> {
        let seeds = self.insert_unsettled(id, flow)?;
        let mut pending = Pending::default();
        for s in &seeds {
            pending.entry(*s).or_default().push(id);
        }
        self.settle(&seeds, pending, touched)
    }

    /// Adds `flow`'s hops to their ports (bursts as at the first hop); returns the ports, which
    /// [`Booking::settle`] must then recompute.
    fn insert_unsettled(&mut self, id: u64, flow: Flow) -> Result<Vec<PortKey>, BookingError> {
        let n = flow.hops.len();
        let mut booked = Booked {
            bursts: vec![Q::ZERO; n],
            gs: vec![0; n],
            fbursts: vec![flow.burst; n],
            fgs: vec![0; n],
            flow,
        };
        booked.bursts[0] = booked.flow.burst;
        // Later hops start from the burst at the first hop; `settle` grows them.
        for h in 1..n {
            booked.bursts[h] = booked.flow.burst;
        }
        for h in 0..n {
            let hop = booked.flow.hops[h];
            let (c, t_mux, _) = self
                .topo
                .port(hop.port)
                .ok_or_else(|| BookingError::BadPort(booked.flow.name.clone()))?;
            let g = inflexion_grid(
                booked.bursts[h],
                booked.flow.max_packet,
                hop.peak,
                booked.flow.rate,
            )?;
            booked.gs[h] = g;
            booked.fgs[h] = g;
            let p = self.ports.entry(hop.port).or_insert_with(|| PortState {
                c,
                t_mux,
                flows: FastMap::default(),
                sum_r: Q::ZERO,
                sum_b: Q::ZERO,
                g: BTreeMap::new(),
                delay: Q::ZERO,
                backlog: Q::ZERO,
                fsum_b: Q::ZERO,
                fsum_b_settled: Q::ZERO,
                fg: BTreeMap::new(),
                fdelay: Q::ZERO,
                succ: FastMap::default(),
            });
            p.flows.insert(id, h);
            p.sum_r = p.sum_r.add(booked.flow.rate)?;
            p.sum_b = p.sum_b.add(booked.bursts[h])?;
            *p.g.entry(g).or_insert(0) += 1;
            p.fsum_b = p.fsum_b.add(booked.fbursts[h])?;
            *p.fg.entry(g).or_insert(0) += 1;
            if let Some(next) = booked.flow.hops.get(h + 1) {
                *p.succ.entry(next.port).or_insert(0) += 1;
            }
        }
        let seeds: Vec<PortKey> = booked.flow.hops.iter().map(|h| h.port).collect();
        self.flows.insert(id, booked);
        Ok(seeds)
    }

    fn remove(&mut self, id: u64, touched: &mut Touched) -> Result<(), BookingError> {
        let booked = self
            .flows
            .remove(&id)
            .ok_or(BookingError::UnknownFlow(id))?;
        let mut seeds = Vec::new();
        for (h, hop) in booked.flow.hops.iter().enumerate() {
            let Some(p) = self.ports.get_mut(&hop.port) else {
                continue;
            };
            p.flows.remove(&id);
            p.sum_r = p.sum_r.sub(booked.flow.rate)?;
            p.sum_b = p.sum_b.sub(booked.bursts[h])?;
            multiset_remove(&mut p.g, booked.gs[h]);
            p.fsum_b = p.fsum_b.sub(booked.fbursts[h])?;
            multiset_remove(&mut p.fg, booked.fgs[h]);
            if let Some(next) = booked.flow.hops.get(h + 1) {
                if let Some(c) = p.succ.get_mut(&next.port) {
                    *c -= 1;
                    if *c == 0 {
                        p.succ.remove(&next.port);
                    }
                }
            }
            seeds.push(hop.port);
        }
        self.settle(&seeds, Pending::default(), touched)?;
        for s in seeds {
            if self.ports.get(&s).is_some_and(|p| p.flows.is_empty()) {
                self.ports.remove(&s);
            }
        }
        Ok(())
    }

    /// Recomputes, in topological order, the ports reachable from `seeds`; `pending` names the
    /// flows whose burst changed at a port.
    fn settle(
        &mut self,
        seeds: &[PortKey],
        mut pending: Pending,
        touched: &mut Touched,
    ) -> Result<Outcome, BookingError> {
        // Reachable set and in-degrees within it.
        let mut reach: FastMap<PortKey, usize> = FastMap::default();
        let mut stack: Vec<PortKey> = Vec::new();
        for s in seeds {
            if reach.insert(*s, 0).is_none() {
                stack.push(*s);
            }
        }
        while let Some(p) = stack.pop() {
            if let Some(st) = self.ports.get(&p) {
                for n in st.succ.keys() {
                    if reach.insert(*n, 0).is_none() {
                        stack.push(*n);
                    }
                }
            }
        }
        let keys: Vec<PortKey> = reach.keys().copied().collect();
        for p in &keys {
            if let Some(st) = self.ports.get(p) {
                for n in st.succ.keys() {
                    if let Some(d) = reach.get_mut(n) {
                        *d += 1;
                    }
                }
            }
        }
        let mut queue: Vec<PortKey> = keys.iter().filter(|k| reach[*k] == 0).copied().collect();
        let mut done = 0;
        while let Some(p) = queue.pop() {
            done += 1;
            self.recompute(
                p,
                pending.remove(&p).unwrap_or_default(),
                &mut pending,
                touched,
            )?;
            if let Some(st) = self.ports.get(&p) {
                for n in st.succ.keys() {
                    if let Some(d) = reach.get_mut(n) {
                        *d -= 1;
                        if *d == 0 {
                            queue.push(*n);
                        }
                    }
                }
            }
        }
        Ok(if done < keys.len() {
            Outcome::Cyclic
        } else {
            Outcome::Done
        })
    }

    fn recompute(
        &mut self,
        key: PortKey,
        changed: Vec<u64>,
        pending: &mut Pending,
        touched: &mut Touched,
    ) -> Result<(), BookingError> {
        let Some(p) = self.ports.get_mut(&key) else {
            return Ok(());
        };
        let (delay, backlog, fdelay) = if p.flows.is_empty() {
            (Q::ZERO, Q::ZERO, Q::ZERO)
        } else {
            // Invariant: a port with flows has non-empty multisets of g.
            let g_max = Q::new(p.g.keys().next_back().copied().unwrap_or(0), GRID)?;
            let (d, b) = port_bounds(p.c, p.t_mux, p.sum_b, p.sum_r, g_max)?;
            let fg_max = Q::new(p.fg.keys().next_back().copied().unwrap_or(0), GRID)?;
            let (fd, _) = port_bounds(p.c, p.t_mux, p.fsum_b, p.sum_r, fg_max)?;
            (d, b, fd.min(d))
        };
        let delay_changed = delay != p.delay;
        // θ of every flow here moves with Σb, so the FIFO bursts of all of them may move.
        let fifo_changed = fdelay != p.fdelay || p.fsum_b != p.fsum_b_settled;
        if backlog != p.backlog {
            let e = self.switch_backlog.entry(key.switch).or_insert(Q::ZERO);
            *e = e.add(backlog)?.sub(p.backlog)?;
            p.backlog = backlog;
            touched.switches.insert(key.switch);
        }
        if delay_changed || fifo_changed {
            p.delay = delay;
            p.fdelay = fdelay;
            p.fsum_b_settled = p.fsum_b;
            touched.ports.insert(key);
        }
        let step = crate::methods::FifoGrowth::new(p.c, p.t_mux, p.fsum_b, fdelay)?;
        let push: Vec<(u64, usize)> = if delay_changed || fifo_changed {
            p.flows.iter().map(|(&f, &h)| (f, h)).collect()
        } else {
            changed
                .iter()
                .filter_map(|f| p.flows.get(f).map(|&h| (*f, h)))
                .collect()
        };
        for (f, h) in push {
            let Some(b) = self.flows.get_mut(&f) else {
                continue;
            };
            let Some(next) = b.flow.hops.get(h + 1).copied() else {
                continue;
            };
            let nb = b.bursts[h].add(b.flow.rate.mul(delay)?)?;
            let nfb = b.fbursts[h].add(b.flow.rate.mul(step.growth(b.fbursts[h])?)?)?;
            let (tfa_moves, fifo_moves) = (nb != b.bursts[h + 1], nfb != b.fbursts[h + 1]);
            if !tfa_moves && !fifo_moves {
                continue;
            }
            let mut np = self.ports.get_mut(&next.port);
            if tfa_moves {
                let ng = inflexion_grid(nb, b.flow.max_packet, next.peak, b.flow.rate)?;
                let (ob, og) = (b.bursts[h + 1], b.gs[h + 1]);
                b.bursts[h + 1] = nb;
                b.gs[h + 1] = ng;
                if let Some(np) = np.as_deref_mut() {
                    np.sum_b = np.sum_b.add(nb.sub(ob)?)?;
                    if ng != og {
                        multiset_remove(&mut np.g, og);
                        *np.g.entry(ng).or_insert(0) += 1;
                    }
                }
            }
            if fifo_moves {
                let ng = inflexion_grid(nfb, b.flow.max_packet, next.peak, b.flow.rate)?;
                let (ob, og) = (b.fbursts[h + 1], b.fgs[h + 1]);
                b.fbursts[h + 1] = nfb;
                b.fgs[h + 1] = ng;
                if let Some(np) = np {
                    np.fsum_b = np.fsum_b.add(nfb.sub(ob)?)?;
                    if ng != og {
                        multiset_remove(&mut np.fg, og);
                        *np.fg.entry(ng).or_insert(0) += 1;
                    }
                }
            }
            pending.entry(next.port).or_default().push(f);
        }
        Ok(())
    }
}

/// Per port, the flows whose burst there changed (a flow may appear twice; pushing it again
/// finds its burst unchanged).
type Pending = FastMap<PortKey, Vec<u64>>;

#[derive(Default)]
struct Touched {
    ports: FastSet<PortKey>,
    switches: FastSet<usize>,
}

fn multiset_remove(m: &mut BTreeMap<i128, u32>, k: i128) {
    if let Some(c) = m.get_mut(&k) {
        *c -= 1;
        if *c == 0 {
            m.remove(&k);
        }
    }
}
