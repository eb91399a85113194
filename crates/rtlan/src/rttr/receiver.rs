//! The receiving end of a real-time stream (EtheReal §3.2, whose guarantee ends where the frame
//! reaches the receiving host): a UDP socket that says **when each datagram reached the host**,
//! sized so that a receiving application that runs late loses nothing, and that counts what it
//! lost anyway.
//!
//! - **Arrival time**: the kernel's software receive timestamp (`SO_TIMESTAMPING` with
//!   `SOF_TIMESTAMPING_RX_SOFTWARE`, `CLOCK_REALTIME`, taken when the frame entered the host's
//!   stack), not the time the application got round to `recv()`. Not `SO_TIMESTAMPNS`: Linux
//!   turns receive stamping on a moment after the option is set (a deferred static key), and
//!   `SO_TIMESTAMPNS` hides a datagram that arrived in that moment by stamping it when it is
//!   read; `SO_TIMESTAMPING` reports no stamp instead, which is counted ([`RtReceiver::unstamped`]). The network's delay is the first; the difference, the *read lag*, is the
//!   receiving host's own scheduling. On a machine where real-time switches run under
//!   `SCHED_FIFO` beside the hosts (every lab here), an ordinary receiving process has been
//!   measured waiting 110–180 ms for a CPU, which is no part of a switch's bound.
//! - **Receive buffer**: [`DEFAULT_RECEIVE_BUFFER`] unless told otherwise, through
//!   `SO_RCVBUFFORCE` when the process may (`CAP_NET_ADMIN`) and `SO_RCVBUF` (capped by
//!   `net.core.rmem_max`) when not. Linux's default (`rmem_default`, 208 KiB here) holds about 90
//!   datagrams of 1,000 bytes — 36 ms of a 20 Mbit/s stream — so a receiver starved longer than
//!   that drops what the network delivered intact.
//! - **Drops**: the socket's own drop counter (`SO_MEMINFO`, `SK_MEMINFO_DROPS`): datagrams the
//!   host discarded because the buffer was full. A stream's loss minus these is the network's.
//!
//! Written on `nix`'s `recvmsg` and socket options; `std`'s `UdpSocket` offers neither control
//! messages nor these options.

use std::io::{self, IoSliceMut};
use std::net::{SocketAddrV4, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::Duration;

use nix::sys::socket::{
    self as nsock, sockopt, ControlMessageOwned, MsgFlags, TimestampingFlag, Timestamps,
};

use super::probe::realtime_ns;

/// The receive buffer asked for by default: 4 MiB, half a second of a 64 Mbit/s stream of
/// 1,000-byte datagrams (the kernel charges about 2.3 KB of memory for each).
pub const DEFAULT_RECEIVE_BUFFER: usize = 4 << 20;

/// One datagram's times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Received {
    /// Bytes in the datagram (the caller's buffer holds them).
    pub len: usize,
    /// When it reached the host, `CLOCK_REALTIME` ns: the kernel's timestamp, or [`read_ns`]
    /// when the kernel gave none.
    ///
    /// [`read_ns`]: Received::read_ns
    pub arrival_ns: u64,
    /// When the application read it, `CLOCK_REALTIME` ns.
    pub read_ns: u64,
    /// Whether `arrival_ns` is the kernel's timestamp.
    pub kernel_stamped: bool,
}

/// A bound UDP socket with kernel receive timestamps and a sized receive buffer.
#[derive(Debug)]
pub struct RtReceiver {
    socket: UdpSocket,
    cmsg: Vec<u8>,
    unstamped: u64,
}

impl RtReceiver {
    /// Binds `addr`, asks for a receive buffer of `buffer` bytes and turns on kernel receive
    /// timestamps. Check [`receive_buffer`](RtReceiver::receive_buffer) for what was granted.
    pub fn bind(addr: SocketAddrV4, buffer: usize) -> io::Result<RtReceiver> {
        let socket = UdpSocket::bind(addr)?;
        let want = buffer.min(i32::MAX as usize / 2);
        // SO_RCVBUFFORCE needs CAP_NET_ADMIN; without it SO_RCVBUF, capped by rmem_max.
        if nsock::setsockopt(&socket, sockopt::RcvBufForce, &want).is_err() {
            nsock::setsockopt(&socket, sockopt::RcvBuf, &want).map_err(io::Error::from)?;
        }
        let stamps = TimestampingFlag::SOF_TIMESTAMPING_RX_SOFTWARE
            | TimestampingFlag::SOF_TIMESTAMPING_SOFTWARE;
        nsock::setsockopt(&socket, sockopt::Timestamping, &stamps).map_err(io::Error::from)?;
        Ok(RtReceiver {
            socket,
            cmsg: nix::cmsg_space!(Timestamps),
            unstamped: 0,
        })
    }

    /// The underlying socket.
    pub fn socket(&self) -> &UdpSocket {
        &self.socket
    }

