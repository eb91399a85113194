//! A shared Ethernet segment in the simulator: N RETHER stations ([`rtlan_core::rether::Station`],
//! RETHER §2) on one CSMA/CD medium ([`rtlan_core::segment::Bus`], 802.3 clause 4), driven on
//! virtual time with traffic sources and sinks — the simulation of RETHER §5 ("a realistic
//! simulator that took values from real measurements, as configuration parameters") built from
//! the same station and medium code that the unit tests and the lab run.
//!
//! # What a station's host adds
//!
//! The paper's figures are shaped by its hosts' costs (§4.2, Tables 2 and 3, eq. 7): each token
//! pass cost 247 µs on a 66 MHz i486 with the NIC on the ISA bus. A station here is the protocol
//! engine behind a modelled host ([`HostTiming`]):
//!
//! - **one CPU per station**, serving in arrival order: a frame the NIC accepts (addressed to
//!   the station, or multicast — every TOKEN goes to the RETHER group) costs `rx_fixed` plus
//!   `rx_ns_per_byte` per byte (interrupt, copy from the NIC, protocol processing: Table 2 items
//!   1–4) before the engine sees it; a frame the engine hands out costs `tx_fixed` plus
//!   `tx_ns_per_byte` per byte (items 5–7: preprocessing and the copy to the NIC) before the
//!   NIC has it;
//! - **a NIC transmit buffer** of `nic_frames` frames (the one being copied in included): the
//!   engine is polled only when there is room, so what waits, waits in the engine, where RETHER
//!   orders it (§2.2.2: "awaits completion of transmission of the packet already in the
//!   transmission buffer");
//! - the medium: the [`Bus`] (carrier sense, collisions, exponential backoff, seeded).
//!
//! [`HostTiming::PAPER_ISA`] takes its figures from Tables 2 and 3; [`HostTiming::PAPER_LOCAL_BUS`]
//! divides the copies by 7 as §5.2 does for "PCs with local buses"; [`HostTiming::IDEAL`] costs
//! nothing. The engine's own soft clock is charged by eq. (7) with the [`SegmentConfig`]'s `a`,
//! `b` and token cost, as the paper's implementation is.
//!
//! # Measurements
//!
//! Every data unit (a video picture, a message, a packet) is cut into Ethernet frames carrying a
//! small header (flow, unit, fragment count, generation instant); the destination's attachment
//! records when the unit's last fragment arrives. Per flow: units sent and delivered in the
//! measured window, their delays, deadline misses; per station the instants of its non-real-time
//! token visits (TOKEN frames of the NRT phase addressed to it, seen on the medium) — the
//! paper's "average time between NRT token visits to a node" (§4.1); the switch time (§4.3,
//! Fig. 4): from the first session request to the initiator's RETHER mode.
//!
//! # Driving
//!
//! The driver steps virtual time to the earliest of: a source's next unit, a session to open, a
//! station's or the medium's deadline, a host CPU finishing a frame. At each instant it repeats,
//! until nothing changes: sources, received frames to the engines, engine timers and events,
//! frames into NICs, the medium's timers and deliveries. Everything is ordered by station index
//! and the generators are seeded, so one configuration and seed give one result.

mod measure;
pub mod source;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use rtlan_core::node::{Node, PortId};
use rtlan_core::rether::{Config, Event, Mode, NrtPolicy, Station, MAX_FRAME};
use rtlan_core::segment::{Bus, BusConfig, BusStats};
use rtlan_core::time::Instant;
use rtlan_wire::ethernet::Address;
use rtlan_wire::rether::NodeId;

use measure::{data_frame, observe_token, receive_data, send_unit};

use source::Generator;
pub use source::{MpegConfig, Source};

/// Payload bytes per Ethernet frame (MTU).
pub const MTU: usize = 1500;

/// The MAC of station `index` (0-based).
pub fn station_mac(index: usize) -> Address {
    let n = index + 1;
    Address([2, 0, 0, 0xee, (n >> 8) as u8, n as u8])
}

/// The RETHER id of station `index` (0-based): `index + 1`.
pub fn station_id(index: usize) -> NodeId {
    // `run` accepts at most 4096 stations: ids 1..=4096 are valid (1..=32767).
    NodeId::new(index as u16 + 1).expect("station ids stay within 1..=4096")
}

