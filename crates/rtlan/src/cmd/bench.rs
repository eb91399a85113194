//! `rtlan bench`: lab benchmarks against the Linux bridge, built in the same run (DESIGN.md §6:
//! "speed is measured by benchmarks … against the Linux bridge in the same run, reported as
//! ratios"; EtheReal §4.3, "Prototype Implementation Efficiency").
//!
//! `bench forward` builds the same two-host, one-switch topology with unlimited veth links once
//! with an rtlan switch and once with a Linux bridge (and, unless told not to, once more with a
//! bridge and veth offloads on), then measures on each, interleaved run by run: the forwarding
//! rate of minimum-size frames (trafgen pinned to one CPU, the rtlan data plane to the other),
//! TCP throughput (iperf3) and UDP round-trip latency (sockperf ping-pong at a fixed rate).
//! docs/benchmarks.md has the method and the figures measured on the development machine.

mod bwm;
mod measure;
mod report;
mod setup;
mod sink;

use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use rtlan_lab::{Lab, LabOptions, Topology};

use measure::{Settings, HOST_A, HOST_B};
use report::{Document, Machine, Variant, VariantRuns};

/// `rtlan bench …`
#[derive(Debug, Subcommand)]
pub(crate) enum BenchCommand {
    /// Packet rate, TCP throughput and UDP latency: rtlan vs the Linux bridge.
    #[command(after_help = "\
Builds hosts a and b on one switch (unlimited veth links) as an rtlan lab `bfr<pid>`, a Linux
bridge lab `bfb<pid>` (veth offloads off, like rtlan: the fair comparison) and a Linux bridge lab
`bfo<pid>` with offloads on; all are removed on exit, also on error or Ctrl-C. Each run measures,
on each lab in turn:

  forwarding rate  trafgen floods FRAME_LEN-byte frames from a (pinned to CPU 0; the rtlan data
                   plane is pinned to CPU 1); frames received per second at b's interface over
                   the window, and frames offered per second at a's. b discards the flood
                   through an unread UDP socket rather than answering each frame with an ICMP
                   error (on veth, b's stack runs on the CPU that forwarded the frame)
  TCP throughput   iperf3 a -> b, one stream
  UDP latency      sockperf ping-pong a -> b with --full-rtt at MPS messages/s: median and p99

Each figure is the median of RUNS runs; ratios are rtlan/bridge. Needs root and trafgen
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
    Setup(setup::SetupArgs),
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
    Bwm(bwm::BwmArgs),
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
    /// Skip the Linux-bridge lab with veth offloads on.
    #[arg(long)]
    no_offloads_baseline: bool,
    /// Leave the labs running afterwards (remove them with `rtlan lab down --name …`).
    #[arg(long)]
    keep: bool,
}

pub(crate) fn run(command: BenchCommand) -> anyhow::Result<ExitCode> {
    match command {
        BenchCommand::Forward(args) => forward(args),
        BenchCommand::Setup(args) => setup::run(args),
        BenchCommand::Bwm(args) => bwm::run(args),
    }
}

/// The benchmark topology: hosts a and b on switch s1, unlimited links.
fn topology_text(variant: Variant, switch_cpu: Option<usize>) -> String {
    let (kind, offloads) = match variant {
        Variant::Rtlan => ("rtlan", false),
        Variant::Bridge => ("linux-bridge", false),
        Variant::BridgeOffloads => ("linux-bridge", true),
    };
    let cpu = match (variant, switch_cpu) {
        (Variant::Rtlan, Some(cpu)) => format!("cpu = {cpu}\n"),
        _ => String::new(),
    };
    format!(
        "[lab]\noffloads = {offloads}\n\n\
         [[host]]\nname = \"{HOST_A}\"\n\n[[host]]\nname = \"{HOST_B}\"\n\n\
         [[switch]]\nname = \"{sw}\"\nkind = \"{kind}\"\n{cpu}\n\
         [[link]]\nends = [\"{HOST_A}\", \"{sw}\"]\n\n[[link]]\nends = [\"{HOST_B}\", \"{sw}\"]\n",
        sw = measure::SWITCH,
    )
}

/// `bfr<pid>` / `bfb<pid>` / `bfo<pid>`: unique per process, at most 10 characters.
fn lab_name(variant: Variant) -> String {
    let tag = match variant {
        Variant::Rtlan => "bfr",
        Variant::Bridge => "bfb",
        Variant::BridgeOffloads => "bfo",
    };
    format!("{tag}{}", std::process::id() % 10_000_000)
}

/// Builds one lab and checks that a reaches b (which also teaches the switch both stations).
fn build(variant: Variant, switch_cpu: Option<usize>) -> anyhow::Result<Lab> {
    let name = lab_name(variant);
    let topology = Topology::from_str(&topology_text(variant, switch_cpu), "bench forward")
        .context("the benchmark topology")?;
    let exe = std::env::current_exe().context("locating the rtlan executable")?;
    let lab = Lab::up(&topology, &name, &LabOptions::new(exe))
        .with_context(|| format!("building lab `{name}`"))?;
    let ping = rtlan_lab::tools::ping(
        lab.netns(HOST_A)?,
        lab.host_ip(HOST_B)?,
        3,
        Duration::from_millis(100),
    )?;
    if ping.received == 0 {
        bail!("lab `{name}`: host a cannot reach host b ({ping:?})");
    }
    Ok(lab)
}

fn forward(args: ForwardArgs) -> anyhow::Result<ExitCode> {
    // Signals must be blocked before any thread exists so the cleanup thread receives them.
    rtlan_lab::install_signal_cleanup()?;
    let started = SystemTime::now();
    let machine = Machine::this();
    // Two CPUs: the flood on one, the rtlan data plane on the other. With one, pin nothing.
    let (trafgen_cpu, switch_cpu) = if machine.nproc >= 2 {
        (Some(0), Some(1))
    } else {
        (None, None)
    };
    let settings = Settings {
        seconds: args.seconds,
        frame_len: usize::from(args.frame_len),
        trafgen_cpu,
        mps: args.mps,
        msg_size: args.msg_size,
    };
    let mut variants = vec![Variant::Rtlan, Variant::Bridge];
    if !args.no_offloads_baseline {
        variants.push(Variant::BridgeOffloads);
    }

    // Timing-sensitive: never share the machine with lab tests (DESIGN.md §7).
    let _lock = rtlan_lab::serial_lock()?;
    let steps = variants.len() as u64 * (1 + 3 * u64::from(args.runs));
    let progress = ProgressBar::new(steps);
    progress.set_style(
        ProgressStyle::with_template("{elapsed:>4} [{bar:30}] {pos}/{len} {msg}")
            .context("progress template")?
            .progress_chars("=> "),
    );
    let mut labs = Vec::new();
    let mut results = Vec::new();
    for &v in &variants {
        progress.set_message(format!("building {} lab", v.heading()));
        let lab = build(v, switch_cpu)?;
        results.push(VariantRuns::new(
            v,
            lab.name().to_string(),
            matches!(v, Variant::BridgeOffloads),
        ));
        labs.push(lab);
        progress.inc(1);
    }
    for run in 1..=args.runs {
        for (lab, runs) in labs.iter().zip(results.iter_mut()) {
            let who = runs.variant.heading();
            progress.set_message(format!("run {run}: {who} forwarding rate"));
            runs.pps.push(measure::forwarding_rate(lab, &settings)?);
            progress.inc(1);
            progress.set_message(format!("run {run}: {who} TCP throughput"));
            runs.tcp.push(measure::tcp_throughput(lab, &settings)?);
            progress.inc(1);
            progress.set_message(format!("run {run}: {who} UDP latency"));
            runs.latency.push(measure::udp_latency(lab, &settings)?);
            progress.inc(1);
        }
    }
    progress.finish_and_clear();

    if args.json {
        let date = report::rfc3339_utc(
            started
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
        );
        let doc = Document::new(
            std::env::args().collect(),
            date,
            machine,
            settings,
            switch_cpu,
            &results,
        );
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        print!(
            "{}",
            report::table(&results, &settings, &machine, args.runs)
        );
    }
    if args.keep {
        for lab in labs {
            eprintln!("kept lab `{}`", lab.name());
            lab.keep();
        }
    }
    // Otherwise the labs are removed as they drop.
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topologies_parse_and_differ_where_they_should() {
        let rtlan = Topology::from_str(&topology_text(Variant::Rtlan, Some(1)), "t")
            .expect("rtlan topology parses");
        let bridge = Topology::from_str(&topology_text(Variant::BridgeOffloads, Some(1)), "t")
            .expect("bridge topology parses");
        assert_eq!(rtlan.switch_ports("s1"), bridge.switch_ports("s1"));
        let text = topology_text(Variant::Rtlan, Some(1));
        assert!(text.contains("cpu = 1") && text.contains("offloads = false"));
        let text = topology_text(Variant::BridgeOffloads, Some(1));
        assert!(!text.contains("cpu ="), "a bridge takes no cpu option");
        assert!(text.contains("offloads = true"));
        assert!(!topology_text(Variant::Rtlan, None).contains("cpu ="));
    }

    #[test]
    fn lab_names_are_valid_and_distinct() {
        let names: Vec<String> = [Variant::Rtlan, Variant::Bridge, Variant::BridgeOffloads]
            .into_iter()
            .map(lab_name)
            .collect();
        for n in &names {
            assert!(rtlan_lab::valid_lab_name(n), "{n}");
        }
        assert_ne!(names[0], names[1]);
        assert_ne!(names[1], names[2]);
    }
}
