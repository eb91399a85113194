//! One output port's scheduler, split by concern: the part every real-time discipline shares
//! ([`PortCore`]: the control FIFO and its token bucket, the non-real-time FIFO, the buffer pools
//! of QSR §3.1, the line-rate pacer and the port's counters), and the real-time discipline that
//! decides when a reserved flow's frame may go ([`Discipline`]: EtheReal §3.3's cyclic round
//! robin, [`super::cyclic::CyclicDiscipline`], QSR §3.1's rate-controlled EDF timing wheel,
//! [`super::wheel::WheelDiscipline`], or the QSR port's wheel plus WF²Q+,
//! [`super::qsr::QsrDiscipline`], which also serves the default FIFO at a weight).
//!
//! [`Port`] owns one of each and is the [`Scheduler`]: it validates flows, books the line,
//! serves control frames within and beyond their bucket and the non-real-time FIFO once for
//! both disciplines, and asks the discipline only for the reserved frames. The per-flow part the
//! disciplines share (queue, reserved rate, maximum packet, counters) is [`FlowQueue`].
//!
//! Order at every transmit opportunity, whatever the discipline: control frames within the
//! control bucket; the reserved frame the discipline picks; control frames beyond the bucket;
//! the non-real-time FIFO. (The QSR discipline's pick is work-conserving and includes the
//! default class — control beyond the bucket, then the non-real-time FIFO — in its weighted
//! turn, so on a QSR port the last two steps find nothing.)

use std::time::Duration;

use rtlan_wire::cost::wire_bits;

use super::bucket::TokenBucket;
use super::config::{SchedConfig, SchedError};
use super::pacer::{Pacer, PACING_LATE_THRESHOLD};
use super::pool::{BufferPools, TrafficClass};
use super::queue::{charge, FrameQueue};
use super::sched::{ConnStats, FlowHandle, FlowSpec, SchedStats, Scheduler, Service};
use crate::node::Medium;
use crate::time::Instant;

const NANOS_PER_SEC: u128 = 1_000_000_000;

/// The real-time half of a port's scheduler: how reserved flows are served. Implemented by the
/// disciplines of this crate; [`Port`] calls it with the shared [`PortCore`].
pub trait Discipline: std::fmt::Debug {
    /// Processes time up to `now` (cycle boundaries, wheel releases); counts into `stats`.
    fn advance(&mut self, now: Instant, stats: &mut SchedStats);

    /// Adds a flow whose spec [`Port::add_flow`] has checked; its handle.
    fn add(&mut self, flow: FlowQueue, core: &PortCore) -> Result<FlowHandle, SchedError>;

    /// Removes `flow` from the discipline; its queue (frames still in it), or `None` if stale.
    fn remove(&mut self, flow: FlowHandle) -> Option<FlowQueue>;

    /// Schedules `flow` after [`Port::enqueue_flow`] queued a frame on it (lists a connection
    /// that was idle, puts an idle flow's head frame on the wheel).
    fn on_enqueued(&mut self, flow: FlowHandle);

    /// Sends the reserved frame that may go at `now` into `buf` (booked with
    /// [`PortCore::book_send`]); its length, or `None` if none may go.
    fn send(&mut self, now: Instant, buf: &mut [u8], core: &mut PortCore) -> Option<usize>;

    /// When the earliest reserved frame becomes due (before pacing), if one is queued.
    fn due(&self) -> Option<Instant>;

    /// When to wake for reserved frames waiting for service that is not yet due (the next cycle
    /// boundary), used only when nothing is due.
    fn wake(&self) -> Option<Instant>;

    /// The flow `flow` names, if it is still there.
    fn flow(&self, flow: FlowHandle) -> Option<&FlowQueue>;

    /// The flow `flow` names, if it is still there.
    fn flow_mut(&mut self, flow: FlowHandle) -> Option<&mut FlowQueue>;

    /// The flows with their handles, in slot order.
    fn flows(&self) -> impl Iterator<Item = (FlowHandle, &FlowQueue)>;

    /// Number of flows.
    fn len(&self) -> usize;

    /// Whether the discipline has no flows.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The discipline's unit of time: the cycle, or the wheel's slot length.
    fn unit(&self) -> Duration;

    /// Whether the discipline serves flows of `service` (all serve Guaranteed flows; only the
    /// QSR discipline serves Controlled-Load ones).
    fn supports(&self, service: Service) -> bool {
        service == Service::Guaranteed
    }
}

