//! ICMP for IPv4 (RFC 792), the messages a router needs: echo request and reply, destination
//! unreachable and time exceeded (RFC 1812 §4.3: a router that drops a datagram for want of a
//! route, of an ARP answer, or because its TTL ran out says so to the sender — the QSR's
//! default IP forwarding, QSR paper §4.1, is an ordinary IP router's).
//!
//! An error message carries the head of the datagram that caused it: its IP header and at least
//! the first 8 bytes of its payload (RFC 792), as much as fits in a 576-byte reply (RFC 1812
//! §4.3.2.3); [`Repr::error_quote`] cuts it to that length. Types other than these are kept as
//! [`Repr::Unknown`] and round-trip.

use core::fmt;

use crate::checksum;
use crate::{Error, Result};

/// Length of the ICMP header (type, code, checksum and the 4 type-specific bytes).
pub const HEADER_LEN: usize = 8;

/// Largest IPv4 datagram an ICMP error is cut to (RFC 1812 §4.3.2.3).
pub const MAX_ERROR_DATAGRAM: usize = 576;

mod field {
    use core::ops::Range;

    pub(super) const TYPE: usize = 0;
    pub(super) const CODE: usize = 1;
    pub(super) const CHECKSUM: Range<usize> = 2..4;
    pub(super) const REST: Range<usize> = 4..8;
    pub(super) const IDENT: Range<usize> = 4..6;
    pub(super) const SEQ_NO: Range<usize> = 6..8;
    pub(super) const NEXT_HOP_MTU: Range<usize> = 6..8;
}

/// ICMP message types this crate names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Message {
    /// Echo reply, 0.
    EchoReply,
    /// Destination unreachable, 3.
    DstUnreachable,
    /// Echo request, 8.
    EchoRequest,
    /// Time exceeded, 11.
    TimeExceeded,
    /// Any other type, kept as data.
    Unknown(u8),
}

impl From<u8> for Message {
    fn from(value: u8) -> Message {
        match value {
            0 => Message::EchoReply,
            3 => Message::DstUnreachable,
            8 => Message::EchoRequest,
            11 => Message::TimeExceeded,
            other => Message::Unknown(other),
        }
    }
}

impl From<Message> for u8 {
    fn from(value: Message) -> u8 {
        match value {
            Message::EchoReply => 0,
            Message::DstUnreachable => 3,
            Message::EchoRequest => 8,
            Message::TimeExceeded => 11,
            Message::Unknown(other) => other,
        }
    }
}

/// Codes of destination unreachable (RFC 792, RFC 1812 §5.2.7.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Unreachable {
    /// 0: no route to the destination network.
    Net,
    /// 1: the destination host did not answer ARP (or is down).
    Host,
    /// 2: the protocol is not served at the destination.
    Protocol,
    /// 3: no listener on the port.
    Port,
    /// 4: fragmentation needed and DF set (the next-hop MTU is in the header, RFC 1191).
    FragNeeded,
    /// 13: administratively prohibited (RFC 1812).
    Prohibited,
    /// Any other code, kept as data.
    Unknown(u8),
}

impl From<u8> for Unreachable {
    fn from(value: u8) -> Unreachable {
        match value {
            0 => Unreachable::Net,
            1 => Unreachable::Host,
            2 => Unreachable::Protocol,
            3 => Unreachable::Port,
            4 => Unreachable::FragNeeded,
            13 => Unreachable::Prohibited,
            other => Unreachable::Unknown(other),
        }
    }
}

impl From<Unreachable> for u8 {
    fn from(value: Unreachable) -> u8 {
        match value {
            Unreachable::Net => 0,
            Unreachable::Host => 1,
            Unreachable::Protocol => 2,
            Unreachable::Port => 3,
            Unreachable::FragNeeded => 4,
            Unreachable::Prohibited => 13,
            Unreachable::Unknown(other) => other,
        }
    }
}

