//! `rtlan rether-bridge`: runs an rtlan node joining RETHER segments (RETHER, Venkatramani and
//! Chiueh, §2.5; `docs/rether-bridge.md`): a RETHER station on every segment, a learning bridge
//! between them, and real-time sub-connections that observe each segment's schedule.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use rtlan_linux::retherd::{BridgeRunReport, RetherBridgeConfig};

/// Arguments of `rtlan rether-bridge`.
#[derive(Debug, Args)]
#[command(after_help = "\
The config file is TOML (docs/rether-bridge.md). A minimal one:

    rate = \"10mbit\"
    control_socket = \"/run/rtlan/br.sock\"
    [[port]]
    ifname = \"p0\"
    id = 4
    [[port]]
    ifname = \"p1\"
    id = 4

Each port is the bridge's attachment to one shared segment, where it is station `id`. Ordinary
frames are bridged between the segments; on each segment the bridge sends only as RETHER allows.
The control socket opens and admits sub-connections (a 5-tuple reserved on an output port), and
serves counters and status. SIGINT/SIGTERM stop it and print its counters.")]
pub(crate) struct RetherBridgeArgs {
    /// The bridge's configuration file (TOML).
    #[arg(long, short)]
    config: PathBuf,
    /// Print the final counters as JSON instead of text.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(args: RetherBridgeArgs) -> anyhow::Result<ExitCode> {
    let config = RetherBridgeConfig::from_file(&args.config)
        .map_err(|e| super::config_error(&args.config, e))?;
    let stop = super::signals::stop_on(&[libc::SIGINT, libc::SIGTERM, libc::SIGHUP])?;
    let report = rtlan_linux::retherd::run_bridge(config, stop)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_report(&report);
    }
    Ok(ExitCode::SUCCESS)
}

fn print_report(report: &BridgeRunReport) {
    let b = &report.bridge;
    println!(
        "rether bridge {} stopped after {:.1}s",
        report.name,
        report.uptime_ns as f64 / 1e9
    );
    println!(
        "  frames: rx {}  rether {}  forwarded {}  flooded {}  filtered {}  malformed {}  link-local {}",
        b.rx, b.rether, b.forwarded, b.flooded, b.filtered, b.malformed, b.link_local
    );
    println!(
        "  copies: real-time {}  non-real-time {}  queue drops {}  learnt {}  evicted {}",
        b.tx_rt, b.tx_nrt, b.queue_drops, b.learnt, b.evicted
    );
    for p in &report.stations {
        let s = &p.station;
        println!(
            "  {} (station {}): tokens held {}  cycles {}  rt frames {}  nrt frames {}  deaths {}  regenerations {}",
            p.ifname, p.id, s.tokens_held, s.cycles_started, s.rt_frames, s.nrt_frames, s.deaths, s.regenerations
        );
    }
}
