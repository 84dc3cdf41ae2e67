//! Workers' routes: claims, lanes, leases and the fenced row actions.

use super::{
    check_name, hide_foreign_fence, parse_stage, prepare_read, propose, read_covered,
    require_claim, unexpected, ReadOpts, CLAIM_OF_ANOTHER,
};
use crate::auth::{Caller, Permission};
use crate::backend;
use crate::by_id::ById;
use crate::error::{ApiError, ApiResult};
use crate::extract::{parse_json, JsonBody, OptionalJson, Path, Query, RawBody};
use crate::state::AppState;
use crate::wait::{self, Seat};
use crate::write::claim;
use crate::write::row_action::RowCommand;
use axum::extract::State;
use axum::Json;
use raftlane_contract::{
    CancelRequest, Cancelled, ClaimNext, ClaimRequest, Claimed, FifoClaim, FifoClaimRequest,
    LaneList, LaneListQuery, LaneStatus, ReleaseRequest, Released, RenewRequest, Renewed,
    RowAction, RowActionResult, RowActionResults, RowAnswer, RowDetail,
};
use raftlane_statemachine::model::lane::LaneKey;
use raftlane_statemachine::query::Reader;
use raftlane_statemachine::row::{ClaimChance, Stage};
use raftlane_statemachine::wire::command::{
    CancelQueued, ClaimFifoHead, ClaimNextFifo, ClaimReady, DoneThenClaimNext, HandOn,
    HandOnThenClaimNext, ReleaseLane, RenewLeases,
};
use raftlane_statemachine::{checks, Command, Envelope, Fence, Millis, Outcome, RowId, StoreError};
use serde::Deserialize;
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub async fn claim_fifo(
    State(state): State<Arc<AppState>>,
    mut caller: Caller,
    Path((stage, name)): Path<(String, String)>,
    JsonBody(body): JsonBody<FifoClaimRequest>,
) -> ApiResult<Json<FifoClaim>> {
    caller.require(Permission::Work)?;
    let stage = parse_stage(&stage)?;
    let wait = check_fifo_claim(&name, &body)?;
    caller.require_lane(stage, &name)?;
    let command = fifo_command(stage, name, body);
    let waiting = Waiting::new(&state, &caller, wait);
    loop {
        let (attempt, claim) = claim_fifo_once(&state, &caller, &command).await?;
        if claim.item.is_some()
            || !waiting
                .until_chance(&state, attempt, |r, t| claim::fifo_chance(r, &command, t))
                .await?
        {
            return Ok(Json(claim));
        }
        caller.clock_ms = state.backend.cluster_now_ms();
    }
}

/// The checks of a FIFO claim on lane `name`: its names and lease; answers how long it may
/// wait for work.
fn check_fifo_claim(name: &str, body: &FifoClaimRequest) -> ApiResult<Option<Duration>> {
    check_name("name", name)?;
    check_name("owner", &body.owner)?;
    checks::ttl("ttl_ms", body.ttl_ms)?;
    if let Some(row_owner) = &body.row_owner {
        check_name("row_owner", row_owner)?;
    }
    wait::wait_of(body.wait_ms)
}

/// The command of a FIFO claim: the row's claim owner and the lane lease's holder named apart,
/// or no lane lease at all (docs/SPEC.md §14.1), is a `ClaimFifoHead`; otherwise one owner for
/// both (§4.3), a `ClaimNextFifo`.
fn fifo_command(stage: Stage, lane: String, body: FifoClaimRequest) -> Command {
    let split = body.row_owner.is_some() || body.lane_lease == Some(false);
    if !split {
        return Command::ClaimNextFifo(ClaimNextFifo {
            stage,
            lane,
            owner: body.owner,
            ttl_ms: body.ttl_ms,
        });
    }
    let lane_owner = (body.lane_lease != Some(false)).then(|| body.owner.clone());
    Command::ClaimFifoHead(ClaimFifoHead {
        stage,
        lane,
        owner: body.row_owner.unwrap_or(body.owner),
        lane_owner,
        ttl_ms: body.ttl_ms,
    })
}

