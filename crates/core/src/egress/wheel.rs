//! Rate-controlled earliest-deadline-first service on a timing wheel: QSR's Guaranteed Service
//! (QSR §3.1: each GS flow on "the high priority non-work-conserving timing wheel with a rate
//! allocation equal to their requested service rate R. The token bucket size is set to the
//! maximum packet size M", buffer 2M; the delay bound is RFC 2212's).
//!
//! **Regulator.** Each reserved flow *i* has a reserved wire rate `R_i` ([`FlowSpec::rate_bps`])
//! and a largest frame of `L_i` wire bits ([`wire_bits`] of `max_packet`). A token bucket of rate
//! `R_i` and depth `L_i`, full when the flow is added, makes the flow's head frame *eligible* at
//! the earliest instant the bucket holds its wire bits (and not before it arrived): reshaping at
//! the service rate, as QSR does by setting the bucket to M. The arithmetic is exact (nano-bits,
//! as the cyclic scheduler's credit); the eligibility instant is rounded up to the nanosecond, so
//! a flow's eligible frames never exceed `L_i + R_i·t` wire bits in any window `t`.
//!
//! **Timing wheel.** Eligibility times wait on a wheel of `wheel_slots` slots of `granularity`
//! ([`SchedConfig`]); a head frame is *released* at the first slot boundary at or after its
//! eligibility time — never early, which would break the regulator, and at most one granularity
//! late. Release times beyond the wheel's horizon wait in an overflow heap and enter the ring as
//! the horizon reaches them. Why a wheel: inserting a release time is O(1) (a list push into the
//! slot's bucket) and advancing costs O(slots passed + frames released), independent of the
//! number of flows; it is the structure QSR's CHARM chip schedules with. Only each flow's head
//! frame is ever on the wheel or in the released set, so both hold at most one entry per flow and
//! their storage is sized in `add_flow`; nothing allocates per frame.
//!
//! **EDF.** Released frames are served earliest deadline first, deadline = eligibility time +
//! `d_i`, ties broken by a sequence number given when the head frame was scheduled, so the order
//! is a total, deterministic one. The relative deadline is [`wheel_deadline_ns`]:
//! `d_i = L_i/R_i + D0 + g`, `D0 = (L_max + σ_c)/(C − ρ_c)`, with `C` the line rate, `L_max` the
//! wire bits of the largest frame the port may send ([`SchedConfig::max_frame`]), `(σ_c, ρ_c)`
//! the control bucket and `g` the granularity. With `Σ R_i + ρ_c ≤ C` (checked in `add_flow`)
//! every reserved frame finishes by its deadline — see `docs/scheduler.md` §7 for the proof —
//! and a frame that does not is counted in [`SchedStats::deadline_misses`] (late wake-ups of the
//! driver cause them).
//!
//! **Order at each transmit opportunity:** control frames within the control bucket; the
//! released reserved frame with the earliest deadline; control frames beyond the bucket; the
//! non-real-time FIFO. Reserved service is non-work-conserving: a frame never goes before its
//! release, even on an idle line. On a [`Medium::FullDuplex`] port the pacer paces all output
//! at line rate. Buffer pools, the control and non-real-time FIFOs, statistics and flow handles
//! are those of the cyclic scheduler (QSR §3.1's pools; the flow slab).

mod timing;

#[cfg(test)]
mod tests;

use std::cmp::Reverse;

use rtlan_calculus::servers;
use std::collections::BinaryHeap;
use std::time::Duration;

use rtlan_wire::cost::{tx_time, wire_bits};

use super::bucket::TokenBucket;
use super::cyclic::{book_send, pop_control, push_charged};
use super::pacer::Pacer;
use super::pool::{BufferPools, TrafficClass};
use super::queue::{charge, FrameQueue};
use super::sched::{ConnStats, FlowHandle, FlowSlab, FlowSpec, SchedStats, Scheduler};
use super::{SchedConfig, SchedError, MAX_GRANULARITY, MIN_GRANULARITY};
use crate::node::Medium;
use crate::time::Instant;
use timing::TimingWheel;

/// The longest frame a queue can hold (its length is stored as `u16`).
const MAX_PACKET: usize = u16::MAX as usize;

