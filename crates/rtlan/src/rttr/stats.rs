//! Receiver statistics of a probe stream (`rtlan recv`): delivered rates, loss from the sequence
//! range, reordering, duplicates, one-way delay and RFC 3550 §6.4.1 interarrival jitter. Pure:
//! the caller passes arrival times.

use std::collections::HashSet;

use rtlan_core::latency::Histogram;
use serde::Serialize;

use super::probe::ProbeHeader;
use super::wire_bytes;

/// One received probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arrival {
    /// The probe's header.
    pub header: ProbeHeader,
    /// UDP payload length, header included.
    pub payload_len: usize,
    /// Arrival time at the receiving host, `CLOCK_REALTIME` nanoseconds (the kernel's receive
    /// timestamp where there is one: [`super::receiver`]).
    pub recv_ns: u64,
    /// When the application read it, `CLOCK_REALTIME` nanoseconds (≥ `recv_ns`; equal when
    /// the arrival time is the read time).
    pub read_ns: u64,
}

/// Accumulates arrivals in arrival order.
#[derive(Debug, Clone, Default)]
pub struct RecvStats {
    packets: u64,
    bytes: u64,
    wire_bytes: u64,
    first: Option<Arrival>,
    last_recv_ns: u64,
    min_seq: u64,
    max_seq: u64,
    seen: HashSet<u64>,
    duplicates: u64,
    reordered: u64,
    /// One-way delays, bounded whatever the run's length.
    delays: Histogram,
    /// Read lags (read − arrival): how long probes waited in the socket buffer.
    read_lags: Histogram,
    /// Previous arrival's (recv, sent) for the jitter estimate.
    previous: Option<(u64, u64)>,
    /// RFC 3550 jitter estimate in nanoseconds.
    jitter_ns: f64,
    ignored: u64,
}

/// Delay statistics, microseconds, from a [`Histogram`]: min, mean and max exact, percentiles
/// nearest rank rounded up to at most 0.1 % (its module doc). All zero without arrivals. A
/// receive time before the send time (the clocks disagree) counts as a delay of 0.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct DelaySummary {
    /// Smallest.
    pub min: f64,
    /// Mean.
    pub mean: f64,
    /// Median (nearest rank, to 0.1 %).
    pub p50: f64,
    /// 99th percentile (nearest rank, to 0.1 %).
    pub p99: f64,
    /// Largest.
    pub max: f64,
}

/// What `rtlan recv --json` prints.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecvReport {
    /// Probes received, duplicates included.
    pub packets: u64,
    /// UDP payload bytes received.
    pub bytes: u64,
    /// Payload bit/s over first → last arrival (the first probe's bytes are not counted: `n`
    /// arrivals span `n − 1` intervals).
    pub payload_bps: f64,
    /// The same for whole frames on the wire ([`wire_bytes`]).
    pub wire_bps: f64,
    /// Sequence numbers in `first_seq..=last_seq` never received.
    pub lost: u64,
    /// `lost` in percent of the range.
    pub loss_pct: f64,
    /// Probes that arrived after one with a higher sequence number.
    pub reordered: u64,
    /// Probes whose sequence number had been seen before.
    pub duplicates: u64,
    /// One-way delay (arrival at the receiving host − send timestamp; the clocks must agree).
    pub delay_us: DelaySummary,
    /// Read lag (the application's read − arrival at the host): the receiving host's own
    /// scheduling, outside the network's delay. All zero when arrivals are read times.
    pub read_lag_us: DelaySummary,
    /// RFC 3550 interarrival jitter, microseconds.
    pub jitter_us: f64,
    /// Lowest sequence number seen.
    pub first_seq: u64,
    /// Highest sequence number seen.
    pub last_seq: u64,
    /// First → last arrival, seconds.
    pub elapsed_s: f64,
    /// Datagrams without a probe header (not counted above).
    pub ignored: u64,
}

