//! XDP for AF_XDP ports (`docs/afxdp.md`): the steering program ([`prog`]) and the `bpf(2)`
//! calls that create its socket map, load it, attach it to an interface and run it on test
//! frames. Written against the system call directly: the program is tiny and hand-assembled, and
//! the BPF crates (aya, libbpf-rs) exist to load compiled objects — one needs a BPF toolchain,
//! the other libbpf in C.

pub mod fastpath;
pub mod port;
pub mod prog;
pub mod tcport;

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

pub use fastpath::{ControlHold, FastPath, Gates, PortMaps, RouterFastPath};
pub use port::{XdpError, XdpPort};
pub use prog::{
    program, FastPathProg, Insn, RouterFastProg, Steering, XDP_ABORTED, XDP_DROP, XDP_PASS,
    XDP_REDIRECT,
};
pub use tcport::{TcPacketPort, TcPacketPortError};

const BPF_MAP_CREATE: libc::c_long = 0;
const BPF_MAP_LOOKUP_ELEM: libc::c_long = 1;
const BPF_MAP_UPDATE_ELEM: libc::c_long = 2;
const BPF_MAP_DELETE_ELEM: libc::c_long = 3;
const BPF_MAP_GET_NEXT_KEY: libc::c_long = 4;
const BPF_PROG_LOAD: libc::c_long = 5;
const BPF_PROG_TEST_RUN: libc::c_long = 10;
const BPF_LINK_CREATE: libc::c_long = 28;
const BPF_MAP_TYPE_XSKMAP: u32 = 17;
const BPF_PROG_TYPE_XDP: u32 = 6;
const BPF_XDP: u32 = 37;
/// `BPF_PROG_TYPE_SCHED_CLS`: a TC program.
const BPF_PROG_TYPE_SCHED_CLS: u32 = 3;
/// `BPF_TCX_INGRESS` (Linux 6.6): a TC program on an interface's ingress through a link, no
/// qdisc needed.
const BPF_TCX_INGRESS: u32 = 46;

/// `union bpf_attr` as bytes: every command reads its own prefix of it.
#[repr(C, align(8))]
struct Attr([u8; 128]);

impl Attr {
    fn new() -> Attr {
        Attr([0; 128])
    }

    fn u32(&mut self, at: usize, v: u32) -> &mut Attr {
        self.0[at..at + 4].copy_from_slice(&v.to_ne_bytes());
        self
    }

    fn u64(&mut self, at: usize, v: u64) -> &mut Attr {
        self.0[at..at + 8].copy_from_slice(&v.to_ne_bytes());
        self
    }

    fn get_u32(&self, at: usize) -> u32 {
        u32::from_ne_bytes(self.0[at..at + 4].try_into().expect("4 bytes"))
    }
}

/// `XDP_FLAGS_SKB_MODE` and `XDP_FLAGS_DRV_MODE` of `<linux/if_link.h>`.
const XDP_FLAGS_SKB_MODE: u32 = 1 << 1;
const XDP_FLAGS_DRV_MODE: u32 = 1 << 2;

/// Where an attached XDP program runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XdpMode {
    /// In the driver, before any skb (the fast path).
    Native,
    /// In the generic hook after the skb is built: the driver has no native XDP.
    Generic,
}

fn bpf(cmd: libc::c_long, attr: &mut Attr) -> io::Result<libc::c_long> {
    // SAFETY: `attr` is a valid, writable `union bpf_attr` of 128 bytes whose unused fields are
    // zero, as the kernel requires; the size passed is its size.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd,
            attr.0.as_mut_ptr(),
            std::mem::size_of::<Attr>() as libc::c_uint,
        )
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

fn owned(fd: libc::c_long) -> OwnedFd {
    // SAFETY: the kernel returned a new descriptor that nothing else owns.
    unsafe { OwnedFd::from_raw_fd(fd as RawFd) }
}

/// An XSKMAP: receive queue → AF_XDP socket.
#[derive(Debug)]
pub struct XskMap {
    fd: OwnedFd,
}

impl XskMap {
    /// A map for `queues` receive queues.
    pub fn new(queues: u32) -> io::Result<XskMap> {
        let mut attr = Attr::new();
        attr.u32(0, BPF_MAP_TYPE_XSKMAP)
            .u32(4, 4)
            .u32(8, 4)
            .u32(12, queues.max(1));
        Ok(XskMap {
            fd: owned(bpf(BPF_MAP_CREATE, &mut attr)?),
        })
    }

    /// Sends queue `queue`'s frames to the socket `socket`.
    pub fn insert(&self, queue: u32, socket: RawFd) -> io::Result<()> {
        let key = queue;
        let value = socket as u32;
        let mut attr = Attr::new();
        attr.u32(0, self.fd.as_raw_fd() as u32)
            .u64(8, &key as *const u32 as u64)
            .u64(16, &value as *const u32 as u64);
        bpf(BPF_MAP_UPDATE_ELEM, &mut attr).map(|_| ())
    }

    /// The map's descriptor.
    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// A BPF map of fixed key and value sizes, accessed with the map system calls.
#[derive(Debug)]
pub struct BpfMap {
    fd: OwnedFd,
    key_size: usize,
    value_size: usize,
}

impl BpfMap {
    /// A map of `map_type` (`BPF_MAP_TYPE_*`) with `max_entries` entries.
    pub fn new(
        map_type: u32,
        key_size: u32,
        value_size: u32,
        max_entries: u32,
    ) -> io::Result<BpfMap> {
        BpfMap::with_flags(map_type, key_size, value_size, max_entries, 0)
    }

    /// [`BpfMap::new`] with `map_flags` (`BPF_F_*`).
    pub fn with_flags(
        map_type: u32,
        key_size: u32,
        value_size: u32,
        max_entries: u32,
        map_flags: u32,
    ) -> io::Result<BpfMap> {
        let mut attr = Attr::new();
        attr.u32(0, map_type)
            .u32(4, key_size)
            .u32(8, value_size)
            .u32(12, max_entries.max(1))
            .u32(16, map_flags);
        Ok(BpfMap {
            fd: owned(bpf(BPF_MAP_CREATE, &mut attr)?),
            key_size: key_size as usize,
            value_size: value_size as usize,
        })
    }

    fn attr(&self, key: &[u8], value: *const u8) -> Attr {
        let mut attr = Attr::new();
        attr.u32(0, self.fd.as_raw_fd() as u32)
            .u64(8, key.as_ptr() as u64)
            .u64(16, value as u64);
        attr
    }

    /// Sets `key` to `value` (both of the map's sizes).
    pub fn update(&self, key: &[u8], value: &[u8]) -> io::Result<()> {
        if key.len() != self.key_size || value.len() != self.value_size {
            return Err(io::ErrorKind::InvalidInput.into());
        }
        bpf(BPF_MAP_UPDATE_ELEM, &mut self.attr(key, value.as_ptr())).map(|_| ())
    }

