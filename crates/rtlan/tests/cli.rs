//! The `rtlan lab` command line as a user drives it: up, exec, show, up twice, down, bad files.

mod common;

use std::process::{Command, Output};

use common::{lab_name, root_or_skip};

fn rtlan(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rtlan"))
        .args(args)
        .output()
        .expect("rtlan runs")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn bad_topology_file_names_line_and_problem() {
    let dir = std::env::temp_dir().join(format!("rtlan-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("bad.toml");
    std::fs::write(
        &file,
        "[[host]]\nname = \"a\"\n[[switch]]\nname = \"s1\"\n[[link]]\nends = [\"a\", \"s9\"]\n",
    )
    .unwrap();
    let out = rtlan(&["lab", "up", file.to_str().unwrap(), "--name", "neverbuilt"]);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(!out.status.success());
    let msg = text(&out);
    assert!(msg.contains("bad.toml:6:"), "error must name line 6: {msg}");
    assert!(
        msg.contains("s9"),
        "error must name the unknown node: {msg}"
    );
}

#[test]
fn daemon_config_mistakes_name_file_line_and_column_and_start_nothing() {
    let dir = std::env::temp_dir().join(format!("rtlan-cli-daemons-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (daemon, body, at, needle) in [
        (
            "rether",
            "id = 1\nhost_port = \"h0\"\nsegment_port = \"s0\"\nrate = \"10mbit\"\ntrt = \"9s\"\n",
            ":5:7:",
            "trt",
        ),
        (
            "rether-bridge",
            "rate = \"10mbit\"\n[[port]]\nifname = \"p0\"\nid = 4\n[[port]]\nifname = \"p1\"\nid = 99999\n",
            ":7:6:",
            "id: 1 to",
        ),
        (
            "segment",
            "name = \"g\"\nrate = \"slow\"\n[[port]]\nifname = \"p0\"\n",
            ":2:8:",
            "rate",
        ),
        (
            "router",
            "name = \"r\"\n[[port]]\nifname = 7\n",
            ":3:10:",
            "string",
        ),
    ] {
        let file = dir.join(format!("{daemon}.toml"));
        std::fs::write(&file, body).unwrap();
        let out = rtlan(&[daemon, "--config", file.to_str().unwrap()]);
        let msg = text(&out);
        assert_eq!(out.status.code(), Some(1), "{daemon}: {msg}");
        assert!(
            msg.contains(&format!("{daemon}.toml{at}")),
            "{daemon}: {msg}"
        );
        assert!(msg.contains(needle), "{daemon}: {msg}");
    }
    // A file that cannot be read is named once, with the OS's reason.
    let missing = dir.join("missing.toml");
    let out = rtlan(&["rether", "--config", missing.to_str().unwrap()]);
    let msg = text(&out);
    assert_eq!(out.status.code(), Some(1), "{msg}");
    assert_eq!(msg.matches("missing.toml").count(), 1, "{msg}");
    assert!(msg.contains("No such file"), "{msg}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn lab_up_exec_show_down_from_the_command_line() {
    if !root_or_skip("lab_up_exec_show_down_from_the_command_line") {
        return;
    }
    let _serial = rtlan_lab::serial_lock().expect("lab lock");
    let name = lab_name("cli");
    let _ = rtlan_lab::down(&name);
    let topology = format!(
        "{}/../../topologies/default.toml",
        env!("CARGO_MANIFEST_DIR")
    );

    let up = rtlan(&["lab", "up", &topology, "--name", &name, "--json"]);
    // Whatever happens next, the lab goes away.
    struct Down(String);
    impl Drop for Down {
        fn drop(&mut self) {
            let _ = rtlan_lab::down(&self.0);
        }
    }
    let _down = Down(name.clone());
    assert!(up.status.success(), "lab up: {}", text(&up));
    let described: serde_json::Value = serde_json::from_slice(&up.stdout).expect("lab up --json");
    assert_eq!(
        described["hosts"].as_array().map(Vec::len),
        Some(3),
        "{described}"
    );

    let ping = rtlan(&[
        "lab",
        "exec",
        "--name",
        &name,
        "a",
        "--",
        "ping",
        "-c",
        "2",
        "-W",
        "2",
        "198.18.0.2",
    ]);
    assert!(
        ping.status.success(),
        "ping through the lab: {}",
        text(&ping)
    );
    // exec passes the command's exit status through.
    let fails = rtlan(&[
        "lab", "exec", "--name", &name, "b", "--", "sh", "-c", "exit 7",
    ]);
    assert_eq!(fails.status.code(), Some(7));
    // exec passes SIGTERM on to its command: a `sleep` stopped this way ends exec with 143.
    let mut sleeper = Command::new(env!("CARGO_BIN_EXE_rtlan"))
        .args(["lab", "exec", "--name", &name, "a", "--", "sleep", "30"])
        .spawn()
        .expect("lab exec starts");
    std::thread::sleep(std::time::Duration::from_millis(500));
    let started = std::time::Instant::now();
    // SAFETY: kill(2) on the child this test spawned and has not reaped.
    unsafe { libc::kill(sleeper.id() as libc::pid_t, libc::SIGTERM) };
    let status = sleeper.wait().expect("lab exec ends");
    assert_eq!(status.code(), Some(143), "{status:?}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "the signal reached sleep"
    );

    let fdb = rtlan(&["lab", "show", "--name", &name, "s1", "fdb", "--json"]);
    assert!(fdb.status.success(), "{}", text(&fdb));
    let entries: serde_json::Value = serde_json::from_slice(&fdb.stdout).unwrap();
    assert_eq!(
        entries.as_array().map(Vec::len),
        Some(2),
        "a and b learnt: {entries}"
    );

    let again = rtlan(&["lab", "up", &topology, "--name", &name]);
    assert!(!again.status.success());
    assert!(text(&again).contains("already exists"), "{}", text(&again));

    let down = rtlan(&["lab", "down", "--name", &name]);
    assert!(down.status.success(), "{}", text(&down));
    let list = Command::new("ip").args(["netns", "list"]).output().unwrap();
    let prefix = format!("rtl-{name}-");
    assert!(
        !String::from_utf8_lossy(&list.stdout)
            .lines()
            .any(|l| l.starts_with(&prefix)),
        "namespaces left after lab down"
    );
}

#[test]
fn demo_rejects_contradictory_or_out_of_range_arguments_before_building_anything() {
    // Parsed before any lab exists, so this needs no root: --plot and --no-plot contradict,
    // and the hidden --seconds must leave the demo enough traffic to measure (2..=60).
    let out = rtlan(&["demo", "--no-plot", "--plot", "x.png"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("cannot be used with"), "{}", text(&out));
    let out = rtlan(&["demo", "--seconds", "1"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("--seconds"), "{}", text(&out));
    let help = text(&rtlan(&["demo", "--help"]));
    assert!(help.contains("--plot") && help.contains("--json"), "{help}");
    assert!(
        !help.contains("--seconds"),
        "--seconds is for the tests only: {help}"
    );
}

/// Starts `rtlan bwm` on a network file and a state file holding a booking between hosts the
/// network does not have, waits until it listens, stops it with SIGTERM and returns its stderr.
/// The dropped booking is the warning (`docs/bwm.md` "State file": bookings that no longer fit
/// are dropped at start).
fn bwm_stderr_with_a_stale_booking(tag: &str, args: &[&str], rust_log: Option<&str>) -> String {
    use std::io::Read;
    let dir = std::env::temp_dir().join(format!("rtlan-cli-log-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let network = dir.join("net.toml");
    std::fs::write(
        &network,
        "[[switch]]\nname = \"s1\"\nt_mux = \"45us\"\nbuffer = \"128KiB\"\n\
         [[link]]\nends = [\"A\", \"s1\"]\nrate = \"100mbit\"\n\
         [[link]]\nends = [\"B\", \"s1\"]\nrate = \"100mbit\"\n",
    )
    .expect("network file");
    let state = dir.join("state.json");
    std::fs::write(
        &state,
        r#"{"version":1,"next_conn":8,"bookings":[{"conn":7,"spec":{"src":"X","dst":"Y","rate_bps":1000000,"max_packet":1514,"burst_bytes":3028}}]}"#,
    )
    .expect("state file");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rtlan"));
    cmd.args(args)
        .args(["bwm", "--network"])
        .arg(&network)
        .arg("--state")
        .arg(&state)
        .args(["--listen", "127.0.0.1:0"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .env_remove("RUST_LOG");
    if let Some(filter) = rust_log {
        cmd.env("RUST_LOG", filter);
    }
    let mut child = cmd.spawn().expect("rtlan bwm starts");
    // The state file is rewritten as a fresh snapshot once the bookings are restored, just
    // before the server listens: wait for the dropped booking to disappear from it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::fs::read_to_string(&state).is_ok_and(|s| s.contains("\"conn\":7"))
        && std::time::Instant::now() < deadline
        && child.try_wait().ok().flatten().is_none()
    {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    // SAFETY: plain kill(2) on our own child's PID, which has not been reaped yet.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    let status = child.wait().expect("rtlan bwm exits");
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        pipe.read_to_string(&mut stderr).expect("stderr");
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(status.success(), "rtlan bwm failed: {stderr}");
    stderr
}

#[test]
fn log_level_and_rust_log_decide_what_reaches_stderr() {
    // Default level: warnings reach stderr as plain lines (no ANSI escapes on a pipe).
    let default = bwm_stderr_with_a_stale_booking("default", &[], None);
    assert!(
        default.contains("WARN") && default.contains("persisted booking 7"),
        "the dropped booking is a warning by default: {default}"
    );
    assert!(
        !default.contains('\u{1b}'),
        "no colours on a pipe: {default:?}"
    );
    assert!(
        !default.contains("INFO"),
        "info is below the default level: {default}"
    );
    // --log-level error hides it.
    let quiet = bwm_stderr_with_a_stale_booking("quiet", &["--log-level", "error"], None);
    assert!(
        !quiet.contains("persisted booking"),
        "--log-level error hides warnings: {quiet}"
    );
    // RUST_LOG wins over --log-level.
    let env = bwm_stderr_with_a_stale_booking("env", &["--log-level", "error"], Some("warn"));
    assert!(
        env.contains("persisted booking 7"),
        "RUST_LOG=warn wins over --log-level error: {env}"
    );
}

#[test]
fn a_refused_privilege_is_said_once_with_a_hint() {
    if !root_or_skip("a_refused_privilege_is_said_once_with_a_hint") {
        return;
    }
    // As `nobody` (setpriv, util-linux): opening a packet socket is refused.
    let dir = std::env::temp_dir().join(format!("rtlan-cli-priv-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("segment.toml");
    std::fs::write(
        &file,
        "name = \"g\"\nrate = \"10mbit\"\n[[port]]\nifname = \"lo\"\n[[port]]\nifname = \"lo2\"\n",
    )
    .unwrap();
    let mut perms = std::fs::metadata(&dir).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&dir, perms).unwrap();
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_rtlan"))
        .args(["segment", "--config", file.to_str().unwrap()])
        .output()
        .expect("setpriv runs");
    let _ = std::fs::remove_dir_all(&dir);
    let msg = text(&out);
    assert_eq!(out.status.code(), Some(1), "{msg}");
    let error = msg
        .lines()
        .find(|l| l.starts_with("rtlan: error:"))
        .unwrap_or_else(|| panic!("an error line: {msg}"));
    assert_eq!(
        error.matches("Operation not permitted").count(),
        1,
        "the OS error once: {msg}"
    );
    assert!(
        msg.contains("hint:") && msg.contains("CAP_NET_RAW"),
        "{msg}"
    );
}

#[test]
fn completions_and_man_pages_come_from_the_cli_definition() {
    for shell in ["bash", "zsh", "fish"] {
        let out = rtlan(&["completions", shell]);
        assert!(out.status.success(), "{shell}: {}", text(&out));
        let script = String::from_utf8_lossy(&out.stdout);
        for word in ["rether-bridge", "lab", "log-level", "data-plane"] {
            assert!(script.contains(word), "{shell} completes {word}");
        }
    }
    assert_eq!(rtlan(&["completions", "tcsh"]).status.code(), Some(2));
    let dir = std::env::temp_dir().join(format!("rtlan-cli-man-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = rtlan(&["man", "--out-dir", dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    for page in [
        "rtlan.1",
        "rtlan-lab-up.1",
        "rtlan-rether-bridge.1",
        "rtlan-bench-forward.1",
    ] {
        let body =
            std::fs::read_to_string(dir.join(page)).unwrap_or_else(|e| panic!("{page}: {e}"));
        assert!(
            body.starts_with(".ie") || body.contains(".TH"),
            "{page}: roff"
        );
    }
    let lab_up = std::fs::read_to_string(dir.join("rtlan-lab-up.1")).unwrap();
    assert!(
        lab_up.contains("rtlan lab up"),
        "the synopsis names the command as typed"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ctl_talks_to_a_running_manager_in_tables_and_json() {
    let dir = std::env::temp_dir().join(format!("rtlan-cli-ctl-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let network = dir.join("net.toml");
    std::fs::write(
        &network,
        "[[switch]]\nname = \"s1\"\nt_mux = \"45us\"\nbuffer = \"128KiB\"\n\
         [[link]]\nends = [\"A\", \"s1\"]\nrate = \"100mbit\"\n\
         [[link]]\nends = [\"B\", \"s1\"]\nrate = \"100mbit\"\n",
    )
    .unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let addr = format!("127.0.0.1:{port}");
    let mut bwm = Command::new(env!("CARGO_BIN_EXE_rtlan"))
        .args(["bwm", "--network"])
        .arg(&network)
        .arg("--state")
        .arg(dir.join("state.json"))
        .args(["--listen", &addr])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("rtlan bwm starts");
    struct Stop(std::process::Child);
    impl Drop for Stop {
        fn drop(&mut self) {
            // SAFETY: kill(2) on the child this test spawned and has not reaped.
            unsafe { libc::kill(self.0.id() as libc::pid_t, libc::SIGTERM) };
            let _ = self.0.wait();
        }
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::net::TcpStream::connect(&addr).is_err() {
        assert!(std::time::Instant::now() < deadline, "bwm never listened");
        assert!(bwm.try_wait().unwrap().is_none(), "bwm exited");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _stop = Stop(bwm);
    let ctl = |args: &[&str]| {
        let mut all = vec!["ctl", "--tcp", addr.as_str()];
        all.extend_from_slice(args);
        rtlan(&all)
    };
    let admit = ctl(&[
        "admit",
        "src=A",
        "dst=B",
        "rate_bps=1000000",
        "max_packet=1000",
        "burst_bytes=2000",
    ]);
    assert!(admit.status.success(), "{}", text(&admit));
    let said = String::from_utf8_lossy(&admit.stdout).to_string();
    assert!(
        said.contains("conn: 1") && said.contains("path: [\"A\",\"s1\",\"B\"]"),
        "{said}"
    );
    let list = ctl(&["list"]);
    let table = String::from_utf8_lossy(&list.stdout).to_string();
    let header = table
        .lines()
        .find(|l| l.starts_with("burst_bytes"))
        .unwrap_or_else(|| panic!("a table: {table}"));
    assert!(
        header.contains("delay_bound_us") && header.contains("src"),
        "{table}"
    );
    let json: serde_json::Value =
        serde_json::from_slice(&ctl(&["list", "--json"]).stdout).expect("--json is JSON");
    assert_eq!(json["connections"][0]["conn"], 1, "{json}");
    let refused = ctl(&["frobnicate"]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(text(&refused).contains("bad_request"), "{}", text(&refused));
    let nobody = rtlan(&["ctl", "--socket", "/nonexistent/rtlan.sock", "stats"]);
    assert_eq!(nobody.status.code(), Some(1));
    assert!(
        text(&nobody).contains("cannot connect"),
        "{}",
        text(&nobody)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
