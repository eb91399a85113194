//! Exact rational arithmetic for network-calculus bounds.
//!
//! Why exact rationals and not `f64`: a delay or backlog bound that is used for admission must never
//! come out *below* the true value, and floating point rounds either way (e.g. `0.1 + 0.2`), so an
//! `f64` bound can be a few ulps too small and admit a flow that violates its guarantee. Every
//! quantity here is an `i128` numerator over a positive `i128` denominator, kept in lowest terms.
//! Every operation is checked: an overflow is reported as [`ArithError::Overflow`], never wrapped or
//! rounded. Comparison uses a continued-fraction walk, so it is exact and cannot overflow.
//!
//! Units used by the crate: time in **seconds**, data in **bits**, rates in **bit/s**.
//! Conversions to display units (µs, bytes) round *up* ([`Q::ceil`]), so a printed bound is still
//! a bound.

use std::cmp::Ordering;
use std::fmt;

/// Errors from rational arithmetic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ArithError {
    /// An intermediate value did not fit in `i128`.
    #[error("arithmetic overflow in exact rational computation")]
    Overflow,
    /// A division by zero (or a rational with a zero denominator) was requested.
    #[error("division by zero")]
    DivisionByZero,
}

/// An exact rational number `num / den` with `den > 0` and `gcd(num, den) == 1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Q {
    num: i128,
    den: i128,
}

fn gcd(a: i128, b: i128) -> i128 {
    // Invariant: callers pass fields of a `Q` or values already checked by `Q::new`, never
    // i128::MIN, so `unsigned_abs` fits and the result (≤ max(|a|, |b|)) fits in i128.
    let (a, b) = (a.unsigned_abs(), b.unsigned_abs());
    if a == 1 || b == 1 {
        return 1;
    }
    match (u64::try_from(a), u64::try_from(b)) {
        (Ok(a), Ok(b)) => i128::from(binary_gcd_u64(a, b)),
        _ => binary_gcd_u128(a, b) as i128,
    }
}

/// Stein's binary gcd: shifts and subtractions only. Much faster than Euclid here because an
/// `i128` remainder is a software division.
fn binary_gcd_u64(mut a: u64, mut b: u64) -> u64 {
    if a == 0 || b == 0 {
        return a | b;
    }
    let shift = (a | b).trailing_zeros();
    a >>= a.trailing_zeros();
    loop {
        b >>= b.trailing_zeros();
        if a > b {
            std::mem::swap(&mut a, &mut b);
        }
        b -= a;
        if b == 0 {
            return a << shift;
        }
    }
}

/// [`binary_gcd_u64`] for values that do not fit in 64 bits.
fn binary_gcd_u128(mut a: u128, mut b: u128) -> u128 {
    if a == 0 || b == 0 {
        return a | b;
    }
    let shift = (a | b).trailing_zeros();
    a >>= a.trailing_zeros();
    loop {
        b >>= b.trailing_zeros();
        if a > b {
            std::mem::swap(&mut a, &mut b);
        }
        b -= a;
        if b == 0 {
            return a << shift;
        }
        if let (Ok(x), Ok(y)) = (u64::try_from(a), u64::try_from(b)) {
            return u128::from(binary_gcd_u64(x, y)) << shift;
        }
    }
}

/// `a / g` for a divisor `g > 0` of `a`, in 64 bits when both fit (a hardware division).
fn div_exact(a: i128, g: i128) -> i128 {
    if g == 1 {
        return a;
    }
    match (i64::try_from(a), i64::try_from(g)) {
        (Ok(a), Ok(g)) => i128::from(a / g),
        _ => a / g,
    }
}

// The arithmetic methods are checked and return `Result`, so they cannot be `std::ops` impls;
// the plain names keep formulas readable.
#[allow(clippy::should_implement_trait)]
impl Q {
    /// Zero.
    pub const ZERO: Q = Q { num: 0, den: 1 };
    /// One.
    pub const ONE: Q = Q { num: 1, den: 1 };

