//! Tests of the cyclic scheduler on virtual time: a driver feeds frames, polls the scheduler at
//! every deadline it asks for, and records what went out; frames carry their connection key and a
//! sequence number so every frame can be traced. The tests name connections by small keys of
//! their own; [`Keyed`] maps them to the scheduler's flow handles (keeping a removed connection's
//! handle, so using the key again exercises the scheduler's stale-handle check).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::{Deref, DerefMut};
use std::time::Duration;

use proptest::prelude::*;
use rtlan_wire::cost::tx_time;

use super::*;
use crate::egress::pool::{PoolConfig, TrafficClass};
use crate::egress::sched::{ConnStats, FlowSpec, Service};
use crate::node::Medium;
use crate::time::Instant;

/// Key written into non-real-time test frames.
const NRT: u32 = u32::MAX;
const MS: Duration = Duration::from_millis(1);
const MAX_WIRE: u64 = (1500 + 24) * 8;

/// A scheduler with the tests' connection keys.
struct Keyed {
    s: CyclicScheduler,
    keys: BTreeMap<u32, FlowHandle>,
}

impl Deref for Keyed {
    type Target = CyclicScheduler;
    fn deref(&self) -> &CyclicScheduler {
        &self.s
    }
}

impl DerefMut for Keyed {
    fn deref_mut(&mut self) -> &mut CyclicScheduler {
        &mut self.s
    }
}

impl Keyed {
    fn new(s: CyclicScheduler) -> Keyed {
        Keyed {
            s,
            keys: BTreeMap::new(),
        }
    }

    fn handle(&self, key: u32) -> FlowHandle {
        *self.keys.get(&key).expect("test uses a key it added")
    }

    fn add_connection(
        &mut self,
        key: u32,
        rate_bps: u64,
        max_burst: usize,
        max_packet: usize,
    ) -> Result<(), SchedError> {
        let handle = self.s.add_flow(FlowSpec {
            rate_bps,
            max_burst,
            max_packet,
            queue_bytes: 0,
            service: Service::Guaranteed,
        })?;
        self.keys.insert(key, handle);
        Ok(())
    }

    fn remove_connection(&mut self, key: u32) -> Option<ConnStats> {
        let handle = self.handle(key);
        self.s.remove_flow(handle)
    }

    fn enqueue_rt(&mut self, now: Instant, key: u32, frame: &[u8]) -> bool {
        let handle = self.handle(key);
        self.s.enqueue_flow(now, handle, frame)
    }

    fn rt_queued(&self, key: u32) -> Option<usize> {
        self.s.rt_queued(self.handle(key))
    }

    fn connection_stats(&self, key: u32) -> Option<ConnStats> {
        self.s.connection_stats(self.handle(key))
    }

    /// Keys of the live connections, in the scheduler's (slot) order.
    fn connections(&self) -> Vec<u32> {
        self.s
            .connections()
            .filter_map(|h| self.keys.iter().find(|(_, v)| **v == h).map(|(k, _)| *k))
            .collect()
    }
}

fn at(d: Duration) -> Instant {
    Instant::ZERO + d
}

/// A test frame of `len` (≥ 8) bytes carrying `key` and `seq`.
fn frame(key: u32, seq: u32, len: usize) -> Vec<u8> {
    let mut f = vec![0xa5u8; len.max(8)];
    f[0..4].copy_from_slice(&key.to_be_bytes());
    f[4..8].copy_from_slice(&seq.to_be_bytes());
    f
}

#[derive(Debug, Clone, Copy)]
struct Sent {
    at: Instant,
    key: u32,
    seq: u32,
    len: usize,
}

