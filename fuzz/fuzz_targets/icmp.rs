//! Fuzzes the ICMP view and `Repr`: any bytes parse or fail cleanly, a parsed message is
//! written back and parses to the same `Repr`, and the error quote never reads out of bounds.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rtlan_wire::icmp::{Packet, Repr};

fuzz_target!(|data: &[u8]| {
    let quote = Repr::error_quote(data);
    assert!(quote.len() <= data.len());
    let Ok(packet) = Packet::new_checked(data) else {
        return;
    };
    let _ = (
        packet.msg_type(),
        packet.msg_code(),
        packet.rest(),
        packet.echo_ident(),
        packet.next_hop_mtu(),
        packet.data().len(),
    );
    let Ok(repr) = Repr::parse(&packet) else {
        return;
    };
    let mut buf = vec![0u8; repr.buffer_len()];
    repr.emit(&mut buf).expect("exact buffer");
    let again = Packet::new_checked(&buf[..]).expect("emitted message is long enough");
    assert!(again.verify_checksum());
    assert_eq!(Repr::parse(&again), Ok(repr));
});
