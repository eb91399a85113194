//! A simulated host: one port, an unmodified IPv4/UDP stack in miniature, and the real host
//! daemon core ([`Rtcd`], EtheReal §2.2/§3.2) inside, so a simulated reservation is signalled
//! exactly as a real one — the host sends the SETUP/REFRESH control frames the daemon asks for,
//! installs the proxy IP → proxy MAC neighbour entry it is told to, and its application then
//! sends plain UDP to the proxy IP.
//!
//! The stack answers ARP requests for its address (also the switch's probes from 0.0.0.0,
//! EtheReal §3.4), resolves next hops by ARP (queueing up to [`UNRESOLVED_QUEUE`] datagrams
//! per address, retrying every [`ARP_RETRY`] up to [`ARP_TRIES`] times), and transmits through
//! a bounded NIC queue paced at the link rate ([`Medium::FullDuplex`]). Its routing table is
//! what a Linux host's is: its subnet on-link, the daemon's on-link route for the proxy prefix,
//! and, in a topology with routers, a default route via the segment's gateway — a destination
//! outside the subnet is sent to the gateway's MAC (one ARP entry for the gateway). Without a
//! gateway every address is on-link, as on the lab's one flat subnet. Traffic sources and sinks
//! are [`crate::traffic`].

use std::collections::{BTreeMap, VecDeque};
use std::net::Ipv4Addr;
use std::time::Duration;

use rtlan_core::node::{Medium, Node, PortId};
use rtlan_core::rsvp::{self as rsvp_engine, Rsvp, RsvpConfig};
use rtlan_core::rtcd::{self, Action, ClientId, ManagerAnswer, Reply, Request, Rtcd};
use rtlan_core::shaper::wire_bytes;
use rtlan_core::switch::tx_time;
use rtlan_core::time::Instant;
use rtlan_wire::control::ETHERTYPE as CONTROL_ETHERTYPE;
use rtlan_wire::ethernet::{self, Address, EtherType, Frame};
use rtlan_wire::{arp, ipv4, udp};

use crate::scenario::{ReserveSpec, SourceKind, TrafficSpec};
use crate::sessions::{SenderSessions, SessionsSpec};
use crate::traffic::{Outage, PayloadHeader, Reservation, Sink, Source, FLAG_ACK, FLAG_DATA};

/// Datagrams held per unresolved address (Linux holds about a hundred by default).
pub const UNRESOLVED_QUEUE: usize = 100;

/// Wait between ARP requests for an unresolved address (Linux `retrans_time_ms`).
pub const ARP_RETRY: Duration = Duration::from_secs(1);

/// ARP requests sent for an address before its queued datagrams are dropped.
pub const ARP_TRIES: u8 = 3;

/// Greedy sources keep at most this many of their segments in the NIC queue (a stand-in for
/// TCP small queues), so they back off instead of overflowing it.
pub const GREEDY_NIC_SHARE: usize = 16;

/// Counters of a host.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct HostStats {
    /// Frames transmitted.
    pub tx_frames: u64,
    /// Frames received (any destination).
    pub rx_frames: u64,
    /// Frames dropped because the NIC queue was full.
    pub nic_drops: u64,
    /// Datagrams dropped because their destination never answered ARP (or the queue for it
    /// was full).
    pub arp_drops: u64,
    /// ARP requests sent.
    pub arp_requests: u64,
    /// ARP replies sent.
    pub arp_replies: u64,
    /// Control frames sent for the daemon.
    pub control_tx: u64,
    /// Control frames received.
    pub control_rx: u64,
    /// Received frames addressed to another station (flooded unicast) and ignored.
    pub rx_not_for_us: u64,
}

#[derive(Debug)]
struct Unresolved {
    queued: VecDeque<Vec<u8>>,
    tries: u8,
    retry_at: Instant,
}

/// A simulated host.
#[derive(Debug)]
pub struct Host {
    pub(crate) name: String,
    mac: Address,
    ip: Ipv4Addr,
    /// The length of the host's subnet prefix (on-link destinations).
    prefix_len: u8,
    /// The default route's gateway; `None`: every destination is on-link.
    gateway: Option<Ipv4Addr>,
    /// On-link routes the daemon installed (its proxy prefix while connections are open).
    proxy_routes: Vec<rtcd::ProxyPrefix>,
    rate_bps: u64,
    rtcd: Rtcd,
    neighbours: BTreeMap<Ipv4Addr, Address>,
    unresolved: BTreeMap<Ipv4Addr, Unresolved>,
    nic: VecDeque<Vec<u8>>,
    /// Frames of reserved connections and signalling (destination under the proxy-MAC plan),
    /// sent before anything in `nic`: the host's default path gives reserved traffic its own
    /// queue ahead of its other traffic (docs/delay.md, "The host side"). Bounded by the same
    /// `nic_limit`.
    rt_nic: VecDeque<Vec<u8>>,
    nic_limit: usize,
    /// Greedy segments currently in the NIC queue, per source index.
    greedy_in_nic: Vec<usize>,
    nic_owner: VecDeque<Option<usize>>,
    busy_until: Instant,
    pub(crate) sources: Vec<Source>,
    /// Flows received here, by flow index.
    pub(crate) sinks: BTreeMap<u32, Sink>,
    /// Greedy flows received here: flow index → (source IP, source port, dest port).
    greedy_sinks: BTreeMap<u32, ()>,
    window: (Instant, Instant),
    /// When to broadcast a gratuitous ARP request announcing the host (`None`: done or off).
    announce_at: Option<Instant>,
    pub(crate) stats: HostStats,
    /// [`Node::poll_timeout`] as last computed; `None` = must be computed again (cleared by
    /// everything that changes a deadline).
    wake: std::cell::Cell<Option<Option<Instant>>>,
    /// Frames built but not yet queued (acks, replies) are pushed straight to `nic`.
    scratch: Vec<u8>,
    /// RSVP signalling for reservations across routers (docs/qsr.md §3): the host side of the
    /// same engine the routers run; `None` until a flow here needs it.
    rsvp: Option<Rsvp>,
    /// Source flows whose reservation is signalled with RSVP rather than through the daemon.
    rsvp_flows: Vec<u32>,
    /// `[[sessions]]` sent from here: RSVP sessions without data.
    pub(crate) sessions: Vec<SenderSessions>,
    /// The service this host reserves as a receiver.
    rsvp_service: rtlan_core::rtcd::RsvpService,
}

