//! Shared helpers for the lab tests: root check, unique lab names, control-socket queries.
#![allow(dead_code, unreachable_pub)]

pub mod rether;

use std::net::Ipv4Addr;
use std::time::Duration;

use rtlan_lab::{Lab, LabOptions, Topology};

/// Whether we can build labs (root); prints why a test is skipped otherwise.
pub fn root_or_skip(test: &str) -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        eprintln!("skipping {test}: lab tests need root (network namespaces)");
    }
    root
}

/// A lab name unique to this process and test: `t<tag><pid>`; tags of at most 4 characters keep
/// it within the 10 characters a lab name may have.
pub fn lab_name(tag: &str) -> String {
    let pid = std::process::id() % 100_000;
    format!("t{tag}{pid}")
}

/// Builds a topology file from the repository as a lab.
pub fn up_file(file: &str, tag: &str) -> Lab {
    let path = format!("{}/../../topologies/{file}", env!("CARGO_MANIFEST_DIR"));
    let topology = Topology::from_file(&path).expect("repository topology parses");
    up(&topology, tag)
}

/// Builds an inline topology as a lab.
pub fn up_str(text: &str, tag: &str) -> Lab {
    up_str_with(text, tag, |_| {})
}

/// [`up_str`] with the lab's options as `edit` changes them.
pub fn up_str_with(text: &str, tag: &str, edit: impl FnOnce(&mut LabOptions)) -> Lab {
    let topology = Topology::from_str(text, "inline").expect("inline topology parses");
    up_with(&topology, tag, edit)
}

fn up(topology: &Topology, tag: &str) -> Lab {
    up_with(topology, tag, |_| {})
}

fn up_with(topology: &Topology, tag: &str, edit: impl FnOnce(&mut LabOptions)) -> Lab {
    let name = lab_name(tag);
    // A crashed earlier run of this very test may have left the lab behind.
    let _ = rtlan_lab::down(&name);
    let mut options = LabOptions::new(env!("CARGO_BIN_EXE_rtlan"));
    edit(&mut options);
    Lab::up(topology, &name, &options).expect("lab up")
}

/// `rtlan recv --port PORT --json EXTRA…` on `host` (stdout and stderr piped), returned once
/// its socket is bound ([`wait_bound`]).
#[allow(dead_code)] // not every lab test file starts receivers
pub fn spawn_recv(lab: &Lab, host: &str, port: u16, extra: &[&str]) -> std::process::Child {
    let port_arg = port.to_string();
    let mut args = vec![
        env!("CARGO_BIN_EXE_rtlan"),
        "recv",
        "--port",
        &port_arg,
        "--json",
    ];
    args.extend_from_slice(extra);
    let child = lab
        .exec(host, &args)
        .expect("host")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("rtlan recv starts");
    wait_bound(lab, host, port);
    child
}

/// Waits until a UDP socket on `host` is bound to `port` (an `rtlan recv` just spawned). A
/// datagram sent before that draws an ICMP port unreachable; the sender's connected socket then
/// fails a later send, and the receiver counts that sequence number as lost.
#[allow(dead_code)] // not every lab test file starts receivers
pub fn wait_bound(lab: &Lab, host: &str, port: u16) {
    rtlan_lab::tools::wait_listening(
        lab.netns(host).expect("host"),
        "rtlan recv",
        rtlan_lab::tools::Proto::Udp,
        port,
        Duration::from_secs(5),
    )
    .expect("the receiver binds its port");
}

/// Asks an rtlan router's control socket.
pub fn ctl_router(lab: &Lab, router: &str, cmd: &str) -> serde_json::Value {
    let socket = lab.router_socket(router).expect("an rtlan router");
    rtlan_linux::ctl::request(&socket, cmd).expect("control request")
}

/// Asks a switch's control socket.
pub fn ctl(lab: &Lab, switch: &str, cmd: &str) -> serde_json::Value {
    let socket = lab.switch_socket(switch).expect("an rtlan switch");
    rtlan_linux::ctl::request(&socket, cmd).expect("control request")
}

