//! The agent daemon's loop: the agent core as the driver's node, the §3.1 interface on the
//! control socket from the same `epoll`, and the requests that wait for the token answered after
//! every iteration.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use base64::Engine as _;
use rtlan_core::rether::agent::{Agent, AgentConfig, AgentEvent, ApiError, SendSpec, SessionState};
use rtlan_core::rether::MAX_FRAME;
use rtlan_core::router::classify::FlowKey;
use rtlan_core::time::Instant;
use rtlan_wire::rether::NodeId;
use serde_json::{json, Value};

use super::{Error, RetherDaemonConfig, RunReport};
use crate::clock;
use crate::driver::{Driver, DriverOptions, USER_TOKEN_BASE};
use crate::mgmt::{Limits, Listen, MgmtError, MgmtEvent, MgmtServer, RequestId};
use crate::packet::PortOptions;
use crate::xdp::{AnyPort, Steering};

/// Longest request line: a base64 data unit of the largest size and its envelope.
pub(super) const MAX_LINE: usize = 512 * 1024;
/// How long a waiting request waits unless it says (`timeout_ms`).
const DEFAULT_WAIT: Duration = Duration::from_secs(5);
/// The longest wait a request may ask for.
const MAX_WAIT: Duration = Duration::from_secs(60);
/// Requests waiting at once, all clients together.
pub(super) const MAX_WAITING: usize = 1024;

/// A flow as a request names it.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FlowArg {
    /// `udp`, `tcp` or a protocol number.
    protocol: Value,
    src: Ipv4Addr,
    #[serde(default)]
    src_port: u16,
    dst: Ipv4Addr,
    #[serde(default)]
    dst_port: u16,
}

impl FlowArg {
    pub(super) fn key(&self) -> Result<FlowKey, MgmtError> {
        let protocol = match &self.protocol {
            Value::String(s) if s == "udp" => 17,
            Value::String(s) if s == "tcp" => 6,
            Value::Number(n) => n
                .as_u64()
                .and_then(|n| u8::try_from(n).ok())
                .ok_or_else(|| MgmtError::bad_request("protocol: 0 to 255"))?,
            _ => {
                return Err(MgmtError::bad_request(
                    "protocol: \"udp\", \"tcp\" or a number",
                ))
            }
        };
        Ok(FlowKey {
            src: self.src,
            dst: self.dst,
            protocol,
            src_port: self.src_port,
            dst_port: self.dst_port,
        })
    }
}

/// A control request (`docs/rether.md` §7).
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
enum Request {
    Ping,
    Stats,
    Status,
    Sessions,
    ResetTokenGap,
    Open {
        /// Rate in the one unit grammar (`"1.5mbit"`), or `bytes_per_trt`.
        rate: Option<String>,
        bytes_per_trt: Option<u32>,
        max_frame: Option<usize>,
        receiver: Option<u16>,
        flow: Option<FlowArg>,
        buffers: Option<usize>,
        #[serde(default)]
        keep: bool,
    },
    Admit {
        session: u16,
        #[serde(default = "yes")]
        wait: bool,
        timeout_ms: Option<u64>,
    },
    Close {
        session: u16,
    },
    Send {
        session: u16,
        data: String,
        #[serde(default)]
        block: bool,
        timeout_ms: Option<u64>,
    },
    Listen {
        from: u16,
        session: u16,
        buffers: Option<usize>,
    },
    Unlisten {
        from: u16,
        session: u16,
    },
    Recv {
        from: u16,
        session: u16,
        #[serde(default)]
        block: bool,
        timeout_ms: Option<u64>,
    },
}

fn yes() -> bool {
    true
}

/// What a waiting request waits for.
#[derive(Debug)]
enum Wait {
    Admit { session: u16 },
    Send { session: u16, data: Vec<u8> },
    Recv { from: NodeId, session: u16 },
}

#[derive(Debug)]
struct Waiting {
    client: u64,
    id: RequestId,
    until: Instant,
    wait: Wait,
}

