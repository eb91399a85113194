//! EtheReal (Varadarajan & Chiueh) §4 reproduced in a lab: Fig. 4 (§4.1), Figs. 5–7 and
//! Table 1 (§4.2), and the connection capacity of §4.3. Each runner reads
//! `experiments/ethereal/<name>/scenario.toml`, writes `results.json` beside it and draws its
//! plot; the page `experiments/ethereal/README.md` sets our numbers beside the paper's. What the
//! runners share is in [`crate::kit`].

pub mod capacity;
pub mod fig4;
pub mod fig5;
pub mod fig6;
pub mod fig7;
pub mod table1;
