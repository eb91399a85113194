//! The router on virtual time (`docs/qsr.md` §2.1): two routers between two host subnets,
//!
//! ```text
//! A 198.18.1.2 ─ p0 R1 p1 ─ 198.18.12.0/24 ─ p0 R2 p1 ─ B 198.18.2.2
//!   198.18.1.1/24   198.18.12.1        198.18.12.2   198.18.2.1/24
//! ```
//!
//! with static routes to the far subnet on each router, and hosts that ARP for their gateway
//! like any IP stack.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::time::Duration;

use rtlan_wire::ethernet::{Address, EtherType, Frame};
use rtlan_wire::{arp, icmp, ipv4, udp};

use super::*;
use crate::time::Instant;
use crate::{Medium, Node, PortId};

const RATE: u64 = 100_000_000;

mod fastpath;

/// A host: one interface, a default gateway, ARP; records what it receives.
struct Host {
    mac: Address,
    ip: Ipv4Addr,
    gateway: Ipv4Addr,
    gateway_mac: Option<Address>,
    waiting: Vec<Vec<u8>>,
    outbox: Vec<Vec<u8>>,
    received: Vec<Vec<u8>>,
    /// An RSVP host engine, for the switched-path tests.
    rsvp: Option<crate::rsvp::Rsvp>,
    rsvp_events: Vec<crate::rsvp::Event>,
    now: Instant,
}

impl Host {
    fn new(last: [u8; 2], gateway: Ipv4Addr) -> Host {
        Host {
            mac: Address([2, 0, 0, 0, last[0], last[1]]),
            ip: Ipv4Addr::new(198, 18, last[0], last[1]),
            gateway,
            gateway_mac: None,
            waiting: Vec::new(),
            outbox: Vec::new(),
            received: Vec::new(),
            rsvp: None,
            rsvp_events: Vec::new(),
            now: Instant::ZERO,
        }
    }

    /// Sends the IPv4 `packet` through the gateway (ARP first if needed).
    fn send(&mut self, packet: Vec<u8>) {
        match self.gateway_mac {
            Some(mac) => self.outbox.push(frame(self.mac, mac, &packet)),
            None => {
                if self.waiting.is_empty() {
                    self.outbox.push(arp_frame(
                        arp::Operation::Request,
                        self.mac,
                        self.ip,
                        Address([0; 6]),
                        self.gateway,
                    ));
                }
                self.waiting.push(packet);
            }
        }
    }

    fn receive(&mut self, frame_bytes: &[u8]) {
        let eth = Frame::new_checked(frame_bytes).expect("whole frames");
        if eth.ethertype() == EtherType::Arp {
            let a = arp::Repr::parse(&arp::Packet::new_checked(eth.payload()).expect("arp"))
                .expect("arp");
            if a.target_protocol_addr != self.ip {
                return;
            }
            if a.operation == arp::Operation::Request {
                self.outbox.push(arp_frame(
                    arp::Operation::Reply,
                    self.mac,
                    self.ip,
                    a.source_hardware_addr,
                    a.source_protocol_addr,
                ));
            } else if a.source_protocol_addr == self.gateway {
                self.gateway_mac = Some(a.source_hardware_addr);
                for p in std::mem::take(&mut self.waiting) {
                    self.outbox
                        .push(frame(self.mac, a.source_hardware_addr, &p));
                }
            }
            return;
        }
        if eth.dst_addr() == self.mac {
            let payload = eth.payload();
            if self.rsvp.is_some() && eth.ethertype() == EtherType::Ipv4 {
                let ip = ipv4::Packet::new_checked(payload).expect("ipv4");
                if u8::from(ip.protocol()) == 46 {
                    let message = rtlan_wire::rsvp::Packet::new_checked(ip.payload())
                        .and_then(|p| rtlan_wire::rsvp::Repr::parse(&p))
                        .and_then(|r| rtlan_wire::rsvp::Message::from_repr(&r))
                        .expect("the routers send valid RSVP");
                    let rx = crate::rsvp::Received {
                        port: PortId(0),
                        src: ip.src_addr(),
                        ttl: ip.ttl(),
                    };
                    let (now, gw) = (self.now, self.gateway);
                    let engine = self.rsvp.as_mut().expect("checked");
                    engine.handle_message(now, rx, message, &ViaGateway(gw), &mut NoResources);
                    self.drain_rsvp();
                    return;
                }
            }
            self.received.push(payload.to_vec());
        }
    }

    /// Sends what the host's RSVP engine asks and keeps its events.
    fn drain_rsvp(&mut self) {
        let Some(engine) = self.rsvp.as_mut() else {
            return;
        };
        let mut out = Vec::new();
        while let Some(o) = engine.poll_output() {
            out.push(o);
        }
        for o in out {
            match o {
                crate::rsvp::Output::Send(o) => {
                    let body = o.message.to_repr(o.ttl).to_bytes().expect("encodes");
                    let p = rtlan_wire::rsvp::ip_packet(o.src, o.dst, o.ttl, o.router_alert, &body);
                    assert_eq!(o.next_hop, self.gateway, "a host sends through its gateway");
                    self.send(p);
                }
                crate::rsvp::Output::Event(e) => self.rsvp_events.push(e),
                crate::rsvp::Output::Splice(_) | crate::rsvp::Output::Unsplice(_) => {}
            }
        }
    }
}

/// A host's routing: everything through its gateway.
struct ViaGateway(Ipv4Addr);

impl crate::rsvp::Routing for ViaGateway {
    fn route(&self, _dst: Ipv4Addr) -> Option<crate::rsvp::RouteTo> {
        Some(crate::rsvp::RouteTo {
            port: PortId(0),
            gateway: Some(self.0),
        })
    }
}

use crate::rsvp::NoResources;

fn frame(src: Address, dst: Address, packet: &[u8]) -> Vec<u8> {
    let mut f = Vec::with_capacity(14 + packet.len());
    f.extend_from_slice(&dst.0);
    f.extend_from_slice(&src.0);
    f.extend_from_slice(&[0x08, 0x00]);
    f.extend_from_slice(packet);
    f
}

fn arp_frame(
    op: arp::Operation,
    mac: Address,
    ip: Ipv4Addr,
    target_mac: Address,
    target_ip: Ipv4Addr,
) -> Vec<u8> {
    let repr = arp::Repr {
        operation: op,
        source_hardware_addr: mac,
        source_protocol_addr: ip,
        target_hardware_addr: target_mac,
        target_protocol_addr: target_ip,
    };
    let dst = if op == arp::Operation::Request {
        Address::BROADCAST
    } else {
        target_mac
    };
    let mut buf = vec![0u8; 60];
    repr.emit_frame(mac, dst, &mut buf).expect("fits");
    buf
}

