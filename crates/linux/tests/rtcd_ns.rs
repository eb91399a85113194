//! Lab test of the host daemon shell (EtheReal §2.2, §3.2, §3.4), root only: a namespace with a
//! veth pair `eth0` (the host, 198.18.0.1/16) — `p0` (a fake first switch answering SETUP with
//! SETUP_OK and TEARDOWN with TEARDOWN_ACK), the daemon on a thread inside the namespace, and a
//! client on the test thread.

mod common;

use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{can_run_lab, Netns};
use rtlan_linux::rtcd::{ClientError, Config, ControlLink, OpenParams, RtcdClient};
use rtlan_wire::control::{Message, Packet, Repr};

/// Answers SETUP and TEARDOWN on `p0` until `stop` is set.
fn fake_switch(stop: &AtomicBool) {
    let link = ControlLink::open("p0").expect("open p0");
    let mut buf = [0u8; 2048];
    while !stop.load(Ordering::Relaxed) {
        let Some(rx) = link.recv(&mut buf).expect("recv") else {
            std::thread::sleep(Duration::from_millis(5));
            continue;
        };
        let Ok(packet) = Packet::new_checked(&buf[..rx.len]) else {
            continue;
        };
        let Ok(repr) = Repr::parse(&packet) else {
            continue;
        };
        let answer = match repr.message {
            Message::Setup(s) => Message::SetupOk {
                connection_id: s.connection_id,
                hops: 1,
            },
            Message::Teardown { connection_id } => Message::TeardownAck { connection_id },
            _ => continue,
        };
        let reply = Repr::new(repr.hop, repr.request_id, answer);
        let mut out = vec![0u8; reply.buffer_len()];
        reply
            .emit(&mut Packet::new_unchecked(&mut out[..]))
            .expect("emit");
        link.send(rx.src, &out).expect("send");
    }
}

/// An `open` to 198.18.0.2:`dst_port` at `rate_bps` (bucket two full frames).
fn params(dst_port: u16, rate_bps: u64) -> OpenParams {
    OpenParams {
        dst_ip: Ipv4Addr::new(198, 18, 0, 2),
        dst_port,
        src_port: 0,
        rate_bps,
        max_burst: 3028,
        max_packet: 1514,
        delay_us: None,
    }
}

fn stdout(ns: &Netns, argv: &[&str]) -> String {
    String::from_utf8_lossy(&ns.exec(argv).stdout).into_owned()
}

