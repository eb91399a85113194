//! Netlink shell for the host daemon (EtheReal §2.2 and §3.2): the permanent ARP entry
//! proxy-IP → proxy-MAC and the on-link route for the proxy prefix that make a reserved
//! connection transparent to an unmodified host stack.
//!
//! Built on the `rtnetlink` crate (DESIGN.md §2: thin shell, well-kept library). `rtnetlink` is
//! asynchronous; [`Netlink`] hides a private tokio current-thread runtime behind a synchronous API
//! so the daemon's event loop need not be async. The runtime starts no threads: the netlink
//! connection task only runs inside [`Netlink`]'s own `block_on` calls.
//!
//! A [`Netlink`] talks to the network namespace that was current for the calling thread when
//! [`Netlink::open`] created its socket; later `setns()` calls do not move it.

use std::io;
use std::net::{IpAddr, Ipv4Addr};

use futures_util::stream::TryStreamExt;
use rtnetlink::packet_route::neighbour::{
    NeighbourAddress, NeighbourAttribute, NeighbourMessage, NeighbourState as RawNeighbourState,
};
use rtnetlink::packet_route::route::{
    RouteAddress, RouteAttribute, RouteHeader, RouteMessage, RouteProtocol, RouteScope, RouteType,
};
use rtnetlink::packet_route::AddressFamily;
use rtnetlink::{Handle, RouteMessageBuilder};

/// Errors of the netlink shell.
#[derive(Debug, thiserror::Error)]
pub enum NetlinkError {
    /// The named interface does not exist in this network namespace.
    #[error("no such interface: {name}")]
    NoSuchInterface {
        /// The interface name that was looked up.
        name: String,
    },
    /// The prefix length is larger than 32.
    #[error("invalid IPv4 prefix length {len} (must be 0..=32)")]
    InvalidPrefixLen {
        /// The rejected prefix length.
        len: u8,
    },
    /// The kernel refused a request.
    #[error("{op}: kernel refused with errno {errno} ({})", io::Error::from_raw_os_error(*errno))]
    Kernel {
        /// The operation that was refused.
        op: &'static str,
        /// The positive errno the kernel answered with.
        errno: i32,
    },
    /// The netlink conversation itself failed (socket gone, unexpected or undecodable reply).
    #[error("{op}: netlink protocol failure: {detail}")]
    Protocol {
        /// The operation that failed.
        op: &'static str,
        /// What went wrong, as reported by `rtnetlink`.
        detail: String,
    },
    /// Creating the netlink socket or the runtime failed.
    #[error("netlink socket: {0}")]
    Io(#[from] io::Error),
}

/// State of a neighbour (ARP) cache entry, as the kernel's `NUD_*` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NeighbourState {
    /// `NUD_INCOMPLETE`: resolution in progress.
    Incomplete,
    /// `NUD_REACHABLE`: confirmed recently.
    Reachable,
    /// `NUD_STALE`: usable, to be re-confirmed.
    Stale,
    /// `NUD_DELAY`: waiting before probing.
    Delay,
    /// `NUD_PROBE`: being probed.
    Probe,
    /// `NUD_FAILED`: resolution failed.
    Failed,
    /// `NUD_NOARP`: no resolution needed.
    Noarp,
    /// `NUD_PERMANENT`: static entry, never expires (what [`Netlink::set_neighbour`] installs).
    Permanent,
    /// `NUD_NONE`: no state.
    None,
    /// Any other (combined or future) state bits.
    Other(u16),
}

impl From<RawNeighbourState> for NeighbourState {
    fn from(raw: RawNeighbourState) -> Self {
        match raw {
            RawNeighbourState::Incomplete => Self::Incomplete,
            RawNeighbourState::Reachable => Self::Reachable,
            RawNeighbourState::Stale => Self::Stale,
            RawNeighbourState::Delay => Self::Delay,
            RawNeighbourState::Probe => Self::Probe,
            RawNeighbourState::Failed => Self::Failed,
            RawNeighbourState::Noarp => Self::Noarp,
            RawNeighbourState::Permanent => Self::Permanent,
            RawNeighbourState::None => Self::None,
            RawNeighbourState::Other(bits) => Self::Other(bits),
            // `NeighbourState` is non-exhaustive upstream; map unknown variants to their bits.
            #[allow(unreachable_patterns)]
            other => Self::Other(u16::from(other)),
        }
    }
}

