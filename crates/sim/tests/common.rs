//! Helpers shared by the simulator's integration tests.

#![allow(dead_code)]

use std::path::PathBuf;

use rtlan_sim::{run, Outcome, RunOptions, Scenario};

/// The repository's `scenarios/NAME`.
pub(crate) fn scenario_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(name)
}

/// Reads `scenarios/NAME`.
pub(crate) fn load(name: &str) -> Scenario {
    let path = scenario_path(name);
    Scenario::from_file(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Runs `scenario` with `options`.
pub(crate) fn simulate(scenario: &Scenario, options: &RunOptions) -> Outcome {
    run(scenario, options, &mut |_, _| {}).unwrap_or_else(|e| panic!("run failed: {e}"))
}

/// Parses an inline scenario.
pub(crate) fn parse(text: &str) -> Scenario {
    Scenario::from_str(text, "inline.toml").unwrap_or_else(|e| panic!("{e}"))
}

/// A fresh empty directory under the target directory.
pub(crate) fn temp_dir(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}

/// Four hosts a, b, c, d on one rtlan switch, 100 Mbit/s links, followed by `tables`.
pub(crate) fn star(tables: &str) -> String {
    let mut text = String::new();
    for h in ["a", "b", "c", "d"] {
        text.push_str(&format!("[[host]]\nname = \"{h}\"\n\n"));
    }
    text.push_str("[[switch]]\nname = \"s1\"\nkind = \"rtlan\"\n\n");
    for h in ["a", "b", "c", "d"] {
        text.push_str(&format!(
            "[[link]]\nends = [\"{h}\", \"s1\"]\nrate = \"100mbit\"\n\n"
        ));
    }
    text.push_str(tables);
    text
}