/// A UDP packet `src` → `dst`:5000 with `ttl`, valid checksums, 32 bytes of `tag`.
fn udp_packet(src: Ipv4Addr, dst: Ipv4Addr, ttl: u8, tag: u8) -> Vec<u8> {
    let payload = [tag; 32];
    let mut p = vec![0u8; ipv4::HEADER_LEN + udp::HEADER_LEN + payload.len()];
    ipv4::Repr {
        src_addr: src,
        dst_addr: dst,
        protocol: ipv4::Protocol::Udp,
        payload_len: udp::HEADER_LEN + payload.len(),
        ttl,
        dscp_ecn: 0,
    }
    .emit(&mut ipv4::Packet::new_unchecked(&mut p[..]));
    let mut d = udp::Packet::new_unchecked(&mut p[ipv4::HEADER_LEN..]);
    udp::Repr {
        src_port: 4000,
        dst_port: 5000,
        payload_len: payload.len(),
    }
    .emit(&mut d);
    d.payload_mut().copy_from_slice(&payload);
    d.fill_checksum(src, dst);
    p
}

enum N {
    Router(Box<Router>),
    Host(Box<Host>),
}

struct Net {
    now: Instant,
    nodes: Vec<N>,
    links: HashMap<(usize, u16), (usize, u16)>,
    /// Every frame that crossed a link, by its sending end.
    wire: Vec<((usize, u16), Vec<u8>)>,
}

const A: usize = 0;
const R1: usize = 1;
const R2: usize = 2;
const B: usize = 3;

fn port(name: &str, last: u8, net: [u8; 2]) -> RouterPort {
    RouterPort {
        name: name.to_string(),
        mac: Address([2, 0xaa, 0, net[1], 0, last]),
        addr: Ipv4Addr::new(198, 18, net[1], last),
        prefix_len: net[0],
        medium: Medium::FullDuplex { rate_bps: RATE },
    }
}

fn route(net: u8, gateway: [u8; 4]) -> StaticRoute {
    StaticRoute {
        prefix: Ipv4Prefix::new(Ipv4Addr::new(198, 18, net, 0), 24).expect("valid"),
        gateway: Ipv4Addr::from(gateway),
        metric: 1,
    }
}

impl Net {
    fn new(adjust: impl Fn(&mut RouterConfig)) -> Net {
        let mut c1 = RouterConfig::new(vec![port("p0", 1, [24, 1]), port("p1", 1, [24, 12])]);
        c1.routes.push(route(2, [198, 18, 12, 2]));
        let mut c2 = RouterConfig::new(vec![port("p0", 2, [24, 12]), port("p1", 1, [24, 2])]);
        c2.routes.push(route(1, [198, 18, 12, 1]));
        adjust(&mut c1);
        adjust(&mut c2);
        let now = Instant::ZERO;
        let nodes = vec![
            N::Host(Box::new(Host::new([1, 2], Ipv4Addr::new(198, 18, 1, 1)))),
            N::Router(Box::new(Router::new(c1, now).expect("valid"))),
            N::Router(Box::new(Router::new(c2, now).expect("valid"))),
            N::Host(Box::new(Host::new([2, 2], Ipv4Addr::new(198, 18, 2, 1)))),
        ];
        let mut links = HashMap::new();
        for (a, b) in [((A, 0), (R1, 0)), ((R1, 1), (R2, 0)), ((R2, 1), (B, 0))] {
            links.insert(a, b);
            links.insert(b, a);
        }
        Net {
            now,
            nodes,
            links,
            wire: Vec::new(),
        }
    }

    fn r(&mut self, i: usize) -> &mut Router {
        match &mut self.nodes[i] {
            N::Router(r) => r,
            N::Host(_) => panic!("{i} is a host"),
        }
    }

    fn h(&mut self, i: usize) -> &mut Host {
        match &mut self.nodes[i] {
            N::Host(h) => h,
            N::Router(_) => panic!("{i} is a router"),
        }
    }

    fn flush(&mut self) {
        let now = self.now;
        let mut buf = vec![0u8; 2048];
        loop {
            let mut moving = Vec::new();
            for (i, node) in self.nodes.iter_mut().enumerate() {
                match node {
                    N::Router(r) => {
                        for p in 0..r.port_count() {
                            while let Some(len) = r.poll_transmit(now, PortId(p as u16), &mut buf) {
                                moving.push(((i, p as u16), buf[..len].to_vec()));
                            }
                        }
                    }
                    N::Host(h) => moving.extend(h.outbox.drain(..).map(|f| ((i, 0), f))),
                }
            }
            if moving.is_empty() {
                return;
            }
            for (from, f) in moving {
                let Some(&(to, p)) = self.links.get(&from) else {
                    continue;
                };
                match &mut self.nodes[to] {
                    N::Router(r) => r.handle_frame(now, PortId(p), &f),
                    N::Host(h) => {
                        h.now = now;
                        h.receive(&f);
                    }
                }
                self.wire.push((from, f));
            }
        }
    }

    fn run_for(&mut self, d: Duration) {
        let until = self.now + d;
        for _ in 0..1_000_000 {
            self.flush();
            let next = self
                .nodes
                .iter()
                .filter_map(|n| match n {
                    N::Router(r) => r.poll_timeout(),
                    N::Host(h) => h.rsvp.as_ref().and_then(|e| e.poll_timeout()),
                })
                .min();
            match next {
                Some(t) if t <= until => {
                    self.now = self.now.max(t);
                    let now = self.now;
                    for n in &mut self.nodes {
                        match n {
                            N::Router(r) => {
                                if r.poll_timeout().is_some_and(|t| t <= now) {
                                    r.handle_timeout(now);
                                }
                            }
                            N::Host(h) => {
                                h.now = now;
                                if let Some(e) = h.rsvp.as_mut() {
                                    e.handle_timeout(now, &mut NoResources);
                                }
                                h.drain_rsvp();
                            }
                        }
                    }
                }
                _ => {
                    self.now = until;
                    self.flush();
                    return;
                }
            }
        }
        panic!("did not settle");
    }
}

fn ip(a: [u8; 4]) -> Ipv4Addr {
    Ipv4Addr::from(a)
}

const IP_A: Ipv4Addr = Ipv4Addr::new(198, 18, 1, 2);
const IP_B: Ipv4Addr = Ipv4Addr::new(198, 18, 2, 2);

/// The ICMP message in a received IPv4 packet, checked.
fn icmp_of(packet: &[u8]) -> (Ipv4Addr, icmp::Repr) {
    let ip = ipv4::Packet::new_checked(packet).expect("ipv4");
    assert!(ip.verify_checksum(), "IP checksum of the ICMP message");
    assert_eq!(ip.protocol(), ipv4::Protocol::Icmp);
    let m = icmp::Packet::new_checked(ip.payload()).expect("icmp");
    assert!(m.verify_checksum(), "ICMP checksum");
    (ip.src_addr(), icmp::Repr::parse(&m).expect("icmp"))
}

