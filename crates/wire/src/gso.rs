//! The `virtio_net_hdr` of offload-mode AF_PACKET ports, software GSO and checksum completion.
//!
//! An AF_PACKET socket with `PACKET_VNET_HDR` hands over every frame behind a 10-byte
//! `struct virtio_net_hdr` (Linux `include/uapi/linux/virtio_net.h`): flags, `gso_type`,
//! `hdr_len`, `gso_size`, `csum_start`, `csum_offset`. The 16-bit fields are read and written
//! little-endian, as virtio 1.0 defines them (the legacy native order is the same on our
//! little-endian hosts). When the sending host has TSO/GSO on, a frame may be a GSO
//! *super-frame* of up to 64 KiB: one Ethernet/IP/TCP (or UDP) header in front of many wire
//! segments' payload, `gso_size` bytes of payload per segment. A frame may also carry a
//! *partial* checksum (`CHECKSUM_PARTIAL`, [`FLAG_NEEDS_CSUM`]): the L4 checksum field holds only
//! the folded pseudo-header sum, and the sum over `csum_start..` is still to be done.
//!
//! The switch core sees wire frames only, so this module does what the kernel's software GSO
//! does before a device that cannot segment (`skb_gso_segment` in `net/core/gso.c`, with
//! `inet_gso_segment`/`ipv6_gso_segment`, `tcp_gso_segment` in `net/ipv4/tcp_offload.c` and
//! `__udp_gso_segment` in `net/ipv4/udp_offload.c`):
//!
//! - [`segment`] cuts a TCPv4/TCPv6 or UDP GSO (`UDP_SEGMENT`) super-frame into segments: the
//!   headers are copied, the IPv4 total length, ID (+1 per segment, the default without
//!   `SKB_GSO_TCP_FIXEDID`) and header checksum or the IPv6 payload length are rewritten, TCP
//!   sequence numbers advance by `gso_size`, FIN and PSH stay on the last segment and CWR on the
//!   first, and every segment gets a full L4 checksum. A frame whose payload fits one segment
//!   comes out as one frame, as the kernel passes it unsegmented ("too small packets are not
//!   really GSO ones", `virtio_net_hdr_to_skb`). UFO (`GSO_UDP`) and unknown kinds are refused.
//! - [`complete_partial_checksum`] is `skb_checksum_help` (`net/core/dev.c`).
//! - [`fill_l4_checksum`] recomputes a TCP/UDP checksum from scratch, for TPACKET ring frames
//!   flagged `TP_STATUS_CSUMNOTREADY`, whose `csum_start` the ring does not give.
//!
//! Every input is validated before the first segment is emitted, so a refused super-frame
//! emits nothing; no input panics.
//!
//! The AF_PACKET ports' super-frame sockets use it (docs/offload.md): super-frames are cut in
//! the shell before `handle_frame`, so every scheduler charges wire frames.
//!
//! Written by hand because no maintained crate does software GSO on raw Ethernet frames:
//! smoltcp's `wire` and etherparse parse headers but never segment, and the one Rust
//! `gso_split` we know of (tun-rs, after wireguard-go) is a hidden helper inside a TUN device
//! crate that works on bare IP packets, without Ethernet headers or VLAN tags.

use core::fmt;

use crate::checksum;
use crate::ethernet::{self, EtherType};
use crate::ipv4::{self, Protocol};
use crate::{tcp, udp};
use crate::{Error, Result};

/// Length of a `struct virtio_net_hdr` (without the `num_buffers` of mergeable receive buffers,
/// which AF_PACKET does not use).
pub const HEADER_LEN: usize = 10;

/// Flag: the L4 checksum is partial; sum from `csum_start` and store at `csum_offset` after it.
pub const FLAG_NEEDS_CSUM: u8 = 1;
/// Flag: the checksum has been validated (receive side only).
pub const FLAG_DATA_VALID: u8 = 2;

