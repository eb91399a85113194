//! The bandwidth manager (seed 004 §3.2 "Admission process"; seed 001 §3.2–3.4): a central
//! service that knows the topology, books link capacity and switch buffer memory per switch output
//! port, and admits a connection only if
//!
//! 1. Σ r on every port of its path stays within the port rate (seed 004 eq. (1)),
//! 2. on every switch, Σ over its ports of the backlog bounds (eq. (4)) fits the buffer memory
//!    (so an off-the-shelf switch never drops, seed 001 §2),
//! 3. its own end-to-end delay bound — the tightest of TFA (Σ over the ports on its path of
//!    eq. (6)), FIFO-aware TFA, SFA and PMOO, plus the host delay `t_os` — meets its requirement,
//!    and
//! 4. every existing connection that shares a port with it still meets its requirement.
//!
//! Bounds come from `rtlan_calculus::booking::Booking`: total flow analysis over the whole
//! network, where a flow's burst grows by `r·d` at every upstream port, and the other methods of
//! `rtlan_calculus::methods` on the same state, so every bound is an upper bound on multi-switch
//! paths too and equals `rtlan analyze`'s for the same flows. Only the
//! ports on the new path and the ports downstream of them are recomputed, and only the
//! connections crossing changed ports are re-checked. One-shot best-effort reservations (seed 001 §3.3) are booked on every switch
//! output port ("the bandwidth manager takes care of all output queues") and expire after a
//! configurable lifetime; a small standing reservation between every node and the manager's host
//! (§3.4) is booked at start.
//!
//! Switches that are rtlan real-time switches (EtheReal §3.3's cyclic scheduler, QSR §3.1's
//! timing wheel) are not FIFO: a path through them is booked by `rt` with the switches' own
//! service curves and admission, bound `b/r + host delay + Σθ`, and only for connections the
//! client also signals per hop ([`Op::AdmitPerHop`]). Paths through both kinds are refused.
//!
//! Every booking records the principal that made it ([`auth`]): a `client` caller may release,
//! refresh and list only its own bookings, an `operator` every one.
//!
//! Driver order (sans-IO): [`Manager::new`], then [`Manager::restore`] with the persisted
//! [`State`]; per request [`Manager::handle_request_as`] with the caller the shell authenticated
//! ([`Tokens::authenticate`]; [`Manager::handle_request`] is the open manager's anonymous
//! operator); whenever [`Manager::poll_timeout`] is due,
//! [`Manager::handle_timeout`]; after either, if [`Manager::take_changed`] is true, persist
//! [`Manager::snapshot`].

pub mod auth;
mod ledger;
mod port;
pub mod protocol;
mod rt;
pub mod topology;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_auth;
#[cfg(test)]
mod tests_rt;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use rtlan_calculus::booking::Booking as Ledger;
use rtlan_calculus::loser::Tspec;
use rtlan_calculus::Q;

use crate::Instant;
pub use auth::{AuthError, Caller, Role, TokenEntry, Tokens, TokensError, ANONYMOUS, MANAGER};
use ledger::q_int;
pub use ledger::LedgerError;
pub use protocol::{
    BestEffortSpec, Booking, Change, ConnId, ConnInfo, ConnSpec, ErrorCode, Kind, Op, PortInfo,
    Reply, Request, Response, State, SwitchInfo, Violation,
};
use rt::{RtPath, RtSwitches};
use topology::Graph;
pub use topology::{HostSpec, LinkSpec, RtSwitchSpec, SwitchSpec, Topology, TopologyError};

/// Ids of standing reservations start here, apart from the ids handed out to clients.
pub const STANDING_BASE: ConnId = 1 << 48;

/// Errors building a manager.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BwmError {
    /// The topology is malformed.
    #[error(transparent)]
    Topology(#[from] TopologyError),
    /// The analysis model could not be built.
    #[error(transparent)]
    Model(#[from] LedgerError),
    /// A standing reservation could not be booked.
    #[error("standing reservation {src} -> {dst}: {message}")]
    Standing {
        /// Sender.
        src: String,
        /// Receiver.
        dst: String,
        /// Why.
        message: String,
    },
}

/// The standing reservation per node (seed 001 §3.4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StandingConfig {
    /// The host the manager runs on; every other host gets a reservation to it and from it.
    pub manager_host: String,
    /// Rate, bit/s.
    pub rate_bps: u64,
    /// Maximum packet, bytes.
    pub max_packet: u64,
    /// Bucket, bytes.
    pub burst_bytes: u64,
}

