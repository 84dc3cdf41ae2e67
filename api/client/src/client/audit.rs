//! The audit chain: append, list, search, anchor, verify, seal.

use super::Client;
use crate::error::ClientError;
use crate::query::page_limit;
use crate::routes;
use raftlane_contract::{
    AuditAnchor, AuditAppendRequest, AuditAppended, AuditQuery, AuditRows, AuditSealRequest,
    AuditVerification,
};

/// The query of `org`'s rows, and nothing else.
fn of_org(org: &str) -> AuditQuery {
    AuditQuery {
        org: Some(org.to_string()),
        ..AuditQuery::default()
    }
}

/// `GET /v1/audit/search`: an actor's rows of an org, newest first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuditSearch {
    pub org: String,
    pub actor: String,
    /// Only actions starting with this.
    pub action_prefix: Option<String>,
    /// Absent: 100.
    pub limit: Option<u32>,
}

impl Client {
    pub async fn audit_append(
        &self,
        action: &str,
        org: Option<&str>,
        detail: Option<&str>,
    ) -> Result<AuditAppended, ClientError> {
        let row = AuditAppendRequest {
            action: action.to_string(),
            channel: None,
            org: org.map(str::to_string),
            detail: detail.map(str::to_string),
            actor: None,
        };
        self.audit_append_with(&row).await
    }

    /// `POST /v1/audit` with every member (a channel, an actor the caller records for).
    pub async fn audit_append_with(
        &self,
        row: &AuditAppendRequest,
    ) -> Result<AuditAppended, ClientError> {
        self.call(&routes::AUDIT_APPEND, [])
            .json(row)?
            .answer()
            .await
    }

    /// `GET /v1/audit`: `org`'s rows from seq `from` (absent: the first), at most `limit`
    /// (absent: 100).
    pub async fn audit_rows(
        &self,
        org: &str,
        from: Option<u64>,
        limit: Option<u32>,
    ) -> Result<AuditRows, ClientError> {
        let query = AuditQuery {
            from,
            limit: page_limit(limit),
            ..of_org(org)
        };
        self.call(&routes::AUDIT_ROWS, [])
            .query(&query)?
            .reads_state()
            .answer()
            .await
    }

    /// `GET /v1/audit/search`.
    pub async fn audit_search(&self, search: &AuditSearch) -> Result<AuditRows, ClientError> {
        let query = AuditQuery {
            actor: Some(search.actor.clone()),
            action_prefix: search.action_prefix.clone(),
            limit: page_limit(search.limit),
            ..of_org(&search.org)
        };
        self.call(&routes::AUDIT_SEARCH, [])
            .query(&query)?
            .reads_state()
            .answer()
            .await
    }

    /// `GET /v1/audit/anchor`: the chain's tip, to keep elsewhere and verify against later.
    pub async fn audit_anchor(&self, org: &str) -> Result<AuditAnchor, ClientError> {
        self.call(&routes::AUDIT_ANCHOR, [])
            .query(&of_org(org))?
            .reads_state()
            .answer()
            .await
    }

    /// `GET /v1/audit/verify`: recompute `org`'s chain.
    pub async fn audit_verify(&self, org: &str) -> Result<AuditVerification, ClientError> {
        self.verify(&of_org(org)).await
    }

    /// `GET /v1/audit/verify` against an anchor kept elsewhere: fails when the anchored prefix
    /// was truncated or rewritten.
    pub async fn audit_verify_against(
        &self,
        anchor: &AuditAnchor,
    ) -> Result<AuditVerification, ClientError> {
        let query = AuditQuery {
            count: Some(anchor.count),
            head: Some(anchor.head.clone()),
            ..of_org(&anchor.org)
        };
        self.verify(&query).await
    }

    async fn verify(&self, query: &AuditQuery) -> Result<AuditVerification, ClientError> {
        self.call(&routes::AUDIT_VERIFY, [])
            .query(query)?
            .reads_state()
            .answer()
            .await
    }

    /// `POST /v1/audit/seal`: close `org`'s era.
    pub async fn audit_seal(&self, org: &str) -> Result<AuditAppended, ClientError> {
        let body = AuditSealRequest {
            org: org.to_string(),
        };
        self.call(&routes::AUDIT_SEAL, [])
            .json(&body)?
            .answer()
            .await
    }
}
