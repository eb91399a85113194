//! The operator's side of provisioned pipes (QSR paper §5: "invoked through a simple Web-based
//! interface"; `docs/router.md` "Provisioned pipes"): one request grammar for the control
//! socket, the configuration file and the HTTP API, the HTTP API's routes, and the web page.
//!
//! The HTTP server is `tiny_http` on a thread of its own: it reads a request, hands it to the
//! data-plane loop through a channel and an `eventfd` (the loop owns the router, as for every
//! other request), waits for the answer and writes it. A slow client therefore holds up other
//! HTTP clients, never the data plane.
//!
//! Cross-site requests: a page elsewhere that the operator's browser opens could send simple
//! requests to the router. Every request that changes something is a `POST` with
//! `Content-Type: application/json` or a `DELETE` — both need a CORS preflight that this server
//! never grants — so such a page cannot create or delete pipes. There is no authentication:
//! bind `http` to a management address (`docs/router.md`).

use std::net::SocketAddr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Duration;

use rtlan_core::router::{Ipv4Prefix, PipeService, PipeSpec, Router};
use rtlan_core::time::Instant;
use rtlan_core::units::{parse_rate, parse_size};
use serde_json::{json, Value};

use crate::mgmt::MgmtError;

/// The web page: one file, no external resources.
const PAGE: &str = include_str!("pipes.html");

/// Largest request body, bytes.
const MAX_BODY: usize = 64 * 1024;

/// How long the HTTP thread waits for the loop's answer.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(5);

/// A pipe as an operator asks for it (control socket `pipe_create`, `POST /api/pipes`,
/// `[[pipe]]` in the configuration).
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct PipeRequest {
    /// Unique name.
    pub name: String,
    /// Source prefixes; absent or empty: any source (`0.0.0.0/0`).
    #[serde(default)]
    pub from: Vec<String>,
    /// The destination subnet.
    pub to: String,
    /// `controlled_load` (default, as the paper's pipes) or `guaranteed`.
    #[serde(default)]
    pub service: Option<PipeService>,
    /// Token rate, like `"10mbit"`.
    pub rate: String,
    /// Bucket depth, like `"3000B"` or `"4KiB"`; default two largest packets.
    #[serde(default)]
    pub burst: Option<String>,
    /// Largest IP packet, bytes; default 1500.
    #[serde(default)]
    pub max_packet: Option<u32>,
}

impl PipeRequest {
    /// The core's pipe; an error names the field.
    pub fn to_spec(&self) -> Result<PipeSpec, MgmtError> {
        let bad = |field: &str, message: String| {
            MgmtError::bad_request(format!("{field}: {message}"))
                .with("field", Value::String(field.to_string()))
        };
        let mut from = Vec::with_capacity(self.from.len().max(1));
        for f in &self.from {
            from.push(
                f.parse::<Ipv4Prefix>()
                    .map_err(|e| bad("from", format!("{f:?}: {e}")))?,
            );
        }
        if from.is_empty() {
            from.push(Ipv4Prefix::DEFAULT);
        }
        let to = self
            .to
            .parse::<Ipv4Prefix>()
            .map_err(|e| bad("to", format!("{:?}: {e}", self.to)))?;
        let rate_bps = parse_rate(&self.rate).map_err(|e| {
            bad(
                "rate",
                format!("{:?}: {e} (a rate, like \"10mbit\")", self.rate),
            )
        })?;
        let max_packet = self.max_packet.unwrap_or(1500);
        let burst_bytes = match &self.burst {
            None => 2 * u64::from(max_packet),
            Some(b) => parse_size(b)
                .map_err(|e| bad("burst", format!("{b:?}: {e} (a size, like \"3000B\")")))?,
        };
        let spec = PipeSpec {
            name: self.name.clone(),
            from,
            to,
            service: self.service.unwrap_or(PipeService::ControlledLoad),
            rate_bps,
            burst_bytes,
            max_packet,
        };
        spec.validate().map_err(pipe_error)?;
        Ok(spec)
    }
}

/// A pipe error as the management error of the API.
pub(super) fn pipe_error(e: rtlan_core::router::PipeError) -> MgmtError {
    MgmtError::new(e.code(), e.to_string())
}

