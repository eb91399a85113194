//! `rtlan bench forward`: lab benchmarks against the Linux bridge, built in the same run (DESIGN.md §6:
//! "speed is measured by benchmarks … against the Linux bridge in the same run, reported as
//! ratios"; EtheReal §4.3, "Prototype Implementation Efficiency").
//!
//! `bench forward` builds the same two-host, one-switch topology with unlimited veth links once
//! with an rtlan switch and once with a Linux bridge, both with veth offloads off (and, unless
//! told not to, twice more with veth offloads on: a bridge, and an rtlan switch whose fast path
//! passes TCP super-frames whole), then measures on each, interleaved run by run: the forwarding
//! rate of minimum-size frames (trafgen pinned to one CPU, the rtlan data plane to the other),
//! TCP throughput (iperf3) and UDP round-trip latency (sockperf ping-pong at a fixed rate).
//! Ratios are rtlan / bridge with offloads off, and rtlan+offl / bridge+offl with offloads on.
//! `--router` does the same with routers: the rtlan router against the kernel's forwarding.
//! docs/benchmarks.md has the method and the figures measured on the development machine.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context};
use rtlan_lab::{Lab, LabOptions, Topology};

use super::measure::{self, Settings, HOST_A, HOST_B};
use super::report::{self, Document, Machine, Variant, VariantRuns};
use crate::kit::progress::{Progress, Step};

/// What `bench forward` runs.
#[derive(Debug, Clone)]
pub struct ForwardSettings {
    /// Runs per switch; each figure is the median over the runs.
    pub runs: u32,
    /// Length of each measurement, seconds.
    pub seconds: u32,
    /// Ethernet frame length of the flood, FCS included (64 = minimum size).
    pub frame_len: u16,
    /// sockperf ping-pong messages per second.
    pub mps: u32,
    /// sockperf message (UDP payload) size, bytes.
    pub msg_size: u32,
    /// Also measure, with veth offloads on, the Linux bridge (or, routed, the kernel's router)
    /// and the rtlan switch (or router).
    pub offloads_baseline: bool,
    /// Measure routers instead of switches: the rtlan router against the kernel's forwarding
    /// (`ip_forward = 1`) between two subnets.
    pub router: bool,
    /// The rtlan router's port sockets.
    pub data_plane: rtlan_linux::xdp::DataPlane,
    /// On AF_XDP, the switch's best-effort fast path (docs/fastpath.md).
    pub fast_path: bool,
    /// The rtlan switches kick their ports' TX rings from threads of their own
    /// (docs/threads.md).
    pub tx_threads: bool,
    /// What floods: trafgen, or `rtlan flood` (which waits when the kernel pushes back).
    pub generator: measure::Generator,
    /// The rtlan switches (or router) receive on each port in a kernel thread of its own
    /// (`napi_threads`, docs/threads.md "Threaded receive").
    pub napi_threads: bool,
    /// The Linux bridge's (kernel router's) ports get the same: threaded NAPI, with GRO on.
    pub napi_threads_baseline: bool,
    /// Leave the labs running afterwards.
    pub keep: bool,
    /// The rtlan executable (the labs' switches).
    pub exe: PathBuf,
}

/// What `bench forward` measured.
#[derive(Debug, Clone)]
pub struct ForwardReport {
    started: SystemTime,
    machine: Machine,
    settings: Settings,
    switch_cpu: Option<usize>,
    runs: u32,
    results: Vec<VariantRuns>,
}

impl ForwardReport {
    /// The JSON document (every run, medians, ratios, machine, `command` line), pretty.
    pub fn json(&self, command: Vec<String>) -> anyhow::Result<String> {
        let date = report::rfc3339_utc(
            self.started
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
        );
        let doc = Document::new(
            command,
            date,
            self.machine.clone(),
            self.settings,
            self.switch_cpu,
            &self.results,
        );
        Ok(serde_json::to_string_pretty(&doc)?)
    }

    /// The human-readable table.
    pub fn table(&self) -> String {
        report::table(&self.results, &self.settings, &self.machine, self.runs)
    }
}

