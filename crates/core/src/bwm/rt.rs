//! The manager's rtlan real-time switches (Löser/Härtig §3.2 admission on EtheReal §3.3 / QSR
//! §3.1 switches): each output port of such a switch runs a real-time scheduler that is a
//! rate-latency server `β = r·(t − θ)+` per connection, with θ from `rtlan_calculus::servers`
//! through the switch's own [`crate::switch::port_server`]. A connection across them is booked
//! exactly as the switches book it hop by hop ([`crate::switch::hop_terms`], and the switch's own
//! [`Admission`] per switch: Σ wire rate within the real-time cap per port, Σ cycle work within
//! `U·C·T` on cyclic ports, Σ queues — backlog bounds with the burst grown upstream, the host
//! delay included — within the switch's buffer, one connection's CPU share), and its bound is
//! `b/r + host delay + Σθ` (pay the burst once), what the last switch's SETUP_OK reports.
//!
//! θ depends only on the port and the connection's own T-SPEC, never on the other connections,
//! so admitting a connection never changes another's bound: nothing is re-checked.

use std::collections::BTreeMap;

use rtlan_calculus::loser::Tspec;
use rtlan_calculus::servers::{self, HopTspec, Server, ServerError};

use super::protocol::{ConnId, ConnSpec, ErrorCode, Violation};
use super::topology::{Graph, Topology, TopologyError};
use super::{ledger, port, refused, Conn, Manager, Refusal};
use crate::switch::rt::{Admission, AdmissionError, Booking, SwitchLimits};
use crate::switch::{hop_terms, port_server, work_budget, PortId};

impl Manager {
    /// The hops and bound of a connection along `ports` if they are rtlan switches' (`None` if
    /// they are FIFO switches'). Refused: a path through both kinds (no analysis joins FIFO
    /// total flow analysis and per-connection service curves soundly), and a connection not
    /// signalled per hop across rtlan switches (its frames are non-real-time there).
    pub(super) fn rt_path(
        &self,
        spec: &ConnSpec,
        tspec: &Tspec,
        nodes: &[usize],
        ports: &[usize],
        per_hop: bool,
        host_delay_ns: u64,
    ) -> Result<Option<RtPath>, Refusal> {
        let scheduled = ports.iter().filter(|&&p| self.rt.is_rt(p)).count();
        if scheduled == 0 {
            return Ok(None);
        }
        let path = || self.names(nodes).join(" → ");
        if scheduled < ports.len() {
            return Err(Refusal::new(
                ErrorCode::Refused,
                format!(
                    "path {} crosses both FIFO switches and rtlan real-time switches; the manager \
                     bounds a path of one kind only",
                    path()
                ),
            ));
        }
        if !per_hop {
            return Err(Refusal::new(
                ErrorCode::Refused,
                format!(
                    "path {} crosses rtlan real-time switches: a connection not signalled per hop \
                     is non-real-time traffic there; book it with `admit_per_hop` (host daemon \
                     `admission = \"both\"`)",
                    path()
                ),
            ));
        }
        let flow = hop_tspec(spec, tspec)?;
        self.rt
            .path(&self.graph, ports, &flow, host_delay_ns)
            .map(Some)
            .map_err(rt_refusal)
    }

    /// Books a connection across rtlan switches: its own bound against its requirement, then
    /// every hop with the switch's admission. Nobody else is re-checked: θ does not depend on
    /// the other connections.
    pub(super) fn book_rt(&mut self, id: ConnId, conn: Conn, path: &RtPath) -> Result<(), Refusal> {
        let mut violations = Vec::new();
        if let Some(required) = conn.requirement_ns.filter(|&r| path.bound_ns > r) {
            violations.push(Violation::Delay {
                conn: None,
                delay_bound_us: port::ceil_us(path.bound_ns),
                delay_us: required / 1000,
            });
        }
        if let Err(errors) = self.rt.book(&self.graph, path) {
            let refusal = rt_refusal(errors);
            if refusal.violations.is_empty() {
                return Err(refusal);
            }
            violations.extend(refusal.violations);
        } else if !violations.is_empty() {
            self.rt.release(&path.hops);
        }
        if !violations.is_empty() {
            return Err(refused(violations));
        }
        self.commit(id, conn, Vec::new());
        Ok(())
    }
}

