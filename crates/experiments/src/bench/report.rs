//! Aggregating benchmark runs: medians per switch kind, ratios rtlan/bridge (and, offloads on,
//! rtlan+offl/bridge+offl), the issues' targets, and the two ways of showing them (a table for
//! people, a JSON document for programs).

use serde::Serialize;

use super::measure::{LatencyRun, PpsRun, Settings, TcpRun};

/// rtlan must forward at least this fraction of the bridge's packet rate.
pub(super) const TARGET_PPS_RATIO: f64 = 0.5;
/// rtlan's p99 round-trip time may be at most this multiple of the bridge's.
pub(super) const TARGET_P99_RATIO: f64 = 2.0;
/// The rtlan router must forward at least as many packets per busy CPU as the kernel's router
/// (issue 13's target).
pub(super) const TARGET_ROUTER_PER_CPU_RATIO: f64 = 1.0;
/// With veth offloads on, the rtlan switch's TCP throughput must be at least this fraction of the
/// offloads-on bridge's (issue 16: super-frames pass through the fast path whole).
pub(super) const TARGET_OFFLOADS_TCP_RATIO: f64 = 0.7;

/// The switch a lab is built with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Variant {
    /// The rtlan switch, veth offloads off (it cannot forward super-frames).
    Rtlan,
    /// The Linux bridge with veth offloads off: the apples-to-apples baseline.
    Bridge,
    /// The Linux bridge with veth offloads on (TSO/GSO/GRO, partial checksums).
    BridgeOffloads,
    /// The rtlan router (`bench forward --router`), veth offloads off.
    RtlanRouter,
    /// The kernel's own forwarding (`ip_forward = 1`), veth offloads off.
    KernelRouter,
    /// The kernel's forwarding with veth offloads on.
    KernelRouterOffloads,
    /// The rtlan switch with veth offloads on (TCP super-frames cross the fast path whole; those
    /// that reach the user-space core are cut into wire frames).
    RtlanOffloads,
    /// The rtlan router with veth offloads on.
    RtlanRouterOffloads,
}

impl Variant {
    /// Column heading.
    pub(crate) fn heading(self) -> &'static str {
        match self {
            Variant::Rtlan => "rtlan",
            Variant::Bridge => "bridge",
            Variant::BridgeOffloads => "bridge+offl",
            Variant::RtlanRouter => "rtlan-rtr",
            Variant::KernelRouter => "kernel",
            Variant::KernelRouterOffloads => "kernel+offl",
            Variant::RtlanOffloads => "rtlan+offl",
            Variant::RtlanRouterOffloads => "rtlan-rtr+offl",
        }
    }

    /// Whether this is rtlan's own node (the numerator of every ratio).
    pub(super) fn is_ours(self) -> bool {
        matches!(
            self,
            Variant::Rtlan
                | Variant::RtlanRouter
                | Variant::RtlanOffloads
                | Variant::RtlanRouterOffloads
        )
    }

    /// Whether the lab's veth offloads are on (`[lab] offloads = true`).
    pub(super) fn offloads(self) -> bool {
        matches!(
            self,
            Variant::BridgeOffloads
                | Variant::KernelRouterOffloads
                | Variant::RtlanOffloads
                | Variant::RtlanRouterOffloads
        )
    }

    /// Whether the lab is routed (a router between a and b) rather than switched.
    pub(super) fn routed(self) -> bool {
        matches!(
            self,
            Variant::RtlanRouter
                | Variant::KernelRouter
                | Variant::KernelRouterOffloads
                | Variant::RtlanRouterOffloads
        )
    }

    /// The pairs compared, as (rtlan, baseline): offloads off, then offloads on.
    fn pairs(routed: bool) -> [(Variant, Variant); 2] {
        if routed {
            [
                (Variant::RtlanRouter, Variant::KernelRouter),
                (Variant::RtlanRouterOffloads, Variant::KernelRouterOffloads),
            ]
        } else {
            [
                (Variant::Rtlan, Variant::Bridge),
                (Variant::RtlanOffloads, Variant::BridgeOffloads),
            ]
        }
    }
}

