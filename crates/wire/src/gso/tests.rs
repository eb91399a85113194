//! Unit vectors and property tests of [`super`].
use super::*;
use crate::tcp::Flags;
use crate::testdata::{TCP_SYN, UDP_PACKET};
use proptest::prelude::*;

const SRC4: [u8; 4] = [198, 18, 0, 1];
const DST4: [u8; 4] = [198, 18, 0, 2];
const SRC6: [u8; 16] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
const DST6: [u8; 16] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];

/// What a test frame is made of.
#[derive(Debug, Clone, Copy)]
struct Spec {
    v6: bool,
    /// 0, 1 (802.1Q) or 2 (802.1ad outer, 802.1Q inner) VLAN tags.
    tags: usize,
    udp: bool,
    /// TCP option bytes (a multiple of 4, at most 40).
    options: usize,
    flags: u8,
    seq: u32,
    ident: u16,
    /// Whether the L4 checksum field holds only the pseudo-header sum (CHECKSUM_PARTIAL).
    partial: bool,
}

impl Spec {
    fn tcp4() -> Spec {
        Spec {
            v6: false,
            tags: 0,
            udp: false,
            options: 12,
            flags: (Flags::ACK | Flags::PSH | Flags::FIN).bits(),
            seq: 0xffff_fc00,
            ident: 0xfffe,
            partial: true,
        }
    }

    fn l3(&self) -> usize {
        14 + 4 * self.tags
    }

    fn l4(&self) -> usize {
        self.l3() + if self.v6 { 40 } else { 20 }
    }

    fn l4_header_len(&self) -> usize {
        if self.udp {
            8
        } else {
            20 + self.options
        }
    }

    fn headers_len(&self) -> usize {
        self.l4() + self.l4_header_len()
    }

    fn hdr(&self, gso_size: u16) -> Repr {
        let kind = match (self.udp, self.v6) {
            (true, _) => GsoKind::UdpL4,
            (false, false) => GsoKind::TcpV4,
            (false, true) => GsoKind::TcpV6,
        };
        Repr {
            flags: if self.partial { FLAG_NEEDS_CSUM } else { 0 },
            gso_type: GsoType { kind, ecn: false },
            hdr_len: self.headers_len() as u16,
            gso_size,
            csum_start: self.l4() as u16,
            csum_offset: if self.udp { 6 } else { 16 },
        }
    }
}

/// The pseudo-header bytes of the IP packet `ip` (exactly the packet) and the offset of its
/// L4 header: RFC 793 §3.1 for IPv4, RFC 8200 §8.1 for IPv6. Built as bytes, independently
/// of the module's sums.
fn pseudo_header(ip: &[u8]) -> (Vec<u8>, usize) {
    if ip[0] >> 4 == 4 {
        let l4 = usize::from(ip[0] & 0x0f) * 4;
        let mut p = ip[12..20].to_vec();
        p.extend([0, ip[9]]);
        p.extend(((ip.len() - l4) as u16).to_be_bytes());
        (p, l4)
    } else {
        let mut p = ip[8..40].to_vec();
        p.extend(((ip.len() - 40) as u32).to_be_bytes());
        p.extend([0, 0, 0, ip[6]]);
        (p, 40)
    }
}

/// Sum of pseudo-header and L4 bytes: 0xffff when the L4 checksum is right.
fn l4_sum(ip: &[u8]) -> u16 {
    let (mut p, l4) = pseudo_header(ip);
    p.extend_from_slice(&ip[l4..]);
    checksum::data(&p)
}