/// `gso_type`: not a GSO frame.
pub const GSO_NONE: u8 = 0;
/// `gso_type`: TCP over IPv4 (TSO).
pub const GSO_TCPV4: u8 = 1;
/// `gso_type`: UDP fragmentation offload (UFO), which [`segment`] refuses.
pub const GSO_UDP: u8 = 3;
/// `gso_type`: TCP over IPv6.
pub const GSO_TCPV6: u8 = 4;
/// `gso_type`: UDP segmentation (`UDP_SEGMENT`, `SKB_GSO_UDP_L4`).
pub const GSO_UDP_L4: u8 = 5;
/// `gso_type` flag bit: the TCP sender uses ECN (`SKB_GSO_TCP_ECN`).
pub const GSO_ECN: u8 = 0x80;

/// Most segments [`segment`] cuts one super-frame into; more is refused.
pub const MAX_SEGMENTS: usize = 1024;

/// Most bytes of L3 packet (IP header and payload) [`segment`] accepts.
pub const MAX_L3_LEN: usize = 65_535;

/// IPv6 fixed header length.
const IPV6_HEADER_LEN: usize = 40;

/// Offset of the checksum field in a TCP header.
const TCP_CHECKSUM_AT: usize = 16;
/// Offset of the checksum field in a UDP header.
const UDP_CHECKSUM_AT: usize = 6;

/// The GSO kind: `gso_type` without the [`GSO_ECN`] bit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum GsoKind {
    /// Not a GSO frame, 0.
    None,
    /// TCP over IPv4, 1.
    TcpV4,
    /// UDP fragmentation offload (UFO), 3; not supported.
    Udp,
    /// TCP over IPv6, 4.
    TcpV6,
    /// UDP segmentation (`UDP_SEGMENT`), 5.
    UdpL4,
    /// Any other value of the low seven bits, kept as data.
    Unknown(u8),
}

impl From<u8> for GsoKind {
    fn from(value: u8) -> GsoKind {
        match value {
            GSO_NONE => GsoKind::None,
            GSO_TCPV4 => GsoKind::TcpV4,
            GSO_UDP => GsoKind::Udp,
            GSO_TCPV6 => GsoKind::TcpV6,
            GSO_UDP_L4 => GsoKind::UdpL4,
            other => GsoKind::Unknown(other),
        }
    }
}

impl From<GsoKind> for u8 {
    fn from(value: GsoKind) -> u8 {
        match value {
            GsoKind::None => GSO_NONE,
            GsoKind::TcpV4 => GSO_TCPV4,
            GsoKind::Udp => GSO_UDP,
            GsoKind::TcpV6 => GSO_TCPV6,
            GsoKind::UdpL4 => GSO_UDP_L4,
            GsoKind::Unknown(other) => other,
        }
    }
}

impl fmt::Display for GsoKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GsoKind::None => write!(f, "none"),
            GsoKind::TcpV4 => write!(f, "TCPv4"),
            GsoKind::Udp => write!(f, "UFO"),
            GsoKind::TcpV6 => write!(f, "TCPv6"),
            GsoKind::UdpL4 => write!(f, "UDP_L4"),
            GsoKind::Unknown(v) => write!(f, "gso 0x{v:02x}"),
        }
    }
}

/// The `gso_type` octet: a [`GsoKind`] in the low seven bits and the [`GSO_ECN`] bit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GsoType {
    /// The kind (low seven bits).
    pub kind: GsoKind,
    /// The ECN bit ([`GSO_ECN`]).
    pub ecn: bool,
}

impl From<u8> for GsoType {
    fn from(value: u8) -> GsoType {
        GsoType {
            kind: GsoKind::from(value & !GSO_ECN),
            ecn: value & GSO_ECN != 0,
        }
    }
}

impl From<GsoType> for u8 {
    /// The octet; an `Unknown` kind keeps only its low seven bits (the eighth is `ecn`).
    fn from(value: GsoType) -> u8 {
        (u8::from(value.kind) & !GSO_ECN) | if value.ecn { GSO_ECN } else { 0 }
    }
}

