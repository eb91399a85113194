//! EtheReal §4.2, Fig. 7: latency of light non-real-time traffic against the real-time load X
//! Mbit/s (c → b) sharing the switch's output port towards b: reserved connections on the rtlan
//! switch, plain paced UDP of the same rate on the Linux bridge. The probe is `ping` a → b, one
//! 64-byte echo per millisecond (round-trip times; the load only lies on the a → b direction). A
//! run with a and b on one cable (no switch, X = 0) gives the path without a switch, so the delay
//! per switch traversal at light load = (RTT through the switch − RTT without it) / 2.
//!
//! `rtlan send`/`recv` probes are not used: the plain sender stamps a probe before its pacer
//! waits, so at 1 probe/ms its one-way delays include up to a millisecond of its own pacing.

use std::path::PathBuf;
use std::time::Duration;

use rtlan_core::stats::nearest_rank;
use rtlan_lab::Lab;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::kit::lab::{addr, up_file};
use crate::kit::measure::{loadavg, now_utc};
use crate::kit::run::Run;
use crate::labkit::{Receiver, Rtcd, Stream};

/// The scenario file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Scenario {
    topology_rtlan: PathBuf,
    topology_bridge: PathBuf,
    topology_direct: PathBuf,
    rt_mbit: Vec<u32>,
    quick_rt_mbit: Vec<u32>,
    rt_payload: u16,
    probe_payload: u16,
    probe_interval_us: u64,
    seconds: f64,
    quick_seconds: f64,
}

/// Real-time stream port at b.
const RT_PORT: u16 = 5001;

/// Runs the experiment; returns the path of results.json.
pub fn run(run: &Run) -> anyhow::Result<PathBuf> {
    let sc: Scenario = run.load()?;
    let (loads, seconds) = if run.quick {
        (&sc.quick_rt_mbit, sc.quick_seconds)
    } else {
        (&sc.rt_mbit, sc.seconds)
    };
    let duration = Duration::from_secs_f64(seconds);
    eprintln!("fig7: waiting for the lab lock");
    let _serial = rtlan_lab::serial_lock()?;
    let load_before = loadavg();
    let mut variants = Vec::new();
    for (variant, topology, loads) in [
        ("direct", &sc.topology_direct, &vec![0]),
        ("rtlan", &sc.topology_rtlan, loads),
        ("bridge", &sc.topology_bridge, loads),
    ] {
        let lab = up_file(&run.exe, topology, "fig7")?;
        let result = run_variant(run, &sc, &lab, variant, loads, duration);
        lab.down()?;
        variants.push(json!({"variant": variant, "points": result?}));
    }
    let results = json!({
        "experiment": "fig7",
        "quick": run.quick,
        "seconds_per_point": seconds,
        "probe_payload": sc.probe_payload,
        "probe_interval_us": sc.probe_interval_us,
        "rt_payload": sc.rt_payload,
        "date": now_utc(),
        "load_before": load_before,
        "variants": variants,
    });
    run.finish(&results)
}

