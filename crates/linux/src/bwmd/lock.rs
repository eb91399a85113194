//! The bandwidth manager's hold on its state (issue 15: "a second manager on the same state
//! refuses to start"). Two managers journaling into one file would each admit against half the
//! bookings — the guarantee gone without an error. The manager takes an exclusive `flock` on
//! `<state>.lock` before anything else and keeps it while it runs; the kernel releases it when
//! the process ends however it ends, so a crash never leaves a stale lock. The holder writes
//! its PID into the file, for the refusal to name it.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// Why the state cannot be held.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another process holds it.
    #[error(
        "the state {state} is in use by another bandwidth manager{}: one manager per state \
         (stop it, or give this one its own --state)",
        match holder { Some(pid) => format!(" (pid {pid})"), None => String::new() }
    )]
    Held {
        /// The state file.
        state: String,
        /// The holder's PID, as it wrote it.
        holder: Option<u32>,
    },
    /// The lock file cannot be created or locked.
    #[error("locking {path}: {source}")]
    Io {
        /// The lock file.
        path: String,
        /// The system error.
        source: std::io::Error,
    },
}

/// The exclusive hold on one state file; released when dropped (or the process ends).
#[derive(Debug)]
pub struct StateLock {
    _file: File,
    path: PathBuf,
}

impl StateLock {
    /// The lock file of `state`: `<state>.lock` beside it.
    pub fn path_for(state: &Path) -> PathBuf {
        let mut name = state.as_os_str().to_os_string();
        name.push(".lock");
        PathBuf::from(name)
    }

    /// Takes the hold on `state` (creating its directory if needed), or says who has it.
    pub fn acquire(state: &Path) -> Result<StateLock, LockError> {
        let path = StateLock::path_for(state);
        let io = |source| LockError::Io {
            path: path.display().to_string(),
            source,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io)?;
        // SAFETY: flock(2) on a descriptor this function owns.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc != 0 {
            let err = std::io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
                let mut text = String::new();
                let _ = file.read_to_string(&mut text);
                return Err(LockError::Held {
                    state: state.display().to_string(),
                    holder: text.trim().parse().ok(),
                });
            }
            return Err(io(err));
        }
        file.set_len(0).map_err(io)?;
        file.rewind().map_err(io)?;
        writeln!(file, "{}", std::process::id()).map_err(io)?;
        Ok(StateLock { _file: file, path })
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_hold_on_the_same_state_is_refused_naming_the_holder() {
        let dir = std::env::temp_dir().join(format!("rtlan-bwmlock-{}", std::process::id()));
        let state = dir.join("sub").join("bwm-state.json");
        let first = StateLock::acquire(&state).expect("first");
        assert_eq!(first.path(), dir.join("sub").join("bwm-state.json.lock"));
        // flock locks are per open file description: a second open in this process conflicts.
        match StateLock::acquire(&state) {
            Err(LockError::Held { holder, .. }) => assert_eq!(holder, Some(std::process::id())),
            other => panic!("expected Held, got {other:?}"),
        }
        let message = StateLock::acquire(&state).expect_err("held").to_string();
        assert!(
            message.contains(&format!("pid {}", std::process::id())),
            "{message}"
        );
        drop(first);
        let again = StateLock::acquire(&state).expect("free once dropped");
        drop(again);
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }
}
