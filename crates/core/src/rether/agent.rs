//! The host-transparent RETHER agent: a bump in the wire between an unmodified host and the
//! shared segment (RETHER, Venkatramani and Chiueh, §3: "for conventional TCP/IP applications,
//! the token-bus scheme in RETHER is completely transparent"; §3.1 the procedural interface;
//! `docs/rether.md` §7).
//!
//! The paper put RETHER in the host's kernel driver. Here an [`Agent`] owns the far end of the
//! host's link (port [`HOST`]) and the host's attachment to the segment (port [`SEGMENT`]), and
//! runs a [`Station`] for it: whatever the host sends waits in the station until the medium
//! allows — at once in CSMA mode, only while the agent holds the token in RETHER mode. Nothing
//! on the host changes.
//!
//! - **Host → segment**: a frame of a real-time session's 5-tuple (the RSVP classifier of the
//!   switch-router, exact match with a wild source port allowed, RFC 2205 §A.9) goes on that
//!   session's queue and is sent on its RT visits, at most its bytes per TRT (what exceeds it
//!   waits, and is dropped when the session's queue is full: the reservation polices the
//!   host); every other frame is non-real-time. RETHER frames from the host are dropped: a
//!   host must not forge tokens.
//! - **Segment → host**: RETHER frames go to the station; other frames to the host when they
//!   are for its MAC (learned from what it sends) or for a group, as its NIC would filter them
//!   (until the host has sent anything, everything: its NIC still filters).
//! - **§3.1 API** ([`Agent::open`], [`Agent::admit`], [`Agent::close`], [`Agent::send`],
//!   [`Agent::listen`], [`Agent::recv`]): an application's data units travel as DATA messages,
//!   fragmented into frames with a unit sequence number and fragment numbers; the receiver
//!   reassembles them into a ring of `buffers` units where newer data overwrites the oldest
//!   ("giving priority to newer data"), and an incomplete unit is delivered marked so ("the
//!   user process is informed accordingly"). Lost data is not retransmitted (§3.1). A sender
//!   has `buffers` units in flight at most: [`Agent::send`] refuses more (`BuffersFull`), the
//!   non-blocking form of `retherSend`; the daemon makes the blocking form by waiting.
//!
//! Written by hand: no crate implements RETHER.

#[cfg(test)]
#[path = "agent_tests.rs"]
mod tests;

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use rtlan_wire::ethernet::{self, Address};
use rtlan_wire::ipv4;
use rtlan_wire::rether::{
    emit_frame, DataRepr, Dest, Message, NodeId, Repr, DATA_FIXED_LEN, ETHERTYPE, GROUP, HEADER_LEN,
};

use super::{Config, Event, Mode, Refusal, Station, MAX_FRAME};
use crate::node::{Medium, Node, PortId};
use crate::router::classify::{FlowKey, RsvpClassifier};
use crate::time::Instant;

/// The agent's port on the segment.
pub const SEGMENT: PortId = PortId(0);
/// The agent's port towards its host.
pub const HOST: PortId = PortId(1);
/// Payload bytes of one DATA frame of the largest size.
pub const MAX_FRAGMENT: usize = MAX_FRAME - ethernet::HEADER_LEN - HEADER_LEN - DATA_FIXED_LEN;
/// The largest data unit a session sends or reassembles (a large video frame).
pub const MAX_UNIT: usize = 256 * 1024;
/// Most data units a session buffers, sending or receiving.
pub const MAX_BUFFERS: usize = 64;
/// The token's phase byte of a non-real-time visit (`docs/rether.md` §4).
const NRT_PHASE: u8 = 1;
/// The TOKEN message's type code (`docs/rether.md` §3), read straight from the header.
const TOKEN_TYPE: u8 = 3;
/// Events kept for the agent's user before the oldest are dropped (and counted).
const MAX_EVENTS: usize = 4096;

/// An agent's parameters.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// The station's.
    pub station: Config,
    /// Frames waiting for the host (beyond: dropped, counted).
    pub host_queue_frames: usize,
}

impl AgentConfig {
    /// The station's defaults ([`Config::new`]) and a host queue of 1,024 frames.
    pub fn new(station: Config) -> AgentConfig {
        AgentConfig {
            station,
            host_queue_frames: 1024,
        }
    }
}

