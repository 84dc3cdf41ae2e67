//! What a node serves without a token: its liveness and readiness, its metrics, its OpenAPI
//! document and the operator's page. Each describes the answering node, not the cluster.

use super::Client;
use crate::error::ClientError;
use crate::routes;
use hyper::StatusCode;
use raftlane_contract::{Health, OpenApiDocument, Readiness};

impl Client {
    /// `GET /healthz`: the process answers.
    pub async fn healthz(&self) -> Result<Health, ClientError> {
        self.call(&routes::HEALTHZ, []).answer().await
    }

    /// `GET /readyz` of the current node, in one attempt: a 503 is `ready: false` with its
    /// reason, not an error. (Ask a given node through [`Client::pinned`].)
    pub async fn readyz(&self) -> Result<Readiness, ClientError> {
        self.call(&routes::READYZ, [])
            .once()
            .answering(StatusCode::SERVICE_UNAVAILABLE)
            .answer()
            .await
    }

    /// `GET /metrics`: the answering node's Prometheus text (with this client's token, for a
    /// node that requires one).
    pub async fn metrics(&self) -> Result<String, ClientError> {
        self.call(&routes::METRICS, []).text().await
    }

    /// `GET /openapi.json`: the OpenAPI document of the API.
    pub async fn openapi(&self) -> Result<OpenApiDocument, ClientError> {
        self.call(&routes::OPENAPI, []).answer().await
    }

    /// `GET /ui`: the operator's page (HTML).
    pub async fn operator_page(&self) -> Result<String, ClientError> {
        self.call(&routes::OPERATOR_PAGE, []).text().await
    }
}
