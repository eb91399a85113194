//! Spanning tree BPDUs (IEEE 802.1D-1998 clause 9; IEEE 802.1D-2004 clause 9 for the RST BPDU).
//!
//! A BPDU travels in an IEEE 802.3 frame whose type/length field is a *length* (≤ 1500), to the
//! Bridge Group Address [`BRIDGE_GROUP_ADDRESS`], behind an 802.2 LLC header with DSAP = SSAP =
//! 0x42 and control 0x03 (UI). Three BPDU types exist:
//!
//! | type | name                              | length | version |
//! |------|-----------------------------------|--------|---------|
//! | 0x00 | Configuration                     | 35     | 0 (STP) |
//! | 0x80 | Topology Change Notification      | 4      | 0 (STP) |
//! | 0x02 | Rapid Spanning Tree (RST)         | 36     | 2 (RSTP)|
//!
//! The view [`Packet`] starts at the Protocol Identifier (after the LLC header); the frame helpers
//! [`parse_frame`] and [`Repr::emit_frame`] add and check the Ethernet and LLC headers.
//!
//! Timer values on the wire (message age, max age, hello time, forward delay) count 1/256 s
//! ([`Time`]); identifiers compare as unsigned big-endian numbers, which is the order the derived
//! `Ord` of [`BridgeId`] and [`PortIdentifier`] gives.
//!
//! Receive validation follows 802.1D-2004 §9.3.4 as far as it is a property of the bytes alone: a
//! type 0x00 BPDU is a Configuration BPDU whatever its version, a type 0x02 BPDU is an RST BPDU
//! only if its version is 2 or more (an MST BPDU, version 3, is read as its RST prefix), and
//! anything else is [`Error::Unsupported`]. The checks that need the receiver's state (message age
//! below max age, a BPDU that is our own) belong to the bridge engine.

use core::fmt;
use core::time::Duration;

use crate::ethernet::{self, Address, EtherType, Frame};
use crate::{Error, Result};

/// The Bridge Group Address every BPDU is sent to, `01:80:c2:00:00:00`.
pub const BRIDGE_GROUP_ADDRESS: Address = Address([0x01, 0x80, 0xc2, 0x00, 0x00, 0x00]);

/// The LLC service access point of the spanning tree protocols (DSAP and SSAP).
pub const LLC_SAP: u8 = 0x42;

/// The LLC control field of a BPDU: unnumbered information (UI).
pub const LLC_CONTROL_UI: u8 = 0x03;

/// Length of the LLC header (DSAP, SSAP, control).
pub const LLC_HEADER_LEN: usize = 3;

/// The Protocol Identifier of every spanning tree BPDU.
pub const PROTOCOL_ID: u16 = 0x0000;

/// Length of the common BPDU header (protocol identifier, version, type).
pub const HEADER_LEN: usize = 4;

/// Length of a Configuration BPDU.
pub const CONFIG_LEN: usize = 35;

/// Length of a Topology Change Notification BPDU.
pub const TCN_LEN: usize = 4;

/// Length of an RST BPDU (a Configuration BPDU plus the Version 1 Length octet).
pub const RST_LEN: usize = 36;

/// Length of the longest frame [`Repr::emit_frame`] writes (Ethernet + LLC + RST BPDU, no
/// padding to the 60-byte Ethernet minimum).
pub const MAX_FRAME_LEN: usize = ethernet::HEADER_LEN + LLC_HEADER_LEN + RST_LEN;

/// Protocol Version Identifier of STP (802.1D-1998) BPDUs.
pub const VERSION_STP: u8 = 0;

/// Protocol Version Identifier of RSTP (802.1D-2004) BPDUs.
pub const VERSION_RSTP: u8 = 2;

/// The BPDU Type field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum BpduType {
    /// Configuration BPDU, 0x00.
    Config,
    /// Topology Change Notification BPDU, 0x80.
    Tcn,
    /// RST BPDU (also carried by MST BPDUs), 0x02.
    Rst,
    /// Any other value, kept as data.
    Unknown(u8),
}

