//! IPv4 headers (RFC 791).
//!
//! The switch reads IPv4 only to classify real-time traffic and, at the first switch, to rewrite
//! the proxy destination address (EtheReal §3.2, see [`crate::rewrite`]); hosts' stacks do the
//! rest. Options are skipped (their length honoured, their content not interpreted), except
//! that [`Packet::router_alert`] finds the Router Alert option (RFC 2113 §2.1) that RSVP's
//! Path, PathTear and ResvConf carry, and [`Repr::emit_with_router_alert`] writes it.

use core::fmt;
use std::net::Ipv4Addr;

use crate::checksum;
use crate::{Error, Result};

/// Length of an IPv4 header without options.
pub const HEADER_LEN: usize = 20;

/// The Router Alert option (RFC 2113 §2.1): type 148 (copied, class 0, number 20), length 4,
/// value 0 ("router shall examine packet").
pub const ROUTER_ALERT_OPTION: [u8; 4] = [0x94, 0x04, 0x00, 0x00];

/// Length of an IPv4 header carrying only the Router Alert option (IHL 6).
pub const ROUTER_ALERT_HEADER_LEN: usize = HEADER_LEN + ROUTER_ALERT_OPTION.len();

/// Option type End of Option List.
const OPTION_EOL: u8 = 0;
/// Option type No Operation.
const OPTION_NOP: u8 = 1;

/// The IP protocol number of the payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Protocol {
    /// ICMP, 1.
    Icmp,
    /// TCP, 6.
    Tcp,
    /// UDP, 17.
    Udp,
    /// Any other protocol number, kept as data.
    Unknown(u8),
}

impl From<u8> for Protocol {
    fn from(value: u8) -> Protocol {
        match value {
            1 => Protocol::Icmp,
            6 => Protocol::Tcp,
            17 => Protocol::Udp,
            other => Protocol::Unknown(other),
        }
    }
}

impl From<Protocol> for u8 {
    fn from(value: Protocol) -> u8 {
        match value {
            Protocol::Icmp => 1,
            Protocol::Tcp => 6,
            Protocol::Udp => 17,
            Protocol::Unknown(other) => other,
        }
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Protocol::Icmp => write!(f, "ICMP"),
            Protocol::Tcp => write!(f, "TCP"),
            Protocol::Udp => write!(f, "UDP"),
            Protocol::Unknown(v) => write!(f, "proto {v}"),
        }
    }
}

mod field {
    use core::ops::Range;

    pub(super) const VER_IHL: usize = 0;
    pub(super) const DSCP_ECN: usize = 1;
    pub(super) const LENGTH: Range<usize> = 2..4;
    pub(super) const IDENT: Range<usize> = 4..6;
    pub(super) const FLG_OFF: Range<usize> = 6..8;
    pub(super) const TTL: usize = 8;
    pub(super) const PROTOCOL: usize = 9;
    pub(super) const CHECKSUM: Range<usize> = 10..12;
    pub(super) const SRC_ADDR: Range<usize> = 12..16;
    pub(super) const DST_ADDR: Range<usize> = 16..20;
}

const FLAG_DF: u16 = 0x4000;
const FLAG_MF: u16 = 0x2000;
const OFFSET_MASK: u16 = 0x1fff;

