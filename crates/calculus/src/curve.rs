//! Piecewise-linear curves of deterministic network calculus (Le Boudec & Thiran, "Network
//! Calculus", ch. 1 and 3; used by seed 004 §2.2): concave arrival curves, rate-latency service
//! curves, min-plus convolution and deconvolution between them, and the backlog bound (vertical
//! deviation), delay bound (horizontal deviation) and output arrival curve.
//!
//! Representation. A concave piecewise-linear arrival curve is the minimum of finitely many affine
//! functions (token buckets) `γ_{r,b}(t) = r·t + b` for `t > 0`, with `α(0) = 0`. T-SPECs, sums and
//! minima of such curves stay in this class, so one type, [`ArrivalCurve`], covers all of them.
//! Service curves are rate-latency `β_{R,T}(t) = R·(t − T)+` ([`RateLatency`]); their min-plus
//! convolution (concatenation of servers) is again rate-latency with `R = min`, `T = sum`.
//!
//! All arithmetic is exact ([`crate::rational::Q`]); time in seconds, data in bits, rates in bit/s.

use crate::rational::{ArithError, Q};

/// Errors from curve operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CurveError {
    /// Exact arithmetic failed.
    #[error(transparent)]
    Arith(#[from] ArithError),
    /// The long-term arrival rate exceeds the service rate: the bound is infinite.
    #[error("unbounded: arrival rate {arrival} exceeds service rate {service} bit/s")]
    Unstable {
        /// Long-term arrival rate (bit/s).
        arrival: Q,
        /// Service rate (bit/s).
        service: Q,
    },
    /// A rate, burst or latency was negative.
    #[error("negative curve parameter")]
    Negative,
    /// An arrival curve needs at least one token bucket.
    #[error("empty arrival curve")]
    Empty,
}

/// One affine piece `r·t + b` (a token bucket `γ_{r,b}`): rate in bit/s, burst in bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenBucket {
    /// Rate `r` (bit/s).
    pub rate: Q,
    /// Burst `b` (bits).
    pub burst: Q,
}

impl TokenBucket {
    /// `γ_{r,b}`; rejects negative parameters.
    pub fn new(rate: Q, burst: Q) -> Result<TokenBucket, CurveError> {
        if rate.is_negative() || burst.is_negative() {
            return Err(CurveError::Negative);
        }
        Ok(TokenBucket { rate, burst })
    }

    fn at(self, t: Q) -> Result<Q, ArithError> {
        self.rate.mul(t)?.add(self.burst)
    }
}

/// A concave piecewise-linear arrival curve `α(t) = min_i (r_i·t + b_i)` for `t > 0`, `α(0) = 0`.
///
/// Invariant: `pieces` is the lower envelope only — sorted by strictly decreasing rate and strictly
/// increasing burst, each piece active on a non-empty interval; never empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArrivalCurve {
    pieces: Vec<TokenBucket>,
}

impl ArrivalCurve {
    /// The minimum of the given token buckets.
    pub fn from_buckets(buckets: &[TokenBucket]) -> Result<ArrivalCurve, CurveError> {
        if buckets.is_empty() {
            return Err(CurveError::Empty);
        }
        if buckets
            .iter()
            .any(|b| b.rate.is_negative() || b.burst.is_negative())
        {
            return Err(CurveError::Negative);
        }
        Ok(ArrivalCurve {
            pieces: envelope(buckets.to_vec())?,
        })
    }

    /// A single token bucket `γ_{r,b}`.
    pub fn token_bucket(rate: Q, burst: Q) -> Result<ArrivalCurve, CurveError> {
        ArrivalCurve::from_buckets(&[TokenBucket::new(rate, burst)?])
    }

    /// The T-SPEC `α(t) = min(C·t + M, r·t + b)` of seed 004 §2.2 (peak rate `C`, maximum packet
    /// `M`, token rate `r`, bucket `b`).
    pub fn tspec(peak: Q, max_packet: Q, rate: Q, bucket: Q) -> Result<ArrivalCurve, CurveError> {
        ArrivalCurve::from_buckets(&[
            TokenBucket::new(peak, max_packet)?,
            TokenBucket::new(rate, bucket)?,
        ])
    }

