//! Fuzzes the router core (`docs/qsr.md` §2.1) with whatever its ports receive: records
//! `[port, advance, len_hi, len_lo, frame…]` as in `switch_frames` — virtual time advances by
//! `advance × 37 µs`, due timers run, the frame goes to `Router::handle_frame` on port
//! `port % 3`, every port is drained and trapped frames taken — then the router's own deadlines
//! (ARP retries and give-ups) run for up to 60 s. Three paced ports on 198.18.{1,2,3}.0/24 with
//! a static route and a default route, answering locally.
#![no_main]

use std::net::Ipv4Addr;
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use rtlan_core::router::node::MAX_FRAME;
use rtlan_core::router::{Ipv4Prefix, Router, RouterConfig, RouterPort, StaticRoute};
use rtlan_core::{Instant, Medium, Node, PortId};
use rtlan_wire::ethernet::Address;

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
    config
}

fn drain(router: &mut Router, now: Instant, buf: &mut [u8]) {
    for port in 0..PORTS {
        while let Some(len) = router.poll_transmit(now, PortId(port), buf) {
            assert!(len <= buf.len());
        }
    }
    while router.poll_trapped().is_some() {}
}

fuzz_target!(|data: &[u8]| {
    let Ok(mut router) = Router::new(config(), Instant::ZERO) else {
        panic!("the fixed configuration is valid");
    };
    let mut buf = vec![0u8; MAX_FRAME];
    let mut now = Instant::ZERO;
    let mut rest = data;
    while let [port, advance, hi, lo, tail @ ..] = rest {
        let len = usize::from(u16::from_be_bytes([*hi, *lo])).min(tail.len());
        let (frame, next) = tail.split_at(len);
        rest = next;
        now += Duration::from_micros(u64::from(*advance) * 37);
        if router.poll_timeout().is_some_and(|t| t <= now) {
            router.handle_timeout(now);
        }
        router.handle_frame(now, PortId(u16::from(*port) % PORTS), frame);
        drain(&mut router, now, &mut buf);
    }
    let end = now + Duration::from_secs(60);
    for _ in 0..200 {
        let Some(t) = router.poll_timeout() else {
            break;
        };
        if t > end {
            break;
        }
        now = now.max(t);
        router.handle_timeout(now);
        drain(&mut router, now, &mut buf);
    }
});
