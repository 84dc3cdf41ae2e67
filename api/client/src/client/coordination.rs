//! Engine coordination (docs/SPEC.md §15): the registry of engine processes, one leader per
//! group through a fenced lease, shared counters, and the lanes a node holds.

use super::Client;
use crate::error::ClientError;
use crate::routes;
use raftlane_contract::{
    CampaignRequest, CounterValue, EngineNodes, HeartbeatAck, HeartbeatRequest, HeldLanes,
    Leadership, NodeLeft, ResignRequest, Resigned,
};

impl Client {
    /// `PUT /v1/engine/nodes/{node_id}`: register `node_id` or refresh its `last_seen`.
    pub async fn engine_heartbeat(
        &self,
        node_id: &str,
        heartbeat: &HeartbeatRequest,
    ) -> Result<HeartbeatAck, ClientError> {
        self.call(&routes::ENGINE_HEARTBEAT, [node_id])
            .json(heartbeat)?
            .answer()
            .await
    }

    /// `DELETE /v1/engine/nodes/{node_id}`: a clean stop (`left`, its leadership given up).
    pub async fn engine_leave(&self, node_id: &str) -> Result<NodeLeft, ClientError> {
        self.call(&routes::ENGINE_LEAVE, [node_id]).answer().await
    }

    /// `GET /v1/engine/nodes`: every registered engine process and the time of the read.
    pub async fn engine_nodes(&self) -> Result<EngineNodes, ClientError> {
        self.call(&routes::ENGINE_NODES, [])
            .reads_state()
            .answer()
            .await
    }

    /// `POST /v1/engine/leadership/{group}`: take or renew `group`'s lease for `node_id`;
    /// answers the lease as it stands, whoever holds it.
    pub async fn campaign(
        &self,
        group: &str,
        node_id: &str,
        ttl_ms: u64,
    ) -> Result<Leadership, ClientError> {
        let body = CampaignRequest {
            node_id: node_id.to_string(),
            ttl_ms,
        };
        self.call(&routes::LEADERSHIP_CAMPAIGN, [group])
            .json(&body)?
            .answer()
            .await
    }

    /// `POST /v1/engine/leadership/{group}/resign`.
    pub async fn resign(&self, group: &str, node_id: &str) -> Result<Resigned, ClientError> {
        let body = ResignRequest {
            node_id: node_id.to_string(),
        };
        self.call(&routes::LEADERSHIP_RESIGN, [group])
            .json(&body)?
            .answer()
            .await
    }

    /// `GET /v1/engine/leadership/{group}`.
    pub async fn leadership(&self, group: &str) -> Result<Leadership, ClientError> {
        self.call(&routes::LEADERSHIP, [group])
            .reads_state()
            .answer()
            .await
    }

    /// `POST /v1/engine/counters/{name}`: add one; answers the value after.
    pub async fn bump_counter(&self, name: &str) -> Result<CounterValue, ClientError> {
        self.call(&routes::COUNTER_BUMP, [name]).answer().await
    }

    /// `GET /v1/engine/counters/{name}`.
    pub async fn counter(&self, name: &str) -> Result<CounterValue, ClientError> {
        self.call(&routes::COUNTER, [name])
            .reads_state()
            .answer()
            .await
    }

    /// `GET /v1/engine/lanes/{owner}`: the lanes (`stage:name`) whose lease `owner` holds.
    pub async fn held_lanes(&self, owner: &str) -> Result<HeldLanes, ClientError> {
        self.call(&routes::HELD_LANES, [owner])
            .reads_state()
            .answer()
            .await
    }
}
