//! Running an rtlan switch in a lab: its config file (docs/switch.md), the detached process inside
//! the switch's namespace, and the wait until its control socket answers.

use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rtlan_core::switch::UnknownUnicast;
use rtlan_core::units::{format_duration, format_rate};
use serde::Serialize;

use crate::topology::{RtlanSwitch, Topology};

/// How many lines of the switch's log an error quotes.
const LOG_TAIL_LINES: usize = 15;

/// An rtlan switch could not be configured or started.
#[derive(Debug, thiserror::Error)]
pub enum SwitchError {
    /// The config file could not be written.
    #[error("writing {path}: {source}")]
    WriteConfig {
        /// The config file.
        path: PathBuf,
        /// The operating-system error.
        source: std::io::Error,
    },
    /// The config could not be rendered as TOML (a bug).
    #[error("rendering the switch config: {0}")]
    Render(#[from] toml::ser::Error),
    /// The process could not be started.
    #[error("starting `{command}`: {source}")]
    Spawn {
        /// The command line.
        command: String,
        /// The operating-system error.
        source: std::io::Error,
    },
    /// The switch exited before its control socket answered.
    #[error("exited ({status}) before its control socket answered; last lines of {}:\n{tail}", log.display())]
    Exited {
        /// How it exited.
        status: std::process::ExitStatus,
        /// Its log file.
        log: PathBuf,
        /// The last lines of the log.
        tail: String,
    },
    /// The control socket did not accept a connection in time.
    #[error("control socket {} did not accept a connection within {timeout:?}; last lines of {}:\n{tail}", socket.display(), log.display())]
    Timeout {
        /// The control socket.
        socket: PathBuf,
        /// How long we waited.
        timeout: Duration,
        /// Its log file.
        log: PathBuf,
        /// The last lines of the log.
        tail: String,
    },
    /// A termination signal arrived while waiting.
    #[error("interrupted by a signal")]
    Interrupted,
}

/// The switch config file as `rtlan switch --config` reads it (docs/switch.md).
#[derive(Debug, Serialize)]
struct SwitchFile {
    name: String,
    mgmt_ip: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    unknown_unicast: Option<UnknownUnicast>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cycle_time: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    nrt_queue_bytes: Option<u64>,
    control_socket: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    cpu: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    lateness_budget: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    scheduler: Option<rtlan_topology::SchedulerKind>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stp: Option<StpFile>,
    port: Vec<PortFile>,
}

/// `[stp]` with the smallest legal 802.1D timers (docs/stp.md §4), so lab tests stay short.
#[derive(Debug, Serialize)]
struct StpFile {
    enabled: bool,
    max_age: &'static str,
    hello_time: &'static str,
    forward_delay: &'static str,
}

impl StpFile {
    const LAB: StpFile = StpFile {
        enabled: true,
        max_age: "6s",
        hello_time: "1s",
        forward_delay: "4s",
    };
}

#[derive(Debug, Serialize)]
struct PortFile {
    ifname: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    rate: Option<String>,
    /// The link's key (`crate::keys`) when the link is authenticated.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    keys: Vec<KeyFile>,
}

/// One `{ id, file }` key of a port.
#[derive(Debug, Serialize)]
struct KeyFile {
    id: u32,
    file: String,
}

/// Renders the config of switch `name` in `topology`, with its control socket at `socket` and
/// the link keys of an authenticated switch under the lab's state directory `dir`.
pub(crate) fn render_config(
    topology: &Topology,
    name: &str,
    opts: &RtlanSwitch,
    dir: &Path,
    socket: &Path,
) -> Result<String, SwitchError> {
    let file = SwitchFile {
        name: name.to_string(),
        mgmt_ip: opts.mgmt_ip.to_string(),
        unknown_unicast: opts.unknown_unicast,
        cycle_time: opts.cycle_time.map(format_duration),
        nrt_queue_bytes: opts.nrt_queue_bytes,
        control_socket: socket.display().to_string(),
        cpu: opts.cpu,
        lateness_budget: opts.lateness_budget.map(format_duration),
        scheduler: opts.scheduler,
        stp: opts.stp.then_some(StpFile::LAB),
        port: topology
            .interfaces(name)
            .into_iter()
            .map(|(own, peer, rate)| PortFile {
                ifname: own.ifname.clone(),
                rate: rate.map(format_rate),
                keys: if topology.link_authenticated(name, &peer.node) {
                    vec![KeyFile {
                        id: crate::keys::LAB_KEY_ID,
                        file: crate::keys::key_path(dir, name, &peer.node)
                            .display()
                            .to_string(),
                    }]
                } else {
                    Vec::new()
                },
            })
            .collect(),
    };
    Ok(toml::to_string(&file)?)
}

/// Writes `config` to `path`.
pub(crate) fn write_config(path: &Path, config: &str) -> Result<(), SwitchError> {
    std::fs::write(path, config).map_err(|source| SwitchError::WriteConfig {
        path: path.to_path_buf(),
        source,
    })
}

/// The last [`LOG_TAIL_LINES`] lines of `log`, or a note why there are none.
pub(crate) fn log_tail(log: &Path) -> String {
    match std::fs::read(log) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            let lines: Vec<&str> = text.lines().collect();
            let start = lines.len().saturating_sub(LOG_TAIL_LINES);
            if lines.is_empty() {
                "(log is empty)".to_string()
            } else {
                lines[start..].join("\n")
            }
        }
        Err(e) => format!("(cannot read log: {e})"),
    }
}