fn run_variant(
    run: &Run,
    sc: &Scenario,
    lab: &Lab,
    variant: &str,
    loads: &[u32],
    duration: Duration,
) -> anyhow::Result<Vec<Value>> {
    let rtcd = if variant == "rtlan" {
        Some(Rtcd::start(&run.exe, lab, "c", "")?)
    } else {
        None
    };
    let interval = Duration::from_micros(sc.probe_interval_us.max(1));
    let expected = u64::try_from(duration.as_micros() / interval.as_micros()).unwrap_or(0);
    let mut out = Vec::new();
    for &x in loads {
        eprintln!("fig7: {variant}, real-time load {x} Mbit/s");
        let lead = Duration::from_millis(800);
        let rt_rx = if x > 0 {
            Some(Receiver::start(
                &run.exe,
                lab,
                "b",
                RT_PORT,
                duration + lead + Duration::from_secs(2),
                &[],
            )?)
        } else {
            None
        };
        std::thread::sleep(Duration::from_millis(300));
        let rt_tx = if x > 0 {
            let stream = Stream {
                to: addr(lab, "b", RT_PORT)?,
                rate: format!("{x}mbit"),
                size: sc.rt_payload,
                duration: duration + lead + Duration::from_millis(500),
                reserve: rtcd.as_ref().map(|d| d.socket().to_path_buf()),
                shaping: rtcd.as_ref().map(|_| "leaky".to_string()),
            };
            Some(stream.start(&run.exe, lab, "c")?)
        } else {
            None
        };
        std::thread::sleep(lead);
        let rtts = ping(lab, duration, interval, sc.probe_payload)?;
        let rt_sender = match rt_tx {
            Some(tx) => {
                let (out, ok) = tx.finish(duration + Duration::from_secs(10))?;
                json!({"ok": ok, "summary": serde_json::from_str::<Value>(out.trim()).ok()})
            }
            None => Value::Null,
        };
        let rt = match rt_rx {
            Some(rx) => rx.report()?,
            None => Value::Null,
        };
        let summary = summarize(&rtts, expected);
        eprintln!(
            "fig7: {variant} X={x}: ping RTT µs {summary} (rt delivered {} bit/s)",
            rt["wire_bps"]
        );
        out.push(json!({
            "rt_mbit": x,
            "rtt_us": summary,
            "rt_wire_bps": rt["wire_bps"],
            "rt_loss_pct": rt["loss_pct"],
            "rt_sender": rt_sender,
        }));
    }
    drop(rtcd);
    Ok(out)
}

/// Pings b from a every `interval` for `duration` with `payload`-byte ICMP payloads; returns
/// the round-trip times in µs, one per reply.
fn ping(
    lab: &Lab,
    duration: Duration,
    interval: Duration,
    payload: u16,
) -> anyhow::Result<Vec<f64>> {
    let count = (duration.as_micros() / interval.as_micros().max(1))
        .max(1)
        .to_string();
    let interval = format!("{:.3}", interval.as_secs_f64());
    let size = payload.to_string();
    let b = lab.host_ip("b")?.to_string();
    let out = lab
        .exec(
            "a",
            &[
                "ping", "-n", "-c", &count, "-i", &interval, "-s", &size, "-W", "1", &b,
            ],
        )?
        .output()?;
    Ok(parse_rtts(&String::from_utf8_lossy(&out.stdout)))
}

/// The `time=X ms` values of ping's per-reply lines, in µs.
fn parse_rtts(text: &str) -> Vec<f64> {
    text.lines()
        .filter_map(|l| {
            l.split_once("time=")?
                .1
                .split_whitespace()
                .next()?
                .parse::<f64>()
                .ok()
        })
        .map(|ms| ms * 1000.0)
        .collect()
}

/// Min / median / p99 / max (nearest rank) and the reply count of `rtts`.
fn summarize(rtts: &[f64], expected: u64) -> Value {
    let mut v = rtts.to_vec();
    v.sort_by(f64::total_cmp);
    let rank = |q: f64| nearest_rank(&v, q).unwrap_or(f64::NAN);
    json!({
        "replies": v.len(),
        "expected": expected,
        "min": rank(0.0),
        "p50": rank(0.5),
        "p99": rank(0.99),
        "max": rank(1.0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ping_lines_and_summarizes() {
        let text = "PING 198.18.0.2 (198.18.0.2) 64(92) bytes of data.\n\
            72 bytes from 198.18.0.2: icmp_seq=1 ttl=64 time=0.045 ms\n\
            72 bytes from 198.18.0.2: icmp_seq=2 ttl=64 time=1.20 ms\n\
            72 bytes from 198.18.0.2: icmp_seq=3 ttl=64 time=0.050 ms\n\
            rtt min/avg/max/mdev = 0.045/0.431/1.200/0.5 ms\n";
        let rtts = parse_rtts(text);
        assert_eq!(rtts.len(), 3);
        let s = summarize(&rtts, 3);
        assert_eq!(s["p50"], json!(50.0));
        assert_eq!(s["max"], json!(1200.0));
        assert_eq!(s["min"], json!(45.0));
        assert_eq!(s["expected"], json!(3));
    }
}
