//! The host daemon's event loop (EtheReal §2.2, §3.2, §3.4): one thread, `epoll` over the
//! control link, the client socket and a `timerfd` armed at the core's `poll_timeout`. Each
//! iteration feeds inputs to the core and then performs its actions in order (see
//! [`rtlan_core::rtcd::Rtcd`] for the call order).

use std::collections::BTreeSet;
use std::net::Ipv4Addr;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};

use rtlan_core::rtcd::{Action, ClientId, ManagerAnswer, ProxyPrefix, Rtcd};
use rtlan_wire::control::Packet;
use serde_json::Value;

use super::clients;
use super::json;
use super::link::ControlLink;
use super::manager::{Event, ManagerLink};
use super::tc::KernelShaper;
use super::{Error, RunReport};
use crate::clock;
use crate::driver::{Epoll, EMPTY_EVENT};
use crate::linkwatch::LinkWatch;
use crate::mgmt::{MgmtError, MgmtEvent, MgmtServer, RequestId};
use crate::netlink::Netlink;
use crate::timer::Timer;

const LINK_TOKEN: u64 = 1;
const TIMER_TOKEN: u64 = 2;
const MANAGER_TOKEN: u64 = 3;
const CARRIER_TOKEN: u64 = 4;
const RSVP_TOKEN: u64 = 5;
/// Longest sleep, so that the shutdown flag is seen promptly and the carrier is read as often
/// as [`CARRIER_CHECK`] asks.
const MAX_SLEEP_MS: i32 = 20;
/// How often the host interface's carrier is read even without a netlink notification: the
/// kernel may hold a carrier-loss notification back for up to a second (`linkwatch`), the
/// driver's link state is current at once. The switch reads its ports as often.
const CARRIER_CHECK: std::time::Duration = std::time::Duration::from_millis(20);

/// The running daemon.
pub(super) struct Daemon {
    ifname: String,
    rtcd: Rtcd,
    link: ControlLink,
    netlink: Netlink,
    /// Carrier changes of the host's interface (issue 12 item 3), when the subscription opened.
    carrier: Option<LinkWatch>,
    /// When the carrier was last read.
    carrier_checked: std::time::Instant,
    timer: Timer,
    epoll: Epoll,
    clients: MgmtServer,
    /// What the client socket reported and the daemon has not handled yet (reused buffer).
    client_events: Vec<MgmtEvent>,
    /// Neighbour entries this daemon installed and has not removed.
    neighbours: BTreeSet<Ipv4Addr>,
    /// The route this daemon installed, if still in place.
    route: Option<ProxyPrefix>,
    /// The `tc` HTB tree for kernel-shaped connections (`docs/rttr.md`).
    shaper: KernelShaper,
    /// The `GET /metrics` endpoint, if configured, and what its page counts besides the core.
    metrics: Option<crate::metrics::Exporter>,
    counters: crate::metrics::rtcd::RtcdCounters,
    /// The bandwidth manager's worker (central admission).
    manager: Option<ManagerLink>,
    /// The RSVP socket (`signalling = "rsvp"`).
    rsvp: Option<super::rsvp_socket::RsvpSocket>,
    report: RunReport,
}

/// Whether process `pid` is gone (`kill(pid, 0)` says ESRCH).
fn pid_is_dead(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return true;
    };
    if pid <= 0 {
        return true;
    }
    // SAFETY: signal 0 only checks existence and permission; nothing is delivered.
    let rc = unsafe { libc::kill(pid, 0) };
    rc != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}

/// What the shell needs to build the host's egress queues ([`KernelShaper`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct HostQueues {
    /// The host's link rate, bit/s.
    pub(super) link_rate_bps: u64,
    /// The share of the link reservations may take in all.
    pub(super) realtime_cap_percent: u8,
    /// Whether traffic to the proxy prefix gets its own class served first.
    pub(super) priority_queue: bool,
}

