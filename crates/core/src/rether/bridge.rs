//! An rtlan node joining RETHER segments (RETHER, Venkatramani and Chiueh, §2.5 "Extension to
//! Multi-Segment Ethernet"; `docs/rether.md` §9): "a real-time connection among nodes on
//! different segments is decomposed into multiple real-time sub-connections, each of which
//! corresponds to one of the segments", and "the intermediate routers observe the real-time
//! schedules associated with each of the segments to which they are connected".
//!
//! A [`Bridge`] has one port per segment and runs a [`Station`] on each (its own id, MAC,
//! rate and TRT there): RETHER frames go to the port's station and never cross (each
//! segment's protocol is its own). Every other frame is bridged transparently, as a learning
//! bridge does (IEEE 802.1D §8.7): source MACs are learnt per port in a bounded table with
//! aging; a unicast frame goes to the port its destination was learnt on (not back where it
//! came from), and a group frame or one for an unknown destination to every other port; the
//! link-local group 01-80-C2-00-00-0x is never forwarded. A frame leaving on port `j` whose
//! 5-tuple (the switch-router's RSVP classifier, RFC 2205 §A.9) belongs to a sub-connection
//! admitted on `j` ([`Bridge::open`], [`Bridge::admit`], [`Bridge::close`]) waits on that
//! session's queue of `j`'s station and goes out on its RT visits; everything else is
//! non-real-time on `j`.
//!
//! # The end-to-end bound ([`end_to_end`])
//!
//! Counted in frames of at most the stream's `max_frame` bytes. On a segment the token visits
//! the RT-set in order every cycle; cycles start TRT apart (the first RT sender holds the token
//! until TRT has passed, and eq. 7's estimates, charged whenever they exceed real costs, keep a
//! cycle from running over, given a token cost at least a pass's real time). A session's visit
//! therefore starts `A` after its cycle's start, `A` between 0 and the THTs of the entries
//! ahead of it (they may use less than their THT), so two of its visits start at most
//! `G = TRT + A` apart and at least `TRT − A`; a visit lasts at most its THT, in which it sends
//! `n = ⌈bytes_per_trt / (max_frame − 14)⌉` frames of up to `max_frame` bytes (eq. 1).
//!
//! Suppose at most `m(L)` frames of the stream reach the session's queue in any window of length
//! `L`, and `m(G) ≤ n`. Then every visit sends all that was queued when it started (induction:
//! the previous visit emptied what was queued at its start, so what is queued at this one's
//! start arrived since the previous start, at most `m(G) ≤ n`). A frame arriving between two
//! visit starts therefore leaves in the second visit:
//!
//! - **waiting for the sender's next RT visit**: at most `G = TRT + A`;
//! - **the frames ahead of it within its visit, and its own transmission**: the visit ends
//!   within THT of its start (eq. 7 with `a ≥ 0` is at least the real time);
//!
//! so its delay on the segment is at most `d = TRT + A + THT`, and the queue never holds more than
//! `m(G + THT)` frames: what arrived since the start of the visit under way. Frames leave a
//! segment only during the session's visits, at most `n` each (a visit sends what was queued),
//! visits starting at least `TRT − A` apart and lasting at most THT; so the next segment sees at
//! most `m'(L) = n · ⌈(L + THT) / (TRT − A)⌉` frames in any window `L` (the visits whose start
//! falls in a window `THT` longer). The first segment's `m` is the source's (a host sending at
//! most `frames` frames in any `period`, `m(L) = frames · ⌈L / period⌉`).
//!
//! **End-to-end**, hops `1..k`: `D = Σ (TRT_k + A_k + THT_k)`; the sub-connection on hop `k`
//! needs `n_k ≥ m_k(G_k)` — with `m_k` from hop `k − 1` that is
//! `n_k ≥ n_{k−1} · ⌈(TRT_k + A_k + THT_{k−1}) / (TRT_{k−1} − A_{k−1})⌉`: a downstream TRT no
//! longer than the upstream one less its THT needs no more than the upstream reservation, a
//! longer one a multiple of it — the buffering "to accommodate the discrepancy of these
//! schedules" (§2.5). The bridge's buffer for hop `k` is `m_k(G_k + THT_k)` frames of
//! `max_frame` bytes.
//!
//! Written by hand: no crate bridges RETHER segments.

