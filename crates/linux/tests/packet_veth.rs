//! Root-only test of the PACKET_MMAP port over a veth pair in a private namespace: frames cross
//! intact and in order through ring wrap-around, 802.1Q tags survive, our own sends are not
//! received back, and frames too long for a slot reach the super-frame socket (or, without
//! one, are dropped and counted). A second test sends through a `PACKET_VNET_HDR` socket, as a
//! host with offloads on would: a TCP super-frame arrives cut into wire frames, and a frame
//! whose checksum was left to offload arrives with it filled in (docs/offload.md).

mod common;

use std::time::{Duration, Instant};

use common::{can_run_lab, no_ipv6, veth, Netns};
use rtlan_linux::packet::{PacketPort, PortOptions, TxOutcome, RX_MAX_FRAME};

const ETHERTYPE_TEST: [u8; 2] = [0x88, 0xb5];

fn frame(dst: [u8; 6], src: [u8; 6], seq: u32, len: usize) -> Vec<u8> {
    let mut f = Vec::with_capacity(len);
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    f.extend_from_slice(&ETHERTYPE_TEST);
    f.extend_from_slice(&seq.to_be_bytes());
    while f.len() < len {
        f.push((f.len() % 251) as u8);
    }
    f
}

fn send(port: &mut PacketPort, bytes: &[u8]) {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let outcome = port.transmit_with(|buf| {
            buf[..bytes.len()].copy_from_slice(bytes);
            Some(bytes.len())
        });
        match outcome {
            TxOutcome::Queued => return,
            TxOutcome::RingFull if Instant::now() < deadline => {
                let _ = port.flush();
                std::thread::sleep(Duration::from_millis(1));
            }
            other => panic!("could not queue a frame: {other:?}"),
        }
    }
}

