//! Fuzzes the `virtio_net_hdr` view and `Repr`, software GSO and checksum completion.
//!
//! The first 10 bytes are the virtio header, the rest the frame.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rtlan_wire::checksum;
use rtlan_wire::ethernet::Frame;
use rtlan_wire::gso::{self, GsoKind, Repr, VirtioNetHdr, HEADER_LEN};
use rtlan_wire::ipv4::{self, Protocol};
use rtlan_wire::{tcp, udp};

/// Whether a segment (no padding) has right IPv4 header and L4 checksums, checked with the
/// IPv4/TCP/UDP views for IPv4 and with a byte-built pseudo-header (RFC 8200 §8.1) for IPv6.
fn checksums_ok(segment: &[u8]) -> bool {
    let Ok(eth) = Frame::new_checked(segment) else {
        return false;
    };
    let ip = eth.payload();
    match ip.first().map(|b| b >> 4) {
        Some(4) => {
            let Ok(packet) = ipv4::Packet::new_checked(ip) else {
                return false;
            };
            let (src, dst) = (packet.src_addr(), packet.dst_addr());
            packet.verify_checksum()
                && match packet.protocol() {
                    Protocol::Tcp => {
                        tcp::Packet::new_unchecked(packet.payload()).verify_checksum(src, dst)
                    }
                    Protocol::Udp => udp::Packet::new_checked(packet.payload())
                        .is_ok_and(|p| p.checksum() != 0 && p.verify_checksum(src, dst)),
                    _ => false,
                }
        }
        Some(6) if ip.len() >= 40 => {
            let l4 = &ip[40..];
            let mut pseudo = ip[8..40].to_vec();
            pseudo.extend((l4.len() as u32).to_be_bytes());
            pseudo.extend([0, 0, 0, ip[6]]);
            pseudo.extend_from_slice(l4);
            checksum::data(&pseudo) == 0xffff
        }
        _ => false,
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((head, frame)) = data.split_first_chunk::<HEADER_LEN>() else {
        return;
    };
    let Ok(view) = VirtioNetHdr::new_checked(&head[..]) else {
        return;
    };
    let repr = Repr::parse(&view).expect("a checked header always parses");
    let mut again = [0u8; HEADER_LEN];
    repr.emit(&mut VirtioNetHdr::new_unchecked(&mut again[..]));
    assert_eq!(&again, head, "emit(parse(bytes)) == bytes");

    let mut scratch = Vec::new();
    let mut emitted = 0;
    let checked_kind = matches!(
        repr.gso_type.kind,
        GsoKind::TcpV4 | GsoKind::TcpV6 | GsoKind::UdpL4
    );
    let result = gso::segment(frame, &repr, &mut scratch, |segment| {
        emitted += 1;
        if checked_kind {
            assert!(checksums_ok(segment), "segment checksums");
        }
    });
    match result {
        Ok(n) => {
            assert_eq!(n, emitted);
            assert!((1..=gso::MAX_SEGMENTS).contains(&n));
        }
        Err(_) => assert_eq!(emitted, 0, "nothing emitted before an error"),
    }

    let mut copy = frame.to_vec();
    if gso::fill_l4_checksum(&mut copy).is_err() {
        assert_eq!(copy, frame, "unchanged on error");
    }

    let mut copy = frame.to_vec();
    let (start, offset) = (usize::from(repr.csum_start), usize::from(repr.csum_offset));
    match gso::complete_partial_checksum(&mut copy, start, offset) {
        Ok(()) if offset % 2 == 0 => {
            // The old field held the pseudo-header sum; with it the new sum is 0xffff.
            let old = u16::from_be_bytes([frame[start + offset], frame[start + offset + 1]]);
            assert_eq!(
                checksum::combine(&[checksum::data(&copy[start..]), old]),
                0xffff
            );
        }
        Ok(()) => {}
        Err(_) => assert_eq!(copy, frame, "unchanged on error"),
    }
});
