//! Annotated packets shared by the unit tests (IPv4 packets, without Ethernet headers).
//! All checksums were computed once by hand and cross-checked with tshark's checksum validation.

/// A UDP datagram 198.18.0.1:5000 → 198.18.0.2:6000 carrying "hi!\n", followed by two bytes of
/// Ethernet padding that are not part of the packet.
///
/// IPv4 header checksum: 4500+0020+1c46+4000+4011+c612+0001+c612+0002 = 0x26d9e, folded
/// 0x6da0, field !0x6da0 = 0x925f. UDP checksum: pseudo-header c612+0001+c612+0002+0011+000c,
/// header 1388+1770+000c, data 6869+210a = 0x240bb, folded 0x40bd, field 0xbf42.
pub(crate) const UDP_PACKET: [u8; 34] = [
    0x45, // version 4, IHL 5
    0x00, // DSCP/ECN
    0x00, 0x20, // total length 32
    0x1c, 0x46, // identification
    0x40, 0x00, // flags DF, offset 0
    0x40, // TTL 64
    0x11, // protocol UDP
    0x92, 0x5f, // header checksum
    0xc6, 0x12, 0x00, 0x01, // source 198.18.0.1
    0xc6, 0x12, 0x00, 0x02, // destination 198.18.0.2
    0x13, 0x88, // UDP source port 5000
    0x17, 0x70, // UDP destination port 6000
    0x00, 0x0c, // UDP length 12
    0xbf, 0x42, // UDP checksum
    0x68, 0x69, 0x21, 0x0a, // "hi!\n"
    0x00, 0x00, // Ethernet padding, not part of the packet
];

/// A Linux-style TCP SYN 198.18.0.1:40000 → 198.18.0.2:5001 with MSS, SACK-permitted,
/// timestamp and window-scale options.
///
/// IPv4 header checksum field 0xfcc0. TCP checksum: pseudo-header sum 0x8c56 (protocol 6,
/// length 40) + segment sum 0x6f02 = 0xfb58, field !0xfb58 = 0x04a7.
pub(crate) const TCP_SYN: [u8; 60] = [
    0x45, 0x00, // version 4, IHL 5, DSCP/ECN 0
    0x00, 0x3c, // total length 60
    0xb1, 0xd3, // identification
    0x40, 0x00, // DF
    0x40, 0x06, // TTL 64, protocol TCP
    0xfc, 0xc0, // header checksum
    0xc6, 0x12, 0x00, 0x01, // source 198.18.0.1
    0xc6, 0x12, 0x00, 0x02, // destination 198.18.0.2
    0x9c, 0x40, // TCP source port 40000
    0x13, 0x89, // TCP destination port 5001
    0x12, 0x34, 0x56, 0x78, // sequence number
    0x00, 0x00, 0x00, 0x00, // acknowledgment number
    0xa0, // data offset 10 (40 bytes), reserved 0
    0x02, // flags: SYN
    0xfa, 0xf0, // window 64240
    0x04, 0xa7, // checksum
    0x00, 0x00, // urgent pointer
    0x02, 0x04, 0x05, 0xb4, // option MSS 1460
    0x04, 0x02, // option SACK permitted
    0x08, 0x0a, 0x00, 0x09, 0xa3, 0xc1, 0x00, 0x00, 0x00, 0x00, // option timestamps
    0x01, // option NOP
    0x03, 0x03, 0x07, // option window scale 7
];
