//! The engine in small networks of engines on virtual time: every message is written to bytes
//! and parsed back on the way (so what the engine sends is what the wire carries), links are
//! instantaneous, and a filter can drop any node's messages (a dead sender, a lost link).

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::time::Duration;

use rtlan_wire::rsvp::{
    Adspec, ErrorCode, F32Bits, FilterSpec, FlowDescriptors, Flowspec, Message, Packet, Path, Repr,
    Rspec, RsvpHop, SenderDescriptor, Session, TimeValues, TokenBucket,
};

use super::*;
use crate::time::Instant;

fn ip(s: &str) -> Ipv4Addr {
    s.parse().unwrap()
}

/// Routes: (network, prefix length, route), longest prefix first.
#[derive(Debug, Clone, Default)]
struct Table(Vec<(Ipv4Addr, u8, RouteTo)>);

impl Table {
    fn add(&mut self, net: &str, len: u8, port: u16, gateway: Option<&str>) {
        self.0.push((
            ip(net),
            len,
            RouteTo {
                port: PortId(port),
                gateway: gateway.map(ip),
            },
        ));
        self.0.sort_by_key(|r| std::cmp::Reverse(r.1));
    }
}

impl Routing for Table {
    fn route(&self, dst: Ipv4Addr) -> Option<RouteTo> {
        self.0.iter().find_map(|(net, len, r)| {
            let mask = u32::MAX.checked_shl(32 - u32::from(*len)).unwrap_or(0);
            (u32::from(dst) & mask == u32::from(*net)).then_some(*r)
        })
    }
}

/// Bandwidth per port, bytes/s; every reservation books its rate (R for Guaranteed, r for
/// Controlled-Load).
#[derive(Debug, Clone, Default)]
struct Bandwidth {
    capacity: HashMap<u16, f32>,
    booked: HashMap<ResvId, (u16, f32)>,
    /// Whether this node adds ADSPEC terms (routers do, hosts do not).
    terms: bool,
}

impl Bandwidth {
    fn used(&self, port: u16) -> f32 {
        self.booked
            .values()
            .filter(|(p, _)| *p == port)
            .map(|(_, r)| r)
            .sum()
    }
}

impl Resources for Bandwidth {
    fn reserve(
        &mut self,
        port: PortId,
        id: ResvId,
        request: &ResvRequest<'_>,
    ) -> Result<(), Refusal> {
        let rate = match request.flowspec {
            Flowspec::Guaranteed { rspec, .. } => rspec.rate.to_f32(),
            Flowspec::ControlledLoad { tspec } => tspec.rate.to_f32(),
        };
        let others: f32 = self
            .booked
            .iter()
            .filter(|(i, (p, _))| **i != id && *p == port.0)
            .map(|(_, (_, r))| r)
            .sum();
        let cap = self.capacity.get(&port.0).copied().unwrap_or(f32::INFINITY);
        if others + rate > cap {
            return Err(Refusal {
                code: ErrorCode::AdmissionControlFailure,
                value: 2,
            });
        }
        self.booked.insert(id, (port.0, rate));
        Ok(())
    }

    fn release(&mut self, port: PortId, id: ResvId) {
        let gone = self.booked.remove(&id);
        assert_eq!(gone.map(|(p, _)| p), Some(port.0), "released where booked");
    }

    fn hop_terms(&self, port: PortId) -> Option<HopTerms> {
        self.terms.then(|| HopTerms {
            bandwidth: self.capacity.get(&port.0).copied().unwrap_or(12_500_000.0),
            latency_us: 10,
            mtu: 1500,
            guaranteed: Some((1500, 100)),
            controlled_load: true,
        })
    }
}

struct NodeSim {
    name: &'static str,
    engine: Rsvp,
    routes: Table,
    res: Bandwidth,
    events: Vec<Event>,
    splices: Vec<Splice>,
    unsplices: Vec<Unsplice>,
    /// Splices and unsplices in the order they came.
    dataplane: Vec<Output>,
    /// (port, the message) of everything sent, for assertions.
    sent: Vec<(PortId, Message)>,
}

/// A network of engines joined by links between (node, port) pairs.
struct Net {
    nodes: Vec<NodeSim>,
    links: HashMap<(usize, u16), (usize, u16)>,
    now: Instant,
    /// Messages of these nodes are lost.
    mute: Vec<usize>,
    /// Links (as (node, port)) that lose everything.
    cut: Vec<(usize, u16)>,
}

const R: Duration = Duration::from_secs(30);

impl Net {
    fn node(&mut self, name: &'static str, role: Role, addrs: &[&str]) -> usize {
        let mut config = RsvpConfig::new(role, addrs.iter().map(|a| ip(a)).collect());
        config.seed = self.nodes.len() as u64 + 7;
        self.nodes.push(NodeSim {
            name,
            engine: Rsvp::new(config),
            routes: Table::default(),
            res: Bandwidth {
                terms: role == Role::Router,
                ..Bandwidth::default()
            },
            events: Vec::new(),
            splices: Vec::new(),
            unsplices: Vec::new(),
            dataplane: Vec::new(),
            sent: Vec::new(),
        });
        self.nodes.len() - 1
    }

    fn link(&mut self, a: usize, pa: u16, b: usize, pb: u16) {
        self.links.insert((a, pa), (b, pb));
        self.links.insert((b, pb), (a, pa));
    }

    fn by_name(&self, name: &str) -> usize {
        self.nodes.iter().position(|n| n.name == name).unwrap()
    }

