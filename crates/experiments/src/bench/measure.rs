//! One measurement of each kind on one running lab (two hosts `a`, `b` on switch `s1`): the
//! minimum-size-frame forwarding rate, TCP throughput and UDP request/response latency.
//!
//! The forwarding rate is what host `b`'s interface received per second while trafgen floods from
//! host `a` (the rx counter delta over a window that starts after a warm-up and ends before
//! trafgen stops), not what a receiving application saw: that would measure the receiver, not
//! the switch. Host b discards the flood through an unread UDP socket (`sink`).

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;
use rtlan_lab::tools::{
    iface_counters, iperf3_tcp, sockperf_pingpong_with, IfCounters, Iperf3Opts, Iperf3Server,
    SockperfOpts, SockperfServer, TrafgenRun, TrafgenUdp,
};
use rtlan_lab::Lab;
use serde::Serialize;

/// The sending host, the receiving host and the switch of the benchmark topology.
pub(crate) const HOST_A: &str = "a";
/// The receiving host.
pub(crate) const HOST_B: &str = "b";
/// The switch.
pub(super) const SWITCH: &str = "s1";
/// The router of the routed benchmark labs (`bench forward --router`).
pub(crate) const ROUTER: &str = "r1";

/// How long trafgen sends before the measurement window opens (pinning settles, rings fill).
const WARM_UP: Duration = Duration::from_millis(500);
/// How long trafgen keeps sending after the window closed (stopping it is not measured).
const TAIL: Duration = Duration::from_millis(300);
/// iperf3 server port (each lab has its own namespaces, so a fixed port is fine).
const IPERF3_PORT: u16 = 5201;
/// sockperf server port.
const SOCKPERF_PORT: u16 = 11111;

/// Settings shared by every measurement of a run.
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct Settings {
    /// Length of each measurement window, seconds.
    pub(crate) seconds: u32,
    /// Ethernet frame length of the flood, FCS included.
    pub(crate) frame_len: usize,
    /// CPU trafgen is pinned to (`None`: not pinned, fewer than 2 CPUs).
    pub(crate) trafgen_cpu: Option<usize>,
    /// sockperf messages per second.
    pub(crate) mps: u32,
    /// sockperf message (UDP payload) size, bytes.
    pub(crate) msg_size: u32,
    /// What floods.
    pub(crate) generator: Generator,
    /// Whether the rtlan switches' ports receive in threads of their own (threaded NAPI).
    pub(crate) napi_threads: bool,
    /// Whether the Linux bridge's (kernel router's) ports do too.
    pub(crate) napi_threads_baseline: bool,
}

/// The flood's generator.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Generator {
    /// trafgen (netsniff-ng): fails when the kernel pushes back (retried, see
    /// [`forwarding_rate`]).
    #[default]
    Trafgen,
    /// `rtlan flood`, this executable: waits for room when the kernel pushes back.
    RtlanFlood,
}

/// CPU time split of one CPU over a window, in percent of the window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub(crate) struct CpuShare {
    /// User time (plus nice).
    pub(crate) user: f64,
    /// System time.
    pub(crate) system: f64,
    /// Soft-interrupt time (the kernel's packet processing when not in a syscall's context).
    pub(crate) softirq: f64,
    /// Idle (plus iowait).
    pub(crate) idle: f64,
}

/// The rtlan switch's own view of a forwarding window (counter deltas).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub(crate) struct SwitchWindow {
    /// Frames the shell handed to the core.
    pub(crate) rx_frames: u64,
    /// Frames the shell queued for sending.
    pub(crate) tx_frames: u64,
    /// Frames the kernel dropped because an RX ring was full.
    pub(crate) rx_kernel_drops: u64,
    /// Times a TX ring filled up.
    pub(crate) tx_ring_full: u64,
    /// Frames dropped because an output queue was full.
    pub(crate) drop_queue_full: u64,
    /// Data-plane loop iterations (one per `epoll_wait` return).
    pub(crate) loop_iterations: u64,
}

