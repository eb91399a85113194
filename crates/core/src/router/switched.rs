//! The router's switched paths (QSR paper §3.1, §3.2, §4.2; `docs/qsr.md` §2.1, §4): what the
//! RSVP engine's splices install, and the resources its reservations take.
//!
//! - **Label table**: (input port, input label) → output port, next hop, output label (swap) or
//!   none (pop: the last router restores plain IP), and the reservation's flow.
//! - **Ingress entries**: at the first router the RSVP classifier maps a sender's 5-tuple to an
//!   entry that pushes the first label (or, on a one-router path, sends plain IP) onto the
//!   reservation's flow, after a policer at the sender's TSpec: excess is forwarded as default
//!   IP (§3.1: "excess … detected when entering the network and forwarded as default IP").
//! - **Resources** ([`RouterResources`], the engine's [`Resources`]): a reservation becomes a
//!   flow on the output port's timing wheel — Guaranteed at rate R with bucket M, Controlled-Load
//!   at its TSpec rate r on the port's WF²Q+ (the QSR port, `egress::qsr`) — admitted only if the
//!   port's reservations stay below the line rate minus the default-IP floor and the control
//!   rate, a Guaranteed flow's 2M of buffer fits the port's Guaranteed pool, and with a new
//!   Controlled-Load flow the Gaussian estimate of overflowing the CL buffer stays below ε.

use std::collections::HashMap;
use std::net::Ipv4Addr;

use rtlan_wire::rsvp::{ErrorCode, Flowspec, TokenBucket as Tspec};

use super::classify::FlowKey;
use super::fib::Fib;
use crate::egress::admission::cl_buffer_admits;
use crate::egress::bucket::TokenBucket;
use crate::egress::{FlowHandle, FlowSpec, PortScheduler, Service};
use crate::rsvp::{HopTerms, Refusal, Resources, ResvId, ResvRequest, RouteTo, Routing};
use crate::time::Instant;
use crate::PortId;

/// Wire bytes a frame costs beyond its IP packet on a labelled link: Ethernet header 14, MPLS
/// entry 4, FCS 4, preamble and start delimiter 8, inter-frame gap 12.
pub const LABELLED_OVERHEAD: u64 = 42;

/// Ethernet header and one MPLS entry: what a labelled frame adds to its IP packet in memory.
const LABELLED_FRAME_HEADERS: usize = 14 + rtlan_wire::mpls::ENTRY_LEN;

/// A label-table entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LabelEntry {
    pub(crate) out_port: PortId,
    pub(crate) next_hop: Ipv4Addr,
    pub(crate) out_label: Option<u32>,
    pub(crate) resv: ResvId,
    /// Pop and route: the last router of a provisioned pipe (QSR §5) pops the label and looks
    /// the packet's destination up, since a pipe ends at a subnet rather than at one receiver;
    /// `next_hop` is then unused.
    pub(crate) route_on_pop: bool,
}

/// An ingress entry of the first router.
#[derive(Debug, Clone)]
pub(crate) struct Ingress {
    pub(crate) out_port: PortId,
    pub(crate) next_hop: Ipv4Addr,
    pub(crate) out_label: Option<u32>,
    pub(crate) resv: ResvId,
    /// The sender's TSpec as a bucket in IP bits (packets under m count as m).
    pub(crate) policer: TokenBucket,
    pub(crate) min_policed_unit: u64,
    pub(crate) max_packet: u64,
    /// What the entry switched and demoted.
    pub(crate) counters: super::pipes::PipeCounters,
}

impl Ingress {
    /// Whether a packet of `len` bytes conforms to the sender's TSpec at `now`; takes its
    /// tokens if so.
    pub(crate) fn police(&mut self, now: Instant, len: usize) -> bool {
        let len = len as u64;
        if len > self.max_packet {
            return false;
        }
        let bits = len.max(self.min_policed_unit) * 8;
        let t = now.as_nanos();
        if !self.policer.conforms(t, bits) {
            return false;
        }
        self.policer.take(t, bits);
        true
    }
}