    /// The envelope pieces, by decreasing rate.
    pub fn pieces(&self) -> &[TokenBucket] {
        &self.pieces
    }

    /// `α(t)`; 0 for `t <= 0`.
    pub fn eval(&self, t: Q) -> Result<Q, CurveError> {
        if !t.is_positive() {
            return Ok(Q::ZERO);
        }
        let mut best: Option<Q> = None;
        for p in &self.pieces {
            let v = p.at(t)?;
            best = Some(best.map_or(v, |b| b.min(v)));
        }
        best.ok_or(CurveError::Empty)
    }

    /// `α(0+)`: the instantaneous burst.
    pub fn burst(&self) -> Q {
        // Invariant: pieces is non-empty and sorted by increasing burst.
        self.pieces[0].burst
    }

    /// The long-term rate (slope of the last piece).
    pub fn long_term_rate(&self) -> Q {
        // Invariant: pieces is non-empty and sorted by decreasing rate.
        self.pieces[self.pieces.len() - 1].rate
    }

    /// The last piece (smallest rate, largest burst): the loosest single token bucket above `α`.
    pub fn long_term_bucket(&self) -> TokenBucket {
        // Invariant: pieces is non-empty.
        self.pieces[self.pieces.len() - 1]
    }

    /// Times `t > 0` where the active piece changes (inflexion points), increasing.
    pub fn breakpoints(&self) -> Result<Vec<Q>, CurveError> {
        let mut out = Vec::with_capacity(self.pieces.len().saturating_sub(1));
        for w in self.pieces.windows(2) {
            out.push(intersection(w[0], w[1])?);
        }
        Ok(out)
    }

    /// Pointwise minimum `α ∧ α'` (still concave).
    pub fn min(&self, other: &ArrivalCurve) -> Result<ArrivalCurve, CurveError> {
        let mut all = self.pieces.clone();
        all.extend_from_slice(&other.pieces);
        Ok(ArrivalCurve {
            pieces: envelope(all)?,
        })
    }

    /// Pointwise sum `α + α'` (aggregate of two flows; still concave).
    pub fn add(&self, other: &ArrivalCurve) -> Result<ArrivalCurve, CurveError> {
        let mut cuts = self.breakpoints()?;
        cuts.extend(other.breakpoints()?);
        cuts.sort();
        cuts.dedup();
        // On each interval between cuts, both curves are affine; the sum's piece there is the sum of
        // the two active pieces. The first interval starts at 0+.
        let mut pieces = Vec::with_capacity(cuts.len() + 1);
        let mut starts = vec![Q::ZERO];
        starts.extend(cuts);
        for s in starts {
            let a = active_piece(&self.pieces, s)?;
            let b = active_piece(&other.pieces, s)?;
            pieces.push(TokenBucket {
                rate: a.rate.add(b.rate)?,
                burst: a.burst.add(b.burst)?,
            });
        }
        Ok(ArrivalCurve {
            pieces: envelope(pieces)?,
        })
    }

    /// Sum of many curves; `None` if the iterator is empty.
    pub fn sum<'a, I: IntoIterator<Item = &'a ArrivalCurve>>(
        curves: I,
    ) -> Result<Option<ArrivalCurve>, CurveError> {
        let mut acc: Option<ArrivalCurve> = None;
        for c in curves {
            acc = Some(match acc {
                None => c.clone(),
                Some(a) => a.add(c)?,
            });
        }
        Ok(acc)
    }

    /// `α ⊘ δ_d`, i.e. `t ↦ α(t + d)`: the output curve of a flow whose every bit is delayed at
    /// most `d` (used by total flow analysis).
    pub fn delayed(&self, d: Q) -> Result<ArrivalCurve, CurveError> {
        if d.is_negative() {
            return Err(CurveError::Negative);
        }
        let pieces = self
            .pieces
            .iter()
            .map(|p| {
                Ok(TokenBucket {
                    rate: p.rate,
                    burst: p.at(d)?,
                })
            })
            .collect::<Result<Vec<_>, ArithError>>()?;
        Ok(ArrivalCurve {
            pieces: envelope(pieces)?,
        })
    }
}