impl RecvStats {
    /// No arrivals yet.
    pub fn new() -> RecvStats {
        RecvStats::default()
    }

    /// A datagram that carried no probe header.
    pub fn record_ignored(&mut self) {
        self.ignored += 1;
    }

    /// Probes recorded so far.
    pub fn packets(&self) -> u64 {
        self.packets
    }

    /// Records one probe.
    pub fn record(&mut self, a: Arrival) {
        let seq = a.header.seq;
        self.packets += 1;
        self.bytes += a.payload_len as u64;
        self.wire_bytes += wire_bytes(a.payload_len);
        self.last_recv_ns = a.recv_ns;
        if self.first.is_none() {
            self.first = Some(a);
            self.min_seq = seq;
            self.max_seq = seq;
        } else if !self.seen.contains(&seq) && seq < self.max_seq {
            self.reordered += 1;
        }
        if !self.seen.insert(seq) {
            self.duplicates += 1;
        }
        self.min_seq = self.min_seq.min(seq);
        self.max_seq = self.max_seq.max(seq);
        self.delays
            .record(a.recv_ns.saturating_sub(a.header.sent_ns));
        self.read_lags.record(a.read_ns.saturating_sub(a.recv_ns));
        if let Some((r, s)) = self.previous {
            let d = (a.recv_ns as f64 - r as f64) - (a.header.sent_ns as f64 - s as f64);
            self.jitter_ns += (d.abs() - self.jitter_ns) / 16.0;
        }
        self.previous = Some((a.recv_ns, a.header.sent_ns));
    }

    /// The summary so far.
    pub fn report(&self) -> RecvReport {
        let (elapsed_ns, first_payload) = match &self.first {
            Some(f) => (self.last_recv_ns.saturating_sub(f.recv_ns), f.payload_len),
            None => (0, 0),
        };
        let elapsed_s = elapsed_ns as f64 / 1e9;
        let rate = |bytes: u64| {
            if elapsed_ns == 0 {
                0.0
            } else {
                bytes as f64 * 8.0 / elapsed_s
            }
        };
        let unique = self.seen.len() as u64;
        let range = if self.first.is_some() {
            self.max_seq - self.min_seq + 1
        } else {
            0
        };
        let lost = range.saturating_sub(unique);
        RecvReport {
            packets: self.packets,
            bytes: self.bytes,
            payload_bps: rate(self.bytes.saturating_sub(first_payload as u64)),
            wire_bps: rate(self.wire_bytes.saturating_sub(wire_bytes(first_payload))),
            lost,
            loss_pct: if range == 0 {
                0.0
            } else {
                lost as f64 * 100.0 / range as f64
            },
            reordered: self.reordered,
            duplicates: self.duplicates,
            delay_us: summarize(&self.delays),
            read_lag_us: summarize(&self.read_lags),
            jitter_us: self.jitter_ns / 1e3,
            first_seq: self.min_seq,
            last_seq: self.max_seq,
            elapsed_s,
            ignored: self.ignored,
        }
    }
}

/// Min/mean/p50/p99/max of the delays, in microseconds (all zero without samples).
fn summarize(delays: &Histogram) -> DelaySummary {
    let us = |ns: Option<u64>| ns.map_or(0.0, |v| v as f64 / 1e3);
    DelaySummary {
        min: us(delays.min_ns()),
        mean: delays.mean_ns().map_or(0.0, |v| v / 1e3),
        p50: us(delays.quantile_ns(0.5)),
        p99: us(delays.quantile_ns(0.99)),
        max: us(delays.max_ns()),
    }
}

/// One point of a sliding-window rate series ([`sliding_rates`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RatePoint {
    /// End of the window, `CLOCK_REALTIME` nanoseconds.
    pub t_ns: u64,
    /// Wire bit/s of the arrivals in the window ending at `t_ns`.
    pub wire_bps: f64,
}