/// A frame per `spec` with a correct IPv4 header checksum and a full (or, if
/// `spec.partial`, pseudo-header-only) L4 checksum.
fn build(spec: &Spec, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1];
    let tpids: &[u16] = match spec.tags {
        0 => &[],
        1 => &[0x8100],
        _ => &[0x88a8, 0x8100],
    };
    for (i, tpid) in tpids.iter().enumerate() {
        f.extend(tpid.to_be_bytes());
        f.extend((100 + i as u16).to_be_bytes());
    }
    f.extend(if spec.v6 { 0x86ddu16 } else { 0x0800 }.to_be_bytes());
    let l4_len = spec.l4_header_len() + payload.len();
    let proto = if spec.udp { 17 } else { 6 };
    if spec.v6 {
        f.extend([0x60, 0, 0, 0]);
        f.extend((l4_len as u16).to_be_bytes());
        f.extend([proto, 64]);
        f.extend(SRC6);
        f.extend(DST6);
    } else {
        let start = f.len();
        f.resize(start + 20, 0);
        let repr = ipv4::Repr {
            src_addr: SRC4.into(),
            dst_addr: DST4.into(),
            protocol: Protocol::from(proto),
            payload_len: l4_len,
            ttl: 64,
            dscp_ecn: 0,
        };
        let mut ip = ipv4::Packet::new_unchecked(&mut f[start..]);
        repr.emit(&mut ip);
        ip.set_ident(spec.ident);
        ip.fill_checksum();
    }
    let l4 = f.len();
    if spec.udp {
        f.resize(l4 + 8, 0);
        let repr = udp::Repr {
            src_port: 5000,
            dst_port: 6000,
            payload_len: payload.len(),
        };
        repr.emit(&mut udp::Packet::new_unchecked(&mut f[l4..]));
    } else {
        f.resize(l4 + 20 + spec.options, 0);
        let repr = tcp::Repr {
            src_port: 40000,
            dst_port: 5001,
            seq: spec.seq,
            ack: 0x0102_0304,
            flags: Flags(spec.flags),
            window: 502,
            header_len: 20 + spec.options,
        };
        repr.emit(&mut tcp::Packet::new_unchecked(&mut f[l4..]));
        // NOP-led words with visible content, so that copying the options shows.
        for (i, b) in f[l4 + 20..].iter_mut().enumerate() {
            *b = if i % 4 == 0 { 1 } else { 0x30 + i as u8 };
        }
    }
    f.extend_from_slice(payload);
    let at = l4 + if spec.udp { 6 } else { 16 };
    let field = if spec.partial {
        checksum::data(&pseudo_header(&f[spec.l3()..]).0)
    } else {
        match !l4_sum(&f[spec.l3()..]) {
            0 if spec.udp => 0xffff,
            v => v,
        }
    };
    f[at..at + 2].copy_from_slice(&field.to_be_bytes());
    f
}

fn payload(len: usize, seed: u32) -> Vec<u8> {
    (0..len as u32)
        .map(|i| (i.wrapping_mul(2_654_435_761).wrapping_add(seed) >> 24) as u8)
        .collect()
}

/// Runs [`segment`], checking the count and that an error emitted nothing.
fn run(frame: &[u8], hdr: &Repr) -> Result<Vec<Vec<u8>>> {
    let mut out = Vec::new();
    let mut scratch = Vec::new();
    match segment(frame, hdr, &mut scratch, |s| out.push(s.to_vec())) {
        Ok(n) => {
            assert_eq!(n, out.len());
            Ok(out)
        }
        Err(e) => {
            assert!(out.is_empty(), "emitted before failing");
            Err(e)
        }
    }
}

