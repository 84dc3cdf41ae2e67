//! Raising the cluster's log format once every member can read it (docs/SPEC.md §2.8): the
//! last step of a rolling upgrade.
//!
//! A node writes envelopes in the format the replicated state names (format 1 until raised), so
//! a node of the previous build, which reads only format 1, stays in step while the nodes are
//! replaced one by one. Raising it is the leader's job, like a membership change and under the
//! same lock: it asks every member (voters and learners) over the signed `/raft/formats` call
//! which formats its build reads, and proposes
//! [`SetLogFormat`](raftlane_statemachine::wire::command::SetLogFormat) only when all of them
//! read the new one. A node of a build before this call answers it 404: the raise is refused,
//! naming that node. Nothing else changes: entries already in the log keep their format, and
//! every build reads every format it ever wrote.

use crate::node::{NodeInner, NotLeader, RaftNode, WriteError};
use crate::quorum::Lead;
use crate::types::NodeId;
use crate::wire::{self, FormatsRequest, FormatsResponse};
use raftlane_statemachine::wire::command::SetLogFormat;
use raftlane_statemachine::wire::LogFormat;
use raftlane_statemachine::{Command, Envelope, Response};
use std::sync::Weak;
use std::time::Duration;
use tokio::sync::watch;

/// How long a member has to say which formats it reads.
const ASK_TIMEOUT: Duration = Duration::from_secs(5);

/// Why the log format was not raised.
#[derive(Debug, thiserror::Error)]
pub enum LogFormatError {
    /// This node does not lead (the API forwards the request to the leader).
    #[error(transparent)]
    NotLeader(#[from] NotLeader),
    /// A member cannot read the format (an older build), or did not say.
    #[error("node {node} cannot take log format {format}: {why}")]
    MemberCannotRead {
        node: NodeId,
        format: u32,
        why: String,
    },
    /// Proposing the change failed.
    #[error(transparent)]
    Write(#[from] WriteError),
}

/// On the leader, every `every` (`Tuning::log_format_watch_ms`; zero: never): raise the cluster's format to the newest this build
/// writes as soon as every member reads it, so a rolling upgrade needs no last step (and a new
/// cluster of this build writes the newest format from its first seconds).
pub(crate) async fn watch(node: Weak<NodeInner>, every: Duration, stop: watch::Receiver<bool>) {
    if every.is_zero() {
        return;
    }
    let mut ticks = crate::util::Ticks::after(every, stop);
    while ticks.next().await {
        let Some(inner) = node.upgrade() else { return };
        RaftNode { inner }.raise_when_every_member_reads().await;
    }
}

impl RaftNode {
    /// Raise the cluster's log format to `format` for `actor`: on the leader, once every
    /// member reads it. Answers the entry's index and the state machine's response (which
    /// refuses a format this build does not know, and a step back).
    pub async fn raise_log_format(
        &self,
        format: u32,
        actor: &str,
    ) -> Result<(u64, Response), LogFormatError> {
        if !matches!(self.lead(), Lead::Leads { .. }) {
            return Err(self.not_leader().into());
        }
        // One change of the cluster's shape at a time: no member joins between the question
        // and the entry (`cluster.rs` and the leader transfer hold the same lock).
        let _one_change = self.inner.membership_lock.lock().await;
        self.raise_locked(format, actor).await
    }

    /// [`Self::raise_log_format`] with the membership lock held. A format this build does not
    /// know is not asked about: the state machine refuses it.
    async fn raise_locked(
        &self,
        format: u32,
        actor: &str,
    ) -> Result<(u64, Response), LogFormatError> {
        if LogFormat::from_number(format).is_some() {
            self.every_member_reads(format).await?;
        }
        let command = Command::SetLogFormat(SetLogFormat { format });
        Ok(self.client_write(Envelope::new(0, actor, command)).await?)
    }

    /// One look of the [`watch`]: nothing unless this node leads, the cluster writes an older
    /// format than this build's newest, no membership change is under way, and every member
    /// says it reads the newest.
    async fn raise_when_every_member_reads(&self) {
        let newest = LogFormat::NEWEST;
        if self.log_format() >= newest || !matches!(self.lead(), Lead::Leads { .. }) {
            return;
        }
        let Ok(_one_change) = self.inner.membership_lock.try_lock() else {
            return;
        };
        let raised = self
            .raise_locked(newest.number(), crate::timers::TIMER_ACTOR)
            .await;
        match raised {
            Ok((index, Ok(_))) => tracing::info!(
                id = self.id(),
                index,
                format = newest.number(),
                "log format raised: every member reads it"
            ),
            Ok((_, Err(rejection))) => {
                tracing::warn!(id = self.id(), %rejection, "log format not raised")
            }
            Err(e @ LogFormatError::MemberCannotRead { .. }) => {
                tracing::debug!(id = self.id(), error = %e, "log format stays: a member cannot read the newest")
            }
            Err(e) => tracing::debug!(id = self.id(), error = %e, "log format not raised"),
        }
    }

    /// Ask every member but this node which formats it reads; `Err` names the first that
    /// does not read `format` or does not answer.
    async fn every_member_reads(&self, format: u32) -> Result<(), LogFormatError> {
        let members: Vec<(NodeId, String)> = {
            let m = self.raft().metrics().borrow().clone();
            m.membership_config
                .membership()
                .nodes()
                .map(|(id, node)| (*id, node.addr.clone()))
                .collect()
        };
        for (node, addr) in members {
            if node == self.id() {
                continue;
            }
            let answer: Result<FormatsResponse, _> = self
                .inner
                .network
                .peer(node, &addr)
                .call(wire::PATH_FORMATS, &FormatsRequest {}, ASK_TIMEOUT)
                .await;
            let why = match answer {
                Ok(a) if a.reads.contains(&format) => continue,
                Ok(a) => format!("its build reads formats {:?}", a.reads),
                Err(e) => format!(
                    "it did not say which formats it reads ({e}); a build before log format 2 \
                     answers 404: upgrade it first"
                ),
            };
            return Err(LogFormatError::MemberCannotRead { node, format, why });
        }
        Ok(())
    }
}
