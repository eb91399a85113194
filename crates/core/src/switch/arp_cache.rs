//! The switch's internal ARP cache (EtheReal §3.4): IP → MAC mappings snooped from every ARP packet
//! the switch sees, later used to route connection-setup messages by the receiver's IP address.
//!
//! Entries age like learning-table entries. The cache is bounded ([`ARP_CACHE_CAPACITY`]) because
//! its input comes from the network; when full, new addresses are ignored until ageing frees room.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::time::Duration;

use rtlan_wire::ethernet::Address;

use crate::time::Instant;

/// Most IP addresses the internal ARP cache holds.
pub const ARP_CACHE_CAPACITY: usize = 4096;

/// The internal ARP cache.
#[derive(Debug)]
pub(crate) struct ArpCache {
    entries: HashMap<Ipv4Addr, (Address, Instant)>,
    ageing_time: Duration,
}

impl ArpCache {
    /// An empty cache whose entries live for `ageing_time` after they were last seen.
    pub(crate) fn new(ageing_time: Duration) -> ArpCache {
        ArpCache {
            entries: HashMap::with_capacity(ARP_CACHE_CAPACITY),
            ageing_time,
        }
    }

    /// Records that `ip` is at `mac`; `false` if the cache is full and `ip` is new.
    pub(crate) fn insert(&mut self, ip: Ipv4Addr, mac: Address, now: Instant) -> bool {
        if let Some(entry) = self.entries.get_mut(&ip) {
            *entry = (mac, now);
            return true;
        }
        if self.entries.len() >= ARP_CACHE_CAPACITY {
            return false;
        }
        self.entries.insert(ip, (mac, now));
        true
    }

    /// The MAC for `ip`, if known.
    pub(crate) fn get(&self, ip: Ipv4Addr) -> Option<Address> {
        self.entries.get(&ip).map(|(mac, _)| *mac)
    }

    /// Removes entries not refreshed for longer than the ageing time.
    pub(crate) fn age(&mut self, now: Instant) {
        let ageing_time = self.ageing_time;
        self.entries
            .retain(|_, (_, seen)| now.saturating_duration_since(*seen) <= ageing_time);
    }

    /// Removes every entry; returns how many there were.
    pub(crate) fn clear(&mut self) -> usize {
        let count = self.entries.len();
        self.entries.clear();
        count
    }

    /// All entries, in no particular order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (Ipv4Addr, Address)> + '_ {
        self.entries.iter().map(|(ip, (mac, _))| (*ip, *mac))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_update_age_and_bound() {
        let mut cache = ArpCache::new(Duration::from_secs(10));
        let a = Address([2, 0, 0, 0, 0, 1]);
        let b = Address([2, 0, 0, 0, 0, 2]);
        let ip = Ipv4Addr::new(198, 18, 0, 1);
        assert!(cache.insert(ip, a, Instant::ZERO));
        assert!(cache.insert(ip, b, Instant::ZERO + Duration::from_secs(5)));
        assert_eq!(cache.get(ip), Some(b));
        cache.age(Instant::ZERO + Duration::from_secs(15));
        assert_eq!(cache.get(ip), Some(b));
        cache.age(Instant::ZERO + Duration::from_secs(16));
        assert_eq!(cache.get(ip), None);

        for i in 0..ARP_CACHE_CAPACITY as u32 {
            assert!(cache.insert(Ipv4Addr::from(i + 1), a, Instant::ZERO));
        }
        assert!(!cache.insert(ip, a, Instant::ZERO));
        assert!(cache.insert(Ipv4Addr::from(1), b, Instant::ZERO));
        assert_eq!(cache.iter().count(), ARP_CACHE_CAPACITY);
    }
}
