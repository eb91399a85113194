//! Ethernet II frames (IEEE 802.3 §3.1) with IEEE 802.1Q / 802.1ad tags passed through intact.
//!
//! EtheReal §3 switches plain Ethernet frames; the switch never strips or adds VLAN tags, so the
//! view only has to *see past* up to two stacked tags (`vlan_tags`, `inner_ethertype`,
//! `payload`) while leaving them in the buffer.

use core::fmt;
use core::str::FromStr;

use crate::{Error, Result};

/// A 48-bit MAC address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Address(pub [u8; 6]);

impl Address {
    /// The broadcast address `ff:ff:ff:ff:ff:ff`.
    pub const BROADCAST: Address = Address([0xff; 6]);

    /// Whether this is the broadcast address.
    pub fn is_broadcast(&self) -> bool {
        *self == Self::BROADCAST
    }

    /// Whether the group bit is set (multicast, including broadcast).
    pub fn is_multicast(&self) -> bool {
        self.0[0] & 0x01 != 0
    }

    /// Whether this is an individual (unicast) address.
    pub fn is_unicast(&self) -> bool {
        !self.is_multicast()
    }

    /// Whether the locally-administered bit is set.
    pub fn is_local(&self) -> bool {
        self.0[0] & 0x02 != 0
    }

    /// The six octets, first transmitted first.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The address in the first six octets of `data`, or `None` if `data` is shorter.
    pub fn from_bytes(data: &[u8]) -> Option<Address> {
        let octets: [u8; 6] = data.get(..6)?.try_into().ok()?;
        Some(Address(octets))
    }
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        write!(
            f,
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            b[0], b[1], b[2], b[3], b[4], b[5]
        )
    }
}

impl FromStr for Address {
    type Err = Error;

    /// Parses `aa:bb:cc:dd:ee:ff` (exactly six groups of two hex digits, either case; `-` is
    /// accepted as separator too). Anything else is [`Error::Malformed`].
    fn from_str(s: &str) -> Result<Address> {
        let sep = if s.contains('-') { '-' } else { ':' };
        let mut octets = [0u8; 6];
        let mut groups = s.split(sep);
        for octet in &mut octets {
            let group = groups.next().ok_or(Error::Malformed)?;
            if group.len() != 2 || !group.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(Error::Malformed);
            }
            *octet = u8::from_str_radix(group, 16).map_err(|_| Error::Malformed)?;
        }
        if groups.next().is_some() {
            return Err(Error::Malformed);
        }
        Ok(Address(octets))
    }
}

/// The EtherType field (IEEE 802.3 length/type; values ≥ 0x0600 are types).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EtherType {
    /// IPv4, 0x0800.
    Ipv4,
    /// ARP, 0x0806.
    Arp,
    /// IPv6, 0x86dd.
    Ipv6,
    /// IEEE 802.1Q customer VLAN tag, 0x8100.
    Vlan,
    /// IEEE 802.1ad service VLAN tag (Q-in-Q), 0x88a8.
    QinQ,
    /// MPLS unicast label stack (RFC 3032), 0x8847; see [`crate::mpls`].
    Mpls,
    /// Any other value (kept as data, not an error).
    Unknown(u16),
}

impl EtherType {
    /// Whether this value announces a VLAN tag (802.1Q or 802.1ad).
    pub fn is_vlan_tag(self) -> bool {
        matches!(self, EtherType::Vlan | EtherType::QinQ)
    }
}

impl From<u16> for EtherType {
    fn from(value: u16) -> EtherType {
        match value {
            0x0800 => EtherType::Ipv4,
            0x0806 => EtherType::Arp,
            0x86dd => EtherType::Ipv6,
            0x8100 => EtherType::Vlan,
            0x88a8 => EtherType::QinQ,
            0x8847 => EtherType::Mpls,
            other => EtherType::Unknown(other),
        }
    }
}

