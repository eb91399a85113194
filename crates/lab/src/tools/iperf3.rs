//! `iperf3` throughput tests between lab hosts (DESIGN.md §6: delivered rate vs reservation,
//! loss): a server guard, a TCP client (sender/receiver rate, retransmits) and a UDP client at a
//! target bitrate (receiver-side rate, loss, jitter). Results come from `iperf3 --json`.

use super::process::{netns_command, run_in_ns, start_server, ProcessGuard, Proto, Tool};
use super::{unparseable, Result, ToolError};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::net::Ipv4Addr;
use std::time::Duration;

/// How long the client may take beyond the test itself (connect, result exchange).
const CLIENT_SLACK: Duration = Duration::from_secs(10);

/// A running `iperf3 -s` in a namespace; killed when dropped. It serves any number of tests,
/// one at a time.
#[derive(Debug)]
pub struct Iperf3Server {
    guard: ProcessGuard,
    port: u16,
}

impl Iperf3Server {
    /// Starts `iperf3 -s -p PORT` in `ns` and waits (up to 3 s) until it listens.
    pub fn start(ns: &str, port: u16) -> Result<Self> {
        let cmd = netns_command(ns, Tool::Iperf3, ["-s", "-p", &port.to_string()])?;
        let guard = start_server(ns, Tool::Iperf3, cmd, Proto::Tcp, port)?;
        Ok(Self { guard, port })
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The PID of the server process.
    pub fn pid(&self) -> u32 {
        self.guard.pid()
    }
}

/// Client options shared by the TCP and UDP tests.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Iperf3Opts {
    /// Parallel streams (`-P`); 0 or 1 means one.
    pub parallel: u32,
    /// Server sends, client receives (`-R`).
    pub reverse: bool,
    /// Buffer / datagram payload length in bytes (`-l`); `None` keeps iperf3's default.
    pub length: Option<u32>,
    /// IP TOS byte (`-S`).
    pub tos: Option<u8>,
    /// Socket buffer size in bytes (`-w`).
    pub window: Option<u32>,
    /// The client's own port (`--cport`): a reservation names it.
    pub client_port: Option<u16>,
}

/// Result of a TCP test, from the sender's and the receiver's side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Iperf3Result {
    /// Test duration in seconds (sender side).
    pub seconds: f64,
    /// Bytes the sender wrote.
    pub sent_bytes: u64,
    /// Bytes the receiver read.
    pub received_bytes: u64,
    /// Sender-side rate in bit/s.
    pub sender_bps: f64,
    /// Receiver-side rate in bit/s.
    pub receiver_bps: f64,
    /// TCP retransmissions, when iperf3 could read them (sender on Linux).
    pub retransmits: Option<u64>,
}

/// Result of a UDP test; the rate, loss and jitter are the receiver's view.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Iperf3UdpResult {
    /// Requested bitrate in bit/s.
    pub target_bps: u64,
    /// Sender-side rate in bit/s.
    pub sender_bps: f64,
    /// Receiver-side rate in bit/s.
    pub receiver_bps: f64,
    /// Datagrams the receiver expected (by sequence number).
    pub packets: u64,
    /// Datagrams that never arrived.
    pub lost_packets: u64,
    /// `lost_packets / packets` in percent.
    pub loss_percent: f64,
    /// Receiver-side jitter (RFC 1889 smoothed), milliseconds.
    pub jitter_ms: f64,
    /// Datagrams that arrived out of order, when reported.
    pub out_of_order: Option<u64>,
}

fn client_args(server: Ipv4Addr, port: u16, secs: u32, opts: &Iperf3Opts) -> Vec<String> {
    let mut args = vec![
        "-c".to_string(),
        server.to_string(),
        "-p".to_string(),
        port.to_string(),
        "-t".to_string(),
        secs.to_string(),
        "--json".to_string(),
        "--connect-timeout".to_string(),
        "3000".to_string(),
    ];
    if opts.parallel > 1 {
        args.extend(["-P".to_string(), opts.parallel.to_string()]);
    }
    if opts.reverse {
        args.push("-R".to_string());
    }
    if let Some(len) = opts.length {
        args.extend(["-l".to_string(), len.to_string()]);
    }
    if let Some(tos) = opts.tos {
        args.extend(["-S".to_string(), tos.to_string()]);
    }
    if let Some(window) = opts.window {
        args.extend(["-w".to_string(), window.to_string()]);
    }
    if let Some(port) = opts.client_port {
        args.extend(["--cport".to_string(), port.to_string()]);
    }
    args
}

