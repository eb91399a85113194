//! Which labs this process has built, and tearing them down on SIGINT/SIGTERM/SIGHUP.
//!
//! [`crate::Lab::up`] registers a lab before it creates anything and [`crate::down`] unregisters
//! it. Bring-up and tear-down hold one process-wide lock, so a signal arriving half-way through
//! `up` makes `up` stop at its next step and roll back, after which the signal thread removes
//! whatever is still registered and exits with status 130.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Lab name → PIDs of the switch processes this process started for it (to be reaped).
static REGISTRY: Mutex<BTreeMap<String, Vec<u32>>> = Mutex::new(BTreeMap::new());
static LIFECYCLE: Mutex<()> = Mutex::new(());
static SHUTTING_DOWN: AtomicBool = AtomicBool::new(false);
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// Signal cleanup could not be installed.
#[derive(Debug, thiserror::Error)]
pub enum SignalError {
    /// The self-pipe could not be created.
    #[error("creating the signal pipe: {0}")]
    Pipe(std::io::Error),
    /// `sigaction` failed.
    #[error("installing the SIGINT/SIGTERM/SIGHUP handler: {0}")]
    Handler(std::io::Error),
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

/// Write end of the self-pipe the signal handler writes to (-1 until installed).
static SIGNAL_PIPE: AtomicI32 = AtomicI32::new(-1);

extern "C" fn on_signal(signal: libc::c_int) {
    let fd = SIGNAL_PIPE.load(Ordering::Relaxed);
    let byte = u8::try_from(signal).unwrap_or(u8::MAX);
    // SAFETY: write(2) is async-signal-safe; `byte` is a valid one-byte buffer. A failed write
    // (pipe full after repeated signals) loses nothing: one byte already wakes the thread.
    unsafe { libc::write(fd, std::ptr::addr_of!(byte).cast(), 1) };
}

/// Catches SIGINT, SIGTERM and SIGHUP and starts a thread that, on the first one, tears down every
/// lab this process has registered (printing what it removed to stderr) and exits with status 130.
///
/// The handler only writes the signal number to a pipe (the self-pipe trick); the thread does the
/// work. Nothing is blocked, so child processes (switches, traffic tools) start with the default
/// signal mask, and exec(2) resets the caught signals to their default action in them. Handlers are
/// installed with `SA_RESTART`, so interrupted system calls resume. Calling it again is a no-op.
pub fn install_signal_cleanup() -> Result<(), SignalError> {
    if INSTALLED.swap(true, Ordering::SeqCst) {
        return Ok(());
    }
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` is a valid array of two ints for pipe2(2) to fill.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        INSTALLED.store(false, Ordering::SeqCst);
        return Err(SignalError::Pipe(std::io::Error::last_os_error()));
    }
    let [read_fd, write_fd] = fds;
    SIGNAL_PIPE.store(write_fd, Ordering::SeqCst);
    std::thread::Builder::new()
        .name("rtlan-lab-signals".to_string())
        .spawn(move || wait_and_clean_up(read_fd))
        .map_err(SignalError::Thread)?;
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: the sigaction struct is zeroed, then its handler and empty mask are set before
        // use; `on_signal` is async-signal-safe (one write(2)).
        let rc = unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut())
        };
        if rc != 0 {
            return Err(SignalError::Handler(std::io::Error::last_os_error()));
        }
    }
    Ok(())
}

fn wait_and_clean_up(read_fd: libc::c_int) {
    let mut signal: u8 = 0;
    loop {
        // SAFETY: `signal` is a valid one-byte buffer; `read_fd` is the pipe's read end, owned by
        // this thread for the life of the process.
        let n = unsafe { libc::read(read_fd, std::ptr::addr_of_mut!(signal).cast(), 1) };
        if n == 1 {
            break;
        }
        if n == 0 {
            return; // the write end is gone: nothing can signal any more
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
