//! Scenario files: a topology file (the one model of `rtlan-topology`: `[[host]]`, `[[switch]]`,
//! `[[link]]`) plus the simulator's own tables — `[sim]` (duration, seed, measuring window,
//! link delays, host and switch sizes), `[[traffic]]` (sources and their reservations) and
//! `[[sessions]]` (RSVP sessions without data, [`crate::sessions`]) — and
//! optionally `[generate]`, which appends a generated leaf–spine topology and traffic (see
//! [`crate::generate`]). The format is `docs/sim.md`.
//!
//! Every mistake is reported as `file:line:column: message` ([`rtlan_topology::Location`]).

use std::time::Duration;

use rtlan_core::shaper::{wire_bytes, DEFAULT_MAX_DATAGRAM, UDP_FRAME_OVERHEAD};
use rtlan_topology::units::{parse_duration, parse_rate, parse_size};
use rtlan_topology::{Location, Topology, TopologyError};
use serde::Deserialize;
use toml::Spanned;

use crate::generate::{self, LeafSpine};
use crate::sessions::{sessions_spec, RawSessions, SessionsSpec};
use crate::traffic::PAYLOAD_HEADER_LEN;

/// Tables of a scenario file that the topology reader leaves to the simulator.
pub const SIM_TABLES: &[&str] = &["sim", "traffic", "sessions", "generate", "fault"];

/// A scenario that cannot be used; the message starts with `file:line:column:` where the
/// problem is inside the file.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Read {
        /// The path as given.
        path: String,
        /// The operating-system error.
        source: std::io::Error,
    },
    /// The topology part is not valid.
    #[error(transparent)]
    Topology(#[from] TopologyError),
    /// A value of the simulator's tables is missing, of the wrong type or not allowed.
    #[error("{at}: {message}")]
    Invalid {
        /// Where.
        at: Location,
        /// What is wrong.
        message: String,
    },
}

/// Simulation-wide options (`[sim]`).
#[derive(Debug, Clone, PartialEq)]
pub struct SimOptions {
    /// Sources stop at this instant (unless their own `stop` is earlier).
    pub duration: Duration,
    /// Start of the measuring window (rates and delays count from here to `duration`).
    pub warmup: Duration,
    /// Extra time simulated after `duration` so that frames in flight arrive; what is still
    /// queued afterwards counts as lost.
    pub drain: Duration,
    /// Seed of every random choice (sources derive their own streams from it).
    pub seed: u64,
    /// Transmit queue of a host's NIC, frames (Linux `txqueuelen`).
    pub txqueuelen: usize,
    /// Size of each switch's connection table ([`rtlan_core::switch::RtConfig::max_connections`]);
    /// by default the number of reserved flows plus 16, at least 64.
    pub max_connections: usize,
    /// Frames a switch holds while it probes their destination.
    pub pending_capacity: usize,
    /// Hosts announce themselves with a gratuitous ARP request in the first `announce` of the
    /// run (evenly spread); `None` = they do not.
    pub announce: Option<Duration>,
    /// Each switch's scheduler cost per connection per cycle, for the CPU admission check
    /// ([`rtlan_core::switch::RtConfig::cpu_cost_per_connection`]).
    pub cpu_cost_per_connection: Duration,
    /// RSVP's refresh period R in routers and hosts (RFC 2205's 30 s unless set).
    pub rsvp_refresh: Duration,
    /// Routers send RSVP on each port's control queue, ahead of data (QSR §6.2, default); with
    /// `false`, in the default queue with the data, as before the paper's fix.
    pub rsvp_protected: bool,
    /// Each router port's Guaranteed-Service buffer, bytes (`rtlan router`'s `[rsvp]
    /// gs_buffer`; every Guaranteed reservation takes b + 2M and its lateness allowance).
    pub rsvp_gs_buffer: usize,
    /// The service receiving hosts reserve under RSVP: Guaranteed at the sender's token rate
    /// (default) or Controlled Load (`rsvp_service = "controlled-load"`, QSR §6.2's video).
    pub rsvp_service: rtlan_core::rtcd::RsvpService,
}

