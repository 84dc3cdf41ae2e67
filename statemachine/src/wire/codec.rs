//! The stable binary encoding used for commands in the Raft log and for values in storage.
//!
//! bincode with fixed-width integers and a size limit: the limit stops a garbage length prefix
//! from allocating gigabytes, and rejecting trailing bytes makes every accepted input canonical.

use bincode::Options;
use serde::{de::DeserializeOwned, Serialize};

/// Largest value the codec will decode (a whole message body plus envelope fits well within).
pub const MAX_ENCODED_BYTES: u64 = 64 * 1024 * 1024;

/// A value could not be decoded: garbage, truncated, or from an incompatible version.
#[derive(Debug, thiserror::Error)]
#[error("cannot decode {what}: {reason}")]
pub struct DecodeError {
    pub what: &'static str,
    pub reason: String,
}

fn options() -> impl Options {
    bincode::DefaultOptions::new()
        .with_fixint_encoding()
        .with_big_endian()
        .with_limit(MAX_ENCODED_BYTES)
        .reject_trailing_bytes()
}

/// Encode a value. Encoding the crate's own types cannot fail (no maps with non-string keys
/// that bincode rejects, no unsized sequences), so failure is reported as an empty result
/// rather than a panic; callers that care use [`try_encode`].
pub fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    try_encode(value).unwrap_or_default()
}

/// Encode a value, reporting the (theoretical) failure.
pub fn try_encode<T: Serialize>(value: &T) -> Result<Vec<u8>, DecodeError> {
    options().serialize(value).map_err(|e| DecodeError {
        what: std::any::type_name::<T>(),
        reason: e.to_string(),
    })
}

/// The length [`encode`] would return, without building the bytes: for callers that only
/// weigh a value (the proposers' batch limits), so it is not encoded twice.
pub fn encoded_len<T: Serialize>(value: &T) -> usize {
    options()
        .serialized_size(value)
        .ok()
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or(0)
}

/// Decode a value, never panicking on malformed input.
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, DecodeError> {
    options().deserialize(bytes).map_err(|e| DecodeError {
        what: std::any::type_name::<T>(),
        reason: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::command::{Command, EnqueueIngress, Envelope};

    #[test]
    fn encoded_len_is_the_length_of_the_encoding() {
        let envelope = Envelope::new(
            7,
            "someone",
            Command::EnqueueIngress(EnqueueIngress {
                channel: "orders".into(),
                raw: "x".repeat(1000),
                fields: Default::default(),
                idempotency_key: Some("k-1".into()),
            }),
        );
        assert_eq!(encoded_len(&envelope), encode(&envelope).len());
        assert_eq!(
            encoded_len(&vec![envelope.clone(), envelope.clone()]),
            encode(&vec![envelope.clone(), envelope]).len()
        );
    }
}