/// What a station's host costs (module docs).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct HostTiming {
    /// CPU time per received frame, fixed part.
    pub rx_fixed: Duration,
    /// CPU time per received byte (copy from the NIC), ns.
    pub rx_ns_per_byte: f64,
    /// CPU time per sent frame, fixed part.
    pub tx_fixed: Duration,
    /// CPU time per sent byte (copy to the NIC), ns.
    pub tx_ns_per_byte: f64,
}

impl HostTiming {
    /// No host costs: the engine answers at once.
    pub const IDEAL: HostTiming = HostTiming {
        rx_fixed: Duration::ZERO,
        rx_ns_per_byte: 0.0,
        tx_fixed: Duration::ZERO,
        tx_ns_per_byte: 0.0,
    };

    /// The paper's 66 MHz i486 with its NIC on the ISA bus (§4.1). Table 2: receiver pre- and
    /// postprocessing and protocol processing 27 + 12 + 15 µs, sender pre- and postprocessing
    /// 30 + 15 µs; Table 3 "Mem. to NIC Copy": 51, 210, 402, 604 µs for 100, 500, 1000, 1500
    /// bytes, about 12 µs + 0.395 µs per byte (the fixed part of the copy folded into the
    /// processing figures). A 72-byte token then costs its receiver 82 µs and its sender
    /// 73 µs, about Table 2's 85 and 74.
    pub const PAPER_ISA: HostTiming = HostTiming {
        rx_fixed: Duration::from_micros(54),
        rx_ns_per_byte: 395.0,
        tx_fixed: Duration::from_micros(45),
        tx_ns_per_byte: 395.0,
    };

    /// The same PC with the NIC on a local bus (§5.2: "the data copy overhead was reduced by a
    /// factor of 7", from Table 3's memory-to-memory copy against memory-to-NIC).
    pub const PAPER_LOCAL_BUS: HostTiming = HostTiming {
        rx_fixed: Duration::from_micros(54),
        rx_ns_per_byte: 395.0 / 7.0,
        tx_fixed: Duration::from_micros(45),
        tx_ns_per_byte: 395.0 / 7.0,
    };

    /// Every cost divided by `divisor` (RETHER §5.2 divides the times of a 10 Mbit/s host by 10
    /// for 100 Mbit/s).
    pub fn scaled(&self, divisor: f64) -> HostTiming {
        let d = divisor.max(f64::MIN_POSITIVE);
        HostTiming {
            rx_fixed: self.rx_fixed.div_f64(d),
            rx_ns_per_byte: self.rx_ns_per_byte / d,
            tx_fixed: self.tx_fixed.div_f64(d),
            tx_ns_per_byte: self.tx_ns_per_byte / d,
        }
    }

    fn rx_cost(&self, len: usize) -> Duration {
        self.rx_fixed + Duration::from_nanos((self.rx_ns_per_byte * len as f64) as u64)
    }

    fn tx_cost(&self, len: usize) -> Duration {
        self.tx_fixed + Duration::from_nanos((self.tx_ns_per_byte * len as f64) as u64)
    }

    /// What one token pass of `token_bytes` costs end to end on a segment of `rate_bps` with
    /// this host: the sender's CPU, the wire, the receiver's CPU (Table 2's total).
    pub fn token_pass(&self, token_bytes: usize, rate_bps: u64) -> Duration {
        self.tx_cost(token_bytes)
            + rtlan_wire::tx_time(token_bytes, rate_bps)
            + self.rx_cost(token_bytes)
    }
}

/// One flow: a source at a station, a sink at another.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct FlowSpec {
    /// Sending station (0-based).
    pub from: usize,
    /// Receiving station (0-based).
    pub to: usize,
    /// What it offers.
    pub source: Source,
    /// A RETHER session of this many bytes per TRT (the source starts once it is admitted and
    /// never if it is refused); `None`: non-real-time, from `start` on.
    pub reserve: Option<u32>,
    /// A unit is late when its delay exceeds this.
    pub deadline: Option<Duration>,
    /// When the flow starts (or asks for its session).
    pub start: Duration,
}