    /// Delivers everything pending, without advancing time.
    fn settle(&mut self) {
        for _ in 0..10_000 {
            let mut moved = false;
            for i in 0..self.nodes.len() {
                while let Some(out) = self.nodes[i].engine.poll_output() {
                    moved = true;
                    match out {
                        Output::Send(o) => self.deliver(i, o),
                        Output::Splice(s) => {
                            self.nodes[i].splices.push(s);
                            self.nodes[i].dataplane.push(Output::Splice(s));
                        }
                        Output::Unsplice(u) => {
                            self.nodes[i].unsplices.push(u);
                            self.nodes[i].dataplane.push(Output::Unsplice(u));
                        }
                        Output::Event(e) => self.nodes[i].events.push(e),
                    }
                }
            }
            if !moved {
                return;
            }
        }
        panic!("messages never settle");
    }

    fn deliver(&mut self, from: usize, o: Outgoing) {
        self.nodes[from].sent.push((o.port, o.message.clone()));
        if self.mute.contains(&from) || self.cut.contains(&(from, o.port.0)) {
            return;
        }
        let Some(&(to, port)) = self.links.get(&(from, o.port.0)) else {
            panic!(
                "{} sent on unlinked port {:?}",
                self.nodes[from].name, o.port
            );
        };
        // The frame goes to the next hop's MAC: it must be the peer's address on the link.
        let peer_addr = self.nodes[to].engine_address(port);
        assert_eq!(
            o.next_hop, peer_addr,
            "{} → {}: next hop",
            self.nodes[from].name, self.nodes[to].name
        );
        assert_eq!(o.src, self.nodes[from].engine_address(o.port.0));
        let bytes = o.message.to_repr(o.ttl).to_bytes().unwrap();
        let repr = Repr::parse(&Packet::new_checked(&bytes[..]).unwrap()).unwrap();
        assert_eq!(repr.msg_type.router_alert(), o.router_alert);
        let message = Message::from_repr(&repr).unwrap();
        let rx = Received {
            port: PortId(port),
            src: o.src,
            ttl: o.ttl,
        };
        let node = &mut self.nodes[to];
        node.engine
            .handle_message(self.now, rx, message, &node.routes, &mut node.res);
    }

    /// Runs timers and messages until `until`.
    fn run_until(&mut self, until: Instant) {
        loop {
            self.settle();
            let next = self
                .nodes
                .iter()
                .filter_map(|n| n.engine.poll_timeout())
                .min();
            match next {
                Some(t) if t <= until => {
                    self.now = self.now.max(t);
                    for n in &mut self.nodes {
                        n.engine.handle_timeout(self.now, &mut n.res);
                    }
                }
                _ => {
                    self.now = until;
                    self.settle();
                    return;
                }
            }
        }
    }

    fn run_for(&mut self, d: Duration) {
        self.run_until(self.now + d);
    }
}

impl NodeSim {
    fn engine_address(&self, port: u16) -> Ipv4Addr {
        self.engine.config_address(PortId(port))
    }
}

impl Rsvp {
    fn config_address(&self, port: PortId) -> Ipv4Addr {
        self.address_of(port)
    }
}

fn tspec(rate: f32) -> TokenBucket {
    TokenBucket {
        rate: F32Bits::from_f32(rate),
        size: F32Bits::from_f32(3000.0),
        peak: F32Bits::from_f32(f32::INFINITY),
        min_policed_unit: 64,
        max_packet_size: 1500,
    }
}

fn adspec() -> Adspec {
    Adspec::sender_initial(1500)
}

fn guaranteed(rate: f32) -> Flowspec {
    Flowspec::Guaranteed {
        tspec: tspec(rate),
        rspec: Rspec {
            rate: F32Bits::from_f32(rate),
            slack: 0,
        },
    }
}

const SESSION: Session = Session {
    dst_addr: Ipv4Addr::new(198, 18, 2, 2),
    protocol_id: 17,
    flags: 0,
    dst_port: 5000,
};

fn sender(host: &str, port: u16) -> FilterSpec {
    FilterSpec {
        src_addr: ip(host),
        src_port: port,
    }
}

/// a — r1 — r2 — b, and c next to a on r1's first subnet (a second sender):
///
/// ```text
/// a 198.18.1.2 ─┐                                      ┌─ b 198.18.2.2
///               ├ r1 198.18.1.1 | 198.18.12.1 ── 198.18.12.2 r2 198.18.2.1 ┘
/// c 198.18.1.3 ─┘   (a and c reach r1's p0 and p2)
/// ```
fn chain() -> Net {
    let mut net = Net {
        nodes: Vec::new(),
        links: HashMap::new(),
        now: Instant::ZERO,
        mute: Vec::new(),
        cut: Vec::new(),
    };
    let a = net.node("a", Role::Host, &["198.18.1.2"]);
    let c = net.node("c", Role::Host, &["198.18.3.2"]);
    let r1 = net.node(
        "r1",
        Role::Router,
        &["198.18.1.1", "198.18.12.1", "198.18.3.1"],
    );
    let r2 = net.node("r2", Role::Router, &["198.18.12.2", "198.18.2.1"]);
    let b = net.node("b", Role::Host, &["198.18.2.2"]);
    net.link(a, 0, r1, 0);
    net.link(c, 0, r1, 2);
    net.link(r1, 1, r2, 0);
    net.link(r2, 1, b, 0);
    net.nodes[a].routes.add("0.0.0.0", 0, 0, Some("198.18.1.1"));
    net.nodes[c].routes.add("0.0.0.0", 0, 0, Some("198.18.3.1"));
    net.nodes[b].routes.add("0.0.0.0", 0, 0, Some("198.18.2.1"));
    let r = &mut net.nodes[r1].routes;
    r.add("198.18.1.0", 24, 0, None);
    r.add("198.18.3.0", 24, 2, None);
    r.add("198.18.12.0", 24, 1, None);
    r.add("198.18.2.0", 24, 1, Some("198.18.12.2"));
    let r = &mut net.nodes[r2].routes;
    r.add("198.18.12.0", 24, 0, None);
    r.add("198.18.2.0", 24, 1, None);
    r.add("198.18.1.0", 24, 0, Some("198.18.12.1"));
    r.add("198.18.3.0", 24, 0, Some("198.18.12.1"));
    net
}

