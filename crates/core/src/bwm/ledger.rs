//! The manager's link to the exact whole-network analysis (seed 004 §2.2 eqs. (1), (4), (6);
//! §3.2 admission): the bandwidth manager's topology as an `rtlan analyze` model, flows built the
//! way `rtlan analyze` resolves them, and `rtlan_calculus::booking::Booking` violations mapped
//! to the protocol's. Using `Booking` means a flow's burst grows by `r·d` at every upstream port
//! (total flow analysis), so multi-switch bounds are upper bounds and equal `rtlan analyze`'s.

use rtlan_calculus::analysis::{self, Flow, Hop, PortKey};
use rtlan_calculus::netfile::{self, FlowSpec, NetFile};
use rtlan_calculus::{ArithError, Q};

use super::protocol::{ConnId, Violation};
use super::topology::{Graph, Topology};

/// Errors linking the manager to the analysis model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LedgerError {
    /// Exact arithmetic overflowed.
    #[error(transparent)]
    Arith(#[from] ArithError),
    /// The analysis model indexes the nodes differently from the manager's graph.
    #[error("analysis model disagrees on node {0}")]
    NodeIndex(usize),
}

/// `v` as an exact rational.
pub(crate) fn q_int(v: u64) -> Q {
    // i128 holds every u64; the denominator 1 is valid.
    Q::new(i128::from(v), 1).unwrap_or(Q::ZERO)
}

/// `ns` nanoseconds in seconds.
pub(crate) fn q_nanos(ns: u64) -> Q {
    Q::new(i128::from(ns), 1_000_000_000).unwrap_or(Q::ZERO)
}

/// The `rtlan analyze` model of `topo`, checked to index nodes exactly as `graph` does (both put
/// switches first in declaration order, then hosts in order of appearance in the links).
pub(crate) fn model(topo: &Topology, graph: &Graph) -> Result<analysis::Topology, LedgerError> {
    let mut file = NetFile::default();
    for s in &topo.switches {
        file.switches.push(netfile::SwitchSpec {
            name: s.name.clone(),
            t_mux: q_nanos(s.t_mux_ns),
            buffer: q_int(s.buffer_bytes).mul(Q::int(8))?,
        });
    }
    for l in &topo.links {
        file.links.push(netfile::LinkSpec {
            ends: l.ends.clone(),
            rate: q_int(l.rate_bps),
            effective_rate: q_int(l.rate_bps),
        });
    }
    let model = analysis::Topology::from_netfile(&file);
    for (i, name) in graph.names.iter().enumerate() {
        if model.name(i) != name {
            return Err(LedgerError::NodeIndex(i));
        }
    }
    Ok(model)
}

/// A T-SPEC in the units of the analysis: `(r, M, b)` in bit/s, bits, bits.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Spec {
    /// Token rate, bit/s.
    pub(crate) rate: Q,
    /// Maximum packet, bits.
    pub(crate) max_packet: Q,
    /// Bucket, bits.
    pub(crate) burst: Q,
}

/// The flow of connection `id` along `nodes` (host, switches, host), resolved exactly as
/// `rtlan analyze` resolves a `[[flow]]` with that path.
pub(crate) fn path_flow(
    model: &analysis::Topology,
    graph: &Graph,
    id: ConnId,
    nodes: &[usize],
    spec: Spec,
    host_delay_ns: u64,
    requirement_ns: Option<u64>,
) -> Result<Flow, analysis::AnalysisError> {
    model.resolve(&FlowSpec {
        name: id.to_string(),
        path: nodes.iter().map(|&n| graph.names[n].clone()).collect(),
        rate: spec.rate,
        max_packet: spec.max_packet,
        burst: spec.burst,
        host_delay: q_nanos(host_delay_ns),
        deadline: requirement_ns.map(q_nanos),
    })
}

/// A one-hop flow of best-effort reservation `id` at port `switch → to`, with the sender's
/// T-SPEC and the fastest link of the switch as its peak.
pub(crate) fn port_flow(id: ConnId, switch: usize, to: usize, peak_bps: u64, spec: Spec) -> Flow {
    Flow {
        name: format!("{id}/{to}@{switch}"),
        hops: vec![Hop {
            port: PortKey { switch, to },
            peak: q_int(peak_bps),
        }],
        rate: spec.rate,
        max_packet: spec.max_packet,
        burst: spec.burst,
        host_delay: Q::ZERO,
        deadline: None,
    }
}

/// The connection a flow name belongs to.
fn conn_of(name: &str) -> Option<ConnId> {
    name.split('/').next()?.parse().ok()
}

/// Seconds → µs, rounded up.
pub(crate) fn ceil_us(t: Q) -> u64 {
    t.mul(Q::int(1_000_000))
        .ok()
        .and_then(|v| u64::try_from(v.ceil().max(0)).ok())
        .unwrap_or(u64::MAX)
}

/// Seconds → ns, rounded up.
pub(crate) fn ceil_ns(t: Q) -> u64 {
    t.mul(Q::int(1_000_000_000))
        .ok()
        .and_then(|v| u64::try_from(v.ceil().max(0)).ok())
        .unwrap_or(u64::MAX)
}

/// Bits → bytes, rounded up.
pub(crate) fn ceil_bytes(bits: Q) -> u64 {
    bits.ceil_bytes()
        .ok()
        .and_then(|v| u64::try_from(v.max(0)).ok())
        .unwrap_or(u64::MAX)
}

/// Maps an analysis violation to the protocol's (`new` is the id of the connection being
/// admitted, reported as `conn: null`). `Err` carries a message for violations the manager's own
/// capacity pre-check rules out.
pub(crate) fn violation(v: analysis::Violation, new: ConnId) -> Result<Violation, String> {
    let who = |name: &str| conn_of(name).filter(|&c| c != new);
    Ok(match v {
        analysis::Violation::RateOverCapacity {
            switch,
            to,
            rate,
            capacity,
        } => Violation::Capacity {
            switch,
            to,
            rate_bps: u64::try_from(rate.ceil().max(0)).unwrap_or(u64::MAX),
            capacity_bps: u64::try_from(capacity.floor().max(0)).unwrap_or(u64::MAX),
        },
        analysis::Violation::BufferOverMemory {
            switch,
            backlog,
            buffer,
        } => Violation::Buffer {
            switch,
            backlog_bytes: ceil_bytes(backlog),
            buffer_bytes: ceil_bytes(buffer),
        },
        analysis::Violation::DeadlineMissed {
            flow,
            bound,
            deadline,
        } => Violation::Delay {
            conn: who(&flow),
            delay_bound_us: ceil_us(bound),
            delay_us: deadline
                .mul(Q::int(1_000_000))
                .ok()
                .and_then(|v| u64::try_from(v.floor().max(0)).ok())
                .unwrap_or(u64::MAX),
        },
        analysis::Violation::Cyclic { flow } => Violation::Cyclic { conn: who(&flow) },
        other => return Err(other.to_string()),
    })
}
