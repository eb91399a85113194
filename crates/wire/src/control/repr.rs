//! Owned control messages: [`Repr`] = header fields + [`Message`] body + [`Tlv`] area
//! (EtheReal §2.2 setup, §2.3 failure reasons). Layouts in `docs/protocol.md` §3–§4.

use core::fmt;
use std::net::Ipv4Addr;

use super::recovery::{EpochTlv, TeardownReason, TLV_EPOCH, TLV_REASON};
use super::{
    FailReason, MessageType, Packet, Role, ETHERTYPE, FLAGS_DEFINED, FLAG_AUTHENTICATED,
    HEADER_LEN, MAGIC, TLV_AUTH, TLV_BOUND, TLV_DELAY, TLV_HEADER_LEN, VERSION,
};
use crate::ethernet::{self, Address, EtherType, Frame};
use crate::{Error, Result};

/// Body length of SETUP.
pub(super) const SETUP_LEN: usize = 30;
/// Body length of SETUP_FAIL.
pub(super) const SETUP_FAIL_LEN: usize = 8;
/// Body length of HELLO.
pub(super) const HELLO_LEN: usize = 14;
/// Body length of SETUP_OK, TEARDOWN(_ACK) and REFRESH(_ACK).
pub(super) const CONNECTION_LEN: usize = 4;

/// A SETUP request: reserve a connection towards `dst_ip:dst_port` (EtheReal §2.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SetupRepr {
    /// The sending host's IP address.
    pub src_ip: Ipv4Addr,
    /// The receiving host's IP address.
    pub dst_ip: Ipv4Addr,
    /// The receiver's UDP port.
    pub dst_port: u16,
    /// The sender's UDP port, 0 for any.
    pub src_port: u16,
    /// Reserved rate in bit/s, counting whole Ethernet frames (header included).
    pub rate: u64,
    /// Maximum burst in bytes (whole frames); at least `max_packet`.
    pub max_burst: u32,
    /// Maximum frame size in bytes; not zero.
    pub max_packet: u16,
    /// The connection id the sender of this SETUP chose for the link it is sent on.
    pub connection_id: u16,
    /// How many more switches this request may traverse (loop guard).
    pub hop_limit: u8,
}

/// A HELLO: tells the neighbour on a port what sits at this end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HelloRepr {
    /// Host daemon or switch.
    pub role: Role,
    /// The sender's port number (0 for a host).
    pub port: u16,
    /// The sender's MAC address on this link.
    pub mac: Address,
    /// The sender's management IP address.
    pub management_ip: Ipv4Addr,
}

/// The body of a control message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Message {
    /// Reservation request.
    Setup(SetupRepr),
    /// Reservation admitted.
    SetupOk {
        /// Connection id of the link this reply travels on (from the SETUP it answers).
        connection_id: u16,
        /// Number of switches on the admitted path.
        hops: u8,
    },
    /// Reservation refused.
    SetupFail {
        /// Why.
        reason: FailReason,
        /// Hop index of the refusing switch (1 = first switch).
        failed_hop: u8,
        /// Connection id of the link this reply travels on.
        connection_id: u16,
        /// Management IP address of the refusing switch.
        switch_ip: Ipv4Addr,
    },
    /// Release the reservation using `connection_id` on this link.
    Teardown {
        /// Connection id on the link the message is sent on.
        connection_id: u16,
    },
    /// Release done.
    TeardownAck {
        /// Connection id on the link the message is sent on.
        connection_id: u16,
    },
    /// Neighbour discovery.
    Hello(HelloRepr),
    /// Keep the reservation using `connection_id` on this link alive.
    Refresh {
        /// Connection id on the link the message is sent on.
        connection_id: u16,
    },
    /// Keep-alive answered.
    RefreshAck {
        /// Connection id on the link the message is sent on.
        connection_id: u16,
    },
}