impl From<u8> for BpduType {
    fn from(value: u8) -> BpduType {
        match value {
            0x00 => BpduType::Config,
            0x80 => BpduType::Tcn,
            0x02 => BpduType::Rst,
            other => BpduType::Unknown(other),
        }
    }
}

impl From<BpduType> for u8 {
    fn from(value: BpduType) -> u8 {
        match value {
            BpduType::Config => 0x00,
            BpduType::Tcn => 0x80,
            BpduType::Rst => 0x02,
            BpduType::Unknown(other) => other,
        }
    }
}

impl BpduType {
    /// The length a BPDU of this type needs for its fields to be present: [`CONFIG_LEN`],
    /// [`RST_LEN`], or [`HEADER_LEN`] for a TCN and for unknown types.
    pub fn min_len(self) -> usize {
        match self {
            BpduType::Config => CONFIG_LEN,
            BpduType::Rst => RST_LEN,
            BpduType::Tcn | BpduType::Unknown(_) => HEADER_LEN,
        }
    }
}

/// A bridge identifier: a 16-bit priority (in 802.1D-2004, 4 bits of priority in steps of 4096
/// and a 12-bit system id extension) followed by the bridge's MAC address. Lower is better; the
/// derived order is the standard's (priority first, then address, both unsigned).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct BridgeId {
    /// The priority field, all 16 bits.
    pub priority: u16,
    /// The bridge address.
    pub addr: Address,
}

impl BridgeId {
    /// The eight octets as sent.
    pub fn to_bytes(self) -> [u8; 8] {
        let mut out = [0; 8];
        out[..2].copy_from_slice(&self.priority.to_be_bytes());
        out[2..].copy_from_slice(&self.addr.0);
        out
    }

    /// Reads eight octets as sent.
    pub fn from_bytes(bytes: [u8; 8]) -> BridgeId {
        let mut addr = [0; 6];
        addr.copy_from_slice(&bytes[2..]);
        BridgeId {
            priority: u16::from_be_bytes([bytes[0], bytes[1]]),
            addr: Address(addr),
        }
    }
}

impl fmt::Display for BridgeId {
    /// The Linux bridge's notation, `8000.020000000001`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04x}.", self.priority)?;
        for b in self.addr.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

/// A port identifier: in 802.1D-2004, 4 bits of priority (in steps of 16) and a 12-bit port
/// number; in 802.1D-1998, 8 and 8. Only the 16-bit value matters to the protocol (lower is
/// better).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct PortIdentifier(pub u16);

impl PortIdentifier {
    /// The 802.1D-2004 identifier of port `number` (1..=4095) with `priority` (0..=240 in steps
    /// of 16; the low four bits are dropped).
    pub fn new(priority: u8, number: u16) -> PortIdentifier {
        PortIdentifier((u16::from(priority & 0xf0) << 8) | (number & 0x0fff))
    }

    /// The priority part (802.1D-2004 layout), 0..=240.
    pub fn priority(self) -> u8 {
        // The shifted value is at most 0xf0, so it fits.
        ((self.0 >> 8) & 0xf0) as u8
    }

    /// The port number part (802.1D-2004 layout), 0..=4095.
    pub fn number(self) -> u16 {
        self.0 & 0x0fff
    }
}

impl fmt::Display for PortIdentifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0x{:04x}", self.0)
    }
}

/// A timer value as carried in a BPDU, in units of 1/256 s.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Time(pub u16);

impl Time {
    /// Nanoseconds in one unit (1/256 s), exact.
    const UNIT_NANOS: u64 = 1_000_000_000 / 256;

    /// `secs` whole seconds (saturating at 255 s + 255/256).
    pub fn from_secs(secs: u8) -> Time {
        Time(u16::from(secs) << 8)
    }

