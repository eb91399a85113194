//! The scheduler a port runs, chosen per port: EtheReal's cyclic round robin (EtheReal §3.3) or
//! QSR's Guaranteed Service on a timing wheel (QSR §3.1). [`PortScheduler`] implements
//! [`Scheduler`] by delegation and has the inherent accessors a node uses on a port's scheduler,
//! so it replaces a [`CyclicScheduler`] field without changing the calls.

use std::time::Duration;

use super::cyclic::{CyclicScheduler, SchedConfig, SchedError};
use super::pool::BufferPools;
use super::sched::{ConnStats, FlowHandle, FlowSpec, SchedStats, Scheduler};
use super::wheel::WheelScheduler;
use crate::node::Medium;
use crate::time::Instant;

/// Which scheduler a port runs (configuration: `"cyclic"` or `"wheel"`): the topology model's
/// choice, one type for files, the lab, the simulator and the switch.
pub use rtlan_topology::SchedulerKind;

/// One port's scheduler, of either kind (see the module docs).
#[derive(Debug)]
pub enum PortScheduler {
    /// EtheReal §3.3.
    Cyclic(CyclicScheduler),
    /// QSR §3.1 Guaranteed Service.
    Wheel(WheelScheduler),
}

/// Calls the same method on whichever scheduler the port runs.
macro_rules! delegate {
    ($self:ident, $s:ident => $e:expr) => {
        match $self {
            PortScheduler::Cyclic($s) => $e,
            PortScheduler::Wheel($s) => $e,
        }
    };
}

impl PortScheduler {
    /// A scheduler of `kind` built from `cfg` (each kind reads the fields it uses).
    pub fn new(
        kind: SchedulerKind,
        cfg: SchedConfig,
        now: Instant,
    ) -> Result<PortScheduler, SchedError> {
        Ok(match kind {
            SchedulerKind::Cyclic => PortScheduler::Cyclic(CyclicScheduler::new(cfg, now)?),
            SchedulerKind::Wheel => PortScheduler::Wheel(WheelScheduler::new(cfg, now)?),
        })
    }

    /// The same scheduler with a control FIFO of `bytes`.
    pub fn with_control_queue(self, bytes: usize) -> PortScheduler {
        match self {
            PortScheduler::Cyclic(s) => PortScheduler::Cyclic(s.with_control_queue(bytes)),
            PortScheduler::Wheel(s) => PortScheduler::Wheel(s.with_control_queue(bytes)),
        }
    }

    /// Which kind this is.
    pub fn kind(&self) -> SchedulerKind {
        match self {
            PortScheduler::Cyclic(_) => SchedulerKind::Cyclic,
            PortScheduler::Wheel(_) => SchedulerKind::Wheel,
        }
    }

    /// Whether output is paced at the line rate.
    pub fn is_paced(&self) -> bool {
        delegate!(self, s => s.is_paced())
    }

    /// The medium the port transmits on.
    pub fn medium(&self) -> Medium {
        delegate!(self, s => s.medium())
    }

    /// The port's buffer pools (QSR §3.1).
    pub fn pools(&self) -> &BufferPools {
        delegate!(self, s => s.pools())
    }

    /// When the line is booked until by frames already sent.
    pub fn busy_until(&self) -> Instant {
        delegate!(self, s => s.busy_until())
    }

    /// Bytes charged against the non-real-time FIFO's bound.
    pub fn nrt_queued_bytes(&self) -> usize {
        delegate!(self, s => s.nrt_queued_bytes())
    }

    /// The non-real-time FIFO's bound in bytes.
    pub fn nrt_bound(&self) -> usize {
        delegate!(self, s => s.nrt_bound())
    }

    /// Frames queued in the non-real-time FIFO.
    pub fn nrt_queued(&self) -> usize {
        delegate!(self, s => s.nrt_queued())
    }

    /// Frames queued in the control FIFO.
    pub fn control_queued(&self) -> usize {
        delegate!(self, s => s.control_queued())
    }

    /// Frames queued on all reserved flows (O(flows)).
    pub fn rt_queued_total(&self) -> usize {
        delegate!(self, s => s.rt_queued_total())
    }

    /// Frames queued on `flow` (`None` for a stale handle).
    pub fn rt_queued(&self, flow: FlowHandle) -> Option<usize> {
        delegate!(self, s => s.rt_queued(flow))
    }

    /// The cyclic scheduler's cycle, or the timing wheel's slot length (its unit of time).
    pub fn cycle(&self) -> Duration {
        match self {
            PortScheduler::Cyclic(s) => s.cycle(),
            PortScheduler::Wheel(s) => s.granularity(),
        }
    }

    /// The line rate in bit/s.
    pub fn line_rate_bps(&self) -> u64 {
        delegate!(self, s => s.line_rate_bps())
    }

