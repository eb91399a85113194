//! AF_PACKET switch ports with PACKET_MMAP rings (EtheReal §3: the switch sees every frame on
//! every port and sends frames with any source address).
//!
//! A [`PacketPort`] is one `AF_PACKET`/`SOCK_RAW` socket bound to one interface for `ETH_P_ALL`,
//! in promiscuous mode (`PACKET_MR_PROMISC`), not receiving its own sends
//! (`PACKET_IGNORE_OUTGOING`), with a TPACKET_V2 RX ring and TX ring in one mapping. V2 rather
//! than V3 because V3 hands frames over in blocks retired by a timer, which adds up to a
//! millisecond of latency; V2 wakes the reader per frame. Sends are batched: frames are written
//! into TX slots and one `sendto(fd, NULL, 0, MSG_DONTWAIT)` flushes them all. No allocation per
//! frame: the core reads received frames in place and writes frames to send straight into slots.
//!
//! Written against `libc` directly because no maintained crate exposes TPACKET_V2 TX rings.

pub(crate) mod cbpf;
pub(crate) mod iface;
mod kicker;
mod ring;
mod superframe;

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use rtlan_wire::ethernet::Address;

use kicker::Kicker;
pub use kicker::TxThreadCpu;
use ring::{Geometry, Mapping, Ring, RX_HEADER_END, TX_DATA_OFFSET};
pub use ring::{FRAME_SIZE, RX_MAX_FRAME, TX_MAX_FRAME};
use superframe::SuperFrameSocket;

