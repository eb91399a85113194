//! Owned, validated RETHER messages (`docs/rether.md` §3–§4).

use core::fmt;

use super::{
    Dest, MessageType, NodeId, Packet, FLAGS_DEFINED, FLAG_REGENERATE, HEADER_LEN, MAGIC,
    MAX_MEMBERS, MAX_NODE_ID, MAX_SESSIONS, VERSION,
};
use crate::{Error, Result};

/// Body of a SWITCH: rotation time, NRT reserve, attempt, 3 reserved bytes.
pub(super) const SWITCH_LEN: usize = 12;
/// Body of a SWITCH_ACK: the acknowledged initiator, 2 reserved bytes.
pub(super) const SWITCH_ACK_LEN: usize = 4;
/// The token's fixed part, before its two lists.
pub(super) const TOKEN_FIXED_LEN: usize = 28;
/// One RT-set entry of the token.
pub(super) const SESSION_LEN: usize = 16;
/// DATA's fixed part, before the payload.
pub const DATA_FIXED_LEN: usize = 12;
/// The dead flag of a token's station entry.
const DEAD_BIT: u16 = 0x8000;

/// A SWITCH (Switch-to-RETHER, §2.2.2): the initiator is the message's source; the generation
/// in the header is the RETHER-mode instance it proposes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SwitchRepr {
    /// Token rotation time TRT, ns (1 ..= u32::MAX).
    pub trt_ns: u32,
    /// Time kept for non-real-time traffic per cycle, T_NRT of eq. (3), ns (≤ TRT).
    pub t_nrt_ns: u32,
    /// Which try of this initiator this is (0 = first).
    pub attempt: u8,
    /// The previous generation's token was lost and this switch regenerates it (the RT-set
    /// comes from the last token every station saw).
    pub regenerate: bool,
}

/// Whether the token is on its real-time visits or its non-real-time round (§2.2.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Visiting the RT-set in order, 0.
    RealTime,
    /// Round-robin over the stations while time remains, 1.
    NonRealTime,
}

/// One station in the token's list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Member {
    /// The station.
    pub id: NodeId,
    /// On the dead list (§2.2.2, §2.4): the token skips it until it joins again.
    pub dead: bool,
}

/// One reservation of the token's RT-set (§2.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SessionEntry {
    /// The session's number, unique per sending station.
    pub session: u16,
    /// The sending station: the token visits it in the RT phase once per entry.
    pub sender: NodeId,
    /// The receiving station, `None` when the receiver is not a RETHER station (a host behind
    /// the segment's router, or a session identified by 5-tuple only).
    pub receiver: Option<NodeId>,
    /// The session is being closed: released when the token next reaches its sender.
    pub closing: bool,
    /// Its token holding time THT_RT, eq. (1), ns.
    pub tht_ns: u32,
    /// Data per TRT it reserved, bytes.
    pub bytes_per_trt: u32,
}

/// The token (§2.2.3): the cycle's soft clock, where the round stands, the stations with the
/// dead list, and the RT-set. The station it is passed to is the message's destination.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TokenRepr {
    /// ResidualTime: what is left of the current cycle, ns (≤ `trt_ns`).
    pub residual_ns: u32,
    /// Token rotation time TRT, ns.
    pub trt_ns: u32,
    /// T_NRT of eq. (3), ns (≤ `trt_ns`).
    pub t_nrt_ns: u32,
    /// Cycles begun since the generation started (wraps).
    pub cycle: u32,
    /// Which phase the receiving station is visited in.
    pub phase: Phase,
    /// In the RT phase, the index into `sessions` of the visit the receiver makes
    /// (≤ `sessions.len()`).
    pub rt_next: u16,
    /// Where the NRT round robin resumes: the first station not visited in the previous cycle,
    /// `None` = the lowest id.
    pub nrt_next: Option<NodeId>,
    /// Passes of this token so far (wraps): with the generation and cycle it names one pass, so
    /// that a retransmitted pass is recognised.
    pub pass: u16,
    /// Every station known, ascending by id, with its dead flag (≤ [`MAX_MEMBERS`]).
    pub members: Vec<Member>,
    /// The RT-set in visiting order (≤ [`MAX_SESSIONS`]).
    pub sessions: Vec<SessionEntry>,
}

/// DATA: one fragment of a data unit of an API session (§3.1: "packets belonging to one RT
/// session carry sequence numbers to aid reassembly"). The payload follows the fixed part.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DataRepr {
    /// The session (with the message's source, which station's session).
    pub session: u16,
    /// The data unit's sequence number.
    pub unit: u32,
    /// This fragment's index (< `fragments`).
    pub fragment: u16,
    /// Fragments in the unit (≥ 1).
    pub fragments: u16,
    /// Payload bytes after the fixed part.
    pub payload_len: u16,
}

