//! Which labs this process has built, and tearing them down on SIGINT/SIGTERM/SIGHUP.
//!
//! [`crate::Lab::up`] registers a lab before it creates anything and [`crate::down`] unregisters
//! it. Bring-up and tear-down hold one process-wide lock, so a signal arriving half-way through
//! `up` makes `up` stop at its next step and roll back, after which the signal thread removes
//! whatever is still registered and exits with status 130.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Lab name → PIDs of the switch processes this process started for it (to be reaped).
static REGISTRY: Mutex<BTreeMap<String, Vec<u32>>> = Mutex::new(BTreeMap::new());
static LIFECYCLE: Mutex<()> = Mutex::new(());
static SHUTTING_DOWN: AtomicBool = AtomicBool::new(false);
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// Signal cleanup could not be installed.
#[derive(Debug, thiserror::Error)]
pub enum SignalError {
    /// `pthread_sigmask` failed.
    #[error("blocking SIGINT/SIGTERM/SIGHUP: {0}")]
    Mask(std::io::Error),
    /// The signal thread could not be started.
    #[error("starting the signal thread: {0}")]
    Thread(std::io::Error),
}

/// Records that this process owns lab `name`.
pub(crate) fn register(name: &str) {
    REGISTRY
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .entry(name.to_string())
        .or_default();
}

/// Records that this process started child `pid` (a switch) for lab `name`.
pub(crate) fn add_child(name: &str, pid: u32) {
    REGISTRY
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .entry(name.to_string())
        .or_default()
        .push(pid);
}

/// Reaps those children of lab `name` that have exited, so they do not linger as zombies.
pub(crate) fn reap_children(name: &str) {
    let mut registry = REGISTRY.lock().unwrap_or_else(PoisonError::into_inner);
    let Some(children) = registry.get_mut(name) else {
        return;
    };
    children.retain(|&pid| {
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return false;
        };
        let mut status = 0;
        // SAFETY: waitpid(2) with WNOHANG only writes `status`, a valid local; `pid` is a child
        // this process spawned and has not waited for.
        let rc = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        rc == 0 // still running: keep it
    });
}

/// Forgets lab `name` (after `down`, or when it is deliberately kept).
pub(crate) fn unregister(name: &str) {
    REGISTRY
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .remove(name);
}

fn registered() -> Vec<String> {
    REGISTRY
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .keys()
        .cloned()
        .collect()
}

/// The process-wide bring-up/tear-down lock.
pub(crate) fn lifecycle() -> MutexGuard<'static, ()> {
    LIFECYCLE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Whether a termination signal has arrived; `up` checks this between steps.
pub(crate) fn shutting_down() -> bool {
    SHUTTING_DOWN.load(Ordering::Relaxed)
}

/// Blocks SIGINT, SIGTERM and SIGHUP in the calling thread and starts a thread that waits for
/// them; on the first one it tears down every lab this process has registered (printing what it
/// removed to stderr) and exits with status 130.
///
/// Call it from `main` before any other thread exists: threads inherit the signal mask of the
/// thread that creates them, and a thread that does not block these signals would receive them
/// with their default action (terminate without cleanup). Child processes are not affected: the
/// standard library resets the signal mask in every child it spawns. Calling it again is a no-op.
pub fn install_signal_cleanup() -> Result<(), SignalError> {
    if INSTALLED.swap(true, Ordering::SeqCst) {
        return Ok(());
    }
    // SAFETY: `sigset_t` is plain data; `sigemptyset` initialises it before any other use.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid, exclusively borrowed sigset_t; the signal numbers are valid.
    let rc = unsafe {
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::sigaddset(&mut set, libc::SIGHUP);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut())
    };
    if rc != 0 {
        INSTALLED.store(false, Ordering::SeqCst);
        return Err(SignalError::Mask(std::io::Error::from_raw_os_error(rc)));
    }
    std::thread::Builder::new()
        .name("rtlan-lab-signals".to_string())
        .spawn(move || wait_and_clean_up(set))
        .map_err(SignalError::Thread)?;
    Ok(())
}

fn wait_and_clean_up(set: libc::sigset_t) {
    let mut signal: libc::c_int = 0;
    loop {
        // SAFETY: `set` is an initialised sigset_t and `signal` a valid out-pointer.
        let rc = unsafe { libc::sigwait(&set, &mut signal) };
        if rc == 0 {
            break;
        }
    }
    SHUTTING_DOWN.store(true, Ordering::SeqCst);
    eprintln!("rtlan: caught signal {signal}, tearing down labs");
    // Waits for a running `up` to notice the flag and roll back; held until exit so nothing new
    // is built after the clean-up.
    let _guard = lifecycle();
    for name in registered() {
        match crate::down::down_locked(&name) {
            Ok(report) => eprintln!("{report}"),
            Err(e) => eprintln!("rtlan: tearing down lab `{name}`: {e}"),
        }
    }
    std::process::exit(130);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn register_and_unregister() {
        register("regtestx1");
        assert!(registered().contains(&"regtestx1".to_string()));
        unregister("regtestx1");
        assert!(!registered().contains(&"regtestx1".to_string()));
    }
}
