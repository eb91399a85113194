//! Deterministic tests of the switch core on virtual time: frames built by hand, a switch driven
//! through `handle_frame` / `poll_transmit` / `handle_timeout`, and what comes out checked byte for
//! byte.

use std::net::Ipv4Addr;
use std::time::Duration;

use rtlan_wire::arp;
use rtlan_wire::ethernet::Address;

use super::*;

mod arp_probe;
mod forwarding;
mod pacing;
mod props;
mod rt_abuse;
mod rt_delay;
mod rt_failure;
mod rt_net;
mod rt_refresh;
mod rt_restart;
mod rt_sched;
mod rt_setup;
mod rt_signal;
mod rt_stp;

pub(super) const SWITCH_MAC: Address = Address([0x02, 0x5e, 0, 0, 0, 0xfe]);
pub(super) const MGMT_IP: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 254);
pub(super) const A: Address = Address([0x02, 0, 0, 0, 0, 0x0a]);
pub(super) const B: Address = Address([0x02, 0, 0, 0, 0, 0x0b]);
pub(super) const C: Address = Address([0x02, 0, 0, 0, 0, 0x0c]);
pub(super) const IP_A: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 10);
pub(super) const IP_B: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 11);
pub(super) const IP_C: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 12);

/// The MAC of port `i`.
pub(super) fn port_mac(i: usize) -> Address {
    Address([0x02, 0x5e, 0, 0, 1, i as u8])
}

pub(super) fn ms(n: u64) -> Instant {
    Instant::from_nanos(n * 1_000_000)
}

pub(super) fn us(n: u64) -> Instant {
    Instant::from_nanos(n * 1_000)
}

/// `ports` unpaced ports, ARP probing, 8 pending frames held for 100 ms, ageing after 300 s.
pub(super) fn config(ports: usize) -> SwitchConfig {
    SwitchConfig {
        mac: SWITCH_MAC,
        mgmt_ip: Some(MGMT_IP),
        ports: (0..ports)
            .map(|i| PortConfig {
                name: format!("p{i}"),
                mac: port_mac(i),
                medium: crate::node::Medium::Unpaced,
                security: Default::default(),
            })
            .collect(),
        unknown_unicast: UnknownUnicast::ArpProbe,
        cycle_time: Duration::from_millis(10),
        ageing_time: Duration::from_secs(300),
        nrt_queue_bytes: None,
        pending_capacity: 8,
        pending_timeout: Duration::from_millis(100),
        rt: RtConfig {
            hello_interval: None,
            ..RtConfig::default()
        },
        stp: None,
    }
}

pub(super) fn switch(ports: usize) -> Switch {
    Switch::new(config(ports), Instant::ZERO).expect("test configuration is valid")
}

/// An untagged Ethernet frame.
pub(super) fn eth(dst: Address, src: Address, ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut frame = Vec::with_capacity(14 + payload.len());
    frame.extend_from_slice(&dst.0);
    frame.extend_from_slice(&src.0);
    frame.extend_from_slice(&ethertype.to_be_bytes());
    frame.extend_from_slice(payload);
    frame
}

/// A minimal valid IPv4 header (no options, checksum left zero) plus `extra` payload bytes; `tag`
/// marks the packet (IP identification field) so tests can tell frames apart.
pub(super) fn ipv4(src: Ipv4Addr, dst: Ipv4Addr, tag: u16, extra: usize) -> Vec<u8> {
    let total = 20 + extra;
    let mut p = vec![0u8; total];
    p[0] = 0x45;
    p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    p[4..6].copy_from_slice(&tag.to_be_bytes());
    p[8] = 64;
    p[9] = 17;
    p[12..16].copy_from_slice(&src.octets());
    p[16..20].copy_from_slice(&dst.octets());
    p
}

/// An Ethernet frame carrying an IPv4 packet tagged `tag` from `src` to `dst`.
pub(super) fn ip_frame(dst: Address, src: Address, dst_ip: Ipv4Addr, tag: u16) -> Vec<u8> {
    eth(dst, src, 0x0800, &ipv4(IP_A, dst_ip, tag, 26))
}

