//! Authentication of control messages, sans IO: key chains with key ids and validity windows,
//! the send sequence number, and per-sender replay windows — RFC 2747 (RSVP cryptographic
//! authentication) §2 (key id and sequence number per message), §3 (sequence numbers monotone
//! across restarts, receivers tolerating some reordering), §4.2 (keys per interface, several
//! valid at once for rotation). The wire format is [`rtlan_wire::control::auth`]
//! (`docs/protocol.md` "Authentication").
//!
//! One [`Authenticator`] serves one link end: a switch has one per port that has keys, a host
//! daemon one for its link. It signs every message it sends with the **newest valid** key of its
//! [`KeyChain`] and accepts a message under **any valid** key, so keys rotate without a flag
//! day: configure the new key on both ends with a `not_before`, let the old one run out with a
//! later `not_after`. Key validity is measured from the authenticator's start (`epoch`, the
//! time the node was built), so it needs no wall clock.
//!
//! Sequence numbers start at a boot value the shell passes in (the Linux shells: wall-clock
//! nanoseconds at start), so they keep growing across restarts (RFC 2747 §3), and grow by one
//! per message. A receiver keeps, per (sender MAC, key id), the highest sequence number seen
//! and a 64-bit bitmap of the 64 below it (the IPsec anti-replay window, RFC 4303 §3.4.3):
//! reordering within 64 messages passes, a repeat or anything older is refused. The first
//! message of a sender starts its window (a receiver that restarted cannot tell an old recorded
//! message from a fresh one; RFC 2747's challenge handshake is not implemented).

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use rtlan_wire::control::auth::{self as wire_auth, AuthError};
use rtlan_wire::control::Repr;
use rtlan_wire::ethernet::Address;

use crate::time::Instant;

/// Width of the replay window: how far behind the highest sequence number a message may be.
pub const REPLAY_WINDOW: u64 = 64;

/// Most senders one [`Authenticator`] keeps a replay window for (a link has one or two; only
/// messages with a valid digest create one, so only key holders can fill it).
pub const MAX_SENDERS: usize = 64;

/// One shared key of a link.
#[derive(Clone, PartialEq, Eq)]
pub struct Key {
    /// The key id carried in the AUTH TLV; unique within a chain.
    pub id: u32,
    /// The secret (HMAC-SHA-256 key; 32 random bytes recommended, never empty).
    pub secret: Vec<u8>,
    /// Valid from this long after the node's start; `None` = from the start.
    pub not_before: Option<Duration>,
    /// Valid until this long after the node's start (exclusive); `None` = for ever.
    pub not_after: Option<Duration>,
}

impl Key {
    /// A key valid from the start for ever.
    pub fn new(id: u32, secret: impl Into<Vec<u8>>) -> Key {
        Key {
            id,
            secret: secret.into(),
            not_before: None,
            not_after: None,
        }
    }

    /// Whether the key is valid `since` the node's start.
    pub fn is_valid(&self, since: Duration) -> bool {
        self.not_before.is_none_or(|t| since >= t) && self.not_after.is_none_or(|t| since < t)
    }
}

/// Never prints the secret.
impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Key")
            .field("id", &self.id)
            .field("secret", &format_args!("<{} bytes>", self.secret.len()))
            .field("not_before", &self.not_before)
            .field("not_after", &self.not_after)
            .finish()
    }
}

/// A key chain that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyChainError {
    /// Two keys with one id.
    #[error("key id {0} appears twice")]
    DuplicateId(u32),
    /// A key with an empty secret.
    #[error("key {0} has an empty secret")]
    EmptySecret(u32),
    /// A key whose validity ends before it begins.
    #[error("key {0}: not_after is not after not_before")]
    EmptyWindow(u32),
}

/// The keys of one link end; empty = authentication off.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KeyChain {
    keys: Vec<Key>,
}

impl KeyChain {
    /// A chain of `keys`: ids unique, secrets not empty, windows not empty.
    pub fn new(keys: Vec<Key>) -> Result<KeyChain, KeyChainError> {
        for (index, key) in keys.iter().enumerate() {
            if keys[..index].iter().any(|k| k.id == key.id) {
                return Err(KeyChainError::DuplicateId(key.id));
            }
            if key.secret.is_empty() {
                return Err(KeyChainError::EmptySecret(key.id));
            }
            if let (Some(from), Some(to)) = (key.not_before, key.not_after) {
                if to <= from {
                    return Err(KeyChainError::EmptyWindow(key.id));
                }
            }
        }
        Ok(KeyChain { keys })
    }

    /// Whether the chain has no key (authentication off).
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The keys, in configuration order.
    pub fn keys(&self) -> &[Key] {
        &self.keys
    }

