//! What a switch reports about itself for operators (`docs/switch.md`, control socket): the
//! connection table in plain fields (EtheReal §3.3), per-port real-time bookings, per-hop SETUP
//! handling time (EtheReal §2.2/§3.4: a SETUP whose receiver is in the internal ARP cache is
//! answered or forwarded at once; one that needs an ARP query waits for the reply), and flushing
//! the internal ARP cache; per-connection and per-port scheduler counters (EtheReal §3.3).

use std::collections::VecDeque;
use std::net::Ipv4Addr;

use crate::time::Instant;

use super::rt::SwitchUsage;
use super::sched::{MeterStats, SchedStats};
use super::{PortId, Switch};

/// Samples each per-hop setup-latency ring keeps (the most recent ones).
pub const SETUP_LATENCY_SAMPLES: usize = 4096;

/// Upper bounds of the cumulative setup-latency histogram's buckets, ns (10 µs to 5 s, about
/// 1-2.5-5 per decade; one more bucket holds everything above the last).
pub const SETUP_LATENCY_BOUNDS_NS: [u64; 18] = [
    10_000,
    25_000,
    50_000,
    100_000,
    250_000,
    500_000,
    1_000_000,
    2_500_000,
    5_000_000,
    10_000_000,
    25_000_000,
    50_000_000,
    100_000_000,
    250_000_000,
    500_000_000,
    1_000_000_000,
    2_500_000_000,
    5_000_000_000,
];

/// Control frames whose transmission a port still owes a SETUP's latency sample (bounded: the
/// control FIFO holds far fewer frames; beyond this the oldest stamp is given up).
const MAX_STAMPS_PER_PORT: usize = 4096;

/// A bounded ring of the last [`SETUP_LATENCY_SAMPLES`] values.
#[derive(Debug, Clone, Default)]
pub(super) struct LatencyRing {
    samples: Vec<u64>,
    /// Index the next sample overwrites once the ring is full.
    next: usize,
}

impl LatencyRing {
    /// Records `value`, dropping the oldest sample when full.
    pub(super) fn push(&mut self, value: u64) {
        if self.samples.len() < SETUP_LATENCY_SAMPLES {
            self.samples.push(value);
        } else if let Some(slot) = self.samples.get_mut(self.next) {
            *slot = value;
            self.next = (self.next + 1) % SETUP_LATENCY_SAMPLES;
        }
    }

    /// The samples, oldest first.
    pub(super) fn ordered(&self) -> Vec<u64> {
        let (newer, older) = self.samples.split_at(self.next.min(self.samples.len()));
        older.iter().chain(newer).copied().collect()
    }
}

/// Every per-hop setup latency since the switch started, in fixed buckets (what a Prometheus
/// histogram exports: counts only grow, so rates and quantiles over any window can be taken
/// from two scrapes).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LatencyBuckets {
    /// Upper bound of each bucket, ns ([`SETUP_LATENCY_BOUNDS_NS`]).
    pub bounds_ns: Vec<u64>,
    /// Samples in each bucket (not cumulative): `counts[i]` are those in
    /// (`bounds_ns[i-1]`, `bounds_ns[i]`]; one more entry counts those above the last bound.
    pub counts: Vec<u64>,
    /// Number of samples.
    pub count: u64,
    /// Sum of all samples, ns.
    pub sum_ns: u64,
}

impl Default for LatencyBuckets {
    fn default() -> LatencyBuckets {
        LatencyBuckets {
            bounds_ns: SETUP_LATENCY_BOUNDS_NS.to_vec(),
            counts: vec![0; SETUP_LATENCY_BOUNDS_NS.len() + 1],
            count: 0,
            sum_ns: 0,
        }
    }
}

impl LatencyBuckets {
    /// Counts `ns`.
    pub(super) fn record(&mut self, ns: u64) {
        let bucket = SETUP_LATENCY_BOUNDS_NS.partition_point(|&bound| bound < ns);
        if let Some(c) = self.counts.get_mut(bucket) {
            *c += 1;
        }
        self.count += 1;
        self.sum_ns = self.sum_ns.saturating_add(ns);
    }
}

/// A SETUP's arrival, waiting for the control frame it caused (forwarded downstream or
/// answered) to leave its port.
#[derive(Debug, Clone, Copy)]
struct Stamp {
    /// The frame's place among the control frames the port accepted (1-based).
    seq: u64,
    arrived: Instant,
    probed: bool,
}

