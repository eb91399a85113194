//! Building blocks for scenarios in a lab (DESIGN.md §5): the host daemon, probe receivers and
//! senders, `iperf3` and UDP floods, run as real processes in a lab's host namespaces. Shared by
//! `rtlan demo`, the experiments under `experiments/` and the lab tests, so all of them measure the
//! same way.
//!
//! Every process is owned by a guard that stops it (SIGTERM, then SIGKILL after a grace period) and
//! reaps it on drop, so a failing scenario leaves nothing running. The rtlan executable is passed
//! in (`std::env::current_exe()` in the binary, `env!("CARGO_BIN_EXE_rtlan")` in tests).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use rtlan_lab::{Lab, LabError};

/// What went wrong while running a scenario step.
#[derive(Debug, thiserror::Error)]
pub enum LabkitError {
    /// The lab refused (unknown node, namespace gone).
    #[error(transparent)]
    Lab(#[from] LabError),
    /// A process could not be started or waited for.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A receiver did not bind its port in time.
    #[error(transparent)]
    NotListening(#[from] rtlan_lab::tools::ToolError),
    /// The daemon did not create its socket in time.
    #[error("rtcd on {host} did not create {} within {timeout:?}; its log: {log}", socket.display())]
    DaemonStart {
        /// The host.
        host: String,
        /// The socket path it should have created.
        socket: PathBuf,
        /// How long we waited.
        timeout: Duration,
        /// The daemon's stderr so far.
        log: String,
    },
    /// A tool exited unsuccessfully or printed something that is not its report.
    #[error("{what} failed: {detail}")]
    Tool {
        /// The tool and host.
        what: String,
        /// Exit status and output.
        detail: String,
    },
}

/// How long a stopped process gets between SIGTERM and SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(3);
/// How long a receiver may take to bind its port.
const RECEIVER_START: Duration = Duration::from_secs(5);
/// How long the daemon may take to create its socket.
const DAEMON_START: Duration = Duration::from_secs(5);

/// A child process stopped and reaped on drop.
#[derive(Debug)]
pub struct Guarded {
    child: Option<Child>,
    what: String,
}

impl Guarded {
    /// Guards an already spawned `child`, described as `what` in errors.
    pub fn from_child(child: Child, what: impl Into<String>) -> Guarded {
        Guarded {
            child: Some(child),
            what: what.into(),
        }
    }

    fn new(child: Child, what: String) -> Guarded {
        Guarded::from_child(child, what)
    }

    /// Stops the process now (SIGTERM, grace period, SIGKILL) and returns its stdout.
    pub fn stop(mut self) -> String {
        let Some(mut child) = self.child.take() else {
            return String::new();
        };
        stop(&mut child);
        let mut out = String::new();
        if let Some(mut stdout) = child.stdout.take() {
            let _ = stdout.read_to_string(&mut out);
        }
        out
    }

    /// The process id, while it runs.
    pub fn id(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Sends `signal` to the process (if it still runs).
    pub fn signal(&self, signal: libc::c_int) {
        if let Some(pid) = self
            .child
            .as_ref()
            .and_then(|c| libc::pid_t::try_from(c.id()).ok())
        {
            // SAFETY: kill(2) has no memory-safety preconditions; `pid` is our own child, not yet
            // reaped (we hold its `Child`), so the PID cannot have been reused.
            unsafe { libc::kill(pid, signal) };
        }
    }

    /// [`Guarded::finish`] for a tool that prints one JSON report (`rtlan send --json`, `rtlan
    /// recv --json`, `rtlan reserve --json`): the parsed report, or an error unless the process
    /// exited successfully on its own and printed JSON.
    pub fn finish_json(self, timeout: Duration) -> Result<serde_json::Value, LabkitError> {
        let what = self.what.clone();
        let (out, ok) = self.finish(timeout)?;
        match serde_json::from_str(out.trim()) {
            Ok(value) if ok => Ok(value),
            _ => Err(LabkitError::Tool {
                what,
                detail: format!("exited ok = {ok}, printed {out:?}"),
            }),
        }
    }

    /// Waits up to `timeout` for the process to exit by itself, then stops it; returns its stdout
    /// and whether it exited successfully on its own.
    pub fn finish(mut self, timeout: Duration) -> Result<(String, bool), LabkitError> {
        let Some(mut child) = self.child.take() else {
            return Ok((String::new(), false));
        };
        let deadline = Instant::now() + timeout;
        let mut exited_ok = false;
        loop {
            match child.try_wait() {
                Ok(Some(status)) => {
                    exited_ok = status.success();
                    break;
                }
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Ok(None) => {
                    stop(&mut child);
                    break;
                }
                Err(source) => {
                    return Err(LabkitError::Io {
                        what: format!("waiting for {}", self.what),
                        source,
                    });
                }
            }
        }
        let mut out = String::new();
        if let Some(mut stdout) = child.stdout.take() {
            let _ = stdout.read_to_string(&mut out);
        }
        let _ = child.wait();
        Ok((out, exited_ok))
    }
}

impl Drop for Guarded {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            stop(&mut child);
        }
    }
}

/// SIGTERM, a grace period, SIGKILL, reap.
fn stop(child: &mut Child) {
    if let Ok(pid) = libc::pid_t::try_from(child.id()) {
        // SAFETY: as in `Guarded::signal`: our unreaped child.
        unsafe { libc::kill(pid, libc::SIGTERM) };
    }
    let deadline = Instant::now() + STOP_GRACE;
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Starts `args` in `host`'s namespace (stdin and stderr null, stdout piped) under a guard.
pub fn spawn(lab: &Lab, host: &str, args: &[String], what: String) -> Result<Guarded, LabkitError> {
    let child = lab
        .exec(host, args)?
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|source| LabkitError::Io {
            what: format!("starting {what}"),
            source,
        })?;
    Ok(Guarded::new(child, what))
}

/// The host daemon `rtlan rtcd` running on a lab host, its socket in the lab's state directory.
#[derive(Debug)]
pub struct Rtcd {
    process: Guarded,
    socket: PathBuf,
}

impl Rtcd {
    /// Starts `rtlan rtcd` on `host` (interface `eth0`) with the TOML lines `extra` added to its
    /// configuration (e.g. `reclaim_period = "1s"`), and waits for its socket.
    pub fn start(exe: &Path, lab: &Lab, host: &str, extra: &str) -> Result<Rtcd, LabkitError> {
        let socket = lab.state_dir().join(format!("rtcd-{host}.sock"));
        let config = lab.state_dir().join(format!("rtcd-{host}.toml"));
        let log = lab.state_dir().join(format!("rtcd-{host}.log"));
        let text = format!(
            "interface = \"eth0\"\nsocket = \"{}\"\n{}{extra}\n",
            socket.display(),
            lab.rtcd_config_lines(host)
        );
        std::fs::write(&config, text).map_err(|source| LabkitError::Io {
            what: format!("writing {}", config.display()),
            source,
        })?;
        let log_file = std::fs::File::create(&log).map_err(|source| LabkitError::Io {
            what: format!("creating {}", log.display()),
            source,
        })?;
        let args = [
            exe.display().to_string(),
            "rtcd".to_string(),
            "--config".to_string(),
            config.display().to_string(),
        ];
        let child = lab
            .exec(host, &args)?
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file)
            .spawn()
            .map_err(|source| LabkitError::Io {
                what: format!("starting rtcd on {host}"),
                source,
            })?;
        let process = Guarded::new(child, format!("rtcd on {host}"));
        let deadline = Instant::now() + DAEMON_START;
        while !socket.exists() {
            if Instant::now() >= deadline {
                return Err(LabkitError::DaemonStart {
                    host: host.to_string(),
                    socket,
                    timeout: DAEMON_START,
                    log: std::fs::read_to_string(&log).unwrap_or_default(),
                });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(Rtcd { process, socket })
    }

    /// The daemon's client socket.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// The daemon's process.
    pub fn process(&self) -> &Guarded {
        &self.process
    }
}

/// A running `rtlan recv --json` on a lab host.
#[derive(Debug)]
pub struct Receiver {
    process: Guarded,
    duration: Duration,
}

impl Receiver {
    /// Starts `rtlan recv --port PORT --duration D --json` on `host`, plus `extra` arguments
    /// (e.g. `--series 80ms`), and returns once its socket is bound: a datagram sent before
    /// that draws an ICMP port unreachable, and the sender's connected socket then fails a
    /// later send, which the receiver counts as a lost sequence number.
    pub fn start(
        exe: &Path,
        lab: &Lab,
        host: &str,
        port: u16,
        duration: Duration,
        extra: &[&str],
    ) -> Result<Receiver, LabkitError> {
        let mut args = vec![
            exe.display().to_string(),
            "recv".to_string(),
            "--port".to_string(),
            port.to_string(),
            "--duration".to_string(),
            format!("{}ms", duration.as_millis()),
            "--json".to_string(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        let process = spawn(lab, host, &args, format!("rtlan recv on {host}:{port}"))?;
        rtlan_lab::tools::wait_listening(
            lab.netns(host)?,
            "rtlan recv",
            rtlan_lab::tools::Proto::Udp,
            port,
            RECEIVER_START,
        )?;
        Ok(Receiver { process, duration })
    }

    /// Waits for the receiver to finish (its duration plus a margin) and parses its report.
    pub fn report(self) -> Result<serde_json::Value, LabkitError> {
        self.process
            .finish_json(self.duration + Duration::from_secs(5))
    }
}

/// Arguments of one `rtlan send` stream.
#[derive(Debug, Clone)]
pub struct Stream {
    /// Destination `IP:PORT` (the receiver's real address; with `reserve` the tool reserves a
    /// connection to it and sends to the proxy IP).
    pub to: String,
    /// Rate of whole frames, `tc` units (`"50mbit"`).
    pub rate: String,
    /// UDP payload bytes per datagram.
    pub size: u16,
    /// How long to send.
    pub duration: Duration,
    /// Reserve through the daemon at this socket (`None`: plain paced UDP).
    pub reserve: Option<PathBuf>,
    /// Shaping mode name for reserved streams (`leaky`, `token`, `kernel`).
    pub shaping: Option<String>,
}

impl Stream {
    /// Starts `rtlan send … --json` on `host`; returns the guard (whose `finish` gives the
    /// summary JSON).
    pub fn start(&self, exe: &Path, lab: &Lab, host: &str) -> Result<Guarded, LabkitError> {
        self.start_with(exe, lab, host, &[])
    }

    /// [`Stream::start`] with `extra` arguments after the stream's own (e.g. `--shaping-interval 1ms`).
    pub fn start_with(
        &self,
        exe: &Path,
        lab: &Lab,
        host: &str,
        extra: &[String],
    ) -> Result<Guarded, LabkitError> {
        let mut args = vec![
            exe.display().to_string(),
            "send".to_string(),
            "--to".to_string(),
            self.to.clone(),
            "--rate".to_string(),
            self.rate.clone(),
            "--size".to_string(),
            self.size.to_string(),
            "--duration".to_string(),
            format!("{}ms", self.duration.as_millis()),
            "--json".to_string(),
        ];
        if let Some(socket) = &self.reserve {
            args.push("--reserve".to_string());
            args.push("--socket".to_string());
            args.push(socket.display().to_string());
        }
        if let Some(shaping) = &self.shaping {
            args.push("--shaping".to_string());
            args.push(shaping.clone());
        }
        args.extend_from_slice(extra);
        spawn(
            lab,
            host,
            &args,
            format!("rtlan send on {host} to {}", self.to),
        )
    }

    /// Runs the stream to completion on `host` and returns its summary.
    pub fn run(&self, exe: &Path, lab: &Lab, host: &str) -> Result<serde_json::Value, LabkitError> {
        self.start(exe, lab, host)?
            .finish_json(self.duration + Duration::from_secs(10))
    }
}