/// Opening or configuring a packet port failed.
#[derive(Debug, thiserror::Error)]
pub enum PacketError {
    /// The interface name is empty, too long or contains NUL.
    #[error("`{0}` is not a valid interface name")]
    BadName(String),
    /// No interface of that name exists in this network namespace.
    #[error("interface `{ifname}`: {source}")]
    NoSuchInterface {
        /// The name looked up.
        ifname: String,
        /// Why `if_nametoindex` failed.
        #[source]
        source: io::Error,
    },
    /// The port's transmit thread could not be started.
    #[error("starting the transmit thread: {0}")]
    TxThread(#[source] io::Error),
    /// The interface is not an Ethernet interface.
    #[error("interface `{ifname}` is not Ethernet (ARPHRD type {hw_type})")]
    NotEthernet {
        /// The interface.
        ifname: String,
        /// Its `ARPHRD_*` hardware type.
        hw_type: u16,
    },
    /// An interface `ioctl` failed.
    #[error("{what} on `{ifname}`: {source}")]
    Ioctl {
        /// Which request.
        what: &'static str,
        /// The interface.
        ifname: String,
        /// The system error.
        #[source]
        source: io::Error,
    },
    /// `socket(AF_PACKET)` failed (typically: not root / no `CAP_NET_RAW`).
    #[error("socket(AF_PACKET): {0}")]
    Socket(#[source] io::Error),
    /// A `setsockopt` failed.
    #[error("setsockopt {option}: {source}")]
    SetOption {
        /// The option.
        option: &'static str,
        /// The system error.
        #[source]
        source: io::Error,
    },
    /// Mapping the rings failed.
    #[error("mmap of the packet rings: {0}")]
    Mmap(#[source] io::Error),
    /// Binding to the interface failed.
    #[error("bind to `{ifname}`: {source}")]
    Bind {
        /// The interface.
        ifname: String,
        /// The system error.
        #[source]
        source: io::Error,
    },
}

/// How to open a port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortOptions {
    /// Slots per ring (RX and TX each), rounded up to whole 64 KiB blocks of 32 slots.
    pub ring_frames: usize,
    /// Send with `PACKET_QDISC_BYPASS`: straight to the driver, skipping the interface's qdisc
    /// (and with it any `tc` shaping on the port and `tcpdump` of our own output).
    pub qdisc_bypass: bool,
    /// Receive frames longer than a ring slot — GSO/GRO super-frames from hosts with offloads
    /// on — on a second socket, cut into wire frames before the node sees them
    /// (`superframe`, docs/offload.md). Without it such frames are truncated and dropped
    /// (`rx_truncated`).
    pub superframes: bool,
    /// Kick the TX ring from a thread of the port's own, placed as given, instead of from the
    /// data-plane thread (`kicker`, docs/threads.md); `None`: the data-plane thread kicks.
    pub tx_thread: Option<TxThreadCpu>,
}

impl Default for PortOptions {
    fn default() -> Self {
        PortOptions {
            ring_frames: 2048,
            qdisc_bypass: false,
            superframes: true,
            tx_thread: None,
        }
    }
}

/// Counters kept by the shell for one port (the core counts forwarding decisions separately).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct PortCounters {
    /// Frames handed to the core.
    pub rx_frames: u64,
    /// Bytes handed to the core.
    pub rx_bytes: u64,
    /// Frames dropped because the slot held only part of them (`tp_snaplen < tp_len`).
    pub rx_truncated: u64,
    /// Frames whose checksum the sender left to offload (`TP_STATUS_CSUMNOTREADY`): the
    /// shell fills in their TCP or UDP checksum before the node sees them.
    pub rx_csum_not_ready: u64,
    /// Of those, frames whose checksum could not be filled in (not TCP or UDP over IPv4 or
    /// IPv6 without extension headers); forwarded as they came.
    pub rx_csum_unfilled: u64,
    /// Super-frames (longer than a ring slot) received and cut into wire frames; each of
    /// those frames also counts in `rx_frames` and `rx_bytes`.
    pub rx_superframes: u64,
    /// Wire frames cut from super-frames.
    pub rx_superframe_segments: u64,
    /// Super-frames dropped: longer than 64 KiB, or a GSO type or header that cannot be cut
    /// (`rtlan_wire::gso`).
    pub rx_superframe_dropped: u64,
    /// Frames whose 802.1Q tag the kernel had stripped and we put back.
    pub rx_vlan_reinserted: u64,
    /// Slots whose descriptor made no sense (offset/length outside the slot); dropped.
    pub rx_bad_descriptor: u64,
    /// Frames the kernel dropped because the RX ring was full (`PACKET_STATISTICS`).
    pub rx_kernel_drops: u64,
    /// Frames queued for sending.
    pub tx_frames: u64,
    /// Bytes queued for sending.
    pub tx_bytes: u64,
    /// Times the TX ring was found full when the core might have had a frame to send.
    pub tx_ring_full: u64,
    /// `sendto` flushes that failed (frames stay queued and are retried).
    pub tx_send_errors: u64,
    /// Frames the kernel rejected as malformed (`TP_STATUS_WRONG_FORMAT`).
    pub tx_wrong_format: u64,
    /// Frames the core produced that are empty or larger than a TX slot; dropped.
    pub tx_bad_length: u64,
    /// Socket errors reported asynchronously (e.g. `ENETDOWN` when the interface went away).
    pub socket_errors: u64,
    /// With a transmit thread (docs/threads.md): the ring kicks it made.
    pub tx_thread_kicks: u64,
    /// Of those, kicks that failed (retried by the thread; the error reaches the data plane).
    pub tx_thread_failed_kicks: u64,
    /// Largest time from the data-plane thread's doorbell to the kick, nanoseconds.
    pub tx_thread_wait_max_ns: u64,
    /// Sum of those times, nanoseconds (divide by `tx_thread_kicks` for the mean).
    pub tx_thread_wait_sum_ns: u64,
}

impl PortCounters {
    /// Adds what `other` received (its `rx_*` counters and socket errors) to these: a port of
    /// several sockets that sends through one.
    pub fn add_received(&mut self, other: &PortCounters) {
        self.rx_frames += other.rx_frames;
        self.rx_bytes += other.rx_bytes;
        self.rx_truncated += other.rx_truncated;
        self.rx_csum_not_ready += other.rx_csum_not_ready;
        self.rx_csum_unfilled += other.rx_csum_unfilled;
        self.rx_superframes += other.rx_superframes;
        self.rx_superframe_segments += other.rx_superframe_segments;
        self.rx_superframe_dropped += other.rx_superframe_dropped;
        self.rx_vlan_reinserted += other.rx_vlan_reinserted;
        self.rx_bad_descriptor += other.rx_bad_descriptor;
        self.rx_kernel_drops += other.rx_kernel_drops;
        self.socket_errors += other.socket_errors;
    }
}

/// What [`PacketPort::transmit_with`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxOutcome {
    /// A frame was placed in the TX ring (flush with [`PacketPort::flush`]).
    Queued,
    /// The producer had nothing to send.
    Empty,
    /// No free slot; the producer was not called.
    RingFull,
}

