//! Fuzzes the AUTH TLV verifier (`control::auth::{signature, verify, sign_message}`) on arbitrary
//! messages, keys and senders, and `auth::sign` on every message that parses.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rtlan_wire::control::auth::{self, AuthError};
use rtlan_wire::control::{Packet, Repr};
use rtlan_wire::ethernet::Address;

fuzz_target!(|data: &[u8]| {
    let Some((&key_len, rest)) = data.split_first() else {
        return;
    };
    let key_len = usize::from(key_len % 65);
    let Some((key, rest)) = rest.split_at_checked(key_len) else {
        return;
    };
    let Some((src, message)) = rest.split_at_checked(6) else {
        return;
    };
    let src = Address([src[0], src[1], src[2], src[3], src[4], src[5]]);
    let found = auth::signature(message);
    match auth::verify(message, src, key) {
        Ok(value) => {
            assert_eq!(found, Ok(value));
            // Re-signing a verified message writes the same digest.
            let mut copy = message.to_vec();
            auth::sign_message(&mut copy, src, key).expect("a verified message can be signed");
            assert_eq!(copy, message);
        }
        Err(AuthError::BadDigest) => assert!(found.is_ok()),
        Err(error) => assert_eq!(found, Err(error)),
    }
    // Whatever parses can be signed, and then verifies, under any key and sender.
    let Ok(mut repr) = Packet::new_checked(message).and_then(|p| Repr::parse(&p)) else {
        return;
    };
    let Ok(()) = auth::sign(&mut repr, 7, 42, key, src) else {
        // Only a message that no longer fits 65535 bytes with the AUTH TLV cannot be signed.
        assert!(repr.buffer_len() > usize::from(u16::MAX));
        return;
    };
    let mut buf = vec![0u8; repr.buffer_len()];
    repr.emit(&mut Packet::new_unchecked(&mut buf[..]))
        .expect("a signed message fits its own buffer_len");
    let value = auth::verify(&buf, src, key).expect("a signed message verifies");
    assert_eq!((value.key_id, value.seq), (7, 42));
});
