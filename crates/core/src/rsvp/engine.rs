//! The engine: path and reservation state, their timers, labels and splices (module docs of
//! [`super`], `docs/rsvp.md` §7).

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::net::Ipv4Addr;
use std::time::Duration;

use rtlan_wire::rsvp::{
    Adspec, ErrorCode, ErrorSpec, F32Bits, FilterSpec, FlowDescriptors, Flowspec, GuaranteedTerms,
    Message, Path, PathErr, PathTear, Resv, ResvConf, ResvConfirm, ResvErr, ResvTear, RsvpHop,
    SenderDescriptor, Session, StyleKind, TimeValues,
};

use super::deadlines::Deadlines;
use super::labels::LabelSpace;
use super::{
    Event, HopTerms, Outgoing, Output, Received, Resources, ResvId, ResvRequest, Role, RouteTo,
    Routing, RsvpConfig, RsvpStats, Splice, Unsplice,
};
use crate::time::Instant;
use crate::PortId;

/// TTL of the messages a node originates.
const ORIGINATED_TTL: u8 = 64;

/// (session, sender): the key of path state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct PathKey {
    session: Session,
    sender: FilterSpec,
}

/// Where a path leaves the node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct OutPath {
    port: PortId,
    next_hop: Ipv4Addr,
    /// The label on the output link (towards another router).
    label: Option<u32>,
}

/// A PSB.
#[derive(Debug, Clone)]
struct PathState {
    sender: SenderDescriptor,
    /// The previous hop; `None` for a local sender.
    phop: Option<RsvpHop>,
    in_port: Option<PortId>,
    /// The label the path's frames arrive with (announced in the PHOP's LIH).
    in_label: Option<u32>,
    /// `None`: this node is the receiver — or, with `unrouted`, the route is gone for now.
    out: Option<OutPath>,
    /// The route went away under an established path: the state is kept (RFC 2205 §3.6,
    /// local repair) and sent on as soon as routing offers a route again, instead of waiting
    /// for the sender's next refresh (up to (K + 0.5)·1.5·R away at the first hop, and never
    /// for a local sender, which has no one to refresh it).
    unrouted: bool,
    /// The refresh period the state was sent with, for its lifetime.
    refresh: Duration,
    /// TTL the Path is sent on with.
    ttl: u8,
    /// The reservation covering this sender.
    resv: Option<ResvId>,
}

/// How a reservation is found again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum ResvKey {
    /// Fixed-Filter: one per sender.
    Fixed(PathKey),
    /// Shared-Explicit: one per session and next hop (`None`: a local receiver).
    Shared(Session, Option<Ipv4Addr>),
}

/// An RSB.
#[derive(Debug, Clone)]
struct ResvState {
    key: ResvKey,
    session: Session,
    style: StyleKind,
    /// The next hop that sent it; `None` for a local receiver.
    nhop: Option<RsvpHop>,
    /// The port it arrived on (the senders' output port); `None` for a local receiver.
    out_port: Option<PortId>,
    flowspec: Flowspec,
    senders: Vec<FilterSpec>,
    confirm: Option<ResvConfirm>,
    refresh: Duration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Timer {
    PathRefresh(PathKey),
    PathExpire(PathKey),
    ResvRefresh(ResvId),
    ResvExpire(ResvId),
}

/// The RSVP engine (module docs of [`super`]).
#[derive(Debug)]
pub struct Rsvp {
    config: RsvpConfig,
    paths: BTreeMap<PathKey, PathState>,
    /// (input port, input label) → path, to refuse a label announced twice.
    in_labels: HashMap<(PortId, u32), PathKey>,
    labels: Vec<LabelSpace>,
    resvs: BTreeMap<ResvId, ResvState>,
    resv_index: HashMap<ResvKey, ResvId>,
    next_resv: ResvId,
    deadlines: Deadlines<Timer>,
    out: VecDeque<Output>,
    rng: u64,
    stats: RsvpStats,
}

impl Rsvp {
    /// An engine with no state.
    pub fn new(config: RsvpConfig) -> Rsvp {
        let labels = vec![LabelSpace::default(); config.addresses.len()];
        Rsvp {
            rng: config.seed | 1,
            config,
            paths: BTreeMap::new(),
            in_labels: HashMap::new(),
            labels,
            resvs: BTreeMap::new(),
            resv_index: HashMap::new(),
            next_resv: 1,
            deadlines: Deadlines::default(),
            out: VecDeque::new(),
            stats: RsvpStats::default(),
        }
    }

    /// The counters.
    pub fn stats(&self) -> RsvpStats {
        RsvpStats {
            paths: self.paths.len() as u64,
            resvs: self.resvs.len() as u64,
            ..self.stats
        }
    }

    /// Labels in use on `port`'s link.
    pub fn labels_in_use(&self, port: PortId) -> usize {
        self.labels
            .get(usize::from(port.0))
            .map_or(0, LabelSpace::len)
    }

    /// The next thing to do, if any.
    pub fn poll_output(&mut self) -> Option<Output> {
        self.out.pop_front()
    }

    /// When [`Rsvp::handle_timeout`] is next due.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.deadlines.next()
    }

    // ----- inputs -------------------------------------------------------------------------

    /// A message that arrived on `rx.port` (decoded with `Message::from_repr`).
    pub fn handle_message<R: Routing, S: Resources>(
        &mut self,
        now: Instant,
        rx: Received,
        message: Message,
        routing: &R,
        resources: &mut S,
    ) {
        if usize::from(rx.port.0) >= self.config.addresses.len() {
            self.stats.ignored += 1;
            return;
        }
        match message {
            Message::Path(path) => {
                self.stats.path_in += 1;
                if rx.ttl <= 1 {
                    self.stats.path_dropped += 1;
                    return;
                }
                self.accept_path(now, Some(rx.port), rx.ttl - 1, path, routing, resources);
            }
            Message::Resv(resv) => {
                self.stats.resv_in += 1;
                self.accept_resv(now, Some(rx.port), resv, resources);
            }
            Message::PathTear(tear) => {
                self.stats.path_tear_in += 1;
                self.path_tear(rx.port, &tear, resources);
            }
            Message::ResvTear(tear) => {
                self.stats.resv_tear_in += 1;
                self.resv_tear(rx.port, &tear, resources);
            }
            Message::PathErr(err) => {
                self.stats.errors_and_confirmations_in += 1;
                self.path_err(err);
            }
            Message::ResvErr(err) => {
                self.stats.errors_and_confirmations_in += 1;
                self.resv_err(rx.port, err);
            }
            Message::ResvConf(conf) => {
                self.stats.errors_and_confirmations_in += 1;
                self.resv_conf(rx, conf, routing);
            }
        }
    }

