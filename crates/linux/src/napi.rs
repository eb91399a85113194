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
//!
//! # Surviving a killed switch
//!
//! Both settings outlive the process: a switch killed with SIGKILL (or crashed) leaves its ports
//! threaded with GRO on, and the next switch would take that for the port's own setting and keep
//! it for ever. So before changing a port the guard writes what it found to a record,
//! [`RECORD_DIR`]`/<network namespace inode>-<ifname>.json` with the interface's index, and
//! removes it once it has put the settings back. [`recover`] — called by [`take_ports`], which
//! the switch and the router call for all their ports before they open any, whatever their own
//! configuration — puts back what a record names
//! (if the interface is still the one recorded: same index in the same namespace) and removes
//! it, with a warning. A record that cannot be written is a warning, not a failure: the daemon
//! then runs as before, without crash recovery.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Where the records of changed ports live (shared by every network namespace, as `/run` is).
pub const RECORD_DIR: &str = "/run/rtlan/napi";

/// A port switched to threaded receive; restores what it changed on drop.
#[derive(Debug)]
pub struct ThreadedReceive {
    ifname: String,
    /// Whether the port was threaded before.
    was_threaded: bool,
    /// GRO as it was, if this guard turned it on.
    gro_was_off: bool,
    /// The record of what it changed, removed once restored (`None`: could not be written).
    record: Option<PathBuf>,
}

/// What a port's settings were before a switch changed them (the record's JSON).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Record {
    ifname: String,
    /// The interface's index when recorded: a port deleted and created again under the same
    /// name is another interface, with settings of its own.
    ifindex: u32,
    threaded: bool,
    gro: bool,
}

/// The record's path for `ifname` in the caller's network namespace under `dir`.
fn record_path(dir: &Path, ifname: &str) -> io::Result<PathBuf> {
    let netns = std::fs::metadata("/proc/self/ns/net")?.ino();
    Ok(dir.join(format!("{netns}-{ifname}.json")))
}

fn read_ifindex(ifname: &str) -> io::Result<u32> {
    let text = std::fs::read_to_string(format!("/sys/class/net/{ifname}/ifindex"))?;
    text.trim()
        .parse()
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("ifindex: {e}")))
}

/// Reads the record at `path`: `Ok(None)` if there is none.
fn read_record(path: &Path) -> io::Result<Option<Record>> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Writes `record` to `path` atomically (a temporary file renamed over it).
fn write_record(path: &Path, record: &Record) -> io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, serde_json::to_vec(record).map_err(io::Error::other)?)?;
    std::fs::rename(&tmp, path)
}

/// Puts back the settings a switch that did not stop cleanly left on `ifname` (see the module
/// doc) and removes its record. Returns whether there was a record for this interface. Every
/// failure is a warning: a port the switch cannot restore still forwards.
pub fn recover(ifname: &str) -> bool {
    recover_in(Path::new(RECORD_DIR), ifname)
}

/// What a switch or router does with its ports at start: [`recover`] each, then threaded
/// receive for those marked `true`. The guards restore their ports when dropped; on failure the
/// port's name and the error, with every port enabled so far restored.
pub fn take_ports<'a>(
    ports: impl IntoIterator<Item = (&'a str, bool)> + Clone,
) -> Result<Vec<ThreadedReceive>, (String, io::Error)> {
    for (ifname, _) in ports.clone() {
        recover(ifname);
    }
    let mut threaded = Vec::new();
    for (ifname, _) in ports.into_iter().filter(|(_, on)| *on) {
        let guard = ThreadedReceive::enable_in(Path::new(RECORD_DIR), ifname)
            .map_err(|e| (ifname.to_string(), e))?;
        threaded.push(guard);
        tracing::info!(ifname, "threaded receive");
    }
    Ok(threaded)
}

