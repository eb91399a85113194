//! Fuzzes the RETHER view, `Repr::parse`/`emit`, `parse_frame` and `emit_frame`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rtlan_wire::ethernet::Address;
use rtlan_wire::rether::{emit_frame, parse_frame, Packet, Repr, GROUP};

fuzz_target!(|data: &[u8]| {
    // As a whole frame: never panics, and what parses re-emits to the same message.
    if let Ok((repr, payload)) = parse_frame(data) {
        let mut buf = vec![0u8; 14 + repr.buffer_len()];
        let len = emit_frame(&repr, Address([2, 0, 0, 0, 0, 1]), GROUP, payload, &mut buf)
            .expect("a parsed message re-emits");
        let (again, again_payload) = parse_frame(&buf[..len]).expect("emitted frame parses");
        assert_eq!((&again, again_payload), (&repr, payload));
    }
    // As a bare message: every accessor of a checked view is safe.
    let Ok(packet) = Packet::new_checked(data) else {
        return;
    };
    let _ = (
        packet.magic(),
        packet.version(),
        packet.message_type(),
        packet.flags(),
        packet.generation(),
        packet.source(),
        packet.dest(),
        packet.body().len(),
    );
    if let Ok(repr) = Repr::parse(&packet) {
        let mut buf = vec![0u8; repr.buffer_len()];
        repr.emit(&mut Packet::new_unchecked(&mut buf[..]))
            .expect("a parsed message re-emits");
        let again = Repr::parse(&Packet::new_checked(&buf[..]).expect("whole"));
        assert_eq!(again, Ok(repr));
    }
});
