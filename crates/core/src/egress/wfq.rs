//! Work-conserving weighted fair queueing for Controlled-Load flows and default traffic: QSR
//! §3.1's third timing wheel, "actually work-conserving and provides an approximation to a
//! Weighted Fair Queueing (WFQ) scheduler", on which "Controlled Load flows (CL flows) are mapped
//! ... with a rate r equal to the bucket rate specified in their TSpec" and default IP traffic
//! with "a nominal rate value corresponding to the base amount of bandwidth set aside for default
//! IP traffic", so that "the default IP traffic will always be able to access any idle
//! bandwidth".
//!
//! **Algorithm: WF²Q+** (Bennett & Zhang, "Hierarchical packet fair queueing algorithms",
//! IEEE/ACM ToN 1997). Each class *i* — every Controlled-Load flow, weight `w_i` = its token rate
//! `r_i` ([`super::FlowSpec::rate_bps`]), and the default class, weight the port's
//! [`super::SchedConfig::default_floor_bps`] (at least 1 bit/s) — keeps the virtual start `S_i`
//! and finish `F_i = S_i + L/w_i` of its head frame (`L` its wire bits). A frame reaching an
//! empty class gets `S_i = max(F_i, V)`; the next frame of a backlogged class `S_i = F_i` (the
//! previous finish). The system virtual time `V` advances by `L / W` for every frame this
//! discipline sends, `W = Σ w_i` over all classes, and before each choice is raised to the
//! smallest start of the backlogged classes (`V ← max(V, min S_i)`), so some class is always
//! eligible and the discipline never idles while it holds a frame. A class is *eligible* when
//! `S_i ≤ V`; the eligible class with the smallest finish goes (ties: Controlled Load before
//! default, then the lower slot).
//!
//! Why WF²Q+ rather than WFQ, SCFQ, SFQ or DRR: its per-flow latency `L_i/r_i + L_max/C` does
//! not grow with the number of flows (SCFQ's, SFQ's and DRR's do: each adds a term per other
//! flow, which an admission decision for one flow cannot keep fixed), it needs no fluid GPS
//! simulation (WFQ does), and its eligibility test keeps any class from running more than one
//! frame ahead of its fluid share, so the idle bandwidth goes to the backlogged classes in
//! proportion to their weights at every scale, not only on average. Normalising `V`'s step by
//! `W` (not by the line) never lets `V` run ahead of the fluid reference's virtual time, whose
//! slope is the service rate over the *backlogged* weights.
//!
//! **Default class.** The default FIFO and control frames beyond their bucket live in the
//! port's shared part ([`PortCore`]); in the default class's turn the control head goes before
//! the default head (`PortCore::send_default`), as control beyond its bucket goes before
//! default frames on every port. Their arrivals are noticed when the discipline next chooses:
//! `V` moves only when this discipline sends, and every send is preceded by a choice, so the
//! start tag is the one an arrival hook would have given.
//!
//! **Arithmetic.** Tags are `u128` in units of 10⁻¹⁸ virtual seconds (`L / w` in seconds ×
//! 10¹⁸): a finish is rounded *up* and `V`'s step *down*, each by less than one unit (10⁻¹⁸ s)
//! per frame, so rounding can only make a class slightly less eligible, never more. A default
//! class of weight 1 bit/s moves its tags by about 1.2 × 10²² units per largest frame: `u128`
//! holds 3 × 10³⁸, some 10¹⁶ such frames; all sums saturate.
//!
//! Storage: a `FlowSlab` of flows and two binary heaps (starts of the backlogged flows not yet
//! eligible, finishes of the eligible ones), each holding at most one entry per flow — only a
//! flow's head frame is tagged — with room reserved in `add`; nothing allocates per frame. A
//! frame costs two heap operations.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rtlan_wire::cost::wire_bits;

use super::config::SchedError;
use super::port_core::{FlowQueue, PortCore};
use super::sched::{FlowHandle, FlowSlab};
use crate::time::Instant;

/// Tag units per virtual second.
const TAG_SCALE: u128 = 1_000_000_000_000_000_000;

/// `bits / weight` in tag units, rounded up (a finish tag's step).
fn span_up(bits: u64, weight: u64) -> u128 {
    (u128::from(bits) * TAG_SCALE).div_ceil(u128::from(weight.max(1)))
}

