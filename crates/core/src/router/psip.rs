//! The PSIP classifier: which provisioned pipe a packet enters at an ingress port, by CIDR
//! filters (QSR paper §5, "Provisioned IP Service").
//!
//! The paper's operator sets a pipe up "to and from specific subnets": the destination subnets
//! pick the egress QSR, the source subnets the ingress port, and "CIDR prefixes as filters"
//! select the packets, "implemented as a longest prefix match lookup" since a pipe may have
//! several prefixes and several pipes may start at one port. We keep both sides in a filter, a
//! (source prefix, destination prefix) pair, and resolve overlaps the same way on both:
//!
//! * of the filters that contain the packet's source *and* destination, the one with the longest
//!   **destination** prefix wins — the pipe is defined by where it goes (§5: the destination
//!   subnets identify the egress QSR), and this is the paper's one-prefix lookup when every
//!   filter's source is 0.0.0.0/0;
//! * among those with that destination prefix, the longest **source** prefix wins.
//!
//! A more specific destination whose source does not match does not hide a less specific one
//! whose source does: the look-up walks the destination prefixes that contain the packet's
//! destination from the longest to the shortest (one trie look-up each, at most 33), and takes
//! the first with a matching source.
//!
//! Built from the forwarding table's structure: a destination trie whose values are source tries.
//! At most 33 destination prefixes contain an address, and the paper expects "a relatively small
//! number of such provisioned pipes", so the walk costs little (docs/benchmarks.md).

use std::net::Ipv4Addr;

use prefix_trie::PrefixMap;

use super::Ipv4Prefix;

/// Errors of changing the PSIP classifier.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PsipError {
    /// A filter with the same source and destination prefixes is installed already.
    #[error("a filter from {src} to {dst} is installed already")]
    FilterExists {
        /// The filter's source prefix.
        src: Ipv4Prefix,
        /// The filter's destination prefix.
        dst: Ipv4Prefix,
    },
}

/// A PSIP filter: packets from `src` to `dst`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CidrFilter {
    /// The source prefix (0.0.0.0/0 for any source).
    pub src: Ipv4Prefix,
    /// The destination prefix.
    pub dst: Ipv4Prefix,
}

/// The PSIP classifier of an ingress port: CIDR filters to a pipe value `P`.
#[derive(Debug, Clone)]
pub struct PsipClassifier<P> {
    /// Destination prefix → (source prefix → pipe). No inner map is left empty.
    by_dst: PrefixMap<Ipv4Prefix, PrefixMap<Ipv4Prefix, P>>,
    filters: usize,
}

impl<P> Default for PsipClassifier<P> {
    fn default() -> Self {
        Self {
            by_dst: PrefixMap::new(),
            filters: 0,
        }
    }
}

impl<P> PsipClassifier<P> {
    /// An empty classifier.
    pub fn new() -> Self {
        Self::default()
    }

    /// Installs a filter; refuses if one with the same pair of prefixes is installed.
    pub fn insert(&mut self, filter: CidrFilter, pipe: P) -> Result<(), PsipError> {
        let by_src = self.by_dst.entry(filter.dst).or_default();
        if by_src.contains_key(&filter.src) {
            return Err(PsipError::FilterExists {
                src: filter.src,
                dst: filter.dst,
            });
        }
        by_src.insert(filter.src, pipe);
        self.filters += 1;
        Ok(())
    }

    /// Installs a filter, returning the pipe it replaced.
    pub fn replace(&mut self, filter: CidrFilter, pipe: P) -> Option<P> {
        let old = self
            .by_dst
            .entry(filter.dst)
            .or_default()
            .insert(filter.src, pipe);
        if old.is_none() {
            self.filters += 1;
        }
        old
    }

    /// Removes the filter with exactly these prefixes, returning its pipe.
    pub fn remove(&mut self, filter: &CidrFilter) -> Option<P> {
        let by_src = self.by_dst.get_mut(&filter.dst)?;
        let pipe = by_src.remove(&filter.src)?;
        if by_src.is_empty() {
            self.by_dst.remove(&filter.dst);
        }
        self.filters -= 1;
        Some(pipe)
    }

    /// The pipe of the filter with exactly these prefixes.
    pub fn get(&self, filter: &CidrFilter) -> Option<&P> {
        self.by_dst.get(&filter.dst)?.get(&filter.src)
    }

    /// The pipe a packet from `src` to `dst` enters, with the filter that matched: the longest
    /// matching destination prefix, then the longest matching source prefix (module doc).
    pub fn classify(&self, src: Ipv4Addr, dst: Ipv4Addr) -> Option<(CidrFilter, &P)> {
        let src_host = Ipv4Prefix::host(src);
        // The longest destination prefix containing `dst`, then, while its sources miss, the
        // longest one shorter than it: one trie look-up per step, and usually a single step.
        let mut within = Ipv4Prefix::host(dst);
        loop {
            let (dst_prefix, by_src) = self.by_dst.get_lpm(&within)?;
            if let Some((src_prefix, pipe)) = by_src.get_lpm(&src_host) {
                let filter = CidrFilter {
                    src: src_prefix,
                    dst: dst_prefix,
                };
                return Some((filter, pipe));
            }
            // The default prefix has nothing shorter; else look above `dst_prefix`.
            let shorter = dst_prefix.prefix_len().checked_sub(1)?;
            within = Ipv4Prefix::new(dst, shorter).ok()?;
        }
    }