/// One attempt of a FIFO claim: the idle shortcut for a `ClaimNextFifo` (docs/SPEC.md §4.7),
/// else the command proposed and its head opened. Answers the log index the answer reflects
/// (this node's applied index for an answer read from the state) with the claim's answer.
async fn claim_fifo_once(
    state: &AppState,
    caller: &Caller,
    command: &Command,
) -> ApiResult<(u64, FifoClaim)> {
    // The idle shortcut reads the lane at the proposer's clamped clock, which a test client's
    // exact time (docs/SPEC.md §2.1) is not: in that mode every claim is proposed.
    if let (Command::ClaimNextFifo(c), None) = (command, caller.client_time) {
        if let Some(empty) = state
            .writes
            .idle_fifo_answer(c.stage, &c.lane, &c.owner, caller.now_ms())
            .await?
        {
            return Ok((state.backend.applied_index(), FifoClaim::from(Err(empty))));
        }
    }
    let (index, first) = propose(state, caller, command.clone()).await?;
    Ok((
        index,
        fifo_answer(state, caller, first, command.clone()).await?,
    ))
}

/// How long a claim request may still wait for work (`wait_ms`, docs/SPEC.md §4.7a), and its
/// seat among this node's waiting claims. A claim that asked for no wait, one that found every
/// seat taken, and one in test mode (its client's exact time never moves, so nothing waits for
/// it to) answer after their first attempt, as a claim always did.
struct Waiting<'a> {
    until: Option<(Instant, Seat<'a>)>,
}

impl<'a> Waiting<'a> {
    fn new(state: &'a AppState, caller: &Caller, wait: Option<Duration>) -> Self {
        let until = match wait {
            Some(wait) if caller.client_time.is_none() => {
                let seat = state.claim_waiters.seat();
                if seat.is_none() {
                    tracing::debug!("every claim-wait seat is taken: answering at once");
                }
                seat.map(|seat| (Instant::now() + wait, seat))
            }
            _ => None,
        };
        Self { until }
    }

