//! Fuzzes the RETHER station engine (`rtlan_core::rether::Station`) with whatever the segment
//! carries, through the shared node driver (records `[port, advance, len_hi, len_lo, frame…]`,
//! see `node_driver.rs`). The station has a session waiting for admission and frames queued, so
//! switches, tokens, joins and leaves all meet live state; then its own deadlines run (switch
//! attempts, acknowledgement timers, regeneration).
#![no_main]

use libfuzzer_sys::fuzz_target;
use rtlan_core::rether::{Config, Station, MAX_FRAME};
use rtlan_core::Instant;
use rtlan_wire::ethernet::Address;
use rtlan_wire::rether::NodeId;

#[path = "node_driver.rs"]
mod node_driver;

fuzz_target!(|data: &[u8]| {
    let id = NodeId::new(5).expect("a valid id");
    let mut station = Station::new(Config::new(id, Address([2, 0, 0, 0, 0, 5]), 100_000_000));
    station.open(Instant::ZERO, 1, 6_250, 1000, None);
    for k in 0..4u8 {
        station.send_nrt(&[k; 100]);
        station.send_rt(1, &[k; 200]);
    }
    let mut buf = vec![0u8; MAX_FRAME];
    node_driver::drive(&mut station, data, &mut buf, |s| while s.poll_event().is_some() {});
});
