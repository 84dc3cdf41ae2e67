//! Header names of the API (lower case, as HTTP/1.1 compares them case-insensitively).

/// Makes a retried write exactly-once: every retry of one write carries the same value, and the
/// cluster answers a repeat with the first answer instead of applying it again.
pub const REQUEST_ID: &str = "request-id";
/// [`REQUEST_ID`] as errors name it (their `field`).
pub const REQUEST_ID_FIELD: &str = "Request-Id";

/// Deduplicates an enqueue by the producer's own key (kept with the message).
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// The configuration version a `PUT /v1/config` expects (compare-and-set; 412 when stale).
pub const IF_MATCH: &str = "if-match";

/// Test mode only (a node started with `--test-client-clock`): the time, in ms since the Unix
/// epoch, the request's proposals carry instead of the node's wall clock (the state machine still
/// clamps it monotonic), and the time its time-dependent reads use. A node without the flag
/// refuses a request that carries it (400 naming the header).
pub const CLIENT_TIME_MS: &str = "raftlane-client-time-ms";

/// Dual control: the id of an approved approval for the action this request performs, when the
/// configuration lists that action in `approvals_required` (docs/SPEC.md §9.5). Used once.
pub const APPROVAL: &str = "raftlane-approval";
