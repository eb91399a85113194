//! Hostile hosts on virtual time: what a host forging control messages can and cannot book, and
//! the control-plane protection (`protect`, `arp_guard`): policing per port, the control budget,
//! per-port shares, the ARP hijack defence.

use std::net::Ipv4Addr;
use std::time::Duration;

use rtlan_wire::arp;
use rtlan_wire::control::{FailReason, Message, Repr};
use rtlan_wire::ethernet::Address;

use super::rt_net::*;
use super::*;
use crate::rtcd::Reply;

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

/// A SETUP from host `mac`'s side with request id and connection id `n` towards `dst_ip`.
fn flood_setup(mac: Address, n: u32, dst_ip: Ipv4Addr, rate: u64) -> Vec<u8> {
    // Connection ids from 0x100 up are connection ids under the default plan.
    let id = 0x100 + (n % 0xfe00) as u16;
    control_frame(mac, &forged(n, id, rate, dst_ip))
}

/// An address nobody has: 10.x.y.z from `n`.
fn nobody(n: u32) -> Ipv4Addr {
    Ipv4Addr::from(0x0a00_0000 + n)
}

/// A gratuitous ARP sent with Ethernet source `eth_src`, saying `ip` is at `sender`.
fn garp(eth_src: Address, sender: Address, ip: Ipv4Addr) -> Vec<u8> {
    let repr = arp::Repr {
        operation: arp::Operation::Request,
        source_hardware_addr: sender,
        source_protocol_addr: ip,
        target_hardware_addr: Address([0; 6]),
        target_protocol_addr: ip,
    };
    let mut buf = vec![0u8; 60];
    repr.emit_frame(eth_src, Address::BROADCAST, &mut buf)
        .expect("fits");
    buf
}

/// A switch with one 100 Mbit/s port per host, `hosts[i]` on port `i`; returns the switch.
fn star(net: &mut Net, hosts: &[usize]) -> usize {
    let s = net.switch(&vec![RATE; hosts.len()]);
    for (port, &h) in hosts.iter().enumerate() {
        net.link(h, 0, s, port as u16);
    }
    s
}

/// Non-hello control answers host `h` received.
fn answers(net: &Net, h: usize) -> Vec<Message> {
    net.h(h)
        .control
        .iter()
        .filter(|r| !matches!(r.message, Message::Hello(_)))
        .map(|r| r.message)
        .collect()
}

#[test]
fn a_setup_flood_on_one_port_is_policed_and_another_ports_host_still_opens() {
    // M (forger) on port 0, A (daemon) on port 1, C on port 2.
    let mut net = Net::new();
    let m = net.host(9, false);
    let a = net.host(1, true);
    let c = net.host(3, false);
    let s = star(&mut net, &[m, a, c]);
    net.announce(c);
    net.run_for(Duration::from_millis(5));
    let mac_m = net.h(m).mac;
    // 5,000 tiny SETUPs towards as many unknown addresses, all at once, and A's open with them.
    for n in 0..5_000 {
        net.send(m, flood_setup(mac_m, n, nobody(n), 1_000));
    }
    let ip_c = net.h(c).ip;
    net.request(a, open_request(ip_c, 10_000_000));
    net.run_for(Duration::from_millis(20));
    assert!(
        matches!(net.h(a).replies.last(), Some(Reply::Opened { hops: 1, .. })),
        "{:?}",
        net.h(a).replies
    );
    let sw = net.sw(s);
    let p = &sw.stats().protect;
    // The host bucket lets its burst of 200 through; the rest is dropped before parsing.
    assert_eq!(p.ports[0].control_policed, 4_800);
    assert_eq!(p.ports[1], Default::default(), "A's port is untouched");
    assert_eq!(sw.stats().drop_policed, 4_800);
    // The 200 that passed wait for a route; probes for them are policed to the port's burst.
    assert_eq!(sw.stats().arp_probes_sent, 50);
    assert_eq!(p.ports[0].probes_policed, 150);
    assert_eq!(sw.setups_in_progress(), 200);
    // Half a second later they have all failed NO_ROUTE and nothing is left.
    net.run_for(Duration::from_millis(600));
    assert_eq!(net.sw(s).setups_in_progress(), 0);
    let fails = answers(&net, m)
        .iter()
        .filter(|msg| {
            matches!(
                msg,
                Message::SetupFail {
                    reason: FailReason::NoRoute,
                    ..
                }
            )
        })
        .count();
    assert_eq!(fails, 200);
}

