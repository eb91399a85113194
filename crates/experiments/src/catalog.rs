//! The experiments by name, with where their files live (`experiments/<paper>/<name>/`) and how
//! to run each: the one entry point the binary's `rtlan experiment …` calls.

use std::path::PathBuf;

use crate::kit::run::{Run, RunOptions};
use crate::{ethereal, loser};

/// One reproduction of a paper's figure or table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Experiment {
    /// EtheReal §4.1, Fig. 4: delivered rate against interfering connections.
    Fig4,
    /// EtheReal §4.2, Fig. 5: TCP and a reserved connection between the same hosts.
    Fig5,
    /// EtheReal §4.2, Fig. 6: inter-arrival times at the switch input and at the destination.
    Fig6,
    /// EtheReal §4.2, Fig. 7: non-real-time latency against reserved bandwidth.
    Fig7,
    /// EtheReal §4.2, Table 1: shaper tick accuracy under CPU load.
    Table1,
    /// EtheReal §4.3: admitted connections against the CPU budget.
    Capacity,
    /// Löser/Härtig §4.2–§4.3: Tables 2, 4, 5 and Fig. 7 in the lab.
    Loser,
}

impl Experiment {
    /// Every experiment, in the order of the papers.
    pub const ALL: [Experiment; 7] = [
        Experiment::Fig4,
        Experiment::Fig5,
        Experiment::Fig6,
        Experiment::Fig7,
        Experiment::Table1,
        Experiment::Capacity,
        Experiment::Loser,
    ];

    /// The name on the command line and in results.json.
    pub fn name(self) -> &'static str {
        match self {
            Experiment::Fig4 => "fig4",
            Experiment::Fig5 => "fig5",
            Experiment::Fig6 => "fig6",
            Experiment::Fig7 => "fig7",
            Experiment::Table1 => "table1",
            Experiment::Capacity => "capacity",
            Experiment::Loser => "loser",
        }
    }

    /// The directory of its scenario, plot script and page, relative to the repository root.
    pub fn dir(self) -> String {
        match self {
            Experiment::Loser => "experiments/loser/lab".to_string(),
            other => format!("experiments/ethereal/{}", other.name()),
        }
    }

    /// Whether the binary prints the path of results.json when the run is done (these runners
    /// always have).
    pub fn announces_results(self) -> bool {
        matches!(
            self,
            Experiment::Fig4 | Experiment::Fig7 | Experiment::Capacity
        )
    }

    /// Runs the experiment; returns the path of the results.json it wrote. Only the lab can run
    /// them yet: on the simulator backend this fails with [`crate::BackendError::SimUnavailable`]
    /// before anything is built.
    pub fn run(self, options: RunOptions) -> anyhow::Result<PathBuf> {
        options.backend.require_lab(self.name())?;
        rtlan_lab::install_signal_cleanup()?;
        let run = Run::new(&self.dir(), options)?;
        match self {
            Experiment::Fig4 => ethereal::fig4::run(&run),
            Experiment::Fig5 => ethereal::fig5::run(&run),
            Experiment::Fig6 => ethereal::fig6::run(&run),
            Experiment::Fig7 => ethereal::fig7::run(&run),
            Experiment::Table1 => ethereal::table1::run(&run),
            Experiment::Capacity => ethereal::capacity::run(&run),
            Experiment::Loser => loser::run(&run),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Backend, BackendError};

    #[test]
    fn every_experiment_has_its_directory_and_scenario_in_the_repository() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
        for e in Experiment::ALL {
            let scenario = PathBuf::from(root).join(e.dir()).join("scenario.toml");
            assert!(scenario.is_file(), "{}: {}", e.name(), scenario.display());
            assert!(e.dir().ends_with(if e == Experiment::Loser {
                "loser/lab"
            } else {
                e.name()
            }));
        }
    }

    #[test]
    fn the_simulator_backend_fails_before_building_anything() {
        let out = std::env::temp_dir().join(format!("rtlan-catalog-sim-{}", std::process::id()));
        let options = RunOptions {
            scenario: None,
            out: Some(out.clone()),
            quick: true,
            plot: false,
            backend: Backend::Sim,
            exe: PathBuf::from("/nonexistent/rtlan"),
        };
        let e = Experiment::Fig5
            .run(options)
            .expect_err("no simulator runner");
        assert!(
            matches!(
                e.downcast_ref::<BackendError>(),
                Some(BackendError::SimUnavailable { scenario }) if scenario == "fig5"
            ),
            "{e:#}"
        );
        assert!(!out.exists(), "nothing was created");
    }
}
