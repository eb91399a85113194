//! Faults in the simulator (issue 12 items 2 and 3, measured at scale on virtual time): a switch
//! in the middle of many reservations crashes and restarts from nothing; a sender's link loses
//! its carrier and regains it; a link inside the path goes down for good. The real switch and
//! daemon cores recover (or revoke) exactly as in the lab, and the results say when.

mod common;

use std::fmt::Write;

use rtlan_sim::RunOptions;

/// Senders h0..h7 on s1, receivers r0..r7 on s3, s1 — s2 — s3, 100 Mbit/s links; each sender
/// reserves 5 Mbit/s to its receiver at 100 ms, then the `faults`.
fn chain(faults: &str) -> String {
    let mut t = String::from("[sim]\nduration = \"25s\"\nwarmup = \"100ms\"\n\n");
    for i in 0..8 {
        let _ = writeln!(t, "[[host]]\nname = \"h{i}\"\n[[host]]\nname = \"r{i}\"");
    }
    for s in ["s1", "s2", "s3"] {
        let _ = writeln!(t, "[[switch]]\nname = \"{s}\"\nkind = \"rtlan\"");
    }
    for i in 0..8 {
        let _ = writeln!(t, "[[link]]\nends = [\"h{i}\", \"s1\"]\nrate = \"100mbit\"");
        let _ = writeln!(t, "[[link]]\nends = [\"r{i}\", \"s3\"]\nrate = \"100mbit\"");
    }
    t.push_str("[[link]]\nends = [\"s1\", \"s2\"]\nrate = \"100mbit\"\n");
    t.push_str("[[link]]\nends = [\"s2\", \"s3\"]\nrate = \"100mbit\"\n");
    for i in 0..8 {
        let _ = writeln!(
            t,
            "[[traffic]]\nname = \"h{i}\"\nsrc = \"h{i}\"\ndst = \"r{i}\"\nkind = \"constant\"\n\
             rate = \"5mbit\"\nsize = 1000\nstart = \"100ms\"\nreserve = {{ rate = \"5mbit\" }}"
        );
    }
    t.push_str(faults);
    t
}

#[test]
fn a_restarted_switch_has_every_connection_back_long_before_two_refresh_periods() {
    let scenario = common::parse(&chain(
        "[[fault]]\nat = \"5s\"\nkind = \"restart\"\nswitch = \"s2\"\ndown_for = \"50ms\"\n",
    ));
    let results = common::simulate(&scenario, &RunOptions::default()).results;
    let mut worst = 0u64;
    for flow in &results.flows {
        assert_eq!(
            flow.reservation, "opened",
            "{}: {:?}",
            flow.name, flow.refusal
        );
        let [outage] = &flow.outages[..] else {
            panic!("{}: one outage expected: {:?}", flow.name, flow.outages);
        };
        assert_eq!(outage.reason, "neighbour_restarted", "{}", flow.name);
        assert!(!outage.revoked, "{}", flow.name);
        let end = outage
            .end_ns
            .unwrap_or_else(|| panic!("{} never recovered", flow.name));
        // Told once the restarted switch's first HELLO reaches s1, after the crash.
        assert!(outage.start_ns >= 5_000_000_000, "{}", flow.name);
        worst = worst.max(end - 5_000_000_000);
    }
    eprintln!(
        "every connection back {:.1} ms after the crash (50 ms of it down)",
        worst as f64 / 1e6
    );
    // The target is 2 refresh periods (20 s). The restarted switch announces itself
    // with a HELLO the moment it starts, so recovery is one HELLO and one SETUP round trip
    // after the restart, not a refresh period: a recovery that waited for refreshes (10 s) or
    // expiry (30 s) fails.
    assert!(
        worst < 1_000_000_000,
        "worst recovery {worst} ns after the crash"
    );
    // Booked once everywhere, never twice.
    for s in &results.switches {
        assert_eq!(s.connections, 8, "switch {}", s.name);
    }
    assert_eq!(results.engine.contract_wakeups, 0);
    assert!(results.engine.faults == 2 && results.engine.fault_drops > 0);
}

#[test]
fn a_senders_link_down_and_up_is_an_outage_the_daemon_recovers_from() {
    let scenario = common::parse(&chain(
        "[[fault]]\nat = \"5s\"\nkind = \"link_down\"\nends = [\"h3\", \"s1\"]\ndown_for = \"500ms\"\n",
    ));
    let results = common::simulate(&scenario, &RunOptions::default()).results;
    for flow in &results.flows {
        assert_eq!(
            flow.reservation, "opened",
            "{}: {:?}",
            flow.name, flow.refusal
        );
        if flow.name != "h3" {
            assert!(flow.outages.is_empty(), "{}: {:?}", flow.name, flow.outages);
            continue;
        }
        let [outage] = &flow.outages[..] else {
            panic!("one outage expected: {:?}", flow.outages);
        };
        assert_eq!(outage.reason, "link_down");
        assert_eq!(
            outage.start_ns, 5_000_000_000,
            "told the instant the carrier goes"
        );
        let end = outage.end_ns.expect("recovered");
        assert!(!outage.revoked);
        assert!(
            (5_500_000_000..5_600_000_000).contains(&end),
            "recovered at {end} ns"
        );
    }
    for s in &results.switches {
        assert_eq!(s.connections, 8, "switch {}", s.name);
    }
}

#[test]
fn a_link_of_the_path_down_for_good_revokes_what_crossed_it() {
    let scenario = common::parse(&chain(
        "[[fault]]\nat = \"5s\"\nkind = \"link_down\"\nends = [\"s2\", \"s3\"]\n",
    ));
    let results = common::simulate(&scenario, &RunOptions::default()).results;
    for flow in &results.flows {
        assert_eq!(flow.reservation, "refused", "{}", flow.name);
        let why = flow.refusal.as_deref().unwrap_or("");
        assert!(why.contains("link"), "{}: {why}", flow.name);
    }
    for s in &results.switches {
        assert_eq!(s.connections, 0, "switch {}", s.name);
    }
}

#[test]
fn a_fault_naming_what_does_not_exist_is_an_error_with_its_place() {
    let text = chain("[[fault]]\nat = \"5s\"\nkind = \"restart\"\nswitch = \"s9\"\n");
    let err = rtlan_sim::Scenario::from_str(&text, "f.toml").expect_err("no switch s9");
    assert!(err.to_string().starts_with("f.toml:"), "{err}");
    assert!(err.to_string().contains("no switch `s9`"), "{err}");
    let text = chain("[[fault]]\nat = \"30s\"\nkind = \"link_down\"\nends = [\"s1\", \"s2\"]\n");
    let err = rtlan_sim::Scenario::from_str(&text, "f.toml").expect_err("after the end");
    assert!(err.to_string().contains("inside `duration`"), "{err}");
    let text = chain("[[fault]]\nat = \"1s\"\nkind = \"explode\"\nswitch = \"s1\"\n");
    let err = rtlan_sim::Scenario::from_str(&text, "f.toml").expect_err("unknown kind");
    assert!(err.to_string().contains("unknown fault kind"), "{err}");
}