/// What a sending session asks for ([`Agent::open`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendSpec {
    /// Layer-2 payload bytes per token rotation (the reservation).
    pub bytes_per_trt: u32,
    /// Its largest frame, bytes (Ethernet header included, ≤ [`MAX_FRAME`]).
    pub max_frame: usize,
    /// The receiving station, for API data; `None` = every station (DATA to the group) or a
    /// host beyond the segment (a 5-tuple session).
    pub receiver: Option<NodeId>,
    /// The host's packets of this 5-tuple travel on the session (an unmodified application);
    /// `None` = API data only.
    pub flow: Option<FlowKey>,
    /// Data units in flight at most (1..=[`MAX_BUFFERS`]).
    pub buffers: usize,
}

/// Why an API call was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApiError {
    /// No such session of this agent.
    #[error("no session {0}")]
    NoSession(u16),
    /// Every session id is taken.
    #[error("no session id is free")]
    NoFreeId,
    /// Another session carries this 5-tuple.
    #[error("session {0} already carries this 5-tuple")]
    FlowTaken(u16),
    /// The request is not valid.
    #[error("{0}")]
    Invalid(&'static str),
    /// The session is not (or no longer) in the token's RT-set.
    #[error("session {0} is not admitted")]
    NotAdmitted(u16),
    /// All the session's buffers are in flight.
    #[error("all {0} buffers of the session are in flight")]
    BuffersFull(usize),
    /// The unit is larger than [`MAX_UNIT`].
    #[error("a unit of {0} bytes exceeds the largest, {MAX_UNIT}")]
    TooLarge(usize),
    /// This agent listens to that session already.
    #[error("already listening to session {session} of station {from}")]
    Listening {
        /// The sending station.
        from: u16,
        /// Its session.
        session: u16,
    },
    /// This agent does not listen to that session.
    #[error("not listening to session {session} of station {from}")]
    NotListening {
        /// The sending station.
        from: u16,
        /// Its session.
        session: u16,
    },
}

/// Where a sending session stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionState {
    /// Opened, admission not asked for.
    Open,
    /// Waiting for the token's admission test.
    Admitting,
    /// In the RT-set.
    Admitted,
    /// Refused; [`Agent::admit`] may ask again.
    Refused,
    /// Closing: it leaves the RT-set at the next token visit.
    Closing,
}

/// A sending session as [`Agent::sessions`] reports it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SessionInfo {
    /// Its id.
    pub session: u16,
    /// Where it stands.
    pub state: SessionState,
    /// Reserved bytes per TRT.
    pub bytes_per_trt: u32,
    /// Largest frame.
    pub max_frame: usize,
    /// Its receiving station, if any.
    pub receiver: Option<u16>,
    /// Its 5-tuple, as `proto src:port > dst:port`, if any.
    pub flow: Option<String>,
    /// Its token holding time once admitted, ns.
    pub tht_ns: Option<u64>,
    /// Frames waiting for the token.
    pub queued_frames: usize,
    /// Units sent through the API.
    pub units_sent: u64,
}

/// One received data unit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unit {
    /// The sending station.
    pub from: NodeId,
    /// Its session.
    pub session: u16,
    /// The unit's sequence number.
    pub unit: u32,
    /// Every fragment arrived.
    pub complete: bool,
    /// The data (what arrived of it, in order, when incomplete).
    pub data: Vec<u8>,
}

/// What happened, for the agent's user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentEvent {
    /// The segment's mode changed.
    Mode(Mode),
    /// A session was admitted.
    Admitted {
        /// The session.
        session: u16,
        /// Its THT (eq. 1).
        tht: Duration,
    },
    /// A session was refused.
    Refused {
        /// The session.
        session: u16,
        /// Why.
        reason: Refusal,
    },
    /// A session left the RT-set (closed, or released) and is gone.
    Closed {
        /// The session.
        session: u16,
    },
    /// This agent declared a station dead.
    Dead {
        /// The station.
        station: NodeId,
    },
    /// A unit of a session listened to is ready for [`Agent::recv`].
    Received {
        /// The sending station.
        from: NodeId,
        /// Its session.
        session: u16,
    },
    /// A sending session's buffers were all in flight and one is free again.
    BufferFree {
        /// The session.
        session: u16,
    },
}

