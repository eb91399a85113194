//! The router's neighbour table: ARP (RFC 826) for next hops, with the behaviour RFC 1812
//! §3.3.2 asks of a router — packets to a neighbour being resolved wait in a small queue, the
//! request is retried, and when the neighbour never answers the waiting packets are dropped and
//! their senders told (ICMP host unreachable, by the caller). QSR paper §4.1: the forwarding
//! loop hands a packet to "the associated VC" of its next hop; on Ethernet that is the next
//! hop's MAC address.
//!
//! Resolved entries live for `lifetime` and are refreshed by every ARP packet from the
//! neighbour; an entry past its lifetime is used once more while it is re-resolved (no packet
//! waits for a neighbour that was reachable a moment ago). Incomplete entries — at most
//! `max_incomplete` — hold at most `queue_per_neighbour` packets each. Written by hand: the
//! states and timers are the router's own and no crate models them without IO.
//!
//! For a fast path that forwards without the router (`super::fastpath`) the table also keeps,
//! once asked ([`Neighbours::track_expiry`]), its resolved entries ordered by expiry, so that
//! the router can refresh the ones past their lifetime on its timer ([`Neighbours::poll_stale`])
//! as a look-up would, and a [`Neighbours::version`] that changes with every entry made, moved,
//! re-addressed or forgotten.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::net::Ipv4Addr;
use std::time::Duration;

use rtlan_wire::ethernet::Address;

use crate::time::Instant;
use crate::PortId;

/// Timers and bounds of the neighbour table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NeighbourConfig {
    /// How long a resolved entry is trusted without hearing from the neighbour.
    pub lifetime: Duration,
    /// Wait between ARP requests for an unresolved neighbour.
    pub retry: Duration,
    /// ARP requests sent before the neighbour is given up (its packets dropped).
    pub attempts: u8,
    /// Packets held per unresolved neighbour (RFC 1812 §3.3.2: "at least one").
    pub queue_per_neighbour: usize,
    /// Unresolved neighbours at once; beyond, packets to a new one are dropped.
    pub max_incomplete: usize,
    /// Resolved neighbours kept; beyond, a new one replaces nothing and is not kept (its packets
    /// are still sent: the answer is used once).
    pub max_resolved: usize,
}

impl Default for NeighbourConfig {
    /// Linux's defaults where they exist: 30 s reachable, 1 s between 3 requests; 16 packets
    /// held per neighbour, 256 neighbours being resolved, 16,384 resolved.
    fn default() -> NeighbourConfig {
        NeighbourConfig {
            lifetime: Duration::from_secs(30),
            retry: Duration::from_secs(1),
            attempts: 3,
            queue_per_neighbour: 16,
            max_incomplete: 256,
            max_resolved: 16_384,
        }
    }
}

/// A packet waiting for its next hop's MAC: the IPv4 packet (TTL already decremented) and the
/// port it arrived on (for the ICMP error if the neighbour never answers).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiting {
    /// The IPv4 packet.
    pub packet: Vec<u8>,
    /// Where it came from.
    pub ingress: PortId,
    /// Whether it goes in the port's control queue (RSVP) rather than its default queue.
    pub control: bool,
}

#[derive(Debug, Clone, Copy)]
struct Resolved {
    port: PortId,
    mac: Address,
    expires: Instant,
    /// ARP requests sent since the neighbour was last heard from.
    asked: u8,
}

#[derive(Debug)]
struct Incomplete {
    port: PortId,
    sent: u8,
    next_retry: Instant,
    queue: VecDeque<Waiting>,
}

/// What [`Neighbours::lookup`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    /// Send to this MAC. `refresh` asks the caller to send an ARP request (the entry is past its
    /// lifetime and is being re-resolved).
    Resolved {
        /// The neighbour's MAC.
        mac: Address,
        /// Whether to re-resolve it now.
        refresh: bool,
    },
    /// Unknown or being resolved.
    Unresolved,
}

/// What [`Neighbours::hold`] did with a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hold {
    /// Queued behind a request already sent.
    Queued,
    /// Queued; a new entry was made: send the first ARP request now.
    QueuedSendRequest,
    /// Dropped: the neighbour's queue, or the table of unresolved neighbours, is full.
    Full,
}

