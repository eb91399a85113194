//! `rtlan tc-config`: the `tc` commands that make a plain (non-real-time) Linux host's egress
//! conform to a T-SPEC, so that it can share a network with shaped real-time nodes (Löser/Härtig,
//! seed 004 §3 "a token-bucket traffic shaper with bucket size b and fill rate r … results in a
//! traffic stream conforming to the T-SPEC (C, M, r, b)", and §4.3.3 "Sharing a Fast Ethernet
//! network with Linux", where the Linux nodes used TBF/HTB).
//!
//! The bucket is `b = r·Ts + M` for a shaping interval `Ts` (§3.1), or given directly. Sizes are
//! wire bytes as the switch counts them: a size table (`stab overhead 24 mpu 84 mtu 2047 tsize
//! 2048`, the lab's link emulation, docs/lab.md) charges each frame `max(len, 60) + 24` bytes.

use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, ValueEnum};
use rtlan_core::units::{format_rate, parse_duration, parse_rate};
use serde::Serialize;

/// Bytes the wire adds to a frame the kernel sees: FCS 4, preamble + SFD 8, inter-frame gap 12.
const FRAME_OVERHEAD: u64 = 24;
/// Shortest frame without FCS (padding).
const MIN_FRAME: u64 = 60;
/// Full frames the queue behind the bucket holds beyond `b` (a short queue: a greedy sender is
/// dropped at its own qdisc rather than delayed for long).
const QUEUE_FRAMES: u64 = 8;
/// The size table every command installs (exact to the byte up to 2047-byte frames).
const STAB: &str = "stab overhead 24 mpu 84 mtu 2047 tsize 2048";

/// Arguments of `rtlan tc-config`.
#[derive(Debug, Args)]
#[command(after_help = "\
What is shaped: the root qdisc of DEV's egress, i.e. everything this host sends out of DEV (all
sockets and protocols, ARP included), as one aggregate. Nothing is shaped on ingress.

What the host then promises the network: in any interval of length t, DEV emits at most
    alpha(t) = min(C*t + M, r*t + b)
wire bytes, counted as the switch counts them (each frame max(len, 60) + 24 bytes: FCS, preamble,
start delimiter and inter-frame gap; the size table makes the kernel count the same). That is
the T-SPEC (C, M, r, b) printed with the commands; give it to the admission (`rtlan analyze`,
the bandwidth manager) like any real-time node's. Traffic beyond it waits in a short queue
(8 full frames) and is then dropped on this host, never in the switch.

The bucket: --shaping-interval Ts gives b = r*Ts + M (Loeser/Haertig: the shaper replenishes an empty bucket at
most once per Ts); --burst gives b directly. The kernel's qdisc watchdog fires tens to hundreds
of microseconds late on a loaded host; tokens beyond b are lost then, so a Ts well below 1 ms
costs rate, never conformance.

Examples:

    # 40 Mbit/s, 10 ms shaping interval, TBF
    rtlan tc-config --dev eth0 --rate 40mbit --max-packet 1514 --shaping-interval 10ms

    # the same as an HTB class, printed as JSON
    rtlan tc-config --dev eth0 --rate 40mbit --shaping-interval 1ms --kind htb --json

Apply the printed lines with sh (as root, in the host's namespace); `tc qdisc del dev DEV root`
undoes them.")]
pub(crate) struct TcConfigArgs {
    /// The interface whose egress is shaped.
    #[arg(long, default_value = "eth0")]
    dev: String,
    /// Token rate r, wire bits per second (`40mbit`).
    #[arg(long, value_parser = parse_rate)]
    rate: u64,
    /// Largest frame this host sends, bytes without FCS (1514 at MTU 1500); M = that + 24.
    #[arg(long, default_value_t = 1514, value_parser = clap::value_parser!(u64).range(14..=2023))]
    max_packet: u64,
    /// Shaping interval Ts: b = r*Ts + M (`--ts` is accepted too).
    #[arg(long = "shaping-interval", alias = "ts", value_name = "TS", value_parser = parse_duration,
          required_unless_present = "burst", conflicts_with = "burst")]
    ts: Option<Duration>,
    /// Bucket b in wire bytes (at least M).
    #[arg(long)]
    burst: Option<u64>,
    /// Which qdisc shapes: tbf (one token bucket, burst b) or htb (root + one default class,
    /// burst b - M: HTB overdraws by up to one packet).
    #[arg(long, value_enum, default_value_t = Kind::Tbf)]
    kind: Kind,
    /// The link's rate C (the T-SPEC's peak rate).
    #[arg(long, value_parser = parse_rate, default_value = "100mbit")]
    link_rate: u64,
    /// Print the T-SPEC and the commands as JSON.
    #[arg(long)]
    json: bool,
}

/// The qdisc that shapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Kind {
    /// Token bucket filter: one bucket (r, b).
    Tbf,
    /// Hierarchical token bucket: a root and one default class at rate = ceil = r, burst
    /// b − M (HTB overdraws its bucket by up to one packet).
    Htb,
}

