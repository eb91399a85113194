//! The RTCD state machine (EtheReal §2.2 connection setup and teardown from the host side, §2.3
//! local admission, §3.2 proxy IP/MAC installation, orphan reclaim).

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::net::Ipv4Addr;
use std::time::Duration;

use rtlan_wire::control::{
    DelayTlv, EpochTlv, FailReason, HelloRepr, Message, Packet, Repr, Role, SetupRepr,
    TeardownReason, FLAG_RETRANSMISSION,
};

use super::alloc::IdAllocator;
use super::api::{
    Action, ClientId, ConnHandle, ConnInfo, ConnPhase, DaemonShaping, ManagerRequest, Reply,
    Request,
};
use super::host;
use super::{Admission, Config, RtcdError};
use crate::time::Instant;
use crate::timer::{TimerKind, TimerTable};

mod auth;
mod central;
mod link;
mod rsvp;

/// One connection of the host's link, from SETUP until TEARDOWN_ACK (or giving up).
#[derive(Debug, Clone)]
struct Conn {
    handle: ConnHandle,
    client: ClientId,
    /// Tag of the client's Open request, echoed in the Opened/Failed reply.
    open_tag: u64,
    setup: SetupRepr,
    /// Whether the daemon shapes this connection in the kernel.
    shaping: DaemonShaping,
    phase: ConnPhase,
    /// Request id of the outstanding SETUP (Opening) or TEARDOWN (Closing).
    request_id: u32,
    /// Transmissions of the outstanding request so far.
    attempts: u8,
    /// When to retransmit or give up; `None` while Open. Mirrored in [`Rtcd`]'s deadline index:
    /// change it only through `Rtcd::set_deadline`.
    deadline: Option<Instant>,
    /// Central-only admission: no switch state, frames go to the receiver's own address.
    direct: bool,
    /// The manager's booking, while it holds one for this connection.
    manager_conn: Option<u64>,
    /// The manager's end-to-end delay bound, µs.
    delay_bound_us: Option<u64>,
    /// The end-to-end delay the client requires, µs (carried in the SETUP's DELAY TLV).
    required_delay_us: Option<u64>,
    /// The switches' end-to-end delay bound from SETUP_OK's BOUND TLV, µs (rounded up).
    path_bound_us: Option<u64>,
    /// Whether its proxy entry (neighbour, route share, kernel shaper) is installed.
    published: bool,
    /// Set while the connection is signalled again after the path lost it (the TEARDOWN's
    /// reason); the client got [`Reply::Interrupted`].
    recovering: Option<TeardownReason>,
    /// Switches on the path, from the last SETUP_OK.
    hops: u8,
    /// While re-signalled after a topology change: until when a refusal (NO_ROUTE) is retried,
    /// and how many retries so far (for the backoff).
    retry_until: Option<(Instant, u8)>,
    /// Signalled with RSVP (`signalling = "rsvp"`) rather than SETUP.
    rsvp: bool,
}

impl Conn {
    /// The end-to-end delay bound the path guarantees, µs: the switches' (they enforce it), or
    /// the manager's without switch state; under both admissions the larger of the two.
    fn bound_us(&self) -> Option<u64> {
        match (self.path_bound_us, self.delay_bound_us) {
            (Some(path), Some(manager)) => Some(path.max(manager)),
            (path, manager) => path.or(manager),
        }
    }
}

/// The host daemon core.
///
/// Driver call order (quinn-proto style, STYLE.md §2):
/// 1. [`Rtcd::new`] once with the start time.
/// 2. On each input, call the matching `handle_*` with the current time: a client's request
///    ([`Rtcd::handle_client_request`]), a client's socket closing ([`Rtcd::handle_client_gone`]),
///    a control frame from the link ([`Rtcd::handle_control_frame`] with its source MAC and
///    Ethernet payload — the only one that accepts frames when the daemon has keys —,
///    [`Rtcd::handle_control_payload`] with the payload alone, or [`Rtcd::handle_control`] with
///    a parsed, trusted message), the answer to [`Action::CheckPids`]
///    ([`Rtcd::handle_dead_pids`]), or the timer firing ([`Rtcd::handle_timeout`]).
///    Under central admission, also the manager's answer to each [`Action::ManagerAdmit`]
///    ([`Rtcd::handle_manager_answer`]).
/// 3. Then drain [`Rtcd::poll_action`] until `None`, performing each action in order.
/// 4. Then arm the timer at [`Rtcd::poll_timeout`] (always `Some`: the reclaim period ticks).
#[derive(Debug)]
pub struct Rtcd {
    config: Config,
    ids: IdAllocator,
    conns: BTreeMap<u16, Conn>,
    handles: HashMap<ConnHandle, u16>,
    clients: BTreeMap<ClientId, u32>,
    /// Who each client is, as the shell found out ([`Rtcd::set_principal`]), for the policy.
    principals: BTreeMap<ClientId, super::policy::Principal>,
    next_handle: u64,
    next_request_id: u32,
    /// The first switch's boot epoch, once heard: a new one means it restarted.
    switch_epoch: Option<u64>,
    /// Sequence number of the next HELLO.
    hello_seq: u32,
    /// Whether the host's own interface has its carrier ([`Rtcd::handle_link`]).
    link_up: bool,
    reserved_bps: u64,
    /// Open connections with a proxy IP (per-hop or `both`): the route goes with the last one.
    open_count: usize,
    route_installed: bool,
    /// Node-level timers: the REFRESH round (armed only when refresh is enabled) and the PID
    /// reclaim check (always armed).
    timers: TimerTable<RtcdTimer, 2>,
    /// Every connection's retransmission deadline, earliest first: `poll_timeout` reads the
    /// first, `handle_timeout` the due prefix, neither scans the connections.
    deadlines: BTreeSet<(Instant, u16)>,
    actions: VecDeque<Action>,
    /// Signs what the daemon sends and checks what it receives when it has keys (`auth.rs`).
    auth: crate::auth::Authenticator,
    /// The host side of RSVP (`signalling = "rsvp"`, `rsvp.rs`).
    rsvp: Option<crate::rsvp::Rsvp>,
}

