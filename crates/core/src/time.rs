//! Virtual time for the sans-IO cores.
//!
//! The cores never read a clock: every `handle_*` / `poll_*` call takes `now: Instant`. An `Instant`
//! is a count of nanoseconds since an arbitrary epoch chosen by the driver (the Linux shell uses
//! `CLOCK_MONOTONIC`, tests start at zero).

use core::ops::{Add, AddAssign, Sub};
use std::time::Duration;

/// A point in time, in nanoseconds since the driver's epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Instant(u64);

impl Instant {
    /// The driver's epoch.
    pub const ZERO: Instant = Instant(0);

    /// An instant `nanos` nanoseconds after the epoch.
    pub const fn from_nanos(nanos: u64) -> Self {
        Instant(nanos)
    }

    /// Nanoseconds since the epoch.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// Time elapsed from `earlier` to `self`, zero if `earlier` is later.
    pub fn saturating_duration_since(self, earlier: Instant) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }
}

fn duration_nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, rhs: Duration) -> Instant {
        Instant(self.0.saturating_add(duration_nanos(rhs)))
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, rhs: Duration) {
        *self = *self + rhs;
    }
}

impl Sub<Duration> for Instant {
    type Output = Instant;
    fn sub(self, rhs: Duration) -> Instant {
        Instant(self.0.saturating_sub(duration_nanos(rhs)))
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;
    fn sub(self, rhs: Instant) -> Duration {
        self.saturating_duration_since(rhs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates() {
        let t = Instant::from_nanos(10);
        assert_eq!((t + Duration::from_nanos(5)).as_nanos(), 15);
        assert_eq!((t - Duration::from_nanos(50)).as_nanos(), 0);
        assert_eq!(t - Instant::from_nanos(20), Duration::ZERO);
        assert_eq!(Instant::from_nanos(25) - t, Duration::from_nanos(15));
        assert_eq!(
            (Instant::from_nanos(u64::MAX) + Duration::from_secs(1)).as_nanos(),
            u64::MAX
        );
    }
}
