//! The QSR router as a node of the shared contract (`docs/qsr.md` §2): default IP forwarding
//! (QSR paper §4.1) on Ethernet ports, sans IO.
//!
//! A frame's way through ([`Router::handle_frame`]): Ethernet (addressed to the port's MAC or
//! broadcast) → ARP to the neighbour table, or IPv4: header and checksum checks, martian
//! filters (RFC 1812 §5.3.7), then the paper's decision ([`super::Tables::decide`]: traps →
//! RSVP classifier → PSIP classifier → longest prefix match). Trapped packets go to the control
//! plane ([`Router::poll_trapped`]) — or, for an echo request to the router with
//! `answer_local`, are answered here. Forwarded packets lose one TTL (RFC 1624 incremental
//! checksum) and go to the output port's default queue with the next hop's MAC, after an ARP
//! exchange if the next hop is not known yet. TTL expiry and missing routes or neighbours are
//! answered with ICMP errors (RFC 1812 §4.3), rate-limited per input port.
//!
//! With RSVP configured ([`super::RsvpSettings`]) the router runs the RSVP engine
//! ([`crate::rsvp`]) on the RSVP messages it traps, and its splices switch reserved flows
//! (QSR §3.2, §4.2; [`super::switched`]): the RSVP classifier puts a sender's packets on its
//! reservation's flow with the first label pushed, labelled (MPLS) frames are switched by
//! (port, label) without an IP look-up, and the last router pops the label. Provisioned pipes
//! (QSR §5, [`super::pipes`]) are RSVP sessions this router starts ([`Router::create_pipe`]) or
//! ends as a receiver proxy: at the ingress the PSIP classifier's hits go onto the pipe's label,
//! at the egress the label is popped and the packet routed onto the pipe's flow.
//!
//! Driver call order, as for every node (`core/src/node.rs`): [`Router::handle_frame`] per
//! received frame, [`Router::handle_link`] on carrier changes, [`Router::handle_timeout`] when
//! [`Router::poll_timeout`] is due, then [`Router::poll_transmit`] per port until `None`, and
//! [`Router::poll_trapped`] until `None` for the control plane. Route changes
//! ([`Router::install_route`], [`Router::remove_route`]) may come at any time.
//!
//! A best-effort fast path below the router (the Linux shell's XDP program) reads what it may
//! forward without the core from [`super::fastpath`] ([`Router::fast_table`] whenever
//! [`Router::fast_version`] changes, [`Router::fast_path_closed`] per port) after each batch;
//! [`Router::track_fast_path`] makes the core refresh the neighbours it uses on its timer.

mod pipe_glue;

use std::collections::VecDeque;
use std::net::Ipv4Addr;

use rtlan_wire::ethernet::{Address, EtherType, Frame};
use rtlan_wire::{arp, icmp, ipv4, mpls, rsvp as wire_rsvp};

use super::classify::FlowKey;
use super::config::{RouterConfig, RouterConfigError, RouterPortStats, RouterStats};
use super::decide::{Decision, PacketFields, Tables, TrapReason};
use super::fib::{NextHop, Route, RouteSource};
use super::neighbours::{Due, Hold, Lookup, Neighbours, Waiting};
use super::pipes::{
    is_pipe_session, EgressPipe, IngressPipe, PipeCounters, PipeError, PipeRefusal, PipeService,
    PipeSpec, PipeState, PipeStatus, Pipes,
};
use super::switched::{self, FibRouting, Ingress, LabelEntry, RouterResources, Switched};
use super::Ipv4Prefix;
use crate::egress::{PortScheduler, SchedConfig, SchedulerKind};
use crate::rsvp::{
    Event as RsvpEvent, HopTerms, Output as RsvpOutput, Received, Resources, ResvRequest, Rsvp,
    RsvpConfig,
};
use crate::switch::protect::TokenBucket;
use crate::time::Instant;
use crate::{Medium, Node, PortId};
use rtlan_wire::rsvp::{
    ErrorCode, ErrorSpec, FilterSpec, FlowDescriptors, SenderDescriptor, Session,
};

/// Rate the default queue of an unpaced port is sized for, bit/s.
const UNPACED_NOMINAL_BPS: u64 = 1_000_000_000;

/// Bound of each port's control queue with RSVP: 64 KiB, some forty Path or Resv messages per
/// port between two transmissions — refreshes are spread over R, triggers come one per change.
const CONTROL_QUEUE_BYTES: usize = 64 * 1024;

/// TTL of the packets the router originates (ICMP errors and replies).
const ORIGINATED_TTL: u8 = 64;

/// Largest Ethernet frame the router builds (no FCS): 1500-byte IP packets.
pub const MAX_FRAME: usize = 1514;

/// Ethernet header length (the router handles untagged frames).
const ETH_HEADER: usize = 14;

/// A flow handle of the RSVP classifier: the ingress entry of a reserved sender.
pub type FlowId = u32;

/// A pipe handle of the PSIP classifier: the ingress entry of a provisioned pipe.
pub type PipeId = u32;

/// How a packet leaves through [`Router::send_to_neighbour`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sending {
    /// Forwarded: loses one TTL, default queue.
    Forwarded,
    /// Originated by the router (ICMP): default queue.
    Originated,
    /// Signalling (RSVP): the port's control queue, the protected channel of QSR §6.2.
    Control,
}

/// A label-table row: (input port, input label) → (output port, output label; `None` pops).
pub type LabelRow = ((PortId, u32), (PortId, Option<u32>));

/// A frame the router hands to its control plane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trapped {
    /// The port it arrived on.
    pub port: PortId,
    /// Why it was trapped.
    pub reason: TrapReason,
    /// The whole Ethernet frame.
    pub frame: Vec<u8>,
}

#[derive(Debug)]
pub(super) struct Port {
    pub(super) sched: PortScheduler,
    icmp_bucket: TokenBucket,
    pub(super) up: bool,
}

/// The router (module docs).
#[derive(Debug)]
pub struct Router {
    pub(super) config: RouterConfig,
    pub(super) tables: Tables<FlowId, PipeId>,
    pub(super) neighbours: Neighbours,
    pub(super) ports: Vec<Port>,
    trapped: VecDeque<Trapped>,
    stats: RouterStats,
    /// Scratch for building frames.
    scratch: Vec<u8>,
    /// The RSVP engine, when configured.
    rsvp: Option<Rsvp>,
    /// Label table, ingress entries and bookings of the switched paths.
    pub(super) switched: Switched,
    /// Routing changed since the RSVP engine last looked.
    routes_dirty: bool,
    /// Provisioned pipes started or ended here.
    pipes: Pipes,
    /// Engine events for the pipes, handled once the engine is back in place.
    pipe_events: VecDeque<RsvpEvent>,
    /// When refused pipe ends are asked for again.
    pipe_retry: Option<Instant>,
    /// Carrier changes so far (part of [`Router::fast_version`]).
    pub(super) link_changes: u64,
}