fn open(net: &mut Net, host: &str, from: &str, rate: f32) {
    let h = net.by_name(host);
    let node = &mut net.nodes[h];
    let now = net.now;
    node.engine.open_sender(
        now,
        SESSION,
        SenderDescriptor {
            sender_template: sender(from, 5001),
            sender_tspec: tspec(rate),
            adspec: Some(adspec()),
        },
        &node.routes,
        &mut node.res,
    );
}

fn reserve(net: &mut Net, descriptors: FlowDescriptors) {
    let b = net.by_name("b");
    let now = net.now;
    let node = &mut net.nodes[b];
    node.engine
        .reserve(now, SESSION, descriptors, true, &mut node.res);
}

fn ff(from: &str, rate: f32) -> FlowDescriptors {
    FlowDescriptors::FixedFilter(vec![(guaranteed(rate), sender(from, 5001))])
}

/// a's 1 Mbit/s sender reserved by b (FF, Guaranteed at 125,000 B/s).
fn reserved_chain() -> Net {
    let mut net = chain();
    open(&mut net, "a", "198.18.1.2", 125_000.0);
    net.settle();
    reserve(&mut net, ff("198.18.1.2", 125_000.0));
    net.settle();
    net
}

#[test]
fn a_reservation_splices_a_labelled_path_from_the_first_to_the_last_router() {
    let net = reserved_chain();
    let (a, r1, r2, b) = (
        net.by_name("a"),
        net.by_name("r1"),
        net.by_name("r2"),
        net.by_name("b"),
    );
    // b learnt the path with the ADSPEC of two router hops (the hosts add no terms).
    let Some(Event::PathArrived { sender: s, .. }) = net.nodes[b].events.first() else {
        panic!("b: {:?}", net.nodes[b].events)
    };
    let ad = s.adspec.unwrap();
    assert_eq!(ad.general.hop_count, 2);
    assert_eq!(ad.general.min_latency, 20);
    let terms = ad.guaranteed.unwrap().terms.unwrap();
    assert_eq!(
        (terms.c_tot, terms.d_tot, terms.c_sum, terms.d_sum),
        (3000, 200, 3000, 200)
    );
    // r1: a's unlabelled IP (5-tuple) onto the label r1 chose on its link to r2.
    assert_eq!(net.nodes[r1].splices.len(), 1);
    let s1 = net.nodes[r1].splices[0];
    assert_eq!((s1.in_port, s1.in_label), (Some(PortId(0)), None));
    assert_eq!(s1.out_port, PortId(1));
    assert_eq!(s1.next_hop, ip("198.18.12.2"));
    let label = s1.out_label.expect("a label towards r2");
    assert!(label >= FIRST_LABEL);
    // r2: that label in, plain IP out to b.
    let s2 = net.nodes[r2].splices[0];
    assert_eq!((s2.in_port, s2.in_label), (Some(PortId(0)), Some(label)));
    assert_eq!(
        (s2.out_port, s2.out_label, s2.next_hop),
        (PortId(1), None, ip("198.18.2.2"))
    );
    // Both routers booked the rate on their output port; a was told, b got the ResvConf.
    assert_eq!(net.nodes[r1].res.used(1), 125_000.0);
    assert_eq!(net.nodes[r2].res.used(1), 125_000.0);
    assert!(net.nodes[a]
        .events
        .iter()
        .any(|e| matches!(e, Event::Reserved { .. })));
    assert!(net.nodes[b]
        .events
        .iter()
        .any(|e| matches!(e, Event::Confirmed { node, .. } if *node == ip("198.18.1.2"))));
    assert_eq!(net.nodes[r1].engine.labels_in_use(PortId(1)), 1);
    assert_eq!(
        net.nodes[r2].engine.labels_in_use(PortId(1)),
        0,
        "no label towards a host"
    );
}

#[test]
fn refreshes_keep_the_state_and_without_them_it_expires_within_its_lifetime() {
    let mut net = reserved_chain();
    let (a, r1, r2, b) = (
        net.by_name("a"),
        net.by_name("r1"),
        net.by_name("r2"),
        net.by_name("b"),
    );
    net.run_for(10 * R);
    for r in [r1, r2] {
        let st = net.nodes[r].engine.stats();
        assert_eq!((st.paths, st.resvs), (1, 1), "{}", net.nodes[r].name);
        assert_eq!(
            net.nodes[r].splices.len(),
            1,
            "a refresh does not splice again"
        );
        assert!(net.nodes[r].unsplices.is_empty());
    }
    // Refreshes went out about every R (U(0.5, 1.5) R): a sent 10 ± 4 Paths in 10 R.
    let paths = net.nodes[a]
        .sent
        .iter()
        .filter(|(_, m)| matches!(m, Message::Path(_)))
        .count();
    assert!((7..=21).contains(&paths), "a sent {paths} Paths in 10 R");

    // The sender dies silently: r1's path state lives L = (3 + 0.5) × 1.5 × R after the
    // last refresh, which came at most 1.5 R before.
    net.mute.push(a);
    let died = net.now;
    let lifetime = R.mul_f64(5.25);
    net.run_for(lifetime - R.mul_f64(1.5) - Duration::from_millis(1));
    assert_eq!(net.nodes[r1].engine.stats().paths, 1, "expired too early");
    net.run_until(died + lifetime + Duration::from_millis(1));
    for r in [r1, r2] {
        let st = net.nodes[r].engine.stats();
        assert_eq!((st.paths, st.resvs), (0, 0), "{}", net.nodes[r].name);
        assert_eq!(net.nodes[r].res.used(1), 0.0);
        assert_eq!(net.nodes[r].unsplices.len(), 1);
    }
    assert_eq!(net.nodes[r1].engine.stats().path_timeouts, 1);
    assert_eq!(net.nodes[r1].engine.labels_in_use(PortId(1)), 0);
    // r1's timeout sent a PathTear on: b was told at once, not after its own timeout.
    assert!(net.nodes[b]
        .events
        .iter()
        .any(|e| matches!(e, Event::PathGone { .. })));
    assert_eq!(net.nodes[r2].engine.stats().path_timeouts, 0);
}

