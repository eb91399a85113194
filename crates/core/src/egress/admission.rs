//! The Controlled-Load buffer test of QSR §3.1: "when a new CL flow is to be added, the call
//! admission function checks if enough bandwidth is available on the link. Additionally, it also
//! checks if by adding this flow the probability of running out of buffers remains below an
//! acceptable threshold. This probability is computed based on the number of flows and their
//! associated token bucket depths. In the current implementation, a simple Gaussian
//! approximation is used." The bandwidth half is [`super::Port::add_flow`]'s; this module is the
//! buffer half, a pure function for the router's resource manager.
//!
//! **Model** (the paper gives only "a simple Gaussian approximation"; this is our reading,
//! written down so it can be argued with). Controlled-Load flows share the port's CL pool of `B`
//! bytes ([`super::PoolConfig::controlled_load`]). Flow *i* has token bucket depth `b_i`; a
//! conforming flow served at least at its rate `r_i` never holds more than about `b_i` in the
//! queue, and we take its occupancy at a random instant to be **independent of the other flows'
//! and uniform on `[0, b_i]`**: mean `b_i/2`, variance `b_i²/12`. The total occupancy `X = Σ X_i`
//! is then approximated by a normal of mean `μ = Σ b_i/2` and variance `σ² = Σ b_i²/12` (central
//! limit theorem: good for many flows of comparable depth, optimistic for few flows or one
//! dominant depth, since the true tail of a sum of uniforms is bounded at `Σ b_i` and the normal's
//! is not — but the *approximation* to `P(X > B)` can be above or below the truth near the mean).
//! The flows are admitted together when
//!
//! ```text
//!   P(X > B) ≈ 1 − Φ((B − μ)/σ) ≤ ε   ⟺   μ + z_ε·σ ≤ B,   z_ε = Φ⁻¹(1 − ε)
//! ```
//!
//! A set whose worst case fits, `Σ b_i ≤ B`, is always admitted (no overflow is possible at
//! all), whatever the approximation says. `z_ε` is computed with Acklam's rational approximation
//! of the normal quantile (relative error below 1.15 × 10⁻⁹ over the whole range; P. J. Acklam,
//! "An algorithm for computing the inverse normal cumulative distribution function", 2003),
//! written out here because it is twenty lines and no dependency the workspace has provides it.

use thiserror::Error;

/// Why the Controlled-Load buffer test could not be evaluated.
#[derive(Debug, Clone, Copy, PartialEq, Error)]
pub enum ClAdmissionError {
    /// The overflow probability is not strictly between 0 and 1.
    #[error("overflow probability {0} is outside (0, 1)")]
    BadEpsilon(f64),
}

/// The normal quantile `Φ⁻¹(p)` for `0 < p < 1` (Acklam's algorithm, see the module docs);
/// `None` outside `(0, 1)`.
pub fn normal_quantile(p: f64) -> Option<f64> {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    const P_LOW: f64 = 0.024_25;
    if !(p > 0.0 && p < 1.0) {
        return None;
    }
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    Some(if p < P_LOW {
        tail((-2.0 * p.ln()).sqrt())
    } else if p <= 1.0 - P_LOW {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    } else {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    })
}

/// Whether Controlled-Load flows of bucket depths `depths` (bytes, the admitted ones and the
/// candidate together) fit a CL pool of `pool_bytes` with overflow probability at most
/// `epsilon` under the Gaussian approximation of the module docs:
/// `Σ b_i/2 + z_ε·sqrt(Σ b_i²/12) ≤ B`, or `Σ b_i ≤ B`.
pub fn cl_buffer_admits(
    depths: &[u64],
    pool_bytes: u64,
    epsilon: f64,
) -> Result<bool, ClAdmissionError> {
    // `normal_quantile` refuses 1 − ε outside (0, 1), NaN included.
    let z = normal_quantile(1.0 - epsilon).ok_or(ClAdmissionError::BadEpsilon(epsilon))?;
    let worst: u128 = depths.iter().map(|&b| u128::from(b)).sum();
    if worst <= u128::from(pool_bytes) {
        return Ok(true);
    }
    // f64 is exact for depths below 2⁵³ bytes; beyond, the relative error is 10⁻¹⁶.
    let mean: f64 = depths.iter().map(|&b| b as f64 / 2.0).sum();
    let variance: f64 = depths.iter().map(|&b| (b as f64) * (b as f64) / 12.0).sum();
    Ok(mean + z * variance.sqrt() <= pool_bytes as f64)
}

/// The Gaussian estimate of `P(Σ occupancy > B)` for the depths `depths` and a pool of
/// `pool_bytes` (0 when `Σ b_i ≤ B`): `1 − Φ((B − μ)/σ)`, with `Φ` from `erfc` by
/// Abramowitz & Stegun's approximation 7.1.26 (absolute error below 1.5 × 10⁻⁷) — for reports, not for the decision, which [`cl_buffer_admits`] makes on the
/// quantile.
pub fn cl_overflow_probability(depths: &[u64], pool_bytes: u64) -> f64 {
    let worst: u128 = depths.iter().map(|&b| u128::from(b)).sum();
    if worst <= u128::from(pool_bytes) {
        return 0.0;
    }
    let mean: f64 = depths.iter().map(|&b| b as f64 / 2.0).sum();
    let sd = depths
        .iter()
        .map(|&b| (b as f64) * (b as f64) / 12.0)
        .sum::<f64>()
        .sqrt();
    let x = (pool_bytes as f64 - mean) / sd;
    // 1 − Φ(x) = erfc(x/√2)/2.
    erfc(x / std::f64::consts::SQRT_2) / 2.0
}

