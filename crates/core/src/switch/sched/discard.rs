//! Preemptive discard of non-real-time traffic on a peripheral input link (EtheReal §3.3).
//!
//! "The EtheReal switch continues to estimate the transmission rates of real-time and non-real-time
//! packets flowing through each peripheral input link by counting the bytes from each category in
//! the recent past. As soon as the non-real-time transmission rate exceeds the link's residual
//! bandwidth [...] the scheduler starts to drop non-real-time packets preemptively. The data
//! structure uses a sliding-window count of non-real-time bytes."
//!
//! [`NrtMeter`] keeps that count in a ring of `N` sub-buckets covering the window (default 10 ms in
//! 10 buckets of 1 ms): O(1) per packet (amortised; a gap clears at most `N` buckets), allocated
//! once. A frame is admitted when the admitted bytes in the window plus its own stay within
//! `residual × window`; dropped frames are not counted, so under overload the admitted rate settles
//! at the residual (TCP sees the losses and backs off) instead of everything being dropped. The
//! window slides in whole buckets, so the bytes counted cover between `N − 1` and `N` buckets of
//! time: a burst may briefly exceed the residual by up to one bucket's share.

use std::time::Duration;

use crate::time::Instant;

/// Default sliding window.
pub const DEFAULT_WINDOW: Duration = Duration::from_millis(10);
/// Default number of sub-buckets in the window.
pub const DEFAULT_BUCKETS: usize = 10;

/// Most sub-buckets a meter may have.
const MAX_BUCKETS: usize = 4096;

/// Errors of the non-real-time meter.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DiscardError {
    /// The number of sub-buckets is 0 or above 4096.
    #[error("{0} sub-buckets is outside 1 ..= 4096")]
    BadBuckets(usize),
    /// The window is shorter than one nanosecond per sub-bucket (or longer than ~584 years).
    #[error("window {0:?} is too short for its sub-buckets")]
    BadWindow(Duration),
}

/// Counters of one meter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct MeterStats {
    /// Frames admitted.
    pub admitted_frames: u64,
    /// Wire bytes admitted.
    pub admitted_bytes: u64,
    /// Frames dropped preemptively.
    pub dropped_frames: u64,
    /// Wire bytes dropped preemptively.
    pub dropped_bytes: u64,
}

/// Sliding-window meter of the non-real-time bytes arriving on one input link (see the module
/// docs). Call [`NrtMeter::admit`] for each non-real-time frame as it arrives, before routing it;
/// call [`NrtMeter::set_residual_bps`] whenever a reservation on the link is made or released.
#[derive(Debug, Clone)]
pub struct NrtMeter {
    bucket_ns: u64,
    /// Admitted wire bytes per sub-bucket; bucket `i` (absolute) lives at `i % len`.
    buckets: Box<[u64]>,
    /// Absolute index of the newest bucket.
    head: u64,
    /// Sum of `buckets`.
    sum: u64,
    residual_bps: u64,
    /// `residual × window / 8`: most bytes admitted per window.
    limit_bytes: u64,
    stats: MeterStats,
}

impl NrtMeter {
    /// A meter over `window` split into `buckets` sub-buckets, admitting up to `residual_bps`.
    pub fn new(
        window: Duration,
        buckets: usize,
        residual_bps: u64,
    ) -> Result<NrtMeter, DiscardError> {
        if buckets == 0 || buckets > MAX_BUCKETS {
            return Err(DiscardError::BadBuckets(buckets));
        }
        let window_ns =
            u64::try_from(window.as_nanos()).map_err(|_| DiscardError::BadWindow(window))?;
        // `buckets` ≤ 4096, so it fits a u64.
        let bucket_ns = window_ns / buckets as u64;
        if bucket_ns == 0 {
            return Err(DiscardError::BadWindow(window));
        }
        let mut meter = NrtMeter {
            bucket_ns,
            buckets: vec![0; buckets].into_boxed_slice(),
            head: 0,
            sum: 0,
            residual_bps: 0,
            limit_bytes: 0,
            stats: MeterStats::default(),
        };
        meter.set_residual_bps(residual_bps);
        Ok(meter)
    }

    /// A meter with the default window ([`DEFAULT_WINDOW`] in [`DEFAULT_BUCKETS`] sub-buckets).
    pub fn with_residual(residual_bps: u64) -> NrtMeter {
        // The defaults (10 buckets of 1 ms) pass every check of `new`.
        NrtMeter::new(DEFAULT_WINDOW, DEFAULT_BUCKETS, residual_bps)
            .expect("default window and bucket count are valid")
    }

    /// Sets the residual bandwidth: link rate − sum of the real-time reservations on this link.
    pub fn set_residual_bps(&mut self, residual_bps: u64) {
        self.residual_bps = residual_bps;
        let window_ns = u128::from(self.bucket_ns) * self.buckets.len() as u128;
        let limit = u128::from(residual_bps) * window_ns / 8 / 1_000_000_000;
        self.limit_bytes = u64::try_from(limit).unwrap_or(u64::MAX);
    }

    /// The residual bandwidth in bit/s.
    pub fn residual_bps(&self) -> u64 {
        self.residual_bps
    }

