//! The results of a run: one JSON envelope (documented in `docs/sim.md`) and a human table.
//! Everything is in vectors in a fixed order (flows in scenario order, nodes in topology order);
//! nothing is iterated out of a hash map, so the same run gives the same bytes.

use std::fmt::Write as _;

use rtlan_core::router::RouterStats;
use rtlan_core::stats::nearest_rank;
use rtlan_core::switch::SwitchStats;
use serde::Serialize;

use crate::engine::EngineStats;
use crate::host::HostStats;
use crate::sessions::SessionsResult;
use rtlan_core::rsvp::RsvpStats;

/// Version of the JSON envelope.
pub const FORMAT_VERSION: u32 = 1;

/// The whole result of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Results {
    /// [`FORMAT_VERSION`].
    pub version: u32,
    /// The scenario as named on the command line.
    pub scenario: String,
    /// The seed used.
    pub seed: u64,
    /// Sources stop here, ns.
    pub duration_ns: u64,
    /// Start of the measuring window, ns.
    pub warmup_ns: u64,
    /// Time simulated after `duration`, ns.
    pub drain_ns: u64,
    /// Engine counters.
    pub engine: EngineStats,
    /// One entry per traffic source, in scenario order.
    pub flows: Vec<FlowResult>,
    /// One entry per host, in topology order.
    pub hosts: Vec<HostResult>,
    /// One entry per switch, in topology order.
    pub switches: Vec<SwitchResult>,
    /// One entry per router, in topology order; left out of the JSON when there are none, so
    /// the envelope of a topology without routers is what it was before routers existed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub routers: Vec<RouterResult>,
    /// One entry per `[[sessions]]` table, in scenario order; left out of the JSON when there
    /// are none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sessions: Vec<SessionsResult>,
}

/// One-way delay statistics over the datagrams received in the measuring window, µs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct DelayStats {
    /// Samples.
    pub samples: u64,
    /// Smallest.
    pub min_us: f64,
    /// Mean.
    pub mean_us: f64,
    /// Median (nearest rank).
    pub p50_us: f64,
    /// 99th percentile (nearest rank).
    pub p99_us: f64,
    /// Largest.
    pub max_us: f64,
}

impl DelayStats {
    /// Exact statistics of `samples` (ns); `None` when empty. Sorts `samples`.
    pub fn of(samples: &mut [u64]) -> Option<DelayStats> {
        if samples.is_empty() {
            return None;
        }
        samples.sort_unstable();
        let n = samples.len();
        let rank = |q: f64| nearest_rank(samples, q).unwrap_or(0);
        let sum: u128 = samples.iter().map(|&s| u128::from(s)).sum();
        let us = |ns: u64| ns as f64 / 1000.0;
        Some(DelayStats {
            samples: n as u64,
            min_us: us(samples[0]),
            mean_us: (sum as f64 / n as f64) / 1000.0,
            p50_us: us(rank(0.50)),
            p99_us: us(rank(0.99)),
            max_us: us(samples[n - 1]),
        })
    }
}

/// One flow's result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlowResult {
    /// Name.
    pub name: String,
    /// Sending host.
    pub src: String,
    /// Receiving host.
    pub dst: String,
    /// `constant`, `onoff`, `poisson` or `greedy`.
    pub kind: String,
    /// Reserved rate, wire bit/s, if the flow asked for a reservation.
    pub reserved_bps: Option<u64>,
    /// `none`, `pending`, `opened` or `refused`.
    pub reservation: String,
    /// Why the reservation was refused.
    pub refusal: Option<String>,
    /// Switches on the reserved path.
    pub hops: Option<u8>,
    /// Rate the application offered inside the window, wire bit/s.
    pub offered_bps: f64,
    /// Rate delivered to the sink inside the window (distinct datagrams), wire bit/s.
    pub delivered_bps: f64,
    /// Datagrams the application sent (greedy: retransmissions included).
    pub sent_frames: u64,
    /// Distinct datagrams the sink received.
    pub received_frames: u64,
    /// `sent − received` (not reported for greedy flows, whose losses are retransmitted).
    pub loss_frames: Option<u64>,
    /// `loss_frames / sent_frames`, percent.
    pub loss_pct: Option<f64>,
    /// Datagrams that arrived after one with a higher sequence number.
    pub reordered: u64,
    /// Duplicates received.
    pub duplicates: u64,
    /// Greedy: segments retransmitted.
    pub retransmits: u64,
    /// Datagrams the sender's shaper refused (its buffer full).
    pub shaper_drops: u64,
    /// One-way delay (application send → last bit at the sink) in the window.
    pub delay: Option<DelayStats>,
    /// The path's end-to-end delay bound the reservation was granted with, µs (SETUP_OK's
    /// BOUND; docs/delay.md).
    pub bound_us: Option<u64>,
    /// Observed maximum delay / bound (≤ 1 when the guarantee held).
    pub tightness: Option<f64>,
    /// The reservation's outages after faults (`[[fault]]`): `interrupted` to `recovered` or
    /// `revoked`. Empty without faults.
    pub outages: Vec<crate::traffic::Outage>,
    /// The sequence numbers the sink received (not greedy flows), for whoever groups datagrams
    /// into application frames (a video frame is lost if any of its packets is: QSR §6.2).
    /// Not in the JSON envelope.
    #[serde(skip)]
    pub received: SeqSet,
}

