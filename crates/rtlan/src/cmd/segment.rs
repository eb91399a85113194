//! `rtlan segment`: runs an emulated shared Ethernet segment (CSMA/CD, the medium of RETHER,
//! Venkatramani and Chiueh §1–§2; `docs/segment.md`) on real interfaces.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use rtlan_linux::segmentd::{RunReport, SegmentDaemonConfig};

/// Arguments of `rtlan segment`.
#[derive(Debug, Args)]
#[command(after_help = "\
The config file is TOML (docs/segment.md). A minimal one:

    name = \"seg\"
    control_socket = \"/run/rtlan/seg.sock\"
    rate = \"10Mbit/s\"
    [[port]]
    ifname = \"p0\"
    [[port]]
    ifname = \"p1\"

A frame received on a port is what that station transmits; the medium carries one frame at a
time at the rate, collisions and backoff as IEEE 802.3 half duplex, and delivers each frame
to every other port. SIGINT/SIGTERM stop it cleanly and print its counters.")]
pub(crate) struct SegmentArgs {
    /// The segment configuration file (TOML).
    #[arg(long, short)]
    config: PathBuf,
    /// Print the final counters as JSON instead of text.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(args: SegmentArgs) -> anyhow::Result<ExitCode> {
    let config = SegmentDaemonConfig::from_file(&args.config)
        .map_err(|e| super::config_error(&args.config, e))?;
    let stop = super::signals::stop_on(&[libc::SIGINT, libc::SIGTERM, libc::SIGHUP])?;
    let report = rtlan_linux::segmentd::run(config, stop)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_report(&report);
    }
    Ok(ExitCode::SUCCESS)
}

fn print_report(report: &RunReport) {
    let b = &report.bus;
    let secs = report.uptime_ns as f64 / 1e9;
    println!("segment {} stopped after {secs:.1}s", report.name);
    println!(
        "  frames {}  wire bytes {}  collisions {}  busy {:.1}%  drops: excessive collisions {} \
         queue full {} oversize {}",
        b.frames,
        b.wire_bytes,
        b.collisions,
        if report.uptime_ns == 0 {
            0.0
        } else {
            100.0 * b.busy_ns as f64 / report.uptime_ns as f64
        },
        b.excessive_collisions,
        b.queue_drops,
        b.oversize
    );
    println!(
        "  {:<8} {:>12} {:>12} {:>12} {:>12} {:>8}",
        "port", "rx frames", "rx bytes", "tx frames", "tx bytes", "queued"
    );
    for (p, a) in report.ports.iter().zip(&report.attachments) {
        let c = &p.counters;
        println!(
            "  {:<8} {:>12} {:>12} {:>12} {:>12} {:>8}",
            p.ifname, c.rx_frames, c.rx_bytes, c.tx_frames, c.tx_bytes, a.queued
        );
    }
}
