//! Closed-form bounds for one output port of an output-queueing switch — seed 004 (Löser &
//! Härtig, "Low-latency hard real-time communication over switched Ethernet") §2.2, equations
//! (2)–(7).
//!
//! Model: `N` flows share one output port of rate `C`. Flow `k` is shaped at its sender to the
//! T-SPEC `α_k(t) = min(C·t + M_k, r_k·t + b_k)` (§3: a token bucket behind a link of rate `C`). The
//! port offers the rate-latency service `β(t) = C·(t − t_mux)+` (Figure 2). Each equation is a
//! named function; the tests (and proptests) check them against the generic curve computation in
//! [`crate::curve`].
//!
//! Preconditions, from the paper: `Σ r_k ≤ C` (equation (1)), `r_k < C`, `b_k ≥ M_k`; equations (3)
//! and (4) additionally need `t_mux ≤ g_max` ("as argued in [15], t_mux ≤ g_max in practice").
//! Violations are reported as [`LoserError`], not silently mis-computed.

use crate::curve::{self, ArrivalCurve, CurveError, RateLatency};
use crate::rational::{sum, ArithError, Q};

/// Errors from the closed forms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum LoserError {
    /// Exact arithmetic failed.
    #[error(transparent)]
    Arith(#[from] ArithError),
    /// Building the generic curves failed.
    #[error(transparent)]
    Curve(#[from] CurveError),
    /// Equation (1) violated: the flows' rates sum to more than the port rate.
    #[error("sum of flow rates exceeds the port rate (equation (1))")]
    OverCapacity,
    /// A flow has `r ≥ C`, `b < M`, or a negative parameter.
    #[error("invalid T-SPEC for flow {0}: need 0 <= r < C and b >= M >= 0")]
    BadTspec(usize),
    /// No flows given.
    #[error("no flows")]
    NoFlows,
    /// Equations (3)/(4) need `t_mux ≤ g_max`.
    #[error("t_mux exceeds g_max: equations (3)/(4) do not apply")]
    MuxAfterInflexion,
}

/// The per-flow part of a T-SPEC (the peak rate is the port rate `C`): sizes in bits, rate bit/s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tspec {
    /// Maximum packet size `M` (bits).
    pub max_packet: Q,
    /// Token rate `r` (bit/s).
    pub rate: Q,
    /// Bucket size `b` (bits).
    pub bucket: Q,
}

impl Tspec {
    /// A T-SPEC shaped with shaping interval `Ts` (seed 004 §3): `b = r·Ts + M`.
    pub fn with_shaping_interval(
        max_packet: Q,
        rate: Q,
        shaping_interval: Q,
    ) -> Result<Tspec, ArithError> {
        Ok(Tspec {
            max_packet,
            rate,
            bucket: rate.mul(shaping_interval)?.add(max_packet)?,
        })
    }
}

/// One switch output port: rate `C` (bit/s) and multiplexing delay `t_mux` (s).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Port {
    /// Port (link) rate `C`, bit/s.
    pub rate: Q,
    /// Switch multiplexing delay `t_mux`, s.
    pub t_mux: Q,
}

fn validate(port: &Port, flows: &[Tspec]) -> Result<(), LoserError> {
    if flows.is_empty() {
        return Err(LoserError::NoFlows);
    }
    for (i, f) in flows.iter().enumerate() {
        if f.rate.is_negative() || f.rate >= port.rate || f.max_packet.is_negative() {
            return Err(LoserError::BadTspec(i));
        }
        if f.bucket < f.max_packet {
            return Err(LoserError::BadTspec(i));
        }
    }
    if sum(flows.iter().map(|f| f.rate))? > port.rate {
        return Err(LoserError::OverCapacity);
    }
    Ok(())
}

/// Equation (2): the inflexion time of flow `k`'s arrival curve, `g_k = (b_k − M) / (C − r_k)`.
pub fn inflexion_time(port: &Port, flow: &Tspec) -> Result<Q, LoserError> {
    validate(port, std::slice::from_ref(flow))?;
    Ok(flow
        .bucket
        .sub(flow.max_packet)?
        .div(port.rate.sub(flow.rate)?)?)
}

/// `g_max = max_k g_k`.
pub fn g_max(port: &Port, flows: &[Tspec]) -> Result<Q, LoserError> {
    validate(port, flows)?;
    let mut g = Q::ZERO;
    for f in flows {
        g = g.max(inflexion_time(port, f)?);
    }
    Ok(g)
}

/// Equation (3): `B = Σ b_k + Σ r_k · g_max − C · (g_max − t_mux)` (bits).
pub fn backlog_bound_eq3(port: &Port, flows: &[Tspec]) -> Result<Q, LoserError> {
    let g = g_max(port, flows)?;
    if port.t_mux > g {
        return Err(LoserError::MuxAfterInflexion);
    }
    let sb = sum(flows.iter().map(|f| f.bucket))?;
    let sr = sum(flows.iter().map(|f| f.rate))?;
    Ok(sb
        .add(sr.mul(g)?)?
        .sub(port.rate.mul(g.sub(port.t_mux)?)?)?)
}

