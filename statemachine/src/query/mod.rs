//! Read-only queries over the state (the reads listed in docs/SPEC.md §10.1). The API decides
//! consistency (linearizable or stale, §10.4) and channel scope (§9.4); this module only reads.

pub mod audit;
pub mod dashboard;

use crate::model::approval::{Approval, ApprovalStatus};
use crate::model::audit::{AuditHead, AuditRow};
use crate::model::config::ConfigVersion;
use crate::model::ids::{ApprovalId, MessageId, Millis, RowId};
use crate::model::lane::{LaneKey, LaneLease};
use crate::model::message::{Event, EventKind, Message, MessageStatus};
use crate::model::meta::MetaState;
use crate::model::principal::Principal;
use crate::model::response::CapturedResponse;
use crate::model::row::{ClaimChance, RowStatus, Stage, WorkRow};
use crate::model::session::Session;
use crate::model::state::{ReferenceSnapshot, StateEntry};
use crate::model::user::{AdGroupMap, AuthRole, RoleAssignment, User};
use crate::rules::{ad_groups, fifo, pause};
use crate::storage::{Direction, Store, StoreError, Txn};
use crate::tables::{
    approvals, children, config, covered, lanes, messages, principals, reference, responses, rows,
    sessions, state, users,
};
use crate::wire::outcome::FifoEmpty;
use crate::wire::rewrite::ValueRef;
use audit::Verification;
use serde::{Deserialize, Serialize};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};

/// A message as a list shows it: with the kind of its newest event.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListedMessage {
    pub message: Message,
    pub last_event: Option<EventKind>,
}

/// One page of the message list and where the next one starts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MessagePage {
    pub messages: Vec<ListedMessage>,
    /// The `before` of the next page; `None` when the list is exhausted.
    pub next_cursor: Option<MessageId>,
}

/// Most messages one page examines, matching or not: a filter that matches little cannot make
/// one request scan the whole state (four viewers looping on full-scan lists once pushed the
/// leader's write p50 from 2.8 ms to 260 ms). A page that stops here carries a cursor.
pub const PAGE_SCAN_BUDGET: usize = 10_000;

/// A message with everything attached to it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MessageView {
    pub message: Message,
    pub events: Vec<Event>,
    pub rows: Vec<WorkRow>,
    pub responses: Vec<CapturedResponse>,
}

/// Filters of the message list (all optional; newest first).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MessageFilter {
    pub channel: Option<String>,
    pub status: Option<MessageStatus>,
    pub message_type: Option<String>,
    pub control_id: Option<String>,
    /// Only these channels (a channel-scoped principal); `None` = all.
    pub allowed_channels: Option<Vec<String>>,
    pub limit: usize,
    pub offset: usize,
    /// A page cursor: only messages with a smaller id (older), as the previous page's
    /// `next_cursor` says.
    pub before: Option<MessageId>,
}

impl MessageFilter {
    /// Whether `m` passes every filter (limit and offset aside).
    pub fn matches(&self, m: &Message) -> bool {
        self.channel.as_ref().is_none_or(|c| *c == m.channel_id)
            && self.status.is_none_or(|s| s == m.status)
            && self
                .message_type
                .as_ref()
                .is_none_or(|t| Some(t) == m.message_type.as_ref())
            && self
                .control_id
                .as_ref()
                .is_none_or(|c| Some(c) == m.control_id.as_ref())
            && self
                .allowed_channels
                .as_ref()
                .is_none_or(|a| a.contains(&m.channel_id))
    }

    fn is_unfiltered(&self) -> bool {
        self.channel.is_none()
            && self.status.is_none()
            && self.message_type.is_none()
            && self.control_id.is_none()
            && self.allowed_channels.is_none()
    }
}

/// Filters of the dead-letter list and count (dead `outbound` rows; all optional).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeadLetterFilter {
    /// The stages whose dead rows are listed (messagefoundry's dead letters are `outbound`'s).
    pub stages: Vec<Stage>,
    pub channel: Option<String>,
    pub destination: Option<String>,
    /// Only these channels (a channel-scoped principal); `None` = all.
    pub allowed_channels: Option<Vec<String>>,
    pub limit: usize,
    pub offset: usize,
}

