//! Integrated Services data in RSVP (RFC 2210 §3.1 SENDER_TSPEC, §3.2 FLOWSPEC) and the token
//! bucket TSpec it carries (RFC 2215 §4, parameter 127), with the Guaranteed service's RSpec
//! (RFC 2212, parameter 130).
//!
//! An Integrated Services body is a list of 32-bit words: a message header (version 0 in the
//! top nibble, the body's length in words after this header in the low 16 bits), then per
//! service a service header (service number, break bit, length in words) and per parameter a
//! parameter header (parameter id, flags, length in words), each followed by its data.
//! [`Flowspec`] and [`TokenBucket`] read and write exactly the forms of RFC 2210 §3.1–§3.2;
//! anything else is left to [`super::super::ObjectRepr::Unknown`].

use core::fmt;

use super::{Body, BodyWriter, Words};

/// Service number of the default (general) parameters (RFC 2215).
pub(super) const SERVICE_GENERAL: u8 = 1;
/// Service number of Guaranteed service (RFC 2212).
pub(super) const SERVICE_GUARANTEED: u8 = 2;
/// Service number of Controlled-Load service (RFC 2211).
pub(super) const SERVICE_CONTROLLED_LOAD: u8 = 5;
/// Parameter id of the token bucket TSpec (RFC 2215 §4).
const PARAM_TOKEN_BUCKET: u8 = 127;
/// Parameter id of the Guaranteed service RSpec (RFC 2212).
const PARAM_GUARANTEED_RSPEC: u8 = 130;

/// Length of the token bucket parameter data in words (r, b, p, m, M).
const TOKEN_BUCKET_WORDS: u16 = 5;

/// The Integrated Services message header: version 0, `words` words following.
pub(super) const fn message_header(words: u16) -> u32 {
    words as u32
}

/// A service header: service number, break bit, `words` words of data following.
pub(super) const fn service_header(service: u8, break_bit: bool, words: u16) -> u32 {
    ((service as u32) << 24) | ((break_bit as u32) << 23) | words as u32
}

/// A parameter header with no flags set and `words` words of data following.
pub(super) const fn param_header(id: u8, words: u16) -> u32 {
    ((id as u32) << 24) | words as u32
}

/// An IEEE 754 single-precision value kept as its bit pattern, so that a parsed message writes
/// back bit for bit and compares exactly (NaN payloads and −0 included).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct F32Bits(pub u32);

impl F32Bits {
    /// The bits of `value`.
    pub const fn from_f32(value: f32) -> F32Bits {
        F32Bits(value.to_bits())
    }

    /// The value.
    pub const fn to_f32(self) -> f32 {
        f32::from_bits(self.0)
    }
}

impl From<f32> for F32Bits {
    fn from(value: f32) -> F32Bits {
        F32Bits::from_f32(value)
    }
}

impl fmt::Debug for F32Bits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.to_f32())
    }
}

impl fmt::Display for F32Bits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.to_f32(), f)
    }
}

/// The token bucket TSpec (RFC 2215 §4, parameter 127; RFC 2210 §3.1).
///
/// ```text
/// | 127 | flags 0 | 5 words                                |
/// | Token Bucket Rate [r] (f32, bytes/s)                   |
/// | Token Bucket Size [b] (f32, bytes)                     |
/// | Peak Data Rate [p] (f32, bytes/s; +inf: unknown)       |
/// | Minimum Policed Unit [m] (u32, bytes)                  |
/// | Maximum Packet Size [M] (u32, bytes)                   |
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TokenBucket {
    /// Token bucket rate r in bytes per second.
    pub rate: F32Bits,
    /// Token bucket size b in bytes.
    pub size: F32Bits,
    /// Peak data rate p in bytes per second (positive infinity when unknown).
    pub peak: F32Bits,
    /// Minimum policed unit m in bytes.
    pub min_policed_unit: u32,
    /// Maximum packet size M in bytes.
    pub max_packet_size: u32,
}

impl TokenBucket {
    /// Words of an Integrated Services SENDER_TSPEC body (RFC 2210 §3.1).
    const SENDER_TSPEC_WORDS: usize = 8;

    fn read(words: &mut Words<'_>) -> Option<TokenBucket> {
        words.expect(param_header(PARAM_TOKEN_BUCKET, TOKEN_BUCKET_WORDS))?;
        Some(TokenBucket {
            rate: F32Bits(words.next()?),
            size: F32Bits(words.next()?),
            peak: F32Bits(words.next()?),
            min_policed_unit: words.next()?,
            max_packet_size: words.next()?,
        })
    }

