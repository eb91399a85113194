//! The switch's control plane: EtheReal §2.2 (host-transparent connection setup, hop by hop),
//! §2.3 (admission at every hop, failure reported with the refusing hop and released upstream),
//! §3.4 (SETUPs routed by the receiver's IP through the internal ARP cache and the learning
//! table, ARP probing on a miss), following `docs/protocol.md` §5.
//!
//! A SETUP arriving on port P with id X: duplicates (keyed by input port, source MAC, request id)
//! get the stored answer again or are ignored while in progress; the output port Q is found from
//! the receiver's IP (held while probing, NO_ROUTE when nothing answers); Q is admitted
//! (bandwidth, real-time FIFO space); if Q faces the receiving host (no switch HELLO heard on Q)
//! the connection is installed with the receiver's MAC and SETUP_OK goes upstream; otherwise an id
//! is allocated on Q and the SETUP goes downstream (retransmitted with backoff) until SETUP_OK
//! installs the entry or SETUP_FAIL releases everything and is relayed upstream. The first switch
//! (SETUP from a host daemon, header hop 0) also rewrites the proxy IP (the *Swap* flag).
//! Downstream SETUPs carry a request id chosen by this switch, so requests from different
//! upstream nodes never collide in the next switch's duplicate table.

use std::net::Ipv4Addr;

use rtlan_wire::control::{
    FailReason, HelloRepr, Message, Packet, Repr, Role, SetupRepr, CONTROL_ID, ETHERTYPE,
    FLAG_RETRANSMISSION,
};
use rtlan_wire::ethernet::{Address, EtherType};

use super::learning::Lookup;
use super::queue::MIN_CHARGE;
use super::rt::{self, RequestKey, RtEntry};
use super::signal::{Held, InProgress, Wait};
use super::{PortId, Switch};
use crate::time::Instant;

/// Longest control frame this switch emits (the messages it builds carry no TLVs).
const CONTROL_FRAME_MAX: usize = 128;

impl Switch {
    /// Handles a frame addressed to a reserved address under the proxy-MAC plan: parses control
    /// messages to the control MAC, drops (and counts) everything else.
    pub(super) fn handle_control_frame(
        &mut self,
        now: Instant,
        port: PortId,
        src: Address,
        dst: Address,
        ethertype: EtherType,
        payload: &[u8],
    ) {
        let plan = self.config.rt.plan;
        if dst != plan.mac_for(CONTROL_ID) || ethertype != EtherType::from(ETHERTYPE) {
            self.stats.drop_control += 1;
            return;
        }
        let Ok(repr) = Packet::new_checked(payload).and_then(|p| Repr::parse(&p)) else {
            self.stats.drop_control += 1;
            return;
        };
        self.stats.control_rx += 1;
        match repr.message {
            Message::Setup(setup) => self.on_setup(now, port, src, &repr, setup),
            Message::SetupOk { .. } | Message::SetupFail { .. } => {
                self.on_setup_reply(now, port, &repr);
            }
            Message::Teardown { connection_id } => {
                self.on_teardown(now, port, &repr, connection_id);
            }
            Message::Refresh { connection_id } => self.on_refresh(now, port, &repr, connection_id),
            Message::Hello(hello) => {
                self.stats.signal.hello_rx += 1;
                if hello.role == Role::Switch {
                    if let Some(heard) = self.rt.switch_heard.get_mut(usize::from(port.0)) {
                        *heard = Some(now);
                    }
                }
            }
            // Acknowledgements of messages this switch sent once; nothing waits for them.
            Message::TeardownAck { .. } | Message::RefreshAck { .. } => {}
        }
    }

    /// Queues `repr` as a control frame on `port`'s real-time FIFO, from the port's MAC to the
    /// control MAC, padded to 60 bytes.
    pub(super) fn send_control(&mut self, now: Instant, port: PortId, repr: &Repr) {
        let index = usize::from(port.0);
        let Some(config) = self.config.ports.get(index) else {
            return;
        };
        let mut buf = [0u8; CONTROL_FRAME_MAX];
        let Ok(len) = repr.emit_frame(config.mac, self.config.rt.plan.control_mac(), &mut buf)
        else {
            return;
        };
        let frame = &buf[..len.max(MIN_CHARGE)];
        if let (Some(out), Some(stats)) =
            (self.ports.get_mut(index), self.stats.ports.get_mut(index))
        {
            if out.rt_queue.push(frame, now) {
                stats.tx_queued += 1;
            } else {
                stats.rt_drop_queue_full += 1;
            }
        }
    }