#[test]
fn one_host_port_cannot_fill_the_connection_table() {
    // A table of 64 connections: a host port may take a quarter (16).
    let mut net = Net::new();
    let m = net.host(9, false);
    let b = net.host(2, false);
    let d = net.host(4, true);
    let s = net.switch(&[RATE, RATE, RATE]);
    let mut config = net.sw(s).config().clone();
    config.rt.max_connections = 64;
    *net.sw_mut(s) = Switch::new(config, net.now).expect("valid");
    net.link(m, 0, s, 0);
    net.link(b, 0, s, 1);
    net.link(d, 0, s, 2);
    net.announce(b);
    net.run_for(Duration::from_millis(5));
    let (mac_m, ip_b) = (net.h(m).mac, net.h(b).ip);
    for n in 0..20 {
        net.send(m, flood_setup(mac_m, n, ip_b, 10_000));
    }
    net.run_for(Duration::from_millis(5));
    let got = answers(&net, m);
    let ok = got
        .iter()
        .filter(|msg| matches!(msg, Message::SetupOk { .. }))
        .count();
    let limited = got
        .iter()
        .filter(|msg| {
            matches!(
                msg,
                Message::SetupFail {
                    reason: FailReason::PortLimit,
                    failed_hop: 1,
                    ..
                }
            )
        })
        .count();
    assert_eq!((ok, limited), (16, 4), "{got:?}");
    assert_eq!(net.sw(s).stats().protect.ports[0].setups_port_limit, 4);
    assert_eq!(net.sw(s).connections().len_on(PortId(0)), 16);
    // Another host still gets its connection.
    net.request(d, open_request(ip_b, 1_000_000));
    net.run_for(Duration::from_millis(5));
    assert!(
        matches!(net.h(d).replies.last(), Some(Reply::Opened { .. })),
        "{:?}",
        net.h(d).replies
    );
}

#[test]
fn setups_in_progress_from_one_port_are_bounded() {
    let mut net = Net::new();
    let m = net.host(9, false);
    let s = net.switch(&[RATE, RATE]);
    let mut config = net.sw(s).config().clone();
    config.rt.protect.host.max_setups_in_progress = Some(8);
    *net.sw_mut(s) = Switch::new(config, net.now).expect("valid");
    net.link(m, 0, s, 0);
    let mac_m = net.h(m).mac;
    for n in 0..20 {
        net.send(m, flood_setup(mac_m, n, nobody(n), 1_000));
    }
    net.run_for(Duration::from_millis(1));
    assert_eq!(net.sw(s).setups_in_progress(), 8);
    let limited = answers(&net, m)
        .iter()
        .filter(|msg| {
            matches!(
                msg,
                Message::SetupFail {
                    reason: FailReason::PortLimit,
                    ..
                }
            )
        })
        .count();
    assert_eq!(limited, 12);
    assert_eq!(net.sw(s).stats().protect.total.setups_port_limit, 12);
}

