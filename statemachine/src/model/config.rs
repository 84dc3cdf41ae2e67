//! The versioned configuration document and its sections, and the retry policy a destination
//! may set (the same type MarkFailed carries).

use crate::model::ids::Millis;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// Default dedupe window for idempotency keys: a day.
pub const DEFAULT_DEDUPE_WINDOW_MS: u64 = 24 * 60 * 60 * 1000;
/// Longest dedupe window accepted: thirty days.
pub const MAX_DEDUPE_WINDOW_MS: u64 = 30 * 24 * 60 * 60 * 1000;

/// A retry policy: a destination's in the configuration, and the one MarkFailed carries (the
/// worker reads it from the configuration it works under).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RetryPolicy {
    /// Absent: retry forever.
    pub max_attempts: Option<u32>,
    pub backoff_ms: u64,
    /// The backoff's multiplier in thousandths (1500 = ×1.5).
    // Fixed-point: no floats in `apply`.
    pub multiplier_milli: u32,
    pub max_backoff_ms: u64,
}

/// A channel's configuration.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct ChannelConfig {
    pub description: Option<String>,
}

/// A destination's configuration.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct DestinationConfig {
    pub url: Option<String>,
    pub retry: Option<RetryPolicy>,
}

/// A handler's configuration.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct HandlerConfig {
    pub channel: Option<String>,
}

/// Retention periods in ms (absent: keep forever; the dedupe window: a day); the leader
/// proposes purges from these.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct RetentionConfig {
    pub message_bodies_ms: Option<u64>,
    pub dead_letters_ms: Option<u64>,
    pub state_ms: Option<u64>,
    pub dedupe_window_ms: Option<u64>,
}

/// The configuration document (`PUT /v1/config` replaces it whole). Every section may be
/// omitted (empty).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct ConfigDoc {
    pub channels: BTreeMap<String, ChannelConfig>,
    pub destinations: BTreeMap<String, DestinationConfig>,
    pub handlers: BTreeMap<String, HandlerConfig>,
    pub retention: RetentionConfig,
    /// Operations that need a second principal's approval.
    pub approvals_required: BTreeSet<String>,
}

impl ConfigDoc {
    /// The idempotency window, bounded by [`MAX_DEDUPE_WINDOW_MS`].
    pub fn dedupe_window_ms(&self) -> u64 {
        self.retention
            .dedupe_window_ms
            .unwrap_or(DEFAULT_DEDUPE_WINDOW_MS)
            .min(MAX_DEDUPE_WINDOW_MS)
    }
}

/// One stored version.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigVersion {
    pub version: u64,
    pub doc: ConfigDoc,
    pub set_at: Millis,
    pub set_by: String,
}