/// Every run of one switch kind.
#[derive(Debug, Clone, Serialize)]
pub(super) struct VariantRuns {
    /// Which switch.
    pub(super) variant: Variant,
    /// The lab it ran in.
    pub(super) lab: String,
    /// Whether veth offloads were on.
    pub(super) offloads: bool,
    /// Forwarding-rate runs.
    pub(super) pps: Vec<PpsRun>,
    /// TCP runs.
    pub(super) tcp: Vec<TcpRun>,
    /// Latency runs.
    pub(super) latency: Vec<LatencyRun>,
}

impl VariantRuns {
    /// No runs yet.
    pub(super) fn new(variant: Variant, lab: String, offloads: bool) -> Self {
        VariantRuns {
            variant,
            lab,
            offloads,
            pps: Vec::new(),
            tcp: Vec::new(),
            latency: Vec::new(),
        }
    }

    /// The median of each figure over the runs (`None` where there are no runs).
    pub(super) fn medians(&self) -> Medians {
        Medians {
            forwarded_pps: median(self.pps.iter().map(|r| r.forwarded_pps)),
            offered_pps: median(self.pps.iter().map(|r| r.offered_pps)),
            forwarded_per_busy_cpu: median(self.pps.iter().map(|r| r.forwarded_per_busy_cpu)),
            tcp_bps: median(self.tcp.iter().map(|r| r.receiver_bps)),
            rtt_p50_us: median(self.latency.iter().map(|r| r.p50_us)),
            rtt_p99_us: median(self.latency.iter().map(|r| r.p99_us)),
        }
    }
}

/// Medians of one switch kind's runs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(super) struct Medians {
    /// Frames per second received at host b.
    pub(super) forwarded_pps: Option<f64>,
    /// Frames per second sent by host a.
    pub(super) offered_pps: Option<f64>,
    /// Forwarded frames per busy CPU-second.
    pub(super) forwarded_per_busy_cpu: Option<f64>,
    /// TCP throughput (receiver), bit/s.
    pub(super) tcp_bps: Option<f64>,
    /// Median UDP round-trip time, µs.
    pub(super) rtt_p50_us: Option<f64>,
    /// p99 UDP round-trip time, µs.
    pub(super) rtt_p99_us: Option<f64>,
}

/// rtlan's medians divided by a baseline's.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(super) struct Ratios {
    /// Forwarded frames per second (higher is better).
    pub(super) forwarded_pps: Option<f64>,
    /// Forwarded frames per busy CPU-second (higher is better).
    pub(super) forwarded_per_busy_cpu: Option<f64>,
    /// TCP throughput (higher is better).
    pub(super) tcp_bps: Option<f64>,
    /// Median round-trip time (lower is better).
    pub(super) rtt_p50_us: Option<f64>,
    /// p99 round-trip time (lower is better).
    pub(super) rtt_p99_us: Option<f64>,
}

impl Ratios {
    /// `ours / baseline`, figure by figure.
    pub(super) fn of(ours: &Medians, baseline: &Medians) -> Ratios {
        let r = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) if b > 0.0 => Some(a / b),
            _ => None,
        };
        Ratios {
            forwarded_pps: r(ours.forwarded_pps, baseline.forwarded_pps),
            forwarded_per_busy_cpu: r(ours.forwarded_per_busy_cpu, baseline.forwarded_per_busy_cpu),
            tcp_bps: r(ours.tcp_bps, baseline.tcp_bps),
            rtt_p50_us: r(ours.rtt_p50_us, baseline.rtt_p50_us),
            rtt_p99_us: r(ours.rtt_p99_us, baseline.rtt_p99_us),
        }
    }
}

/// The target, against the offloads-off bridge.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(super) struct Target {
    /// Least acceptable rtlan/bridge packet-rate ratio.
    pub(super) pps_ratio_min: f64,
    /// Largest acceptable rtlan/bridge p99 ratio.
    pub(super) p99_ratio_max: f64,
    /// Whether the packet-rate part is met (`None`: not measured).
    pub(super) pps_met: Option<bool>,
    /// Whether the latency part is met.
    pub(super) p99_met: Option<bool>,
}

impl Target {
    /// Judges `ratios` (rtlan / offloads-off bridge).
    pub(super) fn judge(ratios: &Ratios) -> Target {
        Target {
            pps_ratio_min: TARGET_PPS_RATIO,
            p99_ratio_max: TARGET_P99_RATIO,
            pps_met: ratios.forwarded_pps.map(|r| r >= TARGET_PPS_RATIO),
            p99_met: ratios.rtt_p99_us.map(|r| r <= TARGET_P99_RATIO),
        }
    }
}

