//! From an owned [`Repr`] to the typed message an RSVP engine acts on (RFC 2205 §3.1.3–§3.1.9):
//! [`Message::from_repr`] picks the objects each message type needs, in any order, the first
//! of each class when one is repeated, and reads the flow descriptor list by its STYLE —
//! Fixed-Filter as FLOWSPEC FILTER_SPEC pairs where a FILTER_SPEC without its own FLOWSPEC
//! shares the one before it (§3.1.4 `<FF flow descriptor> ::= [<FLOWSPEC>] <FILTER_SPEC>`),
//! Shared-Explicit as one FLOWSPEC and its FILTER_SPECs, Wildcard-Filter as one FLOWSPEC.
//! [`Message::to_repr`] writes it back with the builders, so a typed message survives the
//! round trip exactly.
//!
//! rtlan's own ResvTear, ResvErr and ResvConf always carry their FLOWSPECs; a list that starts
//! with a FILTER_SPEC (RFC 2205 lets a ResvTear omit the FLOWSPECs) is refused as missing one.

use super::message::SenderDescriptor;
use super::object::{ClassNum, ObjectRepr};
use super::objects::state::StyleKind;
use super::{
    ErrorSpec, FilterSpec, FlowDescriptors, Flowspec, MessageType, Path, PathErr, PathTear, Repr,
    Result, Resv, ResvConf, ResvConfirm, ResvErr, ResvTear, RsvpError, RsvpHop, Session, Style,
    TimeValues,
};

/// A decoded RSVP message.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Message {
    /// Path.
    Path(Path),
    /// Resv.
    Resv(Resv),
    /// PathErr.
    PathErr(PathErr),
    /// ResvErr.
    ResvErr(ResvErr),
    /// PathTear.
    PathTear(PathTear),
    /// ResvTear.
    ResvTear(ResvTear),
    /// ResvConf.
    ResvConf(ResvConf),
}

/// The first object of each class a message needs.
struct Picker<'a> {
    repr: &'a Repr,
}

impl Picker<'_> {
    fn missing(&self, class: ClassNum) -> RsvpError {
        RsvpError::MissingObject {
            message: self.repr.msg_type,
            class,
        }
    }

    fn session(&self) -> Result<Session> {
        self.repr
            .objects
            .iter()
            .find_map(|o| match o {
                ObjectRepr::Session(s) => Some(*s),
                _ => None,
            })
            .ok_or(self.missing(ClassNum::Session))
    }

    fn hop(&self) -> Result<RsvpHop> {
        self.repr
            .objects
            .iter()
            .find_map(|o| match o {
                ObjectRepr::RsvpHop(h) => Some(*h),
                _ => None,
            })
            .ok_or(self.missing(ClassNum::RsvpHop))
    }

    fn time_values(&self) -> Result<TimeValues> {
        self.repr
            .objects
            .iter()
            .find_map(|o| match o {
                ObjectRepr::TimeValues(t) => Some(*t),
                _ => None,
            })
            .ok_or(self.missing(ClassNum::TimeValues))
    }

    fn error(&self) -> Result<ErrorSpec> {
        self.repr
            .objects
            .iter()
            .find_map(|o| match o {
                ObjectRepr::ErrorSpec(e) => Some(*e),
                _ => None,
            })
            .ok_or(self.missing(ClassNum::ErrorSpec))
    }

    fn resv_confirm(&self) -> Option<ResvConfirm> {
        self.repr.objects.iter().find_map(|o| match o {
            ObjectRepr::ResvConfirm(c) => Some(*c),
            _ => None,
        })
    }

    /// The sender descriptor: `Ok(None)` without a SENDER_TEMPLATE; a template without a
    /// SENDER_TSPEC is refused.
    fn sender(&self) -> Result<Option<SenderDescriptor>> {
        let objects = &self.repr.objects;
        let Some(sender_template) = objects.iter().find_map(|o| match o {
            ObjectRepr::SenderTemplate(t) => Some(*t),
            _ => None,
        }) else {
            return Ok(None);
        };
        let sender_tspec = objects
            .iter()
            .find_map(|o| match o {
                ObjectRepr::SenderTspec(t) => Some(*t),
                _ => None,
            })
            .ok_or(self.missing(ClassNum::SenderTspec))?;
        let adspec = objects.iter().find_map(|o| match o {
            ObjectRepr::Adspec(a) => Some(*a),
            _ => None,
        });
        Ok(Some(SenderDescriptor {
            sender_template,
            sender_tspec,
            adspec,
        }))
    }

    /// STYLE and the flow descriptor list after it.
    fn descriptors(&self) -> Result<FlowDescriptors> {
        let style: Style = self
            .repr
            .objects
            .iter()
            .find_map(|o| match o {
                ObjectRepr::Style(s) => Some(*s),
                _ => None,
            })
            .ok_or(self.missing(ClassNum::Style))?;
        // FLOWSPECs and FILTER_SPECs in the order written.
        let mut flowspec: Option<Flowspec> = None;
        let mut first_flowspec: Option<Flowspec> = None;
        let mut pairs: Vec<(Flowspec, FilterSpec)> = Vec::new();
        let mut filters: Vec<FilterSpec> = Vec::new();
        for object in &self.repr.objects {
            match object {
                ObjectRepr::Flowspec(f) => {
                    flowspec = Some(*f);
                    first_flowspec.get_or_insert(*f);
                }
                ObjectRepr::FilterSpec(filter) => {
                    let f = flowspec.ok_or(self.missing(ClassNum::Flowspec))?;
                    pairs.push((f, *filter));
                    filters.push(*filter);
                }
                _ => {}
            }
        }
        let first = first_flowspec.ok_or(self.missing(ClassNum::Flowspec))?;
        match style.kind() {
            StyleKind::WildcardFilter => Ok(FlowDescriptors::WildcardFilter(first)),
            StyleKind::FixedFilter if !pairs.is_empty() => Ok(FlowDescriptors::FixedFilter(pairs)),
            StyleKind::SharedExplicit if !filters.is_empty() => {
                Ok(FlowDescriptors::SharedExplicit(first, filters))
            }
            StyleKind::FixedFilter | StyleKind::SharedExplicit => {
                Err(self.missing(ClassNum::FilterSpec))
            }
            StyleKind::Unknown(options) => Err(RsvpError::UnknownStyle(options)),
        }
    }
}

