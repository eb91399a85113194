//! The RTTR library's timer-driven leaky bucket (EtheReal §3.2).
//!
//! The library registers a timer of period `T` and, on every timer interrupt, sends `T_m × B`
//! bytes from its buffer, where `B` is the reserved rate and `T_m` the *measured* interval since
//! the previous interrupt (timers are not delivered at exact multiples of `T`). Its buffer holds
//! `N × B × T`; with the default double buffering `N = 2`.
//!
//! Accounting here is exact: the credit is kept in bit·ns (bits × 10⁹) so `B × T_m` never rounds.
//! A datagram goes out while the credit covers its whole wire cost ([`super::wire_bytes`]). What
//! is left over after a tick is carried into the next one, and credit is kept while the buffer
//! is empty, but in both cases only up to one maximum-size datagram's worth, so an idle
//! connection cannot save up credit for a burst; and a single tick
//! grants at most `max_interval × B` (default `2T`), so a driver that stopped ticking (or woke very
//! late) does not release a burst either. Consequently the bytes sent on ticks `t_i..=t_j` never
//! exceed `B × (t_j − t_{i−1}) + wire_bytes(max_datagram)`; with ticks exactly every `T`, no
//! half-open window of length `T` sees more than `B × T + wire_bytes(max_datagram)`.

use std::time::Duration;

use super::backlog::Backlog;
use super::{
    earned_scaled, wire_bytes, wire_scaled, Rejected, ShaperError, ShaperStats, Transmit,
    DEFAULT_MAX_DATAGRAM, MAX_UDP_PAYLOAD, NANOS_PER_SEC,
};
use crate::time::Instant;

/// Configuration of a [`LeakyBucketShaper`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeakyBucketConfig {
    /// Reserved rate `B`, in wire bits per second (whole frames, see the module docs of
    /// [`crate::shaper`]).
    pub rate_bps: u64,
    /// Timer period `T` (10 ms on the paper's UNIX hosts).
    pub tick: Duration,
    /// Buffer size in wire bytes: `N × B × T` (default `N = 2`, double buffering).
    pub buffer_bytes: u64,
    /// Largest UDP payload the application sends (`M`).
    pub max_datagram: usize,
    /// The longest measured interval `T_m` one tick is credited for (default `2T`).
    pub max_interval: Duration,
}

impl LeakyBucketConfig {
    /// Rate `rate_bps`, timer `tick`, double buffering (`2 × B × T`, but at least two
    /// maximum-size datagrams), `M` = [`DEFAULT_MAX_DATAGRAM`], `max_interval = 2T`.
    pub fn new(rate_bps: u64, tick: Duration) -> Self {
        let cfg = LeakyBucketConfig {
            rate_bps,
            tick,
            buffer_bytes: 0,
            max_datagram: DEFAULT_MAX_DATAGRAM,
            max_interval: tick.saturating_mul(2),
        };
        cfg.with_burst_factor(2)
    }

    /// Sets the buffer to `n × B × T` (the paper's N, chosen from the application's maximum
    /// burst), but at least two maximum-size datagrams.
    pub fn with_burst_factor(mut self, n: u32) -> Self {
        let bits =
            earned_scaled(self.rate_bps, self.tick).saturating_mul(u128::from(n)) / NANOS_PER_SEC;
        let bytes = u64::try_from(bits / 8).unwrap_or(u64::MAX);
        self.buffer_bytes = bytes.max(2 * wire_bytes(self.max_datagram));
        self
    }

    fn validate(&self) -> Result<(), ShaperError> {
        if self.rate_bps == 0 {
            return Err(ShaperError::ZeroRate);
        }
        if self.tick.is_zero() || self.max_interval.is_zero() {
            return Err(ShaperError::ZeroInterval);
        }
        if self.max_datagram > MAX_UDP_PAYLOAD {
            return Err(ShaperError::MaxDatagramTooLarge {
                len: self.max_datagram,
            });
        }
        let needed = wire_bytes(self.max_datagram);
        if self.buffer_bytes < needed {
            return Err(ShaperError::BufferTooSmall {
                buffer_bytes: self.buffer_bytes,
                needed,
            });
        }
        Ok(())
    }
}