/// An ARP request due, or a neighbour given up, found by [`Neighbours::poll_timeout`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Due {
    /// Send another ARP request for `ip` on `port`.
    Retry {
        /// The neighbour.
        ip: Ipv4Addr,
        /// Its port.
        port: PortId,
    },
    /// `ip` never answered: these packets are dropped.
    Failed {
        /// The neighbour.
        ip: Ipv4Addr,
        /// The packets that waited for it.
        waiting: Vec<Waiting>,
    },
}

/// The neighbour table (module docs).
#[derive(Debug)]
pub struct Neighbours {
    config: NeighbourConfig,
    resolved: HashMap<Ipv4Addr, Resolved>,
    /// Ordered by address, so that due retries come out in a deterministic order.
    incomplete: BTreeMap<Ipv4Addr, Incomplete>,
    /// The resolved entries by (expiry, address), kept only after [`Neighbours::track_expiry`].
    expiries: Option<BTreeSet<(Instant, Ipv4Addr)>>,
    /// Changes to the resolved entries' ports and MACs so far ([`Neighbours::version`]).
    version: u64,
}

impl Neighbours {
    /// An empty table.
    pub fn new(config: NeighbourConfig) -> Neighbours {
        Neighbours {
            config,
            resolved: HashMap::new(),
            incomplete: BTreeMap::new(),
            expiries: None,
            version: 0,
        }
    }

    /// Starts keeping the resolved entries ordered by expiry, for [`Neighbours::poll_stale`]
    /// and [`Neighbours::next_stale`] (a no-op the second time).
    pub fn track_expiry(&mut self) {
        if self.expiries.is_none() {
            let index = self
                .resolved
                .iter()
                .map(|(ip, e)| (e.expires, *ip))
                .collect();
            self.expiries = Some(index);
        }
    }

    /// A count of the changes to the resolved entries that a user of their MACs sees: an entry
    /// made, moved to another port, given another MAC, or forgotten (expiry alone is not one).
    pub fn version(&self) -> u64 {
        self.version
    }

    /// Keeps the expiry index (when tracked) in step with `ip`'s entry expiring at `old` before
    /// and `new` after (`None`: no entry).
    fn reindex(&mut self, ip: Ipv4Addr, old: Option<Instant>, new: Option<Instant>) {
        if let Some(index) = self.expiries.as_mut() {
            if let Some(t) = old {
                index.remove(&(t, ip));
            }
            if let Some(t) = new {
                index.insert((t, ip));
            }
        }
    }

    /// When the first resolved entry passes its lifetime (or passed it and is due for another
    /// request); `None` without tracking ([`Neighbours::track_expiry`]) or entries.
    pub fn next_stale(&self) -> Option<Instant> {
        self.expiries.as_ref()?.first().map(|(t, _)| *t)
    }

    /// The resolved neighbours past their lifetime at `now`, in expiry order, with their ports:
    /// the caller sends each an ARP request. Each one's expiry moves on by one retry interval,
    /// exactly as a [`Neighbours::lookup`] that returns `refresh` does, so a neighbour is asked
    /// once per retry interval until it answers — `attempts` times: one still silent a retry
    /// interval after the last is forgotten (as Linux marks it FAILED), so the next packet to
    /// it is held and resolved afresh, and given up with an ICMP error if it never answers.
    /// Empty without tracking.
    pub fn poll_stale(&mut self, now: Instant) -> Vec<(Ipv4Addr, PortId)> {
        let Some(index) = self.expiries.as_mut() else {
            return Vec::new();
        };
        let mut due = Vec::new();
        while let Some(&(t, ip)) = index.first() {
            if t > now {
                break;
            }
            index.pop_first();
            match self.resolved.get_mut(&ip) {
                Some(entry) if entry.expires == t && entry.asked >= self.config.attempts => {
                    self.resolved.remove(&ip);
                    self.version += 1;
                }
                Some(entry) if entry.expires == t => {
                    entry.asked = entry.asked.saturating_add(1);
                    entry.expires = now + self.config.retry;
                    index.insert((entry.expires, ip));
                    due.push((ip, entry.port));
                }
                // A stale index row (cannot happen: every change re-indexes); dropped.
                _ => {}
            }
        }
        due
    }

