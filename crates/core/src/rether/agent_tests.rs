//! The agent on the emulated CSMA/CD segment: hosts' frames carried transparently, a 5-tuple
//! session reserved for an unmodified host's stream, the §3.1 API's data units with fragments,
//! sequence numbers and newest-wins rings, and a host that tries to forge protocol frames.

use std::time::Duration;

use rtlan_wire::ethernet::Address;
use rtlan_wire::rether::{self, NodeId};

use super::*;
use crate::rether::test_frames::{host_ip, host_mac, ms, udp};
use crate::rether::Config;
use crate::segment::{Bus, BusConfig};

const RATE: u64 = 10_000_000;

fn station_mac(n: u16) -> Address {
    Address([2, 0, 0, 0, 1, n as u8])
}

/// `n` agents on one segment, each with a host represented by what the test injects on its
/// host port and collects from it.
struct Segment {
    agents: Vec<Agent>,
    bus: Bus,
    now: Instant,
    /// Per agent: (when, frame) delivered to its host.
    to_hosts: Vec<Vec<(Instant, Vec<u8>)>>,
    events: Vec<Vec<AgentEvent>>,
    /// Frames the medium delivers are dropped while this returns true.
    drop: Option<fn(&[u8]) -> bool>,
    /// Agents killed (SIGKILL in the lab): they neither hear nor send nor wake up again.
    dead: Vec<bool>,
}

impl Segment {
    fn new(n: u16) -> Segment {
        let agents: Vec<Agent> = (1..=n)
            .map(|i| {
                let mut c = Config::new(NodeId::new(i).unwrap(), station_mac(i), RATE);
                c.trt = Duration::from_millis(10);
                c.t_nrt = Duration::from_millis(2);
                Agent::new(AgentConfig::new(c))
            })
            .collect();
        Segment {
            bus: Bus::new(BusConfig::new(agents.len(), RATE)),
            to_hosts: vec![Vec::new(); agents.len()],
            events: vec![Vec::new(); agents.len()],
            dead: vec![false; agents.len()],
            agents,
            now: Instant::ZERO,
            drop: None,
        }
    }

    fn host_send(&mut self, i: usize, frame: &[u8]) {
        let now = self.now;
        self.agents[i].handle_frame(now, HOST, frame);
    }

    /// Runs until `end`, calling `each` at every step.
    fn run_until(&mut self, end: Instant, mut each: impl FnMut(&mut Segment)) {
        let mut buf = vec![0u8; 2048];
        while self.now < end {
            each(self);
            let now = self.now;
            for (i, agent) in self.agents.iter_mut().enumerate() {
                if self.dead[i] {
                    continue;
                }
                if agent.poll_timeout().is_some_and(|t| t <= now) {
                    agent.handle_timeout(now);
                }
                while let Some(len) = agent.poll_transmit(now, HOST, &mut buf) {
                    self.to_hosts[i].push((now, buf[..len].to_vec()));
                }
                while self.bus.queued(PortId(i as u16)) < 2 {
                    let Some(len) = agent.poll_transmit(now, SEGMENT, &mut buf) else {
                        break;
                    };
                    self.bus.handle_frame(now, PortId(i as u16), &buf[..len]);
                }
                while let Some(e) = agent.poll_event() {
                    self.events[i].push(e);
                }
            }
            self.bus.handle_timeout(now);
            for (j, agent) in self.agents.iter_mut().enumerate() {
                while let Some(len) = self.bus.poll_transmit(now, PortId(j as u16), &mut buf) {
                    if self.dead[j] || self.drop.is_some_and(|d| d(&buf[..len])) {
                        continue;
                    }
                    agent.handle_frame(now, SEGMENT, &buf[..len]);
                }
            }
            let mut next = end;
            for (a, _) in self.agents.iter().zip(&self.dead).filter(|(_, d)| !**d) {
                if let Some(t) = a.poll_timeout() {
                    next = next.min(t);
                }
            }
            if let Some(t) = self.bus.poll_timeout() {
                next = next.min(t);
            }
            self.now = next.max(now + Duration::from_micros(1)).min(end);
        }
    }

    fn admitted(&self, i: usize, session: u16) -> bool {
        self.events[i]
            .iter()
            .any(|e| matches!(e, AgentEvent::Admitted { session: s, .. } if *s == session))
    }
}

