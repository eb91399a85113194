//! Tearing a lab down from its namespace names alone, so it works after a crash, without
//! `state.json`, and any number of times: for every namespace `rtl-<lab>-*`, stop every process in
//! it (SIGTERM, up to 2 s, then SIGKILL), delete the namespace (which destroys its veths and
//! qdiscs), then remove `/run/rtlan/labs/<lab>/`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::cmd::{self, CmdError};
use crate::registry;

/// How long processes get to exit after SIGTERM.
const TERM_GRACE: Duration = Duration::from_secs(2);
/// How long to wait for SIGKILLed processes to disappear.
const KILL_GRACE: Duration = Duration::from_secs(1);
const POLL: Duration = Duration::from_millis(50);

/// A lab could not be (completely) removed.
#[derive(Debug, thiserror::Error)]
pub enum DownError {
    /// The lab name is not `[a-z0-9]{1,10}`.
    #[error("bad lab name `{0}`: lab names are 1 to 10 lowercase letters or digits")]
    InvalidName(String),
    /// The namespaces could not be listed.
    #[error("listing namespaces: {0}")]
    List(#[source] CmdError),
    /// Some steps failed; the report says what was removed, `problems` what was not.
    #[error("{report}; left behind: {}", problems.join("; "))]
    Incomplete {
        /// What was removed.
        report: Box<DownReport>,
        /// What failed.
        problems: Vec<String>,
    },
}

/// What [`down`] removed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DownReport {
    /// The lab.
    pub lab: String,
    /// Namespaces deleted.
    pub namespaces: Vec<String>,
    /// Processes that exited after SIGTERM.
    pub terminated: Vec<u32>,
    /// Processes that had to be sent SIGKILL.
    pub killed: Vec<u32>,
    /// The state directory, if one was removed.
    pub state_dir: Option<PathBuf>,
}

impl DownReport {
    /// True if there was nothing to remove.
    pub fn is_empty(&self) -> bool {
        self.namespaces.is_empty()
            && self.terminated.is_empty()
            && self.killed.is_empty()
            && self.state_dir.is_none()
    }
}

impl std::fmt::Display for DownReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_empty() {
            return write!(f, "lab `{}`: nothing to remove", self.lab);
        }
        write!(f, "lab `{}`:", self.lab)?;
        let mut sep = " ";
        let list = |v: &[u32]| v.iter().map(u32::to_string).collect::<Vec<_>>().join(", ");
        if !self.terminated.is_empty() {
            write!(f, "{sep}stopped pid {}", list(&self.terminated))?;
            sep = "; ";
        }
        if !self.killed.is_empty() {
            write!(f, "{sep}killed pid {} (SIGKILL)", list(&self.killed))?;
            sep = "; ";
        }
        if !self.namespaces.is_empty() {
            write!(f, "{sep}removed namespaces {}", self.namespaces.join(", "))?;
            sep = "; ";
        }
        if let Some(dir) = &self.state_dir {
            write!(f, "{sep}removed {}", dir.display())?;
        }
        Ok(())
    }
}

/// Removes lab `name`: every namespace `rtl-<name>-*` with all processes in it, and its state
/// directory. Needs no `state.json`; idempotent (a second call reports nothing to remove).
pub fn down(name: &str) -> Result<DownReport, DownError> {
    let _guard = registry::lifecycle();
    down_locked(name)
}

/// [`down`] for callers that already hold the lifecycle lock.
pub(crate) fn down_locked(name: &str) -> Result<DownReport, DownError> {
    if !crate::valid_lab_name(name) {
        return Err(DownError::InvalidName(name.to_string()));
    }
    let namespaces = crate::lab_namespaces(name).map_err(DownError::List)?;
    let mut report = DownReport {
        lab: name.to_string(),
        ..DownReport::default()
    };
    let mut problems = Vec::new();

    stop_processes(name, &namespaces, &mut report, &mut problems);
    for ns in &namespaces {
        match cmd::ip(&["netns", "del", ns]) {
            Ok(_) => report.namespaces.push(ns.clone()),
            Err(e) => problems.push(e.to_string()),
        }
    }
    let dir = crate::state::state_dir(name);
    if dir.exists() {
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => report.state_dir = Some(dir),
            Err(e) => problems.push(format!("removing {}: {e}", dir.display())),
        }
    }
    if problems.is_empty() {
        registry::unregister(name);
        tracing::info!(%report, "lab down");
        Ok(report)
    } else {
        Err(DownError::Incomplete {
            report: Box::new(report),
            problems,
        })
    }
}