/// Control frames a port accepted and gave out, and the stamps waiting on them.
#[derive(Debug, Clone, Default)]
struct PortStamps {
    accepted: u64,
    dequeued: u64,
    waiting: VecDeque<Stamp>,
}

/// Per-hop SETUP handling time (EtheReal §3.4, "setup latency"): from the SETUP's arrival at
/// the switch to the moment the control frame it caused (the SETUP forwarded downstream, or
/// SETUP_OK from the last hop) leaves the port's queue for the wire. The arrival is the time
/// the shell handed the frame in; the departure is the time of the `poll_transmit` that gave
/// the frame out, so queueing behind other control frames and the port's pacing count.
#[derive(Debug, Clone, Default)]
pub(super) struct SetupTimes {
    hit: LatencyRing,
    miss: LatencyRing,
    hit_buckets: LatencyBuckets,
    miss_buckets: LatencyBuckets,
    ports: Vec<PortStamps>,
}

impl SetupTimes {
    /// Times for `ports` ports.
    pub(super) fn new(ports: usize) -> SetupTimes {
        SetupTimes {
            ports: vec![PortStamps::default(); ports],
            ..SetupTimes::default()
        }
    }

    /// Control frames `port` has accepted so far.
    pub(super) fn accepted(&self, port: usize) -> u64 {
        self.ports.get(port).map_or(0, |p| p.accepted)
    }

    /// `port` accepted a control frame into its FIFO.
    pub(super) fn on_accepted(&mut self, port: usize) {
        if let Some(p) = self.ports.get_mut(port) {
            p.accepted += 1;
        }
    }

    /// The SETUP that `arrived` (after an ARP query if `probed`) caused the control frame
    /// `port` accepted last, if it accepted one since `accepted_before`.
    pub(super) fn stamp(
        &mut self,
        port: usize,
        accepted_before: u64,
        arrived: Instant,
        probed: bool,
    ) {
        let Some(p) = self.ports.get_mut(port) else {
            return;
        };
        if p.accepted == accepted_before {
            return;
        }
        if p.waiting.len() >= MAX_STAMPS_PER_PORT {
            p.waiting.pop_front();
        }
        p.waiting.push_back(Stamp {
            seq: p.accepted,
            arrived,
            probed,
        });
    }

    /// `port` gave out `dequeued` more control frames at `now`, the last of them to the wire
    /// if `sent` (else dropped): the stamps they settle become samples.
    pub(super) fn on_dequeued(&mut self, port: usize, dequeued: u64, sent: bool, now: Instant) {
        let Some(p) = self.ports.get_mut(port) else {
            return;
        };
        p.dequeued += dequeued;
        while let Some(stamp) = p.waiting.front().copied() {
            if stamp.seq > p.dequeued {
                break;
            }
            p.waiting.pop_front();
            // Only the frame given out last in this call went to the wire.
            if !(sent && stamp.seq == p.dequeued) {
                continue;
            }
            let took = now.saturating_duration_since(stamp.arrived);
            let ns = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
            if stamp.probed {
                self.miss.push(ns);
                self.miss_buckets.record(ns);
            } else {
                self.hit.push(ns);
                self.hit_buckets.record(ns);
            }
        }
    }

    /// What the switch reports.
    pub(super) fn report(&self) -> SetupLatency {
        SetupLatency {
            hit_ns: self.hit.ordered(),
            miss_ns: self.miss.ordered(),
            hit: self.hit_buckets.clone(),
            miss: self.miss_buckets.clone(),
        }
    }
}

/// Per-hop SETUP handling times in nanoseconds: from the SETUP's arrival to the moment the
/// control frame it caused (forwarded downstream or answered as the last hop) left for the
/// wire. The recent samples, oldest first, and every sample since start in buckets.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct SetupLatency {
    /// Recent SETUPs whose receiver was in the internal ARP cache (route known).
    pub hit_ns: Vec<u64>,
    /// Recent SETUPs that needed an ARP query first.
    pub miss_ns: Vec<u64>,
    /// Every route-known SETUP since start.
    pub hit: LatencyBuckets,
    /// Every SETUP that needed an ARP query since start.
    pub miss: LatencyBuckets,
}

