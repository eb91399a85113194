//! A loop in the simulator (docs/stp.md §6–7): three rtlan switches in a triangle, all with
//! `stp = true`, so each runs the IEEE 802.1D-1998 bridge with the lab's timers (ports forward
//! 8 s after start). A reservation requested after that is granted along the tree and its data
//! arrives without loss, and the loop floods nothing forever: every switch floods a handful of
//! frames (ARP probes and their answers), where a loop without spanning tree would flood until
//! the run ends.

mod common;

use rtlan_sim::RunOptions;

const TRIANGLE: &str = r#"
[[host]]
name = "a"

[[host]]
name = "b"

[[switch]]
name = "s1"
stp = true

[[switch]]
name = "s2"
stp = true

[[switch]]
name = "s3"
stp = true

[[link]]
ends = ["a", "s1"]
rate = "100mbit"

[[link]]
ends = ["b", "s2"]
rate = "100mbit"

[[link]]
ends = ["s1", "s2"]
rate = "100mbit"

[[link]]
ends = ["s2", "s3"]
rate = "100mbit"

[[link]]
ends = ["s3", "s1"]
rate = "100mbit"

[sim]
duration = "11s"
warmup = "9500ms"

[[traffic]]
name = "a to b"
src = "a"
dst = "b"
kind = "constant"
rate = "1mbit"
size = 500
start = "9s"
reserve = { rate = "1mbit" }
"#;

#[test]
fn a_reservation_crosses_a_loop_of_switches_running_the_spanning_tree() {
    let scenario = common::parse(TRIANGLE);
    let results = common::simulate(&scenario, &RunOptions::default()).results;
    let [flow] = &results.flows[..] else {
        panic!("one flow expected");
    };
    assert_eq!(flow.reservation, "opened", "{:?}", flow.refusal);
    assert_eq!(flow.loss_frames, Some(0));
    assert!(flow.received_frames > 0);
    let flooded: u64 = results.switches.iter().map(|s| s.stats.flooded).sum();
    assert!(flooded < 50, "flooded {flooded}: a loop is flooding");
    // Some copy met a port that does not forward (the blocked one, or any before 8 s).
    let blocked: u64 = results
        .switches
        .iter()
        .flat_map(|s| s.stats.ports.iter())
        .map(|p| p.stp_blocked)
        .sum();
    assert!(blocked > 0);
}
