//! The scenarios: convergence, blocking the right port, failures, TCN, odd BPDUs.

use super::*;

/// The triangle A(0)–B(1)–C(2): A0–B0, A1–C0, B1–C1, all of cost 19.
fn triangle() -> Net {
    Net::new(3, &[((0, 0), (1, 0)), ((0, 1), (2, 0)), ((1, 1), (2, 1))])
}

#[test]
fn back_to_back_converges_after_twice_forward_delay() {
    let mut net = Net::new(2, &[((0, 0), (1, 0))]);
    net.assert_single_root(0);
    assert_eq!(net.bridges[1].root_port(), Some(PortId(0)));
    assert_eq!(net.bridges[1].root_path_cost(), COST);
    assert_eq!(net.state(1, 0), PortState::Listening);

    net.run_until(at(15));
    assert_eq!(net.state(0, 0), PortState::Learning);
    net.run_until(at(30) - Duration::from_nanos(1));
    assert_eq!(
        net.state(1, 0),
        PortState::Learning,
        "not before 2 x forward delay"
    );
    net.run_until(at(30));
    assert_eq!(net.ports_in(PortState::Forwarding), [(0, 0), (1, 0)]);
    assert_eq!(
        net.entered(1, 0, PortState::Forwarding, at(0)),
        Some(at(30))
    );
    assert!(net.events.contains(&(
        at(0),
        1,
        Event::RootChanged {
            root: net.bridges[0].bridge_id(),
            root_port: Some(PortId(0)),
        }
    )));
    // Steady state: the root's hello keeps B's information fresh.
    net.run_until(at(300));
    assert_eq!(net.ports_in(PortState::Forwarding).len(), 2);
    assert_eq!(net.bridges[1].stats().rx_discarded, 0);
}

#[test]
fn triangle_blocks_the_port_the_priority_vectors_say() {
    let mut net = triangle();
    net.run_until(at(60));
    net.assert_single_root(0);
    // On the B–C LAN both offer root path cost 19; B's lower bridge id makes B designated,
    // so C's port 1 is the one that blocks.
    assert_eq!(net.ports_in(PortState::Blocking), [(2, 1)]);
    assert_eq!(net.ports_in(PortState::Forwarding).len(), 5);
    assert_eq!(net.bridges[2].root_port(), Some(PortId(0)));

    // Make A–C expensive at C: C now reaches A through B (19 + 19 < 100), so C's port 0 is the
    // one to block (A stays designated on that LAN with cost 0).
    let mut net = Net::with(
        3,
        &[((0, 0), (1, 0)), ((0, 1), (2, 0)), ((1, 1), (2, 1))],
        |i, c| {
            if i == 2 {
                c.ports[0].path_cost = 100;
            }
        },
    );
    net.run_until(at(60));
    net.assert_single_root(0);
    assert_eq!(net.bridges[2].root_port(), Some(PortId(1)));
    assert_eq!(net.bridges[2].root_path_cost(), 2 * COST);
    assert_eq!(net.ports_in(PortState::Blocking), [(2, 0)]);
}

#[test]
fn bridge_priority_beats_address() {
    let mut net = Net::with(
        3,
        &[((0, 0), (1, 0)), ((0, 1), (2, 0)), ((1, 1), (2, 1))],
        |i, c| {
            if i == 2 {
                c.priority = 0x1000;
            }
        },
    );
    net.run_until(at(60));
    net.assert_single_root(2);
    // A–B LAN: both at cost 19 from C, A has the lower id: B's port 0 blocks.
    assert_eq!(net.ports_in(PortState::Blocking), [(1, 0)]);
}

#[test]
fn link_loss_on_the_forwarding_path_moves_to_the_blocked_port_in_twice_forward_delay() {
    let mut net = triangle();
    net.run_until(at(60));
    assert_eq!(net.state(2, 1), PortState::Blocking);
    let failed_at = net.now;
    net.fail_link(1, false); // A1–C0, C's root port
    assert_eq!(net.state(2, 0), PortState::Disabled);
    assert_eq!(net.bridges[2].root_port(), Some(PortId(1)));
    assert_eq!(net.state(2, 1), PortState::Listening);
    net.run_for(secs(60));
    let took_over = net.entered(2, 1, PortState::Forwarding, failed_at).unwrap();
    assert_eq!(took_over - failed_at, 2 * Timers::default().forward_delay);
    net.assert_single_root(0);
    assert_eq!(net.bridges[2].root_path_cost(), 2 * COST);
}