/// One forwarding-rate measurement.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct PpsRun {
    /// Length of the measured window, seconds.
    pub(crate) window_secs: f64,
    /// Frames host b's interface received per second in the window.
    pub(crate) forwarded_pps: f64,
    /// Frames host a's interface sent per second in the window (what trafgen offered).
    pub(crate) offered_pps: f64,
    /// Frames host a's interface dropped on transmit in the window.
    pub(crate) offered_dropped: u64,
    /// Frames trafgen reported sending over its whole run, if it printed its summary.
    pub(crate) trafgen_packets: Option<u64>,
    /// Per-CPU time split during the window, in CPU order.
    pub(crate) cpus: Vec<CpuShare>,
    /// CPUs busy during the window (sum over CPUs of the non-idle share; 2.0 = both saturated).
    pub(crate) busy_cpus: f64,
    /// `forwarded_pps / busy_cpus`: frames forwarded per CPU-second spent on anything (flood,
    /// switch, receiver), the efficiency figure when the two switches use different numbers of
    /// CPUs.
    pub(crate) forwarded_per_busy_cpu: f64,
    /// The rtlan switch's counters over the window (absent for a Linux bridge).
    pub(crate) switch: Option<SwitchWindow>,
}

/// One TCP throughput measurement.
#[derive(Debug, Clone, Serialize)]
pub(super) struct TcpRun {
    /// Receiver-side throughput, bit/s.
    pub(super) receiver_bps: f64,
    /// Sender-side throughput, bit/s.
    pub(super) sender_bps: f64,
    /// TCP retransmissions, if iperf3 reported them.
    pub(super) retransmits: Option<u64>,
}

/// One UDP ping-pong latency measurement (full round trips).
#[derive(Debug, Clone, Serialize)]
pub(super) struct LatencyRun {
    /// Samples.
    pub(super) observations: u64,
    /// Median round-trip time, µs.
    pub(super) p50_us: f64,
    /// 99th percentile, µs.
    pub(super) p99_us: f64,
    /// 99.9th percentile, µs.
    pub(super) p999_us: f64,
    /// Mean, µs.
    pub(super) avg_us: f64,
    /// Largest sample, µs.
    pub(super) max_us: f64,
    /// Messages sockperf counted as dropped.
    pub(super) dropped: u64,
}

/// Counters of hosts a and b read at (about) the same moment.
struct Sample {
    at: Instant,
    a: IfCounters,
    b: IfCounters,
    cpu: Vec<[u64; 4]>,
    switch: Option<SwitchWindow>,
}

fn sample(lab: &Lab, socket: Option<&Path>) -> anyhow::Result<Sample> {
    let ns_a = lab.netns(HOST_A)?;
    let ns_b = lab.netns(HOST_B)?;
    let cpu = read_proc_stat()?;
    let before = Instant::now();
    let b = iface_counters(ns_b, "eth0")?;
    let a = iface_counters(ns_a, "eth0")?;
    let after = Instant::now();
    let switch = match socket {
        Some(s) => Some(switch_counters(s)?),
        None => None,
    };
    // Each read spawns `ip`; time-stamp the pair at its midpoint.
    let at = before + (after - before) / 2;
    Ok(Sample {
        at,
        a,
        b,
        cpu,
        switch,
    })
}

/// Attempts of one forwarding-rate run before the bench gives up on trafgen.
const FLOOD_ATTEMPTS: u32 = 3;

/// [`forwarding_rate_once`], again (at most [`FLOOD_ATTEMPTS`] times) when trafgen ended early
/// because the veth pushed back ("Flushing TX_RING failed": its socket's send buffer filled
/// while the receiving end's ring was full — a fast path's first hop on veth copies every frame
/// and can fall behind trafgen). Each retry is logged on stderr; a run is never pieced together.
pub(crate) fn forwarding_rate(lab: &Lab, settings: &Settings) -> anyhow::Result<PpsRun> {
    let mut attempt = 1;
    loop {
        match forwarding_rate_once(lab, settings) {
            Err(e)
                if attempt < FLOOD_ATTEMPTS
                    && format!("{e:#}").contains("Flushing TX_RING failed") =>
            {
                eprintln!("bench: trafgen ended early under push-back (attempt {attempt}); again");
                attempt += 1;
            }
            other => return other,
        }
    }
}

