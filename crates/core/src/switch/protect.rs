//! Control-plane protection of the switch (EtheReal §5 leaves security as future work; the QSR
//! paper §6.2 reports signalling lost under load): per-input-port policing of control frames, of
//! ARP and of the ARP probes the switch sends on a port's behalf (EtheReal §3.4), one switch-wide
//! budget on control work, and per-port shares of the connection table and of the SETUPs in
//! progress. The ARP hijack defence is in `arp_guard`.
//!
//! Every limit is a token bucket on the `now` the driver passes (sans-IO, STYLE.md §2): credit
//! grows at `per_second` tokens a second up to `burst`, a message takes one token or is dropped
//! and counted per port and reason. In any interval of length *t* a bucket lets through at most
//! `burst + per_second × t` messages, whatever the driver's batching, so control work between two
//! calls of the driver is bounded and the real-time scheduler is never starved by it. Real-time
//! data is never policed here: only frames to the control MAC with the control EtherType, and ARP.
//!
//! Which limits a port gets depends on what sits at its other end: a port configured
//! [`PortRole::Host`], or an [`PortRole::Auto`] port that hears no switch HELLO, gets
//! [`ProtectConfig::host`]; a [`PortRole::Trunk`] port, or an auto port that hears switch HELLOs,
//! gets [`ProtectConfig::trunk`] (it carries the signalling of every host behind it, each already
//! policed at its own first switch). A host can claim to be a switch with HELLO on an auto port;
//! configure host ports as `host` to keep the host limits on them.
//!
//! Hooks, nothing else: [`Switch::police_ingress`] on every frame before it is learnt,
//! [`Switch::police_probe`] before every ARP probe, [`Switch::setup_port_limit`] on every new
//! SETUP.

use std::net::Ipv4Addr;
use std::time::Duration;

use rtlan_wire::control::ETHERTYPE;
use rtlan_wire::ethernet::{Address, EtherType};

use super::{PortId, PortRole, Switch, SwitchConfig};
use crate::time::Instant;

/// A token bucket's parameters: `per_second` tokens a second, at most `burst` saved up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    /// Tokens added per second (messages per second in the long run).
    pub per_second: u32,
    /// Most tokens saved up (messages accepted at once after a quiet spell).
    pub burst: u32,
}

/// The limits of one class of port (host-facing or switch-facing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortLimits {
    /// Control frames (control EtherType to the control MAC) accepted from the port.
    pub control: Rate,
    /// ARP frames (requests, replies, gratuitous) accepted from the port.
    pub arp: Rate,
    /// ARP probes (EtheReal §3.4) the switch sends on behalf of the port: for its frames and
    /// SETUPs to unknown destinations, and re-probes of an address it claims (`arp_guard`).
    pub arp_probes: Rate,
    /// Share of the connection table ([`super::RtConfig::max_connections`]) the connections
    /// entering by the port (installed and in progress) may take, percent.
    pub connection_share_percent: u8,
    /// Most SETUPs from the port in progress at once (waiting for a route or an answer);
    /// `None` = no bound of the port's own (the switch-wide bound, the table size, holds).
    pub max_setups_in_progress: Option<usize>,
    /// Share of the pool of frames held while their destination is probed
    /// ([`super::SwitchConfig::pending_capacity`]) the port's frames may take, percent.
    pub pending_share_percent: u8,
}

/// Default limits of a host-facing port.
///
/// - control: 1,000 messages/s, burst 200. A host daemon sends one SETUP per open, one REFRESH
///   per connection per 10 s and one HELLO per second: a host with 1,000 connections refreshes at
///   100/s. The burst lets a host open 200 connections at once.
/// - ARP: 100/s, burst 50. A host ARPs once per peer per cache lifetime.
/// - ARP probes: 100/s, burst 50: a flood to unknown addresses makes at most 100 probes a second
///   (one 60-byte frame on every other port each: 48 kbit/s per port).
/// - a quarter of the connection table, 256 SETUPs in progress, a quarter of the held-frame
///   pool.
pub const HOST_LIMITS: PortLimits = PortLimits {
    control: Rate {
        per_second: 1_000,
        burst: 200,
    },
    arp: Rate {
        per_second: 100,
        burst: 50,
    },
    arp_probes: Rate {
        per_second: 100,
        burst: 50,
    },
    connection_share_percent: 25,
    max_setups_in_progress: Some(256),
    pending_share_percent: 25,
};