/// Whether a frame without padding has a right IPv4 header checksum (if IPv4) and L4
/// checksum.
fn checksums_ok(frame: &[u8]) -> bool {
    let l3 = ethernet::Frame::new_checked(frame).unwrap().header_len();
    let ip = &frame[l3..];
    let header_ok = ip[0] >> 4 != 4 || ipv4::Packet::new_checked(ip).unwrap().verify_checksum();
    header_ok && l4_sum(ip) == 0xffff
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// `struct virtio_net_hdr` of a TCPv4 super-frame with ECN, little-endian fields.
const VNET_HDR: [u8; 10] = [
    0x01, // flags NEEDS_CSUM
    0x81, // gso_type TCPV4 | ECN
    0x42, 0x00, // hdr_len 66
    0xa8, 0x05, // gso_size 1448
    0x22, 0x00, // csum_start 34
    0x10, 0x00, // csum_offset 16
];

#[test]
fn parse_vnet_hdr() {
    let h = VirtioNetHdr::new_checked(&VNET_HDR[..]).unwrap();
    let repr = Repr::parse(&h).unwrap();
    assert_eq!(
        repr,
        Repr {
            flags: FLAG_NEEDS_CSUM,
            gso_type: GsoType {
                kind: GsoKind::TcpV4,
                ecn: true
            },
            hdr_len: 66,
            gso_size: 1448,
            csum_start: 34,
            csum_offset: 16,
        }
    );
    assert!(repr.needs_csum());
    assert_eq!(
        repr.to_string(),
        "vnet flags=0x01 gso=TCPv4|ECN hdr_len=66 gso_size=1448 csum=34+16"
    );
    let mut buf = [0xaa; HEADER_LEN];
    repr.emit(&mut VirtioNetHdr::new_unchecked(&mut buf[..]));
    assert_eq!(buf, VNET_HDR);
    for len in 0..HEADER_LEN {
        assert_eq!(
            VirtioNetHdr::new_checked(&VNET_HDR[..len]).err(),
            Some(Error::Truncated)
        );
    }
}

#[test]
fn gso_type_octet_round_trips() {
    for v in 0..=255u8 {
        assert_eq!(u8::from(GsoType::from(v)), v);
    }
    assert_eq!(GsoKind::from(5), GsoKind::UdpL4);
    assert_eq!(GsoKind::from(2), GsoKind::Unknown(2));
    assert_eq!(GsoType::from(0x84).kind, GsoKind::TcpV6);
}

#[test]
fn tcp4_three_segments_every_field() {
    let spec = Spec {
        flags: (Flags::ACK | Flags::PSH | Flags::FIN | Flags::CWR | Flags::ECE).bits(),
        ..Spec::tcp4()
    };
    let data = payload(2500, 7);
    let frame = build(&spec, &data);
    let mut hdr = spec.hdr(1000);
    hdr.gso_type.ecn = true;
    let segs = run(&frame, &hdr).unwrap();
    assert_eq!(segs.len(), 3);
    let lens = [1000, 1000, 500];
    let idents = [0xfffe, 0xffff, 0x0000];
    let seqs = [0xffff_fc00, 0xffff_ffe8, 0x0000_03d0];
    let flags = [0xd0, 0x50, 0x59]; // ACK|ECE|CWR, ACK|ECE, ACK|ECE|PSH|FIN
    for (i, seg) in segs.iter().enumerate() {
        assert_eq!(seg.len(), 66 + lens[i]);
        assert_eq!(seg[..14], frame[..14], "Ethernet header");
        assert_eq!(u16_at(seg, 16), (52 + lens[i]) as u16, "total length");
        assert_eq!(u16_at(seg, 18), idents[i], "IPv4 ID");
        assert_eq!(u32_at(seg, 38), seqs[i], "sequence number");
        assert_eq!(seg[47], flags[i], "TCP flags");
        assert_eq!(seg[54..66], frame[54..66], "options");
        assert_eq!(seg[66..], data[1000 * i..1000 * i + lens[i]]);
        assert!(checksums_ok(seg));
        // Every other byte: the same frame built directly with full checksums.
        let expected = Spec {
            ident: idents[i],
            seq: seqs[i],
            flags: flags[i],
            partial: false,
            ..spec
        };
        assert_eq!(*seg, build(&expected, &data[1000 * i..1000 * i + lens[i]]));
    }
}

#[test]
fn tcp6_segments() {
    let spec = Spec {
        v6: true,
        options: 0,
        ..Spec::tcp4()
    };
    let data = payload(3001, 1);
    let frame = build(&spec, &data);
    let segs = run(&frame, &spec.hdr(1440)).unwrap();
    let lens = [1440, 1440, 121];
    assert_eq!(segs.len(), 3);
    for (i, seg) in segs.iter().enumerate() {
        assert_eq!(u16_at(seg, 18), (20 + lens[i]) as u16, "payload length");
        assert!(checksums_ok(seg));
        let expected = Spec {
            seq: spec.seq.wrapping_add(1440 * i as u32),
            flags: if i == 2 {
                spec.flags
            } else {
                Flags::ACK.bits()
            },
            partial: false,
            ..spec
        };
        assert_eq!(*seg, build(&expected, &data[1440 * i..1440 * i + lens[i]]));
    }
}

#[test]
fn udp_l4_segments() {
    let spec = Spec {
        udp: true,
        ..Spec::tcp4()
    };
    let data = payload(3000, 2);
    let frame = build(&spec, &data);
    let segs = run(&frame, &spec.hdr(1200)).unwrap();
    let lens = [1200, 1200, 600];
    assert_eq!(segs.len(), 3);
    for (i, seg) in segs.iter().enumerate() {
        assert_eq!(u16_at(seg, 38), (8 + lens[i]) as u16, "UDP length");
        assert_eq!(u16_at(seg, 18), spec.ident.wrapping_add(i as u16));
        assert!(checksums_ok(seg));
        let expected = Spec {
            ident: spec.ident.wrapping_add(i as u16),
            partial: false,
            ..spec
        };
        assert_eq!(*seg, build(&expected, &data[1200 * i..1200 * i + lens[i]]));
    }
}

#[test]
fn tagged_frames_keep_their_tags() {
    for (tags, udp) in [(1, false), (2, true)] {
        let spec = Spec {
            tags,
            udp,
            ..Spec::tcp4()
        };
        let data = payload(2000, 3);
        let frame = build(&spec, &data);
        let segs = run(&frame, &spec.hdr(800)).unwrap();
        assert_eq!(segs.len(), 3);
        for (i, seg) in segs.iter().enumerate() {
            assert_eq!(seg[..spec.l3()], frame[..spec.l3()], "tags copied");
            assert!(checksums_ok(seg));
            let piece = &data[800 * i..(800 * i + 800).min(2000)];
            assert_eq!(seg[spec.headers_len()..], *piece);
        }
    }
}

#[test]
fn small_super_frame_is_one_frame_with_its_checksum_completed() {
    for len in [0, 1, 999, 1000] {
        let spec = Spec::tcp4();
        let data = payload(len, 4);
        let segs = run(&build(&spec, &data), &spec.hdr(1000)).unwrap();
        let complete = Spec {
            partial: false,
            ..spec
        };
        assert_eq!(segs, vec![build(&complete, &data)], "len {len}");
    }
}

#[test]
fn no_gso_frames() {
    let spec = Spec::tcp4();
    let data = payload(300, 5);
    let partial = build(&spec, &data);
    let mut hdr = Repr {
        gso_type: GsoType::from(GSO_NONE),
        gso_size: 0,
        ..spec.hdr(0)
    };
    let complete = build(
        &Spec {
            partial: false,
            ..spec
        },
        &data,
    );
    assert_eq!(run(&partial, &hdr).unwrap(), vec![complete]);
    hdr.flags = FLAG_DATA_VALID;
    assert_eq!(run(&partial, &hdr).unwrap(), vec![partial.clone()]);
    // Not even IP: passed through untouched.
    assert_eq!(
        run(&[1, 2, 3], &Repr { hdr_len: 0, ..hdr }).unwrap(),
        vec![vec![1, 2, 3]]
    );
    hdr.flags = FLAG_NEEDS_CSUM;
    hdr.csum_start = partial.len() as u16 - 1;
    assert_eq!(run(&partial, &hdr), Err(Error::Truncated));
}

#[test]
fn complete_partial_checksum_vectors() {
    // Ethernet + testdata::UDP_PACKET, whose checksum field is 0xbf42; the pseudo-header
    // sum is 0x8c45 (checksum.rs). The two zero padding bytes add nothing to the sum.
    let mut frame = [0u8; 14 + 34];
    frame[12..14].copy_from_slice(&[0x08, 0x00]);
    frame[14..].copy_from_slice(&UDP_PACKET);
    frame[40..42].copy_from_slice(&0x8c45u16.to_be_bytes());
    complete_partial_checksum(&mut frame, 34, 6).unwrap();
    assert_eq!(u16_at(&frame, 40), 0xbf42);
    // testdata::TCP_SYN: pseudo-header sum 0x8c56, checksum 0x04a7.
    let mut frame = [0u8; 14 + 60];
    frame[12..14].copy_from_slice(&[0x08, 0x00]);
    frame[14..].copy_from_slice(&TCP_SYN);
    frame[50..52].copy_from_slice(&0x8c56u16.to_be_bytes());
    complete_partial_checksum(&mut frame, 34, 16).unwrap();
    assert_eq!(u16_at(&frame, 50), 0x04a7);
    // A sum of 0xffff gives 0, stored as 0xffff.
    let mut words = [0x12, 0x34, 0xed, 0xcb, 0, 0];
    complete_partial_checksum(&mut words, 0, 4).unwrap();
    assert_eq!(words[4..], [0xff, 0xff]);
}

#[test]
fn complete_partial_checksum_bounds() {
    let original = [1u8, 2, 3, 4, 5, 6];
    for (start, offset) in [
        (5, 0),
        (4, 1),
        (6, 0),
        (0, 5),
        (7, 0),
        (usize::MAX, 1),
        (1, usize::MAX),
        (usize::MAX - 1, 0),
    ] {
        let mut frame = original;
        assert_eq!(
            complete_partial_checksum(&mut frame, start, offset),
            Err(Error::Truncated),
            "{start}+{offset}"
        );
        assert_eq!(frame, original);
    }
    let mut frame = original;
    assert_eq!(complete_partial_checksum(&mut frame, 4, 0), Ok(()));
}

#[test]
fn fill_l4_checksum_vectors() {
    // UDP_PACKET with non-zero padding, which the sum must leave out.
    let mut frame = [0u8; 14 + 34];
    frame[12..14].copy_from_slice(&[0x08, 0x00]);
    frame[14..].copy_from_slice(&UDP_PACKET);
    frame[46..48].copy_from_slice(&[0xab, 0xcd]);
    frame[40..42].copy_from_slice(&[0x12, 0x34]);
    fill_l4_checksum(&mut frame).unwrap();
    assert_eq!(u16_at(&frame, 40), 0xbf42);
    let mut frame = [0u8; 14 + 60];
    frame[12..14].copy_from_slice(&[0x08, 0x00]);
    frame[14..].copy_from_slice(&TCP_SYN);
    frame[50..52].copy_from_slice(&[0xde, 0xad]);
    fill_l4_checksum(&mut frame).unwrap();
    assert_eq!(u16_at(&frame, 50), 0x04a7);
    // Against the crate's own TCP and UDP fill_checksum, on tagged frames.
    for udp in [false, true] {
        let spec = Spec {
            tags: 2,
            udp,
            ..Spec::tcp4()
        };
        let mut frame = build(&spec, &payload(777, 9));
        let mut expected = frame.clone();
        let (l3, l4) = (spec.l3(), spec.l4());
        let ip = ipv4::Packet::new_checked(&frame[l3..]).unwrap();
        let (src, dst) = (ip.src_addr(), ip.dst_addr());
        if udp {
            udp::Packet::new_checked(&mut expected[l4..])
                .unwrap()
                .fill_checksum(src, dst);
        } else {
            tcp::Packet::new_checked(&mut expected[l4..])
                .unwrap()
                .fill_checksum(src, dst);
        }
        fill_l4_checksum(&mut frame).unwrap();
        assert_eq!(frame, expected);
    }
    // IPv6 against the independent byte-built pseudo-header.
    let spec = Spec {
        v6: true,
        ..Spec::tcp4()
    };
    let mut frame = build(&spec, &payload(99, 8));
    fill_l4_checksum(&mut frame).unwrap();
    assert!(checksums_ok(&frame));
}

#[test]
fn fill_l4_checksum_refusals() {
    let spec = Spec::tcp4();
    let good = build(&spec, &payload(100, 0));
    let refused = |edit: &dyn Fn(&mut Vec<u8>), want: Error| {
        let mut frame = good.clone();
        edit(&mut frame);
        let before = frame.clone();
        assert_eq!(fill_l4_checksum(&mut frame), Err(want));
        assert_eq!(frame, before, "unchanged on error");
    };
    refused(&|f| f[20] |= 0x20, Error::Unsupported); // MF
    refused(&|f| f[21] = 1, Error::Unsupported); // fragment offset 8
    refused(
        &|f| f[12..14].copy_from_slice(&[0x08, 0x06]),
        Error::Unsupported,
    ); // ARP
    refused(&|f| f[23] = 1, Error::Unsupported); // ICMP
    refused(&|f| f.truncate(good.len() - 1), Error::Truncated);
    refused(&|f| f.truncate(40), Error::Truncated);
    refused(&|f| f[46] = 0x40, Error::Malformed); // TCP data offset 4
    let spec6 = Spec {
        v6: true,
        udp: true,
        ..spec
    };
    let good6 = build(&spec6, &payload(10, 0));
    let mut f = good6.clone();
    f[20] = 0; // Hop-by-Hop Options
    assert_eq!(fill_l4_checksum(&mut f), Err(Error::Unsupported));
    let mut f = good6.clone();
    f[59] += 1; // UDP length 19 in an 18-byte payload
    assert_eq!(fill_l4_checksum(&mut f), Err(Error::Truncated));
    let mut f = good6;
    f[59] -= 1; // UDP length 17 in an 18-byte payload
    assert_eq!(fill_l4_checksum(&mut f), Err(Error::Malformed));
}

#[test]
fn segment_refusals() {
    let spec = Spec::tcp4();
    let frame = build(&spec, &payload(3000, 0));
    let hdr = spec.hdr(1000);
    let with = |edit: &dyn Fn(&mut Repr)| {
        let mut h = hdr;
        edit(&mut h);
        run(&frame, &h).err()
    };
    assert_eq!(with(&|_| {}), None);
    assert_eq!(with(&|h| h.gso_size = 0), Some(Error::Malformed));
    assert_eq!(
        with(&|h| h.gso_type = GsoType::from(GSO_UDP)),
        Some(Error::Unsupported)
    );
    assert_eq!(
        with(&|h| h.gso_type = GsoType::from(9)),
        Some(Error::Unsupported)
    );
    assert_eq!(
        with(&|h| h.gso_type = GsoType::from(GSO_TCPV6)),
        Some(Error::Malformed)
    );
    assert_eq!(
        with(&|h| h.gso_type = GsoType::from(GSO_UDP_L4)),
        Some(Error::Malformed)
    );
    assert_eq!(
        with(&|h| h.gso_type = GsoType::from(GSO_NONE | GSO_ECN)),
        Some(Error::Malformed)
    );
    assert_eq!(with(&|h| h.hdr_len = 3067), Some(Error::Malformed));
    assert_eq!(with(&|h| h.hdr_len = 3066), None);
    assert_eq!(with(&|h| h.csum_start = 33), Some(Error::Malformed));
    assert_eq!(with(&|h| h.csum_offset = 6), Some(Error::Malformed));
    assert_eq!(
        with(&|h| h.flags = 0),
        None,
        "a full checksum needs no csum_start"
    );
    // 3000 bytes: 1024 segments of 3 bytes pass, 1500 of 2 do not.
    assert_eq!(with(&|h| h.gso_size = 2), Some(Error::Unsupported));
    assert_eq!(
        run(&frame, &Repr { gso_size: 3, ..hdr }).unwrap().len(),
        1000
    );
    let udp = Spec { udp: true, ..spec };
    let udp_frame = build(&udp, &payload(3000, 0));
    let ecn = GsoType {
        kind: GsoKind::UdpL4,
        ecn: true,
    };
    assert_eq!(
        run(
            &udp_frame,
            &Repr {
                gso_type: ecn,
                ..udp.hdr(1000)
            }
        ),
        Err(Error::Malformed)
    );
    assert_eq!(
        run(&udp_frame, &spec.hdr(1000)),
        Err(Error::Malformed),
        "TCPV4 on UDP"
    );
    // Truncated frames, a fragment, IP length past the frame.
    for len in [0, 13, 33, 40, 65, frame.len() - 1] {
        let h = Repr { hdr_len: 0, ..hdr };
        assert_eq!(run(&frame[..len], &h), Err(Error::Truncated), "len {len}");
    }
    let mut fragment = frame.clone();
    fragment[20] |= 0x20;
    assert_eq!(run(&fragment, &hdr), Err(Error::Unsupported));
}

#[test]
fn exactly_max_segments() {
    let spec = Spec::tcp4();
    let frame = build(&spec, &payload(MAX_SEGMENTS, 0));
    assert_eq!(run(&frame, &spec.hdr(1)).unwrap().len(), MAX_SEGMENTS);
    let frame = build(&spec, &payload(MAX_SEGMENTS + 1, 0));
    assert_eq!(run(&frame, &spec.hdr(1)), Err(Error::Unsupported));
}

fn spec_strategy(udp: bool) -> impl Strategy<Value = Spec> {
    (
        any::<bool>(),
        0usize..=2,
        0usize..=10,
        any::<u8>(),
        any::<u32>(),
        any::<u16>(),
        any::<bool>(),
    )
        .prop_map(move |(v6, tags, words, flags, seq, ident, partial)| Spec {
            v6,
            tags,
            udp,
            options: if udp { 0 } else { words * 4 },
            flags,
            seq,
            ident,
            partial,
        })
}

/// Segments `len` (clamped so that L3 stays within 65,000 bytes) payload bytes and checks
/// the segments against the super-frame.
fn check_segmentation(
    spec: Spec,
    len: usize,
    gso: u16,
    seed: u32,
) -> core::result::Result<(), TestCaseError> {
    let len = len.min(65_000 - (spec.headers_len() - spec.l3()));
    let data = payload(len, seed);
    let frame = build(&spec, &data);
    let gso = usize::from(gso);
    let expected = len.div_ceil(gso).max(1);
    let result = run(&frame, &spec.hdr(gso as u16));
    if expected > MAX_SEGMENTS {
        prop_assert_eq!(result, Err(Error::Unsupported));
        return Ok(());
    }
    let segs = result.unwrap();
    prop_assert_eq!(segs.len(), expected);
    let (l3, l4) = (spec.l3(), spec.l4());
    let mut joined = Vec::with_capacity(len);
    for (i, seg) in segs.iter().enumerate() {
        prop_assert!(seg.len() <= spec.headers_len() + gso);
        prop_assert!(checksums_ok(seg), "segment {} checksums", i);
        prop_assert_eq!(&seg[..l3], &frame[..l3]);
        if spec.v6 {
            prop_assert_eq!(usize::from(u16_at(seg, l3 + 4)), seg.len() - l4);
        } else {
            prop_assert_eq!(usize::from(u16_at(seg, l3 + 2)), seg.len() - l3);
            prop_assert_eq!(u16_at(seg, l3 + 4), spec.ident.wrapping_add(i as u16));
        }
        if spec.udp {
            prop_assert_eq!(usize::from(u16_at(seg, l4 + 4)), seg.len() - l4);
        } else {
            prop_assert_eq!(
                u32_at(seg, l4 + 4),
                spec.seq.wrapping_add(joined.len() as u32)
            );
            let mut flags = spec.flags;
            if i + 1 < segs.len() {
                flags &= !0x09;
            }
            if i > 0 {
                flags &= !0x80;
            }
            prop_assert_eq!(seg[l4 + 13], flags);
            prop_assert_eq!(
                &seg[l4 + 20..spec.headers_len()],
                &frame[l4 + 20..spec.headers_len()]
            );
        }
        joined.extend_from_slice(&seg[spec.headers_len()..]);
    }
    prop_assert_eq!(joined, data);
    Ok(())
}

proptest! {
    #[test]
    fn tcp_segments_reassemble(
        spec in spec_strategy(false),
        len in 0usize..=65_000,
        gso in 1u16..=9000,
        seed in any::<u32>(),
    ) {
        check_segmentation(spec, len, gso, seed)?;
    }

    #[test]
    fn udp_segments_reassemble(
        spec in spec_strategy(true),
        len in 0usize..=65_000,
        gso in 1u16..=9000,
        seed in any::<u32>(),
    ) {
        check_segmentation(spec, len, gso, seed)?;
    }

    #[test]
    fn vnet_hdr_round_trip(
        flags in any::<u8>(),
        gso_type in any::<u8>(),
        fields in any::<[u16; 4]>(),
    ) {
        let repr = Repr {
            flags,
            gso_type: GsoType::from(gso_type),
            hdr_len: fields[0],
            gso_size: fields[1],
            csum_start: fields[2],
            csum_offset: fields[3],
        };
        let mut buf = [0u8; HEADER_LEN];
        repr.emit(&mut VirtioNetHdr::new_unchecked(&mut buf[..]));
        prop_assert_eq!(buf[1], gso_type);
        let parsed = Repr::parse(&VirtioNetHdr::new_checked(&buf[..]).unwrap()).unwrap();
        prop_assert_eq!(parsed, repr);
    }

    #[test]
    fn completed_checksum_verifies(
        data in proptest::collection::vec(any::<u8>(), 0..200),
        start in 0usize..210,
        offset in 0usize..210,
    ) {
        let mut frame = data.clone();
        match complete_partial_checksum(&mut frame, start, offset) {
            // A field at an odd offset from `csum_start` is not a word of the sum; the
            // kernel writes it all the same, and so do we, but nothing verifies.
            Ok(()) if offset % 2 == 1 => {}
            Ok(()) => {
                // The old field held the pseudo-header sum; with it the sum is 0xffff.
                let old = u16_at(&data, start + offset);
                prop_assert_eq!(checksum::combine(&[checksum::data(&frame[start..]), old]), 0xffff);
            }
            Err(e) => {
                prop_assert_eq!(e, Error::Truncated);
                prop_assert!(start + offset + 2 > data.len());
                prop_assert_eq!(frame, data);
            }
        }
    }

    #[test]
    fn mutated_frames_never_panic(
        spec in spec_strategy(false),
        udp in any::<bool>(),
        len in 0usize..3000,
        at in any::<proptest::sample::Index>(),
        byte in any::<u8>(),
        gso in 0u16..2000,
        gso_type in any::<u8>(),
    ) {
        let spec = Spec { udp, options: if udp { 0 } else { spec.options }, ..spec };
        let mut frame = build(&spec, &payload(len, 0));
        let i = at.index(spec.headers_len());
        frame[i] = byte;
        let hdr = Repr { gso_type: GsoType::from(gso_type), ..spec.hdr(gso) };
        if let Ok(segs) = run(&frame, &hdr) {
            if matches!(hdr.gso_type.kind, GsoKind::TcpV4 | GsoKind::TcpV6 | GsoKind::UdpL4) {
                for seg in &segs {
                    prop_assert!(checksums_ok(seg));
                }
            }
        }
        let _ = fill_l4_checksum(&mut frame);
    }
}