/// A segment, its stations and their traffic.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SegmentConfig {
    /// Stations, ≥ 2.
    pub stations: usize,
    /// The medium's rate, bit/s.
    pub rate_bps: u64,
    /// Seed of the medium's backoff and of the sources.
    pub seed: u64,
    /// Units generated before this are not measured.
    pub warmup: Duration,
    /// The measured window.
    pub window: Duration,
    /// After the window, time for the last units to arrive.
    pub drain: Duration,
    /// Token rotation time.
    pub trt: Duration,
    /// T_NRT of eq. (3).
    pub t_nrt: Duration,
    /// Non-real-time policy (§2.2.3).
    #[serde(skip)]
    pub nrt_policy: NrtPolicy,
    /// The engine's per-frame overhead `a` of eq. (7).
    pub frame_overhead: Duration,
    /// The engine's per-visit overhead `b` of eq. (7).
    pub visit_overhead: Duration,
    /// The engine's token cost (eq. 1's t_token).
    pub token_cost: Duration,
    /// The hosts.
    pub host: HostTiming,
    /// Frames a NIC's transmit buffer holds.
    pub nic_frames: usize,
    /// The flows.
    pub flows: Vec<FlowSpec>,
}

impl SegmentConfig {
    /// `stations` on a segment of `rate_bps`, the paper's TRT (33.33 ms, 30 cycles/s) and
    /// T_NRT of 10 %, ideal hosts, the engine's default overheads, a NIC of 2 frames, 1 s of
    /// warm-up, 10 s measured, 0.5 s to drain; no flows.
    pub fn new(stations: usize, rate_bps: u64) -> SegmentConfig {
        let c = Config::new(station_id(0), station_mac(0), rate_bps);
        SegmentConfig {
            stations,
            rate_bps,
            seed: 1,
            warmup: Duration::from_secs(1),
            window: Duration::from_secs(10),
            drain: Duration::from_millis(500),
            trt: c.trt,
            t_nrt: c.t_nrt,
            nrt_policy: c.nrt_policy,
            frame_overhead: c.frame_overhead,
            visit_overhead: c.visit_overhead,
            token_cost: c.token_cost,
            host: HostTiming::IDEAL,
            nic_frames: 2,
            flows: Vec::new(),
        }
    }

    /// The engine's configuration of station `index`.
    pub fn station_config(&self, index: usize) -> Config {
        let mut c = Config::new(station_id(index), station_mac(index), self.rate_bps);
        c.trt = self.trt;
        c.t_nrt = self.t_nrt;
        c.nrt_policy = self.nrt_policy;
        c.frame_overhead = self.frame_overhead;
        c.visit_overhead = self.visit_overhead;
        c.token_cost = self.token_cost;
        c
    }
}

/// Delay figures of a flow's units, µs.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Delays {
    /// Units measured.
    pub samples: u64,
    /// Mean.
    pub mean_us: f64,
    /// Median.
    pub p50_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// Largest.
    pub max_us: f64,
    /// Smallest.
    pub min_us: f64,
}

impl Delays {
    /// Figures of `ns` (sorted in place).
    pub fn of(ns: &mut [u64]) -> Delays {
        if ns.is_empty() {
            return Delays::default();
        }
        ns.sort_unstable();
        let q = |p: f64| {
            let rank = ((p * ns.len() as f64).ceil() as usize).clamp(1, ns.len());
            ns[rank - 1] as f64 / 1000.0
        };
        Delays {
            samples: ns.len() as u64,
            mean_us: ns.iter().sum::<u64>() as f64 / ns.len() as f64 / 1000.0,
            p50_us: q(0.5),
            p99_us: q(0.99),
            max_us: ns[ns.len() - 1] as f64 / 1000.0,
            min_us: ns[0] as f64 / 1000.0,
        }
    }
}

/// What happened to a flow.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct FlowOutcome {
    /// Its session: `Some(true)` admitted, `Some(false)` refused, `None` not asked for.
    pub admitted: Option<bool>,
    /// Its token holding time (eq. 1), when admitted, µs.
    pub tht_us: Option<f64>,
    /// When its session was admitted, ms of virtual time.
    pub admitted_at_ms: Option<f64>,
    /// Units generated in the window.
    pub units: u64,
    /// Of those, delivered whole.
    pub delivered: u64,
    /// Of those, late (delay above the deadline) or never delivered.
    pub deadline_misses: u64,
    /// Delays of the delivered units.
    pub delay: Delays,
    /// Each delivered unit's delay, ns, in generation order (for the runners' own criteria).
    #[serde(skip)]
    pub delays_ns: Vec<u64>,
    /// Frames the station refused (a full queue).
    pub dropped_frames: u64,
    /// Payload bytes delivered (window units, and all flood traffic in the window).
    pub bytes_delivered: u64,
}

