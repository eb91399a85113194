//! Data-path tests: id swap at the first, middle and last switch, per-link validity, fuzzing.

use std::net::Ipv4Addr;

use proptest::prelude::*;
use rtlan_wire::control::ProxyMacPlan;
use rtlan_wire::ethernet::{Address, Frame};
use rtlan_wire::{ipv4, udp};

use super::*;

const SENDER_IP: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 1);
const PROXY_IP: Ipv4Addr = Ipv4Addr::new(198, 19, 3, 9);
const RECEIVER_IP: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 32);
const RECEIVER_MAC: Address = Address([0x02, 0, 0, 0, 0, 0x20]);
const SENDER_MAC: Address = Address([0x02, 0, 0, 0, 0, 0x01]);

/// An Ethernet frame (optionally with one 802.1Q tag) carrying a UDP datagram from the sender to
/// `dst_ip`, addressed to the proxy MAC of `id`, with valid checksums.
fn udp_frame(plan: &ProxyMacPlan, id: u16, dst_ip: Ipv4Addr, tagged: bool) -> Vec<u8> {
    let mut frame = Vec::new();
    frame.extend_from_slice(&plan.mac_for(id).0);
    frame.extend_from_slice(&SENDER_MAC.0);
    if tagged {
        frame.extend_from_slice(&[0x81, 0x00, 0x00, 0x2a]);
    }
    frame.extend_from_slice(&[0x08, 0x00]);
    let ip_at = frame.len();
    let payload = b"real-time payload";
    let udp_len = 8 + payload.len();
    let total = 20 + udp_len;
    frame.extend_from_slice(&[
        0x45,
        0,
        (total >> 8) as u8,
        total as u8,
        0x12,
        0x34,
        0x40,
        0,
    ]);
    frame.extend_from_slice(&[64, 17, 0, 0]);
    frame.extend_from_slice(&SENDER_IP.octets());
    frame.extend_from_slice(&dst_ip.octets());
    frame.extend_from_slice(&[0x13, 0x8c, 0x13, 0x8c, 0, udp_len as u8, 0, 0]);
    frame.extend_from_slice(payload);
    let mut ip = ipv4::Packet::new_checked(&mut frame[ip_at..]).unwrap();
    ip.fill_checksum();
    udp::Packet::new_checked(ip.payload_mut())
        .unwrap()
        .fill_checksum(SENDER_IP, dst_ip);
    frame
}

fn entry(out_port: u16, out_id: u16, request_id: u32) -> RtEntry {
    RtEntry {
        out_port: PortId(out_port),
        out_id,
        receiver_ip: None,
        receiver_mac: None,
        rate_bps: 2_000_000,
        max_burst: 3000,
        max_packet: 1500,
        request: RequestKey {
            in_port: PortId(0),
            src_mac: SENDER_MAC,
            epoch: 0,
            request_id,
        },
        flow: None,
        policer: None,
        nonconforming: 0,
    }
}

/// Checks the IPv4 and UDP checksums of `frame` and returns its destination IP.
fn verified_dst(frame: &[u8]) -> Ipv4Addr {
    let eth = Frame::new_checked(frame).unwrap();
    let ip = ipv4::Packet::new_checked(eth.payload()).unwrap();
    assert!(ip.verify_checksum(), "IPv4 checksum");
    let udp = udp::Packet::new_checked(ip.payload()).unwrap();
    assert_ne!(udp.checksum(), 0);
    assert!(
        udp.verify_checksum(ip.src_addr(), ip.dst_addr()),
        "UDP checksum"
    );
    ip.dst_addr()
}