    /// A SETUP from upstream (or from the sending host's daemon) on `port`.
    fn on_setup(
        &mut self,
        now: Instant,
        port: PortId,
        src: Address,
        repr: &Repr,
        setup: SetupRepr,
    ) {
        self.stats.signal.setup_rx += 1;
        let key = RequestKey {
            in_port: port,
            src_mac: src,
            request_id: repr.request_id,
        };
        if let Some((answer, _)) = self.rt.answers.get(&key) {
            let answer = answer.clone();
            self.stats.signal.setup_duplicates += 1;
            self.send_control(now, port, &answer);
            return;
        }
        if self.rt.in_progress.iter().any(|p| p.key == key) {
            self.stats.signal.setup_duplicates += 1;
            return;
        }
        let job = InProgress {
            key,
            in_id: setup.connection_id,
            hop: repr.hop.saturating_add(1),
            first: repr.hop == 0,
            setup,
            wait: Wait::Route {
                deadline: now + self.config.rt.route_timeout,
            },
        };
        let id_taken = self.rt.table.lookup(port, setup.connection_id).is_some()
            || self
                .rt
                .in_progress
                .iter()
                .any(|p| p.key.in_port == port && p.in_id == setup.connection_id);
        if !self.config.rt.plan.is_connection_id(setup.connection_id) || id_taken {
            self.refuse(now, &job, FailReason::Malformed);
        } else if setup.hop_limit == 0 {
            self.refuse(now, &job, FailReason::NoRoute);
        } else if self.rt.in_progress.len() >= self.config.rt.max_connections {
            self.refuse(now, &job, FailReason::Buffer);
        } else {
            self.advance_setup(now, job);
        }
    }

    /// The output port and MAC of `ip`: internal ARP cache, then learning table (EtheReal §3.4).
    fn route(&self, now: Instant, ip: Ipv4Addr) -> Option<(PortId, Address)> {
        let mac = self.arp.get(ip)?;
        match self.fdb.lookup(&mac, now) {
            Lookup::Port(port) => Some((port, mac)),
            Lookup::Local | Lookup::Unknown => None,
        }
    }

    /// Routes, admits and either installs (last switch) or forwards `job` downstream; holds it
    /// while its destination is probed.
    fn advance_setup(&mut self, now: Instant, mut job: InProgress) {
        let Some((out, mac)) = self.route(now, job.setup.dst_ip) else {
            self.probe(now, job.key.in_port, job.setup.dst_ip);
            self.rt.in_progress.push(job);
            return;
        };
        if out == job.key.in_port {
            self.refuse(now, &job, FailReason::NoRoute);
            return;
        }
        let wire = rt::wire_rate(job.setup.rate, job.setup.max_packet);
        let booking = match self.rt.admission.try_book(out, wire) {
            Ok(booking) => booking,
            Err(error) => {
                self.stats.rt.admission_refusals = self.rt.admission.refusals();
                self.refuse(now, &job, error.reason());
                return;
            }
        };
        let rt_bytes = usize::try_from(job.setup.max_burst)
            .unwrap_or(usize::MAX)
            .saturating_mul(2);
        let index = usize::from(out.0);
        let capacity = self.ports.get(index).map_or(0, |p| p.rt_queue.bound());
        let budget = self.rt.rt_budget.get(index).copied().unwrap_or(usize::MAX);
        if budget.saturating_add(rt_bytes) > capacity {
            self.release_held(out, None, booking, 0);
            self.refuse(now, &job, FailReason::Buffer);
            return;
        }
        if let Some(budget) = self.rt.rt_budget.get_mut(index) {
            *budget += rt_bytes;
        }
        let last = !self
            .rt
            .is_switch_facing(out, now, self.config.rt.hello_interval);
        if last {
            let entry = self.entry(&job, out, 0, Some(mac));
            let held = Held { booking, rt_bytes };
            self.install(now, &job, entry, held, job.hop);
            return;
        }
        let Some(out_id) = self
            .rt
            .ids
            .get_mut(index)
            .and_then(|ids| ids.allocate().ok())
        else {
            self.release_held(out, None, booking, rt_bytes);
            self.refuse(now, &job, FailReason::IdsExhausted);
            return;
        };
        let request_id = self.rt.request_id();
        job.wait = Wait::Downstream {
            out_port: out,
            out_id,
            booking,
            rt_bytes,
            request_id,
            attempts: 1,
            next_retransmit: now + self.config.rt.retransmit_initial,
        };
        let down = downstream_setup(&job, out_id, request_id, 0);
        self.stats.signal.setup_tx += 1;
        self.send_control(now, out, &down);
        self.rt.in_progress.push(job);
    }

