//! The one unit grammar of rtlan (`docs/units.md`): rates (`"100mbit"`, `"12.5Mbit/s"`), sizes
//! (`"128KiB"`, `"64kB"`) and durations (`"45us"`, `"0.1ms"`), read by every file reader and every
//! command-line flag.
//!
//! Values are exact: the number is read as a decimal into a rational ([`Q`]), so `"98.6mbit"` is
//! exactly 98 600 000 bit/s and `"0.1ms"` exactly 1/10 000 s. The network calculus needs this
//! (Löser/Härtig, "Low-latency hard real-time communication over switched Ethernet", §2.2: a delay
//! bound computed from a rounded rate is no longer an upper bound); the integer conversions
//! ([`parse_rate`], [`parse_duration`], [`parse_size`]) refuse what is not whole instead of
//! rounding it.
//!
//! Spellings that mean bytes to `tc(8)` and bits to most readers (`mbps`, `kb`, a bare `k`) are
//! refused with a message that names both readings. Written by hand because no crate offers this
//! refusal or exact decimals.

use std::time::Duration;

use rtlan_calculus::Q;

/// A value that could not be read as a rate, a size or a duration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnitError {
    /// The text does not start with a decimal number (digits with at most one `.`).
    #[error("`{0}` does not start with a decimal number")]
    NoNumber(String),
    /// A number without a unit.
    #[error(
        "`{text}` has no unit: write it as `{text}{example}` or see docs/units.md ({expected})"
    )]
    NoUnit {
        /// The whole text.
        text: String,
        /// The most likely intended unit.
        example: &'static str,
        /// The accepted units.
        expected: &'static str,
    },
    /// The suffix is not one we know.
    #[error("`{text}`: unknown unit `{unit}` (expected one of {expected})")]
    UnknownUnit {
        /// The whole text.
        text: String,
        /// The suffix that was not recognised.
        unit: String,
        /// The accepted suffixes.
        expected: &'static str,
    },
    /// A spelling that `tc(8)` reads one way and most readers another.
    #[error("`{text}` is ambiguous: tc(8) reads it as {tc_reading}, most readers as {other_reading}; write {suggestion}")]
    Ambiguous {
        /// The whole text.
        text: String,
        /// What `tc(8)` makes of it.
        tc_reading: String,
        /// What most people make of it.
        other_reading: String,
        /// Unambiguous spellings of both readings.
        suggestion: String,
    },
    /// The value does not fit the type it is converted to (or the exact arithmetic).
    #[error("`{0}` is out of range")]
    OutOfRange(String),
    /// A rate of zero where a rate must be positive.
    #[error("`{0}`: a rate must be greater than zero")]
    Zero(String),
    /// The value is not a whole number of the unit it is converted to.
    #[error("`{text}` is not a whole number of {unit}")]
    NotWhole {
        /// The whole text.
        text: String,
        /// The unit it must be a whole number of (`bit/s`, `ns`, `bytes`).
        unit: &'static str,
    },
}

/// The accepted rate units, for messages.
pub const RATE_UNITS: &str =
    "bit, kbit, mbit, gbit, tbit (any case, optionally with /s), B/s, kB/s, MB/s, GB/s";
/// The accepted size units, for messages.
pub const SIZE_UNITS: &str = "B, kB (or KB), MB, GB, KiB, MiB, GiB";
/// The accepted duration units, for messages.
pub const DURATION_UNITS: &str = "ns, us (or µs), ms, s";

