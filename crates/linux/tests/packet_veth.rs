//! Root-only test of the PACKET_MMAP port over a veth pair in a private namespace: frames cross
//! intact and in order through ring wrap-around, 802.1Q tags survive, our own sends are not
//! received back, and frames too long for a slot are dropped and counted.

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
                qdisc_bypass: false,
            };
            let mut p0 = PacketPort::open("x0", &options).expect("open x0");
            let mut p1 = PacketPort::open("x1", &options).expect("open x1");
            assert_eq!(p0.mac().to_string(), mac_text.trim(), "SIOCGIFHWADDR");
            assert!(p0.ifindex() > 0 && p0.ifindex() != p1.ifindex());

            let (dst, src) = (p1.mac().0, p0.mac().0);
            let sent: Vec<Vec<u8>> = (0..200u32)
                .map(|i| frame(dst, src, i, 60 + (i as usize * 7) % 1400))
                .collect();
            let mut received = Vec::new();
            for chunk in sent.chunks(16) {
                for f in chunk {
                    send(&mut p0, f);
                }
                p0.flush().expect("flush");
                // Keep up with the sender so the 64-slot RX ring never overflows.
                received.extend(receive_test_frames(&mut p1, chunk.len()));
            }
            assert_eq!(received.len(), sent.len(), "all frames arrive");
            assert!(received == sent, "frames arrive intact and in order");
            assert_eq!(p0.counters().tx_frames, 200);
            assert_eq!(p1.counters().rx_truncated, 0);

            // 802.1Q: the kernel moves the tag into metadata; the port puts it back.
            let mut tagged = frame(dst, src, 999, 100);
            tagged.splice(12..12, [0x81, 0x00, 0x20, 0x05]);
            send(&mut p0, &tagged);
            p0.flush().expect("flush");
            let got = receive_test_frames(&mut p1, 1);
            assert_eq!(got, vec![tagged], "VLAN tag survives");

            // Longer than an RX slot holds: dropped and counted, not delivered.
            let long = frame(dst, src, 1000, RX_MAX_FRAME + 10);
            send(&mut p0, &long);
            p0.flush().expect("flush");
            let got = receive_none(&mut p1);
            assert!(got.is_empty(), "truncated frame delivered");
            assert_eq!(p1.counters().rx_truncated, 1);

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
