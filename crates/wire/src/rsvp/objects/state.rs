//! Objects about the soft state itself: TIME_VALUES (RFC 2205 §A.4), ERROR_SPEC, IPv4
//! (§A.5, error codes from Appendix B) and STYLE (§A.7, §3.1.4).

use std::net::Ipv4Addr;

use super::{addr_at, u16_at, u32_at, Body, BodyWriter};

/// TIME_VALUES (class 5, C-Type 1): the refresh period R the sender of the message uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TimeValues {
    /// The refresh period R in milliseconds.
    pub refresh_period_ms: u32,
}

impl TimeValues {
    /// Body length.
    pub const LEN: usize = 4;

    pub(in crate::rsvp) fn parse_body(b: &[u8; Self::LEN]) -> TimeValues {
        TimeValues {
            refresh_period_ms: u32_at(b, 0),
        }
    }
}

impl Body for TimeValues {
    fn body_len(&self) -> usize {
        Self::LEN
    }

    fn emit_body(&self, w: &mut BodyWriter<'_>) {
        w.u32(self.refresh_period_ms);
    }
}

/// The Error Code of an ERROR_SPEC (RFC 2205 Appendix B).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ErrorCode {
    /// Confirmation, 0 (in a ResvConf).
    Confirmation,
    /// Admission control failure, 1.
    AdmissionControlFailure,
    /// Policy control failure, 2.
    PolicyControlFailure,
    /// No path information for this Resv, 3.
    NoPathInformation,
    /// No sender information for this Resv, 4.
    NoSenderInformation,
    /// Conflicting reservation style, 5.
    ConflictingStyle,
    /// Unknown reservation style, 6.
    UnknownStyle,
    /// Conflicting destination ports, 7.
    ConflictingDstPorts,
    /// Conflicting sender ports, 8.
    ConflictingSrcPorts,
    /// Service preempted, 12.
    ServicePreempted,
    /// Unknown object class, 13.
    UnknownObjectClass,
    /// Unknown object C-Type, 14.
    UnknownCType,
    /// API error, 20.
    ApiError,
    /// Traffic control error, 21.
    TrafficControlError,
    /// Traffic control system error, 22.
    TrafficControlSystemError,
    /// RSVP system error, 23.
    RsvpSystemError,
    /// Any other value, kept as data.
    Unknown(u8),
}

impl From<u8> for ErrorCode {
    fn from(value: u8) -> ErrorCode {
        match value {
            0 => ErrorCode::Confirmation,
            1 => ErrorCode::AdmissionControlFailure,
            2 => ErrorCode::PolicyControlFailure,
            3 => ErrorCode::NoPathInformation,
            4 => ErrorCode::NoSenderInformation,
            5 => ErrorCode::ConflictingStyle,
            6 => ErrorCode::UnknownStyle,
            7 => ErrorCode::ConflictingDstPorts,
            8 => ErrorCode::ConflictingSrcPorts,
            12 => ErrorCode::ServicePreempted,
            13 => ErrorCode::UnknownObjectClass,
            14 => ErrorCode::UnknownCType,
            20 => ErrorCode::ApiError,
            21 => ErrorCode::TrafficControlError,
            22 => ErrorCode::TrafficControlSystemError,
            23 => ErrorCode::RsvpSystemError,
            other => ErrorCode::Unknown(other),
        }
    }
}

impl From<ErrorCode> for u8 {
    fn from(value: ErrorCode) -> u8 {
        match value {
            ErrorCode::Confirmation => 0,
            ErrorCode::AdmissionControlFailure => 1,
            ErrorCode::PolicyControlFailure => 2,
            ErrorCode::NoPathInformation => 3,
            ErrorCode::NoSenderInformation => 4,
            ErrorCode::ConflictingStyle => 5,
            ErrorCode::UnknownStyle => 6,
            ErrorCode::ConflictingDstPorts => 7,
            ErrorCode::ConflictingSrcPorts => 8,
            ErrorCode::ServicePreempted => 12,
            ErrorCode::UnknownObjectClass => 13,
            ErrorCode::UnknownCType => 14,
            ErrorCode::ApiError => 20,
            ErrorCode::TrafficControlError => 21,
            ErrorCode::TrafficControlSystemError => 22,
            ErrorCode::RsvpSystemError => 23,
            ErrorCode::Unknown(other) => other,
        }
    }
}

