//! RTTR, the real-time transport library of EtheReal §3.2: an application asks the host daemon
//! (RTCD, `docs/rtcd.md`) for a connection, gets an ordinary UDP socket aimed at the proxy IP, and
//! sends through a shaper so that what leaves the host stays inside the reservation.
//!
//! # What a rate counts
//!
//! Every rate here ([`Qos::rate_bps`]) counts **whole Ethernet frames on the wire**, exactly as
//! the switches' pacers and admission do: a datagram with `p` payload bytes costs
//! [`wire_bytes`]`(p)` = `max(p + 8 + 20 + 14, 60) + 4 + 20` bytes (UDP, IPv4, Ethernet header,
//! padding to the 60-byte minimum, FCS, preamble+SFD and inter-frame gap; at least 84 bytes).
//! A rate over payload bytes only would let a sender of small datagrams put up to 84/1 times
//! more on the wire than it reserved, so the switch queues of its connection would grow without
//! bound and the guarantees of every other connection on the path would break.
//!
//! # Shaping
//!
//! - [`Shaping::LeakyBucket`]: the paper's design. A background thread is woken by a `timerfd`
//!   every `tick`, measures the real interval `T_m` since the previous wake-up and sends up to
//!   `T_m × rate` wire bytes from a buffer of `N × rate × tick` that [`RtConnection::send`]
//!   fills; `send` blocks while it is full. `N` is 2 (the paper's double buffering) or more, so
//!   that the buffer holds at least [`MIN_LEAKY_BUFFER`] (10 ms) of traffic: a wake-up that is
//!   late by less than that loses no rate ([`buffer_factor`]).
//! - [`Shaping::TokenBucket`]: inline pacing (Löser/Härtig, seed 004 §3.1): bucket
//!   `b = rate × Ts + one datagram`; once it is empty, `send` sleeps until `Ts` later (an empty
//!   bucket is refilled at most once per `Ts`), so the output conforms to the T-SPEC `(r, b)`.
//! - [`Shaping::Kernel`]: plain sends; the daemon installed an HTB class for the connection
//!   (`"shaping":"kernel"`, see `docs/rttr.md`).
//! - [`Shaping::None`]: plain sends; the application promises to shape itself.
//!
//! `SO_MAX_PACING_RATE` does not pace UDP on these hosts: it needs the `fq` qdisc, which this
//! kernel does not have. Shaping is therefore ours (leaky or token bucket) or HTB's.

mod leaky;
pub mod pace;
pub mod probe;
pub mod receiver;
pub mod stats;

use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rtlan_core::rtcd::DaemonShaping;
pub use rtlan_core::shaper::wire_bytes;
use rtlan_core::shaper::{
    LeakyBucketConfig, LeakyBucketShaper, ShaperError, ShaperStats, MAX_UDP_PAYLOAD,
};
use rtlan_linux::rtcd::{ClientError, OpenParams, Opened, RtcdClient};

use leaky::LeakyDriver;
pub use leaky::SHAPER_PRIORITY;
use pace::TokenPacer;

/// Bytes of an Ethernet frame around a UDP payload, without FCS (Ethernet 14 + IPv4 20 + UDP 8):
/// `max_packet − FRAME_HEADERS` is the largest payload a connection may send.
pub const FRAME_HEADERS: u16 = 42;

/// The socket path used when neither a flag nor `RTLAN_RTCD_SOCKET` names one.
pub const DEFAULT_RTCD_SOCKET: &str = "/run/rtlan/rtcd.sock";

/// The environment variable naming the daemon's socket.
pub const RTCD_SOCKET_ENV: &str = "RTLAN_RTCD_SOCKET";

/// The daemon socket to use: `explicit` if given, else `$RTLAN_RTCD_SOCKET`, else
/// [`DEFAULT_RTCD_SOCKET`].
pub fn rtcd_socket_path(explicit: Option<&Path>) -> std::path::PathBuf {
    if let Some(p) = explicit {
        return p.to_path_buf();
    }
    match std::env::var_os(RTCD_SOCKET_ENV) {
        Some(v) if !v.is_empty() => v.into(),
        _ => DEFAULT_RTCD_SOCKET.into(),
    }
}