impl DeadLetterFilter {
    /// Whether the dead row passes every filter (limit and offset aside).
    pub fn matches(&self, row: &WorkRow) -> bool {
        row.matches(self.channel.as_deref(), self.destination.as_deref())
            && self
                .allowed_channels
                .as_ref()
                .is_none_or(|a| a.contains(&row.channel_id))
    }

    fn is_unfiltered(&self) -> bool {
        self.channel.is_none() && self.destination.is_none() && self.allowed_channels.is_none()
    }
}

/// A dead letter as the newest-first list shows it: the dead row, and the fields of its message
/// that identify it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeadLetter {
    pub row: WorkRow,
    pub control_id: Option<String>,
    pub message_type: Option<String>,
    pub received_at: Millis,
    pub summary: Option<String>,
}

/// An approval with the key its creator gave it (CreateApproval with named terms; `None` for one with a time to live).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyedApproval {
    pub key: Option<String>,
    pub approval: Approval,
}

/// A reference snapshot with its name and text version (docs/SPEC.md §14.8).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReferenceSet {
    pub name: String,
    /// The caller's text version (`"v1"`), when the set was written with one.
    pub label: Option<String>,
    pub snapshot: ReferenceSnapshot,
}

/// A transform-state namespace and its version.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NamespaceVersion {
    pub namespace: String,
    pub version: u64,
}

/// A page of [`Reader::lanes`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LanePage {
    pub lanes: Vec<LaneView>,
    /// The page's last lane, when more follow.
    pub next: Option<LaneKey>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaneView {
    /// `"{stage}:{name}"`.
    pub lane: String,
    pub stage: Stage,
    pub name: String,
    pub depth: u64,
    pub oldest_created_at: Option<Millis>,
    pub inflight: u64,
    pub holder: Option<LaneLease>,
}

/// Whether ClaimReady would find something (see [`Reader::due_rows`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DueRows {
    None,
    Some,
    /// Too many due rows that do not match the filters to tell cheaply.
    Unknown,
}

/// Row counts by stage and status.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stats {
    pub messages: u64,
    pub rows: BTreeMap<String, BTreeMap<String, u64>>,
    pub clock: Millis,
    pub last_applied: u64,
}

pub struct Reader<'a> {
    txn: Txn<'a, dyn Store + 'a>,
    meta: &'a MetaState,
}