#[test]
fn a_datagram_crosses_two_routers_with_ttl_and_checksums_right() {
    let mut net = Net::new(|_| {});
    // Three at once, before anybody knows anybody's MAC: ARP at every hop, nothing lost, in
    // order.
    for tag in 1..=3 {
        net.h(A).send(udp_packet(IP_A, IP_B, 64, tag));
    }
    net.run_for(Duration::from_millis(10));
    let got = net.h(B).received.clone();
    assert_eq!(got.len(), 3);
    for (i, p) in got.iter().enumerate() {
        let v = ipv4::Packet::new_checked(&p[..]).expect("ipv4");
        assert!(v.verify_checksum());
        assert_eq!(v.ttl(), 62, "one less per router");
        assert_eq!((v.src_addr(), v.dst_addr()), (IP_A, IP_B));
        let d = udp::Packet::new_checked(v.payload()).expect("udp");
        assert!(d.verify_checksum(IP_A, IP_B));
        assert_eq!(d.payload()[0], i as u8 + 1, "in order");
    }
    for r in [R1, R2] {
        let s = net.r(r).stats().clone();
        assert_eq!(s.forwarded, 3, "router {r}: {s:?}");
        assert!(s.held >= 1, "router {r}: the first waited for ARP");
        assert_eq!(s.released, s.held, "router {r}");
        assert_eq!(
            s.arp_requests_sent, 1,
            "router {r}: one request per neighbour"
        );
    }
    // The three reached R1 at the same instant: all three waited there. R1 paces them out at
    // the line rate, so B's answer reaches R2 before the later ones do.
    assert_eq!(net.r(R1).stats().held, 3);
    assert_eq!(
        net.r(R1).neighbours(),
        vec![
            (ip([198, 18, 1, 2]), PortId(0), net.h(A).mac),
            (
                ip([198, 18, 12, 2]),
                PortId(1),
                Address([2, 0xaa, 0, 12, 0, 2])
            )
        ]
    );
    // Now every MAC is known: the next one is not held.
    net.h(A).send(udp_packet(IP_A, IP_B, 64, 9));
    net.run_for(Duration::from_millis(1));
    assert_eq!(net.h(B).received.len(), 4);
    assert_eq!(net.r(R1).stats().held, 3, "not held again");
}

#[test]
fn an_expiring_ttl_is_answered_with_time_exceeded_quoting_the_datagram() {
    let mut net = Net::new(|_| {});
    let sent = udp_packet(IP_A, IP_B, 1, 7);
    net.h(A).send(sent.clone());
    net.run_for(Duration::from_millis(10));
    assert!(net.h(B).received.is_empty());
    let got = net.h(A).received.clone();
    assert_eq!(got.len(), 1);
    let (from, message) = icmp_of(&got[0]);
    assert_eq!(
        from,
        ip([198, 18, 1, 1]),
        "from the interface it came in on"
    );
    assert_eq!(
        message,
        icmp::Repr::TimeExceeded {
            code: icmp::TimeExceeded::Ttl,
            quote: sent
        },
        "a short datagram is quoted whole"
    );
    assert_eq!(net.r(R1).stats().drop_ttl, 1);
    assert_eq!(net.r(R1).stats().icmp.time_exceeded, 1);
    // TTL 2 expires at R2: the error comes back across R1.
    net.h(A).send(udp_packet(IP_A, IP_B, 2, 8));
    net.run_for(Duration::from_millis(10));
    let (from, _) = icmp_of(&net.h(A).received[1]);
    assert_eq!(from, ip([198, 18, 12, 2]));
}

#[test]
fn no_route_is_net_unreachable_and_a_silent_neighbour_host_unreachable() {
    let mut net = Net::new(|_| {});
    net.h(A).send(udp_packet(IP_A, ip([203, 0, 113, 5]), 64, 1));
    net.run_for(Duration::from_millis(10));
    let (_, m) = icmp_of(&net.h(A).received[0]);
    assert!(matches!(
        m,
        icmp::Repr::DstUnreachable {
            code: icmp::Unreachable::Net,
            ..
        }
    ));
    assert_eq!(net.r(R1).stats().drop_no_route, 1);

    // 198.18.2.99 is on R2's subnet but nobody has it: three ARP requests a second apart, then
    // host unreachable for each held packet.
    for tag in 0..2 {
        net.h(A)
            .send(udp_packet(IP_A, ip([198, 18, 2, 99]), 64, tag));
    }
    net.run_for(Duration::from_millis(2_900));
    assert_eq!(net.h(A).received.len(), 1, "still waiting");
    net.run_for(Duration::from_millis(200));
    let s = net.r(R2).stats().clone();
    assert_eq!(s.arp_requests_sent, 3, "{s:?}");
    assert_eq!(s.drop_arp_failed, 2);
    assert_eq!(s.icmp.host_unreachable, 2);
    assert_eq!(net.h(A).received.len(), 3);
    let (from, m) = icmp_of(&net.h(A).received[2]);
    assert_eq!(from, ip([198, 18, 12, 2]));
    assert!(matches!(
        m,
        icmp::Repr::DstUnreachable {
            code: icmp::Unreachable::Host,
            ..
        }
    ));
}

#[test]
fn the_router_answers_pings_or_leaves_them_to_the_control_plane() {
    let mut net = Net::new(|_| {});
    let echo = |dst: Ipv4Addr| {
        let m = icmp::Repr::EchoRequest {
            ident: 7,
            seq_no: 1,
            data: b"ping".to_vec(),
        };
        let mut p = vec![0u8; ipv4::HEADER_LEN + m.buffer_len()];
        ipv4::Repr {
            src_addr: IP_A,
            dst_addr: dst,
            protocol: ipv4::Protocol::Icmp,
            payload_len: m.buffer_len(),
            ttl: 64,
            dscp_ecn: 0,
        }
        .emit(&mut ipv4::Packet::new_unchecked(&mut p[..]));
        m.emit(&mut p[ipv4::HEADER_LEN..]).expect("fits");
        p
    };
    // R1's far address answers too (a router answers on any of its addresses).
    net.h(A).send(echo(ip([198, 18, 12, 1])));
    net.run_for(Duration::from_millis(5));
    let (from, m) = icmp_of(&net.h(A).received[0]);
    assert_eq!(from, ip([198, 18, 12, 1]));
    assert_eq!(
        m,
        icmp::Repr::EchoReply {
            ident: 7,
            seq_no: 1,
            data: b"ping".to_vec()
        }
    );
    assert_eq!(net.r(R1).stats().trapped_local, 1);
    assert!(net.r(R1).poll_trapped().is_none(), "answered, not trapped");

    let mut quiet = Net::new(|c| c.answer_local = false);
    // Without answer_local the router does not even answer ARP: the host's kernel does, so here
    // the host learns R1's MAC by hand.
    let mac_r1 = Address([2, 0xaa, 0, 1, 0, 1]);
    quiet.h(A).gateway_mac = Some(mac_r1);
    quiet.h(A).send(echo(ip([198, 18, 1, 1])));
    quiet.run_for(Duration::from_millis(5));
    assert!(quiet.h(A).received.is_empty());
    let trapped = quiet
        .r(R1)
        .poll_trapped()
        .expect("left to the control plane");
    assert_eq!(trapped.reason, TrapReason::Local);
    assert_eq!(trapped.port, PortId(0));
}

