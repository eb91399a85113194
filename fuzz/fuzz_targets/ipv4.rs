//! Fuzzes the IPv4 view and `Repr`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rtlan_wire::ipv4::{Packet, Repr};

fuzz_target!(|data: &[u8]| {
    let Ok(packet) = Packet::new_checked(data) else {
        return;
    };
    let _ = (
        packet.version(),
        packet.dscp_ecn(),
        packet.ident(),
        packet.dont_frag(),
        packet.more_frags(),
        packet.frag_offset(),
        packet.ttl(),
        packet.protocol(),
        packet.checksum(),
        packet.src_addr(),
        packet.dst_addr(),
        packet.verify_checksum(),
    );
    assert_eq!(
        packet.header_len() + packet.payload().len(),
        usize::from(packet.total_len())
    );

    // Filling the checksum always yields a verifying header.
    let mut copy = data.to_vec();
    let mut view = Packet::new_checked(&mut copy[..]).expect("same bytes");
    view.fill_checksum();
    assert!(view.verify_checksum());

    let repr = Repr::parse(&packet).expect("a checked packet always parses");
    let mut buf = vec![0u8; repr.buffer_len() + repr.payload_len];
    let mut out = Packet::new_unchecked(&mut buf[..]);
    repr.emit(&mut out);
    out.payload_mut().copy_from_slice(packet.payload());
    assert!(out.verify_checksum());
    let again = Packet::new_checked(&buf[..]).expect("re-emitted packet is valid");
    assert_eq!(Repr::parse(&again), Ok(repr));
    assert_eq!(again.payload(), packet.payload());
});
