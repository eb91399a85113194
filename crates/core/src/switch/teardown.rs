//! Releasing real-time connections (EtheReal §2.2 teardown, §3.3; `docs/protocol.md` §5):
//! TEARDOWN from upstream (released, forwarded downstream — after the connection's queued frames
//! when its sender closed it) or from downstream (released, passed upstream towards the sending
//! host), TEARDOWNs this switch sends retransmitted with the SETUP
//! backoff until TEARDOWN_ACK, and REFRESH soft state: a connection that sees no REFRESH for
//! `refresh_timeout` is released here and torn down both ways.
//!
//! Duplicates are idempotent: a TEARDOWN for a connection already gone is acknowledged again
//! and releases nothing.

use std::time::Duration;

use rtlan_wire::control::{Message, Repr, TeardownReason, FLAG_RETRANSMISSION};

use super::rt::RtEntry;
use super::signal::{Draining, Held, TeardownOut};
use super::{PortId, Switch};
use crate::time::Instant;

impl Switch {
    /// TEARDOWN `id` on `port`. From upstream (the connection arrives on `port` with `id`):
    /// remove, release, forward downstream. From downstream (the connection leaves by `port`
    /// with `id`; the header hop is above this switch's): remove, release, pass upstream.
    /// Acknowledged on `port` in every case, also when nothing was there.
    pub(super) fn on_teardown(&mut self, now: Instant, port: PortId, repr: &Repr, id: u16) {
        self.stats.signal.teardown_rx += 1;
        // The reason goes on with the TEARDOWN; a sender that gave none closed the connection
        // (from upstream) or let it expire (from downstream, the only cause before reasons).
        let reason = repr.reason().ok().flatten();
        let from_upstream = self.rt.table.lookup(port, id).is_some()
            && self
                .rt
                .held
                .get(&(port, id))
                .is_none_or(|held| repr.hop < held.hop);
        if from_upstream {
            if let Some(entry) = self.rt.table.remove(port, id) {
                match reason.unwrap_or(TeardownReason::Closed) {
                    TeardownReason::Closed => self.close_connection(now, (port, id), entry),
                    reason => self.release_connection(now, (port, id), entry, true, false, reason),
                }
            }
        } else if let Some(key) = self.downstream_match(port, id, repr.hop) {
            if let Some(entry) = self.rt.table.remove(key.0, key.1) {
                let reason = reason.unwrap_or(TeardownReason::Expired);
                self.release_connection(now, key, entry, false, true, reason);
            }
        }
        let ack = Message::TeardownAck { connection_id: id };
        let hop = repr.hop.saturating_add(1);
        self.send_control(now, port, &Repr::new(hop, repr.request_id, ack));
    }

    /// The (input port, input id) of the connection that leaves by `port` with `id` towards a
    /// switch further down the path than a message with header hop `hop` came from.
    pub(super) fn downstream_match(&self, port: PortId, id: u16, hop: u8) -> Option<(PortId, u16)> {
        self.rt
            .table
            .iter()
            .find(|(key, entry)| {
                entry.out_port == port
                    && entry.out_id == id
                    && entry.receiver_mac.is_none()
                    && self.rt.held.get(key).is_some_and(|held| hop > held.hop)
            })
            .map(|(key, _)| key)
    }

    /// Its sender closed connection `key` (already removed from the table). Frames of it still
    /// queued here go out first, at its reserved rate: it keeps its booking, output id and queue
    /// until the queue is empty, and only then is it released and the TEARDOWN sent on
    /// downstream, behind its last frame on the link. Releasing at once would drop the stream's
    /// tail — up to this hop's backlog bound — and the TEARDOWN, sent from the control FIFO ahead
    /// of reserved frames, would make every switch further down drop it too. A queue that has
    /// not emptied within twice this hop's latency θ (at least two cycles: only late wake-ups
    /// make it so) is dropped then.
    fn close_connection(&mut self, now: Instant, key: (PortId, u16), entry: RtEntry) {
        let (queued, link_down) = self.drain_state(&entry);
        let held = match self.rt.held.remove(&key) {
            Some(held) if queued && !link_down => held,
            held => {
                return self.release_entry(
                    now,
                    key,
                    entry,
                    held,
                    true,
                    false,
                    TeardownReason::Closed,
                )
            }
        };
        self.stats.signal.close_drained += 1;
        self.rt.answers.remove(&entry.request);
        let limit = Duration::from_nanos(held.latency_ns).max(self.config.cycle_time) * 2;
        self.rt.draining.push(Draining {
            key,
            entry,
            held,
            deadline: now + limit,
        });
    }

