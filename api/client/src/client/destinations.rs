//! Pausing a destination (docs/SPEC.md §4.9): its rows stay, in order, and none is handed out
//! until it is resumed.

use super::Client;
use crate::error::ClientError;
use crate::routes;
use raftlane_contract::{PauseRequest, PauseState, PausedDestinations};

impl Client {
    /// `POST /v1/destinations/{destination}/pause`, with the reason kept beside the pause.
    pub async fn pause_destination(
        &self,
        destination: &str,
        reason: Option<&str>,
    ) -> Result<PauseState, ClientError> {
        let body = PauseRequest {
            reason: reason.map(str::to_string),
        };
        self.call(&routes::DESTINATION_PAUSE, [destination])
            .json(&body)?
            .answer()
            .await
    }

    /// `POST /v1/destinations/{destination}/resume`.
    pub async fn resume_destination(&self, destination: &str) -> Result<PauseState, ClientError> {
        self.call(&routes::DESTINATION_RESUME, [destination])
            .answer()
            .await
    }

    /// `GET /v1/destinations/paused`: every paused destination, who paused it, when and why.
    pub async fn paused_destinations(&self) -> Result<PausedDestinations, ClientError> {
        self.call(&routes::DESTINATIONS_PAUSED, [])
            .reads_state()
            .answer()
            .await
    }
}
