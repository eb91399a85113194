//! A discrete-event simulator that drives rtlan's real cores, not models of them (DESIGN.md §2:
//! "the same switch code runs on real interfaces, in the simulator at thousands of nodes, and in
//! deterministic unit tests").
//!
//! Every `rtlan` switch of a scenario is the EtheReal switch core ([`rtlan_core::switch::Switch`],
//! EtheReal §3.3 classification, queueing and cyclic scheduling, §3.4 learning, ARP probing and
//! signalling); every `rtlan` router is the QSR router core ([`rtlan_core::router::Router`],
//! default IP forwarding, QSR paper §4.1, with the address plan's static routes); every host
//! runs the host daemon core ([`rtlan_core::rtcd::Rtcd`], EtheReal §2.2
//! and §3.2) behind a small IPv4/UDP/ARP stack built on `rtlan-wire`, so a simulated reservation
//! is a SETUP on the wire exactly like a real one. The setting follows RETHER §5's simulation:
//! stations on virtual time, traffic sources (constant rate, on-off, Poisson, token-bucket
//! shaped, a greedy TCP-like sender) and sinks measuring one-way delay and loss.
//!
//! Modules: `scenario` (the file format: a topology file plus `[sim]`, `[[traffic]]` and
//! `[[sessions]]`), `sessions` (RSVP sessions without data, at the QSR paper's scale),
//! `generate` (leaf–spine generator), `build` (scenario → nodes and links), `engine` (event heap
//! on `(time, sequence)`, full-duplex links), `host`, `traffic` (sources, sinks, payload
//! header), `results` (JSON envelope and table), `pcap` (one capture per link), `segment` (a
//! shared Ethernet segment of RETHER stations on the CSMA/CD bus, RETHER §5). `docs/sim.md`
//! describes the format, the output and the simplifications.
//!
//! Determinism: events are ordered by `(time, insertion sequence)`, randomness comes from
//! per-source xoshiro256++ streams seeded from the scenario seed, and no output iterates a hash
//! map — the same scenario and seed give byte-identical JSON and pcaps.

pub mod build;
pub mod engine;
pub mod generate;
pub mod host;
mod pcap;
pub mod results;
pub mod scenario;
pub mod segment;
pub mod sessions;
pub mod traffic;

use std::path::{Path, PathBuf};
use std::time::Duration;

use rtlan_core::time::Instant;

pub use build::{router_config, router_mac, switch_config, switch_mac};
pub use engine::EngineStats;
pub use host::{host_mac, HostStats};
pub use results::{DelayStats, FlowResult, FrameLoss, Results, SeqSet};
pub use scenario::{Scenario, ScenarioError};
pub use sessions::SessionsResult;

use engine::SimNode;
use results::{HostResult, RouterResult, SwitchResult};
use traffic::Reservation;

/// A scenario the simulator cannot run, or output it cannot write.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// Something in the scenario the simulator does not model (the text says what).
    #[error("{0}")]
    Unsupported(String),
    /// A pcap file could not be written.
    #[error("pcap: {0}")]
    Pcap(#[from] std::io::Error),
}

/// Options of one run.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Replaces the scenario's seed.
    pub seed: Option<u64>,
    /// Writes one pcap per link into this directory.
    pub pcap_dir: Option<PathBuf>,
}

/// A pcap file written by a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PcapFile {
    /// Its path.
    pub path: PathBuf,
    /// Frames in it.
    pub frames: u64,
}

/// What a run produced.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The results.
    pub results: Results,
    /// The pcap files, in link order (empty without [`RunOptions::pcap_dir`]).
    pub pcaps: Vec<PcapFile>,
}

/// Runs `scenario`; `progress(simulated, total)` is called now and then.
pub fn run(
    scenario: &Scenario,
    options: &RunOptions,
    progress: &mut dyn FnMut(Duration, Duration),
) -> Result<Outcome, SimError> {
    let mut sim = Simulation::new(scenario, options)?;
    let end = sim.end();
    sim.run_until(end, progress);
    sim.finish()
}

/// A run in progress, advanced on virtual time by the caller ([`run`] does it in one go): for
/// benchmarks and tests that look at nodes between instants of a run (the RSVP refresh cost per
/// period, `benches/rsvp_sessions.rs`).
pub struct Simulation {
    scenario: Scenario,
    engine: engine::Engine,
    pcap_paths: Vec<PathBuf>,
}

