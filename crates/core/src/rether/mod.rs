//! The RETHER station engine: the software timed-token protocol on a shared segment (RETHER,
//! Venkatramani and Chiueh: §2.2 modes and the token, §2.3 admission, §2.4 failures and joins).
//! Frames are `rtlan_wire::rether` (`docs/rether.md` §1–§5); this is §6 of that page.
//!
//! A [`Station`] is a node of the one contract with a single port, the segment
//! ([`Medium::Shared`]): the driver polls it only while the medium is free. Its own traffic comes
//! through [`Station::send_nrt`] and [`Station::send_rt`]; sessions through [`Station::open`]
//! and [`Station::close`]; what happened comes out of [`Station::poll_event`].
//!
//! - **CSMA mode**: queued frames go out as the medium allows.
//! - **Switch to RETHER** (§2.2.2) on the first session request: SWITCH to the group with the next
//!   generation; a station acknowledges a SWITCH of a newer generation, or of the same generation
//!   from a smaller initiator than the one it acknowledged, and then sends nothing but waits for
//!   the token; an initiator that hears a smaller one gives way. After `retries` attempts the
//!   stations that never acknowledged go on the dead list and the initiator creates the token.
//! - **The token** (§2.2.3): the RT-set's entries are visited in order each cycle, each sending
//!   up to its bytes per TRT; then the stations are visited round-robin for non-real-time data
//!   from where the last cycle stopped, while the residual time covers the visit (eq. 2); a
//!   station that cannot fit hands the token back to the first RT sender, which starts the next
//!   cycle at ResidualTime = TRT. Three NRT policies (§2.2.3): one frame, as many as fit, at most
//!   k. The soft clock is charged what each visit cost — the larger of its eq. (7) estimate (each
//!   frame's transmission time plus the per-frame overhead `a`, `b` once per visit) and the time
//!   it really held the token — plus the token cost. When the soft clock runs out before TRT has
//!   passed since the cycle began, the first RT sender keeps the token until it has, so that RT
//!   visits stay one TRT apart whatever the estimates.
//! - **Admission** (§2.3) waits for the token, which holds the current RT-set: eq. (3),
//!   Σ THT_RT + THT_new + T_NRT ≤ TRT. A close marks the entry and removes it at the station's
//!   next token visit; the last close sends SWITCH_TO_CSMA (§2.2.4).
//! - **Failures** (§2.4): after passing the token a station waits for its successor to pass it
//!   on (every pass goes to the group, so it hears it: the piggy-backed acknowledgement). The
//!   paper's timer is the residual time on the token; a successor may hold longer than a small
//!   residual (its THT; a whole TRT as the first RT sender at a cycle's start), so the timer here
//!   is the largest of those plus twice the token cost and a configured slack (software latency).
//!   On the first expiry the pass is sent again (it may have collided with a JOIN and been
//!   dropped after 16 attempts); every pass carries a pass number, so a successor that already
//!   took the token answers a repeat by repeating its own pass rather than holding the token
//!   twice. On the second expiry the successor is marked dead, its reservations are released and
//!   the token goes to the next live station; a station that sees itself dead in a token (a lost acknowledgement)
//!   announces itself again. **Token loss** (the paper's future work): no holder keeps the token
//!   longer than a TRT and every pass is heard, so a station in RETHER mode that hears no token
//!   for TRT + slack regenerates it with a SWITCH flagged REGENERATE for the next generation
//!   (one attempt: the segment is silent), the race resolved as above and the RT-set taken from
//!   the last token it heard; the new token follows within 2 TRT of the loss with the default
//!   timers. **Joins**: a station announces itself with JOIN; the next token holder adds it, or
//!   clears its dead flag. **Partitions**: each side runs its own ring (the side without the
//!   token regenerates one); when they meet, the newer generation wins, the others follow it and
//!   join, and a station whose admitted session is missing from the token it holds asks for it
//!   again.
//!
//! Written by hand: no crate implements RETHER.

pub mod agent;
pub mod bridge;
#[cfg(test)]
mod test_frames;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::Duration;

use rtlan_wire::ethernet::Address;
use rtlan_wire::rether::{
    self, emit_frame, parse_frame, DataRepr, Dest, Member, Message, NodeId, Phase, Repr,
    SessionEntry, SwitchRepr, TokenRepr, GROUP, MAX_SESSIONS,
};

use crate::node::{Medium, Node, PortId};
use crate::time::Instant;

/// The largest frame a station sends or queues (Ethernet header + 1500).
pub const MAX_FRAME: usize = 1514;

/// Which non-real-time frames a station sends on a visit (§2.2.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NrtPolicy {
    /// One frame per visit (the paper's prototype).
    One,
    /// As many as the residual time covers.
    AsManyAsFit,
    /// At most this many (≥ 1).
    AtMost(u16),
}

/// A station's parameters.
#[derive(Debug, Clone)]
pub struct Config {
    /// Its id on the segment (lower wins races).
    pub id: NodeId,
    /// Its MAC.
    pub mac: Address,
    /// The segment's rate, bit/s.
    pub rate_bps: u64,
    /// Token rotation time TRT (≤ 1 s).
    pub trt: Duration,
    /// T_NRT of eq. (3): time per cycle kept for non-real-time traffic.
    pub t_nrt: Duration,
    /// Per-frame software overhead `a` of eq. (7).
    pub frame_overhead: Duration,
    /// Per-visit overhead `b` of eq. (7) (the first frame's processing and copy).
    pub visit_overhead: Duration,
    /// What one token pass costs (the paper's Table 2 total, 247 µs on its hardware).
    pub token_cost: Duration,
    /// Non-real-time policy.
    pub nrt_policy: NrtPolicy,
    /// How long an initiator waits for acknowledgements per attempt.
    pub switch_timeout: Duration,
    /// Attempts before the silent stations are declared dead.
    pub switch_attempts: u8,
    /// Added to every acknowledgement timer: the drivers' wake-up and processing latency.
    pub ack_slack: Duration,
    /// Most frames queued for non-real-time sending (beyond: dropped and counted).
    pub nrt_queue_frames: usize,
    /// Most frames queued per real-time session.
    pub rt_queue_frames: usize,
}

