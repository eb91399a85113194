//! Lab test of the carrier watch (issue 12 item 3: link state from netlink): inside a private
//! network namespace, a veth pair's carrier goes down and up, and the subscription hears each
//! change at once. Root only; skipped with a message otherwise.

mod common;

use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use common::{can_run_lab, Netns};
use rtlan_linux::linkwatch::LinkWatch;

/// Waits until the watch's socket is readable (at most `timeout`), then drains it.
fn wait_for_change(watch: &mut LinkWatch, timeout: Duration) -> (usize, Duration) {
    let start = Instant::now();
    let mut pfd = libc::pollfd {
        fd: watch.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd, its count, a finite timeout.
    let rc = unsafe { libc::poll(&mut pfd, 1, timeout.as_millis() as libc::c_int) };
    assert!(rc >= 0, "poll: {}", std::io::Error::last_os_error());
    (watch.drain(), start.elapsed())
}

#[test]
fn carrier_changes_are_heard_at_once() {
    if !can_run_lab("carrier_changes_are_heard_at_once") {
        return;
    }
    let ns = Netns::new(&format!("rtl-lw{}", std::process::id()));
    ns.exec(&[
        "ip", "link", "add", "lwa", "type", "veth", "peer", "name", "lwb",
    ]);
    ns.exec(&["ip", "link", "set", "lwa", "up"]);
    ns.exec(&["ip", "link", "set", "lwb", "up"]);
    let name = ns.name.clone();
    let worker = ns.spawn(move || {
        let mut watch = LinkWatch::open().expect("netlink socket");
        // Let the "up" notifications of the setup pass.
        std::thread::sleep(Duration::from_millis(100));
        watch.drain();
        assert_eq!(watch.carrier("lwa").ok(), Some(true));
        let set = |state: &str| {
            let out = std::process::Command::new("ip")
                .args(["netns", "exec", &name, "ip", "link", "set", "lwb", state])
                .output()
                .expect("ip");
            assert!(out.status.success());
        };
        // The peer goes down: lwa loses its carrier.
        set("down");
        let (down_events, down_after) = wait_for_change(&mut watch, Duration::from_secs(2));
        let down = watch.carrier("lwa").ok();
        set("up");
        let (up_events, up_after) = wait_for_change(&mut watch, Duration::from_secs(2));
        // veth reports the carrier on the next link watch run; the notification follows it.
        std::thread::sleep(Duration::from_millis(20));
        let up = watch.carrier("lwa").ok();
        (down_events, down_after, down, up_events, up_after, up)
    });
    let (down_events, down_after, down, up_events, up_after, up) = worker.join().expect("worker");
    eprintln!("down: {down_events} notifications after {down_after:?}; up: {up_events} after {up_after:?}");
    assert!(down_events >= 1, "no notification for the carrier loss");
    assert_eq!(down, Some(false));
    assert!(
        up_events >= 1,
        "no notification for the carrier coming back"
    );
    assert_eq!(up, Some(true));
    // Far below the 20 ms the switch's periodic check would take (the kernel sends it when
    // the flags change; poll wakes at once).
    assert!(down_after < Duration::from_millis(500), "{down_after:?}");
}
