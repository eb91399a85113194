//! `sockperf` UDP ping-pong latency between lab hosts (DESIGN.md §6: observed delay vs the
//! computed bound): a server guard and a client that parses the percentile table.

use super::process::{netns_command, run_in_ns, start_server, ProcessGuard, Proto, Tool};
use super::{unparseable, Result, ToolError};
use serde::{Deserialize, Serialize};
use std::net::Ipv4Addr;
use std::time::Duration;

/// How long the client may take beyond the test itself (warm-up, statistics).
const CLIENT_SLACK: Duration = Duration::from_secs(8);

/// A running `sockperf server` (UDP, all addresses) in a namespace; killed when dropped.
#[derive(Debug)]
pub struct SockperfServer {
    guard: ProcessGuard,
    port: u16,
}

impl SockperfServer {
    /// Starts `sockperf sr -i 0.0.0.0 -p PORT` in `ns` and waits (up to 3 s) until it listens.
    pub fn start(ns: &str, port: u16) -> Result<Self> {
        let port_text = port.to_string();
        let cmd = netns_command(
            ns,
            Tool::Sockperf,
            ["sr", "-i", "0.0.0.0", "-p", &port_text],
        )?;
        let guard = start_server(ns, Tool::Sockperf, cmd, Proto::Udp, port)?;
        Ok(Self { guard, port })
    }

    /// The UDP port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The PID of the server process.
    pub fn pid(&self) -> u32 {
        self.guard.pid()
    }
}

/// Client options for [`sockperf_pingpong_with`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SockperfOpts {
    /// Messages per second (`--mps`); `None` is sockperf's default for ping-pong, "max", which
    /// keeps a CPU busy for the whole run.
    pub mps: Option<u32>,
}

/// Latency statistics from one sockperf run, in microseconds. With `--full-rtt` (what the
/// wrappers here use) the figures are round-trip times; otherwise sockperf halves them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyResult {
    /// Whether the figures are full round-trip times (`avg-rtt`) rather than half (`avg-latency`).
    pub round_trip: bool,
    /// Samples behind the percentiles (the run minus warm-up and drain).
    pub observations: u64,
    /// Messages sent in the measured part of the run.
    pub sent: u64,
    /// Replies received in the measured part of the run.
    pub received: u64,
    /// Messages sockperf counted as dropped.
    pub dropped: u64,
    /// Duplicated replies.
    pub duplicated: u64,
    /// Replies out of order.
    pub out_of_order: u64,
    /// Mean.
    pub avg_us: f64,
    /// Standard deviation.
    pub std_dev_us: f64,
    /// Smallest sample.
    pub min_us: f64,
    /// Median (the 50.000 percentile).
    pub p50_us: f64,
    /// 90th percentile.
    pub p90_us: f64,
    /// 99th percentile (the 99.000 line).
    pub p99_us: f64,
    /// 99.9th percentile.
    pub p999_us: f64,
    /// Largest sample.
    pub max_us: f64,
}

/// UDP ping-pong for `secs` seconds from `ns` to a [`SockperfServer`] at `server:port` with
/// `msg_size`-byte messages, as fast as possible (see [`sockperf_pingpong_with`] to limit the
/// rate). Figures are full round-trip times.
pub fn sockperf_pingpong(
    ns: &str,
    server: Ipv4Addr,
    port: u16,
    secs: u32,
    msg_size: u32,
) -> Result<LatencyResult> {
    sockperf_pingpong_with(ns, server, port, secs, msg_size, SockperfOpts::default())
}

