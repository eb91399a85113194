//! What the data-plane driver needs of a port: one trait, so that a second port kind (AF_XDP,
//! next to today's AF_PACKET [`PacketPort`]) plugs into the same [`Driver`](super::Driver).
//!
//! A port is a non-blocking socket with a receive ring and a transmit ring: the driver takes
//! received frames in batches, lets the node write frames straight into free transmit slots,
//! kicks the kernel once per batch, and asks `epoll` for writability when the transmit ring is
//! full.

use std::io;
use std::os::fd::AsRawFd;

use rtlan_wire::ethernet::Address;

use crate::packet::{PacketPort, PortCounters, TxOutcome};

/// A port the driver can serve (see the module docs).
pub trait Port: AsRawFd {
    /// The interface name.
    fn ifname(&self) -> &str;
    /// The interface index.
    fn ifindex(&self) -> u32;
    /// The interface's MAC address.
    fn mac(&self) -> Address;
    /// The port's ring and socket counters.
    fn counters(&self) -> &PortCounters;
    /// Hands up to `budget` received frames to `deliver`, in arrival order, each with its
    /// arrival time where the socket records one (`CLOCK_REALTIME` nanoseconds; `None`: when
    /// it was read is all there is); returns how many.
    fn receive_stamped<F: FnMut(&[u8], Option<u64>)>(&mut self, budget: usize, deliver: F)
        -> usize;
    /// [`Port::receive_stamped`] without the times.
    fn receive<F: FnMut(&[u8])>(&mut self, budget: usize, mut deliver: F) -> usize {
        self.receive_stamped(budget, |frame, _| deliver(frame))
    }
    /// If a transmit slot is free, lets `produce` write one frame into it (returning its length,
    /// or `None` when it has nothing to send) and queues it; `produce` is not called when the
    /// ring is full.
    fn transmit_with<F: FnOnce(&mut [u8]) -> Option<usize>>(&mut self, produce: F) -> TxOutcome;
    /// Asks the kernel to send every queued frame; on failure the frames stay queued.
    fn flush(&mut self) -> io::Result<()>;
    /// Whether queued frames await a flush.
    fn flush_pending(&self) -> bool;
    /// Whether the transmit ring was found full and no slot has been freed since.
    fn tx_blocked(&self) -> bool;
    /// Frames handed to the port (counted in `tx_frames`) that the kernel has not taken yet.
    fn tx_unsent(&self) -> u64 {
        0
    }
    /// Reads and clears a pending asynchronous socket error.
    fn take_error(&mut self) -> Option<io::Error>;
    /// Folds the kernel's drop counters into [`Port::counters`].
    fn read_kernel_drops(&mut self);
    /// Whether the interface is up with its carrier (`None` if that cannot be read).
    fn carrier(&self) -> Option<bool>;
    /// Further descriptors the driver waits on for this port's received frames (besides
    /// [`AsRawFd::as_raw_fd`], which also signals transmit room).
    fn extra_fds(&self) -> Vec<std::os::fd::RawFd> {
        Vec::new()
    }
    /// From now on, [`Port::extra_ready`] is called whenever one of [`Port::extra_fds`] is
    /// readable: the port may skip a socket not reported since it last found it empty, which
    /// saves a system call per receive. (Without it, a port looks at every socket every time.)
    fn extra_hints(&mut self) {}
    /// One of [`Port::extra_fds`] was reported readable: the port looks at it in its next
    /// receive.
    fn extra_ready(&mut self) {}
    /// The socket kind, for the statistics: `af_packet` or `af_xdp`.
    fn kind(&self) -> &'static str {
        "af_packet"
    }
}

impl Port for PacketPort {
    fn ifname(&self) -> &str {
        PacketPort::ifname(self)
    }

    fn ifindex(&self) -> u32 {
        PacketPort::ifindex(self)
    }

    fn mac(&self) -> Address {
        PacketPort::mac(self)
    }

    fn counters(&self) -> &PortCounters {
        PacketPort::counters(self)
    }

    fn receive_stamped<F: FnMut(&[u8], Option<u64>)>(
        &mut self,
        budget: usize,
        mut deliver: F,
    ) -> usize {
        PacketPort::receive_stamped(self, budget, |frame, t| deliver(frame, Some(t)))
    }

    fn transmit_with<F: FnOnce(&mut [u8]) -> Option<usize>>(&mut self, produce: F) -> TxOutcome {
        PacketPort::transmit_with(self, produce)
    }

    fn flush(&mut self) -> io::Result<()> {
        PacketPort::flush(self)
    }

    fn flush_pending(&self) -> bool {
        PacketPort::flush_pending(self)
    }

    fn tx_blocked(&self) -> bool {
        PacketPort::tx_blocked(self)
    }

    fn take_error(&mut self) -> Option<io::Error> {
        PacketPort::take_error(self)
    }

    fn read_kernel_drops(&mut self) {
        PacketPort::read_kernel_drops(self);
    }

    fn carrier(&self) -> Option<bool> {
        PacketPort::carrier(self)
    }

    fn extra_fds(&self) -> Vec<std::os::fd::RawFd> {
        self.superframe_fd().into_iter().collect()
    }

    fn extra_hints(&mut self) {
        PacketPort::superframes_hinted(self);
    }

    fn extra_ready(&mut self) {
        PacketPort::superframes_ready(self);
    }
}
