//! A router's AF_PACKET port (docs/fastpath.md "The router on AF_PACKET", QSR §4.1 and §6.2):
//! four packet sockets, one per kind of traffic, and with the fast path on, the router's TC
//! program on the interface's ingress.
//!
//! **Four sockets.** QSR §6.2's network-control channel needs, at the ingress, a ring that no
//! data enters; one socket per port would put RSVP behind every transit packet. So the port is
//! four sockets bound to EtherTypes, read in this order:
//!
//! - **control**, `ETH_P_IP` with a classic BPF filter taking only RSVP (protocol 46) and IPv4
//!   with options (Router Alert);
//! - **arp**, `ETH_P_ARP`: the neighbours (QSR §4.1);
//! - **mpls**, `ETH_P_MPLS_UC`: switched paths (QSR §4.2);
//! - **data**, `ETH_P_IP` with the complementary filter: the rest of IPv4. It also sends
//!   everything the core sends.
//!
//! Other EtherTypes (IPv6, LLDP) reach only the kernel: the router does not route them.
//!
//! **The TC program.** On a veth, an XDP program costs a copy of every frame that arrives from
//! a sender without XDP (the kernel moves it into a page with XDP's headroom before the program
//! runs), which the kernel's own forwarding never pays. A TC program runs on the skb the kernel
//! already has, so with AF_PACKET ports the router's fast path
//! ([`super::prog::tc_router_program`], the same decision as the XDP one) runs there, attached
//! by tcx (no qdisc needed). Sockets bound to an EtherType are protocol handlers, which the
//! kernel serves after the TC hook, with only what the program passed; an `ETH_P_ALL` socket
//! would be a tap, served before the hook, and see every forwarded frame — the other reason
//! for binding each socket to its protocol.
//!
//! The kernel's own handlers (ARP, pings to the router, OSPF) see what the program passes, as
//! with XDP's `XDP_PASS`. The driver waits on the data socket (its descriptor) and on the three
//! others ([`crate::driver::Port::extra_fds`]).

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use rtlan_wire::ethernet::Address;

use super::prog::tc_router_program;
use super::{RouterFastProg, XdpProgram};
use crate::packet::{PacketError, PacketPort, PortCounters, PortOptions, TxOutcome};

/// `ETH_P_IP`, `ETH_P_ARP` and `ETH_P_MPLS_UC` of `<linux/if_ether.h>`.
pub(crate) const ETH_P_IP: u16 = 0x0800;
pub(crate) const ETH_P_ARP: u16 = 0x0806;
const ETH_P_MPLS_UC: u16 = 0x8847;

/// Slots of the control, ARP and MPLS sockets' rings (the data socket has the port's own).
const SIDE_RING_FRAMES: usize = 256;

/// Why a router's AF_PACKET port did not open.
#[derive(Debug, thiserror::Error)]
pub enum RouterPacketPortError {
    /// One of its packet sockets.
    #[error("port `{ifname}`, its {which} socket: {source}")]
    Socket {
        /// The interface.
        ifname: String,
        /// `control`, `arp`, `mpls` or `data`.
        which: &'static str,
        /// Why.
        #[source]
        source: PacketError,
    },
}

/// A classic BPF instruction (`struct sock_filter`).
const fn op(code: u16, jt: u8, jf: u8, k: u32) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

/// `BPF_LD|BPF_B|BPF_ABS`, `BPF_ALU|BPF_AND|BPF_K`, `BPF_JMP|BPF_JEQ|BPF_K` and
/// `BPF_RET|BPF_K` of `<linux/filter.h>`.
const LDB: u16 = 0x30;
const AND: u16 = 0x54;
const JEQ: u16 = 0x15;
const RET: u16 = 0x06;
/// Accept the whole frame.
const ALL: u32 = 0x4_0000;

/// The control socket's filter (IPv4 only, by its binding): RSVP, and IPv4 with options.
pub(crate) fn control_filter() -> Vec<libc::sock_filter> {
    vec![
        op(LDB, 0, 0, 23), // protocol
        op(JEQ, 3, 0, 46), // RSVP → accept
        op(LDB, 0, 0, 14), // version and IHL
        op(AND, 0, 0, 0x0f),
        op(JEQ, 1, 0, 5), // no options → reject
        op(RET, 0, 0, ALL),
        op(RET, 0, 0, 0),
    ]
}