#[cfg(test)]
#[path = "bridge_tests.rs"]
mod tests;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::Duration;

use rtlan_wire::ethernet::{self, Address};
use rtlan_wire::rether::ETHERTYPE;

use super::agent::{flow_key, SessionState};
use super::{Config, Event, Station, MAX_FRAME};
use crate::node::{Medium, Node, PortId};
use crate::router::classify::{FlowKey, RsvpClassifier};
use crate::time::Instant;

/// Events kept for the bridge's user before the oldest are dropped (and counted).
const MAX_EVENTS: usize = 4096;

/// A bridge's parameters.
#[derive(Debug, Clone)]
pub struct BridgeConfig {
    /// One station per port, in port order (at least two): the bridge's id, MAC, rate and
    /// TRT on that segment.
    pub stations: Vec<Config>,
    /// Most MACs learnt (beyond: the oldest is forgotten).
    pub table_capacity: usize,
    /// A learnt MAC not heard from for this long is forgotten (802.1D: 300 s).
    pub aging: Duration,
}

impl BridgeConfig {
    /// These stations, a table of 4,096 MACs aged after 300 s.
    pub fn new(stations: Vec<Config>) -> BridgeConfig {
        BridgeConfig {
            stations,
            table_capacity: 4096,
            aging: Duration::from_secs(300),
        }
    }
}

/// What a sub-connection reserves on its output segment ([`Bridge::open`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubSpec {
    /// Layer-2 payload bytes per the output segment's TRT.
    pub bytes_per_trt: u32,
    /// The stream's largest frame, bytes (Ethernet header included, 60..=1514).
    pub max_frame: usize,
    /// The stream's 5-tuple (a source port of 0 matches any).
    pub flow: FlowKey,
}

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BridgeError {
    /// The configuration is not valid.
    #[error("{0}")]
    Invalid(&'static str),
    /// No such port.
    #[error("no port {0}")]
    NoPort(u16),
    /// No such sub-connection on that port.
    #[error("no sub-connection {session} on port {port}")]
    NoSession {
        /// The port.
        port: u16,
        /// The session.
        session: u16,
    },
    /// Every session id of the port is taken.
    #[error("no session id is free on port {0}")]
    NoFreeId(u16),
    /// Another sub-connection on that port carries this 5-tuple.
    #[error("sub-connection {0} already carries this 5-tuple")]
    FlowTaken(u16),
}

/// The bridge's counters. Every frame received lands in exactly one of `rether`,
/// `malformed`, `link_local`, `filtered`, `forwarded`, `flooded`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct BridgeStats {
    /// Frames received.
    pub rx: u64,
    /// RETHER frames, given to the port's station (never forwarded).
    pub rether: u64,
    /// Frames that were not Ethernet II frames of a valid length.
    pub malformed: u64,
    /// Frames to the link-local group 01-80-C2-00-00-0x, not forwarded.
    pub link_local: u64,
    /// Unicast frames whose destination was learnt on the port they came from.
    pub filtered: u64,
    /// Unicast frames sent to the one port their destination was learnt on.
    pub forwarded: u64,
    /// Group frames and frames for unknown destinations, sent to every other port.
    pub flooded: u64,
    /// Copies queued on a sub-connection (real time).
    pub tx_rt: u64,
    /// Copies queued as non-real-time.
    pub tx_nrt: u64,
    /// Copies dropped because the output station's queue was full.
    pub queue_drops: u64,
    /// MACs learnt (new entries).
    pub learnt: u64,
    /// MACs forgotten because the table was full.
    pub evicted: u64,
    /// Events dropped because the user did not read them.
    pub events_dropped: u64,
}