/// One neighbour cache entry: IPv4 address, link-layer address (absent while unresolved), state.
pub type NeighbourEntry = (Ipv4Addr, Option<[u8; 6]>, NeighbourState);

/// `ENOENT`: the kernel's answer when deleting an absent neighbour.
const ENOENT: i32 = libc::ENOENT;
/// `ESRCH`: the kernel's answer when deleting an absent route.
const ESRCH: i32 = libc::ESRCH;
/// `ENODEV`: the kernel's answer when looking up an absent link by name.
const ENODEV: i32 = libc::ENODEV;

/// One rtnetlink socket in the network namespace current at [`Netlink::open`].
///
/// Every method blocks until the kernel has acknowledged (or refused) the request.
pub struct Netlink {
    /// Private single-threaded runtime that drives the connection task.
    runtime: tokio::runtime::Runtime,
    /// Request handle of the connection.
    handle: Handle,
}

impl std::fmt::Debug for Netlink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Netlink").finish_non_exhaustive()
    }
}

/// Maps an `rtnetlink` error for operation `op` to a [`NetlinkError`].
fn map_err(op: &'static str, err: rtnetlink::Error) -> NetlinkError {
    match err {
        rtnetlink::Error::NetlinkError(msg) if msg.raw_code() != 0 => NetlinkError::Kernel {
            op,
            errno: msg.raw_code().saturating_abs(),
        },
        other => NetlinkError::Protocol {
            op,
            detail: other.to_string(),
        },
    }
}

/// `true` if `err` is the kernel refusing with `errno`.
fn is_errno(err: &NetlinkError, errno: i32) -> bool {
    matches!(err, NetlinkError::Kernel { errno: e, .. } if *e == errno)
}

/// Checks an IPv4 prefix length.
fn check_len(len: u8) -> Result<(), NetlinkError> {
    if len > 32 {
        return Err(NetlinkError::InvalidPrefixLen { len });
    }
    Ok(())
}

