//! RETHER §5.1, Fig. 8: non-real-time access delay on a lightly loaded 10 Mbit/s segment
//! against the number of stations, with two MPEG-I streams ([`super::lightly_loaded`], the
//! paper's hosts). The paper: the protocol overhead grows linearly with the network, and with
//! up to 20 stations an access latency of 8 ms "seems to be reasonable".

use serde_json::{json, Value};

use super::{access_max_ms, access_ms, lightly_loaded, r3, simulate, Hardware, Params};

/// Runs the figure.
pub fn run(p: &Params) -> anyhow::Result<Value> {
    let sizes: Vec<usize> = if p.quick {
        vec![5, 20, 40]
    } else {
        vec![5, 10, 15, 20, 25, 30, 35, 40]
    };
    let mut points = Vec::new();
    for &n in &sizes {
        let c = lightly_loaded(Hardware::PAPER, n, 2, p);
        let token_cost_us = c.token_cost.as_nanos() as f64 / 1000.0;
        let r = simulate(&c)?;
        let all: Vec<usize> = (0..n).collect();
        let admitted = r.flows[..2]
            .iter()
            .filter(|f| f.admitted == Some(true))
            .count();
        let misses: u64 = r.flows[..2].iter().map(|f| f.deadline_misses).sum();
        points.push(json!({
            "stations": n,
            "admitted": admitted,
            "access_ms": access_ms(&r, &all).map(r3),
            "access_max_ms": access_max_ms(&r, &all).map(r3),
            "token_cost_us": r3(token_cost_us),
            "rt_deadline_misses": misses,
            "deaths": r.deaths,
        }));
    }
    Ok(json!({
        "figure": "RETHER Fig. 8: NRT access delay against the number of stations, 2 MPEG-I streams",
        "hardware": Hardware::PAPER.label(),
        "paper": {"stations": 20, "access_ms": 8.0, "shape": "linear in the number of stations"},
        "points": points,
    }))
}
