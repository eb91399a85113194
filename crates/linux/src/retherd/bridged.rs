//! The RETHER bridge daemon's loop (`rtlan rether-bridge --config FILE`;
//! [`rtlan_core::rether::bridge::Bridge`]; RETHER, Venkatramani and Chiueh, §2.5;
//! `docs/rether-bridge.md`): the bridge core as the driver's node on one port per segment, its
//! sub-connections managed on the control socket from the same `epoll`, admissions answered
//! after every iteration once the token of the port's segment brings them.
//!
//! Ops: `ping`, `stats`, `status`, `sessions`, `fdb` (the learnt MACs, as the switch's), `open` (a sub-connection leaving on `port` for a
//! 5-tuple, `rate` or `bytes_per_trt` per that segment's TRT), `admit` (waits for the token's
//! answer unless `"wait": false`) and `close`. A sub-connection belongs to the client that
//! opened it and is closed when that client goes, unless it was opened with `"keep": true`.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::AtomicBool;

use rtlan_core::node::PortId;
use rtlan_core::rether::agent::SessionState;
use rtlan_core::rether::bridge::{Bridge, BridgeError, BridgeStats, SubSpec};
use rtlan_core::rether::{Event, Stats, MAX_FRAME};
use rtlan_core::time::Instant;
use serde_json::{json, Value};

use super::daemon::{
    nanos, token_json, wait_for, FlowArg, Happened, HISTORY, MAX_LINE, MAX_WAITING,
};
use super::{Error, RetherBridgeConfig};
use crate::clock;
use crate::driver::{Driver, DriverOptions, PortStats, USER_TOKEN_BASE};
use crate::mgmt::{Limits, Listen, MgmtError, MgmtEvent, MgmtServer, RequestId};
use crate::packet::PortOptions;
use crate::xdp::{AnyPort, Steering};

/// A control request (module docs).
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
enum Request {
    Ping,
    Stats,
    Status,
    Sessions,
    Fdb,
    Open {
        /// The output port: its index or its interface name.
        port: Value,
        /// Rate in the one unit grammar (`"1.5mbit"`), or `bytes_per_trt`.
        rate: Option<String>,
        bytes_per_trt: Option<u32>,
        max_frame: Option<usize>,
        flow: FlowArg,
        #[serde(default)]
        keep: bool,
    },
    Admit {
        port: Value,
        session: u16,
        #[serde(default = "yes")]
        wait: bool,
        timeout_ms: Option<u64>,
    },
    Close {
        port: Value,
        session: u16,
    },
}

fn yes() -> bool {
    true
}

#[derive(Debug)]
struct Waiting {
    client: u64,
    id: RequestId,
    until: Instant,
    port: PortId,
    session: u16,
}

/// What the bridge did, returned when it stops.
#[derive(Debug, Clone, serde::Serialize)]
pub struct BridgeRunReport {
    /// The configured name.
    pub name: String,
    /// How long the loop ran, ns.
    pub uptime_ns: u64,
    /// The bridge's counters.
    pub bridge: BridgeStats,
    /// Per port: its interface, station id and the station's counters.
    pub stations: Vec<PortReport>,
    /// The shell's per-port counters.
    pub ports: Vec<PortStats>,
}

/// One port's station in a [`BridgeRunReport`].
#[derive(Debug, Clone, serde::Serialize)]
pub struct PortReport {
    /// The interface.
    pub ifname: String,
    /// The bridge's station id on that segment.
    pub id: u16,
    /// The station's counters.
    pub station: Stats,
}

pub(super) struct BridgeDaemon {
    config: RetherBridgeConfig,
    driver: Driver<Bridge, AnyPort>,
    shell: Shell,
}

struct Shell {
    server: Option<MgmtServer>,
    out: Vec<MgmtEvent>,
    waiting: Vec<Waiting>,
    /// (port, session) → (client, kept after the client goes).
    owners: BTreeMap<(PortId, u16), (u64, bool)>,
    history: VecDeque<Happened>,
    started: Instant,
}

