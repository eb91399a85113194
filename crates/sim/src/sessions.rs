//! RSVP sessions without data (`[[sessions]]`): many reservations signalled and kept alive by
//! refreshes, so that a router's soft state can be loaded to the QSR paper's scale (§2: "support
//! for RSVP translates into significant control resources for processing and storage in order
//! to efficiently handle a large number of flows").
//!
//! A `[[sessions]]` table declares `count` sessions from one host to another across routers.
//! Session *i* is the UDP session (receiver, `port + i`) with the sender `(src, src_port)`: the
//! sender's RSVP engine sends its Path at `start + spread × i / count`, the receiver answers
//! Resv (Guaranteed at the sender's token rate, as for a reserved `[[traffic]]` flow), and both
//! refresh their state every R × U(0.5, 1.5) (RFC 2205 §3.7) until the run ends. No datagram is
//! sent: what is measured is the signalling, its state and its refreshes (QSR §3.2). The
//! sender keeps, per session, only what the results need (pending, open, refused, lost);
//! everything else is the RSVP engine's.

use std::net::Ipv4Addr;
use std::time::Duration;

use rtlan_topology::Topology;
use serde::{Deserialize, Serialize};
use toml::Spanned;

use crate::scenario::{
    payload_size, reserve_spec, RawReserve, ReserveSpec, ScenarioError, Source, TrafficSpec,
};

/// Default first receiver port of a `[[sessions]]` table.
pub const FIRST_SESSION_PORT: u16 = 10_000;

/// One `[[sessions]]` table.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionsSpec {
    /// Name in results.
    pub name: String,
    /// Index of the sending host.
    pub src: usize,
    /// Index of the receiving host.
    pub dst: usize,
    /// Number of sessions.
    pub count: u32,
    /// UDP payload bytes of the datagrams the reservations are for (the TSpec's packet size).
    pub size: usize,
    /// Each session's reservation.
    pub reserve: ReserveSpec,
    /// Receiver's UDP port of session 0; session *i* uses `port + i`.
    pub port: u16,
    /// Sender's UDP port of every session.
    pub src_port: u16,
    /// When session 0 sends its Path.
    pub start: Duration,
    /// Paths go out evenly over `[start, start + spread)`.
    pub spread: Duration,
}

impl SessionsSpec {
    /// When session `i` opens.
    pub fn open_at(&self, i: u32) -> Duration {
        let ns = self.spread.as_nanos() * u128::from(i) / u128::from(self.count.max(1));
        self.start + Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
    }

