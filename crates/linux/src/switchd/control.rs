//! The switch daemon's control socket (protocol in `docs/switch.md`): a Unix stream socket
//! speaking JSON lines, served non-blocking from the data-plane loop's `epoll` — requests are
//! rare, so they share the thread rather than needing locks.
//!
//! Each request line is one [`Request`]; each gets exactly one reply line,
//! `{"ok":true,"data":...}` or `{"ok":false,"error":"..."}`. A malformed or unknown request gets
//! an error reply; a client that sends an over-long line or never reads its replies is
//! disconnected. Nothing a client sends can stop the switch.

use crate::unix_socket::BindError;
use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

use super::epoll::Epoll;

/// The control socket could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    /// Another process is serving this path.
    #[error("{0} is in use by a running process")]
    InUse(PathBuf),
    /// Something that is not a socket exists at the path.
    #[error("{0} exists and is not a socket; refusing to replace it")]
    NotASocket(PathBuf),
    /// A file-system or socket call failed.
    #[error("control socket {path}: {source}")]
    Io {
        /// The socket path.
        path: PathBuf,
        /// The system error.
        #[source]
        source: io::Error,
    },
}

/// A control request: the `cmd` field of a request line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(tag = "cmd", rename_all = "lowercase")]
pub enum Request {
    /// Counters: the core's `SwitchStats`, the shell's port counters, timer lateness.
    Stats,
    /// The learning table.
    Fdb,
    /// The switch's internal ARP cache.
    Arp,
    /// The configuration in force.
    Config,
    /// Liveness check; answers `"pong"`.
    Ping,
    /// The real-time connection table, one entry per connection (`docs/switch.md`).
    Connections,
    /// Clears the internal ARP cache; answers the number of entries removed.
    #[serde(rename = "flush-arp")]
    FlushArp,
    /// Per-hop SETUP handling times: `{"hit_ns":[...],"miss_ns":[...]}`.
    #[serde(rename = "setup-latency")]
    SetupLatency,
}

/// Longest request line accepted.
pub const MAX_REQUEST_LINE: usize = 64 * 1024;
/// Most reply bytes buffered for a client that is not reading before it is dropped.
const MAX_PENDING_REPLY: usize = 16 * 1024 * 1024;
/// Most simultaneous client connections.
pub const MAX_CONNECTIONS: usize = 32;

/// Epoll token of the listening socket; connections use `CONN_TOKEN_BASE + id`.
pub(super) const LISTENER_TOKEN: u64 = 1 << 62;
const CONN_TOKEN_BASE: u64 = (1 << 62) + 1;

#[derive(Debug)]
struct Conn {
    stream: UnixStream,
    inbuf: Vec<u8>,
    outbuf: Vec<u8>,
    /// Peer closed its side or misbehaved: close once `outbuf` is written.
    closing: bool,
    /// Currently registered for EPOLLOUT.
    want_write: bool,
}

/// The listening socket and its connections.
#[derive(Debug)]
pub(super) struct ControlServer {
    listener: UnixListener,
    path: PathBuf,
    conns: HashMap<u64, Conn>,
    next_id: u64,
    /// Requests answered (ok or error).
    pub(super) requests: u64,
    /// Requests answered with an error.
    pub(super) errors: u64,
}

impl ControlServer {
    /// Binds `path` (replacing a stale socket file, creating the parent directory) and registers
    /// the listener with `epoll`.
    pub(super) fn bind(path: &Path, epoll: &Epoll) -> Result<Self, ControlError> {
        let io_err = |source| ControlError::Io {
            path: path.to_path_buf(),
            source,
        };
        let listener = crate::unix_socket::bind_listener(path).map_err(|e| match e {
            BindError::InUse => ControlError::InUse(path.to_path_buf()),
            BindError::NotASocket => ControlError::NotASocket(path.to_path_buf()),
            BindError::Io(source) => io_err(source),
        })?;
        epoll
            .add(listener.as_raw_fd(), libc::EPOLLIN as u32, LISTENER_TOKEN)
            .map_err(io_err)?;
        Ok(ControlServer {
            listener,
            path: path.to_path_buf(),
            conns: HashMap::new(),
            next_id: 0,
            requests: 0,
            errors: 0,
        })
    }

    /// Whether `token` belongs to the control server.
    pub(super) fn owns(token: u64) -> bool {
        token >= LISTENER_TOKEN
    }

