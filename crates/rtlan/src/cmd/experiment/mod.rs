//! `rtlan experiment`: reproductions of the papers' figures and tables (DESIGN.md §6). Each
//! experiment reads a scenario file (`experiments/<paper>/<name>/scenario.toml`), runs it in a lab
//! (real namespaces, real tools), writes `results.json` beside the scenario and renders a plot with
//! the `plot.py` there (`/usr/bin/python3` + matplotlib, installed by `scripts/install-deps`). The
//! experiment's `README.md` sets our numbers beside the paper's.

use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::{Args, Subcommand};
use rtlan::labkit::Guarded;
use rtlan_lab::Lab;
use serde_json::Value;

mod capacity;
mod fig4;
mod fig5;
mod fig6;
mod fig7;
mod loser;
mod table1;

/// The experiments.
#[derive(Debug, Subcommand)]
pub(crate) enum ExperimentCommand {
    /// EtheReal Fig. 4: a 50 Mbit/s connection's delivered rate against 1–8 interfering
    /// connections, on rtlan and on the Linux bridge (without and with HTB).
    Fig4(Common),
    /// EtheReal Fig. 5: TCP and a 30 or 70 Mbit/s connection between the same hosts, 80 ms
    /// sliding-window time series.
    Fig5(Common),
    /// EtheReal Fig. 6: inter-arrival times at the switch input and at the destination, with and
    /// without TCP from the sending host.
    Fig6(Common),
    /// EtheReal Fig. 7: non-real-time latency against reserved real-time bandwidth.
    Fig7(Common),
    /// EtheReal Table 1: shaper tick accuracy with 1–5 competing busy processes.
    Table1(Common),
    /// EtheReal §4.3: admitted connections against the CPU budget; scheduler cost per connection.
    Capacity(Common),
    /// Löser/Härtig §4.3: shaped senders through the Linux bridge and rtlan — probe delay
    /// against the network-calculus bounds, sender CPU load against the shaping interval Ts
    /// (Tables 4, 5, Fig. 7) and the switch buffer probe (Table 2).
    Loser(Common),
}

/// Arguments every experiment takes.
#[derive(Debug, Args)]
pub(crate) struct Common {
    /// Scenario file [default: experiments/ethereal/<name>/scenario.toml; loser:
    /// experiments/loser/lab/scenario.toml].
    #[arg(long)]
    scenario: Option<PathBuf>,
    /// Directory for results.json and the plot [default: the scenario's directory].
    #[arg(long)]
    out: Option<PathBuf>,
    /// Shorter runs (fewer points, shorter durations) for a smoke test; results say so.
    #[arg(long)]
    quick: bool,
    /// Skip rendering the plot.
    #[arg(long)]
    no_plot: bool,
}

/// What an experiment runner gets: resolved paths and flags.
#[derive(Debug)]
pub(crate) struct Run {
    /// The scenario file.
    pub(crate) scenario: PathBuf,
    /// Where results.json and the plot go.
    pub(crate) out: PathBuf,
    /// Shorter runs.
    pub(crate) quick: bool,
    /// Render the plot.
    pub(crate) plot: bool,
    /// The rtlan executable (for processes in lab namespaces).
    pub(crate) exe: PathBuf,
}

impl Run {
    fn new(name: &str, common: Common) -> anyhow::Result<Run> {
        let dir = if name == "loser" {
            "experiments/loser/lab".to_string()
        } else {
            format!("experiments/ethereal/{name}")
        };
        let scenario = common
            .scenario
            .unwrap_or_else(|| PathBuf::from(format!("{dir}/scenario.toml")));
        let out = match common.out {
            Some(out) => out,
            None => scenario
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_else(|| PathBuf::from(".")),
        };
        std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
        Ok(Run {
            scenario,
            out,
            quick: common.quick,
            plot: !common.no_plot,
            exe: std::env::current_exe().context("locating the rtlan executable")?,
        })
    }

    /// Reads and parses the scenario file as `T`.
    pub(crate) fn load<T: serde::de::DeserializeOwned>(&self) -> anyhow::Result<T> {
        let text = std::fs::read_to_string(&self.scenario)
            .with_context(|| format!("reading {}", self.scenario.display()))?;
        toml::from_str(&text).with_context(|| format!("parsing {}", self.scenario.display()))
    }