/// A sub-connection: what it reserves and where it stands.
#[derive(Debug, Clone, Copy)]
struct Sub {
    spec: SubSpec,
    state: SessionState,
    tht: Option<Duration>,
}

/// A sub-connection as [`Bridge::sessions`] reports it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SubInfo {
    /// The output port (segment).
    pub port: u16,
    /// Its session id on that segment.
    pub session: u16,
    /// Where it stands (never `Closing`: a closed sub-connection is forgotten at once).
    pub state: SessionState,
    /// Reserved bytes per the segment's TRT.
    pub bytes_per_trt: u32,
    /// Largest frame.
    pub max_frame: usize,
    /// Its 5-tuple, as `proto src:port > dst:port`.
    pub flow: String,
    /// Its token holding time once admitted, ns.
    pub tht_ns: Option<u64>,
    /// Frames waiting for its visits.
    pub queued_frames: usize,
}

#[derive(Debug, Clone, Copy)]
struct Learnt {
    port: PortId,
    seen: Instant,
}

/// A RETHER bridge (module docs).
///
/// Driver call order: that of [`Node`]; port `i` is segment `i`, a [`Medium::Shared`] port
/// polled only while the medium is free. Sub-connections are opened with [`Bridge::open`] and
/// asked for with [`Bridge::admit`]; their answers come out of [`Bridge::poll_event`].
#[derive(Debug)]
pub struct Bridge {
    config: BridgeConfig,
    stations: Vec<Station>,
    table: BTreeMap<Address, Learnt>,
    /// The table's entries by last sighting, oldest first (eviction and aging).
    by_age: BTreeSet<(Instant, Address)>,
    /// Per output port: the 5-tuples of its sub-connections.
    flows: Vec<RsvpClassifier<u16>>,
    /// (port, session) → the spec and where it stands.
    subs: BTreeMap<(PortId, u16), Sub>,
    events: VecDeque<(PortId, Event)>,
    stats: BridgeStats,
}

impl Bridge {
    /// A bridge whose stations announce themselves on their segments (§2.4).
    pub fn new(config: BridgeConfig) -> Result<Bridge, BridgeError> {
        if config.stations.len() < 2 || config.stations.len() > usize::from(u16::MAX) {
            return Err(BridgeError::Invalid("a bridge has 2..=65535 ports"));
        }
        if config.table_capacity == 0 {
            return Err(BridgeError::Invalid("the table holds at least one MAC"));
        }
        Ok(Bridge {
            stations: config.stations.iter().cloned().map(Station::new).collect(),
            flows: config
                .stations
                .iter()
                .map(|_| RsvpClassifier::new())
                .collect(),
            config,
            table: BTreeMap::new(),
            by_age: BTreeSet::new(),
            subs: BTreeMap::new(),
            events: VecDeque::new(),
            stats: BridgeStats::default(),
        })
    }

    /// The station on `port`.
    pub fn station(&self, port: PortId) -> Option<&Station> {
        self.stations.get(usize::from(port.0))
    }

    /// The counters.
    pub fn stats(&self) -> &BridgeStats {
        &self.stats
    }

    /// The next event of a port's station.
    pub fn poll_event(&mut self) -> Option<(PortId, Event)> {
        self.events.pop_front()
    }

    /// The port `mac` was learnt on, if it was heard within the aging time before `now`.
    pub fn port_of(&self, now: Instant, mac: Address) -> Option<PortId> {
        self.table
            .get(&mac)
            .filter(|l| now.saturating_duration_since(l.seen) < self.config.aging)
            .map(|l| l.port)
    }

    /// The learnt MACs heard within the aging time before `now`: (MAC, port, time since last
    /// heard), in MAC order.
    pub fn table(&self, now: Instant) -> Vec<(Address, PortId, Duration)> {
        self.table
            .iter()
            .map(|(&mac, l)| (mac, l.port, now.saturating_duration_since(l.seen)))
            .filter(|(_, _, age)| *age < self.config.aging)
            .collect()
    }

