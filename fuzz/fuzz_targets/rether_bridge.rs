//! Fuzzes the RETHER bridge (`rtlan_core::rether::bridge::Bridge`, RETHER §2.5,
//! docs/rether-bridge.md) through the shared node driver (records `[port, advance, len_hi,
//! len_lo, frame…]`, see `node_driver.rs`): three ports, each a segment (tokens, switches,
//! ordinary frames learnt and bridged, runts, link-local groups). A sub-connection with a
//! 5-tuple waits for admission on port 1, so the classifier meets live state; its listing and
//! the counters are read after every record.
#![no_main]

use std::net::Ipv4Addr;

use libfuzzer_sys::fuzz_target;
use rtlan_core::node::PortId;
use rtlan_core::rether::bridge::{Bridge, BridgeConfig, SubSpec};
use rtlan_core::rether::{Config, MAX_FRAME};
use rtlan_core::router::classify::FlowKey;
use rtlan_core::Instant;
use rtlan_wire::ethernet::Address;
use rtlan_wire::rether::NodeId;

#[path = "node_driver.rs"]
mod node_driver;

fuzz_target!(|data: &[u8]| {
    let id = NodeId::new(4).expect("a valid id");
    let stations = (0..3u8)
        .map(|p| {
            let mut c = Config::new(id, Address([2, 0, 0, 0, 3, p]), 10_000_000);
            c.nrt_queue_frames = 64;
            c
        })
        .collect();
    let mut config = BridgeConfig::new(stations);
    config.table_capacity = 16;
    let mut bridge = Bridge::new(config).expect("three ports");
    let flow = FlowKey {
        src: Ipv4Addr::new(198, 18, 0, 1),
        dst: Ipv4Addr::new(198, 18, 0, 4),
        protocol: 17,
        src_port: 0,
        dst_port: 9000,
    };
    let spec = SubSpec {
        bytes_per_trt: 5_000,
        max_frame: MAX_FRAME,
        flow,
    };
    let session = bridge.open(PortId(1), spec).expect("a valid spec");
    bridge
        .admit(Instant::ZERO, PortId(1), session)
        .expect("an open sub-connection");
    let mut buf = vec![0u8; MAX_FRAME];
    node_driver::drive(&mut bridge, data, &mut buf, |b| {
        while b.poll_event().is_some() {}
        let _ = b.sessions();
        let s = b.stats();
        assert_eq!(
            s.rx,
            s.rether + s.malformed + s.link_local + s.filtered + s.forwarded + s.flooded,
            "every frame received is counted once"
        );
    });
});
