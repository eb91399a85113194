//! Control-plane security of the switch's ports: port roles (a host port refuses messages only a
//! switch sends, so a host cannot speak as a switch) and authentication of every control
//! message with the port's link keys (RFC 2747's keys per interface, key ids, sequence numbers;
//! [`crate::auth`]). `docs/protocol.md` "Authentication".
//!
//! Two hooks, nothing else: [`Switch::admit_control`] runs on every parsed control message
//! before it is dispatched, and [`Switch::sign_control`] on every message before it is emitted.
//! A port without keys and with role [`PortRole::Auto`] behaves as before.

use std::borrow::Cow;

use rtlan_wire::control::{Message, Repr, Role};
use rtlan_wire::ethernet::Address;

use super::{PortId, Switch, SwitchConfig};
use crate::auth::{Authenticator, KeyChain};
use crate::time::Instant;

/// What sits at the other end of a port, as configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PortRole {
    /// Learnt from HELLOs, every message accepted (the behaviour without configuration).
    #[default]
    Auto,
    /// A host daemon: only what a host sends is accepted — SETUP, TEARDOWN, TEARDOWN_ACK,
    /// REFRESH with header hop 0, and HELLO with role host. A switch HELLO, SETUP_OK,
    /// SETUP_FAIL, REFRESH_ACK or any hop other than 0 is dropped (counted in
    /// [`super::SwitchStats::control_refused_role`]); the port is therefore never switch-facing.
    Host,
    /// Another switch: every message accepted (switch-facing is still learnt from its HELLOs).
    Trunk,
}

/// Role and link keys of one port.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PortSecurity {
    /// Who may speak on the port.
    pub role: PortRole,
    /// The link's keys; empty = control messages on this port are neither signed nor checked.
    pub keys: KeyChain,
}

/// Per-port authentication state, indexed by port.
#[derive(Debug)]
pub(super) struct SecurityState {
    ports: Vec<Authenticator>,
}

impl SecurityState {
    /// One authenticator per port, its key validity counted from `now`, its sequence numbers
    /// from the configured boot value.
    pub(super) fn new(config: &SwitchConfig, now: Instant) -> SecurityState {
        let ports = config
            .ports
            .iter()
            .map(|p| Authenticator::new(p.security.keys.clone(), now, config.rt.auth_seq_base))
            .collect();
        SecurityState { ports }
    }
}

/// Whether a host may have sent `repr`: hop 0, and only the messages a host daemon writes.
fn host_may_send(repr: &Repr) -> bool {
    repr.hop == 0
        && match repr.message {
            Message::Setup(_)
            | Message::Teardown { .. }
            | Message::TeardownAck { .. }
            | Message::Refresh { .. } => true,
            Message::Hello(hello) => hello.role == Role::HostDaemon,
            Message::SetupOk { .. } | Message::SetupFail { .. } | Message::RefreshAck { .. } => {
                false
            }
        }
}

impl Switch {
    /// Whether the control message `repr` (parsed from `payload`, from `src` on `port`) may be
    /// acted on: it verifies under the port's keys (if it has any) and its port's role allows
    /// it. A refused message is counted in `drop_control` and in the reason's counter.
    pub(super) fn admit_control(
        &mut self,
        now: Instant,
        port: PortId,
        src: Address,
        payload: &[u8],
        repr: &Repr,
    ) -> bool {
        let index = usize::from(port.0);
        let Some(auth) = self.security.ports.get_mut(index) else {
            self.stats.drop_control += 1;
            return false;
        };
        if auth.is_enabled() {
            match auth.verify(now, payload, src) {
                Ok(()) => self.stats.auth.verified += 1,
                Err(failure) => {
                    self.stats.auth.record(failure);
                    self.stats.drop_control += 1;
                    return false;
                }
            }
        }
        let role = self
            .config
            .ports
            .get(index)
            .map_or(PortRole::Auto, |p| p.security.role);
        if role == PortRole::Host && !host_may_send(repr) {
            self.stats.control_refused_role += 1;
            self.stats.drop_control += 1;
            return false;
        }
        true
    }

    /// `repr` as it goes out of `port`: signed with the port's newest valid key when the port
    /// has keys (a stored answer sent again gets a fresh sequence number), unchanged otherwise.
    /// `None` (counted) when the port has keys but none is valid now: the message is not sent.
    pub(super) fn sign_control<'r>(
        &mut self,
        now: Instant,
        port: PortId,
        repr: &'r Repr,
    ) -> Option<Cow<'r, Repr>> {
        let index = usize::from(port.0);
        let (Some(auth), Some(config)) = (
            self.security.ports.get_mut(index),
            self.config.ports.get(index),
        ) else {
            return Some(Cow::Borrowed(repr));
        };
        if !auth.is_enabled() {
            return Some(Cow::Borrowed(repr));
        }
        let mut signed = repr.clone();
        match auth.sign(now, &mut signed, config.mac) {
            Ok(()) => {
                self.stats.auth.signed += 1;
                Some(Cow::Owned(signed))
            }
            Err(failure) => {
                self.stats.auth.record(failure);
                None
            }
        }
    }

    /// The authentication state of `port`'s link (its keys, next sequence number, the replay
    /// windows of its neighbours and its own counters).
    pub fn port_auth(&self, port: PortId) -> Option<&Authenticator> {
        self.security.ports.get(usize::from(port.0))
    }
}

#[cfg(test)]
mod tests;
