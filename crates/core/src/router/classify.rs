//! The RSVP classifier: which reserved flow a data packet belongs to, by exact match on its
//! 5-tuple (QSR paper §4.2: "a single hash-based look-up that combines the source address and
//! port number, destination address and port number, and protocol type into a hash key"; §3.2:
//! the ingress port's classifier is updated on the first RESV).
//!
//! A filter is an RSVP SESSION (destination address, protocol, destination port) with one
//! FILTER_SPEC (sender address, sender port) — RFC 2205 §A.1 and §A.9. RFC 2205 §A.9 lets the
//! sender port be zero, "to indicate 'none'", for senders that do not use ports or whose port is
//! not known: such a filter matches the sender's packets whatever their source port. A
//! Fixed-Filter reservation installs one filter per sender; a Shared-Explicit one installs one per
//! listed sender with the same flow value. A packet is looked up first with its own source port,
//! then with the wildcard: two hash look-ups at most.
//!
//! A destination port of zero is RFC 2205's "none" too, but it is not a wildcard: a session of
//! a protocol without ports is keyed with zero, and a packet without ports (not TCP or UDP, or a
//! fragment, whose ports cannot be read) is looked up with zero ports. So a fragment of a reserved
//! UDP flow is not matched here and takes the PSIP or default path.
//!
//! The table is std's `HashMap` with its default hasher (SipHash-1-3 under a per-table random
//! key). The keys are chosen by whoever sends packets, and reservations are installed for
//! senders the router does not control, so the hasher must resist flooding one bucket with
//! colliding keys; a faster unkeyed hash (FxHash) would not, and a keyed one of the same strength
//! (foldhash, aHash) would add a dependency for a few nanoseconds that the benchmark does not ask
//! for (docs/benchmarks.md: 13–20 ns per exact hit at 10⁵ flows).

use std::collections::HashMap;
use std::net::Ipv4Addr;

/// Errors of changing the RSVP classifier.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClassifyError {
    /// A filter with the same 5-tuple is installed already (remove it first, or use
    /// [`RsvpClassifier::replace`]).
    #[error("a filter for {0:?} is installed already")]
    FilterExists(FlowKey),
}

/// The 5-tuple of a filter or of a packet: RFC 2205's SESSION (`dst`, `protocol`, `dst_port`)
/// and FILTER_SPEC (`src`, `src_port`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct FlowKey {
    /// The sender's address (FILTER_SPEC).
    pub src: Ipv4Addr,
    /// The destination address (SESSION).
    pub dst: Ipv4Addr,
    /// The IP protocol number (SESSION).
    pub protocol: u8,
    /// The sender's port (FILTER_SPEC); zero in a filter matches any source port.
    pub src_port: u16,
    /// The destination port (SESSION); zero for "none".
    pub dst_port: u16,
}

impl std::hash::Hash for FlowKey {
    /// The five fields packed into one 128-bit word and hashed in one call instead of five: the
    /// same equality as the fields' (the packing is injective), less work per look-up.
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let packed = u128::from(self.src.to_bits()) << 96
            | u128::from(self.dst.to_bits()) << 64
            | u128::from(self.protocol) << 32
            | u128::from(self.src_port) << 16
            | u128::from(self.dst_port);
        state.write_u128(packed);
    }
}

impl FlowKey {
    /// This key with the source port replaced by the wildcard (zero).
    pub const fn any_src_port(self) -> Self {
        Self {
            src_port: 0,
            ..self
        }
    }

    /// Whether this key, as a filter, matches every source port.
    pub const fn is_src_port_wildcard(&self) -> bool {
        self.src_port == 0
    }
}

/// The RSVP classifier of an ingress port: filters (5-tuples, source port possibly wild) to a
/// flow value `F` (a reservation's handle, a label, a queue).
#[derive(Debug, Clone)]
pub struct RsvpClassifier<F> {
    filters: HashMap<FlowKey, F>,
}

impl<F> Default for RsvpClassifier<F> {
    fn default() -> Self {
        Self {
            filters: HashMap::new(),
        }
    }
}

