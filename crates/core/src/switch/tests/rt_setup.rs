//! Connection setup, data and teardown through real [`Rtcd`]s and switches on virtual time
//! (EtheReal §2.2, §2.3, §3.3, §3.4; `docs/protocol.md` §5).

use std::net::Ipv4Addr;
use std::time::Duration;

use proptest::prelude::*;
use rtlan_wire::control::{
    FailReason, Message, ProxyMacPlan, Repr, SetupRepr, FLAG_RETRANSMISSION, MAGIC, VERSION,
};
use rtlan_wire::ethernet::Address;

use super::rt_net::*;
use super::*;
use crate::rtcd::{ConnHandle, Reply, Request, RtcdError};

const RT_RATE: u64 = 10_000_000;

/// The `Opened` reply of `host`: (handle, proxy IP, proxy MAC, hops).
fn opened(net: &Net, host: usize) -> (ConnHandle, Ipv4Addr, Address, u8) {
    match net.h(host).replies.last() {
        Some(Reply::Opened {
            conn,
            proxy_ip,
            proxy_mac,
            hops,
            ..
        }) => (
            *conn,
            *proxy_ip,
            proxy_mac.expect("per-hop admission has a proxy MAC"),
            *hops,
        ),
        other => panic!("expected Opened, got {other:?}"),
    }
}

/// The single table entry of switch `sw`: ((in port, in id), entry).
fn only_entry(net: &Net, sw: usize) -> ((PortId, u16), rt::RtEntry) {
    let entries: Vec<_> = net.sw(sw).connections().iter().collect();
    assert_eq!(entries.len(), 1, "switch {sw} entries: {entries:?}");
    (entries[0].0, *entries[0].1)
}

fn booked(net: &Net, sw: usize) -> u64 {
    (0..net.sw(sw).port_count())
        .map(|p| {
            net.sw(sw)
                .admission()
                .port(PortId(p as u16))
                .map_or(0, |b| b.booked_bps)
        })
        .sum()
}

fn ids(net: &Net, sw: usize) -> u32 {
    (0..net.sw(sw).port_count())
        .map(|p| net.sw(sw).ids_in_use(PortId(p as u16)))
        .sum()
}

/// A(daemon) — S — B.
fn one_switch() -> (Net, usize, usize, usize) {
    let mut net = Net::new();
    let a = net.host(1, true);
    let s = net.switch(&[RATE, RATE]);
    let b = net.host(2, false);
    net.link(a, 0, s, 0);
    net.link(s, 1, b, 0);
    net.run_for(Duration::from_millis(5));
    (net, a, s, b)
}

/// A(daemon) — S1 — S2 — S3 — B, with C(daemon) on S2's port 2; S2's port 1 at `middle_rate`.
pub(super) fn chain(middle_rate: u64) -> (Net, [usize; 3], [usize; 3]) {
    chain_with(middle_rate, RtConfig::default().reshape_allowance)
}

/// [`chain`] with the first switch's reshape allowance set (zero: it only polices).
pub(super) fn chain_with(
    middle_rate: u64,
    reshape_allowance: Duration,
) -> (Net, [usize; 3], [usize; 3]) {
    let mut net = Net::new();
    let a = net.host(1, true);
    let s1 = net.switch_with(&[RATE, RATE], |c| {
        c.rt.reshape_allowance = reshape_allowance
    });
    let s2 = net.switch(&[RATE, middle_rate, RATE]);
    let s3 = net.switch(&[RATE, RATE]);
    let b = net.host(2, false);
    let c = net.host(3, true);
    net.link(a, 0, s1, 0);
    net.link(s1, 1, s2, 0);
    net.link(s2, 1, s3, 0);
    net.link(s3, 1, b, 0);
    net.link(s2, 2, c, 0);
    // HELLOs go out at start: the inter-switch ports become switch-facing.
    net.run_for(Duration::from_millis(5));
    assert!(net.sw(s2).is_switch_facing(PortId(0), net.now));
    assert!(net.sw(s2).is_switch_facing(PortId(1), net.now));
    assert!(!net.sw(s2).is_switch_facing(PortId(2), net.now));
    assert!(!net.sw(s3).is_switch_facing(PortId(1), net.now));
    (net, [a, b, c], [s1, s2, s3])
}

