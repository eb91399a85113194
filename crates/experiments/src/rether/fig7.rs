//! RETHER §5, Fig. 7: the simulator validated against the implementation — five stations on an
//! idle 10 Mbit/s segment, 1 to 4 real-time sessions of an MPEG-I stream each (1.5 Mbit/s,
//! 6,250 bytes per 33.3 ms TRT), and the non-real-time access delay (the mean time between the
//! token's non-real-time visits to a station, §4's metric) measured both ways.
//!
//! The implementation here is the lab: five unmodified hosts behind their `rtlan rether` agents
//! on an emulated segment (`kind = "segment"`), each session an `rtlan send` stream whose
//! 5-tuple its agent reserves; the agents time the NRT visits (`nrt_visit_gap_sum_ns`). The
//! simulator runs the very same `Station` code on the same medium model
//! ([`rtlan_sim::segment`]), with the protocol parameters the lab's agents ran with (read from
//! their configuration file).
//!
//! What the simulator cannot know is what a token pass costs this machine's user-space
//! daemons. As the paper took its simulator's constants from its implementation's
//! measurements (§5: "values obtained from later low-level measurements ... were used in the
//! simulator to validate it"), the host cost per frame is **calibrated on the one-session point**
//! (a bisection on the simulator's per-frame receive and send cost until its access delay
//! matches the lab's) and the other points are the validation.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use rtlan_lab::{Lab, LabOptions, Topology};
use rtlan_sim::segment::{FlowSpec, HostTiming, SegmentConfig, Source};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{access_ms, r3};
use crate::kit::measure::{loadavg, now_utc};
use crate::kit::run::Run;
use crate::labkit::Stream;

/// The scenario file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Scenario {
    /// Session counts, one point each (the first calibrates the simulator).
    sessions: Vec<usize>,
    /// Measured seconds per point.
    seconds: f64,
    /// Measured seconds per point with `--quick`.
    quick_seconds: f64,
    /// Token rotation time, ms.
    trt_ms: f64,
    /// Simulated seconds per point.
    sim_seconds: f64,
}

const STATIONS: usize = 5;
const HOSTS: [&str; STATIONS] = ["a", "b", "c", "d", "e"];
const RATE_BPS: u64 = 10_000_000;
/// An MPEG-I stream per TRT of 33.3 ms (§4.3: "1.5 Mbps ... 6.25 kilobytes of data per TRT").
const SESSION_BYTES: u32 = 6_250;
const PORT_BASE: u16 = 5100;

fn topology(trt_ms: f64) -> String {
    let mut t = String::new();
    for h in HOSTS {
        t.push_str(&format!("[[host]]\nname = \"{h}\"\n"));
    }
    t.push_str(&format!(
        "[[switch]]\nname = \"seg\"\nkind = \"segment\"\nrate = \"10mbit\"\ntrt = \"{trt_ms}ms\"\n"
    ));
    for h in HOSTS {
        t.push_str(&format!("[[link]]\nends = [\"{h}\", \"seg\"]\n"));
    }
    t
}

fn agent(lab: &Lab, host: &str, request: Value) -> anyhow::Result<Value> {
    let socket = lab
        .bump_agent_socket(host)
        .with_context(|| format!("{host} has no RETHER agent"))?;
    rtlan_linux::ctl::request_json(socket, request.clone(), Duration::from_secs(10))
        .with_context(|| format!("{host}: {request}"))
}

