//! The `ethtool` questions rtlan asks a NIC: its link speed (`ETHTOOL_GSET` over the
//! `SIOCETHTOOL` ioctl), and whether it runs GRO (`ETHTOOL_GGRO`/`ETHTOOL_SGRO`: a veth has NAPI,
//! and so threaded receive, only with GRO on). Hand-written: single ioctls with fixed C structs;
//! the ethtool crates on crates.io speak the newer netlink interface with a dependency tree
//! larger than this file (docs/physical-nics.md says what else to set with the `ethtool` tool
//! itself).

use std::io;

/// `ETHTOOL_GSET`: the legacy "get settings" command, answered by every driver that reports a
/// speed (veth, virtio, physical NICs); `ETHTOOL_GLINKSETTINGS` needs a two-step handshake for
/// the same two fields.
const ETHTOOL_GSET: u32 = 0x0000_0001;
/// `SPEED_UNKNOWN` of `<linux/ethtool.h>`: the link is down or the driver cannot tell.
const SPEED_UNKNOWN: u32 = u32::MAX;

/// `struct ethtool_cmd` of `<linux/ethtool.h>` (44 bytes): only `speed` and `speed_hi` are read.
#[repr(C)]
#[derive(Default)]
struct EthtoolCmd {
    cmd: u32,
    supported: u32,
    advertising: u32,
    speed: u16,
    duplex: u8,
    port: u8,
    phy_address: u8,
    transceiver: u8,
    autoneg: u8,
    mdio_support: u8,
    maxtxpkt: u32,
    maxrxpkt: u32,
    speed_hi: u16,
    eth_tp_mdix: u8,
    eth_tp_mdix_ctrl: u8,
    lp_advertising: u32,
    reserved: [u32; 2],
}

/// The link speed `ifname` reports, bit/s, asked with the `SIOCETHTOOL` ioctl on the socket
/// `fd` — what `ethtool IFNAME` prints as "Speed", and `/sys/class/net/IFNAME/speed`, but
/// answered for the socket's own network namespace whatever `/sys` shows. The host daemon uses
/// it when the configuration names no `link_rate`, so a 1 GbE host is booked and shaped as one
/// (issue 15: the old fixed default of 100 Mbit/s capped every faster host); the switch checks
/// each port's configured `rate` against it. `Err` says why there is none: a link that is down,
/// a driver without `get_link_ksettings` (a bridge without ports, a tun device).
pub fn link_speed(fd: i32, ifname: &str) -> Result<u64, String> {
    let bytes = ifname.as_bytes();
    if bytes.is_empty() || bytes.len() >= libc::IFNAMSIZ {
        return Err("not an interface name".to_string());
    }
    let mut cmd = EthtoolCmd {
        cmd: ETHTOOL_GSET,
        ..EthtoolCmd::default()
    };
    // SAFETY: `ifreq` is plain C data for which all-zero bytes are valid.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, &src) in req.ifr_name.iter_mut().zip(bytes) {
        *dst = src as libc::c_char;
    }
    req.ifr_ifru.ifru_data = (&mut cmd as *mut EthtoolCmd).cast();
    // SAFETY: `fd` is an open socket, `req` names the interface and points at `cmd`, a live
    // `struct ethtool_cmd`; the kernel writes only `cmd` (its size is the one ETHTOOL_GSET
    // copies).
    let rc = unsafe { libc::ioctl(fd, libc::SIOCETHTOOL, &mut req) };
    if rc < 0 {
        return Err(io::Error::last_os_error().to_string());
    }
    let speed = u32::from(cmd.speed_hi) << 16 | u32::from(cmd.speed);
    if speed == SPEED_UNKNOWN || speed == u32::from(u16::MAX) || speed == 0 {
        return Err("speed unknown: is the link up?".to_string());
    }
    Ok(u64::from(speed) * 1_000_000)
}

/// `ETHTOOL_GGRO`: get generic receive offload.
const ETHTOOL_GGRO: u32 = 0x0000_002b;
/// `ETHTOOL_SGRO`: set generic receive offload.
const ETHTOOL_SGRO: u32 = 0x0000_002c;

/// `struct ethtool_value` of `<linux/ethtool.h>`.
#[repr(C)]
struct EthtoolValue {
    cmd: u32,
    data: u32,
}

/// One `SIOCETHTOOL` request carrying a `struct ethtool_value`; returns its `data`.
fn value_request(fd: i32, ifname: &str, cmd: u32, data: u32) -> io::Result<u32> {
    let bytes = ifname.as_bytes();
    if bytes.is_empty() || bytes.len() >= libc::IFNAMSIZ {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not an interface name",
        ));
    }
    let mut value = EthtoolValue { cmd, data };
    // SAFETY: `ifreq` is plain C data for which all-zero bytes are valid.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, &src) in req.ifr_name.iter_mut().zip(bytes) {
        *dst = src as libc::c_char;
    }
    req.ifr_ifru.ifru_data = (&mut value as *mut EthtoolValue).cast();
    // SAFETY: `fd` is an open socket, `req` names the interface and points at `value`, a live
    // `struct ethtool_value`, the only thing the kernel reads or writes for these commands.
    let rc = unsafe { libc::ioctl(fd, libc::SIOCETHTOOL, &mut req) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(value.data)
}

/// Whether `ifname` runs GRO (`ethtool -k IFNAME`'s "generic-receive-offload").
pub fn gro(fd: i32, ifname: &str) -> io::Result<bool> {
    value_request(fd, ifname, ETHTOOL_GGRO, 0).map(|d| d != 0)
}

/// Turns GRO on `ifname` on or off (`ethtool -K IFNAME gro on|off`; needs `CAP_NET_ADMIN`).
pub fn set_gro(fd: i32, ifname: &str, on: bool) -> io::Result<()> {
    value_request(fd, ifname, ETHTOOL_SGRO, u32::from(on)).map(|_| ())
}
