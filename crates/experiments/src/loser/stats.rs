//! Measurement helpers for the Löser/Härtig lab experiment (§4.2–4.3): delay statistics
//! of probe arrivals (max, p99.9, p99, mean — the paper reports the maximum of 350,000 samples)
//! and a sender process's CPU load from `/proc/<pid>/stat` (Table 5: utime + stime over wall
//! time).

use std::time::Instant;

use rtlan_core::latency::Histogram;
use serde::Serialize;

/// Delay statistics of one probe stream, µs, from a [`Histogram`]: min, mean and max exact,
/// percentiles nearest rank rounded up by at most 0.1 % (its module doc).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(super) struct DelayStats {
    /// Samples (probes received).
    pub(super) count: usize,
    /// Largest delay.
    pub(super) max_us: f64,
    /// 99.9th percentile (nearest rank, to 0.1 %).
    pub(super) p999_us: f64,
    /// 99th percentile (nearest rank, to 0.1 %).
    pub(super) p99_us: f64,
    /// Median (nearest rank, to 0.1 %).
    pub(super) p50_us: f64,
    /// Mean.
    pub(super) mean_us: f64,
    /// Smallest delay.
    pub(super) min_us: f64,
}

/// Statistics of the delays `recv_ns − sent_ns` of `(seq, recv_ns, sent_ns)` arrivals; `None`
/// without samples. A receive time before the send time (clock step) counts as 0.
pub(super) fn delay_stats(arrivals: &[(u64, u64, u64)]) -> Option<DelayStats> {
    let d: Histogram = arrivals
        .iter()
        .map(|&(_, recv, sent)| recv.saturating_sub(sent))
        .collect();
    let us = |ns: u64| ns as f64 / 1e3;
    Some(DelayStats {
        count: arrivals.len(),
        max_us: us(d.max_ns()?),
        p999_us: us(d.quantile_ns(0.999)?),
        p99_us: us(d.quantile_ns(0.99)?),
        p50_us: us(d.quantile_ns(0.5)?),
        mean_us: d.mean_ns()? / 1e3,
        min_us: us(d.min_ns()?),
    })
}

/// `utime + stime` in clock ticks from the text of `/proc/<pid>/stat`; `None` if malformed.
/// Fields 14 and 15 (1-based) follow the command name in parentheses, which may contain spaces.
pub(super) fn cpu_ticks(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After ")": field 3 (state) is index 0, so utime (14) is index 11 and stime (15) index 12.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// One reading of a process's CPU time.
#[derive(Debug, Clone, Copy)]
pub(super) struct CpuSample {
    at: Instant,
    ticks: u64,
}

/// Reads `/proc/<pid>/stat` now; `None` once the process is gone.
pub(super) fn cpu_sample(pid: u32) -> Option<CpuSample> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    Some(CpuSample {
        at: Instant::now(),
        ticks: cpu_ticks(&text)?,
    })
}

/// CPU load in percent of one core between two samples of the same process.
pub(super) fn cpu_percent(first: CpuSample, last: CpuSample) -> Option<f64> {
    // SAFETY: sysconf(3) has no memory-safety preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let wall = last.at.checked_duration_since(first.at)?.as_secs_f64();
    if hz <= 0 || wall <= 0.0 {
        return None;
    }
    let ticks = last.ticks.checked_sub(first.ticks)?;
    Some(ticks as f64 / hz as f64 / wall * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delay_stats_ranks_and_means() {
        // Delays 1..=1000 µs, shuffled order of arrival.
        let arrivals: Vec<(u64, u64, u64)> = (1..=1000u64)
            .rev()
            .map(|i| (i, 5_000_000 + i * 1000, 5_000_000))
            .collect();
        let s = delay_stats(&arrivals).expect("samples");
        assert_eq!(s.count, 1000);
        assert_eq!(s.max_us, 1000.0);
        assert_eq!(s.min_us, 1.0);
        // Nearest rank, rounded up by at most 0.1 %.
        let near = |got: f64, exact: f64| (exact..=exact * 1.001).contains(&got);
        assert!(near(s.p999_us, 999.0), "{}", s.p999_us);
        assert!(near(s.p99_us, 990.0), "{}", s.p99_us);
        assert!(near(s.p50_us, 500.0), "{}", s.p50_us);
        assert!((s.mean_us - 500.5).abs() < 1e-9);
        assert!(delay_stats(&[]).is_none());
        // A receive stamp before the send stamp is clamped, not wrapped.
        let s = delay_stats(&[(0, 10, 20)]).expect("one sample");
        assert_eq!(s.max_us, 0.0);
    }

    #[test]
    fn cpu_ticks_reads_utime_and_stime_after_the_name() {
        let stat = "4242 (rtlan send x) S 1 2 3 0 -1 4194560 100 0 0 0 37 5 0 0 20 0 1 0 \
                    12345 1000 100";
        assert_eq!(cpu_ticks(stat), Some(42));
        assert_eq!(cpu_ticks("4242 (x) S 1 2"), None);
        assert_eq!(cpu_ticks("garbage"), None);
        let own = std::fs::read_to_string("/proc/self/stat").expect("procfs");
        assert!(cpu_ticks(&own).is_some());
    }
}
