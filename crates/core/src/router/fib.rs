//! The forwarding table (FIB): the QSR's "core forwarding loop", a next-hop look-up by longest
//! prefix match on the IPv4 destination (QSR paper §4.1; the paper's trunk adapters used a
//! DP-trie, §6.1).
//!
//! One route per prefix. Where routes come from ([`RouteSource`]) and their [`Route::metric`]
//! are kept with the route for whoever owns the table (configuration, the kernel mirror, the
//! connected interfaces) to arbitrate; the FIB itself forwards on the one route it holds.
//!
//! The structure underneath is `prefix_trie::PrefixMap`, a tree bitmap (Eatherton, Dittia and
//! Varghese's multi-bit trie with bitmaps, five bits per node, so at most seven nodes per IPv4
//! lookup). It was chosen over `ip_network_table-deps-treebitmap` and `iptrie` by measurement:
//! docs/router.md, "Lookup structures".

use std::net::Ipv4Addr;

use prefix_trie::PrefixMap;

use super::Ipv4Prefix;
use crate::PortId;

/// Errors of changing the forwarding table.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FibError {
    /// [`Fib::insert`] found a route for the prefix already; [`Fib::replace`] overwrites it.
    #[error("a route for {0} exists")]
    RouteExists(Ipv4Prefix),
}

/// Where a packet goes next: out of `port`, to `gateway` or, for a connected network, straight
/// to the packet's destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NextHop {
    /// The router to hand the packet to; `None` for a directly connected destination (the
    /// packet's own destination address is then resolved on `port`).
    pub gateway: Option<Ipv4Addr>,
    /// The output port.
    pub port: PortId,
}

impl NextHop {
    /// The address to resolve to a link-layer address on the output port: the gateway, or the
    /// destination itself when it is directly connected.
    pub fn neighbour(&self, dst: Ipv4Addr) -> Ipv4Addr {
        self.gateway.unwrap_or(dst)
    }
}

/// Who installed a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RouteSource {
    /// A network on one of the router's own interfaces.
    Connected,
    /// The router's configuration.
    Static,
    /// Mirrored from the host kernel's routing table.
    Kernel,
}

/// One entry of the forwarding table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Route {
    /// Where matching packets go.
    pub next_hop: NextHop,
    /// Who installed the route.
    pub source: RouteSource,
    /// The route's cost as its source gave it (lower is preferred), kept for the table's owner;
    /// the look-up does not read it.
    pub metric: u32,
}

/// The IPv4 forwarding table: prefixes to [`Route`]s, looked up by longest prefix match.
///
/// The default route is the route of [`Ipv4Prefix::DEFAULT`]; host routes are /32 prefixes.
/// Iteration is in the trie's lexicographic order (network address, then length), the same for
/// the same contents whatever the order of insertion.
#[derive(Debug, Clone, Default)]
pub struct Fib {
    routes: PrefixMap<Ipv4Prefix, Route>,
    /// Changes made so far ([`Fib::version`]).
    version: u64,
}

impl Fib {
    /// An empty table: every look-up finds nothing until a route (or a default route) is added.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a route for `prefix`; refuses if the prefix has one already.
    pub fn insert(&mut self, prefix: Ipv4Prefix, route: Route) -> Result<(), FibError> {
        if self.routes.contains_key(&prefix) {
            return Err(FibError::RouteExists(prefix));
        }
        self.routes.insert(prefix, route);
        self.version += 1;
        Ok(())
    }

    /// Sets the route for `prefix`, returning the one it replaced, if any.
    pub fn replace(&mut self, prefix: Ipv4Prefix, route: Route) -> Option<Route> {
        self.version += 1;
        self.routes.insert(prefix, route)
    }

    /// Removes the route for exactly `prefix` (not the routes inside it), returning it.
    pub fn remove(&mut self, prefix: &Ipv4Prefix) -> Option<Route> {
        let removed = self.routes.remove(prefix);
        if removed.is_some() {
            self.version += 1;
        }
        removed
    }