/// The per-flow part every discipline shares: the flow's bounded queue (charged to its service's
/// pool), its reservation and its counters.
#[derive(Debug)]
pub struct FlowQueue {
    pub(crate) rate_bps: u64,
    /// The flow's service class ([`FlowSpec::service`]).
    pub(crate) service: Service,
    pub(crate) max_packet: usize,
    pub(crate) queue: FrameQueue,
    pub(crate) stats: ConnStats,
}

impl FlowQueue {
    /// The queue of a flow of `spec`: `spec.queue_bytes`, or EtheReal §3.3's 2 × `max_burst`.
    fn new(spec: &FlowSpec) -> FlowQueue {
        FlowQueue {
            rate_bps: spec.rate_bps,
            service: spec.service,
            max_packet: spec.max_packet,
            queue: FrameQueue::new(if spec.queue_bytes == 0 {
                spec.max_burst.saturating_mul(2)
            } else {
                spec.queue_bytes
            }),
            stats: ConnStats::default(),
        }
    }

    /// The buffer pool the flow's queue charges.
    pub(crate) fn class(&self) -> TrafficClass {
        match self.service {
            Service::Guaranteed => TrafficClass::Guaranteed,
            Service::ControlledLoad => TrafficClass::ControlledLoad,
        }
    }

    /// Queues a copy of `frame`; `false` if dropped (longer than the maximum packet, queue full
    /// or no room in the flow's pool), counted for the flow and the port.
    pub(crate) fn accept(&mut self, now: Instant, frame: &[u8], core: &mut PortCore) -> bool {
        let accepted = frame.len() <= self.max_packet
            && self.queue.fits(frame.len())
            && core.pools.charge(self.class(), charge(frame.len()));
        if !accepted {
            self.drop_frame(frame.len());
            core.stats.rt_frames_dropped += 1;
            return false;
        }
        // `fits` said yes, so the push succeeds.
        self.queue.push(frame, now)
    }

    /// Takes the head frame into `buf`, gives its bytes back to the flow's pool and counts it
    /// as sent, or as dropped if longer than `buf`; its length and whether it was sent.
    pub(crate) fn take_head(
        &mut self,
        buf: &mut [u8],
        core: &mut PortCore,
    ) -> Option<(usize, bool)> {
        let len = self.queue.pop_into(buf)?;
        core.pools.release(self.class(), charge(len));
        let fits = len <= buf.len();
        if fits {
            self.stats.frames_sent += 1;
            self.stats.bytes_sent += len as u64;
            self.stats.wire_bits_sent += wire_bits(len);
            core.stats.rt_frames_sent += 1;
            core.stats.rt_bytes_sent += len as u64;
        } else {
            self.drop_frame(len);
            core.stats.rt_frames_dropped += 1;
        }
        Some((len, fits))
    }

    /// Frames queued.
    pub(crate) fn len(&self) -> usize {
        self.queue.len()
    }

    fn drop_frame(&mut self, len: usize) {
        self.stats.frames_dropped += 1;
        self.stats.bytes_dropped += len as u64;
    }
}

/// What a port's scheduler keeps whatever its discipline (see the module docs).
#[derive(Debug)]
pub struct PortCore {
    pub(crate) line_rate_bps: u64,
    /// [`SchedConfig::late_budget`].
    late_budget: Option<Duration>,
    max_connections: usize,
    /// The longest frame the port accepts (flows' maximum packet, control, non-real-time).
    pub(crate) max_frame: usize,
    pacer: Pacer,
    medium: Medium,
    /// Whether the medium is paced here (full duplex): otherwise frames go as soon as they may.
    paced: bool,
    /// Control frames (empty bound unless [`Port::with_control_queue`]): first while
    /// `control_bucket` allows, else after the reserved frames that may go.
    control: FrameQueue,
    control_bucket: TokenBucket,
    /// The control bucket's rate, booked against the line like a reservation.
    pub(crate) control_rate_bps: u64,
    pub(crate) control_burst_bits: u64,
    nrt: FrameQueue,
    pools: BufferPools,
    reserved_bps: u64,
    /// [`SchedConfig::default_floor_bps`], booked against the line like a reservation.
    pub(crate) default_floor_bps: u64,
    pub(crate) stats: SchedStats,
}

