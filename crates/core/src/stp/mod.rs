//! A sans-IO spanning tree bridge engine: the Spanning Tree Algorithm and Protocol of IEEE
//! 802.1D-1998 clause 8 — the protocol the Linux kernel bridge runs with `stp_state 1` — so that
//! rtlan switches can be wired in loops, next to Linux bridges (EtheReal §6 leaves spanning tree
//! as future work). docs/stp.md says how the switch uses it and how RSTP (802.1D-2004 clause 17)
//! will extend it.
//!
//! The procedures follow the standard's elements of procedure (§8.6–8.8) in the shape of the
//! kernel's `net/bridge/br_stp*.c`: root selection and designated port selection over the
//! stored port priority vectors, port states Blocking → Listening → Learning → Forwarding paced
//! by Forward Delay, received information aged out by Max Age, Topology Change Notification
//! towards the root and the Topology Change flag from it (which shortens the ageing of learnt
//! addresses to Forward Delay). Two deliberate differences from the kernel, both allowed by the
//! standard's wording and both harmless to a kernel neighbour: a port that leaves Forwarding or
//! Learning because its link went down starts topology change detection (the kernel does not;
//! the switch must re-signal reservations over that port anyway), and a BPDU that is our own,
//! looped back, or whose message age is not below its max age is discarded (802.1D-2004 §9.3.4).
//! RST BPDUs are discarded and counted, as the kernel does: an RSTP neighbour hears our
//! Configuration BPDUs and falls back to STP on that link.
//!
//! # Driver call order
//!
//! Build with [`Bridge::new`] at some `now`, then repeat:
//!
//! 1. [`Bridge::handle_bpdu`] for each BPDU received on a port (parse with
//!    `rtlan_wire::stp::parse_frame`), [`Bridge::handle_link`] on each carrier change;
//! 2. [`Bridge::handle_timeout`] once [`Bridge::poll_timeout`] has come (early is harmless);
//! 3. [`Bridge::poll_transmit`] until `None`, sending each BPDU on its port from the port's MAC
//!    (`Repr::emit_frame`) — also on ports that are not forwarding;
//! 4. [`Bridge::poll_event`] until `None`, applying port states to the data plane
//!    (forward/learn only as [`PortState`] allows), flushing or fast-ageing the learning table on
//!    [`Event::TopologyChange`];
//! 5. sleep until the next frame, carrier change or [`Bridge::poll_timeout`].

mod config;

use std::collections::VecDeque;
use std::time::Duration;

use rtlan_wire::stp::{BridgeId, Config, Flags, PortIdentifier, Repr, Time};

pub use config::{BridgeConfig, ConfigError, PortConfig, Timers};

use crate::node::PortId;
use crate::time::Instant;
use crate::timer::{TimerKind, TimerTable};

/// What a port does with data frames (802.1D-1998 §8.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub enum PortState {
    /// Link down (or administratively off): no BPDUs, no data.
    Disabled,
    /// Receives BPDUs; neither forwards nor learns.
    Blocking,
    /// On its way to Forwarding, first Forward Delay: BPDUs only.
    Listening,
    /// Second Forward Delay: learns source addresses, does not forward.
    Learning,
    /// Forwards and learns.
    Forwarding,
}

impl PortState {
    /// Whether data frames may be received from and sent to this port.
    pub fn forwards(self) -> bool {
        self == PortState::Forwarding
    }

    /// Whether source addresses of frames received on this port may be learnt.
    pub fn learns(self) -> bool {
        matches!(self, PortState::Learning | PortState::Forwarding)
    }
}

/// What the switch around the engine must react to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// `port` changed state. A port leaving Forwarding breaks the reservations routed over it.
    PortStateChanged {
        /// The port.
        port: PortId,
        /// Its new state.
        state: PortState,
    },
    /// The bridge's root or its root port changed.
    RootChanged {
        /// The root bridge now believed in (this bridge's own id when it is the root).
        root: BridgeId,
        /// The port towards it (`None` when this bridge is the root).
        root_port: Option<PortId>,
    },
    /// The topology changed somewhere (the Topology Change flag rose): age learnt addresses with
    /// [`Bridge::ageing_time`] (Forward Delay) instead of the normal time until
    /// [`Event::TopologyChangeEnded`], and re-check reservations (paths may have moved).
    TopologyChange,
    /// The Topology Change flag fell: normal ageing again.
    TopologyChangeEnded,
}

