//! `rtlan lab`: namespace testbeds from topology files (DESIGN.md §5, docs/lab.md).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::{Args, Subcommand, ValueEnum};
use rtlan_lab::{Lab, LabOptions, Topology};

/// `rtlan lab …`
#[derive(Debug, Subcommand)]
pub(crate) enum LabCommand {
    /// Build a lab from a topology file; it keeps running until `rtlan lab down`.
    #[command(after_help = "\
Every host, switch and router becomes a namespace `rtl-<lab>-<node>`, every link a veth pair.
Rate-limited links get a tbf qdisc on the host's egress; rtlan switches and routers pace their own
ports. Routers ([[router]], docs/lab.md \"Routers\") split the lab into subnets.
Example topology (docs/lab.md has the full format):

    [[host]]
    name = \"a\"
    [[host]]
    name = \"b\"
    [[switch]]
    name = \"s1\"
    [[link]]
    ends = [\"a\", \"s1\"]
    rate = \"100mbit\"
    [[link]]
    ends = [\"b\", \"s1\"]
    rate = \"100mbit\"

Then: rtlan lab exec --name NAME a -- ping -c3 198.18.0.2")]
    Up(UpArgs),
    /// Run a command inside a node's namespace (stdin/stdout pass through).
    Exec(ExecArgs),
    /// Show what a running rtlan switch, segment or RETHER bridge reports (counters, tables,
    /// connections, setup latency, capture status).
    Show(ShowArgs),
    /// Remove a lab: its processes, namespaces and state (also after a crash).
    Down(NameArg),
}

/// Arguments of `lab up`.
#[derive(Debug, Args)]
pub(crate) struct UpArgs {
    /// The topology file (TOML).
    topology: PathBuf,
    /// Lab name: 1-10 of [a-z0-9]; prefixes every namespace (`rtl-<name>-<node>`).
    #[arg(long)]
    name: String,
    /// Print the built lab (namespaces, addresses, MACs) as JSON.
    #[arg(long)]
    json: bool,
}

/// Arguments of `lab exec`.
#[derive(Debug, Args)]
pub(crate) struct ExecArgs {
    /// Lab name.
    #[arg(long)]
    name: String,
    /// The host or switch to run in.
    node: String,
    /// The command and its arguments (after `--`).
    #[arg(last = true, required = true)]
    command: Vec<String>,
}

/// What `lab show` prints. Each node kind answers only some (see [`ShowWhat::op_for`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ShowWhat {
    /// Per-port and switch-wide counters, timer lateness.
    Stats,
    /// The learning table (MAC → port).
    Fdb,
    /// The switch's internal ARP cache.
    Arp,
    /// The configuration in force (a RETHER bridge: its status).
    Config,
    /// The real-time connection table (switch).
    Connections,
    /// Per-hop SETUP handling times as a histogram summary (switch).
    SetupLatency,
    /// The running or last port capture (switch).
    CaptureStatus,
    /// Liveness: the node answers `pong`.
    Ping,
    /// The RETHER sessions a bridge serves.
    Sessions,
}

/// The kinds of node `lab show` can ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NodeKind {
    Switch,
    Segment,
    RetherBridge,
}

impl NodeKind {
    /// What this kind answers, in the order `lab show` lists them.
    fn offers(self) -> &'static [ShowWhat] {
        use ShowWhat::*;
        match self {
            NodeKind::Switch => &[
                Stats,
                Fdb,
                Arp,
                Config,
                Connections,
                SetupLatency,
                CaptureStatus,
                Ping,
            ],
            NodeKind::Segment => &[Stats, Config, Ping],
            NodeKind::RetherBridge => &[Stats, Fdb, Config, Sessions, Ping],
        }
    }

    fn describe(self) -> &'static str {
        match self {
            NodeKind::Switch => "an rtlan switch",
            NodeKind::Segment => "a shared segment",
            NodeKind::RetherBridge => "a RETHER bridge",
        }
    }
}