/// Equation (4): `B = Σ b_k − g_max · (C − Σ r_k) + C · t_mux` (bits) — the switch buffer bound.
pub fn backlog_bound(port: &Port, flows: &[Tspec]) -> Result<Q, LoserError> {
    let g = g_max(port, flows)?;
    if port.t_mux > g {
        return Err(LoserError::MuxAfterInflexion);
    }
    let sb = sum(flows.iter().map(|f| f.bucket))?;
    let sr = sum(flows.iter().map(|f| f.rate))?;
    Ok(sb
        .sub(g.mul(port.rate.sub(sr)?)?)?
        .add(port.rate.mul(port.t_mux)?)?)
}

/// Equation (5): the rule-of-thumb backlog `B_est = Σ b_k + C · t_mux` (bits); `≥` equation (4).
pub fn backlog_estimate(port: &Port, flows: &[Tspec]) -> Result<Q, LoserError> {
    validate(port, flows)?;
    let sb = sum(flows.iter().map(|f| f.bucket))?;
    Ok(sb.add(port.rate.mul(port.t_mux)?)?)
}

/// Equation (6): the switch delay bound
/// `t_switch = Σ b_k / C − g_max · (1 − Σ r_k / C) + t_mux` (seconds).
pub fn delay_bound(port: &Port, flows: &[Tspec]) -> Result<Q, LoserError> {
    let g = g_max(port, flows)?;
    let sb = sum(flows.iter().map(|f| f.bucket))?;
    let sr = sum(flows.iter().map(|f| f.rate))?;
    let one_minus = Q::ONE.sub(sr.div(port.rate)?)?;
    Ok(sb.div(port.rate)?.sub(g.mul(one_minus)?)?.add(port.t_mux)?)
}

/// Equation (7): the delay estimator `t_est = Σ b_k / C + t_mux` (seconds); `≥` equation (6).
pub fn delay_estimate(port: &Port, flows: &[Tspec]) -> Result<Q, LoserError> {
    validate(port, flows)?;
    let sb = sum(flows.iter().map(|f| f.bucket))?;
    Ok(sb.div(port.rate)?.add(port.t_mux)?)
}

/// The generic curves behind the closed forms: `α = Σ α_k` and `β = β_{C, t_mux}`.
pub fn port_curves(
    port: &Port,
    flows: &[Tspec],
) -> Result<(ArrivalCurve, RateLatency), LoserError> {
    validate(port, flows)?;
    let curves = flows
        .iter()
        .map(|f| ArrivalCurve::tspec(port.rate, f.max_packet, f.rate, f.bucket))
        .collect::<Result<Vec<_>, _>>()?;
    let alpha = ArrivalCurve::sum(&curves)?.ok_or(LoserError::NoFlows)?;
    Ok((alpha, RateLatency::new(port.rate, port.t_mux)?))
}

/// Backlog bound by the generic vertical deviation (valid without the `t_mux ≤ g_max` condition).
pub fn backlog_bound_generic(port: &Port, flows: &[Tspec]) -> Result<Q, LoserError> {
    let (a, b) = port_curves(port, flows)?;
    Ok(curve::backlog_bound(&a, &b)?)
}

