//! TCP headers (RFC 9293), as far as a switch needs them: ports, sequence numbers, flags,
//! window and checksum (fixed up by [`crate::rewrite`]). Options are not interpreted: the
//! view exposes them as raw bytes, and [`Repr`] ignores their content (it keeps only the header
//! length; [`Repr::emit`] zero-fills the option area, i.e. End-of-Option-List).
//!
//! TCP has no length field: a [`Packet`] is the whole buffer, so give it exactly the IPv4
//! payload (`ipv4::Packet::payload`).

use core::fmt;
use core::ops::{BitOr, BitOrAssign};
use std::net::Ipv4Addr;

use crate::checksum;
use crate::ipv4::Protocol;
use crate::{Error, Result};

/// Length of a TCP header without options.
pub const HEADER_LEN: usize = 20;

/// Longest TCP header (data offset 15).
pub const MAX_HEADER_LEN: usize = 60;

/// The eight TCP control flags (byte 13 of the header).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Flags(pub u8);

impl Flags {
    /// No more data from sender.
    pub const FIN: Flags = Flags(0x01);
    /// Synchronize sequence numbers.
    pub const SYN: Flags = Flags(0x02);
    /// Reset the connection.
    pub const RST: Flags = Flags(0x04);
    /// Push function.
    pub const PSH: Flags = Flags(0x08);
    /// Acknowledgment field is significant.
    pub const ACK: Flags = Flags(0x10);
    /// Urgent pointer field is significant.
    pub const URG: Flags = Flags(0x20);
    /// ECN-Echo.
    pub const ECE: Flags = Flags(0x40);
    /// Congestion Window Reduced.
    pub const CWR: Flags = Flags(0x80);

    /// No flags set.
    pub const fn empty() -> Flags {
        Flags(0)
    }

    /// The raw flag bits.
    pub const fn bits(self) -> u8 {
        self.0
    }

    /// Whether every flag in `other` is set in `self`.
    pub const fn contains(self, other: Flags) -> bool {
        self.0 & other.0 == other.0
    }

    /// Whether no flag is set.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }
}

impl BitOr for Flags {
    type Output = Flags;

    fn bitor(self, rhs: Flags) -> Flags {
        Flags(self.0 | rhs.0)
    }
}

impl BitOrAssign for Flags {
    fn bitor_assign(&mut self, rhs: Flags) {
        self.0 |= rhs.0;
    }
}

impl fmt::Display for Flags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const NAMES: [&str; 8] = ["FIN", "SYN", "RST", "PSH", "ACK", "URG", "ECE", "CWR"];
        let mut first = true;
        for (bit, name) in NAMES.iter().enumerate() {
            if self.0 & (1 << bit) != 0 {
                if !first {
                    write!(f, "|")?;
                }
                write!(f, "{name}")?;
                first = false;
            }
        }
        if first {
            write!(f, "-")?;
        }
        Ok(())
    }
}

mod field {
    use core::ops::Range;

    pub(super) const SRC_PORT: Range<usize> = 0..2;
    pub(super) const DST_PORT: Range<usize> = 2..4;
    pub(super) const SEQ_NUM: Range<usize> = 4..8;
    pub(super) const ACK_NUM: Range<usize> = 8..12;
    pub(super) const DATA_OFF: usize = 12;
    pub(super) const FLAGS: usize = 13;
    pub(super) const WIN_SIZE: Range<usize> = 14..16;
    pub(super) const CHECKSUM: Range<usize> = 16..18;
    pub(super) const URGENT: Range<usize> = 18..20;
}

