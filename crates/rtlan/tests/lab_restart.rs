//! Lab tests of restart safety (docs/protocol.md, "Restarts"): real namespaces, real `rtlan switch`
//! and `rtlan rtcd` processes, killed with SIGKILL and started again with the same command line.
//! A restarted switch gets its connection back (the host daemon signals it again under the same
//! proxy IP, the client hears `interrupted` then `recovered`, the stream flows again); a restarted
//! host daemon removes what its previous start left in the kernel and the switches release the
//! old start's connections.

mod common;

use std::mem::ManuallyDrop;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::*;
use rtlan_lab::Lab;
use rtlan_linux::rtcd::{OpenParams, RtcdClient};
use serde_json::Value;

/// host a — s1 — s2 — host b.
const CHAIN: &str = r#"
[[host]]
name = "a"
[[host]]
name = "b"
[[switch]]
name = "s1"
[[switch]]
name = "s2"
[[link]]
ends = ["a", "s1"]
rate = "100mbit"
[[link]]
ends = ["s1", "s2"]
rate = "100mbit"
[[link]]
ends = ["s2", "b"]
rate = "100mbit"
"#;

const SWITCHES: [&str; 2] = ["s1", "s2"];

/// The rtcd refresh period in force (the default, docs/protocol.md).
const REFRESH: Duration = Duration::from_secs(10);

/// Ends a process this test started (by its PID) and reaps it.
fn end(mut child: Child) {
    signal(child.id(), libc::SIGTERM);
    let _ = child.wait();
}

