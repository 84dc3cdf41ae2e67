//! Header names of the API (lower case, as HTTP/1.1 compares them case-insensitively).

/// Makes a retried write exactly-once: every retry of one write carries the same value, and the
/// cluster answers a repeat with the first answer instead of applying it again.
pub const REQUEST_ID: &str = "request-id";

/// Deduplicates an enqueue by the producer's own key (kept with the message).
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// The configuration version a `PUT /v1/config` expects (compare-and-set; 412 when stale).
pub const IF_MATCH: &str = "if-match";
