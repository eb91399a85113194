//! Fuzzes the Ethernet view, `Repr` and the textual MAC address parser.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rtlan_wire::ethernet::{Address, Frame, Repr, HEADER_LEN, MAX_VLAN_TAGS, VLAN_TAG_LEN};

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(addr) = text.parse::<Address>() {
            assert_eq!(addr.to_string().parse::<Address>(), Ok(addr));
        }
    }

    let Ok(frame) = Frame::new_checked(data) else {
        return;
    };
    let (dst, src) = (frame.dst_addr(), frame.src_addr());
    let _ = (
        dst.is_broadcast(),
        dst.is_multicast(),
        dst.is_unicast(),
        dst.is_local(),
    );
    assert_eq!(src.to_string().parse::<Address>(), Ok(src));
    let outer = frame.ethertype();
    let inner = frame.inner_ethertype();
    let tags = frame.vlan_tags();
    assert!(tags <= MAX_VLAN_TAGS);
    assert_eq!(tags == 0, !outer.is_vlan_tag());
    if tags == 0 {
        assert_eq!(inner, outer);
    }
    for i in 0..=MAX_VLAN_TAGS {
        assert_eq!(frame.vlan_tci(i).is_some(), i < tags);
    }
    assert_eq!(frame.header_len(), HEADER_LEN + VLAN_TAG_LEN * tags);
    assert_eq!(frame.payload().len(), data.len() - frame.header_len());

    let repr = Repr::parse(&frame).expect("a checked frame always parses");
    assert_eq!(repr.ethertype, outer);
    // Emit into a zeroed buffer as long as the input: any announced tag has room there.
    let mut buf = vec![0u8; data.len()];
    repr.emit(&mut Frame::new_unchecked(&mut buf[..]));
    assert_eq!(buf[..repr.buffer_len()], data[..HEADER_LEN]);
    let again = Frame::new_checked(&buf[..]).expect("re-emitted frame is valid");
    assert_eq!(Repr::parse(&again), Ok(repr));
});
