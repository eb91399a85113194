//! The manager's persisted state (`docs/bwm.md` "State file"): one JSON document, replaced
//! atomically on every change (write `FILE.tmp`, fsync, rename over `FILE`), so a crash leaves
//! either the old or the new state, never a torn one.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use rtlan_core::bwm::State;

/// The state file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A file operation failed.
    #[error("state file {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The file exists but is not a valid state document (it is left untouched).
    #[error("state file {path} is corrupt: {message}")]
    Corrupt {
        /// The file.
        path: String,
        /// The parse error.
        message: String,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// Reads the state; a missing file is the empty state.
pub fn load_state(path: &Path) -> Result<State, StoreError> {
    let text = match fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(State::default()),
        Err(e) => return Err(io(path)(e)),
    };
    serde_json::from_str(&text).map_err(|e| StoreError::Corrupt {
        path: path.display().to_string(),
        message: e.to_string(),
    })
}

/// Writes the state atomically.
pub fn save_state(path: &Path, state: &State) -> Result<(), StoreError> {
    let mut tmp = PathBuf::from(path);
    tmp.as_mut_os_string().push(".tmp");
    // Invariant: `State` holds only strings, integers and options; serialising it cannot fail.
    let text = serde_json::to_string_pretty(state).expect("State serialises");
    let mut f = File::create(&tmp).map_err(io(&tmp))?;
    f.write_all(text.as_bytes()).map_err(io(&tmp))?;
    f.write_all(b"\n").map_err(io(&tmp))?;
    f.sync_all().map_err(io(&tmp))?;
    fs::rename(&tmp, path).map_err(io(path))
}
