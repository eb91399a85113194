//! The Linux clock behind the cores' virtual time (DESIGN.md §2, §7): `CLOCK_MONOTONIC` read as
//! [`Instant`] nanoseconds, and the conversion back to a `timespec` for absolute timer deadlines.

use rtlan_core::time::Instant;

/// The current `CLOCK_MONOTONIC` time as an [`Instant`] (nanoseconds since boot).
pub fn now() -> Instant {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; `clock_gettime` only writes through the pointer.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    // `clock_gettime(CLOCK_MONOTONIC)` fails only for an invalid clock id or pointer (EINVAL,
    // EFAULT), neither of which can happen here; on failure `ts` stays zero, which is still a
    // valid (if meaningless) instant rather than a panic.
    debug_assert_eq!(rc, 0, "clock_gettime(CLOCK_MONOTONIC) cannot fail");
    from_timespec(&ts)
}

/// The current `CLOCK_REALTIME` time in nanoseconds since the epoch (the clock of packet
/// sockets' receive stamps).
pub fn realtime_nanos() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: as in `now`.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    debug_assert_eq!(rc, 0, "clock_gettime(CLOCK_REALTIME) cannot fail");
    from_timespec(&ts).as_nanos()
}

/// Converts a `CLOCK_MONOTONIC` timespec to an [`Instant`]; negative fields count as zero.
pub fn from_timespec(ts: &libc::timespec) -> Instant {
    let secs = u64::try_from(ts.tv_sec).unwrap_or(0);
    let nanos = u64::try_from(ts.tv_nsec).unwrap_or(0);
    Instant::from_nanos(secs.saturating_mul(1_000_000_000).saturating_add(nanos))
}

/// Converts an [`Instant`] to a `CLOCK_MONOTONIC` timespec.
pub fn to_timespec(t: Instant) -> libc::timespec {
    let n = t.as_nanos();
    libc::timespec {
        // u64 seconds since boot fit an i64 for the next 292 years; saturate beyond.
        tv_sec: libc::time_t::try_from(n / 1_000_000_000).unwrap_or(libc::time_t::MAX),
        // Always < 1e9, which fits every c_long.
        tv_nsec: (n % 1_000_000_000) as libc::c_long,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn now_is_monotonic_and_near_the_kernel_clock() {
        let a = now();
        let b = now();
        assert!(b >= a);
        assert!(
            a.as_nanos() > 0,
            "CLOCK_MONOTONIC is time since boot, never zero"
        );
    }

    #[test]
    fn timespec_round_trip() {
        for n in [0u64, 1, 999_999_999, 1_000_000_000, 123_456_789_012_345] {
            let t = Instant::from_nanos(n);
            let ts = to_timespec(t);
            assert!(ts.tv_nsec < 1_000_000_000);
            assert_eq!(from_timespec(&ts), t);
        }
        let neg = libc::timespec {
            tv_sec: -5,
            tv_nsec: 10,
        };
        assert_eq!(from_timespec(&neg), Instant::from_nanos(10));
    }
}