/// [`sockperf_pingpong`] with options (message rate).
pub fn sockperf_pingpong_with(
    ns: &str,
    server: Ipv4Addr,
    port: u16,
    secs: u32,
    msg_size: u32,
    opts: SockperfOpts,
) -> Result<LatencyResult> {
    if secs == 0 || secs > 3600 {
        return Err(ToolError::InvalidArgument(format!(
            "sockperf duration {secs} s outside 1..=3600"
        )));
    }
    if !(14..=65_507).contains(&msg_size) {
        return Err(ToolError::InvalidArgument(format!(
            "sockperf message size {msg_size} outside 14..=65507"
        )));
    }
    let mut args = vec![
        "pp".to_string(),
        "-i".to_string(),
        server.to_string(),
        "-p".to_string(),
        port.to_string(),
        "-t".to_string(),
        secs.to_string(),
        "-m".to_string(),
        msg_size.to_string(),
        "--full-rtt".to_string(),
    ];
    match opts.mps {
        Some(0) => return Err(ToolError::InvalidArgument("sockperf mps 0".into())),
        Some(mps) => args.push(format!("--mps={mps}")),
        None => {}
    }
    let timeout = Duration::from_secs(secs.into()) + CLIENT_SLACK;
    let out = run_in_ns(ns, Tool::Sockperf, args, timeout)?;
    let text = format!("{}{}", out.stdout_text(), out.stderr_text());
    if !out.status.success() {
        return Err(out.failed(Tool::Sockperf));
    }
    parse_sockperf_output(&text)
}

/// Removes ANSI colour sequences (`ESC [ … m`), which sockperf prints even into a pipe.
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The number after `key=` in `line` (up to the next `;`, space or `)`).
fn value_after<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let start = line.find(key)? + key.len();
    let rest = &line[start..];
    let end = rest
        .find(|c: char| c == ';' || c == ')' || c.is_whitespace())
        .unwrap_or(rest.len());
    Some(&rest[..end])
}

