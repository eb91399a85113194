//! The event reader (`events.rs`) against the general reader (toml's `DeTable` and serde): the
//! files it takes come out exactly as the general reader reads them, spans included, and it
//! steps aside for everything else.

use proptest::prelude::*;

use super::events;
use super::parse::{read_general, Locator};

/// The general reader's tables for `text`, as text (spans included), or its error.
fn general(text: &str) -> Result<String, String> {
    let loc = Locator::new(text, "t.toml");
    read_general(text, &loc, &[])
        .map(|raw| format!("{raw:?}"))
        .map_err(|e| e.to_string())
}

/// The event reader takes `text` and agrees with the general reader.
#[track_caller]
fn taken(text: &str) {
    let Some(raw) = events::read(text) else {
        panic!("the event reader stepped aside for {text:?}");
    };
    assert_eq!(Ok(format!("{raw:?}")), general(text), "{text:?}");
}

/// The event reader steps aside for `text`.
#[track_caller]
fn left(text: &str) {
    assert!(events::read(text).is_none(), "taken: {text:?}");
}

#[test]
fn a_generated_network_file_is_taken() {
    // The shape of tools/dnc/gen-network's output.
    taken(
        "# gen-network leafspine 2\n[[switch]]\nname = \"l0\"\nt_mux = \"10us\"\n\
         buffer = \"16MiB\"\n[[link]]\nends = [\"h0x0\", \"l0\"]\nrate = \"1gbit\"\n\
         [[flow]]\nname = \"f0\"\npath = [\"h0x0\", \"l0\", \"h0x1\"]\nrate = \"100kbit\"\n\
         max_packet = 1514\nburst = \"1639B\"\nhost_delay = \"80us\"\n",
    );
}

#[test]
fn every_field_of_every_table_is_taken() {
    taken(
        r#"
[lab]
offloads = true
ipv6 = false

[[host]]
name = "a"
ip = "198.18.0.1/24"
host_delay = "5us"

[[switch]]
name = "s1"
kind = "rtlan"
unknown_unicast = "flood"
mgmt_ip = "198.18.255.9"
cycle_time = "1ms"
nrt_queue_bytes = 65536
cpu = 3
scheduler = "wheel"
lateness_budget = "20us"
t_mux = "10us"
buffer = "1MiB"
stp = true
auth = false
rate = "10mbit"
propagation = "1us"
seed = 18446744073709551615
trt = "2ms"

[[router]]
name = "r1"
kind = "linux"
rsvp = true
ospf = "on"

[[link]]
ends = ["a", "s1"]
rate = "100mbit"
effective_rate = "90mbit"
delay = "1ms"

[[flow]]
name = "f"
path = ["a", "s1", "b"]
rate = "1mbit"
max_packet = 1500
shaping_interval = "1ms"
burst = "3000B"
host_delay = "0us"
deadline = "5ms"
"#,
    );
}

#[test]
fn rarer_spellings_toml_parser_decodes_are_taken() {
    // Quoted keys and headers, literal and escaped strings, a multi-line string, integer forms,
    // arrays over several lines with comments and a trailing comma, CRLF line ends, a
    // `[[switch]]` after `[lab]` extending the earlier ones.
    taken(
        "[[ switch ]] # spine\r\n\"name\" = 's1'\r\nnrt_queue_bytes = 0x10_00\r\ncpu = +1_0\r\n\
         [lab]\r\n[[\"switch\"]]\r\nname = \"s\\u0032\"\r\nt_mux = \"\"\"\n10us\"\"\"\r\n\
         [[link]]\nends = [ # first\n  \"a\",\n  'b', # second\n]\n",
    );
    taken("");
    taken("# only a comment\n\n");
    taken("[lab]\n");
}

