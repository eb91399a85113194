//! EtheReal Table 1 (§4.2): accuracy of the host shaper's timer under CPU load. A reserved
//! stream from host a is shaped by RTTR's leaky bucket (§3.2) with a nominal tick of 1 ms or
//! 10 ms while 0–5 busy-loop processes (spawned here, killed by PID) compete for the CPU;
//! `rtlan send --json` reports the measured tick intervals `T_m`.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use crate::kit::lab::up_pair;
use crate::kit::measure::loadavg;
use crate::kit::run::Run;
use crate::labkit::{Guarded, Receiver, Rtcd, Stream};

#[derive(Debug, Deserialize)]
struct Scenario {
    /// Link rate (tc spelling).
    link_rate: String,
    /// Reserved rate (tc spelling) and UDP payload bytes of the shaped stream.
    rate: String,
    size: u16,
    /// Nominal ticks, ms.
    ticks_ms: Vec<u64>,
    /// Numbers of busy processes.
    busy: Vec<u32>,
    /// Seconds per point (and with --quick).
    seconds: f64,
    quick_seconds: f64,
    /// With --quick only these numbers of busy processes.
    quick_busy: Vec<u32>,
}

/// Runs the experiment; returns the path of results.json.
pub fn run(run: &Run) -> anyhow::Result<PathBuf> {
    let sc: Scenario = run.load()?;
    let _lock = rtlan_lab::serial_lock()?;
    let load_before = loadavg();
    let lab = up_pair(&run.exe, "fg56t1", "rtlan", &sc.link_rate)?;
    let rtcd = Rtcd::start(&run.exe, &lab, "a", "")?;
    let b_ip = lab.host_ip("b")?;
    let seconds = if run.quick {
        sc.quick_seconds
    } else {
        sc.seconds
    };
    let busy_list = if run.quick { &sc.quick_busy } else { &sc.busy };
    let mut rows = Vec::new();
    for &tick in &sc.ticks_ms {
        for &busy in busy_list {
            eprintln!("table1: tick {tick} ms, {busy} busy processes");
            let hogs: Vec<Guarded> = (0..busy)
                .map(|_| {
                    Command::new("/bin/sh")
                        .args(["-c", "while :; do :; done"])
                        .stdin(Stdio::null())
                        .stdout(Stdio::null())
                        .spawn()
                        .map(|c| Guarded::from_child(c, "busy loop"))
                })
                .collect::<Result<_, _>>()?;
            let duration = Duration::from_secs_f64(seconds);
            let receiver = Receiver::start(
                &run.exe,
                &lab,
                "b",
                5004,
                duration + Duration::from_secs(1),
                &[],
            )?;
            std::thread::sleep(Duration::from_millis(200));
            let load = loadavg();
            let stream = Stream {
                to: format!("{b_ip}:5004"),
                rate: sc.rate.clone(),
                size: sc.size,
                duration,
                reserve: Some(rtcd.socket().to_path_buf()),
                shaping: None,
            };
            let tick = ["--shaping-interval".to_string(), format!("{tick}ms")];
            let sender = stream.start_with(&run.exe, &lab, "a", &tick)?;
            let send = sender.finish_json(duration + Duration::from_secs(10));
            drop(hogs);
            let recv = receiver.report()?;
            let send = send?;
            rows.push(json!({
                "tick_ms": tick, "busy": busy, "loadavg": load,
                "tick": send.get("tick"), "send": send, "recv_wire_bps": recv.get("wire_bps"),
            }));
        }
    }
    drop(rtcd);
    drop(lab);
    let results = json!({
        "experiment": "table1", "quick": run.quick, "seconds": seconds, "rate": sc.rate,
        "size": sc.size, "cpus": std::thread::available_parallelism().map(|n| n.get()).ok(),
        "loadavg_before": load_before, "loadavg_after": loadavg(), "rows": rows,
        "paper_10ms": [
            {"busy": 1, "mean_ms": 9.99, "stddev_ms": 0.12, "max_ms": 11.25},
            {"busy": 2, "mean_ms": 10.00, "stddev_ms": 0.54, "max_ms": 18.46},
            {"busy": 3, "mean_ms": 9.99, "stddev_ms": 0.64, "max_ms": 19.78},
            {"busy": 4, "mean_ms": 10.00, "stddev_ms": 0.51, "max_ms": 20.44},
            {"busy": 5, "mean_ms": 10.03, "stddev_ms": 1.14, "max_ms": 27.54},
        ],
    });
    run.finish(&results)
}