/// `bits / weight` in tag units, rounded down (the virtual time's step).
fn span_down(bits: u64, weight: u64) -> u128 {
    u128::from(bits) * TAG_SCALE / u128::from(weight.max(1))
}

/// One Controlled-Load flow: its queue and counters, its weight and its head frame's tags.
#[derive(Debug)]
struct ClFlow {
    flow: FlowQueue,
    /// `w_i` = the flow's token rate, bit/s.
    weight: u64,
    /// Virtual start of the head frame (valid while `tagged`).
    start: u128,
    /// Virtual finish of the head frame while `tagged`; of the last frame sent otherwise.
    finish: u128,
    /// Whether the head frame is tagged and in one of the heaps.
    tagged: bool,
}

/// The default class's tags (its frames live in [`PortCore`]).
#[derive(Debug)]
struct DefaultClass {
    /// Weight: the port's default floor, at least 1 bit/s.
    weight: u64,
    /// Start of the head frame while backlogged.
    start: Option<u128>,
    /// Finish of the last frame sent.
    finish: u128,
}

/// WF²Q+ over the Controlled-Load flows and the default class of one port (see the module
/// docs). The QSR port ([`super::qsr::QsrDiscipline`]) serves it whenever its timing wheel has
/// nothing released.
#[derive(Debug)]
pub struct WfqDiscipline {
    flows: FlowSlab<ClFlow>,
    /// System virtual time `V`, tag units.
    v: u128,
    /// `Σ w_i` over the Controlled-Load flows.
    cl_weight: u64,
    default: DefaultClass,
    /// Tagged flows not yet eligible, by (start, slot).
    pending: BinaryHeap<Reverse<(u128, u32)>>,
    /// Eligible flows, by (finish, slot).
    eligible: BinaryHeap<Reverse<(u128, u32)>>,
    /// Number of tagged (backlogged) flows.
    backlogged: usize,
}

impl WfqDiscipline {
    /// No flows; the default class weighs `default_floor_bps` (at least 1 bit/s).
    pub(crate) fn new(default_floor_bps: u64) -> WfqDiscipline {
        WfqDiscipline {
            flows: FlowSlab::with_capacity(0),
            v: 0,
            cl_weight: 0,
            default: DefaultClass {
                weight: default_floor_bps.max(1),
                start: None,
                finish: 0,
            },
            pending: BinaryHeap::new(),
            eligible: BinaryHeap::new(),
            backlogged: 0,
        }
    }

    /// `W = Σ w_i`, the default class included.
    fn total_weight(&self) -> u64 {
        self.cl_weight.saturating_add(self.default.weight)
    }

    /// Adds a Controlled-Load flow of weight `flow.rate_bps`.
    pub(crate) fn add(
        &mut self,
        flow: FlowQueue,
        core: &PortCore,
    ) -> Result<FlowHandle, SchedError> {
        let weight = flow.rate_bps;
        let handle = self
            .flows
            .insert(ClFlow {
                flow,
                weight,
                start: 0,
                finish: 0,
                tagged: false,
            })
            .ok_or(core.too_many())?;
        self.cl_weight = self.cl_weight.saturating_add(weight);
        let n = self.flows.len();
        self.pending.reserve(n.saturating_sub(self.pending.len()));
        self.eligible.reserve(n.saturating_sub(self.eligible.len()));
        Ok(handle)
    }

    /// Removes `flow`; its queue, or `None` if stale.
    pub(crate) fn remove(&mut self, flow: FlowHandle) -> Option<FlowQueue> {
        let f = self.flows.remove(flow)?;
        self.cl_weight -= f.weight;
        if f.tagged {
            let slot = u32::try_from(flow.slot()).unwrap_or(u32::MAX);
            self.pending.retain(|Reverse((_, s))| *s != slot);
            self.eligible.retain(|Reverse((_, s))| *s != slot);
            self.backlogged -= 1;
        }
        Some(f.flow)
    }

    /// Tags the head of `flow` if it just arrived at an empty queue: `S = max(F, V)`.
    pub(crate) fn on_enqueued(&mut self, flow: FlowHandle) {
        let v = self.v;
        let Some(f) = self.flows.get_mut(flow) else {
            return;
        };
        if f.tagged {
            return;
        }
        let Some((len, _)) = f.flow.queue.front() else {
            return;
        };
        f.start = f.finish.max(v);
        f.finish = f.start.saturating_add(span_up(wire_bits(len), f.weight));
        f.tagged = true;
        self.backlogged += 1;
        // Slot indexes are u32 (FlowHandle), so this fits.
        let slot = u32::try_from(flow.slot()).unwrap_or(u32::MAX);
        self.pending.push(Reverse((f.start, slot)));
    }

