//! Fuzzes the TCP view, `Repr` and checksum fill/verify.
#![no_main]

use std::net::Ipv4Addr;

use libfuzzer_sys::fuzz_target;
use rtlan_wire::tcp::{Flags, Packet, Repr};

fuzz_target!(|data: &[u8]| {
    // The first 8 bytes choose the addresses of the pseudo-header.
    let Some((addrs, data)) = data.split_first_chunk::<8>() else {
        return;
    };
    let src = Ipv4Addr::new(addrs[0], addrs[1], addrs[2], addrs[3]);
    let dst = Ipv4Addr::new(addrs[4], addrs[5], addrs[6], addrs[7]);
    let Ok(packet) = Packet::new_checked(data) else {
        return;
    };
    let flags = packet.flags();
    let _ = (
        packet.src_port(),
        packet.dst_port(),
        packet.seq_number(),
        packet.ack_number(),
        flags.contains(Flags::SYN | Flags::ACK),
        flags.to_string(),
        packet.window_len(),
        packet.checksum(),
        packet.urgent_at(),
        packet.verify_checksum(src, dst),
    );
    assert_eq!(
        20 + packet.options().len() + packet.payload().len(),
        data.len()
    );

    let repr = Repr::parse(&packet).expect("a checked segment always parses");
    assert_eq!(repr.buffer_len(), packet.header_len());
    let mut buf = vec![0u8; repr.buffer_len() + packet.payload().len()];
    let mut out = Packet::new_unchecked(&mut buf[..]);
    repr.emit(&mut out);
    out.payload_mut().copy_from_slice(packet.payload());
    out.fill_checksum(src, dst);
    assert!(out.verify_checksum(src, dst));
    let again = Packet::new_checked(&buf[..]).expect("re-emitted segment is valid");
    assert_eq!(Repr::parse(&again), Ok(repr));
    assert_eq!(again.payload(), packet.payload());
});