    /// Removes `key`; `Ok(false)` if it was not there.
    pub fn delete(&self, key: &[u8]) -> io::Result<bool> {
        if key.len() != self.key_size {
            return Err(io::ErrorKind::InvalidInput.into());
        }
        match bpf(BPF_MAP_DELETE_ELEM, &mut self.attr(key, std::ptr::null())) {
            Ok(_) => Ok(true),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The value of `key`, if present.
    pub fn lookup(&self, key: &[u8]) -> io::Result<Option<Vec<u8>>> {
        if key.len() != self.key_size {
            return Err(io::ErrorKind::InvalidInput.into());
        }
        let mut value = vec![0u8; self.value_size];
        match bpf(BPF_MAP_LOOKUP_ELEM, &mut self.attr(key, value.as_mut_ptr())) {
            Ok(_) => Ok(Some(value)),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Every key in the map (a hash map's, in the kernel's order).
    pub fn keys(&self) -> io::Result<Vec<Vec<u8>>> {
        let mut keys = Vec::new();
        let mut next = vec![0u8; self.key_size];
        loop {
            let prev = keys.last().cloned();
            let mut attr = Attr::new();
            attr.u32(0, self.fd.as_raw_fd() as u32)
                .u64(8, prev.as_ref().map_or(0, |k: &Vec<u8>| k.as_ptr() as u64))
                .u64(16, next.as_mut_ptr() as u64);
            match bpf(BPF_MAP_GET_NEXT_KEY, &mut attr) {
                Ok(_) => keys.push(next.clone()),
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(keys),
                Err(e) => return Err(e),
            }
        }
    }

    /// The map's descriptor.
    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// A loaded XDP program.
#[derive(Debug)]
pub struct XdpProgram {
    fd: OwnedFd,
}

impl XdpProgram {
    /// Loads `insns`; a refusal carries the verifier's log.
    pub fn load(insns: &[Insn], name: &str) -> io::Result<XdpProgram> {
        Self::load_typed(insns, name, BPF_PROG_TYPE_XDP, BPF_XDP)
    }

    /// Loads `insns` as a TC program (for [`XdpProgram::attach_tc_ingress`]); a refusal
    /// carries the verifier's log.
    pub fn load_tc(insns: &[Insn], name: &str) -> io::Result<XdpProgram> {
        Self::load_typed(insns, name, BPF_PROG_TYPE_SCHED_CLS, 0)
    }

    fn load_typed(
        insns: &[Insn],
        name: &str,
        prog_type: u32,
        attach_type: u32,
    ) -> io::Result<XdpProgram> {
        let bytes: Vec<u8> = insns.iter().flat_map(|i| i.to_bytes()).collect();
        let license = c"GPL";
        let mut log = vec![0u8; 64 * 1024];
        let mut attr = Attr::new();
        attr.u32(0, prog_type)
            .u32(4, insns.len() as u32)
            .u64(8, bytes.as_ptr() as u64)
            .u64(16, license.as_ptr() as u64)
            .u32(24, 1)
            .u32(28, log.len() as u32)
            .u64(32, log.as_mut_ptr() as u64)
            .u32(68, attach_type);
        let n = name.as_bytes();
        let n = &n[..n.len().min(15)];
        attr.0[48..48 + n.len()].copy_from_slice(n);
        match bpf(BPF_PROG_LOAD, &mut attr) {
            Ok(fd) => Ok(XdpProgram { fd: owned(fd) }),
            Err(e) => {
                let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
                let text = String::from_utf8_lossy(&log[..end]);
                Err(io::Error::new(
                    e.kind(),
                    format!("loading the BPF program: {e}; verifier: {}", text.trim()),
                ))
            }
        }
    }

    /// Attaches the program to interface `ifindex` until the returned link is dropped: in the
    /// driver (native XDP) where the driver offers it, else as generic XDP, which works on every
    /// interface but runs after the kernel has built an skb (slower). The mode is asked for
    /// explicitly, so the one returned is the one in force.
    pub fn attach(&self, ifindex: u32) -> io::Result<(OwnedFd, XdpMode)> {
        let link = |flags: u32| {
            let mut attr = Attr::new();
            attr.u32(0, self.fd.as_raw_fd() as u32)
                .u32(4, ifindex)
                .u32(8, BPF_XDP)
                .u32(12, flags);
            bpf(BPF_LINK_CREATE, &mut attr).map(owned)
        };
        match link(XDP_FLAGS_DRV_MODE) {
            Ok(fd) => Ok((fd, XdpMode::Native)),
            Err(native) => link(XDP_FLAGS_SKB_MODE)
                .map(|fd| (fd, XdpMode::Generic))
                .map_err(|generic| {
                    io::Error::new(
                        generic.kind(),
                        format!("native XDP: {native}; generic XDP: {generic}"),
                    )
                }),
        }
    }

    /// Attaches a TC program ([`XdpProgram::load_tc`]) to the ingress of interface `ifindex`
    /// (tcx) until the returned link is dropped: it runs on every frame received, after the
    /// packet taps and before the protocol handlers.
    pub fn attach_tc_ingress(&self, ifindex: u32) -> io::Result<OwnedFd> {
        let mut attr = Attr::new();
        attr.u32(0, self.fd.as_raw_fd() as u32)
            .u32(4, ifindex)
            .u32(8, BPF_TCX_INGRESS);
        bpf(BPF_LINK_CREATE, &mut attr).map(owned)
    }

    /// Runs the program once on `frame` (`BPF_PROG_TEST_RUN`) and returns its verdict.
    pub fn test_run(&self, frame: &[u8]) -> io::Result<u32> {
        self.test_run_frame(frame).map(|(verdict, _)| verdict)
    }

    /// Runs the program once on `frame` and returns its verdict and the frame as the program
    /// left it.
    pub fn test_run_frame(&self, frame: &[u8]) -> io::Result<(u32, Vec<u8>)> {
        let mut out = vec![0u8; frame.len() + 256];
        let mut attr = Attr::new();
        attr.u32(0, self.fd.as_raw_fd() as u32)
            .u32(8, frame.len() as u32)
            .u32(12, out.len() as u32)
            .u64(16, frame.as_ptr() as u64)
            .u64(24, out.as_mut_ptr() as u64)
            .u32(32, 1);
        bpf(BPF_PROG_TEST_RUN, &mut attr)?;
        out.truncate(attr.get_u32(12) as usize);
        Ok((attr.get_u32(4), out))
    }

    /// Runs a TC program once on `frame` as an skb whose `skb_shinfo` says `gso_segs` and
    /// `gso_size` (a super-frame when `gso_size` is not 0), and returns its verdict and the
    /// frame as the program left it. The context passed is a `struct __sk_buff` with only those
    /// two fields set (`BPF_PROG_TEST_RUN` refuses most others non-zero, `vlan_present`
    /// among them); the kernel takes a frame of at most about a page here.
    pub fn test_run_skb(
        &self,
        frame: &[u8],
        gso_segs: u32,
        gso_size: u32,
    ) -> io::Result<(u32, Vec<u8>)> {
        // `struct __sk_buff` (192 bytes): gso_segs at 164, gso_size at 176.
        let mut ctx = [0u8; 192];
        ctx[164..168].copy_from_slice(&gso_segs.to_ne_bytes());
        ctx[176..180].copy_from_slice(&gso_size.to_ne_bytes());
        let mut out = vec![0u8; frame.len() + 256];
        let mut attr = Attr::new();
        attr.u32(0, self.fd.as_raw_fd() as u32)
            .u32(8, frame.len() as u32)
            .u32(12, out.len() as u32)
            .u64(16, frame.as_ptr() as u64)
            .u64(24, out.as_mut_ptr() as u64)
            .u32(32, 1)
            .u32(40, ctx.len() as u32)
            .u64(48, ctx.as_ptr() as u64);
        bpf(BPF_PROG_TEST_RUN, &mut attr)?;
        out.truncate(attr.get_u32(12) as usize);
        Ok((attr.get_u32(4), out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn root() -> bool {
        // SAFETY: geteuid has no preconditions.
        unsafe { libc::geteuid() == 0 }
    }

    fn frame(ethertype: u16, ip: Option<(u8, u8, Ipv4Addr)>) -> Vec<u8> {
        let mut f = vec![0u8; 14];
        f[0..6].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
        f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
        f[12..14].copy_from_slice(&ethertype.to_be_bytes());
        if let Some((ihl, protocol, dst)) = ip {
            let mut h = vec![0u8; usize::from(ihl) * 4];
            h[0] = 0x40 | ihl;
            h[8] = 64;
            h[9] = protocol;
            h[12..16].copy_from_slice(&[198, 18, 1, 101]);
            h[16..20].copy_from_slice(&dst.octets());
            f.extend_from_slice(&h);
            f.extend_from_slice(&[0u8; 26]);
        } else {
            f.extend_from_slice(&[0u8; 46]);
        }
        f
    }

    /// Every case of the module doc of `prog`, through the kernel's own verifier and
    /// interpreter. The fallback is `XDP_DROP`, so that "to the socket" (no socket in the map)
    /// is told from "to the kernel".
    #[test]
    fn the_kernel_runs_the_router_steering_as_documented() {
        if !root() {
            eprintln!("skipping: loading BPF needs root");
            return;
        }
        let map = XskMap::new(4).expect("XSKMAP");
        let steering = Steering::Router {
            addresses: vec![
                (Ipv4Addr::new(198, 18, 1, 1), 24),
                (Ipv4Addr::new(198, 18, 2, 1), 24),
            ],
            fast: None,
        };
        let prog = XdpProgram::load(&program(&steering, map.fd(), XDP_DROP), "rtlan_test")
            .expect("the verifier accepts the program");
        let socket = XDP_DROP;
        let kernel = XDP_PASS;
        let transit = Ipv4Addr::new(198, 18, 9, 9);
        for (what, f, want) in [
            ("ARP", frame(0x0806, None), kernel),
            ("MPLS", frame(0x8847, None), socket),
            ("IPv6", frame(0x86dd, None), kernel),
            (
                "transit IPv4",
                frame(0x0800, Some((5, 17, transit))),
                socket,
            ),
            (
                "to the router",
                frame(0x0800, Some((5, 1, Ipv4Addr::new(198, 18, 2, 1)))),
                kernel,
            ),
            (
                "RSVP to the router",
                frame(0x0800, Some((5, 46, Ipv4Addr::new(198, 18, 2, 1)))),
                kernel,
            ),
            (
                "transit RSVP",
                frame(0x0800, Some((5, 46, transit))),
                kernel,
            ),
            (
                "Router Alert",
                frame(0x0800, Some((6, 17, transit))),
                kernel,
            ),
            (
                "OSPF multicast",
                frame(0x0800, Some((5, 89, Ipv4Addr::new(224, 0, 0, 5)))),
                kernel,
            ),
            (
                "broadcast",
                frame(0x0800, Some((5, 17, Ipv4Addr::BROADCAST))),
                kernel,
            ),
            (
                "subnet broadcast",
                frame(0x0800, Some((5, 17, Ipv4Addr::new(198, 18, 1, 255)))),
                kernel,
            ),
            // (BPF_PROG_TEST_RUN refuses frames shorter than an Ethernet header itself.)
            ("IPv4 runt", frame(0x0800, None)[..30].to_vec(), kernel),
        ] {
            let got = prog.test_run(&f).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(got, want, "{what}");
        }
        let everything = XdpProgram::load(
            &program(&Steering::Everything, map.fd(), XDP_DROP),
            "rtlan_all",
        )
        .expect("loads");
        assert_eq!(everything.test_run(&frame(0x0806, None)).unwrap(), socket);
    }

    /// The fast path's rule (docs/fastpath.md), every case through the kernel's verifier and
    /// interpreter: a redirect to the device map is `XDP_REDIRECT` and counted; "to the socket"
    /// (no socket in the XSKMAP) is the fallback, `XDP_DROP`.
    #[test]
    fn the_kernel_runs_the_fast_path_as_documented() {
        switch_fast_path_cases(false);
    }

    /// The same rule as the switch's TC program (docs/fastpath.md "The switch at TC, and
    /// super-frames"): the same frames forwarded (`TC_ACT_REDIRECT`) and the same ones left to
    /// the kernel (`TC_ACT_OK`); and TCP super-frames whose segments fit forwarded whole and
    /// counted as the frames they become on the wire.
    #[test]
    fn the_kernel_runs_the_switch_fast_path_at_tc_as_documented() {
        switch_fast_path_cases(true);
    }

    /// The switch fast path's cases, in the XDP program or (`tc`) the TC program.
    fn switch_fast_path_cases(tc: bool) {
        if !root() {
            eprintln!("skipping: loading BPF needs root");
            return;
        }
        std::thread::spawn(move || {
            // A private namespace: its loopback is a device the device map can hold.
            // SAFETY: unshare(2) with a constant flag; it changes only this thread.
            assert_eq!(unsafe { libc::unshare(libc::CLONE_NEWNET) }, 0);
            let xsk = XskMap::new(1).expect("XSKMAP");
            let fast = FastPath::new(3).expect("maps");
            let a = rtlan_wire::ethernet::Address([2, 0, 0, 0, 0, 0xa]);
            let b = rtlan_wire::ethernet::Address([2, 0, 0, 0, 0, 0xb]);
            let c = rtlan_wire::ethernet::Address([2, 0, 0, 0, 0, 0xc]);
            fast.learn(a, 0).unwrap();
            fast.learn(b, 1).unwrap();
            fast.learn(c, 2).unwrap();
            for p in [0, 1] {
                fast.ports()
                    .set_tx(p, 1)
                    .expect("loopback in the device map");
            }
            // Port 2 has no transmit entry.
            for p in 0..3 {
                fast.ports().set_open(p, true).unwrap();
            }
            let load = |port: u32| {
                if tc {
                    XdpProgram::load_tc(
                        &prog::tc_switch_program(&fast.program_for(port, 1518)),
                        "rtlan_stc",
                    )
                    .expect("the verifier accepts the switch's TC fast path")
                } else {
                    XdpProgram::load(
                        &program(
                            &Steering::Switch(fast.program_for(port, 1518)),
                            xsk.fd(),
                            XDP_DROP,
                        ),
                        "rtlan_fast",
                    )
                    .expect("the verifier accepts the fast path")
                }
            };
            let prog = load(0);
            let (socket, out) = if tc {
                (prog::TC_ACT_OK, prog::TC_ACT_REDIRECT)
            } else {
                (XDP_DROP, XDP_REDIRECT)
            };
            let eth = |dst: rtlan_wire::ethernet::Address,
                       src: rtlan_wire::ethernet::Address,
                       ethertype: u16,
                       len: usize| {
                let mut f = vec![0u8; len];
                f[0..6].copy_from_slice(&dst.0);
                f[6..12].copy_from_slice(&src.0);
                f[12..14].copy_from_slice(&ethertype.to_be_bytes());
                f
            };
            let run = |f: &[u8]| prog.test_run(f).expect("runs");
            assert_eq!(run(&eth(b, a, 0x0800, 100)), out, "IPv4 a -> b");
            assert_eq!(
                run(&eth(b, a, 0x86dd, 1518)),
                out,
                "IPv6 a -> b, longest frame"
            );
            assert_eq!(
                fast.ports().forwarded(0).unwrap(),
                (2, 1618),
                "counted on port 0"
            );
            // (At TC an 802.1Q tag the kernel has moved into the skb's metadata, vlan_present,
            // is also refused; BPF_PROG_TEST_RUN cannot set that field — its
            // `convert___skb_to_skb` wants every byte before `priority` but `mark` zero — so
            // `the_switch_tc_program_leaves_tagged_frames_to_the_kernel` sends one through a
            // veth instead. A tag still in the frame, as here, is refused by its EtherType.)
            for (what, f) in [
                ("ARP", eth(b, a, 0x0806, 60)),
                ("control", eth(b, a, 0x88b5, 60)),
                ("VLAN-tagged", eth(b, a, 0x8100, 60)),
                ("too long", eth(b, a, 0x0800, 1519)),
                (
                    "broadcast",
                    eth(rtlan_wire::ethernet::Address::BROADCAST, a, 0x0800, 60),
                ),
                (
                    "source unknown",
                    eth(
                        b,
                        rtlan_wire::ethernet::Address([2, 0, 0, 0, 0, 9]),
                        0x0800,
                        60,
                    ),
                ),
                ("source learnt on another port", eth(a, b, 0x0800, 60)),
                (
                    "destination unknown",
                    eth(
                        rtlan_wire::ethernet::Address([2, 0, 0, 0, 0, 9]),
                        a,
                        0x0800,
                        60,
                    ),
                ),
                ("back out of its own port", eth(a, a, 0x0800, 60)),
                ("output without a device", eth(c, a, 0x0800, 60)),
            ] {
                assert_eq!(run(&f), socket, "{what}");
            }
            fast.ports().set_open(1, false).unwrap();
            assert_eq!(run(&eth(b, a, 0x0800, 100)), socket, "output port closed");
            fast.ports().set_open(1, true).unwrap();
            fast.ports().set_open(0, false).unwrap();
            assert_eq!(run(&eth(b, a, 0x0800, 100)), socket, "input port closed");
            fast.ports().set_open(0, true).unwrap();
            fast.forget(b).unwrap();
            assert_eq!(
                run(&eth(b, a, 0x0800, 100)),
                socket,
                "destination forgotten"
            );
            fast.learn(b, 1).unwrap();
            assert_eq!(run(&eth(b, a, 0x0800, 100)), out, "and learnt again");
            assert_eq!(
                fast.ports().forwarded(0).unwrap().0,
                3,
                "only redirects are counted"
            );
            assert_eq!(fast.ports().forwarded(1).unwrap(), (0, 0));
            // Another port's program counts on its own port, bytes and all.
            let from_b = load(1);
            assert_eq!(from_b.test_run(&eth(a, b, 0x0800, 100)).unwrap(), out);
            assert_eq!(fast.ports().forwarded(1).unwrap(), (1, 100));
            if tc {
                switch_super_frames(&prog, &fast, (a, b, c));
            }
            let mut stations = fast.stations().unwrap();
            stations.sort_by_key(|(_, p)| *p);
            assert_eq!(stations, vec![(a, 0), (b, 1), (c, 2)]);
            fast.forget_all().unwrap();
            assert!(fast.stations().unwrap().is_empty());
        })
        .join()
        .expect("the test thread");
    }

    /// An IP frame `len` bytes long with a TCP header (or `protocol`'s) behind its IP header:
    /// IPv4 with an `ihl`-word header, or (`ihl` 0) IPv6 with `protocol` as its next header;
    /// the TCP data offset `doff` words.
    fn ip_frame(
        (dst, src): (rtlan_wire::ethernet::Address, rtlan_wire::ethernet::Address),
        ihl: u8,
        protocol: u8,
        doff: u8,
        len: usize,
    ) -> Vec<u8> {
        let mut f = vec![0u8; len];
        f[0..6].copy_from_slice(&dst.0);
        f[6..12].copy_from_slice(&src.0);
        let l4 = if ihl == 0 {
            f[12..14].copy_from_slice(&0x86ddu16.to_be_bytes());
            f[14] = 0x60;
            f[18..20].copy_from_slice(&((len - 54) as u16).to_be_bytes());
            f[20] = protocol;
            f[21] = 64;
            54
        } else {
            f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
            f[14] = 0x40 | ihl;
            f[16..18].copy_from_slice(&((len - 14) as u16).to_be_bytes());
            f[22] = 64;
            f[23] = protocol;
            14 + usize::from(ihl) * 4
        };
        f[l4 + 12] = doff << 4;
        f
    }

    /// The switch's TC program on super-frames (docs/fastpath.md "The switch at TC, and
    /// super-frames"), port 0's program `prog` with `max_frame` 1,518: a TCP super-frame
    /// whose segments fit is forwarded whole and counted as its segments; any other frame
    /// longer than 1,518 bytes goes on to the kernel.
    fn switch_super_frames(
        prog: &XdpProgram,
        fast: &FastPath,
        (a, b, c): (
            rtlan_wire::ethernet::Address,
            rtlan_wire::ethernet::Address,
            rtlan_wire::ethernet::Address,
        ),
    ) {
        let (before_frames, before_bytes) = fast.ports().forwarded(0).unwrap();
        let run = |f: &[u8], segs: u32, size: u32| prog.test_run_skb(f, segs, size).expect("runs");
        let mut frames = 0;
        let mut bytes = 0;
        for (what, f, segs, size, wire) in [
            // 2,946 bytes of TCP payload in segments of 1,448: 3 frames, each with the 54
            // bytes of headers.
            ("IPv4", ip_frame((b, a), 5, 6, 5, 3000), 3, 1448, (3, 3108)),
            // IPv6: 74 bytes of headers, the MSS of a 1,500-byte MTU.
            ("IPv6", ip_frame((b, a), 0, 6, 5, 3000), 3, 1440, (3, 3148)),
            (
                "IPv4 options, TCP options: 70 + 1,448 bytes a segment",
                ip_frame((b, a), 6, 6, 8, 3000),
                3,
                1448,
                (3, 3140),
            ),
            (
                "segments of exactly max_frame",
                ip_frame((b, a), 5, 6, 5, 3000),
                3,
                1464,
                (3, 3108),
            ),
            (
                "segments not counted by the kernel (a guest's)",
                ip_frame((b, a), 5, 6, 5, 3000),
                0,
                1448,
                (3, 3108),
            ),
            (
                "a super-frame within max_frame",
                ip_frame((b, a), 5, 6, 5, 1000),
                2,
                500,
                (2, 1054),
            ),
            (
                "UDP GSO within max_frame, as any frame",
                ip_frame((b, a), 5, 17, 5, 1000),
                2,
                500,
                (1, 1000),
            ),
        ] {
            let (verdict, out) = run(&f, segs, size);
            assert_eq!(verdict, prog::TC_ACT_REDIRECT, "{what}");
            assert_eq!(out, f, "{what}: untouched");
            let now = fast.ports().forwarded(0).unwrap();
            assert_eq!(
                (now.0 - before_frames - frames, now.1 - before_bytes - bytes),
                wire,
                "{what}: counted as on the wire"
            );
            frames += wire.0;
            bytes += wire.1;
        }
        let mut not_ip = ip_frame((b, a), 5, 6, 5, 3000);
        not_ip[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
        for (what, f, segs, size) in [
            ("not a super-frame", ip_frame((b, a), 5, 6, 5, 3000), 0, 0),
            (
                "not a super-frame, segments given",
                ip_frame((b, a), 5, 6, 5, 3000),
                3,
                0,
            ),
            ("UDP GSO", ip_frame((b, a), 5, 17, 5, 3000), 3, 1448),
            (
                "IPv6, gso_size too large: 74 + 1,448 bytes a segment",
                ip_frame((b, a), 0, 6, 5, 3000),
                3,
                1448,
            ),
            (
                "IPv6 with an extension header",
                ip_frame((b, a), 0, 0, 5, 3000),
                3,
                1440,
            ),
            ("not IP", not_ip, 3, 1448),
            (
                "gso_size too large: 54 + 1,465 bytes a segment",
                ip_frame((b, a), 5, 6, 5, 3000),
                3,
                1465,
            ),
            (
                "gso_size too large with the options: 70 + 1,449",
                ip_frame((b, a), 6, 6, 8, 3000),
                3,
                1449,
            ),
            (
                "TCP data offset 15: 94 + 1,448 bytes a segment",
                ip_frame((b, a), 5, 6, 15, 3000),
                3,
                1448,
            ),
            (
                "source learnt on another port",
                ip_frame((a, b), 5, 6, 5, 3000),
                3,
                1448,
            ),
            (
                "output without a device",
                ip_frame((c, a), 5, 6, 5, 3000),
                3,
                1448,
            ),
        ] {
            let (verdict, out) = run(&f, segs, size);
            assert_eq!(verdict, prog::TC_ACT_OK, "{what}");
            assert_eq!(out, f, "{what}: untouched");
        }
        assert_eq!(
            fast.ports().forwarded(0).unwrap(),
            (before_frames + frames, before_bytes + bytes),
            "only what was forwarded is counted"
        );
    }

    /// The router's fast path (docs/fastpath.md "The router") through the kernel's verifier and
    /// interpreter: what it forwards leaves exactly as the core would send it (MACs, TTL and
    /// checksum), and every packet the core must see goes to the socket untouched.
    #[test]
    fn the_kernel_runs_the_router_fast_path_as_documented() {
        router_fast_path_cases(false);
    }

    /// The same fast path as the TC program of an AF_PACKET port (docs/fastpath.md "The router
    /// on AF_PACKET"): the same frames forwarded, byte for byte, and the same ones left alone.
    #[test]
    fn the_kernel_runs_the_router_fast_path_at_tc_as_documented() {
        router_fast_path_cases(true);
    }

    /// The router fast path's cases, in the XDP program or (`tc`) the TC program.
    fn router_fast_path_cases(tc: bool) {
        if !root() {
            eprintln!("skipping: loading BPF needs root");
            return;
        }
        std::thread::spawn(move || {
            // A private namespace: its loopback is a device the device map can hold.
            // SAFETY: unshare(2) with a constant flag; it changes only this thread.
            assert_eq!(unsafe { libc::unshare(libc::CLONE_NEWNET) }, 0);
            use rtlan_wire::ethernet::Address;
            let xsk = XskMap::new(1).expect("XSKMAP");
            let fast = RouterFastPath::new(3).expect("maps");
            let me = Address([2, 0, 0, 0, 1, 0]);
            let out_mac = Address([2, 0, 0, 0, 1, 1]);
            let hop_mac = Address([2, 0, 0, 0, 9, 9]);
            let own = Ipv4Addr::new(198, 18, 1, 1);
            fast.ports()
                .set_tx(1, 1)
                .expect("loopback in the device map");
            for p in 0..3 {
                fast.ports().set_open(p, true).unwrap();
            }
            // 198.18.2.0/24 via a resolved hop on port 1; 198.18.2.128/25 to the core;
            // 198.18.3.0/24 out of port 2, which has no device.
            fast.set_route(
                Ipv4Addr::new(198, 18, 2, 0),
                24,
                Some((1, hop_mac, out_mac)),
            )
            .unwrap();
            fast.set_route(Ipv4Addr::new(198, 18, 2, 128), 25, None)
                .unwrap();
            fast.set_route(
                Ipv4Addr::new(198, 18, 3, 0),
                24,
                Some((2, hop_mac, out_mac)),
            )
            .unwrap();
            assert_eq!(
                fast.lookup(Ipv4Addr::new(198, 18, 2, 200)).unwrap(),
                Some((fastpath::TO_CORE, Address([0; 6]), Address([0; 6])))
            );
            let steering = Steering::Router {
                addresses: vec![(own, 24)],
                fast: Some(fast.program_for(0, me, 1514)),
            };
            let Steering::Router {
                addresses,
                fast: Some(fast_prog),
            } = &steering
            else {
                unreachable!("built above")
            };
            let (prog, socket, redirected, kernel) = if tc {
                let prog = XdpProgram::load_tc(
                    &prog::tc_router_program(fast_prog, addresses),
                    "rtlan_rtc",
                )
                .expect("the verifier accepts the router's TC fast path");
                (
                    prog,
                    prog::TC_ACT_OK,
                    prog::TC_ACT_REDIRECT,
                    prog::TC_ACT_OK,
                )
            } else {
                let prog = XdpProgram::load(&program(&steering, xsk.fd(), XDP_DROP), "rtlan_rfast")
                    .expect("the verifier accepts the router's fast path");
                (prog, XDP_DROP, XDP_REDIRECT, XDP_PASS)
            };
            // A UDP packet from 198.18.1.10 to `dst`, `len` bytes of frame, to `mac`.
            let packet = |mac: Address, dst: Ipv4Addr, ttl: u8, len: usize| {
                let mut f = vec![0u8; len];
                f[0..6].copy_from_slice(&mac.0);
                f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 0xa]);
                f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
                let ip = &mut f[14..34];
                ip[0] = 0x45;
                ip[2..4].copy_from_slice(&((len - 14) as u16).to_be_bytes());
                ip[4..6].copy_from_slice(&(len as u16).wrapping_mul(7919).to_be_bytes());
                ip[8] = ttl;
                ip[9] = 17;
                ip[12..16].copy_from_slice(&[198, 18, 1, 10]);
                ip[16..20].copy_from_slice(&dst.octets());
                let sum = rtlan_wire::checksum::data(ip);
                ip[10..12].copy_from_slice(&(!sum).to_be_bytes());
                f
            };
            let far = Ipv4Addr::new(198, 18, 2, 7);
            let run = |f: &[u8]| prog.test_run_frame(f).expect("runs");
            // Forwarded: as the core sends it, over TTLs and lengths that exercise the carry.
            let mut forwarded = 0;
            let mut bytes = 0;
            for ttl in [2u8, 3, 64, 128, 255] {
                for len in [60usize, 61, 98, 1514] {
                    let f = packet(me, far, ttl, len);
                    let (verdict, out) = run(&f);
                    assert_eq!(verdict, redirected, "ttl {ttl} len {len}");
                    let mut want = f.clone();
                    want[0..6].copy_from_slice(&hop_mac.0);
                    want[6..12].copy_from_slice(&out_mac.0);
                    rtlan_wire::rewrite::ipv4_ttl_decrement(&mut want[14..]).unwrap();
                    assert_eq!(out[..22], want[..22], "MACs, ttl {ttl}");
                    assert_eq!(out[22], ttl - 1);
                    assert_eq!(out[26..], want[26..]);
                    let sum = rtlan_wire::checksum::data(&out[14..34]);
                    assert!(
                        sum == 0xffff || sum == 0,
                        "checksum valid, ttl {ttl} len {len}"
                    );
                    forwarded += 1;
                    bytes += len as u64;
                }
            }
            // The carry of `ip_decrease_ttl`: a checksum field whose bytes read 0xfffe in the
            // machine's order becomes 0x0000 (the other zero of ones' complement).
            let mut f = packet(me, far, 64, 98);
            let mut bumped = false;
            for id in 0..=u16::MAX {
                f[18..20].copy_from_slice(&id.to_be_bytes());
                f[24..26].copy_from_slice(&[0, 0]);
                let sum = rtlan_wire::checksum::data(&f[14..34]);
                f[24..26].copy_from_slice(&(!sum).to_be_bytes());
                if f[24..26] == [0xfe, 0xff] {
                    bumped = true;
                    break;
                }
            }
            assert!(bumped);
            let (verdict, out) = run(&f);
            assert_eq!(verdict, redirected);
            assert_eq!(out[24..26], [0, 0]);
            forwarded += 1;
            bytes += 98;
            assert_eq!(fast.ports().forwarded(0).unwrap(), (forwarded, bytes));
            if tc {
                // Super-frames (docs/fastpath.md "The switch at TC, and super-frames"): a TCP
                // one whose segments fit in 1,514 bytes is routed whole, its headers rewritten
                // as a short frame's (segmentation copies them into every segment), and
                // counted as its segments; any other frame longer than 1,514 bytes is left.
                let segment = |ttl: u8, protocol: u8, doff: u8, len: usize| {
                    let mut f = packet(me, far, ttl, len);
                    f[23] = protocol;
                    f[24..26].copy_from_slice(&[0, 0]);
                    let sum = rtlan_wire::checksum::data(&f[14..34]);
                    f[24..26].copy_from_slice(&(!sum).to_be_bytes());
                    f[46] = doff << 4;
                    f
                };
                for (what, f, segs, size, wire) in [
                    // 2,946 bytes of payload in segments of 1,448: 3, each with 54 bytes of
                    // headers.
                    ("TCP", segment(64, 6, 5, 3000), 3, 1448, (3, 3108)),
                    (
                        "segments of exactly max_frame",
                        segment(64, 6, 5, 3000),
                        3,
                        1460,
                        (3, 3108),
                    ),
                    (
                        "TCP options: 66 + 1,448 bytes a segment",
                        segment(2, 6, 8, 3000),
                        3,
                        1448,
                        (3, 3132),
                    ),
                    (
                        "segments not counted by the kernel (a guest's)",
                        segment(64, 6, 5, 3000),
                        0,
                        1448,
                        (3, 3108),
                    ),
                ] {
                    let (verdict, out) = prog.test_run_skb(&f, segs, size).expect("runs");
                    assert_eq!(verdict, redirected, "{what}");
                    let mut want = f.clone();
                    want[0..6].copy_from_slice(&hop_mac.0);
                    want[6..12].copy_from_slice(&out_mac.0);
                    rtlan_wire::rewrite::ipv4_ttl_decrement(&mut want[14..]).unwrap();
                    assert_eq!(out[..22], want[..22], "{what}: MACs");
                    assert_eq!(out[22], f[22] - 1, "{what}: TTL");
                    assert_eq!(out[26..], want[26..], "{what}");
                    let sum = rtlan_wire::checksum::data(&out[14..34]);
                    assert!(sum == 0xffff || sum == 0, "{what}: checksum valid");
                    forwarded += wire.0;
                    bytes += wire.1;
                    assert_eq!(
                        fast.ports().forwarded(0).unwrap(),
                        (forwarded, bytes),
                        "{what}: counted as on the wire"
                    );
                }
                let mut truncated = segment(64, 6, 5, 3000);
                truncated[16..18].copy_from_slice(&2987u16.to_be_bytes());
                truncated[24..26].copy_from_slice(&[0, 0]);
                let sum = rtlan_wire::checksum::data(&truncated[14..34]);
                truncated[24..26].copy_from_slice(&(!sum).to_be_bytes());
                for (what, f, segs, size) in [
                    ("not a super-frame", segment(64, 6, 5, 3000), 0, 0),
                    ("UDP GSO", segment(64, 17, 5, 3000), 3, 1448),
                    (
                        "gso_size too large: 54 + 1,461 bytes a segment",
                        segment(64, 6, 5, 3000),
                        3,
                        1461,
                    ),
                    (
                        "TCP data offset 15: 94 + 1,448 bytes a segment",
                        segment(64, 6, 15, 3000),
                        3,
                        1448,
                    ),
                    ("a super-frame with TTL 1", segment(1, 6, 5, 3000), 3, 1448),
                    ("total length past the super-frame", truncated, 3, 1448),
                ] {
                    let (verdict, out) = prog.test_run_skb(&f, segs, size).expect("runs");
                    assert_eq!(verdict, socket, "{what}");
                    assert_eq!(out, f, "{what}: left untouched");
                }
                assert_eq!(fast.ports().forwarded(0).unwrap(), (forwarded, bytes));
            }

            let mut bad_sum = packet(me, far, 64, 98);
            bad_sum[24] ^= 1;
            let mut options = packet(me, far, 64, 98);
            options[14] = 0x46;
            let mut truncated = packet(me, far, 64, 98);
            truncated[16..18].copy_from_slice(&100u16.to_be_bytes());
            let mut own_src = packet(me, far, 64, 98);
            own_src[26..30].copy_from_slice(&own.octets());
            let mut martian_src = packet(me, far, 64, 98);
            martian_src[26] = 127;
            let mut class_e_src = packet(me, far, 64, 98);
            class_e_src[26] = 240;
            for (what, f) in [
                ("to another MAC", packet(out_mac, far, 64, 98)),
                ("TTL 1", packet(me, far, 1, 98)),
                ("TTL 0", packet(me, far, 0, 98)),
                ("bad header checksum", bad_sum),
                ("total length past the frame", truncated),
                ("own source address", own_src),
                ("loopback source", martian_src),
                ("class E source", class_e_src),
                ("longer than max_frame", packet(me, far, 64, 1515)),
                (
                    "prefix to the core",
                    packet(me, Ipv4Addr::new(198, 18, 2, 200), 64, 98),
                ),
                (
                    "no route",
                    packet(me, Ipv4Addr::new(203, 0, 113, 1), 64, 98),
                ),
                (
                    "output without a device",
                    packet(me, Ipv4Addr::new(198, 18, 3, 1), 64, 98),
                ),
                (
                    "loopback destination",
                    packet(me, Ipv4Addr::new(127, 0, 0, 1), 64, 98),
                ),
                (
                    "class E destination",
                    packet(me, Ipv4Addr::new(250, 0, 0, 1), 64, 98),
                ),
            ] {
                let (verdict, out) = run(&f);
                assert_eq!(verdict, socket, "{what}");
                assert_eq!(out, f, "{what}: to the socket untouched");
            }
            assert_eq!(
                run(&options).0,
                kernel,
                "IP options: to the kernel and the tap"
            );
            fast.ports().set_open(1, false).unwrap();
            assert_eq!(
                run(&packet(me, far, 64, 98)).0,
                socket,
                "output port closed"
            );
            fast.ports().set_open(1, true).unwrap();
            fast.ports().set_open(0, false).unwrap();
            assert_eq!(run(&packet(me, far, 64, 98)).0, socket, "input port closed");
            fast.ports().set_open(0, true).unwrap();
            fast.remove_route(Ipv4Addr::new(198, 18, 2, 0), 24).unwrap();
            assert_eq!(run(&packet(me, far, 64, 98)).0, socket, "route removed");
            assert_eq!(fast.ports().forwarded(0).unwrap().0, forwarded);
        })
        .join()
        .expect("the test thread");
    }

    /// The switch's TC program on a real skb: a frame whose 802.1Q tag the kernel has moved into
    /// the skb's metadata before the hook (`vlan_present`, which `BPF_PROG_TEST_RUN` cannot set)
    /// goes on to the kernel, though its EtherType is IPv4 then. Attached by tcx to x1 of a veth
    /// pair in a private namespace; frames sent on x0 from a packet socket; what the program
    /// forwarded read from its counters.
    #[test]
    fn the_switch_tc_program_leaves_tagged_frames_to_the_kernel() {
        if !root() {
            eprintln!("skipping: attaching BPF needs root");
            return;
        }
        std::thread::spawn(|| {
            // SAFETY: unshare(2) with a constant flag; it changes only this thread.
            assert_eq!(unsafe { libc::unshare(libc::CLONE_NEWNET) }, 0);
            let ip = |args: &[&str]| {
                let out = std::process::Command::new("ip")
                    .args(args)
                    .output()
                    .expect("ip");
                assert!(out.status.success(), "ip {args:?}: {out:?}");
            };
            ip(&["link", "add", "x0", "type", "veth", "peer", "name", "x1"]);
            for dev in ["x0", "x1", "lo"] {
                ip(&["link", "set", dev, "up"]);
            }
            // SAFETY: NUL-terminated names.
            let (x0, x1) = unsafe {
                (
                    libc::if_nametoindex(c"x0".as_ptr()),
                    libc::if_nametoindex(c"x1".as_ptr()),
                )
            };
            assert!(x0 > 0 && x1 > 0);
            let a = rtlan_wire::ethernet::Address([2, 0, 0, 0, 0, 0xa]);
            let b = rtlan_wire::ethernet::Address([2, 0, 0, 0, 0, 0xb]);
            let fast = FastPath::new(2).expect("maps");
            // x1 is port 1, where a is; b is behind port 0, whose frames go out of loopback.
            fast.learn(a, 1).unwrap();
            fast.learn(b, 0).unwrap();
            fast.ports().set_tx(0, 1).unwrap();
            for p in 0..2 {
                fast.ports().set_open(p, true).unwrap();
            }
            let prog = XdpProgram::load_tc(
                &prog::tc_switch_program(&fast.program_for(1, 1518)),
                "rtlan_stc",
            )
            .expect("loads");
            let _link = prog
                .attach_tc_ingress(x1)
                .expect("attached to x1's ingress");
            // SAFETY: socket(2) with constant arguments; the descriptor is owned at once.
            let sock = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW, 0) };
            assert!(sock >= 0, "{}", io::Error::last_os_error());
            // SAFETY: a new descriptor nothing else owns.
            let sock = unsafe { OwnedFd::from_raw_fd(sock) };
            let send = |frame: &[u8]| {
                // SAFETY: sockaddr_ll is plain data; zero is a valid value of every field.
                let mut to: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
                to.sll_family = libc::AF_PACKET as u16;
                to.sll_ifindex = x0 as i32;
                to.sll_halen = 6;
                to.sll_addr[..6].copy_from_slice(&b.0);
                // SAFETY: `frame` and `to` are valid for the lengths given.
                let n = unsafe {
                    libc::sendto(
                        sock.as_raw_fd(),
                        frame.as_ptr().cast(),
                        frame.len(),
                        0,
                        (&to as *const libc::sockaddr_ll).cast(),
                        std::mem::size_of::<libc::sockaddr_ll>() as u32,
                    )
                };
                assert_eq!(n, frame.len() as isize, "{}", io::Error::last_os_error());
            };
            let forwarded_reaches = |want: (u64, u64)| {
                for _ in 0..200 {
                    if fast.ports().forwarded(1).unwrap() == want {
                        return;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                panic!(
                    "forwarded {:?}, want {want:?}",
                    fast.ports().forwarded(1).unwrap()
                );
            };
            let mut untagged = vec![0u8; 60];
            untagged[0..6].copy_from_slice(&b.0);
            untagged[6..12].copy_from_slice(&a.0);
            untagged[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
            untagged[14] = 0x45;
            send(&untagged);
            forwarded_reaches((1, 60));
            // The same frame tagged (VLAN 5): the kernel untags it before the hook.
            let mut tagged = untagged[..12].to_vec();
            tagged.extend_from_slice(&[0x81, 0x00, 0x00, 0x05]);
            tagged.extend_from_slice(&untagged[12..]);
            send(&tagged);
            send(&untagged);
            forwarded_reaches((2, 120));
            std::thread::sleep(std::time::Duration::from_millis(50));
            assert_eq!(
                fast.ports().forwarded(1).unwrap(),
                (2, 120),
                "the tagged frame went on to the kernel"
            );
        })
        .join()
        .expect("the namespace thread");
    }

    /// Attached to a veth in a private, unnamed network namespace (it goes when the thread
    /// ends): the interface shows the program while the link lives, and not after.
    #[test]
    fn the_program_attaches_natively_to_a_veth_while_its_link_lives() {
        if !root() {
            eprintln!("skipping: attaching XDP needs root");
            return;
        }
        std::thread::spawn(|| {
            // SAFETY: unshare(2) with a constant flag; it changes only this thread.
            assert_eq!(unsafe { libc::unshare(libc::CLONE_NEWNET) }, 0);
            let ip = |args: &[&str]| {
                let out = std::process::Command::new("ip")
                    .args(args)
                    .output()
                    .expect("ip");
                assert!(out.status.success(), "ip {args:?}: {out:?}");
                String::from_utf8_lossy(&out.stdout).into_owned()
            };
            ip(&["link", "add", "x0", "type", "veth", "peer", "name", "x1"]);
            ip(&["link", "set", "x0", "up"]);
            ip(&["link", "set", "x1", "up"]);
            // SAFETY: a NUL-terminated name.
            let ifindex = unsafe { libc::if_nametoindex(c"x0".as_ptr()) };
            assert!(ifindex > 0);
            let map = XskMap::new(1).unwrap();
            let prog = XdpProgram::load(
                &program(&Steering::Everything, map.fd(), XDP_PASS),
                "rtlan_t",
            )
            .unwrap();
            let (link, mode) = prog.attach(ifindex).expect("attached");
            assert_eq!(mode, XdpMode::Native, "veth has native XDP");
            let shown = ip(&["-d", "link", "show", "x0"]);
            assert!(shown.contains("xdp"), "{shown}");
            assert!(!shown.contains("xdpgeneric"), "native XDP on veth: {shown}");
            drop(link);
            assert!(!ip(&["-d", "link", "show", "x0"]).contains("prog/xdp"));
            // A bridge has no native XDP: generic, and said so.
            ip(&["link", "add", "b0", "type", "bridge"]);
            // SAFETY: a NUL-terminated name.
            let bridge = unsafe { libc::if_nametoindex(c"b0".as_ptr()) };
            let (link, mode) = prog.attach(bridge).expect("attached");
            assert_eq!(mode, XdpMode::Generic, "a bridge has no native XDP");
            assert!(ip(&["-d", "link", "show", "b0"]).contains("xdpgeneric"));
            drop(link);
        })
        .join()
        .expect("the namespace thread");
    }
}

/// Which socket a daemon's ports use (`data_plane` in a daemon's configuration).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DataPlane {
    /// AF_PACKET rings (the default until AF_XDP is measured ahead everywhere).
    #[default]
    AfPacket,
    /// AF_XDP; a port that cannot have it fails to open.
    AfXdp,
    /// AF_XDP where it opens, AF_PACKET elsewhere, with the reason logged.
    Auto,
}

/// A port of either kind, for a driver whose ports may differ. Not boxed: a daemon holds a
/// handful in one vector, and the data path should not pay an indirection per call.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub enum AnyPort {
    /// AF_PACKET.
    Packet(crate::packet::PacketPort),
    /// AF_XDP.
    Xdp(XdpPort),
    /// An AF_PACKET port of several sockets bound to protocols, with the TC program of the
    /// fast path: a router's, or a switch's with the fast path on.
    TcPacket(TcPacketPort),
}

impl AnyPort {
    /// Opens `ifname` as `plane` asks.
    pub fn open(
        ifname: &str,
        plane: DataPlane,
        steering: &Steering,
        options: &crate::packet::PortOptions,
    ) -> Result<AnyPort, AnyPortError> {
        let packet = || {
            if let Steering::Router { addresses, fast } = steering {
                return TcPacketPort::open_router(ifname, options, fast.as_ref(), addresses)
                    .map(AnyPort::TcPacket)
                    .map_err(AnyPortError::TcPacket);
            }
            if let Steering::Switch(fast) = steering {
                return TcPacketPort::open_switch(ifname, options, fast)
                    .map(AnyPort::TcPacket)
                    .map_err(AnyPortError::TcPacket);
            }
            crate::packet::PacketPort::open(ifname, options)
                .map(AnyPort::Packet)
                .map_err(AnyPortError::Packet)
        };
        match plane {
            DataPlane::AfPacket => packet(),
            DataPlane::AfXdp => XdpPort::open(ifname, steering)
                .map(AnyPort::Xdp)
                .map_err(AnyPortError::Xdp),
            DataPlane::Auto => match XdpPort::open(ifname, steering) {
                Ok(p) => Ok(AnyPort::Xdp(p)),
                Err(e) => {
                    tracing::warn!(ifname, "AF_XDP unavailable, using AF_PACKET: {e}");
                    packet()
                }
            },
        }
    }

    /// `"af_xdp"` or `"af_packet"`.
    pub fn kind(&self) -> &'static str {
        match self {
            AnyPort::Packet(_) | AnyPort::TcPacket(_) => "af_packet",
            AnyPort::Xdp(_) => "af_xdp",
        }
    }
}

/// Opens every interface of `ifnames` as `plane` asks (with the one `steering` for all), logging
/// each port's kind; on failure, the interface that failed and why.
pub fn open_ports<'a>(
    ifnames: impl IntoIterator<Item = &'a str>,
    plane: DataPlane,
    steering: &Steering,
    options: &crate::packet::PortOptions,
) -> Result<Vec<AnyPort>, (String, AnyPortError)> {
    ifnames
        .into_iter()
        .map(|ifname| {
            let port = AnyPort::open(ifname, plane, steering, options)
                .map_err(|e| (ifname.to_string(), e))?;
            tracing::info!(ifname, kind = port.kind(), "port open");
            Ok(port)
        })
        .collect()
}

/// Why a port of either kind did not open.
#[derive(Debug, thiserror::Error)]
pub enum AnyPortError {
    /// AF_PACKET.
    #[error(transparent)]
    Packet(#[from] crate::packet::PacketError),
    /// AF_XDP.
    #[error(transparent)]
    Xdp(#[from] XdpError),
    /// An AF_PACKET port with the TC program.
    #[error(transparent)]
    TcPacket(#[from] TcPacketPortError),
}

impl AnyPortError {
    /// The packet socket's error (`Ok`), or AF_XDP's (`Err`): what a daemon reports.
    pub fn split(self) -> Result<crate::packet::PacketError, XdpError> {
        match self {
            AnyPortError::Packet(e)
            | AnyPortError::TcPacket(TcPacketPortError::Socket { source: e, .. }) => Ok(e),
            AnyPortError::Xdp(e) => Err(e),
        }
    }
}

impl AsRawFd for AnyPort {
    fn as_raw_fd(&self) -> RawFd {
        match self {
            AnyPort::Packet(p) => p.as_raw_fd(),
            AnyPort::Xdp(p) => p.as_raw_fd(),
            AnyPort::TcPacket(p) => p.as_raw_fd(),
        }
    }
}

macro_rules! both {
    ($self:ident, $p:ident => $e:expr) => {
        match $self {
            AnyPort::Packet($p) => $e,
            AnyPort::Xdp($p) => $e,
            AnyPort::TcPacket($p) => $e,
        }
    };
}

impl crate::driver::Port for AnyPort {
    fn ifname(&self) -> &str {
        both!(self, p => crate::driver::Port::ifname(p))
    }

    fn ifindex(&self) -> u32 {
        both!(self, p => crate::driver::Port::ifindex(p))
    }

    fn mac(&self) -> rtlan_wire::ethernet::Address {
        both!(self, p => crate::driver::Port::mac(p))
    }

    fn counters(&self) -> &crate::packet::PortCounters {
        both!(self, p => crate::driver::Port::counters(p))
    }

    fn receive_stamped<F: FnMut(&[u8], Option<u64>)>(
        &mut self,
        budget: usize,
        deliver: F,
    ) -> usize {
        both!(self, p => crate::driver::Port::receive_stamped(p, budget, deliver))
    }

    fn transmit_with<F: FnOnce(&mut [u8]) -> Option<usize>>(
        &mut self,
        produce: F,
    ) -> crate::packet::TxOutcome {
        both!(self, p => crate::driver::Port::transmit_with(p, produce))
    }

    fn flush(&mut self) -> io::Result<()> {
        both!(self, p => crate::driver::Port::flush(p))
    }

    fn flush_pending(&self) -> bool {
        both!(self, p => crate::driver::Port::flush_pending(p))
    }

    fn tx_blocked(&self) -> bool {
        both!(self, p => crate::driver::Port::tx_blocked(p))
    }

    fn tx_unsent(&self) -> u64 {
        both!(self, p => crate::driver::Port::tx_unsent(p))
    }

    fn take_error(&mut self) -> Option<io::Error> {
        both!(self, p => crate::driver::Port::take_error(p))
    }

    fn read_kernel_drops(&mut self) {
        both!(self, p => crate::driver::Port::read_kernel_drops(p))
    }

    fn extra_fds(&self) -> Vec<RawFd> {
        both!(self, p => crate::driver::Port::extra_fds(p))
    }

    fn extra_hints(&mut self) {
        both!(self, p => crate::driver::Port::extra_hints(p))
    }

    fn extra_ready(&mut self) {
        both!(self, p => crate::driver::Port::extra_ready(p))
    }

    fn carrier(&self) -> Option<bool> {
        both!(self, p => crate::driver::Port::carrier(p))
    }

    fn kind(&self) -> &'static str {
        AnyPort::kind(self)
    }
}