fn recover_in(dir: &Path, ifname: &str) -> bool {
    let path = match record_path(dir, ifname) {
        Ok(p) => p,
        Err(e) => {
            tracing::warn!(ifname, error = %e, "cannot name this namespace's port records");
            return false;
        }
    };
    let record = match read_record(&path) {
        Ok(Some(r)) => r,
        Ok(None) => return false,
        Err(e) => {
            tracing::warn!(ifname, path = %path.display(), error = %e, "unreadable port record removed");
            let _ = std::fs::remove_file(&path);
            return false;
        }
    };
    let _ = std::fs::remove_file(&path);
    match read_ifindex(ifname) {
        Ok(index) if index == record.ifindex && record.ifname == ifname => {}
        _ => {
            tracing::info!(ifname, "port record of an interface that is gone removed");
            return false;
        }
    }
    let mut failed = Vec::new();
    if read_threaded(ifname).ok() != Some(record.threaded) {
        if let Err(e) = write_threaded(ifname, record.threaded) {
            failed.push(format!("threaded: {e}"));
        }
    }
    match socket().and_then(|sock| {
        let fd = sock.as_raw_fd();
        if crate::ethtool::gro(fd, ifname)? != record.gro {
            crate::ethtool::set_gro(fd, ifname, record.gro)?;
        }
        Ok(())
    }) {
        Ok(()) => {}
        Err(e) => failed.push(format!("GRO: {e}")),
    }
    if failed.is_empty() {
        tracing::warn!(
            ifname,
            threaded = record.threaded,
            gro = record.gro,
            "a switch that did not stop cleanly left threaded receive on this port; put back"
        );
    } else {
        tracing::warn!(ifname, failures = %failed.join("; "),
            "a switch that did not stop cleanly left threaded receive on this port; not all put back");
    }
    true
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
    /// namespace, whose `/sys` must be mounted for it, as `ip netns exec` does), recording what
    /// it found under `dir` first; [`take_ports`] has recovered the port before. On failure
    /// nothing stays changed.
    fn enable_in(dir: &Path, ifname: &str) -> io::Result<ThreadedReceive> {
        let was_threaded = read_threaded(ifname)?;
        let sock = socket()?;
        let fd = sock.as_raw_fd();
        let gro_was_off = !crate::ethtool::gro(fd, ifname)?;
        let record = if was_threaded && !gro_was_off {
            None // nothing to change, nothing to record
        } else {
            let rec = Record {
                ifname: ifname.to_string(),
                ifindex: read_ifindex(ifname)?,
                threaded: was_threaded,
                gro: !gro_was_off,
            };
            match record_path(dir, ifname).and_then(|p| write_record(&p, &rec).map(|()| p)) {
                Ok(p) => Some(p),
                Err(e) => {
                    tracing::warn!(ifname, error = %e,
                        "cannot record the port's receive settings: if this switch is killed, \
                         they stay changed");
                    None
                }
            }
        };
        let undo_record = |record: &Option<PathBuf>| {
            if let Some(p) = record {
                let _ = std::fs::remove_file(p);
            }
        };
        if gro_was_off {
            if let Err(e) = crate::ethtool::set_gro(fd, ifname, true) {
                undo_record(&record);
                return Err(e);
            }
        }
        if !was_threaded {
            if let Err(e) = write_threaded(ifname, true) {
                if gro_was_off {
                    let _ = crate::ethtool::set_gro(fd, ifname, false);
                }
                undo_record(&record);
                return Err(e);
            }
        }
        Ok(ThreadedReceive {
            ifname: ifname.to_string(),
            was_threaded,
            gro_was_off,
            record,
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
        if let Some(p) = &self.record {
            let _ = std::fs::remove_file(p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh directory for one test's records, removed when dropped.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(tag: &str) -> TempDir {
            let p = std::env::temp_dir().join(format!("rtlan-napi-{tag}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&p);
            std::fs::create_dir_all(&p).expect("temp dir");
            TempDir(p)
        }

        fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn a_missing_interface_is_an_error_and_changes_nothing() {
        let dir = TempDir::new("missing");
        let err =
            ThreadedReceive::enable_in(dir.path(), "rtl-no-such-if").expect_err("no interface");
        assert_eq!(err.kind(), io::ErrorKind::NotFound, "{err}");
        assert_eq!(std::fs::read_dir(dir.path()).expect("dir").count(), 0);
    }

    #[test]
    fn records_round_trip_and_are_named_by_namespace_and_port() {
        let dir = TempDir::new("round-trip");
        let path = record_path(dir.path(), "p0").expect("path");
        let netns = std::fs::metadata("/proc/self/ns/net").expect("netns").ino();
        assert_eq!(path, dir.path().join(format!("{netns}-p0.json")));
        assert_eq!(read_record(&path).expect("none yet"), None);
        let rec = Record {
            ifname: "p0".into(),
            ifindex: 7,
            threaded: false,
            gro: true,
        };
        write_record(&path, &rec).expect("written");
        assert_eq!(read_record(&path).expect("read"), Some(rec));
        assert!(!path.with_extension("json.tmp").exists());
    }

    #[test]
    fn a_record_of_a_vanished_or_garbled_port_is_removed_and_nothing_is_touched() {
        let dir = TempDir::new("stale");
        let path = record_path(dir.path(), "rtl-no-such-if").expect("path");
        let rec = Record {
            ifname: "rtl-no-such-if".into(),
            ifindex: 4242,
            threaded: false,
            gro: false,
        };
        write_record(&path, &rec).expect("written");
        assert!(!recover_in(dir.path(), "rtl-no-such-if"));
        assert!(!path.exists(), "stale record removed");
        std::fs::write(&path, b"{\"ifname\": 3").expect("garbage");
        assert!(!recover_in(dir.path(), "rtl-no-such-if"));
        assert!(!path.exists(), "garbled record removed");
        // The loopback interface exists, but under another index than recorded: another
        // interface by the same name, whose settings are its own.
        let lo = record_path(dir.path(), "lo").expect("path");
        let rec = Record {
            ifname: "lo".into(),
            ifindex: u32::MAX,
            threaded: true,
            gro: false,
        };
        write_record(&lo, &rec).expect("written");
        assert!(!recover_in(dir.path(), "lo"));
        assert!(!lo.exists());
    }
}