    /// `num / den` in lowest terms.
    pub fn new(num: i128, den: i128) -> Result<Q, ArithError> {
        if den == 0 {
            return Err(ArithError::DivisionByZero);
        }
        if num == i128::MIN || den == i128::MIN {
            return Err(ArithError::Overflow);
        }
        if den == 1 {
            return Ok(Q { num, den });
        }
        let g = gcd(num, den).max(1);
        let (mut n, mut d) = (div_exact(num, g), div_exact(den, g));
        if d < 0 {
            n = -n;
            d = -d;
        }
        Ok(Q { num: n, den: d })
    }

    /// The integer `n`.
    pub const fn int(n: i64) -> Q {
        Q {
            num: n as i128,
            den: 1,
        }
    }

    /// `n` microseconds, in seconds.
    pub fn micros(n: i64) -> Q {
        // Invariant: the denominator is non-zero and an i64 numerator is never i128::MIN, the only
        // inputs `Q::new` rejects.
        Q::new(n as i128, 1_000_000).expect("10^6 is a valid denominator")
    }

    /// `n` bytes, in bits.
    pub const fn bytes(n: i64) -> Q {
        Q {
            num: n as i128 * 8,
            den: 1,
        }
    }

    /// Numerator (sign carrier).
    pub const fn numer(self) -> i128 {
        self.num
    }

    /// Denominator (always positive).
    pub const fn denom(self) -> i128 {
        self.den
    }

    /// `self + rhs`.
    pub fn add(self, rhs: Q) -> Result<Q, ArithError> {
        if self.den == rhs.den {
            let n = self.num.checked_add(rhs.num).ok_or(ArithError::Overflow)?;
            return Q::new(n, self.den);
        }
        if self.den == 1 || rhs.den == 1 {
            // a + c/d = (a·d + c)/d is in lowest terms when c/d is: gcd(a·d + c, d) = gcd(c, d).
            let (int, frac) = if self.den == 1 {
                (self, rhs)
            } else {
                (rhs, self)
            };
            let n = int
                .num
                .checked_mul(frac.den)
                .and_then(|x| x.checked_add(frac.num))
                .ok_or(ArithError::Overflow)?;
            return Q::checked(n, frac.den);
        }
        // Knuth, TAOCP 4.5.1: with g = gcd(b, d) and t = a·(d/g) + c·(b/g), the sum is
        // (t/g2) / ((b/g)·(d/g2)) with g2 = gcd(t, g), already in lowest terms.
        let g = gcd(self.den, rhs.den);
        let (a, b) = (div_exact(self.den, g), div_exact(rhs.den, g));
        let n1 = self.num.checked_mul(b).ok_or(ArithError::Overflow)?;
        let n2 = rhs.num.checked_mul(a).ok_or(ArithError::Overflow)?;
        let t = n1.checked_add(n2).ok_or(ArithError::Overflow)?;
        if t == 0 {
            return Ok(Q::ZERO);
        }
        if t == i128::MIN {
            return Err(ArithError::Overflow);
        }
        let g2 = gcd(t, g);
        let d = a
            .checked_mul(div_exact(rhs.den, g2))
            .ok_or(ArithError::Overflow)?;
        Q::checked(div_exact(t, g2), d)
    }

    /// `num / den` already in lowest terms with `den > 0`; only `i128::MIN` is refused.
    fn checked(num: i128, den: i128) -> Result<Q, ArithError> {
        if num == i128::MIN {
            return Err(ArithError::Overflow);
        }
        Ok(Q { num, den })
    }

    /// `self - rhs`.
    pub fn sub(self, rhs: Q) -> Result<Q, ArithError> {
        self.add(rhs.neg())
    }

    /// `-self` (cannot overflow: the numerator is never `i128::MIN`).
    pub const fn neg(self) -> Q {
        Q {
            num: -self.num,
            den: self.den,
        }
    }

