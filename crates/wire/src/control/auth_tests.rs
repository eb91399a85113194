//! Test vectors (computed independently, see [`VECTOR`]), round trips and bad input for the AUTH
//! TLV.

use proptest::prelude::*;

use super::*;
use crate::control::{Message, FLAG_RETRANSMISSION};

/// The key of the vectors: the 16 ASCII bytes "rtlan-test-key-1".
const KEY: &[u8] = b"rtlan-test-key-1";

/// The sender of the vectors.
const SRC: Address = Address([0x02, 0, 0, 0, 0, 0x01]);

/// REFRESH from the daemon (hop 0, request id 3, connection 03:09), signed with key id 1 and
/// sequence number 0x0102030405060708 by 02:00:00:00:00:01 under [`KEY`]. Generated with
///
/// ```text
/// import hmac, hashlib
/// msg = bytes.fromhex("5254010702 00 002e 00000003 03090000 011c 00000001"
///                     "0102030405060708" + "00" * 16)
/// hmac.new(b"rtlan-test-key-1", bytes.fromhex("020000000001") + msg,
///          hashlib.sha256).digest()[:16].hex()
/// ```
const VECTOR: [u8; 46] = [
    0x52, 0x54, 0x01, 0x07, // magic, version, type REFRESH
    0x02, // flags: AUTHENTICATED
    0x00, // hop 0
    0x00, 0x2e, // length 46
    0x00, 0x00, 0x00, 0x03, // request id 3
    0x03, 0x09, 0x00, 0x00, // connection id 03:09, reserved
    0x01, 0x1c, // TLV AUTH, length 28
    0x00, 0x00, 0x00, 0x01, // key id 1
    0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, // sequence number
    0xa3, 0x22, 0x20, 0x14, 0xe0, 0xc8, 0x5b,
    0xc3, // digest (HMAC-SHA-256, leftmost 16 bytes)
    0x71, 0xce, 0x08, 0x31, 0xd8, 0xd2, 0x16, 0x10,
];

/// The digest of the same message sent by 02:00:00:00:00:02 (same Python, other source MAC).
const DIGEST_OTHER_SRC: [u8; 16] = [
    0xdd, 0x6a, 0x76, 0x27, 0x27, 0xd8, 0x34, 0xe3, 0x46, 0xef, 0x0c, 0x9d, 0x5b, 0xbd, 0x3a, 0x28,
];

const SEQ: u64 = 0x0102_0304_0506_0708;

fn refresh() -> Repr {
    Repr::new(
        0,
        3,
        Message::Refresh {
            connection_id: 0x0309,
        },
    )
}

fn emit(repr: &Repr) -> Vec<u8> {
    let mut buf = vec![0u8; repr.buffer_len()];
    repr.emit(&mut Packet::new_unchecked(&mut buf[..])).unwrap();
    buf
}

#[test]
fn sign_matches_the_vector() {
    let mut repr = refresh();
    sign(&mut repr, 1, SEQ, KEY, SRC).unwrap();
    assert_eq!(emit(&repr), VECTOR);
    assert_eq!(repr.flags, FLAG_AUTHENTICATED);
    assert_eq!(repr.buffer_len(), 16 + AUTH_TLV_LEN);
    // Signing again (a retransmission with a new sequence number) replaces the AUTH TLV.
    sign(&mut repr, 1, SEQ + 1, KEY, SRC).unwrap();
    assert_eq!(repr.tlvs.len(), 1);
    assert_eq!(verify(&emit(&repr), SRC, KEY).unwrap().seq, SEQ + 1);
}

#[test]
fn vector_verifies_and_parses() {
    let auth = verify(&VECTOR, SRC, KEY).unwrap();
    assert_eq!((auth.key_id, auth.seq), (1, SEQ));
    assert_eq!(signature(&VECTOR), Ok(auth));
    let repr = Repr::parse(&Packet::new_checked(&VECTOR[..]).unwrap()).unwrap();
    assert_eq!(repr.tlvs, vec![auth.to_tlv()]);
    // Ethernet padding after `length` is not covered and does not matter.
    let mut padded = VECTOR.to_vec();
    padded.extend_from_slice(&[0xff; 14]);
    assert_eq!(verify(&padded, SRC, KEY), Ok(auth));
}

#[test]
fn sign_message_in_place_matches_the_vector() {
    let mut bytes = VECTOR;
    bytes[30..].fill(0x77);
    sign_message(&mut bytes, SRC, KEY).unwrap();
    assert_eq!(bytes, VECTOR);
}

