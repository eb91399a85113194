//! The network-wide reservation view (`rtlan reservations`, docs/netview.md), end to end.
//!
//! Per-hop admission: a chain3 lab (a on s1, b on s2, c on s3), three reservations on different
//! paths (a → c across s1 s2 s3, b → c across s2 s3, a → b across s1 s2; the first two share
//! the s2–s3 link, the first and third s1–s2) opened through real `rtlan rtcd`s. The view must
//! show each with its true hops (switch and ports, from the topology) and a bound equal to the
//! one the calculus gives for that path — recomputed here from each switch's configuration file
//! with `rtlan_core::switch::port_server` and `rtlan_calculus::servers`, not read back from the
//! switches — and equal to the bound the sender was told. Needs root; skips without it.
//!
//! Central admission: a running `rtlan bwm` with two admits; the view shows their paths and
//! bounds as the manager granted them.

mod common;

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::process::Command;
use std::time::Duration;

use common::*;
use rtlan_calculus::servers;
use rtlan_lab::Lab;
use rtlan_linux::rtcd::OpenParams;
use serde_json::Value;

/// A hop as the test names it: switch, input port, output port.
type Hop = (&'static str, u64, u64);

/// `rtlan reservations ARGS --json`, parsed; panics with its output when it fails.
fn view(args: &[&str]) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_rtlan"))
        .arg("reservations")
        .args(args)
        .arg("--json")
        .output()
        .expect("rtlan runs");
    assert!(
        out.status.success(),
        "rtlan reservations failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("--json is JSON")
}

/// The row of `view` from `src` to `dst`.
fn row<'a>(view: &'a Value, src: &str, dst: &str) -> &'a Value {
    view["reservations"]
        .as_array()
        .expect("reservations")
        .iter()
        .find(|r| r["src"] == src && r["dst"] == dst)
        .unwrap_or_else(|| panic!("no reservation {src} → {dst} in {view:#}"))
}

/// `(switch, in_port, out_port)` of every hop of a row.
fn hops(row: &Value) -> Vec<(String, u64, u64)> {
    row["path"]
        .as_array()
        .expect("path")
        .iter()
        .map(|h| {
            (
                h["node"].as_str().expect("node").to_string(),
                h["in_port"].as_u64().expect("in_port"),
                h["out_port"].as_u64().expect("out_port"),
            )
        })
        .collect()
}

/// The end-to-end bound (µs, rounded up) the calculus gives for `row`'s T-SPEC along its hops:
/// *b*/*r* + the host's delay + Σθ, θ of each output port from the switch's own configuration
/// file (docs/delay.md §2).
fn calculus_bound_us(lab: &Lab, row: &Value) -> u64 {
    let flow = servers::tspec_from_setup(
        row["rate_bps"].as_u64().expect("rate"),
        u32::try_from(row["burst_bytes"].as_u64().expect("burst")).expect("burst fits"),
        u16::try_from(row["max_packet"].as_u64().expect("packet")).expect("packet fits"),
    )
    .expect("a valid T-SPEC");
    let host_ns = u64::try_from(rtlan_core::rtcd::DEFAULT_HOST_DELAY.as_nanos()).expect("fits");
    let mut sum = host_ns;
    for (switch, _, out) in hops(row) {
        let text = std::fs::read_to_string(lab.state_dir().join(format!("{switch}.toml")))
            .expect("the lab's switch config");
        let file = rtlan_linux::switchd::Config::from_toml_str(&text).expect("config parses");
        let mac = rtlan_linux::switchd::parse_mac("02:00:00:00:00:01").expect("mac");
        let config = file.switch_config(&vec![mac; file.ports.len()]);
        let port = &config.ports[usize::try_from(out).expect("port")];
        let line_rate = port
            .medium
            .rate_bps()
            .unwrap_or(config.rt.unpaced_line_rate_bps);
        let server = rtlan_core::switch::port_server(
            &rtlan_core::switch::ServerParams::of(&config),
            line_rate,
        );
        sum += server.latency_ns(&flow).expect("θ");
    }
    servers::end_to_end_ns(&flow, sum)
        .expect("bound")
        .div_ceil(1000)
}