#[test]
fn hosts_frames_cross_the_segment_transparently_and_only_to_their_host() {
    let mut seg = Segment::new(3);
    // Until a host has sent, its agent does not know its MAC and passes it everything (its
    // NIC filters); host 3 announces itself first.
    let mut hello = udp(3, 1, 7000, 60, 0, 0);
    hello[0..6].copy_from_slice(&[0xff; 6]);
    hello[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
    seg.host_send(2, &hello);
    seg.run_until(ms(2), |_| {});
    // Host 1 talks to host 3; host 2 must not see it (its NIC would drop it), but a broadcast
    // reaches everyone.
    seg.host_send(0, &udp(1, 3, 7000, 200, 1, 0));
    seg.host_send(1, &udp(2, 1, 7000, 100, 2, 0));
    let mut bcast = udp(1, 3, 7000, 100, 3, 0);
    bcast[0..6].copy_from_slice(&[0xff; 6]);
    seg.host_send(0, &bcast);
    seg.run_until(ms(20), |_| {});
    let tags = |i: usize| -> Vec<u8> {
        seg.to_hosts[i]
            .iter()
            .filter(|(_, f)| f.len() > 42 && f[12..14] == [8, 0] && f[23] == 17)
            .map(|(_, f)| f[42])
            .collect()
    };
    assert_eq!(
        tags(2),
        vec![1, 3],
        "host 3 gets its frame and the broadcast"
    );
    assert_eq!(tags(0), vec![2], "host 1 gets host 2's frame");
    // Host 2 has sent, so its MAC is known: host 1's unicast to host 3 was filtered.
    assert_eq!(tags(1), vec![3], "host 2 only sees the broadcast");
    assert!(seg.agents[1].stats().filtered >= 1);
    // No host ever sees the protocol's own frames.
    for out in &seg.to_hosts {
        assert!(out
            .iter()
            .all(|(_, f)| f[12..14] != rether::ETHERTYPE.to_be_bytes()));
    }
    assert_eq!(seg.agents[0].station().mode(), Mode::Csma);
}

#[test]
fn an_unmodified_hosts_stream_rides_its_reservation_through_floods() {
    let mut seg = Segment::new(5);
    let flow = FlowKey {
        src: host_ip(1),
        dst: host_ip(4),
        protocol: 17,
        src_port: 0, // any source port (RFC 2205 §A.9)
        dst_port: 9000,
    };
    // 1.6 Mbit/s of 1000-byte frames: 2,000 bytes per 10 ms TRT.
    let session = seg.agents[0]
        .open(SendSpec {
            bytes_per_trt: 2_000,
            max_frame: 1000,
            receiver: None,
            flow: Some(flow),
            buffers: 4,
        })
        .expect("open");
    assert!(matches!(
        seg.agents[0].open(SendSpec {
            bytes_per_trt: 1,
            max_frame: 100,
            receiver: None,
            flow: Some(flow),
            buffers: 1,
        }),
        Err(ApiError::FlowTaken(s)) if s == session
    ));
    seg.agents[0].admit(ms(1), session).expect("admit");
    seg.run_until(ms(100), |_| {});
    assert!(seg.admitted(0, session), "{:?}", seg.events[0]);
    assert_eq!(seg.agents[0].station().mode(), Mode::Rether);

    let mut next = ms(100);
    let mut n = 0u32;
    let mut sent_at = Vec::new();
    seg.run_until(ms(1100), |seg| {
        while next <= seg.now {
            let f = udp(1, 4, 9000, 1000, 0x51, n);
            seg.host_send(0, &f);
            sent_at.push(next);
            n += 1;
            next += Duration::from_millis(5);
        }
        // Hosts 2 and 3 flood host 5 as fast as their agents take it.
        for i in [1usize, 2] {
            while seg.agents[i].station().nrt_queued() < 32 {
                let f = udp(i as u16 + 1, 5, 7000, 1500, 0xf0, 0);
                seg.host_send(i, &f);
            }
        }
    });
    let got: Vec<(u32, Duration)> = seg.to_hosts[3]
        .iter()
        .filter(|(_, f)| f.len() == 1000 && f[42] == 0x51)
        .map(|(t, f)| {
            let k = u32::from_be_bytes(f[43..47].try_into().unwrap());
            (k, t.saturating_duration_since(sent_at[k as usize]))
        })
        .collect();
    let stats = seg.agents[0].stats();
    eprintln!(
        "{} of {n} stream frames, agent 1 {stats:?}, bus {:?}",
        got.len(),
        seg.bus.stats()
    );
    assert!(
        stats.host_rt >= u64::from(n) - 1,
        "classified onto the session"
    );
    // Everything sent more than a rotation before the end arrived, in order, each within a
    // rotation plus its own transmission (10 ms + 0.8 ms), although two hosts flood.
    let expected = n - 3;
    assert!(got.len() as u32 >= expected, "{} < {expected}", got.len());
    assert!(got.windows(2).all(|w| w[0].0 < w[1].0), "in order");
    let worst = got.iter().map(|g| g.1).max().unwrap();
    assert!(worst <= Duration::from_micros(10_800), "worst {worst:?}");
    assert!(
        seg.to_hosts[4]
            .iter()
            .filter(|(_, f)| f[42] == 0xf0)
            .count()
            > 100,
        "the floods get the rest"
    );

    // Closing: the session leaves, its 5-tuple is ordinary traffic, the segment goes back to
    // CSMA.
    seg.agents[0].close(session).expect("close");
    let end = seg.now + Duration::from_millis(100);
    seg.run_until(end, |_| {});
    assert!(seg.events[0].contains(&AgentEvent::Closed { session }));
    assert!(seg.agents[0].sessions().is_empty());
    assert_eq!(seg.agents[3].station().mode(), Mode::Csma);
    let before = seg.agents[0].stats().host_nrt;
    seg.host_send(0, &udp(1, 4, 9000, 1000, 0x51, 0));
    assert_eq!(seg.agents[0].stats().host_nrt, before + 1);
}

#[test]
fn api_units_arrive_whole_in_order_and_newest_wins_when_unread() {
    let mut seg = Segment::new(3);
    let two = NodeId::new(2).unwrap();
    let one = NodeId::new(1).unwrap();
    let session = seg.agents[0]
        .open(SendSpec {
            bytes_per_trt: 8_000,
            max_frame: 1514,
            receiver: Some(two),
            flow: None,
            buffers: 2,
        })
        .expect("open");
    assert_eq!(
        seg.agents[0].send(session, b"x"),
        Err(ApiError::NotAdmitted(session))
    );
    seg.agents[1].listen(one, session, 3).expect("listen");
    assert!(matches!(
        seg.agents[1].listen(one, session, 3),
        Err(ApiError::Listening { .. })
    ));
    seg.agents[0].admit(ms(1), session).expect("admit");
    seg.run_until(ms(100), |_| {});
    assert!(seg.admitted(0, session));

    // A 3,500-byte unit takes three fragments (1,472 bytes each at most).
    let unit: Vec<u8> = (0..3_500u32).map(|i| (i % 251) as u8).collect();
    assert_eq!(seg.agents[0].send(session, &unit), Ok(0));
    assert_eq!(seg.agents[0].send(session, b"second"), Ok(1));
    assert_eq!(
        seg.agents[0].send(session, b"third"),
        Err(ApiError::BuffersFull(2)),
        "two buffers in flight"
    );
    assert_eq!(
        seg.agents[0].send(session, &vec![0; MAX_UNIT + 1]),
        Err(ApiError::TooLarge(MAX_UNIT + 1))
    );
    let end = seg.now + Duration::from_millis(30);
    seg.run_until(end, |_| {});
    assert!(
        seg.events[0].contains(&AgentEvent::BufferFree { session }),
        "a refused sender hears when a buffer frees"
    );
    let got = seg.agents[1].recv(one, session).unwrap().expect("unit 0");
    assert_eq!((got.unit, got.complete), (0, true));
    assert_eq!(got.data, unit);
    let got = seg.agents[1].recv(one, session).unwrap().expect("unit 1");
    assert_eq!(
        (got.unit, got.complete, &got.data[..]),
        (1, true, &b"second"[..])
    );
    assert_eq!(seg.agents[1].recv(one, session), Ok(None));
    // Nobody else took the DATA: agent 3 does not listen (it is not even addressed).
    assert_eq!(seg.agents[2].stats().units_received, 0);

    // Five units unread in a ring of three: the two oldest are overwritten.
    for k in 0..5u8 {
        loop {
            match seg.agents[0].send(session, &[k; 10]) {
                Ok(_) => break,
                Err(ApiError::BuffersFull(_)) => {
                    let end = seg.now + Duration::from_millis(5);
                    seg.run_until(end, |_| {});
                }
                Err(e) => panic!("{e}"),
            }
        }
    }
    let end = seg.now + Duration::from_millis(40);
    seg.run_until(end, |_| {});
    let kept: Vec<u8> = std::iter::from_fn(|| seg.agents[1].recv(one, session).unwrap())
        .map(|u| u.data[0])
        .collect();
    assert_eq!(kept, vec![2, 3, 4], "newest data wins");
    assert_eq!(seg.agents[1].stats().units_overwritten, 2);
}

#[test]
fn a_lost_fragment_makes_an_incomplete_unit_and_the_next_unit_is_whole() {
    let mut seg = Segment::new(2);
    let two = NodeId::new(2).unwrap();
    let one = NodeId::new(1).unwrap();
    let session = seg.agents[0]
        .open(SendSpec {
            bytes_per_trt: 8_000,
            max_frame: 1514,
            receiver: Some(two),
            flow: None,
            buffers: 4,
        })
        .unwrap();
    seg.agents[1].listen(one, session, 4).unwrap();
    seg.agents[0].admit(ms(1), session).unwrap();
    seg.run_until(ms(100), |_| {});
    // The medium loses the middle fragment of unit 0 (fragment 1 of 3).
    seg.drop = Some(|f: &[u8]| {
        f.len() > 44 && f[12..14] == rether::ETHERTYPE.to_be_bytes() && f[17] == 7 && f[39] == 1
    });
    seg.agents[0].send(session, &[7; 4000]).unwrap();
    let end = seg.now + Duration::from_millis(25);
    seg.run_until(end, |_| {});
    seg.drop = None;
    seg.agents[0].send(session, &[8; 100]).unwrap();
    let end = seg.now + Duration::from_millis(25);
    seg.run_until(end, |_| {});
    let a = seg.agents[1].recv(one, session).unwrap().expect("unit 0");
    assert_eq!((a.unit, a.complete, a.data.len()), (0, false, 4000 - 1472));
    let b = seg.agents[1].recv(one, session).unwrap().expect("unit 1");
    assert_eq!((b.unit, b.complete, b.data.len()), (1, true, 100));
    assert_eq!(seg.agents[1].stats().units_incomplete, 1);
}

#[test]
fn a_host_cannot_forge_protocol_frames() {
    let mut seg = Segment::new(2);
    // Host 2 sends a SWITCH_TO_CSMA and a JOIN as if it were a station.
    let mut buf = vec![0u8; 128];
    for message in [rether::Message::SwitchToCsma, rether::Message::Join] {
        let repr = rether::Repr {
            generation: 9,
            source: NodeId::new(1).unwrap(),
            dest: rether::Dest::All,
            message,
        };
        let len =
            rether::emit_frame(&repr, host_mac(2), rether::GROUP, &[], &mut buf).expect("emit");
        seg.host_send(1, &buf[..len]);
    }
    // And a frame too short for Ethernet.
    seg.host_send(1, &[0u8; 10]);
    seg.run_until(ms(10), |_| {});
    let s = seg.agents[1].stats();
    assert_eq!((s.host_rether_dropped, s.host_malformed), (2, 1));
    assert_eq!(seg.agents[0].station().stats().rx_ignored, 0);
}

#[test]
fn the_five_tuple_of_a_frame() {
    let f = udp(1, 4, 9000, 100, 0, 0);
    let key = flow_key(&ethernet::Frame::new_checked(&f[..]).unwrap()).unwrap();
    assert_eq!(
        key,
        FlowKey {
            src: host_ip(1),
            dst: host_ip(4),
            protocol: 17,
            src_port: 5000,
            dst_port: 9000
        }
    );
    // A later fragment has no ports.
    let mut frag = f.clone();
    frag[20..22].copy_from_slice(&0x0010u16.to_be_bytes());
    let key = flow_key(&ethernet::Frame::new_checked(&frag[..]).unwrap()).unwrap();
    assert_eq!((key.src_port, key.dst_port), (0, 0));
    // ARP is not IPv4.
    let mut arp = f;
    arp[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
    assert!(flow_key(&ethernet::Frame::new_checked(&arp[..]).unwrap()).is_none());
}

#[test]
fn open_refuses_what_it_cannot_carry() {
    let mut seg = Segment::new(1);
    let a = &mut seg.agents[0];
    let spec = SendSpec {
        bytes_per_trt: 1000,
        max_frame: 1000,
        receiver: None,
        flow: None,
        buffers: 2,
    };
    for bad in [
        SendSpec {
            bytes_per_trt: 0,
            ..spec.clone()
        },
        SendSpec {
            max_frame: 59,
            ..spec.clone()
        },
        SendSpec {
            max_frame: 1515,
            ..spec.clone()
        },
        SendSpec {
            buffers: 0,
            ..spec.clone()
        },
        SendSpec {
            buffers: MAX_BUFFERS + 1,
            ..spec.clone()
        },
    ] {
        assert!(matches!(a.open(bad), Err(ApiError::Invalid(_))));
    }
    assert_eq!(a.admit(Instant::ZERO, 9), Err(ApiError::NoSession(9)));
    assert_eq!(a.close(9), Err(ApiError::NoSession(9)));
    // 1.6 Mbit/s at a 10 ms TRT is 2,000 bytes per rotation.
    assert_eq!(a.bytes_per_trt(1_600_000), 2_000);
    assert_eq!(a.bytes_per_trt(1), 1);
}

/// Host 1 streams to host 4 on its reservation while station 3, which holds a reservation of
/// its own (never used), dies — at every millisecond of a rotation in turn. RETHER §2.4: the
/// survivors declare it dead, release its session, and host 1's stream loses nothing: its
/// frames wait on their session's queue while the token is stalled and leave, in order, once it
/// comes round again.
#[test]
fn a_stream_loses_nothing_when_a_station_with_a_reservation_dies_at_any_moment() {
    let flow = FlowKey {
        src: host_ip(1),
        dst: host_ip(4),
        protocol: 17,
        src_port: 0,
        dst_port: 9000,
    };
    let c_flow = FlowKey {
        src: host_ip(3),
        dst: host_ip(5),
        protocol: 17,
        src_port: 0,
        dst_port: 6000,
    };
    let spec = |flow, bytes_per_trt| SendSpec {
        bytes_per_trt,
        max_frame: 1100,
        receiver: None,
        flow: Some(flow),
        buffers: 4,
    };
    for offset_ms in 0..10u64 {
        for offset_us in [0u64, 250, 500, 750] {
            let mut seg = Segment::new(5);
            let a = seg.agents[0].open(spec(flow, 2_500)).expect("open a");
            let c = seg.agents[2].open(spec(c_flow, 700)).expect("open c");
            seg.agents[0].admit(ms(1), a).expect("admit a");
            seg.agents[2].admit(ms(1), c).expect("admit c");
            seg.run_until(ms(100), |_| {});
            assert!(seg.admitted(0, a) && seg.admitted(2, c));

            let kill_at = ms(300 + offset_ms) + Duration::from_micros(offset_us);
            let mut next = ms(100);
            let mut n = 0u32;
            seg.run_until(ms(700), |seg| {
                while next <= seg.now && next < ms(600) {
                    let f = udp(1, 4, 9000, 1000, 0x51, n);
                    seg.host_send(0, &f);
                    n += 1;
                    next += Duration::from_micros(5_320);
                }
                if seg.now >= kill_at && !seg.dead[2] {
                    seg.dead[2] = true;
                }
            });
            let got: Vec<u32> = seg.to_hosts[3]
                .iter()
                .filter(|(_, f)| f.len() == 1000 && f[42] == 0x51)
                .map(|(_, f)| u32::from_be_bytes(f[43..47].try_into().unwrap()))
                .collect();
            let deaths: u64 = [0usize, 1, 3, 4]
                .iter()
                .map(|&i| seg.agents[i].station().stats().deaths)
                .sum();
            let ctx = format!(
                "killed at {kill_at:?}: {} of {n} arrived, deaths {deaths}, agent 1 {:?} \
                 station 1 {:?}, bus {:?}",
                got.len(),
                seg.agents[0].stats(),
                seg.agents[0].station().stats(),
                seg.bus.stats()
            );
            assert_eq!(deaths, 1, "{ctx}");
            assert_eq!(got, (0..n).collect::<Vec<_>>(), "{ctx}");
        }
    }
}
