//! RFC 2212 (Guaranteed Quality of Service) end-to-end queueing-delay bound, for the RSVP
//! switch-router of seed 003.
//!
//! A flow with TSpec `(p, M, r, b)` (peak rate, maximum datagram, token rate, bucket) reserves rate
//! `R ≥ r` (RSpec). Each network element advertises error terms `C` (rate-dependent, data) and `D`
//! (rate-independent, time); `C_tot`, `D_tot` are their sums along the path. RFC 2212 bounds the
//! end-to-end queueing delay by
//!
//! ```text
//!   (b − M)/R · (p − R)/(p − r) + (M + C_tot)/R + D_tot      if p > R ≥ r
//!   (M + C_tot)/R + D_tot                                    if r ≤ p ≤ R
//! ```
//!
//! This is the horizontal deviation between the TSpec `min(p·t + M, r·t + b)` and the rate-latency
//! curve `β_{R, C_tot/R + D_tot}` (Le Boudec & Thiran §1.4.1 / §2.1.2), which the tests check.
//! Units follow the crate (bits, bit/s, seconds); RFC 2212 itself counts `C` in bytes and `D` in µs
//! — convert with [`Q::bytes`] and [`Q::micros`].

use crate::curve::{self, ArrivalCurve, CurveError, RateLatency};
use crate::rational::{ArithError, Q};

/// Errors from the Guaranteed-Service formula.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum GuaranteedError {
    /// Exact arithmetic failed.
    #[error(transparent)]
    Arith(#[from] ArithError),
    /// The reserved rate is below the token rate (`R < r`): no finite bound.
    #[error("reserved rate R is below the token rate r")]
    RateTooLow,
    /// TSpec is not well formed (`p < r`, `b < M` or a negative value).
    #[error("malformed TSpec: need p >= r >= 0 and b >= M >= 0")]
    BadTspec,
    /// Error terms must be non-negative.
    #[error("negative error term")]
    NegativeErrorTerm,
}

/// An Integrated-Services TSpec: peak rate `p` (bit/s), max datagram `M` (bits), token rate `r`
/// (bit/s), bucket `b` (bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IntServTspec {
    /// Peak rate `p`.
    pub peak: Q,
    /// Maximum datagram size `M`.
    pub max_packet: Q,
    /// Token rate `r`.
    pub rate: Q,
    /// Bucket depth `b`.
    pub bucket: Q,
}

/// RFC 2212 end-to-end delay bound (seconds) for reserved rate `R` and path error terms
/// `C_tot` (bits) and `D_tot` (seconds).
pub fn guaranteed_delay_bound(
    tspec: &IntServTspec,
    reserved_rate: Q,
    c_tot: Q,
    d_tot: Q,
) -> Result<Q, GuaranteedError> {
    let IntServTspec {
        peak: p,
        max_packet: m,
        rate: r,
        bucket: b,
    } = *tspec;
    if r.is_negative() || m.is_negative() || p < r || b < m {
        return Err(GuaranteedError::BadTspec);
    }
    if c_tot.is_negative() || d_tot.is_negative() {
        return Err(GuaranteedError::NegativeErrorTerm);
    }
    let big_r = reserved_rate;
    if big_r < r || !big_r.is_positive() {
        return Err(GuaranteedError::RateTooLow);
    }
    let tail = m.add(c_tot)?.div(big_r)?.add(d_tot)?;
    if p > big_r {
        // p > R >= r, so p − r > 0.
        let burst_term = b.sub(m)?.div(big_r)?.mul(p.sub(big_r)?.div(p.sub(r)?)?)?;
        Ok(burst_term.add(tail)?)
    } else {
        Ok(tail)
    }
}

/// The same bound as a generic horizontal deviation (for cross-checking).
pub fn guaranteed_delay_bound_generic(
    tspec: &IntServTspec,
    reserved_rate: Q,
    c_tot: Q,
    d_tot: Q,
) -> Result<Q, CurveError> {
    let a = ArrivalCurve::tspec(tspec.peak, tspec.max_packet, tspec.rate, tspec.bucket)?;
    let latency = c_tot.div(reserved_rate)?.add(d_tot)?;
    curve::delay_bound(&a, &RateLatency::new(reserved_rate, latency)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn worked_example() {
        // p = 10 Mbit/s, M = 1500 B, r = 1 Mbit/s, b = 15000 B, R = 2 Mbit/s,
        // C_tot = 3000 B, D_tot = 2 ms.
        // (b−M)/R = 108000 bit / 2e6 = 54 ms; (p−R)/(p−r) = 8/9 → 48 ms.
        // (M + C_tot)/R = 36000 / 2e6 = 18 ms; + D_tot 2 ms → 68 ms total.
        let t = IntServTspec {
            peak: Q::int(10_000_000),
            max_packet: Q::bytes(1500),
            rate: Q::int(1_000_000),
            bucket: Q::bytes(15_000),
        };
        let d =
            guaranteed_delay_bound(&t, Q::int(2_000_000), Q::bytes(3000), Q::micros(2000)).unwrap();
        assert_eq!(d, Q::new(68, 1000).unwrap());
        // R >= p: only the (M + C_tot)/R + D_tot term: 36000/1e7 + 2 ms = 5.6 ms.
        let d = guaranteed_delay_bound(&t, Q::int(10_000_000), Q::bytes(3000), Q::micros(2000))
            .unwrap();
        assert_eq!(d, Q::new(56, 10_000).unwrap());
        assert_eq!(
            guaranteed_delay_bound(&t, Q::int(500_000), Q::ZERO, Q::ZERO),
            Err(GuaranteedError::RateTooLow)
        );
    }

    proptest! {
        #[test]
        fn equals_horizontal_deviation(m in 1i64..2000, extra in 0i64..50_000, r in 1i64..500,
                                       dp in 0i64..2000, dr in 0i64..2000, c in 0i64..5000,
                                       dus in 0i64..5000) {
            let t = IntServTspec { peak: Q::int(r + dp), max_packet: Q::int(m), rate: Q::int(r),
                                   bucket: Q::int(m + extra) };
            let big_r = Q::int(r + dr);
            let d = Q::micros(dus);
            prop_assert_eq!(guaranteed_delay_bound(&t, big_r, Q::int(c), d).unwrap(),
                            guaranteed_delay_bound_generic(&t, big_r, Q::int(c), d).unwrap());
        }
    }
}
