//! The service curve each rtlan real-time scheduler guarantees a reserved flow, and the per-hop
//! arithmetic delay-bounded signalling does with it (burst growth, backlog, queue size,
//! end-to-end bound).
//!
//! Every scheduler is summarised as a rate-latency server `β_{r,θ}(t) = r·(t − θ)+` for the flow,
//! at the flow's own reserved rate `r` (Le Boudec & Thiran §1.4; the Guaranteed-Service view of
//! RFC 2212 and QSR §3.1). `θ` must not depend on which other flows are admitted — only on the
//! port, the scheduler's parameters and admission caps — so admitting a flow never breaks a bound
//! already given. The derivations, with every term named, are in `docs/calculus.md`
//! ("Scheduler service curves"); in short:
//!
//! **Cyclic round robin** (EtheReal §3.3, as `rtlan_core::egress::CyclicScheduler` implements it:
//! quota `Q_i = r_i·T` per cycle `T` in wire bits; at each boundary a backlogged connection's
//! credit becomes `min(leftover, L_i) + Q_i`, an idle one starts from `Q_i`; one frame per
//! round-robin visit, control first, paced at `C`). A connection therefore sends at most its
//! *cycle work* `w_j = Q_j + L_j` between two boundaries ([`cyclic_cycle_work_bits`]), and
//! admission books cycle work: `Σ w_j ≤ W_max = U·C·T` ([`cyclic_work_budget_bits`]). Then
//!
//! ```text
//!   θ_cyc = T + Δ + L_i/r_i + λ + d_link,
//!   Δ = (W_max + L_max + σ_c) / (C − ρ_c)        (drain time after a cycle boundary)
//! ```
//!
//! valid when `Δ + λ ≤ T` and `w_i ≤ W_max` (checked here for the flow asked about; `Σ w_j ≤
//! W_max` is admission's check, assumed of the others). A quota below the flow's frame is allowed:
//! the connection then gathers credit over several cycles, and `L_i/r_i` covers that wait (a
//! backlogged connection's credit before a boundary is below its head frame, so the cap on the
//! carry never cuts a quota). At `U` = 60 %, `T` = 10 ms, `L_max` = 1518 bytes and a control
//! bucket of a few hundred bytes, `Δ + λ ≤ T` holds at 100 Mbit/s, 1 Gbit/s and 10 Gbit/s.
//!
//! **Rate-controlled EDF on a timing wheel** (QSR §3.1's Guaranteed Service: a regulator of rate
//! `R_i` and bucket `L_i` per flow, eligible frames served earliest deadline first with deadline
//! eligibility time + `d_i`, control first):
//!
//! ```text
//!   d_i = L_i/R_i + D0,   D0 = (L_max + σ_c) / (C − ρ_c)
//!   θ_wheel = d_i + g + λ + d_link
//! ```
//!
//! every deadline is met whenever `Σ R_j + ρ_c ≤ C` (non-preemptive EDF demand criterion),
//! `g` being the wheel's slot width. [`wheel_deadline_ns`] is `d_i + g`, the relative deadline the
//! wheel itself uses, so the scheduler and the calculus share one formula.
//!
//! The regulator is a packetized greedy shaper whose bucket holds a largest frame, so it offers
//! the service curve `λ_{R_i}` (Le Boudec & Thiran §1.7) and EDF adds the pure delay `d_i`.
//!
//! **WF²Q+ behind the wheel** (QSR §3.1's Controlled Load: the QSR port serves Controlled-Load
//! flows, weight = token rate `r_i`, and default traffic, weight = the default floor, by WF²Q+
//! whenever the wheel has nothing released and control has no tokens):
//!
//! ```text
//!   C_w = C − ρ_c − R_GS                               (what control and the wheel leave)
//!   T_w = (σ_c + Σ_GS (L_j + R_j·g)) / C_w             (their bursts, drained at C_w)
//!   θ_wfq = T_w + L_i/r_i + L_max/C_w + λ + d_link
//! ```
//!
//! with `R_GS = Σ R_j` and `Σ_GS L_j` over the port's Guaranteed flows, valid when the fair
//! queue's weights fit, `Σ r_CL + floor ≤ C_w` (admission's check). The fair-queued classes as a
//! whole see a rate-latency server `β_{C_w, T_w}`: in a busy period of the line, control within
//! its bucket takes at most `σ_c + ρ_c·t` and the wheel releases at most `Σ (L_j + R_j (t + g))`
//! (each regulator's `L_j + R_j·u` over eligibility windows `g` longer). WF²Q+ over a server of
//! rate `C_w` is a latency-rate server of latency `L_i/r_i + L_max/C_w` for a flow of weight
//! `r_i` when the weights sum to at most `C_w` (Bennett & Zhang 1997; Stiliadis & Varma's LR
//! servers), and latencies of the two stages add. Unlike the wheel's, this `θ` depends on the
//! Guaranteed flows admitted at the port: the router should pass the Guaranteed share it lets
//! the port book at most (`R_GS`, `Σ L_j` as caps), so that admitting a Guaranteed flow never
//! breaks a Controlled-Load bound already given. [`wfq_latency_ns`] is `θ_wfq` without `λ` and
//! `d_link`.
//!
//! **Lateness.** `λ` is the hop's lateness budget: the most a frame may lose at one hop to late
//! wake-ups of the data plane's thread, its receive and its transmit together. The switch checks
//! every wake-up and send against `λ/2` (a frame meets at most one late receive and one late send)
//! and counts anything later as a guarantee violation, so each hop adds `λ` once (Löser/Härtig §3
//! likewise put the host's scheduling delays into the bound). The transmit half holds while `λ/2`
//! is at most the pacer's catch-up (200 µs): the pacer's booking is then unchanged by a late
//! wake-up and the wire lags it by at most `λ/2`.
//!
//! Reference: Le Boudec & Thiran, *Network Calculus* (LNCS 2050), §1.4 (rate-latency servers),
//! §1.7 (packetizers); the derivations in `docs/calculus.md`.
//!
//! Units: wire bits (a frame of `len` bytes costs [`rtlan_wire::cost::wire_bits`]) and integer
//! nanoseconds at the API, exact [`Q`] (seconds, bits) inside. Everything handed out as an integer
//! is rounded up, so it is still a bound. No input panics: bad or overflowing inputs are a
//! [`ServerError`].

