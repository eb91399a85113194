//! The cyclic scheduler and preemptive discard inside the switch (EtheReal §3.3), through the
//! `Switch` API on virtual time: per-connection rates and isolation on one output port, and a
//! host flooding non-real-time traffic next to its own reservation.

use rtlan_wire::control::{Message, ProxyMacPlan, Repr, SetupRepr};

use super::*;

const PLAN: ProxyMacPlan = ProxyMacPlan::DEFAULT;
const LINE: u64 = 100_000_000;
const CYCLE_NS: u64 = 10_000_000;
/// Frames of connections: 1014 bytes (1038 on the wire).
const RT_LEN: usize = 1014;
const D: Address = Address([0x02, 0, 0, 0, 0, 0x0d]);
const IP_D: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 13);

/// A control frame from `src` to the control MAC.
fn ctl(src: Address, repr: &Repr) -> Vec<u8> {
    let mut buf = vec![0u8; 128];
    let len = repr
        .emit_frame(src, PLAN.control_mac(), &mut buf)
        .expect("fits");
    buf.truncate(len.max(60));
    buf
}

/// Four ports at 100 Mbit/s: A on 0, B on 1, C on 2, D on 3; B and D announced.
fn lab() -> Switch {
    let mut cfg = config(4);
    for port in &mut cfg.ports {
        port.medium = Medium::FullDuplex { rate_bps: LINE };
    }
    let mut sw = Switch::new(cfg, Instant::ZERO).expect("valid");
    for (port, mac, ip) in [(1, B, IP_B), (3, D, IP_D)] {
        let garp = arp_frame(Address::BROADCAST, mac, 1, mac, ip, Address([0; 6]), ip);
        sw.handle_frame(Instant::ZERO, PortId(port), &garp);
    }
    drain_all(&mut sw, Instant::ZERO);
    sw
}

/// Sets up connection `id` from `src` (on `port`) to B at `rate` (whole frames); asserts SETUP_OK.
fn reserve(sw: &mut Switch, port: u16, src: Address, id: u16, rate: u64) {
    let setup = SetupRepr {
        src_ip: IP_A,
        dst_ip: IP_B,
        dst_port: 5004,
        src_port: 0,
        rate,
        max_burst: 3 * RT_LEN as u32,
        max_packet: RT_LEN as u16,
        connection_id: id,
        hop_limit: 16,
    };
    let now = Instant::ZERO;
    let before = sw.stats().signal.setup_ok;
    let repr = Repr::new(0, u32::from(id), Message::Setup(setup));
    sw.handle_frame(now, PortId(port), &ctl(src, &repr));
    // The SETUP_OK waits in the control FIFO behind the line's pacing; it leaves in `run`.
    assert_eq!(sw.stats().signal.setup_ok, before + 1, "SETUP_OK expected");
    assert!(sw.connections().lookup(PortId(port), id).is_some());
}

/// A real-time data frame of connection `id` from `src`.
fn rt_frame(src: Address, id: u16) -> Vec<u8> {
    eth(
        PLAN.mac_for(id),
        src,
        0x0800,
        &ipv4(IP_A, IP_B, 1, RT_LEN - 34),
    )
}

/// A source sending `frame` on `port` every `interval_ns`, starting at `phase_ns`.
struct Flow {
    port: u16,
    frame: Vec<u8>,
    interval_ns: u64,
    next_ns: u64,
}

impl Flow {
    /// Sends frames of `frame.len()` bytes at `wire_bps` counted on the wire.
    fn at(port: u16, frame: Vec<u8>, wire_bps: u64, phase_ns: u64) -> Flow {
        let interval_ns = wire_bits(frame.len()) * 1_000_000_000 / wire_bps;
        Flow {
            port,
            frame,
            interval_ns,
            next_ns: phase_ns,
        }
    }
}

/// What left the switch: (time ns, output port, source MAC, length).
type Sent = Vec<(u64, u16, Address, usize)>;

/// Runs the flows for `send_ns`, then lets the switch drain until `end_ns`.
fn run(sw: &mut Switch, flows: &mut [Flow], send_ns: u64, end_ns: u64) -> Sent {
    let mut sent = Sent::new();
    let mut buf = [0u8; MAX_FRAME_LEN];
    let mut now = 0u64;
    for _ in 0..10_000_000 {
        let next_flow = flows
            .iter()
            .map(|f| f.next_ns)
            .filter(|&t| t < send_ns)
            .min();
        let next_sw = sw.poll_timeout().map(Instant::as_nanos);
        let Some(next) = next_flow.into_iter().chain(next_sw).min() else {
            break;
        };
        now = now.max(next);
        if now > end_ns {
            return sent;
        }
        let at = Instant::from_nanos(now);
        for flow in flows.iter_mut() {
            while flow.next_ns <= now && flow.next_ns < send_ns {
                sw.handle_frame(at, PortId(flow.port), &flow.frame);
                flow.next_ns += flow.interval_ns;
            }
        }
        sw.handle_timeout(at);
        for port in 0..sw.port_count() as u16 {
            while let Some(len) = sw.poll_transmit(at, PortId(port), &mut buf) {
                let src = Address([buf[6], buf[7], buf[8], buf[9], buf[10], buf[11]]);
                sent.push((now, port, src, len));
            }
        }
    }
    panic!("simulation did not finish");
}