impl Message {
    /// The wire type of this message.
    pub const fn message_type(&self) -> MessageType {
        match self {
            Message::Setup(_) => MessageType::Setup,
            Message::SetupOk { .. } => MessageType::SetupOk,
            Message::SetupFail { .. } => MessageType::SetupFail,
            Message::Teardown { .. } => MessageType::Teardown,
            Message::TeardownAck { .. } => MessageType::TeardownAck,
            Message::Hello(_) => MessageType::Hello,
            Message::Refresh { .. } => MessageType::Refresh,
            Message::RefreshAck { .. } => MessageType::RefreshAck,
        }
    }

    /// Length of the fixed body.
    pub const fn body_len(&self) -> usize {
        match self {
            Message::Setup(_) => SETUP_LEN,
            Message::SetupFail { .. } => SETUP_FAIL_LEN,
            Message::Hello(_) => HELLO_LEN,
            Message::SetupOk { .. }
            | Message::Teardown { .. }
            | Message::TeardownAck { .. }
            | Message::Refresh { .. }
            | Message::RefreshAck { .. } => CONNECTION_LEN,
        }
    }

    /// Decodes the body of a `kind` message from `body`, which is exactly the body's length.
    fn parse(kind: MessageType, b: &[u8]) -> Result<Message> {
        let u16_at = |at: usize| u16::from_be_bytes([b[at], b[at + 1]]);
        let ip_at = |at: usize| Ipv4Addr::new(b[at], b[at + 1], b[at + 2], b[at + 3]);
        let message = match kind {
            MessageType::Setup => {
                let mut rate = [0; 8];
                rate.copy_from_slice(&b[12..20]);
                let setup = SetupRepr {
                    src_ip: ip_at(0),
                    dst_ip: ip_at(4),
                    dst_port: u16_at(8),
                    src_port: u16_at(10),
                    rate: u64::from_be_bytes(rate),
                    max_burst: u32::from_be_bytes([b[20], b[21], b[22], b[23]]),
                    max_packet: u16_at(24),
                    connection_id: u16_at(26),
                    hop_limit: b[28],
                };
                if setup.rate == 0
                    || setup.max_packet == 0
                    || setup.max_burst < u32::from(setup.max_packet)
                {
                    return Err(Error::Malformed);
                }
                Message::Setup(setup)
            }
            MessageType::SetupOk => Message::SetupOk {
                connection_id: u16_at(0),
                hops: b[2],
            },
            MessageType::SetupFail => Message::SetupFail {
                reason: FailReason::from(b[0]),
                failed_hop: b[1],
                connection_id: u16_at(2),
                switch_ip: ip_at(4),
            },
            MessageType::Teardown => Message::Teardown {
                connection_id: u16_at(0),
            },
            MessageType::TeardownAck => Message::TeardownAck {
                connection_id: u16_at(0),
            },
            MessageType::Hello => Message::Hello(HelloRepr {
                role: Role::from(b[0]),
                port: u16_at(2),
                mac: Address([b[4], b[5], b[6], b[7], b[8], b[9]]),
                management_ip: ip_at(10),
            }),
            MessageType::Refresh => Message::Refresh {
                connection_id: u16_at(0),
            },
            MessageType::RefreshAck => Message::RefreshAck {
                connection_id: u16_at(0),
            },
            MessageType::Unknown(_) => return Err(Error::Unsupported),
        };
        Ok(message)
    }

