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
//! release, even on an idle line. On a [`crate::node::Medium::FullDuplex`] port the pacer paces all output
//! at line rate. This module is the real-time discipline ([`WheelDiscipline`]); buffer pools,
//! the control and non-real-time FIFOs, the pacer and the counters are the port's shared part
//! ([`super::port_core`], the same as the cyclic scheduler's), and [`WheelScheduler`] is the two
//! together.

mod timing;

#[cfg(test)]
mod tests;

use std::cmp::Reverse;

use rtlan_calculus::servers;
use std::collections::BinaryHeap;
use std::time::Duration;

use rtlan_wire::cost::{tx_time, wire_bits};

use super::bucket::TokenBucket;
use super::port_core::{Discipline, FlowQueue, Port, PortCore};
use super::sched::{FlowHandle, FlowSlab, SchedStats};
use super::{SchedConfig, SchedError, MAX_GRANULARITY, MIN_GRANULARITY};
use crate::time::Instant;
use timing::TimingWheel;

/// The longest frame a queue can hold (its length is stored as `u16`).
const MAX_PACKET: usize = u16::MAX as usize;

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

/// One reserved flow: its queue and counters ([`FlowQueue`]) and its regulator and deadline.
#[derive(Debug)]
struct Flow {
    flow: FlowQueue,
    regulator: TokenBucket,
    /// Relative deadline `d_i` in ns.
    deadline_ns: u64,
    /// The head frame's schedule, while it is on the wheel or released.
    head: Option<Head>,
}

/// The timing-wheel scheduler of one output port: the shared port part and the wheel
/// discipline (see the module docs).
pub type WheelScheduler = Port<WheelDiscipline>;

/// The real-time discipline of [`WheelScheduler`]: regulators, the timing wheel and the EDF set
/// (see the module docs).
#[derive(Debug)]
pub struct WheelDiscipline {
    granularity_ns: u64,
    /// Slot 0's boundary (ns): the instant the scheduler was built.
    epoch: u64,
    flows: FlowSlab<Flow>,
    wheel: TimingWheel,
    /// Released head frames, by [`ReadyKey`]; capacity ≥ number of flows.
    pub(super) ready: BinaryHeap<ReadyKey>,
    seq: u64,
    /// Test-only broken variant: serve released frames in order of eligibility (FIFO) instead
    /// of deadline, to show that the deadline test catches it.
    #[cfg(test)]
    fifo_order: bool,
    /// Test-only record of every head scheduled: (flow slot, eligibility ns, release ns).
    #[cfg(test)]
    pub(super) trace: Vec<(u32, u64, u64)>,
}

impl Port<WheelDiscipline> {
    /// A scheduler with no flows whose slot 0 starts at `now`.
    pub fn new(cfg: SchedConfig, now: Instant) -> Result<WheelScheduler, SchedError> {
        let (core, rt) = WheelDiscipline::build(&cfg, now)?;
        Ok(Port { core, rt })
    }

    /// The slot length of the wheel.
    pub fn granularity(&self) -> Duration {
        self.rt.unit()
    }

    /// The relative deadline `d_i` of `flow` ([`wheel_deadline_ns`]; `None` for a stale handle).
    pub fn flow_deadline(&self, flow: FlowHandle) -> Option<Duration> {
        self.rt.deadline_ns(flow).map(Duration::from_nanos)
    }

    /// Test hook: serve released frames in eligibility order (the broken FIFO variant).
    #[cfg(test)]
    fn set_fifo_order(&mut self) {
        self.rt.fifo_order = true;
    }
}

impl WheelDiscipline {
    /// The shared port part and an empty wheel built from `cfg` (after checking the fields the
    /// wheel reads), slot 0 starting at `now`: for [`WheelScheduler::new`] and the QSR port,
    /// which runs the same wheel for its Guaranteed flows.
    pub(crate) fn build(
        cfg: &SchedConfig,
        now: Instant,
    ) -> Result<(PortCore, WheelDiscipline), SchedError> {
        PortCore::check_line_rate(cfg)?;
        if !(MIN_GRANULARITY..=MAX_GRANULARITY).contains(&cfg.granularity) {
            return Err(SchedError::GranularityOutOfRange(cfg.granularity));
        }
        if !cfg.wheel_slots.is_power_of_two() || !(64..=1 << 20).contains(&cfg.wheel_slots) {
            return Err(SchedError::BadWheelSlots(cfg.wheel_slots));
        }
        if !(60..=MAX_PACKET).contains(&cfg.max_frame) {
            return Err(SchedError::BadMaxFrame(cfg.max_frame));
        }
        // Without a cycle, the default non-real-time FIFO holds 2 × line rate × 10 ms (the
        // cyclic scheduler's default cycle), so both schedulers size it alike.
        let core = PortCore::new(cfg, cfg.max_frame, super::DEFAULT_CYCLE)?;
        // MAX_GRANULARITY is 10 ms, so the nanoseconds fit a u64.
        let granularity_ns = u64::try_from(cfg.granularity.as_nanos()).unwrap_or(u64::MAX);
        Ok((
            core,
            WheelDiscipline {
                granularity_ns,
                epoch: now.as_nanos(),
                flows: FlowSlab::with_capacity(0),
                wheel: TimingWheel::new(cfg.wheel_slots),
                ready: BinaryHeap::new(),
                seq: 0,
                #[cfg(test)]
                fifo_order: false,
                #[cfg(test)]
                trace: Vec::new(),
            },
        ))
    }

    /// The relative deadline `d_i` of `flow` in ns (`None` for a stale handle).
    pub(crate) fn deadline_ns(&self, flow: FlowHandle) -> Option<u64> {
        self.flows.get(flow).map(|f| f.deadline_ns)
    }

