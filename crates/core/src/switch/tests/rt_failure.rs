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