impl Simulation {
    /// Builds the network of `scenario` at time zero and starts it.
    pub fn new(scenario: &Scenario, options: &RunOptions) -> Result<Simulation, SimError> {
        let mut scenario = scenario.clone();
        if let Some(seed) = options.seed {
            scenario.sim.seed = seed;
        }
        let mut engine = build::build(&scenario)?;
        let mut pcap_paths = Vec::new();
        if let Some(dir) = &options.pcap_dir {
            let links: Vec<(String, String)> = scenario
                .topology
                .links
                .iter()
                .map(|l| (l.ends[0].node.clone(), l.ends[1].node.clone()))
                .collect();
            let set = pcap::PcapSet::create(dir, &links)?;
            pcap_paths = set.paths.clone();
            engine.set_pcap(set);
        }
        engine.start();
        Ok(Simulation {
            scenario,
            engine,
            pcap_paths,
        })
    }

    /// Where the run ends: `duration` + `drain`.
    pub fn end(&self) -> Duration {
        self.scenario.sim.duration + self.scenario.sim.drain
    }

    /// Runs every event up to `until` (at most [`Simulation::end`]);
    /// `progress(simulated, total)` is called now and then.
    pub fn run_until(&mut self, until: Duration, progress: &mut dyn FnMut(Duration, Duration)) {
        let end = self.end();
        let until = until.min(end);
        self.engine.run_until(Instant::ZERO + until, &mut |now| {
            progress(Duration::from_nanos(now.as_nanos()), end);
        });
        progress(until, end);
    }

    /// From now on, adds up the wall-clock time spent on each node's events (its `handle_*`
    /// and `poll_*` calls and the engine's work on their frames); [`Simulation::node_time`]
    /// reads it. Results do not change: the time is never part of them.
    pub fn measure_node_time(&mut self) {
        self.engine.measure_node_time();
    }

    /// Wall-clock time spent on the events of node `name` (a host, switch or router) since
    /// [`Simulation::measure_node_time`].
    pub fn node_time(&self, name: &str) -> Option<Duration> {
        self.engine
            .node_time(build::node_index(&self.scenario, name)?)
    }

    /// The engine's counters so far.
    pub fn engine_stats(&self) -> EngineStats {
        self.engine.stats
    }

    /// Router number `index` (topology order), if there is one.
    pub fn router(&self, index: usize) -> Option<&rtlan_core::router::Router> {
        let topo = &self.scenario.topology;
        match self
            .engine
            .nodes
            .get(topo.hosts.len() + topo.switches.len() + index)
        {
            Some(SimNode::Router(r)) => Some(r),
            _ => None,
        }
    }

    /// Runs to the end and collects the results.
    pub fn finish(mut self) -> Result<Outcome, SimError> {
        let end = self.end();
        self.run_until(end, &mut |_, _| {});
        let counts = self.engine.finish_pcap()?;
        let pcaps = std::mem::take(&mut self.pcap_paths)
            .into_iter()
            .zip(counts)
            .map(|(path, frames)| PcapFile { path, frames })
            .collect();
        Ok(Outcome {
            results: collect(&self.scenario, &mut self.engine),
            pcaps,
        })
    }
}

/// Reads `path` and runs it.
pub fn run_file(path: &Path, options: &RunOptions) -> Result<Outcome, Box<dyn std::error::Error>> {
    let scenario = Scenario::from_file(path)?;
    Ok(run(&scenario, options, &mut |_, _| {})?)
}

