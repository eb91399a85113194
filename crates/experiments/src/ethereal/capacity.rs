//! EtheReal §4.3: how many real-time connections a switch admits against its CPU budget. For
//! each `cpu_budget_percent` the lab's switch is restarted with that budget (and the configured or
//! calibrated `cpu_cost_per_connection`); one client then opens tiny reservations a → b through
//! the host daemon (JSON-lines protocol, docs/rtcd.md, pipelined) until one is refused, and we
//! record how many were admitted, the refusal code and reason, and compare with the prediction
//! budget × cycle / cost (the paper: 10 ms / 5.99 µs = 1669).

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use rtlan_lab::Lab;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::kit::lab::up_file;
use crate::kit::measure::{loadavg, now_utc};
use crate::kit::run::Run;
use crate::labkit::{Guarded, Rtcd};

/// The scenario file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Scenario {
    topology: PathBuf,
    budgets_percent: Vec<u32>,
    quick_budgets_percent: Vec<u32>,
    /// Values of the switch's `cpu_cost_per_connection`: `"calibrate"` or a duration (`"1us"`).
    cpu_costs: Vec<String>,
    rate_bps: u64,
    max_packet: u16,
    /// The connections' burst, bytes (`max_burst`, its earlier name, is read too).
    #[serde(rename = "burst_bytes", alias = "max_burst")]
    max_burst: u32,
    /// Stop opening after this many (bounds the run time).
    max_open: u64,
    /// Opens in flight at once.
    window: u64,
}

/// Restarts s1 with `budget` and `cost` (see [`crate::kit::lab::restart_switch`]).
fn restart_switch(run: &Run, lab: &Lab, budget: u32, cost: &str) -> anyhow::Result<Guarded> {
    crate::kit::lab::restart_switch(&run.exe, lab, &format!("budget{budget}"), |config| {
        config["cpu_budget_percent"] = json!(budget);
        config["cpu_cost_per_connection"] = json!(cost);
    })
}

/// The outcome of opening reservations until refused.
#[derive(Debug, Default)]
struct Outcome {
    admitted: u64,
    refusal: Option<Value>,
    revoked: u64,
    seconds: f64,
}

/// Opens reservations a → b through the daemon at `socket` until the first refusal (or
/// `max_open`), `window` requests in flight.
fn open_until_refused(
    socket: &Path,
    dst: &str,
    sc: &Scenario,
) -> anyhow::Result<(Outcome, UnixStream)> {
    let stream = UnixStream::connect(socket).context("connecting to rtcd")?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut writer = stream.try_clone()?;
    let mut lines = BufReader::new(stream).lines();
    writeln!(writer, "{}", json!({"op": "register", "id": 1}))?;
    let reply: Value = serde_json::from_str(&lines.next().context("rtcd closed")??)?;
    anyhow::ensure!(reply["ok"] == json!(true), "register failed: {reply}");
    let started = Instant::now();
    let mut out = Outcome::default();
    let (mut issued, mut answered) = (0u64, 0u64);
    let mut stop = false;
    loop {
        while !stop && issued < sc.max_open && issued - answered < sc.window {
            let port = 1024 + issued % 64_000;
            let req = json!({"op": "open", "id": issued + 2, "dst_ip": dst, "dst_port": port,
                "src_port": 0, "rate_bps": sc.rate_bps, "burst_bytes": sc.max_burst,
                "max_packet": sc.max_packet});
            writeln!(writer, "{req}")?;
            issued += 1;
        }
        if answered == issued {
            break;
        }
        let line = lines.next().context("rtcd closed the connection")??;
        let reply: Value = serde_json::from_str(&line)?;
        if reply["event"] == json!("revoked") {
            out.revoked += 1;
            continue;
        }
        answered += 1;
        if reply["ok"] == json!(true) {
            out.admitted += 1;
        } else {
            stop = true;
            if out.refusal.is_none() {
                out.refusal = Some(reply);
            }
        }
    }
    out.seconds = started.elapsed().as_secs_f64();
    // The caller keeps the client connected until it has read the switch's state: closing it
    // releases every connection.
    Ok((out, writer))
}