/// Which client owns what, to release it when the client goes.
#[derive(Debug, Default)]
struct Owners {
    /// Session → (client, kept after the client goes).
    sessions: BTreeMap<u16, (u64, bool)>,
    /// (station, session) listened to → client.
    listens: BTreeMap<(NodeId, u16), u64>,
}

/// One line of the agent's recent history (`status`).
#[derive(Debug, Clone, serde::Serialize)]
pub(super) struct Happened {
    /// ns since the daemon started.
    pub(super) at_ns: u64,
    pub(super) what: String,
}

pub(super) const HISTORY: usize = 64;

pub(super) struct Daemon {
    config: RetherDaemonConfig,
    driver: Driver<Agent, AnyPort>,
    shell: Shell,
}

/// The control socket and what its requests left behind.
struct Shell {
    server: Option<MgmtServer>,
    out: Vec<MgmtEvent>,
    waiting: Vec<Waiting>,
    owners: Owners,
    history: std::collections::VecDeque<Happened>,
    started: Instant,
}

fn api_error(e: ApiError) -> MgmtError {
    let code = match e {
        ApiError::NoSession(_) => "no_session",
        ApiError::NoFreeId => "no_free_id",
        ApiError::FlowTaken(_) => "flow_taken",
        ApiError::Invalid(_) => "bad_request",
        ApiError::NotAdmitted(_) => "not_admitted",
        ApiError::BuffersFull(_) => "buffers_full",
        ApiError::TooLarge(_) => "too_large",
        ApiError::Listening { .. } => "listening",
        ApiError::NotListening { .. } => "not_listening",
    };
    MgmtError::new(code, e.to_string())
}

fn node_id(n: u16, what: &str) -> Result<NodeId, MgmtError> {
    NodeId::new(n)
        .ok_or_else(|| MgmtError::bad_request(format!("{what}: a station id, 1 to 32767")))
}

pub(super) fn wait_for(timeout_ms: Option<u64>) -> Duration {
    timeout_ms
        .map_or(DEFAULT_WAIT, Duration::from_millis)
        .min(MAX_WAIT)
}