#[test]
fn rsvp_router_alert_and_options_are_trapped_not_forwarded() {
    let mut net = Net::new(|_| {});
    let mut rsvp = udp_packet(IP_A, IP_B, 64, 1);
    {
        let mut v = ipv4::Packet::new_unchecked(&mut rsvp[..]);
        v.set_protocol(ipv4::Protocol::from(46));
        v.fill_checksum();
    }
    net.h(A).send(rsvp);
    // A Path-like datagram with Router Alert (a 24-byte header).
    let mut alert = vec![0u8; 24 + 8];
    ipv4::Repr {
        src_addr: IP_A,
        dst_addr: IP_B,
        protocol: ipv4::Protocol::Udp,
        payload_len: 8,
        ttl: 64,
        dscp_ecn: 0,
    }
    .emit_with_router_alert(&mut ipv4::Packet::new_unchecked(&mut alert[..]));
    net.h(A).send(alert);
    net.run_for(Duration::from_millis(5));
    assert!(net.h(B).received.is_empty(), "nothing forwarded");
    let s = net.r(R1).stats().clone();
    assert_eq!(
        (s.trapped_rsvp, s.trapped_router_alert, s.forwarded),
        (1, 1, 0)
    );
    let reasons: Vec<TrapReason> = std::iter::from_fn(|| net.r(R1).poll_trapped())
        .map(|t| t.reason)
        .collect();
    assert_eq!(reasons, vec![TrapReason::Rsvp, TrapReason::RouterAlert]);
}

#[test]
fn bad_headers_martians_and_other_macs_are_dropped_and_counted() {
    let mut net = Net::new(|_| {});
    net.h(A).send(udp_packet(IP_A, IP_B, 64, 1));
    net.run_for(Duration::from_millis(5));
    assert_eq!(net.h(B).received.len(), 1);
    let mac_a = net.h(A).mac;
    let mac_r1 = Address([2, 0xaa, 0, 1, 0, 1]);
    let mut bad = udp_packet(IP_A, IP_B, 64, 2);
    bad[10] ^= 0xff; // header checksum
    let martian = udp_packet(ip([127, 0, 0, 1]), IP_B, 64, 3);
    let multicast = udp_packet(IP_A, ip([239, 1, 2, 3]), 64, 4);
    let own_src = udp_packet(ip([198, 18, 1, 1]), IP_B, 64, 5);
    let r1 = match &mut net.nodes[R1] {
        N::Router(r) => r,
        N::Host(_) => unreachable!(),
    };
    let now = Instant::ZERO;
    r1.handle_frame(now, PortId(0), &frame(mac_a, mac_r1, &bad));
    r1.handle_frame(now, PortId(0), &frame(mac_a, mac_r1, &martian));
    r1.handle_frame(now, PortId(0), &frame(mac_a, mac_r1, &multicast));
    r1.handle_frame(now, PortId(0), &frame(mac_a, mac_r1, &own_src));
    r1.handle_frame(
        now,
        PortId(0),
        &frame(
            mac_a,
            Address([2, 9, 9, 9, 9, 9]),
            &udp_packet(IP_A, IP_B, 64, 6),
        ),
    );
    r1.handle_frame(now, PortId(0), &[0u8; 10]);
    r1.handle_frame(now, PortId(0), &frame(mac_a, mac_r1, &[0x45, 0, 0]));
    r1.handle_frame(
        now,
        PortId(7),
        &frame(mac_a, mac_r1, &udp_packet(IP_A, IP_B, 64, 7)),
    );
    let s = r1.stats().clone();
    assert_eq!(s.drop_bad_checksum, 1);
    assert_eq!(s.drop_martian, 3);
    assert_eq!(s.drop_not_for_us, 1);
    assert_eq!(s.drop_malformed, 2);
    assert_eq!(s.forwarded, 1, "only the first");
}

#[test]
fn icmp_errors_are_rate_limited_per_input_port() {
    let mut net = Net::new(|_| {});
    net.h(A).send(udp_packet(IP_A, IP_B, 64, 0));
    net.run_for(Duration::from_millis(5));
    for tag in 0..200u8 {
        net.h(A).send(udp_packet(IP_A, IP_B, 1, tag));
    }
    net.run_for(Duration::from_millis(5));
    let s = net.r(R1).stats().clone();
    assert_eq!(s.drop_ttl, 200);
    // Burst 50 at once, and 100/s: within 5 ms at most one more token.
    assert!((50..=51).contains(&s.icmp.time_exceeded), "{s:?}");
    assert_eq!(s.icmp.time_exceeded + s.icmp.rate_limited, 200);
    // No error about an ICMP error: A's own time exceeded with TTL 1 is dropped silently.
    let quote = udp_packet(IP_A, IP_B, 64, 1);
    let m = icmp::Repr::TimeExceeded {
        code: icmp::TimeExceeded::Ttl,
        quote,
    };
    let mut p = vec![0u8; ipv4::HEADER_LEN + m.buffer_len()];
    ipv4::Repr {
        src_addr: IP_A,
        dst_addr: IP_B,
        protocol: ipv4::Protocol::Icmp,
        payload_len: m.buffer_len(),
        ttl: 1,
        dscp_ecn: 0,
    }
    .emit(&mut ipv4::Packet::new_unchecked(&mut p[..]));
    m.emit(&mut p[ipv4::HEADER_LEN..]).expect("fits");
    net.h(A).send(p);
    net.run_for(Duration::from_secs(1));
    assert_eq!(net.r(R1).stats().icmp.suppressed, 1);
}

#[test]
fn route_changes_are_acted_on_and_sources_keep_their_precedence() {
    let mut net = Net::new(|_| {});
    let far = Ipv4Prefix::new(ip([198, 18, 2, 0]), 24).expect("valid");
    assert!(
        !net.r(R1).remove_route(far, RouteSource::Kernel),
        "it is static"
    );
    assert!(net.r(R1).remove_route(far, RouteSource::Static));
    net.h(A).send(udp_packet(IP_A, IP_B, 64, 1));
    net.run_for(Duration::from_millis(5));
    assert!(net.h(B).received.is_empty());
    assert_eq!(net.r(R1).stats().drop_no_route, 1);
    // A routing daemon's route (mirrored from the kernel) brings it back.
    let via_r2 = Route {
        next_hop: NextHop {
            gateway: Some(ip([198, 18, 12, 2])),
            port: PortId(1),
        },
        source: RouteSource::Kernel,
        metric: 20,
    };
    assert!(net.r(R1).install_route(far, via_r2));
    net.h(A).send(udp_packet(IP_A, IP_B, 64, 2));
    net.run_for(Duration::from_millis(5));
    assert_eq!(net.h(B).received.len(), 1);
    // A kernel route never replaces a connected one; a route out of a missing port is refused.
    let own = Ipv4Prefix::new(ip([198, 18, 1, 0]), 24).expect("valid");
    assert!(!net.r(R1).install_route(own, via_r2));
    let nowhere = Route {
        next_hop: NextHop {
            gateway: None,
            port: PortId(9),
        },
        ..via_r2
    };
    assert!(!net.r(R1).install_route(far, nowhere));
    assert_eq!(net.r(R1).stats().route_changes, 2);
}

#[test]
fn a_port_whose_carrier_is_down_drops_what_would_leave_by_it() {
    let mut net = Net::new(|_| {});
    net.h(A).send(udp_packet(IP_A, IP_B, 64, 1));
    net.run_for(Duration::from_millis(5));
    let now = net.now;
    net.r(R1).handle_link(now, PortId(1), false);
    net.h(A).send(udp_packet(IP_A, IP_B, 64, 2));
    net.run_for(Duration::from_millis(5));
    assert_eq!(net.h(B).received.len(), 1);
    assert_eq!(net.r(R1).stats().drop_link_down, 1);
    let now = net.now;
    net.r(R1).handle_link(now, PortId(1), true);
    net.h(A).send(udp_packet(IP_A, IP_B, 64, 3));
    net.run_for(Duration::from_millis(5));
    assert_eq!(net.h(B).received.len(), 2, "back after ARP again");
}

