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
