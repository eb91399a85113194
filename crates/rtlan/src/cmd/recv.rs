//! `rtlan recv`: receives a probe stream from `rtlan send` and reports delivered rate, loss,
//! reordering, delay and RFC 3550 jitter ([`rtlan::rttr::stats`]). Arrival times are the
//! kernel's receive timestamps and the receive buffer is sized ([`rtlan::rttr::receiver`]), so
//! a receiver that waits for a CPU neither adds its wait to the network's delay nor drops what
//! the network delivered; both are reported (`read_lag_us`, `socket`).

use std::io::ErrorKind;
use std::io::Write;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use clap::Args;
use rtlan::rttr::probe::{realtime_ns, ProbeHeader};
use rtlan::rttr::receiver::RtReceiver;
use rtlan::rttr::stats::{sliding_rates, Arrival, RecvStats};
use rtlan::rttr::wire_bytes;
use rtlan_core::units::{format_rate, parse_duration, parse_size};

/// Arguments of `rtlan recv`.
#[derive(Debug, Args)]
#[command(after_help = "\
Example: receive on port 5004 until the stream has been idle for 2 s, print JSON:

    rtlan recv --port 5004 --json

    {\"packets\":7036,\"bytes\":7036000,\"payload_bps\":18761726.9,\"wire_bps\":19999999.8,
     \"lost\":0,\"loss_pct\":0.0,\"reordered\":0,\"duplicates\":0,
     \"delay_us\":{\"min\":41.2,\"mean\":80.3,\"p50\":77.0,\"p99\":190.4,\"max\":402.9},
     \"jitter_us\":12.1,\"first_seq\":0,\"last_seq\":7035,\"elapsed_s\":2.99,\"ignored\":0}

Rates are over the first to the last arrival; wire_bps counts whole frames (a 1000-byte payload
is 1066 bytes on the wire); loss is counted over the range of sequence numbers seen; delay needs
sender and receiver clocks to agree (same host or namespaces of one host). Datagrams without the
RTLN header are ignored and counted.

Arrivals are the kernel's receive timestamps: delay_us ends when a probe reached this host;
read_lag_us is how long probes then waited for this process to read them. The JSON \"socket\"
object says what the host did: {\"rcvbuf_bytes\", \"drops\" (datagrams discarded because the
receive buffer was full: part of \"lost\", but the host's loss, not the network's),
\"unstamped\" (probes the kernel gave no timestamp, whose arrival is their read time)}.")]
pub(crate) struct RecvArgs {
    /// UDP port to listen on.
    #[arg(long)]
    port: u16,
    /// Address to bind.
    #[arg(long, default_value = "0.0.0.0")]
    bind: Ipv4Addr,
    /// Stop after this long (`10s`): what reached this host within it counts, also what still
    /// waits in the receive buffer at the end because this process ran late.
    #[arg(long, value_parser = parse_duration)]
    duration: Option<Duration>,
    /// Stop after this many probes.
    #[arg(long)]
    count: Option<u64>,
    /// Stop once nothing arrived for this long after the first probe (default 2s when neither
    /// --duration nor --count is given).
    #[arg(long, value_parser = parse_duration)]
    idle: Option<Duration>,
    /// Receive buffer to ask for (`4MiB`): what the host holds while this process waits for a
    /// CPU. Forced past `net.core.rmem_max` when the process may (CAP_NET_ADMIN).
    #[arg(long, value_parser = parse_size, default_value = "4MiB")]
    rcvbuf: u64,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Add a sliding-window rate series to the JSON report (`80ms`: EtheReal Fig. 5), one
    /// point every --series-step: `"series": {"window_ms", "step_ms", "t_ns": [..],
    /// "wire_bps": [..]}` (window end times in CLOCK_REALTIME ns).
    #[arg(long, value_parser = parse_duration)]
    series: Option<Duration>,
    /// Step between points of --series.
    #[arg(long, value_parser = parse_duration, default_value = "10ms", requires = "series")]
    series_step: Duration,
    /// Write one line per received probe to FILE: `seq recv_ns sent_ns` (CLOCK_REALTIME ns).
    #[arg(long)]
    arrivals: Option<PathBuf>,
}