    /// Runs every timer due at `now`: refreshes and expiries.
    pub fn handle_timeout<S: Resources>(&mut self, now: Instant, resources: &mut S) {
        while let Some(timer) = self.deadlines.pop_expired(now) {
            match timer {
                Timer::PathRefresh(key) => {
                    if self.paths.contains_key(&key) {
                        self.send_path(key, resources);
                        let at = now + self.jittered();
                        self.deadlines.set(Timer::PathRefresh(key), at);
                    }
                }
                Timer::PathExpire(key) => {
                    if self.paths.contains_key(&key) {
                        self.stats.path_timeouts += 1;
                        self.remove_path(key, true, resources);
                    }
                }
                Timer::ResvRefresh(id) => {
                    if self.resvs.contains_key(&id) {
                        self.send_resv_upstream(id, None);
                        let at = now + self.jittered();
                        self.deadlines.set(Timer::ResvRefresh(id), at);
                    }
                }
                Timer::ResvExpire(id) => {
                    if self.resvs.contains_key(&id) {
                        self.stats.resv_timeouts += 1;
                        self.remove_resv(id, true, resources);
                    }
                }
            }
        }
    }

    /// Routing changed: every path whose output port or next hop moved is unspliced, its
    /// reservation released, torn down along the old route and signalled along the new one
    /// (QSR §3.2). A scan over the paths: route changes are rare next to refreshes.
    pub fn route_changed<R: Routing, S: Resources>(
        &mut self,
        now: Instant,
        routing: &R,
        resources: &mut S,
    ) {
        let keys: Vec<PathKey> = self
            .paths
            .iter()
            .filter(|(_, p)| p.out.is_some() || p.unrouted)
            .map(|(k, _)| *k)
            .collect();
        for key in keys {
            let Some(psb) = self.paths.get(&key) else {
                continue;
            };
            let in_port = psb.in_port;
            let Some(old) = psb.out else {
                // Waiting for a route (local repair): on its way again if there is one.
                if let Some(route) = self.route(key.session.dst_addr, in_port, routing) {
                    self.stats.rerouted += 1;
                    let out = self.new_out(key, route);
                    if let Some(psb) = self.paths.get_mut(&key) {
                        psb.out = Some(out);
                        psb.unrouted = false;
                    }
                    self.send_path(key, resources);
                    let at = now + self.jittered();
                    self.deadlines.set(Timer::PathRefresh(key), at);
                }
                continue;
            };
            match self.route(key.session.dst_addr, in_port, routing) {
                Some(new) if new.port == old.port && new.next_hop(key) == old.next_hop => {}
                new => {
                    self.stats.rerouted += 1;
                    self.detach_from_resv(key, resources);
                    self.send_path_tear(key);
                    self.free_out_label(old);
                    match new {
                        Some(route) => {
                            let out = self.new_out(key, route);
                            if let Some(psb) = self.paths.get_mut(&key) {
                                psb.out = Some(out);
                            }
                            self.send_path(key, resources);
                            let at = now + self.jittered();
                            self.deadlines.set(Timer::PathRefresh(key), at);
                        }
                        None => {
                            // No route for now (a failure before routing converges): the
                            // state stays and goes on with the next route change; it still
                            // expires if its sender's refreshes stop.
                            self.stats.path_unrouted += 1;
                            if let Some(psb) = self.paths.get_mut(&key) {
                                psb.out = None;
                                psb.unrouted = true;
                            }
                            self.deadlines.remove(Timer::PathRefresh(key));
                        }
                    }
                }
            }
        }
    }

    // ----- the host's application interface -------------------------------------------------

    /// A local sender starts: its Path goes out towards the session's destination and is
    /// refreshed until [`Rsvp::close_sender`].
    pub fn open_sender<R: Routing, S: Resources>(
        &mut self,
        now: Instant,
        session: Session,
        sender: SenderDescriptor,
        routing: &R,
        resources: &mut S,
    ) {
        let path = Path {
            session,
            hop: RsvpHop {
                address: Ipv4Addr::UNSPECIFIED,
                lih: 0,
            },
            time_values: self.time_values(),
            sender,
        };
        self.accept_path(now, None, ORIGINATED_TTL, path, routing, resources);
    }

    /// A local sender stops: PathTear downstream, its state removed.
    pub fn close_sender<S: Resources>(
        &mut self,
        session: Session,
        sender: FilterSpec,
        resources: &mut S,
    ) {
        let key = PathKey { session, sender };
        if self.paths.get(&key).is_some_and(|p| p.phop.is_none()) {
            self.remove_path(key, true, resources);
        }
    }

    /// A local receiver reserves: its Resv goes to the senders' previous hops and is
    /// refreshed until [`Rsvp::release`]. Refusals come back as [`Event::ResvError`].
    pub fn reserve<S: Resources>(
        &mut self,
        now: Instant,
        session: Session,
        descriptors: FlowDescriptors,
        confirm: bool,
        resources: &mut S,
    ) {
        let resv_confirm = confirm
            .then(|| self.config.addresses.first().copied())
            .flatten()
            .map(|receiver| ResvConfirm { receiver });
        let resv = Resv {
            session,
            hop: RsvpHop {
                address: Ipv4Addr::UNSPECIFIED,
                lih: 0,
            },
            time_values: self.time_values(),
            resv_confirm,
            descriptors,
        };
        self.accept_resv(now, None, resv, resources);
    }

    /// A local receiver releases every reservation of `session`: ResvTear upstream.
    pub fn release<S: Resources>(&mut self, session: Session, resources: &mut S) {
        let ids: Vec<ResvId> = self
            .resvs
            .iter()
            .filter(|(_, r)| r.session == session && r.out_port.is_none())
            .map(|(id, _)| *id)
            .collect();
        for id in ids {
            self.remove_resv(id, true, resources);
        }
    }

    /// A local receiver releases its Fixed-Filter reservation of one sender: ResvTear
    /// upstream. The session's other reservations stay.
    pub fn release_sender<S: Resources>(
        &mut self,
        session: Session,
        sender: FilterSpec,
        resources: &mut S,
    ) {
        if let Some(id) = self.local_resv(session, sender) {
            self.remove_resv(id, true, resources);
        }
    }

    /// The local receiver's Fixed-Filter reservation of `sender`, if there is one.
    pub fn local_resv(&self, session: Session, sender: FilterSpec) -> Option<ResvId> {
        let key = ResvKey::Fixed(PathKey { session, sender });
        self.resv_index
            .get(&key)
            .copied()
            .filter(|id| self.resvs.get(id).is_some_and(|r| r.out_port.is_none()))
    }

    /// Whether there is path state for a sender of a session.
    pub fn has_path(&self, session: Session, sender: FilterSpec) -> bool {
        self.paths.contains_key(&PathKey { session, sender })
    }

