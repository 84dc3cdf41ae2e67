//! The model: the plain types the state is made of (ids, messages and their events, work rows
//! and lanes, the configuration document, principals, approvals, audit rows, transform state,
//! captured responses, the engine's users, roles and sessions, and the counters). Values only:
//! no storage, no commands, no rules beyond what a type says about itself.
//!
//! The bottom layer: it uses nothing else of the crate. [`crate::wire`] builds commands and
//! answers from these types; [`crate::tables`] stores them.

pub mod approval;
pub mod audit;
pub mod config;
pub mod coordination;
pub mod destination;
pub mod ids;
pub mod lane;
pub mod message;
pub mod meta;
pub mod principal;
pub mod response;
pub mod retention;
pub mod row;
pub mod session;
pub mod stage;
pub mod state;
pub mod user;
