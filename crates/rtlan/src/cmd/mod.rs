//! Subcommands.

pub(crate) mod analyze;
pub(crate) mod bench;
pub(crate) mod bwm;
pub(crate) mod bwmctl;
pub(crate) mod demo;
pub(crate) mod experiment;
pub(crate) mod lab;
pub(crate) mod recv;
pub(crate) mod reserve;
pub(crate) mod router;
pub(crate) mod rtcd;
pub(crate) mod runner;
pub(crate) mod send;
pub(crate) mod signals;
pub(crate) mod sim;
pub(crate) mod switch;
pub(crate) mod tc_config;
