//! A small deterministic multi-node harness (STYLE.md §3, after quinn-proto's `Pair`): switches
//! and hosts joined by instantaneous links, run on virtual time until a deadline. A host answers
//! ARP requests for its IP, may run an [`Rtcd`] (its `SendControl` actions become frames on the
//! host's link), and records everything else it receives.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::time::Duration;

use rtlan_wire::arp;
use rtlan_wire::control::{EpochTlv, Message, Packet, ProxyMacPlan, Repr, SetupRepr, ETHERTYPE};
use rtlan_wire::ethernet::{Address, EtherType, Frame};
use rtlan_wire::{ipv4, udp};

use super::*;
use crate::rtcd::{self, Action, ClientId, Reply, Request, Rtcd};

/// 100 Mbit/s, the default port rate of the harness.
pub(super) const RATE: u64 = 100_000_000;

/// A host on one link (its port is 0).
pub(super) struct Host {
    pub(super) mac: Address,
    pub(super) ip: Ipv4Addr,
    pub(super) rtcd: Option<Rtcd>,
    /// Frames to send at the next flush.
    outbox: Vec<Vec<u8>>,
    /// Non-control, non-ARP frames received.
    pub(super) received: Vec<Vec<u8>>,
    /// When each of `received` arrived.
    pub(super) received_at: Vec<Instant>,
    /// Control messages received (parsed), whether or not a daemon runs.
    pub(super) control: Vec<Repr>,
    /// Replies the daemon gave its client.
    pub(super) replies: Vec<Reply>,
}

/// A node of the network.
pub(super) enum Node {
    Switch(Box<Switch>),
    Host(Box<Host>),
}

/// The network: nodes, links between (node, port) pairs, and the virtual clock.
pub(super) struct Net {
    pub(super) now: Instant,
    pub(super) nodes: Vec<Node>,
    links: HashMap<(usize, u16), (usize, u16)>,
}

/// The MAC of port `port` of switch `sw`.
pub(super) fn sw_port_mac(sw: usize, port: usize) -> Address {
    Address([0x02, 0x5e, 0, sw as u8, 1, port as u8])
}

/// The management IP of switch `sw`.
pub(super) fn sw_ip(sw: usize) -> Ipv4Addr {
    Ipv4Addr::new(198, 18, 255, sw as u8 + 1)
}

/// A switch configuration for node `sw` with the given port rates, HELLO every second.
pub(super) fn rt_switch_config(sw: usize, rates: &[u64]) -> SwitchConfig {
    SwitchConfig {
        mac: Address([0x02, 0x5e, 0, sw as u8, 0, 0xfe]),
        mgmt_ip: Some(sw_ip(sw)),
        ports: rates
            .iter()
            .enumerate()
            .map(|(i, &rate)| PortConfig {
                name: format!("s{sw}p{i}"),
                mac: sw_port_mac(sw, i),
                medium: crate::node::Medium::FullDuplex { rate_bps: rate },
                security: Default::default(),
            })
            .collect(),
        unknown_unicast: UnknownUnicast::ArpProbe,
        cycle_time: Duration::from_millis(10),
        ageing_time: Duration::from_secs(300),
        nrt_queue_bytes: None,
        pending_capacity: 16,
        pending_timeout: Duration::from_millis(100),
        rt: RtConfig::default(),
        stp: None,
    }
}

impl Net {
    pub(super) fn new() -> Net {
        Net {
            now: Instant::ZERO,
            nodes: Vec::new(),
            links: HashMap::new(),
        }
    }

    /// Adds a switch with the given port rates; returns its node index.
    pub(super) fn switch(&mut self, rates: &[u64]) -> usize {
        let index = self.nodes.len();
        let switch = Switch::new(rt_switch_config(index, rates), self.now).expect("valid config");
        self.nodes.push(Node::Switch(Box::new(switch)));
        index
    }

