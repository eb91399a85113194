//! The host's term (`docs/delay.md` § "The host's term"): every per-hop bound starts with
//! `host_delay`, and the daemon refuses a connection that would make its own reserved queue
//! longer than that.
//!
//! Numbers at the defaults (100 Mbit/s, `host_delay` 2 ms, lateness 400 µs): a 3028-byte bucket
//! of 1514-byte frames is ⌈3028·1538/1514⌉ = 3076 wire bytes = 24,608 bits, 1 Mbit/s of them
//! 1,015,853 wire bit/s, the largest frame 12,336 bits. Each connection waits for the others'
//! buckets and one frame at what their rates leave of the link: with 6 others,
//! (6·24,608 + 12,336) / (100 Mbit/s − 6·1,015,853) = 1,703.68 µs, + 400 µs > 2 ms.

use super::*;

/// Opens `rate` with `shaping`, answers the SETUP with SETUP_OK, and returns the reply.
fn open_one(d: &mut Rtcd, now: Instant, tag: u64, rate: u64, shaping: DaemonShaping) -> Reply {
    d.handle_client_request(now, ALICE, tag, open_with(rate, shaping, None));
    let a = drain(d);
    if let Some(setup) = sent(&a).pop() {
        d.handle_control(now, &setup_ok(&setup));
        let mut r = replies(&drain(d));
        return r.pop().map(|(_, _, reply)| reply).expect("a reply");
    }
    replies(&a)
        .pop()
        .map(|(_, _, reply)| reply)
        .expect("a refusal")
}

#[test]
fn the_host_queue_admits_bursts_up_to_its_term_and_no_further() {
    let mut d = daemon();
    register(&mut d, ALICE, 100);
    let mut opened = Vec::new();
    for tag in 1..=6 {
        match open_one(&mut d, ms(tag), tag, 1_000_000, DaemonShaping::None) {
            Reply::Opened { conn, .. } => opened.push(conn),
            other => panic!("burst {tag} fits: {other:?}"),
        }
    }
    match open_one(&mut d, ms(7), 7, 1_000_000, DaemonShaping::Kernel) {
        Reply::Failed { error, .. } => assert_eq!(
            error,
            RtcdError::HostDelay {
                needed_us: 2104,
                budget_us: 2000
            }
        ),
        other => panic!("a 7th burst overfills the host's queue: {other:?}"),
    }
    // Closing one makes room again (a closing connection sends nothing more).
    d.handle_client_request(ms(8), ALICE, 8, Request::Close { conn: opened[0] });
    drain(&mut d);
    assert!(matches!(
        open_one(&mut d, ms(9), 9, 1_000_000, DaemonShaping::None),
        Reply::Opened { .. }
    ));
    d.check_invariants();
}

#[test]
fn a_connection_is_not_delayed_by_its_own_burst_but_its_neighbours_are() {
    let big = || Request::Open {
        dst_ip: DST,
        dst_port: 5004,
        src_port: 0,
        rate_bps: 10_000_000,
        max_burst: 30 * 1514,
        max_packet: 1514,
        shaping: DaemonShaping::None,
        delay_us: None,
    };
    let mut d = daemon();
    register(&mut d, ALICE, 100);
    // Alone, a 30-frame bucket waits for one frame only (123 µs + 400 µs): admitted.
    d.handle_client_request(ms(1), ALICE, 1, big());
    let setup = sent(&drain(&mut d))
        .pop()
        .expect("SETUP for the big bucket");
    d.handle_control(ms(1), &setup_ok(&setup));
    assert!(matches!(
        replies(&drain(&mut d)).pop(),
        Some((_, _, Reply::Opened { .. }))
    ));
    // A small connection beside it would wait for all 30 frames (≈ 4.2 ms): refused.
    match open_one(&mut d, ms(2), 2, 1_000_000, DaemonShaping::None) {
        Reply::Failed {
            error: RtcdError::HostDelay { needed_us, .. },
            ..
        } => assert!((4_000..5_000).contains(&needed_us), "{needed_us}"),
        other => panic!("refused by the host's term: {other:?}"),
    }
}

#[test]
fn the_setup_starts_its_latency_with_the_configured_term_in_whole_microseconds() {
    let mut config = Config::new(HOST_MAC, HOST_IP, 1_000_000_000);
    config.host_delay = Duration::from_nanos(750_400);
    let mut d = started(config);
    register(&mut d, ALICE, 100);
    d.handle_client_request(ms(1), ALICE, 1, open_req(1_000_000));
    let setup = sent(&drain(&mut d)).pop().expect("SETUP sent");
    let delay = setup.delay().expect("well-formed").expect("DELAY TLV");
    assert_eq!(delay.accumulated_ns, 751_000);
}

#[test]
fn a_lateness_budget_above_the_host_term_is_refused() {
    let mut config = Config::new(HOST_MAC, HOST_IP, 100_000_000);
    config.lateness_budget = Duration::from_millis(3);
    assert!(matches!(
        Rtcd::new(config, Instant::ZERO),
        Err(RtcdError::Config(_))
    ));
}
