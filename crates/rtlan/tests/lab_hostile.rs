//! Hostile hosts in the lab (issue 12 item 8): a host with root forges our control protocol and
//! ARP from its own interface, and the reservations of the other hosts must not notice. Each test
//! is one attack of the issue, run against a real `rtlan switch`, real `rtlan rtcd` daemons and
//! real streams (`rtlan send --reserve` → `rtlan recv`); the attacker is a thread of this test
//! that joined the attacking host's namespace and writes frames on its eth0 through an AF_PACKET
//! socket, exactly what a compromised host can do. The virtual-time counterparts of each defence
//! are in `crates/core/src/switch/tests/rt_abuse.rs`; docs/robustness.md maps them.

mod common;

use std::fs::File;
use std::net::Ipv4Addr;
use std::os::fd::AsRawFd;
use std::process::{Child, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use common::*;
use rtlan_lab::Lab;
use rtlan_linux::packet::{PacketPort, PortOptions, TxOutcome};
use rtlan_wire::arp;
use rtlan_wire::control::{EpochTlv, Message, ProxyMacPlan, Repr, SetupRepr};
use rtlan_wire::ethernet::Address;
use serde_json::Value;

/// Sends frames on `host`'s eth0 from a thread inside its namespace, as an attacker with root on
/// that host would: frame `i` is `make(i)`, `per_ms` frames every millisecond (as fast as the
/// socket takes them when `per_ms` is 0), until `count` frames are sent or `duration` has passed,
/// whichever comes first. Returns the number of frames the kernel took.
fn inject(
    lab: &Lab,
    host: &str,
    per_ms: u64,
    count: u64,
    duration: Duration,
    make: impl Fn(u64) -> Vec<u8> + Send + 'static,
) -> JoinHandle<u64> {
    let path = format!("/run/netns/{}", lab.netns(host).expect("host"));
    std::thread::spawn(move || {
        let ns = File::open(&path).unwrap_or_else(|e| panic!("open {path}: {e}"));
        // SAFETY: `ns` is an open namespace file; setns only moves this thread.
        let rc = unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(rc, 0, "setns: {}", std::io::Error::last_os_error());
        let mut port = PacketPort::open("eth0", &PortOptions::default()).expect("packet socket");
        let start = Instant::now();
        let mut sent = 0u64;
        while sent < count && start.elapsed() < duration {
            let frame = make(sent);
            loop {
                let outcome = port.transmit_with(|slot| {
                    slot[..frame.len()].copy_from_slice(&frame);
                    Some(frame.len())
                });
                if outcome == TxOutcome::Queued {
                    break;
                }
                let _ = port.flush();
                std::thread::sleep(Duration::from_micros(50));
            }
            sent += 1;
            if per_ms > 0 && sent.is_multiple_of(per_ms) {
                let _ = port.flush();
                // Keep the average at `per_ms` per millisecond even when a sleep runs long.
                let due = Duration::from_micros(1000 * sent / per_ms);
                if let Some(wait) = due.checked_sub(start.elapsed()) {
                    std::thread::sleep(wait);
                }
            }
        }
        let _ = port.flush();
        while port.flush_pending() {
            let _ = port.flush();
            std::thread::sleep(Duration::from_millis(1));
        }
        sent
    })
}

/// [`inject`] of a fixed list of frames, once through, 50 per millisecond.
fn inject_all(lab: &Lab, host: &str, frames: Vec<Vec<u8>>) -> u64 {
    let n = frames.len() as u64;
    inject(lab, host, 50, n, Duration::from_secs(60), move |i| {
        frames[i as usize].clone()
    })
    .join()
    .expect("attacker")
}

fn mac(lab: &Lab, host: &str) -> Address {
    Address(lab.mac(host, "eth0").expect("host mac"))
}

/// A control frame from `src` to the switch (the control MAC of the default plan).
fn control_frame(src: Address, repr: &Repr) -> Vec<u8> {
    let mut buf = vec![0u8; 256];
    let len = repr
        .emit_frame(src, ProxyMacPlan::DEFAULT.control_mac(), &mut buf)
        .expect("fits");
    buf.truncate(len.max(60));
    buf
}

/// A forged SETUP: connection id `id`, `rate` towards `dst_ip`:7000, with a boot epoch.
fn setup(request_id: u32, id: u16, rate: u64, src_ip: Ipv4Addr, dst_ip: Ipv4Addr) -> Repr {
    let mut repr = Repr::new(
        0,
        request_id,
        Message::Setup(SetupRepr {
            src_ip,
            dst_ip,
            dst_port: 7000,
            src_port: 0,
            rate,
            max_burst: 3028,
            max_packet: 1514,
            connection_id: id,
            hop_limit: 16,
        }),
    );
    repr.set_tlv(EpochTlv(0x0bad_0000_0000_0001).to_tlv());
    repr
}

/// `rtlan recv --port 7000 --json` on `host` for `seconds`.
fn receiver(lab: &Lab, host: &str, seconds: u64) -> Child {
    spawn_recv(lab, host, 7000, &["--duration", &format!("{seconds}s")])
}

/// `rtlan send --reserve --json` from `host` to `to`:7000 at `rate`, 1000-byte payloads.
fn reserved_sender(lab: &Lab, host: &str, daemon: &Daemon, to: Ipv4Addr, rate: &str) -> Child {
    let to = format!("{to}:7000");
    let socket = daemon.socket.to_str().expect("utf-8").to_string();
    lab.exec(
        host,
        &[
            env!("CARGO_BIN_EXE_rtlan"),
            "send",
            "--to",
            to.as_str(),
            "--rate",
            rate,
            "--size",
            "1000",
            "--duration",
            "4s",
            "--reserve",
            "--socket",
            socket.as_str(),
            "--json",
        ],
    )
    .expect("host")
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .expect("rtlan send starts")
}

/// The JSON a finished `rtlan send`/`recv` printed (panics with its stderr when none).
fn json_of(child: Child) -> Value {
    let out = child.wait_with_output().expect("wait");
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "no JSON ({e}): {stdout}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// The sum of `rate_bps` over the connections `switch` holds.
fn booked_bps(lab: &Lab, switch: &str) -> u64 {
    connections(lab, switch)
        .iter()
        .map(|c| c["rate_bps"].as_u64().unwrap_or(0))
        .sum()
}

/// Forged SETUPs from a host (issue: 117.8 Mbit/s booked on a 100 Mbit/s link, held by forged
/// REFRESHes; 5,000 tiny SETUPs) book at most what the host's own link may carry, a reservation
/// of another host still fits afterwards, and the attacker's forged TEARDOWNs and REFRESHes for
/// that reservation's ids reach nothing: connection ids are scoped by the link they arrive on.
#[test]
fn forged_control_from_a_host_cannot_squat_or_touch_another_hosts_reservation() {
    if !root_or_skip("forged_control_from_a_host_cannot_squat_or_touch_another_hosts_reservation") {
        return;
    }
    let _serial = rtlan_lab::serial_lock().expect("lab lock");
    let lab = up_str(&star4("rtlan"), "hsq");
    let (ip_a, ip_b, ip_c, ip_d) = (ip(&lab, "a"), ip(&lab, "b"), ip(&lab, "c"), ip(&lab, "d"));
    // The switch learns where a and b are (and their addresses) from ordinary traffic.
    ping_ok(&lab, "a", "b");
    ping_ok(&lab, "a", "d");
    let mac_c = mac(&lab, "c");

    // c forges 40 SETUPs of 10 Mbit/s towards a and d alternately, each with its own id, and
    // then 5,000 tiny ones. The two downlinks would admit 60 Mbit/s each; c's own 100 Mbit/s link
    // is what bounds it. (Booking other hosts' downlinks first-come first-served is what any
    // host may do within its own link's share, so a's reservation below goes a → b.)
    let to = move |i: u16| if i.is_multiple_of(2) { ip_a } else { ip_d };
    let mut frames: Vec<Vec<u8>> = (0..40u16)
        .map(|i| {
            let repr = setup(1 + u32::from(i), 0x20 + i, 10_000_000, ip_c, to(i));
            control_frame(mac_c, &repr)
        })
        .collect();
    frames.extend((0..5000u16).map(|i| {
        let repr = setup(100 + u32::from(i), 0x100 + i, 1_000, ip_c, to(i));
        control_frame(mac_c, &repr)
    }));
    assert_eq!(inject_all(&lab, "c", frames), 5040);
    std::thread::sleep(Duration::from_millis(500));
    let squatted = booked_bps(&lab, "s1");
    let squatted_count = connections(&lab, "s1").len();
    eprintln!("c booked {squatted} bit/s in {squatted_count} connections with forged SETUPs");

    // a reserves 30 Mbit/s to b through its daemon: it still fits.
    let daemon = Daemon::start(&lab, "a");
    let mut client = daemon.client();
    let opened = client
        .open(&rtlan_linux::rtcd::OpenParams {
            rate_bps: 30_000_000,
            ..open_params(ip_b, 7000)
        })
        .expect("a's 30 Mbit/s to b is admitted after the attack");

    // c forges TEARDOWNs and REFRESHes for every id a link could carry a's connection under.
    let forged: Vec<Vec<u8>> = (0x20..0x200u16)
        .flat_map(|id| {
            [
                control_frame(
                    mac_c,
                    &Repr::new(
                        0,
                        9000 + u32::from(id),
                        Message::Teardown { connection_id: id },
                    ),
                ),
                control_frame(
                    mac_c,
                    &Repr::new(
                        0,
                        9000 + u32::from(id),
                        Message::Refresh { connection_id: id },
                    ),
                ),
            ]
        })
        .collect();
    inject_all(&lab, "c", forged);
    std::thread::sleep(Duration::from_millis(300));
    let a_still_there = connections(&lab, "s1")
        .iter()
        .any(|c| c["rate_bps"] == 30_000_000u64);

    drop(client);
    drop(daemon);
    down_clean(lab);

    // The real-time cap is 60 % of c's 100 Mbit/s link; a SETUP's rate counts whole frames, so
    // what c holds is at most 60 Mbit/s whatever it forged (the issue measured 117.8 Mbit/s;
    // without the cap on what enters c's port, a's and d's downlinks admit 120 Mbit/s).
    assert!(
        squatted <= 60_000_000,
        "c booked {squatted} bit/s on its own 100 Mbit/s link"
    );
    assert!(
        squatted_count < 5040,
        "every forged SETUP was admitted: {squatted_count}"
    );
    assert!(opened.hops >= 1, "{opened:?}");
    assert!(
        a_still_there,
        "a's reservation was torn down by c's forged TEARDOWNs"
    );
}

/// One gratuitous ARP from the attacker claiming the receiver's address used to move it to the
/// attacker's port, so the next reservation to it was set up towards the attacker. Now the
/// switch re-probes the old owner first: b still answers, so the binding stays, the reservation
/// goes to b and b receives the whole stream.
#[test]
fn a_gratuitous_arp_from_an_attacker_does_not_steal_a_reservation() {
    if !root_or_skip("a_gratuitous_arp_from_an_attacker_does_not_steal_a_reservation") {
        return;
    }
    let _serial = rtlan_lab::serial_lock().expect("lab lock");
    let lab = up_file("default.toml", "harp");
    let ip_b = ip(&lab, "b");
    ping_ok(&lab, "a", "b");
    let mac_c = mac(&lab, "c");

    // "b's address is at c": a gratuitous ARP request and an unsolicited reply, several times.
    let claim = |operation| {
        let repr = arp::Repr {
            operation,
            source_hardware_addr: mac_c,
            source_protocol_addr: ip_b,
            target_hardware_addr: Address([0; 6]),
            target_protocol_addr: ip_b,
        };
        let mut buf = vec![0u8; 60];
        repr.emit_frame(mac_c, Address::BROADCAST, &mut buf)
            .expect("fits");
        buf
    };
    let frames = vec![claim(arp::Operation::Request), claim(arp::Operation::Reply)];
    for _ in 0..3 {
        inject_all(&lab, "c", frames.clone());
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(500));

    let daemon = Daemon::start(&lab, "a");
    let recv_b = receiver(&lab, "b", 7);
    let c_rx_before = rtlan_lab::tools::iface_counters(lab.netns("c").expect("c"), "eth0")
        .expect("counters")
        .rx_bytes;
    let send = reserved_sender(&lab, "a", &daemon, ip_b, "5mbit");
    let sent = json_of(send);
    let received = json_of(recv_b);
    let c_rx = rtlan_lab::tools::iface_counters(lab.netns("c").expect("c"), "eth0")
        .expect("counters")
        .rx_bytes
        - c_rx_before;
    let refused = ctl(&lab, "s1", "stats")["switch"]["protect"]["arp_move_refused"]
        .as_u64()
        .expect("switch.protect.arp_move_refused");
    drop(daemon);
    down_clean(lab);

    eprintln!("sent {sent}\nreceived at b {received}\nc received {c_rx} bytes; arp_move_refused {refused}");
    let sent_n = sent["sent"].as_u64().expect("sent");
    // 4 s at 5 Mbit/s of 1066-byte frames: ≈ 2,345 datagrams. The stolen path delivers none.
    assert!(sent_n > 2000, "{sent}");
    assert_eq!(
        received["packets"].as_u64(),
        Some(sent_n),
        "b must receive the whole stream"
    );
    // c sees floods and probes, never the stream: 4 s × 5 Mbit/s would be 2.5 MB.
    assert!(c_rx < 200_000, "c received {c_rx} bytes during the stream");
    assert!(refused >= 1, "the switch did not count the refused move");
}

/// The SETUP flood: ≈ 17 Mbit/s of SETUPs towards addresses nobody has, from one host,
/// took a reserved 10 Mbit/s stream down to 5.4–6.6 Mbit/s. Now the flood is policed at the
/// attacker's port and the switch's control work is budgeted, so the stream arrives whole.
#[test]
fn a_setup_flood_leaves_a_reserved_stream_whole() {
    if !root_or_skip("a_setup_flood_leaves_a_reserved_stream_whole") {
        return;
    }
    let _serial = rtlan_lab::serial_lock().expect("lab lock");
    let lab = up_file("default.toml", "hfl");
    let (ip_b, ip_c) = (ip(&lab, "b"), ip(&lab, "c"));
    ping_ok(&lab, "a", "b");
    let mac_c = mac(&lab, "c");

    // Every SETUP new (its own request id, connection id and destination in 198.18.192.0/18,
    // where nobody is), so none is answered from the duplicate store: each costs a pending
    // setup and an ARP probe.
    let make = move |i: u64| {
        let n = i as u32;
        let dst = Ipv4Addr::new(198, 18, 192 + ((n >> 8) % 64) as u8, n as u8);
        let id = 0x20 + (n % 0xff00) as u16;
        control_frame(mac_c, &setup(1 + n, id, 1_000_000, ip_c, dst))
    };
    let wire = make(0).len().max(60) as u64 + 24; // preamble, FCS, inter-frame gap
                                                  // ≈ 17 Mbit/s of whole frames, as in the issue.
    let per_ms = 17_000_000 / 8 / wire / 1000;

    let daemon = Daemon::start(&lab, "a");
    let recv_b = receiver(&lab, "b", 7);
    let flood = inject(&lab, "c", per_ms, u64::MAX, Duration::from_secs(6), make);
    std::thread::sleep(Duration::from_millis(500));
    let send = reserved_sender(&lab, "a", &daemon, ip_b, "10mbit");
    let sent = json_of(send);
    let flooded = flood.join().expect("attacker");
    let received = json_of(recv_b);
    let stats = ctl(&lab, "s1", "stats");
    drop(daemon);
    down_clean(lab);

    eprintln!(
        "flood: {flooded} SETUPs ({per_ms}/ms, {wire} B on the wire)\nsent {sent}\nreceived {received}\nswitch stats {stats}"
    );
    let sent_n = sent["sent"].as_u64().expect("sent");
    assert!(
        sent["reservation"]["conn"].is_number(),
        "the reservation was refused under the flood: {sent}"
    );
    // 4 s at 10 Mbit/s of 1066-byte frames: ≈ 4,690 datagrams.
    assert!(sent_n > 4000, "{sent}");
    // The target: ≥ 99.9 % of the reserved stream delivered under the flood (at most 4
    // of ≈ 4,690 datagrams lost). The flood was measured to cost 34–46 % of the stream before
    // the defence; a switch that let control work starve its scheduler fails by far.
    let got = received["packets"].as_u64().unwrap_or(0);
    assert!(
        got * 1000 >= sent_n * 999,
        "reserved stream under a SETUP flood: {got} of {sent_n} datagrams"
    );
}

/// a — s1 — s2 — b and c on s1, 100 Mbit/s links, both switches with `auth = true`: every link
/// gets its own key (the lab writes them, the daemons read them).
const AUTH_CHAIN: &str = "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[host]]\nname = \"c\"\n\
    [[switch]]\nname = \"s1\"\nauth = true\n[[switch]]\nname = \"s2\"\nauth = true\n\
    [[link]]\nends = [\"a\", \"s1\"]\nrate = \"100mbit\"\n\
    [[link]]\nends = [\"s1\", \"s2\"]\nrate = \"100mbit\"\n\
    [[link]]\nends = [\"s2\", \"b\"]\nrate = \"100mbit\"\n\
    [[link]]\nends = [\"c\", \"s1\"]\nrate = \"100mbit\"\n";

/// The secret of the link `a`–`b` as the lab wrote it (docs/lab.md: `auth = true`).
fn link_secret(lab: &Lab, a: &str, b: &str) -> Vec<u8> {
    let (x, y) = if a <= b { (a, b) } else { (b, a) };
    let path = lab.state_dir().join("keys").join(format!("{x}--{y}.key"));
    let hex = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let hex = hex.trim();
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex secret"))
        .collect()
}

/// `switch.auth` of `switch`'s stats.
fn auth_stats(lab: &Lab, switch: &str) -> Value {
    ctl(lab, switch, "stats")["switch"]["auth"].clone()
}

fn counter(stats: &Value, name: &str) -> u64 {
    stats[name]
        .as_u64()
        .unwrap_or_else(|| panic!("switch.auth.{name} in {stats}"))
}

/// With keys on every link (RFC 2747 after EtheReal's future work on security), the daemons and
/// switches of a lab sign and verify every control message: a 2-hop reservation opens and its
/// stream arrives whole; a host without its link's key cannot reserve; unsigned SETUPs, SETUPs
/// signed with a guessed key, and a correctly signed SETUP replayed on the link it was captured
/// on are all dropped and counted, booking nothing.
#[test]
fn with_link_keys_only_signed_fresh_control_messages_book_anything() {
    if !root_or_skip("with_link_keys_only_signed_fresh_control_messages_book_anything") {
        return;
    }
    let _serial = rtlan_lab::serial_lock().expect("lab lock");
    let lab = up_str(AUTH_CHAIN, "hau");
    let (ip_a, ip_b, ip_c) = (ip(&lab, "a"), ip(&lab, "b"), ip(&lab, "c"));
    ping_ok(&lab, "a", "b");

    // The daemon on a reads its link's key from the lab's lines and reserves over two signed
    // hops.
    let daemon = Daemon::start_with_config(&lab, "a", "");
    let recv_b = receiver(&lab, "b", 6);
    let sent = json_of(reserved_sender(&lab, "a", &daemon, ip_b, "5mbit"));
    let received = json_of(recv_b);
    assert_eq!(sent["reservation"]["hops"].as_u64(), Some(2), "{sent}");
    let sent_n = sent["sent"].as_u64().expect("sent");
    assert!(sent_n > 2000, "{sent}");
    assert_eq!(received["packets"].as_u64(), Some(sent_n), "{received}");
    for s in ["s1", "s2"] {
        let stats = auth_stats(&lab, s);
        assert!(counter(&stats, "verified") >= 3, "{s}: {stats}");
        assert!(counter(&stats, "signed") >= 3, "{s}: {stats}");
    }
    drop(daemon);

    // c's daemon has no key: its SETUPs are dropped unsigned, it never gets an answer.
    let before = auth_stats(&lab, "s1");
    let daemon_c = Daemon::start(&lab, "c");
    let socket = daemon_c.socket.to_str().expect("utf-8").to_string();
    let to = format!("{ip_a}:7000");
    let refused = lab
        .exec(
            "c",
            &[
                env!("CARGO_BIN_EXE_rtlan"),
                "reserve",
                "--to",
                to.as_str(),
                "--rate",
                "1mbit",
                "--socket",
                socket.as_str(),
                "--json",
            ],
        )
        .expect("host")
        .output()
        .expect("rtlan reserve runs");
    drop(daemon_c);
    assert!(
        !refused.status.success(),
        "c reserved without a key: {refused:?}"
    );
    let after = auth_stats(&lab, "s1");
    assert!(
        counter(&after, "unsigned_dropped") > counter(&before, "unsigned_dropped"),
        "{after}"
    );

    // Forged SETUPs from c: unsigned, then signed with a guessed secret under key id 1.
    let mac_c = mac(&lab, "c");
    let unsigned = (0..20u32)
        .map(|i| {
            control_frame(
                mac_c,
                &setup(100 + i, 0x40 + i as u16, 1_000_000, ip_c, ip_b),
            )
        })
        .collect();
    let guessed = (0..20u32)
        .map(|i| {
            let mut repr = setup(200 + i, 0x60 + i as u16, 1_000_000, ip_c, ip_b);
            rtlan_wire::control::auth::sign(&mut repr, 1, 1_000 + u64::from(i), &[0x5a; 32], mac_c)
                .expect("signs");
            control_frame(mac_c, &repr)
        })
        .collect();
    let before = auth_stats(&lab, "s1");
    inject_all(&lab, "c", unsigned);
    inject_all(&lab, "c", guessed);
    std::thread::sleep(Duration::from_millis(300));
    let after = auth_stats(&lab, "s1");
    assert!(
        counter(&after, "unsigned_dropped") - counter(&before, "unsigned_dropped") >= 20,
        "{after}"
    );
    assert!(
        counter(&after, "bad_digest") - counter(&before, "bad_digest") >= 20,
        "{after}"
    );

    // On a's link, a SETUP signed with that link's key (as a captured frame would be) is
    // accepted once; the same bytes again are a replay.
    let secret = link_secret(&lab, "a", "s1");
    let mac_x = Address([0x02, 0xee, 0, 0, 0, 1]);
    let mut repr = setup(300, 0x80, 1_000_000, ip_a, ip_b);
    let seq = u64::MAX / 2;
    rtlan_wire::control::auth::sign(&mut repr, 1, seq, &secret, mac_x).expect("signs");
    let frame = control_frame(mac_x, &repr);
    let authentic =
        |c: &Value| c["in_port"].as_u64() == Some(0) && c["in_id"].as_u64() == Some(0x80);
    let before = auth_stats(&lab, "s1");
    inject_all(&lab, "a", vec![frame.clone()]);
    let (accepted, _) = wait_until(Duration::from_secs(2), || {
        connections(&lab, "s1").iter().any(authentic)
    });
    let middle = auth_stats(&lab, "s1");
    inject_all(&lab, "a", vec![frame.clone(), frame]);
    std::thread::sleep(Duration::from_millis(300));
    let after = auth_stats(&lab, "s1");
    let booked = connections(&lab, "s1");
    down_clean(lab);

    // (HELLOs between the switches are verified all along: count the replays, not verified.)
    assert!(accepted, "the authentic SETUP was not installed: {middle}");
    assert_eq!(
        counter(&middle, "replayed"),
        counter(&before, "replayed"),
        "{middle}"
    );
    assert_eq!(
        counter(&after, "replayed") - counter(&middle, "replayed"),
        2,
        "{after}"
    );
    assert_eq!(
        booked.iter().filter(|c| authentic(c)).count(),
        1,
        "{booked:?}"
    );
    // Nothing entering on c's port (p2: the fourth link, s1's third) was booked.
    assert!(
        booked.iter().all(|c| c["in_port"].as_u64() != Some(2)),
        "{booked:?}"
    );
}