    /// Where a sender's path comes in: the port and the label its frames carry (`None`: plain
    /// IP, or a local sender's path, which has no port either).
    pub fn path_input(
        &self,
        session: Session,
        sender: FilterSpec,
    ) -> Option<(PortId, Option<u32>)> {
        let p = self.paths.get(&PathKey { session, sender })?;
        Some((p.in_port?, p.in_label))
    }

    /// Refuses a path that ends here: a PathErr with `error` goes back to its sender (a
    /// receiver proxy that cannot take the session, or passes on a refusal it was told of).
    /// Nothing happens for a local sender's path or an unknown one.
    pub fn reject_path(&mut self, session: Session, sender: FilterSpec, error: ErrorSpec) {
        let key = PathKey { session, sender };
        let Some(p) = self.paths.get(&key) else {
            return;
        };
        let (Some(port), Some(phop)) = (p.in_port, p.phop) else {
            return;
        };
        let err = PathErr {
            session,
            error,
            sender: Some(p.sender),
        };
        let src = self.address(port);
        self.send(Outgoing {
            port,
            src,
            dst: phop.address,
            next_hop: phop.address,
            ttl: ORIGINATED_TTL,
            router_alert: false,
            message: Message::PathErr(err),
        });
    }

    // ----- Path -----------------------------------------------------------------------------

    fn accept_path<R: Routing, S: Resources>(
        &mut self,
        now: Instant,
        in_port: Option<PortId>,
        ttl: u8,
        path: Path,
        routing: &R,
        resources: &mut S,
    ) {
        let key = PathKey {
            session: path.session,
            sender: path.sender.sender_template,
        };
        let local_dst = self.is_local(path.session.dst_addr)
            || (self.config.role == Role::Router && routing.proxies(&path.session));
        let route = if local_dst {
            None
        } else {
            match self.route(path.session.dst_addr, in_port, routing) {
                Some(r) => Some(r),
                None => {
                    self.stats.path_dropped += 1;
                    return;
                }
            }
        };
        let phop = in_port.map(|_| path.hop);
        let in_label = match (self.config.role, in_port) {
            (Role::Router, Some(_)) => path.hop.label().filter(|l| *l >= super::FIRST_LABEL),
            _ => None,
        };
        let refresh = Duration::from_millis(u64::from(path.time_values.refresh_period_ms.max(1)));
        if let (Some(port), Some(label)) = (in_port, in_label) {
            if self
                .in_labels
                .get(&(port, label))
                .is_some_and(|holder| *holder != key)
            {
                self.stats.label_conflicts += 1;
                self.send_path_err_to(
                    port,
                    path.hop.address,
                    &path,
                    ErrorCode::TrafficControlError,
                    0,
                );
                return;
            }
        }
        if let Some(existing) = self.paths.get(&key) {
            let old_out = existing.out;
            let old_in = (existing.in_port, existing.in_label);
            let resv = existing.resv;
            // A new previous hop is a route change upstream (RFC 2205 §3.6): the state follows
            // it, and a late PathTear from the old hop no longer matches.
            let moved_in = old_in != (in_port, in_label);
            let changed = existing.phop != phop || existing.sender != path.sender || moved_in;
            let rerouted = match (old_out, route) {
                (Some(o), Some(r)) => o.port != r.port || o.next_hop != r.next_hop(key),
                (None, None) => false,
                _ => true,
            };
            if rerouted {
                self.stats.rerouted += 1;
                self.detach_from_resv(key, resources);
                if let Some(o) = old_out {
                    self.send_path_tear(key);
                    self.free_out_label(o);
                }
                let out = route.map(|r| self.new_out(key, r));
                if let Some(psb) = self.paths.get_mut(&key) {
                    psb.out = out;
                    psb.unrouted = false;
                }
            }
            let resv = if rerouted { None } else { resv };
            if moved_in {
                if let Some(id) = resv {
                    self.unsplice_sender(id, key, None);
                }
                if let (Some(port), Some(l)) = old_in {
                    if self.in_labels.get(&(port, l)) == Some(&key) {
                        self.in_labels.remove(&(port, l));
                    }
                }
                if let (Some(port), Some(l)) = (in_port, in_label) {
                    self.in_labels.insert((port, l), key);
                }
            }
            if let Some(psb) = self.paths.get_mut(&key) {
                psb.phop = phop;
                psb.in_port = in_port;
                psb.sender = path.sender;
                psb.in_label = in_label;
                psb.refresh = refresh;
                psb.ttl = ttl;
            }
            if in_port.is_some() {
                let at = now + self.lifetime(refresh);
                self.deadlines.set(Timer::PathExpire(key), at);
            }
            if moved_in {
                if let Some(id) = resv {
                    self.splice_sender(id, key);
                    // The reservation goes to the new previous hop at once.
                    self.send_resv_upstream(id, Some(&[key.sender]));
                }
            }
            if changed || rerouted {
                self.after_path_change(now, key, resources);
            }
            return;
        }
        if self.paths.len() >= self.config.max_paths {
            self.stats.state_full += 1;
            if let Some(port) = in_port {
                self.send_path_err_to(port, path.hop.address, &path, ErrorCode::RsvpSystemError, 0);
            }
            return;
        }
        let mut psb = PathState {
            sender: path.sender,
            phop,
            in_port,
            in_label,
            out: None,
            unrouted: false,
            refresh,
            ttl,
            resv: None,
        };
        if let (Some(port), Some(l)) = (in_port, in_label) {
            self.in_labels.insert((port, l), key);
        }
        psb.out = route.map(|r| self.new_out(key, r));
        // A local receiver's reservation outlives its senders' paths (the application keeps
        // asking): a path that comes back is covered again at once.
        // Found through the reservation index — the sender's own Fixed-Filter reservation or the
        // session's local Shared-Explicit one — not by a scan: a receiver with 10⁵ reservations
        // takes each new path in constant time.
        let local_resv = if psb.out.is_none() {
            [ResvKey::Fixed(key), ResvKey::Shared(key.session, None)]
                .iter()
                .filter_map(|k| self.resv_index.get(k).copied())
                .find(|id| {
                    self.resvs.get(id).is_some_and(|r| {
                        r.out_port.is_none()
                            && r.session == key.session
                            && r.senders.contains(&key.sender)
                    })
                })
        } else {
            None
        };
        psb.resv = local_resv;
        self.paths.insert(key, psb);
        if let Some(id) = local_resv {
            self.send_resv_upstream(id, Some(&[key.sender]));
        }
        if in_port.is_some() {
            let at = now + self.lifetime(refresh);
            self.deadlines.set(Timer::PathExpire(key), at);
        }
        self.after_path_change(now, key, resources);
    }

