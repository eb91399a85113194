//! The host daemon's client socket: a Unix stream socket speaking JSON lines (`docs/rtcd.md`),
//! served non-blocking from the daemon's `epoll`. Each accepted connection is one
//! [`ClientId`]; its peer PID comes from `SO_PEERCRED`. This module only moves bytes: complete
//! lines go up as [`ClientEvent::Line`], closed connections as [`ClientEvent::Gone`].

use crate::unix_socket::BindError;
use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

use rtlan_core::rtcd::ClientId;

use crate::driver::Epoll;

/// Longest request line accepted; a longer one closes the connection.
pub const MAX_LINE: usize = 64 * 1024;
/// Most reply bytes buffered for a client that is not reading before it is dropped.
const MAX_PENDING_REPLY: usize = 4 * 1024 * 1024;
/// Most simultaneous clients.
pub const MAX_CLIENTS: usize = 256;

/// Epoll token of the listener; client `n` uses `CLIENT_TOKEN_BASE + n`.
pub(super) const LISTENER_TOKEN: u64 = 1 << 62;
const CLIENT_TOKEN_BASE: u64 = (1 << 62) + 1;

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

/// What happened on the client socket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum ClientEvent {
    /// A complete request line (without the newline).
    Line {
        client: ClientId,
        peer_pid: Option<u32>,
        line: Vec<u8>,
    },
    /// The client's connection closed.
    Gone(ClientId),
}

#[derive(Debug)]
struct Client {
    stream: UnixStream,
    peer_pid: Option<u32>,
    inbuf: Vec<u8>,
    outbuf: Vec<u8>,
    want_write: bool,
}

/// The listener and its clients.
#[derive(Debug)]
pub(super) struct ClientServer {
    listener: UnixListener,
    path: PathBuf,
    clients: HashMap<u64, Client>,
    next_id: u64,
    /// Connections accepted.
    pub(super) accepted: u64,
}