#[test]
fn arp_from_one_port_is_policed_per_port() {
    let mut net = Net::new();
    let m = net.host(9, false);
    let b = net.host(2, false);
    let s = star(&mut net, &[m, b]);
    let mac_m = net.h(m).mac;
    // 1,000 gratuitous ARPs for as many addresses at once, and B's own.
    for n in 0..1_000 {
        net.send(m, garp(mac_m, mac_m, nobody(n)));
    }
    net.announce(b);
    net.run_for(Duration::from_millis(1));
    let sw = net.sw(s);
    assert_eq!(sw.stats().protect.ports[0].arp_policed, 950);
    assert_eq!(sw.stats().protect.ports[1].arp_policed, 0);
    assert_eq!(sw.arp_cache().len(), 51, "50 of M's and B's");
    assert_eq!(sw.arp_lookup(net.h(b).ip), Some(net.h(b).mac));
    // The bucket refills at 100/s: 100 ms later ten more go through.
    net.run_for(Duration::from_millis(99));
    for n in 1_000..1_100 {
        net.send(m, garp(mac_m, mac_m, nobody(n)));
    }
    net.run_for(Duration::from_millis(1));
    assert_eq!(net.sw(s).arp_cache().len(), 61);
    assert_eq!(net.sw(s).stats().drop_policed, 950 + 90);
}

#[test]
fn the_control_budget_bounds_control_work_and_never_drops_reserved_data() {
    // A (daemon) on port 0 sends a reserved 10 Mbit/s stream to B on port 1; M floods port 2
    // with 1,000 SETUPs every millisecond. Per-port policers opened wide, the switch-wide budget
    // at 50 messages per ms with a burst of 100.
    let mut net = Net::new();
    let a = net.host(1, true);
    let b = net.host(2, false);
    let m = net.host(9, false);
    let s = net.switch(&[RATE, RATE, RATE]);
    let mut config = net.sw(s).config().clone();
    let wide = Rate {
        per_second: 10_000_000,
        burst: 1_000_000,
    };
    config.rt.protect.host.control = wide;
    config.rt.protect.host.max_setups_in_progress = None;
    config.rt.protect.control_budget = Rate {
        per_second: 50_000,
        burst: 100,
    };
    *net.sw_mut(s) = Switch::new(config, net.now).expect("valid");
    net.link(a, 0, s, 0);
    net.link(b, 0, s, 1);
    net.link(m, 0, s, 2);
    net.announce(b);
    net.run_for(Duration::from_millis(5));
    let (ip_b, mac_m) = (net.h(b).ip, net.h(m).mac);
    net.request(a, open_request(ip_b, 10_000_000));
    net.run_for(Duration::from_millis(5));
    let Some(Reply::Opened {
        proxy_ip,
        proxy_mac,
        ..
    }) = net.h(a).replies.last().cloned()
    else {
        panic!("{:?}", net.h(a).replies);
    };
    let proxy_mac = proxy_mac.expect("per-hop admission has a proxy MAC");
    let handled_before = net.sw(s).stats().control_rx;
    let (mac_a, ip_a) = (net.h(a).mac, net.h(a).ip);
    for ms in 0..20u32 {
        for n in 0..1_000 {
            let k = ms * 1_000 + n;
            net.send(m, flood_setup(mac_m, k, nobody(k), 1_000));
        }
        net.send(a, udp_frame(mac_a, ip_a, proxy_mac, proxy_ip, ms as u8));
        net.run_for(Duration::from_millis(1));
    }
    let sw = net.sw(s);
    let handled = sw.stats().control_rx - handled_before;
    // At most burst + rate × 20 ms of control work (A's daemon sends none in these 20 ms).
    assert!(handled <= 100 + 50 * 20, "{handled}");
    assert!(handled >= 50 * 20, "{handled}");
    assert_eq!(
        sw.stats().protect.ports[2].control_over_budget,
        20_000 - handled
    );
    // Every frame of the reserved stream went through.
    assert_eq!(sw.stats().rt.forwarded, 20);
    assert_eq!(sw.stats().rt.queue_drops, 0);
    assert_eq!(net.h(b).received.len(), 20);
}

