//! Sender-side traffic shaping for real-time connections: the RTTR library's leaky bucket
//! (EtheReal §3.2) and the token bucket with a shaping interval `Ts` (Löser/Härtig, bucket size
//! `b = r·Ts + M`).
//!
//! Both shapers are sans-IO cores (DESIGN.md §2): every call takes `now`, nothing reads a clock.
//! They hold datagrams of a caller-chosen payload type `T` (an opaque slot index into the shell's
//! buffer pool, or the bytes themselves) in a ring allocated once at construction; no call
//! allocates afterwards.
//!
//! # What a reservation counts
//!
//! A reserved rate (`rate_bps`) counts **whole Ethernet frames on the wire**, in bits per second:
//! for a UDP datagram with `p` payload bytes that is [`wire_bytes`]`(p)` =
//! `max(p + 8 (UDP) + 20 (IPv4) + 14 (Ethernet header), 60) + 4 (FCS) + 20 (preamble 7, SFD 1,
//! inter-frame gap 12)` bytes — the same accounting the switch pacer uses
//! ([`rtlan_wire::cost::wire_bytes`]). A minimum-size datagram therefore costs 84 bytes. Counting only
//! the UDP payload would let a connection send more than it reserved and its queues in the
//! switches grow without bound. Buffer sizes and bucket depths are counted the same way.
//!
//! Submodules, by concern: `backlog` (the bounded datagram ring shared by both shapers), `leaky`
//! ([`LeakyBucketShaper`]), `token` ([`TokenBucketShaper`]).

use std::fmt;
use std::time::Duration;

use rtlan_wire::cost;

mod backlog;
mod leaky;
#[cfg(test)]
mod tests;
mod token;

pub use leaky::{LeakyBucketConfig, LeakyBucketShaper};
pub use token::{TokenBucketConfig, TokenBucketShaper};

/// Bytes of headers a UDP datagram carries in an untagged Ethernet frame (without FCS): UDP (8) +
/// IPv4 without options (20) + Ethernet (14).
pub const UDP_FRAME_OVERHEAD: usize = 8 + 20 + 14;

/// The largest UDP payload an IPv4 datagram can carry (65535 − 20 − 8).
pub const MAX_UDP_PAYLOAD: usize = 65_507;

/// The largest UDP payload that fits one standard 1500-byte Ethernet MTU (1500 − 20 − 8); the
/// default maximum datagram `M`.
pub const DEFAULT_MAX_DATAGRAM: usize = 1_472;

/// At most this many datagrams are ever queued in one shaper, whatever the buffer size (it bounds
/// the memory of the ring allocated at construction).
pub const MAX_QUEUED_DATAGRAMS: usize = 1 << 20;

/// Nanoseconds per second; credit and tokens are kept in bit·ns units (bits × 10⁹), so that
/// `rate_bps × elapsed_ns` adds exactly, with no rounding over a long run.
const NANOS_PER_SEC: u128 = 1_000_000_000;

/// Bytes a UDP datagram with `udp_payload` payload bytes costs on the wire against a reservation:
/// `max(udp_payload + 8 + 20 + 14, 60) + 4 + 20` (see the module docs). `wire_bytes(0) == 84`,
/// `wire_bytes(1472) == 1538`.
pub fn wire_bytes(udp_payload: usize) -> u64 {
    cost::wire_bytes(udp_payload.saturating_add(UDP_FRAME_OVERHEAD))
}

/// [`wire_bytes`] in bit·ns units (bits × 10⁹), the unit the shapers account in.
fn wire_scaled(udp_payload: usize) -> u128 {
    u128::from(wire_bytes(udp_payload)) * 8 * NANOS_PER_SEC
}

/// Bit·ns earned by `rate_bps` over `elapsed`.
fn earned_scaled(rate_bps: u64, elapsed: Duration) -> u128 {
    u128::from(rate_bps).saturating_mul(elapsed.as_nanos())
}

