//! The AUTH TLV: keyed-hash authentication of every control message, after RFC 2747 (RSVP
//! cryptographic authentication: a key id naming a shared key per link, a sequence number for
//! replay protection, a keyed digest over the whole message). Layout in `docs/protocol.md` §6
//! and "Authentication".
//!
//! The AUTH TLV ([`TLV_AUTH`], 28-byte value) is always the **last** TLV, so the digest covers
//! every other TLV:
//!
//! | offset | size | field                                                        |
//! |-------:|-----:|--------------------------------------------------------------|
//! | 0      | 4    | key id                                                       |
//! | 4      | 8    | sequence number                                              |
//! | 12     | 16   | digest: HMAC-SHA-256 truncated to its leftmost 16 bytes      |
//!
//! The digest is HMAC-SHA-256 (RFC 2104; truncation as its §5) keyed by the link's key over the
//! frame's 6-byte source MAC followed by the whole message (header, body and TLVs, `length`
//! bytes) with the 16 digest bytes set to zero. Covering the source MAC binds the message to its
//! sender, so a node holding the link key cannot replay another sender's message as its own.
//! The sequence number is checked by the receiver's replay window (`rtlan_core::auth`).
//!
//! [`sign`] works on a [`Repr`] (the message is emitted once to compute the digest);
//! [`sign_message`] and [`verify`] work on the emitted bytes without copying them. The digest is
//! compared in constant time (`hmac`'s `verify_truncated_left`). HMAC and SHA-256 come from the
//! RustCrypto `hmac` and `sha2` crates rather than being written here.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use super::{Packet, Repr, Tlv, FLAG_AUTHENTICATED, HEADER_LEN, TLV_AUTH, TLV_HEADER_LEN};
use crate::ethernet::Address;

/// Length of the AUTH TLV's value: key id, sequence number, digest.
pub const AUTH_VALUE_LEN: usize = 28;

/// Length of the truncated digest.
pub const DIGEST_LEN: usize = 16;

/// Bytes the AUTH TLV adds to a message (type and length octets included).
pub const AUTH_TLV_LEN: usize = TLV_HEADER_LEN + AUTH_VALUE_LEN;

/// Offset of the digest inside the AUTH TLV's value.
const DIGEST_AT: usize = 12;

type HmacSha256 = Hmac<Sha256>;

/// Why a message could not be signed or did not verify.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
pub enum AuthError {
    /// The message carries no AUTH TLV (and no AUTHENTICATED flag).
    #[error("message is not authenticated")]
    Unsigned,
    /// The message does not parse far enough to find its AUTH TLV: bad header or length, unknown
    /// type, TLV area not consumed exactly, AUTHENTICATED flag disagreeing with the AUTH TLV, an
    /// AUTH TLV that is not the last, not 28 bytes long or present twice.
    #[error("malformed authentication data")]
    Malformed,
    /// The digest does not match the message, the sender's MAC and the key.
    #[error("digest does not verify")]
    BadDigest,
    /// The output buffer is too short for the message (signing).
    #[error("buffer too short for the message")]
    Truncated,
}

/// The value of an AUTH TLV.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct AuthTlv {
    /// Which of the link's keys signed the message.
    pub key_id: u32,
    /// The sender's sequence number under this key (monotone, for the replay window).
    pub seq: u64,
    /// HMAC-SHA-256, leftmost 16 bytes.
    pub digest: [u8; DIGEST_LEN],
}

impl AuthTlv {
    /// Decodes a 28-byte value.
    pub fn parse(value: &[u8]) -> Result<AuthTlv, AuthError> {
        let value: &[u8; AUTH_VALUE_LEN] = value.try_into().map_err(|_| AuthError::Malformed)?;
        let (key_id, rest) = value.split_at(4);
        let (seq, digest) = rest.split_at(8);
        Ok(AuthTlv {
            key_id: u32::from_be_bytes(key_id.try_into().map_err(|_| AuthError::Malformed)?),
            seq: u64::from_be_bytes(seq.try_into().map_err(|_| AuthError::Malformed)?),
            digest: digest.try_into().map_err(|_| AuthError::Malformed)?,
        })
    }

    /// The TLV carrying this value.
    pub fn to_tlv(self) -> Tlv {
        let mut value = Vec::with_capacity(AUTH_VALUE_LEN);
        value.extend_from_slice(&self.key_id.to_be_bytes());
        value.extend_from_slice(&self.seq.to_be_bytes());
        value.extend_from_slice(&self.digest);
        Tlv {
            kind: TLV_AUTH,
            value,
        }
    }
}

/// Where the AUTH TLV of an emitted message lies.
struct Located {
    /// The decoded value.
    auth: AuthTlv,
    /// Offset of the digest in the message.
    digest_at: usize,
    /// The message length (`length` field).
    len: usize,
}