#[test]
fn everything_else_is_left_to_the_general_reader() {
    // Valid TOML the general reader takes, in forms this reader does not.
    left("lab = { offloads = true }\n[[host]]\nname = \"a\"\n");
    left("lab.offloads = true\n");
    left("[[host]]\nname = \"a\"\n[sim]\nduration = \"1s\"\n");
    left("host = [{ name = \"a\" }]\n");
    // Errors the general reader reports, at their place.
    left("[[host]]\nname = \"a\nx");
    left("[[host]]\nname = \"a\"\nname = \"b\"\n");
    left("[lab]\n[lab]\n");
    left("[[lab]]\n");
    left("[host]\nname = \"a\"\n");
    left("[[host.x]]\nname = \"a\"\n");
    left("[[host]]\ncolour = \"red\"\nname = \"a\"\n");
    left("[[host]]\nip = \"198.18.0.1\"\n");
    left("[[host]]\nname = 7\n");
    left("[[switch]]\nname = \"s\"\nnrt_queue_bytes = -1\n");
    left("[[switch]]\nname = \"s\"\ncpu = 4294967296\n");
    left("[[switch]]\nname = \"s\"\nseed = 1.5\n");
    left("[[link]]\nends = [\"a\", [\"b\"]]\n");
    left("[[link]]\nends = [\"a\", 1]\n");
    left(
        "[[flow]]\nname = \"f\"\npath = [\"a\"]\nrate = \"1\"\nmax_packet = 9223372036854775808\n",
    );
    left("[[switch]]\nname = \"s\\q\"\n");
    left("[[switch]]\nname = \"s\" # \u{7}\n");
    // And the general reader's answers are what they were.
    assert!(general("lab.offloads = true\n").is_ok());
    assert_eq!(
        general("[[host]]\nname = \"a\"\nname = \"b\"\n").map(|_| ()),
        Err("t.toml:3:1: duplicate key".to_string())
    );
}

/// Spellings of values, by the type a field takes: string, boolean, integer, array of strings.
const STRINGS: &[&str] = &[
    r#""a""#,
    "'b'",
    r#""\u00e9t\u00e9""#,
    r#""""#,
    "\"\"\"\nml\"\"\"",
    "'''x'''",
];
const BOOLS: &[&str] = &["true", "false"];
const INTEGERS: &[&str] = &[
    "0",
    "7",
    "-3",
    "+4",
    "0x1F",
    "0o17",
    "0b101",
    "1_000",
    "4294967296",
    "9223372036854775808",
    "18446744073709551616",
];
const ARRAYS: &[&str] = &[
    r#"["a", "b"]"#,
    "[\n 'a', # c\n \"b\",\n]",
    "[]",
    r#"[ "x" ]"#,
];
/// Values of no field's type, and broken ones.
const ODD: &[&str] = &[
    "1.5",
    "inf",
    "[1]",
    r#"[["a"]]"#,
    "{ x = 1 }",
    "1979-05-27",
    r#""a\q""#,
    "\"open",
    "",
];

/// A table: its header, the lines it requires, and the keys it takes with their values'
/// spellings.
type TableSpec = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static [&'static str])],
);

