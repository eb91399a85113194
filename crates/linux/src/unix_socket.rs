//! Binding the daemons' Unix stream sockets (the switch's control socket, the host daemon's client
//! socket): a stale socket file left by a crashed run is replaced, a live one is never stolen.

use std::io;
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;

/// Why a socket path could not be bound.
#[derive(Debug)]
pub(crate) enum BindError {
    /// Another process is listening on the path.
    InUse,
    /// The path exists and is not a socket (never removed).
    NotASocket,
    /// Creating the directory, removing the stale file or binding failed.
    Io(io::Error),
}

/// Binds a non-blocking listener at `path`, creating its parent directory and replacing a stale
/// socket file that nobody listens on any more.
pub(crate) fn bind_listener(path: &Path) -> Result<UnixListener, BindError> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => {
            if UnixStream::connect(path).is_ok() {
                return Err(BindError::InUse);
            }
            std::fs::remove_file(path).map_err(BindError::Io)?;
        }
        Ok(_) => return Err(BindError::NotASocket),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(BindError::Io(e)),
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(BindError::Io)?;
    }
    let listener = UnixListener::bind(path).map_err(BindError::Io)?;
    listener.set_nonblocking(true).map_err(BindError::Io)?;
    Ok(listener)
}
