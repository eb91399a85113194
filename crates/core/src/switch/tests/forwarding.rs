//! Destination classes (EtheReal §3.3), backward learning (§3.4), queue bounds, malformed input.

use super::*;

#[test]
fn broadcast_floods_to_every_port_but_the_ingress() {
    let mut sw = switch(4);
    let frame = eth(Address::BROADCAST, A, 0x88b5, &[7; 50]);
    sw.handle_frame(ms(0), PortId(2), &frame);
    let out = drain_all(&mut sw, ms(0));
    assert_eq!(out[0], vec![frame.clone()]);
    assert_eq!(out[1], vec![frame.clone()]);
    assert!(out[2].is_empty());
    assert_eq!(out[3], vec![frame.clone()]);
    assert_eq!(sw.stats().flooded, 1);
    // Multicast (group bit set, not broadcast) floods too.
    let mcast = eth(Address([0x01, 0, 0x5e, 0, 0, 1]), A, 0x0800, &[0; 46]);
    sw.handle_frame(ms(0), PortId(2), &mcast);
    let out = drain_all(&mut sw, ms(0));
    assert_eq!(
        out.iter().map(Vec::len).collect::<Vec<_>>(),
        vec![1, 1, 0, 1]
    );
    assert_counters_consistent(&sw);
}

#[test]
fn learnt_stations_get_unicast_to_their_port_only() {
    let mut sw = switch(3);
    sw.handle_frame(
        ms(0),
        PortId(0),
        &eth(Address::BROADCAST, A, 0x88b5, &[0; 46]),
    );
    sw.handle_frame(
        ms(0),
        PortId(1),
        &eth(Address::BROADCAST, B, 0x88b5, &[0; 46]),
    );
    drain_all(&mut sw, ms(0));
    let to_a = ip_frame(A, B, IP_A, 1);
    sw.handle_frame(ms(1), PortId(1), &to_a);
    let to_b = ip_frame(B, A, IP_B, 2);
    sw.handle_frame(ms(1), PortId(0), &to_b);
    let out = drain_all(&mut sw, ms(1));
    assert_eq!(out, vec![vec![to_a], vec![to_b], vec![]]);
    assert_eq!(sw.stats().forwarded, 2);
    assert_eq!(sw.lookup(A, ms(1)), Some(PortId(0)));
    let fdb = sw.fdb(ms(3));
    assert_eq!(
        fdb,
        vec![
            FdbEntry {
                mac: "02:00:00:00:00:0a".into(),
                port: 0,
                age_ns: 2_000_000
            },
            FdbEntry {
                mac: "02:00:00:00:00:0b".into(),
                port: 1,
                age_ns: 2_000_000
            },
        ]
    );
    assert_counters_consistent(&sw);
}

#[test]
fn station_move_updates_the_port() {
    let mut sw = switch(3);
    sw.handle_frame(
        ms(0),
        PortId(0),
        &eth(Address::BROADCAST, A, 0x88b5, &[0; 46]),
    );
    sw.handle_frame(
        ms(0),
        PortId(1),
        &eth(Address::BROADCAST, B, 0x88b5, &[0; 46]),
    );
    // A moves to port 2.
    sw.handle_frame(
        ms(5),
        PortId(2),
        &eth(Address::BROADCAST, A, 0x88b5, &[0; 46]),
    );
    drain_all(&mut sw, ms(5));
    let to_a = ip_frame(A, B, IP_A, 1);
    sw.handle_frame(ms(6), PortId(1), &to_a);
    assert_eq!(drain_all(&mut sw, ms(6)), vec![vec![], vec![], vec![to_a]]);
    assert_eq!(sw.lookup(A, ms(6)), Some(PortId(2)));
}