/// Default limits of a switch-facing port: it carries the signalling of every host behind it.
///
/// - control: 25,000 messages/s, burst 10,000: a port of the generated leaf–spine's core
///   (`scenarios/leafspine.toml`: 10,000 connections set up within 100 ms over 9 spine ports)
///   carries about 1,100 SETUPs and as many answers in that time.
/// - ARP: 5,000/s, burst 1,000 (the ARP of a thousand hosts behind the port).
/// - ARP probes: 1,000/s, burst 500.
/// - the whole connection table, and as many SETUPs in progress as connections.
pub const TRUNK_LIMITS: PortLimits = PortLimits {
    control: Rate {
        per_second: 25_000,
        burst: 10_000,
    },
    arp: Rate {
        per_second: 5_000,
        burst: 1_000,
    },
    arp_probes: Rate {
        per_second: 1_000,
        burst: 500,
    },
    connection_share_percent: 100,
    max_setups_in_progress: None,
    pending_share_percent: 100,
};

/// Default [`ProtectConfig::control_budget`]: 50,000 control messages a second, burst 20,000,
/// whole switch — twice a trunk port's rate, so a single flooding port cannot use it up.
///
/// Measured cost of one message in the core (`cargo bench -p rtlan-core --bench switch --
/// control`, 2-vCPU VM at load 5.5): 3.3 µs for a SETUP installed with its SETUP_OK, 1.1 µs for
/// one held while its receiver is probed, 77 ns for one dropped by a policer. At 3.3 µs the
/// budget's rate is 16.5 % of one core, and its burst 66 ms of work at once; 20,000 is the
/// SETUPs and answers of the leaf–spine's 10,000 connections (`TRUNK_LIMITS`).
pub const DEFAULT_CONTROL_BUDGET: Rate = Rate {
    per_second: 50_000,
    burst: 20_000,
};

/// Default [`ProtectConfig::arp_reprobe_timeout`]: as long as the Linux shell's default
/// `pending_timeout` waits for a destination's answer to an ARP probe. An ARP round trip took
/// 38–100 µs in `rtlan bench setup` (`docs/benchmarks.md`).
pub const DEFAULT_ARP_REPROBE_TIMEOUT: Duration = Duration::from_millis(200);

/// An IP address bound to a MAC behind a port by configuration: never moved by ARP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StaticBinding {
    /// The address.
    pub ip: Ipv4Addr,
    /// The MAC it is at.
    pub mac: Address,
    /// The port the MAC is behind.
    pub port: PortId,
}

/// Control-plane protection settings ([`ProtectConfig::default`] gives the documented
/// defaults: [`HOST_LIMITS`], [`TRUNK_LIMITS`], [`DEFAULT_CONTROL_BUDGET`], the ARP guard on
/// with [`DEFAULT_ARP_REPROBE_TIMEOUT`], no static bindings).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtectConfig {
    /// Limits of host-facing ports.
    pub host: PortLimits,
    /// Limits of switch-facing ports.
    pub trunk: PortLimits,
    /// Control messages the whole switch handles (after the per-port policers).
    pub control_budget: Rate,
    /// Refuse to move a learnt address to another port until its owner was re-probed and did
    /// not answer (`arp_guard`).
    pub arp_guard: bool,
    /// How long the owner of an address has to answer a re-probe.
    pub arp_reprobe_timeout: Duration,
    /// Bindings that never move.
    pub static_arp: Vec<StaticBinding>,
}

impl Default for ProtectConfig {
    fn default() -> ProtectConfig {
        ProtectConfig {
            host: HOST_LIMITS,
            trunk: TRUNK_LIMITS,
            control_budget: DEFAULT_CONTROL_BUDGET,
            arp_guard: true,
            arp_reprobe_timeout: DEFAULT_ARP_REPROBE_TIMEOUT,
            static_arp: Vec::new(),
        }
    }
}

/// One nanosecond-token: a bucket's credit is kept in token·ns so refills are exact.
const NS_PER_TOKEN: u128 = 1_000_000_000;

/// A token bucket on virtual time. Starts full.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TokenBucket {
    /// Credit in token·ns (`None` = full: the bucket was never used).
    credit: Option<u128>,
    last: Instant,
}

impl TokenBucket {
    pub(crate) const fn new() -> TokenBucket {
        TokenBucket {
            credit: None,
            last: Instant::ZERO,
        }
    }

