//! The spanning tree in the switch (IEEE 802.1D-1998 clause 8; EtheReal §5 leaves loops and
//! spanning tree as future work): the glue between the sans-IO [`crate::stp::Bridge`] and the
//! switch's frame path, following `docs/stp.md` §6.
//!
//! - **BPDUs.** Frames to the link-local range `01:80:c2:00:00:0x` are consumed before the
//!   multicast flood on every port that is not Disabled (802.1D-1998 §7.12.6: never relayed);
//!   those that parse as BPDUs go to the bridge, the rest are counted. BPDUs leave by the port's
//!   control FIFO, ahead of data, from the port's MAC; the bridge id uses the switch's MAC.
//! - **Gating.** Data received on a port that is not Forwarding is dropped (counted in
//!   [`StpCounters::discarded`]); its source is learnt only in Learning or Forwarding (§8.4).
//!   Non-real-time frames (unicast, flood, ARP probes and replies) are queued only on Forwarding
//!   ports; real-time connections are routed only over Forwarding ports and torn down when one
//!   stops forwarding. Path-building control messages (SETUP, SETUP_OK, SETUP_FAIL, REFRESH) are
//!   refused on a non-Forwarding port, a SETUP answered SETUP_FAIL (NO_ROUTE); HELLO, TEARDOWN
//!   and the acknowledgements flow on every non-Disabled port.
//! - **Changes.** A port leaving Forwarding releases every connection through it, both ways,
//!   with reason TOPOLOGY_CHANGE (the sending host's daemon signals it again) and forgets the
//!   stations learnt there; while the Topology Change flag is set the learning table ages with
//!   Forward Delay (§8.3.5).
//!
//! With spanning tree off (`SwitchConfig::stp` = `None`) every hook here is a no-op and the switch
//! behaves as a loop-free learning switch.

use std::time::Duration;

use rtlan_wire::control::{FailReason, Message, Repr as ControlRepr, TeardownReason};
use rtlan_wire::ethernet::Address;
use rtlan_wire::stp as wire;

use super::{line_rate, ConfigError, PortId, Switch, SwitchConfig};
use crate::egress::queue::MIN_CHARGE;
use crate::stp::{Bridge, BridgeConfig, Event, PortConfig as BridgePortConfig, PortState, Timers};
use crate::time::Instant;

/// Spanning tree configuration of a switch (`[stp]` in the switch's file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StpConfig {
    /// Bridge priority, the first two octets of the bridge id (default 0x8000).
    pub priority: u16,
    /// Max age, hello time and forward delay used while this switch is the root.
    pub timers: Timers,
    /// Per port, indexed like [`SwitchConfig::ports`]; a missing entry takes the defaults.
    pub ports: Vec<StpPortConfig>,
}

impl Default for StpConfig {
    /// Priority 0x8000, the standard's timers (20 s / 2 s / 15 s), default ports.
    fn default() -> Self {
        StpConfig {
            priority: 0x8000,
            timers: Timers::default(),
            ports: Vec::new(),
        }
    }
}

/// Spanning tree settings of one port.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StpPortConfig {
    /// Path cost; `None` = [`BridgePortConfig::cost_for_rate`] of the port's line rate.
    pub cost: Option<u32>,
    /// Port priority, 0–240 in steps of 16; `None` = 128.
    pub priority: Option<u8>,
}

/// Switch-level spanning tree counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct StpCounters {
    /// Frames to the link-local range `01:80:c2:00:00:0x` consumed (never forwarded).
    pub link_local_rx: u64,
    /// Link-local frames that did not parse as a BPDU (other protocols of the range included).
    pub bpdu_malformed: u64,
    /// Frames received on a port that is not Forwarding and dropped: data, and path-building
    /// control messages (SETUP, SETUP_OK, SETUP_FAIL, REFRESH).
    pub discarded: u64,
    /// SETUPs refused (SETUP_FAIL, NO_ROUTE) because they arrived on a non-Forwarding port.
    pub setup_refused: u64,
    /// Connections released because a port of theirs left Forwarding (reason TOPOLOGY_CHANGE).
    pub released: u64,
    /// Root or root-port changes seen.
    pub root_changes: u64,
    /// Topology Change periods begun (fast ageing on).
    pub topology_changes: u64,
}

