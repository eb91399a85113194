//! Running a tool inside a namespace: locating the binary, a guard that owns the spawned process
//! group (SIGTERM, then SIGKILL on drop), deadlines, output capture, CPU pinning and waiting for a
//! server to listen.
//!
//! Every tool is spawned as `ip netns exec NS /abs/path/tool …` in a fresh process group. `ip netns
//! exec` execs the tool in place, so the group leader *is* the tool and the group holds exactly
//! the processes it forked (trafgen's workers, for example). Signals go to the whole group, and
//! only while the leader is unreaped, so the group id cannot have been recycled.

use super::{tail, Result, ToolError};
use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often deadlines and process state are polled.
const POLL: Duration = Duration::from_millis(10);

/// Captured output is capped at this many bytes per stream (the rest is discarded).
const MAX_CAPTURE: usize = 64 << 20;

/// How long a guard waits after SIGTERM before it sends SIGKILL.
const TERM_GRACE: Duration = Duration::from_millis(500);

/// The external programs the wrappers use, with the Debian package that provides each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tool {
    /// `ip` (iproute2).
    Ip,
    /// `ss` (iproute2).
    Ss,
    /// `ethtool`.
    Ethtool,
    /// `iperf3`.
    Iperf3,
    /// `sockperf`.
    Sockperf,
    /// `trafgen` (netsniff-ng).
    Trafgen,
    /// `socat`.
    Socat,
    /// `ping` (iputils).
    Ping,
    /// `tshark`.
    Tshark,
    /// `taskset` (util-linux).
    Taskset,
    /// `chromium`, headless, for web pages served in a lab.
    Chromium,
}

impl Tool {
    /// The program's file name.
    pub fn binary(self) -> &'static str {
        match self {
            Tool::Ip => "ip",
            Tool::Ss => "ss",
            Tool::Ethtool => "ethtool",
            Tool::Iperf3 => "iperf3",
            Tool::Sockperf => "sockperf",
            Tool::Trafgen => "trafgen",
            Tool::Socat => "socat",
            Tool::Ping => "ping",
            Tool::Tshark => "tshark",
            Tool::Taskset => "taskset",
            Tool::Chromium => "chromium",
        }
    }

    /// The Debian package that installs it.
    pub fn debian_package(self) -> &'static str {
        match self {
            Tool::Ip | Tool::Ss => "iproute2",
            Tool::Ethtool => "ethtool",
            Tool::Iperf3 => "iperf3",
            Tool::Sockperf => "sockperf",
            Tool::Trafgen => "netsniff-ng",
            Tool::Socat => "socat",
            Tool::Ping => "iputils-ping",
            Tool::Tshark => "tshark",
            Tool::Taskset => "util-linux",
            Tool::Chromium => "chromium",
        }
    }

    /// The absolute path of the program: searched on `PATH`, then in `/usr/sbin`, `/sbin`,
    /// `/usr/bin`, `/bin` (trafgen lives in `/usr/sbin`, often not on a user's `PATH`).
    pub fn locate(self) -> Result<PathBuf> {
        let name = self.binary();
        let path_var = std::env::var_os("PATH").unwrap_or_default();
        let fallback = ["/usr/sbin", "/sbin", "/usr/bin", "/bin"].map(PathBuf::from);
        std::env::split_paths(&path_var)
            .chain(fallback)
            .map(|dir| dir.join(name))
            .find(|candidate| is_executable(candidate))
            .ok_or(ToolError::Missing {
                tool: name,
                package: self.debian_package(),
            })
    }
}

fn is_executable(path: &std::path::Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// Transport protocol of a listening socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proto {
    /// TCP (a socket in LISTEN state).
    Tcp,
    /// UDP (a bound socket).
    Udp,
}

impl std::fmt::Display for Proto {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Proto::Tcp => "TCP",
            Proto::Udp => "UDP",
        })
    }
}

