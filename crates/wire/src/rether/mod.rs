//! RETHER frames: the software timed-token protocol on a shared Ethernet segment (RETHER,
//! Venkatramani and Chiueh: §2.2 modes and the token, §2.3 admission, §2.4 failures and joins,
//! §3.1 sessions with sequence numbers). Specified byte by byte in `docs/rether.md`.
//!
//! Every RETHER message rides directly in an Ethernet II frame with EtherType [`ETHERTYPE`]
//! (0x88B6, IEEE 802 "local experimental EtherType 2"). Mode changes, joins, leaves and the token
//! go to the group address [`GROUP`], so that every station on the segment hears them — which
//! is how a token pass doubles as the acknowledgement to the previous holder (§2.4, "we
//! piggyback the acknowledgement"); acknowledgements of a mode switch and session data are
//! unicast.
//!
//! A message is a 16-byte versioned header ([`Packet`]) and a body per [`MessageType`]; the
//! token's body ends in two lists (the stations, each with its dead flag, and the RT-set). The
//! owned, validated message is [`Repr`]. Semantic checks that need only the bytes (a residual
//! time within the rotation time, stations in ascending order, list lengths within
//! [`MAX_MEMBERS`] and [`MAX_SESSIONS`]) are made by [`Repr::parse`]; the rest belongs to the
//! engine.

mod repr;
#[cfg(test)]
mod tests;

use core::fmt;

pub use repr::{
    DataRepr, Member, Message, Phase, Repr, SessionEntry, SwitchRepr, TokenRepr, DATA_FIXED_LEN,
};

use crate::ethernet::Address;
use crate::{Error, Result};

/// The EtherType of RETHER frames (IEEE 802 "local experimental EtherType 2").
pub const ETHERTYPE: u16 = 0x88b6;

/// The group address every station listens to: locally administered multicast (`0x03`), then
/// ASCII "RETH" — mode changes, joins, leaves and the token go here.
pub const GROUP: Address = Address([0x03, 0x52, 0x45, 0x54, 0x48, 0x00]);

/// The two magic bytes that open every RETHER message, "RE".
pub const MAGIC: [u8; 2] = [0x52, 0x45];

/// The protocol version this module speaks.
pub const VERSION: u8 = 1;

/// Length of the common header.
pub const HEADER_LEN: usize = 16;

/// Flag (SWITCH only): the token of the previous generation was lost and this switch
/// regenerates it; stations keep their reservations.
pub const FLAG_REGENERATE: u8 = 0x01;

/// All flag bits defined in version 1; the others must be zero.
pub const FLAGS_DEFINED: u8 = FLAG_REGENERATE;

/// Most stations a token lists: with [`MAX_SESSIONS`] sessions the token still fits a
/// 1500-byte payload (16 + 28 + 2 × 256 + 16 × 56 = 1452 bytes).
pub const MAX_MEMBERS: usize = 256;

/// Most real-time sessions a token carries (the paper's largest case is 40 MPEG-I streams on
/// 100 Mbit/s, §5.2).
pub const MAX_SESSIONS: usize = 56;

/// The largest station id: ids are 15 bits, because a token's station list uses the top bit of
/// each entry as the dead flag.
pub const MAX_NODE_ID: u16 = 0x7fff;

/// The destination id meaning "every station".
pub const ALL: u16 = 0xffff;

/// A station's id on the segment, 1..=[`MAX_NODE_ID`]. Lower ids win races between initiators
/// (§2.2.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(u16);

impl NodeId {
    /// The id, if it is in 1..=[`MAX_NODE_ID`].
    pub const fn new(id: u16) -> Option<NodeId> {
        if id == 0 || id > MAX_NODE_ID {
            None
        } else {
            Some(NodeId(id))
        }
    }

