//! EtheReal Fig. 5 (§4.2, preemptive discard of §3.3): host a sends an `iperf3` TCP flow and a
//! reserved 30 or 70 Mbit/s connection to host b over one switch; 80 ms sliding-window rates of
//! both flows as seen at b. On the Linux bridge the real-time flow is plain paced UDP.
//!
//! Measurement: `rtlan recv --arrivals` logs every real-time datagram at b; a sampler reads b's
//! `eth0` counters (`/proc/<pid>/net/dev` of a process in b's namespace) every `step`; TCP's rate
//! in a window is b's total received wire rate minus the real-time datagrams' wire rate.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use rtlan_core::shaper::wire_bytes;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::kit::lab::{iperf3_client, iperf3_server, restart_switch, spawn, up_pair};
use crate::kit::measure::{loadavg, read_arrivals, realtime_ns};
use crate::kit::run::Run;
use crate::labkit::{Receiver, Rtcd, Stream};

#[derive(Debug, Deserialize)]
struct Scenario {
    /// Link rate (tc spelling).
    link_rate: String,
    /// Reserved (rtlan) or offered (bridge) real-time rates, Mbit/s.
    rt_mbit: Vec<u64>,
    /// `realtime_cap_percent` for runs whose rate exceeds the default 60 %.
    raised_cap_percent: u8,
    /// UDP payload bytes.
    size: u16,
    /// Whole run (TCP from 0 to here), seconds; the real-time flow from `rt_start_s` for
    /// `rt_len_s`.
    duration_s: f64,
    rt_start_s: f64,
    rt_len_s: f64,
    /// The same for --quick.
    quick_duration_s: f64,
    quick_rt_start_s: f64,
    quick_rt_len_s: f64,
    /// Sliding window and sampling step, ms.
    window_ms: u64,
    step_ms: u64,
}

/// Runs the experiment; returns the path of results.json.
pub fn run(run: &Run) -> anyhow::Result<PathBuf> {
    let sc: Scenario = run.load()?;
    let _lock = rtlan_lab::serial_lock()?;
    let load_before = loadavg();
    let mut cases = Vec::new();
    for kind in ["rtlan", "linux-bridge"] {
        for &mbit in &sc.rt_mbit {
            eprintln!("fig5: {kind}, {mbit} Mbit/s");
            cases.push(one_case(run, &sc, kind, mbit)?);
        }
    }
    let results = json!({
        "experiment": "fig5", "quick": run.quick, "loadavg_before": load_before,
        "loadavg_after": loadavg(), "window_ms": sc.window_ms, "step_ms": sc.step_ms,
        "link_rate": sc.link_rate, "size": sc.size, "cases": cases,
    });
    run.finish(&results)
}

fn one_case(run: &Run, sc: &Scenario, kind: &str, mbit: u64) -> anyhow::Result<Value> {
    let (duration, rt_start, rt_len) = if run.quick {
        (sc.quick_duration_s, sc.quick_rt_start_s, sc.quick_rt_len_s)
    } else {
        (sc.duration_s, sc.rt_start_s, sc.rt_len_s)
    };
    let tag = if kind == "rtlan" { "r" } else { "b" };
    let lab = up_pair(&run.exe, &format!("fg56{tag}{mbit}"), kind, &sc.link_rate)?;
    let link_bps = rtlan_core::units::parse_rate(&sc.link_rate)?;
    let needs_cap = kind == "rtlan" && mbit * 1_000_000 * 100 > link_bps * 60;
    let _switch = if needs_cap {
        // The lab topology format has no `realtime_cap_percent`.
        Some(restart_switch(&run.exe, &lab, "cap", |config| {
            config["realtime_cap_percent"] = json!(sc.raised_cap_percent);
        })?)
    } else {
        None
    };
    let rtcd = if kind == "rtlan" {
        let extra = if needs_cap {
            format!("realtime_cap_percent = {}", sc.raised_cap_percent)
        } else {
            String::new()
        };
        Some(Rtcd::start(&run.exe, &lab, "a", &extra)?)
    } else {
        None
    };
    let b_ip = lab.host_ip("b")?;
    let arrivals = lab.state_dir().join("arrivals.txt");
    let total = Duration::from_secs_f64(duration + 1.0);
    let arrivals_arg = arrivals.display().to_string();
    let receiver = Receiver::start(
        &run.exe,
        &lab,
        "b",
        5004,
        total,
        &["--arrivals", &arrivals_arg],
    )?;
    let server = spawn(&lab, "b", &iperf3_server())?;
    std::thread::sleep(Duration::from_millis(300));
    let pid = server.id().context("iperf3 server exited")?;
    let t0 = realtime_ns();
    let sampler = std::thread::spawn(move || sample_counters(pid, total));
    let client = spawn(&lab, "a", &iperf3_client(b_ip, duration))?;
    std::thread::sleep(Duration::from_secs_f64(rt_start));
    let rt_begin_ns = realtime_ns();
    let stream = Stream {
        to: format!("{b_ip}:5004"),
        rate: format!("{mbit}mbit"),
        size: sc.size,
        duration: Duration::from_secs_f64(rt_len),
        reserve: rtcd.as_ref().map(|r| r.socket().to_path_buf()),
        shaping: None,
    };
    let sent = stream.run(&run.exe, &lab, "a")?;
    let rt_end_ns = realtime_ns();
    let iperf = client.finish(Duration::from_secs_f64(duration + 5.0))?.0;
    let report = receiver.report()?;
    let samples = sampler
        .join()
        .map_err(|_| anyhow::anyhow!("sampler panicked"))?;
    drop(server);
    let rt = read_arrivals(&arrivals)?;
    drop(lab);
    let iperf: Value = serde_json::from_str(&iperf).unwrap_or(Value::Null);
    let series = windows(sc, &samples, &rt, sc.size, t0);
    Ok(json!({
        "kind": kind, "rt_mbit": mbit, "cap_raised": needs_cap,
        "rt_start_s": (rt_begin_ns.saturating_sub(t0)) as f64 / 1e9,
        "rt_end_s": (rt_end_ns.saturating_sub(t0)) as f64 / 1e9,
        "send": sent, "recv": report,
        "tcp_receiver_bps": iperf.pointer("/end/sum_received/bits_per_second"),
        "tcp_retransmits": iperf.pointer("/end/sum_sent/retransmits"),
        "series": series,
    }))
}

