//! The bandwidth manager's TCP server around [`Manager`] (Löser/Härtig §3.2 "Admission
//! process"): the one management envelope (`docs/mgmt.md`; operations in `docs/bwm.md`) served
//! by the [`mgmt`](crate::mgmt) server on one thread and one `epoll` — no thread per client,
//! at most [`ServerConfig::max_clients`] clients (one more is told `too_many_clients` and
//! closed), lines of at most [`MAX_LINE`] bytes, and a client silent for
//! [`ServerConfig::idle_timeout`] is closed. With tokens configured ([`ServerConfig::tokens`])
//! every request must carry a known `token` in its envelope, else it is refused
//! `unauthenticated`; the caller it names owns what it books (`rtlan_core::bwm::auth`).
//! Each change is journalled before its reply is queued. The loop wakes at least every 100 ms
//! to expire best-effort reservations and leases, close idle clients and notice the stop flag.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rtlan_core::bwm::{
    AuthError, Caller, ErrorCode, Manager, Op, Reply, Request, Response, Tokens,
};
use serde_json::Value;

use super::store::{Journal, StoreError};
use crate::clock;
use crate::driver::{Epoll, EMPTY_EVENT};
use crate::mgmt::{Envelope, Limits, Listen, MgmtError, MgmtServer};

/// Longest accepted request line, bytes; a longer one gets an error and the connection is closed.
pub const MAX_LINE: usize = 64 * 1024;

/// Most clients connected at once by default (every rtcd of the network keeps one connection).
pub const MAX_CLIENTS: usize = 1024;

/// Default idle time-out: well above the host daemon's refresh period (10 s), which keeps its
/// connection busy; a daemon whose connection was closed reconnects for its next request.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(120);

/// How the server treats its clients.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// The token table; empty = open (every request is the anonymous operator).
    pub tokens: Tokens,
    /// Most clients connected at once.
    pub max_clients: usize,
    /// Close a client that sends nothing for this long (none: never).
    pub idle_timeout: Option<Duration>,
    /// The tokens file `tokens` came from: read again on SIGHUP.
    pub tokens_path: Option<PathBuf>,
    /// The Prometheus endpoint's address (`GET /metrics`); `None` = off.
    pub metrics_listen: Option<SocketAddr>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            tokens: Tokens::default(),
            max_clients: MAX_CLIENTS,
            idle_timeout: Some(IDLE_TIMEOUT),
            tokens_path: None,
            metrics_listen: None,
        }
    }
}

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
    /// The state is held by another manager, or cannot be locked.
    #[error(transparent)]
    Lock(#[from] super::lock::LockError),
}

/// The manager and its journal, changed together, and who may ask.
struct Inner {
    manager: Manager,
    journal: Journal,
    tokens: Tokens,
    /// Requests refused `unauthenticated` so far.
    unauthenticated: u64,
    /// Refused requests by error code, and all requests (the metrics page).
    refused: std::collections::BTreeMap<String, u64>,
    requests: u64,
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

    /// The caller a request's envelope names by its `token` (a string; anything else is no
    /// token); `unauthenticated` if tokens are configured and it names none of them.
    fn authenticate(&mut self, request: &Envelope) -> Result<Caller, MgmtError> {
        let token = request.body.get("token").and_then(Value::as_str);
        self.tokens.authenticate(token).map_err(|e| {
            self.unauthenticated += 1;
            let why = match e {
                AuthError::Missing => "no token",
                AuthError::Unknown => "an unknown token",
            };
            tracing::warn!(
                op = %request.op,
                refused = self.unauthenticated,
                "bwm: refused a request with {why}"
            );
            MgmtError::new(code_name(ErrorCode::Unauthenticated), e.to_string())
        })
    }

    /// Answers one request line: authenticates it, decodes its operation and runs it as the
    /// caller.
    fn handle(&mut self, request: &Envelope) -> Result<Value, MgmtError> {
        self.requests += 1;
        let result = self.answer(request);
        if let Err(e) = &result {
            *self.refused.entry(e.code.clone()).or_default() += 1;
        }
        result
    }

    fn answer(&mut self, request: &Envelope) -> Result<Value, MgmtError> {
        let caller = self.authenticate(request)?;
        let op = request.decode::<Op>()?;
        // The core's request id is only echoed in its `Response`, which the envelope replaces.
        let core_request = Request {
            id: request.id.unwrap_or(0),
            op,
        };
        let response = self
            .manager
            .handle_request_as(clock::now(), &caller, core_request);
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
    /// Where the tokens came from, read again on SIGHUP.
    tokens_path: Option<PathBuf>,
    /// The exclusive hold on the state, for as long as the server lives.
    _lock: super::lock::StateLock,
    /// The `GET /metrics` endpoint, if configured.
    metrics: Option<crate::metrics::Exporter>,
}

impl Server {
    /// [`Server::bind_with`] the default [`ServerConfig`]: open (no tokens), at most
    /// [`MAX_CLIENTS`] clients, [`IDLE_TIMEOUT`].
    pub fn bind(
        manager: Manager,
        listen: &str,
        state_path: PathBuf,
    ) -> Result<Server, ServerError> {
        Server::bind_with(manager, listen, state_path, ServerConfig::default())
    }