mod field {
    use core::ops::Range;

    pub(super) const FLAGS: usize = 0;
    pub(super) const GSO_TYPE: usize = 1;
    pub(super) const HDR_LEN: Range<usize> = 2..4;
    pub(super) const GSO_SIZE: Range<usize> = 4..6;
    pub(super) const CSUM_START: Range<usize> = 6..8;
    pub(super) const CSUM_OFFSET: Range<usize> = 8..10;
}

/// A read/write view of a `struct virtio_net_hdr` (16-bit fields little-endian).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VirtioNetHdr<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> VirtioNetHdr<T> {
    /// Wraps a buffer without checking it; accessors may panic on a short buffer.
    pub fn new_unchecked(buffer: T) -> VirtioNetHdr<T> {
        VirtioNetHdr { buffer }
    }

    /// Wraps a buffer after [`check_len`](Self::check_len); after this no accessor panics.
    pub fn new_checked(buffer: T) -> Result<VirtioNetHdr<T>> {
        let header = Self::new_unchecked(buffer);
        header.check_len()?;
        Ok(header)
    }

    /// [`Error::Truncated`] if the buffer is shorter than [`HEADER_LEN`]. Every field value is
    /// data, so nothing else is checked.
    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < HEADER_LEN {
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
        u16::from_le_bytes([d[0], d[1]])
    }

    /// The flags ([`FLAG_NEEDS_CSUM`], [`FLAG_DATA_VALID`]).
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[field::FLAGS]
    }

    /// The GSO type.
    pub fn gso_type(&self) -> GsoType {
        GsoType::from(self.buffer.as_ref()[field::GSO_TYPE])
    }

    /// `hdr_len`: a hint only (the kernel sends the length of the skb's linear part).
    pub fn hdr_len(&self) -> u16 {
        self.u16_at(field::HDR_LEN)
    }

    /// Payload bytes per segment (the MSS for TCP).
    pub fn gso_size(&self) -> u16 {
        self.u16_at(field::GSO_SIZE)
    }

    /// Where the partial checksum's sum starts, from the start of the frame.
    pub fn csum_start(&self) -> u16 {
        self.u16_at(field::CSUM_START)
    }

    /// Where the checksum field lies, from `csum_start`.
    pub fn csum_offset(&self) -> u16 {
        self.u16_at(field::CSUM_OFFSET)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> VirtioNetHdr<T> {
    fn set_u16_at(&mut self, range: core::ops::Range<usize>, value: u16) {
        self.buffer.as_mut()[range].copy_from_slice(&value.to_le_bytes());
    }

    /// Sets the flags.
    pub fn set_flags(&mut self, value: u8) {
        self.buffer.as_mut()[field::FLAGS] = value;
    }

    /// Sets the GSO type.
    pub fn set_gso_type(&mut self, value: GsoType) {
        self.buffer.as_mut()[field::GSO_TYPE] = value.into();
    }

    /// Sets `hdr_len`.
    pub fn set_hdr_len(&mut self, value: u16) {
        self.set_u16_at(field::HDR_LEN, value);
    }

    /// Sets `gso_size`.
    pub fn set_gso_size(&mut self, value: u16) {
        self.set_u16_at(field::GSO_SIZE, value);
    }

    /// Sets `csum_start`.
    pub fn set_csum_start(&mut self, value: u16) {
        self.set_u16_at(field::CSUM_START, value);
    }

    /// Sets `csum_offset`.
    pub fn set_csum_offset(&mut self, value: u16) {
        self.set_u16_at(field::CSUM_OFFSET, value);
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for VirtioNetHdr<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// A `struct virtio_net_hdr` in owned form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr {
    /// Flags ([`FLAG_NEEDS_CSUM`], [`FLAG_DATA_VALID`]).
    pub flags: u8,
    /// GSO kind and ECN bit.
    pub gso_type: GsoType,
    /// `hdr_len` (a hint; [`segment`] only checks it is not past the frame).
    pub hdr_len: u16,
    /// Payload bytes per segment.
    pub gso_size: u16,
    /// Start of the partial checksum's sum, from the start of the frame.
    pub csum_start: u16,
    /// Offset of the checksum field from `csum_start`.
    pub csum_offset: u16,
}

impl Repr {
    /// Reads a checked header.
    pub fn parse<T: AsRef<[u8]>>(header: &VirtioNetHdr<T>) -> Result<Repr> {
        header.check_len()?;
        Ok(Repr {
            flags: header.flags(),
            gso_type: header.gso_type(),
            hdr_len: header.hdr_len(),
            gso_size: header.gso_size(),
            csum_start: header.csum_start(),
            csum_offset: header.csum_offset(),
        })
    }

    /// Length of the emitted header: [`HEADER_LEN`].
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header into the first [`HEADER_LEN`] bytes of `header`.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, header: &mut VirtioNetHdr<T>) {
        header.set_flags(self.flags);
        header.set_gso_type(self.gso_type);
        header.set_hdr_len(self.hdr_len);
        header.set_gso_size(self.gso_size);
        header.set_csum_start(self.csum_start);
        header.set_csum_offset(self.csum_offset);
    }

    /// Whether [`FLAG_NEEDS_CSUM`] is set.
    pub const fn needs_csum(&self) -> bool {
        self.flags & FLAG_NEEDS_CSUM != 0
    }
}

impl fmt::Display for Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "vnet flags=0x{:02x} gso={}{} hdr_len={} gso_size={} csum={}+{}",
            self.flags,
            self.gso_type.kind,
            if self.gso_type.ecn { "|ECN" } else { "" },
            self.hdr_len,
            self.gso_size,
            self.csum_start,
            self.csum_offset
        )
    }
}

