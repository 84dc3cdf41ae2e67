//! Claims as the write path makes them: the claimed payloads opened for the worker (a poison
//! row contained on the way), a FIFO claim moved past poison heads, and idle polls answered by
//! a linearizable read instead of a Raft write.
//!
//! `envelope` arguments wrap a command as the caller's next proposal (its actor and request id):
//! the http layer owns callers and request ids, the write path only proposes what it is given.

use super::{Proposer, WriteError};
use crate::backend;
use crate::crypto;
use raftlane_statemachine::query::{DueRows, Reader};
use raftlane_statemachine::row::{ClaimChance, Stage};
use raftlane_statemachine::wire::command::DeadLetterNow;
use raftlane_statemachine::{
    checks, ClaimedRow, Command, Envelope, FifoEmpty, Millis, Outcome, Response, StoreError,
};
use std::time::Duration;

/// How many undecryptable heads one FIFO claim request dead-letters before giving up.
pub const MAX_CONTAINED_PER_CLAIM: usize = 64;

/// Due rows an idle-claim check looks at before giving up and proposing (filters that skip
/// many due rows make the check as costly as the claim itself).
const IDLE_CHECK_BUDGET: usize = 256;

/// How long an idle-claim check waits for this node to apply the read index.
const IDLE_READ_TIMEOUT: Duration = Duration::from_secs(1);

/// The time a claim proposed now would at least be applied at: the state's clock never runs
/// backwards, and the proposer stamps `now` (its wall clock, or the client's in test mode).
fn claim_time(clock: Millis, now: Millis) -> Millis {
    clock.max(now)
}

impl Proposer {
    /// Decrypt a claimed row's payload for the worker. A payload no configured key can decrypt
    /// is a poison row: it is dead-lettered at once under the claim's fence and `None` is
    /// returned, so it never reaches a worker. With encryption off the row is returned as
    /// stored.
    pub async fn open_claimed<E>(
        &self,
        mut item: ClaimedRow,
        envelope: &E,
    ) -> Result<Option<ClaimedRow>, WriteError>
    where
        E: Fn(Command) -> Envelope + Sync,
    {
        let Some(keyring) = self.at_rest.keyring() else {
            return Ok(Some(item));
        };
        let err = match keyring.decrypt(&item.payload) {
            Ok(plain) => {
                item.payload = plain;
                return Ok(Some(item));
            }
            Err(e) => e,
        };
        let key = crypto::key_id_of(&item.payload).unwrap_or("?");
        let error = format!("undecryptable payload (key {key}): {err}");
        tracing::warn!(row = item.row_id.0, message = item.message_id.0, key, %err,
            "claimed row cannot be decrypted; dead-lettering it");
        // The error is sealed on its way like every covered value.
        let command = Command::DeadLetterNow(DeadLetterNow {
            row_id: item.row_id,
            fence: Some(item.fence),
            error,
        });
        // A transport failure is the caller's error (the row stays claimed until its lease
        // runs out, and is contained on its next claim); a rejection (stale fence) means it
        // moved on.
        if let (_, Err(rejection)) = self.write(envelope(command)).await? {
            tracing::warn!(row = item.row_id.0, %rejection, "dead-lettering an undecryptable row was rejected");
        }
        Ok(None)
    }

    /// [`Proposer::open_claimed`] for each row of an unordered claim: the poison rows are left
    /// out, the others keep their order.
    pub async fn open_claims<E>(
        &self,
        claimed: Vec<ClaimedRow>,
        envelope: &E,
    ) -> Result<Vec<ClaimedRow>, WriteError>
    where
        E: Fn(Command) -> Envelope + Sync,
    {
        let mut items = Vec::with_capacity(claimed.len());
        for item in claimed {
            if let Some(item) = self.open_claimed(item, envelope).await? {
                items.push(item);
            }
        }
        Ok(items)
    }

    /// The answer of a FIFO claim whose proposal answered `outcome` (a `ClaimNextFifo`, or a
    /// `DoneThenClaimNext` whose claim part this is), with its head opened.
    ///
    /// A head whose payload cannot be decrypted is dead-lettered and the lane claimed again
    /// with `again`, so a poison row never stalls it; bounded: after
    /// [`MAX_CONTAINED_PER_CLAIM`] of them the request answers [`WriteError::PoisonLane`] in
    /// time. The answer is the last proposal's response (a rejection of a repeated claim
    /// included); an outcome of another shape is passed through for the caller to judge.
    pub async fn fifo_claim<E>(
        &self,
        mut outcome: Outcome,
        again: &Command,
        envelope: &E,
    ) -> Result<Response, WriteError>
    where
        E: Fn(Command) -> Envelope + Sync,
    {
        let mut contained = 0;
        loop {
            let Outcome::FifoClaimed(Ok(item)) = outcome else {
                return Ok(Ok(outcome));
            };
            if let Some(item) = self.open_claimed(item, envelope).await? {
                return Ok(Ok(Outcome::FifoClaimed(Ok(item))));
            }
            contained += 1;
            if contained >= MAX_CONTAINED_PER_CLAIM {
                return Err(WriteError::PoisonLane { contained });
            }
            outcome = match self.write(envelope(again.clone())).await?.1 {
                Ok(next) => next,
                rejected @ Err(_) => return Ok(rejected),
            };
        }
    }