/// The pipes an operator created, kept in a file (`[psip] state`) so that a restarted router
/// starts them again: a JSON array of requests, replaced atomically (written beside, then
/// renamed) after every change.
#[derive(Debug, Default)]
pub(super) struct PipeStore {
    path: Option<PathBuf>,
    requests: Vec<PipeRequest>,
}

impl PipeStore {
    /// The store at `path` (none: nothing is kept) and the pipes it holds; a file that is not
    /// a list of pipes is an error with its line and column, never silently emptied.
    pub(super) fn open(path: Option<&Path>) -> Result<PipeStore, String> {
        let Some(path) = path else {
            return Ok(PipeStore::default());
        };
        let requests = match std::fs::read_to_string(path) {
            Ok(text) => serde_json::from_str::<Vec<PipeRequest>>(&text)
                .map_err(|e| format!("{}:{}:{}: {e}", path.display(), e.line(), e.column()))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        Ok(PipeStore {
            path: Some(path.to_path_buf()),
            requests,
        })
    }

    /// The pipes it holds.
    pub(super) fn requests(&self) -> &[PipeRequest] {
        &self.requests
    }

    /// Records a pipe (replacing one of the same name) and saves.
    pub(super) fn put(&mut self, request: &PipeRequest) -> std::io::Result<()> {
        self.requests.retain(|r| r.name != request.name);
        self.requests.push(request.clone());
        self.save()
    }

    /// Forgets a pipe and saves.
    pub(super) fn remove(&mut self, name: &str) -> std::io::Result<()> {
        let before = self.requests.len();
        self.requests.retain(|r| r.name != name);
        if self.requests.len() == before {
            return Ok(());
        }
        self.save()
    }

    fn save(&self) -> std::io::Result<()> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        let text = serde_json::to_string_pretty(&self.requests).map_err(std::io::Error::other)?;
        let tmp = path.with_extension("tmp");
        {
            let mut f = std::fs::File::create(&tmp)?;
            std::io::Write::write_all(&mut f, text.as_bytes())?;
            f.sync_all()?;
        }
        std::fs::rename(&tmp, path)
    }
}

/// Creates a pipe and keeps it in `store`; its status. A pipe the store cannot save is
/// deleted again and refused: the operator must not believe it will survive a restart.
pub(super) fn create(
    router: &mut Router,
    store: &mut PipeStore,
    now: Instant,
    req: &PipeRequest,
) -> Result<Value, MgmtError> {
    let spec = req.to_spec()?;
    let name = spec.name.clone();
    router.create_pipe(now, spec).map_err(pipe_error)?;
    if let Err(e) = store.put(req) {
        let _ = router.delete_pipe(now, &name);
        return Err(MgmtError::new(
            "state_not_saved",
            format!("the pipe was not created: saving the pipe state: {e}"),
        ));
    }
    let status = router
        .pipes(now)
        .into_iter()
        .find(|p| p.role == "ingress" && p.name == name);
    serde_json::to_value(status).map_err(|e| MgmtError::new("internal", e.to_string()))
}

/// Deletes a pipe and forgets it in `store`; its last status.
pub(super) fn delete(
    router: &mut Router,
    store: &mut PipeStore,
    now: Instant,
    name: &str,
) -> Result<Value, MgmtError> {
    let status = router.delete_pipe(now, name).map_err(pipe_error)?;
    if let Err(e) = store.remove(&status.name) {
        tracing::warn!(pipe = %status.name, "deleted, but saving the pipe state failed: {e}");
    }
    serde_json::to_value(status).map_err(|e| MgmtError::new("internal", e.to_string()))
}

/// Every pipe started or ended here.
pub(super) fn list(router: &Router, now: Instant) -> Result<Value, MgmtError> {
    serde_json::to_value(router.pipes(now)).map_err(|e| MgmtError::new("internal", e.to_string()))
}

/// An HTTP request, as the loop sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct HttpCall {
    pub(super) method: String,
    pub(super) path: String,
    /// Whether the body was declared `application/json`.
    pub(super) json: bool,
    pub(super) body: Vec<u8>,
}

/// The answer to one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct HttpReply {
    pub(super) status: u16,
    pub(super) content_type: &'static str,
    pub(super) body: Vec<u8>,
}

