//! ARP: answering for the management IP, snooping into the internal cache, and EtheReal §3.4's
//! probing for unknown destinations with held frames.

use super::*;

const ZERO_MAC: Address = Address([0; 6]);

#[test]
fn arp_request_for_the_management_ip_is_answered_not_flooded() {
    let mut sw = switch(3);
    let request = arp_frame(Address::BROADCAST, A, 1, A, IP_A, ZERO_MAC, MGMT_IP);
    sw.handle_frame(ms(0), PortId(1), &request);
    let out = drain_all(&mut sw, ms(0));
    let reply = arp_frame(A, SWITCH_MAC, 2, SWITCH_MAC, MGMT_IP, A, IP_A);
    assert_eq!(out, vec![vec![], vec![reply], vec![]]);
    assert_eq!(sw.stats().arp_replies_sent, 1);
    assert_eq!(sw.stats().flooded, 0);
    // The asker is learnt and cached.
    assert_eq!(sw.lookup(A, ms(0)), Some(PortId(1)));
    assert_eq!(sw.arp_lookup(IP_A), Some(A));
    // Also when the request is unicast to the switch (a refresh).
    let unicast = arp_frame(SWITCH_MAC, A, 1, A, IP_A, SWITCH_MAC, MGMT_IP);
    sw.handle_frame(ms(1), PortId(1), &unicast);
    assert_eq!(drain(&mut sw, ms(1), 1).len(), 1);
    assert_eq!(sw.stats().arp_replies_sent, 2);
    assert_eq!(sw.stats().to_switch_arp, 2);
    assert_counters_consistent(&sw);
}

#[test]
fn other_arp_is_snooped_and_forwarded() {
    let mut sw = switch(3);
    // A asks for B: flooded, and A's mapping is cached.
    let request = arp_frame(Address::BROADCAST, A, 1, A, IP_A, ZERO_MAC, IP_B);
    sw.handle_frame(ms(0), PortId(0), &request);
    assert_eq!(
        drain_all(&mut sw, ms(0)),
        vec![vec![], vec![request.clone()], vec![request]]
    );
    // B answers A (known unicast): forwarded, and B's mapping is cached.
    let reply = arp_frame(A, B, 2, B, IP_B, A, IP_A);
    sw.handle_frame(ms(1), PortId(2), &reply);
    assert_eq!(drain_all(&mut sw, ms(1)), vec![vec![reply], vec![], vec![]]);
    // A probe (sender IP 0.0.0.0) is not cached.
    sw.handle_frame(
        ms(2),
        PortId(1),
        &arp_frame(
            Address::BROADCAST,
            C,
            1,
            C,
            Ipv4Addr::UNSPECIFIED,
            ZERO_MAC,
            IP_A,
        ),
    );
    assert_eq!(
        sw.arp_cache(),
        vec![
            ArpEntry {
                ip: IP_A,
                mac: A.to_string()
            },
            ArpEntry {
                ip: IP_B,
                mac: B.to_string()
            },
        ]
    );
    assert_eq!(sw.stats().arp_replies_sent, 0);
    assert_counters_consistent(&sw);
}

#[test]
fn switch_without_management_ip_floods_requests_for_any_ip() {
    let mut cfg = config(2);
    cfg.mgmt_ip = None;
    let mut sw = Switch::new(cfg, Instant::ZERO).expect("valid configuration");
    let request = arp_frame(Address::BROADCAST, A, 1, A, IP_A, ZERO_MAC, MGMT_IP);
    sw.handle_frame(ms(0), PortId(0), &request);
    assert_eq!(drain_all(&mut sw, ms(0)), vec![vec![], vec![request]]);
    assert_eq!(sw.stats().arp_replies_sent, 0);
}

/// The probe EtheReal §3.4 says the switch sends out of `port` for `ip`.
fn expected_probe(port: usize, ip: Ipv4Addr) -> Vec<u8> {
    arp_frame(
        Address::BROADCAST,
        port_mac(port),
        1,
        port_mac(port),
        Ipv4Addr::UNSPECIFIED,
        ZERO_MAC,
        ip,
    )
}

#[test]
fn unknown_unicast_is_held_probed_and_released_in_order() {
    let mut sw = switch(3);
    let first = ip_frame(B, A, IP_B, 1);
    let second = ip_frame(B, A, IP_B, 2);
    sw.handle_frame(ms(0), PortId(0), &first);
    sw.handle_frame(ms(1), PortId(0), &second);
    assert_eq!(sw.pending_len(), 2);
    assert_eq!(sw.stats().held, 2);
    assert_eq!(
        sw.stats().arp_probes_sent,
        1,
        "one probe per IP while it is outstanding"
    );
    // The probe: broadcast, from the port's MAC, sender IP 0.0.0.0, target MAC zero, target IP
    // the held packet's destination; out of every port but the ingress port.
    let out = drain_all(&mut sw, ms(1));
    assert_eq!(
        out,
        vec![
            vec![],
            vec![expected_probe(1, IP_B)],
            vec![expected_probe(2, IP_B)]
        ]
    );

    // B answers the probe on port 2, to port 2's MAC: B is learnt, the held frames go out in order.
    let answer = arp_frame(
        port_mac(2),
        B,
        2,
        B,
        IP_B,
        port_mac(2),
        Ipv4Addr::UNSPECIFIED,
    );
    sw.handle_frame(ms(5), PortId(2), &answer);
    assert_eq!(sw.pending_len(), 0);
    assert_eq!(sw.stats().released, 2);
    assert_eq!(sw.stats().to_switch_arp, 1);
    assert_eq!(
        drain_all(&mut sw, ms(5)),
        vec![vec![], vec![], vec![first, second]]
    );
    assert_eq!(sw.arp_lookup(IP_B), Some(B));
    // From now on B is known unicast.
    let third = ip_frame(B, A, IP_B, 3);
    sw.handle_frame(ms(6), PortId(0), &third);
    assert_eq!(drain_all(&mut sw, ms(6)), vec![vec![], vec![], vec![third]]);
    assert_counters_consistent(&sw);
}