impl Config {
    /// Defaults for a station `id` with `mac` on a segment of `rate_bps`: TRT 33.33 ms (30
    /// cycles/s, the paper's video rate), T_NRT 10 % of it, overheads of a modern host
    /// (a = 5 µs, b = 20 µs, token 50 µs), one NRT frame per visit, 4 switch attempts of 20 ms.
    pub fn new(id: NodeId, mac: Address, rate_bps: u64) -> Config {
        Config {
            id,
            mac,
            rate_bps,
            trt: Duration::from_nanos(33_333_333),
            t_nrt: Duration::from_nanos(3_333_333),
            frame_overhead: Duration::from_micros(5),
            visit_overhead: Duration::from_micros(20),
            token_cost: Duration::from_micros(50),
            nrt_policy: NrtPolicy::One,
            switch_timeout: Duration::from_millis(20),
            switch_attempts: 4,
            ack_slack: Duration::from_millis(2),
            nrt_queue_frames: 1024,
            rt_queue_frames: 256,
        }
    }
}

/// The protocol mode (§2.2, Fig. 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Plain CSMA/CD.
    Csma,
    /// A switch to RETHER is under way.
    Switching,
    /// The token circulates.
    Rether,
}

/// Why a session was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Eq. (3) does not hold with it.
    Bandwidth,
    /// The token's RT-set is full ([`MAX_SESSIONS`]).
    TooManySessions,
    /// Its THT exceeds what a u32 of nanoseconds holds, or it asks for nothing.
    Invalid,
}

/// What happened, for the station's user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The mode changed.
    Mode(Mode),
    /// A session was admitted (it sends from the next cycle on).
    Admitted {
        /// The session.
        session: u16,
        /// Its token holding time, eq. (1).
        tht: Duration,
    },
    /// A session was refused.
    Refused {
        /// The session.
        session: u16,
        /// Why.
        reason: Refusal,
    },
    /// A session of this station left the RT-set (closed, or its receiver… released by failure).
    Closed {
        /// The session.
        session: u16,
    },
    /// A station was put on the dead list (by this station).
    Dead {
        /// The station.
        station: NodeId,
    },
    /// DATA arrived for this station.
    Data {
        /// The sending station.
        from: NodeId,
        /// Its header.
        data: DataRepr,
        /// The payload.
        payload: Vec<u8>,
    },
}

/// Counters.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Stats {
    /// Frames received that were not RETHER frames for us or were malformed.
    pub rx_ignored: u64,
    /// Tokens this station held.
    pub tokens_held: u64,
    /// Cycles this station started (as the first RT sender).
    pub cycles_started: u64,
    /// Real-time frames sent.
    pub rt_frames: u64,
    /// Non-real-time frames sent.
    pub nrt_frames: u64,
    /// Frames dropped because a queue was full.
    pub queue_drops: u64,
    /// Stations this station declared dead.
    pub deaths: u64,
    /// Tokens regenerated by this station.
    pub regenerations: u64,
    /// Switches to RETHER this station initiated and completed.
    pub switches: u64,
    /// Times the segment port's carrier went down.
    pub link_downs: u64,
}

/// One of this station's sessions.
#[derive(Debug, Clone)]
struct Local {
    bytes_per_trt: u32,
    max_frame: usize,
    receiver: Option<NodeId>,
    /// In the token's RT-set.
    admitted: bool,
    /// Close requested.
    closing: bool,
    queue: VecDeque<Vec<u8>>,
}

/// The station holding the token: what it may still send on this visit.
#[derive(Debug, Clone)]
struct Holding {
    token: TokenRepr,
    /// The session served (RT visit) or none (NRT visit).
    session: Option<u16>,
    /// Budget left, ns.
    budget_ns: u64,
    /// Frames sent on this visit.
    frames: u16,
    /// What the visit has cost the soft clock so far by eq. (7), ns.
    spent_ns: u64,
    /// When the token arrived: the visit is charged at least the time it really took.
    arrived: Instant,
}

/// Waiting for the successor to pass the token on.
#[derive(Debug, Clone)]
struct AckWait {
    successor: NodeId,
    deadline: Instant,
    token: TokenRepr,
    /// The pass as sent, for one retransmission.
    repr: Repr,
    /// How long to wait for the pass to be heard.
    wait: Duration,
    /// Retransmitted once already.
    retried: bool,
}

#[derive(Debug, Clone)]
enum State {
    Csma,
    /// We initiated a switch (or regeneration) of `generation`.
    Initiating {
        generation: u32,
        attempt: u8,
        deadline: Instant,
        acks: BTreeSet<NodeId>,
        regenerate: bool,
    },
    /// We acknowledged `initiator`'s switch of `generation` and wait for its token.
    Following {
        generation: u32,
        initiator: NodeId,
        deadline: Instant,
    },
    Rether {
        generation: u32,
        holding: Option<Holding>,
        ack: Option<Box<AckWait>>,
        /// When a token was last heard (any holder).
        heard: Instant,
    },
}