/// PIDs of every process in `namespaces`, except this process.
fn pids_in(namespaces: &[String], problems: &mut Vec<String>) -> Vec<u32> {
    let me = std::process::id();
    let mut pids = Vec::new();
    for ns in namespaces {
        match cmd::netns_pids(ns) {
            Ok(p) => pids.extend(p.into_iter().filter_map(|p| u32::try_from(p).ok())),
            Err(e) => problems.push(e.to_string()),
        }
    }
    pids.retain(|&p| p != me && p > 1);
    pids.sort_unstable();
    pids.dedup();
    pids
}

fn signal(pid: u32, sig: libc::c_int) {
    if let Ok(pid) = libc::pid_t::try_from(pid) {
        // SAFETY: kill(2) has no memory-safety preconditions; `pid` is a positive process id
        // that was listed in one of this lab's namespaces.
        unsafe {
            libc::kill(pid, sig);
        }
    }
}

/// Waits until none of `namespaces` holds a process, or `grace` passes; returns the survivors.
/// Meanwhile reaps the switch processes this process started, which would otherwise stay
/// zombies.
fn wait_empty(name: &str, namespaces: &[String], grace: Duration) -> Vec<u32> {
    let deadline = Instant::now() + grace;
    loop {
        registry::reap_children(name);
        let mut ignored = Vec::new();
        let left = pids_in(namespaces, &mut ignored);
        if left.is_empty() || Instant::now() >= deadline {
            return left;
        }
        std::thread::sleep(POLL);
    }
}

fn stop_processes(
    name: &str,
    namespaces: &[String],
    report: &mut DownReport,
    problems: &mut Vec<String>,
) {
    let pids = pids_in(namespaces, problems);
    if pids.is_empty() {
        registry::reap_children(name);
        return;
    }
    for &pid in &pids {
        signal(pid, libc::SIGTERM);
    }
    let left = wait_empty(name, namespaces, TERM_GRACE);
    report.terminated = pids.iter().copied().filter(|p| !left.contains(p)).collect();
    if left.is_empty() {
        return;
    }
    for &pid in &left {
        signal(pid, libc::SIGKILL);
    }
    let survivors = wait_empty(name, namespaces, KILL_GRACE);
    report.killed = left
        .iter()
        .copied()
        .filter(|p| !survivors.contains(p))
        .collect();
    // Processes that appeared after the first listing got no SIGTERM but are in `left`: they
    // were sent SIGKILL with the others.
    if !survivors.is_empty() {
        problems.push(format!(
            "processes {survivors:?} survived SIGKILL (uninterruptible sleep?); their namespaces \
             disappear when they exit"
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_text() {
        let mut r = DownReport {
            lab: "x".into(),
            ..DownReport::default()
        };
        assert_eq!(r.to_string(), "lab `x`: nothing to remove");
        r.namespaces = vec!["rtl-x-a".into(), "rtl-x-s1".into()];
        r.terminated = vec![12];
        r.state_dir = Some("/run/rtlan/labs/x".into());
        assert_eq!(
            r.to_string(),
            "lab `x`: stopped pid 12; removed namespaces rtl-x-a, rtl-x-s1; removed \
             /run/rtlan/labs/x"
        );
    }

    #[test]
    fn refuses_bad_names_before_touching_anything() {
        // `*` or `-` in a name would widen the namespace prefix match to other labs.
        for bad in ["", "a-b", "UPPER", "abcdefghijk", "x*"] {
            assert!(matches!(down(bad), Err(DownError::InvalidName(_))), "{bad}");
        }
    }
}