/// One switch port: a packet socket with mapped RX and TX rings.
#[derive(Debug)]
pub struct PacketPort {
    // Declared first: the transmit thread is joined before the socket it kicks is closed.
    kicker: Option<Kicker>,
    ifname: String,
    ifindex: u32,
    mac: Address,
    rx: Ring,
    tx: Ring,
    // Declared after the rings: dropped (unmapped) after them.
    _mapping: Mapping,
    fd: OwnedFd,
    unflushed: usize,
    tx_blocked: bool,
    counters: PortCounters,
    /// Frames longer than a slot ([`PortOptions::superframes`]).
    superframes: Option<SuperFrameSocket>,
    /// Whether the super-frame socket may hold frames: set at start and when its descriptor is
    /// reported readable ([`PacketPort::superframes_ready`]), cleared when a read finds it
    /// empty — but only once readiness is reported at all ([`PacketPort::superframes_hinted`],
    /// the driver): this saves a `recvmsg` per receive while no super-frame arrives.
    superframes_ready: bool,
    /// Whether readiness of the super-frame socket is reported.
    superframes_hinted: bool,
}

fn set_option<T>(
    fd: RawFd,
    name: libc::c_int,
    option: &'static str,
    value: &T,
) -> Result<(), PacketError> {
    set_level_option(fd, libc::SOL_PACKET, name, option, value)
}

/// [`set_option`] at any `level` (`SOL_SOCKET`, ...).
pub(crate) fn set_level_option<T>(
    fd: RawFd,
    level: libc::c_int,
    name: libc::c_int,
    option: &'static str,
    value: &T,
) -> Result<(), PacketError> {
    // SAFETY: `value` points to a live `T` of the size passed; the kernel only reads it.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (value as *const T).cast(),
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(PacketError::SetOption {
            option,
            source: io::Error::last_os_error(),
        });
    }
    Ok(())
}

/// A non-blocking `AF_PACKET`/`SOCK_RAW` socket for protocol 0: it receives nothing until
/// [`bind`] binds it to one interface and protocol.
pub(crate) fn packet_socket() -> Result<OwnedFd, PacketError> {
    // SAFETY: plain system call; the result is checked.
    let raw = unsafe {
        libc::socket(
            libc::AF_PACKET,
            libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        )
    };
    if raw < 0 {
        return Err(PacketError::Socket(io::Error::last_os_error()));
    }
    // SAFETY: `raw` is a fresh descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

/// Binds packet socket `fd` to interface `ifindex` (`ifname`) and EtherType `protocol`.
pub(crate) fn bind(
    fd: RawFd,
    ifname: &str,
    ifindex: u32,
    protocol: u16,
) -> Result<(), PacketError> {
    // SAFETY: all-zero is a valid sockaddr_ll; the fields that matter are set below.
    let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    addr.sll_family = libc::AF_PACKET as libc::c_ushort;
    addr.sll_protocol = protocol.to_be();
    // Interface indices are positive ints in the kernel.
    addr.sll_ifindex = ifindex as libc::c_int;
    // SAFETY: `addr` is a valid sockaddr_ll and the length passed is its size.
    let rc = unsafe {
        libc::bind(
            fd,
            (&addr as *const libc::sockaddr_ll).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(PacketError::Bind {
            ifname: ifname.to_string(),
            source: io::Error::last_os_error(),
        });
    }
    Ok(())
}

/// Attaches the classic BPF socket filter `filter` to socket `fd`.
pub(crate) fn attach_filter(fd: RawFd, filter: &[libc::sock_filter]) -> Result<(), PacketError> {
    let program = libc::sock_fprog {
        len: u16::try_from(filter.len()).map_err(|_| PacketError::SetOption {
            option: "SO_ATTACH_FILTER",
            source: io::Error::from(io::ErrorKind::InvalidInput),
        })?,
        filter: filter.as_ptr().cast_mut(),
    };
    // SAFETY: `program` points to `filter`, live for the call; the kernel copies it.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_ATTACH_FILTER,
            (&program as *const libc::sock_fprog).cast(),
            std::mem::size_of::<libc::sock_fprog>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(PacketError::SetOption {
            option: "SO_ATTACH_FILTER",
            source: io::Error::last_os_error(),
        });
    }
    Ok(())
}

/// The index of interface `ifname` in the calling thread's namespace, or why there is none.
pub fn iface_index(ifname: &str) -> Result<u32, PacketError> {
    iface::ifindex(ifname)
}

/// The Ethernet MAC address of interface `ifname` in the calling thread's namespace.
pub fn iface_mac(ifname: &str) -> Result<Address, PacketError> {
    // SAFETY: socket(2) with constant arguments; the descriptor is owned below.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(PacketError::Socket(io::Error::last_os_error()));
    }
    // SAFETY: `fd` is a new descriptor nothing else owns.
    let fd = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
    iface::hardware_address(fd.as_raw_fd(), ifname)
}

