//! The best-effort fast paths (`docs/fastpath.md`): the BPF maps every port's XDP program
//! shares — the switch's learnt stations (`fdb`) or the router's resolved forwarding table
//! (`fib`), which ports are open (`open`), where each port transmits (`tx`, a device map) and
//! what the programs forwarded (`fast`) — and the check that a port's driver can take
//! redirected frames.
//!
//! The cores decide what is in the maps (the switch's learning table and each port's openness,
//! EtheReal §3.3: best-effort frames may bypass the scheduler only between ports that carry no
//! reservation; the router's longest-prefix table and resolved neighbours, QSR §4.1, and its
//! ports' openness, QSR §3.1 and §6.2); this module only mirrors those decisions into the
//! kernel.

use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use rtlan_core::switch::FDB_CAPACITY;
use rtlan_wire::ethernet::Address;

use super::{AnyPort, BpfMap, FastPathProg, RouterFastProg};

/// `BPF_MAP_TYPE_HASH`, `_ARRAY` and `_DEVMAP` of `<linux/bpf.h>`.
const BPF_MAP_TYPE_HASH: u32 = 1;
const BPF_MAP_TYPE_ARRAY: u32 = 2;
const BPF_MAP_TYPE_DEVMAP: u32 = 14;
/// `BPF_MAP_TYPE_LPM_TRIE`, which the kernel allocates only with `BPF_F_NO_PREALLOC`.
const BPF_MAP_TYPE_LPM_TRIE: u32 = 11;
const BPF_F_NO_PREALLOC: u32 = 1;

/// The maps every fast path's programs share, per port: whether it is open (`open`), where it
/// transmits (`tx`, a device map) and what its program forwarded (`fast`).
#[derive(Debug)]
pub struct PortMaps {
    open: BpfMap,
    tx: BpfMap,
    stats: BpfMap,
}

impl PortMaps {
    fn new(ports: u32) -> io::Result<PortMaps> {
        Ok(PortMaps {
            open: BpfMap::new(BPF_MAP_TYPE_ARRAY, 4, 4, ports)?,
            tx: BpfMap::new(BPF_MAP_TYPE_DEVMAP, 4, 4, ports)?,
            stats: BpfMap::new(BPF_MAP_TYPE_ARRAY, 4, 16, ports)?,
        })
    }

    /// Port `port` transmits redirected frames on interface `ifindex`.
    pub fn set_tx(&self, port: u32, ifindex: u32) -> io::Result<()> {
        self.tx.update(&port.to_ne_bytes(), &ifindex.to_ne_bytes())
    }

    /// Opens or closes port `port`.
    pub fn set_open(&self, port: u32, open: bool) -> io::Result<()> {
        self.open
            .update(&port.to_ne_bytes(), &u32::from(open).to_ne_bytes())
    }

    /// Frames and bytes the programs forwarded from port `port` since the maps were made.
    pub fn forwarded(&self, port: u32) -> io::Result<(u64, u64)> {
        let v = self.stats.lookup(&port.to_ne_bytes())?.unwrap_or_default();
        let at = |i: usize| {
            v.get(i..i + 8)
                .map_or(0, |b| u64::from_ne_bytes(b.try_into().expect("8 bytes")))
        };
        Ok((at(0), at(8)))
    }

    /// Enters each of `ports` that can take part in the device map, logging which can and
    /// which cannot: per port, why it can never open (`None`: it can). A port takes part only
    /// if it has the program: an AF_XDP port whose driver takes redirected frames, or an
    /// AF_PACKET port with its TC program (whose redirects are plain transmits).
    pub fn attach(&self, ports: &[AnyPort]) -> Vec<Option<String>> {
        let off: Vec<Option<String>> = ports
            .iter()
            .enumerate()
            .map(|(i, port)| {
                let ifindex = crate::driver::Port::ifindex(port);
                match port {
                    AnyPort::Xdp(_) => {
                        if let Some(problem) = redirect_target_problem(ifindex) {
                            return Some(problem);
                        }
                    }
                    AnyPort::TcPacket(p) if p.has_program() => {}
                    AnyPort::TcPacket(_) => {
                        return Some("its TC program could not be attached".to_string())
                    }
                    AnyPort::Packet(_) => {
                        return Some("an AF_PACKET port without the TC program".to_string())
                    }
                }
                match self.set_tx(i as u32, ifindex) {
                    Ok(()) => None,
                    Err(e) => Some(format!("its device-map entry failed: {e}")),
                }
            })
            .collect();
        for (port, why) in ports.iter().zip(&off) {
            match why {
                None => tracing::info!(ifname = crate::driver::Port::ifname(port), "fast path on"),
                Some(why) => tracing::warn!(
                    ifname = crate::driver::Port::ifname(port),
                    "fast path off: {why}"
                ),
            }
        }
        off
    }
}

