//! The Internet checksum (RFC 1071) and its incremental update (RFC 1624).
//!
//! EtheReal §3.2 has the first switch rewrite the proxy destination IP to the receiver's IP; the
//! IPv4 header checksum and the UDP/TCP checksum (whose pseudo-header covers the address) are then
//! updated incrementally with RFC 1624 eqn. 3, `HC' = ~(~HC + ~m + m')`, instead of being summed
//! again over the whole packet.
//!
//! Conventions: [`data`], [`combine`] and [`pseudo_header_v4`] return the folded ones'-complement
//! *sum* (not yet complemented); a checksum field holds `!sum`. The `update_*` functions take and
//! return checksum *field* values.

use std::net::Ipv4Addr;

use crate::ipv4::Protocol;

/// Folds a 32-bit accumulator of 16-bit words into a 16-bit ones'-complement sum.
const fn fold(mut sum: u32) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

/// Adds two 16-bit values in ones'-complement arithmetic (end-around carry).
const fn add(a: u16, b: u16) -> u16 {
    fold(a as u32 + b as u32)
}

/// The folded ones'-complement sum of `data` taken as big-endian 16-bit words (an odd final byte
/// is padded with a zero low byte).
pub fn data(data: &[u8]) -> u16 {
    let mut sum: u64 = 0;
    let mut chunks = data.chunks_exact(2);
    for word in &mut chunks {
        sum += u64::from(u16::from_be_bytes([word[0], word[1]]));
    }
    if let [last] = chunks.remainder() {
        sum += u64::from(u16::from_be_bytes([*last, 0]));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    // The loop above leaves `sum <= 0xffff`.
    sum as u16
}

/// Combines partial sums (from [`data`], [`pseudo_header_v4`], ...) into one folded sum.
pub fn combine(sums: &[u16]) -> u16 {
    sums.iter().fold(0, |acc, &s| add(acc, s))
}

/// The folded sum of the IPv4 pseudo-header (RFC 768 / RFC 793): source, destination, zero,
/// protocol and the upper-layer length `len` (UDP/TCP header plus payload).
pub fn pseudo_header_v4(src: Ipv4Addr, dst: Ipv4Addr, protocol: Protocol, len: u16) -> u16 {
    let s = src.octets();
    let d = dst.octets();
    combine(&[
        u16::from_be_bytes([s[0], s[1]]),
        u16::from_be_bytes([s[2], s[3]]),
        u16::from_be_bytes([d[0], d[1]]),
        u16::from_be_bytes([d[2], d[3]]),
        u16::from(u8::from(protocol)),
        len,
    ])
}

/// RFC 1624 eqn. 3: the new checksum field after one 16-bit word covered by it changes from
/// `old_word` to `new_word`: `HC' = ~(~HC + ~m + m')`.
pub fn update_u16(old_checksum: u16, old_word: u16, new_word: u16) -> u16 {
    !combine(&[!old_checksum, !old_word, new_word])
}

/// The new checksum field after a covered IPv4 address changes from `old` to `new` (two
/// applications of [`update_u16`], one per 16-bit half).
pub fn update_addr(old_checksum: u16, old: Ipv4Addr, new: Ipv4Addr) -> u16 {
    let o = old.octets();
    let n = new.octets();
    !combine(&[
        !old_checksum,
        !u16::from_be_bytes([o[0], o[1]]),
        !u16::from_be_bytes([o[2], o[3]]),
        u16::from_be_bytes([n[0], n[1]]),
        u16::from_be_bytes([n[2], n[3]]),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn rfc1071_example() {
        // RFC 1071 §3: the words 0001 f203 f4f5 f6f7 sum to ddf2 (with end-around carries).
        assert_eq!(
            data(&[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]),
            0xddf2
        );
    }

    #[test]
    fn odd_length_pads_low_byte() {
        assert_eq!(data(&[0x12, 0x34, 0x56]), 0x1234 + 0x5600);
        assert_eq!(data(&[]), 0);
        assert_eq!(data(&[0xff, 0xff, 0x00, 0x01]), 0x0001);
    }

    #[test]
    fn combine_carries() {
        assert_eq!(combine(&[0xffff, 0x0002]), 0x0002);
        assert_eq!(combine(&[0x8000, 0x8000]), 0x0001);
        assert_eq!(combine(&[]), 0);
    }

    #[test]
    fn pseudo_header_known_value() {
        // c612 0001 + c612 0002 + 0011 + 000c = 0x18c44 → 0x8c45.
        let s = pseudo_header_v4(
            Ipv4Addr::new(198, 18, 0, 1),
            Ipv4Addr::new(198, 18, 0, 2),
            Protocol::Udp,
            12,
        );
        assert_eq!(s, 0x8c45);
    }

    #[test]
    fn rfc1624_section4_example() {
        // RFC 1624 §4: HC = 0xdd2f, m = 0x5555 changes to m' = 0x3285 gives HC' = 0x0000.
        assert_eq!(update_u16(0xdd2f, 0x5555, 0x3285), 0x0000);
    }

    proptest! {
        #[test]
        fn update_equals_recompute(
            mut words in proptest::collection::vec(any::<u16>(), 2..40),
            index in any::<proptest::sample::Index>(),
            new_word in any::<u16>(),
        ) {
            // Keep the data non-zero, as every real header is, so "+0" never arises.
            words[0] |= 0x4000;
            let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_be_bytes()).collect();
            let old_checksum = !data(&bytes);
            let i = 1 + index.index(words.len() - 1);
            let old_word = words[i];
            words[i] = new_word;
            let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_be_bytes()).collect();
            prop_assert_eq!(update_u16(old_checksum, old_word, new_word), !data(&bytes));
        }

        #[test]
        fn update_addr_equals_two_word_updates(
            hc in any::<u16>(), old in any::<[u8; 4]>(), new in any::<[u8; 4]>()
        ) {
            let stepwise = update_u16(
                update_u16(
                    hc,
                    u16::from_be_bytes([old[0], old[1]]),
                    u16::from_be_bytes([new[0], new[1]]),
                ),
                u16::from_be_bytes([old[2], old[3]]),
                u16::from_be_bytes([new[2], new[3]]),
            );
            // Equal as ones'-complement numbers (0x0000 and 0xffff are both zero).
            let at_once = update_addr(hc, Ipv4Addr::from(old), Ipv4Addr::from(new));
            prop_assert_eq!(fold(u32::from(stepwise)) % 0xffff, fold(u32::from(at_once)) % 0xffff);
        }
    }
}
