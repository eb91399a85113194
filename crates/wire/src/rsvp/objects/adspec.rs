//! ADSPEC, Integrated Services (class 13, C-Type 2; RFC 2210 §3.3): the path characterisation
//! a Path message collects on its way — the default general parameters (RFC 2215 §3), the
//! Guaranteed service's error terms (RFC 2212) and the Controlled-Load fragment (RFC 2211).
//!
//! ```text
//! | 0 | reserved | words after this header                 |   message header
//! | 1 | break | 8                                          |   general parameters fragment
//! |   4 | 0 | 1 |  IS hop count (u32)                       |
//! |   6 | 0 | 1 |  path bandwidth estimate (f32, bytes/s)  |
//! |   8 | 0 | 1 |  minimum path latency (u32, µs)          |
//! |  10 | 0 | 1 |  composed MTU (u32, bytes)               |
//! | 2 | break | 8 (or 0)                                   |   Guaranteed fragment (optional)
//! | 133 | 0 | 1 | C_tot | 134 | 0 | 1 | D_tot |            |
//! | 135 | 0 | 1 | C_sum | 136 | 0 | 1 | D_sum |            |
//! | 5 | break | 0                                          |   Controlled-Load fragment (optional)
//! ```
//!
//! Service-specific overrides of the general parameters (RFC 2210 §3.3.2–§3.3.3) are not
//! interpreted: an ADSPEC carrying them is kept as [`super::super::ObjectRepr::Unknown`].

use super::intserv::{
    message_header, param_header, service_header, F32Bits, SERVICE_CONTROLLED_LOAD,
    SERVICE_GENERAL, SERVICE_GUARANTEED,
};
use super::{Body, BodyWriter, Words};

/// NUMBER_OF_IS_HOPS (RFC 2215 §3.1).
const PARAM_IS_HOPS: u8 = 4;
/// AVAILABLE_PATH_BANDWIDTH (RFC 2215 §3.2).
const PARAM_PATH_BANDWIDTH: u8 = 6;
/// MINIMUM_PATH_LATENCY (RFC 2215 §3.4).
const PARAM_MIN_LATENCY: u8 = 8;
/// PATH_MTU (RFC 2215 §3.5).
const PARAM_PATH_MTU: u8 = 10;
/// C_tot, D_tot, C_sum, D_sum (RFC 2212).
const PARAM_C_TOT: u8 = 133;
const PARAM_D_TOT: u8 = 134;
const PARAM_C_SUM: u8 = 135;
const PARAM_D_SUM: u8 = 136;

/// The default general parameters fragment (service 1), always present.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GeneralAdspec {
    /// The global break bit: some node on the path does not support Integrated Services.
    pub break_bit: bool,
    /// Number of Integrated-Services-aware hops (IS hop count).
    pub hop_count: u32,
    /// Path bandwidth estimate in bytes per second (the minimum over the path).
    pub path_bandwidth: F32Bits,
    /// Minimum path latency in microseconds (0xffffffff: indeterminate).
    pub min_latency: u32,
    /// Composed path MTU in bytes (the minimum over the path).
    pub composed_mtu: u32,
}

/// The Guaranteed service error terms (RFC 2212): C in bytes, D in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct GuaranteedTerms {
    /// End-to-end composed C (C_tot, parameter 133).
    pub c_tot: u32,
    /// End-to-end composed D (D_tot, parameter 134).
    pub d_tot: u32,
    /// C composed since the last reshaping point (C_sum, parameter 135).
    pub c_sum: u32,
    /// D composed since the last reshaping point (D_sum, parameter 136).
    pub d_sum: u32,
}

/// The Guaranteed service fragment (service 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GuaranteedAdspec {
    /// Break bit: some node on the path does not support Guaranteed service.
    pub break_bit: bool,
    /// The error terms; `None` for an empty fragment (length 0, break bit set by a node that
    /// does not support the service).
    pub terms: Option<GuaranteedTerms>,
}

/// The Controlled-Load fragment (service 5), without overrides: only the break bit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ControlledLoadAdspec {
    /// Break bit: some node on the path does not support Controlled-Load service.
    pub break_bit: bool,
}

/// ADSPEC, Integrated Services (class 13, C-Type 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Adspec {
    /// The default general parameters.
    pub general: GeneralAdspec,
    /// The Guaranteed fragment, present if the sender might use Guaranteed service.
    pub guaranteed: Option<GuaranteedAdspec>,
    /// The Controlled-Load fragment, present if the sender might use Controlled-Load service.
    pub controlled_load: Option<ControlledLoadAdspec>,
}

const GENERAL_WORDS: u16 = 8;
const GUARANTEED_WORDS: u16 = 8;

fn read_param(words: &mut Words<'_>, id: u8) -> Option<u32> {
    words.expect(param_header(id, 1))?;
    words.next()
}

fn write_param(w: &mut BodyWriter<'_>, id: u8, value: u32) {
    w.u32(param_header(id, 1));
    w.u32(value);
}

