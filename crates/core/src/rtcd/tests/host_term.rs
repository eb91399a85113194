//! The host's term (`docs/delay.md` § "The host's term"): every per-hop bound starts with
//! `host_delay`, and the daemon refuses a connection that would make its own reserved queue
//! longer than that.
//!
//! Numbers at the defaults (100 Mbit/s, `host_delay` 2 ms, lateness 400 µs): a 3028-byte bucket
//! of 1514-byte frames is ⌈3028·1538/1514⌉ = 3076 wire bytes = 24,608 bits, the largest frame
//! 12,336 bits, so a FIFO holds 6 such bursts within the 1.6 ms left after lateness
//! (6·24,608 + 12,336 = 159,984 ≤ 160,000 bits) and a 7th would take 1,846 µs + 400 µs.

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
    match open_one(&mut d, ms(7), 7, 1_000_000, DaemonShaping::None) {
        Reply::Failed { error, .. } => assert_eq!(
            error,
            RtcdError::HostDelay {
                // (7·24,608 + 12,336) bits / 100 Mbit/s + 400 µs = 2,245.92 µs.
                needed_us: 2246,
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
fn a_kernel_shaped_class_turns_the_bound_into_the_busy_period() {
    // Four 12 Mbit/s bursts in one FIFO: (4·24,608 + 12,336) / 100 Mbit/s + 400 µs = 1,508 µs.
    let fill = |shaping_of_fifth: DaemonShaping| {
        let mut d = daemon();
        register(&mut d, ALICE, 100);
        for tag in 1..=4 {
            let r = open_one(&mut d, ms(tag), tag, 12_000_000, DaemonShaping::None);
            assert!(matches!(r, Reply::Opened { .. }), "{r:?}");
        }
        open_one(&mut d, ms(5), 5, 1_000_000, shaping_of_fifth)
    };
    // A fifth in the FIFO: 1,754 µs, admitted.
    assert!(matches!(fill(DaemonShaping::None), Reply::Opened { .. }));
    // The same fifth in its own kernel class: the reserved traffic is no longer one FIFO, so a
    // frame may wait for the whole busy period, (Σb + L)/(C − Σr) ≈ 2.7 ms > 1.6 ms.
    match fill(DaemonShaping::Kernel) {
        Reply::Failed {
            error: RtcdError::HostDelay { budget_us, .. },
            ..
        } => assert_eq!(budget_us, 2000),
        other => panic!("refused by the host's term: {other:?}"),
    }
}

#[test]
fn the_setup_starts_its_latency_with_the_configured_term_in_whole_microseconds() {
    let mut config = Config::new(HOST_MAC, HOST_IP, 1_000_000_000);
    config.host_delay = Duration::from_nanos(750_400);
    let mut d = Rtcd::new(config, Instant::ZERO).expect("valid config");
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
