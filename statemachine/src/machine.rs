//! The state machine: applies batches of committed commands to a [`Store`], atomically.

use crate::command::{Command, Envelope, Outcome, Rejection, Response};
use crate::ids::Millis;
use crate::keys::meta;
use crate::store::{Direction, Store, StoreError, Table, TableEntry, WriteBatch};
use crate::txn::Txn;
use serde::{Deserialize, Serialize};

/// Counters and the monotonic clock, stored under `Meta/state` and updated with every batch.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetaState {
    /// The state machine's clock: the largest `now_ms` applied so far.
    pub clock: Millis,
    /// Next message id to assign.
    pub next_message_id: u64,
    /// Next row id (= global seq) to assign.
    pub next_row_id: u64,
    /// Index of the last applied log entry (0 = none).
    pub last_applied: u64,
    /// Rows by `[stage][status]`, kept in step by every row write, so stats cost nothing.
    pub row_counts: [[u64; 5]; 4],
}

/// Why a command could not be applied: a typed rejection (a no-op) or a storage failure
/// (fatal for this replica).
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    #[error(transparent)]
    Rejected(#[from] Rejection),
    #[error(transparent)]
    Store(#[from] StoreError),
}

pub type ApplyResult<T> = Result<T, ApplyError>;

/// Everything one command's application may touch: the batch overlay, the clamped time `t`,
/// the log index (fences and approval ids), the acting principal and the counters.
pub struct Ctx<'t, 's> {
    pub txn: &'t mut Txn<'s, dyn Store + 's>,
    pub meta: &'t mut MetaState,
    pub t: Millis,
    pub index: u64,
    pub actor: &'t str,
}

/// One log entry of a batch as the state machine sees it.
pub enum BatchItem<'e> {
    /// A client command at `index`.
    Command { index: u64, envelope: &'e Envelope },
    /// An entry without a command (blank or membership): advances `last_applied` only.
    Noop { index: u64 },
}

impl BatchItem<'_> {
    fn index(&self) -> u64 {
        match self {
            BatchItem::Command { index, .. } | BatchItem::Noop { index } => *index,
        }
    }
}

/// The replicated state machine over a store.
pub struct StateMachine<S: Store> {
    store: S,
    meta: MetaState,
}