/// One port as shown by introspection.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct StpPortInfo {
    /// Port index.
    pub port: u16,
    /// Port name.
    pub name: String,
    /// Spanning tree state.
    pub state: PortState,
}

/// The spanning tree as shown by introspection (status JSON).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct StpStatus {
    /// This switch's bridge id, `pppp.mmmmmmmmmmmm`.
    pub bridge_id: String,
    /// The root's bridge id.
    pub root_id: String,
    /// The port towards the root (`None` at the root).
    pub root_port: Option<u16>,
    /// Cost to the root.
    pub root_path_cost: u32,
    /// Whether the Topology Change flag is set.
    pub topology_change: bool,
    /// Port states.
    pub ports: Vec<StpPortInfo>,
    /// BPDUs in and out.
    pub bpdu: crate::stp::Stats,
    /// Switch-side counters.
    pub counters: StpCounters,
}

/// The bridge and what the switch remembers about it.
#[derive(Debug)]
pub(super) struct StpState {
    bridge: Bridge,
    /// Each port's state as last reported by the bridge (to see Forwarding being left).
    states: Vec<PortState>,
    counters: StpCounters,
}

/// What [`Switch::stp_ingress`] decided about a received frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ingress {
    /// Consumed (a BPDU, another link-local frame, or data on a non-forwarding port).
    Consumed,
    /// Goes on through the frame path; `learn` says whether its source may be learnt.
    Pass {
        /// Whether the port learns (Learning or Forwarding, or spanning tree off).
        learn: bool,
    },
}

/// Whether `dst` is in the IEEE 802.1D reserved link-local range `01:80:c2:00:00:00..=0f`.
pub(super) fn is_link_local(dst: Address) -> bool {
    dst.0[..5] == [0x01, 0x80, 0xc2, 0x00, 0x00] && dst.0[5] <= 0x0f
}

impl StpState {
    /// Builds the bridge of a switch configured by `config` at `now`.
    pub(super) fn new(
        stp: &StpConfig,
        config: &SwitchConfig,
        now: Instant,
    ) -> Result<StpState, ConfigError> {
        let ports = config
            .ports
            .iter()
            .enumerate()
            .map(|(i, port)| {
                let own = stp.ports.get(i).copied().unwrap_or_default();
                BridgePortConfig {
                    path_cost: own.cost.unwrap_or_else(|| {
                        BridgePortConfig::cost_for_rate(line_rate(config, port))
                    }),
                    priority: own.priority.unwrap_or(128),
                    up: true,
                }
            })
            .collect();
        let bridge = Bridge::new(
            BridgeConfig {
                priority: stp.priority,
                addr: config.mac,
                ports,
                timers: stp.timers,
            },
            now,
        )
        .map_err(ConfigError::Stp)?;
        let states = (0..config.ports.len())
            .map(|i| bridge.port_state(PortId(i as u16)))
            .collect();
        Ok(StpState {
            bridge,
            states,
            counters: StpCounters::default(),
        })
    }

    /// Whether `port` forwards data (always true without spanning tree).
    pub(super) fn forwards(stp: Option<&StpState>, port: PortId) -> bool {
        stp.is_none_or(|s| s.bridge.port_state(port).forwards())
    }
}

