//! What the router tells a fast path (`super::super::fastpath`), on the two-router net with
//! unpaced ports: the table against what the core puts on the wire, its version, open ports,
//! neighbour refresh without packets, and push-back.

use super::switched_paths::{guaranteed, open, reserve, SENDER, SESSION};
use super::*;
use crate::router::{FastHop, FastRoute, NextHop, Route, RouteSource};

const R1_P0: Address = Address([2, 0xaa, 0, 1, 0, 1]);
const R1_P1: Address = Address([2, 0xaa, 0, 12, 0, 1]);
const R2_P0: Address = Address([2, 0xaa, 0, 12, 0, 2]);
const A_MAC: Address = Address([2, 0, 0, 0, 1, 2]);
const IP_R2: Ipv4Addr = Ipv4Addr::new(198, 18, 12, 2);

/// R1's hop towards r2 and towards a.
const TO_R2: FastRoute = FastRoute::Forward(FastHop {
    port: PortId(1),
    dst_mac: R2_P0,
    src_mac: R1_P1,
});
const TO_A: FastRoute = FastRoute::Forward(FastHop {
    port: PortId(0),
    dst_mac: A_MAC,
    src_mac: R1_P0,
});

fn unpaced(c: &mut RouterConfig) {
    for p in &mut c.ports {
        p.medium = Medium::Unpaced;
    }
}

fn pfx(s: &str) -> Ipv4Prefix {
    s.parse().expect("a prefix")
}

/// The entry of exactly `prefix`.
fn entry(table: &[(Ipv4Prefix, FastRoute)], prefix: &str) -> Option<FastRoute> {
    let prefix = pfx(prefix);
    table.iter().find(|(p, _)| *p == prefix).map(|(_, r)| *r)
}

/// What an LPM map of `table` answers for `dst`.
fn lpm(table: &[(Ipv4Prefix, FastRoute)], dst: Ipv4Addr) -> Option<FastRoute> {
    table
        .iter()
        .filter(|(p, _)| p.contains(dst))
        .max_by_key(|(p, _)| p.prefix_len())
        .map(|(_, r)| *r)
}

fn assert_sorted_unique(table: &[(Ipv4Prefix, FastRoute)]) {
    assert!(
        table.windows(2).all(|w| w[0].0 < w[1].0),
        "sorted, one entry per prefix: {table:?}"
    );
}

/// The unpaced net after one datagram a → b: every neighbour on the way is resolved.
fn resolved() -> Net {
    let mut net = Net::new(unpaced);
    net.h(A).send(udp_packet(IP_A, IP_B, 64, 1));
    net.run_for(Duration::from_millis(10));
    assert_eq!(net.h(B).received.len(), 1);
    net
}

fn kernel_route(gateway: Ipv4Addr) -> Route {
    Route {
        next_hop: NextHop {
            gateway: Some(gateway),
            port: PortId(1),
        },
        source: RouteSource::Kernel,
        metric: 0,
    }
}

#[test]
fn the_table_forwards_resolved_next_hops_and_leaves_the_rest_to_the_core() {
    let mut net = Net::new(unpaced);
    let fresh = net.r(R1).fast_table();
    assert_sorted_unique(&fresh);
    assert!(
        fresh.iter().all(|(_, r)| *r == FastRoute::ToCore),
        "nothing is resolved yet: {fresh:?}"
    );
    assert_eq!(entry(&fresh, "198.18.2.0/24"), Some(FastRoute::ToCore));

    net.h(A).send(udp_packet(IP_A, IP_B, 64, 1));
    net.run_for(Duration::from_millis(10));
    let table = net.r(R1).fast_table();
    let core = FastRoute::ToCore;
    let want: Vec<(Ipv4Prefix, FastRoute)> = [
        ("0.0.0.0/8", core),
        ("127.0.0.0/8", core),
        // a's subnet: connected (ARP), r1's own address, its broadcast, and a resolved.
        ("198.18.1.0/24", core),
        ("198.18.1.1/32", core),
        ("198.18.1.2/32", TO_A),
        ("198.18.1.255/32", core),
        // b's subnet, by the static route via r2.
        ("198.18.2.0/24", TO_R2),
        ("198.18.12.0/24", core),
        ("198.18.12.1/32", core),
        ("198.18.12.2/32", TO_R2),
        ("198.18.12.255/32", core),
        ("224.0.0.0/4", core),
        ("240.0.0.0/4", core),
    ]
    .into_iter()
    .map(|(p, r)| (pfx(p), r))
    .collect();
    assert_eq!(table, want);
    assert_sorted_unique(&table);
    // Addresses the core does not forward stay with it whatever covers them.
    assert_eq!(lpm(&table, Ipv4Addr::new(198, 18, 1, 9)), Some(core));
    assert_eq!(lpm(&table, Ipv4Addr::new(8, 8, 8, 8)), None, "no route");
}

