//! `rtlan router` on real interfaces (root only): namespaces `a` — `r` — `b` joined by veth
//! pairs, the router in `r` with the kernel's forwarding off, real `ping` in the hosts
//! (`docs/router.md`, `docs/qsr.md` §2.2).
//!
//! ```text
//! a eth0 198.18.1.2/24 ── eth1 r eth2 ── eth0 b 198.18.2.2/24
//!                  198.18.1.1/24  198.18.2.1/24
//! ```

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::root_or_skip;

const BIN: &str = env!("CARGO_BIN_EXE_rtlan");

/// The three namespaces of one run; deleted (and the router stopped) when dropped.
struct Net {
    prefix: String,
    dir: PathBuf,
    router: Option<Child>,
}

impl Net {
    fn ns(&self, node: &str) -> String {
        format!("{}{node}", self.prefix)
    }

    fn exec(&self, node: &str, args: &[&str]) -> Output {
        Command::new("ip")
            .args(["netns", "exec", &self.ns(node)])
            .args(args)
            .output()
            .expect("ip netns exec runs")
    }

    fn ok(&self, node: &str, args: &[&str]) -> String {
        let out = self.exec(node, args);
        assert!(out.status.success(), "[{node}] {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn up() -> Net {
        let prefix = format!("rtl-rt{}-", std::process::id() % 100_000);
        let dir = std::env::temp_dir().join(format!("{prefix}dir"));
        std::fs::create_dir_all(&dir).expect("state dir");
        let net = Net {
            prefix,
            dir,
            router: None,
        };
        for node in ["a", "r", "b"] {
            let _ = Command::new("ip")
                .args(["netns", "del", &net.ns(node)])
                .output();
            let out = Command::new("ip")
                .args(["netns", "add", &net.ns(node)])
                .output()
                .expect("ip netns add");
            assert!(out.status.success(), "{out:?}");
            net.ok(node, &["ip", "link", "set", "lo", "up"]);
        }
        for (host, rif, subnet) in [("a", "eth1", 1), ("b", "eth2", 2)] {
            net.ok(
                "r",
                &[
                    "ip",
                    "link",
                    "add",
                    rif,
                    "type",
                    "veth",
                    "peer",
                    "name",
                    "eth0",
                    "netns",
                    &net.ns(host),
                ],
            );
            let host_addr = format!("198.18.{subnet}.2/24");
            let gw = format!("198.18.{subnet}.1");
            let router_addr = format!("{gw}/24");
            net.ok(host, &["ip", "addr", "add", &host_addr, "dev", "eth0"]);
            net.ok(host, &["ip", "link", "set", "eth0", "up"]);
            net.ok(host, &["ip", "route", "add", "default", "via", &gw]);
            net.ok("r", &["ip", "addr", "add", &router_addr, "dev", rif]);
            net.ok("r", &["ip", "link", "set", rif, "up"]);
            // Complete checksums on the wire, as the lab does (docs/lab.md): the router reads
            // and rewrites frames in user space.
            net.ok(host, &["ethtool", "-K", "eth0", "tx", "off"]);
            net.ok("r", &["ethtool", "-K", rif, "tx", "off"]);
        }
        net
    }

    fn write_config(&self, extra: &str) -> PathBuf {
        let path = self.dir.join("r.toml");
        let text = format!(
            "name = \"r\"\ncontrol_socket = \"{}\"\n{extra}\n[[port]]\nifname = \"eth1\"\nrate = \"100mbit\"\n[[port]]\nifname = \"eth2\"\nrate = \"100mbit\"\n",
            self.socket().display()
        );
        std::fs::write(&path, text).expect("config written");
        path
    }

    fn socket(&self) -> PathBuf {
        self.dir.join("r.sock")
    }

    fn start_router(&mut self, config: &Path) {
        let child = Command::new("ip")
            .args(["netns", "exec", &self.ns("r"), BIN, "router", "--config"])
            .arg(config)
            .arg("--json")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("rtlan router starts");
        self.router = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while !self.socket().exists() {
            assert!(
                Instant::now() < deadline,
                "the router's control socket never appeared"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn ctl(&self, cmd: &str) -> serde_json::Value {
        rtlan_linux::ctl::request(&self.socket(), cmd).expect("control request")
    }

    /// Stops the router (SIGTERM) and returns its JSON report.
    fn stop_router(&mut self) -> serde_json::Value {
        let child = self.router.take().expect("running");
        // SAFETY: kill has no memory-safety preconditions; the PID is our own child's.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let out = child.wait_with_output().expect("router exits");
        assert!(out.status.success(), "router: {out:?}");
        serde_json::from_slice(&out.stdout).expect("JSON report")
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        if let Some(mut child) = self.router.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        for node in ["a", "r", "b"] {
            let _ = Command::new("ip")
                .args(["netns", "del", &self.ns(node)])
                .output();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn the_router_forwards_answers_with_icmp_and_mirrors_kernel_routes() {
    if !root_or_skip("the_router_forwards_answers_with_icmp_and_mirrors_kernel_routes") {
        return;
    }
    let _serial = rtlan_lab::serial_lock().expect("lab lock");
    let mut net = Net::up();

    // With the kernel forwarding too, the router refuses to start.
    net.ok("r", &["sysctl", "-qw", "net.ipv4.ip_forward=1"]);
    let config = net.write_config("");
    let refused = net.exec(
        "r",
        &[BIN, "router", "--config", config.to_str().expect("utf-8")],
    );
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("ip_forward"),
        "{refused:?}"
    );
    net.ok("r", &["sysctl", "-qw", "net.ipv4.ip_forward=0"]);
    // Without the router, nothing crosses.
    let out = net.exec("a", &["ping", "-c", "1", "-W", "1", "198.18.2.2"]);
    assert!(!out.status.success(), "the kernel forwarded: {out:?}");

    net.start_router(&config);
    let ping = net.ok(
        "a",
        &["ping", "-c", "3", "-i", "0.2", "-W", "2", "198.18.2.2"],
    );
    assert!(ping.contains("3 received"), "{ping}");
    assert!(
        ping.contains("ttl=63"),
        "one router on the way back: {ping}"
    );

    // TTL 1: time exceeded from the router's address on a's side.
    let ttl1 = net.exec(
        "a",
        &["ping", "-c", "1", "-t", "1", "-W", "2", "198.18.2.2"],
    );
    let text = String::from_utf8_lossy(&ttl1.stdout);
    assert!(
        text.contains("From 198.18.1.1") && text.contains("Time to live exceeded"),
        "{text}"
    );
    // No route: net unreachable.
    let lost = net.exec("a", &["ping", "-c", "1", "-W", "2", "203.0.113.9"]);
    let text = String::from_utf8_lossy(&lost.stdout);
    assert!(
        text.contains("From 198.18.1.1") && text.contains("Destination Net Unreachable"),
        "{text}"
    );

    // A route added in the router's namespace (as a routing daemon would) is mirrored; so is
    // its removal.
    net.ok(
        "r",
        &["ip", "route", "add", "198.18.9.0/24", "via", "198.18.2.2"],
    );
    let has = |net: &Net| {
        net.ctl("routes")
            .as_array()
            .expect("routes list")
            .iter()
            .any(|r| {
                r["prefix"] == "198.18.9.0/24" && r["source"] == "kernel" && r["port"] == "eth2"
            })
    };
    let deadline = Instant::now() + Duration::from_secs(2);
    while !has(&net) {
        assert!(
            Instant::now() < deadline,
            "kernel route not mirrored: {}",
            net.ctl("routes")
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    net.ok("r", &["ip", "route", "del", "198.18.9.0/24"]);
    let deadline = Instant::now() + Duration::from_secs(2);
    while has(&net) {
        assert!(
            Instant::now() < deadline,
            "kernel route not removed: {}",
            net.ctl("routes")
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let neighbours = net.ctl("neighbours");
    assert!(
        neighbours
            .as_array()
            .expect("list")
            .iter()
            .any(|n| n["ip"] == "198.18.2.2" && n["port"] == "eth2"),
        "{neighbours}"
    );

    let report = net.stop_router();
    let router = &report["router"];
    assert!(router["forwarded"].as_u64().unwrap_or(0) >= 6, "{report}");
    assert_eq!(router["icmp"]["time_exceeded"], 1, "{report}");
    assert_eq!(router["icmp"]["net_unreachable"], 1, "{report}");
    // The kernel answered ARP for the router (answer_local = false) and the router learnt its
    // neighbours from their answers to its own requests.
    assert!(
        router["arp_requests_sent"].as_u64().unwrap_or(0) >= 2,
        "{report}"
    );
    assert!(report["route_syncs"].as_u64().unwrap_or(0) >= 3, "{report}");
}

#[test]
fn a_bad_router_config_names_file_line_and_column() {
    let dir = std::env::temp_dir().join(format!("rtl-rtcfg{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("bad.toml");
    std::fs::write(&path, "[[port]]\nifname = \"eth1\"\nrate = \"fast\"\n").expect("written");
    let out = Command::new(BIN)
        .args(["router", "--config"])
        .arg(&path)
        .output()
        .expect("runs");
    std::fs::remove_dir_all(&dir).expect("cleaned");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("{}:3:8:", path.display())),
        "{stderr}"
    );
}

/// With `[rsvp]` the router holds an IPPROTO_RSVP raw socket in its namespace (so its kernel
/// does not answer RSVP to the router with "protocol unreachable"), still forwards, and its
/// statistics carry the RSVP engine's counters.
#[test]
fn with_rsvp_the_router_claims_the_protocol_and_still_forwards() {
    if !root_or_skip("with_rsvp_the_router_claims_the_protocol_and_still_forwards") {
        return;
    }
    let _serial = rtlan_lab::serial_lock().expect("lab lock");
    let mut net = Net::up();
    // The extra text goes before the [[port]] tables: a top-level table here would swallow
    // them, so the RSVP table is written after, by hand.
    let config = net.write_config("");
    let mut text = std::fs::read_to_string(&config).expect("config");
    text.push_str("[rsvp]\nrefresh = \"5s\"\n");
    std::fs::write(&config, text).expect("config written");
    let raw_before = net.ok("r", &["cat", "/proc/net/raw"]);
    assert!(!raw_before.contains(":002E "), "{raw_before}");
    net.start_router(&config);
    // /proc/net/raw lists a raw socket's protocol as its local "port", in hex.
    let raw = net.ok("r", &["cat", "/proc/net/raw"]);
    assert!(raw.contains(":002E "), "no RSVP socket: {raw}");
    let ping = net.ok(
        "a",
        &["ping", "-c", "2", "-i", "0.2", "-W", "2", "198.18.2.2"],
    );
    assert!(ping.contains("2 received"), "{ping}");
    let stats = net.ctl("stats");
    let path_in = stats
        .pointer("/router/rsvp/path_in")
        .or_else(|| stats.pointer("/data/router/rsvp/path_in"));
    assert_eq!(path_in, Some(&serde_json::json!(0)), "{stats}");
    net.stop_router();
}
