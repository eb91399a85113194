//! PACKET_MMAP ring geometry and frame access (kernel `Documentation/networking/packet_mmap.rst`,
//! TPACKET_V2): one `mmap` holds the RX ring followed by the TX ring; each frame slot starts with a
//! `tpacket2_hdr` whose `tp_status` word hands the slot between kernel and user space.
//!
//! Ownership protocol: a slot belongs to user space while its status is `TP_STATUS_USER` (RX) or
//! `TP_STATUS_AVAILABLE` (TX); we read the status with Acquire ordering before touching the slot
//! and publish it back with Release ordering after our last access, as the kernel's
//! `smp_wmb`/`smp_rmb` pairs expect.

use std::io;
use std::os::fd::RawFd;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

/// Bytes per ring slot, headers included.
pub const FRAME_SIZE: usize = 2048;

/// Bytes per ring block (kernel allocation unit; a multiple of the page size).
const BLOCK_SIZE: usize = 1 << 16;

/// Slots per block.
const FRAMES_PER_BLOCK: usize = BLOCK_SIZE / FRAME_SIZE;

/// `TPACKET_ALIGN(sizeof(struct tpacket2_hdr))`: where the `sockaddr_ll` of an RX slot starts and
/// where the frame data of a TX slot starts (the kernel puts TX data at
/// `tp_hdrlen - sizeof(struct sockaddr_ll)` unless `PACKET_TX_HAS_OFF` is set).
pub(crate) const TX_DATA_OFFSET: usize =
    libc::TPACKET2_HDRLEN - std::mem::size_of::<libc::sockaddr_ll>();

/// End of the metadata in an RX slot (`tpacket2_hdr` + `sockaddr_ll`); frame data starts later.
pub(crate) const RX_HEADER_END: usize = libc::TPACKET2_HDRLEN;

/// Largest frame a TX slot holds.
pub const TX_MAX_FRAME: usize = FRAME_SIZE - TX_DATA_OFFSET;

/// Largest frame an RX slot holds untruncated: the kernel places an Ethernet header at
/// `TPACKET_ALIGN(tp_hdrlen + 16) - 14`.
pub const RX_MAX_FRAME: usize = FRAME_SIZE - ((RX_HEADER_END + 16).div_ceil(16) * 16 - 14);

/// A received slot's arrival time, `CLOCK_REALTIME` nanoseconds (`tp_sec`/`tp_nsec`).
pub(crate) fn stamp(hdr: libc::tpacket2_hdr) -> u64 {
    u64::from(hdr.tp_sec) * 1_000_000_000 + u64::from(hdr.tp_nsec)
}

/// The size of one ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Geometry {
    blocks: usize,
}

impl Geometry {
    /// A ring of at least `frames` slots (rounded up to whole blocks, at least one block).
    pub(crate) fn with_frames(frames: usize) -> Self {
        Geometry {
            blocks: frames.div_ceil(FRAMES_PER_BLOCK).max(1),
        }
    }

    /// Number of slots.
    pub(crate) fn frames(self) -> usize {
        self.blocks * FRAMES_PER_BLOCK
    }

    /// Bytes of the mapping this ring takes.
    pub(crate) fn bytes(self) -> usize {
        self.blocks * BLOCK_SIZE
    }

    /// The request for `PACKET_RX_RING` / `PACKET_TX_RING`.
    pub(crate) fn request(self) -> libc::tpacket_req {
        // All four values are small compile-time-bounded products (blocks come from a u32 count).
        libc::tpacket_req {
            tp_block_size: BLOCK_SIZE as libc::c_uint,
            tp_block_nr: self.blocks as libc::c_uint,
            tp_frame_size: FRAME_SIZE as libc::c_uint,
            tp_frame_nr: self.frames() as libc::c_uint,
        }
    }
}

/// The shared memory of a packet socket's rings; unmapped on drop.
#[derive(Debug)]
pub(crate) struct Mapping {
    base: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain process memory shared with the kernel; nothing in it is tied to the
// thread that created it, and all access goes through `&mut self` of the owning port.
unsafe impl Send for Mapping {}

impl Mapping {
    /// Maps `len` bytes of the rings of packet socket `fd`.
    pub(crate) fn new(fd: RawFd, len: usize) -> io::Result<Self> {
        // SAFETY: asks the kernel for a fresh shared mapping of the socket's rings; no existing
        // memory is affected, and the result is checked before use.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let base =
            NonNull::new(ptr.cast::<u8>()).ok_or_else(|| io::Error::other("mmap gave NULL"))?;
        Ok(Mapping { base, len })
    }

