//! The learning switch core: EtheReal §3.3 (destination classes, output queueing, non-real-time
//! queue sized at twice rate × cycle time) and §3.4 (backward learning, ARP probing from 0.0.0.0,
//! the switch's internal ARP cache).
//!
//! STUB: the public surface below is the contract the Linux shell codes against; the bodies are
//! being written. Driver call order (see [`Switch`]).

use std::net::Ipv4Addr;
use std::time::Duration;

use rtlan_wire::ethernet::Address;

use crate::time::Instant;

/// Index of a switch port, `0..config.ports.len()`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub struct PortId(pub u16);

/// What the switch does with a unicast frame whose destination it has not learnt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UnknownUnicast {
    /// EtheReal §3.4: hold the frame, send an ARP probe (sender IP 0.0.0.0) out of every port,
    /// forward once the destination is learnt.
    #[default]
    ArpProbe,
    /// Classic bridge behaviour: flood to every other port.
    Flood,
}

/// One port of the switch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortConfig {
    /// Human-readable name (the interface name in the Linux shell).
    pub name: String,
    /// The port's own MAC address (source of ARP probes sent on it).
    pub mac: Address,
    /// Line rate in bits per second that output is paced at; `None` = unpaced.
    pub rate_bps: Option<u64>,
}

/// Switch configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct SwitchConfig {
    /// The switch's own (management) MAC address.
    pub mac: Address,
    /// The switch's management IP: ARP requests for it are answered.
    pub mgmt_ip: Option<Ipv4Addr>,
    /// The ports, indexed by [`PortId`].
    pub ports: Vec<PortConfig>,
    /// Unknown-unicast policy.
    pub unknown_unicast: UnknownUnicast,
    /// Scheduling cycle time (EtheReal: 10 ms); sizes the non-real-time queues.
    pub cycle_time: Duration,
    /// Learning-table entries not refreshed for this long are removed.
    pub ageing_time: Duration,
    /// Non-real-time queue bound per port in bytes; `None` = 2 × rate × cycle time (EtheReal §3.3).
    pub nrt_queue_bytes: Option<usize>,
    /// Frames held while their destination is probed (whole switch).
    pub pending_capacity: usize,
    /// How long a held frame waits for its destination to be learnt before it is dropped.
    pub pending_timeout: Duration,
}

/// Per-port counters.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct PortStats {
    /// Frames received.
    pub rx_frames: u64,
    /// Bytes received.
    pub rx_bytes: u64,
    /// Frames transmitted.
    pub tx_frames: u64,
    /// Bytes transmitted.
    pub tx_bytes: u64,
    /// Frames dropped because the port's non-real-time queue was full.
    pub drop_queue_full: u64,
}

/// Switch-wide counters.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct SwitchStats {
    /// Per-port counters, indexed by port.
    pub ports: Vec<PortStats>,
    /// Frames too short or otherwise malformed.
    pub drop_malformed: u64,
    /// Frames addressed to the switch that are not ARP (EtheReal §3.3: discarded).
    pub drop_to_switch: u64,
    /// Frames whose destination is the port they came in on.
    pub drop_same_port: u64,
    /// Held frames dropped because the pending queue was full.
    pub drop_pending_full: u64,
    /// Held frames dropped because their destination was not learnt in time.
    pub drop_pending_timeout: u64,
    /// Frames flooded.
    pub flooded: u64,
    /// ARP probes (sender IP 0.0.0.0) sent.
    pub arp_probes_sent: u64,
    /// ARP replies the switch sent for its management IP.
    pub arp_replies_sent: u64,
}

/// A learning-table entry, for reporting.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FdbEntry {
    /// The station's MAC.
    pub mac: String,
    /// The port it was last seen on.
    pub port: u16,
    /// Nanoseconds since it was last seen.
    pub age_ns: u64,
}

/// An internal ARP-cache entry, for reporting.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ArpEntry {
    /// The IP address.
    pub ip: Ipv4Addr,
    /// The MAC it maps to.
    pub mac: String,
}

/// A configuration the switch cannot run with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// No ports, or more than `u16::MAX`.
    #[error("a switch needs between 1 and 65535 ports, got {0}")]
    PortCount(usize),
}

/// The learning switch.
///
/// Driver call order: after [`Switch::new`], repeatedly
/// 1. [`Switch::handle_frame`] for each received frame (in batches),
/// 2. [`Switch::poll_transmit`] per port until it returns `None`,
/// 3. [`Switch::handle_timeout`] when the time from [`Switch::poll_timeout`] has come,
/// then sleep until the next receive or `poll_timeout`.
#[derive(Debug)]
pub struct Switch {
    _private: (),
}

impl Switch {
    /// Builds a switch; allocates all queues and buffers up front.
    pub fn new(config: SwitchConfig, now: Instant) -> Result<Self, ConfigError> {
        let _ = (config, now);
        todo!("switch core being written")
    }

    /// Processes one frame received on `port`.
    pub fn handle_frame(&mut self, now: Instant, port: PortId, frame: &[u8]) {
        let _ = (now, port, frame);
        todo!()
    }

    /// Copies the next frame due on `port` at `now` into `buf` and returns its length, or `None`
    /// if the port's queue is empty or its pacer says the line is still busy.
    pub fn poll_transmit(&mut self, now: Instant, port: PortId, buf: &mut [u8]) -> Option<usize> {
        let _ = (now, port, buf);
        todo!()
    }

    /// The earliest time at which [`Switch::poll_transmit`] or [`Switch::handle_timeout`] has
    /// work, if any.
    pub fn poll_timeout(&self) -> Option<Instant> {
        todo!()
    }

    /// Runs timers due at `now`: pending-frame expiry, learning-table ageing.
    pub fn handle_timeout(&mut self, now: Instant) {
        let _ = now;
        todo!()
    }

    /// Counters.
    pub fn stats(&self) -> &SwitchStats {
        todo!()
    }

    /// The learning table.
    pub fn fdb(&self, now: Instant) -> Vec<FdbEntry> {
        let _ = now;
        todo!()
    }

    /// The internal ARP cache.
    pub fn arp_cache(&self) -> Vec<ArpEntry> {
        todo!()
    }

    /// The configuration in force.
    pub fn config(&self) -> &SwitchConfig {
        todo!()
    }
}
