//! Forwarding cost of the switch core (EtheReal §3.3's non-real-time path): one learnt-unicast
//! frame through `handle_frame` and back out of `poll_transmit`, for 64- and 1500-byte frames.
//! The time per iteration is the cost per frame (criterion also reports frames per second).

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_main, Criterion, Throughput};
use rtlan_core::switch::{
    PortConfig, PortId, RtConfig, Switch, SwitchConfig, UnknownUnicast, MAX_FRAME_LEN,
};
use rtlan_core::Instant;
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
                rate_bps: None,
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

/// The benchmark group (in its own module because `criterion_group!` writes an undocumented
/// `pub fn`).
pub mod group {
    #![allow(missing_docs)]
    criterion::criterion_group!(benches, super::unicast);
}

criterion_main!(group::benches);
