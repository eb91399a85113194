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

/// The same triangle, and the link the tree carries the reservation over (s1–s2) is cut for good
/// at 10 s (`[[fault]]`): the port leaves Forwarding, the connection is torn down with
/// `topology_change`, the tree re-forms through s3 and the daemon's re-signalling (with backoff)
/// gets the reservation back on the new path, 3 switches long, without a `revoked`.
#[test]
fn a_cut_link_of_the_tree_moves_the_reservation_to_the_new_path() {
    let text = TRIANGLE.replace("duration = \"11s\"", "duration = \"40s\"")
        + "\n[[fault]]\nat = \"10s\"\nkind = \"link_down\"\nends = [\"s1\", \"s2\"]\n";
    let scenario = common::parse(&text);
    let results = common::simulate(&scenario, &RunOptions::default()).results;
    let [flow] = &results.flows[..] else {
        panic!("one flow expected");
    };
    assert_eq!(flow.reservation, "opened", "{:?}", flow.refusal);
    let [outage] = &flow.outages[..] else {
        panic!("one outage expected: {:?}", flow.outages);
    };
    assert_eq!(outage.reason, "topology_change");
    assert!(!outage.revoked);
    let back = outage.end_ns.expect("recovered") - 10_000_000_000;
    eprintln!(
        "reservation back on the new path {:.2} s after the cut",
        back as f64 / 1e9
    );
    // 802.1D with the lab's timers (max age 6 s, forward delay 4 s): the new path forwards after
    // 2 × forward delay (8 s) when the blocked port learns of the change at once, after max age
    // + 2 × forward delay (14 s) when it must age stale information first; plus the daemon's
    // re-signalling backoff (at most 1 s between attempts).
    assert!(
        (8_000_000_000..15_500_000_000).contains(&back),
        "back {back} ns after the cut"
    );
    let hops: Vec<usize> = results.switches.iter().map(|s| s.connections).collect();
    assert_eq!(
        hops.iter().sum::<usize>(),
        3,
        "booked once on each of 3 switches: {hops:?}"
    );
}