/// Floods minimum-size (or `frame_len`) frames from a to b and measures what b received.
fn forwarding_rate_once(lab: &Lab, settings: &Settings) -> anyhow::Result<PpsRun> {
    let ns_a = lab.netns(HOST_A)?.to_string();
    // Routed, the flood goes to the router's MAC on a's side (the frames a's stack would send
    // to its gateway); switched, to b's.
    let routed = !lab.topology().routers.is_empty();
    let dst_mac = if routed {
        lab.mac(ROUTER, "p0")?
    } else {
        lab.mac(HOST_B, "eth0")?
    };
    let mut spec = TrafgenUdp::new(
        "eth0",
        lab.mac(HOST_A, "eth0")?,
        dst_mac,
        lab.host_ip(HOST_A)?,
        lab.host_ip(HOST_B)?,
    );
    spec.frame_len = settings.frame_len;
    spec.cpu = settings.trafgen_cpu;
    let window = Duration::from_secs(settings.seconds.into());
    spec.duration = WARM_UP + window + TAIL;
    let socket = if routed {
        lab.router_socket(ROUTER)
    } else {
        lab.switch_socket(SWITCH)
    };
    // Open the destination port so that b drops the flood cheaply (see `sink`).
    let _sink = super::sink::udp_sink(lab.netns(HOST_B)?, spec.dst_port)?;

    std::thread::scope(|scope| -> anyhow::Result<PpsRun> {
        let flood = scope.spawn(|| match settings.generator {
            Generator::Trafgen => rtlan_lab::tools::trafgen_udp(&ns_a, &spec),
            Generator::RtlanFlood => rtlan_flood(&ns_a, &spec),
        });
        std::thread::sleep(WARM_UP);
        let start = sample(lab, socket.as_deref());
        std::thread::sleep(window);
        let end = sample(lab, socket.as_deref());
        let run = flood
            .join()
            .map_err(|_| anyhow::anyhow!("the flood thread panicked"))?
            .context("flood")?;
        let (start, end) = (start?, end?);
        let secs = (end.at - start.at).as_secs_f64();
        let b = end.b.since(&start.b);
        let a = end.a.since(&start.a);
        let forwarded_pps = b.rx_packets as f64 / secs;
        let cpus = cpu_shares(&start.cpu, &end.cpu);
        let (busy_cpus, forwarded_per_busy_cpu) = per_busy_cpu(forwarded_pps, &cpus);
        Ok(PpsRun {
            window_secs: secs,
            forwarded_pps,
            offered_pps: a.tx_packets as f64 / secs,
            offered_dropped: a.tx_dropped,
            trafgen_packets: run.trafgen_packets,
            cpus,
            busy_cpus,
            forwarded_per_busy_cpu,
            switch: match (start.switch, end.switch) {
                (Some(s), Some(e)) => Some(e.since(&s)),
                _ => None,
            },
        })
    })
}

/// `rtlan flood` (this executable) from namespace `ns` as `spec` asks (pinned with taskset to
/// `spec.cpu`), reported in trafgen's terms: what the interface sent, and what the tool handed
/// to the kernel.
fn rtlan_flood(ns: &str, spec: &TrafgenUdp) -> Result<TrafgenRun, rtlan_lab::tools::ToolError> {
    use rtlan_lab::tools::{iface_counters, ToolError};
    let exe = std::env::current_exe().map_err(|source| ToolError::Io {
        tool: "rtlan flood",
        source,
    })?;
    let mac = |m: &[u8; 6]| {
        m.iter()
            .map(|b| format!("{b:02x}"))
            .collect::<Vec<_>>()
            .join(":")
    };
    let mut argv: Vec<String> = Vec::new();
    if let Some(cpu) = spec.cpu {
        argv.extend(["taskset".into(), "-c".into(), cpu.to_string()]);
    }
    argv.extend([
        exe.display().to_string(),
        "flood".into(),
        "--iface".into(),
        spec.ifname.clone(),
        "--dst-mac".into(),
        mac(&spec.dst_mac),
        "--src-ip".into(),
        spec.src_ip.to_string(),
        "--dst-ip".into(),
        spec.dst_ip.to_string(),
        "--src-port".into(),
        spec.src_port.to_string(),
        "--dst-port".into(),
        spec.dst_port.to_string(),
        "--size".into(),
        spec.frame_len.to_string(),
        "--duration".into(),
        format!("{}ms", spec.duration.as_millis()),
        "--json".into(),
    ]);
    let before = iface_counters(ns, &spec.ifname)?;
    let started = Instant::now();
    let out = std::process::Command::new("ip")
        .args(["netns", "exec", ns])
        .args(&argv)
        .output()
        .map_err(|source| ToolError::Spawn {
            tool: "rtlan flood",
            source,
        })?;
    let elapsed_secs = started.elapsed().as_secs_f64();
    // rtlan flood writes one line of JSON, or one error line: all of it goes in the message.
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).trim().to_string();
    if !out.status.success() {
        return Err(ToolError::Failed {
            tool: "rtlan flood",
            status: out.status.to_string(),
            stderr_tail: text(&out.stderr),
        });
    }
    let report: serde_json::Value =
        serde_json::from_slice(&out.stdout).map_err(|e| ToolError::Unparseable {
            tool: "rtlan flood",
            reason: e.to_string(),
            snippet: text(&out.stdout),
        })?;
    let delta = iface_counters(ns, &spec.ifname)?.since(&before);
    Ok(TrafgenRun {
        tx_packets: delta.tx_packets,
        tx_bytes: delta.tx_bytes,
        tx_dropped: delta.tx_dropped,
        trafgen_packets: report["frames"].as_u64(),
        trafgen_bytes: report["bytes"].as_u64(),
        elapsed_secs,
        repins: 0,
    })
}

