//! The bandwidth manager service (`rtlan bwm`): the Linux shell around the sans-IO
//! [`rtlan_core::bwm::Manager`] (seed 004 §3.2 "Admission process", seed 001 §3.2–3.4).
//!
//! - [`auth`]: the tokens file (who may ask, in which role).
//! - [`network`]: reads `rtlan analyze`'s network file into a topology.
//! - [`store`]: the state file, replaced atomically on every change and reloaded at start.
//! - [`server`]: the management envelope (`docs/mgmt.md`) over TCP, one thread and one `epoll`
//!   for every client, bounded clients with an idle time-out, tokens, clean stop on a flag.
//! - [`client`]: the blocking [`BwmClient`].
//!
//! Protocol, state file and examples: `docs/bwm.md`.

pub mod auth;
pub mod client;
pub mod lock;
pub mod network;
pub mod server;
pub mod store;

#[cfg(test)]
mod tests;

pub use auth::{load_tokens, parse_tokens, TokensFileError};
pub use client::{BwmClient, ClientError};
pub use lock::{LockError, StateLock};
pub use network::{load_network, parse_network, NetworkError};
pub use server::{
    response_to_result, result_to_response, Server, ServerConfig, ServerError, IDLE_TIMEOUT,
    MAX_CLIENTS, MAX_LINE,
};
pub use store::{load_state, save_state, Journal, StoreError, COMPACT_EVERY};
