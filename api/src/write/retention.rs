//! An operator's retention purge (`POST /v1/retention/purge`): the [`RetentionPlan`] of its
//! kind walked step by step through the write path, as the leader's retention timer walks its
//! own (`raftlane_raft::retention`: one plan, one paging loop for both).

use super::{Proposer, WriteError};
use raftlane_raft::retention::{RetentionPlan, StepEnd};
use raftlane_statemachine::{Command, Envelope};

/// What a purge did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Purge {
    /// The log index of the last entry the purge committed.
    pub index: u64,
    /// Items purged (the index walk's messages are not counted).
    pub purged: u64,
}

impl Proposer {
    /// Walk `plan`, each command proposed as `envelope` wraps it (the caller's actor and
    /// request ids), stopping at the first step that does not finish.
    pub async fn purge<E>(&self, plan: &RetentionPlan, envelope: &E) -> Result<Purge, WriteError>
    where
        E: Fn(Command) -> Envelope + Sync,
    {
        let mut done = Purge::default();
        for step in plan.steps() {
            let run = step.run(|command| self.write(envelope(command))).await;
            done.index = run.index;
            done.purged += run.purged;
            match run.end {
                StepEnd::Finished => {}
                StepEnd::Failed(e) => return Err(e),
                StepEnd::Rejected(rejection) => return Err(WriteError::Rejected(rejection)),
                StepEnd::Unexpected(other) => {
                    return Err(WriteError::UnexpectedOutcome(Box::new(other)))
                }
            }
        }
        Ok(done)
    }
}
