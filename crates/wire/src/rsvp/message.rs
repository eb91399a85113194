//! Builders for the seven RSVP messages, writing the objects in the order of RFC 2205
//! §3.1.3–§3.1.9 (INTEGRITY, SCOPE and POLICY_DATA are not produced; add them to
//! [`Repr::objects`] by hand where needed).

use super::object::ObjectRepr;
use super::objects::addressing::{FilterSpec, ResvConfirm, RsvpHop, Session};
use super::objects::adspec::Adspec;
use super::objects::intserv::{Flowspec, TokenBucket};
use super::objects::state::{ErrorSpec, Style, TimeValues};
use super::{MessageType, Repr};

/// `<sender descriptor> ::= <SENDER_TEMPLATE> <SENDER_TSPEC> [ <ADSPEC> ]` (§3.1.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SenderDescriptor {
    /// The sender (SENDER_TEMPLATE).
    pub sender_template: FilterSpec,
    /// The sender's traffic (SENDER_TSPEC).
    pub sender_tspec: TokenBucket,
    /// The path characterisation (ADSPEC), if any.
    pub adspec: Option<Adspec>,
}

impl SenderDescriptor {
    fn push(&self, objects: &mut Vec<ObjectRepr>) {
        objects.push(ObjectRepr::SenderTemplate(self.sender_template));
        objects.push(ObjectRepr::SenderTspec(self.sender_tspec));
        if let Some(adspec) = self.adspec {
            objects.push(ObjectRepr::Adspec(adspec));
        }
    }
}

/// A STYLE and its flow descriptor list (§3.1.4); the style follows from the variant.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum FlowDescriptors {
    /// Wildcard-Filter: one FLOWSPEC for all senders.
    WildcardFilter(Flowspec),
    /// Fixed-Filter: a FLOWSPEC FILTER_SPEC pair per sender.
    FixedFilter(Vec<(Flowspec, FilterSpec)>),
    /// Shared-Explicit: one FLOWSPEC shared by the listed senders.
    SharedExplicit(Flowspec, Vec<FilterSpec>),
}

impl FlowDescriptors {
    /// The STYLE object this list is sent with.
    pub const fn style(&self) -> Style {
        match self {
            FlowDescriptors::WildcardFilter(_) => Style::wildcard_filter(),
            FlowDescriptors::FixedFilter(_) => Style::fixed_filter(),
            FlowDescriptors::SharedExplicit(..) => Style::shared_explicit(),
        }
    }

    /// Pushes STYLE then the flow descriptor list.
    fn push(&self, objects: &mut Vec<ObjectRepr>) {
        objects.push(ObjectRepr::Style(self.style()));
        match self {
            FlowDescriptors::WildcardFilter(flowspec) => {
                objects.push(ObjectRepr::Flowspec(*flowspec));
            }
            FlowDescriptors::FixedFilter(pairs) => {
                for (flowspec, filter) in pairs {
                    objects.push(ObjectRepr::Flowspec(*flowspec));
                    objects.push(ObjectRepr::FilterSpec(*filter));
                }
            }
            FlowDescriptors::SharedExplicit(flowspec, filters) => {
                objects.push(ObjectRepr::Flowspec(*flowspec));
                objects.extend(filters.iter().map(|f| ObjectRepr::FilterSpec(*f)));
            }
        }
    }
}

/// Path (§3.1.3): SESSION, RSVP_HOP (PHOP), TIME_VALUES, sender descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Path {
    /// The session.
    pub session: Session,
    /// The previous hop: the interface this Path is sent from.
    pub hop: RsvpHop,
    /// The sender's refresh period.
    pub time_values: TimeValues,
    /// The sender.
    pub sender: SenderDescriptor,
}

impl Path {
    /// The message, sent with IP TTL `send_ttl`.
    pub fn to_repr(&self, send_ttl: u8) -> Repr {
        let mut objects = vec![
            ObjectRepr::Session(self.session),
            ObjectRepr::RsvpHop(self.hop),
            ObjectRepr::TimeValues(self.time_values),
        ];
        self.sender.push(&mut objects);
        Repr::new(MessageType::Path, send_ttl, objects)
    }
}

/// Resv (§3.1.4): SESSION, RSVP_HOP (NHOP), TIME_VALUES, \[RESV_CONFIRM\], STYLE, flow
/// descriptor list.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Resv {
    /// The session.
    pub session: Session,
    /// The next hop: the interface this Resv is sent from; on a switched path its LIH
    /// carries the label for the link ([`RsvpHop::with_label`]).
    pub hop: RsvpHop,
    /// The receiver's refresh period.
    pub time_values: TimeValues,
    /// Ask for a ResvConf to this receiver.
    pub resv_confirm: Option<ResvConfirm>,
    /// The style and the reservations.
    pub descriptors: FlowDescriptors,
}

