//! The `GET /metrics` HTTP/1.1 server: one thread, one connection at a time, each bounded in
//! time ([`CLIENT_DEADLINE`]) and size ([`MAX_REQUEST_BYTES`]), so a slow or hostile client
//! delays at most other scrapes, never the daemon. Written on `std::net` rather than a framework
//! because it serves one fixed resource and the bounds are the whole point; the answers are
//! 200, 400 (malformed or oversized request), 404 (another path), 405 (another method).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Longest a client may take to send its request and read the answer.
pub const CLIENT_DEADLINE: Duration = Duration::from_secs(2);
/// Largest request head accepted (request line and headers).
pub const MAX_REQUEST_BYTES: usize = 8 * 1024;
/// Longest the server waits for the daemon's loop to render a fresh page.
pub const RENDER_WAIT: Duration = Duration::from_secs(1);
/// The OpenMetrics text content type.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Errors starting the exporter.
#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    /// The listen address could not be bound.
    #[error("metrics listen {addr}: {source}")]
    Bind {
        /// The configured address.
        addr: SocketAddr,
        /// The OS error.
        source: std::io::Error,
    },
    /// The server thread could not be started.
    #[error("metrics thread: {0}")]
    Thread(std::io::Error),
}

/// What the daemon loop and the HTTP thread share.
#[derive(Default)]
struct Shared {
    wanted: AtomicBool,
    stop: AtomicBool,
    page: Mutex<(u64, Option<String>)>,
    fresh: Condvar,
}

/// A bound metrics endpoint; stops its thread when dropped.
pub struct Exporter {
    shared: Arc<Shared>,
    addr: SocketAddr,
    thread: Option<JoinHandle<()>>,
}

impl Exporter {
    /// Binds `addr` (before the daemon reports ready) and starts the server thread.
    pub fn bind(addr: SocketAddr) -> Result<Exporter, MetricsError> {
        let listener =
            TcpListener::bind(addr).map_err(|source| MetricsError::Bind { addr, source })?;
        let addr = listener
            .local_addr()
            .map_err(|source| MetricsError::Bind { addr, source })?;
        let shared = Arc::new(Shared::default());
        let for_thread = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("rtlan-metrics".into())
            .spawn(move || {
                // Spawned by a data-plane thread: leave its SCHED_FIFO to it.
                if let Err(e) = crate::driver::thread::normal_scheduling() {
                    tracing::warn!("metrics thread: normal scheduling refused: {e}");
                }
                serve(&listener, &for_thread)
            })
            .map_err(MetricsError::Thread)?;
        tracing::info!(%addr, "metrics endpoint listening");
        Ok(Exporter {
            shared,
            addr,
            thread: Some(thread),
        })
    }

    /// The bound address (the port chosen when 0 was configured).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Whether a scrape waits for a page: one relaxed load, for the data-plane loop.
    pub fn wanted(&self) -> bool {
        self.shared.wanted.load(Ordering::Relaxed)
    }

