//! The switch's internal ARP cache (EtheReal §3.4): IP → MAC mappings snooped from every ARP packet
//! the switch sees, later used to route connection-setup messages by the receiver's IP address.
//!
//! Entries age like learning-table entries. The cache is bounded ([`ARP_CACHE_CAPACITY`]) because
//! its input comes from the network; when full, new addresses are ignored until ageing frees room.
//! Each entry remembers the port its ARP packet came in on, and a reverse index finds the address
//! a MAC is bound to: the ARP hijack defence (`protect`) refuses to move a binding to another
//! port without re-probing its owner.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::time::Duration;

use rtlan_wire::ethernet::Address;

use super::PortId;
use crate::time::Instant;

/// Most IP addresses the internal ARP cache holds.
pub const ARP_CACHE_CAPACITY: usize = 4096;

/// One binding: the MAC an IP address is at, the port its ARP came in on, when last heard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Binding {
    /// The MAC the address is at.
    pub(crate) mac: Address,
    /// The port the ARP packet that bound it came in on.
    pub(crate) port: PortId,
    /// When it was last heard.
    pub(crate) seen: Instant,
}

/// The internal ARP cache.
#[derive(Debug)]
pub(crate) struct ArpCache {
    entries: HashMap<Ipv4Addr, Binding>,
    /// Reverse index: the address each MAC was last bound to (one per MAC).
    by_mac: HashMap<Address, Ipv4Addr>,
    ageing_time: Duration,
}

impl ArpCache {
    /// An empty cache whose entries live for `ageing_time` after they were last seen.
    pub(crate) fn new(ageing_time: Duration) -> ArpCache {
        ArpCache {
            entries: HashMap::with_capacity(ARP_CACHE_CAPACITY),
            by_mac: HashMap::with_capacity(ARP_CACHE_CAPACITY),
            ageing_time,
        }
    }

    /// Records that `ip` is at `mac`, heard on `port`; `false` if the cache is full and `ip` is
    /// new.
    pub(crate) fn insert(
        &mut self,
        ip: Ipv4Addr,
        mac: Address,
        port: PortId,
        now: Instant,
    ) -> bool {
        let binding = Binding {
            mac,
            port,
            seen: now,
        };
        if let Some(entry) = self.entries.get_mut(&ip) {
            let old = std::mem::replace(entry, binding);
            if old.mac != mac && self.by_mac.get(&old.mac) == Some(&ip) {
                self.by_mac.remove(&old.mac);
            }
            self.by_mac.insert(mac, ip);
            return true;
        }
        if self.entries.len() >= ARP_CACHE_CAPACITY {
            return false;
        }
        self.entries.insert(ip, binding);
        self.by_mac.insert(mac, ip);
        true
    }

    /// The MAC for `ip`, if known.
    pub(crate) fn get(&self, ip: Ipv4Addr) -> Option<Address> {
        self.entries.get(&ip).map(|b| b.mac)
    }

    /// The binding of `ip` if it was heard within the ageing time at `now`.
    pub(crate) fn binding(&self, ip: Ipv4Addr, now: Instant) -> Option<Binding> {
        self.entries
            .get(&ip)
            .filter(|b| now.saturating_duration_since(b.seen) <= self.ageing_time)
            .copied()
    }

    /// The address `mac` is bound to (the last one heard), if any.
    pub(crate) fn ip_of(&self, mac: &Address) -> Option<Ipv4Addr> {
        self.by_mac.get(mac).copied()
    }

    /// Removes entries not refreshed for longer than the ageing time.
    pub(crate) fn age(&mut self, now: Instant) {
        let ageing_time = self.ageing_time;
        self.entries
            .retain(|_, b| now.saturating_duration_since(b.seen) <= ageing_time);
        let entries = &self.entries;
        self.by_mac
            .retain(|mac, ip| entries.get(ip).is_some_and(|b| b.mac == *mac));
    }

    /// Removes every entry; returns how many there were.
    pub(crate) fn clear(&mut self) -> usize {
        let count = self.entries.len();
        self.entries.clear();
        self.by_mac.clear();
        count
    }

    /// All entries, in no particular order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (Ipv4Addr, Address)> + '_ {
        self.entries.iter().map(|(ip, b)| (*ip, b.mac))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: PortId = PortId(0);

    #[test]
    fn insert_update_age_and_bound() {
        let mut cache = ArpCache::new(Duration::from_secs(10));
        let a = Address([2, 0, 0, 0, 0, 1]);
        let b = Address([2, 0, 0, 0, 0, 2]);
        let ip = Ipv4Addr::new(198, 18, 0, 1);
        assert!(cache.insert(ip, a, P, Instant::ZERO));
        assert_eq!(cache.ip_of(&a), Some(ip));
        assert!(cache.insert(ip, b, P, Instant::ZERO + Duration::from_secs(5)));
        assert_eq!((cache.ip_of(&a), cache.ip_of(&b)), (None, Some(ip)));
        assert_eq!(cache.get(ip), Some(b));
        cache.age(Instant::ZERO + Duration::from_secs(15));
        assert_eq!(cache.get(ip), Some(b));
        cache.age(Instant::ZERO + Duration::from_secs(16));
        assert_eq!(cache.get(ip), None);
        assert_eq!(cache.ip_of(&b), None);

        for i in 0..ARP_CACHE_CAPACITY as u32 {
            assert!(cache.insert(Ipv4Addr::from(i + 1), a, P, Instant::ZERO));
        }
        assert!(!cache.insert(ip, a, P, Instant::ZERO));
        assert!(cache.insert(Ipv4Addr::from(1), b, P, Instant::ZERO));
        assert_eq!(cache.iter().count(), ARP_CACHE_CAPACITY);
    }
}
