//! The discrete-event engine: an event heap ordered by `(time, sequence)` — the sequence is an
//! insertion counter, so the order of events is total and the same on every run — driving
//! nodes through the one node contract ([`rtlan_core::node`]) over full-duplex links of a rate
//! and a propagation delay (RETHER §5 simulates its segment the same way: stations, a medium
//! and traffic sources on virtual time).
//!
//! Events: a frame's last bit arrives at `(node, port)`; a node's timer (only the last instant
//! armed per node is live, older ones are skipped when they come up). After every event at a
//! node the engine follows the contract's call order: `handle_timeout` on its timer,
//! `poll_transmit` on each port whose line is idle (a frame then occupies the line for
//! [`tx_time`], the same wire cost the switch pacer charges, and arrives at the peer after that
//! plus the link's delay), and re-arms the node's timer at `poll_timeout` — or, when the node has
//! work only for a busy line, at the instant that line is idle. A line that goes idle with
//! nothing waiting costs no event: nodes pace themselves (full duplex), so a node with more to
//! send asks for the instant its pacer frees the line.
//!
//! Faults (issue 12: recovery measured in the simulator, EtheReal §5's fault tolerance): a
//! switch (or a router) crashes — it hears, sends and times nothing — and starts again from nothing with a new
//! boot epoch, exactly as `Switch::new` builds it; a link loses its carrier at both ends (each
//! end's `handle_link`, frames put on it dropped) and regains it.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::time::Duration;

use rtlan_core::node::{Node, PortId};
use rtlan_core::router::Router;
use rtlan_core::switch::{tx_time, Switch, MAX_FRAME_LEN};
use rtlan_core::time::Instant;

use crate::host::Host;
use crate::pcap::PcapSet;

/// A node of the simulated network.
#[derive(Debug)]
pub enum SimNode {
    /// An EtheReal switch (the real core).
    Switch(Box<Switch>),
    /// A host with its daemon and traffic.
    Host(Box<Host>),
    /// A QSR router (the real core, default IP forwarding with static routes).
    Router(Box<Router>),
}

impl SimNode {
    fn node(&mut self) -> &mut dyn Node {
        match self {
            SimNode::Switch(s) => s.as_mut(),
            SimNode::Host(h) => h.as_mut(),
            SimNode::Router(r) => r.as_mut(),
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        match self {
            SimNode::Switch(s) => s.poll_timeout(),
            SimNode::Host(h) => h.poll_timeout(),
            SimNode::Router(r) => r.poll_timeout(),
        }
    }
}

/// One end of a link as the engine sees it.
#[derive(Debug, Clone)]
pub(crate) struct PortEnd {
    /// The peer `(node, port)`.
    pub(crate) peer: (u32, u16),
    /// Line rate, bit/s.
    pub(crate) rate_bps: u64,
    /// Propagation delay.
    pub(crate) delay: Duration,
    /// Topology link index (pcap file).
    pub(crate) link: u32,
    /// The line from this end is busy until then (idle once `now >= busy_until`).
    busy_until: Instant,
    /// Whether the link has its carrier (a fault may take it away).
    up: bool,
}

impl PortEnd {
    pub(crate) fn new(peer: (u32, u16), rate_bps: u64, delay: Duration, link: u32) -> PortEnd {
        PortEnd {
            peer,
            rate_bps,
            delay,
            link,
            busy_until: Instant::ZERO,
            up: true,
        }
    }
}

/// What happens at an event. Kept small (the heap moves events around): a frame in flight
/// is an index into the engine's frame slab.
#[derive(Debug, Clone, Copy)]
enum EventKind {
    /// The last bit of slab frame `frame` arrives at `(node, port)`.
    Arrive { node: u32, port: u16, frame: u32 },
    /// The timer armed for `node`.
    Timer { node: u32 },
    /// Fault `index` of the engine's list happens.
    Fault { index: u32 },
}

/// A fault the engine carries out at its instant ([`Engine::schedule`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fault {
    /// `node` stops: arrivals are lost, its timer is dropped, it sends nothing.
    Crash { node: u32 },
    /// `node`, a crashed switch or router, starts again from nothing (a switch with boot epoch
    /// `epoch`; a router has none).
    Start { node: u32, epoch: u64 },
    /// The link between `a` and `b` (each `(node, port)`) loses (`up == false`) or regains its
    /// carrier.
    Link {
        a: (u32, u16),
        b: (u32, u16),
        up: bool,
    },
}

#[derive(Debug)]
struct Event {
    time: Instant,
    seq: u64,
    kind: EventKind,
}