pub(super) fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Daemon {
    pub(super) fn new(config: RetherDaemonConfig) -> Result<Daemon, Error> {
        let options = PortOptions::default();
        // Port 0 is the segment, port 1 the host (rtlan_core::rether::agent::{SEGMENT, HOST}).
        let ports = crate::xdp::open_ports(
            [config.segment_port.as_str(), config.host_port.as_str()],
            config.data_plane,
            &Steering::Everything,
            &options,
        )
        .map_err(|(ifname, source)| Error::Port { ifname, source })?;
        let mut station = config.station.clone();
        station.mac = crate::driver::Port::mac(&ports[0]);
        let mut agent_config = AgentConfig::new(station);
        agent_config.host_queue_frames = config.host_queue;
        let agent = Agent::new(agent_config);
        let driver = Driver::new(agent, ports, DriverOptions::default())?;
        let server = match &config.control_socket {
            None => None,
            Some(path) => {
                let limits = Limits {
                    max_line: MAX_LINE,
                    ..Limits::default()
                };
                Some(MgmtServer::bind(
                    &Listen::Unix(path.clone()),
                    driver.epoll(),
                    USER_TOKEN_BASE,
                    limits,
                )?)
            }
        };
        tracing::info!(
            name = %config.name,
            id = config.station.id.get(),
            mac = %driver.node().station().config().mac,
            host_port = %config.host_port,
            segment_port = %config.segment_port,
            rate_bps = config.station.rate_bps,
            trt_ns = nanos(config.station.trt),
            "RETHER agent running"
        );
        Ok(Daemon {
            config,
            driver,
            shell: Shell {
                server,
                out: Vec::new(),
                waiting: Vec::new(),
                owners: Owners::default(),
                history: std::collections::VecDeque::new(),
                started: clock::now(),
            },
        })
    }

    pub(super) fn run(&mut self, shutdown: &AtomicBool) -> Result<(), Error> {
        let Daemon {
            config,
            driver,
            shell,
        } = self;
        let config = &*config;
        // The driver calls one closure at a time; both reach the shell's state.
        let shell = std::cell::RefCell::new(shell);
        driver.run_with(
            shutdown,
            |driver, token, flags| {
                let mut guard = shell.borrow_mut();
                let Shell {
                    server,
                    out,
                    waiting,
                    owners,
                    history,
                    started,
                } = &mut **guard;
                let Some(server) = server.as_mut() else {
                    return;
                };
                if !server.owns(token) {
                    return;
                }
                let (epoll, agent) = driver.epoll_and_node();
                let now = clock::now();
                server.on_event(epoll, token, flags, out, |client, _pid, envelope| {
                    let request = match envelope.decode::<Request>() {
                        Ok(r) => r,
                        Err(e) => return Some(Err(e)),
                    };
                    let context = Context {
                        client,
                        id: envelope.id,
                        now,
                        config,
                        started: *started,
                    };
                    answer(request, &context, agent, owners, waiting, history)
                });
                for event in out.drain(..) {
                    if let MgmtEvent::Gone(client) = event {
                        client_gone(client, agent, owners, waiting);
                    }
                }
            },
            |driver| {
                let mut guard = shell.borrow_mut();
                let Shell {
                    server,
                    out,
                    waiting,
                    owners,
                    history,
                    started,
                } = &mut **guard;
                let now = clock::now();
                let (epoll, agent) = driver.epoll_and_node();
                while let Some(event) = agent.poll_event() {
                    note(history, *started, now, &event);
                }
                if let Some(server) = server.as_mut() {
                    serve_waiting(server, epoll, agent, waiting, out, now);
                    for event in out.drain(..) {
                        if let MgmtEvent::Gone(client) = event {
                            client_gone(client, agent, owners, waiting);
                        }
                    }
                }
            },
        )?;
        tracing::info!(name = %config.name, "RETHER agent stopped");
        Ok(())
    }

    pub(super) fn report(&mut self) -> RunReport {
        self.driver.read_kernel_drops();
        let agent = self.driver.node();
        RunReport {
            name: self.config.name.clone(),
            id: self.config.station.id.get(),
            uptime_ns: nanos(self.driver.uptime()),
            agent: agent.stats().clone(),
            station: agent.station().stats().clone(),
            ports: self.driver.port_stats(),
        }
    }
}

/// Logs an agent event and keeps it in the recent history.
fn note(
    history: &mut std::collections::VecDeque<Happened>,
    started: Instant,
    now: Instant,
    event: &AgentEvent,
) {
    let what = match event {
        AgentEvent::Mode(m) => {
            tracing::info!(mode = ?m, "segment mode");
            format!("mode {m:?}")
        }
        AgentEvent::Admitted { session, tht } => {
            tracing::info!(session, tht_ns = nanos(*tht), "session admitted");
            format!("session {session} admitted, THT {tht:?}")
        }
        AgentEvent::Refused { session, reason } => {
            tracing::warn!(session, ?reason, "session refused");
            format!("session {session} refused: {reason:?}")
        }
        AgentEvent::Closed { session } => {
            tracing::info!(session, "session closed");
            format!("session {session} closed")
        }
        AgentEvent::Dead { station } => {
            tracing::warn!(station = station.get(), "station declared dead");
            format!("station {} declared dead", station.get())
        }
        // Per-unit events are not history.
        AgentEvent::Received { .. } | AgentEvent::BufferFree { .. } => return,
    };
    if history.len() >= HISTORY {
        history.pop_front();
    }
    history.push_back(Happened {
        at_ns: nanos(now.saturating_duration_since(started)),
        what,
    });
}