    /// Opens a sub-connection leaving on `port` and returns its session id there; its frames
    /// are non-real-time until [`Bridge::admit`] succeeds.
    pub fn open(&mut self, port: PortId, spec: SubSpec) -> Result<u16, BridgeError> {
        let flows = self
            .flows
            .get_mut(usize::from(port.0))
            .ok_or(BridgeError::NoPort(port.0))?;
        if spec.bytes_per_trt == 0 {
            return Err(BridgeError::Invalid(
                "a sub-connection reserves more than 0 bytes",
            ));
        }
        if !(60..=MAX_FRAME).contains(&spec.max_frame) {
            return Err(BridgeError::Invalid("max_frame is 60..=1514 bytes"));
        }
        if let Some(&other) = flows.get(&spec.flow) {
            return Err(BridgeError::FlowTaken(other));
        }
        // Not an id the station still knows: a closed one stays in the RT-set until its visit.
        let station = &self.stations[usize::from(port.0)];
        let session = (1..=u16::MAX)
            .find(|s| !self.subs.contains_key(&(port, *s)) && station.rt_queued(*s).is_none())
            .ok_or(BridgeError::NoFreeId(port.0))?;
        flows.replace(spec.flow, session);
        self.subs.insert(
            (port, session),
            Sub {
                spec,
                state: SessionState::Open,
                tht: None,
            },
        );
        Ok(session)
    }

    /// Asks `port`'s segment to admit the sub-connection: the answer is an [`Event::Admitted`]
    /// or [`Event::Refused`] when the token comes; the first one switches the segment to
    /// RETHER mode.
    pub fn admit(&mut self, now: Instant, port: PortId, session: u16) -> Result<(), BridgeError> {
        let sub = self
            .subs
            .get_mut(&(port, session))
            .ok_or(BridgeError::NoSession {
                port: port.0,
                session,
            })?;
        if matches!(sub.state, SessionState::Admitting | SessionState::Admitted) {
            return Ok(());
        }
        sub.state = SessionState::Admitting;
        let spec = sub.spec;
        let station = self
            .stations
            .get_mut(usize::from(port.0))
            .ok_or(BridgeError::NoPort(port.0))?;
        station.open(now, session, spec.bytes_per_trt, spec.max_frame, None);
        self.drain();
        Ok(())
    }

    /// Closes a sub-connection: its 5-tuple is ordinary traffic on `port` from now on, and it
    /// leaves the RT-set at the station's next visit.
    pub fn close(&mut self, port: PortId, session: u16) -> Result<(), BridgeError> {
        let spec = self
            .subs
            .remove(&(port, session))
            .ok_or(BridgeError::NoSession {
                port: port.0,
                session,
            })?
            .spec;
        let i = usize::from(port.0);
        if let Some(flows) = self.flows.get_mut(i) {
            flows.remove(&spec.flow);
        }
        if let Some(station) = self.stations.get_mut(i) {
            station.close(session);
        }
        self.drain();
        Ok(())
    }

    /// Whether the sub-connection is in `port`'s RT-set.
    pub fn is_admitted(&self, port: PortId, session: u16) -> bool {
        self.station(port).is_some_and(|s| s.is_admitted(session))
    }

    /// The sub-connections, by port and session.
    pub fn sessions(&self) -> Vec<SubInfo> {
        self.subs
            .iter()
            .map(|(&(port, session), sub)| {
                let f = sub.spec.flow;
                SubInfo {
                    port: port.0,
                    session,
                    state: sub.state,
                    bytes_per_trt: sub.spec.bytes_per_trt,
                    max_frame: sub.spec.max_frame,
                    flow: format!(
                        "{} {}:{} > {}:{}",
                        f.protocol, f.src, f.src_port, f.dst, f.dst_port
                    ),
                    tht_ns: sub
                        .tht
                        .map(|t| u64::try_from(t.as_nanos()).unwrap_or(u64::MAX)),
                    queued_frames: self
                        .station(port)
                        .and_then(|s| s.rt_queued(session))
                        .unwrap_or(0),
                }
            })
            .collect()
    }

