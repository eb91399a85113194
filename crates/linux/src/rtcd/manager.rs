//! The host daemon's link to the bandwidth manager (central admission, seed 004 §3.2 "Admission
//! process"; protocol `docs/bwm.md`). A worker thread owns the TCP connection so the daemon's
//! event loop never blocks on the manager: the loop hands it [`Job`]s, the worker answers
//! admissions through a channel and wakes the loop with an `eventfd`. A broken connection is
//! reopened for the next request (one retry per request); a request that still fails is answered
//! `Unreachable`. On shutdown the worker finishes the queued jobs (the final releases) first.
//! With a `manager_token` configured every request carries it (the manager then owns the
//! daemon's bookings to the token's principal).

use std::net::SocketAddr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use rtlan_core::bwm::{ConnSpec, ErrorCode, Op, Reply, Response};
use rtlan_core::rtcd::{ConnHandle, ManagerAnswer, ManagerRequest};

use crate::bwmd::{BwmClient, ClientError};

/// What the event loop asks the worker to do.
#[derive(Debug, Clone)]
enum Job {
    Admit(ConnHandle, ManagerRequest),
    Release(u64),
    Refresh(Vec<u64>),
}

/// What the worker reports back to the event loop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Event {
    /// The answer to an admission.
    Answer(ConnHandle, ManagerAnswer),
    /// Bookings the manager no longer holds (from a `refresh`).
    Lost(Vec<u64>),
}

/// The worker thread and its channels.
pub(super) struct ManagerLink {
    jobs: Option<mpsc::Sender<Job>>,
    answers: mpsc::Receiver<Event>,
    wake: OwnedFd,
    worker: Option<JoinHandle<()>>,
}

/// The `admit` request the manager gets for `req` (hosts named by address).
fn conn_spec(req: &ManagerRequest) -> ConnSpec {
    ConnSpec {
        src: req.src_ip.to_string(),
        dst: req.dst_ip.to_string(),
        rate_bps: req.rate_bps,
        max_packet: u64::from(req.max_packet),
        shaping_interval_us: None,
        burst_bytes: Some(u64::from(req.burst_bytes)),
        delay_us: req.delay_us,
        host_delay_us: req.host_delay_us,
    }
}

/// The core's view of the manager's reply to `admit`.
pub(super) fn answer_of(resp: &Response) -> ManagerAnswer {
    match &resp.reply {
        Reply::Admitted {
            conn,
            path,
            delay_bound_us,
            ..
        } => ManagerAnswer::Admitted {
            manager_conn: *conn,
            delay_bound_us: *delay_bound_us,
            // The path runs host, switch(es), host.
            hops: u8::try_from(path.len().saturating_sub(2)).unwrap_or(u8::MAX),
        },
        Reply::Error {
            code,
            message,
            violations,
        } => {
            let mut text = format!("{}: {message}", code_name(*code));
            if !violations.is_empty() {
                let v = serde_json::to_string(violations).unwrap_or_default();
                text.push_str(&format!(" {v}"));
            }
            ManagerAnswer::Refused(text)
        }
        other => ManagerAnswer::Unreachable(format!("unexpected reply to admit: {other:?}")),
    }
}

fn code_name(code: ErrorCode) -> String {
    serde_json::to_value(code)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{code:?}"))
}

/// The worker: one connection, reopened on failure.
struct Worker {
    addr: SocketAddr,
    timeout: Duration,
    /// Sent in every request's `token` field.
    token: Option<String>,
    client: Option<BwmClient>,
    /// Whether the last request reached the manager (`None` before the first): a change is
    /// logged once, a warning when it is lost and a note when it is back.
    reachable: Option<bool>,
}

impl Worker {
    /// Sends `op` (see [`Worker::try_request`]) and logs when the manager is lost or back.
    fn request(&mut self, op: &Op) -> Result<Response, ClientError> {
        let result = self.try_request(op);
        let now_reachable = result.is_ok();
        if self.reachable != Some(now_reachable) {
            match &result {
                Err(e) => tracing::warn!(
                    manager = %self.addr,
                    "lost the bandwidth manager ({e}); central admissions fail and leases are \
                     not renewed until it answers again"
                ),
                Ok(_) if self.reachable.is_some() => {
                    tracing::warn!(manager = %self.addr, "the bandwidth manager answers again");
                }
                Ok(_) => tracing::info!(manager = %self.addr, "connected to the bandwidth manager"),
            }
            self.reachable = Some(now_reachable);
        }
        result
    }

