//! Fuzzes the RSVP message view, the object walk, `Repr::parse`, `validate`, `emit` and the
//! typed decode (`Message::from_repr`, whose result must survive its own round trip); and,
//! for the same bytes read as an IPv4 packet, the Router Alert scan.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rtlan_wire::ipv4;
use rtlan_wire::rsvp::{Message, ObjectRepr, Packet, Repr, RsvpError, HEADER_LEN};

fuzz_target!(|data: &[u8]| {
    if let Ok(ip) = ipv4::Packet::new_checked(data) {
        let _ = (ip.router_alert(), ip.options());
    }

    let Ok(packet) = Packet::new_checked(data) else {
        return;
    };
    let _ = (
        packet.version(),
        packet.flags(),
        packet.msg_type(),
        packet.checksum(),
        packet.send_ttl(),
        packet.reserved(),
        packet.verify_checksum(),
    );
    // The walk never panics, and the views it yields cover exactly what they claim.
    let mut walked = HEADER_LEN;
    for object in packet.objects() {
        let Ok(object) = object else { break };
        assert_eq!(object.body().len() + 4, usize::from(object.length()));
        walked += usize::from(object.length());
        let _ = (
            object.class_num(),
            object.ctype(),
            ObjectRepr::parse(&object),
        );
    }
    assert!(walked <= usize::from(packet.length()));

    let Ok(repr) = Repr::parse(&packet) else {
        return;
    };
    let _ = repr.validate();
    if let Ok(message) = Message::from_repr(&repr) {
        let written = message.to_repr(repr.send_ttl);
        assert_eq!(Message::from_repr(&written).as_ref(), Ok(&message));
    }
    // A parsed message re-emits to the same length and parses back to itself.
    let bytes = repr.to_bytes().expect("a parsed message can be written");
    assert_eq!(bytes.len(), usize::from(packet.length()));
    let again = Repr::parse(&Packet::new_checked(&bytes[..]).expect("emitted header is valid"));
    assert_eq!(again.as_ref(), Ok(&repr));
    let mut short = vec![0u8; bytes.len() - 1];
    assert_eq!(
        repr.emit(&mut Packet::new_unchecked(&mut short[..])),
        Err(RsvpError::Truncated)
    );
});