impl Daemon {
    pub(super) fn new(
        ifname: String,
        rtcd: Rtcd,
        link: ControlLink,
        netlink: Netlink,
        socket: &std::path::Path,
        queues: HostQueues,
        manager: Option<ManagerLink>,
    ) -> Result<Daemon, Error> {
        let timer = Timer::new()?;
        let epoll = Epoll::new().map_err(Error::Epoll)?;
        epoll
            .add(link.as_raw_fd(), libc::EPOLLIN as u32, LINK_TOKEN)
            .map_err(Error::Epoll)?;
        epoll
            .add(timer.as_raw_fd(), libc::EPOLLIN as u32, TIMER_TOKEN)
            .map_err(Error::Epoll)?;
        if let Some(m) = &manager {
            epoll
                .add(m.wake_fd(), libc::EPOLLIN as u32, MANAGER_TOKEN)
                .map_err(Error::Epoll)?;
        }
        // The host's own link: when it goes, no TEARDOWN from the switch can reach us.
        let carrier = match LinkWatch::open() {
            Ok(watch) => match epoll.add(watch.as_raw_fd(), libc::EPOLLIN as u32, CARRIER_TOKEN) {
                Ok(()) => Some(watch),
                Err(e) => {
                    tracing::warn!("carrier changes of {ifname} not watched: epoll: {e}");
                    None
                }
            },
            Err(e) => {
                tracing::warn!("carrier changes of {ifname} not watched: netlink: {e}");
                None
            }
        };
        let rsvp = if rtcd.config().signalling == rtlan_core::rtcd::Signalling::Rsvp {
            let socket = super::rsvp_socket::RsvpSocket::open().map_err(Error::Rsvp)?;
            epoll
                .add(socket.as_raw_fd(), libc::EPOLLIN as u32, RSVP_TOKEN)
                .map_err(Error::Epoll)?;
            Some(socket)
        } else {
            None
        };
        let clients = clients::bind(socket, &epoll)?;
        let mut shaper = KernelShaper::new(
            ifname.clone(),
            queues.link_rate_bps,
            queues.realtime_cap_percent,
            queues.priority_queue,
        )
        .saving_to(super::tc_save::TcSnapshot::file_for(socket, &ifname));
        shaper.recover();
        Ok(Daemon {
            rsvp,
            carrier,
            carrier_checked: std::time::Instant::now(),
            shaper,
            metrics: None,
            counters: Default::default(),
            manager,
            ifname,
            rtcd,
            link,
            netlink,
            timer,
            epoll,
            clients,
            client_events: Vec::new(),
            neighbours: BTreeSet::new(),
            route: None,
            report: RunReport::default(),
        })
    }

    /// Runs until `shutdown` is set, then tears down: open connections are released (TEARDOWN
    /// sent once) and every neighbour entry and the route this daemon installed are removed.
    pub(super) fn run(&mut self, shutdown: &AtomicBool) -> Result<(), Error> {
        let mut events = [EMPTY_EVENT; 32];
        while !shutdown.load(Ordering::Relaxed) {
            if crate::service::take_reload() {
                self.reload();
            }
            let n = self
                .epoll
                .wait(&mut events, MAX_SLEEP_MS)
                .map_err(Error::Epoll)?;
            for ev in &events[..n] {
                let (token, flags) = (ev.u64, ev.events);
                match token {
                    TIMER_TOKEN => self.timer.drain(),
                    MANAGER_TOKEN => self.manager_answers(),
                    LINK_TOKEN => self.receive_control(),
                    RSVP_TOKEN => self.receive_rsvp(),
                    CARRIER_TOKEN => self.check_carrier(true),
                    t if self.clients.owns(t) => {
                        // Every request goes up: the core answers when it can.
                        self.clients.on_event(
                            &self.epoll,
                            t,
                            flags,
                            &mut self.client_events,
                            |_, _, _| None,
                        );
                    }
                    _ => {}
                }
            }
            self.check_carrier(false);
            self.client_events();
            if self
                .metrics
                .as_ref()
                .is_some_and(crate::metrics::Exporter::wanted)
            {
                let page = crate::metrics::rtcd::render(&self.rtcd, &self.report(), &self.counters);
                if let Some(m) = &self.metrics {
                    m.publish(page);
                }
            }
            let now = clock::now();
            if self.rtcd.poll_timeout().is_some_and(|t| t <= now) {
                self.rtcd.handle_timeout(now);
            }
            self.perform_actions();
            if !self.client_events.is_empty() {
                // Clients found gone while answering: let the core release what they held now.
                self.client_events();
                self.perform_actions();
            }
            self.timer.arm(self.rtcd.poll_timeout())?;
        }
        crate::service::stopping();
        self.shutdown();
        Ok(())
    }