/// The agent's counters (the station's are [`Station::stats`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct AgentStats {
    /// Frames from the host.
    pub host_rx: u64,
    /// Of those, put on a real-time session.
    pub host_rt: u64,
    /// Of those, sent as non-real-time.
    pub host_nrt: u64,
    /// Of those, dropped because the station's queue was full.
    pub host_queue_drops: u64,
    /// RETHER frames the host sent, dropped (a host must not forge protocol messages).
    pub host_rether_dropped: u64,
    /// Frames the host sent that were not Ethernet II frames of a valid length, dropped.
    pub host_malformed: u64,
    /// Frames delivered to the host.
    pub host_tx: u64,
    /// Frames for the host dropped because its queue was full.
    pub host_tx_drops: u64,
    /// Segment frames that were not for the host (another MAC), not delivered.
    pub filtered: u64,
    /// Data units sent through the API.
    pub units_sent: u64,
    /// Complete units received.
    pub units_received: u64,
    /// Incomplete units received (a fragment was lost).
    pub units_incomplete: u64,
    /// Received units overwritten by newer ones before being read.
    pub units_overwritten: u64,
    /// Units abandoned because they grew beyond [`MAX_UNIT`].
    pub units_oversize: u64,
    /// DATA for sessions nobody listens to.
    pub data_unlistened: u64,
    /// Events dropped because the user did not read them.
    pub events_dropped: u64,
    /// Token passes heard or sent on the segment (any holder; a pass sent again counts once).
    pub tokens_heard: u64,
    /// The longest time between two new token passes in RETHER mode since the last
    /// [`Agent::reset_token_gap`], ns: a lost token or a dead station shows here.
    pub token_gap_max_ns: u64,
    /// Non-real-time visits of the token to this station (a TOKEN of the NRT phase addressed
    /// to it) since the last [`Agent::reset_token_gap`]: RETHER §4's metric for the protocol's
    /// cost to non-real-time traffic is the time between them.
    pub nrt_visits: u64,
    /// The sum of the times between consecutive NRT visits counted in `nrt_visits`, ns (their
    /// mean is the NRT access delay of Figs. 5–8).
    pub nrt_visit_gap_sum_ns: u64,
    /// The longest time between consecutive NRT visits, ns.
    pub nrt_visit_gap_max_ns: u64,
}

#[derive(Debug, Clone)]
struct Sending {
    spec: SendSpec,
    state: SessionState,
    tht: Option<Duration>,
    next_unit: u32,
    /// Units in flight: how many frames each still has queued, oldest first.
    in_flight: VecDeque<usize>,
    /// A send was refused for full buffers: say when one frees.
    wants_buffer: bool,
    units_sent: u64,
}

#[derive(Debug, Clone)]
struct Assembly {
    unit: u32,
    fragments: u16,
    next: u16,
    complete: bool,
    data: Vec<u8>,
}

#[derive(Debug, Clone)]
struct Receiving {
    buffers: usize,
    ring: VecDeque<Unit>,
    assembling: Option<Assembly>,
}

/// A RETHER agent (module docs).
#[derive(Debug)]
pub struct Agent {
    config: AgentConfig,
    station: Station,
    host_mac: Option<Address>,
    to_host: VecDeque<Vec<u8>>,
    flows: RsvpClassifier<u16>,
    sending: BTreeMap<u16, Sending>,
    receiving: BTreeMap<(NodeId, u16), Receiving>,
    events: VecDeque<AgentEvent>,
    stats: AgentStats,
    /// When the last token was heard in RETHER mode.
    last_token_heard: Option<Instant>,
    /// The (generation, cycle, pass) of the last pass heard, raw.
    last_pass: Option<TokenPass>,
    /// When this station's last NRT visit began.
    last_nrt_visit: Option<Instant>,
}

type TokenPass = (Option<Vec<u8>>, Option<Vec<u8>>, Option<Vec<u8>>);

impl Agent {
    /// An agent whose station announces itself (§2.4).
    pub fn new(config: AgentConfig) -> Agent {
        Agent {
            station: Station::new(config.station.clone()),
            config,
            host_mac: None,
            to_host: VecDeque::new(),
            flows: RsvpClassifier::new(),
            sending: BTreeMap::new(),
            receiving: BTreeMap::new(),
            events: VecDeque::new(),
            stats: AgentStats::default(),
            last_token_heard: None,
            last_pass: None,
            last_nrt_visit: None,
        }
    }

