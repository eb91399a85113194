//! `rtlan send`: a UDP probe stream (header in [`rtlan::rttr::probe`]) — either plain UDP paced
//! by a token bucket (an interference / non-real-time generator), or over a real-time connection
//! reserved through the host daemon and shaped by the RTTR library (EtheReal §3.2).

use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::{Args, ValueEnum};
use rtlan::rttr::pace::TokenPacer;
use rtlan::rttr::probe::{realtime_ns, ProbeHeader};
use rtlan::rttr::stats::summarize_intervals;
use rtlan::rttr::{
    rtcd_socket_path, wire_bytes, Qos, RtConnection, RttrError, Shaping, FRAME_HEADERS,
    MIN_LEAKY_BUFFER,
};
use rtlan_core::shaper::ShaperStats;
use rtlan_core::units::{format_rate, parse_duration, parse_rate};

/// Arguments of `rtlan send`.
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:

    # plain UDP at 40 Mbit/s of whole frames, 1000-byte payloads, for 5 s (interference)
    rtlan send --to 198.18.0.3:5004 --rate 40mbit --size 1000 --duration 5s

    # reserve 20 Mbit/s and send 3 s through the paper's leaky bucket (1 ms timer)
    rtlan send --to 198.18.0.3:5004 --rate 20mbit --size 1000 --duration 3s --reserve

    # Löser/Härtig: 40 Mbit/s shaped by a token bucket with shaping interval Ts = 1 ms
    # (bucket r·Ts + M), reserved through a daemon on central admission with a 2 ms requirement,
    # sending under SCHED_FIFO 10 as a real-time application would
    rtlan send --to 198.18.0.2:5004 --rate 40mbit --size 1472 --duration 10s --reserve \\
               --shaping token --shaping-interval 1ms --delay 2ms --realtime-priority 10 --json

    # the same token bucket on a plain stream, no reservation (a conforming non-real-time host)
    rtlan send --to 198.18.0.2:5004 --rate 40mbit --size 1472 --duration 10s --shaping token --shaping-interval 1ms

Every payload starts with a 24-byte header: \"RTLN\", version 1, flags, 2 reserved bytes, the
sequence number (u64, big endian) and the CLOCK_REALTIME send time in ns (u64, big endian), read
by `rtlan recv`. Rates count whole frames: a 1000-byte payload is 1066 bytes on the wire.
With --reserve, --json adds \"reservation\" (conn, proxy_ip, id, hops, and the path's
end-to-end \"delay_bound_us\": the switches' bound, or the bandwidth manager's without switches).
With --reserve --shaping leaky, --json adds \"tick\": the leaky bucket's measured timer
intervals T_m (count, mean_ms, stddev_ms, min_ms, p50_ms, p99_ms, max_ms) beside nominal_ms.
With a shaper (token or leaky bucket), --json adds \"shaper\": its counters, among them
forfeited_wire_bytes, the rate lost because this process woke later than the bucket covers
while datagrams waited (a token bucket absorbs a wake-up late by one datagram's time, M / r),
and unused_wire_bytes, the rate lost while nothing waited (the process was held up elsewhere).
offer_forfeited_wire_bytes is the offering pacer's forfeit (its bucket spans at least 10 ms).")]
pub(crate) struct SendArgs {
    /// The receiver, IP:PORT.
    #[arg(long)]
    to: SocketAddrV4,
    /// Rate of whole frames (`20mbit`); the reserved rate with --reserve.
    #[arg(long, value_parser = parse_rate)]
    rate: u64,
    /// UDP payload bytes per datagram (24..=1472, header included).
    #[arg(long, value_parser = clap::value_parser!(u16).range(24..=1472))]
    size: u16,
    /// Send for this long (`3s`).
    #[arg(long, value_parser = parse_duration, required_unless_present = "count",
          conflicts_with = "count")]
    duration: Option<Duration>,
    /// Send this many datagrams.
    #[arg(long)]
    count: Option<u64>,
    /// Reserve a real-time connection and send to its proxy IP.
    #[arg(long)]
    reserve: bool,
    /// How the stream is shaped [default: leaky with --reserve]. Without --reserve only `token`
    /// applies: the plain stream then passes the same token bucket (--shaping-interval).
    #[arg(long, value_enum)]
    shaping: Option<SendShaping>,
    /// End-to-end delay the reservation requires (`2ms`, with --reserve): the first switch whose
    /// bound would exceed it refuses (reason "delay"), as does the bandwidth manager.
    #[arg(long, value_parser = parse_duration, requires = "reserve")]
    delay: Option<Duration>,
    /// Shaping interval: the leaky bucket's timer period, the token bucket's Ts (the plain
    /// generator's bucket spans at least 10 ms). `--tick` is accepted too.
    #[arg(long = "shaping-interval", alias = "tick", value_name = "TS",
          value_parser = parse_duration, default_value = "1ms")]
    tick: Duration,
    /// Run the sending thread under SCHED_FIFO at this priority (1..=99; 0: normal scheduling),
    /// as a real-time application would: the token bucket shapes in this thread, and a wake-up
    /// later than it absorbs (one datagram's time) loses rate. A refusal is a warning.
    #[arg(long, value_name = "PRIO", default_value_t = 0,
          value_parser = clap::value_parser!(u8).range(0..=99))]
    realtime_priority: u8,
    /// The daemon's socket [default: $RTLAN_RTCD_SOCKET or /run/rtlan/rtcd.sock].
    #[arg(long)]
    socket: Option<PathBuf>,
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
}

