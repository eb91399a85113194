//! The manager's persisted state (`docs/bwm.md` "State file"): a snapshot, one JSON document
//! replaced atomically (write `FILE.tmp`, fsync, rename over `FILE`), plus a journal `FILE.journal`
//! of the changes since, one JSON line each, appended and fdatasync'd before the manager answers.
//! A crash leaves the old or the new snapshot, never a torn one, and at most a torn last journal
//! line (which is ignored: its request was never answered). [`Journal`] folds the journal into a
//! fresh snapshot every [`COMPACT_EVERY`] lines and at every start, so a change costs one small
//! append instead of rewriting every booking.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use rtlan_core::bwm::{Change, State};

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

/// Journal lines after which the snapshot is rewritten and the journal emptied.
pub const COMPACT_EVERY: usize = 1024;

/// The journal file beside snapshot `path`.
fn journal_path(path: &Path) -> PathBuf {
    let mut p = PathBuf::from(path);
    p.as_mut_os_string().push(".journal");
    p
}

/// The snapshot and journal of one state file, open for appending.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    file: File,
    lines: usize,
}

impl Journal {
    /// Reads the snapshot at `path` (missing = empty) and replays its journal over it; a torn
    /// last line is ignored, any other bad line makes the state corrupt (files left alone).
    pub fn load(path: &Path) -> Result<State, StoreError> {
        let mut state = load_state(path)?;
        let jpath = journal_path(path);
        let text = match fs::read_to_string(&jpath) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(state),
            Err(e) => return Err(io(&jpath)(e)),
        };
        let complete = text.ends_with('\n');
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            match serde_json::from_str::<Change>(line) {
                Ok(change) => state.apply(change),
                Err(_) if i + 1 == lines.len() && !complete => {
                    tracing::warn!("bwm: ignoring a torn last line of {}", jpath.display());
                }
                Err(e) => {
                    return Err(StoreError::Corrupt {
                        path: jpath.display().to_string(),
                        message: format!("line {}: {e}", i + 1),
                    })
                }
            }
        }
        Ok(state)
    }

    /// Writes `state` as the snapshot at `path` and starts an empty journal.
    pub fn create(path: &Path, state: &State) -> Result<Journal, StoreError> {
        save_state(path, state)?;
        let jpath = journal_path(path);
        let file = OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .open(&jpath)
            .map_err(io(&jpath))?;
        file.sync_all().map_err(io(&jpath))?;
        Ok(Journal {
            path: path.to_path_buf(),
            file,
            lines: 0,
        })
    }

    /// Appends `changes` durably; once the journal holds [`COMPACT_EVERY`] lines, writes
    /// `snapshot()` and starts a new journal instead.
    pub fn append(
        &mut self,
        changes: &[Change],
        snapshot: impl FnOnce() -> State,
    ) -> Result<(), StoreError> {
        if changes.is_empty() {
            return Ok(());
        }
        if self.lines + changes.len() >= COMPACT_EVERY {
            return self.compact(&snapshot());
        }
        let mut text = String::new();
        for c in changes {
            // Invariant: a `Change` holds only strings, integers and options.
            text.push_str(&serde_json::to_string(c).expect("Change serialises"));
            text.push('\n');
        }
        let jpath = journal_path(&self.path);
        self.file.write_all(text.as_bytes()).map_err(io(&jpath))?;
        self.file.sync_data().map_err(io(&jpath))?;
        self.lines += changes.len();
        Ok(())
    }

    /// Writes `state` as the snapshot and empties the journal.
    pub fn compact(&mut self, state: &State) -> Result<(), StoreError> {
        *self = Journal::create(&self.path, state)?;
        Ok(())
    }
}