    fn manager_answers(&mut self) {
        let events = self.manager.as_ref().map(ManagerLink::events);
        for event in events.into_iter().flatten() {
            match event {
                Event::Answer(conn, answer) => {
                    self.rtcd.handle_manager_answer(clock::now(), conn, answer);
                }
                Event::Lost(lost) => {
                    tracing::warn!(
                        ?lost,
                        "the bandwidth manager no longer holds these bookings"
                    );
                    self.rtcd.handle_manager_lost(clock::now(), &lost);
                }
            }
        }
    }

    /// Reads the host interface's carrier when netlink reported link changes (`notified`) or
    /// [`CARRIER_CHECK`] has passed, and tells the core when it differs from what it knows.
    fn check_carrier(&mut self, notified: bool) {
        let Some(watch) = self.carrier.as_mut() else {
            return;
        };
        if notified {
            watch.drain();
        } else if self.carrier_checked.elapsed() < CARRIER_CHECK {
            return;
        }
        self.carrier_checked = std::time::Instant::now();
        let up = match watch.carrier(&self.ifname) {
            Ok(up) => up,
            Err(e) => {
                tracing::warn!("carrier of {}: {e}", self.ifname);
                return;
            }
        };
        if up == self.rtcd.link_up() {
            return;
        }
        if up {
            tracing::info!(interface = %self.ifname, "carrier back: asking the path about each interrupted connection");
        } else {
            tracing::warn!(interface = %self.ifname, "carrier lost: open connections interrupted");
        }
        self.report.carrier_changes += 1;
        self.rtcd.handle_link(clock::now(), up);
    }

    /// Hands every waiting RSVP packet to the core.
    fn receive_rsvp(&mut self) {
        let mut buf = [0u8; 65_536];
        loop {
            let Some(socket) = self.rsvp.as_mut() else {
                return;
            };
            match socket.recv(&mut buf) {
                Ok(Some((src, ttl, start, end))) => {
                    self.report.control_received += 1;
                    if let Err(e) = self
                        .rtcd
                        .handle_rsvp(clock::now(), src, ttl, &buf[start..end])
                    {
                        self.report.control_malformed += 1;
                        tracing::debug!(%src, "RSVP message dropped: {e}");
                    }
                }
                Ok(None) => return,
                Err(e) => {
                    tracing::warn!("RSVP socket receive: {e}");
                    return;
                }
            }
        }
    }

    fn receive_control(&mut self) {
        let mut buf = [0u8; 2048];
        loop {
            match self.link.recv(&mut buf) {
                Ok(Some(rx)) => {
                    self.report.control_received += 1;
                    let payload = &buf[..rx.len];
                    if let Err(e) = self
                        .rtcd
                        .handle_control_frame(clock::now(), rx.src, payload)
                    {
                        self.report.control_malformed += 1;
                        tracing::debug!(src = %rx.src, "control frame dropped: {e}");
                    }
                }
                Ok(None) => return,
                Err(e) => {
                    tracing::warn!("control link receive: {e}");
                    return;
                }
            }
        }
    }

    /// Handles what the client socket reported (requests and closed connections), including
    /// clients found gone while answering.
    fn client_events(&mut self) {
        while !self.client_events.is_empty() {
            let events = std::mem::take(&mut self.client_events);
            for event in events {
                self.on_client_event(event);
            }
        }
    }

    fn on_client_event(&mut self, event: MgmtEvent) {
        let now = clock::now();
        match event {
            MgmtEvent::Request {
                client,
                peer_pid,
                request,
            } => {
                let id = request.id;
                let client = ClientId(client);
                match json::decode_request(&request, peer_pid) {
                    Ok(request) => {
                        // Every connection on the host is an operator's view: root's only.
                        if matches!(request, rtlan_core::rtcd::Request::List { all: true })
                            && self.clients.peer_uid(client.0) != Some(0)
                        {
                            let error = MgmtError::new(
                                "forbidden",
                                "only root may list every connection on the host (`all`)",
                            );
                            self.reply(client, id, Err(error));
                            return;
                        }
                        // Who asks, for the reservation policy: as the kernel says now.
                        if matches!(request, rtlan_core::rtcd::Request::Open { .. }) {
                            let who = self
                                .clients
                                .peer_ids(client.0)
                                .map(|(pid, uid, gid)| super::policy::principal(pid, uid, gid));
                            self.rtcd.set_principal(client, who);
                        }
                        if let rtlan_core::rtcd::Request::Register { pid } = request {
                            if Some(pid) != peer_pid && pid_is_dead(pid) {
                                let error = MgmtError::new(
                                    "no_such_process",
                                    format!("process {pid} does not exist"),
                                );
                                self.reply(client, id, Err(error));
                                return;
                            }
                        }
                        self.rtcd
                            .handle_client_request(now, client, json::tag_of(id), request);
                    }
                    Err(error) => self.reply(client, id, Err(error.into())),
                }
            }
            MgmtEvent::Gone(client) => self.rtcd.handle_client_gone(now, ClientId(client)),
        }
    }