fn count(sent: &Sent, port: u16, src: Address) -> usize {
    sent.iter()
        .filter(|(_, p, s, _)| *p == port && *s == src)
        .count()
}

fn wire_bits_of(sent: &Sent, port: u16, src: Address) -> u64 {
    sent.iter()
        .filter(|(_, p, s, _)| *p == port && *s == src)
        .map(|(_, _, _, len)| wire_bits(*len))
        .sum()
}

fn conn(sw: &Switch, port: u16, id: u16) -> ConnectionInfo {
    sw.connection_list(Instant::ZERO)
        .into_iter()
        .find(|c| c.in_port == port && c.in_id == id)
        .expect("connection installed")
}

#[test]
fn two_connections_get_their_rates_next_to_a_flood_without_loss() {
    let mut sw = lab();
    reserve(&mut sw, 0, A, 0x0100, 20_000_000);
    reserve(&mut sw, 2, C, 0x0200, 30_000_000);
    let nrt = eth(B, D, 0x88b5, &[0; 1500]);
    let mut flows = [
        Flow::at(0, rt_frame(A, 0x0100), rt::wire_rate(20_000_000, 1014), 0),
        Flow::at(
            2,
            rt_frame(C, 0x0200),
            rt::wire_rate(30_000_000, 1014),
            7_000,
        ),
        Flow::at(3, nrt, LINE, 0),
    ];
    let offered_a = 1_000_000_000u64.div_ceil(flows[0].interval_ns) as usize;
    let offered_c = (1_000_000_000u64 - 7_000).div_ceil(flows[1].interval_ns) as usize;
    let sent = run(&mut sw, &mut flows, 1_000_000_000, 1_050_000_000);

    // Zero real-time loss: every frame offered came out, none dropped.
    assert_eq!(count(&sent, 1, A), offered_a);
    assert_eq!(count(&sent, 1, C), offered_c);
    assert_eq!(sw.stats().rt.queue_drops, 0);
    assert_eq!(conn(&sw, 0, 0x0100).frames_dropped, 0);
    assert_eq!(conn(&sw, 0, 0x0100).frames_sent, offered_a as u64);
    assert_eq!(conn(&sw, 2, 0x0200).frames_sent, offered_c as u64);
    // Per cycle, each connection gets its quota ± one packet (24.65 and 36.98 frames).
    for cycle in 1..99u64 {
        let window = cycle * CYCLE_NS..(cycle + 1) * CYCLE_NS;
        let in_cycle = |src| {
            sent.iter()
                .filter(|(t, p, s, _)| *p == 1 && *s == src && window.contains(t))
                .count()
        };
        assert!(
            (23..=26).contains(&in_cycle(A)),
            "cycle {cycle}: {}",
            in_cycle(A)
        );
        assert!(
            (35..=38).contains(&in_cycle(C)),
            "cycle {cycle}: {}",
            in_cycle(C)
        );
    }
    // The flood gets the rest of the line: 100 − 20.5 − 30.7 ≈ 48.8 Mbit/s.
    let nrt_bits: u64 = sent
        .iter()
        .filter(|(t, p, s, _)| *p == 1 && *s == D && *t < 1_000_000_000)
        .map(|(_, _, _, len)| wire_bits(*len))
        .sum();
    assert!(
        (46_000_000..=50_000_000).contains(&nrt_bits),
        "non-real-time got {nrt_bits} bit/s"
    );
    let sched = sw.scheduler(PortId(1)).expect("port 1");
    assert_eq!(sched.stats().rt_frames_dropped, 0);
    assert!(sched.stats().nrt_frames_dropped > 0, "the flood overflowed");
    assert!(sched.stats().cycles >= 100);
}