/// Sliding-window rates (EtheReal Fig. 5 uses 80 ms windows): for every `t` from
/// `from_ns + window_ns` to `to_ns` in steps of `step_ns`, the wire bits of the arrivals with time
/// in `(t − window, t]`, divided by the window. `arrivals` are `(time ns, wire bytes)` in any
/// order. Empty when the window or step is zero or the span is shorter than one window.
pub fn sliding_rates(
    arrivals: &[(u64, u64)],
    from_ns: u64,
    to_ns: u64,
    window_ns: u64,
    step_ns: u64,
) -> Vec<RatePoint> {
    let mut sorted = arrivals.to_vec();
    sorted.sort_unstable_by_key(|a| a.0);
    let mut points = Vec::new();
    if window_ns == 0 || step_ns == 0 {
        return points;
    }
    // `lo..hi` are the arrivals inside the current window; both only move forward.
    let (mut lo, mut hi, mut bytes) = (0usize, 0usize, 0u64);
    let mut t = from_ns.saturating_add(window_ns);
    while t <= to_ns {
        while hi < sorted.len() && sorted[hi].0 <= t {
            bytes += sorted[hi].1;
            hi += 1;
        }
        while lo < hi && sorted[lo].0 <= t - window_ns {
            bytes -= sorted[lo].1;
            lo += 1;
        }
        points.push(RatePoint {
            t_ns: t,
            wire_bps: bytes as f64 * 8.0 * 1e9 / window_ns as f64,
        });
        t = t.saturating_add(step_ns);
        if t == u64::MAX {
            break;
        }
    }
    points
}

pub use rtlan_core::stats::{summarize_intervals, IntervalSummary};

#[cfg(test)]
mod tests {
    use super::*;

    fn arrival(seq: u64, sent_us: u64, recv_us: u64, len: usize) -> Arrival {
        Arrival {
            header: ProbeHeader {
                flags: 0,
                seq,
                sent_ns: sent_us * 1000,
            },
            payload_len: len,
            recv_ns: recv_us * 1000,
            read_ns: recv_us * 1000,
        }
    }

    #[test]
    fn the_read_lag_is_apart_from_the_delay() {
        // Two probes that reached the host 100 µs after they were sent; the application read
        // the second 30 ms late. The delay stays 100 µs; the read lag shows the 30 ms.
        let mut s = RecvStats::new();
        s.record(arrival(0, 0, 100, 100));
        let mut late = arrival(1, 1000, 1100, 100);
        late.read_ns += 30_000_000;
        s.record(late);
        let r = s.report();
        assert_eq!(r.delay_us.max, 100.0);
        assert_eq!(r.read_lag_us.min, 0.0);
        assert_eq!(r.read_lag_us.max, 30_000.0);
        assert!((r.jitter_us - 0.0).abs() < 1e-12, "{}", r.jitter_us);
    }

    #[test]
    fn steady_stream_rates_and_no_loss() {
        // 1000-byte payloads every 500 µs; wire_bytes(1000) = 1000 + 42 + 4 + 20 = 1066.
        let mut s = RecvStats::new();
        for i in 0..101 {
            s.record(arrival(i, i * 500, i * 500 + 100, 1000));
        }
        let r = s.report();
        assert_eq!(r.packets, 101);
        assert_eq!(r.lost, 0);
        assert!((r.elapsed_s - 0.05).abs() < 1e-12);
        // 100 intervals of 500 µs carry 100 payloads of 1000 B: 16 Mbit/s.
        assert!((r.payload_bps - 16e6).abs() < 1.0, "{}", r.payload_bps);
        assert!(
            (r.wire_bps - 16e6 * 1066.0 / 1000.0).abs() < 1.0,
            "{}",
            r.wire_bps
        );
        assert_eq!(r.delay_us.min, 100.0);
        assert_eq!(r.delay_us.max, 100.0);
        assert_eq!(r.jitter_us, 0.0, "constant delay has no jitter");
        assert_eq!((r.first_seq, r.last_seq), (0, 100));
    }