impl<'a> Reader<'a> {
    pub fn new<S: Store + 'static>(store: &'a S, meta: &'a MetaState) -> Self {
        let base: &'a dyn Store = store;
        Self {
            txn: Txn::new(base),
            meta,
        }
    }

    pub fn meta(&self) -> &MetaState {
        self.meta
    }

    pub fn message(&self, id: MessageId) -> Result<Option<MessageView>, StoreError> {
        let Some(message) = messages::get(&self.txn, id)? else {
            return Ok(None);
        };
        let responses = responses::of_message(&self.txn, id)?;
        Ok(Some(MessageView {
            events: messages::events(&self.txn, id)?,
            rows: rows::of_message(&self.txn, id)?,
            responses,
            message,
        }))
    }

    /// One page of the message list, newest first, each message with its newest event kind
    /// (what a message list screen shows beside it: one point read per listed message). The
    /// page starts below `filter.before`, holds at most `limit` (1 to 1000) messages and
    /// examines at most [`PAGE_SCAN_BUDGET`]; `next_cursor` is where the next page starts when
    /// either bound stopped it.
    pub fn list_messages_page(&self, filter: &MessageFilter) -> Result<MessagePage, StoreError> {
        let limit = filter.limit.clamp(1, 1000);
        let mut page = MessagePage {
            messages: Vec::new(),
            next_cursor: None,
        };
        let (mut skipped, mut examined) = (0usize, 0usize);
        for m in messages::newest_below(&self.txn, filter.before)? {
            let message = m?;
            examined += 1;
            let id = message.id;
            if filter.matches(&message) {
                if skipped < filter.offset {
                    skipped += 1;
                } else {
                    let last_event = messages::last_event(&self.txn, id)?.map(|e| e.event);
                    page.messages.push(ListedMessage {
                        message,
                        last_event,
                    });
                }
            }
            if page.messages.len() >= limit || examined >= PAGE_SCAN_BUDGET {
                page.next_cursor = Some(id);
                break;
            }
        }
        Ok(page)
    }

    /// The id of the child message an IngressHandoff with a child key made under the caller's `key`.
    pub fn message_by_child_key(&self, key: &str) -> Result<Option<MessageId>, StoreError> {
        children::by_caller_key(&self.txn, key)
    }

    /// How many messages pass `filter` (its limit and offset aside): the counter when nothing
    /// filters, else a scan of the messages.
    pub fn count_messages(&self, filter: &MessageFilter) -> Result<u64, StoreError> {
        if filter.is_unfiltered() {
            return Ok(self.meta.next_message_id);
        }
        let mut count = 0u64;
        for m in messages::all(&self.txn, Direction::Forward)? {
            if filter.matches(&m?) {
                count += 1;
            }
        }
        Ok(count)
    }

    /// A row with its claim (`owner`, `lease_expires_at`, `fence`; present exactly when
    /// inflight), status, stage, lane fields and message id. `None` for a row that never existed
    /// or was consumed by a handoff.
    pub fn row(&self, id: RowId) -> Result<Option<WorkRow>, StoreError> {
        rows::get(&self.txn, id)
    }

    /// Dead outbound rows, oldest first.
    pub fn dead_letters(
        &self,
        channel: Option<&str>,
        destination: Option<&str>,
        limit: usize,
    ) -> Result<Vec<WorkRow>, StoreError> {
        let mut out = Vec::new();
        for id in rows::dead(&self.txn, Stage::Outbound)? {
            let Some(row) = rows::get(&self.txn, id?)? else {
                continue;
            };
            if !row.matches(channel, destination) {
                continue;
            }
            out.push(row);
            if out.len() >= limit {
                break;
            }
        }
        Ok(out)
    }

    /// How many dead `outbound` rows pass `filter`: the row counter when nothing filters, else a
    /// scan of the dead rows.
    pub fn count_dead_letters(&self, filter: &DeadLetterFilter) -> Result<u64, StoreError> {
        if filter.is_unfiltered() {
            return Ok(filter
                .stages
                .iter()
                .map(|s| self.meta.row_counts[*s as usize][RowStatus::Dead as usize])
                .sum());
        }
        let mut count = 0u64;
        for id in self.dead_ids(&filter.stages)? {
            if let Some(row) = rows::get(&self.txn, id?)? {
                if filter.matches(&row) {
                    count += 1;
                }
            }
        }
        Ok(count)
    }

    /// Dead rows of the filter's stages passing it, the most recently dead first (`updated_at`, then
    /// row id, descending), from `offset`, at most `limit` (1–1000), each with its message's
    /// identifying fields. Scans every dead row of those stages to order them.
    pub fn dead_letters_newest(
        &self,
        filter: &DeadLetterFilter,
    ) -> Result<Vec<DeadLetter>, StoreError> {
        let mut order = Vec::new();
        for id in self.dead_ids(&filter.stages)? {
            if let Some(row) = rows::get(&self.txn, id?)? {
                if filter.matches(&row) {
                    order.push((row.updated_at, row.id));
                }
            }
        }
        order.sort_unstable_by(|a, b| b.cmp(a));
        let mut out = Vec::new();
        for (_, id) in order
            .into_iter()
            .skip(filter.offset)
            .take(filter.limit.clamp(1, 1000))
        {
            if let Some(row) = rows::get(&self.txn, id)? {
                out.push(self.dead_letter(row)?);
            }
        }
        Ok(out)
    }

    /// Dead rows of the filter's stages passing it, in row-id order (the order they were made), from
    /// `offset`, at most `limit` (1–1000), each with its message's identifying fields.
    pub fn dead_letters_in_order(
        &self,
        filter: &DeadLetterFilter,
    ) -> Result<Vec<DeadLetter>, StoreError> {
        let mut out = Vec::new();
        let mut skipped = 0usize;
        for id in self.dead_ids(&filter.stages)? {
            let Some(row) = rows::get(&self.txn, id?)? else {
                continue;
            };
            if !filter.matches(&row) {
                continue;
            }
            if skipped < filter.offset {
                skipped += 1;
                continue;
            }
            out.push(self.dead_letter(row)?);
            if out.len() >= filter.limit.clamp(1, 1000) {
                break;
            }
        }
        Ok(out)
    }

    /// The dead rows of `stages`, in row-id order: lazily for one stage (a page stops early),
    /// gathered and sorted for several.
    fn dead_ids(
        &self,
        stages: &[Stage],
    ) -> Result<Box<dyn Iterator<Item = Result<RowId, StoreError>> + '_>, StoreError> {
        if let [one] = stages {
            return Ok(Box::new(rows::dead(&self.txn, *one)?));
        }
        let mut ids = Vec::new();
        for stage in stages {
            for id in rows::dead(&self.txn, *stage)? {
                ids.push(id?);
            }
        }
        ids.sort_unstable();
        ids.dedup();
        Ok(Box::new(ids.into_iter().map(Ok)))
    }

    /// A dead row with its message's identifying fields.
    fn dead_letter(&self, row: WorkRow) -> Result<DeadLetter, StoreError> {
        let message = messages::get(&self.txn, row.message_id)?;
        let m = message.as_ref();
        Ok(DeadLetter {
            control_id: m.and_then(|m| m.control_id.clone()),
            message_type: m.and_then(|m| m.message_type.clone()),
            received_at: m.map_or(0, |m| m.received_at),
            summary: m.and_then(|m| m.summary.clone()),
            row,
        })
    }

    pub fn lane(&self, stage: Stage, name: &str) -> Result<LaneView, StoreError> {
        let key = LaneKey::new(stage, name);
        let (depth, oldest) = lanes::depth(&self.txn, &key)?;
        let state = lanes::state(&self.txn, &key)?;
        Ok(LaneView {
            lane: key.to_string(),
            stage,
            name: name.to_string(),
            depth,
            oldest_created_at: oldest,
            inflight: lanes::inflight(&self.txn, &key)?.len() as u64,
            holder: state
                .lease
                .filter(|l| fifo::lease_is_live(l, self.meta.clock)),
        })
    }

    /// A page of lanes (`GET /v1/lanes`): those that have a record, in key order (stage, then
    /// name, shorter names first: names are length-prefixed in keys), of `stage` only when given, strictly after `after`, at most `limit`; `next` is
    /// where the next page starts (`None`: no more lanes).
    pub fn lanes(
        &self,
        stage: Option<Stage>,
        after: Option<&LaneKey>,
        limit: usize,
    ) -> Result<LanePage, StoreError> {
        let mut page = LanePage::default();
        for key in lanes::keys_after(&self.txn, stage, after)? {
            let key = key?;
            if page.lanes.len() == limit {
                page.next = page.lanes.last().map(|l| LaneKey::new(l.stage, &l.name));
                break;
            }
            page.lanes.push(self.lane(key.stage, &key.name)?);
        }
        Ok(page)
    }

    /// The lane's lease as stored, live or expired (`None`: nobody took it, or it was released
    /// or dropped). [`Reader::lane`]'s `holder` is the same lease only while it is live.
    pub fn lane_lease(&self, stage: Stage, name: &str) -> Result<Option<LaneLease>, StoreError> {
        Ok(lanes::state(&self.txn, &LaneKey::new(stage, name))?.lease)
    }

    /// Pending rows of a lane in FIFO order (for checkers and operators).
    pub fn lane_order(
        &self,
        stage: Stage,
        name: &str,
        limit: usize,
    ) -> Result<Vec<RowId>, StoreError> {
        lanes::pending(&self.txn, &LaneKey::new(stage, name))?
            .take(limit)
            .collect()
    }

    /// What ClaimNextFifo of the lane by `owner` at `t` would answer, when it is sure to claim
    /// nothing (see `rules::fifo::idle_answer`): the API answers an idle worker's poll from this
    /// instead of proposing an empty claim.
    pub fn fifo_idle_answer(
        &self,
        stage: Stage,
        name: &str,
        owner: &str,
        t: Millis,
    ) -> Result<Option<FifoEmpty>, StoreError> {
        fifo::idle_answer(&self.txn, &LaneKey::new(stage, name), owner, t)
    }

    /// Whether ClaimReady of `stage` at time `t` would find a row matching the filters,
    /// looking at no more than `budget` due rows (beyond that: [`DueRows::Unknown`]).
    pub fn due_rows(
        &self,
        stage: Stage,
        t: Millis,
        channel: Option<&str>,
        destination: Option<&str>,
        budget: usize,
    ) -> Result<DueRows, StoreError> {
        // The same rows as ClaimReady.
        for (seen, id) in rows::due(&self.txn, stage, t)?.enumerate() {
            if seen >= budget {
                return Ok(DueRows::Unknown);
            }
            let Some(row) = rows::get(&self.txn, id?)? else {
                continue;
            };
            // The filters of ClaimReady: the same `WorkRow::matches`, the same pause rule.
            if !row.matches(channel, destination) || pause::holds_back(&self.txn, &row)? {
                continue;
            }
            return Ok(DueRows::Some);
        }
        Ok(DueRows::None)
    }

    /// When a `ClaimReady` of `stage` with these filters could next claim a row, read at `t`
    /// (see [`ClaimChance`]): `Now` when a due row matches, `Unknown` past `budget` due rows
    /// the filters skip, else the earliest time a row of the stage that backs off becomes due
    /// (not filtered: waking early costs one read), or `OnChange`.
    pub fn ready_claim_chance(
        &self,
        stage: Stage,
        t: Millis,
        channel: Option<&str>,
        destination: Option<&str>,
        budget: usize,
    ) -> Result<ClaimChance, StoreError> {
        Ok(
            match self.due_rows(stage, t, channel, destination, budget)? {
                DueRows::Some => ClaimChance::Now,
                DueRows::Unknown => ClaimChance::Unknown,
                DueRows::None => match rows::next_due_after(&self.txn, stage, t)? {
                    Some(at) => ClaimChance::At(at),
                    None => ClaimChance::OnChange,
                },
            },
        )
    }

    /// When a FIFO claim of the lane could next hand `owner` a row, read at `t` (see
    /// [`ClaimChance`]); `lane_owner` as the claim names it (`Some(owner)` for ClaimNextFifo,
    /// docs/SPEC.md §14.1 for ClaimFifoHead).
    pub fn fifo_claim_chance(
        &self,
        stage: Stage,
        name: &str,
        owner: &str,
        lane_owner: Option<&str>,
        t: Millis,
    ) -> Result<ClaimChance, StoreError> {
        let who = fifo::Claimant { owner, lane_owner };
        fifo::claim_chance(&self.txn, &LaneKey::new(stage, name), who, t)
    }

    pub fn stats(&self) -> Stats {
        let mut rows = BTreeMap::new();
        for stage in Stage::ALL {
            let mut by_status = BTreeMap::new();
            for status in RowStatus::ALL {
                by_status.insert(
                    status.as_str().to_string(),
                    self.meta.row_counts[stage as usize][status as usize],
                );
            }
            rows.insert(stage.as_str().to_string(), by_status);
        }
        Stats {
            messages: self.meta.next_message_id,
            rows,
            clock: self.meta.clock,
            last_applied: self.meta.last_applied,
        }
    }

    pub fn config(&self) -> Result<ConfigVersion, StoreError> {
        config::current_version(&self.txn)
    }

    pub fn config_version(&self, v: u64) -> Result<Option<ConfigVersion>, StoreError> {
        config::version(&self.txn, v)
    }

    pub fn state_entry(
        &self,
        namespace: &str,
        key: &str,
    ) -> Result<Option<StateEntry>, StoreError> {
        state::get(&self.txn, namespace, key)
    }

    pub fn namespace_version(&self, namespace: &str) -> Result<u64, StoreError> {
        state::namespace_version(&self.txn, namespace)
    }

    pub fn reference(&self, name: &str) -> Result<Option<ReferenceSnapshot>, StoreError> {
        reference::get(&self.txn, name)
    }

    /// Every transform-state namespace with its version, in name order (a namespace has a
    /// version once a transform or a purge touched it; its entries may all be gone).
    pub fn state_namespaces(&self) -> Result<Vec<NamespaceVersion>, StoreError> {
        Ok(state::namespaces(&self.txn)?
            .into_iter()
            .map(|(namespace, version)| NamespaceVersion { namespace, version })
            .collect())
    }

    /// Every entry of a namespace, `(key, entry)` in key order.
    pub fn state_entries(&self, namespace: &str) -> Result<Vec<(String, StateEntry)>, StoreError> {
        state::entries(&self.txn, namespace)
    }

    /// Every reference snapshot with its name, numeric version and text version (if written
    /// with one), in name order.
    pub fn reference_sets(&self) -> Result<Vec<ReferenceSet>, StoreError> {
        let mut out = Vec::new();
        for (name, snapshot) in reference::all(&self.txn)? {
            out.push(ReferenceSet {
                label: reference::label(&self.txn, &name)?,
                name,
                snapshot,
            });
        }
        Ok(out)
    }

    /// The text version a WriteReferenceSnapshot with a text label gave a snapshot (`None`: none, or the set
    /// was last written with a numeric version).
    pub fn reference_label(&self, name: &str) -> Result<Option<String>, StoreError> {
        reference::label(&self.txn, name)
    }

    /// Up to `limit` values covered by encryption at rest, after `after` in a stable order (the
    /// walk of key rotation; see [`crate::tables::covered`]).
    pub fn covered_values(
        &self,
        after: Option<&ValueRef>,
        limit: usize,
    ) -> Result<Vec<(ValueRef, String)>, StoreError> {
        covered::covered_values(&self.txn, after, limit)
    }

    pub fn audit_list(
        &self,
        org: &str,
        from_seq: u64,
        limit: usize,
    ) -> Result<Vec<AuditRow>, StoreError> {
        crate::tables::audit::list(&self.txn, org, from_seq, limit)
    }

    /// The last `limit` rows of `org`'s chain, newest first.
    pub fn audit_newest(&self, org: &str, limit: usize) -> Result<Vec<AuditRow>, StoreError> {
        crate::tables::audit::newest(&self.txn, org, limit)
    }

    /// `org`'s rows whose actor is `actor` and whose action starts with `action_prefix` (`""`:
    /// any), newest first, at most `limit`: read through the actor index, so the cost follows
    /// the actor's rows, not the chain (docs/SPEC.md §14.5).
    pub fn audit_by_actor(
        &self,
        org: &str,
        actor: &str,
        action_prefix: &str,
        limit: usize,
    ) -> Result<Vec<AuditRow>, StoreError> {
        crate::tables::audit::by_actor(&self.txn, org, actor, action_prefix, limit)
    }

    pub fn audit_anchor(&self, org: &str) -> Result<AuditHead, StoreError> {
        crate::tables::audit::head(&self.txn, org)
    }

    pub fn audit_verify(
        &self,
        org: &str,
        anchor: Option<(u64, [u8; 32])>,
    ) -> Result<Verification, StoreError> {
        audit::verify(&self.txn, org, anchor)
    }

    pub fn audit_orgs(&self) -> Result<Vec<String>, StoreError> {
        crate::tables::audit::orgs(&self.txn)
    }

    pub fn approval(&self, id: ApprovalId) -> Result<Option<Approval>, StoreError> {
        approvals::get(&self.txn, id)
    }

    /// The approval the caller created under `key` (CreateApproval with named terms).
    pub fn approval_by_key(&self, key: &str) -> Result<Option<KeyedApproval>, StoreError> {
        let Some(id) = approvals::id_by_key(&self.txn, key)? else {
            return Ok(None);
        };
        Ok(
            approvals::get(&self.txn, id)?.map(|approval| KeyedApproval {
                key: Some(key.to_string()),
                approval,
            }),
        )
    }

    /// Approvals still `pending` and not expired at `t` (`expires_at > t`), newest request
    /// first (`requested_at`, then id, descending), at most `limit`; each with the caller's key
    /// if it has one. Scans the approvals (ExpireRecords keeps their number bounded).
    pub fn pending_approvals(
        &self,
        t: Millis,
        limit: usize,
    ) -> Result<Vec<KeyedApproval>, StoreError> {
        let mut open: Vec<Approval> = approvals::all(&self.txn)?
            .into_iter()
            .filter(|a| a.status == ApprovalStatus::Pending && a.expires_at > t)
            .collect();
        open.sort_by_key(|a| std::cmp::Reverse((a.requested_at, a.id)));
        let mut out = Vec::new();
        for approval in open.into_iter().take(limit) {
            out.push(KeyedApproval {
                key: approvals::key_of(&self.txn, approval.id)?,
                approval,
            });
        }
        Ok(out)
    }

    /// The connections dashboard: messages received per channel since `since`, and per
    /// (channel, destination) the outbound queue now and what finished since `since` (done
    /// rows also since `rate_since`). Scans every message and row ([`dashboard`]).
    pub fn connection_metrics(
        &self,
        since: Millis,
        rate_since: Millis,
    ) -> Result<dashboard::ConnectionMetrics, StoreError> {
        dashboard::connection_metrics(&self.txn, since, rate_since)
    }

    /// The number of events and the logical size of the state. Scans every table.
    pub fn storage_stats(&self) -> Result<dashboard::StorageStats, StoreError> {
        dashboard::storage_stats(&self.txn)
    }

    // --- engine coordination (docs/SPEC.md §15) ---

    /// Every registered engine process, by node id (tombstones of clean stops included).
    pub fn engine_nodes(&self) -> Result<Vec<crate::model::coordination::NodeRecord>, StoreError> {
        crate::tables::coordination::nodes(&self.txn)
    }

    /// Every paused destination with who paused it, when and why, in name order
    /// (docs/SPEC.md §4.9).
    /// The cluster's log format (docs/SPEC.md §2.8) as its number: what the leader writes.
    pub fn log_format(&self) -> Result<u32, StoreError> {
        crate::tables::meta::log_format(&self.txn)
    }

    pub fn paused_destinations(
        &self,
    ) -> Result<Vec<(String, crate::model::destination::PausedDestination)>, StoreError> {
        crate::tables::paused::all(&self.txn)
    }

    /// Every group's leadership lease as stored, live or expired, by group name.
    pub fn leaderships(
        &self,
    ) -> Result<Vec<(String, crate::model::coordination::LeaderLease)>, StoreError> {
        crate::tables::coordination::leaders(&self.txn)
    }

    /// A group's leadership lease as stored, live or expired.
    pub fn leadership(
        &self,
        group: &str,
    ) -> Result<Option<crate::model::coordination::LeaderLease>, StoreError> {
        crate::tables::coordination::leader(&self.txn, group)
    }

    /// The lanes whose lease `owner` holds live at `t`, as `stage:name`, in key order (what an
    /// engine node reports as the lanes it owns). Scans the lanes.
    pub fn lanes_held_by(&self, owner: &str, t: Millis) -> Result<Vec<String>, StoreError> {
        Ok(lanes::all_states(&self.txn)?
            .into_iter()
            .filter(|(_, state)| {
                state
                    .lease
                    .as_ref()
                    .is_some_and(|l| l.owner == owner && fifo::lease_is_live(l, t))
            })
            .map(|(key, _)| key.to_string())
            .collect())
    }

    /// The state machine's own running totals (`Tallies`), by name: e.g.
    /// `dead.lease_expired`, the rows that died of lease expiries (docs/SPEC.md §5.2).
    pub fn tallies(&self) -> Result<BTreeMap<String, u64>, StoreError> {
        crate::tables::tallies::all(&self.txn)
    }

    /// Each lane's running totals of dead-lettered and redelivered rows (lanes with none are
    /// absent), in name order.
    pub fn lane_tallies(&self) -> Result<Vec<crate::model::lane::LaneTally>, StoreError> {
        crate::tables::tallies::lanes(&self.txn)
    }

    /// A shared counter (0 until first bumped).
    pub fn counter(&self, name: &str) -> Result<u64, StoreError> {
        crate::tables::coordination::counter(&self.txn, name)
    }

    pub fn principal_by_token_hash(&self, hash: &str) -> Result<Option<Principal>, StoreError> {
        principals::by_token_hash(&self.txn, hash)
    }

    /// The principal a lease owner name belongs to (`crate::rules::lease_owner`): so the
    /// principal of a claim made under it (`crate::rules::claim_owner`). `None`: never bound.
    pub fn lease_owner(&self, owner: &str) -> Result<Option<String>, StoreError> {
        crate::tables::lease_owners::principal(&self.txn, owner)
    }

    /// The audit orgs a principal is scoped to (`None`: no org scope set).
    pub fn principal_orgs(&self, name: &str) -> Result<Option<Vec<String>>, StoreError> {
        principals::orgs(&self.txn, name)
    }

    /// Every principal (admin listing).
    pub fn principals(&self) -> Result<Vec<Principal>, StoreError> {
        principals::all(&self.txn)
    }

    // --- the engine's users, roles and sessions (docs/SPEC.md §13) ---

    pub fn user(&self, user_id: &str) -> Result<Option<User>, StoreError> {
        users::get(&self.txn, user_id)
    }

    pub fn user_by_username(&self, username: &str) -> Result<Option<User>, StoreError> {
        match users::id_of(&self.txn, username)? {
            Some(id) => users::get(&self.txn, &id),
            None => Ok(None),
        }
    }

    /// Every user, by username (byte order).
    pub fn users(&self) -> Result<Vec<User>, StoreError> {
        users::all_by_username(&self.txn)
    }

    pub fn user_count(&self) -> Result<u64, StoreError> {
        users::count(&self.txn)
    }

    /// The ids of a user's roles, sorted (empty for an unknown user).
    pub fn user_role_ids(&self, user_id: &str) -> Result<Vec<String>, StoreError> {
        Ok(users::assignments(&self.txn, user_id)?
            .into_iter()
            .map(|a| a.role_id)
            .collect())
    }

    /// A user's role assignments with when and by whom, by role id.
    pub fn user_role_assignments(&self, user_id: &str) -> Result<Vec<RoleAssignment>, StoreError> {
        users::assignments(&self.txn, user_id)
    }

    pub fn role(&self, role_id: &str) -> Result<Option<AuthRole>, StoreError> {
        users::role(&self.txn, role_id)
    }

    /// Every role, by id (byte order).
    pub fn roles(&self) -> Result<Vec<AuthRole>, StoreError> {
        users::roles(&self.txn)
    }

    /// The entries `(group, role id or channel)` of an AD group map, sorted.
    pub fn ad_group_map(&self, map: AdGroupMap) -> Result<Vec<(String, String)>, StoreError> {
        let mut entries = users::map_entries(&self.txn, map)?;
        entries.sort();
        Ok(entries)
    }

    /// The role ids the roles map gives any of `groups` (normalised like the map), sorted.
    pub fn roles_for_ad_groups(&self, groups: &[String]) -> Result<Vec<String>, StoreError> {
        self.ad_group_values(AdGroupMap::Roles, groups)
    }

    /// The channels the scope map gives any of `groups` (normalised like the map), sorted.
    pub fn channels_for_ad_groups(&self, groups: &[String]) -> Result<Vec<String>, StoreError> {
        self.ad_group_values(AdGroupMap::Scope, groups)
    }

    fn ad_group_values(
        &self,
        map: AdGroupMap,
        groups: &[String],
    ) -> Result<Vec<String>, StoreError> {
        let mut out = BTreeSet::new();
        for group in ad_groups::normalize_groups(groups.iter().map(String::as_str)) {
            out.extend(users::group_values(&self.txn, map, &group)?);
        }
        Ok(out.into_iter().collect())
    }

    pub fn session(&self, token_hash: &str) -> Result<Option<Session>, StoreError> {
        sessions::get(&self.txn, token_hash)
    }

    /// A user's sessions neither revoked nor expired at `now`, most recently used first (then
    /// by token hash).
    pub fn active_sessions(&self, user_id: &str, now: Millis) -> Result<Vec<Session>, StoreError> {
        let mut out: Vec<Session> = sessions::of_user(&self.txn, user_id)?
            .into_iter()
            .filter(|s| s.is_active(now))
            .collect();
        out.sort_by(|a, b| {
            (Reverse(a.last_used_at), &a.token_hash).cmp(&(Reverse(b.last_used_at), &b.token_hash))
        });
        Ok(out)
    }
}
