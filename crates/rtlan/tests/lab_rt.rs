//! Lab tests of EtheReal real-time connections end to end (issue 3 item 5; EtheReal §2.2, §3.3):
//! over one, two and three switches (`topologies/chain3.toml`), the connection tables chaining
//! per-link ids, and teardown leaving switches and hosts clean. The real
//! `rtlan rtcd` on an unmodified sending host, real rtlan switches, and socat — a receiver no one
//! here wrote — on the receiving host. The sender's application sends plain UDP to the proxy IP the
//! daemon handed out; the switches swap connection ids, the first rewrites the proxy IP to the
//! receiver's, the last writes the receiver's MAC.

mod common;

use std::process::Stdio;
use std::time::Duration;

use common::*;
use rtlan_lab::Lab;
use rtlan_linux::rtcd::{OpenParams, Opened, RtcdClient};
use serde_json::Value;

/// Reserves a connection from `from` to `to`:7000, sends three datagrams to the proxy IP with
/// socat, and checks they arrive at a socat receiver on `to`; returns the switch stats afterwards.
fn reserve_and_send(lab: &Lab, from: &str, to: &str) {
    let daemon = Daemon::start(lab, from);
    let mut client = RtcdClient::connect(&daemon.socket).expect("connect to rtcd");
    client.register(std::process::id()).expect("register");
    let opened = client
        .open(&OpenParams {
            dst_ip: ip(lab, to),
            dst_port: 7000,
            src_port: 0,
            rate_bps: 1_000_000,
            max_burst: 3000,
            max_packet: 1500,
            delay_us: None,
        })
        .expect("the path admits 1 Mbit/s");
    assert!(
        opened.proxy_ip.octets()[..2] == [198, 19],
        "proxy IP in 198.19/16: {opened:?}"
    );
    // The daemon planted proxy IP -> proxy MAC in the sender's ARP cache (EtheReal §2.2).
    let neigh = exec_ok(
        lab,
        from,
        &["ip", "neigh", "show", &opened.proxy_ip.to_string()],
    );
    assert!(
        neigh.contains(&opened.proxy_mac.expect("proxy MAC").to_string())
            && neigh.contains("PERMANENT"),
        "neighbour entry: {neigh}"
    );

    let receiver = lab
        .exec(
            to,
            &["timeout", "10", "socat", "-u", "UDP-RECV:7000", "STDOUT"],
        )
        .unwrap()
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let script = format!(
        "for i in 0 1 2; do echo rt-$i | socat -u STDIN UDP-SENDTO:{}:7000; sleep 0.1; done",
        opened.proxy_ip
    );
    exec_ok(lab, from, &["sh", "-c", &script]);
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: kill(2) has no memory-safety preconditions; the pid is our child.
    unsafe { libc::kill(receiver.id() as libc::pid_t, libc::SIGTERM) };
    let out = receiver.wait_with_output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "rt-0\nrt-1\nrt-2\n");

    client.close(opened.conn).expect("close");
    std::thread::sleep(Duration::from_millis(300));
    let neigh = exec_ok(
        lab,
        from,
        &["ip", "neigh", "show", &opened.proxy_ip.to_string()],
    );
    assert!(
        neigh.trim().is_empty(),
        "teardown removes the entry: {neigh}"
    );
}

#[test]
fn realtime_connection_across_one_switch() {
    if !root_or_skip("realtime_connection_across_one_switch") {
        return;
    }
    let _serial = rtlan_lab::serial_lock().expect("lab lock");
    let lab = up_file("default.toml", "rt1");
    reserve_and_send(&lab, "a", "c");
    let stats = ctl(&lab, "s1", "stats");
    let rt = &stats["switch"]["rt"];
    assert_eq!(
        rt["ip_rewrites"], 3,
        "first switch rewrites the proxy IP: {rt}"
    );
    assert_eq!(
        rt["mac_rewrites"], 3,
        "last switch writes the receiver MAC: {rt}"
    );
    assert_eq!(stats["switch"]["signal"]["setup_ok"], 1, "{stats}");
    assert_eq!(stats["switch"]["signal"]["teardowns"], 1, "{stats}");
    down_clean(lab);
}

