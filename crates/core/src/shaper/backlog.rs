//! The bounded datagram ring both shapers queue into (EtheReal §3.2: the RTTR library's buffer of
//! N × the reservation). Capacity is counted in wire bytes ([`super::wire_bytes`]); the ring of
//! entries is allocated once, large enough for the buffer filled with minimum-size datagrams, so
//! pushing never allocates.

use std::collections::VecDeque;

use super::{
    wire_bytes, Rejected, ShaperError, ShaperStats, Transmit, MAX_QUEUED_DATAGRAMS, NANOS_PER_SEC,
};
use crate::time::Instant;

/// One queued datagram.
#[derive(Debug, Clone)]
struct Entry<T> {
    len: usize,
    wire: u64,
    enqueued: Instant,
    payload: T,
}

/// A FIFO of datagrams bounded by wire bytes and by entry count, with the shaper's counters.
#[derive(Debug, Clone)]
pub(super) struct Backlog<T> {
    ring: VecDeque<Entry<T>>,
    /// Never more entries than this (the ring's allocated capacity).
    max_entries: usize,
    capacity_bytes: u64,
    max_datagram: usize,
    stats: ShaperStats,
    /// Forfeited rate in bit·ns (the exact sum behind `stats.forfeited_wire_bytes`).
    forfeited_scaled: u128,
    /// Unused rate in bit·ns (behind `stats.unused_wire_bytes`).
    unused_scaled: u128,
}

impl<T> Backlog<T> {
    /// A ring for `capacity_bytes` wire bytes of datagrams of at most `max_datagram` payload bytes.
    pub(super) fn new(capacity_bytes: u64, max_datagram: usize) -> Self {
        let by_bytes = usize::try_from(capacity_bytes / wire_bytes(0)).unwrap_or(usize::MAX);
        let max_entries = by_bytes.clamp(1, MAX_QUEUED_DATAGRAMS);
        Backlog {
            ring: VecDeque::with_capacity(max_entries),
            max_entries,
            capacity_bytes,
            max_datagram,
            stats: ShaperStats::default(),
            forfeited_scaled: 0,
            unused_scaled: 0,
        }
    }

    /// Appends a datagram, or hands it back (counted as dropped) if it is too large or does not fit.
    pub(super) fn push(&mut self, now: Instant, len: usize, payload: T) -> Result<(), Rejected<T>> {
        self.stats.offered_datagrams += 1;
        if len > self.max_datagram {
            self.stats.dropped_too_large += 1;
            let error = ShaperError::TooLarge {
                len,
                max: self.max_datagram,
            };
            return Err(Rejected { error, payload });
        }
        let wire = wire_bytes(len);
        let queued = self.stats.queued_wire_bytes;
        if queued + wire > self.capacity_bytes || self.ring.len() >= self.max_entries {
            self.stats.dropped_full += 1;
            let error = ShaperError::BufferFull {
                queued,
                capacity: self.capacity_bytes,
                needed: wire,
            };
            return Err(Rejected { error, payload });
        }
        self.ring.push_back(Entry {
            len,
            wire,
            enqueued: now,
            payload,
        });
        self.stats.queued_datagrams += 1;
        self.stats.queued_wire_bytes += wire;
        Ok(())
    }

    /// Wire bytes of the head datagram, if any.
    pub(super) fn head_wire(&self) -> Option<u64> {
        self.ring.front().map(|e| e.wire)
    }

    /// Removes the head datagram and counts it as sent at `now`.
    pub(super) fn pop(&mut self, now: Instant) -> Option<Transmit<T>> {
        let entry = self.ring.pop_front()?;
        let s = &mut self.stats;
        s.queued_datagrams -= 1;
        s.queued_wire_bytes -= entry.wire;
        s.sent_datagrams += 1;
        s.sent_wire_bytes += entry.wire;
        s.max_queueing_delay = s.max_queueing_delay.max(now - entry.enqueued);
        Some(Transmit {
            len: entry.len,
            payload: entry.payload,
        })
    }

    /// Counts `scaled` bit·ns of rate the shaper could not use: forfeit if a datagram waits
    /// (the shaper woke late), unused if none does (the application sent less).
    pub(super) fn lose(&mut self, scaled: u128) {
        let (sum, counter) = if self.ring.is_empty() {
            (&mut self.unused_scaled, &mut self.stats.unused_wire_bytes)
        } else {
            (
                &mut self.forfeited_scaled,
                &mut self.stats.forfeited_wire_bytes,
            )
        };
        *sum = sum.saturating_add(scaled);
        *counter = u64::try_from(*sum / (8 * NANOS_PER_SEC)).unwrap_or(u64::MAX);
    }

    /// Whether nothing is queued.
    pub(super) fn is_empty(&self) -> bool {
        self.ring.is_empty()
    }

    /// The counters.
    pub(super) fn stats(&self) -> &ShaperStats {
        &self.stats
    }
}
