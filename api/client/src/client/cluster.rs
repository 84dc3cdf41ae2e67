//! The cluster: its status and digest, snapshots, leadership, the log format, membership.

use super::Client;
use crate::error::ClientError;
use crate::routes;
use raftlane_contract::{
    Ack, ClusterStatus, LeaderTransferRequest, LeaderTransferred, LearnerRequest, LogFormatRequest,
    LogFormatStatus, MembershipRequest, SnapshotTaken, StateDigest,
};

impl Client {
    /// `GET /v1/cluster`: what the answering node knows of the cluster.
    pub async fn cluster(&self) -> Result<ClusterStatus, ClientError> {
        self.call(&routes::CLUSTER, []).answer().await
    }

    /// `(last_applied, digest)` of the node that answers.
    pub async fn digest(&self) -> Result<(u64, String), ClientError> {
        let d = self.state_digest().await?;
        Ok((d.last_applied, d.digest))
    }

    /// `GET /v1/cluster/digest`: the answering node's state digest, applied index and id.
    pub async fn state_digest(&self) -> Result<StateDigest, ClientError> {
        self.call(&routes::CLUSTER_DIGEST, []).answer().await
    }

    /// `POST /v1/cluster/snapshot`: the answering node builds a snapshot covering everything
    /// it applied (admin).
    pub async fn snapshot(&self) -> Result<SnapshotTaken, ClientError> {
        self.call(&routes::SNAPSHOT_TAKE, []).answer().await
    }

    /// `POST /v1/cluster/leader`: hand leadership to voter `to` (absent: the voter whose log
    /// reaches furthest); admin.
    pub async fn transfer_leader(&self, to: Option<u64>) -> Result<LeaderTransferred, ClientError> {
        self.call(&routes::LEADER_TRANSFER, [])
            .json(&LeaderTransferRequest { to })?
            .answer()
            .await
    }

    /// `GET /v1/cluster/log-format`: the format the cluster writes, and those the answering
    /// node's build reads.
    pub async fn log_format(&self) -> Result<LogFormatStatus, ClientError> {
        self.call(&routes::LOG_FORMAT, []).answer().await
    }

    /// `POST /v1/cluster/log-format`: raise the cluster's log format to `format` (admin; the
    /// end of a rolling upgrade).
    pub async fn raise_log_format(&self, format: u32) -> Result<LogFormatStatus, ClientError> {
        self.call(&routes::LOG_FORMAT_RAISE, [])
            .json(&LogFormatRequest { format })?
            .answer()
            .await
    }

    /// `POST /v1/cluster/learners`: add node `id` at `addr` as a learner; answered once it
    /// caught up.
    pub async fn add_learner(&self, id: u64, addr: &str) -> Result<Ack, ClientError> {
        let body = LearnerRequest {
            id,
            addr: addr.to_string(),
        };
        self.call(&routes::LEARNER_ADD, [])
            .json(&body)?
            .answer()
            .await
    }

    /// `POST /v1/cluster/membership`: make the voter set exactly `voters`.
    pub async fn change_membership(&self, voters: &[u64]) -> Result<Ack, ClientError> {
        let body = MembershipRequest {
            voters: voters.to_vec(),
        };
        self.call(&routes::MEMBERSHIP, [])
            .json(&body)?
            .answer()
            .await
    }
}