/// Counters of BPDUs in and out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Stats {
    /// Configuration BPDUs accepted.
    pub rx_config: u64,
    /// TCN BPDUs accepted.
    pub rx_tcn: u64,
    /// BPDUs discarded: unknown port, disabled port, RST BPDU, message age not below max age,
    /// our own BPDU looped back.
    pub rx_discarded: u64,
    /// Configuration BPDUs sent.
    pub tx_config: u64,
    /// TCN BPDUs sent.
    pub tx_tcn: u64,
}

/// The bridge-level timers (§8.5.4); per-port timers live in [`Port`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BridgeTimer {
    Hello,
    TopologyChangeNotification,
    TopologyChange,
}

impl TimerKind for BridgeTimer {
    const ALL: &'static [Self] = &[
        BridgeTimer::Hello,
        BridgeTimer::TopologyChangeNotification,
        BridgeTimer::TopologyChange,
    ];

    fn index(self) -> usize {
        self as usize
    }
}

/// How much older than received a relayed BPDU's message age is made (the standard's "message
/// age increment overestimate"). RSTP counts whole seconds (802.1D-2004 §17.19.22), which also
/// bounds the diameter to max age / 1 s hops; we do the same.
const MESSAGE_AGE_INCREMENT: Duration = Duration::from_secs(1);

/// The per-port variables of §8.5.5.
#[derive(Debug, Clone)]
struct Port {
    port_id: PortIdentifier,
    path_cost: u32,
    state: PortState,
    designated_root: BridgeId,
    designated_cost: u32,
    designated_bridge: BridgeId,
    designated_port: PortIdentifier,
    topology_change_ack: bool,
    config_pending: bool,
    /// When the stored information arrived and the message age it carried.
    info_received: (Instant, Duration),
    message_age_timer: Option<Instant>,
    forward_delay_timer: Option<Instant>,
    hold_timer: Option<Instant>,
}

/// A spanning tree bridge (see the module docs for the driver call order).
#[derive(Debug, Clone)]
pub struct Bridge {
    bridge_id: BridgeId,
    timers: Timers,
    designated_root: BridgeId,
    root_path_cost: u32,
    root_port: Option<usize>,
    max_age: Duration,
    hello_time: Duration,
    forward_delay: Duration,
    topology_change_detected: bool,
    topology_change: bool,
    table: TimerTable<BridgeTimer, 3>,
    ports: Vec<Port>,
    transmit: VecDeque<(PortId, Repr)>,
    events: VecDeque<Event>,
    stats: Stats,
}

fn port_id(index: usize) -> PortId {
    // `Bridge::new` refuses more than 4095 ports, so every index fits.
    PortId(u16::try_from(index).expect("at most 4095 ports"))
}

impl Bridge {
    /// A bridge starting at `now` (802.1D-1998 §8.8.1 Initialisation): it believes itself root,
    /// every port whose link is up is designated and starts Listening, and a first Configuration
    /// BPDU is queued on each.
    pub fn new(config: BridgeConfig, now: Instant) -> Result<Bridge, ConfigError> {
        config.timers.validate()?;
        if config.ports.len() > 4095 {
            return Err(ConfigError::TooManyPorts(config.ports.len()));
        }
        if let Some(i) = config.ports.iter().position(|p| p.path_cost == 0) {
            return Err(ConfigError::ZeroPathCost(i));
        }
        let bridge_id = BridgeId {
            priority: config.priority,
            addr: config.addr,
        };
        let ports = config
            .ports
            .iter()
            .enumerate()
            .map(|(i, p)| Port {
                // At most 4095 ports, so the number fits in 12 bits.
                port_id: PortIdentifier::new(p.priority, u16::try_from(i + 1).unwrap_or(0)),
                path_cost: p.path_cost,
                state: PortState::Disabled,
                designated_root: bridge_id,
                designated_cost: 0,
                designated_bridge: bridge_id,
                designated_port: PortIdentifier::default(),
                topology_change_ack: false,
                config_pending: false,
                info_received: (now, Duration::ZERO),
                message_age_timer: None,
                forward_delay_timer: None,
                hold_timer: None,
            })
            .collect();
        let mut bridge = Bridge {
            bridge_id,
            timers: config.timers,
            designated_root: bridge_id,
            root_path_cost: 0,
            root_port: None,
            max_age: config.timers.max_age,
            hello_time: config.timers.hello_time,
            forward_delay: config.timers.forward_delay,
            topology_change_detected: false,
            topology_change: false,
            table: TimerTable::new(),
            ports,
            transmit: VecDeque::new(),
            events: VecDeque::new(),
            stats: Stats::default(),
        };
        for i in 0..bridge.ports.len() {
            bridge.become_designated_port(i);
            if config.ports[i].up {
                bridge.init_port(i);
            }
        }
        bridge.port_state_selection(now);
        bridge.config_bpdu_generation(now);
        bridge
            .table
            .set(BridgeTimer::Hello, now + bridge.hello_time);
        Ok(bridge)
    }

