//! The bandwidth manager and the rtlan switches agree (Löser/Härtig §3.2 admission on EtheReal
//! §3.3 / QSR §3.1 switches, docs/bwm.md "rtlan switches"): from ONE topology, the simulator runs
//! the real switch and host-daemon cores, which signal every reservation hop by hop and report
//! the BOUND of its SETUP_OK; the manager, built from the same topology model (with the link
//! delays the simulator used), admits the same connections per hop and must give each exactly
//! the same bound, for the cyclic scheduler and for the timing wheel.
//!
//! Tolerance: none. Both sides compute `b/r + host delay + Σθ` in integer ns and round up to µs.

mod common;

use rtlan_core::bwm::{ConnSpec, Manager, ManagerConfig, Op, Reply, Request, Topology};
use rtlan_core::time::Instant;
use rtlan_sim::RunOptions;

/// The host term a simulated host's daemon starts every SETUP's accumulated latency with, µs:
/// its `host_delay` in the topology, else the daemon's default (docs/delay.md "The host's term").
fn host_delay_us(host: &rtlan_topology::Host) -> u64 {
    let delay = host
        .host_delay
        .unwrap_or(rtlan_core::rtcd::DEFAULT_HOST_DELAY);
    u64::try_from(delay.as_nanos().div_ceil(1000)).expect("fits")
}

fn agree(name: &str) {
    let scenario = common::load(name);
    let outcome = common::simulate(&scenario, &RunOptions::default());
    let mut model = scenario.topology.clone();
    for (link, delay) in model.links.iter_mut().zip(&scenario.link_delays) {
        link.delay = *delay;
    }
    let topo = Topology::from_model(&model).expect("the manager reads the scenario's topology");
    assert_eq!(topo.rtlan.len(), scenario.topology.switches.len(), "{name}");
    let mut manager = Manager::new(topo, ManagerConfig::default()).expect("valid network");
    let mut compared = 0;
    for (id, traffic) in scenario.traffic.iter().enumerate() {
        let Some(reserve) = traffic.reserve else {
            continue;
        };
        let flow = outcome
            .results
            .flows
            .iter()
            .find(|f| f.name == traffic.name)
            .expect("every source has a result");
        assert_eq!(flow.reservation, "opened", "{name} {}", flow.name);
        let switch_bound = flow.bound_us.expect("SETUP_OK carried a BOUND");
        let spec = ConnSpec {
            src: scenario.topology.hosts[traffic.src].name.clone(),
            dst: scenario.topology.hosts[traffic.dst].name.clone(),
            rate_bps: reserve.rate_bps,
            max_packet: u64::from(reserve.max_packet),
            shaping_interval_us: None,
            burst_bytes: Some(u64::from(reserve.burst)),
            delay_us: None,
            host_delay_us: Some(host_delay_us(&scenario.topology.hosts[traffic.src])),
        };
        let request = Request {
            id: id as u64,
            op: Op::AdmitPerHop(spec),
        };
        let reply = manager.handle_request(Instant::ZERO, request).reply;
        let Reply::Admitted {
            delay_bound_us,
            path,
            ..
        } = reply
        else {
            panic!("{name} {}: the manager refused {reply:?}", flow.name);
        };
        assert_eq!(
            Some(path.len() as u8 - 2),
            flow.hops,
            "{name} {}: the same switches",
            flow.name
        );
        assert_eq!(
            delay_bound_us, switch_bound,
            "{name} {}: the manager's bound and the switches' BOUND",
            flow.name
        );
        compared += 1;
    }
    assert!(compared >= 3, "{name}: only {compared} reservations");
}

#[test]
fn manager_bound_equals_the_switches_bound_on_timing_wheels() {
    agree("chain3-wheel.toml");
}

#[test]
fn manager_bound_equals_the_switches_bound_on_cyclic_schedulers() {
    agree("chain3-cyclic.toml");
}