/// A host's routing for its RSVP engine: on-link inside its subnet, the gateway beyond.
struct HostRouting {
    ip: Ipv4Addr,
    prefix_len: u8,
    gateway: Option<Ipv4Addr>,
}

impl rsvp_engine::Routing for HostRouting {
    fn route(&self, dst: Ipv4Addr) -> Option<rsvp_engine::RouteTo> {
        let mask = u32::MAX
            .checked_shl(32 - u32::from(self.prefix_len))
            .unwrap_or(0);
        let on_link = u32::from(dst) & mask == u32::from(self.ip) & mask;
        Some(rsvp_engine::RouteTo {
            port: PortId(0),
            gateway: if on_link { None } else { self.gateway },
        })
    }
}

/// The MAC address the simulator gives a host with address `ip`: locally administered,
/// `02:00` followed by the four octets.
pub fn host_mac(ip: Ipv4Addr) -> Address {
    let o = ip.octets();
    Address([0x02, 0x00, o[0], o[1], o[2], o[3]])
}

impl Host {
    /// A host `name` with address `ip` on a link of `rate_bps`; the daemon starts at `now` with
    /// the topology's `host_delay` (its default without one) and no lateness budget: a
    /// simulated host never wakes late, and its NIC serves reserved frames first in one FIFO,
    /// the queue the daemon's host term bounds.
    pub(crate) fn new(
        name: &str,
        ip: Ipv4Addr,
        rate_bps: u64,
        host_delay: Option<std::time::Duration>,
        nic_limit: usize,
        window: (Instant, Instant),
        now: Instant,
    ) -> Result<Host, rtcd::RtcdError> {
        let mac = host_mac(ip);
        let mut config = rtcd::Config::new(mac, ip, rate_bps);
        config.lateness_budget = std::time::Duration::ZERO;
        if let Some(delay) = host_delay {
            config.host_delay = delay;
        }
        let rtcd = Rtcd::new(config, now)?;
        Ok(Host {
            name: name.to_string(),
            mac,
            ip,
            prefix_len: 32,
            gateway: None,
            proxy_routes: Vec::new(),
            rate_bps,
            rtcd,
            neighbours: BTreeMap::new(),
            unresolved: BTreeMap::new(),
            nic: VecDeque::new(),
            rt_nic: VecDeque::new(),
            nic_limit,
            greedy_in_nic: Vec::new(),
            nic_owner: VecDeque::new(),
            busy_until: now,
            sources: Vec::new(),
            sinks: BTreeMap::new(),
            greedy_sinks: BTreeMap::new(),
            window,
            announce_at: None,
            stats: HostStats::default(),
            wake: std::cell::Cell::new(None),
            scratch: vec![0u8; 2048],
            rsvp: None,
            rsvp_flows: Vec::new(),
            sessions: Vec::new(),
            rsvp_service: rtlan_core::rtcd::RsvpService::Guaranteed,
        })
    }

    /// Broadcasts a gratuitous ARP request at `at` (as Linux does with `arp_notify` when an
    /// interface comes up): the switches on the way learn the host's port and address, so
    /// their SETUP routing finds it without probing (EtheReal §3.4).
    pub(crate) fn announce_at(&mut self, at: Instant) {
        self.announce_at = Some(at);
    }

    /// The host's subnet (`ip/prefix_len` on-link) and default gateway. Without a gateway every
    /// destination is on-link, whatever the prefix.
    pub(crate) fn set_subnet(&mut self, prefix_len: u8, gateway: Option<Ipv4Addr>) {
        self.prefix_len = prefix_len.min(32);
        self.gateway = gateway;
    }

    /// Signals with RSVP (refresh period `refresh`) from now on; `flow`, if given, is a source
    /// of this host whose reservation crosses routers.
    pub(crate) fn use_rsvp(
        &mut self,
        refresh: Duration,
        service: rtlan_core::rtcd::RsvpService,
        flow: Option<u32>,
    ) {
        self.rsvp_service = service;
        if self.rsvp.is_none() {
            let mut config = RsvpConfig::new(rsvp_engine::Role::Host, vec![self.ip]);
            config.refresh = refresh;
            config.seed = u64::from(u32::from(self.ip));
            self.rsvp = Some(Rsvp::new(config));
        }
        if let Some(flow) = flow {
            self.rsvp_flows.push(flow);
        }
    }

    /// The RSVP engine, if the host signals with RSVP.
    pub fn rsvp(&self) -> Option<&Rsvp> {
        self.rsvp.as_ref()
    }

    fn routing(&self) -> HostRouting {
        HostRouting {
            ip: self.ip,
            prefix_len: self.prefix_len,
            gateway: self.gateway,
        }
    }