use rtlan_wire::cost::{wire_bits, wire_bytes};

use crate::curve::{CurveError, RateLatency};
use crate::rational::{ArithError, Q};

const NANOS_PER_SEC: i128 = 1_000_000_000;

/// Errors of the scheduler curves and the per-hop arithmetic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ServerError {
    /// Exact arithmetic overflowed (or a result does not fit a `u64`).
    #[error(transparent)]
    Arith(#[from] ArithError),
    /// A curve could not be built.
    #[error(transparent)]
    Curve(#[from] CurveError),
    /// The port's line rate is zero.
    #[error("line rate must be positive")]
    ZeroLineRate,
    /// The flow's reserved rate is zero.
    #[error("reserved rate must be positive")]
    ZeroRate,
    /// The flow's largest frame is zero.
    #[error("maximum frame must be positive")]
    ZeroFrame,
    /// A SETUP's burst is smaller than its maximum packet.
    #[error("burst of {burst} bytes is below the maximum packet of {packet} bytes")]
    BurstBelowPacket {
        /// Burst, bytes.
        burst: u32,
        /// Maximum packet, bytes.
        packet: u16,
    },
    /// The cycle length is zero.
    #[error("cycle must be positive")]
    ZeroCycle,
    /// The real-time share is outside 1 ..= 100 %.
    #[error("real-time share of {0} % is outside 1 ..= 100")]
    BadShare(u8),
    /// Control traffic may take the whole line: nothing is left for real-time service.
    #[error("control rate {control_bps} bit/s leaves nothing of the {line_bps} bit/s line")]
    ControlTooFast {
        /// ρ_c, bit/s.
        control_bps: u64,
        /// C, bit/s.
        line_bps: u64,
    },
    /// The flow alone exceeds what the scheduler may give real-time flows.
    #[error("reserved rate {rate_bps} bit/s exceeds the {limit_bps} bit/s real-time service")]
    RateAboveLimit {
        /// The flow's rate, bit/s.
        rate_bps: u64,
        /// The line minus control, `C − ρ_c` (wheel scheduler).
        limit_bps: u64,
    },
    /// The flow's cycle work `⌈r·T⌉ + L_i` alone exceeds the port's work budget `U·C·T` (cyclic
    /// scheduler).
    #[error("cycle work of {work_bits} bits exceeds the {budget_bits}-bit budget of the cycle")]
    WorkAboveBudget {
        /// `w_i = ⌈r·T⌉ + L_i`, wire bits.
        work_bits: u64,
        /// `W_max = ⌊U·C·T⌋`, wire bits.
        budget_bits: u64,
    },
    /// The work a cycle boundary can release does not drain within the cycle (cyclic
    /// scheduler): `Δ + λ > T`. Lower the real-time share or the control budget, or lengthen the
    /// cycle.
    #[error(
        "drain time {drain_ns} ns + lateness {lateness_ns} ns exceeds the {cycle_ns} ns cycle"
    )]
    CycleTooShort {
        /// Δ, ns (rounded up).
        drain_ns: u64,
        /// λ, ns.
        lateness_ns: u64,
        /// T, ns.
        cycle_ns: u64,
    },
}