    /// The number.
    pub const fn get(self) -> u16 {
        self.0
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Whom a message is for: one station or every station.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dest {
    /// One station.
    Node(NodeId),
    /// Every station ([`ALL`]).
    All,
}

impl Dest {
    fn from_wire(value: u16) -> Result<Dest> {
        if value == ALL {
            Ok(Dest::All)
        } else {
            NodeId::new(value).map(Dest::Node).ok_or(Error::Malformed)
        }
    }

    fn to_wire(self) -> u16 {
        match self {
            Dest::Node(n) => n.get(),
            Dest::All => ALL,
        }
    }
}

/// The kind of a RETHER message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MessageType {
    /// Switch-to-RETHER, from an initiator to every station (§2.2.2), 1.
    Switch,
    /// Acknowledgement of a Switch-to-RETHER, to its initiator, 2.
    SwitchAck,
    /// The token (§2.2.3), 3.
    Token,
    /// Switch-to-CSMA, from the station that closed the last session (§2.2.4), 4.
    SwitchToCsma,
    /// A station announces itself (§2.4, "when a node boots up"), 5.
    Join,
    /// A station leaves the segment on purpose, 6.
    Leave,
    /// Real-time data of a session opened through the API (§3.1), 7.
    Data,
    /// Any other value, kept as data.
    Unknown(u8),
}

impl From<u8> for MessageType {
    fn from(value: u8) -> MessageType {
        match value {
            1 => MessageType::Switch,
            2 => MessageType::SwitchAck,
            3 => MessageType::Token,
            4 => MessageType::SwitchToCsma,
            5 => MessageType::Join,
            6 => MessageType::Leave,
            7 => MessageType::Data,
            other => MessageType::Unknown(other),
        }
    }
}

impl From<MessageType> for u8 {
    fn from(value: MessageType) -> u8 {
        match value {
            MessageType::Switch => 1,
            MessageType::SwitchAck => 2,
            MessageType::Token => 3,
            MessageType::SwitchToCsma => 4,
            MessageType::Join => 5,
            MessageType::Leave => 6,
            MessageType::Data => 7,
            MessageType::Unknown(other) => other,
        }
    }
}

impl MessageType {
    /// Length of this type's fixed body (the token's and data's variable parts come after it),
    /// `None` for unknown types.
    pub const fn body_len(self) -> Option<usize> {
        match self {
            MessageType::Switch => Some(repr::SWITCH_LEN),
            MessageType::SwitchAck => Some(repr::SWITCH_ACK_LEN),
            MessageType::Token => Some(repr::TOKEN_FIXED_LEN),
            MessageType::Data => Some(repr::DATA_FIXED_LEN),
            MessageType::SwitchToCsma | MessageType::Join | MessageType::Leave => Some(0),
            MessageType::Unknown(_) => None,
        }
    }
}

/// A zero-copy view of a RETHER message: the header, and the body as bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

mod field {
    use core::ops::Range;

    pub(super) const MAGIC: Range<usize> = 0..2;
    pub(super) const VERSION: usize = 2;
    pub(super) const TYPE: usize = 3;
    pub(super) const FLAGS: usize = 4;
    pub(super) const LENGTH: Range<usize> = 6..8;
    pub(super) const GENERATION: Range<usize> = 8..12;
    pub(super) const SOURCE: Range<usize> = 12..14;
    pub(super) const DEST: Range<usize> = 14..16;
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps `buffer` without checking it; accessors may panic on a short buffer.
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wraps `buffer` if it holds the header and as many bytes as the length field says (and
    /// that length covers at least the header). Bytes after the length (Ethernet padding) are
    /// ignored.
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let packet = Packet::new_unchecked(buffer);
        let len = packet.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let claimed = usize::from(packet.length());
        if claimed < HEADER_LEN {
            return Err(Error::Malformed);
        }
        if claimed > len {
            return Err(Error::Truncated);
        }
        Ok(packet)
    }

    /// The buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn u16_at(&self, range: core::ops::Range<usize>) -> u16 {
        let b = &self.buffer.as_ref()[range];
        u16::from_be_bytes([b[0], b[1]])
    }

    /// The magic bytes (should be [`MAGIC`]).
    pub fn magic(&self) -> [u8; 2] {
        let b = &self.buffer.as_ref()[field::MAGIC];
        [b[0], b[1]]
    }

