//! Output pacing on virtual time (DESIGN.md §7) and `poll_timeout`.

use super::*;

const RATE: u64 = 10_000_000;
/// A 64-byte frame at 10 Mbit/s: (64 + 24) × 8 bits / 10^7 bit/s = 70.4 µs.
const TX_NS: u64 = 70_400;

/// Two ports; port 1 paced at 10 Mbit/s.
fn paced_switch() -> Switch {
    let mut cfg = config(2);
    cfg.ports[1].medium = Medium::FullDuplex { rate_bps: RATE };
    Switch::new(cfg, Instant::ZERO).expect("valid configuration")
}

/// A 64-byte broadcast frame from A, tagged in its last byte.
fn frame64(tag: u8) -> Vec<u8> {
    let mut payload = [0u8; 50];
    payload[49] = tag;
    eth(Address::BROADCAST, A, 0x88b5, &payload)
}

fn send_burst(sw: &mut Switch, now: Instant, n: u8) {
    for tag in 0..n {
        sw.handle_frame(now, PortId(0), &frame64(tag));
    }
}

#[test]
fn back_to_back_frames_leave_exactly_one_transmission_time_apart() {
    let mut sw = paced_switch();
    assert_eq!(tx_time(64, RATE), Duration::from_nanos(TX_NS));
    let start = ms(1);
    send_burst(&mut sw, start, 10);
    let mut buf = [0u8; MAX_FRAME_LEN];
    for k in 0..10u64 {
        let due = start + Duration::from_nanos(k * TX_NS);
        assert_eq!(sw.poll_timeout(), Some(due), "frame {k}");
        if k > 0 {
            let early = due - Duration::from_nanos(1);
            assert_eq!(
                sw.poll_transmit(early, PortId(1), &mut buf),
                None,
                "frame {k} early"
            );
        }
        assert_eq!(
            sw.poll_transmit(due, PortId(1), &mut buf),
            Some(64),
            "frame {k}"
        );
        assert_eq!(buf[63], k as u8);
        assert_eq!(
            sw.poll_transmit(due, PortId(1), &mut buf),
            None,
            "one frame per slot"
        );
    }
    assert_eq!(
        sw.busy_until(PortId(1)),
        Some(start + Duration::from_nanos(10 * TX_NS))
    );
    assert_eq!(sw.stats().ports[1].pacing_late_max_ns, 0);
    assert_eq!(sw.stats().ports[1].pacing_late_sends, 0);
    // The unpaced port sent nothing (frames came in on it) and has no pacer.
    assert_eq!(sw.busy_until(PortId(0)), None);
}

#[test]
fn unpaced_port_sends_everything_at_once() {
    let mut sw = paced_switch();
    send_burst(&mut sw, ms(0), 3);
    // Frames from port 1 flood to unpaced port 0.
    for tag in 0..5 {
        sw.handle_frame(
            ms(0),
            PortId(1),
            &eth(Address::BROADCAST, B, 0x88b5, &[tag; 50]),
        );
    }
    assert_eq!(drain(&mut sw, ms(0), 0).len(), 5);
    assert_eq!(drain(&mut sw, ms(0), 1).len(), 1);
}

#[test]
fn idle_port_sends_immediately_without_a_burst() {
    let mut sw = paced_switch();
    send_burst(&mut sw, ms(0), 1);
    assert_eq!(drain(&mut sw, ms(0), 1).len(), 1);
    // Long idle, then two frames at 10 ms: the first goes at once, the second one frame time
    // later (the idle time is not credited).
    send_burst(&mut sw, ms(10), 2);
    assert_eq!(sw.poll_timeout(), Some(ms(10)));
    assert_eq!(drain(&mut sw, ms(10), 1).len(), 1);
    assert_eq!(
        sw.poll_timeout(),
        Some(ms(10) + Duration::from_nanos(TX_NS))
    );
    assert_eq!(
        drain(&mut sw, ms(10) + Duration::from_nanos(TX_NS), 1).len(),
        1
    );
    assert_eq!(sw.stats().ports[1].pacing_late_sends, 0);
}