    /// The bytes per `port`'s TRT of a stream of `rate_bps` (rounded up), or `None` without
    /// such a port.
    pub fn bytes_per_trt(&self, port: PortId, rate_bps: u64) -> Option<u32> {
        let trt = self.station(port)?.config().trt;
        let ns = u128::from(u64::try_from(trt.as_nanos()).unwrap_or(u64::MAX));
        let bytes = (u128::from(rate_bps) * ns).div_ceil(8 * 1_000_000_000);
        Some(u32::try_from(bytes).unwrap_or(u32::MAX))
    }

    fn drain(&mut self) {
        for (i, station) in self.stations.iter_mut().enumerate() {
            while let Some(event) = station.poll_event() {
                // The port count fits u16 (checked in `new`).
                let port = PortId(i as u16);
                match event {
                    Event::Admitted { session, tht } => {
                        if let Some(sub) = self.subs.get_mut(&(port, session)) {
                            sub.state = SessionState::Admitted;
                            sub.tht = Some(tht);
                        }
                    }
                    Event::Refused { session, .. } => {
                        if let Some(sub) = self.subs.get_mut(&(port, session)) {
                            sub.state = SessionState::Refused;
                            sub.tht = None;
                        }
                    }
                    // Released by the others while still open here (a false death, a
                    // partition): the station asks again on its own.
                    Event::Closed { session } => {
                        if let Some(sub) = self.subs.get_mut(&(port, session)) {
                            sub.state = SessionState::Admitting;
                            sub.tht = None;
                        }
                    }
                    _ => {}
                }
                if self.events.len() >= MAX_EVENTS {
                    self.events.pop_front();
                    self.stats.events_dropped += 1;
                }
                self.events.push_back((port, event));
            }
        }
    }

    fn learn(&mut self, now: Instant, port: PortId, mac: Address) {
        if let Some(l) = self.table.get_mut(&mac) {
            self.by_age.remove(&(l.seen, mac));
            *l = Learnt { port, seen: now };
            self.by_age.insert((now, mac));
            return;
        }
        while self.table.len() >= self.config.table_capacity {
            let Some((seen, oldest)) = self.by_age.pop_first() else {
                break;
            };
            self.table.remove(&oldest);
            if now.saturating_duration_since(seen) < self.config.aging {
                self.stats.evicted += 1;
            }
        }
        self.table.insert(mac, Learnt { port, seen: now });
        self.by_age.insert((now, mac));
        self.stats.learnt += 1;
    }

    /// Forgets the MACs not heard from within the aging time.
    fn age(&mut self, now: Instant) {
        while let Some(&(seen, mac)) = self.by_age.first() {
            if now.saturating_duration_since(seen) < self.config.aging {
                break;
            }
            self.by_age.pop_first();
            self.table.remove(&mac);
        }
    }

    /// Queues a copy of `frame` on `port`: on its sub-connection when the 5-tuple has one
    /// admitted there, else non-real-time.
    fn send(&mut self, port: usize, key: Option<FlowKey>, frame: &[u8]) {
        let (Some(station), Some(flows)) = (self.stations.get_mut(port), self.flows.get(port))
        else {
            return;
        };
        let session = key
            .and_then(|k| flows.classify(&k).copied())
            .filter(|&s| station.is_admitted(s));
        let queued = match session {
            Some(s) => {
                self.stats.tx_rt += 1;
                station.send_rt(s, frame)
            }
            None => {
                self.stats.tx_nrt += 1;
                station.send_nrt(frame)
            }
        };
        if !queued {
            self.stats.queue_drops += 1;
        }
    }

