//! An emulated shared Ethernet segment: IEEE 802.3 CSMA/CD half duplex (clause 4: 1-persistent
//! carrier sense, collision detection with a jam, truncated binary exponential backoff, at most
//! 16 attempts) — the medium RETHER runs on (RETHER §1–§2: "nodes compete for the channel ...
//! and on sensing collision, back off for a random time interval"), so that CSMA mode is
//! genuinely nondeterministic and the token's benefit is measurable (`docs/rether.md` §7).
//!
//! A [`Bus`] is a node of the shared contract whose ports are the attachments: a frame handed to
//! it on port `i` ([`Node::handle_frame`]) is what station `i`'s interface transmits; it waits in
//! that attachment's queue (its NIC's transmit buffer) for the medium, and when its transmission
//! ends without collision it is delivered to every other port ([`Node::poll_transmit`]). The
//! medium carries one transmission at a time at `rate_bps`, each occupying the line for the
//! frame's wire time (`rtlan_wire::tx_time`: padding, FCS, preamble and inter-frame gap).
//!
//! Contention, exactly in virtual time whatever the driver's timing:
//! - an attachment whose head frame is ready when the medium is idle starts at once; one that
//!   becomes ready while it is busy waits and starts as soon as it is idle (1-persistent);
//! - attachments that start within the propagation delay of each other do not hear each other:
//!   they collide — the medium is busy for twice the propagation delay, a 32-bit jam and the
//!   inter-frame gap — and each waits k slot times (512 bits), k uniform in 0..2^min(n, 10) after
//!   its n-th collision; after `max_attempts` attempts the frame is dropped (excessive
//!   collisions), as a NIC does;
//! - randomness comes from a seeded generator, so a run is reproducible.
//!
//! The same node runs in the simulator and, on real interfaces, as the lab's `kind = "segment"`.
//! Written by hand: no crate models CSMA/CD.

#[cfg(test)]
mod tests;

use std::collections::VecDeque;
use std::time::Duration;

use rand::rngs::Xoshiro256PlusPlus;
use rand::{Rng, SeedableRng};

use crate::node::{Medium, Node, PortId};
use crate::time::Instant;

/// Bits in a slot time (802.3 clause 4.4.2, 10 and 100 Mbit/s).
pub const SLOT_BITS: u64 = 512;
/// Bits of the jam a station sends on detecting a collision.
pub const JAM_BITS: u64 = 32;
/// Bits of the inter-frame gap.
pub const IFG_BITS: u64 = 96;
/// The backoff exponent stops growing here (802.3 "backoffLimit").
pub const BACKOFF_LIMIT: u32 = 10;

/// A segment's parameters.
#[derive(Debug, Clone)]
pub struct BusConfig {
    /// Attachments (ports), ≥ 1.
    pub ports: usize,
    /// The medium's rate, bit/s (> 0).
    pub rate_bps: u64,
    /// One-way propagation delay across the segment (802.3: at most half a slot time).
    pub propagation: Duration,
    /// Frames an attachment holds waiting for the medium (beyond: dropped, counted).
    pub queue_frames: usize,
    /// Attempts per frame before it is dropped (802.3 "attemptLimit": 16).
    pub max_attempts: u32,
    /// Seed of the backoff generator.
    pub seed: u64,
}

impl BusConfig {
    /// A segment of `ports` attachments at `rate_bps`: a quarter slot of propagation (a
    /// 100 Mbit/s segment's 1.28 µs is about 250 m of cable), 64 frames per attachment,
    /// 16 attempts, seed 1.
    pub fn new(ports: usize, rate_bps: u64) -> BusConfig {
        BusConfig {
            ports,
            rate_bps,
            propagation: bits(SLOT_BITS / 4, rate_bps),
            queue_frames: 64,
            max_attempts: 16,
            seed: 1,
        }
    }
}

/// The time `n` bits take at `rate_bps`.
fn bits(n: u64, rate_bps: u64) -> Duration {
    let nanos = u128::from(n) * 1_000_000_000 / u128::from(rate_bps.max(1));
    Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
}