impl Router {
    /// A router with `config`'s ports, their connected routes and the static routes.
    pub fn new(config: RouterConfig, now: Instant) -> Result<Router, RouterConfigError> {
        if config.ports.is_empty() {
            return Err(RouterConfigError::NoPorts);
        }
        let mut tables: Tables<FlowId, PipeId> = Tables::new();
        let mut subnets: Vec<(Ipv4Prefix, usize)> = Vec::new();
        for (index, port) in config.ports.iter().enumerate() {
            let prefix = Ipv4Prefix::new(port.addr, port.prefix_len).map_err(|source| {
                RouterConfigError::BadPrefix {
                    port: port.name.clone(),
                    source,
                }
            })?;
            if let Some((_, other)) = subnets.iter().find(|(p, _)| *p == prefix) {
                return Err(RouterConfigError::SameSubnet {
                    a: config.ports[*other].name.clone(),
                    b: port.name.clone(),
                    prefix,
                });
            }
            subnets.push((prefix, index));
            let route = Route {
                next_hop: NextHop {
                    gateway: None,
                    port: PortId(index as u16),
                },
                source: RouteSource::Connected,
                metric: 0,
            };
            tables.fib.replace(prefix, route);
        }
        for r in &config.routes {
            let port = subnets
                .iter()
                .filter(|(p, _)| p.contains(r.gateway))
                .max_by_key(|(p, _)| p.prefix_len())
                .map(|(_, i)| *i)
                .ok_or(RouterConfigError::GatewayNotConnected {
                    prefix: r.prefix,
                    gateway: r.gateway,
                })?;
            let route = Route {
                next_hop: NextHop {
                    gateway: Some(r.gateway),
                    port: PortId(port as u16),
                },
                source: RouteSource::Static,
                metric: r.metric,
            };
            tables.fib.replace(r.prefix, route);
        }
        let mut ports = Vec::with_capacity(config.ports.len());
        for p in &config.ports {
            let cfg = SchedConfig {
                cycle: config.cycle_time,
                nrt_queue_bytes: config.default_queue_bytes,
                // With RSVP a full-size packet may carry a label: 4 bytes more on the wire.
                max_frame: if config.rsvp.is_some() {
                    MAX_FRAME + mpls::ENTRY_LEN
                } else {
                    MAX_FRAME
                },
                ..SchedConfig::for_medium(p.medium, UNPACED_NOMINAL_BPS)
            };
            // The QSR port (QSR §3.1): Guaranteed flows on the timing wheel, Controlled-Load and
            // default IP on WF²Q+ with the default floor; without RSVP the cyclic scheduler's
            // default queue is all a port uses.
            let kind = if config.rsvp.is_some() {
                SchedulerKind::Qsr
            } else {
                SchedulerKind::Cyclic
            };
            let mut cfg = cfg;
            if let Some(r) = &config.rsvp {
                cfg.default_floor_bps =
                    cfg.line_rate_bps / 100 * u64::from(r.default_floor_percent.min(99));
            }
            let sched = PortScheduler::new(kind, cfg, now).map_err(|error| {
                RouterConfigError::Scheduler {
                    port: p.name.clone(),
                    error,
                }
            })?;
            // RSVP goes in the control queue (QSR §6.2); without RSVP nothing does.
            let sched = if config.rsvp.is_some() {
                sched.with_control_queue(CONTROL_QUEUE_BYTES)
            } else {
                sched
            };
            ports.push(Port {
                sched,
                icmp_bucket: TokenBucket::new(),
                up: true,
            });
        }
        let stats = RouterStats {
            ports: vec![RouterPortStats::default(); config.ports.len()],
            ..RouterStats::default()
        };
        let mut switched = Switched {
            reserved_bps: vec![0; ports.len()],
            gs_buffer_used: vec![0; ports.len()],
            ..Switched::default()
        };
        let rsvp = config.rsvp.as_ref().map(|settings| {
            for p in &ports {
                let line = p.sched.line_rate_bps();
                let floor = line / 100 * u64::from(settings.default_floor_percent.min(99));
                switched.floor_bps.push(floor);
                switched
                    .terms
                    .push(hop_terms(&p.sched, floor, settings.lateness_budget));
            }
            switched.gs_buffer_bytes = settings.gs_buffer_bytes;
            switched.lateness_ns =
                u64::try_from(settings.lateness_budget.as_nanos()).unwrap_or(u64::MAX);
            switched.cl_buffer_bytes = settings.cl_buffer_bytes;
            switched.cl_epsilon = 10f64.powi(-i32::from(settings.cl_overflow_exponent));
            Rsvp::new(RsvpConfig {
                refresh: settings.refresh,
                max_paths: settings.max_states,
                max_resvs: settings.max_states,
                seed: settings.seed,
                ..RsvpConfig::new(
                    crate::rsvp::Role::Router,
                    config.ports.iter().map(|p| p.addr).collect(),
                )
            })
        });
        Ok(Router {
            neighbours: Neighbours::new(config.neighbours),
            tables,
            ports,
            trapped: VecDeque::new(),
            stats,
            // Room for a full-size packet with a label (switched paths).
            scratch: vec![0; MAX_FRAME + mpls::ENTRY_LEN],
            config,
            rsvp,
            switched,
            routes_dirty: false,
            pipes: Pipes::default(),
            pipe_events: VecDeque::new(),
            pipe_retry: None,
            link_changes: 0,
        })
    }

    /// Labels in force: (input port, input label) → (output port, output label; `None` pops).
    pub fn label_table(&self) -> Vec<LabelRow> {
        let mut v: Vec<_> = self
            .switched
            .labels
            .iter()
            .map(|(k, e)| (*k, (e.out_port, e.out_label)))
            .collect();
        v.sort();
        v
    }

    /// The RSVP engine's counters, `None` without RSVP.
    pub fn rsvp_stats(&self) -> Option<crate::rsvp::RsvpStats> {
        self.rsvp.as_ref().map(Rsvp::stats)
    }

    /// The configuration.
    pub fn config(&self) -> &RouterConfig {
        &self.config
    }

    /// Counters.
    pub fn stats(&self) -> &RouterStats {
        &self.stats
    }

    /// The forwarding table and classifiers.
    pub fn tables(&self) -> &Tables<FlowId, PipeId> {
        &self.tables
    }

    /// Resolved neighbours: (address, port, MAC), by address.
    pub fn neighbours(&self) -> Vec<(Ipv4Addr, PortId, Address)> {
        self.neighbours.resolved()
    }