    /// `self * rhs`.
    pub fn mul(self, rhs: Q) -> Result<Q, ArithError> {
        if self.num == 0 || rhs.num == 0 {
            return Ok(Q::ZERO);
        }
        // (a/b)·(c/d) = ((a/g1)·(c/g2)) / ((b/g2)·(d/g1)) with g1 = gcd(a, d), g2 = gcd(c, b) is
        // in lowest terms when both factors are.
        let g1 = gcd(self.num, rhs.den);
        let g2 = gcd(rhs.num, self.den);
        let n = div_exact(self.num, g1)
            .checked_mul(div_exact(rhs.num, g2))
            .ok_or(ArithError::Overflow)?;
        let d = div_exact(self.den, g2)
            .checked_mul(div_exact(rhs.den, g1))
            .ok_or(ArithError::Overflow)?;
        Q::checked(n, d)
    }

    /// `self / rhs`.
    pub fn div(self, rhs: Q) -> Result<Q, ArithError> {
        if rhs.num == 0 {
            return Err(ArithError::DivisionByZero);
        }
        self.mul(Q {
            num: rhs.den * rhs.num.signum(),
            den: rhs.num.abs(),
        })
    }

    /// True if `self < 0`.
    pub const fn is_negative(self) -> bool {
        self.num < 0
    }

    /// True if `self > 0`.
    pub const fn is_positive(self) -> bool {
        self.num > 0
    }

    /// `max(self, 0)`.
    pub fn pos(self) -> Q {
        if self.num < 0 {
            Q::ZERO
        } else {
            self
        }
    }

    /// Smallest integer `>= self` (rounding policy for printed bounds).
    pub fn ceil(self) -> i128 {
        let q = self.num.div_euclid(self.den);
        if self.num.rem_euclid(self.den) == 0 {
            q
        } else {
            q + 1
        }
    }

    /// The smallest multiple of `1/den` that is `>= self` (upward rounding to a grid, used to stop
    /// denominators from growing along long paths; rounding a delay up keeps every bound sound).
    pub fn round_up(self, den: i128) -> Result<Q, ArithError> {
        if den <= 0 {
            return Err(ArithError::DivisionByZero);
        }
        if self.den <= den && den % self.den == 0 {
            return Ok(self);
        }
        let scaled = self.mul(Q::new(den, 1)?)?.ceil();
        Q::new(scaled, den)
    }

    /// Largest integer `<= self`.
    pub fn floor(self) -> i128 {
        self.num.div_euclid(self.den)
    }

    /// Approximate value for display only; never feed it back into a bound.
    pub fn to_f64(self) -> f64 {
        self.num as f64 / self.den as f64
    }

    /// A time in seconds, as whole microseconds rounded up.
    pub fn ceil_micros(self) -> Result<i128, ArithError> {
        Ok(self.mul(Q::int(1_000_000))?.ceil())
    }

    /// A quantity in bits, as whole bytes rounded up.
    pub fn ceil_bytes(self) -> Result<i128, ArithError> {
        Ok(self.div(Q::int(8))?.ceil())
    }
}

impl Ord for Q {
    fn cmp(&self, other: &Q) -> Ordering {
        if self.den == other.den {
            return self.num.cmp(&other.num);
        }
        // Cross-multiplication when it fits (denominators are positive), else the walk below.
        if let (Some(l), Some(r)) = (
            self.num.checked_mul(other.den),
            other.num.checked_mul(self.den),
        ) {
            return l.cmp(&r);
        }
        self.cmp_continued_fraction(other)
    }
}