/// The piece active just after time `s` (the minimum there, ties broken by smaller slope).
fn active_piece(pieces: &[TokenBucket], s: Q) -> Result<TokenBucket, CurveError> {
    let mut best: Option<(Q, TokenBucket)> = None;
    for p in pieces {
        let v = p.at(s)?;
        best = match best {
            None => Some((v, *p)),
            Some((bv, bp)) if v < bv || (v == bv && p.rate < bp.rate) => Some((v, *p)),
            keep => keep,
        };
    }
    best.map(|(_, p)| p).ok_or(CurveError::Empty)
}

/// Time where two pieces with `a.rate > b.rate` and `a.burst < b.burst` cross.
fn intersection(a: TokenBucket, b: TokenBucket) -> Result<Q, ArithError> {
    b.burst.sub(a.burst)?.div(a.rate.sub(b.rate)?)
}

/// Lower envelope over `t > 0` of affine pieces: keeps only pieces that are the minimum on a
/// non-empty interval, sorted by decreasing rate.
fn envelope(mut v: Vec<TokenBucket>) -> Result<Vec<TokenBucket>, ArithError> {
    // Sort by decreasing rate; for equal rates only the smallest burst matters.
    v.sort_by(|x, y| y.rate.cmp(&x.rate).then(x.burst.cmp(&y.burst)));
    v.dedup_by(|later, earlier| later.rate == earlier.rate);
    let mut out: Vec<TokenBucket> = Vec::with_capacity(v.len());
    for p in v {
        // Pieces with a rate >= p.rate and a burst >= p.burst are never below p.
        while let Some(last) = out.last() {
            if last.burst >= p.burst {
                out.pop();
                continue;
            }
            if out.len() >= 2 {
                let prev = out[out.len() - 2];
                // `last` is useful only if it is below both neighbours somewhere: its crossing with
                // `prev` must come strictly before its crossing with `p`.
                let x1 = intersection(prev, *last)?;
                let x2 = intersection(*last, p)?;
                if x2 <= x1 {
                    out.pop();
                    continue;
                }
            }
            break;
        }
        out.push(p);
    }
    // The first piece must be the minimum at 0+; pieces whose crossing with the first is at t <= 0
    // were already removed by the burst test (smaller rate and smaller burst wins everywhere).
    Ok(out)
}

/// A rate-latency service curve `β_{R,T}(t) = R·(t − T)+` (rate bit/s, latency s).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLatency {
    /// Rate `R` (bit/s), positive.
    pub rate: Q,
    /// Latency `T` (s), non-negative.
    pub latency: Q,
}

impl RateLatency {
    /// `β_{R,T}`; the rate must be positive and the latency non-negative.
    pub fn new(rate: Q, latency: Q) -> Result<RateLatency, CurveError> {
        if !rate.is_positive() || latency.is_negative() {
            return Err(CurveError::Negative);
        }
        Ok(RateLatency { rate, latency })
    }

    /// `β(t)`.
    pub fn eval(&self, t: Q) -> Result<Q, CurveError> {
        Ok(self.rate.mul(t.sub(self.latency)?)?.pos())
    }

    /// Min-plus convolution `β ⊗ β'` (servers in sequence): `β_{min(R,R'), T+T'}`.
    pub fn concat(&self, other: &RateLatency) -> Result<RateLatency, CurveError> {
        Ok(RateLatency {
            rate: self.rate.min(other.rate),
            latency: self.latency.add(other.latency)?,
        })
    }

    /// Concatenation of a whole path; `None` if empty.
    pub fn concat_all<I: IntoIterator<Item = RateLatency>>(
        servers: I,
    ) -> Result<Option<RateLatency>, CurveError> {
        let mut acc: Option<RateLatency> = None;
        for s in servers {
            acc = Some(match acc {
                None => s,
                Some(a) => a.concat(&s)?,
            });
        }
        Ok(acc)
    }
}

fn check_stable(alpha: &ArrivalCurve, beta: &RateLatency) -> Result<(), CurveError> {
    if alpha.long_term_rate() > beta.rate {
        return Err(CurveError::Unstable {
            arrival: alpha.long_term_rate(),
            service: beta.rate,
        });
    }
    Ok(())
}