impl PortCore {
    /// `ZeroLineRate` unless `cfg` has a line rate (checked first by every discipline).
    pub(crate) fn check_line_rate(cfg: &SchedConfig) -> Result<(), SchedError> {
        if cfg.line_rate_bps == 0 || cfg.medium.rate_bps() == Some(0) {
            return Err(SchedError::ZeroLineRate);
        }
        Ok(())
    }

    /// The shared part of a port built from `cfg`, accepting frames of at most `max_frame`
    /// bytes; the non-real-time FIFO holds `cfg.nrt_queue_bytes`, or 2 × line rate × `window`.
    pub(crate) fn new(
        cfg: &SchedConfig,
        max_frame: usize,
        window: Duration,
    ) -> Result<PortCore, SchedError> {
        PortCore::check_line_rate(cfg)?;
        let control_bucket = cfg.control_bucket()?;
        if cfg.default_floor_bps.saturating_add(cfg.control_rate_bps) > cfg.line_rate_bps {
            return Err(SchedError::BadDefaultFloor {
                floor_bps: cfg.default_floor_bps,
                line_bps: cfg.line_rate_bps,
            });
        }
        let pacing_rate = cfg.medium.pacing_rate_bps();
        let nrt_bytes = cfg.nrt_queue_bytes.unwrap_or_else(|| {
            let bytes = 2 * u128::from(cfg.line_rate_bps) * window.as_nanos() / 8 / NANOS_PER_SEC;
            usize::try_from(bytes).unwrap_or(usize::MAX)
        });
        Ok(PortCore {
            line_rate_bps: cfg.line_rate_bps,
            late_budget: cfg.late_budget,
            max_connections: cfg.max_connections,
            max_frame,
            pacer: Pacer::new(pacing_rate.unwrap_or(cfg.line_rate_bps))
                .with_catchup(cfg.late_budget.unwrap_or_default()),
            medium: cfg.medium,
            paced: pacing_rate.is_some(),
            control: FrameQueue::new(0),
            control_bucket,
            control_rate_bps: cfg.control_rate_bps,
            // `control_bucket` checked that this fits.
            control_burst_bits: (cfg.control_burst_bytes as u64).saturating_mul(8),
            nrt: FrameQueue::new(nrt_bytes),
            pools: BufferPools::new(cfg.pools),
            reserved_bps: 0,
            default_floor_bps: cfg.default_floor_bps,
            stats: SchedStats::default(),
        })
    }

    /// `Oversubscribed` for the line booked with `rate_bps` more.
    pub(crate) fn oversubscribed(&self, rate_bps: u64) -> SchedError {
        SchedError::Oversubscribed {
            total_bps: self
                .reserved_bps
                .saturating_add(rate_bps)
                .saturating_add(self.control_rate_bps)
                .saturating_add(self.default_floor_bps),
            line_bps: self.line_rate_bps,
        }
    }

    /// `TooManyConnections` with the port's limit.
    pub(crate) fn too_many(&self) -> SchedError {
        SchedError::TooManyConnections(self.max_connections)
    }

    /// Books a send at `now` of a frame of `len` bytes that became due at `due`: its lateness
    /// (largest, late sends, sends beyond the lateness budget) and, on a paced port, the line.
    pub(crate) fn book_send(&mut self, now: Instant, due: Instant, len: usize) {
        let ready = if self.paced {
            self.pacer.ready_at(due)
        } else {
            due
        };
        let late = now.saturating_duration_since(ready);
        let late_ns = u64::try_from(late.as_nanos()).unwrap_or(u64::MAX);
        self.stats.late_max_ns = self.stats.late_max_ns.max(late_ns);
        if late > PACING_LATE_THRESHOLD {
            self.stats.late_sends += 1;
        }
        if self.late_budget.is_some_and(|budget| late > budget) {
            self.stats.budget_violations += 1;
        }
        if self.paced {
            self.pacer.on_send(now, due, len);
        }
    }

    /// Queues a copy of `frame` in `class`'s FIFO (control or default) if it is at most
    /// `max_frame` bytes and both the FIFO and the pools have room; `false` otherwise, counted.
    fn push(&mut self, class: TrafficClass, now: Instant, frame: &[u8]) -> bool {
        let (queue, dropped) = match class {
            TrafficClass::Control => (&mut self.control, &mut self.stats.control_frames_dropped),
            _ => (&mut self.nrt, &mut self.stats.nrt_frames_dropped),
        };
        let pushed = frame.len() <= self.max_frame
            && queue.fits(frame.len())
            && self.pools.charge(class, charge(frame.len()))
            // `fits` said yes, so the push succeeds.
            && queue.push(frame, now);
        if !pushed {
            *dropped += 1;
        }
        pushed
    }

