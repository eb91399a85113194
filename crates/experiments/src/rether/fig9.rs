//! RETHER §5.2, Fig. 9: 20 stations on fast and slow links (10 and 100 Mbit/s) with fast and
//! slow hosts (NIC on the ISA bus or on a local bus, copies 7 times faster): non-real-time
//! access delay against the bandwidth reserved by MPEG-I streams ([`super::lightly_loaded`]),
//! and how many streams each combination admits. The paper: the faster link matters more than
//! the faster bus ("the data transmission time dominates and the data copy time can often be
//! masked through pipelining"); 100 Mbit/s supports at most 40 MPEG-I streams.

use serde_json::{json, Value};

use super::{access_max_ms, access_ms, lightly_loaded, r3, simulate, Hardware, Params};

/// Stations.
const STATIONS: usize = 20;

/// Runs the figure.
pub fn run(p: &Params) -> anyhow::Result<Value> {
    let mut curves = Vec::new();
    for rate_bps in [10_000_000u64, 100_000_000] {
        for local_bus in [false, true] {
            let hw = Hardware {
                rate_bps,
                local_bus,
            };
            let counts: Vec<usize> = match (rate_bps, p.quick) {
                (10_000_000, true) => vec![1, 4],
                (10_000_000, false) => vec![1, 2, 3, 4, 5],
                (_, true) => vec![1, 20, 40],
                (_, false) => vec![1, 5, 10, 15, 20, 25, 30, 35, 40, 45],
            };
            let mut points = Vec::new();
            for &streams in &counts {
                let c = lightly_loaded(hw, STATIONS, streams, p);
                let token_cost_us = c.token_cost.as_nanos() as f64 / 1000.0;
                let r = simulate(&c)?;
                let all: Vec<usize> = (0..STATIONS).collect();
                let admitted = r.flows[..streams]
                    .iter()
                    .filter(|f| f.admitted == Some(true))
                    .count();
                let misses: u64 = r.flows[..streams]
                    .iter()
                    .filter(|f| f.admitted == Some(true))
                    .map(|f| f.deadline_misses)
                    .sum();
                points.push(json!({
                    "streams": streams,
                    "admitted": admitted,
                    "reserved_percent": r3(admitted as f64 * 1.5e6 / rate_bps as f64 * 100.0),
                    "access_ms": access_ms(&r, &all).map(r3),
                    "access_max_ms": access_max_ms(&r, &all).map(r3),
                    "token_cost_us": r3(token_cost_us),
                    "rt_deadline_misses": misses,
                    "deaths": r.deaths,
                }));
            }
            curves.push(json!({"hardware": hw.label(), "rate_bps": rate_bps, "local_bus": local_bus, "points": points}));
        }
    }
    Ok(json!({
        "figure": "RETHER Fig. 9: fast and slow hosts and links, 20 stations",
        "stations": STATIONS,
        "paper": {
            "claim": "a faster link improves more than a faster bus; 100 Mbit/s with local-bus PCs supports at most 40 MPEG-I streams"
        },
        "curves": curves,
    }))
}