/// TCP throughput from a to b with iperf3 (one stream).
pub(super) fn tcp_throughput(lab: &Lab, settings: &Settings) -> anyhow::Result<TcpRun> {
    let server = Iperf3Server::start(lab.netns(HOST_B)?, IPERF3_PORT)?;
    let r = iperf3_tcp(
        lab.netns(HOST_A)?,
        lab.host_ip(HOST_B)?,
        server.port(),
        settings.seconds,
        &Iperf3Opts::default(),
    )?;
    Ok(TcpRun {
        receiver_bps: r.receiver_bps,
        sender_bps: r.sender_bps,
        retransmits: r.retransmits,
    })
}

/// UDP request/response round-trip times from a to b with sockperf ping-pong at a fixed rate.
pub(super) fn udp_latency(lab: &Lab, settings: &Settings) -> anyhow::Result<LatencyRun> {
    let server = SockperfServer::start(lab.netns(HOST_B)?, SOCKPERF_PORT)?;
    let r = sockperf_pingpong_with(
        lab.netns(HOST_A)?,
        lab.host_ip(HOST_B)?,
        server.port(),
        settings.seconds,
        settings.msg_size,
        SockperfOpts {
            mps: Some(settings.mps),
        },
    )?;
    Ok(LatencyRun {
        observations: r.observations,
        p50_us: r.p50_us,
        p99_us: r.p99_us,
        p999_us: r.p999_us,
        avg_us: r.avg_us,
        max_us: r.max_us,
        dropped: r.dropped,
    })
}

impl SwitchWindow {
    fn since(&self, earlier: &SwitchWindow) -> SwitchWindow {
        SwitchWindow {
            rx_frames: self.rx_frames.saturating_sub(earlier.rx_frames),
            tx_frames: self.tx_frames.saturating_sub(earlier.tx_frames),
            rx_kernel_drops: self.rx_kernel_drops.saturating_sub(earlier.rx_kernel_drops),
            tx_ring_full: self.tx_ring_full.saturating_sub(earlier.tx_ring_full),
            drop_queue_full: self.drop_queue_full.saturating_sub(earlier.drop_queue_full),
            loop_iterations: self.loop_iterations.saturating_sub(earlier.loop_iterations),
        }
    }
}

/// Reads the rtlan switch's counters (summed over ports) from its control socket.
fn switch_counters(socket: &Path) -> anyhow::Result<SwitchWindow> {
    let stats = rtlan_linux::ctl::request(socket, "stats").context("switch stats")?;
    Ok(parse_switch_counters(&stats))
}

/// Sums the per-port counters of a `stats` reply (docs/switch.md); missing fields count as 0.
fn parse_switch_counters(stats: &serde_json::Value) -> SwitchWindow {
    let sum = |ports: &serde_json::Value, key: &str| -> u64 {
        ports
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p[key].as_u64())
            .sum()
    };
    let shell = &stats["shell"]["ports"];
    SwitchWindow {
        rx_frames: sum(shell, "rx_frames"),
        tx_frames: sum(shell, "tx_frames"),
        rx_kernel_drops: sum(shell, "rx_kernel_drops"),
        tx_ring_full: sum(shell, "tx_ring_full"),
        drop_queue_full: sum(&stats["switch"]["ports"], "drop_queue_full")
            + sum(&stats["router"]["ports"], "drop_queue_full"),
        loop_iterations: stats["shell"]["loop_iterations"].as_u64().unwrap_or(0),
    }
}