/// The data socket's filter (IPv4 only, by its binding): all but RSVP and options.
fn data_filter() -> Vec<libc::sock_filter> {
    vec![
        op(LDB, 0, 0, 23), // protocol
        op(JEQ, 4, 0, 46), // RSVP → reject
        op(LDB, 0, 0, 14), // version and IHL
        op(AND, 0, 0, 0x0f),
        op(JEQ, 0, 1, 5), // options → reject
        op(RET, 0, 0, ALL),
        op(RET, 0, 0, 0),
    ]
}

/// A receive-only side socket of a router port (control, ARP, MPLS): bound to `protocol` on
/// `ifname`, with `filter` if not empty, and a small ring.
pub(crate) fn side_socket(
    ifname: &str,
    protocol: u16,
    filter: &[libc::sock_filter],
) -> Result<PacketPort, PacketError> {
    let options = PortOptions {
        ring_frames: SIDE_RING_FRAMES,
        ..PortOptions::default()
    };
    PacketPort::open_bound(ifname, &options, protocol, filter)
}

/// A router's AF_PACKET port: four sockets, and the TC program with the fast path (module doc).
#[derive(Debug)]
pub struct RouterPacketPort {
    data: PacketPort,
    control: PacketPort,
    arp: PacketPort,
    mpls: PacketPort,
    // The link first: detached before the program and the sockets go.
    tc: Option<(OwnedFd, XdpProgram)>,
    /// The four sockets' counters together.
    counters: PortCounters,
}

impl RouterPacketPort {
    /// Opens `ifname` (in the calling thread's namespace), with the router's TC program for
    /// `fast` if given; `addresses` are the router's (the program leaves packets to them to
    /// the kernel). A program that cannot be loaded or attached (a kernel before 6.6) is
    /// logged, and the port opens without it.
    pub fn open(
        ifname: &str,
        options: &PortOptions,
        fast: Option<&RouterFastProg>,
        addresses: &[(std::net::Ipv4Addr, u8)],
    ) -> Result<RouterPacketPort, RouterPacketPortError> {
        let error = |which| {
            move |source| RouterPacketPortError::Socket {
                ifname: ifname.to_string(),
                which,
                source,
            }
        };
        let control = side_socket(ifname, ETH_P_IP, &control_filter()).map_err(error("control"))?;
        let arp = side_socket(ifname, ETH_P_ARP, &[]).map_err(error("arp"))?;
        let mpls = side_socket(ifname, ETH_P_MPLS_UC, &[]).map_err(error("mpls"))?;
        let data = PacketPort::open_bound(ifname, options, ETH_P_IP, &data_filter())
            .map_err(error("data"))?;
        let tc = fast.and_then(|fast| {
            let attached = XdpProgram::load_tc(&tc_router_program(fast, addresses), "rtlan_rtc")
                .map_err(|e| format!("loading the TC program: {e}"))
                .and_then(|program| {
                    program
                        .attach_tc_ingress(data.ifindex())
                        .map(|link| (link, program))
                        .map_err(|e| format!("attaching the TC program (tcx ingress): {e}"))
                });
            match attached {
                Ok(tc) => {
                    tracing::info!(ifname, "AF_PACKET port open, fast path at TC ingress");
                    Some(tc)
                }
                Err(e) => {
                    tracing::warn!(ifname, "AF_PACKET port open without the fast path: {e}");
                    None
                }
            }
        });
        let mut port = RouterPacketPort {
            data,
            control,
            arp,
            mpls,
            tc,
            counters: PortCounters::default(),
        };
        port.merge();
        Ok(port)
    }

    /// Whether the TC program is attached (the fast path can open on this port).
    pub fn has_program(&self) -> bool {
        self.tc.is_some()
    }

    /// The counters of the data socket, with what the other three received added.
    fn merge(&mut self) {
        let mut c = self.data.counters().clone();
        for side in [
            self.control.counters(),
            self.arp.counters(),
            self.mpls.counters(),
        ] {
            c.add_received(side);
        }
        self.counters = c;
    }
}

impl AsRawFd for RouterPacketPort {
    fn as_raw_fd(&self) -> RawFd {
        self.data.as_raw_fd()
    }
}