/// Per station: its non-real-time token visits.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Visits {
    /// NRT visits in the window.
    pub count: u64,
    /// Mean time between consecutive NRT visits, µs.
    pub mean_gap_us: Option<f64>,
    /// Largest time between consecutive NRT visits, µs.
    pub max_gap_us: Option<f64>,
}

/// The result of a run.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SegmentResult {
    /// Per flow, in the configuration's order.
    pub flows: Vec<FlowOutcome>,
    /// Per station, its NRT token visits in the window.
    pub visits: Vec<Visits>,
    /// The medium's counters.
    pub bus: BusStats,
    /// The engines' counters.
    pub stations: Vec<rtlan_core::rether::Stats>,
    /// From the first session request to the initiator's RETHER mode, µs.
    pub switch_us: Option<f64>,
    /// From the first session request until every station is in RETHER mode, µs.
    pub all_switched_us: Option<f64>,
    /// Events of the stations declaring others dead (none expected: nobody crashes).
    pub deaths: u64,
}

/// A station with its host and attachment.
struct Attached {
    station: Station,
    mac: Address,
    /// The CPU is busy until then.
    cpu_free: Instant,
    /// Received frames being processed: handed to the engine at their instant.
    rx: VecDeque<(Instant, Vec<u8>)>,
    /// The frame being copied to the NIC, and when it is there.
    copying: Option<(Instant, Vec<u8>)>,
    /// When the station entered RETHER mode.
    rether_at: Option<Instant>,
    /// Instants of NRT visits.
    visits: Vec<Instant>,
}

/// A flow's live state.
struct Live {
    gen: Generator,
    session: u16,
    /// The source runs (admitted, or unreserved and started).
    running: bool,
    opened: bool,
    /// Units in flight: unit → (generation instant, fragments missing, bytes, in window).
    pending: BTreeMap<u32, (Instant, u16, u32, bool)>,
    next_unit: u32,
    delays: Vec<u64>,
    outcome: FlowOutcome,
}

fn is_flood(source: &Source) -> bool {
    matches!(source, Source::Flood { .. })
}