/// Releases what a departed client owned.
fn client_gone(client: u64, agent: &mut Agent, owners: &mut Owners, waiting: &mut Vec<Waiting>) {
    waiting.retain(|w| w.client != client);
    let sessions: Vec<u16> = owners
        .sessions
        .iter()
        .filter(|(_, (c, keep))| *c == client && !keep)
        .map(|(s, _)| *s)
        .collect();
    for session in sessions {
        owners.sessions.remove(&session);
        if agent.close(session).is_ok() {
            tracing::info!(session, "session closed: its client went away");
        }
    }
    let listens: Vec<(NodeId, u16)> = owners
        .listens
        .iter()
        .filter(|(_, c)| **c == client)
        .map(|(k, _)| *k)
        .collect();
    for (from, session) in listens {
        owners.listens.remove(&(from, session));
        let _ = agent.unlisten(from, session);
    }
}

/// Who asked, and when.
struct Context<'a> {
    client: u64,
    id: RequestId,
    now: Instant,
    config: &'a RetherDaemonConfig,
    started: Instant,
}

fn answer(
    request: Request,
    cx: &Context<'_>,
    agent: &mut Agent,
    owners: &mut Owners,
    waiting: &mut Vec<Waiting>,
    history: &std::collections::VecDeque<Happened>,
) -> Option<Result<Value, MgmtError>> {
    let (client, id, now) = (cx.client, cx.id, cx.now);
    let mut park = |wait: Wait, timeout_ms: Option<u64>| {
        if waiting.len() >= MAX_WAITING {
            return Some(Err(MgmtError::new(
                "busy",
                format!("{MAX_WAITING} requests are waiting already"),
            )));
        }
        waiting.push(Waiting {
            client,
            id,
            until: now + wait_for(timeout_ms),
            wait,
        });
        None
    };
    let result = match request {
        Request::Ping => Ok(json!("pong")),
        Request::Stats => Ok(json!({
            "agent": agent.stats(),
            "station": agent.station().stats(),
            "mode": format!("{:?}", agent.station().mode()).to_lowercase(),
        })),
        Request::Status => Ok(status(agent, cx.config, history, cx.started, now)),
        Request::Sessions => Ok(json!(agent.sessions())),
        Request::ResetTokenGap => {
            agent.reset_token_gap();
            Ok(json!(null))
        }
        Request::Open {
            rate,
            bytes_per_trt,
            max_frame,
            receiver,
            flow,
            buffers,
            keep,
        } => (|| {
            let bytes = match (rate, bytes_per_trt) {
                (Some(r), None) => {
                    let bps = rtlan_core::units::parse_rate(&r)
                        .map_err(|e| MgmtError::bad_request(format!("rate: {e}")))?;
                    agent.bytes_per_trt(bps)
                }
                (None, Some(b)) => b,
                _ => {
                    return Err(MgmtError::bad_request(
                        "give exactly one of `rate` and `bytes_per_trt`",
                    ))
                }
            };
            let receiver = receiver.map(|r| node_id(r, "receiver")).transpose()?;
            let flow = flow.map(|f| f.key()).transpose()?;
            let session = agent
                .open(SendSpec {
                    bytes_per_trt: bytes,
                    max_frame: max_frame.unwrap_or(MAX_FRAME),
                    receiver,
                    flow,
                    buffers: buffers.unwrap_or(4),
                })
                .map_err(api_error)?;
            owners.sessions.insert(session, (client, keep));
            Ok(json!({"session": session, "bytes_per_trt": bytes}))
        })(),
        Request::Admit {
            session,
            wait,
            timeout_ms,
        } => match agent.admit(now, session) {
            Err(e) => Err(api_error(e)),
            Ok(()) if wait => return park(Wait::Admit { session }, timeout_ms),
            Ok(()) => Ok(json!({"session": session, "state": "admitting"})),
        },
        Request::Close { session } => agent.close(session).map_err(api_error).map(|()| {
            owners.sessions.remove(&session);
            json!(null)
        }),
        Request::Send {
            session,
            data,
            block,
            timeout_ms,
        } => match base64::engine::general_purpose::STANDARD.decode(data.as_bytes()) {
            Err(e) => Err(MgmtError::bad_request(format!("data: not base64: {e}"))),
            Ok(bytes) => match agent.send(session, &bytes) {
                Ok(unit) => Ok(json!({"unit": unit})),
                Err(ApiError::BuffersFull(_)) if block => {
                    return park(
                        Wait::Send {
                            session,
                            data: bytes,
                        },
                        timeout_ms,
                    )
                }
                Err(e) => Err(api_error(e)),
            },
        },
        Request::Listen {
            from,
            session,
            buffers,
        } => (|| {
            let from = node_id(from, "from")?;
            agent
                .listen(from, session, buffers.unwrap_or(4))
                .map_err(api_error)?;
            owners.listens.insert((from, session), client);
            Ok(json!(null))
        })(),
        Request::Unlisten { from, session } => (|| {
            let from = node_id(from, "from")?;
            agent.unlisten(from, session).map_err(api_error)?;
            owners.listens.remove(&(from, session));
            Ok(json!(null))
        })(),
        Request::Recv {
            from,
            session,
            block,
            timeout_ms,
        } => {
            let from = match node_id(from, "from") {
                Ok(f) => f,
                Err(e) => return Some(Err(e)),
            };
            match agent.recv(from, session) {
                Err(e) => Err(api_error(e)),
                Ok(Some(unit)) => Ok(unit_json(&unit)),
                Ok(None) if block => return park(Wait::Recv { from, session }, timeout_ms),
                Ok(None) => Ok(json!(null)),
            }
        }
    };
    Some(result)
}

