//! `rtlan demo`: the main job — rtlan carrying real traffic between unmodified Linux hosts.

use std::process::ExitCode;

use clap::Args;

/// Arguments of `rtlan demo`.
#[derive(Debug, Args)]
pub(crate) struct DemoArgs {
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(args: DemoArgs) -> anyhow::Result<ExitCode> {
    let _ = args.json;
    anyhow::bail!("demo: not written yet")
}