#[test]
fn bad_configurations_are_refused() {
    let now = Instant::ZERO;
    assert_eq!(
        Router::new(RouterConfig::new(vec![]), now).err(),
        Some(RouterConfigError::NoPorts)
    );
    let same = RouterConfig::new(vec![port("p0", 1, [24, 1]), port("p1", 2, [24, 1])]);
    assert!(matches!(
        Router::new(same, now),
        Err(RouterConfigError::SameSubnet { .. })
    ));
    let mut lost = RouterConfig::new(vec![port("p0", 1, [24, 1])]);
    lost.routes.push(route(2, [10, 0, 0, 1]));
    assert!(matches!(
        Router::new(lost, now),
        Err(RouterConfigError::GatewayNotConnected { .. })
    ));
    let mut long = RouterConfig::new(vec![port("p0", 1, [24, 1])]);
    long.ports[0].prefix_len = 33;
    assert!(matches!(
        Router::new(long, now),
        Err(RouterConfigError::BadPrefix { .. })
    ));
}

/// A neighbour the router first heard on one port and then resolves on another (a host moved,
/// or was misconfigured): the answer on the new port releases what waited for it there, at
/// once — not after three unanswered requests.
#[test]
fn an_answer_releases_held_packets_even_when_the_neighbour_was_known_on_another_port() {
    let now = Instant::ZERO;
    let mut c = RouterConfig::new(vec![port("p0", 1, [24, 1]), port("p1", 1, [24, 2])]);
    c.routes.push(StaticRoute {
        prefix: Ipv4Prefix::new(ip([10, 0, 0, 0]), 8).expect("valid"),
        gateway: ip([198, 18, 2, 2]),
        metric: 1,
    });
    let mut r = Router::new(c, now).expect("valid");
    let x = ip([198, 18, 2, 2]);
    let mac_x = Address([2, 0, 0, 0, 2, 2]);
    let mac_p0 = Address([2, 0xaa, 0, 1, 0, 1]);
    // X asks for the router's p0 address from p0's side: learnt on p0.
    r.handle_frame(
        now,
        PortId(0),
        &arp_frame(
            arp::Operation::Request,
            mac_x,
            x,
            Address([0; 6]),
            ip([198, 18, 1, 1]),
        ),
    );
    // A packet to 10.1.2.3 goes via X out of p1: unresolved there, held, requested.
    r.handle_frame(
        now,
        PortId(0),
        &frame(
            IP_A_MAC,
            mac_p0,
            &udp_packet(IP_A, ip([10, 1, 2, 3]), 64, 1),
        ),
    );
    assert_eq!(r.stats().held, 1);
    // X answers on p1.
    r.handle_frame(
        now,
        PortId(1),
        &arp_frame(
            arp::Operation::Reply,
            mac_x,
            x,
            Address([2, 0xaa, 0, 2, 0, 1]),
            ip([198, 18, 2, 1]),
        ),
    );
    assert_eq!(r.stats().released, 1, "{:?}", r.stats());
    let mut buf = [0u8; 1514];
    let mut sent = Vec::new();
    while let Some(len) = r.poll_transmit(now + Duration::from_millis(1), PortId(1), &mut buf) {
        sent.push(buf[..len].to_vec());
    }
    assert!(
        sent.iter()
            .any(|f| f[..6] == mac_x.0 && f[12..14] == [0x08, 0x00]),
        "the held packet went to X on p1"
    );
}

const IP_A_MAC: Address = Address([2, 0, 0, 0, 1, 2]);

// ----- RSVP switched paths (QSR §3.2, §4.2; docs/rsvp.md §7) ---------------------------------

mod switched_paths {
    use super::*;
    use crate::rsvp::{Event, Role, Rsvp, RsvpConfig};
    use rtlan_wire::mpls;
    use rtlan_wire::rsvp::{
        Adspec, ErrorCode, F32Bits, FilterSpec, FlowDescriptors, Flowspec, Rspec, SenderDescriptor,
        Session, TokenBucket as Tspec,
    };

    pub(super) const SESSION: Session = Session {
        dst_addr: IP_B,
        protocol_id: 17,
        flags: 0,
        dst_port: 5000,
    };
    pub(super) const SENDER: FilterSpec = FilterSpec {
        src_addr: IP_A,
        src_port: 4000,
    };

    fn tspec(rate: f32, bucket: f32) -> Tspec {
        Tspec {
            rate: F32Bits::from_f32(rate),
            size: F32Bits::from_f32(bucket),
            peak: F32Bits::from_f32(f32::INFINITY),
            min_policed_unit: 64,
            max_packet_size: 1500,
        }
    }

    pub(super) fn guaranteed(rate: f32) -> Flowspec {
        Flowspec::Guaranteed {
            tspec: tspec(rate, 3000.0),
            rspec: Rspec {
                rate: F32Bits::from_f32(rate),
                slack: 0,
            },
        }
    }

    /// The two-router net with RSVP on the routers and RSVP engines in a and b.
    fn net() -> Net {
        let mut net = Net::new(|c| {
            c.rsvp = Some(RsvpSettings {
                refresh: Duration::from_secs(1),
                ..RsvpSettings::default()
            })
        });
        for (h, addr) in [(A, IP_A), (B, IP_B)] {
            let mut config = RsvpConfig::new(Role::Host, vec![addr]);
            config.refresh = Duration::from_secs(1);
            net.h(h).rsvp = Some(Rsvp::new(config));
        }
        net
    }

    pub(super) fn open(net: &mut Net, rate: f32, bucket: f32) {
        let now = net.now;
        let host = net.h(A);
        let adspec = Adspec::sender_initial(1500);
        let gw = host.gateway;
        host.rsvp.as_mut().unwrap().open_sender(
            now,
            SESSION,
            SenderDescriptor {
                sender_template: SENDER,
                sender_tspec: tspec(rate, bucket),
                adspec: Some(adspec),
            },
            &ViaGateway(gw),
            &mut NoResources,
        );
        host.drain_rsvp();
    }

    pub(super) fn reserve(net: &mut Net, flowspec: Flowspec) {
        let now = net.now;
        let host = net.h(B);
        host.rsvp.as_mut().unwrap().reserve(
            now,
            SESSION,
            FlowDescriptors::FixedFilter(vec![(flowspec, SENDER)]),
            false,
            &mut NoResources,
        );
        host.drain_rsvp();
    }

    /// a sends `n` datagrams of `size` bytes of UDP payload, `gap` apart.
    fn stream(net: &mut Net, n: usize, size: usize, gap: Duration) {
        for i in 0..n {
            let mut p = udp_packet(IP_A, IP_B, 64, i as u8);
            // Grow the payload: rebuild with the size wanted.
            if size > 32 {
                p = sized_udp(IP_A, IP_B, size, i as u8);
            }
            net.h(A).send(p);
            net.run_for(gap);
        }
    }