/// Where a switch's files are and how it is started.
pub(crate) struct Launch<'a> {
    /// The rtlan executable.
    pub(crate) exe: &'a Path,
    /// The namespace to run in.
    pub(crate) netns: &'a str,
    /// Its config file.
    pub(crate) config: &'a Path,
    /// Where stdout and stderr go.
    pub(crate) log: &'a Path,
    /// The control socket named in the config.
    pub(crate) socket: &'a Path,
    /// How long to wait for the socket.
    pub(crate) timeout: Duration,
}

/// Starts `exe switch --config CONFIG` in the namespace, detached in its own session with output
/// to the log, and waits until the control socket accepts a connection. Returns the PID.
/// `abort` is polled while waiting; when it returns true the wait stops with
/// [`SwitchError::Interrupted`] (the caller's roll-back kills the process).
pub(crate) fn start(launch: &Launch<'_>, abort: impl Fn() -> bool) -> Result<u32, SwitchError> {
    let command = format!(
        "ip netns exec {} {} switch --config {}",
        launch.netns,
        launch.exe.display(),
        launch.config.display()
    );
    let spawn_err = |source| SwitchError::Spawn {
        command: command.clone(),
        source,
    };
    let log = std::fs::File::create(launch.log).map_err(spawn_err)?;
    let log2 = log.try_clone().map_err(spawn_err)?;
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", launch.netns])
        .arg(launch.exe)
        .arg("switch")
        .arg("--config")
        .arg(launch.config)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log2);
    // SAFETY: the closure runs in the forked child before exec and only calls setsid(2), which
    // is async-signal-safe and touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    tracing::debug!(%command, "lab: starting switch");
    let mut child = cmd.spawn().map_err(spawn_err)?;
    let pid = child.id();
    let deadline = Instant::now() + launch.timeout;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(SwitchError::Exited {
                status,
                log: launch.log.to_path_buf(),
                tail: log_tail(launch.log),
            });
        }
        if UnixStream::connect(launch.socket).is_ok() {
            // Dropping `child` neither waits for nor kills it; `down` reaps it.
            return Ok(pid);
        }
        if abort() {
            return Err(SwitchError::Interrupted);
        }
        if Instant::now() >= deadline {
            return Err(SwitchError::Timeout {
                socket: launch.socket.to_path_buf(),
                timeout: launch.timeout,
                log: launch.log.to_path_buf(),
                tail: log_tail(launch.log),
            });
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_lists_ports_in_order_with_rates() {
        let topo = Topology::from_str(
            r#"
[[host]]
name = "a"
[[host]]
name = "b"
[[switch]]
name = "s1"
unknown_unicast = "flood"
cycle_time = "2500us"
cpu = 1
[[link]]
ends = ["a", "s1"]
rate = "100mbit"
[[link]]
ends = ["s1", "b"]
"#,
            "t.toml",
        )
        .unwrap();
        let crate::SwitchKind::Rtlan(opts) = &topo.switches[0].kind else {
            panic!("rtlan switch")
        };
        let text = render_config(
            &topo,
            "s1",
            opts,
            Path::new("/run/x"),
            Path::new("/run/x/s1.sock"),
        )
        .unwrap();
        let v: toml::Value = toml::from_str(&text).unwrap();
        assert_eq!(v["name"].as_str(), Some("s1"));
        assert_eq!(v["mgmt_ip"].as_str(), Some("198.18.255.1"));
        assert_eq!(v["unknown_unicast"].as_str(), Some("flood"));
        assert_eq!(v["cycle_time"].as_str(), Some("2500us"));
        assert_eq!(v["cpu"].as_integer(), Some(1));
        assert_eq!(v["control_socket"].as_str(), Some("/run/x/s1.sock"));
        assert!(v.get("nrt_queue_bytes").is_none());
        let ports = v["port"].as_array().unwrap();
        assert_eq!(ports.len(), 2);
        assert_eq!(ports[0]["ifname"].as_str(), Some("p0"));
        assert_eq!(ports[0]["rate"].as_str(), Some("100mbit"));
        assert_eq!(ports[1]["ifname"].as_str(), Some("p1"));
        assert!(ports[1].get("rate").is_none());
        assert!(ports[0].get("keys").is_none(), "no auth, no keys");
    }

    #[test]
    fn an_authenticating_switch_names_each_links_key_file_but_none_towards_a_bridge() {
        let topo = Topology::from_str(
            "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n\
             [[switch]]\nname = \"s1\"\nauth = true\n\
             [[switch]]\nname = \"br\"\nkind = \"linux-bridge\"\n\
             [[link]]\nends = [\"a\", \"s1\"]\n\
             [[link]]\nends = [\"s1\", \"br\"]\n\
             [[link]]\nends = [\"br\", \"b\"]\n",
            "t.toml",
        )
        .unwrap();
        let crate::SwitchKind::Rtlan(opts) = &topo.switches[0].kind else {
            panic!("rtlan switch")
        };
        let dir = Path::new("/run/x");
        let text = render_config(&topo, "s1", opts, dir, &dir.join("s1.sock")).unwrap();
        let v: toml::Value = toml::from_str(&text).unwrap();
        let ports = v["port"].as_array().unwrap();
        let keys = ports[0]["keys"].as_array().expect("keys on the host link");
        assert_eq!(keys.len(), 1);
        assert_eq!(keys[0]["id"].as_integer(), Some(1));
        assert_eq!(keys[0]["file"].as_str(), Some("/run/x/keys/a--s1.key"));
        assert!(
            ports[1].get("keys").is_none(),
            "the bridge link has no keys"
        );
    }

    #[test]
    fn durations_stay_exact() {
        assert_eq!(format_duration(Duration::from_millis(10)), "10ms");
        assert_eq!(format_duration(Duration::from_secs(2)), "2s");
        assert_eq!(format_duration(Duration::from_micros(1500)), "1500us");
        assert_eq!(format_duration(Duration::from_nanos(1001)), "1001ns");
    }

    /// Deletes a scratch namespace when dropped (also when an assertion fails).
    struct NetnsGuard(String);

    impl Drop for NetnsGuard {
        fn drop(&mut self) {
            let _ = crate::cmd::ip(&["netns", "del", &self.0]);
        }
    }

    /// Runs [`start`] on a fake switch script in a scratch namespace; `None` when not root.
    fn start_fake(tag: &str, script: &str, timeout: Duration) -> Option<SwitchError> {
        // SAFETY: geteuid(2) has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: needs root");
            return None;
        }
        let dir = std::env::temp_dir().join(format!("rtlan-lab-sw-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let exe = dir.join("fake-rtlan");
        std::fs::write(&exe, script).unwrap();
        std::fs::set_permissions(&exe, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let guard = NetnsGuard(format!("rtlsw{tag}{}", std::process::id()));
        crate::cmd::ip(&["netns", "add", &guard.0]).unwrap();
        let launch = Launch {
            exe: &exe,
            netns: &guard.0,
            config: &dir.join("s1.toml"),
            log: &dir.join("s1.log"),
            socket: &dir.join("s1.sock"),
            timeout,
        };
        let started = Instant::now();
        let err = start(&launch, || false).unwrap_err();
        assert!(started.elapsed() < timeout + Duration::from_secs(2));
        // Kill whatever the fake left running in the namespace before deleting it.
        for pid in crate::cmd::netns_pids(&guard.0).unwrap() {
            // SAFETY: kill(2) has no memory-safety preconditions; the pid is in our namespace.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        drop(guard);
        std::fs::remove_dir_all(&dir).unwrap();
        Some(err)
    }

    #[test]
    fn early_exit_reports_log_tail() {
        let script = "#!/bin/sh\necho \"starting $*\"\necho 'boom: no port p0' >&2\nexit 3\n";
        let Some(err) = start_fake("x", script, Duration::from_secs(10)) else {
            return;
        };
        let text = err.to_string();
        assert!(matches!(err, SwitchError::Exited { .. }), "{text}");
        assert!(text.contains("boom: no port p0"), "{text}");
        assert!(text.contains("starting switch --config"), "{text}");
    }

    #[test]
    fn silent_switch_times_out_with_log_tail() {
        let script = "#!/bin/sh\necho 'listening nowhere'\nexec sleep 30\n";
        let Some(err) = start_fake("t", script, Duration::from_millis(500)) else {
            return;
        };
        let text = err.to_string();
        assert!(matches!(err, SwitchError::Timeout { .. }), "{text}");
        assert!(text.contains("listening nowhere"), "{text}");
    }
}