impl Resv {
    /// The message, sent with IP TTL `send_ttl`.
    pub fn to_repr(&self, send_ttl: u8) -> Repr {
        let mut objects = vec![
            ObjectRepr::Session(self.session),
            ObjectRepr::RsvpHop(self.hop),
            ObjectRepr::TimeValues(self.time_values),
        ];
        if let Some(confirm) = self.resv_confirm {
            objects.push(ObjectRepr::ResvConfirm(confirm));
        }
        self.descriptors.push(&mut objects);
        Repr::new(MessageType::Resv, send_ttl, objects)
    }
}

/// PathTear (§3.1.5): SESSION, RSVP_HOP (PHOP), [sender descriptor].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PathTear {
    /// The session.
    pub session: Session,
    /// The previous hop.
    pub hop: RsvpHop,
    /// The sender whose path state is torn down (all senders if absent).
    pub sender: Option<SenderDescriptor>,
}

impl PathTear {
    /// The message, sent with IP TTL `send_ttl`.
    pub fn to_repr(&self, send_ttl: u8) -> Repr {
        let mut objects = vec![
            ObjectRepr::Session(self.session),
            ObjectRepr::RsvpHop(self.hop),
        ];
        if let Some(sender) = &self.sender {
            sender.push(&mut objects);
        }
        Repr::new(MessageType::PathTear, send_ttl, objects)
    }
}

/// ResvTear (§3.1.6): SESSION, RSVP_HOP (NHOP), STYLE, flow descriptor list.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ResvTear {
    /// The session.
    pub session: Session,
    /// The next hop.
    pub hop: RsvpHop,
    /// The style and the reservations torn down.
    pub descriptors: FlowDescriptors,
}

impl ResvTear {
    /// The message, sent with IP TTL `send_ttl`.
    pub fn to_repr(&self, send_ttl: u8) -> Repr {
        let mut objects = vec![
            ObjectRepr::Session(self.session),
            ObjectRepr::RsvpHop(self.hop),
        ];
        self.descriptors.push(&mut objects);
        Repr::new(MessageType::ResvTear, send_ttl, objects)
    }
}

/// PathErr (§3.1.7): SESSION, ERROR_SPEC, [sender descriptor].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PathErr {
    /// The session.
    pub session: Session,
    /// The error.
    pub error: ErrorSpec,
    /// The sender whose Path caused it.
    pub sender: Option<SenderDescriptor>,
}

impl PathErr {
    /// The message, sent with IP TTL `send_ttl`.
    pub fn to_repr(&self, send_ttl: u8) -> Repr {
        let mut objects = vec![
            ObjectRepr::Session(self.session),
            ObjectRepr::ErrorSpec(self.error),
        ];
        if let Some(sender) = &self.sender {
            sender.push(&mut objects);
        }
        Repr::new(MessageType::PathErr, send_ttl, objects)
    }
}

/// ResvErr (§3.1.8): SESSION, RSVP_HOP, ERROR_SPEC, STYLE, error flow descriptor.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ResvErr {
    /// The session.
    pub session: Session,
    /// The hop sending the error (towards the receiver).
    pub hop: RsvpHop,
    /// The error.
    pub error: ErrorSpec,
    /// The style and the flow descriptor in error.
    pub descriptors: FlowDescriptors,
}

impl ResvErr {
    /// The message, sent with IP TTL `send_ttl`.
    pub fn to_repr(&self, send_ttl: u8) -> Repr {
        let mut objects = vec![
            ObjectRepr::Session(self.session),
            ObjectRepr::RsvpHop(self.hop),
            ObjectRepr::ErrorSpec(self.error),
        ];
        self.descriptors.push(&mut objects);
        Repr::new(MessageType::ResvErr, send_ttl, objects)
    }
}

/// ResvConf (§3.1.9): SESSION, ERROR_SPEC (code 0, the confirming node), RESV_CONFIRM,
/// STYLE, flow descriptor list.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ResvConf {
    /// The session.
    pub session: Session,
    /// The confirming node, error code [`super::ErrorCode::Confirmation`].
    pub error: ErrorSpec,
    /// The receiver that asked for the confirmation.
    pub resv_confirm: ResvConfirm,
    /// The style and the confirmed reservations.
    pub descriptors: FlowDescriptors,
}

impl ResvConf {
    /// The message, sent with IP TTL `send_ttl`.
    pub fn to_repr(&self, send_ttl: u8) -> Repr {
        let mut objects = vec![
            ObjectRepr::Session(self.session),
            ObjectRepr::ErrorSpec(self.error),
            ObjectRepr::ResvConfirm(self.resv_confirm),
        ];
        self.descriptors.push(&mut objects);
        Repr::new(MessageType::ResvConf, send_ttl, objects)
    }
}