    /// Adds a switch with the given port rates and its configuration adjusted by `adjust`.
    pub(super) fn switch_with(
        &mut self,
        rates: &[u64],
        adjust: impl FnOnce(&mut SwitchConfig),
    ) -> usize {
        let index = self.nodes.len();
        let mut config = rt_switch_config(index, rates);
        adjust(&mut config);
        let switch = Switch::new(config, self.now).expect("valid config");
        self.nodes.push(Node::Switch(Box::new(switch)));
        index
    }

    /// Adds a host, with a daemon if `daemon`; returns its node index.
    pub(super) fn host(&mut self, last_octet: u8, daemon: bool) -> usize {
        self.host_with(last_octet, daemon, |_| {})
    }

    /// As [`Net::host`], with the daemon's configuration adjusted by `adjust`.
    pub(super) fn host_with(
        &mut self,
        last_octet: u8,
        daemon: bool,
        adjust: impl FnOnce(&mut rtcd::Config),
    ) -> usize {
        let mac = Address([0x02, 0, 0, 0, 0, last_octet]);
        let ip = Ipv4Addr::new(198, 18, 0, last_octet);
        let rtcd = daemon.then(|| {
            let mut config = rtcd::Config::new(mac, ip, RATE);
            adjust(&mut config);
            let mut d = Rtcd::new(config, self.now).expect("config");
            d.handle_client_request(self.now, ClientId(1), 0, Request::Register { pid: 1 });
            while d.poll_action().is_some() {}
            d
        });
        self.nodes.push(Node::Host(Box::new(Host {
            mac,
            ip,
            rtcd,
            outbox: Vec::new(),
            received: Vec::new(),
            received_at: Vec::new(),
            control: Vec::new(),
            replies: Vec::new(),
        })));
        self.nodes.len() - 1
    }

    /// Restarts switch `index`: a fresh switch with the same configuration and boot epoch
    /// `epoch`, holding nothing.
    pub(super) fn restart_switch(&mut self, index: usize, epoch: u64) {
        let mut config = self.sw(index).config().clone();
        config.rt.epoch = epoch;
        let switch = Switch::new(config, self.now).expect("valid config");
        self.nodes[index] = Node::Switch(Box::new(switch));
    }

    /// Restarts host `host`'s daemon with boot epoch `epoch` (same configuration otherwise):
    /// it knows no connection, registers client 1 again and says HELLO.
    pub(super) fn restart_daemon(&mut self, host: usize, epoch: u64) {
        let now = self.now;
        let h = self.h_mut(host);
        let mut config = h
            .rtcd
            .as_ref()
            .expect("host runs a daemon")
            .config()
            .clone();
        config.epoch = epoch;
        let mut d = Rtcd::new(config, now).expect("config");
        d.handle_client_request(now, ClientId(1), 0, Request::Register { pid: 1 });
        h.rtcd = Some(d);
        h.drain_daemon();
    }

    /// Cuts the link at port `pa` of node `a` (both directions); nothing is told.
    pub(super) fn unlink(&mut self, a: usize, pa: u16) {
        if let Some(peer) = self.links.remove(&(a, pa)) {
            self.links.remove(&peer);
        }
    }

    /// Joins port `pa` of node `a` with port `pb` of node `b`.
    pub(super) fn link(&mut self, a: usize, pa: u16, b: usize, pb: u16) {
        self.links.insert((a, pa), (b, pb));
        self.links.insert((b, pb), (a, pa));
    }

    pub(super) fn sw(&self, index: usize) -> &Switch {
        match &self.nodes[index] {
            Node::Switch(s) => s,
            Node::Host(_) => panic!("node {index} is a host"),
        }
    }

    pub(super) fn sw_mut(&mut self, index: usize) -> &mut Switch {
        match &mut self.nodes[index] {
            Node::Switch(s) => s,
            Node::Host(_) => panic!("node {index} is a host"),
        }
    }

