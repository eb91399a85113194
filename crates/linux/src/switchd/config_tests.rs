//! Tests of the configuration parser: defaults, every key, and errors that name their line.

use super::*;

const FULL: &str = r#"
name = "s1"
mgmt_ip = "198.18.255.1"
mac = "02:00:00:00:00:fe"
unknown_unicast = "flood"
cycle_time = "5ms"
ageing_time = "60s"
pending_capacity = 32
pending_timeout = "150ms"
nrt_queue_bytes = 262144
control_socket = "/run/rtlan/s1.sock"
cpu = 1
busy_poll = true
qdisc_bypass = true
data_plane = "af_xdp"
ring_frames = 512
tx_threads = true
tx_cpus = [0, 3]
napi_threads = true
refresh_timeout = "45s"

[[port]]
ifname = "p0"
rate = "100mbit"
role = "host"

[[port]]
ifname = "p1"
role = "trunk"
"#;

fn invalid_line(text: &str) -> (usize, String) {
    match Config::from_toml_str(text) {
        Err(ConfigError::Invalid { line, message, .. }) => (line, message),
        other => panic!("expected a located error, got {other:?}"),
    }
}

#[test]
fn full_config_parses_every_key() {
    let c = Config::from_toml_str(FULL).expect("valid");
    assert_eq!(c.name, "s1");
    assert_eq!(c.mgmt_ip, Some(Ipv4Addr::new(198, 18, 255, 1)));
    assert_eq!(c.mac, Some(Address([2, 0, 0, 0, 0, 0xfe])));
    assert_eq!(c.unknown_unicast, UnknownUnicast::Flood);
    assert_eq!(c.cycle_time, Duration::from_millis(5));
    assert_eq!(c.ageing_time, Duration::from_secs(60));
    assert_eq!(c.pending_capacity, 32);
    assert_eq!(c.pending_timeout, Duration::from_millis(150));
    assert_eq!(c.nrt_queue_bytes, Some(262_144));
    assert_eq!(
        c.control_socket.as_deref(),
        Some(Path::new("/run/rtlan/s1.sock"))
    );
    assert_eq!(c.cpu, Some(1));
    assert!(c.busy_poll);
    assert!(c.qdisc_bypass);
    assert_eq!(c.data_plane, crate::xdp::DataPlane::AfXdp);
    assert_eq!(c.ring_frames, 512);
    assert_eq!(c.refresh_timeout, Duration::from_secs(45));
    assert_eq!(
        c.ports,
        vec![
            PortSpec {
                ifname: "p0".into(),
                rate_bps: Some(100_000_000),
                role: PortRole::Host,
                keys: KeyChain::default(),
            },
            PortSpec {
                ifname: "p1".into(),
                rate_bps: None,
                role: PortRole::Trunk,
                keys: KeyChain::default(),
            },
        ]
    );
}

#[test]
fn minimal_config_takes_defaults() {
    let c = Config::from_toml_str("[[port]]\nifname = \"a\"\n").expect("valid");
    assert_eq!(c.name, "switch");
    assert_eq!(c.mgmt_ip, None);
    assert_eq!(c.mac, None);
    assert_eq!(c.unknown_unicast, UnknownUnicast::ArpProbe);
    assert_eq!(c.cycle_time, DEFAULT_CYCLE_TIME);
    assert_eq!(c.ageing_time, Duration::from_secs(300));
    assert_eq!(c.pending_capacity, 256);
    assert_eq!(c.pending_timeout, Duration::from_millis(200));
    assert_eq!(c.nrt_queue_bytes, None);
    assert_eq!(c.control_socket, None);
    assert!(!c.busy_poll);
    assert!(!c.qdisc_bypass);
    assert_eq!(c.data_plane, crate::xdp::DataPlane::Auto);
    assert!(c.fast_path);
    assert_eq!(c.ring_frames, DEFAULT_RING_FRAMES);
    assert!(!c.tx_threads);
    assert!(c.tx_cpus.is_empty());
    assert!(!c.napi_threads);
    assert_eq!(c.refresh_timeout, Duration::from_secs(30));
}

