//! EtheReal §4.3: how many real-time connections a switch admits against its CPU budget. For
//! each `cpu_budget_percent` the lab's switch is restarted with that budget (and the configured or
//! calibrated `cpu_cost_per_connection`); one client then opens tiny reservations a → b through
//! the host daemon (JSON-lines protocol, docs/rtcd.md, pipelined) until one is refused, and we
//! record how many were admitted, the refusal code and reason, and compare with the prediction
//! budget × cycle / cost (the paper: 10 ms / 5.99 µs = 1669).

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use rtlan::labkit::Rtcd;
use rtlan_lab::Lab;
use serde::Deserialize;
use serde_json::{json, Value};

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
    max_burst: u32,
    /// Stop opening after this many (bounds the run time).
    max_open: u64,
    /// Opens in flight at once.
    window: u64,
}

/// The UTC time now, ISO 8601 (from `date`; "unknown" if that fails).
pub(super) fn now_utc() -> String {
    std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%dT%H:%M:%SZ"])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".to_string())
}

/// `/proc/loadavg`'s first three fields.
pub(super) fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// A switch process we started; stopped and reaped on drop.
struct SwitchProcess(Child);

impl Drop for SwitchProcess {
    fn drop(&mut self) {
        if let Ok(pid) = libc::pid_t::try_from(self.0.id()) {
            // SAFETY: kill(2) has no memory-safety preconditions; `pid` is our unreaped child.
            unsafe { libc::kill(pid, libc::SIGTERM) };
        }
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Removes JSON nulls (TOML has none) recursively.
fn strip_nulls(v: &mut Value) {
    match v {
        Value::Object(map) => {
            map.retain(|_, x| !x.is_null());
            map.values_mut().for_each(strip_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_nulls),
        _ => {}
    }
}

/// Stops the lab's switch s1 and starts it again with `budget` and `cost`; waits (calibration
/// included) until its control socket answers.
fn restart_switch(
    run: &super::Run,
    lab: &Lab,
    budget: u32,
    cost: &str,
) -> anyhow::Result<SwitchProcess> {
    let socket = lab.switch_socket("s1").context("s1 is an rtlan switch")?;
    let mut config = rtlan_linux::ctl::request(&socket, "config")?;
    strip_nulls(&mut config);
    config["cpu_budget_percent"] = json!(budget);
    config["cpu_cost_per_connection"] = json!(cost);
    let text = toml::to_string(&config).context("configuration as TOML")?;
    let path = lab.state_dir().join(format!("s1-budget{budget}.toml"));
    std::fs::write(&path, text)?;
    let pid = lab.switch_pid("s1").context("s1 runs")?;
    // SAFETY: kill(2) has no memory-safety preconditions; the lab started this switch for us and
    // recorded its PID; it is still running (its socket answered just now).
    unsafe { libc::kill(libc::pid_t::try_from(pid)?, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(5);
    while socket.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    anyhow::ensure!(!socket.exists(), "s1 did not stop");
    let log = std::fs::File::create(lab.state_dir().join(format!("s1-budget{budget}.log")))?;
    let args = [
        run.exe.display().to_string(),
        "switch".to_string(),
        "--config".to_string(),
        path.display().to_string(),
    ];
    let child = lab
        .exec("s1", &args)?
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .context("starting s1")?;
    let process = SwitchProcess(child);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if socket.exists() && rtlan_linux::ctl::request(&socket, "ping").is_ok() {
            return Ok(process);
        }
        anyhow::ensure!(Instant::now() < deadline, "s1 did not come back");
        std::thread::sleep(Duration::from_millis(50));
    }
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
    writeln!(writer, "{}", json!({"op": "register", "tag": 1}))?;
    let reply: Value = serde_json::from_str(&lines.next().context("rtcd closed")??)?;
    anyhow::ensure!(reply["ok"] == json!(true), "register failed: {reply}");
    let started = Instant::now();
    let mut out = Outcome::default();
    let (mut issued, mut answered) = (0u64, 0u64);
    let mut stop = false;
    loop {
        while !stop && issued < sc.max_open && issued - answered < sc.window {
            let port = 1024 + issued % 64_000;
            let req = json!({"op": "open", "tag": issued + 2, "dst_ip": dst, "dst_port": port,
                "src_port": 0, "rate_bps": sc.rate_bps, "max_burst": sc.max_burst,
                "max_packet": sc.max_packet});
            writeln!(writer, "{req}")?;
            issued += 1;
        }
        if answered == issued {
            break;
        }
        let line = lines.next().context("rtcd closed the connection")??;
        let reply: Value = serde_json::from_str(&line)?;
        if reply["tag"] == json!(0) {
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

pub(super) fn run(run: &super::Run) -> anyhow::Result<ExitCode> {
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
            let lab = super::fig4::up_lab(run, &sc.topology, "cap")?;
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
        "max_burst": sc.max_burst,
        "max_open": sc.max_open,
        "paper_connections": 1669,
        "paper_cost_per_connection_ns": 5990,
        "criterion_cost_per_connection_ns": 96,
        "points": points,
    });
    let path = run.write_results(&results)?;
    run.plot(&path)?;
    println!("{}", path.display());
    Ok(ExitCode::SUCCESS)
}

fn run_budget(
    run: &super::Run,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_without_nulls_becomes_toml() {
        let mut config = json!({"name": "s1", "cpu": null, "cpu_budget_percent": 50,
            "port": [{"ifname": "p0", "rate": null}]});
        assert!(toml::to_string(&config).is_err(), "TOML has no null");
        strip_nulls(&mut config);
        let text = toml::to_string(&config).expect("no nulls left");
        assert!(text.contains("cpu_budget_percent = 50"));
        assert!(!text.contains("cpu ="));
        assert!(text.contains("ifname = \"p0\"") && !text.contains("rate"));
    }
}
