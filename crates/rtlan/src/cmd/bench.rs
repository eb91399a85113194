//! `rtlan bench`: lab benchmarks against the Linux bridge, built in the same run.

use std::process::ExitCode;

use clap::{Args, Subcommand};

/// `rtlan bench …`
#[derive(Debug, Subcommand)]
pub(crate) enum BenchCommand {
    /// Packet rate, TCP throughput and UDP latency: rtlan vs the Linux bridge.
    Forward(ForwardArgs),
}

/// Arguments of `bench forward`.
#[derive(Debug, Args)]
pub(crate) struct ForwardArgs {
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(command: BenchCommand) -> anyhow::Result<ExitCode> {
    match command {
        BenchCommand::Forward(a) => {
            let _ = a.json;
            anyhow::bail!("bench: not written yet")
        }
    }
}