    /// A source's RSVP sender: its Path goes out (the reservation follows when the receiver's
    /// Resv comes back, [`rsvp_engine::Event::Reserved`]).
    fn open_rsvp_sender(&mut self, now: Instant, i: usize) {
        let source = &self.sources[i];
        let Some(r) = source.spec.reserve else {
            return;
        };
        let (dst, port, sport, size) = (
            source.dst_ip,
            source.spec.dst_port,
            source.spec.src_port,
            source.spec.size,
        );
        self.sources[i].reservation = Reservation::Pending;
        self.send_path(now, dst, port, sport, size, &r);
    }

    /// Adds the `[[sessions]]` table number `group`, sent from here to `dst_ip`; the host's
    /// RSVP engine must be on ([`Host::use_rsvp`]).
    pub(crate) fn add_sessions(&mut self, group: usize, spec: SessionsSpec, dst_ip: Ipv4Addr) {
        self.wake.set(None);
        self.sessions.push(SenderSessions::new(group, spec, dst_ip));
    }

    /// Sends the Path of every session that is due.
    fn open_sessions(&mut self, now: Instant) {
        let elapsed = Duration::from_nanos(now.as_nanos());
        for g in 0..self.sessions.len() {
            while let Some(port) = self.sessions[g].take_due(elapsed) {
                self.wake.set(None);
                let group = &self.sessions[g];
                let (dst, sport, size, r) = (
                    group.dst_ip,
                    group.spec.src_port,
                    group.spec.size,
                    group.spec.reserve,
                );
                self.send_path(now, dst, port, sport, size, &r);
            }
        }
    }

    /// The sender's Path for the UDP session `dst`:`port` from `sport`, datagrams of `size`
    /// payload bytes reserved as `r`.
    fn send_path(
        &mut self,
        now: Instant,
        dst: Ipv4Addr,
        port: u16,
        sport: u16,
        size: usize,
        r: &ReserveSpec,
    ) {
        let ip_len = (size + 28) as u32;
        let rate = r.rate_bps as f32 / 8.0;
        let bucket = (r.burst as f32).max(ip_len as f32);
        let tspec = rsvp_tspec(rate, bucket, ip_len);
        let session = rtlan_wire::rsvp::Session {
            dst_addr: dst,
            protocol_id: 17,
            flags: 0,
            dst_port: port,
        };
        let sender = rtlan_wire::rsvp::SenderDescriptor {
            sender_template: rtlan_wire::rsvp::FilterSpec {
                src_addr: self.ip,
                src_port: sport,
            },
            sender_tspec: tspec,
            adspec: Some(rtlan_wire::rsvp::Adspec::sender_initial(1500)),
        };
        let routing = self.routing();
        if let Some(engine) = self.rsvp.as_mut() {
            engine.open_sender(
                now,
                session,
                sender,
                &routing,
                &mut rsvp_engine::NoResources,
            );
        }
        self.drain_rsvp(now);
    }

    /// Carries out what the RSVP engine asks: messages out through the gateway, events to the
    /// sources (a reservation opens or goes) and sinks (a sender's path arrives: the receiver
    /// reserves for it, Guaranteed at the sender's token rate, as a receiver's daemon does).
    fn drain_rsvp(&mut self, now: Instant) {
        self.wake.set(None);
        let mut outputs = Vec::new();
        if let Some(engine) = self.rsvp.as_mut() {
            while let Some(o) = engine.poll_output() {
                outputs.push(o);
            }
        }
        for o in outputs {
            match o {
                rsvp_engine::Output::Send(o) => self.send_rsvp(now, &o),
                rsvp_engine::Output::Event(e) => self.on_rsvp_event(now, e),
                rsvp_engine::Output::Splice(_) | rsvp_engine::Output::Unsplice(_) => {}
            }
        }
    }

    fn send_rsvp(&mut self, now: Instant, o: &rsvp_engine::Outgoing) {
        let Ok(body) = o.message.to_repr(o.ttl).to_bytes() else {
            return;
        };
        let packet = rtlan_wire::rsvp::ip_packet(o.src, o.dst, o.ttl, o.router_alert, &body);
        let mut frame = vec![0u8; 14 + packet.len()];
        frame[6..12].copy_from_slice(&self.mac.0);
        frame[12..14].copy_from_slice(&[0x08, 0x00]);
        frame[14..].copy_from_slice(&packet);
        if frame.len() < 60 {
            frame.resize(60, 0);
        }
        self.stats.control_tx += 1;
        self.send_ip(now, o.dst, frame, None);
    }