/// `erfc(x)` (Abramowitz & Stegun 7.1.26, extended to negative `x` by symmetry).
fn erfc(x: f64) -> f64 {
    let t = 1.0 / (1.0 + 0.327_591_1 * x.abs());
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let tail = poly * (-x * x).exp();
    if x >= 0.0 {
        tail
    } else {
        2.0 - tail
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_match_the_tables() {
        // Standard normal table values (to 6 decimals).
        for (p, z) in [
            (0.5, 0.0),
            (0.841_344_746, 1.0),
            (0.975, 1.959_964),
            (0.99, 2.326_348),
            (0.999, 3.090_232),
            (1.0 - 1e-6, 4.753_424),
            (0.01, -2.326_348),
        ] {
            let got = normal_quantile(p).expect("inside (0, 1)");
            assert!((got - z).abs() < 1e-6, "Φ⁻¹({p}) = {got}, table {z}");
        }
        assert_eq!(normal_quantile(0.0), None);
        assert_eq!(normal_quantile(1.0), None);
        assert_eq!(normal_quantile(f64::NAN), None);
    }

    /// Twelve flows of 12,000-byte buckets: μ = 12 × 6,000 = 72,000 bytes; σ² = 12 × 12,000²/12
    /// = 1.44 × 10⁸, σ = 12,000 bytes. At ε = 10⁻³, z = 3.090232: μ + zσ = 109,082.8 bytes.
    /// A 109,083-byte pool admits them, a 109,082-byte one does not — far below the 144,000
    /// bytes the worst case would book.
    #[test]
    fn gaussian_test_by_hand() {
        let depths = [12_000u64; 12];
        assert_eq!(cl_buffer_admits(&depths, 109_083, 1e-3), Ok(true));
        assert_eq!(cl_buffer_admits(&depths, 109_082, 1e-3), Ok(false));
        // ε = 2.5 %: z = 1.959964, μ + zσ = 95,519.6.
        assert_eq!(cl_buffer_admits(&depths, 95_520, 0.025), Ok(true));
        assert_eq!(cl_buffer_admits(&depths, 95_519, 0.025), Ok(false));
        // At the boundary the estimated overflow probability is ε.
        let p = cl_overflow_probability(&depths, 109_083);
        assert!((p - 1e-3).abs() < 1e-5, "{p}");
        // ε = 1/2: z = 0, the mean alone (72,000) must fit.
        assert_eq!(cl_buffer_admits(&depths, 72_000, 0.5), Ok(true));
        assert_eq!(cl_buffer_admits(&depths, 71_999, 0.5), Ok(false));
    }

    /// Mixed depths: 4,000, 8,000 and 24,000 bytes: μ = 18,000; σ² = (16 + 64 + 576) × 10⁶ / 12
    /// = 54.666… × 10⁶, σ = 7,393.7 bytes. ε = 1 %: z = 2.326348, μ + zσ = 35,200.3 bytes.
    #[test]
    fn mixed_depths_by_hand() {
        let depths = [4_000u64, 8_000, 24_000];
        assert_eq!(cl_buffer_admits(&depths, 35_201, 0.01), Ok(true));
        assert_eq!(cl_buffer_admits(&depths, 35_200, 0.01), Ok(false));
        // A fourth flow of 4,000 bytes: μ = 20,000, σ² = 672 × 10⁶/12 = 56 × 10⁶, σ = 7,483.3;
        // μ + zσ = 37,408.8: refused on the 35,201-byte pool that took the first three.
        assert_eq!(
            cl_buffer_admits(&[4_000, 8_000, 24_000, 4_000], 35_201, 0.01),
            Ok(false)
        );
    }

    #[test]
    fn worst_case_fit_is_always_admitted_and_bad_epsilon_is_refused() {
        // One flow: μ + zσ = 500 + 3.09 × 288.7 = 1,392 > 1,000, but Σ b = 1,000 fits.
        assert_eq!(cl_buffer_admits(&[1_000], 1_000, 1e-3), Ok(true));
        assert_eq!(cl_buffer_admits(&[1_000], 999, 1e-3), Ok(false));
        assert_eq!(cl_buffer_admits(&[], 0, 1e-3), Ok(true));
        assert_eq!(cl_overflow_probability(&[1_000], 1_000), 0.0);
        assert_eq!(
            cl_buffer_admits(&[1_000], 1_000, 0.0),
            Err(ClAdmissionError::BadEpsilon(0.0))
        );
        assert_eq!(
            cl_buffer_admits(&[1_000], 1_000, 1.0),
            Err(ClAdmissionError::BadEpsilon(1.0))
        );
    }
}
