//! Encryption at rest: moving every covered value under the active key.

use super::Client;
use crate::error::ClientError;
use crate::routes;
use raftlane_contract::{RotateRequest, Rotated};

impl Client {
    /// `POST /v1/keys/rotate`: re-encrypt every covered value under the active key,
    /// `batch_size` values a batch (absent: 500). Under dual control, send it through
    /// [`Client::with_approval`].
    pub async fn rotate_keys(&self, batch_size: Option<usize>) -> Result<Rotated, ClientError> {
        self.call(&routes::KEYS_ROTATE, [])
            .json(&RotateRequest { batch_size })?
            .answer()
            .await
    }
}