impl ShowWhat {
    /// The control-socket operation that answers `self` on a node of `kind`, or an error naming
    /// what that kind can show.
    fn op_for(self, kind: NodeKind, node: &str) -> anyhow::Result<&'static str> {
        if !kind.offers().contains(&self) {
            let names: Vec<String> = kind
                .offers()
                .iter()
                .filter_map(|w| w.to_possible_value().map(|v| v.get_name().to_string()))
                .collect();
            let this = self
                .to_possible_value()
                .map_or_else(String::new, |v| v.get_name().to_string());
            bail!(
                "`{node}` is {} and cannot show `{this}`; it has: {}",
                kind.describe(),
                names.join(", ")
            );
        }
        Ok(match (self, kind) {
            (ShowWhat::Config, NodeKind::RetherBridge) => "status",
            (ShowWhat::Stats, _) => "stats",
            (ShowWhat::Fdb, _) => "fdb",
            (ShowWhat::Arp, _) => "arp",
            (ShowWhat::Config, _) => "config",
            (ShowWhat::Connections, _) => "connections",
            (ShowWhat::SetupLatency, _) => "setup-latency",
            (ShowWhat::CaptureStatus, _) => "capture-status",
            (ShowWhat::Ping, _) => "ping",
            (ShowWhat::Sessions, _) => "sessions",
        })
    }
}