/// What a source sends (`kind` of `[[traffic]]`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SourceKind {
    /// One datagram every `wire bits / rate`.
    Constant,
    /// Constant rate during on periods, silent during off periods; period lengths are
    /// exponentially distributed with these means.
    OnOff {
        /// Mean on period.
        on: Duration,
        /// Mean off period.
        off: Duration,
    },
    /// Exponential gaps with mean `wire bits / rate`.
    Poisson,
    /// A window-based AIMD sender with acknowledgements from the sink (TCP-like).
    Greedy,
    /// `frames` datagrams at the same instant every `frames × wire bits / rate` (the mean rate
    /// is `rate`), on a grid of simulated time: bursts at `phase + k·period`, the first at or
    /// after the source starts (or its reservation is granted). Sources with the same period
    /// and phase release their bursts together — the aligned "symmetric bursts" adversary of
    /// Löser/Härtig §4.1.
    Burst {
        /// Datagrams per burst (≥ 1).
        frames: u32,
        /// Offset of the burst grid from time zero (below one period).
        phase: Duration,
    },
}

impl SourceKind {
    /// The name used in scenario files and results.
    pub fn name(self) -> &'static str {
        match self {
            SourceKind::Constant => "constant",
            SourceKind::OnOff { .. } => "onoff",
            SourceKind::Poisson => "poisson",
            SourceKind::Greedy => "greedy",
            SourceKind::Burst { .. } => "burst",
        }
    }
}

/// A reservation, as `rtlan reserve` takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReserveSpec {
    /// Reserved rate, wire bit/s of whole frames.
    pub rate_bps: u64,
    /// Largest burst, bytes.
    pub burst: u32,
    /// Largest frame, bytes, Ethernet header included.
    pub max_packet: u16,
    /// End-to-end delay the reservation requires (`delay = "3ms"`): a switch whose bound would
    /// exceed it refuses (docs/protocol.md §6).
    pub delay: Option<std::time::Duration>,
}

/// A token bucket the source's datagrams go through (whole frames on the wire, as a
/// reservation counts them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShapeSpec {
    /// Token rate, wire bit/s.
    pub rate_bps: u64,
    /// Bucket depth, wire bytes.
    pub burst_bytes: u64,
}

/// One traffic source and its sink (`[[traffic]]`).
#[derive(Debug, Clone, PartialEq)]
pub struct TrafficSpec {
    /// Name in results.
    pub name: String,
    /// Index of the sending host in the topology.
    pub src: usize,
    /// Index of the receiving host.
    pub dst: usize,
    /// What it sends.
    pub kind: SourceKind,
    /// Offered rate, wire bit/s of whole frames (greedy: unused, 0).
    pub rate_bps: u64,
    /// UDP payload bytes per datagram.
    pub size: usize,
    /// Receiver's UDP port.
    pub dst_port: u16,
    /// Sender's UDP port.
    pub src_port: u16,
    /// When the source starts (a reservation is requested then; data follows its grant).
    pub start: Duration,
    /// When it stops.
    pub stop: Duration,
    /// Reservation through the host daemon, if any.
    pub reserve: Option<ReserveSpec>,
    /// Token-bucket shaping of a plain flow (a reserved flow is shaped to its reservation).
    pub shape: Option<ShapeSpec>,
}

/// A whole scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// Name the scenario was read from.
    pub origin: String,
    /// The network.
    pub topology: Topology,
    /// `[sim]`.
    pub sim: SimOptions,
    /// Propagation delay of each topology link, in link order.
    pub link_delays: Vec<Duration>,
    /// `[[traffic]]`, then generated traffic.
    pub traffic: Vec<TrafficSpec>,
    /// `[[fault]]`, in file order.
    pub faults: Vec<FaultSpec>,
    /// `[[sessions]]`, in file order.
    pub sessions: Vec<SessionsSpec>,
}

/// A fault injected during the run (`[[fault]]`; issue 12: recovery measured in the simulator).
#[derive(Debug, Clone, PartialEq)]
pub struct FaultSpec {
    /// When it happens, from the start of the run.
    pub at: Duration,
    /// What happens.
    pub kind: FaultKind,
}

