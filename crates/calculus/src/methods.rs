//! Per-flow end-to-end bounds beyond total flow analysis, on the whole-network model of
//! [`crate::analysis`] (every switch output port a FIFO rate-latency server β_{C, t_mux}, every flow a
//! T-SPEC `min(p·t + M, r·t + b)`): FIFO-aware output bursts, separated flow analysis (SFA) and
//! "pay multiplexing only once" (PMOO). Every method gives a sound bound on its own; a flow's
//! reported bound is the smallest, and [`Method`] records which one gave it.
//!
//! - **FIFO leftover** (Le Boudec & Thiran, *Network Calculus*, Prop. 6.2.1 / Cor. 6.2.3, Cruz's
//!   θ-family). At a FIFO port β_{C,T} the flow of interest is offered
//!   β_θ(t) = [β(t) − α_c(t − θ)]⁺·1{t > θ} for every θ ≥ 0 for which β_θ is wide-sense
//!   increasing, α_c an arrival curve of the cross traffic. We apply it with
//!   α_c = γ_{r_c, b_c}, the cross flows' long-term token buckets (r_c = Σ r, b_c = Σ b of the
//!   other flows at the port), which bound the cross T-SPECs from above, and θ = T + b_c/C: then
//!   β_θ = β_{C − r_c, θ} exactly, increasing. We do **not** take θ from the T-SPEC's burst at 0+
//!   (θ = T + ΣM/C) and call the leftover β_{C − r_c, θ}: for that θ the true β_θ stays at 0 while
//!   the cross traffic runs at its peaks and reaches slope C − r_c only later, so
//!   β_{C − r_c, T + ΣM/C} is not a service curve (a test shows a trajectory that beats the bound
//!   it gives). See `docs/calculus.md`, "FIFO and T-SPECs".
//! - **FIFO-aware TFA**: the same closed-form per-port bound as TFA (Löser/Härtig eq. (6)), but a
//!   flow leaves a port with the burst b + r·min(d, θ) instead of b + r·d: both γ_{r, b + r·d}
//!   (every bit delayed at most d) and γ_{r, b + r·θ} (= γ_{r,b} ⊘ β_{C − r_c, θ}) bound the
//!   output, so their minimum does. The peak-rate line of the next hop is kept as in TFA.
//! - **SFA** (Le Boudec & Thiran §6.2, concatenation): the FIFO leftovers β_{C_k − r_c,k, θ_k}
//!   along the path, concatenated into β_{min, Σθ}, against the flow's own T-SPEC at its first
//!   hop: the flow's burst is paid once. Cross bursts are those of FIFO-aware TFA.
//! - **PMOO** (Schmitt, Zdarsky & Martinovic, "Improving performance bounds in feed-forward
//!   networks by paying multiplexing only once", MMB 2008, Thm. 1; blind multiplexing, so sound
//!   for FIFO too): R = min_k (C_k − r_c,k), T = Σ_k T_k + Σ_i (b_i + r_i·Σ_{k ∈ P_i} T_k)/R over
//!   the cross flows i, each entering the path once with burst b_i and leaving it after the run
//!   P_i (a cross flow that leaves and re-joins counts as one flow per run, with its burst at the
//!   start of each run). Cross traffic enters as its long-term token bucket (sound for T-SPECs).
//! - **LP** ([`crate::lp`]): the worst-case delay through the flow's tandem as one linear program
//!   (Bouillard & Stea's FIFO constraints), the cross runs entering with the same FIFO-aware
//!   bursts; the tightest where it fits (paths of at most [`crate::lp::MAX_HOPS`] ports), and
//!   costlier, so it runs where [`LpUse`] asks for it.
//!
//! Rounding: θ is rounded up to [`GRID`] before it is propagated or summed, and every returned
//! bound is rounded up to [`GRID`]; rounding up keeps every bound sound.

use std::fmt;

use crate::analysis::{Flow, PortKey};
use crate::network::GRID;
use crate::rational::{ArithError, Q};

/// The analysis that gave a flow's bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Method {
    /// Total flow analysis: Σ of the port bounds, bursts grown by r × port delay.
    Tfa,
    /// TFA with FIFO-aware output bursts (b + r·min(d, θ)).
    FifoTfa,
    /// Separated flow analysis over the FIFO leftover service curves.
    Sfa,
    /// Pay multiplexing only once (blind leftover of the whole path).
    Pmoo,
    /// The linear program of [`crate::lp`] over the flow's tandem.
    Lp,
}

impl Method {
    /// Every method, in the order ties are broken (the first smallest wins).
    pub const ALL: [Method; 5] = [
        Method::Tfa,
        Method::FifoTfa,
        Method::Sfa,
        Method::Pmoo,
        Method::Lp,
    ];

