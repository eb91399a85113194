//! The experiments by name, with where their files live (`experiments/<paper>/<name>/`) and how
//! to run each: the one entry point the binary's `rtlan experiment …` calls.

use std::path::PathBuf;

use crate::kit::run::{Run, RunOptions};
use crate::{ethereal, loser, multihop, qsr, rether, Backend};

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
    /// Per-connection delay bounds across several hops, both real-time schedulers, in the
    /// simulator (docs/delay.md; Löser/Härtig §4.3.1's observed/bound ratios beside ours).
    Multihop,
    /// QSR §6.1, Fig. 6: forwarding rate against packet size and look-up depth, the rtlan
    /// router beside the kernel's.
    QsrFig6,
    /// QSR §6.2: a video stream across three routers under a blast, without and with an RSVP
    /// reservation; packet and frame loss (lab and simulator).
    QsrVideo,
    /// QSR §6.2: RSVP set up and refreshed while every link is flooded, without and with the
    /// protected control channel (lab and simulator).
    QsrSignalling,
    /// RETHER §1, §4.3 and §5: Figs. 4, 5, 6, 8, 9, the 40 MPEG-I streams on 100 Mbit/s and
    /// Table 1, on the simulator's shared segment.
    Rether,
    /// RETHER §5, Fig. 7: the simulator validated against the lab's agents, five stations, 1–4
    /// MPEG-I sessions, non-real-time access delay both ways.
    RetherFig7,
}

impl Experiment {
    /// Every experiment, in the order of the papers.
    pub const ALL: [Experiment; 13] = [
        Experiment::Fig4,
        Experiment::Fig5,
        Experiment::Fig6,
        Experiment::Fig7,
        Experiment::Table1,
        Experiment::Capacity,
        Experiment::Loser,
        Experiment::Multihop,
        Experiment::QsrFig6,
        Experiment::QsrVideo,
        Experiment::QsrSignalling,
        Experiment::Rether,
        Experiment::RetherFig7,
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
            Experiment::Multihop => "multihop",
            Experiment::QsrFig6 => "qsr-fig6",
            Experiment::QsrVideo => "qsr-video",
            Experiment::QsrSignalling => "qsr-signalling",
            Experiment::Rether => "rether",
            Experiment::RetherFig7 => "rether-fig7",
        }
    }

    /// The directory of its scenario, plot script and page, relative to the repository root.
    pub fn dir(self) -> String {
        match self {
            Experiment::Loser => "experiments/loser/lab".to_string(),
            Experiment::Multihop => "experiments/multihop".to_string(),
            Experiment::QsrFig6 => "experiments/qsr/fig6".to_string(),
            Experiment::QsrVideo => "experiments/qsr/video".to_string(),
            Experiment::QsrSignalling => "experiments/qsr/signalling".to_string(),
            Experiment::Rether => "experiments/rether".to_string(),
            Experiment::RetherFig7 => "experiments/rether/fig7".to_string(),
            other => format!("experiments/ethereal/{}", other.name()),
        }
    }

    /// Whether the binary prints the path of results.json when the run is done (these runners
    /// always have).
    pub fn announces_results(self) -> bool {
        matches!(
            self,
            Experiment::Fig4
                | Experiment::Fig7
                | Experiment::Capacity
                | Experiment::Multihop
                | Experiment::QsrFig6
                | Experiment::QsrVideo
                | Experiment::QsrSignalling
                | Experiment::Rether
                | Experiment::RetherFig7
        )
    }

    /// The backends it has a runner for, the default first. The paper experiments measure host
    /// stacks, tools or the Linux bridge, which only the lab has; `multihop` measures the
    /// switches' bounds with exact (never late) wake-ups, which only the simulator gives; the
    /// QSR video and signalling experiments run on both (the simulator at 100 routers).
    pub fn backends(self) -> &'static [Backend] {
        match self {
            Experiment::Multihop | Experiment::Rether => &[Backend::Sim],
            Experiment::QsrVideo | Experiment::QsrSignalling => &[Backend::Lab, Backend::Sim],
            // RetherFig7 compares the two; it runs the simulator itself after the lab.
            _ => &[Backend::Lab],
        }
    }

    /// The backend used when none is chosen.
    pub fn default_backend(self) -> Backend {
        self.backends()[0]
    }

    /// Runs the experiment; returns the path of the results.json it wrote. On a backend not in
    /// [`Experiment::backends`] this fails ([`crate::BackendError::SimUnavailable`] or
    /// [`crate::BackendError::LabUnavailable`]) before anything is built.
    pub fn run(self, options: RunOptions) -> anyhow::Result<PathBuf> {
        options.backend.require(self.name(), self.backends())?;
        if options.backend == Backend::Lab {
            rtlan_lab::install_signal_cleanup()?;
        }
        let run = Run::new(&self.dir(), options)?;
        match self {
            Experiment::Fig4 => ethereal::fig4::run(&run),
            Experiment::Fig5 => ethereal::fig5::run(&run),
            Experiment::Fig6 => ethereal::fig6::run(&run),
            Experiment::Fig7 => ethereal::fig7::run(&run),
            Experiment::Table1 => ethereal::table1::run(&run),
            Experiment::Capacity => ethereal::capacity::run(&run),
            Experiment::Loser => loser::run(&run),
            Experiment::Multihop => multihop::run(&run),
            Experiment::QsrFig6 => qsr::fig6::run(&run),
            Experiment::QsrVideo => qsr::video::run(&run),
            Experiment::QsrSignalling => qsr::signalling::run(&run),
            Experiment::Rether => rether::run(&run),
            Experiment::RetherFig7 => rether::fig7::run(&run),
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
            let leaf = match e {
                Experiment::Loser => "loser/lab".to_string(),
                _ => e
                    .name()
                    .replace("qsr-", "qsr/")
                    .replace("rether-", "rether/"),
            };
            assert!(e.dir().ends_with(&leaf), "{}", e.dir());
            assert!(!e.backends().is_empty(), "{}", e.name());
        }
    }

    /// Runs `experiment` on `backend`, which it has no runner for; returns why it refused,
    /// after checking that nothing was created.
    fn refused(experiment: Experiment, backend: Backend) -> BackendError {
        let out = std::env::temp_dir().join(format!(
            "rtlan-catalog-{}-{backend}-{}",
            experiment.name(),
            std::process::id()
        ));
        let options = RunOptions {
            scenario: None,
            out: Some(out.clone()),
            quick: true,
            plot: false,
            backend,
            exe: PathBuf::from("/nonexistent/rtlan"),
        };
        let e = experiment
            .run(options)
            .expect_err("no runner on this backend");
        assert!(!out.exists(), "nothing was created");
        e.downcast::<BackendError>()
            .unwrap_or_else(|e| panic!("not a backend error: {e:#}"))
    }

    #[test]
    fn the_simulator_backend_fails_before_building_anything() {
        assert_eq!(
            refused(Experiment::Fig5, Backend::Sim),
            BackendError::SimUnavailable {
                scenario: "fig5".into()
            }
        );
    }

    #[test]
    fn multihop_runs_on_the_simulator_only() {
        assert_eq!(Experiment::Multihop.default_backend(), Backend::Sim);
        assert_eq!(Experiment::Fig4.default_backend(), Backend::Lab);
        assert_eq!(
            refused(Experiment::Multihop, Backend::Lab),
            BackendError::LabUnavailable {
                scenario: "multihop".into()
            }
        );
    }
}
