//! The bodies of the RSVP objects we interpret, grouped by concern: who and where
//! ([`addressing`]), soft state and its errors ([`state`]), Integrated Services traffic
//! descriptions ([`intserv`]) and path characterisation ([`adspec`]).

pub(super) mod addressing;
pub(super) mod adspec;
pub(super) mod intserv;
pub(super) mod state;

use std::net::Ipv4Addr;

/// What every interpreted object body can do: say how long it is and write itself.
pub(super) trait Body {
    /// Length of the body in bytes (a multiple of 4).
    fn body_len(&self) -> usize;
    /// Writes the body; `w` holds exactly [`Body::body_len`] bytes.
    fn emit_body(&self, w: &mut BodyWriter<'_>);
}

/// Writes big-endian fields one after another into an object body.
pub(super) struct BodyWriter<'a> {
    buf: &'a mut [u8],
    at: usize,
}

impl<'a> BodyWriter<'a> {
    pub(super) fn new(buf: &'a mut [u8]) -> BodyWriter<'a> {
        BodyWriter { buf, at: 0 }
    }

    pub(super) fn bytes(&mut self, data: &[u8]) {
        let end = self.at + data.len();
        // The body was sized by `Body::body_len`, which counts every field written here.
        debug_assert!(
            end <= self.buf.len(),
            "object body longer than its body_len"
        );
        if let Some(dst) = self.buf.get_mut(self.at..end) {
            dst.copy_from_slice(data);
        }
        self.at = end;
    }

    pub(super) fn u8(&mut self, value: u8) {
        self.bytes(&[value]);
    }

    pub(super) fn u16(&mut self, value: u16) {
        self.bytes(&value.to_be_bytes());
    }

    pub(super) fn u32(&mut self, value: u32) {
        self.bytes(&value.to_be_bytes());
    }

    pub(super) fn addr(&mut self, value: Ipv4Addr) {
        self.bytes(&value.octets());
    }
}

/// Reads big-endian 32-bit words from an Integrated Services body; `None` past the end.
pub(super) struct Words<'a> {
    rest: &'a [u8],
}

impl<'a> Words<'a> {
    pub(super) fn new(data: &'a [u8]) -> Words<'a> {
        Words { rest: data }
    }

    pub(super) fn next(&mut self) -> Option<u32> {
        let (word, rest) = self.rest.split_first_chunk::<4>()?;
        self.rest = rest;
        Some(u32::from_be_bytes(*word))
    }

    /// Reads one word and checks that it equals `expected`.
    pub(super) fn expect(&mut self, expected: u32) -> Option<()> {
        (self.next()? == expected).then_some(())
    }

    pub(super) fn is_empty(&self) -> bool {
        self.rest.is_empty()
    }
}

/// The 4 octets at `at` of a fixed-size body as an address.
pub(super) fn addr_at<const N: usize>(b: &[u8; N], at: usize) -> Ipv4Addr {
    Ipv4Addr::new(b[at], b[at + 1], b[at + 2], b[at + 3])
}

/// The 2 octets at `at` of a fixed-size body, big-endian.
pub(super) fn u16_at<const N: usize>(b: &[u8; N], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

/// The 4 octets at `at` of a fixed-size body, big-endian.
pub(super) fn u32_at<const N: usize>(b: &[u8; N], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
