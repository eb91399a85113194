//! Delay in the signalling (docs/delay.md, `docs/protocol.md` §6) through real daemons and three
//! switches on virtual time: the bound the sender is told is b/r + the host's term + Σθ over
//! exactly the hops of its path, each hop books the connection's backlog bound as its queue, a requirement below the
//! bound is refused by the hop that exceeds it (and nothing stays booked), and only the first
//! switch polices.

use std::net::Ipv4Addr;
use std::time::Duration;

use rtlan_calculus::servers::{self, HopTspec};
use rtlan_wire::control::FailReason;

use super::rt_net::*;
use super::rt_setup::chain;
use super::*;
use crate::rtcd::{Reply, Request, RtcdError};

const RATE_10M: u64 = 10_000_000;
const BURST: u32 = 3028;
const PACKET: u16 = 1514;

fn open(dst_ip: Ipv4Addr, delay_us: Option<u64>) -> Request {
    Request::Open {
        dst_ip,
        dst_port: 5004,
        src_port: 0,
        rate_bps: RATE_10M,
        max_burst: BURST,
        max_packet: PACKET,
        shaping: crate::rtcd::DaemonShaping::None,
        delay_us,
    }
}

/// The daemons' host term (their default `host_delay`), ns: the latency every SETUP starts with.
fn host_ns() -> u64 {
    u64::try_from(crate::rtcd::DEFAULT_HOST_DELAY.as_nanos()).expect("2 ms fits")
}

fn tspec() -> HopTspec {
    servers::tspec_from_setup(RATE_10M, BURST, PACKET).expect("valid T-SPEC")
}

/// θ of each hop of A's path (S1 port 1, S2 port 1, S3 port 1), ns.
fn thetas(net: &Net, switches: [usize; 3]) -> [u64; 3] {
    switches.map(|sw| {
        net.sw(sw)
            .port_server(PortId(1))
            .expect("port 1 exists")
            .latency_ns(&tspec())
            .expect("a bound at the default configuration")
    })
}

#[test]
fn the_bound_sums_the_hops_and_each_queue_is_its_backlog_bound() {
    let (mut net, [a, b, _], s) = chain(RATE);
    let ip_b = net.h(b).ip;
    net.announce(b);
    net.run_for(Duration::from_millis(1));
    net.request(a, open(ip_b, None));
    net.run_for(Duration::from_millis(50));
    let theta = thetas(&net, s);
    let flow = tspec();
    let sum: u64 = theta.iter().sum();
    let expected = servers::end_to_end_ns(&flow, host_ns() + sum)
        .expect("bound")
        .div_ceil(1000);
    match net.h(a).replies.last() {
        Some(Reply::Opened {
            hops,
            delay_bound_us,
            ..
        }) => {
            assert_eq!(*hops, 3);
            assert_eq!(*delay_bound_us, Some(expected));
        }
        other => panic!("expected Opened, got {other:?}"),
    }
    // Hop k's queue: the burst that can reach it (b + r·(host term + Σθ upstream)) plus r·θₖ.
    let mut upstream = host_ns();
    for (k, sw) in s.into_iter().enumerate() {
        let burst = servers::burst_at_hop(&flow, upstream).expect("burst");
        let backlog = servers::backlog_bits(&flow, burst, theta[k]).expect("backlog");
        assert_eq!(
            net.sw(sw).rt_admitted_bytes(PortId(1)),
            servers::queue_bytes(backlog),
            "hop {}",
            k + 1
        );
        upstream += theta[k];
        // The connection table reports θ and b/r + Σθ so far (the network view's bound).
        let listed = net.sw(sw).connection_list(net.now);
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].latency_ns, theta[k]);
        assert_eq!(
            listed[0].bound_ns,
            servers::end_to_end_ns(&flow, upstream).expect("bound"),
            "hop {}",
            k + 1
        );
    }
    assert_eq!(
        net.sw(s[2]).connection_list(net.now)[0]
            .bound_ns
            .div_ceil(1000),
        expected,
        "the last hop's bound is the one the sender was told"
    );
    // Later hops hold more: the burst grows along the path.
    assert!(net.sw(s[2]).rt_admitted_bytes(PortId(1)) > net.sw(s[0]).rt_admitted_bytes(PortId(1)));
}