/// A read/write view of an IPv4 packet. The buffer may be longer than the packet (Ethernet
/// padding); [`payload`](Packet::payload) honours the total length field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking it; accessors may panic on a short buffer.
    pub fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wraps a buffer after [`check_len`](Self::check_len); after this no accessor panics.
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Checks the buffer: [`Error::Truncated`] if shorter than 20 bytes, the header length or the
    /// total length; [`Error::Malformed`] if the version is not 4, IHL < 5 or the total length is
    /// smaller than the header.
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated);
        }
        if self.version() != 4 {
            return Err(Error::Malformed);
        }
        let header_len = self.header_len();
        if header_len < HEADER_LEN {
            return Err(Error::Malformed);
        }
        if len < header_len {
            return Err(Error::Truncated);
        }
        let total_len = usize::from(self.total_len());
        if total_len < header_len {
            return Err(Error::Malformed);
        }
        if total_len > len {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn u16_at(&self, range: core::ops::Range<usize>) -> u16 {
        let d = &self.buffer.as_ref()[range];
        u16::from_be_bytes([d[0], d[1]])
    }

    /// The version field (4 after `new_checked`).
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VER_IHL] >> 4
    }

    /// Header length in bytes (IHL × 4), options included.
    pub fn header_len(&self) -> usize {
        usize::from(self.buffer.as_ref()[field::VER_IHL] & 0x0f) * 4
    }

    /// The DSCP and ECN bits (the former TOS octet).
    pub fn dscp_ecn(&self) -> u8 {
        self.buffer.as_ref()[field::DSCP_ECN]
    }

    /// Total length of header and payload in bytes.
    pub fn total_len(&self) -> u16 {
        self.u16_at(field::LENGTH)
    }

    /// The identification field.
    pub fn ident(&self) -> u16 {
        self.u16_at(field::IDENT)
    }

    /// The Don't Fragment flag.
    pub fn dont_frag(&self) -> bool {
        self.u16_at(field::FLG_OFF) & FLAG_DF != 0
    }

    /// The More Fragments flag.
    pub fn more_frags(&self) -> bool {
        self.u16_at(field::FLG_OFF) & FLAG_MF != 0
    }

    /// The fragment offset in bytes (the field × 8); non-zero for all but the first fragment.
    pub fn frag_offset(&self) -> u16 {
        (self.u16_at(field::FLG_OFF) & OFFSET_MASK) << 3
    }

    /// Time to live.
    pub fn ttl(&self) -> u8 {
        self.buffer.as_ref()[field::TTL]
    }

    /// The payload protocol.
    pub fn protocol(&self) -> Protocol {
        Protocol::from(self.buffer.as_ref()[field::PROTOCOL])
    }

    /// The header checksum field.
    pub fn checksum(&self) -> u16 {
        self.u16_at(field::CHECKSUM)
    }

    /// Source address.
    pub fn src_addr(&self) -> Ipv4Addr {
        let d = &self.buffer.as_ref()[field::SRC_ADDR];
        Ipv4Addr::new(d[0], d[1], d[2], d[3])
    }

    /// Destination address.
    pub fn dst_addr(&self) -> Ipv4Addr {
        let d = &self.buffer.as_ref()[field::DST_ADDR];
        Ipv4Addr::new(d[0], d[1], d[2], d[3])
    }

    /// Whether the header checksum is correct.
    pub fn verify_checksum(&self) -> bool {
        checksum::data(&self.buffer.as_ref()[..self.header_len()]) == 0xffff
    }

    /// The options: the header bytes after the first 20.
    pub fn options(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..self.header_len()]
    }

    /// The value of the Router Alert option (RFC 2113; 0 = "router shall examine packet"),
    /// `None` if the header has none. The options are walked up to End of Option List; a
    /// malformed option (a length below 2 or past the header) ends the walk.
    pub fn router_alert(&self) -> Option<u16> {
        let mut rest = self.options();
        while let Some(&kind) = rest.first() {
            match kind {
                OPTION_EOL => return None,
                OPTION_NOP => rest = &rest[1..],
                _ => {
                    let len = usize::from(*rest.get(1)?);
                    let option = rest.get(..len).filter(|_| len >= 2)?;
                    if kind == ROUTER_ALERT_OPTION[0] && len == ROUTER_ALERT_OPTION.len() {
                        return Some(u16::from_be_bytes([option[2], option[3]]));
                    }
                    rest = &rest[len..];
                }
            }
        }
        None
    }

    /// The payload: from the end of the header up to the total length.
    pub fn payload(&self) -> &[u8] {
        let range = self.header_len()..usize::from(self.total_len());
        &self.buffer.as_ref()[range]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    fn set_u16_at(&mut self, range: core::ops::Range<usize>, value: u16) {
        self.buffer.as_mut()[range].copy_from_slice(&value.to_be_bytes());
    }

    /// Sets the version (low 4 bits of `value`).
    pub fn set_version(&mut self, value: u8) {
        let b = &mut self.buffer.as_mut()[field::VER_IHL];
        *b = (*b & 0x0f) | (value << 4);
    }

    /// Sets the header length in bytes (stored as IHL = `value / 4`; must be a multiple of 4
    /// in 20..=60).
    pub fn set_header_len(&mut self, value: usize) {
        let ihl = ((value / 4) & 0x0f) as u8;
        let b = &mut self.buffer.as_mut()[field::VER_IHL];
        *b = (*b & 0xf0) | ihl;
    }

    /// Sets the DSCP/ECN octet.
    pub fn set_dscp_ecn(&mut self, value: u8) {
        self.buffer.as_mut()[field::DSCP_ECN] = value;
    }

    /// Sets the total length.
    pub fn set_total_len(&mut self, value: u16) {
        self.set_u16_at(field::LENGTH, value);
    }

    /// Sets the identification field.
    pub fn set_ident(&mut self, value: u16) {
        self.set_u16_at(field::IDENT, value);
    }

    fn set_flag_bits(&mut self, mask: u16, on: bool) {
        let v = self.u16_at(field::FLG_OFF);
        self.set_u16_at(field::FLG_OFF, if on { v | mask } else { v & !mask });
    }

    /// Sets the Don't Fragment flag.
    pub fn set_dont_frag(&mut self, value: bool) {
        self.set_flag_bits(FLAG_DF, value);
    }

    /// Sets the More Fragments flag.
    pub fn set_more_frags(&mut self, value: bool) {
        self.set_flag_bits(FLAG_MF, value);
    }

    /// Sets the fragment offset in bytes (must be a multiple of 8; the low 3 bits are dropped).
    pub fn set_frag_offset(&mut self, value: u16) {
        let v = self.u16_at(field::FLG_OFF);
        self.set_u16_at(
            field::FLG_OFF,
            (v & !OFFSET_MASK) | ((value >> 3) & OFFSET_MASK),
        );
    }

    /// Sets the time to live.
    pub fn set_ttl(&mut self, value: u8) {
        self.buffer.as_mut()[field::TTL] = value;
    }

    /// Sets the payload protocol.
    pub fn set_protocol(&mut self, value: Protocol) {
        self.buffer.as_mut()[field::PROTOCOL] = value.into();
    }

    /// Sets the header checksum field.
    pub fn set_checksum(&mut self, value: u16) {
        self.set_u16_at(field::CHECKSUM, value);
    }

    /// Sets the source address.
    pub fn set_src_addr(&mut self, value: Ipv4Addr) {
        self.buffer.as_mut()[field::SRC_ADDR].copy_from_slice(&value.octets());
    }

    /// Sets the destination address (without touching any checksum; see [`crate::rewrite`]).
    pub fn set_dst_addr(&mut self, value: Ipv4Addr) {
        self.buffer.as_mut()[field::DST_ADDR].copy_from_slice(&value.octets());
    }

    /// Computes the header checksum from scratch and stores it.
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let sum = checksum::data(&self.buffer.as_ref()[..self.header_len()]);
        self.set_checksum(!sum);
    }

    /// The payload (up to the total length), mutable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let range = self.header_len()..usize::from(self.total_len());
        &mut self.buffer.as_mut()[range]
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for Packet<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// An IPv4 header in owned form. Identification, flags and options are not represented:
/// [`emit`](Repr::emit) writes ident 0, DF set, offset 0 and no options.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr {
    /// Source address.
    pub src_addr: Ipv4Addr,
    /// Destination address.
    pub dst_addr: Ipv4Addr,
    /// Payload protocol.
    pub protocol: Protocol,
    /// Payload length in bytes (total length minus header length).
    pub payload_len: usize,
    /// Time to live.
    pub ttl: u8,
    /// DSCP/ECN octet.
    pub dscp_ecn: u8,
}

