//! The first switch's reshaping buffer: first-hop frames the regulator ([`super::Policer::regulate`])
//! holds until they conform, released in time order (docs/delay.md §3). Each connection's held
//! frames have non-decreasing release times, so a heap on (release time, arrival order) keeps
//! every connection's frames in order while interleaving connections by time.
//!
//! Bounded: at most `limit` bytes of frames are held in the whole switch; the caller checks
//! [`Reshaper::has_room`] before it asks the regulator to hold a frame (a frame without room is
//! policed as before). Frames are copied into their own allocation: only frames that arrived
//! ahead of their T-SPEC get here, never a conforming stream's, so the forwarding path of a
//! conforming stream allocates nothing.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::table::RequestKey;
use crate::egress::FlowHandle;
use crate::node::PortId;
use crate::time::Instant;

/// A rewritten frame waiting for its release time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldFrame {
    /// When it may join its connection's queue.
    pub release: Instant,
    /// Arrival order among held frames (ties of `release`).
    seq: u64,
    /// The connection's key: input port and input id …
    pub in_port: PortId,
    /// … and id.
    pub in_id: u16,
    /// The SETUP that created the connection: a connection torn down and set up again under the
    /// same key is another connection, whose queue the frame must not join.
    pub request: RequestKey,
    /// The output port and the connection's queue there, when it was held.
    pub out_port: PortId,
    /// The connection's queue on `out_port`.
    pub flow: FlowHandle,
    /// The frame, already rewritten for the next link.
    pub frame: Vec<u8>,
}

impl Ord for HeldFrame {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.release, self.seq).cmp(&(other.release, other.seq))
    }
}

impl PartialOrd for HeldFrame {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// Frames held until their release times, at most `limit` bytes in all.
#[derive(Debug, Clone)]
pub struct Reshaper {
    heap: BinaryHeap<Reverse<HeldFrame>>,
    bytes: usize,
    limit: usize,
    next_seq: u64,
}

impl Reshaper {
    /// An empty buffer of `limit` bytes.
    pub fn new(limit: usize) -> Reshaper {
        Reshaper {
            heap: BinaryHeap::new(),
            bytes: 0,
            limit,
            next_seq: 0,
        }
    }

    /// Whether a frame of `len` bytes fits.
    pub fn has_room(&self, len: usize) -> bool {
        self.bytes.saturating_add(len) <= self.limit
    }

    /// Holds `frame` until `release` (call only after [`has_room`](Self::has_room) said yes).
    pub fn hold(
        &mut self,
        release: Instant,
        (in_port, in_id, request): (PortId, u16, RequestKey),
        (out_port, flow): (PortId, FlowHandle),
        frame: &[u8],
    ) {
        self.bytes += frame.len();
        self.heap.push(Reverse(HeldFrame {
            release,
            seq: self.next_seq,
            in_port,
            in_id,
            request,
            out_port,
            flow,
            frame: frame.to_vec(),
        }));
        self.next_seq += 1;
    }

    /// The earliest release time, if any frame is held.
    pub fn next_timeout(&self) -> Option<Instant> {
        self.heap.peek().map(|Reverse(f)| f.release)
    }

    /// The next frame due at `now`, earliest first.
    pub fn pop_due(&mut self, now: Instant) -> Option<HeldFrame> {
        if self.next_timeout()? > now {
            return None;
        }
        let Reverse(f) = self.heap.pop()?;
        self.bytes -= f.frame.len();
        Some(f)
    }

    /// Frames held.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(id: u16) -> (PortId, u16, RequestKey) {
        (
            PortId(0),
            id,
            RequestKey {
                in_port: PortId(0),
                src_mac: rtlan_wire::ethernet::Address([2, 0, 0, 0, 0, 1]),
                epoch: 0,
                request_id: u32::from(id),
            },
        )
    }

    #[test]
    fn releases_in_time_then_arrival_order_within_its_limit() {
        let t = Instant::from_nanos;
        let out = (PortId(1), FlowHandle::for_tests(0));
        let mut r = Reshaper::new(300);
        assert!(r.has_room(300) && !r.has_room(301));
        r.hold(t(20), key(1), out, &[1; 100]);
        r.hold(t(10), key(2), out, &[2; 100]);
        r.hold(t(20), key(1), out, &[3; 50]);
        assert_eq!((r.len(), r.bytes()), (3, 250));
        assert!(!r.has_room(51));
        assert_eq!(r.next_timeout(), Some(t(10)));
        assert_eq!(r.pop_due(t(9)), None);
        assert_eq!(r.pop_due(t(30)).map(|f| f.frame[0]), Some(2));
        // Equal release times leave in the order they were held.
        assert_eq!(r.pop_due(t(30)).map(|f| f.frame[0]), Some(1));
        assert_eq!(r.pop_due(t(30)).map(|f| f.frame[0]), Some(3));
        assert!(r.is_empty() && r.bytes() == 0 && r.next_timeout().is_none());
    }
}
