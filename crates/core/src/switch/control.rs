//! The switch's control plane: EtheReal §2.2 (host-transparent connection setup, hop by hop),
//! §2.3 (admission at every hop, failure reported with the refusing hop and released upstream),
//! §3.4 (SETUPs routed by the receiver's IP through the internal ARP cache and the learning
//! table, ARP probing on a miss), following `docs/protocol.md` §5.
//!
//! A SETUP arriving on port P with id X: duplicates (keyed by input port, source MAC, request id)
//! get the stored answer again or are ignored while in progress; the output port Q is found from
//! the receiver's IP (held while probing, NO_ROUTE when nothing answers); Q is admitted
//! (bandwidth on Q, backplane, CPU, queue memory — all or nothing); if Q faces the receiving host (no switch HELLO heard on Q)
//! the connection is installed with the receiver's MAC and SETUP_OK goes upstream; otherwise an id
//! is allocated on Q and the SETUP goes downstream (retransmitted with backoff) until SETUP_OK
//! installs the entry (and adds the connection's queue to Q's cyclic scheduler) or SETUP_FAIL
//! releases everything and is relayed upstream. The first switch
//! (SETUP from a host daemon, header hop 0) also rewrites the proxy IP (the *Swap* flag).
//! Downstream SETUPs carry a request id chosen by this switch, so requests from different
//! upstream nodes never collide in the next switch's duplicate table.

use std::net::Ipv4Addr;

use rtlan_wire::control::{
    BoundTlv, DelayTlv, EpochTlv, FailReason, HelloRepr, Message, Packet, Repr, Role, SetupRepr,
    Tlv, CONTROL_ID, ETHERTYPE, FLAG_RETRANSMISSION,
};
use rtlan_wire::ethernet::{Address, EtherType};

use super::learning::Lookup;
use super::rt::{self, RequestKey, RtEntry};
use super::sched::SchedError;
use super::signal::{Answer, Held, InProgress, Wait};
use super::{PortId, Switch, SwitchTimer};
use crate::egress::queue::MIN_CHARGE;
use crate::egress::{FlowHandle, FlowSpec, Service};
use crate::time::Instant;

