//! The spanning tree in the switch on virtual time (docs/stp.md §6): a loop of three rtlan
//! switches converges with one blocked port, floods every frame once, carries a reservation
//! along the tree, and after a link failure tears it down (TOPOLOGY_CHANGE) so the sending
//! host's daemon signals it again along the new path once that forwards.

use std::time::Duration;

use rtlan_wire::control::{Message, TeardownReason};
use rtlan_wire::ethernet::Address;

use super::rt_net::*;
use super::*;
use crate::rtcd::Reply;
use crate::stp::{PortState, Timers};

/// The smallest legal 802.1D timers (docs/stp.md §4): hello 1 s, forward delay 4 s, max age 6 s.
fn lab_timers() -> Timers {
    Timers {
        max_age: Duration::from_secs(6),
        hello_time: Duration::from_secs(1),
        forward_delay: Duration::from_secs(4),
        hold_time: Duration::from_secs(1),
    }
}

fn stp_on(config: &mut SwitchConfig) {
    config.stp = Some(StpConfig {
        timers: lab_timers(),
        ..StpConfig::default()
    });
}

/// Switches s0, s1, s2 (ports 0 and 1 to the other two, port 2 to a host) in a triangle:
/// s0p0–s1p0, s0p1–s2p0, s1p1–s2p1; host a (daemon) on s1, host b on s2. s0 has the lowest MAC,
/// so it is root; s1 and s2 reach it directly at equal cost, and on the s1–s2 link s1 (lower
/// id) is designated: s2p1 blocks.
fn triangle() -> (Net, [usize; 3], usize, usize) {
    let mut net = Net::new();
    let s = [0, 1, 2].map(|_| net.switch_with(&[RATE, RATE, RATE], stp_on));
    let a = net.host_with(1, true, |c| c.topology_resignal = Duration::from_secs(14));
    let b = net.host(2, false);
    net.link(s[0], 0, s[1], 0);
    net.link(s[0], 1, s[2], 0);
    net.link(s[1], 1, s[2], 1);
    net.link(a, 0, s[1], 2);
    net.link(b, 0, s[2], 2);
    (net, s, a, b)
}

fn state(net: &Net, sw: usize, port: u16) -> PortState {
    net.sw(sw)
        .stp_port_state(PortId(port))
        .expect("spanning tree on")
}

fn flooded(net: &Net, s: &[usize; 3]) -> u64 {
    s.iter().map(|&i| net.sw(i).stats().flooded).sum()
}

/// What host `h` received apart from BPDUs (a switch sends those on its host ports too).
fn data(net: &Net, h: usize) -> Vec<&Vec<u8>> {
    net.h(h)
        .received
        .iter()
        .filter(|f| f[..6] != rtlan_wire::stp::BRIDGE_GROUP_ADDRESS.0)
        .collect()
}

/// A broadcast UDP frame from host `from`.
fn broadcast(net: &Net, from: usize, tag: u8) -> Vec<u8> {
    let h = net.h(from);
    udp_frame(
        h.mac,
        h.ip,
        Address::BROADCAST,
        std::net::Ipv4Addr::new(198, 18, 255, 255),
        tag,
    )
}

#[test]
fn a_loop_of_three_switches_converges_with_one_blocked_port_and_floods_each_frame_once() {
    let (mut net, s, a, b) = triangle();
    // Before the ports forward (2 × forward delay) data goes nowhere.
    net.run_for(Duration::from_secs(1));
    let early = broadcast(&net, a, 1);
    net.send(a, early);
    net.run_for(Duration::from_millis(10));
    assert!(data(&net, b).is_empty());
    assert_eq!(flooded(&net, &s), 0);
    let status = net.sw(s[1]).stp_status().expect("on");
    assert_eq!(status.counters.discarded, 1);

    net.run_for(Duration::from_secs(9));
    let root = net.sw(s[0]).stp_status().expect("on").bridge_id;
    for &sw in &s {
        let status = net.sw(sw).stp_status().expect("on");
        assert_eq!(status.root_id, root, "switch {sw}");
    }
    assert_eq!(net.sw(s[0]).stp_status().expect("on").root_port, None);
    assert_eq!(net.sw(s[1]).stp_status().expect("on").root_port, Some(0));
    assert_eq!(net.sw(s[2]).stp_status().expect("on").root_port, Some(0));
    let mut blocked = Vec::new();
    for &sw in &s {
        for port in 0..3u16 {
            match state(&net, sw, port) {
                PortState::Forwarding => {}
                other => blocked.push((sw, port, other)),
            }
        }
    }
    assert_eq!(blocked, [(s[2], 1, PortState::Blocking)]);

    // One broadcast: each switch floods it exactly once, b gets one copy (no loop).
    let frame = broadcast(&net, a, 2);
    net.send(a, frame);
    net.run_for(Duration::from_secs(2));
    assert_eq!(flooded(&net, &s), 3);
    assert_eq!(data(&net, b).len(), 1);
    // The copy s1 sent on its designated port s1p1 died at the blocked s2p1.
    assert!(net.sw(s[2]).stp_status().expect("on").counters.discarded >= 1);
    // BPDUs flowed both ways and none were refused.
    for &sw in &s {
        let status = net.sw(sw).stp_status().expect("on");
        assert!(status.bpdu.tx_config > 0, "switch {sw}");
        assert_eq!(status.counters.bpdu_malformed, 0);
    }
}

