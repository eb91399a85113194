//! The installation check of docs/deploy.md ("Checking an installation"): `scripts/install` into a
//! staging root, every unit verified by `systemd-analyze`, and every daemon started with its
//! installed unit's `ExecStart` — as systemd would start it, with `NOTIFY_SOCKET` pointing at a
//! datagram socket of this test — to see readiness, reload and stop notifications and their
//! effects. PID 1 here is not systemd, so the units themselves cannot be started; this runs the
//! same command lines.

mod common;

use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A staging root with rtlan installed (`PREFIX=/usr`), removed on drop.
struct Staged {
    root: PathBuf,
}

impl Drop for Staged {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs `scripts/install` into `root` with the binary under test.
fn install(root: &Path) -> String {
    let out = Command::new(repo().join("scripts/install"))
        .env("DESTDIR", root)
        .env("PREFIX", "/usr")
        .env("RTLAN_BIN", env!("CARGO_BIN_EXE_rtlan"))
        .output()
        .expect("scripts/install runs");
    assert!(
        out.status.success(),
        "install failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn staged(tag: &str) -> Staged {
    let root = std::env::temp_dir().join(format!("rtlan-deploy-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    install(&root);
    Staged { root }
}

const UNITS: [&str; 4] = [
    "rtlan-switch@.service",
    "rtlan-rtcd.service",
    "rtlan-bwm.service",
    "rtlan-router@.service",
];

/// The installed unit's `ExecStart` as an argument vector, instance `%i` = `instance`, every
/// installed path (`/usr/bin`, `/etc/rtlan`) mapped into the staging root.
fn exec_start(root: &Path, unit: &str, instance: &str) -> Vec<String> {
    let text = std::fs::read_to_string(root.join("etc/systemd/system").join(unit))
        .expect("installed unit");
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .expect("an ExecStart line");
    line.replace("%i", instance)
        .split_whitespace()
        .map(|arg| {
            if arg.starts_with("/usr/") || arg.starts_with("/etc/rtlan") {
                root.join(&arg[1..]).display().to_string()
            } else {
                arg.to_string()
            }
        })
        .collect()
}

#[test]
fn the_install_is_complete_idempotent_and_every_unit_verifies() {
    let s = staged("units");
    let root = &s.root;
    for path in [
        "usr/bin/rtlan",
        "etc/rtlan/switch.toml",
        "etc/rtlan/rtcd.toml",
        "etc/rtlan/bwm.toml",
        "etc/rtlan/network.toml",
        "etc/rtlan/router.toml",
        "usr/share/man/man1/rtlan.1",
        "usr/share/man/man1/rtlan-rtcd.1",
        "usr/share/bash-completion/completions/rtlan",
        "usr/share/zsh/site-functions/_rtlan",
        "usr/share/fish/vendor_completions.d/rtlan.fish",
        "usr/share/doc/rtlan/deploy.md",
        "usr/lib/sysusers.d/rtlan.conf",
    ] {
        assert!(root.join(path).is_file(), "{path} installed");
    }
    // Units name the installed binary and configuration.
    for unit in UNITS {
        let argv = exec_start(root, unit, "s1");
        assert_eq!(
            argv[0],
            root.join("usr/bin/rtlan").display().to_string(),
            "{unit}"
        );
        let text =
            std::fs::read_to_string(root.join("etc/systemd/system").join(unit)).expect("unit");
        assert!(
            text.contains("Type=notify") && text.contains("ExecReload="),
            "{unit}"
        );
    }
    // Again: an operator's edited file is kept.
    let rtcd = root.join("etc/rtlan/rtcd.toml");
    std::fs::write(&rtcd, "interface = \"eth9\"\n").expect("edit");
    let second = install(root);
    assert!(second.contains("keeping"), "{second}");
    assert_eq!(
        std::fs::read_to_string(&rtcd).expect("kept"),
        "interface = \"eth9\"\n"
    );

    // systemd-analyze verify: syntax, unknown keys and directives, executables. It checks that
    // ExecStart's binary exists, so the copies it reads name the staged one.
    if Command::new("systemd-analyze")
        .arg("--version")
        .output()
        .is_err()
    {
        panic!("systemd-analyze is missing: scripts/install-deps installs systemd");
    }
    let check = root.join("verify");
    std::fs::create_dir_all(&check).expect("dir");
    for unit in UNITS {
        let text = std::fs::read_to_string(root.join("etc/systemd/system").join(unit))
            .expect("unit")
            .replace(
                "/usr/bin/rtlan",
                &root.join("usr/bin/rtlan").display().to_string(),
            );
        let copy = check.join(unit);
        std::fs::write(&copy, text).expect("copy");
        let out = Command::new("systemd-analyze")
            .args(["verify", "--man=no", "--generators=no"])
            .arg(&copy)
            .output()
            .expect("systemd-analyze runs");
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            out.status.success() && said.trim().is_empty(),
            "{unit}: {said}"
        );
    }
    // And it is a real check: a unit with an unknown key does not pass.
    let bad = check.join("bad.service");
    std::fs::write(
        &bad,
        "[Service]\nType=notify\nExecStrat=/bin/true\nExecStart=/bin/true\n",
    )
    .expect("write");
    let out = Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .arg(&bad)
        .output()
        .expect("runs");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("Unknown key"),
        "systemd-analyze verify sees an unknown key"
    );

    // The examples load (the policy's group `rtlan` is made by the operator: `root` here).
    rtlan_linux::switchd::Config::load(&root.join("etc/rtlan/switch.toml"))
        .expect("switch example");
    rtlan_linux::routerd::RouterDaemonConfig::from_file(&root.join("etc/rtlan/router.toml"))
        .expect("router example");
    let text = std::fs::read_to_string(repo().join("dist/etc/rtlan/rtcd.toml")).expect("example");
    assert!(text.contains("group = \"rtlan\""));
    rtlan_linux::rtcd::Config::from_toml_str(
        &text.replace("group = \"rtlan\"", "group = \"root\""),
    )
    .expect("rtcd example");
}

/// The service manager's side: a datagram socket the daemon's notifications arrive on.
struct Notify {
    socket: UnixDatagram,
    path: PathBuf,
}

impl Notify {
    fn new(dir: &Path) -> Notify {
        let path = dir.join("notify.sock");
        let _ = std::fs::remove_file(&path);
        let socket = UnixDatagram::bind(&path).expect("bind notify socket");
        socket
            .set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        Notify { socket, path }
    }

    /// The next notification (panics after 10 s).
    fn next(&self) -> String {
        let mut buf = [0u8; 4096];
        let n = self
            .socket
            .recv(&mut buf)
            .expect("a notification within 10 s");
        String::from_utf8_lossy(&buf[..n]).into_owned()
    }

    fn expect(&self, prefix: &str) -> String {
        let got = self.next();
        assert!(got.starts_with(prefix), "expected {prefix:?}, got {got:?}");
        got
    }
}

/// A daemon started as its unit says, in namespace `netns` if given; SIGKILLed on drop if
/// still running.
struct Service {
    child: Child,
    log: PathBuf,
}

impl Service {
    fn start(argv: &[String], netns: Option<&str>, notify: &Notify, log: PathBuf) -> Service {
        let mut cmd = match netns {
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns]).args(argv);
                c
            }
            None => {
                let mut c = Command::new(&argv[0]);
                c.args(&argv[1..]);
                c
            }
        };
        let child = cmd
            .env("NOTIFY_SOCKET", &notify.path)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("log file"))
            .spawn()
            .expect("daemon starts");
        Service { child, log }
    }

    fn signal(&self, sig: libc::c_int) {
        common::signal(self.child.id(), sig);
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// SIGTERM, `STOPPING=1`, and a clean exit.
    fn stop(mut self, notify: &Notify) {
        self.signal(libc::SIGTERM);
        notify.expect("STOPPING=1");
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                assert!(status.success(), "{status}: {}", self.log());
                return;
            }
            assert!(Instant::now() < deadline, "did not stop: {}", self.log());
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGHUP: `RELOADING=1` (+ `MONOTONIC_USEC`) then `READY=1`; the process keeps running.
    fn reload(&mut self, notify: &Notify) {
        self.signal(libc::SIGHUP);
        let reloading = notify.expect("RELOADING=1");
        assert!(reloading.contains("MONOTONIC_USEC="), "{reloading}");
        notify.expect("READY=1");
        assert!(
            self.child.try_wait().expect("wait").is_none(),
            "still running"
        );
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `GET /metrics` at `addr` (in `netns` with curl if given): the page's samples as
/// `(name{labels}, value)` lines.
fn scrape(addr: &str, netns: Option<&str>) -> Vec<(String, f64)> {
    let text = match netns {
        Some(ns) => {
            let out = Command::new("ip")
                .args([
                    "netns",
                    "exec",
                    ns,
                    "curl",
                    "-sf",
                    &format!("http://{addr}/metrics"),
                ])
                .output()
                .expect("curl runs");
            assert!(out.status.success(), "scrape {addr}: {out:?}");
            String::from_utf8_lossy(&out.stdout).into_owned()
        }
        None => {
            use std::io::{Read, Write};
            let mut s = std::net::TcpStream::connect(addr).expect("metrics endpoint");
            s.write_all(b"GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n")
                .expect("request");
            let mut page = String::new();
            s.read_to_string(&mut page).expect("page");
            assert!(
                page.starts_with("HTTP/1.0 200") || page.starts_with("HTTP/1.1 200"),
                "{page}"
            );
            page.split_once("\r\n\r\n")
                .map(|(_, b)| b.to_string())
                .unwrap_or_default()
        }
    };
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| {
            let (name, value) = l.rsplit_once(' ')?;
            Some((name.to_string(), value.parse().ok()?))
        })
        .collect()
}

/// The value of the sample `name` (exactly, labels included) on a scraped page.
fn sample(page: &[(String, f64)], name: &str) -> Option<f64> {
    page.iter().find(|(n, _)| n == name).map(|(_, v)| *v)
}

/// Waits until `log` says `text` (reloads are logged after READY is sent).
fn log_says(service: &Service, text: &str) {
    let (seen, _) = common::wait_until(Duration::from_secs(5), || service.log().contains(text));
    assert!(seen, "log lacks {text:?}:\n{}", service.log());
}

/// The bandwidth manager as `rtlan-bwm.service` starts it: ready only once it serves, a reload
/// that reads its tokens again and names the rest as needing a restart, a clean stop — and a
/// second manager on the same state refused.
#[test]
fn the_bandwidth_manager_runs_as_its_unit_says() {
    let s = staged("bwm");
    let root = &s.root;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let conf = root.join("etc/rtlan/bwm.toml");
    let text = std::fs::read_to_string(&conf)
        .expect("example")
        .replace("127.0.0.1:7470", &format!("127.0.0.1:{port}"));
    std::fs::write(&conf, &text).expect("edit listen");
    let metrics_port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let metrics = format!("127.0.0.1:{metrics_port}");
    let text = format!("metrics_listen = \"{metrics}\"\n{text}");
    let tokens = root.join("etc/rtlan/tokens.toml");
    std::fs::write(
        &tokens,
        "[[token]]\nprincipal = \"ops\"\nrole = \"operator\"\ntoken = \"tok-1\"\n",
    )
    .expect("tokens");
    std::fs::write(
        &conf,
        text.replace("# tokens = \"tokens.toml\"", "tokens = \"tokens.toml\""),
    )
    .expect("enable tokens");
    let state = root.join("var/lib/rtlan/bwm-state.json");
    let argv: Vec<String> = exec_start(root, "rtlan-bwm.service", "")
        .into_iter()
        .map(|a| {
            a.replace(
                "/var/lib/rtlan",
                &root.join("var/lib/rtlan").display().to_string(),
            )
        })
        .collect();
    assert!(
        argv.iter().any(|a| a == &state.display().to_string()),
        "{argv:?}"
    );
    let notify = Notify::new(root);
    let mut bwm = Service::start(&argv, None, &notify, root.join("bwm.log"));
    let ready = notify.expect("READY=1");
    assert!(ready.contains("STATUS="), "{ready}");
    // Ready means serving: a request is answered at once.
    let ask = |token: &str| {
        rtlan_linux::ctl::request_json_tcp(
            &format!("127.0.0.1:{port}"),
            serde_json::json!({"op": "list", "token": token}),
            Duration::from_secs(5),
        )
    };
    assert!(ask("tok-1").is_ok(), "tok-1 accepted");
    assert!(state.exists(), "state written once serving");
    // Its metrics: the requests it answered and what it refused, by reason.
    assert!(ask("tok-x").is_err(), "an unknown token is refused");
    let page = scrape(&metrics, None);
    assert_eq!(
        sample(&page, "rtlan_bwm_requests_total{}"),
        Some(2.0),
        "{page:?}"
    );
    assert_eq!(
        sample(
            &page,
            "rtlan_bwm_refusals_total{reason=\"unauthenticated\"}"
        ),
        Some(1.0),
        "{page:?}"
    );

    // A second manager on the same state: refused, naming the first.
    let second = Command::new(&argv[0])
        .args(&argv[1..])
        .args(["--listen", "127.0.0.1:0"])
        .output()
        .expect("runs");
    assert!(!second.status.success());
    let said = String::from_utf8_lossy(&second.stderr);
    assert!(
        said.contains(&format!("pid {}", bwm.child.id())),
        "second manager: {said}"
    );

    // Reload: the tokens file is read again (tok-1 gone, tok-2 in); the lease needs a restart.
    std::fs::write(
        &tokens,
        "[[token]]\nprincipal = \"ops\"\nrole = \"operator\"\ntoken = \"tok-2\"\n",
    )
    .expect("tokens");
    let text = std::fs::read_to_string(&conf).expect("conf");
    std::fs::write(&conf, text.replace("lease = \"30s\"", "lease = \"60s\"")).expect("edit");
    bwm.reload(&notify);
    assert!(ask("tok-2").is_ok(), "tok-2 accepted after the reload");
    assert!(ask("tok-1").is_err(), "tok-1 refused after the reload");
    log_says(&bwm, "`lease`: not applied while running, restart to apply");
    // A broken file: an error, the manager keeps running as it was.
    std::fs::write(&conf, "listen = [").expect("break");
    bwm.reload(&notify);
    log_says(&bwm, "reload: configuration kept as it runs");
    assert!(ask("tok-2").is_ok());
    bwm.stop(&notify);
}

/// A network namespace for one test, removed on drop.
struct Ns(String);

impl Ns {
    fn new(tag: &str) -> Ns {
        let name = format!("rtl-dep{tag}{}", std::process::id());
        let _ = Command::new("ip").args(["netns", "del", &name]).output();
        let ns = Ns(name);
        ns.exec(&["ip", "netns", "add", &ns.0], false);
        ns.exec(&["ip", "link", "set", "lo", "up"], true);
        ns
    }

    fn exec(&self, argv: &[&str], inside: bool) {
        let mut cmd = if inside {
            let mut c = Command::new("ip");
            c.args(["netns", "exec", &self.0]).args(argv);
            c
        } else {
            let mut c = Command::new(argv[0]);
            c.args(&argv[1..]);
            c
        };
        let out = cmd.output().expect("runs");
        assert!(
            out.status.success(),
            "{argv:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Two veth pairs `p0`–`q0` and `p1`–`q1`, up; `p0`/`p1` with `addrs` if given.
    fn ports(&self, addrs: Option<[&str; 2]>) {
        for i in 0..2 {
            let (p, q) = (format!("p{i}"), format!("q{i}"));
            self.exec(
                &["ip", "link", "add", &p, "type", "veth", "peer", "name", &q],
                true,
            );
            self.exec(&["ip", "link", "set", &p, "up"], true);
            self.exec(&["ip", "link", "set", &q, "up"], true);
            if let Some(addrs) = addrs {
                self.exec(&["ip", "addr", "add", addrs[i], "dev", &p], true);
            }
        }
    }
}

impl Drop for Ns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).output();
    }
}