#[test]
fn transmit_threads_take_the_configured_cpus_in_turn_or_avoid_the_data_plane() {
    use crate::packet::TxThreadCpu;
    let full = Config::from_toml_str(FULL).expect("valid");
    assert!(full.tx_threads);
    assert_eq!(full.tx_cpus, [0, 3]);
    assert!(full.napi_threads);
    let placed: Vec<_> = (0..3)
        .map(|i| super::super::tx_thread_cpu(&full, i))
        .collect();
    assert_eq!(
        placed,
        [
            TxThreadCpu::Cpu(0),
            TxThreadCpu::Cpu(3),
            TxThreadCpu::Cpu(0)
        ]
    );
    let pinned = Config::from_toml_str("cpu = 1\ntx_threads = true\n[[port]]\nifname = \"a\"\n")
        .expect("valid");
    assert_eq!(
        super::super::tx_thread_cpu(&pinned, 0),
        TxThreadCpu::AnyBut(1)
    );
    let free =
        Config::from_toml_str("tx_threads = true\n[[port]]\nifname = \"a\"\n").expect("valid");
    assert_eq!(super::super::tx_thread_cpu(&free, 0), TxThreadCpu::Any);
    let (line, msg) = invalid_line("tx_cpus = \"all\"\n[[port]]\nifname = \"a\"\n");
    assert_eq!(line, 1, "{msg}");
}

#[test]
fn an_unknown_data_plane_names_its_line() {
    let (line, message) =
        invalid_line("name = \"s\"\ndata_plane = \"dpdk\"\n[[port]]\nifname = \"a\"\n");
    assert_eq!(line, 2, "{message}");
    assert!(message.contains("af_xdp"), "{message}");
}

#[test]
fn refresh_timeout_zero_means_never_and_reaches_the_core() {
    let c = Config::from_toml_str("refresh_timeout = \"0s\"\n[[port]]\nifname = \"a\"\n")
        .expect("zero is allowed");
    assert_eq!(c.refresh_timeout, Duration::ZERO);
    let full = Config::from_toml_str(FULL).expect("valid");
    let sc = full.switch_config(&[Address([2, 0, 0, 0, 0, 1]), Address([2, 0, 0, 0, 0, 2])]);
    assert_eq!(sc.rt.refresh_timeout, Duration::from_secs(45));
    let (line, msg) = invalid_line("refresh_timeout = \"soon\"\n[[port]]\nifname = \"a\"\n");
    assert_eq!(line, 1);
    assert!(msg.contains("refresh_timeout"), "{msg}");
}

#[test]
fn serialized_config_parses_back_to_the_same() {
    let c = Config::from_toml_str(FULL).expect("valid");
    let text = toml::to_string(&c).expect("serializable");
    assert_eq!(Config::from_toml_str(&text).expect("round trip"), c);
}

#[test]
fn switch_config_takes_port_macs_and_defaults_the_switch_mac() {
    let mut c = Config::from_toml_str(FULL).expect("valid");
    let macs = [Address([2, 0, 0, 0, 0, 1]), Address([2, 0, 0, 0, 0, 2])];
    let sc = c.switch_config(&macs);
    assert_eq!(sc.mac, Address([2, 0, 0, 0, 0, 0xfe]));
    assert_eq!(sc.ports.len(), 2);
    assert_eq!(sc.ports[1].mac, macs[1]);
    assert_eq!(sc.ports[0].name, "p0");
    assert_eq!(
        sc.ports[0].medium,
        Medium::FullDuplex {
            rate_bps: 100_000_000
        }
    );
    assert_eq!(sc.cycle_time, Duration::from_millis(5));
    c.mac = None;
    assert_eq!(c.switch_config(&macs).mac, macs[0]);
}

