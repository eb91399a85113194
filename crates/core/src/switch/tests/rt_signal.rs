//! Signalling robustness on one switch driven by hand on virtual time (`docs/protocol.md` §5):
//! TEARDOWN retransmission until TEARDOWN_ACK, idempotent duplicate TEARDOWNs, REFRESH soft
//! state, per-hop setup latency, and the reporting accessors.

use rtlan_wire::control::{HelloRepr, Message, Packet, ProxyMacPlan, Repr, Role, SetupRepr};

use super::*;

/// The MAC of the (fake) downstream switch on port 1.
const NEXT: Address = Address([0x02, 0x5e, 0, 9, 1, 0]);
const PLAN: ProxyMacPlan = ProxyMacPlan::DEFAULT;

/// A control frame from `src` to the control MAC.
fn ctl(src: Address, repr: &Repr) -> Vec<u8> {
    let mut buf = vec![0u8; 128];
    let len = repr
        .emit_frame(src, PLAN.control_mac(), &mut buf)
        .expect("fits");
    buf.truncate(len.max(60));
    buf
}

/// The control messages among `frames`.
fn parse(frames: &[Vec<u8>]) -> Vec<Repr> {
    frames
        .iter()
        .filter_map(|f| {
            let payload = f.get(14..)?;
            Packet::new_checked(payload)
                .and_then(|p| Repr::parse(&p))
                .ok()
        })
        .collect()
}

fn setup_from_a(request_id: u32, id: u16, dst_ip: Ipv4Addr) -> Vec<u8> {
    let setup = SetupRepr {
        src_ip: IP_A,
        dst_ip,
        dst_port: 5004,
        src_port: 0,
        rate: 1_000_000,
        max_burst: 3028,
        max_packet: 1514,
        connection_id: id,
        hop_limit: 16,
    };
    ctl(A, &Repr::new(0, request_id, Message::Setup(setup)))
}

/// A 2-port switch whose port 1 hears a switch HELLO (so SETUPs go on downstream), with
/// `refresh_timeout`, and B's address known behind port 1.
fn two_hop(refresh_timeout: Duration) -> Switch {
    let mut cfg = config(2);
    cfg.rt.refresh_timeout = refresh_timeout;
    let mut sw = Switch::new(cfg, Instant::ZERO).expect("valid");
    let hello = Message::Hello(HelloRepr {
        role: Role::Switch,
        port: 0,
        mac: NEXT,
        management_ip: Ipv4Addr::new(198, 18, 255, 9),
    });
    sw.handle_frame(ms(0), PortId(1), &ctl(NEXT, &Repr::new(1, 1, hello)));
    let garp = arp_frame(Address::BROADCAST, B, 1, B, IP_B, Address([0; 6]), IP_B);
    sw.handle_frame(ms(0), PortId(1), &garp);
    drain_all(&mut sw, ms(0));
    sw
}

/// Sets up connection `id` (request `request_id`) from A through the switch; the fake next
/// switch answers SETUP_OK. Returns the id used downstream.
fn connect(sw: &mut Switch, now: Instant, request_id: u32, id: u16) -> u16 {
    sw.handle_frame(now, PortId(0), &setup_from_a(request_id, id, IP_B));
    let down = parse(&drain(sw, now, 1));
    let [Repr {
        request_id: down_request,
        message: Message::Setup(setup),
        ..
    }] = &down[..]
    else {
        panic!("expected one SETUP downstream, got {down:?}");
    };
    let ok = Message::SetupOk {
        connection_id: setup.connection_id,
        hops: 2,
    };
    sw.handle_frame(now, PortId(1), &ctl(NEXT, &Repr::new(2, *down_request, ok)));
    let up = parse(&drain(sw, now, 0));
    assert!(
        matches!(up[..], [Repr { message: Message::SetupOk { connection_id, hops: 2 }, .. }] if connection_id == id),
        "{up:?}"
    );
    setup.connection_id
}

fn teardown(hop: u8, request_id: u32, id: u16) -> Repr {
    Repr::new(hop, request_id, Message::Teardown { connection_id: id })
}

fn booked(sw: &Switch, port: u16) -> u64 {
    sw.admission()
        .port(PortId(port))
        .map_or(0, |b| b.booked_bps)
}

