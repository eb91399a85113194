//! Central admission from the host side (seed 004 §3.2 "Admission process", seed 001 §3.2): the
//! daemon asks the bandwidth manager before anything else and gives the booking back when the
//! connection ends.

use super::Rtcd;
use crate::rtcd::api::{Action, ConnHandle, ConnPhase, ManagerAnswer, Reply};
use crate::rtcd::RtcdError;
use crate::time::Instant;
use rtlan_wire::control::TeardownReason;

impl Rtcd {
    /// The bandwidth manager's answer to [`Action::ManagerAdmit`] for `handle`. An admission for
    /// a connection that is gone meanwhile (closed while admitting) is released at once.
    pub fn handle_manager_answer(
        &mut self,
        now: Instant,
        handle: ConnHandle,
        answer: ManagerAnswer,
    ) {
        let id = self.handles.get(&handle).copied();
        let admitting = id.filter(|id| {
            self.conns
                .get(id)
                .is_some_and(|c| c.phase == ConnPhase::Admitting)
        });
        let Some(id) = admitting else {
            if let ManagerAnswer::Admitted { manager_conn, .. } = answer {
                self.actions
                    .push_back(Action::ManagerRelease { manager_conn });
            }
            return;
        };
        let (manager_conn, delay_bound_us, hops) = match answer {
            ManagerAnswer::Admitted {
                manager_conn,
                delay_bound_us,
                hops,
            } => (manager_conn, delay_bound_us, hops),
            ManagerAnswer::Refused(text) => {
                self.fail_admitting(id, RtcdError::ManagerRefused(text));
                return;
            }
            ManagerAnswer::Unreachable(text) => {
                self.fail_admitting(id, RtcdError::ManagerUnreachable(text));
                return;
            }
        };
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        conn.manager_conn = Some(manager_conn);
        conn.delay_bound_us = Some(delay_bound_us);
        if conn.direct {
            conn.phase = ConnPhase::Open;
            self.publish(id, hops);
        } else {
            conn.phase = ConnPhase::Opening;
            self.transmit(now, id);
        }
    }

    /// An admitting connection failed at the manager: forget it and tell its client.
    fn fail_admitting(&mut self, id: u16, error: RtcdError) {
        if let Some(conn) = self.release(id) {
            let reply = Reply::Failed {
                conn: Some(conn.handle),
                error,
            };
            self.reply(conn.client, conn.open_tag, reply);
        }
    }

    /// Gives connection `id`'s booking back to the manager, if it holds one (once).
    pub(super) fn release_at_manager(&mut self, id: u16) {
        let held = self.conns.get_mut(&id).and_then(|c| c.manager_conn.take());
        if let Some(manager_conn) = held {
            self.actions
                .push_back(Action::ManagerRelease { manager_conn });
        }
    }

    /// The manager no longer holds these bookings (their lease ran out, e.g. while it was
    /// unreachable, or it lost them): their connections are revoked as if a switch had torn them
    /// down — the client gets [`Reply::Revoked`] (or `Failed` while opening) and, under `both`,
    /// the switches a TEARDOWN.
    pub fn handle_manager_lost(&mut self, now: Instant, lost: &[u64]) {
        let ids: Vec<u16> = self
            .conns
            .iter()
            .filter(|(_, c)| c.manager_conn.is_some_and(|m| lost.contains(&m)))
            .map(|(&id, _)| id)
            .collect();
        for id in ids {
            let Some(conn) = self.conns.get_mut(&id) else {
                continue;
            };
            // Nothing to give back any more.
            conn.manager_conn = None;
            let (client, handle, phase, direct) =
                (conn.client, conn.handle, conn.phase, conn.direct);
            match phase {
                ConnPhase::Open => {
                    let reply = Reply::Revoked {
                        conn: handle,
                        reason: TeardownReason::Administrative,
                        error: Some(RtcdError::ManagerUnreachable(
                            "the bandwidth manager dropped the booking".into(),
                        )),
                    };
                    self.reply(client, 0, reply);
                    if direct {
                        self.release(id);
                    } else {
                        self.begin_teardown(now, id, None);
                    }
                }
                ConnPhase::Opening => {
                    self.begin_teardown(
                        now,
                        id,
                        Some(RtcdError::ManagerUnreachable(
                            "the bandwidth manager dropped the booking".into(),
                        )),
                    );
                }
                ConnPhase::Admitting | ConnPhase::Closing => {}
            }
        }
    }
}