#[test]
fn syntax_error_names_its_line() {
    let (line, _) = invalid_line("name = \"s1\"\ncycle_time = \n[[port]]\nifname = \"a\"\n");
    assert_eq!(line, 2);
}

#[test]
fn unknown_key_names_its_line() {
    let (line, msg) =
        invalid_line("name = \"s1\"\n\ncylce_time = \"10ms\"\n[[port]]\nifname = \"a\"\n");
    assert_eq!(line, 3);
    assert!(msg.contains("cylce_time"), "{msg}");
    let (line, _) = invalid_line("[[port]]\nifname = \"a\"\nspeed = \"1gbit\"\n");
    assert_eq!(line, 3);
}

#[test]
fn bad_values_name_their_line() {
    let base = "[[port]]\nifname = \"a\"\n";
    let cases = [
        ("cycle_time = \"10 parsecs\"\n", "cycle_time"),
        ("cycle_time = \"0ms\"\n", "cycle_time"),
        ("ageing_time = \"fast\"\n", "ageing_time"),
        ("mgmt_ip = \"198.18.300.1\"\n", "mgmt_ip"),
        ("mac = \"02:00:00:00:00\"\n", "mac"),
        ("mac = \"01:00:5e:00:00:01\"\n", "unicast"),
        ("unknown_unicast = \"drop\"\n", "drop"),
        ("pending_capacity = 0\n", "pending_capacity"),
        ("pending_capacity = -3\n", ""),
        ("ring_frames = 0\n", "ring_frames"),
        ("ring_frames = 100000\n", "at most"),
        ("pending_capacity = 1000000\n", "at most"),
        ("nrt_queue_bytes = 0\n", "nrt_queue_bytes"),
    ];
    for (bad, needle) in cases {
        let text = format!("name = \"x\"\n{bad}{base}");
        let (line, msg) = invalid_line(&text);
        assert_eq!(line, 2, "{bad}: {msg}");
        assert!(msg.contains(needle), "{bad}: {msg}");
    }
}

#[test]
fn port_errors_name_their_line() {
    let (line, msg) = invalid_line("[[port]]\nifname = \"a\"\n[[port]]\nifname = \"a\"\n");
    assert_eq!(line, 4);
    assert!(msg.contains("twice"), "{msg}");
    let (line, msg) = invalid_line("[[port]]\nifname = \"a\"\nrate = \"100furlongs\"\n");
    assert_eq!(line, 3);
    assert!(msg.contains("rate"), "{msg}");
    let (line, _) = invalid_line("[[port]]\nifname = \"much-too-long-ifname\"\n");
    assert_eq!(line, 2);
    let (line, _) = invalid_line("[[port]]\nrate = \"1gbit\"\n");
    assert_eq!(line, 1, "missing ifname is reported at its table");
}

#[test]
fn no_ports_is_an_error() {
    assert!(matches!(
        Config::from_toml_str("name = \"s1\"\n"),
        Err(ConfigError::NoPorts)
    ));
}

#[test]
fn load_reports_missing_file() {
    assert!(matches!(
        Config::load(Path::new("/nonexistent/rtlan.toml")),
        Err(ConfigError::Read { .. })
    ));
}

#[test]
fn mac_and_duration_text() {
    assert_eq!(
        parse_mac("02-0A-ff-00-00-01"),
        Some(Address([2, 10, 255, 0, 0, 1]))
    );
    assert_eq!(parse_mac("02:00:00:00:00:01:07"), None);
    assert_eq!(parse_mac("02:00:00:00:00:1g"), None);
    assert_eq!(parse_mac("002:00:00:00:00:01"), None);
    assert_eq!(format_duration(Duration::from_millis(10)), "10ms");
    assert_eq!(format_duration(Duration::from_millis(1500)), "1500ms");
    assert_eq!(format_duration(Duration::from_secs(300)), "300s");
    assert_eq!(format_duration(Duration::from_nanos(1_001)), "1001ns");
    assert_eq!(line_column("ab\ncd\nef", 4), (2, 2));
}

