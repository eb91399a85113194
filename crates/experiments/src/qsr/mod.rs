//! The IBM QoS switch-router paper (QSR) §6 reproduced: the forwarding rate against packet size
//! and look-up depth (§6.1, Fig. 6; [`fig6`], lab), a video stream across three routers under a
//! blast without and with a reservation (§6.2; [`video`], lab and simulator) and RSVP
//! signalling under overload without and with the protected network control channel (§6.2;
//! [`signalling`], lab and simulator). Each runner reads `experiments/qsr/<name>/scenario.toml`,
//! writes `results.json` beside it and draws its plot; `experiments/qsr/README.md` sets our
//! numbers beside the paper's. What the runners share is in [`crate::kit`].

pub mod fig6;
pub mod signalling;
pub mod video;
