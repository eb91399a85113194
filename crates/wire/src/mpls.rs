//! MPLS label stack entries (RFC 3032 §2.1) on Ethernet (EtherType [`ETHERTYPE`], 0x8847).
//!
//! The QSR switch-router forwards the frames of an RSVP-signalled switched path by label, as the
//! IBM paper's router did by ATM VC (QSR paper, label switching of reserved flows). On Ethernet
//! the label travels in an MPLS label stack entry between the Ethernet header and the IP
//! packet; the upstream node of each link chooses the label and announces it downstream in the
//! Path's RSVP_HOP (QSR paper §3.2; see [`crate::rsvp::RsvpHop::label`] and `docs/rsvp.md`).
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                Label                  | TC  |S|      TTL      |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! TC is the Traffic Class field (RFC 5462, formerly EXP); S marks the bottom of the stack.

use core::fmt;

use crate::{Error, Result};

/// The EtherType of MPLS unicast frames (RFC 3032 §5).
pub const ETHERTYPE: u16 = 0x8847;

/// The EtherType of MPLS multicast frames (RFC 5332).
pub const ETHERTYPE_MULTICAST: u16 = 0x8848;

/// Length of one label stack entry.
pub const ENTRY_LEN: usize = 4;

/// The largest label value (20 bits).
pub const MAX_LABEL: u32 = 0x000f_ffff;

/// Reserved label: IPv4 Explicit NULL (RFC 3032 §2.1).
pub const LABEL_IPV4_EXPLICIT_NULL: u32 = 0;
/// Reserved label: Router Alert.
pub const LABEL_ROUTER_ALERT: u32 = 1;
/// Reserved label: IPv6 Explicit NULL.
pub const LABEL_IPV6_EXPLICIT_NULL: u32 = 2;
/// Reserved label: Implicit NULL (signalled, never on the wire).
pub const LABEL_IMPLICIT_NULL: u32 = 3;
/// The first label value not reserved by RFC 3032 (0–15 are reserved).
pub const FIRST_UNRESERVED_LABEL: u32 = 16;

const LABEL_SHIFT: u32 = 12;
const TC_SHIFT: u32 = 9;
const TC_MASK: u32 = 0x7;
const BOS_BIT: u32 = 0x100;

mod field {
    use core::ops::Range;

    pub(super) const ENTRY: Range<usize> = 0..4;
}

/// A read/write view of a label stack entry and what follows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking its length; accessors may panic on a short buffer.
    pub fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wraps a buffer, checking it holds an entry; after this no accessor panics.
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Checks that the buffer holds [`ENTRY_LEN`] bytes.
    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < ENTRY_LEN {
            Err(Error::Truncated)
        } else {
            Ok(())
        }
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn entry(&self) -> u32 {
        let d = &self.buffer.as_ref()[field::ENTRY];
        u32::from_be_bytes([d[0], d[1], d[2], d[3]])
    }

    /// The 20-bit label.
    pub fn label(&self) -> u32 {
        self.entry() >> LABEL_SHIFT
    }

    /// The 3-bit Traffic Class.
    pub fn traffic_class(&self) -> u8 {
        // Masked to 3 bits.
        ((self.entry() >> TC_SHIFT) & TC_MASK) as u8
    }

    /// Whether this is the bottom entry of the stack (S bit).
    pub fn bottom_of_stack(&self) -> bool {
        self.entry() & BOS_BIT != 0
    }

    /// Time to live.
    pub fn ttl(&self) -> u8 {
        self.buffer.as_ref()[3]
    }

    /// What follows the entry: the next entry, or the payload after the bottom one.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[ENTRY_LEN..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    fn set_entry(&mut self, value: u32) {
        self.buffer.as_mut()[field::ENTRY].copy_from_slice(&value.to_be_bytes());
    }

    /// Sets the label (low 20 bits of `value`).
    pub fn set_label(&mut self, value: u32) {
        let e = self.entry();
        self.set_entry((e & !(MAX_LABEL << LABEL_SHIFT)) | ((value & MAX_LABEL) << LABEL_SHIFT));
    }

    /// Sets the Traffic Class (low 3 bits of `value`).
    pub fn set_traffic_class(&mut self, value: u8) {
        let e = self.entry();
        let tc = (u32::from(value) & TC_MASK) << TC_SHIFT;
        self.set_entry((e & !(TC_MASK << TC_SHIFT)) | tc);
    }

    /// Sets the bottom-of-stack bit.
    pub fn set_bottom_of_stack(&mut self, value: bool) {
        let e = self.entry();
        self.set_entry(if value { e | BOS_BIT } else { e & !BOS_BIT });
    }

    /// Sets the time to live.
    pub fn set_ttl(&mut self, value: u8) {
        self.buffer.as_mut()[3] = value;
    }

    /// What follows the entry, mutable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[ENTRY_LEN..]
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for Packet<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// A label stack entry in owned form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Repr {
    /// The label (20 bits; higher bits are not written).
    pub label: u32,
    /// The Traffic Class (3 bits; higher bits are not written).
    pub traffic_class: u8,
    /// Whether this is the last entry before the payload.
    pub bottom_of_stack: bool,
    /// Time to live.
    pub ttl: u8,
}

