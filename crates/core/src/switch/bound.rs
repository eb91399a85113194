//! Delay in the signalling (`docs/delay.md`, `docs/protocol.md` §6): what one hop adds to a
//! connection's end-to-end bound, and the queue it must book for it.
//!
//! The SETUP's T-SPEC (rate *r*, burst *b*, largest frame *M*; Löser/Härtig §3, RFC 2212's
//! `(r, b, M)`) in wire bits, the latency θ of the rate-latency service curve the output port's
//! scheduler guarantees the connection (EtheReal §3.3's cyclic scheduler, or QSR §3.1's
//! rate-controlled timing wheel; both in `rtlan_calculus::servers`, including the switch's
//! wake-up lateness budget and the link's delay), the burst the connection can have when it
//! reaches this hop (*b* + *r*·Σθ upstream), and from those the backlog bound this hop books as
//! the connection's queue — so a conforming connection is never dropped here — and the
//! end-to-end bound *b*/*r* + Σθ so far.
//!
//! [`port_server`] and [`hop_terms`] are pure: the switch calls them for its own ports, and the
//! bandwidth manager (`crate::bwm`, Löser/Härtig §3.2) calls the same two functions for the
//! rtlan switches of its network, so both compute the same θ, queue and bound.

use std::time::Duration;

use rtlan_calculus::servers::{
    self, CyclicParams, HopTspec, PortParams, Server, ServerError, WheelParams,
};

use crate::egress::{SchedConfig, SchedulerKind, DEFAULT_CYCLE};
use rtlan_wire::control::{DelayTlv, FailReason, SetupRepr};
use rtlan_wire::cost::{wire_bits, wire_bytes};

use super::{control, PortId, RtConfig, Switch, SwitchConfig};

/// Depth of every port's control bucket, wire bytes: four of this switch's control frames
/// (each at most `CONTROL_FRAME_MAX` bytes) — a SETUP, its answer and two more in flight.
/// Signalling goes ahead of reserved frames only within it, and it is part of every hop's
/// latency, so it is sized to what the switch sends, not to a full-size frame; control beyond it
/// waits behind reserved frames, never dropped for it.
pub fn control_burst_bytes() -> usize {
    4 * usize::try_from(wire_bytes(control::CONTROL_FRAME_MAX)).unwrap_or(usize::MAX)
}

/// What a switch's configuration contributes to the service curve of each of its output ports
/// (everything but the port's line rate). [`ServerParams::default`] is the switch's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerParams {
    /// The real-time scheduler of every output port.
    pub scheduler: SchedulerKind,
    /// The cycle `T` of the cyclic scheduler.
    pub cycle_time: Duration,
    /// The real-time cap `U`, percent of the line rate.
    pub cap_percent: u8,
    /// Largest frame any class may send, bytes without FCS (`L_max`).
    pub max_frame_bytes: usize,
    /// The hop's lateness budget `λ`.
    pub lateness_budget: Duration,
    /// Propagation delay of each output link.
    pub link_delay: Duration,
}

impl ServerParams {
    /// The parameters of a switch built from `config`.
    pub fn of(config: &SwitchConfig) -> ServerParams {
        ServerParams {
            cycle_time: config.cycle_time,
            ..ServerParams::from_rt(&config.rt)
        }
    }

    /// The parameters `rt` gives, with the default cycle.
    fn from_rt(rt: &RtConfig) -> ServerParams {
        ServerParams {
            scheduler: rt.scheduler,
            cycle_time: DEFAULT_CYCLE,
            cap_percent: rt.cap_percent,
            max_frame_bytes: rt.max_frame_bytes,
            lateness_budget: rt.lateness_budget,
            link_delay: rt.link_delay,
        }
    }
}

impl Default for ServerParams {
    /// The switch's defaults: [`RtConfig::default`] and the 10 ms cycle of EtheReal.
    fn default() -> ServerParams {
        ServerParams::from_rt(&RtConfig::default())
    }
}

/// The service-curve parameters of an output port of `line_rate_bps` (wire bit/s) on a switch
/// with `params`: the one place a switch's configuration becomes a
/// `rtlan_calculus::servers::Server`. The control bucket (1 % of the line, [`control_burst_bytes`]
/// deep) and the wheel's slot are the port scheduler's defaults (`SchedConfig::new`), exactly as
/// [`Switch::new`] configures them.
pub fn port_server(params: &ServerParams, line_rate_bps: u64) -> Server {
    let nanos = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    let sched = SchedConfig::new(line_rate_bps);
    let port = PortParams {
        line_rate_bps,
        max_frame_bits: wire_bits(params.max_frame_bytes),
        control_burst_bits: u64::try_from(control_burst_bytes())
            .unwrap_or(u64::MAX)
            .saturating_mul(8),
        control_rate_bps: sched.control_rate_bps,
        lateness_ns: nanos(params.lateness_budget),
        link_delay_ns: nanos(params.link_delay),
    };
    match params.scheduler {
        SchedulerKind::Cyclic => Server::Cyclic(CyclicParams {
            port,
            cycle_ns: nanos(params.cycle_time),
            rt_share_percent: params.cap_percent,
        }),
        // A QSR port serves the switch's connections (all Guaranteed) on the same wheel.
        SchedulerKind::Wheel | SchedulerKind::Qsr => Server::Wheel(WheelParams {
            port,
            granularity_ns: nanos(sched.granularity),
        }),
    }
}

