//! Lab tests of EtheReal real-time connections end to end (issue 3, first slice): the real
//! `rtlan rtcd` on an unmodified sending host, real rtlan switches, and socat — a receiver no one
//! here wrote — on the receiving host. The sender's application sends plain UDP to the proxy IP the
//! daemon handed out; the switches swap connection ids, the first rewrites the proxy IP to the
//! receiver's, the last writes the receiver's MAC.

mod common;

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::*;
use rtlan_lab::Lab;
use rtlan_linux::rtcd::{OpenParams, RtcdClient};

/// The daemon running in a host's namespace, stopped (SIGTERM) and reaped on drop.
struct Daemon {
    child: Child,
    socket: std::path::PathBuf,
}

impl Daemon {
    fn start(lab: &Lab, host: &str) -> Daemon {
        let socket = lab.state_dir().join(format!("rtcd-{host}.sock"));
        let child = lab
            .exec(
                host,
                &[
                    env!("CARGO_BIN_EXE_rtlan"),
                    "rtcd",
                    "--interface",
                    "eth0",
                    "--socket",
                    socket.to_str().expect("utf-8 state dir"),
                ],
            )
            .unwrap()
            .stdout(Stdio::null())
            .spawn()
            .expect("rtcd starts");
        let deadline = Instant::now() + Duration::from_secs(5);
        while !socket.exists() {
            assert!(Instant::now() < deadline, "rtcd did not create its socket");
            std::thread::sleep(Duration::from_millis(20));
        }
        Daemon { child, socket }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Ok(pid) = libc::pid_t::try_from(self.child.id()) {
            // SAFETY: kill(2) has no memory-safety preconditions; `pid` is our child.
            unsafe { libc::kill(pid, libc::SIGTERM) };
        }
        let _ = self.child.wait();
    }
}

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
        neigh.contains(&opened.proxy_mac.to_string()) && neigh.contains("PERMANENT"),
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