/// The learning table of `switch` as (mac, port index) pairs.
pub fn fdb(lab: &Lab, switch: &str) -> Vec<(String, u64)> {
    ctl(lab, switch, "fdb")
        .as_array()
        .expect("fdb is an array")
        .iter()
        .map(|e| {
            (
                e["mac"].as_str().expect("mac").to_string(),
                e["port"].as_u64().expect("port"),
            )
        })
        .collect()
}

/// The port index of `switch` whose link leads to `peer`.
pub fn port_towards(lab: &Lab, switch: &str, peer: &str) -> u64 {
    let ports = lab.switch_ports(switch).expect("switch ports");
    ports
        .iter()
        .position(|(_, p)| p == peer)
        .unwrap_or_else(|| panic!("{switch} has no port towards {peer}")) as u64
}

/// MAC of a host's eth0 as text.
pub fn host_mac(lab: &Lab, host: &str) -> String {
    rtlan_wire::ethernet::Address(lab.mac(host, "eth0").expect("mac")).to_string()
}

/// Pings `to` from `from` and asserts every reply came back.
pub fn ping_ok(lab: &Lab, from: &str, to: &str) {
    let ip = lab.host_ip(to).expect("host ip");
    let r = rtlan_lab::tools::ping(
        lab.netns(from).expect("ns"),
        ip,
        3,
        Duration::from_millis(200),
    )
    .expect("ping runs");
    assert_eq!(r.received, 3, "ping {from} -> {to} ({ip}): {r:?}");
}