/// A flow's T-SPEC as a server sees it, wire bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HopTspec {
    /// Reserved (token) rate `r`, wire bit/s.
    pub rate_bps: u64,
    /// Bucket depth `b`, wire bits.
    pub burst_bits: u64,
    /// Largest frame `L_i`, wire bits.
    pub max_frame_bits: u64,
}

/// What every port contributes regardless of scheduler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortParams {
    /// `C`: line rate, bit/s.
    pub line_rate_bps: u64,
    /// `L_max`: largest frame the port may send (any class), wire bits.
    pub max_frame_bits: u64,
    /// `σ_c`: depth of the token bucket bounding control frames (served before real-time), wire
    /// bits.
    pub control_burst_bits: u64,
    /// `ρ_c`: rate of that bucket, wire bit/s.
    pub control_rate_bps: u64,
    /// `λ`: the hop's lateness budget, ns — the most a frame may lose to late wake-ups at this hop,
    /// receive and transmit together (each is checked against `λ/2`).
    pub lateness_ns: u64,
    /// Propagation delay of the output link, ns (0 in the lab).
    pub link_delay_ns: u64,
}

/// A port run by the cyclic round-robin scheduler (EtheReal §3.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CyclicParams {
    /// The port.
    pub port: PortParams,
    /// `T`: cycle length, ns.
    pub cycle_ns: u64,
    /// `U`: admission cap, percent of `C` (e.g. 60): the cycle work `Σ (Q_j + L_j)` of the
    /// admitted flows is at most `U·C·T` ([`cyclic_work_budget_bits`]).
    pub rt_share_percent: u8,
}

/// A port run by rate-controlled EDF on a timing wheel (QSR §3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WheelParams {
    /// The port.
    pub port: PortParams,
    /// `g`: width of a wheel slot, ns (eligibility and deadlines are quantised to it).
    pub granularity_ns: u64,
}

/// A QSR port's weighted fair queue (WF²Q+) behind its timing wheel: the Controlled-Load
/// flows' server (QSR §3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WfqParams {
    /// The port.
    pub port: PortParams,
    /// `g`: width of the wheel's slots, ns (Guaranteed releases come in slot-sized clumps).
    pub granularity_ns: u64,
    /// `R_GS`: the Guaranteed rates the port books (or the most it will book), wire bit/s.
    pub gs_rate_bps: u64,
    /// `Σ_GS L_j`: the Guaranteed flows' largest frames summed (or the most admission allows),
    /// wire bits.
    pub gs_frames_bits: u64,
}

/// A real-time scheduler on one output port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Server {
    /// EtheReal's cyclic round robin.
    Cyclic(CyclicParams),
    /// Rate-controlled EDF on a timing wheel.
    Wheel(WheelParams),
    /// WF²Q+ behind a QSR port's timing wheel (Controlled Load).
    Wfq(WfqParams),
}