    /// The value as a duration (exact: a unit is 3 906 250 ns).
    pub fn to_duration(self) -> Duration {
        Duration::from_nanos(u64::from(self.0) * Self::UNIT_NANOS)
    }

    /// The duration rounded down to whole units, saturating at the largest value.
    pub fn from_duration(d: Duration) -> Time {
        let units = d.as_nanos() / u128::from(Self::UNIT_NANOS);
        Time(u16::try_from(units).unwrap_or(u16::MAX))
    }
}

impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_multiple_of(256) {
            write!(f, "{}s", self.0 / 256)
        } else {
            write!(f, "{}/256s", self.0)
        }
    }
}

/// The role an RST BPDU's sender gives its port (flags bits 2–3, 802.1D-2004 §9.3.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PortRole {
    /// 0: unknown (MSTP's master port).
    Unknown,
    /// 1: alternate or backup port.
    AlternateOrBackup,
    /// 2: root port.
    Root,
    /// 3: designated port.
    Designated,
}

impl PortRole {
    fn from_bits(bits: u8) -> PortRole {
        match bits & 0b11 {
            0 => PortRole::Unknown,
            1 => PortRole::AlternateOrBackup,
            2 => PortRole::Root,
            _ => PortRole::Designated,
        }
    }

    fn bits(self) -> u8 {
        match self {
            PortRole::Unknown => 0,
            PortRole::AlternateOrBackup => 1,
            PortRole::Root => 2,
            PortRole::Designated => 3,
        }
    }
}

/// The flags octet. A Configuration BPDU defines only Topology Change (bit 1, 0x01) and Topology
/// Change Acknowledgment (bit 8, 0x80); an RST BPDU uses all eight (802.1D-2004 §9.3.3). Every bit
/// is kept as received, so unknown uses survive a round trip.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Flags(pub u8);

impl Flags {
    const TOPOLOGY_CHANGE: u8 = 0x01;
    const PROPOSAL: u8 = 0x02;
    const ROLE_SHIFT: u8 = 2;
    const ROLE_MASK: u8 = 0x0c;
    const LEARNING: u8 = 0x10;
    const FORWARDING: u8 = 0x20;
    const AGREEMENT: u8 = 0x40;
    const TOPOLOGY_CHANGE_ACK: u8 = 0x80;

    fn bit(self, mask: u8) -> bool {
        self.0 & mask != 0
    }

    fn with(self, mask: u8, on: bool) -> Flags {
        Flags(if on { self.0 | mask } else { self.0 & !mask })
    }

    /// Topology Change (bit 1).
    pub fn topology_change(self) -> bool {
        self.bit(Self::TOPOLOGY_CHANGE)
    }

    /// Proposal (RST, bit 2).
    pub fn proposal(self) -> bool {
        self.bit(Self::PROPOSAL)
    }

    /// Port Role (RST, bits 3–4).
    pub fn port_role(self) -> PortRole {
        PortRole::from_bits((self.0 & Self::ROLE_MASK) >> Self::ROLE_SHIFT)
    }

    /// Learning (RST, bit 5).
    pub fn learning(self) -> bool {
        self.bit(Self::LEARNING)
    }

    /// Forwarding (RST, bit 6).
    pub fn forwarding(self) -> bool {
        self.bit(Self::FORWARDING)
    }

    /// Agreement (RST, bit 7).
    pub fn agreement(self) -> bool {
        self.bit(Self::AGREEMENT)
    }

    /// Topology Change Acknowledgment (bit 8; always 0 in an RST BPDU sent by RSTP).
    pub fn topology_change_ack(self) -> bool {
        self.bit(Self::TOPOLOGY_CHANGE_ACK)
    }

    /// With Topology Change set to `on`.
    pub fn with_topology_change(self, on: bool) -> Flags {
        self.with(Self::TOPOLOGY_CHANGE, on)
    }

    /// With Proposal set to `on`.
    pub fn with_proposal(self, on: bool) -> Flags {
        self.with(Self::PROPOSAL, on)
    }

