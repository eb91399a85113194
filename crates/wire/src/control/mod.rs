//! The rtlan control protocol: reservation signalling between host daemons and switches
//! (EtheReal §2.2 connection setup, §2.3 admission failures, §3.3 reserved control addresses,
//! §3.4 routing of setup messages). Specified byte by byte in `docs/protocol.md`.
//!
//! Control messages ride directly in Ethernet frames with EtherType [`ETHERTYPE`] (0x88B5, IEEE
//! 802 local experimental), addressed to the reserved control proxy MAC of a [`ProxyMacPlan`].
//! A message is a 12-byte versioned header, a fixed body per [`MessageType`], and a trailing area
//! of [`Tlv`]s reserved for extensions such as authentication. [`Packet`] is the zero-copy view
//! of the header; [`Repr`] is the owned, validated message.

mod address;
pub mod auth;
mod recovery;
mod repr;
#[cfg(test)]
mod tests;

use core::fmt;

pub use address::{ProxyMacPlan, CONTROL_ID};
pub use recovery::{EpochTlv, TeardownReason, TLV_EPOCH, TLV_REASON};
pub use repr::{BoundTlv, DelayTlv, HelloRepr, Message, Repr, SetupRepr, Tlv};

use crate::{Error, Result};

/// The EtherType of control frames (IEEE 802 "local experimental EtherType 1").
pub const ETHERTYPE: u16 = 0x88b5;

/// The two magic bytes that open every control message, "RT".
pub const MAGIC: [u8; 2] = [0x52, 0x54];

/// The protocol version this module speaks.
pub const VERSION: u8 = 1;

/// Length of the common header.
pub const HEADER_LEN: usize = 12;

/// Flag: this request is a retransmission of an earlier one with the same request id.
pub const FLAG_RETRANSMISSION: u8 = 0x01;

/// Flag: the TLV area carries an authentication TLV ([`TLV_AUTH`]).
pub const FLAG_AUTHENTICATED: u8 = 0x02;

/// All flag bits defined in version 1; the others must be zero.
pub const FLAGS_DEFINED: u8 = FLAG_RETRANSMISSION | FLAG_AUTHENTICATED;

/// TLV type of the authentication data ([`auth::AuthTlv`], 28 bytes, always the last TLV):
/// key id, sequence number, truncated HMAC-SHA-256 (`docs/protocol.md` "Authentication").
pub const TLV_AUTH: u8 = 1;

/// TLV type of a SETUP's delay terms ([`DelayTlv`], 16 bytes): the required end-to-end delay and
/// the latency accumulated by the hops before the receiver (`docs/protocol.md` §6).
pub const TLV_DELAY: u8 = 2;

/// TLV type of a SETUP_OK's end-to-end delay bound ([`BoundTlv`], 12 bytes).
pub const TLV_BOUND: u8 = 3;

/// Length of a TLV's type and length octets.
pub const TLV_HEADER_LEN: usize = 2;

/// The kind of a control message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MessageType {
    /// Reservation request, 1.
    Setup,
    /// Reservation admitted on the whole path, 2.
    SetupOk,
    /// Reservation refused somewhere on the path, 3.
    SetupFail,
    /// Release a reservation, 4.
    Teardown,
    /// Release done, 5.
    TeardownAck,
    /// Neighbour discovery: who is on the other end of this port, 6.
    Hello,
    /// Soft-state keep-alive of a reservation, 7.
    Refresh,
    /// Keep-alive answered, 8.
    RefreshAck,
    /// Any other value, kept as data.
    Unknown(u8),
}

impl From<u8> for MessageType {
    fn from(value: u8) -> MessageType {
        match value {
            1 => MessageType::Setup,
            2 => MessageType::SetupOk,
            3 => MessageType::SetupFail,
            4 => MessageType::Teardown,
            5 => MessageType::TeardownAck,
            6 => MessageType::Hello,
            7 => MessageType::Refresh,
            8 => MessageType::RefreshAck,
            other => MessageType::Unknown(other),
        }
    }
}