    /// Installs `route` for `prefix` unless a route from a preferred source is there
    /// (connected before static before kernel); returns whether it was installed. A route out
    /// of a port the router does not have is refused.
    pub fn install_route(&mut self, prefix: Ipv4Prefix, route: Route) -> bool {
        if usize::from(route.next_hop.port.0) >= self.ports.len() {
            return false;
        }
        if let Some(existing) = self.tables.fib.get(&prefix) {
            if existing.source < route.source {
                return false;
            }
        }
        self.tables.fib.replace(prefix, route);
        self.stats.route_changes += 1;
        self.routes_dirty = self.rsvp.is_some();
        true
    }

    /// Removes the route of `prefix` if it came from `source`; returns whether it did.
    pub fn remove_route(&mut self, prefix: Ipv4Prefix, source: RouteSource) -> bool {
        if self.tables.fib.get(&prefix).map(|r| r.source) != Some(source) {
            return false;
        }
        self.tables.fib.remove(&prefix);
        self.stats.route_changes += 1;
        self.routes_dirty = self.rsvp.is_some();
        true
    }

    /// The next frame trapped for the control plane.
    pub fn poll_trapped(&mut self) -> Option<Trapped> {
        self.trapped.pop_front()
    }

    /// Whether `addr` is one of the router's own addresses.
    fn is_own(&self, addr: Ipv4Addr) -> bool {
        self.config.ports.iter().any(|p| p.addr == addr)
    }

    fn port_stats(&mut self, port: PortId) -> Option<&mut RouterPortStats> {
        self.stats.ports.get_mut(usize::from(port.0))
    }

    fn on_arp(&mut self, now: Instant, port: PortId, payload: &[u8]) {
        let Ok(repr) = arp::Packet::new_checked(payload).and_then(|p| arp::Repr::parse(&p)) else {
            self.stats.drop_malformed += 1;
            return;
        };
        self.stats.arp_in += 1;
        let index = usize::from(port.0);
        let (own_mac, own_ip) = (self.config.ports[index].mac, self.config.ports[index].addr);
        let sender = repr.source_protocol_addr;
        if sender.is_unspecified() || sender == own_ip || !repr.source_hardware_addr.is_unicast() {
            return;
        }
        let for_us = repr.target_protocol_addr == own_ip;
        // RFC 826: create an entry when the packet is for us or answers a request of ours (and
        // release what waited for it — also when an older entry of the neighbour exists, on
        // another port); otherwise only update an existing entry.
        if for_us || self.neighbours.is_pending(sender) {
            let (out, waiting) =
                self.neighbours
                    .learn(sender, repr.source_hardware_addr, port, now);
            for w in waiting {
                self.stats.released += 1;
                self.send_frame(
                    now,
                    out,
                    repr.source_hardware_addr,
                    &w.packet,
                    false,
                    w.control,
                );
            }
        } else {
            self.neighbours
                .refresh(sender, repr.source_hardware_addr, port, now);
        }
        if for_us && repr.operation == arp::Operation::Request && self.config.answer_local {
            let reply = arp::Repr {
                operation: arp::Operation::Reply,
                source_hardware_addr: own_mac,
                source_protocol_addr: own_ip,
                target_hardware_addr: repr.source_hardware_addr,
                target_protocol_addr: sender,
            };
            let mut buf = [0u8; 60];
            if reply
                .emit_frame(own_mac, repr.source_hardware_addr, &mut buf)
                .is_ok()
            {
                self.stats.arp_replies_sent += 1;
                self.enqueue(now, port, &buf);
            }
        }
    }

    /// Sends an ARP request for `ip` out of `port`.
    fn arp_request(&mut self, now: Instant, port: PortId, ip: Ipv4Addr) {
        let Some(p) = self.config.ports.get(usize::from(port.0)) else {
            return;
        };
        let request = arp::Repr {
            operation: arp::Operation::Request,
            source_hardware_addr: p.mac,
            source_protocol_addr: p.addr,
            target_hardware_addr: Address([0; 6]),
            target_protocol_addr: ip,
        };
        let mut buf = [0u8; 60];
        if request
            .emit_frame(p.mac, Address::BROADCAST, &mut buf)
            .is_ok()
        {
            self.stats.arp_requests_sent += 1;
            self.enqueue(now, port, &buf);
        }
    }

    /// Queues `frame` on `port`'s default queue, counted.
    fn enqueue(&mut self, now: Instant, port: PortId, frame: &[u8]) -> bool {
        self.enqueue_class(now, port, frame, false)
    }

    /// Queues `frame` on `port`'s control queue (the protected channel of QSR §6.2) or its
    /// default queue, counted.
    fn enqueue_class(&mut self, now: Instant, port: PortId, frame: &[u8], control: bool) -> bool {
        let index = usize::from(port.0);
        let Some(p) = self.ports.get_mut(index) else {
            return false;
        };
        if !p.up {
            self.stats.drop_link_down += 1;
            return false;
        }
        let queued = if control {
            p.sched.enqueue_control(now, frame)
        } else {
            p.sched.enqueue_nrt(now, frame)
        };
        if !queued {
            if let Some(s) = self.stats.ports.get_mut(index) {
                s.drop_queue_full += 1;
            }
        }
        queued
    }

    /// Builds the frame of `packet` to `mac` out of `port` in the scratch buffer — decrementing
    /// its TTL there when it is being forwarded (one copy of the packet in all) — and queues it.
    fn send_frame(
        &mut self,
        now: Instant,
        port: PortId,
        mac: Address,
        packet: &[u8],
        decrement_ttl: bool,
        control: bool,
    ) -> bool {
        let Some(src) = self.config.ports.get(usize::from(port.0)).map(|p| p.mac) else {
            return false;
        };
        let len = ETH_HEADER + packet.len();
        if len > MAX_FRAME {
            self.stats.drop_too_big += 1;
            return false;
        }
        let mut frame = std::mem::take(&mut self.scratch);
        frame[..6].copy_from_slice(&mac.0);
        frame[6..12].copy_from_slice(&src.0);
        frame[12..14].copy_from_slice(&u16::from(EtherType::Ipv4).to_be_bytes());
        frame[ETH_HEADER..len].copy_from_slice(packet);
        let rewritten = !decrement_ttl
            || rtlan_wire::rewrite::ipv4_ttl_decrement(&mut frame[ETH_HEADER..len]).is_ok();
        let queued = if rewritten {
            self.enqueue_class(now, port, &frame[..len], control)
        } else {
            self.stats.drop_malformed += 1;
            false
        };
        self.scratch = frame;
        queued
    }