/// The daemon's node-level timers, in the order [`Rtcd::handle_timeout`] runs them when due
/// together (after the per-connection retransmissions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RtcdTimer {
    /// The next round of REFRESHes for the open connections.
    Refresh,
    /// The next check of the clients' PIDs.
    Reclaim,
}

impl TimerKind for RtcdTimer {
    const ALL: &'static [RtcdTimer] = &[RtcdTimer::Refresh, RtcdTimer::Reclaim];

    fn index(self) -> usize {
        self as usize
    }
}

impl Rtcd {
    /// A daemon with no clients and no connections; [`RtcdError::Config`] if `config` is
    /// inconsistent (zero link rate, retransmit timeout or reclaim period, no attempts, cap above
    /// 100 %, a lateness budget above the host delay, or a proxy prefix/MAC plan leaving no
    /// connection id).
    pub fn new(config: Config, now: Instant) -> Result<Rtcd, RtcdError> {
        if config.link_rate_bps == 0 {
            return Err(RtcdError::Config("link rate must be non-zero"));
        }
        if config.max_attempts == 0 {
            return Err(RtcdError::Config("max_attempts must be at least 1"));
        }
        if config.realtime_cap_percent > 100 {
            return Err(RtcdError::Config("real-time cap must be at most 100 %"));
        }
        if config.retransmit_initial.is_zero() || config.reclaim_period.is_zero() {
            return Err(RtcdError::Config("timeouts must be non-zero"));
        }
        if config.lateness_budget > config.host_delay {
            return Err(RtcdError::Config(
                "lateness_budget must not exceed host_delay (it is part of it)",
            ));
        }
        if config.plan.reserved == 0 {
            return Err(RtcdError::Config("the plan must reserve the control id 0"));
        }
        // Last usable host number: all-ones is the prefix's broadcast address (and, for a /16 in
        // paper mode, id 0xffff would be the broadcast MAC).
        let host_max = (1u64 << (32 - u32::from(config.proxy_prefix.prefix_len()))) - 2;
        let last = u16::try_from(host_max.min(0xfffe)).unwrap_or(0xfffe);
        let first = config.plan.reserved;
        if first > last {
            return Err(RtcdError::Config(
                "proxy prefix too small for the plan's ids",
            ));
        }
        let config_epoch = config.epoch;
        let mut timers = TimerTable::new();
        timers.set(RtcdTimer::Reclaim, now + config.reclaim_period);
        if !config.refresh_period.is_zero() {
            timers.set(RtcdTimer::Refresh, now + config.refresh_period);
        }
        let rsvp = (config.signalling == super::Signalling::Rsvp).then(|| {
            let mut c = crate::rsvp::RsvpConfig::new(crate::rsvp::Role::Host, vec![config.host_ip]);
            c.refresh = config.rsvp_refresh;
            c.seed = config.epoch;
            crate::rsvp::Rsvp::new(c)
        });
        let mut rtcd = Rtcd {
            rsvp,
            timers,
            deadlines: BTreeSet::new(),
            ids: IdAllocator::new(first, last),
            auth: auth::authenticator(&config, now),
            config,
            conns: BTreeMap::new(),
            handles: HashMap::new(),
            clients: BTreeMap::new(),
            principals: BTreeMap::new(),
            next_handle: 1,
            // Request ids start where the epoch says: a late answer to the previous start's
            // request matches nothing.
            next_request_id: (config_epoch as u32).max(1),
            switch_epoch: None,
            hello_seq: 0,
            link_up: true,
            reserved_bps: 0,
            open_count: 0,
            route_installed: false,
            actions: VecDeque::new(),
        };
        // Announce this start at once: the first switch releases what an earlier start of this
        // daemon left booked (docs/protocol.md §5 "Restarts").
        rtcd.send_hello(now);
        Ok(rtcd)
    }

    /// Sends `repr` to the first switch, with this start's boot epoch, signed at `now` when the
    /// daemon has keys (`auth.rs`).
    fn send(&mut self, now: Instant, mut repr: Repr) {
        repr.set_tlv(EpochTlv(self.config.epoch).to_tlv());
        let dst = self.config.plan.control_mac();
        self.send_control(now, dst, repr);
    }

    /// A HELLO (role host daemon): tells the first switch this start's epoch. Under RSVP
    /// signalling there is no first switch (the next hop is a router), so none is sent.
    fn send_hello(&mut self, now: Instant) {
        if self.config.signalling == super::Signalling::Rsvp {
            return;
        }
        let hello = Message::Hello(HelloRepr {
            role: Role::HostDaemon,
            port: 0,
            mac: self.config.host_mac,
            management_ip: self.config.host_ip,
        });
        // A HELLO's request id is the sender's HELLO sequence number (docs/protocol.md §4.5).
        let seq = self.hello_seq;
        self.hello_seq = self.hello_seq.wrapping_add(1);
        self.send(now, Repr::new(0, seq, hello));
    }