const NANOS_PER_SEC: u128 = 1_000_000_000;

/// The relative deadline `d_i` of a flow on the timing wheel, in nanoseconds rounded up:
///
/// `d_i = L_i/R_i + (L_max + σ_c)/(C − ρ_c) + g`
///
/// with `L_i` the flow's largest frame in wire bits (`flow_max_bits`), `R_i` its reserved wire
/// rate (`flow_rate_bps`), `L_max` the largest frame the port may send in wire bits
/// (`max_frame_bits`: one frame already on the wire, non-preemptive), `σ_c` and `ρ_c` the control
/// bucket's depth in bits and rate (control frames within it go first), `C` the line rate and
/// `g` the wheel's granularity (a release is at most `g` after eligibility). A frame eligible at
/// `e` finishes by `e + d_i` when `Σ R_i + ρ_c ≤ C`. `None` if `R_i = 0` or `ρ_c ≥ C`.
pub fn wheel_deadline_ns(
    flow_max_bits: u64,
    flow_rate_bps: u64,
    max_frame_bits: u64,
    control_burst_bits: u64,
    control_rate_bps: u64,
    line_rate_bps: u64,
    granularity_ns: u64,
) -> Option<u64> {
    // One formula for the scheduler and the calculus (rtlan_calculus::servers): lateness and
    // link delay are not part of the scheduler's own deadline.
    let params = servers::WheelParams {
        port: servers::PortParams {
            line_rate_bps,
            max_frame_bits,
            control_burst_bits,
            control_rate_bps,
            lateness_ns: 0,
            link_delay_ns: 0,
        },
        granularity_ns,
    };
    let flow = servers::HopTspec {
        rate_bps: flow_rate_bps,
        burst_bits: flow_max_bits,
        max_frame_bits: flow_max_bits,
    };
    servers::wheel_deadline_ns(&params, &flow).ok()
}

/// A released head frame's place in the EDF order: deadline (ns), then sequence, then the
/// flow's slot.
type ReadyKey = Reverse<(u64, u64, u32)>;

/// The head frame of a flow, once scheduled.
#[derive(Debug, Clone, Copy)]
struct Head {
    /// Eligibility time (ns).
    eligible: u64,
    /// Release time (ns): the first slot boundary at or after `eligible`.
    release: u64,
    /// `eligible + d_i` (ns).
    deadline: u64,
    seq: u64,
}

/// One reserved flow.
#[derive(Debug)]
struct Flow {
    rate_bps: u64,
    max_packet: usize,
    queue: FrameQueue,
    regulator: TokenBucket,
    /// Relative deadline `d_i` in ns.
    deadline_ns: u64,
    /// The head frame's schedule, while it is on the wheel or released.
    head: Option<Head>,
    stats: ConnStats,
}

impl Flow {
    fn drop_frame(&mut self, len: usize) {
        self.stats.frames_dropped += 1;
        self.stats.bytes_dropped += len as u64;
    }
}

/// The timing-wheel scheduler of one output port (see the module docs).
///
/// Driver call order: that of the [`Scheduler`] trait, which it implements; its inherent methods
/// of the same names are the same calls.
#[derive(Debug)]
pub struct WheelScheduler {
    granularity_ns: u64,
    line_rate_bps: u64,
    /// [`SchedConfig::late_budget`].
    late_budget: Option<std::time::Duration>,
    max_frame: usize,
    max_connections: usize,
    /// Slot 0's boundary (ns): the instant the scheduler was built.
    epoch: u64,
    pacer: Pacer,
    medium: Medium,
    paced: bool,
    control: FrameQueue,
    control_bucket: TokenBucket,
    control_rate_bps: u64,
    control_burst_bits: u64,
    nrt: FrameQueue,
    pools: BufferPools,
    flows: FlowSlab<Flow>,
    wheel: TimingWheel,
    /// Released head frames, by [`ReadyKey`]; capacity ≥ number of flows.
    ready: BinaryHeap<ReadyKey>,
    seq: u64,
    reserved_bps: u64,
    stats: SchedStats,
    /// Test-only broken variant: serve released frames in order of eligibility (FIFO) instead
    /// of deadline, to show that the deadline test catches it.
    #[cfg(test)]
    fifo_order: bool,
    /// Test-only record of every head scheduled: (flow slot, eligibility ns, release ns).
    #[cfg(test)]
    trace: Vec<(u32, u64, u64)>,
}

