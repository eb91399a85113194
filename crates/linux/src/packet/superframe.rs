//! The super-frame socket of a packet port (docs/offload.md): where the
//! frames too long for a ring slot arrive — GSO/GRO super-frames of up to 64 KiB from a host
//! whose TCP segmentation offload is on, or that GRO built on the port — cut here into the wire
//! frames they stand for before the node sees them.
//!
//! A TPACKET_V2 ring slot holds [`super::RX_MAX_FRAME`] bytes, and the kernel truncates a longer
//! frame to it. Slots of 64 KiB would cost 128 MiB per 2,048-slot ring, so each ring socket's
//! classic BPF filter now rejects frames longer than a slot, and a second socket on the same
//! interface, protocol and selection takes exactly those (the complementary length test), read
//! with `recvmsg` into one 64 KiB buffer. It sets `PACKET_VNET_HDR`, so each frame comes with
//! its `struct virtio_net_hdr` (GSO type and segment size, partial checksum offsets), and
//! `PACKET_AUXDATA`, for an 802.1Q tag the kernel moved into metadata.
//! [`rtlan_wire::gso::segment`] makes the segments as the kernel's software GSO would. So the
//! core — its policers, pacer and schedulers (EtheReal §3.3, QSR §3) — sees and charges only
//! wire frames: a super-frame costs exactly what its segments cost, and no guarantee changes.
//!
//! The two sockets of a port are read merged by arrival time (the ring's `tp_sec`/`tp_nsec`
//! against this socket's `SCM_TIMESTAMPNS`, the same skb stamp), so a super-frame and the
//! short frames around it reach the node in the order they arrived.
//!
//! Written against `libc`: no crate exposes `PACKET_VNET_HDR` on packet sockets.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use rtlan_wire::gso;

use super::cbpf::{op, ALL, JGT, LD_LEN, RET};
use super::{PacketError, PortCounters, RX_MAX_FRAME};

/// `PACKET_VNET_HDR` and `PACKET_AUXDATA` of `<linux/if_packet.h>`.
const PACKET_VNET_HDR: libc::c_int = 15;
const PACKET_AUXDATA: libc::c_int = 8;

/// Bytes of `struct virtio_net_hdr` in front of every frame.
const VNET_HDR_LEN: usize = 10;

/// The longest frame read whole: 64 KiB of IPv4 (`GSO_LEGACY_MAX_SIZE`) plus Ethernet and a
/// tag; a longer one (BIG TCP) is counted and dropped.
const MAX_SUPER_FRAME: usize = 65_536 + 14 + 4;

/// Room in front of the frame in the buffer, for a tag put back.
const TAG_ROOM: usize = 4;

/// `filter` (or, empty, "everything") restricted to frames a ring slot holds (`long = false`)
/// or to the longer ones (`long = true`): one length test in front, so that the ring socket and
/// the super-frame socket of a port take complementary shares of one selection.
pub(crate) fn by_length(filter: &[libc::sock_filter], long: bool) -> Vec<libc::sock_filter> {
    let limit = RX_MAX_FRAME as u32;
    let mut out = vec![
        op(LD_LEN, 0, 0, 0),
        // Longer than a slot: on to the selection if `long`, else to the reject.
        if long {
            op(JGT, 1, 0, limit)
        } else {
            op(JGT, 0, 1, limit)
        },
        op(RET, 0, 0, 0),
    ];
    if filter.is_empty() {
        out.push(op(RET, 0, 0, ALL));
    } else {
        out.extend_from_slice(filter);
    }
    out
}

/// The socket (module doc).
#[derive(Debug)]
pub(crate) struct SuperFrameSocket {
    fd: OwnedFd,
    /// The frame read last, at `TAG_ROOM..TAG_ROOM + len`, not yet handed on (`pending`).
    buf: Vec<u8>,
    /// Segments are built here.
    scratch: Vec<u8>,
    /// The frame in `buf` and its arrival time, until it is delivered.
    pending: Option<Pending>,
}