/// Rejects namespace names that `ip netns` would not accept, before anything runs.
pub(crate) fn check_ns(ns: &str) -> Result<()> {
    let ok = !ns.is_empty()
        && ns.len() <= 255
        && ns != "."
        && ns != ".."
        && !ns.contains('/')
        && !ns.chars().any(|c| c.is_whitespace() || c.is_control());
    if ok {
        Ok(())
    } else {
        Err(ToolError::InvalidArgument(format!(
            "bad namespace name {ns:?}"
        )))
    }
}

/// `ip netns exec NS /abs/tool args…` with a C locale (stable number formats).
pub(crate) fn netns_command<I, S>(ns: &str, tool: Tool, args: I) -> Result<Command>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    check_ns(ns)?;
    let ip = Tool::Ip.locate()?;
    let program = tool.locate()?;
    let mut cmd = Command::new(ip);
    cmd.arg("netns")
        .arg("exec")
        .arg(ns)
        .arg(program)
        .args(args)
        .env("LC_ALL", "C");
    Ok(cmd)
}

/// What a finished tool left behind.
#[derive(Debug, Clone)]
pub struct CapturedOutput {
    /// How it exited.
    pub status: ExitStatus,
    /// Everything it wrote to stdout (up to 64 MiB).
    pub stdout: Vec<u8>,
    /// Everything it wrote to stderr (up to 64 MiB).
    pub stderr: Vec<u8>,
}

impl CapturedOutput {
    /// Stdout as text (invalid UTF-8 replaced).
    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    /// Stderr as text (invalid UTF-8 replaced).
    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }

    /// The end of stderr, or of stdout if stderr is empty, for error messages.
    pub fn diagnostic_tail(&self) -> String {
        let err = self.stderr_text();
        let text = if err.trim().is_empty() {
            self.stdout_text()
        } else {
            err
        };
        tail(text.trim(), 500)
    }

    /// `Ok(self)` on exit status 0, else [`ToolError::Failed`].
    pub fn success(self, tool: Tool) -> Result<Self> {
        if self.status.success() {
            Ok(self)
        } else {
            Err(self.failed(tool))
        }
    }

    /// A [`ToolError::Failed`] describing this exit.
    pub fn failed(&self, tool: Tool) -> ToolError {
        ToolError::Failed {
            tool: tool.binary(),
            status: self.status.to_string(),
            stderr_tail: self.diagnostic_tail(),
        }
    }
}

type Buffer = Arc<Mutex<Vec<u8>>>;

/// Locks a capture buffer; a poisoned lock still holds valid bytes (readers only append).
fn lock(buffer: &Buffer) -> std::sync::MutexGuard<'_, Vec<u8>> {
    buffer.lock().unwrap_or_else(|e| e.into_inner())
}

fn spawn_reader(mut source: impl Read + Send + 'static, buffer: Buffer) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut chunk = [0u8; 16 * 1024];
        loop {
            match source.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => {
                    let mut buf = lock(&buffer);
                    let room = MAX_CAPTURE.saturating_sub(buf.len());
                    buf.extend_from_slice(&chunk[..n.min(room)]);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
    })
}

/// Owns a spawned tool and its process group. Dropping it sends SIGTERM to the group, waits
/// briefly, sends SIGKILL, and reaps the tool — so no test leaves a tool running.
///
/// Stdout and stderr are captured by background threads and can be read while it runs.
#[derive(Debug)]
pub struct ProcessGuard {
    tool: Tool,
    child: Child,
    reaped: Option<ExitStatus>,
    stdout: Buffer,
    stderr: Buffer,
    readers: Vec<JoinHandle<()>>,
}

