//! The SETUPs a switch has in progress (EtheReal §2.2: setup hop by hop, each hop waiting for
//! its route — an ARP query, §3.4 — or for the answer from downstream), indexed so that no
//! per-message path scans them (STYLE.md §14): by request key (duplicates), by input id (id
//! taken), by downstream (output port, request id) (the answer), by destination IP (a route
//! learnt), by deadline (route timeout, retransmission), with per-input-port counts and the
//! bandwidth booked downstream per input port (the ingress cap). Bounded by the caller: globally
//! by the connection table's size, per port by `protect`'s share.
//!
//! Jobs are numbered in arrival order and kept in a `BTreeMap`, so every walk over them (a link
//! going down, a neighbour restarting) is in arrival order whatever the hashing.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::Ipv4Addr;

use super::rt::RequestKey;
use super::signal::{InProgress, Wait};
use super::PortId;
use crate::time::Instant;

/// A job's number: its arrival order.
pub(super) type JobId = u64;

/// SETUPs in progress with their indexes.
#[derive(Debug, Default)]
pub(super) struct SetupTable {
    jobs: BTreeMap<JobId, InProgress>,
    next: JobId,
    by_key: HashMap<RequestKey, JobId>,
    by_in_id: HashMap<(PortId, u16), JobId>,
    by_reply: HashMap<(PortId, u32), JobId>,
    route_waiters: BTreeSet<(Ipv4Addr, JobId)>,
    deadlines: BTreeSet<(Instant, JobId)>,
    per_port: Vec<usize>,
    pending_bps: Vec<u64>,
}

/// When `job` next needs attention: its route deadline or its next retransmission.
fn deadline(job: &InProgress) -> Instant {
    match job.wait {
        Wait::Route { deadline } => deadline,
        Wait::Downstream {
            next_retransmit, ..
        } => next_retransmit,
    }
}

impl SetupTable {
    /// An empty table for a switch of `ports` ports.
    pub(super) fn new(ports: usize) -> SetupTable {
        SetupTable {
            per_port: vec![0; ports],
            pending_bps: vec![0; ports],
            ..SetupTable::default()
        }
    }

    /// Number of SETUPs in progress.
    pub(super) fn len(&self) -> usize {
        self.jobs.len()
    }

    /// SETUPs in progress that came in on `port`.
    pub(super) fn len_on(&self, port: PortId) -> usize {
        self.per_port.get(usize::from(port.0)).copied().unwrap_or(0)
    }

    /// Wire bit/s booked downstream by SETUPs in progress that came in on `port`.
    pub(super) fn pending_bps(&self, port: PortId) -> u64 {
        self.pending_bps
            .get(usize::from(port.0))
            .copied()
            .unwrap_or(0)
    }

    /// Adds `job`; returns its number.
    pub(super) fn insert(&mut self, job: InProgress) -> JobId {
        let id = self.next;
        self.next += 1;
        let port = usize::from(job.key.in_port.0);
        self.by_key.insert(job.key, id);
        self.by_in_id.insert((job.key.in_port, job.in_id), id);
        match &job.wait {
            Wait::Route { .. } => {
                self.route_waiters.insert((job.setup.dst_ip, id));
            }
            Wait::Downstream {
                out_port,
                request_id,
                booking,
                ..
            } => {
                self.by_reply.insert((*out_port, *request_id), id);
                if let Some(bps) = self.pending_bps.get_mut(port) {
                    *bps = bps.saturating_add(booking.wire_rate_bps);
                }
            }
        }
        self.deadlines.insert((deadline(&job), id));
        if let Some(count) = self.per_port.get_mut(port) {
            *count += 1;
        }
        self.jobs.insert(id, job);
        id
    }

    /// Removes job `id` and returns it.
    pub(super) fn remove(&mut self, id: JobId) -> Option<InProgress> {
        let job = self.jobs.remove(&id)?;
        let port = usize::from(job.key.in_port.0);
        if self.by_key.get(&job.key) == Some(&id) {
            self.by_key.remove(&job.key);
        }
        let in_key = (job.key.in_port, job.in_id);
        if self.by_in_id.get(&in_key) == Some(&id) {
            self.by_in_id.remove(&in_key);
        }
        match &job.wait {
            Wait::Route { .. } => {
                self.route_waiters.remove(&(job.setup.dst_ip, id));
            }
            Wait::Downstream {
                out_port,
                request_id,
                booking,
                ..
            } => {
                self.by_reply.remove(&(*out_port, *request_id));
                if let Some(bps) = self.pending_bps.get_mut(port) {
                    *bps = bps.saturating_sub(booking.wire_rate_bps);
                }
            }
        }
        self.deadlines.remove(&(deadline(&job), id));
        if let Some(count) = self.per_port.get_mut(port) {
            *count = count.saturating_sub(1);
        }
        Some(job)
    }

    /// Job `id`.
    pub(super) fn get(&self, id: JobId) -> Option<&InProgress> {
        self.jobs.get(&id)
    }

    /// The job of request `key`, if it is in progress.
    pub(super) fn find(&self, key: &RequestKey) -> Option<&InProgress> {
        self.jobs.get(self.by_key.get(key)?)
    }

    /// Whether a SETUP in progress from `port` uses input id `id`.
    pub(super) fn in_id_taken(&self, port: PortId, id: u16) -> bool {
        self.by_in_id.contains_key(&(port, id))
    }

    /// The job whose SETUP went out of `out_port` with request id `request_id`.
    pub(super) fn awaiting_reply(&self, out_port: PortId, request_id: u32) -> Option<JobId> {
        self.by_reply.get(&(out_port, request_id)).copied()
    }

    /// Whether any SETUP waits for a route.
    pub(super) fn waits_for_route(&self) -> bool {
        !self.route_waiters.is_empty()
    }

    /// The jobs waiting for a route to `ip`, oldest first.
    pub(super) fn waiting_for(&self, ip: Ipv4Addr) -> Vec<JobId> {
        self.route_waiters
            .range((ip, 0)..=(ip, JobId::MAX))
            .map(|&(_, id)| id)
            .collect()
    }

    /// Every job waiting for a route, oldest first within each address.
    pub(super) fn all_waiting(&self) -> Vec<JobId> {
        self.route_waiters.iter().map(|&(_, id)| id).collect()
    }

    /// The earliest deadline (route timeout or retransmission).
    pub(super) fn next_deadline(&self) -> Option<Instant> {
        self.deadlines.first().map(|&(at, _)| at)
    }

    /// The job with the earliest deadline, if that deadline is at or before `now`.
    pub(super) fn first_due(&self, now: Instant) -> Option<JobId> {
        self.deadlines
            .first()
            .filter(|(at, _)| *at <= now)
            .map(|&(_, id)| id)
    }

    /// Records the next retransmission of job `id` (waiting downstream): `attempts` made so far,
    /// the next one at `next`.
    pub(super) fn reschedule(&mut self, id: JobId, attempts: u8, next: Instant) {
        let Some(job) = self.jobs.get_mut(&id) else {
            return;
        };
        let old = deadline(job);
        if let Wait::Downstream {
            attempts: a,
            next_retransmit,
            ..
        } = &mut job.wait
        {
            *a = attempts;
            *next_retransmit = next;
        }
        self.deadlines.remove(&(old, id));
        self.deadlines.insert((next, id));
    }

    /// Every job number, in arrival order (for the rare walks: a link down, a restart).
    pub(super) fn ids(&self) -> Vec<JobId> {
        self.jobs.keys().copied().collect()
    }
}
