//! `trafgen` (netsniff-ng) floods of UDP frames — by default minimum-size, the worst case in
//! frames per second for a software switch. Used for the forwarding-efficiency measurements
//! (EtheReal paper §4.3, "Prototype Implementation Efficiency") and as best-effort interference
//! next to real-time connections (§4.2).
//!
//! trafgen has no duration flag, so a run is bounded by time: start it, let it send for the
//! requested duration, then SIGINT its process group (it prints its totals) and kill what is
//! left. What was really sent is read from the interface counters before and after.
//!
//! Pinning: trafgen pins its worker processes to CPU 0, 1, … itself, overriding `taskset`. To run
//! on the CPU asked for, the wrapper re-pins the whole process group every 20 ms while it runs
//! (the first correction lands before the worker has sent for long).

use super::counters::iface_counters;
use super::process::{netns_command, pin_process_group, ProcessGuard, Tool};
use super::{unparseable, Result, ToolError};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::io::Write as _;
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

/// Ethernet (14) + IPv4 (20) + UDP (8) header bytes.
const HEADERS: usize = 42;
/// Frame check sequence, counted in frame sizes but not written by trafgen.
const FCS: usize = 4;
/// Smallest Ethernet frame, FCS included.
const MIN_FRAME: usize = 64;
/// Largest untagged frame for a 1500-byte MTU, FCS included.
const MAX_FRAME: usize = 1518;

/// One trafgen UDP flood: what to send, where, for how long, on which CPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrafgenUdp {
    /// Interface in the namespace to send on.
    pub ifname: String,
    /// Source MAC address.
    pub src_mac: [u8; 6],
    /// Destination MAC address.
    pub dst_mac: [u8; 6],
    /// Source IPv4 address.
    pub src_ip: Ipv4Addr,
    /// Destination IPv4 address.
    pub dst_ip: Ipv4Addr,
    /// UDP source port.
    pub src_port: u16,
    /// UDP destination port (default 9, "discard").
    pub dst_port: u16,
    /// Ethernet frame length *including* the 4-byte FCS, 64..=1518 (64 → trafgen writes 60
    /// bytes, which is also what the interface byte counters show per frame).
    pub frame_len: usize,
    /// How long to send.
    pub duration: Duration,
    /// CPU to run on (see the module doc on pinning); `None` leaves the scheduler free.
    pub cpu: Option<usize>,
    /// How frames are spaced in time.
    pub pacing: TrafgenPacing,
    /// Send through the qdisc layer (`-q`), so `tc` shaping on the interface applies; trafgen
    /// bypasses it by default.
    pub qdisc_path: bool,
}

impl TrafgenUdp {
    /// Minimum-size (64-byte) frames, ports 9 → 9, one second, no pinning, unpaced, qdisc
    /// bypassed.
    pub fn new(
        ifname: &str,
        src_mac: [u8; 6],
        dst_mac: [u8; 6],
        src_ip: Ipv4Addr,
        dst_ip: Ipv4Addr,
    ) -> Self {
        Self {
            ifname: ifname.to_string(),
            src_mac,
            dst_mac,
            src_ip,
            dst_ip,
            src_port: 9,
            dst_port: 9,
            frame_len: MIN_FRAME,
            duration: Duration::from_secs(1),
            cpu: None,
            pacing: TrafgenPacing::Unlimited,
            qdisc_path: false,
        }
    }
}

/// How trafgen spaces its frames. Measured on the 2-core dev VM; always read the achieved rate
/// from [`TrafgenRun`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrafgenPacing {
    /// As fast as possible (TX ring, no sleeping): saturates a CPU.
    Unlimited,
    /// `--rate Npps`: trafgen's per-second budget — it sends N frames back to back at the start
    /// of each second, then idles until the second is over. Exact average rate, one big burst
    /// per second (1000 pps for 0.5 s sends all 1000 frames).
    PerSecond(u64),
    /// `--gap D`: sleep D between frames (one `sendto` per frame). Smooth, but the achieved
    /// rate is below 1/D because of the syscall and timer slack: 1 ms gives ~980 pps,
    /// 200 µs ~4300 pps, 50 µs ~14000 pps.
    Gap(Duration),
}

/// What a trafgen run sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrafgenRun {
    /// Packets the interface transmitted during the run (counter delta; includes anything else
    /// the stack sent meanwhile, e.g. an ARP reply).
    pub tx_packets: u64,
    /// Bytes the interface transmitted during the run (FCS excluded).
    pub tx_bytes: u64,
    /// Packets the interface dropped on transmit during the run.
    pub tx_dropped: u64,
    /// Packets trafgen itself reported sending, when it printed its summary.
    pub trafgen_packets: Option<u64>,
    /// Bytes trafgen itself reported sending.
    pub trafgen_bytes: Option<u64>,
    /// Wall-clock time from start to stop, seconds.
    pub elapsed_secs: f64,
    /// Thread migrations the pinning loop made (0 when `cpu` was `None`).
    pub repins: u64,
}

