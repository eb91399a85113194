//! Failure detection on virtual time (issue 12 item 3): a link of the path loses carrier, or a
//! neighbour switch goes silent; every connection through it is torn down both ways and the
//! sending application told `revoked` with the reason.

use std::time::Duration;

use rtlan_wire::control::TeardownReason;

use super::rt_net::*;
use super::*;
use crate::rtcd::Reply;

fn revoked(net: &Net, a: usize) -> Vec<TeardownReason> {
    net.h(a)
        .replies
        .iter()
        .filter_map(|r| match r {
            Reply::Revoked { reason, .. } => Some(*reason),
            _ => None,
        })
        .collect()
}

fn all_free(net: &Net, switches: &[usize]) {
    for &sw in switches {
        let s = net.sw(sw);
        assert!(s.connections().is_empty(), "switch {sw}");
        assert!(s
            .rt_ports()
            .iter()
            .all(|p| p.booked_bps == 0 && p.ids_in_use == 0));
    }
}

#[test]
fn carrier_loss_tears_the_path_down_both_ways_and_the_application_is_told_at_once() {
    let (mut net, a, _, s) = opened_chain3();
    let now = net.now;
    net.unlink(s[1], 1);
    net.sw_mut(s[1]).handle_link(now, PortId(1), false);
    net.sw_mut(s[2]).handle_link(now, PortId(0), false);
    // The TEARDOWN travels two links: no timer is involved, so it is there at once (the lab
    // measures the real time from carrier loss to the event).
    net.run_for(Duration::from_millis(1));
    assert_eq!(revoked(&net, a), [TeardownReason::LinkDown]);
    all_free(&net, &s);
    assert_eq!(net.sw(s[1]).stats().signal.link_down, 1);
    assert_eq!(net.sw(s[1]).stats().signal.failure_released, 1);
    assert_eq!(net.sw(s[2]).stats().signal.failure_released, 1);
    assert_eq!(
        net.h(a).rtcd.as_ref().map(|d| d.connection_count()),
        Some(0)
    );
    // A second "down" changes nothing; every TEARDOWN was acknowledged.
    net.sw_mut(s[1]).handle_link(now, PortId(1), false);
    net.run_for(Duration::from_secs(2));
    assert_eq!(net.sw(s[1]).stats().signal.link_down, 1);
    for &sw in &s[..2] {
        assert_eq!(
            net.sw(sw).stats().signal.teardown_given_up,
            0,
            "switch {sw}"
        );
    }
}

#[test]
fn a_silent_neighbour_is_detected_within_hello_misses_periods() {
    let (mut net, a, _, s) = opened_chain3();
    let cut = net.now;
    // The cable is cut without either side seeing carrier loss (a dead transceiver, a frozen
    // switch): only the missing HELLOs tell.
    net.unlink(s[1], 1);
    net.run_for(Duration::from_secs(2));
    assert!(revoked(&net, a).is_empty(), "not before 3 HELLO periods");
    net.run_for(Duration::from_secs(3));
    assert_eq!(revoked(&net, a), [TeardownReason::NeighbourLost]);
    all_free(&net, &s);
    assert_eq!(net.sw(s[1]).stats().signal.neighbour_lost, 1);
    assert_eq!(net.sw(s[2]).stats().signal.neighbour_lost, 1);
    // 3 periods of 1 s, checked once a second: at most 5 s after the last HELLO.
    assert!(net.now.saturating_duration_since(cut) <= Duration::from_secs(5));
}

#[test]
fn after_the_link_comes_back_a_new_connection_opens() {
    let (mut net, a, b, s) = opened_chain3();
    let now = net.now;
    net.unlink(s[1], 1);
    net.sw_mut(s[1]).handle_link(now, PortId(1), false);
    net.sw_mut(s[2]).handle_link(now, PortId(0), false);
    net.run_for(Duration::from_millis(10));
    net.link(s[1], 1, s[2], 0);
    let now = net.now;
    net.sw_mut(s[1]).handle_link(now, PortId(1), true);
    net.sw_mut(s[2]).handle_link(now, PortId(0), true);
    net.run_for(Duration::from_millis(5));
    assert!(net.sw(s[1]).is_switch_facing(PortId(1), net.now));
    let ip_b = net.h(b).ip;
    net.announce(b);
    net.request(a, open_request(ip_b, 10_000_000));
    net.run_for(Duration::from_millis(600));
    assert!(
        matches!(net.h(a).replies.last(), Some(Reply::Opened { hops: 3, .. })),
        "{:?}",
        net.h(a).replies
    );
}