    /// After an attempt that claimed nothing (answered at log index `attempt`): whether to
    /// claim again, once `probe` says a claim may hand something out (see
    /// [`wait::until_chance`]); `false` when this claim does not wait or its time is up.
    async fn until_chance(
        &self,
        state: &AppState,
        attempt: u64,
        probe: impl Fn(&Reader<'_>, Millis) -> Result<ClaimChance, StoreError>,
    ) -> ApiResult<bool> {
        let Some((deadline, _)) = &self.until else {
            return Ok(false);
        };
        Ok(wait::until_chance(state.backend.as_ref(), attempt, *deadline, probe).await?)
    }
}

/// `GET /v1/rows/{id}`: one work row as it is now, payload decrypted; 404 for a row never made
/// or consumed by a handoff. Scoped callers see the rows of their channels.
pub async fn get_row(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
    Query(opts): Query<ReadOpts>,
) -> ApiResult<Json<RowDetail>> {
    // A row carries its payload: a processing read (workers and above), never a viewer's
    // unrecorded look at a body (docs/SPEC.md §9.7).
    caller.require(Permission::Work)?;
    let id = parse_row_id(&id)?;
    let row = read_covered(&state, &opts, |r| r.row(id)).await?;
    caller.require_by_id(ById::Row(id.0), row.as_ref().map(|r| r.channel_id.as_str()))?;
    let Some(mut row) = row else {
        return Err(ById::Row(id.0).not_found());
    };
    hide_foreign_fence(&state, &caller, &mut row)?;
    Ok(Json(RowDetail { row }))
}

fn parse_row_id(s: &str) -> ApiResult<RowId> {
    s.parse::<u64>()
        .map(RowId)
        .map_err(|_| ApiError::invalid("id", "must be a row id (an integer)"))
}

/// The answer of a FIFO claim whose proposal answered `outcome`, its head opened by the write
/// path (which claims the lane `again` past undecryptable heads, see
/// [`crate::write::Proposer::fifo_claim`]).
async fn fifo_answer(
    state: &AppState,
    caller: &Caller,
    outcome: Outcome,
    again: Command,
) -> ApiResult<FifoClaim> {
    let envelope = |command| caller.envelope(command);
    match state
        .writes
        .fifo_claim(outcome, &again, &envelope)
        .await??
    {
        Outcome::FifoClaimed(claim) => Ok(FifoClaim::from(claim)),
        other => Err(unexpected(other)),
    }
}

pub async fn lane(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path((stage, name)): Path<(String, String)>,
    Query(opts): Query<ReadOpts>,
) -> ApiResult<Json<LaneStatus>> {
    caller.require(Permission::Read)?;
    let stage = parse_stage(&stage)?;
    check_name("name", &name)?;
    // Every lane but an outbound one is named by its channel (docs/SPEC.md §1, "lane"):
    // scoped callers see theirs (§9.4).
    if stage != raftlane_statemachine::row::Stage::Outbound {
        caller.require_channel(&name)?;
    }
    prepare_read(&state, &opts).await?;
    let view = backend::read(state.backend.as_ref(), |r| r.lane(stage, &name))?;
    Ok(Json(LaneStatus::at(view, state.backend.cluster_now_ms())))
}

/// `GET /v1/lanes`: every lane that has held a row, with its depth, oldest row and holder, a
/// page at a time: what an operator looks at first when a pipeline backs up. Whole-cluster, so
/// an unscoped caller's (a scoped token reads its own lanes one by one,
/// `GET /v1/lanes/{stage}/{name}`).
pub async fn lanes(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Query(q): Query<LaneListQuery>,
) -> ApiResult<Json<LaneList>> {
    caller.require_global(Permission::Read)?;
    let stage = q.stage;
    let after = q.cursor.as_deref().map(parse_lane_cursor).transpose()?;
    let limit = q.limit.get();
    prepare_read(
        &state,
        &ReadOpts {
            consistency: q.consistency,
        },
    )
    .await?;
    let page = backend::read(state.backend.as_ref(), |r| {
        r.lanes(stage, after.as_ref(), limit)
    })?;
    let now = state.backend.cluster_now_ms();
    Ok(Json(LaneList {
        lanes: page
            .lanes
            .into_iter()
            .map(|v| LaneStatus::at(v, now))
            .collect(),
        next_cursor: page.next.map(|k| k.to_string()),
    }))
}

/// A lane listing's cursor, `"{stage}:{name}"` (a page's `next_cursor`).
fn parse_lane_cursor(cursor: &str) -> ApiResult<LaneKey> {
    let bad = |why: &str| ApiError::invalid("cursor", format!("'{cursor}' {why}"));
    let (stage, name) = cursor
        .split_once(':')
        .ok_or_else(|| bad("is not a lane, \"{stage}:{name}\" as a page's next_cursor gives"))?;
    let stage = Stage::parse(stage).ok_or_else(|| bad("does not begin with a stage"))?;
    check_name("cursor", name)?;
    Ok(LaneKey::new(stage, name))
}

pub async fn release(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path((stage, name)): Path<(String, String)>,
    JsonBody(body): JsonBody<ReleaseRequest>,
) -> ApiResult<Json<Released>> {
    caller.require(Permission::Work)?;
    let stage = parse_stage(&stage)?;
    check_name("name", &name)?;
    check_name("owner", &body.owner)?;
    caller.require_lane(stage, &name)?;
    // An operator may let go of a lane held under another principal's owner name (audited by
    // the state machine, docs/SPEC.md §9.8); anyone else only of its own.
    let command = caller.authority(Command::ReleaseLane(ReleaseLane {
        stage,
        lane: name,
        owner: body.owner,
    }));
    match propose(&state, &caller, command).await? {
        (_, Outcome::Count(n)) => Ok(Json(Released { released: n == 1 })),
        (_, other) => Err(unexpected(other)),
    }
}

pub async fn cancel(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(dest): Path<String>,
    body: OptionalJson<CancelRequest>,
) -> ApiResult<Json<Cancelled>> {
    caller.require(Permission::Requeue)?;
    check_name("destination", &dest)?;
    let body = body.parse()?;
    caller.require_channel_filter(body.channel.as_deref())?;
    let params = serde_json::json!({ "destination": &dest, "request": &body });
    crate::dual_control::authorize(
        &state,
        &caller,
        crate::dual_control::Action::CancelQueued,
        &params,
    )
    .await?;
    let command = Command::CancelQueued(CancelQueued {
        destination: dest,
        channel: body.channel,
        top_only: body.top_only,
    });
    match propose(&state, &caller, command).await? {
        (_, Outcome::Count(n)) => Ok(Json(Cancelled { cancelled: n })),
        (_, other) => Err(unexpected(other)),
    }
}

pub async fn claim_ready(
    State(state): State<Arc<AppState>>,
    mut caller: Caller,
    JsonBody(body): JsonBody<ClaimRequest>,
) -> ApiResult<Json<Claimed>> {
    caller.require(Permission::Work)?;
    let (claim, wait) = ready_claim(body)?;
    caller.require_channel_filter(claim.channel.as_deref())?;
    let waiting = Waiting::new(&state, &caller, wait);
    loop {
        let (attempt, items) = claim_ready_once(&state, &caller, &claim).await?;
        let (channel, destination) = (claim.channel.as_deref(), claim.destination.as_deref());
        if !items.is_empty()
            || !waiting
                .until_chance(&state, attempt, |r, t| {
                    claim::ready_chance(r, claim.stage, channel, destination, t)
                })
                .await?
        {
            return Ok(Json(Claimed { items }));
        }
        caller.clock_ms = state.backend.cluster_now_ms();
    }
}

/// `POST /v1/claims`' body checked, as the claim it proposes and how long it may wait for work.
fn ready_claim(body: ClaimRequest) -> ApiResult<(ClaimReady, Option<Duration>)> {
    check_name("owner", &body.owner)?;
    checks::ttl("ttl_ms", body.ttl_ms)?;
    if body.limit == 0 || body.limit > raftlane_statemachine::MAX_CLAIM_LIMIT {
        return Err(ApiError::invalid(
            "limit",
            format!(
                "must be between 1 and {}",
                raftlane_statemachine::MAX_CLAIM_LIMIT
            ),
        ));
    }
    let wait = wait::wait_of(body.wait_ms)?;
    let claim = ClaimReady {
        stage: body.stage,
        limit: body.limit,
        channel: body.channel,
        destination: body.destination,
        owner: body.owner,
        ttl_ms: body.ttl_ms,
    };
    Ok((claim, wait))
}

/// One attempt of `POST /v1/claims`: nothing due answered from a read (docs/SPEC.md §4.7),
/// else the claim proposed and its payloads opened. Answers the log index the answer reflects
/// (this node's applied index for an answer read from the state) with the rows claimed.
async fn claim_ready_once(
    state: &AppState,
    caller: &Caller,
    claim: &ClaimReady,
) -> ApiResult<(u64, Vec<raftlane_statemachine::ClaimedRow>)> {
    if state
        .writes
        .nothing_due(
            claim.stage,
            claim.channel.as_deref(),
            claim.destination.as_deref(),
            caller.now_ms(),
        )
        .await?
    {
        return Ok((state.backend.applied_index(), Vec::new()));
    }
    match propose(state, caller, Command::ClaimReady(claim.clone())).await? {
        (index, Outcome::Claimed(claimed)) => {
            let envelope = |command| caller.envelope(command);
            let items = state.writes.open_claims(claimed, &envelope).await?;
            Ok((index, items))
        }
        (_, other) => Err(unexpected(other)),
    }
}

pub async fn renew(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    JsonBody(body): JsonBody<RenewRequest>,
) -> ApiResult<Json<Renewed>> {
    caller.require(Permission::Work)?;
    check_name("owner", &body.owner)?;
    checks::ttl("ttl_ms", body.ttl_ms)?;
    let command = Command::RenewLeases(RenewLeases {
        ids: body.ids.into_iter().map(RowId).collect(),
        owner: body.owner,
        ttl_ms: body.ttl_ms,
    });
    match propose(&state, &caller, command).await? {
        (_, Outcome::Count(n)) => Ok(Json(Renewed { renewed: n })),
        (_, other) => Err(unexpected(other)),
    }
}

// --- fenced row actions ---

/// `done` with `claim_next`: the row is marked done and its lane's next row claimed for
/// `next.owner` in one command (one consensus round trip instead of two for a FIFO worker).
/// Answers [`RowAnswer::Done`] with `next`, the FIFO claim's answer.
async fn done_then_claim_next(
    state: &AppState,
    caller: &Caller,
    row: &raftlane_statemachine::row::WorkRow,
    fence: Fence,
    next: ClaimNext,
) -> ApiResult<RowAnswer> {
    check_claim_next(caller, row, &next)?;
    let command = Command::DoneThenClaimNext(DoneThenClaimNext {
        row_id: row.id,
        fence,
        owner: next.owner.clone(),
        ttl_ms: next.ttl_ms,
    });
    let (index, outcome) = propose(state, caller, caller.authority(command)).await?;
    let again = claim_next_again(row, next);
    let next = fifo_answer(state, caller, outcome, again).await?;
    Ok(RowAnswer::Done {
        index,
        next: Some(next),
        ok: true,
    })
}

/// A handoff with `claim_next`: the row is handed on and its lane's next row claimed for
/// `next.owner` in one command ([`HandOnThenClaimNext`]), as [`done_then_claim_next`] does for
/// `done`. Answers [`RowAnswer::HandedOff`] with `next`, the FIFO claim's answer.
async fn hand_on_then_claim_next(
    state: &AppState,
    caller: &Caller,
    row: &raftlane_statemachine::row::WorkRow,
    action: HandOn,
    next: ClaimNext,
) -> ApiResult<RowAnswer> {
    check_claim_next(caller, row, &next)?;
    let command = Command::HandOnThenClaimNext(HandOnThenClaimNext {
        action,
        owner: next.owner.clone(),
        ttl_ms: next.ttl_ms,
    });
    let (index, outcome) = propose(state, caller, caller.authority(command)).await?;
    let Outcome::HandedOnThenClaimed {
        applied,
        next: claim,
    } = outcome
    else {
        return Err(unexpected(outcome));
    };
    let again = claim_next_again(row, next);
    let next = match claim {
        Some(claim) => Some(fifo_answer(state, caller, Outcome::FifoClaimed(claim), again).await?),
        None => None,
    };
    Ok(RowAnswer::HandedOff {
        applied,
        index,
        next,
    })
}

/// The FIFO claim a `claim_next` makes, as the command the write path repeats to claim the lane
/// again past an undecryptable head ([`fifo_answer`]).
fn claim_next_again(row: &raftlane_statemachine::row::WorkRow, next: ClaimNext) -> Command {
    Command::ClaimNextFifo(ClaimNextFifo {
        stage: row.stage,
        lane: row.lane_name().to_string(),
        owner: next.owner,
        ttl_ms: next.ttl_ms,
    })
}

/// The checks of a `claim_next`: its names, and the scope rule of a FIFO claim (a whole
/// outbound lane is not one channel's).
fn check_claim_next(
    caller: &Caller,
    row: &raftlane_statemachine::row::WorkRow,
    next: &ClaimNext,
) -> ApiResult<()> {
    check_name("claim_next.owner", &next.owner)?;
    checks::ttl("claim_next.ttl_ms", next.ttl_ms)?;
    if row.stage == raftlane_statemachine::row::Stage::Outbound && caller.channels.is_some() {
        return Err(ApiError::forbidden(
            "channel-scoped tokens cannot claim a whole outbound lane",
        ));
    }
    Ok(())
}

/// `POST /v1/rows/{id}/{action}` for route, handoff, transform, done, response, fail, dead and
/// reingress. Each carries the claim's fence.
pub async fn row_action(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path((id, action)): Path<(String, String)>,
    RawBody(body): RawBody,
) -> ApiResult<Json<RowAnswer>> {
    caller.require(Permission::Work)?;
    let row_id = RowId(
        id.parse::<u64>()
            .map_err(|_| ApiError::invalid("id", "must be a row id (an integer)"))?,
    );
    match prepare_action(&state, &caller, row_id, &action, &body).await? {
        RowCommand::Plain(command) => {
            let envelope = caller.envelope(caller.authority(command));
            Ok(Json(state.writes.plain_row_action(envelope).await?))
        }
        RowCommand::DoneThenClaim { row, fence, next } => {
            done_then_claim_next(&state, &caller, &row, fence, next)
                .await
                .map(Json)
        }
        RowCommand::HandOnThenClaim { row, action, next } => {
            hand_on_then_claim_next(&state, &caller, &row, action, next)
                .await
                .map(Json)
        }
    }
}

/// The fenced row actions, as named in `POST /v1/rows/{id}/{action}`.
const ROW_ACTIONS: [&str; 8] = RowAction::NAMES;

/// Most actions in one `POST /v1/rows/actions`.
pub const MAX_ROW_ACTIONS: usize = 256;

/// [`raftlane_contract::RowActionsRequest`] with each item's action still a name and its body
/// still any JSON: an item's body is parsed only after its action name is known, its row is
/// not a repeat and the caller may act on that row, so a batch's errors come in item order and
/// name the item (`actions[3].body.fence`), as each would from its own route.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RowActionsBody {
    actions: Vec<RowActionItem>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RowActionItem {
    row: u64,
    action: String,
    body: Value,
}

/// `POST /v1/rows/actions`: many fenced row actions in one request, e.g. a router handing on
/// every row of its claimed batch. Each action is its own proposal (they share the batcher's
/// log entry) and gets its own answer in `results`, in request order: the answer its own
/// route would give, or `{"error", "status"}`. Bad input (400) fails the whole request and
/// proposes nothing; a row outside the caller's scope is that item's 404, as a missing row is. `done` cannot take `claim_next`
/// here, and a row may appear once, so the answers do not depend on the actions' order.
pub async fn row_actions(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    RawBody(body): RawBody,
) -> ApiResult<Json<RowActionResults>> {
    caller.require(Permission::Work)?;
    let b: RowActionsBody = parse_json(&body)?;
    if b.actions.is_empty() || b.actions.len() > MAX_ROW_ACTIONS {
        return Err(ApiError::invalid(
            "actions",
            format!("must hold 1 to {MAX_ROW_ACTIONS} actions"),
        ));
    }
    let prepared = prepare_batch(&state, &caller, b.actions).await?;
    let writes = batch_envelopes(&caller, prepared)
        .into_iter()
        .map(|envelope| async {
            Ok::<_, ApiError>(state.writes.plain_row_action(envelope?).await?)
        });
    let results = futures::future::join_all(writes)
        .await
        .into_iter()
        .map(|answer| match answer {
            Ok(a) => RowActionResult::Applied(a),
            Err(e) => RowActionResult::Refused(e.to_item()),
        })
        .collect();
    Ok(Json(RowActionResults { results }))
}

/// Each prepared item of a batch as the caller's proposal. Request ids are numbered as the
/// envelopes are made, in item order, so a retried request (same Request-Id) proposes the same
/// ids and gets the first answers back.
fn batch_envelopes(caller: &Caller, prepared: Vec<ApiResult<Command>>) -> Vec<ApiResult<Envelope>> {
    prepared
        .into_iter()
        .map(|p| match p {
            Ok(command) => Ok(caller.envelope(caller.authority(command))),
            Err(e) => {
                // Item i keeps request id `/i` even when it proposes nothing.
                caller.requests.next();
                Err(e)
            }
        })
        .collect()
}

/// Each item of a batch checked and prepared in item order, so the first bad item is the one
/// the error names. An item's own refusal (its row missing or another channel's, or claimed by
/// another principal) is that item's answer; any other error fails the whole request.
async fn prepare_batch(
    state: &AppState,
    caller: &Caller,
    items: Vec<RowActionItem>,
) -> ApiResult<Vec<ApiResult<Command>>> {
    let mut seen = std::collections::HashSet::with_capacity(items.len());
    let mut prepared = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let at = format!("actions[{i}]");
        if !ROW_ACTIONS.contains(&item.action.as_str()) {
            return Err(ApiError::invalid(
                format!("{at}.action"),
                format!("must be one of {}", ROW_ACTIONS.join(", ")),
            ));
        }
        if !seen.insert(item.row) {
            return Err(ApiError::invalid(
                format!("{at}.row"),
                "a row may appear once in a batch",
            ));
        }
        prepared.push(prepare_item(state, caller, &at, item).await?);
    }
    Ok(prepared)
}