#[test]
fn lost_teardown_ack_is_retransmitted_with_backoff_until_acknowledged() {
    let mut sw = two_hop(Duration::ZERO);
    let id = PLAN.reserved;
    let out_id = connect(&mut sw, ms(1), 1, id);
    sw.handle_frame(ms(10), PortId(0), &ctl(A, &teardown(0, 2, id)));
    let up = parse(&drain(&mut sw, ms(10), 0));
    assert!(matches!(
        up[..],
        [Repr {
            request_id: 2,
            message: Message::TeardownAck { .. },
            ..
        }]
    ));
    let first = parse(&drain(&mut sw, ms(10), 1));
    let [Repr {
        request_id: down_request,
        message: Message::Teardown { connection_id },
        flags: 0,
        ..
    }] = first[..]
    else {
        panic!("expected one TEARDOWN downstream, got {first:?}");
    };
    assert_eq!(connection_id, out_id);
    // No ACK: resent after 100 ms, then after 200 ms more, flagged and with the same request id.
    for (at, expect) in [(109, 0), (110, 1), (309, 0), (310, 1)] {
        if sw.poll_timeout().is_some_and(|t| t <= ms(at)) {
            sw.handle_timeout(ms(at));
        }
        let again = parse(&drain(&mut sw, ms(at), 1));
        assert_eq!(again.len(), expect, "at {at} ms: {again:?}");
        for repr in again {
            assert_eq!(repr.request_id, down_request);
            assert_eq!(repr.flags, rtlan_wire::control::FLAG_RETRANSMISSION);
            assert_eq!(
                repr.message,
                Message::Teardown {
                    connection_id: out_id
                }
            );
        }
    }
    assert_eq!(sw.stats().signal.teardown_retransmits, 2);
    // The ACK arrives: nothing more is sent.
    let ack = Message::TeardownAck {
        connection_id: out_id,
    };
    sw.handle_frame(
        ms(320),
        PortId(1),
        &ctl(NEXT, &Repr::new(2, down_request, ack)),
    );
    for at in [700, 1500, 3000] {
        sw.handle_timeout(ms(at));
        assert!(drain(&mut sw, ms(at), 1).is_empty());
    }
    assert_eq!(sw.stats().signal.teardown_retransmits, 2);
    assert_eq!(sw.stats().signal.teardown_given_up, 0);
}

#[test]
fn unanswered_teardown_is_given_up_after_the_last_attempt() {
    let mut sw = two_hop(Duration::ZERO);
    let id = PLAN.reserved;
    connect(&mut sw, ms(1), 1, id);
    sw.handle_frame(ms(10), PortId(0), &ctl(A, &teardown(0, 2, id)));
    let mut sent = parse(&drain(&mut sw, ms(10), 1)).len();
    let mut now = ms(10);
    for _ in 0..20 {
        let Some(next) = sw.poll_timeout() else { break };
        now = next.max(now);
        if now > ms(10_000) {
            break;
        }
        sw.handle_timeout(now);
        let out = drain_all(&mut sw, now);
        sent += parse(&out[1])
            .iter()
            .filter(|r| matches!(r.message, Message::Teardown { .. }))
            .count();
    }
    assert_eq!(sent, usize::from(RtConfig::default().max_attempts));
    assert_eq!(sw.stats().signal.teardown_given_up, 1);
}

#[test]
fn duplicate_teardown_is_acknowledged_again_and_releases_nothing_twice() {
    let mut sw = two_hop(Duration::ZERO);
    let (id1, id2) = (PLAN.reserved, PLAN.reserved + 1);
    connect(&mut sw, ms(1), 1, id1);
    let one = booked(&sw, 1);
    let one_bytes = sw.rt_admitted_bytes(PortId(1));
    connect(&mut sw, ms(2), 2, id2);
    assert_eq!(booked(&sw, 1), 2 * one);
    assert_eq!(sw.ids_in_use(PortId(1)), 2);
    let mut dup = teardown(0, 3, id1);
    sw.handle_frame(ms(10), PortId(0), &ctl(A, &dup));
    dup.flags = rtlan_wire::control::FLAG_RETRANSMISSION;
    sw.handle_frame(ms(20), PortId(0), &ctl(A, &dup));
    let acks = parse(&drain(&mut sw, ms(20), 0));
    assert_eq!(acks.len(), 2, "{acks:?}");
    assert!(acks
        .iter()
        .all(|r| r.request_id == 3 && r.message == Message::TeardownAck { connection_id: id1 }));
    let down: Vec<_> = parse(&drain(&mut sw, ms(20), 1));
    assert_eq!(down.len(), 1, "forwarded once: {down:?}");
    assert_eq!(sw.stats().signal.teardowns, 1);
    assert_eq!(sw.connections().len(), 1);
    assert_eq!(
        booked(&sw, 1),
        one,
        "the other connection keeps its booking"
    );
    assert_eq!(sw.ids_in_use(PortId(1)), 1);
    assert_eq!(sw.rt_admitted_bytes(PortId(1)), one_bytes);
}

