//! What `rtlan demo`, `rtlan experiment …` and `rtlan bench …` share in the binary: the
//! `--backend` flag and a progress bar that draws the library's progress steps.

use indicatif::{ProgressBar, ProgressStyle};
use rtlan_experiments::kit::progress::Step;
use rtlan_experiments::Backend;

/// `--backend lab|sim`.
#[derive(Debug, Clone, Copy, Default, clap::ValueEnum)]
pub(crate) enum BackendArg {
    /// Network namespaces on this machine (needs root).
    #[default]
    Lab,
    /// The discrete-event simulator.
    Sim,
}

impl From<BackendArg> for Backend {
    fn from(b: BackendArg) -> Backend {
        match b {
            BackendArg::Lab => Backend::Lab,
            BackendArg::Sim => Backend::Sim,
        }
    }
}

/// A progress bar with `template`, for [`draw`].
pub(crate) fn bar(template: &str) -> anyhow::Result<ProgressBar> {
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template(template)
            .map_err(|e| anyhow::anyhow!("progress template: {e}"))?
            .progress_chars("=> "),
    );
    Ok(bar)
}

/// Draws one library progress step on `bar`.
pub(crate) fn draw(bar: &ProgressBar, step: Step) {
    match step {
        Step::Message(m) => bar.set_message(m),
        Step::Length(n) => bar.set_length(n),
        Step::Advance(n) => bar.inc(n),
        Step::Position(n) => bar.set_position(n),
    }
}