/// One item of a batch (at `at`, e.g. `actions[3]`) as the command it proposes, or its own
/// refusal; `claim_next` is refused in a batch.
async fn prepare_item(
    state: &AppState,
    caller: &Caller,
    at: &str,
    item: RowActionItem,
) -> ApiResult<ApiResult<Command>> {
    let bytes = serde_json::to_vec(&item.body).map_err(|e| ApiError::internal(e.to_string()))?;
    match prepare_action(state, caller, RowId(item.row), &item.action, &bytes).await {
        Ok(RowCommand::Plain(command)) => Ok(Ok(command)),
        Ok(RowCommand::DoneThenClaim { .. } | RowCommand::HandOnThenClaim { .. }) => {
            Err(ApiError::invalid(
                format!("{at}.body.claim_next"),
                "not in a batch: claim through POST /v1/rows/{id}/{action}",
            ))
        }
        // An item's row that is not there (or not the caller's to see), or whose claim
        // another principal holds now, is that item's answer, as a stale fence is.
        Err(e) if e.status.as_u16() == 404 || e.code == CLAIM_OF_ANOTHER => Ok(Err(e)),
        Err(e) => Err(e.within(at)),
    }
}

/// Check a row action against the caller's scope, parse its body as the action's typed body
/// and turn it into the command to propose; an action not in [`ROW_ACTIONS`] is a 404, as for
/// an unknown route. The scope comes first: a caller learns nothing of a row outside it from
/// how its body is refused.
async fn prepare_action(
    state: &AppState,
    caller: &Caller,
    row_id: RowId,
    action: &str,
    body: &[u8],
) -> ApiResult<RowCommand> {
    let row = scoped_row(state, caller, row_id).await?;
    if let Some(row) = &row {
        require_claim(state, caller, row)?;
    }
    let action = parse_row_action(action, body)?;
    authorize_action(caller, &action)?;
    Ok(state.writes.row_command(row_id, row, action).await?)
}