    /// The table entry for `job` leaving on `out`.
    fn entry(
        &self,
        job: &InProgress,
        out: PortId,
        out_id: u16,
        receiver_mac: Option<Address>,
    ) -> RtEntry {
        RtEntry {
            out_port: out,
            out_id,
            receiver_ip: job.first.then_some(job.setup.dst_ip),
            receiver_mac,
            rate_bps: job.setup.rate,
            max_burst: job.setup.max_burst,
            max_packet: job.setup.max_packet,
            request: job.key,
        }
    }

    /// Installs `entry` for `job` and answers SETUP_OK upstream; on a table error releases what
    /// `held` holds and refuses (BUFFER).
    fn install(&mut self, now: Instant, job: &InProgress, entry: RtEntry, held: Held, hops: u8) {
        let key = (job.key.in_port, job.in_id);
        if self.rt.table.insert(key.0, key.1, entry).is_err() {
            let out_id = entry.receiver_mac.is_none().then_some(entry.out_id);
            self.release_held(entry.out_port, out_id, held.booking, held.rt_bytes);
            self.refuse(now, job, FailReason::Buffer);
            return;
        }
        self.rt.held.insert(key, held);
        self.stats.signal.setup_ok += 1;
        let ok = Message::SetupOk {
            connection_id: job.in_id,
            hops,
        };
        self.answer(now, job, ok);
    }

    /// Gives back a booking, an allocated output id and admitted FIFO bytes on `out`.
    fn release_held(
        &mut self,
        out: PortId,
        out_id: Option<u16>,
        booking: rt::Booking,
        rt_bytes: usize,
    ) {
        // The booking came from this admission, so releasing it cannot fail.
        let _ = self.rt.admission.release(booking);
        let index = usize::from(out.0);
        if let (Some(id), Some(ids)) = (out_id, self.rt.ids.get_mut(index)) {
            // The id was allocated on this port's allocator.
            let _ = ids.release(id);
        }
        if let Some(budget) = self.rt.rt_budget.get_mut(index) {
            *budget = budget.saturating_sub(rt_bytes);
        }
    }

    /// Answers `job` upstream with SETUP_FAIL naming this switch.
    fn refuse(&mut self, now: Instant, job: &InProgress, reason: FailReason) {
        let fail = Message::SetupFail {
            reason,
            failed_hop: job.hop,
            connection_id: job.in_id,
            switch_ip: self.config.mgmt_ip.unwrap_or(Ipv4Addr::UNSPECIFIED),
        };
        self.stats.signal.setup_fail += 1;
        self.answer(now, job, fail);
    }

    /// Sends `message` upstream for `job` and stores it for duplicates.
    fn answer(&mut self, now: Instant, job: &InProgress, message: Message) {
        let repr = Repr::new(job.hop, job.key.request_id, message);
        // Bounded: at most a few answers per connection the switch can hold.
        if self.rt.answers.len() < self.config.rt.max_connections.saturating_mul(4) {
            self.rt.answers.insert(job.key, (repr.clone(), now));
        }
        self.send_control(now, job.key.in_port, &repr);
    }

