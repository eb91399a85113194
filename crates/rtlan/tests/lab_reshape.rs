//! The first switch reshapes what a sender bunched instead of dropping it (docs/delay.md §3,
//! the network calculus's "reshaping is for free", Le Boudec/Thiran §1.5.3): on the default lab
//! topology a reserves 10 Mbit/s to b and then sends, unshaped, at twice that for 50 ms. Real
//! `rtlan rtcd`, switch, `rtlan send` (plain, to the proxy IP) and `rtlan recv`. Needs root;
//! skips without it.
//!
//! Tolerances and why:
//! - **every datagram arrives** and the switch counts **no non-conforming drop**: the burst's
//!   excess over the connection's bucket waits well inside the default 100 ms allowance
//!   (`rtlan send`'s own 10 ms generator bucket makes the offer ≈ 23 Mbit/s: ≈ 145 KB against
//!   ≈ 6 KB of bucket plus 10 Mbit/s, ≈ 62 ms for the last frame; 74 ms measured at 60 ms of
//!   sending), so a regulator drops nothing; a policer (the switch before) dropped about half.
//! - **the switch held frames** (`rt.reshaped` at least a third of those sent; 159 of 165
//!   measured): once the bucket is empty, every later frame waits behind the held ones.
//! - **what b receives comes at the reserved rate**: over first → last arrival (kernel
//!   stamps) within −15 % / +10 % of 10 Mbit/s. The bucket's 6 KB at the start raise it by
//!   ≈ 4 %; late wake-ups of the switch can only stretch the interval. A switch that passed the
//!   burst through would deliver ≈ 20 Mbit/s.

mod common;

use common::*;
use serde_json::Value;

#[test]
fn a_burst_within_the_allowance_arrives_whole_at_the_reserved_rate() {
    if !root_or_skip("a_burst_within_the_allowance_arrives_whole_at_the_reserved_rate") {
        return;
    }
    let _serial = rtlan_lab::serial_lock().expect("lab lock");
    let lab = up_file("default.toml", "rsh");
    let ip_b = ip(&lab, "b");
    ping_ok(&lab, "a", "b");
    let daemon = Daemon::start(&lab, "a");
    // The client holds the connection open until the end of the test.
    let mut client = daemon.client();
    let rate_bps = 10_000_000u64;
    let opened = client
        .open(&rtlan_linux::rtcd::OpenParams {
            rate_bps,
            max_burst: 3000,
            ..open_params(ip_b, 7000)
        })
        .expect("a's 10 Mbit/s to b is admitted");
    // Ends 1 s after the last datagram (or after 10 s if none ever comes).
    let receiver = spawn_recv(&lab, "b", 7000, &["--idle", "1s", "--duration", "10s"]);
    let to = format!("{}:7000", opened.proxy_ip);
    let sent = exec_ok(
        &lab,
        "a",
        &[
            env!("CARGO_BIN_EXE_rtlan"),
            "send",
            "--to",
            to.as_str(),
            "--rate",
            "20mbit",
            "--size",
            "1000",
            "--duration",
            "50ms",
            "--json",
        ],
    );
    let sent: Value = serde_json::from_str(sent.trim()).expect("rtlan send JSON");
    let out = receiver
        .wait_with_output()
        .expect("rtlan recv ends when idle");
    let got: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "rtlan recv printed no JSON ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let rt = ctl(&lab, "s1", "stats")["switch"]["rt"].clone();
    eprintln!("sent {sent}\nreceived {got}\ns1 rt {rt}");

    let sent_n = sent["sent"].as_u64().expect("sent count");
    assert!(sent_n > 100, "the burst ran: {sent}");
    assert_eq!(
        got["packets"].as_u64(),
        Some(sent_n),
        "every datagram arrives"
    );
    assert_eq!(got["socket"]["drops"].as_u64(), Some(0), "{got}");
    assert_eq!(rt["nonconforming_drops"].as_u64(), Some(0), "{rt}");
    assert_eq!(rt["queue_drops"].as_u64(), Some(0), "{rt}");
    let reshaped = rt["reshaped"].as_u64().expect("reshaped counter");
    assert!(3 * reshaped >= sent_n, "{reshaped} of {sent_n} held: {rt}");
    let delivered = got["wire_bps"].as_f64().expect("wire_bps");
    let r = rate_bps as f64;
    assert!(
        (0.85 * r..=1.10 * r).contains(&delivered),
        "b received {delivered} bit/s, not the reserved {r}"
    );
    drop(client);
    drop(daemon);
    down_clean(lab);
}