/// A node's fast-path maps, made by `make` when `fast_path` is on (every port kind has the
/// programs: XDP on AF_XDP ports, the node's TC program on AF_PACKET ports); `None` otherwise,
/// or (logged) when they cannot be made — the node then forwards everything through its core.
pub fn maps_for<T>(fast_path: bool, make: impl FnOnce() -> io::Result<T>) -> Option<T> {
    if !fast_path {
        return None;
    }
    make()
        .map_err(|e| tracing::warn!("fast path off: its maps could not be created: {e}"))
        .ok()
}

/// Per port: whether the node's control frames wait on the driver, so that the port stays
/// closed to the fast path (docs/fastpath.md "The protected control channel"). Sampled after
/// each transmit: a port is held while control frames wait in the core's control queue, and
/// from the transmit that handed the driver a control frame until the kernel has taken every
/// frame handed to it by then (the control frame among them) — on a veth whose peer's ring is
/// full that is when the ring has drained, which no redirected frame can refill while the port
/// is closed. Data the core sends later does not prolong the hold.
#[derive(Debug)]
pub struct ControlHold {
    /// Per port: the core's control-frame count at the last sample.
    sent: Vec<u64>,
    /// Per port: the driver's transmit count the kernel must reach before the hold ends.
    until: Vec<Option<u64>>,
    /// Per port: whether the port is held.
    held: Vec<bool>,
    /// Per port: holds begun.
    holds: Vec<u64>,
}

impl ControlHold {
    /// Nothing held on `ports` ports.
    pub fn new(ports: usize) -> ControlHold {
        ControlHold {
            sent: vec![0; ports],
            until: vec![None; ports],
            held: vec![false; ports],
            holds: vec![0; ports],
        }
    }

    /// After a transmit on port `i`: `control_sent` and `control_waiting` are the core's (its
    /// control frames handed out so far; whether any wait in its queue).
    pub fn sample(&mut self, i: usize, port: &AnyPort, control_sent: u64, control_waiting: bool) {
        use crate::driver::Port as _;
        let (Some(sent), Some(until), Some(held), Some(holds)) = (
            self.sent.get_mut(i),
            self.until.get_mut(i),
            self.held.get_mut(i),
            self.holds.get_mut(i),
        ) else {
            return;
        };
        let handed = port.counters().tx_frames;
        let taken = handed.saturating_sub(port.tx_unsent());
        if control_sent != *sent {
            *sent = control_sent;
            *until = Some(handed);
        }
        if until.is_some_and(|u| taken >= u) {
            *until = None;
        }
        let now = control_waiting || until.is_some();
        *holds += u64::from(now && !*held);
        *held = now;
    }

    /// Whether port `i` is held closed.
    pub fn held(&self, i: usize) -> bool {
        self.held.get(i).copied().unwrap_or(false)
    }

    /// Holds begun on port `i`.
    pub fn holds(&self, i: usize) -> u64 {
        self.holds.get(i).copied().unwrap_or(0)
    }
}

/// A mirror's side of the `open` map: what it last wrote per port, why a port can never open,
/// whether the node's control frames hold it closed ([`ControlHold`]), and the map updates that
/// failed — after one, every port is closed for good, so a broken mirror degrades to the slow
/// path, never to frames the core would not have forwarded.
#[derive(Debug)]
pub struct Gates {
    /// Per port: why it can never open (`None`: it can).
    off: Vec<Option<String>>,
    /// Per port: what `open` says now.
    open: Vec<bool>,
    /// Per port: whether the node's control frames wait on the driver.
    pub hold: ControlHold,
    /// Map updates that failed.
    errors: u64,
}