    /// Hands a rendered page to the server without waiting: if the server holds the lock this
    /// instant, the page is dropped and [`Exporter::wanted`] stays set for the next iteration.
    pub fn publish(&self, text: String) {
        if let Ok(mut page) = self.shared.page.try_lock() {
            page.0 += 1;
            page.1 = Some(text);
            self.shared.wanted.store(false, Ordering::Relaxed);
            self.shared.fresh.notify_all();
        }
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        // Wakes the blocking accept.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Accepts and answers one client at a time until stopped.
fn serve(listener: &TcpListener, shared: &Shared) {
    for stream in listener.incoming() {
        if shared.stop.load(Ordering::Relaxed) {
            return;
        }
        let Ok(stream) = stream else { continue };
        if let Err(e) = answer(stream, shared) {
            tracing::debug!(error = %e, "metrics client");
        }
    }
}

/// The parsed outcome of a request head.
#[derive(Debug, PartialEq, Eq)]
enum Verdict {
    Metrics { head_only: bool },
    Status(u16, &'static str),
}

/// Judges a complete request head.
fn judge(head: &[u8]) -> Verdict {
    let Ok(head) = std::str::from_utf8(head) else {
        return Verdict::Status(400, "Bad Request");
    };
    let line = head.split("\r\n").next().unwrap_or("");
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Verdict::Status(400, "Bad Request");
    };
    if !version.starts_with("HTTP/1.") || !target.starts_with('/') {
        return Verdict::Status(400, "Bad Request");
    }
    let path = target.split('?').next().unwrap_or(target);
    if path != "/metrics" {
        return Verdict::Status(404, "Not Found");
    }
    match method {
        "GET" => Verdict::Metrics { head_only: false },
        "HEAD" => Verdict::Metrics { head_only: true },
        _ => Verdict::Status(405, "Method Not Allowed"),
    }
}

/// Reads the request head within the deadline and size limit.
fn read_head(stream: &mut TcpStream, deadline: Instant) -> Result<Vec<u8>, Verdict> {
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 1024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Verdict::Status(408, "Request Timeout"));
        }
        let _ = stream.set_read_timeout(Some(left));
        match stream.read(&mut buf) {
            Ok(0) => return Err(Verdict::Status(400, "Bad Request")),
            Ok(n) => head.extend_from_slice(&buf[..n]),
            Err(_) => return Err(Verdict::Status(408, "Request Timeout")),
        }
        if let Some(end) = head.windows(4).position(|w| w == b"\r\n\r\n") {
            head.truncate(end);
            return Ok(head);
        }
        if head.len() > MAX_REQUEST_BYTES {
            return Err(Verdict::Status(400, "Bad Request"));
        }
    }
}

/// Answers one client.
fn answer(mut stream: TcpStream, shared: &Shared) -> std::io::Result<()> {
    let deadline = Instant::now() + CLIENT_DEADLINE;
    let _ = stream.set_write_timeout(Some(CLIENT_DEADLINE));
    let verdict = match read_head(&mut stream, deadline) {
        Ok(head) => judge(&head),
        Err(v) => v,
    };
    let (status, reason, body, head_only) = match verdict {
        Verdict::Metrics { head_only } => match page(shared) {
            Some(text) => (200, "OK", text, head_only),
            None => (503, "Service Unavailable", "no page yet\n".into(), false),
        },
        Verdict::Status(code, reason) => (code, reason, format!("{reason}\n"), false),
    };
    let content_type = if status == 200 {
        CONTENT_TYPE
    } else {
        "text/plain; charset=utf-8"
    };
    let mut reply = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n",
        body.len()
    );
    if !head_only {
        reply.push_str(&body);
    }
    stream.write_all(reply.as_bytes())?;
    stream.flush()
}

