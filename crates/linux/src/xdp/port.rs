//! An AF_XDP port (`docs/afxdp.md`): the interface's frames steered by [`super::prog`] into an
//! XDP socket whose UMEM the node reads and writes in place, batched on every ring.
//!
//! - UMEM: [`FRAMES`] frames of [`FRAME_SIZE`] bytes in one anonymous mapping; the first half is
//!   lent to the kernel for receiving (the fill ring), the second half is ours for sending
//!   (taken from a free list, returned by the completion ring).
//! - A socket per receive queue, all on the one UMEM: a multi-queue NIC (or a veth made with
//!   `numrxqueues`) spreads frames over its queues by hash, and the program hands each frame to
//!   the socket of its queue. The receive half of the UMEM is split between the queues; queue
//!   0's socket also sends. The queues are read from the driver (`ETHTOOL_GCHANNELS`); more
//!   than [`MAX_QUEUES`] is refused (an `auto` data plane then falls back to AF_PACKET).
//! - With [`Steering::Router`] the kernel keeps ARP and the node's own traffic (the program's
//!   module doc); the node still sees them through a packet socket on the same interface — the
//!   tap, receive only (it also reads the interface's carrier) — as it does on an AF_PACKET
//!   port; with [`Steering::Everything`] the tap sees nothing. Both descriptors sit in one `epoll` of
//!   the port's own, which is the descriptor the driver waits on.
//!
//! Rings, UMEM registration and binding are `xdpilone`'s (pure Rust, no libbpf); the program and
//! its map are ours ([`super`]).

use std::io;
use std::num::NonZeroU32;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;

use rtlan_wire::ethernet::Address;
use xdpilone::xdp::XdpDesc;
use xdpilone::{
    BufIdx, DeviceQueue, IfInfo, RingRx, RingTx, Socket, SocketConfig, Umem, UmemConfig,
};

use super::{program, Steering, XdpProgram, XskMap, XDP_PASS};
use crate::packet::{PacketPort, PortCounters, PortOptions, TxOutcome};

/// Bytes per UMEM frame: a page holds two; the largest frame a node builds is 1,518 bytes.
pub const FRAME_SIZE: u32 = 2048;
/// UMEM frames: half for receiving, half for sending.
pub const FRAMES: u32 = 4096;
const RX_FRAMES: u32 = FRAMES / 2;
/// Most kicks of one flush: the whole TX ring at 32 frames per kick.
const MAX_KICKS: u32 = (FRAMES - RX_FRAMES) / 32 + 1;

/// The most receive queues a port opens a socket on: each gets `RX_FRAMES / queues` frames to
/// receive into (128 at 16).
pub const MAX_QUEUES: u32 = 16;

/// Why an AF_XDP port could not be opened (the driver then falls back to AF_PACKET).
#[derive(Debug, thiserror::Error)]
pub enum XdpError {
    /// More receive queues than [`MAX_QUEUES`].
    #[error(
        "AF_XDP on `{ifname}`: {queues} receive queues, more than the {max} a port serves; \
         `ethtool -L {ifname} combined {max}` or data_plane = \"af_packet\""
    )]
    Queues {
        /// The interface.
        ifname: String,
        /// Its receive queues.
        queues: u32,
        /// [`MAX_QUEUES`].
        max: u32,
    },
    /// A step of the set-up failed.
    #[error("AF_XDP on `{ifname}`: {what}: {source}")]
    Setup {
        /// The interface.
        ifname: String,
        /// Which step.
        what: &'static str,
        /// The system error.
        #[source]
        source: io::Error,
    },
    /// The tap could not be opened.
    #[error("AF_XDP on `{ifname}`: the tap: {source}")]
    Tap {
        /// The interface.
        ifname: String,
        /// Why.
        #[source]
        source: crate::packet::PacketError,
    },
}

/// The anonymous mapping of the UMEM.
struct Area {
    ptr: NonNull<u8>,
    len: usize,
}