    /// Sends one reply; a client that cannot take it is reported gone (handled by
    /// [`Daemon::client_events`]).
    fn reply(&mut self, client: ClientId, id: RequestId, result: Result<Value, MgmtError>) {
        self.clients
            .reply(&self.epoll, client.0, id, result, &mut self.client_events);
    }

    /// Drains the core's actions and performs each in order.
    fn perform_actions(&mut self) {
        while let Some(action) = self.rtcd.poll_action() {
            match action {
                Action::SendControl { dst, repr } => {
                    let mut buf = vec![0u8; repr.buffer_len()];
                    let sent = repr
                        .emit(&mut Packet::new_unchecked(&mut buf[..]))
                        .map_err(|e| e.to_string())
                        .and_then(|()| self.link.send(dst, &buf).map_err(|e| e.to_string()));
                    match sent {
                        Ok(()) => self.report.control_sent += 1,
                        Err(e) => {
                            self.report.send_errors += 1;
                            tracing::warn!(%dst, "control send: {e}");
                        }
                    }
                }
                Action::SendRsvp {
                    dst,
                    ttl,
                    router_alert,
                    message,
                } => {
                    let sent = match self.rsvp.as_mut() {
                        Some(socket) => socket.send(dst, ttl, router_alert, &message),
                        None => Err(std::io::Error::other("no RSVP socket")),
                    };
                    match sent {
                        Ok(()) => self.report.control_sent += 1,
                        Err(e) => {
                            self.report.send_errors += 1;
                            tracing::warn!(%dst, "RSVP send: {e}");
                        }
                    }
                }
                Action::InstallNeighbour {
                    proxy_ip,
                    proxy_mac,
                } => {
                    match self
                        .netlink
                        .set_neighbour(&self.ifname, proxy_ip, proxy_mac.0)
                    {
                        Ok(()) => {
                            self.neighbours.insert(proxy_ip);
                        }
                        Err(e) => self.netlink_error("install neighbour", &e),
                    }
                }
                Action::RemoveNeighbour { proxy_ip } => self.remove_neighbour(proxy_ip),
                Action::InstallRoute { prefix } => {
                    match self.netlink.set_onlink_route(
                        &self.ifname,
                        prefix.network(),
                        prefix.prefix_len(),
                    ) {
                        Ok(()) => self.route = Some(prefix),
                        Err(e) => self.netlink_error("install route", &e),
                    }
                    // The route comes with the first open connection: from now on reserved
                    // traffic leaves through its own class, ahead of the host's other traffic.
                    if let Err(e) = self.shaper.prioritize(prefix) {
                        self.shaper_error("install priority class", &e);
                    }
                }
                Action::RemoveRoute { prefix } => self.remove_route(prefix),
                Action::InstallShaper {
                    id,
                    proxy_ip,
                    dst_port,
                    rate_bps,
                    max_burst,
                    ..
                } => {
                    if let Err(e) = self
                        .shaper
                        .install(id, proxy_ip, dst_port, rate_bps, max_burst)
                    {
                        self.shaper_error("install shaper", &e);
                    }
                }
                Action::RemoveShaper { id, .. } => {
                    if let Err(e) = self.shaper.remove(id) {
                        self.shaper_error("remove shaper", &e);
                    }
                }
                Action::Reply { client, tag, reply } => match json::render(&{
                    if let rtlan_core::rtcd::Reply::Failed { error, .. } = &reply {
                        *self
                            .counters
                            .refused
                            .entry(json::error_code(error))
                            .or_default() += 1;
                    }
                    reply
                }) {
                    json::Rendered::Reply(result) => self.reply(client, json::id_of(tag), result),
                    json::Rendered::Event(line) => {
                        self.clients
                            .send(&self.epoll, client.0, &line, &mut self.client_events);
                    }
                },
                Action::ManagerAdmit { conn, request } => {
                    let queued = self
                        .manager
                        .as_ref()
                        .is_some_and(|m| m.admit(conn, request));
                    if !queued {
                        let answer = ManagerAnswer::Unreachable("no bandwidth manager".into());
                        self.rtcd.handle_manager_answer(clock::now(), conn, answer);
                    }
                }
                Action::ManagerRefresh { manager_conns } => {
                    if let Some(m) = &self.manager {
                        m.refresh(manager_conns);
                    }
                }
                Action::ManagerRelease { manager_conn } => {
                    if let Some(m) = &self.manager {
                        m.release(manager_conn);
                    }
                }
                Action::CheckPids(pids) => {
                    let dead: Vec<u32> = pids.into_iter().filter(|&p| pid_is_dead(p)).collect();
                    self.rtcd.handle_dead_pids(clock::now(), &dead);
                }
            }
        }
    }