    /// The answer `probe` finds in the state, if it finds one both in this node's local state
    /// and then in a linearizable read of it; `None` (propose, as always) otherwise.
    ///
    /// Not while the batcher is saturated: then an empty claim just joins a batch that is being
    /// fsynced anyway, which measured cheaper than a heartbeat round per check (saturated
    /// pipeline: 636 / 610 msgs/s proposing every empty claim vs 564 / 560 checking every one).
    /// The local read comes next because it is free: when it already shows work to claim the
    /// claim is proposed at once, without paying for a leadership confirmation.
    /// Only an answer the linearizable read confirms is returned. The read index comes from the
    /// batcher, which shares one confirmation among concurrent callers. A follower, a node
    /// without quorum or one slow to apply the index returns `None`: proposing is always
    /// correct.
    async fn answer_without_write<T>(
        &self,
        probe: impl Fn(&Reader<'_>) -> Result<Option<T>, StoreError>,
    ) -> Result<Option<T>, WriteError> {
        if self.saturated() || backend::read(self.backend.as_ref(), &probe)?.is_none() {
            return Ok(None);
        }
        let Ok(index) = self.read_index().await else {
            return Ok(None);
        };
        if self
            .backend
            .wait_applied(index, IDLE_READ_TIMEOUT)
            .await
            .is_err()
        {
            return Ok(None);
        }
        Ok(backend::read(self.backend.as_ref(), probe)?)
    }

    /// An idle FIFO poll answered without a Raft write.
    ///
    /// A claim of a lane whose head is missing or not yet due, with no row inflight and no live
    /// lease of another owner, claims nothing (the state machine's rule: `fifo_idle_answer`).
    /// That answer is read here, linearizably, instead of proposed, so idle workers cost no log
    /// entries, fsyncs or applies. In every other case (and whenever in doubt) `None`: propose.
    /// `now` is the time the claim's envelope would carry.
    pub async fn idle_fifo_answer(
        &self,
        stage: Stage,
        lane: &str,
        owner: &str,
        now: Millis,
    ) -> Result<Option<FifoEmpty>, WriteError> {
        self.answer_without_write(|r| {
            r.fifo_idle_answer(stage, lane, owner, claim_time(r.meta().clock, now))
        })
        .await
    }

    /// Whether a linearizable read shows that a `ClaimReady` of `stage` with these filters
    /// would claim nothing (no due row matches), so the empty answer needs no Raft write.
    /// `false` whenever in doubt, including filters the state machine would reject (it must be
    /// the one to say so). `now` is the time the claim's envelope would carry.
    pub async fn nothing_due(
        &self,
        stage: Stage,
        channel: Option<&str>,
        destination: Option<&str>,
        now: Millis,
    ) -> Result<bool, WriteError> {
        if checks::opt_name("channel", channel).is_err()
            || checks::opt_name("destination", destination).is_err()
        {
            return Ok(false);
        }
        let nothing = self
            .answer_without_write(|r| {
                let t = claim_time(r.meta().clock, now);
                let due = r.due_rows(stage, t, channel, destination, IDLE_CHECK_BUDGET)?;
                Ok((due == DueRows::None).then_some(()))
            })
            .await?;
        Ok(nothing.is_some())
    }
}

/// When a `ClaimReady` of `stage` with these filters could next claim a row, as `r` shows it at
/// `now` (clamped as a proposed claim would be): the probe of a claim that waits for work
/// (`crate::wait`), looking at no more due rows than the idle check does.
pub fn ready_chance(
    r: &Reader<'_>,
    stage: Stage,
    channel: Option<&str>,
    destination: Option<&str>,
    now: Millis,
) -> Result<ClaimChance, StoreError> {
    let t = claim_time(r.meta().clock, now);
    r.ready_claim_chance(stage, t, channel, destination, IDLE_CHECK_BUDGET)
}

/// When the FIFO claim `command` (a `ClaimNextFifo` or `ClaimFifoHead`) could next hand out the
/// lane's head, as `r` shows it at `now`; `Now` for any other command (the claim decides).
pub fn fifo_chance(
    r: &Reader<'_>,
    command: &Command,
    now: Millis,
) -> Result<ClaimChance, StoreError> {
    let t = claim_time(r.meta().clock, now);
    match command {
        Command::ClaimNextFifo(c) => {
            r.fifo_claim_chance(c.stage, &c.lane, &c.owner, Some(&c.owner), t)
        }
        Command::ClaimFifoHead(c) => {
            r.fifo_claim_chance(c.stage, &c.lane, &c.owner, c.lane_owner.as_deref(), t)
        }
        _ => Ok(ClaimChance::Now),
    }
}
