//! What happens to a received frame: EtheReal §3.3's destination classes and §3.4's backward
//! learning, ARP snooping and ARP probing for unknown destinations.
//!
//! Real-time classes first (EtheReal §3.3): after the broadcast test, a destination under the
//! proxy-MAC plan is either a connection id (→ [`rt::forward_data`] → that connection's queue on
//! the output port's cyclic scheduler; an unknown id is dropped and counted, never flooded) or a
//! reserved control address (→ the control plane in `control`). Every other frame is
//! non-real-time: on a host-facing port it first passes the port's preemptive-discard meter
//! (EtheReal §3.3), which drops what exceeds the port's residual bandwidth.
//!
//! Order of work per frame: count it; reject malformed frames (shorter than an Ethernet header,
//! longer than [`MAX_FRAME_LEN`], truncated VLAN tags, multicast source); learn the source (which
//! may release frames held for it); snoop ARP; then classify the destination:
//! broadcast/multicast → flood; one of the switch's MACs → ARP consumed, anything else discarded;
//! a learnt station → its port's non-real-time queue; unknown → hold and probe (IPv4) or flood.

use std::net::Ipv4Addr;

use rtlan_wire::arp;
use rtlan_wire::ethernet::{Address, EtherType, Frame};
use rtlan_wire::ipv4;

use super::learning::{Learnt, Lookup};
use super::pending::HoldRefused;
use super::{rt, Port, PortId, PortStats, Switch, UnknownUnicast, MAX_FRAME_LEN};
use crate::egress::queue::MIN_CHARGE;
use crate::time::Instant;

/// Copies `frame` into `port`'s queue, counting the outcome.
pub(super) fn enqueue(port: &mut Port, stats: &mut PortStats, frame: &[u8], now: Instant) {
    if !port.forwarding {
        // Spanning tree: a port that is not Forwarding sends no data (docs/stp.md §6).
        stats.stp_blocked += 1;
    } else if port.sched.enqueue_nrt(now, frame) {
        stats.tx_queued += 1;
    } else {
        stats.drop_queue_full += 1;
    }
}

/// The destination IP of an IPv4 packet, if `payload` holds a valid IPv4 header.
fn ipv4_dst(payload: &[u8]) -> Option<Ipv4Addr> {
    ipv4::Packet::new_checked(payload)
        .ok()
        .map(|packet| packet.dst_addr())
}

/// Whether an ARP probe for `ip` could draw an answer from one host.
fn probeable(ip: Ipv4Addr) -> bool {
    !(ip.is_unspecified() || ip.is_broadcast() || ip.is_multicast())
}

