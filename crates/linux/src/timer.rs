//! Absolute-deadline wake-ups for the data plane (DESIGN.md §7): a `timerfd` on `CLOCK_MONOTONIC`
//! armed with `TFD_TIMER_ABSTIME` at the core's next deadline, and a record of how late each
//! wake-up came ("count what a wake-up is late and report it"). Pacing runs on the core's virtual
//! time, so lateness costs a small burst, not rate; these counters say how big the bursts were.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

use rtlan_core::time::Instant;

use crate::clock;

/// A timer system call failed.
#[derive(Debug, thiserror::Error)]
pub enum TimerError {
    /// `timerfd_create` failed.
    #[error("timerfd_create: {0}")]
    Create(#[source] io::Error),
    /// `timerfd_settime` failed.
    #[error("timerfd_settime: {0}")]
    Arm(#[source] io::Error),
}

/// Wake-ups later than this are counted separately (DESIGN.md §7).
pub const LATE_THRESHOLD: Duration = Duration::from_micros(50);

/// Number of histogram buckets in [`LatenessStats::histogram`].
pub const HISTOGRAM_BUCKETS: usize = 20;

/// How late timer wake-ups were relative to their deadlines.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct LatenessStats {
    /// Deadlines that have passed and were observed by the loop.
    pub wakeups: u64,
    /// Largest lateness seen, in nanoseconds.
    pub max_ns: u64,
    /// Sum of all lateness, in nanoseconds (mean = `total_ns / wakeups`).
    pub total_ns: u64,
    /// Wake-ups later than [`LATE_THRESHOLD`] (50 µs).
    pub over_50us: u64,
    /// Coarse log2 histogram in microseconds: bucket 0 counts lateness below 1 µs, bucket `k`
    /// (k ≥ 1) counts `[2^(k-1), 2^k)` µs, and the last bucket everything from 2^18 µs (262 ms) on.
    pub histogram: [u64; HISTOGRAM_BUCKETS],
}

impl LatenessStats {
    /// Records one wake-up that came `late` after its deadline.
    pub fn record(&mut self, late: Duration) {
        let ns = u64::try_from(late.as_nanos()).unwrap_or(u64::MAX);
        self.wakeups += 1;
        self.max_ns = self.max_ns.max(ns);
        self.total_ns = self.total_ns.saturating_add(ns);
        if late > LATE_THRESHOLD {
            self.over_50us += 1;
        }
        self.histogram[Self::bucket(ns)] += 1;
    }

    /// The histogram bucket for a lateness of `ns` nanoseconds.
    pub fn bucket(ns: u64) -> usize {
        let us = ns / 1_000;
        // us = 0 -> 0; us in [2^(k-1), 2^k) -> k = bit length of us.
        let k = (u64::BITS - us.leading_zeros()) as usize;
        k.min(HISTOGRAM_BUCKETS - 1)
    }
}

/// A `CLOCK_MONOTONIC` timerfd armed at absolute deadlines.
#[derive(Debug)]
pub struct Timer {
    fd: OwnedFd,
    armed: Option<Instant>,
    lateness: LatenessStats,
}

impl Timer {
    /// Creates a disarmed, non-blocking timer.
    pub fn new() -> Result<Self, TimerError> {
        // SAFETY: plain system call with constant arguments; the result is checked below.
        let raw = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if raw < 0 {
            return Err(TimerError::Create(io::Error::last_os_error()));
        }
        // SAFETY: `raw` is a fresh descriptor we own and nothing else will close.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        Ok(Timer {
            fd,
            armed: None,
            lateness: LatenessStats::default(),
        })
    }

    /// Arms the timer at `deadline` (absolute, `CLOCK_MONOTONIC`), or disarms it with `None`.
    /// Re-arming at the deadline already set costs no system call.
    pub fn arm(&mut self, deadline: Option<Instant>) -> Result<(), TimerError> {
        if deadline == self.armed {
            return Ok(());
        }
        let value = match deadline {
            // An all-zero it_value disarms a timerfd: a deadline at the epoch becomes 1 ns.
            Some(t) => clock::to_timespec(t.max(Instant::from_nanos(1))),
            None => libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
        };
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: value,
        };
        // SAFETY: `self.fd` is a valid timerfd, `spec` is a valid itimerspec that the kernel only
        // reads, and a null old_value is allowed.
        let rc = unsafe {
            libc::timerfd_settime(
                self.fd.as_raw_fd(),
                libc::TFD_TIMER_ABSTIME,
                &spec,
                std::ptr::null_mut(),
            )
        };
        if rc < 0 {
            return Err(TimerError::Arm(io::Error::last_os_error()));
        }
        self.armed = deadline;
        Ok(())
    }

    /// The deadline the timer is armed at, if any.
    pub fn deadline(&self) -> Option<Instant> {
        self.armed
    }

    /// Clears the descriptor's readiness after epoll reported it readable.
    pub fn drain(&mut self) {
        let mut expirations = [0u8; 8];
        // SAFETY: reads at most 8 bytes into an 8-byte buffer from a timerfd we own; the fd is
        // non-blocking, so this never sleeps. EAGAIN (nothing to read) is harmless.
        let _ = unsafe {
            libc::read(
                self.fd.as_raw_fd(),
                expirations.as_mut_ptr().cast(),
                expirations.len(),
            )
        };
    }

    /// If the armed deadline has passed at `now`, records how late `now` is, forgets the deadline
    /// and returns `true`.
    pub fn check_expired(&mut self, now: Instant) -> bool {
        match self.armed {
            Some(deadline) if deadline <= now => {
                self.lateness.record(now - deadline);
                self.armed = None;
                true
            }
            _ => false,
        }
    }

    /// Lateness counters so far.
    pub fn lateness(&self) -> &LatenessStats {
        &self.lateness
    }
}

