//! `raftlane node --rejoin`'s disk work: wipe this node's copy of the cluster (state, raft log,
//! snapshots) so that it catches up from the leader, keeping only its vote.
//!
//! Why the vote is kept: a node that forgot whom it voted for in the current term could vote a
//! second time in it, and two leaders could be elected in one term. The durable mark
//! ([`crate::durable_mark`]) holds the last vote the log fsynced, even when the log itself is
//! the damaged part, so the vote is read from there and written into the new, empty log.
//!
//! Whether wiping is safe (the others hold every acknowledged write without this node) is the
//! caller's to decide first: `raftlane node` asks the other members (node/src/rejoin.rs).
//!
//! Why the node abstains from votes until it has caught up ([`Abstain`]): a wiped voter's log is
//! empty, so it would grant its vote to any candidate, also to one that lacks an entry only this
//! node and one other had acknowledged; with its vote such a candidate could win and the entry
//! would be lost. Until its state reaches the commit index its first leader named, it answers
//! vote requests `503` (as if it were down), which the cluster tolerates like a missing node.

use crate::durable_mark::DurableMark;
use crate::log_store::{LogStore, OpenError};
use crate::sm_adapter::SmPaths;
use crate::types::Vote;
use openraft::storage::RaftLogStorage;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// `<data>/rejoining`: written (fsynced) before a rejoin removes anything, removed once the node
/// has caught up; while it exists the node does not vote ([`Abstain`]), across restarts too.
pub const REJOINING_MARKER: &str = "rejoining";

/// A rejoining node's abstention from votes (see the module documentation).
#[derive(Debug)]
pub struct Abstain {
    marker: PathBuf,
    active: AtomicBool,
    /// The commit index the first leader's append named (`u64::MAX`: none seen yet).
    target: AtomicU64,
}

impl Abstain {
    /// Abstaining when `data_dir` holds the rejoin marker.
    pub fn load(data_dir: &Path) -> Self {
        let marker = data_dir.join(REJOINING_MARKER);
        let active = marker.exists();
        if active {
            tracing::warn!(
                "rejoining: this node does not vote until it has caught up with the leader"
            );
        }
        Self {
            marker,
            active: AtomicBool::new(active),
            target: AtomicU64::new(u64::MAX),
        }
    }

    /// An append from a leader arrived naming `leader_commit`: the first one that names one
    /// sets the index this node must reach before it votes. One naming none (an eager batch,
    /// `crate::eager_replication`, or a leader with nothing committed yet) leaves it unset: the
    /// node keeps abstaining until the leader's next append, at most a heartbeat later.
    pub fn note_append(&self, leader_commit: Option<u64>) {
        if let (true, Some(commit)) = (self.active.load(Ordering::Relaxed), leader_commit) {
            let _ = self.target.compare_exchange(
                u64::MAX,
                commit,
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
        }
    }

    /// Whether this node may answer a vote request, having applied `applied` (its last
    /// applied index). Ends the abstention (and removes the marker) once it has caught up.
    pub fn may_vote(&self, applied: Option<u64>) -> bool {
        if !self.active.load(Ordering::Relaxed) {
            return true;
        }
        let target = self.target.load(Ordering::Relaxed);
        if target == u64::MAX || applied.unwrap_or(0) < target {
            return false;
        }
        match std::fs::remove_file(&self.marker) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                tracing::warn!(error = %e, "cannot remove the rejoin marker; still abstaining");
                return false;
            }
        }
        let _ = crate::util::sync_dir(self.marker.parent().unwrap_or(Path::new(".")));
        self.active.store(false, Ordering::Relaxed);
        tracing::info!(
            applied,
            target,
            "rejoined: caught up with the leader; voting again"
        );
        true
    }
}

/// Wiping failed.
#[derive(Debug, thiserror::Error)]
pub enum WipeError {
    #[error("cannot remove {path}: {source}")]
    Remove {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read the log's durable mark: {0}")]
    Mark(std::io::Error),
    #[error("cannot create the new raft log: {0}")]
    Log(#[from] OpenError),
    #[error("cannot write the kept vote into the new raft log: {0}")]
    Vote(String),
}

/// What [`wipe_keeping_vote`] removed and kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wiped {
    pub removed: Vec<PathBuf>,
    pub vote: Option<Vote>,
}

/// Remove `<data>/log`, `<data>/sm`, `<data>/snapshots` and an interrupted install's marker,
/// then create an empty raft log holding the vote the old one's durable mark recorded.
/// Everything else in `data_dir` (the admin token, certificates) is left alone.
pub async fn wipe_keeping_vote(data_dir: &Path) -> Result<Wiped, WipeError> {
    let log_dir = data_dir.join("log");
    let vote = if log_dir.exists() {
        DurableMark::load(&log_dir)
            .map_err(WipeError::Mark)?
            .1
            .and_then(|m| m.vote)
    } else {
        None
    };
    // The marker first: a node that crashes half-way through still abstains when it restarts.
    write_marker(data_dir).map_err(|source| WipeError::Remove {
        path: data_dir.join(REJOINING_MARKER),
        source,
    })?;
    let sm = SmPaths::new(data_dir);
    let mut removed = Vec::new();
    for path in [
        log_dir.clone(),
        sm.sm_dir,
        sm.snapshot_dir,
        sm.install_marker,
    ] {
        let gone = if path.is_dir() {
            std::fs::remove_dir_all(&path)
        } else if path.exists() {
            std::fs::remove_file(&path)
        } else {
            continue;
        };
        gone.map_err(|source| WipeError::Remove {
            path: path.clone(),
            source,
        })?;
        removed.push(path);
    }
    if let Some(vote) = vote {
        let mut log = tokio::task::spawn_blocking(move || LogStore::open(&log_dir))
            .await
            .map_err(|e| WipeError::Vote(e.to_string()))??;
        log.save_vote(&vote)
            .await
            .map_err(|e| WipeError::Vote(e.to_string()))?;
    }
    Ok(Wiped { removed, vote })
}

/// Write `<data>/rejoining`, fsynced with its directory.
fn write_marker(data_dir: &Path) -> std::io::Result<()> {
    let path = data_dir.join(REJOINING_MARKER);
    let file = std::fs::File::create(&path)?;
    file.sync_all()?;
    crate::util::sync_dir(data_dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rejoining_node_votes_only_once_caught_up_with_its_first_leader() {
        let dir = std::env::temp_dir().join(format!("raftlane-abstain-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert!(Abstain::load(&dir).may_vote(None), "no marker: votes");
        write_marker(&dir).unwrap();
        let a = Abstain::load(&dir);
        assert!(!a.may_vote(Some(50)), "no leader heard yet");
        a.note_append(None); // an append naming no commit index (an eager batch) sets nothing
        assert!(!a.may_vote(Some(50)), "no commit index heard yet");
        a.note_append(Some(120));
        a.note_append(Some(500)); // later appends do not move the target
        assert!(!a.may_vote(Some(119)));
        assert!(dir.join(REJOINING_MARKER).exists());
        assert!(a.may_vote(Some(120)));
        assert!(!dir.join(REJOINING_MARKER).exists(), "the marker is gone");
        assert!(Abstain::load(&dir).may_vote(None));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