/// A RETHER station (module docs).
#[derive(Debug)]
pub struct Station {
    config: Config,
    state: State,
    /// Stations heard, by id: their MAC.
    stations: BTreeMap<NodeId, Address>,
    /// The last token heard (RT-set and dead list, for regeneration).
    last_token: Option<TokenRepr>,
    generation: u32,
    sessions: BTreeMap<u16, Local>,
    nrt: VecDeque<Vec<u8>>,
    /// Control frames to send (SWITCH, ACK, JOIN, …), each with its destination MAC.
    control: VecDeque<(Address, Repr)>,
    /// Stations heard joining since this station last held the token.
    rejoined: BTreeSet<NodeId>,
    /// Stations heard leaving since this station last held the token.
    left: BTreeSet<NodeId>,
    /// The token passed to this station itself (the only live station, or its own next RT
    /// entry), taken back after the token cost.
    to_self: Option<(Instant, TokenRepr)>,
    /// When this station last started a cycle as the first RT sender.
    cycle_started: Option<Instant>,
    /// The (generation, cycle) in which this station last re-announced itself.
    announced: Option<(u32, u32)>,
    /// The carrier of the segment port ([`Node::handle_link`]): while it is down the station
    /// neither regenerates nor initiates (a ring of one would outrank the segment's on return).
    link_up: bool,
    /// The (generation, cycle, pass) of the last token this station took, and the pass it
    /// sent on: a second copy of a taken token (its predecessor did not hear the pass) is
    /// answered by sending that pass again, not by holding the token twice.
    taken: Option<((u32, u32, u16), Option<Repr>)>,
    events: VecDeque<Event>,
    stats: Stats,
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Station {
    /// A station in CSMA mode that announces itself with a JOIN (§2.4).
    pub fn new(config: Config) -> Station {
        let mut station = Station {
            stations: BTreeMap::from([(config.id, config.mac)]),
            config,
            state: State::Csma,
            last_token: None,
            generation: 0,
            sessions: BTreeMap::new(),
            nrt: VecDeque::new(),
            control: VecDeque::new(),
            rejoined: BTreeSet::new(),
            left: BTreeSet::new(),
            to_self: None,
            cycle_started: None,
            announced: None,
            link_up: true,
            taken: None,
            events: VecDeque::new(),
            stats: Stats::default(),
        };
        station.queue_control(GROUP, Dest::All, Message::Join);
        station
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The mode.
    pub fn mode(&self) -> Mode {
        match self.state {
            State::Csma => Mode::Csma,
            State::Initiating { .. } | State::Following { .. } => Mode::Switching,
            State::Rether { .. } => Mode::Rether,
        }
    }

    /// Counters.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// The stations heard, ascending.
    pub fn stations(&self) -> Vec<NodeId> {
        self.stations.keys().copied().collect()
    }

    /// The last token heard.
    pub fn last_token(&self) -> Option<&TokenRepr> {
        self.last_token.as_ref()
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// Eq. (1) with eq. (7): the token holding time of a session sending `bytes_per_trt` in
    /// frames of at most `max_frame` bytes — ⌈bytes / payload⌉ frames, each charged the
    /// transmission time of a largest frame and `a`, plus `b` once and the token cost.
    ///
    /// Every frame is charged as a largest one so that the reservation holds however the
    /// sender cuts its data: a visit may send that many frames of any size up to `max_frame`,
    /// which carry at least `bytes_per_trt` whenever the frames are full. (Charging the last
    /// frame only its remainder, as a fluid reading of eq. 1 would, leaves a stream of
    /// slightly smaller frames one frame short of its rate every visit — 4 of 5 frames of
    /// 1,042 bytes on a 5,000-byte, 1,100-byte-frame reservation, measured in the lab.)
    pub fn tht(&self, bytes_per_trt: u32, max_frame: usize) -> Duration {
        let per_frame = max_frame.clamp(60, MAX_FRAME);
        let payload = per_frame - 14;
        let frames = (bytes_per_trt as usize).div_ceil(payload) as u64;
        let ns = nanos(rtlan_wire::tx_time(per_frame, self.config.rate_bps)).saturating_mul(frames);
        Duration::from_nanos(
            ns.saturating_add(nanos(self.config.frame_overhead).saturating_mul(frames))
                .saturating_add(nanos(self.config.visit_overhead))
                .saturating_add(nanos(self.config.token_cost)),
        )
    }

    /// Asks for a real-time session sending `bytes_per_trt` per TRT in frames of at most
    /// `max_frame` bytes (to `receiver`, when it is a station). The answer ([`Event::Admitted`]
    /// or [`Event::Refused`]) comes when the token reaches this station; in CSMA mode this
    /// starts the switch to RETHER. Re-opening an open session changes nothing.
    pub fn open(
        &mut self,
        now: Instant,
        session: u16,
        bytes_per_trt: u32,
        max_frame: usize,
        receiver: Option<NodeId>,
    ) {
        self.sessions.entry(session).or_insert(Local {
            bytes_per_trt,
            max_frame: max_frame.clamp(60, MAX_FRAME),
            receiver,
            admitted: false,
            closing: false,
            queue: VecDeque::new(),
        });
        if matches!(self.state, State::Csma) {
            self.initiate(now, false);
        }
    }

    /// Closes a session: it leaves the RT-set at this station's next token visit.
    pub fn close(&mut self, session: u16) {
        if let Some(local) = self.sessions.get_mut(&session) {
            if local.admitted {
                local.closing = true;
            } else {
                self.sessions.remove(&session);
                self.events.push_back(Event::Closed { session });
            }
        }
    }

    /// Non-real-time frames waiting.
    pub fn nrt_queued(&self) -> usize {
        self.nrt.len()
    }

    /// Queues a non-real-time frame (a whole Ethernet frame); `false` if dropped (queue full or
    /// too long).
    pub fn send_nrt(&mut self, frame: &[u8]) -> bool {
        if frame.len() > MAX_FRAME || self.nrt.len() >= self.config.nrt_queue_frames {
            self.stats.queue_drops += 1;
            return false;
        }
        self.nrt.push_back(frame.to_vec());
        true
    }

    /// Queues a frame of an admitted session (before admission it goes out as non-real-time);
    /// `false` if dropped.
    pub fn send_rt(&mut self, session: u16, frame: &[u8]) -> bool {
        let limit = self.config.rt_queue_frames;
        match self.sessions.get_mut(&session) {
            Some(local) if local.admitted && !local.closing => {
                if frame.len() > local.max_frame || local.queue.len() >= limit {
                    self.stats.queue_drops += 1;
                    return false;
                }
                local.queue.push_back(frame.to_vec());
                true
            }
            _ => self.send_nrt(frame),
        }
    }

    fn queue_control(&mut self, mac: Address, dest: Dest, message: Message) {
        let repr = Repr {
            generation: self.generation,
            source: self.config.id,
            dest,
            message,
        };
        self.control.push_back((mac, repr));
    }

    fn set_mode(&mut self, state: State) {
        let before = self.mode();
        self.state = state;
        if self.mode() != before {
            self.events.push_back(Event::Mode(self.mode()));
        }
    }

    fn initiate(&mut self, now: Instant, regenerate: bool) {
        if !self.link_up {
            // Cut off: nobody would answer, and a ring of one would outrank the segment's own
            // when the link returns. The sessions wait; `link_changed` starts over.
            self.set_mode(State::Csma);
            return;
        }
        let generation = self.generation.wrapping_add(1);
        self.generation = generation;
        self.set_mode(State::Initiating {
            generation,
            attempt: 0,
            deadline: now + self.config.switch_timeout,
            acks: BTreeSet::new(),
            regenerate,
        });
        self.send_switch(0, regenerate);
    }

    fn send_switch(&mut self, attempt: u8, regenerate: bool) {
        let message = Message::Switch(SwitchRepr {
            trt_ns: nanos(self.config.trt).min(u64::from(u32::MAX)) as u32,
            t_nrt_ns: nanos(self.config.t_nrt).min(u64::from(u32::MAX)) as u32,
            attempt,
            regenerate,
        });
        self.queue_control(GROUP, Dest::All, message);
    }

    /// The stations that must acknowledge a switch: every one heard, alive in the last token.
    fn expected_acks(&self) -> BTreeSet<NodeId> {
        let dead: BTreeSet<NodeId> = self
            .last_token
            .iter()
            .flat_map(|t| t.members.iter().filter(|m| m.dead).map(|m| m.id))
            .collect();
        self.stations
            .keys()
            .copied()
            .filter(|id| *id != self.config.id && !dead.contains(id))
            .collect()
    }

    fn on_switch(&mut self, now: Instant, from: NodeId, generation: u32, from_mac: Address) {
        let newer = generation.wrapping_sub(self.generation) as i32 > 0;
        let accept = match &self.state {
            State::Initiating { generation: g, .. } => {
                (newer && generation != *g) || (generation == *g && from < self.config.id)
            }
            State::Following {
                generation: g,
                initiator,
                ..
            } => newer && generation != *g || (generation == *g && from < *initiator),
            State::Csma | State::Rether { .. } => newer,
        };
        if !accept {
            return;
        }
        self.generation = generation;
        // Everything in flight is ours to hold back: the follower sends nothing but the
        // acknowledgement until the token comes.
        self.set_mode(State::Following {
            generation,
            initiator: from,
            deadline: now
                + self
                    .config
                    .switch_timeout
                    .saturating_mul(2 * u32::from(self.config.switch_attempts.max(1))),
        });
        self.queue_control(
            from_mac,
            Dest::Node(from),
            Message::SwitchAck { initiator: from },
        );
    }
}

/// The next live station after `after` in id order, wrapping (`after` itself if it is the only
/// one); `None` if no station is alive.
fn next_live(members: &[Member], after: Option<NodeId>, inclusive: bool) -> Option<NodeId> {
    let live = || members.iter().filter(|m| !m.dead).map(|m| m.id);
    let start = after.map(|a| live().find(|id| if inclusive { *id >= a } else { *id > a }));
    match start {
        Some(Some(id)) => Some(id),
        _ => live().next(),
    }
}

impl Station {
    fn tx_cost_ns(&self, len: usize) -> u64 {
        nanos(rtlan_wire::tx_time(len, self.config.rate_bps))
            .saturating_add(nanos(self.config.frame_overhead))
    }

    /// The initiator's token: every station heard, those that did not acknowledge dead; on a
    /// regeneration the RT-set of the last token heard, without the dead stations' sessions.
    fn create_token(&mut self, now: Instant, acks: &BTreeSet<NodeId>, regenerate: bool) {
        let members: Vec<Member> = self
            .stations
            .keys()
            .map(|&id| Member {
                id,
                dead: id != self.config.id && !acks.contains(&id),
            })
            .collect();
        let dead: BTreeSet<NodeId> = members.iter().filter(|m| m.dead).map(|m| m.id).collect();
        let sessions = if regenerate {
            self.last_token
                .as_ref()
                .map(|t| {
                    t.sessions
                        .iter()
                        .filter(|s| !dead.contains(&s.sender))
                        .copied()
                        .collect()
                })
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        let trt_ns = nanos(self.config.trt).min(u64::from(u32::MAX)) as u32;
        let token = TokenRepr {
            residual_ns: trt_ns,
            trt_ns,
            t_nrt_ns: nanos(self.config.t_nrt).min(u64::from(trt_ns)) as u32,
            cycle: 0,
            phase: Phase::NonRealTime,
            rt_next: 0,
            nrt_next: None,
            pass: 0,
            members,
            sessions,
        };
        for id in dead {
            self.events.push_back(Event::Dead { station: id });
            self.stats.deaths += 1;
        }
        if regenerate {
            self.stats.regenerations += 1;
        } else {
            self.stats.switches += 1;
        }
        let generation = self.generation;
        self.set_mode(State::Rether {
            generation,
            holding: None,
            ack: None,
            heard: now,
        });
        self.receive_token(now, token);
    }

    /// The token reached this station: admissions, closes and joins, then the visit.
    fn receive_token(&mut self, now: Instant, mut token: TokenRepr) {
        self.stats.tokens_held += 1;
        // Which entry this visit serves, before the edits move the indices.
        let visiting = match token.phase {
            Phase::RealTime => token
                .sessions
                .get(usize::from(token.rt_next))
                .map(|s| (s.sender, s.session)),
            Phase::NonRealTime => None,
        };
        self.edit_token(&mut token);
        if token.sessions.is_empty() && !self.sessions.values().any(|l| !l.admitted) {
            // The last session is gone: destroy the token (§2.2.4).
            self.queue_control(GROUP, Dest::All, Message::SwitchToCsma);
            self.last_token = None;
            self.set_mode(State::Csma);
            return;
        }
        let (session, budget_ns) = match (token.phase, visiting) {
            (Phase::RealTime, Some((sender, session))) => {
                match token
                    .sessions
                    .iter()
                    .position(|s| s.sender == sender && s.session == session)
                {
                    Some(i) => {
                        token.rt_next = i as u16;
                        if i == 0 {
                            let trt = Duration::from_nanos(u64::from(token.trt_ns));
                            if let Some(t0) = self.cycle_started.filter(|t0| now < *t0 + trt) {
                                // The soft clock ran out before TRT did (eq. 7 estimates
                                // above real costs): keep the token until the cycle's time
                                // is up, so that RT visits stay one TRT apart.
                                self.to_self = Some((t0 + trt, token));
                                return;
                            }
                            token.residual_ns = token.trt_ns;
                            token.cycle = token.cycle.wrapping_add(1);
                            self.cycle_started = Some(now);
                            self.stats.cycles_started += 1;
                        }
                        let tht = u64::from(token.sessions[i].tht_ns);
                        let budget = tht
                            .saturating_sub(nanos(self.config.token_cost))
                            .saturating_sub(nanos(self.config.visit_overhead));
                        if sender == self.config.id {
                            (Some(session), budget)
                        } else {
                            (None, 0)
                        }
                    }
                    // Our own entry, closed just now: pass on from where it stood.
                    None => {
                        token.rt_next = token
                            .sessions
                            .iter()
                            .take_while(|s| (s.sender, s.session) < (sender, session))
                            .count() as u16;
                        (None, 0)
                    }
                }
            }
            _ => {
                let reserve =
                    nanos(self.config.token_cost).saturating_add(nanos(self.config.visit_overhead));
                (None, u64::from(token.residual_ns).saturating_sub(reserve))
            }
        };
        let holding = Holding {
            token,
            session,
            budget_ns,
            frames: 0,
            spent_ns: nanos(self.config.visit_overhead),
            arrived: now,
        };
        if let State::Rether {
            holding: h, ack, ..
        } = &mut self.state
        {
            *h = Some(holding);
            *ack = None;
        }
    }

    /// Admissions (eq. 3), closes, joins and leaves, made while this station holds the token.
    fn edit_token(&mut self, token: &mut TokenRepr) {
        // Closes.
        let id = self.config.id;
        let closing: Vec<u16> = self
            .sessions
            .iter()
            .filter(|(_, l)| l.admitted && l.closing)
            .map(|(s, _)| *s)
            .collect();
        for session in closing {
            token
                .sessions
                .retain(|e| !(e.sender == id && e.session == session));
            self.sessions.remove(&session);
            self.events.push_back(Event::Closed { session });
        }
        // Admitted sessions the token no longer carries (released while this station was cut
        // off — a partition, a false death, a regeneration from an older token): ask again.
        for (&session, local) in self.sessions.iter_mut() {
            if local.admitted
                && !token
                    .sessions
                    .iter()
                    .any(|e| e.sender == id && e.session == session)
            {
                local.admitted = false;
            }
        }
        // Joins: every station heard and not alive on the token.
        for &station in self.stations.keys() {
            match token.members.iter_mut().find(|m| m.id == station) {
                Some(m) => m.dead = m.dead && station != id && !self.joined(station),
                None => {
                    if token.members.len() < rether::MAX_MEMBERS {
                        token.members.push(Member {
                            id: station,
                            dead: false,
                        });
                    }
                }
            }
        }
        token.members.sort_by_key(|m| m.id);
        self.rejoined.clear();
        // Leaves: dead, and their sessions released.
        for station in std::mem::take(&mut self.left) {
            if let Some(m) = token.members.iter_mut().find(|m| m.id == station) {
                m.dead = true;
            }
            token.sessions.retain(|e| e.sender != station);
        }
        // Admissions, in session order.
        let pending: Vec<u16> = self
            .sessions
            .iter()
            .filter(|(_, l)| !l.admitted)
            .map(|(s, _)| *s)
            .collect();
        for session in pending {
            let local = &self.sessions[&session];
            let tht = self.tht(local.bytes_per_trt, local.max_frame);
            let used: u64 = token.sessions.iter().map(|e| u64::from(e.tht_ns)).sum();
            let refusal = if local.bytes_per_trt == 0 || nanos(tht) > u64::from(u32::MAX) {
                Some(Refusal::Invalid)
            } else if token.sessions.len() >= MAX_SESSIONS {
                Some(Refusal::TooManySessions)
            } else if used + nanos(tht) + u64::from(token.t_nrt_ns) > u64::from(token.trt_ns) {
                Some(Refusal::Bandwidth)
            } else {
                None
            };
            match refusal {
                Some(reason) => {
                    self.sessions.remove(&session);
                    self.events.push_back(Event::Refused { session, reason });
                }
                None => {
                    let local = self.sessions.get_mut(&session).expect("pending session");
                    local.admitted = true;
                    token.sessions.push(SessionEntry {
                        session,
                        sender: id,
                        receiver: local.receiver,
                        closing: false,
                        tht_ns: nanos(tht) as u32,
                        bytes_per_trt: local.bytes_per_trt,
                    });
                    self.events.push_back(Event::Admitted { session, tht });
                }
            }
        }
    }

    fn joined(&self, station: NodeId) -> bool {
        self.rejoined.contains(&station)
    }
}

impl Station {
    /// The next frame of the visit, if it fits the budget (and the NRT policy); else `None`.
    fn next_visit_frame(&mut self) -> Option<Vec<u8>> {
        let policy = self.config.nrt_policy;
        let State::Rether {
            holding: Some(h), ..
        } = &self.state
        else {
            return None;
        };
        let (session, frames, budget, spent) = (h.session, h.frames, h.budget_ns, h.spent_ns);
        let len = match session {
            Some(s) => self.sessions.get(&s)?.queue.front()?.len(),
            None => {
                let rt_visit = h.token.phase == Phase::RealTime;
                let allowed = match policy {
                    NrtPolicy::One => frames < 1,
                    NrtPolicy::AsManyAsFit => true,
                    NrtPolicy::AtMost(k) => frames < k.max(1),
                };
                if rt_visit || !allowed {
                    return None;
                }
                self.nrt.front()?.len()
            }
        };
        let cost = self.tx_cost_ns(len);
        if spent.saturating_add(cost) > budget.saturating_add(nanos(self.config.visit_overhead)) {
            return None;
        }
        let frame = match session {
            Some(s) => self.sessions.get_mut(&s)?.queue.pop_front()?,
            None => self.nrt.pop_front()?,
        };
        if let State::Rether {
            holding: Some(h), ..
        } = &mut self.state
        {
            h.frames += 1;
            h.spent_ns = h.spent_ns.saturating_add(cost);
        }
        if session.is_some() {
            self.stats.rt_frames += 1;
        } else {
            self.stats.nrt_frames += 1;
        }
        Some(frame)
    }

    /// Ends the visit: charges the soft clock, picks the successor (§2.2.3) and returns the
    /// token message to send; arms the acknowledgement timer.
    fn pass_token(&mut self, now: Instant) -> Option<Repr> {
        let State::Rether {
            holding,
            generation,
            ..
        } = &mut self.state
        else {
            return None;
        };
        let generation = *generation;
        let h = holding.take()?;
        let mut token = h.token;
        let nrt_visit_fits = h.session.is_none()
            && token.phase == Phase::NonRealTime
            && (h.frames > 0 || self.nrt.is_empty());
        // The token frame's own wire time is a cost of the pass as well.
        let token_frame = rtlan_wire::ethernet::HEADER_LEN
            + rether::HEADER_LEN
            + 28
            + 2 * token.members.len()
            + 16 * token.sessions.len();
        // Eq. (7)'s b is the first frame's processing and copy: a visit that sent nothing
        // costs only what it really took and the token (Table 2: 247 µs "when there is
        // nothing to send").
        let estimate = if h.frames > 0 { h.spent_ns } else { 0 };
        let charge = estimate
            .max(nanos(now.saturating_duration_since(h.arrived)))
            .saturating_add(nanos(self.config.token_cost))
            .saturating_add(nanos(rtlan_wire::tx_time(
                token_frame,
                self.config.rate_bps,
            )));
        token.residual_ns = u64::from(token.residual_ns).saturating_sub(charge) as u32;
        let me = self.config.id;
        let first_rt = token.sessions.first().map(|s| s.sender);
        let (dest, phase, rt_next) = match token.phase {
            Phase::RealTime => {
                let next = usize::from(token.rt_next) + 1;
                match token.sessions.get(next) {
                    Some(e) => (Some(e.sender), Phase::RealTime, next as u16),
                    None => (
                        next_live(&token.members, token.nrt_next, true),
                        Phase::NonRealTime,
                        0,
                    ),
                }
            }
            Phase::NonRealTime => {
                let next = next_live(&token.members, Some(me), false);
                // The next NRT visit needs at least the token cost and one overhead; a station
                // that could not send what it had also ends the cycle and is first next time.
                let out_of_time = u64::from(token.residual_ns)
                    < nanos(self.config.token_cost).saturating_mul(2)
                        + nanos(self.config.visit_overhead);
                if !nrt_visit_fits || out_of_time {
                    token.nrt_next = if nrt_visit_fits { next } else { Some(me) };
                    (first_rt, Phase::RealTime, 0)
                } else {
                    (next, Phase::NonRealTime, 0)
                }
            }
        };
        let dest = dest.or(first_rt).unwrap_or(me);
        token.phase = phase;
        token.rt_next = rt_next;
        Some(self.send_token(now, generation, token, dest))
    }

    /// The token message for `dest`; remembers it as the last token, and arms the
    /// acknowledgement timer (or, passed to this station itself, its own re-receipt).
    fn send_token(
        &mut self,
        now: Instant,
        generation: u32,
        mut token: TokenRepr,
        dest: NodeId,
    ) -> Repr {
        let me = self.config.id;
        token.pass = token.pass.wrapping_add(1);
        self.last_token = Some(token.clone());
        let repr = Repr {
            generation,
            source: me,
            dest: Dest::Node(dest),
            message: Message::Token(token.clone()),
        };
        if let Some((_, sent)) = &mut self.taken {
            *sent = Some(repr.clone());
        }
        if dest == me {
            self.to_self = Some((now + self.config.token_cost, token.clone()));
        } else {
            let max_tht = token
                .sessions
                .iter()
                .filter(|s| s.sender == dest)
                .map(|s| u64::from(s.tht_ns))
                .max()
                .unwrap_or(0);
            // The first RT sender may keep the token until its cycle's TRT is up (see
            // `receive_token`): wait a whole TRT for it.
            let cycle_start = if token.phase == Phase::RealTime && token.rt_next == 0 {
                u64::from(token.trt_ns)
            } else {
                0
            };
            let wait = max_tht.max(u64::from(token.residual_ns)).max(cycle_start)
                + 2 * nanos(self.config.token_cost)
                + nanos(self.config.ack_slack);
            let wait = Duration::from_nanos(wait);
            if let State::Rether { ack, .. } = &mut self.state {
                *ack = Some(Box::new(AckWait {
                    successor: dest,
                    deadline: now + wait,
                    token,
                    repr: repr.clone(),
                    wait,
                    retried: false,
                }));
            }
        }
        repr
    }

    /// The successor never passed the token on: it is dead (§2.4). Its sessions are released and
    /// the token goes to the next live station from where it stood.
    fn successor_dead(&mut self, now: Instant, wait: AckWait) {
        let AckWait {
            successor, token, ..
        } = wait;
        let mut token = token;
        if let Some(m) = token.members.iter_mut().find(|m| m.id == successor) {
            m.dead = true;
        }
        self.events.push_back(Event::Dead { station: successor });
        self.stats.deaths += 1;
        // Where the token stood: an RT visit of the dead station's entry → the first later entry
        // of another station; an NRT visit → the next live station.
        let position = usize::from(token.rt_next);
        let before = token.sessions[..position.min(token.sessions.len())]
            .iter()
            .filter(|s| s.sender != successor)
            .count();
        token.sessions.retain(|s| s.sender != successor);
        let me = self.config.id;
        let (phase, rt_next, dest) = if token.phase == Phase::RealTime {
            match token.sessions.get(before) {
                Some(e) => (Phase::RealTime, before as u16, Some(e.sender)),
                None => (
                    Phase::NonRealTime,
                    0,
                    next_live(&token.members, token.nrt_next, true),
                ),
            }
        } else {
            (
                Phase::NonRealTime,
                0,
                next_live(&token.members, Some(successor), false),
            )
        };
        token.phase = phase;
        token.rt_next = rt_next;
        let dest = dest.unwrap_or(me);
        let generation = self.generation;
        let repr = self.send_token(now, generation, token, dest);
        self.control.push_back((GROUP, repr));
    }
}

impl Station {
    fn on_frame(&mut self, now: Instant, frame: &[u8]) {
        let Ok((repr, payload)) = parse_frame(frame) else {
            self.stats.rx_ignored += 1;
            return;
        };
        let from = repr.source;
        if from == self.config.id {
            // Another station with our id, or our own frame looped back: not ours to act on.
            self.stats.rx_ignored += 1;
            return;
        }
        let from_mac = Address::from_bytes(&frame[6..12]).unwrap_or(Address([0; 6]));
        self.stations.insert(from, from_mac);
        let for_me = match repr.dest {
            Dest::All => true,
            Dest::Node(n) => n == self.config.id,
        };
        match repr.message {
            Message::Join => {
                self.rejoined.insert(from);
                self.left.remove(&from);
            }
            Message::Leave => {
                self.left.insert(from);
                self.stations.remove(&from);
            }
            Message::Switch(sw) => {
                let _ = sw;
                self.on_switch(now, from, repr.generation, from_mac);
            }
            Message::SwitchAck { initiator } => {
                let expected = self.expected_acks();
                if let State::Initiating {
                    generation,
                    acks,
                    regenerate,
                    ..
                } = &mut self.state
                {
                    if initiator == self.config.id && repr.generation == *generation {
                        acks.insert(from);
                        if expected.is_subset(acks) {
                            let (acks, regenerate) = (acks.clone(), *regenerate);
                            self.create_token(now, &acks, regenerate);
                        }
                    }
                }
            }
            Message::Token(token) => self.on_token(now, repr.generation, from, repr.dest, token),
            Message::SwitchToCsma => {
                if repr.generation == self.generation && self.mode() != Mode::Csma {
                    self.last_token = None;
                    for local in self.sessions.values_mut() {
                        local.admitted = false;
                    }
                    self.set_mode(State::Csma);
                    // Sessions still wanted start the next switch.
                    if !self.sessions.is_empty() {
                        self.initiate(now, false);
                    }
                }
            }
            Message::Data(data) => {
                if for_me {
                    self.events.push_back(Event::Data {
                        from,
                        data,
                        payload: payload.to_vec(),
                    });
                } else {
                    self.stats.rx_ignored += 1;
                }
            }
        }
    }

    fn on_token(
        &mut self,
        now: Instant,
        generation: u32,
        from: NodeId,
        dest: Dest,
        token: TokenRepr,
    ) {
        let age = generation.wrapping_sub(self.generation) as i32;
        if age < 0 {
            // A token of an older generation: stale (a regenerated one replaced it).
            self.stats.rx_ignored += 1;
            return;
        }
        if age > 0 || !matches!(self.state, State::Rether { .. }) {
            // A newer generation, or we were switching or joined late: follow it.
            self.generation = generation;
            self.set_mode(State::Rether {
                generation,
                holding: None,
                ack: None,
                heard: now,
            });
        }
        let member = token
            .members
            .iter()
            .any(|m| m.id == self.config.id && !m.dead);
        if !member && self.announced != Some((generation, token.cycle)) {
            // Not on the token, or declared dead by mistake (a lost acknowledgement, a JOIN
            // lost to a collision): announce ourselves again, once per cycle until a holder
            // takes us in.
            self.announced = Some((generation, token.cycle));
            let pending = self
                .control
                .iter()
                .any(|(_, r)| matches!(r.message, Message::Join));
            if !pending {
                self.queue_control(GROUP, Dest::All, Message::Join);
            }
        }
        self.last_token = Some(token.clone());
        if let State::Rether { ack, heard, .. } = &mut self.state {
            *heard = now;
            if ack.as_ref().is_some_and(|a| a.successor == from) {
                *ack = None;
            }
        }
        if dest == Dest::Node(self.config.id) {
            let identity = (generation, token.cycle, token.pass);
            if let Some((taken, sent)) = &self.taken {
                if *taken == identity {
                    // Our pass went unheard: send it again.
                    if let Some(repr) = sent.clone() {
                        self.control.push_back((GROUP, repr));
                    }
                    return;
                }
            }
            self.taken = Some((identity, None));
            self.receive_token(now, token);
        }
    }

    fn timers(&mut self, now: Instant) {
        if let Some((at, _)) = &self.to_self {
            if *at <= now {
                let (_, token) = self.to_self.take().expect("checked");
                if let State::Rether { heard, .. } = &mut self.state {
                    *heard = now;
                }
                self.receive_token(now, token);
            }
        }
        match &mut self.state {
            State::Initiating {
                attempt,
                deadline,
                acks,
                regenerate,
                ..
            } if *deadline <= now => {
                // A regeneration is urgent (the segment is silent): one attempt only; a station
                // whose acknowledgement was lost joins again when it sees itself dead.
                let attempts = if *regenerate {
                    1
                } else {
                    self.config.switch_attempts
                };
                if *attempt + 1 < attempts {
                    *attempt += 1;
                    *deadline = now + self.config.switch_timeout;
                    let (attempt, regenerate) = (*attempt, *regenerate);
                    self.send_switch(attempt, regenerate);
                } else {
                    let (acks, regenerate) = (acks.clone(), *regenerate);
                    self.create_token(now, &acks, regenerate);
                }
            }
            State::Following { deadline, .. } if *deadline <= now => {
                // No token came: the segment is in CSMA mode after all (§2.4).
                self.set_mode(State::Csma);
                if self.sessions.values().any(|l| !l.admitted) {
                    self.initiate(now, false);
                }
            }
            State::Rether {
                ack,
                holding,
                heard,
                ..
            } => {
                if ack.as_ref().is_some_and(|a| a.deadline <= now) {
                    let mut wait = ack.take().expect("checked");
                    if wait.retried {
                        self.successor_dead(now, *wait);
                    } else {
                        // The pass may have been lost (a collision with a JOIN, excessive
                        // collisions): send it once more before calling the successor dead.
                        wait.retried = true;
                        wait.deadline = now + wait.wait;
                        self.control.push_back((GROUP, wait.repr.clone()));
                        *ack = Some(wait);
                    }
                } else if holding.is_none()
                    && ack.is_none()
                    && self.to_self.is_none()
                    && now.saturating_duration_since(*heard)
                        >= self.config.trt + self.config.ack_slack
                {
                    // Every pass goes to the group, and no holder keeps the token longer than
                    // a TRT: silence that long means it is lost. Regenerate it.
                    self.initiate(now, true);
                }
            }
            _ => {}
        }
    }

    fn deadline(&self) -> Option<Instant> {
        if !self.control.is_empty() {
            return Some(Instant::ZERO);
        }
        let state = match &self.state {
            State::Csma => (!self.nrt.is_empty()).then_some(Instant::ZERO),
            State::Initiating { deadline, .. } | State::Following { deadline, .. } => {
                Some(*deadline)
            }
            State::Rether {
                holding,
                ack,
                heard,
                ..
            } => {
                if holding.is_some() {
                    Some(Instant::ZERO)
                } else if let Some(a) = ack {
                    Some(a.deadline)
                } else {
                    Some(*heard + self.config.trt + self.config.ack_slack)
                }
            }
        };
        match (state, self.to_self.as_ref().map(|(at, _)| *at)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        if let Some((mac, repr)) = self.control.pop_front() {
            return emit_frame(&repr, self.config.mac, mac, &[], buf).ok();
        }
        match &self.state {
            State::Csma => {
                let frame = self.nrt.pop_front()?;
                self.stats.nrt_frames += 1;
                copy(&frame, buf)
            }
            State::Rether {
                holding: Some(_), ..
            } => {
                if let Some(frame) = self.next_visit_frame() {
                    return copy(&frame, buf);
                }
                let repr = self.pass_token(now)?;
                emit_frame(&repr, self.config.mac, GROUP, &[], buf).ok()
            }
            _ => None,
        }
    }
}

fn copy(frame: &[u8], buf: &mut [u8]) -> Option<usize> {
    buf.get_mut(..frame.len())?.copy_from_slice(frame);
    Some(frame.len())
}

impl Station {
    /// The segment port's carrier changed. Down: the station leaves the ring at once — it
    /// drops the token if it held it (the others regenerate it, §2.4), forgets what it had to
    /// send, and its sessions, no longer in any RT-set it can reach, wait to be asked for
    /// again ([`Event::Closed`] for each admitted one; closing ones are gone). Up: it waits one
    /// TRT (and the slack) for a token — hearing one, it joins that ring (JOIN, §2.4, its
    /// sessions asked for at its first visit); hearing none, the segment is in CSMA mode and
    /// its sessions start a switch. It never starts a ring of its own while cut off: a newer
    /// generation made alone would take over the segment's ring when the link returns, and
    /// every reservation on it would miss a cycle.
    fn link_changed(&mut self, now: Instant, up: bool) {
        if up == self.link_up {
            return;
        }
        self.link_up = up;
        if !up {
            self.stats.link_downs += 1;
            self.control.clear();
            self.to_self = None;
            let sessions: Vec<u16> = self.sessions.keys().copied().collect();
            for session in sessions {
                let Some(local) = self.sessions.get_mut(&session) else {
                    continue;
                };
                if local.closing {
                    self.sessions.remove(&session);
                    self.events.push_back(Event::Closed { session });
                } else if local.admitted {
                    local.admitted = false;
                    local.queue.clear();
                    self.events.push_back(Event::Closed { session });
                }
            }
            self.set_mode(State::Csma);
            return;
        }
        let generation = self.generation;
        self.set_mode(State::Following {
            generation,
            initiator: self.config.id,
            deadline: now + self.config.trt + self.config.ack_slack,
        });
        self.queue_control(GROUP, Dest::All, Message::Join);
    }
}

impl Node for Station {
    fn port_count(&self) -> usize {
        1
    }

    fn handle_link(&mut self, now: Instant, port: PortId, up: bool) {
        if port.0 == 0 {
            self.link_changed(now, up);
        }
    }

    fn medium(&self, port: PortId) -> Medium {
        if port.0 == 0 {
            Medium::Shared {
                rate_bps: self.config.rate_bps,
            }
        } else {
            Medium::Unpaced
        }
    }

    fn handle_frame(&mut self, now: Instant, port: PortId, frame: &[u8]) {
        if port.0 != 0 {
            self.stats.rx_ignored += 1;
            return;
        }
        self.on_frame(now, frame);
    }

    fn poll_transmit(&mut self, now: Instant, port: PortId, buf: &mut [u8]) -> Option<usize> {
        if port.0 != 0 {
            return None;
        }
        self.transmit(now, buf)
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.timers(now);
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.deadline()
    }
}

/// What the host-transparent agent ([`agent::Agent`]) reads of a station.
impl Station {
    /// Frames of `session` waiting for the token, or `None` if this station has no such session.
    pub fn rt_queued(&self, session: u16) -> Option<usize> {
        self.sessions.get(&session).map(|l| l.queue.len())
    }

    /// Whether `session` is in the token's RT-set and not closing.
    pub fn is_admitted(&self, session: u16) -> bool {
        self.sessions
            .get(&session)
            .is_some_and(|l| l.admitted && !l.closing)
    }

    /// The generation of the RETHER mode last seen (what DATA headers carry).
    pub fn generation(&self) -> u32 {
        self.generation
    }

    /// The MAC of station `id`, if it was heard.
    pub fn mac_of(&self, id: NodeId) -> Option<Address> {
        self.stations.get(&id).copied()
    }
}