/// Runs the experiment; returns the path of results.json.
pub fn run(run: &Run) -> anyhow::Result<PathBuf> {
    let sc: Scenario = run.load()?;
    let budgets = if run.quick {
        &sc.quick_budgets_percent
    } else {
        &sc.budgets_percent
    };
    eprintln!("capacity: waiting for the lab lock");
    let _serial = rtlan_lab::serial_lock()?;
    let load_before = loadavg();
    let mut points = Vec::new();
    for cost in &sc.cpu_costs {
        for &budget in budgets {
            let lab = up_file(&run.exe, &sc.topology, "cap")?;
            let result = run_budget(run, &sc, &lab, budget, cost);
            lab.down()?;
            let point = result?;
            eprintln!("capacity: {point}");
            points.push(point);
        }
    }
    let results = json!({
        "experiment": "capacity",
        "quick": run.quick,
        "date": now_utc(),
        "load_before": load_before,
        "rate_bps": sc.rate_bps,
        "max_packet": sc.max_packet,
        "burst_bytes": sc.max_burst,
        "max_open": sc.max_open,
        "paper_connections": 1669,
        "paper_cost_per_connection_ns": 5990,
        "criterion_cost_per_connection_ns": 96,
        "points": points,
    });
    run.finish(&results)
}

fn run_budget(
    run: &Run,
    sc: &Scenario,
    lab: &Lab,
    budget: u32,
    cost: &str,
) -> anyhow::Result<Value> {
    let switch = restart_switch(run, lab, budget, cost)?;
    let ctl = lab.switch_socket("s1").context("s1 is an rtlan switch")?;
    // gc_thresh* exist only in the initial namespace (which we never touch); since Linux 4.19
    // permanent neighbour entries (rtcd's proxy entries) do not count against them anyway.
    let rtcd = Rtcd::start(&run.exe, lab, "a", "")?;
    let before = rtlan_linux::ctl::request(&ctl, "stats")?;
    let cost_ns = before["admission"]["cpu_cost_per_connection_ns"]
        .as_f64()
        .context("stats has admission.cpu_cost_per_connection_ns")?;
    let cycle_ns = before["sched_ports"][0]["cycle_ns"]
        .as_f64()
        .unwrap_or(10e6);
    let predicted = (f64::from(budget) / 100.0 * cycle_ns / cost_ns).floor();
    eprintln!("capacity: budget {budget} %, cost {cost_ns} ns, predicted {predicted} connections");
    let dst = lab.host_ip("b")?.to_string();
    let (outcome, client) = open_until_refused(rtcd.socket(), &dst, sc)?;
    // Let a few cycles pass with every connection installed, then read the live scheduler.
    std::thread::sleep(Duration::from_secs(2));
    let after = rtlan_linux::ctl::request(&ctl, "stats")?;
    let sched: Vec<Value> = after["sched_ports"]
        .as_array()
        .map(|ports| {
            ports
                .iter()
                .map(|p| {
                    json!({"port": p["port"], "connections": p["connections"],
                    "cycles": p["sched"]["cycles"], "cycle_overruns": p["sched"]["cycle_overruns"],
                    "cycles_skipped": p["sched"]["cycles_skipped"],
                    "late_max_ns": p["sched"]["late_max_ns"]})
                })
                .collect()
        })
        .unwrap_or_default();
    drop(client);
    drop(rtcd);
    drop(switch);
    Ok(json!({
        "budget_percent": budget,
        "cpu_cost_per_connection": cost,
        "cost_per_connection_ns": cost_ns,
        "cycle_ns": cycle_ns,
        "predicted": predicted,
        "max_connections_cpu": after["admission"]["max_connections_cpu"],
        "admitted": outcome.admitted,
        "switch_connections": after["admission"]["connections"],
        "refusal": outcome.refusal,
        "revoked": outcome.revoked,
        "open_seconds": outcome.seconds,
        "setups_per_second": outcome.admitted as f64 / outcome.seconds.max(1e-9),
        "rt_ports": after["rt_ports"],
        "buffer_booked_bytes": after["admission"]["buffer_booked_bytes"],
        "sched_ports": sched,
    }))
}
