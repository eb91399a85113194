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
tables are ignored). Bookings are saved to --state (/var/lib/rtlan/bwm-state.json) atomically on
every change and re-admitted at start; the state is locked while the manager runs (a second
manager on it refuses to start), and nothing is written before the address is bound.

Settings come from flags, then --config FILE (keys named as the flags, docs/bwm.md), then the
defaults; without --config and --network the file is /etc/rtlan/bwm.toml. SIGINT/SIGTERM stop it
cleanly; SIGHUP reads the tokens file again (docs/deploy.md).")]
pub(crate) struct BwmArgs {
    /// Configuration file (TOML): the settings below as keys (`network`, `listen`, `tokens`,
    /// `state`, `lease`, …; relative paths from the file's directory). Flags override it.
    /// Without --config and --network: /etc/rtlan/bwm.toml.
    #[arg(long, short)]
    config: Option<PathBuf>,
    /// The network file (TOML, the format of `rtlan analyze`).
    #[arg(long, short)]
    network: Option<PathBuf>,
    /// Address to listen on (TCP); loopback only unless another address is given
    /// [default: 127.0.0.1:7470].
    #[arg(long, short)]
    listen: Option<String>,
    /// Tokens file (TOML, `[[token]]` with principal, role, token; docs/bwm.md): every request
    /// must then carry a token. Without it the manager is open to every client. Read again on
    /// SIGHUP.
    #[arg(long)]
    tokens: Option<PathBuf>,
    /// Most clients connected at once; one more gets a `too_many_clients` error [default: 64].
    #[arg(long)]
    max_clients: Option<usize>,
    /// Close a client that sends nothing for this long; `0s` = never [default: 120s].
    #[arg(long)]
    idle_timeout: Option<String>,
    /// State file: bookings, rewritten atomically on each change, reloaded at start, locked
    /// while the manager runs [default: /var/lib/rtlan/bwm-state.json].
    #[arg(long, short)]
    state: Option<PathBuf>,
    /// Host delay t_os added to every end-to-end bound unless a request gives its own
    /// [default: 80us].
    #[arg(long)]
    host_delay: Option<String>,
    /// Lifetime of a one-shot best-effort reservation [default: 300ms].
    #[arg(long)]
    best_effort_ttl: Option<String>,
    /// The host the manager runs on: books a standing reservation between it and every other
    /// host at start, so every node can always reach the manager (seed 001 §3.4).
    #[arg(long)]
    manager_host: Option<String>,
    /// Rate of each standing reservation [default: 64kbit].
    #[arg(long)]
    standing_rate: Option<String>,
    /// Bucket of each standing reservation, bytes (at least one 1514-byte frame)
    /// [default: 3028].
    #[arg(long)]
    standing_burst: Option<u64>,
    /// Soft state: a guaranteed booking not refreshed (op `refresh`; rtcd does it every
    /// refresh_period) for this long is released; `0s` = bookings never expire [default: 30s].
    #[arg(long)]
    lease: Option<String>,
    /// Serve Prometheus metrics on `GET /metrics` at this address (docs/metrics.md).
    #[arg(long)]
    metrics_listen: Option<std::net::SocketAddr>,
}

/// The keys of the configuration file: the flags' names with `_`.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSettings {
    network: Option<PathBuf>,
    listen: Option<String>,
    tokens: Option<PathBuf>,
    max_clients: Option<usize>,
    idle_timeout: Option<String>,
    state: Option<PathBuf>,
    host_delay: Option<String>,
    best_effort_ttl: Option<String>,
    manager_host: Option<String>,
    standing_rate: Option<String>,
    standing_burst: Option<u64>,
    lease: Option<String>,
    metrics_listen: Option<std::net::SocketAddr>,
}

/// Where the manager's configuration is unless --config or --network says otherwise.
const DEFAULT_CONFIG: &str = "/etc/rtlan/bwm.toml";
/// Where the manager listens unless told otherwise: loopback only.
const DEFAULT_LISTEN: &str = "127.0.0.1:7470";
/// Where the manager keeps its state unless told otherwise (systemd's StateDirectory=rtlan).
const DEFAULT_STATE: &str = "/var/lib/rtlan/bwm-state.json";