    fn on_rsvp_event(&mut self, now: Instant, event: rsvp_engine::Event) {
        use rsvp_engine::Event;
        match event {
            Event::PathArrived { session, sender } => {
                // The receiver's side: reserve what the sender announced.
                let flowspec = self.rsvp_service.flowspec(sender.sender_tspec);
                let descriptors = rtlan_wire::rsvp::FlowDescriptors::FixedFilter(vec![(
                    flowspec,
                    sender.sender_template,
                )]);
                if let Some(engine) = self.rsvp.as_mut() {
                    engine.reserve(
                        now,
                        session,
                        descriptors,
                        false,
                        &mut rsvp_engine::NoResources,
                    );
                }
                self.drain_rsvp(now);
            }
            Event::Reserved {
                session, sender, ..
            } => {
                let Some(i) = self.rsvp_source(&session, &sender) else {
                    let (dst, port, sport) = (session.dst_addr, session.dst_port, sender.src_port);
                    let now_ns = now.as_nanos();
                    self.sessions
                        .iter_mut()
                        .any(|g| g.reserved(now_ns, dst, port, sport));
                    return;
                };
                let source = &mut self.sources[i];
                match source.reservation {
                    Reservation::Pending => {
                        source.reservation = Reservation::Opened {
                            proxy_ip: source.dst_ip,
                            hops: 0,
                            bound_us: None,
                            at_ns: now.as_nanos(),
                        };
                        if let Err(e) = source.build_shaper(now) {
                            source.reservation = Reservation::Refused(format!("shaper: {e}"));
                            return;
                        }
                        source.begin(now);
                    }
                    _ => {
                        if let Some(open) = source.outages.last_mut().filter(|o| o.end_ns.is_none())
                        {
                            open.end_ns = Some(now.as_nanos());
                        }
                    }
                }
            }
            Event::ReservationGone { session, sender } => {
                if let Some(i) = self.rsvp_source(&session, &sender) {
                    self.sources[i].outages.push(Outage {
                        reason: "reservation gone".to_string(),
                        start_ns: now.as_nanos(),
                        end_ns: None,
                        revoked: false,
                    });
                } else {
                    let (dst, port, sport) = (session.dst_addr, session.dst_port, sender.src_port);
                    self.sessions.iter_mut().any(|g| g.gone(dst, port, sport));
                }
            }
            Event::PathError {
                session,
                sender,
                error,
            } => {
                if let Some(i) = self.rsvp_source(&session, &sender) {
                    if matches!(self.sources[i].reservation, Reservation::Pending) {
                        self.sources[i].reservation =
                            Reservation::Refused(format!("PathErr {:?}", error.code));
                    }
                } else {
                    let (dst, port, sport) = (session.dst_addr, session.dst_port, sender.src_port);
                    self.sessions
                        .iter_mut()
                        .any(|g| g.refused(dst, port, sport));
                }
            }
            Event::PathGone { .. } | Event::ResvError { .. } | Event::Confirmed { .. } => {}
        }
    }

    /// The RSVP-signalled source of `sender` in `session`.
    fn rsvp_source(
        &self,
        session: &rtlan_wire::rsvp::Session,
        sender: &rtlan_wire::rsvp::FilterSpec,
    ) -> Option<usize> {
        self.sources.iter().position(|s| {
            self.rsvp_flows.contains(&s.flow)
                && s.dst_ip == session.dst_addr
                && s.spec.dst_port == session.dst_port
                && s.spec.src_port == sender.src_port
        })
    }

    /// An RSVP message for this host; `true` if it was one.
    fn handle_rsvp(&mut self, now: Instant, frame: &[u8]) -> bool {
        if self.rsvp.is_none() {
            return false;
        }
        let Ok(eth) = Frame::new_checked(frame) else {
            return false;
        };
        let Ok(ip) = ipv4::Packet::new_checked(eth.payload()) else {
            return false;
        };
        if u8::from(ip.protocol()) != 46 || ip.dst_addr() != self.ip {
            return false;
        }
        let message = rtlan_wire::rsvp::Packet::new_checked(ip.payload())
            .and_then(|p| rtlan_wire::rsvp::Repr::parse(&p))
            .and_then(|r| rtlan_wire::rsvp::Message::from_repr(&r));
        let Ok(message) = message else {
            return true;
        };
        self.stats.control_rx += 1;
        let rx = rsvp_engine::Received {
            port: PortId(0),
            src: ip.src_addr(),
            ttl: ip.ttl(),
        };
        let routing = self.routing();
        if let Some(engine) = self.rsvp.as_mut() {
            engine.handle_message(now, rx, message, &routing, &mut rsvp_engine::NoResources);
        }
        self.drain_rsvp(now);
        true
    }

    /// The next hop towards `dst`: `dst` itself when it is on-link (the host's subnet or an
    /// on-link route of the daemon), else the gateway.
    fn next_hop(&self, dst: Ipv4Addr) -> Ipv4Addr {
        let Some(gateway) = self.gateway else {
            return dst;
        };
        let mask = u32::MAX
            .checked_shl(32 - u32::from(self.prefix_len))
            .unwrap_or(0);
        let same_subnet = u32::from(dst) & mask == u32::from(self.ip) & mask;
        if same_subnet || self.proxy_routes.iter().any(|p| p.contains(dst)) {
            dst
        } else {
            gateway
        }
    }

    /// The host daemon core.
    pub fn rtcd(&self) -> &Rtcd {
        &self.rtcd
    }

    /// Adds a source of flow `flow`; reserved flows register a client with the daemon.
    pub(crate) fn add_source(
        &mut self,
        flow: u32,
        spec: TrafficSpec,
        dst_ip: Ipv4Addr,
        seed: u64,
        now: Instant,
    ) {
        if spec.reserve.is_some() && !self.rsvp_flows.contains(&flow) {
            let client = ClientId(u64::from(flow));
            let pid = flow.saturating_add(1);
            self.rtcd
                .handle_client_request(now, client, 0, Request::Register { pid });
            self.run_daemon(now);
        }
        self.sources.push(Source::new(flow, spec, dst_ip, seed));
        self.greedy_in_nic.push(0);
    }

    /// Adds a sink for flow `flow`.
    pub(crate) fn add_sink(&mut self, flow: u32, greedy: bool) {
        self.sinks.insert(flow, Sink::default());
        if greedy {
            self.greedy_sinks.insert(flow, ());
        }
    }