/// What a [`FaultSpec`] does.
#[derive(Debug, Clone, PartialEq)]
pub enum FaultKind {
    /// Switch `switch` (index into the topology's switches) crashes: it loses every state,
    /// receives and sends nothing for `down_for`, then starts again with a new boot epoch (its
    /// links keep their carrier, as when a switch process is killed and restarted).
    Restart {
        /// The switch.
        switch: usize,
        /// How long it is gone.
        down_for: Duration,
    },
    /// Router `router` (index into the topology's routers) crashes: it loses its neighbours,
    /// queues and counters, receives and sends nothing for `down_for`, then starts again from
    /// its configuration (its links keep their carrier).
    RestartRouter {
        /// The router.
        router: usize,
        /// How long it is gone.
        down_for: Duration,
    },
    /// Link `link` (index into the topology's links) loses its carrier at both ends; it comes
    /// back after `down_for` (never when `None`).
    LinkDown {
        /// The link.
        link: usize,
        /// How long it is down.
        down_for: Option<Duration>,
    },
}

#[derive(Deserialize, Default)]
struct RawFile {
    sim: Option<Spanned<RawSim>>,
    traffic: Option<Vec<Spanned<RawTraffic>>>,
    sessions: Option<Vec<Spanned<RawSessions>>>,
    link: Option<Vec<Spanned<toml::Table>>>,
    generate: Option<Spanned<generate::RawGenerate>>,
    fault: Option<Vec<Spanned<RawFault>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFault {
    at: Spanned<String>,
    kind: Spanned<String>,
    switch: Option<Spanned<String>>,
    router: Option<Spanned<String>>,
    ends: Option<Spanned<Vec<String>>>,
    down_for: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSim {
    duration: Spanned<String>,
    warmup: Option<Spanned<String>>,
    drain: Option<Spanned<String>>,
    seed: Option<u64>,
    link_delay: Option<Spanned<String>>,
    txqueuelen: Option<Spanned<usize>>,
    max_connections: Option<Spanned<usize>>,
    pending_capacity: Option<Spanned<usize>>,
    announce: Option<Spanned<String>>,
    cpu_cost_per_connection: Option<Spanned<String>>,
    rsvp_refresh: Option<Spanned<String>>,
    rsvp_protected: Option<bool>,
    rsvp_gs_buffer: Option<Spanned<String>>,
    rsvp_service: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTraffic {
    name: Option<String>,
    src: Spanned<String>,
    dst: Spanned<String>,
    kind: Spanned<String>,
    rate: Option<Spanned<String>>,
    size: Option<Spanned<u64>>,
    port: Option<Spanned<u16>>,
    src_port: Option<Spanned<u16>>,
    start: Option<Spanned<String>>,
    stop: Option<Spanned<String>>,
    on: Option<Spanned<String>>,
    off: Option<Spanned<String>>,
    frames: Option<Spanned<u32>>,
    phase: Option<Spanned<String>>,
    reserve: Option<Spanned<RawReserve>>,
    shape: Option<Spanned<RawShape>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawReserve {
    rate: Spanned<String>,
    burst: Option<Spanned<u32>>,
    max_packet: Option<Spanned<u16>>,
    delay: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawShape {
    rate: Spanned<String>,
    burst: Spanned<u64>,
}

/// Default propagation delay of a link (about 200 m of cable).
pub const DEFAULT_LINK_DELAY: Duration = Duration::from_micros(1);

/// Default host transmit queue, frames (Linux's default `txqueuelen`).
pub const DEFAULT_TXQUEUELEN: usize = 1000;

/// Default span over which hosts announce themselves.
pub const DEFAULT_ANNOUNCE: Duration = Duration::from_millis(1);

/// Default extra simulated time after `duration`.
pub const DEFAULT_DRAIN: Duration = Duration::from_millis(200);

/// Default first UDP port of flows without `port` (flow `i` gets `5000 + i`).
pub const FIRST_PORT: u16 = 5000;

/// Reads `text` as context for error locations.
pub(crate) struct Source<'a> {
    pub(crate) text: &'a str,
    pub(crate) origin: &'a str,
}

impl Source<'_> {
    pub(crate) fn invalid(&self, offset: usize, message: impl Into<String>) -> ScenarioError {
        ScenarioError::Invalid {
            at: Location::of(self.text, self.origin, offset),
            message: message.into(),
        }
    }

    pub(crate) fn duration(
        &self,
        value: &Spanned<String>,
        what: &str,
    ) -> Result<Duration, ScenarioError> {
        parse_duration(value.get_ref())
            .map_err(|e| self.invalid(value.span().start, format!("bad `{what}`: {e}")))
    }

    fn opt_duration(
        &self,
        value: Option<&Spanned<String>>,
        what: &str,
        default: Duration,
    ) -> Result<Duration, ScenarioError> {
        value.map_or(Ok(default), |v| self.duration(v, what))
    }

    pub(crate) fn rate(&self, value: &Spanned<String>, what: &str) -> Result<u64, ScenarioError> {
        parse_rate(value.get_ref())
            .map_err(|e| self.invalid(value.span().start, format!("bad `{what}`: {e}")))
    }
}

impl Scenario {
    /// Reads and validates a scenario file; messages start with the path as given.
    pub fn from_file(path: impl AsRef<std::path::Path>) -> Result<Scenario, ScenarioError> {
        let path = path.as_ref();
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ScenarioError::Read {
            path: origin.clone(),
            source,
        })?;
        Scenario::from_str(&text, &origin)
    }

    /// Validates scenario `text`; `origin` names it in messages.
    #[allow(clippy::should_implement_trait)] // takes an origin name, unlike FromStr
    pub fn from_str(text: &str, origin: &str) -> Result<Scenario, ScenarioError> {
        let src = Source { text, origin };
        let raw: RawFile = toml::from_str(text).map_err(|e| {
            let offset = e.span().map_or(0, |s| s.start);
            src.invalid(offset, e.message().to_string())
        })?;
        let generated = match &raw.generate {
            Some(g) => Some(LeafSpine::from_raw(&src, g)?),
            None => None,
        };
        // A generated network is appended after the file's own text, so locations inside the
        // file stay right.
        let full;
        let topo_text = match &generated {
            Some(g) => {
                full = format!("{text}\n{}", g.topology_text());
                full.as_str()
            }
            None => text,
        };
        let topology = Topology::from_str_with(topo_text, origin, SIM_TABLES)?;
        let Some(raw_sim) = &raw.sim else {
            return Err(src.invalid(0, "a scenario needs a [sim] table with at least `duration`"));
        };
        let sim_span = raw_sim.span().start;
        let raw_sim = raw_sim.get_ref();
        let duration = src.duration(&raw_sim.duration, "duration")?;
        if duration.is_zero() {
            return Err(src.invalid(raw_sim.duration.span().start, "`duration` must be above 0"));
        }
        let warmup = src.opt_duration(raw_sim.warmup.as_ref(), "warmup", Duration::ZERO)?;
        if warmup >= duration {
            let at = raw_sim.warmup.as_ref().map_or(sim_span, |w| w.span().start);
            return Err(src.invalid(at, "`warmup` must be shorter than `duration`"));
        }
        let drain = src.opt_duration(raw_sim.drain.as_ref(), "drain", DEFAULT_DRAIN)?;
        let default_delay = src.opt_duration(
            raw_sim.link_delay.as_ref(),
            "link_delay",
            DEFAULT_LINK_DELAY,
        )?;
        let txqueuelen = match &raw_sim.txqueuelen {
            Some(q) if *q.get_ref() == 0 || *q.get_ref() > 1_000_000 => {
                return Err(src.invalid(q.span().start, "`txqueuelen` must be 1 ..= 1000000"));
            }
            Some(q) => *q.get_ref(),
            None => DEFAULT_TXQUEUELEN,
        };
        let pending_capacity = match &raw_sim.pending_capacity {
            Some(p) if *p.get_ref() > rtlan_core::switch::MAX_PENDING_CAPACITY => {
                return Err(src.invalid(p.span().start, "`pending_capacity` is too large"));
            }
            Some(p) => *p.get_ref(),
            None => 256,
        };

        let announce = match &raw_sim.announce {
            Some(a) if a.get_ref() == "off" => None,
            Some(a) => Some(src.duration(a, "announce")?),
            None => Some(DEFAULT_ANNOUNCE),
        };
        let cpu_cost_per_connection = src.opt_duration(
            raw_sim.cpu_cost_per_connection.as_ref(),
            "cpu_cost_per_connection",
            rtlan_core::switch::rt::DEFAULT_CPU_COST_PER_CONNECTION,
        )?;
        let rsvp_service = match raw_sim.rsvp_service.as_ref() {
            None => rtlan_core::rtcd::RsvpService::Guaranteed,
            Some(v) => match v.get_ref().as_str() {
                "guaranteed" => rtlan_core::rtcd::RsvpService::Guaranteed,
                "controlled-load" => rtlan_core::rtcd::RsvpService::ControlledLoad,
                _ => {
                    return Err(src.invalid(
                        v.span().start,
                        "`rsvp_service` must be \"guaranteed\" or \"controlled-load\"",
                    ))
                }
            },
        };
        let rsvp_refresh = src.opt_duration(
            raw_sim.rsvp_refresh.as_ref(),
            "rsvp_refresh",
            crate::build::RSVP_REFRESH,
        )?;
        if rsvp_refresh.is_zero() || rsvp_refresh.as_millis() > u128::from(u32::MAX) {
            let at = raw_sim.rsvp_refresh.as_ref().map_or(0, |v| v.span().start);
            return Err(src.invalid(at, "bad `rsvp_refresh`: between 1 ms and 49 days"));
        }

        let rsvp_gs_buffer = match &raw_sim.rsvp_gs_buffer {
            Some(v) => parse_size(v.get_ref())
                .ok()
                .and_then(|b| usize::try_from(b).ok())
                .filter(|&b| b > 0 && b <= 1 << 40)
                .ok_or_else(|| {
                    src.invalid(
                        v.span().start,
                        "bad `rsvp_gs_buffer`: a size such as \"256KiB\" (1 B ..= 1 TiB)",
                    )
                })?,
            None => rtlan_core::router::RsvpSettings::default().gs_buffer_bytes,
        };

        // Links: a rate is required; the propagation delay is the model's `[[link]] delay` where
        // written, else `[sim] link_delay`.
        let raw_links = raw.link.as_deref().unwrap_or(&[]);
        let mut link_delays = Vec::with_capacity(topology.links.len());
        for (index, link) in topology.links.iter().enumerate() {
            let raw_link = raw_links.get(index);
            if link.rate_bps.is_none() {
                let at = raw_link.map_or(0, |l| l.span().start);
                return Err(src.invalid(at, "the simulator needs a `rate` on every link"));
            }
            let written = raw_link.is_some_and(|l| l.get_ref().contains_key("delay"));
            link_delays.push(if written { link.delay } else { default_delay });
        }

        let mut traffic = Vec::new();
        for (index, t) in raw.traffic.as_deref().unwrap_or(&[]).iter().enumerate() {
            traffic.push(traffic_spec(&src, &topology, index, t, duration)?);
        }
        if let Some(g) = &generated {
            traffic.extend(g.traffic(&topology, duration, raw_sim.seed.unwrap_or(1)));
        }
        let reserved = traffic.iter().filter(|t| t.reserve.is_some()).count();
        let max_connections = match &raw_sim.max_connections {
            Some(m) if *m.get_ref() == 0 || *m.get_ref() > 1 << 20 => {
                return Err(src.invalid(m.span().start, "`max_connections` must be 1 ..= 1048576"));
            }
            Some(m) => *m.get_ref(),
            None => (reserved + 16).max(64),
        };
        let mut sessions = Vec::new();
        for t in raw.sessions.as_deref().unwrap_or(&[]) {
            let spec = sessions_spec(&src, &topology, t, duration, &traffic, &sessions)?;
            sessions.push(spec);
        }
        let mut faults = Vec::new();
        for f in raw.fault.as_deref().unwrap_or(&[]) {
            faults.push(fault_spec(&src, &topology, f, duration)?);
        }
        Ok(Scenario {
            origin: origin.to_string(),
            faults,
            topology,
            sim: SimOptions {
                duration,
                warmup,
                drain,
                seed: raw_sim.seed.unwrap_or(1),
                txqueuelen,
                max_connections,
                pending_capacity,
                announce,
                cpu_cost_per_connection,
                rsvp_refresh,
                rsvp_protected: raw_sim.rsvp_protected.unwrap_or(true),
                rsvp_gs_buffer,
                rsvp_service,
            },
            link_delays,
            traffic,
            sessions,
        })
    }
}

/// Reads one `[[fault]]`.
fn fault_spec(
    src: &Source<'_>,
    topology: &Topology,
    raw: &Spanned<RawFault>,
    duration: Duration,
) -> Result<FaultSpec, ScenarioError> {
    let table = raw.span().start;
    let raw = raw.get_ref();
    let at = src.duration(&raw.at, "at")?;
    if at >= duration {
        return Err(src.invalid(raw.at.span().start, "`at` must be inside `duration`"));
    }
    let down_for = match &raw.down_for {
        Some(d) => Some(src.duration(d, "down_for")?),
        None => None,
    };
    let kind = match raw.kind.get_ref().as_str() {
        "restart" => {
            if raw.ends.is_some() {
                return Err(src.invalid(
                    table,
                    "a `restart` fault takes `switch` or `router`, not `ends`",
                ));
            }
            let down_for = down_for.unwrap_or(Duration::ZERO);
            match (&raw.switch, &raw.router) {
                (Some(name), None) => {
                    let Some(switch) = topology
                        .switches
                        .iter()
                        .position(|s| &s.name == name.get_ref())
                    else {
                        let hint = if topology.router(name.get_ref()).is_some() {
                            format!(" (`{}` is a router: `router = ...`)", name.get_ref())
                        } else {
                            String::new()
                        };
                        return Err(src.invalid(
                            name.span().start,
                            format!("no switch `{}`{hint}", name.get_ref()),
                        ));
                    };
                    FaultKind::Restart { switch, down_for }
                }
                (None, Some(name)) => {
                    let Some(router) = topology
                        .routers
                        .iter()
                        .position(|r| &r.name == name.get_ref())
                    else {
                        return Err(src.invalid(
                            name.span().start,
                            format!("no router `{}`", name.get_ref()),
                        ));
                    };
                    FaultKind::RestartRouter { router, down_for }
                }
                _ => {
                    return Err(src.invalid(
                        table,
                        "a `restart` fault needs `switch` or `router` (one of them)",
                    ));
                }
            }
        }
        "link_down" => {
            let Some(ends) = &raw.ends else {
                return Err(src.invalid(table, "a `link_down` fault needs `ends`"));
            };
            if raw.switch.is_some() || raw.router.is_some() {
                return Err(src.invalid(
                    table,
                    "a `link_down` fault takes `ends`, not `switch` or `router`",
                ));
            }
            let names = ends.get_ref();
            let link = topology.links.iter().position(|l| {
                let [a, b] = &l.ends;
                names.len() == 2
                    && ((a.node == names[0] && b.node == names[1])
                        || (a.node == names[1] && b.node == names[0]))
            });
            let Some(link) = link else {
                return Err(src.invalid(ends.span().start, format!("no link between {names:?}")));
            };
            FaultKind::LinkDown { link, down_for }
        }
        other => {
            return Err(src.invalid(
                raw.kind.span().start,
                format!("unknown fault kind `{other}`, expected `restart` or `link_down`"),
            ));
        }
    };
    Ok(FaultSpec { at, kind })
}

/// The period of a burst source: `frames` datagrams of `size` payload bytes at a mean of
/// `rate_bps` wire bit/s, rounded down to the nanosecond (the schedule itself is exact, see
/// `traffic::Source`).
pub fn burst_period(frames: u32, size: usize, rate_bps: u64) -> Duration {
    let bits = u128::from(frames) * u128::from(wire_bytes(size)) * 8;
    let ns = bits * 1_000_000_000 / u128::from(rate_bps.max(1));
    Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
}

/// Largest UDP payload a source may send: one 1500-byte MTU.
pub const MAX_SIZE: usize = DEFAULT_MAX_DATAGRAM;

/// Reads a `reserve = { … }` for datagrams of `size` payload bytes.
pub(crate) fn reserve_spec(
    src: &Source<'_>,
    r: &RawReserve,
    size: usize,
) -> Result<ReserveSpec, ScenarioError> {
    let rate_bps = src.rate(&r.rate, "reserve.rate")?;
    let frame = size + UDP_FRAME_OVERHEAD;
    let max_packet = match &r.max_packet {
        Some(m) if usize::from(*m.get_ref()) < frame => {
            return Err(src.invalid(
                m.span().start,
                format!("`max_packet` is below this flow's {frame}-byte frames"),
            ));
        }
        Some(m) => *m.get_ref(),
        None => u16::try_from(frame).unwrap_or(u16::MAX),
    };
    let burst = match &r.burst {
        Some(b) if *b.get_ref() < u32::from(max_packet) => {
            return Err(src.invalid(b.span().start, "`burst` must be at least `max_packet`"));
        }
        Some(b) => *b.get_ref(),
        None => 2 * u32::from(max_packet),
    };
    let delay = r
        .delay
        .as_ref()
        .map(|d| src.duration(d, "reserve.delay"))
        .transpose()?;
    Ok(ReserveSpec {
        rate_bps,
        burst,
        max_packet,
        delay,
    })
}

/// Reads `size` (UDP payload bytes, 40 ..= 1472; default 1472).
pub(crate) fn payload_size(
    src: &Source<'_>,
    size: Option<&Spanned<u64>>,
) -> Result<usize, ScenarioError> {
    match size {
        Some(s) => {
            let v = *s.get_ref();
            if v < PAYLOAD_HEADER_LEN as u64 || v > MAX_SIZE as u64 {
                return Err(src.invalid(
                    s.span().start,
                    format!(
                        "`size` (UDP payload bytes) must be {PAYLOAD_HEADER_LEN} ..= {MAX_SIZE}"
                    ),
                ));
            }
            Ok(v as usize)
        }
        None => Ok(MAX_SIZE),
    }
}

fn traffic_spec(
    src: &Source<'_>,
    topology: &Topology,
    index: usize,
    raw: &Spanned<RawTraffic>,
    duration: Duration,
) -> Result<TrafficSpec, ScenarioError> {
    let at = raw.span().start;
    let t = raw.get_ref();
    let host = |name: &Spanned<String>| {
        topology
            .hosts
            .iter()
            .position(|h| &h.name == name.get_ref())
            .ok_or_else(|| {
                src.invalid(
                    name.span().start,
                    format!("`{}` is not a host", name.get_ref()),
                )
            })
    };
    let s = host(&t.src)?;
    let d = host(&t.dst)?;
    if s == d {
        return Err(src.invalid(t.dst.span().start, "a flow needs two different hosts"));
    }
    let kind = match t.kind.get_ref().as_str() {
        "constant" => SourceKind::Constant,
        "poisson" => SourceKind::Poisson,
        "greedy" => SourceKind::Greedy,
        "onoff" => {
            let need = |v: &Option<Spanned<String>>, what: &str| match v {
                Some(v) => src.duration(v, what),
                None => Err(src.invalid(at, format!("an onoff source needs `{what}`"))),
            };
            let on = need(&t.on, "on")?;
            let off = need(&t.off, "off")?;
            if on.is_zero() {
                return Err(src.invalid(at, "`on` must be above 0"));
            }
            SourceKind::OnOff { on, off }
        }
        "burst" => {
            let Some(frames) = &t.frames else {
                return Err(src.invalid(at, "a burst source needs `frames`"));
            };
            if *frames.get_ref() == 0 {
                return Err(src.invalid(frames.span().start, "`frames` must be above 0"));
            }
            let phase = t
                .phase
                .as_ref()
                .map_or(Ok(Duration::ZERO), |p| src.duration(p, "phase"))?;
            SourceKind::Burst {
                frames: *frames.get_ref(),
                phase,
            }
        }
        other => {
            return Err(src.invalid(
                t.kind.span().start,
                format!(
                    "unknown kind `{other}` (expected constant, onoff, poisson, greedy or burst)"
                ),
            ))
        }
    };
    if !matches!(kind, SourceKind::Burst { .. }) {
        if let Some(f) = t.frames.as_ref() {
            return Err(src.invalid(f.span().start, "`frames` is for burst sources"));
        }
        if let Some(p) = t.phase.as_ref() {
            return Err(src.invalid(p.span().start, "`phase` is for burst sources"));
        }
    }
    let rate_bps = match (&t.rate, kind) {
        (Some(r), SourceKind::Greedy) => {
            return Err(src.invalid(r.span().start, "a greedy source takes no `rate`"));
        }
        (None, SourceKind::Greedy) => 0,
        (Some(r), _) => src.rate(r, "rate")?,
        (None, _) => return Err(src.invalid(at, "this source needs a `rate`")),
    };
    let size = payload_size(src, t.size.as_ref())?;
    if let SourceKind::Burst { frames, phase } = kind {
        let period = burst_period(frames, size, rate_bps);
        if rate_bps == 0 || phase >= period {
            let at = t.phase.as_ref().map_or(at, |p| p.span().start);
            return Err(src.invalid(
                at,
                format!("`phase` must be below the burst period ({period:?}: `frames` × wire bits / `rate`)"),
            ));
        }
    }
    let first = FIRST_PORT.saturating_add(u16::try_from(index).unwrap_or(u16::MAX - FIRST_PORT));
    let dst_port = match &t.port {
        Some(p) if *p.get_ref() == 0 => {
            return Err(src.invalid(p.span().start, "`port` must be above 0"))
        }
        Some(p) => *p.get_ref(),
        None => first,
    };
    let src_port = t.src_port.as_ref().map_or(first, |p| *p.get_ref());
    let start = t
        .start
        .as_ref()
        .map_or(Ok(Duration::ZERO), |v| src.duration(v, "start"))?;
    let stop = t
        .stop
        .as_ref()
        .map_or(Ok(duration), |v| src.duration(v, "stop"))?;
    if stop <= start {
        return Err(src.invalid(at, "`stop` must be after `start`"));
    }
    let reserve = match &t.reserve {
        None => None,
        Some(r) => {
            if kind == SourceKind::Greedy {
                return Err(src.invalid(r.span().start, "a greedy source cannot reserve"));
            }
            Some(reserve_spec(src, r.get_ref(), size)?)
        }
    };
    let shape = match &t.shape {
        None => None,
        Some(s) => {
            if reserve.is_some() || kind == SourceKind::Greedy {
                return Err(src.invalid(
                    s.span().start,
                    "`shape` is for plain constant, onoff or poisson sources (a reserved flow is shaped to its reservation)",
                ));
            }
            let s = s.get_ref();
            let rate_bps = src.rate(&s.rate, "shape.rate")?;
            let burst_bytes = *s.burst.get_ref();
            if burst_bytes < wire_bytes(size) {
                return Err(src.invalid(
                    s.burst.span().start,
                    format!(
                        "`burst` must hold one datagram ({} wire bytes)",
                        wire_bytes(size)
                    ),
                ));
            }
            Some(ShapeSpec {
                rate_bps,
                burst_bytes,
            })
        }
    };
    let name = t
        .name
        .clone()
        .unwrap_or_else(|| format!("{}→{} {}", t.src.get_ref(), t.dst.get_ref(), kind.name()));
    Ok(TrafficSpec {
        name,
        src: s,
        dst: d,
        kind,
        rate_bps,
        size,
        dst_port,
        src_port,
        start,
        stop,
        reserve,
        shape,
    })
}