    /// Takes one token at `now` under `rate`; `false` (nothing taken) if there is none.
    pub(crate) fn take(&mut self, now: Instant, rate: Rate) -> bool {
        let cap = u128::from(rate.burst) * NS_PER_TOKEN;
        let credit = match self.credit {
            None => cap,
            Some(credit) => {
                let elapsed = now.saturating_duration_since(self.last).as_nanos();
                credit
                    .saturating_add(elapsed.saturating_mul(u128::from(rate.per_second)))
                    .min(cap)
            }
        };
        self.last = self.last.max(now);
        match credit.checked_sub(NS_PER_TOKEN) {
            Some(left) => {
                self.credit = Some(left);
                true
            }
            None => {
                self.credit = Some(credit);
                false
            }
        }
    }
}

/// Per-port protection counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct ProtectPortStats {
    /// Control frames dropped by the port's control policer.
    pub control_policed: u64,
    /// Control frames from the port dropped because the switch-wide control budget was spent.
    pub control_over_budget: u64,
    /// ARP frames dropped by the port's ARP policer.
    pub arp_policed: u64,
    /// ARP probes (and re-probes) not sent for the port because its probe policer was empty.
    pub probes_policed: u64,
    /// SETUPs from the port refused with PORT_LIMIT (its share of the table or of setups in
    /// progress was used up).
    pub setups_port_limit: u64,
    /// ARP packets or frames from the port that tried to move an address bound elsewhere
    /// (refused; the owner is re-probed).
    pub arp_move_refused: u64,
    /// Frames to unknown destinations from the port not held because the port already held
    /// its share of the pool (`pending_share_percent`; also counted in `drop_pending_full`).
    pub pending_over_share: u64,
}

/// Protection counters, whole switch (each also counted per port in `ports`).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ProtectStats {
    /// Per-port counters, indexed by port.
    pub ports: Vec<ProtectPortStats>,
    /// The per-port counters summed (flattened: `control_policed`, `arp_move_refused`, … at
    /// this level in the JSON).
    #[serde(flatten)]
    pub total: ProtectPortStats,
    /// Re-probes sent to the old owner of an address another port claimed (one frame each, on
    /// the owner's port).
    pub arp_reprobes_sent: u64,
    /// Claims that won: the owner did not answer its re-probe in time, the binding moved.
    pub arp_moved_after_probe: u64,
    /// Claims that lost: the owner answered its re-probe, the binding stayed.
    pub arp_kept_after_probe: u64,
    /// ARP packets or frames that contradicted a static binding (refused).
    pub arp_static_refused: u64,
    /// Claims refused without a re-probe because the table of open re-probes was full.
    pub arp_challenges_full: u64,
}

/// Per-port buckets.
#[derive(Debug, Clone, Copy)]
struct PortBuckets {
    control: TokenBucket,
    arp: TokenBucket,
    probes: TokenBucket,
}

/// The policers' state.
#[derive(Debug)]
pub(super) struct ProtectState {
    ports: Vec<PortBuckets>,
    budget: TokenBucket,
    /// Open re-probes (`arp_guard`).
    pub(super) guard: super::arp_guard::GuardState,
}

impl ProtectState {
    pub(super) fn new(config: &SwitchConfig) -> ProtectState {
        let bucket = PortBuckets {
            control: TokenBucket::new(),
            arp: TokenBucket::new(),
            probes: TokenBucket::new(),
        };
        ProtectState {
            ports: vec![bucket; config.ports.len()],
            budget: TokenBucket::new(),
            guard: super::arp_guard::GuardState::new(&config.rt.protect),
        }
    }
}

/// What a policed frame is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Control,
    Arp,
}

impl Switch {
    /// The limits of `port` at `now`: by its configured role, or for an auto port by whether it
    /// hears switch HELLOs.
    pub(super) fn port_limits(&self, port: PortId, now: Instant) -> &PortLimits {
        let protect = &self.config.rt.protect;
        let role = self
            .config
            .ports
            .get(usize::from(port.0))
            .map_or(PortRole::Auto, |p| p.security.role);
        let trunk = match role {
            PortRole::Host => false,
            PortRole::Trunk => true,
            PortRole::Auto => self.is_switch_facing(port, now),
        };
        if trunk {
            &protect.trunk
        } else {
            &protect.host
        }
    }