    /// The configuration in force.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Connections known (opening, open or closing).
    pub fn connection_count(&self) -> usize {
        self.conns.len()
    }

    /// Connection ids allocated on the host's link.
    pub fn ids_in_use(&self) -> usize {
        self.ids.in_use()
    }

    /// How many connections are in each phase, every phase listed (for the metrics page).
    pub fn phase_counts(&self) -> [(ConnPhase, u64); 4] {
        let mut counts = [
            (ConnPhase::Admitting, 0),
            (ConnPhase::Opening, 0),
            (ConnPhase::Open, 0),
            (ConnPhase::Closing, 0),
        ];
        for conn in self.conns.values() {
            if let Some(c) = counts.iter_mut().find(|(p, _)| *p == conn.phase) {
                c.1 += 1;
            }
        }
        counts
    }

    /// Sum of the rates of opening and open connections, bit/s.
    pub fn reserved_bps(&self) -> u64 {
        self.reserved_bps
    }

    /// The next action for the shell, in order.
    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    /// When [`Rtcd::handle_timeout`] must be called next.
    pub fn poll_timeout(&self) -> Option<Instant> {
        // Always `Some`: the reclaim timer is always armed.
        let retransmit = self.deadlines.first().map(|&(at, _)| at);
        let rsvp = self.rsvp.as_ref().and_then(crate::rsvp::Rsvp::poll_timeout);
        [self.timers.next(), retransmit, rsvp]
            .into_iter()
            .flatten()
            .min()
    }

    /// Sets connection `id`'s retransmission deadline, keeping the deadline index in step.
    fn set_deadline(&mut self, id: u16, deadline: Option<Instant>) {
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        if let Some(old) = conn.deadline {
            self.deadlines.remove(&(old, id));
        }
        conn.deadline = deadline;
        if let Some(new) = deadline {
            self.deadlines.insert((new, id));
        }
    }

    fn reply(&mut self, client: ClientId, tag: u64, reply: Reply) {
        self.actions.push_back(Action::Reply { client, tag, reply });
    }

    fn fail(&mut self, client: ClientId, tag: u64, error: RtcdError) {
        self.reply(client, tag, Reply::Failed { conn: None, error });
    }

    fn fresh_request_id(&mut self) -> u32 {
        let id = self.next_request_id;
        self.next_request_id = self.next_request_id.wrapping_add(1).max(1);
        id
    }

    fn backoff(&self, attempts: u8) -> Duration {
        let doublings = u32::from(attempts.saturating_sub(1)).min(20);
        self.config
            .retransmit_initial
            .saturating_mul(1u32 << doublings)
    }

    /// Tells the core who `client` is (user and groups, from the socket's peer credentials),
    /// for the reservation policy; `None` = unknown (only an `everyone` rule governs it).
    pub fn set_principal(&mut self, client: ClientId, who: Option<super::policy::Principal>) {
        match who {
            Some(who) => self.principals.insert(client, who),
            None => self.principals.remove(&client),
        };
    }

    /// Replaces the reservation policy (a reload): it governs every later `open`; connections
    /// already open stay.
    pub fn set_policy(&mut self, policy: super::policy::Policy) {
        self.config.policy = policy;
    }

    /// What the reservation policy says of `client` asking for `rate_bps` more.
    fn check_policy(&self, client: ClientId, rate_bps: u64) -> Result<(), RtcdError> {
        let policy = &self.config.policy;
        if policy.is_empty() {
            return Ok(());
        }
        let held = |rule: usize| {
            self.conns
                .values()
                .filter(|c| {
                    self.principals
                        .get(&c.client)
                        .and_then(|p| policy.rule_for(p))
                        == Some(rule)
                })
                .fold((0u64, 0u32), |(bps, n), c| {
                    (bps.saturating_add(c.setup.rate), n.saturating_add(1))
                })
        };
        Ok(policy.check(self.principals.get(&client), rate_bps, held)?)
    }