fn bridge_error(e: BridgeError) -> MgmtError {
    let code = match e {
        BridgeError::Invalid(_) => "bad_request",
        BridgeError::NoPort(_) => "no_port",
        BridgeError::NoSession { .. } => "no_session",
        BridgeError::NoFreeId(_) => "no_free_id",
        BridgeError::FlowTaken(_) => "flow_taken",
    };
    MgmtError::new(code, e.to_string())
}

/// A request's `port`: an index, or a port's interface name.
fn port_arg(config: &RetherBridgeConfig, port: &Value) -> Result<PortId, MgmtError> {
    let found = match port {
        Value::Number(n) => n
            .as_u64()
            .and_then(|i| usize::try_from(i).ok())
            .filter(|&i| i < config.ports.len()),
        Value::String(name) => config.ports.iter().position(|p| &p.ifname == name),
        _ => None,
    };
    let names: Vec<&str> = config.ports.iter().map(|p| p.ifname.as_str()).collect();
    found
        .and_then(|i| u16::try_from(i).ok())
        .map(PortId)
        .ok_or_else(|| {
            MgmtError::new(
                "no_port",
                format!(
                    "port: an index below {} or one of {}",
                    config.ports.len(),
                    names.join(", ")
                ),
            )
        })
}

impl BridgeDaemon {
    pub(super) fn new(config: RetherBridgeConfig) -> Result<BridgeDaemon, Error> {
        let options = PortOptions::default();
        let ports = crate::xdp::open_ports(
            config.ports.iter().map(|p| p.ifname.as_str()),
            config.data_plane,
            &Steering::Everything,
            &options,
        )
        .map_err(|(ifname, source)| Error::Port { ifname, source })?;
        let mut core = config.bridge_config();
        for (station, port) in core.stations.iter_mut().zip(&ports) {
            station.mac = crate::driver::Port::mac(port);
        }
        let bridge = Bridge::new(core).map_err(|e| {
            Error::Config(crate::switchd::ConfigError::Invalid {
                line: 1,
                column: 1,
                message: e.to_string(),
            })
        })?;
        let driver = Driver::new(bridge, ports, DriverOptions::default())?;
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
        for (i, p) in config.ports.iter().enumerate() {
            tracing::info!(
                name = %config.name,
                port = i,
                ifname = %p.ifname,
                id = p.station.id.get(),
                rate_bps = p.station.rate_bps,
                trt_ns = nanos(p.station.trt),
                "RETHER bridge port"
            );
        }
        tracing::info!(name = %config.name, ports = config.ports.len(), "RETHER bridge running");
        Ok(BridgeDaemon {
            config,
            driver,
            shell: Shell {
                server,
                out: Vec::new(),
                waiting: Vec::new(),
                owners: BTreeMap::new(),
                history: VecDeque::new(),
                started: clock::now(),
            },
        })
    }