    fn reserved() -> Net {
        let mut net = net();
        open(&mut net, 125_000.0, 3000.0);
        net.run_for(Duration::from_millis(10));
        let arrived = net.h(B).rsvp_events.iter().find_map(|e| match e {
            Event::PathArrived { sender, .. } => sender.adspec,
            _ => None,
        });
        let Some(adspec) = arrived else {
            let r1 = net.r(R1).stats().clone();
            let r2 = net.r(R2).stats().clone();
            panic!("b learnt no path: r1 {r1:?}\nr2 {r2:?}");
        };
        assert_eq!(
            adspec.general.hop_count, 2,
            "two routers composed the ADSPEC"
        );
        let d = adspec.guaranteed.unwrap().terms.unwrap().d_tot;
        // Each 100 Mbit/s hop: one 1538-byte frame (123 µs) + one wheel slot.
        assert!(d >= 2 * 123, "D_tot {d} µs");
        reserve(&mut net, guaranteed(125_000.0));
        net.run_for(Duration::from_millis(10));
        assert!(
            net.h(A)
                .rsvp_events
                .iter()
                .any(|e| matches!(e, Event::Reserved { .. })),
            "a: {:?}",
            net.h(A).rsvp_events
        );
        net
    }

    #[test]
    fn a_reserved_flow_is_label_switched_from_the_first_to_the_last_router() {
        let mut net = reserved();
        // r2 switches r1's label on p0 and pops towards b; r1 classifies by 5-tuple.
        let table = net.r(R2).label_table();
        assert_eq!(table.len(), 1);
        let ((in_port, label), (out_port, out_label)) = table[0];
        assert_eq!((in_port, out_port, out_label), (PortId(0), PortId(1), None));
        assert!(net.r(R1).label_table().is_empty());
        assert_eq!(net.r(R1).tables().rsvp.len(), 1);

        net.wire.clear();
        stream(&mut net, 20, 32, Duration::from_millis(1));
        net.run_for(Duration::from_millis(5));
        let got = std::mem::take(&mut net.h(B).received);
        let data: Vec<&Vec<u8>> = got
            .iter()
            .filter(|p| {
                ipv4::Packet::new_checked(&p[..])
                    .is_ok_and(|ip| ip.protocol() == ipv4::Protocol::Udp)
            })
            .collect();
        assert_eq!(data.len(), 20);
        for p in &data {
            let ip = ipv4::Packet::new_checked(&p[..]).unwrap();
            assert!(ip.verify_checksum());
            assert_eq!(ip.ttl(), 62, "two router hops, as when routed");
            let u = udp::Packet::new_checked(ip.payload()).unwrap();
            assert!(u.verify_checksum(ip.src_addr(), ip.dst_addr()));
        }
        // Between the routers every data frame carried r1's label.
        let labelled: Vec<_> = net
            .wire
            .iter()
            .filter(|(from, f)| *from == (R1, 1) && f[12..14] == [0x88, 0x47])
            .collect();
        assert_eq!(labelled.len(), 20);
        for (_, f) in &labelled {
            let shim = mpls::Packet::new_checked(&f[14..]).unwrap();
            assert_eq!(shim.label(), label);
            assert!(shim.bottom_of_stack());
            assert_eq!(shim.ttl(), 63);
        }
        let (s1, s2) = (net.r(R1).stats().clone(), net.r(R2).stats().clone());
        assert_eq!(s1.reserved_in, 20);
        assert_eq!(s2.labelled_in, 20);
        assert_eq!(s2.labelled_switched, 20);
        assert_eq!(s1.demoted_excess + s2.drop_unknown_label, 0);
        assert!(s1.rsvp.path_in >= 1 && s2.rsvp.resv_in >= 1);
    }

    #[test]
    fn traffic_beyond_the_tspec_is_forwarded_as_default_ip() {
        let mut net = reserved();
        // 10 back-to-back 1000-byte datagrams: the 3000-byte bucket passes 2 (1028-byte IP
        // packets), the rest go the default way — and all arrive, nothing else competes.
        for i in 0..10 {
            let p = sized_udp(IP_A, IP_B, 1000, i);
            net.h(A).send(p);
        }
        net.run_for(Duration::from_millis(20));
        let s1 = net.r(R1).stats().clone();
        assert_eq!(s1.reserved_in, 2);
        assert_eq!(s1.demoted_excess, 8);
        let data = net.h(B).received.iter().filter(|p| p.len() == 1028).count();
        assert_eq!(data, 10);
    }

    #[test]
    fn a_path_tear_returns_the_flow_to_default_forwarding() {
        let mut net = reserved();
        let host = net.h(A);
        host.rsvp
            .as_mut()
            .unwrap()
            .close_sender(SESSION, SENDER, &mut NoResources);
        host.drain_rsvp();
        net.run_for(Duration::from_millis(10));
        assert!(net.r(R2).label_table().is_empty());
        assert_eq!(net.r(R1).tables().rsvp.len(), 0);
        let before = net.r(R2).stats().labelled_in;
        stream(&mut net, 5, 32, Duration::from_millis(1));
        net.run_for(Duration::from_millis(5));
        assert_eq!(net.r(R2).stats().labelled_in, before);
        assert_eq!(
            net.h(B)
                .received
                .iter()
                .filter(|p| p.len() == ipv4::HEADER_LEN + udp::HEADER_LEN + 32)
                .count(),
            5
        );
    }

    #[test]
    fn a_reservation_beyond_the_reservable_rate_is_refused_to_the_receiver() {
        let mut net = net();
        open(&mut net, 125_000.0, 3000.0);
        net.run_for(Duration::from_millis(10));
        // 100 Mbit/s ports keep 10 % for default IP and 1 % for control: 89 Mbit/s of wire
        // rate is reservable; 11 MB/s of 64-byte packets is 11e6 × 8 × 106 / 64 ≈ 146 Mbit/s.
        reserve(&mut net, guaranteed(11_000_000.0));
        net.run_for(Duration::from_millis(10));
        let err = net.h(B).rsvp_events.iter().find_map(|e| match e {
            Event::ResvError { error, .. } => Some(*error),
            _ => None,
        });
        let err = err.expect("b is told");
        assert_eq!(err.code, ErrorCode::AdmissionControlFailure);
        assert_eq!(err.value, 2, "bandwidth");
        assert!(net.r(R2).label_table().is_empty());
        assert_eq!(net.r(R1).tables().rsvp.len(), 0);
    }

