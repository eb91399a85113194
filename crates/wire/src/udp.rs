//! UDP headers (RFC 768).
//!
//! Real-time flows in EtheReal §3.2 are ordinary UDP sockets aimed at a proxy IP; the switch
//! only needs the ports and the checksum (fixed up by [`crate::rewrite`]).

use core::fmt;
use std::net::Ipv4Addr;

use crate::checksum;
use crate::ipv4::Protocol;
use crate::{Error, Result};

/// Length of a UDP header.
pub const HEADER_LEN: usize = 8;

mod field {
    use core::ops::Range;

    pub(super) const SRC_PORT: Range<usize> = 0..2;
    pub(super) const DST_PORT: Range<usize> = 2..4;
    pub(super) const LENGTH: Range<usize> = 4..6;
    pub(super) const CHECKSUM: Range<usize> = 6..8;
}

/// A read/write view of a UDP datagram. The buffer may be longer than the datagram;
/// [`payload`](Packet::payload) honours the length field.
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

    /// [`Error::Truncated`] if the buffer is shorter than the header or the length field;
    /// [`Error::Malformed`] if the length field is smaller than the header.
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let field_len = usize::from(self.len());
        if field_len < HEADER_LEN {
            return Err(Error::Malformed);
        }
        if field_len > len {
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

    /// Source port.
    pub fn src_port(&self) -> u16 {
        self.u16_at(field::SRC_PORT)
    }

    /// Destination port.
    pub fn dst_port(&self) -> u16 {
        self.u16_at(field::DST_PORT)
    }

    /// Length of header and payload (the length field).
    pub fn len(&self) -> u16 {
        self.u16_at(field::LENGTH)
    }

    /// Whether the payload is empty (length field 8).
    pub fn is_empty(&self) -> bool {
        usize::from(self.len()) <= HEADER_LEN
    }

    /// The checksum field (0 = no checksum).
    pub fn checksum(&self) -> u16 {
        self.u16_at(field::CHECKSUM)
    }

    /// Whether the checksum is correct for a datagram from `src` to `dst`; a zero checksum field
    /// (none sent) counts as correct.
    pub fn verify_checksum(&self, src: Ipv4Addr, dst: Ipv4Addr) -> bool {
        if self.checksum() == 0 {
            return true;
        }
        let len = self.len();
        let data = &self.buffer.as_ref()[..usize::from(len)];
        checksum::combine(&[
            checksum::pseudo_header_v4(src, dst, Protocol::Udp, len),
            checksum::data(data),
        ]) == 0xffff
    }

    /// The payload, up to the length field.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..usize::from(self.len())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    fn set_u16_at(&mut self, range: core::ops::Range<usize>, value: u16) {
        self.buffer.as_mut()[range].copy_from_slice(&value.to_be_bytes());
    }

    /// Sets the source port.
    pub fn set_src_port(&mut self, value: u16) {
        self.set_u16_at(field::SRC_PORT, value);
    }

    /// Sets the destination port.
    pub fn set_dst_port(&mut self, value: u16) {
        self.set_u16_at(field::DST_PORT, value);
    }

    /// Sets the length field.
    pub fn set_len(&mut self, value: u16) {
        self.set_u16_at(field::LENGTH, value);
    }

    /// Sets the checksum field.
    pub fn set_checksum(&mut self, value: u16) {
        self.set_u16_at(field::CHECKSUM, value);
    }

    /// Computes the checksum from scratch for a datagram from `src` to `dst` and stores it
    /// (a computed 0 is sent as 0xffff, RFC 768).
    pub fn fill_checksum(&mut self, src: Ipv4Addr, dst: Ipv4Addr) {
        self.set_checksum(0);
        let len = self.len();
        let sum = checksum::combine(&[
            checksum::pseudo_header_v4(src, dst, Protocol::Udp, len),
            checksum::data(&self.buffer.as_ref()[..usize::from(len)]),
        ]);
        let value = !sum;
        self.set_checksum(if value == 0 { 0xffff } else { value });
    }

    /// The payload (up to the length field), mutable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = usize::from(self.len());
        &mut self.buffer.as_mut()[HEADER_LEN..end]
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for Packet<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// A UDP header in owned form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Payload length in bytes.
    pub payload_len: usize,
}

impl Repr {
    /// Reads a checked datagram. The checksum is not verified (it needs the IP addresses:
    /// use [`Packet::verify_checksum`]).
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr> {
        packet.check_len()?;
        Ok(Repr {
            src_port: packet.src_port(),
            dst_port: packet.dst_port(),
            payload_len: usize::from(packet.len()) - HEADER_LEN,
        })
    }

