//! Reservations are signalled through the real host daemon and switch: granted ones appear in
//! the switch's connection table and carry real-time data; ones beyond the 60 % cap are refused
//! (by the switch for the receiver's link, by the host daemon for the sender's own link) and
//! reported as refused.

mod common;

use rtlan_sim::RunOptions;

const TABLES: &str = r#"
[sim]
duration = "500ms"
warmup = "200ms"

[[traffic]]
name = "a 40M"
src = "a"
dst = "d"
kind = "constant"
rate = "40mbit"
size = 1000
start = "10ms"
reserve = { rate = "40mbit" }

[[traffic]]
name = "b 40M"
src = "b"
dst = "d"
kind = "constant"
rate = "40mbit"
size = 1000
start = "50ms"
reserve = { rate = "40mbit", burst = 4000, max_packet = 1042 }

[[traffic]]
name = "c 70M"
src = "c"
dst = "d"
kind = "constant"
rate = "70mbit"
size = 1000
start = "60ms"
reserve = { rate = "70mbit" }
"#;

#[test]
fn grants_and_refusals_are_signalled_and_reported() {
    let scenario = common::parse(&common::star(TABLES));
    let results = common::simulate(&scenario, &RunOptions::default()).results;
    let [a, b, c] = &results.flows[..] else {
        panic!("three flows expected");
    };
    assert_eq!(a.reservation, "opened");
    assert_eq!(a.loss_frames, Some(0));
    assert!(
        (a.delivered_bps - 40e6).abs() < 0.01 * 40e6,
        "{}",
        a.delivered_bps
    );

    // 40 + 40 Mbit/s exceeds 60 % of d's 100 Mbit/s link: the switch refuses b.
    assert_eq!(b.reservation, "refused");
    let why = b.refusal.as_deref().unwrap_or_default();
    assert!(why.contains("refused by switch"), "{why}");
    assert_eq!(b.sent_frames, 0, "a refused flow must not send");

    // 70 Mbit/s exceeds 60 % of c's own link: c's daemon refuses before signalling.
    assert_eq!(c.reservation, "refused");
    let why = c.refusal.as_deref().unwrap_or_default();
    assert!(why.contains("local admission"), "{why}");

    let s1 = &results.switches[0].stats;
    assert_eq!(s1.signal.setup_ok, 1);
    assert_eq!(s1.signal.setup_fail, 1);
    assert_eq!(
        s1.signal.setup_rx - s1.signal.setup_duplicates,
        2,
        "c never sent a SETUP"
    );
    assert!(s1.rt_data >= a.received_frames);
    // a's daemon keeps its connection alive (REFRESH every 10 s is beyond this run; the
    // connection stays installed).
    assert_eq!(results.hosts[0].rtcd_connections, 1);
}