    /// Loads the state file and its journal (missing = empty), re-admits the bookings into
    /// `manager`, writes them back as a fresh snapshot with an empty journal, and binds `listen`.
    /// Bookings the topology no longer admits are logged and dropped. Without tokens in
    /// `config`, warns once that any client may manage any booking.
    pub fn bind_with(
        mut manager: Manager,
        listen: &str,
        state_path: PathBuf,
        config: ServerConfig,
    ) -> Result<Server, ServerError> {
        // The state first held, then the socket bound: only then is anything written, so a
        // manager that cannot serve (address in use, state held) leaves the state as it was.
        let lock = super::lock::StateLock::acquire(&state_path)?;
        let err = |source| ServerError::Listen {
            addr: listen.to_string(),
            source,
        };
        let epoll = Epoll::new().map_err(err)?;
        let limits = Limits {
            max_line: MAX_LINE,
            max_clients: config.max_clients,
            ..Limits::default()
        };
        let mut clients = MgmtServer::bind(
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
        clients.set_idle_timeout(config.idle_timeout);
        if config.tokens.is_open() {
            tracing::warn!(
                listen,
                "bwm: no tokens configured: every client may book, list, refresh and release                  every booking (give --tokens FILE to require tokens)"
            );
        } else {
            tracing::info!(
                tokens = config.tokens.len(),
                "bwm: every request needs a token"
            );
        }
        Ok(Server {
            epoll,
            clients,
            inner: Inner {
                manager,
                journal,
                tokens: config.tokens,
                unauthenticated: 0,
                refused: Default::default(),
                requests: 0,
            },
            metrics: match config.metrics_listen {
                Some(addr) => {
                    Some(
                        crate::metrics::Exporter::bind(addr).map_err(|e| ServerError::Listen {
                            addr: addr.to_string(),
                            source: std::io::Error::other(e.to_string()),
                        })?,
                    )
                }
                None => None,
            },
            tokens_path: config.tokens_path,
            _lock: lock,
        })
    }

    /// SIGHUP: the tokens file is read again and replaces the tokens (a file that does not
    /// load keeps the running ones); every other changed setting of the configuration file
    /// needs a restart and is logged as such.
    fn reload(&mut self) {
        crate::service::reloading();
        if let Some(path) = &self.tokens_path {
            match super::auth::load_tokens(path) {
                Ok(tokens) => {
                    tracing::info!(tokens = tokens.len(), "reload: tokens read again");
                    self.inner.tokens = tokens;
                }
                Err(e) => tracing::error!("reload: tokens kept as they were: {e}"),
            }
        }
        match crate::service::reread() {
            None => {}
            Some(Err(e)) => tracing::error!("reload: configuration kept as it runs: {e}"),
            Some(Ok(r)) => {
                crate::service::warn_needs_restart("bwm", &r.changed);
                crate::service::accept(r.text);
            }
        }
        crate::service::ready("reloaded");
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
        crate::service::ready("bandwidth manager serving");
        while !stop.load(Ordering::Relaxed) {
            if crate::service::take_reload() {
                self.reload();
            }
            let n = self
                .epoll
                .wait(&mut events, MAX_SLEEP_MS)
                .map_err(|source| ServerError::Listen {
                    addr: "epoll".into(),
                    source,
                })?;
            self.inner.expire();
            self.clients
                .poll(&self.epoll, std::time::Instant::now(), &mut happened);
            for ev in &events[..n] {
                let (token, flags) = (ev.u64, ev.events);
                if self.clients.owns(token) {
                    let inner = &mut self.inner;
                    self.clients.on_event(
                        &self.epoll,
                        token,
                        flags,
                        &mut happened,
                        |_, _, request| Some(inner.handle(request)),
                    );
                }
            }
            // Only closed connections are reported: every request was answered above.
            happened.clear();
            if let Some(m) = self.metrics.as_ref().filter(|m| m.wanted()) {
                let i = &self.inner;
                m.publish(crate::metrics::bwm::render(
                    &i.manager.list(),
                    &i.refused,
                    i.requests,
                ));
            }
        }
        crate::service::stopping();
        let stats = self.clients.stats();
        tracing::info!(
            accepted = stats.accepted,
            requests = stats.requests,
            refused_clients = stats.refused_clients,
            idle_closed = stats.idle_closed,
            unauthenticated = self.inner.unauthenticated,
            "bwm: stopped"
        );
        Ok(())
    }
}