    /// Handles one request of `client`; `tag` is echoed in every reply to it.
    pub fn handle_client_request(
        &mut self,
        now: Instant,
        client: ClientId,
        tag: u64,
        request: Request,
    ) {
        if let Request::Register { pid } = request {
            self.clients.insert(client, pid);
            self.reply(client, tag, Reply::Registered { pid });
            return;
        }
        // Listing changes nothing: an operator's tool (`list` with `all`) need not register.
        if !self.clients.contains_key(&client) && !matches!(request, Request::List { .. }) {
            self.fail(client, tag, RtcdError::NotRegistered);
            return;
        }
        match request {
            Request::Register { .. } => {}
            Request::Open {
                dst_ip,
                dst_port,
                src_port,
                rate_bps,
                max_burst,
                max_packet,
                shaping,
                delay_us,
            } => {
                let setup = SetupRepr {
                    src_ip: self.config.host_ip,
                    dst_ip,
                    dst_port,
                    src_port,
                    rate: rate_bps,
                    max_burst,
                    max_packet,
                    connection_id: 0,
                    hop_limit: self.config.hop_limit,
                };
                if let Err(error) = self
                    .check_policy(client, rate_bps)
                    .and_then(|()| self.open(now, client, tag, setup, shaping, delay_us))
                {
                    self.fail(client, tag, error);
                }
            }
            Request::Close { conn } => match self.close(now, client, conn) {
                Ok(()) => self.reply(client, tag, Reply::Closed { conn }),
                Err(error) => self.reply(
                    client,
                    tag,
                    Reply::Failed {
                        conn: Some(conn),
                        error,
                    },
                ),
            },
            Request::List { all } => {
                let list = self
                    .conns
                    .iter()
                    .filter(|(_, c)| all || c.client == client)
                    .map(|(&id, c)| ConnInfo {
                        conn: c.handle,
                        id,
                        proxy_ip: if c.direct {
                            c.setup.dst_ip
                        } else {
                            self.config.proxy_prefix.ip_for(id)
                        },
                        dst_ip: c.setup.dst_ip,
                        dst_port: c.setup.dst_port,
                        src_port: c.setup.src_port,
                        rate_bps: c.setup.rate,
                        phase: c.phase,
                        delay_bound_us: c.bound_us(),
                        owner_pid: self.clients.get(&c.client).copied(),
                    })
                    .collect();
                self.reply(client, tag, Reply::List(list));
            }
        }
    }

    fn open(
        &mut self,
        now: Instant,
        client: ClientId,
        tag: u64,
        mut setup: SetupRepr,
        shaping: DaemonShaping,
        delay_us: Option<u64>,
    ) -> Result<(), RtcdError> {
        if setup.rate == 0 {
            return Err(RtcdError::Malformed("rate must be non-zero"));
        }
        if setup.max_packet == 0 {
            return Err(RtcdError::Malformed("max_packet must be non-zero"));
        }
        if setup.max_burst < u32::from(setup.max_packet) {
            return Err(RtcdError::Malformed(
                "max_burst must be at least max_packet",
            ));
        }
        if setup.dst_port == 0 {
            return Err(RtcdError::Malformed("dst_port must be non-zero"));
        }
        if setup.dst_ip.is_unspecified()
            || setup.dst_ip.is_broadcast()
            || setup.dst_ip.is_multicast()
            || self.config.proxy_prefix.contains(setup.dst_ip)
        {
            return Err(RtcdError::Malformed(
                "dst_ip must be a unicast host address",
            ));
        }
        let available = self
            .config
            .realtime_capacity()
            .saturating_sub(self.reserved_bps);
        if setup.rate > available {
            return Err(RtcdError::LocalAdmission {
                requested: setup.rate,
                available,
            });
        }
        let admission = self.config.admission;
        if admission != Admission::Central {
            self.check_host_term(&setup)?;
        }
        let id = self.ids.allocate().ok_or(RtcdError::IdsExhausted)?;
        setup.connection_id = id;
        let handle = ConnHandle(self.next_handle);
        self.next_handle += 1;
        let request_id = self.fresh_request_id();
        self.reserved_bps += setup.rate;
        self.handles.insert(handle, id);
        let rsvp = self.config.signalling == super::Signalling::Rsvp;
        let phase = match admission {
            _ if rsvp => ConnPhase::Opening,
            Admission::Local => ConnPhase::Opening,
            Admission::Central | Admission::Both => ConnPhase::Admitting,
        };
        self.conns.insert(
            id,
            Conn {
                handle,
                client,
                open_tag: tag,
                setup,
                shaping,
                phase,
                request_id,
                attempts: 0,
                deadline: None,
                direct: rsvp || admission == Admission::Central,
                manager_conn: None,
                delay_bound_us: None,
                required_delay_us: delay_us,
                path_bound_us: None,
                published: false,
                recovering: None,
                hops: 0,
                retry_until: None,
                rsvp,
            },
        );
        if rsvp {
            self.open_rsvp(now, id);
        } else if phase == ConnPhase::Admitting {
            let request = ManagerRequest {
                src_ip: self.config.host_ip,
                dst_ip: setup.dst_ip,
                rate_bps: setup.rate,
                max_packet: setup.max_packet,
                burst_bytes: setup.max_burst,
                delay_us,
                // Under `both` the switches' bound starts with the host's term: the manager's
                // must too. Central-only keeps the manager's own `t_os` (Löser/Härtig §3.2).
                host_delay_us: (admission == Admission::Both)
                    .then(|| self.config.host_delay_ns() / 1000),
                per_hop: admission == Admission::Both,
            };
            self.actions.push_back(Action::ManagerAdmit {
                conn: handle,
                request,
            });
        } else {
            self.transmit(now, id);
        }
        Ok(())
    }

    /// Refuses `setup` when the host's reserved queue, with it and every connection the host
    /// holds, could keep a frame of any of them longer than `host_delay` (lateness included;
    /// `host.rs`).
    fn check_host_term(&self, setup: &SetupRepr) -> Result<(), RtcdError> {
        let malformed = RtcdError::Malformed("rate, burst and max_packet give no wire T-SPEC");
        let mut flows = Vec::with_capacity(self.conns.len() + 1);
        flows.push(host::tspec(setup).ok_or(malformed)?);
        for conn in self.conns.values() {
            if conn.phase != ConnPhase::Closing && !conn.direct {
                // An admitted SETUP always converts (it was checked when it opened).
                flows.extend(host::tspec(&conn.setup));
            }
        }
        let lateness_ns = u64::try_from(self.config.lateness_budget.as_nanos()).unwrap_or(u64::MAX);
        let needed_ns = host::queue_delay_ns(&flows, self.config.link_rate_bps)
            .map(|q| q.saturating_add(lateness_ns));
        let budget_ns = self.config.host_delay_ns();
        match needed_ns {
            Some(needed) if needed <= budget_ns => Ok(()),
            _ => Err(RtcdError::HostDelay {
                needed_us: needed_ns.map_or(u64::MAX, |n| n.div_ceil(1000)),
                budget_us: budget_ns / 1000,
            }),
        }
    }