impl Q {
    fn cmp_continued_fraction(&self, other: &Q) -> Ordering {
        // Exact, overflow-free comparison by continued fractions: compare integer parts, then the
        // reciprocals of the fractional parts in reverse order.
        let (mut an, mut ad, mut bn, mut bd) = (self.num, self.den, other.num, other.den);
        let mut flip = false;
        loop {
            let (aq, ar) = (an.div_euclid(ad), an.rem_euclid(ad));
            let (bq, br) = (bn.div_euclid(bd), bn.rem_euclid(bd));
            let ord = aq.cmp(&bq);
            if ord != Ordering::Equal {
                return if flip { ord.reverse() } else { ord };
            }
            let ord = match (ar == 0, br == 0) {
                (true, true) => return Ordering::Equal,
                (true, false) => Ordering::Less,
                (false, true) => Ordering::Greater,
                (false, false) => {
                    // a = q + ar/ad, b = q + br/bd; compare ar/ad vs br/bd == compare bd/br vs ad/ar
                    // reversed.
                    (an, ad, bn, bd) = (ad, ar, bd, br);
                    flip = !flip;
                    continue;
                }
            };
            return if flip { ord.reverse() } else { ord };
        }
    }
}

impl PartialOrd for Q {
    fn partial_cmp(&self, other: &Q) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for Q {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.den == 1 {
            write!(f, "{}", self.num)
        } else {
            write!(f, "{}/{}", self.num, self.den)
        }
    }
}