    /// Sends the head control frame into `buf`: if `in_bucket`, only when the control bucket
    /// holds its wire bits (and takes them); otherwise regardless of the bucket. Frames longer
    /// than `buf` are dropped and counted.
    fn send_control(&mut self, now: Instant, buf: &mut [u8], in_bucket: bool) -> Option<usize> {
        while let Some((len, enqueued)) = self.control.front() {
            let bits = wire_bits(len);
            let fits = len <= buf.len();
            if in_bucket && fits {
                if !self.control_bucket.conforms(now.as_nanos(), bits) {
                    return None;
                }
                self.control_bucket.take(now.as_nanos(), bits);
            }
            self.control.pop_into(buf);
            self.pools.release(TrafficClass::Control, charge(len));
            if fits {
                self.stats.control_frames_sent += 1;
                self.book_send(now, enqueued, len);
                return Some(len);
            }
            self.stats.control_frames_dropped += 1;
        }
        None
    }

    /// Length of the frame the default class sends next in a fair-queueing discipline's turn
    /// ([`PortCore::send_default`]): the control head (beyond its bucket), else the
    /// non-real-time head.
    pub(crate) fn default_head_len(&self) -> Option<usize> {
        self.control
            .front()
            .or_else(|| self.nrt.front())
            .map(|(len, _)| len)
    }

    /// Sends, in the default class's turn, the control head regardless of its bucket (control
    /// beyond its bucket rides ahead of default frames, as on every port), else the head of the
    /// non-real-time FIFO.
    pub(crate) fn send_default(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        self.send_control(now, buf, false)
            .or_else(|| self.send_nrt(now, buf))
    }

    /// Sends the head of the non-real-time FIFO into `buf`; frames longer than `buf` are
    /// dropped and counted.
    fn send_nrt(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        while let Some((len, enqueued)) = self.nrt.front() {
            self.nrt.pop_into(buf);
            self.pools.release(TrafficClass::Default, charge(len));
            if len <= buf.len() {
                self.stats.nrt_frames_sent += 1;
                self.stats.nrt_bytes_sent += len as u64;
                self.book_send(now, enqueued, len);
                return Some(len);
            }
            self.stats.nrt_frames_dropped += 1;
        }
        None
    }
}

/// One output port's scheduler: the shared [`PortCore`] and a real-time [`Discipline`] (see the
/// module docs).
///
/// Driver call order: that of the [`Scheduler`] trait, which it implements; its inherent methods
/// of the same names are the same calls.
#[derive(Debug)]
pub struct Port<D> {
    pub(crate) core: PortCore,
    pub(crate) rt: D,
}

impl<D: Discipline> Port<D> {
    /// The same scheduler with a control FIFO of `bytes` (allocated now): control frames go
    /// before any reserved or non-real-time frame while the control bucket holds their wire
    /// bits, and after the reserved frames that may go (still before non-real-time frames)
    /// when it does not.
    pub fn with_control_queue(mut self, bytes: usize) -> Port<D> {
        self.core.control = FrameQueue::new(bytes);
        self
    }

    /// Whether output is paced at the line rate (the medium is full duplex).
    pub fn is_paced(&self) -> bool {
        self.core.paced
    }

    /// The medium the port transmits on.
    pub fn medium(&self) -> Medium {
        self.core.medium
    }

    /// The port's buffer pools (QSR §3.1).
    pub fn pools(&self) -> &BufferPools {
        &self.core.pools
    }

    /// When the line is booked until by frames already sent (`Instant::ZERO` if unpaced).
    pub fn busy_until(&self) -> Instant {
        self.core.pacer.busy_until()
    }

    /// The largest frame the port accepts, bytes without FCS.
    pub fn max_frame(&self) -> usize {
        self.core.max_frame
    }

    /// Bytes charged against the non-real-time FIFO's bound (frames count at least 60 bytes).
    pub fn nrt_queued_bytes(&self) -> usize {
        self.core.nrt.charged_bytes()
    }