    /// The MAC of `ip` on `port` at `now`.
    pub fn lookup(&mut self, ip: Ipv4Addr, port: PortId, now: Instant) -> Lookup {
        match self.resolved.get_mut(&ip) {
            Some(entry) if entry.port == port => {
                let refresh = now >= entry.expires;
                let mac = entry.mac;
                if refresh {
                    // Ask once per lifetime: push the expiry on by one retry interval.
                    let old = entry.expires;
                    entry.asked = entry.asked.saturating_add(1);
                    entry.expires = now + self.config.retry;
                    let new = entry.expires;
                    self.reindex(ip, Some(old), Some(new));
                }
                Lookup::Resolved { mac, refresh }
            }
            _ => Lookup::Unresolved,
        }
    }

    /// Holds `waiting` for `ip` on `port`.
    pub fn hold(&mut self, ip: Ipv4Addr, port: PortId, waiting: Waiting, now: Instant) -> Hold {
        if let Some(entry) = self.incomplete.get_mut(&ip) {
            if entry.queue.len() >= self.config.queue_per_neighbour {
                return Hold::Full;
            }
            entry.queue.push_back(waiting);
            return Hold::Queued;
        }
        if self.incomplete.len() >= self.config.max_incomplete
            || self.config.queue_per_neighbour == 0
        {
            return Hold::Full;
        }
        self.incomplete.insert(
            ip,
            Incomplete {
                port,
                sent: 1,
                next_retry: now + self.config.retry,
                queue: VecDeque::from([waiting]),
            },
        );
        Hold::QueuedSendRequest
    }

    /// `ip` is at `mac` on `port` (an ARP packet from it): the entry is (re)made and what waited
    /// for it is returned, oldest first, with its port.
    pub fn learn(
        &mut self,
        ip: Ipv4Addr,
        mac: Address,
        port: PortId,
        now: Instant,
    ) -> (PortId, Vec<Waiting>) {
        let expires = now + self.config.lifetime;
        let waiting = self.incomplete.remove(&ip);
        let known = self.resolved.contains_key(&ip);
        if known || self.resolved.len() < self.config.max_resolved {
            let old = self.resolved.insert(
                ip,
                Resolved {
                    port,
                    mac,
                    expires,
                    asked: 0,
                },
            );
            self.changed(ip, old, port, mac, expires);
        }
        match waiting {
            // The packets were routed out of the port the request went on; the answer came
            // from there too (a neighbour answering on another port is not the one asked).
            Some(w) if w.port == port => (w.port, w.queue.into()),
            Some(w) => {
                self.incomplete.insert(ip, w);
                (port, Vec::new())
            }
            None => (port, Vec::new()),
        }
    }

    /// Refreshes the entry of `ip` if it exists (an ARP packet from a known neighbour; RFC 826's
    /// "merge" rule: update, never create, unless the packet was for us).
    pub fn refresh(&mut self, ip: Ipv4Addr, mac: Address, port: PortId, now: Instant) -> bool {
        match self.resolved.get_mut(&ip) {
            Some(entry) => {
                let expires = now + self.config.lifetime;
                let old = std::mem::replace(
                    entry,
                    Resolved {
                        port,
                        mac,
                        expires,
                        asked: 0,
                    },
                );
                self.changed(ip, Some(old), port, mac, expires);
                true
            }
            None => false,
        }
    }

    /// Counts and indexes `ip`'s entry, now at `mac` on `port` until `expires`, where `old`
    /// was.
    fn changed(
        &mut self,
        ip: Ipv4Addr,
        old: Option<Resolved>,
        port: PortId,
        mac: Address,
        expires: Instant,
    ) {
        if old.is_none_or(|o| o.port != port || o.mac != mac) {
            self.version += 1;
        }
        self.reindex(ip, old.map(|o| o.expires), Some(expires));
    }

    /// Whether `ip` is being resolved (an ARP reply from it is expected).
    pub fn is_pending(&self, ip: Ipv4Addr) -> bool {
        self.incomplete.contains_key(&ip)
    }