/// Manager settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManagerConfig {
    /// Host delay `t_os` added to every end-to-end bound unless a request gives its own
    /// (seed 004 Table 1: 80 µs).
    pub host_delay: Duration,
    /// Lifetime of a one-shot best-effort reservation.
    pub best_effort_ttl: Duration,
    /// The standing reservations, if any.
    pub standing: Option<StandingConfig>,
    /// Soft state: a guaranteed booking not refreshed (op `refresh`) for this long is released,
    /// so a crashed host or a lost `admitted` reply cannot hold capacity forever. `None`: bookings
    /// live until released.
    pub lease: Option<Duration>,
}

impl Default for ManagerConfig {
    fn default() -> Self {
        ManagerConfig {
            host_delay: Duration::from_micros(80),
            best_effort_ttl: Duration::from_millis(300),
            standing: None,
            lease: None,
        }
    }
}

#[derive(Debug, Clone)]
struct Conn {
    kind: Kind,
    src: usize,
    dst: Option<usize>,
    rate_bps: u64,
    max_packet: u64,
    tspec: Tspec,
    nodes: Vec<usize>,
    ports: Vec<usize>,
    requirement_ns: Option<u64>,
    host_delay_ns: u64,
    /// Ids in the ledger: one flow for a connection, one per port for a best-effort booking.
    flows: Vec<u64>,
    /// The hops and bound of a connection across rtlan real-time switches (not in the ledger).
    rt: Option<RtPath>,
    expires: Option<Instant>,
    spec: Option<ConnSpec>,
    /// The principal that booked it.
    owner: String,
}

#[derive(Debug, Clone)]
struct PortState {
    rate_bps: u64,
    /// Fastest link of the switch: the peak of a best-effort flow arriving there.
    peak_bps: u64,
    conns: BTreeSet<ConnId>,
    booked_bps: u64,
}

/// Why a request failed.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Refusal {
    code: ErrorCode,
    message: String,
    violations: Vec<Violation>,
}

impl Refusal {
    fn new(code: ErrorCode, message: impl Into<String>) -> Refusal {
        Refusal {
            code,
            message: message.into(),
            violations: Vec::new(),
        }
    }

    fn into_reply(self) -> Reply {
        Reply::Error {
            code: self.code,
            message: self.message,
            violations: self.violations,
        }
    }
}

fn arith(e: impl std::fmt::Display) -> Refusal {
    Refusal::new(
        ErrorCode::Internal,
        format!("bound computation failed: {e}"),
    )
}

/// The bandwidth manager's state machine. See the module doc for the driver order.
#[derive(Debug, Clone)]
pub struct Manager {
    topo: Topology,
    graph: Graph,
    config: ManagerConfig,
    ports: Vec<PortState>,
    ledger: Ledger,
    /// The rtlan real-time switches and what is booked on them.
    rt: RtSwitches,
    conns: BTreeMap<ConnId, Conn>,
    next_conn: ConnId,
    changed: bool,
    /// The changes of the guaranteed bookings since [`Manager::take_changes`].
    changes: Vec<Change>,
}

impl Manager {
    /// A manager for `topo` with nothing booked but the standing reservations.
    pub fn new(topo: Topology, config: ManagerConfig) -> Result<Manager, BwmError> {
        let graph = Graph::new(&topo)?;
        let ports = graph
            .ports
            .iter()
            .map(|p| {
                let peak_bps = topo
                    .links
                    .iter()
                    .filter(|l| l.ends.contains(&graph.names[p.switch]))
                    .map(|l| l.rate_bps)
                    .max()
                    .unwrap_or(0);
                PortState {
                    rate_bps: topo.links[p.link].rate_bps,
                    peak_bps,
                    conns: BTreeSet::new(),
                    booked_bps: 0,
                }
            })
            .collect();
        let ledger = Ledger::new(ledger::model(&topo, &graph)?);
        let rt = RtSwitches::new(&topo, &graph)?;
        let mut m = Manager {
            topo,
            graph,
            config,
            ports,
            ledger,
            rt,
            conns: BTreeMap::new(),
            next_conn: 1,
            changed: false,
            changes: Vec::new(),
        };
        m.book_standing()?;
        Ok(m)
    }