    /// The boundary of slot `k` in ns.
    fn boundary(&self, k: u64) -> u64 {
        self.epoch
            .saturating_add(k.saturating_mul(self.granularity_ns))
    }

    /// Whether released frames are served in eligibility order (test-only broken variant).
    #[cfg(test)]
    fn fifo(&self) -> bool {
        self.fifo_order
    }

    /// Released frames are served earliest deadline first.
    #[cfg(not(test))]
    fn fifo(&self) -> bool {
        false
    }

    /// Schedules the head frame of the flow in `slot` (if any) through its regulator: computes
    /// its eligibility, release and deadline, and puts it on the wheel or, if its release slot
    /// has passed, straight into the EDF set.
    fn schedule_head(&mut self, slot: u32) {
        let (epoch, granularity_ns, fifo) = (self.epoch, self.granularity_ns, self.fifo());
        let Some(f) = self.flows.slot_mut(slot as usize) else {
            return;
        };
        let Some((len, arrival)) = f.flow.queue.front() else {
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
            // Capacity for one entry per flow was reserved in `add`.
            self.ready.push(ready_key(head, slot, fifo));
        }
    }
}

impl Discipline for WheelDiscipline {
    /// Releases every head frame whose slot boundary is at or before `now`.
    fn advance(&mut self, now: Instant, _stats: &mut SchedStats) {
        let to = now.as_nanos().saturating_sub(self.epoch) / self.granularity_ns;
        let fifo = self.fifo();
        let Self {
            wheel,
            flows,
            ready,
            ..
        } = self;
        wheel.advance(to, |id| {
            if let Some(head) = flows.slot(id as usize).and_then(|f| f.head) {
                ready.push(ready_key(head, id, fifo));
            }
        });
    }

    /// Computes the flow's relative deadline and allocates its room on the wheel.
    fn add(&mut self, flow: FlowQueue, core: &PortCore) -> Result<FlowHandle, SchedError> {
        let max_bits = wire_bits(flow.max_packet);
        let deadline_ns = wheel_deadline_ns(
            max_bits,
            flow.rate_bps,
            wire_bits(core.max_frame),
            core.control_burst_bits,
            core.control_rate_bps,
            core.line_rate_bps,
            self.granularity_ns,
        )
        .ok_or(core.oversubscribed(flow.rate_bps))?;
        let regulator = TokenBucket::new(flow.rate_bps, max_bits);
        let handle = self
            .flows
            .insert(Flow {
                flow,
                regulator,
                deadline_ns,
                head: None,
            })
            .ok_or(core.too_many())?;
        let n = self.flows.len();
        // Slot indexes are u32 (FlowHandle), so this fits.
        self.wheel
            .ensure(u32::try_from(handle.slot()).unwrap_or(u32::MAX), n);
        self.ready.reserve(n.saturating_sub(self.ready.len()));
        Ok(handle)
    }

    fn remove(&mut self, flow: FlowHandle) -> Option<FlowQueue> {
        let f = self.flows.remove(flow)?;
        let slot = u32::try_from(flow.slot()).unwrap_or(u32::MAX);
        if f.head.is_some() {
            self.wheel.remove(slot);
            self.ready.retain(|Reverse((_, _, s))| *s != slot);
        }
        Some(f.flow)
    }

    fn on_enqueued(&mut self, flow: FlowHandle) {
        if self.flows.get(flow).is_some_and(|f| f.head.is_none()) {
            self.schedule_head(u32::try_from(flow.slot()).unwrap_or(u32::MAX));
        }
    }

    /// Sends the released reserved frame with the earliest deadline into `buf`.
    fn send(&mut self, now: Instant, buf: &mut [u8], core: &mut PortCore) -> Option<usize> {
        while let Some(Reverse((_, _, slot))) = self.ready.pop() {
            let Some(f) = self.flows.slot_mut(slot as usize) else {
                continue;
            };
            let Some(head) = f.head.take() else {
                continue;
            };
            let Some((len, fits)) = f.flow.take_head(buf, core) else {
                continue;
            };
            self.schedule_head(slot);
            if !fits {
                continue;
            }
            let finish = now + tx_time(len, core.line_rate_bps);
            if finish.as_nanos() > head.deadline {
                core.stats.deadline_misses += 1;
            }
            core.book_send(now, Instant::from_nanos(head.release), len);
            return Some(len);
        }
        None
    }

    /// The earliest released frame's release time, or the next release on the wheel.
    fn due(&self) -> Option<Instant> {
        let released = self.ready.peek().and_then(|Reverse((_, _, slot))| {
            let head = self.flows.slot(*slot as usize)?.head?;
            Some(Instant::from_nanos(head.release))
        });
        let next_release = self
            .wheel
            .next_slot()
            .map(|k| Instant::from_nanos(self.boundary(k)));
        released.into_iter().chain(next_release).min()
    }

    fn wake(&self) -> Option<Instant> {
        None
    }

    fn flow(&self, flow: FlowHandle) -> Option<&FlowQueue> {
        self.flows.get(flow).map(|f| &f.flow)
    }

    fn flow_mut(&mut self, flow: FlowHandle) -> Option<&mut FlowQueue> {
        self.flows.get_mut(flow).map(|f| &mut f.flow)
    }

    fn flows(&self) -> impl Iterator<Item = (FlowHandle, &FlowQueue)> {
        self.flows.iter().map(|(handle, f)| (handle, &f.flow))
    }

    fn len(&self) -> usize {
        self.flows.len()
    }

    fn unit(&self) -> Duration {
        Duration::from_nanos(self.granularity_ns)
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