/// The manager's settings: flags over the file over the defaults.
#[derive(Debug, Clone, PartialEq)]
struct Settings {
    /// The configuration file, if one was read.
    file: Option<PathBuf>,
    network: PathBuf,
    listen: String,
    tokens: Option<PathBuf>,
    max_clients: usize,
    idle_timeout: String,
    state: PathBuf,
    host_delay: String,
    best_effort_ttl: String,
    manager_host: Option<String>,
    standing_rate: String,
    standing_burst: u64,
    lease: String,
    metrics_listen: Option<std::net::SocketAddr>,
}

fn settings(args: &BwmArgs) -> anyhow::Result<Settings> {
    let file_path = match (&args.config, &args.network) {
        (Some(path), _) => Some(path.clone()),
        (None, None) => Some(PathBuf::from(DEFAULT_CONFIG)),
        (None, Some(_)) => None,
    };
    let (file, base) = match &file_path {
        Some(path) => {
            super::require_config(path, "bwm")?;
            let file: FileSettings = rtlan_linux::switchd::parse_toml_file(path)
                .map_err(|e| super::config_error(path, e))?;
            let base = path.parent().map(std::path::Path::to_path_buf);
            (file, base)
        }
        None => (FileSettings::default(), None),
    };
    // A relative path in the file is relative to the file.
    let from_file = |p: Option<PathBuf>| match (&base, p) {
        (Some(base), Some(p)) if p.is_relative() => Some(base.join(p)),
        (_, p) => p,
    };
    let network = args
        .network
        .clone()
        .or(from_file(file.network))
        .with_context(|| {
            format!(
                "no network file: give --network or `network = ...` in {}",
                file_path
                    .as_deref()
                    .unwrap_or(std::path::Path::new(DEFAULT_CONFIG))
                    .display()
            )
        })?;
    Ok(Settings {
        file: file_path,
        network,
        listen: args
            .listen
            .clone()
            .or(file.listen)
            .unwrap_or_else(|| DEFAULT_LISTEN.into()),
        tokens: args.tokens.clone().or(from_file(file.tokens)),
        max_clients: args.max_clients.or(file.max_clients).unwrap_or(MAX_CLIENTS),
        idle_timeout: args
            .idle_timeout
            .clone()
            .or(file.idle_timeout)
            .unwrap_or_else(|| "120s".into()),
        state: args
            .state
            .clone()
            .or(from_file(file.state))
            .or_else(|| {
                // systemd's StateDirectory= names the directory it made for the unit.
                std::env::var_os("STATE_DIRECTORY")
                    .map(|dir| PathBuf::from(dir).join("bwm-state.json"))
            })
            .unwrap_or_else(|| PathBuf::from(DEFAULT_STATE)),
        host_delay: args
            .host_delay
            .clone()
            .or(file.host_delay)
            .unwrap_or_else(|| "80us".into()),
        best_effort_ttl: args
            .best_effort_ttl
            .clone()
            .or(file.best_effort_ttl)
            .unwrap_or_else(|| "300ms".into()),
        manager_host: args.manager_host.clone().or(file.manager_host),
        standing_rate: args
            .standing_rate
            .clone()
            .or(file.standing_rate)
            .unwrap_or_else(|| "64kbit".into()),
        standing_burst: args.standing_burst.or(file.standing_burst).unwrap_or(3028),
        lease: args
            .lease
            .clone()
            .or(file.lease)
            .unwrap_or_else(|| "30s".into()),
        metrics_listen: args.metrics_listen.or(file.metrics_listen),
    })
}

fn config(s: &Settings) -> anyhow::Result<ManagerConfig> {
    let standing = match &s.manager_host {
        Some(host) => Some(StandingConfig {
            manager_host: host.clone(),
            rate_bps: parse_rate(&s.standing_rate).context("standing_rate")?,
            max_packet: 1514.min(s.standing_burst),
            burst_bytes: s.standing_burst,
        }),
        None => None,
    };
    Ok(ManagerConfig {
        host_delay: parse_duration(&s.host_delay).context("host_delay")?,
        best_effort_ttl: parse_duration(&s.best_effort_ttl).context("best_effort_ttl")?,
        standing,
        lease: Some(parse_duration(&s.lease).context("lease")?).filter(|l| !l.is_zero()),
    })
}

fn server_config(s: &Settings) -> anyhow::Result<ServerConfig> {
    let idle = parse_duration(&s.idle_timeout).context("idle_timeout")?;
    if s.max_clients == 0 {
        anyhow::bail!("max_clients must be at least 1");
    }
    Ok(ServerConfig {
        tokens: match &s.tokens {
            Some(path) => load_tokens(path)?,
            None => Default::default(),
        },
        max_clients: s.max_clients,
        idle_timeout: Some(idle).filter(|d| !d.is_zero()),
        tokens_path: s.tokens.clone(),
        metrics_listen: s.metrics_listen,
    })
}

