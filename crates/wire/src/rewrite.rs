//! In-place destination rewrite with incremental checksum update (EtheReal §3.2, RFC 1624).
//!
//! At the first switch on a real-time path, packets addressed to the proxy IP are rewritten to
//! carry the receiver's real IP. Only 4 bytes change, so the IPv4 header checksum and the UDP/TCP
//! checksum (whose pseudo-header covers the destination address) are updated with RFC 1624
//! eqn. 3 instead of being summed again over the whole payload.
//!
//! Rules: a UDP checksum of 0 means "none" and stays 0, and a UDP result of 0 is written as
//! 0xffff (RFC 768); fragments other than the first carry no L4 header, so only the IPv4 header
//! is touched; ICMP (and any other protocol) has no pseudo-header and needs no L4 fix. The first
//! fragment of a fragmented datagram holds the L4 checksum for the whole datagram, and the
//! incremental update is still exact for it.

use std::net::Ipv4Addr;

use crate::checksum;
use crate::ethernet::{EtherType, Frame};
use crate::ipv4::{self, Protocol};
use crate::{Error, Result};

/// Offset of the checksum field inside the L4 header whose checksum covers the IPv4
/// pseudo-header, if the packet carries one.
fn l4_checksum_offset(protocol: Protocol, frag_offset: u16) -> Option<usize> {
    if frag_offset != 0 {
        return None;
    }
    match protocol {
        Protocol::Udp => Some(6),
        Protocol::Tcp => Some(16),
        Protocol::Icmp | Protocol::Unknown(_) => None,
    }
}

/// Rewrites the destination address of the IPv4 packet at the start of `ip_packet` to
/// `new_dst`, updating the header checksum and the UDP or TCP checksum incrementally.
///
/// Errors (the buffer is then left unchanged): whatever `ipv4::Packet::new_checked` reports, and
/// [`Error::Truncated`] if a first fragment is too short to hold its L4 checksum field.
pub fn ipv4_dst(ip_packet: &mut [u8], new_dst: Ipv4Addr) -> Result<()> {
    let mut ip = ipv4::Packet::new_checked(&mut *ip_packet)?;
    let old_dst = ip.dst_addr();
    let l4_at = l4_checksum_offset(ip.protocol(), ip.frag_offset());
    if let Some(at) = l4_at {
        if ip.payload().len() < at + 2 {
            return Err(Error::Truncated);
        }
    }
    if old_dst == new_dst {
        return Ok(());
    }
    ip.set_checksum(checksum::update_addr(ip.checksum(), old_dst, new_dst));
    ip.set_dst_addr(new_dst);
    let Some(at) = l4_at else {
        return Ok(());
    };
    let is_udp = ip.protocol() == Protocol::Udp;
    let field = &mut ip.payload_mut()[at..at + 2];
    let old = u16::from_be_bytes([field[0], field[1]]);
    if is_udp && old == 0 {
        return Ok(());
    }
    let mut new = checksum::update_addr(old, old_dst, new_dst);
    if is_udp && new == 0 {
        new = 0xffff;
    }
    field.copy_from_slice(&new.to_be_bytes());
    Ok(())
}

/// Decrements the TTL of the IPv4 packet at the start of `ip_packet` and updates its header
/// checksum incrementally (RFC 1624 eqn. 3 on the TTL/protocol word; RFC 1812 §5.3.1: a router
/// forwarding a datagram decrements its TTL by one). Returns the new TTL.
///
/// Errors (the buffer is then left unchanged): whatever `ipv4::Packet::new_checked` reports, and
/// [`Error::Malformed`] if the TTL is already 0 (the caller drops a datagram whose TTL would
/// reach 0 before calling this, with ICMP time exceeded).
pub fn ipv4_ttl_decrement(ip_packet: &mut [u8]) -> Result<u8> {
    let mut ip = ipv4::Packet::new_checked(&mut *ip_packet)?;
    let ttl = ip.ttl();
    if ttl == 0 {
        return Err(Error::Malformed);
    }
    let protocol = u8::from(ip.protocol());
    let old_word = u16::from_be_bytes([ttl, protocol]);
    let new_word = u16::from_be_bytes([ttl - 1, protocol]);
    ip.set_checksum(checksum::update_u16(ip.checksum(), old_word, new_word));
    ip.set_ttl(ttl - 1);
    Ok(ttl - 1)
}