#[test]
fn a_gratuitous_arp_from_another_port_does_not_hijack_a_reservation() {
    // A (daemon) on port 0, B on port 1, the attacker M on port 2.
    let mut net = Net::new();
    let a = net.host(1, true);
    let b = net.host(2, false);
    let m = net.host(9, false);
    let s = star(&mut net, &[a, b, m]);
    net.announce(b);
    net.run_for(Duration::from_millis(5));
    let (ip_b, mac_b, mac_m) = (net.h(b).ip, net.h(b).mac, net.h(m).mac);
    // M says B's address is at M; then, with B's own MAC as source, that B is on its port.
    net.send(m, garp(mac_m, mac_m, ip_b));
    net.run_for(Duration::from_millis(1));
    net.send(m, garp(mac_b, mac_b, ip_b));
    net.run_for(Duration::from_millis(1));
    let sw = net.sw(s);
    assert_eq!(sw.arp_lookup(ip_b), Some(mac_b));
    assert_eq!(sw.lookup(mac_b, net.now), Some(PortId(1)));
    let p = &sw.stats().protect;
    // The ARP binding (twice) and the learning-table entry of B's MAC were refused.
    assert_eq!(p.ports[2].arp_move_refused, 3);
    // B was re-probed on its port after each claim, and answered each time.
    assert_eq!(p.arp_reprobes_sent, 2);
    assert_eq!(p.arp_kept_after_probe, 2);
    // Long after the re-probe's time-out nothing has moved, and the reservation goes to B.
    net.run_for(Duration::from_secs(1));
    assert_eq!(net.sw(s).stats().protect.arp_moved_after_probe, 0);
    net.request(a, open_request(ip_b, 10_000_000));
    net.run_for(Duration::from_millis(5));
    assert!(matches!(
        net.h(a).replies.last(),
        Some(Reply::Opened { hops: 1, .. })
    ));
    let entries: Vec<_> = net.sw(s).connections().iter().map(|(_, e)| *e).collect();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].out_port, PortId(1));
    assert_eq!(entries[0].receiver_mac, Some(mac_b));
}

#[test]
fn a_host_that_really_moved_is_found_after_its_old_port_stays_silent() {
    let mut net = Net::new();
    let a = net.host(1, true);
    let b = net.host(2, false);
    let s = net.switch(&[RATE, RATE, RATE]);
    net.link(a, 0, s, 0);
    net.link(b, 0, s, 1);
    net.announce(b);
    net.run_for(Duration::from_millis(5));
    let (ip_b, mac_b) = (net.h(b).ip, net.h(b).mac);
    // B is moved to port 2 (nobody tells the switch) and announces itself there.
    net.unlink(s, 1);
    net.link(b, 0, s, 2);
    net.announce(b);
    net.run_for(Duration::from_millis(1));
    assert_eq!(net.sw(s).lookup(mac_b, net.now), Some(PortId(1)));
    assert_eq!(net.sw(s).stats().protect.arp_reprobes_sent, 1);
    // Nobody answers on port 1: after the re-probe's time-out (200 ms) B is on port 2.
    net.run_for(Duration::from_millis(150));
    assert_eq!(net.sw(s).lookup(mac_b, net.now), Some(PortId(1)));
    net.run_for(Duration::from_millis(60));
    let sw = net.sw(s);
    assert_eq!(sw.lookup(mac_b, net.now), Some(PortId(2)));
    assert_eq!(sw.stats().protect.arp_moved_after_probe, 1);
    net.request(a, open_request(ip_b, 1_000_000));
    net.run_for(Duration::from_millis(5));
    let entries: Vec<_> = net.sw(s).connections().iter().map(|(_, e)| *e).collect();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].out_port, PortId(2));
}