    /// The effective window (sub-bucket length × number of sub-buckets).
    pub fn window(&self) -> Duration {
        Duration::from_nanos(self.bucket_ns.saturating_mul(self.buckets.len() as u64))
    }

    /// The meter's counters.
    pub fn stats(&self) -> &MeterStats {
        &self.stats
    }

    /// Admitted non-real-time rate over the window ending at `now`, in bit/s.
    pub fn rate_bps(&mut self, now: Instant) -> u64 {
        self.advance(now);
        let window_ns = u128::from(self.bucket_ns) * self.buckets.len() as u128;
        let rate = u128::from(self.sum) * 8 * 1_000_000_000 / window_ns.max(1);
        u64::try_from(rate).unwrap_or(u64::MAX)
    }

    fn advance(&mut self, now: Instant) {
        let index = now.as_nanos() / self.bucket_ns;
        if index <= self.head {
            return;
        }
        let n = self.buckets.len() as u64;
        let steps = (index - self.head).min(n);
        for i in 1..=steps {
            // The modulo keeps the index below `buckets.len()`.
            let slot = ((self.head + i) % n) as usize;
            self.sum -= self.buckets[slot];
            self.buckets[slot] = 0;
        }
        self.head = index;
    }

    /// Whether a non-real-time frame of `wire_bytes` bytes on the wire (e.g.
    /// `wire_bits(len) / 8`) arriving at `now` may pass; `false` means drop it preemptively.
    pub fn admit(&mut self, now: Instant, wire_bytes: usize) -> bool {
        self.advance(now);
        let bytes = u64::try_from(wire_bytes).unwrap_or(u64::MAX);
        if self.sum.saturating_add(bytes) > self.limit_bytes {
            self.stats.dropped_frames += 1;
            self.stats.dropped_bytes += bytes;
            return false;
        }
        let slot = (self.head % self.buckets.len() as u64) as usize;
        self.buckets[slot] += bytes;
        self.sum += bytes;
        self.stats.admitted_frames += 1;
        self.stats.admitted_bytes += bytes;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// Offers `frame` wire bytes at `offered_bps` for `secs` seconds; returns the admitted bytes.
    fn offer(meter: &mut NrtMeter, offered_bps: u64, frame: usize, secs: u64) -> u64 {
        let gap_ns = frame as u64 * 8 * 1_000_000_000 / offered_bps;
        let end = secs * 1_000_000_000;
        let mut t = 0;
        let mut admitted = 0;
        while t < end {
            if meter.admit(Instant::from_nanos(t), frame) {
                admitted += frame as u64;
            }
            t += gap_ns;
        }
        admitted
    }

    #[test]
    fn under_the_residual_everything_passes() {
        let mut meter = NrtMeter::with_residual(50_000_000);
        offer(&mut meter, 45_000_000, 1538, 1);
        assert_eq!(meter.stats().dropped_frames, 0);
        assert!(meter.stats().admitted_frames > 3000);
    }

    #[test]
    fn at_twice_the_residual_admits_the_residual() {
        let residual = 40_000_000;
        let mut meter = NrtMeter::new(DEFAULT_WINDOW, DEFAULT_BUCKETS, residual).expect("valid");
        let admitted = offer(&mut meter, 2 * residual, 1000, 1);
        let rate = admitted * 8;
        let err = (rate as f64 - residual as f64).abs() / residual as f64;
        assert!(err < 0.05, "admitted {rate} bit/s vs residual {residual}");
        let s = meter.stats();
        let dropped_share = s.dropped_frames as f64 / (s.dropped_frames + s.admitted_frames) as f64;
        assert!((0.45..0.55).contains(&dropped_share), "{dropped_share}");
    }

    #[test]
    fn window_slides_and_residual_changes_apply() {
        // 8 Mbit/s over 10 ms = 10_000 bytes per window.
        let mut meter = NrtMeter::with_residual(8_000_000);
        assert!(meter.admit(Instant::ZERO, 10_000));
        assert!(!meter.admit(Instant::from_nanos(5 * MS), 1));
        assert_eq!(meter.rate_bps(Instant::from_nanos(9 * MS)), 8_000_000);
        // The bucket of t = 0 leaves the window at t = 10 ms.
        assert!(meter.admit(Instant::from_nanos(10 * MS), 10_000));
        assert!(!meter.admit(Instant::from_nanos(10 * MS), 1));
        // A long gap clears everything.
        assert_eq!(meter.rate_bps(Instant::from_nanos(1_000 * MS)), 0);
        meter.set_residual_bps(0);
        assert!(!meter.admit(Instant::from_nanos(1_000 * MS), 60));
        assert_eq!(meter.stats().dropped_frames, 3);
    }

    #[test]
    fn rejects_bad_configuration() {
        assert_eq!(
            NrtMeter::new(DEFAULT_WINDOW, 0, 1).err(),
            Some(DiscardError::BadBuckets(0))
        );
        assert_eq!(
            NrtMeter::new(Duration::from_nanos(3), 4, 1).err(),
            Some(DiscardError::BadWindow(Duration::from_nanos(3)))
        );
    }
}