    /// `recv` returns `WouldBlock`/`TimedOut` after this long without a datagram.
    pub fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        self.socket.set_read_timeout(timeout)
    }

    /// The receive buffer the kernel granted, bytes of its own accounting (Linux doubles what
    /// was asked for, to leave room for its per-datagram overhead).
    pub fn receive_buffer(&self) -> io::Result<usize> {
        nsock::getsockopt(&self.socket, sockopt::RcvBuf).map_err(io::Error::from)
    }

    /// Datagrams the host dropped because this socket's buffer was full, since it was bound.
    pub fn drops(&self) -> io::Result<u64> {
        const DROPS: usize = libc::SK_MEMINFO_DROPS as usize;
        // The counters up to and including the drops (the kernel writes at most `len` bytes).
        let mut info = [0u32; DROPS + 1];
        let mut len = std::mem::size_of_val(&info) as libc::socklen_t;
        // SAFETY: `info` is a writable array of `len` bytes that outlives the call; the kernel
        // writes at most `len` bytes and stores the length it wrote back into `len`.
        let rc = unsafe {
            libc::getsockopt(
                self.socket.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_MEMINFO,
                info.as_mut_ptr().cast(),
                &mut len,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        if (len as usize) < std::mem::size_of_val(&info) {
            return Err(io::Error::other("SO_MEMINFO without a drop counter"));
        }
        Ok(u64::from(info[DROPS]))
    }

    /// Datagrams that came without a kernel timestamp (their arrival is the read time).
    pub fn unstamped(&self) -> u64 {
        self.unstamped
    }

    /// Receives one datagram into `buf` (a longer one is truncated to `buf`'s length).
    pub fn recv(&mut self, buf: &mut [u8]) -> io::Result<Received> {
        let mut iov = [IoSliceMut::new(buf)];
        let msg = nsock::recvmsg::<()>(
            self.socket.as_raw_fd(),
            &mut iov,
            Some(&mut self.cmsg),
            MsgFlags::empty(),
        )
        .map_err(io::Error::from)?;
        let read_ns = realtime_ns();
        let mut stamp = None;
        for c in msg.cmsgs().map_err(io::Error::from)? {
            if let ControlMessageOwned::ScmTimestampsns(ts) = c {
                let ts = ts.system;
                stamp = u64::try_from(ts.tv_sec())
                    .ok()
                    .zip(u64::try_from(ts.tv_nsec()).ok())
                    .map(|(s, ns)| s.saturating_mul(1_000_000_000).saturating_add(ns))
                    .filter(|&ns| ns != 0);
            }
        }
        let len = msg.bytes;
        if stamp.is_none() {
            self.unstamped += 1;
        }
        Ok(Received {
            len,
            arrival_ns: stamp.unwrap_or(read_ns),
            read_ns,
            kernel_stamped: stamp.is_some(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn pair(buffer: usize) -> (RtReceiver, UdpSocket, SocketAddrV4) {
        let rx = RtReceiver::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0), buffer).unwrap();
        rx.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let to = match rx.socket().local_addr().unwrap() {
            std::net::SocketAddr::V4(a) => a,
            other => panic!("bound {other}"),
        };
        let tx = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        (rx, tx, to)
    }

    #[test]
    fn a_datagram_carries_the_kernel_arrival_time_before_its_read_time() {
        let (mut rx, tx, to) = pair(1 << 20);
        let mut buf = [0u8; 64];
        // Stamping may start a moment after the socket asked for it (see the module doc): a
        // datagram in that moment comes unstamped and is counted, never stamped at its read.
        for attempt in 0..50 {
            let before = realtime_ns();
            tx.send_to(b"hello", to).unwrap();
            // Read well after the arrival: the read lag must show the wait, the arrival not.
            std::thread::sleep(Duration::from_millis(30));
            let r = rx.recv(&mut buf).unwrap();
            assert_eq!(&buf[..r.len], b"hello");
            if !r.kernel_stamped {
                assert_eq!(r.arrival_ns, r.read_ns, "{r:?}");
                assert_eq!(rx.unstamped(), attempt + 1);
                continue;
            }
            assert!(r.arrival_ns >= before, "{r:?} before {before}");
            assert!(
                r.read_ns - r.arrival_ns >= 25_000_000,
                "30 ms in the buffer show as read lag: {r:?}"
            );
            return;
        }
        panic!("no datagram was stamped in 50 tries");
    }

    #[test]
    fn a_full_buffer_counts_its_drops_and_a_large_one_has_none() {
        // The smallest buffer the kernel grants (about 2.3 KB doubled) overflows at once.
        let (small, tx, to) = pair(0);
        for _ in 0..200 {
            tx.send_to(&[7u8; 1000], to).unwrap();
        }
        let drops = small.drops().unwrap();
        assert!(drops > 100, "a tiny buffer dropped only {drops} of 200");

        let (big, tx, to) = pair(DEFAULT_RECEIVE_BUFFER);
        for _ in 0..200 {
            tx.send_to(&[7u8; 1000], to).unwrap();
        }
        assert_eq!(big.drops().unwrap(), 0);
        assert!(
            big.receive_buffer().unwrap() >= 200 * 1000,
            "granted {}",
            big.receive_buffer().unwrap()
        );
    }
}