    // ----- inputs -----

    /// A BPDU received on `port` at `now` (§8.7.1, §8.7.2). Discarded and counted: a port out
    /// of range or disabled, an RST BPDU, a Configuration BPDU whose message age is not below its
    /// max age or that is our own (same bridge and port id). Never panics.
    pub fn handle_bpdu(&mut self, now: Instant, port: PortId, bpdu: &Repr) {
        let p = usize::from(port.0);
        let usable = self
            .ports
            .get(p)
            .is_some_and(|pt| pt.state != PortState::Disabled);
        match bpdu {
            Repr::Config(config) if usable && self.valid_config(p, config) => {
                self.stats.rx_config += 1;
                self.received_config_bpdu(now, p, config);
            }
            Repr::Tcn if usable => {
                self.stats.rx_tcn += 1;
                if self.is_designated_port(p) {
                    self.topology_change_detection(now);
                    self.ports[p].topology_change_ack = true;
                    self.transmit_config(now, p);
                }
            }
            _ => self.stats.rx_discarded += 1,
        }
    }

    /// The carrier of `port` went up or down at `now` (§8.8.2 Enable Port, §8.8.3 Disable Port).
    pub fn handle_link(&mut self, now: Instant, port: PortId, up: bool) {
        let p = usize::from(port.0);
        let Some(state) = self.ports.get(p).map(|pt| pt.state) else {
            return;
        };
        if up {
            if state == PortState::Disabled {
                self.init_port(p);
                self.port_state_selection(now);
            }
            return;
        }
        if state == PortState::Disabled {
            return;
        }
        let was_root = self.is_root_bridge();
        self.become_designated_port(p);
        self.set_state(p, PortState::Disabled);
        let pt = &mut self.ports[p];
        pt.topology_change_ack = false;
        pt.config_pending = false;
        pt.message_age_timer = None;
        pt.forward_delay_timer = None;
        pt.hold_timer = None;
        self.configuration_update();
        self.port_state_selection(now);
        if self.is_root_bridge() && !was_root {
            self.become_root_bridge(now);
        }
        if state.learns() {
            self.topology_change_detection(now);
        }
    }

    /// Runs every timer due at `now` (§8.7.5–8.7.8).
    pub fn handle_timeout(&mut self, now: Instant) {
        while let Some(kind) = self.table.poll_expired(now) {
            match kind {
                BridgeTimer::Hello => {
                    if self.is_root_bridge() {
                        self.config_bpdu_generation(now);
                        self.table
                            .set(BridgeTimer::Hello, now + self.timers.hello_time);
                    }
                }
                BridgeTimer::TopologyChangeNotification if !self.is_root_bridge() => {
                    self.transmit_tcn();
                    self.table.set(
                        BridgeTimer::TopologyChangeNotification,
                        now + self.timers.hello_time,
                    );
                }
                BridgeTimer::TopologyChangeNotification => {}
                BridgeTimer::TopologyChange => {
                    self.topology_change_detected = false;
                    self.set_topology_change(false);
                }
            }
        }
        // Each port timer either stops or re-arms strictly later unless a neighbour's timers
        // are zero; the bound keeps even that finite.
        for _ in 0..4 * self.ports.len() + 4 {
            let mut fired = false;
            for p in 0..self.ports.len() {
                let due = |t: Option<Instant>| t.is_some_and(|at| at <= now);
                if due(self.ports[p].message_age_timer) {
                    self.ports[p].message_age_timer = None;
                    self.message_age_expiry(now, p);
                    fired = true;
                }
                if due(self.ports[p].forward_delay_timer) {
                    self.ports[p].forward_delay_timer = None;
                    self.forward_delay_expiry(now, p);
                    fired = true;
                }
                if due(self.ports[p].hold_timer) {
                    self.ports[p].hold_timer = None;
                    if self.ports[p].config_pending {
                        self.transmit_config(now, p);
                    }
                    fired = true;
                }
            }
            if !fired {
                break;
            }
        }
    }