    /// The receiver ports of the sessions.
    fn ports(&self) -> std::ops::RangeInclusive<u32> {
        u32::from(self.port)..=u32::from(self.port) + self.count - 1
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSessions {
    name: Option<String>,
    src: Spanned<String>,
    dst: Spanned<String>,
    count: Spanned<u32>,
    size: Option<Spanned<u64>>,
    reserve: Spanned<RawReserve>,
    port: Option<Spanned<u16>>,
    src_port: Option<Spanned<u16>>,
    start: Option<Spanned<String>>,
    spread: Option<Spanned<String>>,
}

/// Reads one `[[sessions]]`; `earlier` are the tables before it, `traffic` the flows.
pub(crate) fn sessions_spec(
    src: &Source<'_>,
    topology: &Topology,
    raw: &Spanned<RawSessions>,
    duration: Duration,
    traffic: &[TrafficSpec],
    earlier: &[SessionsSpec],
) -> Result<SessionsSpec, ScenarioError> {
    let table = raw.span().start;
    let t = raw.get_ref();
    let host = |name: &Spanned<String>| {
        topology
            .hosts
            .iter()
            .position(|h| &h.name == name.get_ref())
            .ok_or_else(|| {
                src.invalid(
                    name.span().start,
                    format!("`{}` is not a host", name.get_ref()),
                )
            })
    };
    let s = host(&t.src)?;
    let d = host(&t.dst)?;
    if s == d {
        return Err(src.invalid(t.dst.span().start, "sessions need two different hosts"));
    }
    // RSVP is what the simulated hosts signal across routers (EtheReal inside a segment).
    let segment = |h: usize| {
        topology
            .segments
            .iter()
            .position(|seg| seg.contains(topology.hosts[h].ip))
    };
    if topology.routers.is_empty() || segment(s) == segment(d) {
        return Err(src.invalid(
            t.dst.span().start,
            "RSVP sessions need a router between `src` and `dst` (hosts signal RSVP across routers)",
        ));
    }
    let count = *t.count.get_ref();
    if count == 0 {
        return Err(src.invalid(t.count.span().start, "`count` must be above 0"));
    }
    let size = payload_size(src, t.size.as_ref())?;
    let reserve = reserve_spec(src, t.reserve.get_ref(), size)?;
    if reserve.delay.is_some() {
        return Err(src.invalid(
            t.reserve.span().start,
            "`delay` is not signalled with RSVP here (the receiver reserves at the sender's rate)",
        ));
    }
    let port = match &t.port {
        Some(p) if *p.get_ref() == 0 => {
            return Err(src.invalid(p.span().start, "`port` must be above 0"))
        }
        Some(p) => *p.get_ref(),
        None => FIRST_SESSION_PORT,
    };
    if u32::from(port) + count - 1 > u32::from(u16::MAX) {
        let at = t
            .port
            .as_ref()
            .map_or(t.count.span().start, |p| p.span().start);
        return Err(src.invalid(
            at,
            format!(
                "`port` + `count` − 1 must be a UDP port (≤ 65535; {count} sessions from {port})"
            ),
        ));
    }
    let src_port = t.src_port.as_ref().map_or(port, |p| *p.get_ref());
    let start = match &t.start {
        Some(v) => src.duration(v, "start")?,
        None => Duration::ZERO,
    };
    let spread = match &t.spread {
        Some(v) => src.duration(v, "spread")?,
        None => Duration::ZERO,
    };
    if start + spread >= duration {
        let at = t
            .spread
            .as_ref()
            .or(t.start.as_ref())
            .map_or(table, |v| v.span().start);
        return Err(src.invalid(at, "`start` + `spread` must be inside `duration`"));
    }
    let name = t
        .name
        .clone()
        .unwrap_or_else(|| format!("{}→{} sessions", t.src.get_ref(), t.dst.get_ref()));
    let spec = SessionsSpec {
        name,
        src: s,
        dst: d,
        count,
        size,
        reserve,
        port,
        src_port,
        start,
        spread,
    };
    // One RSVP session is (receiver, protocol, port): two tables, or a table and a reserved
    // flow, to the same receiver must not share a port.
    let at = t.port.as_ref().map_or(table, |p| p.span().start);
    let ports = spec.ports();
    if let Some(other) = earlier.iter().find(|o| {
        o.dst == d && o.ports().start() <= ports.end() && ports.start() <= o.ports().end()
    }) {
        return Err(src.invalid(
            at,
            format!("receiver ports overlap those of sessions `{}`", other.name),
        ));
    }
    if let Some(flow) = traffic
        .iter()
        .find(|f| f.dst == d && f.reserve.is_some() && ports.contains(&u32::from(f.dst_port)))
    {
        return Err(src.invalid(
            at,
            format!(
                "receiver ports include the reserved flow `{}`'s port",
                flow.name
            ),
        ));
    }
    Ok(spec)
}

/// The state of one session at its sender.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Its Path is not sent yet.
    Idle,
    /// Path sent, no reservation yet.
    Pending,
    /// The reservation reached the sender.
    Open,
    /// A PathErr came back before it opened.
    Refused,
    /// The reservation was open and went (ReservationGone).
    Lost,
}

/// One `[[sessions]]` table at its sender.
#[derive(Debug)]
pub(crate) struct SenderSessions {
    /// Index of the table in the scenario.
    pub(crate) group: usize,
    pub(crate) spec: SessionsSpec,
    pub(crate) dst_ip: Ipv4Addr,
    /// Sessions below this have sent their Path.
    next: u32,
    state: Vec<State>,
    /// ReservationGone events (a session may lose its reservation more than once).
    lost_events: u64,
    /// Reservations that came back after being lost.
    recovered: u64,
    /// When the last session opened, ns.
    last_open_ns: Option<u64>,
}

impl SenderSessions {
    pub(crate) fn new(group: usize, spec: SessionsSpec, dst_ip: Ipv4Addr) -> SenderSessions {
        SenderSessions {
            group,
            dst_ip,
            next: 0,
            state: vec![State::Idle; spec.count as usize],
            spec,
            lost_events: 0,
            recovered: 0,
            last_open_ns: None,
        }
    }