#[derive(Debug, Clone, Copy)]
struct Pending {
    hdr: gso::Repr,
    start: usize,
    len: usize,
    stamp: u64,
}

impl SuperFrameSocket {
    /// Opens the socket on interface `ifname` (index `ifindex`) for EtherType `protocol` with
    /// `filter` (the ring socket's selection, before [`by_length`]).
    pub(crate) fn open(
        ifname: &str,
        ifindex: u32,
        protocol: u16,
        filter: &[libc::sock_filter],
    ) -> Result<SuperFrameSocket, PacketError> {
        let fd = super::packet_socket()?;
        let raw = fd.as_raw_fd();
        for (level, name, option) in [
            (libc::SOL_PACKET, PACKET_VNET_HDR, "PACKET_VNET_HDR"),
            (libc::SOL_PACKET, PACKET_AUXDATA, "PACKET_AUXDATA"),
            (
                libc::SOL_PACKET,
                libc::PACKET_IGNORE_OUTGOING,
                "PACKET_IGNORE_OUTGOING",
            ),
            (libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, "SO_TIMESTAMPNS"),
        ] {
            super::set_level_option(raw, level, name, option, &1 as &libc::c_int)?;
        }
        super::attach_filter(raw, &by_length(filter, true))?;
        super::bind(raw, ifname, ifindex, protocol)?;
        Ok(SuperFrameSocket {
            fd,
            buf: vec![0; TAG_ROOM + MAX_SUPER_FRAME],
            scratch: Vec::with_capacity(2048),
            pending: None,
        })
    }

    /// The arrival time of the next super-frame, reading it if none is pending; `None` when
    /// the socket has nothing. Frames that cannot be read whole or carry a bad header are
    /// counted in `counters` and skipped.
    pub(crate) fn peek(&mut self, counters: &mut PortCounters) -> Option<u64> {
        while self.pending.is_none() {
            match self.read() {
                Ok(Some(p)) => self.pending = Some(p),
                Ok(None) => return None,
                Err(()) => counters.rx_superframe_dropped += 1,
            }
        }
        self.pending.map(|p| p.stamp)
    }

    /// Hands the pending super-frame's segments to `deliver` (each with the super-frame's
    /// arrival time); returns whether there was one.
    pub(crate) fn deliver<F: FnMut(&[u8], u64)>(
        &mut self,
        counters: &mut PortCounters,
        mut deliver: F,
    ) -> bool {
        let Some(p) = self.pending.take() else {
            return false;
        };
        let frame = &self.buf[p.start..p.start + p.len];
        let mut made = 0u64;
        let mut bytes = 0u64;
        let result = gso::segment(frame, &p.hdr, &mut self.scratch, |segment| {
            made += 1;
            bytes += segment.len() as u64;
            deliver(segment, p.stamp);
        });
        match result {
            Ok(_) => {
                counters.rx_superframes += 1;
                counters.rx_frames += made;
                counters.rx_bytes += bytes;
                counters.rx_superframe_segments += made;
            }
            Err(e) => {
                tracing::debug!("super-frame dropped: {e}");
                counters.rx_superframe_dropped += 1;
            }
        }
        true
    }