    /// A new or changed path: forwarded downstream at once (a trigger) and refreshed from now
    /// on, or announced to the local receiver.
    fn after_path_change<S: Resources>(&mut self, now: Instant, key: PathKey, resources: &mut S) {
        let Some(psb) = self.paths.get(&key) else {
            return;
        };
        match psb.out {
            Some(_) => {
                self.send_path(key, resources);
                let at = now + self.jittered();
                self.deadlines.set(Timer::PathRefresh(key), at);
            }
            None => {
                self.deadlines.remove(Timer::PathRefresh(key));
                self.out.push_back(Output::Event(Event::PathArrived {
                    session: key.session,
                    sender: psb.sender,
                }));
            }
        }
    }

    /// The route towards `dst`, refused if it leaves by the port the path came in on.
    fn route<R: Routing>(
        &self,
        dst: Ipv4Addr,
        in_port: Option<PortId>,
        routing: &R,
    ) -> Option<RouteTo> {
        let r = routing.route(dst)?;
        if Some(r.port) == in_port || usize::from(r.port.0) >= self.config.addresses.len() {
            return None;
        }
        Some(r)
    }

    /// The output of a path on `route`, with a label on a link towards another router.
    fn new_out(&mut self, key: PathKey, route: RouteTo) -> OutPath {
        let label = match (self.config.role, route.gateway) {
            (Role::Router, Some(_)) => self
                .labels
                .get_mut(usize::from(route.port.0))
                .and_then(LabelSpace::allocate),
            _ => None,
        };
        OutPath {
            port: route.port,
            next_hop: route.next_hop(key),
            label,
        }
    }

    fn free_out_label(&mut self, out: OutPath) {
        if let (Some(label), Some(space)) =
            (out.label, self.labels.get_mut(usize::from(out.port.0)))
        {
            space.free(label);
        }
    }

    fn send_path<S: Resources>(&mut self, key: PathKey, resources: &S) {
        let Some(psb) = self.paths.get(&key) else {
            return;
        };
        let Some(out) = psb.out else {
            return;
        };
        let mut sender = psb.sender;
        if let (Some(adspec), Some(terms)) = (sender.adspec, resources.hop_terms(out.port)) {
            sender.adspec = Some(compose(adspec, &terms));
        }
        let src = self.address(out.port);
        let path = Path {
            session: key.session,
            hop: RsvpHop {
                address: src,
                lih: out.label.unwrap_or(0),
            },
            time_values: self.time_values(),
            sender,
        };
        let ttl = psb.ttl;
        self.send(Outgoing {
            port: out.port,
            src,
            dst: key.session.dst_addr,
            next_hop: out.next_hop,
            ttl,
            router_alert: true,
            message: Message::Path(path),
        });
    }

    fn send_path_tear(&mut self, key: PathKey) {
        let Some(psb) = self.paths.get(&key) else {
            return;
        };
        let Some(out) = psb.out else {
            return;
        };
        let src = self.address(out.port);
        let tear = PathTear {
            session: key.session,
            hop: RsvpHop {
                address: src,
                lih: out.label.unwrap_or(0),
            },
            sender: Some(psb.sender),
        };
        let ttl = psb.ttl;
        self.send(Outgoing {
            port: out.port,
            src,
            dst: key.session.dst_addr,
            next_hop: out.next_hop,
            ttl,
            router_alert: true,
            message: Message::PathTear(tear),
        });
    }

    fn send_path_err_to(
        &mut self,
        port: PortId,
        phop: Ipv4Addr,
        path: &Path,
        code: ErrorCode,
        value: u16,
    ) {
        let src = self.address(port);
        let err = PathErr {
            session: path.session,
            error: ErrorSpec {
                node: src,
                flags: 0,
                code,
                value,
            },
            sender: Some(path.sender),
        };
        self.send(Outgoing {
            port,
            src,
            dst: phop,
            next_hop: phop,
            ttl: ORIGINATED_TTL,
            router_alert: false,
            message: Message::PathErr(err),
        });
    }

    /// Removes a path: its sender leaves its reservation, its labels are freed, a PathTear
    /// goes downstream if `tear`, a local receiver is told.
    fn remove_path<S: Resources>(&mut self, key: PathKey, tear: bool, resources: &mut S) {
        self.detach_from_resv(key, resources);
        if tear {
            self.send_path_tear(key);
        }
        let Some(psb) = self.paths.remove(&key) else {
            return;
        };
        if let Some(out) = psb.out {
            self.free_out_label(out);
        }
        if let (Some(port), Some(l)) = (psb.in_port, psb.in_label) {
            if self.in_labels.get(&(port, l)) == Some(&key) {
                self.in_labels.remove(&(port, l));
            }
        }
        self.deadlines.remove(Timer::PathRefresh(key));
        self.deadlines.remove(Timer::PathExpire(key));
        if psb.out.is_none() && !psb.unrouted && psb.in_port.is_some() {
            self.out.push_back(Output::Event(Event::PathGone {
                session: key.session,
                sender: key.sender,
            }));
        }
    }

    fn path_tear<S: Resources>(&mut self, port: PortId, tear: &PathTear, resources: &mut S) {
        let keys: Vec<PathKey> = match &tear.sender {
            Some(s) => vec![PathKey {
                session: tear.session,
                sender: s.sender_template,
            }],
            None => self
                .paths
                .range(session_range(tear.session))
                .map(|(k, _)| *k)
                .collect(),
        };
        for key in keys {
            // Only the path's previous hop may tear it down.
            let owned = self.paths.get(&key).is_some_and(|p| {
                p.in_port == Some(port) && p.phop.map(|h| h.address) == Some(tear.hop.address)
            });
            if owned {
                self.remove_path(key, true, resources);
            } else {
                self.stats.ignored += 1;
            }
        }
    }

    fn path_err(&mut self, err: PathErr) {
        let Some(sender) = err.sender else {
            self.stats.ignored += 1;
            return;
        };
        let key = PathKey {
            session: err.session,
            sender: sender.sender_template,
        };
        let Some(psb) = self.paths.get(&key) else {
            self.stats.ignored += 1;
            return;
        };
        match (psb.in_port, psb.phop) {
            (Some(port), Some(phop)) => {
                let src = self.address(port);
                self.send(Outgoing {
                    port,
                    src,
                    dst: phop.address,
                    next_hop: phop.address,
                    ttl: ORIGINATED_TTL,
                    router_alert: false,
                    message: Message::PathErr(err),
                });
            }
            _ => self.out.push_back(Output::Event(Event::PathError {
                session: err.session,
                sender: key.sender,
                error: err.error,
            })),
        }
    }

    // ----- Resv -----------------------------------------------------------------------------

