//! The openraft type configuration of raftlane and short aliases for the types built from it.
//!
//! Log entries carry the state machine's [`Envelope`] as application data and answer with its
//! [`Response`], so a committed entry is exactly one command and its result: the log index is the
//! command's index, which the state machine uses for fences and ids.
//!
//! Snapshots are files: `SnapshotData = tokio::fs::File`, so openraft's chunked transfer reads
//! from and writes to disk, and no snapshot is ever held whole in memory.

use raftlane_statemachine::{Envelope, Response};

openraft::declare_raft_types!(
    /// raftlane's Raft types: u64 node ids, nodes addressed by `host:port`, file snapshots.
    pub TypeConfig:
        D = Envelope,
        R = Response,
        NodeId = u64,
        Node = openraft::BasicNode,
        Entry = openraft::Entry<TypeConfig>,
        SnapshotData = tokio::fs::File,
        AsyncRuntime = openraft::TokioRuntime,
);

/// A node id.
pub type NodeId = u64;
/// A node's address book entry (`addr` = `host:port` of its Raft HTTP endpoint).
pub type Node = openraft::BasicNode;
/// The running Raft instance.
pub type Raft = openraft::Raft<TypeConfig>;
pub type LogId = openraft::LogId<NodeId>;
pub type Vote = openraft::Vote<NodeId>;
pub type Entry = openraft::Entry<TypeConfig>;
pub type EntryPayload = openraft::EntryPayload<TypeConfig>;
pub type StoredMembership = openraft::StoredMembership<NodeId, Node>;
pub type Membership = openraft::Membership<NodeId, Node>;
pub type SnapshotMeta = openraft::SnapshotMeta<NodeId, Node>;
pub type Snapshot = openraft::Snapshot<TypeConfig>;
pub type StorageError = openraft::StorageError<NodeId>;
pub type RaftMetrics = openraft::RaftMetrics<NodeId, Node>;
pub type LogState = openraft::LogState<TypeConfig>;

/// The address member `id` has in the membership `m` names (`None`: not a member).
pub(crate) fn member_addr(m: &RaftMetrics, id: NodeId) -> Option<String> {
    m.membership_config
        .membership()
        .get_node(&id)
        .map(|n| n.addr.clone())
}