    /// Sends the IPv4 `packet` to `neighbour` out of `port`: at once if its MAC is known,
    /// otherwise after ARP (held). `ingress` is where the packet came from (for an ICMP error
    /// if the neighbour never answers). A packet being forwarded (`decrement_ttl`) loses one
    /// TTL on the way: in its frame when the MAC is known (one copy of the packet in all), in
    /// the held copy otherwise. Returns whether it was queued or held.
    fn send_to_neighbour(
        &mut self,
        now: Instant,
        port: PortId,
        neighbour: Ipv4Addr,
        packet: &[u8],
        ingress: PortId,
        how: Sending,
    ) -> bool {
        let decrement_ttl = how == Sending::Forwarded;
        let control = how == Sending::Control;
        if !self.ports.get(usize::from(port.0)).is_some_and(|p| p.up) {
            self.stats.drop_link_down += 1;
            return false;
        }
        match self.neighbours.lookup(neighbour, port, now) {
            Lookup::Resolved { mac, refresh } => {
                if refresh {
                    self.arp_request(now, port, neighbour);
                }
                self.send_frame(now, port, mac, packet, decrement_ttl, control)
            }
            Lookup::Unresolved => {
                let mut packet = packet.to_vec();
                if decrement_ttl && rtlan_wire::rewrite::ipv4_ttl_decrement(&mut packet).is_err() {
                    self.stats.drop_malformed += 1;
                    return false;
                }
                let waiting = Waiting {
                    packet,
                    ingress,
                    control,
                };
                match self.neighbours.hold(neighbour, port, waiting, now) {
                    Hold::Queued => {
                        self.stats.held += 1;
                        true
                    }
                    Hold::QueuedSendRequest => {
                        self.stats.held += 1;
                        self.arp_request(now, port, neighbour);
                        true
                    }
                    Hold::Full => {
                        self.stats.drop_arp_full += 1;
                        false
                    }
                }
            }
        }
    }

    fn on_ipv4(&mut self, now: Instant, port: PortId, frame: &[u8]) {
        let payload = &frame[ETH_HEADER..];
        let Ok(ip) = ipv4::Packet::new_checked(payload) else {
            self.stats.drop_malformed += 1;
            return;
        };
        if !ip.verify_checksum() {
            self.stats.drop_bad_checksum += 1;
            return;
        }
        let packet = &payload[..usize::from(ip.total_len())];
        let (src, dst) = (ip.src_addr(), ip.dst_addr());
        if martian_src(src) || self.is_own(src) {
            self.stats.drop_martian += 1;
            return;
        }
        let protocol = u8::from(ip.protocol());
        let first_fragment = ip.frag_offset() == 0;
        let ports = match (protocol, first_fragment) {
            (6 | 17, true) if ip.payload().len() >= 4 => {
                let l4 = ip.payload();
                Some((
                    u16::from_be_bytes([l4[0], l4[1]]),
                    u16::from_be_bytes([l4[2], l4[3]]),
                ))
            }
            _ => None,
        };
        let fields = PacketFields {
            src,
            dst,
            protocol,
            ports,
            has_options: ip.header_len() > ipv4::HEADER_LEN,
            router_alert: ip.router_alert().is_some(),
            to_router: self.is_own(dst) || self.is_subnet_broadcast(dst),
        };
        if !fields.to_router && martian_dst(dst) {
            self.stats.drop_martian += 1;
            return;
        }
        match self.tables.decide(&fields) {
            Decision::Trap(reason) => self.trap(now, port, reason, frame, packet, &fields),
            // A pipe's filters are in the classifier only while it is switched (QSR §5).
            Decision::Reserved(id) | Decision::Pipe(id) => self.on_reserved(now, port, id, packet),
            Decision::Forward(hop) => self.forward(now, port, hop, packet),
            Decision::Unreachable => self.unreachable(now, port, packet, icmp::Unreachable::Net),
        }
    }

    /// Whether `dst` is the directed broadcast address of one of the router's subnets.
    fn is_subnet_broadcast(&self, dst: Ipv4Addr) -> bool {
        self.config.ports.iter().any(|p| {
            p.prefix_len < 31
                && Ipv4Prefix::new(p.addr, p.prefix_len).is_ok_and(|net| {
                    let host_bits = u32::MAX >> p.prefix_len;
                    net.contains(dst) && u32::from(dst) & host_bits == host_bits
                })
        })
    }

    fn unreachable(&mut self, now: Instant, port: PortId, packet: &[u8], code: icmp::Unreachable) {
        self.stats.drop_no_route += 1;
        self.icmp_error(
            now,
            port,
            packet,
            icmp::Repr::DstUnreachable {
                code,
                next_hop_mtu: 0,
                quote: icmp::Repr::error_quote(packet).to_vec(),
            },
        );
    }

    fn trap(
        &mut self,
        now: Instant,
        port: PortId,
        reason: TrapReason,
        frame: &[u8],
        packet: &[u8],
        fields: &PacketFields,
    ) {
        if reason == TrapReason::Rsvp && self.rsvp.is_some() {
            // Path, PathTear and ResvConf travel with the Router Alert towards the session's
            // receiver; the others are addressed hop by hop. An RSVP message neither for us
            // nor alerted is just passing through.
            if fields.to_router || fields.router_alert {
                self.stats.trapped_rsvp += 1;
                self.on_rsvp(now, port, packet);
            } else if let Some(hop) = self.tables.fib.next_hop(fields.dst) {
                self.forward(now, port, hop, packet);
            }
            return;
        }
        match reason {
            TrapReason::Rsvp => self.stats.trapped_rsvp += 1,
            TrapReason::RouterAlert => self.stats.trapped_router_alert += 1,
            TrapReason::IpOptions => self.stats.trapped_options += 1,
            TrapReason::Local => self.stats.trapped_local += 1,
        }
        if reason == TrapReason::Local
            && self.config.answer_local
            && self.answer_echo(now, port, packet)
        {
            return;
        }
        if self.config.trap_queue == 0 {
            // No control plane here: the host stack's own copy of the frame is the one handled
            // (the Linux shell), the counters above say what went there.
            return;
        }
        if self.trapped.len() >= self.config.trap_queue {
            self.stats.drop_trap_full += 1;
            return;
        }
        self.trapped.push_back(Trapped {
            port,
            reason,
            frame: frame.to_vec(),
        });
    }

