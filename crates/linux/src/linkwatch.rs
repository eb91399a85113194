//! Carrier changes from netlink (issue 12 item 3: "link state from netlink"): a `NETLINK_ROUTE`
//! socket subscribed to the `RTMGRP_LINK` multicast group, non-blocking, for an event loop's
//! `epoll`. The kernel sends `RTM_NEWLINK` on every change of an interface's flags, carrier
//! included, the moment it happens; the daemons then read the flags of the interfaces they care
//! about (`SIOCGIFFLAGS`, the same test as [`crate::packet::PacketPort::carrier`]). Netlink says
//! *when*, the interface flags say *what*: no message is parsed, so no message format can
//! mislead, and a missed or coalesced event is made good by the next one (and by the switch's
//! periodic carrier check, kept as a safety net).
//!
//! The socket (from `netlink-sys`, re-exported by `rtnetlink`, which the netlink shell already
//! uses) belongs to the network namespace current when [`LinkWatch::open`] ran.

use std::io;
use std::os::fd::{AsRawFd, RawFd};

use rtnetlink::sys::{protocols::NETLINK_ROUTE, Socket, SocketAddr};

/// `RTMGRP_LINK`: the link notifications multicast group (`<linux/rtnetlink.h>`).
const RTMGRP_LINK: u32 = 1;
/// `RTMGRP_IPV4_IFADDR`: IPv4 address changes.
const RTMGRP_IPV4_IFADDR: u32 = 0x10;
/// `RTMGRP_IPV4_ROUTE`: IPv4 route changes.
const RTMGRP_IPV4_ROUTE: u32 = 0x40;

/// A subscription to link notifications.
#[derive(Debug)]
pub struct LinkWatch {
    socket: Socket,
    buf: Vec<u8>,
}

impl LinkWatch {
    /// Subscribes to the link notifications of the current network namespace.
    pub fn open() -> io::Result<LinkWatch> {
        LinkWatch::open_groups(RTMGRP_LINK)
    }

    /// Subscribes to the IPv4 route and address notifications of the current network namespace
    /// (`RTMGRP_IPV4_ROUTE | RTMGRP_IPV4_IFADDR`): the router's mirror of the kernel's table
    /// re-reads the routes when one arrives, as the link watch re-reads flags.
    pub fn open_routes() -> io::Result<LinkWatch> {
        LinkWatch::open_groups(RTMGRP_IPV4_ROUTE | RTMGRP_IPV4_IFADDR)
    }

    fn open_groups(groups: u32) -> io::Result<LinkWatch> {
        let mut socket = Socket::new(NETLINK_ROUTE)?;
        socket.bind(&SocketAddr::new(0, groups))?;
        socket.set_non_blocking(true)?;
        Ok(LinkWatch {
            socket,
            buf: Vec::with_capacity(64 * 1024),
        })
    }

    /// Reads every pending notification; returns how many datagrams there were (0: nothing
    /// changed since the last call). An overrun (`ENOBUFS`: the kernel dropped notifications)
    /// counts as a change, so the caller rereads the flags.
    pub fn drain(&mut self) -> usize {
        let mut n = 0;
        loop {
            self.buf.clear();
            match self.socket.recv(&mut self.buf, 0) {
                Ok(_) => n += 1,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return n,
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => n += 1,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    tracing::warn!("link notifications: {e}");
                    return n + 1;
                }
            }
        }
    }
}

impl LinkWatch {
    /// Whether `ifname` is up and has its carrier now (`IFF_UP` and `IFF_RUNNING`), read with
    /// `SIOCGIFFLAGS` through this socket (the kernel serves interface ioctls on any socket).
    pub fn carrier(&self, ifname: &str) -> Result<bool, crate::packet::PacketError> {
        crate::packet::iface::has_carrier(self.as_raw_fd(), ifname)
    }
}

impl AsRawFd for LinkWatch {
    fn as_raw_fd(&self) -> RawFd {
        self.socket.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opens_without_privileges_and_reads_the_loopback_flags() {
        // Any process may listen to link notifications; what is pending depends on the
        // machine (the namespace test in tests/linkwatch_ns.rs checks the events).
        let mut watch = LinkWatch::open().expect("netlink socket");
        let _ = watch.drain();
        assert!(watch.carrier("no-such-if0").is_err());
        let _ = watch.carrier("lo").expect("lo exists");
    }
}
