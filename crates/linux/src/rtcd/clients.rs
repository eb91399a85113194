//! The host daemon's client socket: a Unix stream socket speaking the one management envelope
//! (`docs/mgmt.md`; operations in `docs/rtcd.md`), served non-blocking from the daemon's `epoll`
//! by the [`mgmt`](crate::mgmt) server. Each accepted connection is one
//! [`ClientId`](rtlan_core::rtcd::ClientId) (the server's client number); its peer PID comes
//! from `SO_PEERCRED`.

use std::io;
use std::path::{Path, PathBuf};

use crate::driver::Epoll;
use crate::mgmt::{Limits, Listen, MgmtServer, ServerError};

/// Longest request line accepted; a longer one gets a `line_too_long` error and closes the
/// connection.
pub const MAX_LINE: usize = 64 * 1024;
/// Most reply bytes buffered for a client that is not reading before it is dropped.
const MAX_PENDING_REPLY: usize = 4 * 1024 * 1024;
/// Most simultaneous clients.
pub const MAX_CLIENTS: usize = 256;

/// Epoll token of the listener; clients use the tokens just above.
pub(super) const LISTENER_TOKEN: u64 = 1 << 62;

/// The client socket could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum ClientsError {
    /// Another process is serving this path.
    #[error("{0} is in use by a running process")]
    InUse(PathBuf),
    /// Something that is not a socket exists at the path.
    #[error("{0} exists and is not a socket; refusing to replace it")]
    NotASocket(PathBuf),
    /// A file-system or socket call failed.
    #[error("client socket {path}: {source}")]
    Io {
        /// The socket path.
        path: PathBuf,
        /// The system error.
        #[source]
        source: io::Error,
    },
}

/// Binds `path` (replacing a stale socket file, creating the parent directory) and registers
/// the listener with `epoll`.
pub(super) fn bind(path: &Path, epoll: &Epoll) -> Result<MgmtServer, ClientsError> {
    let limits = Limits {
        max_line: MAX_LINE,
        max_clients: MAX_CLIENTS,
        max_unread: MAX_PENDING_REPLY,
    };
    MgmtServer::bind(
        &Listen::Unix(path.to_path_buf()),
        epoll,
        LISTENER_TOKEN,
        limits,
    )
    .map_err(|e| match e {
        ServerError::InUse(p) => ClientsError::InUse(p),
        ServerError::NotASocket(p) => ClientsError::NotASocket(p),
        ServerError::Io { source, .. } => ClientsError::Io {
            path: path.to_path_buf(),
            source,
        },
    })
}