    fn book_standing(&mut self) -> Result<(), BwmError> {
        let Some(st) = self.config.standing.clone() else {
            return Ok(());
        };
        let fail = |src: &str, dst: &str, message: String| BwmError::Standing {
            src: src.to_string(),
            dst: dst.to_string(),
            message,
        };
        let mgr = self.graph.host(&st.manager_host).ok_or_else(|| {
            fail(
                &st.manager_host,
                "-",
                "the manager host is not a host".into(),
            )
        })?;
        let hosts: Vec<usize> = self.graph.hosts().filter(|&h| h != mgr).collect();
        let mut id = STANDING_BASE;
        for h in hosts {
            for (src, dst) in [(h, mgr), (mgr, h)] {
                let (s, d) = (self.graph.names[src].clone(), self.graph.names[dst].clone());
                let spec = ConnSpec {
                    src: s.clone(),
                    dst: d.clone(),
                    rate_bps: st.rate_bps,
                    max_packet: st.max_packet,
                    shaping_interval_us: None,
                    burst_bytes: Some(st.burst_bytes),
                    delay_us: None,
                    host_delay_us: None,
                };
                let mut conn = self
                    .guaranteed(&spec, Kind::Standing, false)
                    .map_err(|r| fail(&s, &d, r.message))?;
                conn.owner = MANAGER.to_string();
                self.book(id, conn)
                    .map_err(|r| fail(&s, &d, format!("{} {:?}", r.message, r.violations)))?;
                id += 1;
            }
        }
        Ok(())
    }

    /// Handles one request at `now` from the open manager's caller ([`Caller::anonymous`], an
    /// operator; expired best-effort reservations are dropped first).
    pub fn handle_request(&mut self, now: Instant, req: Request) -> Response {
        self.handle_request_as(now, &Caller::anonymous(), req)
    }

    /// Handles one request at `now` from `caller`: what it books is owned by its principal; a
    /// `release` or `refresh` of a booking it may not manage ([`Caller::may_manage`]) is refused
    /// with [`ErrorCode::Forbidden`] and changes nothing; `list` shows it only what it may
    /// manage.
    pub fn handle_request_as(&mut self, now: Instant, caller: &Caller, req: Request) -> Response {
        self.handle_timeout(now);
        let owner = &caller.principal;
        let reply = match req.op {
            Op::Admit(spec) => self
                .admit(None, spec, false, owner)
                .map(|conn| self.admitted(conn)),
            Op::AdmitPerHop(spec) => self
                .admit(None, spec, true, owner)
                .map(|conn| self.admitted(conn)),
            Op::Release { conn } => self
                .check_may_manage(caller, &[conn])
                .and_then(|()| self.release(conn))
                .map(|()| Reply::Released { conn }),
            Op::BestEffort(spec) => self.best_effort(now, spec, owner),
            Op::List => Ok(Reply::List {
                connections: self.list_for(caller),
            }),
            Op::Topology => self.topology_reply(),
            Op::Refresh { conns } => self
                .check_may_manage(caller, &conns)
                .map(|()| self.refresh(now, &conns)),
        };
        self.arm_leases(now);
        Response::new(Some(req.id), reply.unwrap_or_else(Refusal::into_reply))
    }

    /// Refuses (forbidden) if any held booking of `conns` is one `caller` may not manage; ids
    /// not held are left to the operation (`unknown_connection`, or `unknown` in a refresh).
    fn check_may_manage(&self, caller: &Caller, conns: &[ConnId]) -> Result<(), Refusal> {
        let foreign: Vec<ConnId> = conns
            .iter()
            .copied()
            .filter(|id| {
                self.conns
                    .get(id)
                    .is_some_and(|c| !caller.may_manage(&c.owner))
            })
            .collect();
        if foreign.is_empty() {
            return Ok(());
        }
        Err(Refusal::new(
            ErrorCode::Forbidden,
            format!(
                "`{}` may not manage connection(s) {foreign:?}: they belong to another principal",
                caller.principal
            ),
        ))
    }

    /// Renews the leases of `conns`; standing reservations need none, best-effort ones cannot be
    /// renewed (they are reported unknown, like released or expired ones).
    fn refresh(&mut self, now: Instant, conns: &[ConnId]) -> Reply {
        let (mut renewed, mut unknown) = (Vec::new(), Vec::new());
        for &id in conns {
            match self.conns.get_mut(&id) {
                Some(c) if c.kind == Kind::Guaranteed => {
                    c.expires = self.config.lease.map(|l| now + l);
                    renewed.push(id);
                }
                Some(c) if c.kind == Kind::Standing => renewed.push(id),
                _ => unknown.push(id),
            }
        }
        Reply::Refreshed { renewed, unknown }
    }

