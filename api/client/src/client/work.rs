//! Workers' calls: FIFO and unordered claims, lanes and their leases.

use super::Client;
use crate::error::ClientError;
use crate::query::page_limit;
use crate::routes;
use raftlane_contract::{
    CancelRequest, Cancelled, ClaimRequest, Claimed, ClaimedRow, FifoClaim, FifoClaimRequest,
    LaneList, LaneListQuery, LaneStatus, ReleaseRequest, Released, RenewRequest, Renewed, Stage,
};

/// Which page of `GET /v1/lanes`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LanePage {
    /// Only this stage's lanes.
    pub stage: Option<Stage>,
    /// Lanes per page (absent: 100).
    pub limit: Option<u32>,
    /// The previous page's `next_cursor`.
    pub cursor: Option<String>,
}

impl Client {
    /// Claim the lane's head for `owner` under a lane lease of `ttl_ms` (strict FIFO).
    pub async fn claim_fifo(
        &self,
        stage: &str,
        lane: &str,
        owner: &str,
        ttl_ms: u64,
    ) -> Result<FifoClaim, ClientError> {
        let claim = FifoClaimRequest {
            owner: owner.to_string(),
            ttl_ms,
            lane_lease: None,
            row_owner: None,
            wait_ms: None,
        };
        self.claim_fifo_with(stage, lane, &claim).await
    }

    /// [`Client::claim_fifo`] with every member of the request: no lane lease, a row owner
    /// apart from the lane's, a wait at the server (`wait_ms`, which this call's timeout and
    /// deadline grow by).
    pub async fn claim_fifo_with(
        &self,
        stage: &str,
        lane: &str,
        claim: &FifoClaimRequest,
    ) -> Result<FifoClaim, ClientError> {
        self.call(&routes::LANE_CLAIM, [stage, lane])
            .json(claim)?
            .waiting(claim.wait_ms)
            .answer()
            .await
    }

    /// Claim up to `limit` due rows of `stage` (unordered) for `owner`.
    pub async fn claim_ready(
        &self,
        stage: Stage,
        limit: u32,
        owner: &str,
        ttl_ms: u64,
        channel: Option<&str>,
    ) -> Result<Vec<ClaimedRow>, ClientError> {
        let claim = ClaimRequest {
            stage,
            limit,
            owner: owner.to_string(),
            ttl_ms,
            channel: channel.map(str::to_string),
            destination: None,
            wait_ms: None,
        };
        Ok(self.claim_with(&claim).await?.items)
    }

    /// `POST /v1/claims` with every member of the request (a destination, a wait at the
    /// server, which this call's timeout and deadline grow by).
    pub async fn claim_with(&self, claim: &ClaimRequest) -> Result<Claimed, ClientError> {
        self.call(&routes::CLAIMS, [])
            .json(claim)?
            .waiting(claim.wait_ms)
            .answer()
            .await
    }

    /// `POST /v1/lanes/{stage}/{name}/release`: give `owner`'s lane lease back.
    pub async fn release_lane(
        &self,
        stage: Stage,
        lane: &str,
        owner: &str,
    ) -> Result<Released, ClientError> {
        let body = ReleaseRequest {
            owner: owner.to_string(),
        };
        self.call(&routes::LANE_RELEASE, [stage.as_str(), lane])
            .json(&body)?
            .answer()
            .await
    }

    /// `GET /v1/lanes/{stage}/{name}`: the lane's depth, oldest row and holder.
    pub async fn lane(&self, stage: Stage, lane: &str) -> Result<LaneStatus, ClientError> {
        self.call(&routes::LANE, [stage.as_str(), lane])
            .reads_state()
            .answer()
            .await
    }

    /// `GET /v1/lanes`: a page of every lane (unscoped tokens only).
    pub async fn lanes(&self, page: &LanePage) -> Result<LaneList, ClientError> {
        let query = LaneListQuery {
            stage: page.stage,
            limit: page_limit(page.limit),
            cursor: page.cursor.clone(),
            consistency: None,
        };
        self.call(&routes::LANES, [])
            .query(&query)?
            .reads_state()
            .answer()
            .await
    }

    /// `POST /v1/lanes/outbound/{dest}/cancel`: cancel a destination's pending outbound rows
    /// (of one channel, or only the head).
    pub async fn cancel(
        &self,
        destination: &str,
        which: &CancelRequest,
    ) -> Result<Cancelled, ClientError> {
        self.call(&routes::OUTBOUND_CANCEL, [destination])
            .json(which)?
            .answer()
            .await
    }

    /// `POST /v1/leases/renew`: extend `owner`'s leases on these rows and their lanes.
    pub async fn renew(&self, renewal: &RenewRequest) -> Result<Renewed, ClientError> {
        self.call(&routes::LEASES_RENEW, [])
            .json(renewal)?
            .answer()
            .await
    }
}