    #[test]
    fn a_default_ip_flood_does_not_touch_the_reserved_flow() {
        let mut net = reserved();
        // Each millisecond: one reserved datagram, and 20 default datagrams of 1400 bytes to
        // another port (224 Mbit/s offered to a 100 Mbit/s link for 50 ms).
        let mut flood = 0u32;
        for i in 0..50u8 {
            let mut p = udp_packet(IP_A, IP_B, 64, i);
            p[20..22].copy_from_slice(&4000u16.to_be_bytes());
            net.h(A).send(p);
            for _ in 0..20 {
                let mut q = sized_udp(IP_A, IP_B, 1400, i);
                // Another source port: not the reserved sender.
                q[20..22].copy_from_slice(&4001u16.to_be_bytes());
                let u = &mut q[20..];
                u[6..8].copy_from_slice(&[0, 0]);
                net.h(A).send(q);
                flood += 1;
            }
            net.run_for(Duration::from_millis(1));
        }
        net.run_for(Duration::from_millis(200));
        let got = &net.h(B).received;
        let reserved = got
            .iter()
            .filter(|p| p.len() == ipv4::HEADER_LEN + udp::HEADER_LEN + 32)
            .count();
        let default = got.iter().filter(|p| p.len() == 1428).count() as u32;
        let s1 = net.r(R1).stats().clone();
        assert_eq!(reserved, 50, "every reserved datagram arrives");
        assert!(
            default < flood,
            "the flood overflowed: {default} of {flood}"
        );
        assert!(s1.ports[1].drop_queue_full > 0);
        assert_eq!(s1.reserved_in, 50);
        assert_eq!(s1.drop_reserved_queue, 0);
    }

    fn controlled_load(rate: f32, bucket: f32) -> Flowspec {
        Flowspec::ControlledLoad {
            tspec: tspec(rate, bucket),
        }
    }

    #[test]
    fn a_controlled_load_reservation_is_switched_and_its_buffer_test_refuses_what_overflows() {
        let mut net = net();
        open(&mut net, 125_000.0, 3000.0);
        net.run_for(Duration::from_millis(10));
        reserve(&mut net, controlled_load(125_000.0, 3000.0));
        net.run_for(Duration::from_millis(10));
        assert_eq!(net.r(R2).label_table().len(), 1);
        stream(&mut net, 10, 32, Duration::from_millis(1));
        net.run_for(Duration::from_millis(5));
        assert_eq!(net.r(R2).stats().labelled_switched, 10);

        // A 300 KB bucket alone fits no 256 KiB Controlled-Load buffer: Σb/2 + 4.75·√(Σb²/12)
        // = 150,000 + 411,000 bytes. Refused for buffer (value 3), the old one kept in place.
        reserve(&mut net, controlled_load(125_000.0, 300_000.0));
        net.run_for(Duration::from_millis(10));
        let err = net.h(B).rsvp_events.iter().rev().find_map(|e| match e {
            Event::ResvError { error, .. } => Some(*error),
            _ => None,
        });
        let err = err.expect("b is told");
        assert_eq!(
            (err.code, err.value),
            (ErrorCode::AdmissionControlFailure, 3)
        );
        assert_eq!(
            net.r(R2).label_table().len(),
            1,
            "the old reservation stays"
        );
    }

    #[test]
    fn the_switched_path_survives_refreshes() {
        let mut net = reserved();
        net.run_for(Duration::from_secs(20));
        assert_eq!(net.r(R2).label_table().len(), 1);
        let st = net.r(R2).rsvp_stats().unwrap();
        assert_eq!(
            (st.paths, st.resvs, st.path_timeouts, st.resv_timeouts),
            (1, 1, 0, 0)
        );
        assert!(
            st.path_in >= 10,
            "refreshed about every second: {}",
            st.path_in
        );
    }
}

/// Provisioned pipes (QSR §5): r1 starts a pipe from a's subnet to b's, r2 ends it.
mod pipes {
    use super::*;
    use crate::router::{PipeService, PipeSpec, PipeState};
    use rtlan_wire::mpls;

    fn net(r1_uplink_bps: u64) -> Net {
        Net::new(|c| {
            c.rsvp = Some(RsvpSettings {
                refresh: Duration::from_secs(1),
                ..RsvpSettings::default()
            });
            if c.ports[0].addr == Ipv4Addr::new(198, 18, 1, 1) {
                c.ports[1].medium = Medium::FullDuplex {
                    rate_bps: r1_uplink_bps,
                };
            }
        })
    }

    pub(super) fn spec(rate_bps: u64) -> PipeSpec {
        PipeSpec {
            name: "a-to-b".into(),
            from: vec!["198.18.1.0/24".parse().unwrap()],
            to: "198.18.2.0/24".parse().unwrap(),
            service: PipeService::ControlledLoad,
            rate_bps,
            burst_bytes: 3000,
            max_packet: 1500,
        }
    }

    fn up() -> Net {
        let mut net = net(RATE);
        let now = net.now;
        let id = net
            .r(R1)
            .create_pipe(now, spec(10_000_000))
            .expect("created");
        assert_eq!(id, 1);
        net.run_for(Duration::from_millis(10));
        let now = net.now;
        let ingress = net.r(R1).pipes(now);
        assert_eq!(ingress.len(), 1);
        assert_eq!(ingress[0].state, PipeState::Up, "{ingress:?}");
        assert_eq!(ingress[0].port.as_deref(), Some("p1"));
        assert!(ingress[0].label.is_some());
        let egress = net.r(R2).pipes(now);
        assert_eq!(egress.len(), 1);
        assert_eq!(egress[0].role, "egress");
        assert_eq!(egress[0].state, PipeState::Up);
        assert_eq!(egress[0].port.as_deref(), Some("p1"), "booked towards b");
        assert_eq!(egress[0].ingress_router, Ipv4Addr::new(198, 18, 1, 1));
        assert_eq!(egress[0].to, "198.18.2.0/24");
        assert_eq!(egress[0].rate_bps, 10_000_000);
        net
    }

    #[test]
    fn a_pipe_switches_every_packet_from_its_sources_to_its_subnet() {
        let mut net = up();
        net.wire.clear();
        // Any protocol and port: the pipe's filters are CIDR, not 5-tuples.
        for i in 0..20u8 {
            net.h(A).send(udp_packet(IP_A, IP_B, 64, i));
            net.run_for(Duration::from_millis(1));
        }
        net.run_for(Duration::from_millis(5));
        let got: Vec<_> = std::mem::take(&mut net.h(B).received)
            .into_iter()
            .filter(|p| {
                ipv4::Packet::new_checked(&p[..])
                    .is_ok_and(|ip| ip.protocol() == ipv4::Protocol::Udp)
            })
            .collect();
        assert_eq!(got.len(), 20);
        for p in &got {
            let ip = ipv4::Packet::new_checked(&p[..]).unwrap();
            assert!(ip.verify_checksum());
            assert_eq!(ip.ttl(), 62, "two router hops, as when routed");
        }
        let labelled = net
            .wire
            .iter()
            .filter(|(from, f)| *from == (R1, 1) && f[12..14] == [0x88, 0x47])
            .count();
        assert_eq!(
            labelled, 20,
            "every packet crossed r1–r2 on the pipe's label"
        );
        let now = net.now;
        let (ingress, egress) = (net.r(R1).pipes(now), net.r(R2).pipes(now));
        assert_eq!(ingress[0].counters.packets, 20);
        assert_eq!(egress[0].counters.packets, 20);
        assert_eq!(ingress[0].counters.demoted, 0);
        // The label r2 pops is the one r1 pushes.
        let table = net.r(R2).label_table();
        assert_eq!(table.len(), 1);
        assert_eq!(Some(table[0].0 .1), ingress[0].label);
        // Traffic to another subnet does not enter the pipe.
        net.wire.clear();
        net.h(A)
            .send(udp_packet(IP_A, Ipv4Addr::new(198, 18, 12, 2), 64, 1));
        net.run_for(Duration::from_millis(5));
        assert!(net
            .wire
            .iter()
            .all(|(from, f)| *from != (R1, 1) || f[12..14] != [0x88, 0x47]));
    }