    /// The version (should be [`VERSION`]).
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VERSION]
    }

    /// The message type.
    pub fn message_type(&self) -> MessageType {
        MessageType::from(self.buffer.as_ref()[field::TYPE])
    }

    /// The flags.
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[field::FLAGS]
    }

    /// The total message length (header + body), bytes.
    pub fn length(&self) -> u16 {
        self.u16_at(field::LENGTH)
    }

    /// The generation: which RETHER-mode instance (token lifetime) the message belongs to.
    pub fn generation(&self) -> u32 {
        let b = &self.buffer.as_ref()[field::GENERATION];
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }

    /// The sender's station id, as sent.
    pub fn source(&self) -> u16 {
        self.u16_at(field::SOURCE)
    }

    /// The destination station id, as sent ([`ALL`] = every station).
    pub fn dest(&self) -> u16 {
        self.u16_at(field::DEST)
    }

    /// The body: from the header to the length field's end (padding excluded).
    pub fn body(&self) -> &[u8] {
        let end = usize::from(self.length()).min(self.buffer.as_ref().len());
        self.buffer
            .as_ref()
            .get(HEADER_LEN..end)
            .unwrap_or_default()
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    fn set_u16_at(&mut self, range: core::ops::Range<usize>, value: u16) {
        self.buffer.as_mut()[range].copy_from_slice(&value.to_be_bytes());
    }

    /// Writes the whole header; the reserved byte is zeroed.
    #[allow(clippy::too_many_arguments)]
    pub fn set_header(
        &mut self,
        message_type: MessageType,
        flags: u8,
        length: u16,
        generation: u32,
        source: u16,
        dest: u16,
    ) {
        let buf = self.buffer.as_mut();
        buf[field::MAGIC].copy_from_slice(&MAGIC);
        buf[field::VERSION] = VERSION;
        buf[field::TYPE] = message_type.into();
        buf[field::FLAGS] = flags;
        buf[5] = 0;
        self.set_u16_at(field::LENGTH, length);
        self.buffer.as_mut()[field::GENERATION].copy_from_slice(&generation.to_be_bytes());
        self.set_u16_at(field::SOURCE, source);
        self.set_u16_at(field::DEST, dest);
    }

    /// The body, writable (up to the length field's end).
    pub fn body_mut(&mut self) -> &mut [u8] {
        let end = usize::from(self.length()).min(self.buffer.as_ref().len());
        let start = HEADER_LEN.min(end);
        &mut self.buffer.as_mut()[start..end]
    }
}

/// Writes `repr` as a whole Ethernet II frame from `src` to `dst` (use [`GROUP`] for messages to
/// every station and for the token) into `buf`; returns the frame's length (no padding). A DATA
/// message's payload is written from `payload`, whose length must equal its `payload_len`.
pub fn emit_frame(
    repr: &Repr,
    src: Address,
    dst: Address,
    payload: &[u8],
    buf: &mut [u8],
) -> Result<usize> {
    use crate::ethernet::{self, EtherType, Frame};
    if let Message::Data(d) = &repr.message {
        if usize::from(d.payload_len) != payload.len() {
            return Err(Error::Malformed);
        }
    } else if !payload.is_empty() {
        return Err(Error::Malformed);
    }
    let len = ethernet::HEADER_LEN + repr.buffer_len();
    let buf = buf.get_mut(..len).ok_or(Error::Truncated)?;
    ethernet::Repr {
        src_addr: src,
        dst_addr: dst,
        ethertype: EtherType::from(ETHERTYPE),
    }
    .emit(&mut Frame::new_unchecked(&mut *buf));
    let mut packet = Packet::new_unchecked(&mut buf[ethernet::HEADER_LEN..]);
    repr.emit(&mut packet)?;
    if !payload.is_empty() {
        packet.body_mut()[repr::DATA_FIXED_LEN..].copy_from_slice(payload);
    }
    Ok(len)
}

/// Parses a whole received frame as a RETHER message: an untagged Ethernet II frame of
/// EtherType [`ETHERTYPE`] (else [`Error::Unsupported`]). Returns the message and, for DATA, its
/// payload (empty otherwise). The destination address is not checked: the caller classified the
/// frame by it. Padding after the message is ignored.
pub fn parse_frame(frame: &[u8]) -> Result<(Repr, &[u8])> {
    let view = crate::ethernet::Frame::new_checked(frame)?;
    if view.vlan_tags() != 0 || u16::from(view.ethertype()) != ETHERTYPE {
        return Err(Error::Unsupported);
    }
    let payload = &frame[view.header_len()..];
    let packet = Packet::new_checked(payload)?;
    let repr = Repr::parse(&packet)?;
    let data = match &repr.message {
        Message::Data(_) => {
            let end = usize::from(packet.length());
            &payload[HEADER_LEN + repr::DATA_FIXED_LEN..end]
        }
        _ => &[][..],
    };
    Ok((repr, data))
}
