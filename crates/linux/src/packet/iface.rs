//! Interface lookups for a packet port: index (`if_nametoindex`), hardware address
//! (`SIOCGIFHWADDR`), flags (`SIOCGIFFLAGS`) and the driver's link state (`SIOCETHTOOL`), via
//! `ioctl` on any socket.

use std::ffi::CString;
use std::io;
use std::os::fd::RawFd;

use rtlan_wire::ethernet::Address;

use super::PacketError;

/// Builds an `ifreq` naming `ifname`, or refuses names that do not fit `IFNAMSIZ`.
fn ifreq_for(ifname: &str) -> Result<libc::ifreq, PacketError> {
    let bytes = ifname.as_bytes();
    if bytes.is_empty() || bytes.len() >= libc::IFNAMSIZ || bytes.contains(&0) {
        return Err(PacketError::BadName(ifname.to_string()));
    }
    // SAFETY: `ifreq` is a plain C struct (name array + union of plain data) for which all-zero
    // bytes are a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, &src) in req.ifr_name.iter_mut().zip(bytes) {
        *dst = src as libc::c_char;
    }
    Ok(req)
}

/// The interface index of `ifname` in the calling thread's network namespace.
pub(crate) fn ifindex(ifname: &str) -> Result<u32, PacketError> {
    let name = CString::new(ifname).map_err(|_| PacketError::BadName(ifname.to_string()))?;
    // SAFETY: `name` is a valid NUL-terminated string that outlives the call.
    let index = unsafe { libc::if_nametoindex(name.as_ptr()) };
    if index == 0 {
        return Err(PacketError::NoSuchInterface {
            ifname: ifname.to_string(),
            source: io::Error::last_os_error(),
        });
    }
    Ok(index)
}

/// The Ethernet MAC address of `ifname`, read through socket `fd`.
pub(crate) fn hardware_address(fd: RawFd, ifname: &str) -> Result<Address, PacketError> {
    let mut req = ifreq_for(ifname)?;
    // SAFETY: `fd` is an open socket, `req` is a valid ifreq naming the interface, and
    // SIOCGIFHWADDR writes only into `req`.
    let rc = unsafe { libc::ioctl(fd, libc::SIOCGIFHWADDR, &mut req) };
    if rc < 0 {
        return Err(PacketError::Ioctl {
            what: "SIOCGIFHWADDR",
            ifname: ifname.to_string(),
            source: io::Error::last_os_error(),
        });
    }
    // SAFETY: after a successful SIOCGIFHWADDR the kernel has filled the `ifru_hwaddr` member.
    let hw = unsafe { req.ifr_ifru.ifru_hwaddr };
    if hw.sa_family != libc::ARPHRD_ETHER {
        return Err(PacketError::NotEthernet {
            ifname: ifname.to_string(),
            hw_type: hw.sa_family,
        });
    }
    let mut mac = [0u8; 6];
    for (dst, &src) in mac.iter_mut().zip(hw.sa_data.iter()) {
        *dst = src as u8;
    }
    Ok(Address(mac))
}

/// Whether `ifname` is administratively up (`IFF_UP`), read through socket `fd`.
pub(crate) fn is_up(fd: RawFd, ifname: &str) -> Result<bool, PacketError> {
    Ok(flags(fd, ifname)? & libc::IFF_UP as libc::c_short != 0)
}

/// Whether `ifname` is up (`IFF_UP`) and has its carrier, read through socket `fd`.
///
/// The carrier comes from the driver (`ETHTOOL_GLINK`: `netif_carrier_ok` for veth and most
/// NICs), not from `IFF_RUNNING`: that flag follows the operational state, which the kernel's
/// link watch updates — for a carrier loss it may do so up to a second later (it rate-limits
/// events that are not urgent, and a carrier loss on a NIC or on a veth whose peer has the same
/// index in its namespace is not). Only a driver without `get_link` falls back to `IFF_RUNNING`.
pub(crate) fn has_carrier(fd: RawFd, ifname: &str) -> Result<bool, PacketError> {
    let flags = flags(fd, ifname)?;
    if flags & libc::IFF_UP as libc::c_short == 0 {
        return Ok(false);
    }
    match driver_link(fd, ifname)? {
        Some(link) => Ok(link),
        None => Ok(flags & libc::IFF_RUNNING as libc::c_short != 0),
    }
}

/// `ETHTOOL_GLINK` of `<linux/ethtool.h>`.
const ETHTOOL_GLINK: u32 = 0x0000_000a;

/// `struct ethtool_value` of `<linux/ethtool.h>`.
#[repr(C)]
struct EthtoolValue {
    cmd: u32,
    data: u32,
}

/// The driver's link state (`SIOCETHTOOL` / `ETHTOOL_GLINK`), `None` if the driver has none.
fn driver_link(fd: RawFd, ifname: &str) -> Result<Option<bool>, PacketError> {
    let mut req = ifreq_for(ifname)?;
    let mut value = EthtoolValue {
        cmd: ETHTOOL_GLINK,
        data: 0,
    };
    req.ifr_ifru.ifru_data = (&mut value as *mut EthtoolValue).cast();
    // SAFETY: `req` names the interface and points at `value`, which outlives the call; for
    // ETHTOOL_GLINK the kernel reads `cmd` and writes only `data` (an ethtool_value).
    let rc = unsafe { libc::ioctl(fd, libc::SIOCETHTOOL, &mut req) };
    if rc < 0 {
        let error = io::Error::last_os_error();
        if error.raw_os_error() == Some(libc::EOPNOTSUPP) {
            return Ok(None);
        }
        return Err(PacketError::Ioctl {
            what: "SIOCETHTOOL",
            ifname: ifname.to_string(),
            source: error,
        });
    }
    Ok(Some(value.data != 0))
}

/// The interface flags of `ifname` (`SIOCGIFFLAGS`), read through socket `fd`.
fn flags(fd: RawFd, ifname: &str) -> Result<libc::c_short, PacketError> {
    let mut req = ifreq_for(ifname)?;
    // SAFETY: as in `hardware_address`; SIOCGIFFLAGS writes only into `req`.
    let rc = unsafe { libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut req) };
    if rc < 0 {
        return Err(PacketError::Ioctl {
            what: "SIOCGIFFLAGS",
            ifname: ifname.to_string(),
            source: io::Error::last_os_error(),
        });
    }
    // SAFETY: after a successful SIOCGIFFLAGS the kernel has filled the `ifru_flags` member.
    Ok(unsafe { req.ifr_ifru.ifru_flags })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_has_an_index_and_bad_names_are_refused() {
        assert!(ifindex("lo").expect("lo exists in every namespace") >= 1);
        assert!(matches!(
            ifindex("rtl-no-such-if"),
            Err(PacketError::NoSuchInterface { .. })
        ));
        assert!(matches!(
            ifreq_for("a-name-much-longer-than-ifnamsiz"),
            Err(PacketError::BadName(_))
        ));
        assert!(matches!(ifreq_for(""), Err(PacketError::BadName(_))));
    }

    #[test]
    fn loopback_is_not_ethernet() {
        // SAFETY: plain socket creation; the fd is closed below.
        let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
        assert!(fd >= 0);
        let res = hardware_address(fd, "lo");
        // SAFETY: `fd` is ours and closed exactly once.
        unsafe { libc::close(fd) };
        assert!(
            matches!(res, Err(PacketError::NotEthernet { .. })),
            "{res:?}"
        );
    }
}
