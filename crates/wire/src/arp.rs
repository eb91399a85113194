//! ARP for Ethernet/IPv4 (RFC 826).
//!
//! EtheReal §3.4: the switch learns from ARP, answers ARP for its own address and probes unknown
//! destinations with ARP requests whose sender protocol address is 0.0.0.0. Only the 28-byte
//! Ethernet/IPv4 form exists on our networks, so the view is fixed-size.

use core::fmt;
use std::net::Ipv4Addr;

use crate::ethernet::{self, Address, EtherType, Frame};
use crate::{Error, Result};

/// Hardware type value for Ethernet.
pub const HARDWARE_ETHERNET: u16 = 1;

/// Length of an Ethernet/IPv4 ARP packet.
pub const PACKET_LEN: usize = 28;

/// Length of an untagged Ethernet frame carrying ARP (14 + 28, before any padding to 60).
pub const FRAME_LEN: usize = ethernet::HEADER_LEN + PACKET_LEN;

/// The ARP operation code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Operation {
    /// Request, 1.
    Request,
    /// Reply, 2.
    Reply,
    /// Any other value (RARP, InARP, ...), kept as data.
    Unknown(u16),
}

impl From<u16> for Operation {
    fn from(value: u16) -> Operation {
        match value {
            1 => Operation::Request,
            2 => Operation::Reply,
            other => Operation::Unknown(other),
        }
    }
}

impl From<Operation> for u16 {
    fn from(value: Operation) -> u16 {
        match value {
            Operation::Request => 1,
            Operation::Reply => 2,
            Operation::Unknown(other) => other,
        }
    }
}

mod field {
    use core::ops::Range;

    pub(super) const HTYPE: Range<usize> = 0..2;
    pub(super) const PTYPE: Range<usize> = 2..4;
    pub(super) const HLEN: usize = 4;
    pub(super) const PLEN: usize = 5;
    pub(super) const OPER: Range<usize> = 6..8;
    pub(super) const SHA: Range<usize> = 8..14;
    pub(super) const SPA: Range<usize> = 14..18;
    pub(super) const THA: Range<usize> = 18..24;
    pub(super) const TPA: Range<usize> = 24..28;
}