impl Switch {
    /// Processes one frame received on `port`.
    pub fn handle_frame(&mut self, now: Instant, port: PortId, frame: &[u8]) {
        let ingress = usize::from(port.0);
        let Some(stats) = self.stats.ports.get_mut(ingress) else {
            self.stats.drop_bad_port += 1;
            return;
        };
        stats.rx_frames += 1;
        stats.rx_bytes += frame.len() as u64;
        if frame.len() > MAX_FRAME_LEN {
            self.stats.drop_malformed += 1;
            return;
        }
        let Ok(eth) = Frame::new_checked(frame) else {
            self.stats.drop_malformed += 1;
            return;
        };
        let src = eth.src_addr();
        if src.is_multicast() {
            self.stats.drop_malformed += 1;
            return;
        }
        let dst = eth.dst_addr();
        let ethertype = eth.inner_ethertype();
        // Control and ARP policing per input port (protect.rs), before any work.
        if !self.police_ingress(now, port, dst, ethertype) {
            return;
        }

        let learn = match self.stp_ingress(now, port, src, dst, frame) {
            super::stp::Ingress::Consumed => return,
            super::stp::Ingress::Pass { learn } => learn,
        };
        // A MAC bound to an address on another port does not move without a re-probe
        // (arp_guard.rs).
        let learnt = if learn {
            self.learn_source(now, port, src)
        } else {
            Learnt::Refreshed
        };
        match learnt {
            Learnt::Refreshed | Learnt::Own | Learnt::Refused => {}
            Learnt::Created | Learnt::Moved | Learnt::Full => {
                if learnt == Learnt::Full {
                    self.stats.fdb_full += 1;
                }
                if self.pending.len() > 0 {
                    self.release_pending(src, port, now);
                }
            }
        }

        let arp = if ethertype == EtherType::Arp {
            self.snoop_arp(now, port, eth.payload())
        } else {
            None
        };

        if self.rt.waits_for_route() {
            let ip = arp
                .as_ref()
                .map(|a| a.source_protocol_addr)
                .filter(|ip| !ip.is_unspecified());
            let mac = matches!(learnt, Learnt::Created | Learnt::Moved).then_some(src);
            if ip.is_some() || mac.is_some() {
                self.retry_routes(now, ip, mac);
            }
        }

        // Paper mode: the plan's prefix is ff:ff:ff:ff, so broadcast is tested first (§3.3).
        if dst != Address::BROADCAST && self.config.rt.plan.covers(&dst) {
            if self.config.rt.plan.connection_id(&dst).is_some() {
                self.rt_data(now, port, frame);
            } else {
                self.handle_control_frame(now, port, src, dst, ethertype, eth.payload());
            }
            return;
        }

        if !self.admit_nrt(now, port, frame.len()) {
            return;
        }

        if dst.is_multicast() {
            if let Some(request) = arp {
                if self.answer_mgmt_request(now, port, src, &request) {
                    self.stats.to_switch_arp += 1;
                    return;
                }
            }
            self.flood(now, port, frame);
            return;
        }

        match self.fdb.lookup(&dst, now) {
            Lookup::Port(out) if out == port => self.stats.drop_same_port += 1,
            Lookup::Port(out) => {
                let index = usize::from(out.0);
                // Learnt ports come from `handle_frame`'s checked `port`, so `index` is in range.
                if let (Some(out), Some(stats)) =
                    (self.ports.get_mut(index), self.stats.ports.get_mut(index))
                {
                    enqueue(out, stats, frame, now);
                }
                self.stats.forwarded += 1;
            }
            Lookup::Local => {
                // EtheReal §3.3: to the switch, only ARP goes up; everything else is discarded.
                if ethertype == EtherType::Arp {
                    if let Some(request) = arp {
                        self.answer_mgmt_request(now, port, src, &request);
                    }
                    self.stats.to_switch_arp += 1;
                } else {
                    self.stats.drop_to_switch += 1;
                }
            }
            Lookup::Unknown => {
                let probe_ip = match self.config.unknown_unicast {
                    UnknownUnicast::Flood => None,
                    UnknownUnicast::ArpProbe if ethertype == EtherType::Ipv4 => {
                        ipv4_dst(eth.payload()).filter(|ip| probeable(*ip))
                    }
                    UnknownUnicast::ArpProbe => None,
                };
                match probe_ip {
                    Some(ip) => self.hold_and_probe(now, port, dst, ip, frame),
                    None => self.flood(now, port, frame),
                }
            }
        }
    }

    /// Copies `frame` into every port's queue but `ingress`'s.
    fn flood(&mut self, now: Instant, ingress: PortId, frame: &[u8]) {
        let skip = usize::from(ingress.0);
        for (index, (out, stats)) in self
            .ports
            .iter_mut()
            .zip(self.stats.ports.iter_mut())
            .enumerate()
        {
            if index != skip {
                enqueue(out, stats, frame, now);
            }
        }
        self.stats.flooded += 1;
    }

    /// Hands frames held for `dst` to `port`, where `dst` was just learnt.
    fn release_pending(&mut self, dst: Address, port: PortId, now: Instant) {
        let Switch {
            ports,
            pending,
            stats,
            ..
        } = self;
        let index = usize::from(port.0);
        pending.release(dst, now, |frame, ingress, expired| {
            if expired {
                stats.drop_pending_timeout += 1;
            } else if ingress == port {
                stats.drop_same_port += 1;
            } else {
                if let (Some(out), Some(port_stats)) =
                    (ports.get_mut(index), stats.ports.get_mut(index))
                {
                    enqueue(out, port_stats, frame, now);
                }
                stats.forwarded += 1;
                stats.released += 1;
            }
        });
    }

    /// Holds `frame` (to the unknown `dst`, carrying an IPv4 packet for `ip`) and, unless a probe
    /// for `ip` is outstanding, probes for `ip` out of every port but `ingress` (EtheReal §3.4).
    fn hold_and_probe(
        &mut self,
        now: Instant,
        ingress: PortId,
        dst: Address,
        ip: Ipv4Addr,
        frame: &[u8],
    ) {
        let share = usize::from(self.port_limits(ingress, now).pending_share_percent);
        let limit = (self.pending.capacity() * share).div_ceil(100);
        match self.pending.hold(frame, dst, ingress, now, limit) {
            Ok(()) => self.stats.held += 1,
            Err(refused) => {
                self.stats.drop_pending_full += 1;
                if refused == HoldRefused::PortShare {
                    self.count_protect(ingress, |s| &mut s.pending_over_share);
                }
            }
        }
        self.probe(now, ingress, ip);
    }