fn run_client(ns: &str, args: Vec<String>, secs: u32) -> Result<String> {
    if secs == 0 || secs > 3600 {
        return Err(ToolError::InvalidArgument(format!(
            "iperf3 duration {secs} s outside 1..=3600"
        )));
    }
    let timeout = Duration::from_secs(secs.into()) + CLIENT_SLACK;
    let out = run_in_ns(ns, Tool::Iperf3, args, timeout)?;
    let text = out.stdout_text();
    // With --json, failures are reported in the document's `error` field (exit status 0 or 1
    // depending on the version); only fall back to the exit status when there is no document.
    if !out.status.success() && serde_json::from_str::<Value>(&text).is_err() {
        return Err(out.failed(Tool::Iperf3));
    }
    Ok(text)
}

/// Runs a TCP test of `secs` seconds from namespace `ns_client` to an [`Iperf3Server`] at
/// `server:port`.
pub fn iperf3_tcp(
    ns_client: &str,
    server: Ipv4Addr,
    port: u16,
    secs: u32,
    opts: &Iperf3Opts,
) -> Result<Iperf3Result> {
    let args = client_args(server, port, secs, opts);
    parse_iperf3_tcp(&run_client(ns_client, args, secs)?)
}

/// Runs a UDP test of `secs` seconds at `bitrate_bps` (total over all streams) from `ns_client`
/// to an [`Iperf3Server`] at `server:port`.
pub fn iperf3_udp(
    ns_client: &str,
    server: Ipv4Addr,
    port: u16,
    secs: u32,
    bitrate_bps: u64,
    opts: &Iperf3Opts,
) -> Result<Iperf3UdpResult> {
    if bitrate_bps == 0 {
        return Err(ToolError::InvalidArgument(
            "UDP bitrate 0 means unlimited in iperf3; give a rate".into(),
        ));
    }
    let streams = u64::from(opts.parallel.max(1));
    let mut args = client_args(server, port, secs, opts);
    // iperf3's -b is per stream.
    args.extend([
        "-u".to_string(),
        "-b".to_string(),
        (bitrate_bps / streams).max(1).to_string(),
    ]);
    parse_iperf3_udp(&run_client(ns_client, args, secs)?)
}

fn parse_document(text: &str) -> Result<Value> {
    let tool = Tool::Iperf3.binary();
    let doc: Value = serde_json::from_str(text)
        .map_err(|e| unparseable(tool, format!("not JSON: {e}"), text))?;
    if let Some(message) = doc.get("error").and_then(Value::as_str) {
        return Err(ToolError::Reported {
            tool,
            message: message.to_string(),
        });
    }
    Ok(doc)
}

fn check_protocol(doc: &Value, want: &str, text: &str) -> Result<()> {
    let got = doc
        .pointer("/start/test_start/protocol")
        .and_then(Value::as_str);
    if got == Some(want) {
        Ok(())
    } else {
        Err(unparseable(
            Tool::Iperf3.binary(),
            format!("expected a {want} test, got {got:?}"),
            text,
        ))
    }
}

fn number(doc: &Value, pointer: &str, text: &str) -> Result<f64> {
    doc.pointer(pointer)
        .and_then(Value::as_f64)
        .ok_or_else(|| unparseable(Tool::Iperf3.binary(), format!("missing {pointer}"), text))
}

fn count(doc: &Value, pointer: &str, text: &str) -> Result<u64> {
    doc.pointer(pointer)
        .and_then(Value::as_u64)
        .ok_or_else(|| unparseable(Tool::Iperf3.binary(), format!("missing {pointer}"), text))
}

/// Parses `iperf3 --json` output of a TCP test.
pub fn parse_iperf3_tcp(text: &str) -> Result<Iperf3Result> {
    let doc = parse_document(text)?;
    check_protocol(&doc, "TCP", text)?;
    Ok(Iperf3Result {
        seconds: number(&doc, "/end/sum_sent/seconds", text)?,
        sent_bytes: count(&doc, "/end/sum_sent/bytes", text)?,
        received_bytes: count(&doc, "/end/sum_received/bytes", text)?,
        sender_bps: number(&doc, "/end/sum_sent/bits_per_second", text)?,
        receiver_bps: number(&doc, "/end/sum_received/bits_per_second", text)?,
        retransmits: doc
            .pointer("/end/sum_sent/retransmits")
            .and_then(Value::as_u64),
    })
}