#[test]
fn stations_age_out() {
    let mut cfg = config(2);
    cfg.ageing_time = Duration::from_secs(10);
    cfg.unknown_unicast = UnknownUnicast::Flood;
    let mut sw = Switch::new(cfg, Instant::ZERO).expect("valid configuration");
    sw.handle_frame(
        ms(0),
        PortId(0),
        &eth(Address::BROADCAST, A, 0x88b5, &[0; 46]),
    );
    // Refreshed at 4 s.
    sw.handle_frame(
        ms(4000),
        PortId(0),
        &eth(Address::BROADCAST, A, 0x88b5, &[0; 46]),
    );
    assert_eq!(sw.lookup(A, ms(14_000)), Some(PortId(0)));
    assert_eq!(sw.fdb(ms(14_000)).len(), 1);
    assert_eq!(sw.lookup(A, ms(14_001)), None);
    assert!(sw.fdb(ms(14_001)).is_empty());
    drain_all(&mut sw, ms(14_001));
    // Once aged, a frame to A is unknown unicast again (flooded in this mode, to port 0 only as
    // it came in on port 1).
    sw.handle_frame(ms(14_001), PortId(1), &ip_frame(A, B, IP_A, 1));
    assert_eq!(sw.stats().flooded, 3);
    assert_eq!(
        drain_all(&mut sw, ms(14_001)),
        vec![vec![ip_frame(A, B, IP_A, 1)], vec![]]
    );
    // The periodic sweep runs from `poll_timeout`'s schedule and keeps the table small.
    let next = sw.poll_timeout().expect("ageing is always scheduled");
    assert!(next <= ms(1000));
    sw.handle_timeout(ms(14_002));
    assert!(sw.poll_timeout().expect("ageing is always scheduled") > ms(14_002));
    assert_eq!(
        sw.fdb(ms(14_002)).len(),
        1,
        "only B, learnt at 14.001 s, is left"
    );
}

#[test]
fn frames_back_out_of_their_ingress_port_are_dropped() {
    let mut sw = switch(2);
    sw.handle_frame(
        ms(0),
        PortId(0),
        &eth(Address::BROADCAST, A, 0x88b5, &[0; 46]),
    );
    sw.handle_frame(ms(0), PortId(0), &ip_frame(A, B, IP_A, 1));
    assert_eq!(sw.stats().drop_same_port, 1);
    assert_eq!(
        drain_all(&mut sw, ms(0)),
        vec![vec![], vec![eth(Address::BROADCAST, A, 0x88b5, &[0; 46])]]
    );
    assert_counters_consistent(&sw);
}

#[test]
fn non_arp_to_the_switch_is_discarded_and_never_learnt_over() {
    let mut sw = switch(3);
    sw.handle_frame(ms(0), PortId(0), &ip_frame(SWITCH_MAC, A, MGMT_IP, 1));
    sw.handle_frame(ms(0), PortId(0), &ip_frame(port_mac(2), A, MGMT_IP, 2));
    assert_eq!(sw.stats().drop_to_switch, 2);
    assert!(drain_all(&mut sw, ms(0)).iter().all(Vec::is_empty));
    // A frame claiming the switch's own MAC as source does not make it a station.
    sw.handle_frame(
        ms(0),
        PortId(1),
        &eth(Address::BROADCAST, SWITCH_MAC, 0x88b5, &[0; 46]),
    );
    assert_eq!(sw.lookup(SWITCH_MAC, ms(0)), None);
    sw.handle_frame(ms(0), PortId(0), &ip_frame(SWITCH_MAC, A, MGMT_IP, 3));
    assert_eq!(sw.stats().drop_to_switch, 3);
    assert_eq!(sw.fdb(ms(0)).len(), 1);
    assert_counters_consistent(&sw);
}

#[test]
fn flood_mode_floods_unknown_unicast() {
    let mut cfg = config(3);
    cfg.unknown_unicast = UnknownUnicast::Flood;
    let mut sw = Switch::new(cfg, Instant::ZERO).expect("valid configuration");
    let frame = ip_frame(B, A, IP_B, 1);
    sw.handle_frame(ms(0), PortId(1), &frame);
    assert_eq!(
        drain_all(&mut sw, ms(0)),
        vec![vec![frame.clone()], vec![], vec![frame]]
    );
    assert_eq!(sw.stats().arp_probes_sent, 0);
    assert_eq!(sw.pending_len(), 0);
}

