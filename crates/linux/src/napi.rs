//! Threaded receive: a port's NAPI poll in a kernel thread of its own (`napi/IFNAME-ID`,
//! `/sys/class/net/IFNAME/threaded`) instead of the softirq of whichever CPU raised it.
//!
//! Why (docs/threads.md "Threaded receive"): on the best-effort fast path (docs/fastpath.md) a
//! frame is forwarded — and on a veth, delivered through the receiving host's whole stack — in
//! the receive of the port it arrived on. Without a thread that receive runs in the sending
//! CPU's softirq, so one sender's flood is forwarded on the one CPU that also generates it, as
//! the Linux bridge does. With a thread the scheduler places the port's receive on another CPU,
//! and the kernel pushes back on the sender when the thread falls behind instead of dropping.
//! EtheReal §4.3 measures the switch's forwarding rate with minimum-size frames; this is how
//! rtlan spreads it over CPUs without touching the real-time path's single data-plane thread.
//!
//! A veth has NAPI only with GRO on (or an XDP program), so GRO is turned on as well; the
//! switch's ports already take GRO's super-frames whole and account them as the wire frames
//! they become (docs/offload.md). Both settings are put back as they were when the guard drops.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;

/// A port switched to threaded receive; restores what it changed on drop.
#[derive(Debug)]
pub struct ThreadedReceive {
    ifname: String,
    /// Whether the port was threaded before.
    was_threaded: bool,
    /// GRO as it was, if this guard turned it on.
    gro_was_off: bool,
}

fn threaded_path(ifname: &str) -> PathBuf {
    PathBuf::from(format!("/sys/class/net/{ifname}/threaded"))
}

fn socket() -> io::Result<OwnedFd> {
    // SAFETY: plain system call; the result is checked.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor nobody else owns.
    Ok(unsafe { std::os::fd::FromRawFd::from_raw_fd(fd) })
}

fn read_threaded(ifname: &str) -> io::Result<bool> {
    let text = std::fs::read_to_string(threaded_path(ifname))?;
    Ok(text.trim() != "0")
}

fn write_threaded(ifname: &str, on: bool) -> io::Result<()> {
    std::fs::write(threaded_path(ifname), if on { "1" } else { "0" })
}

impl ThreadedReceive {
    /// Turns GRO (if off) and threaded NAPI on for `ifname` (in the caller's network
    /// namespace, whose `/sys` must be mounted for it, as `ip netns exec` does). On failure
    /// nothing stays changed.
    pub fn enable(ifname: &str) -> io::Result<ThreadedReceive> {
        let was_threaded = read_threaded(ifname)?;
        let sock = socket()?;
        let fd = sock.as_raw_fd();
        let gro_was_off = !crate::ethtool::gro(fd, ifname)?;
        if gro_was_off {
            crate::ethtool::set_gro(fd, ifname, true)?;
        }
        if !was_threaded {
            if let Err(e) = write_threaded(ifname, true) {
                if gro_was_off {
                    let _ = crate::ethtool::set_gro(fd, ifname, false);
                }
                return Err(e);
            }
        }
        Ok(ThreadedReceive {
            ifname: ifname.to_string(),
            was_threaded,
            gro_was_off,
        })
    }

    /// The port.
    pub fn ifname(&self) -> &str {
        &self.ifname
    }
}

impl Drop for ThreadedReceive {
    fn drop(&mut self) {
        // The interface may be gone (a lab torn down first): nothing to restore then.
        if !self.was_threaded && threaded_path(&self.ifname).exists() {
            if let Err(e) = write_threaded(&self.ifname, false) {
                tracing::warn!(ifname = %self.ifname, error = %e, "could not end threaded receive");
            }
        }
        if self.gro_was_off {
            if let Ok(sock) = socket() {
                if let Err(e) = crate::ethtool::set_gro(sock.as_raw_fd(), &self.ifname, false) {
                    if e.raw_os_error() != Some(libc::ENODEV) {
                        tracing::warn!(ifname = %self.ifname, error = %e, "could not turn GRO back off");
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_interface_is_an_error_and_changes_nothing() {
        let err = ThreadedReceive::enable("rtl-no-such-if").expect_err("no such interface");
        assert_eq!(err.kind(), io::ErrorKind::NotFound, "{err}");
    }
}