    /// The short name used in reports (`tfa`, `fifo-tfa`, `sfa`, `pmoo`, `lp`).
    pub fn name(self) -> &'static str {
        match self {
            Method::Tfa => "tfa",
            Method::FifoTfa => "fifo-tfa",
            Method::Sfa => "sfa",
            Method::Pmoo => "pmoo",
            Method::Lp => "lp",
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A flow's end-to-end bound by each method (host delay included), `None` where the method
/// gives no finite bound (e.g. no leftover rate).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MethodBounds {
    /// [`Method::Tfa`].
    pub tfa: Option<Q>,
    /// [`Method::FifoTfa`].
    pub fifo_tfa: Option<Q>,
    /// [`Method::Sfa`].
    pub sfa: Option<Q>,
    /// [`Method::Pmoo`].
    pub pmoo: Option<Q>,
    /// [`Method::Lp`] (`None` also where it was not computed, see [`LpUse`]).
    pub lp: Option<Q>,
}

impl MethodBounds {
    /// The bound of one method.
    pub fn get(&self, m: Method) -> Option<Q> {
        match m {
            Method::Tfa => self.tfa,
            Method::FifoTfa => self.fifo_tfa,
            Method::Sfa => self.sfa,
            Method::Pmoo => self.pmoo,
            Method::Lp => self.lp,
        }
    }

    /// The smallest bound and the method that gave it (ties: the first of [`Method::ALL`]).
    pub fn best(&self) -> Option<(Q, Method)> {
        let mut best: Option<(Q, Method)> = None;
        for m in Method::ALL {
            if let Some(v) = self.get(m) {
                if best.is_none_or(|(b, _)| v < b) {
                    best = Some((v, m));
                }
            }
        }
        best
    }
}

/// Which flows get the LP bound ([`crate::lp`]), the costliest method: about a millisecond per
/// flow where the others take microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LpUse {
    /// Only flows with a deadline that every other method misses: admission uses the tightest
    /// bound, and a network that meets its deadlines costs nothing more.
    #[default]
    Deadlines,
    /// Every flow whose path fits.
    All,
    /// None.
    Never,
}

impl LpUse {
    /// Whether flow `f`, whose bounds by the other methods are `bounds`, gets the LP.
    pub(crate) fn wants(self, f: &Flow, bounds: &MethodBounds) -> bool {
        if f.hops.is_empty() || f.hops.len() > crate::lp::MAX_HOPS {
            return false;
        }
        match self {
            LpUse::All => true,
            LpUse::Never => false,
            LpUse::Deadlines => match (f.deadline, bounds.best()) {
                (Some(d), Some((b, _))) => b > d,
                _ => false,
            },
        }
    }
}

/// A flow other than the flow of interest at one of its ports: a key the caller resolves, and
/// its hop index there.
pub(crate) type CrossAt<K> = (K, usize);

/// LP bound (host delay included, rounded up), `None` where it does not fit or gives nothing.
/// `cross[k]` lists the other flows at `ports[k]`; `flow(key)` resolves one, and
/// `burst(key, hop)` gives its FIFO-aware burst at a hop. A cross flow joins a run where it
/// did not come from the previous port of the path, and stays while its hops follow the path.
pub(crate) fn lp<'a, K: Copy>(
    f: &Flow,
    ports: &[PortView],
    bursts: &[Q],
    cross: &[Vec<CrossAt<K>>],
    flow: impl Fn(K) -> Option<&'a Flow>,
    burst: impl Fn(K, usize) -> Option<Q>,
) -> Result<Option<Q>, ArithError> {
    let n = ports.len();
    let mut tandem = crate::lp::Tandem::new(ports.to_vec());
    let spec = |g: &Flow, h: usize, b: Q| crate::lp::Tspec {
        p: g.hops[h].peak,
        m: g.max_packet,
        r: g.rate,
        b,
    };
    let own: Vec<crate::lp::Tspec> = (0..n).map(|h| spec(f, h, bursts[h])).collect();
    tandem.add(0, &own);
    for (j, at) in cross.iter().enumerate().take(n) {
        for &(key, h) in at {
            let Some(g) = flow(key) else { continue };
            if j > 0 && h > 0 && g.hops[h - 1].port == ports[j - 1].key {
                continue;
            }
            let mut run = Vec::new();
            while j + run.len() < n
                && h + run.len() < g.hops.len()
                && g.hops[h + run.len()].port == ports[j + run.len()].key
            {
                let Some(b) = burst(key, h + run.len()) else {
                    return Ok(None);
                };
                run.push(spec(g, h + run.len(), b));
            }
            tandem.add(j, &run);
        }
    }
    let Some(d) = tandem.delay_bound()? else {
        return Ok(None);
    };
    Ok(Some(d.add(f.host_delay)?.round_up(GRID)?))
}