    /// Preemptive discard (EtheReal §3.3): whether a non-real-time frame of `len` bytes arriving
    /// on `port` may go on. Only host-facing ports with at least one reservation entering are
    /// metered (elsewhere there is no real-time traffic to protect, and a fast unpaced port must
    /// not be clipped to its nominal rate); a refused frame is counted.
    fn admit_nrt(&mut self, now: Instant, port: PortId, len: usize) -> bool {
        let index = usize::from(port.0);
        let hello = self.config.rt.hello_interval;
        let reserved = self.rt.ingress_reserved.get(index).copied().unwrap_or(0);
        if reserved == 0
            || self.ports.get(index).is_none_or(|p| p.meter.is_none())
            || self.rt.is_switch_facing(port, now, hello)
        {
            return true;
        }
        let wire_bytes = usize::try_from(rtlan_wire::cost::wire_bytes(len)).unwrap_or(usize::MAX);
        let admitted = self
            .ports
            .get_mut(index)
            .and_then(|p| p.meter.as_mut())
            .is_none_or(|meter| meter.admit(now, wire_bytes));
        if !admitted {
            self.stats.drop_preemptive += 1;
            if let Some(stats) = self.stats.ports.get_mut(index) {
                stats.nrt_preemptive_drops += 1;
            }
        }
        admitted
    }

    /// A real-time data frame on `port`: rewritten by [`rt::forward_data`] and queued on its
    /// connection's queue at the output port's scheduler (its backlog bound; a full queue drops the
    /// frame, counted for the connection, the port and [`rt::RtStats::queue_drops`]).
    fn rt_data(&mut self, now: Instant, port: PortId, frame: &[u8]) {
        self.stats.rt_data += 1;
        let Switch {
            rt: state,
            ports,
            stats,
            config,
            ..
        } = self;
        // `handle_frame` refused frames longer than MAX_FRAME_LEN, the scratch buffer's length.
        let Some(buf) = state.scratch.get_mut(..frame.len()) else {
            return;
        };
        buf.copy_from_slice(frame);
        // First-hop policing: a frame beyond the connection's T-SPEC is dropped here, counted,
        // and never reaches a queue (docs/delay.md); later hops find no policer in the entry.
        // One that conforms within the reshape allowance is held until it does instead, while
        // the reshaping buffer has room for it.
        let allowance = if state.reshaper.has_room(frame.len()) {
            config.rt.reshape_allowance
        } else {
            std::time::Duration::ZERO
        };
        let Ok(admitted) = rt::forward_regulated(
            buf,
            port,
            &mut state.table,
            &config.rt.plan,
            (now, allowance, &mut stats.rt),
        ) else {
            return;
        };
        let entry = admitted.entry;
        if admitted.release > now {
            if let Some(flow) = entry.flow {
                state.reshaper.hold(
                    admitted.release,
                    (port, admitted.in_id, entry.request),
                    (entry.out_port, flow),
                    buf,
                );
                stats.rt.reshaped += 1;
            }
            return;
        }
        let index = usize::from(entry.out_port.0);
        if let (Some(flow), Some(out), Some(port_stats)) =
            (entry.flow, ports.get_mut(index), stats.ports.get_mut(index))
        {
            if out.sched.enqueue_flow(now, flow, buf) {
                port_stats.tx_queued += 1;
            } else {
                port_stats.rt_drop_queue_full += 1;
                stats.rt.queue_drops += 1;
            }
        }
    }

    /// Queues the held first-hop frames due at `now` on their connections' queues, each only if
    /// its connection is still the one it was held for (else counted as an orphan).
    pub(super) fn release_reshaped(&mut self, now: Instant) {
        let Switch {
            rt: state,
            ports,
            stats,
            ..
        } = self;
        while let Some(held) = state.reshaper.pop_due(now) {
            let current = state
                .table
                .lookup(held.in_port, held.in_id)
                .filter(|e| e.request == held.request && e.flow == Some(held.flow));
            let index = usize::from(held.out_port.0);
            match (current, ports.get_mut(index), stats.ports.get_mut(index)) {
                (Some(_), Some(out), Some(port_stats)) => {
                    if out.sched.enqueue_flow(now, held.flow, &held.frame) {
                        port_stats.tx_queued += 1;
                    } else {
                        port_stats.rt_drop_queue_full += 1;
                        stats.rt.queue_drops += 1;
                    }
                }
                _ => stats.rt.reshape_orphans += 1,
            }
        }
    }

