//! `rtlan sim SCENARIO.toml [--json] [--pcap DIR] [--seed N]`: runs a scenario in the
//! discrete-event simulator (`rtlan-sim`, `docs/sim.md`) — the real EtheReal switch core and the
//! real host daemon core on virtual time — and prints a table or the JSON envelope. A progress
//! bar shows simulated time on stderr when stderr is a terminal.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use rtlan_sim::{RunOptions, Scenario};

/// Arguments of `rtlan sim`.
#[derive(Debug, Args)]
#[command(after_help = "\
Example:
  rtlan sim scenarios/guarantee.toml
  rtlan sim scenarios/leafspine.toml --json > results.json
  rtlan sim scenarios/guarantee.toml --pcap traces/ && tshark -r traces/a-s1.pcap

Exit status: 0 after a run, 1 if the scenario is bad (file:line:column) or output fails.")]
pub(crate) struct SimArgs {
    /// Scenario file: a topology file ([[host]], [[switch]], [[link]]) plus [sim] and
    /// [[traffic]] (or [generate]).
    scenario: PathBuf,
    /// Print the JSON envelope instead of a table.
    #[arg(long)]
    json: bool,
    /// Write one pcap per link into this directory (nanosecond timestamps).
    #[arg(long, value_name = "DIR")]
    pcap: Option<PathBuf>,
    /// Replace the scenario's seed.
    #[arg(long)]
    seed: Option<u64>,
}

/// Runs the command.
pub(crate) fn run(args: SimArgs) -> anyhow::Result<ExitCode> {
    let scenario = Scenario::from_file(&args.scenario)?;
    let options = RunOptions {
        seed: args.seed,
        pcap_dir: args.pcap.clone(),
    };
    let total = scenario.sim.duration + scenario.sim.drain;
    let bar = if std::io::stderr().is_terminal() {
        let bar = ProgressBar::new(total.as_millis() as u64);
        bar.set_style(
            ProgressStyle::with_template("{elapsed_precise} [{bar:40}] {pos}/{len} ms simulated")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar
    } else {
        ProgressBar::hidden()
    };
    let mut progress = |done: Duration, _total: Duration| bar.set_position(done.as_millis() as u64);
    let outcome = rtlan_sim::run(&scenario, &options, &mut progress)
        .with_context(|| args.scenario.display().to_string())?;
    bar.finish_and_clear();
    if args.json {
        print!("{}", outcome.results.to_json());
    } else {
        print!("{}", outcome.results.table());
        for p in &outcome.pcaps {
            println!("pcap {} ({} frames)", p.path.display(), p.frames);
        }
    }
    Ok(ExitCode::SUCCESS)
}