#[test]
fn teardown_from_downstream_releases_and_goes_upstream() {
    let mut sw = two_hop(Duration::ZERO);
    let id = PLAN.reserved;
    let out_id = connect(&mut sw, ms(1), 1, id);
    sw.handle_frame(ms(5), PortId(1), &ctl(NEXT, &teardown(2, 77, out_id)));
    let ack = parse(&drain(&mut sw, ms(5), 1));
    assert!(
        matches!(ack[..], [Repr { request_id: 77, message: Message::TeardownAck { connection_id }, .. }] if connection_id == out_id)
    );
    let up = parse(&drain(&mut sw, ms(5), 0));
    assert!(
        matches!(up[..], [Repr { message: Message::Teardown { connection_id }, .. }] if connection_id == id),
        "{up:?}"
    );
    assert!(sw.connections().is_empty());
    assert_eq!(booked(&sw, 1), 0);
    assert_eq!(sw.ids_in_use(PortId(1)), 0);
}

#[test]
fn refreshed_connection_survives_and_unrefreshed_one_expires_both_ways() {
    let timeout = Duration::from_secs(30);
    let mut sw = two_hop(timeout);
    let (kept, lost) = (PLAN.reserved, PLAN.reserved + 1);
    connect(&mut sw, ms(1), 1, kept);
    let lost_out = connect(&mut sw, ms(1), 2, lost);
    let mut request = 10;
    let mut expired_at = None;
    // 3 × the timeout, refreshing `kept` every 10 s; the sweep runs every second.
    for second in 1..=90u64 {
        let now = ms(second * 1000);
        if second % 10 == 0 {
            request += 1;
            let refresh = Message::Refresh {
                connection_id: kept,
            };
            sw.handle_frame(now, PortId(0), &ctl(A, &Repr::new(0, request, refresh)));
        }
        sw.handle_timeout(now);
        let up = parse(&drain(&mut sw, now, 0));
        let down = parse(&drain(&mut sw, now, 1));
        let torn_up = up.iter().any(|r| {
            r.message
                == Message::Teardown {
                    connection_id: lost,
                }
                && r.flags == 0
        });
        let torn_down = down.iter().any(|r| {
            r.message
                == Message::Teardown {
                    connection_id: lost_out,
                }
                && r.flags == 0
        });
        if torn_up || torn_down {
            assert!(torn_up && torn_down, "both ways at once: {up:?} {down:?}");
            assert!(expired_at.is_none(), "torn down once");
            expired_at = Some(second);
        }
    }
    // Not refreshed since 1 ms: released at the first sweep more than 30 s later.
    assert_eq!(expired_at, Some(31));
    assert_eq!(sw.stats().signal.refresh_expired, 1);
    let left = sw.connection_list(ms(90_000));
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].in_id, kept);
    assert!(left[0].since_refresh_ns <= 10_000_000_000);
    // The expired connection's id and bandwidth are free again.
    assert_eq!(sw.ids_in_use(PortId(1)), 1);
    assert_eq!(booked(&sw, 1), sw.rt_ports()[1].booked_bps);
    connect(&mut sw, ms(90_001), 99, lost);
    assert_eq!(sw.ids_in_use(PortId(1)), 2);
}

#[test]
fn zero_refresh_timeout_never_expires() {
    let mut sw = two_hop(Duration::ZERO);
    connect(&mut sw, ms(1), 1, PLAN.reserved);
    for second in [60, 600, 6000] {
        sw.handle_timeout(ms(second * 1000));
    }
    assert_eq!(sw.connections().len(), 1);
}