impl Repr {
    /// Reads a checked packet. The header checksum is *not* verified here (the switch forwards
    /// packets whatever their checksum); call [`Packet::verify_checksum`] where it matters.
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr> {
        packet.check_len()?;
        Ok(Repr {
            src_addr: packet.src_addr(),
            dst_addr: packet.dst_addr(),
            protocol: packet.protocol(),
            payload_len: usize::from(packet.total_len()) - packet.header_len(),
            ttl: packet.ttl(),
            dscp_ecn: packet.dscp_ecn(),
        })
    }

    /// Length of the emitted header: [`HEADER_LEN`].
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the 20-byte header (with a correct checksum) into the start of `packet`.
    /// The total length saturates at 65535 if `payload_len` is too large for IPv4.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) {
        self.emit_with_options(&[], packet);
    }

    /// Writes a 24-byte header (IHL 6) carrying the Router Alert option
    /// ([`ROUTER_ALERT_OPTION`]), with a correct checksum, into the start of `packet`; the
    /// payload then starts at [`ROUTER_ALERT_HEADER_LEN`]. RSVP sends Path, PathTear and
    /// ResvConf this way (RFC 2205 §3.1, RFC 2113).
    pub fn emit_with_router_alert<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) {
        self.emit_with_options(&ROUTER_ALERT_OPTION, packet);
    }

    /// Writes the header with `options` (a multiple of 4 bytes, at most 40).
    fn emit_with_options<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        options: &[u8],
        packet: &mut Packet<T>,
    ) {
        let header_len = HEADER_LEN + options.len();
        packet.set_version(4);
        packet.set_header_len(header_len);
        packet.buffer.as_mut()[HEADER_LEN..header_len].copy_from_slice(options);
        packet.set_dscp_ecn(self.dscp_ecn);
        let total = u16::try_from(header_len + self.payload_len).unwrap_or(u16::MAX);
        packet.set_total_len(total);
        packet.set_ident(0);
        packet.set_u16_at(field::FLG_OFF, FLAG_DF);
        packet.set_ttl(self.ttl);
        packet.set_protocol(self.protocol);
        packet.set_src_addr(self.src_addr);
        packet.set_dst_addr(self.dst_addr);
        packet.fill_checksum();
    }
}

