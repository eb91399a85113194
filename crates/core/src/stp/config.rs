//! Configuration of a spanning tree bridge: identity, ports and the protocol timers, with the
//! ranges 802.1D-1998 §8.10.2 (Table 8-3) allows.

use std::time::Duration;

use rtlan_wire::ethernet::Address;

/// The protocol timers a bridge uses when it is the root (802.1D-1998 §8.5.3.4–8.5.3.6) and the
/// hold time between two Configuration BPDUs on one port (§8.5.3.14).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timers {
    /// Max Age: how long received root information stays valid (6–40 s, default 20 s).
    pub max_age: Duration,
    /// Hello Time: the root's Configuration BPDU interval (1–10 s, default 2 s).
    pub hello_time: Duration,
    /// Forward Delay: time spent in each of Listening and Learning (4–30 s, default 15 s).
    pub forward_delay: Duration,
    /// Hold Time: least time between two Configuration BPDUs on a port (fixed 1 s).
    pub hold_time: Duration,
}

impl Default for Timers {
    /// The standard's recommended values (802.1D-1998 Table 8-3), also the Linux bridge's.
    fn default() -> Self {
        Timers {
            max_age: Duration::from_secs(20),
            hello_time: Duration::from_secs(2),
            forward_delay: Duration::from_secs(15),
            hold_time: Duration::from_secs(1),
        }
    }
}

impl Timers {
    /// Checks the ranges of Table 8-3 and the relation
    /// `2 × (forward_delay − 1 s) ≥ max_age ≥ 2 × (hello_time + 1 s)` of §8.10.2.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let s = Duration::from_secs;
        let in_range = |d: Duration, lo: u64, hi: u64| d >= s(lo) && d <= s(hi);
        if !in_range(self.max_age, 6, 40) {
            return Err(ConfigError::MaxAge(self.max_age));
        }
        if !in_range(self.hello_time, 1, 10) {
            return Err(ConfigError::HelloTime(self.hello_time));
        }
        if !in_range(self.forward_delay, 4, 30) {
            return Err(ConfigError::ForwardDelay(self.forward_delay));
        }
        if self.hold_time.is_zero() || self.hold_time > self.hello_time {
            return Err(ConfigError::HoldTime(self.hold_time));
        }
        if 2 * (self.forward_delay - s(1)) < self.max_age
            || self.max_age < 2 * (self.hello_time + s(1))
        {
            return Err(ConfigError::TimerRelation);
        }
        Ok(())
    }
}

/// One port of the bridge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortConfig {
    /// Path cost of the attached link (1–65535 in 802.1D-1998; see [`PortConfig::cost_for_rate`]).
    pub path_cost: u32,
    /// Port priority, 0–240 in steps of 16 (default 128); lower is preferred among equal paths.
    pub priority: u8,
    /// Whether the link is up when the bridge starts (later changes go to `handle_link`).
    pub up: bool,
}

impl PortConfig {
    /// A port of `path_cost` with the default priority, link up.
    pub fn with_cost(path_cost: u32) -> PortConfig {
        PortConfig {
            path_cost,
            priority: 128,
            up: true,
        }
    }

    /// The Linux bridge's default cost for a link of `rate_bps` (net/bridge/br_if.c
    /// `port_cost`, the 802.1D-1998 Table 8-5 values): 2 at 10 Gb/s and above, 4 at 1 Gb/s, 19 at
    /// 100 Mb/s, 100 below. Using the same costs keeps root port choices the same in a mixed
    /// rtlan / Linux bridge network.
    pub fn cost_for_rate(rate_bps: u64) -> u32 {
        match rate_bps {
            r if r >= 10_000_000_000 => 2,
            r if r >= 1_000_000_000 => 4,
            r if r >= 100_000_000 => 19,
            _ => 100,
        }
    }
}

/// A bridge's configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BridgeConfig {
    /// Bridge priority, the first two octets of the bridge identifier (default 0x8000); lower
    /// wins the root election.
    pub priority: u16,
    /// The bridge address, the last six octets of the bridge identifier (a MAC the bridge owns).
    pub addr: Address,
    /// The ports, indexed by `PortId`; port number = index + 1.
    pub ports: Vec<PortConfig>,
    /// Timers used while this bridge is the root.
    pub timers: Timers,
}

impl BridgeConfig {
    /// A bridge of default priority and timers.
    pub fn new(addr: Address, ports: Vec<PortConfig>) -> BridgeConfig {
        BridgeConfig {
            priority: 0x8000,
            addr,
            ports,
            timers: Timers::default(),
        }
    }
}

/// Why a configuration was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// More ports than a 12-bit port number can name (4095).
    #[error("too many ports: {0} (at most 4095)")]
    TooManyPorts(usize),
    /// A path cost of zero (the standard's range starts at 1).
    #[error("port {0}: path cost must be at least 1")]
    ZeroPathCost(usize),
    /// Max Age outside 6–40 s.
    #[error("max age {0:?} outside 6-40 s")]
    MaxAge(Duration),
    /// Hello Time outside 1–10 s.
    #[error("hello time {0:?} outside 1-10 s")]
    HelloTime(Duration),
    /// Forward Delay outside 4–30 s.
    #[error("forward delay {0:?} outside 4-30 s")]
    ForwardDelay(Duration),
    /// Hold Time zero or longer than Hello Time.
    #[error("hold time {0:?} must be positive and at most the hello time")]
    HoldTime(Duration),
    /// `2 × (forward_delay − 1 s) ≥ max_age ≥ 2 × (hello_time + 1 s)` does not hold.
    #[error("timers violate 2*(forward_delay-1s) >= max_age >= 2*(hello_time+1s)")]
    TimerRelation,
}