    /// SETUP_OK or SETUP_FAIL from downstream on `port`.
    fn on_setup_reply(&mut self, now: Instant, port: PortId, repr: &Repr) {
        let position = self.rt.in_progress.iter().position(|p| {
            matches!(p.wait, Wait::Downstream { out_port, request_id, .. }
                if out_port == port && request_id == repr.request_id)
        });
        let Some(position) = position else {
            self.stats.signal.unmatched += 1;
            return;
        };
        let mut job = self.rt.in_progress.remove(position);
        let wait = std::mem::replace(&mut job.wait, Wait::Route { deadline: now });
        let Wait::Downstream {
            out_port,
            out_id,
            booking,
            rt_bytes,
            ..
        } = wait
        else {
            // `position` matched a Downstream wait above.
            return;
        };
        match repr.message {
            Message::SetupOk { hops, .. } => {
                let entry = self.entry(&job, out_port, out_id, None);
                let held = Held { booking, rt_bytes };
                self.install(now, &job, entry, held, hops);
            }
            Message::SetupFail {
                reason,
                failed_hop,
                switch_ip,
                ..
            } => {
                self.release_held(out_port, Some(out_id), booking, rt_bytes);
                self.stats.signal.setup_fail += 1;
                let fail = Message::SetupFail {
                    reason,
                    failed_hop,
                    connection_id: job.in_id,
                    switch_ip,
                };
                self.answer(now, &job, fail);
            }
            _ => self.stats.signal.unmatched += 1,
        }
    }

    /// TEARDOWN of the connection arriving on `port` with `id`: remove, release, forward
    /// downstream, acknowledge upstream (also when nothing was there: idempotent).
    fn on_teardown(&mut self, now: Instant, port: PortId, repr: &Repr, id: u16) {
        self.stats.signal.teardown_rx += 1;
        let hop = repr.hop.saturating_add(1);
        if let Some(entry) = self.rt.table.remove(port, id) {
            self.stats.signal.teardowns += 1;
            self.rt.answers.remove(&entry.request);
            let downstream = entry.receiver_mac.is_none();
            if let Some(held) = self.rt.held.remove(&(port, id)) {
                let out_id = downstream.then_some(entry.out_id);
                self.release_held(entry.out_port, out_id, held.booking, held.rt_bytes);
            }
            if downstream {
                let request_id = self.rt.request_id();
                let teardown = Message::Teardown {
                    connection_id: entry.out_id,
                };
                self.send_control(now, entry.out_port, &Repr::new(hop, request_id, teardown));
            }
        }
        let ack = Message::TeardownAck { connection_id: id };
        self.send_control(now, port, &Repr::new(hop, repr.request_id, ack));
    }