impl Gates {
    /// Every port of `ports` closed, those that can take part entered in `maps`'s device map.
    pub fn new(maps: &PortMaps, ports: &[AnyPort]) -> Gates {
        let off = maps.attach(ports);
        Gates {
            open: vec![false; off.len()],
            hold: ControlHold::new(off.len()),
            off,
            errors: 0,
        }
    }

    /// Ports.
    pub fn len(&self) -> usize {
        self.open.len()
    }

    /// Whether there are no ports.
    pub fn is_empty(&self) -> bool {
        self.open.is_empty()
    }

    /// Why port `i` can never open, if it cannot.
    pub fn off(&self, i: usize) -> Option<&str> {
        self.off.get(i).and_then(|o| o.as_deref())
    }

    /// Opens port `i` if `want` and it is neither off nor held, else closes it.
    pub fn set(&mut self, maps: &PortMaps, i: usize, want: bool) {
        let want = want && self.off(i).is_none() && !self.hold.held(i);
        if self.open.get(i).is_some_and(|&open| open != want) {
            match maps.set_open(i as u32, want) {
                Ok(()) => self.open[i] = want,
                Err(e) => self.failed(maps, "opening or closing a port", &e),
            }
        }
    }

    /// A map update failed: logged, counted, and every port closed for good.
    pub fn failed(&mut self, maps: &PortMaps, what: &str, e: &io::Error) {
        self.errors += 1;
        tracing::warn!("fast path: {what}: {e}; closing every port");
        for (i, open) in self.open.iter_mut().enumerate() {
            if *open {
                *open = false;
                let _ = maps.set_open(i as u32, false);
            }
        }
        for off in &mut self.off {
            off.get_or_insert_with(|| "a map update failed".to_string());
        }
    }

    /// After a transmit: notes, port by port, whether the node's control frames wait on the
    /// driver; `control(i)` is the core's (control frames handed out of port `i` so far,
    /// whether any wait in its control queue).
    pub fn sample(&mut self, ports: &[AnyPort], control: impl Fn(u16) -> (u64, bool)) {
        for (i, port) in ports.iter().enumerate() {
            let (sent, waiting) = control(i as u16);
            self.hold.sample(i, port, sent, waiting);
        }
    }

    /// Map updates that failed.
    pub fn errors(&self) -> u64 {
        self.errors
    }
}

/// The switch's fast-path maps: the learnt stations (`fdb`) and the per-port maps.
#[derive(Debug)]
pub struct FastPath {
    fdb: BpfMap,
    ports: PortMaps,
}

fn mac_key(mac: Address) -> [u8; 8] {
    let mut key = [0u8; 8];
    key[..6].copy_from_slice(&mac.0);
    key
}

impl FastPath {
    /// Empty maps for `ports` ports: no station, every port closed.
    pub fn new(ports: u32) -> io::Result<FastPath> {
        Ok(FastPath {
            // As many stations as the switch's learning table holds, which it mirrors.
            fdb: BpfMap::new(BPF_MAP_TYPE_HASH, 8, 4, FDB_CAPACITY as u32)?,
            ports: PortMaps::new(ports)?,
        })
    }

    /// The per-port maps.
    pub fn ports(&self) -> &PortMaps {
        &self.ports
    }

    /// What port `port`'s program needs to use these maps.
    pub fn program_for(&self, port: u32, max_frame: u32) -> FastPathProg {
        FastPathProg {
            port,
            max_frame,
            fdb_fd: self.fdb.fd(),
            open_fd: self.ports.open.fd(),
            tx_fd: self.ports.tx.fd(),
            stats_fd: self.ports.stats.fd(),
        }
    }

    /// Station `mac` is on port `port`.
    pub fn learn(&self, mac: Address, port: u32) -> io::Result<()> {
        self.fdb.update(&mac_key(mac), &port.to_ne_bytes())
    }