impl Message {
    /// The typed message of `repr`; an unknown message type is
    /// [`RsvpError::UnknownMessage`], a missing object [`RsvpError::MissingObject`].
    pub fn from_repr(repr: &Repr) -> Result<Message> {
        let p = Picker { repr };
        Ok(match repr.msg_type {
            MessageType::Path => Message::Path(Path {
                session: p.session()?,
                hop: p.hop()?,
                time_values: p.time_values()?,
                sender: p.sender()?.ok_or(p.missing(ClassNum::SenderTemplate))?,
            }),
            MessageType::Resv => Message::Resv(Resv {
                session: p.session()?,
                hop: p.hop()?,
                time_values: p.time_values()?,
                resv_confirm: p.resv_confirm(),
                descriptors: p.descriptors()?,
            }),
            MessageType::PathErr => Message::PathErr(PathErr {
                session: p.session()?,
                error: p.error()?,
                sender: p.sender()?,
            }),
            MessageType::ResvErr => Message::ResvErr(ResvErr {
                session: p.session()?,
                hop: p.hop()?,
                error: p.error()?,
                descriptors: p.descriptors()?,
            }),
            MessageType::PathTear => Message::PathTear(PathTear {
                session: p.session()?,
                hop: p.hop()?,
                sender: p.sender()?,
            }),
            MessageType::ResvTear => Message::ResvTear(ResvTear {
                session: p.session()?,
                hop: p.hop()?,
                descriptors: p.descriptors()?,
            }),
            MessageType::ResvConf => Message::ResvConf(ResvConf {
                session: p.session()?,
                error: p.error()?,
                resv_confirm: p.resv_confirm().ok_or(p.missing(ClassNum::ResvConfirm))?,
                descriptors: p.descriptors()?,
            }),
            MessageType::Unknown(code) => return Err(RsvpError::UnknownMessage(code)),
        })
    }

    /// The message, sent with IP TTL `send_ttl`.
    pub fn to_repr(&self, send_ttl: u8) -> Repr {
        match self {
            Message::Path(m) => m.to_repr(send_ttl),
            Message::Resv(m) => m.to_repr(send_ttl),
            Message::PathErr(m) => m.to_repr(send_ttl),
            Message::ResvErr(m) => m.to_repr(send_ttl),
            Message::PathTear(m) => m.to_repr(send_ttl),
            Message::ResvTear(m) => m.to_repr(send_ttl),
            Message::ResvConf(m) => m.to_repr(send_ttl),
        }
    }

    /// Its session.
    pub fn session(&self) -> &Session {
        match self {
            Message::Path(m) => &m.session,
            Message::Resv(m) => &m.session,
            Message::PathErr(m) => &m.session,
            Message::ResvErr(m) => &m.session,
            Message::PathTear(m) => &m.session,
            Message::ResvTear(m) => &m.session,
            Message::ResvConf(m) => &m.session,
        }
    }

    /// Its type.
    pub fn msg_type(&self) -> MessageType {
        match self {
            Message::Path(_) => MessageType::Path,
            Message::Resv(_) => MessageType::Resv,
            Message::PathErr(_) => MessageType::PathErr,
            Message::ResvErr(_) => MessageType::ResvErr,
            Message::PathTear(_) => MessageType::PathTear,
            Message::ResvTear(_) => MessageType::ResvTear,
            Message::ResvConf(_) => MessageType::ResvConf,
        }
    }
}