#[test]
fn a_forward_hop_is_what_the_core_puts_on_the_wire() {
    let mut net = resolved();
    let table = net.r(R1).fast_table();
    let version = net.r(R1).fast_version();
    net.wire.clear();
    net.h(A).send(udp_packet(IP_A, IP_B, 64, 2));
    net.h(B).send(udp_packet(IP_B, IP_A, 64, 3));
    net.run_for(Duration::from_millis(10));
    let mut checked = 0;
    for ((node, port), f) in &net.wire {
        let eth = Frame::new_checked(&f[..]).expect("frames");
        if *node != R1 || eth.ethertype() != EtherType::Ipv4 {
            continue;
        }
        let ip = ipv4::Packet::new_checked(eth.payload()).expect("ipv4");
        if ip.protocol() != ipv4::Protocol::Udp {
            continue;
        }
        let Some(FastRoute::Forward(hop)) = lpm(&table, ip.dst_addr()) else {
            panic!(
                "{} forwarded by the core but not in the table",
                ip.dst_addr()
            );
        };
        assert_eq!(
            (PortId(*port), eth.dst_addr(), eth.src_addr()),
            (hop.port, hop.dst_mac, hop.src_mac),
            "to {}",
            ip.dst_addr()
        );
        checked += 1;
    }
    assert_eq!(checked, 2, "one each way");
    assert_eq!(
        net.r(R1).fast_version(),
        version,
        "traffic to known neighbours changes nothing"
    );
}

#[test]
fn route_changes_change_the_version_and_the_table() {
    let mut net = resolved();
    let r1 = net.r(R1);
    let far = pfx("198.18.50.0/24");
    let v0 = r1.fast_version();
    assert!(r1.install_route(far, kernel_route(IP_R2)));
    let v1 = r1.fast_version();
    assert_ne!(v1, v0);
    assert_eq!(entry(&r1.fast_table(), "198.18.50.0/24"), Some(TO_R2));
    // A gateway nobody has answered for yet: the core must ARP.
    assert!(r1.install_route(
        pfx("198.18.60.0/24"),
        kernel_route(Ipv4Addr::new(198, 18, 12, 9))
    ));
    let v2 = r1.fast_version();
    assert_ne!(v2, v1);
    assert_eq!(
        entry(&r1.fast_table(), "198.18.60.0/24"),
        Some(FastRoute::ToCore)
    );
    // A default route covers the world but not what the core never forwards.
    assert!(r1.install_route(Ipv4Prefix::DEFAULT, kernel_route(IP_R2)));
    let v3 = r1.fast_version();
    assert_ne!(v3, v2);
    let table = r1.fast_table();
    assert_eq!(entry(&table, "0.0.0.0/0"), Some(TO_R2));
    assert_eq!(lpm(&table, Ipv4Addr::new(8, 8, 8, 8)), Some(TO_R2));
    for martian in [
        [127, 0, 0, 1],
        [224, 0, 0, 5],
        [255, 255, 255, 255],
        [0, 1, 2, 3],
    ] {
        assert_eq!(lpm(&table, ip(martian)), Some(FastRoute::ToCore));
    }
    // Nor a route inside a martian range.
    assert!(r1.install_route(pfx("127.1.0.0/16"), kernel_route(IP_R2)));
    assert_eq!(
        entry(&r1.fast_table(), "127.1.0.0/16"),
        Some(FastRoute::ToCore)
    );
    // A gateway-less host route: its one address is resolved on its port, or not yet.
    let host_route = |port| Route {
        next_hop: NextHop {
            gateway: None,
            port: PortId(port),
        },
        source: RouteSource::Kernel,
        metric: 0,
    };
    assert!(r1.install_route(Ipv4Prefix::host(IP_A), host_route(0)));
    assert!(r1.install_route(pfx("198.18.1.7/32"), host_route(0)));
    let table = r1.fast_table();
    assert_eq!(entry(&table, "198.18.1.2/32"), Some(TO_A));
    assert_eq!(entry(&table, "198.18.1.7/32"), Some(FastRoute::ToCore));
    let v4 = r1.fast_version();
    // Removed: the default route takes over.
    assert!(r1.remove_route(far, RouteSource::Kernel));
    assert_ne!(r1.fast_version(), v4);
    let table = r1.fast_table();
    assert_eq!(entry(&table, "198.18.50.0/24"), None);
    assert_eq!(lpm(&table, Ipv4Addr::new(198, 18, 50, 1)), Some(TO_R2));
    // A refused change is no change.
    let v5 = r1.fast_version();
    assert!(!r1.remove_route(far, RouteSource::Kernel));
    assert_eq!(r1.fast_version(), v5);
}