impl PacketPort {
    /// Opens interface `ifname` (in the calling thread's network namespace) as a switch port.
    pub fn open(ifname: &str, options: &PortOptions) -> Result<Self, PacketError> {
        Self::open_bound(ifname, options, libc::ETH_P_ALL as u16, &[])
    }

    /// Opens `ifname` as [`PacketPort::open`] does, but bound to EtherType `protocol` (a
    /// protocol handler, served after the interface's TC ingress hook, unlike `ETH_P_ALL`'s
    /// taps) and, unless `filter` is empty, with that classic BPF socket filter.
    pub fn open_bound(
        ifname: &str,
        options: &PortOptions,
        protocol: u16,
        filter: &[libc::sock_filter],
    ) -> Result<Self, PacketError> {
        let ifindex = iface::ifindex(ifname)?;
        let fd = packet_socket()?;
        let raw = fd.as_raw_fd();
        let mac = iface::hardware_address(raw, ifname)?;
        if !iface::is_up(raw, ifname)? {
            tracing::warn!(
                ifname,
                "interface is down; the port will see no traffic until it is up"
            );
        }

        let version = libc::tpacket_versions::TPACKET_V2 as libc::c_int;
        set_option(raw, libc::PACKET_VERSION, "PACKET_VERSION", &version)?;
        // Discard malformed TX frames instead of wedging the ring on them.
        set_option(raw, libc::PACKET_LOSS, "PACKET_LOSS", &1 as &libc::c_int)?;
        set_option(
            raw,
            libc::PACKET_IGNORE_OUTGOING,
            "PACKET_IGNORE_OUTGOING",
            &1 as &libc::c_int,
        )?;
        if options.qdisc_bypass {
            set_option(
                raw,
                libc::PACKET_QDISC_BYPASS,
                "PACKET_QDISC_BYPASS",
                &1 as &libc::c_int,
            )?;
        }
        let geometry = Geometry::with_frames(options.ring_frames);
        set_option(
            raw,
            libc::PACKET_RX_RING,
            "PACKET_RX_RING",
            &geometry.request(),
        )?;
        set_option(
            raw,
            libc::PACKET_TX_RING,
            "PACKET_TX_RING",
            &geometry.request(),
        )?;
        let mapping = Mapping::new(raw, 2 * geometry.bytes()).map_err(PacketError::Mmap)?;
        if options.superframes {
            attach_filter(raw, &superframe::by_length(filter, false))?;
        } else if !filter.is_empty() {
            attach_filter(raw, filter)?;
        }
        let rx = mapping.ring(0, geometry);
        let tx = mapping.ring(geometry.bytes(), geometry);

        bind(raw, ifname, ifindex, protocol)?;
        let mreq = libc::packet_mreq {
            mr_ifindex: ifindex as libc::c_int,
            mr_type: libc::PACKET_MR_PROMISC as libc::c_ushort,
            mr_alen: 0,
            mr_address: [0; 8],
        };
        set_option(
            raw,
            libc::PACKET_ADD_MEMBERSHIP,
            "PACKET_ADD_MEMBERSHIP",
            &mreq,
        )?;

        let superframes = if options.superframes {
            Some(SuperFrameSocket::open(ifname, ifindex, protocol, filter)?)
        } else {
            None
        };

        let kicker = match options.tx_thread {
            Some(cpu) => Some(Kicker::start(raw, ifname, cpu).map_err(PacketError::TxThread)?),
            None => None,
        };

        Ok(PacketPort {
            kicker,
            superframes,
            superframes_ready: true,
            superframes_hinted: false,
            ifname: ifname.to_string(),
            ifindex,
            mac,
            rx,
            tx,
            _mapping: mapping,
            fd,
            unflushed: 0,
            tx_blocked: false,
            counters: PortCounters::default(),
        })
    }