impl crate::driver::Port for RouterPacketPort {
    fn ifname(&self) -> &str {
        self.data.ifname()
    }

    fn ifindex(&self) -> u32 {
        self.data.ifindex()
    }

    fn mac(&self) -> Address {
        self.data.mac()
    }

    fn counters(&self) -> &PortCounters {
        &self.counters
    }

    /// The control socket's frames first (QSR §6.2), then ARP, switched paths and the rest.
    fn receive_stamped<F: FnMut(&[u8], Option<u64>)>(
        &mut self,
        budget: usize,
        mut deliver: F,
    ) -> usize {
        let mut stamped = |frame: &[u8], t: u64| deliver(frame, Some(t));
        let mut n = self.control.receive_stamped(budget, &mut stamped);
        n += self.arp.receive_stamped(budget - n, &mut stamped);
        n += self.mpls.receive_stamped(budget - n, &mut stamped);
        n += self.data.receive_stamped(budget - n, &mut stamped);
        if n > 0 {
            self.merge();
        }
        n
    }

    fn transmit_with<F: FnOnce(&mut [u8]) -> Option<usize>>(&mut self, produce: F) -> TxOutcome {
        let out = self.data.transmit_with(produce);
        if out == TxOutcome::Queued {
            self.counters.tx_frames = self.data.counters().tx_frames;
            self.counters.tx_bytes = self.data.counters().tx_bytes;
        }
        out
    }

    fn flush(&mut self) -> io::Result<()> {
        let out = self.data.flush();
        self.merge();
        out
    }

    fn flush_pending(&self) -> bool {
        self.data.flush_pending()
    }

    fn tx_blocked(&self) -> bool {
        self.data.tx_blocked()
    }

    fn take_error(&mut self) -> Option<io::Error> {
        let e = self
            .data
            .take_error()
            .or_else(|| self.control.take_error())
            .or_else(|| self.arp.take_error())
            .or_else(|| self.mpls.take_error());
        self.merge();
        e
    }

    fn read_kernel_drops(&mut self) {
        self.data.read_kernel_drops();
        self.control.read_kernel_drops();
        self.arp.read_kernel_drops();
        self.mpls.read_kernel_drops();
        self.merge();
    }

    fn carrier(&self) -> Option<bool> {
        self.data.carrier()
    }

    fn extra_fds(&self) -> Vec<RawFd> {
        vec![
            self.control.as_raw_fd(),
            self.arp.as_raw_fd(),
            self.mpls.as_raw_fd(),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a classic filter the way the kernel does, on `frame`.
    fn run(filter: &[libc::sock_filter], frame: &[u8]) -> u32 {
        let mut a = 0u32;
        let mut pc = 0usize;
        loop {
            let f = filter[pc];
            pc += 1;
            match f.code {
                LDB => a = u32::from(frame[f.k as usize]),
                AND => a &= f.k,
                JEQ => pc += usize::from(if a == f.k { f.jt } else { f.jf }),
                RET => return f.k,
                other => panic!("opcode {other:#x}"),
            }
        }
    }

    fn frame(ethertype: u16, ver_ihl: u8, protocol: u8) -> Vec<u8> {
        let mut f = vec![0u8; 60];
        f[12..14].copy_from_slice(&ethertype.to_be_bytes());
        f[14] = ver_ihl;
        f[23] = protocol;
        f
    }

    #[test]
    fn the_control_socket_takes_rsvp_and_options_and_the_data_socket_the_rest() {
        // Both are bound to IPv4: the kernel offers them nothing else.
        let (control, data) = (control_filter(), data_filter());
        for (what, f, to_control) in [
            ("UDP", frame(0x0800, 0x45, 17), false),
            ("TCP", frame(0x0800, 0x45, 6), false),
            ("ICMP", frame(0x0800, 0x45, 1), false),
            ("RSVP", frame(0x0800, 0x45, 46), true),
            ("Router Alert", frame(0x0800, 0x46, 17), true),
            ("RSVP with Router Alert", frame(0x0800, 0x46, 46), true),
            ("longest header", frame(0x0800, 0x4f, 17), true),
        ] {
            assert_eq!(run(&control, &f) == ALL, to_control, "control: {what}");
            assert_eq!(run(&data, &f) == ALL, !to_control, "data: {what}");
        }
    }
}