/// A read/write view of a TCP segment occupying the whole buffer.
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

    /// [`Error::Truncated`] if the buffer is shorter than 20 bytes or the data offset;
    /// [`Error::Malformed`] if the data offset is below 5 words.
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let header_len = self.header_len();
        if header_len < HEADER_LEN {
            return Err(Error::Malformed);
        }
        if header_len > len {
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

    fn u32_at(&self, range: core::ops::Range<usize>) -> u32 {
        let d = &self.buffer.as_ref()[range];
        u32::from_be_bytes([d[0], d[1], d[2], d[3]])
    }

    /// Source port.
    pub fn src_port(&self) -> u16 {
        self.u16_at(field::SRC_PORT)
    }

    /// Destination port.
    pub fn dst_port(&self) -> u16 {
        self.u16_at(field::DST_PORT)
    }

    /// Sequence number.
    pub fn seq_number(&self) -> u32 {
        self.u32_at(field::SEQ_NUM)
    }

    /// Acknowledgment number.
    pub fn ack_number(&self) -> u32 {
        self.u32_at(field::ACK_NUM)
    }

    /// Header length in bytes (data offset × 4), options included.
    pub fn header_len(&self) -> usize {
        usize::from(self.buffer.as_ref()[field::DATA_OFF] >> 4) * 4
    }

    /// The control flags.
    pub fn flags(&self) -> Flags {
        Flags(self.buffer.as_ref()[field::FLAGS])
    }

    /// Receive window (unscaled).
    pub fn window_len(&self) -> u16 {
        self.u16_at(field::WIN_SIZE)
    }

    /// The checksum field.
    pub fn checksum(&self) -> u16 {
        self.u16_at(field::CHECKSUM)
    }

    /// The urgent pointer.
    pub fn urgent_at(&self) -> u16 {
        self.u16_at(field::URGENT)
    }

    /// The raw option bytes (between the fixed header and the data offset).
    pub fn options(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..self.header_len()]
    }

    /// The payload (after the options, to the end of the buffer).
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[self.header_len()..]
    }

    /// Folded sum of the pseudo-header and the segment (including the checksum field).
    fn sum(&self, src: Ipv4Addr, dst: Ipv4Addr) -> u16 {
        let data = self.buffer.as_ref();
        // An IPv4 payload never exceeds 65515 bytes; a longer buffer cannot be a valid segment.
        let len = u16::try_from(data.len()).unwrap_or(u16::MAX);
        checksum::combine(&[
            checksum::pseudo_header_v4(src, dst, Protocol::Tcp, len),
            checksum::data(data),
        ])
    }

    /// Whether the checksum is correct for a segment from `src` to `dst`.
    pub fn verify_checksum(&self, src: Ipv4Addr, dst: Ipv4Addr) -> bool {
        self.sum(src, dst) == 0xffff
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

    /// Sets the sequence number.
    pub fn set_seq_number(&mut self, value: u32) {
        self.buffer.as_mut()[field::SEQ_NUM].copy_from_slice(&value.to_be_bytes());
    }

    /// Sets the acknowledgment number.
    pub fn set_ack_number(&mut self, value: u32) {
        self.buffer.as_mut()[field::ACK_NUM].copy_from_slice(&value.to_be_bytes());
    }

    /// Sets the header length in bytes (stored as data offset `value / 4`, clamped to 5..=15).
    pub fn set_header_len(&mut self, value: usize) {
        let words = (value / 4).clamp(5, 15) as u8;
        let b = &mut self.buffer.as_mut()[field::DATA_OFF];
        *b = (*b & 0x0f) | (words << 4);
    }

    /// Sets the control flags.
    pub fn set_flags(&mut self, value: Flags) {
        self.buffer.as_mut()[field::FLAGS] = value.0;
    }

    /// Sets the receive window.
    pub fn set_window_len(&mut self, value: u16) {
        self.set_u16_at(field::WIN_SIZE, value);
    }

    /// Sets the checksum field.
    pub fn set_checksum(&mut self, value: u16) {
        self.set_u16_at(field::CHECKSUM, value);
    }

    /// Sets the urgent pointer.
    pub fn set_urgent_at(&mut self, value: u16) {
        self.set_u16_at(field::URGENT, value);
    }

    /// Computes the checksum from scratch for a segment from `src` to `dst` and stores it.
    pub fn fill_checksum(&mut self, src: Ipv4Addr, dst: Ipv4Addr) {
        self.set_checksum(0);
        let sum = self.sum(src, dst);
        self.set_checksum(!sum);
    }

    /// The payload, mutable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let start = self.header_len();
        &mut self.buffer.as_mut()[start..]
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for Packet<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// A TCP header in owned form. Options are ignored (only their total length is kept in
/// `header_len`); the urgent pointer is not represented (emitted as 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Sequence number.
    pub seq: u32,
    /// Acknowledgment number.
    pub ack: u32,
    /// Control flags.
    pub flags: Flags,
    /// Receive window (unscaled).
    pub window: u16,
    /// Header length in bytes including options: a multiple of 4 in 20..=60.
    pub header_len: usize,
}

impl Repr {
    /// Reads a checked segment. The checksum is not verified (it needs the IP addresses: use
    /// [`Packet::verify_checksum`]).
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr> {
        packet.check_len()?;
        Ok(Repr {
            src_port: packet.src_port(),
            dst_port: packet.dst_port(),
            seq: packet.seq_number(),
            ack: packet.ack_number(),
            flags: packet.flags(),
            window: packet.window_len(),
            header_len: packet.header_len(),
        })
    }

    /// Length of the emitted header: `header_len` (clamped to 20..=60).
    pub fn buffer_len(&self) -> usize {
        (self.header_len / 4).clamp(5, 15) * 4
    }

    /// Writes the header into the first [`buffer_len`](Self::buffer_len) bytes of `packet`, with
    /// zero-filled options and a zero checksum; write the payload, then call
    /// [`Packet::fill_checksum`].
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) {
        packet.set_src_port(self.src_port);
        packet.set_dst_port(self.dst_port);
        packet.set_seq_number(self.seq);
        packet.set_ack_number(self.ack);
        packet.buffer.as_mut()[field::DATA_OFF] = 0;
        packet.set_header_len(self.buffer_len());
        packet.set_flags(self.flags);
        packet.set_window_len(self.window);
        packet.set_checksum(0);
        packet.set_urgent_at(0);
        let end = self.buffer_len();
        packet.buffer.as_mut()[HEADER_LEN..end].fill(0);
    }
}