/// The paper's leaky bucket shaper for one real-time connection, sans-IO.
///
/// Driver call order:
/// 1. [`LeakyBucketShaper::new`] with the time the timer was armed.
/// 2. Whenever the application sends: [`handle_send`](Self::handle_send) (on `Err` the datagram
///    is dropped and handed back), then drain [`poll_transmit`](Self::poll_transmit) (leftover
///    credit may cover it at once).
/// 3. Arm a timer for [`poll_timeout`](Self::poll_timeout); when it fires, call
///    [`handle_tick`](Self::handle_tick) with the actual wake-up time, then call
///    [`poll_transmit`](Self::poll_transmit) until it returns `None` and send each datagram.
///    Keep ticking while idle (as the paper's periodic timer does); skipped ticks are credited
///    for at most `max_interval`.
#[derive(Debug, Clone)]
pub struct LeakyBucketShaper<T> {
    config: LeakyBucketConfig,
    backlog: Backlog<T>,
    last_tick: Instant,
    /// Unspent credit in bit·ns.
    credit: u128,
    /// The most credit carried across a tick: one maximum-size datagram, in bit·ns.
    carry_cap: u128,
    ticks: u64,
}

impl<T> LeakyBucketShaper<T> {
    /// A shaper whose timer was armed at `now`, with no credit and an empty buffer.
    pub fn new(config: LeakyBucketConfig, now: Instant) -> Result<Self, ShaperError> {
        config.validate()?;
        Ok(LeakyBucketShaper {
            backlog: Backlog::new(config.buffer_bytes, config.max_datagram),
            carry_cap: wire_scaled(config.max_datagram),
            config,
            last_tick: now,
            credit: 0,
            ticks: 0,
        })
    }

    /// Queues a datagram of `len` UDP payload bytes. Fails, counting a drop and handing the
    /// payload back, when `len` exceeds `max_datagram` or the buffer has no room.
    pub fn handle_send(&mut self, now: Instant, len: usize, payload: T) -> Result<(), Rejected<T>> {
        if self.backlog.is_empty() {
            // The connection was idle: what it did not use is lost beyond one datagram.
            self.clip_credit();
        }
        self.backlog.push(now, len, payload)
    }

    /// The timer fired at `now`: credits `T_m × B`, with `T_m = now − previous tick` (capped at
    /// `max_interval`), on top of the leftover credit (capped at one maximum-size datagram).
    pub fn handle_tick(&mut self, now: Instant) {
        let elapsed = now - self.last_tick;
        let measured = elapsed.min(self.config.max_interval);
        if elapsed > measured {
            let lost = earned_scaled(self.config.rate_bps, elapsed - measured);
            self.backlog.lose(lost);
        }
        self.last_tick = self.last_tick.max(now);
        self.clip_credit();
        self.credit = self
            .credit
            .saturating_add(earned_scaled(self.config.rate_bps, measured));
        self.ticks += 1;
    }

    /// Caps the carried credit at one maximum-size datagram, counting what goes.
    fn clip_credit(&mut self) {
        if self.credit > self.carry_cap {
            self.backlog.lose(self.credit - self.carry_cap);
            self.credit = self.carry_cap;
        }
    }

    /// The next datagram whose wire cost the credit covers, in FIFO order; `None` when the buffer
    /// is empty or the head does not fit the remaining credit.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Transmit<T>> {
        let need = u128::from(self.backlog.head_wire()?) * 8 * NANOS_PER_SEC;
        if need > self.credit {
            return None;
        }
        self.credit -= need;
        self.backlog.pop(now)
    }

    /// When the next timer tick is due (`T` after the last one).
    pub fn poll_timeout(&self) -> Instant {
        self.last_tick + self.config.tick
    }

    /// Whether no datagram is queued.
    pub fn is_idle(&self) -> bool {
        self.backlog.is_empty()
    }

    /// Timer ticks handled so far.
    pub fn ticks(&self) -> u64 {
        self.ticks
    }

    /// The counters.
    pub fn stats(&self) -> &ShaperStats {
        self.backlog.stats()
    }

    /// The configuration.
    pub fn config(&self) -> &LeakyBucketConfig {
        &self.config
    }
}