impl HttpReply {
    fn json(status: u16, value: &Value) -> HttpReply {
        HttpReply {
            status,
            content_type: "application/json",
            body: value.to_string().into_bytes(),
        }
    }

    fn ok(status: u16, data: Value) -> HttpReply {
        HttpReply::json(status, &json!({"ok": true, "data": data}))
    }

    fn error(status: u16, e: &MgmtError) -> HttpReply {
        HttpReply::json(status, &json!({"ok": false, "error": e.to_value()}))
    }
}

/// The HTTP status of an API error.
fn status_of(e: &MgmtError) -> u16 {
    match e.code.as_str() {
        "not_found" => 404,
        "name_exists" | "filter_taken" | "destination_attached" | "too_many_pipes" => 409,
        "no_rsvp" => 503,
        "internal" | "state_not_saved" => 500,
        _ => 400,
    }
}

/// Answers one HTTP request (the API's routes, `docs/router.md`).
pub(super) fn dispatch(
    call: &HttpCall,
    router: &mut Router,
    store: &mut PipeStore,
    now: Instant,
    name: &str,
) -> HttpReply {
    let path = call.path.split('?').next().unwrap_or("");
    let answer = |status: u16, result: Result<Value, MgmtError>| match result {
        Ok(v) => HttpReply::ok(status, v),
        Err(e) => HttpReply::error(status_of(&e), &e),
    };
    match (call.method.as_str(), path) {
        ("GET", "/" | "/index.html") => HttpReply {
            status: 200,
            content_type: "text/html; charset=utf-8",
            body: PAGE.as_bytes().to_vec(),
        },
        ("GET", "/api/router") => {
            let ports: Vec<Value> = router
                .config()
                .ports
                .iter()
                .map(|p| json!({"name": p.name, "address": format!("{}/{}", p.addr, p.prefix_len)}))
                .collect();
            HttpReply::ok(
                200,
                json!({"name": name, "ports": ports, "rsvp": router.rsvp_stats().is_some()}),
            )
        }
        ("GET", "/api/pipes") => answer(200, list(router, now)),
        ("POST", "/api/pipes") => {
            if !call.json {
                let e = MgmtError::bad_request("send the pipe as Content-Type: application/json");
                return HttpReply::error(415, &e);
            }
            let request = serde_json::from_slice::<PipeRequest>(&call.body)
                .map_err(|e| MgmtError::bad_request(format!("not a pipe request: {e}")));
            answer(201, request.and_then(|r| create(router, store, now, &r)))
        }
        ("DELETE", p) if p.starts_with("/api/pipes/") => {
            let name = &p["/api/pipes/".len()..];
            answer(200, delete(router, store, now, &percent_decode(name)))
        }
        (_, "/" | "/index.html" | "/api/router" | "/api/pipes") => HttpReply::error(
            405,
            &MgmtError::new("method_not_allowed", "method not allowed"),
        ),
        _ => HttpReply::error(404, &MgmtError::new("not_found", format!("no page {path}"))),
    }
}

/// One HTTP request answered as the server would (status and body), without a socket: for
/// tests and the `router_api` fuzz target.
pub fn http_answer(
    method: &str,
    path: &str,
    json: bool,
    body: &[u8],
    router: &mut Router,
    now: Instant,
) -> (u16, Vec<u8>) {
    let call = HttpCall {
        method: method.to_string(),
        path: path.to_string(),
        json,
        body: body.to_vec(),
    };
    let reply = dispatch(&call, router, &mut PipeStore::default(), now, "router");
    (reply.status, reply.body)
}