    /// Station `mac` is no longer known.
    pub fn forget(&self, mac: Address) -> io::Result<()> {
        self.fdb.delete(&mac_key(mac)).map(|_| ())
    }

    /// Every station in the table, with its port.
    pub fn stations(&self) -> io::Result<Vec<(Address, u32)>> {
        let mut out = Vec::new();
        for key in self.fdb.keys()? {
            let Some(value) = self.fdb.lookup(&key)? else {
                continue;
            };
            let mut mac = [0u8; 6];
            mac.copy_from_slice(&key[..6]);
            let port = u32::from_ne_bytes(value[..4].try_into().expect("4-byte value"));
            out.push((Address(mac), port));
        }
        Ok(out)
    }

    /// Empties the station table (before it is filled again from the switch's).
    pub fn forget_all(&self) -> io::Result<()> {
        for key in self.fdb.keys()? {
            self.fdb.delete(&key)?;
        }
        Ok(())
    }
}

/// Prefixes the router's `fib` map holds at most; a forwarding table larger than this keeps
/// the router's fast path closed (its mirror says so).
pub const ROUTER_FIB_CAPACITY: u32 = 262_144;

/// The `fib` value of a prefix whose packets go to the router's core.
pub const TO_CORE: u32 = u32::MAX;

/// The router's fast-path maps (docs/fastpath.md "The router"): the forwarding table as the
/// program reads it (`fib`, a longest-prefix-match trie of resolved next hops) and the
/// per-port maps.
#[derive(Debug)]
pub struct RouterFastPath {
    fib: BpfMap,
    ports: PortMaps,
}

/// The `fib` key of `prefix`: `struct bpf_lpm_trie_key_u8` (prefix length, host order; then
/// the address, network order).
fn lpm_key(addr: Ipv4Addr, len: u8) -> [u8; 8] {
    let mut key = [0u8; 8];
    key[..4].copy_from_slice(&u32::from(len).to_ne_bytes());
    key[4..].copy_from_slice(&addr.octets());
    key
}

impl RouterFastPath {
    /// Empty maps for a router of `ports` ports: no prefix, every port closed.
    pub fn new(ports: u32) -> io::Result<RouterFastPath> {
        Ok(RouterFastPath {
            fib: BpfMap::with_flags(
                BPF_MAP_TYPE_LPM_TRIE,
                8,
                16,
                ROUTER_FIB_CAPACITY,
                BPF_F_NO_PREALLOC,
            )?,
            ports: PortMaps::new(ports)?,
        })
    }

    /// The per-port maps.
    pub fn ports(&self) -> &PortMaps {
        &self.ports
    }

    /// What port `port`, of MAC `mac`, needs to use these maps.
    pub fn program_for(&self, port: u32, mac: Address, max_frame: u32) -> RouterFastProg {
        RouterFastProg {
            port,
            mac: mac.0,
            max_frame,
            fib_fd: self.fib.fd(),
            open_fd: self.ports.open.fd(),
            tx_fd: self.ports.tx.fd(),
            stats_fd: self.ports.stats.fd(),
        }
    }

    /// Packets whose longest match is `addr/len` go out of `port` to `dst` from `src`, or to
    /// the core (`hop` `None`).
    pub fn set_route(
        &self,
        addr: Ipv4Addr,
        len: u8,
        hop: Option<(u32, Address, Address)>,
    ) -> io::Result<()> {
        let mut value = [0u8; 16];
        match hop {
            Some((port, dst, src)) => {
                value[..4].copy_from_slice(&port.to_ne_bytes());
                value[4..10].copy_from_slice(&dst.0);
                value[10..16].copy_from_slice(&src.0);
            }
            None => value[..4].copy_from_slice(&TO_CORE.to_ne_bytes()),
        }
        self.fib.update(&lpm_key(addr, len), &value)
    }

    /// Removes prefix `addr/len`.
    pub fn remove_route(&self, addr: Ipv4Addr, len: u8) -> io::Result<()> {
        self.fib.delete(&lpm_key(addr, len)).map(|_| ())
    }

