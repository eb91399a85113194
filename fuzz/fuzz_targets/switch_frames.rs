//! Fuzzes the switch core with whatever its ports receive (issue 12 item 8: network input never
//! panics a process). The input is a sequence of records `[port, advance, len_hi, len_lo,
//! frame…]`: each advances virtual time by `advance × 37 µs`, runs the switch's due timers, hands
//! the frame to `Switch::handle_frame` on port `port % 3` and drains every port; at the end time
//! runs on through the switch's own deadlines (retransmissions, probes, ageing, refresh expiry).
//! The switch runs with real-time signalling, 3 paced 100 Mbit/s ports and small tables.
#![no_main]

use std::net::Ipv4Addr;
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use rtlan_core::switch::{
    PortConfig, RtConfig, Switch, SwitchConfig, UnknownUnicast, MAX_FRAME_LEN,
};
use rtlan_core::{Instant, Medium};
use rtlan_wire::ethernet::Address;

#[path = "node_driver.rs"]
mod node_driver;

const PORTS: u16 = 3;

fn config() -> SwitchConfig {
    SwitchConfig {
        mac: Address([0x02, 0x5e, 0, 1, 0, 0xfe]),
        mgmt_ip: Some(Ipv4Addr::new(198, 18, 255, 1)),
        ports: (0..PORTS)
            .map(|i| PortConfig {
                name: format!("p{i}"),
                mac: Address([0x02, 0x5e, 0, 1, 1, i as u8]),
                medium: Medium::FullDuplex {
                    rate_bps: 100_000_000,
                },
                security: Default::default(),
            })
            .collect(),
        unknown_unicast: UnknownUnicast::ArpProbe,
        cycle_time: Duration::from_millis(10),
        ageing_time: Duration::from_secs(300),
        // Small tables and queues: each execution builds a switch, and its storage is
        // allocated up front.
        nrt_queue_bytes: Some(64 * 1024),
        pending_capacity: 16,
        pending_timeout: Duration::from_millis(100),
        rt: RtConfig {
            max_connections: 64,
            ..RtConfig::default()
        },
        stp: None,
    }
}


fuzz_target!(|data: &[u8]| {
    let Ok(mut switch) = Switch::new(config(), Instant::ZERO) else {
        panic!("the fixed configuration is valid");
    };
    let mut buf = vec![0u8; MAX_FRAME_LEN];
    node_driver::drive(&mut switch, data, &mut buf, |_| {});
});
