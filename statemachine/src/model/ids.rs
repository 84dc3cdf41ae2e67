//! Newtypes for the identifiers that travel in commands and responses.
//!
//! Keeping them distinct types means a row id can never be passed where a message id or a
//! fencing token is expected; the compiler catches the mix-up instead of a replica.

use serde::{Deserialize, Serialize};
use std::fmt;

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub u64);

        impl $name {
            /// Big-endian bytes, so that byte order equals numeric order in ordered key spaces.
            pub fn to_be_bytes(self) -> [u8; 8] {
                self.0.to_be_bytes()
            }
        }

        /// The schema of the bare integer the id serializes as (`#[serde(transparent)]`),
        /// inlined wherever an id appears: a named component per id type would add nothing a
        /// client can check.
        #[cfg(feature = "schema")]
        impl schemars::JsonSchema for $name {
            fn inline_schema() -> bool {
                true
            }

            fn schema_name() -> std::borrow::Cow<'static, str> {
                <u64 as schemars::JsonSchema>::schema_name()
            }

            fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
                <u64 as schemars::JsonSchema>::json_schema(generator)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}", self.0)
            }
        }
    };
}

id_type!(
    /// A message, assigned from a counter in state, so every replica assigns the same id.
    MessageId
);
id_type!(
    /// A work row. It is also the row's global `seq`: strictly increasing in insertion order,
    /// which is the FIFO tiebreak inside a lane.
    RowId
);
id_type!(
    /// A fencing token: the Raft log index of the claim that handed the row out. A completion
    /// must present the fence of the row's current claim; anything older is stale.
    Fence
);
id_type!(
    /// An approval request; the log index of the command that created it.
    ApprovalId
);

/// Milliseconds since the Unix epoch, as stamped by the proposer and clamped monotonic in state.
pub type Millis = u64;