/// Reads the lines rtcd sends `client` (events and replies) until `done` holds for the events
/// seen so far or `timeout` passes. Each round sends a harmless `list` request, whose reply
/// comes after any event already queued, so no read blocks longer than one round trip.
fn events_until(
    client: &mut RtcdClient,
    timeout: Duration,
    done: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    let start = Instant::now();
    let mut events = Vec::new();
    let mut id = 10_000u64;
    while start.elapsed() < timeout && !done(&events) {
        id += 1;
        let line = client
            .raw(&format!(r#"{{"op":"list","id":{id}}}"#))
            .expect("rtcd answers");
        if line.get("event").is_some() {
            events.push(line);
        } else {
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    events
}

fn has_event(events: &[Value], name: &str) -> bool {
    events.iter().any(|e| e["event"] == name)
}

/// Bytes received on `host`'s eth0 so far.
fn rx_bytes(lab: &Lab, host: &str) -> u64 {
    rtlan_lab::tools::iface_counters(lab.netns(host).expect("ns"), "eth0")
        .expect("counters")
        .rx_bytes
}

/// Received rate on `host`'s eth0 over `window`, bit/s.
fn received_bps(lab: &Lab, host: &str, window: Duration) -> f64 {
    let before = rx_bytes(lab, host);
    std::thread::sleep(window);
    let after = rx_bytes(lab, host);
    (after - before) as f64 * 8.0 / window.as_secs_f64()
}

fn params(lab: &Lab, rate_bps: u64) -> OpenParams {
    OpenParams {
        rate_bps,
        ..open_params(ip(lab, "b"), 7000)
    }
}

/// Whether every switch holds exactly one connection, of `rate_bps`.
fn one_connection_everywhere(lab: &Lab, rate_bps: u64) -> bool {
    SWITCHES.iter().all(|s| {
        let table = connections(lab, s);
        table.len() == 1 && table[0]["rate_bps"] == rate_bps
    })
}

#[test]
fn a_restarted_switch_gets_its_connection_back_with_the_stream_running() {
    if !root_or_skip("a_restarted_switch_gets_its_connection_back_with_the_stream_running") {
        return;
    }
    let _serial = rtlan_lab::serial_lock().expect("lab lock");
    let lab = up_str(CHAIN, "rsw");
    std::thread::sleep(Duration::from_millis(1500)); // HELLOs
    let daemon = Daemon::start(&lab, "a");
    let mut client = daemon.client();
    let rate: u64 = 2_000_000;
    let opened = client.open(&params(&lab, rate)).expect("a -> b admitted");
    assert_eq!(opened.hops, 2, "{opened:?}");
    assert!(one_connection_everywhere(&lab, rate), "before the restart");

    // A UDP stream at the reserved rate (whole frames) to the proxy IP, for the whole test.
    let to = format!("{}:7000", opened.proxy_ip);
    let sender = lab
        .exec(
            "a",
            &[
                env!("CARGO_BIN_EXE_rtlan"),
                "send",
                "--to",
                to.as_str(),
                "--rate",
                "2mbit",
                "--size",
                "1000",
                "--duration",
                "90s",
            ],
        )
        .expect("host a")
        .stdout(Stdio::null())
        .spawn()
        .expect("rtlan send starts");
    std::thread::sleep(Duration::from_millis(1000));
    let before = received_bps(&lab, "b", Duration::from_secs(2));
    eprintln!("received before the restart: {before:.0} bit/s (reserved {rate})");

    // SIGKILL s2 by its PID and start it again with the same command line.
    crash_switch(&lab, "s2");
    let killed_at = Instant::now();
    let restarted = restart_switch(&lab, "s2");
    let restarted_after = killed_at.elapsed();

    let (back, took) = poll_until(2 * REFRESH, || one_connection_everywhere(&lab, rate));
    let recovery = killed_at.elapsed();
    eprintln!(
        "s2 restart: socket answered {restarted_after:?} after the kill; connection back on \
         every switch {recovery:?} after the kill ({took:?} after the restart)"
    );
    let tables: Vec<_> = SWITCHES.iter().map(|s| connections(&lab, s)).collect();
    // The restarted process set the connection up itself (it started with an empty table).
    let s2_setups = signal_counter(&lab, "s2", "setup_ok");
    let events = events_until(&mut client, Duration::from_secs(5), |e| {
        has_event(e, "recovered") || has_event(e, "revoked")
    });
    eprintln!("client events: {events:?}");
    let received = if back {
        std::thread::sleep(Duration::from_millis(500));
        received_bps(&lab, "b", Duration::from_secs(3))
    } else {
        0.0
    };
    eprintln!("received after recovery: {received:.0} bit/s (reserved {rate})");
    // Never doubled: still one connection each a while later (a late duplicate SETUP would show).
    std::thread::sleep(Duration::from_secs(1));
    let later: Vec<_> = SWITCHES.iter().map(|s| connections(&lab, s)).collect();

    end(sender);
    end(restarted);
    drop(client);
    drop(daemon);
    down_clean(lab);

    assert!(
        back,
        "connection not back on every switch within {took:?}: {tables:?}"
    );
    assert!(
        later.iter().all(|t| t.len() == 1),
        "each switch holds exactly one connection: {later:?}"
    );
    assert_eq!(
        s2_setups, 1,
        "the restarted s2 admitted the connection once"
    );
    assert!(has_event(&events, "interrupted"), "{events:?}");
    assert!(has_event(&events, "recovered"), "{events:?}");
    assert!(!has_event(&events, "revoked"), "{events:?}");
    let recovered = events.iter().find(|e| e["event"] == "recovered").unwrap();
    assert_eq!(recovered["conn"], opened.conn, "{recovered}");
    // 90 %: the sender paces whole frames including preamble, FCS and inter-frame gap (the
    // reservation's unit), while eth0's rx_bytes counts the frame without FCS or preamble —
    // 1042 of 1066 bytes, 97.7 % — and the 3 s window may lose a frame or two to timer jitter
    // at either end; a stream that did not recover reads 0.
    assert!(
        received >= 0.9 * rate as f64,
        "stream after recovery {received:.0} bit/s < 90 % of {rate}"
    );
}

#[test]
fn a_restarted_rtcd_leaves_nothing_behind() {
    if !root_or_skip("a_restarted_rtcd_leaves_nothing_behind") {
        return;
    }
    let _serial = rtlan_lab::serial_lock().expect("lab lock");
    let lab = up_str(CHAIN, "rrc");
    std::thread::sleep(Duration::from_millis(1500)); // HELLOs
    let daemon = Daemon::start_with_config(&lab, "a", "");
    let mut client = daemon.client();
    let first_rate: u64 = 1_000_000;
    client
        .open(&params(&lab, first_rate))
        .expect("a -> b admitted");
    assert!(
        one_connection_everywhere(&lab, first_rate),
        "before the kill"
    );

    // SIGKILL the daemon by its PID: nothing gets cleaned up.
    let mut killed = ManuallyDrop::new(daemon);
    signal(killed.child.id(), libc::SIGKILL);
    let _ = killed.child.wait();
    drop(client);
    let leftover = proxy_neighbours(&lab, "a");
    let leftover_route = has_proxy_route(&lab, "a");
    let still_booked = one_connection_everywhere(&lab, first_rate);

    // Start it again with the same config (the dead one's socket file is stale).
    let _ = std::fs::remove_file(&killed.socket);
    let started = Instant::now();
    let daemon = Daemon::start_with_config(&lab, "a", "");
    let (released, took) = poll_until(Duration::from_secs(2), || {
        SWITCHES.iter().all(|s| connections(&lab, s).is_empty())
    });
    let release_time = started.elapsed();
    eprintln!(
        "rtcd restart: switches released the old connection {release_time:?} after the start \
         ({took:?} of polling)"
    );
    let neigh_after = proxy_neighbours(&lab, "a");
    let route_after = has_proxy_route(&lab, "a");

    let second_rate: u64 = 3_000_000;
    let mut client = daemon.client();
    let reopened = client.open(&params(&lab, second_rate));
    let new_rate_everywhere = one_connection_everywhere(&lab, second_rate);
    let tables: Vec<_> = SWITCHES.iter().map(|s| connections(&lab, s)).collect();

    drop(client);
    drop(daemon);
    // The restarted daemon took over the HTB root the killed one left (and so removed it when
    // it stopped): nothing of either start remains on the interface.
    let root_after = exec_ok(&lab, "a", &["tc", "qdisc", "show", "dev", "eth0", "root"]);
    down_clean(lab);

    assert!(
        !root_after.starts_with("qdisc htb 1: root"),
        "rtcd's HTB root is still there after a clean stop: {root_after}"
    );
    assert_eq!(leftover.len(), 1, "the killed rtcd left its proxy entry");
    assert!(leftover_route, "the killed rtcd left its proxy route");
    assert!(
        still_booked,
        "the switches kept the connection while rtcd was down"
    );
    // A fresh start installs the route again only when it opens a connection; at this point
    // nothing is open, so what is there is left over.
    assert!(
        neigh_after.is_empty(),
        "left-over proxy entries: {neigh_after:?}"
    );
    assert!(!route_after, "left-over proxy route");
    assert!(
        released,
        "switches still hold the old connection after {took:?}"
    );
    let reopened = reopened.expect("a new connection opens");
    assert_eq!(reopened.hops, 2, "{reopened:?}");
    assert!(
        new_rate_everywhere,
        "every switch shows the new rate {second_rate}: {tables:?}"
    );
}