/// One connection-table entry, for reporting.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ConnectionInfo {
    /// Port the connection's frames arrive on.
    pub in_port: u16,
    /// Connection id they carry on that link.
    pub in_id: u16,
    /// Port they leave by.
    pub out_port: u16,
    /// Connection id on the output link; `None` at the last switch (which writes the receiver's
    /// MAC instead).
    pub out_id: Option<u16>,
    /// The receiver's IP address.
    pub dst_ip: Ipv4Addr,
    /// The receiver's UDP port.
    pub dst_port: u16,
    /// Reserved rate, bit/s (whole frames).
    pub rate_bps: u64,
    /// Bytes the sender may send back to back (`burst_bytes` in JSON).
    #[serde(rename = "burst_bytes")]
    pub max_burst: u32,
    /// Largest frame, bytes.
    pub max_packet: u16,
    /// Whether this switch is the first on the path (it rewrites the proxy IP).
    pub first_hop: bool,
    /// Whether this switch is the last on the path.
    pub last_hop: bool,
    /// The receiver's MAC (last switch only).
    pub receiver_mac: Option<String>,
    /// Nanoseconds since the connection was installed or last refreshed.
    pub since_refresh_ns: u64,
    /// Frames the output port's scheduler sent on this connection.
    pub frames_sent: u64,
    /// Bytes sent on this connection.
    pub bytes_sent: u64,
    /// Frames of this connection dropped at the output port (queue full: the sender exceeds its
    /// reservation; or longer than the maximum packet).
    pub frames_dropped: u64,
    /// Frames waiting in the connection's queue.
    pub queued: usize,
    /// This hop's latency θ in the connection's delay bound, ns (docs/delay.md).
    pub latency_ns: u64,
    /// *b*/*r* + host delay + Σθ up to and including this hop, ns; at the last switch the
    /// connection's end-to-end delay bound (the BOUND of its SETUP_OK, docs/delay.md §2).
    pub bound_ns: u64,
    /// The connection's queue bound here (its backlog bound), bytes.
    pub queue_bytes: usize,
    /// Frames the first switch dropped as not conforming to the T-SPEC (0 elsewhere).
    pub nonconforming: u64,
}

/// One port's scheduler and preemptive-discard state, for reporting.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SchedPortInfo {
    /// The port.
    pub port: u16,
    /// Whether output is paced (the port has a configured rate).
    pub paced: bool,
    /// Line rate the scheduler and the meter assume, wire bit/s.
    pub line_rate_bps: u64,
    /// Cycle length, ns.
    pub cycle_ns: u64,
    /// Real-time connections leaving by this port.
    pub connections: usize,
    /// Sum of their reservations, wire bit/s.
    pub reserved_bps: u64,
    /// Scheduler counters (cycles, real-time / non-real-time / control frames sent and dropped).
    pub sched: SchedStats,
    /// Whether the port is host-facing now (its non-real-time input is metered).
    pub metered: bool,
    /// The meter's residual (line rate − reservations entering here), wire bit/s; `None` when
    /// preemptive discard is disabled.
    pub residual_bps: Option<u64>,
    /// Meter counters (admitted and preemptively dropped non-real-time input).
    pub meter: Option<MeterStats>,
}

/// Real-time use of one output port, for reporting.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RtPortInfo {
    /// The port.
    pub port: u16,
    /// Wire bit/s booked by real-time connections.
    pub booked_bps: u64,
    /// Most the bookings may reach (line rate × cap), wire bit/s.
    pub cap_bps: u64,
    /// Connection ids in use on the output link.
    pub ids_in_use: u32,
    /// Real-time FIFO bytes admitted (each connection's backlog bound).
    pub rt_admitted_bytes: usize,
}