    /// With Port Role `role`.
    pub fn with_port_role(self, role: PortRole) -> Flags {
        Flags((self.0 & !Self::ROLE_MASK) | (role.bits() << Self::ROLE_SHIFT))
    }

    /// With Learning set to `on`.
    pub fn with_learning(self, on: bool) -> Flags {
        self.with(Self::LEARNING, on)
    }

    /// With Forwarding set to `on`.
    pub fn with_forwarding(self, on: bool) -> Flags {
        self.with(Self::FORWARDING, on)
    }

    /// With Agreement set to `on`.
    pub fn with_agreement(self, on: bool) -> Flags {
        self.with(Self::AGREEMENT, on)
    }

    /// With Topology Change Acknowledgment set to `on`.
    pub fn with_topology_change_ack(self, on: bool) -> Flags {
        self.with(Self::TOPOLOGY_CHANGE_ACK, on)
    }
}

mod field {
    use core::ops::Range;

    pub(super) const PROTOCOL: Range<usize> = 0..2;
    pub(super) const VERSION: usize = 2;
    pub(super) const TYPE: usize = 3;
    pub(super) const FLAGS: usize = 4;
    pub(super) const ROOT_ID: Range<usize> = 5..13;
    pub(super) const ROOT_PATH_COST: Range<usize> = 13..17;
    pub(super) const BRIDGE_ID: Range<usize> = 17..25;
    pub(super) const PORT_ID: Range<usize> = 25..27;
    pub(super) const MESSAGE_AGE: Range<usize> = 27..29;
    pub(super) const MAX_AGE: Range<usize> = 29..31;
    pub(super) const HELLO_TIME: Range<usize> = 31..33;
    pub(super) const FORWARD_DELAY: Range<usize> = 33..35;
    pub(super) const VERSION_1_LEN: usize = 35;
}

