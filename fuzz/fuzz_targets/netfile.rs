//! Fuzzes the network file of `rtlan analyze` and `rtlan bwm` (`rtlan_calculus::netfile`,
//! docs/analyze.md): any text either is refused with an error or parses into a file whose
//! topology resolves and whose analysis runs without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rtlan_calculus::analysis::{analyze, Topology};
use rtlan_calculus::netfile;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(file) = netfile::parse(text) else {
        return;
    };
    let topo = Topology::from_netfile(&file);
    let flows: Vec<_> = file
        .flows
        .iter()
        .filter_map(|f| topo.resolve(f).ok())
        .collect();
    // Arithmetic may overflow on absurd values: that is an error, never a panic.
    let _ = analyze(&topo, &flows);
});