#[test]
fn a_requirement_below_the_bound_is_refused_by_the_hop_that_exceeds_it() {
    let (mut net, [a, b, _], s) = chain(RATE);
    let ip_b = net.h(b).ip;
    net.announce(b);
    net.run_for(Duration::from_millis(1));
    let theta = thetas(&net, s);
    let flow = tspec();
    let after_two = servers::end_to_end_ns(&flow, host_ns() + theta[0] + theta[1]).expect("bound");
    // Enough for two hops, not for three: the third switch refuses.
    let required_us = after_two.div_ceil(1000) + 1;
    net.request(a, open(ip_b, Some(required_us)));
    net.run_for(Duration::from_millis(50));
    match net.h(a).replies.last() {
        Some(Reply::Failed {
            error: RtcdError::Refused { hop, reason, .. },
            ..
        }) => assert_eq!((*hop, *reason), (3, FailReason::Delay)),
        other => panic!("expected a DELAY refusal, got {other:?}"),
    }
    assert_eq!(net.sw(s[2]).stats().rt.delay_refusals, 1);
    for sw in s {
        assert!(
            net.sw(sw).connections().is_empty(),
            "switch {sw} kept an entry"
        );
        assert_eq!(
            net.sw(sw).rt_admitted_bytes(PortId(1)),
            0,
            "switch {sw} kept a queue"
        );
    }
    // With the whole bound allowed it opens.
    let bound =
        servers::end_to_end_ns(&flow, host_ns() + theta.iter().sum::<u64>()).expect("bound");
    net.request(a, open(ip_b, Some(bound.div_ceil(1000))));
    net.run_for(Duration::from_millis(50));
    assert!(
        matches!(net.h(a).replies.last(), Some(Reply::Opened { .. })),
        "{:?}",
        net.h(a).replies.last()
    );
}

#[test]
fn only_the_first_switch_polices_the_t_spec() {
    let (mut net, [a, b, _], s) = chain(RATE);
    let ip_b = net.h(b).ip;
    net.announce(b);
    net.run_for(Duration::from_millis(1));
    net.request(a, open(ip_b, None));
    net.run_for(Duration::from_millis(50));
    let Some(Reply::Opened {
        proxy_ip,
        proxy_mac: Some(proxy_mac),
        ..
    }) = net.h(a).replies.last().cloned()
    else {
        panic!("expected Opened");
    };
    let (mac_a, ip_a) = (net.h(a).mac, net.h(a).ip);
    // 20 full frames at once: the bucket (burst + r·(host term + λ of S1's lateness budget))
    // passes some, the rest do not conform and are dropped at S1, counted; nothing is dropped
    // later.
    let flow = tspec();
    let lateness = u64::try_from(RtConfig::default().lateness_budget.as_nanos()).unwrap();
    let depth = servers::burst_at_hop(&flow, host_ns() + lateness).expect("depth");
    let frame_bits = rtlan_wire::cost::wire_bits(usize::from(PACKET));
    let passing = depth / frame_bits;
    for seq in 0..20 {
        let mut frame = udp_frame(mac_a, ip_a, proxy_mac, proxy_ip, seq);
        frame.resize(usize::from(PACKET), 0);
        net.send(a, frame);
    }
    net.run_for(Duration::from_millis(200));
    let nonconforming = net.sw(s[0]).stats().rt.nonconforming_drops;
    assert_eq!(nonconforming, 20 - passing, "S1 polices to its bucket");
    assert_eq!(
        net.h(b).received.len() as u64,
        passing,
        "what conforms arrives"
    );
    for sw in &s[1..] {
        assert_eq!(net.sw(*sw).stats().rt.nonconforming_drops, 0);
        assert_eq!(net.sw(*sw).stats().rt.queue_drops, 0);
    }
    assert_eq!(net.sw(s[0]).stats().rt.queue_drops, 0);
}