/// Counters of a segment.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct BusStats {
    /// Frames carried without collision.
    pub frames: u64,
    /// Wire bytes of those frames.
    pub wire_bytes: u64,
    /// Collisions (one per collision event, however many stations took part).
    pub collisions: u64,
    /// Frames dropped after `max_attempts` attempts.
    pub excessive_collisions: u64,
    /// Frames dropped because their attachment's queue was full.
    pub queue_drops: u64,
    /// Frames longer than the largest Ethernet frame, dropped.
    pub oversize: u64,
    /// Time the medium carried frames or collisions, ns.
    pub busy_ns: u64,
}

/// One station's attachment.
#[derive(Debug, Default)]
struct Attachment {
    /// Frames waiting for the medium; the head is the one being attempted.
    queue: VecDeque<Vec<u8>>,
    /// Collisions of the head frame so far.
    attempts: u32,
    /// When the head frame may start (its arrival, or the end of its backoff).
    ready: Instant,
    /// Frames received from the medium, for this station.
    deliver: VecDeque<Vec<u8>>,
}

/// What the medium is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Carrier {
    /// Idle since then.
    Idle,
    /// Attachment `port` transmits from `start` to `end`.
    Busy {
        port: usize,
        start: Instant,
        end: Instant,
    },
    /// A collision occupies the medium until then.
    Collision { until: Instant },
}

/// The largest frame the medium carries (without FCS; a VLAN tag included).
pub const MAX_FRAME: usize = 1518;

/// An emulated CSMA/CD segment (module docs).
#[derive(Debug)]
pub struct Bus {
    config: BusConfig,
    attachments: Vec<Attachment>,
    carrier: Carrier,
    /// When the medium last became idle: nobody starts before.
    idle_since: Instant,
    rng: Xoshiro256PlusPlus,
    stats: BusStats,
}

impl Bus {
    /// An idle segment.
    pub fn new(config: BusConfig) -> Bus {
        Bus {
            attachments: (0..config.ports).map(|_| Attachment::default()).collect(),
            carrier: Carrier::Idle,
            idle_since: Instant::ZERO,
            rng: Xoshiro256PlusPlus::seed_from_u64(config.seed),
            stats: BusStats::default(),
            config,
        }
    }

    /// Counters.
    pub fn stats(&self) -> &BusStats {
        &self.stats
    }

    /// Frames waiting in attachment `port`'s queue (its NIC's transmit buffer).
    pub fn queued(&self, port: PortId) -> usize {
        self.attachments
            .get(usize::from(port.0))
            .map_or(0, |a| a.queue.len())
    }

    /// The configuration.
    pub fn config(&self) -> &BusConfig {
        &self.config
    }

    fn slot(&self) -> Duration {
        bits(SLOT_BITS, self.config.rate_bps)
    }

    /// Moves the medium forward to `now`: completions, collisions ending, contention.
    fn advance(&mut self, now: Instant) {
        loop {
            match self.carrier {
                Carrier::Busy { port, end, start } if end <= now => {
                    let frame = self.attachments[port]
                        .queue
                        .pop_front()
                        .expect("the transmitting attachment holds its frame");
                    self.attachments[port].attempts = 0;
                    self.attachments[port].ready = end;
                    self.stats.frames += 1;
                    self.stats.wire_bytes += rtlan_wire::wire_bytes(frame.len());
                    self.stats.busy_ns += nanos(end - start);
                    for (i, a) in self.attachments.iter_mut().enumerate() {
                        if i != port {
                            a.deliver.push_back(frame.clone());
                        }
                    }
                    self.carrier = Carrier::Idle;
                    self.idle_since = end;
                }
                Carrier::Collision { until } if until <= now => {
                    self.carrier = Carrier::Idle;
                    self.idle_since = until;
                }
                Carrier::Idle => {
                    // The earliest start among ready heads (those that waited for the medium
                    // start together when it falls idle); everyone starting within the
                    // propagation delay of it does not hear it.
                    let Some(first) = self
                        .attachments
                        .iter()
                        .filter(|a| !a.queue.is_empty())
                        .map(|a| a.ready.max(self.idle_since))
                        .min()
                    else {
                        return;
                    };
                    if first > now {
                        return;
                    }
                    let window = first + self.config.propagation;
                    let starters: Vec<usize> = (0..self.attachments.len())
                        .filter(|&i| {
                            let a = &self.attachments[i];
                            !a.queue.is_empty() && a.ready < window
                        })
                        .collect();
                    if let [port] = starters[..] {
                        let len = self.attachments[port].queue[0].len();
                        let end = first + rtlan_wire::tx_time(len, self.config.rate_bps);
                        self.carrier = Carrier::Busy {
                            port,
                            start: first,
                            end,
                        };
                    } else {
                        self.collide(first, &starters);
                    }
                }
                _ => return,
            }
        }
    }