/// `skb_checksum_help`: completes a partial checksum. Takes the ones'-complement sum of
/// `frame[csum_start..]` (the field at `csum_start + csum_offset`, which holds the folded
/// pseudo-header sum, included as it is), and stores its complement big-endian in that field;
/// a result of 0 is stored as 0xffff, as the kernel does (`CSUM_MANGLED_0`; required for UDP,
/// equivalent for TCP). The sum runs to the end of `frame`, as it runs to the end of the skb.
/// `csum_offset` should be even (TCP 16, UDP 6); like the kernel, an odd one is not refused.
///
/// [`Error::Truncated`] if the field does not lie inside `frame`; `frame` is then unchanged.
pub fn complete_partial_checksum(
    frame: &mut [u8],
    csum_start: usize,
    csum_offset: usize,
) -> Result<()> {
    let at = csum_start
        .checked_add(csum_offset)
        .filter(|at| at.checked_add(2).is_some_and(|end| end <= frame.len()))
        .ok_or(Error::Truncated)?;
    // `at + 2 <= frame.len()` and `csum_start <= at`, so the range is in bounds.
    let value = !checksum::data(&frame[csum_start..]);
    let value = if value == 0 { 0xffff } else { value };
    frame[at..at + 2].copy_from_slice(&value.to_be_bytes());
    Ok(())
}

/// Recomputes the TCP or UDP checksum of an Ethernet frame from scratch (pseudo-header and L4
/// bytes; a UDP result of 0 is stored as 0xffff).
///
/// The frame may carry one or two 802.1Q/802.1ad tags, then IPv4 (not a fragment) or IPv6 whose
/// next header is TCP or UDP directly. The L4 length comes from the IP header, so Ethernet
/// padding is left out. Errors: [`Error::Unsupported`] for anything else (not IP, a fragment,
/// an IPv6 extension header, another protocol), [`Error::Truncated`]/[`Error::Malformed`] for
/// short or inconsistent headers (a UDP length that disagrees with the IP length included).
/// On error `frame` is unchanged.
pub fn fill_l4_checksum(frame: &mut [u8]) -> Result<()> {
    let layers = Layers::locate(frame)?;
    layers.l4_header_len(frame)?;
    layers.store_l4_checksum(frame);
    Ok(())
}