    pub(super) fn h(&self, index: usize) -> &Host {
        match &self.nodes[index] {
            Node::Host(h) => h,
            Node::Switch(_) => panic!("node {index} is a switch"),
        }
    }

    pub(super) fn h_mut(&mut self, index: usize) -> &mut Host {
        match &mut self.nodes[index] {
            Node::Host(h) => h,
            Node::Switch(_) => panic!("node {index} is a switch"),
        }
    }

    /// Queues `frame` for host `host` to send at the next flush.
    pub(super) fn send(&mut self, host: usize, frame: Vec<u8>) {
        self.h_mut(host).outbox.push(frame);
    }

    /// Host `host` broadcasts a gratuitous ARP request (switches snoop its IP and MAC).
    pub(super) fn announce(&mut self, host: usize) {
        let (mac, ip) = (self.h(host).mac, self.h(host).ip);
        let repr = arp::Repr {
            operation: arp::Operation::Request,
            source_hardware_addr: mac,
            source_protocol_addr: ip,
            target_hardware_addr: Address([0; 6]),
            target_protocol_addr: ip,
        };
        let mut buf = vec![0u8; 60];
        repr.emit_frame(mac, Address::BROADCAST, &mut buf)
            .expect("fits");
        self.send(host, buf);
    }

    /// Tells host `host`'s daemon that its interface lost (`up == false`) or regained its
    /// carrier, and runs its actions.
    pub(super) fn daemon_link(&mut self, host: usize, up: bool) {
        let now = self.now;
        let h = self.h_mut(host);
        h.rtcd
            .as_mut()
            .expect("host runs a daemon")
            .handle_link(now, up);
        h.drain_daemon();
    }

    /// Hands a client request to host `host`'s daemon and runs its actions.
    pub(super) fn request(&mut self, host: usize, request: Request) {
        let now = self.now;
        let h = self.h_mut(host);
        h.rtcd
            .as_mut()
            .expect("host runs a daemon")
            .handle_client_request(now, ClientId(1), 0, request);
        h.drain_daemon();
    }

    /// Runs the network until `until` (virtual time).
    pub(super) fn run_until(&mut self, until: Instant) {
        for _ in 0..1_000_000 {
            self.flush();
            let next = self.next_timeout();
            match next {
                Some(t) if t <= until => {
                    self.now = self.now.max(t);
                    self.fire_timers();
                }
                _ => {
                    self.now = self.now.max(until);
                    self.flush();
                    return;
                }
            }
        }
        panic!("network did not settle");
    }

    /// Runs for `d` more.
    pub(super) fn run_for(&mut self, d: Duration) {
        let until = self.now + d;
        self.run_until(until);
    }

    fn next_timeout(&self) -> Option<Instant> {
        self.nodes
            .iter()
            .filter_map(|node| match node {
                Node::Switch(s) => s.poll_timeout(),
                Node::Host(h) => h.rtcd.as_ref().and_then(Rtcd::poll_timeout),
            })
            .min()
    }

    fn fire_timers(&mut self) {
        let now = self.now;
        for node in &mut self.nodes {
            match node {
                Node::Switch(s) => {
                    if s.poll_timeout().is_some_and(|t| t <= now) {
                        s.handle_timeout(now);
                    }
                }
                Node::Host(h) => {
                    if let Some(d) = h.rtcd.as_mut() {
                        if d.poll_timeout().is_some_and(|t| t <= now) {
                            d.handle_timeout(now);
                        }
                    }
                    h.drain_daemon();
                }
            }
        }
    }

