//! Key chains, rotation, replay windows and the authenticator's counters.

use std::time::Duration;

use rtlan_wire::control::{Message, Packet, Repr};
use rtlan_wire::ethernet::Address;

use super::*;

const A: Address = Address([0x02, 0, 0, 0, 0, 0x0a]);
const B: Address = Address([0x02, 0, 0, 0, 0, 0x0b]);

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

fn at(s: u64) -> Instant {
    Instant::ZERO + secs(s)
}

fn chain(keys: Vec<Key>) -> KeyChain {
    KeyChain::new(keys).expect("valid chain")
}

fn windowed(id: u32, secret: &[u8], from: Option<u64>, to: Option<u64>) -> Key {
    Key {
        not_before: from.map(secs),
        not_after: to.map(secs),
        ..Key::new(id, secret)
    }
}

fn refresh(request_id: u32) -> Repr {
    Repr::new(
        0,
        request_id,
        Message::Refresh {
            connection_id: 0x0309,
        },
    )
}

fn emit(repr: &Repr) -> Vec<u8> {
    let mut buf = vec![0u8; repr.buffer_len()];
    repr.emit(&mut Packet::new_unchecked(&mut buf[..]))
        .expect("buffer sized by buffer_len");
    buf
}

/// `repr` signed by `auth` as sent by `src` at `now`, as bytes.
fn signed(auth: &mut Authenticator, now: Instant, src: Address, mut repr: Repr) -> Vec<u8> {
    auth.sign(now, &mut repr, src).expect("a key is valid");
    emit(&repr)
}

#[test]
fn chain_validation() {
    assert_eq!(
        KeyChain::new(vec![Key::new(1, "a"), Key::new(1, "b")]),
        Err(KeyChainError::DuplicateId(1))
    );
    assert_eq!(
        KeyChain::new(vec![Key::new(3, "")]),
        Err(KeyChainError::EmptySecret(3))
    );
    assert_eq!(
        KeyChain::new(vec![windowed(4, b"k", Some(10), Some(10))]),
        Err(KeyChainError::EmptyWindow(4))
    );
    assert!(KeyChain::default().is_empty());
    let debug = format!("{:?}", Key::new(1, "super-secret"));
    assert!(!debug.contains("super-secret"), "{debug}");
}

#[test]
fn send_with_the_newest_valid_key_accept_every_valid_key() {
    // Key 1 until 100 s; key 2 from 60 s: the overlap is the rotation window.
    let keys = chain(vec![
        windowed(1, b"old", None, Some(100)),
        windowed(2, b"new", Some(60), None),
    ]);
    assert_eq!(keys.send_key(secs(0)).map(|k| k.id), Some(1));
    assert_eq!(keys.send_key(secs(59)).map(|k| k.id), Some(1));
    assert_eq!(keys.send_key(secs(60)).map(|k| k.id), Some(2));
    assert_eq!(keys.send_key(secs(500)).map(|k| k.id), Some(2));
    assert!(keys.accept_key(1, secs(99)).is_some());
    assert!(keys.accept_key(1, secs(100)).is_none());
    assert!(keys.accept_key(2, secs(59)).is_none());
    assert!(keys.accept_key(2, secs(60)).is_some());
    assert!(keys.accept_key(3, secs(60)).is_none());
    // Two keys valid from the start: the higher id sends.
    let keys = chain(vec![Key::new(7, "x"), Key::new(5, "y")]);
    assert_eq!(keys.send_key(secs(1)).map(|k| k.id), Some(7));
    // Nothing valid yet.
    let keys = chain(vec![windowed(1, b"k", Some(10), None)]);
    assert!(keys.send_key(secs(9)).is_none());
}

#[test]
fn replay_window_allows_reordering_within_64() {
    let mut w = ReplayWindow::new(1000);
    assert!(!w.accept(1000), "repeat of the first");
    assert!(w.accept(1002));
    assert!(w.accept(1001), "one late message");
    assert!(!w.accept(1001));
    assert!(w.accept(1002 + 63 - 10));
    assert_eq!(w.highest(), 1055);
    assert!(w.accept(1055 - 63), "just inside the window");
    assert!(!w.accept(1055 - 64), "just outside");
    assert!(!w.check(1002));
    // A jump past the window forgets the bitmap but not the order.
    assert!(w.accept(5000));
    assert!(!w.accept(5000));
    assert!(!w.accept(1055));
    assert!(w.accept(4999));
    let mut top = ReplayWindow::new(u64::MAX - 1);
    assert!(top.accept(u64::MAX));
    assert!(!top.accept(u64::MAX));
}

#[test]
fn signed_messages_verify_and_sequence_numbers_climb() {
    let keys = chain(vec![Key::new(9, "link-key")]);
    let mut a = Authenticator::new(keys.clone(), Instant::ZERO, 1_000);
    let mut b = Authenticator::new(keys, Instant::ZERO, 7);
    for request in 0..3 {
        let bytes = signed(&mut a, at(1), A, refresh(request));
        assert_eq!(b.verify(at(1), &bytes, A), Ok(()));
    }
    assert_eq!(a.next_seq(), 1_003);
    assert_eq!(a.stats().signed, 3);
    assert_eq!(b.stats().verified, 3);
    assert_eq!(b.window(A, 9).map(ReplayWindow::highest), Some(1_002));
    // The message names its sender: the same bytes from another MAC fail.
    let bytes = signed(&mut a, at(1), A, refresh(4));
    assert_eq!(b.verify(at(1), &bytes, B), Err(AuthFailure::BadDigest));
    assert_eq!(b.stats().bad_digest, 1);
}