/// Issue 16's target, rtlan with offloads against the bridge with offloads.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(super) struct OffloadsTarget {
    /// Least acceptable rtlan+offl / bridge+offl TCP throughput ratio.
    pub(super) tcp_ratio_min: f64,
    /// Whether it is met (`None`: not measured).
    pub(super) tcp_met: Option<bool>,
}

impl OffloadsTarget {
    /// Judges `ratios` (rtlan+offl / bridge+offl).
    pub(super) fn judge(ratios: &Ratios) -> OffloadsTarget {
        OffloadsTarget {
            tcp_ratio_min: TARGET_OFFLOADS_TCP_RATIO,
            tcp_met: ratios.tcp_bps.map(|r| r >= TARGET_OFFLOADS_TCP_RATIO),
        }
    }
}

/// Ratios that name what they divide.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(super) struct NamedRatios {
    /// The numerator (an rtlan variant).
    pub(super) ours: Variant,
    /// The denominator.
    pub(super) baseline: Variant,
    /// `ours / baseline`, figure by figure.
    #[serde(flatten)]
    pub(super) ratios: Ratios,
}

/// The machine the benchmark ran on.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Machine {
    /// CPUs available to this process.
    pub(crate) nproc: usize,
    /// `uname -r`.
    pub(crate) kernel: String,
    /// The first `model name` of `/proc/cpuinfo`.
    pub(crate) cpu_model: Option<String>,
}

impl Machine {
    /// Describes this machine.
    pub(crate) fn this() -> Machine {
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "unknown".to_string());
        let cpu_model = std::fs::read_to_string("/proc/cpuinfo").ok().and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        });
        Machine {
            nproc: std::thread::available_parallelism().map_or(1, |n| n.get()),
            kernel,
            cpu_model,
        }
    }
}

/// Per-switch section of the JSON document.
#[derive(Debug, Clone, Serialize)]
struct VariantReport<'a> {
    #[serde(flatten)]
    runs: &'a VariantRuns,
    medians: Medians,
}

/// The `--json` document.
#[derive(Debug, Clone, Serialize)]
pub(super) struct Document<'a> {
    /// The command line, one word per entry.
    pub(super) command: Vec<String>,
    /// When the run started, RFC 3339 UTC.
    pub(super) date_utc: String,
    /// The machine.
    pub(super) machine: Machine,
    /// What was run.
    pub(super) settings: Settings,
    /// CPU the rtlan switch's data plane was pinned to.
    pub(super) switch_cpu: Option<usize>,
    /// Every run and the medians, per switch.
    variants: Vec<VariantReport<'a>>,
    /// rtlan / offloads-off bridge.
    ratios_vs_bridge: Option<Ratios>,
    /// rtlan (offloads off) / offloads-on bridge.
    ratios_vs_bridge_offloads: Option<Ratios>,
    /// The target, against the offloads-off bridge.
    target: Option<Target>,
    /// rtlan router / the kernel's router (`--router`).
    #[serde(skip_serializing_if = "Option::is_none")]
    ratios_vs_kernel_router: Option<Ratios>,
    /// rtlan router (offloads off) / the kernel's router with offloads on.
    #[serde(skip_serializing_if = "Option::is_none")]
    ratios_vs_kernel_router_offloads: Option<Ratios>,
    /// The router target: packets per busy CPU ≥ the kernel's.
    #[serde(skip_serializing_if = "Option::is_none")]
    router_target: Option<RouterTarget>,
    /// Both sides with offloads on: rtlan+offl / bridge+offl, or (`--router`) rtlan-rtr+offl /
    /// kernel+offl; `ours` and `baseline` name them.
    #[serde(skip_serializing_if = "Option::is_none")]
    ratios_offloads: Option<NamedRatios>,
    /// Issue 16's target, rtlan+offl / bridge+offl (switches only).
    #[serde(skip_serializing_if = "Option::is_none")]
    offloads_target: Option<OffloadsTarget>,
}

