//! Who on a host may reserve what: the host daemon's reservation policy.
//!
//! EtheReal §3.2 lets any application on a host ask its RTCD for a connection; the only limit
//! is the link (the real-time share the daemon admits locally). On a shared host that lets one
//! user's application take every reservable bit. A policy is an ordered list of rules, each for a
//! user, a group or everyone, with optional limits: the rate of one connection, the rate of all
//! the connections the rule's clients hold together, and how many they may hold. The first rule
//! that matches a client decides (like a firewall's); a client no rule matches is refused. No
//! rules at all means no policy (every client may reserve up to the link's share, as before).
//! Root is never limited: the operator's own tools must always work.
//!
//! Pure: the shell resolves names to ids and tells the core each client's [`Principal`] (from
//! `SO_PEERCRED` and the peer's groups); the core checks every `open` against the rules with the
//! connections it holds.

/// The identity of a client process: user id, primary and supplementary group ids.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Principal {
    /// User id.
    pub uid: u32,
    /// Every group the process is in (primary first).
    pub gids: Vec<u32>,
}

/// Whom a rule is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Who {
    /// One user.
    Uid(u32),
    /// The members of one group (primary or supplementary).
    Gid(u32),
    /// Every client.
    Everyone,
}

/// One rule: whom it is for and what they may reserve (`None` = no limit of that kind).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// Whom it is for.
    pub who: Who,
    /// Refuse every reservation of these clients.
    pub deny: bool,
    /// Most rate of one connection, bit/s.
    pub max_rate_bps: Option<u64>,
    /// Most rate of all connections held by the clients this rule matched, bit/s.
    pub max_total_bps: Option<u64>,
    /// Most connections held by the clients this rule matched.
    pub max_connections: Option<u32>,
    /// How the rule is named in refusals (e.g. `group audio`).
    pub label: String,
}

impl Rule {
    /// A rule for `who`, named `label` in refusals, that allows everything (add limits with
    /// struct update syntax).
    pub fn allow(who: Who, label: impl Into<String>) -> Rule {
        Rule {
            who,
            deny: false,
            max_rate_bps: None,
            max_total_bps: None,
            max_connections: None,
            label: label.into(),
        }
    }

    fn matches(&self, who: &Principal) -> bool {
        match self.who {
            Who::Uid(uid) => who.uid == uid,
            Who::Gid(gid) => who.gids.contains(&gid),
            Who::Everyone => true,
        }
    }
}

/// The ordered rules; empty = no policy.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Policy {
    /// First match decides.
    pub rules: Vec<Rule>,
}

/// Why the policy refuses a reservation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyRefusal {
    /// No rule is for this client.
    #[error("no reservation policy rule allows user {uid}")]
    NoRule {
        /// The client's user id.
        uid: u32,
    },
    /// The matching rule denies.
    #[error("{rule} may not reserve")]
    Denied {
        /// The rule's label.
        rule: String,
    },
    /// One connection over the rule's per-connection rate.
    #[error("{rule} may reserve at most {limit} bit/s per connection ({requested} asked)")]
    Rate {
        /// The rule's label.
        rule: String,
        /// The limit.
        limit: u64,
        /// What was asked.
        requested: u64,
    },
    /// The rule's clients together over its total.
    #[error("{rule} may hold at most {limit} bit/s in all ({held} held, {requested} asked)")]
    Total {
        /// The rule's label.
        rule: String,
        /// The limit.
        limit: u64,
        /// What its clients hold.
        held: u64,
        /// What was asked.
        requested: u64,
    },
    /// The rule's clients hold as many connections as it allows.
    #[error("{rule} may hold at most {limit} connections")]
    Connections {
        /// The rule's label.
        rule: String,
        /// The limit.
        limit: u32,
    },
}

impl Policy {
    /// Whether there are rules at all.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The index of the rule that decides for `who` (`None`: no rule matches); root and an
    /// empty policy are never governed.
    pub fn rule_for(&self, who: &Principal) -> Option<usize> {
        if who.uid == 0 {
            return None;
        }
        self.rules.iter().position(|r| r.matches(who))
    }

