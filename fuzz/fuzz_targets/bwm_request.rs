//! Fuzzes the bandwidth manager's request handling (docs/bwm.md): any request line of the
//! management envelope (docs/mgmt.md) is either refused by the JSON decoder or handled by
//! `Manager::handle_request_as` without panicking, and the reply echoes the request id; the
//! bookings stay consistent (every connection to a destination has a path; best-effort bookings
//! have none). Lines are sent in turn by two clients and an operator: a client never sees
//! another's booking in `list`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rtlan_core::bwm::{
    Caller, LinkSpec, Manager, ManagerConfig, Reply, Request, Role, SwitchSpec, Topology,
};
use rtlan_core::Instant;

fn topology() -> Topology {
    let link = |a: &str, b: &str| LinkSpec {
        ends: [a.into(), b.into()],
        rate_bps: 98_600_000,
    };
    Topology {
        switches: ["s1", "s2"]
            .map(|n| SwitchSpec {
                name: n.into(),
                t_mux_ns: 45_000,
                buffer_bytes: 128 * 1024,
            })
            .to_vec(),
        links: vec![
            link("a", "s1"),
            link("b", "s1"),
            link("s1", "s2"),
            link("c", "s2"),
        ],
        hosts: Vec::new(),
        rtlan: Vec::new(),
    }
}

fuzz_target!(|data: &[u8]| {
    let mut m = Manager::new(topology(), ManagerConfig::default()).expect("valid topology");
    let who = |principal: &str, role| Caller {
        principal: principal.into(),
        role,
    };
    let callers = [
        who("host-a", Role::Client),
        who("host-b", Role::Client),
        who("ops", Role::Operator),
    ];
    // Several requests per input, one per line, on advancing time (best-effort expiry).
    for (i, line) in data.split(|&b| b == b'\n').take(16).enumerate() {
        let Ok(req) = serde_json::from_slice::<Request>(line) else {
            continue;
        };
        let id = req.id;
        let now = Instant::from_nanos(i as u64 * 100_000_000);
        let caller = &callers[i % callers.len()];
        let resp = m.handle_request_as(now, caller, req);
        assert_eq!(resp.id, Some(id));
        if let (Role::Client, Reply::List { connections }) = (caller.role, &resp.reply) {
            assert!(connections.iter().all(|c| c.owner == caller.principal));
        }
    }
    for c in m.list() {
        assert!(c.dst.is_none() || !c.path.is_empty(), "{c:?}");
    }
    let _ = m.snapshot();
});