#[test]
fn first_switch_swaps_id_and_rewrites_proxy_ip() {
    for (plan, tagged) in [
        (ProxyMacPlan::default(), false),
        (ProxyMacPlan::default(), true),
        (ProxyMacPlan::paper(), false),
    ] {
        let mut table = ConnectionTable::new(4);
        let mut first = entry(3, 0x0778, 1);
        first.receiver_ip = Some(RECEIVER_IP);
        table.insert(PortId(0), 0x0309, first).unwrap();
        let mut frame = udp_frame(&plan, 0x0309, PROXY_IP, tagged);
        assert_eq!(verified_dst(&frame), PROXY_IP);
        let original = frame.clone();
        let mut stats = RtStats::default();
        let out = forward_data(&mut frame, PortId(0), &table, &plan, &mut stats);
        assert_eq!(out, Ok(PortId(3)));
        assert_eq!(
            Frame::new_checked(&frame[..]).unwrap().dst_addr(),
            plan.mac_for(0x0778)
        );
        assert_eq!(verified_dst(&frame), RECEIVER_IP);
        let header = if tagged { 18 } else { 14 };
        // Only the MAC id bytes, the IP checksum, the IP destination and the UDP checksum changed.
        let changed: Vec<usize> = (0..frame.len())
            .filter(|&i| frame[i] != original[i])
            .collect();
        let allowed = [
            4,
            5,
            header + 10,
            header + 11,
            header + 16,
            header + 17,
            header + 18,
            header + 19,
            header + 26,
            header + 27,
        ];
        assert!(
            changed.iter().all(|i| allowed.contains(i)),
            "changed {changed:?}"
        );
        assert_eq!(stats.ip_rewrites, 1);
        assert_eq!(stats.id_swaps, 1);
        assert_eq!(stats.forwarded, 1);
    }
}

#[test]
fn middle_switch_swaps_only_the_id() {
    let plan = ProxyMacPlan::default();
    let mut table = ConnectionTable::new(4);
    table
        .insert(PortId(1), 0x0778, entry(2, 0x0abc, 1))
        .unwrap();
    // Past the first switch the frame already carries the receiver's IP.
    let mut frame = udp_frame(&plan, 0x0778, RECEIVER_IP, false);
    let original = frame.clone();
    let mut stats = RtStats::default();
    assert_eq!(
        forward_data(&mut frame, PortId(1), &table, &plan, &mut stats),
        Ok(PortId(2))
    );
    assert_eq!(frame[..6], plan.mac_for(0x0abc).0);
    assert_eq!(
        frame[6..],
        original[6..],
        "everything after the destination MAC untouched"
    );
    assert_eq!(stats.ip_rewrites, 0);
}

#[test]
fn last_switch_writes_receiver_mac() {
    let plan = ProxyMacPlan::default();
    let mut table = ConnectionTable::new(4);
    let mut last = entry(4, 0, 1);
    last.receiver_mac = Some(RECEIVER_MAC);
    table.insert(PortId(2), 0x0abc, last).unwrap();
    let mut frame = udp_frame(&plan, 0x0abc, RECEIVER_IP, true);
    let original = frame.clone();
    let mut stats = RtStats::default();
    assert_eq!(
        forward_data(&mut frame, PortId(2), &table, &plan, &mut stats),
        Ok(PortId(4))
    );
    assert_eq!(frame[..6], RECEIVER_MAC.0);
    assert_eq!(frame[6..], original[6..]);
    assert_eq!((stats.mac_rewrites, stats.id_swaps), (1, 0));
}

#[test]
fn single_switch_path_rewrites_ip_and_mac() {
    let plan = ProxyMacPlan::default();
    let mut table = ConnectionTable::new(4);
    let mut only = entry(1, 0, 1);
    only.receiver_ip = Some(RECEIVER_IP);
    only.receiver_mac = Some(RECEIVER_MAC);
    table.insert(PortId(0), 0x0309, only).unwrap();
    let mut frame = udp_frame(&plan, 0x0309, PROXY_IP, false);
    let mut stats = RtStats::default();
    assert_eq!(
        forward_data(&mut frame, PortId(0), &table, &plan, &mut stats),
        Ok(PortId(1))
    );
    assert_eq!(frame[..6], RECEIVER_MAC.0);
    assert_eq!(verified_dst(&frame), RECEIVER_IP);
}