    /// Every filter with its pipe, in lexicographic order of (destination, source).
    pub fn iter(&self) -> impl Iterator<Item = (CidrFilter, &P)> + '_ {
        self.by_dst.iter().flat_map(|(dst, by_src)| {
            by_src
                .iter()
                .map(move |(src, pipe)| (CidrFilter { src, dst }, pipe))
        })
    }

    /// Removes every filter that `keep` returns false for (e.g. all filters of a torn-down pipe).
    pub fn retain(&mut self, mut keep: impl FnMut(&CidrFilter, &P) -> bool) {
        let mut removed = 0;
        for (dst, by_src) in self.by_dst.iter_mut() {
            let before = by_src.len();
            by_src.retain(|src, pipe| keep(&CidrFilter { src: *src, dst }, pipe));
            removed += before - by_src.len();
        }
        self.by_dst.retain(|_, by_src| !by_src.is_empty());
        self.filters -= removed;
    }

    /// The number of installed filters.
    pub fn len(&self) -> usize {
        self.filters
    }

    /// Whether no filter is installed.
    pub fn is_empty(&self) -> bool {
        self.filters == 0
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn f(src: &str, dst: &str) -> CidrFilter {
        CidrFilter {
            src: src.parse().unwrap(),
            dst: dst.parse().unwrap(),
        }
    }

    fn a(s: &str) -> Ipv4Addr {
        s.parse().unwrap()
    }

    fn pipe_of(c: &PsipClassifier<u32>, src: &str, dst: &str) -> Option<u32> {
        c.classify(a(src), a(dst)).map(|(_, &p)| p)
    }

    #[test]
    fn the_longest_destination_wins_then_the_longest_source() {
        let mut c = PsipClassifier::new();
        c.insert(f("0.0.0.0/0", "10.0.0.0/8"), 1).unwrap();
        c.insert(f("0.0.0.0/0", "10.1.0.0/16"), 2).unwrap();
        c.insert(f("172.16.0.0/12", "10.1.0.0/16"), 3).unwrap();
        c.insert(f("172.16.5.0/24", "10.0.0.0/8"), 4).unwrap();
        // Longest destination (/16) beats a longer source on a shorter destination.
        assert_eq!(pipe_of(&c, "172.16.5.1", "10.1.2.3"), Some(3));
        // Same destination /16: the longer source wins over 0/0.
        assert_eq!(pipe_of(&c, "172.17.0.1", "10.1.2.3"), Some(3));
        assert_eq!(pipe_of(&c, "192.0.2.1", "10.1.2.3"), Some(2));
        // Outside 10.1/16 the /8 filters apply, the longer source first.
        assert_eq!(pipe_of(&c, "172.16.5.1", "10.2.0.1"), Some(4));
        assert_eq!(pipe_of(&c, "192.0.2.1", "10.2.0.1"), Some(1));
        assert_eq!(pipe_of(&c, "192.0.2.1", "11.0.0.1"), None);
        let (filter, _) = c.classify(a("172.17.0.1"), a("10.1.2.3")).unwrap();
        assert_eq!(filter, f("172.16.0.0/12", "10.1.0.0/16"));
    }

    #[test]
    fn a_longer_destination_whose_source_misses_does_not_hide_a_shorter_one() {
        let mut c = PsipClassifier::new();
        c.insert(f("0.0.0.0/0", "10.0.0.0/8"), 1).unwrap();
        c.insert(f("192.168.0.0/16", "10.1.2.0/24"), 2).unwrap();
        assert_eq!(pipe_of(&c, "192.168.1.1", "10.1.2.3"), Some(2));
        assert_eq!(pipe_of(&c, "172.16.0.1", "10.1.2.3"), Some(1));
    }

    #[test]
    fn insert_remove_replace_keep_the_count() {
        let mut c = PsipClassifier::new();
        c.insert(f("0.0.0.0/0", "10.0.0.0/8"), 1).unwrap();
        assert_eq!(
            c.insert(f("0.0.0.0/0", "10.0.0.0/8"), 2),
            Err(PsipError::FilterExists {
                src: Ipv4Prefix::DEFAULT,
                dst: "10.0.0.0/8".parse().unwrap()
            })
        );
        assert_eq!(c.replace(f("0.0.0.0/0", "10.0.0.0/8"), 2), Some(1));
        assert_eq!(c.replace(f("1.0.0.0/8", "10.0.0.0/8"), 3), None);
        assert_eq!(c.len(), 2);
        assert_eq!(c.get(&f("1.0.0.0/8", "10.0.0.0/8")), Some(&3));
        assert_eq!(c.remove(&f("1.0.0.0/8", "10.0.0.0/8")), Some(3));
        assert_eq!(c.remove(&f("1.0.0.0/8", "10.0.0.0/8")), None);
        assert_eq!(c.remove(&f("0.0.0.0/0", "11.0.0.0/8")), None);
        assert_eq!(c.remove(&f("0.0.0.0/0", "10.0.0.0/8")), Some(2));
        assert!(c.is_empty());
        assert_eq!(c.by_dst.len(), 0, "emptied destinations are dropped");
        assert_eq!(pipe_of(&c, "1.1.1.1", "10.0.0.1"), None);
    }

    #[test]
    fn retain_and_iter_see_every_filter_in_order() {
        let mut c = PsipClassifier::new();
        c.insert(f("0.0.0.0/0", "10.1.0.0/16"), 2).unwrap();
        c.insert(f("1.0.0.0/8", "10.0.0.0/8"), 1).unwrap();
        c.insert(f("0.0.0.0/0", "10.0.0.0/8"), 0).unwrap();
        let all: Vec<(CidrFilter, u32)> = c.iter().map(|(k, &p)| (k, p)).collect();
        assert_eq!(
            all,
            [
                (f("0.0.0.0/0", "10.0.0.0/8"), 0),
                (f("1.0.0.0/8", "10.0.0.0/8"), 1),
                (f("0.0.0.0/0", "10.1.0.0/16"), 2),
            ]
        );
        c.retain(|_, &pipe| pipe != 1 && pipe != 2);
        assert_eq!(c.len(), 1);
        assert_eq!(c.by_dst.len(), 1);
        assert_eq!(pipe_of(&c, "1.1.1.1", "10.1.0.1"), Some(0));
    }

    #[test]
    fn a_hundred_thousand_filters_insert_look_up_and_remove() {
        // 1,000 destination /24s × 100 source /24s.
        let filter = |i: u32| CidrFilter {
            src: Ipv4Prefix::new(Ipv4Addr::from_bits(0xac00_0000 | ((i % 100) << 8)), 24).unwrap(),
            dst: Ipv4Prefix::new(Ipv4Addr::from_bits(0x0a00_0000 | ((i / 100) << 8)), 24).unwrap(),
        };
        let mut c = PsipClassifier::new();
        for i in 0..100_000 {
            c.insert(filter(i), i).unwrap();
        }
        assert_eq!(c.len(), 100_000);
        for i in 0..100_000 {
            let k = filter(i);
            let src = Ipv4Addr::from_bits(k.src.network().to_bits() | 9);
            let dst = Ipv4Addr::from_bits(k.dst.network().to_bits() | 9);
            assert_eq!(c.classify(src, dst), Some((k, &i)));
        }
        for i in 0..100_000 {
            assert_eq!(c.remove(&filter(i)), Some(i));
        }
        assert!(c.is_empty());
        assert_eq!(c.iter().count(), 0);
    }

    fn prefix() -> impl Strategy<Value = Ipv4Prefix> {
        (0u32..4, any::<u32>(), 0u8..=32).prop_map(|(top, low, len)| {
            Ipv4Prefix::new(Ipv4Addr::from_bits((top << 30) | (low >> 2)), len).unwrap()
        })
    }

    proptest! {
        /// Against the rule written out: of the matching filters, the greatest
        /// (destination length, source length).
        #[test]
        fn classify_agrees_with_a_scan(
            filters in proptest::collection::vec((prefix(), prefix()), 0..100),
            packets in proptest::collection::vec((any::<u32>(), any::<u32>()), 1..100),
        ) {
            let mut c = PsipClassifier::new();
            let mut reference: Vec<(CidrFilter, usize)> = Vec::new();
            for (i, (src, dst)) in filters.into_iter().enumerate() {
                let filter = CidrFilter { src, dst };
                c.replace(filter, i);
                reference.retain(|(k, _)| *k != filter);
                reference.push((filter, i));
            }
            prop_assert_eq!(c.len(), reference.len());
            // Random packets, and one from and to the network address of each filter.
            let inside: Vec<(Ipv4Addr, Ipv4Addr)> =
                reference.iter().map(|(k, _)| (k.src.network(), k.dst.network())).collect();
            let random = packets
                .into_iter()
                .map(|(s, d)| (Ipv4Addr::from_bits(s), Ipv4Addr::from_bits(d)));
            for (src, dst) in random.chain(inside) {
                let want = reference
                    .iter()
                    .filter(|(k, _)| k.src.contains(src) && k.dst.contains(dst))
                    .max_by_key(|(k, _)| (k.dst.prefix_len(), k.src.prefix_len()))
                    .map(|(k, p)| (*k, *p));
                prop_assert_eq!(c.classify(src, dst).map(|(k, p)| (k, *p)), want);
            }
        }
    }
}
