//! Forwarding cost of the switch core (EtheReal §3.3's non-real-time path): one learnt-unicast
//! frame through `handle_frame` and back out of `poll_transmit`, for 64- and 1500-byte frames.
//! The time per iteration is the cost per frame (criterion also reports frames per second).
//!
//! `rt_lookup` measures the real-time data path's connection-table lookup and id swap
//! ([`rt::forward_data`], EtheReal §3.3) in a table of 10,000 connections spread over 4 input
//! ports, one frame per iteration, cycling through the connections.
//!
//! `control` measures what one control message costs the switch core (EtheReal §2.2/§3.4
//! signalling; the figure behind the control budget of `switch/protect.rs`): a SETUP whose
//! receiver is known (admitted, installed, SETUP_OK queued), a SETUP to an unknown receiver
//! (held in progress, ARP probe queued), and a control frame dropped by its port's policer.
//! Only the `handle_frame` and `poll_transmit` calls are timed; a fresh switch is built every
//! 1,000 SETUPs, untimed.

use std::hint::black_box;
use std::time::Duration;

use std::net::Ipv4Addr;

use criterion::{criterion_main, Criterion, Throughput};
use rtlan_core::switch::rt::{self, ConnectionTable, RequestKey, RtEntry, RtStats};
use rtlan_core::switch::{
    PortConfig, PortId, Rate, RtConfig, Switch, SwitchConfig, UnknownUnicast, MAX_FRAME_LEN,
};
use rtlan_core::Instant;
use rtlan_wire::control::ProxyMacPlan;
use rtlan_wire::control::{Message, Repr, SetupRepr};
use rtlan_wire::ethernet::Address;

const A: Address = Address([0x02, 0, 0, 0, 0, 0x0a]);
const B: Address = Address([0x02, 0, 0, 0, 0, 0x0b]);

fn frame(dst: Address, src: Address, len: usize) -> Vec<u8> {
    let mut f = vec![0u8; len];
    f[0..6].copy_from_slice(&dst.0);
    f[6..12].copy_from_slice(&src.0);
    f[12..14].copy_from_slice(&0x88b5u16.to_be_bytes());
    f
}

/// A two-port switch, unpaced, with A learnt on port 0 and B on port 1.
fn learnt_switch() -> Switch {
    let config = SwitchConfig {
        mac: Address([0x02, 0x5e, 0, 0, 0, 0xfe]),
        mgmt_ip: None,
        ports: (0..2u8)
            .map(|i| PortConfig {
                name: format!("p{i}"),
                mac: Address([0x02, 0x5e, 0, 0, 1, i]),
                medium: rtlan_core::Medium::Unpaced,
                security: Default::default(),
            })
            .collect(),
        unknown_unicast: UnknownUnicast::ArpProbe,
        cycle_time: Duration::from_millis(10),
        ageing_time: Duration::from_secs(300),
        nrt_queue_bytes: None,
        pending_capacity: 64,
        pending_timeout: Duration::from_millis(100),
        rt: RtConfig {
            hello_interval: None,
            ..RtConfig::default()
        },
        stp: None,
    };
    let mut sw = Switch::new(config, Instant::ZERO).expect("benchmark configuration is valid");
    let mut buf = [0u8; MAX_FRAME_LEN];
    sw.handle_frame(Instant::ZERO, PortId(0), &frame(Address::BROADCAST, A, 60));
    sw.handle_frame(Instant::ZERO, PortId(1), &frame(Address::BROADCAST, B, 60));
    for port in [PortId(0), PortId(1)] {
        while sw.poll_transmit(Instant::ZERO, port, &mut buf).is_some() {}
    }
    sw
}

fn unicast(c: &mut Criterion) {
    let mut group = c.benchmark_group("learnt_unicast");
    group.throughput(Throughput::Elements(1));
    for len in [64usize, 1500] {
        let mut sw = learnt_switch();
        let to_b = frame(B, A, len);
        let mut buf = [0u8; MAX_FRAME_LEN];
        let now = Instant::from_nanos(1_000);
        group.bench_function(format!("{len}B_handle_frame+poll_transmit"), |bench| {
            bench.iter(|| {
                sw.handle_frame(now, PortId(0), black_box(&to_b));
                black_box(sw.poll_transmit(now, PortId(1), &mut buf))
            })
        });
        assert_eq!(sw.stats().ports[1].drop_queue_full, 0);
    }
    group.finish();
}

/// Connections in the `rt_lookup` table.
const RT_CONNECTIONS: u16 = 10_000;

fn rt_lookup(c: &mut Criterion) {
    let plan = ProxyMacPlan::DEFAULT;
    let mut table = ConnectionTable::new(usize::from(RT_CONNECTIONS));
    // (input port, input id) of every connection; the output id equals the input id, so the
    // in-place swap leaves the frame as it was and the same frames can be reused.
    let keys: Vec<(PortId, u16)> = (0..RT_CONNECTIONS)
        .map(|n| (PortId(n % 4), plan.reserved + n / 4))
        .collect();
    for (n, &(port, id)) in keys.iter().enumerate() {
        let entry = RtEntry {
            out_port: PortId(4),
            out_id: id,
            receiver_ip: None,
            receiver_mac: None,
            rate_bps: 100_000,
            max_burst: 200,
            max_packet: 100,
            request: RequestKey {
                in_port: port,
                src_mac: A,
                epoch: 0,
                request_id: u32::try_from(n).unwrap_or(u32::MAX),
            },
            flow: None,
            policer: None,
            nonconforming: 0,
        };
        table
            .insert(port, id, entry)
            .expect("distinct keys below the capacity");
    }
    let mut frames: Vec<Vec<u8>> = keys
        .iter()
        .map(|&(_, id)| frame(plan.mac_for(id), A, 64))
        .collect();
    let mut stats = RtStats::default();
    let mut next = 0usize;
    let mut group = c.benchmark_group("rt_lookup");
    group.throughput(Throughput::Elements(1));
    group.bench_function("10k_connections_forward_data", |bench| {
        bench.iter(|| {
            let (port, _) = keys[next];
            let out = rt::forward_data(&mut frames[next], port, &table, &plan, &mut stats);
            next = (next + 1) % keys.len();
            black_box(out)
        })
    });
    group.finish();
    assert_eq!(stats.unknown_id_drops, 0);
}