/// Errors of the RTTR library.
#[derive(Debug, thiserror::Error)]
pub enum RttrError {
    /// Talking to the daemon failed, or it refused (the path's reason is in the message).
    #[error(transparent)]
    Rtcd(#[from] ClientError),
    /// A socket call failed.
    #[error("udp socket: {0}")]
    Io(#[from] std::io::Error),
    /// The QoS parameters or the datagram do not fit the shaper.
    #[error("shaper: {0}")]
    Shaper(#[from] ShaperError),
    /// The shaping thread or its timer failed.
    #[error("shaping timer: {0}")]
    Timer(String),
    /// The connection was already closed.
    #[error("connection closed")]
    Closed,
}

/// What to reserve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Qos {
    /// Rate in bit/s of whole frames on the wire (see the module docs).
    pub rate_bps: u64,
    /// Largest back-to-back burst in wire bytes (at least `max_packet`). With a library shaper
    /// the reservation asks for at least the shaper's own burst (leaky bucket: its double buffer
    /// plus one datagram; token bucket: its depth), since the first switch polices the stream to
    /// this burst and every hop sizes its queue from it (docs/delay.md).
    pub max_burst: u32,
    /// Largest Ethernet frame in bytes, header included, FCS excluded (1514 for a full MTU).
    pub max_packet: u16,
    /// End-to-end delay the connection requires, µs: the first switch whose bound would exceed
    /// it refuses (reason "delay"), as does the bandwidth manager under central admission
    /// (`None` = no requirement). The bound the path granted is in [`RtConnection::info`].
    pub delay_us: Option<u64>,
}

impl Qos {
    /// `rate_bps` with full-MTU frames (1514) and a burst of two of them.
    pub fn with_rate(rate_bps: u64) -> Qos {
        Qos {
            rate_bps,
            max_burst: 2 * 1514,
            max_packet: 1514,
            delay_us: None,
        }
    }

    /// The largest UDP payload this QoS allows (`max_packet − 42`).
    pub fn max_datagram(&self) -> usize {
        usize::from(self.max_packet.saturating_sub(FRAME_HEADERS)).min(MAX_UDP_PAYLOAD)
    }
}

/// How the connection's traffic is shaped on this host (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shaping {
    /// The paper's timer-driven leaky bucket with double buffering, timer period `tick`.
    LeakyBucket {
        /// Timer period `T`.
        tick: Duration,
    },
    /// Inline token bucket pacing with shaping interval `interval` (bucket `r·Ts + M`, an empty
    /// bucket refilled at most once per `Ts`; see [`pace::TokenPacer::with_shaping_interval`]).
    TokenBucket {
        /// Shaping interval `Ts` (must be positive).
        interval: Duration,
    },
    /// The daemon shapes in the kernel (an HTB class per connection).
    Kernel,
    /// No shaping.
    None,
}

/// How `send` paces.
#[derive(Debug)]
enum Pacer {
    Plain,
    Token(Box<Mutex<TokenPacer>>),
    Leaky(LeakyDriver),
}

/// One reserved real-time connection and its UDP socket.
///
/// Use: [`RtConnection::open`], then [`send`](Self::send) datagrams of at most
/// [`Qos::max_datagram`] bytes, then [`close`](Self::close) (dropping closes too). The daemon
/// also releases the connection when this process dies.
#[derive(Debug)]
pub struct RtConnection {
    client: Option<RtcdClient>,
    opened: Opened,
    dst: SocketAddrV4,
    qos: Qos,
    socket: Arc<UdpSocket>,
    pacer: Pacer,
}

impl RtConnection {
    /// Registers with the daemon at `rtcd_socket`, reserves `qos` towards `dst` (blocking until
    /// the path answered), and opens a UDP socket connected to `proxy_ip:dst.port()`.
    pub fn open(
        rtcd_socket: &Path,
        dst: SocketAddrV4,
        qos: Qos,
        shaping: Shaping,
    ) -> Result<RtConnection, RttrError> {
        // Validate the shaper before reserving anything.
        let now = rtlan_linux::clock::now();
        let max_datagram = qos.max_datagram();
        let token = match shaping {
            Shaping::TokenBucket { interval } => Some(TokenPacer::with_shaping_interval(
                qos.rate_bps,
                interval,
                max_datagram,
            )?),
            _ => None,
        };
        let leaky = match shaping {
            Shaping::LeakyBucket { tick } => {
                let n = buffer_factor(tick);
                let mut cfg = LeakyBucketConfig::new(qos.rate_bps, tick);
                cfg.max_datagram = max_datagram;
                cfg.max_interval = tick.saturating_mul(n);
                Some(LeakyBucketShaper::new(cfg.with_burst_factor(n), now)?)
            }
            _ => None,
        };
        // The switches queue 2 × max_burst per connection: reserve at least the burst our shaper
        // can emit back to back, or a late timer tick would overflow the path's queues.
        let shaper_burst = match (&token, &leaky) {
            (Some(t), _) => t.burst_bytes(),
            (_, Some(l)) => l.config().buffer_bytes + wire_bytes(max_datagram),
            _ => 0,
        };
        let max_burst = u32::try_from(shaper_burst)
            .unwrap_or(u32::MAX)
            .max(qos.max_burst);
        let mut client = RtcdClient::connect(rtcd_socket)?;
        client.register(std::process::id())?;
        let daemon_shaping = if shaping == Shaping::Kernel {
            DaemonShaping::Kernel
        } else {
            DaemonShaping::None
        };
        let params = OpenParams {
            dst_ip: *dst.ip(),
            dst_port: dst.port(),
            src_port: 0,
            rate_bps: qos.rate_bps,
            max_burst,
            max_packet: qos.max_packet,
            delay_us: qos.delay_us,
        };
        let opened = client.open_shaped(&params, daemon_shaping)?;
        let release = |client: &mut RtcdClient| {
            let _ = client.close(opened.conn);
        };
        let socket = match connect_socket(opened.proxy_ip, dst.port()) {
            Ok(s) => Arc::new(s),
            Err(e) => {
                release(&mut client);
                return Err(e.into());
            }
        };
        let pacer = match (token, leaky) {
            // The bucket starts full when the connection opens, not when it was validated: the
            // reservation's round trip would otherwise count as unused rate.
            (Some(t), _) => match t.restarted() {
                Ok(t) => Pacer::Token(Box::new(Mutex::new(t))),
                Err(e) => {
                    release(&mut client);
                    return Err(e.into());
                }
            },
            (_, Some(shaper)) => match LeakyDriver::start(shaper, Arc::clone(&socket)) {
                Ok(d) => Pacer::Leaky(d),
                Err(e) => {
                    release(&mut client);
                    return Err(e);
                }
            },
            _ => Pacer::Plain,
        };
        Ok(RtConnection {
            client: Some(client),
            opened,
            dst,
            qos,
            socket,
            pacer,
        })
    }