#[test]
fn a_path_tear_unsplices_frees_the_label_and_releases_every_hop() {
    let mut net = reserved_chain();
    let (a, r1, r2) = (net.by_name("a"), net.by_name("r1"), net.by_name("r2"));
    let node = &mut net.nodes[a];
    node.engine
        .close_sender(SESSION, sender("198.18.1.2", 5001), &mut node.res);
    net.settle();
    for r in [r1, r2] {
        let st = net.nodes[r].engine.stats();
        assert_eq!((st.paths, st.resvs), (0, 0));
        assert_eq!(net.nodes[r].res.used(1), 0.0);
        let u = net.nodes[r].unsplices[0];
        assert_eq!(u.in_label, net.nodes[r].splices[0].in_label);
    }
    assert_eq!(net.nodes[r1].engine.labels_in_use(PortId(1)), 0);
    // Nothing is left to refresh.
    net.run_for(10 * R);
    assert_eq!(
        net.nodes[r1].engine.stats().sent,
        net.nodes[r1].sent.len() as u64
    );
    assert!(net.nodes[r1].engine.poll_timeout().is_none());
}

#[test]
fn a_resv_tear_unsplices_and_tells_the_sender_but_keeps_the_path() {
    let mut net = reserved_chain();
    let (a, r1, r2, b) = (
        net.by_name("a"),
        net.by_name("r1"),
        net.by_name("r2"),
        net.by_name("b"),
    );
    let node = &mut net.nodes[b];
    node.engine.release(SESSION, &mut node.res);
    net.settle();
    for r in [r1, r2] {
        let st = net.nodes[r].engine.stats();
        assert_eq!((st.paths, st.resvs), (1, 0));
        assert_eq!(net.nodes[r].unsplices.len(), 1);
        assert_eq!(net.nodes[r].res.used(1), 0.0);
    }
    assert!(net.nodes[a]
        .events
        .iter()
        .any(|e| matches!(e, Event::ReservationGone { .. })));
    // The label stays with the path: a new Resv splices it again.
    reserve(&mut net, ff("198.18.1.2", 125_000.0));
    net.settle();
    assert_eq!(net.nodes[r2].splices.len(), 2);
    assert_eq!(
        net.nodes[r2].splices[1].in_label,
        net.nodes[r2].splices[0].in_label
    );
}

#[test]
fn a_refusal_at_the_second_router_reaches_the_receiver_and_books_nothing_upstream() {
    let mut net = chain();
    let (r1, r2, b) = (net.by_name("r1"), net.by_name("r2"), net.by_name("b"));
    net.nodes[r2].res.capacity.insert(1, 100_000.0);
    open(&mut net, "a", "198.18.1.2", 125_000.0);
    net.settle();
    reserve(&mut net, ff("198.18.1.2", 125_000.0));
    net.settle();
    let err = net.nodes[b]
        .events
        .iter()
        .find_map(|e| match e {
            Event::ResvError { error, .. } => Some(*error),
            _ => None,
        })
        .expect("b is told");
    assert_eq!(err.code, ErrorCode::AdmissionControlFailure);
    assert_eq!(err.node, ip("198.18.2.1"), "r2 refused");
    assert!(net.nodes[r1].splices.is_empty() && net.nodes[r2].splices.is_empty());
    assert_eq!(net.nodes[r1].res.used(1), 0.0);
    assert_eq!(net.nodes[r2].engine.stats().admission_refused, 1);
    // A smaller request fits.
    reserve(&mut net, ff("198.18.1.2", 50_000.0));
    net.settle();
    assert_eq!(net.nodes[r2].res.used(1), 50_000.0);
    assert_eq!(net.nodes[r1].splices.len(), 1);
}

#[test]
fn shared_explicit_books_once_and_keeps_each_sender_on_its_own_label() {
    let mut net = chain();
    let (r1, r2) = (net.by_name("r1"), net.by_name("r2"));
    open(&mut net, "a", "198.18.1.2", 125_000.0);
    open(&mut net, "c", "198.18.3.2", 125_000.0);
    net.settle();
    reserve(
        &mut net,
        FlowDescriptors::SharedExplicit(
            guaranteed(125_000.0),
            vec![sender("198.18.1.2", 5001), sender("198.18.3.2", 5001)],
        ),
    );
    net.settle();
    for r in [r1, r2] {
        assert_eq!(net.nodes[r].res.used(1), 125_000.0, "one booking for both");
        assert_eq!(net.nodes[r].splices.len(), 2);
        let s = &net.nodes[r].splices;
        assert_eq!(s[0].resv, s[1].resv);
    }
    let labels: Vec<_> = net.nodes[r2].splices.iter().map(|s| s.in_label).collect();
    assert_ne!(
        labels[0], labels[1],
        "distinct labels per sender (QSR §4.2)"
    );
    // One sender leaves: the other stays spliced, the booking stays.
    let c = net.by_name("c");
    let node = &mut net.nodes[c];
    node.engine
        .close_sender(SESSION, sender("198.18.3.2", 5001), &mut node.res);
    net.settle();
    assert_eq!(net.nodes[r2].unsplices.len(), 1);
    assert_eq!(net.nodes[r2].engine.stats().resvs, 1);
    assert_eq!(net.nodes[r2].res.used(1), 125_000.0);
}