/// Receives on `port` until `want` frames of our EtherType arrived or `wait` passed.
fn receive_for(port: &mut PacketPort, want: usize, wait: Duration) -> Vec<Vec<u8>> {
    let mut got = Vec::new();
    let deadline = Instant::now() + wait;
    while got.len() < want && Instant::now() < deadline {
        let n = port.receive(64, |f| {
            let ethertype = if f.len() >= 18 && f[12..14] == [0x81, 0x00] {
                &f[16..18]
            } else {
                &f[12..14]
            };
            if ethertype == ETHERTYPE_TEST {
                got.push(f.to_vec());
            }
        });
        if n == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    got
}

/// Sends `sent` from `from` in batches of 16, one flush each, and checks that `to` receives them
/// all, intact and in order (reading after each batch, so a 64-slot RX ring never overflows).
fn cross(from: &mut PacketPort, to: &mut PacketPort, sent: &[Vec<u8>]) {
    let mut received = Vec::new();
    for chunk in sent.chunks(16) {
        for f in chunk {
            send(from, f);
        }
        from.flush().expect("flush");
        assert!(!from.flush_pending(), "the flush took the batch");
        received.extend(receive_test_frames(to, chunk.len()));
    }
    assert_eq!(received.len(), sent.len(), "all frames arrive");
    assert!(received == sent, "frames arrive intact and in order");
}

/// Frames we expect: wait up to 2 s.
fn receive_test_frames(port: &mut PacketPort, want: usize) -> Vec<Vec<u8>> {
    receive_for(port, want, Duration::from_secs(2))
}

/// Frames we expect not to come: give them 300 ms.
fn receive_none(port: &mut PacketPort) -> Vec<Vec<u8>> {
    receive_for(port, 1, Duration::from_millis(300))
}

#[test]
fn frames_cross_a_veth_pair_through_the_rings() {
    if !can_run_lab("frames_cross_a_veth_pair_through_the_rings") {
        return;
    }
    let ns = Netns::new(&format!("rtl-lnx{}-p", std::process::id()));
    no_ipv6(&ns);
    veth(&ns, "x0", &ns, "x1");
    for ifname in ["x0", "x1"] {
        ns.exec(&["ip", "link", "set", ifname, "mtu", "3000"]);
    }
    let mac_text =
        String::from_utf8(ns.exec(&["cat", "/sys/class/net/x0/address"]).stdout).expect("utf8");

    let result = ns
        .spawn(move || {
            // Small rings (64 slots) so that 200 frames wrap around both several times.
            let options = PortOptions {
                ring_frames: 64,
                ..PortOptions::default()
            };
            let mut p0 = PacketPort::open("x0", &options).expect("open x0");
            let mut p1 = PacketPort::open("x1", &options).expect("open x1");
            assert_eq!(p0.mac().to_string(), mac_text.trim(), "SIOCGIFHWADDR");
            assert!(p0.ifindex() > 0 && p0.ifindex() != p1.ifindex());

            let (dst, src) = (p1.mac().0, p0.mac().0);
            let sent: Vec<Vec<u8>> = (0..200u32)
                .map(|i| frame(dst, src, i, 60 + (i as usize * 7) % 1400))
                .collect();
            cross(&mut p0, &mut p1, &sent);
            assert_eq!(p0.counters().tx_frames, 200);
            assert_eq!(p1.counters().rx_truncated, 0);

            // 802.1Q: the kernel moves the tag into metadata; the port puts it back.
            let mut tagged = frame(dst, src, 999, 100);
            tagged.splice(12..12, [0x81, 0x00, 0x20, 0x05]);
            send(&mut p0, &tagged);
            p0.flush().expect("flush");
            let got = receive_test_frames(&mut p1, 1);
            assert_eq!(got, vec![tagged], "VLAN tag survives");

            // Longer than an RX slot holds: the super-frame socket takes it whole; a port
            // without one drops it, truncated, and counts it.
            let mut narrow = PacketPort::open(
                "x1",
                &PortOptions {
                    ring_frames: 64,
                    superframes: false,
                    ..PortOptions::default()
                },
            )
            .expect("open x1 without a super-frame socket");
            let long = frame(dst, src, 1000, RX_MAX_FRAME + 10);
            send(&mut p0, &long);
            p0.flush().expect("flush");
            let got = receive_test_frames(&mut p1, 1);
            assert_eq!(got, vec![long], "the long frame, whole");
            assert_eq!(p1.counters().rx_truncated, 0);
            assert_eq!(p1.counters().rx_superframes, 1);
            assert!(
                receive_none(&mut narrow).is_empty(),
                "truncated frame delivered"
            );
            assert_eq!(narrow.counters().rx_truncated, 1);
            drop(narrow);

            // PACKET_IGNORE_OUTGOING: the sender does not see its own frames.
            assert!(receive_none(&mut p0).is_empty(), "own sends looped back");

            // A full TX ring refuses frames without calling the producer, counts once, and frees
            // up after a flush.
            let mut called = false;
            let mut queued = 0;
            while p0.transmit_with(|buf| {
                let f = frame(dst, src, 2000, 60);
                buf[..60].copy_from_slice(&f);
                Some(60)
            }) == TxOutcome::Queued
            {
                queued += 1;
            }
            assert_eq!(queued, 64, "one ring's worth of slots");
            for _ in 0..3 {
                let outcome = p0.transmit_with(|_| {
                    called = true;
                    None
                });
                assert_eq!(outcome, TxOutcome::RingFull);
            }
            assert!(!called, "producer called without a free slot");
            assert!(p0.tx_blocked());
            assert_eq!(p0.counters().tx_ring_full, 1, "counted once per episode");
            p0.flush().expect("flush");
            assert_eq!(receive_test_frames(&mut p1, 64).len(), 64);
            assert_eq!(p0.transmit_with(|_| None), TxOutcome::Empty, "slots freed");
            assert!(!p0.tx_blocked());
        })
        .join();
    drop(ns);
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
}

/// A TCP/IPv4 frame a → b with `payload` bytes after a 20-byte TCP header, its IPv4 checksum
/// filled and its TCP checksum field holding the pseudo-header sum only (a partial checksum,
/// as a sender with checksum offload leaves it).
fn partial_tcp(dst: [u8; 6], src: [u8; 6], seq: u32, payload: usize, flags: u8) -> Vec<u8> {
    use rtlan_wire::checksum;
    use std::net::Ipv4Addr;
    let (a, b) = (Ipv4Addr::new(198, 18, 0, 1), Ipv4Addr::new(198, 18, 0, 2));
    let mut f = Vec::new();
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    f.extend_from_slice(&[0x08, 0x00]);
    let total = (20 + 20 + payload) as u16;
    f.extend_from_slice(&[
        0x45,
        0,
        (total >> 8) as u8,
        total as u8,
        0x12,
        0x34,
        0x40,
        0,
        64,
        6,
        0,
        0,
    ]);
    f.extend_from_slice(&a.octets());
    f.extend_from_slice(&b.octets());
    let ip_sum = !checksum::data(&f[14..34]);
    f[24..26].copy_from_slice(&ip_sum.to_be_bytes());
    f.extend_from_slice(&40000u16.to_be_bytes());
    f.extend_from_slice(&5201u16.to_be_bytes());
    f.extend_from_slice(&seq.to_be_bytes());
    f.extend_from_slice(&7u32.to_be_bytes()); // ack
    f.extend_from_slice(&[0x50, flags, 0xff, 0xff, 0, 0, 0, 0]);
    f.extend((0..payload).map(|i| (i % 253) as u8));
    let pseudo =
        checksum::pseudo_header_v4(a, b, rtlan_wire::ipv4::Protocol::Tcp, (20 + payload) as u16);
    f[50..52].copy_from_slice(&pseudo.to_be_bytes());
    f
}

/// Sends `frame` on `ifname` through a `PACKET_VNET_HDR` socket with `vnet` in front.
fn send_vnet(ifindex: u32, vnet: &rtlan_wire::gso::Repr, frame: &[u8]) {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    // SAFETY: plain system calls on a descriptor owned below; buffers outlive each call.
    unsafe {
        let fd = libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0);
        assert!(fd >= 0, "socket");
        let fd = OwnedFd::from_raw_fd(fd);
        let one: libc::c_int = 1;
        let rc = libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_PACKET,
            15, // PACKET_VNET_HDR
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
        assert_eq!(
            rc,
            0,
            "PACKET_VNET_HDR: {}",
            std::io::Error::last_os_error()
        );
        let mut buf = vec![0u8; rtlan_wire::gso::HEADER_LEN];
        vnet.emit(&mut rtlan_wire::gso::VirtioNetHdr::new_unchecked(
            &mut buf[..],
        ));
        buf.extend_from_slice(frame);
        let mut addr: libc::sockaddr_ll = std::mem::zeroed();
        addr.sll_family = libc::AF_PACKET as u16;
        addr.sll_ifindex = ifindex as i32;
        addr.sll_halen = 6;
        addr.sll_addr[..6].copy_from_slice(&frame[..6]);
        let n = libc::sendto(
            fd.as_raw_fd(),
            buf.as_ptr().cast(),
            buf.len(),
            0,
            (&addr as *const libc::sockaddr_ll).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        );
        assert_eq!(
            n,
            buf.len() as isize,
            "sendto: {}",
            std::io::Error::last_os_error()
        );
    }
}