impl TrafgenRun {
    /// Transmitted frames per second over the run.
    pub fn tx_pps(&self) -> f64 {
        if self.elapsed_secs > 0.0 {
            self.tx_packets as f64 / self.elapsed_secs
        } else {
            0.0
        }
    }
}

fn mac_text(mac: &[u8; 6]) -> String {
    mac.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// The trafgen packet configuration for `spec`: one UDP frame whose IPv4 and UDP lengths and
/// checksums trafgen fills in, padded with zeros to `frame_len - 4` bytes.
pub fn trafgen_config(spec: &TrafgenUdp) -> Result<String> {
    if !(MIN_FRAME..=MAX_FRAME).contains(&spec.frame_len) {
        return Err(ToolError::InvalidArgument(format!(
            "frame length {} outside {MIN_FRAME}..={MAX_FRAME} (FCS included)",
            spec.frame_len
        )));
    }
    let padding = spec.frame_len - FCS - HEADERS;
    let mut cfg = String::new();
    // Writing to a String cannot fail.
    let _ = writeln!(cfg, "{{");
    let _ = writeln!(
        cfg,
        "  eth(sa={}, da={}, type=0x0800),",
        mac_text(&spec.src_mac),
        mac_text(&spec.dst_mac)
    );
    let _ = writeln!(
        cfg,
        "  ipv4(saddr={}, daddr={}, ttl=64, id=0, df),",
        spec.src_ip, spec.dst_ip
    );
    let _ = writeln!(cfg, "  udp(sp={}, dp={}),", spec.src_port, spec.dst_port);
    let _ = writeln!(cfg, "  fill(0x00, {padding})");
    let _ = writeln!(cfg, "}}");
    Ok(cfg)
}

fn trafgen_args(spec: &TrafgenUdp) -> Vec<String> {
    let mut args = vec![
        "--dev".to_string(),
        spec.ifname.clone(),
        "--conf".to_string(),
        "-".to_string(),
        "--cpus".to_string(),
        "1".to_string(),
        // Do not retune the machine-wide socket memory sysctls or IRQ affinities.
        "--no-sock-mem".to_string(),
        "--notouch-irq".to_string(),
    ];
    match spec.pacing {
        TrafgenPacing::Unlimited => {}
        TrafgenPacing::PerSecond(pps) => {
            args.extend(["--rate".to_string(), format!("{pps}pps")]);
        }
        TrafgenPacing::Gap(gap) => {
            args.extend(["--gap".to_string(), format!("{}ns", gap.as_nanos())]);
        }
    }
    if spec.qdisc_path {
        args.push("--qdisc-path".to_string());
    }
    args
}

/// Floods `spec` from namespace `ns` for `spec.duration` and reports what was sent.
pub fn trafgen_udp(ns: &str, spec: &TrafgenUdp) -> Result<TrafgenRun> {
    let config = trafgen_config(spec)?;
    if spec.duration.is_zero() || spec.duration > Duration::from_secs(3600) {
        return Err(ToolError::InvalidArgument(format!(
            "trafgen duration {:?} outside (0, 1 h]",
            spec.duration
        )));
    }
    match spec.pacing {
        TrafgenPacing::PerSecond(0) => {
            return Err(ToolError::InvalidArgument("trafgen rate 0 pps".into()));
        }
        TrafgenPacing::Gap(gap) if gap.is_zero() || gap > Duration::from_secs(1) => {
            return Err(ToolError::InvalidArgument(format!(
                "trafgen gap {gap:?} outside (0, 1 s]"
            )));
        }
        _ => {}
    }
    let before = iface_counters(ns, &spec.ifname)?;
    let args = trafgen_args(spec);
    let cmd = match spec.cpu {
        Some(cpu) => {
            // taskset places trafgen's parent (and its first moments); the loop below keeps
            // the workers there.
            let trafgen = Tool::Trafgen.locate()?;
            let mut prefix = vec![
                "-c".into(),
                cpu.to_string(),
                trafgen.to_string_lossy().into_owned(),
            ];
            prefix.extend(args);
            netns_command(ns, Tool::Taskset, prefix)?
        }
        None => netns_command(ns, Tool::Trafgen, args)?,
    };
    let started = Instant::now();
    let mut guard = ProcessGuard::spawn(Tool::Trafgen, cmd, true)?;
    if let Some(mut stdin) = guard.take_stdin() {
        // The config is a few hundred bytes: it fits the pipe, so this cannot block.
        stdin
            .write_all(config.as_bytes())
            .map_err(|source| ToolError::Io {
                tool: Tool::Trafgen.binary(),
                source,
            })?;
    }
    let deadline = started + spec.duration;
    let mut repins = 0u64;
    while Instant::now() < deadline {
        if guard.has_exited() {
            // It stopped on its own: a bad device or config. Report its words.
            let out = guard.wait_timeout(Duration::ZERO)?;
            return Err(out.failed(Tool::Trafgen));
        }
        if let Some(cpu) = spec.cpu {
            repins += pin_process_group(&guard, cpu)? as u64;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        std::thread::sleep(left.min(Duration::from_millis(20)));
    }
    let out = guard.stop_with(libc::SIGINT, Duration::from_secs(2));
    let elapsed_secs = started.elapsed().as_secs_f64();
    let after = iface_counters(ns, &spec.ifname)?;
    let delta = after.since(&before);
    let summary = parse_trafgen_summary(&format!("{}{}", out.stdout_text(), out.stderr_text()));
    Ok(TrafgenRun {
        tx_packets: delta.tx_packets,
        tx_bytes: delta.tx_bytes,
        tx_dropped: delta.tx_dropped,
        trafgen_packets: summary.as_ref().ok().map(|s| s.0),
        trafgen_bytes: summary.as_ref().ok().map(|s| s.1),
        elapsed_secs,
        repins,
    })
}

/// Parses trafgen's exit summary (`N packets outgoing`, `M bytes outgoing`) into
/// `(packets, bytes)`.
pub fn parse_trafgen_summary(text: &str) -> Result<(u64, u64)> {
    let tool = Tool::Trafgen.binary();
    // Lines are drawn with carriage returns: "\r        1000 packets outgoing".
    let find = |label: &str| -> Result<u64> {
        text.split(['\r', '\n'])
            .find_map(|line| line.trim().strip_suffix(label)?.trim().parse().ok())
            .ok_or_else(|| unparseable(tool, format!("no `{label}` line"), text))
    };
    Ok((find("packets outgoing")?, find("bytes outgoing")?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> TrafgenUdp {
        TrafgenUdp::new(
            "veth0",
            [0x02, 0, 0, 0, 0, 0x01],
            [0x02, 0, 0, 0, 0, 0xaa],
            Ipv4Addr::new(198, 18, 0, 1),
            Ipv4Addr::new(198, 18, 0, 2),
        )
    }

    #[test]
    fn minimum_frame_config() {
        let cfg = trafgen_config(&spec()).expect("64 is valid");
        assert_eq!(
            cfg,
            "{\n  eth(sa=02:00:00:00:00:01, da=02:00:00:00:00:aa, type=0x0800),\n  \
             ipv4(saddr=198.18.0.1, daddr=198.18.0.2, ttl=64, id=0, df),\n  \
             udp(sp=9, dp=9),\n  fill(0x00, 18)\n}\n"
        );
    }

    #[test]
    fn frame_length_bounds() {
        let mut s = spec();
        s.frame_len = 1518;
        assert!(trafgen_config(&s)
            .expect("1518 is valid")
            .contains("fill(0x00, 1472)"));
        for bad in [0, 63, 1519] {
            s.frame_len = bad;
            assert!(matches!(
                trafgen_config(&s),
                Err(ToolError::InvalidArgument(_))
            ));
        }
    }

    #[test]
    fn args_carry_rate_and_qdisc() {
        let mut s = spec();
        assert!(!trafgen_args(&s)
            .iter()
            .any(|a| a == "--rate" || a == "--gap"));
        s.pacing = TrafgenPacing::PerSecond(5000);
        s.qdisc_path = true;
        let args = trafgen_args(&s).join(" ");
        assert!(args.contains("--rate 5000pps"), "{args}");
        assert!(args.ends_with("--qdisc-path"), "{args}");
        s.pacing = TrafgenPacing::Gap(Duration::from_micros(200));
        let args = trafgen_args(&s).join(" ");
        assert!(args.contains("--gap 200000ns"), "{args}");
        assert!(!args.contains("--rate"), "{args}");
        assert!(args.contains("--conf - --cpus 1 --no-sock-mem --notouch-irq"));
    }

    #[test]
    fn parses_summary_after_sigint() {
        let (packets, bytes) =
            parse_trafgen_summary(include_str!("testdata/trafgen_sigint.txt")).expect("valid");
        assert_eq!(packets, 12_080_000);
        assert_eq!(bytes, 724_800_000);
        assert_eq!(bytes, packets * 60);
    }

    #[test]
    fn missing_summary_is_unparseable() {
        let text = "     1 packets to schedule\n    60 bytes in total\nRunning! Hang up with ^C!\n";
        assert!(matches!(
            parse_trafgen_summary(text),
            Err(ToolError::Unparseable { .. })
        ));
    }

    #[test]
    fn bad_runs_are_rejected_before_running() {
        let mut s = spec();
        s.duration = Duration::ZERO;
        assert!(matches!(
            trafgen_udp("rtl-x", &s),
            Err(ToolError::InvalidArgument(_))
        ));
        for pacing in [
            TrafgenPacing::PerSecond(0),
            TrafgenPacing::Gap(Duration::ZERO),
            TrafgenPacing::Gap(Duration::from_secs(2)),
        ] {
            let mut s = spec();
            s.pacing = pacing;
            assert!(matches!(
                trafgen_udp("rtl-x", &s),
                Err(ToolError::InvalidArgument(_))
            ));
        }
    }
}