impl<S: Store + 'static> StateMachine<S> {
    /// Open the state kept in `store` (empty store = empty state).
    pub fn open(store: S) -> Result<Self, StoreError> {
        let meta = match store.get(Table::Meta, meta::STATE)? {
            Some(bytes) => Txn::<S>::decode(Table::Meta, &bytes)?,
            None => MetaState::default(),
        };
        Ok(Self { store, meta })
    }

    pub fn store(&self) -> &S {
        &self.store
    }

    pub fn store_mut(&mut self) -> &mut S {
        &mut self.store
    }

    pub fn meta(&self) -> &MetaState {
        &self.meta
    }

    pub fn last_applied(&self) -> u64 {
        self.meta.last_applied
    }

    /// Apply one batch of committed entries in order, then write every effect, the counters,
    /// `last_applied` and the adapter's `external` metadata in one atomic store write.
    ///
    /// Entries at or below `last_applied` are skipped (a replay after a crash between the log's
    /// commit and this write re-delivers them). Returns one response per command item, in order
    /// (`None` for skipped and no-op items).
    pub fn apply_batch(
        &mut self,
        items: &[BatchItem<'_>],
        external: &[(Vec<u8>, Option<Vec<u8>>)],
    ) -> Result<Vec<Option<Response>>, StoreError> {
        let mut meta = self.meta.clone();
        let mut responses = Vec::with_capacity(items.len());
        let batch = {
            let base: &dyn Store = &self.store;
            let mut txn = Txn::new(base);
            for item in items {
                let index = item.index();
                if index <= meta.last_applied {
                    responses.push(None);
                    continue;
                }
                let response = match item {
                    BatchItem::Noop { .. } => None,
                    BatchItem::Command { envelope, .. } => match &envelope.command {
                        Command::Batch { commands } => {
                            Some(apply_group(&mut txn, &mut meta, index, commands)?)
                        }
                        _ => Some(apply_one(&mut txn, &mut meta, index, index, envelope)?),
                    },
                };
                meta.last_applied = index;
                responses.push(response);
            }
            txn.put(Table::Meta, meta::STATE.to_vec(), &meta);
            for (key, value) in external {
                let mut k = meta::EXTERNAL_PREFIX.to_vec();
                k.extend_from_slice(key);
                match value {
                    Some(v) => txn.put_raw(Table::Meta, k, v.clone()),
                    None => txn.delete(Table::Meta, k),
                }
            }
            txn.into_batch()
        };
        self.store.write(batch)?;
        self.meta = meta;
        Ok(responses)
    }

    /// Convenience for tests and tools: apply a single command at `index`.
    pub fn apply(&mut self, index: u64, envelope: &Envelope) -> Result<Response, StoreError> {
        let items = [BatchItem::Command { index, envelope }];
        let mut out = self.apply_batch(&items, &[])?;
        Ok(out
            .pop()
            .flatten()
            .unwrap_or(Err(Rejection::invalid("index", "already applied"))))
    }

    /// Read an adapter-owned metadata value written through `apply_batch`'s `external`.
    pub fn external(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        let mut k = meta::EXTERNAL_PREFIX.to_vec();
        k.extend_from_slice(key);
        self.store.get(Table::Meta, &k)
    }

    /// A read-only view for queries.
    pub fn read(&self) -> crate::query::Reader<'_> {
        crate::query::Reader::new(&self.store, &self.meta)
    }

    /// Replace the whole state with `entries` (a snapshot stream of `(table, key, value)`),
    /// atomically from the point of view of readers of this struct.
    pub fn install<I>(&mut self, entries: I) -> Result<(), StoreError>
    where
        I: IntoIterator<Item = TableEntry>,
    {
        self.store.clear()?;
        let mut batch = WriteBatch::default();
        for (table, key, value) in entries {
            batch.put(table, key, value);
            if batch.ops.len() >= 4096 {
                self.store.write(std::mem::take(&mut batch))?;
            }
        }
        self.store.write(batch)?;
        let meta = match self.store.get(Table::Meta, meta::STATE)? {
            Some(bytes) => Txn::<S>::decode(Table::Meta, &bytes)?,
            None => MetaState::default(),
        };
        self.meta = meta;
        Ok(())
    }

    /// Every `(table, key, value)` of the state in canonical order: the snapshot stream.
    pub fn export(&self) -> impl Iterator<Item = Result<TableEntry, StoreError>> + '_ {
        Table::ALL.into_iter().flat_map(move |table| {
            let iter: Box<dyn Iterator<Item = Result<TableEntry, StoreError>>> =
                match self.store.scan(table, &[], None, Direction::Forward) {
                    Ok(it) => Box::new(it.map(move |r| r.map(|(k, v)| (table, k, v)))),
                    Err(e) => Box::new(std::iter::once(Err(e))),
                };
            iter
        })
    }

    /// SHA-256 over the canonical walk of the logical state (see [`crate::digest`]).
    pub fn digest(&self) -> Result<[u8; 32], StoreError> {
        crate::digest::digest(&self.store)
    }
}

/// Apply the envelopes of a [`Command::Batch`], each under its own operation id.
fn apply_group<'s>(
    txn: &mut Txn<'s, dyn Store + 's>,
    meta: &mut MetaState,
    index: u64,
    commands: &[Envelope],
) -> Result<Response, StoreError> {
    if commands.len() > crate::command::MAX_BATCH {
        return Ok(Err(Rejection::invalid(
            "commands",
            format!("more than {} in one batch", crate::command::MAX_BATCH),
        )));
    }
    let mut responses = Vec::with_capacity(commands.len());
    for (position, envelope) in commands.iter().enumerate() {
        let response = match envelope.command {
            Command::Batch { .. } => Err(Rejection::invalid("commands", "a batch cannot nest")),
            _ => apply_one(
                txn,
                meta,
                index,
                crate::command::op_id(index, position),
                envelope,
            )?,
        };
        responses.push(response);
    }
    Ok(Ok(Outcome::Batch(responses)))
}