    /// When the next Path is due, from time zero.
    pub(crate) fn next_open(&self) -> Option<Duration> {
        (self.next < self.spec.count).then(|| self.spec.open_at(self.next))
    }

    /// The next session whose Path is due at `elapsed`, marked pending; its receiver port.
    pub(crate) fn take_due(&mut self, elapsed: Duration) -> Option<u16> {
        let i = self.next;
        if self.next_open()? > elapsed {
            return None;
        }
        self.next += 1;
        self.state[i as usize] = State::Pending;
        u16::try_from(u32::from(self.spec.port) + i).ok()
    }

    /// The index of the session to `dst`:`dst_port` from `src_port`, if it is one of these.
    fn index(&self, dst: Ipv4Addr, dst_port: u16, src_port: u16) -> Option<usize> {
        if dst != self.dst_ip || src_port != self.spec.src_port {
            return None;
        }
        let i = dst_port.checked_sub(self.spec.port)?;
        (u32::from(i) < self.spec.count).then_some(usize::from(i))
    }

    /// A reservation reached the sender; `false` if the session is not one of these.
    pub(crate) fn reserved(&mut self, now_ns: u64, dst: Ipv4Addr, port: u16, sport: u16) -> bool {
        let Some(i) = self.index(dst, port, sport) else {
            return false;
        };
        match self.state[i] {
            State::Pending => {
                self.state[i] = State::Open;
                self.last_open_ns = Some(now_ns);
            }
            State::Lost => {
                self.state[i] = State::Open;
                self.recovered += 1;
            }
            State::Idle | State::Open | State::Refused => {}
        }
        true
    }

    /// The reservation of a session went; `false` if it is not one of these.
    pub(crate) fn gone(&mut self, dst: Ipv4Addr, port: u16, sport: u16) -> bool {
        let Some(i) = self.index(dst, port, sport) else {
            return false;
        };
        self.lost_events += 1;
        if self.state[i] == State::Open {
            self.state[i] = State::Lost;
        }
        true
    }

    /// A PathErr for a session; `false` if it is not one of these.
    pub(crate) fn refused(&mut self, dst: Ipv4Addr, port: u16, sport: u16) -> bool {
        let Some(i) = self.index(dst, port, sport) else {
            return false;
        };
        if self.state[i] == State::Pending {
            self.state[i] = State::Refused;
        }
        true
    }

    /// What the results report.
    pub(crate) fn result(&self, src: &str, dst: &str) -> SessionsResult {
        let count = |s: State| self.state.iter().filter(|&&x| x == s).count() as u64;
        SessionsResult {
            name: self.spec.name.clone(),
            src: src.to_string(),
            dst: dst.to_string(),
            count: u64::from(self.spec.count),
            opened: count(State::Open),
            pending: count(State::Pending) + count(State::Idle),
            refused: count(State::Refused),
            lost: count(State::Lost),
            lost_events: self.lost_events,
            recovered: self.recovered,
            last_open_ns: self.last_open_ns,
        }
    }
}

/// One `[[sessions]]` table's result (its sender's view at the end of the run).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SessionsResult {
    /// Name.
    pub name: String,
    /// Sending host.
    pub src: String,
    /// Receiving host.
    pub dst: String,
    /// Sessions declared.
    pub count: u64,
    /// Reserved at the end of the run.
    pub opened: u64,
    /// Not reserved yet (Path not sent, or no Resv back).
    pub pending: u64,
    /// Refused by a PathErr.
    pub refused: u64,
    /// Reserved once, not at the end.
    pub lost: u64,
    /// Reservations that went (ReservationGone at the sender), all sessions together.
    pub lost_events: u64,
    /// Reservations that came back after going.
    pub recovered: u64,
    /// When the last first reservation of these sessions reached the sender, ns.
    pub last_open_ns: Option<u64>,
}