/// Frames in flight: slots of [`MAX_FRAME_LEN`] bytes in one buffer, reused through a free
/// list, so a hop costs one copy (the node writes straight into its slot) and no allocation.
#[derive(Debug, Default)]
struct Slab {
    bytes: Vec<u8>,
    lens: Vec<u16>,
    free: Vec<u32>,
}

impl Slab {
    fn alloc(&mut self) -> u32 {
        if let Some(i) = self.free.pop() {
            return i;
        }
        self.bytes.resize(self.bytes.len() + MAX_FRAME_LEN, 0);
        self.lens.push(0);
        (self.lens.len() - 1) as u32
    }

    /// Slot `i`, whole.
    fn slot_mut(&mut self, i: u32) -> &mut [u8] {
        let start = i as usize * MAX_FRAME_LEN;
        &mut self.bytes[start..start + MAX_FRAME_LEN]
    }

    /// The frame in slot `i`.
    fn frame(&self, i: u32) -> &[u8] {
        let start = i as usize * MAX_FRAME_LEN;
        &self.bytes[start..start + usize::from(self.lens[i as usize])]
    }
}

impl PartialEq for Event {
    fn eq(&self, other: &Event) -> bool {
        (self.time, self.seq) == (other.time, other.seq)
    }
}
impl Eq for Event {}
impl PartialOrd for Event {
    fn partial_cmp(&self, other: &Event) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Event {
    /// Reversed, so that the max-heap pops the earliest `(time, seq)` first.
    fn cmp(&self, other: &Event) -> Ordering {
        (other.time, other.seq).cmp(&(self.time, self.seq))
    }
}

/// Engine counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct EngineStats {
    /// Events handled (stale timers not counted).
    pub events: u64,
    /// Frame arrivals handled.
    pub arrivals: u64,
    /// Timer events handled.
    pub timers: u64,
    /// Frames put on a line.
    pub frames: u64,
    /// Stale timer events skipped.
    pub stale_timers: u64,
    /// Times a node reported work due now with all its lines idle after being served (it is
    /// then woken 1 ns later; non-zero means a node broke its contract).
    pub contract_wakeups: u64,
    /// Faults carried out.
    pub faults: u64,
    /// Frames lost to faults: arriving at a crashed node, or put on a link without carrier.
    pub fault_drops: u64,
}

/// The network on virtual time.
#[derive(Debug)]
pub struct Engine {
    pub(crate) now: Instant,
    pub(crate) nodes: Vec<SimNode>,
    /// Ports of node `n` are `ports[first_port[n] ..first_port[n + 1]]`.
    first_port: Vec<usize>,
    ports: Vec<PortEnd>,
    armed: Vec<Option<Instant>>,
    heap: BinaryHeap<Event>,
    seq: u64,
    slab: Slab,
    pub(crate) stats: EngineStats,
    pcap: Option<PcapSet>,
    /// Scheduled faults, by index.
    faults: Vec<Fault>,
    /// Per node: crashed (a fault), until it starts again.
    down: Vec<bool>,
    /// Per node, when measured ([`Engine::measure_node_time`]): wall-clock time spent on its
    /// events — its `handle_*` and `poll_*` calls and the engine's work on their frames.
    /// Never part of the results (they stay byte-identical run to run).
    node_time: Option<Vec<std::time::Duration>>,
}

impl Engine {
    /// An engine over `nodes`, whose ports (in node order, then port order) are `ports`.
    pub(crate) fn new(nodes: Vec<SimNode>, node_ports: Vec<Vec<PortEnd>>) -> Engine {
        let mut first_port = Vec::with_capacity(nodes.len() + 1);
        let mut ports = Vec::new();
        for p in node_ports {
            first_port.push(ports.len());
            ports.extend(p);
        }
        first_port.push(ports.len());
        let count = nodes.len();
        Engine {
            now: Instant::ZERO,
            nodes,
            first_port,
            ports,
            armed: vec![None; count],
            heap: BinaryHeap::new(),
            seq: 0,
            slab: Slab::default(),
            stats: EngineStats::default(),
            pcap: None,
            faults: Vec::new(),
            down: vec![false; count],
            node_time: None,
        }
    }

    /// From now on, adds up the wall-clock time spent on each node's events.
    pub(crate) fn measure_node_time(&mut self) {
        if self.node_time.is_none() {
            self.node_time = Some(vec![std::time::Duration::ZERO; self.nodes.len()]);
        }
    }