#[test]
fn host_switch_host_setup_then_data_reaches_the_receiver_rewritten() {
    let (mut net, a, s, b) = one_switch();
    let ip_b = net.h(b).ip;
    net.request(a, open_request(ip_b, RT_RATE));
    net.run_for(Duration::from_millis(50));
    let (_, proxy_ip, proxy_mac, hops) = opened(&net, a);
    assert_eq!(hops, 1);
    // B was unknown: the SETUP waited for an ARP probe's answer.
    assert_eq!(net.sw(s).stats().arp_probes_sent, 1);
    let ((in_port, in_id), entry) = only_entry(&net, s);
    assert_eq!(in_port, PortId(0));
    assert_eq!(ProxyMacPlan::DEFAULT.mac_for(in_id), proxy_mac);
    assert_eq!(entry.out_port, PortId(1));
    assert_eq!(entry.receiver_ip, Some(ip_b));
    assert_eq!(entry.receiver_mac, Some(net.h(b).mac));
    assert!(booked(&net, s) >= RT_RATE);

    let (mac_a, ip_a) = (net.h(a).mac, net.h(a).ip);
    for tag in 0..3 {
        net.send(a, udp_frame(mac_a, ip_a, proxy_mac, proxy_ip, tag));
    }
    net.run_for(Duration::from_millis(5));
    let got = &net.h(b).received;
    assert_eq!(got.len(), 3);
    for frame in got {
        assert_eq!(verified(frame), (net.h(b).mac, ip_b));
    }
    assert_eq!(net.sw(s).stats().rt.forwarded, 3);
    assert_eq!(net.sw(s).stats().rt.ip_rewrites, 3);
}

#[test]
fn three_switches_swap_ids_per_link() {
    let (mut net, [a, b, c], [s1, s2, s3]) = chain(RATE);
    let ip_b = net.h(b).ip;
    net.announce(b);
    net.run_for(Duration::from_millis(1));
    net.request(a, open_request(ip_b, RT_RATE));
    net.run_for(Duration::from_millis(50));
    let (_, proxy_a, mac_a_proxy, hops) = opened(&net, a);
    assert_eq!(hops, 3);
    // Ids chain link by link: each switch's output id is the next switch's input id.
    let ((p1, id1), e1) = only_entry(&net, s1);
    let ((p2, id2), e2) = only_entry(&net, s2);
    let ((p3, id3), e3) = only_entry(&net, s3);
    assert_eq!((p1, p2, p3), (PortId(0), PortId(0), PortId(0)));
    assert_eq!(ProxyMacPlan::DEFAULT.mac_for(id1), mac_a_proxy);
    assert_eq!((e1.out_id, e2.out_id), (id2, id3));
    assert_eq!(e1.receiver_ip, Some(ip_b), "first switch swaps the IP");
    assert_eq!((e2.receiver_ip, e3.receiver_ip), (None, None));
    assert_eq!((e1.receiver_mac, e2.receiver_mac), (None, None));
    assert_eq!(e3.receiver_mac, Some(net.h(b).mac));

    // A second connection, from C into S2: its id on C's link is C's first id, but S2→S3
    // already carries id2's successor, so S2 swaps it.
    net.request(c, open_request(ip_b, RT_RATE));
    net.run_for(Duration::from_millis(50));
    let (_, proxy_c, mac_c_proxy, hops) = opened(&net, c);
    assert_eq!(hops, 2);
    let in_c = ProxyMacPlan::DEFAULT
        .connection_id(&mac_c_proxy)
        .expect("conn id");
    let e_c = *net
        .sw(s2)
        .connections()
        .lookup(PortId(2), in_c)
        .expect("C's entry");
    assert_ne!(e_c.out_id, in_c, "ids are per link and swapped");
    assert_ne!(
        e_c.out_id, id3,
        "two connections on one link have different ids"
    );
    assert_eq!(e_c.receiver_ip, Some(ip_b));

    let (mac_a, ip_a) = (net.h(a).mac, net.h(a).ip);
    let (mac_c, ip_c) = (net.h(c).mac, net.h(c).ip);
    net.send(a, udp_frame(mac_a, ip_a, mac_a_proxy, proxy_a, 1));
    net.send(c, udp_frame(mac_c, ip_c, mac_c_proxy, proxy_c, 2));
    net.run_for(Duration::from_millis(5));
    let got = &net.h(b).received;
    assert_eq!(got.len(), 2);
    for frame in got {
        assert_eq!(verified(frame), (net.h(b).mac, ip_b));
    }
    assert_eq!(net.sw(s2).stats().rt.id_swaps, 2);
}

