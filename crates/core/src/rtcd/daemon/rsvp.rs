//! RSVP signalling from the host (`signalling = "rsvp"`; QSR paper §3.2, §6: the hosts' RSVP
//! daemon; RFC 2205 §3; `docs/rsvp.md` §7): the sender's daemon sends Path for a client's open
//! and answers it when the receiver's Resv comes back; the receiver's daemon reserves for every
//! Path that reaches it. The frames of an open connection go plainly to the receiver's address
//! (a *direct* connection): the first router classifies them by 5-tuple.
//!
//! The host's RSVP engine ([`crate::rsvp::Rsvp`], the one the routers run) routes every message
//! on-link from the core's point of view: the shell hands it to the kernel as a raw IP packet,
//! and the kernel's routing finds the gateway.

use std::net::Ipv4Addr;

use rtlan_wire::control::TeardownReason;
use rtlan_wire::rsvp::{
    Adspec, F32Bits, FilterSpec, FlowDescriptors, Message, Packet, Repr, SenderDescriptor, Session,
    TokenBucket,
};

use super::Rtcd;
use crate::rsvp::{Event, NoResources, Output, Received, RouteTo, Routing};
use crate::rtcd::api::{Action, ConnPhase, Reply};
use crate::rtcd::RtcdError;
use crate::time::Instant;
use crate::PortId;

/// The host's routing as its engine sees it: one port; the kernel picks the gateway.
struct KernelRouted;

impl Routing for KernelRouted {
    fn route(&self, _dst: Ipv4Addr) -> Option<RouteTo> {
        Some(RouteTo {
            port: PortId(0),
            gateway: None,
        })
    }
}

/// Bytes an Ethernet frame adds to its IP packet (header 14, FCS 4) and the wire adds to the
/// frame (preamble 8, gap 12): what separates the daemon's wire rates from RSVP's IP rates.
const FRAME_OVERHEAD: u64 = 14;
const WIRE_OVERHEAD: u64 = 38;

impl Rtcd {
    /// The RSVP session and sender of a connection's SETUP fields.
    fn rsvp_ids(
        dst_ip: Ipv4Addr,
        dst_port: u16,
        src: Ipv4Addr,
        src_port: u16,
    ) -> (Session, FilterSpec) {
        (
            Session {
                dst_addr: dst_ip,
                protocol_id: 17,
                flags: 0,
                dst_port,
            },
            FilterSpec {
                src_addr: src,
                src_port,
            },
        )
    }

    /// The RSVP engine's counters, `None` without RSVP signalling.
    pub fn rsvp_stats(&self) -> Option<crate::rsvp::RsvpStats> {
        self.rsvp.as_ref().map(crate::rsvp::Rsvp::stats)
    }

    /// Sends the Path of connection `id` (its open waits for the receiver's Resv, at most
    /// [`crate::rtcd::RSVP_OPEN_TIMEOUT`]).
    pub(super) fn open_rsvp(&mut self, now: Instant, id: u16) {
        let Some(conn) = self.conns.get(&id) else {
            return;
        };
        let setup = conn.setup;
        let (session, sender) = Self::rsvp_ids(
            setup.dst_ip,
            setup.dst_port,
            self.config.host_ip,
            setup.src_port,
        );
        // The daemon's rate counts whole frames on the wire; RSVP's TSpec counts IP bytes: the
        // IP share of a wire rate is largest for the largest packets.
        let max_ip = u64::from(setup.max_packet)
            .saturating_sub(FRAME_OVERHEAD)
            .max(1);
        let ip_rate = setup.rate as f64 / 8.0 * max_ip as f64 / (max_ip + WIRE_OVERHEAD) as f64;
        let tspec = TokenBucket {
            rate: F32Bits::from_f32(ip_rate as f32),
            size: F32Bits::from_f32(setup.max_burst as f32),
            peak: F32Bits::from_f32(f32::INFINITY),
            min_policed_unit: 64,
            max_packet_size: max_ip as u32,
        };
        let descriptor = SenderDescriptor {
            sender_template: sender,
            sender_tspec: tspec,
            adspec: Some(Adspec::sender_initial(1500)),
        };
        if let Some(engine) = self.rsvp.as_mut() {
            engine.open_sender(now, session, descriptor, &KernelRouted, &mut NoResources);
        }
        self.set_deadline(id, Some(now + crate::rtcd::RSVP_OPEN_TIMEOUT));
        self.drain_rsvp(now);
    }

    /// A connection goes: its Path is torn down. (Closing a local sender yields messages
    /// only, never an event, so no time is needed.)
    pub(super) fn close_rsvp(&mut self, dst_ip: Ipv4Addr, dst_port: u16, src_port: u16) {
        let (session, sender) = Self::rsvp_ids(dst_ip, dst_port, self.config.host_ip, src_port);
        if let Some(engine) = self.rsvp.as_mut() {
            engine.close_sender(session, sender, &mut NoResources);
        }
        self.drain_rsvp(Instant::ZERO);
    }

    /// An RSVP message (the payload of an IP packet of protocol 46 from `src`, received with
    /// TTL `ttl`); [`RtcdError::Malformed`] if it does not parse (nothing else happens).
    pub fn handle_rsvp(
        &mut self,
        now: Instant,
        src: Ipv4Addr,
        ttl: u8,
        payload: &[u8],
    ) -> Result<(), RtcdError> {
        let message = Packet::new_checked(payload)
            .and_then(|p| Repr::parse(&p))
            .and_then(|r| Message::from_repr(&r))
            .map_err(|_| RtcdError::Malformed("RSVP message does not parse"))?;
        let rx = Received {
            port: PortId(0),
            src,
            ttl,
        };
        if let Some(engine) = self.rsvp.as_mut() {
            engine.handle_message(now, rx, message, &KernelRouted, &mut NoResources);
        }
        self.drain_rsvp(now);
        Ok(())
    }