/// A read/write view of a BPDU, starting at the Protocol Identifier (the LLC payload).
///
/// [`Packet::new_checked`] checks that the buffer holds the common header and every field of the
/// type it announces ([`BpduType::min_len`]). The Configuration fields read as zero where the
/// buffer does not hold them (a TCN or an unknown type), so no accessor ever panics after
/// `new_checked`; setters need the bytes to be there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking its length; accessors of the common header may panic on a
    /// short buffer.
    pub fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wraps a buffer, checking it holds the whole BPDU its type announces.
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Checks that the buffer holds the common header and the fields of the announced type.
    pub fn check_len(&self) -> Result<()> {
        let data = self.buffer.as_ref();
        if data.len() < HEADER_LEN || data.len() < self.bpdu_type().min_len() {
            Err(Error::Truncated)
        } else {
            Ok(())
        }
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn bytes<const N: usize>(&self, range: core::ops::Range<usize>) -> [u8; N] {
        let mut out = [0; N];
        if let Some(d) = self.buffer.as_ref().get(range) {
            out.copy_from_slice(d);
        }
        out
    }

    fn byte(&self, at: usize) -> u8 {
        self.buffer.as_ref().get(at).copied().unwrap_or(0)
    }

    /// Protocol Identifier ([`PROTOCOL_ID`]).
    pub fn protocol_id(&self) -> u16 {
        u16::from_be_bytes(self.bytes(field::PROTOCOL))
    }

    /// Protocol Version Identifier ([`VERSION_STP`], [`VERSION_RSTP`], 3 for MSTP).
    pub fn version(&self) -> u8 {
        self.byte(field::VERSION)
    }

    /// BPDU Type.
    pub fn bpdu_type(&self) -> BpduType {
        BpduType::from(self.byte(field::TYPE))
    }

    /// Flags.
    pub fn flags(&self) -> Flags {
        Flags(self.byte(field::FLAGS))
    }

    /// Root Identifier.
    pub fn root_id(&self) -> BridgeId {
        BridgeId::from_bytes(self.bytes(field::ROOT_ID))
    }

    /// Root Path Cost.
    pub fn root_path_cost(&self) -> u32 {
        u32::from_be_bytes(self.bytes(field::ROOT_PATH_COST))
    }

    /// Bridge Identifier (of the sender).
    pub fn bridge_id(&self) -> BridgeId {
        BridgeId::from_bytes(self.bytes(field::BRIDGE_ID))
    }

    /// Port Identifier (of the sending port).
    pub fn port_id(&self) -> PortIdentifier {
        PortIdentifier(u16::from_be_bytes(self.bytes(field::PORT_ID)))
    }

    /// Message Age.
    pub fn message_age(&self) -> Time {
        Time(u16::from_be_bytes(self.bytes(field::MESSAGE_AGE)))
    }

    /// Max Age.
    pub fn max_age(&self) -> Time {
        Time(u16::from_be_bytes(self.bytes(field::MAX_AGE)))
    }

    /// Hello Time.
    pub fn hello_time(&self) -> Time {
        Time(u16::from_be_bytes(self.bytes(field::HELLO_TIME)))
    }

    /// Forward Delay.
    pub fn forward_delay(&self) -> Time {
        Time(u16::from_be_bytes(self.bytes(field::FORWARD_DELAY)))
    }

    /// Version 1 Length (RST BPDU; 0 when sent).
    pub fn version_1_len(&self) -> u8 {
        self.byte(field::VERSION_1_LEN)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    fn set_bytes(&mut self, range: core::ops::Range<usize>, value: &[u8]) {
        self.buffer.as_mut()[range].copy_from_slice(value);
    }

    /// Sets the Protocol Identifier.
    pub fn set_protocol_id(&mut self, value: u16) {
        self.set_bytes(field::PROTOCOL, &value.to_be_bytes());
    }

    /// Sets the Protocol Version Identifier.
    pub fn set_version(&mut self, value: u8) {
        self.buffer.as_mut()[field::VERSION] = value;
    }

    /// Sets the BPDU Type.
    pub fn set_bpdu_type(&mut self, value: BpduType) {
        self.buffer.as_mut()[field::TYPE] = value.into();
    }

    /// Sets the Flags.
    pub fn set_flags(&mut self, value: Flags) {
        self.buffer.as_mut()[field::FLAGS] = value.0;
    }

    /// Sets the Root Identifier.
    pub fn set_root_id(&mut self, value: BridgeId) {
        self.set_bytes(field::ROOT_ID, &value.to_bytes());
    }

    /// Sets the Root Path Cost.
    pub fn set_root_path_cost(&mut self, value: u32) {
        self.set_bytes(field::ROOT_PATH_COST, &value.to_be_bytes());
    }

    /// Sets the Bridge Identifier.
    pub fn set_bridge_id(&mut self, value: BridgeId) {
        self.set_bytes(field::BRIDGE_ID, &value.to_bytes());
    }

    /// Sets the Port Identifier.
    pub fn set_port_id(&mut self, value: PortIdentifier) {
        self.set_bytes(field::PORT_ID, &value.0.to_be_bytes());
    }

    /// Sets the Message Age.
    pub fn set_message_age(&mut self, value: Time) {
        self.set_bytes(field::MESSAGE_AGE, &value.0.to_be_bytes());
    }

    /// Sets the Max Age.
    pub fn set_max_age(&mut self, value: Time) {
        self.set_bytes(field::MAX_AGE, &value.0.to_be_bytes());
    }

    /// Sets the Hello Time.
    pub fn set_hello_time(&mut self, value: Time) {
        self.set_bytes(field::HELLO_TIME, &value.0.to_be_bytes());
    }

    /// Sets the Forward Delay.
    pub fn set_forward_delay(&mut self, value: Time) {
        self.set_bytes(field::FORWARD_DELAY, &value.0.to_be_bytes());
    }

    /// Sets the Version 1 Length.
    pub fn set_version_1_len(&mut self, value: u8) {
        self.buffer.as_mut()[field::VERSION_1_LEN] = value;
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for Packet<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// The priority vector and timers of a Configuration or RST BPDU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Config {
    /// Flags (only TC and TCA are meaningful in a Configuration BPDU).
    pub flags: Flags,
    /// The root the sender believes in.
    pub root_id: BridgeId,
    /// The sender's cost to that root.
    pub root_path_cost: u32,
    /// The sender's bridge identifier.
    pub bridge_id: BridgeId,
    /// The sending port's identifier.
    pub port_id: PortIdentifier,
    /// Age of the root's information when sent.
    pub message_age: Time,
    /// The root's Max Age.
    pub max_age: Time,
    /// The root's Hello Time.
    pub hello_time: Time,
    /// The root's Forward Delay.
    pub forward_delay: Time,
}

impl Config {
    fn emit_fields<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) {
        packet.set_flags(self.flags);
        packet.set_root_id(self.root_id);
        packet.set_root_path_cost(self.root_path_cost);
        packet.set_bridge_id(self.bridge_id);
        packet.set_port_id(self.port_id);
        packet.set_message_age(self.message_age);
        packet.set_max_age(self.max_age);
        packet.set_hello_time(self.hello_time);
        packet.set_forward_delay(self.forward_delay);
    }

    fn parse_fields<T: AsRef<[u8]>>(packet: &Packet<T>) -> Config {
        Config {
            flags: packet.flags(),
            root_id: packet.root_id(),
            root_path_cost: packet.root_path_cost(),
            bridge_id: packet.bridge_id(),
            port_id: packet.port_id(),
            message_age: packet.message_age(),
            max_age: packet.max_age(),
            hello_time: packet.hello_time(),
            forward_delay: packet.forward_delay(),
        }
    }
}

/// A BPDU in owned form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Repr {
    /// A Configuration BPDU (STP), emitted with version 0.
    Config(Config),
    /// A Topology Change Notification BPDU (STP).
    Tcn,
    /// An RST BPDU (RSTP), emitted with version 2 and Version 1 Length 0.
    Rst(Config),
}