#[test]
fn admission_failure_at_the_middle_hop_releases_upstream() {
    // S2's port towards S3 runs at 10 Mbit/s: 6 Mbit/s real-time cap.
    let (mut net, [a, b, _], [s1, s2, s3]) = chain(10_000_000);
    let ip_b = net.h(b).ip;
    net.announce(b);
    net.run_for(Duration::from_millis(1));
    net.request(a, open_request(ip_b, RT_RATE));
    net.run_for(Duration::from_millis(50));
    match net.h(a).replies.last() {
        Some(Reply::Failed {
            error:
                RtcdError::Refused {
                    hop,
                    reason,
                    switch_ip,
                },
            ..
        }) => {
            assert_eq!(
                (*hop, *reason, *switch_ip),
                (2, FailReason::Bandwidth, sw_ip(s2))
            );
        }
        other => panic!("expected Refused, got {other:?}"),
    }
    for sw in [s1, s2, s3] {
        assert_eq!(booked(&net, sw), 0, "switch {sw} released its booking");
        assert_eq!(ids(&net, sw), 0, "switch {sw} released its ids");
        assert!(net.sw(sw).connections().is_empty());
        assert_eq!(net.sw(sw).setups_in_progress(), 0);
        assert_eq!(net.sw(sw).rt_admitted_bytes(PortId(1)), 0);
    }
    // Refused by the calculus before any booking: the flow's cycle work (r·T + L = 100 000 +
    // one frame wire bits) exceeds the 60 000-bit budget U·C·T of a 10 Mbit/s cyclic port.
    assert_eq!(net.sw(s2).stats().rt.admission_refusals, 0);
    assert_eq!(net.sw(s3).stats().signal.setup_rx, 0, "never reached S3");
}

#[test]
fn unknown_destination_is_refused_no_route() {
    let (mut net, a, s, _) = one_switch();
    net.request(a, open_request(Ipv4Addr::new(198, 18, 0, 99), RT_RATE));
    net.run_for(Duration::from_secs(2));
    match net.h(a).replies.last() {
        Some(Reply::Failed {
            error: RtcdError::Refused { hop, reason, .. },
            ..
        }) => assert_eq!((*hop, *reason), (1, FailReason::NoRoute)),
        other => panic!("expected NoRoute, got {other:?}"),
    }
    assert_eq!(booked(&net, s), 0);
    assert_eq!(net.sw(s).setups_in_progress(), 0);
}

/// A SETUP frame from host `mac` (hop 0) to `dst`, request id `request_id`, id `id`.
fn setup_frame(mac: Address, dst: Ipv4Addr, request_id: u32, id: u16, flags: u8) -> Vec<u8> {
    let mut repr = Repr::new(
        0,
        request_id,
        Message::Setup(SetupRepr {
            src_ip: Ipv4Addr::new(198, 18, 0, 1),
            dst_ip: dst,
            dst_port: 5004,
            src_port: 0,
            rate: RT_RATE,
            max_burst: 3028,
            max_packet: 1514,
            connection_id: id,
            hop_limit: 16,
        }),
    );
    repr.flags = flags;
    let mut buf = vec![0u8; 128];
    let len = repr
        .emit_frame(mac, ProxyMacPlan::DEFAULT.control_mac(), &mut buf)
        .expect("fits");
    buf.truncate(len.max(60));
    buf
}

