//! `rtlan flood`: floods one interface with identical UDP frames as fast as it takes them, the
//! worst case in frames per second for a software switch (EtheReal §4.3, "Prototype
//! Implementation Efficiency": the forwarding rate is measured with minimum-size frames).
//!
//! Written because trafgen (netsniff-ng 0.6.8), the flood `rtlan bench forward` otherwise
//! uses, treats a full send buffer as fatal ("Flushing TX_RING failed: Resource temporarily
//! unavailable") and has no option for the buffer's size. A frame a TX ring hands to a veth
//! counts against the sender's buffer until the peer's receive has run; with receive steering
//! (RPS) on the peer that happens on another CPU's backlog, later, so the buffer fills and
//! trafgen stops. This flood uses the switch's own TX ring ([`PacketPort`], TPACKET_V2, qdisc
//! bypassed), forces a larger send buffer (`SO_SNDBUFFORCE`) and, when the kernel pushes back,
//! waits and counts the wait instead of failing. A full ring or send buffer is waited out with
//! `POLLOUT`; a device queue the receiver stopped (a veth whose peer receives in a thread, when
//! that thread falls behind: the kernel answers `ENOBUFS` and leaves the frame in the ring for
//! the next kick) raises no socket event, so the flood sleeps, 10 µs doubling to 200 µs while
//! the refusals go on. Spinning instead would keep the generator's CPU busy with nothing, and
//! the benchmark counts every busy CPU.

use std::io::ErrorKind;
use std::net::Ipv4Addr;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use rtlan_core::units::parse_duration;
use rtlan_linux::packet::{PacketPort, PortOptions, TxOutcome};
use rtlan_wire::ethernet::{self, Address, EtherType};
use rtlan_wire::{ipv4, udp};

/// Smallest Ethernet frame, FCS included.
const MIN_FRAME: usize = 64;
/// Largest untagged frame for a 1500-byte MTU, FCS included.
const MAX_FRAME: usize = 1518;
/// Frame check sequence: counted in `--size`, written by no software.
const FCS: usize = 4;
/// Ethernet + IPv4 + UDP headers.
const HEADERS: usize = ethernet::HEADER_LEN + ipv4::HEADER_LEN + udp::HEADER_LEN;
/// Frames queued in the TX ring between two kicks.
const BATCH: usize = 64;
/// Longest single wait for room before the loop looks at the clock and the signals again.
const WAIT: Duration = Duration::from_millis(10);
/// First back-off after the kernel refused a kick; doubled while it keeps refusing.
const BACKOFF_MIN: Duration = Duration::from_micros(10);
/// Longest back-off: a veth's 256-frame ring drains in about half a millisecond at 0.5 Mpps.
const BACKOFF_MAX: Duration = Duration::from_micros(200);