#[test]
fn a_static_binding_never_moves() {
    let mut net = Net::new();
    let a = net.host(1, true);
    let b = net.host(2, false);
    let m = net.host(9, false);
    let s = net.switch(&[RATE, RATE, RATE]);
    let (ip_b, mac_b, mac_m) = (net.h(b).ip, net.h(b).mac, net.h(m).mac);
    let mut config = net.sw(s).config().clone();
    config.rt.protect.static_arp = vec![StaticBinding {
        ip: ip_b,
        mac: mac_b,
        port: PortId(1),
    }];
    *net.sw_mut(s) = Switch::new(config, net.now).expect("valid");
    net.link(a, 0, s, 0);
    net.link(b, 0, s, 1);
    net.link(m, 0, s, 2);
    net.run_for(Duration::from_millis(5));
    // B never spoke; M claims its address and its MAC.
    net.send(m, garp(mac_m, mac_m, ip_b));
    net.send(m, garp(mac_b, mac_b, ip_b));
    net.run_for(Duration::from_secs(1));
    let sw = net.sw(s);
    assert_eq!(sw.arp_lookup(ip_b), Some(mac_b));
    assert_ne!(sw.lookup(mac_b, net.now), Some(PortId(2)));
    // M's two ARPs and the frame from B's MAC on M's port.
    assert_eq!(sw.stats().protect.arp_static_refused, 3);
    assert_eq!(sw.stats().protect.arp_reprobes_sent, 0);
    // The reservation is routed by the static binding, without any ARP from B.
    net.request(a, open_request(ip_b, 1_000_000));
    net.run_for(Duration::from_millis(5));
    let entries: Vec<_> = net.sw(s).connections().iter().map(|(_, e)| *e).collect();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].out_port, PortId(1));
    assert_eq!(entries[0].receiver_mac, Some(mac_b));
}

#[test]
fn a_static_binding_on_a_missing_port_is_a_config_error() {
    let mut config = rt_switch_config(0, &[RATE, RATE]);
    config.rt.protect.static_arp = vec![StaticBinding {
        ip: Ipv4Addr::new(198, 18, 0, 2),
        mac: Address([2, 0, 0, 0, 0, 2]),
        port: PortId(2),
    }];
    assert!(matches!(
        Switch::new(config, Instant::ZERO),
        Err(ConfigError::StaticArpPort { port: 2, .. })
    ));
}

/// A host flooding frames to addresses nobody has fills only its own share of the held-frame
/// pool (a quarter of it on a host port), so a frame from another host to a destination the
/// switch has not learnt yet is still held, probed for, and delivered.
#[test]
fn a_flood_to_unknown_destinations_fills_only_its_ports_share_of_held_frames() {
    let mut net = Net::new();
    let a = net.host(1, false);
    let b = net.host(2, false);
    let m = net.host(3, false);
    let s = star(&mut net, &[a, b, m]);
    net.run_for(Duration::from_millis(5));
    let capacity = net.sw(s).config().pending_capacity;
    let share = (capacity * 25).div_ceil(100);
    let (mac_m, ip_m) = (net.h(m).mac, net.h(m).ip);
    for n in 0..100u32 {
        let dst = Address([2, 0xdd, 0, 0, (n >> 8) as u8, n as u8]);
        net.send(m, udp_frame(mac_m, ip_m, dst, nobody(n), n as u8));
    }
    net.run_for(Duration::from_micros(10));
    assert_eq!(net.sw(s).pending_len(), share);
    // b has sent nothing: the switch does not know where it is.
    let (mac_a, ip_a, mac_b, ip_b) = (net.h(a).mac, net.h(a).ip, net.h(b).mac, net.h(b).ip);
    net.send(a, udp_frame(mac_a, ip_a, mac_b, ip_b, 7));
    net.run_for(Duration::from_millis(5));
    assert_eq!(net.h(b).received.len(), 1, "a's frame was not held for b");
    let stats = net.sw(s).stats();
    assert_eq!(
        stats.protect.ports[2].pending_over_share,
        100 - share as u64
    );
    assert_eq!(stats.protect.ports[0].pending_over_share, 0);
    assert_eq!(stats.drop_pending_full, 100 - share as u64);
    assert_eq!(stats.released, 1);
}