#[test]
fn duplicate_setup_is_idempotent() {
    let mut net = Net::new();
    let a = net.host(1, false);
    let s = net.switch(&[RATE, RATE]);
    let b = net.host(2, false);
    net.link(a, 0, s, 0);
    net.link(s, 1, b, 0);
    net.announce(b);
    net.run_for(Duration::from_millis(1));
    let (mac_a, ip_b) = (net.h(a).mac, net.h(b).ip);
    net.send(a, setup_frame(mac_a, ip_b, 7, 0x20, 0));
    net.run_for(Duration::from_millis(1));
    let after_one = booked(&net, s);
    net.send(a, setup_frame(mac_a, ip_b, 7, 0x20, FLAG_RETRANSMISSION));
    net.run_for(Duration::from_millis(1));
    assert_eq!(booked(&net, s), after_one, "not admitted twice");
    assert_eq!(net.sw(s).connections().len(), 1);
    assert_eq!(net.sw(s).stats().signal.setup_duplicates, 1);
    let answers: Vec<_> = net
        .h(a)
        .control
        .iter()
        .filter(|r| !matches!(r.message, Message::Hello(_)))
        .cloned()
        .collect();
    assert_eq!(answers.len(), 2);
    assert_eq!(answers[0], answers[1], "the stored answer is resent");
    assert_eq!(
        answers[0].message,
        Message::SetupOk {
            connection_id: 0x20,
            hops: 1
        }
    );
    assert_eq!(answers[0].request_id, 7);
    // Another request id reusing the same input id is refused (malformed), not installed.
    net.send(a, setup_frame(mac_a, ip_b, 8, 0x20, 0));
    net.run_for(Duration::from_millis(1));
    assert_eq!(net.sw(s).connections().len(), 1);
    assert!(matches!(
        net.h(a).control.last().map(|r| r.message),
        Some(Message::SetupFail {
            reason: FailReason::Malformed,
            ..
        })
    ));
}

#[test]
fn teardown_clears_every_hop() {
    let (mut net, [a, b, _], [s1, s2, s3]) = chain(RATE);
    let ip_b = net.h(b).ip;
    net.announce(b);
    net.run_for(Duration::from_millis(1));
    net.request(a, open_request(ip_b, RT_RATE));
    net.run_for(Duration::from_millis(50));
    let (conn, ..) = opened(&net, a);
    for sw in [s1, s2, s3] {
        assert_eq!(net.sw(sw).connections().len(), 1);
        assert!(booked(&net, sw) > 0);
    }
    net.request(a, Request::Close { conn });
    net.run_for(Duration::from_millis(50));
    for sw in [s1, s2, s3] {
        assert!(net.sw(sw).connections().is_empty(), "switch {sw}");
        assert_eq!(booked(&net, sw), 0, "switch {sw}");
        assert_eq!(ids(&net, sw), 0, "switch {sw}");
        assert_eq!(net.sw(sw).stats().signal.teardowns, 1, "switch {sw}");
    }
    // The daemon got its TEARDOWN_ACK: no retransmission is pending.
    let teardowns = net.sw(s1).stats().signal.teardown_rx;
    net.run_for(Duration::from_secs(2));
    assert_eq!(net.sw(s1).stats().signal.teardown_rx, teardowns);
}

/// A sender that closes right after its last frame loses nothing: the frames still queued on
/// each switch go out at the reserved rate first, and the TEARDOWN follows them down the path
/// (it used to release the queue at once and overtake the frames from the control FIFO, so the
/// stream's tail was dropped — one datagram in 2,353 in the lab's ARP test).
#[test]
fn a_close_right_after_a_burst_delivers_the_burst_first() {
    let (mut net, [a, b, _], [s1, s2, s3]) = chain(RATE);
    let ip_b = net.h(b).ip;
    net.announce(b);
    net.run_for(Duration::from_millis(1));
    net.request(a, open_request(ip_b, RT_RATE));
    net.run_for(Duration::from_millis(50));
    let (conn, proxy_ip, proxy_mac, _) = opened(&net, a);
    let (mac_a, ip_a) = (net.h(a).mac, net.h(a).ip);
    // A whole burst (3,028 bytes, what the first switch's policer lets through back to back) of
    // 74-byte frames, then the close, on one link in that order, as the daemon sends the
    // TEARDOWN after the library flushed.
    let burst = 3028 / 74;
    for tag in 0..burst {
        net.send(a, udp_frame(mac_a, ip_a, proxy_mac, proxy_ip, tag as u8));
    }
    net.request(a, Request::Close { conn });
    net.run_for(Duration::from_millis(100));
    assert_eq!(
        net.sw(s1).stats().drop_policed,
        0,
        "the test's burst is too big"
    );
    assert_eq!(net.h(b).received.len(), burst, "the burst's tail was lost");
    assert!(
        net.sw(s1).stats().signal.close_drained >= 1,
        "the frames were not still queued at the close: the test tests nothing"
    );
    for sw in [s1, s2, s3] {
        let stats = net.sw(sw).stats();
        assert!(net.sw(sw).connections().is_empty(), "switch {sw}");
        assert_eq!(
            booked(&net, sw),
            0,
            "switch {sw}: booking held after the drain"
        );
        assert_eq!(
            ids(&net, sw),
            0,
            "switch {sw}: output id held after the drain"
        );
        assert_eq!(stats.signal.teardowns, 1, "switch {sw}");
        assert_eq!(stats.signal.close_drain_expired, 0, "switch {sw}");
        let ports = net.sw(sw).sched_ports(net.now);
        let dropped: u64 = ports.iter().map(|p| p.sched.rt_frames_dropped).sum();
        assert_eq!(dropped, 0, "switch {sw}");
    }
}