    /// Sends one datagram through the shaper. Leaky bucket: queues it (blocking while both
    /// buffers are full) and returns; token bucket: sleeps until the tokens are there and sends;
    /// kernel/none: sends at once. Returns the payload length.
    pub fn send(&self, payload: &[u8]) -> Result<usize, RttrError> {
        if self.client.is_none() {
            return Err(RttrError::Closed);
        }
        match &self.pacer {
            Pacer::Plain => Ok(self.socket.send(payload)?),
            // A poisoned lock only means another sender panicked; the bucket is still valid.
            Pacer::Token(p) => p
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .send(&self.socket, payload),
            Pacer::Leaky(driver) => driver.send(payload),
        }
    }

    /// Waits until the leaky bucket's buffers are empty (at most `timeout`); other shapings
    /// have nothing buffered. Returns whether everything was sent.
    pub fn flush(&self, timeout: Duration) -> bool {
        match &self.pacer {
            Pacer::Leaky(d) => d.flush(timeout),
            _ => true,
        }
    }

    /// Datagrams the leaky bucket's thread failed to hand to the socket (0 for other shapings,
    /// whose `send` returns the error instead).
    pub fn send_errors(&self) -> u64 {
        match &self.pacer {
            Pacer::Leaky(d) => d.send_errors(),
            _ => 0,
        }
    }

    /// The counters of the library's shaper (token or leaky bucket; `None` for kernel and no
    /// shaping). Its `forfeited_wire_bytes` is the rate lost because the shaper woke late while
    /// datagrams waited: a token bucket's `b = r·Ts + M` absorbs a wake-up late by at most
    /// `M / r` (seed 004 §3.1), so a busy host shows here, not as a silent shortfall.
    pub fn shaper_stats(&self) -> Option<ShaperStats> {
        match &self.pacer {
            Pacer::Token(p) => Some(*p.lock().unwrap_or_else(|p| p.into_inner()).stats()),
            Pacer::Leaky(d) => Some(d.stats()),
            Pacer::Plain => None,
        }
    }

    /// The leaky bucket's measured tick intervals `T_m` so far in ns (EtheReal Table 1; empty
    /// for other shapings).
    pub fn tick_intervals_ns(&self) -> Vec<u64> {
        match &self.pacer {
            Pacer::Leaky(d) => d.tick_intervals_ns(),
            _ => Vec::new(),
        }
    }