    /// The entry the program finds for `dst` (its longest match): the output port, or
    /// `TO_CORE`, and the two MACs; `None` if no prefix matches.
    pub fn lookup(&self, dst: Ipv4Addr) -> io::Result<Option<(u32, Address, Address)>> {
        Ok(self.fib.lookup(&lpm_key(dst, 32))?.map(|v| {
            let port = u32::from_ne_bytes(v[..4].try_into().expect("4 bytes"));
            let mut dst = [0u8; 6];
            let mut src = [0u8; 6];
            dst.copy_from_slice(&v[4..10]);
            src.copy_from_slice(&v[10..16]);
            (port, Address(dst), Address(src))
        }))
    }
}

/// `NETLINK_GENERIC`, the controller's family id and commands (`<linux/genetlink.h>`), and the
/// netdev family's (`<linux/netdev.h>`).
const NETLINK_GENERIC: i32 = 16;
const GENL_ID_CTRL: u16 = 0x10;
const CTRL_CMD_GETFAMILY: u8 = 3;
const CTRL_ATTR_FAMILY_ID: u16 = 1;
const CTRL_ATTR_FAMILY_NAME: u16 = 2;
const NETDEV_CMD_DEV_GET: u8 = 1;
const NETDEV_A_DEV_IFINDEX: u16 = 1;
const NETDEV_A_DEV_XDP_FEATURES: u16 = 3;
/// `NETDEV_XDP_ACT_NDO_XMIT`: the device takes frames redirected to it.
pub const XDP_ACT_NDO_XMIT: u64 = 4;
const NLMSG_ERROR: u16 = 2;
const NLM_F_REQUEST: u16 = 1;