    /// Writes `results.json` (pretty) into the output directory; returns its path.
    pub(crate) fn write_results(&self, results: &serde_json::Value) -> anyhow::Result<PathBuf> {
        let path = self.out.join("results.json");
        let text = serde_json::to_string_pretty(results)?;
        std::fs::write(&path, text + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
        Ok(path)
    }

    /// Runs `plot.py` from the scenario's directory on results.json (`/usr/bin/python3 plot.py
    /// RESULTS OUT_DIR`), unless plotting is off.
    pub(crate) fn plot(&self, results: &Path) -> anyhow::Result<()> {
        if !self.plot {
            return Ok(());
        }
        let script = self
            .scenario
            .parent()
            .unwrap_or_else(|| Path::new("."))
            .join("plot.py");
        let status = std::process::Command::new("/usr/bin/python3")
            .arg(&script)
            .arg(results)
            .arg(&self.out)
            .status()
            .with_context(|| format!("running {}", script.display()))?;
        anyhow::ensure!(status.success(), "{} failed: {status}", script.display());
        Ok(())
    }
}

pub(crate) fn run(command: ExperimentCommand) -> anyhow::Result<ExitCode> {
    rtlan_lab::install_signal_cleanup()?;
    match command {
        ExperimentCommand::Fig4(c) => fig4::run(&Run::new("fig4", c)?),
        ExperimentCommand::Fig5(c) => fig5::run(&Run::new("fig5", c)?),
        ExperimentCommand::Fig6(c) => fig6::run(&Run::new("fig6", c)?),
        ExperimentCommand::Fig7(c) => fig7::run(&Run::new("fig7", c)?),
        ExperimentCommand::Table1(c) => table1::run(&Run::new("table1", c)?),
        ExperimentCommand::Capacity(c) => capacity::run(&Run::new("capacity", c)?),
        ExperimentCommand::Loser(c) => loser::run(&Run::new("loser", c)?),
    }
}

/// `/proc/loadavg`'s first three fields, recorded with every run (the machine is shared).
pub(crate) fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
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

/// Restarts the lab's rtlan switch `s1` with configuration keys the topology format cannot set:
/// reads its configuration in force (`config` on its control socket), lets `edit` change it,
/// writes `<state>/s1-<tag>.toml`, stops the switch the lab started and starts `rtlan switch` on
/// the new file in s1's namespace. Returns once the new switch answers (start-up calibration
/// included); the guard stops it, and lab teardown would too.
pub(crate) fn restart_switch(
    run: &Run,
    lab: &Lab,
    tag: &str,
    edit: impl FnOnce(&mut Value),
) -> anyhow::Result<Guarded> {
    let socket = lab.switch_socket("s1").context("s1 is an rtlan switch")?;
    let mut config = rtlan_linux::ctl::request(&socket, "config")?;
    strip_nulls(&mut config);
    edit(&mut config);
    let path = lab.state_dir().join(format!("s1-{tag}.toml"));
    std::fs::write(
        &path,
        toml::to_string(&config).context("configuration as TOML")?,
    )?;
    let pid = lab.switch_pid("s1").context("s1 runs")?;
    // SAFETY: kill(2) has no memory-safety preconditions; the lab started this switch and
    // recorded its PID; it is still running (its socket answered just now).
    unsafe { libc::kill(libc::pid_t::try_from(pid)?, libc::SIGTERM) };
    // The switch removes its socket when it stops.
    let deadline = Instant::now() + Duration::from_secs(5);
    while socket.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    anyhow::ensure!(!socket.exists(), "s1 did not stop");
    let log = std::fs::File::create(lab.state_dir().join(format!("s1-{tag}.log")))?;
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
    let process = Guarded::from_child(child, format!("rtlan switch s1 ({tag})"));
    let deadline = Instant::now() + Duration::from_secs(30);
    while !(socket.exists() && rtlan_linux::ctl::request(&socket, "ping").is_ok()) {
        anyhow::ensure!(Instant::now() < deadline, "s1 did not come back");
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(process)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
