//! Measurement helpers shared by the runners: the arrival log `rtlan recv --arrivals` writes,
//! the load average recorded with every run (the machine is shared), wall-clock stamps, and the
//! distribution of a set of intervals (EtheReal §4.2, Table 1 and Fig. 6 report tick and
//! inter-arrival times this way).

use std::path::Path;

use anyhow::Context;

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

pub use rtlan_core::stats::{summarize_intervals, IntervalSummary};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrival_lines_need_three_numbers() {
        let text = "1 200 100\n# comment\n2 300\n3 400 350 7\n4 500 450 x\n";
        assert_eq!(parse_arrivals(text), vec![(1, 200, 100), (4, 500, 450)]);
    }
}
