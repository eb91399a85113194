//! The learning table (EtheReal §3.4, "backward learning"): the source address of every incoming
//! frame maps to the port it came in on.
//!
//! Unlike the paper's prototype, which ignored updates to existing entries, an entry is refreshed
//! on every frame (so ageing only removes silent stations) and moves when a station shows up on
//! another port (a host moved, or the topology changed). The switch's own addresses are kept in the
//! same table as `Local` entries, so one hash lookup classifies a destination as "the switch" or "a
//! port"; they are never learnt over, aged or reported.
//!
//! The table is bounded ([`FDB_CAPACITY`]): a flood of made-up source addresses cannot grow it
//! without limit; when full, new stations are not learnt until ageing frees room.

use std::collections::HashMap;
use std::time::Duration;

use rtlan_wire::ethernet::Address;

use super::PortId;
use crate::time::Instant;

/// Most stations the learning table holds.
pub const FDB_CAPACITY: usize = 16_384;

/// Where a destination address leads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lookup {
    /// One of the switch's own addresses.
    Local,
    /// A station learnt on this port.
    Port(PortId),
    /// Not known (or aged out).
    Unknown,
}

/// What learning a source address did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Learnt {
    /// The station was known on this port; its timestamp was refreshed.
    Refreshed,
    /// The station is new (or had aged out) and now maps to the port.
    Created,
    /// The station was known on another port and moved.
    Moved,
    /// The address is one of the switch's own; nothing learnt.
    Own,
    /// The table is full; nothing learnt.
    Full,
    /// The station is bound elsewhere and may not move here (yet): nothing learnt
    /// (`arp_guard`).
    Refused,
}

#[derive(Debug, Clone, Copy)]
enum Entry {
    Local,
    Station { port: PortId, last_seen: Instant },
}

/// A change of the learning table, for a mirror of it kept elsewhere (the XDP fast path's
/// station map, docs/fastpath.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FdbChange {
    /// The station is now on this port (new, back after ageing, or moved).
    Learnt(Address, PortId),
    /// The station is no longer known (aged, or its port's link went down).
    Forgotten(Address),
}

/// Changes kept before a mirror must be rebuilt whole ([`Fdb::take_changes`] says so).
pub const MAX_FDB_CHANGES: usize = 4096;

/// The changes since the mirror last took them; `overflowed` when more happened than were kept.
#[derive(Debug, Default)]
struct ChangeLog {
    changes: Vec<FdbChange>,
    overflowed: bool,
}

impl ChangeLog {
    fn push(&mut self, change: FdbChange) {
        if self.changes.len() < MAX_FDB_CHANGES {
            self.changes.push(change);
        } else {
            self.overflowed = true;
        }
    }
}

/// The learning table.
#[derive(Debug)]
pub(crate) struct Fdb {
    entries: HashMap<Address, Entry>,
    /// Number of `Station` entries.
    stations: usize,
    ageing_time: Duration,
    /// Changes for a mirror, when one is kept ([`Fdb::track_changes`]).
    log: Option<ChangeLog>,
}

impl Fdb {
    /// An empty table knowing the switch's own addresses.
    pub(crate) fn new(own: impl IntoIterator<Item = Address>, ageing_time: Duration) -> Fdb {
        let mut entries = HashMap::with_capacity(FDB_CAPACITY);
        for mac in own {
            entries.insert(mac, Entry::Local);
        }
        Fdb {
            entries,
            stations: 0,
            ageing_time,
            log: None,
        }
    }

    /// Starts keeping the changes a mirror needs; the mirror starts from [`Fdb::stations`].
    pub(crate) fn track_changes(&mut self) {
        self.log.get_or_insert_with(ChangeLog::default);
    }

    /// The changes since the last call, oldest first; `None` when more happened than
    /// [`MAX_FDB_CHANGES`] (rebuild the mirror from [`Fdb::stations`]), or when none are kept.
    pub(crate) fn take_changes(&mut self) -> Option<Vec<FdbChange>> {
        let log = self.log.as_mut()?;
        let overflowed = std::mem::take(&mut log.overflowed);
        let changes = std::mem::take(&mut log.changes);
        (!overflowed).then_some(changes)
    }

    fn note(&mut self, change: FdbChange) {
        if let Some(log) = self.log.as_mut() {
            log.push(change);
        }
    }

    fn expired(&self, last_seen: Instant, now: Instant) -> bool {
        now.saturating_duration_since(last_seen) > self.ageing_time
    }

    /// Learns that `mac` was seen on `port` at `now`.
    pub(crate) fn learn(&mut self, mac: Address, port: PortId, now: Instant) -> Learnt {
        self.learn_unless(mac, port, now, |_| false)
    }

