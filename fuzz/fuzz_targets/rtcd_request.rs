//! Fuzzes the host daemon's client requests (docs/rtcd.md): request bodies of the management
//! envelope (docs/mgmt.md; the `id` next to `op` is ignored by the decoder) decoded into
//! `rtlan_core::rtcd::Request` and handed to the core, with the control replies and manager
//! answers a hostile path could send, never panic the daemon.
#![no_main]

use std::net::Ipv4Addr;

use libfuzzer_sys::fuzz_target;
use rtlan_core::rtcd::{Action, Admission, ClientId, Config, ManagerAnswer, Request, Rtcd};
use rtlan_core::Instant;
use rtlan_wire::ethernet::Address;

fuzz_target!(|data: &[u8]| {
    let admission = match data.first().map(|b| b % 3) {
        Some(0) | None => Admission::Local,
        Some(1) => Admission::Central,
        Some(_) => Admission::Both,
    };
    let config = Config {
        admission,
        ..Config::new(
            Address([2, 0, 0, 0, 0, 1]),
            Ipv4Addr::new(198, 18, 0, 1),
            100_000_000,
        )
    };
    let mut d = Rtcd::new(config, Instant::ZERO).expect("valid config");
    let client = ClientId(1);
    d.handle_client_request(Instant::ZERO, client, 0, Request::Register { pid: 1 });
    let body = data.get(1..).unwrap_or_default();
    for (i, line) in body.split(|&b| b == b'\n').take(16).enumerate() {
        let now = Instant::from_nanos(i as u64 * 50_000_000);
        match serde_json::from_slice::<Request>(line) {
            Ok(req) => d.handle_client_request(now, client, i as u64, req),
            // Not a request: feed the bytes as a control payload from the switch instead.
            Err(_) => {
                let _ = d.handle_control_payload(now, line);
            }
        }
        while let Some(a) = d.poll_action() {
            if let Action::ManagerAdmit { conn, .. } = a {
                let answer = if line.len() % 2 == 0 {
                    ManagerAnswer::Admitted {
                        manager_conn: i as u64,
                        delay_bound_us: 1000,
                        hops: 1,
                    }
                } else {
                    ManagerAnswer::Refused("no".into())
                };
                d.handle_manager_answer(now, conn, answer);
            }
        }
        if let Some(t) = d.poll_timeout() {
            d.handle_timeout(t);
        }
    }
    d.handle_client_gone(Instant::from_nanos(u64::MAX / 2), client);
    while d.poll_action().is_some() {}
});