    /// The interface name.
    pub fn ifname(&self) -> &str {
        &self.ifname
    }

    /// The interface index.
    pub fn ifindex(&self) -> u32 {
        self.ifindex
    }

    /// The interface's MAC address.
    pub fn mac(&self) -> Address {
        self.mac
    }

    /// The shell's counters for this port.
    pub fn counters(&self) -> &PortCounters {
        &self.counters
    }

    /// The super-frame socket's descriptor ([`PortOptions::superframes`]), which signals
    /// received frames too.
    pub fn superframe_fd(&self) -> Option<RawFd> {
        self.superframes.as_ref().map(AsRawFd::as_raw_fd)
    }

    /// From now on the caller reports whenever the super-frame socket
    /// ([`PacketPort::superframe_fd`]) is readable, with [`PacketPort::superframes_ready`]:
    /// after a read finds it empty, the port does not look again until told. Without it, every
    /// receive looks.
    pub fn superframes_hinted(&mut self) {
        self.superframes_hinted = true;
    }

    /// The super-frame socket's descriptor was reported readable: the next receive reads it.
    pub fn superframes_ready(&mut self) {
        self.superframes_ready = self.superframes.is_some();
    }

    /// Whether a received frame is waiting in the RX ring.
    pub fn rx_pending(&self) -> bool {
        self.rx.head_status() & libc::TP_STATUS_USER != 0
    }

    /// Hands up to `budget` received frames, in order, to `deliver`, returning them to the kernel
    /// afterwards. Returns the number of slots consumed (delivered or dropped); if that equals
    /// `budget`, more may be waiting.
    pub fn receive<F: FnMut(&[u8])>(&mut self, budget: usize, mut deliver: F) -> usize {
        self.receive_stamped(budget, |frame, _| deliver(frame))
    }

    /// [`PacketPort::receive`], with each frame's arrival time: when the kernel put it in the
    /// ring, in the receive softirq (`tp_sec`/`tp_nsec`, `CLOCK_REALTIME` nanoseconds).
    pub fn receive_stamped<F: FnMut(&[u8], u64)>(
        &mut self,
        budget: usize,
        mut deliver: F,
    ) -> usize {
        let mut consumed = 0;
        let mut losing = false;
        // The next super-frame's arrival time: the two sockets are read merged by it (one
        // `recvmsg` per call when none waits, one per super-frame otherwise).
        let mut next_super = match self.superframes.as_mut() {
            Some(s) if self.superframes_ready => s.peek(&mut self.counters),
            _ => None,
        };
        self.superframes_ready = next_super.is_some() || !self.superframes_hinted;
        while consumed < budget {
            let status = self.rx.head_status();
            let ring = status & libc::TP_STATUS_USER != 0;
            if let (Some(t), Some(s)) = (next_super, self.superframes.as_mut()) {
                if !ring || ring::stamp(self.rx.head_header()) > t {
                    s.deliver(&mut self.counters, &mut deliver);
                    consumed += 1;
                    next_super = s.peek(&mut self.counters);
                    self.superframes_ready = next_super.is_some() || !self.superframes_hinted;
                    continue;
                }
            }
            if !ring {
                break;
            }
            // Under overload every slot carries the flag: read the drop count (a system call)
            // once per batch, not once per frame.
            losing |= status & libc::TP_STATUS_LOSING != 0;
            if let Some((frame, stamp)) = self.head_frame(status) {
                deliver(frame, stamp);
            }
            self.rx.release_head(libc::TP_STATUS_KERNEL);
            consumed += 1;
        }
        if losing {
            self.read_kernel_drops();
        }
        consumed
    }