    /// Answers an ICMP echo request to one of the router's addresses; whether it was one.
    fn answer_echo(&mut self, now: Instant, port: PortId, packet: &[u8]) -> bool {
        let Ok(ip) = ipv4::Packet::new_checked(packet) else {
            return false;
        };
        if ip.protocol() != ipv4::Protocol::Icmp || ip.frag_offset() != 0 || ip.more_frags() {
            return false;
        }
        let Ok(Ok(icmp::Repr::EchoRequest {
            ident,
            seq_no,
            data,
        })) = icmp::Packet::new_checked(ip.payload()).map(|m| icmp::Repr::parse(&m))
        else {
            return false;
        };
        let reply = icmp::Repr::EchoReply {
            ident,
            seq_no,
            data,
        };
        let (src, dst) = (ip.dst_addr(), ip.src_addr());
        if self.originate(now, port, src, dst, &reply) {
            self.stats.icmp.echo_reply += 1;
        }
        true
    }

    fn forward(&mut self, now: Instant, ingress: PortId, hop: NextHop, packet: &[u8]) {
        let Ok(ip) = ipv4::Packet::new_checked(packet) else {
            self.stats.drop_malformed += 1;
            return;
        };
        if ip.ttl() <= 1 {
            self.stats.drop_ttl += 1;
            self.icmp_error(
                now,
                ingress,
                packet,
                icmp::Repr::TimeExceeded {
                    code: icmp::TimeExceeded::Ttl,
                    quote: icmp::Repr::error_quote(packet).to_vec(),
                },
            );
            return;
        }
        if ETH_HEADER + packet.len() > MAX_FRAME {
            self.stats.drop_too_big += 1;
            if ip.dont_frag() {
                self.icmp_error(
                    now,
                    ingress,
                    packet,
                    icmp::Repr::DstUnreachable {
                        code: icmp::Unreachable::FragNeeded,
                        next_hop_mtu: (MAX_FRAME - ETH_HEADER) as u16,
                        quote: icmp::Repr::error_quote(packet).to_vec(),
                    },
                );
            }
            return;
        }
        let neighbour = hop.neighbour(ip.dst_addr());
        if self.send_to_neighbour(
            now,
            hop.port,
            neighbour,
            packet,
            ingress,
            Sending::Forwarded,
        ) {
            self.stats.forwarded += 1;
        }
    }

    /// Sends an ICMP error about `packet` (which arrived on `ingress`) to its source, unless
    /// RFC 1812 §4.3.2.7 forbids it or the port's ICMP rate is spent.
    fn icmp_error(&mut self, now: Instant, ingress: PortId, packet: &[u8], message: icmp::Repr) {
        let Ok(ip) = ipv4::Packet::new_checked(packet) else {
            return;
        };
        let about_error = ip.protocol() == ipv4::Protocol::Icmp
            && ip.frag_offset() == 0
            && icmp::Packet::new_checked(ip.payload()).is_ok_and(|m| {
                !matches!(
                    m.msg_type(),
                    icmp::Message::EchoRequest
                        | icmp::Message::EchoReply
                        | icmp::Message::Unknown(13..=18)
                )
            });
        let src = ip.src_addr();
        if about_error
            || ip.frag_offset() != 0
            || martian_src(src)
            || martian_dst(ip.dst_addr())
            || self.is_subnet_broadcast(ip.dst_addr())
        {
            self.stats.icmp.suppressed += 1;
            return;
        }
        let rate = self.config.icmp_errors;
        let allowed = self
            .ports
            .get_mut(usize::from(ingress.0))
            .is_some_and(|p| p.icmp_bucket.take(now, rate));
        if !allowed {
            self.stats.icmp.rate_limited += 1;
            return;
        }
        let Some(from) = self
            .config
            .ports
            .get(usize::from(ingress.0))
            .map(|p| p.addr)
        else {
            return;
        };
        if self.originate(now, ingress, from, src, &message) {
            let counter = match &message {
                icmp::Repr::TimeExceeded { .. } => &mut self.stats.icmp.time_exceeded,
                icmp::Repr::DstUnreachable {
                    code: icmp::Unreachable::FragNeeded,
                    ..
                } => &mut self.stats.icmp.frag_needed,
                icmp::Repr::DstUnreachable {
                    code: icmp::Unreachable::Host,
                    ..
                } => &mut self.stats.icmp.host_unreachable,
                _ => &mut self.stats.icmp.net_unreachable,
            };
            *counter += 1;
        }
    }

    /// Sends an ICMP message from `src` (one of the router's addresses) to `dst`, routed like
    /// any packet (`ingress` names the port that caused it).
    fn originate(
        &mut self,
        now: Instant,
        ingress: PortId,
        src: Ipv4Addr,
        dst: Ipv4Addr,
        message: &icmp::Repr,
    ) -> bool {
        let icmp_len = message.buffer_len();
        let total = ipv4::HEADER_LEN + icmp_len;
        if ETH_HEADER + total > MAX_FRAME {
            return false;
        }
        let mut packet = vec![0u8; total];
        let header = ipv4::Repr {
            src_addr: src,
            dst_addr: dst,
            protocol: ipv4::Protocol::Icmp,
            payload_len: icmp_len,
            ttl: ORIGINATED_TTL,
            dscp_ecn: 0,
        };
        header.emit(&mut ipv4::Packet::new_unchecked(&mut packet[..]));
        if message.emit(&mut packet[ipv4::HEADER_LEN..]).is_err() {
            return false;
        }
        let Some(hop) = self.tables.fib.next_hop(dst) else {
            return false;
        };
        self.send_to_neighbour(
            now,
            hop.port,
            hop.neighbour(dst),
            &packet,
            ingress,
            Sending::Originated,
        )
    }

    fn on_due(&mut self, now: Instant) {
        for due in self.neighbours.poll_due(now) {
            match due {
                Due::Retry { ip, port } => self.arp_request(now, port, ip),
                Due::Failed { waiting, .. } => {
                    for w in waiting {
                        self.stats.drop_arp_failed += 1;
                        self.icmp_error(
                            now,
                            w.ingress,
                            &w.packet,
                            icmp::Repr::DstUnreachable {
                                code: icmp::Unreachable::Host,
                                next_hop_mtu: 0,
                                quote: icmp::Repr::error_quote(&w.packet).to_vec(),
                            },
                        );
                    }
                }
            }
        }
    }
}

