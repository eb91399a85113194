//! RETHER (Venkatramani and Chiueh) §4.3 and §5 reproduced in the simulator
//! ([`rtlan_sim::segment`]: the real [`rtlan_core::rether::Station`] on the real CSMA/CD
//! [`rtlan_core::segment::Bus`], behind modelled hosts): Fig. 4 (switch time against network
//! size), Figs. 5 and 6 (non-real-time access delay against session size and session count),
//! Fig. 8 (access delay against network size with two MPEG-I streams), Fig. 9 (fast and slow
//! hosts and links, 20 stations), §5.2's 40 MPEG-I streams on 100 Mbit/s with their deadline
//! misses under non-real-time load, and §1's Table 1 (late video frames on CSMA/CD) with RETHER
//! beside it.
//!
//! `rtlan experiment rether` reads `experiments/rether/scenario.toml`, runs the figures it
//! lists one after the other, writes `results/<figure>.json` under the output directory and
//! draws `results/<figure>.png` with `plot.py`; `experiments/rether/README.md` sets the numbers
//! beside the paper's.
//!
//! The hosts ([`Hardware`]) follow the paper: on 10 Mbit/s with the NIC on the ISA bus, eq. (7)'s
//! a = 140 µs and b = 650 µs (§4.2) and Tables 2 and 3 for the CPU and copy costs
//! ([`HostTiming::PAPER_ISA`]); a local bus divides the copies by 7, and 100 Mbit/s divides every
//! time by 10 (§5.2: "transmission times were reduced by a factor of 10 ... the data copy
//! overhead was reduced by a factor of 7"). The token cost of eq. (1) is what a pass of the
//! configuration's token costs on that host and link.

pub mod fig4;
pub mod fig5;
pub mod fig6;
pub mod fig7;
pub mod fig8;
pub mod fig9;
pub mod mpeg40;
pub mod table1;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use rtlan_sim::segment::{HostTiming, SegmentConfig, SegmentResult};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::kit::run::Run;

/// The experiment's scenario file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Scenario {
    /// Figures to run, in order (`fig4`, `fig5`, `fig6`, `fig8`, `fig9`, `mpeg40`, `table1`).
    figures: Vec<String>,
    /// Seed of the first run (others count on from it).
    seed: u64,
    /// Measured seconds per point.
    seconds: f64,
    /// Measured seconds per point with `--quick`.
    quick_seconds: f64,
    /// Runs per point of Fig. 4 (the paper averages 100).
    fig4_runs: u32,
    /// Seconds of each Table 1 run (the paper's 3,000 frames: 100 s).
    table1_seconds: f64,
}

/// What a figure's runner gets.
#[derive(Debug, Clone, Copy)]
pub struct Params {
    /// Base seed.
    pub seed: u64,
    /// Measured window per point.
    pub window: Duration,
    /// Fewer points.
    pub quick: bool,
    /// Fig. 4 runs per point.
    pub fig4_runs: u32,
    /// Table 1's window.
    pub table1_window: Duration,
}

/// Runs the experiment; returns the path of the last results file written.
pub fn run(run: &Run) -> anyhow::Result<PathBuf> {
    let sc: Scenario = run.load()?;
    let quick_factor = if run.quick { 0.2 } else { 1.0 };
    let params = Params {
        seed: sc.seed,
        window: Duration::from_secs_f64(if run.quick {
            sc.quick_seconds
        } else {
            sc.seconds
        }),
        quick: run.quick,
        fig4_runs: if run.quick {
            (sc.fig4_runs / 5).max(2)
        } else {
            sc.fig4_runs
        },
        table1_window: Duration::from_secs_f64(sc.table1_seconds * quick_factor),
    };
    let dir = run.out.join("results");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut last = None;
    for figure in &sc.figures {
        let started = std::time::Instant::now();
        eprintln!("rether: {figure}");
        let mut results = match figure.as_str() {
            "fig4" => fig4::run(&params)?,
            "fig5" => fig5::run(&params)?,
            "fig6" => fig6::run(&params)?,
            "fig8" => fig8::run(&params)?,
            "fig9" => fig9::run(&params)?,
            "mpeg40" => mpeg40::run(&params)?,
            "table1" => table1::run(&params)?,
            other => anyhow::bail!("unknown figure {other}"),
        };
        if let Value::Object(map) = &mut results {
            map.insert("experiment".into(), json!(format!("rether-{figure}")));
            map.insert("backend".into(), json!("sim"));
            map.insert("quick".into(), json!(run.quick));
            map.insert("seed".into(), json!(params.seed));
            map.insert(
                "window_s".into(),
                json!(if figure == "table1" {
                    params.table1_window.as_secs_f64()
                } else {
                    params.window.as_secs_f64()
                }),
            );
            map.insert(
                "wall_clock_s".into(),
                json!((started.elapsed().as_secs_f64() * 10.0).round() / 10.0),
            );
        }
        let path = dir.join(format!("{figure}.json"));
        std::fs::write(&path, serde_json::to_string_pretty(&results)? + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
        eprintln!(
            "rether: {figure} done in {:.1} s: {}",
            started.elapsed().as_secs_f64(),
            path.display()
        );
        run.plot(&path)?;
        last = Some(path);
    }
    last.context("the scenario lists no figure")
}

/// A host and link of the paper (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hardware {
    /// Link rate, bit/s (10 or 100 Mbit/s).
    pub rate_bps: u64,
    /// NIC on a local bus (copies 7 times faster) instead of the ISA bus.
    pub local_bus: bool,
}

