//! Fuzzes the one topology reader (`rtlan_topology`, docs/lab.md) under the lab's rules with a
//! simulator's extra table: any text either is refused with an error at `file:line:column` or
//! gives a topology whose links join declared nodes with distinct interface names, and whose
//! unit values print back to what was read.
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
    // A lab topology without calculus values is refused by the conversion, never a panic.
    let _ = topo.network();
});