impl ProcessGuard {
    /// Spawns `cmd` in a new process group with stdout/stderr captured; stdin is a pipe if
    /// `stdin_piped` (take it with [`ProcessGuard::take_stdin`]), else `/dev/null`.
    pub fn spawn(tool: Tool, mut cmd: Command, stdin_piped: bool) -> Result<Self> {
        cmd.stdin(if stdin_piped {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
        tracing::debug!(command = ?cmd, "tools: spawn");
        let mut child = cmd.spawn().map_err(|source| ToolError::Spawn {
            tool: tool.binary(),
            source,
        })?;
        let stdout = Buffer::default();
        let stderr = Buffer::default();
        let mut readers = Vec::new();
        if let Some(out) = child.stdout.take() {
            readers.push(spawn_reader(out, stdout.clone()));
        }
        if let Some(err) = child.stderr.take() {
            readers.push(spawn_reader(err, stderr.clone()));
        }
        Ok(Self {
            tool,
            child,
            reaped: None,
            stdout,
            stderr,
            readers,
        })
    }

    /// The tool's PID, which is also its process-group id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The tool's stdin, if it was spawned with a pipe and not yet taken.
    pub fn take_stdin(&mut self) -> Option<ChildStdin> {
        self.child.stdin.take()
    }

    /// A copy of what the tool has written to stdout so far.
    pub fn stdout_so_far(&self) -> Vec<u8> {
        lock(&self.stdout).clone()
    }

    /// How many bytes the tool has written to stdout so far.
    pub fn stdout_len(&self) -> usize {
        lock(&self.stdout).len()
    }

    /// A copy of what the tool has written to stderr so far.
    pub fn stderr_so_far(&self) -> Vec<u8> {
        lock(&self.stderr).clone()
    }

    /// Whether the group leader has exited (without reaping it, so the group id stays ours).
    pub fn has_exited(&self) -> bool {
        self.reaped.is_some() || leader_exited(self.child.id())
    }

    /// Sends `signal` to the whole process group (no-op once the leader is reaped).
    pub fn signal_group(&self, signal: libc::c_int) {
        if self.reaped.is_some() {
            return;
        }
        let Ok(pgid) = libc::pid_t::try_from(self.child.id()) else {
            return;
        };
        // SAFETY: kill(2) takes plain integers and touches no memory. The group id is our
        // unreaped child's PID (it leads its own group), so it cannot have been recycled.
        unsafe {
            libc::kill(-pgid, signal);
        }
    }

    /// Waits up to `timeout` for the tool to exit by itself. On exit, stragglers in its group get
    /// SIGKILL and the output is returned; on timeout the group is killed and
    /// [`ToolError::TimedOut`] returned.
    pub fn wait_timeout(mut self, timeout: Duration) -> Result<CapturedOutput> {
        if self.poll_exit(timeout) {
            Ok(self.finish())
        } else {
            let tool = self.tool.binary();
            let output = self.finish();
            Err(ToolError::TimedOut {
                tool,
                timeout,
                stderr_tail: output.diagnostic_tail(),
            })
        }
    }

    /// Sends `signal` (e.g. SIGINT, so the tool prints its summary), waits up to `grace` for
    /// the exit, then kills whatever is left and returns the output.
    pub fn stop_with(mut self, signal: libc::c_int, grace: Duration) -> CapturedOutput {
        self.signal_group(signal);
        self.poll_exit(grace);
        self.finish()
    }

    /// Polls until the leader exits or `timeout` passes; true if it exited.
    fn poll_exit(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if self.has_exited() {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(POLL);
        }
    }

    /// Terminates the group (SIGTERM, grace, SIGKILL), reaps the leader, collects the output.
    fn finish(&mut self) -> CapturedOutput {
        let status = self.terminate();
        // The readers end when every writer of the pipes is gone; all of them were in the group,
        // which is dead now. Do not block forever if a process outside it inherited a pipe.
        let deadline = Instant::now() + Duration::from_secs(1);
        for reader in std::mem::take(&mut self.readers) {
            while !reader.is_finished() && Instant::now() < deadline {
                std::thread::sleep(POLL);
            }
            if reader.is_finished() {
                let _ = reader.join();
            }
        }
        CapturedOutput {
            status,
            stdout: std::mem::take(&mut *lock(&self.stdout)),
            stderr: std::mem::take(&mut *lock(&self.stderr)),
        }
    }

    fn terminate(&mut self) -> ExitStatus {
        if let Some(status) = self.reaped {
            return status;
        }
        if !self.has_exited() {
            self.signal_group(libc::SIGTERM);
            self.poll_exit(TERM_GRACE);
        }
        // Sweep the group even if the leader exited by itself: its children may still run.
        self.signal_group(libc::SIGKILL);
        let status = match self.child.wait() {
            Ok(status) => status,
            // wait(2) can only fail here if someone else reaped the child; report a kill.
            Err(_) => ExitStatus::from_raw(libc::SIGKILL),
        };
        self.reaped = Some(status);
        status
    }
}

impl Drop for ProcessGuard {
    fn drop(&mut self) {
        self.terminate();
    }
}

/// Whether process `pid` (our child) has exited: `/proc/PID/stat` says zombie or dead, or is
/// gone. Reading `/proc` rather than calling `waitpid` keeps the child unreaped.
fn leader_exited(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => matches!(proc_stat_fields(&stat).first(), Some(&"Z" | &"X" | &"x")),
        Err(_) => true,
    }
}

/// The fields of `/proc/PID/stat` after the `(comm)` field: state, ppid, pgrp, …
fn proc_stat_fields(stat: &str) -> Vec<&str> {
    // comm may contain spaces and parentheses; it ends at the last ')'.
    match stat.rfind(')') {
        Some(end) => stat[end + 1..].split_whitespace().collect(),
        None => Vec::new(),
    }
}

/// The PIDs of all live processes in process group `pgid`, from `/proc`.
fn group_members(pgid: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .is_some_and(|stat| {
                    let fields = proc_stat_fields(&stat);
                    fields.get(2).and_then(|g| g.parse::<u32>().ok()) == Some(pgid)
                        && !matches!(fields.first(), Some(&"Z" | &"X" | &"x"))
                })
        })
        .collect()
}