    /// Encodes the body into `b`, which is exactly [`Self::body_len`] bytes (reserved bytes 0).
    fn emit(&self, b: &mut [u8]) {
        b.fill(0);
        match *self {
            Message::Setup(s) => {
                b[0..4].copy_from_slice(&s.src_ip.octets());
                b[4..8].copy_from_slice(&s.dst_ip.octets());
                b[8..10].copy_from_slice(&s.dst_port.to_be_bytes());
                b[10..12].copy_from_slice(&s.src_port.to_be_bytes());
                b[12..20].copy_from_slice(&s.rate.to_be_bytes());
                b[20..24].copy_from_slice(&s.max_burst.to_be_bytes());
                b[24..26].copy_from_slice(&s.max_packet.to_be_bytes());
                b[26..28].copy_from_slice(&s.connection_id.to_be_bytes());
                b[28] = s.hop_limit;
            }
            Message::SetupOk {
                connection_id,
                hops,
            } => {
                b[0..2].copy_from_slice(&connection_id.to_be_bytes());
                b[2] = hops;
            }
            Message::SetupFail {
                reason,
                failed_hop,
                connection_id,
                switch_ip,
            } => {
                b[0] = reason.into();
                b[1] = failed_hop;
                b[2..4].copy_from_slice(&connection_id.to_be_bytes());
                b[4..8].copy_from_slice(&switch_ip.octets());
            }
            Message::Teardown { connection_id }
            | Message::TeardownAck { connection_id }
            | Message::Refresh { connection_id }
            | Message::RefreshAck { connection_id } => {
                b[0..2].copy_from_slice(&connection_id.to_be_bytes());
            }
            Message::Hello(h) => {
                b[0] = h.role.into();
                b[2..4].copy_from_slice(&h.port.to_be_bytes());
                b[4..10].copy_from_slice(&h.mac.0);
                b[10..14].copy_from_slice(&h.management_ip.octets());
            }
        }
    }
}

/// One entry of the trailing TLV area; types this module does not know are kept as data.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Tlv {
    /// The type ([`TLV_AUTH`], or anything else).
    pub kind: u8,
    /// The value, at most 255 bytes.
    pub value: Vec<u8>,
}

impl Tlv {
    /// Bytes this TLV takes on the wire.
    pub fn buffer_len(&self) -> usize {
        TLV_HEADER_LEN + self.value.len()
    }
}

/// A SETUP's delay terms (TLV [`TLV_DELAY`], `docs/protocol.md` §6): what the requester
/// requires end to end, and the per-hop latencies θ the hops before the receiver of this SETUP
/// have added (Le Boudec–Thiran rate-latency servers; `rtlan_calculus::servers`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct DelayTlv {
    /// Largest acceptable end-to-end delay bound, ns; 0 = no requirement.
    pub required_ns: u64,
    /// Sum of the latencies of the hops already crossed (the sender's own budget included), ns.
    pub accumulated_ns: u64,
}

impl DelayTlv {
    /// Length of the value.
    pub const LEN: usize = 16;

    fn parse(value: &[u8]) -> Result<DelayTlv> {
        let value: &[u8; Self::LEN] = value.try_into().map_err(|_| Error::Malformed)?;
        let (required, accumulated) = value.split_at(8);
        Ok(DelayTlv {
            required_ns: u64::from_be_bytes(required.try_into().map_err(|_| Error::Malformed)?),
            accumulated_ns: u64::from_be_bytes(
                accumulated.try_into().map_err(|_| Error::Malformed)?,
            ),
        })
    }

    /// The TLV carrying these terms.
    pub fn to_tlv(self) -> Tlv {
        let mut value = Vec::with_capacity(Self::LEN);
        value.extend_from_slice(&self.required_ns.to_be_bytes());
        value.extend_from_slice(&self.accumulated_ns.to_be_bytes());
        Tlv {
            kind: TLV_DELAY,
            value,
        }
    }
}

/// A SETUP_OK's end-to-end result (TLV [`TLV_BOUND`]): the delay bound the last switch computed
/// for the admitted path, and the number of hops whose latency it sums. Relayed unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct BoundTlv {
    /// End-to-end delay bound, ns: `b/r + Σ θ` over the path.
    pub bound_ns: u64,
    /// Sum of the per-hop latencies θ in it, ns (the rest is the burst term b/r).
    pub latency_ns: u32,
}

impl BoundTlv {
    /// Length of the value.
    pub const LEN: usize = 12;

    fn parse(value: &[u8]) -> Result<BoundTlv> {
        let value: &[u8; Self::LEN] = value.try_into().map_err(|_| Error::Malformed)?;
        let (bound, latency) = value.split_at(8);
        Ok(BoundTlv {
            bound_ns: u64::from_be_bytes(bound.try_into().map_err(|_| Error::Malformed)?),
            latency_ns: u32::from_be_bytes(latency.try_into().map_err(|_| Error::Malformed)?),
        })
    }