/// A set of sequence numbers from 0, one bit each.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct SeqSet {
    words: Vec<u64>,
    len: u64,
}

impl std::fmt::Debug for SeqSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SeqSet({} sequence numbers)", self.len)
    }
}

/// Application frames of consecutive datagrams, and how many lost one or more of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct FrameLoss {
    /// Frames sent (the last one may be partial).
    pub frames: u64,
    /// Frames with at least one datagram missing.
    pub lost: u64,
}

impl SeqSet {
    /// Adds `seq`; returns whether it was new.
    pub fn insert(&mut self, seq: u64) -> bool {
        let (word, bit) = (usize::try_from(seq / 64).unwrap_or(usize::MAX), seq % 64);
        if word >= self.words.len() {
            // A sequence number beyond memory is a broken header, not a datagram to count.
            if word == usize::MAX {
                return false;
            }
            self.words.resize(word + 1, 0);
        }
        let new = self.words[word] & (1 << bit) == 0;
        self.words[word] |= 1 << bit;
        self.len += u64::from(new);
        new
    }

    /// Whether `seq` is in the set.
    pub fn contains(&self, seq: u64) -> bool {
        usize::try_from(seq / 64)
            .ok()
            .and_then(|w| self.words.get(w))
            .is_some_and(|w| w & (1 << (seq % 64)) != 0)
    }

    /// How many sequence numbers are in the set.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Frames of `per_frame` consecutive datagrams among the first `sent` (frame *k* is
    /// datagrams `k·per_frame … (k+1)·per_frame − 1`), and how many miss at least one.
    pub fn frame_loss(&self, per_frame: u64, sent: u64) -> FrameLoss {
        let per_frame = per_frame.max(1);
        let frames = sent.div_ceil(per_frame);
        let lost = (0..frames)
            .filter(|k| {
                let end = ((k + 1) * per_frame).min(sent);
                (k * per_frame..end).any(|seq| !self.contains(seq))
            })
            .count() as u64;
        FrameLoss { frames, lost }
    }
}

/// One host's counters.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HostResult {
    /// Name.
    pub name: String,
    /// Counters.
    pub stats: HostStats,
    /// Connections the host daemon still holds at the end.
    pub rtcd_connections: usize,
    /// The host's RSVP engine's counters, if it signalled with RSVP (left out of the JSON
    /// otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rsvp: Option<RsvpStats>,
}

/// One switch's counters ([`rtlan_core::switch::Switch::stats`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SwitchResult {
    /// Name.
    pub name: String,
    /// Connections in its table at the end of the run.
    pub connections: usize,
    /// The core's counters.
    pub stats: SwitchStats,
}

/// One router's counters ([`rtlan_core::router::Router::stats`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RouterResult {
    /// Name.
    pub name: String,
    /// Resolved neighbours in its ARP table at the end of the run.
    pub neighbours: usize,
    /// The core's counters.
    pub stats: RouterStats,
}

impl Results {
    /// The JSON envelope, pretty-printed, with a final newline.
    pub fn to_json(&self) -> String {
        // Serialising plain structs of numbers and strings cannot fail.
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        text
    }