    /// A ring of `geometry` starting `offset` bytes into the mapping.
    ///
    /// Panics if the ring does not fit; callers size the mapping from the same geometries.
    pub(crate) fn ring(&self, offset: usize, geometry: Geometry) -> Ring {
        assert!(
            offset + geometry.bytes() <= self.len,
            "ring outside its mapping"
        );
        Ring {
            // SAFETY: `offset` is within the mapping (asserted above).
            base: unsafe { self.base.add(offset) },
            frames: geometry.frames(),
            head: 0,
        }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `base`/`len` are exactly what mmap returned; every `Ring` pointing into the
        // mapping is owned by the same port and dropped with it.
        unsafe { libc::munmap(self.base.as_ptr().cast(), self.len) };
    }
}

/// A cursor over one ring of a [`Mapping`].
#[derive(Debug)]
pub(crate) struct Ring {
    base: NonNull<u8>,
    frames: usize,
    head: usize,
}

// SAFETY: see `Mapping`; a ring is only used through `&mut self` of the port that owns it and the
// mapping it points into.
unsafe impl Send for Ring {}

impl Ring {
    /// Slot `head` (the next one to use).
    pub(crate) fn head_ptr(&self) -> NonNull<u8> {
        // SAFETY: `head < frames`, so the slot lies inside the ring, which lies inside the mapping.
        unsafe { self.base.add(self.head * FRAME_SIZE) }
    }

    /// The status word of the head slot, read with Acquire ordering.
    pub(crate) fn head_status(&self) -> u32 {
        self.status_word().load(Ordering::Acquire)
    }

    /// Publishes `status` for the head slot (Release) without moving on.
    pub(crate) fn set_head_status(&mut self, status: u32) {
        self.status_word().store(status, Ordering::Release);
    }

    /// Publishes `status` for the head slot (Release) and moves on to the next slot.
    pub(crate) fn release_head(&mut self, status: u32) {
        self.status_word().store(status, Ordering::Release);
        self.head = (self.head + 1) % self.frames;
    }

    fn status_word(&self) -> &AtomicU32 {
        let ptr = self.head_ptr().cast::<AtomicU32>();
        // SAFETY: every slot starts at a multiple of FRAME_SIZE from a page-aligned base, so the
        // `tp_status` word (offset 0 of `tpacket2_hdr`) is 4-byte aligned, and it stays mapped for
        // as long as `self` (which the owning port drops before the mapping). The kernel writes
        // it concurrently, which is why it is only accessed atomically.
        unsafe { ptr.as_ref() }
    }

    /// Reads the head slot's `tpacket2_hdr`. Call only while the slot belongs to user space.
    pub(crate) fn head_header(&self) -> libc::tpacket2_hdr {
        // SAFETY: the header lies at the start of the slot, aligned (see `status_word`); while the
        // slot is ours the kernel does not write it, so a plain read sees a complete header.
        unsafe { self.head_ptr().cast::<libc::tpacket2_hdr>().read() }
    }

    /// Sets `tp_len` and `tp_snaplen` of the head slot (TX). Call only while the slot is ours.
    pub(crate) fn set_head_len(&mut self, len: u32) {
        let hdr = self.head_ptr().cast::<libc::tpacket2_hdr>().as_ptr();
        // SAFETY: as in `head_header`; we hold the slot, so nobody else accesses these fields.
        unsafe {
            std::ptr::addr_of_mut!((*hdr).tp_len).write(len);
            std::ptr::addr_of_mut!((*hdr).tp_snaplen).write(len);
        }
    }

    /// The bytes `[start, start + len)` of the head slot, mutable. `start + len <= FRAME_SIZE`
    /// must hold (checked) and the slot must belong to user space.
    pub(crate) fn head_bytes(&mut self, start: usize, len: usize) -> Option<&mut [u8]> {
        if start.checked_add(len)? > FRAME_SIZE {
            return None;
        }
        // SAFETY: the range lies inside the head slot (checked above); while the slot belongs to
        // user space the kernel does not touch it, and `&mut self` makes the borrow unique.
        Some(unsafe { std::slice::from_raw_parts_mut(self.head_ptr().as_ptr().add(start), len) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_matches_the_kernel() {
        assert_eq!(std::mem::size_of::<libc::tpacket2_hdr>(), 32);
        assert_eq!(TX_DATA_OFFSET, 32);
        assert_eq!(RX_HEADER_END, 52);
        // netoff = TPACKET_ALIGN(52 + 16) = 80, macoff = 66.
        assert_eq!(RX_MAX_FRAME, 2048 - 66);
        assert_eq!(TX_MAX_FRAME, 2016);
    }

    #[test]
    fn geometry_rounds_up_to_blocks() {
        let g = Geometry::with_frames(2000);
        assert_eq!(g.frames(), 2016);
        assert_eq!(g.bytes(), 63 * BLOCK_SIZE);
        assert_eq!(Geometry::with_frames(0).frames(), FRAMES_PER_BLOCK);
        let req = g.request();
        assert_eq!(
            req.tp_frame_nr as usize,
            req.tp_block_nr as usize * FRAMES_PER_BLOCK
        );
        assert_eq!(req.tp_frame_size as usize, FRAME_SIZE);
    }
}
