//! Subcommands.

pub(crate) mod bench;
pub(crate) mod demo;
pub(crate) mod lab;
pub(crate) mod rtcd;
pub(crate) mod switch;