#[test]
fn non_ipv4_unknown_unicast_is_flooded_in_probe_mode() {
    let mut sw = switch(3);
    let ipv6 = eth(B, A, 0x86dd, &[0x60; 60]);
    sw.handle_frame(ms(0), PortId(0), &ipv6);
    // IPv4 with a truncated header cannot be probed for either.
    let short_ip = eth(B, A, 0x0800, &[0x45, 0, 0]);
    sw.handle_frame(ms(0), PortId(0), &short_ip);
    assert_eq!(
        drain_all(&mut sw, ms(0)),
        vec![
            vec![],
            vec![ipv6.clone(), short_ip.clone()],
            vec![ipv6, short_ip]
        ]
    );
    assert_eq!(sw.stats().flooded, 2);
    assert_eq!(sw.stats().arp_probes_sent, 0);
    assert_counters_consistent(&sw);
}

#[test]
fn full_queue_drops_and_counts_per_port() {
    let mut cfg = config(3);
    cfg.nrt_queue_bytes = Some(1000);
    let mut sw = Switch::new(cfg, Instant::ZERO).expect("valid configuration");
    sw.handle_frame(
        ms(0),
        PortId(1),
        &eth(Address::BROADCAST, B, 0x88b5, &[0; 46]),
    );
    drain_all(&mut sw, ms(0));
    let frame = ip_frame(B, A, IP_B, 1); // 60 bytes
    assert_eq!(frame.len(), 60);
    for _ in 0..20 {
        sw.handle_frame(ms(1), PortId(0), &frame);
    }
    // 1000 / 60 = 16 frames fit.
    assert_eq!(sw.queue_len(PortId(1)), 16);
    assert_eq!(sw.stats().ports[1].drop_queue_full, 4);
    assert_eq!(sw.stats().ports[2].drop_queue_full, 0);
    assert_eq!(drain(&mut sw, ms(1), 1).len(), 16);
    // Room again after draining.
    sw.handle_frame(ms(2), PortId(0), &frame);
    assert_eq!(sw.queue_len(PortId(1)), 1);
    assert_counters_consistent(&sw);
}

#[test]
fn default_queue_bounds_follow_rate_and_cycle_time() {
    let mut cfg = config(4);
    cfg.ports[0].medium = Medium::FullDuplex {
        rate_bps: 100_000_000,
    }; // 2 × 100 Mbit/s × 10 ms = 250 000 bytes
    cfg.ports[1].medium = Medium::FullDuplex {
        rate_bps: 1_000_000,
    }; // 2 500 bytes, raised to the 64 KiB floor
    cfg.ports[2].medium = Medium::Unpaced; // unpaced: 4 MiB
    cfg.ports[3].medium = Medium::FullDuplex {
        rate_bps: 1_000_000_000,
    }; // 2 500 000 bytes
    let sw = Switch::new(cfg.clone(), Instant::ZERO).expect("valid configuration");
    assert_eq!(sw.queue_bound(PortId(0)), Some(250_000));
    assert_eq!(sw.queue_bound(PortId(1)), Some(MIN_NRT_QUEUE_BYTES));
    assert_eq!(sw.queue_bound(PortId(2)), Some(UNPACED_NRT_QUEUE_BYTES));
    assert_eq!(sw.queue_bound(PortId(3)), Some(2_500_000));
    assert_eq!(sw.queue_bound(PortId(4)), None);
    cfg.nrt_queue_bytes = Some(12_345);
    let sw = Switch::new(cfg, Instant::ZERO).expect("valid configuration");
    assert!((0..4).all(|p| sw.queue_bound(PortId(p)) == Some(12_345)));
}

