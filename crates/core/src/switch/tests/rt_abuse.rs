//! Hostile hosts on virtual time (issue 12 item 5): what a host forging control messages can and
//! cannot book.

use std::time::Duration;

use rtlan_wire::control::{FailReason, Message, Repr};

use super::rt_net::*;

/// A SETUP from host A with connection id `id` towards `dst_ip` at `rate`.
fn forged(request_id: u32, id: u16, rate: u64, dst_ip: std::net::Ipv4Addr) -> Repr {
    let mut repr = setup_repr(request_id, rate, dst_ip, 7);
    if let Message::Setup(setup) = &mut repr.message {
        setup.connection_id = id;
    }
    repr
}

#[test]
fn forged_setups_cannot_book_more_than_the_senders_own_link_carries() {
    // A — S — B, and C on S's third port: two receivers with a link each, so the output ports
    // alone would admit 60 Mbit/s towards each.
    let mut net = Net::new();
    let a = net.host(1, false);
    let s = net.switch(&[RATE, RATE, RATE]);
    let b = net.host(2, false);
    let c = net.host(3, false);
    net.link(a, 0, s, 0);
    net.link(s, 1, b, 0);
    net.link(s, 2, c, 0);
    net.announce(b);
    net.announce(c);
    net.run_for(Duration::from_millis(5));
    let (mac_a, ip_b, ip_c) = (net.h(a).mac, net.h(b).ip, net.h(c).ip);
    // 40 Mbit/s to B, then 40 Mbit/s to C: together beyond 60 % of A's 100 Mbit/s link.
    net.send(a, control_frame(mac_a, &forged(1, 0x20, 40_000_000, ip_b)));
    net.run_for(Duration::from_millis(1));
    net.send(a, control_frame(mac_a, &forged(2, 0x21, 40_000_000, ip_c)));
    net.run_for(Duration::from_millis(1));
    // What still fits on A's link is admitted.
    net.send(a, control_frame(mac_a, &forged(3, 0x22, 15_000_000, ip_c)));
    net.run_for(Duration::from_millis(1));
    let answers: Vec<Message> = net
        .h(a)
        .control
        .iter()
        .filter(|r| !matches!(r.message, Message::Hello(_)))
        .map(|r| r.message)
        .collect();
    assert_eq!(answers.len(), 3, "{answers:?}");
    assert!(matches!(answers[0], Message::SetupOk { .. }));
    assert!(matches!(
        answers[1],
        Message::SetupFail {
            reason: FailReason::Bandwidth,
            failed_hop: 1,
            ..
        }
    ));
    assert!(matches!(answers[2], Message::SetupOk { .. }));
    let sw = net.sw(s);
    assert_eq!(sw.stats().signal.ingress_cap_refusals, 1);
    let entering: u64 = sw.connections().iter().map(|(_, e)| e.rate_bps).sum();
    assert_eq!(entering, 55_000_000);
}