#[test]
fn a_setup_arriving_on_a_blocked_port_is_refused() {
    let (mut net, s, _, _) = triangle();
    net.run_for(Duration::from_secs(10));
    assert_eq!(state(&net, s[2], 1), PortState::Blocking);
    let now = net.now;
    let setup = setup_repr(7, 1_000_000, std::net::Ipv4Addr::new(198, 18, 0, 2), 9);
    let frame = control_frame(sw_port_mac(s[1], 1), &setup);
    let sw = net.sw_mut(s[2]);
    sw.handle_frame(now, PortId(1), &frame);
    assert_eq!(sw.stp_status().expect("on").counters.setup_refused, 1);
    assert_eq!(sw.stats().signal.setup_rx, 0);
    let mut buf = [0u8; MAX_FRAME_LEN];
    let mut fails = 0;
    // Past the pacer's line-busy time of what was just queued.
    let later = now + Duration::from_millis(1);
    while let Some(len) = sw.poll_transmit(later, PortId(1), &mut buf) {
        if let Ok(repr) = rtlan_wire::control::Packet::new_checked(&buf[14..len])
            .and_then(|p| rtlan_wire::control::Repr::parse(&p))
        {
            if matches!(repr.message, Message::SetupFail { .. }) {
                fails += 1;
            }
        }
    }
    assert_eq!(fails, 1);
}

#[test]
fn after_a_link_failure_the_reservation_is_signalled_again_along_the_new_path() {
    let (mut net, s, a, b) = triangle();
    net.run_for(Duration::from_secs(10));
    net.announce(a);
    net.announce(b);
    net.run_for(Duration::from_millis(10));
    let ip_b = net.h(b).ip;
    net.request(a, open_request(ip_b, 10_000_000));
    net.run_for(Duration::from_millis(100));
    // Along the tree: s1 → s0 → s2, not over the blocked s1–s2 link.
    assert!(
        matches!(net.h(a).replies.last(), Some(Reply::Opened { hops: 3, .. })),
        "{:?}",
        net.h(a).replies
    );
    assert_eq!(net.sw(s[0]).connections().len(), 1);

    // s0–s2 loses carrier at both ends.
    let cut = net.now;
    net.unlink(s[0], 1);
    net.sw_mut(s[0]).handle_link(cut, PortId(1), false);
    net.sw_mut(s[2]).handle_link(cut, PortId(0), false);
    net.run_for(Duration::from_millis(1));
    assert!(
        net.h(a).replies.iter().any(|r| matches!(
            r,
            Reply::Interrupted {
                reason: TeardownReason::TopologyChange,
                ..
            }
        )),
        "{:?}",
        net.h(a).replies
    );
    for &sw in &s {
        assert!(net.sw(sw).connections().is_empty(), "switch {sw}");
    }
    assert!(net.sw(s[0]).stp_status().expect("on").counters.released >= 1);

    // s2p1 holds s1's information about the root: it becomes the root port and forwards after
    // 2 × forward delay; the daemon's retries (at most 1 s apart) then find the new path.
    let mut recovered_at = None;
    for _ in 0..150 {
        net.run_for(Duration::from_millis(100));
        if net
            .h(a)
            .replies
            .iter()
            .any(|r| matches!(r, Reply::Recovered { .. }))
        {
            recovered_at = Some(net.now.saturating_duration_since(cut));
            break;
        }
    }
    let took = recovered_at.expect("recovered");
    assert!(
        took >= Duration::from_secs(8) && took <= Duration::from_millis(9_200),
        "{took:?}"
    );
    assert_eq!(state(&net, s[2], 1), PortState::Forwarding);
    assert_eq!(net.sw(s[2]).stp_status().expect("on").root_port, Some(1));
    assert!(
        matches!(
            net.h(a).replies.last(),
            Some(Reply::Recovered { hops: 2, .. })
        ),
        "{:?}",
        net.h(a).replies
    );
    assert!(net.sw(s[0]).connections().is_empty());
    assert_eq!(net.sw(s[1]).connections().len(), 1);
    assert_eq!(net.sw(s[2]).connections().len(), 1);
    // During the topology change the learning table aged with forward delay.
    assert_eq!(net.sw(s[1]).fdb_ageing_time(), Duration::from_secs(4));
    net.run_for(Duration::from_secs(12));
    assert_eq!(net.sw(s[1]).fdb_ageing_time(), Duration::from_secs(300));
}

#[test]
fn without_spanning_tree_link_local_frames_are_flooded_as_before() {
    let mut net = Net::new();
    let sw = net.switch(&[RATE, RATE, RATE]);
    let a = net.host(1, false);
    let b = net.host(2, false);
    net.link(a, 0, sw, 0);
    net.link(b, 0, sw, 1);
    let mut frame = broadcast(&net, a, 3);
    frame[..6].copy_from_slice(&rtlan_wire::stp::BRIDGE_GROUP_ADDRESS.0);
    net.send(a, frame);
    net.run_for(Duration::from_millis(10));
    assert_eq!(net.sw(sw).stats().flooded, 1);
    assert_eq!(net.h(b).received.len(), 1);
    assert!(net.sw(sw).stp_status().is_none());
}