/// Runs `rtlan bwm`.
pub(crate) fn run(args: BwmArgs) -> anyhow::Result<ExitCode> {
    let s = settings(&args)?;
    let config = config(&s)?;
    let server_config = server_config(&s)?;
    let topo = load_network(&s.network)?;
    let manager = Manager::new(topo, config).context("building the bandwidth manager")?;
    if let Some(file) = &s.file {
        rtlan_linux::service::set_config_file(file)?;
    }
    let stop = super::signals::stop_on(&[libc::SIGINT, libc::SIGTERM])?;
    super::signals::reload_on_hup()?;
    let server = Server::bind_with(manager, &s.listen, s.state.clone(), server_config)?;
    eprintln!(
        "rtlan bwm: listening on {}, state {}",
        server.local_addr()?,
        s.state.display()
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

    fn parse(args: &[&str]) -> anyhow::Result<Settings> {
        let mut all = vec!["bwm"];
        all.extend_from_slice(args);
        settings(&Cli::try_parse_from(all).expect("parses").bwm)
    }

    #[test]
    fn listens_on_loopback_unless_told_otherwise() {
        let s = parse(&["--network", "n.toml"]).expect("valid");
        let addr: std::net::SocketAddr = s.listen.parse().expect("an address");
        assert!(addr.ip().is_loopback(), "default {addr}");
        assert_eq!(s.state, PathBuf::from("/var/lib/rtlan/bwm-state.json"));
        let c = server_config(&s).expect("valid");
        assert!(c.tokens.is_open());
        assert_eq!(c.max_clients, MAX_CLIENTS);
        assert_eq!(c.idle_timeout, Some(std::time::Duration::from_secs(120)));
        let s = parse(&[
            "--network",
            "n.toml",
            "--listen",
            "198.18.0.1:7470",
            "--idle-timeout",
            "0s",
            "--max-clients",
            "8",
        ])
        .expect("valid");
        assert_eq!(s.listen, "198.18.0.1:7470");
        let c = server_config(&s).expect("valid");
        assert_eq!((c.idle_timeout, c.max_clients), (None, 8));
        let s = parse(&["-n", "n.toml", "--tokens", "/nonexistent/t.toml"]).expect("valid");
        assert!(
            server_config(&s).is_err(),
            "a missing tokens file fails start"
        );
    }

    #[test]
    fn the_file_gives_what_the_flags_do_not_and_its_paths_are_its_own() {
        let dir = std::env::temp_dir().join(format!("rtlan-bwmconf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let file = dir.join("bwm.toml");
        std::fs::write(
            &file,
            "network = \"net.toml\"\nlisten = \"127.0.0.1:9999\"\nstate = \"/srv/bwm.json\"\nlease = \"5s\"\n",
        )
        .expect("write");
        let f = file.to_str().expect("utf-8");
        let s = parse(&["--config", f]).expect("valid");
        assert_eq!(s.network, dir.join("net.toml"), "relative to the file");
        assert_eq!(s.state, PathBuf::from("/srv/bwm.json"));
        assert_eq!(
            (s.listen.as_str(), s.lease.as_str()),
            ("127.0.0.1:9999", "5s")
        );
        assert_eq!(s.file.as_deref(), Some(file.as_path()));
        // A flag wins over the file.
        let s = parse(&[
            "--config",
            f,
            "--listen",
            "127.0.0.1:1",
            "--network",
            "/x.toml",
        ])
        .expect("valid");
        assert_eq!(
            (s.listen.as_str(), s.network.as_path()),
            ("127.0.0.1:1", std::path::Path::new("/x.toml"))
        );
        // An unknown key is an error at its line and column, naming the file.
        std::fs::write(&file, "network = \"n.toml\"\nleese = \"5s\"\n").expect("write");
        let error = parse(&["--config", f])
            .expect_err("unknown key")
            .to_string();
        assert!(error.starts_with(&format!("{f}:2:1:")), "{error}");
        // No file and no --network: the default file, which is not there.
        let error = parse(&[])
            .expect_err("no /etc/rtlan/bwm.toml here")
            .to_string();
        assert!(error.contains("/etc/rtlan/bwm.toml"), "{error}");
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }
}