#[test]
fn wildcard_filter_is_refused_by_name() {
    let mut net = chain();
    open(&mut net, "a", "198.18.1.2", 125_000.0);
    net.settle();
    reserve(
        &mut net,
        FlowDescriptors::WildcardFilter(guaranteed(1000.0)),
    );
    net.settle();
    let b = net.by_name("b");
    assert!(net.nodes[b].events.iter().any(
        |e| matches!(e, Event::ResvError { error, .. } if error.code == ErrorCode::UnknownStyle)
    ));
}

#[test]
fn only_the_owning_hop_tears_down_or_changes_state() {
    let mut net = reserved_chain();
    let r2 = net.by_name("r2");
    let now = net.now;
    // A forged PathTear on r2's link to b, claiming to be r1.
    let tear = Message::PathTear(rtlan_wire::rsvp::PathTear {
        session: SESSION,
        hop: RsvpHop {
            address: ip("198.18.12.1"),
            lih: 0,
        },
        sender: None,
    });
    let rx = Received {
        port: PortId(1),
        src: ip("198.18.2.2"),
        ttl: 64,
    };
    let node = &mut net.nodes[r2];
    node.engine
        .handle_message(now, rx, tear, &node.routes, &mut node.res);
    // A forged ResvTear from r1's side, claiming to be b.
    let resv_tear = Message::ResvTear(rtlan_wire::rsvp::ResvTear {
        session: SESSION,
        hop: RsvpHop {
            address: ip("198.18.2.2"),
            lih: 0,
        },
        descriptors: ff("198.18.1.2", 125_000.0),
    });
    let rx = Received {
        port: PortId(0),
        src: ip("198.18.12.1"),
        ttl: 64,
    };
    node.engine
        .handle_message(now, rx, resv_tear, &node.routes, &mut node.res);
    net.settle();
    let st = net.nodes[r2].engine.stats();
    assert_eq!((st.paths, st.resvs, st.ignored), (1, 1, 2));
    assert!(net.nodes[r2].unsplices.is_empty());
}

#[test]
fn a_label_already_in_use_on_the_port_is_refused_with_a_path_err() {
    let mut net = reserved_chain();
    let r2 = net.by_name("r2");
    let used = net.nodes[r2].splices[0].in_label.unwrap();
    let now = net.now;
    let path = Message::Path(Path {
        session: SESSION,
        hop: RsvpHop::with_label(ip("198.18.12.1"), used),
        time_values: TimeValues {
            refresh_period_ms: 30_000,
        },
        sender: SenderDescriptor {
            sender_template: sender("198.18.1.9", 9),
            sender_tspec: tspec(1000.0),
            adspec: None,
        },
    });
    let rx = Received {
        port: PortId(0),
        src: ip("198.18.12.1"),
        ttl: 63,
    };
    let node = &mut net.nodes[r2];
    node.engine
        .handle_message(now, rx, path, &node.routes, &mut node.res);
    let out: Vec<Output> = std::iter::from_fn(|| node.engine.poll_output()).collect();
    assert_eq!(node.engine.stats().label_conflicts, 1);
    assert_eq!(node.engine.stats().paths, 1);
    let Some(Output::Send(o)) = out.first() else {
        panic!("{out:?}")
    };
    let Message::PathErr(err) = &o.message else {
        panic!("{o:?}")
    };
    assert_eq!(err.error.code, ErrorCode::TrafficControlError);
    assert_eq!(o.dst, ip("198.18.12.1"));
}

#[test]
fn a_path_with_ttl_one_or_no_route_goes_no_further() {
    let mut net = chain();
    let r1 = net.by_name("r1");
    let now = net.now;
    let mk = |dst: &str| {
        Message::Path(Path {
            session: Session {
                dst_addr: ip(dst),
                ..SESSION
            },
            hop: RsvpHop {
                address: ip("198.18.1.2"),
                lih: 0,
            },
            time_values: TimeValues {
                refresh_period_ms: 30_000,
            },
            sender: SenderDescriptor {
                sender_template: sender("198.18.1.2", 1),
                sender_tspec: tspec(1000.0),
                adspec: None,
            },
        })
    };
    let node = &mut net.nodes[r1];
    for (dst, ttl) in [("198.18.2.2", 1), ("203.0.113.1", 64), ("198.18.1.7", 64)] {
        let rx = Received {
            port: PortId(0),
            src: ip("198.18.1.2"),
            ttl,
        };
        node.engine
            .handle_message(now, rx, mk(dst), &node.routes, &mut node.res);
    }
    assert!(node.engine.poll_output().is_none());
    assert_eq!(node.engine.stats().path_dropped, 3);
    assert_eq!(node.engine.stats().paths, 0);
}

