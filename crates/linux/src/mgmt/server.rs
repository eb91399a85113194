//! The JSON-lines server of every daemon's management socket (envelope in the parent module and
//! `docs/mgmt.md`): a listener (Unix stream socket or TCP) and its clients, all non-blocking and
//! served from the daemon's own `epoll` — no thread per client, so a client can never block a
//! data plane, and a slow or hostile one costs only bounded memory:
//!
//! - a line longer than [`Limits::max_line`] gets a `line_too_long` error and the connection is
//!   closed;
//! - a client beyond [`Limits::max_clients`] gets a `too_many_clients` error and is closed
//!   (counted in [`Stats::refused_clients`], logged at most once a second);
//! - a client that does not read its replies is dropped once [`Limits::max_unread`] bytes wait;
//! - with [`MgmtServer::set_idle_timeout`], a client that sends nothing for that long gets an
//!   `idle_timeout` error and is closed by [`MgmtServer::poll`];
//! - when the process runs out of descriptors, accepting pauses for a moment instead of
//!   spinning on a listener that stays readable;
//! - a line that is not an envelope gets a `bad_request` reply here, never reaching the daemon.
//!
//! Everything else goes up as a [`MgmtEvent`]; the daemon answers with [`MgmtServer::reply`]
//! (now or later, e.g. after a network round trip) and may push events with
//! [`MgmtServer::send`].

use std::collections::BTreeMap;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;

use serde_json::Value;

use super::{error_reply, parse_line, Envelope, MgmtError, RequestId};
use crate::driver::Epoll;
use crate::unix_socket::BindError;

/// Where a daemon listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listen {
    /// A Unix stream socket at this path (a stale socket file is replaced, a live one never).
    Unix(PathBuf),
    /// A TCP address (`host:port`; port 0 picks one).
    Tcp(String),
}

/// Bounds on what clients may cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Longest request line, bytes (without the newline).
    pub max_line: usize,
    /// Most clients connected at once.
    pub max_clients: usize,
    /// Most reply bytes waiting for a client that does not read before it is dropped.
    pub max_unread: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_line: 64 * 1024,
            max_clients: 64,
            max_unread: 4 * 1024 * 1024,
        }
    }
}

/// The socket could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// Another process is serving this Unix socket path.
    #[error("{0} is in use by a running process")]
    InUse(PathBuf),
    /// Something that is not a socket exists at the path.
    #[error("{0} exists and is not a socket; refusing to replace it")]
    NotASocket(PathBuf),
    /// Binding, listening or registering with epoll failed.
    #[error("management socket {at}: {source}")]
    Io {
        /// The path or address.
        at: String,
        /// The system error.
        #[source]
        source: io::Error,
    },
}

/// What happened on the socket.
#[derive(Debug, Clone, PartialEq)]
pub enum MgmtEvent {
    /// A request whose envelope is valid.
    Request {
        /// The client (stable while it is connected).
        client: u64,
        /// The peer's PID (`SO_PEERCRED`; Unix sockets only, `None` if unknown).
        peer_pid: Option<u32>,
        /// The request.
        request: Envelope,
    },
    /// The client's connection closed (or was closed).
    Gone(u64),
}

/// Counters of a server.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Stats {
    /// Connections accepted (including those refused for the client limit).
    pub accepted: u64,
    /// Request lines received (valid or not).
    pub requests: u64,
    /// Replies with `"ok": false` sent.
    pub errors: u64,
    /// Connections refused because [`Limits::max_clients`] were connected.
    pub refused_clients: u64,
    /// Connections closed for sending nothing within the idle time-out.
    pub idle_closed: u64,
}

/// How long accepting pauses after the process ran out of descriptors.
const ACCEPT_PAUSE: std::time::Duration = std::time::Duration::from_millis(100);

#[derive(Debug)]
enum Listener {
    Unix(UnixListener),
    Tcp(TcpListener),
}

#[derive(Debug)]
enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Stream {
    fn fd(&self) -> RawFd {
        match self {
            Stream::Unix(s) => s.as_raw_fd(),
            Stream::Tcp(s) => s.as_raw_fd(),
        }
    }

    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
        }
    }

    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write(buf),
            Stream::Tcp(s) => s.write(buf),
        }
    }
}

