//! The wire cost of an Ethernet frame, defined once for the whole workspace (IEEE 802.3 §3.1.1,
//! §4.4.2; EtheReal §3.3 counts reservations and cycle quotas in these units).
//!
//! A frame of `len` bytes as software sees it (destination MAC through payload, without FCS)
//! occupies the line for `max(len, 60) + 4 + 8 + 12` bytes: padded to the 60-byte minimum, plus
//! the 4-byte frame check sequence, 7 bytes of preamble and 1 of start-of-frame delimiter, and
//! the 12-byte inter-frame gap. A minimum-size frame therefore costs 84 bytes (672 bits) and a
//! full 1514-byte frame 1538 bytes.
//!
//! Every rate the switch books, paces or polices, and every rate the host-side shapers enforce,
//! is counted in these wire bytes, so the same number means the same thing everywhere.

use core::time::Duration;

/// Frames shorter than this (without FCS) are padded to it on the wire.
pub const MIN_FRAME_BYTES: u64 = 60;

/// Frame check sequence.
pub const FCS_BYTES: u64 = 4;

/// Preamble (7) and start-of-frame delimiter (1).
pub const PREAMBLE_SFD_BYTES: u64 = 8;

/// Inter-frame gap.
pub const IFG_BYTES: u64 = 12;

/// Bytes on the wire besides the (padded) frame: FCS + preamble and SFD + inter-frame gap = 24.
pub const WIRE_OVERHEAD_BYTES: u64 = FCS_BYTES + PREAMBLE_SFD_BYTES + IFG_BYTES;

/// Wire bytes of the smallest frame: 84.
pub const MIN_WIRE_BYTES: u64 = MIN_FRAME_BYTES + WIRE_OVERHEAD_BYTES;

const NANOS_PER_SEC: u128 = 1_000_000_000;

/// Bytes a frame of `len` bytes (without FCS) occupies on the wire, overhead included.
pub fn wire_bytes(len: usize) -> u64 {
    u64::try_from(len)
        .unwrap_or(u64::MAX)
        .max(MIN_FRAME_BYTES)
        .saturating_add(WIRE_OVERHEAD_BYTES)
}

/// Bits a frame of `len` bytes (without FCS) occupies on the wire, overhead included.
pub fn wire_bits(len: usize) -> u64 {
    wire_bytes(len).saturating_mul(8)
}

/// How long a frame of `len` bytes (without FCS) occupies a line of `rate_bps` bits per second,
/// rounded down to whole nanoseconds. `rate_bps` of 0 gives `Duration::MAX`.
pub fn tx_time(len: usize, rate_bps: u64) -> Duration {
    if rate_bps == 0 {
        return Duration::MAX;
    }
    let nanos = u128::from(wire_bits(len)) * NANOS_PER_SEC / u128::from(rate_bps);
    Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overhead_and_padding() {
        assert_eq!(WIRE_OVERHEAD_BYTES, 24);
        assert_eq!(MIN_WIRE_BYTES, 84);
        // Short frames are padded to 60 bytes.
        assert_eq!(wire_bytes(0), 84);
        assert_eq!(wire_bytes(14), 84);
        assert_eq!(wire_bytes(60), 84);
        assert_eq!(wire_bytes(61), 85);
        assert_eq!(wire_bytes(1514), 1538);
        assert_eq!(wire_bits(64), 704);
        // Saturates instead of wrapping on absurd lengths.
        assert_eq!(wire_bits(usize::MAX), u64::MAX);
    }

    #[test]
    fn tx_time_formula() {
        // 64-byte frame: (64 + 24) * 8 = 704 bits; at 10 Mbit/s that is 70.4 µs.
        assert_eq!(tx_time(64, 10_000_000), Duration::from_nanos(70_400));
        // Short frames are padded to 60 bytes: (60 + 24) * 8 = 672 bits.
        assert_eq!(tx_time(14, 10_000_000), Duration::from_nanos(67_200));
        // 1514-byte frame at 1 Gbit/s: 1538 * 8 = 12304 ns.
        assert_eq!(tx_time(1514, 1_000_000_000), Duration::from_nanos(12_304));
        // Rounded down: 704 bits at 3 bit/s is 234.666… s.
        assert_eq!(tx_time(64, 3), Duration::from_nanos(234_666_666_666));
        assert_eq!(tx_time(64, 0), Duration::MAX);
    }
}