/// Shaping choices of `send --reserve`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum SendShaping {
    /// RTTR's timer-driven leaky bucket with double buffering (EtheReal §3.2).
    Leaky,
    /// Inline token bucket.
    Token,
    /// The daemon's HTB class; this tool still offers the stream at --rate.
    Kernel,
}

/// Where datagrams go.
#[allow(clippy::large_enum_variant)] // one per process, never moved in a hot path
enum Sink {
    Plain(UdpSocket, TokenPacer),
    /// A plain stream offered at the rate and passed through the §3 token bucket (seed 004).
    PlainShaped(UdpSocket, TokenPacer, TokenPacer),
    /// A connection shaped by RTTR (leaky or token bucket), offered at the rate by our pacer as
    /// an application producing a stream would: offering greedily would park up to the leaky
    /// bucket's whole buffer (≥ 10 ms) in the library and count it as network delay.
    Rt(RtConnection, TokenPacer),
    /// A kernel-shaped connection, offered at the rate by our own pacer.
    RtKernel(RtConnection, TokenPacer),
}

impl Sink {
    /// Sleeps until the next datagram of `len` payload bytes may be offered.
    fn wait(&mut self, len: usize) -> Result<(), RttrError> {
        match self {
            Sink::Plain(_, p)
            | Sink::PlainShaped(_, p, _)
            | Sink::Rt(_, p)
            | Sink::RtKernel(_, p) => Ok(p.wait(len)?),
        }
    }

    /// The counters of the stream's shaper (RTTR's token or leaky bucket, or the §3 token
    /// bucket of a plain shaped stream); `None` without one.
    fn shaper_stats(&self) -> Option<ShaperStats> {
        match self {
            Sink::PlainShaped(_, _, shaper) => Some(*shaper.stats()),
            Sink::Rt(c, _) => c.shaper_stats(),
            Sink::Plain(..) | Sink::RtKernel(..) => None,
        }
    }

    /// Wire bytes the offering pacer could not offer because this process woke more than its
    /// bucket (at least 10 ms) late.
    fn offer_forfeited(&self) -> u64 {
        match self {
            Sink::Plain(_, p)
            | Sink::PlainShaped(_, p, _)
            | Sink::Rt(_, p)
            | Sink::RtKernel(_, p) => p.stats().forfeited_wire_bytes,
        }
    }

    /// Offers `buf` now (RTTR's shaper may still hold it).
    fn send_now(&mut self, buf: &[u8]) -> Result<usize, RttrError> {
        match self {
            Sink::Plain(s, _) => Ok(s.send(buf)?),
            Sink::PlainShaped(s, _, shaper) => shaper.send(s, buf),
            Sink::Rt(c, _) => c.send(buf),
            Sink::RtKernel(c, _) => Ok(c.socket().send(buf)?),
        }
    }
}