impl Drop for Area {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` are exactly the mapping made in `XdpPort::open`, and the socket
        // that used it is closed before this (field order of `XdpPort`).
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

/// An AF_XDP port (module docs).
pub struct XdpPort {
    /// Where the steering program runs, and whether the socket is zero-copy.
    mode: (super::XdpMode, bool),
    ifname: String,
    ifindex: u32,
    mac: Address,
    rx: RingRx,
    tx: RingTx,
    device: DeviceQueue,
    /// The sockets of receive queues 1 and up.
    queues: Vec<RxQueue>,
    /// The queue `receive` reads first (turns, so that no queue starves another).
    next_queue: usize,
    _link: OwnedFd,
    _program: XdpProgram,
    _map: XskMap,
    _socket: Socket,
    umem: Umem,
    tap: PacketPort,
    /// A router's: RSVP and IP options (QSR §6.2), read first.
    control: Option<PacketPort>,
    epoll: OwnedFd,
    /// Send frames not in the kernel's hands.
    free_tx: Vec<u64>,
    /// Descriptors written to the TX ring but not yet committed.
    unflushed: u32,
    /// Received frames to hand back to the fill ring.
    refill: Vec<u64>,
    counters: PortCounters,
    // Last: unmapped after everything that refers to it.
    _area: Area,
}

/// The socket of one more receive queue: its receive ring and its fill ring (each socket on a
/// shared UMEM has its own), receive only.
struct RxQueue {
    rx: RingRx,
    device: DeviceQueue,
    _socket: Socket,
}

/// The receive queues of `ifname` (`ETHTOOL_GCHANNELS`: rx + combined channels), 1 where the
/// driver does not say.
fn rx_queues(ifname: &str) -> u32 {
    /// `struct ethtool_channels` of `<linux/ethtool.h>`.
    #[repr(C)]
    #[derive(Default)]
    struct Channels {
        cmd: u32,
        max_rx: u32,
        max_tx: u32,
        max_other: u32,
        max_combined: u32,
        rx_count: u32,
        tx_count: u32,
        other_count: u32,
        combined_count: u32,
    }
    const ETHTOOL_GCHANNELS: u32 = 0x3c;
    const SIOCETHTOOL: libc::c_ulong = 0x8946;
    let mut ch = Channels {
        cmd: ETHTOOL_GCHANNELS,
        ..Channels::default()
    };
    // SAFETY: a zeroed ifreq, the name copied within its bounds (IFNAMSIZ − 1 at most), the
    // data pointer to `ch`, which outlives the ioctl; the socket is closed below.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return 1;
        }
        let mut ifr: libc::ifreq = std::mem::zeroed();
        for (d, s) in ifr
            .ifr_name
            .iter_mut()
            .zip(ifname.bytes().take(libc::IFNAMSIZ - 1))
        {
            *d = s as libc::c_char;
        }
        ifr.ifr_ifru.ifru_data = (&mut ch as *mut Channels).cast();
        let rc = libc::ioctl(fd, SIOCETHTOOL, &mut ifr);
        libc::close(fd);
        if rc < 0 {
            return 1;
        }
    }
    (ch.rx_count + ch.combined_count).max(1)
}

impl std::fmt::Debug for XdpPort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("XdpPort")
            .field("ifname", &self.ifname)
            .field("ifindex", &self.ifindex)
            .finish()
    }
}

/// The frame at UMEM offset `addr`, `len` bytes, if it lies within one frame.
///
/// # Safety
///
/// The UMEM is memory shared with the kernel, reached through raw pointers: the caller must
/// own the frame (received and not yet returned to the fill ring, or taken from the free send
/// list) and hold no other reference to it while the slice lives.
unsafe fn umem_frame(umem: &mut Umem, addr: u64, len: u32) -> Option<&mut [u8]> {
    let idx = u32::try_from(addr / u64::from(FRAME_SIZE)).ok()?;
    let chunk = umem.frame(BufIdx(idx))?;
    let within = (addr % u64::from(FRAME_SIZE)) as usize;
    let len = len as usize;
    if within + len > FRAME_SIZE as usize {
        return None;
    }
    // SAFETY: the chunk lies in the UMEM mapping, which outlives the port; the frame is the
    // caller's alone (above), so no other reference to these bytes is live.
    let bytes = unsafe { &mut *chunk.addr.as_ptr() };
    Some(&mut bytes[within..within + len])
}

fn errno(e: xdpilone::Errno) -> io::Error {
    io::Error::from_raw_os_error(e.get_raw())
}

impl XdpPort {
    /// Where the steering program runs (native or generic XDP) and whether the socket is
    /// zero-copy (else copy mode), as the kernel granted them.
    pub fn mode(&self) -> (super::XdpMode, bool) {
        self.mode
    }

    /// Opens `ifname` (in the calling thread's namespace) with the steering program.
    pub fn open(ifname: &str, steering: &Steering) -> Result<XdpPort, XdpError> {
        let setup = |what: &'static str| {
            let ifname = ifname.to_string();
            move |source: io::Error| XdpError::Setup {
                ifname,
                what,
                source,
            }
        };
        let tap_error = |source| XdpError::Tap {
            ifname: ifname.to_string(),
            source,
        };
        // The tap first: it checks the name and reads the MAC address as any port does. A
        // router's is two sockets bound to protocols (`tcport`'s control and ARP): RSVP gets
        // a ring of its own (QSR §6.2), and neither sees what the kernel keeps for itself.
        let (tap, control) = match steering {
            Steering::Router { .. } => {
                use super::tcport::{control_filter, side_socket, ETH_P_ARP, ETH_P_IP};
                let arp = side_socket(ifname, ETH_P_ARP, &[]).map_err(tap_error)?;
                let control =
                    side_socket(ifname, ETH_P_IP, &control_filter()).map_err(tap_error)?;
                (arp, Some(control))
            }
            _ => {
                // XDP takes every frame before the taps; a veth with XDP turns its peer's
                // segmentation offloads off, so no super-frame arrives here either.
                let options = PortOptions {
                    superframes: false,
                    ..PortOptions::default()
                };
                (PacketPort::open(ifname, &options).map_err(tap_error)?, None)
            }
        };
        let (ifindex, mac) = (tap.ifindex(), tap.mac());
        let nq = rx_queues(ifname);
        if nq > MAX_QUEUES {
            return Err(XdpError::Queues {
                ifname: ifname.to_string(),
                queues: nq,
                max: MAX_QUEUES,
            });
        }
        // Receive frames per queue: the largest power of two (the ring sizes' rule) that fits.
        let per_queue = 1 << (RX_FRAMES / nq).ilog2();
        let len = (FRAMES * FRAME_SIZE) as usize;
        // SAFETY: an anonymous private mapping of `len` bytes; the result is checked.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(setup("mapping the UMEM")(io::Error::last_os_error()));
        }
        let area = Area {
            ptr: NonNull::new(ptr.cast()).expect("mmap succeeded"),
            len,
        };
        let slice = NonNull::slice_from_raw_parts(area.ptr, len);
        let config = UmemConfig {
            fill_size: RX_FRAMES,
            complete_size: FRAMES - RX_FRAMES,
            frame_size: FRAME_SIZE,
            headroom: 0,
            flags: 0,
        };
        // SAFETY: the area is page-aligned (mmap), `len` bytes long, and outlives the UMEM
        // (`_area` is dropped last).
        let umem = unsafe { Umem::new(config, slice) }
            .map_err(|e| setup("registering the UMEM")(errno(e)))?;
        let mut info = IfInfo::invalid();
        info.from_ifindex(ifindex)
            .map_err(|e| setup("reading the interface")(errno(e)))?;
        info.set_queue(0);
        let socket = Socket::with_shared(&info, &umem)
            .map_err(|e| setup("creating the socket")(errno(e)))?;
        let mut device = umem
            .fq_cq(&socket)
            .map_err(|e| setup("the fill and completion rings")(errno(e)))?;
        let user = umem
            .rx_tx(
                &socket,
                &SocketConfig {
                    rx_size: NonZeroU32::new(per_queue),
                    tx_size: NonZeroU32::new(FRAMES - RX_FRAMES),
                    bind_flags: SocketConfig::XDP_BIND_NEED_WAKEUP,
                },
            )
            .map_err(|e| setup("the receive and transmit rings")(errno(e)))?;
        let rx = user
            .map_rx()
            .map_err(|e| setup("mapping the receive ring")(errno(e)))?;
        let tx = user
            .map_tx()
            .map_err(|e| setup("mapping the transmit ring")(errno(e)))?;
        umem.bind(&user)
            .map_err(|e| setup("binding the socket")(errno(e)))?;
        // Lend each queue its share of the receive half.
        let lend = |device: &mut DeviceQueue, q: u32| {
            let mut fill = device.fill(per_queue);
            fill.insert(
                (q * per_queue..(q + 1) * per_queue).map(|i| u64::from(i) * u64::from(FRAME_SIZE)),
            );
            fill.commit();
        };
        lend(&mut device, 0);
        let map = XskMap::new(nq).map_err(setup("creating the socket map"))?;
        map.insert(0, user.as_raw_fd())
            .map_err(setup("entering the socket in the map"))?;
        let mut queues = Vec::with_capacity(nq as usize - 1);
        for q in 1..nq {
            let mut info = IfInfo::invalid();
            info.from_ifindex(ifindex)
                .map_err(|e| setup("reading the interface")(errno(e)))?;
            info.set_queue(q);
            let socket =
                Socket::new(&info).map_err(|e| setup("creating a queue's socket")(errno(e)))?;
            let mut device = umem
                .fq_cq(&socket)
                .map_err(|e| setup("a queue's fill and completion rings")(errno(e)))?;
            let user = umem
                .rx_tx(
                    &socket,
                    &SocketConfig {
                        rx_size: NonZeroU32::new(per_queue),
                        tx_size: None,
                        // A socket sharing the UMEM may not name flags: it takes the first's.
                        bind_flags: 0,
                    },
                )
                .map_err(|e| setup("a queue's receive ring")(errno(e)))?;
            let rx = user
                .map_rx()
                .map_err(|e| setup("mapping a queue's receive ring")(errno(e)))?;
            umem.bind(&user)
                .map_err(|e| setup("binding a queue's socket")(errno(e)))?;
            lend(&mut device, q);
            map.insert(q, user.as_raw_fd())
                .map_err(setup("entering a queue's socket in the map"))?;
            queues.push(RxQueue {
                rx,
                device,
                _socket: socket,
            });
        }
        let prog = XdpProgram::load(&program(steering, map.fd(), XDP_PASS), "rtlan_steer")
            .map_err(setup("loading the XDP program"))?;
        let (link, mode) = prog
            .attach(ifindex)
            .map_err(setup("attaching the XDP program"))?;
        // SAFETY: epoll_create1 with a valid flag; checked below.
        let epfd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if epfd < 0 {
            return Err(setup("creating the port's epoll")(
                io::Error::last_os_error(),
            ));
        }
        // SAFETY: a fresh descriptor nothing else owns.
        let epoll = unsafe { OwnedFd::from_raw_fd(epfd) };
        let fds = [user.as_raw_fd(), tap.as_raw_fd()];
        for fd in fds
            .into_iter()
            .chain(control.as_ref().map(AsRawFd::as_raw_fd))
            .chain(queues.iter().map(|q| q.rx.as_raw_fd()))
        {
            let mut ev = libc::epoll_event {
                events: libc::EPOLLIN as u32,
                u64: fd as u64,
            };
            // SAFETY: valid descriptors and a valid event.
            if unsafe { libc::epoll_ctl(epfd, libc::EPOLL_CTL_ADD, fd, &mut ev) } < 0 {
                return Err(setup("watching the socket")(io::Error::last_os_error()));
            }
        }
        let free_tx = (RX_FRAMES..FRAMES)
            .map(|i| u64::from(i) * u64::from(FRAME_SIZE))
            .collect();
        let zc = zero_copy(user.as_raw_fd());
        let copy = if zc { "zero-copy" } else { "copy mode" };
        match mode {
            super::XdpMode::Native => {
                tracing::info!(ifname, queues = nq, "AF_XDP port open (native XDP, {copy})")
            }
            super::XdpMode::Generic => tracing::warn!(
                ifname,
                queues = nq,
                "AF_XDP port open on generic XDP (the driver has no native XDP: every frame \
                 is an skb first, slower than native; {copy})"
            ),
        }
        Ok(XdpPort {
            mode: (mode, zc),
            ifname: ifname.to_string(),
            ifindex,
            mac,
            rx,
            tx,
            device,
            queues,
            next_queue: 0,
            _link: link,
            _program: prog,
            _map: map,
            _socket: socket,
            umem,
            tap,
            control,
            epoll,
            free_tx,
            unflushed: 0,
            refill: Vec::with_capacity(per_queue as usize),
            counters: PortCounters::default(),
            _area: area,
        })
    }

    /// Returns completed send frames to the free list.
    fn reap(&mut self) {
        let mut done = self.device.complete(FRAMES - RX_FRAMES);
        while let Some(addr) = done.read() {
            self.free_tx.push(addr - addr % u64::from(FRAME_SIZE));
        }
        done.release();
    }

    /// The interface name.
    pub fn ifname(&self) -> &str {
        &self.ifname
    }

    /// The interface index.
    pub fn ifindex(&self) -> u32 {
        self.ifindex
    }

    /// The MAC address.
    pub fn mac(&self) -> Address {
        self.mac
    }

    /// Counters.
    pub fn counters(&self) -> &PortCounters {
        &self.counters
    }

    /// Hands up to `budget` received frames to `deliver`: the control socket's first, then the
    /// tap's, then the AF_XDP socket's.
    pub fn receive<F: FnMut(&[u8])>(&mut self, budget: usize, mut deliver: F) -> usize {
        let mut n = 0;
        if let Some(control) = self.control.as_mut() {
            n += control.receive(budget, &mut deliver);
        }
        n += self.tap.receive(budget - n, &mut deliver);
        // Every queue's socket, starting at a different one each call.
        let count = 1 + self.queues.len();
        let first = self.next_queue % count;
        self.next_queue = self.next_queue.wrapping_add(1);
        for k in 0..count {
            let want = u32::try_from(budget.saturating_sub(n)).unwrap_or(u32::MAX);
            if want == 0 {
                break;
            }
            let q = (first + k) % count;
            let (rx, device) = if q == 0 {
                (&mut self.rx, &mut self.device)
            } else {
                let x = &mut self.queues[q - 1];
                (&mut x.rx, &mut x.device)
            };
            n += Self::drain(
                rx,
                device,
                &mut self.umem,
                &mut self.refill,
                &mut self.counters,
                want,
                &mut deliver,
            );
        }
        n
    }

    /// Hands up to `want` frames of one queue's receive ring to `deliver`, straight from the
    /// ring (no copy, no allocation), and gives them back to that queue's fill ring.
    fn drain<F: FnMut(&[u8])>(
        rx: &mut RingRx,
        device: &mut DeviceQueue,
        umem: &mut Umem,
        refill: &mut Vec<u64>,
        counters: &mut PortCounters,
        want: u32,
        deliver: &mut F,
    ) -> usize {
        let mut n = 0;
        let mut reader = rx.receive(want);
        while let Some(d) = reader.read() {
            // SAFETY: a received frame is ours until it goes back to the fill ring below.
            match unsafe { umem_frame(umem, d.addr, d.len) } {
                Some(frame) => {
                    counters.rx_frames += 1;
                    counters.rx_bytes += u64::from(d.len);
                    deliver(frame);
                }
                None => counters.rx_bad_descriptor += 1,
            }
            refill.push(d.addr - d.addr % u64::from(FRAME_SIZE));
            n += 1;
        }
        reader.release();
        if !refill.is_empty() {
            let mut fill = device.fill(refill.len() as u32);
            let put = fill.insert(refill.iter().copied()) as usize;
            fill.commit();
            refill.drain(..put);
        }
        n
    }

    /// Lets `produce` write a frame into a free send frame and queues it.
    pub fn transmit_with<F: FnOnce(&mut [u8]) -> Option<usize>>(
        &mut self,
        produce: F,
    ) -> TxOutcome {
        if self.free_tx.is_empty() {
            self.reap();
        }
        let Some(addr) = self.free_tx.pop() else {
            self.counters.tx_ring_full += 1;
            return TxOutcome::RingFull;
        };
        // SAFETY: a frame from the free send list is ours until it goes into the TX ring.
        let Some(buf) = (unsafe { umem_frame(&mut self.umem, addr, FRAME_SIZE) }) else {
            return TxOutcome::Empty;
        };
        let len = match produce(buf) {
            Some(len) if len > 0 && len <= FRAME_SIZE as usize => len,
            Some(_) => {
                self.counters.tx_bad_length += 1;
                self.free_tx.push(addr);
                return TxOutcome::Empty;
            }
            None => {
                self.free_tx.push(addr);
                return TxOutcome::Empty;
            }
        };
        let desc = XdpDesc {
            addr,
            len: len as u32,
            options: 0,
        };
        let mut writer = self.tx.transmit(1);
        let queued = writer.insert_once(desc);
        writer.commit();
        if !queued {
            self.free_tx.push(addr);
            self.counters.tx_ring_full += 1;
            return TxOutcome::RingFull;
        }
        self.unflushed += 1;
        self.counters.tx_frames += 1;
        self.counters.tx_bytes += len as u64;
        TxOutcome::Queued
    }

    /// Kicks the kernel to send what is queued, and takes back what it sent.
    pub fn flush(&mut self) -> io::Result<()> {
        // Copy mode sends within the kick, at most 32 frames per call (the kernel's
        // TX_BATCH_SIZE): kick until the ring is drained or stops moving (a zero-copy driver
        // sends on its own and consumes as it goes).
        let mut kicks = 0;
        while (self.unflushed > 0 || self.tx.pending() > 0) && kicks < MAX_KICKS {
            let before = self.tx.pending();
            self.tx.wake();
            self.unflushed = 0;
            kicks += 1;
            if self.tx.pending() >= before {
                break;
            }
        }
        self.reap();
        Ok(())
    }

    /// Whether frames await a kick.
    pub fn flush_pending(&self) -> bool {
        self.unflushed > 0 || self.tx.pending() > 0
    }
}

impl AsRawFd for XdpPort {
    fn as_raw_fd(&self) -> RawFd {
        self.epoll.as_raw_fd()
    }
}

impl crate::driver::Port for XdpPort {
    fn ifname(&self) -> &str {
        XdpPort::ifname(self)
    }

    fn ifindex(&self) -> u32 {
        XdpPort::ifindex(self)
    }

    fn mac(&self) -> Address {
        XdpPort::mac(self)
    }

    fn counters(&self) -> &PortCounters {
        XdpPort::counters(self)
    }

    /// AF_XDP descriptors carry no receive time: the loop's time is all there is.
    fn receive_stamped<F: FnMut(&[u8], Option<u64>)>(
        &mut self,
        budget: usize,
        mut deliver: F,
    ) -> usize {
        XdpPort::receive(self, budget, |frame| deliver(frame, None))
    }

    fn transmit_with<F: FnOnce(&mut [u8]) -> Option<usize>>(&mut self, produce: F) -> TxOutcome {
        XdpPort::transmit_with(self, produce)
    }

    fn flush(&mut self) -> io::Result<()> {
        XdpPort::flush(self)
    }

    fn flush_pending(&self) -> bool {
        XdpPort::flush_pending(self)
    }

    fn tx_blocked(&self) -> bool {
        // Copy mode completes every send within the kick; a full ring is retried next round.
        false
    }

    fn tx_unsent(&self) -> u64 {
        u64::from(self.tx.pending())
    }

    fn take_error(&mut self) -> Option<io::Error> {
        let control = self.control.as_mut().and_then(PacketPort::take_error);
        self.tap.take_error().or(control)
    }

    fn read_kernel_drops(&mut self) {
        let Ok(stats) = self.umem_stats() else {
            return;
        };
        self.counters.rx_kernel_drops = stats;
    }

    fn carrier(&self) -> Option<bool> {
        self.tap.carrier()
    }

    fn kind(&self) -> &'static str {
        "af_xdp"
    }
}

impl XdpPort {
    /// Frames the kernel dropped for want of a fill frame or RX ring room, on every queue.
    fn umem_stats(&self) -> Result<u64, ()> {
        let mut total = socket_drops(self.socket_fd())?;
        for q in &self.queues {
            total += socket_drops(q.rx.as_raw_fd())?;
        }
        Ok(total)
    }

    fn socket_fd(&self) -> RawFd {
        self.rx.as_raw_fd()
    }

    /// The receive queues with a socket.
    pub fn queues(&self) -> usize {
        1 + self.queues.len()
    }
}

/// The drops `XDP_STATISTICS` reports for one AF_XDP socket.
fn socket_drops(fd: RawFd) -> Result<u64, ()> {
    let mut stats = [0u64; 6];
    let mut len = std::mem::size_of_val(&stats) as libc::socklen_t;
    // SAFETY: `stats`/`len` are valid for writes of the sizes given; XDP_STATISTICS fills
    // `struct xdp_statistics` (six u64 in recent kernels, three in old ones).
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_XDP,
            libc::XDP_STATISTICS,
            stats.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if rc < 0 {
        return Err(());
    }
    // rx_dropped + rx_ring_full + rx_fill_ring_empty_descs (the latter two since 5.9).
    Ok(stats[0] + stats[3] + stats[4])
}

/// Whether the AF_XDP socket `fd` runs in zero-copy mode (`getsockopt(SOL_XDP, XDP_OPTIONS)`):
/// the kernel picks it where the driver supports it, copy mode otherwise (veth).
fn zero_copy(fd: i32) -> bool {
    /// `SOL_XDP`, `XDP_OPTIONS` and `XDP_OPTIONS_ZEROCOPY` of `<linux/if_xdp.h>`.
    const SOL_XDP: libc::c_int = 283;
    const XDP_OPTIONS: libc::c_int = 8;
    const XDP_OPTIONS_ZEROCOPY: u32 = 1;
    let mut flags: u32 = 0;
    let mut len = std::mem::size_of::<u32>() as libc::socklen_t;
    // SAFETY: `flags`/`len` describe a writable `struct xdp_options` (one u32) of the size
    // passed; `fd` is an open AF_XDP socket.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            SOL_XDP,
            XDP_OPTIONS,
            (&mut flags as *mut u32).cast(),
            &mut len,
        )
    };
    rc == 0 && flags & XDP_OPTIONS_ZEROCOPY != 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;
    use std::time::{Duration, Instant};

    fn root() -> bool {
        // SAFETY: geteuid has no preconditions.
        unsafe { libc::geteuid() == 0 }
    }

    fn ip(args: &[&str]) {
        let out = std::process::Command::new("ip")
            .args(args)
            .output()
            .expect("ip");
        assert!(out.status.success(), "ip {args:?}: {out:?}");
    }

    /// An IPv4/UDP frame to `dst` with `tag` in its payload (checksums do not matter here).
    fn ipv4_frame(dst_mac: Address, dst: Ipv4Addr, tag: u8) -> Vec<u8> {
        let mut f = vec![0u8; 14 + 20 + 8 + 18];
        f[0..6].copy_from_slice(&dst_mac.0);
        f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 9]);
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f[14] = 0x45;
        f[16..18].copy_from_slice(&46u16.to_be_bytes());
        f[22] = 64;
        f[23] = 17;
        f[26..30].copy_from_slice(&[198, 18, 1, 101]);
        f[30..34].copy_from_slice(&dst.octets());
        f[42..].fill(tag);
        f
    }

    fn arp_frame() -> Vec<u8> {
        let mut f = vec![0u8; 60];
        f[0..6].copy_from_slice(&[0xff; 6]);
        f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 9]);
        f[12..14].copy_from_slice(&[0x08, 0x06]);
        f
    }

    fn send(port: &mut PacketPort, frame: &[u8]) {
        let out = port.transmit_with(|buf| {
            buf[..frame.len()].copy_from_slice(frame);
            Some(frame.len())
        });
        assert_eq!(out, TxOutcome::Queued);
        port.flush().expect("flush");
    }

    /// Frames received on `port` within a second, until `want` have come.
    fn collect(mut take: impl FnMut(&mut dyn FnMut(&[u8])) -> usize, want: usize) -> Vec<Vec<u8>> {
        let mut got = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(1);
        while got.len() < want && Instant::now() < deadline {
            if take(&mut |f: &[u8]| got.push(f.to_vec())) == 0 {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        got
    }

    /// Moves this thread into a private, unnamed network namespace (gone when the thread ends)
    /// and makes the veth pair x0–x1, up, with `queues` queues each way.
    fn veth_with_queues(queues: u32) {
        // SAFETY: unshare(2) with a constant flag; it changes only this thread.
        assert_eq!(unsafe { libc::unshare(libc::CLONE_NEWNET) }, 0);
        let q = queues.to_string();
        ip(&[
            "link",
            "add",
            "x0",
            "numtxqueues",
            &q,
            "numrxqueues",
            &q,
            "type",
            "veth",
            "peer",
            "name",
            "x1",
            "numtxqueues",
            &q,
            "numrxqueues",
            &q,
        ]);
        ip(&["link", "set", "x0", "up"]);
        ip(&["link", "set", "x1", "up"]);
    }

    /// A veth pair with four queues each way, in a private namespace: the peer's stack spreads
    /// 256 flows over its four transmit queues (by hash), which are the port's four receive
    /// queues; every frame reaches the node, whichever queue it came in on. With one socket
    /// on queue 0 (as before) about three quarters went to the kernel instead.
    #[test]
    fn frames_on_every_receive_queue_reach_the_node() {
        if !root() {
            eprintln!("skipping: AF_XDP needs root");
            return;
        }
        std::thread::spawn(|| {
            veth_with_queues(4);
            assert_eq!(rx_queues("x0"), 4);
            let mut node = XdpPort::open("x0", &Steering::Everything).expect("AF_XDP port");
            assert_eq!(node.queues(), 4);
            let mut peer = PacketPort::open("x1", &PortOptions::default()).expect("peer");
            let mac = node.mac();
            let n = 256;
            for i in 0..n {
                let mut f = ipv4_frame(mac, Ipv4Addr::new(198, 18, 9, 9), i as u8);
                // Another flow each: source port i.
                f[34..36].copy_from_slice(&(1000 + i as u16).to_be_bytes());
                send(&mut peer, &f);
            }
            let got = collect(|f| node.receive(64, |x| f(x)), n);
            let ports: std::collections::BTreeSet<u16> = got
                .iter()
                .filter(|f| f[12..14] == [8, 0])
                .map(|f| u16::from_be_bytes([f[34], f[35]]))
                .collect();
            assert_eq!(ports.len(), n, "every flow through a socket");
            assert_eq!(node.counters().rx_frames, n as u64);
        })
        .join()
        .expect("the namespace thread");
    }

    /// More receive queues than a port serves: refused with the way out, and an `auto` data
    /// plane falls back to AF_PACKET.
    #[test]
    fn too_many_queues_fall_back_to_af_packet() {
        if !root() {
            eprintln!("skipping: AF_XDP needs root");
            return;
        }
        std::thread::spawn(|| {
            veth_with_queues(MAX_QUEUES + 1);
            let err = XdpPort::open("x0", &Steering::Everything).unwrap_err();
            let text = err.to_string();
            assert!(matches!(err, XdpError::Queues { queues, .. } if queues == MAX_QUEUES + 1));
            assert!(text.contains("ethtool -L x0 combined 16"), "{text}");
            let port = crate::xdp::AnyPort::open(
                "x0",
                crate::xdp::DataPlane::Auto,
                &Steering::Everything,
                &PortOptions::default(),
            )
            .expect("AF_PACKET");
            assert_eq!(port.kind(), "af_packet");
        })
        .join()
        .expect("the namespace thread");
    }

    /// Through a veth pair in a private, unnamed namespace: transit IPv4 reaches the node
    /// through the socket, ARP through the tap (and the kernel), and what the node sends
    /// arrives at the peer.
    #[test]
    fn frames_cross_an_af_xdp_port_both_ways() {
        if !root() {
            eprintln!("skipping: AF_XDP needs root");
            return;
        }
        std::thread::spawn(|| {
            veth_with_queues(1);
            let steering = Steering::Router {
                addresses: vec![(Ipv4Addr::new(198, 18, 1, 1), 24)],
                fast: None,
            };
            let mut node = XdpPort::open("x0", &steering).expect("AF_XDP port");
            // veth: native XDP, and copy mode (no zero-copy in its driver).
            assert_eq!(node.mode(), (crate::xdp::XdpMode::Native, false));
            let mut peer = PacketPort::open("x1", &PortOptions::default()).expect("peer");
            let mac = node.mac();
            for i in 0..10 {
                send(&mut peer, &ipv4_frame(mac, Ipv4Addr::new(198, 18, 9, 9), i));
            }
            send(&mut peer, &arp_frame());
            // RSVP through the control socket; a packet to the router's own address reaches
            // only the kernel.
            let mut rsvp = ipv4_frame(mac, Ipv4Addr::new(198, 18, 9, 9), 77);
            rsvp[23] = 46;
            send(&mut peer, &rsvp);
            send(
                &mut peer,
                &ipv4_frame(mac, Ipv4Addr::new(198, 18, 1, 1), 78),
            );
            let got = collect(|f| node.receive(64, |x| f(x)), 12);
            assert_eq!(
                got.iter()
                    .filter(|f| f[12..14] == [8, 0] && f[23] == 46)
                    .count(),
                1,
                "RSVP via the control socket"
            );
            assert!(
                !got.iter().any(|f| f[12..14] == [8, 0] && f[42] == 78),
                "the router's own packet stays with the kernel"
            );
            let got: Vec<_> = got.into_iter().filter(|f| f[23] != 46).collect();
            let transit: Vec<_> = got.iter().filter(|f| f[12..14] == [8, 0]).collect();
            assert_eq!(transit.len(), 10, "transit IPv4 through the socket");
            for (i, f) in transit.iter().enumerate() {
                assert_eq!(f[42], i as u8, "in order, whole");
            }
            assert_eq!(
                got.iter().filter(|f| f[12..14] == [8, 6]).count(),
                1,
                "ARP via the tap"
            );
            assert_eq!(node.counters().rx_frames, 10, "the socket's own count");

            // Sending: many more frames than the ring holds, in batches, all arrive.
            let total = 3 * (FRAMES - RX_FRAMES) as usize;
            let mut received = 0;
            let mut sent = 0;
            let deadline = Instant::now() + Duration::from_secs(5);
            while received < total && Instant::now() < deadline {
                while sent < total {
                    let frame = ipv4_frame(
                        Address([2, 0, 0, 0, 0, 9]),
                        Ipv4Addr::new(198, 18, 1, 101),
                        sent as u8,
                    );
                    let out = node.transmit_with(|buf| {
                        buf[..frame.len()].copy_from_slice(&frame);
                        Some(frame.len())
                    });
                    if out != TxOutcome::Queued {
                        break;
                    }
                    sent += 1;
                    if sent % 64 == 0 {
                        break;
                    }
                }
                node.flush().expect("kick");
                // (The namespace's kernel sends IPv6 router solicitations of its own.)
                peer.receive(256, |f| received += usize::from(f[12..14] == [8, 0]));
            }
            assert_eq!(received, total, "every frame sent arrived at the peer");
            assert_eq!(node.counters().tx_frames as usize, total);
        })
        .join()
        .expect("the namespace thread");
    }
}
