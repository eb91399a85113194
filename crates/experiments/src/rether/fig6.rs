//! RETHER §4.3, Fig. 6: non-real-time access delay against the number of sessions, the total
//! reservation held constant (8, 16, 24 and 32 KB per 33.3 ms frame), on the heavily loaded
//! five-station segment of Fig. 5 ([`super::heavily_loaded`]); sessions are spread over three
//! stations (a station with two senders is visited twice per cycle, §2.2.3). The paper: the
//! number of sessions matters only when the reservation is very high (32 KB, about 75 %) — the
//! token passing overhead.

use serde_json::{json, Value};

use super::{heavily_loaded, heavy_point, simulate, Hardware, Params};

/// Runs the figure.
pub fn run(p: &Params) -> anyhow::Result<Value> {
    let counts: Vec<usize> = if p.quick {
        vec![1, 4, 8]
    } else {
        (1..=8).collect()
    };
    let mut curves = Vec::new();
    for total_kb in [8u32, 16, 24, 32] {
        let mut points = Vec::new();
        for &sessions in &counts {
            let size = total_kb * 1000 / sessions as u32;
            let list: Vec<(usize, u32)> = (0..sessions).map(|s| (s % 3, size)).collect();
            let r = simulate(&heavily_loaded(&list, p, p.seed))?;
            let mut point = heavy_point(&r, sessions, p.window);
            if let Value::Object(m) = &mut point {
                m.insert("sessions".into(), json!(sessions));
                m.insert("session_kb".into(), json!(size as f64 / 1000.0));
            }
            points.push(point);
        }
        curves.push(json!({
            "total_kb": total_kb,
            "reserved_percent": super::r3(f64::from(total_kb) * 8000.0 * 30.0 / 1e7 * 100.0),
            "points": points,
        }));
    }
    Ok(json!({
        "figure": "RETHER Fig. 6: NRT access delay against the number of sessions, constant total reservation",
        "hardware": Hardware::PAPER.label(),
        "stations": 5,
        "paper": {
            "claim": "the number of sessions is noticeable only at a very high total reservation (32 KB per frame, about 75 %)"
        },
        "curves": curves,
    }))
}
