//! Fuzzes the network file of `rtlan analyze` and `rtlan bwm` as the one topology reader reads it
//! (`rtlan_topology`, network-file rules, docs/analyze.md): any text either is refused with an
//! error at `file:line:column` or converts into a network whose flows resolve and whose analysis
//! runs without panicking — the LP bound included, for every flow whose path fits.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rtlan_calculus::analysis::{analyze_with, Topology as Model};
use rtlan_calculus::methods::LpUse;
use rtlan_topology::Topology;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let topo = match Topology::network_from_str(text, "fuzz.toml") {
        Ok(t) => t,
        Err(e) => {
            assert!(e.location().is_some(), "{e}");
            return;
        }
    };
    // Every value the network profile requires is present, so only arithmetic can fail.
    let Ok(file) = topo.network() else {
        return;
    };
    let model = Model::from_netfile(&file);
    let flows: Vec<_> = file
        .flows
        .iter()
        .filter_map(|f| model.resolve(f).ok())
        .collect();
    // Arithmetic may overflow on absurd values: that is an error, never a panic.
    let _ = analyze_with(&model, &flows, LpUse::All);
    // The manager derives its view from the same model without panicking.
    let _ = rtlan_core::bwm::Topology::from_model(&topo);
});