impl Repr {
    /// Reads a checked entry.
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr> {
        packet.check_len()?;
        Ok(Repr {
            label: packet.label(),
            traffic_class: packet.traffic_class(),
            bottom_of_stack: packet.bottom_of_stack(),
            ttl: packet.ttl(),
        })
    }

    /// Length of the emitted entry: [`ENTRY_LEN`].
    pub const fn buffer_len(&self) -> usize {
        ENTRY_LEN
    }

    /// Writes the entry into the first [`ENTRY_LEN`] bytes of `packet`.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) {
        let entry = ((self.label & MAX_LABEL) << LABEL_SHIFT)
            | ((u32::from(self.traffic_class) & TC_MASK) << TC_SHIFT)
            | if self.bottom_of_stack { BOS_BIT } else { 0 }
            | u32::from(self.ttl);
        packet.set_entry(entry);
    }
}

impl fmt::Display for Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "MPLS label={} tc={} s={} ttl={}",
            self.label,
            self.traffic_class,
            u8::from(self.bottom_of_stack),
            self.ttl
        )
    }
}

/// Iterator over a label stack from its top entry: yields each entry up to and including the
/// bottom-of-stack one, or [`Error::Truncated`] (once, then ends) if the data ends before an
/// entry with the S bit. It never panics.
#[derive(Debug, Clone)]
pub struct Stack<'a> {
    rest: &'a [u8],
    done: bool,
}

impl<'a> Stack<'a> {
    /// Iterates over the stack at the start of `data` (the Ethernet payload of an MPLS frame).
    pub fn new(data: &'a [u8]) -> Stack<'a> {
        Stack {
            rest: data,
            done: false,
        }
    }

    /// The bytes after the entries yielded so far (after the bottom entry: the payload).
    pub fn rest(&self) -> &'a [u8] {
        self.rest
    }
}

impl Iterator for Stack<'_> {
    type Item = Result<Repr>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let Some((entry, rest)) = self.rest.split_first_chunk::<ENTRY_LEN>() else {
            self.done = true;
            return Some(Err(Error::Truncated));
        };
        // A 4-byte array is a whole entry.
        let repr = Repr::parse(&Packet::new_unchecked(&entry[..]));
        self.rest = rest;
        if matches!(
            repr,
            Ok(Repr {
                bottom_of_stack: true,
                ..
            })
        ) {
            self.done = true;
        }
        Some(repr)
    }
}

impl core::iter::FusedIterator for Stack<'_> {}