/// A 100 Mbit/s two-port switch with B (198.18.0.2) announced on port 1; with `wide`, its
/// policers and per-port shares opened so that every SETUP is handled.
fn control_switch(wide: bool) -> Switch {
    let mut rt = RtConfig {
        hello_interval: None,
        ..RtConfig::default()
    };
    if wide {
        let wide = Rate {
            per_second: u32::MAX,
            burst: u32::MAX,
        };
        rt.protect.host.control = wide;
        rt.protect.host.arp_probes = wide;
        rt.protect.control_budget = wide;
        rt.protect.host.connection_share_percent = 100;
        rt.protect.host.max_setups_in_progress = None;
    }
    let config = SwitchConfig {
        mac: Address([0x02, 0x5e, 0, 0, 0, 0xfe]),
        mgmt_ip: None,
        ports: (0..2u8)
            .map(|i| PortConfig {
                name: format!("p{i}"),
                mac: Address([0x02, 0x5e, 0, 0, 1, i]),
                medium: rtlan_core::Medium::FullDuplex {
                    rate_bps: 1_000_000_000,
                },
                security: Default::default(),
            })
            .collect(),
        unknown_unicast: UnknownUnicast::ArpProbe,
        cycle_time: Duration::from_millis(10),
        ageing_time: Duration::from_secs(300),
        nrt_queue_bytes: None,
        pending_capacity: 64,
        pending_timeout: Duration::from_millis(100),
        rt,
        stp: None,
    };
    let mut sw = Switch::new(config, Instant::ZERO).expect("benchmark configuration is valid");
    let mut garp = frame(Address::BROADCAST, B, 60);
    garp[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
    garp[14..22].copy_from_slice(&[0, 1, 8, 0, 6, 4, 0, 1]);
    garp[22..28].copy_from_slice(&B.0);
    garp[28..32].copy_from_slice(&[198, 18, 0, 2]);
    garp[38..42].copy_from_slice(&[198, 18, 0, 2]);
    sw.handle_frame(Instant::ZERO, PortId(1), &garp);
    assert_eq!(sw.arp_lookup(Ipv4Addr::new(198, 18, 0, 2)), Some(B));
    sw
}

/// SETUP number `n` from A at hop 0 towards `dst_ip`, 10 kbit/s.
fn setup_frame(n: u32, dst_ip: Ipv4Addr) -> Vec<u8> {
    let repr = Repr::new(
        0,
        n + 1,
        Message::Setup(SetupRepr {
            src_ip: Ipv4Addr::new(198, 18, 0, 1),
            dst_ip,
            dst_port: 5004,
            src_port: 0,
            rate: 10_000,
            max_burst: 200,
            max_packet: 200,
            connection_id: 0x100 + n as u16,
            hop_limit: 16,
        }),
    );
    let mut buf = vec![0u8; 128];
    let len = repr
        .emit_frame(A, ProxyMacPlan::DEFAULT.control_mac(), &mut buf)
        .expect("fits");
    buf.truncate(len.max(60));
    buf
}

/// A benchmark case: name, policers opened wide, the receiver of SETUP `n`.
type ControlCase = (&'static str, bool, fn(u32) -> Ipv4Addr);

fn control(c: &mut Criterion) {
    let mut group = c.benchmark_group("control");
    group.throughput(Throughput::Elements(1));
    let cases: [ControlCase; 3] = [
        ("setup_known_receiver", true, |_| {
            Ipv4Addr::new(198, 18, 0, 2)
        }),
        ("setup_unknown_receiver", true, |n| {
            Ipv4Addr::from(0x0a00_0000 + n)
        }),
        ("policed", false, |_| Ipv4Addr::new(198, 18, 0, 2)),
    ];
    for (name, wide, dst) in cases {
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let mut buf = [0u8; MAX_FRAME_LEN];
                let mut total = Duration::ZERO;
                let mut sw = control_switch(wide);
                let mut n = 0u32;
                if !wide {
                    // Spend the port's control burst first: every SETUP after it is policed.
                    for i in 0..1_000 {
                        sw.handle_frame(Instant::ZERO, PortId(0), &setup_frame(i, dst(i)));
                    }
                }
                let frames: Vec<Vec<u8>> = (0..1_000).map(|i| setup_frame(i, dst(i))).collect();
                for _ in 0..iters {
                    if n == 1_000 {
                        if wide {
                            sw = control_switch(wide);
                        }
                        n = 0;
                    }
                    let f = &frames[n as usize];
                    let start = std::time::Instant::now();
                    sw.handle_frame(Instant::ZERO, PortId(0), black_box(f));
                    for port in [PortId(0), PortId(1)] {
                        while sw.poll_transmit(Instant::ZERO, port, &mut buf).is_some() {}
                    }
                    total += start.elapsed();
                    n += 1;
                }
                total
            });
        });
    }
    group.finish();
}

/// The benchmark group (in its own module because `criterion_group!` writes an undocumented
/// `pub fn`).
pub mod group {
    #![allow(missing_docs)]
    criterion::criterion_group!(benches, super::unicast, super::rt_lookup, super::control);
}

criterion_main!(group::benches);
