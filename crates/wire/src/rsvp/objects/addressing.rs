//! Objects naming the session, the neighbour and the senders: SESSION, RSVP_HOP, FILTER_SPEC,
//! SENDER_TEMPLATE and RESV_CONFIRM in their IPv4 forms (RFC 2205 §A.1, §A.2, §A.9, §A.10,
//! §A.11), and the LABEL object of RFC 3209 §4.1.

use std::net::Ipv4Addr;

use super::{addr_at, u16_at, u32_at, Body, BodyWriter};

/// SESSION, IPv4 (class 1, C-Type 1): the destination the reservation is for.
///
/// ```text
/// | IPv4 DestAddress (4)                                   |
/// | Protocol Id (1) | Flags (1) | DstPort (2)              |
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Session {
    /// The destination address (unicast or multicast).
    pub dst_addr: Ipv4Addr,
    /// The IP protocol of the data flow (17 for UDP).
    pub protocol_id: u8,
    /// Flags ([`Session::E_POLICE`]).
    pub flags: u8,
    /// The destination port, 0 for none.
    pub dst_port: u16,
}

impl Session {
    /// Body length.
    pub const LEN: usize = 8;
    /// Flag E_Police: police the data at the edge of the reservation (RFC 2205 §A.1).
    pub const E_POLICE: u8 = 0x01;

    pub(in crate::rsvp) fn parse_body(b: &[u8; Self::LEN]) -> Session {
        Session {
            dst_addr: addr_at(b, 0),
            protocol_id: b[4],
            flags: b[5],
            dst_port: u16_at(b, 6),
        }
    }
}

impl Body for Session {
    fn body_len(&self) -> usize {
        Self::LEN
    }

    fn emit_body(&self, w: &mut BodyWriter<'_>) {
        w.addr(self.dst_addr);
        w.u8(self.protocol_id);
        w.u8(self.flags);
        w.u16(self.dst_port);
    }
}

/// RSVP_HOP, IPv4 (class 3, C-Type 1): the previous hop (PHOP, in Path, PathTear, PathErr) or
/// next hop (NHOP, in Resv, ResvTear, ResvErr) that sent the message.
///
/// ```text
/// | IPv4 Next/Previous Hop Address (4)                     |
/// | Logical Interface Handle (4)                           |
/// ```
///
/// On a QSR switched path the Logical Interface Handle of a Path's RSVP_HOP carries the MPLS
/// label the sender of the Path (the link's upstream node) chose for the path on this link, and
/// the Resv returns it (QSR paper §3.2 carries its VC there); see [`RsvpHop::label`] and
/// `docs/rsvp.md`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RsvpHop {
    /// The address of the interface that sent the message.
    pub address: Ipv4Addr,
    /// The Logical Interface Handle (LIH).
    pub lih: u32,
}

impl RsvpHop {
    /// Body length.
    pub const LEN: usize = 8;

    /// A hop whose LIH carries the 20-bit MPLS label `label` (bits above 20 cleared).
    pub fn with_label(address: Ipv4Addr, label: u32) -> RsvpHop {
        RsvpHop {
            address,
            lih: label & crate::mpls::MAX_LABEL,
        }
    }

    /// The MPLS label carried in the LIH, `None` if the LIH does not fit in 20 bits (then it
    /// is an ordinary interface handle, not a label).
    pub fn label(&self) -> Option<u32> {
        (self.lih <= crate::mpls::MAX_LABEL).then_some(self.lih)
    }

    pub(in crate::rsvp) fn parse_body(b: &[u8; Self::LEN]) -> RsvpHop {
        RsvpHop {
            address: addr_at(b, 0),
            lih: u32_at(b, 4),
        }
    }
}

impl Body for RsvpHop {
    fn body_len(&self) -> usize {
        Self::LEN
    }

    fn emit_body(&self, w: &mut BodyWriter<'_>) {
        w.addr(self.address);
        w.u32(self.lih);
    }
}

/// FILTER_SPEC (class 10) and SENDER_TEMPLATE (class 11), IPv4, C-Type 1: one sender.
///
/// ```text
/// | IPv4 SrcAddress (4)                                    |
/// | reserved (2)                | SrcPort (2)              |
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FilterSpec {
    /// The sender's address.
    pub src_addr: Ipv4Addr,
    /// The sender's port, 0 for none.
    pub src_port: u16,
}

/// SENDER_TEMPLATE has the layout of FILTER_SPEC (RFC 2205 §A.10).
pub type SenderTemplate = FilterSpec;

impl FilterSpec {
    /// Body length.
    pub const LEN: usize = 8;

    pub(in crate::rsvp) fn parse_body(b: &[u8; Self::LEN]) -> FilterSpec {
        FilterSpec {
            src_addr: addr_at(b, 0),
            src_port: u16_at(b, 6),
        }
    }
}

impl Body for FilterSpec {
    fn body_len(&self) -> usize {
        Self::LEN
    }

    fn emit_body(&self, w: &mut BodyWriter<'_>) {
        w.addr(self.src_addr);
        w.u16(0);
        w.u16(self.src_port);
    }
}

/// RESV_CONFIRM, IPv4 (class 15, C-Type 1): where to send the ResvConf.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ResvConfirm {
    /// The receiver asking for confirmation.
    pub receiver: Ipv4Addr,
}

impl ResvConfirm {
    /// Body length.
    pub const LEN: usize = 4;

    pub(in crate::rsvp) fn parse_body(b: &[u8; Self::LEN]) -> ResvConfirm {
        ResvConfirm {
            receiver: addr_at(b, 0),
        }
    }
}

impl Body for ResvConfirm {
    fn body_len(&self) -> usize {
        Self::LEN
    }

    fn emit_body(&self, w: &mut BodyWriter<'_>) {
        w.addr(self.receiver);
    }
}

/// LABEL (class 16, C-Type 1, RFC 3209 §4.1): a 32-bit word holding a 20-bit MPLS label,
/// RSVP-TE's way of distributing labels in a Resv. We carry the label in the RSVP_HOP LIH as
/// the QSR paper does; this object is read and written so both encodings interoperate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Label {
    /// The label word (an MPLS label in its low 20 bits).
    pub value: u32,
}

impl Label {
    /// Body length.
    pub const LEN: usize = 4;

    pub(in crate::rsvp) fn parse_body(b: &[u8; Self::LEN]) -> Label {
        Label {
            value: u32_at(b, 0),
        }
    }
}

impl Body for Label {
    fn body_len(&self) -> usize {
        Self::LEN
    }

    fn emit_body(&self, w: &mut BodyWriter<'_>) {
        w.u32(self.value);
    }
}
