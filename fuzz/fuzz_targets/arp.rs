//! Fuzzes the ARP view, `Repr` and `Repr::emit_frame`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rtlan_wire::arp::{Packet, Repr, FRAME_LEN, PACKET_LEN};
use rtlan_wire::ethernet::{self, Address, EtherType, Frame};

fuzz_target!(|data: &[u8]| {
    let Ok(packet) = Packet::new_checked(data) else {
        assert!(data.len() < PACKET_LEN);
        return;
    };
    let _ = (
        packet.hardware_type(),
        packet.protocol_type(),
        packet.hardware_len(),
        packet.protocol_len(),
        packet.operation(),
        packet.source_hardware_addr(),
        packet.source_protocol_addr(),
        packet.target_hardware_addr(),
        packet.target_protocol_addr(),
    );
    let Ok(repr) = Repr::parse(&packet) else {
        return;
    };
    let mut buf = vec![0u8; repr.buffer_len()];
    repr.emit(&mut Packet::new_unchecked(&mut buf[..]));
    assert_eq!(buf[..], data[..PACKET_LEN]);
    assert_eq!(
        Repr::parse(&Packet::new_checked(&buf[..]).unwrap()),
        Ok(repr)
    );

    let mut frame_buf = [0u8; FRAME_LEN];
    let src = Address([0x02, 0, 0, 0, 0, 1]);
    let len = repr
        .emit_frame(src, Address::BROADCAST, &mut frame_buf)
        .expect("FRAME_LEN bytes suffice");
    let frame = Frame::new_checked(&frame_buf[..len]).expect("emitted frame is valid");
    assert_eq!(frame.ethertype(), EtherType::Arp);
    assert_eq!(frame.src_addr(), src);
    assert_eq!(frame.payload(), &buf[..]);
    assert!(repr
        .emit_frame(src, src, &mut frame_buf[..ethernet::HEADER_LEN])
        .is_err());
});