impl Switch {
    /// Spanning tree classification of a frame received on `port` (docs/stp.md §6): link-local
    /// frames are consumed (BPDUs fed to the bridge), data on a non-Forwarding port is dropped
    /// (its source learnt in Learning), control frames on a non-Disabled port pass without
    /// learning. Without spanning tree every frame passes and is learnt.
    pub(super) fn stp_ingress(
        &mut self,
        now: Instant,
        port: PortId,
        src: Address,
        dst: Address,
        frame: &[u8],
    ) -> Ingress {
        let Some(stp) = self.stp.as_mut() else {
            return Ingress::Pass { learn: true };
        };
        let state = stp.bridge.port_state(port);
        if is_link_local(dst) {
            stp.counters.link_local_rx += 1;
            match wire::parse_frame(frame) {
                // The bridge discards (and counts) BPDUs on a Disabled port itself.
                Ok(bpdu) => stp.bridge.handle_bpdu(now, port, &bpdu),
                Err(_) => stp.counters.bpdu_malformed += 1,
            }
            self.stp_drain(now);
            return Ingress::Consumed;
        }
        if state.forwards() {
            return Ingress::Pass { learn: true };
        }
        let plan = &self.config.rt.plan;
        let control =
            dst != Address::BROADCAST && plan.covers(&dst) && plan.connection_id(&dst).is_none();
        if control && state != PortState::Disabled {
            return Ingress::Pass { learn: false };
        }
        stp.counters.discarded += 1;
        if state.learns() {
            // Learnt for when the port forwards; nothing held is released towards it before.
            if self.fdb.learn(src, port, now) == super::learning::Learnt::Full {
                self.stats.fdb_full += 1;
            }
        }
        Ingress::Consumed
    }

    /// Whether a control message received on `port` is refused because the port does not
    /// forward: SETUP (answered SETUP_FAIL, NO_ROUTE), SETUP_OK, SETUP_FAIL and REFRESH. A
    /// reservation thus always lies on the tree; HELLO, TEARDOWN and the ACKs pass.
    pub(super) fn stp_refuses_control(
        &mut self,
        now: Instant,
        port: PortId,
        repr: &ControlRepr,
    ) -> bool {
        let Some(stp) = self.stp.as_mut() else {
            return false;
        };
        if stp.bridge.port_state(port).forwards() {
            return false;
        }
        match repr.message {
            Message::Setup(setup) => {
                stp.counters.discarded += 1;
                stp.counters.setup_refused += 1;
                self.stats.signal.setup_fail += 1;
                let hop = repr.hop.saturating_add(1);
                let fail = Message::SetupFail {
                    reason: FailReason::NoRoute,
                    failed_hop: hop,
                    connection_id: setup.connection_id,
                    switch_ip: self
                        .config
                        .mgmt_ip
                        .unwrap_or(std::net::Ipv4Addr::UNSPECIFIED),
                };
                self.send_control(now, port, &ControlRepr::new(hop, repr.request_id, fail));
                true
            }
            Message::SetupOk { .. } | Message::SetupFail { .. } | Message::Refresh { .. } => {
                stp.counters.discarded += 1;
                true
            }
            Message::Hello(_)
            | Message::Teardown { .. }
            | Message::TeardownAck { .. }
            | Message::RefreshAck { .. } => false,
        }
    }

    /// Whether `port` may carry a reservation (a SETUP is routed out of it): it forwards.
    pub(super) fn stp_forwards(&self, port: PortId) -> bool {
        StpState::forwards(self.stp.as_ref(), port)
    }

    /// The carrier of `port` changed: tell the bridge (a port leaving Forwarding releases its
    /// connections with reason TOPOLOGY_CHANGE before the switch's own LINK_DOWN handling).
    pub(super) fn stp_link(&mut self, now: Instant, port: PortId, up: bool) {
        if let Some(stp) = self.stp.as_mut() {
            stp.bridge.handle_link(now, port, up);
            self.stp_drain(now);
        }
    }

    /// Runs the bridge's timers due at `now`.
    pub(super) fn stp_timeout(&mut self, now: Instant) {
        if let Some(stp) = self.stp.as_mut() {
            if stp.bridge.poll_timeout().is_some_and(|t| t <= now) {
                stp.bridge.handle_timeout(now);
                self.stp_drain(now);
            }
        }
    }

    /// The bridge's next deadline.
    pub(super) fn stp_poll_timeout(&self) -> Option<Instant> {
        self.stp.as_ref().and_then(|s| s.bridge.poll_timeout())
    }