/// a — r1 — {r2 | r3} — r4 — b: r1 routes b's subnet via r2, then via r3.
fn diamond() -> Net {
    let mut net = Net {
        nodes: Vec::new(),
        links: HashMap::new(),
        now: Instant::ZERO,
        mute: Vec::new(),
        cut: Vec::new(),
    };
    let a = net.node("a", Role::Host, &["198.18.1.2"]);
    let r1 = net.node(
        "r1",
        Role::Router,
        &["198.18.1.1", "198.18.12.1", "198.18.13.1"],
    );
    let r2 = net.node("r2", Role::Router, &["198.18.12.2", "198.18.24.2"]);
    let r3 = net.node("r3", Role::Router, &["198.18.13.3", "198.18.34.3"]);
    let r4 = net.node(
        "r4",
        Role::Router,
        &["198.18.24.4", "198.18.34.4", "198.18.2.1"],
    );
    let b = net.node("b", Role::Host, &["198.18.2.2"]);
    net.link(a, 0, r1, 0);
    net.link(r1, 1, r2, 0);
    net.link(r1, 2, r3, 0);
    net.link(r2, 1, r4, 0);
    net.link(r3, 1, r4, 1);
    net.link(r4, 2, b, 0);
    net.nodes[a].routes.add("0.0.0.0", 0, 0, Some("198.18.1.1"));
    net.nodes[b].routes.add("0.0.0.0", 0, 0, Some("198.18.2.1"));
    let t = &mut net.nodes[r1].routes;
    t.add("198.18.1.0", 24, 0, None);
    t.add("198.18.2.0", 24, 1, Some("198.18.12.2"));
    let t = &mut net.nodes[r2].routes;
    t.add("198.18.2.0", 24, 1, Some("198.18.24.4"));
    t.add("198.18.1.0", 24, 0, Some("198.18.12.1"));
    let t = &mut net.nodes[r3].routes;
    t.add("198.18.2.0", 24, 1, Some("198.18.34.4"));
    t.add("198.18.1.0", 24, 0, Some("198.18.13.1"));
    let t = &mut net.nodes[r4].routes;
    t.add("198.18.2.0", 24, 2, None);
    t.add("198.18.1.0", 24, 0, Some("198.18.24.2"));
    net
}

#[test]
fn a_route_change_takes_the_switched_path_down_and_rebuilds_it_on_the_new_route() {
    let mut net = diamond();
    let (a, r1, r2, r3, r4, b) = (0, 1, 2, 3, 4, 5);
    open(&mut net, "a", "198.18.1.2", 125_000.0);
    net.settle();
    reserve(&mut net, ff("198.18.1.2", 125_000.0));
    net.settle();
    assert_eq!(net.nodes[r2].splices.len(), 1);
    assert!(net.nodes[r3].splices.is_empty());
    let old_label = net.nodes[r1].splices[0].out_label;

    // r1's route to b's subnet moves to r3 (as OSPF would after a failure).
    let t = &mut net.nodes[r1].routes;
    t.0.retain(|(n, _, _)| *n != ip("198.18.2.0"));
    t.add("198.18.2.0", 24, 2, Some("198.18.13.3"));
    let now = net.now;
    let node = &mut net.nodes[r1];
    node.engine.route_changed(now, &node.routes, &mut node.res);
    net.settle();

    // r1 unspliced at once, released its old port and now splices onto r3's link.
    assert_eq!(net.nodes[r1].unsplices.len(), 1);
    assert_eq!(net.nodes[r1].res.used(1), 0.0);
    assert_eq!(net.nodes[r1].res.used(2), 125_000.0);
    let new = net.nodes[r1].splices.last().unwrap();
    assert_eq!(new.out_port, PortId(2));
    assert_eq!(net.nodes[r1].engine.labels_in_use(PortId(1)), 0);
    let _ = old_label;
    // The old branch is gone at once (PathTear), the new one reserved.
    assert_eq!(net.nodes[r2].engine.stats().paths, 0);
    assert_eq!(net.nodes[r2].res.used(1), 0.0);
    assert_eq!(net.nodes[r3].splices.len(), 1);
    assert_eq!(net.nodes[r3].res.used(1), 125_000.0);
    // r4 now takes the path from r3, with r3's label, and still delivers to b.
    let s4 = net.nodes[r4].splices.last().unwrap();
    assert_eq!((s4.in_port, s4.out_port), (Some(PortId(1)), PortId(2)));
    assert_eq!(s4.in_label, net.nodes[r3].splices[0].out_label);
    assert_eq!(net.nodes[r4].res.used(2), 125_000.0);
    assert_eq!(net.nodes[r4].engine.stats().resvs, 1);
    // For a, the reservation never went away: no ReservationGone, still one reservation.
    assert!(!net.nodes[a]
        .events
        .iter()
        .any(|e| matches!(e, Event::ReservationGone { .. })));
    assert_eq!(net.nodes[a].engine.stats().resvs, 1);
    let _ = b;
    // And it holds: refreshes along the new route for a while.
    net.run_for(5 * R);
    assert_eq!(net.nodes[r2].engine.stats().paths, 0);
    assert_eq!(net.nodes[r3].engine.stats().resvs, 1);
    assert_eq!(net.nodes[r4].engine.stats().paths, 1);
}