impl Netlink {
    /// Opens a netlink route socket in the calling thread's current network namespace.
    pub fn open() -> Result<Netlink, NetlinkError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()?;
        // The socket is registered with the runtime's reactor, so create it inside the runtime.
        let _guard = runtime.enter();
        let (connection, handle, _messages) = rtnetlink::new_connection()?;
        runtime.spawn(connection);
        drop(_guard);
        Ok(Netlink { runtime, handle })
    }

    /// Interface index of `ifname`.
    pub fn ifindex(&mut self, ifname: &str) -> Result<u32, NetlinkError> {
        let handle = self.handle.clone();
        let result = self.runtime.block_on(async move {
            let mut links = handle.link().get().match_name(ifname.to_owned()).execute();
            links.try_next().await
        });
        match result {
            Ok(Some(link)) => Ok(link.header.index),
            Ok(None) => Err(NetlinkError::NoSuchInterface {
                name: ifname.to_owned(),
            }),
            Err(err) => {
                let err = map_err("get link", err);
                if is_errno(&err, ENODEV) {
                    Err(NetlinkError::NoSuchInterface {
                        name: ifname.to_owned(),
                    })
                } else {
                    Err(err)
                }
            }
        }
    }

    /// Permanent neighbour entry ip → mac on ifname (replaces an existing one).
    pub fn set_neighbour(
        &mut self,
        ifname: &str,
        ip: Ipv4Addr,
        mac: [u8; 6],
    ) -> Result<(), NetlinkError> {
        let index = self.ifindex(ifname)?;
        let request = self
            .handle
            .neighbours()
            .add(index, IpAddr::V4(ip))
            .state(RawNeighbourState::Permanent)
            .link_layer_address(&mac)
            .replace();
        self.runtime
            .block_on(request.execute())
            .map_err(|e| map_err("add neighbour", e))
    }

    /// Deletes the neighbour entry for ip on ifname; an absent entry is not an error.
    pub fn delete_neighbour(&mut self, ifname: &str, ip: Ipv4Addr) -> Result<(), NetlinkError> {
        let index = self.ifindex(ifname)?;
        let mut message = NeighbourMessage::default();
        message.header.family = AddressFamily::Inet;
        message.header.ifindex = index;
        message
            .attributes
            .push(NeighbourAttribute::Destination(NeighbourAddress::Inet(ip)));
        let request = self.handle.neighbours().del(message);
        match self.runtime.block_on(request.execute()) {
            Ok(()) => Ok(()),
            Err(err) => {
                let err = map_err("delete neighbour", err);
                if is_errno(&err, ENOENT) {
                    Ok(())
                } else {
                    Err(err)
                }
            }
        }
    }

    /// IPv4 neighbour entries on ifname: address, link-layer address (if any), state.
    pub fn neighbours(&mut self, ifname: &str) -> Result<Vec<NeighbourEntry>, NetlinkError> {
        let index = self.ifindex(ifname)?;
        let request = self
            .handle
            .neighbours()
            .get()
            .set_address_family(AddressFamily::Inet);
        let messages: Vec<NeighbourMessage> = self
            .runtime
            .block_on(request.execute().try_collect())
            .map_err(|e| map_err("dump neighbours", e))?;
        Ok(messages
            .into_iter()
            .filter(|m| m.header.ifindex == index)
            .filter_map(|m| {
                let mut ip = None;
                let mut mac = None;
                for attr in &m.attributes {
                    match attr {
                        NeighbourAttribute::Destination(NeighbourAddress::Inet(a)) => {
                            ip = Some(*a);
                        }
                        NeighbourAttribute::LinkLayerAddress(lla) => {
                            mac = <[u8; 6]>::try_from(lla.as_slice()).ok();
                        }
                        _ => {}
                    }
                }
                ip.map(|ip| (ip, mac, NeighbourState::from(m.header.state)))
            })
            .collect())
    }

    /// On-link (scope link, no gateway) route for prefix/len via ifname (replace semantics).
    pub fn set_onlink_route(
        &mut self,
        ifname: &str,
        prefix: Ipv4Addr,
        len: u8,
    ) -> Result<(), NetlinkError> {
        check_len(len)?;
        let index = self.ifindex(ifname)?;
        let message = RouteMessageBuilder::<Ipv4Addr>::new()
            .destination_prefix(prefix, len)
            .output_interface(index)
            .scope(RouteScope::Link)
            .build();
        let request = self.handle.route().add(message).replace();
        self.runtime
            .block_on(request.execute())
            .map_err(|e| map_err("add route", e))
    }

    /// Deletes the main-table route for prefix/len via ifname; an absent route is not an error.
    pub fn delete_route(
        &mut self,
        ifname: &str,
        prefix: Ipv4Addr,
        len: u8,
    ) -> Result<(), NetlinkError> {
        check_len(len)?;
        let index = self.ifindex(ifname)?;
        let mut builder = RouteMessageBuilder::<Ipv4Addr>::new()
            .destination_prefix(prefix, len)
            .output_interface(index);
        // Match any protocol, type and scope, like `ip route del` does.
        let header = &mut builder.get_mut().header;
        header.protocol = RouteProtocol::Unspec;
        header.kind = RouteType::Unspec;
        header.scope = RouteScope::NoWhere;
        let request = self.handle.route().del(builder.build());
        match self.runtime.block_on(request.execute()) {
            Ok(()) => Ok(()),
            Err(err) => {
                let err = map_err("delete route", err);
                if is_errno(&err, ESRCH) {
                    Ok(())
                } else {
                    Err(err)
                }
            }
        }
    }

    /// IPv4 unicast routes of the main table whose output interface is ifname, as (prefix,
    /// length).
    pub fn routes(&mut self, ifname: &str) -> Result<Vec<(Ipv4Addr, u8)>, NetlinkError> {
        let index = self.ifindex(ifname)?;
        Ok(self
            .ipv4_routes()?
            .into_iter()
            .filter(|r| r.oif == Some(index))
            .map(|r| (r.dst, r.prefix_len))
            .collect())
    }
}

/// One IPv4 unicast route of the kernel's main table, as a router mirrors it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelRoute {
    /// Destination network.
    pub dst: Ipv4Addr,
    /// Its prefix length.
    pub prefix_len: u8,
    /// The next router, if any (none: on-link).
    pub gateway: Option<Ipv4Addr>,
    /// The output interface's index.
    pub oif: Option<u32>,
    /// Whether the kernel made it for an interface address (`proto kernel`).
    pub connected: bool,
    /// Its priority (metric), 0 if none.
    pub metric: u32,
}

