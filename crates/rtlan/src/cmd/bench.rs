//! `rtlan bench`: lab benchmarks against the Linux bridge, built in the same run (DESIGN.md §6),
//! run by the `rtlan-experiments` library (`bench::{forward, setup, bwm}`); this shell parses
//! the arguments, draws the progress and prints the table or the JSON document.
//! docs/benchmarks.md has the method and the figures measured on the development machine.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};
use rtlan_experiments::bench::bwm::BwmSettings;
use rtlan_experiments::bench::forward::ForwardSettings;
use rtlan_experiments::bench::setup::SetupSettings;
use rtlan_experiments::bench::{bwm, forward, setup};

use super::runner::{bar, draw};

/// `rtlan bench …`
#[derive(Debug, Subcommand)]
pub(crate) enum BenchCommand {
    /// Packet rate, TCP throughput and UDP latency: rtlan vs the Linux bridge.
    #[command(after_help = "\
Builds hosts a and b on one switch (unlimited veth links) as an rtlan lab `bfr<pid>` and a Linux
bridge lab `bfb<pid>` (both veth offloads off: the fair comparison), and, unless
--no-offloads-baseline, a Linux bridge lab `bfo<pid>` and an rtlan lab `bfx<pid>` with offloads on
(TCP super-frames cross rtlan's fast path whole); --router builds routers instead (`brr`, `brk`,
`bro`, `brx`). All are removed on exit, also on error or Ctrl-C. Each run measures, on each lab in
turn:

  forwarding rate  trafgen floods FRAME_LEN-byte frames from a (pinned to CPU 0; the rtlan data
                   plane is pinned to CPU 1); frames received per second at b's interface over
                   the window, and frames offered per second at a's. b discards the flood
                   through an unread UDP socket rather than answering each frame with an ICMP
                   error (on veth, b's stack runs on the CPU that forwarded the frame)
  TCP throughput   iperf3 a -> b, one stream
  UDP latency      sockperf ping-pong a -> b with --full-rtt at MPS messages/s: median and p99

Each figure is the median of RUNS runs; ratios are rtlan/bridge with offloads off and
rtlan+offl/bridge+offl with offloads on. Needs root and trafgen
(netsniff-ng), iperf3, sockperf, taskset. docs/benchmarks.md explains the figures.")]
    Forward(ForwardArgs),
    /// Connection-setup time, end to end and per hop, ARP-cache hit and miss (EtheReal §4.3).
    #[command(after_help = "\
Builds topologies/default.toml (a -> c across one switch, lab `bs1<pid>`) and then
topologies/chain3.toml (a -> c across s1, s2, s3, lab `bs3<pid>`), starts `rtlan rtcd` on a, and
for each of two cases opens and closes RUNS connections a -> c one after another:

  ARP hit   the switches' internal ARP caches hold c (a first connection warmed them)
  ARP miss  `flush-arp` on every switch before each open, so each hop probes for c

End to end: the client's time from writing `open` to reading `opened`. Per hop: the switches'
own SETUP handling times (`setup-latency`), the samples added during the case. Labs are removed
on exit, also on error or Ctrl-C. Needs root. docs/benchmarks.md has the figures.")]
    Setup(SetupArgs),
    /// Admission latency through a running bandwidth manager with 10,000 booked flows
    /// (seed 004 §3.2): restart, admit, release, journal and snapshot writes.
    #[command(after_help = "\
Writes a state file with --flows bookings (100 kbit/s, random host pairs) on a leaf–spine network
of 90 leaf and 10 spine switches (1 Gbit/s, 8 hosts per leaf: the criterion benchmark's), starts
the manager from it on 127.0.0.1 (re-admitting every booking with all checks: the restart time),
then admits and releases one more flow --samples times over TCP, timing each answer as a client
sees it. The manager answers only after journalling the change (append, fdatasync); every 1024
changes and at start it rewrites the whole snapshot (write, fsync, rename). Both are timed alone
as well. No root or lab needed. docs/benchmarks.md has the figures.")]
    Bwm(BwmArgs),
}

/// Arguments of `bench forward`.
#[derive(Debug, Args)]
pub(crate) struct ForwardArgs {
    /// Print a JSON document (every run, medians, ratios, machine, command line) instead of the
    /// table.
    #[arg(long)]
    json: bool,
    /// Runs per switch; each figure is the median over the runs.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=20))]
    runs: u32,
    /// Length of each measurement, seconds.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=60))]
    seconds: u32,
    /// Ethernet frame length of the flood, FCS included (64 = minimum size).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u16).range(64..=1518))]
    frame_len: u16,
    /// sockperf ping-pong messages per second (a fixed, moderate rate so that the client does not
    /// keep a CPU busy).
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    mps: u32,
    /// sockperf message (UDP payload) size, bytes.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(14..=1472))]
    msg_size: u32,
    /// Skip the two labs with veth offloads on: the Linux bridge (or kernel router) and rtlan's.
    #[arg(long)]
    no_offloads_baseline: bool,
    /// Measure the rtlan router against the kernel's own forwarding (a and b on two subnets,
    /// router r1 between them) instead of the switch against the bridge.
    #[arg(long)]
    router: bool,
    /// The rtlan switch's or router's port sockets (docs/afxdp.md).
    #[arg(long, value_enum, default_value = "af_packet")]
    data_plane: DataPlaneArg,
    /// On AF_XDP, keep every frame in the switch's user-space path (no XDP fast path for
    /// best-effort frames, docs/fastpath.md).
    #[arg(long)]
    no_fast_path: bool,
    /// The rtlan switches kick each port's TX ring from a thread of the port's own, on a CPU
    /// other than the data plane's (docs/threads.md).
    #[arg(long)]
    tx_threads: bool,
    /// What floods: `trafgen`, or `rtlan` (`rtlan flood`, which waits for room when the kernel
    /// pushes back instead of failing, as trafgen does under receive steering).
    #[arg(long, value_enum, default_value = "trafgen")]
    generator: GeneratorArg,
    /// The rtlan switches (with --router, the rtlan router) receive on each port in a kernel
    /// thread of its own (`napi_threads`: threaded NAPI, with GRO on, as a veth has NAPI only
    /// so) instead of in the sender's softirq (docs/threads.md "Threaded receive").
    #[arg(long)]
    napi_threads: bool,
    /// The Linux bridge's (kernel router's) ports get the same threaded NAPI, for a like-for-like
    /// ratio.
    #[arg(long)]
    napi_threads_baseline: bool,
    /// Leave the labs running afterwards (remove them with `rtlan lab down --name …`).
    #[arg(long)]
    keep: bool,
}

/// `--generator`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(crate) enum GeneratorArg {
    /// trafgen (netsniff-ng).
    Trafgen,
    /// `rtlan flood`.
    Rtlan,
}

/// `--data-plane`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(crate) enum DataPlaneArg {
    /// AF_PACKET rings.
    #[value(name = "af_packet")]
    AfPacket,
    /// AF_XDP sockets with the steering program.
    #[value(name = "af_xdp")]
    AfXdp,
}

