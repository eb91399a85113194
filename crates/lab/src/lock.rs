//! One timing-sensitive lab at a time (DESIGN.md §7): an exclusive `flock` on
//! `/run/rtlan/lab.lock`, held across processes (test binaries run in parallel) until dropped.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;

/// Path of the lock file.
pub const LOCK_PATH: &str = "/run/rtlan/lab.lock";

/// The serial lock could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// The lock file could not be created or opened.
    #[error("opening {path}: {source}")]
    Open {
        /// The lock file.
        path: String,
        /// The operating-system error.
        source: std::io::Error,
    },
    /// `flock` failed.
    #[error("locking {path}: {source}")]
    Flock {
        /// The lock file.
        path: String,
        /// The operating-system error.
        source: std::io::Error,
    },
}

/// Holds the serial lab lock until dropped.
#[derive(Debug)]
pub struct LabLock {
    // Closing the file releases the flock.
    _file: File,
}

/// Waits for and takes the serial lab lock. Lab tests that measure timing hold it for their whole
/// run so that they never share the machine with each other.
pub fn serial_lock() -> Result<LabLock, LockError> {
    lock_file(Path::new(LOCK_PATH))
}

fn lock_file(path: &Path) -> Result<LabLock, LockError> {
    let shown = path.display().to_string();
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|source| LockError::Open {
            path: shown.clone(),
            source,
        })?;
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(|source| LockError::Open {
            path: shown.clone(),
            source,
        })?;
    loop {
        // SAFETY: the descriptor belongs to `file`, which is open for the duration of the call.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
        if rc == 0 {
            return Ok(LabLock { _file: file });
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(LockError::Flock {
                path: shown,
                source: err,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_locked(path: &Path) -> bool {
        let f = File::open(path).unwrap();
        // SAFETY: the descriptor belongs to `f`, open for the duration of the call.
        let rc = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        rc != 0
    }

    #[test]
    fn held_until_drop() {
        let dir = std::env::temp_dir().join(format!("rtlan-lab-lock-{}", std::process::id()));
        let path = dir.join("lab.lock");
        let lock = lock_file(&path).unwrap();
        // A second open file description conflicts with the held lock.
        assert!(is_locked(&path));
        drop(lock);
        assert!(!is_locked(&path));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
