//! What the switch tells a best-effort fast path below it (`docs/fastpath.md`): the stations it
//! has learnt, as changes, and which ports are **open** — ports whose best-effort frames may be
//! forwarded without passing this core at all (by the port's XDP program in the Linux shell).
//!
//! EtheReal §3.3 separates real-time from best-effort traffic at every output port: the cyclic
//! scheduler serves the connections first, the pacer keeps the line rate, preemptive discard
//! meters best-effort traffic entering where reservations enter. A frame that bypasses the core
//! escapes all three, so a port is open only where none of them has work: an unpaced port, in
//! the spanning tree's Forwarding state, with its link up, with no real-time booking leaving by
//! it (installed, being set up, or draining: every one holds its admission booking) and none
//! entering by it (installed or being set up). A port closes in the same call that books the
//! first reservation through it — before the SETUP goes on, so before any real-time frame can
//! arrive — and opens again when the last booking is released.

use rtlan_wire::ethernet::Address;

use super::learning::FdbChange;
use super::{PortId, Switch};
use crate::node::Medium;
use crate::time::Instant;

/// What a mirror of the learning table must do to stay equal to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FdbSync {
    /// Apply these changes, oldest first.
    Changes(Vec<FdbChange>),
    /// Too much changed: replace the whole mirror with these stations.
    Rebuild(Vec<(Address, PortId)>),
}

impl Switch {
    /// Starts reporting learning-table changes ([`Switch::fdb_sync`]); returns the stations the
    /// mirror starts from.
    pub fn track_fdb(&mut self, now: Instant) -> Vec<(Address, PortId)> {
        self.fdb.track_changes();
        // What is in the log so far is covered by the stations below.
        let _ = self.fdb.take_changes();
        self.mirrored_stations(now)
    }

    /// The learning-table changes since the last call (nothing unless [`Switch::track_fdb`]
    /// was called). Addresses the proxy-MAC plan covers are never reported as learnt: frames to
    /// them are real-time and must reach the core.
    pub fn fdb_sync(&mut self, now: Instant) -> FdbSync {
        match self.fdb.take_changes() {
            Some(changes) => FdbSync::Changes(
                changes
                    .into_iter()
                    .filter(|c| match c {
                        FdbChange::Learnt(mac, _) => !self.config.rt.plan.covers(mac),
                        FdbChange::Forgotten(_) => true,
                    })
                    .collect(),
            ),
            None => FdbSync::Rebuild(self.mirrored_stations(now)),
        }
    }

    fn mirrored_stations(&self, now: Instant) -> Vec<(Address, PortId)> {
        self.fdb
            .stations(now)
            .filter(|(mac, _, _)| !self.config.rt.plan.covers(mac))
            .map(|(mac, port, _)| (mac, port))
            .collect()
    }

    /// Whether control frames (SETUP and its answers, HELLO) wait in `port`'s control queue:
    /// the shell samples it after transmitting and keeps the port closed to the fast path while
    /// they wait (docs/fastpath.md "The protected control channel").
    pub fn control_waiting(&self, port: PortId) -> bool {
        self.ports
            .get(usize::from(port.0))
            .is_some_and(|p| p.sched.control_queued() > 0)
    }

    /// Control frames handed out of `port` so far (0 for an unknown port).
    pub fn control_sent(&self, port: PortId) -> u64 {
        self.ports
            .get(usize::from(port.0))
            .map_or(0, |p| p.sched.stats().control_frames_sent)
    }

    /// Why best-effort frames may not bypass the core on `port`, or `None` if it is open
    /// (module doc).
    pub fn fast_path_closed(&self, port: PortId) -> Option<&'static str> {
        let index = usize::from(port.0);
        let (Some(config), Some(state)) = (self.config.ports.get(index), self.ports.get(index))
        else {
            return Some("no such port");
        };
        if !matches!(config.medium, Medium::Unpaced) {
            return Some("paced");
        }
        if !state.forwarding {
            return Some("spanning tree");
        }
        if self.rt.link_down.get(index).copied().unwrap_or(true) {
            return Some("link down");
        }
        let booked = self
            .rt
            .admission
            .port(port)
            .map_or(0, |budget| budget.booked_bps);
        if booked > 0 || self.rt.rt_budget.get(index).copied().unwrap_or(0) > 0 {
            return Some("reservations leave");
        }
        let entering = self.rt.ingress_reserved.get(index).copied().unwrap_or(0)
            + self.rt.in_progress.pending_bps(port);
        if entering > 0 {
            return Some("reservations enter");
        }
        None
    }
}