/// One hop's contribution to a connection's bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HopTerms {
    /// θ of this hop, ns.
    pub latency_ns: u64,
    /// The connection's queue on the output port: its backlog bound here, bytes.
    pub queue_bytes: usize,
    /// Σθ up to and including this hop, ns (what the next SETUP's DELAY carries).
    pub accumulated_ns: u64,
    /// End-to-end bound if the path ended here, ns: *b*/*r* + Σθ.
    pub bound_ns: u64,
    /// Wire bits per cycle the connection may take from a cyclic port (quota + one frame),
    /// booked against the port's cycle-work budget; 0 on a timing-wheel port.
    pub cycle_work_bits: u64,
}

/// This hop's terms for `flow` served by `server`, after upstream terms (the host's delay
/// included) that add up to `accumulated_ns`: θ, the queue (the backlog bound with the burst
/// grown upstream), Σθ so far, the bound *b*/*r* + Σθ and the cycle work.
pub fn hop_terms(
    server: &Server,
    flow: &HopTspec,
    accumulated_ns: u64,
) -> Result<HopTerms, ServerError> {
    let latency_ns = server.latency_ns(flow)?;
    let burst_here = servers::burst_at_hop(flow, accumulated_ns)?;
    let backlog = servers::backlog_bits(flow, burst_here, latency_ns)?;
    let accumulated_ns = accumulated_ns.saturating_add(latency_ns);
    let bound_ns = servers::end_to_end_ns(flow, accumulated_ns)?;
    let cycle_work_bits = match server {
        Server::Cyclic(params) => servers::cyclic_cycle_work_bits(flow, params.cycle_ns)?,
        Server::Wheel(_) | Server::Wfq(_) => 0,
    };
    Ok(HopTerms {
        cycle_work_bits,
        latency_ns,
        queue_bytes: servers::queue_bytes(backlog),
        accumulated_ns,
        bound_ns,
    })
}

impl Switch {
    /// Gives every cyclic port its cycle-work budget `U·C·T` (the assumption of its service
    /// curve, `rtlan_calculus::servers::cyclic_work_budget_bits`). Called once when the switch is
    /// built; a port whose budget cannot be computed books without one.
    pub(super) fn init_work_budgets(&mut self) {
        for index in 0..self.ports.len() {
            // Port indices fit u16 (PortId).
            let port = PortId(index as u16);
            let budget = self.port_server(port).as_ref().and_then(work_budget);
            self.rt.admission.set_work_budget(port, budget);
        }
    }

    /// The service-curve parameters of output port `out` (`None` for an unknown port).
    pub(super) fn port_server(&self, out: PortId) -> Option<Server> {
        let port = self.ports.get(usize::from(out.0))?;
        Some(port_server(
            &ServerParams::of(&self.config),
            port.line_rate_bps,
        ))
    }

    /// This hop's terms for `setup` leaving by `out`, after the hops that added `delay`.
    /// MALFORMED for a T-SPEC the calculus refuses (zero rate, overflow), DELAY when the bound
    /// with this hop already exceeds a non-zero requirement.
    pub(super) fn hop_terms(
        &self,
        out: PortId,
        setup: &SetupRepr,
        delay: DelayTlv,
    ) -> Result<HopTerms, FailReason> {
        let server = self.port_server(out).ok_or(FailReason::NoRoute)?;
        let flow: HopTspec =
            servers::tspec_from_setup(setup.rate, setup.max_burst, setup.max_packet)
                .map_err(refusal)?;
        let terms = hop_terms(&server, &flow, delay.accumulated_ns).map_err(refusal)?;
        if delay.required_ns != 0 && terms.bound_ns > delay.required_ns {
            return Err(FailReason::Delay);
        }
        Ok(terms)
    }
}

/// The cycle-work budget `U·C·T` of a cyclic port (`None` for a wheel or WF²Q+ port, or one
/// whose budget cannot be computed): what admission books cycle work against.
pub fn work_budget(server: &Server) -> Option<u64> {
    match server {
        Server::Cyclic(params) => servers::cyclic_work_budget_bits(params).ok(),
        Server::Wheel(_) | Server::Wfq(_) => None,
    }
}

/// The refusal for a T-SPEC the calculus cannot bound on this port: beyond what the scheduler
/// may give real-time flows is BANDWIDTH; anything else (zero rate, burst below a frame,
/// overflow) is MALFORMED.
fn refusal(error: ServerError) -> FailReason {
    match error {
        ServerError::RateAboveLimit { .. }
        | ServerError::WorkAboveBudget { .. }
        | ServerError::CycleTooShort { .. }
        | ServerError::ControlTooFast { .. } => FailReason::Bandwidth,
        _ => FailReason::Malformed,
    }
}