#[derive(Debug)]
struct Conn {
    stream: Stream,
    peer_pid: Option<u32>,
    /// The peer's user id (`SO_PEERCRED`; Unix sockets only).
    peer_uid: Option<u32>,
    /// The peer's primary group id (`SO_PEERCRED`; Unix sockets only).
    peer_gid: Option<u32>,
    inbuf: Vec<u8>,
    outbuf: Vec<u8>,
    /// Close once `outbuf` is written and no request awaits its reply (the peer closed its
    /// sending side, or it misbehaved).
    closing: bool,
    /// Requests handed up and not yet answered: a peer that only shut down its sending side
    /// (`echo ... | socat`) still gets its replies.
    awaiting: usize,
    /// The epoll events currently registered (EPOLLIN until the peer closed its side, EPOLLOUT
    /// while output waits).
    registered: u32,
    /// When the peer last sent something (or connected).
    last_active: std::time::Instant,
}

/// Tokens of one server: `base` is the listener, `base + 1 + n` client `n`.
const TOKEN_SPAN: u64 = 1 << 40;

/// A listener and its clients (see the module docs).
#[derive(Debug)]
pub struct MgmtServer {
    listener: Listener,
    /// The socket file to remove on drop (Unix).
    path: Option<PathBuf>,
    conns: BTreeMap<u64, Conn>,
    base: u64,
    next_client: u64,
    limits: Limits,
    stats: Stats,
    /// Close clients silent for this long (none: never).
    idle_timeout: Option<std::time::Duration>,
    /// Accepting is paused until then (the process ran out of descriptors).
    accept_paused_until: Option<std::time::Instant>,
    /// When a refused client was last logged (at most one line a second).
    refusal_logged: Option<std::time::Instant>,
    /// The daemon calls [`MgmtServer::poll`], so accepting may pause (it resumes there).
    polled: bool,
}