    /// The non-real-time FIFO's bound in bytes.
    pub fn nrt_bound(&self) -> usize {
        self.core.nrt.bound()
    }

    /// Frames queued in the non-real-time FIFO.
    pub fn nrt_queued(&self) -> usize {
        self.core.nrt.len()
    }

    /// Frames queued in the control FIFO.
    pub fn control_queued(&self) -> usize {
        self.core.control.len()
    }

    /// Frames queued on all reserved flows (O(flows)).
    pub fn rt_queued_total(&self) -> usize {
        self.rt.flows().map(|(_, f)| f.len()).sum()
    }

    /// Frames queued on `flow` (`None` for a stale handle).
    pub fn rt_queued(&self, flow: FlowHandle) -> Option<usize> {
        self.rt.flow(flow).map(FlowQueue::len)
    }

    /// The line rate in bit/s.
    pub fn line_rate_bps(&self) -> u64 {
        self.core.line_rate_bps
    }

    /// The rate set aside for default traffic ([`SchedConfig::default_floor_bps`]).
    pub fn default_floor_bps(&self) -> u64 {
        self.core.default_floor_bps
    }

    /// Sum of the flows' reserved rates in bit/s (without the control rate).
    pub fn reserved_bps(&self) -> u64 {
        self.core.reserved_bps
    }

    /// The control bucket's rate in bit/s.
    pub fn control_rate_bps(&self) -> u64 {
        self.core.control_rate_bps
    }

    /// The port's counters.
    pub fn stats(&self) -> &SchedStats {
        &self.core.stats
    }