/// Per-CPU `[user+nice, system, softirq, idle+iowait]` in clock ticks from `/proc/stat`.
fn read_proc_stat() -> anyhow::Result<Vec<[u64; 4]>> {
    let text = std::fs::read_to_string("/proc/stat").context("reading /proc/stat")?;
    Ok(parse_proc_stat(&text))
}

/// Parses the `cpuN` lines of `/proc/stat` (the aggregate `cpu` line is skipped); lines that do
/// not have the expected shape are skipped too.
fn parse_proc_stat(text: &str) -> Vec<[u64; 4]> {
    text.lines()
        .filter(|l| l.starts_with("cpu") && !l.starts_with("cpu "))
        .filter_map(|l| {
            let v: Vec<u64> = l
                .split_whitespace()
                .skip(1)
                .map_while(|f| f.parse().ok())
                .collect();
            // user nice system idle iowait irq softirq …
            (v.len() >= 7).then(|| [v[0] + v[1], v[2] + v[5], v[6], v[3] + v[4]])
        })
        .collect()
}

/// CPUs busy in the window (sum of non-idle shares) and `pps` per busy CPU (0 if none was).
fn per_busy_cpu(pps: f64, cpus: &[CpuShare]) -> (f64, f64) {
    let busy: f64 = cpus.iter().map(|c| (100.0 - c.idle) / 100.0).sum();
    (busy, if busy > 0.0 { pps / busy } else { 0.0 })
}

/// Percent of the window each CPU spent in each state.
fn cpu_shares(start: &[[u64; 4]], end: &[[u64; 4]]) -> Vec<CpuShare> {
    start
        .iter()
        .zip(end)
        .map(|(s, e)| {
            let d: Vec<f64> = (0..4).map(|i| e[i].saturating_sub(s[i]) as f64).collect();
            let total: f64 = d.iter().sum();
            if total == 0.0 {
                return CpuShare::default();
            }
            let pct = |x: f64| 100.0 * x / total;
            CpuShare {
                user: pct(d[0]),
                system: pct(d[1]),
                softirq: pct(d[2]),
                idle: pct(d[3]),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_stat_lines_become_per_cpu_ticks() {
        let text = "cpu  10 1 20 300 4 5 6 0 0 0\n\
                    cpu0 1 0 2 30 1 1 3 0 0 0\n\
                    cpu1 7 2 9 40 0 0 5 0 0 0\n\
                    intr 12345\n\
                    cpu2 garbage\n";
        assert_eq!(
            parse_proc_stat(text),
            vec![[1, 3, 3, 31], [9, 9, 5, 40]],
            "aggregate line and malformed lines are skipped"
        );
    }

    #[test]
    fn cpu_shares_are_percent_of_the_window() {
        let s = vec![[0, 0, 0, 0], [10, 10, 10, 10]];
        let e = vec![[25, 25, 50, 0], [10, 10, 10, 10]];
        let shares = cpu_shares(&s, &e);
        assert_eq!(
            shares[0],
            CpuShare {
                user: 25.0,
                system: 25.0,
                softirq: 50.0,
                idle: 0.0
            }
        );
        assert_eq!(shares[1], CpuShare::default(), "no ticks: all zero");
        let half_idle = CpuShare {
            idle: 50.0,
            ..shares[0]
        };
        assert_eq!(per_busy_cpu(300.0, &[shares[0], half_idle]), (1.5, 200.0));
        assert_eq!(per_busy_cpu(300.0, &[]), (0.0, 0.0));
    }

    #[test]
    fn switch_counters_sum_ports() {
        let stats = serde_json::json!({
            "switch": {"ports": [{"drop_queue_full": 2}, {"drop_queue_full": 3}]},
            "shell": {
                "ports": [
                    {"rx_frames": 10, "tx_frames": 1, "rx_kernel_drops": 4, "tx_ring_full": 0},
                    {"rx_frames": 1, "tx_frames": 9, "rx_kernel_drops": 0, "tx_ring_full": 2}
                ],
                "loop_iterations": 77
            }
        });
        let w = parse_switch_counters(&stats);
        assert_eq!(
            w,
            SwitchWindow {
                rx_frames: 11,
                tx_frames: 10,
                rx_kernel_drops: 4,
                tx_ring_full: 2,
                drop_queue_full: 5,
                loop_iterations: 77
            }
        );
        let later = SwitchWindow { rx_frames: 20, ..w };
        assert_eq!(later.since(&w).rx_frames, 9);
        assert_eq!(w.since(&later).rx_frames, 0, "saturates");
    }
}