impl Switch {
    /// The connection table for reporting, sorted by (input port, input id); `now` gives the
    /// refresh ages.
    pub fn connection_list(&self, now: crate::time::Instant) -> Vec<ConnectionInfo> {
        let mut list: Vec<ConnectionInfo> = self
            .rt
            .table
            .iter()
            .map(|((in_port, in_id), entry)| {
                let held = self.rt.held.get(&(in_port, in_id));
                let sched = self
                    .ports
                    .get(usize::from(entry.out_port.0))
                    .map(|p| &p.sched);
                let counters = sched
                    .zip(entry.flow)
                    .and_then(|(s, flow)| s.connection_stats(flow))
                    .unwrap_or_default();
                ConnectionInfo {
                    in_port: in_port.0,
                    in_id,
                    out_port: entry.out_port.0,
                    out_id: entry.receiver_mac.is_none().then_some(entry.out_id),
                    dst_ip: held
                        .map(|h| h.dst_ip)
                        .or(entry.receiver_ip)
                        .unwrap_or(Ipv4Addr::UNSPECIFIED),
                    dst_port: held.map_or(0, |h| h.dst_port),
                    rate_bps: entry.rate_bps,
                    max_burst: entry.max_burst,
                    max_packet: entry.max_packet,
                    first_hop: entry.receiver_ip.is_some(),
                    last_hop: entry.receiver_mac.is_some(),
                    receiver_mac: entry.receiver_mac.map(|m| m.to_string()),
                    since_refresh_ns: held.map_or(0, |h| {
                        let age = now.saturating_duration_since(h.last_refresh);
                        u64::try_from(age.as_nanos()).unwrap_or(u64::MAX)
                    }),
                    frames_sent: counters.frames_sent,
                    bytes_sent: counters.bytes_sent,
                    frames_dropped: counters.frames_dropped,
                    queued: sched
                        .zip(entry.flow)
                        .and_then(|(s, flow)| s.rt_queued(flow))
                        .unwrap_or(0),
                    latency_ns: held.map_or(0, |h| h.latency_ns),
                    bound_ns: held.map_or(0, |h| h.bound_ns),
                    queue_bytes: held.map_or(0, |h| h.rt_bytes),
                    nonconforming: entry.nonconforming,
                }
            })
            .collect();
        list.sort_unstable_by_key(|c| (c.in_port, c.in_id));
        list
    }

    /// Real-time bookings, ids and FIFO admission per output port.
    pub fn rt_ports(&self) -> Vec<RtPortInfo> {
        (0..self.ports.len())
            .map(|index| {
                // Port counts fit u16: checked by `Switch::new`.
                let port = PortId(u16::try_from(index).unwrap_or(u16::MAX));
                let budget = self.rt.admission.port(port);
                RtPortInfo {
                    port: port.0,
                    booked_bps: budget.map_or(0, |b| b.booked_bps),
                    cap_bps: budget.map_or(0, |b| b.cap_bps()),
                    ids_in_use: self.ids_in_use(port),
                    rt_admitted_bytes: self.rt_admitted_bytes(port),
                }
            })
            .collect()
    }

    /// Each port's scheduler and preemptive-discard state at `now` (whether a port counts as
    /// host-facing depends on HELLOs heard).
    pub fn sched_ports(&self, now: crate::time::Instant) -> Vec<SchedPortInfo> {
        let hello = self.config.rt.hello_interval;
        self.ports
            .iter()
            .enumerate()
            .map(|(index, p)| {
                // Port counts fit u16: checked by `Switch::new`.
                let port = PortId(u16::try_from(index).unwrap_or(u16::MAX));
                SchedPortInfo {
                    port: port.0,
                    paced: p.sched.is_paced(),
                    line_rate_bps: p.line_rate_bps,
                    cycle_ns: u64::try_from(p.sched.cycle().as_nanos()).unwrap_or(u64::MAX),
                    connections: p.sched.connections().count(),
                    reserved_bps: p.sched.reserved_bps(),
                    sched: *p.sched.stats(),
                    metered: p.meter.is_some() && !self.rt.is_switch_facing(port, now, hello),
                    residual_bps: p.meter.as_ref().map(|m| m.residual_bps()),
                    meter: p.meter.as_ref().map(|m| *m.stats()),
                }
            })
            .collect()
    }

    /// Switch-wide admission use: backplane, connections (CPU), queue memory.
    pub fn admission_usage(&self) -> SwitchUsage {
        *self.rt.admission.usage()
    }

    /// Clears the internal ARP cache (EtheReal §3.4); returns how many entries it held. SETUPs
    /// to those receivers probe again.
    pub fn flush_arp_cache(&mut self) -> usize {
        self.pending.forget_all_probes();
        self.arp.clear()
    }

    /// Per-hop SETUP handling times recorded so far (the last [`SETUP_LATENCY_SAMPLES`] of each
    /// kind).
    pub fn setup_latency(&self) -> SetupLatency {
        self.rt.setup_times.report()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_keeps_the_last_samples_in_order() {
        let mut ring = LatencyRing::default();
        for v in 0..(SETUP_LATENCY_SAMPLES as u64 + 3) {
            ring.push(v);
        }
        let got = ring.ordered();
        assert_eq!(got.len(), SETUP_LATENCY_SAMPLES);
        assert_eq!(got[0], 3);
        assert_eq!(*got.last().unwrap(), SETUP_LATENCY_SAMPLES as u64 + 2);
        assert!(got.windows(2).all(|w| w[0] + 1 == w[1]));
    }
}
