//! `rtlan rtcd`: runs the host daemon (EtheReal §2.2/§3.2/§3.4) on the host's interface towards
//! the first rtlan switch. Protocol and configuration: `docs/rtcd.md`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use rtlan_linux::rtcd::{parse_admission, Config, DEFAULT_SOCKET};

/// Arguments of `rtlan rtcd`.
#[derive(Debug, Args)]
#[command(after_help = "\
The host daemon reserves real-time connections for unmodified applications. A client connects to
the Unix socket and speaks JSON lines (docs/rtcd.md):

    {\"op\":\"register\",\"tag\":1}
    {\"op\":\"open\",\"tag\":2,\"dst_ip\":\"198.18.0.2\",\"dst_port\":5004,\"src_port\":0,
     \"rate_bps\":1000000,\"max_burst\":3028,\"max_packet\":1514}
    {\"op\":\"list\",\"tag\":3}
    {\"op\":\"close\",\"tag\":4,\"conn\":1}

The daemon sends SETUP to the first switch (EtherType 0x88b5); when the path admits the
connection it installs a permanent ARP entry proxy IP -> proxy MAC and an on-link route for the
proxy prefix (198.19.0.0/16, or 1.1.0.0/16 with --paper), and answers with the proxy IP: the
application sends plain UDP there. Connections of clients that disconnect or die are released.

Central admission (Löser/Härtig, seed 004 §3.2): with --admission central the daemon first asks
the bandwidth manager (`rtlan bwm`, docs/bwm.md) at --manager, which books the path with
network-calculus bounds; the application then sends plainly to the receiver's own address (no
proxy, off-the-shelf switches) and the reply carries the manager's \"delay_bound_us\".
--admission both books at the manager and then sets up per hop through rtlan switches.

Either give a TOML file (--config) or the flags. A minimal file:

    interface = \"eth0\"
    socket = \"/run/rtlan/rtcd.sock\"
    # admission = \"central\"            # local (default), central or both
    # manager = \"198.18.0.1:7470\"

SIGINT/SIGTERM stop it cleanly: connections released, ARP entries and route removed, the
interface's own egress tree put back. SIGHUP reloads the file: the [[policy]] rules apply to
later opens, every other change is logged as needing a restart (docs/deploy.md).")]
pub(crate) struct RtcdArgs {
    /// The daemon configuration file (TOML; /etc/rtlan/rtcd.toml when neither it nor
    /// --interface is given); the flags below are then not allowed.
    #[arg(long, short, conflicts_with_all = ["interface", "socket", "paper", "admission", "manager", "link_rate"])]
    config: Option<PathBuf>,
    /// The host's interface towards the first switch.
    #[arg(long, short)]
    interface: Option<String>,
    /// Path of the clients' Unix socket.
    #[arg(long, short, default_value = DEFAULT_SOCKET)]
    socket: PathBuf,
    /// Rate of the host's link (e.g. `1gbit`); read from the interface when not given.
    #[arg(long)]
    link_rate: Option<String>,
    /// Paper-compatible addressing: proxy IPs 1.1.X.Y, proxy MACs FF:FF:FF:FF:X:Y.
    #[arg(long)]
    paper: bool,
    /// Admission: `local` (EtheReal per hop), `central` (bandwidth manager only) or `both`.
    #[arg(long, value_parser = parse_admission_arg)]
    admission: Option<rtlan_core::rtcd::Admission>,
    /// The bandwidth manager, IP:PORT (with --admission central or both).
    #[arg(long)]
    manager: Option<std::net::SocketAddr>,
    /// Print the final counters as JSON instead of text.
    #[arg(long)]
    json: bool,
}

fn parse_admission_arg(text: &str) -> Result<rtlan_core::rtcd::Admission, String> {
    parse_admission(text).map_err(|e| e.to_string())
}

/// The configuration the arguments describe.
fn config(args: &RtcdArgs) -> anyhow::Result<Config> {
    let Some(interface) = args.interface.as_deref() else {
        let path = args
            .config
            .clone()
            .unwrap_or_else(|| PathBuf::from(DEFAULT_CONFIG));
        super::require_config(&path, "rtcd")?;
        let config = Config::load(&path)
            .with_context(|| format!("reading rtcd config {}", path.display()))?;
        rtlan_linux::service::set_config_file(&path)?;
        return Ok(config);
    };
    let mut config = Config::new(interface, &args.socket);
    config.paper = args.paper;
    if let Some(rate) = &args.link_rate {
        config.link_rate_bps = Some(rtlan_core::units::parse_rate(rate).context("--link-rate")?);
    }
    if let Some(a) = args.admission {
        config.admission = a;
    }
    config.manager = args.manager;
    config.check_manager()?;
    Ok(config)
}

/// Where the daemon's configuration is unless `--config` or `--interface` says otherwise.
const DEFAULT_CONFIG: &str = "/etc/rtlan/rtcd.toml";

pub(crate) fn run(args: RtcdArgs) -> anyhow::Result<ExitCode> {
    let config = config(&args)?;
    let stop = super::signals::stop_on(&[libc::SIGINT, libc::SIGTERM])?;
    super::signals::reload_on_hup()?;
    let report = rtlan_linux::rtcd::run(&config, stop)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!(
            "rtcd stopped: {} requests ({} refused), {} control sent / {} received, \
             {} netlink errors",
            report.client_requests,
            report.client_errors,
            report.control_sent,
            report.control_received,
            report.netlink_errors
        );
    }
    Ok(ExitCode::SUCCESS)
}