    fn write(&self, w: &mut BodyWriter<'_>) {
        w.u32(param_header(PARAM_TOKEN_BUCKET, TOKEN_BUCKET_WORDS));
        w.u32(self.rate.0);
        w.u32(self.size.0);
        w.u32(self.peak.0);
        w.u32(self.min_policed_unit);
        w.u32(self.max_packet_size);
    }

    /// Reads a SENDER_TSPEC body in the form of RFC 2210 §3.1: message header (7 words),
    /// service 1 header (6 words), parameter 127. `None` for any other form.
    pub(in crate::rsvp) fn parse_sender_tspec(body: &[u8]) -> Option<TokenBucket> {
        let mut words = Words::new(body);
        words.expect(message_header(7))?;
        words.expect(service_header(SERVICE_GENERAL, false, 6))?;
        let tspec = TokenBucket::read(&mut words)?;
        words.is_empty().then_some(tspec)
    }
}

/// The SENDER_TSPEC body.
impl Body for TokenBucket {
    fn body_len(&self) -> usize {
        Self::SENDER_TSPEC_WORDS * 4
    }

    fn emit_body(&self, w: &mut BodyWriter<'_>) {
        w.u32(message_header(7));
        w.u32(service_header(SERVICE_GENERAL, false, 6));
        self.write(w);
    }
}

/// The Guaranteed service RSpec (RFC 2212, parameter 130).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rspec {
    /// Reserved rate R in bytes per second (R ≥ r).
    pub rate: F32Bits,
    /// Slack term S in microseconds.
    pub slack: u32,
}

/// FLOWSPEC, Integrated Services (class 9, C-Type 2; RFC 2210 §3.2): the reservation a
/// receiver asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Flowspec {
    /// Guaranteed service (service 2): TSpec and RSpec; body of 11 words.
    Guaranteed {
        /// The traffic to reserve for.
        tspec: TokenBucket,
        /// The reserved rate and slack.
        rspec: Rspec,
    },
    /// Controlled-Load service (service 5): TSpec only; body of 8 words.
    ControlledLoad {
        /// The traffic to reserve for.
        tspec: TokenBucket,
    },
}

impl Flowspec {
    /// The TSpec of either service.
    pub const fn tspec(&self) -> &TokenBucket {
        match self {
            Flowspec::Guaranteed { tspec, .. } | Flowspec::ControlledLoad { tspec } => tspec,
        }
    }

    /// Reads a FLOWSPEC body in one of the forms of RFC 2210 §3.2; `None` for any other.
    pub(in crate::rsvp) fn parse_intserv(body: &[u8]) -> Option<Flowspec> {
        let mut words = Words::new(body);
        let flowspec = match words.next()? {
            w if w == message_header(10) => {
                words.expect(service_header(SERVICE_GUARANTEED, false, 9))?;
                let tspec = TokenBucket::read(&mut words)?;
                words.expect(param_header(PARAM_GUARANTEED_RSPEC, 2))?;
                let rspec = Rspec {
                    rate: F32Bits(words.next()?),
                    slack: words.next()?,
                };
                Flowspec::Guaranteed { tspec, rspec }
            }
            w if w == message_header(7) => {
                words.expect(service_header(SERVICE_CONTROLLED_LOAD, false, 6))?;
                Flowspec::ControlledLoad {
                    tspec: TokenBucket::read(&mut words)?,
                }
            }
            _ => return None,
        };
        words.is_empty().then_some(flowspec)
    }
}

impl Body for Flowspec {
    fn body_len(&self) -> usize {
        match self {
            Flowspec::Guaranteed { .. } => 11 * 4,
            Flowspec::ControlledLoad { .. } => 8 * 4,
        }
    }

    fn emit_body(&self, w: &mut BodyWriter<'_>) {
        match self {
            Flowspec::Guaranteed { tspec, rspec } => {
                w.u32(message_header(10));
                w.u32(service_header(SERVICE_GUARANTEED, false, 9));
                tspec.write(w);
                w.u32(param_header(PARAM_GUARANTEED_RSPEC, 2));
                w.u32(rspec.rate.0);
                w.u32(rspec.slack);
            }
            Flowspec::ControlledLoad { tspec } => {
                w.u32(message_header(7));
                w.u32(service_header(SERVICE_CONTROLLED_LOAD, false, 6));
                tspec.write(w);
            }
        }
    }
}