    /// The key to send with `since` the start: among the valid ones, the one that became valid
    /// last (the highest id among equals).
    pub fn send_key(&self, since: Duration) -> Option<&Key> {
        self.keys
            .iter()
            .filter(|k| k.is_valid(since))
            .max_by_key(|k| (k.not_before.unwrap_or(Duration::ZERO), k.id))
    }

    /// Key `id` if it is valid `since` the start.
    pub fn accept_key(&self, id: u32, since: Duration) -> Option<&Key> {
        self.keys.iter().find(|k| k.id == id && k.is_valid(since))
    }
}

/// Why an incoming message was refused, or an outgoing one could not be signed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AuthFailure {
    /// The message carries no AUTH TLV.
    #[error("unauthenticated message")]
    Unsigned,
    /// The AUTH TLV is malformed (not last, wrong length, flag mismatch).
    #[error("malformed authentication data")]
    Malformed,
    /// The key id names no key valid now.
    #[error("unknown or expired key id {0}")]
    UnknownKey(u32),
    /// The digest does not verify.
    #[error("bad digest")]
    BadDigest,
    /// The sequence number was seen already or is too old for the window.
    #[error("replayed or too old sequence number {0}")]
    Replayed(u64),
    /// A new sender, but [`MAX_SENDERS`] windows are kept already.
    #[error("too many senders")]
    TooManySenders,
    /// No key is valid for sending now.
    #[error("no valid key to sign with")]
    NoSendKey,
}

/// Authentication counters of one link end (or, summed, of a switch).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct AuthStats {
    /// Messages signed.
    pub signed: u64,
    /// Messages not sent because no key was valid.
    pub no_send_key: u64,
    /// Messages that verified and passed the replay window.
    pub verified: u64,
    /// Messages without an AUTH TLV, dropped.
    pub unsigned_dropped: u64,
    /// Messages with malformed authentication data, dropped.
    pub malformed: u64,
    /// Messages whose key id names no valid key, dropped.
    pub unknown_key: u64,
    /// Messages whose digest did not verify, dropped.
    pub bad_digest: u64,
    /// Messages refused by the replay window (repeated or too old), dropped.
    pub replayed: u64,
    /// Messages from a new sender refused because [`MAX_SENDERS`] windows are full.
    pub too_many_senders: u64,
}

impl AuthStats {
    /// Adds `other`'s counters to these.
    pub fn add(&mut self, other: &AuthStats) {
        self.signed += other.signed;
        self.no_send_key += other.no_send_key;
        self.verified += other.verified;
        self.unsigned_dropped += other.unsigned_dropped;
        self.malformed += other.malformed;
        self.unknown_key += other.unknown_key;
        self.bad_digest += other.bad_digest;
        self.replayed += other.replayed;
        self.too_many_senders += other.too_many_senders;
    }

    /// Counts `failure` in its counter.
    pub fn record(&mut self, failure: AuthFailure) {
        let counter = match failure {
            AuthFailure::Unsigned => &mut self.unsigned_dropped,
            AuthFailure::Malformed => &mut self.malformed,
            AuthFailure::UnknownKey(_) => &mut self.unknown_key,
            AuthFailure::BadDigest => &mut self.bad_digest,
            AuthFailure::Replayed(_) => &mut self.replayed,
            AuthFailure::TooManySenders => &mut self.too_many_senders,
            AuthFailure::NoSendKey => &mut self.no_send_key,
        };
        *counter += 1;
    }
}

/// The anti-replay window of one (sender, key id): the highest sequence number accepted and a
/// bitmap of the [`REPLAY_WINDOW`] numbers up to it (bit *i* = highest − *i* seen).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplayWindow {
    highest: u64,
    seen: u64,
}

impl ReplayWindow {
    /// A window whose first accepted number is `seq`.
    pub fn new(seq: u64) -> ReplayWindow {
        ReplayWindow {
            highest: seq,
            seen: 1,
        }
    }

    /// Whether `seq` would be accepted (new, and within the window).
    pub fn check(&self, seq: u64) -> bool {
        if seq > self.highest {
            return true;
        }
        let behind = self.highest - seq;
        behind < REPLAY_WINDOW && self.seen & (1 << behind) == 0
    }

    /// Accepts `seq` if [`ReplayWindow::check`] allows it; returns whether it did.
    pub fn accept(&mut self, seq: u64) -> bool {
        if !self.check(seq) {
            return false;
        }
        if seq > self.highest {
            let ahead = seq - self.highest;
            self.seen = if ahead >= REPLAY_WINDOW {
                0
            } else {
                self.seen << ahead
            };
            self.seen |= 1;
            self.highest = seq;
        } else {
            self.seen |= 1 << (self.highest - seq);
        }
        true
    }

