//! One stop flag for the process: the long-running subcommands (switch, rtcd, bwm, reserve,
//! send, recv) turn the signals they name into a flag their loops poll, so that they release
//! what they hold and clean up instead of dying mid-way. The daemons turn SIGHUP into a reload
//! request instead (`rtlan_linux::service`).

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use anyhow::Context;

static STOP: AtomicBool = AtomicBool::new(false);
/// The last signal that set [`STOP`] and was not yet taken ([`take_signal`]); 0 = none.
static LAST: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    LAST.store(sig, Ordering::Relaxed);
    STOP.store(true, Ordering::Relaxed);
}

/// The signal that last arrived since the previous call, if any (for a command that passes
/// signals on to a child instead of stopping: `lab exec`).
pub(crate) fn take_signal() -> Option<libc::c_int> {
    match LAST.swap(0, Ordering::Relaxed) {
        0 => None,
        sig => Some(sig),
    }
}

extern "C" fn on_hup(_: libc::c_int) {
    rtlan_linux::service::request_reload();
}

/// Makes SIGHUP ask the running daemon to reload its configuration
/// ([`rtlan_linux::service::take_reload`]) instead of stopping it.
pub(crate) fn reload_on_hup() -> anyhow::Result<()> {
    install(&[libc::SIGHUP], on_hup)
}

/// Makes each of `signals` set the returned flag instead of killing the process.
pub(crate) fn stop_on(signals: &[libc::c_int]) -> anyhow::Result<&'static AtomicBool> {
    install(signals, on_signal)?;
    Ok(&STOP)
}

fn install(signals: &[libc::c_int], handler: extern "C" fn(libc::c_int)) -> anyhow::Result<()> {
    for &sig in signals {
        // SAFETY: `on_signal` only stores to an atomic, which is async-signal-safe; the sigaction
        // struct is zero-initialised and then fully set up before the call.
        let rc = unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = handler as usize;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(sig, &action, std::ptr::null_mut())
        };
        if rc != 0 {
            return Err(std::io::Error::last_os_error()).context("installing signal handler");
        }
    }
    Ok(())
}