const TABLES: &[TableSpec] = &[
    ("[lab]", "", &[("offloads", BOOLS), ("ipv6", BOOLS)]),
    (
        "[[host]]",
        r#"name = "h""#,
        &[("name", STRINGS), ("ip", STRINGS), ("host_delay", STRINGS)],
    ),
    (
        "[[switch]]",
        r#"name = "s""#,
        &[
            (r#""name""#, STRINGS),
            ("kind", STRINGS),
            ("nrt_queue_bytes", INTEGERS),
            ("cpu", INTEGERS),
            ("seed", INTEGERS),
            ("stp", BOOLS),
            ("auth", BOOLS),
            ("t_mux", STRINGS),
            ("trt", STRINGS),
        ],
    ),
    (
        "[[router]]",
        r#"name = "r""#,
        &[("kind", STRINGS), ("rsvp", BOOLS), ("ospf", STRINGS)],
    ),
    (
        "[[ link ]]",
        r#"ends = ["a", "b"]"#,
        &[("ends", ARRAYS), ("rate", STRINGS), ("delay", STRINGS)],
    ),
    (
        "[['flow']]",
        "name = \"f\"\npath = [\"a\", \"s\", \"b\"]\nrate = \"1mbit\"\nmax_packet = 1500",
        &[
            ("path", ARRAYS),
            ("max_packet", INTEGERS),
            ("burst", STRINGS),
            ("deadline", STRINGS),
        ],
    ),
];

/// A line of no table's shape: other headers, dotted or unknown keys, values of any type.
fn odd_line() -> impl Strategy<Value = String> {
    let header = prop::sample::select(&["[sim]", "[switch]", "[[lab]]", "[[flow.x]]", "[lab]"][..]);
    let key = prop::sample::select(&["name", "colour", "lab.ipv6", "rate", "seed", "ends"][..]);
    let value = prop::sample::select([STRINGS, BOOLS, INTEGERS, ARRAYS, ODD].concat());
    let broken = prop::sample::select(&["# \u{7f}", "\u{0}", "= 1", "[[host]] x"][..]);
    prop_oneof![
        header.prop_map(str::to_string),
        (key, value).prop_map(|(k, v)| format!("{k} = {v}")),
        broken.prop_map(str::to_string),
    ]
}

/// One table of a generated document: mostly what the table takes, now and then not.
fn table() -> impl Strategy<Value = String> {
    let picks = prop::collection::vec(any::<(prop::sample::Index, prop::sample::Index)>(), 0..4);
    (
        prop::sample::select(TABLES),
        prop::bool::weighted(0.9),
        picks,
        prop::option::weighted(0.15, odd_line()),
        prop::sample::select(&["", " ", "\t"][..]),
        prop::sample::select(&["", " # note", "#"][..]),
    )
        .prop_map(
            |((header, required, fields), with_required, picks, odd, ws, c)| {
                let mut lines = vec![format!("{header}{c}")];
                // Without its required lines now and then: a missing field.
                if with_required {
                    lines.push(required.to_string());
                }
                for (key, value) in picks {
                    let (key, values) = key.get(fields);
                    lines.push(format!("{key}{ws}={ws}{}{c}", value.get(values)));
                }
                lines.extend(odd);
                lines.join("\n")
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    /// Whatever the event reader takes, the general reader reads the same, spans included.
    #[test]
    fn the_event_reader_agrees_with_the_general_reader(
        tables in prop::collection::vec(table(), 0..8),
        crlf in any::<bool>(),
    ) {
        let text = tables.join("\n");
        let text = if crlf { text.replace('\n', "\r\n") } else { text };
        if let Some(raw) = events::read(&text) {
            prop_assert_eq!(Ok(format!("{raw:?}")), general(&text), "{:?}", text);
        }
    }

    /// Files written from values — any names, rates and integers — are taken and read back.
    #[test]
    fn written_tables_are_read_back(
        switches in prop::collection::vec(("[a-z\\\\\"é ]{1,6}", any::<u64>(), any::<bool>()), 0..6),
        links in prop::collection::vec(prop::collection::vec("[a-z0-9'\"]{0,4}", 0..4), 0..6),
    ) {
        let quote = |s: &str| format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""));
        let mut text = String::new();
        for (name, seed, stp) in &switches {
            text += &format!("[[switch]]\nname = {}\nseed = {seed}\nstp = {stp}\n", quote(name));
        }
        for ends in &links {
            let ends: Vec<String> = ends.iter().map(|e| quote(e)).collect();
            text += &format!("[[link]]\nends = [{}]\n", ends.join(", "));
        }
        let Some(raw) = events::read(&text) else {
            return Err(TestCaseError::fail(format!("stepped aside for {text:?}")));
        };
        // u64 seeds above i64::MAX are left to the general reader (the first integer type
        // toml's deserializer tries is i64), so they are only read back when taken.
        for (s, (name, seed, stp)) in raw.switch.iter().zip(&switches) {
            prop_assert_eq!(s.name.get_ref(), name);
            prop_assert_eq!(s.seed.as_ref().map(|v| *v.get_ref()), Some(*seed));
            prop_assert_eq!(s.stp.as_ref().map(|v| *v.get_ref()), Some(*stp));
        }
        for (l, ends) in raw.link.iter().zip(&links) {
            let read: Vec<&String> = l.ends.get_ref().iter().map(|e| e.get_ref()).collect();
            prop_assert_eq!(read, ends.iter().collect::<Vec<_>>());
        }
        prop_assert_eq!(Ok(format!("{raw:?}")), general(&text));
    }
}
