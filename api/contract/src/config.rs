//! The versioned configuration: read the current or any version, replace it with `If-Match`.

use raftlane_statemachine::model::config::{ConfigDoc, ConfigVersion};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The body of `PUT /v1/config` is a [`ConfigDoc`] (re-exported at the crate root).
///
/// `GET /v1/config` and `GET /v1/config/versions/{v}`: a configuration version.
///
/// Members in alphabetical order, the order clients read on the wire.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ConfigAnswer {
    pub config: ConfigDoc,
    /// When it was written (ms since the epoch).
    pub set_at: u64,
    /// The principal that wrote it.
    pub set_by: String,
    pub version: u64,
}

impl From<ConfigVersion> for ConfigAnswer {
    fn from(v: ConfigVersion) -> Self {
        ConfigAnswer {
            config: v.doc,
            set_at: v.set_at,
            set_by: v.set_by,
            version: v.version,
        }
    }
}

/// `PUT /v1/config`: the version the new configuration got, and the log index it was applied at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ConfigWritten {
    pub version: u64,
    pub index: u64,
}