#[test]
fn carrier_loss_away_from_the_alternate_port_waits_for_max_age() {
    let mut net = triangle();
    net.run_until(at(61));
    let failed_at = net.now;
    // A0–B0 fails: B loses its root port and, designated on B–C, claims to be root. C ignores
    // that inferior news from its designated bridge until the stored information ages out.
    net.fail_link(0, false);
    assert!(net.bridges[1].is_root_bridge());
    assert_eq!(net.state(2, 1), PortState::Blocking);
    net.run_for(secs(120));
    net.assert_single_root(0);
    assert_eq!(net.bridges[1].root_port(), Some(PortId(1)));
    let took_over = net.entered(2, 1, PortState::Forwarding, failed_at).unwrap();
    let t = Timers::default();
    let elapsed = took_over - failed_at;
    let most = t.max_age - MESSAGE_AGE_INCREMENT + 2 * t.forward_delay;
    let least = most - t.hello_time;
    assert!(
        elapsed >= least && elapsed <= most,
        "took over after {elapsed:?}, expected {least:?}..={most:?}"
    );
}

#[test]
fn silent_root_failure_re_elects_after_max_age_then_forward_delays() {
    let mut net = triangle();
    net.run_until(at(61));
    let failed_at = net.now;
    // A dies without carrier loss at its neighbours: only ageing tells them.
    net.fail_link(0, true);
    net.fail_link(1, true);
    net.run_for(secs(120));
    net.bridges.remove(0);
    net.assert_single_root(0); // B, now index 0
    assert_eq!(net.bridges[1].root_port(), Some(PortId(1)));
    let took_over = net.entered(2, 1, PortState::Forwarding, failed_at).unwrap();
    let t = Timers::default();
    let elapsed = took_over - failed_at;
    // The last hello before the failure left up to one hello time (and the 1 s message age
    // increment of B's relay) of the information's life already spent.
    let most = t.max_age + 2 * t.forward_delay;
    let least = most - t.hello_time - MESSAGE_AGE_INCREMENT;
    assert!(
        elapsed >= least && elapsed <= most,
        "took over after {elapsed:?}, expected {least:?}..={most:?}"
    );
}

#[test]
fn topology_change_reaches_every_bridge_and_ends() {
    let mut net = triangle();
    net.run_until(at(200)); // start-up changes are over
    assert!(net.bridges.iter().all(|b| !b.topology_change()));
    let since = net.now;
    let tcn_before: Vec<u64> = net.bridges.iter().map(|b| b.stats().tx_tcn).collect();
    net.fail_link(1, false);
    // C lost a forwarding port: TCN to B, B relays to A, A sets TC in its BPDUs. Delivery is
    // instantaneous, but each relay waits for the hold timer the previous BPDU on that port
    // started (one hold time per hop): within one hello time every bridge has the flag.
    assert!(
        net.bridges[0].topology_change(),
        "the root sets TC on the TCN"
    );
    net.run_for(Timers::default().hello_time);
    for (i, b) in net.bridges.iter().enumerate() {
        assert!(b.topology_change(), "bridge {i}");
        assert_eq!(b.ageing_time(), Some(Timers::default().forward_delay));
        assert!(net
            .events
            .iter()
            .any(|(t, j, e)| *t >= since && *j == i && *e == Event::TopologyChange));
    }
    // Each notifier was acknowledged at once: one TCN each, no repeats.
    net.run_for(secs(5));
    let tcn: Vec<u64> = net.bridges.iter().map(|b| b.stats().tx_tcn).collect();
    assert_eq!(tcn[0], tcn_before[0], "the root sends no TCN");
    assert_eq!(tcn[1] - tcn_before[1], 1);
    assert_eq!(tcn[2] - tcn_before[2], 1);
    // The root keeps TC for max age + forward delay after the change, then everyone drops it
    // with the next hello. (C's port 1 reaching Forwarding 30 s later is no new change: C, now
    // a leaf, is designated for no LAN — §8.7.7.)
    net.run_for(secs(100));
    assert!(net.bridges.iter().all(|b| !b.topology_change()));
    assert!(net.bridges.iter().all(|b| b.ageing_time().is_none()));
    let ended = |i: usize| {
        net.events
            .iter()
            .filter(|(_, j, e)| *j == i && *e == Event::TopologyChangeEnded)
            .map(|(t, _, _)| *t)
            .next_back()
            .unwrap()
    };
    let t = Timers::default();
    assert!(net.entered(2, 1, PortState::Forwarding, since).is_some());
    assert_eq!(ended(0), since + t.max_age + t.forward_delay);
    assert!(ended(2) - ended(0) <= t.hello_time);
}