/// What a port adds to a path's ADSPEC: the rate left for reservations, the MTU, and the
/// timing wheel's RFC 2212 terms — C = the largest IP packet (the rate-dependent M/R of a flow
/// shaped to bucket M), D = one largest frame at line rate plus one wheel slot (the
/// non-preemptive blocking and the release granularity, `docs/scheduler.md`).
fn hop_terms(sched: &PortScheduler, floor_bps: u64, lateness: std::time::Duration) -> HopTerms {
    let line = sched.line_rate_bps();
    let reservable = line
        .saturating_sub(floor_bps)
        .saturating_sub(sched.control_rate_bps());
    let max_frame = sched.max_frame() as u64;
    let frame_us = (max_frame + 24) * 8 * 1_000_000 / line.max(1);
    let max_packet = (MAX_FRAME - ETH_HEADER) as u32;
    let slot_us = u64::try_from(crate::egress::DEFAULT_GRANULARITY.as_micros()).unwrap_or(0);
    // A late receive and a late send at this hop (`RsvpSettings::lateness_budget`).
    let late_us = u64::try_from(lateness.as_micros()).unwrap_or(u64::MAX / 4) * 2;
    HopTerms {
        bandwidth: reservable as f32 / 8.0,
        latency_us: 0,
        mtu: max_packet,
        guaranteed: Some((
            max_packet,
            u32::try_from(frame_us + slot_us + late_us).unwrap_or(u32::MAX),
        )),
        controlled_load: true,
    }
}

impl Router {
    /// Runs `f` on the RSVP engine with the router's routing and resources, then carries out
    /// what the engine asks: messages, splices, unsplices.
    fn drive_rsvp(
        &mut self,
        now: Instant,
        f: impl FnOnce(&mut Rsvp, &FibRouting<'_>, &mut RouterResources<'_>),
    ) {
        let Some(mut engine) = self.rsvp.take() else {
            return;
        };
        {
            let up: Vec<bool> = self.ports.iter().map(|p| p.up).collect();
            let routing = FibRouting {
                fib: &self.tables.fib,
                up: &up,
            };
            let mut resources = RouterResources {
                scheds: self.ports.iter_mut().map(|p| &mut p.sched).collect(),
                switched: &mut self.switched,
            };
            f(&mut engine, &routing, &mut resources);
        }
        while let Some(out) = engine.poll_output() {
            self.apply_rsvp(now, out);
        }
        self.stats.rsvp = engine.stats();
        self.rsvp = Some(engine);
        while let Some(event) = self.pipe_events.pop_front() {
            self.on_pipe_event(now, event);
        }
    }

    /// An RSVP message for this router (trapped).
    fn on_rsvp(&mut self, now: Instant, port: PortId, packet: &[u8]) {
        let Ok(ip) = ipv4::Packet::new_checked(packet) else {
            self.stats.drop_bad_rsvp += 1;
            return;
        };
        let message = wire_rsvp::Packet::new_checked(ip.payload())
            .and_then(|p| wire_rsvp::Repr::parse(&p))
            .and_then(|r| wire_rsvp::Message::from_repr(&r));
        let Ok(message) = message else {
            self.stats.drop_bad_rsvp += 1;
            return;
        };
        if let wire_rsvp::Message::Path(path) = &message {
            // Pipes start at routers (QSR §5), whose Paths arrive labelled; a pipe's Path
            // without a label is a host's, which may not book pipes.
            if is_pipe_session(&path.session)
                && path
                    .hop
                    .label()
                    .filter(|l| *l >= crate::rsvp::FIRST_LABEL)
                    .is_none()
            {
                self.stats.drop_psip_unlabelled += 1;
                return;
            }
        }
        let rx = Received {
            port,
            src: ip.src_addr(),
            ttl: ip.ttl(),
        };
        self.drive_rsvp(now, |engine, routing, resources| {
            engine.handle_message(now, rx, message, routing, resources)
        });
    }

    fn apply_rsvp(&mut self, now: Instant, out: RsvpOutput) {
        match out {
            RsvpOutput::Send(o) => {
                let Ok(body) = o.message.to_repr(o.ttl).to_bytes() else {
                    return;
                };
                let packet = wire_rsvp::ip_packet(o.src, o.dst, o.ttl, o.router_alert, &body);
                let how = if self.config.rsvp.as_ref().is_some_and(|r| r.protected) {
                    Sending::Control
                } else {
                    Sending::Originated
                };
                self.send_to_neighbour(now, o.port, o.next_hop, &packet, o.port, how);
            }
            RsvpOutput::Splice(s) => {
                let Some(in_port) = s.in_port else {
                    self.pipe_spliced(now, &s);
                    return;
                };
                match s.in_label {
                    Some(label) => {
                        self.switched.labels.insert(
                            (in_port, label),
                            LabelEntry {
                                out_port: s.out_port,
                                next_hop: s.next_hop,
                                out_label: s.out_label,
                                resv: s.resv,
                                route_on_pop: false,
                            },
                        );
                    }
                    None => {
                        let key = FlowKey {
                            src: s.sender.src_addr,
                            dst: s.session.dst_addr,
                            protocol: s.session.protocol_id,
                            src_port: s.sender.src_port,
                            dst_port: s.session.dst_port,
                        };
                        let (bucket, min_unit, max_packet) = switched::policer(s.flowspec.tspec());
                        let entry = Ingress {
                            out_port: s.out_port,
                            next_hop: s.next_hop,
                            out_label: s.out_label,
                            resv: s.resv,
                            policer: bucket,
                            min_policed_unit: min_unit,
                            max_packet,
                            counters: PipeCounters::default(),
                        };
                        let sender = (s.resv, s.sender.src_addr, s.sender.src_port);
                        let id = match self.switched.ingress_of.get(&sender) {
                            Some(&(id, _)) => id,
                            None => {
                                let id = self.switched.next_ingress;
                                self.switched.next_ingress = id.wrapping_add(1);
                                // The 5-tuple belongs to this sender's path alone.
                                self.tables.rsvp.remove(&key);
                                if self.tables.rsvp.insert(key, id).is_err() {
                                    return;
                                }
                                self.switched.ingress_of.insert(sender, (id, key));
                                id
                            }
                        };
                        self.switched.ingress.insert(id, entry);
                    }
                }
                // Make sure the next hop's MAC is known before the first frame.
                if let Lookup::Unresolved = self.neighbours.lookup(s.next_hop, s.out_port, now) {
                    self.arp_request(now, s.out_port, s.next_hop);
                }
            }
            RsvpOutput::Unsplice(u) => {
                let Some(in_port) = u.in_port else {
                    if let Some(id) = self.pipe_of(&u.session, &u.sender) {
                        self.pipe_unspliced(id);
                    }
                    return;
                };
                match u.in_label {
                    Some(label) => {
                        if self
                            .switched
                            .labels
                            .get(&(in_port, label))
                            .is_some_and(|e| e.resv == u.resv)
                        {
                            self.switched.labels.remove(&(in_port, label));
                        }
                    }
                    None => {
                        let sender = (u.resv, u.sender.src_addr, u.sender.src_port);
                        if let Some((id, key)) = self.switched.ingress_of.remove(&sender) {
                            self.tables.rsvp.remove(&key);
                            self.switched.ingress.remove(&id);
                        }
                    }
                }
            }
            // Pipes started or ended here (QSR §5) are told; nothing else listens here.
            RsvpOutput::Event(e) => self.pipe_events.push_back(e),
        }
    }

