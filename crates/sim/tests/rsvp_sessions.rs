//! RSVP sessions without data (`[[sessions]]`) through one QSR router, kept alive by refreshes
//! (QSR §2: RSVP's "significant control resources … to efficiently handle a large number of
//! flows"; RFC 2205 §3.7 soft state). The scale run (10⁵ sessions, release) is the benchmark
//! `crates/sim/benches/rsvp_sessions.rs`; this test is the same network at 2,000 sessions.

mod common;

use rtlan_sim::RunOptions;

/// `hosts` hosts on one router, 1 Gbit/s links, `per_pair` sessions from each host to the
/// next (round the router), opened over `spread`, the run `periods` refresh periods of R = 30 s
/// past the spread.
fn star(hosts: usize, per_pair: u32, spread_s: u64, periods: u64, gs_buffer: &str) -> String {
    let mut s = String::from("[[router]]\nname = \"r1\"\n");
    for i in 0..hosts {
        s += &format!(
            "[[host]]\nname = \"h{i}\"\n[[link]]\nends = [\"h{i}\", \"r1\"]\nrate = \"1gbit\"\n"
        );
    }
    let duration = spread_s + periods * 30;
    s += &format!(
        "[sim]\nduration = \"{duration}s\"\nrsvp_refresh = \"30s\"\nrsvp_gs_buffer = \"{gs_buffer}\"\n"
    );
    for i in 0..hosts {
        let dst = (i + 1) % hosts;
        s += &format!(
            "[[sessions]]\nsrc = \"h{i}\"\ndst = \"h{dst}\"\ncount = {per_pair}\nsize = 40\n\
             reserve = {{ rate = \"8kbit\" }}\nspread = \"{spread_s}s\"\n"
        );
    }
    s
}

#[test]
fn two_thousand_sessions_through_one_router_stay_reserved_over_five_refresh_periods() {
    const HOSTS: usize = 4;
    const PER_PAIR: u32 = 500;
    const SESSIONS: u64 = HOSTS as u64 * PER_PAIR as u64;
    let scenario = common::parse(&star(HOSTS, PER_PAIR, 5, 5, "1MiB"));
    let results = common::simulate(&scenario, &RunOptions::default()).results;
    assert_eq!(results.engine.contract_wakeups, 0);
    assert_eq!(results.sessions.len(), HOSTS);
    for g in &results.sessions {
        assert_eq!(
            (g.opened, g.pending, g.refused, g.lost, g.lost_events),
            (u64::from(PER_PAIR), 0, 0, 0, 0),
            "{g:?}"
        );
        // Every session opened within the spread (5 s) and a round trip of signalling.
        assert!(g.last_open_ns.is_some_and(|t| t < 5_100_000_000), "{g:?}");
    }
    let r = &results.routers[0].stats.rsvp;
    assert_eq!((r.paths, r.resvs), (SESSIONS, SESSIONS), "{r:?}");
    assert_eq!(
        (
            r.path_timeouts,
            r.resv_timeouts,
            r.admission_refused,
            r.state_full
        ),
        (0, 0, 0, 0),
        "{r:?}"
    );
    // Refreshed: each state is refreshed every R × U(0.5, 1.5), so over the 150 s after the
    // spread about 5 times; at least 4 refreshes each, beyond the trigger message, arrived.
    assert!(r.path_in >= SESSIONS * 5, "{r:?}");
    assert!(r.resv_in >= SESSIONS * 5, "{r:?}");
    // And the router refreshed its own state both ways: a Path down and a Resv up per
    // refresh, at least as many as came in less the trigger round.
    assert!(r.sent >= 2 * SESSIONS * 4, "{r:?}");
    for h in &results.hosts {
        let rsvp = h.rsvp.expect("every host signals RSVP");
        assert_eq!(
            (rsvp.path_timeouts, rsvp.resv_timeouts),
            (0, 0),
            "{}: {rsvp:?}",
            h.name
        );
    }
    // Nothing went to the default queues: no datagram was sent.
    assert_eq!(results.routers[0].stats.forwarded, 0);
}

#[test]
fn sessions_beyond_the_guaranteed_buffer_are_refused_and_the_rest_hold() {
    // 64 KiB of Guaranteed buffer per port: each session takes b + 2M + what arrives at its
    // wire rate in twice the lateness budget = 164 + 2 × 86 + ⌊12,942 bit/s × 800 µs / 8⌋ =
    // 337 bytes, so 194 fit on each output port and the other 106 of 300 are refused by
    // admission.
    let scenario = common::parse(&star(2, 300, 1, 2, "64KiB"));
    let results = common::simulate(&scenario, &RunOptions::default()).results;
    for g in &results.sessions {
        assert_eq!(g.opened, 194, "{g:?}");
        assert_eq!(g.pending, 106, "{g:?}");
        assert_eq!(g.lost_events, 0, "{g:?}");
    }
    let r = &results.routers[0].stats.rsvp;
    assert_eq!(r.resvs, 2 * 194, "{r:?}");
    assert!(r.admission_refused >= 2 * 106, "{r:?}");
    assert_eq!((r.path_timeouts, r.resv_timeouts), (0, 0), "{r:?}");
}