    #[test]
    fn loss_reorder_duplicates_and_percentiles() {
        let mut s = RecvStats::new();
        // seq 0,1,3,2,2,5 → 4 lost, 2 reordered, 2 duplicate.
        let delays = [10, 20, 30, 40, 50, 1000];
        for (i, (seq, d)) in [0u64, 1, 3, 2, 2, 5].iter().zip(delays).enumerate() {
            let t = i as u64 * 100;
            s.record(arrival(*seq, t, t + d, 100));
        }
        s.record_ignored();
        let r = s.report();
        assert_eq!(r.lost, 1);
        assert!((r.loss_pct - 100.0 / 6.0).abs() < 1e-9);
        assert_eq!(r.reordered, 1);
        assert_eq!(r.duplicates, 1);
        assert_eq!(r.ignored, 1);
        assert_eq!(r.delay_us.min, 10.0);
        // Nearest rank (3 of 6), rounded up by at most 0.1 %.
        assert!(
            (30.0..=30.03).contains(&r.delay_us.p50),
            "{}",
            r.delay_us.p50
        );
        // The top rank is the largest delay, exactly.
        assert_eq!(r.delay_us.p99, 1000.0);
        assert_eq!(r.delay_us.max, 1000.0);
        assert!((r.delay_us.mean - 1150.0 / 6.0).abs() < 1e-9);
    }

    #[test]
    fn jitter_follows_rfc3550() {
        let mut s = RecvStats::new();
        s.record(arrival(0, 0, 100, 100));
        s.record(arrival(1, 1000, 1260, 100)); // D = 160 µs → J = 10 µs
        let r = s.report();
        assert!((r.jitter_us - 10.0).abs() < 1e-9, "{}", r.jitter_us);
    }

    #[test]
    fn empty_report_is_zero_not_nan() {
        let r = RecvStats::new().report();
        assert_eq!(r.packets, 0);
        assert_eq!(r.payload_bps, 0.0);
        assert_eq!(r.loss_pct, 0.0);
        assert_eq!(r.lost, 0);
        assert_eq!(r.delay_us, DelaySummary::default());
    }

    #[test]
    fn a_receive_before_the_send_is_a_zero_delay() {
        let mut s = RecvStats::new();
        s.record(arrival(0, 500, 400, 100));
        s.record(arrival(1, 600, 700, 100));
        let r = s.report();
        assert_eq!((r.delay_us.min, r.delay_us.max), (0.0, 100.0));
        assert_eq!(r.delay_us.mean, 50.0);
    }

    #[test]
    fn sliding_rates_count_only_the_window() {
        // 1000 wire bytes every 10 ms from t = 5 ms; a 40 ms window holds 4 of them.
        let arrivals: Vec<(u64, u64)> = (0..10)
            .map(|i| (5_000_000 + i * 10_000_000, 1000))
            .collect();
        let pts = sliding_rates(&arrivals, 0, 100_000_000, 40_000_000, 10_000_000);
        assert_eq!(pts.len(), 7); // t = 40, 50, …, 100 ms
        assert_eq!(pts[0].t_ns, 40_000_000);
        assert!((pts[0].wire_bps - 4.0 * 8000.0 / 0.04).abs() < 1e-6);
        // At t = 100 ms the window (60, 100] holds 65, 75, 85, 95 ms: still 4.
        assert!((pts[6].wire_bps - 800_000.0).abs() < 1e-6);
        // Nothing before 5 ms: a window ending at 10 ms over (0, 10] holds one arrival.
        let early = sliding_rates(&arrivals, 0, 10_000_000, 10_000_000, 10_000_000);
        assert_eq!(early.len(), 1);
        assert!((early[0].wire_bps - 800_000.0).abs() < 1e-6);
        assert!(sliding_rates(&arrivals, 0, 100, 0, 10).is_empty());
    }
}