#[test]
fn admission_and_discard_keys_parse_and_reach_the_core() {
    let text = r#"
cycle_time = "100us"
realtime_cap_percent = 50
backplane = "2gbit"
cpu_cost_per_connection = "250ns"
cpu_budget_percent = 40
rt_buffer_bytes = 1048576
max_connections = 20000
realtime_priority = 0
preemptive_discard = false
discard_window = "20ms"

[[port]]
ifname = "p0"
"#;
    let c = Config::from_toml_str(text).expect("valid");
    assert_eq!(c.cycle_time, Duration::from_micros(100));
    assert_eq!(c.backplane_bps, Some(2_000_000_000));
    assert_eq!(
        c.cpu_cost_per_connection,
        CpuCost::Fixed(Duration::from_nanos(250))
    );
    let sc = c.switch_config(&[Address([2, 0, 0, 0, 0, 1])]);
    assert_eq!(sc.rt.cap_percent, 50);
    assert_eq!(sc.rt.backplane_bps, Some(2_000_000_000));
    assert_eq!(sc.rt.cpu_cost_per_connection, Duration::from_nanos(250));
    assert_eq!(sc.rt.cpu_budget_percent, 40);
    assert_eq!(sc.rt.rt_buffer_bytes, 1_048_576);
    assert_eq!(sc.rt.max_connections, 20_000);
    assert_eq!(c.realtime_priority, 0);
    assert!(!sc.rt.preemptive_discard);
    assert_eq!(sc.rt.discard_window, Duration::from_millis(20));
    // Round trip through the serialized form.
    let again = Config::from_toml_str(&toml::to_string(&c).expect("serializes")).expect("parses");
    assert_eq!(again, c);
    // Defaults: discard on, unlimited backplane, 1 µs, 50 %, 64 MiB.
    let d = Config::from_toml_str("[[port]]\nifname = \"p0\"\n").expect("valid");
    assert!(d.preemptive_discard);
    assert_eq!(d.backplane_bps, None);
    assert_eq!(
        d.cpu_cost_per_connection,
        CpuCost::Fixed(Duration::from_micros(1))
    );
    assert_eq!(d.cpu_budget_percent, 50);
    assert_eq!(d.rt_buffer_bytes, 64 * 1024 * 1024);
    assert_eq!(
        d.max_connections, 16_384,
        "above issue 4's 10,000 connections per switch"
    );
    assert_eq!(d.realtime_priority, 20);
    let cal = Config::from_toml_str(
        "cpu_cost_per_connection = \"calibrate\"\n[[port]]\nifname = \"p0\"\n",
    )
    .expect("valid");
    assert_eq!(cal.cpu_cost_per_connection, CpuCost::Calibrate);
}

#[test]
fn admission_key_errors_name_their_line() {
    for (text, key) in [
        ("cycle_time = \"50us\"\n", "cycle_time"),
        ("cycle_time = \"2s\"\n", "cycle_time"),
        ("realtime_cap_percent = 0\n", "realtime_cap_percent"),
        ("cpu_budget_percent = 101\n", "cpu_budget_percent"),
        ("backplane = \"fast\"\n", "backplane"),
        (
            "cpu_cost_per_connection = \"soon\"\n",
            "cpu_cost_per_connection",
        ),
        ("rt_buffer_bytes = 0\n", "rt_buffer_bytes"),
        ("max_connections = 0\n", "max_connections"),
        ("max_connections = 2000000\n", "max_connections"),
        ("realtime_priority = 100\n", "realtime_priority"),
    ] {
        let (line, message) =
            invalid_line(&format!("name = \"x\"\n{text}[[port]]\nifname = \"p0\"\n"));
        assert_eq!(line, 2, "{text}: {message}");
        assert!(message.contains(key), "{text}: {message}");
    }
}

