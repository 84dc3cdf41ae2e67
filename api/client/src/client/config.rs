//! The versioned configuration: the current version or any earlier one, and a compare-and-set
//! replacement.

use super::Client;
use crate::error::ClientError;
use crate::routes;
use raftlane_contract::{headers, ConfigAnswer, ConfigWritten};
use serde::Serialize;

impl Client {
    /// `GET /v1/config`: the current configuration and its version.
    pub async fn config(&self) -> Result<ConfigAnswer, ClientError> {
        self.call(&routes::CONFIG, []).reads_state().answer().await
    }

    /// `GET /v1/config/versions/{v}`: an earlier (or the current) version.
    pub async fn config_version(&self, version: u64) -> Result<ConfigAnswer, ClientError> {
        self.call(&routes::CONFIG_VERSION, [&version.to_string()])
            .reads_state()
            .answer()
            .await
    }

    /// Compare-and-set the config (a [`raftlane_contract::ConfigDoc`], or JSON of its shape);
    /// `Err` with status 412 carries the current version ([`ClientError::current_version`]).
    /// Answers the new version.
    pub async fn put_config(
        &self,
        expected_version: u64,
        config: impl Serialize,
    ) -> Result<u64, ClientError> {
        Ok(self
            .put_config_written(expected_version, config)
            .await?
            .version)
    }

    /// [`Client::put_config`], answering the new version and the log index it was applied at.
    /// Under dual control, send it through [`Client::with_approval`].
    pub async fn put_config_written(
        &self,
        expected_version: u64,
        config: impl Serialize,
    ) -> Result<ConfigWritten, ClientError> {
        self.call(&routes::CONFIG_PUT, [])
            .json(&config)?
            .header(headers::IF_MATCH, expected_version.to_string())
            .answer()
            .await
    }
}