/// A failure seen before routing converges: r1 loses its route to b's subnet for a moment,
/// then gets one via r3. The path is held without a route (local repair, RFC 2205 §3.6) and
/// goes on along the new route at once, and b's reservation follows it back — without waiting
/// for a's next refresh, and without a's reservation ever going.
#[test]
fn a_path_that_loses_its_route_for_a_moment_is_held_and_sent_on_with_the_next_route() {
    let mut net = diamond();
    let (a, r1, r3, r4) = (0, 1, 3, 4);
    open(&mut net, "a", "198.18.1.2", 125_000.0);
    net.settle();
    reserve(&mut net, ff("198.18.1.2", 125_000.0));
    net.settle();
    assert_eq!(net.nodes[r1].res.used(1), 125_000.0);

    net.nodes[r1]
        .routes
        .0
        .retain(|(n, _, _)| *n != ip("198.18.2.0"));
    let now = net.now;
    let node = &mut net.nodes[r1];
    node.engine.route_changed(now, &node.routes, &mut node.res);
    net.settle();
    assert_eq!(
        net.nodes[r1].engine.stats().paths,
        1,
        "held without a route"
    );
    assert_eq!(net.nodes[r1].engine.stats().path_unrouted, 1);
    assert_eq!(
        net.nodes[r1].res.used(1),
        0.0,
        "its booking released at once"
    );
    assert_eq!(net.nodes[r1].engine.labels_in_use(PortId(1)), 0);

    // Routing converges a moment later (much less than a refresh period).
    net.run_for(R / 10);
    net.nodes[r1]
        .routes
        .add("198.18.2.0", 24, 2, Some("198.18.13.3"));
    let now = net.now;
    let node = &mut net.nodes[r1];
    node.engine.route_changed(now, &node.routes, &mut node.res);
    net.settle();
    assert_eq!(
        net.nodes[r1].res.used(2),
        125_000.0,
        "reserved on the new route"
    );
    assert_eq!(net.nodes[r3].res.used(1), 125_000.0);
    assert_eq!(net.nodes[r4].engine.stats().resvs, 1);
    assert!(!net.nodes[a]
        .events
        .iter()
        .any(|e| matches!(e, Event::ReservationGone { .. })));
    assert!(!net.nodes[r4]
        .events
        .iter()
        .any(|e| matches!(e, Event::PathGone { .. })));
}

/// A path held without a route still expires when its sender stops refreshing it.
#[test]
fn a_held_path_expires_when_its_sender_is_gone() {
    let mut net = diamond();
    let (a, r1) = (0, 1);
    open(&mut net, "a", "198.18.1.2", 125_000.0);
    net.settle();
    net.nodes[r1]
        .routes
        .0
        .retain(|(n, _, _)| *n != ip("198.18.2.0"));
    let now = net.now;
    let node = &mut net.nodes[r1];
    node.engine.route_changed(now, &node.routes, &mut node.res);
    net.settle();
    assert_eq!(net.nodes[r1].engine.stats().paths, 1);
    // a goes silent: its Path refreshes stop reaching r1, whose state lives L = 5.25 R.
    net.mute.push(a);
    net.run_for(6 * R);
    assert_eq!(net.nodes[r1].engine.stats().paths, 0);
    assert_eq!(net.nodes[r1].engine.stats().path_timeouts, 1);
}

#[test]
fn a_local_receiver_reservation_outlives_a_lost_path_and_comes_back_with_it() {
    let mut net = reserved_chain();
    let (a, r2, b) = (net.by_name("a"), net.by_name("r2"), net.by_name("b"));
    let node = &mut net.nodes[a];
    node.engine
        .close_sender(SESSION, sender("198.18.1.2", 5001), &mut node.res);
    net.settle();
    assert_eq!(net.nodes[r2].engine.stats().resvs, 0);
    assert_eq!(net.nodes[b].engine.stats().resvs, 1, "b still asks");
    open(&mut net, "a", "198.18.1.2", 125_000.0);
    net.settle();
    // No new request from b's application: its standing reservation covers the new path.
    assert_eq!(net.nodes[r2].engine.stats().resvs, 1);
    assert_eq!(net.nodes[r2].res.used(1), 125_000.0);
}

#[test]
fn state_is_bounded() {
    let mut net = chain();
    let r1 = net.by_name("r1");
    net.nodes[r1].engine.config_max_paths(2);
    for port in 1..=3 {
        let a = net.by_name("a");
        let node = &mut net.nodes[a];
        let now = net.now;
        node.engine.open_sender(
            now,
            SESSION,
            SenderDescriptor {
                sender_template: sender("198.18.1.2", port),
                sender_tspec: tspec(1000.0),
                adspec: None,
            },
            &node.routes,
            &mut node.res,
        );
        net.settle();
    }
    assert_eq!(net.nodes[r1].engine.stats().paths, 2);
    assert_eq!(net.nodes[r1].engine.stats().state_full, 1);
    let a = net.by_name("a");
    assert!(net.nodes[a].events.iter().any(
        |e| matches!(e, Event::PathError { error, .. } if error.code == ErrorCode::RsvpSystemError)
    ));
}

impl Rsvp {
    fn config_max_paths(&mut self, n: usize) {
        self.set_max_paths(n);
    }
}

/// What a random run does.
#[derive(Debug, Clone)]
enum Op {
    /// Sender `a` or `c` (0, 1) opens with source port `port`.
    Open(usize, u16),
    /// It closes.
    Close(usize, u16),
    /// b reserves FF for these (host, port) senders at `rate` bytes/s each.
    ReserveFf(Vec<(usize, u16)>, u32),
    /// b reserves SE for these senders.
    ReserveSe(Vec<(usize, u16)>, u32),
    /// b releases.
    Release,
    /// Time passes.
    Wait(u32),
    /// The link r1–r2 loses everything for a while, then heals.
    Outage(u32),
}