    /// Sends (or resends) the outstanding request of connection `id` and arms its deadline.
    fn transmit(&mut self, now: Instant, id: u16) {
        let Some(conn) = self.conns.get(&id) else {
            return;
        };
        let message = match conn.phase {
            ConnPhase::Opening => Message::Setup(conn.setup),
            ConnPhase::Closing => Message::Teardown { connection_id: id },
            ConnPhase::Open | ConnPhase::Admitting => return,
        };
        let mut repr = Repr::new(0, conn.request_id, message);
        if conn.phase == ConnPhase::Opening {
            // Delay in the signalling (docs/protocol.md §6): what the client requires, and the
            // latency so far — the host's own queue (`host.rs`); the hops add theirs. The
            // sender's own jitter is part of its declared burst.
            let delay = DelayTlv {
                required_ns: conn.required_delay_us.unwrap_or(0).saturating_mul(1000),
                accumulated_ns: self.config.host_delay_ns(),
            };
            repr.set_tlv(delay.to_tlv());
        }
        if conn.attempts > 0 {
            repr.flags |= FLAG_RETRANSMISSION;
        }
        let attempts = conn.attempts.saturating_add(1);
        let deadline = now + self.backoff(attempts);
        if let Some(conn) = self.conns.get_mut(&id) {
            conn.attempts = attempts;
        }
        self.set_deadline(id, Some(deadline));
        self.send(now, repr);
    }

    /// Forgets connection `id` and frees its id (and with it the proxy IP), and its booking at
    /// the manager.
    fn release(&mut self, id: u16) -> Option<Conn> {
        self.release_at_manager(id);
        self.set_deadline(id, None);
        let conn = self.conns.remove(&id)?;
        self.ids.release(id);
        self.handles.remove(&conn.handle);
        if conn.phase != ConnPhase::Closing {
            self.reserved_bps = self.reserved_bps.saturating_sub(conn.setup.rate);
        }
        if conn.published {
            self.unpublish(id, conn.shaping, conn.direct, conn.setup.dst_ip);
        }
        if conn.rsvp {
            let s = conn.setup;
            self.close_rsvp(s.dst_ip, s.dst_port, s.src_port);
        }
        Some(conn)
    }

    /// An admitted connection becomes usable: kernel shaper, neighbour entry and route (not for
    /// direct connections, which send plainly to the receiver), then the client's reply.
    fn publish(&mut self, id: u16, hops: u8) {
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        conn.published = true;
        let (client, tag, handle) = (conn.client, conn.open_tag, conn.handle);
        let (shaping, setup, direct) = (conn.shaping, conn.setup, conn.direct);
        let delay_bound_us = conn.bound_us();
        let (proxy_ip, proxy_mac) = if direct {
            (setup.dst_ip, None)
        } else {
            let ip = self.config.proxy_prefix.ip_for(id);
            (ip, Some(self.config.plan.mac_for(id)))
        };
        if shaping == DaemonShaping::Kernel {
            self.actions.push_back(Action::InstallShaper {
                id,
                proxy_ip,
                dst_port: direct.then_some(setup.dst_port),
                rate_bps: setup.rate,
                max_burst: setup.max_burst,
                max_packet: setup.max_packet,
            });
        }
        if let Some(proxy_mac) = proxy_mac {
            self.open_count += 1;
            self.actions.push_back(Action::InstallNeighbour {
                proxy_ip,
                proxy_mac,
            });
            if !self.route_installed {
                self.route_installed = true;
                let prefix = self.config.proxy_prefix;
                self.actions.push_back(Action::InstallRoute { prefix });
            }
        }
        let reply = Reply::Opened {
            conn: handle,
            proxy_ip,
            proxy_mac,
            id,
            hops,
            delay_bound_us,
        };
        self.reply(client, tag, reply);
    }

    /// Removes the neighbour entry of an open connection, and the route with the last proxied
    /// one.
    fn unpublish(&mut self, id: u16, shaping: DaemonShaping, direct: bool, dst_ip: Ipv4Addr) {
        let proxy_ip = if direct {
            dst_ip
        } else {
            self.config.proxy_prefix.ip_for(id)
        };
        if shaping == DaemonShaping::Kernel {
            self.actions
                .push_back(Action::RemoveShaper { id, proxy_ip });
        }
        if direct {
            return;
        }
        self.actions.push_back(Action::RemoveNeighbour { proxy_ip });
        self.open_count = self.open_count.saturating_sub(1);
        if self.open_count == 0 && self.route_installed {
            self.route_installed = false;
            let prefix = self.config.proxy_prefix;
            self.actions.push_back(Action::RemoveRoute { prefix });
        }
    }

