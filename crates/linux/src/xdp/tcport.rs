//! AF_PACKET ports with the node's TC program (docs/fastpath.md "The router on AF_PACKET" and
//! "The switch at TC", QSR §4.1 and §6.2, EtheReal §3.3): several packet sockets bound to
//! EtherTypes, one per kind of traffic, and with the fast path on, the node's TC program on the
//! interface's ingress.
//!
//! **Why bound sockets.** A TC program runs on the skb the kernel already has (on a veth, XDP
//! must first copy every frame from a sender without XDP into a page of its own, which the
//! kernel's own forwarding never pays), and a GSO super-frame stays one skb there. Sockets bound
//! to an EtherType are protocol handlers, which the kernel serves after the TC hook, with only
//! what the program passed; an `ETH_P_ALL` socket is a tap, served before the hook, and would
//! see every forwarded frame.
//!
//! **A router's port** is four sockets, read in this order — QSR §6.2's network-control channel
//! needs, at the ingress, a ring that no data enters:
//!
//! - **control**, `ETH_P_IP` with a classic BPF filter taking only RSVP (protocol 46) and IPv4
//!   with options (Router Alert);
//! - **arp**, `ETH_P_ARP`: the neighbours (QSR §4.1);
//! - **mpls**, `ETH_P_MPLS_UC`: switched paths (QSR §4.2);
//! - **data**, `ETH_P_IP` with the complementary filter: the rest of IPv4. It also sends
//!   everything the core sends.
//!
//! Other EtherTypes (IPv6, LLDP) reach only the kernel: the router does not route them. The
//! kernel's own handlers (ARP, pings to the router, OSPF) see what the program passes, as with
//! XDP's `XDP_PASS`.
//!
//! **A switch's port** forwards every EtherType, so it keeps a tap for the frames its program
//! never forwards (tagged frames, and all but IPv4 and IPv6, selected by the tap's filter) and
//! binds IPv4 and IPv6 ([`TcPacketPort::open_switch`]).
//!
//! Every data socket has its super-frame companion (`crate::packet`'s `superframe`), so
//! super-frames the program does not forward reach the core cut into wire frames. The driver
//! waits on the sending socket (its descriptor) and on all the others
//! ([`crate::driver::Port::extra_fds`]).

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use rtlan_wire::ethernet::Address;

use super::prog::tc_router_program;
use super::{RouterFastProg, XdpProgram};
use crate::packet::cbpf::{
    op, ALL, AND, JEQ, LDB, LDW, RET, SKF_AD_PROTOCOL, SKF_AD_VLAN_TAG_PRESENT,
};
use crate::packet::{PacketError, PacketPort, PortCounters, PortOptions, TxOutcome};

/// `ETH_P_IP`, `ETH_P_ARP` and `ETH_P_MPLS_UC` of `<linux/if_ether.h>`.
pub(crate) const ETH_P_IP: u16 = 0x0800;
pub(crate) const ETH_P_ARP: u16 = 0x0806;
const ETH_P_MPLS_UC: u16 = 0x8847;
/// `ETH_P_IPV6`.
const ETH_P_IPV6: u16 = 0x86dd;

/// Slots of the control, ARP and MPLS sockets' rings (the data socket has the port's own).
const SIDE_RING_FRAMES: usize = 256;

