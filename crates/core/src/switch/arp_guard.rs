//! ARP hijack defence. EtheReal §3.4 routes a SETUP by the receiver's IP through the switch's
//! internal ARP cache (snooped from every ARP packet) and the learning table; as written, one
//! gratuitous ARP from another port — or one frame with the receiver's MAC as its source — moves
//! the receiver there, and the next reservation goes to whoever sent it. EtheReal §5 leaves
//! security as future work.
//!
//! Here a binding (IP → MAC, learnt on a port) and the learning-table location of a bound MAC do
//! not move to another port on the word of that port. The claim is refused (counted) and the old
//! owner is re-probed on its own port with an ARP request from 0.0.0.0, as EtheReal §3.4 probes
//! (charged to the claiming port's probe policer, one open re-probe per address, at most
//! [`MAX_CHALLENGES`]). If the owner answers on its port within
//! [`super::ProtectConfig::arp_reprobe_timeout`] the binding stays; if not, the claim wins and the
//! binding (and the MAC's learning-table entry, when the claimant used the owner's MAC) moves —
//! a host that really moved is found again after one time-out. Static bindings
//! ([`super::ProtectConfig::static_arp`]) never move, and frames from their MAC are never learnt
//! on another port.
//!
//! A MAC bound to several addresses is guarded under the last one heard (the cache keeps one
//! address per MAC in its reverse index).

use std::collections::{BTreeSet, HashMap};
use std::net::Ipv4Addr;

use rtlan_wire::arp;
use rtlan_wire::ethernet::Address;

use super::arp_cache::Binding;
use super::ingress::{emit_padded, enqueue};
use super::learning::Learnt;
use super::{PortId, ProtectConfig, StaticBinding, Switch};
use crate::egress::queue::MIN_CHARGE;
use crate::time::Instant;

/// Most re-probes open at once.
pub const MAX_CHALLENGES: usize = 1024;

/// A claim on an address bound on another port, waiting for its owner's answer.
#[derive(Debug, Clone, Copy)]
struct Challenge {
    /// The binding as it was when claimed.
    owner: Binding,
    /// The MAC the claimant says the address is at.
    claim_mac: Address,
    /// The port the claim came in on.
    claim_port: PortId,
    /// When the claim wins if the owner has not answered.
    deadline: Instant,
}

/// Open re-probes and static bindings.
#[derive(Debug)]
pub(super) struct GuardState {
    challenges: HashMap<Ipv4Addr, Challenge>,
    deadlines: BTreeSet<(Instant, Ipv4Addr)>,
    statics: HashMap<Ipv4Addr, StaticBinding>,
    static_macs: HashMap<Address, PortId>,
}

impl GuardState {
    pub(super) fn new(config: &ProtectConfig) -> GuardState {
        GuardState {
            challenges: HashMap::new(),
            deadlines: BTreeSet::new(),
            statics: config.static_arp.iter().map(|b| (b.ip, *b)).collect(),
            static_macs: config.static_arp.iter().map(|b| (b.mac, b.port)).collect(),
        }
    }

    /// When the next open re-probe times out.
    pub(super) fn next_timeout(&self) -> Option<Instant> {
        self.deadlines.first().map(|&(at, _)| at)
    }

    /// Closes the re-probe of `ip`; returns it if one was open.
    fn close(&mut self, ip: Ipv4Addr) -> Option<Challenge> {
        let challenge = self.challenges.remove(&ip)?;
        self.deadlines.remove(&(challenge.deadline, ip));
        Some(challenge)
    }
}

impl Switch {
    /// The static binding of `ip`, if configured.
    pub(super) fn static_binding(&self, ip: Ipv4Addr) -> Option<StaticBinding> {
        self.protect.guard.statics.get(&ip).copied()
    }

    /// Learns that `src` was seen on `port`, unless it is bound to an address on another port
    /// (then it is refused and its owner re-probed) or statically behind another port.
    pub(super) fn learn_source(&mut self, now: Instant, port: PortId, src: Address) -> Learnt {
        let statics = &self.protect.guard.static_macs;
        if !statics.is_empty() {
            if let Some(&home) = statics.get(&src) {
                if home != port {
                    self.stats.protect.arp_static_refused += 1;
                    return Learnt::Refused;
                }
                return self.fdb.learn(src, port, now);
            }
        }
        if !self.config.rt.protect.arp_guard {
            return self.fdb.learn(src, port, now);
        }
        // Only a station known on another port costs more than the one lookup.
        let arp = &self.arp;
        let mut owner = None;
        let learnt = self.fdb.learn_unless(src, port, now, |known| {
            let Some(ip) = arp.ip_of(&src) else {
                return false;
            };
            match arp.binding(ip, now) {
                Some(binding) if binding.mac == src && binding.port == known => {
                    owner = Some((ip, binding));
                    true
                }
                _ => false,
            }
        });
        if let Some((ip, binding)) = owner {
            self.claim(now, port, ip, binding, src);
        }
        learnt
    }

