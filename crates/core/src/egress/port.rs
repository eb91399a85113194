//! The scheduler a port runs, chosen per port: EtheReal's cyclic round robin (EtheReal §3.3),
//! QSR's Guaranteed Service on a timing wheel, or the full QSR port (wheel plus weighted fair
//! queueing for Controlled Load and default, QSR §3.1). [`PortScheduler`] is a
//! [`Port`] whose real-time discipline is any of them ([`PortDiscipline`]): the shared part
//! (control, non-real-time, pools, pacer, counters) is the same code for all, and only the
//! discipline's few calls choose by kind. It has the inherent accessors a node uses on a port's
//! scheduler, so it replaces a [`super::CyclicScheduler`] field without changing the calls.

use std::time::Duration;

use super::config::{SchedConfig, SchedError};
use super::cyclic::{CyclicDiscipline, CyclicScheduler};
use super::port_core::{Discipline, FlowQueue, Port, PortCore};
use super::qsr::{QsrDiscipline, QsrScheduler};
use super::sched::{FlowHandle, SchedStats, Service};
use super::wheel::{WheelDiscipline, WheelScheduler};
use crate::time::Instant;

/// Which scheduler a port runs (configuration: `"cyclic"`, `"wheel"` or `"qsr"`): the topology model's
/// choice, one type for files, the lab, the simulator and the switch.
pub use rtlan_topology::SchedulerKind;

/// One port's scheduler, of either kind (see the module docs).
pub type PortScheduler = Port<PortDiscipline>;

/// The real-time discipline of a [`PortScheduler`], of any kind.
#[derive(Debug)]
pub enum PortDiscipline {
    /// EtheReal §3.3.
    Cyclic(CyclicDiscipline),
    /// QSR §3.1 Guaranteed Service.
    Wheel(WheelDiscipline),
    /// QSR §3.1 Guaranteed Service, Controlled Load and default IP (boxed: a wheel and a fair
    /// queue side by side are twice the others' size).
    Qsr(Box<QsrDiscipline>),
}

impl Port<PortDiscipline> {
    /// A scheduler of `kind` built from `cfg` (each kind reads the fields it uses).
    pub fn new(
        kind: SchedulerKind,
        cfg: SchedConfig,
        now: Instant,
    ) -> Result<PortScheduler, SchedError> {
        Ok(match kind {
            SchedulerKind::Cyclic => CyclicScheduler::new(cfg, now)?.into(),
            SchedulerKind::Wheel => WheelScheduler::new(cfg, now)?.into(),
            SchedulerKind::Qsr => QsrScheduler::new(cfg, now)?.into(),
        })
    }

    /// Which kind this is.
    pub fn kind(&self) -> SchedulerKind {
        match self.rt {
            PortDiscipline::Cyclic(_) => SchedulerKind::Cyclic,
            PortDiscipline::Wheel(_) => SchedulerKind::Wheel,
            PortDiscipline::Qsr(_) => SchedulerKind::Qsr,
        }
    }

    /// The cyclic scheduler's cycle, or the timing wheel's slot length (its unit of time; a QSR
    /// port's too).
    pub fn cycle(&self) -> Duration {
        self.rt.unit()
    }
}

impl From<CyclicScheduler> for PortScheduler {
    fn from(s: CyclicScheduler) -> PortScheduler {
        Port {
            core: s.core,
            rt: PortDiscipline::Cyclic(s.rt),
        }
    }
}

impl From<WheelScheduler> for PortScheduler {
    fn from(s: WheelScheduler) -> PortScheduler {
        Port {
            core: s.core,
            rt: PortDiscipline::Wheel(s.rt),
        }
    }
}

impl From<QsrScheduler> for PortScheduler {
    fn from(s: QsrScheduler) -> PortScheduler {
        Port {
            core: s.core,
            rt: PortDiscipline::Qsr(Box::new(s.rt)),
        }
    }
}

impl Discipline for PortDiscipline {
    fn advance(&mut self, now: Instant, stats: &mut SchedStats) {
        match self {
            PortDiscipline::Cyclic(d) => d.advance(now, stats),
            PortDiscipline::Wheel(d) => d.advance(now, stats),
            PortDiscipline::Qsr(d) => d.advance(now, stats),
        }
    }

    fn add(&mut self, flow: FlowQueue, core: &PortCore) -> Result<FlowHandle, SchedError> {
        match self {
            PortDiscipline::Cyclic(d) => d.add(flow, core),
            PortDiscipline::Wheel(d) => d.add(flow, core),
            PortDiscipline::Qsr(d) => d.add(flow, core),
        }
    }

    fn remove(&mut self, flow: FlowHandle) -> Option<FlowQueue> {
        match self {
            PortDiscipline::Cyclic(d) => d.remove(flow),
            PortDiscipline::Wheel(d) => d.remove(flow),
            PortDiscipline::Qsr(d) => d.remove(flow),
        }
    }

    fn on_enqueued(&mut self, flow: FlowHandle) {
        match self {
            PortDiscipline::Cyclic(d) => d.on_enqueued(flow),
            PortDiscipline::Wheel(d) => d.on_enqueued(flow),
            PortDiscipline::Qsr(d) => d.on_enqueued(flow),
        }
    }

