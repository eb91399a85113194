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
use super::rt_setup::{chain, chain_with};
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

/// A reservation a → b across three switches, and 20 full frames sent by a at once (far beyond
/// the bucket S1 polices to: burst + r·(host term + λ of S1's lateness budget)); returns the
/// network, b, the switches, the bucket's depth and a frame's cost, both in wire bits.
fn burst_of_twenty(reshape_allowance: Duration) -> (Net, usize, [usize; 3], u64, u64) {
    let (mut net, [a, b, _], s) = chain_with(RATE, reshape_allowance);
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
    let flow = tspec();
    let lateness = u64::try_from(RtConfig::default().lateness_budget.as_nanos()).unwrap();
    let depth = servers::burst_at_hop(&flow, host_ns() + lateness).expect("depth");
    let frame_bits = rtlan_wire::cost::wire_bits(usize::from(PACKET));
    for seq in 0..20 {
        let mut frame = udp_frame(mac_a, ip_a, proxy_mac, proxy_ip, seq);
        frame.resize(usize::from(PACKET), 0);
        net.send(a, frame);
    }
    (net, b, s, depth, frame_bits)
}

#[test]
fn only_the_first_switch_polices_the_t_spec() {
    // No reshaping: what the bucket does not pass is dropped at S1, counted; nothing is dropped
    // later.
    let (mut net, b, s, depth, frame_bits) = burst_of_twenty(Duration::ZERO);
    let passing = depth / frame_bits;
    net.run_for(Duration::from_millis(200));
    let nonconforming = net.sw(s[0]).stats().rt.nonconforming_drops;
    assert_eq!(nonconforming, 20 - passing, "S1 polices to its bucket");
    assert_eq!(net.sw(s[0]).stats().rt.reshaped, 0);
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

#[test]
fn the_first_switch_reshapes_a_burst_its_allowance_covers_into_the_t_spec() {
    // With the default 100 ms allowance S1 holds the frames beyond the bucket until they
    // conform: all 20 arrive, in order, none dropped anywhere; and the last leaves S1 no
    // earlier than the bucket allows — once it has earned the burst's excess over its depth.
    let (mut net, b, s, depth, frame_bits) = burst_of_twenty(RtConfig::default().reshape_allowance);
    let passing = depth / frame_bits;
    let sent_at = net.now;
    net.run_for(Duration::from_millis(200));
    let stats = net.sw(s[0]).stats().rt;
    assert_eq!(stats.nonconforming_drops, 0);
    assert_eq!(
        stats.reshaped,
        20 - passing,
        "held: what the bucket did not pass at once"
    );
    assert_eq!(stats.reshape_orphans, 0);
    let host = net.h(b);
    let got: Vec<_> = host.received_at.iter().zip(&host.received).collect();
    assert_eq!(got.len(), 20, "every frame arrives");
    // udp_frame's tag is the low byte of the IP identification.
    let seqs: Vec<u8> = got.iter().map(|(_, f)| f[19]).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "in order: {seqs:?}");
    // The bucket must earn what the burst had beyond its depth before the last frame leaves.
    let wait_ns = (20 * frame_bits - depth) * 1_000_000_000 / tspec().rate_bps;
    let last = *got.last().expect("frames").0;
    assert!(
        last.saturating_duration_since(sent_at) >= Duration::from_nanos(wait_ns),
        "the last frame left S1 within the T-SPEC: {:?} after the burst, bucket wait {wait_ns} ns",
        last.saturating_duration_since(sent_at)
    );
    for sw in &s {
        assert_eq!(net.sw(*sw).stats().rt.queue_drops, 0);
        assert_eq!(net.sw(*sw).stats().rt.nonconforming_drops, 0);
    }
}