/// The decimal number at the start of `text` as an exact rational, and the rest (trimmed).
fn split(text: &str) -> Result<(Q, &str), UnitError> {
    let t = text.trim();
    let end = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(end);
    let bad = || UnitError::NoNumber(text.to_string());
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    if (int.is_empty() && frac.is_empty()) || frac.contains('.') {
        return Err(bad());
    }
    // 20 integer digits hold every u64; with 18 decimals, int·10^18 + frac stays below 10^38,
    // inside i128.
    if int.len() > 20 || frac.len() > 18 {
        return Err(UnitError::OutOfRange(text.to_string()));
    }
    let int_v: i128 = if int.is_empty() {
        0
    } else {
        int.parse().map_err(|_| bad())?
    };
    let frac_v: i128 = if frac.is_empty() {
        0
    } else {
        frac.parse().map_err(|_| bad())?
    };
    let scale = 10i128.pow(frac.len() as u32);
    let value = Q::new(int_v * scale + frac_v, scale)
        .map_err(|_| UnitError::OutOfRange(text.to_string()))?;
    Ok((value, unit.trim()))
}

fn times(text: &str, v: Q, num: i128, den: i128) -> Result<Q, UnitError> {
    let range = |_| UnitError::OutOfRange(text.to_string());
    v.mul(Q::new(num, den).map_err(range)?).map_err(range)
}

/// Decimal prefixes of rates: the letter and its power of ten.
const PREFIXES: [(&str, i128); 5] = [
    ("", 1),
    ("k", 1_000),
    ("m", 1_000_000),
    ("g", 1_000_000_000),
    ("t", 1_000_000_000_000),
];

/// An exact rate in bit/s (may be zero or fractional): `"12.5mbit"` is 12 500 000.
pub fn exact_rate(text: &str) -> Result<Q, UnitError> {
    let (v, unit) = split(text)?;
    if unit.is_empty() {
        return Err(UnitError::NoUnit {
            text: text.trim().to_string(),
            example: "bit",
            expected: RATE_UNITS,
        });
    }
    let lower = unit.to_ascii_lowercase();
    for (p, mult) in PREFIXES {
        let Some(rest) = lower.strip_prefix(p) else {
            continue;
        };
        if rest == "bit" || rest == "bit/s" {
            return times(text, v, mult, 1);
        }
        if rest == "bps" {
            return Err(ambiguous_bps(text, v, p)?);
        }
    }
    // Byte rates: the `B` must be upper case, or it would be the bit of `kb/s`.
    for (p, mult) in [
        ("", 1),
        ("k", 1_000),
        ("K", 1_000),
        ("M", 1_000_000),
        ("G", 1_000_000_000),
    ] {
        if unit == format!("{p}B/s") {
            return times(text, v, mult * 8, 1);
        }
    }
    for (p, _) in PREFIXES {
        if lower == format!("{p}b/s") {
            return Err(ambiguous_bps(text, v, p)?);
        }
    }
    Err(UnitError::UnknownUnit {
        text: text.trim().to_string(),
        unit: unit.to_string(),
        expected: RATE_UNITS,
    })
}

/// The refusal of `bps`-style rates (`12.5mbps`, `12.5mb/s`): bytes to tc(8), bits to most.
fn ambiguous_bps(text: &str, v: Q, p: &str) -> Result<UnitError, UnitError> {
    let (n, up) = (decimal(v), short_prefix_upper(p));
    let n8 = decimal(times(text, v, 8, 1)?);
    Ok(UnitError::Ambiguous {
        text: text.trim().to_string(),
        tc_reading: format!("{n} {}bytes/s = {n8} {up}bit/s", long_prefix(p)),
        other_reading: format!("{n} {up}bit/s"),
        suggestion: format!("`{n8}{p}bit` or `{n}{p}bit`"),
    })
}

fn long_prefix(p: &str) -> &'static str {
    match p {
        "k" => "kilo",
        "m" => "mega",
        "g" => "giga",
        "t" => "tera",
        _ => "",
    }
}

fn short_prefix_upper(p: &str) -> &'static str {
    match p {
        "k" => "k",
        "m" => "M",
        "g" => "G",
        "t" => "T",
        _ => "",
    }
}

