//! `rtlan demo`: the guarantee demo — a reserved real-time connection keeps its rate, with no
//! loss, while the rest of the network is flooded (EtheReal §1–§3: the bandwidth guarantee that
//! a plain switch cannot give).
//!
//! The scenario and its runners live in `rtlan_experiments::demo`: the embedded topology
//! (`topologies/guarantee.toml`: hosts a, b, c, d on one switch, 100 Mbit/s links) run twice —
//! with an rtlan switch and with the Linux bridge — with the same traffic. This shell prints a
//! table per switch (or `--json`), draws the plot (`/usr/bin/python3` + matplotlib) and exits 0
//! only if on rtlan the reserved flow arrived within 3 % of its rate with no loss. Labs are
//! always removed, also on error and Ctrl-C.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use rtlan_experiments::demo::{self, Guarantee, Run};

use super::bench::DataPlaneArg;
use super::runner::{bar, draw, BackendArg};

/// Arguments of `rtlan demo`.
#[derive(Debug, Args)]
#[command(after_help = "\
The demo needs root (it creates network namespaces rtl-gd<pid>r-* and rtl-gd<pid>b-*), iperf3,
and /usr/bin/python3 with matplotlib for the plot (scripts/install-deps installs them). It runs
about 15 s of traffic per switch and removes everything it created, also on Ctrl-C.
Exit status: 0 if on rtlan the reserved a → d flow got 50 Mbit/s within 3 % with no loss.
To explore by hand instead: rtlan lab up topologies/guarantee.toml --name mylab")]
pub(crate) struct DemoArgs {
    /// Print the results as JSON (progress still goes to stderr).
    #[arg(long)]
    json: bool,
    /// Where to write the plot.
    #[arg(long, default_value = "rtlan-demo.png")]
    plot: PathBuf,
    /// Do not draw the plot.
    #[arg(long, conflicts_with = "plot")]
    no_plot: bool,
    /// Seconds of reserved traffic per switch (the tests use fewer).
    #[arg(long, default_value_t = 10, hide = true,
          value_parser = clap::value_parser!(u32).range(2..=60))]
    seconds: u32,
    /// Where the scenario runs: `lab` (network namespaces, needs root) or `sim` (the
    /// discrete-event simulator, once it has a runner for this scenario).
    #[arg(long, value_enum, default_value_t)]
    backend: BackendArg,
    /// The rtlan switch's port sockets in the lab (docs/afxdp.md).
    #[arg(long, value_enum, default_value = "af_packet")]
    data_plane: DataPlaneArg,
    /// Veth offloads on at every end of the lab (TSO/GSO/GRO, partial checksums), for both
    /// switches: hosts send 64 KB TCP super-frames, which the rtlan switch passes whole on its
    /// fast path or cuts into wire frames for its scheduler (docs/offload.md).
    #[arg(long)]
    offloads: bool,
    /// The rtlan switch kicks each port's TX ring from a thread of the port's own
    /// (docs/threads.md); the guarantee must hold as without.
    #[arg(long)]
    tx_threads: bool,
}

pub(crate) fn run(args: DemoArgs) -> anyhow::Result<ExitCode> {
    let exe = std::env::current_exe().context("locating the rtlan executable")?;
    let mut scenario = Guarantee::new(args.seconds);
    scenario.data_plane = args.data_plane.into();
    scenario.offloads = args.offloads;
    scenario.tx_threads = args.tx_threads;
    let progress = bar("{spinner} [{bar:30}] {msg}")?;
    progress.enable_steady_tick(Duration::from_millis(120));
    let runs = demo::run(args.backend.into(), &scenario, &exe, &|s| {
        draw(&progress, s)
    });
    progress.finish_and_clear();
    let runs = runs?;

    let mut doc = demo::results_json(&runs);
    if let Some(obj) = doc.as_object_mut() {
        obj.insert(
            "data_plane".to_string(),
            serde_json::to_value(scenario.data_plane)?,
        );
        obj.insert("offloads".to_string(), scenario.offloads.into());
        obj.insert("tx_threads".to_string(), scenario.tx_threads.into());
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        print_tables(&runs);
    }
    if !args.no_plot {
        match demo::plot(&doc, &args.plot) {
            Ok(()) => eprintln!("plot written to {}", args.plot.display()),
            Err(e) => eprintln!("warning: no plot: {e:#}"),
        }
    }
    let criterion = scenario.criterion;
    let ok = criterion.held(&runs);
    if !args.json {
        let (switch, rate) = (criterion.switch.name(), criterion.rate_bps / 1e6);
        if ok {
            println!(
                "\nOn {switch} the reserved flow got its {rate} Mbit/s (within {} %) with no loss.",
                criterion.tolerance * 100.0
            );
        } else {
            println!(
                "\nFAILED: on {switch} the reserved flow did not get its {rate} Mbit/s with no loss."
            );
        }
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn mbit(bps: f64) -> String {
    format!("{:.1}", bps / 1e6)
}

fn or_dash(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map_or_else(|| "–".to_string(), f)
}

fn print_tables(runs: &[Run]) {
    println!(
        "rtlan demo — a, b, c, d on one switch, 100 Mbit/s links; a → d 50 Mbit/s while b and c \
         flood d and c sends TCP to d\n(rates in Mbit/s of whole frames on the wire)"
    );
    for Run {
        switch: kind,
        flows,
        ports,
    } in runs
    {
        println!("\n  switch: {}", kind.name());
        println!(
            "  {:<11} {:>8} {:>8} {:>10} {:>8} {:>13} {:>13} {:>9}",
            "flow",
            "offered",
            "reserved",
            "delivered",
            "loss %",
            "p99 delay µs",
            "max delay µs",
            "bound µs"
        );
        for f in flows {
            println!(
                "  {:<11} {:>8} {:>8} {:>10} {:>8} {:>13} {:>13} {:>9}",
                f.name,
                mbit(f.offered_bps),
                or_dash(f.reserved_bps, mbit),
                mbit(f.delivered_bps),
                or_dash(f.loss_pct, |l| format!("{l:.2}")),
                or_dash(f.p99_delay_us, |d| format!("{d:.0}")),
                or_dash(f.max_delay_us, |d| format!("{d:.0}")),
                or_dash(f.bound_us, |d| format!("{d:.0}")),
            );
        }
        print_ports(ports.as_ref());
    }
}

/// The switch's own account of each port (frames sent and dropped, reserved and best effort;
/// the policer's drops; the pacer's latest wake-up), under its flows.
fn print_ports(ports: Option<&serde_json::Value>) {
    let Some(ports) = ports.and_then(|p| p.as_array()) else {
        return;
    };
    println!(
        "  {:<11} {:>14} {:>14} {:>16} {:>16} {:>10} {:>13}",
        "port",
        "rt sent",
        "rt dropped",
        "best-eff. sent",
        "best-eff. drop",
        "policed",
        "late max µs"
    );
    let n = |v: &serde_json::Value| {
        v.as_u64()
            .map_or_else(|| "–".to_string(), |x| x.to_string())
    };
    for p in ports {
        println!(
            "  {:<11} {:>14} {:>14} {:>16} {:>16} {:>10} {:>13}",
            p["ifname"].as_str().unwrap_or("?"),
            n(&p["rt_frames_sent"]),
            n(&p["rt_frames_dropped"]),
            n(&p["nrt_frames_sent"]),
            n(&p["nrt_frames_dropped"]),
            n(&p["policer_dropped_frames"]),
            p["late_max_ns"]
                .as_u64()
                .map_or_else(|| "–".to_string(), |ns| format!("{:.0}", ns as f64 / 1e3)),
        );
    }
}
