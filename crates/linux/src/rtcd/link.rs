//! The host daemon's control link (EtheReal §3.4: setup messages travel to the first switch on
//! the reserved control address): an `AF_PACKET`/`SOCK_DGRAM` socket bound to the host's
//! interface for EtherType 0x88B5 only, so the kernel adds and strips the Ethernet header and
//! nothing but control payloads reach the daemon. Written on `libc` directly: a handful of calls,
//! no crate does just this.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use rtlan_wire::control::ETHERTYPE;
use rtlan_wire::ethernet::Address;

use crate::packet::iface;

/// The control link could not be opened or used.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    /// The interface does not exist or is not Ethernet.
    #[error("interface `{ifname}`: {source}")]
    Interface {
        /// The interface.
        ifname: String,
        /// What the lookup said.
        #[source]
        source: crate::packet::PacketError,
    },
    /// A socket call failed.
    #[error("{what}: {source}")]
    Io {
        /// The call.
        what: &'static str,
        /// The system error.
        #[source]
        source: io::Error,
    },
}

/// A received control payload's origin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Received {
    /// Payload length written into the buffer.
    pub len: usize,
    /// Source MAC of the frame.
    pub src: Address,
}

/// An `AF_PACKET` datagram socket for control frames on one interface (non-blocking).
#[derive(Debug)]
pub struct ControlLink {
    fd: OwnedFd,
    ifindex: u32,
    mac: Address,
}

fn sockaddr(ifindex: u32, dst: Option<Address>) -> libc::sockaddr_ll {
    // SAFETY: all-zero is a valid sockaddr_ll; the fields that matter are set below.
    let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    addr.sll_family = libc::AF_PACKET as u16;
    addr.sll_protocol = ETHERTYPE.to_be();
    // Interface indices are positive c_ints in the kernel.
    addr.sll_ifindex = ifindex as i32;
    if let Some(dst) = dst {
        addr.sll_halen = 6;
        addr.sll_addr[..6].copy_from_slice(&dst.0);
    }
    addr
}

const SOCKADDR_LL_LEN: libc::socklen_t =
    std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;

impl ControlLink {
    /// Opens and binds the socket on `ifname` in the calling thread's network namespace.
    pub fn open(ifname: &str) -> Result<ControlLink, LinkError> {
        let ifindex = iface::ifindex(ifname).map_err(|source| LinkError::Interface {
            ifname: ifname.to_string(),
            source,
        })?;
        // SAFETY: plain system call; the result is checked.
        let raw = unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_DGRAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                i32::from(ETHERTYPE.to_be()),
            )
        };
        if raw < 0 {
            return Err(LinkError::Io {
                what: "socket(AF_PACKET)",
                source: io::Error::last_os_error(),
            });
        }
        // SAFETY: `raw` is a fresh descriptor nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let addr = sockaddr(ifindex, None);
        // SAFETY: `addr` is a valid sockaddr_ll and the length passed is its size.
        let rc = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&addr as *const libc::sockaddr_ll).cast(),
                SOCKADDR_LL_LEN,
            )
        };
        if rc < 0 {
            return Err(LinkError::Io {
                what: "bind(AF_PACKET)",
                source: io::Error::last_os_error(),
            });
        }
        let mac = iface::hardware_address(fd.as_raw_fd(), ifname).map_err(|source| {
            LinkError::Interface {
                ifname: ifname.to_string(),
                source,
            }
        })?;
        Ok(ControlLink { fd, ifindex, mac })
    }

    /// The interface's MAC address.
    pub fn mac(&self) -> Address {
        self.mac
    }

    /// The interface index.
    pub fn ifindex(&self) -> u32 {
        self.ifindex
    }

    /// Sends one control payload (a whole control message) to `dst`.
    pub fn send(&self, dst: Address, payload: &[u8]) -> io::Result<()> {
        let addr = sockaddr(self.ifindex, Some(dst));
        // SAFETY: `payload` is valid for reads of its length; `addr` is a valid sockaddr_ll of
        // the size passed.
        let n = unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                payload.as_ptr().cast(),
                payload.len(),
                0,
                (&addr as *const libc::sockaddr_ll).cast(),
                SOCKADDR_LL_LEN,
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Receives one incoming payload into `buf`; `Ok(None)` when nothing is waiting. Frames this
    /// host sent (`PACKET_OUTGOING`) are skipped.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<Option<Received>> {
        loop {
            // SAFETY: all-zero is a valid sockaddr_ll for the kernel to fill.
            let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
            let mut len = SOCKADDR_LL_LEN;
            // SAFETY: `buf` is valid for writes of its length; `addr`/`len` describe a writable
            // sockaddr_ll.
            let n = unsafe {
                libc::recvfrom(
                    self.fd.as_raw_fd(),
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    libc::MSG_TRUNC,
                    (&mut addr as *mut libc::sockaddr_ll).cast(),
                    &mut len,
                )
            };
            if n < 0 {
                let err = io::Error::last_os_error();
                return match err.kind() {
                    io::ErrorKind::WouldBlock => Ok(None),
                    io::ErrorKind::Interrupted => continue,
                    _ => Err(err),
                };
            }
            if addr.sll_pkttype == libc::PACKET_OUTGOING {
                continue;
            }
            let mut src = [0u8; 6];
            src.copy_from_slice(&addr.sll_addr[..6]);
            // n >= 0 checked above; MSG_TRUNC reports the full length, so clamp to the buffer.
            let len = (n as usize).min(buf.len());
            return Ok(Some(Received {
                len,
                src: Address(src),
            }));
        }
    }
}

impl AsRawFd for ControlLink {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}
