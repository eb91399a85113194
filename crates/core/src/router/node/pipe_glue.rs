//! The router's side of provisioned pipes (QSR paper §5; [`crate::router::pipes`]): the
//! operator's requests, the engine's splices and events for pipes started here, and the
//! receiver-proxy end of pipes that end here.

use super::*;

impl Router {
    /// The router's own address as a pipe sender: its first port's.
    fn pipe_router_id(&self) -> Ipv4Addr {
        self.config.ports[0].addr
    }

    /// The number of the pipe started here that a session's sender is.
    pub(super) fn pipe_of(&self, session: &Session, sender: &FilterSpec) -> Option<u16> {
        if !is_pipe_session(session) || sender.src_addr != self.pipe_router_id() {
            return None;
        }
        self.pipes
            .ingress
            .get(&sender.src_port)
            .filter(|p| p.session == *session)
            .map(|_| sender.src_port)
    }

    /// Starts a provisioned pipe: its Path goes towards the destination subnet, and once the
    /// egress router's reservation is back its filters switch packets onto it. Returns its
    /// number. A pipe whose destination has no route yet is kept and signalled once a route
    /// appears.
    pub fn create_pipe(&mut self, now: Instant, spec: PipeSpec) -> Result<u16, PipeError> {
        if self.rsvp.is_none() {
            return Err(PipeError::NoRsvp);
        }
        self.pipes.check_new(&spec)?;
        if self
            .tables
            .fib
            .lookup(spec.to.network())
            .is_some_and(|(_, r)| r.source == RouteSource::Connected)
            || self.config.ports.iter().any(|p| spec.to.contains(p.addr))
        {
            return Err(PipeError::DestinationAttached(spec.to));
        }
        let id = self.pipes.free_id().ok_or(PipeError::Full)?;
        let session = spec.session();
        let sender = spec.sender(self.pipe_router_id(), id);
        self.pipes.ingress.insert(
            id,
            IngressPipe {
                session,
                sender: sender.sender_template,
                spec,
                entry: None,
                out: None,
                refusal: None,
                counted: PipeCounters::default(),
                created: now,
                up_since: None,
            },
        );
        self.open_pipe(now, session, sender);
        Ok(id)
    }

    fn open_pipe(&mut self, now: Instant, session: Session, sender: SenderDescriptor) {
        self.drive_rsvp(now, |engine, routing, resources| {
            engine.open_sender(now, session, sender, routing, resources)
        });
    }

    /// Deletes the pipe started here named `name` (or numbered): PathTear along it, its
    /// filters out of the classifier. Returns its last status.
    pub fn delete_pipe(&mut self, now: Instant, name: &str) -> Result<PipeStatus, PipeError> {
        let id = self
            .pipes
            .find(name)
            .ok_or_else(|| PipeError::NotFound(name.to_string()))?;
        let status = self.ingress_status(now, id);
        let (session, sender) = {
            let p = &self.pipes.ingress[&id];
            (p.session, p.sender)
        };
        self.drive_rsvp(now, |engine, _, resources| {
            engine.close_sender(session, sender, resources)
        });
        self.pipe_unspliced(id);
        self.pipes.ingress.remove(&id);
        status.ok_or_else(|| PipeError::NotFound(name.to_string()))
    }

    /// Every pipe started or ended here, started ones first, by number.
    pub fn pipes(&self, now: Instant) -> Vec<PipeStatus> {
        let mut v: Vec<PipeStatus> = self
            .pipes
            .ingress
            .keys()
            .filter_map(|id| self.ingress_status(now, *id))
            .collect();
        v.extend(
            self.pipes
                .egress
                .values()
                .map(|e| self.egress_status(now, e)),
        );
        v
    }

    fn port_name(&self, port: PortId) -> Option<String> {
        self.config
            .ports
            .get(usize::from(port.0))
            .map(|p| p.name.clone())
    }