fn collect(scenario: &Scenario, engine: &mut engine::Engine) -> Results {
    let topo = &scenario.topology;
    let sim = &scenario.sim;
    let window_s = (sim.duration - sim.warmup).as_secs_f64();
    let mut flows = Vec::with_capacity(scenario.traffic.len());
    for (flow, spec) in scenario.traffic.iter().enumerate() {
        let (source_stats, reservation, is_greedy, outages) = match &mut engine.nodes[spec.src] {
            SimNode::Host(h) => match h.sources.iter_mut().find(|s| s.flow as usize == flow) {
                Some(s) => (
                    s.stats,
                    s.reservation.clone(),
                    s.greedy.is_some(),
                    std::mem::take(&mut s.outages),
                ),
                None => continue,
            },
            SimNode::Switch(_) | SimNode::Router(_) => continue,
        };
        let mut sink = match &mut engine.nodes[spec.dst] {
            SimNode::Host(h) => h.sinks.remove(&(flow as u32)).unwrap_or_default(),
            SimNode::Switch(_) | SimNode::Router(_) => continue,
        };
        let (reservation_name, refusal, hops, bound_us) = match reservation {
            Reservation::None => ("none", None, None, None),
            Reservation::Pending => ("pending", None, None, None),
            Reservation::Opened { hops, bound_us, .. } => ("opened", None, Some(hops), bound_us),
            Reservation::Refused(why) => ("refused", Some(why), None, None),
        };
        let delay = DelayStats::of(&mut sink.delays);
        let received = sink.distinct;
        let (loss_frames, loss_pct) = if is_greedy {
            (None, None)
        } else {
            let lost = source_stats.sent_frames.saturating_sub(received);
            let pct = if source_stats.sent_frames == 0 {
                0.0
            } else {
                lost as f64 * 100.0 / source_stats.sent_frames as f64
            };
            (Some(lost), Some(pct))
        };
        flows.push(FlowResult {
            name: spec.name.clone(),
            src: topo.hosts[spec.src].name.clone(),
            dst: topo.hosts[spec.dst].name.clone(),
            kind: spec.kind.name().to_string(),
            reserved_bps: spec.reserve.map(|r| r.rate_bps),
            reservation: reservation_name.to_string(),
            refusal,
            hops,
            offered_bps: source_stats.window_wire_bytes as f64 * 8.0 / window_s,
            delivered_bps: sink.window_wire_bytes as f64 * 8.0 / window_s,
            sent_frames: source_stats.sent_frames,
            received_frames: received,
            loss_frames,
            loss_pct,
            reordered: sink.reordered,
            duplicates: sink.duplicates,
            retransmits: source_stats.retransmits,
            shaper_drops: source_stats.shaper_drops,
            delay,
            bound_us,
            // Observed max / bound; above 1 is a violated guarantee.
            tightness: bound_us
                .zip(delay)
                .filter(|(b, _)| *b > 0)
                .map(|(b, d)| d.max_us / b as f64),
            outages,
            received: std::mem::take(&mut sink.seqs),
        });
    }
    let mut hosts = Vec::new();
    let mut switches = Vec::new();
    let mut routers = Vec::new();
    for (i, node) in engine.nodes.iter().enumerate() {
        match node {
            SimNode::Host(h) => hosts.push(HostResult {
                name: h.name.clone(),
                stats: h.stats,
                rtcd_connections: h.rtcd().connection_count(),
                rsvp: h.rsvp().map(|e| e.stats()),
            }),
            SimNode::Switch(s) => switches.push(SwitchResult {
                name: topo.switches[i - topo.hosts.len()].name.clone(),
                connections: s.connections().len(),
                stats: s.stats().clone(),
            }),
            SimNode::Router(r) => routers.push(RouterResult {
                name: topo.routers[i - topo.hosts.len() - topo.switches.len()]
                    .name
                    .clone(),
                neighbours: r.neighbours().len(),
                stats: r.stats().clone(),
            }),
        }
    }
    // Each table's sender reports it, in scenario order.
    let mut sessions = Vec::with_capacity(scenario.sessions.len());
    for (group, spec) in scenario.sessions.iter().enumerate() {
        if let SimNode::Host(h) = &engine.nodes[spec.src] {
            if let Some(g) = h.sessions.iter().find(|g| g.group == group) {
                sessions.push(g.result(&topo.hosts[spec.src].name, &topo.hosts[spec.dst].name));
            }
        }
    }
    Results {
        version: results::FORMAT_VERSION,
        scenario: scenario.origin.clone(),
        seed: sim.seed,
        duration_ns: sim.duration.as_nanos() as u64,
        warmup_ns: sim.warmup.as_nanos() as u64,
        drain_ns: sim.drain.as_nanos() as u64,
        engine: engine.stats,
        flows,
        hosts,
        switches,
        routers,
        sessions,
    }
}
