//! The one place raftlane's tests, the bench and the demo start in-process clusters.
//!
//! # Which cluster to start
//!
//! Three layers, each a module; pick the lowest one that holds what the test is about:
//!
//! | module | starts | used by |
//! |---|---|---|
//! | [`raft`] | [`raft::RaftCluster`]: Raft replicas only (`RaftNode`: log, state machine, node-to-node HTTP transport), driven through `client_write` and metrics | `raft/tests/` |
//! | [`api`] (feature `api`) | [`api::LocalApi`] / [`api::serve`]: the real router over loopback HTTP on a `LocalBackend` (one in-memory replica, no Raft) or a stand-in `Backend` | `api/tests/` |
//! | [`node`] (feature `node`, default) | [`node::NodeCluster`]: full nodes, what `raftlane node` runs, with the API on 127.0.0.1 ports; stop and restart a node, tokens, a follower client, raw HTTP | `tests/` (`raftlane-tests`), `node/bench`, `node/demo` |
//!
//! and beside them [`http`] (raw requests and the JSON error-shape assertions) and [`wait`]
//! (polled waits with deadlines, port binding, test logging).
//!
//! ```no_run
//! # async fn demo() -> anyhow::Result<()> {
//! // A three-node cluster of full nodes, writes through a follower:
//! let cluster = raftlane_testkit::node::NodeCluster::start().await?;
//! let c = cluster.follower_client().await?;
//! let m = c.enqueue("lab", "MSH|1", None).await?;
//! assert!(!m.duplicate);
//! cluster.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! Options (one node, fixed ports, a kept data directory, tokens, body limit, tuning) are
//! [`node::ClusterOptions`]; every module's documentation shows its cluster started in a test.
//! Tests run in parallel: every cluster takes free ports the kernel picks and its own temporary
//! directory, and nothing waits a fixed time (see [`wait`]).
//!
//! # Using the kit from raft and api
//!
//! The kit depends on `raftlane-raft` (and, with its features, on `raftlane-api` and
//! `raftlane-node`), and those crates' tests depend on the kit. That cycle is sound for
//! *integration* tests (files under a crate's `tests/`): Cargo builds the crate's library once
//! and links both the test and the kit against it, so `RaftNode` in a raft test and in the kit
//! are one type. It is not for *unit* tests (`#[cfg(test)]` inside `src/`): there the crate is
//! compiled a second time as the test, the kit still links the first copy, and the types do not
//! match ("expected `RaftNode`, found `RaftNode`"). So: a crate's own unit tests never use the
//! kit; whatever needs a cluster is an integration test. The features keep each crate's tests
//! from compiling the layers above it: raft's tests take `default-features = false` (no API, no
//! node), api's tests `features = ["api"]`.
//!
//! # What is not here, and why
//!
//! - **`raftlane node` processes.** The chaos suite (`chaos/src/local.rs`, `process.rs`) runs real
//!   node processes on purpose: it SIGKILLs and SIGSTOPs them, skews one node's clock
//!   (`RAFTLANE_CLOCK_OFFSET_MS` is read once per process, so in-process nodes cannot differ),
//!   and routes their Raft traffic through its fault proxy (each node advertises the proxy's
//!   address). That is fault injection, not a fixture, and `raftlane-chaos` must build without
//!   RocksDB (it depends on the client only, since 562532d), which a dependency on this kit
//!   would undo. It keeps its process management.
//! - **`raftlane dev`.** The production binary's local cluster (`node/src/dev.rs`) cannot use
//!   this kit, which depends on `raftlane-node`. It shares with the kit what must agree: one node
//!   is started by `raftlane_node::server::start_on` in both, and [`node::ClusterOptions::dev`]
//!   takes the dev cluster's secrets and body limit from `raftlane_node::dev`, so the demo and
//!   the bench start the same cluster as `raftlane dev` on the same data directory.
//! - **The demo's end-to-end test** (`node/demo/tests/demo.rs`) runs the `raftlane-demo` binary
//!   as a user does; the cluster it sees is this kit's, started by the binary.

pub mod http;
pub mod raft;
pub mod wait;

#[cfg(feature = "api")]
pub mod api;

#[cfg(feature = "node")]
pub mod node;