/// What an action reaches beyond its row: a transform writes the state namespaces its
/// `state_ops` name, a re-ingress creates a message on its loopback channel and a response may
/// name a channel to re-enter, so a scoped caller must be allowed those namespaces and channels
/// too; dead-lettering a row without its fence overrides whoever holds it, an
/// operator's decision (docs/SPEC.md §9.4).
fn authorize_action(caller: &Caller, action: &RowAction) -> ApiResult<()> {
    match action {
        // A transform writes state: the very check a read of those namespaces makes.
        RowAction::Transform(b) => b
            .state_ops
            .iter()
            .try_for_each(|op| caller.require_namespace(&op.namespace)),
        RowAction::Reingress(b) => caller.require_channel(&b.loopback_channel),
        RowAction::Response(b) => match &b.reingress_to {
            Some(channel) => caller.require_channel(channel),
            None => Ok(()),
        },
        RowAction::Dead(b) if b.fence.is_none() => caller.require(Permission::Requeue),
        _ => Ok(()),
    }
}

/// `body` as the typed body of the action named `name` (`400` naming the member at fault), or
/// `404` for a name not in [`ROW_ACTIONS`].
fn parse_row_action(name: &str, body: &[u8]) -> ApiResult<RowAction> {
    Ok(match name {
        "route" => RowAction::Route(parse_json(body)?),
        "handoff" => RowAction::Handoff(parse_json(body)?),
        "transform" => RowAction::Transform(parse_json(body)?),
        "done" => RowAction::Done(parse_json(body)?),
        "response" => RowAction::Response(parse_json(body)?),
        "fail" => RowAction::Fail(parse_json(body)?),
        "dead" => RowAction::Dead(parse_json(body)?),
        "reingress" => RowAction::Reingress(parse_json(body)?),
        other => {
            return Err(ApiError::not_found(format!(
                "unknown row action '{other}' ({})",
                ROW_ACTIONS.join(", ")
            )))
        }
    })
}

