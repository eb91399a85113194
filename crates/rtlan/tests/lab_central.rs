//! Lab test of central admission (issue 5 item 3; seed 004 §3.2 "Admission process", seed 001
//! §3.2): host daemons on `admission = "central"` ask a real `rtlan bwm` over TCP through an
//! off-the-shelf switch (the Linux bridge), applications send plainly to the receiver's own
//! address shaped by the §3 token bucket, refusals (capacity, delay) come back to the
//! application, the manager's bound equals `rtlan analyze`'s, and closing gives the booking back.

mod common;

use std::process::Output;
use std::time::Duration;

use common::*;
use rtlan::labkit::{Guarded, Receiver};
use rtlan::rttr::pace::TokenPacer;
use rtlan_lab::Lab;
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_rtlan");

/// The manager's network file for the lab: one switch with `buffer`, a link `rate` (tc units;
/// the bounds use 98.6 % of it, the effective rate of full frames) to each of `hosts`, the
/// hosts' addresses, and `flows` (for `rtlan analyze`).
fn netfile(lab: &Lab, hosts: &[&str], rate_mbit: u32, buffer: &str, flows: &str) -> String {
    let mut text = format!("[[switch]]\nname = \"s1\"\nt_mux = \"50us\"\nbuffer = \"{buffer}\"\n");
    let effective_kbit = rate_mbit * 986;
    for h in hosts {
        text.push_str(&format!(
            "[[host]]\nname = \"{h}\"\nip = \"{}\"\n[[link]]\nends = [\"{h}\", \"s1\"]\nrate = \"{rate_mbit}mbit\"\neffective_rate = \"{effective_kbit}kbit\"\n",
            ip(lab, h)
        ));
    }
    text.push_str(flows);
    text
}

/// [`netfile`] of the four-host bridge topology (100 Mbit/s links, 128 KiB).
fn network(lab: &Lab, flows: &str) -> String {
    netfile(lab, &["a", "b", "c", "d"], 100, "128KiB", flows)
}

/// `rtlan analyze`'s end-to-end bound (µs, rounded up as the manager rounds) of flow `name`
/// from `host` to b with `rate` and `burst`, beside the manager's standing reservation a → b.
fn analyze_bound(lab: &Lab, host: &str, rate: &str, burst: u64) -> u64 {
    let flows = format!(
        "[[flow]]\nname = \"std\"\npath = [\"a\", \"s1\", \"b\"]\nrate = \"64kbit\"\nmax_packet = 1514\nburst = \"3028B\"\nhost_delay = \"80us\"\n\
         [[flow]]\nname = \"x\"\npath = [\"{host}\", \"s1\", \"b\"]\nrate = \"{rate}\"\nmax_packet = 1514\nburst = \"{burst}B\"\nhost_delay = \"80us\"\n"
    );
    let file = lab.state_dir().join(format!("analyze-{host}.toml"));
    std::fs::write(&file, network(lab, &flows)).expect("write analyze file");
    let out = std::process::Command::new(BIN)
        .args(["analyze", file.to_str().expect("utf-8"), "--json"])
        .output()
        .expect("rtlan analyze runs");
    let analysis: Value = serde_json::from_slice(&out.stdout).expect("analyze prints JSON");
    analysis["flows"]
        .as_array()
        .and_then(|f| f.iter().find(|f| f["name"] == "x"))
        .and_then(|f| f["delay_bound_us"].as_f64())
        .map(|us| us.ceil() as u64)
        .unwrap_or_else(|| panic!("flow x not analysed: {analysis}"))
}

/// Starts `rtlan bwm` on host a with network file `text`, listening on `listen`, and waits until
/// it listens.
fn start_bwm(lab: &Lab, text: &str, listen: &str, extra: &[&str]) -> Guarded {
    let netfile = lab.state_dir().join("network.toml");
    std::fs::write(&netfile, text).expect("write network file");
    let state = lab.state_dir().join("bwm-state.json");
    let mut args = vec![
        BIN,
        "bwm",
        "--network",
        netfile.to_str().expect("utf-8"),
        "--listen",
        listen,
        "--state",
        state.to_str().expect("utf-8"),
    ];
    args.extend_from_slice(extra);
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let bwm = rtlan::labkit::spawn(lab, "a", &args, "rtlan bwm".into()).expect("bwm starts");
    let port = listen.rsplit(':').next().expect("IP:PORT");
    let (up, _) = wait_until(Duration::from_secs(5), || {
        exec_ok(lab, "a", &["ss", "-ltn"]).contains(&format!(":{port}"))
    });
    assert!(up, "bwm listens");
    bwm
}

