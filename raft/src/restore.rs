//! Laying down one node of a new cluster from a backup (`raftlane restore`), as
//! `etcdutl snapshot restore` does for etcd.
//!
//! A backup is a snapshot file ([`crate::snapshot`]: header, records, SHA-256 trailer) streamed
//! out of a running cluster. Restoring it into an empty data directory writes:
//!
//! - the snapshot again, with the **new** cluster's membership (`--peers`) in place of the old
//!   one, as this node's current snapshot. Its last log id stays the backup's: the state is
//!   exactly the entries up to it, and nothing after;
//! - the state (`sm/`), installed from that snapshot when the state store opens (a state behind
//!   its own snapshot is restored from it, [`crate::sm_adapter`]);
//! - an empty raft log holding a vote in the backup's last term (not committed), so the first
//!   election of the new cluster is in a later term than any entry it holds and new entries
//!   follow the old ones in term order.
//!
//! At start openraft finds the state ahead of the empty log and treats the log as purged up to
//! it: a member restored from the same file agrees at once, and a member started empty is sent
//! the snapshot as any new member is. So no node is started with `--bootstrap`: the membership
//! is already in the state.
//!
//! The file is verified end to end before anything is written, and the data directory must
//! hold no log, state or snapshot: a restore never overwrites a node. A restore that fails
//! part-way removes what it wrote, so no half node is left to start.

use crate::log_store::{LogStore, OpenError};
use crate::sm_adapter::{snapshot_file_name, SmAdapter, SmError, SmPaths};
use crate::snapshot::{self, SnapshotFileError, SnapshotReader, SnapshotWriter};
use crate::types::{LogId, Membership, Node, NodeId, SnapshotMeta, StoredMembership, Vote};
use crate::util::sync_dir;
use openraft::storage::RaftLogStorage;
use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::path::{Path, PathBuf};

/// A restore did not happen. Nothing of it stays in the data directory: what a failed restore
/// wrote is removed again.
#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    #[error("cannot read the backup {}: {source}", path.display())]
    Open {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the backup {} cannot be used: {source}; nothing was written", path.display())]
    Damaged {
        path: PathBuf,
        #[source]
        source: SnapshotFileError,
    },
    #[error("the backup {} holds no applied entry: it is not a backup of a running cluster", path.display())]
    Empty { path: PathBuf },
    #[error("--peers must name this node ({id}) among the new cluster's voters")]
    NotInPeers { id: NodeId },
    #[error(
        "{} already holds a node's data ({what}): a restore only lays down a new node; give an \
         empty or missing data directory",
        path.display()
    )]
    NotEmpty { path: PathBuf, what: String },
    #[error("cannot write the restored snapshot under {}: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: SnapshotFileError,
    },
    #[error("cannot install the restored state: {0}")]
    State(#[from] SmError),
    #[error("cannot create the new raft log: {0}")]
    Log(#[from] OpenError),
    #[error("cannot write the new raft log's vote: {0}")]
    Vote(String),
}

/// What a restore laid down.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restored {
    /// The last entry the restored state reflects (the backup's).
    pub last_log_id: LogId,
    /// Records of state copied.
    pub records: u64,
    /// The restored state's digest (`GET /v1/cluster/digest` answers the same once it serves).
    pub digest: [u8; 32],
    /// The new cluster's voters.
    pub voters: BTreeSet<NodeId>,
}

/// The parts of a data directory that make it a node's: any of them refuses a restore.
fn occupied(data_dir: &Path) -> Option<String> {
    let sm = SmPaths::new(data_dir);
    let parts = [
        data_dir.join("log"),
        sm.sm_dir,
        sm.snapshot_dir,
        sm.install_marker,
        data_dir.join(crate::rejoin::REJOINING_MARKER),
    ];
    let found: Vec<String> = parts
        .iter()
        .filter(|p| p.exists())
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    (!found.is_empty()).then(|| found.join(", "))
}

/// Check `from` end to end and answer its metadata and record count (what `raftlane ctl
/// snapshot save` also runs on a file it has written).
pub fn verify_backup(from: &Path) -> Result<(SnapshotMeta, u64), RestoreError> {
    let file = File::open(from).map_err(|source| RestoreError::Open {
        path: from.to_path_buf(),
        source,
    })?;
    snapshot::verify_file(file).map_err(|source| RestoreError::Damaged {
        path: from.to_path_buf(),
        source,
    })
}