    /// [`Fdb::learn`], except that a live station known on another port stays where it is,
    /// untouched, if `blocked(its port)` says so ([`Learnt::Refused`]). `blocked` runs only
    /// then, so the common path stays one hash lookup.
    pub(crate) fn learn_unless(
        &mut self,
        mac: Address,
        port: PortId,
        now: Instant,
        blocked: impl FnOnce(PortId) -> bool,
    ) -> Learnt {
        let learnt = self.learn_inner(mac, port, now, blocked);
        if matches!(learnt, Learnt::Created | Learnt::Moved) {
            self.note(FdbChange::Learnt(mac, port));
        }
        learnt
    }

    fn learn_inner(
        &mut self,
        mac: Address,
        port: PortId,
        now: Instant,
        blocked: impl FnOnce(PortId) -> bool,
    ) -> Learnt {
        let ageing_time = self.ageing_time;
        match self.entries.get_mut(&mac) {
            Some(Entry::Local) => Learnt::Own,
            Some(Entry::Station {
                port: known,
                last_seen,
            }) => {
                let aged = now.saturating_duration_since(*last_seen) > ageing_time;
                if *known != port && !aged && blocked(*known) {
                    return Learnt::Refused;
                }
                *last_seen = now;
                if *known == port {
                    if aged {
                        Learnt::Created
                    } else {
                        Learnt::Refreshed
                    }
                } else {
                    *known = port;
                    Learnt::Moved
                }
            }
            None => {
                if self.stations >= FDB_CAPACITY {
                    return Learnt::Full;
                }
                self.entries.insert(
                    mac,
                    Entry::Station {
                        port,
                        last_seen: now,
                    },
                );
                self.stations += 1;
                Learnt::Created
            }
        }
    }

    /// Where frames to `mac` go at `now`.
    pub(crate) fn lookup(&self, mac: &Address, now: Instant) -> Lookup {
        match self.entries.get(mac) {
            Some(Entry::Local) => Lookup::Local,
            Some(Entry::Station { port, last_seen }) if !self.expired(*last_seen, now) => {
                Lookup::Port(*port)
            }
            _ => Lookup::Unknown,
        }
    }

    /// Forgets every station learnt on `port` (its link went down: they are no longer there).
    pub(crate) fn flush_port(&mut self, port: PortId) {
        let before = self.entries.len();
        let log = &mut self.log;
        self.entries.retain(|mac, entry| match entry {
            Entry::Local => true,
            Entry::Station { port: p, .. } => {
                let keep = *p != port;
                if let (false, Some(log)) = (keep, log.as_mut()) {
                    log.push(FdbChange::Forgotten(*mac));
                }
                keep
            }
        });
        self.stations -= before - self.entries.len();
    }

    /// Sets the ageing time (shortened to Forward Delay during a spanning tree topology change,
    /// 802.1D-1998 §8.3.5).
    pub(crate) fn set_ageing_time(&mut self, ageing_time: Duration) {
        self.ageing_time = ageing_time;
    }

    /// The ageing time in force.
    pub(crate) fn ageing_time(&self) -> Duration {
        self.ageing_time
    }

    /// Removes stations not seen for longer than the ageing time.
    pub(crate) fn age(&mut self, now: Instant) {
        let ageing_time = self.ageing_time;
        let before = self.entries.len();
        let log = &mut self.log;
        self.entries.retain(|mac, entry| match entry {
            Entry::Local => true,
            Entry::Station { last_seen, .. } => {
                let keep = now.saturating_duration_since(*last_seen) <= ageing_time;
                if let (false, Some(log)) = (keep, log.as_mut()) {
                    log.push(FdbChange::Forgotten(*mac));
                }
                keep
            }
        });
        self.stations -= before - self.entries.len();
    }

