//! Property test: random byte strings, plausible frames, random port ids and random timing never
//! panic and keep every counter identity.

use proptest::prelude::*;

use super::*;

#[derive(Debug, Clone)]
enum Op {
    Frame { port: u16, bytes: Vec<u8> },
    Poll { port: u16, buf_len: usize },
    Advance { nanos: u64 },
    Timeout,
}

fn mac() -> impl Strategy<Value = Address> {
    prop_oneof![
        Just(A),
        Just(B),
        Just(C),
        Just(SWITCH_MAC),
        Just(port_mac(1)),
        Just(Address::BROADCAST),
        Just(Address([0x01, 0, 0x5e, 0, 0, 1])),
        any::<[u8; 6]>().prop_map(Address),
    ]
}

fn ip() -> impl Strategy<Value = Ipv4Addr> {
    prop_oneof![
        Just(IP_A),
        Just(IP_B),
        Just(IP_C),
        Just(MGMT_IP),
        Just(Ipv4Addr::UNSPECIFIED),
        any::<u32>().prop_map(Ipv4Addr::from),
    ]
}

fn plausible_frame() -> impl Strategy<Value = Vec<u8>> {
    let arp = (mac(), mac(), 0u16..4, mac(), ip(), mac(), ip())
        .prop_map(|(dst, src, op, sha, spa, tha, tpa)| arp_frame(dst, src, op, sha, spa, tha, tpa));
    let ip4 = (mac(), mac(), ip(), any::<u16>(), 0usize..1600).prop_map(
        |(dst, src, dst_ip, tag, extra)| eth(dst, src, 0x0800, &ipv4(IP_A, dst_ip, tag, extra)),
    );
    let other = (
        mac(),
        mac(),
        any::<u16>(),
        proptest::collection::vec(any::<u8>(), 0..100),
    )
        .prop_map(|(dst, src, ethertype, payload)| eth(dst, src, ethertype, &payload));
    prop_oneof![arp, ip4, other]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u16..5, plausible_frame()).prop_map(|(port, bytes)| Op::Frame { port, bytes }),
        2 => (0u16..5, proptest::collection::vec(any::<u8>(), 0..2100))
            .prop_map(|(port, bytes)| Op::Frame { port, bytes }),
        3 => (0u16..5, prop_oneof![Just(MAX_FRAME_LEN), 0usize..200])
            .prop_map(|(port, buf_len)| Op::Poll { port, buf_len }),
        2 => (0u64..50_000_000).prop_map(|nanos| Op::Advance { nanos }),
        1 => Just(Op::Timeout),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn random_input_never_panics_and_counters_stay_consistent(
        flood in any::<bool>(),
        ops in proptest::collection::vec(op(), 1..200),
    ) {
        let mut cfg = config(3);
        cfg.ports[1].medium = Medium::FullDuplex { rate_bps: 10_000_000 };
        cfg.nrt_queue_bytes = Some(4000);
        cfg.pending_capacity = 3;
        cfg.pending_timeout = Duration::from_millis(20);
        cfg.ageing_time = Duration::from_millis(200);
        if flood {
            cfg.unknown_unicast = UnknownUnicast::Flood;
        }
        let mut sw = Switch::new(cfg, Instant::ZERO).expect("valid configuration");
        let mut now = Instant::ZERO;
        let mut buf = vec![0u8; MAX_FRAME_LEN];
        for op in ops {
            match op {
                Op::Frame { port, bytes } => sw.handle_frame(now, PortId(port), &bytes),
                Op::Poll { port, buf_len } => {
                    if let Some(len) = sw.poll_transmit(now, PortId(port), &mut buf[..buf_len]) {
                        prop_assert!(len <= buf_len && len >= 14);
                    }
                }
                Op::Advance { nanos } => now += Duration::from_nanos(nanos),
                Op::Timeout => {
                    if sw.poll_timeout().is_some_and(|t| t <= now) {
                        sw.handle_timeout(now);
                    }
                }
            }
            assert_counters_consistent(&sw);
            prop_assert!(sw.pending_len() <= 3);
            prop_assert!(sw.fdb(now).iter().all(|e| e.port < 3));
            prop_assert!(sw.poll_timeout().is_some());
        }
    }
}