/// Codes of time exceeded (RFC 792).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimeExceeded {
    /// 0: the TTL ran out in transit.
    Ttl,
    /// 1: reassembly did not complete in time.
    Reassembly,
    /// Any other code, kept as data.
    Unknown(u8),
}

impl From<u8> for TimeExceeded {
    fn from(value: u8) -> TimeExceeded {
        match value {
            0 => TimeExceeded::Ttl,
            1 => TimeExceeded::Reassembly,
            other => TimeExceeded::Unknown(other),
        }
    }
}

impl From<TimeExceeded> for u8 {
    fn from(value: TimeExceeded) -> u8 {
        match value {
            TimeExceeded::Ttl => 0,
            TimeExceeded::Reassembly => 1,
            TimeExceeded::Unknown(other) => other,
        }
    }
}

/// A read/write view of an ICMP message (the whole buffer is the message: the IP layer gives
/// its payload exactly).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking it; accessors may panic on a short buffer.
    pub fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wraps a buffer after [`check_len`](Self::check_len); after this no accessor panics.
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// [`Error::Truncated`] if the buffer is shorter than the header.
    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn u16_at(&self, range: core::ops::Range<usize>) -> u16 {
        let d = &self.buffer.as_ref()[range];
        u16::from_be_bytes([d[0], d[1]])
    }

    /// Message type.
    pub fn msg_type(&self) -> Message {
        Message::from(self.buffer.as_ref()[field::TYPE])
    }

    /// Code.
    pub fn msg_code(&self) -> u8 {
        self.buffer.as_ref()[field::CODE]
    }

    /// Checksum field.
    pub fn checksum(&self) -> u16 {
        self.u16_at(field::CHECKSUM)
    }

    /// The four type-specific bytes after the checksum.
    pub fn rest(&self) -> [u8; 4] {
        let d = &self.buffer.as_ref()[field::REST];
        [d[0], d[1], d[2], d[3]]
    }

    /// Identifier (echo).
    pub fn echo_ident(&self) -> u16 {
        self.u16_at(field::IDENT)
    }

    /// Sequence number (echo).
    pub fn echo_seq_no(&self) -> u16 {
        self.u16_at(field::SEQ_NO)
    }

    /// Next-hop MTU (destination unreachable, fragmentation needed; RFC 1191).
    pub fn next_hop_mtu(&self) -> u16 {
        self.u16_at(field::NEXT_HOP_MTU)
    }

    /// What follows the header: echo data, or the head of the datagram an error is about.
    pub fn data(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..]
    }

    /// Whether the checksum over the whole message is right.
    pub fn verify_checksum(&self) -> bool {
        checksum::data(self.buffer.as_ref()) == 0xffff
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    fn set_u16_at(&mut self, range: core::ops::Range<usize>, value: u16) {
        self.buffer.as_mut()[range].copy_from_slice(&value.to_be_bytes());
    }

    /// Sets the message type.
    pub fn set_msg_type(&mut self, value: Message) {
        self.buffer.as_mut()[field::TYPE] = value.into();
    }

    /// Sets the code.
    pub fn set_msg_code(&mut self, value: u8) {
        self.buffer.as_mut()[field::CODE] = value;
    }

    /// Sets the checksum field.
    pub fn set_checksum(&mut self, value: u16) {
        self.set_u16_at(field::CHECKSUM, value);
    }

    /// Sets the four type-specific bytes.
    pub fn set_rest(&mut self, value: [u8; 4]) {
        self.buffer.as_mut()[field::REST].copy_from_slice(&value);
    }

    /// The data after the header, writable.
    pub fn data_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[HEADER_LEN..]
    }

    /// Computes and writes the checksum over the whole message.
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let sum = checksum::data(self.buffer.as_ref());
        self.set_checksum(!sum);
    }
}

impl<T: AsRef<[u8]>> fmt::Display for Packet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ICMP type={:?} code={} len={}",
            self.msg_type(),
            self.msg_code(),
            self.buffer.as_ref().len()
        )
    }
}