/// Delay bound by the generic horizontal deviation.
pub fn delay_bound_generic(port: &Port, flows: &[Tspec]) -> Result<Q, LoserError> {
    let (a, b) = port_curves(port, flows)?;
    Ok(curve::delay_bound(&a, &b)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn fast_ethernet() -> Port {
        // Seed INDEX note: effective rate 98.6 Mbit/s, t_mux = 45 µs.
        Port {
            rate: Q::int(98_600_000),
            t_mux: Q::micros(45),
        }
    }

    fn table3(ts_us: i64) -> Vec<Tspec> {
        [40_000_000, 32_000_000, 20_000_000]
            .iter()
            .map(|&r| Tspec::with_shaping_interval(Q::bytes(1514), Q::int(r), Q::micros(ts_us)))
            .collect::<Result<_, _>>()
            .unwrap()
    }

    #[test]
    fn table3_bucket_sizes() {
        // Seed 004 Table 3, Ts = 10 ms: C 51514, D 41514, E 26514 bytes.
        let f = table3(10_000);
        let bytes: Vec<i128> = f.iter().map(|t| t.bucket.ceil_bytes().unwrap()).collect();
        assert_eq!(bytes, vec![51514, 41514, 26514]);
    }

    #[test]
    fn reproduces_table4() {
        // Seed 004 Table 4: buffer bound = eq. (4) (KByte = 1024), t_max = eq. (6) + 80 µs, and
        // t_est = eq. (7) *without* the 80 µs (that is what the table's numbers show). The paper
        // rounds, so compare within 1%.
        let cases = [
            (10_000, 111.8, 9357.0, 9731.0),
            (1_000, 15.7, 1380.0, 1345.0),
            (100, 6.1, 582.0, 506.0),
        ];
        let p = fast_ethernet();
        for (ts, kb, tmax, test) in cases {
            let f = table3(ts);
            let b = backlog_bound(&p, &f).unwrap().to_f64() / 8.0 / 1024.0;
            let d = delay_bound(&p, &f).unwrap().to_f64() * 1e6 + 80.0;
            let e = delay_estimate(&p, &f).unwrap().to_f64() * 1e6;
            assert!((b - kb).abs() / kb < 0.01, "Ts={ts}: buffer {b} vs {kb}");
            assert!(
                (d - tmax).abs() / tmax < 0.01,
                "Ts={ts}: tmax {d} vs {tmax}"
            );
            assert!(
                (e - test).abs() / test < 0.01,
                "Ts={ts}: test {e} vs {test}"
            );
        }
    }

    #[test]
    fn preconditions_are_checked() {
        let p = fast_ethernet();
        let mut f = table3(1_000);
        f[0].rate = Q::int(60_000_000);
        assert_eq!(delay_bound(&p, &f), Err(LoserError::OverCapacity));
        assert_eq!(delay_bound(&p, &[]), Err(LoserError::NoFlows));
        let bad = Tspec {
            max_packet: Q::bytes(1514),
            rate: Q::int(1),
            bucket: Q::bytes(100),
        };
        assert_eq!(delay_bound(&p, &[bad]), Err(LoserError::BadTspec(0)));
        // Tiny buckets: g_max < t_mux.
        let tiny =
            Tspec::with_shaping_interval(Q::bytes(64), Q::int(1_000_000), Q::micros(1)).unwrap();
        assert_eq!(
            backlog_bound(&p, &[tiny]),
            Err(LoserError::MuxAfterInflexion)
        );
        assert!(backlog_bound_generic(&p, &[tiny]).is_ok());
    }

    fn arb_case() -> impl Strategy<Value = (Port, Vec<Tspec>)> {
        (
            1000i64..100_000,
            0i64..50,
            prop::collection::vec((1i64..2000, 0i64..400, 0i64..50_000), 1..6),
        )
            .prop_filter_map("capacity", |(c, tmux, fl)| {
                let port = Port {
                    rate: Q::int(c),
                    t_mux: Q::new(tmux as i128, 1000).ok()?,
                };
                let flows: Vec<Tspec> = fl
                    .into_iter()
                    .map(|(m, r, extra)| Tspec {
                        max_packet: Q::int(m),
                        rate: Q::int(r),
                        bucket: Q::int(m + extra),
                    })
                    .collect();
                validate(&port, &flows).ok()?;
                Some((port, flows))
            })
    }

    proptest! {
        #[test]
        fn eq6_equals_horizontal_deviation((port, flows) in arb_case()) {
            prop_assert_eq!(delay_bound(&port, &flows).unwrap(),
                            delay_bound_generic(&port, &flows).unwrap());
        }

        #[test]
        fn eq3_eq4_equal_vertical_deviation((port, flows) in arb_case()) {
            let generic = backlog_bound_generic(&port, &flows).unwrap();
            match backlog_bound(&port, &flows) {
                Ok(b) => {
                    prop_assert_eq!(b, generic);
                    prop_assert_eq!(backlog_bound_eq3(&port, &flows).unwrap(), generic);
                }
                Err(LoserError::MuxAfterInflexion) => {
                    prop_assert!(port.t_mux > g_max(&port, &flows).unwrap());
                }
                Err(e) => prop_assert!(false, "unexpected {e}"),
            }
        }

        #[test]
        fn estimates_are_upper_bounds((port, flows) in arb_case()) {
            prop_assert!(backlog_estimate(&port, &flows).unwrap()
                >= backlog_bound_generic(&port, &flows).unwrap());
            prop_assert!(delay_estimate(&port, &flows).unwrap()
                >= delay_bound_generic(&port, &flows).unwrap());
        }

        #[test]
        fn eq2_is_the_curve_breakpoint((port, flows) in arb_case()) {
            let f = flows[0];
            let a = ArrivalCurve::tspec(port.rate, f.max_packet, f.rate, f.bucket).unwrap();
            let g = inflexion_time(&port, &f).unwrap();
            let bps = a.breakpoints().unwrap();
            if g.is_positive() {
                prop_assert_eq!(bps, vec![g]);
            } else {
                prop_assert!(bps.is_empty());
            }
        }
    }
}