    fn ingress_status(&self, now: Instant, id: u16) -> Option<PipeStatus> {
        let p = self.pipes.ingress.get(&id)?;
        let has_path = self
            .rsvp
            .as_ref()
            .is_some_and(|e| e.has_path(p.session, p.sender));
        let state = if p.entry.is_some() {
            PipeState::Up
        } else if p.refusal.is_some() {
            PipeState::Refused
        } else if has_path {
            PipeState::Signalling
        } else {
            PipeState::NoRoute
        };
        let mut counters = p.counted;
        if let Some(e) = p.entry.and_then(|e| self.switched.ingress.get(&e)) {
            counters.add(e.counters);
        }
        Some(PipeStatus {
            role: "ingress",
            id,
            name: p.spec.name.clone(),
            ingress_router: p.sender.src_addr,
            from: p.spec.from.iter().map(ToString::to_string).collect(),
            to: p.spec.to.to_string(),
            service: p.spec.service,
            rate_bps: p.spec.rate_bps,
            burst_bytes: p.spec.burst_bytes,
            max_packet: p.spec.max_packet,
            state,
            refusal: p.refusal.as_ref().map(PipeRefusal::of),
            port: p.out.and_then(|(port, _)| self.port_name(port)),
            label: p.out.and_then(|(_, label)| label),
            counters,
            age_s: seconds(now, p.created),
            up_s: p.up_since.map(|t| seconds(now, t)),
        })
    }

    fn egress_status(&self, now: Instant, e: &EgressPipe) -> PipeStatus {
        let tspec = e.sender.sender_tspec;
        let prefix_len = self
            .tables
            .fib
            .lookup(e.session.dst_addr)
            .map_or(32, |(p, _)| p.prefix_len());
        let to = Ipv4Prefix::new(e.session.dst_addr, prefix_len)
            .map_or_else(|_| e.session.dst_addr.to_string(), |p| p.to_string());
        PipeStatus {
            role: "egress",
            id: e.sender.sender_template.src_port,
            name: String::new(),
            ingress_router: e.sender.sender_template.src_addr,
            from: Vec::new(),
            to,
            service: e.service(),
            rate_bps: (f64::from(tspec.rate.to_f32()) * 8.0) as u64,
            burst_bytes: f64::from(tspec.size.to_f32()) as u64,
            max_packet: tspec.max_packet_size,
            state: if e.port.is_some() {
                PipeState::Up
            } else {
                PipeState::Refused
            },
            refusal: e.refusal.as_ref().map(PipeRefusal::of),
            port: e.port.and_then(|p| self.port_name(p)),
            label: Some(e.in_label),
            counters: e.counters,
            age_s: seconds(now, e.since),
            up_s: e.port.map(|_| seconds(now, e.since)),
        }
    }

    /// The engine reserved a pipe started here: its filters go into the PSIP classifier,
    /// pointing at a fresh ingress entry that polices at the pipe's TSpec and pushes the label.
    pub(super) fn pipe_spliced(&mut self, now: Instant, s: &crate::rsvp::Splice) {
        let Some(id) = self.pipe_of(&s.session, &s.sender) else {
            return;
        };
        self.pipe_unspliced(id);
        let pipe = &self.pipes.ingress[&id];
        let (policer, min_policed_unit, max_packet) = switched::policer(&pipe.spec.tspec());
        let filters = pipe.spec.filters();
        let entry_id = self.switched.next_ingress;
        self.switched.next_ingress = entry_id.wrapping_add(1);
        self.switched.ingress.insert(
            entry_id,
            Ingress {
                out_port: s.out_port,
                next_hop: s.next_hop,
                out_label: s.out_label,
                resv: s.resv,
                policer,
                min_policed_unit,
                max_packet,
                counters: PipeCounters::default(),
            },
        );
        for f in filters {
            self.tables.psip.replace(f, entry_id);
        }
        if let Some(p) = self.pipes.ingress.get_mut(&id) {
            p.entry = Some(entry_id);
            p.out = Some((s.out_port, s.out_label));
            p.refusal = None;
            p.up_since = Some(now);
        }
        if let Lookup::Unresolved = self.neighbours.lookup(s.next_hop, s.out_port, now) {
            self.arp_request(now, s.out_port, s.next_hop);
        }
    }

    /// A pipe started here is no longer switched: its filters leave the classifier and its
    /// packets go as default IP.
    pub(super) fn pipe_unspliced(&mut self, id: u16) {
        let Some(p) = self.pipes.ingress.get_mut(&id) else {
            return;
        };
        p.out = None;
        p.up_since = None;
        let Some(entry_id) = p.entry.take() else {
            return;
        };
        let filters = p.spec.filters();
        if let Some(entry) = self.switched.ingress.remove(&entry_id) {
            p.counted.add(entry.counters);
        }
        for f in filters {
            if self.tables.psip.get(&f) == Some(&entry_id) {
                self.tables.psip.remove(&f);
            }
        }
    }

