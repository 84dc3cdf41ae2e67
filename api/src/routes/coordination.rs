//! Engine coordination (docs/SPEC.md §15): heartbeats and clean leaves of engine processes,
//! one leadership lease per group, shared counters, and the lanes a node holds. A node id is
//! its principal's (docs/SPEC.md §9.8): the state machine binds it at its first heartbeat or
//! campaign and refuses it to every other principal; an operator's leave or resignation of
//! another principal's node goes through the envelope's `as_operator`.

use super::{check_name, prepare_read, propose, unexpected, ReadOpts};
use crate::auth::{Caller, Permission};
use crate::backend;
use crate::error::ApiResult;
use crate::extract::{JsonBody, OptionalJson, Path, Query};
use crate::state::AppState;
use axum::extract::State;
use axum::Json;
use raftlane_contract::{
    CampaignRequest, CounterValue, EngineNode, EngineNodes, HeartbeatAck, HeartbeatRequest,
    HeldLanes, Leadership, NodeLeft, ResignRequest, Resigned,
};
use raftlane_statemachine::wire::command::{
    BumpCounter, CampaignLeadership, NodeHeartbeat, NodeLeave, ResignLeadership,
};
use raftlane_statemachine::{checks, Command, Outcome};
use std::sync::Arc;

pub async fn heartbeat(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(node_id): Path<String>,
    body: OptionalJson<HeartbeatRequest>,
) -> ApiResult<Json<HeartbeatAck>> {
    caller.require_global(Permission::Work)?;
    check_name("node_id", &node_id)?;
    let b = body.parse()?;
    checks::opt_name("host", b.host.as_deref())?;
    let command = Command::NodeHeartbeat(NodeHeartbeat {
        node_id,
        host: b.host,
        pid: b.pid,
    });
    let (index, _) = propose(&state, &caller, command).await?;
    Ok(Json(HeartbeatAck { index }))
}

pub async fn leave(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(node_id): Path<String>,
) -> ApiResult<Json<NodeLeft>> {
    caller.require_global(Permission::Work)?;
    check_name("node_id", &node_id)?;
    // An operator may mark another principal's engine left (audited by the state machine);
    // anyone else only its own (docs/SPEC.md §9.8).
    let command = caller.authority(Command::NodeLeave(NodeLeave { node_id }));
    match propose(&state, &caller, command).await? {
        (index, Outcome::Count(n)) => Ok(Json(NodeLeft {
            left: n == 1,
            index,
        })),
        (_, other) => Err(unexpected(other)),
    }
}

pub async fn nodes(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Query(opts): Query<ReadOpts>,
) -> ApiResult<Json<EngineNodes>> {
    caller.require_global(Permission::Read)?;
    prepare_read(&state, &opts).await?;
    let nodes = backend::read(state.backend.as_ref(), |r| r.engine_nodes())?;
    Ok(Json(EngineNodes {
        nodes: nodes.into_iter().map(EngineNode::from).collect(),
        now: caller.now_ms(),
    }))
}

pub async fn campaign(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(group): Path<String>,
    JsonBody(b): JsonBody<CampaignRequest>,
) -> ApiResult<Json<Leadership>> {
    caller.require_global(Permission::Work)?;
    check_name("group", &group)?;
    check_name("node_id", &b.node_id)?;
    checks::ttl("ttl_ms", b.ttl_ms)?;
    let command = Command::CampaignLeadership(CampaignLeadership {
        group: group.clone(),
        node_id: b.node_id,
        ttl_ms: b.ttl_ms,
    });
    match propose(&state, &caller, command).await? {
        (_, Outcome::Leader(lease)) => {
            Ok(Json(Leadership::of(group, Some(lease), caller.now_ms())))
        }
        (_, other) => Err(unexpected(other)),
    }
}

pub async fn resign(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(group): Path<String>,
    JsonBody(b): JsonBody<ResignRequest>,
) -> ApiResult<Json<Resigned>> {
    caller.require_global(Permission::Work)?;
    check_name("group", &group)?;
    check_name("node_id", &b.node_id)?;
    let command = caller.authority(Command::ResignLeadership(ResignLeadership {
        group,
        node_id: b.node_id,
    }));
    match propose(&state, &caller, command).await? {
        (index, Outcome::Count(n)) => Ok(Json(Resigned {
            resigned: n == 1,
            index,
        })),
        (_, other) => Err(unexpected(other)),
    }
}

pub async fn leadership(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(group): Path<String>,
    Query(opts): Query<ReadOpts>,
) -> ApiResult<Json<Leadership>> {
    caller.require_global(Permission::Read)?;
    check_name("group", &group)?;
    prepare_read(&state, &opts).await?;
    let lease = backend::read(state.backend.as_ref(), |r| r.leadership(&group))?;
    Ok(Json(Leadership::of(group, lease, caller.now_ms())))
}

pub async fn bump(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(name): Path<String>,
) -> ApiResult<Json<CounterValue>> {
    caller.require_global(Permission::Work)?;
    check_name("name", &name)?;
    let command = Command::BumpCounter(BumpCounter { name: name.clone() });
    match propose(&state, &caller, command).await? {
        (_, Outcome::Count(value)) => Ok(Json(CounterValue { name, value })),
        (_, other) => Err(unexpected(other)),
    }
}

pub async fn counter(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(name): Path<String>,
    Query(opts): Query<ReadOpts>,
) -> ApiResult<Json<CounterValue>> {
    caller.require_global(Permission::Read)?;
    check_name("name", &name)?;
    prepare_read(&state, &opts).await?;
    let value = backend::read(state.backend.as_ref(), |r| r.counter(&name))?;
    Ok(Json(CounterValue { name, value }))
}

pub async fn held_lanes(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(owner): Path<String>,
    Query(opts): Query<ReadOpts>,
) -> ApiResult<Json<HeldLanes>> {
    caller.require_global(Permission::Read)?;
    check_name("owner", &owner)?;
    prepare_read(&state, &opts).await?;
    let now = caller.now_ms();
    let lanes = backend::read(state.backend.as_ref(), |r| r.lanes_held_by(&owner, now))?;
    Ok(Json(HeldLanes { owner, lanes }))
}