/// The peer's PID via `SO_PEERCRED` (`None` if unknown, e.g. from another PID namespace).
fn peer_pid(stream: &UnixStream) -> Option<u32> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred`/`len` describe a writable ucred of the size passed.
    let rc = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    if rc != 0 || cred.pid <= 0 {
        return None;
    }
    u32::try_from(cred.pid).ok()
}

impl ClientServer {
    /// Binds `path` (replacing a stale socket file, creating the parent directory) and registers
    /// the listener with `epoll`.
    pub(super) fn bind(path: &Path, epoll: &Epoll) -> Result<Self, ClientsError> {
        let io_err = |source| ClientsError::Io {
            path: path.to_path_buf(),
            source,
        };
        let listener = crate::unix_socket::bind_listener(path).map_err(|e| match e {
            BindError::InUse => ClientsError::InUse(path.to_path_buf()),
            BindError::NotASocket => ClientsError::NotASocket(path.to_path_buf()),
            BindError::Io(source) => io_err(source),
        })?;
        epoll
            .add(listener.as_raw_fd(), libc::EPOLLIN as u32, LISTENER_TOKEN)
            .map_err(io_err)?;
        Ok(ClientServer {
            listener,
            path: path.to_path_buf(),
            clients: HashMap::new(),
            next_id: 0,
            accepted: 0,
        })
    }

    /// Whether `token` belongs to the client server.
    pub(super) fn owns(token: u64) -> bool {
        token >= LISTENER_TOKEN
    }

    /// The clients currently connected.
    pub(super) fn client_ids(&self) -> Vec<ClientId> {
        let mut ids: Vec<ClientId> = self
            .clients
            .keys()
            .map(|t| ClientId(t - CLIENT_TOKEN_BASE))
            .collect();
        ids.sort();
        ids
    }

    /// Handles an epoll event for one of our tokens, appending what happened to `out`.
    pub(super) fn on_event(
        &mut self,
        epoll: &Epoll,
        token: u64,
        events: u32,
        out: &mut Vec<ClientEvent>,
    ) {
        if token == LISTENER_TOKEN {
            self.accept(epoll);
            return;
        }
        let id = ClientId(token - CLIENT_TOKEN_BASE);
        let Some(client) = self.clients.get_mut(&token) else {
            return;
        };
        let mut gone = false;
        if events & (libc::EPOLLIN | libc::EPOLLHUP | libc::EPOLLERR) as u32 != 0 {
            gone = read_available(client);
            while let Some(pos) = client.inbuf.iter().position(|&b| b == b'\n') {
                let mut line: Vec<u8> = client.inbuf.drain(..=pos).collect();
                line.pop();
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                out.push(ClientEvent::Line {
                    client: id,
                    peer_pid: client.peer_pid,
                    line,
                });
            }
            if client.inbuf.len() > MAX_LINE {
                tracing::warn!(
                    client = id.0,
                    "request line over {MAX_LINE} bytes; dropping"
                );
                gone = true;
            }
        }
        if events & libc::EPOLLOUT as u32 != 0 && write_available(client).is_err() {
            gone = true;
        }
        if gone {
            self.close(epoll, token);
            out.push(ClientEvent::Gone(id));
        }
    }

    /// Queues `line` (a newline is appended) to `client` and writes what the socket takes.
    /// Returns `false` if the client is gone or had to be dropped (caller reports it gone).
    pub(super) fn send(&mut self, epoll: &Epoll, client: ClientId, line: &[u8]) -> bool {
        let token = CLIENT_TOKEN_BASE + client.0;
        let Some(conn) = self.clients.get_mut(&token) else {
            return false;
        };
        conn.outbuf.extend_from_slice(line);
        conn.outbuf.push(b'\n');
        if write_available(conn).is_err() || conn.outbuf.len() > MAX_PENDING_REPLY {
            self.close(epoll, token);
            return false;
        }
        let want_write = !conn.outbuf.is_empty();
        if want_write != conn.want_write {
            conn.want_write = want_write;
            let mut events = libc::EPOLLIN as u32;
            if want_write {
                events |= libc::EPOLLOUT as u32;
            }
            if epoll
                .modify(conn.stream.as_raw_fd(), events, token)
                .is_err()
            {
                self.close(epoll, token);
                return false;
            }
        }
        true
    }

    fn accept(&mut self, epoll: &Epoll) {
        loop {
            let stream = match self.listener.accept() {
                Ok((stream, _)) => stream,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) => {
                    tracing::debug!("client accept: {e}");
                    return;
                }
            };
            if self.clients.len() >= MAX_CLIENTS || stream.set_nonblocking(true).is_err() {
                continue; // dropped: the client sees the connection close
            }
            let token = CLIENT_TOKEN_BASE + self.next_id;
            self.next_id += 1;
            if epoll
                .add(stream.as_raw_fd(), libc::EPOLLIN as u32, token)
                .is_err()
            {
                continue;
            }
            self.accepted += 1;
            let peer_pid = peer_pid(&stream);
            self.clients.insert(
                token,
                Client {
                    stream,
                    peer_pid,
                    inbuf: Vec::new(),
                    outbuf: Vec::new(),
                    want_write: false,
                },
            );
        }
    }

    fn close(&mut self, epoll: &Epoll, token: u64) {
        if let Some(client) = self.clients.remove(&token) {
            let _ = epoll.delete(client.stream.as_raw_fd());
        }
    }
}

impl Drop for ClientServer {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Reads whatever the peer has sent; `true` on EOF or error.
fn read_available(client: &mut Client) -> bool {
    let mut chunk = [0u8; 4096];
    loop {
        match client.stream.read(&mut chunk) {
            Ok(0) => return true,
            Ok(n) => {
                client.inbuf.extend_from_slice(&chunk[..n]);
                if client.inbuf.len() > MAX_LINE + chunk.len() {
                    return false; // the caller sees the over-long line
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return false,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return true,
        }
    }
}

/// Writes as much of the pending output as the socket takes.
fn write_available(client: &mut Client) -> io::Result<()> {
    while !client.outbuf.is_empty() {
        match client.stream.write(&client.outbuf) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => {
                client.outbuf.drain(..n);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