    /// Wall-clock time spent on node `node`'s events since [`Engine::measure_node_time`].
    pub(crate) fn node_time(&self, node: usize) -> Option<std::time::Duration> {
        self.node_time.as_ref()?.get(node).copied()
    }

    fn clock(&self) -> Option<std::time::Instant> {
        self.node_time.as_ref().map(|_| std::time::Instant::now())
    }

    fn charge(&mut self, node: u32, since: Option<std::time::Instant>) {
        if let (Some(times), Some(since)) = (self.node_time.as_mut(), since) {
            if let Some(t) = times.get_mut(node as usize) {
                *t += since.elapsed();
            }
        }
    }

    /// Schedules `fault` at `at`.
    pub(crate) fn schedule(&mut self, at: Instant, fault: Fault) {
        let index = self.faults.len() as u32;
        self.faults.push(fault);
        self.push(at, EventKind::Fault { index });
    }

    /// The `(node, port)` pair of a port end index.
    fn port_of(&self, node: u32, port: u16) -> Option<usize> {
        let first = *self.first_port.get(node as usize)?;
        let end = *self.first_port.get(node as usize + 1)?;
        let p = first + usize::from(port);
        (p < end).then_some(p)
    }

    fn fault(&mut self, fault: Fault) {
        self.stats.faults += 1;
        let now = self.now;
        match fault {
            Fault::Crash { node } => {
                self.down[node as usize] = true;
                self.armed[node as usize] = None;
            }
            Fault::Start { node, epoch } => {
                let index = node as usize;
                let fresh = match &self.nodes[index] {
                    SimNode::Switch(old) => {
                        let mut config = old.config().clone();
                        config.rt.epoch = epoch;
                        Switch::new(config, now)
                            .ok()
                            .map(|s| SimNode::Switch(Box::new(s)))
                    }
                    SimNode::Router(old) => Router::new(old.config().clone(), now)
                        .ok()
                        .map(|r| SimNode::Router(Box::new(r))),
                    SimNode::Host(_) => None,
                };
                let Some(fresh) = fresh else {
                    return;
                };
                self.nodes[index] = fresh;
                self.down[index] = false;
                // A new process finds its links as they are.
                let (first, end) = (self.first_port[index], self.first_port[index + 1]);
                for p in first..end {
                    if !self.ports[p].up {
                        let port = PortId((p - first) as u16);
                        self.nodes[index].node().handle_link(now, port, false);
                    }
                }
                self.service(node, true);
            }
            Fault::Link { a, b, up } => {
                for (node, port) in [a, b] {
                    if let Some(p) = self.port_of(node, port) {
                        self.ports[p].up = up;
                    }
                }
                for (node, port) in [a, b] {
                    if !self.down[node as usize] {
                        self.nodes[node as usize]
                            .node()
                            .handle_link(now, PortId(port), up);
                        self.service(node, false);
                    }
                }
            }
        }
    }

    /// Writes one pcap per link into `dir`.
    pub(crate) fn set_pcap(&mut self, pcap: PcapSet) {
        self.pcap = Some(pcap);
    }

    /// Finishes the pcap files.
    pub(crate) fn finish_pcap(&mut self) -> std::io::Result<Vec<u64>> {
        match self.pcap.take() {
            Some(p) => p.finish(),
            None => Ok(Vec::new()),
        }
    }

    fn push(&mut self, time: Instant, kind: EventKind) {
        self.seq += 1;
        self.heap.push(Event {
            time,
            seq: self.seq,
            kind,
        });
    }

    /// Arms every node's first timer.
    pub(crate) fn start(&mut self) {
        for node in 0..self.nodes.len() {
            self.service(node as u32, true);
        }
    }