impl Server {
    /// The port's common parameters.
    pub fn port(&self) -> &PortParams {
        match self {
            Server::Cyclic(p) => &p.port,
            Server::Wheel(p) => &p.port,
            Server::Wfq(p) => &p.port,
        }
    }

    /// Exact per-hop latency `θ` (seconds) of the rate-latency curve this port guarantees `flow`,
    /// lateness (`λ`, once) and link delay included (see the module docs).
    pub fn latency(&self, flow: &HopTspec) -> Result<Q, ServerError> {
        let core = match self {
            Server::Cyclic(p) => cyclic_core(p, flow)?,
            Server::Wheel(p) => wheel_relative_deadline(p, flow)?,
            Server::Wfq(p) => wfq_core(p, flow)?,
        };
        let port = self.port();
        Ok(core
            .add(ns(port.lateness_ns)?)?
            .add(ns(port.link_delay_ns)?)?)
    }

    /// Per-hop latency θ (ns, rounded up) of the rate-latency service curve β = r·(t−θ)+ this
    /// port guarantees `flow`, including lateness and link delay. Independent of the other flows
    /// admitted (it uses the admission cap `Σ w_j ≤ U·C·T` for the cyclic scheduler and
    /// `Σ R_j + ρ_c ≤ C` for the wheel); for WF²Q+, of the other Controlled-Load flows, given
    /// the Guaranteed share in [`WfqParams`].
    pub fn latency_ns(&self, flow: &HopTspec) -> Result<u64, ServerError> {
        ceil_ns(self.latency(flow)?)
    }

    /// The exact service curve `β_{r,θ}` at the flow's own rate.
    pub fn service_curve(&self, flow: &HopTspec) -> Result<RateLatency, ServerError> {
        Ok(RateLatency::new(int(flow.rate_bps)?, self.latency(flow)?)?)
    }
}

/// The wheel's relative deadline `d_i + g` in ns, rounded up: what the timing wheel adds to a
/// frame's eligibility time (`d_i = L_i/R_i + (L_max + σ_c)/(C − ρ_c)`), without lateness or link
/// delay. The scheduler and [`Server::service_curve`] use this one formula.
pub fn wheel_deadline_ns(params: &WheelParams, flow: &HopTspec) -> Result<u64, ServerError> {
    ceil_ns(wheel_relative_deadline(params, flow)?)
}

/// The latency `θ_wfq` of a Controlled-Load flow in a QSR port's WF²Q+ in ns, rounded up,
/// without lateness or link delay: `T_w + L_i/r_i + L_max/C_w`, `C_w = C − ρ_c − R_GS`,
/// `T_w = (σ_c + Σ_GS (L_j + R_j·g))/C_w` (see the module docs). Its RFC 2212-style error terms
/// for a flow reserved at `r`: `C = L_i` (bits, the rate-dependent term) and
/// `D = T_w + L_max/C_w` ([`wfq_fixed_delay_ns`]).
pub fn wfq_latency_ns(params: &WfqParams, flow: &HopTspec) -> Result<u64, ServerError> {
    ceil_ns(wfq_core(params, flow)?)
}

/// The rate-independent part `D = T_w + L_max/C_w` of [`wfq_latency_ns`], ns rounded up (the
/// `D` term a QSR router exports in ADSPEC for Controlled-Load paths; `C` is the flow's largest
/// frame).
pub fn wfq_fixed_delay_ns(params: &WfqParams) -> Result<u64, ServerError> {
    ceil_ns(wfq_fixed(params)?.1)
}

/// The cyclic scheduler's drain time `Δ = (W_max + L_max + σ_c)/(C − ρ_c)` in ns, rounded up:
/// how long after a cycle boundary (processed on time) every real-time flow has spent its credit.
pub fn cyclic_drain_ns(params: &CyclicParams) -> Result<u64, ServerError> {
    let (_, drain) = cyclic_terms(params, 0)?;
    ceil_ns(drain)
}

