//! `rtlan reserve`: reserves a real-time connection through the host daemon (EtheReal §2.2,
//! §3.2) and holds it until Ctrl-C, SIGTERM or `--duration`, so that any application can send to
//! the proxy IP it prints. Client library: `docs/rttr.md`.

use std::net::SocketAddrV4;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::{Args, ValueEnum};
use rtlan::rttr::rtcd_socket_path;
use rtlan_core::rtcd::DaemonShaping;
use rtlan_core::units::{parse_duration, parse_rate};
use rtlan_linux::rtcd::{ClientError, OpenParams, RtcdClient};

/// Arguments of `rtlan reserve`.
#[derive(Debug, Args)]
#[command(after_help = "\
Example: reserve 50 Mbit/s of whole Ethernet frames to 198.18.0.3:5004 for a minute, with the
daemon shaping in the kernel, and print everything the daemon answered:

    rtlan reserve --to 198.18.0.3:5004 --rate 50mbit --shaping kernel --duration 60s --json

Then send plain UDP to the printed proxy IP (port 5004), e.g. `rtlan send --to PROXY:5004 ...`.
With a daemon on central admission (docs/rtcd.md), the printed address is the receiver's own.
The path's end-to-end delay bound (the switches' from the SETUP_OK, or the bandwidth manager's
under central admission; docs/delay.md) goes to stderr, and into --json as \"delay_bound_us\".
Rates count whole frames on the wire (headers, FCS, preamble and gap: a 1000-byte payload costs
1066 bytes). A refusal prints the code, the reason, the refusing hop and switch, and exits 1.")]
pub(crate) struct ReserveArgs {
    /// The receiver, IP:PORT.
    #[arg(long)]
    to: SocketAddrV4,
    /// Reserved rate of whole frames (`50mbit`, `1.5mbit`, `12.5Mbit/s`; docs/units.md).
    #[arg(long, value_parser = parse_rate)]
    rate: u64,
    /// Largest back-to-back burst in bytes (default: two maximum packets).
    #[arg(long)]
    burst: Option<u32>,
    /// Largest Ethernet frame in bytes, header included (1514 for a 1500-byte MTU).
    #[arg(long, default_value_t = 1514)]
    max_packet: u16,
    /// The sender's UDP port (0 = any).
    #[arg(long, default_value_t = 0)]
    src_port: u16,
    /// Who shapes: nobody (the sender must) or the daemon with an HTB class in the kernel.
    #[arg(long, value_enum, default_value_t = ReserveShaping::None)]
    shaping: ReserveShaping,
    /// End-to-end delay the connection requires (`9ms`): the first switch whose bound would
    /// exceed it refuses (reason "delay"), as does the bandwidth manager under central admission.
    #[arg(long, value_parser = parse_duration)]
    delay: Option<Duration>,
    /// The daemon's socket [default: $RTLAN_RTCD_SOCKET or /run/rtlan/rtcd.sock].
    #[arg(long)]
    socket: Option<PathBuf>,
    /// Release after this long (`10s`, `500ms`); default: until Ctrl-C / SIGTERM.
    #[arg(long, value_parser = parse_duration)]
    duration: Option<Duration>,
    /// Print the whole answer as JSON.
    #[arg(long)]
    json: bool,
}

/// Shaping choices of `reserve`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ReserveShaping {
    /// Nobody shapes on this host.
    None,
    /// The daemon installs an HTB class for the connection.
    Kernel,
}

/// Prints a daemon refusal the way `reserve` and `send` report it.
pub(crate) fn report_refusal(e: &ClientError) {
    match e {
        ClientError::Refused { code, message } => {
            eprintln!("rtlan: reservation refused ({code}): {message}");
        }
        other => eprintln!("rtlan: reservation failed: {other}"),
    }
}

pub(crate) fn run(args: ReserveArgs) -> anyhow::Result<ExitCode> {
    let stop = super::signals::stop_on(&[libc::SIGINT, libc::SIGTERM])?;
    let socket = rtcd_socket_path(args.socket.as_deref());
    let mut client = RtcdClient::connect(&socket)
        .with_context(|| format!("connecting to rtcd at {}", socket.display()))?;
    client.register(std::process::id())?;
    let params = OpenParams {
        dst_ip: *args.to.ip(),
        dst_port: args.to.port(),
        src_port: args.src_port,
        rate_bps: args.rate,
        max_burst: args.burst.unwrap_or_else(|| 2 * u32::from(args.max_packet)),
        max_packet: args.max_packet,
        delay_us: args
            .delay
            .map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX)),
    };
    let shaping = match args.shaping {
        ReserveShaping::None => DaemonShaping::None,
        ReserveShaping::Kernel => DaemonShaping::Kernel,
    };
    let opened = match client.open_shaped(&params, shaping) {
        Ok(o) => o,
        Err(e) => {
            report_refusal(&e);
            return Ok(ExitCode::FAILURE);
        }
    };
    if args.json {
        let v = serde_json::json!({
            "conn": opened.conn, "proxy_ip": opened.proxy_ip.to_string(),
            "proxy_mac": opened.proxy_mac.map(|m| m.to_string()),
            "delay_bound_us": opened.delay_bound_us, "id": opened.id, "hops": opened.hops,
            "dst": args.to.to_string(), "rate_bps": args.rate,
        });
        println!("{v}");
    } else {
        println!("{}", opened.proxy_ip);
        if let Some(bound) = opened.delay_bound_us {
            eprintln!(
                "rtlan: reserved over {} hop(s), end-to-end delay bound {bound} µs",
                opened.hops
            );
        }
    }
    let start = Instant::now();
    while !stop.load(Ordering::Relaxed)
        && args.duration.is_none_or(|d| start.elapsed() < d)
        && !client.revoked.contains(&opened.conn)
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    client
        .close(opened.conn)
        .context("releasing the reservation")?;
    Ok(ExitCode::SUCCESS)
}