    fn on_frame(&mut self, now: Instant, port: PortId, frame: &[u8]) {
        let i = usize::from(port.0);
        if i >= self.stations.len() {
            return;
        }
        self.stats.rx += 1;
        let Ok(view) = ethernet::Frame::new_checked(frame) else {
            self.stats.malformed += 1;
            return;
        };
        if frame.len() > MAX_FRAME {
            self.stats.malformed += 1;
            return;
        }
        if u16::from(view.ethertype()) == ETHERTYPE {
            self.stats.rether += 1;
            if let Some(station) = self.stations.get_mut(i) {
                station.handle_frame(now, PortId(0), frame);
            }
            self.drain();
            return;
        }
        let (src, dst) = (view.src_addr(), view.dst_addr());
        if src.is_unicast() {
            self.learn(now, port, src);
        }
        if dst.0[..5] == [0x01, 0x80, 0xc2, 0x00, 0x00] && dst.0[5] < 0x10 {
            self.stats.link_local += 1;
            return;
        }
        let key = flow_key(&view);
        let out = if dst.is_unicast() {
            self.port_of(now, dst)
        } else {
            None
        };
        match out {
            Some(o) if o == port => self.stats.filtered += 1,
            Some(o) => {
                self.stats.forwarded += 1;
                self.send(usize::from(o.0), key, frame);
            }
            None => {
                self.stats.flooded += 1;
                for j in (0..self.stations.len()).filter(|&j| j != i) {
                    self.send(j, key, frame);
                }
            }
        }
    }
}

impl Node for Bridge {
    fn port_count(&self) -> usize {
        self.stations.len()
    }

    fn medium(&self, port: PortId) -> Medium {
        self.station(port)
            .map_or(Medium::Unpaced, |s| s.medium(PortId(0)))
    }

    fn handle_frame(&mut self, now: Instant, port: PortId, frame: &[u8]) {
        self.on_frame(now, port, frame);
    }

    fn poll_transmit(&mut self, now: Instant, port: PortId, buf: &mut [u8]) -> Option<usize> {
        let sent = self
            .stations
            .get_mut(usize::from(port.0))?
            .poll_transmit(now, PortId(0), buf);
        self.drain();
        sent
    }

    fn handle_timeout(&mut self, now: Instant) {
        for station in &mut self.stations {
            if station.poll_timeout().is_some_and(|t| t <= now) {
                station.handle_timeout(now);
            }
        }
        self.age(now);
        self.drain();
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.stations.iter().filter_map(Station::poll_timeout).min()
    }

    fn handle_link(&mut self, now: Instant, port: PortId, up: bool) {
        if let Some(station) = self.stations.get_mut(usize::from(port.0)) {
            station.handle_link(now, PortId(0), up);
        }
        self.drain();
    }
}

/// A stream's source: at most `frames` frames (each of at most the stream's `max_frame`) in
/// any window of length `period`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Source {
    /// Frames per window.
    pub frames: u32,
    /// The window.
    pub period: Duration,
}

/// A segment a connection crosses, seen from its sub-connection there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hop {
    /// The segment's token rotation time.
    pub trt: Duration,
    /// The THTs of the RT-set entries visited before this sub-connection's (0 for the first).
    pub ahead: Duration,
    /// The sub-connection's token holding time (eq. 1 with eq. 7, [`Station::tht`]).
    pub tht: Duration,
    /// Frames of up to the stream's `max_frame` it sends per visit:
    /// `⌈bytes_per_trt / (max_frame − 14)⌉`.
    pub frames_per_visit: u32,
}

impl Hop {
    /// The hop of a sub-connection of `bytes_per_trt` in frames of `max_frame` on `station`'s
    /// segment, `ahead` after its cycle's start at most.
    pub fn of(station: &Station, bytes_per_trt: u32, max_frame: usize, ahead: Duration) -> Hop {
        let payload = max_frame.clamp(60, MAX_FRAME) - ethernet::HEADER_LEN;
        let frames = (bytes_per_trt as usize).div_ceil(payload);
        Hop {
            trt: station.config().trt,
            ahead,
            tht: station.tht(bytes_per_trt, max_frame),
            frames_per_visit: u32::try_from(frames).unwrap_or(u32::MAX),
        }
    }
}