/// The body of a message.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Message {
    /// Switch-to-RETHER.
    Switch(SwitchRepr),
    /// Acknowledgement of the SWITCH of `initiator`.
    SwitchAck {
        /// The initiator acknowledged.
        initiator: NodeId,
    },
    /// The token.
    Token(TokenRepr),
    /// Switch-to-CSMA.
    SwitchToCsma,
    /// A station announces itself.
    Join,
    /// A station leaves.
    Leave,
    /// Session data (the payload is read from the view).
    Data(DataRepr),
}

/// A whole RETHER message (header + body).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Repr {
    /// The RETHER-mode instance the message belongs to.
    pub generation: u32,
    /// The sending station.
    pub source: NodeId,
    /// The receiving station(s).
    pub dest: Dest,
    /// The body.
    pub message: Message,
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn node(value: u16) -> Result<NodeId> {
    NodeId::new(value).ok_or(Error::Malformed)
}

impl Repr {
    /// Parses a checked view: magic, version, known type, defined flags, an exact body length
    /// (the token's and data's variable parts included), and the body's own rules
    /// (`docs/rether.md` §4).
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr> {
        if packet.magic() != MAGIC {
            return Err(Error::Malformed);
        }
        if packet.version() != VERSION {
            return Err(Error::Unsupported);
        }
        let message_type = packet.message_type();
        let fixed = message_type.body_len().ok_or(Error::Unsupported)?;
        let flags = packet.flags();
        if flags & !FLAGS_DEFINED != 0 || (flags != 0 && message_type != MessageType::Switch) {
            return Err(Error::Malformed);
        }
        let body = packet.body();
        if body.len() < fixed {
            return Err(Error::Truncated);
        }
        let source = node(packet.source())?;
        let dest = Dest::from_wire(packet.dest())?;
        let exact = |len: usize| {
            if body.len() == len {
                Ok(())
            } else {
                Err(Error::Malformed)
            }
        };
        let message = match message_type {
            MessageType::Switch => {
                exact(SWITCH_LEN)?;
                let repr = SwitchRepr {
                    trt_ns: be32(body, 0),
                    t_nrt_ns: be32(body, 4),
                    attempt: body[8],
                    regenerate: flags & FLAG_REGENERATE != 0,
                };
                if repr.trt_ns == 0 || repr.t_nrt_ns > repr.trt_ns {
                    return Err(Error::Malformed);
                }
                Message::Switch(repr)
            }
            MessageType::SwitchAck => {
                exact(SWITCH_ACK_LEN)?;
                Message::SwitchAck {
                    initiator: node(be16(body, 0))?,
                }
            }
            MessageType::Token => Message::Token(parse_token(body)?),
            MessageType::SwitchToCsma => {
                exact(0)?;
                Message::SwitchToCsma
            }
            MessageType::Join => {
                exact(0)?;
                Message::Join
            }
            MessageType::Leave => {
                exact(0)?;
                Message::Leave
            }
            MessageType::Data => {
                let data = DataRepr {
                    session: be16(body, 0),
                    unit: be32(body, 4),
                    fragment: be16(body, 8),
                    fragments: be16(body, 10),
                    payload_len: u16::try_from(body.len() - DATA_FIXED_LEN)
                        .map_err(|_| Error::Malformed)?,
                };
                if data.fragments == 0 || data.fragment >= data.fragments {
                    return Err(Error::Malformed);
                }
                Message::Data(data)
            }
            MessageType::Unknown(_) => return Err(Error::Unsupported),
        };
        Ok(Repr {
            generation: packet.generation(),
            source,
            dest,
            message,
        })
    }

    /// The message type.
    pub fn message_type(&self) -> MessageType {
        match self.message {
            Message::Switch(_) => MessageType::Switch,
            Message::SwitchAck { .. } => MessageType::SwitchAck,
            Message::Token(_) => MessageType::Token,
            Message::SwitchToCsma => MessageType::SwitchToCsma,
            Message::Join => MessageType::Join,
            Message::Leave => MessageType::Leave,
            Message::Data(_) => MessageType::Data,
        }
    }

    /// Bytes the message needs (header + body, the data payload included; no Ethernet padding).
    pub fn buffer_len(&self) -> usize {
        HEADER_LEN
            + match &self.message {
                Message::Switch(_) => SWITCH_LEN,
                Message::SwitchAck { .. } => SWITCH_ACK_LEN,
                Message::Token(t) => {
                    TOKEN_FIXED_LEN + 2 * t.members.len() + SESSION_LEN * t.sessions.len()
                }
                Message::SwitchToCsma | Message::Join | Message::Leave => 0,
                Message::Data(d) => DATA_FIXED_LEN + usize::from(d.payload_len),
            }
    }