    /// Binds `ip` to `mac`, heard in an ARP packet on `port`, unless that moves a binding to
    /// another port (refused, the owner re-probed) or contradicts a static binding. `false` if
    /// the cache is full.
    pub(super) fn bind_arp(
        &mut self,
        now: Instant,
        port: PortId,
        ip: Ipv4Addr,
        mac: Address,
    ) -> bool {
        if let Some(binding) = self.protect.guard.statics.get(&ip) {
            if binding.mac != mac || binding.port != port {
                self.stats.protect.arp_static_refused += 1;
            }
            return true;
        }
        if self.config.rt.protect.arp_guard {
            if let Some(owner) = self.arp.binding(ip, now) {
                if owner.port != port {
                    self.claim(now, port, ip, owner, mac);
                    return true;
                }
                // Heard from the owner's port: a re-probe is answered.
                if self.protect.guard.close(ip).is_some() {
                    self.stats.protect.arp_kept_after_probe += 1;
                }
            }
        }
        self.arp.insert(ip, mac, port, now)
    }

    /// `claim_port` claims `ip` (bound to `owner`) for `claim_mac`: refused and counted; unless
    /// a re-probe of `ip` is open, the table of them is full or the claiming port's probe
    /// policer is empty, the owner is re-probed on its port.
    fn claim(
        &mut self,
        now: Instant,
        claim_port: PortId,
        ip: Ipv4Addr,
        owner: Binding,
        claim_mac: Address,
    ) {
        self.count_protect(claim_port, |s| &mut s.arp_move_refused);
        let guard = &self.protect.guard;
        if guard.challenges.contains_key(&ip) {
            return;
        }
        if guard.challenges.len() >= MAX_CHALLENGES {
            self.stats.protect.arp_challenges_full += 1;
            return;
        }
        if !self.police_probe(now, claim_port) {
            return;
        }
        let deadline = now + self.config.rt.protect.arp_reprobe_timeout;
        let guard = &mut self.protect.guard;
        guard.challenges.insert(
            ip,
            Challenge {
                owner,
                claim_mac,
                claim_port,
                deadline,
            },
        );
        guard.deadlines.insert((deadline, ip));
        self.reprobe(now, owner.port, ip);
    }

    /// Sends one ARP probe for `ip` (sender IP 0.0.0.0, EtheReal §3.4) out of `port` only.
    fn reprobe(&mut self, now: Instant, port: PortId, ip: Ipv4Addr) {
        let index = usize::from(port.0);
        let Some(mac) = self.config.ports.get(index).map(|p| p.mac) else {
            return;
        };
        let probe = arp::Repr {
            operation: arp::Operation::Request,
            source_hardware_addr: mac,
            source_protocol_addr: Ipv4Addr::UNSPECIFIED,
            target_hardware_addr: Address([0; 6]),
            target_protocol_addr: ip,
        };
        let mut buf = [0u8; MIN_CHARGE];
        if let (Some(frame), Some(out), Some(stats)) = (
            emit_padded(&probe, mac, Address::BROADCAST, &mut buf),
            self.ports.get_mut(index),
            self.stats.ports.get_mut(index),
        ) {
            enqueue(out, stats, frame, now);
            self.stats.protect.arp_reprobes_sent += 1;
        }
    }

    /// Re-probes whose owner did not answer by `now`: the claim wins, the binding moves (and the
    /// MAC's learning-table entry, when the claimant used the owner's MAC).
    pub(super) fn guard_timeout(&mut self, now: Instant) {
        let mut moved = false;
        while let Some(&(deadline, ip)) = self.protect.guard.deadlines.first() {
            if deadline > now {
                break;
            }
            self.protect.guard.deadlines.pop_first();
            let Some(challenge) = self.protect.guard.challenges.remove(&ip) else {
                continue;
            };
            // Only the binding that was claimed moves: a change since (ageing, another answer
            // on the owner's port) settled the question.
            let current = self.arp.binding(ip, now);
            if current
                .is_some_and(|b| b.mac != challenge.owner.mac || b.port != challenge.owner.port)
            {
                continue;
            }
            if !self
                .arp
                .insert(ip, challenge.claim_mac, challenge.claim_port, now)
            {
                self.stats.arp_cache_full += 1;
            }
            if challenge.claim_mac == challenge.owner.mac {
                self.fdb
                    .learn(challenge.claim_mac, challenge.claim_port, now);
            }
            self.stats.protect.arp_moved_after_probe += 1;
            moved = true;
        }
        if moved && self.rt.waits_for_route() {
            self.retry_all_routes(now);
        }
    }
}