/// A refusal from the rtlan switches' errors: every violation, else the first other reason.
fn rt_refusal(errors: Vec<RtError>) -> Refusal {
    let mut violations = Vec::new();
    let mut other = None;
    for e in errors {
        match e {
            RtError::Violation(v) => violations.push(v),
            RtError::BadSpec(m) => {
                other.get_or_insert_with(|| Refusal::new(ErrorCode::BadRequest, m));
            }
            RtError::Port(m) => {
                other.get_or_insert_with(|| Refusal::new(ErrorCode::Refused, m));
            }
        }
    }
    match other {
        Some(refusal) => refusal,
        None => refused(violations),
    }
}

/// The T-SPEC in wire bits the rtlan switches book for `spec` (validated as `tspec`), exactly
/// as they convert a SETUP's rate, burst and maximum packet
/// (`rtlan_calculus::servers::tspec_from_setup`); a bucket given as a shaping interval is
/// rounded up to whole bytes.
fn hop_tspec(spec: &ConnSpec, tspec: &Tspec) -> Result<HopTspec, Refusal> {
    let bad = |m: String| Refusal::new(ErrorCode::BadRequest, m);
    let burst = match spec.burst_bytes {
        Some(b) => b,
        None => ledger::ceil_bytes(tspec.bucket),
    };
    let burst = u32::try_from(burst)
        .map_err(|_| bad(format!("a burst of {burst} bytes does not fit a SETUP")))?;
    let packet = u16::try_from(spec.max_packet).map_err(|_| {
        bad(format!(
            "a maximum packet of {} bytes does not fit a SETUP",
            spec.max_packet
        ))
    })?;
    servers::tspec_from_setup(spec.rate_bps, burst, packet).map_err(|e| bad(e.to_string()))
}

/// One hop of a connection booked on an rtlan switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RtHop {
    /// The manager's port index.
    pub(crate) port: usize,
    /// θ of the hop, ns.
    pub(crate) latency_ns: u64,
    /// What the switch's admission books for the connection there.
    pub(crate) wire_rate_bps: u64,
    pub(crate) queue_bytes: usize,
    pub(crate) cycle_work_bits: u64,
}

/// A connection's path through rtlan switches: its hops and its end-to-end bound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RtPath {
    pub(crate) hops: Vec<RtHop>,
    /// `b/r + host delay + Σθ`, ns.
    pub(crate) bound_ns: u64,
}

/// Why a path could not be computed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RtError {
    /// A resource of a hop: the constraint it violates.
    Violation(Violation),
    /// The T-SPEC is not one a SETUP can carry (zero rate, burst below a packet).
    BadSpec(String),
    /// The port's scheduler cannot bound any connection (a cycle too short for its drain time,
    /// control taking the whole line) or the arithmetic overflowed.
    Port(String),
}

/// One rtlan switch: its admission state and its ports.
#[derive(Debug, Clone)]
struct RtSwitch {
    admission: Admission,
    buffer_bytes: usize,
}

/// Every rtlan real-time switch of the network.
#[derive(Debug, Clone)]
pub(crate) struct RtSwitches {
    /// Per manager port: its server and its (switch node, port number on that switch), for the
    /// ports of rtlan switches.
    ports: Vec<Option<(Server, usize, PortId)>>,
    /// By switch node index.
    switches: BTreeMap<usize, RtSwitch>,
}