    /// The live stations at `now`: address, port, time since last seen.
    pub(crate) fn stations(
        &self,
        now: Instant,
    ) -> impl Iterator<Item = (Address, PortId, Duration)> + '_ {
        self.entries
            .iter()
            .filter_map(move |(mac, entry)| match entry {
                Entry::Station { port, last_seen } if !self.expired(*last_seen, now) => {
                    Some((*mac, *port, now.saturating_duration_since(*last_seen)))
                }
                _ => None,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OWN: Address = Address([0x02, 0, 0, 0, 0, 0xaa]);
    const A: Address = Address([0x02, 0, 0, 0, 0, 1]);

    #[test]
    fn a_mirror_gets_every_change_or_is_told_to_rebuild() {
        let b = Address([0x02, 0, 0, 0, 0, 2]);
        let mut fdb = Fdb::new([OWN], Duration::from_secs(10));
        assert_eq!(fdb.take_changes(), None, "not kept until asked");
        fdb.track_changes();
        let t = |s| Instant::ZERO + Duration::from_secs(s);
        fdb.learn(A, PortId(1), t(0));
        fdb.learn(A, PortId(1), t(1)); // refreshed: no change
        fdb.learn(OWN, PortId(1), t(1)); // own: never mirrored
        fdb.learn(b, PortId(2), t(1));
        fdb.learn(A, PortId(3), t(2)); // moved
        assert_eq!(
            fdb.take_changes(),
            Some(vec![
                FdbChange::Learnt(A, PortId(1)),
                FdbChange::Learnt(b, PortId(2)),
                FdbChange::Learnt(A, PortId(3)),
            ])
        );
        assert_eq!(fdb.take_changes(), Some(vec![]));
        fdb.flush_port(PortId(2));
        fdb.age(t(13));
        assert_eq!(
            fdb.take_changes(),
            Some(vec![FdbChange::Forgotten(b), FdbChange::Forgotten(A)])
        );
        for i in 0..=MAX_FDB_CHANGES {
            let mac = Address([0x02, 1, 0, 0, (i >> 8) as u8, i as u8]);
            fdb.learn(mac, PortId(1), t(20));
        }
        assert_eq!(fdb.take_changes(), None, "overflowed: rebuild");
        assert_eq!(fdb.take_changes(), Some(vec![]), "then changes again");
    }

    #[test]
    fn learn_refresh_move_and_age() {
        let ageing = Duration::from_secs(10);
        let mut fdb = Fdb::new([OWN], ageing);
        let t0 = Instant::ZERO;
        assert_eq!(fdb.lookup(&OWN, t0), Lookup::Local);
        assert_eq!(fdb.learn(OWN, PortId(1), t0), Learnt::Own);
        assert_eq!(fdb.lookup(&OWN, t0), Lookup::Local);
        assert_eq!(fdb.lookup(&A, t0), Lookup::Unknown);
        assert_eq!(fdb.learn(A, PortId(1), t0), Learnt::Created);
        assert_eq!(
            fdb.learn(A, PortId(1), t0 + Duration::from_secs(5)),
            Learnt::Refreshed
        );
        // Refreshed at 5 s, so still known at 14 s.
        assert_eq!(
            fdb.lookup(&A, t0 + Duration::from_secs(14)),
            Lookup::Port(PortId(1))
        );
        assert_eq!(
            fdb.learn(A, PortId(2), t0 + Duration::from_secs(6)),
            Learnt::Moved
        );
        assert_eq!(
            fdb.lookup(&A, t0 + Duration::from_secs(6)),
            Lookup::Port(PortId(2))
        );
        let late = t0 + Duration::from_secs(17);
        assert_eq!(fdb.lookup(&A, late), Lookup::Unknown);
        assert_eq!(fdb.stations(late).count(), 0);
        fdb.age(late);
        assert_eq!(fdb.stations, 0);
        assert_eq!(fdb.lookup(&OWN, late), Lookup::Local);
    }

    #[test]
    fn a_blocked_move_leaves_the_station_untouched() {
        let ageing = Duration::from_secs(10);
        let mut fdb = Fdb::new([], ageing);
        let t0 = Instant::ZERO;
        assert_eq!(fdb.learn(A, PortId(1), t0), Learnt::Created);
        let mut asked = None;
        let t1 = t0 + Duration::from_secs(4);
        let learnt = fdb.learn_unless(A, PortId(2), t1, |known| {
            asked = Some(known);
            true
        });
        assert_eq!((learnt, asked), (Learnt::Refused, Some(PortId(1))));
        // Not even refreshed: it still ages from t0.
        assert_eq!(
            fdb.lookup(&A, t0 + Duration::from_secs(11)),
            Lookup::Unknown
        );
        // The same port is never asked about; an aged station is learnt anew.
        assert_eq!(
            fdb.learn_unless(A, PortId(1), t1, |_| panic!("not asked")),
            Learnt::Refreshed
        );
        let late = t1 + Duration::from_secs(11);
        assert_eq!(
            fdb.learn_unless(A, PortId(2), late, |_| panic!("not asked")),
            Learnt::Moved
        );
        assert_eq!(fdb.lookup(&A, late), Lookup::Port(PortId(2)));
    }

    #[test]
    fn full_table_learns_nothing_new() {
        let mut fdb = Fdb::new([], Duration::from_secs(1));
        for i in 0..FDB_CAPACITY {
            let b = (i as u32).to_be_bytes();
            let mac = Address([0x02, 0, b[0], b[1], b[2], b[3]]);
            assert_eq!(fdb.learn(mac, PortId(0), Instant::ZERO), Learnt::Created);
        }
        let extra = Address([0x02, 0xff, 0, 0, 0, 1]);
        assert_eq!(fdb.learn(extra, PortId(0), Instant::ZERO), Learnt::Full);
        assert_eq!(fdb.lookup(&extra, Instant::ZERO), Lookup::Unknown);
        fdb.age(Instant::ZERO + Duration::from_secs(2));
        assert_eq!(fdb.learn(extra, PortId(0), Instant::ZERO), Learnt::Created);
    }
}