/// What one hop contributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HopBound {
    /// Worst-case delay on the segment: `TRT + ahead + THT`.
    pub delay: Duration,
    /// Frames the sub-connection must send per visit so that every visit empties its queue:
    /// the most that arrive between two of its visits' starts.
    pub frames_needed: u64,
    /// Most frames its queue holds (the buffer of the node sending on this hop).
    pub buffer_frames: u64,
}

/// A connection's end-to-end bound ([`end_to_end`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bound {
    /// The worst-case delay from the source's send to the last hop's delivery.
    pub delay: Duration,
    /// Per hop, in order.
    pub hops: Vec<HopBound>,
}

/// Why no bound holds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BoundError {
    /// The connection crosses no segment.
    #[error("a connection crosses at least one segment")]
    NoHops,
    /// The source's period is zero.
    #[error("the source's period is zero")]
    ZeroPeriod,
    /// On this hop the entries ahead take a whole TRT (visits need not recur).
    #[error("hop {0}: the entries ahead take the whole TRT")]
    AheadTooLong(usize),
    /// On this hop the sub-connection sends fewer frames per visit than can arrive between
    /// two visits: its queue grows without bound.
    #[error("hop {hop}: {reserved} frames per visit, {needed} needed")]
    Underreserved {
        /// The hop.
        hop: usize,
        /// Frames that may arrive between two visits' starts.
        needed: u64,
        /// Frames it sends per visit.
        reserved: u32,
    },
}

/// At most `frames · ⌈(L + spread) / gap⌉` frames in any window of length `L`.
#[derive(Debug, Clone, Copy)]
struct Arrivals {
    frames: u64,
    spread: u128,
    gap: u128,
}

impl Arrivals {
    fn within(self, window: u128) -> u64 {
        let bursts = (window + self.spread).div_ceil(self.gap);
        u64::try_from(bursts)
            .unwrap_or(u64::MAX)
            .saturating_mul(self.frames)
    }
}

/// The end-to-end worst-case delay of a connection from `source` across `hops` (in order),
/// and each hop's reservation and buffer, as derived in the module docs:
/// `D = Σ (TRT_k + ahead_k + THT_k)`, provided every hop's sub-connection sends at least
/// `m_k(TRT_k + ahead_k)` frames per visit, `m_1` the source's and
/// `m_k(L) = n_{k−1} · ⌈(L + THT_{k−1}) / (TRT_{k−1} − ahead_{k−1})⌉`.
pub fn end_to_end(source: Source, hops: &[Hop]) -> Result<Bound, BoundError> {
    if hops.is_empty() {
        return Err(BoundError::NoHops);
    }
    if source.period.is_zero() {
        return Err(BoundError::ZeroPeriod);
    }
    let mut arrivals = Arrivals {
        frames: u64::from(source.frames),
        spread: 0,
        gap: source.period.as_nanos(),
    };
    let mut delay = Duration::ZERO;
    let mut out = Vec::with_capacity(hops.len());
    for (k, hop) in hops.iter().enumerate() {
        let (trt, ahead, tht) = (hop.trt.as_nanos(), hop.ahead.as_nanos(), hop.tht.as_nanos());
        if ahead >= trt {
            return Err(BoundError::AheadTooLong(k));
        }
        let gap_max = trt + ahead;
        let needed = arrivals.within(gap_max);
        if needed > u64::from(hop.frames_per_visit) {
            return Err(BoundError::Underreserved {
                hop: k,
                needed,
                reserved: hop.frames_per_visit,
            });
        }
        let hop_delay = hop.trt.saturating_add(hop.ahead).saturating_add(hop.tht);
        delay = delay.saturating_add(hop_delay);
        out.push(HopBound {
            delay: hop_delay,
            frames_needed: needed,
            buffer_frames: arrivals.within(gap_max + tht),
        });
        arrivals = Arrivals {
            frames: u64::from(hop.frames_per_visit),
            spread: tht,
            gap: trt - ahead,
        };
    }
    Ok(Bound { delay, hops: out })
}