/// Receives IPv4 frames on `port` until `want` arrived or 2 s passed.
fn receive_ipv4(port: &mut PacketPort, want: usize) -> Vec<Vec<u8>> {
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(2);
    while got.len() < want && Instant::now() < deadline {
        let n = port.receive(64, |f| {
            if f.len() >= 14 && f[12..14] == [0x08, 0x00] {
                got.push(f.to_vec());
            }
        });
        if n == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    got
}

#[test]
fn super_frames_arrive_cut_into_wire_frames_and_partial_checksums_filled() {
    use rtlan_wire::gso::{GsoKind, GsoType, Repr, FLAG_NEEDS_CSUM};
    use rtlan_wire::{ipv4, tcp};
    if !can_run_lab("super_frames_arrive_cut_into_wire_frames_and_partial_checksums_filled") {
        return;
    }
    let ns = Netns::new(&format!("rtl-lnx{}-g", std::process::id()));
    no_ipv6(&ns);
    veth(&ns, "x0", &ns, "x1");
    // Offloads back on at the sending end (`veth` turns them off): with them a partial checksum
    // and a GSO skb cross the veth as they are, as from a host with offloads on.
    ns.exec(&["ethtool", "-K", "x0", "tx", "on", "tso", "on", "gso", "on"]);
    let result = ns
        .spawn(move || {
            let mut p1 = PacketPort::open("x1", &PortOptions::default()).expect("open x1");
            let x0 = rtlan_linux::packet::iface_index("x0").expect("x0");
            let (dst, src) = (p1.mac().0, [2, 0, 0, 0, 0, 1]);
            let valid = |f: &[u8]| {
                let ip = ipv4::Packet::new_checked(&f[14..]).expect("IPv4");
                let seg = tcp::Packet::new_checked(ip.payload()).expect("TCP");
                ip.verify_checksum() && seg.verify_checksum(ip.src_addr(), ip.dst_addr())
            };
            let partial = Repr {
                flags: FLAG_NEEDS_CSUM,
                gso_type: GsoType {
                    kind: GsoKind::None,
                    ecn: false,
                },
                hdr_len: 54,
                gso_size: 0,
                csum_start: 34,
                csum_offset: 16,
            };

            // One frame with its checksum left to offload: filled in by the port.
            let small = partial_tcp(dst, src, 1000, 100, 0x18);
            send_vnet(x0, &partial, &small);
            let got = receive_ipv4(&mut p1, 1);
            assert_eq!(got.len(), 1, "the frame");
            assert!(valid(&got[0]), "checksum filled in: {:02x?}", &got[0][..60]);
            assert_eq!(&got[0][54..], &small[54..], "payload unchanged");
            assert_eq!(p1.counters().rx_csum_not_ready, 1);

            // A super-frame of 3,000 bytes of TCP payload, 1,000 per segment, PSH|ACK|FIN.
            let big = partial_tcp(dst, src, 5000, 3000, 0x19);
            let gso = Repr {
                gso_type: GsoType {
                    kind: GsoKind::TcpV4,
                    ecn: false,
                },
                gso_size: 1000,
                ..partial
            };
            send_vnet(x0, &gso, &big);
            let got = receive_ipv4(&mut p1, 3);
            assert_eq!(got.len(), 3, "three wire frames");
            let mut payload = Vec::new();
            for (i, f) in got.iter().enumerate() {
                assert_eq!(f.len(), 14 + 20 + 20 + 1000, "segment {i}");
                assert!(valid(f), "segment {i}'s checksums");
                let ip = ipv4::Packet::new_checked(&f[14..]).expect("IPv4");
                let seg = tcp::Packet::new_checked(ip.payload()).expect("TCP");
                assert_eq!(
                    seg.seq_number(),
                    5000 + 1000 * i as u32,
                    "segment {i}'s sequence"
                );
                assert_eq!(
                    seg.flags().contains(tcp::Flags::FIN),
                    i == 2,
                    "FIN on the last only"
                );
                payload.extend_from_slice(seg.payload());
            }
            assert_eq!(payload, big[54..], "the payload, in order");
            let c = p1.counters();
            assert_eq!((c.rx_superframes, c.rx_superframe_segments), (1, 3));
            assert_eq!((c.rx_truncated, c.rx_superframe_dropped), (0, 0));

            // Driven (the driver reports the socket's readiness): after a read finds it empty,
            // the port looks again only when told, and then finds the frame.
            p1.superframes_hinted();
            assert!(receive_ipv4(&mut p1, 1).is_empty(), "nothing else came");
            send_vnet(x0, &gso, &big);
            std::thread::sleep(Duration::from_millis(50));
            let mut early = 0;
            p1.receive(64, |_| early += 1);
            assert_eq!(early, 0, "read without being told");
            p1.superframes_ready();
            assert_eq!(receive_ipv4(&mut p1, 3).len(), 3, "read once told");

            // A hostile sender: 3,000 bytes in segments of 2 would be 1,500 frames from one
            // super-frame. The port refuses it whole (more than 1,024 segments) and counts it.
            let tiny = Repr { gso_size: 2, ..gso };
            send_vnet(x0, &tiny, &big);
            p1.superframes_ready();
            assert!(receive_ipv4(&mut p1, 1).is_empty(), "segments delivered");
            assert_eq!(p1.counters().rx_superframe_dropped, 1);
        })
        .join();
    drop(ns);
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
}

/// Names of this process's threads that are a port's transmit thread (`tx-IFNAME`).
fn transmit_threads(ifname: &str) -> usize {
    let want = format!("tx-{ifname}");
    std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task")
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|comm| comm.trim() == want)
        .count()
}