    /// Sum of the flows' reserved rates in bit/s.
    pub fn reserved_bps(&self) -> u64 {
        delegate!(self, s => s.reserved_bps())
    }

    /// The port's counters.
    pub fn stats(&self) -> &SchedStats {
        delegate!(self, s => s.stats())
    }

    /// Handles of the reserved flows, in slot order.
    pub fn connections(&self) -> impl Iterator<Item = FlowHandle> + '_ {
        let (cyclic, wheel) = match self {
            PortScheduler::Cyclic(s) => (Some(s.connections()), None),
            PortScheduler::Wheel(s) => (None, Some(s.connections())),
        };
        cyclic
            .into_iter()
            .flatten()
            .chain(wheel.into_iter().flatten())
    }

    /// Number of reserved flows.
    pub fn connection_count(&self) -> usize {
        delegate!(self, s => s.connection_count())
    }

    /// Counters of `flow` (`None` for a stale handle).
    pub fn connection_stats(&self, flow: FlowHandle) -> Option<ConnStats> {
        delegate!(self, s => s.connection_stats(flow))
    }

    /// Adds a reserved flow (see [`Scheduler::add_flow`]).
    pub fn add_flow(&mut self, spec: FlowSpec) -> Result<FlowHandle, SchedError> {
        delegate!(self, s => s.add_flow(spec))
    }

    /// Removes `flow` (see [`Scheduler::remove_flow`]).
    pub fn remove_flow(&mut self, flow: FlowHandle) -> Option<ConnStats> {
        delegate!(self, s => s.remove_flow(flow))
    }

    /// Queues a copy of `frame` on `flow` (see [`Scheduler::enqueue_flow`]).
    pub fn enqueue_flow(&mut self, now: Instant, flow: FlowHandle, frame: &[u8]) -> bool {
        delegate!(self, s => s.enqueue_flow(now, flow, frame))
    }

    /// Queues a copy of `frame` in the non-real-time FIFO.
    pub fn enqueue_nrt(&mut self, now: Instant, frame: &[u8]) -> bool {
        delegate!(self, s => s.enqueue_nrt(now, frame))
    }

    /// Queues a copy of `frame` in the control FIFO.
    pub fn enqueue_control(&mut self, now: Instant, frame: &[u8]) -> bool {
        delegate!(self, s => s.enqueue_control(now, frame))
    }

    /// The next frame to send at `now` (see [`Scheduler::poll_transmit`]).
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        delegate!(self, s => s.poll_transmit(now, buf))
    }

    /// The earliest instant at which [`PortScheduler::poll_transmit`] may return a frame.
    pub fn poll_timeout(&self) -> Option<Instant> {
        delegate!(self, s => s.poll_timeout())
    }
}

impl From<CyclicScheduler> for PortScheduler {
    fn from(s: CyclicScheduler) -> PortScheduler {
        PortScheduler::Cyclic(s)
    }
}

impl From<WheelScheduler> for PortScheduler {
    fn from(s: WheelScheduler) -> PortScheduler {
        PortScheduler::Wheel(s)
    }
}

impl Scheduler for PortScheduler {
    type Error = SchedError;

    fn medium(&self) -> Medium {
        PortScheduler::medium(self)
    }

    fn add_flow(&mut self, spec: FlowSpec) -> Result<FlowHandle, SchedError> {
        PortScheduler::add_flow(self, spec)
    }

    fn remove_flow(&mut self, flow: FlowHandle) -> Option<ConnStats> {
        PortScheduler::remove_flow(self, flow)
    }

    fn enqueue_flow(&mut self, now: Instant, flow: FlowHandle, frame: &[u8]) -> bool {
        PortScheduler::enqueue_flow(self, now, flow, frame)
    }

    fn enqueue_nrt(&mut self, now: Instant, frame: &[u8]) -> bool {
        PortScheduler::enqueue_nrt(self, now, frame)
    }

    fn enqueue_control(&mut self, now: Instant, frame: &[u8]) -> bool {
        PortScheduler::enqueue_control(self, now, frame)
    }

    fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        PortScheduler::poll_transmit(self, now, buf)
    }

    fn poll_timeout(&self) -> Option<Instant> {
        PortScheduler::poll_timeout(self)
    }

    fn stats(&self) -> &SchedStats {
        PortScheduler::stats(self)
    }

    fn flow_stats(&self, flow: FlowHandle) -> Option<ConnStats> {
        self.connection_stats(flow)
    }

    fn flows(&self) -> Vec<FlowHandle> {
        self.connections().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_reads_lowercase_and_both_kinds_delegate() {
        let kinds: Vec<SchedulerKind> =
            serde_json::from_str(r#"["cyclic", "wheel"]"#).expect("lowercase names");
        assert_eq!(kinds, vec![SchedulerKind::Cyclic, SchedulerKind::Wheel]);
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