    /// What the engine told about pipes, once it is back in place.
    pub(super) fn on_pipe_event(&mut self, now: Instant, event: RsvpEvent) {
        match event {
            RsvpEvent::PathArrived { session, sender }
                if is_pipe_session(&session) && !self.is_own(session.dst_addr) =>
            {
                self.egress_arrived(now, session, sender);
            }
            RsvpEvent::PathGone { session, sender } if is_pipe_session(&session) => {
                if let Some(b) = self.pipes.egress_of(&session, &sender) {
                    self.egress_teardown(now, b);
                    self.drive_rsvp(now, |engine, _, resources| {
                        engine.release_sender(session, sender, resources)
                    });
                }
            }
            RsvpEvent::ResvError {
                session,
                senders,
                error,
            } if is_pipe_session(&session) => {
                // A hop upstream refused what this egress asked for: the ingress is told, so
                // that its operator sees which hop and why. Refreshes keep asking.
                for s in senders {
                    if let Some(b) = self.pipes.egress_of(&session, &s) {
                        if let Some(e) = self.pipes.egress.get_mut(&b) {
                            e.refusal = Some(error);
                        }
                        if let Some(engine) = self.rsvp.as_mut() {
                            engine.reject_path(session, s, error);
                        }
                    }
                }
                self.flush_rsvp(now);
            }
            RsvpEvent::PathError {
                session,
                sender,
                error,
            } => {
                if let Some(id) = self.pipe_of(&session, &sender) {
                    if let Some(p) = self.pipes.ingress.get_mut(&id) {
                        p.refusal = Some(error);
                    }
                }
            }
            RsvpEvent::Reserved {
                session, sender, ..
            } => {
                if let Some(id) = self.pipe_of(&session, &sender) {
                    if let Some(p) = self.pipes.ingress.get_mut(&id) {
                        p.refusal = None;
                    }
                }
                if let Some(b) = self.pipes.egress_of(&session, &sender) {
                    if let Some(e) = self.pipes.egress.get_mut(&b) {
                        e.refusal = None;
                    }
                }
            }
            _ => {}
        }
    }

    /// Sends what the engine has queued (after a call that needs no resources).
    fn flush_rsvp(&mut self, now: Instant) {
        self.drive_rsvp(now, |_, _, _| {});
    }

    /// A pipe's Path reached the router its destination subnet is attached to: book the pipe
    /// on that subnet's port, pop-and-route its label, and answer with the reservation.
    fn egress_arrived(&mut self, now: Instant, session: Session, sender: SenderDescriptor) {
        if PipeService::of_port(session.dst_port).is_none() {
            return;
        }
        let template = sender.sender_template;
        let input = self
            .rsvp
            .as_ref()
            .and_then(|e| e.path_input(session, template));
        let Some((in_port, in_label)) = input else {
            return;
        };
        let node = self.config.ports[usize::from(in_port.0)].addr;
        let reject = |router: &mut Router, code: ErrorCode| {
            let error = ErrorSpec {
                node,
                flags: 0,
                code,
                value: 0,
            };
            if let Some(engine) = router.rsvp.as_mut() {
                engine.reject_path(session, template, error);
            }
            router.flush_rsvp(now);
        };
        let peers = self
            .config
            .rsvp
            .as_ref()
            .map(|r| r.psip_peers.clone())
            .unwrap_or_default();
        let Some(in_label) = in_label else {
            // Not an rtlan router's path: a host may not book a pipe.
            return reject(self, ErrorCode::PolicyControlFailure);
        };
        if !peers.is_empty() && !peers.iter().any(|p| p.contains(template.src_addr)) {
            return reject(self, ErrorCode::PolicyControlFailure);
        }
        let port = match self.tables.fib.lookup(session.dst_addr) {
            Some((_, r)) if r.source == RouteSource::Connected => r.next_hop.port,
            _ => return reject(self, ErrorCode::NoPathInformation),
        };
        if let Some(b) = self.pipes.egress_of(&session, &template) {
            let same = self.pipes.egress.get(&b).is_some_and(|e| {
                e.in_port == in_port
                    && e.in_label == in_label
                    && e.sender.sender_tspec == sender.sender_tspec
                    && e.port == Some(port)
            });
            if same {
                // An ADSPEC change only: nothing to do here.
                if let Some(e) = self.pipes.egress.get_mut(&b) {
                    e.sender = sender;
                }
                return;
            }
            self.egress_teardown(now, b);
        }
        let booking = self.pipes.booking_id();
        self.pipes.egress.insert(
            booking,
            EgressPipe {
                session,
                sender,
                in_port,
                in_label,
                port: None,
                refusal: None,
                counters: PipeCounters::default(),
                since: now,
            },
        );
        self.egress_book(now, booking);
    }

