//! Fuzzes the one topology reader (`rtlan_topology`, docs/lab.md) under the lab's rules with a
//! simulator's extra table: any text either is refused with an error at `file:line:column` or
//! gives a topology whose links join declared nodes with distinct interface names, and whose
//! unit values print back to what was read; with routers, every address is unique and inside
//! its segment's subnet, gateways are router ports on the host's segment, and every static
//! route's gateway is on one of its router's segments.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rtlan_topology::units::{format_duration, format_rate, parse_duration, parse_rate};
use rtlan_topology::{Profile, Topology};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let topo = match Topology::read(text, "fuzz.toml", Profile::Lab, &["sim"]) {
        Ok(t) => t,
        Err(e) => {
            assert!(e.location().is_some(), "{e}");
            return;
        }
    };
    for link in &topo.links {
        for end in &link.ends {
            assert!(topo.has_node(&end.node), "undeclared end {}", end.node);
        }
        if let Some(bps) = link.rate_bps {
            assert_eq!(parse_rate(&format_rate(bps)), Ok(bps));
        }
        assert_eq!(parse_duration(&format_duration(link.delay)), Ok(link.delay));
    }
    for name in topo.node_names() {
        let ifaces = topo.interfaces(name);
        let mut names: Vec<_> = ifaces.iter().map(|(own, _, _)| &own.ifname).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), ifaces.len(), "duplicate interface on {name}");
    }
    let mut seen = std::collections::HashSet::new();
    for r in &topo.routers {
        for p in &r.ports {
            assert!(topo.segments[p.segment].contains(p.ip), "{} {}", r.name, p.ip);
            assert!(seen.insert(p.ip), "address {} twice", p.ip);
        }
        for route in &r.routes {
            assert!(r
                .ports
                .iter()
                .any(|p| topo.segments[p.segment].contains(route.gateway)));
        }
    }
    if !topo.routers.is_empty() {
        for h in &topo.hosts {
            assert!(seen.insert(h.ip), "address {} twice", h.ip);
            if let Some(gw) = h.gateway {
                let on = topo.segments.iter().any(|s| s.contains(gw) && s.contains(h.ip));
                assert!(on, "{} gateway {gw} off its segment", h.name);
            }
        }
    }
    // A lab topology without calculus values is refused by the conversion, never a panic.
    let _ = topo.network();
});
