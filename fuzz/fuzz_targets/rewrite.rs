//! Fuzzes `rewrite::frame_ipv4_dst`: never panics, changes nothing on error, changes only the
//! destination and checksums on success, keeps valid checksums valid, and gives exactly the
//! bytes a from-scratch checksum computation gives.
#![no_main]

use std::net::Ipv4Addr;

use libfuzzer_sys::fuzz_target;
use rtlan_wire::ethernet::{EtherType, Frame};
use rtlan_wire::ipv4::{self, Protocol};
use rtlan_wire::{rewrite, tcp, udp};

/// Offset of the IPv4 header if `frame` is Ethernet (+ tags) carrying a checkable IPv4 packet.
fn ip_start(frame: &[u8]) -> Option<usize> {
    let eth = Frame::new_checked(frame).ok()?;
    if eth.inner_ethertype() != EtherType::Ipv4 {
        return None;
    }
    let start = eth.header_len();
    ipv4::Packet::new_checked(&frame[start..]).ok()?;
    Some(start)
}

/// For an IPv4 first fragment carrying a parseable UDP or TCP header: whether every checksum
/// (IPv4 header and L4) verifies. `None` for anything else.
fn all_valid(frame: &[u8]) -> Option<bool> {
    let ip = ipv4::Packet::new_checked(&frame[ip_start(frame)?..]).ok()?;
    if ip.frag_offset() != 0 {
        return None;
    }
    let (src, dst) = (ip.src_addr(), ip.dst_addr());
    let l4 = match ip.protocol() {
        Protocol::Udp => udp::Packet::new_checked(ip.payload())
            .ok()?
            .verify_checksum(src, dst),
        Protocol::Tcp => tcp::Packet::new_checked(ip.payload())
            .ok()?
            .verify_checksum(src, dst),
        _ => return None,
    };
    Some(ip.verify_checksum() && l4)
}

/// Recomputes every checksum from scratch (a UDP checksum of 0 stays 0). `false` if the frame
/// is not IPv4 or its L4 header (in a first fragment) does not parse.
fn fill_all(frame: &mut [u8]) -> bool {
    let Some(start) = ip_start(frame) else {
        return false;
    };
    let mut ip = ipv4::Packet::new_checked(&mut frame[start..]).expect("checked by ip_start");
    let (src, dst) = (ip.src_addr(), ip.dst_addr());
    if ip.frag_offset() == 0 {
        match ip.protocol() {
            Protocol::Udp => {
                let Ok(mut d) = udp::Packet::new_checked(ip.payload_mut()) else {
                    return false;
                };
                if d.checksum() != 0 {
                    d.fill_checksum(src, dst);
                }
            }
            Protocol::Tcp => {
                let Ok(mut s) = tcp::Packet::new_checked(ip.payload_mut()) else {
                    return false;
                };
                s.fill_checksum(src, dst);
            }
            _ => {}
        }
    }
    ip.fill_checksum();
    true
}

fuzz_target!(|data: &[u8]| {
    let Some((dst, frame)) = data.split_first_chunk::<4>() else {
        return;
    };
    let new_dst = Ipv4Addr::from(*dst);

    // 1. The raw input.
    let valid_before = all_valid(frame);
    let mut out = frame.to_vec();
    match rewrite::frame_ipv4_dst(&mut out, new_dst) {
        Err(_) => assert_eq!(out, frame, "an error leaves the frame untouched"),
        Ok(()) => {
            let start = ip_start(&out).expect("rewritten frame is IPv4");
            let ip = ipv4::Packet::new_checked(&out[start..]).expect("still valid");
            assert_eq!(ip.dst_addr(), new_dst);
            // Only the IPv4 checksum, the destination and the L4 checksum may change.
            let l4 = start + ip.header_len();
            for (i, (a, b)) in frame.iter().zip(&out).enumerate() {
                let allowed = (start + 10..start + 12).contains(&i)
                    || (start + 16..start + 20).contains(&i)
                    || (l4 + 6..l4 + 8).contains(&i) && ip.protocol() == Protocol::Udp
                    || (l4 + 16..l4 + 18).contains(&i) && ip.protocol() == Protocol::Tcp;
                assert!(a == b || allowed, "byte {i} changed");
            }
            if valid_before == Some(true) {
                assert_eq!(all_valid(&out), Some(true), "valid checksums stay valid");
            }
        }
    }

    // 2. The same frame with correct checksums: incremental == from scratch.
    let mut fixed = frame.to_vec();
    if !fill_all(&mut fixed) {
        return;
    }
    let mut incremental = fixed.clone();
    if rewrite::frame_ipv4_dst(&mut incremental, new_dst).is_err() {
        return;
    }
    let mut scratch = fixed;
    let start = ip_start(&scratch).expect("checked by fill_all");
    ipv4::Packet::new_checked(&mut scratch[start..])
        .expect("checked by fill_all")
        .set_dst_addr(new_dst);
    assert!(fill_all(&mut scratch));
    assert_eq!(
        incremental, scratch,
        "incremental update differs from recomputation"
    );
});