/// Finds the AUTH TLV of `message` (the Ethernet payload: header, body, TLVs, maybe padding),
/// checking only what authentication needs: the header's length, the type's body, a TLV area
/// consumed exactly, and one AUTH TLV of 28 bytes, the last, matching the AUTHENTICATED flag.
fn locate(message: &[u8]) -> Result<Located, AuthError> {
    let packet = Packet::new_checked(message).map_err(|_| AuthError::Malformed)?;
    let len = usize::from(packet.length());
    let body_len = packet
        .message_type()
        .body_len()
        .ok_or(AuthError::Malformed)?;
    let flagged = packet.flags() & FLAG_AUTHENTICATED != 0;
    let mut at = HEADER_LEN + body_len;
    if at > len {
        return Err(AuthError::Malformed);
    }
    let mut auth_at = None;
    let mut last_at = None;
    while at < len {
        let tlv_len = match message.get(at..at + TLV_HEADER_LEN) {
            Some(&[kind, value_len]) => {
                if kind == TLV_AUTH {
                    if auth_at.is_some() {
                        return Err(AuthError::Malformed);
                    }
                    auth_at = Some(at);
                }
                TLV_HEADER_LEN + usize::from(value_len)
            }
            _ => return Err(AuthError::Malformed),
        };
        last_at = Some(at);
        at += tlv_len;
    }
    if at != len {
        return Err(AuthError::Malformed);
    }
    match (auth_at, flagged) {
        (None, false) => return Err(AuthError::Unsigned),
        (None, true) | (Some(_), false) => return Err(AuthError::Malformed),
        (Some(_), true) => {}
    }
    let auth_at = auth_at.filter(|&a| Some(a) == last_at && a + AUTH_TLV_LEN == len);
    let auth_at = auth_at.ok_or(AuthError::Malformed)?;
    let value = &message[auth_at + TLV_HEADER_LEN..len];
    Ok(Located {
        auth: AuthTlv::parse(value)?,
        digest_at: auth_at + TLV_HEADER_LEN + DIGEST_AT,
        len,
    })
}

/// The full HMAC-SHA-256 of `src` followed by `message[..len]` with the digest bytes zeroed.
fn mac(key: &[u8], src: Address, message: &[u8], at: &Located) -> Result<HmacSha256, AuthError> {
    // HMAC takes keys of any length (RFC 2104 §2), so this never fails.
    let mut mac = HmacSha256::new_from_slice(key).map_err(|_| AuthError::BadDigest)?;
    mac.update(&src.0);
    mac.update(&message[..at.digest_at]);
    mac.update(&[0u8; DIGEST_LEN]);
    mac.update(&message[at.digest_at + DIGEST_LEN..at.len]);
    Ok(mac)
}

/// The AUTH TLV of an emitted message, without checking its digest (to choose the key by its
/// id). [`AuthError::Unsigned`] if the message has none.
pub fn signature(message: &[u8]) -> Result<AuthTlv, AuthError> {
    locate(message).map(|l| l.auth)
}

/// Checks the digest of `message` (an emitted control message, padding allowed after `length`)
/// sent by `src`, under `key`; returns its AUTH value (key id and sequence number, for the replay
/// window). Constant-time in the digest comparison.
pub fn verify(message: &[u8], src: Address, key: &[u8]) -> Result<AuthTlv, AuthError> {
    let at = locate(message)?;
    mac(key, src, message, &at)?
        .verify_truncated_left(&at.auth.digest)
        .map_err(|_| AuthError::BadDigest)?;
    Ok(at.auth)
}

/// Writes the digest of an emitted message whose last TLV is an AUTH TLV (key id and sequence
/// number already set; the digest bytes may hold anything), as sent by `src` under `key`.
pub fn sign_message(message: &mut [u8], src: Address, key: &[u8]) -> Result<(), AuthError> {
    let at = locate(message)?;
    let full = mac(key, src, message, &at)?.finalize().into_bytes();
    message[at.digest_at..at.digest_at + DIGEST_LEN].copy_from_slice(&full[..DIGEST_LEN]);
    Ok(())
}

/// Makes `repr` ready to be signed: sets the AUTHENTICATED flag and puts an AUTH TLV with
/// `key_id`, `seq` and a zero digest last (replacing any AUTH TLV it had). Emit it, then call
/// [`sign_message`] on the bytes.
pub fn prepare(repr: &mut Repr, key_id: u32, seq: u64) {
    repr.tlvs.retain(|t| t.kind != TLV_AUTH);
    repr.flags |= FLAG_AUTHENTICATED;
    repr.tlvs.push(
        AuthTlv {
            key_id,
            seq,
            digest: [0; DIGEST_LEN],
        }
        .to_tlv(),
    );
}

/// Signs `repr` as sent by `src` with `key` (id `key_id`) and sequence number `seq`: after this
/// its last TLV is the AUTH TLV with the digest of the message as [`Repr::emit`] writes it.
pub fn sign(
    repr: &mut Repr,
    key_id: u32,
    seq: u64,
    key: &[u8],
    src: Address,
) -> Result<(), AuthError> {
    prepare(repr, key_id, seq);
    let mut buf = vec![0u8; repr.buffer_len()];
    repr.emit(&mut Packet::new_unchecked(&mut buf[..]))
        .map_err(|_| AuthError::Truncated)?;
    sign_message(&mut buf, src, key)?;
    let signed = signature(&buf)?;
    if let Some(last) = repr.tlvs.last_mut() {
        *last = signed.to_tlv();
    }
    Ok(())
}

#[cfg(test)]
#[path = "auth_tests.rs"]
mod tests;
