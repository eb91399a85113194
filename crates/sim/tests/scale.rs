//! A small generated leaf–spine (the CI-sized cousin of `scenarios/leafspine.toml`): every
//! reservation crosses up to five switches and is granted, reserved flows lose nothing, and the
//! engine never had to wake a node that broke its contract.

mod common;

use rtlan_sim::RunOptions;

const SCENARIO: &str = r#"
[sim]
duration = "60ms"
warmup = "30ms"
drain = "20ms"
cpu_cost_per_connection = "100ns"

[generate]
kind = "leaf-spine"
leaves = 6
hosts_per_leaf = 5
spines = 2
host_rate = "1gbit"
leaf_rate = "10gbit"
spine_rate = "10gbit"
reserved = 120
reserved_rate = "1mbit"
reserved_size = 200
floods = 6
flood_rate = "300mbit"
flood_size = 1000
setup_spread = "10ms"
seed = 3
"#;

#[test]
fn leaf_spine_reservations_hold() {
    let scenario = common::parse(SCENARIO);
    assert_eq!(scenario.topology.hosts.len(), 30);
    assert_eq!(scenario.topology.switches.len(), 9);
    assert_eq!(scenario.traffic.len(), 126);
    let results = common::simulate(&scenario, &RunOptions::default()).results;
    let reserved: Vec<_> = results
        .flows
        .iter()
        .filter(|f| f.reserved_bps.is_some())
        .collect();
    assert_eq!(reserved.len(), 120);
    for f in &reserved {
        assert_eq!(f.reservation, "opened", "{}: {:?}", f.name, f.refusal);
        assert_eq!(f.loss_frames, Some(0), "{} lost frames", f.name);
        assert!(f.received_frames > 0, "{} received nothing", f.name);
    }
    let hops: Vec<u8> = reserved.iter().filter_map(|f| f.hops).collect();
    assert!(
        hops.contains(&5),
        "some connection crosses leaf, spine, core, spine, leaf"
    );
    let installed: u64 = results
        .switches
        .iter()
        .map(|s| s.stats.signal.setup_ok)
        .sum();
    assert!(installed >= 120, "{installed} connection entries");
    assert_eq!(results.engine.contract_wakeups, 0);
}