/// A read/write view of an Ethernet/IPv4 ARP packet (the Ethernet payload).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking its length; accessors may panic on a short buffer.
    pub fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wraps a buffer, checking it holds [`PACKET_LEN`] bytes; after this no accessor panics.
    /// (The hardware/protocol types are checked by [`Repr::parse`], not here.)
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Checks that the buffer holds a whole Ethernet/IPv4 ARP packet.
    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < PACKET_LEN {
            Err(Error::Truncated)
        } else {
            Ok(())
        }
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn u16_at(&self, range: core::ops::Range<usize>) -> u16 {
        let d = &self.buffer.as_ref()[range];
        u16::from_be_bytes([d[0], d[1]])
    }

    fn mac_at(&self, range: core::ops::Range<usize>) -> Address {
        let mut octets = [0; 6];
        octets.copy_from_slice(&self.buffer.as_ref()[range]);
        Address(octets)
    }

    fn ip_at(&self, range: core::ops::Range<usize>) -> Ipv4Addr {
        let d = &self.buffer.as_ref()[range];
        Ipv4Addr::new(d[0], d[1], d[2], d[3])
    }

    /// Hardware type ([`HARDWARE_ETHERNET`] for Ethernet).
    pub fn hardware_type(&self) -> u16 {
        self.u16_at(field::HTYPE)
    }

    /// Protocol type (an EtherType; IPv4 for us).
    pub fn protocol_type(&self) -> EtherType {
        EtherType::from(self.u16_at(field::PTYPE))
    }

    /// Hardware address length (6 for Ethernet).
    pub fn hardware_len(&self) -> u8 {
        self.buffer.as_ref()[field::HLEN]
    }

    /// Protocol address length (4 for IPv4).
    pub fn protocol_len(&self) -> u8 {
        self.buffer.as_ref()[field::PLEN]
    }

    /// The operation.
    pub fn operation(&self) -> Operation {
        Operation::from(self.u16_at(field::OPER))
    }

    /// Sender hardware address.
    pub fn source_hardware_addr(&self) -> Address {
        self.mac_at(field::SHA)
    }

    /// Sender protocol address (0.0.0.0 in an EtheReal probe).
    pub fn source_protocol_addr(&self) -> Ipv4Addr {
        self.ip_at(field::SPA)
    }

    /// Target hardware address.
    pub fn target_hardware_addr(&self) -> Address {
        self.mac_at(field::THA)
    }

    /// Target protocol address.
    pub fn target_protocol_addr(&self) -> Ipv4Addr {
        self.ip_at(field::TPA)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    fn set_u16_at(&mut self, range: core::ops::Range<usize>, value: u16) {
        self.buffer.as_mut()[range].copy_from_slice(&value.to_be_bytes());
    }

    /// Sets the hardware type.
    pub fn set_hardware_type(&mut self, value: u16) {
        self.set_u16_at(field::HTYPE, value);
    }

    /// Sets the protocol type.
    pub fn set_protocol_type(&mut self, value: EtherType) {
        self.set_u16_at(field::PTYPE, value.into());
    }

    /// Sets the hardware address length.
    pub fn set_hardware_len(&mut self, value: u8) {
        self.buffer.as_mut()[field::HLEN] = value;
    }

    /// Sets the protocol address length.
    pub fn set_protocol_len(&mut self, value: u8) {
        self.buffer.as_mut()[field::PLEN] = value;
    }

    /// Sets the operation.
    pub fn set_operation(&mut self, value: Operation) {
        self.set_u16_at(field::OPER, value.into());
    }

    /// Sets the sender hardware address.
    pub fn set_source_hardware_addr(&mut self, value: Address) {
        self.buffer.as_mut()[field::SHA].copy_from_slice(&value.0);
    }

    /// Sets the sender protocol address.
    pub fn set_source_protocol_addr(&mut self, value: Ipv4Addr) {
        self.buffer.as_mut()[field::SPA].copy_from_slice(&value.octets());
    }

    /// Sets the target hardware address.
    pub fn set_target_hardware_addr(&mut self, value: Address) {
        self.buffer.as_mut()[field::THA].copy_from_slice(&value.0);
    }

    /// Sets the target protocol address.
    pub fn set_target_protocol_addr(&mut self, value: Ipv4Addr) {
        self.buffer.as_mut()[field::TPA].copy_from_slice(&value.octets());
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for Packet<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// An Ethernet/IPv4 ARP packet in owned form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr {
    /// The operation.
    pub operation: Operation,
    /// Sender hardware address.
    pub source_hardware_addr: Address,
    /// Sender protocol address.
    pub source_protocol_addr: Ipv4Addr,
    /// Target hardware address.
    pub target_hardware_addr: Address,
    /// Target protocol address.
    pub target_protocol_addr: Ipv4Addr,
}

impl Repr {
    /// Parses a checked packet; [`Error::Unsupported`] unless it is Ethernet/IPv4 ARP
    /// (hardware type 1, length 6; protocol type 0x0800, length 4).
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr> {
        packet.check_len()?;
        if packet.hardware_type() != HARDWARE_ETHERNET
            || packet.protocol_type() != EtherType::Ipv4
            || packet.hardware_len() != 6
            || packet.protocol_len() != 4
        {
            return Err(Error::Unsupported);
        }
        Ok(Repr {
            operation: packet.operation(),
            source_hardware_addr: packet.source_hardware_addr(),
            source_protocol_addr: packet.source_protocol_addr(),
            target_hardware_addr: packet.target_hardware_addr(),
            target_protocol_addr: packet.target_protocol_addr(),
        })
    }

    /// Length of the emitted packet: [`PACKET_LEN`].
    pub const fn buffer_len(&self) -> usize {
        PACKET_LEN
    }

    /// Writes the packet into the first [`PACKET_LEN`] bytes of `packet`.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) {
        packet.set_hardware_type(HARDWARE_ETHERNET);
        packet.set_protocol_type(EtherType::Ipv4);
        packet.set_hardware_len(6);
        packet.set_protocol_len(4);
        packet.set_operation(self.operation);
        packet.set_source_hardware_addr(self.source_hardware_addr);
        packet.set_source_protocol_addr(self.source_protocol_addr);
        packet.set_target_hardware_addr(self.target_hardware_addr);
        packet.set_target_protocol_addr(self.target_protocol_addr);
    }

    /// Writes a whole untagged Ethernet + ARP frame (from `src` to `dst`) into the start of `buf`
    /// and returns its length, [`FRAME_LEN`]. [`Error::Truncated`] if `buf` is shorter.
    /// No padding to the 60-byte Ethernet minimum is added.
    pub fn emit_frame(&self, src: Address, dst: Address, buf: &mut [u8]) -> Result<usize> {
        let buf = buf.get_mut(..FRAME_LEN).ok_or(Error::Truncated)?;
        let eth = ethernet::Repr {
            src_addr: src,
            dst_addr: dst,
            ethertype: EtherType::Arp,
        };
        let mut frame = Frame::new_unchecked(&mut *buf);
        eth.emit(&mut frame);
        self.emit(&mut Packet::new_unchecked(&mut buf[ethernet::HEADER_LEN..]));
        Ok(FRAME_LEN)
    }
}