/// Issue 13's target for the router, against the kernel with offloads off.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(super) struct RouterTarget {
    /// Least acceptable rtlan/kernel ratio of packets forwarded per busy CPU.
    pub(super) per_busy_cpu_ratio_min: f64,
    /// Whether it is met (`None`: not measured).
    pub(super) met: Option<bool>,
}

impl RouterTarget {
    fn judge(ratios: &Ratios) -> RouterTarget {
        RouterTarget {
            per_busy_cpu_ratio_min: TARGET_ROUTER_PER_CPU_RATIO,
            met: ratios
                .forwarded_per_busy_cpu
                .map(|r| r >= TARGET_ROUTER_PER_CPU_RATIO),
        }
    }
}

fn find(all: &[VariantRuns], v: Variant) -> Option<&VariantRuns> {
    all.iter().find(|r| r.variant == v)
}

/// `ours` / `baseline` ratios, if both were run.
pub(super) fn ratios(all: &[VariantRuns], ours: Variant, baseline: Variant) -> Option<Ratios> {
    debug_assert!(ours.is_ours() && !baseline.is_ours());
    let ours = find(all, ours)?.medians();
    let base = find(all, baseline)?.medians();
    Some(Ratios::of(&ours, &base))
}

/// rtlan+offl / baseline+offl (the switches' or, `routed`, the routers'), named, if both ran.
fn ratios_offloads(all: &[VariantRuns], routed: bool) -> Option<NamedRatios> {
    let [_, (ours, baseline)] = Variant::pairs(routed);
    ratios(all, ours, baseline).map(|ratios| NamedRatios {
        ours,
        baseline,
        ratios,
    })
}

impl<'a> Document<'a> {
    /// Assembles the document.
    pub(super) fn new(
        command: Vec<String>,
        date_utc: String,
        machine: Machine,
        settings: Settings,
        switch_cpu: Option<usize>,
        all: &'a [VariantRuns],
    ) -> Self {
        let vs_bridge = ratios(all, Variant::Rtlan, Variant::Bridge);
        let vs_kernel = ratios(all, Variant::RtlanRouter, Variant::KernelRouter);
        let routed = all.iter().any(|r| r.variant.routed());
        let offloads = ratios_offloads(all, routed);
        Document {
            command,
            date_utc,
            machine,
            settings,
            switch_cpu,
            variants: all
                .iter()
                .map(|runs| VariantReport {
                    runs,
                    medians: runs.medians(),
                })
                .collect(),
            ratios_vs_bridge: vs_bridge,
            ratios_vs_bridge_offloads: ratios(all, Variant::Rtlan, Variant::BridgeOffloads),
            target: vs_bridge.as_ref().map(Target::judge),
            ratios_vs_kernel_router: vs_kernel,
            ratios_vs_kernel_router_offloads: ratios(
                all,
                Variant::RtlanRouter,
                Variant::KernelRouterOffloads,
            ),
            router_target: vs_kernel.as_ref().map(RouterTarget::judge),
            ratios_offloads: offloads,
            offloads_target: offloads
                .filter(|_| !routed)
                .map(|n| OffloadsTarget::judge(&n.ratios)),
        }
    }
}

/// The median of `values` (mean of the middle two for an even count); `None` if empty. NaNs sort
/// last.
pub(super) fn median(values: impl Iterator<Item = f64>) -> Option<f64> {
    let mut v: Vec<f64> = values.collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    })
}

fn cell(value: Option<f64>, scale: f64, decimals: usize) -> String {
    value.map_or_else(
        || "-".to_string(),
        |v| format!("{:.*}", decimals, v / scale),
    )
}

/// Heading of the table's second ratio column: rtlan+offl / baseline+offl.
const OFFLOADS_COLUMN: &str = "+offl/+offl";

