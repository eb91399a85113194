//! Fuzzes the BPDU view, `Repr`, `parse_frame` and `Repr::emit_frame`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rtlan_wire::ethernet::Address;
use rtlan_wire::stp::{parse_frame, Packet, Repr, MAX_FRAME_LEN};

fuzz_target!(|data: &[u8]| {
    // The same bytes as a whole frame: never panics, and a parsed BPDU re-emits to itself.
    if let Ok(repr) = parse_frame(data) {
        let mut buf = [0u8; MAX_FRAME_LEN];
        let len = repr
            .emit_frame(Address([2, 0, 0, 0, 0, 1]), &mut buf)
            .expect("MAX_FRAME_LEN bytes suffice");
        assert_eq!(parse_frame(&buf[..len]), Ok(repr));
    }

    // As a bare BPDU: every accessor of a checked view is safe to call.
    let Ok(packet) = Packet::new_checked(data) else {
        return;
    };
    let _ = (
        packet.protocol_id(),
        packet.version(),
        packet.bpdu_type(),
        packet.flags().port_role(),
        packet.root_id(),
        packet.root_path_cost(),
        packet.bridge_id(),
        packet.port_id(),
        packet.message_age().to_duration(),
        packet.max_age(),
        packet.hello_time(),
        packet.forward_delay(),
        packet.version_1_len(),
    );
    let Ok(repr) = Repr::parse(&packet) else {
        return;
    };
    let mut buf = vec![0u8; repr.buffer_len()];
    repr.emit(&mut Packet::new_unchecked(&mut buf[..]));
    let again = Repr::parse(&Packet::new_checked(&buf[..]).expect("emitted BPDU is whole"));
    assert_eq!(again, Ok(repr));
    // Only the version (normalised to 0 or 2) and an RST's Version 1 Length (written as 0) may
    // differ from the input.
    for (i, (a, b)) in buf.iter().zip(data).enumerate() {
        assert!(a == b || i == 2 || i == 35, "byte {i} changed");
    }
});
