//! Spanning tree scenarios on virtual time: a tiny network of bridges whose BPDUs go through the
//! real wire format (`emit_frame` → `parse_frame`) to the peer port, delivered at once.

use std::time::Duration;

use rtlan_wire::ethernet::Address;
use rtlan_wire::stp::{parse_frame, BridgeId, Config, Flags, PortIdentifier, Time, MAX_FRAME_LEN};

use super::*;

mod random_graphs;
mod scenarios;

const COST: u32 = 19;

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

fn at(s: u64) -> Instant {
    Instant::ZERO + secs(s)
}

fn mac(n: u8) -> Address {
    Address([0x02, 0, 0, 0, 0, n])
}

/// A (bridge index, port index) pair.
type End = (usize, u16);

/// A point-to-point link between (bridge, port) pairs.
#[derive(Debug, Clone, Copy)]
struct Link {
    a: End,
    b: End,
    /// Frames cross the link.
    carries: bool,
}

/// N bridges, their links, a virtual clock and the events each bridge reported.
struct Net {
    bridges: Vec<Bridge>,
    links: Vec<Link>,
    now: Instant,
    events: Vec<(Instant, usize, Event)>,
}

impl Net {
    /// Bridge `i` has MAC 02:00:00:00:00:(i+1), default priority and timers, and as many
    /// ports of `COST` as the links need.
    fn new(n: usize, links: &[(End, End)]) -> Net {
        Net::with(n, links, |_, _| {})
    }

    /// As [`Net::new`], with `tweak(i, config)` applied to bridge `i`'s configuration.
    fn with(n: usize, links: &[(End, End)], tweak: impl Fn(usize, &mut BridgeConfig)) -> Net {
        let mut port_counts = vec![0u16; n];
        for &(a, b) in links {
            for (bridge, port) in [a, b] {
                port_counts[bridge] = port_counts[bridge].max(port + 1);
            }
        }
        let bridges = (0..n)
            .map(|i| {
                let ports = vec![PortConfig::with_cost(COST); usize::from(port_counts[i])];
                let mut config = BridgeConfig::new(mac(u8::try_from(i + 1).unwrap()), ports);
                tweak(i, &mut config);
                Bridge::new(config, Instant::ZERO).unwrap()
            })
            .collect();
        let links = links
            .iter()
            .map(|&(a, b)| Link {
                a,
                b,
                carries: true,
            })
            .collect();
        let mut net = Net {
            bridges,
            links,
            now: Instant::ZERO,
            events: Vec::new(),
        };
        net.deliver();
        net
    }

    fn peer(&self, bridge: usize, port: u16) -> Option<(usize, u16)> {
        self.links.iter().find_map(|l| {
            if !l.carries {
                None
            } else if l.a == (bridge, port) {
                Some(l.b)
            } else if l.b == (bridge, port) {
                Some(l.a)
            } else {
                None
            }
        })
    }

    /// Sends every queued BPDU across its link (through the wire format) until all are quiet,
    /// and collects events.
    fn deliver(&mut self) {
        loop {
            let mut moved = false;
            for i in 0..self.bridges.len() {
                while let Some((port, repr)) = self.bridges[i].poll_transmit() {
                    moved = true;
                    let mut buf = [0u8; MAX_FRAME_LEN];
                    let len = repr.emit_frame(mac(0x80), &mut buf).unwrap();
                    let received = parse_frame(&buf[..len]).unwrap();
                    assert_eq!(received, repr);
                    if let Some((j, q)) = self.peer(i, port.0) {
                        self.bridges[j].handle_bpdu(self.now, PortId(q), &received);
                    }
                }
            }
            for i in 0..self.bridges.len() {
                while let Some(e) = self.bridges[i].poll_event() {
                    self.events.push((self.now, i, e));
                }
            }
            if !moved {
                return;
            }
        }
    }

    /// Advances virtual time to `until`, firing timers in order.
    fn run_until(&mut self, until: Instant) {
        loop {
            self.deliver();
            let next = self.bridges.iter().filter_map(Bridge::poll_timeout).min();
            match next {
                Some(t) if t <= until => {
                    self.now = self.now.max(t);
                    for b in &mut self.bridges {
                        b.handle_timeout(self.now);
                    }
                }
                _ => break,
            }
        }
        self.now = until;
    }

    fn run_for(&mut self, d: Duration) {
        self.run_until(self.now + d);
    }

    /// The link between these two endpoints fails; both ends see the carrier go (or, if
    /// `silent`, frames just stop crossing — a failure only Max Age detects).
    fn fail_link(&mut self, index: usize, silent: bool) {
        let link = self.links[index];
        self.links[index].carries = false;
        if !silent {
            for (b, p) in [link.a, link.b] {
                self.bridges[b].handle_link(self.now, PortId(p), false);
            }
        }
        self.deliver();
    }

    fn state(&self, bridge: usize, port: u16) -> PortState {
        self.bridges[bridge].port_state(PortId(port))
    }

    /// Every (bridge, port) in `state`.
    fn ports_in(&self, state: PortState) -> Vec<(usize, u16)> {
        let mut out = Vec::new();
        for (i, b) in self.bridges.iter().enumerate() {
            for p in 0..u16::try_from(b.ports.len()).unwrap() {
                if b.port_state(PortId(p)) == state {
                    out.push((i, p));
                }
            }
        }
        out
    }

    /// When (bridge, port) last entered `state` at or after `since`.
    fn entered(
        &self,
        bridge: usize,
        port: u16,
        state: PortState,
        since: Instant,
    ) -> Option<Instant> {
        self.events
            .iter()
            .filter(|(t, b, e)| {
                *t >= since
                    && *b == bridge
                    && *e
                        == Event::PortStateChanged {
                            port: PortId(port),
                            state,
                        }
            })
            .map(|(t, _, _)| *t)
            .next_back()
    }

    fn assert_single_root(&self, root: usize) {
        let id = self.bridges[root].bridge_id();
        for (i, b) in self.bridges.iter().enumerate() {
            assert_eq!(b.root_id(), id, "bridge {i} believes in another root");
        }
        assert!(self.bridges[root].is_root_bridge());
    }
}

/// A Configuration BPDU as a neighbour would send it.
fn config_from(root: BridgeId, cost: u32, bridge: BridgeId, port: u16) -> Config {
    Config {
        flags: Flags::default(),
        root_id: root,
        root_path_cost: cost,
        bridge_id: bridge,
        port_id: PortIdentifier::new(128, port),
        message_age: Time(0),
        max_age: Time::from_secs(20),
        hello_time: Time::from_secs(2),
        forward_delay: Time::from_secs(15),
    }
}