    /// Polices a frame received on `port` (to `dst`, of `ethertype`) before anything else is done
    /// with it: control frames through the port's control policer and the switch-wide budget,
    /// ARP through the port's ARP policer. `false` = dropped (counted in `drop_policed` and per
    /// port and reason).
    pub(super) fn police_ingress(
        &mut self,
        now: Instant,
        port: PortId,
        dst: Address,
        ethertype: EtherType,
    ) -> bool {
        let kind = if ethertype == EtherType::Arp {
            Kind::Arp
        } else if ethertype == EtherType::from(ETHERTYPE)
            && dst == self.config.rt.plan.control_mac()
        {
            Kind::Control
        } else {
            return true;
        };
        let index = usize::from(port.0);
        let limits = *self.port_limits(port, now);
        let budget = self.config.rt.protect.control_budget;
        let Some(buckets) = self.protect.ports.get_mut(index) else {
            return true;
        };
        let counter: Option<fn(&mut ProtectPortStats) -> &mut u64> = match kind {
            Kind::Arp => (!buckets.arp.take(now, limits.arp)).then_some(|s| &mut s.arp_policed),
            Kind::Control => {
                if !buckets.control.take(now, limits.control) {
                    Some(|s| &mut s.control_policed)
                } else if !self.protect.budget.take(now, budget) {
                    Some(|s| &mut s.control_over_budget)
                } else {
                    None
                }
            }
        };
        let passed = counter.is_none();
        if let Some(counter) = counter {
            self.stats.drop_policed += 1;
            self.count_protect(port, counter);
        }
        passed
    }

    /// Counts one protection event of `port`: its counter and the switch's total.
    pub(super) fn count_protect(
        &mut self,
        port: PortId,
        counter: fn(&mut ProtectPortStats) -> &mut u64,
    ) {
        *counter(&mut self.stats.protect.total) += 1;
        if let Some(s) = self.stats.protect.ports.get_mut(usize::from(port.0)) {
            *counter(s) += 1;
        }
    }

    /// Whether the switch may send an ARP probe on behalf of `port` at `now` (its probe policer
    /// has a token); a refusal is counted.
    pub(super) fn police_probe(&mut self, now: Instant, port: PortId) -> bool {
        let index = usize::from(port.0);
        let rate = self.port_limits(port, now).arp_probes;
        let Some(buckets) = self.protect.ports.get_mut(index) else {
            return true;
        };
        if buckets.probes.take(now, rate) {
            return true;
        }
        self.count_protect(port, |s| &mut s.probes_policed);
        false
    }

    /// Whether a new SETUP from `port` exceeds the port's share at `now`: its SETUPs in
    /// progress, or its connections installed and in progress against its share of the
    /// connection table. `true` = refuse (PORT_LIMIT), counted.
    pub(super) fn setup_port_limit(&mut self, now: Instant, port: PortId) -> bool {
        let limits = *self.port_limits(port, now);
        let in_progress = self.rt.in_progress.len_on(port);
        let installed = self.rt.table.len_on(port);
        let share = self
            .config
            .rt
            .max_connections
            .saturating_mul(usize::from(limits.connection_share_percent))
            / 100;
        let over = limits
            .max_setups_in_progress
            .is_some_and(|most| in_progress >= most)
            || installed.saturating_add(in_progress) >= share;
        if over {
            self.count_protect(port, |s| &mut s.setups_port_limit);
        }
        over
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Instant {
        Instant::from_nanos(ms * 1_000_000)
    }

    #[test]
    fn a_bucket_starts_full_and_refills_at_its_rate() {
        let rate = Rate {
            per_second: 1_000,
            burst: 5,
        };
        let mut bucket = TokenBucket::new();
        let taken = (0..10).filter(|_| bucket.take(at(100), rate)).count();
        assert_eq!(taken, 5);
        // 1,000/s = one token per ms, exactly.
        assert!(!bucket.take(at(100), rate));
        assert!(bucket.take(at(101), rate));
        assert!(!bucket.take(at(101), rate));
        // A long quiet spell saves up no more than the burst.
        let taken = (0..10).filter(|_| bucket.take(at(10_000), rate)).count();
        assert_eq!(taken, 5);
        // Half a token's time gives nothing; the rest of it gives one.
        let half = Instant::from_nanos(at(10_000).as_nanos() + 500_000);
        assert!(!bucket.take(half, rate));
        assert!(bucket.take(at(10_001), rate));
    }

    #[test]
    fn a_bucket_never_lets_more_than_burst_plus_rate_times_t() {
        let rate = Rate {
            per_second: 250,
            burst: 3,
        };
        let mut bucket = TokenBucket::new();
        // Offer 10 a ms for a second, at irregular instants.
        let mut passed = 0u64;
        for step in 0..10_000u64 {
            let now = Instant::from_nanos(step * 100_000 + (step % 7) * 1_000);
            if bucket.take(now, rate) {
                passed += 1;
            }
        }
        // t < 1 s: at most 3 + 250.
        assert!(passed <= 253, "{passed}");
        assert!(passed >= 252, "{passed}");
    }
}
