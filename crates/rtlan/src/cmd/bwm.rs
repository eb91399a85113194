//! `rtlan bwm`: the bandwidth manager (seed 004 §3.2 "Admission process", seed 001 §3.2–3.4).
//! Protocol, state file and examples: `docs/bwm.md`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use rtlan_core::bwm::{Manager, ManagerConfig, StandingConfig};
use rtlan_core::units::{parse_duration, parse_rate};
use rtlan_linux::bwmd::{load_network, load_tokens, Server, ServerConfig, MAX_CLIENTS};

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

It listens on 127.0.0.1:7470 unless --listen names another address (e.g. the manager host's
lab address, so that host daemons can reach it). With --tokens FILE every request must carry
one of the file's tokens (field `token`); a `client` then manages only its own bookings, an
`operator` all. Without it any client may release anyone's booking (a warning is logged).

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
    /// Address to listen on (TCP); loopback only unless another address is given.
    #[arg(long, short, default_value = DEFAULT_LISTEN)]
    listen: String,
    /// Tokens file (TOML, `[[token]]` with principal, role, token; docs/bwm.md): every request
    /// must then carry a token. Without it the manager is open to every client.
    #[arg(long)]
    tokens: Option<PathBuf>,
    /// Most clients connected at once; one more gets a `too_many_clients` error.
    #[arg(long, default_value_t = MAX_CLIENTS)]
    max_clients: usize,
    /// Close a client that sends nothing for this long; `0s` = never.
    #[arg(long, default_value = "120s")]
    idle_timeout: String,
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

/// Where the manager listens unless told otherwise: loopback only.
const DEFAULT_LISTEN: &str = "127.0.0.1:7470";

fn server_config(args: &BwmArgs) -> anyhow::Result<ServerConfig> {
    let idle = parse_duration(&args.idle_timeout).context("--idle-timeout")?;
    if args.max_clients == 0 {
        anyhow::bail!("--max-clients must be at least 1");
    }
    Ok(ServerConfig {
        tokens: match &args.tokens {
            Some(path) => load_tokens(path)?,
            None => Default::default(),
        },
        max_clients: args.max_clients,
        idle_timeout: Some(idle).filter(|d| !d.is_zero()),
    })
}

/// Runs `rtlan bwm`.
pub(crate) fn run(args: BwmArgs) -> anyhow::Result<ExitCode> {
    let config = config(&args)?;
    let server_config = server_config(&args)?;
    let topo = load_network(&args.network)?;
    let manager = Manager::new(topo, config).context("building the bandwidth manager")?;
    let stop = super::signals::stop_on(&[libc::SIGINT, libc::SIGTERM])?;
    let server = Server::bind_with(manager, &args.listen, args.state.clone(), server_config)?;
    eprintln!(
        "rtlan bwm: listening on {}, state {}",
        server.local_addr()?,
        args.state.display()
    );
    server.run(stop)?;
    eprintln!("rtlan bwm: stopped");
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        bwm: BwmArgs,
    }

    #[test]
    fn listens_on_loopback_unless_told_otherwise() {
        let cli = Cli::try_parse_from(["bwm", "--network", "n.toml"]).expect("parses");
        let addr: std::net::SocketAddr = cli.bwm.listen.parse().expect("an address");
        assert!(addr.ip().is_loopback(), "default {addr}");
        let c = server_config(&cli.bwm).expect("valid");
        assert!(c.tokens.is_open());
        assert_eq!(c.max_clients, MAX_CLIENTS);
        assert_eq!(c.idle_timeout, Some(std::time::Duration::from_secs(120)));
        let cli = Cli::try_parse_from([
            "bwm",
            "--network",
            "n.toml",
            "--listen",
            "198.18.0.1:7470",
            "--idle-timeout",
            "0s",
            "--max-clients",
            "8",
        ])
        .expect("parses");
        assert_eq!(cli.bwm.listen, "198.18.0.1:7470");
        let c = server_config(&cli.bwm).expect("valid");
        assert_eq!((c.idle_timeout, c.max_clients), (None, 8));
        let cli = Cli::try_parse_from(["bwm", "-n", "n.toml", "--tokens", "/nonexistent/t.toml"])
            .expect("parses");
        assert!(
            server_config(&cli.bwm).is_err(),
            "a missing tokens file fails start"
        );
    }
}