    /// Length of the emitted header: [`HEADER_LEN`].
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header with a zero (absent) checksum; write the payload, then call
    /// [`Packet::fill_checksum`]. The length saturates at 65535 if `payload_len` is too large.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) {
        packet.set_src_port(self.src_port);
        packet.set_dst_port(self.dst_port);
        packet.set_len(u16::try_from(HEADER_LEN + self.payload_len).unwrap_or(u16::MAX));
        packet.set_checksum(0);
    }
}

impl fmt::Display for Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "UDP src={} dst={} len={}",
            self.src_port, self.dst_port, self.payload_len
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const SRC: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 1);
    const DST: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 2);

    /// The UDP part of `testdata::UDP_PACKET`. Checksum: pseudo-header c612+0001+c612+0002+
    /// 0011+000c, header 1388+1770+000c, data 6869+210a = 0x240bb, folded 0x40bd, field 0xbf42.
    const DATAGRAM: [u8; 12] = [
        0x13, 0x88, // source port 5000
        0x17, 0x70, // destination port 6000
        0x00, 0x0c, // length 12
        0xbf, 0x42, // checksum
        0x68, 0x69, 0x21, 0x0a, // "hi!\n"
    ];

    #[test]
    fn parse_datagram() {
        let p = Packet::new_checked(&DATAGRAM[..]).unwrap();
        assert_eq!((p.src_port(), p.dst_port(), p.len()), (5000, 6000, 12));
        assert_eq!(p.payload(), b"hi!\n");
        assert!(p.verify_checksum(SRC, DST));
        assert!(!p.verify_checksum(SRC, Ipv4Addr::new(198, 18, 0, 3)));
        assert_eq!(
            Repr::parse(&p).unwrap(),
            Repr {
                src_port: 5000,
                dst_port: 6000,
                payload_len: 4
            }
        );
    }

    #[test]
    fn matches_ipv4_vector() {
        assert_eq!(DATAGRAM[..], crate::testdata::UDP_PACKET[20..32]);
    }

    #[test]
    fn fill_checksum_matches_capture() {
        let mut bytes = DATAGRAM;
        let mut p = Packet::new_checked(&mut bytes[..]).unwrap();
        p.set_checksum(0x1234);
        p.fill_checksum(SRC, DST);
        assert_eq!(p.checksum(), 0xbf42);
    }

    #[test]
    fn zero_checksum_is_unchecked_and_computed_zero_is_ffff() {
        let mut bytes = DATAGRAM;
        bytes[6..8].copy_from_slice(&[0, 0]);
        assert!(Packet::new_checked(&bytes[..])
            .unwrap()
            .verify_checksum(SRC, Ipv4Addr::UNSPECIFIED));
        // Choose payload so the sum is 0xffff: the computed checksum is then 0, sent as 0xffff.
        let partial = checksum::combine(&[
            checksum::pseudo_header_v4(SRC, DST, Protocol::Udp, 12),
            checksum::data(&bytes[..8]),
        ]);
        bytes[8..12].copy_from_slice(&[0, 0, 0, 0]);
        bytes[8..10].copy_from_slice(&(!partial).to_be_bytes());
        let mut p = Packet::new_checked(&mut bytes[..]).unwrap();
        p.fill_checksum(SRC, DST);
        assert_eq!(p.checksum(), 0xffff);
        assert!(p.verify_checksum(SRC, DST));
    }

    #[test]
    fn bad_lengths() {
        for len in 0..12 {
            assert_eq!(
                Packet::new_checked(&DATAGRAM[..len]).err(),
                Some(Error::Truncated),
                "len {len}"
            );
        }
        let mut bytes = DATAGRAM;
        bytes[5] = 7;
        assert_eq!(
            Packet::new_checked(&bytes[..]).err(),
            Some(Error::Malformed)
        );
        bytes[5] = 13;
        assert_eq!(
            Packet::new_checked(&bytes[..]).err(),
            Some(Error::Truncated)
        );
    }

    proptest! {
        #[test]
        fn repr_round_trip(
            src_port in any::<u16>(),
            dst_port in any::<u16>(),
            payload in proptest::collection::vec(any::<u8>(), 0..64),
            src in any::<[u8; 4]>(),
            dst in any::<[u8; 4]>(),
        ) {
            let repr = Repr { src_port, dst_port, payload_len: payload.len() };
            let mut buf = vec![0u8; repr.buffer_len() + payload.len()];
            let mut p = Packet::new_unchecked(&mut buf[..]);
            repr.emit(&mut p);
            p.payload_mut().copy_from_slice(&payload);
            p.fill_checksum(src.into(), dst.into());
            let p = Packet::new_checked(&buf[..]).unwrap();
            prop_assert!(p.checksum() != 0);
            prop_assert!(p.verify_checksum(src.into(), dst.into()));
            prop_assert_eq!(Repr::parse(&p).unwrap(), repr);
            prop_assert_eq!(p.payload(), &payload[..]);
        }
    }
}