impl Hardware {
    /// The paper's implementation: 10 Mbit/s, ISA bus.
    pub const PAPER: Hardware = Hardware {
        rate_bps: 10_000_000,
        local_bus: false,
    };

    /// "10 Mbit/s, ISA bus" and so on.
    pub fn label(&self) -> String {
        format!(
            "{} Mbit/s, {}",
            self.rate_bps / 1_000_000,
            if self.local_bus {
                "local bus"
            } else {
                "ISA bus"
            }
        )
    }

    /// 1 at 10 Mbit/s, 10 at 100 Mbit/s.
    fn divisor(&self) -> f64 {
        (self.rate_bps as f64 / 10e6).max(1.0)
    }

    /// The hosts' costs.
    pub fn host(&self) -> HostTiming {
        let base = if self.local_bus {
            HostTiming::PAPER_LOCAL_BUS
        } else {
            HostTiming::PAPER_ISA
        };
        base.scaled(self.divisor())
    }

    /// `stations` on this link and these hosts, TRT 33.33 ms, eq. (7)'s a and b; the token cost
    /// is set by [`finish`] once the flows are known.
    pub fn segment(&self, stations: usize) -> SegmentConfig {
        let mut c = SegmentConfig::new(stations, self.rate_bps);
        c.host = self.host();
        let copy = if self.local_bus { 604.0 / 7.0 } else { 604.0 };
        c.frame_overhead = Duration::from_secs_f64(140e-6 / self.divisor());
        // b = 650 µs on the ISA bus: 604 µs of copying an MTU frame (Table 3) and 46 of the rest.
        c.visit_overhead = Duration::from_secs_f64((46.0 + copy) * 1e-6 / self.divisor());
        c
    }
}

/// Sets the token cost of eq. (1) to what a pass of this configuration's token costs its hosts
/// (its size grows with the stations and the sessions, docs/rether.md §4): the sender's and the
/// receiver's processing and copies. The engine adds the token frame's wire time itself.
pub fn finish(mut c: SegmentConfig) -> SegmentConfig {
    let sessions = c.flows.iter().filter(|f| f.reserve.is_some()).count();
    let token_bytes = 14 + 16 + 28 + 2 * c.stations + 16 * sessions;
    c.token_cost = c
        .host
        .token_pass(token_bytes, c.rate_bps)
        .saturating_sub(rtlan_wire::tx_time(token_bytes, c.rate_bps));
    c
}

/// Runs a configuration.
pub fn simulate(c: &SegmentConfig) -> anyhow::Result<SegmentResult> {
    rtlan_sim::segment::run(c).map_err(|e| anyhow::anyhow!("segment: {e}"))
}

/// The paper's metric (§4.1): the mean time between NRT token visits, averaged over
/// `stations`, ms.
pub fn access_ms(r: &SegmentResult, stations: &[usize]) -> Option<f64> {
    let gaps: Vec<f64> = stations
        .iter()
        .filter_map(|&s| r.visits.get(s).and_then(|v| v.mean_gap_us))
        .collect();
    (!gaps.is_empty()).then(|| gaps.iter().sum::<f64>() / gaps.len() as f64 / 1000.0)
}

/// The largest time between NRT visits over `stations`, ms.
pub fn access_max_ms(r: &SegmentResult, stations: &[usize]) -> Option<f64> {
    stations
        .iter()
        .filter_map(|&s| r.visits.get(s).and_then(|v| v.max_gap_us))
        .fold(None, |m: Option<f64>, g| Some(m.map_or(g, |m| m.max(g))))
        .map(|g| g / 1000.0)
}