/// Cuts a frame received with `hdr` into wire frames and hands each to `emit`, as the kernel's
/// software GSO does (see the module doc); returns how many frames were emitted. `scratch` is
/// reused for every output frame, so a caller that keeps it allocates nothing per segment.
///
/// - [`GsoKind::None`]: the frame once, with its partial checksum completed
///   ([`complete_partial_checksum`]) if [`FLAG_NEEDS_CSUM`] is set.
/// - [`GsoKind::TcpV4`], [`GsoKind::TcpV6`] (with or without ECN) and [`GsoKind::UdpL4`]: the
///   headers are found by parsing (`hdr_len` is only checked not to pass the end of the frame),
///   the payload is cut into `gso_size` pieces, the last possibly shorter, and every segment
///   gets its own IP lengths, IPv4 ID (+1 each, wrapping) and checksums, TCP sequence number and
///   flags (FIN and PSH on the last segment only, CWR on the first only), UDP length. A
///   payload of at most `gso_size` bytes (none at all included) gives one frame.
///
/// Errors, all before anything is emitted: [`Error::Unsupported`] for UFO, unknown kinds, frames
/// that are not Ethernet/IP/TCP-or-UDP (see [`fill_l4_checksum`]), more than [`MAX_L3_LEN`] bytes
/// of L3 or more than [`MAX_SEGMENTS`] segments; [`Error::Malformed`] for `gso_size` 0,
/// `hdr_len` past the frame, the ECN bit on a non-TCP kind, a kind that disagrees with the
/// frame, or a `csum_start`/`csum_offset` (with [`FLAG_NEEDS_CSUM`]) that is not the L4
/// checksum field; [`Error::Truncated`]/[`Error::Malformed`] for short or inconsistent headers.
pub fn segment(
    frame: &[u8],
    hdr: &Repr,
    scratch: &mut Vec<u8>,
    mut emit: impl FnMut(&[u8]),
) -> Result<usize> {
    if usize::from(hdr.hdr_len) > frame.len() {
        return Err(Error::Malformed);
    }
    let kind = hdr.gso_type.kind;
    if hdr.gso_type.ecn && !matches!(kind, GsoKind::TcpV4 | GsoKind::TcpV6) {
        return Err(Error::Malformed);
    }
    match kind {
        GsoKind::None => {
            if hdr.needs_csum() {
                scratch.clear();
                scratch.extend_from_slice(frame);
                complete_partial_checksum(
                    scratch,
                    usize::from(hdr.csum_start),
                    usize::from(hdr.csum_offset),
                )?;
                emit(scratch);
            } else {
                emit(frame);
            }
            Ok(1)
        }
        GsoKind::TcpV4 | GsoKind::TcpV6 | GsoKind::UdpL4 => {
            let plan = Plan::new(frame, hdr)?;
            plan.run(frame, scratch, emit);
            Ok(plan.segments)
        }
        GsoKind::Udp | GsoKind::Unknown(_) => Err(Error::Unsupported),
    }
}

/// The IP version of a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IpVersion {
    V4,
    V6,
}

/// Where the layers of an Ethernet/IP/TCP-or-UDP frame lie, validated by [`Layers::locate`]:
/// `l3 < l4 <= end <= frame.len()`, and `protocol` is TCP or UDP.
#[derive(Debug, Clone, Copy)]
struct Layers {
    ip: IpVersion,
    /// Offset of the IP header.
    l3: usize,
    /// Offset of the TCP/UDP header.
    l4: usize,
    /// End of the IP packet (per its length field; Ethernet padding lies after it).
    end: usize,
    protocol: Protocol,
}

