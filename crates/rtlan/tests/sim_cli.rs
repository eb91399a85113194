//! `rtlan sim` as a user drives it: the guarantee scenario as JSON and as a table, pcaps, the
//! seed option, and a bad scenario refused with file:line:column and a non-zero exit.

use std::path::PathBuf;
use std::process::{Command, Output};

fn rtlan(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rtlan"))
        .args(args)
        .output()
        .expect("rtlan runs")
}

fn scenario(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(name)
        .display()
        .to_string()
}

#[test]
fn sim_guarantee_json_table_and_pcaps() {
    let path = scenario("guarantee.toml");
    let out = rtlan(&["sim", &path, "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    let flows = json["flows"].as_array().expect("flows");
    assert_eq!(flows[0]["name"], "a→d 50M");
    assert_eq!(flows[0]["reservation"], "opened");
    assert_eq!(flows[0]["loss_frames"], 0);
    let delivered = flows[0]["delivered_bps"].as_f64().expect("rate");
    assert!((delivered - 50e6).abs() < 0.005 * 50e6, "{delivered}");

    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("sim-cli-pcap");
    let _ = std::fs::remove_dir_all(&dir);
    let out = rtlan(&[
        "sim",
        &path,
        "--seed",
        "3",
        "--pcap",
        dir.to_str().expect("utf-8"),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("(seed 3)"), "{table}");
    assert!(table.contains("a→d 50M"), "{table}");
    for link in ["a-s1", "b-s1", "c-s1", "d-s1"] {
        let file = dir.join(format!("{link}.pcap"));
        assert!(file.is_file(), "{} missing", file.display());
        assert!(table.contains(&format!("{link}.pcap")), "{table}");
    }
}

#[test]
fn sim_bad_scenario_names_line_and_fails() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("sim-cli-bad");
    std::fs::create_dir_all(&dir).expect("dir");
    let file = dir.join("bad.toml");
    std::fs::write(
        &file,
        "[[host]]\nname = \"a\"\n\n[[host]]\nname = \"b\"\n\n[[switch]]\nname = \"s1\"\nkind = \"rtlan\"\n\n\
         [[link]]\nends = [\"a\", \"s1\"]\nrate = \"100mbit\"\n\n[[link]]\nends = [\"b\", \"s1\"]\nrate = \"100mbit\"\n\n\
         [sim]\nduration = \"1s\"\n\n[[traffic]]\nsrc = \"a\"\ndst = \"b\"\nkind = \"teleport\"\nrate = \"1mbit\"\n",
    )
    .expect("write");
    let out = rtlan(&["sim", file.to_str().expect("utf-8")]);
    assert!(!out.status.success());
    let msg = String::from_utf8_lossy(&out.stderr);
    assert!(msg.contains("bad.toml:25:8:"), "{msg}");
    assert!(msg.contains("teleport"), "{msg}");
}

#[test]
fn sim_routed_scenario_reports_routers_and_refuses_a_linux_router_by_name() {
    let path = scenario("routed.toml");
    let out = rtlan(&["sim", &path, "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    let routers = json["routers"].as_array().expect("routers");
    let names: Vec<&str> = routers.iter().filter_map(|r| r["name"].as_str()).collect();
    assert_eq!(names, ["r1", "r2"]);
    for r in routers {
        assert!(r["stats"]["forwarded"].as_u64().unwrap_or(0) > 0, "{r}");
    }
    let out = rtlan(&["sim", &path]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("router r2: "), "{table}");

    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("sim-cli-linux-router");
    std::fs::create_dir_all(&dir).expect("dir");
    let file = dir.join("kernel.toml");
    let text = std::fs::read_to_string(&path).expect("routed.toml");
    let text = text.replace(
        "name = \"r2\"\n",
        "name = \"r2\"\nkind = \"linux-router\"\n",
    );
    std::fs::write(&file, text).expect("write");
    let out = rtlan(&["sim", file.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(1));
    let msg = String::from_utf8_lossy(&out.stderr);
    assert!(
        msg.contains("router `r2`") && msg.contains("linux-router"),
        "{msg}"
    );
}

#[test]
fn sim_refuses_a_rether_segment_and_says_where_it_is_simulated() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("sim-cli-segment");
    std::fs::create_dir_all(&dir).expect("dir");
    let file = dir.join("segment.toml");
    let topology = std::fs::read_to_string(format!(
        "{}/../../topologies/segment.toml",
        env!("CARGO_MANIFEST_DIR")
    ))
    .expect("segment.toml");
    std::fs::write(&file, format!("{topology}\n[sim]\nduration = \"1s\"\n")).expect("write");
    let out = rtlan(&["sim", file.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(1));
    let msg = String::from_utf8_lossy(&out.stderr);
    assert!(
        msg.contains("switch `seg`") && msg.contains("rtlan experiment rether"),
        "{msg}"
    );
}
