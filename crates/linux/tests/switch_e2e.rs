//! Root-only end-to-end test of the switch daemon: two hosts in their own namespaces ping each
//! other through `switchd::run` running in a third, and the control socket reports what the
//! switch learnt. Everything lives in namespaces `rtl-lnx<pid>-{a,b,s}`, removed on every exit.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{can_run_lab, no_ipv6, veth, Netns};
use rtlan_linux::{ctl, switchd};

/// Sets the shutdown flag when dropped, so a failing assertion also stops the switch thread.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

fn mac_of(ns: &Netns, ifname: &str) -> String {
    let out = ns.exec(&["cat", &format!("/sys/class/net/{ifname}/address")]);
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn wait_for_socket(path: &Path) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if ctl::request(path, "ping").is_ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("control socket {} never answered", path.display());
}

fn raw_request(path: &Path, line: &str) -> serde_json::Value {
    let mut s = UnixStream::connect(path).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    s.write_all(line.as_bytes()).expect("write");
    let mut reply = String::new();
    BufReader::new(&s).read_line(&mut reply).expect("read");
    serde_json::from_str(&reply).expect("reply is JSON")
}

#[test]
fn hosts_ping_through_the_switch() {
    if !can_run_lab("hosts_ping_through_the_switch") {
        return;
    }
    let pid = std::process::id();
    let a = Netns::new(&format!("rtl-lnx{pid}-a"));
    let b = Netns::new(&format!("rtl-lnx{pid}-b"));
    let s = Netns::new(&format!("rtl-lnx{pid}-s"));
    for ns in [&a, &b, &s] {
        no_ipv6(ns);
    }
    veth(&a, "eth0", &s, "pa");
    veth(&b, "eth0", &s, "pb");
    a.exec(&["ip", "addr", "add", "198.18.77.1/24", "dev", "eth0"]);
    b.exec(&["ip", "addr", "add", "198.18.77.2/24", "dev", "eth0"]);
    let (mac_a, mac_b) = (mac_of(&a, "eth0"), mac_of(&b, "eth0"));

    let dir = std::env::temp_dir().join(format!("rtl-lnx{pid}"));
    let sock: PathBuf = dir.join("s.sock");
    let config = switchd::Config::from_toml_str(&format!(
        "name = \"e2e\"\nmgmt_ip = \"198.18.77.254\"\ncontrol_socket = \"{}\"\n\
         [[port]]\nifname = \"pa\"\n[[port]]\nifname = \"pb\"\nrate = \"100mbit\"\n",
        sock.display()
    ))
    .expect("config");

    let shutdown = Arc::new(AtomicBool::new(false));
    let stop = StopOnDrop(shutdown.clone());
    let flag = shutdown.clone();
    let switch = s.spawn(move || switchd::run(config, &flag));
    wait_for_socket(&sock);

    let ping = a
        .try_exec(&["ping", "-c", "3", "-W", "1", "-i", "0.2", "198.18.77.2"])
        .expect("run ping");
    assert!(
        ping.status.success(),
        "ping failed:\n{}{}",
        String::from_utf8_lossy(&ping.stdout),
        String::from_utf8_lossy(&ping.stderr)
    );
    // The switch answers ARP (only ARP) for its management IP: a ping resolves it but gets no
    // echo reply.
    let _ = a.try_exec(&["ping", "-c", "1", "-W", "1", "198.18.77.254"]);
    let neigh = String::from_utf8_lossy(&a.exec(&["ip", "neigh", "show", "198.18.77.254"]).stdout)
        .to_string();

    let fdb = ctl::request(&sock, "fdb").expect("fdb");
    let entries = fdb.as_array().expect("fdb is an array");
    let port_of = |mac: &str| {
        entries
            .iter()
            .find(|e| e["mac"].as_str() == Some(mac))
            .and_then(|e| e["port"].as_u64())
    };
    assert_eq!(port_of(&mac_a), Some(0), "host a learnt on port 0: {fdb}");
    assert_eq!(port_of(&mac_b), Some(1), "host b learnt on port 1: {fdb}");

    let stats = ctl::request(&sock, "stats").expect("stats");
    assert_eq!(stats["name"], "e2e");
    for port in 0..2 {
        let rx = stats["switch"]["ports"][port]["rx_frames"]
            .as_u64()
            .unwrap_or(0);
        let tx = stats["shell"]["ports"][port]["tx_frames"]
            .as_u64()
            .unwrap_or(0);
        assert!(rx >= 3 && tx >= 3, "port {port}: rx {rx} tx {tx}: {stats}");
    }
    assert_eq!(stats["shell"]["ports"][1]["ifname"], "pb");
    assert_eq!(stats["shell"]["ports"][0]["rx_truncated"], 0);
    assert!(stats["timer"]["histogram"].is_array());

    let config = ctl::request(&sock, "config").expect("config");
    assert_eq!(config["port"][1]["rate"], "100mbit");
    let switch_mac = config["mac"].as_str().expect("effective mac").to_string();
    assert!(
        neigh.contains(&format!("lladdr {switch_mac}")),
        "switch did not answer ARP for its management IP ({switch_mac}): {neigh}"
    );
    assert!(ctl::request(&sock, "arp").expect("arp").is_array());

    // Bad requests get error replies and do not disturb the daemon.
    let reply = raw_request(&sock, "{\"op\":\"reboot\",\"id\":9}\n");
    assert_eq!(reply["ok"], false, "{reply}");
    assert_eq!(reply["id"], 9, "{reply}");
    assert_eq!(reply["error"]["code"], "bad_request", "{reply}");
    assert!(matches!(
        ctl::request(&sock, "selfdestruct"),
        Err(ctl::CtlError::Refused(_))
    ));
    assert_eq!(raw_request(&sock, "not json\n")["ok"], false);
    assert_eq!(ctl::request(&sock, "ping").expect("still alive"), "pong");

    let stopping = Instant::now();
    drop(stop);
    let report = switch
        .join()
        .expect("switch thread")
        .expect("switch ran without error");
    assert!(
        stopping.elapsed() < Duration::from_secs(1),
        "shutdown took {:?}; the loop must check the flag every 100 ms",
        stopping.elapsed()
    );
    println!(
        "{}",
        serde_json::to_string_pretty(&report).unwrap_or_default()
    );
    assert!(!sock.exists(), "control socket removed on exit");
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(report.name, "e2e");
    assert!(report.uptime > Duration::ZERO);
    assert!(report.switch.ports[1].tx_frames >= 3);
    assert!(report.shell.control_errors >= 3, "{:?}", report.shell);
    // Idle, the loop sleeps (<= 10 wake-ups per second plus one per event); a spinning loop
    // would iterate millions of times in the same second or two.
    assert!(
        report.shell.loop_iterations < 5_000,
        "the data plane spins: {} iterations in {:?}",
        report.shell.loop_iterations,
        report.uptime
    );
    assert_eq!(report.shell.stale_deadlines, 0);
    drop((a, b, s));
}