impl Layers {
    fn locate(frame: &[u8]) -> Result<Layers> {
        let eth = ethernet::Frame::new_checked(frame)?;
        let l3 = eth.header_len();
        let (ip, l4, end, protocol) = match eth.inner_ethertype() {
            EtherType::Ipv4 => {
                let packet = ipv4::Packet::new_checked(&frame[l3..])?;
                if packet.more_frags() || packet.frag_offset() != 0 {
                    return Err(Error::Unsupported);
                }
                let end = l3 + usize::from(packet.total_len());
                (
                    IpVersion::V4,
                    l3 + packet.header_len(),
                    end,
                    packet.protocol(),
                )
            }
            EtherType::Ipv6 => {
                let header = frame
                    .get(l3..l3 + IPV6_HEADER_LEN)
                    .ok_or(Error::Truncated)?;
                if header[0] >> 4 != 6 {
                    return Err(Error::Malformed);
                }
                let l4 = l3 + IPV6_HEADER_LEN;
                let end = l4 + usize::from(u16::from_be_bytes([header[4], header[5]]));
                if end > frame.len() {
                    return Err(Error::Truncated);
                }
                (IpVersion::V6, l4, end, Protocol::from(header[6]))
            }
            _ => return Err(Error::Unsupported),
        };
        if !matches!(protocol, Protocol::Tcp | Protocol::Udp) {
            return Err(Error::Unsupported);
        }
        Ok(Layers {
            ip,
            l3,
            l4,
            end,
            protocol,
        })
    }

    /// The TCP header length (data offset) or 8 for UDP, after checking the L4 header against
    /// the IP length.
    fn l4_header_len(&self, frame: &[u8]) -> Result<usize> {
        let l4 = &frame[self.l4..self.end];
        if self.protocol == Protocol::Tcp {
            return Ok(tcp::Packet::new_checked(l4)?.header_len());
        }
        let datagram = udp::Packet::new_checked(l4)?;
        if usize::from(datagram.len()) != l4.len() {
            return Err(Error::Malformed);
        }
        Ok(udp::HEADER_LEN)
    }

    /// Offset of the L4 checksum field from the L4 header.
    fn checksum_at(&self) -> usize {
        if self.protocol == Protocol::Tcp {
            TCP_CHECKSUM_AT
        } else {
            UDP_CHECKSUM_AT
        }
    }

    /// Computes the L4 checksum from scratch and stores it (UDP: 0 becomes 0xffff). Needs the
    /// L4 header checked ([`l4_header_len`](Self::l4_header_len)) so the field lies before `end`.
    fn store_l4_checksum(&self, frame: &mut [u8]) {
        let at = self.l4 + self.checksum_at();
        frame[at..at + 2].fill(0);
        let len = self.end - self.l4;
        let pseudo = match self.ip {
            IpVersion::V4 => {
                let ip = ipv4::Packet::new_unchecked(&frame[self.l3..]);
                // An IPv4 payload is shorter than its 16-bit total length.
                checksum::pseudo_header_v4(ip.src_addr(), ip.dst_addr(), self.protocol, len as u16)
            }
            IpVersion::V6 => {
                // The IPv6 pseudo-header (RFC 8200 §8.1): addresses, 32-bit upper-layer
                // length, three zero octets and the next header.
                let addrs = &frame[self.l3 + 8..self.l3 + IPV6_HEADER_LEN];
                checksum::combine(&[
                    checksum::data(addrs),
                    (len >> 16) as u16,
                    len as u16,
                    u16::from(u8::from(self.protocol)),
                ])
            }
        };
        let value = !checksum::combine(&[pseudo, checksum::data(&frame[self.l4..self.end])]);
        let value = if value == 0 && self.protocol == Protocol::Udp {
            0xffff
        } else {
            value
        };
        frame[at..at + 2].copy_from_slice(&value.to_be_bytes());
    }
}

/// A validated segmentation: everything [`segment`] checks before the first emit.
struct Plan {
    layers: Layers,
    /// Ethernet, IP and L4 header bytes, copied into every segment.
    headers_len: usize,
    gso_size: usize,
    /// At least 1, at most [`MAX_SEGMENTS`].
    segments: usize,
}

