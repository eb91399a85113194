//! `rtlan switch`: runs the user-space switch (EtheReal §3.3/§3.4) on real interfaces.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;

/// Arguments of `rtlan switch`.
#[derive(Debug, Args)]
#[command(after_help = "\
The config file is TOML (docs/switch.md). A minimal one:

    name = \"s1\"
    control_socket = \"/run/rtlan/s1.sock\"
    [[port]]
    ifname = \"p0\"
    rate = \"100mbit\"
    [[port]]
    ifname = \"p1\"

`rtlan lab up` writes such a file for every rtlan switch of a topology and starts the switch in the
switch's namespace. SIGINT/SIGTERM stop it cleanly and print its counters; SIGHUP reloads
(docs/deploy.md). Without --config it reads /etc/rtlan/switch.toml.")]
pub(crate) struct SwitchArgs {
    /// The switch configuration file (TOML).
    #[arg(long, short, default_value = DEFAULT_CONFIG)]
    config: PathBuf,
    /// Print the final counters as JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// Where the switch's configuration is unless `--config` says otherwise (the unit
/// `rtlan-switch@NAME` passes `/etc/rtlan/switch-NAME.toml`).
const DEFAULT_CONFIG: &str = "/etc/rtlan/switch.toml";

pub(crate) fn run(args: SwitchArgs) -> anyhow::Result<ExitCode> {
    super::require_config(&args.config, "switch")?;
    let config = rtlan_linux::switchd::Config::load(&args.config)
        .with_context(|| format!("reading switch config {}", args.config.display()))?;
    rtlan_linux::service::set_config_file(&args.config)?;
    let stop = super::signals::stop_on(&[libc::SIGINT, libc::SIGTERM])?;
    super::signals::reload_on_hup()?;
    let report = rtlan_linux::switchd::run(config, stop)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_report(&report);
    }
    Ok(ExitCode::SUCCESS)
}

fn print_report(report: &rtlan_linux::switchd::RunReport) {
    let sw = &report.switch;
    println!(
        "switch {} stopped after {:.1}s",
        report.name,
        report.uptime.as_secs_f64()
    );
    super::print_port_table(sw.ports.iter().enumerate().map(|(i, p)| {
        let name = report
            .shell
            .ports
            .get(i)
            .map_or_else(|| format!("#{i}"), |s| s.ifname.clone());
        (
            name,
            [
                p.rx_frames,
                p.rx_bytes,
                p.tx_frames,
                p.tx_bytes,
                p.drop_queue_full,
            ],
        )
    }));
    println!(
        "  flooded {}  arp probes {}  arp replies {}  drops: malformed {} to-switch {} \
         same-port {} pending-full {} pending-timeout {}",
        sw.flooded,
        sw.arp_probes_sent,
        sw.arp_replies_sent,
        sw.drop_malformed,
        sw.drop_to_switch,
        sw.drop_same_port,
        sw.drop_pending_full,
        sw.drop_pending_timeout
    );
}