#[test]
fn setup_latency_separates_route_known_from_arp_query() {
    let mut sw = switch(2);
    // B unknown: the SETUP waits for the ARP probe's answer, which comes 7 ms later; SETUP_OK
    // leaves 250 µs after that.
    sw.handle_frame(ms(3), PortId(0), &setup_from_a(1, PLAN.reserved, IP_B));
    let probes = drain(&mut sw, ms(3), 1);
    assert_eq!(probes.len(), 1, "one probe towards B's side");
    let probe_mac = Address(probes[0][6..12].try_into().expect("6 bytes"));
    let reply = arp_frame(probe_mac, B, 2, B, IP_B, probe_mac, Ipv4Addr::UNSPECIFIED);
    sw.handle_frame(ms(10), PortId(1), &reply);
    assert_eq!(sw.connections().len(), 1);
    // Nothing is counted until the answer has left.
    assert!(sw.setup_latency().miss_ns.is_empty());
    let at = ms(10) + Duration::from_micros(250);
    assert_eq!(drain(&mut sw, at, 0).len(), 1, "SETUP_OK");
    // Now B is known: the next SETUP is answered at once, and its answer leaves 40 µs later.
    sw.handle_frame(ms(20), PortId(0), &setup_from_a(2, PLAN.reserved + 1, IP_B));
    assert_eq!(sw.connections().len(), 2);
    assert_eq!(
        drain(&mut sw, ms(20) + Duration::from_micros(40), 0).len(),
        1
    );
    let latency = sw.setup_latency();
    assert_eq!(latency.miss_ns, vec![7_250_000]);
    assert_eq!(latency.hit_ns, vec![40_000]);
    // The cumulative buckets: 40 µs in (25, 50] µs, 7.25 ms in (5, 10] ms.
    assert_eq!((latency.hit.count, latency.hit.sum_ns), (1, 40_000));
    assert_eq!(latency.hit.counts[2], 1, "{:?}", latency.hit);
    assert_eq!(latency.miss.counts[9], 1, "{:?}", latency.miss);
    assert_eq!(latency.hit.counts.len(), latency.hit.bounds_ns.len() + 1);
    let list = sw.connection_list(ms(20));
    assert_eq!(list.len(), 2);
    assert!(list[0].first_hop && list[0].last_hop);
    assert_eq!(list[0].out_id, None);
    assert_eq!(list[0].receiver_mac, Some(B.to_string()));
    assert_eq!((list[0].dst_ip, list[0].dst_port), (IP_B, 5004));
    // Flushing the ARP cache empties it and reports how much was there.
    let cached = sw.arp_cache().len();
    assert!(cached >= 1);
    assert_eq!(sw.flush_arp_cache(), cached);
    assert!(sw.arp_cache().is_empty());
    assert_eq!(sw.flush_arp_cache(), 0);
}

#[test]
fn a_setup_right_after_an_arp_flush_probes_again() {
    // Regression: the probe rate limit (one probe per address per pending timeout) outlived the
    // answer and the flush, so a SETUP shortly after `flush-arp` was never probed and failed.
    let mut sw = switch(2);
    sw.handle_frame(ms(3), PortId(0), &setup_from_a(1, PLAN.reserved, IP_B));
    let probes = drain(&mut sw, ms(3), 1);
    assert_eq!(probes.len(), 1);
    let probe_mac = Address(probes[0][6..12].try_into().expect("6 bytes"));
    let reply = arp_frame(probe_mac, B, 2, B, IP_B, probe_mac, Ipv4Addr::UNSPECIFIED);
    sw.handle_frame(ms(4), PortId(1), &reply);
    assert_eq!(sw.connections().len(), 1);
    let _ = drain(&mut sw, ms(4), 1);
    assert!(sw.flush_arp_cache() >= 1);
    // 10 ms later, well inside the 200 ms probe window: B must be probed again.
    sw.handle_frame(ms(14), PortId(0), &setup_from_a(2, PLAN.reserved + 1, IP_B));
    let probes = drain(&mut sw, ms(14), 1);
    assert_eq!(probes.len(), 1, "a fresh probe after the flush");
    let reply = arp_frame(probe_mac, B, 2, B, IP_B, probe_mac, Ipv4Addr::UNSPECIFIED);
    sw.handle_frame(ms(15), PortId(1), &reply);
    assert_eq!(sw.connections().len(), 2, "the second SETUP completes");
}

