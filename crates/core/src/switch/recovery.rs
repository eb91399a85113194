//! Restart safety and soft-state recovery (`docs/protocol.md` §5 "Restarts"; RFC 2205 §3.7 soft
//! state; EtheReal §5 leaves fault tolerance as future work).
//!
//! Every control message carries its sender's boot epoch (EPOCH TLV). The switch remembers the
//! epoch of each neighbour (port, source MAC); a different one means the neighbour restarted
//! and lost every connection it held, so the switch releases at once, never waiting for the
//! refresh timeout:
//!
//! - the connections that entered from that neighbour (it was upstream): released here and
//!   torn down downstream, reason NEIGHBOUR_RESTARTED;
//! - if the neighbour is a switch, the connections that leave towards it: released here and
//!   torn down upstream with the same reason, which asks the sending host to signal them again;
//! - its SETUPs still in progress and its stored answers.
//!
//! A REFRESH for a connection the switch does not hold (it restarted itself, or released the
//! connection) is answered with one TEARDOWN, reason STATE_LOST, towards the sender: every
//! switch upstream releases what it booked and the host re-signals. The answer is one frame per
//! REFRESH and keeps no state, so forged REFRESHes buy an attacker nothing beyond their own rate.

use rtlan_wire::control::{Message, Repr, Role, TeardownReason};
use rtlan_wire::ethernet::Address;

use super::signal::{Wait, MAX_NEIGHBOURS_PER_PORT};
use super::{PortId, Switch};
use crate::time::Instant;

impl Switch {
    /// Records the boot epoch `repr` carries from neighbour `src` on `port`; a change means the
    /// neighbour restarted. Messages without an epoch (older senders) are not tracked.
    pub(super) fn note_epoch(&mut self, now: Instant, port: PortId, src: Address, repr: &Repr) {
        let Some(epoch) = repr.epoch().ok().flatten().map(|e| e.0) else {
            return;
        };
        let Some(table) = self.rt.neighbours.get_mut(usize::from(port.0)) else {
            return;
        };
        let room = table.len() < MAX_NEIGHBOURS_PER_PORT;
        let new = match table.get_mut(&src) {
            Some(known) if *known == epoch => false,
            Some(known) => {
                *known = epoch;
                self.neighbour_restarted(now, port, src, epoch);
                true
            }
            None if room => {
                table.insert(src, epoch);
                true
            }
            None => {
                self.stats.signal.neighbours_untracked += 1;
                false
            }
        };
        // A switch we had not heard in this epoch (it just started, or we did) learns at once
        // that this port faces a switch: before its first SETUP it must know it is not the last
        // hop. One HELLO per new neighbour epoch, so this cannot be used to make us flood.
        let from_switch = matches!(&repr.message, Message::Hello(h) if h.role == Role::Switch);
        if new && from_switch {
            self.send_hello_on(now, port);
        }
    }

    /// Neighbour `src` on `port` restarted with boot epoch `epoch`: release what it lost.
    fn neighbour_restarted(&mut self, now: Instant, port: PortId, src: Address, epoch: u64) {
        self.stats.signal.neighbour_restarts += 1;
        let reason = TeardownReason::NeighbourRestarted;
        let switch_facing = self
            .rt
            .switch_heard
            .get(usize::from(port.0))
            .is_some_and(Option::is_some);
        let mut from_it = Vec::new();
        let mut towards_it = Vec::new();
        for (key, entry) in self.rt.table.iter() {
            if key.0 == port && entry.request.src_mac == src && entry.request.epoch != epoch {
                from_it.push(key);
            } else if switch_facing && entry.out_port == port && entry.receiver_mac.is_none() {
                towards_it.push(key);
            }
        }
        for key in from_it {
            if let Some(entry) = self.rt.table.remove(key.0, key.1) {
                self.stats.signal.restart_released += 1;
                self.release_connection(now, key, entry, true, false, reason);
            }
        }
        for key in towards_it {
            if let Some(entry) = self.rt.table.remove(key.0, key.1) {
                self.stats.signal.restart_released += 1;
                self.release_connection(now, key, entry, false, true, reason);
            }
        }
        // Its SETUPs in progress will never be asked for again (their replies would go to a
        // requester that forgot them): release what they booked.
        for id in self.rt.in_progress.ids() {
            let Some(key) = self.rt.in_progress.get(id).map(|job| job.key) else {
                continue;
            };
            if key.in_port != port || key.src_mac != src || key.epoch == epoch {
                continue;
            }
            let Some(job) = self.rt.in_progress.remove(id) else {
                continue;
            };
            if let Wait::Downstream {
                out_port,
                out_id,
                booking,
                rt_bytes,
                ..
            } = job.wait
            {
                self.release_held(out_port, Some(out_id), booking, rt_bytes);
                // The next switch may install it before it hears: tell it.
                self.send_teardown(now, out_port, out_id, job.hop, reason);
            }
        }
        self.rt
            .answers
            .retain(|key, _| key.in_port != port || key.src_mac != src || key.epoch == epoch);
    }

    /// A REFRESH on `port` for connection `id`, which this switch does not hold: one TEARDOWN
    /// (STATE_LOST) back, untracked, unless the connection is still being set up.
    pub(super) fn refresh_unknown(&mut self, now: Instant, port: PortId, repr: &Repr, id: u16) {
        let setting_up = self.rt.in_progress.in_id_taken(port, id);
        if setting_up {
            self.stats.signal.unmatched += 1;
            return;
        }
        self.stats.signal.refresh_unknown += 1;
        let request_id = self.rt.request_id();
        let hop = repr.hop.saturating_add(1);
        let mut teardown = Repr::new(hop, request_id, Message::Teardown { connection_id: id });
        teardown.set_tlv(TeardownReason::StateLost.to_tlv());
        self.stats.signal.teardown_tx += 1;
        self.send_control(now, port, &teardown);
    }

    /// A SETUP_OK on `port` that matches no SETUP in progress: if no installed connection
    /// leaves by `port` with its id either (its SETUP was given up, or its requester restarted),
    /// the next switch holds a connection nobody will use — one TEARDOWN tells it.
    pub(super) fn orphan_reply(&mut self, now: Instant, port: PortId, repr: &Repr) {
        let Message::SetupOk { connection_id, .. } = repr.message else {
            return;
        };
        let installed = self
            .rt
            .table
            .iter()
            .any(|(_, e)| e.out_port == port && e.out_id == connection_id);
        if installed {
            return;
        }
        let request_id = self.rt.request_id();
        let hop = repr.hop.saturating_sub(1);
        let mut teardown = Repr::new(hop, request_id, Message::Teardown { connection_id });
        teardown.set_tlv(TeardownReason::Closed.to_tlv());
        self.stats.signal.teardown_tx += 1;
        self.send_control(now, port, &teardown);
    }
}
