//! Fuzzes the host-transparent RETHER agent (`rtlan_core::rether::agent::Agent`) through the
//! shared node driver (records `[port, advance, len_hi, len_lo, frame…]`, see `node_driver.rs`):
//! port 0 is the segment (tokens, switches, DATA for a session it listens to, anything), port 1
//! the host (frames of a reserved 5-tuple, forged RETHER frames, runts). A sending session with
//! a 5-tuple waits for admission and a receiving one listens, so both the classifier and the
//! reassembly meet live state; whatever arrives is read with `recv` after each record.
#![no_main]

use std::net::Ipv4Addr;

use libfuzzer_sys::fuzz_target;
use rtlan_core::rether::agent::{Agent, AgentConfig, SendSpec};
use rtlan_core::rether::{Config, MAX_FRAME};
use rtlan_core::router::classify::FlowKey;
use rtlan_core::Instant;
use rtlan_wire::ethernet::Address;
use rtlan_wire::rether::NodeId;

#[path = "node_driver.rs"]
mod node_driver;

fuzz_target!(|data: &[u8]| {
    let id = NodeId::new(5).expect("a valid id");
    let mut config = Config::new(id, Address([2, 0, 0, 0, 0, 5]), 10_000_000);
    config.nrt_queue_frames = 64;
    let mut agent = Agent::new(AgentConfig::new(config));
    let flow = FlowKey {
        src: Ipv4Addr::new(198, 18, 0, 5),
        dst: Ipv4Addr::new(198, 18, 0, 1),
        protocol: 17,
        src_port: 0,
        dst_port: 9000,
    };
    let session = agent
        .open(SendSpec {
            bytes_per_trt: 5_000,
            max_frame: MAX_FRAME,
            receiver: NodeId::new(1),
            flow: Some(flow),
            buffers: 4,
        })
        .expect("a valid spec");
    agent.admit(Instant::ZERO, session).expect("an open session");
    let sender = NodeId::new(1).expect("a valid id");
    agent.listen(sender, 1, 3).expect("not listening yet");
    let mut buf = vec![0u8; MAX_FRAME];
    node_driver::drive(&mut agent, data, &mut buf, |a| {
        while a.poll_event().is_some() {}
        while let Ok(Some(_)) = a.recv(sender, 1) {}
        let _ = a.send(session, &[7; 3000]);
    });
});