/// Splits a service header into (service, break bit, words), `None` if reserved bits are set.
fn split_service_header(word: u32) -> Option<(u8, bool, u16)> {
    if word & 0x007f_0000 != 0 {
        return None;
    }
    // Shifts and masks leave 8, 1 and 16 bits.
    Some(((word >> 24) as u8, word & 0x0080_0000 != 0, word as u16))
}

impl Adspec {
    /// The ADSPEC a sender starts its Path with (RFC 2210 §3.3.1): no hop yet, an unknown
    /// (infinite) bandwidth, zero latency, the sender's MTU `mtu`, and the Guaranteed (terms
    /// zero) and Controlled-Load fragments, so that every hop on the way can add its terms or
    /// set the break bit.
    pub fn sender_initial(mtu: u32) -> Adspec {
        Adspec {
            general: GeneralAdspec {
                break_bit: false,
                hop_count: 0,
                path_bandwidth: F32Bits::from_f32(f32::INFINITY),
                min_latency: 0,
                composed_mtu: mtu,
            },
            guaranteed: Some(GuaranteedAdspec {
                break_bit: false,
                terms: Some(GuaranteedTerms::default()),
            }),
            controlled_load: Some(ControlledLoadAdspec { break_bit: false }),
        }
    }

    fn words_after_header(&self) -> u16 {
        let guaranteed = match self.guaranteed {
            Some(GuaranteedAdspec { terms: Some(_), .. }) => 1 + GUARANTEED_WORDS,
            Some(GuaranteedAdspec { terms: None, .. }) => 1,
            None => 0,
        };
        let controlled_load = u16::from(self.controlled_load.is_some());
        1 + GENERAL_WORDS + guaranteed + controlled_load
    }

    /// Reads an ADSPEC body in the form described in the module documentation; `None` for
    /// any other.
    pub(in crate::rsvp) fn parse_intserv(body: &[u8]) -> Option<Adspec> {
        let mut words = Words::new(body);
        let words_after = usize::from(u16::try_from(words.next()?).ok()?);
        if words_after * 4 + 4 != body.len() {
            return None;
        }
        let (service, break_bit, len) = split_service_header(words.next()?)?;
        if service != SERVICE_GENERAL || len != GENERAL_WORDS {
            return None;
        }
        let general = GeneralAdspec {
            break_bit,
            hop_count: read_param(&mut words, PARAM_IS_HOPS)?,
            path_bandwidth: F32Bits(read_param(&mut words, PARAM_PATH_BANDWIDTH)?),
            min_latency: read_param(&mut words, PARAM_MIN_LATENCY)?,
            composed_mtu: read_param(&mut words, PARAM_PATH_MTU)?,
        };
        let mut adspec = Adspec {
            general,
            guaranteed: None,
            controlled_load: None,
        };
        let mut next = words.next();
        if let Some((SERVICE_GUARANTEED, break_bit, len)) = next.and_then(split_service_header) {
            let terms = match len {
                0 => None,
                GUARANTEED_WORDS => Some(GuaranteedTerms {
                    c_tot: read_param(&mut words, PARAM_C_TOT)?,
                    d_tot: read_param(&mut words, PARAM_D_TOT)?,
                    c_sum: read_param(&mut words, PARAM_C_SUM)?,
                    d_sum: read_param(&mut words, PARAM_D_SUM)?,
                }),
                _ => return None,
            };
            adspec.guaranteed = Some(GuaranteedAdspec { break_bit, terms });
            next = words.next();
        }
        if let Some((SERVICE_CONTROLLED_LOAD, break_bit, 0)) = next.and_then(split_service_header) {
            adspec.controlled_load = Some(ControlledLoadAdspec { break_bit });
            next = words.next();
        }
        next.is_none().then_some(adspec)
    }
}

impl Body for Adspec {
    fn body_len(&self) -> usize {
        4 * (1 + usize::from(self.words_after_header()))
    }

    fn emit_body(&self, w: &mut BodyWriter<'_>) {
        let g = &self.general;
        w.u32(message_header(self.words_after_header()));
        w.u32(service_header(SERVICE_GENERAL, g.break_bit, GENERAL_WORDS));
        write_param(w, PARAM_IS_HOPS, g.hop_count);
        write_param(w, PARAM_PATH_BANDWIDTH, g.path_bandwidth.0);
        write_param(w, PARAM_MIN_LATENCY, g.min_latency);
        write_param(w, PARAM_PATH_MTU, g.composed_mtu);
        if let Some(gs) = &self.guaranteed {
            match &gs.terms {
                Some(t) => {
                    w.u32(service_header(
                        SERVICE_GUARANTEED,
                        gs.break_bit,
                        GUARANTEED_WORDS,
                    ));
                    write_param(w, PARAM_C_TOT, t.c_tot);
                    write_param(w, PARAM_D_TOT, t.d_tot);
                    write_param(w, PARAM_C_SUM, t.c_sum);
                    write_param(w, PARAM_D_SUM, t.d_sum);
                }
                None => w.u32(service_header(SERVICE_GUARANTEED, gs.break_bit, 0)),
            }
        }
        if let Some(cl) = &self.controlled_load {
            w.u32(service_header(SERVICE_CONTROLLED_LOAD, cl.break_bit, 0));
        }
    }
}