    /// Sends the frame WF²Q+ picks among the Controlled-Load flows and the default class (see
    /// the module docs) into `buf`; `None` only when all of them are empty.
    pub(crate) fn send(
        &mut self,
        now: Instant,
        buf: &mut [u8],
        core: &mut PortCore,
    ) -> Option<usize> {
        loop {
            // The default class's backlog, noticed now (see the module docs).
            let default_len = core.default_head_len();
            match (self.default.start, default_len) {
                (None, Some(_)) => self.default.start = Some(self.default.finish.max(self.v)),
                (Some(start), None) => {
                    // Emptied by control frames sent within their bucket: nothing was charged.
                    self.default.finish = start;
                    self.default.start = None;
                }
                _ => {}
            }
            if self.eligible.is_empty() {
                // V ← max(V, min S): some class is always eligible.
                let min_start = [
                    self.pending.peek().map(|Reverse((s, _))| *s),
                    self.default.start,
                ]
                .into_iter()
                .flatten()
                .min()?;
                self.v = self.v.max(min_start);
            }
            while let Some(&Reverse((start, slot))) = self.pending.peek() {
                if start > self.v {
                    break;
                }
                self.pending.pop();
                if let Some(f) = self.flows.slot(slot as usize) {
                    self.eligible.push(Reverse((f.finish, slot)));
                }
            }
            let cl = self.eligible.peek().map(|&Reverse(key)| key);
            let default_finish = match (self.default.start, default_len) {
                (Some(start), Some(len)) if start <= self.v => {
                    Some(start.saturating_add(span_up(wire_bits(len), self.default.weight)))
                }
                _ => None,
            };
            let serve_default = match (cl, default_finish) {
                (Some((cl_finish, _)), Some(d)) => d < cl_finish,
                (None, Some(_)) => true,
                _ => false,
            };
            if serve_default {
                let start = self.default.start.unwrap_or(self.v);
                let sent = core.send_default(now, buf);
                // Charge what went out (the head may have been dropped as too long for `buf`
                // and the next one sent).
                if let Some(len) = sent {
                    let bits = wire_bits(len);
                    let finish = start.saturating_add(span_up(bits, self.default.weight));
                    self.default.finish = finish;
                    self.default.start = Some(finish);
                    self.v = self.v.saturating_add(span_down(bits, self.total_weight()));
                    return Some(len);
                }
                continue;
            }
            let (_, slot) = cl?;
            self.eligible.pop();
            let Some(f) = self.flows.slot_mut(slot as usize) else {
                continue;
            };
            let Some((_, arrival)) = f.flow.queue.front() else {
                f.tagged = false;
                self.backlogged -= 1;
                continue;
            };
            let Some((len, fits)) = f.flow.take_head(buf, core) else {
                continue;
            };
            if let Some((next, _)) = f.flow.queue.front() {
                f.start = f.finish;
                f.finish = f.start.saturating_add(span_up(wire_bits(next), f.weight));
                self.pending.push(Reverse((f.start, slot)));
            } else {
                f.tagged = false;
                self.backlogged -= 1;
            }
            let total = self.total_weight();
            self.v = self.v.saturating_add(span_down(wire_bits(len), total));
            if fits {
                core.book_send(now, arrival, len);
                return Some(len);
            }
        }
    }

    /// `Instant::ZERO` (due at once: the discipline is work-conserving, so a queued
    /// Controlled-Load frame may go as soon as the line is free) while a flow is backlogged.
    pub(crate) fn due(&self) -> Option<Instant> {
        (self.backlogged > 0).then_some(Instant::ZERO)
    }

    /// The flow `flow` names, if it is still there.
    pub(crate) fn flow(&self, flow: FlowHandle) -> Option<&FlowQueue> {
        self.flows.get(flow).map(|f| &f.flow)
    }

    /// The flow `flow` names, if it is still there.
    pub(crate) fn flow_mut(&mut self, flow: FlowHandle) -> Option<&mut FlowQueue> {
        self.flows.get_mut(flow).map(|f| &mut f.flow)
    }
}