    /// Whether connection `entry` still has frames queued on its output port, and whether that
    /// port's link is down.
    fn drain_state(&self, entry: &RtEntry) -> (bool, bool) {
        let out = usize::from(entry.out_port.0);
        let queued = match (self.ports.get(out), entry.flow) {
            (Some(port), Some(flow)) => port.sched.flow_queued(flow).unwrap_or(0),
            _ => 0,
        };
        (
            queued > 0,
            self.rt.link_down.get(out).copied().unwrap_or(true),
        )
    }

    /// Releases the closed connections whose queues are empty, whose output link went down or
    /// whose drain deadline passed (what is still queued is dropped, counted by the scheduler).
    pub(super) fn finish_drained(&mut self, now: Instant) {
        let mut index = 0;
        while let Some(d) = self.rt.draining.get(index) {
            let (queued, link_down) = self.drain_state(&d.entry);
            if queued && !link_down && now < d.deadline {
                index += 1;
                continue;
            }
            let d = self.rt.draining.swap_remove(index);
            if queued {
                self.stats.signal.close_drain_expired += 1;
            }
            let reason = TeardownReason::Closed;
            self.release_entry(now, d.key, d.entry, Some(d.held), true, false, reason);
        }
    }

    /// Releases what connection `key` (already removed from the table) holds and sends
    /// TEARDOWN downstream (`down`, unless this is the last switch) and upstream (`up`), both
    /// carrying `reason`.
    pub(super) fn release_connection(
        &mut self,
        now: Instant,
        key: (PortId, u16),
        entry: RtEntry,
        down: bool,
        up: bool,
        reason: TeardownReason,
    ) {
        let held = self.rt.held.remove(&key);
        self.release_entry(now, key, entry, held, down, up, reason);
    }

    /// [`Switch::release_connection`] with what the connection held already taken out.
    #[allow(clippy::too_many_arguments)] // the connection, what it held, and where to tell
    fn release_entry(
        &mut self,
        now: Instant,
        key: (PortId, u16),
        entry: RtEntry,
        held: Option<Held>,
        down: bool,
        up: bool,
        reason: TeardownReason,
    ) {
        self.stats.signal.teardowns += 1;
        self.rt.answers.remove(&entry.request);
        let downstream = entry.receiver_mac.is_none();
        let mut hop = 0;
        if let (Some(port), Some(flow)) = (
            self.ports.get_mut(usize::from(entry.out_port.0)),
            entry.flow,
        ) {
            // Frames still queued are dropped and counted in the scheduler's stats.
            port.sched.remove_flow(flow);
        }
        if let Some(held) = held {
            hop = held.hop;
            self.adjust_ingress(key.0, held.booking.wire_rate_bps, false);
            let out_id = downstream.then_some(entry.out_id);
            self.release_held(entry.out_port, out_id, held.booking, held.rt_bytes);
        }
        if down && downstream {
            self.send_teardown(now, entry.out_port, entry.out_id, hop, reason);
        }
        if up {
            self.send_teardown(now, key.0, key.1, hop, reason);
        }
    }

    /// Sends TEARDOWN `connection_id` on `port` and keeps it for retransmission until
    /// TEARDOWN_ACK. At most `2 × max_connections` are tracked; beyond that the oldest is given
    /// up (counted).
    pub(super) fn send_teardown(
        &mut self,
        now: Instant,
        port: PortId,
        connection_id: u16,
        hop: u8,
        reason: TeardownReason,
    ) {
        let request_id = self.rt.request_id();
        let mut repr = Repr::new(hop, request_id, Message::Teardown { connection_id });
        repr.set_tlv(reason.to_tlv());
        self.stats.signal.teardown_tx += 1;
        self.send_control(now, port, &repr);
        if self.rt.teardowns.len() >= self.config.rt.max_connections.saturating_mul(2) {
            self.rt.teardowns.remove(0);
            self.stats.signal.teardown_given_up += 1;
        }
        self.rt.teardowns.push(TeardownOut {
            port,
            connection_id,
            request_id,
            hop,
            reason,
            attempts: 1,
            next_retransmit: now + self.config.rt.retransmit_initial,
        });
    }