    /// Writes the message into `packet` (whose buffer must hold [`Repr::buffer_len`] bytes).
    /// A DATA message's payload is not written: the caller fills `body_mut()[12..]`.
    /// [`Error::Truncated`] for a short buffer; [`Error::Malformed`] for a message `parse`
    /// would refuse (a token with too many entries, stations out of order, times out of range).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) -> Result<()> {
        self.check()?;
        let len = self.buffer_len();
        if packet.buffer.as_ref().len() < len {
            return Err(Error::Truncated);
        }
        let length = u16::try_from(len).map_err(|_| Error::Malformed)?;
        let flags = match &self.message {
            Message::Switch(s) if s.regenerate => FLAG_REGENERATE,
            _ => 0,
        };
        packet.set_header(
            self.message_type(),
            flags,
            length,
            self.generation,
            self.source.get(),
            self.dest.to_wire(),
        );
        let body = packet.body_mut();
        match &self.message {
            Message::Switch(s) => {
                body[0..4].copy_from_slice(&s.trt_ns.to_be_bytes());
                body[4..8].copy_from_slice(&s.t_nrt_ns.to_be_bytes());
                body[8] = s.attempt;
                body[9..12].fill(0);
            }
            Message::SwitchAck { initiator } => {
                body[0..2].copy_from_slice(&initiator.get().to_be_bytes());
                body[2..4].fill(0);
            }
            Message::Token(t) => emit_token(t, body),
            Message::SwitchToCsma | Message::Join | Message::Leave => {}
            Message::Data(d) => {
                body[0..2].copy_from_slice(&d.session.to_be_bytes());
                body[2..4].fill(0);
                body[4..8].copy_from_slice(&d.unit.to_be_bytes());
                body[8..10].copy_from_slice(&d.fragment.to_be_bytes());
                body[10..12].copy_from_slice(&d.fragments.to_be_bytes());
            }
        }
        Ok(())
    }

    /// The rules `parse` enforces on a body, for messages built in memory.
    fn check(&self) -> Result<()> {
        let ok = match &self.message {
            Message::Switch(s) => s.trt_ns != 0 && s.t_nrt_ns <= s.trt_ns,
            Message::Token(t) => check_token(t).is_ok(),
            Message::Data(d) => {
                d.fragments != 0
                    && d.fragment < d.fragments
                    && HEADER_LEN + DATA_FIXED_LEN + usize::from(d.payload_len)
                        <= usize::from(u16::MAX)
            }
            Message::SwitchAck { .. } | Message::SwitchToCsma | Message::Join | Message::Leave => {
                true
            }
        };
        if ok {
            Ok(())
        } else {
            Err(Error::Malformed)
        }
    }
}

fn parse_token(body: &[u8]) -> Result<TokenRepr> {
    let n_members = usize::from(be16(body, 20));
    let n_sessions = usize::from(be16(body, 22));
    if n_members > MAX_MEMBERS || n_sessions > MAX_SESSIONS {
        return Err(Error::Malformed);
    }
    let want = TOKEN_FIXED_LEN + 2 * n_members + SESSION_LEN * n_sessions;
    if body.len() < want {
        return Err(Error::Truncated);
    }
    if body.len() != want {
        return Err(Error::Malformed);
    }
    let phase = match body[16] {
        0 => Phase::RealTime,
        1 => Phase::NonRealTime,
        _ => return Err(Error::Malformed),
    };
    let nrt_next = match be16(body, 18) {
        0 => None,
        id => Some(node(id)?),
    };
    let mut members = Vec::with_capacity(n_members);
    for i in 0..n_members {
        let raw = be16(body, TOKEN_FIXED_LEN + 2 * i);
        members.push(Member {
            id: node(raw & !DEAD_BIT)?,
            dead: raw & DEAD_BIT != 0,
        });
    }
    let start = TOKEN_FIXED_LEN + 2 * n_members;
    let mut sessions = Vec::with_capacity(n_sessions);
    for i in 0..n_sessions {
        let e = &body[start + SESSION_LEN * i..start + SESSION_LEN * (i + 1)];
        let flags = be16(e, 6);
        if flags & !1 != 0 {
            return Err(Error::Malformed);
        }
        sessions.push(SessionEntry {
            session: be16(e, 0),
            sender: node(be16(e, 2))?,
            receiver: match be16(e, 4) {
                0 => None,
                id => Some(node(id)?),
            },
            closing: flags & 1 != 0,
            tht_ns: be32(e, 8),
            bytes_per_trt: be32(e, 12),
        });
    }
    let token = TokenRepr {
        residual_ns: be32(body, 0),
        trt_ns: be32(body, 4),
        t_nrt_ns: be32(body, 8),
        cycle: be32(body, 12),
        phase,
        rt_next: be16(body, 24),
        pass: be16(body, 26),
        nrt_next,
        members,
        sessions,
    };
    check_token(&token)?;
    Ok(token)
}

