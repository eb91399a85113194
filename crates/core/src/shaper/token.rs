//! Token-bucket shaping with a traffic shaping interval `Ts` (Löser/Härtig): the sender wakes at
//! most once every `Ts`, so the bucket must hold what the rate earns in `Ts` plus one packet,
//! `b = r·Ts + M`. The output then conforms to the arrival curve `b + r·t`: in any interval of
//! length `t` it sends at most `b + r·t` wire bytes.
//!
//! Tokens are kept exactly in bit·ns (bits × 10⁹) and are earned continuously at `r`, up to `b`.
//! A datagram is released when the tokens cover its whole wire cost ([`super::wire_bytes`]). The
//! bucket starts full.

use std::time::Duration;

use super::backlog::Backlog;
use super::{
    earned_scaled, wire_bytes, Rejected, ShaperError, ShaperStats, Transmit, DEFAULT_MAX_DATAGRAM,
    MAX_UDP_PAYLOAD, NANOS_PER_SEC,
};
use crate::time::Instant;

/// Configuration of a [`TokenBucketShaper`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenBucketConfig {
    /// Reserved rate `r`, in wire bits per second (whole frames, see [`crate::shaper`]).
    pub rate_bps: u64,
    /// Bucket depth `b`, in wire bytes.
    pub bucket_bytes: u64,
    /// Buffer for datagrams waiting for tokens, in wire bytes.
    pub buffer_bytes: u64,
    /// Largest UDP payload the application sends (`M` is its wire cost).
    pub max_datagram: usize,
}

impl TokenBucketConfig {
    /// Rate `rate_bps`, shaping interval `ts`, maximum datagram `max_datagram` (UDP payload):
    /// `b = r·Ts + M` with `M = wire_bytes(max_datagram)`, and a buffer of `2b`.
    pub fn new(rate_bps: u64, ts: Duration, max_datagram: usize) -> Self {
        let r_ts = earned_scaled(rate_bps, ts) / NANOS_PER_SEC / 8;
        let bucket_bytes = u64::try_from(r_ts)
            .unwrap_or(u64::MAX)
            .saturating_add(wire_bytes(max_datagram));
        TokenBucketConfig {
            rate_bps,
            bucket_bytes,
            buffer_bytes: bucket_bytes.saturating_mul(2),
            max_datagram,
        }
    }

    /// [`TokenBucketConfig::new`] with `M` = [`DEFAULT_MAX_DATAGRAM`].
    pub fn with_interval(rate_bps: u64, ts: Duration) -> Self {
        Self::new(rate_bps, ts, DEFAULT_MAX_DATAGRAM)
    }

    fn validate(&self) -> Result<(), ShaperError> {
        if self.rate_bps == 0 {
            return Err(ShaperError::ZeroRate);
        }
        if self.max_datagram > MAX_UDP_PAYLOAD {
            return Err(ShaperError::MaxDatagramTooLarge {
                len: self.max_datagram,
            });
        }
        let needed = wire_bytes(self.max_datagram);
        if self.bucket_bytes < needed {
            return Err(ShaperError::BucketTooSmall {
                bucket_bytes: self.bucket_bytes,
                needed,
            });
        }
        if self.buffer_bytes < needed {
            return Err(ShaperError::BufferTooSmall {
                buffer_bytes: self.buffer_bytes,
                needed,
            });
        }
        Ok(())
    }
}

/// A token-bucket shaper `(r, b)` for one connection, sans-IO.
///
/// Driver call order:
/// 1. [`TokenBucketShaper::new`] (bucket full at `now`).
/// 2. Whenever the application sends: [`handle_send`](Self::handle_send) (on `Err` the datagram
///    is dropped and handed back).
/// 3. Call [`poll_transmit`](Self::poll_transmit) until it returns `None`, sending each datagram.
/// 4. Arm a timer for [`poll_timeout`](Self::poll_timeout) (when the head datagram's tokens will
///    have accrued; `None` when nothing is queued) and go to 3 when it fires. A shell that may
///    wake only every `Ts` rounds this up to its next wake-up; the bucket depth absorbs that.
#[derive(Debug, Clone)]
pub struct TokenBucketShaper<T> {
    config: TokenBucketConfig,
    backlog: Backlog<T>,
    /// Tokens in bit·ns as of `updated`.
    tokens: u128,
    /// Bucket depth in bit·ns.
    depth: u128,
    updated: Instant,
}

impl<T> TokenBucketShaper<T> {
    /// A shaper with a full bucket at `now` and an empty buffer.
    pub fn new(config: TokenBucketConfig, now: Instant) -> Result<Self, ShaperError> {
        config.validate()?;
        let depth = u128::from(config.bucket_bytes) * 8 * NANOS_PER_SEC;
        Ok(TokenBucketShaper {
            backlog: Backlog::new(config.buffer_bytes, config.max_datagram),
            config,
            tokens: depth,
            depth,
            updated: now,
        })
    }

    /// Queues a datagram of `len` UDP payload bytes. Fails, counting a drop and handing the
    /// payload back, when `len` exceeds `max_datagram` or the buffer has no room.
    pub fn handle_send(&mut self, now: Instant, len: usize, payload: T) -> Result<(), Rejected<T>> {
        self.backlog.push(now, len, payload)
    }

    fn refill(&mut self, now: Instant) {
        if now > self.updated {
            let earned = earned_scaled(self.config.rate_bps, now - self.updated);
            self.tokens = self.tokens.saturating_add(earned).min(self.depth);
            self.updated = now;
        }
    }

    /// The head datagram, if the tokens accrued by `now` cover its wire cost.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Transmit<T>> {
        let need = u128::from(self.backlog.head_wire()?) * 8 * NANOS_PER_SEC;
        self.refill(now);
        if need > self.tokens {
            return None;
        }
        self.tokens -= need;
        self.backlog.pop(now)
    }

    /// When the head datagram's tokens will have accrued (rounded up to whole nanoseconds);
    /// `None` when nothing is queued.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let need = u128::from(self.backlog.head_wire()?) * 8 * NANOS_PER_SEC;
        let missing = need.saturating_sub(self.tokens);
        let rate = u128::from(self.config.rate_bps);
        let nanos = missing.div_ceil(rate);
        Some(self.updated + Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX)))
    }

    /// Wire bytes of tokens available at `now` (rounded down), without changing state.
    pub fn tokens_at(&self, now: Instant) -> u64 {
        let earned = earned_scaled(self.config.rate_bps, now - self.updated);
        let tokens = self.tokens.saturating_add(earned).min(self.depth);
        u64::try_from(tokens / (8 * NANOS_PER_SEC)).unwrap_or(u64::MAX)
    }

    /// Whether no datagram is queued.
    pub fn is_idle(&self) -> bool {
        self.backlog.is_empty()
    }

    /// The counters.
    pub fn stats(&self) -> &ShaperStats {
        self.backlog.stats()
    }

    /// The configuration.
    pub fn config(&self) -> &TokenBucketConfig {
        &self.config
    }
}