#[test]
fn held_frames_expire() {
    let mut sw = switch(2);
    sw.handle_frame(ms(0), PortId(0), &ip_frame(B, A, IP_B, 1));
    sw.handle_frame(ms(30), PortId(0), &ip_frame(B, A, IP_B, 2));
    // The oldest held frame expires at 100 ms; the ageing sweep is later (1 s).
    assert_eq!(
        sw.poll_timeout(),
        Some(ms(0)),
        "the probe is ready to go out"
    );
    drain_all(&mut sw, ms(0));
    assert_eq!(sw.poll_timeout(), Some(ms(100)));
    sw.handle_timeout(ms(99));
    assert_eq!(sw.pending_len(), 2);
    sw.handle_timeout(ms(100));
    assert_eq!(sw.pending_len(), 1);
    assert_eq!(sw.stats().drop_pending_timeout, 1);
    assert_eq!(sw.poll_timeout(), Some(ms(130)));
    // B shows up after the second frame's deadline but before the timer ran: still dropped.
    sw.handle_frame(
        ms(131),
        PortId(1),
        &eth(Address::BROADCAST, B, 0x88b5, &[0; 46]),
    );
    assert_eq!(sw.stats().drop_pending_timeout, 2);
    assert_eq!(sw.stats().released, 0);
    assert_eq!(drain(&mut sw, ms(131), 1), Vec::<Vec<u8>>::new());
    assert_counters_consistent(&sw);
}

#[test]
fn pending_capacity_overflow_drops() {
    let mut cfg = config(2);
    cfg.pending_capacity = 3;
    // The whole pool for the port: this is about the pool's own bound (the per-port share is
    // `rt_abuse::a_flood_to_unknown_destinations_fills_only_its_ports_share_of_held_frames`).
    cfg.rt.protect.host.pending_share_percent = 100;
    let mut sw = Switch::new(cfg, Instant::ZERO).expect("valid configuration");
    for tag in 0..5 {
        sw.handle_frame(ms(0), PortId(0), &ip_frame(B, A, IP_B, tag));
    }
    assert_eq!(sw.pending_len(), 3);
    assert_eq!(sw.stats().drop_pending_full, 2);
    // B learnt: the three held frames (tags 0, 1, 2) go out.
    sw.handle_frame(
        ms(1),
        PortId(1),
        &eth(Address::BROADCAST, B, 0x88b5, &[0; 46]),
    );
    let out = drain(&mut sw, ms(1), 1);
    assert_eq!(out[0], expected_probe(1, IP_B));
    let tags: Vec<u16> = out[1..]
        .iter()
        .map(|f| u16::from_be_bytes([f[18], f[19]]))
        .collect();
    assert_eq!(tags, vec![0, 1, 2]);
    assert_counters_consistent(&sw);
}

#[test]
fn no_duplicate_probe_until_the_previous_one_times_out() {
    let mut sw = switch(2);
    sw.handle_frame(ms(0), PortId(0), &ip_frame(B, A, IP_B, 1));
    sw.handle_frame(ms(50), PortId(0), &ip_frame(B, A, IP_B, 2));
    // A different IP gets its own probe.
    sw.handle_frame(ms(60), PortId(0), &ip_frame(C, A, IP_C, 3));
    assert_eq!(sw.stats().arp_probes_sent, 2);
    assert_eq!(
        drain(&mut sw, ms(60), 1),
        vec![expected_probe(1, IP_B), expected_probe(1, IP_C)]
    );
    sw.handle_frame(ms(99), PortId(0), &ip_frame(B, A, IP_B, 4));
    assert_eq!(sw.stats().arp_probes_sent, 2);
    // 100 ms after the first probe it is no longer outstanding: probe again.
    sw.handle_frame(ms(100), PortId(0), &ip_frame(B, A, IP_B, 5));
    assert_eq!(sw.stats().arp_probes_sent, 3);
    assert_eq!(drain(&mut sw, ms(100), 1), vec![expected_probe(1, IP_B)]);
    assert_counters_consistent(&sw);
}

#[test]
fn held_frame_whose_destination_is_on_the_ingress_port_is_dropped() {
    let mut sw = switch(2);
    sw.handle_frame(ms(0), PortId(0), &ip_frame(B, A, IP_B, 1));
    sw.handle_frame(
        ms(1),
        PortId(0),
        &eth(Address::BROADCAST, B, 0x88b5, &[0; 46]),
    );
    assert_eq!(sw.pending_len(), 0);
    assert_eq!(sw.stats().drop_same_port, 1);
    assert_eq!(sw.stats().released, 0);
    assert_counters_consistent(&sw);
}

#[test]
fn unprobeable_destination_ips_are_flooded() {
    let mut sw = switch(2);
    sw.handle_frame(ms(0), PortId(0), &ip_frame(B, A, Ipv4Addr::BROADCAST, 1));
    sw.handle_frame(
        ms(0),
        PortId(0),
        &ip_frame(B, A, Ipv4Addr::new(224, 0, 0, 1), 2),
    );
    assert_eq!(sw.stats().flooded, 2);
    assert_eq!(sw.stats().arp_probes_sent, 0);
}