/// While a closed connection drains, its booking and output id stay held (admission still
/// counts what is still being sent) but its input id is free for the next connection.
#[test]
fn a_draining_connection_keeps_its_booking_until_its_queue_is_empty() {
    let (mut net, [a, b, _], [s1, ..]) = chain(RATE);
    let ip_b = net.h(b).ip;
    net.announce(b);
    net.run_for(Duration::from_millis(1));
    net.request(a, open_request(ip_b, RT_RATE));
    net.run_for(Duration::from_millis(50));
    let (conn, proxy_ip, proxy_mac, _) = opened(&net, a);
    let held = booked(&net, s1);
    let (mac_a, ip_a) = (net.h(a).mac, net.h(a).ip);
    for tag in 0..40u8 {
        net.send(a, udp_frame(mac_a, ip_a, proxy_mac, proxy_ip, tag));
    }
    net.request(a, Request::Close { conn });
    // Long enough for the TEARDOWN to arrive, too short for 40 frames at 10 Mbit/s (2.4 ms).
    net.run_for(Duration::from_micros(50));
    assert!(
        net.sw(s1).connections().is_empty(),
        "out of the table at once"
    );
    assert_eq!(
        booked(&net, s1),
        held,
        "booking released while frames still queued"
    );
    assert_eq!(ids(&net, s1), 1);
    net.run_for(Duration::from_millis(100));
    assert_eq!(booked(&net, s1), 0);
    assert_eq!(ids(&net, s1), 0);
}

#[test]
fn forged_id_from_another_port_is_dropped_and_counted() {
    let (mut net, [a, b, c], [_, s2, _]) = chain(RATE);
    let ip_b = net.h(b).ip;
    net.announce(b);
    net.run_for(Duration::from_millis(1));
    net.request(a, open_request(ip_b, RT_RATE));
    net.run_for(Duration::from_millis(50));
    let ((_, id_on_s1_s2), _) = only_entry(&net, s2);
    // C sends with the id that is valid only on S1→S2.
    let (mac_c, ip_c) = (net.h(c).mac, net.h(c).ip);
    let forged = ProxyMacPlan::DEFAULT.mac_for(id_on_s1_s2);
    let flooded = net.sw(s2).stats().flooded;
    net.send(c, udp_frame(mac_c, ip_c, forged, ip_b, 9));
    net.run_for(Duration::from_millis(5));
    assert!(net.h(b).received.is_empty());
    assert_eq!(net.sw(s2).stats().rt.unknown_id_drops, 1);
    assert_eq!(net.sw(s2).stats().flooded, flooded, "never flooded");
    assert_eq!(net.sw(s2).stats().rt.forwarded, 0);
}