/// `rtlan bwmctl --manager ADDR --json WHAT…` run on host a: the manager's reply.
fn bwmctl(lab: &Lab, manager: &str, what: &[&str]) -> Value {
    let mut args = vec![BIN, "bwmctl", "--manager", manager, "--json"];
    args.extend_from_slice(what);
    let out = lab
        .exec("a", &args)
        .expect("host exists")
        .output()
        .expect("rtlan bwmctl runs");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("bwmctl printed {out:?}"))
}

/// The guaranteed bookings the manager lists.
fn guaranteed(lab: &Lab, manager: &str) -> Vec<Value> {
    let v = bwmctl(lab, manager, &["list"]);
    v["connections"]
        .as_array()
        .unwrap_or_else(|| panic!("no connections in {v}"))
        .iter()
        .filter(|c| c["kind"] == "guaranteed")
        .cloned()
        .collect()
}

/// `rtlan reserve` on `host` through its daemon; returns the process output.
fn reserve(lab: &Lab, host: &str, to: &str, extra: &[&str]) -> Output {
    let socket = lab.state_dir().join(format!("rtcd-{host}.sock"));
    let socket = socket.to_str().expect("utf-8 state dir").to_string();
    let mut args = vec![
        BIN,
        "reserve",
        "--to",
        to,
        "--socket",
        &socket,
        "--duration",
        "300ms",
        "--json",
    ];
    args.extend_from_slice(extra);
    lab.exec(host, &args)
        .expect("host exists")
        .output()
        .expect("rtlan reserve runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The `--json` line of a successful `rtlan reserve`.
fn admitted(o: &Output) -> Value {
    assert!(o.status.success(), "reserve failed: {}", stderr(o));
    serde_json::from_slice(&o.stdout).expect("reserve prints JSON")
}

#[test]
fn central_admission_through_an_off_the_shelf_switch() {
    if !root_or_skip("central_admission_through_an_off_the_shelf_switch") {
        return;
    }
    let _serial = rtlan_lab::serial_lock().expect("lab lock");
    let lab = up_str(&star4("linux-bridge"), "cen");
    let (a_ip, b_ip) = (ip(&lab, "a"), ip(&lab, "b"));
    let manager = format!("{a_ip}:7470");
    let central = format!(
        "admission = \"central\"\nmanager = \"{manager}\"\nrealtime_cap_percent = 100\nmanager_timeout = \"1s\"\nrefresh_period = \"500ms\""
    );
    let dc = Daemon::start_with_config(&lab, "c", &central);
    let dd = Daemon::start_with_config(&lab, "d", &central);

    // No manager yet: the open fails promptly with `manager_unreachable`, nothing is left.
    let to_b = format!("{b_ip}:5005");
    let o = reserve(&lab, "d", &to_b, &["--rate", "1mbit"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("manager_unreachable"), "{}", stderr(&o));

    // Leases of 2 s (the daemons refresh every 500 ms): a crashed daemon's bookings go soon.
    let bwm = start_bwm(
        &lab,
        &network(&lab, ""),
        &manager,
        &["--manager-host", "a", "--lease", "2s"],
    );

    // A lone 20 Mbit/s connection: its bound is `rtlan analyze`'s for the same flows (with the
    // manager's standing reservation a → b on the same port).
    let o = reserve(&lab, "d", &to_b, &["--rate", "20mbit", "--burst", "3028"]);
    let lone = admitted(&o);
    assert_eq!(lone["proxy_ip"], Value::from(b_ip.to_string()), "{lone}");
    assert_eq!(
        lone["proxy_mac"],
        Value::Null,
        "no proxy on central admission"
    );
    assert_eq!(lone["hops"], 1);
    let expect = analyze_bound(&lab, "d", "20mbit", 3028);
    assert_eq!(lone["delay_bound_us"].as_u64(), Some(expect), "{lone}");

    // Kernel shaping of a central connection: the HTB filter matches the receiver's address and
    // the UDP destination port (several connections may go to one receiver).
    let socket_d = dd.socket.to_str().expect("utf-8").to_string();
    let shaped: Vec<String> = [
        BIN,
        "reserve",
        "--to",
        &to_b,
        "--rate",
        "10mbit",
        "--shaping",
        "kernel",
        "--socket",
        &socket_d,
        "--duration",
        "3s",
        "--json",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let shaped = rtlan::labkit::spawn(&lab, "d", &shaped, "kernel-shaped reserve".into())
        .expect("reserve starts");
    // 5005 = 0x138d at offset 20 (the UDP destination port behind a 20-byte IP header).
    let (filtered, _) = wait_until(Duration::from_secs(3), || {
        exec_ok(&lab, "d", &["tc", "filter", "show", "dev", "eth0"]).contains("0000138d/0000ffff")
    });
    assert!(filtered, "no port-matching HTB filter on d");
    drop(shaped);

    // c sends 40 Mbit/s through the §3 token bucket (Ts = 1 ms), reserved centrally.
    let recv = Receiver::start(BIN.as_ref(), &lab, "b", 5004, Duration::from_secs(7), &[])
        .expect("recv starts");
    std::thread::sleep(Duration::from_millis(300));
    let to_c = format!("{b_ip}:5004");
    let socket_c = dc.socket.to_str().expect("utf-8").to_string();
    let send_args: Vec<String> = [
        BIN,
        "send",
        "--to",
        &to_c,
        "--rate",
        "40mbit",
        "--size",
        "1472",
        "--duration",
        "4s",
        "--reserve",
        "--socket",
        &socket_c,
        "--shaping",
        "token",
        "--shaping-interval",
        "1ms",
        // A real-time application: above normal processes, below the daemons (20).
        "--realtime-priority",
        "10",
        "--json",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let sender =
        rtlan::labkit::spawn(&lab, "c", &send_args, "rtlan send on c".into()).expect("send starts");
    std::thread::sleep(Duration::from_millis(1000));
    // While c holds 40 Mbit/s of b's port, 70 more do not fit (98.6 Mbit/s effective) ...
    let o = reserve(&lab, "d", &to_b, &["--rate", "70mbit"]);
    assert!(!o.status.success(), "70 Mbit/s must be refused beside 40");
    let e = stderr(&o);
    assert!(
        e.contains("manager_refused") && e.contains("capacity"),
        "{e}"
    );
    // ... and a 100 µs requirement cannot be met behind c's bucket.
    let o = reserve(&lab, "d", &to_b, &["--rate", "20mbit", "--delay", "100us"]);
    assert!(!o.status.success(), "a 100 µs bound is impossible here");
    let e = stderr(&o);
    assert!(e.contains("manager_refused") && e.contains("delay"), "{e}");
    // The manager holds exactly c's booking, with the bucket RTTR's token bucket asked for.
    let held = guaranteed(&lab, &manager);
    assert_eq!(held.len(), 1, "{held:?}");
    assert_eq!(
        (&held[0]["src"], &held[0]["dst"], &held[0]["burst_bytes"]),
        (&Value::from("c"), &Value::from("b"), &Value::from(6538)),
        "{held:?}"
    );
    let (out, ok) = sender.finish(Duration::from_secs(15)).expect("send ends");
    assert!(ok, "send failed: {out}");
    let summary: Value = serde_json::from_str(out.trim()).expect("send prints JSON");
    let r = &summary["reservation"];
    assert_eq!(r["proxy_ip"], Value::from(b_ip.to_string()), "{summary}");
    // c's bucket: b = r·Ts + M in wire bytes, what RTTR's token bucket lets out back to back.
    let b = TokenPacer::with_shaping_interval(40_000_000, Duration::from_millis(1), 1472)
        .expect("valid")
        .burst_bytes();
    assert_eq!(b, 5_000 + 1_538);
    assert_eq!(
        r["delay_bound_us"].as_u64(),
        Some(analyze_bound(&lab, "c", "40mbit", b)),
        "{summary}"
    );
    let report = recv.report().expect("recv report");
    let wire = report["wire_bps"].as_f64().expect("wire_bps");
    // The token bucket releases r·Ts per wake-up. A wake-up late by δ is made good from the
    // bucket only up to M / r = 0.31 ms (b = r·Ts + M, seed 004 §3.1); beyond that the tokens
    // overflow the full bucket and the rate is lost — the price of conforming to (r, b). CI
    // once delivered 38.5 Mbit/s here, 3.7 % short; this machine idle shows 2 % (a 1 ms
    // sleep is 60 µs late at the median, 3.6 ms at p99.9). So the shaper must account for
    // every token instead: sent + lost (forfeited while a datagram waited, unused while the
    // sender was held up elsewhere; the offering pacer's forfeit is within the shaper's
    // unused) = the bucket it started with + r·elapsed, within one bucket and two datagrams
    // (tokens left at the end, the last wake-up), 0.05 % of the 20 MB a 4 s run earns. A
    // shaper that lost, doubled or miscounted tokens misses this by far.
    let sent_n = summary["sent"].as_u64().expect("sent");
    let counter = |name: &str| {
        summary["shaper"][name]
            .as_u64()
            .unwrap_or_else(|| panic!("the token bucket reports {name}: {summary}"))
    };
    let lost = counter("forfeited_wire_bytes") + counter("unused_wire_bytes");
    let earned = 40e6 / 8.0 * summary["elapsed_s"].as_f64().expect("elapsed");
    let accounted = (sent_n * 1538 + lost) as f64;
    let slack = (b + 2 * 1538) as f64;
    eprintln!("c sent {sent_n} datagrams, lost {lost} B of rate, earned {earned:.0} B");
    assert!(
        accounted <= earned + slack && accounted >= earned - slack,
        "sent + lost {accounted} B vs earned {earned:.0} B ± {slack}: {summary}"
    );
    // A run this loaded says nothing about shaping: stop rather than pass on 80 % of a stream.
    assert!(
        (lost as f64) < 0.2 * earned,
        "c's sender starved, {lost} B of rate lost: {summary}"
    );
    // Every datagram arrived, never above the rate (1 %: the bucket b at the start of 4 s).
    assert_eq!(report["lost"].as_u64(), Some(0), "{report}");
    assert_eq!(report["packets"].as_u64(), Some(sent_n), "{report}");
    assert!(wire < 40.4e6, "delivered {wire} bit/s: {report}");
    assert!(
        proxy_neighbours(&lab, "c").is_empty(),
        "no proxy entries on c"
    );
    assert!(!has_proxy_route(&lab, "c"));

    // c's booking went back to the manager when it closed: now 70 Mbit/s fit.
    assert!(
        guaranteed(&lab, &manager).is_empty(),
        "c's booking released"
    );
    let o = reserve(&lab, "d", &to_b, &["--rate", "70mbit"]);
    let big = admitted(&o);
    assert!(big["delay_bound_us"].as_u64().is_some(), "{big}");

    // Soft state: d holds 70 Mbit/s and its daemon crashes (SIGKILL: no release). The manager
    // keeps the booking while the lease runs, then frees it.
    let mut dd = dd;
    let socket_d = dd.socket.to_str().expect("utf-8").to_string();
    let hold: Vec<String> = [
        BIN,
        "reserve",
        "--to",
        &to_b,
        "--rate",
        "70mbit",
        "--socket",
        &socket_d,
        "--duration",
        "60s",
        "--json",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let holder = rtlan::labkit::spawn(&lab, "d", &hold, "rtlan reserve on d".into())
        .expect("reserve starts");
    std::thread::sleep(Duration::from_millis(1500));
    let o = reserve(&lab, "c", &to_c, &["--rate", "40mbit"]);
    assert!(!o.status.success(), "d's 70 Mbit/s are booked");
    signal(dd.child.id(), libc::SIGKILL);
    let _ = dd.child.wait();
    let killed = std::time::Instant::now();
    let (freed, took) = wait_until(Duration::from_secs(6), || {
        reserve(&lab, "c", &to_c, &["--rate", "40mbit"])
            .status
            .success()
    });
    assert!(freed, "the crashed daemon's booking was never released");
    // Not before the 2 s lease (minus the time since its last refresh, at most 500 ms).
    assert!(
        killed.elapsed() >= Duration::from_millis(1400),
        "released too early: {took:?}"
    );
    drop(holder);
    drop::<Guarded>(bwm);
    drop((dc, dd));
    down_clean(lab);
}

#[test]
fn both_books_at_the_manager_then_per_hop_through_rtlan() {
    if !root_or_skip("both_books_at_the_manager_then_per_hop_through_rtlan") {
        return;
    }
    let _serial = rtlan_lab::serial_lock().expect("lab lock");
    let lab = up_file("default.toml", "cb");
    let (a_ip, c_ip) = (ip(&lab, "a"), ip(&lab, "c"));
    // The manager's network describes s1 as what it is, an rtlan switch with the default
    // (cyclic) scheduler and 100 Mbit/s links, so the manager books with the switch's own
    // service curves and its bound must equal the switch's (docs/bwm.md, docs/delay.md §6).
    let mut text = "[[switch]]\nname = \"s1\"\nscheduler = \"cyclic\"\n".to_string();
    for h in ["a", "b", "c"] {
        text.push_str(&format!(
            "[[host]]\nname = \"{h}\"\nip = \"{}\"\n[[link]]\nends = [\"{h}\", \"s1\"]\nrate = \"100mbit\"\n",
            ip(&lab, h)
        ));
    }
    let manager = format!("{a_ip}:7470");
    let bwm = start_bwm(&lab, &text, &manager, &[]);
    let both = format!("admission = \"both\"\nmanager = \"{manager}\"");
    let db = Daemon::start_with_config(&lab, "b", &both);
    let to_c = format!("{c_ip}:5004");

    // Within the host's 60 Mbit/s of frames, but 100-byte frames cost 124 bytes on the wire:
    // 62 Mbit/s of wire, whose cycle work (quota + one frame per 10 ms cycle) is above the cyclic
    // port's budget U·C·T — which the manager books exactly as the switch does, so it refuses
    // first and no SETUP goes out.
    let o = reserve(
        &lab,
        "b",
        &to_c,
        &["--rate", "50mbit", "--max-packet", "100"],
    );
    assert!(!o.status.success(), "62 Mbit/s of wire is above the cap");
    let e = stderr(&o);
    assert!(
        e.contains("manager_refused") && e.contains("cycle_work"),
        "{e}"
    );
    assert!(
        connections(&lab, "s1").is_empty(),
        "no SETUP after a refusal"
    );

    // Admitted by both: proxy IP and MAC from the switches, the bound from the manager; while
    // held, the switch has the connection and the manager the booking.
    let socket = db.socket.to_str().expect("utf-8").to_string();
    let held = lab
        .exec(
            "b",
            &[
                BIN,
                "reserve",
                "--to",
                &to_c,
                "--rate",
                "10mbit",
                "--socket",
                &socket,
                "--duration",
                "2s",
                "--json",
            ],
        )
        .expect("host exists")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("reserve runs");
    let held = Guarded::from_child(held, "rtlan reserve on b");
    let (open, _) = wait_until(Duration::from_secs(5), || {
        connections(&lab, "s1").len() == 1
    });
    assert!(open, "the switch holds the connection");
    let held_bookings = guaranteed(&lab, &manager);
    assert_eq!(held_bookings.len(), 1, "{held_bookings:?}");
    let manager_bound = held_bookings[0]["delay_bound_us"].as_u64();
    let (out, ok) = held.finish(Duration::from_secs(10)).expect("reserve ends");
    assert!(ok, "reserve failed: {out}");
    let v: Value = serde_json::from_str(out.trim()).expect("reserve prints JSON");
    assert!(
        v["proxy_ip"]
            .as_str()
            .is_some_and(|p| p.starts_with("198.19.")),
        "{v}"
    );
    assert!(v["proxy_mac"].is_string(), "{v}");
    // The daemon reports the larger of the switch's BOUND and the manager's bound; the manager
    // listed its own while the booking was held — the two agree.
    let bound = v["delay_bound_us"].as_u64().expect("a bound");
    assert_eq!(
        Some(bound),
        manager_bound,
        "the daemon's bound is the manager's"
    );
    // Released on both sides: the switch table is empty and a new connection is admitted.
    let (gone, _) = wait_until(Duration::from_secs(5), || {
        connections(&lab, "s1").is_empty()
    });
    assert!(gone, "TEARDOWN reached the switch");
    let o = reserve(&lab, "b", &to_c, &["--rate", "25mbit"]);
    admitted(&o);
    drop(bwm);
    drop(db);
    down_clean(lab);
}