    /// Gives every guaranteed booking that has no lease yet (just admitted, or restored) one
    /// from `now`.
    fn arm_leases(&mut self, now: Instant) {
        let Some(lease) = self.config.lease else {
            return;
        };
        for c in self.conns.values_mut() {
            if c.kind == Kind::Guaranteed && c.expires.is_none() {
                c.expires = Some(now + lease);
            }
        }
    }

    /// Drops the best-effort reservations and the guaranteed bookings whose lease has run out by
    /// `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.arm_leases(now);
        let expired: Vec<ConnId> = self
            .conns
            .iter()
            .filter(|(_, c)| c.expires.is_some_and(|t| t <= now))
            .map(|(&id, _)| id)
            .collect();
        for id in expired {
            // `id` was just read from `self.conns`, so release only fails if the exact
            // arithmetic overflows; the reservation is dropped either way.
            let _ = self.release(id);
        }
    }

    /// When the next best-effort reservation or lease expires (now, if a restored booking still
    /// waits for its lease).
    pub fn poll_timeout(&self) -> Option<Instant> {
        let unarmed = self.config.lease.is_some()
            && self
                .conns
                .values()
                .any(|c| c.kind == Kind::Guaranteed && c.expires.is_none());
        if unarmed {
            return Some(Instant::ZERO);
        }
        self.conns.values().filter_map(|c| c.expires).min()
    }

    /// The changes of the guaranteed bookings since the last call (or [`Manager::take_changed`]),
    /// in order: what a journal appends. Empty after a [`Manager::restore`] that dropped
    /// bookings, which only [`Manager::take_changed`] reports — persist a whole snapshot then.
    pub fn take_changes(&mut self) -> Vec<Change> {
        self.changed = false;
        std::mem::take(&mut self.changes)
    }

    /// True (once) if the guaranteed bookings changed since the last call (or
    /// [`Manager::take_changes`]): persist a snapshot then.
    pub fn take_changed(&mut self) -> bool {
        self.changes.clear();
        std::mem::take(&mut self.changed)
    }

    /// The state to persist.
    pub fn snapshot(&self) -> State {
        State {
            version: 1,
            next_conn: self.next_conn,
            bookings: self
                .conns
                .iter()
                .filter(|(_, c)| c.kind == Kind::Guaranteed)
                .filter_map(|(&conn, c)| {
                    c.spec.clone().map(|spec| Booking {
                        conn,
                        spec,
                        owner: c.owner.clone(),
                    })
                })
                .collect(),
        }
    }

    /// Re-admits persisted bookings (with every check, in their order, keeping their ids).
    /// Returns the ones refused now (e.g. after a topology change) with the reason. All of them
    /// are first tried together (one settle of the network, then every check: a restart with
    /// 10,000 bookings takes a fraction of a second instead of 10,000 admissions); only if that
    /// fails are they admitted one by one to find the ones that no longer fit.
    pub fn restore(&mut self, state: State) -> Vec<(ConnId, Response)> {
        let mut refused = Vec::new();
        self.next_conn = self.next_conn.max(state.next_conn);
        for b in &state.bookings {
            self.next_conn = self.next_conn.max(b.conn.saturating_add(1));
        }
        // Bookings across rtlan switches were signalled per hop (nothing else is admitted
        // there); they do not touch the ledger and are re-admitted one by one, cheaply.
        let (rt, fifo): (Vec<Booking>, Vec<Booking>) = state
            .bookings
            .into_iter()
            .partition(|b| self.crosses_rt(&b.spec));
        let together = self.restore_together(&fifo);
        let one_by_one = if together { Vec::new() } else { fifo };
        for b in one_by_one.into_iter().chain(rt) {
            if let Err(r) = self.admit(Some(b.conn), b.spec, true, &b.owner) {
                refused.push((b.conn, Response::new(None, r.into_reply())));
            }
        }
        self.changed = !refused.is_empty();
        refused
    }

    /// Whether the path of `spec` crosses an rtlan real-time switch.
    fn crosses_rt(&self, spec: &ConnSpec) -> bool {
        let (Ok(src), Ok(dst)) = (self.host(&spec.src), self.host(&spec.dst)) else {
            return false;
        };
        self.graph
            .route(src, dst)
            .is_some_and(|(_, ports)| ports.iter().any(|&p| self.rt.is_rt(p)))
    }

    /// Books every one of `bookings` or none (see [`Manager::restore`]); true if booked.
    fn restore_together(&mut self, bookings: &[Booking]) -> bool {
        let mut conns = Vec::with_capacity(bookings.len());
        let mut ids = BTreeSet::new();
        let mut booked = vec![0u64; self.ports.len()];
        for b in bookings {
            if self.conns.contains_key(&b.conn) || !ids.insert(b.conn) {
                return false;
            }
            let mut spec = b.spec.clone();
            let (Ok(src), Ok(dst)) = (self.host(&spec.src), self.host(&spec.dst)) else {
                return false;
            };
            spec.src = self.graph.names[src].clone();
            spec.dst = self.graph.names[dst].clone();
            let Ok(mut conn) = self.guaranteed(&spec, Kind::Guaranteed, true) else {
                return false;
            };
            conn.owner.clone_from(&b.owner);
            for &p in &conn.ports {
                booked[p] = booked[p].saturating_add(conn.rate_bps);
                let ps = &self.ports[p];
                if ps.booked_bps.saturating_add(booked[p]) > ps.rate_bps
                    || conn.rate_bps >= ps.rate_bps
                {
                    return false;
                }
            }
            conns.push((b.conn, conn));
        }
        let mut flows = Vec::with_capacity(conns.len());
        for (id, c) in &conns {
            let spec = ledger::Spec {
                rate: c.tspec.rate,
                max_packet: c.tspec.max_packet,
                burst: c.tspec.bucket,
            };
            let topo = self.ledger.topology();
            let f = ledger::path_flow(
                topo,
                &self.graph,
                *id,
                &c.nodes,
                spec,
                c.host_delay_ns,
                c.requirement_ns,
            );
            match f {
                Ok(f) => flows.push(f),
                Err(_) => return false,
            }
        }
        let Ok(Ok(verdicts)) = self.ledger.try_admit_all(flows) else {
            return false;
        };
        for ((id, conn), v) in conns.into_iter().zip(verdicts) {
            self.commit(id, conn, vec![v.id]);
        }
        true
    }

    /// The current end-to-end delay bound of a connection, ns.
    pub fn delay_bound_ns(&self, conn: ConnId) -> Option<u64> {
        self.conns
            .get(&conn)
            .and_then(|c| self.bound(c))
            .map(ledger::ceil_ns)
    }

    /// The exact end-to-end bound of a connection or standing reservation (s).
    fn bound(&self, c: &Conn) -> Option<Q> {
        if c.kind == Kind::BestEffort {
            return None;
        }
        if let Some(rt) = &c.rt {
            return Some(ledger::q_nanos(rt.bound_ns));
        }
        self.ledger.flow_bound(*c.flows.first()?)
    }

    /// Admits `spec` as `id` (or the next id), owned by `owner`; `per_hop`: the client also
    /// signals it through the rtlan switches.
    fn admit(
        &mut self,
        id: Option<ConnId>,
        mut spec: ConnSpec,
        per_hop: bool,
        owner: &str,
    ) -> Result<ConnId, Refusal> {
        // Hosts may be named by address; bookings (and the state file) keep the names.
        spec.src = self.graph.names[self.host(&spec.src)?].clone();
        spec.dst = self.graph.names[self.host(&spec.dst)?].clone();
        let mut conn = self.guaranteed(&spec, Kind::Guaranteed, per_hop)?;
        conn.owner = owner.to_string();
        let id = match id {
            Some(id) if self.conns.contains_key(&id) => {
                return Err(Refusal::new(
                    ErrorCode::BadRequest,
                    format!("connection {id} already exists"),
                ))
            }
            Some(id) => id,
            None => self.next_conn,
        };
        self.book(id, conn)?;
        self.next_conn = self.next_conn.max(id.saturating_add(1));
        self.changed = true;
        self.changes.push(Change::Booked(Booking {
            conn: id,
            spec,
            owner: owner.to_string(),
        }));
        Ok(id)
    }

    fn admitted(&self, conn: ConnId) -> Reply {
        // Invariant: called right after `admit` booked `conn`.
        let c = &self.conns[&conn];
        Reply::Admitted {
            conn,
            path: self.names(&c.nodes),
            delay_bound_us: self.bound(c).map_or(u64::MAX, ledger::ceil_us),
            lease_us: self
                .config
                .lease
                .map(|l| u64::try_from(l.as_micros()).unwrap_or(u64::MAX)),
        }
    }

    fn best_effort(
        &mut self,
        now: Instant,
        spec: BestEffortSpec,
        owner: &str,
    ) -> Result<Reply, Refusal> {
        if self.rt.any() {
            return Err(Refusal::new(
                ErrorCode::Refused,
                "best-effort reservations cannot be booked on a network with rtlan real-time \
                 switches: they are not signalled per hop, so their frames are non-real-time \
                 there",
            ));
        }
        let src = self.host(&spec.src)?;
        let tspec = make_tspec(
            spec.rate_bps,
            spec.max_packet,
            spec.shaping_interval_us,
            spec.burst_bytes,
        )?;
        let ports = (0..self.ports.len())
            .filter(|&p| self.graph.ports[p].to != src)
            .collect();
        let ttl = self.config.best_effort_ttl;
        let conn = Conn {
            kind: Kind::BestEffort,
            src,
            dst: None,
            rate_bps: spec.rate_bps,
            max_packet: spec.max_packet,
            tspec,
            nodes: Vec::new(),
            ports,
            requirement_ns: None,
            host_delay_ns: 0,
            flows: Vec::new(),
            rt: None,
            expires: Some(now + ttl),
            spec: None,
            owner: owner.to_string(),
        };
        let id = self.next_conn;
        self.book(id, conn)?;
        self.next_conn += 1;
        Ok(Reply::BestEffort {
            conn: id,
            expires_in_us: u64::try_from(ttl.as_micros()).unwrap_or(u64::MAX),
        })
    }

    /// A host by name, or by the IPv4 address its `[[host]]` table gives.
    fn host(&self, name: &str) -> Result<usize, Refusal> {
        let by_ip = || {
            let ip: std::net::Ipv4Addr = name.parse().ok()?;
            let h = self.topo.hosts.iter().find(|h| h.ip == ip)?;
            self.graph.host(&h.name)
        };
        self.graph.host(name).or_else(by_ip).ok_or_else(|| {
            Refusal::new(
                ErrorCode::UnknownHost,
                format!("`{name}` is not a host of the topology (by name or address)"),
            )
        })
    }

    /// A guaranteed (or standing) connection from a spec, routed but not booked; across rtlan
    /// real-time switches with its hops and bound (`per_hop`: the client signals it there).
    fn guaranteed(&self, spec: &ConnSpec, kind: Kind, per_hop: bool) -> Result<Conn, Refusal> {
        let src = self.host(&spec.src)?;
        let dst = self.host(&spec.dst)?;
        let tspec = make_tspec(
            spec.rate_bps,
            spec.max_packet,
            spec.shaping_interval_us,
            spec.burst_bytes,
        )?;
        let (nodes, ports) = self.graph.route(src, dst).ok_or_else(|| {
            Refusal::new(
                ErrorCode::NoPath,
                format!("no path from `{}` to `{}`", spec.src, spec.dst),
            )
        })?;
        let host_delay_ns = match spec.host_delay_us {
            Some(us) => us.saturating_mul(1000),
            None => u64::try_from(self.config.host_delay.as_nanos()).unwrap_or(u64::MAX),
        };
        let rt = self.rt_path(spec, &tspec, &nodes, &ports, per_hop, host_delay_ns)?;
        Ok(Conn {
            kind,
            src,
            dst: Some(dst),
            rate_bps: spec.rate_bps,
            max_packet: spec.max_packet,
            tspec,
            nodes,
            ports,
            requirement_ns: spec.delay_us.map(|us| us.saturating_mul(1000)),
            host_delay_ns,
            flows: Vec::new(),
            rt,
            expires: None,
            spec: (kind == Kind::Guaranteed).then(|| spec.clone()),
            owner: ANONYMOUS.to_string(),
        })
    }

    /// Checks every admission rule for `conn` and books it as `id`, or refuses with every
    /// violated constraint and changes nothing.
    fn book(&mut self, id: ConnId, conn: Conn) -> Result<(), Refusal> {
        if let Some(path) = &conn.rt {
            return self.book_rt(id, conn.clone(), path);
        }
        // Rule 1 on the manager's integer rates (so the ledger sees only admissible rates).
        let mut violations = Vec::new();
        for &p in &conn.ports {
            let ps = &self.ports[p];
            let booked = ps.booked_bps.saturating_add(conn.rate_bps);
            if booked > ps.rate_bps || conn.rate_bps >= ps.rate_bps {
                violations.push(self.capacity(p, booked));
            }
        }
        if !violations.is_empty() {
            return Err(refused(violations));
        }
        // Rules 2–4 with burst propagation: the ledger.
        let spec = ledger::Spec {
            rate: conn.tspec.rate,
            max_packet: conn.tspec.max_packet,
            burst: conn.tspec.bucket,
        };
        let flows = if conn.kind == Kind::BestEffort {
            conn.ports
                .iter()
                .map(|&p| {
                    let pid = self.graph.ports[p];
                    ledger::port_flow(id, pid.switch, pid.to, self.ports[p].peak_bps, spec)
                })
                .collect()
        } else {
            vec![ledger::path_flow(
                self.ledger.topology(),
                &self.graph,
                id,
                &conn.nodes,
                spec,
                conn.host_delay_ns,
                conn.requirement_ns,
            )
            .map_err(arith)?]
        };
        let mut admitted = Vec::new();
        let mut failure = None;
        for f in flows {
            match self.ledger.try_admit(f) {
                Ok(Ok(verdict)) => admitted.push(verdict.id),
                Ok(Err(refusal)) => {
                    for v in refusal.violations {
                        match ledger::violation(v, id) {
                            Ok(v) if !violations.contains(&v) => violations.push(v),
                            Ok(_) => {}
                            Err(m) => {
                                failure.get_or_insert_with(|| arith(m));
                            }
                        }
                    }
                }
                Err(e) => {
                    failure = Some(arith(e));
                    break;
                }
            }
        }
        if failure.is_some() || !violations.is_empty() {
            for f in admitted {
                // Only fails on overflow, which admitting the same flow did not hit.
                let _ = self.ledger.release(f);
            }
            return Err(failure.unwrap_or_else(|| refused(violations)));
        }
        self.commit(id, conn, admitted);
        Ok(())
    }

    /// Records connection `id`, admitted by the ledger as `flows`, on its ports.
    fn commit(&mut self, id: ConnId, mut conn: Conn, flows: Vec<u64>) {
        for &p in &conn.ports {
            let ps = &mut self.ports[p];
            ps.conns.insert(id);
            ps.booked_bps += conn.rate_bps;
        }
        conn.flows = flows;
        self.conns.insert(id, conn);
    }

    fn capacity(&self, p: usize, booked: u64) -> Violation {
        let pid = self.graph.ports[p];
        Violation::Capacity {
            switch: self.graph.names[pid.switch].clone(),
            to: self.graph.names[pid.to].clone(),
            rate_bps: booked,
            capacity_bps: self.ports[p].rate_bps,
        }
    }

    fn release(&mut self, id: ConnId) -> Result<(), Refusal> {
        if id >= STANDING_BASE
            && self
                .conns
                .get(&id)
                .is_some_and(|c| c.kind == Kind::Standing)
        {
            return Err(Refusal::new(
                ErrorCode::BadRequest,
                format!("connection {id} is a standing reservation"),
            ));
        }
        let conn = self.conns.remove(&id).ok_or_else(|| {
            Refusal::new(ErrorCode::UnknownConnection, format!("no connection {id}"))
        })?;
        for &p in &conn.ports {
            let ps = &mut self.ports[p];
            ps.conns.remove(&id);
            ps.booked_bps -= conn.rate_bps;
        }
        if let Some(path) = &conn.rt {
            self.rt.release(&path.hops);
        }
        let mut failure = None;
        for &f in &conn.flows {
            if let Err(e) = self.ledger.release(f) {
                failure.get_or_insert_with(|| arith(e));
            }
        }
        if conn.kind == Kind::Guaranteed {
            self.changed = true;
            self.changes.push(Change::Released(id));
        }
        failure.map_or(Ok(()), Err)
    }

    fn names(&self, nodes: &[usize]) -> Vec<String> {
        nodes.iter().map(|&n| self.graph.names[n].clone()).collect()
    }

    /// Every booking, by id.
    pub fn list(&self) -> Vec<ConnInfo> {
        self.list_for(&Caller::anonymous())
    }

    /// The bookings `caller` may manage, by id: a client's own, every one for an operator.
    pub fn list_for(&self, caller: &Caller) -> Vec<ConnInfo> {
        self.conns
            .iter()
            .filter(|(_, c)| caller.may_manage(&c.owner))
            .map(|(&conn, c)| ConnInfo {
                conn,
                kind: c.kind,
                src: self.graph.names[c.src].clone(),
                dst: c.dst.map(|d| self.graph.names[d].clone()),
                rate_bps: c.rate_bps,
                max_packet: c.max_packet,
                bucket_bytes: c
                    .tspec
                    .bucket
                    .ceil_bytes()
                    .ok()
                    .and_then(|b| u64::try_from(b).ok())
                    .unwrap_or(u64::MAX),
                delay_us: c.requirement_ns.map(port::ceil_us),
                delay_bound_us: self.bound(c).map(ledger::ceil_us),
                path: self.names(&c.nodes),
                owner: c.owner.clone(),
            })
            .collect()
    }

    fn topology_reply(&self) -> Result<Reply, Refusal> {
        let report = self.ledger.report().map_err(arith)?;
        let mut bounds = vec![(0u64, 0u64); self.ports.len()];
        for pr in &report.ports {
            let found = self
                .graph
                .ports
                .iter()
                .position(|pid| pid.switch == pr.key.switch && pid.to == pr.key.to);
            if let Some(p) = found {
                bounds[p] = (
                    pr.backlog_bound.map_or(u64::MAX, ledger::ceil_bytes),
                    pr.delay_bound.map_or(u64::MAX, ledger::ceil_us),
                );
            }
        }
        // Ports of rtlan switches: Σ queues (backlog bounds) and the largest θ of the
        // connections crossing them.
        for hop in self
            .conns
            .values()
            .filter_map(|c| c.rt.as_ref())
            .flat_map(|r| &r.hops)
        {
            let (backlog, delay) = &mut bounds[hop.port];
            *backlog = backlog.saturating_add(u64::try_from(hop.queue_bytes).unwrap_or(u64::MAX));
            *delay = (*delay).max(port::ceil_us(hop.latency_ns));
        }
        let ports = self
            .ports
            .iter()
            .zip(&self.graph.ports)
            .zip(&bounds)
            .enumerate()
            .map(|(p, ((ps, pid), &(backlog, delay)))| PortInfo {
                switch: self.graph.names[pid.switch].clone(),
                to: self.graph.names[pid.to].clone(),
                rate_bps: ps.rate_bps,
                connections: ps.conns.len(),
                booked_bps: self.rt.booked_bps(p).unwrap_or(ps.booked_bps),
                backlog_bound_bytes: backlog,
                delay_bound_us: delay,
            })
            .collect();
        let switches = self
            .topo
            .switches
            .iter()
            .map(|s| SwitchInfo {
                name: s.name.clone(),
                buffer_bytes: s.buffer_bytes,
                booked_bytes: self
                    .graph
                    .ports
                    .iter()
                    .zip(&bounds)
                    .filter(|(pid, _)| self.graph.names[pid.switch] == s.name)
                    .map(|(_, b)| b.0)
                    .fold(0, u64::saturating_add),
            })
            .collect();
        Ok(Reply::Topology {
            topology: self.topo.clone(),
            ports,
            switches,
        })
    }
}