    /// Books the egress end `booking` on its subnet's port and asks for the reservation; a
    /// refusal goes back to the ingress as a PathErr, and is asked again after a refresh
    /// period.
    fn egress_book(&mut self, now: Instant, booking: crate::rsvp::ResvId) {
        let Some(e) = self.pipes.egress.get(&booking) else {
            return;
        };
        let (session, sender, service, in_port, in_label) =
            (e.session, e.sender, e.service(), e.in_port, e.in_label);
        let template = sender.sender_template;
        let Some(port) = self
            .tables
            .fib
            .lookup(session.dst_addr)
            .filter(|(_, r)| r.source == RouteSource::Connected)
            .map(|(_, r)| r.next_hop.port)
        else {
            return;
        };
        let flowspec = service.flowspec(sender.sender_tspec);
        let node = self.config.ports[usize::from(port.0)].addr;
        let mut outcome = None;
        self.drive_rsvp(now, |engine, _, resources| {
            let request = ResvRequest {
                session: &session,
                flowspec: &flowspec,
                senders: &[template],
            };
            match resources.reserve(port, booking, &request) {
                Ok(()) => {
                    engine.reserve(
                        now,
                        session,
                        FlowDescriptors::FixedFilter(vec![(flowspec, template)]),
                        false,
                        resources,
                    );
                    outcome = Some(Ok(()));
                }
                Err(refusal) => {
                    let error = ErrorSpec {
                        node,
                        flags: 0,
                        code: refusal.code,
                        value: refusal.value,
                    };
                    engine.reject_path(session, template, error);
                    outcome = Some(Err(error));
                }
            }
        });
        match outcome {
            Some(Ok(())) => {
                self.switched.labels.insert(
                    (in_port, in_label),
                    LabelEntry {
                        out_port: port,
                        next_hop: session.dst_addr,
                        out_label: None,
                        resv: booking,
                        route_on_pop: true,
                    },
                );
                if let Some(e) = self.pipes.egress.get_mut(&booking) {
                    e.port = Some(port);
                    e.refusal = None;
                }
            }
            Some(Err(error)) => {
                if let Some(e) = self.pipes.egress.get_mut(&booking) {
                    e.refusal = Some(error);
                }
                let refresh = self
                    .config
                    .rsvp
                    .as_ref()
                    .map_or(std::time::Duration::from_secs(30), |r| r.refresh);
                let at = now + refresh;
                self.pipe_retry = Some(self.pipe_retry.map_or(at, |t| t.min(at)));
            }
            None => {}
        }
    }

    /// Undoes the egress end `booking`: its label, its booking, its record. The engine's
    /// reservation is the caller's to release (or keep, when the path is merely changing).
    fn egress_teardown(&mut self, now: Instant, booking: crate::rsvp::ResvId) {
        let Some(e) = self.pipes.egress.remove(&booking) else {
            return;
        };
        if self
            .switched
            .labels
            .get(&(e.in_port, e.in_label))
            .is_some_and(|l| l.resv == booking)
        {
            self.switched.labels.remove(&(e.in_port, e.in_label));
        }
        if let Some(port) = e.port {
            self.drive_rsvp(now, |_, _, resources| resources.release(port, booking));
        }
    }

    /// Timers of the pipes: refused egress ends asked again; after a route change, pipes that
    /// had no route signalled again.
    pub(super) fn pipe_timers(&mut self, now: Instant, routes_changed: bool) {
        if self.pipe_retry.is_some_and(|t| t <= now) {
            self.pipe_retry = None;
            let refused: Vec<_> = self
                .pipes
                .egress
                .iter()
                .filter(|(_, e)| e.port.is_none())
                .map(|(b, _)| *b)
                .collect();
            for b in refused {
                self.egress_book(now, b);
            }
        }
        if routes_changed {
            let lost: Vec<(Session, SenderDescriptor)> = self
                .pipes
                .ingress
                .iter()
                .filter(|(_, p)| {
                    !self
                        .rsvp
                        .as_ref()
                        .is_some_and(|e| e.has_path(p.session, p.sender))
                })
                .map(|(id, p)| (p.session, p.spec.sender(p.sender.src_addr, *id)))
                .collect();
            for (session, sender) in lost {
                self.open_pipe(now, session, sender);
            }
        }
    }

    /// When [`Router::pipe_timers`] is next due.
    pub(super) fn pipe_timeout(&self) -> Option<Instant> {
        self.pipe_retry
    }
}

fn seconds(now: Instant, since: Instant) -> f64 {
    now.saturating_duration_since(since).as_secs_f64()
}