#[test]
fn a_neighbours_new_mac_or_port_changes_the_version_and_its_entries() {
    let mut net = resolved();
    let now = net.now;
    let r1 = net.r(R1);
    let v0 = r1.fast_version();
    // a comes back with another MAC (it asks for r1).
    let new_mac = Address([2, 0, 0, 0, 1, 0x99]);
    let ask = |mac, from| {
        arp_frame(
            arp::Operation::Request,
            mac,
            from,
            Address([0; 6]),
            ip([198, 18, 1, 1]),
        )
    };
    r1.handle_frame(now, PortId(0), &ask(new_mac, IP_A));
    let v1 = r1.fast_version();
    assert_ne!(v1, v0);
    assert_eq!(
        entry(&r1.fast_table(), "198.18.1.2/32"),
        Some(FastRoute::Forward(FastHop {
            port: PortId(0),
            dst_mac: new_mac,
            src_mac: R1_P0,
        }))
    );
    // The same again is no change.
    r1.handle_frame(now, PortId(0), &ask(new_mac, IP_A));
    assert_eq!(r1.fast_version(), v1);
    // r2's address answers on r1's other port: the routes out of p1 do not use it there, and
    // it is no neighbour of a's subnet.
    r1.handle_frame(now, PortId(0), &ask(R2_P0, IP_R2));
    assert_ne!(r1.fast_version(), v1);
    let table = r1.fast_table();
    assert_eq!(entry(&table, "198.18.2.0/24"), Some(FastRoute::ToCore));
    assert_eq!(entry(&table, "198.18.12.2/32"), None);
    assert_eq!(lpm(&table, IP_R2), Some(FastRoute::ToCore));
    // And the core agrees: a packet to b now waits for ARP on p1.
    let held = r1.stats().held;
    let packet = frame(new_mac, R1_P0, &udp_packet(IP_A, IP_B, 64, 4));
    r1.handle_frame(now, PortId(0), &packet);
    assert_eq!(r1.stats().held, held + 1);
}

#[test]
fn a_port_going_down_sends_its_routes_to_the_core_and_closes_it() {
    let mut net = resolved();
    let now = net.now;
    let r1 = net.r(R1);
    assert_eq!(r1.fast_path_closed(PortId(1)), None);
    let v0 = r1.fast_version();
    r1.handle_link(now, PortId(1), false);
    let v1 = r1.fast_version();
    assert_ne!(v1, v0);
    let table = r1.fast_table();
    assert_eq!(entry(&table, "198.18.2.0/24"), Some(FastRoute::ToCore));
    assert_eq!(entry(&table, "198.18.12.2/32"), None);
    assert_eq!(
        entry(&table, "198.18.1.2/32"),
        Some(TO_A),
        "the other port's stays"
    );
    assert_eq!(r1.fast_path_closed(PortId(1)), Some("link down"));
    assert_eq!(r1.fast_path_closed(PortId(0)), None);
    r1.handle_link(now, PortId(1), true);
    assert_ne!(r1.fast_version(), v1);
    assert_eq!(r1.fast_path_closed(PortId(1)), None);
    assert_eq!(
        entry(&r1.fast_table(), "198.18.2.0/24"),
        Some(FastRoute::ToCore),
        "r2 was forgotten with the carrier"
    );
}