    #[test]
    fn traffic_beyond_the_pipe_is_demoted_and_still_delivered() {
        let mut net = up();
        for i in 0..10 {
            net.h(A).send(sized_udp(IP_A, IP_B, 1000, i));
        }
        net.run_for(Duration::from_millis(20));
        let now = net.now;
        let c = net.r(R1).pipes(now)[0].counters;
        // A 3000-byte bucket passes two 1028-byte packets at once; the rest go as default IP.
        assert_eq!((c.packets, c.demoted), (2, 8));
        assert_eq!(
            net.h(B).received.iter().filter(|p| p.len() == 1028).count(),
            10
        );
    }

    #[test]
    fn deleting_a_pipe_tears_it_down_at_both_ends() {
        let mut net = up();
        let now = net.now;
        let status = net.r(R1).delete_pipe(now, "a-to-b").expect("deleted");
        assert_eq!(status.state, PipeState::Up);
        net.run_for(Duration::from_millis(10));
        let now = net.now;
        assert!(net.r(R1).pipes(now).is_empty());
        assert!(net.r(R2).pipes(now).is_empty());
        assert!(net.r(R2).label_table().is_empty());
        assert!(net.r(R1).tables().psip.is_empty());
        assert_eq!(net.r(R1).stats().rsvp.paths, 0);
        assert_eq!(net.r(R2).stats().rsvp.resvs, 0);
        assert_eq!(
            net.r(R1).delete_pipe(now, "a-to-b").unwrap_err().code(),
            "not_found"
        );
        // The bandwidth is free again: a pipe of the same name comes up once more.
        net.r(R1).create_pipe(now, spec(10_000_000)).expect("again");
        net.run_for(Duration::from_millis(10));
        let now = net.now;
        assert_eq!(net.r(R1).pipes(now)[0].state, PipeState::Up);
    }

    #[test]
    fn a_hop_that_cannot_carry_the_pipe_is_named_at_the_ingress() {
        // r1's uplink is 10 Mbit/s: r2 books its 100 Mbit/s port, r1 refuses, r2 passes the
        // refusal back to r1's operator as a PathErr.
        let mut net = net(10_000_000);
        let now = net.now;
        net.r(R1).create_pipe(now, spec(20_000_000)).unwrap();
        net.run_for(Duration::from_millis(10));
        let now = net.now;
        let p = &net.r(R1).pipes(now)[0];
        assert_eq!(p.state, PipeState::Refused, "{p:?}");
        let refusal = p.refusal.clone().unwrap();
        assert_eq!(refusal.node, Ipv4Addr::new(198, 18, 12, 1), "r1's uplink");
        assert_eq!((refusal.code, refusal.value), (1, 2), "bandwidth");
        assert!(net.r(R1).tables().psip.is_empty());
        // At the egress the booking is too big for its port: refused there, and named.
        let mut net = net_with_big_pipe();
        let now = net.now;
        let p = &net.r(R1).pipes(now)[0];
        assert_eq!(p.state, PipeState::Refused);
        assert_eq!(
            p.refusal.clone().unwrap().node,
            Ipv4Addr::new(198, 18, 2, 1)
        );
        assert_eq!(net.r(R2).pipes(now)[0].state, PipeState::Refused);
    }

    fn net_with_big_pipe() -> Net {
        let mut net = net(RATE);
        let now = net.now;
        net.r(R1).create_pipe(now, spec(99_000_000)).unwrap();
        net.run_for(Duration::from_millis(10));
        net
    }

    #[test]
    fn bad_requests_are_refused_by_name() {
        let mut net = net(RATE);
        let now = net.now;
        let r1 = net.r(R1);
        let mut s = spec(1_000_000);
        s.to = "198.18.1.0/24".parse().unwrap();
        assert_eq!(
            r1.create_pipe(now, s).unwrap_err().code(),
            "destination_attached"
        );
        r1.create_pipe(now, spec(1_000_000)).unwrap();
        assert_eq!(
            r1.create_pipe(now, spec(1_000_000)).unwrap_err().code(),
            "name_exists"
        );
        let mut no_rsvp = Net::new(|_| {});
        let now = no_rsvp.now;
        assert_eq!(
            no_rsvp
                .r(R1)
                .create_pipe(now, spec(1_000_000))
                .unwrap_err()
                .code(),
            "no_rsvp"
        );
    }

    #[test]
    fn a_hosts_path_for_a_pipe_session_is_dropped_at_the_first_router() {
        use crate::rsvp::{Role, Rsvp, RsvpConfig};
        use rtlan_wire::rsvp::{Adspec, F32Bits, FilterSpec, SenderDescriptor, TokenBucket};
        let mut net = net(RATE);
        let mut config = RsvpConfig::new(Role::Host, vec![IP_A]);
        config.refresh = Duration::from_secs(1);
        net.h(A).rsvp = Some(Rsvp::new(config));
        let now = net.now;
        let host = net.h(A);
        let gw = host.gateway;
        host.rsvp.as_mut().unwrap().open_sender(
            now,
            spec(1_000_000).session(),
            SenderDescriptor {
                sender_template: FilterSpec {
                    src_addr: IP_A,
                    src_port: 1,
                },
                sender_tspec: TokenBucket {
                    rate: F32Bits::from_f32(125_000.0),
                    size: F32Bits::from_f32(3000.0),
                    peak: F32Bits::from_f32(f32::INFINITY),
                    min_policed_unit: 64,
                    max_packet_size: 1500,
                },
                adspec: Some(Adspec::sender_initial(1500)),
            },
            &ViaGateway(gw),
            &mut NoResources,
        );
        host.drain_rsvp();
        net.run_for(Duration::from_millis(10));
        assert!(net.r(R1).stats().drop_psip_unlabelled >= 1);
        let now = net.now;
        assert!(net.r(R2).pipes(now).is_empty());
        assert_eq!(net.r(R2).stats().rsvp.path_in, 0);
        let _ = mpls::ENTRY_LEN;
    }
}

/// A UDP datagram from `src` to `dst` (ports 4000 → 5000) of `size` payload bytes of `tag`.
fn sized_udp(src: Ipv4Addr, dst: Ipv4Addr, size: usize, tag: u8) -> Vec<u8> {
    let mut p = vec![0u8; ipv4::HEADER_LEN + udp::HEADER_LEN + size];
    ipv4::Repr {
        src_addr: src,
        dst_addr: dst,
        protocol: ipv4::Protocol::Udp,
        payload_len: udp::HEADER_LEN + size,
        ttl: 64,
        dscp_ecn: 0,
    }
    .emit(&mut ipv4::Packet::new_unchecked(&mut p[..]));
    let mut d = udp::Packet::new_unchecked(&mut p[ipv4::HEADER_LEN..]);
    udp::Repr {
        src_port: 4000,
        dst_port: 5000,
        payload_len: size,
    }
    .emit(&mut d);
    d.payload_mut().fill(tag);
    d.fill_checksum(src, dst);
    p
}