    /// Unless a probe for `ip` is outstanding, probes for `ip` out of every port but `ingress`
    /// (EtheReal §3.4: ARP request with sender IP 0.0.0.0).
    pub(super) fn probe(&mut self, now: Instant, ingress: PortId, ip: Ipv4Addr) {
        if self.pending.probe_outstanding(ip, now) || !self.police_probe(now, ingress) {
            return;
        }
        self.pending.record_probe(ip, now);
        self.stats.arp_probes_sent += 1;
        let skip = usize::from(ingress.0);
        let mut buf = [0u8; MIN_CHARGE];
        for (index, ((out, stats), config)) in self
            .ports
            .iter_mut()
            .zip(self.stats.ports.iter_mut())
            .zip(&self.config.ports)
            .enumerate()
        {
            if index == skip {
                continue;
            }
            let probe = arp::Repr {
                operation: arp::Operation::Request,
                source_hardware_addr: config.mac,
                source_protocol_addr: Ipv4Addr::UNSPECIFIED,
                target_hardware_addr: Address([0; 6]),
                target_protocol_addr: ip,
            };
            if let Some(frame) = emit_padded(&probe, config.mac, Address::BROADCAST, &mut buf) {
                enqueue(out, stats, frame, now);
            }
        }
    }

    /// Parses the ARP packet in `payload` (received on `port`) and records its sender in the
    /// internal ARP cache (EtheReal §3.4) unless the sender IP is 0.0.0.0 or the binding may not
    /// move there (arp_guard.rs). Returns the packet if it parsed.
    fn snoop_arp(&mut self, now: Instant, port: PortId, payload: &[u8]) -> Option<arp::Repr> {
        let packet = arp::Packet::new_checked(payload).ok()?;
        let repr = arp::Repr::parse(&packet).ok()?;
        let sender = repr.source_hardware_addr;
        if !repr.source_protocol_addr.is_unspecified() && sender.is_unicast() {
            // Heard from: a probe for this address is answered, so a later cache miss (after
            // ageing or a flush) may probe again at once.
            self.pending.forget_probe(repr.source_protocol_addr);
            if !self.bind_arp(now, port, repr.source_protocol_addr, sender) {
                self.stats.arp_cache_full += 1;
            }
        }
        Some(repr)
    }

    /// If `request` asks for the management IP, queues the switch's reply on `ingress` and returns
    /// `true`.
    fn answer_mgmt_request(
        &mut self,
        now: Instant,
        ingress: PortId,
        eth_src: Address,
        request: &arp::Repr,
    ) -> bool {
        let Some(mgmt_ip) = self.config.mgmt_ip else {
            return false;
        };
        if request.operation != arp::Operation::Request
            || request.target_protocol_addr != mgmt_ip
            || request.source_protocol_addr == mgmt_ip
        {
            return false;
        }
        let asker = if request.source_hardware_addr.is_unicast() {
            request.source_hardware_addr
        } else {
            eth_src
        };
        let reply = arp::Repr {
            operation: arp::Operation::Reply,
            source_hardware_addr: self.config.mac,
            source_protocol_addr: mgmt_ip,
            target_hardware_addr: asker,
            target_protocol_addr: request.source_protocol_addr,
        };
        let mut buf = [0u8; MIN_CHARGE];
        let index = usize::from(ingress.0);
        if let (Some(frame), Some(out), Some(stats)) = (
            emit_padded(&reply, self.config.mac, asker, &mut buf),
            self.ports.get_mut(index),
            self.stats.ports.get_mut(index),
        ) {
            enqueue(out, stats, frame, now);
        }
        self.stats.arp_replies_sent += 1;
        true
    }
}

/// Writes `repr` as an Ethernet frame from `src` to `dst`, zero-padded to the 60-byte minimum.
pub(super) fn emit_padded<'a>(
    repr: &arp::Repr,
    src: Address,
    dst: Address,
    buf: &'a mut [u8; MIN_CHARGE],
) -> Option<&'a [u8]> {
    buf.fill(0);
    // `buf` is 60 bytes, longer than an ARP frame (42), so this cannot fail.
    repr.emit_frame(src, dst, buf).ok()?;
    Some(&buf[..])
}