#[test]
fn every_refusal_is_counted() {
    let mut rx = Authenticator::new(chain(vec![Key::new(1, "right")]), Instant::ZERO, 0);
    // No AUTH TLV.
    let plain = emit(&refresh(1));
    assert_eq!(rx.verify(at(1), &plain, A), Err(AuthFailure::Unsigned));
    // Same key id, wrong secret.
    let mut forger = Authenticator::new(chain(vec![Key::new(1, "wrong")]), Instant::ZERO, 0);
    let forged = signed(&mut forger, at(1), A, refresh(2));
    assert_eq!(rx.verify(at(1), &forged, A), Err(AuthFailure::BadDigest));
    // A key id the receiver does not have.
    let mut stranger = Authenticator::new(chain(vec![Key::new(2, "right")]), Instant::ZERO, 0);
    let unknown = signed(&mut stranger, at(1), A, refresh(3));
    assert_eq!(
        rx.verify(at(1), &unknown, A),
        Err(AuthFailure::UnknownKey(2))
    );
    // A replay of a good message.
    let mut tx = Authenticator::new(chain(vec![Key::new(1, "right")]), Instant::ZERO, 50);
    let good = signed(&mut tx, at(1), A, refresh(4));
    assert_eq!(rx.verify(at(1), &good, A), Ok(()));
    assert_eq!(rx.verify(at(2), &good, A), Err(AuthFailure::Replayed(50)));
    // Garbage.
    assert_eq!(rx.verify(at(1), &[0x52], A), Err(AuthFailure::Malformed));
    let s = rx.stats();
    assert_eq!(
        (
            s.unsigned_dropped,
            s.bad_digest,
            s.unknown_key,
            s.replayed,
            s.malformed,
            s.verified
        ),
        (1, 1, 1, 1, 1, 1)
    );
}

#[test]
fn windows_are_per_sender_and_key() {
    let keys = chain(vec![Key::new(1, "k1"), Key::new(2, "k2")]);
    let mut rx = Authenticator::new(keys.clone(), Instant::ZERO, 0);
    // Two senders on one link may use the same sequence numbers.
    let mut a = Authenticator::new(keys.clone(), Instant::ZERO, 10);
    let mut b = Authenticator::new(keys, Instant::ZERO, 10);
    let from_a = signed(&mut a, at(1), A, refresh(1));
    let from_b = signed(&mut b, at(1), B, refresh(1));
    assert_eq!(rx.verify(at(1), &from_a, A), Ok(()));
    assert_eq!(rx.verify(at(1), &from_b, B), Ok(()));
    assert_eq!(rx.window(A, 2).map(ReplayWindow::highest), Some(10));
    assert!(rx.window(A, 1).is_none());
}

#[test]
fn rotation_old_key_verifies_until_its_end_new_messages_use_the_new_key() {
    let keys = chain(vec![
        windowed(1, b"old", None, Some(100)),
        windowed(2, b"new", Some(60), None),
    ]);
    let mut tx = Authenticator::new(keys.clone(), at(0), 1);
    let mut rx = Authenticator::new(keys, at(0), 1);
    let old = signed(&mut tx, at(50), A, refresh(1));
    assert_eq!(wire_auth::signature(&old).map(|s| s.key_id), Ok(1));
    let new = signed(&mut tx, at(70), A, refresh(2));
    assert_eq!(wire_auth::signature(&new).map(|s| s.key_id), Ok(2));
    // A message signed with the old key, delayed into the overlap, still verifies ...
    assert_eq!(rx.verify(at(99), &old, A), Ok(()));
    assert_eq!(rx.verify(at(99), &new, A), Ok(()));
    // ... but not once the old key has expired.
    let late = signed(
        &mut Authenticator::new(chain(vec![Key::new(1, "old")]), at(0), 5),
        at(0),
        A,
        refresh(3),
    );
    assert_eq!(
        rx.verify(at(100), &late, A),
        Err(AuthFailure::UnknownKey(1))
    );
    // No key valid: nothing can be sent.
    let mut early = Authenticator::new(chain(vec![windowed(3, b"k", Some(10), None)]), at(0), 0);
    let mut repr = refresh(4);
    assert_eq!(early.sign(at(5), &mut repr, A), Err(AuthFailure::NoSendKey));
    assert_eq!(early.stats().no_send_key, 1);
    // The epoch shifts the windows: a node started at 1000 s sees key 3 from 1010 s.
    let mut later = Authenticator::new(chain(vec![windowed(3, b"k", Some(10), None)]), at(1000), 0);
    assert_eq!(later.sign(at(1010), &mut repr, A), Ok(()));
}

#[test]
fn without_keys_nothing_is_signed_and_everything_passes() {
    let mut off = Authenticator::new(KeyChain::default(), Instant::ZERO, 0);
    assert!(!off.is_enabled());
    let mut repr = refresh(1);
    off.sign(at(1), &mut repr, A).unwrap();
    assert_eq!(repr, refresh(1));
    assert_eq!(off.verify(at(1), &emit(&repr), A), Ok(()));
    assert_eq!(*off.stats(), AuthStats::default());
}

#[test]
fn senders_are_bounded() {
    let keys = chain(vec![Key::new(1, "k")]);
    let mut rx = Authenticator::new(keys.clone(), Instant::ZERO, 0);
    let mut tx = Authenticator::new(keys, Instant::ZERO, 0);
    for n in 0..=MAX_SENDERS {
        let src = Address([0x02, 0, 0, 0, (n >> 8) as u8, n as u8]);
        let bytes = signed(&mut tx, at(1), src, refresh(1));
        let expected = if n < MAX_SENDERS {
            Ok(())
        } else {
            Err(AuthFailure::TooManySenders)
        };
        assert_eq!(rx.verify(at(1), &bytes, src), expected);
    }
    assert_eq!(rx.stats().too_many_senders, 1);
}