/// The switch, router and host daemon as their units start them, each in a namespace of its
/// own: ready once their control sockets answer, a reload that names what changed, a clean
/// stop.
#[test]
fn the_switch_router_and_host_daemon_run_as_their_units_say() {
    if !common::root_or_skip("the_switch_router_and_host_daemon_run_as_their_units_say") {
        return;
    }
    let _serial = rtlan_lab::serial_lock().expect("lab lock");
    let s = staged("daemons");
    let root = &s.root;
    let etc = root.join("etc/rtlan");
    let notify = Notify::new(root);
    let answers = |socket: &Path| rtlan_linux::ctl::request(socket, "ping").is_ok();

    // The switch: rtlan-switch@s1 reads switch-s1.toml.
    let ns = Ns::new("s");
    ns.ports(None);
    let socket = root.join("s1.sock");
    let text = std::fs::read_to_string(etc.join("switch.toml"))
        .expect("example")
        .replace("enp1s0", "p0")
        .replace("enp2s0", "p1")
        .replace("/run/rtlan/s1.sock", &socket.display().to_string());
    std::fs::write(
        etc.join("switch-s1.toml"),
        format!("metrics_listen = \"127.0.0.1:9478\"\n{text}"),
    )
    .expect("config");
    let argv = exec_start(root, "rtlan-switch@.service", "s1");
    let mut switch = Service::start(&argv, Some(&ns.0), &notify, root.join("switch.log"));
    assert!(notify.expect("READY=1").contains("switch s1 forwarding"));
    assert!(answers(&socket), "the switch answers once ready");
    // Its metrics endpoint serves the ports from the data-plane loop: the HELLO it sent on
    // each port at start is there.
    let page = scrape("127.0.0.1:9478", Some(&ns.0));
    assert!(
        sample(&page, "rtlan_port_rx_frames_total{port=\"p0\"}").is_some(),
        "{page:?}"
    );
    assert!(
        sample(&page, "rtlan_port_tx_frames_total{port=\"p1\"}").is_some_and(|n| n >= 1.0),
        "{page:?}"
    );
    std::fs::write(
        etc.join("switch-s1.toml"),
        text.replace("cycle_time = \"10ms\"", "cycle_time = \"5ms\""),
    )
    .expect("edit");
    switch.reload(&notify);
    log_says(
        &switch,
        "`cycle_time`: not applied while running, restart to apply",
    );
    assert!(answers(&socket), "still serving after the reload");
    assert!(
        !switch.log().contains("queue in the NIC"),
        "1 Gbit/s fits a veth's 10"
    );
    switch.stop(&notify);
    // A port paced above its NIC's speed (a veth says 10 Gbit/s) is named at start.
    std::fs::write(etc.join("switch-s2.toml"), text.replace("1gbit", "20gbit")).expect("config");
    let argv = exec_start(root, "rtlan-switch@.service", "s2");
    let fast = Service::start(&argv, Some(&ns.0), &notify, root.join("switch2.log"));
    notify.expect("READY=1");
    assert!(
        fast.log()
            .contains("port p0 is paced at 20gbit but its NIC runs at 10gbit"),
        "{}",
        fast.log()
    );
    fast.stop(&notify);
    drop(ns);

    // The router: rtlan-router@r1 reads router-r1.toml; its ports need addresses.
    let ns = Ns::new("r");
    ns.ports(Some(["198.18.1.1/24", "198.18.2.1/24"]));
    let socket = root.join("r1.sock");
    let text = std::fs::read_to_string(etc.join("router.toml"))
        .expect("example")
        .replace("enp1s0", "p0")
        .replace("enp2s0", "p1")
        .replace("/run/rtlan/r1.sock", &socket.display().to_string());
    std::fs::write(etc.join("router-r1.toml"), &text).expect("config");
    let argv = exec_start(root, "rtlan-router@.service", "r1");
    let mut router = Service::start(&argv, Some(&ns.0), &notify, root.join("router.log"));
    assert!(notify.expect("READY=1").contains("router r1 forwarding"));
    assert!(answers(&socket), "the router answers once ready");
    std::fs::write(
        etc.join("router-r1.toml"),
        text.replace("name = \"r1\"", "name = \"r9\""),
    )
    .expect("edit");
    router.reload(&notify);
    log_says(
        &router,
        "`name`: not applied while running, restart to apply",
    );
    router.stop(&notify);
    drop(ns);

    // The host daemon: rtlan-rtcd reads rtcd.toml; a reload applies a new policy at once.
    let ns = Ns::new("h");
    ns.ports(Some(["198.18.0.1/16", "198.18.9.1/16"]));
    let socket = root.join("rtcd.sock");
    let text = std::fs::read_to_string(etc.join("rtcd.toml"))
        .expect("example")
        .replace("interface = \"eth0\"", "interface = \"p0\"")
        .replace("/run/rtlan/rtcd.sock", &socket.display().to_string())
        .replace("group = \"rtlan\"", "group = \"root\"")
        .replace("# link_rate = \"1gbit\"", "link_rate = \"100mbit\"");
    let text = format!("metrics_listen = \"127.0.0.1:9479\"\n{text}");
    std::fs::write(etc.join("rtcd.toml"), &text).expect("config");
    let argv = exec_start(root, "rtlan-rtcd.service", "");
    let mut rtcd = Service::start(&argv, Some(&ns.0), &notify, root.join("rtcd.log"));
    notify.expect("READY=1");
    assert!(
        rtlan_linux::rtcd::RtcdClient::connect(&socket).is_ok_and(|mut c| c.list().is_ok()),
        "rtcd answers once ready"
    );
    // Its metrics: nothing open, the real-time share of 100 Mbit/s, a refusal by its reason.
    let mut client = rtlan_linux::rtcd::RtcdClient::connect(&socket).expect("connect");
    client.register(std::process::id()).expect("register");
    let over = rtlan_linux::rtcd::OpenParams {
        rate_bps: 70_000_000,
        ..common::open_params(std::net::Ipv4Addr::new(198, 18, 0, 2), 5004)
    };
    assert!(client.open(&over).is_err(), "over the host's share");
    let page = scrape("127.0.0.1:9479", Some(&ns.0));
    assert_eq!(
        sample(&page, "rtlan_rtcd_connections{phase=\"open\"}"),
        Some(0.0),
        "{page:?}"
    );
    assert_eq!(
        sample(&page, "rtlan_rtcd_realtime_capacity_bits_per_second{}"),
        Some(60_000_000.0),
        "{page:?}"
    );
    assert_eq!(
        sample(
            &page,
            "rtlan_rtcd_refusals_total{reason=\"local_admission\"}"
        ),
        Some(1.0),
        "{page:?}"
    );
    drop(client);
    std::fs::write(
        etc.join("rtcd.toml"),
        format!(
            "realtime_cap_percent = 50\n{}",
            text.replace("max_rate = \"50mbit\"", "max_rate = \"10mbit\"")
        ),
    )
    .expect("edit");
    rtcd.reload(&notify);
    log_says(&rtcd, "reservation policy applied to later opens");
    log_says(&rtcd, "`realtime_cap_percent`: not applied while running");
    rtcd.stop(&notify);
    drop(ns);
}