    /// The stations in `who` collided, the first starting at `start`.
    fn collide(&mut self, start: Instant, who: &[usize]) {
        let until =
            start + self.config.propagation * 2 + bits(JAM_BITS + IFG_BITS, self.config.rate_bps);
        self.stats.collisions += 1;
        self.stats.busy_ns += nanos(until - start);
        let slot = self.slot();
        for &i in who {
            let a = &mut self.attachments[i];
            a.attempts += 1;
            if a.attempts >= self.config.max_attempts {
                a.queue.pop_front();
                a.attempts = 0;
                a.ready = until;
                self.stats.excessive_collisions += 1;
                continue;
            }
            let range = 1u64 << a.attempts.min(BACKOFF_LIMIT);
            let k = self.rng.next_u64() % range;
            a.ready = until + slot * u32::try_from(k).unwrap_or(u32::MAX);
        }
        self.carrier = Carrier::Collision { until };
    }

    /// The earliest instant the medium changes on its own.
    fn next_change(&self) -> Option<Instant> {
        match self.carrier {
            Carrier::Busy { end, .. } => Some(end),
            Carrier::Collision { until } => Some(until),
            Carrier::Idle => self
                .attachments
                .iter()
                .filter(|a| !a.queue.is_empty())
                .map(|a| a.ready.max(self.idle_since))
                .min(),
        }
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Node for Bus {
    fn port_count(&self) -> usize {
        self.attachments.len()
    }

    fn medium(&self, _port: PortId) -> Medium {
        Medium::Unpaced
    }

    /// Station `port` transmits `frame`: it joins that attachment's queue. A frame that starts
    /// while another transmission began less than the propagation delay ago collides with it.
    fn handle_frame(&mut self, now: Instant, port: PortId, frame: &[u8]) {
        let i = usize::from(port.0);
        if i >= self.attachments.len() {
            return;
        }
        if frame.len() > MAX_FRAME {
            self.stats.oversize += 1;
            return;
        }
        self.advance(now);
        let a = &mut self.attachments[i];
        if a.queue.len() >= self.config.queue_frames {
            self.stats.queue_drops += 1;
            return;
        }
        a.queue.push_back(frame.to_vec());
        if a.queue.len() > 1 {
            return;
        }
        a.ready = now;
        // Carrier sense is late by the propagation delay: a transmission that began just now
        // is not heard yet.
        if let Carrier::Busy {
            port: other, start, ..
        } = self.carrier
        {
            if now < start + self.config.propagation && other != i {
                self.collide(start, &[other, i]);
            }
        }
        self.advance(now);
    }

    fn poll_transmit(&mut self, now: Instant, port: PortId, buf: &mut [u8]) -> Option<usize> {
        self.advance(now);
        let a = self.attachments.get_mut(usize::from(port.0))?;
        let frame = a.deliver.pop_front()?;
        let out = buf.get_mut(..frame.len())?;
        out.copy_from_slice(&frame);
        Some(frame.len())
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.advance(now);
    }

    fn poll_timeout(&self) -> Option<Instant> {
        if self.attachments.iter().any(|a| !a.deliver.is_empty()) {
            return Some(Instant::ZERO);
        }
        self.next_change()
    }
}
