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