/// A T-SPEC `(C, M, r, b)` in wire bits per second and wire bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct Tspec {
    /// Peak rate C (the link).
    pub(crate) peak_rate_bps: u64,
    /// Largest frame M on the wire.
    pub(crate) max_packet_bytes: u64,
    /// Token rate r.
    pub(crate) rate_bps: u64,
    /// Bucket b (`burst_bytes` in JSON, the name every file and flag uses).
    #[serde(rename = "burst_bytes")]
    pub(crate) bucket_bytes: u64,
}

/// What `tc-config` prints.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct TcPlan {
    /// The shaped interface.
    pub(crate) dev: String,
    /// The qdisc kind.
    pub(crate) kind: Kind,
    /// The T-SPEC the interface's egress then conforms to.
    pub(crate) tspec: Tspec,
    /// The shaping interval the bucket was derived from, in µs (absent with --burst).
    pub(crate) shaping_interval_us: Option<f64>,
    /// The queue's `limit` in bytes (TBF: waiting bytes plus the bucket; HTB: the leaf
    /// `bfifo`'s waiting bytes).
    pub(crate) limit_bytes: u64,
    /// The commands, in order.
    pub(crate) commands: Vec<String>,
}

/// Why the arguments describe no valid shaper.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TcConfigError {
    /// The rate is zero.
    #[error("--rate must be positive")]
    ZeroRate,
    /// The rate exceeds the link.
    #[error("--rate {rate} exceeds the link rate {link}")]
    RateOverLink {
        /// The token rate.
        rate: String,
        /// The link rate.
        link: String,
    },
    /// The bucket cannot hold one maximum-size frame (TBF would drop every such frame).
    #[error("--burst {burst} is below one maximum frame on the wire ({needed} bytes)")]
    BurstTooSmall {
        /// The given bucket.
        burst: u64,
        /// `M` on the wire.
        needed: u64,
    },
    /// The interface name is not one `tc` accepts.
    #[error("bad interface name {0:?}")]
    BadDev(String),
}

/// The shaper for the given parameters (`ts` or `burst`; `ts` wins if both are given).
pub(crate) fn plan(
    dev: &str,
    kind: Kind,
    rate_bps: u64,
    link_rate_bps: u64,
    max_packet: u64,
    ts: Option<Duration>,
    burst: Option<u64>,
) -> Result<TcPlan, TcConfigError> {
    let dev_ok = !dev.is_empty()
        && dev.len() < 16
        && dev
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"-_.@".contains(&c));
    if !dev_ok {
        return Err(TcConfigError::BadDev(dev.to_string()));
    }
    if rate_bps == 0 {
        return Err(TcConfigError::ZeroRate);
    }
    if rate_bps > link_rate_bps {
        return Err(TcConfigError::RateOverLink {
            rate: format_rate(rate_bps),
            link: format_rate(link_rate_bps),
        });
    }
    let m = max_packet.max(MIN_FRAME) + FRAME_OVERHEAD;
    let bucket = match (ts, burst) {
        (Some(ts), _) => {
            let r_ts = (u128::from(rate_bps) * ts.as_nanos()).div_ceil(8_000_000_000);
            u64::try_from(r_ts).unwrap_or(u64::MAX).saturating_add(m)
        }
        (None, Some(b)) if b < m => {
            return Err(TcConfigError::BurstTooSmall {
                burst: b,
                needed: m,
            })
        }
        (None, Some(b)) => b,
        // clap requires one of them; a plain bucket of one frame is the safe reading otherwise.
        (None, None) => m,
    };
    // HTB lets a class send while its tokens are >= 0 and charges afterwards, so it can exceed
    // its bucket by one packet: its output conforms to (r, burst + M). Give it burst = b - M
    // (at least 1: `burst 0` would mean tc's default).
    let htb_burst = bucket.saturating_sub(m).max(1);
    let bucket = match kind {
        Kind::Tbf => bucket,
        Kind::Htb => htb_burst + m,
    };
    // TBF's limit counts the bytes that may wait for tokens plus the bucket; HTB's leaf queue
    // only the waiting ones.
    let limit = match kind {
        Kind::Tbf => bucket.saturating_add(QUEUE_FRAMES * m),
        Kind::Htb => QUEUE_FRAMES * m,
    };
    let r = format!("{rate_bps}bit");
    let commands = match kind {
        Kind::Tbf => vec![format!(
            "tc qdisc replace dev {dev} root {STAB} tbf rate {r} burst {bucket} limit {limit}"
        )],
        Kind::Htb => vec![
            format!("tc qdisc replace dev {dev} root handle 1: {STAB} htb default 10"),
            format!(
                "tc class add dev {dev} parent 1: classid 1:10 htb rate {r} ceil {r} \
                 burst {htb_burst} cburst {htb_burst} quantum {m}"
            ),
            format!("tc qdisc add dev {dev} parent 1:10 handle 10: bfifo limit {limit}"),
        ],
    };
    Ok(TcPlan {
        dev: dev.to_string(),
        kind,
        tspec: Tspec {
            peak_rate_bps: link_rate_bps,
            max_packet_bytes: m,
            rate_bps,
            bucket_bytes: bucket,
        },
        shaping_interval_us: ts.map(|t| t.as_secs_f64() * 1e6),
        limit_bytes: limit,
        commands,
    })
}

