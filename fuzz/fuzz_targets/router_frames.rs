//! Fuzzes the router core (`docs/qsr.md` §2.1) with whatever its ports receive: records
//! `[port, advance, len_hi, len_lo, frame…]` as in `switch_frames` — virtual time advances by
//! `advance × 37 µs`, due timers run, the frame goes to `Router::handle_frame` on port
//! `port % 3`, every port is drained and trapped frames taken — then the router's own deadlines
//! (ARP retries, give-ups, RSVP refreshes and lifetimes) run for up to 60 s. Three paced ports
//! on 198.18.{1,2,3}.0/24 with a static route and a default route, answering locally, with RSVP
//! on (1 s refreshes), so RSVP messages drive the engine and labelled frames the label table.
#![no_main]

use std::net::Ipv4Addr;

use libfuzzer_sys::fuzz_target;
use rtlan_core::router::node::MAX_FRAME;
use rtlan_core::router::{
    Ipv4Prefix, Router, RouterConfig, RouterPort, RsvpSettings, StaticRoute,
};
use rtlan_core::{Instant, Medium};
use rtlan_wire::ethernet::Address;

#[path = "node_driver.rs"]
mod node_driver;

const PORTS: u16 = 3;

fn config() -> RouterConfig {
    let ports = (0..PORTS as u8)
        .map(|i| RouterPort {
            name: format!("p{i}"),
            mac: Address([0x02, 0xaa, 0, 0, 0, i]),
            addr: Ipv4Addr::new(198, 18, 1 + i, 1),
            prefix_len: 24,
            medium: Medium::FullDuplex {
                rate_bps: 100_000_000,
            },
        })
        .collect();
    let mut config = RouterConfig::new(ports);
    config.routes = vec![
        StaticRoute {
            prefix: Ipv4Prefix::new(Ipv4Addr::new(198, 19, 0, 0), 16).expect("valid"),
            gateway: Ipv4Addr::new(198, 18, 2, 2),
            metric: 1,
        },
        StaticRoute {
            prefix: Ipv4Prefix::DEFAULT,
            gateway: Ipv4Addr::new(198, 18, 3, 2),
            metric: 1,
        },
    ];
    config.default_queue_bytes = Some(64 * 1024);
    config.rsvp = Some(RsvpSettings {
        refresh: std::time::Duration::from_secs(1),
        ..RsvpSettings::default()
    });
    config
}


fuzz_target!(|data: &[u8]| {
    let Ok(mut router) = Router::new(config(), Instant::ZERO) else {
        panic!("the fixed configuration is valid");
    };
    let mut buf = vec![0u8; MAX_FRAME];
    node_driver::drive(&mut router, data, &mut buf, |r| {
        while r.poll_trapped().is_some() {}
    });
});