    /// TEARDOWN_ACK on `port`: the matching TEARDOWN is done.
    pub(super) fn on_teardown_ack(&mut self, port: PortId, repr: &Repr) {
        let position = self
            .rt
            .teardowns
            .iter()
            .position(|t| t.port == port && t.request_id == repr.request_id);
        match position {
            Some(index) => {
                self.rt.teardowns.remove(index);
            }
            None => self.stats.signal.unmatched += 1,
        }
    }

    /// Retransmits due TEARDOWNs (backoff doubling from `retransmit_initial`), giving up after
    /// `max_attempts` transmissions.
    pub(super) fn teardown_timeout(&mut self, now: Instant) {
        let mut index = 0;
        while index < self.rt.teardowns.len() {
            let out = self.rt.teardowns[index];
            if out.next_retransmit > now {
                index += 1;
                continue;
            }
            if out.attempts >= self.config.rt.max_attempts {
                self.rt.teardowns.remove(index);
                self.stats.signal.teardown_given_up += 1;
                continue;
            }
            let backoff = self.config.rt.retransmit_initial * (1u32 << out.attempts.min(16));
            if let Some(slot) = self.rt.teardowns.get_mut(index) {
                slot.attempts += 1;
                slot.next_retransmit = now + backoff;
            }
            let mut repr = Repr::new(
                out.hop,
                out.request_id,
                Message::Teardown {
                    connection_id: out.connection_id,
                },
            );
            repr.flags = FLAG_RETRANSMISSION;
            repr.set_tlv(out.reason.to_tlv());
            self.stats.signal.teardown_tx += 1;
            self.stats.signal.teardown_retransmits += 1;
            self.send_control(now, out.port, &repr);
            index += 1;
        }
    }

    /// REFRESH of the connection arriving on `port` with `id`: noted, answered and passed
    /// downstream when the connection exists; answered with TEARDOWN (STATE_LOST) when it does
    /// not, so the sender signals it again (RFC 2205 §3.7: state is rebuilt by the refresh).
    pub(super) fn on_refresh(&mut self, now: Instant, port: PortId, repr: &Repr, id: u16) {
        self.stats.signal.refresh_rx += 1;
        let Some(entry) = self.rt.table.lookup(port, id).copied() else {
            self.refresh_unknown(now, port, repr, id);
            return;
        };
        if let Some(held) = self.rt.held.get_mut(&(port, id)) {
            held.last_refresh = now;
        }
        let hop = repr.hop.saturating_add(1);
        if entry.receiver_mac.is_none() {
            let request_id = self.rt.request_id();
            let refresh = Message::Refresh {
                connection_id: entry.out_id,
            };
            self.send_control(now, entry.out_port, &Repr::new(hop, request_id, refresh));
        }
        let ack = Message::RefreshAck { connection_id: id };
        self.send_control(now, port, &Repr::new(hop, repr.request_id, ack));
    }

    /// Releases connections not refreshed for longer than `refresh_timeout` (0 = never) and
    /// tears them down both ways, in (input port, input id) order. Run from the ageing sweep, so
    /// expiry is up to [`super::AGEING_CHECK_INTERVAL`] late.
    pub(super) fn expire_unrefreshed(&mut self, now: Instant) {
        let timeout = self.config.rt.refresh_timeout;
        if timeout.is_zero() {
            return;
        }
        let stale: Vec<(PortId, u16)> = self
            .rt
            .held
            .iter()
            .filter(|(_, held)| now.saturating_duration_since(held.last_refresh) > timeout)
            .map(|(key, _)| *key)
            .collect();
        for key in stale {
            if let Some(entry) = self.rt.table.remove(key.0, key.1) {
                self.stats.signal.refresh_expired += 1;
                self.release_connection(now, key, entry, true, true, TeardownReason::Expired);
            }
        }
    }
}