    /// Runs until virtual time `until` (events at `until` included); `progress` is called now
    /// and then with the current virtual time.
    pub(crate) fn run_until(&mut self, until: Instant, progress: &mut dyn FnMut(Instant)) {
        let mut next_report = self.now;
        while let Some(event) = self.heap.peek() {
            if event.time > until {
                break;
            }
            let Some(event) = self.heap.pop() else {
                break;
            };
            self.now = event.time;
            match event.kind {
                EventKind::Arrive { node, port, frame } => {
                    self.stats.events += 1;
                    self.stats.arrivals += 1;
                    if self.down[node as usize] {
                        self.stats.fault_drops += 1;
                        self.slab.free.push(frame);
                        continue;
                    }
                    let since = self.clock();
                    if let Some(n) = self.nodes.get_mut(node as usize) {
                        n.node()
                            .handle_frame(self.now, PortId(port), self.slab.frame(frame));
                    }
                    self.slab.free.push(frame);
                    self.service(node, false);
                    self.charge(node, since);
                }
                EventKind::Fault { index } => {
                    self.stats.events += 1;
                    if let Some(&fault) = self.faults.get(index as usize) {
                        self.fault(fault);
                    }
                }
                EventKind::Timer { node } => {
                    if self.armed[node as usize] != Some(self.now) || self.down[node as usize] {
                        self.stats.stale_timers += 1;
                        continue;
                    }
                    self.stats.events += 1;
                    self.stats.timers += 1;
                    self.armed[node as usize] = None;
                    let since = self.clock();
                    self.service(node, true);
                    self.charge(node, since);
                }
            }
            if self.now >= next_report {
                progress(self.now);
                next_report = self.now + Duration::from_millis(10);
            }
        }
        self.now = self.now.max(until);
    }

    /// The contract's call order for one node at `now`: `handle_timeout` when its timer came
    /// (`timer`; a timer due at an instant is always served by its own event, which the heap
    /// orders before any later one), `poll_transmit` on each idle line, then re-arm.
    fn service(&mut self, node: u32, timer: bool) {
        let now = self.now;
        let index = node as usize;
        let (first, end) = (self.first_port[index], self.first_port[index + 1]);
        if timer {
            self.nodes[index].node().handle_timeout(now);
        }
        // The earliest instant a busy line of this node becomes idle.
        let mut line_free: Option<Instant> = None;
        for p in first..end {
            let busy_until = self.ports[p].busy_until;
            if busy_until > now {
                line_free = Some(line_free.map_or(busy_until, |t| t.min(busy_until)));
                continue;
            }
            let port = PortId((p - first) as u16);
            let slot = self.slab.alloc();
            let buf = self.slab.slot_mut(slot);
            let Some(len) = self.nodes[index].node().poll_transmit(now, port, buf) else {
                self.slab.free.push(slot);
                continue;
            };
            if !self.ports[p].up {
                // No carrier: what the node sends goes nowhere and takes no line time.
                loop {
                    self.stats.fault_drops += 1;
                    let buf = self.slab.slot_mut(slot);
                    if self.nodes[index]
                        .node()
                        .poll_transmit(now, port, buf)
                        .is_none()
                    {
                        break;
                    }
                }
                self.slab.free.push(slot);
                continue;
            }
            // `poll_transmit` returns at most the buffer's length, MAX_FRAME_LEN < 65536.
            self.slab.lens[slot as usize] = len.min(MAX_FRAME_LEN) as u16;
            self.stats.frames += 1;
            let end_ = &mut self.ports[p];
            let tx = tx_time(len, end_.rate_bps);
            end_.busy_until = now + tx;
            line_free = Some(line_free.map_or(now + tx, |t| t.min(now + tx)));
            let (peer, delay, link) = (end_.peer, end_.delay, end_.link);
            if let Some(pcap) = self.pcap.as_mut() {
                pcap.record(link, now, self.slab.frame(slot));
            }
            self.push(
                now + tx + delay,
                EventKind::Arrive {
                    node: peer.0,
                    port: peer.1,
                    frame: slot,
                },
            );
        }
        let next = self.nodes[index].poll_timeout();
        let next = match next {
            Some(t) if t <= now => {
                if let Some(free) = line_free {
                    // Work waits for a busy line: serve the node when the first one is idle.
                    Some(free)
                } else if timer {
                    // `handle_timeout` ran and work is still due: the node broke its contract.
                    self.stats.contract_wakeups += 1;
                    Some(now + Duration::from_nanos(1))
                } else {
                    // Work became due while handling a frame: run the timer in this instant.
                    Some(now)
                }
            }
            other => other,
        };
        if let Some(t) = next {
            if self.armed[index] != Some(t) {
                self.armed[index] = Some(t);
                self.push(t, EventKind::Timer { node });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_pop_by_time_then_insertion_order() {
        let mut heap = BinaryHeap::new();
        let at = |t: u64, seq: u64| Event {
            time: Instant::from_nanos(t),
            seq,
            kind: EventKind::Timer { node: seq as u32 },
        };
        heap.push(at(5, 1));
        heap.push(at(3, 2));
        heap.push(at(5, 3));
        heap.push(at(3, 4));
        let order: Vec<u64> = std::iter::from_fn(|| heap.pop().map(|e| e.seq)).collect();
        assert_eq!(order, vec![2, 4, 1, 3]);
    }
}