    /// A packet the RSVP classifier matched at this first router: onto its reservation with
    /// the first label, or forwarded as default IP beyond the sender's TSpec.
    fn on_reserved(&mut self, now: Instant, ingress: PortId, id: u32, packet: &[u8]) {
        let Ok(ip) = ipv4::Packet::new_checked(packet) else {
            self.stats.drop_malformed += 1;
            return;
        };
        let dst = ip.dst_addr();
        let ttl = ip.ttl();
        let conforming = ttl > 1
            && self
                .switched
                .ingress
                .get_mut(&id)
                .is_some_and(|e| e.police(now, packet.len()));
        let Some(entry) = self.switched.ingress.get_mut(&id) else {
            return;
        };
        if conforming {
            entry.counters.packets += 1;
            entry.counters.bytes += packet.len() as u64;
        } else if ttl > 1 {
            entry.counters.demoted += 1;
        }
        if !conforming {
            if ttl > 1 {
                self.stats.demoted_excess += 1;
            }
            match self.tables.fib.next_hop(dst) {
                Some(hop) => self.forward(now, ingress, hop, packet),
                None => self.unreachable(now, ingress, packet, icmp::Unreachable::Net),
            }
            return;
        }
        let (out_port, next_hop, out_label, resv) =
            (entry.out_port, entry.next_hop, entry.out_label, entry.resv);
        let shim = if out_label.is_some() {
            mpls::ENTRY_LEN
        } else {
            0
        };
        let len = ETH_HEADER + shim + packet.len();
        if len > MAX_FRAME + shim {
            self.stats.drop_too_big += 1;
            return;
        }
        // Built in the scratch buffer, as forwarded frames are: no allocation per packet.
        let mut frame = std::mem::take(&mut self.scratch);
        frame[ETH_HEADER + shim..len].copy_from_slice(packet);
        if rtlan_wire::rewrite::ipv4_ttl_decrement(&mut frame[ETH_HEADER + shim..len]).is_err() {
            self.stats.drop_malformed += 1;
            self.scratch = frame;
            return;
        }
        let ethertype = match out_label {
            Some(label) => {
                let entry = mpls::Repr {
                    label,
                    traffic_class: 0,
                    bottom_of_stack: true,
                    ttl: ttl - 1,
                };
                entry.emit(&mut mpls::Packet::new_unchecked(
                    &mut frame[ETH_HEADER..ETH_HEADER + shim],
                ));
                EtherType::Mpls
            }
            None => EtherType::Ipv4,
        };
        frame[12..14].copy_from_slice(&u16::from(ethertype).to_be_bytes());
        self.stats.reserved_in += 1;
        self.send_switched(now, resv, out_port, next_hop, &mut frame[..len]);
        self.scratch = frame;
    }

    /// A labelled frame: swapped onto the next link's label, or popped to plain IP at the last
    /// router, without an IP look-up (QSR §4.2).
    fn on_mpls(&mut self, now: Instant, port: PortId, frame: &[u8]) {
        self.stats.labelled_in += 1;
        let Ok(shim) = mpls::Packet::new_checked(&frame[ETH_HEADER..]) else {
            self.stats.drop_malformed += 1;
            return;
        };
        let (label, ttl) = (shim.label(), shim.ttl());
        if !shim.bottom_of_stack() {
            // Our paths carry one entry; a deeper stack is not ours.
            self.stats.drop_unknown_label += 1;
            return;
        }
        let Some(entry) = self.switched.labels.get(&(port, label)).copied() else {
            self.stats.drop_unknown_label += 1;
            return;
        };
        if ttl <= 1 {
            self.stats.drop_label_ttl += 1;
            return;
        }
        if frame.len() > self.scratch.len() {
            self.stats.drop_too_big += 1;
            return;
        }
        // Rewritten in the scratch buffer: no allocation per frame.
        let mut out = std::mem::take(&mut self.scratch);
        let len = match entry.out_label {
            Some(next) => {
                out[..frame.len()].copy_from_slice(frame);
                let mut shim = mpls::Packet::new_unchecked(&mut out[ETH_HEADER..frame.len()]);
                shim.set_label(next);
                shim.set_ttl(ttl - 1);
                frame.len()
            }
            None => {
                let rest = &frame[ETH_HEADER + mpls::ENTRY_LEN..];
                out[..ETH_HEADER].copy_from_slice(&frame[..ETH_HEADER]);
                out[ETH_HEADER..ETH_HEADER + rest.len()].copy_from_slice(rest);
                let parsed = ipv4::Packet::new_checked(&out[ETH_HEADER..ETH_HEADER + rest.len()])
                    .map(|ip| (ip.ttl(), usize::from(ip.total_len())));
                let Ok((ip_ttl, total)) = parsed else {
                    self.stats.drop_malformed += 1;
                    self.scratch = out;
                    return;
                };
                // RFC 3443's uniform model: the IP TTL leaves with what the path left of it.
                let new_ttl = ip_ttl.min(ttl) - 1;
                let len = ETH_HEADER + total;
                if new_ttl == 0
                    || rtlan_wire::rewrite::ipv4_ttl_set(&mut out[ETH_HEADER..len], new_ttl)
                        .is_err()
                {
                    self.stats.drop_label_ttl += 1;
                    self.scratch = out;
                    return;
                }
                out[12..14].copy_from_slice(&u16::from(EtherType::Ipv4).to_be_bytes());
                len
            }
        };
        self.stats.labelled_switched += 1;
        if entry.route_on_pop && entry.out_label.is_none() {
            self.pop_routed(now, port, entry, out, len);
            return;
        }
        self.send_switched(
            now,
            entry.resv,
            entry.out_port,
            entry.next_hop,
            &mut out[..len],
        );
        self.scratch = out;
    }

    /// The end of a provisioned pipe (QSR §5): the popped packet in `out[..len]` goes by a
    /// route look-up — on the pipe's flow when the route leaves by the pipe's port, as default
    /// IP otherwise — and is held, as default IP, while its next hop is resolved rather than
    /// lost. Gives the scratch buffer `out` back.
    fn pop_routed(
        &mut self,
        now: Instant,
        in_port: PortId,
        entry: LabelEntry,
        mut out: Vec<u8>,
        len: usize,
    ) {
        let dst = ipv4::Packet::new_unchecked(&out[ETH_HEADER..len]).dst_addr();
        if let Some(e) = self.pipes.egress.get_mut(&entry.resv) {
            e.counters.packets += 1;
            e.counters.bytes += (len - ETH_HEADER) as u64;
        }
        let Some(hop) = self.tables.fib.next_hop(dst) else {
            self.scratch = out;
            self.stats.drop_no_route += 1;
            return;
        };
        let next_hop = hop.gateway.unwrap_or(dst);
        let resolved = hop.port == entry.out_port
            && match self.neighbours.lookup(next_hop, hop.port, now) {
                Lookup::Resolved { refresh, .. } => {
                    if refresh {
                        self.arp_request(now, hop.port, next_hop);
                    }
                    true
                }
                Lookup::Unresolved => false,
            };
        if resolved {
            self.send_switched(now, entry.resv, hop.port, next_hop, &mut out[..len]);
            self.scratch = out;
            return;
        }
        let packet = out[ETH_HEADER..len].to_vec();
        self.scratch = out;
        self.send_to_neighbour(
            now,
            hop.port,
            next_hop,
            &packet,
            in_port,
            Sending::Originated,
        );
    }