    /// Sends `op`, reconnecting once if the connection is (or turns out) broken.
    fn try_request(&mut self, op: &Op) -> Result<Response, ClientError> {
        let mut last = None;
        for _ in 0..2 {
            let client = match self.client.as_mut() {
                Some(c) => c,
                None => match BwmClient::connect_timeout(self.addr, self.timeout) {
                    Ok(c) => self.client.insert(c.with_token(self.token.clone())),
                    Err(e) => {
                        last = Some(e);
                        continue;
                    }
                },
            };
            match client.request(op.clone()) {
                Ok(resp) => return Ok(resp),
                Err(e) => {
                    // A timed-out or broken stream may still deliver a stale reply: drop it.
                    self.client = None;
                    last = Some(e);
                }
            }
        }
        Err(last.unwrap_or(ClientError::Closed))
    }

    fn run(mut self, jobs: &mpsc::Receiver<Job>, answers: &mpsc::Sender<Event>, wake: RawFd) {
        let report = |event: Event| {
            if answers.send(event).is_err() {
                return false;
            }
            let one: u64 = 1;
            // SAFETY: `wake` is an eventfd owned by the `ManagerLink`, which joins this thread
            // before closing it; an 8-byte write of a u64 is the eventfd protocol.
            unsafe { libc::write(wake, (&raw const one).cast(), 8) };
            true
        };
        while let Ok(job) = jobs.recv() {
            match job {
                Job::Admit(handle, req) => {
                    // Under `both` the switches set the connection up too: the manager books it
                    // with their service curves (docs/bwm.md § rtlan real-time switches).
                    let op = if req.per_hop {
                        Op::AdmitPerHop(conn_spec(&req))
                    } else {
                        Op::Admit(conn_spec(&req))
                    };
                    let answer = match self.request(&op) {
                        Ok(resp) => answer_of(&resp),
                        Err(e) => ManagerAnswer::Unreachable(e.to_string()),
                    };
                    if !report(Event::Answer(handle, answer)) {
                        return;
                    }
                }
                Job::Refresh(conns) => match self.request(&Op::Refresh { conns }) {
                    Ok(Response {
                        reply: Reply::Refreshed { unknown, .. },
                        ..
                    }) => {
                        if !unknown.is_empty() && !report(Event::Lost(unknown)) {
                            return;
                        }
                    }
                    // Unreachable or refused: the leases run on; the next period tries again.
                    Ok(resp) => tracing::warn!("manager refresh: {:?}", resp.reply),
                    Err(e) => tracing::debug!("manager refresh: {e}"),
                },
                Job::Release(conn) => match self.request(&Op::Release { conn }) {
                    Ok(resp) if resp.ok => {}
                    Ok(resp) => tracing::warn!(conn, "manager release refused: {:?}", resp.reply),
                    Err(e) => tracing::warn!(conn, "manager release: {e}"),
                },
            }
        }
    }
}

impl ManagerLink {
    /// Starts the worker for the manager at `addr`, presenting `token` if any (nothing is
    /// connected until the first job).
    pub(super) fn start(
        addr: SocketAddr,
        timeout: Duration,
        token: Option<String>,
    ) -> std::io::Result<ManagerLink> {
        // SAFETY: eventfd(2) with valid flags; the result is checked before use.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `fd` is a fresh descriptor that nothing else owns.
        let wake = unsafe { OwnedFd::from_raw_fd(fd) };
        let (job_tx, job_rx) = mpsc::channel();
        let (ans_tx, ans_rx) = mpsc::channel();
        let raw = wake.as_raw_fd();
        let worker = Worker {
            addr,
            timeout,
            token,
            client: None,
            reachable: None,
        };
        let thread = std::thread::Builder::new()
            .name("rtcd-bwm".into())
            .spawn(move || worker.run(&job_rx, &ans_tx, raw))?;
        Ok(ManagerLink {
            jobs: Some(job_tx),
            answers: ans_rx,
            wake,
            worker: Some(thread),
        })
    }