/// The replies host `a`'s client got after the first `skip`, without the payload details.
fn events(net: &Net, a: usize, skip: usize) -> Vec<String> {
    net.h(a)
        .replies
        .iter()
        .skip(skip)
        .map(|r| match r {
            Reply::Interrupted { reason, .. } => format!("interrupted {}", reason.name()),
            Reply::Recovered { hops, .. } => format!("recovered {hops}"),
            Reply::Revoked { reason, .. } => format!("revoked {}", reason.name()),
            other => format!("{other:?}"),
        })
        .collect()
}

fn one_connection_on(net: &Net, switches: &[usize]) -> bool {
    switches
        .iter()
        .all(|&sw| net.sw(sw).connections().len() == 1)
}

#[test]
fn the_hosts_own_link_down_interrupts_and_back_up_signals_it_again_under_the_same_id() {
    let (mut net, a, _, s) = opened_chain3();
    let before = net.h(a).replies.len();
    let ids: Vec<_> = net.sw(s[0]).connections().iter().map(|(k, _)| k).collect();
    // A's cable is pulled: both ends see the carrier go.
    let now = net.now;
    net.unlink(a, 0);
    net.sw_mut(s[0]).handle_link(now, PortId(0), false);
    net.daemon_link(a, false);
    net.run_for(Duration::from_millis(5));
    // The switch's TEARDOWN cannot reach A: the daemon told its client itself, and keeps the
    // connection (and its proxy IP) while the switches released theirs.
    assert_eq!(events(&net, a, before), ["interrupted link_down"]);
    all_free(&net, &s);
    assert_eq!(
        net.h(a).rtcd.as_ref().map(|d| d.connection_count()),
        Some(1)
    );
    // Refresh rounds pass while the link is down: nothing is lost, nothing revoked.
    net.run_for(Duration::from_secs(25));
    assert_eq!(events(&net, a, before), ["interrupted link_down"]);

    net.link(a, 0, s[0], 0);
    let now = net.now;
    net.sw_mut(s[0]).handle_link(now, PortId(0), true);
    net.daemon_link(a, true);
    net.run_for(Duration::from_millis(600));
    assert_eq!(
        events(&net, a, before),
        ["interrupted link_down", "recovered 3"]
    );
    assert!(one_connection_on(&net, &s));
    // Same connection id on A's link, so the same proxy IP for the application.
    let again: Vec<_> = net.sw(s[0]).connections().iter().map(|(k, _)| k).collect();
    assert_eq!(again, ids);
    // Settled: nothing doubled or dropped a while later, every TEARDOWN answered.
    net.run_for(Duration::from_secs(15));
    assert!(one_connection_on(&net, &s));
    assert_eq!(net.sw(s[0]).stats().signal.teardown_given_up, 0);
}

#[test]
fn a_flap_of_the_hosts_link_that_the_switch_missed_recovers_with_one_refresh() {
    let (mut net, a, _, s) = opened_chain3();
    let before = net.h(a).replies.len();
    let setups = net.sw(s[0]).stats().signal.setup_rx;
    // Only the host saw the flap (the switch polls its carriers every 20 ms).
    net.unlink(a, 0);
    net.daemon_link(a, false);
    net.run_for(Duration::from_millis(3));
    net.link(a, 0, s[0], 0);
    net.daemon_link(a, true);
    net.run_for(Duration::from_millis(5));
    assert_eq!(
        events(&net, a, before),
        ["interrupted link_down", "recovered 3"]
    );
    assert!(one_connection_on(&net, &s));
    assert_eq!(
        net.sw(s[0]).stats().signal.setup_rx,
        setups,
        "the path held it: no SETUP again"
    );
    // A repeated report of the same state changes nothing.
    net.daemon_link(a, true);
    net.run_for(Duration::from_millis(5));
    assert_eq!(events(&net, a, before).len(), 2);
}