    /// One `recvmsg`: `Ok(None)` when nothing waits, `Err(())` for a frame dropped.
    fn read(&mut self) -> Result<Option<Pending>, ()> {
        let mut hdr = [0u8; VNET_HDR_LEN];
        let mut iov = [
            libc::iovec {
                iov_base: hdr.as_mut_ptr().cast(),
                iov_len: hdr.len(),
            },
            libc::iovec {
                iov_base: self.buf[TAG_ROOM..].as_mut_ptr().cast(),
                iov_len: self.buf.len() - TAG_ROOM,
            },
        ];
        // Room for the auxiliary data and the time stamp, aligned for cmsghdr.
        let mut control = [0u64; 32];
        // SAFETY: all-zero is a valid msghdr; the pointers set below outlive the call.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = iov.as_mut_ptr();
        msg.msg_iovlen = iov.len();
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&control);
        // SAFETY: `msg` describes buffers we own for the duration of the call.
        let n = unsafe { libc::recvmsg(self.fd.as_raw_fd(), &mut msg, libc::MSG_DONTWAIT) };
        if n < 0 {
            return Ok(None);
        }
        let n = n as usize;
        if msg.msg_flags & libc::MSG_TRUNC != 0 || n < VNET_HDR_LEN + 14 {
            return Err(());
        }
        let mut repr = gso::Repr::parse(&gso::VirtioNetHdr::new_checked(&hdr[..]).map_err(|_| ())?)
            .map_err(|_| ())?;
        let mut stamp = None;
        let mut tag = None;
        // SAFETY: the CMSG_* walk stays inside `control`, which the kernel filled up to
        // `msg_controllen`.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(&msg);
            while !c.is_null() {
                let (level, kind) = ((*c).cmsg_level, (*c).cmsg_type);
                let data = libc::CMSG_DATA(c);
                if level == libc::SOL_SOCKET && kind == libc::SCM_TIMESTAMPNS {
                    let ts: libc::timespec = std::ptr::read_unaligned(data.cast());
                    stamp = Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
                } else if level == libc::SOL_PACKET && kind == PACKET_AUXDATA {
                    let aux: libc::tpacket_auxdata = std::ptr::read_unaligned(data.cast());
                    if aux.tp_status & libc::TP_STATUS_VLAN_VALID != 0 {
                        let tpid = if aux.tp_status & libc::TP_STATUS_VLAN_TPID_VALID != 0
                            && aux.tp_vlan_tpid != 0
                        {
                            aux.tp_vlan_tpid
                        } else {
                            libc::ETH_P_8021Q as u16
                        };
                        tag = Some((tpid, aux.tp_vlan_tci));
                    }
                }
                c = libc::CMSG_NXTHDR(&msg, c);
            }
        }
        let mut start = TAG_ROOM;
        let mut len = n - VNET_HDR_LEN;
        if let Some((tpid, tci)) = tag {
            // Put the tag back between the source address and the EtherType.
            self.buf.copy_within(TAG_ROOM..TAG_ROOM + 12, 0);
            self.buf[12..14].copy_from_slice(&tpid.to_be_bytes());
            self.buf[14..16].copy_from_slice(&tci.to_be_bytes());
            start = 0;
            len += 4;
            if repr.flags & gso::FLAG_NEEDS_CSUM != 0 {
                repr.csum_start = repr.csum_start.saturating_add(4);
            }
        }
        Ok(Some(Pending {
            hdr: repr,
            start,
            len,
            stamp: stamp.unwrap_or_else(crate::clock::realtime_nanos),
        }))
    }
}

impl AsRawFd for SuperFrameSocket {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `filter` on a frame of `len` bytes.
    fn run(filter: &[libc::sock_filter], len: u32) -> u32 {
        super::super::cbpf::run(filter, &[0; 14], len, false)
    }

    #[test]
    fn the_ring_and_the_super_frame_socket_split_frames_by_length() {
        for len in [
            60,
            1514,
            1518,
            RX_MAX_FRAME as u32,
            RX_MAX_FRAME as u32 + 1,
            65_550,
        ] {
            let ring = run(&by_length(&[], false), len);
            let long = run(&by_length(&[], true), len);
            let fits = len as usize <= RX_MAX_FRAME;
            assert_eq!(ring == ALL, fits, "ring, {len} bytes");
            assert_eq!(long == ALL, !fits, "super-frame socket, {len} bytes");
            assert!(ring == 0 || long == 0, "never both, {len} bytes");
        }
        // A selection after the test keeps its own verdict.
        let reject_all = [op(RET, 0, 0, 0)];
        assert_eq!(run(&by_length(&reject_all, true), 9000), 0);
        assert_eq!(run(&by_length(&reject_all, false), 60), 0);
    }
}
