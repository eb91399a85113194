//! The TCP server around [`Manager`]: one thread per client connection, one request per line,
//! one reply per line (`docs/bwm.md`). The manager is shared behind a mutex; each change is
//! persisted before the reply is sent. The accept loop wakes at least every 100 ms to expire
//! best-effort reservations and to notice the stop flag; client threads notice it within 200 ms.

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use rtlan_core::bwm::{ErrorCode, Manager, Request, Response};

use super::store::{Journal, StoreError};
use crate::clock;

/// Longest accepted request line, bytes; a longer one gets an error and the connection is closed.
pub const MAX_LINE: usize = 64 * 1024;

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

struct Shared {
    inner: Mutex<Inner>,
}

/// The manager and its journal, changed together under one lock.
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
}

impl Shared {
    fn handle_line(&self, line: &str) -> Response {
        let req: Request = match serde_json::from_str(line) {
            Ok(r) => r,
            Err(e) => {
                let id = serde_json::from_str::<serde_json::Value>(line)
                    .ok()
                    .and_then(|v| v.get("id").and_then(serde_json::Value::as_u64));
                return Response::error(id, ErrorCode::BadRequest, format!("bad request: {e}"));
            }
        };
        // A poisoned lock means a thread panicked mid-request; the manager's state is only
        // changed at the commit step, so it is still consistent: keep serving.
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let resp = inner.manager.handle_request(clock::now(), req);
        inner.persist();
        resp
    }

    fn expire(&self) {
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let now = clock::now();
        if inner.manager.poll_timeout().is_some_and(|t| t <= now) {
            inner.manager.handle_timeout(now);
            // An expired lease removes a guaranteed booking: persist that too.
            inner.persist();
        }
    }
}

/// A bound bandwidth-manager server.
pub struct Server {
    listener: TcpListener,
    shared: Arc<Shared>,
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
        let listener = TcpListener::bind(listen).map_err(|source| ServerError::Listen {
            addr: listen.to_string(),
            source,
        })?;
        Ok(Server {
            listener,
            shared: Arc::new(Shared {
                inner: Mutex::new(Inner { manager, journal }),
            }),
        })
    }

    /// The address actually bound (useful with port 0).
    pub fn local_addr(&self) -> Result<SocketAddr, ServerError> {
        self.listener
            .local_addr()
            .map_err(|source| ServerError::Listen {
                addr: "bound socket".into(),
                source,
            })
    }

    /// Serves until `stop` is set, then joins every client thread.
    pub fn run(self, stop: &AtomicBool) -> Result<(), ServerError> {
        let err = |source| ServerError::Listen {
            addr: "accept".into(),
            source,
        };
        self.listener.set_nonblocking(true).map_err(err)?;
        let mut threads: Vec<JoinHandle<()>> = Vec::new();
        let stop_all = Arc::new(AtomicBool::new(false));
        while !stop.load(Ordering::Relaxed) {
            wait_readable(&self.listener, 100);
            self.shared.expire();
            match self.listener.accept() {
                Ok((stream, peer)) => {
                    tracing::debug!("bwm: client {peer}");
                    let (shared, stop_all) = (Arc::clone(&self.shared), Arc::clone(&stop_all));
                    threads.push(std::thread::spawn(move || {
                        serve(stream, &shared, &stop_all)
                    }));
                }
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => {}
                Err(e) => tracing::warn!("bwm: accept: {e}"),
            }
            threads.retain(|t| !t.is_finished());
        }
        stop_all.store(true, Ordering::Relaxed);
        for t in threads {
            let _ = t.join();
        }
        Ok(())
    }
}

fn wait_readable(listener: &TcpListener, timeout_ms: i32) {
    let mut pfd = libc::pollfd {
        fd: listener.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: `pfd` is a valid pollfd for the duration of the call and the count is 1; the fd
    // belongs to `listener`, which outlives the call. The result only decides when we try accept.
    unsafe {
        libc::poll(&mut pfd, 1, timeout_ms);
    }
}

fn serve(stream: TcpStream, shared: &Shared, stop: &AtomicBool) {
    if stream.set_nonblocking(false).is_err()
        || stream
            .set_read_timeout(Some(Duration::from_millis(200)))
            .is_err()
    {
        return;
    }
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    let mut buf = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let limit = (MAX_LINE + 1).saturating_sub(buf.len()) as u64;
        match reader.by_ref().take(limit).read_until(b'\n', &mut buf) {
            Ok(0) => return,
            Ok(_) if buf.last() == Some(&b'\n') => {}
            Ok(_) if buf.len() > MAX_LINE => {
                let r = Response::error(None, ErrorCode::BadRequest, "request line too long");
                let _ = write_reply(&mut writer, &r);
                return;
            }
            Ok(_) => continue,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => continue,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => return,
        }
        let line = String::from_utf8_lossy(&buf).trim().to_string();
        buf.clear();
        if line.is_empty() {
            continue;
        }
        let resp = shared.handle_line(&line);
        if write_reply(&mut writer, &resp).is_err() {
            return;
        }
    }
}

fn write_reply(w: &mut TcpStream, r: &Response) -> std::io::Result<()> {
    // Invariant: `Response` holds only strings, integers, options and vectors of those.
    let mut text = serde_json::to_string(r).expect("Response serialises");
    text.push('\n');
    w.write_all(text.as_bytes())
}