    /// Handles of the reserved flows, in slot order.
    pub fn connections(&self) -> impl Iterator<Item = FlowHandle> + '_ {
        self.rt.flows().map(|(handle, _)| handle)
    }

    /// Number of reserved flows.
    pub fn connection_count(&self) -> usize {
        self.rt.len()
    }

    /// Counters of `flow` (`None` for a stale handle).
    pub fn connection_stats(&self, flow: FlowHandle) -> Option<ConnStats> {
        self.rt.flow(flow).map(|f| f.stats)
    }

    /// Frames queued on `flow`, or `None` for a stale handle.
    pub fn flow_queued(&self, flow: FlowHandle) -> Option<usize> {
        self.rt.flow(flow).map(FlowQueue::len)
    }

    /// Adds a reserved flow of `spec.rate_bps` wire bit/s with a queue of `spec.queue_bytes`
    /// (0: 2 × `spec.max_burst`) bytes, accepting frames of at most `spec.max_packet` (≤ the
    /// port's `max_frame`) bytes, of `spec.service` (Controlled Load only on a QSR port).
    /// Refused if the reservations (Guaranteed and Controlled Load) plus the control rate plus
    /// the default floor would exceed the line rate. Allocates the queue; the handle addresses
    /// the flow from now on.
    pub fn add_flow(&mut self, spec: FlowSpec) -> Result<FlowHandle, SchedError> {
        let core = &self.core;
        if self.rt.len() >= core.max_connections {
            return Err(core.too_many());
        }
        if !self.rt.supports(spec.service) {
            return Err(SchedError::UnsupportedService(spec.service));
        }
        if spec.rate_bps == 0 {
            return Err(SchedError::ZeroRate);
        }
        if spec.max_packet == 0 || spec.max_packet > core.max_frame {
            return Err(SchedError::BadMaxPacket(spec.max_packet));
        }
        if spec.max_burst < spec.max_packet {
            return Err(SchedError::BurstBelowPacket {
                burst: spec.max_burst,
                packet: spec.max_packet,
            });
        }
        let total = core.reserved_bps.saturating_add(spec.rate_bps);
        if total
            .saturating_add(core.control_rate_bps)
            .saturating_add(core.default_floor_bps)
            > core.line_rate_bps
        {
            return Err(core.oversubscribed(spec.rate_bps));
        }
        let handle = self.rt.add(FlowQueue::new(&spec), core)?;
        self.core.reserved_bps = total;
        Ok(handle)
    }

    /// Removes `flow`, dropping (and counting) its queued frames. Returns its final counters, or
    /// `None` for a stale handle.
    pub fn remove_flow(&mut self, flow: FlowHandle) -> Option<ConnStats> {
        let mut f = self.rt.remove(flow)?;
        while let Some(len) = f.queue.pop_into(&mut []) {
            self.core.pools.release(f.class(), charge(len));
            f.drop_frame(len);
            self.core.stats.rt_frames_dropped += 1;
        }
        self.core.reserved_bps -= f.rate_bps;
        Some(f.stats)
    }

    /// Queues a copy of `frame` on `flow`. `false` if dropped: stale handle, frame longer than
    /// the flow's maximum packet, queue full (the flow sends too fast), or no room in the
    /// reserved buffer pool.
    pub fn enqueue_flow(&mut self, now: Instant, flow: FlowHandle, frame: &[u8]) -> bool {
        self.rt.advance(now, &mut self.core.stats);
        let Some(f) = self.rt.flow_mut(flow) else {
            self.core.stats.rt_frames_dropped += 1;
            return false;
        };
        if !f.accept(now, frame, &mut self.core) {
            return false;
        }
        self.rt.on_enqueued(flow);
        true
    }

    /// Queues a copy of `frame` in the control FIFO; `false` if it is longer than the port's
    /// `max_frame` or the FIFO or pools are full (frame dropped, counted).
    pub fn enqueue_control(&mut self, now: Instant, frame: &[u8]) -> bool {
        self.rt.advance(now, &mut self.core.stats);
        self.core.push(TrafficClass::Control, now, frame)
    }

    /// Queues a copy of `frame` in the non-real-time FIFO; `false` if it is longer than the
    /// port's `max_frame` or the FIFO or default pool is full (frame dropped, counted).
    pub fn enqueue_nrt(&mut self, now: Instant, frame: &[u8]) -> bool {
        self.rt.advance(now, &mut self.core.stats);
        self.core.push(TrafficClass::Default, now, frame)
    }

    /// The next frame to send at `now`, copied into `buf`; its length, or `None` if the line is
    /// busy or nothing may go. A frame longer than `buf` is dropped and counted.
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        self.rt.advance(now, &mut self.core.stats);
        if self.core.paced && now < self.core.pacer.busy_until() {
            return None;
        }
        self.core
            .send_control(now, buf, true)
            .or_else(|| self.rt.send(now, buf, &mut self.core))
            .or_else(|| self.core.send_control(now, buf, false))
            .or_else(|| self.core.send_nrt(now, buf))
    }

    /// The earliest instant at which [`Port::poll_transmit`] may return a frame: the pacer's
    /// ready time for the earliest of the control head's enqueue time, the discipline's due
    /// reserved frame and the non-real-time head's enqueue time; else the discipline's wake-up
    /// (no earlier than the line is free); else `None`.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let core = &self.core;
        let head = [
            core.control.front().map(|(_, t)| t),
            self.rt.due(),
            core.nrt.front().map(|(_, t)| t),
        ]
        .into_iter()
        .flatten()
        .min();
        if let Some(due) = head {
            return Some(if core.paced {
                core.pacer.ready_at(due)
            } else {
                due
            });
        }
        self.rt.wake().map(|wake| wake.max(core.pacer.busy_until()))
    }
}

impl<D: Discipline> Scheduler for Port<D> {
    type Error = SchedError;

    fn medium(&self) -> Medium {
        self.core.medium
    }

    fn add_flow(&mut self, spec: FlowSpec) -> Result<FlowHandle, SchedError> {
        Port::add_flow(self, spec)
    }

    fn remove_flow(&mut self, flow: FlowHandle) -> Option<ConnStats> {
        Port::remove_flow(self, flow)
    }

    fn enqueue_flow(&mut self, now: Instant, flow: FlowHandle, frame: &[u8]) -> bool {
        Port::enqueue_flow(self, now, flow, frame)
    }

    fn enqueue_nrt(&mut self, now: Instant, frame: &[u8]) -> bool {
        Port::enqueue_nrt(self, now, frame)
    }

    fn enqueue_control(&mut self, now: Instant, frame: &[u8]) -> bool {
        Port::enqueue_control(self, now, frame)
    }

    fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        Port::poll_transmit(self, now, buf)
    }

    fn poll_timeout(&self) -> Option<Instant> {
        Port::poll_timeout(self)
    }

    fn stats(&self) -> &SchedStats {
        &self.core.stats
    }

    fn flow_stats(&self, flow: FlowHandle) -> Option<ConnStats> {
        self.connection_stats(flow)
    }

    fn flows(&self) -> Vec<FlowHandle> {
        self.connections().collect()
    }
}