/// θ = t_mux + b_c/C of the FIFO leftover β_{C − r_c, θ}, rounded up to [`GRID`], where
/// b_c = `sum_b − own_b` is the cross traffic's burst at the port.
pub(crate) fn fifo_theta(c: Q, t_mux: Q, sum_b: Q, own_b: Q) -> Result<Q, ArithError> {
    t_mux.add(sum_b.sub(own_b)?.div(c)?)?.round_up(GRID)
}

/// The delay a flow's burst grows by at one port under FIFO-aware TFA, min(d, θ), for every
/// flow of the port: θ ≥ d exactly when the flow's burst is at most Σb − C·(d − t_mux), so the
/// division of θ is done only for the flows where it can win.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FifoGrowth {
    c: Q,
    t_mux: Q,
    sum_b: Q,
    delay: Q,
    threshold: Q,
}

impl FifoGrowth {
    /// For a port of rate `c`, latency `t_mux`, Σb `sum_b` and delay bound `delay`.
    pub(crate) fn new(c: Q, t_mux: Q, sum_b: Q, delay: Q) -> Result<FifoGrowth, ArithError> {
        let threshold = sum_b.sub(c.mul(delay.sub(t_mux)?)?)?;
        Ok(FifoGrowth {
            c,
            t_mux,
            sum_b,
            delay,
            threshold,
        })
    }

    /// min(d, θ) for a flow with burst `own_b` here (θ rounded up to the grid).
    pub(crate) fn growth(&self, own_b: Q) -> Result<Q, ArithError> {
        if own_b <= self.threshold {
            return Ok(self.delay);
        }
        Ok(self
            .delay
            .min(fifo_theta(self.c, self.t_mux, self.sum_b, own_b)?))
    }
}

/// Horizontal deviation of the T-SPEC `min(p·t + M, r·t + b)` against λ_R (no latency), exact;
/// needs `r ≤ R`.
pub(crate) fn tspec_delay(p: Q, m: Q, r: Q, b: Q, rate: Q) -> Result<Q, ArithError> {
    if b <= m {
        // min(p·t + M, r·t + b) = r·t + b: the bucket over R.
        return b.div(rate);
    }
    if p <= r || p <= rate {
        // Below the line from the first bit: only M waits.
        return m.div(rate);
    }
    // Deviation is largest at the inflexion g = (b − M)/(p − r): (M + p·g)/R − g.
    let g = b.sub(m)?.div(p.sub(r)?)?;
    m.add(p.mul(g)?)?.div(rate)?.sub(g)
}

/// One port of a flow's path, as the per-flow methods see it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PortView {
    /// The port.
    pub key: PortKey,
    /// Line rate C.
    pub c: Q,
    /// Latency t_mux.
    pub t_mux: Q,
    /// Σ r of every flow at the port.
    pub sum_r: Q,
    /// Σ b of every flow at the port (FIFO-aware TFA bursts).
    pub sum_b: Q,
}

/// SFA bound (host delay included, rounded up), `None` without leftover rate. `ports[h]` is the
/// flow's h-th hop, `bursts[h]` its FIFO-aware burst there.
pub(crate) fn sfa(f: &Flow, ports: &[PortView], bursts: &[Q]) -> Result<Option<Q>, ArithError> {
    let mut rate: Option<Q> = None;
    let mut latency = Q::ZERO;
    for (p, b) in ports.iter().zip(bursts) {
        let left = p.c.sub(p.sum_r.sub(f.rate)?)?;
        if !left.is_positive() {
            return Ok(None);
        }
        rate = Some(rate.map_or(left, |r| r.min(left)));
        latency = latency.add(fifo_theta(p.c, p.t_mux, p.sum_b, *b)?)?;
    }
    let Some(rate) = rate else { return Ok(None) };
    if f.rate > rate {
        return Ok(None);
    }
    let peak = f.hops.first().map_or(rate, |h| h.peak);
    let own = tspec_delay(peak, f.max_packet, f.rate, f.burst, rate)?;
    Ok(Some(latency.add(own)?.add(f.host_delay)?.round_up(GRID)?))
}