    /// Moves every frame that can go at `now` across its link, until nothing moves.
    fn flush(&mut self) {
        let now = self.now;
        let mut buf = [0u8; MAX_FRAME_LEN];
        loop {
            let mut moving: Vec<((usize, u16), Vec<u8>)> = Vec::new();
            for (index, node) in self.nodes.iter_mut().enumerate() {
                match node {
                    Node::Switch(s) => {
                        for port in 0..s.port_count() {
                            let port = PortId(port as u16);
                            while let Some(len) = s.poll_transmit(now, port, &mut buf) {
                                moving.push(((index, port.0), buf[..len].to_vec()));
                            }
                        }
                    }
                    Node::Host(h) => {
                        moving.extend(h.outbox.drain(..).map(|f| ((index, 0), f)));
                    }
                }
            }
            if moving.is_empty() {
                return;
            }
            for (from, frame) in moving {
                let Some(&(to, port)) = self.links.get(&from) else {
                    continue;
                };
                match &mut self.nodes[to] {
                    Node::Switch(s) => s.handle_frame(now, PortId(port), &frame),
                    Node::Host(h) => h.receive(now, frame),
                }
            }
        }
    }
}

impl Host {
    fn receive(&mut self, now: Instant, frame: Vec<u8>) {
        let eth = Frame::new_checked(&frame[..]).expect("switches send whole frames");
        let ethertype = eth.inner_ethertype();
        if ethertype == EtherType::from(ETHERTYPE) {
            if let Ok(repr) = Packet::new_checked(eth.payload()).and_then(|p| Repr::parse(&p)) {
                self.control.push(repr.clone());
                if let Some(d) = self.rtcd.as_mut() {
                    d.handle_control(now, &repr);
                }
                self.drain_daemon();
            }
            return;
        }
        if ethertype == EtherType::Arp {
            let Ok(request) =
                arp::Packet::new_checked(eth.payload()).and_then(|p| arp::Repr::parse(&p))
            else {
                return;
            };
            if request.operation == arp::Operation::Request
                && request.target_protocol_addr == self.ip
                && request.source_protocol_addr != self.ip
            {
                let reply = arp::Repr {
                    operation: arp::Operation::Reply,
                    source_hardware_addr: self.mac,
                    source_protocol_addr: self.ip,
                    target_hardware_addr: request.source_hardware_addr,
                    target_protocol_addr: request.source_protocol_addr,
                };
                let mut buf = vec![0u8; 60];
                reply
                    .emit_frame(self.mac, request.source_hardware_addr, &mut buf)
                    .expect("fits");
                self.outbox.push(buf);
            }
            return;
        }
        self.received.push(frame);
        self.received_at.push(now);
    }

    /// Executes the daemon's actions: control frames go out, replies are recorded.
    fn drain_daemon(&mut self) {
        let Some(d) = self.rtcd.as_mut() else {
            return;
        };
        while let Some(action) = d.poll_action() {
            match action {
                Action::SendControl { dst, repr } => {
                    let mut buf = vec![0u8; 256];
                    let len = repr.emit_frame(self.mac, dst, &mut buf).expect("fits");
                    buf.truncate(len.max(60));
                    self.outbox.push(buf);
                }
                Action::Reply { reply, .. } => self.replies.push(reply),
                _ => {}
            }
        }
    }
}

/// A UDP frame from `src_mac`/`src_ip` to `dst_mac`/`dst_ip`:5004 with valid checksums.
pub(super) fn udp_frame(
    src_mac: Address,
    src_ip: Ipv4Addr,
    dst_mac: Address,
    dst_ip: Ipv4Addr,
    tag: u8,
) -> Vec<u8> {
    let payload = [tag; 32];
    let udp_len = 8 + payload.len();
    let total = 20 + udp_len;
    let mut frame = Vec::new();
    frame.extend_from_slice(&dst_mac.0);
    frame.extend_from_slice(&src_mac.0);
    frame.extend_from_slice(&[0x08, 0x00]);
    frame.extend_from_slice(&[0x45, 0, 0, total as u8, 0, tag, 0x40, 0, 64, 17, 0, 0]);
    frame.extend_from_slice(&src_ip.octets());
    frame.extend_from_slice(&dst_ip.octets());
    frame.extend_from_slice(&[0x13, 0x8c, 0x13, 0x8c, 0, udp_len as u8, 0, 0]);
    frame.extend_from_slice(&payload);
    let mut ip = ipv4::Packet::new_checked(&mut frame[14..]).expect("whole header");
    ip.fill_checksum();
    udp::Packet::new_checked(ip.payload_mut())
        .expect("whole datagram")
        .fill_checksum(src_ip, dst_ip);
    frame
}