/// Arguments of `lab show`.
#[derive(Debug, Args)]
pub(crate) struct ShowArgs {
    /// Lab name.
    #[arg(long)]
    name: String,
    /// The rtlan switch (or shared segment, or RETHER bridge) to ask.
    switch: String,
    /// What to show.
    #[arg(value_enum, default_value = "stats")]
    what: ShowWhat,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// Just a lab name.
#[derive(Debug, Args)]
pub(crate) struct NameArg {
    /// Lab name.
    #[arg(long)]
    name: String,
}

pub(crate) fn run(command: LabCommand) -> anyhow::Result<ExitCode> {
    match command {
        LabCommand::Up(args) => up(args),
        LabCommand::Exec(args) => exec(args),
        LabCommand::Show(args) => show(args),
        LabCommand::Down(args) => {
            let report = rtlan_lab::down(&args.name)?;
            println!("{report}");
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn up(args: UpArgs) -> anyhow::Result<ExitCode> {
    // Signals must be blocked before any thread exists so the cleanup thread receives them.
    rtlan_lab::install_signal_cleanup()?;
    let topology = Topology::from_file(&args.topology)?;
    let exe = std::env::current_exe().context("locating the rtlan executable")?;
    let lab = Lab::up(&topology, &args.name, &LabOptions::new(exe))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&describe(&lab)?)?);
    } else {
        print_lab(&lab)?;
    }
    lab.keep();
    Ok(ExitCode::SUCCESS)
}

/// A JSON description of a running lab.
pub(crate) fn describe(lab: &Lab) -> anyhow::Result<serde_json::Value> {
    let mut hosts = Vec::new();
    for h in lab.hosts() {
        hosts.push(serde_json::json!({
            "name": h,
            "netns": lab.netns(h)?,
            "ip": lab.host_ip(h)?.to_string(),
            "mac": fmt_mac(lab.mac(h, "eth0")?),
            "bump_netns": lab.bump_netns(h),
        }));
    }
    let mut switches = Vec::new();
    for s in lab.switches() {
        let ports: Vec<_> = lab
            .switch_ports(s)?
            .into_iter()
            .map(|(ifname, peer)| serde_json::json!({"ifname": ifname, "peer": peer}))
            .collect();
        let segment = lab.segment_pid(s).is_some();
        let bridge = lab.rether_bridge_pid(s).is_some();
        switches.push(serde_json::json!({
            "name": s,
            "kind": if segment { "segment" } else if bridge { "rether-bridge" } else if lab.switch_pid(s).is_some() { "rtlan" } else { "linux-bridge" },
            "netns": lab.netns(s)?,
            "pid": lab.switch_pid(s).or(lab.segment_pid(s)).or(lab.rether_bridge_pid(s)),
            "control_socket": lab.switch_socket(s).or(lab.segment_socket(s)).or(lab.rether_bridge_socket(s)),
            "ports": ports,
        }));
    }
    let mut routers = Vec::new();
    for r in lab.routers() {
        let ports: Vec<_> = lab
            .router_ports(r)?
            .into_iter()
            .map(|(ifname, peer)| serde_json::json!({"ifname": ifname, "peer": peer}))
            .collect();
        routers.push(serde_json::json!({
            "name": r,
            "netns": lab.netns(r)?,
            "pid": lab.router_pid(r),
            "control_socket": lab.router_socket(r),
            "bird_pid": lab.bird_pid(r),
            "bird_socket": lab.bird_socket(r),
            "frr_pids": lab.frr_pids(r).map(|(zebra, ospfd)| {
                serde_json::json!({"zebra": zebra, "ospfd": ospfd})
            }),
            "frr_vty_dir": lab.frr_vty_dir(r),
            "ports": ports,
        }));
    }
    Ok(serde_json::json!({
        "lab": lab.name(),
        "hosts": hosts,
        "switches": switches,
        "routers": routers,
    }))
}

fn print_lab(lab: &Lab) -> anyhow::Result<()> {
    println!("lab `{}` is up", lab.name());
    for h in lab.hosts() {
        let bump = lab
            .bump_netns(h)
            .map_or_else(String::new, |ns| format!(", bump ns {ns}"));
        println!(
            "  host   {:<8} {:<16} {}  ns {}{bump}",
            h,
            lab.host_ip(h)?.to_string(),
            fmt_mac(lab.mac(h, "eth0")?),
            lab.netns(h)?
        );
    }
    for s in lab.switches() {
        let ports: Vec<String> = lab
            .switch_ports(s)?
            .into_iter()
            .map(|(ifname, peer)| format!("{ifname}→{peer}"))
            .collect();
        let kind = match (
            lab.switch_pid(s),
            lab.segment_pid(s),
            lab.rether_bridge_pid(s),
        ) {
            (Some(pid), _, _) => format!("rtlan pid {pid}"),
            (None, Some(pid), _) => format!("segment pid {pid}"),
            (None, None, Some(pid)) => format!("rether-bridge pid {pid}"),
            (None, None, None) => "linux-bridge".to_string(),
        };
        println!("  switch {:<8} {:<16} ports {}", s, kind, ports.join(" "));
    }
    for r in lab.routers() {
        let ports: Vec<String> = lab
            .router_ports(r)?
            .into_iter()
            .map(|(ifname, peer)| format!("{ifname}→{peer}"))
            .collect();
        let mut kind = match lab.router_pid(r) {
            Some(pid) => format!("rtlan pid {pid}"),
            None => "linux-router".to_string(),
        };
        if let Some(pid) = lab.bird_pid(r) {
            kind.push_str(&format!(", bird pid {pid}"));
        }
        if let Some((zebra, ospfd)) = lab.frr_pids(r) {
            kind.push_str(&format!(", frr zebra pid {zebra} ospfd pid {ospfd}"));
        }
        println!("  router {:<8} {:<16} ports {}", r, kind, ports.join(" "));
    }
    println!(
        "run commands with `rtlan lab exec --name {0} <node> -- <cmd>`, remove with `rtlan lab down --name {0}`",
        lab.name()
    );
    Ok(())
}

pub(crate) fn fmt_mac(mac: [u8; 6]) -> String {
    rtlan_wire::ethernet::Address(mac).to_string()
}

/// Runs a command in a node's namespace and passes its exit status through. SIGINT, SIGTERM
/// and SIGHUP sent to `rtlan` are passed on to the command (which decides whether to stop), so
/// that a supervisor stopping `lab exec` stops what it runs too; a command killed by a signal
/// exits 128 + the signal's number, as a shell reports it.
fn exec(args: ExecArgs) -> anyhow::Result<ExitCode> {
    use std::os::unix::process::ExitStatusExt;

    let lab = Lab::open(&args.name)?;
    super::signals::stop_on(&[libc::SIGINT, libc::SIGTERM, libc::SIGHUP])?;
    let mut child = lab
        .exec(&args.node, &args.command)?
        .spawn()
        .with_context(|| format!("running {:?} in {}", args.command, args.node))?;
    let pid = libc::pid_t::try_from(child.id()).context("child pid")?;
    let status = loop {
        if let Some(sig) = super::signals::take_signal() {
            // SAFETY: kill(2) on our own child's PID, which is not yet reaped (try_wait below
            // reaps it), so it cannot name another process.
            unsafe { libc::kill(pid, sig) };
        }
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => std::thread::sleep(std::time::Duration::from_millis(20)),
            Err(e) => return Err(e).context("waiting for the command"),
        }
    };
    Ok(match (status.code(), status.signal()) {
        (Some(0), _) => ExitCode::SUCCESS,
        (Some(code), _) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        (None, Some(sig)) => ExitCode::from(u8::try_from(128 + sig).unwrap_or(1)),
        (None, None) => ExitCode::FAILURE,
    })
}

