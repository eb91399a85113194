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

/// Gives the socket file at `path` its mode and group (docs/rtcd.md `socket_mode`,
/// `socket_group`): the group a name (looked up in the group database) or a number.
pub(super) fn set_access(
    path: &Path,
    mode: Option<u32>,
    group: Option<&str>,
) -> Result<(), ClientsError> {
    use std::os::unix::fs::PermissionsExt;

    let io = |source| ClientsError::Io {
        path: path.to_path_buf(),
        source,
    };
    if let Some(group) = group {
        let gid = group_id(group).ok_or_else(|| {
            io(io::Error::new(
                io::ErrorKind::NotFound,
                format!("socket_group: no group `{group}`"),
            ))
        })?;
        std::os::unix::fs::chown(path, None, Some(gid)).map_err(io)?;
    }
    if let Some(mode) = mode {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).map_err(io)?;
    }
    Ok(())
}

/// The gid of group `group` (a name, or a number as it is).
pub(super) fn group_id(group: &str) -> Option<u32> {
    if let Ok(gid) = group.parse::<u32>() {
        return Some(gid);
    }
    let name = std::ffi::CString::new(group).ok()?;
    // SAFETY: `libc::group` is plain data (integers and pointers); all-zero is a valid value,
    // overwritten by getgrnam_r before it is read.
    let mut grp: libc::group = unsafe { std::mem::zeroed() };
    let mut buf = vec![0 as libc::c_char; 16 * 1024];
    let mut found: *mut libc::group = std::ptr::null_mut();
    // SAFETY: getgrnam_r(3) fills `grp` with pointers into `buf` (both outlive the call and
    // are only read through `found`, which is null or points at `grp`); `name` is NUL-terminated.
    let rc = unsafe {
        libc::getgrnam_r(
            name.as_ptr(),
            &mut grp,
            buf.as_mut_ptr(),
            buf.len(),
            &mut found,
        )
    };
    (rc == 0 && !found.is_null()).then_some(grp.gr_gid)
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    #[test]
    fn the_socket_gets_its_mode_and_group() {
        let dir = std::env::temp_dir().join(format!("rtl-rtcd-access-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("rtcd.sock");
        let _listener = std::os::unix::net::UnixListener::bind(&path).expect("bind");
        set_access(&path, Some(0o660), None).expect("chmod");
        let meta = std::fs::metadata(&path).expect("stat");
        assert_eq!(meta.permissions().mode() & 0o777, 0o660);
        // SAFETY: geteuid(2) has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            // Debian's `nogroup` is gid 65534: by name and by number.
            set_access(&path, None, Some("nogroup")).expect("chown by name");
            assert_eq!(std::fs::metadata(&path).expect("stat").gid(), 65534);
            set_access(&path, Some(0o600), Some("0")).expect("chown by number");
            let meta = std::fs::metadata(&path).expect("stat");
            assert_eq!((meta.gid(), meta.permissions().mode() & 0o777), (0, 0o600));
        }
        let err = set_access(&path, None, Some("no-such-group-here")).expect_err("unknown");
        assert!(err.to_string().contains("no group"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