    /// REFRESH of a connection: answered and passed downstream when the connection exists.
    fn on_refresh(&mut self, now: Instant, port: PortId, repr: &Repr, id: u16) {
        let Some(entry) = self.rt.table.lookup(port, id).copied() else {
            self.stats.signal.unmatched += 1;
            return;
        };
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

    /// Lets SETUPs waiting for a route go on if their destination is now known.
    pub(super) fn retry_routes(&mut self, now: Instant) {
        let mut index = 0;
        while index < self.rt.in_progress.len() {
            let ready = matches!(self.rt.in_progress[index].wait, Wait::Route { .. })
                && self
                    .route(now, self.rt.in_progress[index].setup.dst_ip)
                    .is_some();
            if ready {
                let job = self.rt.in_progress.remove(index);
                self.advance_setup(now, job);
            } else {
                index += 1;
            }
        }
    }

    /// Signalling timers: HELLOs, route timeouts (NO_ROUTE), downstream retransmissions.
    pub(super) fn signal_timeout(&mut self, now: Instant) {
        if let (Some(due), Some(interval)) = (self.rt.next_hello, self.config.rt.hello_interval) {
            if due <= now {
                self.send_hellos(now);
                self.rt.next_hello = Some(now + interval);
            }
        }
        let mut index = 0;
        while index < self.rt.in_progress.len() {
            let job = &mut self.rt.in_progress[index];
            match &mut job.wait {
                Wait::Route { deadline } if *deadline <= now => {
                    let job = self.rt.in_progress.remove(index);
                    self.refuse(now, &job, FailReason::NoRoute);
                }
                Wait::Downstream {
                    out_port,
                    out_id,
                    request_id,
                    attempts,
                    next_retransmit,
                    ..
                } if *next_retransmit <= now => {
                    if *attempts >= self.config.rt.max_attempts {
                        self.give_up(now, index);
                        continue;
                    }
                    let backoff = self.config.rt.retransmit_initial * (1u32 << (*attempts).min(16));
                    *attempts += 1;
                    *next_retransmit = now + backoff;
                    let (port, id, request) = (*out_port, *out_id, *request_id);
                    let repr = downstream_setup(
                        &self.rt.in_progress[index],
                        id,
                        request,
                        FLAG_RETRANSMISSION,
                    );
                    self.stats.signal.setup_tx += 1;
                    self.stats.signal.setup_retransmits += 1;
                    self.send_control(now, port, &repr);
                    index += 1;
                }
                _ => index += 1,
            }
        }
    }

    /// The downstream switch never answered `in_progress[index]`: release and refuse upstream
    /// (NO_ROUTE, naming the silent next hop).
    fn give_up(&mut self, now: Instant, index: usize) {
        let mut job = self.rt.in_progress.remove(index);
        let wait = std::mem::replace(&mut job.wait, Wait::Route { deadline: now });
        let Wait::Downstream {
            out_port,
            out_id,
            booking,
            rt_bytes,
            ..
        } = wait
        else {
            return;
        };
        self.release_held(out_port, Some(out_id), booking, rt_bytes);
        self.stats.signal.setup_fail += 1;
        let fail = Message::SetupFail {
            reason: FailReason::NoRoute,
            failed_hop: job.hop.saturating_add(1),
            connection_id: job.in_id,
            switch_ip: Ipv4Addr::UNSPECIFIED,
        };
        self.answer(now, &job, fail);
    }

    /// Sends a HELLO out of every port.
    fn send_hellos(&mut self, now: Instant) {
        let seq = self.rt.hello_seq;
        self.rt.hello_seq = seq.wrapping_add(1);
        for index in 0..self.config.ports.len() {
            let Some(mac) = self.config.ports.get(index).map(|p| p.mac) else {
                continue;
            };
            let hello = Message::Hello(HelloRepr {
                role: Role::Switch,
                // Port counts are checked to fit in u16 by `Switch::new`.
                port: u16::try_from(index).unwrap_or(u16::MAX),
                mac,
                management_ip: self.config.mgmt_ip.unwrap_or(Ipv4Addr::UNSPECIFIED),
            });
            self.stats.signal.hello_tx += 1;
            self.send_control(now, PortId(index as u16), &Repr::new(0, seq, hello));
        }
    }
}

/// The SETUP `job` sends downstream with id `out_id`.
fn downstream_setup(job: &InProgress, out_id: u16, request_id: u32, flags: u8) -> Repr {
    let mut repr = Repr::new(
        job.hop,
        request_id,
        Message::Setup(SetupRepr {
            connection_id: out_id,
            hop_limit: job.setup.hop_limit.saturating_sub(1),
            ..job.setup
        }),
    );
    repr.flags = flags;
    repr
}

impl Switch {
    /// The real-time connection table (EtheReal §3.3).
    pub fn connections(&self) -> &rt::ConnectionTable {
        &self.rt.table
    }

    /// The admission budgets of the output ports.
    pub fn admission(&self) -> &rt::Admission {
        &self.rt.admission
    }

    /// Connection ids in use on `port`'s output link (0 for an unknown port).
    pub fn ids_in_use(&self, port: PortId) -> u32 {
        self.rt
            .ids
            .get(usize::from(port.0))
            .map_or(0, rt::IdAllocator::in_use)
    }

    /// Real-time FIFO bytes admitted on `port` (sum of 2 × max burst of its connections).
    pub fn rt_admitted_bytes(&self, port: PortId) -> usize {
        self.rt
            .rt_budget
            .get(usize::from(port.0))
            .copied()
            .unwrap_or(0)
    }

    /// Frames waiting in `port`'s real-time FIFO (0 for an unknown port).
    pub fn rt_queue_len(&self, port: PortId) -> usize {
        self.ports
            .get(usize::from(port.0))
            .map_or(0, |p| p.rt_queue.len())
    }

    /// SETUPs in progress (waiting for a route or a downstream answer).
    pub fn setups_in_progress(&self) -> usize {
        self.rt.in_progress.len()
    }

    /// Whether `port` heard a switch HELLO recently (a switch-facing port) at `now`.
    pub fn is_switch_facing(&self, port: PortId, now: Instant) -> bool {
        self.rt
            .is_switch_facing(port, now, self.config.rt.hello_interval)
    }
}