#[test]
fn root_link_recovery_restores_the_original_tree() {
    let mut net = triangle();
    net.run_until(at(60));
    net.fail_link(1, false);
    net.run_for(secs(60));
    net.links[1].carries = true;
    let now = net.now;
    net.bridges[0].handle_link(now, PortId(1), true);
    net.bridges[2].handle_link(now, PortId(0), true);
    net.run_for(secs(60));
    assert_eq!(net.ports_in(PortState::Blocking), [(2, 1)]);
    assert_eq!(net.bridges[2].root_port(), Some(PortId(0)));
}

#[test]
fn two_ports_of_one_bridge_on_one_lan_block_the_higher_port() {
    // A loop cable between B's own ports 1 and 2.
    let mut net = Net::new(2, &[((0, 0), (1, 0)), ((1, 1), (1, 2))]);
    net.run_until(at(60));
    assert_eq!(net.state(1, 1), PortState::Forwarding);
    assert_eq!(net.state(1, 2), PortState::Blocking);
}

#[test]
fn follows_a_linux_bridge_root() {
    // The kernel bridge's BPDU captured in rtlan-wire's tests: root 1000.0200000000b0, max age
    // 6 s, hello 1 s, forward delay 4 s.
    let frame: [u8; 52] = [
        0x01, 0x80, 0xc2, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0xb1, 0x00, 0x26, 0x42,
        0x42, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0xb0,
        0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0xb0, 0x80, 0x01, 0x00,
        0x00, 0x06, 0x00, 0x01, 0x00, 0x04, 0x00,
    ];
    let bpdu = parse_frame(&frame).unwrap();
    let config = BridgeConfig::new(mac(1), vec![PortConfig::with_cost(2); 2]);
    let mut b = Bridge::new(config, at(0)).unwrap();
    while b.poll_transmit().is_some() {}
    b.handle_bpdu(at(0), PortId(0), &bpdu);
    assert_eq!(b.root_id().to_string(), "1000.0200000000b0");
    assert_eq!(b.root_port(), Some(PortId(0)));
    assert_eq!(b.forward_delay(), secs(4));
    assert_eq!(b.max_age(), secs(6));
    // We relay on our designated port 1 with the root's timers once the hold timer of our own
    // first BPDU (sent at start) has run out: age 0 + 1 s elapsed + 1 s increment.
    assert_eq!(b.poll_transmit(), None);
    b.handle_timeout(at(1));
    let (port, relayed) = b.poll_transmit().unwrap();
    assert_eq!(port, PortId(1));
    let c = relayed.config().unwrap();
    assert_eq!((c.root_path_cost, c.message_age), (2, Time::from_secs(2)));
    assert_eq!(
        (c.max_age, c.forward_delay),
        (Time::from_secs(6), Time::from_secs(4))
    );
    // Without further BPDUs the kernel root's information ages out after its 6 s max age.
    b.handle_timeout(at(6) - Duration::from_nanos(1));
    assert!(!b.is_root_bridge());
    b.handle_timeout(at(6));
    assert!(b.is_root_bridge());
}

