//! `rtlan rether`: runs the host-transparent RETHER agent (RETHER, Venkatramani and Chiueh, §3
//! and §3.1; `docs/rether.md` §7) between a host's link and a shared segment.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use rtlan_linux::retherd::{RetherDaemonConfig, RunReport};

/// Arguments of `rtlan rether`.
#[derive(Debug, Args)]
#[command(after_help = "\
The config file is TOML (docs/rether.md §7). A minimal one:

    id = 1
    host_port = \"h0\"
    segment_port = \"s0\"
    rate = \"10mbit\"
    control_socket = \"/run/rtlan/rether.sock\"

The host's interface is the other end of `host_port`'s veth pair (or cable); `segment_port` is the
host's attachment to the shared segment. The host's frames go on the segment only as the protocol
allows: at once in CSMA mode, while this station holds the token in RETHER mode. The control
socket carries the §3.1 interface (open, admit, close, send, listen, recv) and counters.
SIGINT/SIGTERM stop it and print its counters.")]
pub(crate) struct RetherArgs {
    /// The agent's configuration file (TOML).
    #[arg(long, short)]
    config: PathBuf,
    /// Print the final counters as JSON instead of text.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(args: RetherArgs) -> anyhow::Result<ExitCode> {
    let config = RetherDaemonConfig::from_file(&args.config)
        .map_err(|e| super::config_error(&args.config, e))?;
    let stop = super::signals::stop_on(&[libc::SIGINT, libc::SIGTERM, libc::SIGHUP])?;
    let report = rtlan_linux::retherd::run(config, stop)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_report(&report);
    }
    Ok(ExitCode::SUCCESS)
}

fn print_report(report: &RunReport) {
    let (a, s) = (&report.agent, &report.station);
    println!(
        "rether agent {} (station {}) stopped after {:.1}s",
        report.name,
        report.id,
        report.uptime_ns as f64 / 1e9
    );
    println!(
        "  host: rx {} (rt {} nrt {} dropped {} forged {})  tx {} (dropped {})  filtered {}",
        a.host_rx,
        a.host_rt,
        a.host_nrt,
        a.host_queue_drops,
        a.host_rether_dropped,
        a.host_tx,
        a.host_tx_drops,
        a.filtered
    );
    println!(
        "  station: tokens held {}  cycles {}  rt frames {}  nrt frames {}  deaths {}  regenerations {}  switches {}",
        s.tokens_held, s.cycles_started, s.rt_frames, s.nrt_frames, s.deaths, s.regenerations, s.switches
    );
    println!(
        "  units: sent {}  received {}  incomplete {}  overwritten {}  longest token gap {:.2} ms",
        a.units_sent,
        a.units_received,
        a.units_incomplete,
        a.units_overwritten,
        a.token_gap_max_ns as f64 / 1e6
    );
}