/// A reservation's flow on an output port.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Booking {
    pub(crate) port: PortId,
    pub(crate) handle: FlowHandle,
    pub(crate) rate_bps: u64,
    pub(crate) gs_buffer: usize,
    /// A Controlled-Load flow's bucket depth, bytes (0 for Guaranteed).
    pub(crate) cl_depth: u64,
}

/// The switched state of a router.
#[derive(Debug, Default)]
pub(crate) struct Switched {
    pub(crate) labels: HashMap<(PortId, u32), LabelEntry>,
    pub(crate) ingress: HashMap<u32, Ingress>,
    /// (reservation, sender address, sender port) → (ingress id, its classifier key).
    pub(crate) ingress_of: HashMap<(ResvId, Ipv4Addr, u16), (u32, FlowKey)>,
    pub(crate) next_ingress: u32,
    pub(crate) bookings: HashMap<ResvId, Booking>,
    /// Per port: reserved wire bit/s and Guaranteed buffer in use.
    pub(crate) reserved_bps: Vec<u64>,
    pub(crate) gs_buffer_used: Vec<usize>,
    /// Per port: bit/s never reservable (the default-IP floor).
    pub(crate) floor_bps: Vec<u64>,
    /// Guaranteed buffer per port, bytes.
    pub(crate) gs_buffer_bytes: usize,
    /// Controlled-Load buffer per port, bytes, and the overflow probability admitted.
    pub(crate) cl_buffer_bytes: usize,
    pub(crate) cl_epsilon: f64,
    /// Per port: what it adds to a path's ADSPEC.
    pub(crate) terms: Vec<HopTerms>,
    /// The lateness budget, ns: every flow's queue holds two of it at the flow's rate.
    pub(crate) lateness_ns: u64,
}

/// The sender's TSpec as an ingress policer.
pub(crate) fn policer(tspec: &Tspec) -> (TokenBucket, u64, u64) {
    let rate = f64::from(tspec.rate.to_f32());
    let size = f64::from(tspec.size.to_f32());
    let rate_bps = if rate.is_finite() && rate > 0.0 {
        (rate * 8.0).ceil() as u64
    } else {
        0
    };
    let depth_bits = if size.is_finite() && size > 0.0 {
        (size * 8.0).ceil() as u64
    } else {
        0
    };
    let max_packet = u64::from(tspec.max_packet_size.max(1));
    // A bucket shallower than one packet would refuse every packet.
    let depth_bits = depth_bits.max(max_packet * 8);
    (
        TokenBucket::new(rate_bps, depth_bits),
        u64::from(tspec.min_policed_unit),
        max_packet,
    )
}

/// The flow's wire rate for a reservation of `rate` IP bytes/s whose packets are at least
/// `min_unit` bytes: every packet costs [`LABELLED_OVERHEAD`] more on the wire, and the
/// smallest packets the TSpec allows cost the most per byte (RFC 2212: packets under m count as
/// m).
pub fn wire_rate_bps(rate: f32, min_unit: u32) -> Option<u64> {
    let rate = f64::from(rate);
    if !rate.is_finite() || rate <= 0.0 {
        return None;
    }
    let m = f64::from(min_unit.max(64));
    let bps = rate * 8.0 * (m + LABELLED_OVERHEAD as f64) / m;
    (bps < u64::MAX as f64).then(|| bps.ceil() as u64)
}

/// The router's routing as the RSVP engine sees it.
pub(crate) struct FibRouting<'a> {
    pub(crate) fib: &'a Fib,
    pub(crate) up: &'a [bool],
}

impl Routing for FibRouting<'_> {
    fn route(&self, dst: Ipv4Addr) -> Option<RouteTo> {
        let hop = self.fib.next_hop(dst)?;
        // A route out of a port whose carrier is down is no route for a reservation.
        if !self
            .up
            .get(usize::from(hop.port.0))
            .copied()
            .unwrap_or(false)
        {
            return None;
        }
        Some(RouteTo {
            port: hop.port,
            gateway: hop.gateway,
        })
    }

    /// A provisioned pipe's session ends at the router its destination subnet is attached to
    /// (QSR §5; `super::pipes`).
    fn proxies(&self, session: &rtlan_wire::rsvp::Session) -> bool {
        super::pipes::is_pipe_session(session)
            && self
                .fib
                .lookup(session.dst_addr)
                .is_some_and(|(_, r)| r.source == super::fib::RouteSource::Connected)
    }
}