/// Why a router's AF_PACKET port did not open.
#[derive(Debug, thiserror::Error)]
pub enum TcPacketPortError {
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

/// A switch port's tap (ETH_P_ALL): what the switch's TC program never forwards — tagged
/// frames and every EtherType but IPv4 and IPv6.
fn other_filter() -> Vec<libc::sock_filter> {
    vec![
        op(LDW, 0, 0, SKF_AD_VLAN_TAG_PRESENT),
        op(JEQ, 1, 0, 0), // untagged → on
        op(RET, 0, 0, ALL),
        op(LDW, 0, 0, SKF_AD_PROTOCOL),
        op(JEQ, 2, 0, u32::from(ETH_P_IP)),
        op(JEQ, 1, 0, u32::from(ETH_P_IPV6)),
        op(RET, 0, 0, ALL),
        op(RET, 0, 0, 0),
    ]
}

/// A switch port's IPv4 and IPv6 sockets (bound to their EtherType): untagged frames (the
/// tagged ones are the tap's).
fn untagged_filter() -> Vec<libc::sock_filter> {
    vec![
        op(LDW, 0, 0, SKF_AD_VLAN_TAG_PRESENT),
        op(JEQ, 1, 0, 0),
        op(RET, 0, 0, 0),
        op(RET, 0, 0, ALL),
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
        // RSVP, ARP and MPLS frames are never super-frames.
        superframes: false,
        ..PortOptions::default()
    };
    PacketPort::open_bound(ifname, &options, protocol, filter)
}

/// An AF_PACKET port of several sockets bound to protocols, each with its selection, read in
/// a fixed order, with the node's TC program on the interface's ingress (module doc): a
/// router's four, or a switch's three ([`TcPacketPort::open_switch`]).
#[derive(Debug)]
pub struct TcPacketPort {
    /// The sockets in the order they are read.
    sockets: Vec<PacketPort>,
    /// The one that sends (and whose descriptor signals transmit room).
    send: usize,
    // The link first: detached before the program and the sockets go.
    tc: Option<(OwnedFd, XdpProgram)>,
    /// The sockets' counters together.
    counters: PortCounters,
}

/// Loads `insns` as a TC program and attaches it to `ifindex`'s ingress; on failure, logged,
/// and `None`: the port opens without it and never opens to the fast path.
fn attach_tc(
    ifname: &str,
    ifindex: u32,
    insns: &[super::Insn],
    name: &str,
) -> Option<(OwnedFd, XdpProgram)> {
    let attached = XdpProgram::load_tc(insns, name)
        .map_err(|e| format!("loading the TC program: {e}"))
        .and_then(|program| {
            program
                .attach_tc_ingress(ifindex)
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
}

impl TcPacketPort {
    /// Opens `ifname` (in the calling thread's namespace) as a router's port, with the
    /// router's TC program for `fast` if given; `addresses` are the router's (the program
    /// leaves packets to them to the kernel). A program that cannot be loaded or attached (a
    /// kernel before 6.6) is logged, and the port opens without it.
    pub fn open_router(
        ifname: &str,
        options: &PortOptions,
        fast: Option<&RouterFastProg>,
        addresses: &[(std::net::Ipv4Addr, u8)],
    ) -> Result<TcPacketPort, TcPacketPortError> {
        let control = side_socket(ifname, ETH_P_IP, &control_filter())
            .map_err(socket_error(ifname, "control"))?;
        let arp = side_socket(ifname, ETH_P_ARP, &[]).map_err(socket_error(ifname, "arp"))?;
        let mpls = side_socket(ifname, ETH_P_MPLS_UC, &[]).map_err(socket_error(ifname, "mpls"))?;
        let data = PacketPort::open_bound(ifname, options, ETH_P_IP, &data_filter())
            .map_err(socket_error(ifname, "data"))?;
        let tc = fast.and_then(|fast| {
            attach_tc(
                ifname,
                data.ifindex(),
                &tc_router_program(fast, addresses),
                "rtlan_rtc",
            )
        });
        Ok(TcPacketPort::new(vec![control, arp, mpls, data], 3, tc))
    }

    /// Opens `ifname` as a switch's port with the switch's TC program for `fast`
    /// (docs/fastpath.md "The switch at TC"): three sockets, read in this order —
    ///
    /// - **other**, an `ETH_P_ALL` tap taking what the program never forwards: tagged frames
    ///   and every EtherType but IPv4 and IPv6 (ARP, the control protocol, STP); it sends;
    /// - **ipv4** and **ipv6**, bound to their EtherTypes, untagged: served after the program,
    ///   with only what it passed.
    ///
    /// Each also takes its super-frames ([`PortOptions::superframes`]).
    pub fn open_switch(
        ifname: &str,
        options: &PortOptions,
        fast: &super::FastPathProg,
    ) -> Result<TcPacketPort, TcPacketPortError> {
        let other =
            PacketPort::open_bound(ifname, options, libc::ETH_P_ALL as u16, &other_filter())
                .map_err(socket_error(ifname, "other"))?;
        // Only `other` sends: the others need no transmit thread.
        let receive_only = PortOptions {
            tx_thread: None,
            ..*options
        };
        let ipv4 = PacketPort::open_bound(ifname, &receive_only, ETH_P_IP, &untagged_filter())
            .map_err(socket_error(ifname, "ipv4"))?;
        let side = PortOptions {
            ring_frames: SIDE_RING_FRAMES,
            ..receive_only
        };
        let ipv6 = PacketPort::open_bound(ifname, &side, ETH_P_IPV6, &untagged_filter())
            .map_err(socket_error(ifname, "ipv6"))?;
        let tc = attach_tc(
            ifname,
            other.ifindex(),
            &super::prog::tc_switch_program(fast),
            "rtlan_stc",
        );
        Ok(TcPacketPort::new(vec![other, ipv4, ipv6], 0, tc))
    }

    fn new(
        sockets: Vec<PacketPort>,
        send: usize,
        tc: Option<(OwnedFd, XdpProgram)>,
    ) -> TcPacketPort {
        let mut port = TcPacketPort {
            sockets,
            send,
            tc,
            counters: PortCounters::default(),
        };
        port.merge();
        port
    }

    /// Whether the TC program is attached (the fast path can open on this port).
    pub fn has_program(&self) -> bool {
        self.tc.is_some()
    }

    fn sender(&self) -> &PacketPort {
        &self.sockets[self.send]
    }

    /// The sending socket's counters, with what the others received added.
    fn merge(&mut self) {
        let mut c = self.sender().counters().clone();
        for (i, side) in self.sockets.iter().enumerate() {
            if i != self.send {
                c.add_received(side.counters());
            }
        }
        self.counters = c;
    }
}

/// Maps socket `which`'s error to the port's.
fn socket_error<'a>(
    ifname: &'a str,
    which: &'static str,
) -> impl FnOnce(PacketError) -> TcPacketPortError + 'a {
    move |source| TcPacketPortError::Socket {
        ifname: ifname.to_string(),
        which,
        source,
    }
}

impl AsRawFd for TcPacketPort {
    fn as_raw_fd(&self) -> RawFd {
        self.sender().as_raw_fd()
    }
}

impl crate::driver::Port for TcPacketPort {
    fn ifname(&self) -> &str {
        self.sender().ifname()
    }

