//! Boot epochs for the control protocol (`docs/protocol.md` §5 "Restarts"): every start of a
//! switch or host daemon picks one, so its neighbours see the restart and its request ids never
//! alias those of an earlier start.
//!
//! The value is the start time in Unix seconds (high 32 bits) and 32 bits from the kernel's
//! random source (low 32 bits): two starts differ even within one second, and a later start
//! usually compares greater (which the authentication work uses to refuse replayed epochs).

use std::time::{SystemTime, UNIX_EPOCH};

/// A fresh boot epoch. Never 0 (which stands for "no epoch" in duplicate tables).
pub fn boot_epoch() -> u64 {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut random = [0u8; 4];
    // SAFETY: `random` is a valid, writable 4-byte buffer for the duration of the call.
    let got = unsafe { libc::getrandom(random.as_mut_ptr().cast(), random.len(), 0) };
    if got != 4 {
        // No kernel randomness (never on Linux ≥ 3.17 once booted): fall back to the clock's
        // sub-second part and the PID, which still differ between two starts.
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        random = (nanos ^ std::process::id().rotate_left(16)).to_be_bytes();
    }
    ((secs & 0xffff_ffff) << 32 | u64::from(u32::from_be_bytes(random))).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_starts_get_different_epochs_that_carry_the_time() {
        let (a, b) = (boot_epoch(), boot_epoch());
        assert_ne!(a, b);
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("after 1970")
            .as_secs();
        assert!((a >> 32).abs_diff(now & 0xffff_ffff) <= 2);
    }
}