#[test]
fn unknown_or_forged_ids_are_dropped_and_counted() {
    let plan = ProxyMacPlan::default();
    let mut table = ConnectionTable::new(4);
    table
        .insert(PortId(0), 0x0309, entry(3, 0x0778, 1))
        .unwrap();
    let mut stats = RtStats::default();
    // The right id on another link: forged, misses.
    let mut frame = udp_frame(&plan, 0x0309, PROXY_IP, false);
    let original = frame.clone();
    assert_eq!(
        forward_data(&mut frame, PortId(1), &table, &plan, &mut stats),
        Err(RtDrop::UnknownId {
            port: PortId(1),
            id: 0x0309
        })
    );
    assert_eq!(frame, original, "dropped frames are untouched");
    let mut frame = udp_frame(&plan, 0x030a, PROXY_IP, false);
    assert!(matches!(
        forward_data(&mut frame, PortId(0), &table, &plan, &mut stats),
        Err(RtDrop::UnknownId { .. })
    ));
    assert_eq!(stats.unknown_id_drops, 2);
    // Control ids and foreign prefixes are not real-time.
    let mut frame = udp_frame(&plan, 0x0001, PROXY_IP, false);
    assert_eq!(
        forward_data(&mut frame, PortId(0), &table, &plan, &mut stats),
        Err(RtDrop::NotRealTime)
    );
    let mut short = [0u8; 10];
    assert!(matches!(
        forward_data(&mut short, PortId(0), &table, &plan, &mut stats),
        Err(RtDrop::Malformed(_))
    ));
    assert_eq!(stats.malformed_drops, 2);
    assert_eq!(stats.forwarded, 0);
}

/// Only a first-hop entry polices: its frames beyond the T-SPEC are dropped unchanged and counted
/// exactly (per connection and in the stats, never as forwarded or rewritten); a later hop's entry
/// has no policer, so the same burst passes it whole.
#[test]
fn only_first_hop_entries_police_and_count_exactly() {
    let plan = ProxyMacPlan::default();
    let mut table = ConnectionTable::new(4);
    let mut first = entry(3, 0x0778, 1);
    first.receiver_ip = Some(RECEIVER_IP);
    let frame = udp_frame(&plan, 0x0309, PROXY_IP, false);
    let bits = rtlan_wire::cost::wire_bits(frame.len());
    // Room for two frames, refilled at 1 bit/s: the third of a burst does not conform.
    first.policer = Some(Policer::new(1, 2 * bits, crate::time::Instant::ZERO));
    table.insert(PortId(0), 0x0309, first).unwrap();
    table
        .insert(PortId(1), 0x0309, entry(2, 0x0555, 2))
        .unwrap();
    let mut stats = RtStats::default();
    let now = crate::time::Instant::ZERO;
    let mut outcomes = Vec::new();
    for _ in 0..5 {
        let mut f = frame.clone();
        let result = forward_policed(&mut f, PortId(0), &mut table, &plan, (now, &mut stats));
        match result.map(|e| e.out_port) {
            Ok(out) => outcomes.push(Ok(out)),
            Err(drop) => {
                assert_eq!(f, frame, "a non-conforming frame is dropped unchanged");
                outcomes.push(Err(drop));
            }
        }
    }
    let drop = Err(RtDrop::NonConforming {
        port: PortId(0),
        id: 0x0309,
    });
    assert_eq!(
        outcomes,
        vec![Ok(PortId(3)), Ok(PortId(3)), drop, drop, drop]
    );
    assert_eq!(table.lookup(PortId(0), 0x0309).unwrap().nonconforming, 3);
    assert_eq!(
        (
            stats.forwarded,
            stats.nonconforming_drops,
            stats.ip_rewrites
        ),
        (2, 3, 2)
    );
    // The later hop (no policer in its entry) forwards the whole burst.
    for _ in 0..5 {
        let mut f = frame.clone();
        let out = forward_policed(&mut f, PortId(1), &mut table, &plan, (now, &mut stats));
        assert_eq!(out.map(|e| e.out_port), Ok(PortId(2)));
    }
    assert_eq!(table.lookup(PortId(1), 0x0309).unwrap().nonconforming, 0);
    assert_eq!((stats.forwarded, stats.nonconforming_drops), (7, 3));
    // Unknown ids and malformed frames are counted as before, not as non-conforming.
    let mut f = udp_frame(&plan, 0x030a, PROXY_IP, false);
    assert!(matches!(
        forward_policed(&mut f, PortId(0), &mut table, &plan, (now, &mut stats)),
        Err(RtDrop::UnknownId { .. })
    ));
    assert_eq!((stats.unknown_id_drops, stats.nonconforming_drops), (1, 3));
}