impl<F> RsvpClassifier<F> {
    /// An empty classifier.
    pub fn new() -> Self {
        Self::default()
    }

    /// Installs a filter; refuses if one with the same 5-tuple is installed.
    pub fn insert(&mut self, filter: FlowKey, flow: F) -> Result<(), ClassifyError> {
        match self.filters.entry(filter) {
            std::collections::hash_map::Entry::Occupied(_) => {
                Err(ClassifyError::FilterExists(filter))
            }
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(flow);
                Ok(())
            }
        }
    }

    /// Installs a filter, returning the flow it replaced.
    pub fn replace(&mut self, filter: FlowKey, flow: F) -> Option<F> {
        self.filters.insert(filter, flow)
    }

    /// Removes the filter with exactly this 5-tuple (a wildcard filter only by its wildcard key).
    pub fn remove(&mut self, filter: &FlowKey) -> Option<F> {
        self.filters.remove(filter)
    }

    /// The flow of the filter with exactly this 5-tuple.
    pub fn get(&self, filter: &FlowKey) -> Option<&F> {
        self.filters.get(filter)
    }

    /// The flow a packet with this 5-tuple belongs to: the filter of its exact 5-tuple, else the
    /// filter of its sender with any source port.
    pub fn classify(&self, packet: &FlowKey) -> Option<&F> {
        self.filters.get(packet).or_else(|| {
            if packet.is_src_port_wildcard() {
                None // the exact look-up was the wildcard one already
            } else {
                self.filters.get(&packet.any_src_port())
            }
        })
    }

    /// Removes every filter that `keep` returns false for (e.g. all filters of one reservation).
    pub fn retain(&mut self, mut keep: impl FnMut(&FlowKey, &F) -> bool) {
        self.filters.retain(|key, flow| keep(key, flow));
    }

    /// The number of installed filters.
    pub fn len(&self) -> usize {
        self.filters.len()
    }

    /// Whether no filter is installed.
    pub fn is_empty(&self) -> bool {
        self.filters.is_empty()
    }

    /// The installed filters, sorted by 5-tuple (so that reports do not depend on the hash
    /// map's order).
    pub fn filters(&self) -> Vec<(FlowKey, &F)> {
        let mut all: Vec<_> = self.filters.iter().map(|(k, f)| (*k, f)).collect();
        all.sort_unstable_by_key(|(k, _)| *k);
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const UDP: u8 = 17;

    fn key(src: [u8; 4], src_port: u16, dst: [u8; 4], dst_port: u16) -> FlowKey {
        FlowKey {
            src: src.into(),
            dst: dst.into(),
            protocol: UDP,
            src_port,
            dst_port,
        }
    }

    #[test]
    fn an_exact_filter_matches_only_its_own_5_tuple() {
        let mut c = RsvpClassifier::new();
        let filter = key([10, 0, 0, 1], 5000, [10, 0, 1, 1], 6000);
        c.insert(filter, 7u32).unwrap();
        assert_eq!(c.classify(&filter), Some(&7));
        for other in [
            key([10, 0, 0, 2], 5000, [10, 0, 1, 1], 6000),
            key([10, 0, 0, 1], 5001, [10, 0, 1, 1], 6000),
            key([10, 0, 0, 1], 5000, [10, 0, 1, 2], 6000),
            key([10, 0, 0, 1], 5000, [10, 0, 1, 1], 6001),
            FlowKey {
                protocol: 6,
                ..filter
            },
        ] {
            assert_eq!(c.classify(&other), None, "{other:?}");
        }
    }

    #[test]
    fn a_wildcard_source_port_matches_any_port_and_the_exact_filter_comes_first() {
        let mut c = RsvpClassifier::new();
        c.insert(key([10, 0, 0, 1], 0, [10, 0, 1, 1], 6000), 1u32)
            .unwrap();
        assert_eq!(
            c.classify(&key([10, 0, 0, 1], 4242, [10, 0, 1, 1], 6000)),
            Some(&1)
        );
        assert_eq!(
            c.classify(&key([10, 0, 0, 1], 0, [10, 0, 1, 1], 6000)),
            Some(&1)
        );
        assert_eq!(
            c.classify(&key([10, 0, 0, 2], 4242, [10, 0, 1, 1], 6000)),
            None
        );
        c.insert(key([10, 0, 0, 1], 4242, [10, 0, 1, 1], 6000), 2)
            .unwrap();
        assert_eq!(
            c.classify(&key([10, 0, 0, 1], 4242, [10, 0, 1, 1], 6000)),
            Some(&2)
        );
        assert_eq!(
            c.classify(&key([10, 0, 0, 1], 4243, [10, 0, 1, 1], 6000)),
            Some(&1)
        );
        // Removing the exact filter leaves the sender's wildcard in force.
        c.remove(&key([10, 0, 0, 1], 4242, [10, 0, 1, 1], 6000));
        assert_eq!(
            c.classify(&key([10, 0, 0, 1], 4242, [10, 0, 1, 1], 6000)),
            Some(&1)
        );
    }

    #[test]
    fn shared_explicit_senders_share_one_flow() {
        let mut c = RsvpClassifier::new();
        for sender in [[10, 0, 0, 1], [10, 0, 0, 2], [10, 0, 0, 3]] {
            c.insert(key(sender, 0, [10, 0, 1, 1], 6000), 9u32).unwrap();
        }
        assert_eq!(
            c.classify(&key([10, 0, 0, 2], 1, [10, 0, 1, 1], 6000)),
            Some(&9)
        );
        c.retain(|_, &flow| flow != 9);
        assert!(c.is_empty());
    }

    #[test]
    fn insert_refuses_a_duplicate_and_replace_overwrites() {
        let mut c = RsvpClassifier::new();
        let filter = key([10, 0, 0, 1], 1, [10, 0, 1, 1], 2);
        c.insert(filter, 1u32).unwrap();
        assert_eq!(
            c.insert(filter, 2),
            Err(ClassifyError::FilterExists(filter))
        );
        assert_eq!(c.get(&filter), Some(&1));
        assert_eq!(c.replace(filter, 2), Some(1));
        assert_eq!(c.classify(&filter), Some(&2));
        assert_eq!(c.len(), 1);
    }

    #[test]
    fn filters_are_listed_in_key_order() {
        let mut c = RsvpClassifier::new();
        for i in (0..50u8).rev() {
            c.insert(key([10, 0, 0, i], 1, [10, 0, 1, 1], 2), u32::from(i))
                .unwrap();
        }
        let flows: Vec<u32> = c.filters().into_iter().map(|(_, &f)| f).collect();
        assert_eq!(flows, (0..50).collect::<Vec<_>>());
    }

    #[test]
    fn a_hundred_thousand_flows_insert_look_up_and_remove() {
        let flow = |i: u32| FlowKey {
            src: Ipv4Addr::from_bits(0x0a00_0000 | i),
            dst: Ipv4Addr::from_bits(0xc000_0200 | (i % 256)),
            protocol: if i.is_multiple_of(2) { 17 } else { 6 },
            src_port: (i % 60_000) as u16 + 1,
            dst_port: 5004,
        };
        let mut c = RsvpClassifier::new();
        for i in 0..100_000 {
            c.insert(flow(i), i).unwrap();
        }
        assert_eq!(c.len(), 100_000);
        for i in 0..100_000 {
            assert_eq!(c.classify(&flow(i)), Some(&i));
            let other_port = FlowKey {
                src_port: flow(i).src_port.wrapping_add(1).max(1),
                ..flow(i)
            };
            if other_port != flow(i) {
                assert_eq!(c.classify(&other_port), None);
            }
        }
        for i in 0..100_000 {
            assert_eq!(c.remove(&flow(i)), Some(i));
        }
        assert!(c.is_empty());
        assert_eq!(c.classify(&flow(0)), None);
    }
}