impl From<DataPlaneArg> for rtlan_linux::xdp::DataPlane {
    fn from(arg: DataPlaneArg) -> Self {
        match arg {
            DataPlaneArg::AfPacket => rtlan_linux::xdp::DataPlane::AfPacket,
            DataPlaneArg::AfXdp => rtlan_linux::xdp::DataPlane::AfXdp,
        }
    }
}

/// Arguments of `bench setup`.
#[derive(Debug, Args)]
pub(crate) struct SetupArgs {
    /// Print a JSON document (cases, targets, machine, command line) instead of the table.
    #[arg(long)]
    json: bool,
    /// Connections opened (and closed) per topology and case.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(1..=2000))]
    runs: u32,
}

/// Arguments of `bench bwm`.
#[derive(Debug, Args)]
pub(crate) struct BwmArgs {
    /// Connections booked before measuring.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u32).range(0..=100_000))]
    flows: u32,
    /// Admit/release pairs measured.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    samples: u32,
    /// Directory for the state file [default: a fresh directory under the system temp dir,
    /// removed afterwards].
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Print a JSON document instead of the table.
    #[arg(long)]
    json: bool,
}

/// The progress bar of `bench forward` and `bench setup`.
const BAR: &str = "{elapsed:>4} [{bar:30}] {pos}/{len} {msg}";

pub(crate) fn run(command: BenchCommand) -> anyhow::Result<ExitCode> {
    let exe = || std::env::current_exe().context("locating the rtlan executable");
    match command {
        BenchCommand::Forward(args) => {
            let settings = ForwardSettings {
                runs: args.runs,
                seconds: args.seconds,
                frame_len: args.frame_len,
                mps: args.mps,
                msg_size: args.msg_size,
                offloads_baseline: !args.no_offloads_baseline,
                router: args.router,
                data_plane: args.data_plane.into(),
                fast_path: !args.no_fast_path,
                tx_threads: args.tx_threads,
                generator: match args.generator {
                    GeneratorArg::Trafgen => rtlan_experiments::bench::Generator::Trafgen,
                    GeneratorArg::Rtlan => rtlan_experiments::bench::Generator::RtlanFlood,
                },
                napi_threads: args.napi_threads,
                napi_threads_baseline: args.napi_threads_baseline,
                keep: args.keep,
                exe: exe()?,
            };
            let progress = bar(BAR)?;
            let report = forward::run(&settings, &|s| draw(&progress, s));
            progress.finish_and_clear();
            let report = report?;
            if args.json {
                println!("{}", report.json(std::env::args().collect())?);
            } else {
                print!("{}", report.table());
            }
        }
        BenchCommand::Setup(args) => {
            let settings = SetupSettings {
                runs: args.runs,
                exe: exe()?,
            };
            let progress = bar(BAR)?;
            let report = setup::run(&settings, &|s| draw(&progress, s));
            progress.finish_and_clear();
            let report = report?;
            if args.json {
                println!("{}", report.json(std::env::args().collect())?);
            } else {
                print!("{}", report.table());
            }
        }
        BenchCommand::Bwm(args) => {
            let settings = BwmSettings {
                flows: args.flows,
                samples: args.samples,
                dir: args.dir,
            };
            let progress = bar("{bar:30} {pos}/{len} {msg}")?;
            if args.json {
                progress.set_draw_target(indicatif::ProgressDrawTarget::hidden());
            }
            let report = bwm::run(&settings, &|s| draw(&progress, s));
            progress.finish_and_clear();
            let report = report?;
            if args.json {
                println!("{}", report.json()?);
            } else {
                print!("{}", report.table());
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
