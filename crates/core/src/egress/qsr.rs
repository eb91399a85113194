//! The QSR output port (QSR §3.1 "Resource Management"; RFC 2212 and RFC 2211): Guaranteed
//! Service flows on the non-work-conserving timing wheel at their rate `R`
//! ([`super::wheel::WheelDiscipline`], exactly as a wheel port serves them), Controlled-Load
//! flows and default traffic on work-conserving weighted fair queueing
//! ([`super::wfq::WfqDiscipline`], weights: each CL flow's token rate `r`, and the port's
//! default floor), served whenever the wheel has nothing released, so idle bandwidth goes to
//! Controlled-Load and default traffic.
//!
//! **Order at each transmit opportunity:** control frames within the control bucket; the
//! released Guaranteed frame with the earliest deadline; the frame WF²Q+ picks among the
//! Controlled-Load flows and the default class, in whose turn control frames beyond their bucket
//! go before default frames. The wheel's deadline `d_i` is unchanged: fair-queued frames, like
//! default frames on a wheel port, can only block a Guaranteed frame for one frame time, the
//! `L_max` of its `D0`.
//!
//! **Admission** ([`super::Port::add_flow`]): `Σ R_GS + Σ r_CL + ρ_c + floor ≤ C`. That keeps
//! the wheel's deadlines (`Σ R + ρ_c ≤ C`) and gives the fair-queued classes weights that sum
//! to at most what the wheel and control leave, `C − ρ_c − Σ R_GS`, so each gets at least its
//! weight. The Controlled-Load buffer test (QSR §3.1's Gaussian approximation) is
//! [`super::admission::cl_buffer_admits`], for the router's resource manager to call with its
//! pool and the flows' bucket depths.
//!
//! Handles: one `FlowSlab` of members maps each handle to the flow's handle inside the wheel
//! or the fair queue (one more index per frame, never a hash), so handles of both services share
//! one slot space and go stale the same way.

use std::time::Duration;

use super::config::{SchedConfig, SchedError};
use super::port_core::{Discipline, FlowQueue, Port, PortCore};
use super::sched::{FlowHandle, FlowSlab, SchedStats, Service};
use super::wfq::WfqDiscipline;
use super::wheel::WheelDiscipline;
use crate::time::Instant;

#[cfg(test)]
mod tests;

/// A QSR port: the shared port part and the QSR discipline.
pub type QsrScheduler = Port<QsrDiscipline>;

/// Where a flow of a QSR port lives.
#[derive(Debug, Clone, Copy)]
enum Member {
    /// On the timing wheel, under this handle.
    Guaranteed(FlowHandle),
    /// In the fair queue, under this handle.
    ControlledLoad(FlowHandle),
}

/// The real-time discipline of a [`QsrScheduler`] (see the module docs).
#[derive(Debug)]
pub struct QsrDiscipline {
    members: FlowSlab<Member>,
    gs: WheelDiscipline,
    cl: WfqDiscipline,
}

impl Port<QsrDiscipline> {
    /// A QSR port with no flows; the wheel's slot 0 starts at `now`. Reads the wheel's fields
    /// of `cfg` and [`SchedConfig::default_floor_bps`].
    pub fn new(cfg: SchedConfig, now: Instant) -> Result<QsrScheduler, SchedError> {
        let (core, gs) = WheelDiscipline::build(&cfg, now)?;
        Ok(Port {
            core,
            rt: QsrDiscipline {
                members: FlowSlab::with_capacity(0),
                gs,
                cl: WfqDiscipline::new(cfg.default_floor_bps),
            },
        })
    }

    /// The timing wheel's relative deadline `d_i` of a Guaranteed flow (`None` for a stale
    /// handle or a Controlled-Load flow).
    pub fn flow_deadline(&self, flow: FlowHandle) -> Option<Duration> {
        match self.rt.members.get(flow)? {
            Member::Guaranteed(h) => self.rt.gs.deadline_ns(*h).map(Duration::from_nanos),
            Member::ControlledLoad(_) => None,
        }
    }

    /// The service of `flow` (`None` for a stale handle).
    pub fn flow_service(&self, flow: FlowHandle) -> Option<Service> {
        self.rt.flow(flow).map(|f| f.service)
    }
}

impl QsrDiscipline {
    fn member(&self, flow: FlowHandle) -> Option<Member> {
        self.members.get(flow).copied()
    }
}

impl Discipline for QsrDiscipline {
    fn advance(&mut self, now: Instant, stats: &mut SchedStats) {
        self.gs.advance(now, stats);
    }

    fn add(&mut self, flow: FlowQueue, core: &PortCore) -> Result<FlowHandle, SchedError> {
        let inner = match flow.service {
            Service::Guaranteed => Member::Guaranteed(self.gs.add(flow, core)?),
            Service::ControlledLoad => Member::ControlledLoad(self.cl.add(flow, core)?),
        };
        match self.members.insert(inner) {
            Some(handle) => Ok(handle),
            None => {
                match inner {
                    Member::Guaranteed(h) => drop(self.gs.remove(h)),
                    Member::ControlledLoad(h) => drop(self.cl.remove(h)),
                }
                Err(core.too_many())
            }
        }
    }

    fn remove(&mut self, flow: FlowHandle) -> Option<FlowQueue> {
        match self.members.remove(flow)? {
            Member::Guaranteed(h) => self.gs.remove(h),
            Member::ControlledLoad(h) => self.cl.remove(h),
        }
    }

    fn on_enqueued(&mut self, flow: FlowHandle) {
        match self.member(flow) {
            Some(Member::Guaranteed(h)) => self.gs.on_enqueued(h),
            Some(Member::ControlledLoad(h)) => self.cl.on_enqueued(h),
            None => {}
        }
    }

    /// The wheel's released frame with the earliest deadline, else WF²Q+'s pick among the
    /// Controlled-Load flows and the default class.
    fn send(&mut self, now: Instant, buf: &mut [u8], core: &mut PortCore) -> Option<usize> {
        self.gs
            .send(now, buf, core)
            .or_else(|| self.cl.send(now, buf, core))
    }

    fn due(&self) -> Option<Instant> {
        self.gs.due().into_iter().chain(self.cl.due()).min()
    }

    fn wake(&self) -> Option<Instant> {
        None
    }

    fn flow(&self, flow: FlowHandle) -> Option<&FlowQueue> {
        match self.member(flow)? {
            Member::Guaranteed(h) => self.gs.flow(h),
            Member::ControlledLoad(h) => self.cl.flow(h),
        }
    }

    fn flow_mut(&mut self, flow: FlowHandle) -> Option<&mut FlowQueue> {
        match self.member(flow)? {
            Member::Guaranteed(h) => self.gs.flow_mut(h),
            Member::ControlledLoad(h) => self.cl.flow_mut(h),
        }
    }

    fn flows(&self) -> impl Iterator<Item = (FlowHandle, &FlowQueue)> {
        self.members.iter().filter_map(|(handle, member)| {
            let f = match *member {
                Member::Guaranteed(h) => self.gs.flow(h),
                Member::ControlledLoad(h) => self.cl.flow(h),
            }?;
            Some((handle, f))
        })
    }

    fn len(&self) -> usize {
        self.members.len()
    }

    fn unit(&self) -> Duration {
        self.gs.unit()
    }

    fn supports(&self, _service: Service) -> bool {
        true
    }
}