    // ----- outputs -----

    /// The next BPDU to send, and the port to send it on.
    pub fn poll_transmit(&mut self) -> Option<(PortId, Repr)> {
        self.transmit.pop_front()
    }

    /// The next event for the switch.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// The earliest instant a timer is due, `None` when none is armed.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let ports = self.ports.iter().flat_map(|p| {
            [p.message_age_timer, p.forward_delay_timer, p.hold_timer]
                .into_iter()
                .flatten()
        });
        ports.chain(self.table.next()).min()
    }

    // ----- queries -----

    /// The state of `port` (`Disabled` for a port out of range).
    pub fn port_state(&self, port: PortId) -> PortState {
        self.ports
            .get(usize::from(port.0))
            .map_or(PortState::Disabled, |p| p.state)
    }

    /// This bridge's identifier.
    pub fn bridge_id(&self) -> BridgeId {
        self.bridge_id
    }

    /// The root bridge this bridge believes in.
    pub fn root_id(&self) -> BridgeId {
        self.designated_root
    }

    /// This bridge's cost to the root.
    pub fn root_path_cost(&self) -> u32 {
        self.root_path_cost
    }

    /// The port towards the root (`None` at the root).
    pub fn root_port(&self) -> Option<PortId> {
        self.root_port.map(port_id)
    }

    /// Whether this bridge is the root.
    pub fn is_root_bridge(&self) -> bool {
        self.designated_root == self.bridge_id
    }

    /// Whether the Topology Change flag is set (learnt from the root, or set here at the root).
    pub fn topology_change(&self) -> bool {
        self.topology_change
    }

    /// The ageing time the learning table must use now: Forward Delay while the Topology Change
    /// flag is set (§8.3.5), `None` (the switch's normal ageing) otherwise.
    pub fn ageing_time(&self) -> Option<Duration> {
        self.topology_change.then_some(self.forward_delay)
    }

    /// The Forward Delay in use (the root's).
    pub fn forward_delay(&self) -> Duration {
        self.forward_delay
    }

    /// The Max Age in use (the root's).
    pub fn max_age(&self) -> Duration {
        self.max_age
    }

    /// BPDU counters.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    // ----- elements of procedure (§8.6) -----

    fn valid_config(&self, p: usize, c: &Config) -> bool {
        c.message_age < c.max_age
            && !(c.bridge_id == self.bridge_id && c.port_id == self.ports[p].port_id)
    }

    fn received_config_bpdu(&mut self, now: Instant, p: usize, c: &Config) {
        let was_root = self.is_root_bridge();
        if self.supersedes_port_info(p, c) {
            self.record_config_information(now, p, c);
            self.configuration_update();
            self.port_state_selection(now);
            if was_root && !self.is_root_bridge() {
                self.table.stop(BridgeTimer::Hello);
                if self.topology_change_detected {
                    self.table.stop(BridgeTimer::TopologyChange);
                    self.transmit_tcn();
                    self.table.set(
                        BridgeTimer::TopologyChangeNotification,
                        now + self.timers.hello_time,
                    );
                }
            }
            if self.root_port == Some(p) {
                self.max_age = c.max_age.to_duration();
                self.hello_time = c.hello_time.to_duration();
                self.forward_delay = c.forward_delay.to_duration();
                self.set_topology_change(c.flags.topology_change());
                self.config_bpdu_generation(now);
                if c.flags.topology_change_ack() {
                    self.topology_change_detected = false;
                    self.table.stop(BridgeTimer::TopologyChangeNotification);
                }
            }
        } else if self.is_designated_port(p) {
            // A worse BPDU on a LAN we are designated for: answer with ours (§8.6.2.3 reply).
            self.transmit_config(now, p);
        }
    }

    /// §8.6.2.2: whether `c` is better than, or an update from the sender of, port `p`'s info.
    fn supersedes_port_info(&self, p: usize, c: &Config) -> bool {
        let pt = &self.ports[p];
        let theirs = (c.root_id, c.root_path_cost, c.bridge_id);
        let stored = (pt.designated_root, pt.designated_cost, pt.designated_bridge);
        if theirs != stored {
            return theirs < stored;
        }
        c.bridge_id != self.bridge_id || c.port_id <= pt.designated_port
    }

    fn record_config_information(&mut self, now: Instant, p: usize, c: &Config) {
        let age = c.message_age.to_duration();
        let pt = &mut self.ports[p];
        pt.designated_root = c.root_id;
        pt.designated_cost = c.root_path_cost;
        pt.designated_bridge = c.bridge_id;
        pt.designated_port = c.port_id;
        pt.info_received = (now, age);
        pt.message_age_timer = Some(now + c.max_age.to_duration().saturating_sub(age));
    }

    fn is_designated_port(&self, p: usize) -> bool {
        let pt = &self.ports[p];
        pt.designated_bridge == self.bridge_id && pt.designated_port == pt.port_id
    }

    fn become_designated_port(&mut self, p: usize) {
        let (root, cost, id) = (self.designated_root, self.root_path_cost, self.bridge_id);
        let pt = &mut self.ports[p];
        pt.designated_root = root;
        pt.designated_cost = cost;
        pt.designated_bridge = id;
        pt.designated_port = pt.port_id;
    }

    fn init_port(&mut self, p: usize) {
        self.become_designated_port(p);
        self.set_state(p, PortState::Blocking);
        self.ports[p].topology_change_ack = false;
        self.ports[p].config_pending = false;
    }

    /// §8.6.7 + §8.6.8, and the RootChanged event.
    fn configuration_update(&mut self) {
        let before = (self.designated_root, self.root_port);
        self.root_selection();
        for p in 0..self.ports.len() {
            if self.ports[p].state != PortState::Disabled && self.should_become_designated(p) {
                self.become_designated_port(p);
            }
        }
        if before != (self.designated_root, self.root_port) {
            self.events.push_back(Event::RootChanged {
                root: self.designated_root,
                root_port: self.root_port(),
            });
        }
    }

    /// §8.6.8 Root Selection: the port with the best (root, cost + path cost, designated
    /// bridge, designated port, own port id) among non-designated enabled ports whose root is
    /// better than this bridge.
    fn root_selection(&mut self) {
        let key = |pt: &Port| {
            (
                pt.designated_root,
                pt.designated_cost.saturating_add(pt.path_cost),
                pt.designated_bridge,
                pt.designated_port,
                pt.port_id,
            )
        };
        self.root_port = (0..self.ports.len())
            .filter(|&p| {
                let pt = &self.ports[p];
                !self.is_designated_port(p)
                    && pt.state != PortState::Disabled
                    && pt.designated_root < self.bridge_id
            })
            .min_by_key(|&p| key(&self.ports[p]));
        match self.root_port {
            None => {
                self.designated_root = self.bridge_id;
                self.root_path_cost = 0;
            }
            Some(r) => {
                let pt = &self.ports[r];
                self.designated_root = pt.designated_root;
                self.root_path_cost = pt.designated_cost.saturating_add(pt.path_cost);
            }
        }
    }

    /// §8.6.9: whether this bridge offers the LAN on port `p` a better path than the stored
    /// designated bridge does.
    fn should_become_designated(&self, p: usize) -> bool {
        let pt = &self.ports[p];
        if self.is_designated_port(p) || pt.designated_root != self.designated_root {
            return true;
        }
        (self.root_path_cost, self.bridge_id, pt.port_id)
            < (pt.designated_cost, pt.designated_bridge, pt.designated_port)
    }

    /// §8.6.11 Port State Selection.
    fn port_state_selection(&mut self, now: Instant) {
        for p in 0..self.ports.len() {
            if self.ports[p].state == PortState::Disabled {
                continue;
            }
            if self.root_port == Some(p) {
                self.ports[p].config_pending = false;
                self.ports[p].topology_change_ack = false;
                self.make_forwarding(now, p);
            } else if self.is_designated_port(p) {
                self.ports[p].message_age_timer = None;
                self.make_forwarding(now, p);
            } else {
                self.ports[p].config_pending = false;
                self.ports[p].topology_change_ack = false;
                self.make_blocking(now, p);
            }
        }
    }

    fn make_forwarding(&mut self, now: Instant, p: usize) {
        if self.ports[p].state == PortState::Blocking {
            self.set_state(p, PortState::Listening);
            self.ports[p].forward_delay_timer = Some(now + self.forward_delay);
        }
    }

    fn make_blocking(&mut self, now: Instant, p: usize) {
        let state = self.ports[p].state;
        if state != PortState::Disabled && state != PortState::Blocking {
            if state.learns() {
                self.topology_change_detection(now);
            }
            self.set_state(p, PortState::Blocking);
            self.ports[p].forward_delay_timer = None;
        }
    }

    fn forward_delay_expiry(&mut self, now: Instant, p: usize) {
        match self.ports[p].state {
            PortState::Listening => {
                self.set_state(p, PortState::Learning);
                self.ports[p].forward_delay_timer = Some(now + self.forward_delay);
            }
            PortState::Learning => {
                self.set_state(p, PortState::Forwarding);
                if (0..self.ports.len()).any(|q| {
                    self.ports[q].state != PortState::Disabled && self.is_designated_port(q)
                }) {
                    self.topology_change_detection(now);
                }
            }
            _ => {}
        }
    }

    /// §8.7.5 Message Age timer expiry: the information on `p` is stale.
    fn message_age_expiry(&mut self, now: Instant, p: usize) {
        if self.ports[p].state == PortState::Disabled {
            return;
        }
        let was_root = self.is_root_bridge();
        self.become_designated_port(p);
        self.configuration_update();
        self.port_state_selection(now);
        if self.is_root_bridge() && !was_root {
            self.become_root_bridge(now);
        }
    }

    fn become_root_bridge(&mut self, now: Instant) {
        self.max_age = self.timers.max_age;
        self.hello_time = self.timers.hello_time;
        self.forward_delay = self.timers.forward_delay;
        self.topology_change_detection(now);
        self.table.stop(BridgeTimer::TopologyChangeNotification);
        self.config_bpdu_generation(now);
        self.table
            .set(BridgeTimer::Hello, now + self.timers.hello_time);
    }

    /// §8.6.14 Topology Change Detection.
    fn topology_change_detection(&mut self, now: Instant) {
        if self.is_root_bridge() {
            self.set_topology_change(true);
            self.table.set(
                BridgeTimer::TopologyChange,
                now + self.timers.max_age + self.timers.forward_delay,
            );
        } else if !self.topology_change_detected {
            self.transmit_tcn();
            self.table.set(
                BridgeTimer::TopologyChangeNotification,
                now + self.timers.hello_time,
            );
        }
        self.topology_change_detected = true;
    }

    fn config_bpdu_generation(&mut self, now: Instant) {
        for p in 0..self.ports.len() {
            if self.ports[p].state != PortState::Disabled && self.is_designated_port(p) {
                self.transmit_config(now, p);
            }
        }
    }

    /// §8.6.1 Transmit Configuration BPDU, rate-limited by the hold timer.
    fn transmit_config(&mut self, now: Instant, p: usize) {
        if self.ports[p].hold_timer.is_some() {
            self.ports[p].config_pending = true;
            return;
        }
        let message_age = match self.root_port {
            None => Duration::ZERO,
            Some(r) => {
                let (at, age) = self.ports[r].info_received;
                age + (now - at) + MESSAGE_AGE_INCREMENT
            }
        };
        if message_age >= self.max_age {
            return;
        }
        let pt = &mut self.ports[p];
        let config = Config {
            flags: Flags::default()
                .with_topology_change(self.topology_change)
                .with_topology_change_ack(pt.topology_change_ack),
            root_id: self.designated_root,
            root_path_cost: self.root_path_cost,
            bridge_id: self.bridge_id,
            port_id: pt.port_id,
            message_age: Time::from_duration(message_age),
            max_age: Time::from_duration(self.max_age),
            hello_time: Time::from_duration(self.hello_time),
            forward_delay: Time::from_duration(self.forward_delay),
        };
        pt.topology_change_ack = false;
        pt.config_pending = false;
        pt.hold_timer = Some(now + self.timers.hold_time);
        self.stats.tx_config += 1;
        self.transmit.push_back((port_id(p), Repr::Config(config)));
    }

    /// §8.6.6 Transmit TCN BPDU, on the root port.
    fn transmit_tcn(&mut self) {
        if let Some(r) = self.root_port {
            self.stats.tx_tcn += 1;
            self.transmit.push_back((port_id(r), Repr::Tcn));
        }
    }

    fn set_state(&mut self, p: usize, state: PortState) {
        if self.ports[p].state != state {
            self.ports[p].state = state;
            self.events.push_back(Event::PortStateChanged {
                port: port_id(p),
                state,
            });
        }
    }

    fn set_topology_change(&mut self, on: bool) {
        if self.topology_change != on {
            self.topology_change = on;
            self.events.push_back(if on {
                Event::TopologyChange
            } else {
                Event::TopologyChangeEnded
            });
        }
    }
}

#[cfg(test)]
mod tests;