    /// Queues a switched frame (its Ethernet addresses filled in here) on its reservation's
    /// flow. Its next hop's MAC must be known: the path's own signalling resolved it; if it is
    /// not (an entry expired), an ARP request goes out and the frame is dropped, counted.
    fn send_switched(
        &mut self,
        now: Instant,
        resv: crate::rsvp::ResvId,
        port: PortId,
        next_hop: Ipv4Addr,
        frame: &mut [u8],
    ) {
        let Some(booking) = self.switched.bookings.get(&resv).copied() else {
            self.stats.drop_unknown_label += 1;
            return;
        };
        if booking.port != port || !self.ports.get(usize::from(port.0)).is_some_and(|p| p.up) {
            self.stats.drop_link_down += 1;
            return;
        }
        let mac = match self.neighbours.lookup(next_hop, port, now) {
            Lookup::Resolved { mac, refresh } => {
                if refresh {
                    self.arp_request(now, port, next_hop);
                }
                mac
            }
            Lookup::Unresolved => {
                self.stats.drop_switched_unresolved += 1;
                self.arp_request(now, port, next_hop);
                return;
            }
        };
        let src = self.config.ports[usize::from(port.0)].mac;
        frame[..6].copy_from_slice(&mac.0);
        frame[6..12].copy_from_slice(&src.0);
        let index = usize::from(port.0);
        if self.ports[index]
            .sched
            .enqueue_flow(now, booking.handle, frame)
        {
            self.stats.forwarded += 1;
        } else {
            self.stats.drop_reserved_queue += 1;
        }
    }
}

/// Sources a router never accepts (RFC 1812 §5.3.7): 0.0.0.0/8 (but 0.0.0.0 itself is "this
/// host" only before configuration, never forwarded), 127/8, multicast, class E and broadcast.
fn martian_src(src: Ipv4Addr) -> bool {
    src.octets()[0] == 0 || src.is_loopback() || src.is_multicast() || src.octets()[0] >= 240
}

/// Destinations a router never forwards (RFC 1812 §5.3.7), and multicast, which this router
/// does not route.
pub(super) fn martian_dst(dst: Ipv4Addr) -> bool {
    dst.octets()[0] == 0 || dst.is_loopback() || dst.is_multicast() || dst.octets()[0] >= 240
}

impl Node for Router {
    fn port_count(&self) -> usize {
        self.ports.len()
    }

    fn medium(&self, port: PortId) -> Medium {
        self.ports
            .get(usize::from(port.0))
            .map_or(Medium::Unpaced, |p| p.sched.medium())
    }

    fn handle_frame(&mut self, now: Instant, port: PortId, frame: &[u8]) {
        let index = usize::from(port.0);
        let Some(own_mac) = self.config.ports.get(index).map(|p| p.mac) else {
            return;
        };
        if let Some(s) = self.port_stats(port) {
            s.rx_frames += 1;
            s.rx_bytes += frame.len() as u64;
        }
        let Ok(eth) = Frame::new_checked(frame) else {
            self.stats.drop_malformed += 1;
            return;
        };
        let dst = eth.dst_addr();
        if dst != own_mac && !dst.is_broadcast() {
            self.stats.drop_not_for_us += 1;
            return;
        }
        match eth.ethertype() {
            EtherType::Arp => self.on_arp(now, port, eth.payload()),
            EtherType::Ipv4 if dst == own_mac => self.on_ipv4(now, port, frame),
            EtherType::Ipv4 => self.stats.drop_not_for_us += 1,
            EtherType::Mpls if dst == own_mac && self.rsvp.is_some() => {
                self.on_mpls(now, port, frame)
            }
            _ => self.stats.drop_unsupported += 1,
        }
    }

    fn poll_transmit(&mut self, now: Instant, port: PortId, buf: &mut [u8]) -> Option<usize> {
        let index = usize::from(port.0);
        let len = self.ports.get_mut(index)?.sched.poll_transmit(now, buf)?;
        if let Some(s) = self.stats.ports.get_mut(index) {
            s.tx_frames += 1;
            s.tx_bytes += len as u64;
        }
        Some(len)
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.on_due(now);
        // Neighbours the fast path may be sending to, past their lifetime (only once
        // `track_fast_path` was called): asked again as a look-up would ask.
        for (ip, port) in self.neighbours.poll_stale(now) {
            self.arp_request(now, port, ip);
        }
        let routes_changed = self.routes_dirty;
        if self.routes_dirty {
            self.routes_dirty = false;
            self.drive_rsvp(now, |engine, routing, resources| {
                engine.route_changed(now, routing, resources)
            });
        }
        self.pipe_timers(now, routes_changed);
        if self
            .rsvp
            .as_ref()
            .and_then(Rsvp::poll_timeout)
            .is_some_and(|t| t <= now)
        {
            self.drive_rsvp(now, |engine, _, resources| {
                engine.handle_timeout(now, resources)
            });
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        if self.routes_dirty {
            return Some(Instant::ZERO);
        }
        let ports = self.ports.iter().filter_map(|p| p.sched.poll_timeout());
        self.neighbours
            .next_timeout()
            .into_iter()
            .chain(self.neighbours.next_stale())
            .chain(ports)
            .chain(self.rsvp.as_ref().and_then(Rsvp::poll_timeout))
            .chain(self.pipe_timeout())
            .min()
    }

    fn handle_link(&mut self, _now: Instant, port: PortId, up: bool) {
        let Some(p) = self.ports.get_mut(usize::from(port.0)) else {
            return;
        };
        if p.up != up {
            self.link_changes += 1;
            if self.rsvp.is_some() {
                // Paths out of a dead port have no route any more (and come back with it).
                self.routes_dirty = true;
            }
        }
        p.up = up;
        if !up {
            let dropped = self.neighbours.flush_port(port).len() as u64;
            self.stats.drop_link_down += dropped;
        }
    }
}