/// Why a shaper could not be built or refused a datagram.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShaperError {
    /// The reserved rate is zero.
    #[error("reserved rate must be positive")]
    ZeroRate,
    /// The timer period or shaping interval is zero.
    #[error("timer period / shaping interval must be positive")]
    ZeroInterval,
    /// The maximum datagram exceeds what UDP over IPv4 can carry.
    #[error("maximum datagram {len} exceeds {MAX_UDP_PAYLOAD} bytes")]
    MaxDatagramTooLarge {
        /// The configured maximum UDP payload.
        len: usize,
    },
    /// The buffer cannot hold even one maximum-size datagram.
    #[error("buffer of {buffer_bytes} wire bytes cannot hold one datagram of {needed} wire bytes")]
    BufferTooSmall {
        /// The configured buffer, in wire bytes.
        buffer_bytes: u64,
        /// Wire bytes of one maximum-size datagram.
        needed: u64,
    },
    /// The token bucket is shallower than one maximum-size datagram, which could never be sent.
    #[error("bucket of {bucket_bytes} wire bytes cannot hold one datagram of {needed} wire bytes")]
    BucketTooSmall {
        /// The configured bucket depth, in wire bytes.
        bucket_bytes: u64,
        /// Wire bytes of one maximum-size datagram.
        needed: u64,
    },
    /// The datagram is longer than the configured maximum datagram.
    #[error("datagram of {len} bytes exceeds the maximum of {max}")]
    TooLarge {
        /// The offered UDP payload length.
        len: usize,
        /// The configured maximum.
        max: usize,
    },
    /// The shaping buffer has no room for the datagram; it was dropped.
    #[error(
        "shaping buffer full: {queued} of {capacity} wire bytes queued, datagram needs {needed}"
    )]
    BufferFull {
        /// Wire bytes already queued.
        queued: u64,
        /// The buffer size in wire bytes.
        capacity: u64,
        /// Wire bytes of the refused datagram.
        needed: u64,
    },
}

/// A datagram a shaper refused, handed back so that the shell can reuse its buffer slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected<T> {
    /// Why it was refused.
    pub error: ShaperError,
    /// The datagram's payload (or slot index), returned to the caller.
    pub payload: T,
}

impl<T> fmt::Display for Rejected<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.error.fmt(f)
    }
}

impl<T: fmt::Debug> std::error::Error for Rejected<T> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// A datagram the shaper releases: hand it to the socket now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transmit<T> {
    /// UDP payload length in bytes, as given to `handle_send`.
    pub len: usize,
    /// The payload (or slot index) given to `handle_send`.
    pub payload: T,
}

/// Counters of one shaper. Datagrams are conserved:
/// `offered_datagrams == sent_datagrams + queued_datagrams + dropped_full + dropped_too_large`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct ShaperStats {
    /// Datagrams given to `handle_send`.
    pub offered_datagrams: u64,
    /// Datagrams released by `poll_transmit`.
    pub sent_datagrams: u64,
    /// Wire bytes ([`wire_bytes`]) of the released datagrams.
    pub sent_wire_bytes: u64,
    /// Datagrams currently queued.
    pub queued_datagrams: u64,
    /// Wire bytes currently queued.
    pub queued_wire_bytes: u64,
    /// Datagrams refused because the buffer was full.
    pub dropped_full: u64,
    /// Datagrams refused because they exceed the maximum datagram.
    pub dropped_too_large: u64,
    /// The longest a released datagram waited between `handle_send` and `poll_transmit`.
    #[serde(with = "duration_nanos")]
    pub max_queueing_delay: Duration,
    /// Wire bytes of rate the shaper could not use because it was woken late while datagrams
    /// waited (token bucket: tokens that overflowed the full bucket with a datagram queued;
    /// leaky bucket: a tick interval beyond `max_interval` with a datagram queued). What an
    /// idle connection does not use is [`unused_wire_bytes`](Self::unused_wire_bytes).
    pub forfeited_wire_bytes: u64,
    /// Wire bytes of rate that went unused because nothing waited (the application sent less
    /// than its rate: token bucket, tokens that overflowed the full bucket while idle; leaky
    /// bucket, credit beyond one datagram or a tick interval beyond `max_interval` while idle).
    /// Token bucket: sent + forfeited + unused + the tokens left = the bucket it started with +
    /// what the rate earned since; leaky bucket: the same without the starting bucket.
    pub unused_wire_bytes: u64,
}

/// Serialises a `Duration` as whole nanoseconds (JSON output stays a plain number).
mod duration_nanos {
    use std::time::Duration;

    pub(super) fn serialize<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u128(d.as_nanos())
    }
}