fn refused(violations: Vec<Violation>) -> Refusal {
    let message = format!(
        "admission refused: {} constraint(s) violated",
        violations.len()
    );
    Refusal {
        code: ErrorCode::Refused,
        message,
        violations,
    }
}

/// The T-SPEC a request describes (bits, bit/s), validated.
fn make_tspec(
    rate_bps: u64,
    max_packet: u64,
    shaping_interval_us: Option<u64>,
    burst_bytes: Option<u64>,
) -> Result<Tspec, Refusal> {
    let bad = |m: &str| Refusal::new(ErrorCode::BadRequest, m);
    if rate_bps == 0 {
        return Err(bad("rate_bps must be positive"));
    }
    if max_packet == 0 {
        return Err(bad("max_packet must be positive"));
    }
    let m = q_int(max_packet).mul(Q::int(8)).map_err(arith)?;
    let r = q_int(rate_bps);
    match (shaping_interval_us, burst_bytes) {
        (Some(ts), None) => {
            let ts = Q::new(i128::from(ts), 1_000_000).map_err(arith)?;
            Tspec::with_shaping_interval(m, r, ts).map_err(arith)
        }
        (None, Some(b)) if b >= max_packet => Ok(Tspec {
            max_packet: m,
            rate: r,
            bucket: q_int(b).mul(Q::int(8)).map_err(arith)?,
        }),
        (None, Some(_)) => Err(bad("burst_bytes must be at least max_packet")),
        _ => Err(bad(
            "give exactly one of shaping_interval_us and burst_bytes",
        )),
    }
}