/// Pins every thread of every process in `guard`'s process group to `cpu`. Returns how many
/// threads had to be moved (0 once everything already sits on `cpu`).
///
/// Tools that set their own affinity after they start (trafgen pins its workers to CPU 0, 1, …
/// regardless of `taskset`) are corrected by calling this repeatedly while they run.
pub fn pin_process_group(guard: &ProcessGuard, cpu: usize) -> Result<usize> {
    let max_cpu = usize::try_from(libc::CPU_SETSIZE).unwrap_or(1024);
    if cpu >= max_cpu {
        return Err(ToolError::InvalidArgument(format!(
            "cpu {cpu} out of range"
        )));
    }
    if guard.reaped.is_some() {
        return Ok(0);
    }
    let mut moved = 0;
    for pid in group_members(guard.pid()) {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for tid in tasks.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<libc::pid_t>().ok()) {
            if set_affinity(tid, cpu)? {
                moved += 1;
            }
        }
    }
    Ok(moved)
}

/// Sets thread `tid` to run on `cpu` only; true if its mask was different before.
fn set_affinity(tid: libc::pid_t, cpu: usize) -> Result<bool> {
    // SAFETY: cpu_set_t is a plain bit array; all-zero is the valid empty set.
    let mut current: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `current` is a valid, writable cpu_set_t of the size we pass.
    let got = unsafe {
        libc::sched_getaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &mut current)
    };
    if got != 0 {
        // The thread exited between listing and now.
        return Ok(false);
    }
    // SAFETY: as above.
    let mut wanted: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu` < CPU_SETSIZE was checked by the caller, so CPU_SET stays inside the set.
    unsafe { libc::CPU_SET(cpu, &mut wanted) };
    // SAFETY: both references point to valid cpu_set_t values.
    if unsafe { libc::CPU_EQUAL(&current, &wanted) } {
        return Ok(false);
    }
    // SAFETY: `wanted` is a valid cpu_set_t of the size we pass; the kernel only reads it.
    let rc =
        unsafe { libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &wanted) };
    if rc != 0 {
        let err = std::io::Error::last_os_error();
        if err.raw_os_error() == Some(libc::ESRCH) {
            return Ok(false);
        }
        return Err(ToolError::Io {
            tool: "sched_setaffinity",
            source: err,
        });
    }
    Ok(true)
}

/// Runs `tool args…` in `ns` to completion within `timeout` and returns its output (any exit
/// status; callers decide what a non-zero exit means).
pub(crate) fn run_in_ns<I, S>(
    ns: &str,
    tool: Tool,
    args: I,
    timeout: Duration,
) -> Result<CapturedOutput>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let cmd = netns_command(ns, tool, args)?;
    ProcessGuard::spawn(tool, cmd, false)?.wait_timeout(timeout)
}

/// Runs `ip args…` (in the caller's namespace — pass `-n NS` to target another) within
/// `timeout`; non-zero exit is an error.
pub(crate) fn run_ip<I, S>(args: I, timeout: Duration) -> Result<CapturedOutput>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut cmd = Command::new(Tool::Ip.locate()?);
    cmd.args(args).env("LC_ALL", "C");
    ProcessGuard::spawn(Tool::Ip, cmd, false)?
        .wait_timeout(timeout)?
        .success(Tool::Ip)
}

/// Waits until something in `ns` listens on `proto` port `port` (checked with `ss` every 20 ms),
/// or fails with [`ToolError::NotListening`] after `timeout`. `server` names the server for the
/// error message (a tool's [`Tool::binary`], or e.g. `"rtlan recv"`).
pub fn wait_listening(
    ns: &str,
    server: &'static str,
    proto: Proto,
    port: u16,
    timeout: Duration,
) -> Result<()> {
    let flags = match proto {
        Proto::Tcp => "-Hlnt",
        Proto::Udp => "-Hlnu",
    };
    let filter = format!("sport = :{port}");
    let deadline = Instant::now() + timeout;
    loop {
        let out =
            run_in_ns(ns, Tool::Ss, [flags, &filter], Duration::from_secs(3))?.success(Tool::Ss)?;
        if !out.stdout_text().trim().is_empty() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(ToolError::NotListening {
                tool: server,
                ns: ns.to_string(),
                proto,
                port,
                timeout,
            });
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Guards a server tool: fails fast with its stderr if it exits before it listens.
pub(crate) fn start_server(
    ns: &str,
    tool: Tool,
    cmd: Command,
    proto: Proto,
    port: u16,
) -> Result<ProcessGuard> {
    let guard = ProcessGuard::spawn(tool, cmd, false)?;
    match wait_listening(ns, tool.binary(), proto, port, Duration::from_secs(3)) {
        Ok(()) => Ok(guard),
        Err(err) if guard.has_exited() => {
            let output = guard.wait_timeout(Duration::ZERO)?;
            if output.status.success() {
                Err(err)
            } else {
                Err(output.failed(tool))
            }
        }
        Err(err) => Err(err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut cmd = Command::new("/bin/sh");
        cmd.arg("-c").arg(script);
        cmd
    }

    fn alive(pid: u32) -> bool {
        !leader_exited(pid)
    }

    #[test]
    fn locate_finds_sh_tools_and_reports_missing_package() {
        assert!(
            Tool::Ip.locate().is_ok(),
            "iproute2 is a build prerequisite"
        );
        match Tool::Trafgen.debian_package() {
            "netsniff-ng" => {}
            other => panic!("wrong package {other}"),
        }
        let err = ToolError::Missing {
            tool: "trafgen",
            package: Tool::Trafgen.debian_package(),
        };
        assert!(err.to_string().contains("apt-get install netsniff-ng"));
    }

    #[test]
    fn bad_namespace_names_are_rejected() {
        for bad in ["", "a/b", "a b", "..", "x\n"] {
            assert!(
                matches!(check_ns(bad), Err(ToolError::InvalidArgument(_))),
                "{bad:?}"
            );
        }
        assert!(check_ns("rtl-tools1-a").is_ok());
    }

    #[test]
    fn output_and_status_are_captured() {
        let guard = ProcessGuard::spawn(Tool::Ip, sh("echo out; echo err >&2; exit 3"), false)
            .expect("spawn sh");
        let out = guard
            .wait_timeout(Duration::from_secs(5))
            .expect("sh exits");
        assert_eq!(out.stdout_text(), "out\n");
        assert_eq!(out.stderr_text(), "err\n");
        assert_eq!(out.status.code(), Some(3));
        assert!(matches!(
            out.success(Tool::Ip),
            Err(ToolError::Failed { stderr_tail, .. }) if stderr_tail == "err"
        ));
    }

    #[test]
    fn timeout_kills_and_reports() {
        let started = Instant::now();
        let guard = ProcessGuard::spawn(Tool::Ip, sh("echo partial >&2; exec sleep 30"), false)
            .expect("spawn sh");
        let pid = guard.pid();
        let err = guard
            .wait_timeout(Duration::from_millis(300))
            .expect_err("sleep 30 cannot finish in 300 ms");
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(
            matches!(&err, ToolError::TimedOut { stderr_tail, .. } if stderr_tail == "partial"),
            "{err:?}"
        );
        assert!(!alive(pid));
    }

    #[test]
    fn drop_kills_the_whole_group() {
        // The shell forks a background sleep: a grandchild in the same group.
        let guard = ProcessGuard::spawn(
            Tool::Ip,
            sh("trap '' TERM; sleep 30 & echo $!; while :; do sleep 0.1; done"),
            false,
        )
        .expect("spawn sh");
        let deadline = Instant::now() + Duration::from_secs(5);
        while guard.stdout_len() == 0 && Instant::now() < deadline {
            std::thread::sleep(POLL);
        }
        let text = String::from_utf8_lossy(&guard.stdout_so_far()).into_owned();
        let grandchild: u32 = text.trim().parse().expect("shell printed the PID");
        let leader = guard.pid();
        assert!(alive(grandchild) && alive(leader));
        drop(guard);
        // Everything in the group ignores SIGTERM, so this also proves the SIGKILL fallback.
        let deadline = Instant::now() + Duration::from_secs(2);
        while alive(grandchild) && Instant::now() < deadline {
            std::thread::sleep(POLL);
        }
        assert!(!alive(grandchild), "grandchild {grandchild} survived");
        assert!(!alive(leader), "leader {leader} survived");
    }

    #[test]
    fn pinning_moves_every_process_of_the_group() {
        if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
            eprintln!("skipping: needs two CPUs");
            return;
        }
        let guard = ProcessGuard::spawn(Tool::Taskset, sh("sleep 30 & echo $!; wait"), false)
            .expect("spawn sh");
        let deadline = Instant::now() + Duration::from_secs(5);
        while guard.stdout_len() == 0 && Instant::now() < deadline {
            std::thread::sleep(POLL);
        }
        let text = String::from_utf8_lossy(&guard.stdout_so_far()).into_owned();
        let grandchild: u32 = text.trim().parse().expect("shell printed the PID");
        let cpus_of = |pid: u32| {
            std::fs::read_to_string(format!("/proc/{pid}/status"))
                .expect("process alive")
                .lines()
                .find_map(|l| {
                    l.strip_prefix("Cpus_allowed_list:")
                        .map(|v| v.trim().to_string())
                })
                .expect("status has Cpus_allowed_list")
        };
        pin_process_group(&guard, 0).expect("pin");
        assert_eq!(cpus_of(guard.pid()), "0");
        assert_eq!(cpus_of(grandchild), "0");
        assert_eq!(pin_process_group(&guard, 1).expect("pin"), 2);
        assert_eq!(cpus_of(guard.pid()), "1");
        assert_eq!(cpus_of(grandchild), "1");
        // Nothing left to move.
        assert_eq!(pin_process_group(&guard, 1).expect("pin"), 0);
        assert!(matches!(
            pin_process_group(&guard, 1 << 20),
            Err(ToolError::InvalidArgument(_))
        ));
    }
}