    fn send(&mut self, now: Instant, buf: &mut [u8], core: &mut PortCore) -> Option<usize> {
        match self {
            PortDiscipline::Cyclic(d) => d.send(now, buf, core),
            PortDiscipline::Wheel(d) => d.send(now, buf, core),
            PortDiscipline::Qsr(d) => d.send(now, buf, core),
        }
    }

    fn due(&self) -> Option<Instant> {
        match self {
            PortDiscipline::Cyclic(d) => d.due(),
            PortDiscipline::Wheel(d) => d.due(),
            PortDiscipline::Qsr(d) => d.due(),
        }
    }

    fn wake(&self) -> Option<Instant> {
        match self {
            PortDiscipline::Cyclic(d) => d.wake(),
            PortDiscipline::Wheel(d) => d.wake(),
            PortDiscipline::Qsr(d) => d.wake(),
        }
    }

    fn flow(&self, flow: FlowHandle) -> Option<&FlowQueue> {
        match self {
            PortDiscipline::Cyclic(d) => d.flow(flow),
            PortDiscipline::Wheel(d) => d.flow(flow),
            PortDiscipline::Qsr(d) => d.flow(flow),
        }
    }

    fn flow_mut(&mut self, flow: FlowHandle) -> Option<&mut FlowQueue> {
        match self {
            PortDiscipline::Cyclic(d) => d.flow_mut(flow),
            PortDiscipline::Wheel(d) => d.flow_mut(flow),
            PortDiscipline::Qsr(d) => d.flow_mut(flow),
        }
    }

    fn flows(&self) -> impl Iterator<Item = (FlowHandle, &FlowQueue)> {
        let (cyclic, wheel, qsr) = match self {
            PortDiscipline::Cyclic(d) => (Some(d.flows()), None, None),
            PortDiscipline::Wheel(d) => (None, Some(d.flows()), None),
            PortDiscipline::Qsr(d) => (None, None, Some(d.flows())),
        };
        cyclic
            .into_iter()
            .flatten()
            .chain(wheel.into_iter().flatten())
            .chain(qsr.into_iter().flatten())
    }

    fn supports(&self, service: Service) -> bool {
        match self {
            PortDiscipline::Cyclic(d) => d.supports(service),
            PortDiscipline::Wheel(d) => d.supports(service),
            PortDiscipline::Qsr(d) => d.supports(service),
        }
    }

    fn len(&self) -> usize {
        match self {
            PortDiscipline::Cyclic(d) => d.len(),
            PortDiscipline::Wheel(d) => d.len(),
            PortDiscipline::Qsr(d) => d.len(),
        }
    }

    fn unit(&self) -> Duration {
        match self {
            PortDiscipline::Cyclic(d) => d.unit(),
            PortDiscipline::Wheel(d) => d.unit(),
            PortDiscipline::Qsr(d) => d.unit(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::egress::sched::{FlowSpec, Scheduler, Service};

    #[test]
    fn kind_reads_lowercase_and_both_kinds_delegate() {
        let kinds: Vec<SchedulerKind> =
            serde_json::from_str(r#"["cyclic", "wheel", "qsr"]"#).expect("lowercase names");
        assert_eq!(
            kinds,
            vec![
                SchedulerKind::Cyclic,
                SchedulerKind::Wheel,
                SchedulerKind::Qsr
            ]
        );
        assert_eq!(
            serde_json::to_string(&SchedulerKind::Wheel).expect("serialises"),
            r#""wheel""#
        );
        assert!(serde_json::from_str::<SchedulerKind>(r#""Wheel""#).is_err());
        assert_eq!(SchedulerKind::default(), SchedulerKind::Cyclic);
        for kind in kinds {
            let cfg = SchedConfig::new(100_000_000);
            let mut s = PortScheduler::new(kind, cfg, Instant::ZERO)
                .expect("valid")
                .with_control_queue(4_000);
            assert_eq!(s.kind(), kind);
            let spec = FlowSpec {
                rate_bps: 10_000_000,
                max_burst: 3_000,
                max_packet: 1_500,
                queue_bytes: 0,
                service: Service::Guaranteed,
            };
            let flow = s.add_flow(spec).expect("fits");
            assert!(s.enqueue_flow(Instant::ZERO, flow, &[1u8; 100]));
            assert!(s.enqueue_nrt(Instant::ZERO, &[2u8; 100]));
            assert!(s.enqueue_control(Instant::ZERO, &[3u8; 100]));
            assert_eq!(
                (s.rt_queued_total(), s.nrt_queued(), s.control_queued()),
                (1, 1, 1)
            );
            let mut buf = [0u8; 2048];
            let mut order = Vec::new();
            let mut now = Instant::ZERO;
            while order.len() < 3 {
                match s.poll_transmit(now, &mut buf) {
                    Some(_) => order.push(buf[0]),
                    None => now = s.poll_timeout().expect("frames left"),
                }
            }
            assert_eq!(order, vec![3, 1, 2], "{kind:?}: control, reserved, default");
            assert_eq!(s.connections().collect::<Vec<_>>(), vec![flow]);
            assert_eq!(Scheduler::flows(&s), vec![flow]);
            assert!(s.remove_flow(flow).is_some());
            assert_eq!(s.connection_count(), 0);
            assert_eq!(s.stats().rt_frames_sent, 1);
        }
    }
}