    /// Sends the bridge's BPDUs (each port's control FIFO, ahead of data) and applies its events
    /// (docs/stp.md §6 "Re-signalling after a change").
    pub(super) fn stp_drain(&mut self, now: Instant) {
        while let Some((port, bpdu)) = self.stp.as_mut().and_then(|s| s.bridge.poll_transmit()) {
            let index = usize::from(port.0);
            let Some(mac) = self.config.ports.get(index).map(|p| p.mac) else {
                continue;
            };
            // Zero padding to the Ethernet minimum, as a NIC would add.
            let mut buf = [0u8; wire::MAX_FRAME_LEN + MIN_CHARGE];
            let Ok(len) = bpdu.emit_frame(mac, &mut buf) else {
                continue;
            };
            self.enqueue_control_frame(now, index, &buf[..len.max(MIN_CHARGE)]);
        }
        while let Some(event) = self.stp.as_mut().and_then(|s| s.bridge.poll_event()) {
            self.stp_event(now, event);
        }
    }

    fn stp_event(&mut self, now: Instant, event: Event) {
        let Some(stp) = self.stp.as_mut() else {
            return;
        };
        match event {
            Event::PortStateChanged { port, state } => {
                let index = usize::from(port.0);
                let Some(slot) = stp.states.get_mut(index) else {
                    return;
                };
                let was = std::mem::replace(slot, state);
                if let Some(out) = self.ports.get_mut(index) {
                    out.forwarding = state.forwards();
                }
                if was.forwards() && !state.forwards() {
                    let before = self.stats.signal.failure_released;
                    self.fail_port(now, port, TeardownReason::TopologyChange);
                    let released = self.stats.signal.failure_released - before;
                    if let Some(stp) = self.stp.as_mut() {
                        stp.counters.released += released;
                    }
                } else if !state.learns() {
                    self.fdb.flush_port(port);
                }
            }
            Event::RootChanged { .. } => stp.counters.root_changes += 1,
            Event::TopologyChange => {
                stp.counters.topology_changes += 1;
                let fast = stp.bridge.ageing_time().unwrap_or(self.config.ageing_time);
                self.fdb.set_ageing_time(fast.min(self.config.ageing_time));
            }
            Event::TopologyChangeEnded => self.fdb.set_ageing_time(self.config.ageing_time),
        }
    }

    /// The spanning tree's state, `None` when it is off.
    pub fn stp_status(&self) -> Option<StpStatus> {
        let stp = self.stp.as_ref()?;
        let bridge = &stp.bridge;
        Some(StpStatus {
            bridge_id: bridge.bridge_id().to_string(),
            root_id: bridge.root_id().to_string(),
            root_port: bridge.root_port().map(|p| p.0),
            root_path_cost: bridge.root_path_cost(),
            topology_change: bridge.topology_change(),
            ports: self
                .config
                .ports
                .iter()
                .enumerate()
                .map(|(i, p)| StpPortInfo {
                    port: i as u16,
                    name: p.name.clone(),
                    state: bridge.port_state(PortId(i as u16)),
                })
                .collect(),
            bpdu: bridge.stats(),
            counters: stp.counters,
        })
    }

    /// The spanning tree state of `port` (`None` when spanning tree is off).
    pub fn stp_port_state(&self, port: PortId) -> Option<PortState> {
        self.stp.as_ref().map(|s| s.bridge.port_state(port))
    }

    /// The learning table's ageing time in force (shortened to Forward Delay during a topology
    /// change).
    pub fn fdb_ageing_time(&self) -> Duration {
        self.fdb.ageing_time()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_local_range() {
        assert!(is_link_local(wire::BRIDGE_GROUP_ADDRESS));
        assert!(is_link_local(Address([0x01, 0x80, 0xc2, 0, 0, 0x0e])));
        assert!(!is_link_local(Address([0x01, 0x80, 0xc2, 0, 0, 0x10])));
        assert!(!is_link_local(Address([0x01, 0x00, 0x5e, 0, 0, 0x01])));
        assert!(!is_link_local(Address::BROADCAST));
    }
}
