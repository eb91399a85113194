//! REFRESH soft state end to end on virtual time (`docs/protocol.md` §5): real [`Rtcd`]s and
//! switches; a refreshed connection lives on, an unrefreshed one is released by every switch and
//! revoked at the sending host.

use std::time::Duration;

use super::rt_net::*;
use crate::rtcd::Reply;

/// A(daemon, REFRESH every `refresh`) — S1 — S2 — B; returns (net, a, [s1, s2], b).
fn chain(refresh: Duration) -> (Net, usize, [usize; 2], usize) {
    let mut net = Net::new();
    let a = net.host_with(1, true, |c| c.refresh_period = refresh);
    let s1 = net.switch(&[RATE, RATE]);
    let s2 = net.switch(&[RATE, RATE]);
    let b = net.host(2, false);
    net.link(a, 0, s1, 0);
    net.link(s1, 1, s2, 0);
    net.link(s2, 1, b, 0);
    net.run_for(Duration::from_millis(5));
    let ip_b = net.h(b).ip;
    net.request(a, open_request(ip_b, 10_000_000));
    net.run_for(Duration::from_millis(50));
    assert!(
        matches!(net.h(a).replies.last(), Some(Reply::Opened { hops: 2, .. })),
        "{:?}",
        net.h(a).replies
    );
    (net, a, [s1, s2], b)
}

fn booked(net: &Net, sw: usize) -> u64 {
    net.sw(sw).rt_ports().iter().map(|p| p.booked_bps).sum()
}

#[test]
fn refreshed_connection_survives_three_timeouts() {
    let (mut net, a, switches, _) = chain(crate::rtcd::DEFAULT_REFRESH_PERIOD);
    // Default switch timeout 30 s: run 3 × that.
    net.run_for(Duration::from_secs(90));
    for sw in switches {
        assert_eq!(net.sw(sw).connections().len(), 1, "switch {sw}");
        assert_eq!(net.sw(sw).stats().signal.refresh_expired, 0);
        assert!(net.sw(sw).stats().signal.refresh_rx >= 8, "switch {sw}");
    }
    assert!(!net
        .h(a)
        .replies
        .iter()
        .any(|r| matches!(r, Reply::Revoked { .. })));
}

#[test]
fn unrefreshed_connection_expires_everywhere_and_is_signalled_again_once() {
    let (mut net, a, switches, _) = chain(Duration::ZERO);
    let before: Vec<u64> = switches.iter().map(|&sw| booked(&net, sw)).collect();
    assert!(before.iter().all(|&b| b > 0));
    net.run_for(Duration::from_secs(29));
    assert_eq!(net.sw(switches[0]).connections().len(), 1, "not yet");
    net.run_for(Duration::from_secs(4));
    for (sw, before) in switches.into_iter().zip(before) {
        let s = net.sw(sw);
        assert_eq!(
            s.stats().signal.teardowns,
            1,
            "released once on switch {sw}"
        );
        // Every TEARDOWN this switch sent was acknowledged: none is retransmitted or lost.
        assert_eq!(s.stats().signal.teardown_given_up, 0);
        assert_eq!(s.stats().signal.teardown_retransmits, 0);
        // Signalled again (reason EXPIRED asks for it): booked exactly once more, not twice.
        assert_eq!(s.connections().len(), 1, "switch {sw}");
        assert_eq!(booked(&net, sw), before, "switch {sw}: booked once");
        assert!(s.rt_ports().iter().map(|p| p.ids_in_use).sum::<u32>() <= 1);
    }
    let replies = &net.h(a).replies;
    let interrupted = replies
        .iter()
        .filter(|r| {
            matches!(r, Reply::Interrupted { reason, .. }
                if *reason == rtlan_wire::control::TeardownReason::Expired)
        })
        .count();
    let recovered = replies
        .iter()
        .filter(|r| matches!(r, Reply::Recovered { hops: 2, .. }))
        .count();
    assert_eq!((interrupted, recovered), (1, 1), "{replies:?}");
    assert!(!replies.iter().any(|r| matches!(r, Reply::Revoked { .. })));
    assert_eq!(
        net.h(a).rtcd.as_ref().map(|d| d.connection_count()),
        Some(1)
    );
}