/// Apply one envelope, exactly once per request id: a request id already answered gets that
/// answer back ([`Outcome::Repeated`]) and changes nothing; a new one is applied and, when it
/// took effect, its answer remembered. A rejection is not remembered: it changed nothing, so
/// applying its retry cannot apply anything twice (and bad input still changes nothing).
///
/// `log_index` is the entry's index (what a repeat reports); `op` is the operation id the
/// command runs under (the same, or a batched envelope's own id: see [`crate::command::op_id`]).
fn apply_one<'s>(
    txn: &mut Txn<'s, dyn Store + 's>,
    meta: &mut MetaState,
    log_index: u64,
    op: u64,
    envelope: &Envelope,
) -> Result<Response, StoreError> {
    let Some(id) = envelope.request_id.as_deref() else {
        return apply_command(txn, meta, op, envelope);
    };
    if let Err(r) = crate::request::check_id(id) {
        return Ok(Err(r));
    }
    if let Some(answer) = crate::request::remembered(txn, &envelope.actor, id)? {
        return Ok(answer);
    }
    let response = apply_command(txn, meta, op, envelope)?;
    if response.is_ok() {
        crate::request::remember(txn, meta.clock, log_index, &envelope.actor, id, &response);
    }
    Ok(response)
}

/// Apply one command: a rejection rolls back everything it wrote; time is clamped first.
fn apply_command<'s>(
    txn: &mut Txn<'s, dyn Store + 's>,
    meta: &mut MetaState,
    index: u64,
    envelope: &Envelope,
) -> Result<Response, StoreError> {
    let saved_meta = meta.clone();
    let cp = txn.checkpoint();
    meta.clock = meta.clock.max(envelope.now_ms);
    let t = meta.clock;
    let result = {
        let mut cx = Ctx {
            txn,
            meta,
            t,
            index,
            actor: &envelope.actor,
        };
        dispatch(&mut cx, &envelope.command)
    };
    match result {
        Ok(outcome) => {
            txn.release(cp);
            Ok(Ok(outcome))
        }
        Err(ApplyError::Rejected(r)) => {
            // A rejection changes nothing, not even the clock: "bad input changes nothing".
            txn.rollback(cp);
            *meta = saved_meta;
            Ok(Err(r))
        }
        Err(ApplyError::Store(e)) => Err(e),
    }
}