impl AsRawFd for Timer {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_are_log2_microseconds() {
        assert_eq!(LatenessStats::bucket(0), 0);
        assert_eq!(LatenessStats::bucket(999), 0);
        assert_eq!(LatenessStats::bucket(1_000), 1);
        assert_eq!(LatenessStats::bucket(1_999), 1);
        assert_eq!(LatenessStats::bucket(2_000), 2);
        assert_eq!(LatenessStats::bucket(3_999), 2);
        assert_eq!(LatenessStats::bucket(4_000), 3);
        assert_eq!(LatenessStats::bucket(50_000), 6); // 32..64 us
        assert_eq!(LatenessStats::bucket(u64::MAX), HISTOGRAM_BUCKETS - 1);
    }

    #[test]
    fn record_tracks_max_total_and_late_count() {
        let mut s = LatenessStats::default();
        s.record(Duration::from_micros(10));
        s.record(Duration::from_micros(50));
        s.record(Duration::from_micros(51));
        s.record(Duration::from_millis(3));
        assert_eq!(s.wakeups, 4);
        assert_eq!(s.max_ns, 3_000_000);
        assert_eq!(s.total_ns, 10_000 + 50_000 + 51_000 + 3_000_000);
        assert_eq!(s.over_50us, 2, "exactly 50 us is not late");
        assert_eq!(s.histogram.iter().sum::<u64>(), 4);
        assert_eq!(s.histogram[4], 1); // 10 us in [8, 16)
        assert_eq!(s.histogram[12], 1); // 3000 us in [2048, 4096)
    }

    #[test]
    fn timer_fires_at_absolute_deadline_and_records_lateness() {
        let mut t = Timer::new().expect("timerfd");
        let deadline = clock::now() + Duration::from_millis(2);
        t.arm(Some(deadline)).expect("arm");
        assert_eq!(t.deadline(), Some(deadline));
        assert!(!t.check_expired(deadline - Duration::from_nanos(1)));
        let mut pfd = libc::pollfd {
            fd: t.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd, length 1.
        let n = unsafe { libc::poll(&mut pfd, 1, 1_000) };
        assert_eq!(n, 1, "timerfd did not fire within 1 s");
        let now = clock::now();
        assert!(now >= deadline, "fired before its deadline");
        t.drain();
        assert!(t.check_expired(now));
        assert_eq!(t.deadline(), None);
        assert_eq!(t.lateness().wakeups, 1);
        assert_eq!(t.lateness().max_ns, (now - deadline).as_nanos() as u64);
        // Disarmed: does not fire again.
        t.arm(None).expect("disarm");
        // SAFETY: as above.
        let n = unsafe { libc::poll(&mut pfd, 1, 20) };
        assert_eq!(n, 0);
    }
}