impl From<MessageType> for u8 {
    fn from(value: MessageType) -> u8 {
        match value {
            MessageType::Setup => 1,
            MessageType::SetupOk => 2,
            MessageType::SetupFail => 3,
            MessageType::Teardown => 4,
            MessageType::TeardownAck => 5,
            MessageType::Hello => 6,
            MessageType::Refresh => 7,
            MessageType::RefreshAck => 8,
            MessageType::Unknown(other) => other,
        }
    }
}

impl MessageType {
    /// Length of this type's fixed body, `None` for unknown types.
    pub const fn body_len(self) -> Option<usize> {
        match self {
            MessageType::Setup => Some(repr::SETUP_LEN),
            MessageType::SetupFail => Some(repr::SETUP_FAIL_LEN),
            MessageType::Hello => Some(repr::HELLO_LEN),
            MessageType::SetupOk
            | MessageType::Teardown
            | MessageType::TeardownAck
            | MessageType::Refresh
            | MessageType::RefreshAck => Some(repr::CONNECTION_LEN),
            MessageType::Unknown(_) => None,
        }
    }
}

/// Why a switch refused a reservation (EtheReal §2.3 resources, plus ours).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FailReason {
    /// Not enough bandwidth left on the output link, 1.
    Bandwidth,
    /// Not enough backplane (bus) bandwidth, 2.
    Backplane,
    /// Not enough CPU cycles for scheduling, 3.
    Cpu,
    /// Not enough buffer memory, 4.
    Buffer,
    /// No route to the destination (ARP probe unanswered), 5.
    NoRoute,
    /// No free connection id on the output link, 6.
    IdsExhausted,
    /// The request itself was malformed or inconsistent, 7.
    Malformed,
    /// The request was not authorised, 8.
    Unauthorized,
    /// The end-to-end delay bound would exceed the delay the request requires, 9.
    Delay,
    /// The input port's share of the switch's connection table, or of its SETUPs in progress,
    /// is used up (control-plane protection: one port cannot fill the switch), 10.
    PortLimit,
    /// Any other value, kept as data.
    Unknown(u8),
}

impl From<u8> for FailReason {
    fn from(value: u8) -> FailReason {
        match value {
            1 => FailReason::Bandwidth,
            2 => FailReason::Backplane,
            3 => FailReason::Cpu,
            4 => FailReason::Buffer,
            5 => FailReason::NoRoute,
            6 => FailReason::IdsExhausted,
            7 => FailReason::Malformed,
            8 => FailReason::Unauthorized,
            9 => FailReason::Delay,
            10 => FailReason::PortLimit,
            other => FailReason::Unknown(other),
        }
    }
}

impl From<FailReason> for u8 {
    fn from(value: FailReason) -> u8 {
        match value {
            FailReason::Bandwidth => 1,
            FailReason::Backplane => 2,
            FailReason::Cpu => 3,
            FailReason::Buffer => 4,
            FailReason::NoRoute => 5,
            FailReason::IdsExhausted => 6,
            FailReason::Malformed => 7,
            FailReason::Unauthorized => 8,
            FailReason::Delay => 9,
            FailReason::PortLimit => 10,
            FailReason::Unknown(other) => other,
        }
    }
}

impl fmt::Display for FailReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FailReason::Bandwidth => write!(f, "link bandwidth exhausted"),
            FailReason::Backplane => write!(f, "backplane bandwidth exhausted"),
            FailReason::Cpu => write!(f, "CPU exhausted"),
            FailReason::Buffer => write!(f, "buffer memory exhausted"),
            FailReason::NoRoute => write!(f, "no route to destination"),
            FailReason::IdsExhausted => write!(f, "connection ids exhausted"),
            FailReason::Malformed => write!(f, "malformed request"),
            FailReason::Unauthorized => write!(f, "unauthorized"),
            FailReason::Delay => write!(f, "delay bound exceeds the required delay"),
            FailReason::PortLimit => write!(f, "the input port's share of the switch is used up"),
            FailReason::Unknown(v) => write!(f, "reason {v}"),
        }
    }
}

/// Which kind of node sent a HELLO.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    /// A host's real-time communication daemon (RTCD), 1.
    HostDaemon,
    /// An rtlan switch, 2.
    Switch,
    /// Any other value, kept as data.
    Unknown(u8),
}

