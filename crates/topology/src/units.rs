//! Human-readable units shared by configuration and topology files: link rates (`"100mbit"`) and
//! durations (`"10ms"`), in the spelling `tc(8)` uses so that lab files read like Linux commands.

use std::time::Duration;

/// A value that could not be read as a rate or a duration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnitError {
    /// The text has no leading number.
    #[error("`{0}` does not start with a number")]
    NoNumber(String),
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
    /// The value is zero or does not fit.
    #[error("`{0}` is out of range")]
    OutOfRange(String),
}

fn split_number(text: &str) -> Result<(f64, &str), UnitError> {
    let t = text.trim();
    let end = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let number: f64 = t[..end]
        .parse()
        .map_err(|_| UnitError::NoNumber(text.to_string()))?;
    Ok((number, t[end..].trim()))
}

const RATE_UNITS: &str = "bit, kbit, mbit, gbit, tbit, bps, kbps, mbps, gbps";

/// Parses a link rate such as `"100mbit"`, `"1gbit"`, `"1.5mbit"` or `"12500kbps"` into bits per
/// second. As in `tc(8)`, `bit` suffixes count bits and `bps` suffixes count bytes; prefixes are
/// decimal (k = 1000).
pub fn parse_rate(text: &str) -> Result<u64, UnitError> {
    let (number, unit) = split_number(text)?;
    let multiplier: f64 = match unit.to_ascii_lowercase().as_str() {
        "bit" | "" => 1.0,
        "kbit" => 1e3,
        "mbit" => 1e6,
        "gbit" => 1e9,
        "tbit" => 1e12,
        "bps" => 8.0,
        "kbps" => 8e3,
        "mbps" => 8e6,
        "gbps" => 8e9,
        other => {
            return Err(UnitError::UnknownUnit {
                text: text.to_string(),
                unit: other.to_string(),
                expected: RATE_UNITS,
            })
        }
    };
    let bps = number * multiplier;
    if !(bps >= 1.0 && bps < u64::MAX as f64) {
        return Err(UnitError::OutOfRange(text.to_string()));
    }
    Ok(bps.round() as u64)
}

/// Formats bits per second the way [`parse_rate`] reads them (`100mbit`, `1.5gbit`).
pub fn format_rate(bps: u64) -> String {
    for (div, unit) in [(1e12, "tbit"), (1e9, "gbit"), (1e6, "mbit"), (1e3, "kbit")] {
        if bps as f64 >= div {
            let v = bps as f64 / div;
            return if v.fract() == 0.0 {
                format!("{v:.0}{unit}")
            } else {
                format!("{}{unit}", trim_float(v))
            };
        }
    }
    format!("{bps}bit")
}

fn trim_float(v: f64) -> String {
    let s = format!("{v:.6}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

const DURATION_UNITS: &str = "ns, us, ms, s";

/// Parses a duration such as `"10ms"`, `"250us"`, `"1.5s"` or `"100ns"`.
pub fn parse_duration(text: &str) -> Result<Duration, UnitError> {
    let (number, unit) = split_number(text)?;
    let nanos_per_unit: f64 = match unit.to_ascii_lowercase().as_str() {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" | "sec" => 1e9,
        other => {
            return Err(UnitError::UnknownUnit {
                text: text.to_string(),
                unit: other.to_string(),
                expected: DURATION_UNITS,
            })
        }
    };
    let nanos = number * nanos_per_unit;
    if !(nanos >= 0.0 && nanos < u64::MAX as f64) {
        return Err(UnitError::OutOfRange(text.to_string()));
    }
    Ok(Duration::from_nanos(nanos.round() as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates() {
        assert_eq!(parse_rate("100mbit"), Ok(100_000_000));
        assert_eq!(parse_rate("1Gbit"), Ok(1_000_000_000));
        assert_eq!(parse_rate("1.5mbit"), Ok(1_500_000));
        assert_eq!(parse_rate("12500kbps"), Ok(100_000_000));
        assert_eq!(parse_rate(" 64000 "), Ok(64_000));
        assert!(matches!(parse_rate("fast"), Err(UnitError::NoNumber(_))));
        assert!(matches!(
            parse_rate("10furlong"),
            Err(UnitError::UnknownUnit { .. })
        ));
        assert!(matches!(parse_rate("0mbit"), Err(UnitError::OutOfRange(_))));
    }

    #[test]
    fn rate_format_round_trips() {
        for bps in [1, 999, 64_000, 1_500_000, 100_000_000, 2_500_000_000] {
            assert_eq!(
                parse_rate(&format_rate(bps)),
                Ok(bps),
                "{}",
                format_rate(bps)
            );
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10ms"), Ok(Duration::from_millis(10)));
        assert_eq!(parse_duration("250us"), Ok(Duration::from_micros(250)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert!(parse_duration("10").is_err());
        assert!(parse_duration("-1s").is_err());
    }
}
