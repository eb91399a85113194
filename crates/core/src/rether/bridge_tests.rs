//! The bridge between two emulated CSMA/CD segments of different rates and TRTs, driven with
//! host agents in virtual time: ordinary frames bridged and learnt, RETHER kept on its
//! segment, and a reserved stream from a host on one segment to a host on the other within
//! the bound of `end_to_end` while both segments are flooded — and not without reservations.

use std::time::Duration;

use proptest::prelude::*;
use rtlan_wire::ethernet::Address;
use rtlan_wire::rether::{self, NodeId};

use super::*;
use crate::rether::agent::{Agent, AgentConfig, AgentEvent, SendSpec, HOST, SEGMENT};
use crate::rether::test_frames::{host_ip, host_mac, ms, udp};
use crate::rether::Mode;
use crate::segment::{Bus, BusConfig};

/// Segment A: 10 Mbit/s, TRT 20 ms. Segment B: 100 Mbit/s, TRT 10 ms.
const RATES: [u64; 2] = [10_000_000, 100_000_000];
const TRTS_MS: [u64; 2] = [20, 10];
/// The bridge's ports.
const A: PortId = PortId(0);
const B: PortId = PortId(1);

/// A broadcast ARP-like hello from host `n` (so that bridge and agents learn its MAC).
fn hello(n: u16) -> Vec<u8> {
    let mut f = vec![0u8; 60];
    f[0..6].copy_from_slice(&[0xff; 6]);
    f[6..12].copy_from_slice(&host_mac(n).0);
    f[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
    f
}

fn station_config(segment: usize, id: u16, mac: Address) -> Config {
    let mut c = Config::new(NodeId::new(id).unwrap(), mac, RATES[segment]);
    c.trt = Duration::from_millis(TRTS_MS[segment]);
    c.t_nrt = c.trt / 10;
    // At least a token pass's real time on the slower segment (≈ 100 µs at 10 Mbit/s), so
    // that cycles do not run over their TRT (module docs).
    c.token_cost = Duration::from_micros(200);
    c
}

/// Hosts 1–3 on segment A, 4–6 on segment B, each behind its agent (station ids 1–3 on each
/// segment), and the bridge (station id 4 on both) between them.
struct Net {
    agents: Vec<Agent>,
    bridge: Bridge,
    buses: [Bus; 2],
    now: Instant,
    /// Per host: (when, frame) delivered to it.
    to_hosts: Vec<Vec<(Instant, Vec<u8>)>>,
    events: Vec<Vec<AgentEvent>>,
    bridge_events: Vec<(PortId, Event)>,
    /// Per segment: the frames the bridge put on it.
    bridge_tx: [Vec<Vec<u8>>; 2],
}

/// Host `h` (1-based): its segment and its attachment on that segment's bus.
fn place(h: usize) -> (usize, u16) {
    ((h - 1) / 3, ((h - 1) % 3) as u16)
}

/// The bridge's attachment on each bus.
const BRIDGE_AT: PortId = PortId(3);

impl Net {
    fn new() -> Net {
        let agents = (1..=6u16)
            .map(|h| {
                let (seg, at) = place(usize::from(h));
                let mac = Address([2, 0, 0, 0, 1, h as u8]);
                Agent::new(AgentConfig::new(station_config(seg, at + 1, mac)))
            })
            .collect();
        let bridge = Bridge::new(BridgeConfig::new(vec![
            station_config(0, 4, Address([2, 0, 0, 0, 3, 0])),
            station_config(1, 4, Address([2, 0, 0, 0, 3, 1])),
        ]))
        .expect("two ports");
        Net {
            agents,
            bridge,
            buses: [
                Bus::new(BusConfig::new(4, RATES[0])),
                Bus::new(BusConfig::new(4, RATES[1])),
            ],
            now: Instant::ZERO,
            to_hosts: vec![Vec::new(); 6],
            events: vec![Vec::new(); 6],
            bridge_events: Vec::new(),
            bridge_tx: [Vec::new(), Vec::new()],
        }
    }

    fn host_send(&mut self, h: usize, frame: &[u8]) {
        let now = self.now;
        self.agents[h - 1].handle_frame(now, HOST, frame);
    }

    fn agent(&self, h: usize) -> &Agent {
        &self.agents[h - 1]
    }

    /// Runs until `end`, calling `each` at every step.
    fn run_until(&mut self, end: Instant, mut each: impl FnMut(&mut Net)) {
        let mut buf = vec![0u8; 2048];
        while self.now < end {
            each(self);
            let now = self.now;
            for (i, agent) in self.agents.iter_mut().enumerate() {
                let (seg, at) = place(i + 1);
                if agent.poll_timeout().is_some_and(|t| t <= now) {
                    agent.handle_timeout(now);
                }
                while let Some(len) = agent.poll_transmit(now, HOST, &mut buf) {
                    self.to_hosts[i].push((now, buf[..len].to_vec()));
                }
                while self.buses[seg].queued(PortId(at)) < 2 {
                    let Some(len) = agent.poll_transmit(now, SEGMENT, &mut buf) else {
                        break;
                    };
                    self.buses[seg].handle_frame(now, PortId(at), &buf[..len]);
                }
                while let Some(e) = agent.poll_event() {
                    self.events[i].push(e);
                }
            }
            if self.bridge.poll_timeout().is_some_and(|t| t <= now) {
                self.bridge.handle_timeout(now);
            }
            for seg in 0..2 {
                while self.buses[seg].queued(BRIDGE_AT) < 2 {
                    let port = PortId(seg as u16);
                    let Some(len) = self.bridge.poll_transmit(now, port, &mut buf) else {
                        break;
                    };
                    self.bridge_tx[seg].push(buf[..len].to_vec());
                    self.buses[seg].handle_frame(now, BRIDGE_AT, &buf[..len]);
                }
            }
            while let Some(e) = self.bridge.poll_event() {
                self.bridge_events.push(e);
            }
            for seg in 0..2 {
                self.buses[seg].handle_timeout(now);
                for at in 0..4u16 {
                    while let Some(len) = self.buses[seg].poll_transmit(now, PortId(at), &mut buf) {
                        let frame = &buf[..len];
                        if PortId(at) == BRIDGE_AT {
                            self.bridge.handle_frame(now, PortId(seg as u16), frame);
                        } else {
                            let h = seg * 3 + usize::from(at);
                            self.agents[h].handle_frame(now, SEGMENT, frame);
                        }
                    }
                }
            }
            let mut next = end;
            let timeouts = self
                .agents
                .iter()
                .map(|a| a.poll_timeout())
                .chain([self.bridge.poll_timeout()])
                .chain(self.buses.iter().map(|b| b.poll_timeout()));
            for t in timeouts.flatten() {
                next = next.min(t);
            }
            self.now = next.max(now + Duration::from_micros(1)).min(end);
        }
    }

    /// Every host says hello, so that the bridge and the agents know every MAC.
    fn hellos(&mut self) {
        for h in 1..=6 {
            self.host_send(h, &hello(h as u16));
        }
        let end = self.now + Duration::from_millis(5);
        self.run_until(end, |_| {});
    }

    fn agent_admitted(&self, h: usize, session: u16) -> bool {
        self.events[h - 1]
            .iter()
            .any(|e| matches!(e, AgentEvent::Admitted { session: s, .. } if *s == session))
    }

    fn bridge_admitted(&self, port: PortId, session: u16) -> bool {
        self.bridge_events.iter().any(|(p, e)| {
            *p == port && matches!(e, Event::Admitted { session: s, .. } if *s == session)
        })
    }

    /// Tags of the UDP frames host `h` received.
    fn tags(&self, h: usize) -> Vec<u8> {
        self.to_hosts[h - 1]
            .iter()
            .filter(|(_, f)| f.len() > 42 && f[12..14] == [8, 0] && f[23] == 17)
            .map(|(_, f)| f[42])
            .collect()
    }
}

fn is_rether(f: &[u8]) -> bool {
    f[12..14] == rether::ETHERTYPE.to_be_bytes()
}

#[test]
fn ordinary_frames_are_bridged_both_ways_and_learnt() {
    let mut net = Net::new();
    // Hello broadcasts cross (a group address floods).
    net.hellos();
    for h in 1..=6 {
        assert_eq!(
            net.bridge.port_of(net.now, host_mac(h)),
            Some(if h <= 3 { A } else { B }),
            "host {h} learnt"
        );
    }
    let table = net.bridge.table(net.now);
    assert_eq!(table.len(), 6, "{table:?}");
    assert!(table.iter().all(
        |(mac, port, age)| net.bridge.port_of(net.now, *mac) == Some(*port)
            && *age < Duration::from_secs(1)
    ));
    let later = net.now + Duration::from_secs(301);
    assert!(net.bridge.table(later).is_empty(), "aged out after 300 s");
    let heard = |net: &Net, h: usize| {
        net.to_hosts[h - 1]
            .iter()
            .filter(|(_, f)| f[12..14] == [8, 6])
            .count()
    };
    assert_eq!(heard(&net, 1), 5, "host 1 hears the five other hellos");
    assert_eq!(heard(&net, 5), 5, "host 5 too");
    net.bridge_tx = [Vec::new(), Vec::new()];

    // Host 1 → host 4 crosses A to B, host 5 → host 2 crosses back; host 2 → host 3 stays on
    // A, and a frame for an unknown MAC floods to B.
    net.host_send(1, &udp(1, 4, 7000, 300, 1, 0));
    net.host_send(5, &udp(5, 2, 7000, 300, 2, 0));
    net.host_send(2, &udp(2, 3, 7000, 300, 3, 0));
    let mut unknown = udp(1, 9, 7000, 300, 4, 0);
    unknown[0..6].copy_from_slice(&[2, 0, 0, 0, 2, 99]);
    net.host_send(1, &unknown);
    let end = net.now + Duration::from_millis(20);
    net.run_until(end, |_| {});
    assert_eq!(net.tags(4), vec![1]);
    assert_eq!(net.tags(2), vec![2]);
    assert_eq!(net.tags(3), vec![3]);
    let tags_on =
        |net: &Net, seg: usize| -> Vec<u8> { net.bridge_tx[seg].iter().map(|f| f[42]).collect() };
    assert_eq!(
        tags_on(&net, 1),
        vec![1, 4],
        "B gets the crossing frame and the unknown one"
    );
    assert_eq!(tags_on(&net, 0), vec![2], "A gets only host 5's frame");
    let s = net.bridge.stats();
    assert_eq!(s.forwarded, 2);
    assert!(s.filtered >= 1, "host 2 → host 3 was filtered: {s:?}");
    assert_eq!(
        s.rx,
        s.rether + s.malformed + s.link_local + s.filtered + s.forwarded + s.flooded,
        "every frame counted once: {s:?}"
    );
}

#[test]
fn rether_frames_stay_on_their_segment() {
    let mut net = Net::new();
    net.hellos();
    // A session on segment A switches A to RETHER; B stays CSMA.
    let session = net.agents[0]
        .open(SendSpec {
            bytes_per_trt: 2_000,
            max_frame: 1000,
            receiver: None,
            flow: None,
            buffers: 4,
        })
        .expect("open");
    let now = net.now;
    net.agents[0].admit(now, session).expect("admit");
    net.run_until(ms(200), |_| {});
    assert!(net.agent_admitted(1, session));
    assert_eq!(net.agent(2).station().mode(), Mode::Rether);
    assert_eq!(net.bridge.station(A).unwrap().mode(), Mode::Rether);
    assert!(
        net.bridge.station(A).unwrap().stats().tokens_held > 3,
        "the bridge is in A's ring"
    );
    assert_eq!(net.bridge.station(B).unwrap().mode(), Mode::Csma);
    assert_eq!(net.agent(5).station().mode(), Mode::Csma);
    // The only RETHER frames on B are the bridge's B station's own (its JOIN announcement):
    // none of A's tokens crossed.
    let own = [2, 0, 0, 0, 3, 1];
    let on_b: Vec<&Vec<u8>> = net.bridge_tx[1].iter().filter(|f| is_rether(f)).collect();
    assert!(
        on_b.iter().all(|f| f[6..12] == own),
        "no RETHER frame of A on B"
    );
    assert!(on_b.len() <= 2, "{} RETHER frames on B", on_b.len());
    assert!(net.bridge.stats().rether > 10);
    // Hosts still talk across while A runs the token.
    net.host_send(4, &udp(4, 1, 7000, 500, 7, 0));
    let end = net.now + Duration::from_millis(60);
    net.run_until(end, |_| {});
    assert_eq!(net.tags(1), vec![7]);
}

#[test]
fn network_input_never_panics_and_the_table_is_bounded_and_ages() {
    let mut config = BridgeConfig::new(vec![
        station_config(0, 4, Address([2, 0, 0, 0, 3, 0])),
        station_config(1, 4, Address([2, 0, 0, 0, 3, 1])),
    ]);
    config.table_capacity = 2;
    config.aging = Duration::from_millis(100);
    let mut bridge = Bridge::new(config).expect("bridge");
    for junk in [
        &[][..],
        &[1, 2, 3][..],
        &[0xff; 13][..],
        &vec![0u8; 3000][..],
    ] {
        bridge.handle_frame(ms(0), A, junk);
        bridge.handle_frame(ms(0), PortId(7), junk);
    }
    let mut bad_rether = udp(1, 2, 7000, 60, 0, 0);
    bad_rether[12..14].copy_from_slice(&rether::ETHERTYPE.to_be_bytes());
    bridge.handle_frame(ms(0), B, &bad_rether);
    let mut bpdu = udp(1, 2, 7000, 60, 0, 0);
    bpdu[0..6].copy_from_slice(&[0x01, 0x80, 0xc2, 0, 0, 0]);
    bridge.handle_frame(ms(0), A, &bpdu);
    let s = bridge.stats().clone();
    assert_eq!(
        (s.rx, s.malformed, s.rether, s.link_local),
        (6, 4, 1, 1),
        "{s:?}"
    );
    let mut buf = [0u8; 2048];
    assert_eq!(bridge.poll_transmit(ms(0), PortId(7), &mut buf), None);
    // Only B's station's own announcement leaves on B: the BPDU was not forwarded.
    while let Some(len) = bridge.poll_transmit(ms(0), B, &mut buf) {
        assert!(is_rether(&buf[..len]), "the BPDU is not forwarded");
    }

    // Host 1 is learnt on A (from the BPDU's source); hosts 2 and 3 fill the table.
    bridge.handle_frame(ms(10), B, &udp(2, 1, 7000, 60, 0, 0));
    bridge.handle_frame(ms(20), A, &udp(3, 1, 7000, 60, 0, 0));
    assert_eq!(
        bridge.port_of(ms(20), host_mac(1)),
        None,
        "evicted, the oldest"
    );
    assert_eq!(bridge.port_of(ms(20), host_mac(2)), Some(B));
    assert_eq!(bridge.port_of(ms(20), host_mac(3)), Some(A));
    assert_eq!(bridge.stats().evicted, 1);
    // Host 2 moves to A.
    bridge.handle_frame(ms(30), A, &udp(2, 3, 7000, 60, 0, 0));
    assert_eq!(bridge.port_of(ms(30), host_mac(2)), Some(A));
    // Aged out after 100 ms without a word.
    assert_eq!(bridge.port_of(ms(125), host_mac(3)), None);
    assert_eq!(bridge.port_of(ms(125), host_mac(2)), Some(A));
    bridge.handle_timeout(ms(131));
    assert_eq!(bridge.port_of(ms(131), host_mac(2)), None);
}

#[test]
fn sub_connections_refuse_bad_requests() {
    let mut net = Net::new();
    let flow = FlowKey {
        src: host_ip(1),
        dst: host_ip(4),
        protocol: 17,
        src_port: 0,
        dst_port: 9000,
    };
    let spec = SubSpec {
        bytes_per_trt: 1000,
        max_frame: 1000,
        flow,
    };
    assert_eq!(
        net.bridge.open(PortId(2), spec),
        Err(BridgeError::NoPort(2))
    );
    assert!(matches!(
        net.bridge.open(
            B,
            SubSpec {
                max_frame: 20,
                ..spec
            }
        ),
        Err(BridgeError::Invalid(_))
    ));
    let s = net.bridge.open(B, spec).expect("open");
    assert_eq!(net.bridge.open(B, spec), Err(BridgeError::FlowTaken(s)));
    assert!(
        net.bridge.open(A, spec).is_ok(),
        "another port's sub-connection"
    );
    assert_eq!(
        net.bridge.admit(ms(0), B, s + 1),
        Err(BridgeError::NoSession {
            port: 1,
            session: s + 1
        })
    );
    net.bridge.close(B, s).expect("close");
    assert!(net.bridge.close(B, s).is_err());
    assert_eq!(net.bridge.sessions().len(), 1, "A's is left");
    // 1 Mbit/s is 2,500 bytes per A's 20 ms TRT, 1,250 per B's 10 ms.
    assert_eq!(net.bridge.bytes_per_trt(A, 1_000_000), Some(2_500));
    assert_eq!(net.bridge.bytes_per_trt(B, 1_000_000), Some(1_250));
    assert_eq!(net.bridge.bytes_per_trt(PortId(2), 1_000_000), None);
    assert!(Bridge::new(BridgeConfig::new(vec![station_config(0, 1, host_mac(1))])).is_err());
}

/// The stream: host 1 → host 4, 1000-byte UDP frames every 5 ms (1.6 Mbit/s).
const STREAM_FRAME: usize = 1000;
const STREAM_EVERY: Duration = Duration::from_millis(5);

/// Host 2 floods host 3 (on A), host 3 floods host 6 (across the bridge), host 5 floods
/// host 6 (on B).
const FLOODS: [(usize, u16); 3] = [(2, 3), (3, 6), (5, 6)];

/// Runs the stream for a second while host 2 floods host 3 (on A), host 3 floods host 6
/// (across the bridge) and host 5 floods host 6 (on B); returns the frames sent, each
/// arrival's (number, delay) and the most frames the bridge's sub-connection `sub` on B held.
fn stream_under_floods(net: &mut Net, sub: Option<u16>) -> (u32, Vec<(u32, Duration)>, usize) {
    stream(net, (1, 4), &FLOODS, sub.map(|s| (B, s)))
}

/// Runs a stream from host `from` to host `to` for a second under `floods` (from, to);
/// returns the frames sent, each arrival's (number, delay) and the most frames the bridge's
/// sub-connection `sub` held.
fn stream(
    net: &mut Net,
    (from, to): (usize, usize),
    floods: &[(usize, u16)],
    sub: Option<(PortId, u16)>,
) -> (u32, Vec<(u32, Duration)>, usize) {
    let mut held = 0;
    let start = net.now;
    let stop = start + Duration::from_millis(1000);
    let end = stop + Duration::from_millis(200);
    let mut next = start;
    let mut n = 0u32;
    let mut sent_at = Vec::new();
    net.run_until(end, |net| {
        while next <= net.now && next < stop {
            let f = udp(from as u16, to as u16, 9000, STREAM_FRAME, 0x51, n);
            net.host_send(from, &f);
            sent_at.push(next);
            n += 1;
            next += STREAM_EVERY;
        }
        if let Some(q) = sub.and_then(|(p, s)| net.bridge.station(p)?.rt_queued(s)) {
            held = held.max(q);
        }
        for &(a, b) in floods {
            while net.agent(a).station().nrt_queued() < 32 {
                let f = udp(a as u16, b, 7000, 1500, 0xf0, 0);
                net.host_send(a, &f);
            }
        }
    });
    let got = net.to_hosts[to - 1]
        .iter()
        .filter(|(_, f)| f.len() == STREAM_FRAME && f[42] == 0x51)
        .map(|(t, f)| {
            let k = u32::from_be_bytes(f[43..47].try_into().unwrap());
            (k, t.saturating_duration_since(sent_at[k as usize]))
        })
        .collect();
    (n, got, held)
}

fn stream_flow() -> FlowKey {
    flow_between(1, 4)
}

fn flow_between(from: u16, to: u16) -> FlowKey {
    FlowKey {
        src: host_ip(from),
        dst: host_ip(to),
        protocol: 17,
        src_port: 0, // any source port (RFC 2205 §A.9)
        dst_port: 9000,
    }
}

/// The source: one frame per 5 ms.
const SOURCE: Source = Source {
    frames: 1,
    period: STREAM_EVERY,
};

/// The bound of the stream when A's sub-connection sends `n_a` frames per visit and B's
/// `n_b`, each alone in its RT-set.
fn stream_bound(net: &Net, n_a: u32, n_b: u32) -> (Bound, [u32; 2]) {
    let bytes = |n: u32| n * (STREAM_FRAME as u32 - 14);
    let hops = [
        Hop::of(
            net.agent(1).station(),
            bytes(n_a),
            STREAM_FRAME,
            Duration::ZERO,
        ),
        Hop::of(
            net.bridge.station(B).unwrap(),
            bytes(n_b),
            STREAM_FRAME,
            Duration::ZERO,
        ),
    ];
    (
        end_to_end(SOURCE, &hops).expect("reserved enough"),
        [bytes(n_a), bytes(n_b)],
    )
}

#[test]
fn a_reserved_stream_crosses_the_bridge_within_the_bound_through_floods() {
    let mut net = Net::new();
    net.hellos();
    // The reservations the bound asks for: 4 frames per 20 ms visit on A; on B, whose TRT
    // (10 ms) is shorter than A's less A's THT, as many per 10 ms visit.
    assert!(matches!(
        end_to_end(
            SOURCE,
            &[Hop::of(
                net.agent(1).station(),
                3 * 986,
                STREAM_FRAME,
                Duration::ZERO
            )]
        ),
        Err(BoundError::Underreserved {
            hop: 0,
            needed: 4,
            reserved: 3
        })
    ));
    let (bound, [bytes_a, bytes_b]) = stream_bound(&net, 4, 4);
    assert_eq!(bound.hops[1].frames_needed, 4);
    let sa = net.agents[0]
        .open(SendSpec {
            bytes_per_trt: bytes_a,
            max_frame: STREAM_FRAME,
            receiver: None,
            flow: Some(stream_flow()),
            buffers: 4,
        })
        .expect("open on A");
    let sb = net
        .bridge
        .open(
            B,
            SubSpec {
                bytes_per_trt: bytes_b,
                max_frame: STREAM_FRAME,
                flow: stream_flow(),
            },
        )
        .expect("open on B");
    assert_eq!(net.bridge.sessions()[0].state, SessionState::Open);
    let now = net.now;
    net.agents[0].admit(now, sa).expect("admit A");
    net.bridge.admit(now, B, sb).expect("admit B");
    assert_eq!(net.bridge.sessions()[0].state, SessionState::Admitting);
    // Both segments switch in parallel (§2.5: the setup time is the larger of the two).
    net.run_until(ms(150), |_| {});
    assert!(net.agent_admitted(1, sa), "{:?}", net.events[0]);
    assert!(net.bridge_admitted(B, sb), "{:?}", net.bridge_events);
    let listed = net.bridge.sessions();
    assert_eq!(listed.len(), 1);
    let sub = &listed[0];
    assert_eq!((sub.port, sub.session), (1, sb));
    assert_eq!(sub.state, SessionState::Admitted);
    assert_eq!(sub.bytes_per_trt, bytes_b);
    assert_eq!(
        sub.tht_ns,
        Some(
            net.bridge
                .station(B)
                .unwrap()
                .tht(bytes_b, STREAM_FRAME)
                .as_nanos() as u64
        )
    );
    assert_eq!(sub.flow, "17 198.18.0.1:0 > 198.18.0.4:9000");
    assert_eq!(net.agent(4).station().mode(), Mode::Rether);

    let (n, got, held) = stream_under_floods(&mut net, Some(sb));
    let worst = got.iter().map(|g| g.1).max().unwrap();
    let mean = got.iter().map(|g| g.1).sum::<Duration>() / got.len() as u32;
    eprintln!(
        "reserved: {} of {n} frames, delay max {worst:?} mean {mean:?}, bound {:?} {:?}; \
         the bridge held at most {held} frames on B; bridge {:?}",
        got.len(),
        bound.delay,
        bound.hops,
        net.bridge.stats()
    );
    assert_eq!(got.len() as u32, n, "every frame arrived");
    assert!(got.windows(2).all(|w| w[0].0 < w[1].0), "in order");
    assert!(
        worst <= bound.delay,
        "worst {worst:?} > bound {:?}",
        bound.delay
    );
    // The floods got the rest: across the bridge too.
    assert!(net.tags(6).iter().filter(|&&t| t == 0xf0).count() > 500);
    assert!(net.tags(3).iter().filter(|&&t| t == 0xf0).count() > 100);
    assert!(net.bridge.stats().tx_rt >= u64::from(n));
    // The bridge's queue on B never held more than the bound's buffer.
    assert!(
        held >= 1 && held as u64 <= bound.hops[1].buffer_frames,
        "held {held}"
    );
}

#[test]
fn without_reservations_the_same_floods_break_the_bound() {
    let mut net = Net::new();
    net.hellos();
    let (bound, _) = stream_bound(&net, 4, 4);
    net.run_until(ms(150), |_| {});
    let (n, got, _) = stream_under_floods(&mut net, None);
    let worst = got.iter().map(|g| g.1).max().unwrap_or(Duration::MAX);
    eprintln!(
        "unreserved: {} of {n} frames, delay max {worst:?}, bound {:?}",
        got.len(),
        bound.delay
    );
    assert_eq!(net.agent(1).station().mode(), Mode::Csma);
    assert!(
        (got.len() as u32) < n || worst > bound.delay,
        "CSMA under floods kept the bound"
    );
}

#[test]
fn into_a_longer_trt_the_bridge_buffers_the_schedules_discrepancy() {
    // Host 4 (B: TRT 10 ms) to host 1 (A: TRT 20 ms). On B the source needs 2 frames per
    // visit; A's visits come 20 ms apart, in which up to three of B's visits of 2 frames
    // land: A's sub-connection needs 6 frames per visit, not the 4 the rate alone asks for.
    let mut net = Net::new();
    net.hellos();
    let bytes = |n: u32| n * (STREAM_FRAME as u32 - 14);
    let hops = |n_b: u32, n_a: u32, net: &Net| {
        [
            Hop::of(
                net.agent(4).station(),
                bytes(n_b),
                STREAM_FRAME,
                Duration::ZERO,
            ),
            Hop::of(
                net.bridge.station(A).unwrap(),
                bytes(n_a),
                STREAM_FRAME,
                Duration::ZERO,
            ),
        ]
    };
    assert_eq!(
        end_to_end(SOURCE, &hops(2, 4, &net)),
        Err(BoundError::Underreserved {
            hop: 1,
            needed: 6,
            reserved: 4
        })
    );
    let bound = end_to_end(SOURCE, &hops(2, 6, &net)).expect("enough");
    let flow = flow_between(4, 1);
    let sb = net.agents[3]
        .open(SendSpec {
            bytes_per_trt: bytes(2),
            max_frame: STREAM_FRAME,
            receiver: None,
            flow: Some(flow),
            buffers: 4,
        })
        .expect("open on B");
    let sa = net
        .bridge
        .open(
            A,
            SubSpec {
                bytes_per_trt: bytes(6),
                max_frame: STREAM_FRAME,
                flow,
            },
        )
        .expect("open on A");
    let now = net.now;
    net.agents[3].admit(now, sb).expect("admit B");
    net.bridge.admit(now, A, sa).expect("admit A");
    net.run_until(ms(150), |_| {});
    assert!(net.bridge_admitted(A, sa), "{:?}", net.bridge_events);
    let floods = [(5usize, 6u16), (6, 2), (2, 3)];
    let (n, got, held) = stream(&mut net, (4, 1), &floods, Some((A, sa)));
    let worst = got.iter().map(|g| g.1).max().unwrap();
    eprintln!(
        "B to A: {} of {n} frames, delay max {worst:?}, bound {:?} {:?}; the bridge held at \
         most {held} frames on A",
        got.len(),
        bound.delay,
        bound.hops
    );
    assert_eq!(got.len() as u32, n, "every frame arrived");
    assert!(
        worst <= bound.delay,
        "worst {worst:?} > bound {:?}",
        bound.delay
    );
    assert!(held as u64 <= bound.hops[1].buffer_frames, "held {held}");
}

proptest! {
    /// The bound is the sum of the hops' `TRT + ahead + THT`; it holds only when every hop
    /// carries what can arrive between two of its visits; a longer downstream TRT needs more.
    #[test]
    fn the_bound_adds_up_and_asks_for_enough(
        frames in 1u32..8,
        period_ms in 1u64..40,
        trts in proptest::collection::vec((5u64..60, 0u64..3, 1u32..40), 1..4),
    ) {
        let source = Source { frames, period: Duration::from_millis(period_ms) };
        let hops: Vec<Hop> = trts
            .iter()
            .map(|&(trt, ahead, n)| Hop {
                trt: Duration::from_millis(trt),
                ahead: Duration::from_millis(ahead),
                tht: Duration::from_millis(1 + u64::from(n) / 10),
                frames_per_visit: n,
            })
            .collect();
        match end_to_end(source, &hops) {
            Ok(b) => {
                let sum: Duration = hops.iter().map(|h| h.trt + h.ahead + h.tht).sum();
                prop_assert_eq!(b.delay, sum);
                for (h, hb) in hops.iter().zip(&b.hops) {
                    prop_assert!(hb.frames_needed <= u64::from(h.frames_per_visit));
                    prop_assert!(hb.buffer_frames >= hb.frames_needed);
                }
                // The first hop needs the source's frames in a TRT + ahead window.
                let w = (hops[0].trt + hops[0].ahead).as_nanos();
                let m = u64::from(frames) * w.div_ceil(source.period.as_nanos()) as u64;
                prop_assert_eq!(b.hops[0].frames_needed, m);
            }
            Err(BoundError::Underreserved { hop, needed, reserved }) => {
                prop_assert!(needed > u64::from(reserved));
                prop_assert!(hop < hops.len());
            }
            Err(e) => prop_assert!(false, "{e}"),
        }
    }
}

#[test]
fn the_bound_by_hand() {
    // Source 1 frame / 5 ms; A: TRT 20, THT 3; B: TRT 10, THT 1; C: TRT 50, THT 2.
    let hop = |trt, tht, n| Hop {
        trt: Duration::from_millis(trt),
        ahead: Duration::ZERO,
        tht: Duration::from_millis(tht),
        frames_per_visit: n,
    };
    assert_eq!(
        end_to_end(SOURCE, &[hop(20, 3, 4), hop(10, 1, 4), hop(50, 2, 23)]),
        Err(BoundError::Underreserved {
            hop: 2,
            needed: 24,
            reserved: 23
        })
    );
    let b = end_to_end(SOURCE, &[hop(20, 3, 4), hop(10, 1, 4), hop(50, 2, 24)]).unwrap();
    assert_eq!(b.delay, Duration::from_millis(23 + 11 + 52));
    // A: 4 frames in 20 ms; B: one A visit starts in any (10 + 3) ms < 20 ms window;
    // C: B's visits start 10 ms apart, (50 + 1) / 10 → 6 visits of 4.
    let needed: Vec<u64> = b.hops.iter().map(|h| h.frames_needed).collect();
    assert_eq!(needed, vec![4, 4, 24]);
    let buffers: Vec<u64> = b.hops.iter().map(|h| h.buffer_frames).collect();
    assert_eq!(buffers, vec![5, 4, 24]);
}
