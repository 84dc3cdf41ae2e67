//! The checkers: each a pure function over the recorded histories and the final state, each in
//! its own module with tests on known-good and deliberately corrupted inputs.

pub mod audit;
pub mod cluster_time;
pub mod digest;
pub mod fencing;
pub mod fifo;
pub mod leases;
pub mod linearizable;
pub mod lost;
pub mod terminal;
pub mod throughput;

use crate::final_state::FinalState;
use crate::history::{Recorded, RegState};
use serde::Serialize;

/// One checker's result.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Verdict {
    pub name: &'static str,
    /// How many items it checked (messages, rows, operations...).
    pub checked: u64,
    pub violations: Vec<String>,
    /// Informational lines (not failures).
    pub notes: Vec<String>,
}

impl Verdict {
    pub fn new(name: &'static str) -> Self {
        Self {
            name,
            ..Default::default()
        }
    }

    pub fn ok(&self) -> bool {
        self.violations.is_empty()
    }

    pub fn fail(&mut self, msg: impl Into<String>) {
        self.violations.push(msg.into());
    }
}

/// Run every checker.
pub fn run_all(rec: &Recorded, fin: &FinalState) -> Vec<Verdict> {
    vec![
        lost::check(&rec.enqueues, &fin.messages),
        fifo::check(&fin.messages, &rec.claims, &rec.completions),
        fencing::check(&rec.claims, &rec.completions, &fin.messages),
        leases::check(&rec.claims, &rec.completions),
        cluster_time::check(&rec.enqueues, &fin.messages, rec.start_wall_ms),
        terminal::check(&fin.messages, fin.live_rows),
        throughput::check(&rec.enqueues, &rec.judged_windows),
        digest::check(&fin.digest_rounds, &fin.digest_inconsistencies),
        audit::check(&fin.audit, &fin.audit_rows, &rec.audits),
        linearizable::check(
            &rec.register,
            rec.register_init.clone().unwrap_or(RegState {
                version: 0,
                value: None,
            }),
        ),
        linearizable::check_versions(
            &rec.register,
            &fin.config_versions,
            rec.register_init.as_ref().map_or(0, |s| s.version),
        ),
    ]
}