impl Repr {
    /// Parses a checked BPDU (see the module docs for what is accepted). The Version 1 Length of
    /// an RST BPDU is ignored on receipt, as 802.1D-2004 §9.3.4 says.
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr> {
        packet.check_len()?;
        if packet.protocol_id() != PROTOCOL_ID {
            return Err(Error::Unsupported);
        }
        match packet.bpdu_type() {
            BpduType::Config => Ok(Repr::Config(Config::parse_fields(packet))),
            BpduType::Tcn => Ok(Repr::Tcn),
            BpduType::Rst if packet.version() >= VERSION_RSTP => {
                Ok(Repr::Rst(Config::parse_fields(packet)))
            }
            BpduType::Rst | BpduType::Unknown(_) => Err(Error::Unsupported),
        }
    }

    /// Length of the emitted BPDU.
    pub const fn buffer_len(&self) -> usize {
        match self {
            Repr::Config(_) => CONFIG_LEN,
            Repr::Tcn => TCN_LEN,
            Repr::Rst(_) => RST_LEN,
        }
    }

    /// The priority vector and timers, for a Configuration or RST BPDU.
    pub fn config(&self) -> Option<&Config> {
        match self {
            Repr::Config(c) | Repr::Rst(c) => Some(c),
            Repr::Tcn => None,
        }
    }

