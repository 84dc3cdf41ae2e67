//! Dual control: approvals asked of another principal, and the approvals an engine keys and
//! dates itself (docs/SPEC.md §9.5, §14.10).

use super::Client;
use crate::error::ClientError;
use crate::query::page_limit;
use crate::routes;
use raftlane_contract::{
    ApprovalCreated, ApprovalDecided, ApprovalId, ApprovalList, ApprovalListQuery,
    ApprovalListStatus, ApprovalRequest, ApprovalView, DecideRequest, KeyedApprovalRequest,
    KeyedDecideRequest, KeyedDecided,
};

impl Client {
    /// `POST /v1/approvals`: ask another principal to approve an operation.
    pub async fn create_approval(
        &self,
        request: &ApprovalRequest,
    ) -> Result<ApprovalCreated, ClientError> {
        self.call(&routes::APPROVAL_CREATE, [])
            .json(request)?
            .answer()
            .await
    }

    /// `GET /v1/approvals/{id}`, its status as of the read.
    pub async fn approval(&self, id: ApprovalId) -> Result<ApprovalView, ClientError> {
        self.call(&routes::APPROVAL, [&id.to_string()])
            .reads_state()
            .answer()
            .await
    }

    /// `POST /v1/approvals/{id}/decide`: approve or reject, once, as someone other than the
    /// requester.
    pub async fn decide_approval(
        &self,
        id: ApprovalId,
        approve: bool,
    ) -> Result<ApprovalDecided, ClientError> {
        self.call(&routes::APPROVAL_DECIDE, [&id.to_string()])
            .json(&DecideRequest { approve })?
            .answer()
            .await
    }

    /// `GET /v1/approvals?status=pending`: approvals pending and unexpired, newest first, at
    /// most `limit` (absent: 100).
    pub async fn pending_approvals(&self, limit: Option<u32>) -> Result<ApprovalList, ClientError> {
        let query = ApprovalListQuery {
            status: ApprovalListStatus::Pending,
            limit: page_limit(limit),
            consistency: None,
        };
        self.call(&routes::APPROVALS, [])
            .query(&query)?
            .reads_state()
            .answer()
            .await
    }

    /// `POST /v1/approvals/keyed`: an approval under the caller's key, requester and times.
    pub async fn create_keyed_approval(
        &self,
        request: &KeyedApprovalRequest,
    ) -> Result<ApprovalCreated, ClientError> {
        self.call(&routes::KEYED_APPROVAL_CREATE, [])
            .json(request)?
            .answer()
            .await
    }

    /// `GET /v1/approvals/keyed/{key}`: the approval under `key`, its status as stored.
    pub async fn keyed_approval(&self, key: &str) -> Result<ApprovalView, ClientError> {
        self.call(&routes::KEYED_APPROVAL, [key])
            .reads_state()
            .answer()
            .await
    }

    /// `POST /v1/approvals/keyed/{key}/decide` (409 `already_decided` once decided).
    pub async fn decide_keyed_approval(
        &self,
        key: &str,
        decision: &KeyedDecideRequest,
    ) -> Result<KeyedDecided, ClientError> {
        self.call(&routes::KEYED_APPROVAL_DECIDE, [key])
            .json(decision)?
            .answer()
            .await
    }
}