/// The benchmark topology: hosts a and b on switch s1 (or, routed, on either side of router
/// r1), unlimited links.
pub(crate) fn topology_text(variant: Variant, switch_cpu: Option<usize>) -> String {
    if variant.routed() {
        let kind = if variant.is_ours() {
            "rtlan"
        } else {
            "linux-router"
        };
        let offloads = variant.offloads();
        return format!(
            "[lab]\noffloads = {offloads}\n\n\
             [[host]]\nname = \"{HOST_A}\"\n\n[[host]]\nname = \"{HOST_B}\"\n\n\
             [[router]]\nname = \"{r}\"\nkind = \"{kind}\"\n\n\
             [[link]]\nends = [\"{HOST_A}\", \"{r}\"]\n\n[[link]]\nends = [\"{r}\", \"{HOST_B}\"]\n",
            r = measure::ROUTER,
        );
    }
    let kind = if variant.is_ours() {
        "rtlan"
    } else {
        "linux-bridge"
    };
    let offloads = variant.offloads();
    let cpu = match switch_cpu {
        Some(cpu) if variant.is_ours() => format!("cpu = {cpu}\n"),
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

/// `bfr<pid>` / `bfb<pid>` / `bfo<pid>` / `bfx<pid>` (routed: `brr`, `brk`, `bro`, `brx`):
/// unique per process, at most 10 characters.
fn lab_name(variant: Variant) -> String {
    let tag = match variant {
        Variant::Rtlan => "bfr",
        Variant::Bridge => "bfb",
        Variant::BridgeOffloads => "bfo",
        Variant::RtlanRouter => "brr",
        Variant::KernelRouter => "brk",
        Variant::KernelRouterOffloads => "bro",
        Variant::RtlanOffloads => "bfx",
        Variant::RtlanRouterOffloads => "brx",
    };
    format!("{tag}{}", std::process::id() % 10_000_000)
}

/// Builds one lab and checks that a reaches b (which also teaches the switch both stations).
fn build(
    exe: &Path,
    variant: Variant,
    switch_cpu: Option<usize>,
    data_plane: rtlan_linux::xdp::DataPlane,
    fast_path: bool,
    tx_threads: bool,
    napi_threads: bool,
) -> anyhow::Result<Lab> {
    let name = lab_name(variant);
    let topology = Topology::from_str(&topology_text(variant, switch_cpu), "bench forward")
        .context("the benchmark topology")?;
    let mut options = LabOptions::new(exe);
    options.data_plane = data_plane;
    options.fast_path = fast_path;
    options.tx_threads = tx_threads;
    options.napi_threads = napi_threads;
    let lab =
        Lab::up(&topology, &name, &options).with_context(|| format!("building lab `{name}`"))?;
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

/// Threaded NAPI on a Linux bridge's (kernel router's) two ports (`p0`, `p1`), what an rtlan
/// switch with `napi_threads` does for itself: each port's receive — for a flood from a, the
/// bridge and b's whole stack — runs in a kernel thread (`napi/p0-…`) the scheduler may place
/// on any CPU, instead of in the softirq of the sending CPU. A veth has NAPI only with GRO on
/// (or an XDP program), so GRO goes on too.
fn threaded_receive(lab: &Lab, variant: Variant) -> anyhow::Result<()> {
    let node = if variant.routed() {
        measure::ROUTER
    } else {
        measure::SWITCH
    };
    let ns = lab.netns(node)?;
    for port in ["p0", "p1"] {
        let script = format!("ethtool -K {port} gro on && echo 1 > /sys/class/net/{port}/threaded");
        let out = std::process::Command::new("ip")
            .args(["netns", "exec", ns, "sh", "-c", &script])
            .output()
            .context("ip netns exec")?;
        if !out.status.success() {
            bail!(
                "threaded NAPI on {node}'s {port}: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
    }
    Ok(())
}

/// Builds the labs and measures on each, interleaved run by run.
pub fn run(args: &ForwardSettings, progress: Progress<'_>) -> anyhow::Result<ForwardReport> {
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
        generator: args.generator,
        napi_threads: args.napi_threads,
        napi_threads_baseline: args.napi_threads_baseline,
    };
    let mut variants = if args.router {
        vec![Variant::RtlanRouter, Variant::KernelRouter]
    } else {
        vec![Variant::Rtlan, Variant::Bridge]
    };
    if args.offloads_baseline {
        variants.extend(if args.router {
            [Variant::KernelRouterOffloads, Variant::RtlanRouterOffloads]
        } else {
            [Variant::BridgeOffloads, Variant::RtlanOffloads]
        });
    }

    // Timing-sensitive: never share the machine with lab tests (DESIGN.md §7).
    let _lock = rtlan_lab::serial_lock()?;
    progress(Step::Length(
        variants.len() as u64 * (1 + 3 * u64::from(args.runs)),
    ));
    let mut labs = Vec::new();
    let mut results = Vec::new();
    for &v in &variants {
        progress(Step::Message(format!("building {} lab", v.heading())));
        let lab = build(
            &args.exe,
            v,
            switch_cpu,
            args.data_plane,
            args.fast_path,
            args.tx_threads,
            args.napi_threads,
        )?;
        if args.napi_threads_baseline && !v.is_ours() {
            threaded_receive(&lab, v)?;
        }
        results.push(VariantRuns::new(v, lab.name().to_string(), v.offloads()));
        labs.push(lab);
        progress(Step::Advance(1));
    }
    for run in 1..=args.runs {
        for (lab, runs) in labs.iter().zip(results.iter_mut()) {
            let who = runs.variant.heading();
            progress(Step::Message(format!("run {run}: {who} forwarding rate")));
            runs.pps.push(measure::forwarding_rate(lab, &settings)?);
            progress(Step::Advance(1));
            progress(Step::Message(format!("run {run}: {who} TCP throughput")));
            runs.tcp.push(measure::tcp_throughput(lab, &settings)?);
            progress(Step::Advance(1));
            progress(Step::Message(format!("run {run}: {who} UDP latency")));
            runs.latency.push(measure::udp_latency(lab, &settings)?);
            progress(Step::Advance(1));
        }
    }
    if args.keep {
        for lab in labs {
            eprintln!("kept lab `{}`", lab.name());
            lab.keep();
        }
    }
    // Otherwise the labs are removed as they drop.
    Ok(ForwardReport {
        started,
        machine,
        settings,
        switch_cpu,
        runs: args.runs,
        results,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtlan_topology::{RouterKind, SwitchKind};

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
        // rtlan with offloads: the rtlan topology with only `offloads` flipped.
        let text = topology_text(Variant::RtlanOffloads, Some(1));
        assert_eq!(
            text,
            topology_text(Variant::Rtlan, Some(1)).replace("offloads = false", "offloads = true")
        );
        assert_eq!(
            topology_text(Variant::RtlanOffloads, None),
            topology_text(Variant::Rtlan, None).replace("offloads = false", "offloads = true")
        );
        for (v, rtlan_kind, offloads) in [
            (Variant::Rtlan, true, false),
            (Variant::Bridge, false, false),
            (Variant::BridgeOffloads, false, true),
            (Variant::RtlanOffloads, true, true),
        ] {
            let t = Topology::from_str(&topology_text(v, Some(1)), "t").expect("parses");
            assert_eq!(t.switches.len(), 1, "{v:?}");
            assert_eq!(
                matches!(t.switches[0].kind, SwitchKind::Rtlan(_)),
                rtlan_kind,
                "{v:?}"
            );
            if !rtlan_kind {
                assert_eq!(t.switches[0].kind, SwitchKind::LinuxBridge, "{v:?}");
            }
            assert_eq!(t.offloads, offloads, "{v:?}");
            assert_eq!(t.switch_ports("s1"), rtlan.switch_ports("s1"), "{v:?}");
        }
        // Routed: a and b on two subnets with r1 between them, the kind as asked.
        for (v, kind, offloads) in [
            (Variant::RtlanRouter, RouterKind::Rtlan, false),
            (Variant::KernelRouter, RouterKind::LinuxRouter, false),
            (Variant::KernelRouterOffloads, RouterKind::LinuxRouter, true),
            (Variant::RtlanRouterOffloads, RouterKind::Rtlan, true),
        ] {
            let t = Topology::from_str(&topology_text(v, Some(1)), "t").expect("parses");
            assert_eq!(t.routers.len(), 1);
            assert_eq!(t.routers[0].kind, kind);
            assert_eq!(t.offloads, offloads);
            assert_eq!(t.segments.len(), 2);
            assert_eq!(
                t.host(HOST_A).unwrap().gateway,
                Some(t.routers[0].ports[0].ip)
            );
        }
        assert_eq!(
            topology_text(Variant::RtlanRouterOffloads, Some(1)),
            topology_text(Variant::RtlanRouter, Some(1))
                .replace("offloads = false", "offloads = true")
        );
    }

    #[test]
    fn lab_names_are_valid_and_distinct() {
        let names: Vec<String> = [
            Variant::Rtlan,
            Variant::Bridge,
            Variant::BridgeOffloads,
            Variant::RtlanRouter,
            Variant::KernelRouter,
            Variant::KernelRouterOffloads,
            Variant::RtlanOffloads,
            Variant::RtlanRouterOffloads,
        ]
        .into_iter()
        .map(lab_name)
        .collect();
        for n in &names {
            assert!(rtlan_lab::valid_lab_name(n), "{n}");
        }
        let distinct: std::collections::BTreeSet<_> = names.iter().collect();
        assert_eq!(distinct.len(), names.len());
        assert!(lab_name(Variant::RtlanOffloads).starts_with("bfx"));
        assert!(lab_name(Variant::RtlanRouterOffloads).starts_with("brx"));
    }
}