    fn accept_resv<S: Resources>(
        &mut self,
        now: Instant,
        in_port: Option<PortId>,
        resv: Resv,
        resources: &mut S,
    ) {
        let units: Vec<(StyleKind, Flowspec, Vec<FilterSpec>)> = match &resv.descriptors {
            FlowDescriptors::FixedFilter(pairs) => pairs
                .iter()
                .map(|(f, s)| (StyleKind::FixedFilter, *f, vec![*s]))
                .collect(),
            FlowDescriptors::SharedExplicit(f, senders) => {
                let mut senders = senders.clone();
                senders.sort();
                senders.dedup();
                vec![(StyleKind::SharedExplicit, *f, senders)]
            }
            FlowDescriptors::WildcardFilter(_) => {
                self.stats.ignored += 1;
                if let Some(port) = in_port {
                    self.send_resv_err(
                        port,
                        &resv,
                        &resv.descriptors,
                        ErrorCode::UnknownStyle,
                        0,
                        0,
                    );
                } else {
                    self.out.push_back(Output::Event(Event::ResvError {
                        session: resv.session,
                        senders: Vec::new(),
                        error: self.local_error(ErrorCode::UnknownStyle, 0),
                    }));
                }
                return;
            }
        };
        let nhop = in_port.map(|_| resv.hop);
        for (style, flowspec, senders) in units {
            let descriptor = match style {
                StyleKind::SharedExplicit => {
                    FlowDescriptors::SharedExplicit(flowspec, senders.clone())
                }
                _ => FlowDescriptors::FixedFilter(vec![(flowspec, senders[0])]),
            };
            let refuse = |engine: &mut Rsvp, code: ErrorCode, value: u16, flags: u8| match in_port {
                Some(port) => engine.send_resv_err(port, &resv, &descriptor, code, value, flags),
                None => {
                    let error = engine.local_error(code, value);
                    engine.out.push_back(Output::Event(Event::ResvError {
                        session: resv.session,
                        senders: senders.clone(),
                        error,
                    }))
                }
            };
            // Every sender needs path state leaving by the port the Resv came in on.
            let all_known = senders.iter().all(|s| {
                self.paths
                    .get(&PathKey {
                        session: resv.session,
                        sender: *s,
                    })
                    .is_some_and(|p| !p.unrouted && p.out.map(|o| o.port) == in_port)
            });
            if !all_known {
                self.stats.no_path += 1;
                refuse(self, ErrorCode::NoPathInformation, 0, 0);
                continue;
            }
            let key = match style {
                StyleKind::SharedExplicit => ResvKey::Shared(resv.session, nhop.map(|h| h.address)),
                _ => ResvKey::Fixed(PathKey {
                    session: resv.session,
                    sender: senders[0],
                }),
            };
            // A sender is in at most one reservation (its path has one output).
            let conflict = senders.iter().any(|s| {
                self.paths
                    .get(&PathKey {
                        session: resv.session,
                        sender: *s,
                    })
                    .and_then(|p| p.resv)
                    .is_some_and(|id| self.resvs.get(&id).is_some_and(|r| r.key != key))
            });
            if conflict {
                self.stats.ignored += 1;
                refuse(self, ErrorCode::ConflictingStyle, 0, 0);
                continue;
            }
            let refresh =
                Duration::from_millis(u64::from(resv.time_values.refresh_period_ms.max(1)));
            let id = match self.resv_index.get(&key).copied() {
                Some(id) => {
                    let (changed, old_senders) = {
                        let r = &self.resvs[&id];
                        (
                            r.flowspec != flowspec || r.senders != senders,
                            r.senders.clone(),
                        )
                    };
                    if changed {
                        if let Some(port) = in_port {
                            let request = ResvRequest {
                                session: &resv.session,
                                flowspec: &flowspec,
                                senders: &senders,
                            };
                            if let Err(refusal) = resources.reserve(port, id, &request) {
                                self.stats.admission_refused += 1;
                                refuse(self, refusal.code, refusal.value, ErrorSpec::IN_PLACE);
                                self.touch_resv(now, id, nhop, resv.resv_confirm, refresh);
                                continue;
                            }
                        }
                        for s in old_senders.iter().filter(|s| !senders.contains(s)) {
                            let pk = PathKey {
                                session: resv.session,
                                sender: *s,
                            };
                            self.unsplice_sender(id, pk, None);
                            if let Some(p) = self.paths.get_mut(&pk) {
                                p.resv = None;
                            }
                        }
                        if let Some(r) = self.resvs.get_mut(&id) {
                            r.flowspec = flowspec;
                            r.senders = senders.clone();
                        }
                        self.attach(id, resv.session, &senders);
                    }
                    self.touch_resv(now, id, nhop, resv.resv_confirm, refresh);
                    if !changed {
                        continue;
                    }
                    id
                }
                None => {
                    if self.resvs.len() >= self.config.max_resvs {
                        self.stats.state_full += 1;
                        refuse(self, ErrorCode::RsvpSystemError, 0, 0);
                        continue;
                    }
                    let id = self.next_resv;
                    self.next_resv = self.next_resv.wrapping_add(1).max(1);
                    if let Some(port) = in_port {
                        let request = ResvRequest {
                            session: &resv.session,
                            flowspec: &flowspec,
                            senders: &senders,
                        };
                        if let Err(refusal) = resources.reserve(port, id, &request) {
                            self.stats.admission_refused += 1;
                            refuse(self, refusal.code, refusal.value, 0);
                            continue;
                        }
                    }
                    self.resvs.insert(
                        id,
                        ResvState {
                            key,
                            session: resv.session,
                            style,
                            nhop,
                            out_port: in_port,
                            flowspec,
                            senders: senders.clone(),
                            confirm: resv.resv_confirm,
                            refresh,
                        },
                    );
                    self.resv_index.insert(key, id);
                    self.attach(id, resv.session, &senders);
                    self.touch_resv(now, id, nhop, resv.resv_confirm, refresh);
                    id
                }
            };
            // New or changed: upstream at once, then refreshed.
            self.send_resv_upstream(id, None);
            let at = now + self.jittered();
            self.deadlines.set(Timer::ResvRefresh(id), at);
        }
    }

    /// Puts `senders`' paths on reservation `id` and splices them.
    fn attach(&mut self, id: ResvId, session: Session, senders: &[FilterSpec]) {
        for s in senders {
            let pk = PathKey {
                session,
                sender: *s,
            };
            if let Some(p) = self.paths.get_mut(&pk) {
                p.resv = Some(id);
            }
            self.splice_sender(id, pk);
        }
    }