#[test]
fn only_unpaced_ports_that_exist_open() {
    let mut paced = Net::new(|_| {});
    assert_eq!(paced.r(R1).fast_path_closed(PortId(0)), Some("paced"));
    assert_eq!(paced.r(R1).fast_path_closed(PortId(1)), Some("paced"));
    let mut net = Net::new(unpaced);
    assert_eq!(net.r(R1).fast_path_closed(PortId(0)), None);
    assert_eq!(net.r(R1).fast_path_closed(PortId(1)), None);
    assert_eq!(net.r(R1).fast_path_closed(PortId(2)), Some("no such port"));
}

/// The unpaced net with RSVP on the routers and RSVP engines in a and b.
fn rsvp_net() -> Net {
    let mut net = Net::new(|c| {
        c.rsvp = Some(RsvpSettings {
            refresh: Duration::from_secs(1),
            ..RsvpSettings::default()
        });
        unpaced(c);
    });
    for (h, addr) in [(A, IP_A), (B, IP_B)] {
        let mut config = crate::rsvp::RsvpConfig::new(crate::rsvp::Role::Host, vec![addr]);
        config.refresh = Duration::from_secs(1);
        net.h(h).rsvp = Some(crate::rsvp::Rsvp::new(config));
    }
    net
}

/// Why each of (r1 p0, r1 p1, r2 p0, r2 p1) is closed.
fn closed(net: &mut Net) -> [Option<&'static str>; 4] {
    [(R1, 0), (R1, 1), (R2, 0), (R2, 1)].map(|(r, p)| net.r(r).fast_path_closed(PortId(p)))
}

#[test]
fn a_reservation_closes_its_ports_and_its_classifier_the_whole_first_router() {
    let mut net = rsvp_net();
    assert_eq!(closed(&mut net), [None; 4]);
    open(&mut net, 125_000.0, 3000.0);
    net.run_for(Duration::from_millis(10));
    assert_eq!(closed(&mut net), [None; 4], "a path books nothing");
    reserve(&mut net, guaranteed(125_000.0));
    net.run_for(Duration::from_millis(10));
    assert_eq!(net.r(R1).tables().rsvp.len(), 1, "reserved");
    assert_eq!(
        closed(&mut net),
        [
            // r1 classifies a's packets: no port may forward them past the classifier.
            Some("reservations classified"),
            Some("reservations leave"),
            // r2 switches labels (not IPv4) in on p0 and books p1 towards b.
            None,
            Some("reservations leave"),
        ]
    );
    let host = net.h(A);
    host.rsvp
        .as_mut()
        .unwrap()
        .close_sender(SESSION, SENDER, &mut NoResources);
    host.drain_rsvp();
    net.run_for(Duration::from_millis(10));
    assert_eq!(closed(&mut net), [None; 4], "open again after the teardown");
}

#[test]
fn a_pipe_closes_its_ports_and_its_classifier_the_whole_ingress_router() {
    let mut net = rsvp_net();
    let now = net.now;
    net.r(R1)
        .create_pipe(now, super::pipes::spec(10_000_000))
        .expect("created");
    net.run_for(Duration::from_millis(10));
    assert_eq!(net.r(R1).tables().psip.len(), 1, "the pipe is up");
    assert_eq!(
        closed(&mut net),
        [
            Some("reservations classified"),
            Some("reservations leave"),
            None,
            Some("reservations leave"),
        ]
    );
    let now = net.now;
    net.r(R1).delete_pipe(now, "a-to-b").expect("deleted");
    net.run_for(Duration::from_millis(10));
    assert_eq!(closed(&mut net), [None; 4]);
}

/// The ARP requests r1 sent while `net` ran: (port, address asked for).
fn r1_requests(net: &Net) -> Vec<(u16, Ipv4Addr)> {
    net.wire
        .iter()
        .filter(|((node, _), f)| *node == R1 && f[12..14] == [0x08, 0x06])
        .filter_map(|((_, port), f)| {
            let a = arp::Repr::parse(&arp::Packet::new_checked(&f[14..]).ok()?).ok()?;
            (a.operation == arp::Operation::Request).then_some((*port, a.target_protocol_addr))
        })
        .collect()
}