#[test]
fn odd_bpdus_are_discarded() {
    let config = BridgeConfig::new(mac(5), vec![PortConfig::with_cost(COST); 2]);
    let mut b = Bridge::new(config, at(0)).unwrap();
    let own = b.bridge_id();
    let better = BridgeId {
        priority: 0x1000,
        addr: mac(9),
    };
    // Message age not below max age.
    let mut stale = config_from(better, 0, better, 1);
    stale.message_age = stale.max_age;
    b.handle_bpdu(at(1), PortId(0), &Repr::Config(stale));
    // Our own BPDU looped back onto the port that sent it.
    let looped = config_from(own, 0, own, 1);
    b.handle_bpdu(at(1), PortId(0), &Repr::Config(looped));
    // An RST BPDU (we speak 802.1D-1998 STP, as the kernel does).
    b.handle_bpdu(
        at(1),
        PortId(0),
        &Repr::Rst(config_from(better, 0, better, 1)),
    );
    // A port that does not exist, and a port whose link is down.
    b.handle_bpdu(at(1), PortId(7), &Repr::Tcn);
    b.handle_link(at(1), PortId(1), false);
    b.handle_bpdu(
        at(1),
        PortId(1),
        &Repr::Config(config_from(better, 0, better, 1)),
    );
    assert_eq!(b.stats().rx_discarded, 5);
    assert!(b.is_root_bridge(), "none of them changed the root");
    b.handle_link(at(1), PortId(9), true);
    assert_eq!(b.port_state(PortId(9)), PortState::Disabled);

    // A worse BPDU on a port we are designated for is answered with ours, not adopted.
    b.handle_timeout(at(2)); // hello
    b.handle_timeout(at(3)); // its hold timer is over
    while b.poll_transmit().is_some() {}
    let worse = BridgeId {
        priority: 0xf000,
        addr: mac(1),
    };
    b.handle_bpdu(
        at(3),
        PortId(0),
        &Repr::Config(config_from(worse, 0, worse, 1)),
    );
    assert!(b.is_root_bridge());
    let (port, reply) = b.poll_transmit().unwrap();
    assert_eq!(port, PortId(0));
    assert_eq!(reply.config().unwrap().root_id, own);
    // The hold timer limits replies to one per second per port: a second one waits.
    b.handle_bpdu(
        at(3),
        PortId(0),
        &Repr::Config(config_from(worse, 0, worse, 1)),
    );
    assert_eq!(b.poll_transmit(), None);
    // At 4 s the hold timer ends and the next hello is due: still one BPDU, not two.
    b.handle_timeout(at(4));
    assert_eq!(b.poll_transmit().map(|(p, _)| p), Some(PortId(0)));
    assert_eq!(b.poll_transmit(), None);
}

#[test]
fn configuration_is_checked() {
    let ok = BridgeConfig::new(mac(1), vec![PortConfig::with_cost(4)]);
    assert!(Bridge::new(ok.clone(), at(0)).is_ok());
    let mut bad = ok.clone();
    bad.ports[0].path_cost = 0;
    assert_eq!(
        Bridge::new(bad, at(0)).err(),
        Some(ConfigError::ZeroPathCost(0))
    );
    let mut bad = ok.clone();
    bad.timers.max_age = secs(30); // 2 * (15 - 1) = 28 < 30
    assert_eq!(
        Bridge::new(bad, at(0)).err(),
        Some(ConfigError::TimerRelation)
    );
    let mut bad = ok.clone();
    bad.timers.forward_delay = secs(3);
    assert_eq!(
        Bridge::new(bad, at(0)).err(),
        Some(ConfigError::ForwardDelay(secs(3)))
    );
    let mut bad = ok;
    bad.ports = vec![PortConfig::with_cost(4); 4096];
    assert_eq!(
        Bridge::new(bad, at(0)).err(),
        Some(ConfigError::TooManyPorts(4096))
    );
    assert_eq!(PortConfig::cost_for_rate(10_000_000_000), 2);
    assert_eq!(PortConfig::cost_for_rate(100_000_000), 19);
}