    /// Forgets every neighbour on `port` (its carrier went down); returns the packets that
    /// waited there.
    pub fn flush_port(&mut self, port: PortId) -> Vec<Waiting> {
        let before = self.resolved.len();
        let mut index = self.expiries.take();
        self.resolved.retain(|ip, e| {
            let keep = e.port != port;
            if let (false, Some(index)) = (keep, index.as_mut()) {
                index.remove(&(e.expires, *ip));
            }
            keep
        });
        self.expiries = index;
        if self.resolved.len() != before {
            self.version += 1;
        }
        let gone: Vec<Ipv4Addr> = self
            .incomplete
            .iter()
            .filter(|(_, e)| e.port == port)
            .map(|(ip, _)| *ip)
            .collect();
        gone.into_iter()
            .filter_map(|ip| self.incomplete.remove(&ip))
            .flat_map(|e| e.queue)
            .collect()
    }

    /// When the next retry or give-up is due.
    pub fn next_timeout(&self) -> Option<Instant> {
        self.incomplete.values().map(|e| e.next_retry).min()
    }

    /// Retries and give-ups due at `now`, in address order.
    pub fn poll_due(&mut self, now: Instant) -> Vec<Due> {
        let mut due = Vec::new();
        let mut failed = Vec::new();
        for (ip, entry) in self.incomplete.iter_mut() {
            if entry.next_retry > now {
                continue;
            }
            if entry.sent >= self.config.attempts {
                failed.push(*ip);
            } else {
                entry.sent += 1;
                entry.next_retry = now + self.config.retry;
                due.push(Due::Retry {
                    ip: *ip,
                    port: entry.port,
                });
            }
        }
        for ip in failed {
            if let Some(entry) = self.incomplete.remove(&ip) {
                due.push(Due::Failed {
                    ip,
                    waiting: entry.queue.into(),
                });
            }
        }
        due
    }

    /// The port and MAC `ip` is resolved to, whatever its expiry, without touching the entry
    /// (a [`Neighbours::lookup`] on that port answers with this MAC).
    pub fn get(&self, ip: Ipv4Addr) -> Option<(PortId, Address)> {
        self.resolved.get(&ip).map(|e| (e.port, e.mac))
    }

    /// Resolved neighbours: (address, port, MAC), sorted by address.
    pub fn resolved(&self) -> Vec<(Ipv4Addr, PortId, Address)> {
        let mut out: Vec<_> = self
            .resolved
            .iter()
            .map(|(ip, e)| (*ip, e.port, e.mac))
            .collect();
        out.sort_unstable_by_key(|(ip, _, _)| *ip);
        out
    }