/// Asks the daemon loop for a fresh page and waits up to [`RENDER_WAIT`]; the last page if
/// none comes (the loop is busy or stopping).
fn page(shared: &Shared) -> Option<String> {
    let guard = shared.page.lock().unwrap_or_else(PoisonError::into_inner);
    let generation = guard.0;
    shared.wanted.store(true, Ordering::Relaxed);
    let (guard, _) = shared
        .fresh
        .wait_timeout_while(guard, RENDER_WAIT, |p| p.0 == generation)
        .unwrap_or_else(PoisonError::into_inner);
    guard.1.clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A renderer standing in for the daemon loop: publishes `n` pages counting scrapes.
    fn spawn_loop(exporter: Arc<Exporter>, stop: Arc<AtomicBool>) -> JoinHandle<u64> {
        std::thread::spawn(move || {
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) {
                if exporter.wanted() {
                    n += 1;
                    exporter.publish(format!("# TYPE x counter\nx_total {n}\n# EOF\n"));
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            n
        })
    }

    fn exchange(addr: SocketAddr, request: &[u8]) -> String {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(request).unwrap();
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out
    }

    #[test]
    fn judges_requests() {
        assert_eq!(
            judge(b"GET /metrics HTTP/1.1\r\nHost: x"),
            Verdict::Metrics { head_only: false }
        );
        assert_eq!(
            judge(b"GET /metrics?x=1 HTTP/1.0"),
            Verdict::Metrics { head_only: false }
        );
        assert_eq!(
            judge(b"HEAD /metrics HTTP/1.1"),
            Verdict::Metrics { head_only: true }
        );
        assert_eq!(
            judge(b"POST /metrics HTTP/1.1"),
            Verdict::Status(405, "Method Not Allowed")
        );
        assert_eq!(judge(b"GET / HTTP/1.1"), Verdict::Status(404, "Not Found"));
        assert_eq!(judge(b"GET /metrics"), Verdict::Status(400, "Bad Request"));
        assert_eq!(
            judge(b"GET metrics HTTP/1.1"),
            Verdict::Status(400, "Bad Request")
        );
        assert_eq!(
            judge(b"GET /metrics SPDY/3"),
            Verdict::Status(400, "Bad Request")
        );
        assert_eq!(judge(&[0xff, 0xfe]), Verdict::Status(400, "Bad Request"));
    }

    #[test]
    fn serves_fresh_pages_and_refuses_bad_requests_and_slow_clients() {
        let exporter = Arc::new(Exporter::bind("127.0.0.1:0".parse().unwrap()).unwrap());
        let addr = exporter.local_addr();
        let stop = Arc::new(AtomicBool::new(false));
        let renderer = spawn_loop(Arc::clone(&exporter), Arc::clone(&stop));

        let first = exchange(addr, b"GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n");
        assert!(first.starts_with("HTTP/1.1 200 OK\r\n"), "{first}");
        assert!(first.contains(CONTENT_TYPE));
        assert!(first.ends_with("x_total 1\n# EOF\n"), "{first}");
        let second = exchange(addr, b"GET /metrics HTTP/1.1\r\n\r\n");
        assert!(
            second.ends_with("x_total 2\n# EOF\n"),
            "a fresh page each scrape: {second}"
        );

        let not_found = exchange(addr, b"GET /other HTTP/1.1\r\n\r\n");
        assert!(not_found.starts_with("HTTP/1.1 404 "), "{not_found}");
        let method = exchange(addr, b"DELETE /metrics HTTP/1.1\r\n\r\n");
        assert!(method.starts_with("HTTP/1.1 405 "), "{method}");
        let garbage = exchange(addr, b"\x00\x01\x02 nonsense\r\n\r\n");
        assert!(garbage.starts_with("HTTP/1.1 400 "), "{garbage}");
        let mut big = b"GET /metrics HTTP/1.1\r\nX: ".to_vec();
        big.extend(std::iter::repeat_n(b'a', MAX_REQUEST_BYTES + 10));
        let oversized = exchange(addr, &big);
        assert!(oversized.starts_with("HTTP/1.1 400 "), "{oversized}");

        // A client that sends half a request and stalls is cut off at the deadline, and the
        // next scrape is answered after it.
        let started = Instant::now();
        let mut slow = TcpStream::connect(addr).unwrap();
        slow.write_all(b"GET /metr").unwrap();
        let after = exchange(addr, b"GET /metrics HTTP/1.1\r\n\r\n");
        assert!(after.starts_with("HTTP/1.1 200 OK"), "{after}");
        let waited = started.elapsed();
        assert!(
            waited >= CLIENT_DEADLINE - Duration::from_millis(100),
            "{waited:?}"
        );
        assert!(
            waited < CLIENT_DEADLINE + RENDER_WAIT + Duration::from_secs(1),
            "{waited:?}"
        );
        let mut rest = String::new();
        slow.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
        let _ = slow.read_to_string(&mut rest);
        assert!(rest.starts_with("HTTP/1.1 408 "), "{rest}");

        stop.store(true, Ordering::Relaxed);
        assert_eq!(renderer.join().unwrap(), 3, "one render per scrape");
    }

    #[test]
    fn a_busy_address_is_a_clear_error() {
        let first = Exporter::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let Err(err) = Exporter::bind(first.local_addr()) else {
            panic!("second bind succeeded")
        };
        assert!(
            err.to_string().starts_with("metrics listen 127.0.0.1:"),
            "{err}"
        );
    }
}