/// An ICMP message in owned form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Repr {
    /// Echo request (ping).
    EchoRequest {
        /// Identifier.
        ident: u16,
        /// Sequence number.
        seq_no: u16,
        /// Echo data.
        data: Vec<u8>,
    },
    /// Echo reply.
    EchoReply {
        /// Identifier (copied from the request).
        ident: u16,
        /// Sequence number (copied from the request).
        seq_no: u16,
        /// Echo data (copied from the request).
        data: Vec<u8>,
    },
    /// Destination unreachable.
    DstUnreachable {
        /// Why.
        code: Unreachable,
        /// Next-hop MTU for [`Unreachable::FragNeeded`], 0 otherwise.
        next_hop_mtu: u16,
        /// The head of the datagram that could not be delivered.
        quote: Vec<u8>,
    },
    /// Time exceeded.
    TimeExceeded {
        /// Why.
        code: TimeExceeded,
        /// The head of the datagram that was dropped.
        quote: Vec<u8>,
    },
    /// Any other type, kept as data.
    Unknown {
        /// The type.
        msg_type: u8,
        /// The code.
        code: u8,
        /// The four type-specific bytes.
        rest: [u8; 4],
        /// What follows the header.
        data: Vec<u8>,
    },
}

impl Repr {
    /// Parses a message; [`Error::Malformed`] if the checksum is wrong.
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr> {
        packet.check_len()?;
        if !packet.verify_checksum() {
            return Err(Error::Malformed);
        }
        let data = packet.data().to_vec();
        Ok(match packet.msg_type() {
            Message::EchoRequest if packet.msg_code() == 0 => Repr::EchoRequest {
                ident: packet.echo_ident(),
                seq_no: packet.echo_seq_no(),
                data,
            },
            Message::EchoReply if packet.msg_code() == 0 => Repr::EchoReply {
                ident: packet.echo_ident(),
                seq_no: packet.echo_seq_no(),
                data,
            },
            Message::DstUnreachable if packet.rest()[..2] == [0, 0] => Repr::DstUnreachable {
                code: Unreachable::from(packet.msg_code()),
                next_hop_mtu: packet.next_hop_mtu(),
                quote: data,
            },
            Message::TimeExceeded if packet.rest() == [0; 4] => Repr::TimeExceeded {
                code: TimeExceeded::from(packet.msg_code()),
                quote: data,
            },
            // Anything else — including a known type with a code or unused bytes this module
            // does not model — is kept as it came, so it round-trips.
            other => Repr::Unknown {
                msg_type: other.into(),
                code: packet.msg_code(),
                rest: packet.rest(),
                data,
            },
        })
    }

    /// Bytes [`Repr::emit`] writes.
    pub fn buffer_len(&self) -> usize {
        HEADER_LEN
            + match self {
                Repr::EchoRequest { data, .. }
                | Repr::EchoReply { data, .. }
                | Repr::Unknown { data, .. } => data.len(),
                Repr::DstUnreachable { quote, .. } | Repr::TimeExceeded { quote, .. } => {
                    quote.len()
                }
            }
    }

    /// Writes the message with its checksum into `buffer`, which must be exactly
    /// [`Repr::buffer_len`] bytes ([`Error::Truncated`] otherwise).
    pub fn emit(&self, buffer: &mut [u8]) -> Result<()> {
        if buffer.len() != self.buffer_len() {
            return Err(Error::Truncated);
        }
        let mut packet = Packet::new_unchecked(buffer);
        let (msg_type, code, rest, data) = match self {
            Repr::EchoRequest {
                ident,
                seq_no,
                data,
            } => (Message::EchoRequest, 0, echo_rest(*ident, *seq_no), data),
            Repr::EchoReply {
                ident,
                seq_no,
                data,
            } => (Message::EchoReply, 0, echo_rest(*ident, *seq_no), data),
            Repr::DstUnreachable {
                code,
                next_hop_mtu,
                quote,
            } => {
                let mtu = next_hop_mtu.to_be_bytes();
                (
                    Message::DstUnreachable,
                    u8::from(*code),
                    [0, 0, mtu[0], mtu[1]],
                    quote,
                )
            }
            Repr::TimeExceeded { code, quote } => {
                (Message::TimeExceeded, u8::from(*code), [0; 4], quote)
            }
            Repr::Unknown {
                msg_type,
                code,
                rest,
                data,
            } => (Message::from(*msg_type), *code, *rest, data),
        };
        packet.set_msg_type(msg_type);
        packet.set_msg_code(code);
        packet.set_rest(rest);
        packet.data_mut().copy_from_slice(data);
        packet.fill_checksum();
        Ok(())
    }