/// One generic-netlink request and its answer's top-level attributes.
fn genl_request(family: u16, cmd: u8, attrs: &[(u16, &[u8])]) -> io::Result<Vec<(u16, Vec<u8>)>> {
    // SAFETY: plain socket(2) call; the descriptor is owned below.
    let fd = unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            NETLINK_GENERIC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a new descriptor nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut body = vec![cmd, 1, 0, 0];
    for (kind, value) in attrs {
        let len = 4 + value.len();
        body.extend_from_slice(&(len as u16).to_ne_bytes());
        body.extend_from_slice(&kind.to_ne_bytes());
        body.extend_from_slice(value);
        body.resize(body.len().next_multiple_of(4), 0);
    }
    let mut msg = Vec::with_capacity(16 + body.len());
    msg.extend_from_slice(&((16 + body.len()) as u32).to_ne_bytes());
    msg.extend_from_slice(&family.to_ne_bytes());
    msg.extend_from_slice(&NLM_F_REQUEST.to_ne_bytes());
    msg.extend_from_slice(&1u32.to_ne_bytes());
    msg.extend_from_slice(&0u32.to_ne_bytes());
    msg.extend_from_slice(&body);
    // SAFETY: `msg` is a valid buffer of the length passed.
    if unsafe { libc::send(fd.as_raw_fd(), msg.as_ptr().cast(), msg.len(), 0) } < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut buf = vec![0u8; 16 * 1024];
    // SAFETY: `buf` is writable for its length.
    let n = unsafe { libc::recv(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let data = &buf[..n as usize];
    parse_genl_reply(data)
}

/// The top-level attributes of a generic-netlink reply (one message), or its error.
fn parse_genl_reply(data: &[u8]) -> io::Result<Vec<(u16, Vec<u8>)>> {
    let malformed = || io::Error::new(io::ErrorKind::InvalidData, "malformed netlink reply");
    let u16_at = |at: usize| -> Option<u16> {
        data.get(at..at + 2)
            .map(|b| u16::from_ne_bytes([b[0], b[1]]))
    };
    let len = data
        .get(0..4)
        .map(|b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]) as usize)
        .ok_or_else(malformed)?;
    if len < 16 || len > data.len() {
        return Err(malformed());
    }
    if u16_at(4) == Some(NLMSG_ERROR) {
        let errno = data
            .get(16..20)
            .map(|b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
            .ok_or_else(malformed)?;
        return Err(io::Error::from_raw_os_error(-errno));
    }
    let mut out = Vec::new();
    let mut at = 20; // nlmsghdr + genlmsghdr
    while at + 4 <= len {
        let alen = usize::from(u16_at(at).ok_or_else(malformed)?);
        let kind = u16_at(at + 2).ok_or_else(malformed)? & 0x3fff;
        if alen < 4 || at + alen > len {
            return Err(malformed());
        }
        out.push((kind, data[at + 4..at + alen].to_vec()));
        at += alen.next_multiple_of(4);
    }
    Ok(out)
}

/// The XDP features (`NETDEV_XDP_ACT_*`) interface `ifindex` of the calling thread's namespace
/// reports through the netdev generic-netlink family.
pub fn xdp_features(ifindex: u32) -> io::Result<u64> {
    let family = genl_request(
        GENL_ID_CTRL,
        CTRL_CMD_GETFAMILY,
        &[(CTRL_ATTR_FAMILY_NAME, b"netdev\0")],
    )?
    .into_iter()
    .find(|(k, _)| *k == CTRL_ATTR_FAMILY_ID)
    .and_then(|(_, v)| v.get(..2).map(|b| u16::from_ne_bytes([b[0], b[1]])))
    .ok_or_else(|| io::Error::new(io::ErrorKind::Unsupported, "no netdev netlink family"))?;
    genl_request(
        family,
        NETDEV_CMD_DEV_GET,
        &[(NETDEV_A_DEV_IFINDEX, &ifindex.to_ne_bytes())],
    )?
    .into_iter()
    .find(|(k, _)| *k == NETDEV_A_DEV_XDP_FEATURES)
    .and_then(|(_, v)| {
        v.get(..8)
            .map(|b| u64::from_ne_bytes(b.try_into().expect("8")))
    })
    .ok_or_else(|| io::Error::new(io::ErrorKind::Unsupported, "no XDP features reported"))
}

/// Why interface `ifindex` cannot take frames redirected to it, or `None` if it can.
pub fn redirect_target_problem(ifindex: u32) -> Option<String> {
    match xdp_features(ifindex) {
        Ok(f) if f & XDP_ACT_NDO_XMIT != 0 => None,
        Ok(_) => Some(
            "its driver takes no redirected frames (on a veth: turn GRO on at the other end, \
             `ethtool -K <peer> gro on`)"
                .into(),
        ),
        Err(e) => Some(format!("its XDP features could not be read: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn genl_replies_are_walked_bounds_checked() {
        // An error reply carries the negated errno after the header.
        let mut err = vec![0u8; 36];
        err[0..4].copy_from_slice(&36u32.to_ne_bytes());
        err[4..6].copy_from_slice(&NLMSG_ERROR.to_ne_bytes());
        err[16..20].copy_from_slice(&(-libc::ENODEV).to_ne_bytes());
        assert_eq!(
            parse_genl_reply(&err).unwrap_err().raw_os_error(),
            Some(libc::ENODEV)
        );
        // One u64 attribute.
        let mut ok = vec![0u8; 20];
        ok.extend_from_slice(&12u16.to_ne_bytes());
        ok.extend_from_slice(&NETDEV_A_DEV_XDP_FEATURES.to_ne_bytes());
        ok.extend_from_slice(&7u64.to_ne_bytes());
        let len = ok.len() as u32;
        ok[0..4].copy_from_slice(&len.to_ne_bytes());
        ok[4..6].copy_from_slice(&0x20u16.to_ne_bytes());
        let attrs = parse_genl_reply(&ok).expect("parses");
        assert_eq!(
            attrs,
            vec![(NETDEV_A_DEV_XDP_FEATURES, 7u64.to_ne_bytes().to_vec())]
        );
        // Truncations are errors, never panics.
        for cut in 0..ok.len() {
            let mut short = ok[..cut].to_vec();
            if short.len() >= 4 {
                short[0..4].copy_from_slice(&(cut as u32).to_ne_bytes());
            }
            let _ = parse_genl_reply(&short);
        }
        let mut bad = ok.clone();
        bad[20..22].copy_from_slice(&200u16.to_ne_bytes());
        assert!(parse_genl_reply(&bad).is_err());
    }
}