    /// Queues `frame` on the NIC (dropped and counted when full); `owner` is the greedy
    /// source it belongs to.
    fn enqueue(&mut self, frame: Vec<u8>, owner: Option<usize>) -> bool {
        self.wake.set(None);
        let plan = self.rtcd.config().plan;
        let reserved = Frame::new_checked(&frame[..]).is_ok_and(|f| {
            let dst = f.dst_addr();
            plan.connection_id(&dst).is_some() || plan.is_control(&dst)
        });
        if reserved {
            if self.rt_nic.len() >= self.nic_limit {
                self.stats.nic_drops += 1;
                return false;
            }
            self.rt_nic.push_back(frame);
            return true;
        }
        if self.nic.len() >= self.nic_limit {
            self.stats.nic_drops += 1;
            return false;
        }
        if let Some(i) = owner {
            if let Some(n) = self.greedy_in_nic.get_mut(i) {
                *n += 1;
            }
        }
        self.nic.push_back(frame);
        self.nic_owner.push_back(owner);
        true
    }

    /// Sends an IPv4 frame to `dst` through its next hop (resolving that by ARP if needed).
    fn send_ip(
        &mut self,
        now: Instant,
        dst: Ipv4Addr,
        mut frame: Vec<u8>,
        owner: Option<usize>,
    ) -> bool {
        let next_hop = self.next_hop(dst);
        if let Some(&mac) = self.neighbours.get(&next_hop) {
            if let Ok(mut eth) = Frame::new_checked(&mut frame[..]) {
                eth.set_dst_addr(mac);
            }
            return self.enqueue(frame, owner);
        }
        self.wake.set(None);
        let entry = self.unresolved.entry(next_hop).or_insert(Unresolved {
            queued: VecDeque::new(),
            tries: 0,
            retry_at: now,
        });
        if entry.queued.len() >= UNRESOLVED_QUEUE {
            self.stats.arp_drops += 1;
            return false;
        }
        entry.queued.push_back(frame);
        if entry.tries == 0 {
            self.arp_request(now, next_hop);
        }
        true
    }

    fn arp_request(&mut self, now: Instant, target: Ipv4Addr) {
        if let Some(entry) = self.unresolved.get_mut(&target) {
            entry.tries += 1;
            entry.retry_at = now + ARP_RETRY;
        }
        self.broadcast_arp(target);
    }

    /// Broadcasts an ARP request for `target` (our own address: a gratuitous announcement).
    fn broadcast_arp(&mut self, target: Ipv4Addr) {
        let repr = arp::Repr {
            operation: arp::Operation::Request,
            source_hardware_addr: self.mac,
            source_protocol_addr: self.ip,
            target_hardware_addr: Address([0; 6]),
            target_protocol_addr: target,
        };
        let mut buf = vec![0u8; 60];
        if repr
            .emit_frame(self.mac, Address::BROADCAST, &mut buf)
            .is_ok()
        {
            self.stats.arp_requests += 1;
            self.enqueue(buf, None);
        }
    }

    /// Builds a UDP frame from this host to `dst_ip` (the Ethernet destination is filled in
    /// when the next hop is resolved).
    fn udp_frame(
        &mut self,
        dst_ip: Ipv4Addr,
        src_port: u16,
        dst_port: u16,
        size: usize,
        header: &PayloadHeader,
    ) -> Vec<u8> {
        let len = ethernet::HEADER_LEN + ipv4::HEADER_LEN + udp::HEADER_LEN + size;
        let mut frame = vec![0u8; len];
        let eth = ethernet::Repr {
            src_addr: self.mac,
            dst_addr: Address([0; 6]),
            ethertype: EtherType::Ipv4,
        };
        eth.emit(&mut Frame::new_unchecked(&mut frame[..]));
        let ip = ipv4::Repr {
            src_addr: self.ip,
            dst_addr: dst_ip,
            protocol: ipv4::Protocol::Udp,
            payload_len: udp::HEADER_LEN + size,
            ttl: 64,
            dscp_ecn: 0,
        };
        let ip_start = ethernet::HEADER_LEN;
        let udp_start = ip_start + ipv4::HEADER_LEN;
        ip.emit(&mut ipv4::Packet::new_unchecked(&mut frame[ip_start..]));
        let repr = udp::Repr {
            src_port,
            dst_port,
            payload_len: size,
        };
        let mut datagram = udp::Packet::new_unchecked(&mut frame[udp_start..]);
        repr.emit(&mut datagram);
        header.emit(datagram.payload_mut());
        datagram.fill_checksum(self.ip, dst_ip);
        frame
    }

    /// Performs the daemon's actions.
    fn run_daemon(&mut self, now: Instant) {
        self.wake.set(None);
        while let Some(action) = self.rtcd.poll_action() {
            match action {
                Action::SendControl { dst, repr } => {
                    let mut buf = std::mem::take(&mut self.scratch);
                    if let Ok(len) = repr.emit_frame(self.mac, dst, &mut buf) {
                        let frame = buf[..len.max(60)].to_vec();
                        self.stats.control_tx += 1;
                        self.enqueue(frame, None);
                    }
                    self.scratch = buf;
                }
                Action::InstallNeighbour {
                    proxy_ip,
                    proxy_mac,
                } => {
                    self.neighbours.insert(proxy_ip, proxy_mac);
                }
                Action::RemoveNeighbour { proxy_ip } => {
                    self.neighbours.remove(&proxy_ip);
                }
                // The proxy prefix on-link, as the daemon does on Linux (it matters only with a
                // gateway: without one every destination is on-link anyway).
                Action::InstallRoute { prefix } => {
                    if !self.proxy_routes.contains(&prefix) {
                        self.proxy_routes.push(prefix);
                    }
                }
                Action::RemoveRoute { prefix } => self.proxy_routes.retain(|p| *p != prefix),
                Action::Reply { client, reply, .. } => self.on_reply(now, client, reply),
                // Sources shape themselves; no kernel shaper to install.
                Action::InstallShaper { .. } | Action::RemoveShaper { .. } => {}
                // The simulated daemon signals EtheReal; reservations across routers use the
                // host's own RSVP engine (`use_rsvp`).
                Action::SendRsvp { .. } => {}
                // Simulated applications never die.
                Action::CheckPids(_) => self.rtcd.handle_dead_pids(now, &[]),
                Action::ManagerAdmit { conn, .. } => self.rtcd.handle_manager_answer(
                    now,
                    conn,
                    ManagerAnswer::Unreachable("no bandwidth manager in the simulator".into()),
                ),
                Action::ManagerRelease { .. } | Action::ManagerRefresh { .. } => {}
            }
        }
    }