/// Connections that expire at the same sweep are released, and torn down, in (input port, input
/// id) order whatever order they were set up in — never in the order of a hash map.
#[test]
fn simultaneous_expiries_tear_down_in_connection_id_order() {
    let mut sw = two_hop(Duration::from_secs(30));
    // Set up in a scrambled order.
    let offsets: [u16; 12] = [7, 3, 11, 0, 9, 1, 10, 4, 6, 2, 8, 5];
    for (n, offset) in offsets.iter().enumerate() {
        let request_id = u32::try_from(n).expect("small") + 1;
        connect(&mut sw, ms(1), request_id, PLAN.reserved + offset);
    }
    let listed: Vec<u16> = sw.connection_list(ms(2)).iter().map(|c| c.in_id).collect();
    let sorted: Vec<u16> = (0..12).map(|n| PLAN.reserved + n).collect();
    assert_eq!(listed, sorted);
    let table: Vec<u16> = sw.connections().iter().map(|((_, id), _)| id).collect();
    assert_eq!(table, sorted);
    // Not refreshed: all expire at the sweep 31 s in.
    let now = ms(31_000);
    sw.handle_timeout(now);
    let torn: Vec<u16> = parse(&drain(&mut sw, now, 0))
        .iter()
        .filter_map(|r| match r.message {
            Message::Teardown { connection_id } => Some(connection_id),
            _ => None,
        })
        .collect();
    assert_eq!(torn, sorted);
    assert_eq!(sw.stats().signal.refresh_expired, 12);
}

/// Forwarded SETUPs queue behind each other and behind HELLOs on the downstream port: each
/// sample ends when its own frame leaves, not when the port's first control frame does.
#[test]
fn setup_latency_ends_when_the_setups_own_frame_leaves() {
    let mut sw = two_hop(Duration::ZERO);
    drain_all(&mut sw, ms(0));
    sw.handle_frame(ms(30), PortId(0), &setup_from_a(1, PLAN.reserved, IP_B));
    sw.handle_frame(ms(31), PortId(0), &setup_from_a(2, PLAN.reserved + 1, IP_B));
    // The first SETUP leaves at 32 ms, the second at 35 ms (one frame per poll).
    let mut buf = [0u8; MAX_FRAME_LEN];
    assert!(sw.poll_transmit(ms(32), PortId(1), &mut buf).is_some());
    assert_eq!(sw.setup_latency().hit_ns, vec![2_000_000]);
    let rest = drain(&mut sw, ms(35), 1);
    assert_eq!(rest.len(), 1, "the second SETUP");
    let latency = sw.setup_latency();
    assert_eq!(latency.hit_ns, vec![2_000_000, 4_000_000]);
    assert_eq!((latency.hit.count, latency.hit.sum_ns), (2, 6_000_000));
    assert!(latency.miss_ns.is_empty());
}

/// docs/fastpath.md "The protected control channel": the shell sees a SETUP waiting in the
/// control queue until it is polled out, and counts it when it is.
#[test]
fn control_frames_are_seen_waiting_and_counted_when_sent() {
    let mut sw = two_hop(Duration::ZERO);
    drain_all(&mut sw, ms(0));
    let before = sw.control_sent(PortId(1));
    assert!(!sw.control_waiting(PortId(1)));
    sw.handle_frame(ms(30), PortId(0), &setup_from_a(1, PLAN.reserved, IP_B));
    assert!(
        sw.control_waiting(PortId(1)),
        "the SETUP waits for the port"
    );
    assert!(!sw.control_waiting(PortId(9)), "no such port");
    let mut buf = [0u8; MAX_FRAME_LEN];
    assert!(sw.poll_transmit(ms(31), PortId(1), &mut buf).is_some());
    assert!(!sw.control_waiting(PortId(1)));
    assert_eq!(sw.control_sent(PortId(1)), before + 1);
}