/// A flow's cycle work `w = ⌈r·T⌉ + L` in wire bits: the most the cyclic scheduler lets it send
/// between two cycle boundaries (its quota plus the carry, capped at one largest frame). Admission
/// books it against [`cyclic_work_budget_bits`].
pub fn cyclic_cycle_work_bits(flow: &HopTspec, cycle_ns: u64) -> Result<u64, ServerError> {
    flow.rate_and_frame()?;
    if cycle_ns == 0 {
        return Err(ServerError::ZeroCycle);
    }
    plus_rate_time(flow.max_frame_bits, flow.rate_bps, cycle_ns)
}

/// The cycle work budget `W_max = ⌊U·C·T⌋` in wire bits: the most cycle work
/// ([`cyclic_cycle_work_bits`]) the port may admit in total. A connection whose work would take
/// `Σ w_j` above it is refused (BANDWIDTH); [`cyclic_drain_ns`] and the cyclic `θ` assume it.
pub fn cyclic_work_budget_bits(params: &CyclicParams) -> Result<u64, ServerError> {
    let budget = cyclic_budget(params)?;
    u64::try_from(budget.floor()).map_err(|_| ServerError::Arith(ArithError::Overflow))
}

/// Burst (wire bits) of the flow at the input of a hop after upstream latencies summing to
/// `upstream_ns`: `b + r·Σθ`, rounded up (the output curve of `γ_{r,b}` through `β_{r,Σθ}`).
pub fn burst_at_hop(flow: &HopTspec, upstream_ns: u64) -> Result<u64, ServerError> {
    plus_rate_time(flow.burst_bits, flow.rate_bps, upstream_ns)
}

/// Backlog bound at a hop, wire bits, rounded up: `burst_here + r·θ_here` (the vertical
/// deviation between `γ_{r,burst_here}` and `β_{r,θ_here}`).
pub fn backlog_bits(
    flow: &HopTspec,
    burst_here_bits: u64,
    latency_ns: u64,
) -> Result<u64, ServerError> {
    plus_rate_time(burst_here_bits, flow.rate_bps, latency_ns)
}

/// The queue bound in charged bytes a hop allocates for a backlog bound of `backlog_bits` wire
/// bits: `⌈backlog_bits / 8⌉`.
///
/// Why this suffices: a queue charges a frame of `len` bytes `max(len, 60)` bytes, while its wire
/// cost is `(max(len, 60) + 24)·8` bits, so the charged bytes of any set of frames are below their
/// wire bits / 8. A frame leaves the queue when its transmission starts, while the service curve
/// counts it served only when its last bit is out, so the frames in the queue at any instant are
/// part of the backlog the bound covers: no extra frame is needed.
pub fn queue_bytes(backlog_bits: u64) -> usize {
    usize::try_from(backlog_bits.div_ceil(8)).unwrap_or(usize::MAX)
}

/// End-to-end bound `b/r + Σθ` (ns, rounded up) for the concatenation of rate-latency servers of
/// rate `r` with latencies summing to `sum_latency_ns` (pay bursts only once).
pub fn end_to_end_ns(flow: &HopTspec, sum_latency_ns: u64) -> Result<u64, ServerError> {
    if flow.rate_bps == 0 {
        return Err(ServerError::ZeroRate);
    }
    let burst_ns = (u128::from(flow.burst_bits) * NANOS_PER_SEC.unsigned_abs())
        .div_ceil(u128::from(flow.rate_bps));
    u64::try_from(burst_ns)
        .ok()
        .and_then(|b| b.checked_add(sum_latency_ns))
        .ok_or(ServerError::Arith(ArithError::Overflow))
}