/// Runs the experiment; returns the path of results.json.
pub fn run(run: &Run) -> anyhow::Result<PathBuf> {
    let sc: Scenario = run.load()?;
    let seconds = if run.quick {
        sc.quick_seconds
    } else {
        sc.seconds
    };
    eprintln!("rether-fig7: waiting for the lab lock");
    let _serial = rtlan_lab::serial_lock()?;
    let load_before = loadavg();
    let topology = Topology::from_str(&topology(sc.trt_ms), "rether-fig7")?;
    let name = format!("rf7{}", std::process::id() % 10_000);
    let lab = Lab::up(&topology, &name, &LabOptions::new(&run.exe))?;
    let measured = measure_lab(run, &lab, &sc, Duration::from_secs_f64(seconds));
    // The simulator takes the protocol parameters the lab's agents ran with.
    let agent_config = lab
        .bump_agent_config("a")
        .context("host a has no RETHER agent")
        .and_then(|p| {
            rtlan_linux::retherd::RetherDaemonConfig::from_file(p)
                .with_context(|| format!("reading {}", p.display()))
        });
    lab.down()?;
    let lab_points = measured?;
    let agent = agent_config?.station;
    let first = lab_points
        .first()
        .and_then(|p| p["access_ms"].as_f64())
        .context("no lab access delay at the first point")?;
    let calibrated = calibrate(&agent, sc.sessions[0], first, sc.sim_seconds)?;
    let mut points = Vec::new();
    for (n, lab_point) in sc.sessions.iter().zip(&lab_points) {
        let sim = simulate(&agent, *n, calibrated, sc.sim_seconds)?;
        let lab_ms = lab_point["access_ms"].as_f64().unwrap_or(f64::NAN);
        points.push(json!({
            "sessions": n,
            "lab": lab_point,
            "sim_access_ms": sim.map(r3),
            "sim_over_lab": sim.map(|s| r3(s / lab_ms)),
        }));
    }
    let results = json!({
        "experiment": "rether-fig7",
        "quick": run.quick,
        "seconds_per_point": seconds,
        "trt_ms": sc.trt_ms,
        "session_bytes_per_trt": SESSION_BYTES,
        "calibrated_host_cost_us": r3(calibrated.as_secs_f64() * 1e6),
        "agent": {
            "trt_us": agent.trt.as_micros() as u64,
            "t_nrt_us": agent.t_nrt.as_micros() as u64,
            "token_cost_us": agent.token_cost.as_micros() as u64,
            "frame_overhead_us": agent.frame_overhead.as_micros() as u64,
            "visit_overhead_us": agent.visit_overhead.as_micros() as u64,
        },
        "date": now_utc(),
        "load_before": load_before,
        "points": points,
    });
    run.finish(&results)
}

/// The lab points: per session count, the access delay averaged over the five stations and the
/// sessions' streams as received.
fn measure_lab(
    run: &Run,
    lab: &Lab,
    sc: &Scenario,
    seconds: Duration,
) -> anyhow::Result<Vec<Value>> {
    let mut out = Vec::new();
    for &n in &sc.sessions {
        anyhow::ensure!(n <= STATIONS, "at most {STATIONS} sessions");
        eprintln!("rether-fig7: lab, {n} sessions");
        let mut sessions = Vec::new();
        for (i, &from) in HOSTS.iter().enumerate().take(n) {
            let to = HOSTS[(i + 1) % STATIONS];
            let port = PORT_BASE + i as u16;
            let opened = agent(
                lab,
                from,
                json!({"op": "open", "rate": "1.5mbit", "keep": true,
                       "flow": {"protocol": "udp", "src": lab.host_ip(from)?,
                                "dst": lab.host_ip(to)?, "dst_port": port}}),
            )?;
            let session = opened["session"].as_u64().context("session id")?;
            let admitted = agent(lab, from, json!({"op": "admit", "session": session}))?;
            anyhow::ensure!(admitted["state"] == "admitted", "{from}: {admitted}");
            sessions.push((from, session));
        }
        let lead = Duration::from_millis(800);
        let mut streams = Vec::new();
        for (i, &from) in HOSTS.iter().enumerate().take(n) {
            let to = HOSTS[(i + 1) % STATIONS];
            let stream = Stream {
                to: format!("{}:{}", lab.host_ip(to)?, PORT_BASE + i as u16),
                // 1.5 Mbit/s of payload in 1,000-byte datagrams: whole frames at 1.6.
                rate: "1.6mbit".to_string(),
                size: 1000,
                duration: seconds + lead + Duration::from_millis(300),
                reserve: None,
                shaping: None,
            };
            streams.push(stream.start(&run.exe, lab, from)?);
        }
        std::thread::sleep(lead);
        for h in HOSTS {
            agent(lab, h, json!({"op": "reset_token_gap"}))?;
        }
        std::thread::sleep(seconds);
        let mut per_station = Vec::new();
        for h in HOSTS {
            let s = agent(lab, h, json!({"op": "stats"}))?;
            let visits = s["agent"]["nrt_visits"].as_u64().unwrap_or(0);
            let sum = s["agent"]["nrt_visit_gap_sum_ns"].as_u64().unwrap_or(0);
            let max = s["agent"]["nrt_visit_gap_max_ns"].as_u64().unwrap_or(0);
            per_station.push(json!({
                "host": h,
                "nrt_visits": visits,
                "access_ms": (visits > 0).then(|| r3(sum as f64 / visits as f64 / 1e6)),
                "access_max_ms": r3(max as f64 / 1e6),
                "token_gap_max_ms": r3(s["agent"]["token_gap_max_ns"].as_u64().unwrap_or(0) as f64 / 1e6),
                "deaths": s["station"]["deaths"],
            }));
        }
        for g in streams {
            let _ = g.finish(Duration::from_secs(5));
        }
        for (from, session) in sessions {
            agent(lab, from, json!({"op": "close", "session": session}))?;
        }
        // Back to CSMA before the next point.
        std::thread::sleep(Duration::from_millis(500));
        let means: Vec<f64> = per_station
            .iter()
            .filter_map(|p| p["access_ms"].as_f64())
            .collect();
        let access =
            (!means.is_empty()).then(|| r3(means.iter().sum::<f64>() / means.len() as f64));
        eprintln!("rether-fig7: lab, {n} sessions: access {access:?} ms");
        out.push(json!({"sessions": n, "access_ms": access, "stations": per_station}));
    }
    Ok(out)
}