/// Rounds to 3 decimals (for the JSON).
pub fn r3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

/// The setting of §4.3's Figs. 5 and 6 on the paper's hardware: five stations, the sessions
/// (sender station, bytes per TRT) sending exactly their reservation every TRT to the next
/// station, and "two arbitrary nodes exchange packets of different sizes continuously"
/// (stations 3 and 4 flood each other with 1,500- and 500-byte packets from 200 ms on, after
/// the switch). T_NRT = 2 ms, so that eq. (3) admits up to 31 ms of the 33.3 ms cycle.
pub fn heavily_loaded(sessions: &[(usize, u32)], p: &Params, seed: u64) -> SegmentConfig {
    use rtlan_sim::segment::{FlowSpec, Source};
    let mut c = Hardware::PAPER.segment(5);
    c.seed = seed;
    c.window = p.window;
    c.t_nrt = Duration::from_millis(2);
    for &(from, bytes) in sessions {
        c.flows.push(FlowSpec {
            from,
            to: (from + 1) % 5,
            source: Source::Cbr {
                period: c.trt,
                bytes,
            },
            reserve: Some(bytes),
            deadline: Some(c.trt * 2),
            start: Duration::from_millis(20),
        });
    }
    for (from, to, bytes) in [(3, 4, 1500), (4, 3, 500)] {
        c.flows.push(FlowSpec {
            from,
            to,
            source: Source::Flood { bytes, backlog: 8 },
            reserve: None,
            deadline: None,
            start: Duration::from_millis(200),
        });
    }
    finish(c)
}

/// One point of Figs. 5 and 6: admitted sessions, access delay (mean and worst gap between NRT
/// visits over the five stations), the sessions' worst delay and misses, the floods' rate.
pub fn heavy_point(r: &SegmentResult, sessions: usize, window: Duration) -> Value {
    let admitted = r.flows[..sessions]
        .iter()
        .filter(|f| f.admitted == Some(true))
        .count();
    let misses: u64 = r.flows[..sessions]
        .iter()
        .filter(|f| f.admitted == Some(true))
        .map(|f| f.deadline_misses)
        .sum();
    let worst = r.flows[..sessions]
        .iter()
        .filter(|f| f.admitted == Some(true))
        .map(|f| f.delay.max_us)
        .fold(0.0f64, f64::max);
    let flood_bytes: u64 = r.flows[sessions..].iter().map(|f| f.bytes_delivered).sum();
    let all: Vec<usize> = (0..5).collect();
    json!({
        "admitted": admitted,
        "access_ms": access_ms(r, &all).map(r3),
        "access_max_ms": access_max_ms(r, &all).map(r3),
        "rt_max_delay_ms": r3(worst / 1000.0),
        "rt_deadline_misses": misses,
        "nrt_mbit_s": r3(flood_bytes as f64 * 8.0 / window.as_secs_f64() / 1e6),
        "collisions": r.bus.collisions,
        "deaths": r.deaths,
    })
}

/// A lightly loaded segment of §5: `streams` MPEG-I sessions (6,250 bytes per 33.3 ms TRT,
/// 1.5 Mbit/s, §4.3) from stations 0, 1, 2, … round robin to the next station, and at every
/// station a 500-byte non-real-time packet every 200 ms on average (Poisson).
pub fn lightly_loaded(hw: Hardware, stations: usize, streams: usize, p: &Params) -> SegmentConfig {
    use rtlan_sim::segment::{FlowSpec, Source};
    let mut c = hw.segment(stations);
    c.seed = p.seed;
    c.window = p.window;
    for k in 0..streams {
        let from = k % stations;
        c.flows.push(FlowSpec {
            from,
            to: (from + 1) % stations,
            source: Source::Cbr {
                period: c.trt,
                bytes: 6_250,
            },
            reserve: Some(6_250),
            deadline: Some(c.trt * 2),
            start: Duration::from_millis(20),
        });
    }
    for s in 0..stations {
        c.flows.push(FlowSpec {
            from: s,
            to: (s + 1) % stations,
            source: Source::Poisson {
                mean_interval: Duration::from_millis(200),
                bytes: 500,
            },
            reserve: None,
            deadline: None,
            start: Duration::from_millis(300),
        });
    }
    finish(c)
}
