//! The host's own link (issue 12 item 3; EtheReal §5 leaves fault tolerance as future work).
//!
//! When the host's interface loses its carrier, nothing the first switch sends can reach the
//! daemon — in particular not the TEARDOWN `link_down` the switch sends when it sees the same
//! carrier loss on its side. So the daemon watches its own link (netlink `RTM_NEWLINK` in the
//! shell) and does the host's half itself:
//!
//! - **Down**: every open connection's client is told `interrupted` (reason `link_down`) at
//!   once. The connection keeps its id, proxy IP and kernel shaper, so the application's socket
//!   stays valid; REFRESH rounds pause.
//! - **Up**: the daemon puts its proxy neighbour entries and route back (an interface taken
//!   down administratively loses both), sends HELLO (a restarted switch shows in its epoch) and one REFRESH per
//!   interrupted connection. A REFRESH_ACK says the path still holds it (the outage was too
//!   short for the switch to notice): the client hears `recovered`. Otherwise the switch has
//!   released it and answers TEARDOWN (`state_lost`, or its own `link_down` retransmitted), and
//!   the daemon signals the connection again under the same proxy IP — `recovered` on SETUP_OK,
//!   `revoked` if the path refuses it now. Nothing is booked twice: the switch refuses a SETUP for
//!   a connection id it still holds, and the daemon only signals again after a TEARDOWN.

use rtlan_wire::control::{Message, Repr, TeardownReason};

use super::super::api::{Action, Reply};
use super::{ConnPhase, Rtcd};
use crate::time::Instant;

impl Rtcd {
    /// The host's interface lost (`up == false`) or regained its carrier. Repeated reports of
    /// the same state are ignored.
    pub fn handle_link(&mut self, now: Instant, up: bool) {
        if up == self.link_up {
            return;
        }
        self.link_up = up;
        let interrupted: Vec<u16> = self
            .conns
            .iter()
            .filter(|(_, c)| c.phase == ConnPhase::Open && !c.direct)
            .filter(|(_, c)| {
                if up {
                    c.recovering == Some(TeardownReason::LinkDown)
                } else {
                    c.recovering.is_none()
                }
            })
            .map(|(&id, _)| id)
            .collect();
        if !up {
            for id in interrupted {
                let Some(conn) = self.conns.get_mut(&id) else {
                    continue;
                };
                conn.recovering = Some(TeardownReason::LinkDown);
                let (client, handle) = (conn.client, conn.handle);
                let reply = Reply::Interrupted {
                    conn: handle,
                    reason: TeardownReason::LinkDown,
                };
                self.reply(client, 0, reply);
            }
            return;
        }
        // An interface taken down administratively loses its routes and even permanent
        // neighbour entries; put every published proxy entry and the route back (both are
        // replace operations, harmless when they survived a mere carrier loss).
        let published: Vec<u16> = self
            .conns
            .iter()
            .filter(|(_, c)| c.published && !c.direct)
            .map(|(&id, _)| id)
            .collect();
        for id in published {
            self.actions.push_back(Action::InstallNeighbour {
                proxy_ip: self.config.proxy_prefix.ip_for(id),
                proxy_mac: self.config.plan.mac_for(id),
            });
        }
        if self.route_installed {
            let prefix = self.config.proxy_prefix;
            self.actions.push_back(Action::InstallRoute { prefix });
        }
        self.send_hello(now);
        for id in interrupted {
            let request_id = self.fresh_request_id();
            self.send(
                now,
                Repr::new(0, request_id, Message::Refresh { connection_id: id }),
            );
        }
    }

    /// Whether the host's interface has its carrier, as last reported.
    pub fn link_up(&self) -> bool {
        self.link_up
    }

    /// A REFRESH_ACK: the path still holds connection `id`. For a connection cut off by the
    /// host's own link that is the news that it survived the outage.
    pub(super) fn on_refresh_ack(&mut self, id: u16) {
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        if conn.phase != ConnPhase::Open || conn.recovering != Some(TeardownReason::LinkDown) {
            return;
        }
        conn.recovering = None;
        let (client, handle, hops, delay_bound_us) =
            (conn.client, conn.handle, conn.hops, conn.bound_us());
        let reply = Reply::Recovered {
            conn: handle,
            hops,
            delay_bound_us,
        };
        self.reply(client, 0, reply);
    }
}
