//! RETHER §4.3, Fig. 4: the time to switch from CSMA to RETHER mode against the number of
//! stations. One station asks for a session on an idle segment; the switch time runs from the
//! request to the initiator's token (every acknowledgement heard, §2.2.2). The paper measured
//! 2 to 5 i486 PCs on 10 Mbit/s; the curve rises with the stations because the initiator
//! processes one acknowledgement after another and the acknowledgements collide. A second
//! variant is the paper's worst case: every other station has a full-length frame in its NIC
//! when the request comes.

use std::time::Duration;

use serde_json::{json, Value};

use super::{finish, r3, simulate, Hardware, Params};
use rtlan_sim::segment::{FlowSpec, Source};

/// When the session is asked for (after the stations' JOINs have settled).
const OPEN: Duration = Duration::from_millis(50);

/// Runs the figure.
pub fn run(p: &Params) -> anyhow::Result<Value> {
    let nodes: Vec<usize> = if p.quick {
        vec![2, 5, 10, 20]
    } else {
        vec![2, 3, 4, 5, 6, 8, 10, 12, 15, 20]
    };
    let mut variants = Vec::new();
    for busy in [false, true] {
        let mut points = Vec::new();
        for &n in &nodes {
            let mut times = Vec::new();
            let mut all = Vec::new();
            let mut deaths = 0u64;
            for k in 0..p.fig4_runs {
                let mut c = Hardware::PAPER.segment(n);
                c.seed = p.seed + u64::from(k);
                c.warmup = Duration::ZERO;
                c.window = Duration::from_millis(300);
                c.drain = Duration::ZERO;
                c.flows.push(FlowSpec {
                    from: 0,
                    to: 1,
                    source: Source::Cbr {
                        period: c.trt,
                        bytes: 1000,
                    },
                    reserve: Some(1000),
                    deadline: None,
                    start: OPEN,
                });
                if busy {
                    for s in 1..n {
                        c.flows.push(FlowSpec {
                            from: s,
                            to: (s + 1) % n,
                            source: Source::Cbr {
                                period: Duration::from_secs(10),
                                bytes: 1500,
                            },
                            reserve: None,
                            deadline: None,
                            start: OPEN - Duration::from_micros(1),
                        });
                    }
                }
                let r = simulate(&finish(c))?;
                // A station whose acknowledgement waited out the initiator's attempts behind
                // its NIC's frame and the collisions is declared dead (and joins again).
                deaths += r.deaths;
                if let Some(t) = r.switch_us {
                    times.push(t / 1000.0);
                }
                if let Some(t) = r.all_switched_us {
                    all.push(t / 1000.0);
                }
            }
            let mean =
                |v: &[f64]| (!v.is_empty()).then(|| r3(v.iter().sum::<f64>() / v.len() as f64));
            let max = |v: &[f64]| {
                v.iter()
                    .copied()
                    .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))))
            };
            let min = |v: &[f64]| {
                v.iter()
                    .copied()
                    .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.min(x))))
            };
            points.push(json!({
                "stations": n,
                "runs": p.fig4_runs,
                "switched": times.len(),
                "switch_ms_mean": mean(&times),
                "switch_ms_min": min(&times).map(r3),
                "switch_ms_max": max(&times).map(r3),
                "all_stations_ms_mean": mean(&all),
                "stations_declared_dead": deaths,
            }));
        }
        variants.push(json!({
            "variant": if busy { "busy: a full-length frame in every other NIC" } else { "idle segment" },
            "points": points,
        }));
    }
    Ok(json!({
        "figure": "RETHER Fig. 4: switch time against the number of stations",
        "hardware": Hardware::PAPER.label(),
        "paper": {
            "stations": [2, 3, 4, 5],
            "switch_ms_range": [1.4, 1.6],
            "note": "read off Fig. 4's axis (1.4–1.6 ms, rising with the stations); the text gives no values"
        },
        "variants": variants,
    }))
}