fn unit_json(unit: &rtlan_core::rether::agent::Unit) -> Value {
    json!({
        "from": unit.from.get(),
        "session": unit.session,
        "unit": unit.unit,
        "complete": unit.complete,
        "data": base64::engine::general_purpose::STANDARD.encode(&unit.data),
    })
}

/// `status`: the segment as this station sees it.
fn status(
    agent: &Agent,
    config: &RetherDaemonConfig,
    history: &std::collections::VecDeque<Happened>,
    started: Instant,
    now: Instant,
) -> Value {
    let station = agent.station();
    let since = |t: Option<Instant>| t.map(|t| nanos(now.saturating_duration_since(t)));
    json!({
        "name": config.name,
        "id": config.station.id.get(),
        "mac": station.config().mac.to_string(),
        "host_mac": agent.host_mac().map(|m| m.to_string()),
        "mode": format!("{:?}", station.mode()).to_lowercase(),
        "generation": station.generation(),
        "heard": station.stations().iter().map(|n| n.get()).collect::<Vec<_>>(),
        "token": token_json(station),
        "token_heard_ago_ns": since(agent.last_token_heard()),
        "uptime_ns": nanos(now.saturating_duration_since(started)),
        "history": history,
    })
}

/// The last token a station saw: its TRT, T_NRT, cycle, members and RT-set.
pub(super) fn token_json(station: &rtlan_core::rether::Station) -> Option<Value> {
    station.last_token().map(|t| {
        json!({
            "trt_ns": t.trt_ns,
            "t_nrt_ns": t.t_nrt_ns,
            "cycle": t.cycle,
            "stations": t.members.iter().map(|m| json!({"id": m.id.get(), "dead": m.dead})).collect::<Vec<_>>(),
            "rt_set": t.sessions.iter().map(|e| json!({
                "session": e.session,
                "sender": e.sender.get(),
                "receiver": e.receiver.map(NodeId::get),
                "closing": e.closing,
                "tht_ns": e.tht_ns,
                "bytes_per_trt": e.bytes_per_trt,
            })).collect::<Vec<_>>(),
        })
    })
}

