//! The switch daemon's control socket: a Unix stream socket speaking the one management
//! envelope (`docs/mgmt.md`; the switch's operations in `docs/switch.md`), served by the
//! [`mgmt`](crate::mgmt) server from the data-plane loop's `epoll` — requests are rare, so they
//! share the thread rather than needing locks.
//!
//! Each request line `{"op": ..., "id": ...}` is one [`Request`] and gets exactly one reply
//! line. A malformed or unknown request gets an error reply; a client that sends an over-long
//! line or never reads its replies is disconnected. Nothing a client sends can stop the switch.

use std::io;
use std::path::{Path, PathBuf};

use crate::driver::Epoll;
use crate::mgmt::{Limits, Listen, MgmtError, MgmtEvent, MgmtServer, ServerError};

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

/// A control request: the `op` of a request line (`docs/switch.md`).
#[derive(Debug, Clone, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(tag = "op", rename_all = "lowercase")]
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
    /// Starts writing a port's received and transmitted frames to a pcap file
    /// ([`crate::capture`]); answers the capture's status.
    Capture(crate::capture::CaptureArgs),
    /// Stops the running capture; answers its status (`state` becomes `done` once the writer
    /// has closed the file).
    #[serde(rename = "capture-stop", alias = "capture_stop")]
    CaptureStop,
    /// The running or last capture's status.
    #[serde(rename = "capture-status", alias = "capture_status")]
    CaptureStatus,
}

/// Longest request line accepted.
pub const MAX_REQUEST_LINE: usize = 64 * 1024;
/// Most reply bytes buffered for a client that is not reading before it is dropped.
const MAX_PENDING_REPLY: usize = 16 * 1024 * 1024;
/// Most simultaneous client connections.
pub const MAX_CONNECTIONS: usize = 32;

/// The listening socket and its connections.
#[derive(Debug)]
pub(crate) struct ControlServer {
    server: MgmtServer,
    /// Scratch list of what the server saw (kept to reuse its allocation).
    events: Vec<MgmtEvent>,
}

impl ControlServer {
    /// Binds `path` (replacing a stale socket file, creating the parent directory) and registers
    /// the listener with `epoll` under the driver's first user token.
    pub(crate) fn bind(path: &Path, epoll: &Epoll) -> Result<Self, ControlError> {
        let limits = Limits {
            max_line: MAX_REQUEST_LINE,
            max_clients: MAX_CONNECTIONS,
            max_unread: MAX_PENDING_REPLY,
        };
        let listen = Listen::Unix(path.to_path_buf());
        let server = MgmtServer::bind(&listen, epoll, crate::driver::USER_TOKEN_BASE, limits)
            .map_err(|e| match e {
                ServerError::InUse(p) => ControlError::InUse(p),
                ServerError::NotASocket(p) => ControlError::NotASocket(p),
                ServerError::Io { source, .. } => ControlError::Io {
                    path: path.to_path_buf(),
                    source,
                },
            })?;
        Ok(ControlServer {
            server,
            events: Vec::new(),
        })
    }

    /// Request lines received (valid or not).
    pub(crate) fn requests(&self) -> u64 {
        self.server.stats().requests
    }

    /// Replies with `"ok": false` sent.
    pub(crate) fn errors(&self) -> u64 {
        self.server.stats().errors
    }

    /// Handles an epoll event for one of our tokens, answering every complete request line
    /// (decoded as `R`: the switch's [`Request`], or another daemon's) with `respond`.
    pub(crate) fn on_event<R, F>(&mut self, epoll: &Epoll, token: u64, flags: u32, mut respond: F)
    where
        R: serde::de::DeserializeOwned,
        F: FnMut(R) -> Result<serde_json::Value, MgmtError>,
    {
        if !self.server.owns(token) {
            return;
        }
        self.server
            .on_event(epoll, token, flags, &mut self.events, |_, _, request| {
                Some(request.decode::<R>().and_then(&mut respond))
            });
        // Only closed connections are reported: every request was answered above.
        self.events.clear();
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::os::unix::net::{UnixListener, UnixStream};

    use super::*;
    use crate::driver::EMPTY_EVENT;

    fn respond(req: Request) -> Result<serde_json::Value, MgmtError> {
        match req {
            Request::Ping => Ok(serde_json::json!("pong")),
            Request::Arp => Err(MgmtError::new("internal", "no arp today")),
            other => Ok(serde_json::json!(format!("{other:?}"))),
        }
    }

    #[test]
    fn every_documented_op_parses_and_others_do_not() {
        for (op, request) in [
            ("stats", Request::Stats),
            ("fdb", Request::Fdb),
            ("arp", Request::Arp),
            ("config", Request::Config),
            ("ping", Request::Ping),
            ("connections", Request::Connections),
            ("flush-arp", Request::FlushArp),
            ("setup-latency", Request::SetupLatency),
            ("capture-stop", Request::CaptureStop),
            ("capture_stop", Request::CaptureStop),
            ("capture-status", Request::CaptureStatus),
            ("capture_status", Request::CaptureStatus),
        ] {
            let line = format!(r#"{{"op":"{op}","id":1}}"#);
            let envelope = crate::mgmt::parse_line(line.as_bytes()).expect("envelope");
            assert_eq!(envelope.decode::<Request>(), Ok(request), "{op}");
        }
        let line = br#"{"op":"capture","id":2,"port":"p0","path":"/tmp/p0.pcap","frames":100}"#;
        let envelope = crate::mgmt::parse_line(line).expect("envelope");
        let Ok(Request::Capture(args)) = envelope.decode::<Request>() else {
            panic!("capture parses");
        };
        assert_eq!(args.frames, Some(100));
        assert!(!args.overwrite);
        for op in ["reboot", "flusharp", "Stats", "capture"] {
            let line = format!(r#"{{"op":"{op}"}}"#);
            let envelope = crate::mgmt::parse_line(line.as_bytes()).expect("envelope");
            assert!(envelope.decode::<Request>().is_err(), "{op}");
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
            .write_all(b"{\"op\":\"ping\",\"id\":4}\n\ngarbage\n{\"op\":\"arp\"}\n{\"op\":\"st")
            .expect("write");
        let mut events = [EMPTY_EVENT; 8];
        let mut received = Vec::new();
        client.set_nonblocking(true).expect("nb");
        while received.iter().filter(|&&b| b == b'\n').count() < 3 {
            let n = epoll.wait(&mut events, 1000).expect("wait");
            assert!(n > 0, "no event");
            for ev in &events[..n] {
                let (token, flags) = (ev.u64, ev.events);
                server.on_event(&epoll, token, flags, respond);
            }
            let mut buf = [0u8; 1024];
            if let Ok(k) = client.read(&mut buf) {
                received.extend_from_slice(&buf[..k]);
            }
        }
        let text = String::from_utf8(received).expect("utf8");
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("json"))
            .collect();
        assert_eq!(
            lines[0],
            serde_json::json!({"id": 4, "ok": true, "data": "pong"})
        );
        assert_eq!(lines[1]["ok"], false);
        assert_eq!(lines[1]["error"]["code"], "bad_request");
        assert_eq!(lines[2]["id"], serde_json::Value::Null);
        assert_eq!(lines[2]["error"]["message"], "no arp today");
        assert_eq!(server.requests(), 3);
        assert_eq!(server.errors(), 2);
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