    /// The descriptor that becomes readable when answers are waiting.
    pub(super) fn wake_fd(&self) -> RawFd {
        self.wake.as_raw_fd()
    }

    /// Queues an admission; its answer comes back through [`ManagerLink::answers`]. `false` if
    /// the worker is gone (the caller answers `Unreachable` itself).
    pub(super) fn admit(&self, conn: ConnHandle, request: ManagerRequest) -> bool {
        self.jobs
            .as_ref()
            .is_some_and(|j| j.send(Job::Admit(conn, request)).is_ok())
    }

    /// Queues a lease renewal of `manager_conns`.
    pub(super) fn refresh(&self, manager_conns: Vec<u64>) {
        if let Some(j) = &self.jobs {
            if j.send(Job::Refresh(manager_conns)).is_err() {
                tracing::warn!("manager worker gone; leases not renewed");
            }
        }
    }

    /// Queues a release.
    pub(super) fn release(&self, manager_conn: u64) {
        if let Some(j) = &self.jobs {
            if j.send(Job::Release(manager_conn)).is_err() {
                tracing::warn!(manager_conn, "manager worker gone; booking not released");
            }
        }
    }

    /// The events that arrived (clears the wake-up).
    pub(super) fn events(&self) -> Vec<Event> {
        let mut count = 0u64;
        // SAFETY: reading 8 bytes from our non-blocking eventfd into a u64; EAGAIN is fine.
        unsafe { libc::read(self.wake.as_raw_fd(), (&raw mut count).cast(), 8) };
        self.answers.try_iter().collect()
    }

    /// Lets the worker finish the queued jobs (the releases of shutdown) and waits for it.
    pub(super) fn finish(&mut self) {
        self.jobs = None;
        if let Some(t) = self.worker.take() {
            if t.join().is_err() {
                tracing::warn!("manager worker panicked");
            }
        }
    }
}