fn wait_for_socket(path: &std::path::Path) {
    let start = Instant::now();
    while !path.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "daemon did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Sets the flag and joins the threads when dropped, so a failing assertion still stops them
/// before the namespace guard (declared earlier) removes the namespace.
struct Stopper {
    flag: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Drop for Stopper {
    fn drop(&mut self) {
        self.flag.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// A namespace `name` with the veth pair `eth0` (198.18.0.1/16) — `p0`, both up.
fn host_ns(name: &str) -> Netns {
    let ns = Netns::new(name);
    ns.exec(&[
        "ip", "link", "add", "eth0", "type", "veth", "peer", "name", "p0",
    ]);
    ns.exec(&["ip", "link", "set", "eth0", "up"]);
    ns.exec(&["ip", "link", "set", "p0", "up"]);
    ns.exec(&["ip", "addr", "add", "198.18.0.1/16", "dev", "eth0"]);
    ns
}

/// The fake first switch on `p0` and the daemon with `config` on `eth0`, both on threads inside
/// `ns`; returns once the daemon's socket exists, with the stopper of the threads (drop it
/// before the namespace).
fn start_daemon(ns: &Netns, config: Config) -> Stopper {
    let socket = config.socket.clone();
    let stop = Arc::new(AtomicBool::new(false));
    let mut stopper = Stopper {
        flag: stop.clone(),
        threads: Vec::new(),
    };
    let s = stop.clone();
    stopper.threads.push(ns.spawn(move || fake_switch(&s)));
    let s = stop.clone();
    stopper.threads.push(ns.spawn(move || {
        let report = rtlan_linux::rtcd::run(&config, &s).expect("rtcd runs");
        assert_eq!(report.netlink_errors, 0, "{report:?}");
    }));
    wait_for_socket(&socket);
    stopper
}

/// [`host_ns`] with [`start_daemon`] on a default configuration (socket in the temporary
/// directory); returns the namespace, the socket and the stopper.
fn host_with_daemon(name: &str) -> (Netns, std::path::PathBuf, Stopper) {
    let ns = host_ns(name);
    let socket = std::env::temp_dir().join(format!("{name}.sock"));
    let stopper = start_daemon(&ns, Config::new("eth0", &socket));
    (ns, socket, stopper)
}

#[test]
fn open_installs_and_close_removes() {
    if !can_run_lab("rtcd open_installs_and_close_removes") {
        return;
    }
    let (ns, socket, stopper) = host_with_daemon(&format!("rtl-rtcd{}", std::process::id()));
    let mut client = RtcdClient::connect(&socket).expect("connect");
    // Not registered yet: listing (which changes nothing) is answered, closing is refused, and
    // the connection stays up.
    assert!(client.list().expect("unregistered list").is_empty());
    let err = client.close(1).expect_err("unregistered close");
    assert!(
        matches!(&err, ClientError::Refused { code, .. } if code == "not_registered"),
        "{err}"
    );
    assert_eq!(
        client.register(std::process::id()).expect("register"),
        std::process::id()
    );
    // A malformed line gets an error and the same connection keeps working.
    let bad = client.raw("{this is not json").expect("error reply");
    assert_eq!(bad["ok"], serde_json::json!(false), "{bad}");
    assert_eq!(bad["id"], serde_json::Value::Null, "{bad}");
    assert_eq!(
        bad["error"]["code"],
        serde_json::json!("bad_request"),
        "{bad}"
    );

    let opened = client.open(&params(5004, 1_000_000)).expect("open");
    let octets = opened.proxy_ip.octets();
    assert_eq!(octets[..3], [198, 19, 0], "{opened:?}");
    let neigh = stdout(&ns, &["ip", "neigh", "show", "dev", "eth0"]);
    let want = format!(
        "{} lladdr {} PERMANENT",
        opened.proxy_ip,
        opened.proxy_mac.expect("per-hop admission has a proxy MAC")
    );
    assert!(neigh.contains(&want), "want `{want}` in:\n{neigh}");
    let routes = stdout(&ns, &["ip", "route", "show", "dev", "eth0"]);
    assert!(
        routes
            .lines()
            .any(|l| l.starts_with("198.19.0.0/16 ") && l.contains("scope link")),
        "{routes}"
    );

    let listed = client.list().expect("list");
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].conn, opened.conn);
    assert_eq!(listed[0].phase, "open");

    client.close(opened.conn).expect("close");
    let neigh = stdout(&ns, &["ip", "neigh", "show", "dev", "eth0"]);
    assert!(!neigh.contains(&opened.proxy_ip.to_string()), "{neigh}");
    let routes = stdout(&ns, &["ip", "route", "show", "dev", "eth0"]);
    assert!(!routes.contains("198.19.0.0/16"), "{routes}");
    // Closing again: unknown connection, typed error.
    let err = client.close(opened.conn).expect_err("second close");
    assert!(
        matches!(&err, ClientError::Refused { code, .. } if code == "unknown_connection"),
        "{err}"
    );

    // An open connection left at shutdown is removed by the daemon.
    let again = client
        .open(&OpenParams {
            dst_ip: Ipv4Addr::new(198, 18, 0, 3),
            dst_port: 5005,
            src_port: 0,
            rate_bps: 1_000_000,
            max_burst: 1514,
            max_packet: 1514,
            delay_us: None,
        })
        .expect("second open");
    drop(stopper);
    let neigh = stdout(&ns, &["ip", "neigh", "show", "dev", "eth0"]);
    assert!(!neigh.contains(&again.proxy_ip.to_string()), "{neigh}");
    let routes = stdout(&ns, &["ip", "route", "show", "dev", "eth0"]);
    assert!(!routes.contains("198.19.0.0/16"), "{routes}");
    assert!(!socket.exists(), "socket file removed at shutdown");
}

/// What crossed `p0` (the first switch's side of the host's link), in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seen {
    /// A UDP datagram to `to`.
    Data,
    /// A TEARDOWN.
    Teardown,
}

/// Records data frames to `proxy` and TEARDOWNs seen on `p0` until `stop` is set.
fn recorder(proxy: Ipv4Addr, stop: &AtomicBool, seen: &std::sync::Mutex<Vec<Seen>>) {
    use rtlan_linux::packet::{PacketPort, PortOptions};
    use rtlan_wire::ethernet::{EtherType, Frame};
    let mut port = PacketPort::open("p0", &PortOptions::default()).expect("packet socket on p0");
    while !stop.load(Ordering::Relaxed) {
        let got = port.receive(64, |frame| {
            let Ok(eth) = Frame::new_checked(frame) else {
                return;
            };
            let kind = match eth.ethertype() {
                EtherType::Ipv4 => rtlan_wire::ipv4::Packet::new_checked(eth.payload())
                    .ok()
                    .filter(|ip| ip.dst_addr() == proxy)
                    .map(|_| Seen::Data),
                _ => Packet::new_checked(eth.payload())
                    .and_then(|p| Repr::parse(&p))
                    .ok()
                    .filter(|r| matches!(r.message, Message::Teardown { .. }))
                    .map(|_| Seen::Teardown),
            };
            if let Some(kind) = kind {
                seen.lock().expect("not poisoned").push(kind);
            }
        });
        if got == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// A kernel-shaped connection whose application closes right after a burst: the daemon lets
/// the connection's HTB class send what it still holds before it deletes the class and sends
/// the TEARDOWN, so the whole burst leaves the host ahead of the TEARDOWN (deleting the class at
/// once dropped all but the bucket's worth).
#[test]
fn a_kernel_shaped_close_sends_the_queued_burst_before_the_teardown() {
    if !can_run_lab("rtcd a_kernel_shaped_close_sends_the_queued_burst_before_the_teardown") {
        return;
    }
    let (ns, socket, mut stopper) = host_with_daemon(&format!("rtl-rtkd{}", std::process::id()));
    let stop = stopper.flag.clone();
    let mut client = RtcdClient::connect(&socket).expect("connect");
    client.register(std::process::id()).expect("register");
    let opened = client
        .open_shaped(
            &params(5004, 1_000_000),
            rtlan_core::rtcd::DaemonShaping::Kernel,
        )
        .expect("open");
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (s, record) = (stop.clone(), seen.clone());
    let proxy = opened.proxy_ip;
    stopper
        .threads
        .push(ns.spawn(move || recorder(proxy, &s, &record)));
    std::thread::sleep(Duration::from_millis(100));

    // 20 datagrams of 1,000 bytes at once: 3 fit the class's bucket, the rest wait in its
    // queue (17 × 1,066 bytes at 1 Mbit/s: about 145 ms).
    const BURST: usize = 20;
    ns.spawn(move || {
        let sock = std::net::UdpSocket::bind("0.0.0.0:0").expect("udp socket");
        for _ in 0..BURST {
            sock.send_to(&[0x5a; 1000], (proxy, 5004)).expect("send");
        }
    })
    .join()
    .expect("sender");
    client.close(opened.conn).expect("close");
    std::thread::sleep(Duration::from_millis(100));
    drop(stopper);

    let seen = seen.lock().expect("not poisoned").clone();
    let teardown = seen
        .iter()
        .position(|s| *s == Seen::Teardown)
        .unwrap_or_else(|| panic!("no TEARDOWN seen: {seen:?}"));
    let before = seen[..teardown]
        .iter()
        .filter(|s| **s == Seen::Data)
        .count();
    assert_eq!(before, BURST, "data frames before the TEARDOWN: {seen:?}");
}

/// The egress tree of `eth0` as `tc -j` prints it: qdiscs, classes, and the filters of every
/// qdisc and class (without statistics, so equal trees print equal).
fn egress_tree(ns: &Netns) -> String {
    let mut tree = stdout(ns, &["tc", "-j", "qdisc", "show", "dev", "eth0"]);
    // The size table shows only in the text form.
    tree += &stdout(ns, &["tc", "-d", "qdisc", "show", "dev", "eth0", "root"])
        .lines()
        .filter(|l| l.contains("overhead"))
        .collect::<String>();
    tree += &stdout(ns, &["tc", "-j", "class", "show", "dev", "eth0"]);
    for parent in ["1:", "1:1", "1:10", "1:20", "10:"] {
        tree += &stdout(
            ns,
            &[
                "tc", "-j", "filter", "show", "dev", "eth0", "parent", parent,
            ],
        );
    }
    // Counters tc prints even without -s.
    tree.split(',')
        .filter(|field| !field.contains("\"direct_packets_stat\"") && !field.contains("\"refcnt\""))
        .collect::<Vec<_>>()
        .join(",")
}

/// A host whose operator set up an HTB tree of its own (with a size table, a child tbf and
/// bfifo, and a u32 filter) gets exactly that tree back when the daemon stops — and when a
/// daemon that was killed with its tree in place is started again.
#[test]
fn the_hosts_own_egress_tree_comes_back_exactly() {
    if !can_run_lab("rtcd the_hosts_own_egress_tree_comes_back_exactly") {
        return;
    }
    // The daemon's warnings (a tree not restored) in the test's output.
    let _ = tracing_subscriber::fmt().with_test_writer().try_init();
    let name = format!("rtl-rttc{}", std::process::id());
    let ns = host_ns(&name);
    let own: [&[&str]; 6] = [
        &[
            "qdisc", "add", "dev", "eth0", "root", "handle", "1:", "stab", "overhead", "24", "mpu",
            "84", "mtu", "2047", "tsize", "2048", "htb", "default", "20",
        ],
        &[
            "class", "add", "dev", "eth0", "parent", "1:", "classid", "1:1", "htb", "rate",
            "50mbit", "ceil", "80mbit",
        ],
        &[
            "class", "add", "dev", "eth0", "parent", "1:1", "classid", "1:10", "htb", "rate",
            "10mbit", "ceil", "50mbit", "prio", "1",
        ],
        &[
            "class", "add", "dev", "eth0", "parent", "1:1", "classid", "1:20", "htb", "rate",
            "5mbit",
        ],
        &[
            "qdisc", "add", "dev", "eth0", "parent", "1:10", "handle", "10:", "bfifo", "limit",
            "30000",
        ],
        &[
            "qdisc", "add", "dev", "eth0", "parent", "1:20", "handle", "20:", "tbf", "rate",
            "2mbit", "burst", "5kb", "latency", "50ms",
        ],
    ];
    for cmd in own {
        let mut argv = vec!["tc"];
        argv.extend_from_slice(cmd);
        ns.exec(&argv);
    }
    ns.exec(&[
        "tc", "filter", "add", "dev", "eth0", "parent", "1:", "protocol", "ip", "prio", "5", "u32",
        "match", "ip", "dport", "5004", "0xffff", "flowid", "1:10",
    ]);
    let before = egress_tree(&ns);
    assert!(
        before.contains("\"bfifo\"") && before.contains("\"138c\"") && before.contains("mpu 84"),
        "{before}"
    );

    let socket = std::env::temp_dir().join(format!("{name}.sock"));
    let snapshot = std::env::temp_dir().join(format!("{name}.sock.eth0.tc.json"));
    let _ = std::fs::remove_file(&snapshot);
    let run_daemon = |ns: &Netns| {
        let mut config = Config::new("eth0", &socket);
        config.link_rate_bps = Some(100_000_000);
        start_daemon(ns, config)
    };

    // A kernel-shaped connection puts the daemon's tree in place of the host's.
    let stopper = run_daemon(&ns);
    let mut client = RtcdClient::connect(&socket).expect("connect");
    client.register(std::process::id()).expect("register");
    client
        .open_shaped(
            &params(5004, 1_000_000),
            rtlan_core::rtcd::DaemonShaping::Kernel,
        )
        .expect("open");
    let during = egress_tree(&ns);
    assert!(
        during.contains("\"0xffff\"") && !during.contains("bfifo"),
        "{during}"
    );
    assert!(snapshot.exists(), "the snapshot is kept beside the socket");
    let saved = std::fs::read(&snapshot).expect("snapshot");
    drop(client);
    drop(stopper);
    assert_eq!(
        egress_tree(&ns),
        before,
        "restored exactly after a clean stop"
    );
    assert!(!snapshot.exists(), "the snapshot goes once restored");

    // A daemon killed with its tree in place: its tree and snapshot stay behind. The next
    // start puts the host's tree back at once.
    ns.exec(&["tc", "qdisc", "del", "dev", "eth0", "root"]);
    ns.exec(&[
        "tc", "qdisc", "add", "dev", "eth0", "root", "handle", "1:", "htb", "default", "ffff",
    ]);
    std::fs::write(&snapshot, &saved).expect("leave the snapshot behind");
    let stopper = run_daemon(&ns);
    assert_eq!(egress_tree(&ns), before, "restored at the next start");
    drop(stopper);
    assert_eq!(egress_tree(&ns), before, "and left alone at its stop");
    let _ = std::fs::remove_file(&snapshot);
}

/// Without `link_rate` the daemon books and shapes the rate the interface reports (a veth says
/// 10 Gbit/s), not a fixed default; an interface that reports none is an error naming the fix.
#[test]
fn the_link_rate_is_read_from_the_interface() {
    if !can_run_lab("rtcd the_link_rate_is_read_from_the_interface") {
        return;
    }
    let ns = host_ns(&format!("rtl-rtls{}", std::process::id()));
    // A bridge without ports is Ethernet but knows no speed.
    ns.exec(&["ip", "link", "add", "b0", "type", "bridge"]);
    ns.exec(&["ip", "link", "set", "b0", "up"]);
    ns.exec(&["ip", "addr", "add", "198.18.0.2/16", "dev", "b0"]);
    let (veth, bridge) = ns
        .spawn(|| {
            let sock = std::net::UdpSocket::bind("127.0.0.1:0").expect("socket");
            let fd = std::os::fd::AsRawFd::as_raw_fd(&sock);
            (
                rtlan_linux::rtcd::link_speed(fd, "eth0"),
                rtlan_linux::rtcd::link_speed(fd, "b0"),
            )
        })
        .join()
        .expect("thread");
    assert_eq!(veth, Ok(10_000_000_000));
    assert!(bridge.is_err(), "{bridge:?}");
    // The daemon on the bridge: refuses to guess.
    let socket = std::env::temp_dir().join(format!("{}.sock", ns.name));
    let config = Config::new("b0", &socket);
    let stop = Arc::new(AtomicBool::new(false));
    let error = ns
        .spawn(move || rtlan_linux::rtcd::run(&config, &stop).map(|_| ()))
        .join()
        .expect("thread")
        .expect_err("no speed on b0");
    assert!(error.to_string().contains("set link_rate"), "{error}");
}

/// The reservation policy against real peers: a socket open to everyone (`socket_mode`), a
/// rule letting user nobody (65534) reserve at most 1 Mbit/s per connection. nobody's process —
/// its identity from the kernel (`SO_PEERCRED`), not from anything it says — is refused 2 Mbit/s
/// with the `policy` code and granted 1 Mbit/s; root is never limited.
#[test]
fn the_reservation_policy_judges_the_peer_the_kernel_names() {
    if !can_run_lab("rtcd the_reservation_policy_judges_the_peer_the_kernel_names") {
        return;
    }
    use rtlan_core::rtcd::policy::{Rule, Who};
    let name = format!("rtl-rtpo{}", std::process::id());
    let ns = host_ns(&name);
    let socket = std::env::temp_dir().join(format!("{name}.sock"));
    let mut config = Config::new("eth0", &socket);
    config.link_rate_bps = Some(100_000_000);
    config.socket_mode = Some(0o666);
    config.policy.rules = vec![Rule {
        max_rate_bps: Some(1_000_000),
        ..Rule::allow(Who::Uid(65534), "user nobody")
    }];
    let stopper = start_daemon(&ns, config);

    // nobody speaks the protocol from a process of its own.
    let script = r#"
import socket, sys, json
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
f = s.makefile("rw")
def ask(req):
    f.write(json.dumps(req) + "\n"); f.flush()
    print(f.readline().strip())
ask({"op": "register", "tag": 1})
for tag, rate in ((2, 2000000), (3, 1000000)):
    ask({"op": "open", "tag": tag, "dst_ip": "198.18.0.2", "dst_port": 5004, "src_port": 0,
         "rate_bps": rate, "max_burst": 3028, "max_packet": 1514})
"#;
    let out = std::process::Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "/usr/bin/python3",
            "-c",
        ])
        .arg(script)
        .arg(&socket)
        .output()
        .expect("setpriv runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect();
    assert_eq!(
        lines.len(),
        3,
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        lines[1]["error"]["code"],
        serde_json::json!("policy"),
        "{}",
        lines[1]
    );
    assert!(
        lines[1]["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("user nobody") && m.contains("1000000")),
        "{}",
        lines[1]
    );
    assert_eq!(lines[2]["ok"], serde_json::json!(true), "{}", lines[2]);

    // Root (this test) is not bound by nobody's rule, nor refused for having none.
    let mut client = RtcdClient::connect(&socket).expect("connect");
    client.register(std::process::id()).expect("register");
    client.open(&params(5005, 20_000_000)).expect("root opens");
    drop(client);
    drop(stopper);
}