    /// Checks a request of `rate_bps` by `who` (`None`: unknown, e.g. a peer in another user
    /// namespace — governed by an `everyone` rule only). `held(i)` is the rate and number of
    /// connections the clients governed by rule `i` hold now.
    pub fn check(
        &self,
        who: Option<&Principal>,
        rate_bps: u64,
        held: impl Fn(usize) -> (u64, u32),
    ) -> Result<(), PolicyRefusal> {
        if self.is_empty() {
            return Ok(());
        }
        let index = match who {
            Some(p) if p.uid == 0 => return Ok(()),
            Some(p) => self.rule_for(p),
            None => self.rules.iter().position(|r| r.who == Who::Everyone),
        };
        let Some(index) = index else {
            return Err(PolicyRefusal::NoRule {
                uid: who.map_or(u32::MAX, |p| p.uid),
            });
        };
        let rule = &self.rules[index];
        let label = || rule.label.clone();
        if rule.deny {
            return Err(PolicyRefusal::Denied { rule: label() });
        }
        if let Some(limit) = rule.max_rate_bps {
            if rate_bps > limit {
                return Err(PolicyRefusal::Rate {
                    rule: label(),
                    limit,
                    requested: rate_bps,
                });
            }
        }
        let (held_bps, held_conns) = held(index);
        if let Some(limit) = rule.max_connections {
            if held_conns >= limit {
                return Err(PolicyRefusal::Connections {
                    rule: label(),
                    limit,
                });
            }
        }
        if let Some(limit) = rule.max_total_bps {
            if held_bps.saturating_add(rate_bps) > limit {
                return Err(PolicyRefusal::Total {
                    rule: label(),
                    limit,
                    held: held_bps,
                    requested: rate_bps,
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(who: Who, label: &str) -> Rule {
        Rule::allow(who, label)
    }

    fn user(uid: u32, gids: &[u32]) -> Principal {
        Principal {
            uid,
            gids: gids.to_vec(),
        }
    }

    #[test]
    fn no_rules_no_policy_and_root_is_never_limited() {
        let none = Policy::default();
        assert_eq!(
            none.check(Some(&user(1000, &[1000])), u64::MAX, |_| (0, 0)),
            Ok(())
        );
        let strict = Policy {
            rules: vec![Rule {
                deny: true,
                ..rule(Who::Everyone, "everyone")
            }],
        };
        assert_eq!(strict.check(Some(&user(0, &[0])), 1, |_| (0, 0)), Ok(()));
        assert!(strict.check(Some(&user(5, &[5])), 1, |_| (0, 0)).is_err());
    }

    #[test]
    fn the_first_matching_rule_decides_and_unmatched_clients_are_refused() {
        let policy = Policy {
            rules: vec![
                Rule {
                    deny: true,
                    ..rule(Who::Uid(1001), "user mallory")
                },
                Rule {
                    max_rate_bps: Some(20_000_000),
                    ..rule(Who::Gid(29), "group audio")
                },
            ],
        };
        // mallory is in audio too, but the rule for mallory comes first.
        assert_eq!(
            policy.check(Some(&user(1001, &[1001, 29])), 1, |_| (0, 0)),
            Err(PolicyRefusal::Denied {
                rule: "user mallory".into()
            })
        );
        assert_eq!(
            policy.check(Some(&user(1000, &[1000, 29])), 20_000_000, |_| (0, 0)),
            Ok(())
        );
        assert!(matches!(
            policy.check(Some(&user(1000, &[1000, 29])), 20_000_001, |_| (0, 0)),
            Err(PolicyRefusal::Rate {
                limit: 20_000_000,
                ..
            })
        ));
        assert_eq!(
            policy.check(Some(&user(1002, &[1002])), 1, |_| (0, 0)),
            Err(PolicyRefusal::NoRule { uid: 1002 })
        );
        // An unknown peer is governed by an `everyone` rule only.
        assert!(policy.check(None, 1, |_| (0, 0)).is_err());
    }

    #[test]
    fn totals_and_counts_are_what_the_rules_clients_hold_together() {
        let policy = Policy {
            rules: vec![Rule {
                max_total_bps: Some(10_000_000),
                max_connections: Some(2),
                ..rule(Who::Gid(29), "group audio")
            }],
        };
        let member = user(1000, &[1000, 29]);
        assert_eq!(
            policy.check(Some(&member), 4_000_000, |i| {
                assert_eq!(i, 0);
                (6_000_000, 1)
            }),
            Ok(())
        );
        assert!(matches!(
            policy.check(Some(&member), 4_000_001, |_| (6_000_000, 1)),
            Err(PolicyRefusal::Total {
                held: 6_000_000,
                ..
            })
        ));
        assert!(matches!(
            policy.check(Some(&member), 1, |_| (1, 2)),
            Err(PolicyRefusal::Connections { limit: 2, .. })
        ));
    }
}