/// A port whose TX ring a thread of its own kicks (docs/threads.md): frames leave intact and in
/// order, the kicks and their waits are counted, a kick that fails on a downed interface hands
/// its error to the next flush, and dropping the port joins the thread.
#[test]
fn frames_leave_through_a_transmit_thread() {
    if !can_run_lab("frames_leave_through_a_transmit_thread") {
        return;
    }
    let ns = Netns::new(&format!("rtl-lnx{}-t", std::process::id()));
    no_ipv6(&ns);
    veth(&ns, "x0", &ns, "x1");
    let result = ns
        .spawn(move || {
            let options = PortOptions {
                ring_frames: 64,
                tx_thread: Some(rtlan_linux::packet::TxThreadCpu::Any),
                ..PortOptions::default()
            };
            let mut p0 = PacketPort::open("x0", &options).expect("open x0");
            let mut p1 = PacketPort::open("x1", &PortOptions::default()).expect("open x1");
            assert_eq!(transmit_threads("x0"), 1, "x0's transmit thread runs");
            assert_eq!(transmit_threads("x1"), 0, "x1 kicks its ring itself");

            let (dst, src) = (p1.mac().0, p0.mac().0);
            let sent: Vec<Vec<u8>> = (0..500u32)
                .map(|i| frame(dst, src, i, 60 + (i as usize * 13) % 1400))
                .collect();
            cross(&mut p0, &mut p1, &sent);
            p0.read_kernel_drops();
            let c = p0.counters().clone();
            assert!(c.tx_thread_kicks > 0, "{c:?}");
            assert!(
                c.tx_thread_kicks <= 500,
                "at most a kick per doorbell: {c:?}"
            );
            assert_eq!(c.tx_thread_failed_kicks, 0, "{c:?}");
            assert!(
                c.tx_thread_wait_max_ns > 0 && c.tx_thread_wait_max_ns < 1_000_000_000,
                "doorbell-to-kick wait measured: {c:?}"
            );
            assert!(c.tx_thread_wait_sum_ns >= c.tx_thread_wait_max_ns, "{c:?}");

            // A downed interface: the thread's kick fails and the next flush reports it.
            let down = std::process::Command::new("ip")
                .args(["link", "set", "x0", "down"])
                .status()
                .expect("ip link");
            assert!(down.success());
            send(&mut p0, &sent[0]);
            let deadline = Instant::now() + Duration::from_secs(2);
            let err = loop {
                if let Err(e) = p0.flush() {
                    break e;
                }
                assert!(
                    Instant::now() < deadline,
                    "no flush reported the failed kick"
                );
                std::thread::sleep(Duration::from_millis(5));
            };
            assert_eq!(err.raw_os_error(), Some(libc::ENETDOWN), "{err}");
            p0.read_kernel_drops();
            assert!(p0.counters().tx_thread_failed_kicks > 0);
            assert!(p0.counters().tx_send_errors > 0);

            drop(p0);
            assert_eq!(
                transmit_threads("x0"),
                0,
                "dropping the port joined its thread"
            );
        })
        .join();
    drop(ns);
    result.expect("transmit-thread test passed");
}