/// Restore the backup `from` into `data_dir` as node `id` of a new cluster whose voters and
/// addresses are `peers` (see the module doc).
pub async fn restore(
    from: &Path,
    data_dir: &Path,
    id: NodeId,
    peers: &BTreeMap<NodeId, String>,
) -> Result<Restored, RestoreError> {
    if !peers.contains_key(&id) {
        return Err(RestoreError::NotInPeers { id });
    }
    let (old, records) = verify_backup(from)?;
    let last_log_id = old.last_log_id.ok_or_else(|| RestoreError::Empty {
        path: from.to_path_buf(),
    })?;
    if let Some(what) = occupied(data_dir) {
        return Err(RestoreError::NotEmpty {
            path: data_dir.to_path_buf(),
            what,
        });
    }
    let voters: BTreeSet<NodeId> = peers.keys().copied().collect();
    let nodes: BTreeMap<NodeId, Node> = peers
        .iter()
        .map(|(id, addr)| (*id, Node { addr: addr.clone() }))
        .collect();
    let meta = SnapshotMeta {
        last_log_id: Some(last_log_id),
        last_membership: StoredMembership::new(
            Some(last_log_id),
            Membership::new(vec![voters.clone()], nodes),
        ),
        snapshot_id: format!("restored-{}-{}", last_log_id.leader_id, last_log_id.index),
    };

    match lay_down(from, data_dir, id, &meta, last_log_id).await {
        Ok(digest) => Ok(Restored {
            last_log_id,
            records,
            digest,
            voters,
        }),
        Err(e) => {
            // The directory held none of these before: take back what was written, so that a
            // failed restore leaves no half node that could be started.
            let sm = SmPaths::new(data_dir);
            for dir in [data_dir.join("log"), sm.sm_dir, sm.snapshot_dir] {
                let _ = std::fs::remove_dir_all(dir);
            }
            let _ = std::fs::remove_file(sm.install_marker);
            Err(e)
        }
    }
}

/// Write the snapshot, the state and the log with its vote; the restored state's digest.
async fn lay_down(
    from: &Path,
    data_dir: &Path,
    id: NodeId,
    meta: &SnapshotMeta,
    last_log_id: LogId,
) -> Result<[u8; 32], RestoreError> {
    let snapshot_dir = SmPaths::new(data_dir).snapshot_dir;
    let written = {
        let (from, dir, meta) = (from.to_path_buf(), snapshot_dir.clone(), meta.clone());
        tokio::task::spawn_blocking(move || rewrite(&from, &dir, &meta))
            .await
            .map_err(|e| SmError::Task(e.to_string()))?
    };
    written.map_err(|source| RestoreError::Write {
        path: snapshot_dir,
        source,
    })?;

    // Opening the state installs the snapshot: the empty state is behind it.
    let digest = {
        let dir = data_dir.to_path_buf();
        let sm = tokio::task::spawn_blocking(move || SmAdapter::open(&dir))
            .await
            .map_err(|e| SmError::Task(e.to_string()))??;
        let (applied, digest) = sm.handle().digest().await?;
        if applied != Some(last_log_id) {
            return Err(RestoreError::State(SmError::Mismatch(format!(
                "the restored state reflects {applied:?}, the backup {last_log_id}"
            ))));
        }
        digest
    };

    let log_dir = data_dir.join("log");
    let mut log = tokio::task::spawn_blocking(move || LogStore::open(&log_dir))
        .await
        .map_err(|e| RestoreError::Vote(e.to_string()))??;
    log.save_vote(&Vote::new(last_log_id.leader_id.term, id))
        .await
        .map_err(|e| RestoreError::Vote(e.to_string()))?;
    Ok(digest)
}

/// Copy the records of `from` into a new snapshot file under `dir` described by `meta`.
fn rewrite(from: &Path, dir: &Path, meta: &SnapshotMeta) -> Result<(), SnapshotFileError> {
    std::fs::create_dir_all(dir)?;
    let unique = crate::util::now_ms();
    let tmp = dir.join(format!("restore-{unique:016x}.tmp"));
    let copied = (|| {
        let mut reader = SnapshotReader::open(from)?;
        let mut writer = SnapshotWriter::create(&tmp, meta)?;
        while let Some((table, key, value)) = reader.next_record()? {
            writer.push(table, &key, &value)?;
        }
        writer.finish()?;
        std::fs::rename(&tmp, dir.join(snapshot_file_name(meta, unique)))?;
        sync_dir(dir)?;
        Ok(())
    })();
    if copied.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    copied
}
