//! Bad scenarios are refused with `file:line:column`, never a panic.

mod common;

use rtlan_sim::Scenario;

fn error(text: &str) -> String {
    match Scenario::from_str(text, "bad.toml") {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn errors_name_file_line_and_column() {
    let base = common::star("");
    let lines = base.lines().count();
    let e = error(&common::star(
        "[sim]\nduration = \"1s\"\n\n[[traffic]]\nsrc = \"a\"\ndst = \"zz\"\nkind = \"constant\"\nrate = \"1mbit\"\n",
    ));
    assert!(e.starts_with(&format!("bad.toml:{}:7:", lines + 6)), "{e}");
    assert!(e.contains("`zz` is not a host"), "{e}");

    let e = error(&common::star(
        "[sim]\nduration = \"1s\"\n\n[[traffic]]\nsrc = \"a\"\ndst = \"d\"\nkind = \"constant\"\nrate = \"fast\"\n",
    ));
    assert!(e.starts_with(&format!("bad.toml:{}:", lines + 8)), "{e}");

    let e = error(&common::star("[sim]\nduration = \"1s\"\nwarmup = \"2s\"\n"));
    assert!(e.starts_with(&format!("bad.toml:{}:", lines + 3)), "{e}");

    let e = error(&common::star("[sim]\nduration = \"1s\"\nbogus = 1\n"));
    assert!(e.starts_with("bad.toml:"), "{e}");
    assert!(e.contains("bogus"), "{e}");

    let e = error(&common::star(""));
    assert!(e.contains("[sim]"), "{e}");

    let e = error("[sim]\nduration = \"1s\"\n\n[[hots]]\nname = \"a\"\n");
    assert!(e.starts_with("bad.toml:4:"), "{e}");
}

#[test]
fn a_link_without_rate_is_refused_where_it_is() {
    let text = "[[host]]\nname = \"a\"\n\n[[host]]\nname = \"b\"\n\n[[switch]]\nname = \"s1\"\nkind = \"rtlan\"\n\n[[link]]\nends = [\"a\", \"s1\"]\nrate = \"1gbit\"\n\n[[link]]\nends = [\"b\", \"s1\"]\n\n[sim]\nduration = \"1s\"\n";
    let e = error(text);
    assert!(e.starts_with("bad.toml:15:"), "{e}");
    assert!(e.contains("rate"), "{e}");
}

/// A link's propagation delay is the topology model's `[[link]] delay`; `[sim] link_delay` only
/// fills in links that do not write one.
#[test]
fn link_delay_comes_from_the_topology_model() {
    let text = "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[switch]]\nname = \"s1\"\n\
        [[link]]\nends = [\"a\", \"s1\"]\nrate = \"100mbit\"\ndelay = \"5us\"\n\
        [[link]]\nends = [\"b\", \"s1\"]\nrate = \"100mbit\"\n\
        [sim]\nduration = \"1s\"\nlink_delay = \"2us\"\n";
    let scenario = Scenario::from_str(text, "delay.toml").expect("valid scenario");
    assert_eq!(
        scenario.link_delays,
        [
            std::time::Duration::from_micros(5),
            std::time::Duration::from_micros(2)
        ]
    );
}

/// A burst source needs `frames`, a phase below its period, and `frames`/`phase` belong to burst
/// sources only; each mistake is reported where it is.
#[test]
fn burst_sources_are_checked_where_they_are_written() {
    let base = common::star("");
    let lines = base.lines().count();
    let traffic = |extra: &str| {
        common::star(&format!(
            "[sim]\nduration = \"1s\"\n\n[[traffic]]\nsrc = \"a\"\ndst = \"d\"\nrate = \"8mbit\"\nsize = 934\n{extra}"
        ))
    };
    let e = error(&traffic("kind = \"burst\"\n"));
    assert!(e.starts_with(&format!("bad.toml:{}:", lines + 4)), "{e}");
    assert!(e.contains("needs `frames`"), "{e}");

    // 4 datagrams of 1000 wire bytes at 8 Mbit/s: a 4 ms period.
    let e = error(&traffic("kind = \"burst\"\nframes = 4\nphase = \"4ms\"\n"));
    assert!(e.starts_with(&format!("bad.toml:{}:9:", lines + 11)), "{e}");
    assert!(e.contains("below the burst period (4ms"), "{e}");

    let e = error(&traffic("kind = \"burst\"\nframes = 0\n"));
    assert!(
        e.starts_with(&format!("bad.toml:{}:10:", lines + 10)),
        "{e}"
    );

    let e = error(&traffic("kind = \"constant\"\nframes = 4\n"));
    assert!(
        e.starts_with(&format!("bad.toml:{}:10:", lines + 10)),
        "{e}"
    );
    assert!(e.contains("for burst sources"), "{e}");

    let ok = common::parse(&traffic(
        "kind = \"burst\"\nframes = 4\nphase = \"3999us\"\n",
    ));
    assert_eq!(
        ok.traffic[0].kind,
        rtlan_sim::scenario::SourceKind::Burst {
            frames: 4,
            phase: std::time::Duration::from_micros(3999)
        }
    );
}

const GENERATE: &str = "[sim]\nduration = \"1s\"\n\n[generate]\nkind = \"leaf-spine\"\nleaves = 2\nhosts_per_leaf = 2\nspines = 1\nhost_rate = \"100mbit\"\nleaf_rate = \"1gbit\"\nspine_rate = \"1gbit\"\nreserved = 4\nreserved_size = 200\nfloods = 1\n";

/// The generator's scheduler, flood kind, burst and host-delay options are checked where they are
/// written, and do what they say: switch options on every switch, `host_delay` on every host,
/// aligned burst sources whose bucket holds the whole burst, greedy sources after the rest.
#[test]
fn generator_options_are_checked_and_applied() {
    let e = error(&format!("{GENERATE}scheduler = \"fifo\"\n"));
    assert!(e.starts_with("bad.toml:15:13:"), "{e}");
    let e = error(&format!("{GENERATE}flood_kind = \"bursty\"\n"));
    assert!(e.starts_with("bad.toml:15:14:"), "{e}");
    let e = error(&format!("{GENERATE}reserved_burst = 0\n"));
    assert!(e.starts_with("bad.toml:15:18:"), "{e}");
    let e = error(&format!("{GENERATE}host_delay = \"soon\"\n"));
    assert!(e.starts_with("bad.toml:15:14:"), "{e}");
    assert!(e.contains("host_delay"), "{e}");

    let plain = common::parse(GENERATE);
    let text = format!(
        "{GENERATE}scheduler = \"wheel\"\nlateness_budget = \"0us\"\nreserved_burst = 3\nflood_kind = \"constant\"\ngreedy = 2\nhost_delay = \"124us\"\n"
    );
    let s = common::parse(&text);
    for h in &s.topology.hosts {
        assert_eq!(
            h.host_delay,
            Some(std::time::Duration::from_micros(124)),
            "{}",
            h.name
        );
    }
    assert!(plain.topology.hosts.iter().all(|h| h.host_delay.is_none()));
    for sw in &s.topology.switches {
        let rtlan_topology::SwitchKind::Rtlan(o) = &sw.kind else {
            panic!("{} is not rtlan", sw.name);
        };
        assert_eq!(o.scheduler, Some(rtlan_topology::SchedulerKind::Wheel));
        assert_eq!(o.lateness_budget, Some(std::time::Duration::ZERO));
    }
    use rtlan_sim::scenario::SourceKind;
    assert_eq!(s.traffic.len(), plain.traffic.len() + 2);
    for (t, p) in s.traffic.iter().zip(&plain.traffic).take(4) {
        assert_eq!((t.src, t.dst), (p.src, p.dst), "same random receivers");
        assert_eq!(
            t.kind,
            SourceKind::Burst {
                frames: 3,
                phase: std::time::Duration::ZERO
            }
        );
        // 3 frames of 200 + 66 wire bytes.
        assert_eq!(t.reserve.map(|r| r.burst), Some(798));
    }
    assert_eq!(s.traffic[4].kind, SourceKind::Constant, "the flood");
    assert_eq!(
        (s.traffic[4].src, s.traffic[4].dst),
        (plain.traffic[4].src, plain.traffic[4].dst)
    );
    assert!(s.traffic[5..].iter().all(|t| t.kind == SourceKind::Greedy));
}

#[test]
fn bad_sessions_name_file_line_and_column() {
    // a — r1 — b: two segments.
    let base = "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[router]]\nname = \"r1\"\n\
                [[link]]\nends = [\"a\", \"r1\"]\nrate = \"1gbit\"\n\
                [[link]]\nends = [\"r1\", \"b\"]\nrate = \"1gbit\"\n\
                [sim]\nduration = \"10s\"\n";
    let lines = base.lines().count();
    let sessions = |body: &str| format!("{base}[[sessions]]\nsrc = \"a\"\ndst = \"b\"\n{body}");
    let ok = sessions("count = 10\nreserve = { rate = \"8kbit\" }\n");
    let parsed = Scenario::from_str(&ok, "ok.toml").expect("valid sessions");
    assert_eq!(parsed.sessions[0].count, 10);
    assert_eq!(parsed.sessions[0].port, 10_000);

    let e = error(&sessions("count = 0\nreserve = { rate = \"8kbit\" }\n"));
    assert!(e.starts_with(&format!("bad.toml:{}:9:", lines + 4)), "{e}");
    assert!(e.contains("`count` must be above 0"), "{e}");

    let e = error(&sessions(
        "count = 100\nport = 65500\nreserve = { rate = \"8kbit\" }\n",
    ));
    assert!(e.starts_with(&format!("bad.toml:{}:8:", lines + 5)), "{e}");
    assert!(e.contains("≤ 65535"), "{e}");

    let e = error(&sessions(
        "count = 10\nreserve = { rate = \"8kbit\" }\nspread = \"10s\"\n",
    ));
    assert!(e.starts_with(&format!("bad.toml:{}:", lines + 6)), "{e}");

    let two = format!(
        "{}[[sessions]]\nsrc = \"a\"\ndst = \"b\"\ncount = 5\nport = 10005\nreserve = {{ rate = \"8kbit\" }}\n",
        ok
    );
    let e = error(&two);
    assert!(e.starts_with(&format!("bad.toml:{}:8:", lines + 10)), "{e}");
    assert!(
        e.contains("overlap those of sessions `a→b sessions`"),
        "{e}"
    );

    // Two hosts of one segment signal EtheReal, not RSVP.
    let flat = "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[switch]]\nname = \"s1\"\n\
                [[link]]\nends = [\"a\", \"s1\"]\nrate = \"1gbit\"\n\
                [[link]]\nends = [\"s1\", \"b\"]\nrate = \"1gbit\"\n\
                [sim]\nduration = \"10s\"\n\
                [[sessions]]\nsrc = \"a\"\ndst = \"b\"\ncount = 1\nreserve = { rate = \"8kbit\" }\n";
    let e = error(flat);
    assert!(e.contains("need a router between"), "{e}");
    assert!(e.starts_with("bad.toml:"), "{e}");
}

#[test]
fn the_rsvp_service_is_guaranteed_or_controlled_load() {
    use rtlan_core::rtcd::RsvpService;
    let read = |line: &str| {
        Scenario::from_str(
            &common::star(&format!("[sim]\nduration = \"1s\"\n{line}")),
            "s.toml",
        )
    };
    assert_eq!(
        read("").expect("valid").sim.rsvp_service,
        RsvpService::Guaranteed
    );
    assert_eq!(
        read("rsvp_service = \"controlled-load\"\n")
            .expect("valid")
            .sim
            .rsvp_service,
        RsvpService::ControlledLoad
    );
    let e = error(&common::star(
        "[sim]\nduration = \"1s\"\nrsvp_service = \"best-effort\"\n",
    ));
    assert!(
        e.starts_with("bad.toml:") && e.contains("rsvp_service"),
        "{e}"
    );
}