pub(crate) fn run(args: TcConfigArgs) -> anyhow::Result<ExitCode> {
    let p = plan(
        &args.dev,
        args.kind,
        args.rate,
        args.link_rate,
        args.max_packet,
        args.ts,
        args.burst,
    )?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&p)?);
        return Ok(ExitCode::SUCCESS);
    }
    let t = &p.tspec;
    let from = match args.ts {
        Some(ts) => format!(" (b = r*Ts + M, Ts = {ts:?})"),
        None => String::new(),
    };
    println!(
        "# T-SPEC of {} egress: C = {}, M = {} B, r = {}, b = {} B{from}",
        p.dev,
        format_rate(t.peak_rate_bps),
        t.max_packet_bytes,
        format_rate(t.rate_bps),
        t.bucket_bytes
    );
    println!("# in any interval t: at most min(C*t + M, r*t + b) wire bytes (frame + 24, >= 84)");
    for c in &p.commands {
        println!("{c}");
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MBIT: u64 = 1_000_000;

    #[test]
    fn tbf_bucket_is_r_ts_plus_m() {
        let p = plan(
            "eth0",
            Kind::Tbf,
            40 * MBIT,
            100 * MBIT,
            1514,
            Some(Duration::from_millis(10)),
            None,
        )
        .expect("valid");
        // 40 Mbit/s × 10 ms = 50 000 bytes, + 1538.
        assert_eq!(p.tspec.bucket_bytes, 51_538);
        assert_eq!(p.tspec.max_packet_bytes, 1538);
        assert_eq!(p.limit_bytes, 51_538 + 8 * 1538);
        assert_eq!(
            p.commands,
            vec![
                "tc qdisc replace dev eth0 root stab overhead 24 mpu 84 mtu 2047 tsize 2048 \
                 tbf rate 40000000bit burst 51538 limit 63842"
            ]
        );
        // 100 µs: 500 bytes; rounded up when not whole.
        let small = plan(
            "eth0",
            Kind::Tbf,
            3,
            100 * MBIT,
            60,
            Some(Duration::from_secs(1)),
            None,
        )
        .expect("valid");
        assert_eq!(small.tspec.bucket_bytes, 1 + 84);
    }

    #[test]
    fn htb_root_and_default_class() {
        let p = plan(
            "veth-a",
            Kind::Htb,
            20 * MBIT,
            100 * MBIT,
            1514,
            None,
            Some(30_000),
        )
        .expect("valid");
        assert_eq!(p.tspec.bucket_bytes, 30_000);
        assert_eq!(p.shaping_interval_us, None);
        // HTB overdraws by one packet: its own burst is b − M.
        assert_eq!(p.commands.len(), 3);
        assert!(
            p.commands[0].ends_with("htb default 10"),
            "{:?}",
            p.commands
        );
        assert!(p.commands[0].contains("root handle 1: stab overhead 24 mpu 84"));
        assert!(p.commands[1].contains(
            "classid 1:10 htb rate 20000000bit ceil 20000000bit burst 28462 cburst 28462"
        ));
        assert!(p.commands[2].ends_with("parent 1:10 handle 10: bfifo limit 12304"));
        assert_eq!(p.limit_bytes, 8 * 1538);
        // b = M leaves HTB a 1-byte bucket (0 would mean tc's default) and b = M + 1.
        let tight = plan("eth0", Kind::Htb, MBIT, 100 * MBIT, 1514, None, Some(1538));
        assert_eq!(tight.expect("valid").tspec.bucket_bytes, 1539);
    }

    #[test]
    fn bad_parameters_are_errors() {
        let ts = Some(Duration::from_millis(1));
        assert_eq!(
            plan("eth0", Kind::Tbf, 0, 100 * MBIT, 1514, ts, None),
            Err(TcConfigError::ZeroRate)
        );
        assert!(matches!(
            plan("eth0", Kind::Tbf, 200 * MBIT, 100 * MBIT, 1514, ts, None),
            Err(TcConfigError::RateOverLink { .. })
        ));
        assert_eq!(
            plan("eth0", Kind::Tbf, MBIT, 100 * MBIT, 1514, None, Some(1537)),
            Err(TcConfigError::BurstTooSmall {
                burst: 1537,
                needed: 1538
            })
        );
        assert!(matches!(
            plan("eth0; reboot", Kind::Tbf, MBIT, 100 * MBIT, 1514, ts, None),
            Err(TcConfigError::BadDev(_))
        ));
    }
}