    /// Moves connection `id` to Closing and sends TEARDOWN; an opening connection's client gets
    /// `Failed(Cancelled)` if `notify` is set. The manager's booking is released at once; a
    /// connection the switches never saw (admitting, or direct) is forgotten at once.
    fn begin_teardown(&mut self, now: Instant, id: u16, notify: Option<RtcdError>) {
        let Some(conn) = self.conns.get(&id) else {
            return;
        };
        if conn.phase == ConnPhase::Admitting || conn.direct {
            let open = conn.phase == ConnPhase::Open;
            if let Some(conn) = self.release(id) {
                if let (false, Some(error)) = (open, notify) {
                    let reply = Reply::Failed {
                        conn: Some(conn.handle),
                        error,
                    };
                    self.reply(conn.client, conn.open_tag, reply);
                }
            }
            return;
        }
        self.release_at_manager(id);
        let request_id = self.fresh_request_id();
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        let old = conn.phase;
        if old == ConnPhase::Closing {
            return;
        }
        conn.phase = ConnPhase::Closing;
        conn.request_id = request_id;
        conn.attempts = 0;
        let published = std::mem::take(&mut conn.published);
        let recovering = conn.recovering.take();
        let (client, tag, handle, rate, shaping) = (
            conn.client,
            conn.open_tag,
            conn.handle,
            conn.setup.rate,
            conn.shaping,
        );
        let conn_dst = conn.setup.dst_ip;
        self.reserved_bps = self.reserved_bps.saturating_sub(rate);
        if published {
            self.unpublish(id, shaping, false, conn_dst);
        }
        match (old, recovering, notify) {
            // Signalling it again failed (no answer): the connection is lost.
            (ConnPhase::Opening, Some(reason), Some(error)) if error != RtcdError::Cancelled => {
                let reply = Reply::Revoked {
                    conn: handle,
                    reason,
                    error: Some(error),
                };
                self.reply(client, 0, reply);
            }
            (ConnPhase::Opening | ConnPhase::Admitting, None, Some(error)) => {
                let reply = Reply::Failed {
                    conn: Some(handle),
                    error,
                };
                self.reply(client, tag, reply);
            }
            _ => {}
        }
        self.transmit(now, id);
    }

    fn close(
        &mut self,
        now: Instant,
        client: ClientId,
        handle: ConnHandle,
    ) -> Result<(), RtcdError> {
        let id = *self
            .handles
            .get(&handle)
            .ok_or(RtcdError::UnknownConnection)?;
        let conn = self.conns.get(&id).ok_or(RtcdError::UnknownConnection)?;
        if conn.client != client {
            return Err(RtcdError::NotOwner);
        }
        self.begin_teardown(now, id, Some(RtcdError::Cancelled));
        Ok(())
    }

    /// The client's socket closed: its registration ends and its connections are torn down.
    pub fn handle_client_gone(&mut self, now: Instant, client: ClientId) {
        self.clients.remove(&client);
        self.principals.remove(&client);
        let ids: Vec<u16> = self
            .conns
            .iter()
            .filter(|(_, c)| c.client == client)
            .map(|(&id, _)| id)
            .collect();
        for id in ids {
            self.begin_teardown(now, id, None);
        }
    }

    /// Answer to [`Action::CheckPids`]: clients registered with one of `dead` PIDs are dropped
    /// and their connections torn down as if closed.
    pub fn handle_dead_pids(&mut self, now: Instant, dead: &[u32]) {
        let gone: Vec<ClientId> = self
            .clients
            .iter()
            .filter(|(_, pid)| dead.contains(pid))
            .map(|(&c, _)| c)
            .collect();
        for client in gone {
            self.handle_client_gone(now, client);
        }
    }

    /// Parses a control message (the Ethernet payload of an EtherType 0x88B5 frame) and handles
    /// it; [`RtcdError::Malformed`] (and nothing else happens) if it does not parse. With keys,
    /// every message is refused here: use [`Rtcd::handle_control_frame`], which knows the sender.
    pub fn handle_control_payload(
        &mut self,
        now: Instant,
        payload: &[u8],
    ) -> Result<(), RtcdError> {
        self.refuse_unverified()?;
        let repr = Packet::new_checked(payload)
            .and_then(|p| Repr::parse(&p))
            .map_err(|_| RtcdError::Malformed("control message does not parse"))?;
        self.handle_control(now, &repr);
        Ok(())
    }

    /// Handles a control message from the first switch. Replies that match no outstanding
    /// request (duplicates, late answers) are ignored. (`_now` keeps the call shape of every
    /// `handle_*`; no reply starts a timer today.)
    pub fn handle_control(&mut self, now: Instant, repr: &Repr) {
        self.note_switch_epoch(now, repr);
        match repr.message {
            Message::SetupOk {
                connection_id,
                hops,
            } => {
                // A malformed BOUND cannot reach here (Repr::parse checks its length).
                let bound_ns = repr.bound().ok().flatten().map(|b| b.bound_ns);
                self.on_setup_ok(repr.request_id, connection_id, hops, bound_ns)
            }
            Message::SetupFail {
                reason,
                failed_hop,
                connection_id,
                switch_ip,
            } => {
                if self.outstanding(connection_id, repr.request_id, ConnPhase::Opening) {
                    if reason == FailReason::NoRoute && self.retry_later(now, connection_id) {
                        return;
                    }
                    if let Some(conn) = self.release(connection_id) {
                        let error = RtcdError::Refused {
                            hop: failed_hop,
                            reason,
                            switch_ip,
                        };
                        let (tag, reply) = match conn.recovering {
                            Some(reason) => (
                                0,
                                Reply::Revoked {
                                    conn: conn.handle,
                                    reason,
                                    error: Some(error),
                                },
                            ),
                            None => (
                                conn.open_tag,
                                Reply::Failed {
                                    conn: Some(conn.handle),
                                    error,
                                },
                            ),
                        };
                        self.reply(conn.client, tag, reply);
                    }
                }
            }
            Message::TeardownAck { connection_id } => {
                if self.outstanding(connection_id, repr.request_id, ConnPhase::Closing) {
                    self.release(connection_id);
                }
            }
            Message::Teardown { connection_id } => {
                // A switch that gives no reason predates them: it only ever tore down on expiry.
                let reason = repr.reason().ok().flatten();
                let reason = reason.unwrap_or(TeardownReason::Expired);
                self.on_teardown(now, repr.request_id, connection_id, reason);
            }
            Message::RefreshAck { connection_id } => self.on_refresh_ack(connection_id),
            Message::Setup(_) | Message::Hello(_) | Message::Refresh { .. } => {}
        }
    }