#[test]
fn realtime_connection_across_two_switches_swaps_ids() {
    if !root_or_skip("realtime_connection_across_two_switches_swaps_ids") {
        return;
    }
    let _serial = rtlan_lab::serial_lock().expect("lab lock");
    let lab = up_file("chain.toml", "rt2");
    // Let the switches hear each other's HELLOs (sent every second) before setting up.
    std::thread::sleep(Duration::from_millis(1500));
    reserve_and_send(&lab, "a", "c");
    let s1 = ctl(&lab, "s1", "stats");
    let s2 = ctl(&lab, "s2", "stats");
    assert_eq!(
        s1["switch"]["rt"]["ip_rewrites"], 3,
        "s1 is the first switch: {s1}"
    );
    assert_eq!(
        s1["switch"]["rt"]["id_swaps"], 3,
        "s1 swaps to s2's link id: {s1}"
    );
    assert_eq!(
        s2["switch"]["rt"]["mac_rewrites"], 3,
        "s2 is the last switch: {s2}"
    );
    for s in [&s1, &s2] {
        assert_eq!(s["switch"]["signal"]["setup_ok"], 1, "{s}");
        assert_eq!(s["switch"]["signal"]["teardowns"], 1, "{s}");
    }
    down_clean(lab);
}

/// The entry of `table` with this input port and id; panics naming the switch otherwise.
fn entry(table: &[Value], switch: &str, in_port: u64, in_id: u64) -> Value {
    table
        .iter()
        .find(|c| c["in_port"] == in_port && c["in_id"] == in_id)
        .cloned()
        .unwrap_or_else(|| panic!("{switch} has no entry ({in_port}, {in_id}): {table:?}"))
}

/// The output id of a connection-table entry that is not the last hop.
fn out_id(e: &Value) -> u64 {
    e["out_id"]
        .as_u64()
        .unwrap_or_else(|| panic!("not a last hop, so out_id is a number: {e}"))
}

/// Opens b → c:7001, then a → c:7000 from source port 40001, over chain3 (HELLOs heard first).
/// b goes first so that s2's allocation on the s2–s3 link is one ahead of the others.
fn open_b_then_a(lab: &Lab, da: &Daemon, db: &Daemon) -> (RtcdClient, Opened, RtcdClient, Opened) {
    let c_ip = ip(lab, "c");
    let mut cb = db.client();
    let from_b = cb.open(&open_params(c_ip, 7001)).expect("b -> c admitted");
    let mut ca = da.client();
    let params = OpenParams {
        src_port: 40001,
        ..open_params(c_ip, 7000)
    };
    let from_a = ca.open(&params).expect("a -> c admitted");
    assert_eq!(from_a.hops, 3, "a -> c crosses s1, s2, s3: {from_a:?}");
    assert_eq!(from_b.hops, 2, "b -> c crosses s2, s3: {from_b:?}");
    (ca, from_a, cb, from_b)
}