#[test]
fn ports_take_keys_and_roles_into_the_core_config() {
    let text = r#"
[[port]]
ifname = "p0"
role = "host"
keys = [
    { id = 1, secret = "000102030405060708090a0b0c0d0e0f", not_after = "3600s" },
    { id = 2, secret = "101112131415161718191a1b1c1d1e1f", not_before = "3000s" },
]

[[port]]
ifname = "p1"
"#;
    let c = Config::from_toml_str(text).expect("valid");
    assert_eq!(c.ports[0].role, PortRole::Host);
    assert_eq!(c.ports[1].role, PortRole::Auto);
    assert!(c.ports[1].keys.is_empty());
    let sc = c.switch_config(&[Address([2, 0, 0, 0, 0, 1]), Address([2, 0, 0, 0, 0, 2])]);
    let security = &sc.ports[0].security;
    assert_eq!(security.role, PortRole::Host);
    let ids: Vec<u32> = security.keys.keys().iter().map(|k| k.id).collect();
    assert_eq!(ids, [1, 2]);
    assert_eq!(
        security.keys.keys()[1].not_before,
        Some(Duration::from_secs(3000))
    );
    // The printed configuration keeps the roles and never the secrets.
    let printed = toml::to_string(&c).expect("serializes");
    assert!(printed.contains("role = \"host\""), "{printed}");
    assert!(!printed.contains("0a0b0c"), "{printed}");
    assert!(!format!("{c:?}").contains("0a0b0c"));
}

#[test]
fn bad_roles_and_keys_name_their_line() {
    let (line, msg) = invalid_line("[[port]]\nifname = \"a\"\nrole = \"router\"\n");
    assert_eq!(line, 3, "{msg}");
    let (line, msg) =
        invalid_line("[[port]]\nifname = \"a\"\nkeys = [{ id = 1, secret = \"00ff\" }]\n");
    assert_eq!(line, 3);
    assert!(
        msg.contains("key 1") && msg.contains("at least 16"),
        "{msg}"
    );
}

const PROTECT: &str = r#"
[protect]
arp_guard = false
arp_reprobe_timeout = "50ms"
control_budget = { rate = 2000, burst = 300 }

[protect.host]
control = { rate = 500, burst = 20 }
arp = { rate = 10, burst = 5 }
arp_probes = { rate = 20, burst = 4 }
connection_share_percent = 10
max_setups_in_progress = 16
pending_share_percent = 40

[protect.trunk]
control = { rate = 9000, burst = 900 }

[[protect.static_arp]]
ip = "198.18.0.2"
mac = "02:00:00:00:00:02"
port = "p1"

[[port]]
ifname = "p0"

[[port]]
ifname = "p1"
"#;

const STP: &str = r#"
name = "s1"

[stp]
enabled = true
priority = 4096
max_age = "6s"
hello_time = "1s"
forward_delay = "4s"

[[port]]
ifname = "p0"
rate = "1gbit"
stp_cost = 10
stp_priority = 64

[[port]]
ifname = "p1"
"#;