/// An exact size in bytes (may be zero or fractional): `"128KiB"` is 131 072.
pub fn exact_size(text: &str) -> Result<Q, UnitError> {
    let (v, unit) = split(text)?;
    if unit.is_empty() {
        return Err(UnitError::NoUnit {
            text: text.trim().to_string(),
            example: "B",
            expected: SIZE_UNITS,
        });
    }
    let table: [(&str, i128); 8] = [
        ("B", 1),
        ("kB", 1_000),
        ("KB", 1_000),
        ("MB", 1_000_000),
        ("GB", 1_000_000_000),
        ("KiB", 1 << 10),
        ("MiB", 1 << 20),
        ("GiB", 1 << 30),
    ];
    if let Some((_, mult)) = table.iter().find(|(u, _)| *u == unit) {
        return times(text, v, *mult, 1);
    }
    // tc(8) reads b, k/kb, m/mb, g/gb (any case) as bytes, KiB, MiB, GiB.
    let lower = unit.to_ascii_lowercase();
    let tc = [
        ("b", "", 1i128, 1i128),
        ("k", "K", 1 << 10, 1_000),
        ("kb", "K", 1 << 10, 1_000),
        ("m", "M", 1 << 20, 1_000_000),
        ("mb", "M", 1 << 20, 1_000_000),
        ("g", "G", 1 << 30, 1_000_000_000),
        ("gb", "G", 1 << 30, 1_000_000_000),
    ];
    if let Some(&(spelled, up, tc_mult, dec)) = tc.iter().find(|(u, ..)| *u == lower) {
        let n = decimal(v);
        let t = text.trim().to_string();
        let tc_bytes = decimal(times(text, v, tc_mult, 1)?);
        let dp = if up == "K" { "k" } else { up };
        let (tc_reading, other_reading, suggestion) = if spelled == "b" {
            (
                format!("{n} bytes"),
                format!("{n} bits = {} bytes", decimal(times(text, v, 1, 8)?)),
                format!("`{n}B` (bytes)"),
            )
        } else if spelled.ends_with('b') {
            (
                format!("{n} {up}iB = {tc_bytes} bytes"),
                format!("{n} {dp}bit = {} bytes", decimal(times(text, v, dec, 8)?)),
                format!("`{n}{up}iB` or `{}{dp}B`", decimal(times(text, v, 1, 8)?)),
            )
        } else {
            (
                format!("{n} {up}iB = {tc_bytes} bytes"),
                format!("{n} {dp}B = {} bytes", decimal(times(text, v, dec, 1)?)),
                format!("`{n}{up}iB` or `{n}{dp}B`"),
            )
        };
        return Err(UnitError::Ambiguous {
            text: t,
            tc_reading,
            other_reading,
            suggestion,
        });
    }
    Err(UnitError::UnknownUnit {
        text: text.trim().to_string(),
        unit: unit.to_string(),
        expected: SIZE_UNITS,
    })
}

/// An exact duration in seconds: `"0.1ms"` is 1/10 000.
pub fn exact_duration(text: &str) -> Result<Q, UnitError> {
    let (v, unit) = split(text)?;
    if unit.is_empty() {
        return Err(UnitError::NoUnit {
            text: text.trim().to_string(),
            example: "ms",
            expected: DURATION_UNITS,
        });
    }
    let den = match unit.to_lowercase().as_str() {
        "ns" => 1_000_000_000,
        "us" | "µs" | "μs" => 1_000_000,
        "ms" => 1_000,
        "s" => 1,
        _ => {
            return Err(UnitError::UnknownUnit {
                text: text.trim().to_string(),
                unit: unit.to_string(),
                expected: DURATION_UNITS,
            })
        }
    };
    times(text, v, 1, den)
}

/// `v` as a whole `u64`, or why not.
fn whole(text: &str, v: Q, unit: &'static str) -> Result<u64, UnitError> {
    if v.denom() != 1 {
        return Err(UnitError::NotWhole {
            text: text.trim().to_string(),
            unit,
        });
    }
    u64::try_from(v.numer()).map_err(|_| UnitError::OutOfRange(text.trim().to_string()))
}

