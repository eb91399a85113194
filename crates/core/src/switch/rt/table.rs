//! The real-time connection table (EtheReal §3.3 "real-time connection routing entries").
//!
//! An entry is keyed by the link a frame arrives on and the connection id it carries there —
//! ids are unique per link only, so the same id on another port is another (or no) connection.
//! It holds the paper's fields: *Output Queue* (the output port; the per-connection queue is
//! attached by the scheduler), *Output Connection ID*, *Receiver IP Address* together with the
//! *Swap* flag (`receiver_ip` is `Some` exactly at the first switch), and the *QOS parameters*.
//! The last switch writes the receiver's MAC instead of a connection id (`receiver_mac`).
//!
//! Lookup is on every real-time frame, so it is an index, not a hash: per input port, a dense
//! array indexed by connection id (allocated when the port gets its first connection, 256 KiB)
//! points into a slab of entries. Listing is in (input port, connection id) order, from a sorted
//! set of the keys that only inserts and removals touch.

use std::collections::{BTreeSet, HashMap};
use std::net::Ipv4Addr;

use rtlan_wire::ethernet::Address;

use crate::egress::FlowHandle;
use crate::switch::PortId;

/// Why an entry could not be inserted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TableError {
    /// An entry for this (input port, connection id) already exists.
    #[error("connection id {id:#06x} on port {port:?} is already in use")]
    Duplicate {
        /// The input port.
        port: PortId,
        /// The connection id.
        id: u16,
    },
    /// An entry for this request already exists (under another key).
    #[error("request already has a connection")]
    DuplicateRequest,
    /// The table holds as many entries as it was sized for.
    #[error("connection table full")]
    Full,
}

/// Identifies a SETUP for retransmission handling: `docs/protocol.md` §5 keys requests by
/// (input port, source MAC, the sender's boot epoch, request id) — the epoch keeps a restarted
/// sender's request ids from aliasing its earlier ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RequestKey {
    /// Port the SETUP arrived on.
    pub in_port: PortId,
    /// Source MAC of the SETUP frame.
    pub src_mac: Address,
    /// The sender's boot epoch (its EPOCH TLV; 0 when it sent none).
    pub epoch: u64,
    /// Request id from the control header.
    pub request_id: u32,
}

/// One real-time connection as seen by one switch (EtheReal §3.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RtEntry {
    /// *Output Queue*: the port the connection leaves by.
    pub out_port: PortId,
    /// *Output Connection ID*: the id frames carry on the output link (unused when
    /// `receiver_mac` is set).
    pub out_id: u16,
    /// *Receiver IP Address* with the *Swap* flag: `Some` only at the first switch, which
    /// rewrites the proxy destination IP to this address.
    pub receiver_ip: Option<Ipv4Addr>,
    /// `Some` only at the last switch, which writes this MAC as the frame's destination.
    pub receiver_mac: Option<Address>,
    /// Reserved rate, bit/s, counting whole Ethernet frames (`docs/protocol.md` §3).
    pub rate_bps: u64,
    /// Bytes (whole frames) the sender may send back to back.
    pub max_burst: u32,
    /// Largest frame in bytes, Ethernet header included.
    pub max_packet: u16,
    /// The SETUP that created the entry, for idempotent retransmissions and teardown.
    pub request: RequestKey,
    /// The connection's queue on the output port's scheduler (*Output Queue*, the per-connection
    /// part): set once the scheduler accepted the flow, so a data frame is queued by handle,
    /// without a second lookup.
    pub flow: Option<FlowHandle>,
    /// The first-hop policer (`Some` only at the first switch, with `receiver_ip`): the flag
    /// that makes only first-hop frames policed ([`super::forward_policed`]).
    pub policer: Option<super::Policer>,
    /// Frames the policer dropped as non-conforming.
    pub nonconforming: u64,
}