/// `%XX` escapes of a path segment decoded (names are plain ASCII, so anything else is kept).
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let (hi, lo) = (bytes[i + 1], bytes[i + 2]);
            if hi.is_ascii_hexdigit() && lo.is_ascii_hexdigit() {
                let digit = |c: u8| (c as char).to_digit(16).unwrap_or(0) as u8;
                out.push(digit(hi) << 4 | digit(lo));
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

type Job = (HttpCall, mpsc::SyncSender<HttpReply>);

/// The HTTP server: its thread, the channel of requests and the descriptor that wakes the loop.
pub(super) struct HttpApi {
    server: Arc<tiny_http::Server>,
    thread: Option<JoinHandle<()>>,
    jobs: mpsc::Receiver<Job>,
    wake: OwnedFd,
    /// Where it listens (the port chosen when 0 was asked for).
    pub(super) addr: SocketAddr,
}

impl HttpApi {
    /// Listens on `addr` and starts the thread.
    pub(super) fn start(addr: SocketAddr) -> std::io::Result<HttpApi> {
        let server = tiny_http::Server::http(addr)
            .map_err(|e| std::io::Error::other(format!("listening on {addr}: {e}")))?;
        let addr = server
            .server_addr()
            .to_ip()
            .ok_or_else(|| std::io::Error::other("not an IP listener"))?;
        let server = Arc::new(server);
        // SAFETY: eventfd(2) with valid flags; the result is checked before use.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `fd` is a fresh descriptor that nothing else owns.
        let wake = unsafe { OwnedFd::from_raw_fd(fd) };
        let raw = wake.as_raw_fd();
        let (tx, jobs) = mpsc::channel::<Job>();
        let s = Arc::clone(&server);
        let thread = std::thread::Builder::new()
            .name("router-http".into())
            .spawn(move || {
                // Spawned by the data-plane thread: leave its SCHED_FIFO to it.
                if let Err(e) = crate::driver::thread::normal_scheduling() {
                    tracing::warn!("pipe page thread: normal scheduling refused: {e}");
                }
                serve(&s, &tx, raw)
            })?;
        Ok(HttpApi {
            server,
            thread: Some(thread),
            jobs,
            wake,
            addr,
        })
    }

    /// The descriptor that becomes readable when requests wait.
    pub(super) fn wake_fd(&self) -> RawFd {
        self.wake.as_raw_fd()
    }

    /// Answers every waiting request with `answer`.
    pub(super) fn on_wake(&mut self, mut answer: impl FnMut(&HttpCall) -> HttpReply) {
        let mut count = [0u8; 8];
        // SAFETY: reading 8 bytes into an 8-byte buffer from our own non-blocking eventfd.
        unsafe { libc::read(self.wake.as_raw_fd(), count.as_mut_ptr().cast(), 8) };
        while let Ok((call, reply)) = self.jobs.try_recv() {
            // The HTTP thread may have given up waiting; then the answer is dropped.
            let _ = reply.send(answer(&call));
        }
    }
}

impl Drop for HttpApi {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The HTTP thread: each request to the loop and its answer back.
fn serve(server: &tiny_http::Server, jobs: &mpsc::Sender<Job>, wake: RawFd) {
    while let Ok(mut request) = server.recv() {
        let json = request.headers().iter().any(|h| {
            h.field.equiv("Content-Type")
                && h.value
                    .as_str()
                    .split(';')
                    .next()
                    .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
        });
        let too_big = request.body_length().is_some_and(|n| n > MAX_BODY);
        let mut body = Vec::new();
        let read = {
            use std::io::Read;
            request
                .as_reader()
                .take(MAX_BODY as u64 + 1)
                .read_to_end(&mut body)
        };
        let reply = if too_big || body.len() > MAX_BODY {
            HttpReply::error(413, &MgmtError::bad_request("request body above 64 KiB"))
        } else if let Err(e) = read {
            HttpReply::error(
                400,
                &MgmtError::bad_request(format!("reading the body: {e}")),
            )
        } else {
            let call = HttpCall {
                method: request.method().as_str().to_ascii_uppercase(),
                path: request.url().to_string(),
                json,
                body,
            };
            let (tx, rx) = mpsc::sync_channel(1);
            if jobs.send((call, tx)).is_err() {
                return;
            }
            let one: u64 = 1;
            // SAFETY: `wake` is an eventfd owned by the `HttpApi`, which joins this thread
            // before closing it; an 8-byte write of a u64 is the eventfd protocol.
            unsafe { libc::write(wake, (&raw const one).cast(), 8) };
            rx.recv_timeout(ANSWER_TIMEOUT).unwrap_or_else(|_| {
                HttpReply::error(503, &MgmtError::new("busy", "the router did not answer"))
            })
        };
        let content_type =
            tiny_http::Header::from_bytes(&b"Content-Type"[..], reply.content_type.as_bytes())
                .expect("a constant header");
        let no_cache = tiny_http::Header::from_bytes(&b"Cache-Control"[..], &b"no-store"[..])
            .expect("a constant header");
        let response = tiny_http::Response::from_data(reply.body)
            .with_status_code(reply.status)
            .with_header(content_type)
            .with_header(no_cache);
        if let Err(e) = request.respond(response) {
            tracing::debug!("answering an HTTP client: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtlan_core::router::{RouterConfig, RouterPort, RsvpSettings};
    use rtlan_core::Medium;
    use rtlan_wire::ethernet::Address;
    use std::net::Ipv4Addr;

    fn router() -> Router {
        let port = |i: u8| RouterPort {
            name: format!("p{i}"),
            mac: Address([2, 0, 0, 0, 0, i]),
            addr: Ipv4Addr::new(198, 18, i, 1),
            prefix_len: 24,
            medium: Medium::FullDuplex {
                rate_bps: 100_000_000,
            },
        };
        let mut c = RouterConfig::new(vec![port(1), port(2)]);
        c.rsvp = Some(RsvpSettings::default());
        c.routes.push(rtlan_core::router::StaticRoute {
            prefix: "198.18.9.0/24".parse().unwrap(),
            gateway: Ipv4Addr::new(198, 18, 2, 2),
            metric: 1,
        });
        Router::new(c, Instant::ZERO).unwrap()
    }

    fn call(method: &str, path: &str, body: &str) -> HttpCall {
        HttpCall {
            method: method.into(),
            path: path.into(),
            json: true,
            body: body.as_bytes().to_vec(),
        }
    }

    fn body(r: &HttpReply) -> Value {
        serde_json::from_slice(&r.body).unwrap()
    }

    #[test]
    fn the_api_creates_lists_and_deletes_pipes() {
        let mut r = router();
        let now = Instant::ZERO;
        let page = dispatch(
            &call("GET", "/", ""),
            &mut r,
            &mut PipeStore::default(),
            now,
            "r1",
        );
        assert_eq!(page.status, 200);
        assert!(page.content_type.starts_with("text/html"));
        let create = r#"{"name":"video","from":["198.18.1.0/24"],"to":"198.18.9.0/24","rate":"3mbit","burst":"4KiB"}"#;
        let made = dispatch(
            &call("POST", "/api/pipes", create),
            &mut r,
            &mut PipeStore::default(),
            now,
            "r1",
        );
        assert_eq!(made.status, 201, "{:?}", body(&made));
        let v = body(&made);
        assert_eq!(v["ok"], true);
        assert_eq!(v["data"]["name"], "video");
        assert_eq!(v["data"]["rate_bps"], 3_000_000);
        assert_eq!(v["data"]["burst_bytes"], 4096);
        assert_eq!(v["data"]["service"], "controlled_load");
        assert_eq!(v["data"]["state"], "signalling");
        let again = dispatch(
            &call("POST", "/api/pipes", create),
            &mut r,
            &mut PipeStore::default(),
            now,
            "r1",
        );
        assert_eq!(again.status, 409);
        assert_eq!(body(&again)["error"]["code"], "name_exists");
        let listed = body(&dispatch(
            &call("GET", "/api/pipes", ""),
            &mut r,
            &mut PipeStore::default(),
            now,
            "r1",
        ));
        assert_eq!(listed["data"].as_array().unwrap().len(), 1);
        let gone = dispatch(
            &call("DELETE", "/api/pipes/video", ""),
            &mut r,
            &mut PipeStore::default(),
            now,
            "r1",
        );
        assert_eq!(gone.status, 200);
        let missing = dispatch(
            &call("DELETE", "/api/pipes/video", ""),
            &mut r,
            &mut PipeStore::default(),
            now,
            "r1",
        );
        assert_eq!(missing.status, 404);
        assert_eq!(body(&missing)["error"]["code"], "not_found");
    }

    #[test]
    fn bad_requests_name_the_field_and_change_nothing() {
        let mut r = router();
        let now = Instant::ZERO;
        for (text, field) in [
            (r#"{"name":"a","to":"198.18.9.0/24","rate":"fast"}"#, "rate"),
            (r#"{"name":"a","to":"nowhere","rate":"1mbit"}"#, "to"),
            (
                r#"{"name":"a","from":["1.2.3.4/40"],"to":"198.18.9.0/24","rate":"1mbit"}"#,
                "from",
            ),
            (
                r#"{"name":"a","to":"198.18.9.0/24","rate":"1mbit","burst":"lots"}"#,
                "burst",
            ),
        ] {
            let reply = dispatch(
                &call("POST", "/api/pipes", text),
                &mut r,
                &mut PipeStore::default(),
                now,
                "r1",
            );
            assert_eq!(reply.status, 400, "{text}");
            let v = body(&reply);
            assert_eq!(v["error"]["code"], "bad_request");
            assert_eq!(v["error"]["field"], field, "{text}");
        }
        let unknown = r#"{"name":"a","to":"198.18.9.0/24","rate":"1mbit","colour":"red"}"#;
        assert_eq!(
            dispatch(
                &call("POST", "/api/pipes", unknown),
                &mut r,
                &mut PipeStore::default(),
                now,
                "r1"
            )
            .status,
            400
        );
        let attached = r#"{"name":"a","to":"198.18.1.0/24","rate":"1mbit"}"#;
        let reply = dispatch(
            &call("POST", "/api/pipes", attached),
            &mut r,
            &mut PipeStore::default(),
            now,
            "r1",
        );
        assert_eq!(body(&reply)["error"]["code"], "destination_attached");
        let mut form = call(
            "POST",
            "/api/pipes",
            r#"{"name":"a","to":"198.18.9.0/24","rate":"1mbit"}"#,
        );
        form.json = false;
        assert_eq!(
            dispatch(&form, &mut r, &mut PipeStore::default(), now, "r1").status,
            415,
            "no simple cross-site posts"
        );
        assert_eq!(
            dispatch(
                &call("PUT", "/api/pipes", ""),
                &mut r,
                &mut PipeStore::default(),
                now,
                "r1"
            )
            .status,
            405
        );
        assert_eq!(
            dispatch(
                &call("GET", "/etc/passwd", ""),
                &mut r,
                &mut PipeStore::default(),
                now,
                "r1"
            )
            .status,
            404
        );
        assert!(r.pipes(now).is_empty());
    }

    #[test]
    fn created_pipes_are_kept_in_the_state_file_and_deleted_ones_forgotten() {
        let dir = std::env::temp_dir().join(format!("rtlan-pipes-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("pipes.json");
        let _ = std::fs::remove_file(&path);
        let mut store = PipeStore::open(Some(&path)).unwrap();
        assert!(store.requests().is_empty(), "no file yet: no pipes");
        let mut r = router();
        let now = Instant::ZERO;
        let req: PipeRequest = serde_json::from_str(
            r#"{"name":"video","to":"198.18.9.0/24","rate":"3mbit","service":"guaranteed"}"#,
        )
        .unwrap();
        create(&mut r, &mut store, now, &req).unwrap();
        let again = PipeStore::open(Some(&path)).unwrap();
        assert_eq!(again.requests(), std::slice::from_ref(&req));
        delete(&mut r, &mut store, now, "video").unwrap();
        assert!(PipeStore::open(Some(&path)).unwrap().requests().is_empty());
        // A file that is not a list of pipes stops the start, with where it went wrong.
        std::fs::write(&path, "[{\"name\": 3}]").unwrap();
        let e = PipeStore::open(Some(&path)).unwrap_err();
        assert!(e.contains("pipes.json:1:"), "{e}");
        // A state that cannot be saved refuses the pipe rather than lose it on restart.
        let mut stuck = PipeStore::open(Some(&dir.join("missing-dir/pipes.json"))).unwrap();
        let e = create(&mut r, &mut stuck, now, &req).unwrap_err();
        assert_eq!(e.code, "state_not_saved");
        assert!(r.pipes(now).is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn names_in_paths_are_percent_decoded() {
        assert_eq!(percent_decode("video%2D1"), "video-1");
        assert_eq!(percent_decode("a%2"), "a%2");
        assert_eq!(percent_decode("%zz"), "%zz");
    }
}
