//! `rtlan`: real-time, bandwidth-guaranteed communication over commodity switched Ethernet.
//!
//! The one binary. Every subcommand is a thin shell over the library crates (DESIGN.md §2, §4):
//! `switch` runs the user-space switch (`rtlan-linux`), `lab` builds namespace testbeds
//! (`rtlan-lab`), `demo` shows it all working, `bench` compares it with the Linux bridge.

mod cmd;

use clap::{Parser, Subcommand};

/// rtlan: a software real-time Ethernet switch and its testbed.
///
/// Start with `rtlan demo`: four hosts in network namespaces, a 50 Mbit/s reservation kept through a
/// UDP flood on an rtlan switch, and the same traffic on the Linux bridge for comparison.
#[derive(Debug, Parser)]
#[command(
    name = "rtlan",
    version,
    propagate_version = true,
    max_term_width = 100
)]
pub(crate) struct Cli {
    /// Least severe log messages written to stderr: error, warn, info, debug or trace (or a
    /// `tracing` filter such as `rtlan_linux=debug`). `RUST_LOG`, when set, wins.
    #[arg(long, global = true, default_value = DEFAULT_LOG_LEVEL, value_name = "LEVEL")]
    log_level: String,
    #[command(subcommand)]
    command: Command,
}

/// The log level without `--log-level` or `RUST_LOG`: warnings only, so that a daemon says when
/// something degrades (no SCHED_FIFO, a port down, a booking dropped) without flooding the
/// stderr of tests and labs with its routine progress.
const DEFAULT_LOG_LEVEL: &str = "warn";

/// Installs the process's one log subscriber: plain lines on stderr (what journald keeps), ANSI
/// colours only when stderr is a terminal. The filter is `RUST_LOG` when set and valid, else
/// `--log-level`; an invalid filter is reported and the default used, never fatal.
fn init_logging(log_level: &str) {
    use std::io::IsTerminal;
    use tracing_subscriber::EnvFilter;

    let mut problem = None;
    let filter = match std::env::var("RUST_LOG") {
        Ok(env) if !env.trim().is_empty() => EnvFilter::try_new(&env).unwrap_or_else(|e| {
            problem = Some(format!("RUST_LOG={env:?} ignored: {e}"));
            EnvFilter::new(DEFAULT_LOG_LEVEL)
        }),
        _ => EnvFilter::try_new(log_level).unwrap_or_else(|e| {
            problem = Some(format!("--log-level {log_level:?} ignored: {e}"));
            EnvFilter::new(DEFAULT_LOG_LEVEL)
        }),
    };
    let installed = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(true)
        .try_init();
    if installed.is_err() {
        return;
    }
    if let Some(problem) = problem {
        tracing::warn!("{problem}");
    }
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the user-space switch on the interfaces named in a config file.
    Switch(cmd::switch::SwitchArgs),
    /// Run the QSR router (IPv4 forwarding) on the interfaces named in a config file.
    Router(cmd::router::RouterArgs),
    /// Run the RETHER agent: a host's bump in the wire onto a shared segment (timed token).
    Rether(cmd::rether::RetherArgs),
    /// Run a RETHER bridge: an rtlan node joining shared segments (RETHER §2.5).
    RetherBridge(cmd::rether_bridge::RetherBridgeArgs),
    /// Run an emulated shared Ethernet segment (CSMA/CD) on the interfaces named in a config file.
    Segment(cmd::segment::SegmentArgs),
    /// Run the host daemon that reserves real-time connections for local applications.
    Rtcd(cmd::rtcd::RtcdArgs),
    /// Reserve a real-time connection and hold it (prints the proxy IP to send to).
    Reserve(cmd::reserve::ReserveArgs),
    /// Send a UDP probe stream, plain and paced or over a reserved connection.
    Send(cmd::send::SendArgs),
    /// Receive a probe stream and report rate, loss, delay and jitter.
    Recv(cmd::recv::RecvArgs),
    /// Flood an interface with identical UDP frames as fast as it takes them (waits, never
    /// fails, when the kernel pushes back).
    Flood(cmd::flood::FloodArgs),
    /// Print the tc commands (TBF or HTB) that make a plain Linux host conform to a T-SPEC.
    TcConfig(cmd::tc_config::TcConfigArgs),
    /// Build, enter and remove namespace testbeds from topology files.
    #[command(subcommand)]
    Lab(cmd::lab::LabCommand),
    /// Show a reserved 50 Mbit/s connection keeping its rate through a flood, on rtlan and on the
    /// Linux bridge (embedded topology).
    Demo(cmd::demo::DemoArgs),
    /// Reproduce the papers' figures and tables in a lab (results.json + plot per experiment).
    #[command(subcommand)]
    Experiment(cmd::experiment::ExperimentCommand),
    /// Worst-case backlog and delay bounds of a network file, and the admission verdict.
    Analyze(cmd::analyze::AnalyzeArgs),
    /// Run the bandwidth manager: central admission with delay bounds over TCP (docs/bwm.md).
    Bwm(cmd::bwm::BwmArgs),
    /// Ask a running bandwidth manager: list bookings, topology and bounds; release, refresh.
    Bwmctl(cmd::bwmctl::BwmctlArgs),
    /// Every reservation on the network with its path and delay bound, from the switches
    /// (per-hop admission) or the bandwidth manager (docs/netview.md).
    Reservations(cmd::reservations::ReservationsArgs),
    /// Benchmarks against the Linux bridge, built in the same run.
    #[command(subcommand)]
    Bench(cmd::bench::BenchCommand),
    /// Simulate a scenario (topology + traffic) on virtual time with the real switch and
    /// host-daemon cores (docs/sim.md).
    Sim(cmd::sim::SimArgs),
    /// Talk to any daemon's management socket: stats, fdb, connections, bookings, … as tables.
    Ctl(cmd::ctl::CtlArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) for rtlan.
    Completions(cmd::completions::CompletionsArgs),
    /// Write man pages for rtlan and every subcommand into a directory.
    Man(cmd::completions::ManArgs),
}

