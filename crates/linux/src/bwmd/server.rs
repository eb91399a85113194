//! The bandwidth manager's TCP server around [`Manager`] (Löser/Härtig §3.2 "Admission
//! process"): the one management envelope (`docs/mgmt.md`; operations in `docs/bwm.md`) served
//! by the [`mgmt`](crate::mgmt) server on one thread and one `epoll` — no thread per client,
//! at most [`MAX_CLIENTS`] clients, lines of at most [`MAX_LINE`] bytes. Each change is
//! journalled before its reply is queued. The loop wakes at least every 100 ms to expire
//! best-effort reservations and leases and to notice the stop flag.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use rtlan_core::bwm::{ErrorCode, Manager, Op, Reply, Request, Response};
use serde_json::Value;

use super::store::{Journal, StoreError};
use crate::clock;
use crate::driver::{Epoll, EMPTY_EVENT};
use crate::mgmt::{Limits, Listen, MgmtError, MgmtServer};

/// Longest accepted request line, bytes; a longer one gets an error and the connection is closed.
pub const MAX_LINE: usize = 64 * 1024;

/// Most clients connected at once (every rtcd of the network keeps one connection).
pub const MAX_CLIENTS: usize = 1024;

/// Epoll token of the listener; clients use the tokens just above.
const LISTENER_TOKEN: u64 = 1 << 62;
/// Longest sleep, so that expiries and the stop flag are seen promptly.
const MAX_SLEEP_MS: i32 = 100;

/// The server could not start or failed.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// Binding or accepting failed.
    #[error("listen {addr}: {source}")]
    Listen {
        /// The address.
        addr: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The state file could not be read or written.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The manager and its journal, changed together.
struct Inner {
    manager: Manager,
    journal: Journal,
}

impl Inner {
    /// Journals what changed (before the reply goes out); a whole snapshot if the manager
    /// reports a change it has no journal entry for.
    fn persist(&mut self) {
        let changes = self.manager.take_changes();
        let m = &self.manager;
        if let Err(e) = self.journal.append(&changes, || m.snapshot()) {
            tracing::error!("bwm: persisting state failed: {e}");
        }
    }

    /// Answers one operation.
    fn handle(&mut self, id: Option<u64>, op: Op) -> Result<Value, MgmtError> {
        // The core's request id is only echoed in its `Response`, which the envelope replaces.
        let request = Request {
            id: id.unwrap_or(0),
            op,
        };
        let response = self.manager.handle_request(clock::now(), request);
        self.persist();
        response_to_result(response)
    }

    fn expire(&mut self) {
        let now = clock::now();
        if self.manager.poll_timeout().is_some_and(|t| t <= now) {
            self.manager.handle_timeout(now);
            // An expired lease removes a guaranteed booking: persist that too.
            self.persist();
        }
    }
}

/// The name of an error code on the wire (`snake_case`, `docs/bwm.md`).
fn code_name(code: ErrorCode) -> String {
    match serde_json::to_value(code) {
        Ok(Value::String(s)) => s,
        _ => format!("{code:?}"),
    }
}

/// A core response as the envelope's result: `data` is the reply object (tagged by `result`),
/// an error keeps its violations as a detail.
pub fn response_to_result(response: Response) -> Result<Value, MgmtError> {
    match response.reply {
        Reply::Error {
            code,
            message,
            violations,
        } => {
            let mut error = MgmtError::new(code_name(code), message);
            if !violations.is_empty() {
                let list = serde_json::to_value(violations).unwrap_or(Value::Null);
                error = error.with("violations", list);
            }
            Err(error)
        }
        reply => serde_json::to_value(reply).map_err(|e| MgmtError::new("internal", e.to_string())),
    }
}

/// The core response a client reads from an envelope result (the inverse of
/// [`response_to_result`]); `None` if the data is not a reply of this protocol.
pub fn result_to_response(id: Option<u64>, result: Result<Value, MgmtError>) -> Option<Response> {
    let reply = match result {
        Ok(data) => serde_json::from_value::<Reply>(data).ok()?,
        Err(mut e) => {
            let code = serde_json::from_value(Value::String(e.code.clone())).ok()?;
            let violations = match e.details.remove("violations") {
                Some(v) => serde_json::from_value(v).ok()?,
                None => Vec::new(),
            };
            Reply::Error {
                code,
                message: e.message,
                violations,
            }
        }
    };
    Some(Response::new(id, reply))
}

/// A bound bandwidth-manager server.
pub struct Server {
    epoll: Epoll,
    clients: MgmtServer,
    inner: Inner,
}

impl Server {
    /// Loads the state file and its journal (missing = empty), re-admits the bookings into
    /// `manager`, writes them back as a fresh snapshot with an empty journal, and binds `listen`.
    /// Bookings the topology no longer admits are logged and dropped.
    pub fn bind(
        mut manager: Manager,
        listen: &str,
        state_path: PathBuf,
    ) -> Result<Server, ServerError> {
        let state = Journal::load(&state_path)?;
        for (conn, why) in manager.restore(state) {
            let reason = match &why.reply {
                rtlan_core::bwm::Reply::Error { code, message, .. } => {
                    format!("{code:?}: {message}")
                }
                other => format!("{other:?}"),
            };
            tracing::warn!(
                conn,
                state = %state_path.display(),
                "bwm: persisted booking {conn} no longer fits the network and is dropped ({reason})"
            );
        }
        manager.take_changed();
        let journal = Journal::create(&state_path, &manager.snapshot())?;
        let err = |source| ServerError::Listen {
            addr: listen.to_string(),
            source,
        };
        let epoll = Epoll::new().map_err(err)?;
        let limits = Limits {
            max_line: MAX_LINE,
            max_clients: MAX_CLIENTS,
            ..Limits::default()
        };
        let clients = MgmtServer::bind(
            &Listen::Tcp(listen.to_string()),
            &epoll,
            LISTENER_TOKEN,
            limits,
        )
        .map_err(|e| ServerError::Listen {
            addr: listen.to_string(),
            source: match e {
                crate::mgmt::ServerError::Io { source, .. } => source,
                other => std::io::Error::other(other.to_string()),
            },
        })?;
        Ok(Server {
            epoll,
            clients,
            inner: Inner { manager, journal },
        })
    }

    /// The address actually bound (useful with port 0).
    pub fn local_addr(&self) -> Result<SocketAddr, ServerError> {
        self.clients
            .local_addr()
            .ok_or_else(|| ServerError::Listen {
                addr: "bound socket".into(),
                source: std::io::Error::other("no TCP address"),
            })
    }

    /// Serves until `stop` is set; then every client connection is closed.
    pub fn run(mut self, stop: &AtomicBool) -> Result<(), ServerError> {
        let mut events = [EMPTY_EVENT; 64];
        let mut happened = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            let n = self
                .epoll
                .wait(&mut events, MAX_SLEEP_MS)
                .map_err(|source| ServerError::Listen {
                    addr: "epoll".into(),
                    source,
                })?;
            self.inner.expire();
            for ev in &events[..n] {
                let (token, flags) = (ev.u64, ev.events);
                if self.clients.owns(token) {
                    let inner = &mut self.inner;
                    self.clients.on_event(
                        &self.epoll,
                        token,
                        flags,
                        &mut happened,
                        |_, _, request| {
                            Some(
                                request
                                    .decode::<Op>()
                                    .and_then(|op| inner.handle(request.id, op)),
                            )
                        },
                    );
                }
            }
            // Only closed connections are reported: every request was answered above.
            happened.clear();
        }
        Ok(())
    }
}
