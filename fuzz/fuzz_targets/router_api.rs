//! Fuzzes the router's provisioned-pipe API (QSR §5; docs/router.md "Provisioned pipes"): HTTP
//! requests as the web page's server hands them over — `[selector, path_len, path…, body…]`
//! records separated by `\n`, the selector choosing the method, whether the body is declared
//! JSON, and how far virtual time advances — against a router with RSVP, whose pipes are then
//! signalled by its own timers. Every answer must be a JSON envelope with an `ok` field, and no
//! request may panic the router.
#![no_main]

use std::net::Ipv4Addr;

use libfuzzer_sys::fuzz_target;
use rtlan_core::router::{Ipv4Prefix, Router, RouterConfig, RouterPort, RsvpSettings, StaticRoute};
use rtlan_core::{Instant, Medium, Node, PortId};
use rtlan_linux::routerd::http_answer;
use rtlan_wire::ethernet::Address;

fn router() -> Router {
    let ports = (0..3u8)
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
    config.routes = vec![StaticRoute {
        prefix: Ipv4Prefix::new(Ipv4Addr::new(198, 18, 9, 0), 24).expect("valid"),
        gateway: Ipv4Addr::new(198, 18, 2, 2),
        metric: 1,
    }];
    config.rsvp = Some(RsvpSettings {
        refresh: std::time::Duration::from_secs(1),
        ..RsvpSettings::default()
    });
    Router::new(config, Instant::ZERO).expect("valid config")
}

fuzz_target!(|data: &[u8]| {
    let mut r = router();
    let mut now = Instant::ZERO;
    let mut buf = vec![0u8; 2048];
    for record in data.split(|&b| b == b'\n').take(32) {
        let [selector, path_len, rest @ ..] = record else {
            continue;
        };
        let method = ["GET", "POST", "DELETE", "PUT"][usize::from(selector % 4)];
        let json = selector & 4 != 0;
        let split = usize::from(*path_len).min(rest.len());
        let path = String::from_utf8_lossy(&rest[..split]);
        let path = if selector & 8 != 0 {
            format!("/api/pipes/{path}")
        } else if selector & 16 != 0 {
            "/api/pipes".to_string()
        } else {
            path.into_owned()
        };
        let (status, body) = http_answer(method, &path, json, &rest[split..], &mut r, now);
        assert!((200..600).contains(&status));
        if status != 200 || !path.is_empty() && path != "/" && path != "/index.html" {
            if let Ok(v) = serde_json::from_slice::<serde_json::Value>(&body) {
                assert!(v.get("ok").is_some(), "{v}");
            }
        }
        now = now + std::time::Duration::from_millis(u64::from(selector >> 5) * 300);
        if r.poll_timeout().is_some_and(|t| t <= now) {
            r.handle_timeout(now);
        }
        for p in 0..3u16 {
            while r.poll_transmit(now, PortId(p), &mut buf).is_some() {}
        }
        let _ = r.pipes(now);
    }
});