/// All real-time connections of a switch, keyed by (input port, input connection id), with a
/// second index by [`RequestKey`]. Bounded: `capacity` entries at most.
#[derive(Debug, Clone)]
pub struct ConnectionTable {
    /// The entries; `None` marks a free slot (listed in `free`).
    slots: Vec<Option<RtEntry>>,
    free: Vec<u32>,
    /// Per input port (`None` until its first connection): slot + 1 of the entry for each
    /// connection id, 0 for none.
    by_port: Vec<Option<Box<[u32]>>>,
    /// The keys, sorted: the listing order.
    keys: BTreeSet<(PortId, u16)>,
    /// Looked up only, never iterated.
    by_request: HashMap<RequestKey, (PortId, u16)>,
    /// Connections per input port (the per-port share, `protect`).
    per_port: Vec<usize>,
    capacity: usize,
}

impl ConnectionTable {
    /// An empty table that holds at most `capacity` connections (storage is reserved up front,
    /// so inserts below the capacity do not reallocate).
    pub fn new(capacity: usize) -> ConnectionTable {
        ConnectionTable {
            slots: Vec::with_capacity(capacity),
            free: Vec::new(),
            by_port: Vec::new(),
            keys: BTreeSet::new(),
            by_request: HashMap::with_capacity(capacity),
            per_port: Vec::new(),
            capacity,
        }
    }

    /// Number of connections.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Number of connections arriving on `in_port`.
    pub fn len_on(&self, in_port: PortId) -> usize {
        self.per_port
            .get(usize::from(in_port.0))
            .copied()
            .unwrap_or(0)
    }

    /// Whether the table has no connections.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The slot of the entry for (`in_port`, `in_id`), if any.
    fn slot(&self, in_port: PortId, in_id: u16) -> Option<usize> {
        let ids = self.by_port.get(usize::from(in_port.0))?.as_ref()?;
        let plus_one = *ids.get(usize::from(in_id))?;
        // u32 → usize: pointers are at least 32 bits wide on every target we build for.
        (plus_one as usize).checked_sub(1)
    }

    /// Adds the connection arriving on `in_port` with id `in_id`. Refuses duplicates of the key
    /// or of the entry's request, and inserts beyond the capacity.
    pub fn insert(
        &mut self,
        in_port: PortId,
        in_id: u16,
        entry: RtEntry,
    ) -> Result<(), TableError> {
        if self.slot(in_port, in_id).is_some() {
            return Err(TableError::Duplicate {
                port: in_port,
                id: in_id,
            });
        }
        if self.by_request.contains_key(&entry.request) {
            return Err(TableError::DuplicateRequest);
        }
        if self.len() >= self.capacity {
            return Err(TableError::Full);
        }
        let slot = match self.free.pop() {
            Some(slot) => slot,
            None => {
                // `len() < capacity`, and a table holds far fewer than 2³² connections.
                let slot = u32::try_from(self.slots.len()).map_err(|_| TableError::Full)?;
                self.slots.push(None);
                slot
            }
        };
        let port = usize::from(in_port.0);
        if self.by_port.len() <= port {
            self.by_port.resize(port + 1, None);
        }
        let ids = self.by_port[port].get_or_insert_with(|| vec![0; 1 << 16].into_boxed_slice());
        // The array has 2¹⁶ entries, one per u16 id; `slot` < u32::MAX since it indexes `slots`.
        ids[usize::from(in_id)] = slot + 1;
        self.slots[slot as usize] = Some(entry);
        self.keys.insert((in_port, in_id));
        self.by_request.insert(entry.request, (in_port, in_id));
        if self.per_port.len() <= port {
            self.per_port.resize(port + 1, 0);
        }
        self.per_port[port] += 1;
        Ok(())
    }

    /// The connection whose frames arrive on `in_port` with id `in_id`.
    pub fn lookup(&self, in_port: PortId, in_id: u16) -> Option<&RtEntry> {
        self.slots.get(self.slot(in_port, in_id)?)?.as_ref()
    }

    /// The entry of the connection arriving on `in_port` with id `in_id`, to update in place.
    pub(crate) fn lookup_mut(&mut self, in_port: PortId, in_id: u16) -> Option<&mut RtEntry> {
        let slot = self.slot(in_port, in_id)?;
        self.slots.get_mut(slot)?.as_mut()
    }

    /// Records the scheduler flow of the connection arriving on `in_port` with id `in_id`;
    /// `false` if there is no such connection.
    pub fn set_flow(&mut self, in_port: PortId, in_id: u16, flow: FlowHandle) -> bool {
        match self.lookup_mut(in_port, in_id) {
            Some(entry) => {
                entry.flow = Some(flow);
                true
            }
            None => false,
        }
    }

