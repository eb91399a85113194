//! The host daemon's RSVP socket (`signalling = "rsvp"`, `docs/rsvp.md` §7): one raw IPv4
//! socket of protocol 46. The kernel routes what it sends (to the receiver through the host's
//! gateway, or to the previous hop on the subnet) and hands it every RSVP packet addressed to
//! the host. Path, PathTear and ResvConf carry the Router Alert option (RFC 2113): set with
//! `IP_OPTIONS` for those sends only.
//!
//! Written on `libc` like the other sockets of the shell: std has no raw IP sockets, and the
//! option handling is two `setsockopt` calls.

use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// RSVP's IP protocol number.
const IPPROTO_RSVP: libc::c_int = 46;

/// The Router Alert option (RFC 2113 §2.1): type 148, length 4, value 0.
const ROUTER_ALERT: [u8; 4] = [0x94, 0x04, 0x00, 0x00];

/// The socket.
#[derive(Debug)]
pub(super) struct RsvpSocket {
    fd: OwnedFd,
    /// Whether `IP_OPTIONS` currently holds the Router Alert.
    alert: bool,
    /// The TTL currently set.
    ttl: u8,
}

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

impl RsvpSocket {
    /// Opens the socket (non-blocking; needs CAP_NET_RAW).
    pub(super) fn open() -> io::Result<RsvpSocket> {
        // SAFETY: socket(2) with constant arguments.
        let fd = unsafe {
            libc::socket(
                libc::AF_INET,
                libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                IPPROTO_RSVP,
            )
        };
        check(fd)?;
        // SAFETY: a new descriptor nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let mut socket = RsvpSocket {
            fd,
            alert: true,
            ttl: 0,
        };
        socket.set_alert(false)?;
        socket.set_ttl(64)?;
        Ok(socket)
    }

    fn set_alert(&mut self, on: bool) -> io::Result<()> {
        if self.alert == on {
            return Ok(());
        }
        let (ptr, len) = if on {
            (ROUTER_ALERT.as_ptr(), ROUTER_ALERT.len())
        } else {
            (std::ptr::null(), 0)
        };
        // SAFETY: a valid socket; `ptr` points at `len` readable bytes (or is null with 0).
        check(unsafe {
            libc::setsockopt(
                self.fd.as_raw_fd(),
                libc::IPPROTO_IP,
                libc::IP_OPTIONS,
                ptr.cast(),
                len as libc::socklen_t,
            )
        })?;
        self.alert = on;
        Ok(())
    }

    fn set_ttl(&mut self, ttl: u8) -> io::Result<()> {
        if self.ttl == ttl {
            return Ok(());
        }
        let value = libc::c_int::from(ttl);
        // SAFETY: a valid socket and a pointer to a c_int.
        check(unsafe {
            libc::setsockopt(
                self.fd.as_raw_fd(),
                libc::IPPROTO_IP,
                libc::IP_TTL,
                (&value as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        })?;
        self.ttl = ttl;
        Ok(())
    }

    /// Sends `message` (an RSVP message) to `dst` with IP TTL `ttl`, with the Router Alert if
    /// `router_alert`.
    pub(super) fn send(
        &mut self,
        dst: Ipv4Addr,
        ttl: u8,
        router_alert: bool,
        message: &[u8],
    ) -> io::Result<()> {
        self.set_alert(router_alert)?;
        self.set_ttl(ttl.max(1))?;
        let addr = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: 0,
            sin_addr: libc::in_addr {
                s_addr: u32::from(dst).to_be(),
            },
            sin_zero: [0; 8],
        };
        // SAFETY: a valid socket; `message` is readable for its length; `addr` is a complete
        // sockaddr_in of the size given.
        let n = unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                message.as_ptr().cast(),
                message.len(),
                0,
                (&addr as *const libc::sockaddr_in).cast(),
                std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// The next RSVP packet: (source, IP TTL, the RSVP message); `Ok(None)` when none waits.
    /// Packets whose IPv4 header does not parse are skipped.
    pub(super) fn recv(
        &mut self,
        buf: &mut [u8],
    ) -> io::Result<Option<(Ipv4Addr, u8, usize, usize)>> {
        loop {
            // SAFETY: a valid socket; `buf` is writable for its length.
            let n =
                unsafe { libc::recv(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
            if n < 0 {
                let e = io::Error::last_os_error();
                return match e.kind() {
                    io::ErrorKind::WouldBlock => Ok(None),
                    io::ErrorKind::Interrupted => continue,
                    _ => Err(e),
                };
            }
            let n = n as usize;
            // A raw IPv4 socket delivers the IP header too.
            let Ok(ip) = rtlan_wire::ipv4::Packet::new_checked(&buf[..n]) else {
                continue;
            };
            let start = ip.header_len();
            let end = usize::from(ip.total_len()).min(n);
            if start > end {
                continue;
            }
            return Ok(Some((ip.src_addr(), ip.ttl(), start, end)));
        }
    }
}

impl AsRawFd for RsvpSocket {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}
