//! What a switch reports about itself for operators (`docs/switch.md`, control socket): the
//! connection table in plain fields (EtheReal §3.3), per-port real-time bookings, per-hop SETUP
//! handling time (EtheReal §2.2/§3.4: a SETUP whose receiver is in the internal ARP cache is
//! answered or forwarded at once; one that needs an ARP query waits for the reply), and flushing
//! the internal ARP cache; per-connection and per-port scheduler counters (EtheReal §3.3).

use std::net::Ipv4Addr;

use super::rt::SwitchUsage;
use super::sched::{MeterStats, SchedStats};
use super::{PortId, Switch};

/// Samples each per-hop setup-latency ring keeps (the most recent ones).
pub const SETUP_LATENCY_SAMPLES: usize = 4096;

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

/// Per-hop SETUP handling times, oldest first, in nanoseconds: from the SETUP's arrival to the
/// moment this switch forwarded it downstream or answered it as the last hop.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct SetupLatency {
    /// SETUPs whose receiver was in the internal ARP cache (route known).
    pub hit_ns: Vec<u64>,
    /// SETUPs that needed an ARP query first.
    pub miss_ns: Vec<u64>,
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
        SetupLatency {
            hit_ns: self.rt.latency_hit.ordered(),
            miss_ns: self.rt.latency_miss.ordered(),
        }
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