    /// Handles an epoll event for one of our tokens, answering complete request lines with
    /// `respond`.
    pub(super) fn on_event<F>(&mut self, epoll: &Epoll, token: u64, events: u32, mut respond: F)
    where
        F: FnMut(Request) -> Result<serde_json::Value, String>,
    {
        if token == LISTENER_TOKEN {
            self.accept(epoll);
            return;
        }
        let Some(conn) = self.conns.get_mut(&token) else {
            return;
        };
        if events & (libc::EPOLLIN | libc::EPOLLHUP | libc::EPOLLERR) as u32 != 0 {
            read_available(conn);
            while let Some(pos) = conn.inbuf.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = conn.inbuf.drain(..=pos).collect();
                let line = line.strip_suffix(b"\n").unwrap_or(&line);
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                let reply = answer(line, &mut respond);
                self.requests += 1;
                if reply.get("ok") != Some(&serde_json::Value::Bool(true)) {
                    self.errors += 1;
                }
                push_line(&mut conn.outbuf, &reply);
            }
            if conn.inbuf.len() > MAX_REQUEST_LINE {
                conn.inbuf.clear();
                self.requests += 1;
                self.errors += 1;
                let reply = error_reply(&format!(
                    "request line longer than {MAX_REQUEST_LINE} bytes"
                ));
                push_line(&mut conn.outbuf, &reply);
                conn.closing = true;
            }
        }
        write_available(conn);
        let done = conn.closing && conn.outbuf.is_empty();
        let overflow = conn.outbuf.len() > MAX_PENDING_REPLY;
        if done || overflow {
            self.close(epoll, token);
            return;
        }
        let want_write = !conn.outbuf.is_empty();
        if want_write != conn.want_write {
            conn.want_write = want_write;
            let events = if want_write {
                libc::EPOLLIN | libc::EPOLLOUT
            } else {
                libc::EPOLLIN
            };
            if epoll
                .modify(conn.stream.as_raw_fd(), events as u32, token)
                .is_err()
            {
                self.close(epoll, token);
            }
        }
    }

    fn accept(&mut self, epoll: &Epoll) {
        loop {
            let stream = match self.listener.accept() {
                Ok((stream, _)) => stream,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) => {
                    tracing::debug!("control accept: {e}");
                    return;
                }
            };
            if self.conns.len() >= MAX_CONNECTIONS || stream.set_nonblocking(true).is_err() {
                continue; // dropped: the client sees the connection close
            }
            let token = CONN_TOKEN_BASE + self.next_id;
            self.next_id += 1;
            if epoll
                .add(stream.as_raw_fd(), libc::EPOLLIN as u32, token)
                .is_err()
            {
                continue;
            }
            self.conns.insert(
                token,
                Conn {
                    stream,
                    inbuf: Vec::new(),
                    outbuf: Vec::new(),
                    closing: false,
                    want_write: false,
                },
            );
        }
    }

    fn close(&mut self, epoll: &Epoll, token: u64) {
        if let Some(conn) = self.conns.remove(&token) {
            let _ = epoll.delete(conn.stream.as_raw_fd());
        }
    }
}