/// Parses the statistics sockperf ping-pong prints for server 0.
pub fn parse_sockperf_output(raw: &str) -> Result<LatencyResult> {
    let tool = Tool::Sockperf.binary();
    let text = strip_ansi(raw);
    if let Some(line) = text
        .lines()
        .find(|l| l.contains("No messages were received"))
    {
        return Err(ToolError::Reported {
            tool,
            message: line.trim_start_matches("sockperf:").trim().to_string(),
        });
    }
    let bad = |reason: String| unparseable(tool, reason, &text);
    let float = |s: Option<&str>, what: &str| -> Result<f64> {
        s.and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|v| v.is_finite())
            .ok_or_else(|| bad(format!("missing or bad {what}")))
    };
    let int = |s: Option<&str>, what: &str| -> Result<u64> {
        s.and_then(|v| v.trim().parse::<u64>().ok())
            .ok_or_else(|| bad(format!("missing or bad {what}")))
    };
    let find = |needle: &str| text.lines().find(|l| l.contains(needle));

    // "[Valid Duration] RunTime=0.550 sec; SentMessages=7572; ReceivedMessages=7572"
    let valid = find("[Valid Duration]");
    // "====> avg-rtt=72.617 (std-dev=32.165)" or "avg-latency=…"
    let (avg_line, round_trip) = match (find("avg-rtt="), find("avg-latency=")) {
        (Some(l), _) => (Some(l), true),
        (None, Some(l)) => (Some(l), false),
        (None, None) => (None, false),
    };
    let avg_key = if round_trip {
        "avg-rtt="
    } else {
        "avg-latency="
    };
    // "# dropped messages = 0; # duplicated messages = 0; # out-of-order messages = 0"
    let losses = find("# dropped messages");
    let loss = |label: &str| -> Result<u64> {
        let line = losses.ok_or_else(|| bad("missing dropped-messages line".into()))?;
        let part = line
            .split(';')
            .find(|p| p.contains(label))
            .and_then(|p| p.split('=').nth(1));
        int(part, label)
    };
    // "Total 7572 observations; each percentile contains 75.72 observations"
    let observations = int(
        find("observations;")
            .and_then(|l| l.split("Total").nth(1))
            .and_then(|l| l.split_whitespace().next()),
        "observation count",
    )?;
    // "---> percentile 50.000 =   67.710", "---> <MAX> observation = 1426.153"
    let table = |label: &str| -> Result<f64> {
        let line = text
            .lines()
            .find(|l| l.contains("--->") && l.contains(label));
        float(line.and_then(|l| l.split('=').nth(1)), label)
    };
    Ok(LatencyResult {
        round_trip,
        observations,
        sent: int(
            valid.and_then(|l| value_after(l, "SentMessages=")),
            "SentMessages",
        )?,
        received: int(
            valid.and_then(|l| value_after(l, "ReceivedMessages=")),
            "ReceivedMessages",
        )?,
        dropped: loss("dropped")?,
        duplicated: loss("duplicated")?,
        out_of_order: loss("out-of-order")?,
        avg_us: float(avg_line.and_then(|l| value_after(l, avg_key)), "average")?,
        std_dev_us: float(avg_line.and_then(|l| value_after(l, "std-dev=")), "std-dev")?,
        min_us: table("<MIN> observation")?,
        p50_us: table("percentile 50.000")?,
        p90_us: table("percentile 90.000")?,
        p99_us: table("percentile 99.000")?,
        p999_us: table("percentile 99.900")?,
        max_us: table("<MAX> observation")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_full_rtt_run() {
        let r = parse_sockperf_output(include_str!("testdata/sockperf_pp.txt")).expect("valid");
        assert!(r.round_trip);
        assert_eq!(r.observations, 7572);
        assert_eq!((r.sent, r.received), (7572, 7572));
        assert_eq!((r.dropped, r.duplicated, r.out_of_order), (0, 0, 0));
        assert_eq!(r.avg_us, 72.617);
        assert_eq!(r.std_dev_us, 32.165);
        assert_eq!(r.min_us, 23.905);
        assert_eq!(r.p50_us, 67.710);
        assert_eq!(r.p90_us, 93.338);
        assert_eq!(r.p99_us, 149.957);
        assert_eq!(r.p999_us, 388.896);
        assert_eq!(r.max_us, 1426.153);
    }

    #[test]
    fn parses_half_rtt_run() {
        let r =
            parse_sockperf_output(include_str!("testdata/sockperf_pp_latency.txt")).expect("valid");
        assert!(!r.round_trip);
        assert_eq!(r.observations, 549);
        assert_eq!(r.avg_us, 43.073);
        assert_eq!(r.p50_us, 38.957);
        assert_eq!(r.p99_us, 78.744);
        assert_eq!(r.max_us, 788.189);
    }

    #[test]
    fn no_server_is_reported() {
        let err = parse_sockperf_output(include_str!("testdata/sockperf_pp_noserver.txt"))
            .expect_err("nothing came back");
        assert!(
            matches!(&err, ToolError::Reported { message, .. } if message.contains("server down")),
            "{err:?}"
        );
    }

    #[test]
    fn truncated_output_is_unparseable() {
        let full = include_str!("testdata/sockperf_pp.txt");
        // Cut before the percentile table: the counts parse, the table does not.
        let cut = &full[..full.find("<MAX>").expect("fixture has a table")];
        assert!(matches!(
            parse_sockperf_output(cut),
            Err(ToolError::Unparseable { .. })
        ));
        assert!(matches!(
            parse_sockperf_output(""),
            Err(ToolError::Unparseable { .. })
        ));
    }

    #[test]
    fn ansi_sequences_are_removed() {
        assert_eq!(strip_ansi("a\u{1b}[2;35mb\u{1b}[0mc"), "abc");
        assert_eq!(strip_ansi("plain"), "plain");
        // A lone ESC is kept; an unterminated sequence is dropped; neither panics.
        assert_eq!(strip_ansi("x\u{1b}"), "x\u{1b}");
        assert_eq!(strip_ansi("x\u{1b}[12"), "x");
    }
}