/// `(realtime ns, rx bytes, rx packets)` of `eth0` in `pid`'s namespace every 10 ms for `total`
/// (until the process is gone).
fn sample_counters(pid: u32, total: Duration) -> Vec<(u64, u64, u64)> {
    let path = PathBuf::from(format!("/proc/{pid}/net/dev"));
    let start = Instant::now();
    let mut out = Vec::new();
    let mut next = start;
    while start.elapsed() < total {
        let Ok(text) = std::fs::read_to_string(&path) else {
            break;
        };
        let now = realtime_ns();
        if let Some(line) = text.lines().find(|l| l.trim_start().starts_with("eth0:")) {
            let f: Vec<u64> = line
                .split(':')
                .nth(1)
                .unwrap_or("")
                .split_whitespace()
                .filter_map(|x| x.parse().ok())
                .collect();
            if f.len() >= 2 {
                out.push((now, f[0], f[1]));
            }
        }
        next += Duration::from_millis(10);
        if let Some(d) = next.checked_duration_since(Instant::now()) {
            std::thread::sleep(d);
        }
    }
    out
}

/// Per sample `i` with a sample `j` one window earlier: total wire rate over `(t_j, t_i]`, the
/// real-time datagrams' wire rate in the same interval, and TCP = total − real-time.
fn windows(
    sc: &Scenario,
    samples: &[(u64, u64, u64)],
    rt: &[(u64, u64, u64)],
    size: u16,
    t0: u64,
) -> Value {
    let per = wire_bytes(usize::from(size));
    let mut times: Vec<u64> = rt.iter().map(|a| a.1).collect();
    times.sort_unstable();
    let lag = usize::try_from((sc.window_ms / sc.step_ms.max(1)).max(1)).unwrap_or(8);
    let (mut t, mut rt_mbps, mut tcp_mbps) = (Vec::new(), Vec::new(), Vec::new());
    for i in lag..samples.len() {
        let (ti, bi, pi) = samples[i];
        let (tj, bj, pj) = samples[i - lag];
        if ti <= tj {
            continue;
        }
        let secs = (ti - tj) as f64 / 1e9;
        // rx_bytes counts frames without FCS; whole frames add FCS + preamble + gap (24).
        let total_wire = (bi - bj + 24 * (pi - pj)) as f64 * 8.0 / secs;
        let n_rt = times.partition_point(|&x| x <= ti) - times.partition_point(|&x| x <= tj);
        let rt_wire = (n_rt as u64 * per) as f64 * 8.0 / secs;
        t.push(ti.saturating_sub(t0) as f64 / 1e9);
        rt_mbps.push(rt_wire / 1e6);
        tcp_mbps.push((total_wire - rt_wire).max(0.0) / 1e6);
    }
    json!({"t_s": t, "rt_mbps": rt_mbps, "tcp_mbps": tcp_mbps})
}