/// The human-readable table.
pub(super) fn table(
    all: &[VariantRuns],
    settings: &Settings,
    machine: &Machine,
    runs: u32,
) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let medians: Vec<Medians> = all.iter().map(VariantRuns::medians).collect();
    let routed = all.iter().any(|r| r.variant.routed());
    let (what, column) = if routed {
        ("hosts a, b on either side of router r1", "rtlan/kernel")
    } else {
        ("hosts a, b on one switch s1", "rtlan/bridge")
    };
    let [(ours, baseline), (ours_offl, baseline_offl)] = Variant::pairs(routed);
    let vs = ratios(all, ours, baseline);
    // Both sides with offloads on: a second ratio column, only when both ran.
    let vs_offl = ratios(all, ours_offl, baseline_offl);
    // Wide enough for every heading ("rtlan-rtr+offl"), never narrower than before.
    let width = all
        .iter()
        .map(|r| r.variant.heading().len() + 1)
        .fold(12, usize::max);
    // Writing to a String cannot fail.
    let _ = writeln!(
        out,
        "rtlan bench forward: {what}, unlimited veth links; median of {runs} run(s), {} s each; \
         {} CPU(s), kernel {}",
        settings.seconds, machine.nproc, machine.kernel
    );
    let _ = write!(out, "{:<34}", "");
    for r in all {
        let _ = write!(out, "{:>width$}", r.variant.heading());
    }
    let _ = write!(out, "{:>14}", column);
    if vs_offl.is_some() {
        let _ = write!(out, "{:>14}", OFFLOADS_COLUMN);
    }
    let _ = writeln!(out);
    type Row = (
        &'static str,
        fn(&Medians) -> Option<f64>,
        f64,
        usize,
        fn(&Ratios) -> Option<f64>,
    );
    let rows: [Row; 6] = [
        (
            "forwarded, Mpps (at b)",
            |m| m.forwarded_pps,
            1e6,
            3,
            |r| r.forwarded_pps,
        ),
        (
            "offered, Mpps (flood at a)",
            |m| m.offered_pps,
            1e6,
            3,
            |_| None,
        ),
        (
            "forwarded per busy CPU, Mpps",
            |m| m.forwarded_per_busy_cpu,
            1e6,
            3,
            |r| r.forwarded_per_busy_cpu,
        ),
        (
            "TCP throughput, Gbit/s",
            |m| m.tcp_bps,
            1e9,
            2,
            |r| r.tcp_bps,
        ),
        (
            "UDP RTT median, µs",
            |m| m.rtt_p50_us,
            1.0,
            1,
            |r| r.rtt_p50_us,
        ),
        (
            "UDP RTT p99, µs",
            |m| m.rtt_p99_us,
            1.0,
            1,
            |r| r.rtt_p99_us,
        ),
    ];
    for (label, get, scale, decimals, ratio) in rows {
        // Pad by characters, not bytes ("µ" is two bytes).
        let pad = 34usize.saturating_sub(label.chars().count());
        let _ = write!(out, "{label}{:pad$}", "");
        for m in &medians {
            let _ = write!(out, "{:>width$}", cell(get(m), scale, decimals));
        }
        let _ = write!(out, "{:>14}", cell(vs.as_ref().and_then(ratio), 1.0, 2));
        if let Some(r) = &vs_offl {
            let _ = write!(out, "{:>14}", cell(ratio(r), 1.0, 2));
        }
        let _ = writeln!(out);
    }
    let frame = settings.frame_len;
    let trafgen_cpu = settings
        .trafgen_cpu
        .map_or_else(|| "not pinned".to_string(), |c| format!("CPU {c}"));
    let generator = match settings.generator {
        super::measure::Generator::Trafgen => "trafgen",
        super::measure::Generator::RtlanFlood => "rtlan flood",
    };
    let napi = match (settings.napi_threads, settings.napi_threads_baseline) {
        (false, false) => "",
        (true, false) => "; rtlan's ports receive in threads of their own (napi_threads)",
        (false, true) => "; the baselines' ports receive in threads of their own (threaded NAPI)",
        (true, true) => {
            "; every lab's forwarding ports receive in threads of their own (threaded NAPI)"
        }
    };
    let _ = writeln!(
        out,
        "flood: {frame}-byte frames, {generator} on {trafgen_cpu}, b discards them (unread UDP \
         socket); latency: sockperf ping-pong --full-rtt, {} B messages at {} msg/s{napi}",
        settings.msg_size, settings.mps
    );
    if vs_offl.is_some() {
        let _ = writeln!(
            out,
            "ratios: {column} = {} / {} (veth offloads off); {OFFLOADS_COLUMN} = {} / {} \
             (offloads on)",
            ours.heading(),
            baseline.heading(),
            ours_offl.heading(),
            baseline_offl.heading()
        );
    }
    let verdict = |m: Option<bool>| match m {
        Some(true) => "met",
        Some(false) => "NOT met",
        None => "not measured",
    };
    if routed {
        if let Some(t) = vs.as_ref().map(RouterTarget::judge) {
            let _ = writeln!(
                out,
                "target (vs the kernel's router, offloads off): packets per busy CPU ≥ {:.1}× {}",
                t.per_busy_cpu_ratio_min,
                verdict(t.met)
            );
        }
    } else if let Some(t) = vs.as_ref().map(Target::judge) {
        let _ = writeln!(
            out,
            "target (vs bridge, offloads off): packet rate ≥ {:.1}× {}; p99 RTT ≤ {:.1}× {}",
            t.pps_ratio_min,
            verdict(t.pps_met),
            t.p99_ratio_max,
            verdict(t.p99_met)
        );
    }
    if !routed {
        if let Some(t) = vs_offl.as_ref().map(OffloadsTarget::judge) {
            let _ = writeln!(
                out,
                "target (rtlan with offloads vs bridge, offloads on): TCP throughput ≥ {:.1}× {}",
                t.tcp_ratio_min,
                verdict(t.tcp_met)
            );
        }
    }
    out
}