/// PMOO bound (host delay included, rounded up), `None` without leftover rate. `bursts[k]` is the
/// flow's burst at `ports[k]`; `from_prev[k]` (k ≥ 1; `from_prev[0]` is not read) is Σ of the
/// bursts at `ports[k]` of every flow, `f` included, whose previous hop is `ports[k − 1]`.
///
/// The cross term Σ_i (b_i + r_i·Σ_{k∈P_i} T_k) is summed per port, in O(hops): a cross flow
/// starts a run at k unless it came from k − 1, so Σ_i b_i = Σ_k (Σb_k − b_f,k) −
/// Σ_{k≥1} (from_prev[k] − b_f,k); and every cross flow at k is in exactly one run covering k, so
/// Σ_i r_i·Σ_{k∈P_i} T_k = Σ_k T_k·(Σr_k − r_f). A test checks it against the run-by-run sum.
pub(crate) fn pmoo(
    f: &Flow,
    ports: &[PortView],
    bursts: &[Q],
    from_prev: &[Q],
) -> Result<Option<Q>, ArithError> {
    let mut rate: Option<Q> = None;
    let mut latency = Q::ZERO;
    let mut charge = Q::ZERO;
    for (k, (p, b)) in ports.iter().zip(bursts).enumerate() {
        let cross_r = p.sum_r.sub(f.rate)?;
        let left = p.c.sub(cross_r)?;
        if !left.is_positive() {
            return Ok(None);
        }
        rate = Some(rate.map_or(left, |r| r.min(left)));
        latency = latency.add(p.t_mux)?;
        charge = charge.add(p.sum_b.sub(*b)?)?.add(p.t_mux.mul(cross_r)?)?;
        if k > 0 {
            let staying = from_prev.get(k).copied().unwrap_or(Q::ZERO).sub(*b)?;
            charge = charge.sub(staying)?;
        }
    }
    let Some(rate) = rate else { return Ok(None) };
    if f.rate > rate {
        return Ok(None);
    }
    let peak = f.hops.first().map_or(rate, |h| h.peak);
    let own = tspec_delay(peak, f.max_packet, f.rate, f.burst, rate)?;
    Ok(Some(
        latency
            .add(charge.div(rate)?)?
            .add(own)?
            .add(f.host_delay)?
            .round_up(GRID)?,
    ))
}

/// A cross flow at position `j` of the path of interest: the flow and its hop index there, and
/// its FIFO-aware burst at that hop.
#[cfg(test)]
pub(crate) struct Cross<'a> {
    /// The cross flow.
    pub flow: &'a Flow,
    /// Its hop index at the port.
    pub hop: usize,
    /// Its burst there.
    pub burst: Q,
}

/// [`pmoo`] summed run by run, as in the paper (tests only). `cross(j, push)` must hand every
/// flow other than `f` at `ports[j]` to `push`.
#[cfg(test)]
pub(crate) fn pmoo_by_runs<'a, F>(
    f: &Flow,
    ports: &[PortView],
    mut cross: F,
) -> Result<Option<Q>, ArithError>
where
    F: FnMut(usize, &mut dyn FnMut(Cross<'a>) -> Result<(), ArithError>) -> Result<(), ArithError>,
{
    let n = ports.len();
    let mut rate: Option<Q> = None;
    let mut latency = Q::ZERO;
    for p in ports {
        let left = p.c.sub(p.sum_r.sub(f.rate)?)?;
        if !left.is_positive() {
            return Ok(None);
        }
        rate = Some(rate.map_or(left, |r| r.min(left)));
        latency = latency.add(p.t_mux)?;
    }
    let Some(rate) = rate else { return Ok(None) };
    if f.rate > rate {
        return Ok(None);
    }
    // Σ over runs of (b_i + r_i·Σ_{k ∈ run} T_k).
    let mut charge = Q::ZERO;
    for j in 0..n {
        cross(j, &mut |x: Cross<'a>| {
            let hops = &x.flow.hops;
            // A run starts here unless the cross flow came from the previous port of the path.
            if j > 0 && x.hop > 0 && hops[x.hop - 1].port == ports[j - 1].key {
                return Ok(());
            }
            let mut t = Q::ZERO;
            let mut m = 0;
            while j + m < n && x.hop + m < hops.len() && hops[x.hop + m].port == ports[j + m].key {
                t = t.add(ports[j + m].t_mux)?;
                m += 1;
            }
            charge = charge.add(x.burst.add(x.flow.rate.mul(t)?)?)?;
            Ok(())
        })?;
    }
    let peak = f.hops.first().map_or(rate, |h| h.peak);
    let own = tspec_delay(peak, f.max_packet, f.rate, f.burst, rate)?;
    Ok(Some(
        latency
            .add(charge.div(rate)?)?
            .add(own)?
            .add(f.host_delay)?
            .round_up(GRID)?,
    ))
}

#[cfg(test)]
#[path = "methods_tests.rs"]
mod tests;
