//! The operator dashboard's figures. Both scan the state (docs/SPEC.md §14.11): for a person's
//! refresh, not a worker's loop.

use super::Client;
use crate::error::ClientError;
use crate::routes;
use raftlane_contract::{ConnectionMetrics, StorageStats, TrafficQuery};

impl Client {
    /// `GET /v1/stats/storage`: messages, events and the state's logical size.
    pub async fn storage_stats(&self) -> Result<StorageStats, ClientError> {
        self.call(&routes::STORAGE_STATS, [])
            .reads_state()
            .answer()
            .await
    }

    /// `GET /v1/metrics/connections`: inbound traffic per channel and outbound per destination
    /// since `since` (ms; absent: everything), `recent_done` counted over `rate_window_ms`
    /// (absent: a minute).
    pub async fn connection_metrics(
        &self,
        since: Option<u64>,
        rate_window_ms: Option<u64>,
    ) -> Result<ConnectionMetrics, ClientError> {
        let query = TrafficQuery {
            since,
            rate_window_ms,
            consistency: None,
        };
        self.call(&routes::CONNECTION_METRICS, [])
            .query(&query)?
            .reads_state()
            .answer()
            .await
    }
}
