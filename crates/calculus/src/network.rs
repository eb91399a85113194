//! Multi-hop analysis of feed-forward networks of rate-latency servers (issue 5 item 1; Le Boudec &
//! Thiran ch. 6 and Schmitt/Zdarsky's DISCO terminology): total flow analysis (TFA) and separated
//! flow analysis (SFA).
//!
//! - **TFA** visits nodes in topological order. At each node it bounds the delay of the FIFO
//!   aggregate by the horizontal deviation of the sum of the arrival curves there, and propagates
//!   each flow's curve downstream as `α ⊘ δ_d` (every bit delayed at most `d`). A flow's end-to-end
//!   bound is the sum of the per-node delays on its path. Valid for FIFO nodes.
//! - **SFA** gives the flow of interest, at each node, the leftover service after the cross traffic
//!   there (cross curves from the TFA propagation, each bounded by its long-term token bucket
//!   `γ_{r_c, b_c}`), concatenates these rate-latency curves along the path and takes one horizontal
//!   deviation — the flow's burst is paid only once. Leftover curves:
//!   - FIFO (Le Boudec & Thiran Cor. 6.2.3, θ = T + b_c/R): `β_{R − r_c, T + b_c/R}`;
//!   - blind / arbitrary multiplexing (Thm. 6.2.1): `β_{R − r_c, T + (b_c + r_c·T)/(R − r_c)}`.
//!
//!   Neither analysis dominates the other (the tests show both orders); both are upper bounds.
//!
//! Rounding: all arithmetic is exact, except that each propagated per-node delay and each leftover
//! latency is rounded *up* to a [`GRID`] of 1 ps, so denominators cannot grow without limit along
//! long paths. Rounding up only enlarges bounds, so results remain sound.

use crate::curve::{self, ArrivalCurve, CurveError, RateLatency};
use crate::rational::{ArithError, Q};

/// Denominator of the time grid (1 ps) that propagated delays are rounded up to.
pub const GRID: i128 = 1_000_000_000_000;

/// Errors from multi-hop analysis.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NetworkError {
    /// Exact arithmetic failed.
    #[error(transparent)]
    Arith(#[from] ArithError),
    /// A curve operation failed (e.g. a node is overloaded).
    #[error("node {node}: {source}")]
    Curve {
        /// Index of the node where it failed.
        node: usize,
        /// The underlying error.
        source: CurveError,
    },
    /// A flow's path names a node that does not exist.
    #[error("flow {flow}: unknown node index {node}")]
    UnknownNode {
        /// Flow index.
        flow: usize,
        /// The bad node index.
        node: usize,
    },
    /// A flow has an empty path.
    #[error("flow {0}: empty path")]
    EmptyPath(usize),
    /// The union of the paths has a cycle: the network is not feed-forward.
    #[error("paths form a cycle: network is not feed-forward")]
    Cyclic,
    /// The requested flow does not exist.
    #[error("no flow with index {0}")]
    NoSuchFlow(usize),
    /// The leftover rate for the flow of interest is not positive.
    #[error("node {0}: no leftover service for the flow of interest")]
    NoLeftover(usize),
}

/// A server (switch output port) offering a rate-latency service curve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// Display name.
    pub name: String,
    /// Service curve offered to the aggregate.
    pub service: RateLatency,
}

/// A flow: its arrival curve at the source and the nodes it crosses, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flow {
    /// Display name.
    pub name: String,
    /// Arrival curve at the entrance of the first node.
    pub arrival: ArrivalCurve,
    /// Node indices crossed, in order.
    pub path: Vec<usize>,
}

/// A feed-forward network.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Network {
    /// Servers.
    pub nodes: Vec<Node>,
    /// Flows.
    pub flows: Vec<Flow>,
}

/// Per-node result of TFA.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeBound {
    /// Delay bound of the aggregate at this node (s), rounded up to [`GRID`].
    pub delay: Q,
    /// Backlog bound at this node (bits).
    pub backlog: Q,
    /// Sum of the long-term rates of the flows here (bit/s).
    pub load: Q,
}

/// Result of total flow analysis.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TfaReport {
    /// Per node (same index as [`Network::nodes`]); `None` where no flow passes.
    pub nodes: Vec<Option<NodeBound>>,
    /// End-to-end delay bound per flow (same index as [`Network::flows`]), seconds.
    pub flow_delays: Vec<Q>,
    /// `arrivals[f][h]`: arrival curve of flow `f` at the `h`-th node of its path.
    pub arrivals: Vec<Vec<ArrivalCurve>>,
}

/// How a node shares its service between flows, for SFA's leftover curves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Multiplexing {
    /// First-in first-out across flows.
    Fifo,
    /// Blind (arbitrary) multiplexing: no assumption on the order.
    Blind,
}

impl Network {
    /// Nodes in a topological order of the union of the paths.
    pub fn topological_order(&self) -> Result<Vec<usize>, NetworkError> {
        let n = self.nodes.len();
        let mut succ: Vec<Vec<usize>> = vec![Vec::new(); n];
        let mut indeg = vec![0usize; n];
        for (fi, f) in self.flows.iter().enumerate() {
            if f.path.is_empty() {
                return Err(NetworkError::EmptyPath(fi));
            }
            for &v in &f.path {
                if v >= n {
                    return Err(NetworkError::UnknownNode { flow: fi, node: v });
                }
            }
            for w in f.path.windows(2) {
                if !succ[w[0]].contains(&w[1]) {
                    succ[w[0]].push(w[1]);
                    indeg[w[1]] += 1;
                }
            }
        }
        let mut order = Vec::with_capacity(n);
        let mut ready: Vec<usize> = (0..n).filter(|&v| indeg[v] == 0).collect();
        ready.reverse();
        while let Some(v) = ready.pop() {
            order.push(v);
            for &w in &succ[v] {
                indeg[w] -= 1;
                if indeg[w] == 0 {
                    ready.push(w);
                }
            }
        }
        if order.len() != n {
            return Err(NetworkError::Cyclic);
        }
        Ok(order)
    }

