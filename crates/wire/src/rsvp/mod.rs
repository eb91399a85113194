//! RSVP messages (RFC 2205 §3.1 and Appendix A) with Integrated Services objects (RFC 2210 §3).
//!
//! The QoS switch-router (QSR) of the IBM paper sets up its switched paths with RSVP: a Path
//! message travels from the sender towards the receiver installing path state and, in the QSR,
//! carries in its RSVP_HOP the label the upstream node chose for the switched path on the link
//! (QSR paper §3.2: the paper's ATM VC; our MPLS label, see `docs/rsvp.md`); a Resv travels back
//! hop by hop, returning that label, and splices the path.
//!
//! An RSVP message is an 8-byte common header (RFC 2205 §3.1.1, [`Packet`]) followed by
//! objects (§3.1.2), each a 4-byte header — Length, Class-Num, C-Type — and a body whose length
//! makes the object a multiple of 4 bytes ([`Object`], iterated by [`Objects`]). [`Repr`] is the
//! owned message: header fields plus a list of [`ObjectRepr`]s; [`Path`], [`Resv`] and the other
//! message structs build a `Repr` with the objects in the order of RFC 2205 §3.1.3–§3.1.9.
//!
//! Only the IPv4 C-Types are interpreted. Objects of other classes or C-Types, and Integrated
//! Services bodies (FLOWSPEC, SENDER_TSPEC, ADSPEC) in a form other than the canonical one of
//! RFC 2210 that [`Flowspec`], [`TokenBucket`] and [`Adspec`] describe, are kept as
//! [`ObjectRepr::Unknown`] bytes and written back unchanged.
//!
//! RSVP travels as raw IP protocol [`IP_PROTOCOL`] (46); Path, PathTear and ResvConf carry the
//! IP Router Alert option (RFC 2113, see [`crate::ipv4::Repr::emit_with_router_alert`] and
//! [`MessageType::router_alert`]).
//!
//! Written here rather than taken from a crate: smoltcp's `wire` has neither RSVP nor MPLS, and
//! no maintained Rust crate parses RSVP with Integrated Services objects.

mod decode;
mod error;
mod message;
mod object;
mod objects;
mod repr;
#[cfg(test)]
mod tests;

pub use decode::Message;
pub use error::RsvpError;
pub use message::{
    FlowDescriptors, Path, PathErr, PathTear, Resv, ResvConf, ResvErr, ResvTear, SenderDescriptor,
};
pub use object::{ClassNum, Object, ObjectRepr, Objects, OBJECT_HEADER_LEN};
pub use objects::addressing::{FilterSpec, Label, ResvConfirm, RsvpHop, SenderTemplate, Session};
pub use objects::adspec::{
    Adspec, ControlledLoadAdspec, GeneralAdspec, GuaranteedAdspec, GuaranteedTerms,
};
pub use objects::intserv::{F32Bits, Flowspec, Rspec, TokenBucket};
pub use objects::state::{ErrorCode, ErrorSpec, Style, StyleKind, TimeValues};
pub use repr::Repr;

use crate::checksum;
use crate::ipv4::Protocol;

/// Result with the RSVP module's [`RsvpError`].
pub type Result<T> = core::result::Result<T, RsvpError>;

/// The IP protocol number of RSVP, 46 (RFC 2205 §3.1).
pub const IP_PROTOCOL: Protocol = Protocol::Unknown(46);

/// The IPv4 packet that carries RSVP message `message` (already written, e.g. by
/// [`Repr::to_bytes`]) from `src` to `dst` with TTL `ttl` — with the Router Alert option when
/// `router_alert` (Path, PathTear, ResvConf: [`MessageType::router_alert`]) — header checksum
/// filled in.
pub fn ip_packet(
    src: core::net::Ipv4Addr,
    dst: core::net::Ipv4Addr,
    ttl: u8,
    router_alert: bool,
    message: &[u8],
) -> Vec<u8> {
    use crate::ipv4;
    let header_len = if router_alert {
        ipv4::ROUTER_ALERT_HEADER_LEN
    } else {
        ipv4::HEADER_LEN
    };
    let mut packet = vec![0u8; header_len + message.len()];
    let header = ipv4::Repr {
        src_addr: src,
        dst_addr: dst,
        protocol: IP_PROTOCOL,
        payload_len: message.len(),
        ttl,
        dscp_ecn: 0,
    };
    let mut ip = ipv4::Packet::new_unchecked(&mut packet[..]);
    if router_alert {
        header.emit_with_router_alert(&mut ip);
    } else {
        header.emit(&mut ip);
    }
    packet[header_len..].copy_from_slice(message);
    packet
}