/// Runs `s` from `start` until `end`. `feed(s, now)` is called first at `start` and then at the
/// instant it returns (which must be later). Checks on every step that frames are paced at line
/// rate and that `poll_timeout` after an empty poll lies in the future.
fn drive(
    s: &mut Keyed,
    start: Instant,
    end: Instant,
    mut feed: impl FnMut(&mut Keyed, Instant) -> Option<Instant>,
) -> Vec<Sent> {
    let mut now = start;
    let mut next_feed = Some(start);
    let mut buf = [0u8; 2048];
    let mut out: Vec<Sent> = Vec::new();
    let rate = s.line_rate_bps();
    loop {
        if next_feed.is_some_and(|t| t <= now) {
            next_feed = feed(s, now);
            assert!(next_feed.is_none_or(|t| t > now), "feed must move forward");
        }
        while let Some(len) = s.poll_transmit(now, &mut buf) {
            if let Some(prev) = out.last() {
                assert!(
                    now >= prev.at + tx_time(prev.len, rate),
                    "line rate exceeded"
                );
            }
            let key = u32::from_be_bytes(buf[0..4].try_into().expect("4 bytes"));
            let seq = u32::from_be_bytes(buf[4..8].try_into().expect("4 bytes"));
            out.push(Sent {
                at: now,
                key,
                seq,
                len,
            });
        }
        let timeout = s.poll_timeout();
        if let Some(t) = timeout {
            assert!(
                t > now,
                "poll_timeout {t:?} not after {now:?} after an empty poll"
            );
        }
        match [timeout, next_feed].into_iter().flatten().min() {
            Some(t) if t < end => now = t,
            _ => return out,
        }
    }
}

/// Keeps every key in `keys` backlogged (at least 6 frames of cycling sizes) and, if `nrt`, the
/// non-real-time FIFO too; called every 50 µs.
fn greedy(keys: &[u32], nrt: bool) -> impl FnMut(&mut Keyed, Instant) -> Option<Instant> {
    const SIZES: [usize; 6] = [64, 1500, 300, 1000, 128, 700];
    let keys = keys.to_vec();
    let mut seq = 0u32;
    move |s, now| {
        for &k in &keys {
            while s.rt_queued(k).is_some_and(|n| n < 6) {
                seq += 1;
                assert!(s.enqueue_rt(now, k, &frame(k, seq, SIZES[seq as usize % 6])));
            }
        }
        while nrt && s.nrt_queued() < 6 {
            seq += 1;
            assert!(s.enqueue_nrt(now, &frame(NRT, seq, 1500)));
        }
        Some(now + Duration::from_micros(50))
    }
}

/// Wire bits sent per (key, cycle index).
fn per_cycle(sent: &[Sent], cycle: Duration) -> HashMap<(u32, u64), u64> {
    let mut m = HashMap::new();
    for s in sent {
        let c = (s.at - Instant::ZERO).as_nanos() / cycle.as_nanos();
        *m.entry((s.key, c as u64)).or_default() += wire_bits(s.len);
    }
    m
}

fn sched(line_bps: u64, cycle: Duration) -> Keyed {
    let cfg = SchedConfig {
        cycle,
        ..SchedConfig::new(line_bps)
    };
    Keyed::new(CyclicScheduler::new(cfg, Instant::ZERO).expect("valid test configuration"))
}

/// Quota of `rate` over `cycle`, in wire bits.
fn quota(rate: u64, cycle: Duration) -> u64 {
    (u128::from(rate) * cycle.as_nanos() / 1_000_000_000) as u64
}

#[test]
fn each_connection_gets_its_quota_every_cycle() {
    let mut s = sched(100_000_000, MS);
    let conns = [(1, 2_000_000), (2, 10_000_000), (3, 25_000_000)];
    for (k, r) in conns {
        s.add_connection(k, r, 16_000, 1500).expect("admissible");
    }
    let sent = drive(
        &mut s,
        Instant::ZERO,
        at(300 * MS),
        greedy(&[1, 2, 3], true),
    );
    let m = per_cycle(&sent, MS);
    for (k, r) in conns {
        let q = quota(r, MS);
        for c in 0..300 {
            let got = m.get(&(k, c)).copied().unwrap_or(0);
            assert!(
                got.abs_diff(q) <= MAX_WIRE,
                "key {k} cycle {c}: {got} vs {q}"
            );
        }
    }
    assert_eq!(s.stats().cycle_overruns, 0);
    assert_eq!(s.stats().rt_frames_dropped, 0);
}

#[test]
fn long_run_rate_is_exact_within_one_packet() {
    let cycle = MS;
    let rate = 3_333_333; // 3333.333 bits per cycle: the fraction must carry over.
    let mut s = sched(100_000_000, cycle);
    s.add_connection(7, rate, 16_000, 1500).expect("admissible");
    let sent = drive(&mut s, Instant::ZERO, at(1000 * cycle), greedy(&[7], true));
    let m = per_cycle(&sent, cycle);
    let mut cum = 0u128;
    for c in 0..1000u64 {
        cum += u128::from(m.get(&(7, c)).copied().unwrap_or(0));
        let owed = u128::from(rate) * u128::from(c + 1) * cycle.as_nanos() / 1_000_000_000;
        assert!(cum <= owed + 1, "cycle {c}: sent {cum} > owed {owed}");
        assert!(
            owed - cum.min(owed) < u128::from(MAX_WIRE),
            "cycle {c}: {cum} vs {owed}"
        );
    }
}

