//! Output pacing on virtual time (DESIGN.md §7; EtheReal §3.3 serves each output port "at line
//! rate"): each paced port keeps a "line busy until" instant.
//!
//! A frame of `len` bytes (without FCS, as a node sees it) occupies the line for
//! [`rtlan_wire::cost::tx_time`]: `(max(len, 60) + 4 + 20) × 8 / rate` seconds — the frame padded
//! to the 60-byte minimum, the 4-byte FCS, and 20 bytes of preamble (7), start-of-frame delimiter
//! (1) and inter-frame gap (12). The
//! busy-until time is kept exactly, in nanoseconds plus a remainder in units of `1 / rate` ns, so
//! rounding never accumulates over a long run.
//!
//! A frame may go out once `now >= max(busy_until, its enqueue time)`. After it goes out,
//! `busy_until = max(busy_until, enqueue time, now - PACING_CATCHUP) + tx_time`. The `now -
//! PACING_CATCHUP` term lets a driver that woke late (timer slack) send the frames it owes in a
//! burst of at most [`PACING_CATCHUP`] worth of line time, instead of losing that rate for good; the
//! enqueue-time term keeps a port that was idle from bursting when traffic resumes.

use std::time::Duration;

use rtlan_wire::cost::wire_bits;

use crate::time::Instant;

/// How much line time a late wake-up may make up in one burst (see the module docs).
pub const PACING_CATCHUP: Duration = Duration::from_micros(200);

/// A send later than this after its frame became due counts as late
/// ([`super::SchedStats::late_sends`]).
pub const PACING_LATE_THRESHOLD: Duration = Duration::from_micros(50);

const NANOS_PER_SEC: u128 = 1_000_000_000;

/// The pacing state of one port.
#[derive(Debug, Clone)]
pub(crate) struct Pacer {
    /// Line rate; non-zero (checked when the switch is built).
    rate_bps: u64,
    busy_until: Instant,
    /// Fraction of a nanosecond beyond `busy_until`, in units of `1 / rate_bps` ns.
    remainder: u64,
    /// Line time a late wake-up may make up ([`PACING_CATCHUP`], or the port's per-send
    /// lateness budget when that is larger, so a send within the budget loses no line time and
    /// the delay bound's transmit half holds; docs/delay.md §4).
    catchup: Duration,
}

impl Pacer {
    /// A pacer for a line of `rate_bps` (> 0) bits per second, idle.
    pub(crate) fn new(rate_bps: u64) -> Pacer {
        Pacer {
            rate_bps: rate_bps.max(1),
            busy_until: Instant::ZERO,
            remainder: 0,
            catchup: PACING_CATCHUP,
        }
    }

    /// The same pacer making up at most `catchup` of line time after a late wake-up (never less
    /// than [`PACING_CATCHUP`]).
    pub(crate) fn with_catchup(mut self, catchup: Duration) -> Pacer {
        self.catchup = catchup.max(PACING_CATCHUP);
        self
    }

    /// When a frame enqueued at `enqueued` may go out.
    pub(crate) fn ready_at(&self, enqueued: Instant) -> Instant {
        self.busy_until.max(enqueued)
    }

    /// Books the line for a frame of `len` bytes enqueued at `enqueued` and sent at `now`.
    pub(crate) fn on_send(&mut self, now: Instant, enqueued: Instant, len: usize) {
        let floor = enqueued.max(now - self.catchup);
        if floor > self.busy_until {
            self.busy_until = floor;
            self.remainder = 0;
        }
        let numerator = u128::from(wire_bits(len)) * NANOS_PER_SEC + u128::from(self.remainder);
        let rate = u128::from(self.rate_bps);
        let nanos = u64::try_from(numerator / rate).unwrap_or(u64::MAX);
        // The remainder is < rate_bps, which is a u64.
        self.remainder = u64::try_from(numerator % rate).unwrap_or(0);
        self.busy_until += Duration::from_nanos(nanos);
    }

    /// The line is booked until this instant.
    pub(crate) fn busy_until(&self) -> Instant {
        self.busy_until
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtlan_wire::cost::tx_time;

    #[test]
    fn remainder_keeps_long_runs_exact() {
        // 3 bit/s does not divide 704e9: each frame takes 234_666_666_666.67 ns.
        let mut pacer = Pacer::new(3);
        let mut now = Instant::ZERO;
        for _ in 0..3 {
            pacer.on_send(now, Instant::ZERO, 64);
            now = pacer.busy_until();
        }
        // Three frames take exactly 704 s.
        assert_eq!(pacer.busy_until(), Instant::from_nanos(704_000_000_000));
    }

    #[test]
    fn late_send_catches_up_at_most_the_catchup() {
        let mut pacer = Pacer::new(10_000_000);
        pacer.on_send(Instant::ZERO, Instant::ZERO, 64);
        assert_eq!(pacer.busy_until(), Instant::from_nanos(70_400));
        // Sent 1 ms late: the schedule restarts 200 µs before now.
        let now = Instant::from_nanos(1_070_400);
        pacer.on_send(now, Instant::ZERO, 64);
        assert_eq!(
            pacer.busy_until(),
            now - PACING_CATCHUP + tx_time(64, 10_000_000)
        );
    }

    #[test]
    fn a_larger_catchup_makes_up_a_longer_late_wake_up() {
        // 10 Mbit/s: a 64-byte frame is 70.4 µs of line time. Woken 1 ms late with 1 ms owed:
        // the default pacer lets 200 µs be made up, one given 500 µs lets 500 µs.
        let late = Instant::from_nanos(1_000_000);
        let mut short = Pacer::new(10_000_000);
        short.on_send(late, Instant::ZERO, 64);
        let mut long = Pacer::new(10_000_000).with_catchup(Duration::from_micros(500));
        long.on_send(late, Instant::ZERO, 64);
        assert_eq!(
            short.busy_until(),
            late - PACING_CATCHUP + tx_time(64, 10_000_000)
        );
        assert_eq!(
            long.busy_until(),
            late - Duration::from_micros(500) + tx_time(64, 10_000_000)
        );
        // Never below the default.
        let floor = Pacer::new(10_000_000).with_catchup(Duration::from_micros(1));
        assert_eq!(floor.catchup, PACING_CATCHUP);
    }
}
