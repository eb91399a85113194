//! `rtlan router`: runs the QSR router (default IP forwarding, QSR paper §4.1; `docs/router.md`)
//! on real interfaces.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use rtlan_linux::routerd::{RouterDaemonConfig, RunReport};

/// Arguments of `rtlan router`.
#[derive(Debug, Args)]
#[command(after_help = "\
The config file is TOML (docs/router.md). A minimal one:

    name = \"r1\"
    control_socket = \"/run/rtlan/r1.sock\"
    [[port]]
    ifname = \"eth1\"
    rate = \"100mbit\"
    [[port]]
    ifname = \"eth2\"

Each port's IPv4 address is read from its interface. The kernel of the namespace must not forward
(net.ipv4.ip_forward = 0): it keeps answering ARP and pings for the router's addresses and runs the
routing daemons, whose routes (the main table) the router mirrors. SIGINT/SIGTERM stop it cleanly
and print its counters; SIGHUP reloads (docs/deploy.md). Without --config it reads
/etc/rtlan/router.toml.")]
pub(crate) struct RouterArgs {
    /// The router configuration file (TOML).
    #[arg(long, short, default_value = "/etc/rtlan/router.toml")]
    config: PathBuf,
    /// Print the final counters as JSON instead of text.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(args: RouterArgs) -> anyhow::Result<ExitCode> {
    super::require_config(&args.config, "router")?;
    let config = RouterDaemonConfig::from_file(&args.config)
        .map_err(|e| super::config_error(&args.config, e))?;
    rtlan_linux::service::set_config_file(&args.config)?;
    let stop = super::signals::stop_on(&[libc::SIGINT, libc::SIGTERM])?;
    super::signals::reload_on_hup()?;
    let report = rtlan_linux::routerd::run(config, stop)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_report(&report);
    }
    Ok(ExitCode::SUCCESS)
}

fn print_report(report: &RunReport) {
    let r = &report.router;
    println!(
        "router {} stopped after {:.1}s",
        report.name,
        report.uptime_ns as f64 / 1e9
    );
    super::print_port_table(r.ports.iter().enumerate().map(|(i, p)| {
        let name = report
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
        "  forwarded {}  held {}  trapped: local {} rsvp {} options {}  icmp: ttl {} net {} host {}  \
         drops: ttl {} no-route {} arp {} martian {} bad-checksum {}  route syncs {}",
        r.forwarded,
        r.held,
        r.trapped_local,
        r.trapped_rsvp,
        r.trapped_options + r.trapped_router_alert,
        r.icmp.time_exceeded,
        r.icmp.net_unreachable,
        r.icmp.host_unreachable,
        r.drop_ttl,
        r.drop_no_route,
        r.drop_arp_failed + r.drop_arp_full,
        r.drop_martian,
        r.drop_bad_checksum,
        report.route_syncs
    );
}