#[test]
fn a_connection_sending_twice_its_rate_loses_only_its_own_frames() {
    let mut sw = lab();
    reserve(&mut sw, 0, A, 0x0100, 20_000_000);
    reserve(&mut sw, 2, C, 0x0200, 30_000_000);
    let mut flows = [
        Flow::at(
            0,
            rt_frame(A, 0x0100),
            2 * rt::wire_rate(20_000_000, 1014),
            0,
        ),
        Flow::at(
            2,
            rt_frame(C, 0x0200),
            rt::wire_rate(30_000_000, 1014),
            3_000,
        ),
    ];
    let offered_c = (1_000_000_000u64 - 3_000).div_ceil(flows[1].interval_ns) as usize;
    let sent = run(&mut sw, &mut flows, 1_000_000_000, 1_050_000_000);

    assert_eq!(
        count(&sent, 1, C),
        offered_c,
        "the well-behaved flow loses nothing"
    );
    assert_eq!(conn(&sw, 2, 0x0200).frames_dropped, 0);
    let greedy = conn(&sw, 0, 0x0100);
    // The first switch polices the T-SPEC, so most of the excess goes as non-conforming before
    // it reaches a queue; whatever reaches the queue and overflows is counted there.
    assert!(
        greedy.nonconforming + greedy.frames_dropped > 2_000,
        "{greedy:?}"
    );
    assert_eq!(sw.stats().rt.queue_drops, greedy.frames_dropped);
    assert_eq!(
        sw.stats().ports[1].rt_drop_queue_full,
        greedy.frames_dropped
    );
    // It still gets its own rate: ≈ 20.47 Mbit/s on the wire over the second it sent, within
    // one packet per cycle (after it stops, S1 releases what it held within its reshape
    // allowance, at the same rate).
    let bits: u64 = sent
        .iter()
        .filter(|(t, p, s, _)| *p == 1 && *s == A && *t < 1_000_000_000)
        .map(|(_, _, _, len)| wire_bits(*len))
        .sum();
    let reserved = rt::wire_rate(20_000_000, 1014);
    assert!(
        bits >= reserved - 100 * 8304 && bits <= reserved + 8 * 8304,
        "greedy flow got {bits} bit, reserved {reserved}"
    );
}

#[test]
fn preemptive_discard_keeps_a_flooding_host_within_its_residual() {
    let mut sw = lab();
    // C reserves 40 Mbit/s to B and floods D with non-real-time frames at line rate.
    reserve(&mut sw, 2, C, 0x0200, 40_000_000);
    let rt_wire = rt::wire_rate(40_000_000, 1014);
    let residual = LINE - rt_wire;
    let meter = sw.discard_meter(PortId(2)).expect("enabled by default");
    assert_eq!(meter.residual_bps(), residual);
    let mut flows = [
        Flow::at(2, rt_frame(C, 0x0200), rt_wire, 0),
        Flow::at(2, eth(D, C, 0x88b5, &[0; 1500]), LINE, 1_000),
    ];
    let offered_rt = 1_000_000_000u64.div_ceil(flows[0].interval_ns) as usize;
    let sent = run(&mut sw, &mut flows, 1_000_000_000, 1_050_000_000);

    // The real-time flow is unharmed.
    assert_eq!(count(&sent, 1, C), offered_rt);
    assert_eq!(conn(&sw, 2, 0x0200).frames_dropped, 0);
    // Non-real-time admitted ≈ the residual (≈ 59 Mbit/s), the rest dropped at the input.
    let admitted = wire_bits_of(&sent, 3, C);
    let lo = residual * 95 / 100;
    let hi = residual * 101 / 100;
    assert!(
        (lo..=hi).contains(&admitted),
        "admitted {admitted} bit, residual {residual}"
    );
    let drops = sw.stats().ports[2].nrt_preemptive_drops;
    assert!(drops > 2_000, "{drops}");
    assert_eq!(sw.stats().drop_preemptive, drops);
    // Releasing the reservation gives the whole line back to the meter.
    let info = sw.sched_ports(Instant::ZERO);
    assert!(info[2].metered);
    assert_eq!(info[2].residual_bps, Some(residual));
    assert_eq!(info[1].connections, 1);
}

#[test]
fn discard_can_be_disabled() {
    let mut cfg = config(2);
    cfg.rt.preemptive_discard = false;
    let sw = Switch::new(cfg, Instant::ZERO).expect("valid");
    assert!(sw.discard_meter(PortId(0)).is_none());
    assert!(!sw.sched_ports(Instant::ZERO)[0].metered);
}

#[test]
fn cycle_time_out_of_range_is_refused() {
    for cycle in [Duration::from_micros(99), Duration::from_secs(2)] {
        let mut cfg = config(2);
        cfg.cycle_time = cycle;
        assert!(matches!(
            Switch::new(cfg, Instant::ZERO),
            Err(ConfigError::Scheduler { .. })
        ));
    }
    let mut cfg = config(2);
    cfg.cycle_time = Duration::from_micros(100);
    let sw = Switch::new(cfg, Instant::ZERO).expect("100 µs is allowed");
    assert_eq!(
        sw.scheduler(PortId(0)).map(|s| s.cycle()),
        Some(Duration::from_micros(100))
    );
}
