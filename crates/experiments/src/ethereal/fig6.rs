//! EtheReal Fig. 6 (§4.2): inter-arrival times of a 50 Mbit/s reserved stream at the switch's
//! input (tcpdump with nanosecond kernel timestamps on the switch port facing the sender, inside
//! the switch's namespace) and at the destination (`rtlan recv --arrivals`), without and with an
//! `iperf3` TCP flow from the sending host.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::kit::lab::{iperf3_client, iperf3_server, spawn, up_pair};
use crate::kit::measure::{loadavg, read_arrivals, summarize_intervals};
use crate::kit::run::Run;
use crate::labkit::{Receiver, Rtcd, Stream};

#[derive(Debug, Deserialize)]
struct Scenario {
    /// Link rate (tc spelling).
    link_rate: String,
    /// Reserved rate, Mbit/s, and UDP payload bytes.
    rt_mbit: u64,
    size: u16,
    /// Seconds of real-time stream (and with --quick).
    seconds: f64,
    quick_seconds: f64,
    /// How many inter-arrival samples per series go into results.json (from the start).
    keep_samples: usize,
}

/// Runs the experiment; returns the path of results.json.
pub fn run(run: &Run) -> anyhow::Result<PathBuf> {
    let sc: Scenario = run.load()?;
    let _lock = rtlan_lab::serial_lock()?;
    let load_before = loadavg();
    let mut cases = Vec::new();
    for with_tcp in [false, true] {
        eprintln!("fig6: with TCP = {with_tcp}");
        cases.push(one_case(run, &sc, with_tcp)?);
    }
    let results = json!({
        "experiment": "fig6", "quick": run.quick, "rt_mbit": sc.rt_mbit, "size": sc.size,
        "link_rate": sc.link_rate, "loadavg_before": load_before, "loadavg_after": loadavg(),
        "cases": cases,
    });
    run.finish(&results)
}

fn one_case(run: &Run, sc: &Scenario, with_tcp: bool) -> anyhow::Result<Value> {
    let seconds = if run.quick {
        sc.quick_seconds
    } else {
        sc.seconds
    };
    let name = if with_tcp { "fg56f6t" } else { "fg56f6" };
    let lab = up_pair(&run.exe, name, "rtlan", &sc.link_rate)?;
    let rtcd = Rtcd::start(&run.exe, &lab, "a", "")?;
    let b_ip = lab.host_ip("b")?;
    let pcap = lab.state_dir().join("input.pcap");
    let arrivals = lab.state_dir().join("arrivals.txt");
    // Port p0 of s1 faces host a (the first link).
    let tcpdump = spawn(
        &lab,
        "s1",
        &[
            "tcpdump".to_string(),
            "-i".to_string(),
            "p0".to_string(),
            "-n".to_string(),
            "-B".to_string(),
            "16384".to_string(),
            "--time-stamp-precision".to_string(),
            "nano".to_string(),
            "-w".to_string(),
            pcap.display().to_string(),
            "udp and dst port 5004".to_string(),
        ],
    )?;
    let total = Duration::from_secs_f64(seconds + 3.0);
    let arrivals_arg = arrivals.display().to_string();
    let receiver = Receiver::start(
        &run.exe,
        &lab,
        "b",
        5004,
        total,
        &["--arrivals", &arrivals_arg],
    )?;
    let tcp = if with_tcp {
        let server = spawn(&lab, "b", &iperf3_server())?;
        std::thread::sleep(Duration::from_millis(300));
        let client = spawn(&lab, "a", &iperf3_client(b_ip, seconds + 2.0))?;
        std::thread::sleep(Duration::from_secs(1));
        Some((server, client))
    } else {
        std::thread::sleep(Duration::from_millis(500));
        None
    };
    let stream = Stream {
        to: format!("{b_ip}:5004"),
        rate: format!("{}mbit", sc.rt_mbit),
        size: sc.size,
        duration: Duration::from_secs_f64(seconds),
        reserve: Some(rtcd.socket().to_path_buf()),
        shaping: None,
    };
    let sent = stream.run(&run.exe, &lab, "a")?;
    let tcp_bps = match tcp {
        Some((server, client)) => {
            let out = client.finish(Duration::from_secs(5))?.0;
            drop(server);
            let v: Value = serde_json::from_str(&out).unwrap_or(Value::Null);
            v.pointer("/end/sum_received/bits_per_second").cloned()
        }
        None => None,
    };
    std::thread::sleep(Duration::from_millis(300));
    drop(tcpdump.stop());
    let report = receiver.report()?;
    let input = pcap_times(&lab, &pcap)?;
    let mut dest: Vec<u64> = read_arrivals(&arrivals)?.iter().map(|a| a.1).collect();
    dest.sort_unstable();
    drop(rtcd);
    drop(lab);
    Ok(json!({
        "with_tcp": with_tcp, "tcp_bps": tcp_bps, "send": sent, "recv": report,
        "input": series(&input, sc.keep_samples), "destination": series(&dest, sc.keep_samples),
    }))
}

/// Capture times (ns) of the frames in `pcap`, read back with `tcpdump -r -tt`.
fn pcap_times(lab: &rtlan_lab::Lab, pcap: &Path) -> anyhow::Result<Vec<u64>> {
    let out = lab
        .exec(
            "s1",
            &[
                "tcpdump",
                "-r",
                &pcap.display().to_string(),
                "-n",
                "-tt",
                "--time-stamp-precision",
                "nano",
            ],
        )?
        .stderr(std::process::Stdio::null())
        .output()
        .context("tcpdump -r")?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut times = Vec::new();
    for line in text.lines() {
        let Some(stamp) = line.split_whitespace().next() else {
            continue;
        };
        let Some((s, frac)) = stamp.split_once('.') else {
            continue;
        };
        if let (Ok(s), Ok(ns)) = (s.parse::<u64>(), frac.parse::<u64>()) {
            times.push(s * 1_000_000_000 + ns);
        }
    }
    Ok(times)
}

/// Inter-arrival summary, the first `keep` intervals (µs) and a histogram-ready full list of
/// intervals in µs (rounded to 0.1 µs).
fn series(times: &[u64], keep: usize) -> Value {
    let gaps: Vec<u64> = times
        .windows(2)
        .map(|w| w[1].saturating_sub(w[0]))
        .collect();
    let us: Vec<f64> = gaps
        .iter()
        .map(|&g| (g as f64 / 100.0).round() / 10.0)
        .collect();
    json!({
        "packets": times.len(),
        "summary": summarize_intervals(&gaps),
        "first_us": us.iter().take(keep).collect::<Vec<_>>(),
        "all_us": us,
    })
}