/// The router's output ports as the RSVP engine's [`Resources`].
pub(crate) struct RouterResources<'a> {
    pub(crate) scheds: Vec<&'a mut PortScheduler>,
    pub(crate) switched: &'a mut Switched,
}

impl Resources for RouterResources<'_> {
    fn reserve(
        &mut self,
        port: PortId,
        id: ResvId,
        request: &ResvRequest<'_>,
    ) -> Result<(), Refusal> {
        let index = usize::from(port.0);
        let bandwidth = Refusal {
            code: ErrorCode::AdmissionControlFailure,
            value: 2,
        };
        let buffer = Refusal {
            code: ErrorCode::AdmissionControlFailure,
            value: 3,
        };
        let Some(sched) = self.scheds.get_mut(index) else {
            return Err(Refusal {
                code: ErrorCode::TrafficControlSystemError,
                value: 0,
            });
        };
        let tspec = request.flowspec.tspec();
        let (rate, guaranteed) = match request.flowspec {
            Flowspec::Guaranteed { rspec, .. } => (rspec.rate.to_f32(), true),
            Flowspec::ControlledLoad { tspec } => (tspec.rate.to_f32(), false),
        };
        let rate_bps = wire_rate_bps(rate, tspec.min_policed_unit).ok_or(bandwidth)?;
        // The flow's frames: its largest IP packet with an Ethernet header and a label.
        let max_packet = usize::try_from(tspec.max_packet_size)
            .unwrap_or(usize::MAX)
            .saturating_add(LABELLED_FRAME_HEADERS)
            .clamp(60, sched.max_frame());
        // QSR §3.1: bucket M (reshaping at R) and 2M of buffer from the Guaranteed pool — plus
        // the sender's bucket b: the first router takes the sender's conforming bursts whole,
        // and in software a burst re-forms downstream whenever a router wakes up late (the
        // paper's hardware wheel never did), so every hop keeps room for b + 2M.
        let sender_burst = f64::from(tspec.size.to_f32());
        let sender_burst = if sender_burst.is_finite() && sender_burst > 0.0 {
            (sender_burst.ceil() as usize).min(1 << 24)
        } else {
            0
        };
        // What arrives at the flow's rate while the router wakes late, twice (a late receive
        // brings it in one batch, a late send holds it back): `RsvpSettings::lateness_budget`.
        let late_bytes = (u128::from(rate_bps) * u128::from(self.switched.lateness_ns) * 2
            / 8_000_000_000)
            .min(1 << 24) as usize;
        let gs_buffer = if guaranteed {
            sender_burst + 2 * max_packet + late_bytes
        } else {
            0
        };
        let old = self.switched.bookings.get(&id).copied();
        let (old_rate, old_buffer) = old
            .filter(|b| b.port == port)
            .map_or((0, 0), |b| (b.rate_bps, b.gs_buffer));
        let reserved = self.switched.reserved_bps[index] - old_rate;
        let limit = sched
            .line_rate_bps()
            .saturating_sub(self.switched.floor_bps[index])
            .saturating_sub(sched.control_rate_bps());
        if reserved.saturating_add(rate_bps) > limit {
            return Err(bandwidth);
        }
        let buffer_used = self.switched.gs_buffer_used[index] - old_buffer;
        if buffer_used + gs_buffer > self.switched.gs_buffer_bytes {
            return Err(buffer);
        }
        let bucket = f64::from(tspec.size.to_f32());
        let cl_depth = if guaranteed || !bucket.is_finite() || bucket < 0.0 {
            0
        } else {
            (bucket.ceil() as u64).max(max_packet as u64) + late_bytes as u64
        };
        if !guaranteed {
            // QSR §3.1: the Controlled-Load flows' buckets against the CL buffer, Gaussian.
            let mut depths: Vec<u64> = self
                .switched
                .bookings
                .iter()
                .filter(|(other, b)| **other != id && b.port == port && b.cl_depth > 0)
                .map(|(_, b)| b.cl_depth)
                .collect();
            depths.push(cl_depth);
            let pool = self.switched.cl_buffer_bytes as u64;
            if !cl_buffer_admits(&depths, pool, self.switched.cl_epsilon).unwrap_or(false) {
                return Err(buffer);
            }
        }
        let spec = if guaranteed {
            // Bucket M: reshaped at R (QSR §3.1), b + 2M of queue (above).
            FlowSpec {
                rate_bps,
                max_burst: max_packet,
                max_packet,
                queue_bytes: gs_buffer.max(120),
                service: Service::Guaranteed,
            }
        } else {
            // The CL buffer's share: the bucket, one packet, and the lateness (in `cl_depth`).
            let burst = usize::try_from(cl_depth).unwrap_or(usize::MAX);
            FlowSpec {
                rate_bps,
                max_burst: burst.saturating_sub(late_bytes),
                max_packet,
                queue_bytes: burst.saturating_add(max_packet),
                service: Service::ControlledLoad,
            }
        };
        // A change replaces the flow: the old one goes first so its rate is free again.
        if let Some(b) = old {
            if let Some(s) = self.scheds.get_mut(usize::from(b.port.0)) {
                s.remove_flow(b.handle);
            }
            self.switched.reserved_bps[usize::from(b.port.0)] -= b.rate_bps;
            self.switched.gs_buffer_used[usize::from(b.port.0)] -= b.gs_buffer;
            self.switched.bookings.remove(&id);
        }
        let sched = &mut self.scheds[index];
        let handle = match sched.add_flow(spec) {
            Ok(h) => h,
            Err(_) => {
                // Put the old flow back as it was, if there was one.
                if let Some(b) = old {
                    let back = FlowSpec {
                        rate_bps: b.rate_bps,
                        ..spec
                    };
                    if let Ok(h) = self.scheds[usize::from(b.port.0)].add_flow(back) {
                        self.book(id, Booking { handle: h, ..b });
                    }
                }
                return Err(bandwidth);
            }
        };
        self.book(
            id,
            Booking {
                port,
                handle,
                rate_bps,
                gs_buffer,
                cl_depth,
            },
        );
        Ok(())
    }

    fn release(&mut self, port: PortId, id: ResvId) {
        let Some(b) = self.switched.bookings.remove(&id) else {
            return;
        };
        debug_assert_eq!(b.port, port);
        let index = usize::from(b.port.0);
        if let Some(s) = self.scheds.get_mut(index) {
            s.remove_flow(b.handle);
        }
        self.switched.reserved_bps[index] -= b.rate_bps;
        self.switched.gs_buffer_used[index] -= b.gs_buffer;
    }

    fn hop_terms(&self, port: PortId) -> Option<HopTerms> {
        self.switched.terms.get(usize::from(port.0)).copied()
    }
}

impl RouterResources<'_> {
    fn book(&mut self, id: ResvId, b: Booking) {
        let index = usize::from(b.port.0);
        self.switched.reserved_bps[index] += b.rate_bps;
        self.switched.gs_buffer_used[index] += b.gs_buffer;
        self.switched.bookings.insert(id, b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wire_rate_covers_the_smallest_packets_overhead() {
        // 125,000 B/s of 64-byte packets: 1 Mbit/s × (64 + 42) / 64.
        assert_eq!(wire_rate_bps(125_000.0, 64), Some(1_656_250));
        // m below 64 counts as 64 (Ethernet's minimum).
        assert_eq!(wire_rate_bps(125_000.0, 20), Some(1_656_250));
        assert_eq!(wire_rate_bps(125_000.0, 1458), Some(1_028_807));
        assert_eq!(wire_rate_bps(0.0, 64), None);
        assert_eq!(wire_rate_bps(f32::INFINITY, 64), None);
    }
}