    fn outstanding(&self, id: u16, request_id: u32, phase: ConnPhase) -> bool {
        self.conns
            .get(&id)
            .is_some_and(|c| c.phase == phase && c.request_id == request_id)
    }

    fn on_setup_ok(&mut self, request_id: u32, id: u16, hops: u8, bound_ns: Option<u64>) {
        if !self.outstanding(id, request_id, ConnPhase::Opening) {
            return;
        }
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        conn.phase = ConnPhase::Open;
        conn.hops = hops;
        conn.path_bound_us = bound_ns.map(|ns| ns.div_ceil(1000));
        conn.retry_until = None;
        let recovered = conn.recovering.take().is_some() && conn.published;
        let (client, handle, delay_bound_us) = (conn.client, conn.handle, conn.bound_us());
        self.set_deadline(id, None);
        if recovered {
            let reply = Reply::Recovered {
                conn: handle,
                hops,
                delay_bound_us,
            };
            self.reply(client, 0, reply);
        } else {
            self.publish(id, hops);
        }
    }

    /// Notes the first switch's boot epoch; a new one means it restarted and lost every
    /// connection: each open one is signalled again at once (docs/protocol.md §5 "Restarts").
    fn note_switch_epoch(&mut self, now: Instant, repr: &Repr) {
        let Some(epoch) = repr.epoch().ok().flatten().map(|e| e.0) else {
            return;
        };
        let restarted = self.switch_epoch.is_some_and(|known| known != epoch);
        self.switch_epoch = Some(epoch);
        if !restarted {
            return;
        }
        let open: Vec<u16> = self
            .conns
            .iter()
            .filter(|(_, c)| c.phase == ConnPhase::Open && !c.direct)
            .map(|(&id, _)| id)
            .collect();
        for id in open {
            self.resignal(now, id, TeardownReason::NeighbourRestarted);
        }
    }

    /// A connection re-signalled after a topology change was refused NO_ROUTE: if its retry
    /// window is still open, schedule the next SETUP (fresh request id, backoff doubling from
    /// the retransmission timeout up to [`super::TOPOLOGY_RESIGNAL_GAP`]) and return `true`.
    fn retry_later(&mut self, now: Instant, id: u16) -> bool {
        let request_id = self.fresh_request_id();
        let initial = self.config.retransmit_initial;
        let Some(conn) = self.conns.get_mut(&id) else {
            return false;
        };
        let Some((until, tries)) = conn.retry_until else {
            return false;
        };
        if now >= until {
            return false;
        }
        let tries = tries.saturating_add(1);
        conn.retry_until = Some((until, tries));
        conn.request_id = request_id;
        conn.attempts = 0;
        let doublings = u32::from(tries.saturating_sub(1)).min(20);
        let wait = initial
            .saturating_mul(1u32 << doublings)
            .min(super::TOPOLOGY_RESIGNAL_GAP);
        self.set_deadline(id, Some(now + wait));
        true
    }

    /// Signals open connection `id` again along the path (same connection id, so the same
    /// proxy IP; its neighbour entry and shaper stay), after the path lost it for `reason`.
    fn resignal(&mut self, now: Instant, id: u16, reason: TeardownReason) {
        let request_id = self.fresh_request_id();
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        conn.phase = ConnPhase::Opening;
        // The client heard once, with the first reason, that its connection is interrupted.
        let told = conn.recovering.replace(reason).is_some();
        conn.request_id = request_id;
        conn.attempts = 0;
        // The spanning tree moved the path: until the new one forwards, switches refuse the
        // SETUP (NO_ROUTE); keep asking, with backoff, for as long as the tree may take.
        conn.retry_until = (reason == TeardownReason::TopologyChange)
            .then(|| (now + self.config.topology_resignal, 0));
        let (client, handle) = (conn.client, conn.handle);
        if !told {
            self.reply(
                client,
                0,
                Reply::Interrupted {
                    conn: handle,
                    reason,
                },
            );
        }
        self.transmit(now, id);
    }