#[test]
fn realtime_connection_across_three_switches_chains_and_swaps_ids() {
    if !root_or_skip("realtime_connection_across_three_switches_chains_and_swaps_ids") {
        return;
    }
    let _serial = rtlan_lab::serial_lock().expect("lab lock");
    let lab = up_file("chain3.toml", "rt3");
    std::thread::sleep(Duration::from_millis(1500)); // HELLOs
    let (da, db) = (Daemon::start(&lab, "a"), Daemon::start(&lab, "b"));
    let (_ca, opened, _cb, from_b) = open_b_then_a(&lab, &da, &db);
    let (a_ip, c_ip) = (ip(&lab, "a"), ip(&lab, "c"));

    // What c's kernel sees on the wire: a's real address and port to c's address and port.
    let receiver = udp_receiver(&lab, "c", 7000);
    let tcpdump = lab
        .exec(
            "c",
            &[
                "timeout", "15", "tcpdump", "-n", "-l", "-c", "3", "-i", "eth0", "udp", "and",
                "dst", "port", "7000",
            ],
        )
        .unwrap()
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("tcpdump starts");
    std::thread::sleep(Duration::from_millis(1000));
    send_udp(
        &lab,
        "a",
        opened.proxy_ip,
        7000,
        40001,
        &["rt-0", "rt-1", "rt-2"],
    );
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(stop_output(receiver), "rt-0\nrt-1\nrt-2\n");
    let dump = tcpdump.wait_with_output().expect("tcpdump ran");
    let dump = String::from_utf8_lossy(&dump.stdout);
    let expected = format!("IP {a_ip}.40001 > {c_ip}.7000:");
    assert_eq!(
        dump.lines().filter(|l| l.contains(&expected)).count(),
        3,
        "three datagrams {expected}: {dump}"
    );

    // The tables chain up: each switch's output id is the next switch's input id.
    let (s1, s2, s3) = (
        connections(&lab, "s1"),
        connections(&lab, "s2"),
        connections(&lab, "s3"),
    );
    let e1 = entry(&s1, "s1", port_towards(&lab, "s1", "a"), opened.id.into());
    assert_eq!(e1["dst_ip"], c_ip.to_string(), "{e1}");
    assert_eq!(e1["dst_port"], 7000, "{e1}");
    assert_eq!(e1["rate_bps"], 1_000_000, "{e1}");
    assert_eq!(e1["out_port"], port_towards(&lab, "s1", "s2"), "{e1}");
    let e2 = entry(&s2, "s2", port_towards(&lab, "s2", "s1"), out_id(&e1));
    assert_eq!(e2["out_port"], port_towards(&lab, "s2", "s3"), "{e2}");
    let e3 = entry(&s3, "s3", port_towards(&lab, "s3", "s2"), out_id(&e2));
    assert!(e3["out_id"].is_null(), "s3 is the last hop: {e3}");
    assert_eq!(e3["out_port"], port_towards(&lab, "s3", "c"), "{e3}");
    let ids = [u64::from(opened.id), out_id(&e1), out_id(&e2)];
    assert!(
        !(ids[0] == ids[1] && ids[1] == ids[2]),
        "ids are per link, and b's connection took one on s2–s3 first: {ids:?}"
    );
    // b's connection shares s2–s3 under a different id.
    let eb = entry(&s2, "s2", port_towards(&lab, "s2", "b"), from_b.id.into());
    assert_ne!(
        out_id(&eb),
        out_id(&e2),
        "two connections on one link: {s2:?}"
    );
    assert_eq!(s3.len(), 2, "{s3:?}");

    // Every frame was swapped on the way.
    assert_eq!(rt_counter(&lab, "s1", "ip_rewrites"), 3);
    assert_eq!(rt_counter(&lab, "s1", "id_swaps"), 3);
    assert_eq!(rt_counter(&lab, "s2", "id_swaps"), 3);
    assert_eq!(rt_counter(&lab, "s3", "mac_rewrites"), 3);
    drop((da, db));
    down_clean(lab);
}

#[test]
fn teardown_leaves_switches_and_hosts_clean() {
    if !root_or_skip("teardown_leaves_switches_and_hosts_clean") {
        return;
    }
    let _serial = rtlan_lab::serial_lock().expect("lab lock");
    let lab = up_file("chain3.toml", "rt4");
    std::thread::sleep(Duration::from_millis(1500)); // HELLOs
    let (da, db) = (Daemon::start(&lab, "a"), Daemon::start(&lab, "b"));
    let (mut ca, from_a, mut cb, from_b) = open_b_then_a(&lab, &da, &db);

    // Before: state exists, so the checks below are not vacuous.
    let towards_s3 = port_towards(&lab, "s2", "s3");
    let port = rt_ports(&lab, "s2")
        .into_iter()
        .find(|p| p["port"] == towards_s3)
        .expect("s2 reports its port towards s3");
    assert_eq!(port["ids_in_use"], 2, "{port}");
    assert!(
        port["booked_bps"].as_u64().unwrap_or(0) >= 2_000_000,
        "{port}"
    );
    assert_eq!(proxy_neighbours(&lab, "a").len(), 1);
    assert!(has_proxy_route(&lab, "a") && has_proxy_route(&lab, "b"));

    ca.close(from_a.conn).expect("close a -> c");
    cb.close(from_b.conn).expect("close b -> c");
    let (clean, took) = wait_until(Duration::from_secs(2), || {
        ["s1", "s2", "s3"]
            .iter()
            .all(|s| connections(&lab, s).is_empty())
    });
    assert!(clean, "connections left after {took:?}");
    for s in ["s1", "s2", "s3"] {
        assert_switch_idle(&lab, s);
    }
    // TEARDOWNs crossed every switch on each path: a -> c s1, s2, s3; b -> c s2, s3.
    assert_eq!(signal_counter(&lab, "s1", "teardowns"), 1);
    assert_eq!(signal_counter(&lab, "s2", "teardowns"), 2);
    assert_eq!(signal_counter(&lab, "s3", "teardowns"), 2);
    for host in ["a", "b"] {
        let neigh = proxy_neighbours(&lab, host);
        assert!(neigh.is_empty(), "{host} keeps proxy entries: {neigh:?}");
        assert!(!has_proxy_route(&lab, host), "{host} keeps the proxy route");
    }
    assert!(ca.list().expect("list").is_empty());
    assert!(cb.list().expect("list").is_empty());
    drop((ca, cb, da, db));
    down_clean(lab);
}