/// Arguments of `rtlan flood`.
#[derive(Debug, Args)]
#[command(after_help = "\
Example: 64-byte frames from eth0 to 198.18.0.2 (MAC 02:00:00:00:00:02) for 5 s, JSON report:

    rtlan flood --iface eth0 --dst-mac 02:00:00:00:00:02 --src-ip 198.18.0.1 \\
                --dst-ip 198.18.0.2 --duration 5s --json

    {\"frames\":2403311,\"bytes\":144198660,\"elapsed_s\":5.0,\"pps\":480662.2,
     \"push_backs\":0,\"backoff_us\":0,\"ring_full\":1873}

Frames go straight to the driver (the qdisc is bypassed). `frames` were handed to the kernel;
what the interface really sent is in its own counters. `push_backs` counts the kicks the kernel
refused (no buffer space, or the device's queue stopped: the flood then waited, `backoff_us`
in all when it slept); `ring_full` the times every slot of the TX ring was still in flight. Needs CAP_NET_RAW and CAP_NET_ADMIN.")]
pub(crate) struct FloodArgs {
    /// Interface to send on.
    #[arg(long)]
    iface: String,
    /// Destination MAC address.
    #[arg(long)]
    dst_mac: Address,
    /// Source IPv4 address.
    #[arg(long)]
    src_ip: Ipv4Addr,
    /// Destination IPv4 address.
    #[arg(long)]
    dst_ip: Ipv4Addr,
    /// UDP source port.
    #[arg(long, default_value_t = 9)]
    src_port: u16,
    /// UDP destination port (9, discard).
    #[arg(long, default_value_t = 9)]
    dst_port: u16,
    /// Ethernet frame length including the 4-byte FCS, 64..=1518 (64 sends 60 bytes).
    #[arg(long, default_value_t = MIN_FRAME)]
    size: usize,
    /// How long to flood (`5s`).
    #[arg(long, value_parser = parse_duration)]
    duration: Duration,
    /// The socket's send buffer, bytes (forced past net.core.wmem_max).
    #[arg(long, default_value_t = 16 << 20)]
    send_buffer: usize,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

/// The flood's one frame: Ethernet, IPv4 (checksummed), UDP (checksum 0: absent), zero payload.
fn frame(args: &FloodArgs, src_mac: Address) -> anyhow::Result<Vec<u8>> {
    if !(MIN_FRAME..=MAX_FRAME).contains(&args.size) {
        anyhow::bail!(
            "--size {} outside {MIN_FRAME}..={MAX_FRAME} (the FCS included)",
            args.size
        );
    }
    let len = args.size - FCS;
    let mut buf = vec![0u8; len];
    ethernet::Repr {
        src_addr: src_mac,
        dst_addr: args.dst_mac,
        ethertype: EtherType::Ipv4,
    }
    .emit(&mut ethernet::Frame::new_unchecked(&mut buf[..]));
    let payload_len = len - HEADERS;
    ipv4::Repr {
        src_addr: args.src_ip,
        dst_addr: args.dst_ip,
        protocol: ipv4::Protocol::Udp,
        payload_len: udp::HEADER_LEN + payload_len,
        ttl: 64,
        dscp_ecn: 0,
    }
    .emit(&mut ipv4::Packet::new_unchecked(
        &mut buf[ethernet::HEADER_LEN..],
    ));
    udp::Repr {
        src_port: args.src_port,
        dst_port: args.dst_port,
        payload_len,
    }
    .emit(&mut udp::Packet::new_unchecked(
        &mut buf[ethernet::HEADER_LEN + ipv4::HEADER_LEN..],
    ));
    Ok(buf)
}

/// What a flood did.
#[derive(Debug, Default, PartialEq, serde::Serialize)]
struct FloodReport {
    frames: u64,
    bytes: u64,
    elapsed_s: f64,
    pps: f64,
    push_backs: u64,
    /// Time slept backing off from refused kicks, µs.
    backoff_us: u64,
    ring_full: u64,
}

pub(crate) fn run(args: FloodArgs) -> anyhow::Result<ExitCode> {
    let stop = super::signals::stop_on(&[libc::SIGINT, libc::SIGTERM])?;
    let options = PortOptions {
        qdisc_bypass: true,
        ..PortOptions::default()
    };
    // Bound to IPv4 and filtered to nothing: the flood's own receive ring stays empty.
    let drop_all = [libc::sock_filter {
        code: (libc::BPF_RET | libc::BPF_K) as u16,
        jt: 0,
        jf: 0,
        k: 0,
    }];
    let mut port = PacketPort::open_bound(&args.iface, &options, libc::ETH_P_IP as u16, &drop_all)
        .with_context(|| format!("opening {}", args.iface))?;
    port.force_send_buffer(args.send_buffer)
        .context("setting the send buffer")?;
    let frame = frame(&args, port.mac())?;
    let mut report = FloodReport::default();
    let mut backoff = BACKOFF_MIN;
    let start = Instant::now();
    let deadline = start + args.duration;
    while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
        let mut full = false;
        for _ in 0..BATCH {
            let outcome = port.transmit_with(|slot| {
                slot[..frame.len()].copy_from_slice(&frame);
                Some(frame.len())
            });
            if outcome == TxOutcome::RingFull {
                full = true;
                break;
            }
        }
        match port.flush() {
            Ok(()) => backoff = BACKOFF_MIN,
            Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                report.push_backs += 1;
                std::thread::sleep(backoff);
                report.backoff_us += backoff.as_micros() as u64;
                backoff = (backoff * 2).min(BACKOFF_MAX);
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock) => {
                report.push_backs += 1;
                port.wait_writable(WAIT);
            }
            Err(e) => return Err(e).with_context(|| format!("sending on {}", args.iface)),
        }
        if full {
            port.wait_writable(WAIT);
        }
    }
    // What is still queued goes too: the count is of frames handed to the kernel.
    let end = Instant::now() + Duration::from_secs(1);
    while port.flush_pending() && Instant::now() < end {
        if port.flush().is_err() {
            port.wait_writable(WAIT);
        }
    }
    let counters = port.counters();
    report.frames = counters.tx_frames;
    report.bytes = counters.tx_bytes;
    report.ring_full = counters.tx_ring_full;
    report.elapsed_s = start.elapsed().as_secs_f64();
    if report.elapsed_s > 0.0 {
        report.pps = report.frames as f64 / report.elapsed_s;
    }
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        println!(
            "flooded {} frames ({} bytes) in {:.3} s: {:.0} frames/s; {} push-backs, ring full {} times",
            report.frames, report.bytes, report.elapsed_s, report.pps, report.push_backs, report.ring_full
        );
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        args: FloodArgs,
    }

    fn args(extra: &[&str]) -> FloodArgs {
        let mut argv = vec![
            "flood",
            "--iface",
            "eth0",
            "--dst-mac",
            "02:00:00:00:00:02",
            "--src-ip",
            "198.18.0.1",
            "--dst-ip",
            "198.18.0.2",
            "--duration",
            "1s",
        ];
        argv.extend_from_slice(extra);
        Cli::try_parse_from(argv).expect("parses").args
    }

    #[test]
    fn the_minimum_frame_is_a_valid_udp_datagram() {
        let a = args(&[]);
        let f = frame(&a, Address([2, 0, 0, 0, 0, 1])).expect("frame");
        assert_eq!(f.len(), 60);
        let eth = ethernet::Frame::new_checked(&f[..]).expect("ethernet");
        assert_eq!(eth.dst_addr(), Address([2, 0, 0, 0, 0, 2]));
        assert_eq!(eth.ethertype(), EtherType::Ipv4);
        let ip = ipv4::Packet::new_checked(eth.payload()).expect("ipv4");
        assert!(ip.verify_checksum());
        assert_eq!(usize::from(ip.total_len()), 46);
        assert_eq!(ip.dst_addr(), Ipv4Addr::new(198, 18, 0, 2));
        let u = udp::Packet::new_checked(ip.payload()).expect("udp");
        assert_eq!((u.src_port(), u.dst_port(), u.len()), (9, 9, 26));
    }

    #[test]
    fn sizes_outside_ethernet_are_refused() {
        for bad in ["63", "1519"] {
            let a = args(&["--size", bad]);
            assert!(frame(&a, Address([2; 6])).is_err(), "{bad}");
        }
        let a = args(&["--size", "1518"]);
        assert_eq!(frame(&a, Address([2; 6])).expect("1518").len(), 1514);
    }
}