/// Runs a command in a node and returns its stdout; panics with stderr on failure.
pub fn exec_ok(lab: &Lab, node: &str, args: &[&str]) -> String {
    let out = lab
        .exec(node, args)
        .expect("node exists")
        .output()
        .expect("command runs");
    assert!(
        out.status.success(),
        "{args:?} in {node} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Tears the lab down and asserts that none of its namespaces is left.
pub fn down_clean(lab: Lab) {
    let name = lab.name().to_string();
    lab.down().expect("lab down");
    let left = rtlan_lab::lab_namespaces(&name).expect("ip netns list");
    assert!(left.is_empty(), "namespaces left behind: {left:?}");
}

/// A host's IP.
pub fn ip(lab: &Lab, host: &str) -> Ipv4Addr {
    lab.host_ip(host).expect("host ip")
}

/// The host daemon `rtlan rtcd` running in a host's namespace, stopped (SIGTERM) and reaped on
/// drop.
pub struct Daemon {
    /// The daemon process (`ip netns exec` execs it, so this is the daemon's own PID).
    pub child: std::process::Child,
    /// Its client socket.
    pub socket: std::path::PathBuf,
}

impl Daemon {
    /// Starts `rtlan rtcd` on `host`'s `eth0` with a socket in the lab's state directory and
    /// the daemon's defaults but for its link's emulated rate (a veth would report 10 Gbit/s):
    /// none of the lab's other lines, so no keys — a host that does not know its link's key.
    pub fn start(lab: &Lab, host: &str) -> Daemon {
        let socket = lab.state_dir().join(format!("rtcd-{host}.sock"));
        let config = lab.state_dir().join(format!("rtcd-{host}.toml"));
        let rate = lab
            .topology()
            .interfaces(host)
            .first()
            .and_then(|(_, _, rate)| *rate)
            .map(|bps| format!("link_rate = \"{bps}bit\"\n"))
            .unwrap_or_default();
        let text = format!(
            "interface = \"eth0\"\nsocket = \"{}\"\n{rate}",
            socket.display()
        );
        std::fs::write(&config, text).expect("write rtcd config");
        let args = [
            "--config".to_string(),
            config.to_str().expect("utf-8 state dir").to_string(),
        ];
        Daemon::spawn(lab, host, &args, socket)
    }

    /// Starts `rtlan rtcd --config FILE` in `host`, the file holding `interface`, `socket` and the
    /// TOML lines in `extra` (e.g. `reclaim_period = "1s"`).
    pub fn start_with_config(lab: &Lab, host: &str, extra: &str) -> Daemon {
        let socket = lab.state_dir().join(format!("rtcd-{host}.sock"));
        let config = lab.state_dir().join(format!("rtcd-{host}.toml"));
        let text = format!(
            "interface = \"eth0\"\nsocket = \"{}\"\n{}{extra}\n",
            socket.display(),
            lab.rtcd_config_lines(host)
        );
        std::fs::write(&config, text).expect("write rtcd config");
        let args = [
            "--config".to_string(),
            config.to_str().expect("utf-8 state dir").to_string(),
        ];
        Daemon::spawn(lab, host, &args, socket)
    }

    fn spawn(lab: &Lab, host: &str, args: &[String], socket: std::path::PathBuf) -> Daemon {
        let mut all = vec![env!("CARGO_BIN_EXE_rtlan").to_string(), "rtcd".to_string()];
        all.extend_from_slice(args);
        let child = lab
            .exec(host, &all)
            .expect("host exists")
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("rtcd starts");
        let daemon = Daemon { child, socket };
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while !daemon.socket.exists() {
            assert!(
                std::time::Instant::now() < deadline,
                "rtcd did not create its socket"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        daemon
    }

    /// A registered client of this daemon (registered with the test's own PID).
    pub fn client(&self) -> rtlan_linux::rtcd::RtcdClient {
        let mut client =
            rtlan_linux::rtcd::RtcdClient::connect(&self.socket).expect("connect to rtcd");
        client.register(std::process::id()).expect("register");
        client
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        signal(self.child.id(), libc::SIGTERM);
        let _ = self.child.wait();
    }
}

/// Sends `sig` to process `pid` (one of ours); ignores a process that is already gone.
pub fn signal(pid: u32, sig: libc::c_int) {
    if let Ok(pid) = libc::pid_t::try_from(pid) {
        // SAFETY: kill(2) has no memory-safety preconditions; `pid` is a child of this test.
        unsafe { libc::kill(pid, sig) };
    }
}

/// Open parameters for a 1 Mbit/s connection to `dst_ip`:`dst_port`.
pub fn open_params(dst_ip: Ipv4Addr, dst_port: u16) -> rtlan_linux::rtcd::OpenParams {
    rtlan_linux::rtcd::OpenParams {
        dst_ip,
        dst_port,
        src_port: 0,
        rate_bps: 1_000_000,
        max_burst: 3000,
        max_packet: 1500,
        delay_us: None,
    }
}

/// The real-time connection table of `switch` (`{"op":"connections"}`).
pub fn connections(lab: &Lab, switch: &str) -> Vec<serde_json::Value> {
    ctl(lab, switch, "connections")
        .as_array()
        .expect("connections is an array")
        .clone()
}

/// The proxy-prefix neighbour entries of `host` (`ip neigh show` lines under 198.19/16).
pub fn proxy_neighbours(lab: &Lab, host: &str) -> Vec<String> {
    exec_ok(lab, host, &["ip", "neigh", "show"])
        .lines()
        .filter(|l| l.starts_with("198.19."))
        .map(str::to_string)
        .collect()
}

/// Whether `host` has a route for the proxy prefix 198.19.0.0/16.
pub fn has_proxy_route(lab: &Lab, host: &str) -> bool {
    exec_ok(lab, host, &["ip", "route", "show"])
        .lines()
        .any(|l| l.starts_with("198.19.0.0/16"))
}

/// Polls `done` every 50 ms until it holds or `timeout` passes; returns whether it held and
/// how long it took.
pub fn wait_until(timeout: Duration, done: impl FnMut() -> bool) -> (bool, Duration) {
    poll_every(Duration::from_millis(50), timeout, done)
}

/// Polls `done` every `interval` until it holds or `timeout` passes; returns whether it held
/// and how long it took.
pub fn poll_every(
    interval: Duration,
    timeout: Duration,
    mut done: impl FnMut() -> bool,
) -> (bool, Duration) {
    let start = std::time::Instant::now();
    loop {
        if done() {
            return (true, start.elapsed());
        }
        if start.elapsed() > timeout {
            return (false, start.elapsed());
        }
        std::thread::sleep(interval);
    }
}

/// A socat UDP receiver on `host`:`port` that copies datagrams to its stdout; it exits after
/// 15 s at the latest. Give it ~0.5 s to bind before sending.
pub fn udp_receiver(lab: &Lab, host: &str, port: u16) -> std::process::Child {
    let address = format!("UDP-RECV:{port}");
    lab.exec(
        host,
        &["timeout", "15", "socat", "-u", address.as_str(), "STDOUT"],
    )
    .expect("host exists")
    .stdout(std::process::Stdio::piped())
    .spawn()
    .expect("socat starts")
}

/// Stops a process started with piped stdout (SIGTERM) and returns what it printed.
pub fn stop_output(child: std::process::Child) -> String {
    signal(child.id(), libc::SIGTERM);
    let out = child.wait_with_output().expect("wait for child");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Sends one datagram per message from `from` to `ip`:`port` with socat (source port
/// `src_port`, 0 = any), 100 ms apart.
pub fn send_udp(lab: &Lab, from: &str, ip: Ipv4Addr, port: u16, src_port: u16, messages: &[&str]) {
    let source = if src_port == 0 {
        String::new()
    } else {
        format!(",sourceport={src_port},reuseaddr")
    };
    for m in messages {
        let script = format!("echo {m} | socat -u STDIN UDP-SENDTO:{ip}:{port}{source}; sleep 0.1");
        exec_ok(lab, from, &["sh", "-c", &script]);
    }
}

/// The VmRSS of process `pid` in KiB.
pub fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("process alive");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS line")
}

/// Per-output-port real-time use of `switch` from `stats` (`booked_bps`, `ids_in_use`, ...).
pub fn rt_ports(lab: &Lab, switch: &str) -> Vec<serde_json::Value> {
    let stats = ctl(lab, switch, "stats");
    stats["rt_ports"]
        .as_array()
        .unwrap_or_else(|| panic!("no rt_ports in {switch}'s stats: {stats}"))
        .clone()
}

/// Asserts that `switch` holds no real-time state: no connection, nothing booked, no id in use.
pub fn assert_switch_idle(lab: &Lab, switch: &str) {
    let table = connections(lab, switch);
    assert!(
        table.is_empty(),
        "{switch} still has connections: {table:?}"
    );
    for port in rt_ports(lab, switch) {
        assert_eq!(port["booked_bps"], 0, "{switch} port still booked: {port}");
        assert_eq!(port["ids_in_use"], 0, "{switch} port still has ids: {port}");
    }
}

/// Signalling counter `name` of `switch` (`stats.switch.signal.<name>`).
pub fn signal_counter(lab: &Lab, switch: &str, name: &str) -> u64 {
    let stats = ctl(lab, switch, "stats");
    stats["switch"]["signal"][name]
        .as_u64()
        .unwrap_or_else(|| panic!("no signal counter {name} in {stats}"))
}

/// Real-time data-path counter `name` of `switch` (`stats.switch.rt.<name>`).
pub fn rt_counter(lab: &Lab, switch: &str, name: &str) -> u64 {
    let stats = ctl(lab, switch, "stats");
    stats["switch"]["rt"][name]
        .as_u64()
        .unwrap_or_else(|| panic!("no rt counter {name} in {stats}"))
}

/// An application that speaks the daemon's JSON-lines protocol itself: socat in `host`, connected
/// to the daemon's socket, fed from a pipe the test keeps open; each line it prints arrives on
/// `lines` with the time it was read.
pub struct SocatApp {
    pub child: std::process::Child,
    pub stdin: std::process::ChildStdin,
    pub lines: std::sync::mpsc::Receiver<(std::time::Instant, String)>,
}

impl SocatApp {
    /// Starts socat in `host` towards `daemon`'s socket.
    pub fn start(lab: &Lab, host: &str, daemon: &Daemon) -> SocatApp {
        use std::io::BufRead;
        let socket = format!("UNIX-CONNECT:{}", daemon.socket.display());
        let mut child = lab
            .exec(host, &["socat", "-", socket.as_str()])
            .expect("host exists")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("socat starts");
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
            {
                if tx.send((std::time::Instant::now(), line)).is_err() {
                    break;
                }
            }
        });
        SocatApp {
            child,
            stdin,
            lines,
        }
    }

    /// Registers and opens a 1 Mbit/s connection (request ids 1 and 2) to `dst_ip`:7000;
    /// returns the open's reply line.
    pub fn register_and_open(&mut self, dst_ip: Ipv4Addr) -> serde_json::Value {
        use std::io::Write;
        writeln!(
            self.stdin,
            "{{\"op\":\"register\",\"id\":1}}\n{{\"op\":\"open\",\"id\":2,\"dst_ip\":\"{dst_ip}\",\
             \"dst_port\":7000,\"src_port\":0,\"rate_bps\":1000000,\"max_burst\":3000,\
             \"max_packet\":1500}}"
        )
        .expect("write to socat");
        loop {
            let (_, v) = self.next_json(Duration::from_secs(10));
            if v["id"] == 2 {
                return v;
            }
        }
    }

    /// The next line, parsed, with the time it was read; panics after `timeout`.
    pub fn next_json(&self, timeout: Duration) -> (std::time::Instant, serde_json::Value) {
        let (at, line) = self
            .lines
            .recv_timeout(timeout)
            .expect("the daemon answers in time");
        (at, serde_json::from_str(&line).expect("a JSON line"))
    }
}

/// Four hosts a–d on one switch `s1` of `kind` (`rtlan`, `linux-bridge`), 100 Mbit/s links, as
/// topology text.
pub fn star4(kind: &str) -> String {
    let hosts = ["a", "b", "c", "d"];
    let mut text = String::new();
    for h in hosts {
        text.push_str(&format!("[[host]]\nname = \"{h}\"\n"));
    }
    text.push_str(&format!("[[switch]]\nname = \"s1\"\nkind = \"{kind}\"\n"));
    for h in hosts {
        text.push_str(&format!(
            "[[link]]\nends = [\"{h}\", \"s1\"]\nrate = \"100mbit\"\n"
        ));
    }
    text
}

/// Runs `rtlan demo --json --no-plot --seconds 4` with `extra` arguments (the demo takes the lab
/// serial lock itself and removes its labs on every path) and returns its JSON document and
/// exit code.
pub fn run_demo(extra: &[&str]) -> (serde_json::Value, Option<i32>) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rtlan"))
        .args(["demo", "--json", "--no-plot", "--seconds", "4"])
        .args(extra)
        .output()
        .expect("run rtlan demo");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "demo printed no JSON ({e}): {stdout}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    eprintln!("{doc:#}");
    (doc, out.status.code())
}

/// The `rtlan demo --json` document's a → d flow of the run on `switch` (`rtlan` or
/// The demo's guarantee criterion on the rtlan run of `doc` (`lab_guarantee.rs` has the
/// reasoning): the reserved a → d stream within 3 % of 50 Mbit/s and not one datagram lost;
/// `what` names the variant in messages.
pub fn assert_demo_guarantee(doc: &serde_json::Value, what: &str) {
    let rt = demo_reserved_flow(doc, "rtlan");
    let delivered = rt["delivered_bps"].as_f64().expect("delivered_bps");
    assert_eq!(rt["reserved_bps"].as_f64(), Some(50e6), "{rt}");
    assert!(
        (delivered - 50e6).abs() <= 0.03 * 50e6,
        "{what}: reserved flow delivered {delivered} bit/s, not within 3 % of 50 Mbit/s: {rt}"
    );
    assert_eq!(
        rt["loss_pct"].as_f64(),
        Some(0.0),
        "{what}: reserved flow lost datagrams: {rt}"
    );
    // The switch's own account: reserved frames left by d's port only, none dropped, while
    // the floods' excess was dropped there.
    let run = doc["runs"]
        .as_array()
        .and_then(|r| r.iter().find(|r| r["switch"] == "rtlan"))
        .expect("an rtlan run");
    let ports = run["ports"].as_array().expect("the switch's port counters");
    let carrying: Vec<_> = ports
        .iter()
        .filter(|p| p["rt_frames_sent"].as_u64().unwrap_or(0) > 0)
        .collect();
    assert_eq!(
        carrying.len(),
        1,
        "{what}: reserved frames left by d's port only: {ports:?}"
    );
    let d = carrying[0];
    assert_eq!(d["rt_frames_dropped"], 0, "{what}: {d}");
    assert!(
        d["nrt_frames_dropped"].as_u64().unwrap_or(0) > 0,
        "{what}: the floods' excess was not dropped at d's port: {d}"
    );
}

/// The `rtlan demo --json` document's a → d flow of the run on `switch` (`rtlan` or
/// `linux-bridge`).
pub fn demo_reserved_flow<'a>(doc: &'a serde_json::Value, switch: &str) -> &'a serde_json::Value {
    let run = doc["runs"]
        .as_array()
        .expect("runs is an array")
        .iter()
        .find(|r| r["switch"] == switch)
        .unwrap_or_else(|| panic!("no {switch} run in {doc}"));
    run["flows"]
        .as_array()
        .expect("flows is an array")
        .iter()
        .find(|f| f["name"].as_str().is_some_and(|n| n.starts_with("a→d")))
        .unwrap_or_else(|| panic!("no a→d flow in {run}"))
}

/// `topologies/default.toml` (hosts a, b, c on switch s1, 100 Mbit/s links) works as a switched
/// LAN: ARP and ping between every pair, s1's learning table and ARP cache (EtheReal §3.4), UDP
/// and TCP payloads intact, TCP at ≥ 90 % of the line and not above it (100 × 1448/1538 =
/// 94.1 Mbit/s of goodput is the most a paced 100 Mbit/s line carries), no malformed frames.
pub fn assert_serves_default_topology(lab: &Lab) {
    use rtlan_lab::tools::{self, Iperf3Opts, Iperf3Server};
    const LINE_RATE: f64 = 100e6;
    // ARP + ping between every pair.
    for (from, to) in [("a", "b"), ("a", "c"), ("b", "c"), ("c", "a")] {
        ping_ok(lab, from, to);
    }

    // Learning: every host's MAC sits on the port that leads to it.
    let table = fdb(lab, "s1");
    for host in ["a", "b", "c"] {
        let mac = host_mac(lab, host);
        let want = port_towards(lab, "s1", host);
        let got = table.iter().find(|(m, _)| *m == mac).map(|(_, p)| *p);
        assert_eq!(got, Some(want), "fdb entry of {host} ({mac}) in {table:?}");
    }
    // The switch's ARP cache learnt the hosts from their ARP traffic (EtheReal §3.4).
    let arp = ctl(lab, "s1", "arp");
    for host in ["a", "b", "c"] {
        let ip = ip(lab, host).to_string();
        assert!(
            arp.as_array()
                .unwrap()
                .iter()
                .any(|e| e["ip"] == ip.as_str()),
            "switch ARP cache lacks {host} ({ip}): {arp}"
        );
    }

    // UDP and TCP end to end, payload intact.
    let ns = |n| lab.netns(n).unwrap();
    assert!(tools::socat_tcp_transfer(ns("c"), ns("a"), ip(lab, "c"), 5001, 1 << 20).unwrap());
    assert!(tools::socat_udp_transfer(ns("a"), ns("b"), ip(lab, "a"), 5002, 64 << 10).unwrap());

    // iperf3 TCP over a 100 Mbit/s path reaches >= 90% of the rate and not more than the line.
    let _server = Iperf3Server::start(ns("c"), 5201).unwrap();
    let r = tools::iperf3_tcp(ns("a"), ip(lab, "c"), 5201, 5, &Iperf3Opts::default()).unwrap();
    assert!(
        r.receiver_bps >= 0.90 * LINE_RATE && r.receiver_bps <= LINE_RATE,
        "TCP a->c {:.1} Mbit/s, want 90..100",
        r.receiver_bps / 1e6
    );

    let stats = ctl(lab, "s1", "stats");
    assert_eq!(stats["switch"]["drop_malformed"], 0, "{stats}");
}

/// Starts switch `name` again with the command line the lab started it with
/// (`ip netns exec NS rtlan switch --config STATE/NAME.toml`, output appended to its log) and
/// waits until its control socket answers. Returns the child so the test can end it by PID.
pub fn restart_switch(lab: &Lab, name: &str) -> std::process::Child {
    let socket = lab.switch_socket(name).expect("socket");
    let log = lab.switch_log(name).expect("switch log");
    restart_daemon(lab, name, "switch", (&socket, &log))
}

/// [`restart_switch`] for router `name` (`rtlan router --config STATE/NAME.toml`).
pub fn restart_router(lab: &Lab, name: &str) -> std::process::Child {
    let socket = lab.router_socket(name).expect("socket");
    let log = lab.router_log(name).expect("router log");
    restart_daemon(lab, name, "router", (&socket, &log))
}

/// Starts `rtlan COMMAND --config STATE/NAME.toml` in node `name`'s namespace, output appended
/// to `log`, and waits until `socket` answers.
fn restart_daemon(
    lab: &Lab,
    name: &str,
    command: &str,
    (socket, log): (&std::path::Path, &std::path::Path),
) -> std::process::Child {
    let config = lab.state_dir().join(format!("{name}.toml"));
    let log = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(log)
        .expect("open the log");
    let child = std::process::Command::new("ip")
        .args(["netns", "exec", lab.netns(name).expect("ns")])
        .arg(env!("CARGO_BIN_EXE_rtlan"))
        .arg(command)
        .arg("--config")
        .arg(&config)
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone().expect("dup log"))
        .stderr(log)
        .spawn()
        .expect("the daemon starts again");
    let (up, took) = poll_until(Duration::from_secs(10), || {
        std::os::unix::net::UnixStream::connect(socket).is_ok()
    });
    assert!(up, "restarted {name} did not answer within {took:?}");
    child
}

/// Kills switch `name` with SIGKILL, as a crash would, and waits until it is dead (a zombie of
/// the lab's until `down` reaps it).
pub fn crash_switch(lab: &Lab, name: &str) {
    crash(name, lab.switch_pid(name).expect("switch pid"));
}

/// [`crash_switch`] for router `name`.
pub fn crash_router(lab: &Lab, name: &str) {
    crash(name, lab.router_pid(name).expect("router pid"));
}

/// Kills `name`'s process `pid` with SIGKILL and waits until it is dead.
fn crash(name: &str, pid: u32) {
    signal(pid, libc::SIGKILL);
    let (gone, _) = wait_until(Duration::from_secs(5), || {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| s.contains(") Z "))
            .unwrap_or(true)
    });
    assert!(gone, "{name} ({pid}) did not die");
}

/// Polls `done` every 2 ms (finer than `wait_until`'s 50 ms, so the printed times mean
/// something) until it holds or `timeout` passes; returns whether it held and how long it took.
pub fn poll_until(timeout: Duration, done: impl FnMut() -> bool) -> (bool, Duration) {
    poll_every(Duration::from_millis(2), timeout, done)
}
