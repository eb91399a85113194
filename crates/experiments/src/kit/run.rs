//! One experiment run's paths and outputs (DESIGN.md §6): the scenario file
//! (`experiments/<paper>/<name>/scenario.toml`), the output directory (the scenario's, unless
//! told otherwise), `results.json` written there and the plot drawn by the `plot.py` beside the
//! scenario (`/usr/bin/python3 plot.py RESULTS OUT_DIR`, matplotlib from `scripts/install-deps`).

use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::backend::Backend;

/// What the caller chose for a run (the binary's flags).
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Scenario file; `None`: the experiment's default under `experiments/`.
    pub scenario: Option<PathBuf>,
    /// Directory for results.json and the plot; `None`: the scenario's directory.
    pub out: Option<PathBuf>,
    /// Shorter runs (fewer points, shorter durations) for a smoke test; results say so.
    pub quick: bool,
    /// Render the plot.
    pub plot: bool,
    /// Where the scenario runs.
    pub backend: Backend,
    /// The rtlan executable (for processes in lab namespaces).
    pub exe: PathBuf,
}

/// What an experiment runner gets: resolved paths and flags.
#[derive(Debug, Clone)]
pub struct Run {
    /// The scenario file.
    pub scenario: PathBuf,
    /// Where results.json and the plot go.
    pub out: PathBuf,
    /// Shorter runs.
    pub quick: bool,
    /// Render the plot.
    pub plot: bool,
    /// Where the scenario runs.
    pub backend: Backend,
    /// The rtlan executable (for processes in lab namespaces).
    pub exe: PathBuf,
}

impl Run {
    /// Resolves `options` for an experiment whose files live in `dir` (relative to the working
    /// directory, e.g. `experiments/ethereal/fig4`); creates the output directory.
    pub fn new(dir: &str, options: RunOptions) -> anyhow::Result<Run> {
        let scenario = options
            .scenario
            .unwrap_or_else(|| PathBuf::from(format!("{dir}/scenario.toml")));
        let out = match options.out {
            Some(out) => out,
            None => scenario
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_else(|| PathBuf::from(".")),
        };
        std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
        Ok(Run {
            scenario,
            out,
            quick: options.quick,
            plot: options.plot,
            backend: options.backend,
            exe: options.exe,
        })
    }

    /// Reads and parses the scenario file as `T`.
    pub fn load<T: serde::de::DeserializeOwned>(&self) -> anyhow::Result<T> {
        let text = std::fs::read_to_string(&self.scenario)
            .with_context(|| format!("reading {}", self.scenario.display()))?;
        toml::from_str(&text).with_context(|| format!("parsing {}", self.scenario.display()))
    }

    /// Writes `results.json` (pretty) into the output directory; returns its path.
    pub fn write_results(&self, results: &serde_json::Value) -> anyhow::Result<PathBuf> {
        self.write_results_as("results.json", results)
    }

    /// Writes `results` (pretty) as `name` in the output directory; returns its path.
    fn write_results_as(&self, name: &str, results: &serde_json::Value) -> anyhow::Result<PathBuf> {
        let path = self.out.join(name);
        let text = serde_json::to_string_pretty(results)?;
        std::fs::write(&path, text + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
        Ok(path)
    }

    /// Runs `plot.py` from the scenario's directory on results.json (`/usr/bin/python3 plot.py
    /// RESULTS OUT_DIR`), unless plotting is off.
    pub fn plot(&self, results: &Path) -> anyhow::Result<()> {
        if !self.plot {
            return Ok(());
        }
        let script = self
            .scenario
            .parent()
            .unwrap_or_else(|| Path::new("."))
            .join("plot.py");
        let status = std::process::Command::new("/usr/bin/python3")
            .arg(&script)
            .arg(results)
            .arg(&self.out)
            .status()
            .with_context(|| format!("running {}", script.display()))?;
        anyhow::ensure!(status.success(), "{} failed: {status}", script.display());
        Ok(())
    }

    /// Writes `results` and draws the plot; returns the path of results.json.
    pub fn finish(&self, results: &serde_json::Value) -> anyhow::Result<PathBuf> {
        let path = self.write_results(results)?;
        self.plot(&path)?;
        Ok(path)
    }

    /// For an experiment with a runner on each backend: writes `results-<backend>.json`, so
    /// that the lab's and the simulator's results sit side by side, and draws the plot (whose
    /// script reads whichever of them exist); returns the path written.
    pub fn finish_per_backend(&self, results: &serde_json::Value) -> anyhow::Result<PathBuf> {
        let path = self.write_results_as(&format!("results-{}.json", self.backend), results)?;
        self.plot(&path)?;
        Ok(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(scenario: Option<PathBuf>, out: Option<PathBuf>) -> RunOptions {
        RunOptions {
            scenario,
            out,
            quick: true,
            plot: false,
            backend: Backend::Lab,
            exe: PathBuf::from("/bin/true"),
        }
    }

    #[test]
    fn paths_default_to_the_experiment_directory_and_results_land_in_out() {
        let dir = std::env::temp_dir().join(format!("rtlan-kit-run-{}", std::process::id()));
        let run = Run::new(
            "experiments/ethereal/fig4",
            options(None, Some(dir.clone())),
        )
        .expect("the output directory can be created");
        assert_eq!(
            run.scenario,
            PathBuf::from("experiments/ethereal/fig4/scenario.toml")
        );
        assert!(dir.is_dir());
        let path = run
            .finish(&serde_json::json!({"experiment": "x"}))
            .expect("results are written, no plot");
        let text = std::fs::read_to_string(&path).expect("results.json exists");
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(path, dir.join("results.json"));
        assert!(text.ends_with("}\n") && text.contains("\"experiment\": \"x\""));

        let scenario = dir.join("sub/scenario.toml");
        let run = Run::new("unused", options(Some(scenario), None)).expect("creatable");
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(run.out, dir.join("sub"));
    }
}
