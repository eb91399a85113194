//! Running a daemon of the lab (an rtlan switch or router, BIRD) in a node's namespace: the
//! detached process in its own session with output to a log file, and the wait until its
//! control socket accepts a connection; `down` stops it with everything else in the namespace.

use std::ffi::OsString;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How many lines of a daemon's log an error quotes.
const LOG_TAIL_LINES: usize = 15;

/// A daemon (rtlan switch or router, BIRD) could not be configured or started.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    /// The config file could not be written.
    #[error("writing {path}: {source}")]
    WriteConfig {
        /// The config file.
        path: PathBuf,
        /// The operating-system error.
        source: std::io::Error,
    },
    /// The config could not be rendered as TOML (a bug).
    #[error("rendering the config: {0}")]
    Render(#[from] toml::ser::Error),
    /// The process could not be started.
    #[error("starting `{command}`: {source}")]
    Spawn {
        /// The command line.
        command: String,
        /// The operating-system error.
        source: std::io::Error,
    },
    /// The daemon exited before its control socket answered.
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

/// Writes `config` to `path`.
pub(crate) fn write_config(path: &Path, config: &str) -> Result<(), DaemonError> {
    std::fs::write(path, config).map_err(|source| DaemonError::WriteConfig {
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

/// Where a daemon's files are and how it is started.
pub(crate) struct Launch<'a> {
    /// The executable.
    pub(crate) exe: &'a Path,
    /// Its arguments (`switch --config FILE`, …).
    pub(crate) args: Vec<OsString>,
    /// The namespace to run in.
    pub(crate) netns: &'a str,
    /// Where stdout and stderr go.
    pub(crate) log: &'a Path,
    /// The control socket named in the config.
    pub(crate) socket: &'a Path,
    /// How long to wait for the socket.
    pub(crate) timeout: Duration,
}

/// Starts `exe args…` in the namespace, detached in its own session with output
/// to the log, and waits until the control socket accepts a connection. Returns the PID.
/// `abort` is polled while waiting; when it returns true the wait stops with
/// [`DaemonError::Interrupted`] (the caller's roll-back kills the process).
pub(crate) fn start(launch: &Launch<'_>, abort: impl Fn() -> bool) -> Result<u32, DaemonError> {
    let mut command = format!("ip netns exec {} {}", launch.netns, launch.exe.display());
    for a in &launch.args {
        command.push(' ');
        command.push_str(&a.to_string_lossy());
    }
    let spawn_err = |source| DaemonError::Spawn {
        command: command.clone(),
        source,
    };
    let log = std::fs::File::create(launch.log).map_err(spawn_err)?;
    let log2 = log.try_clone().map_err(spawn_err)?;
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", launch.netns])
        .arg(launch.exe)
        .args(&launch.args)
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
    tracing::debug!(%command, "lab: starting daemon");
    let mut child = cmd.spawn().map_err(spawn_err)?;
    let pid = child.id();
    let deadline = Instant::now() + launch.timeout;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(DaemonError::Exited {
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
            return Err(DaemonError::Interrupted);
        }
        if Instant::now() >= deadline {
            return Err(DaemonError::Timeout {
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

    /// Deletes a scratch namespace when dropped (also when an assertion fails).
    struct NetnsGuard(String);

    impl Drop for NetnsGuard {
        fn drop(&mut self) {
            let _ = crate::cmd::ip(&["netns", "del", &self.0]);
        }
    }

    /// Runs [`start`] on a fake switch script in a scratch namespace; `None` when not root.
    fn start_fake(tag: &str, script: &str, timeout: Duration) -> Option<DaemonError> {
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
            args: vec![
                "switch".into(),
                "--config".into(),
                dir.join("s1.toml").into(),
            ],
            netns: &guard.0,
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
        assert!(matches!(err, DaemonError::Exited { .. }), "{text}");
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
        assert!(matches!(err, DaemonError::Timeout { .. }), "{text}");
        assert!(text.contains("listening nowhere"), "{text}");
    }
}