pub(crate) fn run(args: SendArgs) -> anyhow::Result<ExitCode> {
    let stop = super::signals::stop_on(&[libc::SIGINT, libc::SIGTERM])?;
    // Both pacers sleep in this thread: 1 ns timer slack instead of the default 50 µs, which a
    // token bucket with a short Ts would otherwise lose as rate (it absorbs only M / r).
    rtlan_linux::driver::thread::prepare_unpinned(args.realtime_priority);
    let size = usize::from(args.size);
    // The generator's own bucket spans at least 10 ms, so that oversleeping on a loaded host
    // does not lower the offered rate (tokens beyond the bucket would be lost).
    let generator_interval = args.tick.max(MIN_LEAKY_BUFFER);
    let send_shaping = args.shaping.unwrap_or(SendShaping::Leaky);
    let mut reservation = None;
    let mut sink = if args.reserve {
        // The library raises the burst to its shaper's own (token bucket: r·Ts + M); for the
        // token bucket ask for no more, so that a central manager books exactly the T-SPEC.
        let packets = if send_shaping == SendShaping::Token {
            1
        } else {
            2
        };
        let qos = Qos {
            rate_bps: args.rate,
            max_burst: packets * u32::from(args.size + FRAME_HEADERS),
            max_packet: args.size + FRAME_HEADERS,
            delay_us: args
                .delay
                .map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX)),
        };
        let shaping = match send_shaping {
            SendShaping::Leaky => Shaping::LeakyBucket { tick: args.tick },
            SendShaping::Token => Shaping::TokenBucket {
                interval: args.tick,
            },
            SendShaping::Kernel => Shaping::Kernel,
        };
        let path = rtcd_socket_path(args.socket.as_deref());
        let conn = match RtConnection::open(&path, args.to, qos, shaping) {
            Ok(c) => c,
            Err(RttrError::Rtcd(e)) => {
                super::reserve::report_refusal(&e);
                return Ok(ExitCode::FAILURE);
            }
            Err(e) => return Err(e).context("opening the real-time connection"),
        };
        let info = conn.info();
        reservation = Some(serde_json::json!({"conn": info.conn,
            "proxy_ip": info.proxy_ip.to_string(), "id": info.id, "hops": info.hops,
            "delay_bound_us": info.delay_bound_us}));
        if !args.json {
            match info.delay_bound_us {
                Some(bound) => eprintln!(
                    "rtlan: reserved (delay bound {bound} µs), sending to {}",
                    conn.proxy_addr()
                ),
                None => eprintln!("rtlan: reserved, sending to {}", conn.proxy_addr()),
            }
        }
        if shaping == Shaping::Kernel {
            Sink::RtKernel(conn, TokenPacer::new(args.rate, generator_interval, size)?)
        } else {
            Sink::Rt(conn, TokenPacer::new(args.rate, generator_interval, size)?)
        }
    } else {
        let socket = UdpSocket::bind(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0))?;
        socket.connect(args.to)?;
        let offer = TokenPacer::new(args.rate, generator_interval, size)?;
        match args.shaping {
            None => Sink::Plain(socket, offer),
            Some(SendShaping::Token) => {
                let shaper = TokenPacer::with_shaping_interval(args.rate, args.tick, size)?;
                Sink::PlainShaped(socket, offer, shaper)
            }
            Some(SendShaping::Leaky | SendShaping::Kernel) => {
                anyhow::bail!("--shaping leaky and kernel need --reserve (only `token` shapes a plain stream)")
            }
        }
    };
    let mut buf = vec![0u8; size];
    let (mut sent, mut errors) = (0u64, 0u64);
    let start = Instant::now();
    loop {
        if stop.load(Ordering::Relaxed)
            || args.count.is_some_and(|n| sent + errors >= n)
            || args.duration.is_some_and(|d| start.elapsed() >= d)
        {
            break;
        }
        // Stamp after the offering pacer's wait, so the receiver's delay starts when the
        // application hands the datagram over (for RTTR modes: includes the library's shaper).
        sink.wait(size)?;
        let header = ProbeHeader {
            flags: 0,
            seq: sent + errors,
            sent_ns: realtime_ns(),
        };
        header.emit(&mut buf)?;
        match sink.send_now(&buf) {
            Ok(_) => sent += 1,
            Err(RttrError::Io(_)) => errors += 1,
            Err(e) => return Err(e.into()),
        }
    }
    let mut ticks = None;
    if let Sink::Rt(c, _) | Sink::RtKernel(c, _) = &sink {
        c.flush(Duration::from_secs(5));
        errors += c.send_errors();
        sent = sent.saturating_sub(c.send_errors());
        if send_shaping == SendShaping::Leaky {
            ticks = Some(summarize_intervals(&c.tick_intervals_ns()));
        }
    }
    let elapsed = start.elapsed().as_secs_f64();
    let shaper = sink.shaper_stats();
    let offer_forfeited = sink.offer_forfeited();
    drop(sink);
    let bytes = sent * size as u64;
    let wire_bps = if elapsed > 0.0 {
        (sent * wire_bytes(size)) as f64 * 8.0 / elapsed
    } else {
        0.0
    };
    if args.json {
        let mut v = serde_json::json!({"sent": sent, "errors": errors, "bytes": bytes,
            "elapsed_s": elapsed, "wire_bps": wire_bps,
            "offer_forfeited_wire_bytes": offer_forfeited});
        if let (Some(s), serde_json::Value::Object(map)) = (&shaper, &mut v) {
            map.insert("shaper".to_string(), serde_json::to_value(s)?);
        }
        if let (Some(r), serde_json::Value::Object(map)) = (reservation, &mut v) {
            map.insert("reservation".to_string(), r);
        }
        if let (Some(t), serde_json::Value::Object(map)) = (ticks, &mut v) {
            // The leaky bucket's measured tick T_m against the nominal tick (EtheReal Table 1).
            map.insert(
                "tick".to_string(),
                serde_json::json!({"nominal_ms": args.tick.as_secs_f64() * 1e3,
                    "measured": serde_json::to_value(t)?}),
            );
        }
        println!("{v}");
    } else {
        println!(
            "sent {sent} datagrams ({bytes} payload bytes, {errors} send errors) in {elapsed:.3} s: \
             {} offered on the wire",
            format_rate(wire_bps as u64)
        );
        let lost =
            shaper.map_or(0, |s| s.forfeited_wire_bytes + s.unused_wire_bytes) + offer_forfeited;
        if lost > 0 {
            println!(
                "{lost} wire bytes of rate lost: this process woke later than its buckets cover"
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
