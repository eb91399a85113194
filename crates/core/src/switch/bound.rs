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

use rtlan_calculus::servers::{
    self, CyclicParams, HopTspec, PortParams, Server, ServerError, WheelParams,
};

use crate::egress::SchedulerKind;
use rtlan_wire::control::{DelayTlv, FailReason, SetupRepr};
use rtlan_wire::cost::wire_bits;

use super::{PortId, Switch};

/// One hop's contribution to a connection's bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct HopTerms {
    /// θ of this hop, ns.
    pub(super) latency_ns: u64,
    /// The connection's queue on the output port: its backlog bound here, bytes.
    pub(super) queue_bytes: usize,
    /// Σθ up to and including this hop, ns (what the next SETUP's DELAY carries).
    pub(super) accumulated_ns: u64,
    /// End-to-end bound if the path ended here, ns: *b*/*r* + Σθ.
    pub(super) bound_ns: u64,
    /// Wire bits per cycle the connection may take from a cyclic port (quota + one frame),
    /// booked against the port's cycle-work budget; 0 on a timing-wheel port.
    pub(super) cycle_work_bits: u64,
}

impl Switch {
    /// Gives every cyclic port its cycle-work budget `U·C·T` (the assumption of its service
    /// curve, `rtlan_calculus::servers::cyclic_work_budget_bits`). Called once when the switch is
    /// built; a port whose budget cannot be computed books without one.
    pub(super) fn init_work_budgets(&mut self) {
        for index in 0..self.ports.len() {
            // Port indices fit u16 (PortId).
            let port = PortId(index as u16);
            let budget = match self.port_server(port) {
                Some(Server::Cyclic(params)) => servers::cyclic_work_budget_bits(&params).ok(),
                _ => None,
            };
            self.rt.admission.set_work_budget(port, budget);
        }
    }

    /// The service-curve parameters of output port `out` (`None` for an unknown port).
    pub(super) fn port_server(&self, out: PortId) -> Option<Server> {
        let port = self.ports.get(usize::from(out.0))?;
        let rt = &self.config.rt;
        let nanos = |d: std::time::Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        let (control_rate_bps, control_burst_bits) = port.control_bucket;
        let params = PortParams {
            line_rate_bps: port.line_rate_bps,
            max_frame_bits: wire_bits(rt.max_frame_bytes),
            control_burst_bits,
            control_rate_bps,
            lateness_ns: nanos(rt.lateness_budget),
            link_delay_ns: nanos(rt.link_delay),
        };
        Some(match port.sched.kind() {
            SchedulerKind::Cyclic => Server::Cyclic(CyclicParams {
                port: params,
                cycle_ns: nanos(self.config.cycle_time),
                rt_share_percent: rt.cap_percent,
            }),
            SchedulerKind::Wheel => Server::Wheel(WheelParams {
                port: params,
                granularity_ns: nanos(port.granularity),
            }),
        })
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
        let malformed = refusal;
        let flow: HopTspec =
            servers::tspec_from_setup(setup.rate, setup.max_burst, setup.max_packet)
                .map_err(malformed)?;
        let latency_ns = server.latency_ns(&flow).map_err(malformed)?;
        let burst_here = servers::burst_at_hop(&flow, delay.accumulated_ns).map_err(malformed)?;
        let backlog = servers::backlog_bits(&flow, burst_here, latency_ns).map_err(malformed)?;
        let accumulated_ns = delay.accumulated_ns.saturating_add(latency_ns);
        let bound_ns = servers::end_to_end_ns(&flow, accumulated_ns).map_err(malformed)?;
        if delay.required_ns != 0 && bound_ns > delay.required_ns {
            return Err(FailReason::Delay);
        }
        let cycle_work_bits = match &server {
            Server::Cyclic(params) => {
                servers::cyclic_cycle_work_bits(&flow, params.cycle_ns).map_err(malformed)?
            }
            Server::Wheel(_) => 0,
        };
        Ok(HopTerms {
            cycle_work_bits,
            latency_ns,
            queue_bytes: servers::queue_bytes(backlog),
            accumulated_ns,
            bound_ns,
        })
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
