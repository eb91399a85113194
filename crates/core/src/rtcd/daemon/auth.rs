//! The host daemon's end of control-message authentication (RFC 2747 keys per link, key ids,
//! sequence numbers; [`crate::auth`]): every message it sends is signed with its link's newest
//! valid key, every message it receives must verify, when it has keys. Two hooks only:
//! [`Rtcd::send_control`], the one place `Action::SendControl` is produced, and
//! [`Rtcd::handle_control_frame`], the entry for received frames.

use rtlan_wire::control::{Packet, Repr};
use rtlan_wire::ethernet::Address;

use super::super::api::Action;
use super::super::{Config, RtcdError};
use super::Rtcd;
use crate::auth::{AuthFailure, AuthStats, Authenticator};
use crate::time::Instant;

/// The daemon's authenticator: its configured keys, valid from `now` (its start), sequence
/// numbers from the configured boot value.
pub(super) fn authenticator(config: &Config, now: Instant) -> Authenticator {
    Authenticator::new(config.keys.clone(), now, config.auth_seq_base)
}

/// The error a refused message is reported with.
fn refused(failure: AuthFailure) -> RtcdError {
    RtcdError::Malformed(match failure {
        AuthFailure::Unsigned => "control message not authenticated",
        AuthFailure::Malformed => "control message with malformed authentication data",
        AuthFailure::UnknownKey(_) => "control message signed with an unknown or expired key",
        AuthFailure::BadDigest => "control message digest does not verify",
        AuthFailure::Replayed(_) => "control message replayed",
        AuthFailure::TooManySenders => "control message from too many senders",
        AuthFailure::NoSendKey => "no valid key",
    })
}

impl Rtcd {
    /// Queues `repr` for the link to `dst`, signed as sent by the host's MAC when the daemon has
    /// keys. With keys but none valid now, nothing is sent (counted in
    /// [`AuthStats::no_send_key`]); retransmission and soft state treat it as a lost frame.
    pub(super) fn send_control(&mut self, now: Instant, dst: Address, mut repr: Repr) {
        let src = self.config.host_mac;
        if self.auth.sign(now, &mut repr, src).is_ok() {
            self.actions.push_back(Action::SendControl { dst, repr });
        }
    }

    /// With keys, a message whose sender is unknown cannot be checked: refused.
    pub(super) fn refuse_unverified(&self) -> Result<(), RtcdError> {
        if self.auth.is_enabled() {
            return Err(RtcdError::Malformed(
                "with keys, control messages need their sender (handle_control_frame)",
            ));
        }
        Ok(())
    }

    /// Checks a control message (the Ethernet payload of an EtherType 0x88B5 frame from `src`)
    /// against the link's keys when the daemon has any, then parses and handles it.
    /// [`RtcdError::Malformed`] (and nothing else happens) if it fails to verify (counted in
    /// [`Rtcd::auth_stats`]) or does not parse.
    pub fn handle_control_frame(
        &mut self,
        now: Instant,
        src: Address,
        payload: &[u8],
    ) -> Result<(), RtcdError> {
        self.auth.verify(now, payload, src).map_err(refused)?;
        let repr = Packet::new_checked(payload)
            .and_then(|p| Repr::parse(&p))
            .map_err(|_| RtcdError::Malformed("control message does not parse"))?;
        self.handle_control(now, &repr);
        Ok(())
    }

    /// Authentication counters (all zero without keys).
    pub fn auth_stats(&self) -> &AuthStats {
        self.auth.stats()
    }
}

#[cfg(test)]
#[path = "auth_tests.rs"]
mod tests;
