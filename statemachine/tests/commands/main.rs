//! Per-command tests of the state machine through its public API: the happy path of every
//! command and every rejection path, with exact outcomes, and for every rejection a check
//! that nothing changed (state digest and counters byte-identical before and after).
//!
//! Log indexes increase by one per applied command (see `cmd_support::Harness`); a claim's
//! fence is the index it was applied at.
//!
//! One module per topic; [`harness`] holds what they share.

#[path = "../cmd_support/mod.rs"]
mod cmd_support;

mod harness;

mod approvals;
mod audit;
mod channels;
mod claim_chance;
mod claim_owners;
mod claims;
mod clock;
mod completion;
mod config;
mod coordination;
mod created_at;
mod enqueue;
mod fencing;
mod fifo;
mod handoffs;
mod leases;
mod pause;
mod poison;
mod principals;
mod replay;
mod requests;
mod responses;
mod retention;
mod sessions;
mod users;

// --- messagefoundry store: queue side ---
mod approvals_as;
mod audit_actor;
mod fifo_owners;
mod queries;
mod recovery;
mod reference_text;
mod reingress_keyed;
mod sweeps;
mod views;