/// The 28-byte ARP packet, written by hand (not with the wire crate's emitter it is compared with).
pub(super) fn arp_packet(
    op: u16,
    sha: Address,
    spa: Ipv4Addr,
    tha: Address,
    tpa: Ipv4Addr,
) -> Vec<u8> {
    let mut p = vec![0x00, 0x01, 0x08, 0x00, 6, 4];
    p.extend_from_slice(&op.to_be_bytes());
    p.extend_from_slice(&sha.0);
    p.extend_from_slice(&spa.octets());
    p.extend_from_slice(&tha.0);
    p.extend_from_slice(&tpa.octets());
    p
}

/// An ARP frame padded to 60 bytes.
pub(super) fn arp_frame(
    dst: Address,
    src: Address,
    op: u16,
    sha: Address,
    spa: Ipv4Addr,
    tha: Address,
    tpa: Ipv4Addr,
) -> Vec<u8> {
    let mut frame = eth(dst, src, 0x0806, &arp_packet(op, sha, spa, tha, tpa));
    frame.resize(60, 0);
    frame
}

/// Everything `port` sends at `now`.
pub(super) fn drain(sw: &mut Switch, now: Instant, port: usize) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut buf = [0u8; MAX_FRAME_LEN];
    while let Some(len) = sw.poll_transmit(now, PortId(port as u16), &mut buf) {
        out.push(buf[..len].to_vec());
    }
    out
}

/// Everything every port sends at `now`, per port.
pub(super) fn drain_all(sw: &mut Switch, now: Instant) -> Vec<Vec<Vec<u8>>> {
    (0..sw.port_count()).map(|p| drain(sw, now, p)).collect()
}

/// Checks the counter identities documented on [`SwitchStats`] and [`PortStats`].
pub(super) fn assert_counters_consistent(sw: &Switch) {
    let s = sw.stats();
    let rx: u64 = s.ports.iter().map(|p| p.rx_frames).sum();
    let accounted = s.drop_malformed
        + s.drop_to_switch
        + s.to_switch_arp
        + s.drop_same_port
        + s.drop_pending_full
        + s.drop_pending_timeout
        + s.flooded
        + s.forwarded
        + s.drop_preemptive
        + s.drop_policed
        + sw.pending_len() as u64;
    assert_eq!(
        rx, accounted,
        "every received frame is accounted for once: {s:#?}"
    );
    assert!(s.released <= s.held && s.held as usize >= sw.pending_len());
    let copies_per_flood = sw.port_count() as u64 - 1;
    let offered: u64 = s
        .ports
        .iter()
        .map(|p| p.tx_queued + p.drop_queue_full)
        .sum();
    assert_eq!(
        offered,
        s.forwarded
            + (s.flooded + s.arp_probes_sent) * copies_per_flood
            + s.arp_replies_sent
            + s.protect.arp_reprobes_sent,
        "every queued copy is accounted for: {s:#?}"
    );
    for (i, p) in s.ports.iter().enumerate() {
        assert_eq!(
            p.tx_queued,
            p.tx_frames + p.drop_tx_buffer + sw.queue_len(PortId(i as u16)) as u64
        );
        assert!(sw.queue_bytes(PortId(i as u16)) <= sw.queue_bound(PortId(i as u16)).unwrap_or(0));
    }
}

#[test]
fn wire_crate_emits_the_same_arp_bytes_as_the_test_helper() {
    // Guards the hand-written helper the other tests compare against.
    let repr = arp::Repr {
        operation: arp::Operation::Request,
        source_hardware_addr: A,
        source_protocol_addr: IP_A,
        target_hardware_addr: Address([0; 6]),
        target_protocol_addr: IP_B,
    };
    let mut buf = [0u8; 60];
    let len = repr
        .emit_frame(A, Address::BROADCAST, &mut buf)
        .expect("60 bytes hold an ARP frame");
    assert_eq!(len, 42);
    let expected = arp_frame(Address::BROADCAST, A, 1, A, IP_A, Address([0; 6]), IP_B);
    assert_eq!(&buf[..], &expected[..]);
}