#[test]
fn non_real_time_gets_the_residual() {
    let mut s = sched(100_000_000, MS);
    s.add_connection(1, 30_000_000, 16_000, 1500)
        .expect("admissible");
    let end = at(200 * MS);
    let sent = drive(&mut s, Instant::ZERO, end, greedy(&[1], true));
    let bits = |key: u32| -> u64 {
        sent.iter()
            .filter(|x| x.key == key)
            .map(|x| wire_bits(x.len))
            .sum()
    };
    let (rt, nrt) = (bits(1) as f64, bits(NRT) as f64);
    assert!((rt / 0.2 - 30e6).abs() < 0.01 * 30e6, "rt {rt}");
    assert!((nrt / 0.2 - 70e6).abs() < 0.01 * 70e6, "nrt {nrt}");
}

#[test]
fn non_real_time_flood_delays_real_time_by_at_most_one_frame() {
    let line = 10_000_000;
    let mut s = sched(line, 10 * MS);
    s.add_connection(1, 2_000_000, 4_000, 1500)
        .expect("admissible");
    let mut arrivals: HashMap<u32, Instant> = HashMap::new();
    let mut seq = 0u32;
    let mut next_rt = Instant::ZERO;
    let sent = drive(&mut s, Instant::ZERO, at(1000 * MS), |s, now| {
        if now >= next_rt {
            seq += 1;
            assert!(s.enqueue_rt(now, 1, &frame(1, seq, 200)));
            arrivals.insert(seq, now);
            next_rt = now + Duration::from_micros(3_070);
        }
        while s.nrt_queued() < 8 {
            seq += 1;
            assert!(s.enqueue_nrt(now, &frame(NRT, seq, 1514)));
        }
        Some(next_rt.min(now + MS))
    });
    let bound = tx_time(1514, line);
    let rt: Vec<_> = sent.iter().filter(|x| x.key == 1).collect();
    assert!(rt.len() > 300, "{} real-time frames sent", rt.len());
    for x in rt {
        let delay = x.at - arrivals[&x.seq];
        assert!(
            delay <= bound,
            "frame {} waited {delay:?} > {bound:?}",
            x.seq
        );
    }
    assert!(sent.iter().filter(|x| x.key == NRT).count() > 700);
}

#[test]
fn an_over_sending_connection_loses_only_its_own_frames() {
    let mut s = sched(100_000_000, MS);
    s.add_connection(1, 5_000_000, 3_000, 1000)
        .expect("admissible");
    s.add_connection(2, 5_000_000, 3_000, 1000)
        .expect("admissible");
    let (mut seq, mut a_next, mut b_next) = (0u32, Instant::ZERO, Instant::ZERO);
    let mut b_offered = 0;
    let end = at(500 * MS);
    let sent = drive(&mut s, Instant::ZERO, end, |s, now| {
        if now >= a_next {
            seq += 1;
            s.enqueue_rt(now, 1, &frame(1, seq, 1000)); // 13.6 Mbit/s: too fast.
            a_next = now + Duration::from_micros(600);
        }
        if now >= b_next {
            seq += 1;
            assert!(s.enqueue_rt(now, 2, &frame(2, seq, 1000)), "B dropped"); // 4.1 Mbit/s
            b_offered += 1;
            b_next = now + Duration::from_micros(2_000);
        }
        while s.nrt_queued() < 6 {
            seq += 1;
            s.enqueue_nrt(now, &frame(NRT, seq, 1500));
        }
        Some(a_next.min(b_next))
    });
    let a = s.connection_stats(1).expect("exists");
    let b = s.connection_stats(2).expect("exists");
    assert_eq!(b.frames_dropped, 0);
    assert!(
        b.frames_sent + 2 >= b_offered,
        "{} of {b_offered}",
        b.frames_sent
    );
    assert!(
        a.frames_dropped > 300,
        "A dropped only {}",
        a.frames_dropped
    );
    let a_bits: u64 = sent
        .iter()
        .filter(|x| x.key == 1)
        .map(|x| wire_bits(x.len))
        .sum();
    let owed = quota(5_000_000, 500 * MS);
    assert!(
        a_bits <= owed && owed - a_bits <= 2 * MAX_WIRE,
        "{a_bits} vs {owed}"
    );
}