pub(crate) fn run(args: RecvArgs) -> anyhow::Result<ExitCode> {
    let stop = super::signals::stop_on(&[libc::SIGINT, libc::SIGTERM])?;
    let want = usize::try_from(args.rcvbuf).unwrap_or(usize::MAX);
    let mut socket = RtReceiver::bind(SocketAddrV4::new(args.bind, args.port), want)?;
    socket.set_read_timeout(Some(Duration::from_millis(50)))?;
    let granted = socket.receive_buffer()?;
    // Linux grants twice what is asked (its bookkeeping); less than asked means rmem_max.
    if (granted as u64) < args.rcvbuf {
        eprintln!(
            "rtlan recv: warning: receive buffer {granted} bytes, less than the {} asked for \
             (net.core.rmem_max, and no CAP_NET_ADMIN to force it)",
            args.rcvbuf
        );
    }
    let idle = args.idle.or_else(|| {
        (args.duration.is_none() && args.count.is_none()).then_some(Duration::from_secs(2))
    });
    let mut stats = RecvStats::new();
    let mut buf = vec![0u8; 65_536];
    let start = Instant::now();
    let start_ns = realtime_ns();
    // (seq, recv_ns, sent_ns, payload length) of every probe, kept only for --series/--arrivals.
    let keep = args.series.is_some() || args.arrivals.is_some();
    let mut kept: Vec<(u64, u64, u64, usize)> = Vec::new();
    let mut last_arrival: Option<Instant> = None;
    // When --duration is up, what reached this host within it but still waits in the receive
    // buffer (this process ran late) is read without waiting, and counted; the first datagram
    // that arrived after the window ends the run.
    let window_end_ns = args
        .duration
        .map(|d| start_ns.saturating_add(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)));
    let mut draining = false;
    loop {
        if stop.load(Ordering::Relaxed)
            || args.count.is_some_and(|n| stats.packets() >= n)
            || idle.is_some_and(|i| last_arrival.is_some_and(|t| t.elapsed() >= i))
        {
            break;
        }
        if !draining && args.duration.is_some_and(|d| start.elapsed() >= d) {
            socket.socket().set_nonblocking(true)?;
            draining = true;
        }
        match socket.recv(&mut buf) {
            Ok(got) if draining && window_end_ns.is_some_and(|end| got.arrival_ns > end) => break,
            Ok(got) => {
                let (len, recv_ns) = (got.len, got.arrival_ns);
                last_arrival = Some(Instant::now());
                match ProbeHeader::parse(&buf[..len]) {
                    Ok(header) => {
                        if keep {
                            kept.push((header.seq, recv_ns, header.sent_ns, len));
                        }
                        stats.record(Arrival {
                            header,
                            payload_len: len,
                            recv_ns,
                            read_ns: got.read_ns,
                        })
                    }
                    Err(_) => stats.record_ignored(),
                }
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                if draining {
                    break;
                }
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    let end_ns = realtime_ns();
    if let Some(path) = &args.arrivals {
        let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
        for (seq, recv_ns, sent_ns, _) in &kept {
            writeln!(out, "{seq} {recv_ns} {sent_ns}")?;
        }
        out.flush()?;
    }
    let r = stats.report();
    let drops = socket.drops()?;
    let unstamped = socket.unstamped();
    if args.json {
        let mut v = serde_json::to_value(&r)?;
        if let serde_json::Value::Object(map) = &mut v {
            map.insert(
                "socket".to_string(),
                serde_json::json!({
                    "rcvbuf_bytes": granted,
                    "drops": drops,
                    "unstamped": unstamped,
                }),
            );
        }
        if let (Some(window), serde_json::Value::Object(map)) = (args.series, &mut v) {
            let arrivals: Vec<(u64, u64)> = kept
                .iter()
                .map(|&(_, recv_ns, _, len)| (recv_ns, wire_bytes(len)))
                .collect();
            let points = sliding_rates(
                &arrivals,
                start_ns,
                end_ns,
                u64::try_from(window.as_nanos()).unwrap_or(u64::MAX),
                u64::try_from(args.series_step.as_nanos()).unwrap_or(u64::MAX),
            );
            map.insert(
                "series".to_string(),
                serde_json::json!({
                    "window_ms": window.as_secs_f64() * 1e3,
                    "step_ms": args.series_step.as_secs_f64() * 1e3,
                    "t_ns": points.iter().map(|p| p.t_ns).collect::<Vec<_>>(),
                    "wire_bps": points.iter().map(|p| p.wire_bps).collect::<Vec<_>>(),
                }),
            );
        }
        println!("{}", serde_json::to_string(&v)?);
    } else {
        println!(
            "received {} probes ({} bytes) in {:.3} s: {} payload, {} on the wire; lost {} \
             ({:.3} %), reordered {}, duplicates {}, ignored {}",
            r.packets,
            r.bytes,
            r.elapsed_s,
            format_rate(r.payload_bps as u64),
            format_rate(r.wire_bps as u64),
            r.lost,
            r.loss_pct,
            r.reordered,
            r.duplicates,
            r.ignored
        );
        println!(
            "delay µs: min {:.1} mean {:.1} p50 {:.1} p99 {:.1} max {:.1}; jitter {:.1} µs",
            r.delay_us.min,
            r.delay_us.mean,
            r.delay_us.p50,
            r.delay_us.p99,
            r.delay_us.max,
            r.jitter_us
        );
        println!(
            "read lag µs: p50 {:.1} p99 {:.1} max {:.1}; socket: {granted}-byte buffer, {drops} \
             dropped full, {unstamped} without a kernel timestamp",
            r.read_lag_us.p50, r.read_lag_us.p99, r.read_lag_us.max,
        );
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use rtlan::rttr::receiver::DEFAULT_RECEIVE_BUFFER;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        args: RecvArgs,
    }

    #[test]
    fn the_receive_buffer_defaults_to_the_librarys_and_takes_units() {
        let parse = |argv: &[&str]| Cli::try_parse_from(argv).map(|c| c.args.rcvbuf);
        assert_eq!(
            parse(&["recv", "--port", "5004"]).unwrap(),
            DEFAULT_RECEIVE_BUFFER as u64
        );
        assert_eq!(
            parse(&["recv", "--port", "5004", "--rcvbuf", "256KiB"]).unwrap(),
            256 << 10
        );
        assert!(parse(&["recv", "--port", "5004", "--rcvbuf", "256"]).is_err());
    }
}
