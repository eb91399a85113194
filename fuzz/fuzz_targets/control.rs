//! Fuzzes the control-protocol view, `Repr::parse`, `Repr::emit` and `Repr::emit_frame`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rtlan_wire::control::{Packet, ProxyMacPlan, Repr, HEADER_LEN};
use rtlan_wire::ethernet::{self, Address, Frame};

fuzz_target!(|data: &[u8]| {
    let Ok(packet) = Packet::new_checked(data) else {
        assert!(
            data.len() < HEADER_LEN
                || usize::from(u16::from_be_bytes([data[6], data[7]])) < HEADER_LEN
                || usize::from(u16::from_be_bytes([data[6], data[7]])) > data.len()
        );
        return;
    };
    let _ = (
        packet.magic(),
        packet.version(),
        packet.message_type(),
        packet.flags(),
        packet.hop(),
        packet.length(),
        packet.request_id(),
        packet.payload(),
    );
    let Ok(repr) = Repr::parse(&packet) else {
        return;
    };
    assert_eq!(repr.buffer_len(), usize::from(packet.length()));
    let mut buf = vec![0u8; repr.buffer_len()];
    repr.emit(&mut Packet::new_unchecked(&mut buf[..]))
        .expect("a parsed message fits its own buffer_len");
    let reparsed = Repr::parse(&Packet::new_checked(&buf[..]).expect("emitted header is valid"));
    assert_eq!(reparsed.as_ref(), Ok(&repr));

    let plan = ProxyMacPlan::default();
    let src = Address([0x02, 0, 0, 0, 0, 1]);
    let mut frame_buf = vec![0u8; ethernet::HEADER_LEN + buf.len()];
    let len = repr
        .emit_frame(src, plan.control_mac(), &mut frame_buf)
        .expect("frame buffer sized for the message");
    let frame = Frame::new_checked(&frame_buf[..len]).expect("emitted frame is valid");
    assert!(plan.is_control(&frame.dst_addr()));
    assert_eq!(frame.payload(), &buf[..]);
    assert!(repr
        .emit_frame(src, src, &mut frame_buf[..len - 1])
        .is_err());
});