impl Netlink {
    /// The IPv4 unicast routes of the main table (multipath routes give their first hop).
    pub fn ipv4_routes(&mut self) -> Result<Vec<KernelRoute>, NetlinkError> {
        let request = self
            .handle
            .route()
            .get(RouteMessageBuilder::<Ipv4Addr>::new().build());
        let messages: Vec<RouteMessage> = self
            .runtime
            .block_on(request.execute().try_collect())
            .map_err(|e| map_err("dump routes", e))?;
        Ok(messages
            .into_iter()
            .filter(|m| m.header.address_family == AddressFamily::Inet)
            .filter(|m| route_table(m) == u32::from(RouteHeader::RT_TABLE_MAIN))
            .filter(|m| m.header.kind == RouteType::Unicast)
            .map(|m| {
                let mut route = KernelRoute {
                    dst: Ipv4Addr::UNSPECIFIED,
                    prefix_len: m.header.destination_prefix_length,
                    gateway: None,
                    oif: None,
                    connected: m.header.protocol == RouteProtocol::Kernel,
                    metric: 0,
                };
                for a in &m.attributes {
                    match a {
                        RouteAttribute::Destination(RouteAddress::Inet(d)) => route.dst = *d,
                        RouteAttribute::Gateway(RouteAddress::Inet(g)) => route.gateway = Some(*g),
                        RouteAttribute::Oif(i) => route.oif = Some(*i),
                        RouteAttribute::Priority(p) => route.metric = *p,
                        RouteAttribute::MultiPath(hops) if route.oif.is_none() => {
                            if let Some(hop) = hops.first() {
                                route.oif = Some(hop.interface_index);
                                route.gateway = hop.attributes.iter().find_map(|a| match a {
                                    RouteAttribute::Gateway(RouteAddress::Inet(g)) => Some(*g),
                                    _ => None,
                                });
                            }
                        }
                        _ => {}
                    }
                }
                route
            })
            .collect())
    }

    /// The IPv4 addresses of `ifname` with their prefix lengths.
    pub fn ipv4_addresses(&mut self, ifname: &str) -> Result<Vec<(Ipv4Addr, u8)>, NetlinkError> {
        let index = self.ifindex(ifname)?;
        let request = self.handle.address().get().set_link_index_filter(index);
        let messages: Vec<rtnetlink::packet_route::address::AddressMessage> = self
            .runtime
            .block_on(request.execute().try_collect())
            .map_err(|e| map_err("dump addresses", e))?;
        Ok(messages
            .into_iter()
            .filter(|m| m.header.index == index)
            .filter_map(|m| {
                let len = m.header.prefix_len;
                m.attributes.iter().find_map(|a| match a {
                    rtnetlink::packet_route::address::AddressAttribute::Address(IpAddr::V4(v4)) => {
                        Some((*v4, len))
                    }
                    _ => None,
                })
            })
            .collect())
    }
}

/// Routing table of a route message (the `RTA_TABLE` attribute wins over the 8-bit header field).
fn route_table(m: &RouteMessage) -> u32 {
    m.attributes
        .iter()
        .find_map(|a| match a {
            RouteAttribute::Table(t) => Some(*t),
            _ => None,
        })
        .unwrap_or(u32::from(m.header.table))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_length_above_32_is_rejected() {
        assert!(matches!(
            check_len(33),
            Err(NetlinkError::InvalidPrefixLen { len: 33 })
        ));
        assert!(check_len(32).is_ok());
        assert!(check_len(0).is_ok());
    }

    #[test]
    fn kernel_error_display_names_operation_and_errno() {
        let err = NetlinkError::Kernel {
            op: "add route",
            errno: libc::EPERM,
        };
        let text = err.to_string();
        assert!(text.contains("add route"), "{text}");
        assert!(text.contains(&libc::EPERM.to_string()), "{text}");
        assert!(is_errno(&err, libc::EPERM));
        assert!(!is_errno(&err, ENOENT));
    }

    #[test]
    fn neighbour_state_maps_permanent() {
        assert_eq!(
            NeighbourState::from(RawNeighbourState::Permanent),
            NeighbourState::Permanent
        );
        assert_eq!(
            NeighbourState::from(RawNeighbourState::Other(0x300)),
            NeighbourState::Other(0x300)
        );
    }
}