    fn ifindex(&self) -> u32 {
        self.sender().ifindex()
    }

    fn mac(&self) -> Address {
        self.sender().mac()
    }

    fn counters(&self) -> &PortCounters {
        &self.counters
    }

    /// The sockets in their order: a router's control socket first (QSR §6.2), then ARP,
    /// switched paths and the rest.
    fn receive_stamped<F: FnMut(&[u8], Option<u64>)>(
        &mut self,
        budget: usize,
        mut deliver: F,
    ) -> usize {
        let mut stamped = |frame: &[u8], t: u64| deliver(frame, Some(t));
        let mut n = 0;
        for socket in &mut self.sockets {
            n += socket.receive_stamped(budget - n, &mut stamped);
        }
        if n > 0 {
            self.merge();
        }
        n
    }

    fn transmit_with<F: FnOnce(&mut [u8]) -> Option<usize>>(&mut self, produce: F) -> TxOutcome {
        let send = self.send;
        let out = self.sockets[send].transmit_with(produce);
        if out == TxOutcome::Queued {
            self.counters.tx_frames = self.sockets[send].counters().tx_frames;
            self.counters.tx_bytes = self.sockets[send].counters().tx_bytes;
        }
        out
    }

    fn flush(&mut self) -> io::Result<()> {
        let send = self.send;
        let out = self.sockets[send].flush();
        self.merge();
        out
    }

    fn flush_pending(&self) -> bool {
        self.sender().flush_pending()
    }

    fn tx_blocked(&self) -> bool {
        self.sender().tx_blocked()
    }

    fn take_error(&mut self) -> Option<io::Error> {
        let e = self.sockets.iter_mut().find_map(PacketPort::take_error);
        self.merge();
        e
    }

    fn read_kernel_drops(&mut self) {
        for socket in &mut self.sockets {
            socket.read_kernel_drops();
        }
        self.merge();
    }

    fn carrier(&self) -> Option<bool> {
        self.sender().carrier()
    }

    fn extra_hints(&mut self) {
        for socket in &mut self.sockets {
            socket.superframes_hinted();
        }
    }

    fn extra_ready(&mut self) {
        for socket in &mut self.sockets {
            socket.superframes_ready();
        }
    }

    fn extra_fds(&self) -> Vec<RawFd> {
        let mut fds = Vec::new();
        for (i, socket) in self.sockets.iter().enumerate() {
            if i != self.send {
                fds.push(socket.as_raw_fd());
            }
            fds.extend(socket.superframe_fd());
        }
        fds
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::packet::cbpf;

    /// Runs `filter` on `frame` (untagged).
    fn run(filter: &[libc::sock_filter], frame: &[u8]) -> u32 {
        run_skb(filter, frame, false)
    }

    /// Runs `filter` on `frame`, `tagged`: a tag the kernel moved into metadata.
    fn run_skb(filter: &[libc::sock_filter], frame: &[u8], tagged: bool) -> u32 {
        cbpf::run(filter, frame, frame.len() as u32, tagged)
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

    #[test]
    fn a_switch_port_taps_what_its_program_never_forwards_and_binds_the_rest() {
        let (other, untagged) = (other_filter(), untagged_filter());
        // `bound`: the bound socket of its EtherType takes it, else the tap.
        for (what, ethertype, tagged, bound) in [
            ("IPv4", 0x0800, false, true),
            ("IPv6", 0x86dd, false, true),
            ("ARP", 0x0806, false, false),
            ("STP/LLC", 0x0026, false, false),
            ("tagged IPv4", 0x0800, true, false),
            ("tagged IPv6", 0x86dd, true, false),
            ("tagged ARP", 0x0806, true, false),
        ] {
            let f = frame(ethertype, 0x45, 6);
            assert_eq!(run_skb(&other, &f, tagged) == ALL, !bound, "tap: {what}");
            if [0x0800, 0x86dd].contains(&ethertype) {
                assert_eq!(
                    run_skb(&untagged, &f, tagged) == ALL,
                    bound,
                    "bound: {what}"
                );
            }
        }
    }
}