#[test]
fn protect_keys_parse_round_trip_and_reach_the_core() {
    use rtlan_core::switch::{PortId, Rate, StaticBinding, TRUNK_LIMITS};
    let c = Config::from_toml_str(PROTECT).expect("valid");
    let p = &c.protect;
    assert!(!p.arp_guard);
    assert_eq!(p.arp_reprobe_timeout, Duration::from_millis(50));
    assert_eq!(
        p.control_budget,
        Rate {
            per_second: 2000,
            burst: 300
        }
    );
    assert_eq!(
        p.host.arp_probes,
        Rate {
            per_second: 20,
            burst: 4
        }
    );
    assert_eq!(p.host.connection_share_percent, 10);
    assert_eq!(p.host.max_setups_in_progress, Some(16));
    assert_eq!(p.host.pending_share_percent, 40);
    assert_eq!(p.trunk.pending_share_percent, 100);
    assert_eq!(p.trunk.control.per_second, 9000);
    // Keys not given keep their defaults.
    assert_eq!(p.trunk.arp, TRUNK_LIMITS.arp);
    assert_eq!(
        p.static_arp,
        [StaticBinding {
            ip: "198.18.0.2".parse().expect("ip"),
            mac: Address([2, 0, 0, 0, 0, 2]),
            port: PortId(1),
        }]
    );
    let sc = c.switch_config(&[Address([2, 0, 0, 0, 0, 0xa]), Address([2, 0, 0, 0, 0, 0xb])]);
    assert_eq!(&sc.rt.protect, p);
    let text = toml::to_string(&c).expect("serializable");
    assert_eq!(
        Config::from_toml_str(&text).expect("round trip"),
        c,
        "{text}"
    );
    // Without a [protect] table the core's defaults hold.
    let minimal = Config::from_toml_str("[[port]]\nifname = \"p0\"\n").expect("valid");
    assert_eq!(
        minimal.protect,
        rtlan_core::switch::ProtectConfig::default()
    );
}

#[test]
fn protect_errors_name_their_line() {
    for (text, line, key) in [
        ("[protect]\ncontrol_budget = { rate = 0, burst = 1 }\n", 2, "control_budget"),
        ("[protect.host]\narp = { rate = 5, burst = 0 }\n", 2, "protect.host.arp"),
        ("[protect.trunk]\nconnection_share_percent = 0\n", 2, "connection_share_percent"),
        ("[protect.host]\nmax_setups_in_progress = 0\n", 2, "max_setups_in_progress"),
        ("[protect.host]\npending_share_percent = 101\n", 2, "pending_share_percent"),
        ("[protect]\narp_reprobe_timeout = \"soon\"\n", 2, "arp_reprobe_timeout"),
        ("[protect]\nbudget = 3\n", 2, "budget"),
        (
            "[[protect.static_arp]]\nip = \"198.18.0.2\"\nmac = \"02:00:00:00:00:02\"\nport = \"p9\"\n",
            4,
            "no [[port]] `p9`",
        ),
        (
            "[[protect.static_arp]]\nip = \"nowhere\"\nmac = \"02:00:00:00:00:02\"\nport = \"p0\"\n",
            2,
            "IPv4",
        ),
        (
            "[[protect.static_arp]]\nip = \"198.18.0.2\"\nmac = \"ff:ff:ff:ff:ff:ff\"\nport = \"p0\"\n",
            3,
            "unicast",
        ),
    ] {
        let (got, message) = invalid_line(&format!("{text}[[port]]\nifname = \"p0\"\n"));
        assert_eq!(got, line, "{text}: {message}");
        assert!(message.contains(key), "{text}: {message}");
    }
}

#[test]
fn stp_section_parses_round_trips_and_reaches_the_core() {
    let c = Config::from_toml_str(STP).expect("valid");
    assert!(c.stp.enabled);
    assert_eq!(c.stp.priority, 4096);
    assert_eq!(c.stp.timers.max_age, Duration::from_secs(6));
    assert_eq!(c.stp.timers.hello_time, Duration::from_secs(1));
    assert_eq!(c.stp.timers.forward_delay, Duration::from_secs(4));
    let text = toml::to_string(&c).expect("serializable");
    assert_eq!(Config::from_toml_str(&text).expect("round trip"), c);
    let sc = c.switch_config(&[Address([2, 0, 0, 0, 0, 1]), Address([2, 0, 0, 0, 0, 2])]);
    let stp = sc.stp.clone().expect("enabled");
    assert_eq!(stp.priority, 4096);
    assert_eq!(stp.ports[0].cost, Some(10));
    assert_eq!(stp.ports[0].priority, Some(64));
    assert_eq!(stp.ports[1], Default::default());
    // The core builds its bridge from it.
    rtlan_core::switch::Switch::new(sc, rtlan_core::time::Instant::ZERO).expect("valid");
}