impl From<EtherType> for u16 {
    fn from(value: EtherType) -> u16 {
        match value {
            EtherType::Ipv4 => 0x0800,
            EtherType::Arp => 0x0806,
            EtherType::Ipv6 => 0x86dd,
            EtherType::Vlan => 0x8100,
            EtherType::QinQ => 0x88a8,
            EtherType::Mpls => 0x8847,
            EtherType::Unknown(other) => other,
        }
    }
}

impl fmt::Display for EtherType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EtherType::Ipv4 => write!(f, "IPv4"),
            EtherType::Arp => write!(f, "ARP"),
            EtherType::Ipv6 => write!(f, "IPv6"),
            EtherType::Vlan => write!(f, "802.1Q"),
            EtherType::QinQ => write!(f, "802.1ad"),
            EtherType::Mpls => write!(f, "MPLS"),
            EtherType::Unknown(v) => write!(f, "0x{v:04x}"),
        }
    }
}

/// Length of an untagged Ethernet II header.
pub const HEADER_LEN: usize = 14;

/// Length of one VLAN tag (TPID + TCI).
pub const VLAN_TAG_LEN: usize = 4;

/// Most stacked VLAN tags the view looks through (802.1ad outer + 802.1Q inner).
pub const MAX_VLAN_TAGS: usize = 2;

mod field {
    use core::ops::Range;

    pub(super) const DESTINATION: Range<usize> = 0..6;
    pub(super) const SOURCE: Range<usize> = 6..12;
    pub(super) const ETHERTYPE: Range<usize> = 12..14;
}

/// A read/write view of an Ethernet II frame (starting at the destination address, without FCS).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame<T: AsRef<[u8]>> {
    buffer: T,
}

fn read_u16(data: &[u8], at: usize) -> Option<u16> {
    let bytes = data.get(at..at + 2)?;
    Some(u16::from_be_bytes([bytes[0], bytes[1]]))
}

/// Number of stacked tags (at most [`MAX_VLAN_TAGS`]) whose TPID is present in `data`.
fn count_tags(data: &[u8]) -> usize {
    let mut tags = 0;
    let mut type_at = field::ETHERTYPE.start;
    while tags < MAX_VLAN_TAGS {
        match read_u16(data, type_at) {
            Some(t) if EtherType::from(t).is_vlan_tag() => {
                tags += 1;
                type_at += VLAN_TAG_LEN;
            }
            _ => break,
        }
    }
    tags
}

impl<T: AsRef<[u8]>> Frame<T> {
    /// Wraps a buffer without checking its length; accessors may panic on a short buffer.
    pub fn new_unchecked(buffer: T) -> Frame<T> {
        Frame { buffer }
    }

    /// Wraps a buffer, checking that it holds the whole header including every announced VLAN
    /// tag (up to two); after this no accessor panics.
    pub fn new_checked(buffer: T) -> Result<Frame<T>> {
        let frame = Self::new_unchecked(buffer);
        frame.check_len()?;
        Ok(frame)
    }

