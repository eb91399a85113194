//! The TLVs of restart safety and soft-state recovery (`docs/protocol.md` §5 "Restarts" and §6):
//! the sender's boot **epoch** on every message, so request ids never alias across a restart
//! (RFC 2205 §3.7 leaves this to "the instance" of the soft state; we make it explicit), and the
//! **reason** a TEARDOWN carries, so the sending host can tell a path to re-signal (state lost
//! at a restarted switch, soft state expired, topology change) from a path that is gone (link
//! down, neighbour lost, operator).

use core::fmt;

use super::repr::Tlv;
use crate::{Error, Result};

/// TLV type of the sender's boot epoch ([`EpochTlv`], 8 bytes).
pub const TLV_EPOCH: u8 = 4;

/// TLV type of a TEARDOWN's reason ([`TeardownReason`], 1 byte).
pub const TLV_REASON: u8 = 5;

/// A node's boot epoch: chosen once per start of a daemon or switch, different after every
/// restart (the Linux shells take the start time in seconds in the high 32 bits and 32 random
/// bits in the low ones). A receiver that hears a new epoch from a neighbour knows the
/// neighbour restarted and lost every connection it had; request ids are only compared within
/// one epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct EpochTlv(pub u64);

impl EpochTlv {
    /// Length of the value.
    pub const LEN: usize = 8;

    /// Reads the value of an EPOCH TLV; [`Error::Malformed`] unless it is 8 bytes.
    pub(super) fn parse(value: &[u8]) -> Result<EpochTlv> {
        let value: [u8; Self::LEN] = value.try_into().map_err(|_| Error::Malformed)?;
        Ok(EpochTlv(u64::from_be_bytes(value)))
    }

    /// The TLV carrying this epoch.
    pub fn to_tlv(self) -> Tlv {
        Tlv {
            kind: TLV_EPOCH,
            value: self.0.to_be_bytes().to_vec(),
        }
    }
}

/// Why a connection was torn down (TLV [`TLV_REASON`] in TEARDOWN). The first four ask the
/// sending host to signal the connection again; the others end it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TeardownReason {
    /// The sender closed the connection, 1.
    Closed,
    /// No REFRESH reached a switch within its refresh timeout, 2 (re-signal).
    Expired,
    /// A switch on the path does not know the connection (it restarted), 3 (re-signal).
    StateLost,
    /// A neighbour on the path restarted (new boot epoch), 4 (re-signal).
    NeighbourRestarted,
    /// The spanning tree moved the path, 5 (re-signal).
    TopologyChange,
    /// A link of the path lost carrier, 6.
    LinkDown,
    /// A neighbour switch on the path stopped sending HELLO, 7.
    NeighbourLost,
    /// An operator released the connection, 8.
    Administrative,
    /// Any other value, kept as data.
    Unknown(u8),
}

impl TeardownReason {
    /// Whether the sending host should signal the connection again along the (possibly new)
    /// path rather than report it lost.
    pub fn resignal(self) -> bool {
        matches!(
            self,
            TeardownReason::Expired
                | TeardownReason::StateLost
                | TeardownReason::NeighbourRestarted
                | TeardownReason::TopologyChange
        )
    }

    /// Reads the value of a REASON TLV; [`Error::Malformed`] unless it is 1 byte.
    pub(super) fn parse(value: &[u8]) -> Result<TeardownReason> {
        match value {
            [code] => Ok(TeardownReason::from(*code)),
            _ => Err(Error::Malformed),
        }
    }

    /// The TLV carrying this reason.
    pub fn to_tlv(self) -> Tlv {
        Tlv {
            kind: TLV_REASON,
            value: vec![u8::from(self)],
        }
    }

    /// The short name used in JSON and logs (`snake_case`).
    pub fn name(self) -> &'static str {
        match self {
            TeardownReason::Closed => "closed",
            TeardownReason::Expired => "expired",
            TeardownReason::StateLost => "state_lost",
            TeardownReason::NeighbourRestarted => "neighbour_restarted",
            TeardownReason::TopologyChange => "topology_change",
            TeardownReason::LinkDown => "link_down",
            TeardownReason::NeighbourLost => "neighbour_lost",
            TeardownReason::Administrative => "administrative",
            TeardownReason::Unknown(_) => "unknown",
        }
    }
}

impl From<u8> for TeardownReason {
    fn from(value: u8) -> TeardownReason {
        match value {
            1 => TeardownReason::Closed,
            2 => TeardownReason::Expired,
            3 => TeardownReason::StateLost,
            4 => TeardownReason::NeighbourRestarted,
            5 => TeardownReason::TopologyChange,
            6 => TeardownReason::LinkDown,
            7 => TeardownReason::NeighbourLost,
            8 => TeardownReason::Administrative,
            other => TeardownReason::Unknown(other),
        }
    }
}

impl From<TeardownReason> for u8 {
    fn from(value: TeardownReason) -> u8 {
        match value {
            TeardownReason::Closed => 1,
            TeardownReason::Expired => 2,
            TeardownReason::StateLost => 3,
            TeardownReason::NeighbourRestarted => 4,
            TeardownReason::TopologyChange => 5,
            TeardownReason::LinkDown => 6,
            TeardownReason::NeighbourLost => 7,
            TeardownReason::Administrative => 8,
            TeardownReason::Unknown(other) => other,
        }
    }
}

impl fmt::Display for TeardownReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TeardownReason::Closed => write!(f, "closed by the sender"),
            TeardownReason::Expired => write!(f, "soft state expired (no REFRESH)"),
            TeardownReason::StateLost => write!(
                f,
                "a hop on the path (switch or router) lost the connection"
            ),
            TeardownReason::NeighbourRestarted => write!(f, "a node on the path restarted"),
            TeardownReason::TopologyChange => write!(f, "the spanning tree moved the path"),
            TeardownReason::LinkDown => write!(f, "a link of the path went down"),
            TeardownReason::NeighbourLost => write!(f, "a switch on the path went silent"),
            TeardownReason::Administrative => write!(f, "released by an operator"),
            TeardownReason::Unknown(v) => write!(f, "reason {v}"),
        }
    }
}