/// Prints a learning table (`fdb`: MAC, port, age) with the node each port leads to.
fn print_fdb(lab: &Lab, node: &str, data: &serde_json::Value) -> anyhow::Result<()> {
    let ports = lab.switch_ports(node)?;
    println!(
        "{:<18} {:<5} {:<10} {:>10}",
        "mac", "port", "towards", "age"
    );
    for e in data.as_array().into_iter().flatten() {
        let port = e["port"].as_u64().unwrap_or(u64::MAX);
        let towards = usize::try_from(port)
            .ok()
            .and_then(|p| ports.get(p))
            .map_or("?", |(_, peer)| peer.as_str());
        let age_s = e["age_ns"].as_f64().unwrap_or(0.0) / 1e9;
        println!(
            "{:<18} p{:<4} {:<10} {:>9.1}s",
            e["mac"].as_str().unwrap_or("?"),
            port,
            towards,
            age_s
        );
    }
    Ok(())
}

fn show(args: ShowArgs) -> anyhow::Result<ExitCode> {
    let lab = Lab::open(&args.name)?;
    let (kind, socket) = if let Some(socket) = lab.switch_socket(&args.switch) {
        (NodeKind::Switch, socket)
    } else if let Some(socket) = lab.segment_socket(&args.switch) {
        (NodeKind::Segment, socket)
    } else if let Some(socket) = lab.rether_bridge_socket(&args.switch) {
        (NodeKind::RetherBridge, socket)
    } else {
        bail!(
            "`{}` is not an rtlan switch, segment or RETHER bridge of lab `{}` (Linux bridges have `bridge fdb`)",
            args.switch,
            args.name
        );
    };
    let op = args.what.op_for(kind, &args.switch)?;
    let data = rtlan_linux::ctl::request(&socket, op)?;
    if args.json {
        let data = match args.what {
            ShowWhat::SetupLatency => setup_latency_summary(&data)?,
            _ => data,
        };
        println!("{}", serde_json::to_string_pretty(&data)?);
        return Ok(ExitCode::SUCCESS);
    }
    match args.what {
        ShowWhat::Fdb => print_fdb(&lab, &args.switch, &data)?,
        ShowWhat::Arp => {
            println!("{:<16} mac", "ip");
            for e in data.as_array().into_iter().flatten() {
                println!(
                    "{:<16} {}",
                    e["ip"].as_str().unwrap_or("?"),
                    e["mac"].as_str().unwrap_or("?")
                );
            }
        }
        ShowWhat::Connections => print_connections(&lab, &args.switch, &data)?,
        ShowWhat::SetupLatency => {
            let summary = setup_latency_summary(&data)?;
            println!(
                "{:<5} {:>7} {:>10} {:>10} {:>10} {:>10}",
                "kind", "count", "min µs", "p50 µs", "p99 µs", "max µs"
            );
            for kind in ["hit", "miss"] {
                let s = &summary[kind];
                let us = |k: &str| {
                    s[k].as_u64()
                        .map_or_else(|| "-".to_string(), |ns| format!("{:.1}", ns as f64 / 1e3))
                };
                println!(
                    "{kind:<5} {:>7} {:>10} {:>10} {:>10} {:>10}",
                    s["count"].as_u64().unwrap_or(0),
                    us("min_ns"),
                    us("p50_ns"),
                    us("p99_ns"),
                    us("max_ns")
                );
            }
        }
        ShowWhat::Ping => println!("{}", data.as_str().unwrap_or("?")),
        _ => println!("{}", serde_json::to_string_pretty(&data)?),
    }
    Ok(ExitCode::SUCCESS)
}

/// The switch's `setup-latency` reply (`{"hit_ns":[…],"miss_ns":[…]}`) summarised per kind
/// through [`rtlan_core::latency::Histogram`]: count, min, p50, p99, max (ns; null when empty).
fn setup_latency_summary(data: &serde_json::Value) -> anyhow::Result<serde_json::Value> {
    let mut out = serde_json::Map::new();
    for kind in ["hit", "miss"] {
        let samples = data[format!("{kind}_ns")]
            .as_array()
            .with_context(|| format!("setup-latency reply has no `{kind}_ns` array"))?;
        let hist: rtlan_core::latency::Histogram = samples
            .iter()
            .map(|v| {
                v.as_u64()
                    .context("setup-latency sample is not a whole number")
            })
            .collect::<anyhow::Result<Vec<u64>>>()?
            .into_iter()
            .collect();
        out.insert(
            kind.to_string(),
            serde_json::json!({
                "count": hist.len(),
                "min_ns": hist.min_ns(),
                "p50_ns": hist.quantile_ns(0.5),
                "p99_ns": hist.quantile_ns(0.99),
                "max_ns": hist.max_ns(),
            }),
        );
    }
    Ok(serde_json::Value::Object(out))
}