    pub(super) fn run(&mut self, shutdown: &AtomicBool) -> Result<(), Error> {
        let BridgeDaemon {
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
                let (epoll, bridge) = driver.epoll_and_node();
                let now = clock::now();
                server.on_event(epoll, token, flags, out, |client, _pid, envelope| {
                    let request = match envelope.decode::<Request>() {
                        Ok(r) => r,
                        Err(e) => return Some(Err(e)),
                    };
                    let cx = Context {
                        client,
                        id: envelope.id,
                        now,
                        config,
                        started: *started,
                    };
                    answer(request, &cx, bridge, owners, waiting, history)
                });
                for event in out.drain(..) {
                    if let MgmtEvent::Gone(client) = event {
                        client_gone(client, bridge, owners, waiting);
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
                let (epoll, bridge) = driver.epoll_and_node();
                while let Some((port, event)) = bridge.poll_event() {
                    note(history, *started, now, port, &event);
                }
                if let Some(server) = server.as_mut() {
                    serve_waiting(server, epoll, bridge, waiting, out, now);
                    for event in out.drain(..) {
                        if let MgmtEvent::Gone(client) = event {
                            client_gone(client, bridge, owners, waiting);
                        }
                    }
                }
            },
        )?;
        tracing::info!(name = %config.name, "RETHER bridge stopped");
        Ok(())
    }

    pub(super) fn report(&mut self) -> BridgeRunReport {
        self.driver.read_kernel_drops();
        let bridge = self.driver.node();
        BridgeRunReport {
            name: self.config.name.clone(),
            uptime_ns: nanos(self.driver.uptime()),
            bridge: bridge.stats().clone(),
            stations: self
                .config
                .ports
                .iter()
                .enumerate()
                .map(|(i, p)| PortReport {
                    ifname: p.ifname.clone(),
                    id: p.station.id.get(),
                    station: bridge
                        .station(PortId(i as u16))
                        .map(|s| s.stats().clone())
                        .unwrap_or_default(),
                })
                .collect(),
            ports: self.driver.port_stats(),
        }
    }
}

/// Logs a station's event and keeps it in the recent history.
fn note(
    history: &mut VecDeque<Happened>,
    started: Instant,
    now: Instant,
    port: PortId,
    event: &Event,
) {
    let p = port.0;
    let what = match event {
        Event::Mode(m) => {
            tracing::info!(port = p, mode = ?m, "segment mode");
            format!("port {p}: mode {m:?}")
        }
        Event::Admitted { session, tht } => {
            tracing::info!(
                port = p,
                session,
                tht_ns = nanos(*tht),
                "sub-connection admitted"
            );
            format!("port {p}: session {session} admitted, THT {tht:?}")
        }
        Event::Refused { session, reason } => {
            tracing::warn!(port = p, session, ?reason, "sub-connection refused");
            format!("port {p}: session {session} refused: {reason:?}")
        }
        Event::Closed { session } => {
            tracing::info!(port = p, session, "sub-connection left the RT-set");
            format!("port {p}: session {session} left the RT-set")
        }
        Event::Dead { station } => {
            tracing::warn!(port = p, station = station.get(), "station declared dead");
            format!("port {p}: station {} declared dead", station.get())
        }
        // The bridge's stations receive no DATA of their own sessions.
        Event::Data { .. } => return,
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
fn client_gone(
    client: u64,
    bridge: &mut Bridge,
    owners: &mut BTreeMap<(PortId, u16), (u64, bool)>,
    waiting: &mut Vec<Waiting>,
) {
    waiting.retain(|w| w.client != client);
    let subs: Vec<(PortId, u16)> = owners
        .iter()
        .filter(|(_, (c, keep))| *c == client && !keep)
        .map(|(k, _)| *k)
        .collect();
    for (port, session) in subs {
        owners.remove(&(port, session));
        if bridge.close(port, session).is_ok() {
            tracing::info!(
                port = port.0,
                session,
                "sub-connection closed: its client went away"
            );
        }
    }
}

struct Context<'a> {
    client: u64,
    id: RequestId,
    now: Instant,
    config: &'a RetherBridgeConfig,
    started: Instant,
}

fn answer(
    request: Request,
    cx: &Context<'_>,
    bridge: &mut Bridge,
    owners: &mut BTreeMap<(PortId, u16), (u64, bool)>,
    waiting: &mut Vec<Waiting>,
    history: &VecDeque<Happened>,
) -> Option<Result<Value, MgmtError>> {
    let result = match request {
        Request::Ping => Ok(json!("pong")),
        Request::Stats => Ok(stats(bridge, cx.config)),
        Request::Status => Ok(status(bridge, cx.config, history, cx.started, cx.now)),
        Request::Sessions => Ok(json!(bridge.sessions())),
        Request::Fdb => Ok(Value::Array(
            bridge
                .table(cx.now)
                .into_iter()
                .map(|(mac, port, age)| {
                    json!({"mac": mac.to_string(), "port": port.0, "age_ns": nanos(age)})
                })
                .collect(),
        )),
        Request::Open {
            port,
            rate,
            bytes_per_trt,
            max_frame,
            flow,
            keep,
        } => (|| {
            let port = port_arg(cx.config, &port)?;
            let bytes = match (rate, bytes_per_trt) {
                (Some(r), None) => {
                    let bps = rtlan_core::units::parse_rate(&r)
                        .map_err(|e| MgmtError::bad_request(format!("rate: {e}")))?;
                    bridge
                        .bytes_per_trt(port, bps)
                        .ok_or_else(|| bridge_error(BridgeError::NoPort(port.0)))?
                }
                (None, Some(b)) => b,
                _ => {
                    return Err(MgmtError::bad_request(
                        "give exactly one of `rate` and `bytes_per_trt`",
                    ))
                }
            };
            let spec = SubSpec {
                bytes_per_trt: bytes,
                max_frame: max_frame.unwrap_or(MAX_FRAME),
                flow: flow.key()?,
            };
            let session = bridge.open(port, spec).map_err(bridge_error)?;
            owners.insert((port, session), (cx.client, keep));
            Ok(json!({"port": port.0, "session": session, "bytes_per_trt": bytes}))
        })(),
        Request::Admit {
            port,
            session,
            wait,
            timeout_ms,
        } => (|| {
            let port = port_arg(cx.config, &port)?;
            bridge.admit(cx.now, port, session).map_err(bridge_error)?;
            Ok(port)
        })()
        .and_then(|port| {
            if !wait {
                return Ok(Some(
                    json!({"port": port.0, "session": session, "state": "admitting"}),
                ));
            }
            if waiting.len() >= MAX_WAITING {
                return Err(MgmtError::new(
                    "busy",
                    format!("{MAX_WAITING} requests are waiting already"),
                ));
            }
            waiting.push(Waiting {
                client: cx.client,
                id: cx.id,
                until: cx.now + wait_for(timeout_ms),
                port,
                session,
            });
            Ok(None)
        })
        .transpose()?,
        Request::Close { port, session } => (|| {
            let port = port_arg(cx.config, &port)?;
            bridge.close(port, session).map_err(bridge_error)?;
            owners.remove(&(port, session));
            Ok(json!(null))
        })(),
    };
    Some(result)
}

fn station_name(i: usize, config: &RetherBridgeConfig) -> (&str, u16) {
    config
        .ports
        .get(i)
        .map_or(("?", 0), |p| (p.ifname.as_str(), p.station.id.get()))
}

/// `stats`: the bridge's counters and each port's station's.
fn stats(bridge: &Bridge, config: &RetherBridgeConfig) -> Value {
    let ports: Vec<Value> = (0..config.ports.len())
        .filter_map(|i| {
            let station = bridge.station(PortId(i as u16))?;
            let (ifname, id) = station_name(i, config);
            Some(json!({
                "port": i,
                "ifname": ifname,
                "id": id,
                "mode": format!("{:?}", station.mode()).to_lowercase(),
                "station": station.stats(),
                "nrt_queued": station.nrt_queued(),
            }))
        })
        .collect();
    json!({"bridge": bridge.stats(), "ports": ports})
}

/// `status`: each segment as the bridge's station there sees it.
fn status(
    bridge: &Bridge,
    config: &RetherBridgeConfig,
    history: &VecDeque<Happened>,
    started: Instant,
    now: Instant,
) -> Value {
    let ports: Vec<Value> = (0..config.ports.len())
        .filter_map(|i| {
            let station = bridge.station(PortId(i as u16))?;
            let (ifname, id) = station_name(i, config);
            let c = station.config();
            Some(json!({
                "port": i,
                "ifname": ifname,
                "id": id,
                "mac": c.mac.to_string(),
                "rate_bps": c.rate_bps,
                "trt_ns": nanos(c.trt),
                "mode": format!("{:?}", station.mode()).to_lowercase(),
                "generation": station.generation(),
                "heard": station.stations().iter().map(|n| n.get()).collect::<Vec<_>>(),
                "token": token_json(station),
            }))
        })
        .collect();
    json!({
        "name": config.name,
        "ports": ports,
        "sessions": bridge.sessions(),
        "uptime_ns": nanos(now.saturating_duration_since(started)),
        "history": history,
    })
}

/// Answers the waiting admissions whose answer came or whose wait is over.
fn serve_waiting(
    server: &mut MgmtServer,
    epoll: &crate::driver::Epoll,
    bridge: &Bridge,
    waiting: &mut Vec<Waiting>,
    out: &mut Vec<MgmtEvent>,
    now: Instant,
) {
    if waiting.is_empty() {
        return;
    }
    let subs = bridge.sessions();
    let mut i = 0;
    while i < waiting.len() {
        let w = &waiting[i];
        let (port, session) = (w.port, w.session);
        let sub = subs
            .iter()
            .find(|s| s.port == port.0 && s.session == session);
        let outcome: Option<Result<Value, MgmtError>> = match sub {
            None => Some(Err(MgmtError::new(
                "no_session",
                format!("session {session} on port {} was closed", port.0),
            ))),
            Some(s) if s.state == SessionState::Admitted => Some(Ok(json!({
                "port": port.0,
                "session": session,
                "state": "admitted",
                "tht_ns": s.tht_ns,
                "bytes_per_trt": s.bytes_per_trt,
            }))),
            Some(s) if s.state == SessionState::Refused => Some(Err(MgmtError::new(
                "refused",
                format!(
                    "session {session} on port {} was refused by the admission test (eq. 3) or the RT-set is full",
                    port.0
                ),
            ))),
            Some(_) => None,
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

    const FLOW: &str =
        r#"{"protocol":"udp","src":"198.18.0.1","dst":"198.18.0.4","dst_port":9000}"#;

    #[test]
    fn every_documented_op_parses_and_mistakes_do_not() {
        for line in [
            r#"{"op":"ping"}"#.to_string(),
            r#"{"op":"stats"}"#.to_string(),
            r#"{"op":"status"}"#.to_string(),
            r#"{"op":"sessions"}"#.to_string(),
            r#"{"op":"fdb"}"#.to_string(),
            format!(r#"{{"op":"open","port":1,"rate":"2mbit","max_frame":1100,"flow":{FLOW}}}"#),
            format!(
                r#"{{"op":"open","port":"p1","bytes_per_trt":5000,"keep":true,"flow":{FLOW}}}"#
            ),
            r#"{"op":"admit","port":1,"session":1}"#.to_string(),
            r#"{"op":"admit","port":"p0","session":1,"wait":false,"timeout_ms":100}"#.to_string(),
            r#"{"op":"close","port":1,"session":1}"#.to_string(),
        ] {
            assert!(parse(&line).is_ok(), "{line}: {:?}", parse(&line));
        }
        for line in [
            r#"{"op":"open","port":1,"rate":"2mbit"}"#,
            r#"{"op":"admit","session":1}"#,
            r#"{"op":"close","port":1}"#,
            r#"{"op":"send","session":1,"data":""}"#,
        ] {
            assert!(parse(line).is_err(), "{line}");
        }
    }

    #[test]
    fn ports_are_named_by_index_or_interface() {
        let config = RetherBridgeConfig::from_toml_str(
            "rate = \"10mbit\"\n[[port]]\nifname = \"p0\"\nid = 4\n[[port]]\nifname = \"p1\"\nid = 4\n",
        )
        .expect("valid");
        assert_eq!(port_arg(&config, &json!(1)).unwrap(), PortId(1));
        assert_eq!(port_arg(&config, &json!("p0")).unwrap(), PortId(0));
        for bad in [json!(2), json!("p2"), json!(-1), json!(null)] {
            let e = port_arg(&config, &bad).unwrap_err();
            assert_eq!(e.code, "no_port", "{bad}");
            assert!(e.message.contains("p0, p1"), "{}", e.message);
        }
    }
}
