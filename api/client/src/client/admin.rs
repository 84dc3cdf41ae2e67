//! Administration of what transforms share: transform state, reference sets, and retention.

use super::Client;
use crate::error::ClientError;
use crate::routes;
use raftlane_contract::{
    NamespaceList, NamespaceQuery, NamespaceVersion, PurgeRequest, Purged, Reference,
    ReferenceList, ReferenceRequest, ReferenceWritten, StateValue,
};

impl Client {
    /// `GET /v1/state`: every transform-state namespace with its version.
    pub async fn namespaces(&self) -> Result<NamespaceList, ClientError> {
        self.call(&routes::STATE_NAMESPACES, [])
            .reads_state()
            .answer()
            .await
    }

    /// `GET /v1/state/{namespace}`: its version; with `entries`, every entry read at that
    /// version.
    pub async fn namespace(
        &self,
        namespace: &str,
        entries: bool,
    ) -> Result<NamespaceVersion, ClientError> {
        let query = NamespaceQuery {
            entries,
            consistency: None,
        };
        self.call(&routes::STATE_NAMESPACE, [namespace])
            .query(&query)?
            .reads_state()
            .answer()
            .await
    }

    /// `GET /v1/state/{namespace}/{key}`: one entry (404 when there is none).
    pub async fn state_entry(&self, namespace: &str, key: &str) -> Result<StateValue, ClientError> {
        self.call(&routes::STATE_ENTRY, [namespace, key])
            .reads_state()
            .answer()
            .await
    }

    /// `GET /v1/reference`: every reference set without its rows.
    pub async fn reference_sets(&self) -> Result<ReferenceList, ClientError> {
        self.call(&routes::REFERENCES, [])
            .reads_state()
            .answer()
            .await
    }

    /// `GET /v1/reference/{name}`: a reference set with its rows.
    pub async fn reference(&self, name: &str) -> Result<Reference, ClientError> {
        self.call(&routes::REFERENCE, [name])
            .reads_state()
            .answer()
            .await
    }

    /// `PUT /v1/reference/{name}`: replace the set whole. Under dual control, send it through
    /// [`Client::with_approval`].
    pub async fn put_reference(
        &self,
        name: &str,
        set: &ReferenceRequest,
    ) -> Result<ReferenceWritten, ClientError> {
        self.call(&routes::REFERENCE_PUT, [name])
            .json(set)?
            .answer()
            .await
    }

    /// `POST /v1/retention/purge`: bodies, dead letters or state older than an age or a
    /// cutoff. Under dual control, send it through [`Client::with_approval`].
    pub async fn purge(&self, purge: &PurgeRequest) -> Result<Purged, ClientError> {
        self.call(&routes::RETENTION_PURGE, [])
            .json(purge)?
            .answer()
            .await
    }
}