impl Drop for ManagerLink {
    fn drop(&mut self) {
        self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtlan_core::bwm::Violation;

    #[test]
    fn replies_map_onto_answers() {
        let ok = Response::new(
            Some(1),
            Reply::Admitted {
                conn: 9,
                path: vec!["c".into(), "s1".into(), "s2".into(), "b".into()],
                delay_bound_us: 1380,
                lease_us: Some(30_000_000),
            },
        );
        assert_eq!(
            answer_of(&ok),
            ManagerAnswer::Admitted {
                manager_conn: 9,
                delay_bound_us: 1380,
                hops: 2
            }
        );
        let refused = Response::new(
            Some(2),
            Reply::Error {
                code: ErrorCode::Refused,
                message: "admission refused".into(),
                violations: vec![Violation::Delay {
                    conn: None,
                    delay_bound_us: 9368,
                    delay_us: 9000,
                }],
            },
        );
        let ManagerAnswer::Refused(text) = answer_of(&refused) else {
            panic!("expected a refusal");
        };
        assert!(text.starts_with("refused: admission refused"), "{text}");
        assert!(text.contains("9368"), "{text}");
        let odd = Response::new(Some(3), Reply::Released { conn: 1 });
        assert!(matches!(answer_of(&odd), ManagerAnswer::Unreachable(_)));
    }

    #[test]
    fn spec_names_hosts_by_address_with_the_bucket() {
        let spec = conn_spec(&ManagerRequest {
            src_ip: "198.18.0.3".parse().expect("literal"),
            dst_ip: "198.18.0.2".parse().expect("literal"),
            rate_bps: 40_000_000,
            max_packet: 1514,
            burst_bytes: 51_514,
            delay_us: Some(9_500),
            host_delay_us: Some(2_000),
            per_hop: true,
        });
        assert_eq!(
            (spec.src.as_str(), spec.dst.as_str()),
            ("198.18.0.3", "198.18.0.2")
        );
        assert_eq!(spec.burst_bytes, Some(51_514));
        assert_eq!(spec.shaping_interval_us, None);
        assert_eq!(spec.delay_us, Some(9_500));
        assert_eq!(spec.host_delay_us, Some(2_000));
    }

    /// The answers of `link` to one admission, waited for up to 5 s.
    fn answer(link: &ManagerLink, handle: u64, req: ManagerRequest) -> Vec<Event> {
        assert!(link.admit(ConnHandle(handle), req));
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        loop {
            let a = link.events();
            if !a.is_empty() || std::time::Instant::now() > deadline {
                return a;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn the_configured_token_is_presented_to_the_manager() {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::Arc;
        let network = "[[switch]]\nname = \"s1\"\nt_mux = \"45us\"\nbuffer = \"128KiB\"\n\
                       [[link]]\nends = [\"a\", \"s1\"]\nrate = \"100mbit\"\n\
                       [[link]]\nends = [\"b\", \"s1\"]\nrate = \"100mbit\"\n\
                       [[host]]\nname = \"a\"\nip = \"198.18.0.3\"\n\
                       [[host]]\nname = \"b\"\nip = \"198.18.0.2\"\n";
        let topo = crate::bwmd::parse_network(network, "n.toml").expect("valid network");
        let manager = rtlan_core::bwm::Manager::new(topo, Default::default()).expect("valid");
        let dir = std::env::temp_dir().join(format!("rtlan-rtcd-token-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let config = crate::bwmd::ServerConfig {
            tokens: crate::bwmd::parse_tokens(
                "[[token]]\nprincipal = \"host-a\"\nrole = \"client\"\ntoken = \"tok-a\"\n",
                "t.toml",
            )
            .expect("valid"),
            ..Default::default()
        };
        let server =
            crate::bwmd::Server::bind_with(manager, "127.0.0.1:0", dir.join("s.json"), config)
                .expect("binds");
        let addr = server.local_addr().expect("bound");
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || server.run(&flag));
        let req = ManagerRequest {
            src_ip: "198.18.0.3".parse().expect("literal"),
            dst_ip: "198.18.0.2".parse().expect("literal"),
            rate_bps: 1_000_000,
            max_packet: 1514,
            burst_bytes: 3028,
            delay_us: None,
            host_delay_us: None,
            per_hop: false,
        };
        let with =
            ManagerLink::start(addr, Duration::from_secs(2), Some("tok-a".into())).expect("worker");
        let got = answer(&with, 1, req);
        assert!(
            matches!(
                got.as_slice(),
                [Event::Answer(_, ManagerAnswer::Admitted { .. })]
            ),
            "{got:?}"
        );
        let without = ManagerLink::start(addr, Duration::from_secs(2), None).expect("worker");
        let got = answer(&without, 2, req);
        assert!(
            matches!(got.as_slice(), [Event::Answer(_, ManagerAnswer::Refused(t))]
                if t.starts_with("unauthenticated")),
            "{got:?}"
        );
        drop((with, without));
        stop.store(true, Ordering::Relaxed);
        assert!(matches!(thread.join(), Ok(Ok(()))));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn unreachable_manager_is_answered_not_hung() {
        // Nothing listens on this loopback port (bound then closed): connect is refused.
        let addr = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("ephemeral port");
        let link = ManagerLink::start(addr, Duration::from_millis(300), None).expect("worker");
        let req = ManagerRequest {
            src_ip: "198.18.0.3".parse().expect("literal"),
            dst_ip: "198.18.0.2".parse().expect("literal"),
            rate_bps: 1,
            max_packet: 64,
            burst_bytes: 64,
            delay_us: None,
            host_delay_us: None,
            per_hop: false,
        };
        assert!(link.admit(ConnHandle(4), req));
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        let got = loop {
            let a = link.events();
            if !a.is_empty() || std::time::Instant::now() > deadline {
                break a;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        assert!(
            matches!(
                got.as_slice(),
                [Event::Answer(ConnHandle(4), ManagerAnswer::Unreachable(_))]
            ),
            "{got:?}"
        );
    }
}