/// Sum of rationals, checked.
pub fn sum<I: IntoIterator<Item = Q>>(items: I) -> Result<Q, ArithError> {
    items.into_iter().try_fold(Q::ZERO, Q::add)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn normalizes_sign_and_gcd() {
        let q = Q::new(6, -4).unwrap();
        assert_eq!((q.numer(), q.denom()), (-3, 2));
        assert_eq!(Q::new(1, 0), Err(ArithError::DivisionByZero));
    }

    #[test]
    fn exact_where_floats_are_not() {
        let a = Q::new(1, 10).unwrap().add(Q::new(2, 10).unwrap()).unwrap();
        assert_eq!(a, Q::new(3, 10).unwrap());
    }

    #[test]
    fn overflow_is_an_error() {
        let big = Q::new(i128::MAX / 2, 1).unwrap();
        assert_eq!(big.mul(Q::int(4)), Err(ArithError::Overflow));
        assert_eq!(
            big.add(big).and_then(|x| x.add(big)),
            Err(ArithError::Overflow)
        );
    }

    #[test]
    fn ceil_rounds_up_and_floor_down() {
        let q = Q::new(-7, 2).unwrap();
        assert_eq!((q.ceil(), q.floor()), (-3, -4));
        assert_eq!(Q::new(7, 2).unwrap().ceil(), 4);
        assert_eq!(Q::int(5).ceil(), 5);
        assert_eq!(Q::new(1, 3_000_000).unwrap().ceil_micros().unwrap(), 1);
        let third = Q::new(1, 3).unwrap();
        assert_eq!(third.round_up(1000).unwrap(), Q::new(334, 1000).unwrap());
        assert_eq!(
            third.neg().round_up(1000).unwrap(),
            Q::new(-333, 1000).unwrap()
        );
        assert_eq!(
            Q::new(1, 4).unwrap().round_up(1000).unwrap(),
            Q::new(1, 4).unwrap()
        );
    }

    /// The textbook forms the fast paths replace: Euclid's gcd, and normalising the full
    /// cross products.
    fn euclid(mut a: i128, mut b: i128) -> i128 {
        (a, b) = (a.abs(), b.abs());
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a
    }

    fn reference_add(x: Q, y: Q) -> Option<Q> {
        let n = x
            .num
            .checked_mul(y.den)?
            .checked_add(y.num.checked_mul(x.den)?)?;
        Q::new(n, x.den.checked_mul(y.den)?).ok()
    }

    fn reference_mul(x: Q, y: Q) -> Option<Q> {
        Q::new(x.num.checked_mul(y.num)?, x.den.checked_mul(y.den)?).ok()
    }

    /// Numerators and denominators that exercise the 64-bit and the 128-bit gcd paths and the
    /// shared-denominator and integer fast paths of `add`.
    fn any_q() -> impl Strategy<Value = Q> {
        let den = prop_oneof![
            Just(1i128),
            Just(1_000_000_000_000i128),
            1i128..1_000_000,
            1i128..(1i128 << 62),
            1i128..(1i128 << 90),
        ];
        let num = prop_oneof![
            -1000i128..1000,
            -(1i128 << 62)..(1i128 << 62),
            -(1i128 << 90)..(1i128 << 90)
        ];
        (num, den).prop_map(|(n, d)| Q::new(n, d).unwrap())
    }

    #[test]
    fn gcd_of_extremes() {
        assert_eq!(gcd(0, 0), 0);
        assert_eq!(gcd(0, -12), 12);
        assert_eq!(gcd(i128::MAX, 1), 1);
        assert_eq!(gcd(1i128 << 100, 3i128 << 98), 1i128 << 98);
        assert_eq!(gcd(i128::MAX, i128::MAX - 1), 1);
    }

    proptest! {
        #[test]
        fn gcd_matches_euclid(a in any::<i128>().prop_filter("not MIN", |a| *a != i128::MIN),
                              b in -(1i128 << 70)..(1i128 << 70), small in -100_000i128..100_000) {
            prop_assert_eq!(gcd(a, b), euclid(a, b));
            prop_assert_eq!(gcd(small, b), euclid(small, b));
            prop_assert_eq!(gcd(a.wrapping_mul(6), small * 6), euclid(a.wrapping_mul(6), small * 6));
        }

        #[test]
        fn fast_arithmetic_matches_reference(x in any_q(), y in any_q()) {
            // Where the reference does not overflow, the results are equal and normalised; where
            // it does, the fast path may still fit but must then be the exact value.
            let check_normal = |q: Q| q.den > 0 && euclid(q.num, q.den) == 1;
            match (x.add(y), reference_add(x, y)) {
                (Ok(a), Some(b)) => prop_assert_eq!(a, b),
                (Ok(a), None) => prop_assert!(check_normal(a) && a.sub(y).ok() == Some(x)),
                (Err(_), Some(b)) => prop_assert!(false, "fast add overflowed, exact is {b}"),
                (Err(_), None) => {}
            }
            match (x.mul(y), reference_mul(x, y)) {
                (Ok(a), Some(b)) => prop_assert_eq!(a, b),
                (Ok(a), None) => prop_assert!(check_normal(a)),
                (Err(_), Some(b)) => prop_assert!(false, "fast mul overflowed, exact is {b}"),
                (Err(_), None) => {}
            }
        }

        #[test]
        fn cmp_matches_continued_fraction(x in any_q(), y in any_q()) {
            prop_assert_eq!(x.cmp(&y), x.cmp_continued_fraction(&y));
            prop_assert_eq!(y.cmp(&x), y.cmp_continued_fraction(&x));
            prop_assert_eq!(x.cmp(&x), Ordering::Equal);
        }

        #[test]
        fn cmp_matches_cross_multiplication(a in -1000i128..1000, b in 1i128..1000,
                                            c in -1000i128..1000, d in 1i128..1000) {
            let x = Q::new(a, b).unwrap();
            let y = Q::new(c, d).unwrap();
            prop_assert_eq!(x.cmp(&y), (a * d).cmp(&(c * b)));
        }

        #[test]
        fn cmp_exact_for_huge_values(a in 1i128..i128::MAX / 4, b in 1i128..i128::MAX / 4) {
            let x = Q::new(a, b).unwrap();
            let y = Q::new(a + 1, b).unwrap();
            prop_assert!(x < y);
            prop_assert!(y > x);
        }

        #[test]
        fn field_laws(a in -1000i128..1000, b in 1i128..1000, c in -1000i128..1000, d in 1i128..1000) {
            let x = Q::new(a, b).unwrap();
            let y = Q::new(c, d).unwrap();
            prop_assert_eq!(x.add(y).unwrap().sub(y).unwrap(), x);
            if c != 0 {
                prop_assert_eq!(x.mul(y).unwrap().div(y).unwrap(), x);
            }
        }
    }
}