    /// The TLV carrying this result.
    pub fn to_tlv(self) -> Tlv {
        let mut value = Vec::with_capacity(Self::LEN);
        value.extend_from_slice(&self.bound_ns.to_be_bytes());
        value.extend_from_slice(&self.latency_ns.to_be_bytes());
        Tlv {
            kind: TLV_BOUND,
            value,
        }
    }
}

/// A control message in owned form.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Repr {
    /// Flags (only bits in [`FLAGS_DEFINED`]).
    pub flags: u8,
    /// Hop index of the node writing the message (0 = host daemon, n = n-th switch).
    pub hop: u8,
    /// Request id, chosen by the requester, echoed by replies, kept by retransmissions.
    pub request_id: u32,
    /// The typed body.
    pub message: Message,
    /// The TLV area, in wire order.
    pub tlvs: Vec<Tlv>,
}

impl Repr {
    /// A message with no flags and no TLVs.
    pub fn new(hop: u8, request_id: u32, message: Message) -> Repr {
        Repr {
            flags: 0,
            hop,
            request_id,
            message,
            tlvs: Vec::new(),
        }
    }

    /// Parses and validates a checked packet.
    ///
    /// [`Error::Malformed`] for a wrong magic, undefined flag bits, a length too short for the
    /// type's body, a TLV running past the length, an inconsistent SETUP (zero rate or packet
    /// size, burst below packet size) or [`FLAG_AUTHENTICATED`] disagreeing with the presence of
    /// a [`TLV_AUTH`]; [`Error::Unsupported`] for another version or an unknown message type.
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr> {
        packet.check_len()?;
        if packet.magic() != MAGIC {
            return Err(Error::Malformed);
        }
        if packet.version() != VERSION {
            return Err(Error::Unsupported);
        }
        let flags = packet.flags();
        if flags & !FLAGS_DEFINED != 0 {
            return Err(Error::Malformed);
        }
        let kind = packet.message_type();
        let body_len = kind.body_len().ok_or(Error::Unsupported)?;
        let payload = packet.payload();
        let (body, mut rest) = payload.split_at_checked(body_len).ok_or(Error::Malformed)?;
        let message = Message::parse(kind, body)?;
        let mut tlvs = Vec::new();
        while let [kind, len, tail @ ..] = rest {
            let (value, next) = tail
                .split_at_checked(usize::from(*len))
                .ok_or(Error::Malformed)?;
            tlvs.push(Tlv {
                kind: *kind,
                value: value.to_vec(),
            });
            rest = next;
        }
        if !rest.is_empty() {
            return Err(Error::Malformed);
        }
        // The typed TLVs: at most one of each, with their exact length.
        for kind in [TLV_DELAY, TLV_BOUND, TLV_EPOCH, TLV_REASON] {
            let mut of_kind = tlvs.iter().filter(|t| t.kind == kind);
            if let Some(tlv) = of_kind.next() {
                if of_kind.next().is_some() {
                    return Err(Error::Malformed);
                }
                match kind {
                    TLV_DELAY => DelayTlv::parse(&tlv.value).map(drop)?,
                    TLV_BOUND => BoundTlv::parse(&tlv.value).map(drop)?,
                    TLV_EPOCH => EpochTlv::parse(&tlv.value).map(drop)?,
                    _ => TeardownReason::parse(&tlv.value).map(drop)?,
                }
            }
        }
        let has_auth = tlvs.iter().any(|t| t.kind == TLV_AUTH);
        if has_auth != (flags & FLAG_AUTHENTICATED != 0) {
            return Err(Error::Malformed);
        }
        Ok(Repr {
            flags,
            hop: packet.hop(),
            request_id: packet.request_id(),
            message,
            tlvs,
        })
    }

    /// The delay terms ([`TLV_DELAY`]), if the message carries them. [`Repr::parse`] checked
    /// their length, so a parsed message never yields an error here; a hand-built one may.
    pub fn delay(&self) -> Result<Option<DelayTlv>> {
        self.tlvs
            .iter()
            .find(|t| t.kind == TLV_DELAY)
            .map(|t| DelayTlv::parse(&t.value))
            .transpose()
    }