    /// Starts measuring the longest silence between tokens and the NRT visits afresh.
    pub fn reset_token_gap(&mut self) {
        self.stats.token_gap_max_ns = 0;
        self.stats.nrt_visits = 0;
        self.stats.nrt_visit_gap_sum_ns = 0;
        self.stats.nrt_visit_gap_max_ns = 0;
        self.last_nrt_visit = None;
    }

    /// When a token was last heard in RETHER mode.
    pub fn last_token_heard(&self) -> Option<Instant> {
        self.last_token_heard
    }

    /// The station.
    pub fn station(&self) -> &Station {
        &self.station
    }

    /// The configuration.
    pub fn config(&self) -> &AgentConfig {
        &self.config
    }

    /// The agent's counters.
    pub fn stats(&self) -> &AgentStats {
        &self.stats
    }

    /// The host's MAC, once it has sent a frame.
    pub fn host_mac(&self) -> Option<Address> {
        self.host_mac
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<AgentEvent> {
        self.events.pop_front()
    }

    /// The bytes per TRT that carry `rate_bps` of layer-2 payload: the rate times the TRT,
    /// rounded up.
    pub fn bytes_per_trt(&self, rate_bps: u64) -> u32 {
        let ns = u128::from(u64::try_from(self.config.station.trt.as_nanos()).unwrap_or(u64::MAX));
        let bytes = (u128::from(rate_bps) * ns).div_ceil(8 * 1_000_000_000);
        u32::try_from(bytes).unwrap_or(u32::MAX)
    }

    /// Opens a sending session (`retherOpenRTsession` as a sender) and returns its id; it sends
    /// nothing in real time until [`Agent::admit`] succeeds.
    pub fn open(&mut self, spec: SendSpec) -> Result<u16, ApiError> {
        if spec.bytes_per_trt == 0 {
            return Err(ApiError::Invalid("a session reserves more than 0 bytes"));
        }
        if !(60..=MAX_FRAME).contains(&spec.max_frame) {
            return Err(ApiError::Invalid("max_frame is 60..=1514 bytes"));
        }
        if !(1..=MAX_BUFFERS).contains(&spec.buffers) {
            return Err(ApiError::Invalid("buffers is 1..=64"));
        }
        if let Some(flow) = spec.flow {
            if let Some(&other) = self.flows.get(&flow) {
                return Err(ApiError::FlowTaken(other));
            }
        }
        let session = (1..=u16::MAX)
            .find(|s| !self.sending.contains_key(s))
            .ok_or(ApiError::NoFreeId)?;
        if let Some(flow) = spec.flow {
            self.flows.replace(flow, session);
        }
        self.sending.insert(
            session,
            Sending {
                spec,
                state: SessionState::Open,
                tht: None,
                next_unit: 0,
                in_flight: VecDeque::new(),
                wants_buffer: false,
                units_sent: 0,
            },
        );
        Ok(session)
    }

    /// Asks for admission (`retherAdmit`): the answer is an [`AgentEvent::Admitted`] or
    /// [`AgentEvent::Refused`] when the token arrives; the first session switches the segment
    /// to RETHER mode.
    pub fn admit(&mut self, now: Instant, session: u16) -> Result<(), ApiError> {
        let s = self
            .sending
            .get_mut(&session)
            .ok_or(ApiError::NoSession(session))?;
        match s.state {
            SessionState::Open | SessionState::Refused => {
                s.state = SessionState::Admitting;
                let (bytes, frame, receiver) =
                    (s.spec.bytes_per_trt, s.spec.max_frame, s.spec.receiver);
                self.station.open(now, session, bytes, frame, receiver);
                self.drain();
                Ok(())
            }
            SessionState::Admitting | SessionState::Admitted => Ok(()),
            SessionState::Closing => Err(ApiError::NotAdmitted(session)),
        }
    }

    /// Closes a session (`retherCloseRTsession`): it leaves the RT-set at the next token visit
    /// ([`AgentEvent::Closed`]); its 5-tuple is ordinary traffic again from now on.
    pub fn close(&mut self, session: u16) -> Result<(), ApiError> {
        let s = self
            .sending
            .get_mut(&session)
            .ok_or(ApiError::NoSession(session))?;
        if let Some(flow) = s.spec.flow {
            self.flows.remove(&flow);
        }
        match s.state {
            SessionState::Open | SessionState::Refused => {
                self.sending.remove(&session);
                self.push_event(AgentEvent::Closed { session });
            }
            SessionState::Admitting | SessionState::Admitted => {
                s.state = SessionState::Closing;
                self.station.close(session);
                self.drain();
            }
            SessionState::Closing => {}
        }
        Ok(())
    }

    /// The sending sessions.
    pub fn sessions(&self) -> Vec<SessionInfo> {
        self.sending
            .iter()
            .map(|(&session, s)| SessionInfo {
                session,
                state: s.state,
                bytes_per_trt: s.spec.bytes_per_trt,
                max_frame: s.spec.max_frame,
                receiver: s.spec.receiver.map(NodeId::get),
                flow: s.spec.flow.map(|f| {
                    format!(
                        "{} {}:{} > {}:{}",
                        f.protocol, f.src, f.src_port, f.dst, f.dst_port
                    )
                }),
                tht_ns: s
                    .tht
                    .map(|t| u64::try_from(t.as_nanos()).unwrap_or(u64::MAX)),
                queued_frames: self.station.rt_queued(session).unwrap_or(0),
                units_sent: s.units_sent,
            })
            .collect()
    }

    /// Sends one data unit on an admitted session (`retherSend`, non-blocking): fragments it
    /// into DATA frames to the receiver, sent on the session's RT visits. Returns the unit's
    /// sequence number.
    pub fn send(&mut self, session: u16, data: &[u8]) -> Result<u32, ApiError> {
        self.settle_in_flight();
        let s = self
            .sending
            .get_mut(&session)
            .ok_or(ApiError::NoSession(session))?;
        if s.state != SessionState::Admitted || !self.station.is_admitted(session) {
            return Err(ApiError::NotAdmitted(session));
        }
        if data.len() > MAX_UNIT {
            return Err(ApiError::TooLarge(data.len()));
        }
        if s.in_flight.len() >= s.spec.buffers {
            s.wants_buffer = true;
            return Err(ApiError::BuffersFull(s.spec.buffers));
        }
        let per_fragment = s.spec.max_frame - ethernet::HEADER_LEN - HEADER_LEN - DATA_FIXED_LEN;
        let fragments = data.len().div_ceil(per_fragment).max(1);
        let Ok(count) = u16::try_from(fragments) else {
            return Err(ApiError::TooLarge(data.len()));
        };
        let unit = s.next_unit;
        let (dest, mac) = match s.spec.receiver {
            Some(r) => (Dest::Node(r), self.station.mac_of(r).unwrap_or(GROUP)),
            None => (Dest::All, GROUP),
        };
        let mut buf = vec![0u8; MAX_FRAME];
        let mut queued = 0;
        for (i, chunk) in data
            .chunks(per_fragment)
            .chain(data.is_empty().then_some(&[][..]))
            .enumerate()
        {
            let repr = Repr {
                generation: self.station.generation(),
                source: self.config.station.id,
                dest,
                message: Message::Data(DataRepr {
                    session,
                    unit,
                    fragment: u16::try_from(i).unwrap_or(u16::MAX),
                    fragments: count,
                    payload_len: u16::try_from(chunk.len()).unwrap_or(u16::MAX),
                }),
            };
            let Ok(len) = emit_frame(&repr, self.config.station.mac, mac, chunk, &mut buf) else {
                continue;
            };
            if self.station.send_rt(session, &buf[..len]) {
                queued += 1;
            }
        }
        s.next_unit = unit.wrapping_add(1);
        s.units_sent += 1;
        s.in_flight.push_back(queued);
        self.stats.units_sent += 1;
        Ok(unit)
    }

    /// Listens to `session` of station `from` (`retherOpenRTsession` as a receiver) with a ring
    /// of `buffers` units.
    pub fn listen(&mut self, from: NodeId, session: u16, buffers: usize) -> Result<(), ApiError> {
        if !(1..=MAX_BUFFERS).contains(&buffers) {
            return Err(ApiError::Invalid("buffers is 1..=64"));
        }
        if self.receiving.contains_key(&(from, session)) {
            return Err(ApiError::Listening {
                from: from.get(),
                session,
            });
        }
        self.receiving.insert(
            (from, session),
            Receiving {
                buffers,
                ring: VecDeque::new(),
                assembling: None,
            },
        );
        Ok(())
    }

    /// Stops listening; what was not read is dropped.
    pub fn unlisten(&mut self, from: NodeId, session: u16) -> Result<(), ApiError> {
        self.receiving
            .remove(&(from, session))
            .map(|_| ())
            .ok_or(ApiError::NotListening {
                from: from.get(),
                session,
            })
    }

    /// The oldest unit kept of a session listened to (`retherRecv`, non-blocking); `None` when
    /// none is ready.
    pub fn recv(&mut self, from: NodeId, session: u16) -> Result<Option<Unit>, ApiError> {
        let r = self
            .receiving
            .get_mut(&(from, session))
            .ok_or(ApiError::NotListening {
                from: from.get(),
                session,
            })?;
        Ok(r.ring.pop_front())
    }

    fn push_event(&mut self, event: AgentEvent) {
        if self.events.len() >= MAX_EVENTS {
            self.events.pop_front();
            self.stats.events_dropped += 1;
        }
        self.events.push_back(event);
    }

    /// Frees the send buffers whose frames have all left.
    fn settle_in_flight(&mut self) {
        let mut freed = Vec::new();
        for (&session, s) in &mut self.sending {
            let queued = self.station.rt_queued(session).unwrap_or(0);
            // Queued frames are the newest units' (FIFO): the oldest units have left.
            let mut excess = s.in_flight.iter().sum::<usize>().saturating_sub(queued);
            while excess > 0 {
                let Some(front) = s.in_flight.front_mut() else {
                    break;
                };
                if *front <= excess {
                    excess -= *front;
                    s.in_flight.pop_front();
                } else {
                    *front -= excess;
                    excess = 0;
                }
            }
            // A unit whose frames were all dropped (queue full) holds no buffer either.
            while s.in_flight.front() == Some(&0) {
                s.in_flight.pop_front();
            }
            if s.wants_buffer && s.in_flight.len() < s.spec.buffers {
                s.wants_buffer = false;
                freed.push(session);
            }
        }
        for session in freed {
            self.push_event(AgentEvent::BufferFree { session });
        }
    }

    /// Takes the station's events.
    fn drain(&mut self) {
        while let Some(event) = self.station.poll_event() {
            match event {
                Event::Mode(m) => self.push_event(AgentEvent::Mode(m)),
                Event::Admitted { session, tht } => {
                    if let Some(s) = self.sending.get_mut(&session) {
                        if s.state == SessionState::Admitting {
                            s.state = SessionState::Admitted;
                        }
                        s.tht = Some(tht);
                    }
                    self.push_event(AgentEvent::Admitted { session, tht });
                }
                Event::Refused { session, reason } => {
                    if let Some(s) = self.sending.get_mut(&session) {
                        s.state = SessionState::Refused;
                        s.tht = None;
                    }
                    self.push_event(AgentEvent::Refused { session, reason });
                }
                Event::Closed { session } => {
                    match self.sending.get(&session).map(|s| s.state) {
                        Some(SessionState::Closing) | None => {
                            if let Some(s) = self.sending.remove(&session) {
                                if let Some(flow) = s.spec.flow {
                                    if self.flows.get(&flow) == Some(&session) {
                                        self.flows.remove(&flow);
                                    }
                                }
                            }
                            self.push_event(AgentEvent::Closed { session });
                        }
                        // Released by the others (a false death, a partition) or cut off
                        // (the segment link went down): the station asks again on its own at
                        // its next visit; the session waits for that answer.
                        Some(_) => {
                            if let Some(s) = self.sending.get_mut(&session) {
                                s.state = SessionState::Admitting;
                                s.tht = None;
                            }
                            self.push_event(AgentEvent::Closed { session });
                        }
                    }
                }
                Event::Dead { station } => self.push_event(AgentEvent::Dead { station }),
                Event::Data {
                    from,
                    data,
                    payload,
                } => self.on_data(from, data, &payload),
            }
        }
        self.settle_in_flight();
    }

    fn on_data(&mut self, from: NodeId, d: DataRepr, payload: &[u8]) {
        let Some(r) = self.receiving.get_mut(&(from, d.session)) else {
            self.stats.data_unlistened += 1;
            return;
        };
        let mut done = Vec::new();
        let same = r.assembling.as_ref().is_some_and(|a| a.unit == d.unit);
        if !same {
            // A fragment of a newer unit: what was being assembled is over, incomplete.
            if let Some(a) = r.assembling.take() {
                done.push((a, false));
            }
            r.assembling = Some(Assembly {
                unit: d.unit,
                fragments: d.fragments,
                next: 0,
                complete: true,
                data: Vec::new(),
            });
        }
        let Some(a) = r.assembling.as_mut() else {
            return;
        };
        if d.fragment < a.next || d.fragments != a.fragments {
            // A repeat, or a fragment that contradicts the unit's count: ignored.
            return;
        }
        if d.fragment > a.next {
            a.complete = false;
        }
        a.next = d.fragment.saturating_add(1);
        if a.data.len() + payload.len() > MAX_UNIT {
            self.stats.units_oversize += 1;
            r.assembling = None;
            return;
        }
        a.data.extend_from_slice(payload);
        if a.next >= a.fragments {
            if let Some(a) = r.assembling.take() {
                let complete = a.complete;
                done.push((a, complete));
            }
        }
        for (a, complete) in done {
            if r.ring.len() >= r.buffers {
                r.ring.pop_front();
                self.stats.units_overwritten += 1;
            }
            if complete {
                self.stats.units_received += 1;
            } else {
                self.stats.units_incomplete += 1;
            }
            r.ring.push_back(Unit {
                from,
                session: d.session,
                unit: a.unit,
                complete,
                data: a.data,
            });
        }
        if r.ring.is_empty() {
            return;
        }
        self.push_event(AgentEvent::Received {
            from,
            session: d.session,
        });
    }

    /// A RETHER frame heard or sent: a new pass of the token in RETHER mode ends a silence. A
    /// pass sent again (the same generation, cycle and pass number, §6 of docs/rether.md) is
    /// no progress: the ring is stalled until a new pass is heard.
    fn note_token(&mut self, now: Instant, frame: &[u8]) {
        let token = frame.get(ethernet::HEADER_LEN + 3) == Some(&TOKEN_TYPE);
        if self.station.mode() != Mode::Rether {
            self.last_token_heard = None;
            return;
        }
        if !token {
            return;
        }
        let at = |o: usize, n: usize| frame.get(o..o + n).map(<[u8]>::to_vec);
        let body = ethernet::HEADER_LEN + HEADER_LEN;
        let pass = (
            at(ethernet::HEADER_LEN + 8, 4),
            at(body + 12, 4),
            at(body + 26, 2),
        );
        if self.last_pass.as_ref() == Some(&pass) {
            return;
        }
        self.last_pass = Some(pass);
        self.stats.tokens_heard += 1;
        let to_me = frame.get(ethernet::HEADER_LEN + 14..ethernet::HEADER_LEN + 16)
            == Some(&self.config.station.id.get().to_be_bytes()[..]);
        if to_me && frame.get(body + 16) == Some(&NRT_PHASE) {
            if let Some(last) = self.last_nrt_visit {
                let gap = now.saturating_duration_since(last);
                let gap = u64::try_from(gap.as_nanos()).unwrap_or(u64::MAX);
                self.stats.nrt_visits += 1;
                self.stats.nrt_visit_gap_sum_ns =
                    self.stats.nrt_visit_gap_sum_ns.saturating_add(gap);
                self.stats.nrt_visit_gap_max_ns = self.stats.nrt_visit_gap_max_ns.max(gap);
            }
            self.last_nrt_visit = Some(now);
        }
        if let Some(last) = self.last_token_heard {
            let gap = now.saturating_duration_since(last);
            let gap = u64::try_from(gap.as_nanos()).unwrap_or(u64::MAX);
            self.stats.token_gap_max_ns = self.stats.token_gap_max_ns.max(gap);
        }
        self.last_token_heard = Some(now);
    }

    fn on_host_frame(&mut self, frame: &[u8]) {
        self.stats.host_rx += 1;
        let Ok(view) = ethernet::Frame::new_checked(frame) else {
            self.stats.host_malformed += 1;
            return;
        };
        if frame.len() > MAX_FRAME {
            self.stats.host_malformed += 1;
            return;
        }
        let src = view.src_addr();
        if src.is_unicast() {
            self.host_mac = Some(src);
        }
        if u16::from(view.inner_ethertype()) == ETHERTYPE {
            self.stats.host_rether_dropped += 1;
            return;
        }
        let session = flow_key(&view).and_then(|key| {
            self.flows
                .get(&key)
                .or_else(|| self.flows.get(&key.any_src_port()))
                .copied()
        });
        let sent = match session {
            Some(s) if self.station.is_admitted(s) => {
                self.stats.host_rt += 1;
                self.station.send_rt(s, frame)
            }
            _ => {
                self.stats.host_nrt += 1;
                self.station.send_nrt(frame)
            }
        };
        if !sent {
            self.stats.host_queue_drops += 1;
        }
    }

    fn on_segment_frame(&mut self, now: Instant, frame: &[u8]) {
        let Ok(view) = ethernet::Frame::new_checked(frame) else {
            self.stats.filtered += 1;
            return;
        };
        if u16::from(view.ethertype()) == ETHERTYPE {
            self.note_token(now, frame);
            self.station.handle_frame(now, PortId(0), frame);
            self.drain();
            return;
        }
        let dst = view.dst_addr();
        let for_host = dst.is_multicast() || self.host_mac.is_none_or(|m| m == dst);
        if !for_host {
            self.stats.filtered += 1;
            return;
        }
        if self.to_host.len() >= self.config.host_queue_frames {
            self.stats.host_tx_drops += 1;
            return;
        }
        self.to_host.push_back(frame.to_vec());
    }
}

/// The 5-tuple of an untagged IPv4 frame (zero ports when it has none or is a fragment), as
/// the switch-router's classifier keys it.
pub(crate) fn flow_key<T: AsRef<[u8]>>(view: &ethernet::Frame<T>) -> Option<FlowKey> {
    if view.vlan_tags() != 0 || view.ethertype() != ethernet::EtherType::Ipv4 {
        return None;
    }
    let ip = ipv4::Packet::new_checked(view.payload()).ok()?;
    let protocol = u8::from(ip.protocol());
    let first = ip.frag_offset() == 0 && !ip.more_frags();
    let l4 = view.payload().get(ip.header_len()..)?;
    let ports = match (protocol, first) {
        (6 | 17, true) if l4.len() >= 4 => (
            u16::from_be_bytes([l4[0], l4[1]]),
            u16::from_be_bytes([l4[2], l4[3]]),
        ),
        _ => (0, 0),
    };
    Some(FlowKey {
        src: ip.src_addr(),
        dst: ip.dst_addr(),
        protocol,
        src_port: ports.0,
        dst_port: ports.1,
    })
}

impl Node for Agent {
    fn port_count(&self) -> usize {
        2
    }