    fn on_reply(&mut self, now: Instant, client: ClientId, reply: Reply) {
        let Some(source) = self
            .sources
            .iter_mut()
            .find(|s| u64::from(s.flow) == client.0)
        else {
            return;
        };
        match reply {
            Reply::Opened {
                proxy_ip,
                hops,
                delay_bound_us,
                ..
            } => {
                source.reservation = Reservation::Opened {
                    proxy_ip,
                    hops,
                    bound_us: delay_bound_us,
                    at_ns: now.as_nanos(),
                };
                if let Err(e) = source.build_shaper(now) {
                    source.reservation = Reservation::Refused(format!("shaper: {e}"));
                    return;
                }
                source.begin(now);
            }
            Reply::Failed { error, .. } => {
                source.reservation = Reservation::Refused(error.to_string());
            }
            Reply::Revoked { reason, .. } => {
                source.reservation = Reservation::Refused(format!("revoked by the path: {reason}"));
                source.next = None;
                if let Some(open) = source.outages.last_mut().filter(|o| o.end_ns.is_none()) {
                    open.end_ns = Some(now.as_nanos());
                    open.revoked = true;
                }
            }
            // Signalled again under the same proxy IP: the source keeps sending, and the
            // outage is recorded for the results.
            Reply::Interrupted { reason, .. } => source.outages.push(Outage {
                reason: reason.name().to_string(),
                start_ns: now.as_nanos(),
                end_ns: None,
                revoked: false,
            }),
            Reply::Recovered { .. } => {
                if let Some(open) = source.outages.last_mut().filter(|o| o.end_ns.is_none()) {
                    open.end_ns = Some(now.as_nanos());
                }
            }
            Reply::Registered { .. } | Reply::Closed { .. } | Reply::List(_) => {}
        }
    }

    /// Runs the sources whose time has come, the shapers and the greedy timers.
    fn run_sources(&mut self, now: Instant) {
        self.wake.set(None);
        for i in 0..self.sources.len() {
            if !self.sources[i].started && self.sources[i].start <= now {
                self.sources[i].started = true;
                self.start_source(now, i);
            }
            self.run_source(now, i);
        }
    }