/// The protocol version of RFC 2205.
pub const VERSION: u8 = 1;

/// Length of the common header.
pub const HEADER_LEN: usize = 8;

/// The largest message the 16-bit RSVP Length field describes.
pub const MAX_LEN: usize = 0xfffc;

/// The RSVP message type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MessageType {
    /// Path, 1 (RFC 2205 §3.1.3).
    Path,
    /// Resv, 2 (§3.1.4).
    Resv,
    /// PathErr, 3 (§3.1.7).
    PathErr,
    /// ResvErr, 4 (§3.1.8).
    ResvErr,
    /// PathTear, 5 (§3.1.5).
    PathTear,
    /// ResvTear, 6 (§3.1.6).
    ResvTear,
    /// ResvConf, 7 (§3.1.9).
    ResvConf,
    /// Any other value (e.g. RFC 2961 Bundle or Srefresh), kept as data.
    Unknown(u8),
}

impl From<u8> for MessageType {
    fn from(value: u8) -> MessageType {
        match value {
            1 => MessageType::Path,
            2 => MessageType::Resv,
            3 => MessageType::PathErr,
            4 => MessageType::ResvErr,
            5 => MessageType::PathTear,
            6 => MessageType::ResvTear,
            7 => MessageType::ResvConf,
            other => MessageType::Unknown(other),
        }
    }
}

impl From<MessageType> for u8 {
    fn from(value: MessageType) -> u8 {
        match value {
            MessageType::Path => 1,
            MessageType::Resv => 2,
            MessageType::PathErr => 3,
            MessageType::ResvErr => 4,
            MessageType::PathTear => 5,
            MessageType::ResvTear => 6,
            MessageType::ResvConf => 7,
            MessageType::Unknown(other) => other,
        }
    }
}

impl MessageType {
    /// Whether messages of this type travel with the IP Router Alert option (RFC 2205 §3.1:
    /// Path, PathTear and ResvConf), so that every RSVP router on the way intercepts them.
    pub const fn router_alert(self) -> bool {
        matches!(
            self,
            MessageType::Path | MessageType::PathTear | MessageType::ResvConf
        )
    }
}

mod field {
    use core::ops::Range;

    pub(super) const VER_FLAGS: usize = 0;
    pub(super) const MSG_TYPE: usize = 1;
    pub(super) const CHECKSUM: Range<usize> = 2..4;
    pub(super) const SEND_TTL: usize = 4;
    pub(super) const RESERVED: usize = 5;
    pub(super) const LENGTH: Range<usize> = 6..8;
}