    /// Total flow analysis.
    pub fn tfa(&self) -> Result<TfaReport, NetworkError> {
        let order = self.topological_order()?;
        // Flows crossing each node, with their hop index there.
        let mut at_node: Vec<Vec<(usize, usize)>> = vec![Vec::new(); self.nodes.len()];
        for (fi, f) in self.flows.iter().enumerate() {
            for (h, &v) in f.path.iter().enumerate() {
                at_node[v].push((fi, h));
            }
        }
        let mut arrivals: Vec<Vec<ArrivalCurve>> = self
            .flows
            .iter()
            .map(|f| {
                let mut v = Vec::with_capacity(f.path.len());
                v.push(f.arrival.clone());
                v
            })
            .collect();
        let mut nodes = vec![None; self.nodes.len()];
        let mut node_delay = vec![Q::ZERO; self.nodes.len()];
        for v in order {
            let here = &at_node[v];
            if here.is_empty() {
                continue;
            }
            let cerr = |source| NetworkError::Curve { node: v, source };
            // Topological order guarantees arrivals[f][h] exists: the previous hop was visited.
            let curves: Vec<&ArrivalCurve> = here.iter().map(|&(f, h)| &arrivals[f][h]).collect();
            let agg = ArrivalCurve::sum(curves.iter().copied())
                .map_err(cerr)?
                .ok_or(NetworkError::Curve {
                    node: v,
                    source: CurveError::Empty,
                })?;
            let beta = &self.nodes[v].service;
            let delay = curve::delay_bound(&agg, beta)
                .map_err(cerr)?
                .round_up(GRID)?;
            let backlog = curve::backlog_bound(&agg, beta).map_err(cerr)?;
            nodes[v] = Some(NodeBound {
                delay,
                backlog,
                load: agg.long_term_rate(),
            });
            node_delay[v] = delay;
            for &(f, h) in here {
                if h + 1 < self.flows[f].path.len() {
                    let next = arrivals[f][h].delayed(delay).map_err(cerr)?;
                    arrivals[f].push(next);
                }
            }
        }
        let flow_delays = self
            .flows
            .iter()
            .map(|f| crate::rational::sum(f.path.iter().map(|&v| node_delay[v])))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(TfaReport {
            nodes,
            flow_delays,
            arrivals,
        })
    }

    /// Separated flow analysis for flow `flow`, reusing a TFA report for the cross traffic.
    pub fn sfa_with(
        &self,
        tfa: &TfaReport,
        flow: usize,
        mux: Multiplexing,
    ) -> Result<Q, NetworkError> {
        let f = self.flows.get(flow).ok_or(NetworkError::NoSuchFlow(flow))?;
        let mut total: Option<RateLatency> = None;
        for &v in &f.path {
            let beta = self.nodes[v].service;
            let (mut rc, mut bc) = (Q::ZERO, Q::ZERO);
            for (gi, g) in self.flows.iter().enumerate() {
                if gi == flow {
                    continue;
                }
                if let Some(h) = g.path.iter().position(|&x| x == v) {
                    let tb = tfa.arrivals[gi][h].long_term_bucket();
                    rc = rc.add(tb.rate)?;
                    bc = bc.add(tb.burst)?;
                }
            }
            let left = leftover(&beta, rc, bc, mux).map_err(|e| match e {
                LeftoverError::Arith(a) => NetworkError::Arith(a),
                LeftoverError::None => NetworkError::NoLeftover(v),
            })?;
            total = Some(match total {
                None => left,
                Some(t) => t
                    .concat(&left)
                    .map_err(|source| NetworkError::Curve { node: v, source })?,
            });
        }
        let total = total.ok_or(NetworkError::EmptyPath(flow))?;
        curve::delay_bound(&f.arrival, &total).map_err(|source| NetworkError::Curve {
            node: f.path[f.path.len() - 1],
            source,
        })
    }

    /// Separated flow analysis for every flow.
    pub fn sfa(&self, mux: Multiplexing) -> Result<Vec<Q>, NetworkError> {
        let tfa = self.tfa()?;
        (0..self.flows.len())
            .map(|f| self.sfa_with(&tfa, f, mux))
            .collect()
    }
}

enum LeftoverError {
    Arith(ArithError),
    None,
}

impl From<ArithError> for LeftoverError {
    fn from(e: ArithError) -> Self {
        LeftoverError::Arith(e)
    }
}

/// Leftover rate-latency curve of `beta` after cross traffic `γ_{rc, bc}`.
fn leftover(
    beta: &RateLatency,
    rc: Q,
    bc: Q,
    mux: Multiplexing,
) -> Result<RateLatency, LeftoverError> {
    let rate = beta.rate.sub(rc)?;
    if !rate.is_positive() {
        return Err(LeftoverError::None);
    }
    let extra = match mux {
        Multiplexing::Fifo => bc.div(beta.rate)?,
        Multiplexing::Blind => bc.add(rc.mul(beta.latency)?)?.div(rate)?,
    };
    let latency = beta.latency.add(extra)?.round_up(GRID)?;
    Ok(RateLatency { rate, latency })
}

#[cfg(test)]
#[path = "network_tests.rs"]
mod tests;