    /// A refresh of reservation `id`: its NHOP, confirmation request and expiry.
    fn touch_resv(
        &mut self,
        now: Instant,
        id: ResvId,
        nhop: Option<RsvpHop>,
        confirm: Option<ResvConfirm>,
        refresh: Duration,
    ) {
        let Some(r) = self.resvs.get_mut(&id) else {
            return;
        };
        r.nhop = nhop;
        r.confirm = confirm;
        r.refresh = refresh;
        // A local receiver's reservation never expires (the application holds it); its
        // refresh timer is armed by `accept_resv` after every change.
        if r.out_port.is_some() {
            let at = now + self.lifetime(refresh);
            self.deadlines.set(Timer::ResvExpire(id), at);
        }
    }

    /// Sends reservation `id` upstream: one Resv per previous hop (FF: one per sender), or, at
    /// the sender's own host, the `Reserved` event (and a ResvConf if asked). `only`: just
    /// these senders (a partial teardown's survivors are not re-sent).
    fn send_resv_upstream(&mut self, id: ResvId, only: Option<&[FilterSpec]>) {
        let Some(r) = self.resvs.get(&id) else {
            return;
        };
        let session = r.session;
        let style = r.style;
        let flowspec = r.flowspec;
        let confirm = r.confirm;
        let (local, groups) = self.by_previous_hop(id, only);
        for s in local {
            self.out.push_back(Output::Event(Event::Reserved {
                session,
                sender: s,
                flowspec,
            }));
            if let Some(c) = confirm {
                self.send_resv_conf(session, c, style, flowspec, s);
            }
        }
        for ((port, phop), (lih, senders)) in groups {
            let src = self.address(port);
            let descriptors = match style {
                StyleKind::SharedExplicit => FlowDescriptors::SharedExplicit(flowspec, senders),
                _ => FlowDescriptors::FixedFilter(senders.iter().map(|s| (flowspec, *s)).collect()),
            };
            let resv = Resv {
                session,
                hop: RsvpHop { address: src, lih },
                time_values: self.time_values(),
                resv_confirm: confirm,
                descriptors,
            };
            self.send(Outgoing {
                port,
                src,
                dst: phop,
                next_hop: phop,
                ttl: ORIGINATED_TTL,
                router_alert: false,
                message: Message::Resv(resv),
            });
        }
    }

    /// The senders of reservation `id` (or just `only`), split into local senders and, for
    /// the others, groups by (input port, previous hop) with the previous hop's LIH: one Resv
    /// (or ResvTear) goes to each group.
    #[allow(clippy::type_complexity)]
    fn by_previous_hop(
        &self,
        id: ResvId,
        only: Option<&[FilterSpec]>,
    ) -> (
        Vec<FilterSpec>,
        BTreeMap<(PortId, Ipv4Addr), (u32, Vec<FilterSpec>)>,
    ) {
        let mut groups: BTreeMap<(PortId, Ipv4Addr), (u32, Vec<FilterSpec>)> = BTreeMap::new();
        let mut local = Vec::new();
        let Some(r) = self.resvs.get(&id) else {
            return (local, groups);
        };
        for s in &r.senders {
            if only.is_some_and(|o| !o.contains(s)) {
                continue;
            }
            let key = PathKey {
                session: r.session,
                sender: *s,
            };
            match self.paths.get(&key).map(|p| (p.in_port, p.phop)) {
                Some((Some(port), Some(phop))) => {
                    groups
                        .entry((port, phop.address))
                        .or_insert((phop.lih, Vec::new()))
                        .1
                        .push(*s);
                }
                Some(_) => local.push(*s),
                None => {}
            }
        }
        (local, groups)
    }

    fn send_resv_conf(
        &mut self,
        session: Session,
        confirm: ResvConfirm,
        style: StyleKind,
        flowspec: Flowspec,
        sender: FilterSpec,
    ) {
        let Some(port) = self.local_port_towards() else {
            return;
        };
        let src = self.address(port);
        let descriptors = match style {
            StyleKind::SharedExplicit => FlowDescriptors::SharedExplicit(flowspec, vec![sender]),
            _ => FlowDescriptors::FixedFilter(vec![(flowspec, sender)]),
        };
        let Some(next_hop) = self.path_next_hop(session, sender) else {
            return;
        };
        self.send(Outgoing {
            port,
            src,
            dst: confirm.receiver,
            next_hop,
            ttl: ORIGINATED_TTL,
            router_alert: true,
            message: Message::ResvConf(ResvConf {
                session,
                error: ErrorSpec {
                    node: src,
                    flags: 0,
                    code: ErrorCode::Confirmation,
                    value: 0,
                },
                resv_confirm: confirm,
                descriptors,
            }),
        });
    }

    /// A host's one port (ResvConf leaves by it).
    fn local_port_towards(&self) -> Option<PortId> {
        (!self.config.addresses.is_empty()).then_some(PortId(0))
    }

    fn path_next_hop(&self, session: Session, sender: FilterSpec) -> Option<Ipv4Addr> {
        self.paths
            .get(&PathKey { session, sender })
            .and_then(|p| p.out)
            .map(|o| o.next_hop)
    }

    fn send_resv_err(
        &mut self,
        port: PortId,
        resv: &Resv,
        descriptors: &FlowDescriptors,
        code: ErrorCode,
        value: u16,
        flags: u8,
    ) {
        let src = self.address(port);
        let err = ResvErr {
            session: resv.session,
            hop: RsvpHop {
                address: src,
                lih: resv.hop.lih,
            },
            error: ErrorSpec {
                node: src,
                flags,
                code,
                value,
            },
            descriptors: descriptors.clone(),
        };
        self.send(Outgoing {
            port,
            src,
            dst: resv.hop.address,
            next_hop: resv.hop.address,
            ttl: ORIGINATED_TTL,
            router_alert: false,
            message: Message::ResvErr(err),
        });
    }

    fn local_error(&self, code: ErrorCode, value: u16) -> ErrorSpec {
        ErrorSpec {
            node: self
                .config
                .addresses
                .first()
                .copied()
                .unwrap_or(Ipv4Addr::UNSPECIFIED),
            flags: 0,
            code,
            value,
        }
    }

    /// Removes reservation `id`: resources released, senders unspliced, a ResvTear upstream
    /// if `tear` (or `ReservationGone` at a local sender).
    fn remove_resv<S: Resources>(&mut self, id: ResvId, tear: bool, resources: &mut S) {
        if tear {
            self.send_resv_tear_upstream(id, None);
        }
        let Some(r) = self.resvs.remove(&id) else {
            return;
        };
        self.resv_index.remove(&r.key);
        self.deadlines.remove(Timer::ResvRefresh(id));
        self.deadlines.remove(Timer::ResvExpire(id));
        if let Some(port) = r.out_port {
            resources.release(port, id);
        }
        for s in &r.senders {
            let pk = PathKey {
                session: r.session,
                sender: *s,
            };
            self.unsplice_path(id, pk, r.out_port, None);
            if let Some(p) = self.paths.get_mut(&pk) {
                if p.resv == Some(id) {
                    p.resv = None;
                }
            }
        }
    }