    fn remove_neighbour(&mut self, proxy_ip: Ipv4Addr) {
        match self.netlink.delete_neighbour(&self.ifname, proxy_ip) {
            Ok(()) => {
                self.neighbours.remove(&proxy_ip);
            }
            Err(e) => self.netlink_error("remove neighbour", &e),
        }
    }

    fn remove_route(&mut self, prefix: ProxyPrefix) {
        match self
            .netlink
            .delete_route(&self.ifname, prefix.network(), prefix.prefix_len())
        {
            Ok(()) => self.route = None,
            Err(e) => self.netlink_error("remove route", &e),
        }
    }

    /// Serves `GET /metrics` from this daemon's loop ([`crate::metrics`]).
    pub(super) fn set_metrics(&mut self, exporter: crate::metrics::Exporter) {
        self.metrics = Some(exporter);
    }

    /// SIGHUP: reads the configuration file again. The reservation policy is applied at once
    /// (later opens); every other changed key needs a restart and is logged as such. A file
    /// that does not parse leaves everything as it runs.
    fn reload(&mut self) {
        crate::service::reloading();
        match crate::service::reread() {
            None => tracing::warn!("SIGHUP: rtcd was started without a configuration file"),
            Some(Err(e)) => tracing::error!("reload failed, running configuration kept: {e}"),
            Some(Ok(r)) => match super::Config::from_toml_str(&r.text) {
                Err(e) => tracing::error!(
                    "reload failed, running configuration kept: {}: {e}",
                    r.path.display()
                ),
                Ok(new) => {
                    let (live, restart): (Vec<String>, Vec<String>) =
                        r.changed.into_iter().partition(|k| k == "policy");
                    if !live.is_empty() {
                        tracing::info!(
                            rules = new.policy.rules.len(),
                            "reload: reservation policy applied to later opens"
                        );
                        self.rtcd.set_policy(new.policy);
                    }
                    crate::service::warn_needs_restart("rtcd", &restart);
                    crate::service::accept(r.text);
                }
            },
        }
        crate::service::ready("reloaded");
    }

    fn shaper_error(&mut self, what: &str, e: &super::tc::TcError) {
        self.report.shaper_errors += 1;
        tracing::warn!(ifname = %self.ifname, "{what}: {e}");
    }

    fn netlink_error(&mut self, what: &str, e: &crate::netlink::NetlinkError) {
        self.report.netlink_errors += 1;
        tracing::warn!(ifname = %self.ifname, "{what}: {e}");
    }

    /// Releases every client's connections (one TEARDOWN each, no waiting for the ack) and
    /// removes what this daemon installed.
    fn shutdown(&mut self) {
        let now = clock::now();
        for client in self.clients.clients() {
            self.rtcd.handle_client_gone(now, ClientId(client));
        }
        self.perform_actions();
        for ip in std::mem::take(&mut self.neighbours) {
            self.remove_neighbour(ip);
        }
        if let Some(prefix) = self.route {
            self.remove_route(prefix);
        }
        if let Err(e) = self.shaper.shutdown() {
            self.shaper_error("remove root qdisc", &e);
        }
        if let Some(m) = &mut self.manager {
            m.finish();
        }
    }

    pub(super) fn report(&self) -> RunReport {
        RunReport {
            clients_accepted: self.clients.stats().accepted,
            client_requests: self.clients.stats().requests,
            client_errors: self.clients.stats().errors,
            auth: *self.rtcd.auth_stats(),
            ..self.report.clone()
        }
    }
}