#[test]
fn first_switch_drops_non_ipv4_unchanged() {
    let plan = ProxyMacPlan::default();
    let mut table = ConnectionTable::new(4);
    let mut first = entry(3, 0x0778, 1);
    first.receiver_ip = Some(RECEIVER_IP);
    table.insert(PortId(0), 0x0309, first).unwrap();
    let mut frame = udp_frame(&plan, 0x0309, PROXY_IP, false);
    frame[12..14].copy_from_slice(&[0x86, 0xdd]); // IPv6 ethertype
    let original = frame.clone();
    let mut stats = RtStats::default();
    assert!(matches!(
        forward_data(&mut frame, PortId(0), &table, &plan, &mut stats),
        Err(RtDrop::Rewrite(_))
    ));
    assert_eq!(frame, original);
    assert_eq!(stats.rewrite_drops, 1);
}

#[test]
fn setup_sequence_undoes_on_failure() {
    // The order a driver uses: book bandwidth, allocate an id, insert; undo on failure.
    let plan = ProxyMacPlan::default();
    let mut adm = Admission::new(&[100_000_000, 100_000_000]);
    let mut ids = IdAllocator::new(&plan);
    let booking = adm
        .try_book(PortId(1), wire_rate(50_000_000, 1514), 0)
        .unwrap();
    let id = ids.allocate().unwrap();
    assert!(adm
        .try_book(PortId(1), wire_rate(10_000_000, 1514), 0)
        .is_err());
    ids.release(id).unwrap();
    adm.release(booking).unwrap();
    assert_eq!(ids.in_use(), 0);
    assert_eq!(adm.port(PortId(1)).unwrap().booked_bps, 0);
}

proptest! {
    #[test]
    fn random_frames_never_panic(
        bytes in proptest::collection::vec(any::<u8>(), 0..200),
        id in any::<u16>(),
        port in 0u16..3,
        first in any::<bool>(),
        last in any::<bool>(),
    ) {
        let plan = ProxyMacPlan::default();
        let mut table = ConnectionTable::new(4);
        let mut e = entry(1, 0x0778, 1);
        if first { e.receiver_ip = Some(RECEIVER_IP); }
        if last { e.receiver_mac = Some(RECEIVER_MAC); }
        table.insert(PortId(0), id, e).unwrap();
        let mut frame = bytes;
        // Aim half the inputs at the connection so the rewrite paths run on garbage.
        if frame.len() >= 6 && id % 2 == 0 {
            frame[..6].copy_from_slice(&plan.mac_for(id).0);
        }
        let original = frame.clone();
        let mut stats = RtStats::default();
        match forward_data(&mut frame, PortId(port), &table, &plan, &mut stats) {
            Ok(out) => {
                prop_assert_eq!(out, PortId(1));
                prop_assert_eq!(stats.forwarded, 1);
            }
            Err(_) => {
                prop_assert_eq!(&frame, &original);
                prop_assert_eq!(stats.forwarded, 0);
            }
        }
    }
}