impl Drop for ControlServer {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Reads whatever the peer has sent; marks the connection closing on EOF or error.
fn read_available(conn: &mut Conn) {
    let mut chunk = [0u8; 4096];
    loop {
        match conn.stream.read(&mut chunk) {
            Ok(0) => {
                conn.closing = true;
                return;
            }
            Ok(n) => {
                conn.inbuf.extend_from_slice(&chunk[..n]);
                if conn.inbuf.len() > MAX_REQUEST_LINE && !conn.inbuf.contains(&b'\n') {
                    return;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => {
                conn.closing = true;
                conn.outbuf.clear();
                return;
            }
        }
    }
}

/// Writes as much of the pending reply as the socket takes.
fn write_available(conn: &mut Conn) {
    while !conn.outbuf.is_empty() {
        match conn.stream.write(&conn.outbuf) {
            Ok(0) => break,
            Ok(n) => {
                conn.outbuf.drain(..n);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => {
                conn.outbuf.clear();
                conn.closing = true;
                break;
            }
        }
    }
}

/// `{"ok": ok, key: value}`, built without `json!` (whose expansion unwraps).
fn reply(ok: bool, key: &str, value: serde_json::Value) -> serde_json::Value {
    let mut map = serde_json::Map::new();
    map.insert("ok".to_string(), serde_json::Value::Bool(ok));
    map.insert(key.to_string(), value);
    serde_json::Value::Object(map)
}

fn error_reply(message: &str) -> serde_json::Value {
    reply(
        false,
        "error",
        serde_json::Value::String(message.to_string()),
    )
}

/// The reply to one request line.
fn answer<F>(line: &[u8], respond: &mut F) -> serde_json::Value
where
    F: FnMut(Request) -> Result<serde_json::Value, String>,
{
    match serde_json::from_slice::<Request>(line) {
        Err(e) => error_reply(&format!("bad request: {e}")),
        Ok(request) => match respond(request) {
            Ok(data) => reply(true, "data", data),
            Err(message) => error_reply(&message),
        },
    }
}

fn push_line(out: &mut Vec<u8>, value: &serde_json::Value) {
    // Serializing a `Value` to a Vec cannot fail (no I/O, string keys only).
    if serde_json::to_writer(&mut *out, value).is_ok() {
        out.push(b'\n');
    }
}

#[cfg(test)]
mod tests {
    use super::super::epoll::EMPTY_EVENT;
    use super::*;

    fn respond(req: Request) -> Result<serde_json::Value, String> {
        match req {
            Request::Ping => Ok(serde_json::json!("pong")),
            Request::Arp => Err("no arp today".into()),
            other => Ok(serde_json::json!(format!("{other:?}"))),
        }
    }

    #[test]
    fn answers_known_requests_and_rejects_bad_ones() {
        let mut r = respond;
        assert_eq!(
            answer(br#"{"cmd":"ping"}"#, &mut r),
            serde_json::json!({"ok": true, "data": "pong"})
        );
        assert_eq!(answer(br#" {"cmd" : "fdb"} "#, &mut r)["data"], "Fdb");
        for (line, name) in [
            (&br#"{"cmd":"connections"}"#[..], "Connections"),
            (br#"{"cmd":"flush-arp"}"#, "FlushArp"),
            (br#"{"cmd":"setup-latency"}"#, "SetupLatency"),
        ] {
            assert_eq!(answer(line, &mut r)["data"], name);
        }
        assert_eq!(
            answer(br#"{"cmd":"arp"}"#, &mut r),
            serde_json::json!({"ok": false, "error": "no arp today"})
        );
        for bad in [
            &br#"{"cmd":"reboot"}"#[..],
            br#"{"cmd":"flusharp"}"#,
            b"not json",
            b"{}",
            b"\xff\xfe",
        ] {
            let reply = answer(bad, &mut r);
            assert_eq!(reply["ok"], false, "{reply}");
            assert!(
                reply["error"]
                    .as_str()
                    .is_some_and(|e| e.starts_with("bad request")),
                "{reply}"
            );
        }
    }

    #[test]
    fn serves_lines_over_a_real_socket() {
        let dir = std::env::temp_dir().join(format!("rtl-lnx-ctl-{}", std::process::id()));
        let path = dir.join("sub/ctl.sock");
        let epoll = Epoll::new().expect("epoll");
        let mut server = ControlServer::bind(&path, &epoll).expect("bind");
        assert!(matches!(
            ControlServer::bind(&path, &epoll),
            Err(ControlError::InUse(_))
        ));

        let mut client = UnixStream::connect(&path).expect("connect");
        client
            .write_all(b"{\"cmd\":\"ping\"}\n\ngarbage\n{\"cmd\":\"st")
            .expect("write");
        client
            .set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .expect("timeout");
        let mut events = [EMPTY_EVENT; 8];
        let mut received = Vec::new();
        while received.iter().filter(|&&b| b == b'\n').count() < 2 {
            let n = epoll.wait(&mut events, 1000).expect("wait");
            assert!(n > 0, "no event");
            for ev in &events[..n] {
                let (token, flags) = (ev.u64, ev.events);
                server.on_event(&epoll, token, flags, respond);
            }
            let mut buf = [0u8; 1024];
            client.set_nonblocking(true).expect("nb");
            if let Ok(k) = client.read(&mut buf) {
                received.extend_from_slice(&buf[..k]);
            }
        }
        let text = String::from_utf8(received).expect("utf8");
        let lines: Vec<&str> = text.lines().collect();
        let first: serde_json::Value = serde_json::from_str(lines[0]).expect("json");
        assert_eq!(first, serde_json::json!({"ok": true, "data": "pong"}));
        let second: serde_json::Value = serde_json::from_str(lines[1]).expect("json");
        assert_eq!(second["ok"], false);
        assert_eq!(server.requests, 2);
        assert_eq!(server.errors, 1);
        drop(client);
        drop(server);
        assert!(!path.exists(), "socket file removed on drop");
        let _ = std::fs::remove_dir_all(&dir);

        // A stale socket file (no listener) is replaced; a regular file is not.
        let stale = std::env::temp_dir().join(format!("rtl-lnx-stale-{}.sock", std::process::id()));
        drop(UnixListener::bind(&stale).expect("bind stale"));
        let server = ControlServer::bind(&stale, &epoll).expect("stale socket replaced");
        drop(server);
        std::fs::write(&stale, b"x").expect("write file");
        assert!(matches!(
            ControlServer::bind(&stale, &epoll),
            Err(ControlError::NotASocket(_))
        ));
        let _ = std::fs::remove_file(&stale);
    }
}