    /// Source `i` reaches its start time: a reserved flow asks the daemon (and sends once the
    /// grant comes back), a plain one starts at once.
    fn start_source(&mut self, now: Instant, i: usize) {
        if self.rsvp_flows.contains(&self.sources[i].flow) {
            self.open_rsvp_sender(now, i);
            return;
        }
        let source = &mut self.sources[i];
        if let Some(r) = source.spec.reserve {
            let request = Request::Open {
                dst_ip: source.dst_ip,
                dst_port: source.spec.dst_port,
                src_port: source.spec.src_port,
                rate_bps: r.rate_bps,
                max_burst: r.burst,
                max_packet: r.max_packet,
                shaping: rtcd::DaemonShaping::None,
                delay_us: r
                    .delay
                    .map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX)),
            };
            let client = ClientId(u64::from(source.flow));
            self.rtcd.handle_client_request(now, client, 0, request);
            self.run_daemon(now);
            return;
        }
        if let Err(e) = source.build_shaper(now) {
            source.reservation = Reservation::Refused(format!("shaper: {e}"));
            return;
        }
        if source.spec.kind != SourceKind::Greedy {
            source.begin(now);
        }
    }

    fn run_source(&mut self, now: Instant, i: usize) {
        let source = &self.sources[i];
        let generate = source.next.is_some_and(|t| t <= now);
        let release = source.shaper_due.is_some_and(|t| t <= now);
        if !generate && !release && source.greedy.is_none() {
            return;
        }
        if self.sources[i].spec.kind == SourceKind::Greedy {
            self.run_greedy(now, i);
            return;
        }
        while let Some(due) = self.sources[i].next.filter(|&t| t <= now) {
            let source = &mut self.sources[i];
            let seq = source.seq_next();
            let header = PayloadHeader {
                flow: source.flow,
                seq,
                sent_ns: due.as_nanos(),
                flag: FLAG_DATA,
                ack: 0,
            };
            let wire = wire_bytes(source.spec.size);
            source.count_sent(due, wire, self.window);
            source.advance(due);
            if let Some(shaper) = source.shaper.as_mut() {
                if shaper
                    .handle_send(now, source.spec.size, (seq, due.as_nanos()))
                    .is_err()
                {
                    source.stats.shaper_drops += 1;
                }
            } else {
                self.emit_data(now, i, header, None);
            }
        }
        // Release what the shaper allows.
        while let Some(tx) = self.sources[i]
            .shaper
            .as_mut()
            .and_then(|shaper| shaper.poll_transmit(now))
        {
            let (seq, sent_ns) = tx.payload;
            let header = PayloadHeader {
                flow: self.sources[i].flow,
                seq,
                sent_ns,
                flag: FLAG_DATA,
                ack: 0,
            };
            self.emit_data(now, i, header, None);
        }
        let source = &mut self.sources[i];
        source.shaper_due = source.shaper.as_ref().and_then(|sh| sh.poll_timeout());
    }

    fn run_greedy(&mut self, now: Instant, i: usize) {
        let started = self.sources[i].start <= now && self.sources[i].stop > now;
        let Some(g) = self.sources[i].greedy.as_mut() else {
            return;
        };
        if g.rto_at.is_some_and(|t| t <= now) {
            g.on_timeout(now);
        }
        if !started {
            g.rto_at = None;
            return;
        }
        while self.greedy_in_nic[i] < GREEDY_NIC_SHARE && self.nic.len() < self.nic_limit {
            let source = &mut self.sources[i];
            let Some(g) = source.greedy.as_mut() else {
                return;
            };
            if !g.can_send() {
                break;
            }
            let (seq, again) = g.take(now);
            if again {
                source.stats.retransmits += 1;
            }
            let header = PayloadHeader {
                flow: source.flow,
                seq,
                sent_ns: now.as_nanos(),
                flag: FLAG_DATA,
                ack: 0,
            };
            let wire = wire_bytes(source.spec.size);
            source.count_sent(now, wire, self.window);
            self.emit_data(now, i, header, Some(i));
        }
    }

    fn emit_data(&mut self, now: Instant, i: usize, header: PayloadHeader, owner: Option<usize>) {
        let source = &self.sources[i];
        let dst = match source.reservation {
            Reservation::Opened { proxy_ip, .. } => proxy_ip,
            _ => source.dst_ip,
        };
        let (sp, dp, size) = (source.spec.src_port, source.spec.dst_port, source.spec.size);
        let frame = self.udp_frame(dst, sp, dp, size, &header);
        self.send_ip(now, dst, frame, owner);
    }

    fn handle_arp(&mut self, now: Instant, payload: &[u8]) {
        let Ok(repr) = arp::Packet::new_checked(payload).and_then(|p| arp::Repr::parse(&p)) else {
            return;
        };
        if repr.target_protocol_addr != self.ip || repr.source_protocol_addr == self.ip {
            return;
        }
        if !repr.source_protocol_addr.is_unspecified() {
            self.learn(now, repr.source_protocol_addr, repr.source_hardware_addr);
        }
        if repr.operation == arp::Operation::Request {
            let reply = arp::Repr {
                operation: arp::Operation::Reply,
                source_hardware_addr: self.mac,
                source_protocol_addr: self.ip,
                target_hardware_addr: repr.source_hardware_addr,
                target_protocol_addr: repr.source_protocol_addr,
            };
            let mut buf = vec![0u8; 60];
            if reply
                .emit_frame(self.mac, repr.source_hardware_addr, &mut buf)
                .is_ok()
            {
                self.stats.arp_replies += 1;
                self.enqueue(buf, None);
            }
        }
    }

    /// `ip` is at `mac`: remember it and send what waited for it.
    fn learn(&mut self, _now: Instant, ip: Ipv4Addr, mac: Address) {
        self.wake.set(None);
        self.neighbours.insert(ip, mac);
        if let Some(waiting) = self.unresolved.remove(&ip) {
            for mut frame in waiting.queued {
                if let Ok(mut eth) = Frame::new_checked(&mut frame[..]) {
                    eth.set_dst_addr(mac);
                }
                self.enqueue(frame, None);
            }
        }
    }

    /// A received IPv4 frame: data to a sink (acknowledged on greedy flows), or an ack for a
    /// greedy source (returns `true` then).
    fn handle_udp(&mut self, now: Instant, frame: &[u8]) -> bool {
        let Ok(eth) = Frame::new_checked(frame) else {
            return false;
        };
        let Ok(ip) = ipv4::Packet::new_checked(eth.payload()) else {
            return false;
        };
        if ip.dst_addr() != self.ip || ip.protocol() != ipv4::Protocol::Udp {
            return false;
        }
        let Ok(datagram) = udp::Packet::new_checked(ip.payload()) else {
            return false;
        };
        let Some(header) = PayloadHeader::parse(datagram.payload()) else {
            return false;
        };
        let wire = rtlan_core::switch::wire_bits(frame.len()) / 8;
        if header.flag == FLAG_ACK {
            if let Some(source) = self.sources.iter_mut().find(|s| s.flow == header.flow) {
                if let Some(g) = source.greedy.as_mut() {
                    g.on_ack(now, header.ack, header.sent_ns);
                }
            }
            return true;
        }
        let greedy = self.greedy_sinks.contains_key(&header.flow);
        let window = self.window;
        let Some(sink) = self.sinks.get_mut(&header.flow) else {
            return false;
        };
        sink.record(now, header.seq, header.sent_ns, wire, window, greedy);
        if greedy {
            let ack = PayloadHeader {
                flow: header.flow,
                seq: header.seq,
                sent_ns: header.sent_ns,
                flag: FLAG_ACK,
                ack: sink.expected,
            };
            let (to, sport, dport) = (ip.src_addr(), datagram.dst_port(), datagram.src_port());
            let frame = self.udp_frame(to, sport, dport, crate::traffic::PAYLOAD_HEADER_LEN, &ack);
            self.send_ip(now, to, frame, None);
        }
        false
    }
}

impl Node for Host {
    fn port_count(&self) -> usize {
        1
    }

    fn medium(&self, port: PortId) -> Medium {
        if port.0 == 0 {
            Medium::FullDuplex {
                rate_bps: self.rate_bps,
            }
        } else {
            Medium::Unpaced
        }
    }

    fn handle_link(&mut self, now: Instant, port: PortId, up: bool) {
        if port.0 != 0 {
            return;
        }
        // The daemon watches its own link as on a real host (netlink, `ETHTOOL_GLINK`).
        self.rtcd.handle_link(now, up);
        self.run_daemon(now);
    }

