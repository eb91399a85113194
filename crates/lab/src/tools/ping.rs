//! `ping` (iputils) between lab hosts: reachability and ICMP round-trip times.

use super::process::{run_in_ns, Tool};
use super::{unparseable, Result, ToolError};
use serde::{Deserialize, Serialize};
use std::net::Ipv4Addr;
use std::time::Duration;

/// Round-trip-time summary of a ping run, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RttStats {
    /// Smallest RTT.
    pub min_ms: f64,
    /// Mean RTT.
    pub avg_ms: f64,
    /// Largest RTT.
    pub max_ms: f64,
    /// Mean deviation, as ping reports it.
    pub mdev_ms: f64,
}

/// What a ping run reported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PingResult {
    /// Echo requests sent.
    pub transmitted: u32,
    /// Echo replies received (duplicates not counted).
    pub received: u32,
    /// ICMP errors received instead (e.g. "Destination Host Unreachable").
    pub errors: u32,
    /// Duplicate replies.
    pub duplicates: u32,
    /// Loss in percent, as ping reports it.
    pub loss_percent: f64,
    /// RTT summary; `None` when no reply arrived.
    pub rtt: Option<RttStats>,
}

/// Pings `dst` from namespace `ns`: `count` requests, `interval` apart, each waiting at most one
/// second for its reply. No reply at all is a result (`received == 0`), not an error.
pub fn ping(ns: &str, dst: Ipv4Addr, count: u32, interval: Duration) -> Result<PingResult> {
    if count == 0 {
        return Err(ToolError::InvalidArgument("ping count must be >= 1".into()));
    }
    if interval < Duration::from_millis(1) || interval > Duration::from_secs(60) {
        return Err(ToolError::InvalidArgument(format!(
            "ping interval {interval:?} outside 1 ms ..= 60 s"
        )));
    }
    let args = [
        "-n".to_string(),
        "-c".to_string(),
        count.to_string(),
        "-i".to_string(),
        format!("{:.3}", interval.as_secs_f64()),
        "-W".to_string(),
        "1".to_string(),
        dst.to_string(),
    ];
    let timeout = interval * count + Duration::from_secs(5);
    let out = run_in_ns(ns, Tool::Ping, args, timeout)?;
    // iputils: 0 = some reply, 1 = no reply, 2 = any other error.
    match out.status.code() {
        Some(0 | 1) => parse_ping_output(&out.stdout_text()),
        _ => Err(out.failed(Tool::Ping)),
    }
}