fn op() -> impl proptest::strategy::Strategy<Value = Op> {
    use proptest::prelude::*;
    let who = || (0usize..2, 1u16..3);
    prop_oneof![
        4 => who().prop_map(|(h, p)| Op::Open(h, p)),
        1 => who().prop_map(|(h, p)| Op::Close(h, p)),
        3 => (proptest::collection::vec(who(), 1..3), 1000u32..200_000)
            .prop_map(|(s, r)| Op::ReserveFf(s, r)),
        3 => (proptest::collection::vec(who(), 1..3), 1000u32..200_000)
            .prop_map(|(s, r)| Op::ReserveSe(s, r)),
        1 => Just(Op::Release),
        2 => (1u32..120).prop_map(Op::Wait),
        1 => (1u32..400).prop_map(Op::Outage),
    ]
}

/// The splices a router has in force, replayed in order: a splice installs or replaces the
/// (reservation, sender) entry, an unsplice removes it.
fn active(node: &NodeSim) -> HashMap<(ResvId, FilterSpec), Splice> {
    let mut on = HashMap::new();
    for o in &node.dataplane {
        match o {
            Output::Splice(s) => {
                on.insert((s.resv, s.sender), *s);
            }
            Output::Unsplice(u) => {
                let gone = on.remove(&(u.resv, u.sender));
                // An unsplice names what it undoes: the entry and its input label.
                let gone = gone.expect("an unsplice undoes a splice in force");
                assert_eq!((gone.in_port, gone.in_label), (u.in_port, u.in_label));
            }
            _ => {}
        }
    }
    on
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// Whatever happens — senders come and go, reservations change style and size, links lose
    /// messages for minutes — every router books exactly the reservations it has spliced, its
    /// labels are those of its live paths, and once everyone has left and the lifetimes have
    /// passed nothing is left anywhere.
    #[test]
    fn bookings_splices_and_labels_never_leak(ops in proptest::collection::vec(op(), 1..25)) {
        let mut net = chain();
        let hosts = ["a", "c"];
        let addrs = ["198.18.1.2", "198.18.3.2"];
        let (r1, r2) = (net.by_name("r1"), net.by_name("r2"));
        for op in &ops {
            match op {
                Op::Open(h, port) => {
                    let n = net.by_name(hosts[*h]);
                    let now = net.now;
                    let node = &mut net.nodes[n];
                    node.engine.open_sender(now, SESSION, SenderDescriptor {
                        sender_template: sender(addrs[*h], *port),
                        sender_tspec: tspec(1000.0),
                        adspec: Some(adspec()),
                    }, &node.routes, &mut node.res);
                }
                Op::Close(h, port) => {
                    let n = net.by_name(hosts[*h]);
                    let node = &mut net.nodes[n];
                    node.engine.close_sender(SESSION, sender(addrs[*h], *port), &mut node.res);
                }
                Op::ReserveFf(senders, rate) => {
                    let pairs = senders.iter().map(|(h, p)| (guaranteed(*rate as f32), sender(addrs[*h], *p))).collect();
                    reserve(&mut net, FlowDescriptors::FixedFilter(pairs));
                }
                Op::ReserveSe(senders, rate) => {
                    let list = senders.iter().map(|(h, p)| sender(addrs[*h], *p)).collect();
                    reserve(&mut net, FlowDescriptors::SharedExplicit(guaranteed(*rate as f32), list));
                }
                Op::Release => {
                    let b = net.by_name("b");
                    let node = &mut net.nodes[b];
                    node.engine.release(SESSION, &mut node.res);
                }
                Op::Wait(s) => net.run_for(Duration::from_secs(u64::from(*s))),
                Op::Outage(s) => {
                    net.cut = vec![(r1, 1), (r2, 0)];
                    net.run_for(Duration::from_secs(u64::from(*s)));
                    net.cut.clear();
                }
            }
            net.settle();
            for r in [r1, r2] {
                let node = &net.nodes[r];
                let spliced: std::collections::BTreeSet<ResvId> =
                    active(node).keys().map(|(id, _)| *id).collect();
                let booked: std::collections::BTreeSet<ResvId> = node.res.booked.keys().copied().collect();
                proptest::prop_assert_eq!(&spliced, &booked, "{}: spliced vs booked", node.name);
                proptest::prop_assert_eq!(node.engine.stats().resvs as usize, booked.len());
                // No two splices in force take the same input label on the same port.
                let mut inputs = std::collections::HashSet::new();
                for s in active(node).values() {
                    if let Some(l) = s.in_label {
                        proptest::prop_assert!(inputs.insert((s.in_port, l)), "{}: label {} twice", node.name, l);
                    }
                }
                // r1 labels its link to r2: one label per live path.
                if r == r1 {
                    proptest::prop_assert_eq!(node.engine.labels_in_use(PortId(1)) as u64, node.engine.stats().paths);
                }
            }
        }
        // Everyone leaves; lifetimes pass.
        for (h, host) in hosts.iter().enumerate() {
            let n = net.by_name(host);
            for port in 1..3 {
                let node = &mut net.nodes[n];
                node.engine.close_sender(SESSION, sender(addrs[h], port), &mut node.res);
            }
        }
        let b = net.by_name("b");
        let node = &mut net.nodes[b];
        node.engine.release(SESSION, &mut node.res);
        net.run_for(6 * R);
        for r in [r1, r2] {
            let node = &net.nodes[r];
            let st = node.engine.stats();
            proptest::prop_assert_eq!((st.paths, st.resvs), (0, 0), "{}", node.name);
            proptest::prop_assert!(node.res.booked.is_empty());
            proptest::prop_assert!(active(node).is_empty());
            proptest::prop_assert_eq!(node.engine.labels_in_use(PortId(1)), 0);
            proptest::prop_assert!(node.engine.poll_timeout().is_none());
        }
    }
}
