//! The preallocated frame FIFO every egress queue is made of: a port's non-real-time output buffer
//! (EtheReal §3.3: "only one non-real-time output buffer at each output port, shared among all
//! non-real-time packets going through the given output link"), its control FIFO, and the queue of
//! each real-time connection (EtheReal §3.3, 2 × the connection's maximum burst).
//!
//! A bounded FIFO whose storage is allocated once, when the switch is built: a byte ring holds the
//! frames back to back (a frame may wrap around the end of the ring) and a second ring holds each
//! frame's length and enqueue time. Enqueue and dequeue are two `memcpy`s each and never allocate.
//!
//! Memory: both rings are zero-allocated (`calloc`, so the kernel maps pages only when they are
//! first written) and rewind to their start whenever the queue empties, so a queue's resident memory
//! follows its high-water mark rather than its bound. A 10 Gbit/s port's non-real-time buffer is
//! megabytes; the simulator builds a thousand of them, and only the ones that fill cost memory.
//!
//! The bound is in bytes. Each frame is charged `max(len, 60)` bytes against it (a shorter frame
//! still costs a minimum-size frame on the wire, and this caps the number of frames per queue so the
//! metadata ring can be sized up front).

use crate::time::Instant;

/// Bytes a frame is charged at least: the minimum Ethernet frame without FCS
/// ([`rtlan_wire::cost::MIN_FRAME_BYTES`]).
pub(crate) const MIN_CHARGE: usize = rtlan_wire::cost::MIN_FRAME_BYTES as usize;

/// Bytes a frame of `len` bytes is charged against a queue's bound and its buffer pool.
pub(crate) fn charge(len: usize) -> usize {
    len.max(MIN_CHARGE)
}

/// A bounded FIFO of frames in preallocated storage.
#[derive(Debug)]
pub(crate) struct FrameQueue {
    /// Frame bytes, back to back, wrapping around.
    data: Box<[u8]>,
    /// Index in `data` of the first byte of the oldest frame.
    data_head: usize,
    /// Bytes of `data` in use.
    data_len: usize,
    /// Per-frame metadata ring (each frame's length, and its enqueue time in nanoseconds), oldest
    /// at `meta_head`. Two integer arrays rather than one of structs so that `vec![0; n]` zero-
    /// allocates them.
    meta_len_of: Box<[u16]>,
    meta_time: Box<[u64]>,
    meta_head: usize,
    meta_len: usize,
    /// Sum of the frames' charges (`max(len, MIN_CHARGE)`); never exceeds `bound`.
    charged: usize,
    bound: usize,
}

impl FrameQueue {
    /// A queue holding at most `bound` bytes of (charged) frames.
    pub(crate) fn new(bound: usize) -> FrameQueue {
        FrameQueue {
            // Frames occupy at most their charge, so `bound` bytes always suffice.
            data: vec![0u8; bound].into_boxed_slice(),
            data_head: 0,
            data_len: 0,
            meta_len_of: vec![0u16; bound / MIN_CHARGE + 1].into_boxed_slice(),
            meta_time: vec![0u64; bound / MIN_CHARGE + 1].into_boxed_slice(),
            meta_head: 0,
            meta_len: 0,
            charged: 0,
            bound,
        }
    }

    /// The bound in bytes.
    pub(crate) fn bound(&self) -> usize {
        self.bound
    }

    /// Number of frames queued.
    pub(crate) fn len(&self) -> usize {
        self.meta_len
    }

    /// Bytes charged against the bound.
    pub(crate) fn charged_bytes(&self) -> usize {
        self.charged
    }

    /// Whether a frame of `len` bytes would fit: [`FrameQueue::push`] of such a frame succeeds
    /// exactly when this is `true`.
    pub(crate) fn fits(&self, len: usize) -> bool {
        u16::try_from(len).is_ok()
            && self.charged + charge(len) <= self.bound
            && self.meta_len < self.meta_len_of.len()
    }

    /// Appends a copy of `frame`; `false` (and nothing queued) if it does not fit the bound.
    pub(crate) fn push(&mut self, frame: &[u8], now: Instant) -> bool {
        if !self.fits(frame.len()) {
            return false;
        }
        let charge = charge(frame.len());
        let Ok(len) = u16::try_from(frame.len()) else {
            return false;
        };
        // Here `data_len + frame.len() <= charged + charge <= bound == data.len()`, and
        // `data.len() >= MIN_CHARGE > 0`, so the modulo and both slices below are in range.
        let cap = self.data.len();
        let tail = (self.data_head + self.data_len) % cap;
        let first = frame.len().min(cap - tail);
        self.data[tail..tail + first].copy_from_slice(&frame[..first]);
        self.data[..frame.len() - first].copy_from_slice(&frame[first..]);
        self.data_len += frame.len();

        let slot = (self.meta_head + self.meta_len) % self.meta_len_of.len();
        self.meta_len_of[slot] = len;
        self.meta_time[slot] = now.as_nanos();
        self.meta_len += 1;
        self.charged += charge;
        true
    }