    /// The highest sequence number accepted.
    pub fn highest(&self) -> u64 {
        self.highest
    }
}

/// One link end's authentication: its keys, its send sequence number, the replay windows of
/// its peers, and counters.
///
/// Call order: [`Authenticator::new`] when the node is built, then [`Authenticator::sign`] on
/// every message before it is emitted (the node's own source MAC on that link), and
/// [`Authenticator::verify`] on every received message (the Ethernet payload and the frame's
/// source MAC) before it is parsed or acted on. With an empty chain both do nothing and
/// succeed.
#[derive(Debug, Clone)]
pub struct Authenticator {
    chain: KeyChain,
    epoch: Instant,
    next_seq: u64,
    windows: BTreeMap<(Address, u32), ReplayWindow>,
    stats: AuthStats,
}

impl Authenticator {
    /// Authentication with `chain`, whose validity windows count from `epoch`; the first
    /// message sent carries sequence number `seq_base` (the shell's boot value, e.g. wall-clock
    /// ns at start).
    pub fn new(chain: KeyChain, epoch: Instant, seq_base: u64) -> Authenticator {
        Authenticator {
            chain,
            epoch,
            next_seq: seq_base,
            windows: BTreeMap::new(),
            stats: AuthStats::default(),
        }
    }

    /// Whether there are keys (messages are signed and must verify).
    pub fn is_enabled(&self) -> bool {
        !self.chain.is_empty()
    }

    /// The keys.
    pub fn chain(&self) -> &KeyChain {
        &self.chain
    }

    /// Counters.
    pub fn stats(&self) -> &AuthStats {
        &self.stats
    }

    /// The sequence number the next signed message gets.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// Signs `repr` as sent by `src` at `now` with the newest valid key and the next sequence
    /// number. Without keys, leaves it as it is.
    pub fn sign(&mut self, now: Instant, repr: &mut Repr, src: Address) -> Result<(), AuthFailure> {
        if !self.is_enabled() {
            return Ok(());
        }
        let since = now.saturating_duration_since(self.epoch);
        let Some(key) = self.chain.send_key(since) else {
            self.stats.record(AuthFailure::NoSendKey);
            return Err(AuthFailure::NoSendKey);
        };
        let seq = self.next_seq;
        wire_auth::sign(repr, key.id, seq, &key.secret, src).map_err(|_| {
            self.stats.malformed += 1;
            AuthFailure::Malformed
        })?;
        self.next_seq = seq.wrapping_add(1);
        self.stats.signed += 1;
        Ok(())
    }

    /// Checks `message` (an Ethernet payload) from `src` at `now`: AUTH TLV present and well
    /// formed, key id valid now, digest right, sequence number new for (`src`, key id). Counts
    /// every refusal. Without keys, accepts everything.
    pub fn verify(
        &mut self,
        now: Instant,
        message: &[u8],
        src: Address,
    ) -> Result<(), AuthFailure> {
        if !self.is_enabled() {
            return Ok(());
        }
        let result = self.check(now, message, src);
        match result {
            Ok(()) => self.stats.verified += 1,
            Err(failure) => self.stats.record(failure),
        }
        result
    }

    fn check(&mut self, now: Instant, message: &[u8], src: Address) -> Result<(), AuthFailure> {
        let claimed = wire_auth::signature(message).map_err(wire_failure)?;
        let since = now.saturating_duration_since(self.epoch);
        let key = self
            .chain
            .accept_key(claimed.key_id, since)
            .ok_or(AuthFailure::UnknownKey(claimed.key_id))?;
        let auth = wire_auth::verify(message, src, &key.secret).map_err(wire_failure)?;
        let slot = (src, auth.key_id);
        match self.windows.get_mut(&slot) {
            Some(window) => {
                if !window.accept(auth.seq) {
                    return Err(AuthFailure::Replayed(auth.seq));
                }
            }
            None => {
                if self.windows.len() >= MAX_SENDERS {
                    return Err(AuthFailure::TooManySenders);
                }
                self.windows.insert(slot, ReplayWindow::new(auth.seq));
            }
        }
        Ok(())
    }

    /// The replay window of (`src`, `key_id`), if that sender was heard.
    pub fn window(&self, src: Address, key_id: u32) -> Option<&ReplayWindow> {
        self.windows.get(&(src, key_id))
    }
}

fn wire_failure(error: AuthError) -> AuthFailure {
    match error {
        AuthError::Unsigned => AuthFailure::Unsigned,
        AuthError::BadDigest => AuthFailure::BadDigest,
        AuthError::Malformed | AuthError::Truncated => AuthFailure::Malformed,
    }
}

#[cfg(test)]
mod tests;