/// Parses `iperf3 --json` output of a UDP test. Receiver-side figures come from
/// `end.sum_received` (iperf3 ≥ 3.10) or, in older versions, `end.sum`.
pub fn parse_iperf3_udp(text: &str) -> Result<Iperf3UdpResult> {
    let doc = parse_document(text)?;
    check_protocol(&doc, "UDP", text)?;
    let rx = if doc.pointer("/end/sum_received").is_some() {
        "/end/sum_received"
    } else {
        "/end/sum"
    };
    let target = doc
        .pointer("/start/test_start/target_bitrate")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let streams = doc
        .pointer("/start/test_start/num_streams")
        .and_then(Value::as_u64)
        .unwrap_or(1)
        .max(1);
    let out_of_order = doc
        .pointer("/end/streams")
        .and_then(Value::as_array)
        .map(|streams| {
            streams
                .iter()
                .filter_map(|s| s.pointer("/udp/out_of_order").and_then(Value::as_u64))
                .sum()
        });
    Ok(Iperf3UdpResult {
        target_bps: target.saturating_mul(streams),
        sender_bps: number(&doc, "/end/sum_sent/bits_per_second", text)
            .or_else(|_| number(&doc, "/end/sum/bits_per_second", text))?,
        receiver_bps: number(&doc, &format!("{rx}/bits_per_second"), text)?,
        packets: count(&doc, &format!("{rx}/packets"), text)?,
        lost_packets: count(&doc, &format!("{rx}/lost_packets"), text)?,
        loss_percent: number(&doc, &format!("{rx}/lost_percent"), text)?,
        jitter_ms: number(&doc, &format!("{rx}/jitter_ms"), text)?,
        out_of_order,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_tcp_run() {
        let r = parse_iperf3_tcp(include_str!("testdata/iperf3_tcp.json")).expect("valid");
        assert_eq!(r.sent_bytes, 872_153_088);
        assert_eq!(r.received_bytes, 872_153_088);
        assert_eq!(r.retransmits, Some(49));
        assert!((r.sender_bps - 6_968_047_785.067).abs() < 1.0);
        assert!((r.receiver_bps - 6_967_532_865.784).abs() < 1.0);
        assert!((r.seconds - 1.001317).abs() < 1e-9);
    }

    #[test]
    fn parses_udp_run() {
        let r = parse_iperf3_udp(include_str!("testdata/iperf3_udp.json")).expect("valid");
        assert_eq!(r.target_bps, 20_000_000);
        assert_eq!((r.packets, r.lost_packets), (1725, 0));
        assert_eq!(r.out_of_order, Some(0));
        assert!((r.receiver_bps - 19_978_843.766).abs() < 1.0);
        assert!((r.sender_bps - 19_980_122.266).abs() < 1.0);
        assert!((r.jitter_ms - 0.010_831).abs() < 1e-5);
    }

    #[test]
    fn udp_loss_is_the_receivers_view() {
        let r = parse_iperf3_udp(include_str!("testdata/iperf3_udp_loss.json")).expect("valid");
        assert_eq!((r.packets, r.lost_packets), (91_211, 52_353));
        assert!((r.loss_percent - 56.763).abs() < 1e-3);
        // The sender pushed ~1 Gbit/s; the receiver saw far less.
        assert!(r.sender_bps > 2.0 * r.receiver_bps);
    }

    #[test]
    fn error_field_is_reported() {
        let err = parse_iperf3_tcp(include_str!("testdata/iperf3_refused.json"))
            .expect_err("the run failed");
        assert!(
            matches!(&err, ToolError::Reported { message, .. } if message.contains("Connection refused")),
            "{err:?}"
        );
    }

    #[test]
    fn wrong_protocol_and_garbage_are_unparseable() {
        assert!(matches!(
            parse_iperf3_tcp(include_str!("testdata/iperf3_udp.json")),
            Err(ToolError::Unparseable { .. })
        ));
        assert!(matches!(
            parse_iperf3_udp(include_str!("testdata/iperf3_tcp.json")),
            Err(ToolError::Unparseable { .. })
        ));
        for bad in [
            "",
            "iperf3: error",
            "{}",
            r#"{"start":{"test_start":{"protocol":"TCP"}}}"#,
        ] {
            assert!(
                matches!(parse_iperf3_tcp(bad), Err(ToolError::Unparseable { .. })),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn client_args_carry_options() {
        let opts = Iperf3Opts {
            parallel: 2,
            reverse: true,
            length: Some(1200),
            tos: Some(0xb8),
            window: None,
            client_port: Some(4000),
        };
        let args = client_args(Ipv4Addr::new(198, 18, 0, 2), 5201, 3, &opts).join(" ");
        assert_eq!(
            args,
            "-c 198.18.0.2 -p 5201 -t 3 --json --connect-timeout 3000 -P 2 -R -l 1200 -S 184 --cport 4000"
        );
    }
}
