//! `rtlan bwm`: the bandwidth manager (seed 004 §3.2 "Admission process", seed 001 §3.2–3.4).
//! Protocol, state file and examples: `docs/bwm.md`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use rtlan_core::bwm::{Manager, ManagerConfig, StandingConfig};
use rtlan_core::units::{parse_duration, parse_rate};
use rtlan_linux::bwmd::{load_network, Server};

/// Arguments of `rtlan bwm`.
#[derive(Debug, Args)]
#[command(after_help = "\
The bandwidth manager books, per switch output port, link capacity and switch buffer memory, and
admits a connection only if (1) the rates on every port of its path stay within the port rate,
(2) every switch's backlog bounds (Löser/Härtig eq. 4) fit its buffer, (3) its own end-to-end
delay bound (Σ eq. 6 over its path + host delay) meets its requirement and (4) so does every
connection already booked on those ports.

Clients speak JSON lines over TCP in the envelope of docs/mgmt.md, one request per line, one
reply per line (operations in docs/bwm.md):

    {\"id\":1,\"op\":\"admit\",\"src\":\"C\",\"dst\":\"B\",\"rate_bps\":40000000,
     \"max_packet\":1514,\"shaping_interval_us\":10000,\"delay_us\":12000}
    {\"id\":2,\"op\":\"besteffort\",\"src\":\"A\",\"rate_bps\":20000000,\"max_packet\":1514,
     \"burst_bytes\":30000}
    {\"id\":3,\"op\":\"release\",\"conn\":1}
    {\"id\":4,\"op\":\"list\"}
    {\"id\":5,\"op\":\"topology\"}
    {\"id\":6,\"op\":\"refresh\",\"conns\":[1]}

Guaranteed bookings are soft state: one not refreshed within --lease (30 s) is released, so a
crashed host cannot hold capacity forever; `rtlan rtcd` on central admission refreshes its
bookings every refresh_period (10 s).

Try it:  rtlan bwm --network experiments/loser/table4-ts10ms.toml --listen 127.0.0.1:7470 &
         echo '{\"id\":1,\"op\":\"topology\"}' | socat - TCP:127.0.0.1:7470

The network file is `rtlan analyze`'s ([[switch]] name/t_mux/buffer, [[link]] ends/rate/
effective_rate; optional [[host]] name/ip, so that requests may name hosts by address; [[flow]]
tables are ignored). Bookings are saved to --state atomically on every
change and re-admitted at start. SIGINT/SIGTERM stop it cleanly.")]
pub(crate) struct BwmArgs {
    /// The network file (TOML, the format of `rtlan analyze`).
    #[arg(long, short)]
    network: PathBuf,
    /// Address to listen on (TCP).
    #[arg(long, short, default_value = "0.0.0.0:7470")]
    listen: String,
    /// State file: bookings, rewritten atomically on each change, reloaded at start.
    #[arg(long, short, default_value = "bwm-state.json")]
    state: PathBuf,
    /// Host delay t_os added to every end-to-end bound unless a request gives its own.
    #[arg(long, default_value = "80us")]
    host_delay: String,
    /// Lifetime of a one-shot best-effort reservation.
    #[arg(long, default_value = "300ms")]
    best_effort_ttl: String,
    /// The host the manager runs on: books a standing reservation between it and every other
    /// host at start, so every node can always reach the manager (seed 001 §3.4).
    #[arg(long)]
    manager_host: Option<String>,
    /// Rate of each standing reservation.
    #[arg(long, default_value = "64kbit")]
    standing_rate: String,
    /// Bucket of each standing reservation, bytes (at least one 1514-byte frame).
    #[arg(long, default_value_t = 3028)]
    standing_burst: u64,
    /// Soft state: a guaranteed booking not refreshed (op `refresh`; rtcd does it every
    /// refresh_period) for this long is released; `0s` = bookings never expire.
    #[arg(long, default_value = "30s")]
    lease: String,
}

fn config(args: &BwmArgs) -> anyhow::Result<ManagerConfig> {
    let standing = match &args.manager_host {
        Some(host) => Some(StandingConfig {
            manager_host: host.clone(),
            rate_bps: parse_rate(&args.standing_rate).context("--standing-rate")?,
            max_packet: 1514.min(args.standing_burst),
            burst_bytes: args.standing_burst,
        }),
        None => None,
    };
    Ok(ManagerConfig {
        host_delay: parse_duration(&args.host_delay).context("--host-delay")?,
        best_effort_ttl: parse_duration(&args.best_effort_ttl).context("--best-effort-ttl")?,
        standing,
        lease: Some(parse_duration(&args.lease).context("--lease")?).filter(|l| !l.is_zero()),
    })
}

/// Runs `rtlan bwm`.
pub(crate) fn run(args: BwmArgs) -> anyhow::Result<ExitCode> {
    let config = config(&args)?;
    let topo = load_network(&args.network)?;
    let manager = Manager::new(topo, config).context("building the bandwidth manager")?;
    let stop = super::signals::stop_on(&[libc::SIGINT, libc::SIGTERM])?;
    let server = Server::bind(manager, &args.listen, args.state.clone())?;
    eprintln!(
        "rtlan bwm: listening on {}, state {}",
        server.local_addr()?,
        args.state.display()
    );
    server.run(stop)?;
    eprintln!("rtlan bwm: stopped");
    Ok(ExitCode::SUCCESS)
}