    /// Number of neighbours being resolved.
    pub fn incomplete_len(&self) -> usize {
        self.incomplete.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const IP: Ipv4Addr = Ipv4Addr::new(198, 18, 1, 2);
    const MAC: Address = Address([2, 0, 0, 0, 1, 2]);

    fn waiting(tag: u8) -> Waiting {
        Waiting {
            packet: vec![tag; 20],
            ingress: PortId(0),
            control: false,
        }
    }

    fn ms(n: u64) -> Instant {
        Instant::ZERO + Duration::from_millis(n)
    }

    #[test]
    fn packets_wait_for_the_answer_and_leave_in_order() {
        let mut n = Neighbours::new(NeighbourConfig::default());
        assert_eq!(n.lookup(IP, PortId(1), ms(0)), Lookup::Unresolved);
        assert_eq!(
            n.hold(IP, PortId(1), waiting(1), ms(0)),
            Hold::QueuedSendRequest
        );
        assert_eq!(n.hold(IP, PortId(1), waiting(2), ms(1)), Hold::Queued);
        assert!(n.is_pending(IP));
        let (port, out) = n.learn(IP, MAC, PortId(1), ms(5));
        assert_eq!(port, PortId(1));
        assert_eq!(out, vec![waiting(1), waiting(2)]);
        assert_eq!(
            n.lookup(IP, PortId(1), ms(6)),
            Lookup::Resolved {
                mac: MAC,
                refresh: false
            }
        );
        // On another port the same address is not this neighbour.
        assert_eq!(n.lookup(IP, PortId(2), ms(6)), Lookup::Unresolved);
    }

    #[test]
    fn an_expired_entry_is_used_while_it_is_refreshed_once() {
        let config = NeighbourConfig::default();
        let mut n = Neighbours::new(config);
        n.learn(IP, MAC, PortId(1), ms(0));
        let late = ms(0) + config.lifetime;
        assert_eq!(
            n.lookup(IP, PortId(1), late),
            Lookup::Resolved {
                mac: MAC,
                refresh: true
            }
        );
        assert_eq!(
            n.lookup(IP, PortId(1), late),
            Lookup::Resolved {
                mac: MAC,
                refresh: false
            },
            "one request per retry interval"
        );
        assert!(n.refresh(IP, MAC, PortId(1), late));
        assert!(!n.refresh(Ipv4Addr::new(198, 18, 1, 9), MAC, PortId(1), late));
    }

    #[test]
    fn a_silent_neighbour_is_retried_then_given_up_with_its_packets() {
        let config = NeighbourConfig {
            queue_per_neighbour: 2,
            ..NeighbourConfig::default()
        };
        let mut n = Neighbours::new(config);
        n.hold(IP, PortId(1), waiting(1), ms(0));
        n.hold(IP, PortId(1), waiting(2), ms(0));
        assert_eq!(n.hold(IP, PortId(1), waiting(3), ms(0)), Hold::Full);
        assert_eq!(n.next_timeout(), Some(ms(1000)));
        assert!(n.poll_due(ms(999)).is_empty());
        let retry = Due::Retry {
            ip: IP,
            port: PortId(1),
        };
        assert_eq!(n.poll_due(ms(1000)), vec![retry.clone()]);
        assert_eq!(n.poll_due(ms(2000)), vec![retry]);
        assert_eq!(
            n.poll_due(ms(3000)),
            vec![Due::Failed {
                ip: IP,
                waiting: vec![waiting(1), waiting(2)]
            }]
        );
        assert_eq!(n.next_timeout(), None);
        assert!(!n.is_pending(IP));
    }

    #[test]
    fn the_tables_are_bounded() {
        let config = NeighbourConfig {
            max_incomplete: 2,
            max_resolved: 1,
            ..NeighbourConfig::default()
        };
        let mut n = Neighbours::new(config);
        for i in 0..2u8 {
            let ip = Ipv4Addr::new(198, 18, 1, 10 + i);
            assert_eq!(
                n.hold(ip, PortId(1), waiting(i), ms(0)),
                Hold::QueuedSendRequest
            );
        }
        assert_eq!(
            n.hold(Ipv4Addr::new(198, 18, 1, 99), PortId(1), waiting(9), ms(0)),
            Hold::Full
        );
        n.learn(Ipv4Addr::new(198, 18, 1, 10), MAC, PortId(1), ms(1));
        let (_, out) = n.learn(Ipv4Addr::new(198, 18, 1, 11), MAC, PortId(1), ms(1));
        assert_eq!(out.len(), 1, "its packets still go");
        assert_eq!(
            n.resolved().len(),
            1,
            "but the full table keeps no new entry"
        );
    }

    #[test]
    fn tracked_stale_entries_are_due_once_per_retry_interval_as_a_lookup_would_ask() {
        let config = NeighbourConfig::default();
        let mut n = Neighbours::new(config);
        let other = Ipv4Addr::new(198, 18, 2, 2);
        n.learn(IP, MAC, PortId(1), ms(0));
        n.learn(other, MAC, PortId(2), ms(10));
        assert_eq!(n.next_stale(), None, "not tracked");
        assert!(n.poll_stale(ms(60_000)).is_empty());
        n.track_expiry();
        let late = ms(0) + config.lifetime;
        assert_eq!(n.next_stale(), Some(late));
        assert!(n.poll_stale(late - Duration::from_millis(1)).is_empty());
        assert_eq!(n.poll_stale(late), vec![(IP, PortId(1))]);
        assert_eq!(
            n.next_stale(),
            Some(ms(10) + config.lifetime),
            "the other one"
        );
        assert_eq!(
            n.lookup(IP, PortId(1), late),
            Lookup::Resolved {
                mac: MAC,
                refresh: false
            },
            "asked already"
        );
        // A look-up that asks moves the index too.
        let later = ms(10) + config.lifetime;
        assert!(matches!(
            n.lookup(other, PortId(2), later),
            Lookup::Resolved { refresh: true, .. }
        ));
        assert_eq!(n.next_stale(), Some(late + config.retry));
        assert_eq!(n.poll_stale(late + config.retry), vec![(IP, PortId(1))]);
        // An answer puts the entry a lifetime away; a flush takes it out of the index.
        let now = late + config.retry;
        n.refresh(IP, MAC, PortId(1), now);
        assert_eq!(n.next_stale(), Some(later + config.retry));
        n.flush_port(PortId(2));
        assert_eq!(n.next_stale(), Some(now + config.lifetime));
        n.flush_port(PortId(1));
        assert_eq!(n.next_stale(), None);
    }

    #[test]
    fn a_tracked_neighbour_silent_after_its_attempts_is_forgotten() {
        let config = NeighbourConfig::default();
        let mut n = Neighbours::new(config);
        n.track_expiry();
        n.learn(IP, MAC, PortId(1), ms(0));
        let mut t = ms(0) + config.lifetime;
        for _ in 0..config.attempts {
            assert_eq!(n.poll_stale(t), vec![(IP, PortId(1))]);
            t += config.retry;
        }
        let v = n.version();
        assert!(n.poll_stale(t).is_empty(), "no fourth request");
        assert_eq!(n.get(IP), None, "forgotten");
        assert_ne!(n.version(), v, "the fast path's table changes");
        assert_eq!(n.next_stale(), None);
        assert_eq!(n.lookup(IP, PortId(1), t), Lookup::Unresolved);
        // One that answers in time is asked again a full lifetime later.
        n.learn(IP, MAC, PortId(1), t);
        let late = t + config.lifetime;
        assert_eq!(n.poll_stale(late), vec![(IP, PortId(1))]);
        let heard = late + Duration::from_millis(5);
        n.refresh(IP, MAC, PortId(1), heard);
        for i in 0..=config.attempts {
            assert_eq!(
                n.poll_stale(heard + config.lifetime + config.retry * u32::from(i))
                    .len(),
                usize::from(i < config.attempts),
                "the count starts again after an answer"
            );
        }
    }

    #[test]
    fn the_version_counts_entries_made_moved_readdressed_or_flushed() {
        let mut n = Neighbours::new(NeighbourConfig::default());
        let v0 = n.version();
        n.learn(IP, MAC, PortId(1), ms(0));
        let v1 = n.version();
        assert_ne!(v1, v0);
        n.learn(IP, MAC, PortId(1), ms(5));
        n.refresh(IP, MAC, PortId(1), ms(6));
        n.lookup(IP, PortId(1), ms(60_000));
        assert_eq!(n.version(), v1, "expiry alone is no change");
        n.refresh(IP, Address([2, 0, 0, 0, 9, 9]), PortId(1), ms(7));
        let v2 = n.version();
        assert_ne!(v2, v1);
        n.refresh(IP, Address([2, 0, 0, 0, 9, 9]), PortId(2), ms(8));
        let v3 = n.version();
        assert_ne!(v3, v2);
        n.flush_port(PortId(1));
        assert_eq!(n.version(), v3, "nothing there");
        n.flush_port(PortId(2));
        assert_ne!(n.version(), v3);
    }

    #[test]
    fn a_port_going_down_takes_its_neighbours_and_their_packets() {
        let mut n = Neighbours::new(NeighbourConfig::default());
        n.learn(IP, MAC, PortId(1), ms(0));
        let other = Ipv4Addr::new(198, 18, 2, 2);
        n.hold(other, PortId(2), waiting(7), ms(0));
        assert_eq!(n.flush_port(PortId(1)), vec![]);
        assert_eq!(n.lookup(IP, PortId(1), ms(1)), Lookup::Unresolved);
        assert_eq!(n.flush_port(PortId(2)), vec![waiting(7)]);
        assert_eq!(n.incomplete_len(), 0);
    }
}