/// The process's allocator: mimalloc (Leijen, Zorn and de Moura, "Mimalloc: Free List Sharding
/// in Action", APLAS 2019) instead of glibc's malloc. Reading a network file (`rtlan analyze`,
/// `rtlan bwm`) allocates and frees tens of thousands of small strings; with glibc's malloc that
/// was about a third of the read of a 1,000-flow file (docs/benchmarks.md, "Reading a network
/// file"). It serves every subcommand; the switch's data path does not allocate per frame, so
/// there it only changes start-up and control-plane work.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    init_logging(&cli.log_level);
    let result = match cli.command {
        Command::Switch(args) => cmd::switch::run(args),
        Command::Router(args) => cmd::router::run(args),
        Command::Rether(args) => cmd::rether::run(args),
        Command::RetherBridge(args) => cmd::rether_bridge::run(args),
        Command::Segment(args) => cmd::segment::run(args),
        Command::Rtcd(args) => cmd::rtcd::run(args),
        Command::Reserve(args) => cmd::reserve::run(args),
        Command::Send(args) => cmd::send::run(args),
        Command::Recv(args) => cmd::recv::run(args),
        Command::Flood(args) => cmd::flood::run(args),
        Command::TcConfig(args) => cmd::tc_config::run(args),
        Command::Lab(c) => cmd::lab::run(c),
        Command::Demo(args) => cmd::demo::run(args),
        Command::Analyze(args) => cmd::analyze::run(args),
        Command::Sim(args) => cmd::sim::run(args),
        Command::Bwm(args) => cmd::bwm::run(args),
        Command::Bwmctl(args) => cmd::bwmctl::run(args),
        Command::Reservations(args) => cmd::reservations::run(args),
        Command::Bench(c) => cmd::bench::run(c),
        Command::Experiment(c) => cmd::experiment::run(c),
        Command::Ctl(args) => cmd::ctl::run(args),
        Command::Completions(args) => cmd::completions::completions(args),
        Command::Man(args) => cmd::completions::man(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("rtlan: error: {}", render_chain(&e));
            if let Some(hint) = privilege_hint(&e) {
                eprintln!("rtlan: hint: {hint}");
            }
            std::process::ExitCode::FAILURE
        }
    }
}

/// `e` and its causes joined by `: `, each cause left out when the text so far already says it
/// (many errors print their source in their own message too; the OS error is then said once).
fn render_chain(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain() {
        let said = cause.to_string();
        if text.is_empty() {
            text = said;
        } else if !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
    }
    text
}

/// A hint when `e` comes from a refused privilege (EPERM or EACCES anywhere in its chain) and the
/// process is not root: packet sockets, XDP, namespaces and qdiscs need root or capabilities.
fn privilege_hint(e: &anyhow::Error) -> Option<&'static str> {
    let refused = e.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| matches!(io.raw_os_error(), Some(libc::EPERM | libc::EACCES)))
    });
    // SAFETY: geteuid(2) has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    (refused && !root).then_some(
        "this needs root, or the capabilities CAP_NET_RAW and CAP_NET_ADMIN \
         (`sudo setcap cap_net_raw,cap_net_admin+ep $(command -v rtlan)`); `rtlan lab` needs root",
    )
}