impl WheelScheduler {
    /// A scheduler with no flows whose slot 0 starts at `now`.
    pub fn new(cfg: SchedConfig, now: Instant) -> Result<WheelScheduler, SchedError> {
        if cfg.line_rate_bps == 0 || cfg.medium.rate_bps() == Some(0) {
            return Err(SchedError::ZeroLineRate);
        }
        if !(MIN_GRANULARITY..=MAX_GRANULARITY).contains(&cfg.granularity) {
            return Err(SchedError::GranularityOutOfRange(cfg.granularity));
        }
        if !cfg.wheel_slots.is_power_of_two() || !(64..=1 << 20).contains(&cfg.wheel_slots) {
            return Err(SchedError::BadWheelSlots(cfg.wheel_slots));
        }
        if !(60..=MAX_PACKET).contains(&cfg.max_frame) {
            return Err(SchedError::BadMaxFrame(cfg.max_frame));
        }
        let control_bucket = cfg.control_bucket()?;
        let pacing_rate = cfg.medium.pacing_rate_bps();
        // MAX_GRANULARITY is 10 ms, so the nanoseconds fit a u64.
        let granularity_ns = u64::try_from(cfg.granularity.as_nanos()).unwrap_or(u64::MAX);
        // Without a cycle, the default non-real-time FIFO holds 2 × line rate × 10 ms (the
        // cyclic scheduler's default cycle), so both schedulers size it alike.
        let nrt_bytes = cfg.nrt_queue_bytes.unwrap_or_else(|| {
            let window = u128::from(u64::try_from(super::DEFAULT_CYCLE.as_nanos()).unwrap_or(0));
            let bytes = 2 * u128::from(cfg.line_rate_bps) * window / 8 / NANOS_PER_SEC;
            usize::try_from(bytes).unwrap_or(usize::MAX)
        });
        Ok(WheelScheduler {
            granularity_ns,
            line_rate_bps: cfg.line_rate_bps,
            late_budget: cfg.late_budget,
            max_frame: cfg.max_frame,
            max_connections: cfg.max_connections,
            epoch: now.as_nanos(),
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
            flows: FlowSlab::with_capacity(0),
            wheel: TimingWheel::new(cfg.wheel_slots),
            ready: BinaryHeap::new(),
            seq: 0,
            reserved_bps: 0,
            stats: SchedStats::default(),
            #[cfg(test)]
            fifo_order: false,
            #[cfg(test)]
            trace: Vec::new(),
        })
    }

    /// The same scheduler with a control FIFO of `bytes` (allocated now); see the module docs
    /// for when control frames go.
    pub fn with_control_queue(mut self, bytes: usize) -> WheelScheduler {
        self.control = FrameQueue::new(bytes);
        self
    }

    /// Whether output is paced at the line rate (the medium is full duplex).
    pub fn is_paced(&self) -> bool {
        self.paced
    }

    /// The medium the port transmits on.
    pub fn medium(&self) -> Medium {
        self.medium
    }

    /// The port's buffer pools (QSR §3.1).
    pub fn pools(&self) -> &BufferPools {
        &self.pools
    }

    /// When the line is booked until by frames already sent (`Instant::ZERO` if unpaced).
    pub fn busy_until(&self) -> Instant {
        self.pacer.busy_until()
    }

    /// The slot length of the wheel.
    pub fn granularity(&self) -> Duration {
        Duration::from_nanos(self.granularity_ns)
    }

    /// The largest frame the port sends, bytes without FCS.
    pub fn max_frame(&self) -> usize {
        self.max_frame
    }

    /// The line rate in bit/s.
    pub fn line_rate_bps(&self) -> u64 {
        self.line_rate_bps
    }

    /// Sum of the flows' reserved rates in bit/s (without the control rate).
    pub fn reserved_bps(&self) -> u64 {
        self.reserved_bps
    }