/// `secs` since the Unix epoch as RFC 3339 UTC (`2024-05-01T12:00:00Z`).
pub(super) fn rfc3339_utc(secs: u64) -> String {
    let days = secs / 86_400;
    let rem = secs % 86_400;
    // Howard Hinnant's civil_from_days, for days since 1970-01-01 (non-negative here).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_odd_even_empty() {
        assert_eq!(median([3.0, 1.0, 2.0].into_iter()), Some(2.0));
        assert_eq!(median([4.0, 1.0, 3.0, 2.0].into_iter()), Some(2.5));
        assert_eq!(median(std::iter::empty()), None);
    }

    #[test]
    fn ratios_and_target() {
        let ours = Medians {
            forwarded_pps: Some(800_000.0),
            offered_pps: Some(1e6),
            forwarded_per_busy_cpu: Some(400_000.0),
            tcp_bps: Some(5e9),
            rtt_p50_us: Some(20.0),
            rtt_p99_us: Some(30.0),
        };
        let base = Medians {
            forwarded_pps: Some(1_600_000.0),
            offered_pps: Some(1.6e6),
            forwarded_per_busy_cpu: Some(1_600_000.0),
            tcp_bps: Some(10e9),
            rtt_p50_us: Some(10.0),
            rtt_p99_us: Some(12.0),
        };
        let r = Ratios::of(&ours, &base);
        assert_eq!(r.forwarded_pps, Some(0.5));
        assert_eq!(r.forwarded_per_busy_cpu, Some(0.25));
        assert_eq!(r.tcp_bps, Some(0.5));
        assert_eq!(r.rtt_p99_us, Some(2.5));
        let t = Target::judge(&r);
        assert_eq!(t.pps_met, Some(true), "0.5 is exactly the target");
        assert_eq!(t.p99_met, Some(false), "2.5× is over 2×");
        let none = Ratios::of(
            &ours,
            &Medians {
                forwarded_pps: Some(0.0),
                tcp_bps: None,
                ..base
            },
        );
        assert_eq!(none.forwarded_pps, None, "no division by zero");
        assert_eq!(none.tcp_bps, None);
        assert_eq!(Target::judge(&none).pps_met, None);
    }

    /// One run of `variant` with these figures (Mpps, Mpps per busy CPU, Gbit/s, µs, µs).
    fn fake(
        variant: Variant,
        mpps: f64,
        per_cpu: f64,
        gbps: f64,
        p50: f64,
        p99: f64,
    ) -> VariantRuns {
        let mut runs = VariantRuns::new(
            variant,
            format!("lab-{}", variant.heading()),
            variant.offloads(),
        );
        runs.pps.push(PpsRun {
            window_secs: 2.0,
            forwarded_pps: mpps * 1e6,
            offered_pps: 2e6,
            offered_dropped: 0,
            trafgen_packets: None,
            cpus: Vec::new(),
            busy_cpus: mpps / per_cpu,
            forwarded_per_busy_cpu: per_cpu * 1e6,
            switch: None,
        });
        runs.tcp.push(TcpRun {
            receiver_bps: gbps * 1e9,
            sender_bps: gbps * 1e9,
            retransmits: Some(0),
        });
        runs.latency.push(LatencyRun {
            observations: 20_000,
            p50_us: p50,
            p99_us: p99,
            p999_us: p99,
            avg_us: p50,
            max_us: p99,
            dropped: 0,
        });
        runs
    }

    fn settings() -> Settings {
        Settings {
            seconds: 2,
            frame_len: 64,
            trafgen_cpu: Some(0),
            mps: 10_000,
            msg_size: 64,
            generator: super::super::measure::Generator::Trafgen,
            napi_threads: false,
            napi_threads_baseline: false,
        }
    }

    fn machine() -> Machine {
        Machine {
            nproc: 2,
            kernel: "6.18".to_string(),
            cpu_model: None,
        }
    }

    fn json(all: &[VariantRuns]) -> serde_json::Value {
        let doc = Document::new(
            vec!["rtlan".to_string()],
            rfc3339_utc(0),
            machine(),
            settings(),
            Some(1),
            all,
        );
        serde_json::to_value(&doc).expect("serializes")
    }

    /// The four switch labs of a default run: rtlan, bridge, bridge+offl, rtlan+offl.
    fn four_switches(rtlan_offl_gbps: f64) -> Vec<VariantRuns> {
        vec![
            fake(Variant::Rtlan, 0.4, 0.2, 2.0, 40.0, 80.0),
            fake(Variant::Bridge, 0.5, 0.5, 5.0, 20.0, 50.0),
            fake(Variant::BridgeOffloads, 0.5, 0.5, 20.0, 20.0, 40.0),
            fake(
                Variant::RtlanOffloads,
                0.25,
                0.125,
                rtlan_offl_gbps,
                30.0,
                60.0,
            ),
        ]
    }

    #[test]
    fn offloads_ratios_and_target() {
        // TCP 14 / 20 Gbit/s: exactly 0.7×, met.
        let all = four_switches(14.0);
        let text = table(&all, &settings(), &machine(), 1);
        println!("{text}");
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[1].ends_with("  rtlan/bridge   +offl/+offl"),
            "{}",
            lines[1]
        );
        assert!(lines[1].contains("rtlan+offl"));
        let row = |label: &str| {
            let line = lines.iter().find(|l| l.starts_with(label)).expect(label);
            line.split_whitespace().rev().take(2).collect::<Vec<_>>()
        };
        // [+offl/+offl, rtlan/bridge]: the offloads-off ratio is still rtlan / bridge.
        assert_eq!(row("forwarded, Mpps"), ["0.50", "0.80"]);
        assert_eq!(row("offered, Mpps"), ["-", "-"]);
        assert_eq!(row("forwarded per busy CPU"), ["0.25", "0.40"]);
        assert_eq!(row("TCP throughput"), ["0.70", "0.40"]);
        assert_eq!(row("UDP RTT median"), ["1.50", "2.00"]);
        assert_eq!(row("UDP RTT p99"), ["1.50", "1.60"]);
        assert!(text.contains(
            "ratios: rtlan/bridge = rtlan / bridge (veth offloads off); \
             +offl/+offl = rtlan+offl / bridge+offl (offloads on)"
        ));
        assert!(text.contains(
            "target (vs bridge, offloads off): packet rate ≥ 0.5× met; p99 RTT ≤ 2.0× met"
        ));
        assert!(text.contains(
            "target (rtlan with offloads vs bridge, offloads on): TCP throughput ≥ 0.7× met"
        ));

        let doc = json(&all);
        // The existing keys keep their meaning: rtlan (offloads off) over each bridge.
        assert_eq!(doc["ratios_vs_bridge"]["tcp_bps"], 0.4);
        assert_eq!(doc["ratios_vs_bridge_offloads"]["tcp_bps"], 0.1);
        assert_eq!(doc["target"]["pps_met"], true);
        let offl = &doc["ratios_offloads"];
        assert_eq!(offl["ours"], "rtlan_offloads");
        assert_eq!(offl["baseline"], "bridge_offloads");
        assert_eq!(offl["forwarded_pps"], 0.5);
        assert_eq!(offl["forwarded_per_busy_cpu"], 0.25);
        assert_eq!(offl["tcp_bps"], 0.7);
        assert_eq!(offl["rtt_p50_us"], 1.5);
        assert_eq!(offl["rtt_p99_us"], 1.5);
        assert_eq!(doc["offloads_target"]["tcp_ratio_min"], 0.7);
        assert_eq!(doc["offloads_target"]["tcp_met"], true);
        assert!(doc.get("ratios_vs_kernel_router").is_none());
        let variants: Vec<_> = doc["variants"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| (v["variant"].clone(), v["offloads"].clone()))
            .collect();
        assert_eq!(variants[3], ("rtlan_offloads".into(), true.into()));

        // TCP 10 / 20 Gbit/s: 0.5×, not met.
        let all = four_switches(10.0);
        let text = table(&all, &settings(), &machine(), 1);
        assert!(text.contains(
            "target (rtlan with offloads vs bridge, offloads on): TCP throughput ≥ 0.7× NOT met"
        ));
        let doc = json(&all);
        assert_eq!(doc["ratios_offloads"]["tcp_bps"], 0.5);
        assert_eq!(doc["offloads_target"]["tcp_met"], false);

        // No TCP figure for rtlan+offl: not measured.
        let mut all = four_switches(14.0);
        all[3].tcp.clear();
        let text = table(&all, &settings(), &machine(), 1);
        assert!(text.contains("TCP throughput ≥ 0.7× not measured"));
        assert_eq!(
            json(&all)["offloads_target"]["tcp_met"],
            serde_json::Value::Null
        );
    }

    #[test]
    fn without_offloads_the_table_and_document_are_as_before() {
        let all = four_switches(14.0)[..2].to_vec();
        let text = table(&all, &settings(), &machine(), 1);
        assert!(text.lines().nth(1).unwrap().ends_with("  rtlan/bridge"));
        assert!(!text.contains("+offl"));
        assert!(!text.contains("TCP throughput ≥"));
        let doc = json(&all);
        assert_eq!(doc["ratios_vs_bridge"]["forwarded_pps"], 0.8);
        assert!(doc["ratios_vs_bridge_offloads"].is_null());
        assert!(doc.get("ratios_offloads").is_none());
        assert!(doc.get("offloads_target").is_none());
    }

    #[test]
    fn routers_with_offloads() {
        let all = vec![
            fake(Variant::RtlanRouter, 0.4, 0.2, 2.0, 60.0, 100.0),
            fake(Variant::KernelRouter, 0.4, 0.4, 5.0, 50.0, 80.0),
            fake(Variant::KernelRouterOffloads, 0.4, 0.4, 20.0, 50.0, 80.0),
            fake(Variant::RtlanRouterOffloads, 0.4, 0.2, 10.0, 50.0, 100.0),
        ];
        let text = table(&all, &settings(), &machine(), 1);
        println!("{text}");
        let lines: Vec<&str> = text.lines().collect();
        // Every heading fits its column, with a space before it.
        assert!(lines[1].contains(" rtlan-rtr+offl  "), "{}", lines[1]);
        assert!(lines[1].ends_with("  rtlan/kernel   +offl/+offl"));
        let tcp = lines.iter().find(|l| l.starts_with("TCP")).unwrap();
        assert!(tcp.ends_with("0.40          0.50"), "{tcp}");
        assert!(text.contains("+offl/+offl = rtlan-rtr+offl / kernel+offl"));
        assert!(text.contains("target (vs the kernel's router, offloads off)"));
        assert!(
            !text.contains("TCP throughput ≥"),
            "issue 16's target is the switch's"
        );
        let doc = json(&all);
        assert_eq!(doc["ratios_vs_kernel_router"]["tcp_bps"], 0.4);
        assert_eq!(doc["ratios_vs_kernel_router_offloads"]["tcp_bps"], 0.1);
        assert_eq!(doc["ratios_offloads"]["ours"], "rtlan_router_offloads");
        assert_eq!(doc["ratios_offloads"]["baseline"], "kernel_router_offloads");
        assert_eq!(doc["ratios_offloads"]["tcp_bps"], 0.5);
        assert!(doc.get("offloads_target").is_none());
    }

    #[test]
    fn dates() {
        assert_eq!(rfc3339_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339_utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339_utc(1_714_564_799), "2024-05-01T11:59:59Z");
    }
}