    /// Validates the RX head slot, restores a stripped VLAN tag, updates counters and returns the
    /// frame to deliver with its arrival time (`tp_sec`/`tp_nsec`), or `None` if it is dropped.
    fn head_frame(&mut self, status: u32) -> Option<(&[u8], u64)> {
        let hdr = self.rx.head_header();
        let stamp = ring::stamp(hdr);
        let mac_off = usize::from(hdr.tp_mac);
        let snap = hdr.tp_snaplen as usize;
        if hdr.tp_snaplen < hdr.tp_len {
            self.counters.rx_truncated += 1;
            return None;
        }
        if mac_off < RX_HEADER_END || mac_off.saturating_add(snap) > FRAME_SIZE {
            self.counters.rx_bad_descriptor += 1;
            return None;
        }
        let (start, len) = if status & libc::TP_STATUS_VLAN_VALID != 0 {
            // The kernel moved the 802.1Q tag into metadata; put it back between the source
            // address and the EtherType, using the free bytes in front of the frame.
            if mac_off < RX_HEADER_END + 4 || snap < 12 {
                self.counters.rx_bad_descriptor += 1;
                return None;
            }
            let tpid = if status & libc::TP_STATUS_VLAN_TPID_VALID != 0 && hdr.tp_vlan_tpid != 0 {
                hdr.tp_vlan_tpid
            } else {
                libc::ETH_P_8021Q as u16
            };
            let bytes = self.rx.head_bytes(mac_off - 4, snap + 4)?;
            bytes.copy_within(4..16, 0);
            bytes[12..14].copy_from_slice(&tpid.to_be_bytes());
            bytes[14..16].copy_from_slice(&hdr.tp_vlan_tci.to_be_bytes());
            self.counters.rx_vlan_reinserted += 1;
            (mac_off - 4, snap + 4)
        } else {
            (mac_off, snap)
        };
        let bytes = self.rx.head_bytes(start, len)?;
        if status & libc::TP_STATUS_CSUMNOTREADY != 0 {
            // The sender left its TCP or UDP checksum to an offload that no device on the way
            // performs now: the node forwards what it reads, so fill it in here.
            self.counters.rx_csum_not_ready += 1;
            if rtlan_wire::gso::fill_l4_checksum(bytes).is_err() {
                self.counters.rx_csum_unfilled += 1;
            }
        }
        self.counters.rx_frames += 1;
        self.counters.rx_bytes += len as u64;
        Some((&*bytes, stamp))
    }

    /// Whether the last attempt to send found the TX ring full and no slot has been freed since
    /// (the driver then waits for `EPOLLOUT` before producing more for this port).
    pub fn tx_blocked(&self) -> bool {
        self.tx_blocked
    }

    /// Whether frames are queued in the TX ring but not yet flushed.
    pub fn flush_pending(&self) -> bool {
        self.unflushed > 0
    }

    /// Whether the TX head slot is free; reclaims slots the kernel rejected.
    fn tx_slot_free(&mut self) -> bool {
        let status = self.tx.head_status();
        if status & libc::TP_STATUS_WRONG_FORMAT != 0 {
            // The kernel gave the slot back with the frame refused; take it back as free.
            self.counters.tx_wrong_format += 1;
            self.tx.set_head_status(libc::TP_STATUS_AVAILABLE);
            return true;
        }
        status & (libc::TP_STATUS_SEND_REQUEST | libc::TP_STATUS_SENDING) == 0
    }

    /// If a TX slot is free, lets `produce` write one frame into it (returning the frame's
    /// length, or `None` if it has nothing to send) and queues that frame.
    pub fn transmit_with<F: FnOnce(&mut [u8]) -> Option<usize>>(
        &mut self,
        produce: F,
    ) -> TxOutcome {
        if !self.tx_slot_free() {
            if !self.tx_blocked {
                self.tx_blocked = true;
                self.counters.tx_ring_full += 1;
            }
            return TxOutcome::RingFull;
        }
        self.tx_blocked = false;
        let Some(slot) = self.tx.head_bytes(TX_DATA_OFFSET, TX_MAX_FRAME) else {
            // Unreachable: TX_DATA_OFFSET + TX_MAX_FRAME == FRAME_SIZE by construction.
            return TxOutcome::Empty;
        };
        let Some(len) = produce(slot) else {
            return TxOutcome::Empty;
        };
        if len == 0 || len > TX_MAX_FRAME {
            self.counters.tx_bad_length += 1;
            return TxOutcome::Queued;
        }
        // len <= TX_MAX_FRAME < u32::MAX.
        self.tx.set_head_len(len as u32);
        self.tx.release_head(libc::TP_STATUS_SEND_REQUEST);
        self.unflushed += 1;
        self.counters.tx_frames += 1;
        self.counters.tx_bytes += len as u64;
        TxOutcome::Queued
    }