    /// The control bucket's rate in bit/s.
    pub fn control_rate_bps(&self) -> u64 {
        self.control_rate_bps
    }

    /// The port's counters.
    pub fn stats(&self) -> &SchedStats {
        &self.stats
    }

    /// Bytes charged against the non-real-time FIFO's bound.
    pub fn nrt_queued_bytes(&self) -> usize {
        self.nrt.charged_bytes()
    }

    /// The non-real-time FIFO's bound in bytes.
    pub fn nrt_bound(&self) -> usize {
        self.nrt.bound()
    }

    /// Frames queued in the non-real-time FIFO.
    pub fn nrt_queued(&self) -> usize {
        self.nrt.len()
    }

    /// Frames queued in the control FIFO.
    pub fn control_queued(&self) -> usize {
        self.control.len()
    }

    /// Frames queued on all flows (O(flows)).
    pub fn rt_queued_total(&self) -> usize {
        self.flows.iter().map(|(_, f)| f.queue.len()).sum()
    }

    /// Frames queued on `flow` (`None` for a stale handle).
    pub fn rt_queued(&self, flow: FlowHandle) -> Option<usize> {
        self.flows.get(flow).map(|f| f.queue.len())
    }

    /// Handles of the flows, in slot order.
    pub fn connections(&self) -> impl Iterator<Item = FlowHandle> + '_ {
        self.flows.iter().map(|(handle, _)| handle)
    }

    /// Number of flows.
    pub fn connection_count(&self) -> usize {
        self.flows.len()
    }

    /// Counters of `flow` (`None` for a stale handle).
    pub fn connection_stats(&self, flow: FlowHandle) -> Option<ConnStats> {
        self.flows.get(flow).map(|f| f.stats)
    }

    /// The relative deadline `d_i` of `flow` ([`wheel_deadline_ns`]; `None` for a stale handle).
    pub fn flow_deadline(&self, flow: FlowHandle) -> Option<Duration> {
        self.flows
            .get(flow)
            .map(|f| Duration::from_nanos(f.deadline_ns))
    }

    /// Adds a reserved flow of `spec.rate_bps` wire bit/s with a queue of `spec.queue_bytes`
    /// (0: 2 × `spec.max_burst`) bytes, accepting frames of at most `spec.max_packet` (≤ the
    /// port's `max_frame`) bytes. Refused if the reservations plus the control rate would exceed
    /// the line rate. Allocates the queue and the flow's room on the wheel.
    pub fn add_flow(&mut self, spec: FlowSpec) -> Result<FlowHandle, SchedError> {
        let FlowSpec {
            rate_bps,
            max_burst,
            max_packet,
            queue_bytes,
        } = spec;
        if self.flows.len() >= self.max_connections {
            return Err(SchedError::TooManyConnections(self.max_connections));
        }
        if rate_bps == 0 {
            return Err(SchedError::ZeroRate);
        }
        if max_packet == 0 || max_packet > self.max_frame {
            return Err(SchedError::BadMaxPacket(max_packet));
        }
        if max_burst < max_packet {
            return Err(SchedError::BurstBelowPacket {
                burst: max_burst,
                packet: max_packet,
            });
        }
        let total = self.reserved_bps.saturating_add(rate_bps);
        let booked = total.saturating_add(self.control_rate_bps);
        if booked > self.line_rate_bps {
            return Err(SchedError::Oversubscribed {
                total_bps: booked,
                line_bps: self.line_rate_bps,
            });
        }
        let max_bits = wire_bits(max_packet);
        let deadline_ns = wheel_deadline_ns(
            max_bits,
            rate_bps,
            wire_bits(self.max_frame),
            self.control_burst_bits,
            self.control_rate_bps,
            self.line_rate_bps,
            self.granularity_ns,
        )
        .ok_or(SchedError::Oversubscribed {
            total_bps: booked,
            line_bps: self.line_rate_bps,
        })?;
        let flow = Flow {
            rate_bps,
            max_packet,
            queue: FrameQueue::new(if queue_bytes == 0 {
                max_burst.saturating_mul(2)
            } else {
                queue_bytes
            }),
            regulator: TokenBucket::new(rate_bps, max_bits),
            deadline_ns,
            head: None,
            stats: ConnStats::default(),
        };
        let handle = self
            .flows
            .insert(flow)
            .ok_or(SchedError::TooManyConnections(self.max_connections))?;
        let n = self.flows.len();
        // Slot indexes are u32 (FlowHandle), so this fits.
        self.wheel
            .ensure(u32::try_from(handle.slot()).unwrap_or(u32::MAX), n);
        self.ready.reserve(n.saturating_sub(self.ready.len()));
        self.reserved_bps = total;
        Ok(handle)
    }

    /// Removes `flow`, dropping (and counting) its queued frames. Returns its final counters, or
    /// `None` for a stale handle.
    pub fn remove_flow(&mut self, flow: FlowHandle) -> Option<ConnStats> {
        let mut f = self.flows.remove(flow)?;
        let slot = u32::try_from(flow.slot()).unwrap_or(u32::MAX);
        if f.head.is_some() {
            self.wheel.remove(slot);
            self.ready.retain(|Reverse((_, _, s))| *s != slot);
        }
        while let Some(len) = f.queue.pop_into(&mut []) {
            self.pools.release(TrafficClass::Reserved, charge(len));
            f.drop_frame(len);
            self.stats.rt_frames_dropped += 1;
        }
        self.reserved_bps -= f.rate_bps;
        Some(f.stats)
    }

    /// The boundary of slot `k` in ns.
    fn boundary(&self, k: u64) -> u64 {
        self.epoch
            .saturating_add(k.saturating_mul(self.granularity_ns))
    }

    /// Releases every head frame whose slot boundary is at or before `now`.
    fn advance(&mut self, now: Instant) {
        let to = now.as_nanos().saturating_sub(self.epoch) / self.granularity_ns;
        let Self {
            wheel,
            flows,
            ready,
            ..
        } = self;
        #[cfg(test)]
        let fifo = self.fifo_order;
        #[cfg(not(test))]
        let fifo = false;
        wheel.advance(to, |id| {
            if let Some(head) = flows.slot(id as usize).and_then(|f| f.head) {
                ready.push(ready_key(head, id, fifo));
            }
        });
    }

    /// Schedules the head frame of the flow in `slot` (if any) through its regulator: computes
    /// its eligibility, release and deadline, and puts it on the wheel or, if its release slot
    /// has passed, straight into the EDF set.
    fn schedule_head(&mut self, slot: u32) {
        let (epoch, granularity_ns) = (self.epoch, self.granularity_ns);
        let Some(f) = self.flows.slot_mut(slot as usize) else {
            return;
        };
        let Some((len, arrival)) = f.queue.front() else {
            f.head = None;
            return;
        };
        let bits = wire_bits(len);
        // `add_flow` refuses packets beyond the bucket's depth and a zero rate, so the bucket
        // always fills far enough; `u128::MAX` would only push the frame beyond every horizon.
        let exact = f
            .regulator
            .eligible_at(arrival.as_nanos(), bits)
            .unwrap_or(u128::MAX);
        f.regulator.take_scaled(exact, bits);
        let eligible = f.regulator.ceil_ns(exact);
        // `eligible ≥ exact`, so the deadline is at least the exact one.
        let deadline = eligible.saturating_add(f.deadline_ns);
        self.seq += 1;
        // The first slot boundary at or after the exact eligibility instant: never early, and
        // less than one granularity late.
        let slot_len = f.regulator.scale(granularity_ns);
        let k = u64::try_from(
            exact
                .saturating_sub(f.regulator.scale(epoch))
                .div_ceil(slot_len.max(1)),
        )
        .unwrap_or(u64::MAX);
        let head = Head {
            eligible,
            release: epoch.saturating_add(k.saturating_mul(granularity_ns)),
            deadline,
            seq: self.seq,
        };
        f.head = Some(head);
        #[cfg(test)]
        self.trace.push((slot, eligible, head.release));
        if !self.wheel.insert(slot, k) {
            #[cfg(test)]
            let fifo = self.fifo_order;
            #[cfg(not(test))]
            let fifo = false;
            // Capacity for one entry per flow was reserved in `add_flow`.
            self.ready.push(ready_key(head, slot, fifo));
        }
    }

    /// Queues a copy of `frame` on `flow`. `false` if dropped: stale handle, frame longer than
    /// the flow's maximum packet, queue full (the flow sends too fast), or no room in the
    /// reserved buffer pool.
    pub fn enqueue_flow(&mut self, now: Instant, flow: FlowHandle, frame: &[u8]) -> bool {
        self.advance(now);
        let Some(f) = self.flows.get_mut(flow) else {
            self.stats.rt_frames_dropped += 1;
            return false;
        };
        let accepted = frame.len() <= f.max_packet
            && f.queue.fits(frame.len())
            && self
                .pools
                .charge(TrafficClass::Reserved, charge(frame.len()));
        if !accepted {
            f.drop_frame(frame.len());
            self.stats.rt_frames_dropped += 1;
            return false;
        }
        // `fits` said yes, so the push succeeds.
        f.queue.push(frame, now);
        if f.head.is_none() {
            self.schedule_head(u32::try_from(flow.slot()).unwrap_or(u32::MAX));
        }
        true
    }

    /// Queues a copy of `frame` in the control FIFO; `false` if it is longer than the port's
    /// `max_frame` or the FIFO or pools are full (frame dropped, counted).
    pub fn enqueue_control(&mut self, now: Instant, frame: &[u8]) -> bool {
        self.advance(now);
        if frame.len() <= self.max_frame
            && push_charged(
                &mut self.control,
                &mut self.pools,
                TrafficClass::Control,
                frame,
                now,
            )
        {
            true
        } else {
            self.stats.control_frames_dropped += 1;
            false
        }
    }

    /// Queues a copy of `frame` in the non-real-time FIFO; `false` if it is longer than the
    /// port's `max_frame` or the FIFO or default pool is full (frame dropped, counted).
    pub fn enqueue_nrt(&mut self, now: Instant, frame: &[u8]) -> bool {
        self.advance(now);
        if frame.len() <= self.max_frame
            && push_charged(
                &mut self.nrt,
                &mut self.pools,
                TrafficClass::Default,
                frame,
                now,
            )
        {
            true
        } else {
            self.stats.nrt_frames_dropped += 1;
            false
        }
    }

    /// Books the line for a frame of `len` bytes that became due at `due`, and records how late
    /// it goes.
    fn on_send(&mut self, now: Instant, due: Instant, len: usize) {
        book_send(
            &mut self.pacer,
            self.paced,
            self.late_budget,
            &mut self.stats,
            (now, due, len),
        );
    }

    /// Sends the head control frame into `buf`: if `in_bucket`, only when the control bucket
    /// holds its wire bits (and takes them); otherwise regardless. Frames longer than `buf` are
    /// dropped and counted.
    fn send_control(&mut self, now: Instant, buf: &mut [u8], in_bucket: bool) -> Option<usize> {
        let (len, enqueued) = pop_control(
            &mut self.control,
            &mut self.control_bucket,
            &mut self.pools,
            &mut self.stats,
            (now, buf, in_bucket),
        )?;
        self.on_send(now, enqueued, len);
        Some(len)
    }

    /// Sends the released reserved frame with the earliest deadline into `buf`.
    fn send_reserved(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        while let Some(Reverse((_, _, slot))) = self.ready.pop() {
            let Some(f) = self.flows.slot_mut(slot as usize) else {
                continue;
            };
            let (Some(head), Some((len, _))) = (f.head.take(), f.queue.front()) else {
                continue;
            };
            let fits = len <= buf.len();
            f.queue.pop_into(buf);
            self.pools.release(TrafficClass::Reserved, charge(len));
            if fits {
                f.stats.frames_sent += 1;
                f.stats.bytes_sent += len as u64;
                f.stats.wire_bits_sent += wire_bits(len);
            } else {
                f.drop_frame(len);
            }
            self.schedule_head(slot);
            if !fits {
                self.stats.rt_frames_dropped += 1;
                continue;
            }
            self.stats.rt_frames_sent += 1;
            self.stats.rt_bytes_sent += len as u64;
            let finish = now + tx_time(len, self.line_rate_bps);
            if finish.as_nanos() > head.deadline {
                self.stats.deadline_misses += 1;
            }
            self.on_send(now, Instant::from_nanos(head.release), len);
            return Some(len);
        }
        None
    }

    /// The next frame to send at `now`, copied into `buf`; its length, or `None` if the line is
    /// busy or nothing may go. A frame longer than `buf` is dropped and counted.
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        self.advance(now);
        if self.paced && now < self.pacer.busy_until() {
            return None;
        }
        if let Some(len) = self.send_control(now, buf, true) {
            return Some(len);
        }
        if let Some(len) = self.send_reserved(now, buf) {
            return Some(len);
        }
        if let Some(len) = self.send_control(now, buf, false) {
            return Some(len);
        }
        while let Some((len, enqueued)) = self.nrt.front() {
            self.nrt.pop_into(buf);
            self.pools.release(TrafficClass::Default, charge(len));
            if len <= buf.len() {
                self.stats.nrt_frames_sent += 1;
                self.stats.nrt_bytes_sent += len as u64;
                self.on_send(now, enqueued, len);
                return Some(len);
            }
            self.stats.nrt_frames_dropped += 1;
        }
        None
    }

    /// The earliest instant at which [`WheelScheduler::poll_transmit`] may return a frame: the
    /// pacer's ready time for the earliest of the control head's enqueue time, the earliest
    /// released reserved frame's release time, the next release on the wheel and the
    /// non-real-time head's enqueue time; `None` if nothing is queued.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let released = self.ready.peek().and_then(|Reverse((_, _, slot))| {
            let head = self.flows.slot(*slot as usize)?.head?;
            Some(Instant::from_nanos(head.release))
        });
        let next_release = self
            .wheel
            .next_slot()
            .map(|k| Instant::from_nanos(self.boundary(k)));
        let due = [
            self.control.front().map(|(_, t)| t),
            released,
            next_release,
            self.nrt.front().map(|(_, t)| t),
        ]
        .into_iter()
        .flatten()
        .min()?;
        Some(if self.paced {
            self.pacer.ready_at(due)
        } else {
            due
        })
    }

    /// Test hook: serve released frames in eligibility order (the broken FIFO variant).
    #[cfg(test)]
    fn set_fifo_order(&mut self) {
        self.fifo_order = true;
    }
}