/// Runs the segment; an error names what is wrong with the configuration.
pub fn run(config: &SegmentConfig) -> Result<SegmentResult, String> {
    let n = config.stations;
    if !(2..=4096).contains(&n) {
        return Err(format!("{n} stations: 2 to 4096"));
    }
    for (i, f) in config.flows.iter().enumerate() {
        if f.from >= n || f.to >= n || f.from == f.to {
            return Err(format!("flow {i}: stations {} → {}", f.from, f.to));
        }
    }
    let mut bus_config = BusConfig::new(n, config.rate_bps);
    bus_config.seed = config.seed;
    let mut bus = Bus::new(bus_config);
    let mut stations: Vec<Attached> = (0..n)
        .map(|i| Attached {
            station: Station::new(config.station_config(i)),
            mac: station_mac(i),
            cpu_free: Instant::ZERO,
            rx: VecDeque::new(),
            copying: None,
            rether_at: None,
            visits: Vec::new(),
        })
        .collect();
    let mut flows: Vec<Live> = config
        .flows
        .iter()
        .enumerate()
        .map(|(i, f)| Live {
            gen: Generator::new(
                f.source,
                Instant::ZERO + f.start,
                config.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (i as u64 + 1),
            ),
            session: i as u16 + 1,
            running: false,
            opened: false,
            pending: BTreeMap::new(),
            next_unit: 0,
            delays: Vec::new(),
            outcome: FlowOutcome::default(),
        })
        .collect();
    let window_start = Instant::ZERO + config.warmup;
    let window_end = window_start + config.window;
    let end = window_end + config.drain;
    let mut first_open: Option<Instant> = None;
    let mut deaths = 0u64;
    let mut buf = vec![0u8; MAX_FRAME + 64];
    let mut now = Instant::ZERO;
    loop {
        for _pass in 0..64 {
            let mut changed = false;
            // Sessions to ask for, sources to start.
            for (i, f) in config.flows.iter().enumerate() {
                let live = &mut flows[i];
                if live.opened || Instant::ZERO + f.start > now {
                    continue;
                }
                live.opened = true;
                changed = true;
                match f.reserve {
                    Some(bytes) => {
                        first_open.get_or_insert(now);
                        stations[f.from].station.open(
                            now,
                            live.session,
                            bytes,
                            MAX_FRAME,
                            Some(station_id(f.to)),
                        );
                    }
                    None => {
                        live.running = true;
                        live.gen.start_at(now);
                    }
                }
            }
            // Sources.
            for (i, f) in config.flows.iter().enumerate() {
                let live = &mut flows[i];
                if !live.running {
                    continue;
                }
                if let Source::Flood { bytes, backlog } = f.source {
                    let st = &mut stations[f.from].station;
                    while st.nrt_queued() < backlog as usize {
                        let unit = live.next_unit;
                        live.next_unit = live.next_unit.wrapping_add(1);
                        let frame = data_frame(f, i, unit, 0, 1, bytes as usize, now);
                        if !st.send_nrt(&frame) {
                            live.outcome.dropped_frames += 1;
                            break;
                        }
                        changed = true;
                    }
                    continue;
                }
                while let Some(at) = live.gen.next.filter(|&t| t <= now) {
                    let bytes = live.gen.emit();
                    send_unit(
                        f,
                        i,
                        live,
                        &mut stations[f.from].station,
                        at,
                        bytes,
                        window_start,
                        window_end,
                    );
                    changed = true;
                }
            }
            for (index, a) in stations.iter_mut().enumerate() {
                // Received frames whose processing is done.
                while a.rx.front().is_some_and(|(t, _)| *t <= now) {
                    if let Some((_, frame)) = a.rx.pop_front() {
                        a.station.handle_frame(now, PortId(0), &frame);
                        changed = true;
                    }
                }
                if a.station.poll_timeout().is_some_and(|t| t <= now) {
                    a.station.handle_timeout(now);
                }
                while let Some(e) = a.station.poll_event() {
                    changed = true;
                    match e {
                        Event::Mode(Mode::Rether) => {
                            a.rether_at.get_or_insert(now);
                        }
                        Event::Admitted { session, tht } => {
                            if let Some(live) = flows.get_mut(usize::from(session) - 1) {
                                if config.flows[usize::from(session) - 1].from == index {
                                    live.outcome.admitted = Some(true);
                                    live.outcome.tht_us = Some(tht.as_nanos() as f64 / 1000.0);
                                    live.outcome.admitted_at_ms = Some(now.as_nanos() as f64 / 1e6);
                                    live.running = true;
                                    // The application's first unit comes at a random phase
                                    // of the cycle, not in step with the visit that admitted
                                    // it (a source in step with its visits would hand every
                                    // unit over just after its slot and carry a backlog).
                                    let phase = phase_ns(config.seed, session, config.trt);
                                    live.gen.start_at(now + Duration::from_nanos(phase));
                                }
                            }
                        }
                        Event::Refused { session, .. } => {
                            if let Some(live) = flows.get_mut(usize::from(session) - 1) {
                                live.outcome.admitted = Some(false);
                            }
                        }
                        Event::Dead { station } => {
                            if std::env::var_os("RTLAN_SEGMENT_DEBUG").is_some() {
                                eprintln!("{now:?}: station {} declares {station} dead", index + 1);
                            }
                            deaths += 1;
                        }
                        _ => {}
                    }
                }
                // The NIC: a copied frame goes to the medium; the engine is polled while there
                // is room.
                let port = PortId(index as u16);
                loop {
                    if let Some((t, _)) = &a.copying {
                        if *t > now {
                            break;
                        }
                        if let Some((_, frame)) = a.copying.take() {
                            bus.handle_frame(now, port, &frame);
                            changed = true;
                        }
                    }
                    if bus.queued(port) + 1 > config.nic_frames {
                        break;
                    }
                    let Some(len) = a.station.poll_transmit(now, port_zero(), &mut buf) else {
                        break;
                    };
                    changed = true;
                    let start = a.cpu_free.max(now);
                    let ready = start + config.host.tx_cost(len);
                    a.cpu_free = ready;
                    a.copying = Some((ready, buf[..len].to_vec()));
                }
            }
            if bus.poll_timeout().is_some_and(|t| t <= now) {
                bus.handle_timeout(now);
            }
            for (j, a) in stations.iter_mut().enumerate() {
                while let Some(len) = bus.poll_transmit(now, PortId(j as u16), &mut buf) {
                    changed = true;
                    let frame = &buf[..len];
                    let dst = &frame[0..6];
                    observe_token(frame, j, now, a, window_start, window_end);
                    if dst == a.mac.0 {
                        receive_data(frame, now, &mut flows, config, window_start, window_end);
                    }
                    if dst == a.mac.0 || dst[0] & 1 == 1 {
                        let ready = a.cpu_free.max(now) + config.host.rx_cost(len);
                        a.cpu_free = ready;
                        a.rx.push_back((ready, frame.to_vec()));
                    }
                }
            }
            if !changed {
                break;
            }
        }
        // The next instant anything happens.
        let mut next: Option<Instant> = None;
        let mut consider = |t: Option<Instant>| {
            if let Some(t) = t.filter(|&t| t > now) {
                next = Some(next.map_or(t, |n: Instant| n.min(t)));
            }
        };
        for (i, f) in config.flows.iter().enumerate() {
            if !flows[i].opened {
                consider(Some(Instant::ZERO + f.start));
            } else if flows[i].running {
                consider(flows[i].gen.next);
            }
        }
        for a in &stations {
            consider(a.station.poll_timeout());
            consider(a.rx.front().map(|(t, _)| *t));
            consider(a.copying.as_ref().map(|(t, _)| *t));
        }
        consider(bus.poll_timeout());
        match next {
            Some(t) if t <= end => now = t,
            _ => break,
        }
    }
    let switch_us = first_open.and_then(|open| {
        let initiator = config
            .flows
            .iter()
            .find(|f| f.reserve.is_some() && Instant::ZERO + f.start == open)?
            .from;
        let at = stations[initiator].rether_at?;
        Some(at.saturating_duration_since(open).as_nanos() as f64 / 1000.0)
    });
    let all_switched_us = first_open.and_then(|open| {
        let mut last = open;
        for a in &stations {
            last = last.max(a.rether_at?);
        }
        Some(last.saturating_duration_since(open).as_nanos() as f64 / 1000.0)
    });
    let outcomes = flows
        .into_iter()
        .zip(&config.flows)
        .map(|(mut live, f)| {
            // Units of the window never delivered.
            let lost = live.pending.values().filter(|p| p.3).count() as u64;
            if f.deadline.is_some() {
                live.outcome.deadline_misses += lost;
            }
            live.outcome.delay = Delays::of(&mut live.delays.clone());
            live.outcome.delays_ns = live.delays;
            live.outcome
        })
        .collect();
    let visits = stations
        .iter()
        .map(|a| {
            let gaps: Vec<u64> = a
                .visits
                .windows(2)
                .map(|w| w[1].saturating_duration_since(w[0]).as_nanos() as u64)
                .collect();
            Visits {
                count: a.visits.len() as u64,
                mean_gap_us: (!gaps.is_empty())
                    .then(|| gaps.iter().sum::<u64>() as f64 / gaps.len() as f64 / 1000.0),
                max_gap_us: gaps.iter().max().map(|&g| g as f64 / 1000.0),
            }
        })
        .collect();
    Ok(SegmentResult {
        flows: outcomes,
        visits,
        bus: bus.stats().clone(),
        stations: stations.iter().map(|a| a.station.stats().clone()).collect(),
        switch_us,
        all_switched_us,
        deaths,
    })
}

/// A seeded phase in `0..trt` for session `session`.
fn phase_ns(seed: u64, session: u16, trt: Duration) -> u64 {
    let mut x = seed ^ (u64::from(session) << 32) ^ 0x2545_F491_4F6C_DD1D;
    x ^= x >> 33;
    x = x.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    x ^= x >> 33;
    x % (trt.as_nanos() as u64).max(1)
}

fn port_zero() -> PortId {
    PortId(0)
}