    fn handle_frame(&mut self, now: Instant, port: PortId, frame: &[u8]) {
        if port.0 != 0 {
            return;
        }
        self.stats.rx_frames += 1;
        let Ok(eth) = Frame::new_checked(frame) else {
            return;
        };
        let dst = eth.dst_addr();
        // Switches address control messages to the plan's control MAC (EtheReal §3.4), which
        // the daemon listens on like a multicast group.
        let control = self.rtcd.config().plan.control_mac();
        if dst != self.mac && !dst.is_broadcast() && dst != control {
            self.stats.rx_not_for_us += 1;
            return;
        }
        let ethertype = eth.inner_ethertype();
        if ethertype == EtherType::Arp {
            self.handle_arp(now, eth.payload());
        } else if ethertype == EtherType::from(CONTROL_ETHERTYPE) {
            self.stats.control_rx += 1;
            // A message that does not parse is refused by the daemon and otherwise ignored.
            let _ = self
                .rtcd
                .handle_control_frame(now, eth.src_addr(), eth.payload());
            self.run_daemon(now);
            // A grant starts its source.
            self.run_sources(now);
        } else if ethertype == EtherType::Ipv4 && self.handle_rsvp(now, frame) {
            // A grant may start a source.
            self.run_sources(now);
        } else if ethertype == EtherType::Ipv4 && self.handle_udp(now, frame) {
            // An ack opened a greedy window.
            self.run_sources(now);
        }
    }

    fn poll_transmit(&mut self, now: Instant, port: PortId, buf: &mut [u8]) -> Option<usize> {
        if port.0 != 0 || now < self.busy_until {
            return None;
        }
        let (frame, owner) = match self.rt_nic.pop_front() {
            Some(frame) => (frame, None),
            None => (self.nic.pop_front()?, self.nic_owner.pop_front().flatten()),
        };
        self.wake.set(None);
        if let Some(n) = owner.and_then(|i| self.greedy_in_nic.get_mut(i)) {
            *n = n.saturating_sub(1);
        }
        let len = frame.len().min(buf.len());
        buf[..len].copy_from_slice(&frame[..len]);
        self.busy_until = now + tx_time(len, self.rate_bps);
        self.stats.tx_frames += 1;
        // A greedy source may refill the room it just got.
        if let Some(i) = owner {
            self.run_greedy(now, i);
        }
        Some(len)
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.wake.set(None);
        if self.announce_at.is_some_and(|t| t <= now) {
            self.announce_at = None;
            self.broadcast_arp(self.ip);
        }
        self.open_sessions(now);
        if self.rtcd.poll_timeout().is_some_and(|t| t <= now) {
            self.rtcd.handle_timeout(now);
            self.run_daemon(now);
        }
        if self
            .rsvp
            .as_ref()
            .and_then(Rsvp::poll_timeout)
            .is_some_and(|t| t <= now)
        {
            if let Some(engine) = self.rsvp.as_mut() {
                engine.handle_timeout(now, &mut rsvp_engine::NoResources);
            }
            self.drain_rsvp(now);
        }
        let due: Vec<Ipv4Addr> = self
            .unresolved
            .iter()
            .filter(|(_, u)| u.retry_at <= now)
            .map(|(&ip, _)| ip)
            .collect();
        for ip in due {
            let tries = self.unresolved.get(&ip).map_or(0, |u| u.tries);
            if tries >= ARP_TRIES {
                if let Some(gone) = self.unresolved.remove(&ip) {
                    self.stats.arp_drops += gone.queued.len() as u64;
                }
            } else {
                self.arp_request(now, ip);
            }
        }
        self.run_sources(now);
    }

    fn poll_timeout(&self) -> Option<Instant> {
        if let Some(wake) = self.wake.get() {
            return wake;
        }
        let wake = self.compute_wake();
        self.wake.set(Some(wake));
        wake
    }
}

impl Host {
    fn compute_wake(&self) -> Option<Instant> {
        let mut next = self.rtcd.poll_timeout();
        if let Some(t) = self.rsvp.as_ref().and_then(Rsvp::poll_timeout) {
            next = Some(next.map_or(t, |n| n.min(t)));
        }
        let mut consider = |t: Option<Instant>| {
            if let Some(t) = t {
                next = Some(next.map_or(t, |n| n.min(t)));
            }
        };
        if !self.nic.is_empty() || !self.rt_nic.is_empty() {
            consider(Some(self.busy_until));
        }
        consider(self.announce_at);
        for g in &self.sessions {
            consider(g.next_open().map(|d| Instant::ZERO + d));
        }
        for u in self.unresolved.values() {
            consider(Some(u.retry_at));
        }
        for s in &self.sources {
            consider(s.next);
            if !s.started {
                consider(Some(s.start));
            }
            consider(s.shaper_due);
            if let Some(g) = &s.greedy {
                consider(g.rto_at);
            }
        }
        next
    }
}

/// The TSpec of a source that sends `ip_len`-byte IP packets at `rate` bytes/s with a bucket of
/// `bucket` bytes: m = M = the packet (the router's wire-rate conversion then adds only the
/// framing of these packets).
fn rsvp_tspec(rate: f32, bucket: f32, ip_len: u32) -> rtlan_wire::rsvp::TokenBucket {
    use rtlan_wire::rsvp::F32Bits;
    rtlan_wire::rsvp::TokenBucket {
        rate: F32Bits::from_f32(rate),
        size: F32Bits::from_f32(bucket),
        peak: F32Bits::from_f32(f32::INFINITY),
        min_policed_unit: ip_len,
        max_packet_size: ip_len,
    }
}