/// Parses the summary of iputils `ping` (the `--- … statistics ---` block).
pub fn parse_ping_output(text: &str) -> Result<PingResult> {
    let tool = Tool::Ping.binary();
    let counts = text
        .lines()
        .find(|l| l.contains("packets transmitted"))
        .ok_or_else(|| unparseable(tool, "no `packets transmitted` line", text))?;
    let mut result = PingResult {
        transmitted: 0,
        received: 0,
        errors: 0,
        duplicates: 0,
        loss_percent: f64::NAN,
        rtt: None,
    };
    let mut seen_tx = false;
    let mut seen_rx = false;
    // "6 packets transmitted, 0 received, +6 errors, 100% packet loss, time 2558ms"
    for part in counts.split(',').map(str::trim) {
        let mut words = part.split_whitespace();
        let (Some(value), Some(label)) = (words.next(), words.next()) else {
            continue;
        };
        let number = |v: &str| -> Result<u32> {
            v.trim_start_matches('+')
                .parse()
                .map_err(|_| unparseable(tool, format!("bad count {v:?}"), text))
        };
        match label {
            "packets" => {
                result.transmitted = number(value)?;
                seen_tx = true;
            }
            "received" => {
                result.received = number(value)?;
                seen_rx = true;
            }
            "errors" => result.errors = number(value)?,
            "duplicates" => result.duplicates = number(value)?,
            "packet" => {
                result.loss_percent = value
                    .trim_end_matches('%')
                    .parse()
                    .map_err(|_| unparseable(tool, format!("bad loss {value:?}"), text))?;
            }
            _ => {}
        }
    }
    if !seen_tx || !seen_rx || result.loss_percent.is_nan() {
        return Err(unparseable(tool, "incomplete statistics line", text));
    }
    // "rtt min/avg/max/mdev = 0.074/0.436/1.131/0.491 ms", with ", pipe N" appended when
    // replies took longer than the interval (N requests were outstanding at once).
    if let Some(line) = text.lines().find(|l| l.starts_with("rtt ")) {
        let values = line
            .split('=')
            .nth(1)
            .map(|v| v.split(',').next().unwrap_or(v))
            .map(|v| v.trim().trim_end_matches("ms").trim())
            .ok_or_else(|| unparseable(tool, "rtt line without values", text))?;
        let parsed: Vec<f64> = values
            .split('/')
            .map(|v| v.parse::<f64>())
            .collect::<std::result::Result<_, _>>()
            .map_err(|_| unparseable(tool, format!("bad rtt values {values:?}"), text))?;
        let [min_ms, avg_ms, max_ms, mdev_ms] = parsed[..] else {
            return Err(unparseable(tool, "rtt line needs four values", text));
        };
        result.rtt = Some(RttStats {
            min_ms,
            avg_ms,
            max_ms,
            mdev_ms,
        });
    } else if result.received > 0 {
        return Err(unparseable(tool, "replies but no rtt line", text));
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_successful_run() {
        let r = parse_ping_output(include_str!("testdata/ping_ok.txt")).expect("valid output");
        assert_eq!(r.transmitted, 5);
        assert_eq!(r.received, 5);
        assert_eq!(r.errors, 0);
        assert_eq!(r.loss_percent, 0.0);
        let rtt = r.rtt.expect("replies carry an rtt line");
        assert!(rtt.min_ms <= rtt.avg_ms && rtt.avg_ms <= rtt.max_ms);
        assert!(rtt.min_ms > 0.0);
    }

    #[test]
    fn parses_total_loss_without_rtt() {
        let r = parse_ping_output(include_str!("testdata/ping_unreach.txt")).expect("valid");
        assert_eq!((r.transmitted, r.received, r.errors), (3, 0, 0));
        assert_eq!(r.loss_percent, 100.0);
        assert_eq!(r.rtt, None);
    }

    #[test]
    fn parses_icmp_errors() {
        let r = parse_ping_output(include_str!("testdata/ping_errors.txt")).expect("valid");
        assert_eq!((r.transmitted, r.received, r.errors), (6, 0, 6));
        assert_eq!(r.rtt, None);
    }

    #[test]
    fn a_pipe_after_the_rtt_values_is_read_past() {
        let text = "--- x ping statistics ---\n\
                    20 packets transmitted, 17 received, 15% packet loss, time 1904ms\n\
                    rtt min/avg/max/mdev = 1.295/31.702/107.793/44.483 ms, pipe 2\n";
        let r = parse_ping_output(text).expect("valid");
        assert_eq!(r.received, 17);
        assert_eq!(r.rtt.map(|r| r.avg_ms), Some(31.702));
        assert_eq!(r.rtt.map(|r| r.mdev_ms), Some(44.483));
    }

    #[test]
    fn exact_values_and_duplicates() {
        let text = "--- x ping statistics ---\n\
                    4 packets transmitted, 3 received, +1 duplicates, 25% packet loss, time 3ms\n\
                    rtt min/avg/max/mdev = 0.010/0.020/0.040/0.005 ms\n";
        let r = parse_ping_output(text).expect("valid");
        assert_eq!((r.transmitted, r.received, r.duplicates), (4, 3, 1));
        assert_eq!(r.loss_percent, 25.0);
        assert_eq!(
            r.rtt,
            Some(RttStats {
                min_ms: 0.010,
                avg_ms: 0.020,
                max_ms: 0.040,
                mdev_ms: 0.005
            })
        );
    }

    #[test]
    fn rejects_garbage() {
        for bad in [
            "",
            "ping: connect: Network is unreachable\n",
            "x packets transmitted, 1 received, 0% packet loss\n",
            "1 packets transmitted, 1 received, 0% packet loss\n",
            "1 packets transmitted, 1 received, 0% packet loss\nrtt min/avg/max/mdev = 1/2 ms\n",
        ] {
            assert!(
                matches!(parse_ping_output(bad), Err(ToolError::Unparseable { .. })),
                "{bad:?}"
            );
        }
    }
}