    /// The part of the IPv4 datagram `original` an error about it quotes: its header and as
    /// much of its payload as keeps the reply (a 20-byte IP header, the ICMP header and the
    /// quote) within [`MAX_ERROR_DATAGRAM`] bytes — at least the header and 8 payload bytes
    /// (RFC 792), never more than the datagram.
    pub fn error_quote(original: &[u8]) -> &[u8] {
        let room = MAX_ERROR_DATAGRAM - crate::ipv4::HEADER_LEN - HEADER_LEN;
        let header = original
            .first()
            .map_or(0, |b| usize::from(b & 0x0f) * 4)
            .min(original.len());
        let len = room.max(header + 8).min(original.len());
        &original[..len]
    }
}

fn echo_rest(ident: u16, seq_no: u16) -> [u8; 4] {
    let (i, s) = (ident.to_be_bytes(), seq_no.to_be_bytes());
    [i[0], i[1], s[0], s[1]]
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Time exceeded for a 28-byte UDP datagram 198.18.1.2 → 198.18.3.4 whose TTL ran out,
    /// as Linux's `ping -t 1`/traceroute receive it.
    const TIME_EXCEEDED: [u8; 36] = [
        0x0b, 0x00, // type 11 time exceeded, code 0 TTL
        0xb7, 0x86, // checksum
        0x00, 0x00, 0x00, 0x00, // unused
        // quoted IPv4 header: v4, IHL 5, len 28, id 0, DF, TTL 1, UDP, checksum, addresses
        0x45, 0x00, 0x00, 0x1c, 0x00, 0x00, 0x40, 0x00, 0x01, 0x11, 0x00, 0x00, 198, 18, 1, 2, 198,
        18, 3, 4, // quoted UDP header: ports 5004 → 5004, length 8, checksum 0
        0x13, 0x8c, 0x13, 0x8c, 0x00, 0x08, 0x00, 0x00,
    ];

    #[test]
    fn time_exceeded_parses_and_emits_byte_for_byte() {
        let bytes = TIME_EXCEEDED;
        let packet = Packet::new_checked(&bytes[..]).expect("long enough");
        assert!(packet.verify_checksum());
        let repr = Repr::parse(&packet).expect("valid");
        assert_eq!(
            repr,
            Repr::TimeExceeded {
                code: TimeExceeded::Ttl,
                quote: bytes[8..].to_vec()
            }
        );
        let mut out = vec![0u8; repr.buffer_len()];
        repr.emit(&mut out).expect("exact buffer");
        assert_eq!(out, bytes);
        assert_eq!(out[..2], [0x0b, 0x00]);
    }

    #[test]
    fn echo_and_unreachable_carry_their_fields() {
        let echo = Repr::EchoRequest {
            ident: 0x1234,
            seq_no: 7,
            data: b"rtlan".to_vec(),
        };
        let mut buf = vec![0u8; echo.buffer_len()];
        echo.emit(&mut buf).expect("fits");
        assert_eq!(buf[..8], [8, 0, buf[2], buf[3], 0x12, 0x34, 0, 7]);
        let view = Packet::new_checked(&buf[..]).expect("ok");
        assert_eq!((view.echo_ident(), view.echo_seq_no()), (0x1234, 7));
        let frag = Repr::DstUnreachable {
            code: Unreachable::FragNeeded,
            next_hop_mtu: 1400,
            quote: vec![0x45; 28],
        };
        let mut buf = vec![0u8; frag.buffer_len()];
        frag.emit(&mut buf).expect("fits");
        let view = Packet::new_checked(&buf[..]).expect("ok");
        assert_eq!(view.next_hop_mtu(), 1400);
        assert_eq!(view.msg_code(), 4);
        assert_eq!(Repr::parse(&view), Ok(frag));
    }

    #[test]
    fn bad_input_is_an_error() {
        assert_eq!(Packet::new_checked(&[0u8; 7][..]), Err(Error::Truncated));
        let mut bytes = TIME_EXCEEDED;
        bytes[20] ^= 1;
        let packet = Packet::new_checked(&bytes[..]).expect("long enough");
        assert_eq!(Repr::parse(&packet), Err(Error::Malformed), "bad checksum");
        let repr = Repr::EchoReply {
            ident: 1,
            seq_no: 1,
            data: vec![],
        };
        assert_eq!(repr.emit(&mut [0u8; 9]), Err(Error::Truncated));
    }

    #[test]
    fn the_quote_is_header_plus_what_fits_in_576_bytes() {
        let mut datagram = vec![0u8; 1500];
        datagram[0] = 0x46; // IHL 6: a 24-byte header with options
        assert_eq!(Repr::error_quote(&datagram).len(), 576 - 28);
        assert_eq!(Repr::error_quote(&datagram[..40]).len(), 40);
        assert_eq!(Repr::error_quote(&[]).len(), 0);
        datagram[0] = 0x4f; // IHL 15: 60 bytes of header, still at least 8 more
        assert!(Repr::error_quote(&datagram).len() >= 68);
    }

    fn repr() -> impl Strategy<Value = Repr> {
        let bytes = || proptest::collection::vec(any::<u8>(), 0..64);
        prop_oneof![
            (any::<u16>(), any::<u16>(), bytes()).prop_map(|(ident, seq_no, data)| {
                Repr::EchoRequest {
                    ident,
                    seq_no,
                    data,
                }
            }),
            (any::<u16>(), any::<u16>(), bytes()).prop_map(|(ident, seq_no, data)| {
                Repr::EchoReply {
                    ident,
                    seq_no,
                    data,
                }
            }),
            (any::<u8>(), any::<u16>(), bytes()).prop_map(|(code, next_hop_mtu, quote)| {
                Repr::DstUnreachable {
                    code: Unreachable::from(code),
                    next_hop_mtu,
                    quote,
                }
            }),
            (any::<u8>(), bytes()).prop_map(|(code, quote)| Repr::TimeExceeded {
                code: TimeExceeded::from(code),
                quote
            }),
            // Unknown types only (known ones with these fields parse as their own variants).
            (
                any::<u8>().prop_filter("unknown type", |t| !matches!(t, 0 | 3 | 8 | 11)),
                any::<u8>(),
                any::<[u8; 4]>(),
                bytes()
            )
                .prop_map(|(msg_type, code, rest, data)| Repr::Unknown {
                    msg_type,
                    code,
                    rest,
                    data,
                }),
        ]
    }

    proptest! {
        #[test]
        fn round_trip(repr in repr()) {
            let mut buf = vec![0u8; repr.buffer_len()];
            repr.emit(&mut buf).expect("exact buffer");
            let packet = Packet::new_checked(&buf[..]).expect("valid");
            prop_assert!(packet.verify_checksum());
            prop_assert_eq!(Repr::parse(&packet), Ok(repr));
        }

        /// Any message with a right checksum parses (unknown shapes as `Unknown`) and is
        /// written back byte for byte.
        #[test]
        fn any_message_with_its_checksum_reemits_identically(mut bytes in proptest::collection::vec(any::<u8>(), 8..80)) {
            Packet::new_unchecked(&mut bytes[..]).fill_checksum();
            let packet = Packet::new_checked(&bytes[..]).expect("long enough");
            let repr = Repr::parse(&packet).expect("right checksum");
            let mut out = vec![0u8; repr.buffer_len()];
            repr.emit(&mut out).expect("exact buffer");
            prop_assert_eq!(out, bytes);
        }
    }
}