    fn send_resv_tear_upstream(&mut self, id: ResvId, only: Option<&[FilterSpec]>) {
        let Some(r) = self.resvs.get(&id) else {
            return;
        };
        let session = r.session;
        let style = r.style;
        let flowspec = r.flowspec;
        let (local, groups) = self.by_previous_hop(id, only);
        for s in local {
            self.out
                .push_back(Output::Event(Event::ReservationGone { session, sender: s }));
        }
        for ((port, phop), (lih, senders)) in groups {
            let src = self.address(port);
            let descriptors = match style {
                StyleKind::SharedExplicit => FlowDescriptors::SharedExplicit(flowspec, senders),
                _ => FlowDescriptors::FixedFilter(senders.iter().map(|s| (flowspec, *s)).collect()),
            };
            self.send(Outgoing {
                port,
                src,
                dst: phop,
                next_hop: phop,
                ttl: ORIGINATED_TTL,
                router_alert: false,
                message: Message::ResvTear(ResvTear {
                    session,
                    hop: RsvpHop { address: src, lih },
                    descriptors,
                }),
            });
        }
    }

    fn resv_tear<S: Resources>(&mut self, port: PortId, tear: &ResvTear, resources: &mut S) {
        let nhop = tear.hop.address;
        match &tear.descriptors {
            FlowDescriptors::FixedFilter(pairs) => {
                for (_, s) in pairs {
                    let key = ResvKey::Fixed(PathKey {
                        session: tear.session,
                        sender: *s,
                    });
                    match self.resv_index.get(&key).copied() {
                        Some(id) if self.owns(id, port, nhop) => {
                            self.remove_resv(id, true, resources)
                        }
                        _ => self.stats.ignored += 1,
                    }
                }
            }
            FlowDescriptors::SharedExplicit(_, senders) => {
                let key = ResvKey::Shared(tear.session, Some(nhop));
                let Some(id) = self.resv_index.get(&key).copied() else {
                    self.stats.ignored += 1;
                    return;
                };
                if !self.owns(id, port, nhop) {
                    self.stats.ignored += 1;
                    return;
                }
                let remaining: Vec<FilterSpec> = self.resvs[&id]
                    .senders
                    .iter()
                    .filter(|s| !senders.contains(s))
                    .copied()
                    .collect();
                if remaining.is_empty() {
                    self.remove_resv(id, true, resources);
                    return;
                }
                let removed: Vec<FilterSpec> = self.resvs[&id]
                    .senders
                    .iter()
                    .filter(|s| senders.contains(s))
                    .copied()
                    .collect();
                self.send_resv_tear_upstream(id, Some(&removed));
                for s in &removed {
                    let pk = PathKey {
                        session: tear.session,
                        sender: *s,
                    };
                    self.unsplice_sender(id, pk, None);
                    if let Some(p) = self.paths.get_mut(&pk) {
                        p.resv = None;
                    }
                }
                let flowspec = self.resvs[&id].flowspec;
                let request = ResvRequest {
                    session: &tear.session,
                    flowspec: &flowspec,
                    senders: &remaining,
                };
                // Fewer senders never need more: a refusal here keeps the larger booking.
                let _ = resources.reserve(port, id, &request);
                if let Some(r) = self.resvs.get_mut(&id) {
                    r.senders = remaining;
                }
            }
            FlowDescriptors::WildcardFilter(_) => self.stats.ignored += 1,
        }
    }

    /// Whether reservation `id` came from `nhop` on `port`.
    fn owns(&self, id: ResvId, port: PortId, nhop: Ipv4Addr) -> bool {
        self.resvs
            .get(&id)
            .is_some_and(|r| r.out_port == Some(port) && r.nhop.map(|h| h.address) == Some(nhop))
    }

    fn resv_err(&mut self, port: PortId, err: ResvErr) {
        // Towards the receivers: to each reservation of the session that covers one of the
        // senders in error and whose paths came in on `port`.
        let senders: Vec<FilterSpec> = match &err.descriptors {
            FlowDescriptors::FixedFilter(pairs) => pairs.iter().map(|(_, s)| *s).collect(),
            FlowDescriptors::SharedExplicit(_, s) => s.clone(),
            FlowDescriptors::WildcardFilter(_) => Vec::new(),
        };
        let mut targets: BTreeSet<ResvId> = BTreeSet::new();
        for s in &senders {
            let pk = PathKey {
                session: err.session,
                sender: *s,
            };
            if let Some(p) = self.paths.get(&pk) {
                if p.in_port == Some(port) {
                    if let Some(id) = p.resv {
                        targets.insert(id);
                    }
                }
            }
        }
        if targets.is_empty() {
            self.stats.ignored += 1;
        }
        for id in targets {
            let Some(r) = self.resvs.get(&id) else {
                continue;
            };
            match (r.out_port, r.nhop) {
                (Some(out), Some(nhop)) => {
                    let src = self.address(out);
                    let mut forwarded = err.clone();
                    forwarded.hop = RsvpHop {
                        address: src,
                        lih: nhop.lih,
                    };
                    self.send(Outgoing {
                        port: out,
                        src,
                        dst: nhop.address,
                        next_hop: nhop.address,
                        ttl: ORIGINATED_TTL,
                        router_alert: false,
                        message: Message::ResvErr(forwarded),
                    });
                }
                _ => self.out.push_back(Output::Event(Event::ResvError {
                    session: err.session,
                    senders: r
                        .senders
                        .iter()
                        .filter(|s| senders.contains(s))
                        .copied()
                        .collect(),
                    error: err.error,
                })),
            }
        }
    }

    fn resv_conf<R: Routing>(&mut self, rx: Received, conf: ResvConf, routing: &R) {
        if self.is_local(conf.resv_confirm.receiver) {
            self.out.push_back(Output::Event(Event::Confirmed {
                session: conf.session,
                node: conf.error.node,
            }));
            return;
        }
        if rx.ttl <= 1 {
            self.stats.ignored += 1;
            return;
        }
        let dst = conf.resv_confirm.receiver;
        let Some(route) = routing.route(dst) else {
            self.stats.ignored += 1;
            return;
        };
        if usize::from(route.port.0) >= self.config.addresses.len() {
            self.stats.ignored += 1;
            return;
        }
        let src = self.address(route.port);
        self.send(Outgoing {
            port: route.port,
            src,
            dst,
            next_hop: route.gateway.unwrap_or(dst),
            ttl: rx.ttl - 1,
            router_alert: true,
            message: Message::ResvConf(conf),
        });
    }

    // ----- splicing -------------------------------------------------------------------------

