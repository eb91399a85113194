//! RETHER §4.3, Fig. 5: non-real-time access delay against the session size, for a constant
//! number of sessions (1, 2 and 4), on a heavily loaded 10 Mbit/s segment of five stations
//! ([`super::heavily_loaded`]). The paper: with a tolerable access delay of 10 ms, one session
//! can reserve up to 28 KB per 33.3 ms frame (69 % of the raw bandwidth) and four sessions up to
//! 26 KB in total (64 %).

use serde_json::{json, Value};

use super::{heavily_loaded, heavy_point, simulate, Hardware, Params};

/// Runs the figure.
pub fn run(p: &Params) -> anyhow::Result<Value> {
    let totals_kb: Vec<u32> = if p.quick {
        vec![4, 16, 24, 28]
    } else {
        (1..=16).map(|k| 2 * k).collect()
    };
    let mut curves = Vec::new();
    for sessions in [1usize, 2, 4] {
        let mut points = Vec::new();
        for &total in &totals_kb {
            let size = total * 1000 / sessions as u32;
            let list: Vec<(usize, u32)> = (0..sessions).map(|s| (s % 3, size)).collect();
            let r = simulate(&heavily_loaded(&list, p, p.seed))?;
            let mut point = heavy_point(&r, sessions, p.window);
            if let Value::Object(m) = &mut point {
                m.insert("session_kb".into(), json!(size as f64 / 1000.0));
                m.insert("total_kb".into(), json!(total));
                m.insert(
                    "reserved_percent".into(),
                    json!(super::r3(f64::from(total) * 8000.0 * 30.0 / 1e7 * 100.0)),
                );
            }
            points.push(point);
        }
        curves.push(json!({"sessions": sessions, "points": points}));
    }
    Ok(json!({
        "figure": "RETHER Fig. 5: NRT access delay against session size, constant number of sessions",
        "hardware": Hardware::PAPER.label(),
        "stations": 5,
        "paper": {
            "at_10ms_access": [
                {"sessions": 1, "total_kb": 28, "reserved_percent": 69},
                {"sessions": 4, "total_kb": 26, "reserved_percent": 64}
            ]
        },
        "curves": curves,
    }))
}