    /// The route for exactly `prefix`.
    pub fn get(&self, prefix: &Ipv4Prefix) -> Option<&Route> {
        self.routes.get(prefix)
    }

    /// The route of the longest prefix that contains `dst`, with that prefix; `None` if no
    /// prefix does (no default route).
    pub fn lookup(&self, dst: Ipv4Addr) -> Option<(Ipv4Prefix, &Route)> {
        self.routes.get_lpm(&Ipv4Prefix::host(dst))
    }

    /// The next hop towards `dst` (the longest matching prefix's).
    pub fn next_hop(&self, dst: Ipv4Addr) -> Option<NextHop> {
        self.lookup(dst).map(|(_, route)| route.next_hop)
    }

    /// The default route (0.0.0.0/0), if there is one.
    pub fn default_route(&self) -> Option<&Route> {
        self.get(&Ipv4Prefix::DEFAULT)
    }

    /// Sets the default route, returning the one it replaced.
    pub fn set_default_route(&mut self, route: Route) -> Option<Route> {
        self.replace(Ipv4Prefix::DEFAULT, route)
    }

    /// Every route with its prefix, in lexicographic order of the prefixes.
    pub fn iter(&self) -> impl Iterator<Item = (Ipv4Prefix, &Route)> + '_ {
        self.routes.iter()
    }

    /// Removes every route that `keep` returns false for (e.g. all kernel routes on a resync).
    pub fn retain(&mut self, mut keep: impl FnMut(&Ipv4Prefix, &Route) -> bool) {
        let before = self.routes.len();
        self.routes.retain(|prefix, route| keep(prefix, route));
        if self.routes.len() != before {
            self.version += 1;
        }
    }

    /// A count of the changes made to the table: it differs whenever a look-up could answer
    /// differently than at an earlier reading (it may also change when nothing did, e.g. a
    /// route replaced by an equal one). What a mirror of the table (the router's fast path)
    /// compares to know it is stale.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The number of routes.
    pub fn len(&self) -> usize {
        self.routes.len()
    }

    /// Whether the table has no route.
    pub fn is_empty(&self) -> bool {
        self.routes.is_empty()
    }

    /// Bytes the table's structure occupies, as the trie reports it (the routes are stored
    /// inline, so this is all of it).
    pub fn mem_size(&self) -> usize {
        self.routes.mem_size()
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn p(s: &str) -> Ipv4Prefix {
        s.parse().unwrap()
    }

    fn a(s: &str) -> Ipv4Addr {
        s.parse().unwrap()
    }

    fn via(port: u16) -> Route {
        Route {
            next_hop: NextHop {
                gateway: Some(Ipv4Addr::new(192, 0, 2, port as u8)),
                port: PortId(port),
            },
            source: RouteSource::Static,
            metric: 0,
        }
    }

    #[test]
    fn the_longest_matching_prefix_wins() {
        let mut fib = Fib::new();
        fib.insert(p("10.0.0.0/8"), via(1)).unwrap();
        fib.insert(p("10.1.0.0/16"), via(2)).unwrap();
        fib.insert(p("10.1.2.0/24"), via(3)).unwrap();
        fib.insert(p("10.1.2.3/32"), via(4)).unwrap();
        assert_eq!(fib.next_hop(a("10.9.9.9")), Some(via(1).next_hop));
        assert_eq!(fib.next_hop(a("10.1.9.9")), Some(via(2).next_hop));
        assert_eq!(fib.next_hop(a("10.1.2.4")), Some(via(3).next_hop));
        assert_eq!(fib.next_hop(a("10.1.2.3")), Some(via(4).next_hop));
        assert_eq!(fib.lookup(a("10.1.2.3")).unwrap().0, p("10.1.2.3/32"));
        assert_eq!(fib.next_hop(a("11.0.0.1")), None, "no default route yet");
        fib.set_default_route(via(9));
        assert_eq!(fib.next_hop(a("11.0.0.1")), Some(via(9).next_hop));
        assert_eq!(fib.lookup(a("11.0.0.1")).unwrap().0, Ipv4Prefix::DEFAULT);
        assert_eq!(fib.default_route(), Some(&via(9)));
        assert_eq!(fib.len(), 5);
    }

    #[test]
    fn insert_refuses_a_duplicate_and_replace_overwrites() {
        let mut fib = Fib::new();
        fib.insert(p("10.0.0.0/8"), via(1)).unwrap();
        assert_eq!(
            fib.insert(p("10.0.0.0/8"), via(2)),
            Err(FibError::RouteExists(p("10.0.0.0/8")))
        );
        assert_eq!(fib.get(&p("10.0.0.0/8")), Some(&via(1)));
        assert_eq!(fib.replace(p("10.0.0.0/8"), via(2)), Some(via(1)));
        assert_eq!(fib.replace(p("10.2.0.0/16"), via(3)), None);
        assert_eq!(fib.get(&p("10.0.0.0/8")), Some(&via(2)));
        assert_eq!(fib.len(), 2);
    }

    #[test]
    fn removing_a_prefix_exposes_the_shorter_one_and_leaves_those_inside() {
        let mut fib = Fib::new();
        fib.insert(p("10.0.0.0/8"), via(1)).unwrap();
        fib.insert(p("10.1.0.0/16"), via(2)).unwrap();
        fib.insert(p("10.1.1.0/24"), via(3)).unwrap();
        assert_eq!(fib.remove(&p("10.1.0.0/16")), Some(via(2)));
        assert_eq!(fib.remove(&p("10.1.0.0/16")), None);
        assert_eq!(fib.next_hop(a("10.1.2.1")), Some(via(1).next_hop));
        assert_eq!(fib.next_hop(a("10.1.1.1")), Some(via(3).next_hop));
        assert_eq!(fib.len(), 2);
        fib.retain(|prefix, _| prefix.prefix_len() < 24);
        assert_eq!(fib.len(), 1);
        assert_eq!(fib.next_hop(a("10.1.1.1")), Some(via(1).next_hop));
        fib.remove(&p("10.0.0.0/8"));
        assert!(fib.is_empty());
        assert_eq!(fib.next_hop(a("10.1.1.1")), None);
    }

    #[test]
    fn every_change_and_no_refused_one_moves_the_version() {
        let mut fib = Fib::new();
        let mut last = fib.version();
        let mut moved = |fib: &Fib| {
            let changed = fib.version() != last;
            last = fib.version();
            changed
        };
        fib.insert(p("10.0.0.0/8"), via(1)).unwrap();
        assert!(moved(&fib));
        assert!(fib.insert(p("10.0.0.0/8"), via(2)).is_err());
        assert!(!moved(&fib));
        fib.replace(p("10.0.0.0/8"), via(2));
        assert!(moved(&fib));
        fib.set_default_route(via(3));
        assert!(moved(&fib));
        assert!(fib.remove(&p("10.9.0.0/16")).is_none());
        assert!(!moved(&fib));
        fib.remove(&p("10.0.0.0/8"));
        assert!(moved(&fib));
        fib.retain(|_, _| true);
        assert!(!moved(&fib));
        fib.retain(|prefix, _| !prefix.is_default());
        assert!(moved(&fib));
        assert!(fib.is_empty());
    }

    #[test]
    fn iteration_order_does_not_depend_on_insertion_order() {
        let prefixes = [
            "10.1.0.0/16",
            "0.0.0.0/0",
            "10.0.0.0/8",
            "192.0.2.1/32",
            "10.1.0.0/24",
        ];
        let mut forward = Fib::new();
        let mut backward = Fib::new();
        for (i, s) in prefixes.iter().enumerate() {
            forward.insert(p(s), via(i as u16)).unwrap();
        }
        for (i, s) in prefixes.iter().enumerate().rev() {
            backward.insert(p(s), via(i as u16)).unwrap();
        }
        let f: Vec<_> = forward.iter().map(|(k, r)| (k, *r)).collect();
        let b: Vec<_> = backward.iter().map(|(k, r)| (k, *r)).collect();
        assert_eq!(f, b);
        let keys: Vec<String> = f.iter().map(|(k, _)| k.to_string()).collect();
        assert_eq!(
            keys,
            [
                "0.0.0.0/0",
                "10.0.0.0/8",
                "10.1.0.0/16",
                "10.1.0.0/24",
                "192.0.2.1/32"
            ]
        );
    }

    #[test]
    fn a_connected_route_resolves_the_destination_itself() {
        let hop = NextHop {
            gateway: None,
            port: PortId(0),
        };
        assert_eq!(hop.neighbour(a("10.0.0.7")), a("10.0.0.7"));
        assert_eq!(via(3).next_hop.neighbour(a("10.0.0.7")), a("192.0.2.3"));
    }

    #[test]
    fn a_hundred_thousand_routes_insert_look_up_and_remove() {
        let mut fib = Fib::new();
        let prefix = |i: u32| Ipv4Prefix::new(Ipv4Addr::from_bits(i << 8), 24).unwrap();
        for i in 0..100_000u32 {
            fib.insert(prefix(i), via((i % 64) as u16)).unwrap();
        }
        assert_eq!(fib.len(), 100_000);
        for i in 0..100_000u32 {
            let dst = Ipv4Addr::from_bits((i << 8) | 77);
            assert_eq!(fib.lookup(dst), Some((prefix(i), &via((i % 64) as u16))));
        }
        for i in 0..100_000u32 {
            assert!(fib.remove(&prefix(i)).is_some());
        }
        assert!(fib.is_empty());
        assert_eq!(fib.iter().count(), 0);
    }

    /// The reference: the longest of the prefixes that contain `dst`, by scanning them all.
    fn linear_lpm(routes: &[(Ipv4Prefix, u16)], dst: Ipv4Addr) -> Option<(Ipv4Prefix, u16)> {
        routes
            .iter()
            .filter(|(prefix, _)| prefix.contains(dst))
            .max_by_key(|(prefix, _)| prefix.prefix_len())
            .copied()
    }

    /// Prefixes drawn near each other (a few top bytes) so that they nest and overlap often,
    /// with every length 0 ..= 32.
    fn prefix_strategy() -> impl Strategy<Value = Ipv4Prefix> {
        (0u32..16, any::<u32>(), 0u8..=32).prop_map(|(top, low, len)| {
            let addr = Ipv4Addr::from_bits((top << 28) | (low >> 4));
            Ipv4Prefix::new(addr, len).unwrap()
        })
    }

    proptest! {
        #[test]
        fn lpm_agrees_with_a_linear_scan(
            prefixes in proptest::collection::vec(prefix_strategy(), 0..200),
            removed in proptest::collection::vec(any::<prop::sample::Index>(), 0..50),
            addrs in proptest::collection::vec(any::<u32>(), 1..200),
        ) {
            let mut fib = Fib::new();
            // The reference keeps the last route given for each prefix, as `replace` does.
            let mut reference: Vec<(Ipv4Prefix, u16)> = Vec::new();
            for (i, prefix) in prefixes.iter().enumerate() {
                let port = i as u16;
                fib.replace(*prefix, via(port));
                reference.retain(|(p, _)| p != prefix);
                reference.push((*prefix, port));
            }
            for index in &removed {
                if reference.is_empty() {
                    break;
                }
                let (prefix, port) = reference.remove(index.index(reference.len()));
                prop_assert_eq!(fib.remove(&prefix), Some(via(port)));
            }
            prop_assert_eq!(fib.len(), reference.len());
            // Addresses both random and inside the stored prefixes.
            let inside = reference.iter().map(|(p, _)| p.network());
            let probes: Vec<Ipv4Addr> =
                addrs.iter().map(|&a| Ipv4Addr::from_bits(a)).chain(inside).collect();
            for dst in probes {
                let want = linear_lpm(&reference, dst).map(|(p, port)| (p, via(port)));
                let got = fib.lookup(dst).map(|(p, r)| (p, *r));
                prop_assert_eq!(got, want, "dst {}", dst);
            }
        }
    }
}