#[test]
fn real_time_fifo_is_served_before_the_non_real_time_queue() {
    let (mut net, a, s, b) = one_switch();
    let ip_b = net.h(b).ip;
    net.request(a, open_request(ip_b, RT_RATE));
    net.run_for(Duration::from_millis(50));
    let (_, proxy_ip, proxy_mac, _) = opened(&net, a);
    let (mac_a, ip_a, mac_b) = (net.h(a).mac, net.h(a).ip, net.h(b).mac);
    // Hand the frames to the switch directly, without transmitting in between.
    let now = net.now;
    let sw = net.sw_mut(s);
    for tag in 0..3 {
        sw.handle_frame(now, PortId(0), &udp_frame(mac_a, ip_a, mac_b, ip_b, tag));
    }
    sw.handle_frame(
        now,
        PortId(0),
        &udp_frame(mac_a, ip_a, proxy_mac, proxy_ip, 0xee),
    );
    assert_eq!(
        (sw.queue_len(PortId(1)), sw.rt_queue_len(PortId(1))),
        (3, 1)
    );
    let mut buf = [0u8; MAX_FRAME_LEN];
    let mut order = Vec::new();
    let mut t = now;
    for _ in 0..100 {
        if sw.poll_transmit(t, PortId(1), &mut buf).is_some() {
            order.push(buf[19]); // the IP identification's low byte carries the tag
        }
        t += Duration::from_micros(50);
    }
    assert_eq!(order, vec![0xee, 0, 1, 2]);
}

#[test]
fn reserved_non_control_addresses_and_bad_messages_are_dropped() {
    let mut sw = Switch::new(rt_switch_config(0, &[RATE, RATE]), Instant::ZERO).expect("config");
    let plan = ProxyMacPlan::DEFAULT;
    let host = Address([0x02, 0, 0, 0, 0, 1]);
    // A reserved id other than the control id.
    sw.handle_frame(
        Instant::ZERO,
        PortId(0),
        &eth(plan.mac_for(3), host, 0x88b5, &[0; 46]),
    );
    // The control MAC with another EtherType.
    sw.handle_frame(
        Instant::ZERO,
        PortId(0),
        &eth(plan.control_mac(), host, 0x0800, &[0; 46]),
    );
    // The control MAC with a bad magic.
    sw.handle_frame(
        Instant::ZERO,
        PortId(0),
        &eth(plan.control_mac(), host, 0x88b5, &[0; 46]),
    );
    assert_eq!(sw.stats().drop_control, 3);
    assert_eq!(sw.stats().control_rx, 0);
    assert_eq!(sw.stats().flooded, 0);
}

/// A control message header of `kind` with `body` (length field covering the body).
fn raw_control(kind: u8, flags: u8, hop: u8, body: &[u8]) -> Vec<u8> {
    let mut m = MAGIC.to_vec();
    m.extend_from_slice(&[VERSION, kind, flags, hop]);
    m.extend_from_slice(&((12 + body.len()) as u16).to_be_bytes());
    m.extend_from_slice(&[0, 0, 0, 1]);
    m.extend_from_slice(body);
    m
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_control_frames_never_panic(
        frames in proptest::collection::vec(
            (0u16..3, 0u8..10, any::<u8>(), any::<u8>(), proptest::collection::vec(any::<u8>(), 0..48), any::<bool>()),
            1..20,
        ),
        steps in proptest::collection::vec(0u64..400, 1..20),
    ) {
        let mut sw = Switch::new(rt_switch_config(0, &[RATE, RATE, RATE]), Instant::ZERO)
            .expect("config");
        let plan = ProxyMacPlan::DEFAULT;
        let mut now = Instant::ZERO;
        let mut buf = [0u8; MAX_FRAME_LEN];
        for (i, (port, kind, flags, hop, body, raw)) in frames.iter().enumerate() {
            let payload = if *raw { body.clone() } else { raw_control(*kind, *flags & 3, *hop, body) };
            let src = Address([0x02, 0, 0, 0, 0, (i % 4) as u8 + 1]);
            sw.handle_frame(now, PortId(*port), &eth(plan.control_mac(), src, 0x88b5, &payload));
            now += Duration::from_millis(steps[i % steps.len()]);
            sw.handle_timeout(now);
            for p in 0..3 {
                while sw.poll_transmit(now, PortId(p), &mut buf).is_some() {}
            }
        }
        // Whatever happened, bookings match the installed connections and timers run out.
        for _ in 0..10 {
            now += Duration::from_secs(10);
            sw.handle_timeout(now);
        }
        prop_assert_eq!(sw.setups_in_progress(), 0);
        let booked: u64 = (0..3).map(|p| sw.admission().port(PortId(p)).map_or(0, |b| b.booked_bps)).sum();
        let held: u64 = sw.connections().iter().map(|(_, e)| rt::wire_rate(e.rate_bps, e.max_packet)).sum();
        prop_assert_eq!(booked, held);
    }
}

