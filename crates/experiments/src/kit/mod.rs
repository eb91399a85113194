//! What several runners share, so that no figure's runner imports from another figure's file:
//! the run's paths and outputs ([`run`]: scenario file, `results.json`, the `plot.py` call),
//! labs and their processes ([`lab`]: building a lab, guarded processes, restarting a switch),
//! measurement helpers ([`measure`]: arrival logs, load average, clocks, interval statistics),
//! progress reporting ([`progress`]) for the binary to draw, routed topologies and router
//! restarts for the QSR runners ([`routed`]) and a reservation held open through a lab host's
//! daemon ([`rtcd`]).

pub mod lab;
pub mod measure;
pub mod progress;
pub mod routed;
pub mod rtcd;
pub mod run;
