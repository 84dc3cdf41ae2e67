//! The API's clock, one place for every handler and the write path.

/// The proposer's wall clock (the state machine clamps it monotonic); see
/// [`raftlane_raft::now_ms`] for the chaos suite's clock offset.
pub fn now_ms() -> u64 {
    raftlane_raft::now_ms()
}