    /// Checks that the buffer holds the full header, tags included.
    pub fn check_len(&self) -> Result<()> {
        let data = self.buffer.as_ref();
        if data.len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        // Each announced tag needs its 4 bytes plus the 2-byte type field that follows it.
        if data.len() < HEADER_LEN + VLAN_TAG_LEN * count_tags(data) {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The destination address.
    pub fn dst_addr(&self) -> Address {
        let mut octets = [0; 6];
        octets.copy_from_slice(&self.buffer.as_ref()[field::DESTINATION]);
        Address(octets)
    }

    /// The source address.
    pub fn src_addr(&self) -> Address {
        let mut octets = [0; 6];
        octets.copy_from_slice(&self.buffer.as_ref()[field::SOURCE]);
        Address(octets)
    }

    /// The outer EtherType (`Vlan`/`QinQ` for a tagged frame).
    pub fn ethertype(&self) -> EtherType {
        let data = self.buffer.as_ref();
        EtherType::from(u16::from_be_bytes([
            data[field::ETHERTYPE.start],
            data[field::ETHERTYPE.start + 1],
        ]))
    }

    /// Number of stacked 802.1Q/802.1ad tags, at most [`MAX_VLAN_TAGS`] (a third tag is
    /// treated as payload).
    pub fn vlan_tags(&self) -> usize {
        count_tags(self.buffer.as_ref())
    }

    /// The Tag Control Information (PCP, DEI, VID) of tag `index` (0 = outermost), if present.
    pub fn vlan_tci(&self, index: usize) -> Option<u16> {
        if index >= self.vlan_tags() {
            return None;
        }
        read_u16(self.buffer.as_ref(), HEADER_LEN + VLAN_TAG_LEN * index)
    }

    /// The EtherType after the VLAN tags (equal to [`ethertype`](Self::ethertype) if untagged).
    pub fn inner_ethertype(&self) -> EtherType {
        let at = field::ETHERTYPE.start + VLAN_TAG_LEN * self.vlan_tags();
        // `new_checked` verified that the type field after every counted tag is present.
        EtherType::from(read_u16(self.buffer.as_ref(), at).unwrap_or(0))
    }

    /// Header length including VLAN tags: `14 + 4 * vlan_tags()`.
    pub fn header_len(&self) -> usize {
        HEADER_LEN + VLAN_TAG_LEN * self.vlan_tags()
    }

    /// The payload after the VLAN tags.
    pub fn payload(&self) -> &[u8] {
        let data = self.buffer.as_ref();
        &data[HEADER_LEN + VLAN_TAG_LEN * count_tags(data)..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Frame<T> {
    /// Sets the destination address.
    pub fn set_dst_addr(&mut self, value: Address) {
        self.buffer.as_mut()[field::DESTINATION].copy_from_slice(&value.0);
    }

    /// Sets the source address.
    pub fn set_src_addr(&mut self, value: Address) {
        self.buffer.as_mut()[field::SOURCE].copy_from_slice(&value.0);
    }

    /// Sets the outer EtherType.
    pub fn set_ethertype(&mut self, value: EtherType) {
        self.buffer.as_mut()[field::ETHERTYPE].copy_from_slice(&u16::from(value).to_be_bytes());
    }

    /// The payload after the VLAN tags, mutable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let start = self.header_len();
        &mut self.buffer.as_mut()[start..]
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for Frame<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// An untagged Ethernet II header in owned form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr {
    /// Source address.
    pub src_addr: Address,
    /// Destination address.
    pub dst_addr: Address,
    /// The outer EtherType.
    pub ethertype: EtherType,
}

impl Repr {
    /// Reads the addresses and the outer EtherType from a checked frame.
    pub fn parse<T: AsRef<[u8]>>(frame: &Frame<T>) -> Result<Repr> {
        frame.check_len()?;
        Ok(Repr {
            src_addr: frame.src_addr(),
            dst_addr: frame.dst_addr(),
            ethertype: frame.ethertype(),
        })
    }

    /// Length of the emitted (untagged) header: [`HEADER_LEN`].
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the untagged header into the first [`HEADER_LEN`] bytes of `frame`.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, frame: &mut Frame<T>) {
        frame.set_dst_addr(self.dst_addr);
        frame.set_src_addr(self.src_addr);
        frame.set_ethertype(self.ethertype);
    }
}

impl fmt::Display for Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "EthernetII src={} dst={} type={}",
            self.src_addr, self.dst_addr, self.ethertype
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// An untagged frame carrying 4 payload bytes.
    const UNTAGGED: [u8; 18] = [
        0x02, 0x00, 0x00, 0x00, 0x00, 0x02, // destination 02:00:00:00:00:02
        0x02, 0x00, 0x00, 0x00, 0x00, 0x01, // source 02:00:00:00:00:01
        0x08, 0x00, // EtherType IPv4
        0xde, 0xad, 0xbe, 0xef, // payload
    ];

    /// A Q-in-Q frame: 802.1ad S-tag VID 100, 802.1Q C-tag PCP 5 VID 42, then ARP.
    const DOUBLE_TAGGED: [u8; 24] = [
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // destination broadcast
        0x02, 0x00, 0x00, 0x00, 0x00, 0x01, // source
        0x88, 0xa8, // TPID 802.1ad
        0x00, 0x64, // TCI: PCP 0, DEI 0, VID 100
        0x81, 0x00, // TPID 802.1Q
        0xa0, 0x2a, // TCI: PCP 5, DEI 0, VID 42
        0x08, 0x06, // inner EtherType ARP
        0x00, 0x01, // payload (start of an ARP packet)
    ];

    #[test]
    fn address_text_round_trip() {
        let a: Address = "02:aB:cd:00:10:ff".parse().unwrap();
        assert_eq!(a, Address([0x02, 0xab, 0xcd, 0x00, 0x10, 0xff]));
        assert_eq!(a.to_string(), "02:ab:cd:00:10:ff");
        assert_eq!("02-ab-cd-00-10-ff".parse::<Address>(), Ok(a));
        assert_eq!(a.as_bytes(), &[0x02, 0xab, 0xcd, 0x00, 0x10, 0xff]);
        for bad in [
            "",
            "02:ab:cd:00:10",
            "02:ab:cd:00:10:ff:00",
            "02:ab:cd:00:10:f",
            "02:ab:cd:00:10:fff",
            "02:ab:cd:00:10:fg",
            "02:ab:cd:00:10:+f",
            "02:ab-cd:00:10:ff",
        ] {
            assert_eq!(bad.parse::<Address>(), Err(Error::Malformed), "{bad:?}");
        }
    }

    #[test]
    fn address_classes() {
        assert!(Address::BROADCAST.is_broadcast() && Address::BROADCAST.is_multicast());
        let mcast = Address([0x01, 0x00, 0x5e, 0, 0, 1]);
        assert!(mcast.is_multicast() && !mcast.is_broadcast() && !mcast.is_unicast());
        let local = Address([0x02, 0, 0, 0, 0, 1]);
        assert!(local.is_unicast() && local.is_local());
        assert!(!Address([0x00, 0x1b, 0x21, 0, 0, 1]).is_local());
    }

    #[test]
    fn ethertype_codes() {
        for (v, t) in [
            (0x0800, EtherType::Ipv4),
            (0x0806, EtherType::Arp),
            (0x86dd, EtherType::Ipv6),
            (0x8100, EtherType::Vlan),
            (0x88a8, EtherType::QinQ),
            (0x88f7, EtherType::Unknown(0x88f7)),
        ] {
            assert_eq!(EtherType::from(v), t);
            assert_eq!(u16::from(t), v);
        }
    }

    #[test]
    fn untagged_view() {
        let frame = Frame::new_checked(&UNTAGGED[..]).unwrap();
        assert_eq!(frame.dst_addr(), Address([2, 0, 0, 0, 0, 2]));
        assert_eq!(frame.src_addr(), Address([2, 0, 0, 0, 0, 1]));
        assert_eq!(frame.ethertype(), EtherType::Ipv4);
        assert_eq!(frame.vlan_tags(), 0);
        assert_eq!(frame.vlan_tci(0), None);
        assert_eq!(frame.inner_ethertype(), EtherType::Ipv4);
        assert_eq!(frame.header_len(), 14);
        assert_eq!(frame.payload(), &[0xde, 0xad, 0xbe, 0xef]);
    }

    #[test]
    fn double_tagged_view() {
        let frame = Frame::new_checked(&DOUBLE_TAGGED[..]).unwrap();
        assert!(frame.dst_addr().is_broadcast());
        assert_eq!(frame.ethertype(), EtherType::QinQ);
        assert_eq!(frame.vlan_tags(), 2);
        assert_eq!(frame.vlan_tci(0), Some(100));
        assert_eq!(frame.vlan_tci(1), Some(0xa02a));
        assert_eq!(frame.vlan_tci(2), None);
        assert_eq!(frame.inner_ethertype(), EtherType::Arp);
        assert_eq!(frame.header_len(), 22);
        assert_eq!(frame.payload(), &[0x00, 0x01]);
    }

    #[test]
    fn third_tag_is_payload() {
        let mut bytes = DOUBLE_TAGGED.to_vec();
        bytes[20..22].copy_from_slice(&[0x81, 0x00]); // a third TPID
        let frame = Frame::new_checked(&bytes[..]).unwrap();
        assert_eq!(frame.vlan_tags(), 2);
        assert_eq!(frame.inner_ethertype(), EtherType::Vlan);
        assert_eq!(frame.payload(), &[0x00, 0x01]);
    }

    #[test]
    fn setters_keep_tags() {
        let mut bytes = DOUBLE_TAGGED;
        let mut frame = Frame::new_checked(&mut bytes[..]).unwrap();
        frame.set_dst_addr(Address([2, 0, 0, 0, 0, 9]));
        frame.set_src_addr(Address([2, 0, 0, 0, 0, 8]));
        frame.payload_mut()[0] = 0x55;
        let frame = Frame::new_checked(&bytes[..]).unwrap();
        assert_eq!(frame.dst_addr(), Address([2, 0, 0, 0, 0, 9]));
        assert_eq!(frame.src_addr(), Address([2, 0, 0, 0, 0, 8]));
        assert_eq!(frame.vlan_tci(1), Some(0xa02a));
        assert_eq!(frame.payload(), &[0x55, 0x01]);
    }

    #[test]
    fn every_truncation_is_an_error() {
        for len in 0..HEADER_LEN {
            assert_eq!(
                Frame::new_checked(&UNTAGGED[..len]).err(),
                Some(Error::Truncated),
                "len {len}"
            );
        }
        // A tagged frame is truncated until the inner EtherType is present.
        for len in 0..22 {
            assert_eq!(
                Frame::new_checked(&DOUBLE_TAGGED[..len]).err(),
                Some(Error::Truncated),
                "len {len}"
            );
        }
        assert!(Frame::new_checked(&DOUBLE_TAGGED[..22]).is_ok());
    }

    #[test]
    fn repr_emits_untagged() {
        let repr = Repr::parse(&Frame::new_checked(&UNTAGGED[..]).unwrap()).unwrap();
        let mut out = [0u8; 14];
        repr.emit(&mut Frame::new_unchecked(&mut out[..]));
        assert_eq!(out[..], UNTAGGED[..14]);
        assert_eq!(repr.buffer_len(), 14);
    }

    fn address() -> impl Strategy<Value = Address> {
        any::<[u8; 6]>().prop_map(Address)
    }

    proptest! {
        #[test]
        fn repr_round_trip(src in address(), dst in address(), t in any::<u16>()) {
            let repr = Repr { src_addr: src, dst_addr: dst, ethertype: EtherType::from(t) };
            let mut buf = vec![0u8; repr.buffer_len() + 2 * VLAN_TAG_LEN + 2];
            repr.emit(&mut Frame::new_unchecked(&mut buf[..]));
            let parsed = Repr::parse(&Frame::new_checked(&buf[..]).unwrap()).unwrap();
            prop_assert_eq!(parsed, repr);
        }

        #[test]
        fn address_display_parses_back(a in address()) {
            prop_assert_eq!(a.to_string().parse::<Address>(), Ok(a));
        }

        #[test]
        fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..40)) {
            if let Ok(frame) = Frame::new_checked(&data[..]) {
                prop_assert!(frame.header_len() <= data.len());
                prop_assert_eq!(frame.payload().len(), data.len() - frame.header_len());
                let _ = (frame.dst_addr(), frame.src_addr(), frame.inner_ethertype());
            }
        }
    }
}