    /// Splices one sender's path onto reservation `id` (nothing for a local receiver).
    fn splice_sender(&mut self, id: ResvId, key: PathKey) {
        let Some(r) = self.resvs.get(&id) else {
            return;
        };
        let flowspec = r.flowspec;
        let Some(p) = self.paths.get(&key) else {
            return;
        };
        let Some(out) = p.out else {
            return;
        };
        self.out.push_back(Output::Splice(Splice {
            resv: id,
            session: key.session,
            sender: key.sender,
            in_port: p.in_port,
            in_label: p.in_label,
            out_port: out.port,
            next_hop: out.next_hop,
            out_label: out.label,
            flowspec,
        }));
    }

    /// Unsplices one sender of reservation `id`; `old_in_label` overrides the path's current
    /// input label (the label being replaced).
    fn unsplice_sender(&mut self, id: ResvId, key: PathKey, old_in_label: Option<u32>) {
        let out_port = self.resvs.get(&id).and_then(|r| r.out_port);
        self.unsplice_path(id, key, out_port, old_in_label);
    }

    fn unsplice_path(
        &mut self,
        id: ResvId,
        key: PathKey,
        out_port: Option<PortId>,
        old_in_label: Option<u32>,
    ) {
        let (Some(out_port), Some(p)) = (out_port, self.paths.get(&key)) else {
            return;
        };
        self.out.push_back(Output::Unsplice(Unsplice {
            resv: id,
            session: key.session,
            sender: key.sender,
            in_port: p.in_port,
            in_label: old_in_label.or(p.in_label),
            out_port,
        }));
    }

    /// Takes a sender out of its reservation (its path goes or moves): unspliced, and the
    /// reservation released when it was the last sender.
    fn detach_from_resv<S: Resources>(&mut self, key: PathKey, resources: &mut S) {
        let Some(id) = self.paths.get(&key).and_then(|p| p.resv) else {
            return;
        };
        let Some(r) = self.resvs.get(&id) else {
            return;
        };
        if r.out_port.is_none() {
            // A local receiver keeps asking for the sender; only the link to the path goes.
            if let Some(p) = self.paths.get_mut(&key) {
                p.resv = None;
            }
            return;
        }
        if r.senders.len() <= 1 {
            self.remove_resv(id, false, resources);
            return;
        }
        let remaining: Vec<FilterSpec> = r
            .senders
            .iter()
            .filter(|s| **s != key.sender)
            .copied()
            .collect();
        let (flowspec, session, out_port) = (r.flowspec, r.session, r.out_port);
        self.unsplice_sender(id, key, None);
        if let Some(port) = out_port {
            let request = ResvRequest {
                session: &session,
                flowspec: &flowspec,
                senders: &remaining,
            };
            let _ = resources.reserve(port, id, &request);
        }
        if let Some(r) = self.resvs.get_mut(&id) {
            r.senders = remaining;
        }
        if let Some(p) = self.paths.get_mut(&key) {
            p.resv = None;
        }
    }

    // ----- helpers --------------------------------------------------------------------------

    fn send(&mut self, outgoing: Outgoing) {
        self.stats.sent += 1;
        self.out.push_back(Output::Send(outgoing));
    }

    fn address(&self, port: PortId) -> Ipv4Addr {
        self.config
            .addresses
            .get(usize::from(port.0))
            .copied()
            .unwrap_or(Ipv4Addr::UNSPECIFIED)
    }

    fn is_local(&self, addr: Ipv4Addr) -> bool {
        self.config.addresses.contains(&addr)
    }

    fn time_values(&self) -> TimeValues {
        TimeValues {
            refresh_period_ms: u32::try_from(self.config.refresh.as_millis()).unwrap_or(u32::MAX),
        }
    }

    /// L = (K + 0.5) × 1.5 × R (RFC 2205 §3.7).
    fn lifetime(&self, refresh: Duration) -> Duration {
        refresh.mul_f64((f64::from(self.config.keep) + 0.5) * 1.5)
    }

    /// R × U(0.5, 1.5) (RFC 2205 §3.7), from a seeded xorshift64*.
    fn jittered(&mut self) -> Duration {
        let mut x = self.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        let u = (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64;
        self.config.refresh.mul_f64(0.5 + u)
    }
}

impl RouteTo {
    /// Whose MAC the path's frames go to: the gateway, or the destination on-link.
    fn next_hop(&self, key: PathKey) -> Ipv4Addr {
        self.gateway.unwrap_or(key.session.dst_addr)
    }
}

/// All path keys of `session`.
fn session_range(session: Session) -> std::ops::RangeInclusive<PathKey> {
    let lo = FilterSpec {
        src_addr: Ipv4Addr::UNSPECIFIED,
        src_port: 0,
    };
    let hi = FilterSpec {
        src_addr: Ipv4Addr::BROADCAST,
        src_port: u16::MAX,
    };
    PathKey {
        session,
        sender: lo,
    }..=PathKey {
        session,
        sender: hi,
    }
}

/// The ADSPEC after one more hop with `terms` (RFC 2210 §3.3, RFC 2212 §"Exported
/// information"): hops + 1, bandwidth and MTU the minimum, latency and the Guaranteed terms
/// summed (saturating; 0xffffffff latency stays indeterminate); a hop without a service sets
/// that service's break bit.
pub(crate) fn compose(mut adspec: Adspec, terms: &HopTerms) -> Adspec {
    let g = &mut adspec.general;
    g.hop_count = g.hop_count.saturating_add(1);
    let bw = g.path_bandwidth.to_f32();
    if terms.bandwidth < bw || bw.is_nan() {
        g.path_bandwidth = F32Bits::from_f32(terms.bandwidth);
    }
    if g.min_latency != u32::MAX {
        g.min_latency = g.min_latency.saturating_add(terms.latency_us);
    }
    g.composed_mtu = g.composed_mtu.min(terms.mtu);
    if let Some(gs) = &mut adspec.guaranteed {
        match (terms.guaranteed, gs.terms.as_mut()) {
            (Some((c, d)), Some(t)) => {
                *t = GuaranteedTerms {
                    c_tot: t.c_tot.saturating_add(c),
                    d_tot: t.d_tot.saturating_add(d),
                    c_sum: t.c_sum.saturating_add(c),
                    d_sum: t.d_sum.saturating_add(d),
                };
            }
            (None, _) => gs.break_bit = true,
            (Some(_), None) => {}
        }
    }
    if let Some(cl) = &mut adspec.controlled_load {
        if !terms.controlled_load {
            cl.break_bit = true;
        }
    }
    adspec
}

#[cfg(test)]
impl Rsvp {
    pub(crate) fn address_of(&self, port: PortId) -> Ipv4Addr {
        self.address(port)
    }

    pub(crate) fn set_max_paths(&mut self, n: usize) {
        self.config.max_paths = n;
    }
}