    /// Writes the BPDU into the first [`Repr::buffer_len`] bytes of `packet` (which must hold
    /// them).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) {
        packet.set_protocol_id(PROTOCOL_ID);
        match self {
            Repr::Config(config) => {
                packet.set_version(VERSION_STP);
                packet.set_bpdu_type(BpduType::Config);
                config.emit_fields(packet);
            }
            Repr::Tcn => {
                packet.set_version(VERSION_STP);
                packet.set_bpdu_type(BpduType::Tcn);
            }
            Repr::Rst(config) => {
                packet.set_version(VERSION_RSTP);
                packet.set_bpdu_type(BpduType::Rst);
                config.emit_fields(packet);
                packet.set_version_1_len(0);
            }
        }
    }

    /// Length of the frame [`Repr::emit_frame`] writes.
    pub const fn frame_len(&self) -> usize {
        ethernet::HEADER_LEN + LLC_HEADER_LEN + self.buffer_len()
    }

    /// Writes a whole 802.3 frame (from `src` to [`BRIDGE_GROUP_ADDRESS`], length field, LLC
    /// header, BPDU) into the start of `buf` and returns its length, [`Repr::frame_len`];
    /// [`Error::Truncated`] if `buf` is shorter. No padding to the 60-byte Ethernet minimum is
    /// added (the Linux bridge does not add any either; a NIC pads on the wire).
    pub fn emit_frame(&self, src: Address, buf: &mut [u8]) -> Result<usize> {
        let len = self.frame_len();
        let buf = buf.get_mut(..len).ok_or(Error::Truncated)?;
        let length_field = u16::try_from(LLC_HEADER_LEN + self.buffer_len())
            .expect("a BPDU is at most 39 bytes with its LLC header");
        let eth = ethernet::Repr {
            src_addr: src,
            dst_addr: BRIDGE_GROUP_ADDRESS,
            ethertype: EtherType::from(length_field),
        };
        eth.emit(&mut Frame::new_unchecked(&mut *buf));
        let llc = &mut buf[ethernet::HEADER_LEN..];
        llc[..LLC_HEADER_LEN].copy_from_slice(&[LLC_SAP, LLC_SAP, LLC_CONTROL_UI]);
        self.emit(&mut Packet::new_unchecked(&mut llc[LLC_HEADER_LEN..]));
        Ok(len)
    }
}

/// The largest value of an 802.3 length field (larger values are EtherTypes).
const MAX_LENGTH_FIELD: u16 = 1500;

/// Parses a whole received frame as a BPDU: an untagged 802.3 frame whose length field covers
/// an LLC header with SAP 0x42 and control UI, then the BPDU. The destination address is not
/// checked (the caller classified the frame by it); bytes past the length field (Ethernet
/// padding) are ignored. [`Error::Unsupported`] for an Ethernet II frame or other LLC SAPs,
/// [`Error::Truncated`] if the frame is shorter than its length field says, [`Error::Malformed`]
/// if the length field cannot hold an LLC header and a BPDU header.
pub fn parse_frame(frame: &[u8]) -> Result<Repr> {
    let frame = Frame::new_checked(frame)?;
    let length = u16::from(frame.ethertype());
    if length > MAX_LENGTH_FIELD {
        return Err(Error::Unsupported);
    }
    let length = usize::from(length);
    if length < LLC_HEADER_LEN + HEADER_LEN {
        return Err(Error::Malformed);
    }
    let payload = frame.payload().get(..length).ok_or(Error::Truncated)?;
    if payload[..LLC_HEADER_LEN] != [LLC_SAP, LLC_SAP, LLC_CONTROL_UI] {
        return Err(Error::Unsupported);
    }
    Repr::parse(&Packet::new_checked(&payload[LLC_HEADER_LEN..])?)
}

impl fmt::Display for Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (name, config) = match self {
            Repr::Config(c) => ("Conf", c),
            Repr::Rst(c) => ("RST", c),
            Repr::Tcn => return write!(f, "STP TCN"),
        };
        write!(
            f,
            "STP {name} flags=0x{:02x} root={} cost={} bridge={} port={} age={} max_age={} \
             hello={} fwd_delay={}",
            config.flags.0,
            config.root_id,
            config.root_path_cost,
            config.bridge_id,
            config.port_id,
            config.message_age,
            config.max_age,
            config.hello_time,
            config.forward_delay
        )
    }
}

#[cfg(test)]
mod tests;