#[test]
fn late_poll_catches_up_at_most_the_catchup_window() {
    let mut sw = paced_switch();
    send_burst(&mut sw, ms(0), 20);
    assert_eq!(drain(&mut sw, ms(0), 1).len(), 1);
    // The driver wakes 1 ms late. Without a bound it would send 14 frames at once; it may only
    // make up 200 µs: frames are sent while busy_until <= now, starting from now - 200 µs, so
    // ceil(200 / 70.4) = 3 frames.
    let late = ms(1);
    assert_eq!(drain(&mut sw, late, 1).len(), 3);
    let expected_busy = late - PACING_CATCHUP + Duration::from_nanos(3 * TX_NS);
    assert_eq!(sw.busy_until(PortId(1)), Some(expected_busy));
    assert_eq!(sw.poll_timeout(), Some(expected_busy));
    // Lateness of those sends: 1000 - 70.4, 1000 - 870.4 and 1000 - 940.8 µs, all over 50 µs.
    let stats = &sw.stats().ports[1];
    assert_eq!(stats.pacing_late_max_ns, 1_000_000 - TX_NS);
    assert_eq!(stats.pacing_late_sends, 3);
    // Then the schedule continues at line rate.
    assert_eq!(drain(&mut sw, expected_busy, 1).len(), 1);
    assert_eq!(
        drain(&mut sw, expected_busy + Duration::from_nanos(TX_NS - 1), 1).len(),
        0
    );
    assert_eq!(
        drain(&mut sw, expected_busy + Duration::from_nanos(TX_NS), 1).len(),
        1
    );
}

#[test]
fn long_run_rate_is_the_line_rate() {
    // 1000 frames of 1514 bytes through a 10 Mbit/s port, driven by a loop that
    // wakes exactly at `poll_timeout`: the last frame leaves at 999 × 1538 × 8 / 10^7 s, to the nanosecond.
    let mut cfg = config(2);
    cfg.ports[1].medium = Medium::FullDuplex { rate_bps: RATE };
    cfg.nrt_queue_bytes = Some(2_000_000);
    let mut sw = Switch::new(cfg, Instant::ZERO).expect("valid configuration");
    let frame = eth(Address::BROADCAST, A, 0x88b5, &[0; 1500]);
    for _ in 0..1000 {
        sw.handle_frame(ms(0), PortId(0), &frame);
    }
    let mut sent = 0;
    let mut last = Instant::ZERO;
    let mut buf = [0u8; MAX_FRAME_LEN];
    while sent < 1000 {
        let now = sw.poll_timeout().expect("a frame is queued");
        sw.handle_timeout(now);
        while sw.poll_transmit(now, PortId(1), &mut buf).is_some() {
            sent += 1;
            last = now;
        }
    }
    assert_eq!(last.as_nanos(), 999 * 1538 * 8 * 100);
}

#[test]
fn poll_timeout_reports_the_earliest_work() {
    let mut sw = paced_switch();
    // Nothing to do but the ageing sweep.
    assert_eq!(
        sw.poll_timeout(),
        Some(Instant::ZERO + AGEING_CHECK_INTERVAL)
    );
    // A frame queued on the unpaced port is ready at its enqueue time (in the past by now).
    sw.handle_frame(
        us(5),
        PortId(1),
        &eth(Address::BROADCAST, B, 0x88b5, &[0; 46]),
    );
    assert_eq!(sw.poll_timeout(), Some(us(5)));
    drain(&mut sw, us(7), 0);
    // A held frame (to unknown C from port 1) expires after 100 ms; its probe out of port 0 is
    // ready at once.
    sw.handle_frame(us(10), PortId(1), &ip_frame(C, B, IP_C, 1));
    assert_eq!(sw.poll_timeout(), Some(us(10)));
    drain(&mut sw, us(10), 0);
    assert_eq!(sw.poll_timeout(), Some(us(10) + Duration::from_millis(100)));
    // A paced port that is busy: its busy-until time comes first.
    send_burst(&mut sw, us(20), 2);
    drain(&mut sw, us(20), 1);
    assert_eq!(
        sw.poll_timeout(),
        Some(us(20) + Duration::from_nanos(TX_NS))
    );
    // After the ageing sweep runs, the next one is a second later.
    sw.handle_timeout(ms(1000));
    drain(&mut sw, ms(1000), 1);
    assert_eq!(sw.stats().drop_pending_timeout, 1);
    assert_eq!(sw.poll_timeout(), Some(ms(2000)));
}
