//! Where a scenario runs: in a lab (real namespaces, the real rtlan switch or the Linux bridge,
//! real Linux stacks and tools; DESIGN.md §5) or in the discrete-event simulator (the same switch
//! core on virtual time; DESIGN.md §2, `crates/sim`).
//!
//! The seam: a runner first builds its scenario as data that does not mention where it runs —
//! the topology, the traffic (who sends what to whom, when, reserved or not) and what is measured
//! with the pass criterion (for the guarantee demo: [`crate::demo::Guarantee`]) — and then hands
//! it to the backend's runner. The lab runner turns the data into namespaces and processes; a
//! simulator runner turns the same data into simulated nodes and traffic sources and reports the
//! same per-flow results, so the printing, the JSON and the verdict are shared.

use std::fmt;
use std::str::FromStr;

/// Where a scenario runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Backend {
    /// Network namespaces on this machine (needs root).
    #[default]
    Lab,
    /// The discrete-event simulator.
    Sim,
}

impl Backend {
    /// The name on the command line (`lab`, `sim`).
    pub fn name(self) -> &'static str {
        match self {
            Backend::Lab => "lab",
            Backend::Sim => "sim",
        }
    }

    /// Fails unless this backend is one of `supported` (the runners `scenario` has).
    pub fn require(self, scenario: &str, supported: &[Backend]) -> Result<(), BackendError> {
        if supported.contains(&self) {
            return Ok(());
        }
        let scenario = scenario.to_string();
        Err(match self {
            Backend::Sim => BackendError::SimUnavailable { scenario },
            Backend::Lab => BackendError::LabUnavailable { scenario },
        })
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Backend {
    type Err = BackendError;

    fn from_str(s: &str) -> Result<Backend, BackendError> {
        match s {
            "lab" => Ok(Backend::Lab),
            "sim" => Ok(Backend::Sim),
            other => Err(BackendError::Unknown(other.to_string())),
        }
    }
}

/// Why a scenario cannot run on the chosen backend.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BackendError {
    /// A backend name other than `lab` or `sim`.
    #[error("unknown backend {0:?} (lab, sim)")]
    Unknown(String),
    /// The simulator has no runner for this scenario yet: it measures host stacks, tools or
    /// the Linux bridge, which the simulator does not model (the guarantee demo, `demo::sim`,
    /// and `multihop` have simulator runners).
    #[error(
        "{scenario} cannot run on the simulator backend: it has no simulator runner (it \
         measures what the simulator does not model: host stacks, tools or the Linux bridge); \
         run it with --backend lab, or `rtlan demo --backend sim` / `rtlan sim SCENARIO.toml`"
    )]
    SimUnavailable {
        /// The scenario's name (`demo`, `fig4`, …).
        scenario: String,
    },
    /// The scenario runs on the simulator only: it needs switches that never wake late (a
    /// lateness budget of zero), which the lab cannot give.
    #[error(
        "{scenario} cannot run on the lab backend: it runs on the simulator only (its \
         switches declare a zero lateness budget, which holds only where wake-ups are exact); \
         run it with --backend sim"
    )]
    LabUnavailable {
        /// The scenario's name.
        scenario: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_lab_is_the_default() {
        for b in [Backend::Lab, Backend::Sim] {
            assert_eq!(b.name().parse::<Backend>(), Ok(b));
        }
        assert_eq!(Backend::default(), Backend::Lab);
        assert_eq!(
            "ns3".parse::<Backend>(),
            Err(BackendError::Unknown("ns3".to_string()))
        );
    }

    #[test]
    fn each_backend_refuses_what_it_has_no_runner_for_and_says_why() {
        for (backend, supported, scenario, says) in [
            (Backend::Sim, Backend::Lab, "fig4", "--backend lab"),
            (Backend::Lab, Backend::Sim, "multihop", "--backend sim"),
        ] {
            assert_eq!(supported.require(scenario, &[supported]), Ok(()));
            let text = backend
                .require(scenario, &[supported])
                .expect_err("no runner")
                .to_string();
            assert!(text.contains(scenario) && text.contains(says), "{text}");
        }
        let sim = Backend::Sim.require("fig4", &[Backend::Lab]);
        assert!(
            sim.is_err_and(|e| e.to_string().contains("no simulator runner")),
            "the simulator says what it does not model"
        );
    }
}