/// A rate in whole bit/s, greater than zero: `"100mbit"` → 100 000 000.
pub fn parse_rate(text: &str) -> Result<u64, UnitError> {
    let bps = whole(text, exact_rate(text)?, "bit/s")?;
    if bps == 0 {
        return Err(UnitError::Zero(text.trim().to_string()));
    }
    Ok(bps)
}

/// A size in whole bytes: `"128KiB"` → 131 072.
pub fn parse_size(text: &str) -> Result<u64, UnitError> {
    whole(text, exact_size(text)?, "bytes")
}

/// A duration in whole nanoseconds: `"0.1ms"` → 100 µs.
pub fn parse_duration(text: &str) -> Result<Duration, UnitError> {
    let ns = exact_duration(text)?
        .mul(Q::int(1_000_000_000))
        .map_err(|_| UnitError::OutOfRange(text.trim().to_string()))?;
    Ok(Duration::from_nanos(whole(text, ns, "ns")?))
}

/// `v` in decimal notation when its denominator divides a power of ten (every value this module
/// reads), else as `n/d`.
fn decimal(v: Q) -> String {
    let (n, d) = (v.numer(), v.denom());
    let (mut scale, mut digits) = (1i128, 0usize);
    while digits <= 36 {
        if scale % d == 0 {
            let m = n * (scale / d);
            let (int, frac) = (m / scale, (m % scale).abs());
            if digits == 0 {
                return int.to_string();
            }
            let frac = format!("{frac:0digits$}");
            let sign = if m < 0 && int == 0 { "-" } else { "" };
            return format!("{sign}{int}.{}", frac.trim_end_matches('0'));
        }
        match scale.checked_mul(10) {
            Some(s) => scale = s,
            None => break,
        }
        digits += 1;
    }
    format!("{n}/{d}")
}

/// An exact rate in the largest unit it reaches (`12.5mbit`).
fn format_rate_q(bps: Q) -> String {
    for (div, unit) in [
        (1_000_000_000_000i64, "tbit"),
        (1_000_000_000, "gbit"),
        (1_000_000, "mbit"),
        (1_000, "kbit"),
    ] {
        if bps >= Q::int(div) {
            return match bps.div(Q::int(div)) {
                Ok(v) => format!("{}{unit}", decimal(v)),
                Err(_) => format!("{}bit", decimal(bps)),
            };
        }
    }
    format!("{}bit", decimal(bps))
}

/// Formats bit/s exactly, the way [`parse_rate`] reads them back (`100mbit`, `1.5gbit`,
/// `98.600001mbit`).
pub fn format_rate(bps: u64) -> String {
    format_rate_q(Q::new(i128::from(bps), 1).unwrap_or(Q::ZERO))
}

/// Formats bytes exactly, the way [`parse_size`] reads them back: binary units when the value is a
/// whole number of them (`128KiB`), else decimal ones (`1.5kB`).
pub fn format_size(bytes: u64) -> String {
    let b = u128::from(bytes);
    for (div, unit) in [(1u128 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")] {
        if b >= div && b.is_multiple_of(div) {
            return format!("{}{unit}", b / div);
        }
    }
    let q = Q::new(i128::from(bytes), 1).unwrap_or(Q::ZERO);
    for (div, unit) in [(1_000_000_000i64, "GB"), (1_000_000, "MB"), (1_000, "kB")] {
        if q >= Q::int(div) {
            if let Ok(v) = q.div(Q::int(div)) {
                return format!("{}{unit}", decimal(v));
            }
        }
    }
    format!("{bytes}B")
}

/// Formats a duration exactly in the largest unit it is a whole number of, the way
/// [`parse_duration`] reads it back (`10ms`, `1500ms`, `45us`, `1001ns`).
pub fn format_duration(d: Duration) -> String {
    let ns = d.as_nanos();
    for (div, unit) in [(1_000_000_000u128, "s"), (1_000_000, "ms"), (1_000, "us")] {
        if ns >= div && ns.is_multiple_of(div) {
            return format!("{}{unit}", ns / div);
        }
    }
    format!("{ns}ns")
}

#[cfg(test)]
mod tests;