#[test]
fn stp_is_off_unless_enabled() {
    let c = Config::from_toml_str("[[port]]\nifname = \"a\"\n").expect("valid");
    assert!(!c.stp.enabled);
    assert_eq!(c.switch_config(&[Address([2, 0, 0, 0, 0, 1])]).stp, None);
    let c =
        Config::from_toml_str("[stp]\npriority = 0\n[[port]]\nifname = \"a\"\n").expect("valid");
    assert!(!c.stp.enabled);
    assert_eq!(c.switch_config(&[Address([2, 0, 0, 0, 0, 1])]).stp, None);
}

#[test]
fn stp_errors_name_their_line() {
    let port = "[[port]]\nifname = \"a\"\n";
    let cases = [
        // max age 40 s needs a forward delay of at least 21 s.
        ("[stp]\nenabled = true\nmax_age = \"40s\"\n", 1, "[stp]"),
        (
            "[stp]\nenabled = true\nhello_time = \"soon\"\n",
            3,
            "hello_time",
        ),
        ("[stp]\npriority = 70000\n", 2, "priority"),
        ("[stp]\nspeed = 1\n", 2, "speed"),
    ];
    for (text, want_line, want) in cases {
        let (line, msg) = invalid_line(&format!("{text}{port}"));
        assert_eq!(line, want_line, "{text}: {msg}");
        assert!(msg.contains(want), "{text}: {msg}");
    }
    let (line, msg) = invalid_line("[[port]]\nifname = \"a\"\nstp_priority = 17\n");
    assert_eq!(line, 3);
    assert!(msg.contains("stp_priority"), "{msg}");
    let (line, msg) = invalid_line("[[port]]\nifname = \"a\"\nstp_cost = 0\n");
    assert_eq!(line, 3);
    assert!(msg.contains("stp_cost"), "{msg}");
}

#[test]
fn reshape_keys_parse_reach_the_core_and_zero_means_police() {
    let text = "reshape_allowance = \"20ms\"\nreshape_buffer_bytes = 65536\n\
                [[port]]\nifname = \"a\"\n";
    let c = Config::from_toml_str(text).expect("valid");
    assert_eq!(c.reshape_allowance, Duration::from_millis(20));
    assert_eq!(c.reshape_buffer_bytes, 65_536);
    let sc = c.switch_config(&[Address([2, 0, 0, 0, 0, 1])]);
    assert_eq!(sc.rt.reshape_allowance, Duration::from_millis(20));
    assert_eq!(sc.rt.reshape_buffer_bytes, 65_536);
    let back = toml::to_string(&c).expect("serializable");
    assert_eq!(Config::from_toml_str(&back).expect("round trip"), c);
    // The defaults, and zero: police only.
    let d = Config::from_toml_str("[[port]]\nifname = \"a\"\n").expect("valid");
    assert_eq!(d.reshape_allowance, DEFAULT_RESHAPE_ALLOWANCE);
    assert_eq!(d.reshape_buffer_bytes, DEFAULT_RESHAPE_BUFFER_BYTES);
    let z = Config::from_toml_str("reshape_allowance = \"0s\"\n[[port]]\nifname = \"a\"\n")
        .expect("zero is allowed");
    assert_eq!(z.reshape_allowance, Duration::ZERO);
    for (text, key) in [
        ("reshape_allowance = \"soon\"\n", "reshape_allowance"),
        ("reshape_buffer_bytes = 0\n", "reshape_buffer_bytes"),
    ] {
        let (line, message) =
            invalid_line(&format!("name = \"x\"\n{text}[[port]]\nifname = \"p0\"\n"));
        assert_eq!(line, 2, "{text}: {message}");
        assert!(message.contains(key), "{text}: {message}");
    }
}