impl fmt::Display for Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "IPv4 src={} dst={} proto={} len={} ttl={}",
            self.src_addr, self.dst_addr, self.protocol, self.payload_len, self.ttl
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata::{TCP_SYN, UDP_PACKET};
    use proptest::prelude::*;

    #[test]
    fn parse_udp_packet() {
        let p = Packet::new_checked(&UDP_PACKET[..]).unwrap();
        assert_eq!(p.version(), 4);
        assert_eq!(p.header_len(), 20);
        assert_eq!(p.total_len(), 32);
        assert_eq!(p.ident(), 0x1c46);
        assert!(p.dont_frag() && !p.more_frags());
        assert_eq!(p.frag_offset(), 0);
        assert_eq!(p.ttl(), 64);
        assert_eq!(p.protocol(), Protocol::Udp);
        assert_eq!(p.checksum(), 0x925f);
        assert!(p.verify_checksum());
        assert_eq!(p.src_addr(), Ipv4Addr::new(198, 18, 0, 1));
        assert_eq!(p.dst_addr(), Ipv4Addr::new(198, 18, 0, 2));
        assert_eq!(p.payload().len(), 12, "padding excluded");
        let repr = Repr::parse(&p).unwrap();
        assert_eq!(repr.payload_len, 12);
        assert_eq!(repr.protocol, Protocol::Udp);
    }

    #[test]
    fn fill_checksum_matches_capture() {
        let mut bytes = UDP_PACKET;
        bytes[10] = 0;
        bytes[11] = 0;
        let mut p = Packet::new_checked(&mut bytes[..]).unwrap();
        assert!(!p.verify_checksum());
        p.fill_checksum();
        assert_eq!(p.checksum(), 0x925f);
    }

    #[test]
    fn tcp_syn_header() {
        let p = Packet::new_checked(&TCP_SYN[..]).unwrap();
        assert_eq!((p.total_len(), p.protocol()), (60, Protocol::Tcp));
        assert!(p.verify_checksum());
        let mut bytes = TCP_SYN;
        let mut p = Packet::new_checked(&mut bytes[..]).unwrap();
        p.set_ttl(63);
        assert!(!p.verify_checksum());
        p.set_ttl(64);
        p.set_checksum(0);
        p.fill_checksum();
        assert_eq!(p.checksum(), 0xfcc0);
    }

    #[test]
    fn fragment_fields() {
        let mut bytes = UDP_PACKET;
        let mut p = Packet::new_unchecked(&mut bytes[..]);
        p.set_dont_frag(false);
        p.set_more_frags(true);
        p.set_frag_offset(1480);
        assert_eq!(&p.as_ref()[6..8], &[0x20, 0xb9]); // MF | 185
        assert!(p.more_frags() && !p.dont_frag());
        assert_eq!(p.frag_offset(), 1480);
    }

    #[test]
    fn options_are_skipped() {
        // IHL 6: one 4-byte option (NOP NOP NOP EOL), total length 28, payload 4 bytes.
        let mut bytes = [0u8; 28];
        bytes[..20].copy_from_slice(&UDP_PACKET[..20]);
        bytes[0] = 0x46;
        bytes[2..4].copy_from_slice(&28u16.to_be_bytes());
        bytes[20..24].copy_from_slice(&[1, 1, 1, 0]);
        bytes[24..28].copy_from_slice(&[9, 8, 7, 6]);
        let p = Packet::new_checked(&bytes[..]).unwrap();
        assert_eq!(p.header_len(), 24);
        assert_eq!(p.payload(), &[9, 8, 7, 6]);
    }

    #[test]
    fn router_alert_header() {
        let repr = Repr {
            src_addr: Ipv4Addr::new(198, 18, 0, 1),
            dst_addr: Ipv4Addr::new(198, 18, 0, 2),
            protocol: Protocol::Unknown(46),
            payload_len: 4,
            ttl: 64,
            dscp_ecn: 0,
        };
        let mut buf = [0u8; ROUTER_ALERT_HEADER_LEN + 4];
        repr.emit_with_router_alert(&mut Packet::new_unchecked(&mut buf[..]));
        assert_eq!(buf[0], 0x46, "version 4, IHL 6");
        assert_eq!(&buf[2..4], &28u16.to_be_bytes());
        assert_eq!(&buf[20..24], &[0x94, 0x04, 0x00, 0x00]);
        let p = Packet::new_checked(&buf[..]).unwrap();
        assert!(p.verify_checksum());
        assert_eq!(p.router_alert(), Some(0));
        assert_eq!(p.payload().len(), 4);
        assert_eq!(Repr::parse(&p), Ok(repr));
        // The plain emit writes no option, as before.
        let mut plain = [0u8; HEADER_LEN + 4];
        repr.emit(&mut Packet::new_unchecked(&mut plain[..]));
        let p = Packet::new_checked(&plain[..]).unwrap();
        assert_eq!((p.header_len(), p.router_alert()), (20, None));
    }

    #[test]
    fn router_alert_scan() {
        let alert = |options: &[u8]| {
            let mut bytes = vec![0u8; 20 + options.len()];
            bytes[..20].copy_from_slice(&UDP_PACKET[..20]);
            let len = bytes.len();
            bytes[0] = 0x40 | (len / 4) as u8;
            bytes[2..4].copy_from_slice(&(len as u16).to_be_bytes());
            bytes[20..].copy_from_slice(options);
            Packet::new_checked(bytes).unwrap().router_alert()
        };
        assert_eq!(alert(&[]), None);
        assert_eq!(alert(&[0x94, 4, 0, 0]), Some(0));
        assert_eq!(
            alert(&[1, 1, 1, 1, 0x94, 4, 0x12, 0x34]),
            Some(0x1234),
            "after NOPs"
        );
        assert_eq!(
            alert(&[0x07, 3, 4, 1, 0x94, 4, 0, 1, 0, 0, 0, 0]),
            Some(1),
            "after RR"
        );
        assert_eq!(
            alert(&[0, 0, 0, 0, 0x94, 4, 0, 0]),
            None,
            "after End of List"
        );
        assert_eq!(alert(&[0x07, 0, 0x94, 4]), None, "length 0 ends the walk");
        assert_eq!(alert(&[0x07, 9, 0x94, 4]), None, "length past the header");
        assert_eq!(alert(&[1, 1, 1, 0x94]), None, "cut-off option");
        assert_eq!(alert(&[0x94, 5, 0, 0, 0, 0, 0, 0]), None, "wrong length");
    }

    #[test]
    fn rejects_bad_headers() {
        let with = |at: usize, v: u8| {
            let mut b = UDP_PACKET;
            b[at] = v;
            Packet::new_checked(b).err()
        };
        assert_eq!(with(0, 0x65), Some(Error::Malformed), "version 6");
        assert_eq!(with(0, 0x44), Some(Error::Malformed), "IHL 4");
        assert_eq!(with(0, 0x4f), Some(Error::Truncated), "IHL 15 > buffer");
        assert_eq!(with(3, 19), Some(Error::Malformed), "total < header");
        assert_eq!(with(3, 35), Some(Error::Truncated), "total > buffer");
        assert_eq!(with(3, 34), None, "total == buffer");
    }

    #[test]
    fn every_truncation_is_an_error() {
        for len in 0..32 {
            assert_eq!(
                Packet::new_checked(&UDP_PACKET[..len]).err(),
                Some(Error::Truncated),
                "len {len}"
            );
        }
    }

    fn repr() -> impl Strategy<Value = Repr> {
        (
            any::<[u8; 4]>(),
            any::<[u8; 4]>(),
            any::<u8>(),
            0usize..200,
            any::<u8>(),
            any::<u8>(),
        )
            .prop_map(|(s, d, p, len, ttl, dscp)| Repr {
                src_addr: Ipv4Addr::from(s),
                dst_addr: Ipv4Addr::from(d),
                protocol: Protocol::from(p),
                payload_len: len,
                ttl,
                dscp_ecn: dscp,
            })
    }

    proptest! {
        #[test]
        fn repr_round_trip(repr in repr()) {
            let mut buf = vec![0u8; repr.buffer_len() + repr.payload_len];
            let mut p = Packet::new_unchecked(&mut buf[..]);
            repr.emit(&mut p);
            prop_assert!(p.verify_checksum());
            let parsed = Repr::parse(&Packet::new_checked(&buf[..]).unwrap()).unwrap();
            prop_assert_eq!(parsed, repr);
        }

        #[test]
        fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..80)) {
            if let Ok(p) = Packet::new_checked(&data[..]) {
                prop_assert_eq!(p.payload().len() + p.header_len(), usize::from(p.total_len()));
                let _ = (p.verify_checksum(), p.frag_offset(), p.router_alert(), Repr::parse(&p));
            }
        }
    }
}