/// Longest control frame this switch emits (its messages carry at most a DELAY or BOUND TLV, the
/// EPOCH TLV and the 30-byte AUTH TLV: 114 bytes for a signed SETUP).
pub(super) const CONTROL_FRAME_MAX: usize = 128;

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
        // Port keys and role (security.rs); a refused message is counted there.
        if !self.admit_control(now, port, src, payload, &repr) {
            return;
        }
        if self.stp_refuses_control(now, port, &repr) {
            return;
        }
        self.stats.control_rx += 1;
        // A new boot epoch from this neighbour: it restarted, and what it held is gone.
        self.note_epoch(now, port, src, &repr);
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
            Message::TeardownAck { .. } => self.on_teardown_ack(port, &repr),
            // Acknowledgements of REFRESHes this switch passed on; nothing waits for them.
            Message::RefreshAck { .. } => {}
        }
    }

    /// Queues `frame` (a whole control frame or BPDU) on port `index`'s control queue, ahead of
    /// data, counting the outcome.
    pub(super) fn enqueue_control_frame(&mut self, now: Instant, index: usize, frame: &[u8]) {
        if let (Some(out), Some(stats)) =
            (self.ports.get_mut(index), self.stats.ports.get_mut(index))
        {
            if out.sched.enqueue_control(now, frame) {
                stats.tx_queued += 1;
                self.rt.setup_times.on_accepted(index);
            } else {
                stats.rt_drop_queue_full += 1;
            }
        }
    }

    /// Queues `repr` as a control frame on `port`'s control FIFO (served first), from the port's MAC to the
    /// control MAC, padded to 60 bytes.
    pub(super) fn send_control(&mut self, now: Instant, port: PortId, repr: &Repr) {
        // Every message carries this start's boot epoch (docs/protocol.md §5 "Restarts").
        let mut repr = repr.clone();
        repr.set_tlv(EpochTlv(self.config.rt.epoch).to_tlv());
        // Signed with the port's key when it has one, after every other TLV (security.rs).
        let Some(repr) = self.sign_control(now, port, &repr) else {
            return;
        };
        let index = usize::from(port.0);
        let Some(config) = self.config.ports.get(index) else {
            return;
        };
        let mut buf = [0u8; CONTROL_FRAME_MAX];
        let Ok(len) = repr.emit_frame(config.mac, self.config.rt.plan.control_mac(), &mut buf)
        else {
            return;
        };
        self.enqueue_control_frame(now, index, &buf[..len.max(MIN_CHARGE)]);
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
            epoch: repr.epoch().ok().flatten().map_or(0, |e| e.0),
            request_id: repr.request_id,
        };
        // Repr::parse checked a DELAY TLV's length, so this cannot fail on a parsed SETUP.
        let delay = repr.delay().ok().flatten().unwrap_or_default();
        // A duplicate is the same request again: same key *and* same content. A request id
        // reused with other content is refused, never answered with another request's reply.
        let same = |s: &SetupRepr, d: &DelayTlv| *s == setup && *d == delay;
        let stored = self
            .rt
            .answers
            .get(&key)
            .map(|a| (same(&a.setup, &a.delay), a.reply.clone()));
        let running = self
            .rt
            .in_progress
            .find(&key)
            .map(|p| same(&p.setup, &p.delay));
        match (stored, running) {
            (Some((true, answer)), _) => {
                self.stats.signal.setup_duplicates += 1;
                self.send_control(now, port, &answer);
                return;
            }
            (None, Some(true)) => {
                self.stats.signal.setup_duplicates += 1;
                return;
            }
            (Some((false, _)), _) | (None, Some(false)) => {
                self.stats.signal.setup_id_reuse += 1;
                let fail = Message::SetupFail {
                    reason: FailReason::Malformed,
                    failed_hop: repr.hop.saturating_add(1),
                    connection_id: setup.connection_id,
                    switch_ip: self.config.mgmt_ip.unwrap_or(Ipv4Addr::UNSPECIFIED),
                };
                let hop = repr.hop.saturating_add(1);
                self.send_control(now, port, &Repr::new(hop, repr.request_id, fail));
                return;
            }
            (None, None) => {}
        }
        let job = InProgress {
            key,
            in_id: setup.connection_id,
            hop: repr.hop.saturating_add(1),
            first: repr.hop == 0,
            setup,
            delay,
            terms: None,
            wait: Wait::Route {
                deadline: now + self.config.rt.route_timeout,
            },
            arrived: now,
            probed: false,
        };
        let id_taken = self.rt.table.lookup(port, setup.connection_id).is_some()
            || self.rt.in_progress.in_id_taken(port, setup.connection_id);
        if !self.config.rt.plan.is_connection_id(setup.connection_id) || id_taken {
            self.refuse(now, &job, FailReason::Malformed);
        } else if setup.hop_limit == 0 {
            self.refuse(now, &job, FailReason::NoRoute);
        } else if self.rt.in_progress.len() >= self.config.rt.max_connections {
            self.refuse(now, &job, FailReason::Buffer);
        } else if self.setup_port_limit(now, port) {
            // One port cannot fill the switch (protect.rs).
            self.refuse(now, &job, FailReason::PortLimit);
        } else {
            self.advance_setup(now, job);
        }
    }

    /// The output port and MAC of `ip`: internal ARP cache, then learning table (EtheReal §3.4).
    fn route(&self, now: Instant, ip: Ipv4Addr) -> Option<(PortId, Address)> {
        if let Some(binding) = self.static_binding(ip) {
            return Some((binding.port, binding.mac));
        }
        let mac = self.arp.get(ip)?;
        match self.fdb.lookup(&mac, now) {
            Lookup::Port(port) if self.stp_forwards(port) => Some((port, mac)),
            Lookup::Port(_) | Lookup::Local | Lookup::Unknown => None,
        }
    }

    /// Routes, admits and either installs (last switch) or forwards `job` downstream; holds it
    /// while its destination is probed.
    fn advance_setup(&mut self, now: Instant, mut job: InProgress) {
        let Some((out, mac)) = self.route(now, job.setup.dst_ip) else {
            job.probed = true;
            self.probe(now, job.key.in_port, job.setup.dst_ip);
            self.rt.in_progress.insert(job);
            return;
        };
        if out == job.key.in_port {
            self.refuse(now, &job, FailReason::NoRoute);
            return;
        }
        let wire = rt::wire_rate(job.setup.rate, job.setup.max_packet);
        // Delay in the signalling: this hop's latency, the queue its backlog bound needs, and
        // a DELAY refusal when the requirement is already exceeded (docs/protocol.md §6).
        let terms = match self.hop_terms(out, &job.setup, job.delay) {
            Ok(terms) => terms,
            Err(reason) => {
                if reason == FailReason::Delay {
                    self.stats.rt.delay_refusals += 1;
                }
                self.refuse(now, &job, reason);
                return;
            }
        };
        job.terms = Some(terms);
        // A link cannot bring in more than it carries: reservations entering by one port (those
        // installed and those in progress) stay within the cap share of its line rate, so a
        // host forging SETUPs towards many receivers cannot book beyond its own link (issue 12
        // item 5).
        if !self.ingress_has_room(job.key.in_port, wire) {
            self.stats.signal.ingress_cap_refusals += 1;
            self.refuse(now, &job, FailReason::Bandwidth);
            return;
        }
        let rt_bytes = terms.queue_bytes;
        let booking =
            match self
                .rt
                .admission
                .try_book_work(out, wire, rt_bytes, terms.cycle_work_bits)
            {
                Ok(booking) => booking,
                Err(error) => {
                    self.stats.rt.admission_refusals = self.rt.admission.refusals();
                    self.refuse(now, &job, error.reason());
                    return;
                }
            };
        let index = usize::from(out.0);
        if let Some(budget) = self.rt.rt_budget.get_mut(index) {
            *budget += rt_bytes;
        }
        let last = !self
            .rt
            .is_switch_facing(out, now, self.config.rt.hello_interval);
        if last {
            let in_port = usize::from(job.key.in_port.0);
            let before = self.rt.setup_times.accepted(in_port);
            let entry = self.entry(now, &job, out, 0, Some(mac));
            let held = held(&job, booking, rt_bytes, now);
            // The last hop knows the whole path: its bound goes back in SETUP_OK.
            let bound = BoundTlv {
                bound_ns: terms.bound_ns,
                latency_ns: u32::try_from(terms.accumulated_ns).unwrap_or(u32::MAX),
            };
            self.install(now, &job, entry, held, job.hop, Some(bound.to_tlv()));
            self.rt
                .setup_times
                .stamp(in_port, before, job.arrived, job.probed);
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
        let before = self.rt.setup_times.accepted(index);
        self.send_control(now, out, &down);
        self.rt
            .setup_times
            .stamp(index, before, job.arrived, job.probed);
        self.rt.in_progress.insert(job);
    }

    /// Whether `wire_bps` more may enter by `port`: the reservations installed through it and
    /// the SETUPs from it still in progress downstream, plus this one, within the real-time cap
    /// share of its line rate.
    fn ingress_has_room(&self, port: PortId, wire_bps: u64) -> bool {
        let index = usize::from(port.0);
        let Some(line) = self.ports.get(index).map(|p| p.line_rate_bps) else {
            return false;
        };
        let installed = self.rt.ingress_reserved.get(index).copied().unwrap_or(0);
        let pending = self.rt.in_progress.pending_bps(port);
        let cap = u128::from(line) * u128::from(self.config.rt.cap_percent) / 100;
        u128::from(installed) + u128::from(pending) + u128::from(wire_bps) <= cap
    }

    /// The table entry for `job` leaving on `out`.
    fn entry(
        &self,
        now: Instant,
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
            flow: None,
            // The first switch polices the connection's T-SPEC in wire bits (the same
            // conversion the calculus uses for the bound), with the burst the latency before
            // it can add — the host's own queue (the SETUP's accumulated delay, `host_delay`)
            // and its own receive lateness λ: frames bunched by either look bursty through no
            // fault of the sender, and the bound already counts both.
            policer: job
                .first
                .then(|| {
                    let tspec = rtlan_calculus::servers::tspec_from_setup(
                        job.setup.rate,
                        job.setup.max_burst,
                        job.setup.max_packet,
                    )
                    .ok()?;
                    let lateness = u64::try_from(self.config.rt.lateness_budget.as_nanos())
                        .unwrap_or(u64::MAX);
                    let upstream = job.delay.accumulated_ns.saturating_add(lateness);
                    let depth = rtlan_calculus::servers::burst_at_hop(&tspec, upstream).ok()?;
                    Some(rt::Policer::new(tspec.rate_bps, depth, now))
                })
                .flatten(),
            nonconforming: 0,
        }
    }

    /// Installs `entry` for `job` — table entry, the connection's queue on the output port's
    /// scheduler, its share of the input port's reservations — and answers SETUP_OK upstream;
    /// on an error releases what `held` holds and refuses (BUFFER for a full table, otherwise
    /// what the scheduler objected to).
    fn install(
        &mut self,
        now: Instant,
        job: &InProgress,
        entry: RtEntry,
        held: Held,
        hops: u8,
        bound: Option<Tlv>,
    ) {
        let key = (job.key.in_port, job.in_id);
        let refused = match self.rt.table.insert(key.0, key.1, entry) {
            Err(_) => Some(FailReason::Buffer),
            Ok(()) => {
                match self.add_to_scheduler(&entry, held.booking.wire_rate_bps, held.rt_bytes) {
                    Ok(flow) => {
                        // The entry was inserted just above.
                        self.rt.table.set_flow(key.0, key.1, flow);
                        None
                    }
                    Err(reason) => Some(reason),
                }
            }
        };
        if let Some(reason) = refused {
            self.rt.table.remove(key.0, key.1);
            let out_id = entry.receiver_mac.is_none().then_some(entry.out_id);
            self.release_held(entry.out_port, out_id, held.booking, held.rt_bytes);
            self.refuse(now, job, reason);
            return;
        }
        self.adjust_ingress(key.0, held.booking.wire_rate_bps, true);
        self.rt.held.insert(key, held);
        self.stats.signal.setup_ok += 1;
        let ok = Message::SetupOk {
            connection_id: job.in_id,
            hops,
        };
        self.answer_with(now, job, ok, bound);
    }

    /// Adds the queue of the connection of `entry` (leaving by `entry.out_port`, booked at
    /// `wire_bps`) to the output port's cyclic scheduler; the flow's handle goes into the entry.
    fn add_to_scheduler(
        &mut self,
        entry: &RtEntry,
        wire_bps: u64,
        queue_bytes: usize,
    ) -> Result<FlowHandle, FailReason> {
        let Some(port) = self.ports.get_mut(usize::from(entry.out_port.0)) else {
            return Err(FailReason::NoRoute);
        };
        let max_packet = usize::from(entry.max_packet);
        // A burst below one packet could never queue a frame: take at least one packet.
        let max_burst = usize::try_from(entry.max_burst)
            .unwrap_or(usize::MAX)
            .max(max_packet);
        let spec = FlowSpec {
            rate_bps: wire_bps,
            max_burst,
            max_packet,
            queue_bytes,
            service: Service::Guaranteed,
        };
        port.sched.add_flow(spec).map_err(|error| match error {
            SchedError::Oversubscribed { .. } => FailReason::Bandwidth,
            SchedError::TooManyConnections(_) => FailReason::Buffer,
            _ => FailReason::Malformed,
        })
    }

    /// Adds (`add`) or removes `wire_bps` to the reservations entering on `port`, and gives the
    /// port's preemptive-discard meter the new residual (line rate − reservations).
    pub(super) fn adjust_ingress(&mut self, port: PortId, wire_bps: u64, add: bool) {
        let index = usize::from(port.0);
        let Some(reserved) = self.rt.ingress_reserved.get_mut(index) else {
            return;
        };
        *reserved = if add {
            reserved.saturating_add(wire_bps)
        } else {
            reserved.saturating_sub(wire_bps)
        };
        let reserved = *reserved;
        if let Some(port) = self.ports.get_mut(index) {
            let residual = port.line_rate_bps.saturating_sub(reserved);
            if let Some(meter) = &mut port.meter {
                meter.set_residual_bps(residual);
            }
        }
    }

    /// Gives back a booking, an allocated output id and admitted FIFO bytes on `out`.
    pub(super) fn release_held(
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
    pub(super) fn answer(&mut self, now: Instant, job: &InProgress, message: Message) {
        self.answer_with(now, job, message, None);
    }

    /// [`Switch::answer`] with a TLV (SETUP_OK's BOUND).
    fn answer_with(&mut self, now: Instant, job: &InProgress, message: Message, tlv: Option<Tlv>) {
        let mut repr = Repr::new(job.hop, job.key.request_id, message);
        if let Some(tlv) = tlv {
            repr.set_tlv(tlv);
        }
        // Bounded: at most a few answers per connection the switch can hold.
        if self.rt.answers.len() < self.config.rt.max_connections.saturating_mul(4) {
            let answer = Answer {
                reply: repr.clone(),
                sent: now,
                setup: job.setup,
                delay: job.delay,
            };
            self.rt.answers.insert(job.key, answer);
        }
        self.send_control(now, job.key.in_port, &repr);
    }

    /// SETUP_OK or SETUP_FAIL from downstream on `port`.
    fn on_setup_reply(&mut self, now: Instant, port: PortId, repr: &Repr) {
        let job = self
            .rt
            .in_progress
            .awaiting_reply(port, repr.request_id)
            .and_then(|id| self.rt.in_progress.remove(id));
        let Some(mut job) = job else {
            self.stats.signal.unmatched += 1;
            self.orphan_reply(now, port, repr);
            return;
        };
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
                let entry = self.entry(now, &job, out_port, out_id, None);
                let held = held(&job, booking, rt_bytes, now);
                // The BOUND goes upstream unchanged (Repr::parse checked its length).
                let bound = repr.bound().ok().flatten().map(BoundTlv::to_tlv);
                self.install(now, &job, entry, held, hops, bound);
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

    /// Lets SETUPs waiting for a route go on if their destination is now known.
    ///
    /// `heard` names what changed: the addresses an ARP packet bound and the MAC a frame came
    /// from; only the SETUPs waiting for those addresses (and for the addresses bound to that
    /// MAC) are looked at, never the whole table.
    pub(super) fn retry_routes(
        &mut self,
        now: Instant,
        ip: Option<Ipv4Addr>,
        mac: Option<Address>,
    ) {
        let mut ips: Vec<Ipv4Addr> = ip.into_iter().collect();
        if let Some(bound) = mac.and_then(|m| self.arp.ip_of(&m)) {
            if !ips.contains(&bound) {
                ips.push(bound);
            }
        }
        for ip in ips {
            self.retry_route_to(now, ip);
        }
    }

    /// Lets the SETUPs waiting for a route to `ip` go on if it is now known.
    pub(super) fn retry_route_to(&mut self, now: Instant, ip: Ipv4Addr) {
        if self.route(now, ip).is_none() {
            return;
        }
        for id in self.rt.in_progress.waiting_for(ip) {
            if let Some(job) = self.rt.in_progress.remove(id) {
                self.advance_setup(now, job);
            }
        }
    }

    /// Lets every SETUP waiting for a route go on whose destination is now known (after a
    /// change that is not about one address: a binding moved by `arp_guard`).
    pub(super) fn retry_all_routes(&mut self, now: Instant) {
        for id in self.rt.in_progress.all_waiting() {
            let ready = self
                .rt
                .in_progress
                .get(id)
                .is_some_and(|job| self.route(now, job.setup.dst_ip).is_some());
            if ready {
                if let Some(job) = self.rt.in_progress.remove(id) {
                    self.advance_setup(now, job);
                }
            }
        }
    }

    /// Signalling timers: HELLOs, route timeouts (NO_ROUTE), downstream retransmissions of
    /// SETUPs and TEARDOWNs.
    pub(super) fn signal_timeout(&mut self, now: Instant) {
        self.teardown_timeout(now);
        if self.timers.is_expired(SwitchTimer::Hello, now) {
            self.send_hellos(now);
            match self.config.rt.hello_interval {
                Some(interval) => self.timers.set(SwitchTimer::Hello, now + interval),
                None => self.timers.stop(SwitchTimer::Hello),
            }
        }
        while let Some(id) = self.rt.in_progress.first_due(now) {
            let Some(job) = self.rt.in_progress.get(id) else {
                break;
            };
            match job.wait {
                Wait::Route { .. } => {
                    if let Some(job) = self.rt.in_progress.remove(id) {
                        self.refuse(now, &job, FailReason::NoRoute);
                    }
                }
                Wait::Downstream {
                    out_port,
                    out_id,
                    request_id,
                    attempts,
                    ..
                } => {
                    if attempts >= self.config.rt.max_attempts {
                        self.give_up(now, id);
                        continue;
                    }
                    let backoff = self.config.rt.retransmit_initial * (1u32 << attempts.min(16));
                    let repr = downstream_setup(job, out_id, request_id, FLAG_RETRANSMISSION);
                    self.rt
                        .in_progress
                        .reschedule(id, attempts + 1, now + backoff);
                    self.stats.signal.setup_tx += 1;
                    self.stats.signal.setup_retransmits += 1;
                    self.send_control(now, out_port, &repr);
                }
            }
        }
    }

    /// The downstream switch never answered job `id`: release and refuse upstream
    /// (NO_ROUTE, naming the silent next hop).
    fn give_up(&mut self, now: Instant, id: super::setups::JobId) {
        let Some(mut job) = self.rt.in_progress.remove(id) else {
            return;
        };
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
        for index in 0..self.config.ports.len() {
            // Port counts are checked to fit in u16 by `Switch::new`.
            self.send_hello_on(now, PortId(index as u16));
        }
    }

    /// Sends a HELLO out of `port`, with the next HELLO sequence number.
    pub(super) fn send_hello_on(&mut self, now: Instant, port: PortId) {
        let Some(mac) = self.config.ports.get(usize::from(port.0)).map(|p| p.mac) else {
            return;
        };
        let seq = self.rt.hello_seq;
        self.rt.hello_seq = seq.wrapping_add(1);
        let hello = Message::Hello(HelloRepr {
            role: Role::Switch,
            port: port.0,
            mac,
            management_ip: self.config.mgmt_ip.unwrap_or(Ipv4Addr::UNSPECIFIED),
        });
        self.stats.signal.hello_tx += 1;
        self.send_control(now, port, &Repr::new(0, seq, hello));
    }
}

/// What `job`'s connection holds once installed at `now`.
fn held(job: &InProgress, booking: rt::Booking, rt_bytes: usize, now: Instant) -> Held {
    Held {
        booking,
        rt_bytes,
        latency_ns: job.terms.map_or(0, |t| t.latency_ns),
        bound_ns: job.terms.map_or(0, |t| t.bound_ns),
        dst_ip: job.setup.dst_ip,
        dst_port: job.setup.dst_port,
        hop: job.hop,
        last_refresh: now,
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
    // The latency so far, including this hop's (docs/protocol.md §6).
    let delay = DelayTlv {
        accumulated_ns: job
            .terms
            .map_or(job.delay.accumulated_ns, |t| t.accumulated_ns),
        ..job.delay
    };
    repr.set_tlv(delay.to_tlv());
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

    /// Real-time queue bytes admitted on `port` (sum of its connections' backlog bounds).
    pub fn rt_admitted_bytes(&self, port: PortId) -> usize {
        self.rt
            .rt_budget
            .get(usize::from(port.0))
            .copied()
            .unwrap_or(0)
    }

    /// Frames waiting in `port`'s real-time queues: the control FIFO plus every connection's
    /// queue (0 for an unknown port; O(connections on the port)).
    pub fn rt_queue_len(&self, port: PortId) -> usize {
        self.ports
            .get(usize::from(port.0))
            .map_or(0, |p| p.sched.control_queued() + p.sched.rt_queued_total())
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
