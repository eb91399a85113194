//! Exact parsing of the unit strings used in network files (`"98.6mbit"`, `"45us"`, `"128KiB"`).
//!
//! Why not `rtlan_core::units`: this crate sits below `core` (DESIGN.md §2) and needs exact
//! rationals — `"98.6mbit"` must become exactly 98 600 000 bit/s and `"0.1ms"` exactly 1/10 000 s,
//! because every bound computed from them must be a true upper bound.

use crate::rational::{ArithError, Q};

/// Errors from unit parsing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnitError {
    /// The number part is missing or malformed.
    #[error("`{0}` does not start with a decimal number")]
    BadNumber(String),
    /// The unit suffix is not one this kind of quantity accepts.
    #[error("unknown unit `{unit}` (expected one of {expected})")]
    BadUnit {
        /// The suffix found.
        unit: String,
        /// The accepted suffixes.
        expected: &'static str,
    },
    /// The value does not fit the exact arithmetic.
    #[error(transparent)]
    Arith(#[from] ArithError),
}

/// Splits `"98.6mbit"` into the exact decimal 98.6 and the lowercase suffix `"mbit"`.
fn split(text: &str) -> Result<(Q, String), UnitError> {
    let t = text.trim();
    let end = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(end);
    let bad = || UnitError::BadNumber(text.to_string());
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    if int.is_empty() && frac.is_empty() || frac.contains('.') || frac.len() > 18 || int.len() > 18
    {
        return Err(bad());
    }
    let int_v: i128 = if int.is_empty() {
        0
    } else {
        int.parse().map_err(|_| bad())?
    };
    let mut value = Q::new(int_v, 1)?;
    if !frac.is_empty() {
        let f: i128 = frac.parse().map_err(|_| bad())?;
        value = value.add(Q::new(f, 10i128.pow(frac.len() as u32))?)?;
    }
    Ok((value, unit.trim().to_ascii_lowercase()))
}

fn scaled(
    text: &str,
    table: &[(&str, i128, i128)],
    expected: &'static str,
) -> Result<Q, UnitError> {
    let (v, unit) = split(text)?;
    for &(name, num, den) in table {
        if unit == name {
            return Ok(v.mul(Q::new(num, den)?)?);
        }
    }
    Err(UnitError::BadUnit { unit, expected })
}

/// A rate in bit/s: `bit`, `kbit`, `mbit`, `gbit` (also `bps`, `kbps`, `mbps`, `gbps`; powers of 1000).
pub fn parse_rate(text: &str) -> Result<Q, UnitError> {
    scaled(
        text,
        &[
            ("bit", 1, 1),
            ("bps", 1, 1),
            ("kbit", 1_000, 1),
            ("kbps", 1_000, 1),
            ("mbit", 1_000_000, 1),
            ("mbps", 1_000_000, 1),
            ("gbit", 1_000_000_000, 1),
            ("gbps", 1_000_000_000, 1),
        ],
        "bit, kbit, mbit, gbit",
    )
}

/// A duration in seconds: `ns`, `us` (or `µs`), `ms`, `s`.
pub fn parse_duration(text: &str) -> Result<Q, UnitError> {
    scaled(
        text,
        &[
            ("ns", 1, 1_000_000_000),
            ("us", 1, 1_000_000),
            ("µs", 1, 1_000_000),
            ("ms", 1, 1_000),
            ("s", 1, 1),
        ],
        "ns, us, ms, s",
    )
}

/// A size in bits: `B`, `KB`/`MB` (powers of 1000), `KiB`/`MiB` (powers of 1024).
pub fn parse_size(text: &str) -> Result<Q, UnitError> {
    scaled(
        text,
        &[
            ("b", 8, 1),
            ("kb", 8_000, 1),
            ("kib", 8 * 1024, 1),
            ("mb", 8_000_000, 1),
            ("mib", 8 * 1024 * 1024, 1),
        ],
        "B, KB, KiB, MB, MiB",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_values() {
        assert_eq!(parse_rate("98.6mbit").unwrap(), Q::int(98_600_000));
        assert_eq!(parse_rate("512kbit").unwrap(), Q::int(512_000));
        assert_eq!(parse_duration("45us").unwrap(), Q::micros(45));
        assert_eq!(parse_duration("0.1ms").unwrap(), Q::micros(100));
        assert_eq!(parse_size("128KiB").unwrap(), Q::bytes(131_072));
        assert_eq!(parse_size("51514B").unwrap(), Q::bytes(51_514));
    }

    #[test]
    fn bad_input() {
        assert!(matches!(parse_rate("fast"), Err(UnitError::BadNumber(_))));
        assert!(matches!(
            parse_rate("1.2.3mbit"),
            Err(UnitError::BadNumber(_))
        ));
        assert!(matches!(
            parse_rate("10furlong"),
            Err(UnitError::BadUnit { .. })
        ));
        assert!(matches!(
            parse_duration("10"),
            Err(UnitError::BadUnit { .. })
        ));
        assert!(matches!(
            parse_size("99999999999999999999999B"),
            Err(UnitError::BadNumber(_))
        ));
    }
}