fn dispatch(cx: &mut Ctx<'_, '_>, command: &Command) -> ApplyResult<Outcome> {
    use crate::{
        approval, audit, claim, complete, config, enqueue, handoff, principal, replay, retention,
        state,
    };
    match command {
        Command::EnqueueIngress {
            channel,
            raw,
            fields,
            idempotency_key,
        } => enqueue::enqueue_ingress(cx, channel, raw, fields, idempotency_key.as_deref()),
        Command::RecordReceived {
            channel,
            raw,
            fields,
            status,
            error,
        } => enqueue::record_received(cx, channel, raw, fields, *status, error.as_deref()),
        Command::EnqueueMessage {
            channel,
            raw,
            fields,
            deliveries,
            idempotency_key,
        } => enqueue::enqueue_message(
            cx,
            channel,
            raw,
            fields,
            deliveries,
            idempotency_key.as_deref(),
        ),
        Command::ClaimReady {
            stage,
            limit,
            channel,
            destination,
            owner,
            ttl_ms,
        } => claim::claim_ready(
            cx,
            *stage,
            *limit,
            channel.as_deref(),
            destination.as_deref(),
            owner,
            *ttl_ms,
        ),
        Command::ClaimNextFifo {
            stage,
            lane,
            owner,
            ttl_ms,
        } => claim::claim_next_fifo(cx, *stage, lane, owner, *ttl_ms),
        Command::RenewLeases { ids, owner, ttl_ms } => claim::renew_leases(cx, ids, owner, *ttl_ms),
        Command::ReclaimExpired { stage } => claim::reclaim_expired(cx, *stage),
        Command::ReleaseLane { stage, lane, owner } => claim::release_lane(cx, *stage, lane, owner),
        Command::RouteHandoff {
            row_id,
            fence,
            handlers,
            disposition,
        } => handoff::route_handoff(cx, *row_id, *fence, handlers, *disposition),
        Command::Handoff {
            row_id,
            fence,
            deliveries,
            disposition,
        } => handoff::handoff(cx, *row_id, *fence, deliveries, *disposition),
        Command::TransformHandoff {
            row_id,
            fence,
            deliveries,
            state_ops,
        } => handoff::transform_handoff(cx, *row_id, *fence, deliveries, state_ops),
        Command::IngressHandoff {
            row_id,
            fence,
            loopback_channel,
            depth_cap,
        } => handoff::ingress_handoff(cx, *row_id, *fence, loopback_channel, *depth_cap),
        Command::MarkDone { row_id, fence } => complete::mark_done(cx, *row_id, *fence),
        Command::CompleteWithResponse {
            row_id,
            fence,
            body,
            outcome,
            detail,
            reingress_to,
        } => complete::complete_with_response(
            cx,
            *row_id,
            *fence,
            body,
            outcome,
            detail.as_deref(),
            reingress_to.as_deref(),
        ),
        Command::MarkFailed {
            row_id,
            fence,
            error,
            retry,
        } => complete::mark_failed(cx, *row_id, *fence, error, retry),
        Command::DeadLetterNow {
            row_id,
            fence,
            error,
        } => complete::dead_letter_now(cx, *row_id, *fence, error),
        Command::Replay { message_id } => replay::replay(cx, *message_id),
        Command::ReplayDead {
            channel,
            destination,
        } => replay::replay_dead(cx, channel.as_deref(), destination.as_deref()),
        Command::CancelQueued {
            destination,
            channel,
            top_only,
        } => replay::cancel_queued(cx, destination, channel.as_deref(), *top_only),
        Command::PutConfig {
            expected_version,
            config,
        } => config::put_config(cx, *expected_version, config),
        Command::WriteReferenceSnapshot {
            name,
            version,
            rows,
        } => state::write_reference(cx, name, *version, rows),
        Command::PurgeMessageBodies { older_than } => {
            retention::purge_message_bodies(cx, *older_than)
        }
        Command::PurgeDeadLetters { older_than } => retention::purge_dead_letters(cx, *older_than),
        Command::PurgeState { older_than } => retention::purge_state(cx, *older_than),
        Command::ExpireRecords => retention::expire_records(cx),
        Command::RecordAudit {
            action,
            channel,
            org,
            detail,
        } => audit::record(
            cx,
            action,
            channel.as_deref(),
            org.as_deref(),
            detail.as_deref(),
        ),
        Command::SealAuditEpoch { org } => audit::seal(cx, org),
        Command::CreateApproval {
            operation,
            params,
            ttl_ms,
        } => approval::create(cx, operation, params, *ttl_ms),
        Command::DecideApproval { id, approve } => approval::decide(cx, *id, *approve),
        Command::PutPrincipal {
            name,
            token_hash,
            role,
            channels,
        } => principal::put(cx, name, token_hash, *role, channels.as_deref()),
        Command::RevokePrincipal { name } => principal::revoke(cx, name),
        Command::RewriteValues { items } => crate::rewrite::rewrite_values(cx, items),
        Command::DoneThenClaimNext {
            row_id,
            fence,
            owner,
            ttl_ms,
        } => claim::done_then_claim_next(cx, *row_id, *fence, owner, *ttl_ms),
        // Unpacked by `apply_batch`; one reaching here was nested.
        Command::Batch { .. } => Err(Rejection::invalid("commands", "a batch cannot nest").into()),
    }
}