impl RtSwitches {
    /// The rtlan switches of `topo` (indexed as `graph`), nothing booked.
    pub(crate) fn new(topo: &Topology, graph: &Graph) -> Result<RtSwitches, TopologyError> {
        let mut ports = vec![None; graph.ports.len()];
        let mut switches = BTreeMap::new();
        for spec in &topo.rtlan {
            let unknown = || TopologyError::File(format!("`{}` is not a switch", spec.name));
            let node = graph
                .names
                .iter()
                .position(|n| *n == spec.name)
                .filter(|&n| graph.switch_of[n].is_some())
                .ok_or_else(unknown)?;
            let buffer = graph.switch_of[node]
                .and_then(|i| topo.switches.get(i))
                .map_or(0, |s| s.buffer_bytes);
            let params = spec.params();
            let mut rates = Vec::new();
            for (p, pid) in graph.ports.iter().enumerate() {
                if pid.switch != node {
                    continue;
                }
                let rate = topo.links[pid.link].rate_bps;
                let local = PortId(u16::try_from(rates.len()).map_err(|_| {
                    TopologyError::File(format!("switch `{}` has too many ports", spec.name))
                })?);
                ports[p] = Some((port_server(&params, rate), node, local));
                rates.push(rate);
            }
            let buffer_bytes = usize::try_from(buffer).unwrap_or(usize::MAX);
            let mut admission = Admission::with_limits(
                &rates,
                params.cap_percent,
                SwitchLimits {
                    cycle: params.cycle_time,
                    rt_buffer_bytes: buffer_bytes,
                    ..SwitchLimits::new()
                },
            );
            for (server, _, local) in ports.iter().flatten().filter(|(_, n, _)| *n == node) {
                admission.set_work_budget(*local, work_budget(server));
            }
            switches.insert(
                node,
                RtSwitch {
                    admission,
                    buffer_bytes,
                },
            );
        }
        Ok(RtSwitches { ports, switches })
    }

    /// Whether there is any rtlan switch.
    pub(crate) fn any(&self) -> bool {
        !self.switches.is_empty()
    }

    /// Whether manager port `p` belongs to an rtlan switch.
    pub(crate) fn is_rt(&self, p: usize) -> bool {
        self.ports.get(p).is_some_and(Option::is_some)
    }