/// The T-SPEC in wire bits of a SETUP whose rate and burst count whole Ethernet frames (14-byte
/// header included; no preamble, inter-frame gap or FCS), with frames of at most `max_packet`
/// bytes: wire rate `⌈rate·wire_bytes(M)/M⌉`, wire burst `⌈b·wire_bytes(M)/M⌉·8`, largest frame
/// `wire_bits(M)`. As everywhere in rtlan, the first hop polices in these wire units, so a sender
/// of smaller frames gets fewer of them through, never more wire bits.
pub fn tspec_from_setup(
    rate_bps: u64,
    burst_bytes: u32,
    max_packet: u16,
) -> Result<HopTspec, ServerError> {
    if rate_bps == 0 {
        return Err(ServerError::ZeroRate);
    }
    if max_packet == 0 {
        return Err(ServerError::ZeroFrame);
    }
    if burst_bytes < u32::from(max_packet) {
        return Err(ServerError::BurstBelowPacket {
            burst: burst_bytes,
            packet: max_packet,
        });
    }
    let frame = u128::from(max_packet);
    let wire = u128::from(wire_bytes(usize::from(max_packet)));
    let overflow = ServerError::Arith(ArithError::Overflow);
    let rate =
        u64::try_from((u128::from(rate_bps) * wire).div_ceil(frame)).map_err(|_| overflow)?;
    let burst = (u128::from(burst_bytes) * wire).div_ceil(frame) * 8;
    Ok(HopTspec {
        rate_bps: rate,
        burst_bits: u64::try_from(burst).map_err(|_| overflow)?,
        max_frame_bits: wire_bits(usize::from(max_packet)),
    })
}

/// `bits + ⌈rate·ns / 10⁹⌉`, checked.
fn plus_rate_time(bits: u64, rate_bps: u64, nanos: u64) -> Result<u64, ServerError> {
    let grown = (u128::from(rate_bps) * u128::from(nanos)).div_ceil(NANOS_PER_SEC.unsigned_abs());
    u64::try_from(grown)
        .ok()
        .and_then(|g| g.checked_add(bits))
        .ok_or(ServerError::Arith(ArithError::Overflow))
}

fn int(v: u64) -> Result<Q, ArithError> {
    Q::new(i128::from(v), 1)
}

/// `nanos` as seconds.
fn ns(nanos: u64) -> Result<Q, ArithError> {
    Q::new(i128::from(nanos), NANOS_PER_SEC)
}

/// Seconds to whole nanoseconds, rounded up.
fn ceil_ns(seconds: Q) -> Result<u64, ServerError> {
    let n = seconds.mul(Q::new(NANOS_PER_SEC, 1)?)?.ceil();
    u64::try_from(n.max(0)).map_err(|_| ServerError::Arith(ArithError::Overflow))
}

impl PortParams {
    /// `(C, C − ρ_c)` after checking the port.
    fn rates(&self) -> Result<(Q, Q), ServerError> {
        if self.line_rate_bps == 0 {
            return Err(ServerError::ZeroLineRate);
        }
        if self.control_rate_bps >= self.line_rate_bps {
            return Err(ServerError::ControlTooFast {
                control_bps: self.control_rate_bps,
                line_bps: self.line_rate_bps,
            });
        }
        let c = int(self.line_rate_bps)?;
        Ok((c, c.sub(int(self.control_rate_bps)?)?))
    }
}

impl HopTspec {
    /// `(r, L_i)` after checking the flow.
    fn rate_and_frame(&self) -> Result<(Q, Q), ServerError> {
        if self.rate_bps == 0 {
            return Err(ServerError::ZeroRate);
        }
        if self.max_frame_bits == 0 {
            return Err(ServerError::ZeroFrame);
        }
        Ok((int(self.rate_bps)?, int(self.max_frame_bits)?))
    }
}

/// `W_max = U·C·T` (wire bits, exact) after checking the port, the cycle and the share.
fn cyclic_budget(p: &CyclicParams) -> Result<Q, ServerError> {
    let (c, _) = p.port.rates()?;
    if p.cycle_ns == 0 {
        return Err(ServerError::ZeroCycle);
    }
    if p.rt_share_percent == 0 || p.rt_share_percent > 100 {
        return Err(ServerError::BadShare(p.rt_share_percent));
    }
    let u = Q::new(i128::from(p.rt_share_percent), 100)?;
    Ok(u.mul(c)?.mul(ns(p.cycle_ns)?)?)
}

/// `(T, Δ)` for a port whose largest frame is at least `flow_frame_bits`.
fn cyclic_terms(p: &CyclicParams, flow_frame_bits: u64) -> Result<(Q, Q), ServerError> {
    let budget = cyclic_budget(p)?;
    let (_, c_left) = p.port.rates()?;
    let l_max = int(p.port.max_frame_bits.max(flow_frame_bits))?;
    // Work that can compete with a flow after a boundary: one frame already on the line, the
    // control bucket, and the cycle work of every real-time flow (Σ w_j ≤ W_max).
    let work = budget.add(l_max)?.add(int(p.port.control_burst_bits)?)?;
    Ok((ns(p.cycle_ns)?, work.div(c_left)?))
}