    /// The (input port, input id) of the connection created by `request`, if any.
    pub fn find_request(&self, request: &RequestKey) -> Option<(PortId, u16)> {
        self.by_request.get(request).copied()
    }

    /// Removes and returns the connection arriving on `in_port` with id `in_id`.
    pub fn remove(&mut self, in_port: PortId, in_id: u16) -> Option<RtEntry> {
        let slot = self.slot(in_port, in_id)?;
        let entry = self.slots.get_mut(slot)?.take()?;
        if let Some(ids) = self
            .by_port
            .get_mut(usize::from(in_port.0))
            .and_then(Option::as_mut)
        {
            ids[usize::from(in_id)] = 0;
        }
        // `slot` came from the index, which only holds slots below `slots.len()` ≤ u32::MAX.
        self.free.push(u32::try_from(slot).unwrap_or(u32::MAX));
        self.keys.remove(&(in_port, in_id));
        self.by_request.remove(&entry.request);
        if let Some(count) = self.per_port.get_mut(usize::from(in_port.0)) {
            *count = count.saturating_sub(1);
        }
        Some(entry)
    }

    /// Every connection, in (input port, input id) order.
    pub fn iter(&self) -> impl Iterator<Item = ((PortId, u16), &RtEntry)> {
        self.keys
            .iter()
            .filter_map(|&(port, id)| Some(((port, id), self.lookup(port, id)?)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(request_id: u32) -> RtEntry {
        RtEntry {
            out_port: PortId(2),
            out_id: 0x0778,
            receiver_ip: None,
            receiver_mac: None,
            rate_bps: 1_000_000,
            max_burst: 3028,
            max_packet: 1514,
            request: RequestKey {
                in_port: PortId(1),
                src_mac: Address([2, 0, 0, 0, 0, 1]),
                epoch: 0,
                request_id,
            },
            flow: None,
            policer: None,
            nonconforming: 0,
        }
    }

    #[test]
    fn ids_are_per_link() {
        let mut table = ConnectionTable::new(8);
        table.insert(PortId(1), 0x0309, entry(1)).unwrap();
        assert_eq!(table.lookup(PortId(1), 0x0309), Some(&entry(1)));
        assert_eq!(
            table.lookup(PortId(0), 0x0309),
            None,
            "forged on another port"
        );
        assert_eq!(table.lookup(PortId(1), 0x030a), None);
        // The same id on another link is another connection.
        table.insert(PortId(0), 0x0309, entry(2)).unwrap();
        assert_eq!(
            table
                .lookup(PortId(0), 0x0309)
                .map(|e| e.request.request_id),
            Some(2)
        );
        assert_eq!(table.len(), 2);
    }

    #[test]
    fn duplicates_capacity_and_removal() {
        let mut table = ConnectionTable::new(2);
        table.insert(PortId(1), 0x20, entry(1)).unwrap();
        assert_eq!(
            table.insert(PortId(1), 0x20, entry(9)),
            Err(TableError::Duplicate {
                port: PortId(1),
                id: 0x20
            })
        );
        assert_eq!(
            table.insert(PortId(1), 0x21, entry(1)),
            Err(TableError::DuplicateRequest)
        );
        table.insert(PortId(1), 0x21, entry(2)).unwrap();
        assert_eq!(
            table.insert(PortId(1), 0x22, entry(3)),
            Err(TableError::Full)
        );
        assert_eq!(
            table.find_request(&entry(2).request),
            Some((PortId(1), 0x21))
        );
        assert_eq!(table.len_on(PortId(1)), 2);
        assert_eq!(table.remove(PortId(1), 0x21), Some(entry(2)));
        assert_eq!(table.len_on(PortId(1)), 1);
        assert_eq!(table.len_on(PortId(7)), 0);
        assert_eq!(table.find_request(&entry(2).request), None);
        assert_eq!(table.remove(PortId(1), 0x21), None);
        table.insert(PortId(1), 0x22, entry(3)).unwrap();
        assert_eq!(table.len(), 2);
    }
}