impl From<u8> for Role {
    fn from(value: u8) -> Role {
        match value {
            1 => Role::HostDaemon,
            2 => Role::Switch,
            other => Role::Unknown(other),
        }
    }
}

impl From<Role> for u8 {
    fn from(value: Role) -> u8 {
        match value {
            Role::HostDaemon => 1,
            Role::Switch => 2,
            Role::Unknown(other) => other,
        }
    }
}

mod field {
    use core::ops::Range;

    pub(super) const MAGIC: Range<usize> = 0..2;
    pub(super) const VERSION: usize = 2;
    pub(super) const TYPE: usize = 3;
    pub(super) const FLAGS: usize = 4;
    pub(super) const HOP: usize = 5;
    pub(super) const LENGTH: Range<usize> = 6..8;
    pub(super) const REQUEST_ID: Range<usize> = 8..12;
}

/// A read/write view of a control message (the Ethernet payload).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking its length; accessors may panic on a short buffer.
    pub fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wraps a buffer, checking it holds the header and that the length field lies between
    /// [`HEADER_LEN`] and the buffer length; after this no accessor panics. (Magic, version and
    /// the body are checked by [`Repr::parse`].)
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Checks the buffer against the header and the length field.
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let total = usize::from(self.length());
        if total < HEADER_LEN {
            Err(Error::Malformed)
        } else if total > len {
            Err(Error::Truncated)
        } else {
            Ok(())
        }
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The magic bytes ([`MAGIC`] in a control message).
    pub fn magic(&self) -> [u8; 2] {
        let d = &self.buffer.as_ref()[field::MAGIC];
        [d[0], d[1]]
    }

    /// The protocol version.
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VERSION]
    }

    /// The message type.
    pub fn message_type(&self) -> MessageType {
        MessageType::from(self.buffer.as_ref()[field::TYPE])
    }

    /// The flags ([`FLAG_RETRANSMISSION`], [`FLAG_AUTHENTICATED`]).
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[field::FLAGS]
    }

    /// The hop index of the node that wrote this message (0 = host daemon, n = n-th switch).
    pub fn hop(&self) -> u8 {
        self.buffer.as_ref()[field::HOP]
    }

    /// The total message length: header, body and TLV area (Ethernet padding excluded).
    pub fn length(&self) -> u16 {
        let d = &self.buffer.as_ref()[field::LENGTH];
        u16::from_be_bytes([d[0], d[1]])
    }

    /// The request id (retransmissions of one request carry the same id; replies echo it).
    pub fn request_id(&self) -> u32 {
        let d = &self.buffer.as_ref()[field::REQUEST_ID];
        u32::from_be_bytes([d[0], d[1], d[2], d[3]])
    }

    /// Body and TLV area: the bytes after the header up to [`Self::length`].
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..usize::from(self.length())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the magic bytes.
    pub fn set_magic(&mut self, value: [u8; 2]) {
        self.buffer.as_mut()[field::MAGIC].copy_from_slice(&value);
    }

    /// Sets the version.
    pub fn set_version(&mut self, value: u8) {
        self.buffer.as_mut()[field::VERSION] = value;
    }

    /// Sets the message type.
    pub fn set_message_type(&mut self, value: MessageType) {
        self.buffer.as_mut()[field::TYPE] = value.into();
    }

    /// Sets the flags.
    pub fn set_flags(&mut self, value: u8) {
        self.buffer.as_mut()[field::FLAGS] = value;
    }

    /// Sets the sender's hop index.
    pub fn set_hop(&mut self, value: u8) {
        self.buffer.as_mut()[field::HOP] = value;
    }

    /// Sets the total length.
    pub fn set_length(&mut self, value: u16) {
        self.buffer.as_mut()[field::LENGTH].copy_from_slice(&value.to_be_bytes());
    }

    /// Sets the request id.
    pub fn set_request_id(&mut self, value: u32) {
        self.buffer.as_mut()[field::REQUEST_ID].copy_from_slice(&value.to_be_bytes());
    }

    /// Body and TLV area, mutable (up to [`Packet::length`]).
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = usize::from(self.length());
        &mut self.buffer.as_mut()[HEADER_LEN..end]
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for Packet<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}