/// The row a row action names, once the caller may act on it: `None` when it does not exist
/// (for a caller scoped to channels that is a 404 already, and so is another channel's row).
async fn scoped_row(
    state: &AppState,
    caller: &Caller,
    row_id: RowId,
) -> ApiResult<Option<raftlane_statemachine::row::WorkRow>> {
    // Scope and retry defaults need the row. A local read is enough when it finds the row (a
    // row's channel and destination never change); when it does not, this node may simply lag
    // behind the claim the worker holds, so only a linearizable read may say "not found".
    let mut row = backend::read(state.backend.as_ref(), |r| r.row(row_id))?;
    if row.is_none() {
        state.writes.linearize().await?;
        row = backend::read(state.backend.as_ref(), |r| r.row(row_id))?;
    }
    // Another channel's row answers as a missing one (`crate::by_id`); an unscoped caller's
    // missing row is the state machine's to refuse.
    if row.is_some() || caller.channels.is_some() {
        caller.require_by_id(
            ById::Row(row_id.0),
            row.as_ref().map(|r| r.channel_id.as_str()),
        )?;
    }
    Ok(row)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Every action the contract names parses to its own variant, and its body's errors name
    /// the member at fault; any other name is a 404.
    #[test]
    fn each_contract_action_parses_by_its_name() {
        let minimal = |name: &str| match name {
            "route" => json!({ "fence": 1, "handlers": [] }),
            "handoff" | "transform" => json!({ "fence": 1, "deliveries": [] }),
            "done" => json!({ "fence": 1 }),
            "response" => json!({ "fence": 1, "body": "", "outcome": "ok" }),
            "fail" | "dead" => json!({ "fence": 1, "error": "e" }),
            "reingress" => json!({ "fence": 1, "loopback_channel": "loop" }),
            other => panic!("no body for {other}"),
        };
        for name in RowAction::NAMES {
            let body = minimal(name).to_string();
            let action = parse_row_action(name, body.as_bytes())
                .unwrap_or_else(|e| panic!("{name}: {}", e.message));
            assert_eq!(action.name(), name);
            let e = parse_row_action(name, br#"{"fence": "x"}"#).expect_err(name);
            assert_eq!(
                (e.status.as_u16(), e.field.as_deref()),
                (400, Some("fence"))
            );
        }
        let e = parse_row_action("explode", b"{}").expect_err("unknown");
        assert_eq!(e.status.as_u16(), 404);
        assert!(e.message.starts_with("unknown row action 'explode'"));
    }
}