    /// Runs the engine's due timers.
    pub(super) fn rsvp_timeout(&mut self, now: Instant) {
        if let Some(engine) = self.rsvp.as_mut() {
            if engine.poll_timeout().is_some_and(|t| t <= now) {
                engine.handle_timeout(now, &mut NoResources);
            }
        }
        self.drain_rsvp(now);
    }

    /// An RSVP open that saw no reservation in time fails (and its Path is torn down).
    pub(super) fn rsvp_open_timed_out(&mut self, id: u16) {
        let Some(conn) = self.conns.get(&id) else {
            return;
        };
        if conn.phase != ConnPhase::Opening {
            self.set_deadline(id, None);
            return;
        }
        let error = RtcdError::Rsvp(format!(
            "no reservation from {} within {} s (is its daemon running with signalling = \"rsvp\", and every router on the way an RSVP router?)",
            conn.setup.dst_ip,
            crate::rtcd::RSVP_OPEN_TIMEOUT.as_secs()
        ));
        if let Some(conn) = self.release(id) {
            let reply = Reply::Failed {
                conn: Some(conn.handle),
                error,
            };
            self.reply(conn.client, conn.open_tag, reply);
        }
    }

    /// Carries out what the engine asks.
    fn drain_rsvp(&mut self, now: Instant) {
        let mut outputs = Vec::new();
        if let Some(engine) = self.rsvp.as_mut() {
            while let Some(o) = engine.poll_output() {
                outputs.push(o);
            }
        }
        for o in outputs {
            match o {
                Output::Send(o) => {
                    if let Ok(message) = o.message.to_repr(o.ttl).to_bytes() {
                        self.actions.push_back(Action::SendRsvp {
                            dst: o.dst,
                            ttl: o.ttl,
                            router_alert: o.router_alert,
                            message,
                        });
                    }
                }
                Output::Event(e) => self.on_rsvp_event(now, e),
                Output::Splice(_) | Output::Unsplice(_) => {}
            }
        }
    }

    fn on_rsvp_event(&mut self, now: Instant, event: Event) {
        match event {
            Event::PathArrived { session, sender } if self.config.rsvp_accept => {
                let flowspec = self.config.rsvp_service.flowspec(sender.sender_tspec);
                let descriptors =
                    FlowDescriptors::FixedFilter(vec![(flowspec, sender.sender_template)]);
                if let Some(engine) = self.rsvp.as_mut() {
                    engine.reserve(now, session, descriptors, false, &mut NoResources);
                }
                self.drain_rsvp(now);
            }
            Event::Reserved {
                session, sender, ..
            } => {
                let Some(id) = self.rsvp_conn(&session, &sender) else {
                    return;
                };
                let Some(conn) = self.conns.get_mut(&id) else {
                    return;
                };
                match conn.phase {
                    ConnPhase::Opening => {
                        conn.phase = ConnPhase::Open;
                        self.set_deadline(id, None);
                        self.publish(id, 0);
                    }
                    ConnPhase::Open if conn.recovering.take().is_some() => {
                        let (client, handle) = (conn.client, conn.handle);
                        let reply = Reply::Recovered {
                            conn: handle,
                            hops: 0,
                            delay_bound_us: None,
                        };
                        self.reply(client, 0, reply);
                    }
                    _ => {}
                }
            }
            Event::ReservationGone { session, sender } => {
                let Some(id) = self.rsvp_conn(&session, &sender) else {
                    return;
                };
                let Some(conn) = self.conns.get_mut(&id) else {
                    return;
                };
                if conn.phase == ConnPhase::Open && conn.recovering.is_none() {
                    // The Path stays: a new Resv (the path re-routed, the receiver back)
                    // recovers it.
                    conn.recovering = Some(TeardownReason::StateLost);
                    let (client, handle) = (conn.client, conn.handle);
                    let reply = Reply::Interrupted {
                        conn: handle,
                        reason: TeardownReason::StateLost,
                    };
                    self.reply(client, 0, reply);
                }
            }
            Event::PathError {
                session,
                sender,
                error,
            } => {
                let Some(id) = self.rsvp_conn(&session, &sender) else {
                    return;
                };
                if self
                    .conns
                    .get(&id)
                    .is_some_and(|c| c.phase == ConnPhase::Opening)
                {
                    let text = format!("PathErr {:?} from {}", error.code, error.node);
                    if let Some(conn) = self.release(id) {
                        let reply = Reply::Failed {
                            conn: Some(conn.handle),
                            error: RtcdError::Rsvp(text),
                        };
                        self.reply(conn.client, conn.open_tag, reply);
                    }
                }
            }
            Event::PathArrived { .. }
            | Event::PathGone { .. }
            | Event::ResvError { .. }
            | Event::Confirmed { .. } => {}
        }
    }

    /// The RSVP connection of `sender` in `session`.
    fn rsvp_conn(&self, session: &Session, sender: &FilterSpec) -> Option<u16> {
        self.conns
            .iter()
            .find(|(_, c)| {
                c.rsvp
                    && c.setup.dst_ip == session.dst_addr
                    && c.setup.dst_port == session.dst_port
                    && c.setup.src_port == sender.src_port
            })
            .map(|(&id, _)| id)
    }
}