#[test]
fn real_time_is_not_work_conserving() {
    let mut s = sched(100_000_000, MS);
    s.add_connection(1, 10_000_000, 16_000, 1500)
        .expect("admissible");
    let sent = drive(&mut s, Instant::ZERO, at(100 * MS), greedy(&[1], false));
    let bits: u64 = sent.iter().map(|x| wire_bits(x.len)).sum();
    let owed = quota(10_000_000, 100 * MS);
    assert!(bits <= owed && owed - bits < MAX_WIRE, "{bits} vs {owed}");
    // The waiting connection asks to be woken at the next cycle, not before.
    assert_eq!(s.poll_timeout(), Some(at(100 * MS)));
}

#[test]
fn a_late_wake_up_catches_up_at_most_the_bound() {
    let cycle = MS;
    let mut s = sched(100_000_000, cycle);
    s.add_connection(1, 10_000_000, 30_000, 1500)
        .expect("admissible");
    let mut seq = 0;
    while s.enqueue_rt(Instant::ZERO, 1, &frame(1, seq, 500)) {
        seq += 1;
    }
    // The driver sleeps through cycles 0..5 and wakes mid-cycle 5 (no `drive`: the pacer's
    // catch-up legitimately sends the first frames back to back).
    let mut now = at(cycle * 11 / 2);
    let mut buf = [0u8; 2048];
    let mut bits = 0;
    while now < at(6 * cycle) {
        while let Some(len) = s.poll_transmit(now, &mut buf) {
            bits += wire_bits(len);
        }
        now = s.poll_timeout().expect("backlogged");
    }
    let q = quota(10_000_000, cycle);
    // Cycle 0's quota plus CATCHUP_CYCLES more; the other missed quotas are lost.
    let granted = (1 + CATCHUP_CYCLES) * q;
    assert!(
        bits <= granted && granted - bits < wire_bits(500),
        "{bits} vs {granted}"
    );
    assert_eq!(s.stats().cycles_skipped, 4);
    let cap = CATCHUP_CYCLES * q + wire_bits(1500);
    assert!(s.connection_stats(1).expect("exists").max_credit_bits <= cap);
}

#[test]
fn removing_a_connection_frees_it() {
    let cfg = SchedConfig {
        max_connections: 2,
        ..SchedConfig::new(10_000_000)
    };
    let mut s = Keyed::new(CyclicScheduler::new(cfg, Instant::ZERO).expect("valid"));
    s.add_connection(1, 6_000_000, 3000, 1500)
        .expect("admissible");
    // The control bucket's 1 % (100 kbit/s) is booked against the line too.
    assert_eq!(
        s.add_connection(2, 4_000_000, 3000, 1500),
        Err(SchedError::Oversubscribed {
            total_bps: 10_100_000,
            line_bps: 10_000_000
        })
    );
    s.add_connection(2, 3_900_000, 3000, 1500)
        .expect("admissible");
    assert_eq!(
        s.add_connection(3, 1, 3000, 1500),
        Err(SchedError::TooManyConnections(2))
    );
    for seq in 0..3 {
        assert!(s.enqueue_rt(Instant::ZERO, 1, &frame(1, seq, 1000)));
    }
    let gone = s.remove_connection(1).expect("exists");
    assert_eq!((gone.frames_dropped, gone.bytes_dropped), (3, 3000));
    assert_eq!(s.reserved_bps(), 3_900_000);
    assert!(!s.enqueue_rt(Instant::ZERO, 1, &frame(1, 9, 100)));
    assert_eq!(s.remove_connection(1), None);
    s.add_connection(3, 6_000_000, 3000, 1500)
        .expect("slot and rate were freed");
    // Connection 3 took connection 1's slot: 1's handle is stale and must not reach it.
    assert_eq!(s.handle(3).slot(), s.handle(1).slot());
    assert!(!s.enqueue_rt(Instant::ZERO, 1, &frame(1, 10, 100)));
    assert_eq!(s.rt_queued(3), Some(0));
    assert_eq!(s.connection_stats(1), None);
    assert_eq!(s.remove_connection(1), None);
    let mut keys = s.connections();
    keys.sort_unstable();
    assert_eq!(keys, [2, 3]);
    // Nothing of connection 1 is left to send.
    let mut buf = [0u8; 2048];
    assert_eq!(s.poll_transmit(Instant::ZERO, &mut buf), None);
    assert_eq!(s.poll_timeout(), None);
}