#[test]
fn bad_configurations_are_refused() {
    let mut cfg = config(1);
    cfg.ports.clear();
    assert_eq!(
        Switch::new(cfg, Instant::ZERO).err(),
        Some(ConfigError::PortCount(0))
    );
    let mut cfg = config(2);
    cfg.ports[1].medium = Medium::FullDuplex { rate_bps: 0 };
    assert_eq!(
        Switch::new(cfg, Instant::ZERO).err(),
        Some(ConfigError::ZeroRate("p1".into()))
    );
    let mut cfg = config(2);
    cfg.ports[0].medium = Medium::FullDuplex {
        rate_bps: 1_000_000_000_000,
    };
    cfg.cycle_time = Duration::from_secs(1);
    assert!(matches!(
        Switch::new(cfg, Instant::ZERO),
        Err(ConfigError::QueueTooLarge { .. })
    ));
    let mut cfg = config(2);
    cfg.pending_capacity = MAX_PENDING_CAPACITY + 1;
    assert!(matches!(
        Switch::new(cfg, Instant::ZERO),
        Err(ConfigError::PendingTooLarge(_))
    ));
}

#[test]
fn malformed_frames_are_counted_and_ignored() {
    let mut sw = switch(3);
    sw.handle_frame(ms(0), PortId(0), &[]);
    sw.handle_frame(ms(0), PortId(0), &[0xff; 13]);
    sw.handle_frame(ms(0), PortId(0), &vec![0xff; MAX_FRAME_LEN + 1]);
    // Multicast source address.
    sw.handle_frame(
        ms(0),
        PortId(0),
        &eth(
            Address::BROADCAST,
            Address([0x01, 0, 0, 0, 0, 1]),
            0x0800,
            &[0; 46],
        ),
    );
    // A VLAN tag announced but cut off.
    sw.handle_frame(
        ms(0),
        PortId(0),
        &eth(Address::BROADCAST, A, 0x8100, &[0, 1]),
    );
    assert_eq!(sw.stats().drop_malformed, 5);
    assert_eq!(sw.stats().ports[0].rx_frames, 5);
    assert_eq!(sw.stats().ports[0].rx_bytes, 13 + 2049 + 60 + 16);
    // Nothing learnt from a malformed frame, nothing sent.
    assert!(sw.fdb(ms(0)).is_empty());
    assert!(drain_all(&mut sw, ms(0)).iter().all(Vec::is_empty));
    // A frame of exactly MAX_FRAME_LEN bytes is fine; so is a bare 14-byte header.
    sw.handle_frame(
        ms(0),
        PortId(0),
        &eth(Address::BROADCAST, A, 0x88b5, &[0; MAX_FRAME_LEN - 14]),
    );
    sw.handle_frame(ms(0), PortId(0), &eth(Address::BROADCAST, A, 0x88b5, &[]));
    assert_eq!(sw.stats().flooded, 2);
    // Port ids out of range.
    sw.handle_frame(ms(0), PortId(3), &eth(Address::BROADCAST, A, 0x88b5, &[]));
    assert_eq!(sw.stats().drop_bad_port, 1);
    let mut buf = [0u8; 64];
    assert_eq!(sw.poll_transmit(ms(0), PortId(9), &mut buf), None);
    assert_counters_consistent(&sw);
}

#[test]
fn too_small_transmit_buffer_discards_and_counts() {
    let mut sw = switch(2);
    let big = eth(Address::BROADCAST, A, 0x88b5, &[1; 200]);
    let small = eth(Address::BROADCAST, A, 0x88b5, &[2; 30]);
    sw.handle_frame(ms(0), PortId(0), &big);
    sw.handle_frame(ms(0), PortId(0), &small);
    let mut buf = [0u8; 100];
    assert_eq!(
        sw.poll_transmit(ms(0), PortId(1), &mut buf),
        Some(small.len())
    );
    assert_eq!(&buf[..small.len()], &small[..]);
    assert_eq!(sw.stats().ports[1].drop_tx_buffer, 1);
    assert_counters_consistent(&sw);
}

#[test]
fn vlan_tagged_frames_are_switched_intact() {
    let mut sw = switch(2);
    let mut tagged = eth(Address::BROADCAST, A, 0x8100, &[0x00, 0x05, 0x08, 0x00]);
    tagged.extend_from_slice(&ipv4(IP_A, IP_B, 1, 10));
    sw.handle_frame(ms(0), PortId(0), &tagged);
    assert_eq!(drain(&mut sw, ms(0), 1), vec![tagged]);
}