fn check_token(t: &TokenRepr) -> Result<()> {
    let ascending = t.members.windows(2).all(|w| w[0].id < w[1].id);
    let ok = t.trt_ns != 0
        && t.residual_ns <= t.trt_ns
        && t.t_nrt_ns <= t.trt_ns
        && t.members.len() <= MAX_MEMBERS
        && t.sessions.len() <= MAX_SESSIONS
        && usize::from(t.rt_next) <= t.sessions.len()
        && ascending
        && t.members.iter().all(|m| m.id.get() <= MAX_NODE_ID);
    if ok {
        Ok(())
    } else {
        Err(Error::Malformed)
    }
}

fn emit_token(t: &TokenRepr, body: &mut [u8]) {
    body[0..4].copy_from_slice(&t.residual_ns.to_be_bytes());
    body[4..8].copy_from_slice(&t.trt_ns.to_be_bytes());
    body[8..12].copy_from_slice(&t.t_nrt_ns.to_be_bytes());
    body[12..16].copy_from_slice(&t.cycle.to_be_bytes());
    body[16] = match t.phase {
        Phase::RealTime => 0,
        Phase::NonRealTime => 1,
    };
    body[17] = 0;
    body[18..20].copy_from_slice(&t.nrt_next.map_or(0, NodeId::get).to_be_bytes());
    // Both counts are checked against MAX_MEMBERS / MAX_SESSIONS before emit.
    body[20..22].copy_from_slice(&(t.members.len() as u16).to_be_bytes());
    body[22..24].copy_from_slice(&(t.sessions.len() as u16).to_be_bytes());
    body[24..26].copy_from_slice(&t.rt_next.to_be_bytes());
    body[26..28].copy_from_slice(&t.pass.to_be_bytes());
    for (i, m) in t.members.iter().enumerate() {
        let raw = m.id.get() | if m.dead { DEAD_BIT } else { 0 };
        let at = TOKEN_FIXED_LEN + 2 * i;
        body[at..at + 2].copy_from_slice(&raw.to_be_bytes());
    }
    let start = TOKEN_FIXED_LEN + 2 * t.members.len();
    for (i, s) in t.sessions.iter().enumerate() {
        let e = &mut body[start + SESSION_LEN * i..start + SESSION_LEN * (i + 1)];
        e[0..2].copy_from_slice(&s.session.to_be_bytes());
        e[2..4].copy_from_slice(&s.sender.get().to_be_bytes());
        e[4..6].copy_from_slice(&s.receiver.map_or(0, NodeId::get).to_be_bytes());
        e[6..8].copy_from_slice(&u16::from(s.closing).to_be_bytes());
        e[8..12].copy_from_slice(&s.tht_ns.to_be_bytes());
        e[12..16].copy_from_slice(&s.bytes_per_trt.to_be_bytes());
    }
}

impl fmt::Display for Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dest = match self.dest {
            Dest::Node(n) => format!("{n}"),
            Dest::All => "all".to_string(),
        };
        write!(f, "RETHER g{} {}→{dest} ", self.generation, self.source)?;
        match &self.message {
            Message::Switch(s) => write!(
                f,
                "SWITCH trt={}ns t_nrt={}ns attempt={}{}",
                s.trt_ns,
                s.t_nrt_ns,
                s.attempt,
                if s.regenerate { " regenerate" } else { "" }
            ),
            Message::SwitchAck { initiator } => write!(f, "SWITCH_ACK initiator={initiator}"),
            Message::Token(t) => write!(
                f,
                "TOKEN cycle={} {:?} residual={}ns members={} sessions={}",
                t.cycle,
                t.phase,
                t.residual_ns,
                t.members.len(),
                t.sessions.len()
            ),
            Message::SwitchToCsma => write!(f, "SWITCH_TO_CSMA"),
            Message::Join => write!(f, "JOIN"),
            Message::Leave => write!(f, "LEAVE"),
            Message::Data(d) => write!(
                f,
                "DATA session={} unit={} fragment {}/{} {} bytes",
                d.session, d.unit, d.fragment, d.fragments, d.payload_len
            ),
        }
    }
}