/// The peer's PID, user id and group id via `SO_PEERCRED` (the PID `None` if unknown, e.g.
/// from another PID namespace; all `None` if the call fails).
fn peer_cred(fd: RawFd) -> (Option<u32>, Option<u32>, Option<u32>) {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred`/`len` describe a writable ucred of the size passed; `fd` is an open socket.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return (None, None, None);
    }
    let pid = u32::try_from(cred.pid).ok().filter(|&p| p > 0);
    (pid, Some(cred.uid), Some(cred.gid))
}

impl MgmtServer {
    /// Binds `listen` and registers the listener with `epoll` under `token_base`; the server's
    /// clients use the tokens just above it (`token_base + 1 ..`, see [`MgmtServer::owns`]).
    pub(crate) fn bind(
        listen: &Listen,
        epoll: &Epoll,
        token_base: u64,
        limits: Limits,
    ) -> Result<MgmtServer, ServerError> {
        let (listener, path, at) = match listen {
            Listen::Unix(path) => {
                let listener = crate::unix_socket::bind_listener(path).map_err(|e| match e {
                    BindError::InUse => ServerError::InUse(path.clone()),
                    BindError::NotASocket => ServerError::NotASocket(path.clone()),
                    BindError::Io(source) => ServerError::Io {
                        at: path.display().to_string(),
                        source,
                    },
                })?;
                (
                    Listener::Unix(listener),
                    Some(path.clone()),
                    path.display().to_string(),
                )
            }
            Listen::Tcp(addr) => {
                let io_err = |source| ServerError::Io {
                    at: addr.clone(),
                    source,
                };
                let listener = TcpListener::bind(addr).map_err(io_err)?;
                listener.set_nonblocking(true).map_err(io_err)?;
                (Listener::Tcp(listener), None, addr.clone())
            }
        };
        let fd = match &listener {
            Listener::Unix(l) => l.as_raw_fd(),
            Listener::Tcp(l) => l.as_raw_fd(),
        };
        let server = MgmtServer {
            listener,
            path,
            conns: BTreeMap::new(),
            base: token_base,
            next_client: 0,
            limits,
            stats: Stats::default(),
            idle_timeout: None,
            accept_paused_until: None,
            refusal_logged: None,
            polled: false,
        };
        epoll
            .add(fd, libc::EPOLLIN as u32, token_base)
            .map_err(|source| ServerError::Io { at, source })?;
        Ok(server)
    }

    /// The user id of a connected client's peer (Unix sockets; `None` for TCP or a client that
    /// is gone): what a daemon checks before an operator's request.
    pub fn peer_uid(&self, client: u64) -> Option<u32> {
        self.conns
            .get(&(self.base + 1 + client))
            .and_then(|c| c.peer_uid)
    }

    /// The peer's `(pid, uid, gid)` of a connected Unix-socket client (`None` for TCP, a client
    /// that is gone, or credentials that could not be read; the PID `None` across PID
    /// namespaces).
    pub fn peer_ids(&self, client: u64) -> Option<(Option<u32>, u32, u32)> {
        let conn = self.conns.get(&(self.base + 1 + client))?;
        Some((conn.peer_pid, conn.peer_uid?, conn.peer_gid?))
    }

    /// The bound TCP address (`None` for a Unix socket).
    pub fn local_addr(&self) -> Option<SocketAddr> {
        match &self.listener {
            Listener::Tcp(l) => l.local_addr().ok(),
            Listener::Unix(_) => None,
        }
    }

    /// Whether `token` belongs to this server.
    pub fn owns(&self, token: u64) -> bool {
        token.wrapping_sub(self.base) < TOKEN_SPAN
    }

    /// The counters so far.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// Closes clients that send nothing for `timeout` (none: never), from [`MgmtServer::poll`].
    pub fn set_idle_timeout(&mut self, timeout: Option<std::time::Duration>) {
        self.idle_timeout = timeout;
    }

    /// Housekeeping at `now`, to be called at least every few hundred milliseconds (the
    /// daemon's loop wakes that often anyway): closes idle clients — each gets an
    /// `idle_timeout` error first, best effort, and is reported [`MgmtEvent::Gone`] in `out` —
    /// unless a request of theirs still awaits the daemon's reply; resumes accepting after a
    /// pause for lack of descriptors.
    pub(crate) fn poll(
        &mut self,
        epoll: &Epoll,
        now: std::time::Instant,
        out: &mut Vec<MgmtEvent>,
    ) {
        self.polled = true;
        if self.accept_paused_until.is_some_and(|t| t <= now) {
            let fd = self.listener_fd();
            if epoll.modify(fd, libc::EPOLLIN as u32, self.base).is_ok() {
                self.accept_paused_until = None;
            }
        }
        let Some(timeout) = self.idle_timeout else {
            return;
        };
        let idle: Vec<u64> = self
            .conns
            .iter()
            .filter(|(_, c)| c.awaiting == 0 && now.duration_since(c.last_active) >= timeout)
            .map(|(&t, _)| t)
            .collect();
        for token in idle {
            if let Some(conn) = self.conns.get_mut(&token) {
                let error = MgmtError::new(
                    "idle_timeout",
                    format!("nothing received for {} s", timeout.as_secs_f64()),
                );
                push_error(conn, &mut self.stats, None, &error);
                write_available(conn);
                self.stats.idle_closed += 1;
            }
            self.close(epoll, token, out);
        }
    }

    fn listener_fd(&self) -> RawFd {
        match &self.listener {
            Listener::Unix(l) => l.as_raw_fd(),
            Listener::Tcp(l) => l.as_raw_fd(),
        }
    }

    /// The clients connected now, in order of arrival.
    pub fn clients(&self) -> Vec<u64> {
        self.conns.keys().map(|t| t - self.base - 1).collect()
    }

    /// Handles an epoll event for one of this server's tokens. Each valid request goes to
    /// `answer(client, peer_pid, request)`: `Some(result)` is the reply, queued at once (so
    /// replies keep the order of the requests, error replies to malformed lines included);
    /// `None` hands the request up as [`MgmtEvent::Request`] in `out`, to be answered later with
    /// [`MgmtServer::reply`]. Closed connections are reported in `out` too.
    pub(crate) fn on_event<F>(
        &mut self,
        epoll: &Epoll,
        token: u64,
        events: u32,
        out: &mut Vec<MgmtEvent>,
        mut answer: F,
    ) where
        F: FnMut(u64, Option<u32>, &Envelope) -> Option<Result<Value, MgmtError>>,
    {
        if token == self.base {
            self.accept(epoll);
            return;
        }
        let client = token.wrapping_sub(self.base + 1);
        let Some(conn) = self.conns.get_mut(&token) else {
            return;
        };
        if events & (libc::EPOLLIN | libc::EPOLLHUP | libc::EPOLLERR) as u32 != 0 {
            let before = conn.inbuf.len();
            read_available(conn, self.limits.max_line);
            if conn.inbuf.len() != before {
                conn.last_active = std::time::Instant::now();
            }
            while let Some(pos) = conn.inbuf.iter().position(|&b| b == b'\n') {
                let mut line: Vec<u8> = conn.inbuf.drain(..=pos).collect();
                line.pop();
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                self.stats.requests += 1;
                if line.len() > self.limits.max_line {
                    // A whole over-long line arrived in one read.
                    conn.inbuf.clear();
                    push_error(conn, &mut self.stats, None, &line_too_long(&self.limits));
                    conn.closing = true;
                    break;
                }
                match parse_line(&line) {
                    Ok(request) => match answer(client, conn.peer_pid, &request) {
                        Some(Ok(data)) => {
                            push_line(&mut conn.outbuf, &super::ok_reply(request.id, data));
                        }
                        Some(Err(error)) => {
                            push_error(conn, &mut self.stats, request.id, &error);
                        }
                        None => {
                            conn.awaiting += 1;
                            out.push(MgmtEvent::Request {
                                client,
                                peer_pid: conn.peer_pid,
                                request,
                            });
                        }
                    },
                    Err((id, error)) => push_error(conn, &mut self.stats, id, &error),
                }
            }
            if conn.inbuf.len() > self.limits.max_line {
                conn.inbuf.clear();
                self.stats.requests += 1;
                push_error(conn, &mut self.stats, None, &line_too_long(&self.limits));
                conn.closing = true;
            }
            if events & (libc::EPOLLHUP | libc::EPOLLERR) as u32 != 0 {
                // Both directions are gone: what it sent is handled, nothing can be answered.
                conn.closing = true;
                conn.awaiting = 0;
                conn.inbuf.clear();
                conn.outbuf.clear();
            }
        }
        self.flush(epoll, token, out);
    }

    /// Sends the reply to request `id` of `client`; `false` if the client is gone or had to be
    /// dropped (it is then reported as [`MgmtEvent::Gone`] in `out`).
    pub(crate) fn reply(
        &mut self,
        epoll: &Epoll,
        client: u64,
        id: RequestId,
        result: Result<Value, MgmtError>,
        out: &mut Vec<MgmtEvent>,
    ) -> bool {
        if result.is_err() {
            self.stats.errors += 1;
        }
        if let Some(conn) = self.conns.get_mut(&(self.base + 1 + client)) {
            conn.awaiting = conn.awaiting.saturating_sub(1);
        }
        self.send(epoll, client, &super::reply(id, result), out)
    }

    /// Queues one line (an event, or a reply built by the caller) to `client` and writes what
    /// the socket takes; `false` if the client is gone or had to be dropped (reported in `out`).
    pub(crate) fn send(
        &mut self,
        epoll: &Epoll,
        client: u64,
        line: &Value,
        out: &mut Vec<MgmtEvent>,
    ) -> bool {
        let token = self.base + 1 + client;
        let Some(conn) = self.conns.get_mut(&token) else {
            return false;
        };
        push_line(&mut conn.outbuf, line);
        self.flush(epoll, token, out)
    }

    /// Writes what the socket takes, closes a finished or overflowing connection, and keeps the
    /// EPOLLOUT interest in step; `false` if the connection is gone.
    fn flush(&mut self, epoll: &Epoll, token: u64, out: &mut Vec<MgmtEvent>) -> bool {
        let Some(conn) = self.conns.get_mut(&token) else {
            return false;
        };
        write_available(conn);
        let done = conn.closing && conn.outbuf.is_empty() && conn.awaiting == 0;
        if done || conn.outbuf.len() > self.limits.max_unread {
            self.close(epoll, token, out);
            return false;
        }
        // A peer that closed its side keeps the socket readable (EOF): stop asking for EPOLLIN
        // then, or a level-triggered epoll would spin until the reply is ready.
        let mut events = 0;
        if !conn.closing {
            events |= libc::EPOLLIN as u32;
        }
        if !conn.outbuf.is_empty() {
            events |= libc::EPOLLOUT as u32;
        }
        if events != conn.registered {
            conn.registered = events;
            if epoll.modify(conn.stream.fd(), events, token).is_err() {
                self.close(epoll, token, out);
                return false;
            }
        }
        true
    }

    fn accept(&mut self, epoll: &Epoll) {
        loop {
            let accepted = match &self.listener {
                Listener::Unix(l) => l.accept().map(|(s, _)| Stream::Unix(s)),
                Listener::Tcp(l) => l.accept().map(|(s, _)| {
                    let _ = s.set_nodelay(true);
                    Stream::Tcp(s)
                }),
            };
            let mut stream = match accepted {
                Ok(stream) => stream,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    // Out of descriptors (EMFILE/ENFILE) or another failure: the pending
                    // connection stays queued and the listener readable, so stop listening for
                    // a moment rather than spin; `poll` resumes (a daemon that never calls it
                    // keeps listening).
                    tracing::warn!("management socket accept: {e}");
                    let fd = self.listener_fd();
                    if self.polled && epoll.modify(fd, 0, self.base).is_ok() {
                        self.accept_paused_until = Some(std::time::Instant::now() + ACCEPT_PAUSE);
                    }
                    return;
                }
            };
            self.stats.accepted += 1;
            let nonblocking = match &stream {
                Stream::Unix(s) => s.set_nonblocking(true),
                Stream::Tcp(s) => s.set_nonblocking(true),
            };
            if nonblocking.is_err() {
                continue;
            }
            if self.conns.len() >= self.limits.max_clients {
                let error = MgmtError::new(
                    "too_many_clients",
                    format!("at most {} clients at once", self.limits.max_clients),
                );
                let mut line = Vec::new();
                push_line(&mut line, &error_reply(None, &error));
                self.stats.errors += 1;
                self.stats.refused_clients += 1;
                let now = std::time::Instant::now();
                let quiet = self
                    .refusal_logged
                    .is_some_and(|t| now.duration_since(t) < std::time::Duration::from_secs(1));
                if !quiet {
                    self.refusal_logged = Some(now);
                    tracing::warn!(
                        refused_clients = self.stats.refused_clients,
                        "management socket: {} clients connected, refusing a new one",
                        self.limits.max_clients
                    );
                }
                // Best effort on a fresh socket (its buffer is empty); then it is dropped.
                let _ = stream.write(&line);
                continue;
            }
            let token = self.base + 1 + self.next_client;
            if token.wrapping_sub(self.base) >= TOKEN_SPAN {
                tracing::warn!("management socket: client ids exhausted");
                return;
            }
            self.next_client += 1;
            if epoll.add(stream.fd(), libc::EPOLLIN as u32, token).is_err() {
                continue;
            }
            let (peer_pid, peer_uid, peer_gid) = match &stream {
                Stream::Unix(s) => peer_cred(s.as_raw_fd()),
                Stream::Tcp(_) => (None, None, None),
            };
            self.conns.insert(
                token,
                Conn {
                    stream,
                    peer_pid,
                    peer_uid,
                    peer_gid,
                    inbuf: Vec::new(),
                    outbuf: Vec::new(),
                    closing: false,
                    awaiting: 0,
                    registered: libc::EPOLLIN as u32,
                    last_active: std::time::Instant::now(),
                },
            );
        }
    }

    fn close(&mut self, epoll: &Epoll, token: u64, out: &mut Vec<MgmtEvent>) {
        if let Some(conn) = self.conns.remove(&token) {
            let _ = epoll.delete(conn.stream.fd());
            out.push(MgmtEvent::Gone(token - self.base - 1));
        }
    }
}

impl Drop for MgmtServer {
    fn drop(&mut self) {
        if let Some(path) = &self.path {
            let _ = std::fs::remove_file(path);
        }
    }
}

fn line_too_long(limits: &Limits) -> MgmtError {
    MgmtError::new(
        "line_too_long",
        format!("request line longer than {} bytes", limits.max_line),
    )
}

fn push_error(conn: &mut Conn, stats: &mut Stats, id: RequestId, error: &MgmtError) {
    stats.errors += 1;
    push_line(&mut conn.outbuf, &error_reply(id, error));
}

fn push_line(out: &mut Vec<u8>, value: &Value) {
    // Serializing a `Value` into a Vec cannot fail (no I/O, string keys only).
    if serde_json::to_writer(&mut *out, value).is_ok() {
        out.push(b'\n');
    }
}

/// Reads whatever the peer has sent (stopping once a line is over-long); marks the connection
/// closing on EOF or error.
fn read_available(conn: &mut Conn, max_line: usize) {
    let mut chunk = [0u8; 4096];
    loop {
        match conn.stream.read(&mut chunk) {
            Ok(0) => {
                conn.closing = true;
                return;
            }
            Ok(n) => {
                conn.inbuf.extend_from_slice(&chunk[..n]);
                if conn.inbuf.len() > max_line + chunk.len() {
                    return; // the caller sees the over-long line
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => {
                conn.closing = true;
                conn.awaiting = 0;
                conn.outbuf.clear();
                return;
            }
        }
    }
}

/// Writes as much of the pending output as the socket takes.
fn write_available(conn: &mut Conn) {
    while !conn.outbuf.is_empty() {
        match conn.stream.write(&conn.outbuf) {
            Ok(0) => {
                conn.outbuf.clear();
                conn.closing = true;
                conn.awaiting = 0;
            }
            Ok(n) => {
                conn.outbuf.drain(..n);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => {
                conn.outbuf.clear();
                conn.closing = true;
                conn.awaiting = 0;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::{BufRead, BufReader};
    use std::time::Duration;

    use super::*;
    use crate::driver::EMPTY_EVENT;

    /// Serves `server` until `done` says so (or 5 s pass), answering every request with its
    /// `op` as data (`"fail"` gets an error).
    fn serve_until(
        server: &mut MgmtServer,
        epoll: &Epoll,
        mut done: impl FnMut(&MgmtServer) -> bool,
    ) {
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        let mut events = [EMPTY_EVENT; 16];
        let mut happened = Vec::new();
        while !done(server) {
            assert!(std::time::Instant::now() < deadline, "timed out");
            let n = epoll.wait(&mut events, 50).expect("wait");
            for ev in &events[..n] {
                let (token, flags) = (ev.u64, ev.events);
                if server.owns(token) {
                    server.on_event(epoll, token, flags, &mut happened, |_, _, request| {
                        Some(if request.op == "fail" {
                            Err(MgmtError::new("refused", "as asked"))
                        } else {
                            Ok(Value::String(request.op.clone()))
                        })
                    });
                }
            }
            happened.clear();
        }
    }

    fn read_line(reader: &mut impl BufRead) -> Value {
        let mut line = String::new();
        reader.read_line(&mut line).expect("a reply line");
        serde_json::from_str(&line).unwrap_or(Value::Null)
    }

    #[test]
    fn tcp_clients_are_bounded_and_malformed_or_long_lines_get_errors() {
        let epoll = Epoll::new().expect("epoll");
        let limits = Limits {
            max_line: 64,
            max_clients: 1,
            max_unread: 1024,
        };
        let mut server =
            MgmtServer::bind(&Listen::Tcp("127.0.0.1:0".into()), &epoll, 1 << 62, limits)
                .expect("bind");
        let addr = server.local_addr().expect("tcp address");
        assert!(!server.owns(5) && server.owns(1 << 62) && server.owns((1 << 62) + 9));

        let first = TcpStream::connect(addr).expect("connect");
        first
            .set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        (&first)
            .write_all(b"{\"op\":\"ping\",\"id\":1}\n[]\n{\"op\":\"fail\",\"id\":2}\n")
            .expect("write");
        serve_until(&mut server, &epoll, |_| lines_waiting(&first) >= 3);
        let mut reader = BufReader::new(&first);
        assert_eq!(
            read_line(&mut reader),
            serde_json::json!({"id": 1, "ok": true, "data": "ping"})
        );
        let bad = read_line(&mut reader);
        assert_eq!(bad["error"]["code"], "bad_request", "{bad}");
        let refused = read_line(&mut reader);
        assert_eq!(refused["id"], 2);
        assert_eq!(refused["error"]["code"], "refused", "{refused}");

        // A second client is over the limit: told so, then closed.
        let second = TcpStream::connect(addr).expect("connect");
        second
            .set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        serve_until(&mut server, &epoll, |_| lines_waiting(&second) >= 1);
        let mut reader2 = BufReader::new(&second);
        let refused = read_line(&mut reader2);
        assert_eq!(refused["error"]["code"], "too_many_clients", "{refused}");
        let mut rest = String::new();
        assert_eq!(reader2.read_line(&mut rest).expect("eof"), 0, "closed");

        // An over-long line: an error, then the connection closes.
        let mut long = vec![b'x'; 200];
        long.push(b'\n');
        (&first).write_all(&long).expect("write");
        serve_until(&mut server, &epoll, |s| s.clients().is_empty());
        let long = read_line(&mut reader);
        assert_eq!(long["error"]["code"], "line_too_long", "{long}");
        let mut rest = String::new();
        // EOF, or a reset if the kernel still held unread bytes of ours when the server closed.
        assert!(
            matches!(reader.read_line(&mut rest), Ok(0) | Err(_)),
            "closed: {rest}"
        );
        assert_eq!(server.stats().requests, 4);
        assert_eq!(server.stats().errors, 4);
        assert_eq!(server.stats().refused_clients, 1);
    }

    /// Complete lines waiting on `stream` (read without consuming them).
    fn lines_waiting(stream: &TcpStream) -> usize {
        let mut buf = [0u8; 1024];
        stream.set_nonblocking(true).expect("nb");
        let n = stream.peek(&mut buf).unwrap_or(0);
        stream.set_nonblocking(false).expect("blocking");
        buf[..n].iter().filter(|&&b| b == b'\n').count()
    }

    #[test]
    fn a_unix_client_that_shuts_down_its_side_still_gets_its_reply() {
        let path = std::env::temp_dir().join(format!("rtl-mgmt-{}.sock", std::process::id()));
        let epoll = Epoll::new().expect("epoll");
        let mut server = MgmtServer::bind(
            &Listen::Unix(path.clone()),
            &epoll,
            1 << 62,
            Limits::default(),
        )
        .expect("bind");
        let client = UnixStream::connect(&path).expect("connect");
        client
            .set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        (&client).write_all(b"{\"op\":\"stats\"}\n").expect("write");
        client
            .shutdown(std::net::Shutdown::Write)
            .expect("half close");
        serve_until(&mut server, &epoll, |s| s.stats().requests == 1);
        let mut reader = BufReader::new(&client);
        assert_eq!(
            read_line(&mut reader),
            serde_json::json!({"id": null, "ok": true, "data": "stats"})
        );
        serve_until(&mut server, &epoll, |s| s.clients().is_empty());
        let mut rest = String::new();
        assert_eq!(reader.read_line(&mut rest).expect("eof"), 0);
        drop(server);
        assert!(!path.exists(), "socket file removed on drop");
    }

    #[test]
    fn a_unix_clients_user_id_is_known() {
        let path = std::env::temp_dir().join(format!("rtl-mgmt-uid-{}.sock", std::process::id()));
        let epoll = Epoll::new().expect("epoll");
        let mut server = MgmtServer::bind(
            &Listen::Unix(path.clone()),
            &epoll,
            1 << 62,
            Limits::default(),
        )
        .expect("bind");
        let client = UnixStream::connect(&path).expect("connect");
        (&client).write_all(b"{\"op\":\"ping\"}\n").expect("write");
        serve_until(&mut server, &epoll, |s| s.stats().requests == 1);
        // SAFETY: geteuid(2) has no preconditions.
        let uid = unsafe { libc::geteuid() };
        assert_eq!(
            server.peer_uid(0),
            Some(uid),
            "the peer's uid from SO_PEERCRED"
        );
        assert_eq!(server.peer_uid(7), None, "no such client");
        drop(client);
    }
}