/// The length of the label stack at the start of `data` (so its payload starts there), or
/// [`Error::Truncated`] if no bottom-of-stack entry is found.
pub fn stack_len(data: &[u8]) -> Result<usize> {
    let mut stack = Stack::new(data);
    for entry in stack.by_ref() {
        entry?;
    }
    Ok(data.len() - stack.rest().len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ethernet::{EtherType, Frame};
    use proptest::prelude::*;

    /// An Ethernet frame with a two-entry label stack over an IPv4 header's first bytes.
    const FRAME: [u8; 26] = [
        0x02, 0x00, 0x00, 0x00, 0x00, 0x02, // destination MAC
        0x02, 0x00, 0x00, 0x00, 0x00, 0x01, // source MAC
        0x88, 0x47, // EtherType MPLS unicast
        0x00, 0x01, 0x0a, 0x40, // label 16, TC 5, S 0, TTL 64
        0x12, 0x34, 0x51, 0x3f, // label 0x12345, TC 0, S 1, TTL 63
        0x45, 0x00, 0x00, 0x14, // payload: start of an IPv4 header
    ];

    #[test]
    fn parse_two_entry_stack() {
        let frame = Frame::new_checked(&FRAME[..]).unwrap();
        assert_eq!(frame.ethertype(), EtherType::Mpls);
        let top = Packet::new_checked(frame.payload()).unwrap();
        assert_eq!(top.label(), 16);
        assert_eq!(top.traffic_class(), 5);
        assert!(!top.bottom_of_stack());
        assert_eq!(top.ttl(), 64);
        let entries: Vec<_> = Stack::new(frame.payload()).collect();
        assert_eq!(
            entries,
            vec![
                Ok(Repr {
                    label: 16,
                    traffic_class: 5,
                    bottom_of_stack: false,
                    ttl: 64
                }),
                Ok(Repr {
                    label: 0x12345,
                    traffic_class: 0,
                    bottom_of_stack: true,
                    ttl: 63
                }),
            ]
        );
        assert_eq!(stack_len(frame.payload()), Ok(8));
        assert_eq!(&frame.payload()[8..], &[0x45, 0x00, 0x00, 0x14]);
    }

    #[test]
    fn emit_matches_vector() {
        let mut buf = [0u8; 4];
        Repr {
            label: 0x12345,
            traffic_class: 0,
            bottom_of_stack: true,
            ttl: 63,
        }
        .emit(&mut Packet::new_unchecked(&mut buf[..]));
        assert_eq!(buf, FRAME[18..22]);
        let mut p = Packet::new_unchecked(&mut buf[..]);
        p.set_label(16);
        p.set_traffic_class(5);
        p.set_bottom_of_stack(false);
        p.set_ttl(64);
        assert_eq!(buf, FRAME[14..18]);
    }

    #[test]
    fn stack_without_bottom_is_truncated() {
        let entries = &FRAME[14..18];
        assert_eq!(stack_len(entries), Err(Error::Truncated));
        assert_eq!(stack_len(&FRAME[14..21]), Err(Error::Truncated));
        assert_eq!(stack_len(&[]), Err(Error::Truncated));
        let mut stack = Stack::new(entries);
        assert!(matches!(stack.next(), Some(Ok(_))));
        assert_eq!(stack.next(), Some(Err(Error::Truncated)));
        assert_eq!(stack.next(), None);
        for len in 0..ENTRY_LEN {
            assert_eq!(
                Packet::new_checked(&FRAME[14..14 + len]),
                Err(Error::Truncated)
            );
        }
    }

    proptest! {
        #[test]
        fn repr_round_trip(
            label in 0..=MAX_LABEL, tc in 0u8..8, bos in any::<bool>(), ttl in any::<u8>()
        ) {
            let repr = Repr { label, traffic_class: tc, bottom_of_stack: bos, ttl };
            let mut buf = [0u8; ENTRY_LEN];
            repr.emit(&mut Packet::new_unchecked(&mut buf[..]));
            prop_assert_eq!(Repr::parse(&Packet::new_checked(&buf[..]).unwrap()), Ok(repr));
        }

        #[test]
        fn stack_never_panics(data in proptest::collection::vec(any::<u8>(), 0..40)) {
            let entries: Vec<_> = Stack::new(&data).collect();
            prop_assert!(entries.len() <= data.len() / ENTRY_LEN + 1);
            if let Ok(len) = stack_len(&data) {
                prop_assert!(len % ENTRY_LEN == 0 && len <= data.len());
                prop_assert!(data[len - 2] & 1 == 1, "ends on an S bit");
            }
        }
    }
}
