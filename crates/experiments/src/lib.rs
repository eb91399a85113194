//! rtlan's experiments as a library (DESIGN.md §6): the reproductions of the papers' evaluations
//! (EtheReal §4.1–§4.3, Figs. 4–7, Table 1 and the capacity of §4.3 in [`ethereal`]; Löser/Härtig
//! §4.2–§4.3, Tables 2, 4, 5 in [`loser`]; per-connection delay bounds across hops in
//! [`multihop`], on the simulator; the QSR paper's §6 in [`qsr`]; RETHER §1, §4.3 and §5 in
//! [`rether`], on the simulator's shared segment), the lab benchmarks against the Linux bridge
//! ([`bench`]), the guarantee demo ([`demo`]) and the lab processes they all share
//! ([`labkit`]). The `rtlan` binary parses arguments and prints; the runners live here so that
//! the binary, the lab tests and the simulator share them.
//!
//! Shared helpers live in [`kit`]; no figure's runner imports from another figure's file. A
//! runner takes a [`Backend`]: the lab for the paper experiments, the simulator for `multihop`
//! and either for the demo (see [`backend`], [`catalog::Experiment::backends`]).

pub mod backend;
pub mod bench;
pub mod catalog;
pub mod demo;
pub mod ethereal;
pub mod kit;
pub mod labkit;
pub mod loser;
pub mod multihop;
pub mod qsr;
pub mod rether;

pub use backend::{Backend, BackendError};
pub use catalog::Experiment;
