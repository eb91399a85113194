//! `rtlan experiment`: reproductions of the papers' figures and tables (DESIGN.md §6), run by
//! the `rtlan-experiments` library. Each experiment reads a scenario file
//! (`experiments/<paper>/<name>/scenario.toml`), runs it on the chosen backend, writes
//! `results.json` beside the scenario and renders a plot with the `plot.py` there. The
//! experiment's `README.md` sets our numbers beside the paper's.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};
use rtlan_experiments::kit::run::RunOptions;
use rtlan_experiments::Experiment;

use super::runner::BackendArg;

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
    /// Per-connection delay bounds across 3- and 5-switch chains and a leaf–spine, cyclic and
    /// timing-wheel schedulers: observed maximum delay against the granted bound (simulator).
    Multihop(Common),
    /// QSR §6.1, Fig. 6: forwarding rate against packet size and look-up depth (routes
    /// containing the destination), the rtlan router beside the kernel's in the same run.
    QsrFig6(Common),
    /// QSR §6.2: a ~3 Mbit/s video stream (frames of several packets) across three routers
    /// while two hosts blast the middle link, without and with an RSVP reservation; packet and
    /// frame loss (lab; `--backend sim`: a chain of 100 routers).
    QsrVideo(Common),
    /// QSR §6.2: RSVP reservations set up and refreshed while every router link is flooded,
    /// with RSVP on the protected control queue and in the data queue; state timeouts and
    /// stream loss (lab; `--backend sim`: a chain of 100 routers).
    QsrSignalling(Common),
    /// RETHER Figs. 4, 5, 6, 8, 9, the 40 MPEG-I streams on 100 Mbit/s and Table 1, on the
    /// simulator's shared segment (results in experiments/rether/results/).
    Rether(Common),
    /// RETHER Fig. 7: the simulator validated against the lab's agents (five hosts on an
    /// emulated 10 Mbit/s segment, 1–4 MPEG-I sessions; results in experiments/rether/fig7/).
    RetherFig7(Common),
}

/// Arguments every experiment takes.
#[derive(Debug, Args)]
pub(crate) struct Common {
    /// Scenario file [default: experiments/ethereal/<name>/scenario.toml; loser:
    /// experiments/loser/lab/scenario.toml; qsr-<name>: experiments/qsr/<name>/scenario.toml;
    /// rether: experiments/rether/scenario.toml].
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
    /// Where the scenario runs: `lab` (network namespaces, needs root) or `sim` (the
    /// discrete-event simulator) [default: the experiment's own — sim for multihop and rether, lab for the
    /// others; qsr-video and qsr-signalling run on either].
    #[arg(long, value_enum)]
    backend: Option<BackendArg>,
}

pub(crate) fn run(command: ExperimentCommand) -> anyhow::Result<ExitCode> {
    let (experiment, common) = match command {
        ExperimentCommand::Fig4(c) => (Experiment::Fig4, c),
        ExperimentCommand::Fig5(c) => (Experiment::Fig5, c),
        ExperimentCommand::Fig6(c) => (Experiment::Fig6, c),
        ExperimentCommand::Fig7(c) => (Experiment::Fig7, c),
        ExperimentCommand::Table1(c) => (Experiment::Table1, c),
        ExperimentCommand::Capacity(c) => (Experiment::Capacity, c),
        ExperimentCommand::Loser(c) => (Experiment::Loser, c),
        ExperimentCommand::Multihop(c) => (Experiment::Multihop, c),
        ExperimentCommand::QsrFig6(c) => (Experiment::QsrFig6, c),
        ExperimentCommand::QsrVideo(c) => (Experiment::QsrVideo, c),
        ExperimentCommand::QsrSignalling(c) => (Experiment::QsrSignalling, c),
        ExperimentCommand::Rether(c) => (Experiment::Rether, c),
        ExperimentCommand::RetherFig7(c) => (Experiment::RetherFig7, c),
    };
    let options = RunOptions {
        scenario: common.scenario,
        out: common.out,
        quick: common.quick,
        plot: !common.no_plot,
        backend: common
            .backend
            .map_or(experiment.default_backend(), Into::into),
        exe: std::env::current_exe().context("locating the rtlan executable")?,
    };
    let results = experiment.run(options)?;
    if experiment.announces_results() {
        println!("{}", results.display());
    }
    Ok(ExitCode::SUCCESS)
}