    /// The hops of `flow` along `ports` (all of rtlan switches) after the host's delay, and its
    /// bound: the switches' [`hop_terms`], hop by hop. Books nothing.
    pub(crate) fn path(
        &self,
        graph: &Graph,
        ports: &[usize],
        flow: &HopTspec,
        host_delay_ns: u64,
    ) -> Result<RtPath, Vec<RtError>> {
        let mut accumulated = host_delay_ns;
        let mut hops = Vec::with_capacity(ports.len());
        let mut errors = Vec::new();
        for &p in ports {
            let Some(Some((server, _, _))) = self.ports.get(p) else {
                errors.push(RtError::Port(format!("port {p} is not on an rtlan switch")));
                continue;
            };
            match hop_terms(server, flow, accumulated) {
                Ok(t) => {
                    accumulated = t.accumulated_ns;
                    hops.push(RtHop {
                        port: p,
                        latency_ns: t.latency_ns,
                        wire_rate_bps: flow.rate_bps,
                        queue_bytes: t.queue_bytes,
                        cycle_work_bits: t.cycle_work_bits,
                    });
                }
                Err(e) => errors.push(server_error(graph, p, e)),
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        let bound_ns = servers::end_to_end_ns(flow, accumulated)
            .map_err(|e| vec![RtError::Port(e.to_string())])?;
        Ok(RtPath { hops, bound_ns })
    }

    /// Books every hop of `path` with its switch's admission, or nothing: the violations of every
    /// switch that refuses.
    pub(crate) fn book(&mut self, graph: &Graph, path: &RtPath) -> Result<(), Vec<RtError>> {
        let mut booked = Vec::new();
        let mut errors = Vec::new();
        for hop in &path.hops {
            let Some(Some((_, node, local))) = self.ports.get(hop.port).copied() else {
                continue;
            };
            let Some(sw) = self.switches.get_mut(&node) else {
                continue;
            };
            match sw.admission.try_book_work(
                local,
                hop.wire_rate_bps,
                hop.queue_bytes,
                hop.cycle_work_bits,
            ) {
                Ok(_) => booked.push(*hop),
                Err(e) => errors.push(admission_error(graph, hop.port, sw, e)),
            }
        }
        if errors.is_empty() {
            return Ok(());
        }
        self.release(&booked);
        Err(errors)
    }

    /// Gives back what `hops` booked.
    pub(crate) fn release(&mut self, hops: &[RtHop]) {
        for hop in hops {
            let Some(Some((_, node, local))) = self.ports.get(hop.port).copied() else {
                continue;
            };
            if let Some(sw) = self.switches.get_mut(&node) {
                // Only fails for a booking this admission does not hold; each hop is booked
                // once and released once.
                let _ = sw.admission.release(Booking {
                    port: local,
                    wire_rate_bps: hop.wire_rate_bps,
                    buffer_bytes: hop.queue_bytes,
                    cycle_work_bits: hop.cycle_work_bits,
                });
            }
        }
    }

    /// Σ wire rate booked on port `p` (`None` if it is not on an rtlan switch).
    pub(crate) fn booked_bps(&self, p: usize) -> Option<u64> {
        let (_, node, local) = self.ports.get(p).copied().flatten()?;
        let budget = self.switches.get(&node)?.admission.port(local)?;
        Some(budget.booked_bps)
    }
}

/// The protocol's violation for a refusal of `sw`'s admission at manager port `p`.
fn admission_error(graph: &Graph, p: usize, sw: &RtSwitch, e: AdmissionError) -> RtError {
    let (switch, to) = names(graph, p);
    let budget = match e {
        AdmissionError::Bandwidth { port, .. } | AdmissionError::CycleWork { port, .. } => {
            sw.admission.port(port).copied()
        }
        _ => None,
    };
    RtError::Violation(match (e, budget) {
        (
            AdmissionError::Bandwidth {
                requested,
                available,
                ..
            },
            Some(b),
        ) => Violation::Capacity {
            switch,
            to,
            rate_bps: b
                .cap_bps()
                .saturating_sub(available)
                .saturating_add(requested),
            capacity_bps: b.cap_bps(),
        },
        (
            AdmissionError::CycleWork {
                requested,
                available,
                ..
            },
            Some(b),
        ) => {
            let budget = b.work_budget_bits.unwrap_or(0);
            Violation::CycleWork {
                switch,
                to,
                work_bits: budget.saturating_sub(available).saturating_add(requested),
                budget_bits: budget,
            }
        }
        (
            AdmissionError::Buffer {
                requested,
                available,
            },
            _,
        ) => Violation::Buffer {
            switch,
            backlog_bytes: u64::try_from(
                sw.buffer_bytes
                    .saturating_sub(available)
                    .saturating_add(requested),
            )
            .unwrap_or(u64::MAX),
            buffer_bytes: u64::try_from(sw.buffer_bytes).unwrap_or(u64::MAX),
        },
        (AdmissionError::Cpu { connections }, _) => Violation::Cpu {
            switch,
            connections,
        },
        (other, _) => return RtError::Port(format!("switch `{switch}` towards `{to}`: {other}")),
    })
}

/// What a service-curve error at manager port `p` means for the request.
fn server_error(graph: &Graph, p: usize, e: ServerError) -> RtError {
    let (switch, to) = names(graph, p);
    match e {
        ServerError::RateAboveLimit {
            rate_bps,
            limit_bps,
        } => RtError::Violation(Violation::Capacity {
            switch,
            to,
            rate_bps,
            capacity_bps: limit_bps,
        }),
        ServerError::WorkAboveBudget {
            work_bits,
            budget_bits,
        } => RtError::Violation(Violation::CycleWork {
            switch,
            to,
            work_bits,
            budget_bits,
        }),
        ServerError::ZeroRate | ServerError::ZeroFrame | ServerError::BurstBelowPacket { .. } => {
            RtError::BadSpec(e.to_string())
        }
        other => RtError::Port(format!("switch `{switch}` towards `{to}`: {other}")),
    }
}

fn names(graph: &Graph, p: usize) -> (String, String) {
    let pid = graph.ports[p];
    (graph.names[pid.switch].clone(), graph.names[pid.to].clone())
}