    /// A table for people: one line per flow, then a summary of drops.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let window = (self.duration_ns - self.warmup_ns) as f64 / 1e9;
        let _ = writeln!(
            out,
            "scenario {} (seed {}): {:.3} s measured after {:.3} s warm-up, {} events",
            self.scenario,
            self.seed,
            window,
            self.warmup_ns as f64 / 1e9,
            self.engine.events
        );
        let _ = writeln!(
            out,
            "{:<22} {:>8} {:>8} {:>9} {:>8} {:>10} {:>12} {:>12} {:>10}",
            "flow",
            "offered",
            "reserved",
            "delivered",
            "loss %",
            "reservation",
            "p99 delay µs",
            "max delay µs",
            "bound µs"
        );
        let mbit = |b: f64| format!("{:.1}", b / 1e6);
        for f in &self.flows {
            let reserved = f.reserved_bps.map_or("–".to_string(), |r| mbit(r as f64));
            let loss = f.loss_pct.map_or("–".to_string(), |l| format!("{l:.2}"));
            let (p99, max) = f.delay.map_or(("–".to_string(), "–".to_string()), |d| {
                (format!("{:.0}", d.p99_us), format!("{:.0}", d.max_us))
            });
            let bound = f.bound_us.map_or("–".to_string(), |b| b.to_string());
            let _ = writeln!(
                out,
                "{:<22} {:>8} {:>8} {:>9} {:>8} {:>10} {:>12} {:>12} {:>10}",
                truncate(&f.name, 22),
                mbit(f.offered_bps),
                reserved,
                mbit(f.delivered_bps),
                loss,
                f.reservation,
                p99,
                max,
                bound
            );
            if let Some(why) = &f.refusal {
                let _ = writeln!(out, "    refused: {why}");
            }
        }
        out.push_str("(rates in Mbit/s of whole frames on the wire)\n");
        for s in &self.switches {
            let st = &s.stats;
            let queue_full: u64 = st.ports.iter().map(|p| p.drop_queue_full).sum();
            let _ = writeln!(
                out,
                "switch {}: {} connections set up, {} refused, {} forwarded, {} real-time frames, drops: {} queue full, {} preemptive, {} real-time",
                s.name,
                st.signal.setup_ok,
                st.signal.setup_fail,
                st.forwarded,
                st.rt_data,
                queue_full,
                st.drop_preemptive,
                st.rt.queue_drops + st.rt.unknown_id_drops + st.rt.malformed_drops + st.rt.rewrite_drops
            );
        }
        for r in &self.routers {
            let st = &r.stats;
            let queue_full: u64 = st.ports.iter().map(|p| p.drop_queue_full).sum();
            let icmp = st.icmp.time_exceeded
                + st.icmp.net_unreachable
                + st.icmp.host_unreachable
                + st.icmp.frag_needed
                + st.icmp.echo_reply;
            let _ = writeln!(
                out,
                "router {}: {} forwarded, {} ICMP sent, drops: {} queue full, {} no route, {} ARP failed or full, {} link down, {} TTL, {} other",
                r.name,
                st.forwarded,
                icmp,
                queue_full,
                st.drop_no_route,
                st.drop_arp_failed + st.drop_arp_full,
                st.drop_link_down,
                st.drop_ttl,
                st.drop_not_for_us
                    + st.drop_malformed
                    + st.drop_bad_checksum
                    + st.drop_unsupported
                    + st.drop_martian
                    + st.drop_too_big
                    + st.drop_trap_full
            );
            let rsvp = &st.rsvp;
            if rsvp.path_in + rsvp.resv_in > 0 {
                let _ = writeln!(
                    out,
                    "    RSVP: {} path states, {} reservations; {} Path, {} Resv in, {} sent; {} path and {} reservation timeouts, {} refused",
                    rsvp.paths,
                    rsvp.resvs,
                    rsvp.path_in,
                    rsvp.resv_in,
                    rsvp.sent,
                    rsvp.path_timeouts,
                    rsvp.resv_timeouts,
                    rsvp.admission_refused + rsvp.state_full
                );
            }
        }
        for g in &self.sessions {
            let _ = writeln!(
                out,
                "sessions {}: {} declared, {} reserved, {} pending, {} refused, {} lost ({} losses, {} recovered)",
                g.name, g.count, g.opened, g.pending, g.refused, g.lost, g.lost_events, g.recovered
            );
        }
        out
    }
}

fn truncate(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_frame_is_lost_if_any_of_its_datagrams_is() {
        let mut set = super::SeqSet::default();
        for seq in (0..30).filter(|&s| s != 5 && s != 6 && s != 29) {
            assert!(set.insert(seq));
        }
        assert!(!set.insert(0), "already there");
        assert_eq!(set.len(), 27);
        assert!(set.contains(4) && !set.contains(5) && !set.contains(1000));
        // Frames of 10: 0–9 lost (5, 6), 10–19 whole, 20–29 lost (29).
        assert_eq!(
            set.frame_loss(10, 30),
            super::FrameLoss { frames: 3, lost: 2 }
        );
        // 25 sent: the partial third frame 20–24 is whole.
        assert_eq!(
            set.frame_loss(10, 25),
            super::FrameLoss { frames: 3, lost: 1 }
        );
        assert_eq!(format!("{set:?}"), "SeqSet(27 sequence numbers)");
    }

    use super::*;

    #[test]
    fn delay_percentiles_are_nearest_rank() {
        let mut samples: Vec<u64> = (1..=100).rev().map(|v| v * 1000).collect();
        let d = DelayStats::of(&mut samples).expect("samples");
        assert_eq!(d.samples, 100);
        assert_eq!(d.min_us, 1.0);
        assert_eq!(d.p50_us, 50.0);
        assert_eq!(d.p99_us, 99.0);
        assert_eq!(d.max_us, 100.0);
        assert_eq!(d.mean_us, 50.5);
        assert_eq!(DelayStats::of(&mut []), None);
        let mut one = vec![7000];
        assert_eq!(DelayStats::of(&mut one).map(|d| d.p99_us), Some(7.0));
    }
}