impl fmt::Display for Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "TCP src={} dst={} seq={} ack={} win={} {}",
            self.src_port, self.dst_port, self.seq, self.ack, self.window, self.flags
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ipv4;
    use crate::testdata::TCP_SYN;
    use proptest::prelude::*;

    const SRC: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 1);
    const DST: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 2);

    fn segment() -> &'static [u8] {
        &TCP_SYN[ipv4::HEADER_LEN..]
    }

    #[test]
    fn parse_syn() {
        let ip = ipv4::Packet::new_checked(&TCP_SYN[..]).unwrap();
        assert_eq!(ip.protocol(), Protocol::Tcp);
        assert!(ip.verify_checksum());
        let p = Packet::new_checked(ip.payload()).unwrap();
        assert_eq!((p.src_port(), p.dst_port()), (40000, 5001));
        assert_eq!(p.seq_number(), 0x1234_5678);
        assert_eq!(p.ack_number(), 0);
        assert_eq!(p.header_len(), 40);
        assert_eq!(p.flags(), Flags::SYN);
        assert!(p.flags().contains(Flags::SYN) && !p.flags().contains(Flags::ACK));
        assert_eq!(p.window_len(), 64240);
        assert_eq!(p.checksum(), 0x04a7);
        assert_eq!(p.options()[..4], [0x02, 0x04, 0x05, 0xb4]);
        assert!(p.payload().is_empty());
        assert!(p.verify_checksum(SRC, DST));
        assert!(!p.verify_checksum(SRC, Ipv4Addr::new(198, 18, 0, 3)));
        let repr = Repr::parse(&p).unwrap();
        assert_eq!(repr.header_len, 40);
        assert_eq!(repr.flags.to_string(), "SYN");
    }

    #[test]
    fn fill_checksum_matches_capture() {
        let mut bytes = segment().to_vec();
        let mut p = Packet::new_checked(&mut bytes[..]).unwrap();
        p.set_checksum(0xdead);
        assert!(!p.verify_checksum(SRC, DST));
        p.fill_checksum(SRC, DST);
        assert_eq!(p.checksum(), 0x04a7);
    }

    #[test]
    fn flags_ops() {
        let sa = Flags::SYN | Flags::ACK;
        assert_eq!(sa.bits(), 0x12);
        assert!(sa.contains(Flags::ACK) && sa.contains(Flags::SYN | Flags::ACK));
        assert!(!sa.contains(Flags::FIN) && !sa.contains(Flags::FIN | Flags::ACK));
        assert!(Flags::empty().is_empty() && Flags::empty().to_string() == "-");
        assert_eq!(
            (Flags::CWR | Flags::ECE | Flags::FIN).to_string(),
            "FIN|ECE|CWR"
        );
    }

    #[test]
    fn bad_lengths() {
        for len in 0..40 {
            assert_eq!(
                Packet::new_checked(&segment()[..len]).err(),
                Some(Error::Truncated),
                "len {len}"
            );
        }
        let mut bytes = segment().to_vec();
        bytes[12] = 0x40; // data offset 4
        assert_eq!(
            Packet::new_checked(&bytes[..]).err(),
            Some(Error::Malformed)
        );
    }

    fn repr() -> impl Strategy<Value = Repr> {
        (any::<(u16, u16, u32, u32, u8, u16)>(), 5usize..=15).prop_map(
            |((sp, dp, seq, ack, flags, window), words)| Repr {
                src_port: sp,
                dst_port: dp,
                seq,
                ack,
                flags: Flags(flags),
                window,
                header_len: words * 4,
            },
        )
    }

    proptest! {
        #[test]
        fn repr_round_trip(
            repr in repr(),
            payload in proptest::collection::vec(any::<u8>(), 0..32),
            src in any::<[u8; 4]>(),
            dst in any::<[u8; 4]>(),
        ) {
            let mut buf = vec![0xaau8; repr.buffer_len() + payload.len()];
            let mut p = Packet::new_unchecked(&mut buf[..]);
            repr.emit(&mut p);
            p.payload_mut().copy_from_slice(&payload);
            p.fill_checksum(src.into(), dst.into());
            let p = Packet::new_checked(&buf[..]).unwrap();
            prop_assert!(p.verify_checksum(src.into(), dst.into()));
            prop_assert!(p.options().iter().all(|&b| b == 0));
            prop_assert_eq!(p.payload(), &payload[..]);
            prop_assert_eq!(Repr::parse(&p).unwrap(), repr);
        }
    }
}
