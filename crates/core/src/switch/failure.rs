//! Failure detection (issue 12 item 3; EtheReal §5 leaves fault tolerance as future work): a
//! port whose carrier goes down (the shell reads it and calls [`Switch::handle_link`]) or whose
//! switch neighbour stops sending HELLO for `HELLO_MISSES` periods takes every connection through
//! it down at once, in both directions:
//!
//! - a connection that entered by the failed port is released here and torn down downstream
//!   (its upstream cannot be reached over the dead link; the switch on the other side of it does
//!   the same towards the sending host);
//! - a connection that left by the failed port is released here and torn down upstream, so the
//!   sending host's daemon tells its application `revoked` with the reason (LINK_DOWN or
//!   NEIGHBOUR_LOST), which ends the connection rather than signalling it again: the path is
//!   gone until the topology changes (the spanning tree then re-signals).
//!
//! SETUPs in progress through the port are refused (NO_ROUTE) or dropped, and the stations learnt
//! on the port are forgotten, so new SETUPs towards them are probed again instead of routed into
//! the dead link.

use rtlan_wire::control::{FailReason, Message, TeardownReason};

use super::signal::{Wait, HELLO_MISSES};
use super::{PortId, Switch};
use crate::time::Instant;

impl Switch {
    /// The carrier of `port` went up (`true`) or down. Down releases every connection through
    /// the port (both directions, reason LINK_DOWN); up announces the switch on it at once.
    pub fn handle_link(&mut self, now: Instant, port: PortId, up: bool) {
        // With spanning tree on, the bridge hears it first: a forwarding port going down
        // releases its connections with TOPOLOGY_CHANGE (the tree may find another path).
        self.stp_link(now, port, up);
        let index = usize::from(port.0);
        let Some(down) = self.rt.link_down.get_mut(index) else {
            return;
        };
        if up {
            if std::mem::replace(down, false) && self.config.rt.hello_interval.is_some() {
                self.send_hello_on(now, port);
            }
            return;
        }
        if std::mem::replace(down, true) {
            return;
        }
        self.stats.signal.link_down += 1;
        self.fail_port(now, port, TeardownReason::LinkDown);
    }

    /// Ports whose switch neighbour has been silent for `HELLO_MISSES` HELLO periods lose their
    /// connections (reason NEIGHBOUR_LOST). Run from the ageing sweep.
    pub(super) fn detect_silent_neighbours(&mut self, now: Instant) {
        let Some(period) = self.config.rt.hello_interval else {
            return;
        };
        let silent: Vec<PortId> = self
            .rt
            .switch_heard
            .iter()
            .enumerate()
            .filter_map(|(i, heard)| {
                let heard = (*heard)?;
                (now.saturating_duration_since(heard) > period * HELLO_MISSES)
                    .then_some(PortId(i as u16))
            })
            .collect();
        for port in silent {
            self.stats.signal.neighbour_lost += 1;
            self.fail_port(now, port, TeardownReason::NeighbourLost);
        }
    }

    /// Takes down everything through `port` for `reason`.
    pub(super) fn fail_port(&mut self, now: Instant, port: PortId, reason: TeardownReason) {
        let index = usize::from(port.0);
        let mut entering = Vec::new();
        let mut leaving = Vec::new();
        for (key, entry) in self.rt.table.iter() {
            if key.0 == port {
                entering.push(key);
            } else if entry.out_port == port {
                leaving.push(key);
            }
        }
        for key in entering {
            if let Some(entry) = self.rt.table.remove(key.0, key.1) {
                self.stats.signal.failure_released += 1;
                self.release_connection(now, key, entry, true, false, reason);
            }
        }
        for key in leaving {
            if let Some(entry) = self.rt.table.remove(key.0, key.1) {
                self.stats.signal.failure_released += 1;
                self.release_connection(now, key, entry, false, true, reason);
            }
        }
        // SETUPs in progress: from the dead port, dropped (nobody to answer); towards it,
        // refused upstream.
        for id in self.rt.in_progress.ids() {
            let Some(job) = self.rt.in_progress.get(id) else {
                continue;
            };
            let from_port = job.key.in_port == port;
            let towards = matches!(job.wait, Wait::Downstream { out_port, .. } if out_port == port);
            if !from_port && !towards {
                continue;
            }
            let Some(mut job) = self.rt.in_progress.remove(id) else {
                continue;
            };
            let wait = std::mem::replace(&mut job.wait, Wait::Route { deadline: now });
            if let Wait::Downstream {
                out_port,
                out_id,
                booking,
                rt_bytes,
                ..
            } = wait
            {
                self.release_held(out_port, Some(out_id), booking, rt_bytes);
                if !towards {
                    self.send_teardown(now, out_port, out_id, job.hop, reason);
                }
            }
            if !from_port {
                let fail = Message::SetupFail {
                    reason: FailReason::NoRoute,
                    failed_hop: job.hop,
                    connection_id: job.in_id,
                    switch_ip: self
                        .config
                        .mgmt_ip
                        .unwrap_or(std::net::Ipv4Addr::UNSPECIFIED),
                };
                self.stats.signal.setup_fail += 1;
                self.answer(now, &job, fail);
            }
        }
        // A port the spanning tree stopped forwarding still has its link and its neighbour.
        if reason != TeardownReason::TopologyChange {
            if let Some(neighbours) = self.rt.neighbours.get_mut(index) {
                neighbours.clear();
            }
            if let Some(heard) = self.rt.switch_heard.get_mut(index) {
                *heard = None;
            }
        }
        self.fdb.flush_port(port);
    }
}
