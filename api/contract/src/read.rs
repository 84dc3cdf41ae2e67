//! How fresh a read of the replicated state is (`?consistency=`, docs/SPEC.md §10), the one
//! query member every such read takes.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How fresh a read must be. By default every read is linearizable (it sees every write
/// acknowledged before it); a stale read is served from the answering node's own state, without
/// asking the leader.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Consistency {
    #[default]
    Linearizable,
    Stale,
}

/// The query of a read that takes nothing but its consistency.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReadOpts {
    /// `stale`: answered from this node's state as it is; absent or `linearizable`: after
    /// catching up with the leader's commit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consistency: Option<Consistency>,
}