/// Prints a switch's `connections` reply as a table, ports named by the node they lead to.
fn print_connections(lab: &Lab, node: &str, data: &serde_json::Value) -> anyhow::Result<()> {
    let ports = lab.switch_ports(node)?;
    let towards = |v: &serde_json::Value| {
        v.as_u64()
            .and_then(|p| usize::try_from(p).ok())
            .and_then(|p| ports.get(p))
            .map_or_else(|| "?".to_string(), |(_, peer)| peer.clone())
    };
    let id = |v: &serde_json::Value| {
        v.as_u64()
            .map_or_else(|| "-".to_string(), |i| i.to_string())
    };
    println!(
        "{:<12} {:>5} {:<12} {:>5} {:<21} {:>10} {:>8} {:>9} {:>10} {:>8}",
        "in (from)",
        "id",
        "out (to)",
        "id",
        "destination",
        "rate",
        "burst B",
        "θ µs",
        "sent",
        "dropped"
    );
    for c in data.as_array().into_iter().flatten() {
        println!(
            "{:<12} {:>5} {:<12} {:>5} {:<21} {:>10} {:>8} {:>9.1} {:>10} {:>8}",
            format!(
                "p{} {}",
                c["in_port"].as_u64().unwrap_or(0),
                towards(&c["in_port"])
            ),
            id(&c["in_id"]),
            format!(
                "p{} {}",
                c["out_port"].as_u64().unwrap_or(0),
                towards(&c["out_port"])
            ),
            id(&c["out_id"]),
            format!(
                "{}:{}",
                c["dst_ip"].as_str().unwrap_or("?"),
                c["dst_port"].as_u64().unwrap_or(0)
            ),
            rtlan_core::units::format_rate(c["rate_bps"].as_u64().unwrap_or(0)),
            c["burst_bytes"].as_u64().unwrap_or(0),
            c["latency_ns"].as_f64().unwrap_or(0.0) / 1e3,
            c["frames_sent"].as_u64().unwrap_or(0),
            c["frames_dropped"].as_u64().unwrap_or(0),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setup_latency_is_summarised_per_kind() {
        let data = serde_json::json!({"hit_ns": [41000, 38500, 40000], "miss_ns": []});
        let s = setup_latency_summary(&data).unwrap();
        assert_eq!(s["hit"]["count"], 3);
        assert_eq!(s["hit"]["min_ns"], 38500);
        assert_eq!(s["hit"]["max_ns"], 41000);
        let p50 = s["hit"]["p50_ns"].as_u64().unwrap();
        assert!((38500..=41000).contains(&p50), "{s}");
        assert_eq!(s["miss"]["count"], 0);
        assert_eq!(s["miss"]["p99_ns"], serde_json::Value::Null);
        assert!(setup_latency_summary(&serde_json::json!({"hit_ns": [1]})).is_err());
        assert!(
            setup_latency_summary(&serde_json::json!({"hit_ns": [-1], "miss_ns": []})).is_err()
        );
    }

    #[test]
    fn each_kind_offers_only_what_it_answers() {
        assert_eq!(
            ShowWhat::Config
                .op_for(NodeKind::RetherBridge, "br")
                .unwrap(),
            "status"
        );
        assert_eq!(
            ShowWhat::SetupLatency
                .op_for(NodeKind::Switch, "s1")
                .unwrap(),
            "setup-latency"
        );
        let e = ShowWhat::Connections
            .op_for(NodeKind::Segment, "g")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("shared segment") && e.contains("stats, config, ping"),
            "{e}"
        );
        let e = ShowWhat::Arp
            .op_for(NodeKind::RetherBridge, "br")
            .unwrap_err()
            .to_string();
        assert!(e.contains("sessions"), "{e}");
        // Every item is answered by some kind.
        for what in ShowWhat::value_variants() {
            assert!(
                [NodeKind::Switch, NodeKind::Segment, NodeKind::RetherBridge]
                    .iter()
                    .any(|k| what.op_for(*k, "n").is_ok()),
                "{what:?}"
            );
        }
    }
}