/// The simulated segment of the lab's point with `sessions` sessions: the protocol parameters
/// of the lab's agents (`agent`, read from host a's agent's configuration file), every frame
/// costing its host `cost` to receive and to send.
fn config(
    agent: &rtlan_core::rether::Config,
    sessions: usize,
    cost: Duration,
    seconds: f64,
) -> SegmentConfig {
    let mut c = SegmentConfig::new(STATIONS, RATE_BPS);
    c.trt = agent.trt;
    c.t_nrt = agent.t_nrt;
    c.nrt_policy = agent.nrt_policy;
    c.frame_overhead = agent.frame_overhead;
    c.visit_overhead = agent.visit_overhead;
    c.token_cost = agent.token_cost;
    c.host = HostTiming {
        rx_fixed: cost,
        rx_ns_per_byte: 0.0,
        tx_fixed: cost,
        tx_ns_per_byte: 0.0,
    };
    c.window = Duration::from_secs_f64(seconds);
    let trt = agent.trt;
    for i in 0..sessions {
        c.flows.push(FlowSpec {
            from: i,
            to: (i + 1) % STATIONS,
            source: Source::Cbr {
                period: trt,
                bytes: SESSION_BYTES,
            },
            reserve: Some(SESSION_BYTES),
            deadline: Some(trt * 2),
            start: Duration::from_millis(20),
        });
    }
    c
}

fn simulate(
    agent: &rtlan_core::rether::Config,
    sessions: usize,
    cost: Duration,
    seconds: f64,
) -> anyhow::Result<Option<f64>> {
    let r = rtlan_sim::segment::run(&config(agent, sessions, cost, seconds))
        .map_err(|e| anyhow::anyhow!("simulator: {e}"))?;
    let all: Vec<usize> = (0..STATIONS).collect();
    Ok(access_ms(&r, &all))
}

/// The per-frame host cost that makes the simulator's access delay with `sessions` sessions
/// equal `target_ms` (bisection over 0..2 ms: the delay grows with the cost).
fn calibrate(
    agent: &rtlan_core::rether::Config,
    sessions: usize,
    target_ms: f64,
    seconds: f64,
) -> anyhow::Result<Duration> {
    let (mut lo, mut hi) = (0.0f64, 2e-3f64);
    for _ in 0..14 {
        let mid = (lo + hi) / 2.0;
        let got = simulate(agent, sessions, Duration::from_secs_f64(mid), seconds)?
            .unwrap_or(f64::INFINITY);
        if got < target_ms {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(Duration::from_secs_f64((lo + hi) / 2.0))
}