/// A read/write view of an RSVP message (the IP payload).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking its length; accessors may panic on a short buffer.
    pub fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wraps a buffer after [`check_len`](Self::check_len); after this no accessor panics.
    /// (Version, checksum and objects are checked by [`Repr::parse`].)
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Checks the buffer: [`RsvpError::Truncated`] if shorter than the header or than the RSVP
    /// Length; [`RsvpError::Length`] if the Length is below [`HEADER_LEN`] or not a multiple of 4.
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(RsvpError::Truncated);
        }
        let total = self.length();
        if usize::from(total) < HEADER_LEN || !total.is_multiple_of(4) {
            Err(RsvpError::Length(total))
        } else if usize::from(total) > len {
            Err(RsvpError::Truncated)
        } else {
            Ok(())
        }
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The version (high nibble of the first octet; [`VERSION`] in RFC 2205).
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VER_FLAGS] >> 4
    }

    /// The flags (low nibble of the first octet; none defined by RFC 2205).
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[field::VER_FLAGS] & 0x0f
    }

    /// The message type.
    pub fn msg_type(&self) -> MessageType {
        MessageType::from(self.buffer.as_ref()[field::MSG_TYPE])
    }

    /// The RSVP Checksum field (0: none transmitted).
    pub fn checksum(&self) -> u16 {
        let d = &self.buffer.as_ref()[field::CHECKSUM];
        u16::from_be_bytes([d[0], d[1]])
    }

    /// The IP TTL with which the message was sent (Send_TTL).
    pub fn send_ttl(&self) -> u8 {
        self.buffer.as_ref()[field::SEND_TTL]
    }

    /// The reserved octet.
    pub fn reserved(&self) -> u8 {
        self.buffer.as_ref()[field::RESERVED]
    }

    /// The RSVP Length: header and objects, in bytes.
    pub fn length(&self) -> u16 {
        let d = &self.buffer.as_ref()[field::LENGTH];
        u16::from_be_bytes([d[0], d[1]])
    }

    /// The message: the first [`length`](Self::length) bytes of the buffer.
    pub fn message(&self) -> &[u8] {
        &self.buffer.as_ref()[..usize::from(self.length())]
    }

    /// The object area: the bytes after the header up to the RSVP Length.
    pub fn objects_bytes(&self) -> &[u8] {
        &self.message()[HEADER_LEN..]
    }

    /// The objects of the message, each bounds-checked as it is reached.
    pub fn objects(&self) -> Objects<'_> {
        Objects::new(self.objects_bytes())
    }

    /// Whether the checksum verifies: zero ("no checksum transmitted", RFC 2205 §3.1.1) or the
    /// ones'-complement sum of the whole message, checksum included, is all ones.
    pub fn verify_checksum(&self) -> bool {
        self.checksum() == 0 || checksum::data(self.message()) == 0xffff
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the version (low 4 bits of `value`).
    pub fn set_version(&mut self, value: u8) {
        let b = &mut self.buffer.as_mut()[field::VER_FLAGS];
        *b = (*b & 0x0f) | (value << 4);
    }

    /// Sets the flags (low 4 bits of `value`).
    pub fn set_flags(&mut self, value: u8) {
        let b = &mut self.buffer.as_mut()[field::VER_FLAGS];
        *b = (*b & 0xf0) | (value & 0x0f);
    }

    /// Sets the message type.
    pub fn set_msg_type(&mut self, value: MessageType) {
        self.buffer.as_mut()[field::MSG_TYPE] = value.into();
    }

    /// Sets the checksum field.
    pub fn set_checksum(&mut self, value: u16) {
        self.buffer.as_mut()[field::CHECKSUM].copy_from_slice(&value.to_be_bytes());
    }

    /// Sets Send_TTL.
    pub fn set_send_ttl(&mut self, value: u8) {
        self.buffer.as_mut()[field::SEND_TTL] = value;
    }

    /// Sets the reserved octet.
    pub fn set_reserved(&mut self, value: u8) {
        self.buffer.as_mut()[field::RESERVED] = value;
    }

    /// Sets the RSVP Length.
    pub fn set_length(&mut self, value: u16) {
        self.buffer.as_mut()[field::LENGTH].copy_from_slice(&value.to_be_bytes());
    }

    /// The object area, mutable (up to the RSVP Length).
    pub fn objects_bytes_mut(&mut self) -> &mut [u8] {
        let end = usize::from(self.length());
        &mut self.buffer.as_mut()[HEADER_LEN..end]
    }

    /// Computes the checksum over the message (up to the RSVP Length) with the checksum field
    /// zeroed and stores it. A computed value of 0 is sent as 0xffff, its ones'-complement
    /// equal, since 0 means "no checksum".
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let end = usize::from(self.length());
        let sum = checksum::data(&self.buffer.as_ref()[..end]);
        let value = !sum;
        self.set_checksum(if value == 0 { 0xffff } else { value });
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for Packet<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}