/// ERROR_SPEC, IPv4 (class 6, C-Type 1): who detected which error.
///
/// ```text
/// | IPv4 Error Node Address (4)                            |
/// | Flags (1) | Error Code (1) | Error Value (2)           |
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ErrorSpec {
    /// The node that detected the error (or, in a ResvConf, the confirming node).
    pub node: Ipv4Addr,
    /// Flags ([`ErrorSpec::IN_PLACE`], [`ErrorSpec::NOT_GUILTY`]).
    pub flags: u8,
    /// The error code.
    pub code: ErrorCode,
    /// The error value; its meaning depends on the code (Appendix B).
    pub value: u16,
}

impl ErrorSpec {
    /// Body length.
    pub const LEN: usize = 8;
    /// Flag InPlace: a reservation failed but the previous one is left in place (ResvErr).
    pub const IN_PLACE: u8 = 0x01;
    /// Flag NotGuilty: the receiver of this ResvErr did not cause the failure.
    pub const NOT_GUILTY: u8 = 0x02;

    pub(in crate::rsvp) fn parse_body(b: &[u8; Self::LEN]) -> ErrorSpec {
        ErrorSpec {
            node: addr_at(b, 0),
            flags: b[4],
            code: ErrorCode::from(b[5]),
            value: u16_at(b, 6),
        }
    }
}

impl Body for ErrorSpec {
    fn body_len(&self) -> usize {
        Self::LEN
    }

    fn emit_body(&self, w: &mut BodyWriter<'_>) {
        w.addr(self.node);
        w.u8(self.flags);
        w.u8(self.code.into());
        w.u16(self.value);
    }
}

/// The reservation style an option vector names (RFC 2205 §1.3, §A.7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum StyleKind {
    /// Wildcard-Filter: shared, wildcard sender selection (option vector 0x11).
    WildcardFilter,
    /// Fixed-Filter: distinct, explicit sender selection (0x0a).
    FixedFilter,
    /// Shared-Explicit: shared, explicit sender selection (0x12).
    SharedExplicit,
    /// Any other option vector.
    Unknown(u32),
}

/// STYLE (class 8, C-Type 1): flags and a 24-bit option vector.
///
/// ```text
/// | Flags (1) | Option Vector (3)                          |
/// ```
///
/// The option vector's low 5 bits are the sharing control (2 bits: 01 distinct, 10 shared)
/// and the sender selection (3 bits: 001 wildcard, 010 explicit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Style {
    /// Flags (none defined by RFC 2205).
    pub flags: u8,
    /// The option vector (low 24 bits written).
    pub options: u32,
}

impl Style {
    /// Body length.
    pub const LEN: usize = 4;
    /// Option vector of the Wildcard-Filter style.
    pub const WF: u32 = 0x11;
    /// Option vector of the Fixed-Filter style.
    pub const FF: u32 = 0x0a;
    /// Option vector of the Shared-Explicit style.
    pub const SE: u32 = 0x12;

    /// The Wildcard-Filter style.
    pub const fn wildcard_filter() -> Style {
        Style {
            flags: 0,
            options: Self::WF,
        }
    }

    /// The Fixed-Filter style.
    pub const fn fixed_filter() -> Style {
        Style {
            flags: 0,
            options: Self::FF,
        }
    }

    /// The Shared-Explicit style.
    pub const fn shared_explicit() -> Style {
        Style {
            flags: 0,
            options: Self::SE,
        }
    }

    /// Which style the option vector names.
    pub const fn kind(&self) -> StyleKind {
        match self.options {
            Self::WF => StyleKind::WildcardFilter,
            Self::FF => StyleKind::FixedFilter,
            Self::SE => StyleKind::SharedExplicit,
            other => StyleKind::Unknown(other),
        }
    }

    pub(in crate::rsvp) fn parse_body(b: &[u8; Self::LEN]) -> Style {
        Style {
            flags: b[0],
            options: u32_at(b, 0) & 0x00ff_ffff,
        }
    }
}

impl Body for Style {
    fn body_len(&self) -> usize {
        Self::LEN
    }

    fn emit_body(&self, w: &mut BodyWriter<'_>) {
        w.u32((u32::from(self.flags) << 24) | (self.options & 0x00ff_ffff));
    }
}