#[test]
fn per_hop_view_stitches_true_paths_with_the_calculus_bound() {
    if !root_or_skip("per_hop_view_stitches_true_paths_with_the_calculus_bound") {
        return;
    }
    let _serial = rtlan_lab::serial_lock().expect("lab lock");
    let lab = up_file("chain3.toml", "nv");
    std::thread::sleep(Duration::from_millis(1500)); // HELLOs
    let (da, db) = (Daemon::start(&lab, "a"), Daemon::start(&lab, "b"));
    let (b_ip, c_ip) = (ip(&lab, "b"), ip(&lab, "c"));
    let params = |dst: Ipv4Addr, port: u16, rate: u64| OpenParams {
        rate_bps: rate,
        ..open_params(dst, port)
    };
    let (mut ca, mut cb) = (da.client(), db.client());
    let mut told = BTreeMap::new();
    let ac = ca.open(&params(c_ip, 7000, 1_000_000)).expect("a → c");
    told.insert(("a", "c"), ac.delay_bound_us.expect("a bound"));
    let bc = cb.open(&params(c_ip, 7001, 2_000_000)).expect("b → c");
    told.insert(("b", "c"), bc.delay_bound_us.expect("a bound"));
    let ab = ca.open(&params(b_ip, 7002, 3_000_000)).expect("a → b");
    told.insert(("a", "b"), ab.delay_bound_us.expect("a bound"));

    let v = view(&["--lab", lab.name()]);
    assert_eq!(v["admission"], "per_hop");
    assert_eq!(
        v["reservations"].as_array().map(Vec::len),
        Some(3),
        "one row per reservation: {v:#}"
    );
    let want: [(&str, &str, Vec<Hop>); 3] = [
        ("a", "c", vec![("s1", 0, 1), ("s2", 0, 2), ("s3", 0, 1)]),
        ("b", "c", vec![("s2", 1, 2), ("s3", 0, 1)]),
        ("a", "b", vec![("s1", 0, 1), ("s2", 0, 1)]),
    ];
    for (src, dst, path) in want {
        let r = row(&v, src, dst);
        assert_eq!(r["complete"], true, "{r:#}");
        assert_eq!(r["problem"], Value::Null, "{r:#}");
        let got = hops(r);
        let got: Vec<(&str, u64, u64)> = got.iter().map(|(n, i, o)| (n.as_str(), *i, *o)).collect();
        assert_eq!(got, path, "{src} → {dst}: {r:#}");
        assert_eq!(r["ids"].as_array().map(Vec::len), Some(path.len()), "{r:#}");
        let bound = r["delay_bound_us"].as_u64().expect("a bound");
        assert_eq!(bound, calculus_bound_us(&lab, r), "{src} → {dst}: calculus");
        assert_eq!(
            bound,
            told[&(src, dst)],
            "{src} → {dst}: what the sender was told"
        );
        eprintln!("{src} → {dst}: bound {bound} µs over {path:?}");
    }

    // Outside a lab the same view comes from the topology file and each switch's socket.
    let topology =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../topologies/chain3.toml");
    let sockets: Vec<String> = ["s1", "s2", "s3"]
        .iter()
        .map(|sw| {
            let socket = lab.switch_socket(sw).expect("an rtlan switch");
            format!("{sw}={}", socket.display())
        })
        .collect();
    let mut args = vec!["--topology", topology.to_str().expect("utf-8")];
    for s in &sockets {
        args.extend(["--switch", s.as_str()]);
    }
    assert_eq!(view(&args), v, "--topology/--switch gives what --lab gives");

    // The text table names every reservation with its hops.
    let out = Command::new(env!("CARGO_BIN_EXE_rtlan"))
        .args(["reservations", "--lab", lab.name()])
        .output()
        .expect("rtlan runs");
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{table}");
    eprintln!("{table}");
    assert!(table.contains("s1:p0→p1 → s2:p0→p2 → s3:p0→p1"), "{table}");
    assert!(table.contains("s2:p1→p2 → s3:p0→p1"), "{table}");

    // `lab show` serves the switch's other items.
    let show = |what: &str| {
        Command::new(env!("CARGO_BIN_EXE_rtlan"))
            .args(["lab", "show", "--name", lab.name(), "s2", what])
            .output()
            .expect("rtlan runs")
    };
    let conns = show("connections");
    let text = String::from_utf8_lossy(&conns.stdout);
    assert!(conns.status.success(), "{text}");
    eprintln!("{text}");
    assert_eq!(
        text.lines().filter(|l| l.contains("198.18.")).count(),
        3,
        "s2 carries all three: {text}"
    );
    let lat = show("setup-latency");
    let text = String::from_utf8_lossy(&lat.stdout);
    eprintln!("{text}");
    let hit_or_miss: u64 = text
        .lines()
        .filter(|l| l.starts_with("hit") || l.starts_with("miss"))
        .map(|l| {
            l.split_whitespace()
                .nth(1)
                .and_then(|n| n.parse::<u64>().ok())
                .expect("a count")
        })
        .sum();
    assert!(hit_or_miss >= 3, "s2 handled three SETUPs: {text}");
    // Each sample runs from the SETUP's arrival to its frame leaving the port, so even one
    // answered at once takes a measurable time (a broken stamp reads 0.0 µs).
    for line in text
        .lines()
        .filter(|l| l.starts_with("hit") || l.starts_with("miss"))
    {
        let cols: Vec<&str> = line.split_whitespace().collect();
        if cols[1] != "0" {
            let min: f64 = cols[2].parse().expect("min µs");
            assert!(min > 0.0, "a zero setup latency: {text}");
        }
    }
    let ping = show("ping");
    assert_eq!(String::from_utf8_lossy(&ping.stdout).trim(), "pong");
    // No capture was started: the switch's answer is passed on as an error.
    let status = show("capture-status");
    assert!(!status.status.success());
    assert!(
        String::from_utf8_lossy(&status.stderr).contains("no capture has been started"),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    // A switch has no sessions; the error names what it has.
    let sessions = show("sessions");
    assert!(!sessions.status.success());
    let text = String::from_utf8_lossy(&sessions.stderr);
    assert!(
        text.contains("cannot show `sessions`") && text.contains("setup-latency"),
        "{text}"
    );

    drop((ca, cb, da, db));
    down_clean(lab);
}

#[test]
fn central_view_renders_the_managers_bookings() {
    let dir = std::env::temp_dir().join(format!("rtlan-netview-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let network = dir.join("net.toml");
    std::fs::write(
        &network,
        "[[switch]]\nname = \"s1\"\nt_mux = \"45us\"\nbuffer = \"128KiB\"\n\
         [[switch]]\nname = \"s2\"\nt_mux = \"45us\"\nbuffer = \"128KiB\"\n\
         [[link]]\nends = [\"A\", \"s1\"]\nrate = \"100mbit\"\n\
         [[link]]\nends = [\"s1\", \"s2\"]\nrate = \"100mbit\"\n\
         [[link]]\nends = [\"B\", \"s2\"]\nrate = \"100mbit\"\n\
         [[link]]\nends = [\"C\", \"s2\"]\nrate = \"100mbit\"\n",
    )
    .expect("network file");
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port");
    let bwm = Command::new(env!("CARGO_BIN_EXE_rtlan"))
        .args(["bwm", "--network"])
        .arg(&network)
        .arg("--state")
        .arg(dir.join("state.json"))
        .args(["--listen", &addr.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("rtlan bwm starts");
    struct Stop(std::process::Child);
    impl Drop for Stop {
        fn drop(&mut self) {
            signal(self.0.id(), libc::SIGTERM);
            let _ = self.0.wait();
        }
    }
    let mut bwm = Stop(bwm);
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(addr).is_err() {
        assert!(std::time::Instant::now() < deadline, "bwm never listened");
        assert!(bwm.0.try_wait().unwrap().is_none(), "bwm exited");
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut client =
        rtlan_linux::bwmd::BwmClient::connect(addr, Some(Duration::from_secs(5))).expect("connect");
    let spec = |src: &str, dst: &str, rate_bps: u64| rtlan_core::bwm::ConnSpec {
        src: src.into(),
        dst: dst.into(),
        rate_bps,
        max_packet: 1000,
        shaping_interval_us: None,
        burst_bytes: Some(2000),
        delay_us: None,
        host_delay_us: None,
    };
    let mut granted = Vec::new();
    for (src, dst, rate) in [("A", "C", 1_000_000), ("B", "C", 2_000_000)] {
        let resp = client.admit(spec(src, dst, rate)).expect("admit");
        match resp.reply {
            rtlan_core::bwm::Reply::Admitted {
                conn,
                path,
                delay_bound_us,
                ..
            } => {
                assert_eq!(
                    delay_bound_us_of(&mut client).get(&conn),
                    Some(&delay_bound_us),
                    "listed as granted"
                );
                granted.push((conn, src, dst, path));
            }
            other => panic!("refused: {other:?}"),
        }
    }
    let v = view(&["--bwm", &addr.to_string()]);
    assert_eq!(v["admission"], "manager");
    // The manager's current bounds (a later admission may raise an earlier booking's).
    let listed = delay_bound_us_of(&mut client);
    for (conn, src, dst, path) in granted {
        let r = row(&v, src, dst);
        assert_eq!(r["ids"], serde_json::json!([conn]), "{r:#}");
        let nodes: Vec<&str> = r["path"]
            .as_array()
            .expect("path")
            .iter()
            .map(|h| h["node"].as_str().expect("node"))
            .collect();
        assert_eq!(nodes, path[1..path.len() - 1], "{src} → {dst}: {r:#}");
        assert_eq!(
            r["delay_bound_us"].as_u64(),
            listed.get(&conn).copied(),
            "{r:#}"
        );
        assert_eq!(r["complete"], true);
    }
    drop(bwm);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The manager's current bound of every booking (its `list`), by id.
fn delay_bound_us_of(client: &mut rtlan_linux::bwmd::BwmClient) -> BTreeMap<u64, u64> {
    match client.list().expect("list").reply {
        rtlan_core::bwm::Reply::List { connections } => connections
            .into_iter()
            .filter_map(|c| Some((c.conn, c.delay_bound_us?)))
            .collect(),
        other => panic!("list refused: {other:?}"),
    }
}