/// Sets the TTL of the IPv4 packet at the start of `ip_packet` to `ttl`, updating its header
/// checksum incrementally (RFC 1624 eqn. 3): what the last router of a label-switched path does
/// when it restores plain IP with the TTL the path left (RFC 3443's uniform model).
pub fn ipv4_ttl_set(ip_packet: &mut [u8], ttl: u8) -> Result<()> {
    let mut ip = ipv4::Packet::new_checked(&mut *ip_packet)?;
    let protocol = u8::from(ip.protocol());
    let old_word = u16::from_be_bytes([ip.ttl(), protocol]);
    let new_word = u16::from_be_bytes([ttl, protocol]);
    ip.set_checksum(checksum::update_u16(ip.checksum(), old_word, new_word));
    ip.set_ttl(ttl);
    Ok(())
}

/// Like [`ipv4_dst`] for a whole Ethernet frame, looking past up to two VLAN tags.
/// [`Error::Unsupported`] if the frame does not carry IPv4.
pub fn frame_ipv4_dst(frame: &mut [u8], new_dst: Ipv4Addr) -> Result<()> {
    let view = Frame::new_checked(&*frame)?;
    if view.inner_ethertype() != EtherType::Ipv4 {
        return Err(Error::Unsupported);
    }
    let header_len = view.header_len();
    ipv4_dst(&mut frame[header_len..], new_dst)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata::{TCP_SYN, UDP_PACKET};
    use crate::{tcp, udp};
    use proptest::prelude::*;

    const NEW_DST: Ipv4Addr = Ipv4Addr::new(198, 19, 0, 7);

    #[test]
    fn udp_vector() {
        let mut bytes = UDP_PACKET;
        ipv4_dst(&mut bytes, NEW_DST).unwrap();
        let mut expected = UDP_PACKET;
        expected[10..12].copy_from_slice(&[0x92, 0x59]); // IPv4 checksum, computed from scratch
        expected[16..20].copy_from_slice(&[198, 19, 0, 7]);
        expected[26..28].copy_from_slice(&[0xbf, 0x3c]); // UDP checksum, computed from scratch
        assert_eq!(bytes, expected);
    }

    #[test]
    fn tcp_vector_in_tagged_frame() {
        let mut frame = vec![
            0x02, 0, 0, 0, 0, 2, // destination
            0x02, 0, 0, 0, 0, 1, // source
            0x81, 0x00, 0x00, 0x2a, // 802.1Q, VID 42
            0x08, 0x00, // IPv4
        ];
        frame.extend_from_slice(&TCP_SYN);
        frame_ipv4_dst(&mut frame, NEW_DST).unwrap();
        let ip = &frame[18..];
        assert_eq!(ip[10..12], [0xfc, 0xba]); // IPv4 checksum, computed from scratch
        assert_eq!(ip[16..20], [198, 19, 0, 7]);
        assert_eq!(ip[36..38], [0x04, 0xa1]); // TCP checksum, computed from scratch
        assert_eq!(frame[12..16], [0x81, 0x00, 0x00, 0x2a], "tag intact");
    }

    #[test]
    fn ttl_decrement_vector_and_zero_ttl() {
        let mut bytes = UDP_PACKET;
        let ttl = bytes[8];
        assert_eq!(ipv4_ttl_decrement(&mut bytes), Ok(ttl - 1));
        assert_eq!(bytes[8], ttl - 1);
        assert!(ipv4::Packet::new_checked(&bytes[..])
            .unwrap()
            .verify_checksum());
        assert_eq!(
            bytes[12..],
            UDP_PACKET[12..],
            "only TTL and checksum change"
        );
        let mut zero = UDP_PACKET;
        zero[8] = 0;
        let before = zero;
        assert_eq!(ipv4_ttl_decrement(&mut zero), Err(Error::Malformed));
        assert_eq!(zero, before);
    }

    #[test]
    fn ttl_set_keeps_a_valid_checksum_for_every_ttl() {
        for ttl in 0..=255u8 {
            let mut bytes = UDP_PACKET;
            ipv4_ttl_set(&mut bytes, ttl).unwrap();
            assert_eq!(bytes[8], ttl);
            assert!(ipv4::Packet::new_checked(&bytes[..])
                .unwrap()
                .verify_checksum());
            assert_eq!(bytes[12..], UDP_PACKET[12..]);
        }
    }

    #[test]
    fn udp_without_checksum_stays_zero() {
        let mut bytes = UDP_PACKET;
        bytes[26..28].copy_from_slice(&[0, 0]);
        ipv4_dst(&mut bytes, NEW_DST).unwrap();
        assert_eq!(bytes[26..28], [0, 0]);
        assert!(ipv4::Packet::new_checked(&bytes[..])
            .unwrap()
            .verify_checksum());
    }

    #[test]
    fn udp_zero_result_is_written_as_ffff() {
        // Choose the payload so that after the rewrite the UDP sum is 0xffff (checksum 0).
        let mut expected = UDP_PACKET;
        expected[16..20].copy_from_slice(&NEW_DST.octets());
        expected[26..28].copy_from_slice(&[0, 0]);
        expected[28..32].copy_from_slice(&[0, 0, 0, 0]);
        let partial = checksum::combine(&[
            checksum::pseudo_header_v4(Ipv4Addr::new(198, 18, 0, 1), NEW_DST, Protocol::Udp, 12),
            checksum::data(&expected[20..32]),
        ]);
        expected[28..30].copy_from_slice(&(!partial).to_be_bytes());
        let mut bytes = expected;
        bytes[16..20].copy_from_slice(&[198, 18, 0, 2]);
        let mut ip = ipv4::Packet::new_checked(&mut bytes[..]).unwrap();
        ip.fill_checksum();
        let (src, dst) = (ip.src_addr(), ip.dst_addr());
        udp::Packet::new_checked(ip.payload_mut())
            .unwrap()
            .fill_checksum(src, dst);
        ipv4_dst(&mut bytes, NEW_DST).unwrap();
        assert_eq!(bytes[26..28], [0xff, 0xff]);
        let ip = ipv4::Packet::new_checked(&bytes[..]).unwrap();
        assert!(ip.verify_checksum());
        assert!(udp::Packet::new_checked(ip.payload())
            .unwrap()
            .verify_checksum(ip.src_addr(), NEW_DST));
    }

    #[test]
    fn non_first_fragment_touches_only_ip_header() {
        let mut bytes = UDP_PACKET;
        bytes[6..8].copy_from_slice(&[0x00, 0xb9]); // offset 1480
        ipv4::Packet::new_checked(&mut bytes[..])
            .unwrap()
            .fill_checksum();
        let before = bytes;
        ipv4_dst(&mut bytes, NEW_DST).unwrap();
        assert_eq!(bytes[20..], before[20..]);
        assert!(ipv4::Packet::new_checked(&bytes[..])
            .unwrap()
            .verify_checksum());
    }

    #[test]
    fn errors_leave_buffer_unchanged() {
        // A TCP first fragment with only 8 bytes of payload: no room for the checksum.
        let mut bytes = TCP_SYN[..28].to_vec();
        bytes[2..4].copy_from_slice(&28u16.to_be_bytes());
        bytes[6] = 0x20; // MF
        let before = bytes.clone();
        assert_eq!(ipv4_dst(&mut bytes, NEW_DST), Err(Error::Truncated));
        assert_eq!(bytes, before);
        let mut arp = [0u8; 42];
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        assert_eq!(frame_ipv4_dst(&mut arp, NEW_DST), Err(Error::Unsupported));
        assert_eq!(
            frame_ipv4_dst(&mut arp[..10], NEW_DST),
            Err(Error::Truncated)
        );
        for len in 0..TCP_SYN.len() {
            let mut short = TCP_SYN[..len].to_vec();
            assert!(ipv4_dst(&mut short, NEW_DST).is_err(), "len {len}");
            assert_eq!(short[..], TCP_SYN[..len]);
        }
    }

    /// A random, internally consistent IPv4 packet with from-scratch checksums.
    #[derive(Debug, Clone)]
    struct Case {
        bytes: Vec<u8>,
        udp_no_checksum: bool,
    }

    fn case() -> impl Strategy<Value = Case> {
        (
            prop_oneof![Just(6u8), Just(17u8), Just(1u8), any::<u8>()],
            0usize..=10, // IPv4 option words
            proptest::collection::vec(any::<u8>(), 0..80),
            any::<[u8; 40]>(), // header bytes (ports, seq, ...), options filler
            any::<([u8; 4], [u8; 4], u8, u8)>(),
            prop_oneof![Just(0u16), 1u16..0x2000], // fragment offset field
            any::<bool>(),
        )
            .prop_map(
                |(proto, opt_words, payload, hdr, (src, dst, ttl, dscp), off, nocs)| {
                    let ihl = 5 + opt_words;
                    let l4_len = match proto {
                        6 => 20,
                        17 => 8,
                        _ => 0,
                    };
                    let total = ihl * 4 + l4_len + payload.len();
                    let mut b = vec![0u8; total];
                    b[0] = 0x40 | ihl as u8;
                    b[1] = dscp;
                    b[2..4].copy_from_slice(&(total as u16).to_be_bytes());
                    b[6..8].copy_from_slice(&off.to_be_bytes());
                    b[8] = ttl;
                    b[9] = proto;
                    b[12..16].copy_from_slice(&src);
                    b[16..20].copy_from_slice(&dst);
                    b[20..ihl * 4].copy_from_slice(&hdr[..ihl * 4 - 20]);
                    b[ihl * 4..ihl * 4 + l4_len].copy_from_slice(&hdr[..l4_len]);
                    b[ihl * 4 + l4_len..].copy_from_slice(&payload);
                    let mut c = Case {
                        bytes: b,
                        udp_no_checksum: nocs && proto == 17,
                    };
                    fill_from_scratch(&mut c);
                    c
                },
            )
    }

    fn fill_from_scratch(c: &mut Case) {
        let mut ip = ipv4::Packet::new_checked(&mut c.bytes[..]).unwrap();
        let (src, dst) = (ip.src_addr(), ip.dst_addr());
        let first = ip.frag_offset() == 0;
        match ip.protocol() {
            Protocol::Tcp if first => {
                let mut seg = tcp::Packet::new_unchecked(ip.payload_mut());
                seg.set_header_len(20);
                seg.fill_checksum(src, dst);
            }
            Protocol::Udp if first => {
                let len = ip.payload().len() as u16;
                let mut dgram = udp::Packet::new_unchecked(ip.payload_mut());
                dgram.set_len(len);
                if c.udp_no_checksum {
                    dgram.set_checksum(0);
                } else {
                    dgram.fill_checksum(src, dst);
                }
            }
            _ => {}
        }
        ip.fill_checksum();
    }

    proptest! {
        #[test]
        fn incremental_equals_from_scratch(c in case(), new_dst in any::<[u8; 4]>()) {
            let new_dst = Ipv4Addr::from(new_dst);
            let mut incremental = c.clone();
            ipv4_dst(&mut incremental.bytes, new_dst).unwrap();
            let mut scratch = c.clone();
            ipv4::Packet::new_checked(&mut scratch.bytes[..]).unwrap().set_dst_addr(new_dst);
            fill_from_scratch(&mut scratch);
            prop_assert_eq!(incremental.bytes, scratch.bytes);
        }

        /// The TTL decrement's incremental checksum equals one summed from scratch, for every
        /// header (any TTL from 1, any protocol and addresses).
        #[test]
        fn ttl_decrement_equals_from_scratch(c in case(), ttl in 1u8.., protocol in any::<u8>()) {
            let mut before = c.bytes.clone();
            {
                let mut ip = ipv4::Packet::new_checked(&mut before[..]).unwrap();
                ip.set_ttl(ttl);
                ip.set_protocol(Protocol::from(protocol));
                ip.fill_checksum();
            }
            let mut incremental = before.clone();
            prop_assert_eq!(ipv4_ttl_decrement(&mut incremental), Ok(ttl - 1));
            let mut scratch = before;
            let mut ip = ipv4::Packet::new_checked(&mut scratch[..]).unwrap();
            ip.set_ttl(ttl - 1);
            ip.fill_checksum();
            prop_assert!(ip.verify_checksum());
            prop_assert_eq!(incremental, scratch);
        }

        #[test]
        fn arbitrary_frames_never_panic(
            mut data in proptest::collection::vec(any::<u8>(), 0..100),
            new_dst in any::<[u8; 4]>(),
        ) {
            let before = data.clone();
            if frame_ipv4_dst(&mut data, new_dst.into()).is_err() {
                prop_assert_eq!(data, before);
            }
        }
    }
}