/// Checks the IPv4 and UDP checksums of `frame`; returns (dst MAC, dst IP).
pub(super) fn verified(frame: &[u8]) -> (Address, Ipv4Addr) {
    let eth = Frame::new_checked(frame).expect("frame");
    let ip = ipv4::Packet::new_checked(eth.payload()).expect("ipv4");
    assert!(ip.verify_checksum(), "IPv4 checksum");
    let datagram = udp::Packet::new_checked(ip.payload()).expect("udp");
    assert!(
        datagram.verify_checksum(ip.src_addr(), ip.dst_addr()),
        "UDP checksum"
    );
    (eth.dst_addr(), ip.dst_addr())
}

/// An open request for a 1514-byte-frame connection to `dst_ip`:5004 at `rate_bps`, burst of
/// two frames, no delay requirement, shaped by the application.
pub(super) fn open_request(dst_ip: Ipv4Addr, rate_bps: u64) -> Request {
    Request::Open {
        dst_ip,
        dst_port: 5004,
        src_port: 0,
        rate_bps,
        max_burst: 3028,
        max_packet: 1514,
        shaping: crate::rtcd::DaemonShaping::None,
        delay_us: None,
    }
}

/// A(daemon) — S1 — S2 — S3 — B, one 10 Mbit/s connection A → B open; returns
/// (net, a, b, [s1, s2, s3]).
pub(super) fn opened_chain3() -> (Net, usize, usize, [usize; 3]) {
    let mut net = Net::new();
    let a = net.host(1, true);
    let s = [
        net.switch(&[RATE, RATE]),
        net.switch(&[RATE, RATE]),
        net.switch(&[RATE, RATE]),
    ];
    let b = net.host(2, false);
    net.link(a, 0, s[0], 0);
    net.link(s[0], 1, s[1], 0);
    net.link(s[1], 1, s[2], 0);
    net.link(s[2], 1, b, 0);
    net.run_for(Duration::from_millis(5));
    let ip_b = net.h(b).ip;
    net.request(a, open_request(ip_b, 10_000_000));
    net.run_for(Duration::from_millis(50));
    assert!(
        matches!(net.h(a).replies.last(), Some(Reply::Opened { hops: 3, .. })),
        "{:?}",
        net.h(a).replies
    );
    (net, a, b, s)
}

/// A raw control frame from `mac` to the control MAC, padded to 60 bytes.
pub(super) fn control_frame(mac: Address, repr: &Repr) -> Vec<u8> {
    let mut buf = vec![0u8; 128];
    let len = repr
        .emit_frame(mac, ProxyMacPlan::DEFAULT.control_mac(), &mut buf)
        .expect("fits");
    buf.truncate(len.max(60));
    buf
}

/// A SETUP from 198.18.0.1 with connection id 0x20 towards `dst_ip`:5004 at `rate`, carrying
/// boot epoch `epoch`.
pub(super) fn setup_repr(request_id: u32, rate: u64, dst_ip: Ipv4Addr, epoch: u64) -> Repr {
    let mut repr = Repr::new(
        0,
        request_id,
        Message::Setup(SetupRepr {
            src_ip: Ipv4Addr::new(198, 18, 0, 1),
            dst_ip,
            dst_port: 5004,
            src_port: 0,
            rate,
            max_burst: 3028,
            max_packet: 1514,
            connection_id: 0x20,
            hop_limit: 16,
        }),
    );
    repr.set_tlv(EpochTlv(epoch).to_tlv());
    repr
}