    /// Sends REFRESH for every open connection (soft state, `docs/protocol.md` §5). Answers
    /// (REFRESH_ACK) are not awaited: a lost REFRESH is made good by the next round.
    fn send_refreshes(&mut self, now: Instant) {
        let held: Vec<u64> = self.conns.values().filter_map(|c| c.manager_conn).collect();
        if !held.is_empty() {
            self.actions.push_back(Action::ManagerRefresh {
                manager_conns: held,
            });
        }
        if !self.link_up {
            // Nothing reaches the switch; the link coming back sends what is needed.
            return;
        }
        // The HELLO keeps the first switch aware of this start's epoch.
        self.send_hello(now);
        let open: Vec<u16> = self
            .conns
            .iter()
            .filter(|(_, c)| c.phase == ConnPhase::Open && !c.direct)
            .map(|(&id, _)| id)
            .collect();
        for id in open {
            let request_id = self.fresh_request_id();
            self.send(
                now,
                Repr::new(0, request_id, Message::Refresh { connection_id: id }),
            );
        }
    }

    /// A switch released the connection on its own: acknowledge; signal it again if the
    /// reason says the path may take it back (`TeardownReason::resignal`), else forget it and
    /// tell the client.
    fn on_teardown(&mut self, now: Instant, request_id: u32, id: u16, reason: TeardownReason) {
        let ack = Repr::new(0, request_id, Message::TeardownAck { connection_id: id });
        self.send(now, ack);
        let Some(conn) = self.conns.get(&id) else {
            return;
        };
        match (conn.phase, conn.recovering) {
            // Cut off by the host's own link: whatever the first switch released meanwhile
            // (carrier loss on its side too, or its soft state), the link is back now.
            (ConnPhase::Open, Some(TeardownReason::LinkDown))
                if reason.resignal() || reason == TeardownReason::LinkDown =>
            {
                self.resignal(now, id, reason);
                return;
            }
            (ConnPhase::Open, _) if reason.resignal() && !conn.direct => {
                self.resignal(now, id, reason);
                return;
            }
            // Already signalled again: the TEARDOWN is about the lost incarnation.
            (ConnPhase::Opening, Some(_)) if reason.resignal() => return,
            _ => {}
        }
        if let Some(conn) = self.release(id) {
            match (conn.phase, conn.recovering) {
                (ConnPhase::Open, _) | (ConnPhase::Opening, Some(_)) => {
                    let reply = Reply::Revoked {
                        conn: conn.handle,
                        reason,
                        error: None,
                    };
                    self.reply(conn.client, 0, reply);
                }
                (ConnPhase::Opening | ConnPhase::Admitting, None) => {
                    let reply = Reply::Failed {
                        conn: Some(conn.handle),
                        error: RtcdError::Cancelled,
                    };
                    self.reply(conn.client, conn.open_tag, reply);
                }
                (ConnPhase::Closing, _) | (ConnPhase::Admitting, Some(_)) => {}
            }
        }
    }

    /// The timer fired: retransmit what is due, give up what has run out of attempts, send
    /// REFRESH for the open connections when the refresh period has passed, and ask for PID
    /// liveness when the reclaim period has passed.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.rsvp_timeout(now);
        // Due connections are handled in id order, whatever their deadlines.
        let mut due: Vec<u16> = self
            .deadlines
            .range(..=(now, u16::MAX))
            .map(|&(_, id)| id)
            .collect();
        due.sort_unstable();
        for id in due {
            let Some(conn) = self.conns.get(&id) else {
                continue;
            };
            if conn.rsvp {
                self.rsvp_open_timed_out(id);
                continue;
            }
            if conn.attempts < self.config.max_attempts {
                self.transmit(now, id);
            } else if conn.phase == ConnPhase::Opening {
                // Nothing booked may still linger on the path: tear down what may exist.
                self.begin_teardown(now, id, Some(RtcdError::Timeout));
            } else {
                self.release(id);
            }
        }
        while let Some(timer) = self.timers.poll_expired(now) {
            match timer {
                RtcdTimer::Refresh => {
                    self.timers
                        .set(RtcdTimer::Refresh, now + self.config.refresh_period);
                    self.send_refreshes(now);
                }
                RtcdTimer::Reclaim => {
                    self.timers
                        .set(RtcdTimer::Reclaim, now + self.config.reclaim_period);
                    let mut pids: Vec<u32> = self.clients.values().copied().collect();
                    pids.sort_unstable();
                    pids.dedup();
                    if !pids.is_empty() {
                        self.actions.push_back(Action::CheckPids(pids));
                    }
                }
            }
        }
    }

    /// Test hook: internal bookkeeping is consistent.
    #[cfg(test)]
    pub(super) fn check_invariants(&self) {
        assert_eq!(self.ids.in_use(), self.conns.len());
        assert_eq!(self.handles.len(), self.conns.len());
        let deadlines: BTreeSet<(Instant, u16)> = self
            .conns
            .iter()
            .filter_map(|(&id, c)| Some((c.deadline?, id)))
            .collect();
        assert_eq!(deadlines, self.deadlines);
        for (&id, c) in &self.conns {
            assert!(self.ids.contains(id));
            assert_eq!(self.handles.get(&c.handle), Some(&id));
        }
        let active: u64 = self
            .conns
            .values()
            .filter(|c| c.phase != ConnPhase::Closing)
            .map(|c| c.setup.rate)
            .sum();
        assert_eq!(active, self.reserved_bps);
        let proxied = self
            .conns
            .values()
            .filter(|c| c.published && !c.direct)
            .count();
        assert_eq!(proxied, self.open_count);
        assert_eq!(self.route_installed, proxied > 0);
    }
}