    /// The UDP socket, connected to [`proxy_addr`](Self::proxy_addr) (sending on it directly
    /// bypasses the library's shaper).
    pub fn socket(&self) -> &UdpSocket {
        &self.socket
    }

    /// Where the datagrams go: the proxy IP and the receiver's port.
    pub fn proxy_addr(&self) -> SocketAddrV4 {
        SocketAddrV4::new(self.opened.proxy_ip, self.dst.port())
    }

    /// What the daemon answered: handle, proxy IP/MAC, connection id, hops.
    pub fn info(&self) -> &Opened {
        &self.opened
    }

    /// The reserved QoS.
    pub fn qos(&self) -> &Qos {
        &self.qos
    }

    /// The receiver's address.
    pub fn destination(&self) -> SocketAddrV4 {
        self.dst
    }

    /// Sends what the shaper still holds (up to 5 s) and releases the reservation.
    pub fn close(mut self) -> Result<(), RttrError> {
        self.release()
    }

    fn release(&mut self) -> Result<(), RttrError> {
        let Some(mut client) = self.client.take() else {
            return Ok(());
        };
        if let Pacer::Leaky(d) = &mut self.pacer {
            d.flush(Duration::from_secs(5));
            d.stop();
        }
        client.close(self.opened.conn)?;
        Ok(())
    }
}

impl Drop for RtConnection {
    fn drop(&mut self) {
        if let Err(e) = self.release() {
            tracing::warn!("rttr: releasing connection {}: {e}", self.opened.conn);
        }
    }
}

/// The leaky bucket holds at least this much of its rate, however short the tick.
pub const MIN_LEAKY_BUFFER: Duration = Duration::from_millis(10);

/// The paper's `N` for timer period `tick`: 2 (double buffering), or more so that the buffer
/// holds [`MIN_LEAKY_BUFFER`] of traffic; one tick is credited for at most `N × tick`.
pub fn buffer_factor(tick: Duration) -> u32 {
    let ticks = MIN_LEAKY_BUFFER.as_nanos().div_ceil(tick.as_nanos().max(1));
    u32::try_from(ticks).unwrap_or(u32::MAX).max(2)
}

fn connect_socket(proxy_ip: Ipv4Addr, port: u16) -> std::io::Result<UdpSocket> {
    let socket = UdpSocket::bind(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0))?;
    socket.connect(SocketAddrV4::new(proxy_ip, port))?;
    Ok(socket)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_datagram_is_frame_minus_headers() {
        assert_eq!(Qos::with_rate(1).max_datagram(), 1472);
        let tiny = Qos {
            max_packet: 20,
            ..Qos::with_rate(1)
        };
        assert_eq!(tiny.max_datagram(), 0);
    }

    #[test]
    fn buffer_covers_ten_milliseconds_and_is_at_least_double() {
        assert_eq!(buffer_factor(Duration::from_millis(1)), 10);
        assert_eq!(buffer_factor(Duration::from_micros(300)), 34);
        assert_eq!(buffer_factor(Duration::from_millis(10)), 2);
        assert_eq!(buffer_factor(Duration::from_millis(50)), 2);
    }

    #[test]
    fn socket_path_prefers_explicit_then_env() {
        let explicit = Path::new("/tmp/x.sock");
        assert_eq!(rtcd_socket_path(Some(explicit)), explicit);
    }

    #[test]
    fn open_without_daemon_is_an_error_not_a_panic() {
        let err = RtConnection::open(
            Path::new("/nonexistent/rtcd.sock"),
            SocketAddrV4::new(Ipv4Addr::new(198, 18, 0, 2), 5004),
            Qos::with_rate(1_000_000),
            Shaping::None,
        )
        .expect_err("no daemon there");
        assert!(matches!(err, RttrError::Rtcd(ClientError::Io(_))), "{err}");
    }

    #[test]
    fn bad_shaper_parameters_are_refused_before_reserving() {
        let err = RtConnection::open(
            Path::new("/nonexistent/rtcd.sock"),
            SocketAddrV4::new(Ipv4Addr::new(198, 18, 0, 2), 5004),
            Qos::with_rate(0),
            Shaping::TokenBucket {
                interval: Duration::from_millis(1),
            },
        )
        .expect_err("zero rate");
        assert!(
            matches!(err, RttrError::Shaper(ShaperError::ZeroRate)),
            "{err}"
        );
    }
}