/// Backlog bound: the vertical deviation `sup_t (α(t) − β(t))`.
///
/// `α − β` is concave on `t > 0`, so the supremum is attained at `0+`, at `T` or at a breakpoint of
/// `α`; all are evaluated exactly.
pub fn backlog_bound(alpha: &ArrivalCurve, beta: &RateLatency) -> Result<Q, CurveError> {
    check_stable(alpha, beta)?;
    let mut best = alpha.burst();
    let mut candidates = alpha.breakpoints()?;
    candidates.push(beta.latency);
    for t in candidates {
        let v = alpha.eval(t)?.sub(beta.eval(t)?)?;
        best = best.max(v);
    }
    Ok(best)
}

/// Delay bound: the horizontal deviation `sup_t (β⁻¹(α(t)) − t) = sup_t (T + α(t)/R − t)`.
///
/// Concave in `t`, so attained at `0+` or a breakpoint of `α`.
pub fn delay_bound(alpha: &ArrivalCurve, beta: &RateLatency) -> Result<Q, CurveError> {
    check_stable(alpha, beta)?;
    let h = |t: Q, v: Q| -> Result<Q, ArithError> { beta.latency.add(v.div(beta.rate)?)?.sub(t) };
    let mut best = h(Q::ZERO, alpha.burst())?;
    for t in alpha.breakpoints()? {
        best = best.max(h(t, alpha.eval(t)?)?);
    }
    Ok(best)
}

/// Output arrival curve `α ⊘ β` (min-plus deconvolution) for concave `α` and rate-latency `β`.
///
/// `α ⊘ β_{R,T} = (α ⊘ λ_R) ⊘ δ_T`. For concave `α`, `α ⊘ λ_R` equals `α` after the point `t₀`
/// where `α`'s slope drops to `≤ R`, and the line of slope `R` through `(t₀, α(t₀))` before it;
/// `⊘ δ_T` shifts left by `T`. The result is again a minimum of token buckets.
pub fn output_curve(alpha: &ArrivalCurve, beta: &RateLatency) -> Result<ArrivalCurve, CurveError> {
    check_stable(alpha, beta)?;
    // t0: start of the first piece with rate <= R (exists by stability).
    let mut t0 = Q::ZERO;
    let bps = alpha.breakpoints()?;
    for (i, p) in alpha.pieces().iter().enumerate() {
        if p.rate <= beta.rate {
            t0 = if i == 0 { Q::ZERO } else { bps[i - 1] };
            break;
        }
    }
    let a_t0 = if t0.is_positive() {
        alpha.eval(t0)?
    } else {
        alpha.burst()
    };
    let mut pieces: Vec<TokenBucket> = alpha
        .pieces()
        .iter()
        .filter(|p| p.rate <= beta.rate)
        .map(|p| {
            Ok(TokenBucket {
                rate: p.rate,
                burst: p.at(beta.latency)?,
            })
        })
        .collect::<Result<_, ArithError>>()?;
    // Line of slope R through (t0 − T, α(t0)).
    let burst = a_t0.sub(beta.rate.mul(t0.sub(beta.latency)?)?)?;
    pieces.push(TokenBucket {
        rate: beta.rate,
        burst,
    });
    ArrivalCurve::from_buckets(&pieces)
}

/// Min-plus convolution `α ⊗ β` of a concave arrival curve with a rate-latency curve.
///
/// For concave `f, g` with `f(0) = g(0) = 0`, `f ⊗ g = min(f, g)`; with `β = λ_R ⊗ δ_T` this gives
/// `(α ⊗ β)(t) = min(α(t − T), R·(t − T))` for `t > T` and 0 before. Evaluated pointwise.
pub fn convolve_at(alpha: &ArrivalCurve, beta: &RateLatency, t: Q) -> Result<Q, CurveError> {
    let s = t.sub(beta.latency)?;
    if !s.is_positive() {
        return Ok(Q::ZERO);
    }
    Ok(alpha.eval(s)?.min(beta.rate.mul(s)?))
}

#[cfg(test)]
#[path = "curve_tests.rs"]
mod tests;
