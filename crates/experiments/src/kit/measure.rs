//! Measurement helpers shared by the runners: the arrival log `rtlan recv --arrivals` writes,
//! the load average recorded with every run (the machine is shared), wall-clock stamps, and the
//! distribution of a set of intervals (EtheReal §4.2, Table 1 and Fig. 6 report tick and
//! inter-arrival times this way).

use std::path::Path;

use anyhow::Context;
use serde::Serialize;

/// Reads `(seq, recv_ns, sent_ns)` lines written by `rtlan recv --arrivals`; a line whose
/// numeric fields are not exactly three is skipped.
pub fn read_arrivals(path: &Path) -> anyhow::Result<Vec<(u64, u64, u64)>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("{}", path.display()))?;
    Ok(parse_arrivals(&text))
}

fn parse_arrivals(text: &str) -> Vec<(u64, u64, u64)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let v: Vec<u64> = line
            .split_whitespace()
            .filter_map(|f| f.parse().ok())
            .collect();
        if let [seq, recv, sent] = v[..] {
            out.push((seq, recv, sent));
        }
    }
    out
}

/// `/proc/loadavg`'s first three fields, recorded with every run (the machine is shared).
pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// The UTC time now, ISO 8601 (from `date`; "unknown" if that fails).
pub fn now_utc() -> String {
    std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%dT%H:%M:%SZ"])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".to_string())
}

/// Nanoseconds since the Unix epoch (CLOCK_REALTIME): the clock `rtlan send` stamps probes with
/// and `rtlan recv --arrivals` logs, so the runner's own stamps line up with theirs.
pub fn realtime_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// Distribution of a set of intervals (timer ticks, inter-arrival times), milliseconds; the
/// shape `rtlan send --json` reports its ticks in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct IntervalSummary {
    /// How many intervals.
    pub count: u64,
    /// Mean.
    pub mean_ms: f64,
    /// Population standard deviation.
    pub stddev_ms: f64,
    /// Smallest.
    pub min_ms: f64,
    /// Median (nearest rank).
    pub p50_ms: f64,
    /// 99th percentile (nearest rank).
    pub p99_ms: f64,
    /// Largest.
    pub max_ms: f64,
}

/// Summarizes intervals given in nanoseconds (all zero for none).
pub fn summarize_intervals(ns: &[u64]) -> IntervalSummary {
    if ns.is_empty() {
        return IntervalSummary::default();
    }
    let mut sorted = ns.to_vec();
    sorted.sort_unstable();
    let n = sorted.len();
    let ms = |v: u64| v as f64 / 1e6;
    let mean = sorted.iter().map(|&v| ms(v)).sum::<f64>() / n as f64;
    let var = sorted.iter().map(|&v| (ms(v) - mean).powi(2)).sum::<f64>() / n as f64;
    // Nearest rank: an index in 0..n because `sorted` is non-empty (checked above).
    let rank = |q: f64| ms(sorted[((q * n as f64).ceil() as usize).clamp(1, n) - 1]);
    IntervalSummary {
        count: n as u64,
        mean_ms: mean,
        stddev_ms: var.sqrt(),
        min_ms: ms(sorted[0]),
        p50_ms: rank(0.5),
        p99_ms: rank(0.99),
        max_ms: ms(sorted[n - 1]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrival_lines_need_three_numbers() {
        let text = "1 200 100\n# comment\n2 300\n3 400 350 7\n4 500 450 x\n";
        assert_eq!(parse_arrivals(text), vec![(1, 200, 100), (4, 500, 450)]);
    }

    #[test]
    fn intervals_are_summarized_in_milliseconds() {
        let s = summarize_intervals(&[1_000_000, 3_000_000, 2_000_000, 2_000_000]);
        assert_eq!(s.count, 4);
        assert_eq!((s.min_ms, s.p50_ms, s.max_ms), (1.0, 2.0, 3.0));
        assert!((s.mean_ms - 2.0).abs() < 1e-12);
        assert!((s.stddev_ms - 0.5f64.sqrt()).abs() < 1e-12);
        assert_eq!(s.p99_ms, 3.0);
        assert_eq!(summarize_intervals(&[]), IntervalSummary::default());
    }
}