/// docs/fastpath.md: a port is open to the fast path only while no reservation crosses it. The
/// SETUP's booking closes both ports in the call that receives it, before it is forwarded;
/// TEARDOWN (once the closed connection has drained) opens them again.
#[test]
fn fast_path_ports_close_while_a_reservation_crosses_them() {
    let mut sw = two_hop(Duration::ZERO);
    assert_eq!(sw.fast_path_closed(PortId(0)), None);
    assert_eq!(sw.fast_path_closed(PortId(1)), None);
    assert_eq!(sw.fast_path_closed(PortId(7)), Some("no such port"));
    sw.handle_frame(ms(1), PortId(0), &setup_from_a(1, PLAN.reserved, IP_B));
    assert_eq!(sw.fast_path_closed(PortId(1)), Some("reservations leave"));
    assert_eq!(sw.fast_path_closed(PortId(0)), Some("reservations enter"));
    let down = parse(&drain(&mut sw, ms(1), 1));
    let [Repr {
        request_id,
        message: Message::Setup(setup),
        ..
    }] = &down[..]
    else {
        panic!("one SETUP downstream: {down:?}");
    };
    let ok = Message::SetupOk {
        connection_id: setup.connection_id,
        hops: 2,
    };
    sw.handle_frame(ms(2), PortId(1), &ctl(NEXT, &Repr::new(2, *request_id, ok)));
    assert_eq!(sw.connections().len(), 1);
    assert_eq!(sw.fast_path_closed(PortId(1)), Some("reservations leave"));
    assert_eq!(sw.fast_path_closed(PortId(0)), Some("reservations enter"));
    // Closed: once nothing of it is left to send, both ports open again.
    sw.handle_frame(ms(10), PortId(0), &ctl(A, &teardown(0, 2, PLAN.reserved)));
    drain_all(&mut sw, ms(10));
    for at in [20, 100, 1000, 3000] {
        if sw.poll_timeout().is_some_and(|t| t <= ms(at)) {
            sw.handle_timeout(ms(at));
        }
        drain_all(&mut sw, ms(at));
    }
    assert_eq!(booked(&sw, 1), 0);
    assert_eq!(sw.fast_path_closed(PortId(0)), None);
    assert_eq!(sw.fast_path_closed(PortId(1)), None);
    // A link going down closes its port.
    sw.handle_link(ms(3000), PortId(1), false);
    assert_eq!(sw.fast_path_closed(PortId(1)), Some("link down"));
}

/// A paced port is the pacer's and never opens.
#[test]
fn a_paced_port_never_opens_to_the_fast_path() {
    let mut cfg = config(2);
    cfg.ports[1].medium = crate::node::Medium::FullDuplex {
        rate_bps: 100_000_000,
    };
    let sw = Switch::new(cfg, Instant::ZERO).expect("valid");
    assert_eq!(sw.fast_path_closed(PortId(0)), None);
    assert_eq!(sw.fast_path_closed(PortId(1)), Some("paced"));
}

/// The learning table's mirror: learnt and moved stations, the switch's own MAC never, a
/// proxy-plan source never, flushed stations forgotten.
#[test]
fn the_fdb_mirror_follows_learning_and_leaves_out_proxy_addresses() {
    let mut sw = switch(3);
    let c = Address([2, 0, 0, 0, 0, 0x0c]);
    sw.handle_frame(ms(1), PortId(0), &eth(B, A, 0x0800, &[0; 46]));
    assert_eq!(sw.track_fdb(ms(1)), vec![(A, PortId(0))]);
    sw.handle_frame(ms(2), PortId(1), &eth(A, B, 0x0800, &[0; 46]));
    sw.handle_frame(ms(3), PortId(1), &eth(A, B, 0x0800, &[0; 46]));
    let proxy = PLAN.mac_for(PLAN.reserved);
    sw.handle_frame(ms(3), PortId(2), &eth(A, proxy, 0x0800, &[0; 46]));
    sw.handle_frame(ms(4), PortId(2), &eth(B, c, 0x0800, &[0; 46]));
    sw.handle_frame(ms(5), PortId(2), &eth(B, A, 0x0800, &[0; 46]));
    assert_eq!(
        sw.fdb_sync(ms(5)),
        FdbSync::Changes(vec![
            FdbChange::Learnt(B, PortId(1)),
            FdbChange::Learnt(c, PortId(2)),
            FdbChange::Learnt(A, PortId(2)),
        ])
    );
    sw.handle_link(ms(6), PortId(1), false);
    assert_eq!(
        sw.fdb_sync(ms(6)),
        FdbSync::Changes(vec![FdbChange::Forgotten(B)])
    );
}