    fn medium(&self, port: PortId) -> Medium {
        if port == SEGMENT {
            self.station.medium(PortId(0))
        } else {
            Medium::Unpaced
        }
    }

    fn handle_frame(&mut self, now: Instant, port: PortId, frame: &[u8]) {
        match port {
            SEGMENT => self.on_segment_frame(now, frame),
            HOST => {
                self.on_host_frame(frame);
                self.drain();
            }
            _ => {}
        }
    }

    fn poll_transmit(&mut self, now: Instant, port: PortId, buf: &mut [u8]) -> Option<usize> {
        match port {
            SEGMENT => {
                let sent = self.station.poll_transmit(now, PortId(0), buf);
                if let Some(len) = sent {
                    let frame = &buf[..len];
                    if frame.get(12..14) == Some(&ETHERTYPE.to_be_bytes()[..]) {
                        self.note_token(now, frame);
                    }
                }
                self.drain();
                sent
            }
            HOST => {
                let frame = self.to_host.pop_front()?;
                let out = buf.get_mut(..frame.len())?;
                out.copy_from_slice(&frame);
                self.stats.host_tx += 1;
                Some(frame.len())
            }
            _ => None,
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.station.handle_timeout(now);
        self.drain();
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let station = self.station.poll_timeout();
        if self.to_host.is_empty() {
            station
        } else {
            Some(Instant::ZERO)
        }
    }

    fn handle_link(&mut self, now: Instant, port: PortId, up: bool) {
        if port == SEGMENT {
            self.station.handle_link(now, PortId(0), up);
        }
    }
}
