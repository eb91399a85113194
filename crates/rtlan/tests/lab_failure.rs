//! Lab test of failure detection (issue 12 item 3): a link of a reserved path loses carrier and
//! the sending application is told `revoked` (reason `link_down`) within 100 ms, with nothing left
//! booked. Real `rtlan rtcd`, a real rtlan switch, socat as the application.

mod common;

use std::time::{Duration, Instant};

use common::*;

#[test]
fn carrier_loss_revokes_the_connection_within_100_ms() {
    if !root_or_skip("carrier_loss_revokes_the_connection_within_100_ms") {
        return;
    }
    let _serial = rtlan_lab::serial_lock().expect("lab lock");
    let lab = up_file("default.toml", "ld1");
    let daemon = Daemon::start(&lab, "a");
    let mut app = SocatApp::start(&lab, "a", &daemon);
    let opened = app.register_and_open(ip(&lab, "c"));
    assert_eq!(opened["data"]["reply"], "opened", "{opened}");
    assert_eq!(connections(&lab, "s1").len(), 1);

    // c's interface goes down: s1's port towards c loses its carrier.
    exec_ok(&lab, "c", &["ip", "link", "set", "eth0", "down"]);
    // From the moment the command returned: the carrier is gone then.
    let cut = Instant::now();
    let (at, event) = loop {
        let (at, v) = app.next_json(Duration::from_secs(5));
        if v["event"].is_string() {
            break (at, v);
        }
    };
    let took = at.saturating_duration_since(cut);
    eprintln!("revoked {took:?} after the carrier loss: {event}");
    assert_eq!(event["event"], "revoked", "{event}");
    assert_eq!(event["reason"], "link_down", "{event}");
    // The target. The switch reads carriers every 20 ms; the rest is two control frames
    // and a netlink change on an idle machine, so 100 ms has room and a switch that ignored the
    // carrier (the soft state would take 30 s) fails by far.
    assert!(took < Duration::from_millis(100), "told after {took:?}");
    let (released, _) = wait_until(Duration::from_secs(1), || {
        connections(&lab, "s1").is_empty() && proxy_neighbours(&lab, "a").is_empty()
    });
    assert!(released, "nothing may stay booked or routed");
    assert_switch_idle(&lab, "s1");
    assert_eq!(signal_counter(&lab, "s1", "link_down"), 1);
    assert_eq!(signal_counter(&lab, "s1", "failure_released"), 1);
    signal(app.child.id(), libc::SIGTERM);
    let _ = app.child.wait();
    drop(daemon);
    down_clean(lab);
}