/// `T + Δ + L_i/r_i` (seconds): the cyclic latency without lateness and link delay.
fn cyclic_core(p: &CyclicParams, flow: &HopTspec) -> Result<Q, ServerError> {
    let (r, l_i) = flow.rate_and_frame()?;
    let (t, drain) = cyclic_terms(p, flow.max_frame_bits)?;
    let work = r.mul(t)?.add(l_i)?;
    let budget = cyclic_budget(p)?;
    if work > budget {
        return Err(ServerError::WorkAboveBudget {
            work_bits: u64::try_from(work.ceil()).unwrap_or(u64::MAX),
            budget_bits: u64::try_from(budget.floor()).unwrap_or(u64::MAX),
        });
    }
    let lateness = ns(p.port.lateness_ns)?;
    if drain.add(lateness)? > t {
        return Err(ServerError::CycleTooShort {
            drain_ns: ceil_ns(drain)?,
            lateness_ns: p.port.lateness_ns,
            cycle_ns: p.cycle_ns,
        });
    }
    Ok(t.add(drain)?.add(l_i.div(r)?)?)
}

/// `(C_w, T_w + L_max/C_w)` (bit/s, seconds) of a QSR port's fair queue.
fn wfq_fixed(p: &WfqParams) -> Result<(Q, Q), ServerError> {
    let (_, c_left) = p.port.rates()?;
    let gs_rate = int(p.gs_rate_bps)?;
    if gs_rate >= c_left {
        return Err(ServerError::RateAboveLimit {
            rate_bps: p.gs_rate_bps,
            limit_bps: p.port.line_rate_bps - p.port.control_rate_bps,
        });
    }
    let c_w = c_left.sub(gs_rate)?;
    // Guaranteed releases in a window of t: Σ (L_j + R_j (t + g)).
    let burst = int(p.port.control_burst_bits)?
        .add(int(p.gs_frames_bits)?)?
        .add(gs_rate.mul(ns(p.granularity_ns)?)?)?;
    let fixed = burst.add(int(p.port.max_frame_bits)?)?.div(c_w)?;
    Ok((c_w, fixed))
}

/// `T_w + L_i/r_i + L_max/C_w` (seconds).
fn wfq_core(p: &WfqParams, flow: &HopTspec) -> Result<Q, ServerError> {
    let (r, l_i) = flow.rate_and_frame()?;
    let (c_w, fixed) = wfq_fixed(p)?;
    if r > c_w {
        let (_, c_left) = p.port.rates()?;
        let limit = c_left.sub(int(p.gs_rate_bps)?)?;
        return Err(ServerError::RateAboveLimit {
            rate_bps: flow.rate_bps,
            limit_bps: u64::try_from(limit.floor()).unwrap_or(0),
        });
    }
    // The flow's own largest frame counts in L_max too.
    let extra = int(flow.max_frame_bits.saturating_sub(p.port.max_frame_bits))?.div(c_w)?;
    Ok(fixed.add(extra)?.add(l_i.div(r)?)?)
}

/// `d_i + g = L_i/R_i + (L_max + σ_c)/(C − ρ_c) + g` (seconds).
fn wheel_relative_deadline(p: &WheelParams, flow: &HopTspec) -> Result<Q, ServerError> {
    let (r, l_i) = flow.rate_and_frame()?;
    let (_, c_left) = p.port.rates()?;
    if r > c_left {
        return Err(ServerError::RateAboveLimit {
            rate_bps: flow.rate_bps,
            limit_bps: p.port.line_rate_bps - p.port.control_rate_bps,
        });
    }
    let l_max = int(p.port.max_frame_bits.max(flow.max_frame_bits))?;
    let d0 = l_max.add(int(p.port.control_burst_bits)?)?.div(c_left)?;
    Ok(l_i.div(r)?.add(d0)?.add(ns(p.granularity_ns)?)?)
}