impl fmt::Display for Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ARP {:?} src={}/{} tgt={}/{}",
            self.operation,
            self.source_hardware_addr,
            self.source_protocol_addr,
            self.target_hardware_addr,
            self.target_protocol_addr
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// "Who has 198.18.0.2? Tell 198.18.0.1", as captured on a veth (without padding).
    const REQUEST_FRAME: [u8; 42] = [
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // Ethernet destination: broadcast
        0x02, 0x00, 0x00, 0x00, 0x00, 0x01, // Ethernet source
        0x08, 0x06, // EtherType ARP
        0x00, 0x01, // hardware type Ethernet
        0x08, 0x00, // protocol type IPv4
        0x06, // hardware address length
        0x04, // protocol address length
        0x00, 0x01, // operation: request
        0x02, 0x00, 0x00, 0x00, 0x00, 0x01, // sender MAC
        0xc6, 0x12, 0x00, 0x01, // sender IP 198.18.0.1
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // target MAC unknown
        0xc6, 0x12, 0x00, 0x02, // target IP 198.18.0.2
    ];

    fn request_repr() -> Repr {
        Repr {
            operation: Operation::Request,
            source_hardware_addr: Address([2, 0, 0, 0, 0, 1]),
            source_protocol_addr: Ipv4Addr::new(198, 18, 0, 1),
            target_hardware_addr: Address([0; 6]),
            target_protocol_addr: Ipv4Addr::new(198, 18, 0, 2),
        }
    }

    #[test]
    fn parse_request() {
        let frame = Frame::new_checked(&REQUEST_FRAME[..]).unwrap();
        assert_eq!(frame.inner_ethertype(), EtherType::Arp);
        let packet = Packet::new_checked(frame.payload()).unwrap();
        assert_eq!(packet.hardware_type(), 1);
        assert_eq!(packet.protocol_type(), EtherType::Ipv4);
        assert_eq!(packet.operation(), Operation::Request);
        assert_eq!(Repr::parse(&packet).unwrap(), request_repr());
    }

    #[test]
    fn emit_frame_matches_capture() {
        let mut buf = [0xaa; 64];
        let len = request_repr()
            .emit_frame(Address([2, 0, 0, 0, 0, 1]), Address::BROADCAST, &mut buf)
            .unwrap();
        assert_eq!(len, FRAME_LEN);
        assert_eq!(buf[..len], REQUEST_FRAME[..]);
        assert_eq!(buf[len], 0xaa, "nothing written past the frame");
        assert_eq!(
            request_repr().emit_frame(Address::BROADCAST, Address::BROADCAST, &mut buf[..41]),
            Err(Error::Truncated)
        );
    }

    #[test]
    fn operation_codes() {
        assert_eq!(Operation::from(1), Operation::Request);
        assert_eq!(Operation::from(2), Operation::Reply);
        assert_eq!(Operation::from(3), Operation::Unknown(3));
        assert_eq!(u16::from(Operation::Unknown(9)), 9);
    }

    #[test]
    fn non_ethernet_ipv4_is_unsupported() {
        for (at, value) in [(0, 0x01), (1, 0x06), (2, 0x86), (4, 0x08), (5, 0x10)] {
            let mut bytes = REQUEST_FRAME;
            bytes[ethernet::HEADER_LEN + at] = value;
            let packet = Packet::new_checked(&bytes[ethernet::HEADER_LEN..]).unwrap();
            assert_eq!(Repr::parse(&packet), Err(Error::Unsupported), "byte {at}");
        }
    }

    #[test]
    fn every_truncation_is_an_error() {
        let payload = &REQUEST_FRAME[ethernet::HEADER_LEN..];
        for len in 0..PACKET_LEN {
            assert_eq!(Packet::new_checked(&payload[..len]), Err(Error::Truncated));
        }
    }

    proptest! {
        #[test]
        fn repr_round_trip(
            op in any::<u16>(),
            sha in any::<[u8; 6]>(),
            spa in any::<[u8; 4]>(),
            tha in any::<[u8; 6]>(),
            tpa in any::<[u8; 4]>(),
        ) {
            let repr = Repr {
                operation: Operation::from(op),
                source_hardware_addr: Address(sha),
                source_protocol_addr: Ipv4Addr::from(spa),
                target_hardware_addr: Address(tha),
                target_protocol_addr: Ipv4Addr::from(tpa),
            };
            let mut buf = [0u8; PACKET_LEN];
            repr.emit(&mut Packet::new_unchecked(&mut buf[..]));
            let parsed = Repr::parse(&Packet::new_checked(&buf[..]).unwrap()).unwrap();
            prop_assert_eq!(parsed, repr);
        }
    }
}