/// Answers the waiting requests whose wait is over.
fn serve_waiting(
    server: &mut MgmtServer,
    epoll: &crate::driver::Epoll,
    agent: &mut Agent,
    waiting: &mut Vec<Waiting>,
    out: &mut Vec<MgmtEvent>,
    now: Instant,
) {
    let mut i = 0;
    while i < waiting.len() {
        let w = &mut waiting[i];
        let outcome: Option<Result<Value, MgmtError>> = match &mut w.wait {
            Wait::Admit { session } => {
                let state = agent.sessions().into_iter().find(|s| s.session == *session);
                match state {
                    None => Some(Err(MgmtError::new(
                        "no_session",
                        format!("session {session} was closed"),
                    ))),
                    Some(s) if s.state == SessionState::Admitted => Some(Ok(json!({
                        "session": session,
                        "state": "admitted",
                        "tht_ns": s.tht_ns,
                        "bytes_per_trt": s.bytes_per_trt,
                    }))),
                    Some(s) if s.state == SessionState::Refused => Some(Err(MgmtError::new(
                        "refused",
                        format!("session {session} was refused by the admission test (eq. 3) or the RT-set is full"),
                    ))),
                    Some(_) => None,
                }
            }
            Wait::Send { session, data } => match agent.send(*session, data) {
                Ok(unit) => Some(Ok(json!({"unit": unit}))),
                Err(ApiError::BuffersFull(_)) => None,
                Err(e) => Some(Err(api_error(e))),
            },
            Wait::Recv { from, session } => match agent.recv(*from, *session) {
                Ok(Some(unit)) => Some(Ok(unit_json(&unit))),
                Ok(None) => None,
                Err(e) => Some(Err(api_error(e))),
            },
        };
        let outcome = outcome.or_else(|| {
            (now >= w.until).then(|| {
                Err(MgmtError::new(
                    "timeout",
                    "the wait ended before the token brought an answer",
                ))
            })
        });
        match outcome {
            Some(result) => {
                let w = waiting.swap_remove(i);
                server.reply(epoll, w.client, w.id, result, out);
            }
            None => i += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Result<Request, MgmtError> {
        crate::mgmt::parse_line(line.as_bytes())
            .expect("envelope")
            .decode::<Request>()
    }

    #[test]
    fn every_documented_op_parses_and_mistakes_do_not() {
        for line in [
            r#"{"op":"ping"}"#,
            r#"{"op":"stats"}"#,
            r#"{"op":"status"}"#,
            r#"{"op":"sessions"}"#,
            r#"{"op":"reset_token_gap"}"#,
            r#"{"op":"open","rate":"1.5mbit","receiver":2}"#,
            r#"{"op":"open","bytes_per_trt":2000,"max_frame":1000,"buffers":2,"keep":true,
               "flow":{"protocol":"udp","src":"198.18.0.1","dst":"198.18.0.4","dst_port":9000}}"#,
            r#"{"op":"admit","session":1}"#,
            r#"{"op":"admit","session":1,"wait":false}"#,
            r#"{"op":"close","session":1}"#,
            r#"{"op":"send","session":1,"data":"aGVsbG8=","block":true,"timeout_ms":100}"#,
            r#"{"op":"listen","from":1,"session":1,"buffers":3}"#,
            r#"{"op":"unlisten","from":1,"session":1}"#,
            r#"{"op":"recv","from":1,"session":1,"block":true}"#,
        ] {
            let line = line.replace('\n', " ");
            assert!(parse(&line).is_ok(), "{line}: {:?}", parse(&line));
        }
        for line in [
            r#"{"op":"reboot"}"#,
            r#"{"op":"open","rate":"1mbit","colour":"red"}"#,
            r#"{"op":"admit"}"#,
            r#"{"op":"send","session":1}"#,
            r#"{"op":"listen","from":1}"#,
            r#"{"op":"open","flow":{"protocol":"udp","src":"1.2.3","dst":"1.2.3.4"}}"#,
        ] {
            assert!(parse(line).is_err(), "{line}");
        }
    }

    #[test]
    fn flows_name_their_protocol() {
        let flow = |p: Value| FlowArg {
            protocol: p,
            src: Ipv4Addr::new(198, 18, 0, 1),
            src_port: 0,
            dst: Ipv4Addr::new(198, 18, 0, 4),
            dst_port: 9000,
        };
        assert_eq!(flow(json!("udp")).key().unwrap().protocol, 17);
        assert_eq!(flow(json!("tcp")).key().unwrap().protocol, 6);
        assert_eq!(flow(json!(132)).key().unwrap().protocol, 132);
        assert!(flow(json!(256)).key().is_err());
        assert!(flow(json!("sctp")).key().is_err());
    }
}