/// The control messages queued on `port` of `sw` at `now`.
fn sent_on(sw: &mut Switch, now: Instant, port: u16) -> Vec<Repr> {
    let mut buf = [0u8; MAX_FRAME_LEN];
    let mut out = Vec::new();
    while let Some(len) = sw.poll_transmit(now, PortId(port), &mut buf) {
        let frame = rtlan_wire::ethernet::Frame::new_checked(&buf[..len]).expect("frame");
        if let Ok(repr) =
            rtlan_wire::control::Packet::new_checked(frame.payload()).and_then(|p| Repr::parse(&p))
        {
            out.push(repr);
        }
    }
    out
}

#[test]
fn silent_downstream_switch_gets_retransmissions_then_setup_fails_and_releases() {
    let mut config = rt_switch_config(0, &[RATE, RATE]);
    config.rt.hello_interval = None;
    let mut sw = Switch::new(config, Instant::ZERO).expect("config");
    let plan = ProxyMacPlan::DEFAULT;
    let (host, next_switch, receiver) = (
        Address([0x02, 0, 0, 0, 0, 1]),
        sw_port_mac(9, 0),
        Address([0x02, 0, 0, 0, 0, 2]),
    );
    let receiver_ip = Ipv4Addr::new(198, 18, 0, 2);
    // Port 1 hears a switch HELLO, and the receiver is learnt behind it.
    let hello = Repr::new(
        1,
        1,
        Message::Hello(rtlan_wire::control::HelloRepr {
            role: rtlan_wire::control::Role::Switch,
            port: 0,
            mac: next_switch,
            management_ip: sw_ip(9),
        }),
    );
    let mut buf = vec![0u8; 128];
    let len = hello
        .emit_frame(next_switch, plan.control_mac(), &mut buf)
        .expect("fits");
    sw.handle_frame(Instant::ZERO, PortId(1), &buf[..len.max(60)]);
    let announce = arp_frame(
        Address::BROADCAST,
        receiver,
        1,
        receiver,
        receiver_ip,
        Address([0; 6]),
        receiver_ip,
    );
    sw.handle_frame(Instant::ZERO, PortId(1), &announce);
    assert!(sw.is_switch_facing(PortId(1), Instant::ZERO));
    let _ = sent_on(&mut sw, Instant::ZERO, 0);

    sw.handle_frame(
        Instant::ZERO,
        PortId(0),
        &setup_frame(host, receiver_ip, 5, 0x30, 0),
    );
    let first = sent_on(&mut sw, Instant::ZERO, 1);
    assert_eq!(first.len(), 1);
    let Message::Setup(down) = first[0].message else {
        panic!("expected SETUP downstream, got {}", first[0]);
    };
    assert_eq!((first[0].hop, down.hop_limit, first[0].flags), (1, 15, 0));
    assert!(plan.is_connection_id(down.connection_id));
    assert_eq!(sw.ids_in_use(PortId(1)), 1);

    // Retransmissions at 100, 300, 700, 1500 ms, then the give-up at 3100 ms.
    let mut now = Instant::ZERO;
    let mut retransmits = 0;
    let mut upstream = Vec::new();
    for _ in 0..10 {
        let Some(t) = sw.poll_timeout() else { break };
        if t > ms(3200) {
            break;
        }
        now = t;
        sw.handle_timeout(now);
        for repr in sent_on(&mut sw, now, 1) {
            assert_eq!(repr.flags & FLAG_RETRANSMISSION, FLAG_RETRANSMISSION);
            assert_eq!(repr.request_id, first[0].request_id);
            retransmits += 1;
        }
        upstream.extend(sent_on(&mut sw, now, 0));
    }
    assert_eq!(retransmits, 4);
    assert_eq!(now, ms(3100));
    assert_eq!(upstream.len(), 1);
    assert!(matches!(
        upstream[0].message,
        Message::SetupFail {
            reason: FailReason::NoRoute,
            failed_hop: 2,
            connection_id: 0x30,
            ..
        }
    ));
    assert_eq!(sw.ids_in_use(PortId(1)), 0);
    assert_eq!(
        sw.admission().port(PortId(1)).map(|b| b.booked_bps),
        Some(0)
    );
    assert_eq!(sw.setups_in_progress(), 0);
}