/// The EDF key of a released head (or, for the test-only FIFO variant, its eligibility order).
fn ready_key(head: Head, slot: u32, fifo: bool) -> ReadyKey {
    if fifo {
        Reverse((head.eligible, head.seq, slot))
    } else {
        Reverse((head.deadline, head.seq, slot))
    }
}

impl Scheduler for WheelScheduler {
    type Error = SchedError;

    fn medium(&self) -> Medium {
        self.medium
    }

    fn add_flow(&mut self, spec: FlowSpec) -> Result<FlowHandle, SchedError> {
        WheelScheduler::add_flow(self, spec)
    }

    fn remove_flow(&mut self, flow: FlowHandle) -> Option<ConnStats> {
        WheelScheduler::remove_flow(self, flow)
    }

    fn enqueue_flow(&mut self, now: Instant, flow: FlowHandle, frame: &[u8]) -> bool {
        WheelScheduler::enqueue_flow(self, now, flow, frame)
    }

    fn enqueue_nrt(&mut self, now: Instant, frame: &[u8]) -> bool {
        WheelScheduler::enqueue_nrt(self, now, frame)
    }

    fn enqueue_control(&mut self, now: Instant, frame: &[u8]) -> bool {
        WheelScheduler::enqueue_control(self, now, frame)
    }

    fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        WheelScheduler::poll_transmit(self, now, buf)
    }

    fn poll_timeout(&self) -> Option<Instant> {
        WheelScheduler::poll_timeout(self)
    }

    fn stats(&self) -> &SchedStats {
        WheelScheduler::stats(self)
    }

    fn flow_stats(&self, flow: FlowHandle) -> Option<ConnStats> {
        self.connection_stats(flow)
    }

    fn flows(&self) -> Vec<FlowHandle> {
        self.connections().collect()
    }
}