#[test]
fn another_sender_key_or_byte_fails() {
    let other = Address([0x02, 0, 0, 0, 0, 0x02]);
    assert_eq!(verify(&VECTOR, other, KEY), Err(AuthError::BadDigest));
    let mut forged = VECTOR;
    forged[30..].copy_from_slice(&DIGEST_OTHER_SRC);
    assert!(verify(&forged, other, KEY).is_ok());
    assert_eq!(verify(&forged, SRC, KEY), Err(AuthError::BadDigest));
    assert_eq!(
        verify(&VECTOR, SRC, b"rtlan-test-key-2"),
        Err(AuthError::BadDigest)
    );
    for at in 0..VECTOR.len() {
        let mut bytes = VECTOR;
        bytes[at] ^= 0x01;
        assert!(verify(&bytes, SRC, KEY).is_err(), "byte {at} not covered");
    }
}

#[test]
fn unsigned_and_malformed() {
    let plain = emit(&refresh());
    assert_eq!(verify(&plain, SRC, KEY), Err(AuthError::Unsigned));
    assert_eq!(signature(&plain), Err(AuthError::Unsigned));
    assert_eq!(signature(&VECTOR[..20]), Err(AuthError::Malformed));
    assert_eq!(signature(&[]), Err(AuthError::Malformed));
    // Flag without AUTH TLV, AUTH TLV without flag.
    let mut flagged = plain.clone();
    flagged[4] = FLAG_AUTHENTICATED;
    assert_eq!(signature(&flagged), Err(AuthError::Malformed));
    let mut unflagged = VECTOR;
    unflagged[4] = FLAG_RETRANSMISSION;
    assert_eq!(signature(&unflagged), Err(AuthError::Malformed));
    // AUTH not last: an unknown TLV after it.
    let mut repr = refresh();
    prepare(&mut repr, 1, 1);
    repr.tlvs.push(Tlv {
        kind: 0x7f,
        value: vec![1],
    });
    assert_eq!(signature(&emit(&repr)), Err(AuthError::Malformed));
    // AUTH of the wrong length, or twice.
    let mut repr = refresh();
    repr.flags = FLAG_AUTHENTICATED;
    repr.tlvs.push(Tlv {
        kind: TLV_AUTH,
        value: vec![0; 4],
    });
    assert_eq!(signature(&emit(&repr)), Err(AuthError::Malformed));
    let mut repr = refresh();
    prepare(&mut repr, 1, 1);
    let twice = repr.tlvs[0].clone();
    repr.tlvs.insert(0, twice);
    assert_eq!(signature(&emit(&repr)), Err(AuthError::Malformed));
    // A TLV area that is not consumed exactly.
    let mut short = VECTOR;
    short[7] = 45;
    assert_eq!(signature(&short), Err(AuthError::Malformed));
    // Unknown message type.
    let mut unknown = VECTOR;
    unknown[3] = 0x42;
    assert_eq!(signature(&unknown), Err(AuthError::Malformed));
    let mut out = VECTOR;
    out[3] = 0x42;
    assert_eq!(sign_message(&mut out, SRC, KEY), Err(AuthError::Malformed));
}

proptest! {
    #[test]
    fn signed_round_trip(
        repr in super::super::tests::repr(),
        key in prop::collection::vec(any::<u8>(), 0..80),
        key_id in any::<u32>(),
        seq in any::<u64>(),
        src in any::<[u8; 6]>(),
        padding in 0..20usize,
        flip in any::<prop::sample::Index>(),
    ) {
        let src = Address(src);
        let mut signed = repr.clone();
        sign(&mut signed, key_id, seq, &key, src).unwrap();
        let mut bytes = emit(&signed);
        let len = bytes.len();
        bytes.resize(len + padding, 0);
        let auth = verify(&bytes, src, &key).unwrap();
        prop_assert_eq!((auth.key_id, auth.seq), (key_id, seq));
        let parsed = Repr::parse(&Packet::new_checked(&bytes[..]).unwrap()).unwrap();
        prop_assert_eq!(&parsed, &signed);
        // Everything but the AUTH TLV is what was signed.
        let mut stripped = parsed.clone();
        stripped.tlvs.pop();
        let unsigned: Vec<_> = repr.tlvs.iter().filter(|t| t.kind != TLV_AUTH).cloned().collect();
        prop_assert_eq!(stripped.tlvs, unsigned);
        // Any flipped bit of the message (not the padding) breaks it.
        let at = flip.index(len);
        bytes[at] ^= 0x80;
        prop_assert!(verify(&bytes, src, &key).is_err());
    }
}