#[test]
fn with_tracking_a_stale_neighbour_is_asked_again_without_any_packet() {
    let lifetime = crate::router::neighbours::NeighbourConfig::default().lifetime;
    let mut untracked = resolved();
    untracked.wire.clear();
    untracked.run_for(lifetime + Duration::from_secs(1));
    assert_eq!(
        r1_requests(&untracked),
        vec![],
        "nothing asks without packets"
    );

    let mut net = resolved();
    net.r(R1).track_fast_path();
    net.wire.clear();
    net.run_for(lifetime + Duration::from_secs(1));
    let mut asked = r1_requests(&net);
    asked.sort();
    assert_eq!(asked, vec![(0, IP_A), (1, IP_R2)], "once each");
    // Both answered: the next request is a lifetime away.
    net.wire.clear();
    net.run_for(lifetime - Duration::from_secs(2));
    assert_eq!(r1_requests(&net), vec![]);
    assert_eq!(net.r(R1).neighbours().len(), 2);
    net.run_for(Duration::from_secs(2));
    assert_eq!(r1_requests(&net).len(), 2);
}

#[test]
fn a_silent_stale_neighbour_is_asked_once_per_retry_interval_then_forgotten() {
    let config = crate::router::neighbours::NeighbourConfig::default();
    let mut net = resolved();
    net.r(R1).track_fast_path();
    // b's side goes quiet: r2 is unplugged from r1 (r1's carrier stays up; what r1 sends
    // there is lost, so only r1's counter sees it).
    net.links.remove(&(R1, 1));
    let before = net.r(R1).stats().arp_requests_sent;
    net.run_for(config.lifetime + config.retry * 2 + Duration::from_millis(500));
    let asked = net.r(R1).stats().arp_requests_sent - before;
    // a answers its one request; r2 is asked at the lifetime, then once per retry interval.
    assert_eq!(asked, 1 + 3);
    let table = net.r(R1).fast_table();
    assert_eq!(
        entry(&table, "198.18.2.0/24"),
        Some(TO_R2),
        "still used while it is re-resolved, as the core does"
    );
    // Still silent a retry interval after its last request: forgotten, so the route goes to
    // the core, which resolves it afresh when a packet needs it (and gives up with an ICMP
    // error) — not asked again every second for ever.
    let version = net.r(R1).fast_version();
    net.run_for(config.retry * 2);
    assert_eq!(
        net.r(R1).stats().arp_requests_sent - before,
        1 + 3,
        "no request without a packet"
    );
    assert_ne!(net.r(R1).fast_version(), version);
    let table = net.r(R1).fast_table();
    assert_eq!(
        entry(&table, "198.18.2.0/24"),
        Some(FastRoute::ToCore),
        "to the core now"
    );
}

#[test]
fn control_frames_are_counted_and_seen_waiting_until_sent() {
    let mut net = rsvp_net();
    assert_eq!(net.r(R1).control_sent(PortId(1)), 0);
    assert!(!net.r(R1).control_waiting(PortId(7)), "no such port");
    open(&mut net, 125_000.0, 3000.0);
    net.run_for(Duration::from_millis(10));
    let sent = net.r(R1).control_sent(PortId(1));
    assert!(
        sent >= 1,
        "the Path went on towards r2 on the control queue"
    );
    assert!(!net.r(R1).control_waiting(PortId(1)));
    // Data never counts as control.
    let now = net.now;
    let r1 = net.r(R1);
    r1.handle_frame(
        now,
        PortId(0),
        &frame(A_MAC, R1_P0, &udp_packet(IP_A, IP_B, 64, 5)),
    );
    let mut buf = [0u8; 2048];
    while r1.poll_transmit(now, PortId(1), &mut buf).is_some() {}
    assert_eq!(r1.control_sent(PortId(1)), sent);
    // The Path's refresh waits in the control queue until it is polled out.
    let mut waiting = false;
    for _ in 0..100 {
        let Some(at) = r1.poll_timeout() else { break };
        r1.handle_timeout(at);
        if r1.control_waiting(PortId(1)) {
            waiting = true;
            while r1.poll_transmit(at, PortId(1), &mut buf).is_some() {}
            break;
        }
    }
    assert!(waiting, "a refresh was queued");
    assert!(!r1.control_waiting(PortId(1)));
    assert!(r1.control_sent(PortId(1)) > sent);
}
