//! The daemons' side of running as a service: readiness, reload and stop notifications to the
//! service manager (systemd's `sd_notify` protocol, `Type=notify`), and the reload request that
//! SIGHUP raises.
//!
//! A daemon tells the manager it is `READY=1` only once it serves: its sockets are bound, its
//! ports open — a unit ordered after it (`After=rtlan-switch@s1.service`) may connect at once.
//! On SIGHUP it says `RELOADING=1` (with `MONOTONIC_USEC`, which systemd 253 and later require),
//! reads its configuration again, applies what can change while it runs, logs each change that
//! needs a restart, and says `READY=1` again; a file that does not parse leaves the running
//! configuration in place. At stop it says `STOPPING=1`. Without `NOTIFY_SOCKET` (not under a
//! service manager) every notification is a no-op. The protocol is sent by the `sd-notify`
//! crate; `docs/deploy.md` describes the units.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use sd_notify::NotifyState;

/// The configuration file the daemon runs with and its text, as last read ([`set_config_file`],
/// [`reread`], [`accept`]). One daemon per process, like its signals.
static SOURCE: Mutex<Option<(PathBuf, String)>> = Mutex::new(None);

/// Set by SIGHUP ([`request_reload`]), taken by the daemon's loop ([`take_reload`]).
static RELOAD: AtomicBool = AtomicBool::new(false);

/// Asks the running daemon to reload its configuration. Async-signal-safe (one atomic store):
/// the SIGHUP handler calls it.
pub fn request_reload() {
    RELOAD.store(true, Ordering::Relaxed);
}

/// Whether a reload was asked for since the last call.
pub fn take_reload() -> bool {
    RELOAD.swap(false, Ordering::Relaxed)
}

fn notify(states: &[NotifyState<'_>]) {
    if let Err(e) = sd_notify::notify(states) {
        tracing::warn!("service manager notification failed: {e}");
    }
}

/// `READY=1` with a status line: the daemon serves.
pub fn ready(status: &str) {
    notify(&[NotifyState::Ready, NotifyState::Status(status)]);
}

/// `RELOADING=1` (+ `MONOTONIC_USEC`): a reload has begun.
pub fn reloading() {
    match NotifyState::monotonic_usec_now() {
        Ok(now) => notify(&[NotifyState::Reloading, now]),
        Err(_) => notify(&[NotifyState::Reloading]),
    }
}

/// `STOPPING=1`: the daemon is releasing what it holds.
pub fn stopping() {
    notify(&[NotifyState::Stopping]);
}

/// Records the configuration file the daemon was started with (its text as it is now), for
/// [`reread`] to compare a reload with.
pub fn set_config_file(path: &Path) -> std::io::Result<()> {
    let text = std::fs::read_to_string(path)?;
    *SOURCE.lock().unwrap_or_else(|e| e.into_inner()) = Some((path.to_path_buf(), text));
    Ok(())
}

/// The configuration file read again for a reload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reread {
    /// The file.
    pub path: PathBuf,
    /// Its new text.
    pub text: String,
    /// The top-level keys that changed ([`changed_keys`]).
    pub changed: Vec<String>,
}

/// Reads the configuration file again: `None` if the daemon has none (started from flags),
/// else its new text and what changed, or why it cannot be read or parsed.
pub fn reread() -> Option<Result<Reread, String>> {
    let (path, old) = SOURCE.lock().unwrap_or_else(|e| e.into_inner()).clone()?;
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => return Some(Err(format!("cannot read {}: {e}", path.display()))),
    };
    Some(
        changed_keys(&old, &text)
            .map(|changed| Reread {
                path: path.clone(),
                text,
                changed,
            })
            .map_err(|e| format!("{}: {e}", path.display())),
    )
}

/// Makes `text` the running configuration's (after the daemon applied or reported it).
pub fn accept(text: String) {
    if let Some((_, old)) = SOURCE.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
        *old = text;
    }
}

/// The reload of a daemon that applies nothing while it runs (switch, router): every changed
/// key is logged as needing a restart once `validate` accepts the new file; a file that does
/// not parse or validate is logged and the running configuration stays.
pub fn reload_nothing_live(daemon: &str, validate: impl FnOnce(&Path) -> Result<(), String>) {
    reloading();
    match reread() {
        None => tracing::warn!(
            daemon,
            "SIGHUP: started without a configuration file, nothing to reload"
        ),
        Some(Err(e)) => tracing::error!(daemon, "reload failed, running configuration kept: {e}"),
        Some(Ok(r)) => match validate(&r.path) {
            Err(e) => tracing::error!(daemon, "reload failed, running configuration kept: {e}"),
            Ok(()) => {
                if r.changed.is_empty() {
                    tracing::info!(daemon, "reload: configuration unchanged");
                }
                warn_needs_restart(daemon, &r.changed);
                accept(r.text);
            }
        },
    }
    ready("reloaded");
}

/// The top-level keys (and `[[table]]` arrays, by name) whose values differ between two
/// versions of a TOML file, in order: what a reload reports as changed.
pub fn changed_keys(old: &str, new: &str) -> Result<Vec<String>, toml::de::Error> {
    let old: toml::Table = toml::from_str(old)?;
    let new: toml::Table = toml::from_str(new)?;
    let mut keys: Vec<String> = old
        .keys()
        .chain(new.keys())
        .filter(|k| old.get(*k) != new.get(*k))
        .cloned()
        .collect();
    keys.sort();
    keys.dedup();
    Ok(keys)
}

/// Logs, at warn level, each of `keys` as a change the running daemon did not apply.
pub fn warn_needs_restart(daemon: &str, keys: &[String]) {
    for key in keys {
        tracing::warn!(
            daemon,
            key = key.as_str(),
            "configuration changed `{key}`: not applied while running, restart to apply"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changed_keys_name_what_differs_added_or_removed() {
        let old = "a = 1\nb = \"x\"\n[[port]]\nifname = \"p0\"\n";
        let new = "a = 1\nb = \"y\"\nc = true\n[[port]]\nifname = \"p1\"\n";
        assert_eq!(changed_keys(old, new).expect("valid"), ["b", "c", "port"]);
        assert!(changed_keys(old, old).expect("valid").is_empty());
        assert!(changed_keys(old, "a = ").is_err());
    }

    #[test]
    fn a_reload_request_is_taken_once() {
        assert!(!take_reload());
        request_reload();
        assert!(take_reload());
        assert!(!take_reload());
    }
    // The notifications themselves are tested end to end, with the daemons as services of a
    // notify socket of the test's own (crates/rtlan/tests/deploy.rs): setting NOTIFY_SOCKET
    // here would race the crate's other tests.
}