    /// Length and enqueue time of the oldest frame.
    pub(crate) fn front(&self) -> Option<(usize, Instant)> {
        if self.meta_len == 0 {
            return None;
        }
        Some((
            usize::from(self.meta_len_of[self.meta_head]),
            Instant::from_nanos(self.meta_time[self.meta_head]),
        ))
    }

    /// Removes the oldest frame, copying it into `out` if `out` is long enough. Returns the frame's
    /// length, or `None` if the queue is empty. If `out` is too short the frame is discarded
    /// and `out` is left untouched (check [`FrameQueue::front`] first to avoid that).
    pub(crate) fn pop_into(&mut self, out: &mut [u8]) -> Option<usize> {
        let (len, _) = self.front()?;
        if out.len() >= len {
            let cap = self.data.len();
            let first = len.min(cap - self.data_head);
            out[..first].copy_from_slice(&self.data[self.data_head..self.data_head + first]);
            out[first..len].copy_from_slice(&self.data[..len - first]);
        }
        self.data_head = (self.data_head + len) % self.data.len();
        self.data_len -= len;
        self.meta_head = (self.meta_head + 1) % self.meta_len_of.len();
        self.meta_len -= 1;
        self.charged -= charge(len);
        if self.meta_len == 0 {
            // Rewind: the next frames reuse the pages already touched (see the module docs).
            self.data_head = 0;
            self.meta_head = 0;
        }
        Some(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(len: usize, fill: u8) -> Vec<u8> {
        (0..len).map(|i| fill.wrapping_add(i as u8)).collect()
    }

    #[test]
    fn fifo_order_and_wrap_around() {
        // 300-byte ring: frames of 100 bytes wrap after a few rounds.
        let mut q = FrameQueue::new(300);
        let mut out = [0u8; 2048];
        let mut next_in = 0u8;
        let mut next_out = 0u8;
        for round in 0..20 {
            let len = 70 + (round % 4) * 10;
            while q.push(&frame(len, next_in), Instant::ZERO) {
                next_in = next_in.wrapping_add(1);
            }
            assert!(q.charged_bytes() <= q.bound());
            let n = q
                .pop_into(&mut out)
                .expect("queue is non-empty after pushes");
            assert_eq!(&out[..n], &frame(n, next_out)[..], "round {round}");
            next_out = next_out.wrapping_add(1);
        }
        while let Some(n) = q.pop_into(&mut out) {
            assert_eq!(&out[..n], &frame(n, next_out)[..]);
            next_out = next_out.wrapping_add(1);
        }
        assert_eq!(next_in, next_out);
        assert_eq!(q.len(), 0);
        assert_eq!(q.charged_bytes(), 0);
    }

    #[test]
    fn an_emptied_queue_rewinds_to_the_start_of_its_rings() {
        let mut q = FrameQueue::new(1000);
        let mut out = [0u8; 200];
        for round in 0..50u8 {
            assert!(q.push(&frame(150, round), Instant::from_nanos(u64::from(round))));
            assert!(q.push(&frame(90, round), Instant::from_nanos(u64::from(round))));
            assert_eq!(q.pop_into(&mut out), Some(150));
            assert_eq!(&out[..150], &frame(150, round)[..]);
            assert_eq!(q.pop_into(&mut out), Some(90));
            // Empty again: the next frame starts at byte 0, so only the first 240 bytes of the
            // ring (and two metadata slots) are ever touched.
            assert_eq!((q.data_head, q.meta_head, q.len()), (0, 0, 0));
        }
    }

    #[test]
    fn bound_counts_short_frames_as_sixty_bytes() {
        let mut q = FrameQueue::new(180);
        assert!(q.push(&frame(14, 0), Instant::ZERO));
        assert!(q.push(&frame(14, 0), Instant::ZERO));
        assert!(q.push(&frame(14, 0), Instant::ZERO));
        assert!(!q.push(&frame(14, 0), Instant::ZERO));
        assert_eq!(q.len(), 3);
        assert_eq!(q.charged_bytes(), 180);
    }

    #[test]
    fn rejects_frames_larger_than_the_bound() {
        let mut q = FrameQueue::new(100);
        assert!(!q.push(&frame(101, 0), Instant::ZERO));
        assert!(q.push(&frame(100, 0), Instant::ZERO));
        assert!(!q.push(&frame(1, 0), Instant::ZERO));
        let mut empty = FrameQueue::new(0);
        assert!(!empty.push(&frame(1, 0), Instant::ZERO));
        assert_eq!(empty.front(), None);
    }

    #[test]
    fn too_short_output_buffer_discards_the_frame() {
        let mut q = FrameQueue::new(1000);
        assert!(q.push(&frame(100, 1), Instant::from_nanos(5)));
        assert!(q.push(&frame(80, 2), Instant::from_nanos(6)));
        assert_eq!(q.front(), Some((100, Instant::from_nanos(5))));
        let mut small = [0u8; 10];
        assert_eq!(q.pop_into(&mut small), Some(100));
        assert_eq!(small, [0u8; 10]);
        let mut out = [0u8; 100];
        assert_eq!(q.pop_into(&mut out), Some(80));
        assert_eq!(&out[..80], &frame(80, 2)[..]);
    }
}