impl Plan {
    fn new(frame: &[u8], hdr: &Repr) -> Result<Plan> {
        if hdr.gso_size == 0 {
            return Err(Error::Malformed);
        }
        let layers = Layers::locate(frame)?;
        match (hdr.gso_type.kind, layers.ip, layers.protocol) {
            (GsoKind::TcpV4, IpVersion::V4, Protocol::Tcp)
            | (GsoKind::TcpV6, IpVersion::V6, Protocol::Tcp)
            | (GsoKind::UdpL4, _, Protocol::Udp) => {}
            _ => return Err(Error::Malformed),
        }
        if layers.end - layers.l3 > MAX_L3_LEN {
            return Err(Error::Unsupported);
        }
        let headers_len = layers.l4 + layers.l4_header_len(frame)?;
        if hdr.needs_csum()
            && (usize::from(hdr.csum_start) != layers.l4
                || usize::from(hdr.csum_offset) != layers.checksum_at())
        {
            return Err(Error::Malformed);
        }
        let gso_size = usize::from(hdr.gso_size);
        let segments = (layers.end - headers_len).div_ceil(gso_size).max(1);
        if segments > MAX_SEGMENTS {
            return Err(Error::Unsupported);
        }
        Ok(Plan {
            layers,
            headers_len,
            gso_size,
            segments,
        })
    }

    /// Emits the segments of a frame [`Plan::new`] accepted; cannot fail.
    fn run(&self, frame: &[u8], scratch: &mut Vec<u8>, mut emit: impl FnMut(&[u8])) {
        let Layers { l3, l4, end, .. } = self.layers;
        let payload = &frame[self.headers_len..end];
        let ident = match self.layers.ip {
            IpVersion::V4 => ipv4::Packet::new_unchecked(&frame[l3..]).ident(),
            IpVersion::V6 => 0,
        };
        let (seq, flags) = if self.layers.protocol == Protocol::Tcp {
            let header = tcp::Packet::new_unchecked(&frame[l4..]);
            (header.seq_number(), header.flags())
        } else {
            (0, tcp::Flags::empty())
        };
        for i in 0..self.segments {
            let start = i * self.gso_size;
            let piece = &payload[start..payload.len().min(start + self.gso_size)];
            scratch.clear();
            scratch.extend_from_slice(&frame[..self.headers_len]);
            scratch.extend_from_slice(piece);
            // Every length below is at most the original L3 length, ≤ MAX_L3_LEN = 65535, and
            // i < MAX_SEGMENTS; the casts do not truncate.
            match self.layers.ip {
                IpVersion::V4 => {
                    let mut ip = ipv4::Packet::new_unchecked(&mut scratch[l3..]);
                    ip.set_total_len((self.headers_len - l3 + piece.len()) as u16);
                    ip.set_ident(ident.wrapping_add(i as u16));
                    ip.fill_checksum();
                }
                IpVersion::V6 => {
                    let len = (self.headers_len - l4 + piece.len()) as u16;
                    scratch[l3 + 4..l3 + 6].copy_from_slice(&len.to_be_bytes());
                }
            }
            if self.layers.protocol == Protocol::Tcp {
                let mut bits = flags.bits();
                if i + 1 < self.segments {
                    bits &= !(tcp::Flags::FIN.bits() | tcp::Flags::PSH.bits());
                }
                if i > 0 {
                    bits &= !tcp::Flags::CWR.bits();
                }
                let mut header = tcp::Packet::new_unchecked(&mut scratch[l4..]);
                header.set_seq_number(seq.wrapping_add(start as u32));
                header.set_flags(tcp::Flags(bits));
            } else {
                let len = (self.headers_len - l4 + piece.len()) as u16;
                udp::Packet::new_unchecked(&mut scratch[l4..]).set_len(len);
            }
            let layers = Layers {
                end: scratch.len(),
                ..self.layers
            };
            layers.store_l4_checksum(scratch);
            emit(scratch);
        }
    }
}

#[cfg(test)]
mod tests;