#[test]
fn rejects_bad_configuration() {
    let cfg = |cycle| SchedConfig {
        cycle,
        ..SchedConfig::new(1)
    };
    let bad = Duration::from_micros(99);
    assert_eq!(
        CyclicScheduler::new(cfg(bad), Instant::ZERO).err(),
        Some(SchedError::CycleOutOfRange(bad))
    );
    assert!(CyclicScheduler::new(cfg(MIN_CYCLE), Instant::ZERO).is_ok());
    let mut s = sched(1_000_000, MS);
    assert_eq!(s.add_connection(1, 0, 100, 100), Err(SchedError::ZeroRate));
    assert_eq!(
        s.add_connection(1, 1, 100, 0),
        Err(SchedError::BadMaxPacket(0))
    );
    assert_eq!(
        s.add_connection(1, 1, 99, 100),
        Err(SchedError::BurstBelowPacket {
            burst: 99,
            packet: 100
        })
    );
    s.add_connection(1, 1000, 100, 100).expect("admissible");
    assert!(
        !s.enqueue_rt(Instant::ZERO, 1, &frame(1, 0, 101)),
        "over max packet"
    );
    assert_eq!(s.connection_stats(1).expect("exists").frames_dropped, 1);
}

#[test]
fn ten_thousand_connections_each_get_their_quota() {
    let cycle = 10 * MS;
    let mut s = sched(10_000_000_000, cycle);
    let n = 10_000u32;
    for k in 0..n {
        // 1000 bits per cycle: one 64-byte frame (704 wire bits) per cycle.
        s.add_connection(k, 100_000, 200, 100).expect("admissible");
    }
    let sent = drive(&mut s, Instant::ZERO, at(3 * cycle), |s, now| {
        for k in 0..n {
            assert!(s.enqueue_rt(now, k, &frame(k, 0, 64)));
            assert!(s.enqueue_rt(now, k, &frame(k, 1, 64)));
        }
        None
    });
    assert_eq!(sent.len(), 2 * n as usize);
    let mut seen = HashSet::new();
    for x in &sent {
        // Frame 0 of each connection in cycle 0, frame 1 only in cycle 1.
        assert_eq!(
            (x.at - Instant::ZERO).as_nanos() / cycle.as_nanos(),
            x.seq as u128
        );
        assert!(seen.insert((x.key, x.seq)));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Random arrivals: every frame is sent or counted dropped exactly once, and no connection
    /// ever sends more than the quotas it has been granted.
    #[test]
    fn every_frame_is_accounted_for_and_credit_is_never_exceeded(
        ops in proptest::collection::vec((0u64..1500, 0u32..4, 8usize..1514), 1..250),
    ) {
        let cycle = MS;
        let rates = [1_000_000u64, 2_000_000, 3_000_000];
        let mut s = sched(10_000_000, cycle);
        for (k, r) in rates.iter().enumerate() {
            s.add_connection(k as u32, *r, 3000, 1514).expect("admissible");
        }
        let mut t = Instant::ZERO;
        let arrivals: Vec<_> = ops
            .iter()
            .map(|&(gap, key, len)| {
                t += Duration::from_micros(gap);
                (t, if key == 3 { NRT } else { key }, len)
            })
            .collect();
        let mut next = 0usize;
        let mut dropped = HashSet::new();
        let end = t + Duration::from_secs(2);
        let sent = drive(&mut s, Instant::ZERO, end, |s, now| {
            while next < arrivals.len() && arrivals[next].0 <= now {
                let (_, key, len) = arrivals[next];
                let f = frame(key, next as u32, len);
                let ok = if key == NRT { s.enqueue_nrt(now, &f) } else { s.enqueue_rt(now, key, &f) };
                if !ok {
                    dropped.insert(next as u32);
                }
                next += 1;
            }
            arrivals.get(next).map(|a| a.0)
        });
        let mut seen = HashSet::new();
        for x in &sent {
            prop_assert!(seen.insert(x.seq), "frame {} sent twice", x.seq);
            prop_assert!(!dropped.contains(&x.seq), "frame {} sent and dropped", x.seq);
            prop_assert_eq!(x.key, arrivals[x.seq as usize].1);
        }
        prop_assert_eq!(seen.len() + dropped.len(), arrivals.len());
        let counted: u64 = (0..3).map(|k| s.connection_stats(k).expect("exists").frames_dropped).sum();
        prop_assert_eq!(counted + s.stats().nrt_frames_dropped, dropped.len() as u64);
        // Granted through cycle c is at most (c + 1) quotas.
        let mut cum = [0u64; 3];
        for x in sent.iter().filter(|x| x.key != NRT) {
            let c = ((x.at - Instant::ZERO).as_nanos() / cycle.as_nanos()) as u64;
            let k = x.key as usize;
            cum[k] += wire_bits(x.len);
            prop_assert!(cum[k] <= (c + 1) * quota(rates[k], cycle), "key {} over credit", k);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// The per-cycle work admission books: between any two consecutive cycle boundaries a
    /// connection sends at most `Q_i + L_i` wire bits (`L_i` its maximum packet), and never holds
    /// more credit than that. Connections go on and off at random (emptying and refilling within
    /// a cycle, just before a boundary, or idling across boundaries), some with a quota below
    /// their maximum packet; non-real-time frames fill the line; the driver is called at least
    /// every 100 µs, so each call finds at most one boundary passed (no catch-up).
    #[test]
    fn a_connection_sends_at_most_its_quota_plus_a_frame_per_cycle(
        ops in proptest::collection::vec((0u64..900, 0u32..5, 8usize..1514), 1..300),
        max_packets in proptest::collection::vec(64usize..1514, 4),
    ) {
        let cycle = MS;
        // 500 kbit/s: 500 bits a cycle, below every frame; 20 Mbit/s: 20 000 bits.
        let rates = [500_000u64, 3_000_000, 8_000_000, 20_000_000];
        let mut s = sched(100_000_000, cycle);
        for (k, r) in rates.iter().enumerate() {
            s.add_connection(k as u32, *r, 8 * max_packets[k], max_packets[k])
                .expect("admissible");
        }
        let mut t = Instant::ZERO;
        let arrivals: Vec<_> = ops
            .iter()
            .map(|&(gap, key, len)| {
                t += Duration::from_micros(gap);
                let key = if key == 4 { NRT } else { key };
                let len = if key == NRT { len } else { len.min(max_packets[key as usize]) };
                (t, key, len)
            })
            .collect();
        let mut next = 0usize;
        let end = t + Duration::from_millis(200);
        let sent = drive(&mut s, Instant::ZERO, end, |s, now| {
            while next < arrivals.len() && arrivals[next].0 <= now {
                let (_, key, len) = arrivals[next];
                let f = frame(key, next as u32, len);
                if key == NRT {
                    s.enqueue_nrt(now, &f);
                } else {
                    s.enqueue_rt(now, key, &f);
                }
                next += 1;
            }
            while s.nrt_queued() < 2 {
                s.enqueue_nrt(now, &frame(NRT, u32::MAX, 1500));
            }
            let tick = now + Duration::from_micros(100);
            Some(arrivals.get(next).map_or(tick, |a| a.0.min(tick)))
        });
        for ((key, c), bits) in per_cycle(&sent, cycle) {
            if key == NRT {
                continue;
            }
            let k = key as usize;
            let w = quota(rates[k], cycle) + wire_bits(max_packets[k]);
            prop_assert!(bits <= w, "key {} cycle {}: {} > Q + L = {}", k, c, bits, w);
        }
        for (k, r) in rates.iter().enumerate() {
            let w = quota(*r, cycle) + wire_bits(max_packets[k]);
            let held = s.connection_stats(k as u32).expect("exists").max_credit_bits;
            prop_assert!(held <= w, "key {} held {} > Q + L = {}", k, held, w);
        }
    }
}

/// The carry across a boundary is capped at one maximum packet: a connection that saved its whole
/// quota (idle until just before the boundary, then refilled while a non-real-time frame holds the
/// line) brings `min(Q, L) + Q`, not two quotas, into the next cycle (the old cap `2·Q + L`
/// allowed three 1500-byte frames here). A backlogged connection whose quota is below its frame
/// still accumulates credit until the frame fits.
#[test]
fn the_carry_across_a_boundary_is_at_most_one_frame() {
    let cycle = MS;
    let mut s = sched(100_000_000, cycle);
    // Q = 20 000 bits, L = wire_bits(1500) = 12 192 bits.
    s.add_connection(1, 20_000_000, 30_000, 1500)
        .expect("admissible");
    // Q = 4 000 bits < L: the 1500-byte frame needs four cycles of credit.
    s.add_connection(2, 4_000_000, 3000, 1500)
        .expect("admissible");
    let q = quota(20_000_000, cycle);
    let l = wire_bits(1500);
    let refill = at(Duration::from_micros(999));
    let mut seq = 0;
    let sent = drive(&mut s, Instant::ZERO, at(10 * cycle), |s, now| {
        if now == Instant::ZERO {
            assert!(s.enqueue_rt(now, 2, &frame(2, 0, 1500)));
        }
        if now == refill {
            // The non-real-time frame started at 975.36 µs holds the line past the boundary.
            assert!(s.busy_until() > at(cycle));
            for _ in 0..20 {
                seq += 1;
                assert!(s.enqueue_rt(now, 1, &frame(1, seq, 1500)));
            }
        }
        while s.nrt_queued() < 2 {
            assert!(s.enqueue_nrt(now, &frame(NRT, 0, 1500)));
        }
        let tick = now + Duration::from_micros(50);
        Some(if now < refill { tick.min(refill) } else { tick })
    });
    let m = per_cycle(&sent, cycle);
    assert_eq!(m.get(&(1, 0)), None);
    // Two frames (24 384 bits) fit Q + L = 32 192; three would need the saved quota.
    assert_eq!(m.get(&(1, 1)), Some(&(2 * l)));
    for c in 0..10 {
        assert!(m.get(&(1, c)).copied().unwrap_or(0) <= q + l, "cycle {c}");
    }
    assert!(s.connection_stats(1).expect("exists").max_credit_bits <= q + l);
    // Key 2: 4 000 bits in cycle 0 plus one quota at boundaries 1, 2, 3 = 16 000 ≥ 12 192.
    let first = sent.iter().find(|x| x.key == 2).expect("sent");
    assert_eq!((first.at - Instant::ZERO).as_nanos() / cycle.as_nanos(), 3);
}

/// QSR §3.1 through the scheduler: with pools sized, a reserved flow borrows the excess when its
/// dedicated pool is full, default traffic is held to its own pool even with the excess free,
/// and sending gives the bytes back.
#[test]
fn queues_charge_their_buffer_pools() {
    let cfg = SchedConfig {
        pools: PoolConfig {
            control: 0,
            guaranteed: 2_000,
            controlled_load: 0,
            default: 1_000,
            excess: 1_000,
        },
        ..SchedConfig::new(100_000_000)
    };
    let mut s = Keyed::new(CyclicScheduler::new(cfg, Instant::ZERO).expect("valid"));
    s.add_connection(1, 10_000_000, 16_000, 1000)
        .expect("admissible");
    // 3 × 1000 bytes fit the flow's queue: 2000 dedicated + 1000 borrowed; a 4th does not.
    for seq in 0..3 {
        assert!(s.enqueue_rt(Instant::ZERO, 1, &frame(1, seq, 1000)));
    }
    assert!(!s.enqueue_rt(Instant::ZERO, 1, &frame(1, 3, 1000)));
    let reserved = *s.pools().stats(TrafficClass::Guaranteed);
    assert_eq!(
        (reserved.used_bytes, reserved.borrowed_bytes),
        (3_000, 1_000)
    );
    assert_eq!(reserved.refusals, 1);
    assert_eq!(s.connection_stats(1).expect("exists").frames_dropped, 1);
    // Default traffic: 1000 bytes of its own pool, never the excess (here all lent anyway, so
    // free some first by sending).
    let mut buf = [0u8; 2048];
    assert!(s.poll_transmit(Instant::ZERO, &mut buf).is_some());
    assert_eq!(s.pools().excess_used(), 0);
    assert!(s.enqueue_nrt(Instant::ZERO, &frame(NRT, 0, 1000)));
    assert!(!s.enqueue_nrt(Instant::ZERO, &frame(NRT, 1, 60)));
    assert_eq!(s.pools().excess_used(), 0);
    assert_eq!(s.stats().nrt_frames_dropped, 1);
    // Control has no dedicated pool of its own here but may borrow the excess.
    let cfg = SchedConfig {
        pools: PoolConfig {
            control: 0,
            guaranteed: 0,
            controlled_load: 0,
            default: 0,
            excess: 100,
        },
        ..SchedConfig::new(100_000_000)
    };
    let mut c = CyclicScheduler::new(cfg, Instant::ZERO)
        .expect("valid")
        .with_control_queue(1_000);
    assert!(c.enqueue_control(Instant::ZERO, &frame(NRT, 3, 60)));
    assert_eq!(c.pools().stats(TrafficClass::Control).borrowed_bytes, 60);
    assert!(!c.enqueue_nrt(Instant::ZERO, &frame(NRT, 4, 60)));
}

/// On a medium the scheduler does not pace (unpaced, shared), frames go back to back — the
/// driver serialises — while each connection is still held to its quota per cycle.
#[test]
fn unpaced_media_are_not_paced_but_still_policed() {
    for medium in [
        Medium::Unpaced,
        Medium::Shared {
            rate_bps: 10_000_000,
        },
    ] {
        let cfg = SchedConfig {
            cycle: MS,
            ..SchedConfig::for_medium(medium, 10_000_000)
        };
        let mut s = Keyed::new(CyclicScheduler::new(cfg, Instant::ZERO).expect("valid"));
        assert!(!s.is_paced());
        // 2 Mbit/s over 1 ms: 2000 bits of quota, two 64-byte frames (704 bits each) fit.
        s.add_connection(1, 2_000_000, 16_000, 1500)
            .expect("admissible");
        for seq in 0..5 {
            assert!(s.enqueue_rt(Instant::ZERO, 1, &frame(1, seq, 64)));
        }
        let mut buf = [0u8; 2048];
        let mut sent = 0;
        while s.poll_transmit(Instant::ZERO, &mut buf).is_some() {
            sent += 1;
        }
        assert_eq!(sent, 2, "{medium:?}: quota, not line rate, limits");
        assert_eq!(s.poll_timeout(), Some(at(MS)));
    }
    let zero = SchedConfig::for_medium(Medium::FullDuplex { rate_bps: 0 }, 1);
    assert_eq!(
        CyclicScheduler::new(zero, Instant::ZERO).err(),
        Some(SchedError::ZeroLineRate)
    );
}

/// Control frames go first only within the control bucket: with a control flood and a
/// connection holding credit for most of the cycle, at most σ_c + ρ_c·t wire bits of control go
/// in [0, t] while the connection still has credit, so the connection gets its whole quota;
/// control beyond the bucket then goes before default traffic. (Before the bucket, the flood
/// took the line and the connection missed its quota.)
#[test]
fn control_goes_ahead_of_real_time_only_within_its_bucket() {
    let cycle = Duration::from_millis(10);
    let cfg = SchedConfig {
        cycle,
        ..SchedConfig::new(100_000_000)
    };
    let mut s = Keyed::new(
        CyclicScheduler::new(cfg, Instant::ZERO)
            .expect("valid")
            .with_control_queue(4_000),
    );
    // 90 Mbit/s: a quota of 900 kbit, 73 frames of 1500 bytes (12192 wire bits), 8.9 ms of line.
    s.add_connection(1, 90_000_000, 200_000, 1500)
        .expect("admissible");
    let mut seq = 0;
    let sent = drive(&mut s, Instant::ZERO, at(cycle), |s, now| {
        while s.rt_queued(1).is_some_and(|n| n < 8) {
            seq += 1;
            assert!(s.enqueue_rt(now, 1, &frame(1, seq, 1500)));
        }
        while s.control_queued() < 4 {
            seq += 1;
            assert!(s.enqueue_control(now, &frame(NRT - 1, seq, 100)));
        }
        while s.nrt_queued() < 4 {
            seq += 1;
            assert!(s.enqueue_nrt(now, &frame(NRT, seq, 1500)));
        }
        Some(now + Duration::from_micros(20))
    });
    let last_rt = sent
        .iter()
        .rposition(|x| x.key == 1)
        .expect("real-time frames went");
    let sigma =
        u128::from(SchedConfig::new(100_000_000).control_burst_bytes as u64 * 8) * 1_000_000_000;
    let rho = 1_000_000u128;
    let mut control = 0u128;
    for x in &sent[..=last_rt] {
        if x.key == NRT - 1 {
            control += u128::from(wire_bits(x.len)) * 1_000_000_000;
            assert!(
                control <= sigma + rho * u128::from(x.at.as_nanos()),
                "{x:?}"
            );
        }
    }
    let rt_bits: u64 = sent
        .iter()
        .filter(|x| x.key == 1)
        .map(|x| wire_bits(x.len))
        .sum();
    assert_eq!(rt_bits, 73 * 12_192, "the whole quota, to one packet");
    // After the connection's quota, control floods the rest of the cycle ahead of default.
    assert!(sent[last_rt..].iter().all(|x| x.key != NRT));
    assert!(sent[last_rt..].iter().any(|x| x.key == NRT - 1));
}