    /// Asks the kernel to send every queued frame (one `sendto` for the batch). A failure is
    /// counted and returned; the frames stay queued for the next flush. With a transmit thread
    /// ([`PortOptions::tx_thread`]) it rings the thread's doorbell instead, and returns the
    /// error of a kick of the thread's that failed since the last flush (the thread retries).
    pub fn flush(&mut self) -> io::Result<()> {
        if let Some(kicker) = &self.kicker {
            if self.unflushed > 0 {
                kicker.ring();
                self.unflushed = 0;
            }
            return match kicker.take_error() {
                Some(err) => {
                    self.counters.tx_send_errors += 1;
                    Err(err)
                }
                None => Ok(()),
            };
        }
        if self.unflushed == 0 {
            return Ok(());
        }
        // SAFETY: a NULL buffer of length 0 with no address is how a TX ring is kicked; the
        // kernel reads the frames from the ring we own.
        let rc = unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                std::ptr::null(),
                0,
                libc::MSG_DONTWAIT,
                std::ptr::null(),
                0,
            )
        };
        if rc < 0 {
            self.counters.tx_send_errors += 1;
            return Err(io::Error::last_os_error());
        }
        self.unflushed = 0;
        Ok(())
    }

    /// Sets the socket's send buffer to `bytes`, past `net.core.wmem_max` (`SO_SNDBUFFORCE`,
    /// needs `CAP_NET_ADMIN`). Frames the TX ring handed to the kernel count against it until
    /// their buffers are freed — on a veth, until the peer's receive has run, which with
    /// receive steering is on another CPU's backlog: a flood needs more than the default.
    pub fn force_send_buffer(&self, bytes: usize) -> Result<(), PacketError> {
        let value = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
        set_level_option(
            self.fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_SNDBUFFORCE,
            "SO_SNDBUFFORCE",
            &value,
        )
    }

    /// Waits until the TX ring has a free slot and the socket room to send (`POLLOUT`), for at
    /// most `timeout`; returns whether it has. An interrupted wait returns `false`.
    pub fn wait_writable(&self, timeout: std::time::Duration) -> bool {
        let mut pfd = libc::pollfd {
            fd: self.fd.as_raw_fd(),
            events: libc::POLLOUT,
            revents: 0,
        };
        let ms = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
        // SAFETY: one valid pollfd for the duration of the call.
        let n = unsafe { libc::poll(&mut pfd, 1, ms) };
        n > 0 && pfd.revents & libc::POLLOUT != 0
    }

    /// Whether the interface is up and has its carrier (`None` if the flags cannot be read,
    /// e.g. the interface is gone).
    pub fn carrier(&self) -> Option<bool> {
        iface::has_carrier(self.fd.as_raw_fd(), &self.ifname).ok()
    }

    /// Reads and clears a pending asynchronous socket error (`SO_ERROR`), counting it.
    pub fn take_error(&mut self) -> Option<io::Error> {
        let mut err: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: `err`/`len` are valid for writes of the sizes given.
        let rc = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_ERROR,
                (&mut err as *mut libc::c_int).cast(),
                &mut len,
            )
        };
        if rc < 0 || err == 0 {
            return None;
        }
        self.counters.socket_errors += 1;
        Some(io::Error::from_raw_os_error(err))
    }

    /// Adds the kernel's drop count since the last call (`PACKET_STATISTICS`, which resets on
    /// read) to [`PortCounters::rx_kernel_drops`].
    pub fn read_kernel_drops(&mut self) {
        let mut stats = libc::tpacket_stats {
            tp_packets: 0,
            tp_drops: 0,
        };
        let mut len = std::mem::size_of::<libc::tpacket_stats>() as libc::socklen_t;
        // SAFETY: `stats`/`len` are valid for writes of the sizes given.
        let rc = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_STATISTICS,
                (&mut stats as *mut libc::tpacket_stats).cast(),
                &mut len,
            )
        };
        if rc == 0 {
            self.counters.rx_kernel_drops += u64::from(stats.tp_drops);
        }
        if let Some(kicker) = &self.kicker {
            let k = kicker.stats();
            self.counters.tx_thread_kicks = k.kicks;
            self.counters.tx_thread_failed_kicks = k.failed_kicks;
            self.counters.tx_thread_wait_max_ns = k.wait_max_ns;
            self.counters.tx_thread_wait_sum_ns = k.wait_sum_ns;
            if !kicker.running() {
                tracing::error!(ifname = %self.ifname, "the port's transmit thread has ended");
            }
        }
    }
}

impl AsRawFd for PacketPort {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}
