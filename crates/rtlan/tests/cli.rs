//! The `rtlan lab` command line as a user drives it: up, exec, show, up twice, down, bad files.

mod common;

use std::process::{Command, Output};

use common::{lab_name, root_or_skip};

fn rtlan(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rtlan"))
        .args(args)
        .output()
        .expect("rtlan runs")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn bad_topology_file_names_line_and_problem() {
    let dir = std::env::temp_dir().join(format!("rtlan-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("bad.toml");
    std::fs::write(
        &file,
        "[[host]]\nname = \"a\"\n[[switch]]\nname = \"s1\"\n[[link]]\nends = [\"a\", \"s9\"]\n",
    )
    .unwrap();
    let out = rtlan(&["lab", "up", file.to_str().unwrap(), "--name", "neverbuilt"]);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(!out.status.success());
    let msg = text(&out);
    assert!(msg.contains("bad.toml:6:"), "error must name line 6: {msg}");
    assert!(
        msg.contains("s9"),
        "error must name the unknown node: {msg}"
    );
}

#[test]
fn lab_up_exec_show_down_from_the_command_line() {
    if !root_or_skip("lab_up_exec_show_down_from_the_command_line") {
        return;
    }
    let _serial = rtlan_lab::serial_lock().expect("lab lock");
    let name = lab_name("cli");
    let _ = rtlan_lab::down(&name);
    let topology = format!(
        "{}/../../topologies/default.toml",
        env!("CARGO_MANIFEST_DIR")
    );

    let up = rtlan(&["lab", "up", &topology, "--name", &name, "--json"]);
    // Whatever happens next, the lab goes away.
    struct Down(String);
    impl Drop for Down {
        fn drop(&mut self) {
            let _ = rtlan_lab::down(&self.0);
        }
    }
    let _down = Down(name.clone());
    assert!(up.status.success(), "lab up: {}", text(&up));
    let described: serde_json::Value = serde_json::from_slice(&up.stdout).expect("lab up --json");
    assert_eq!(
        described["hosts"].as_array().map(Vec::len),
        Some(3),
        "{described}"
    );

    let ping = rtlan(&[
        "lab",
        "exec",
        "--name",
        &name,
        "a",
        "--",
        "ping",
        "-c",
        "2",
        "-W",
        "2",
        "198.18.0.2",
    ]);
    assert!(
        ping.status.success(),
        "ping through the lab: {}",
        text(&ping)
    );
    // exec passes the command's exit status through.
    let fails = rtlan(&[
        "lab", "exec", "--name", &name, "b", "--", "sh", "-c", "exit 7",
    ]);
    assert_eq!(fails.status.code(), Some(7));

    let fdb = rtlan(&["lab", "show", "--name", &name, "s1", "fdb", "--json"]);
    assert!(fdb.status.success(), "{}", text(&fdb));
    let entries: serde_json::Value = serde_json::from_slice(&fdb.stdout).unwrap();
    assert_eq!(
        entries.as_array().map(Vec::len),
        Some(2),
        "a and b learnt: {entries}"
    );

    let again = rtlan(&["lab", "up", &topology, "--name", &name]);
    assert!(!again.status.success());
    assert!(text(&again).contains("already exists"), "{}", text(&again));

    let down = rtlan(&["lab", "down", "--name", &name]);
    assert!(down.status.success(), "{}", text(&down));
    let list = Command::new("ip").args(["netns", "list"]).output().unwrap();
    let prefix = format!("rtl-{name}-");
    assert!(
        !String::from_utf8_lossy(&list.stdout)
            .lines()
            .any(|l| l.starts_with(&prefix)),
        "namespaces left after lab down"
    );
}

#[test]
fn demo_rejects_contradictory_or_out_of_range_arguments_before_building_anything() {
    // Parsed before any lab exists, so this needs no root: --plot and --no-plot contradict,
    // and the hidden --seconds must leave the demo enough traffic to measure (2..=60).
    let out = rtlan(&["demo", "--no-plot", "--plot", "x.png"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("cannot be used with"), "{}", text(&out));
    let out = rtlan(&["demo", "--seconds", "1"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("--seconds"), "{}", text(&out));
    let help = text(&rtlan(&["demo", "--help"]));
    assert!(help.contains("--plot") && help.contains("--json"), "{help}");
    assert!(
        !help.contains("--seconds"),
        "--seconds is for the tests only: {help}"
    );
}