    /// The end-to-end result ([`TLV_BOUND`]), if the message carries it.
    pub fn bound(&self) -> Result<Option<BoundTlv>> {
        self.tlvs
            .iter()
            .find(|t| t.kind == TLV_BOUND)
            .map(|t| BoundTlv::parse(&t.value))
            .transpose()
    }

    /// The sender's boot epoch ([`TLV_EPOCH`]), if the message carries one.
    pub fn epoch(&self) -> Result<Option<EpochTlv>> {
        self.tlvs
            .iter()
            .find(|t| t.kind == TLV_EPOCH)
            .map(|t| EpochTlv::parse(&t.value))
            .transpose()
    }

    /// A TEARDOWN's reason ([`TLV_REASON`]), if the message carries one.
    pub fn reason(&self) -> Result<Option<TeardownReason>> {
        self.tlvs
            .iter()
            .find(|t| t.kind == TLV_REASON)
            .map(|t| TeardownReason::parse(&t.value))
            .transpose()
    }

    /// Replaces (or adds) the TLV of `tlv`'s type, keeping the other TLVs in order.
    pub fn set_tlv(&mut self, tlv: Tlv) {
        match self.tlvs.iter_mut().find(|t| t.kind == tlv.kind) {
            Some(slot) => *slot = tlv,
            None => self.tlvs.push(tlv),
        }
    }

    /// Length of the emitted message: header, body and TLVs.
    pub fn buffer_len(&self) -> usize {
        HEADER_LEN + self.message.body_len() + self.tlvs.iter().map(Tlv::buffer_len).sum::<usize>()
    }

    /// Writes the message into the first [`Self::buffer_len`] bytes of `packet`.
    ///
    /// [`Error::Truncated`] if the buffer is shorter; [`Error::Malformed`] if a TLV value exceeds
    /// 255 bytes or the whole message 65535 bytes. Nothing is written on error.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) -> Result<()> {
        let total = self.buffer_len();
        let length = u16::try_from(total).map_err(|_| Error::Malformed)?;
        if self
            .tlvs
            .iter()
            .any(|t| t.value.len() > usize::from(u8::MAX))
        {
            return Err(Error::Malformed);
        }
        if packet.as_ref().len() < total {
            return Err(Error::Truncated);
        }
        packet.set_magic(MAGIC);
        packet.set_version(VERSION);
        packet.set_message_type(self.message.message_type());
        packet.set_flags(self.flags);
        packet.set_hop(self.hop);
        packet.set_length(length);
        packet.set_request_id(self.request_id);
        let payload = packet.payload_mut();
        let (body, mut rest) = payload.split_at_mut(self.message.body_len());
        self.message.emit(body);
        for tlv in &self.tlvs {
            let (head, tail) = rest.split_at_mut(tlv.buffer_len());
            head[0] = tlv.kind;
            // Checked above: every value is at most 255 bytes.
            head[1] = tlv.value.len() as u8;
            head[TLV_HEADER_LEN..].copy_from_slice(&tlv.value);
            rest = tail;
        }
        Ok(())
    }

    /// Writes a whole untagged Ethernet frame (EtherType [`ETHERTYPE`]) carrying this message
    /// from `src` to `dst` into the start of `buf`; returns its length (no padding to 60 bytes).
    pub fn emit_frame(&self, src: Address, dst: Address, buf: &mut [u8]) -> Result<usize> {
        let len = ethernet::HEADER_LEN + self.buffer_len();
        let buf = buf.get_mut(..len).ok_or(Error::Truncated)?;
        let (head, payload) = buf.split_at_mut(ethernet::HEADER_LEN);
        self.emit(&mut Packet::new_unchecked(payload))?;
        let eth = ethernet::Repr {
            src_addr: src,
            dst_addr: dst,
            ethertype: EtherType::from(ETHERTYPE),
        };
        eth.emit(&mut Frame::new_unchecked(head));
        Ok(len)
    }
}

impl fmt::Display for Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "control {:?} hop={} req={:#x} flags={:#04x} {:?}",
            self.message.message_type(),
            self.hop,
            self.request_id,
            self.flags,
            self.message
        )
    }
}
