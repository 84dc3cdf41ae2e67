//! The state-machine adapter beyond openraft's suite: batched apply with responses, snapshot
//! build / transfer / install, refusal of a damaged snapshot, and the startup recoveries
//! (interrupted install, state lost behind its own snapshot).

use openraft::storage::RaftStateMachine;
use openraft::{CommittedLeaderId, Membership, RaftSnapshotBuilder};
use raftlane_raft::sm_adapter::SmAdapter;
use raftlane_raft::snapshot::SnapshotReader;
use raftlane_raft::types::{Entry, EntryPayload, LogId, StoredMembership};
use raftlane_statemachine::wire::command::AuditAuthor;
use raftlane_statemachine::wire::command::RecordAudit;
use raftlane_statemachine::{Command, Envelope, Outcome};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::Ordering;
use tokio::io::AsyncWriteExt;

fn log_id(index: u64) -> LogId {
    LogId::new(CommittedLeaderId::new(1, 1), index)
}

fn membership() -> Membership<u64, openraft::BasicNode> {
    let nodes: BTreeMap<u64, openraft::BasicNode> = (1..=3)
        .map(|i| (i, openraft::BasicNode::new(format!("127.0.0.1:{i}"))))
        .collect();
    Membership::new(vec![BTreeSet::from([1, 2, 3])], nodes)
}

/// Index 1: membership; 2..=n+1: audit commands.
fn entries(n: u64) -> Vec<Entry> {
    let mut out = vec![Entry {
        log_id: log_id(1),
        payload: EntryPayload::Membership(membership()),
    }];
    for i in 0..n {
        out.push(Entry {
            log_id: log_id(i + 2),
            payload: EntryPayload::Normal(Envelope::new(
                1000 + i,
                "t",
                Command::RecordAudit(RecordAudit {
                    action: format!("a{i}"),
                    channel: None,
                    org: None,
                    detail: None,
                    author: AuditAuthor::Principal,
                }),
            )),
        });
    }
    out
}

async fn filled(dir: &Path, n: u64) -> SmAdapter {
    let mut sm = SmAdapter::open(dir).unwrap();
    let responses = sm.apply(entries(n)).await.unwrap();
    assert_eq!(responses.len() as u64, n + 1);
    assert_eq!(responses[0], Ok(Outcome::Done));
    for (i, r) in responses[1..].iter().enumerate() {
        assert!(
            matches!(r, Ok(Outcome::Audit { seq, .. }) if *seq == i as u64),
            "{r:?}"
        );
    }
    sm
}

#[tokio::test]
async fn apply_records_last_applied_and_membership_atomically() {
    let dir = tempfile::tempdir().unwrap();
    let mut sm = filled(dir.path(), 2500).await; // more than one apply chunk
    let (last, mem) = sm.applied_state().await.unwrap();
    assert_eq!(last, Some(log_id(2501)));
    assert_eq!(mem, StoredMembership::new(Some(log_id(1)), membership()));
    let stats = sm.handle().stats();
    assert!(stats.apply_batches.load(Ordering::Relaxed) >= 3);
    drop(sm);
    // Reopened: the same.
    let mut sm = SmAdapter::open(dir.path()).unwrap();
    assert_eq!(sm.applied_state().await.unwrap().0, Some(log_id(2501)));
    // Re-delivered entries (replay after a crash) are skipped, not applied twice.
    let digest = sm.handle().digest().await.unwrap();
    sm.apply(entries(10)).await.unwrap();
    assert_eq!(sm.handle().digest().await.unwrap(), digest);
}

#[tokio::test]
async fn snapshot_transfer_and_install() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let mut leader = filled(a.path(), 300).await;
    let snap = leader
        .get_snapshot_builder()
        .await
        .build_snapshot()
        .await
        .unwrap();
    assert_eq!(snap.meta.last_log_id, Some(log_id(301)));
    let current = leader.get_current_snapshot().await.unwrap().unwrap();
    assert_eq!(current.meta, snap.meta);

    // The file is a valid, self-describing snapshot.
    let files: Vec<_> = std::fs::read_dir(a.path().join("snapshots"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let mut reader = SnapshotReader::open(&files[0]).unwrap();
    assert_eq!(reader.meta(), &snap.meta);
    while reader.next_record().unwrap().is_some() {}
    assert!(reader.records() > 300);

    // Follower: receive into the file openraft would fill chunk by chunk, then install.
    let mut follower = filled(b.path(), 5).await; // some other state, replaced entirely
    let mut recv = follower.begin_receiving_snapshot().await.unwrap();
    let bytes = std::fs::read(&files[0]).unwrap();
    for chunk in bytes.chunks(1000) {
        recv.write_all(chunk).await.unwrap();
    }
    recv.shutdown().await.unwrap();
    follower.install_snapshot(&snap.meta, recv).await.unwrap();
    assert_eq!(
        follower.applied_state().await.unwrap(),
        (snap.meta.last_log_id, snap.meta.last_membership.clone())
    );
    assert_eq!(
        follower.handle().digest().await.unwrap(),
        leader.handle().digest().await.unwrap()
    );
    assert_eq!(
        follower.get_current_snapshot().await.unwrap().unwrap().meta,
        snap.meta
    );
    assert_eq!(
        follower
            .handle()
            .stats()
            .snapshots_installed
            .load(Ordering::Relaxed),
        1
    );
    assert!(!b.path().join("sm.installing").exists());

    // A damaged transfer is refused and leaves the state alone.
    let before = follower.handle().digest().await.unwrap();
    let mut bad = bytes.clone();
    let mid = bad.len() / 2;
    bad[mid] ^= 1;
    let mut recv = follower.begin_receiving_snapshot().await.unwrap();
    recv.write_all(&bad).await.unwrap();
    recv.shutdown().await.unwrap();
    let mut meta = snap.meta.clone();
    meta.snapshot_id = "other".into();
    assert!(follower.install_snapshot(&meta, recv).await.is_err());
    assert_eq!(follower.handle().digest().await.unwrap(), before);
    // No temporary files are left behind.
    let leftovers: Vec<_> = std::fs::read_dir(b.path().join("snapshots"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with(".snap"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[tokio::test]
async fn startup_restores_a_state_lost_behind_its_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let mut sm = filled(dir.path(), 100).await;
    sm.get_snapshot_builder()
        .await
        .build_snapshot()
        .await
        .unwrap();
    let digest = sm.handle().digest().await.unwrap();
    drop(sm);

    // The state's database is gone (e.g. unsynced writes lost); the snapshot file is not.
    std::fs::remove_dir_all(dir.path().join("sm")).unwrap();
    let mut sm = SmAdapter::open(dir.path()).unwrap();
    assert_eq!(sm.applied_state().await.unwrap().0, Some(log_id(101)));
    assert_eq!(sm.handle().digest().await.unwrap(), digest);
}

#[tokio::test]
async fn startup_finishes_an_interrupted_install() {
    let dir = tempfile::tempdir().unwrap();
    let mut sm = filled(dir.path(), 100).await;
    sm.get_snapshot_builder()
        .await
        .build_snapshot()
        .await
        .unwrap();
    let digest = sm.handle().digest().await.unwrap();
    // More entries after the snapshot: the state is ahead of it.
    let more: Vec<Entry> = entries(120).into_iter().skip(101).collect();
    sm.apply(more).await.unwrap();
    assert_ne!(sm.handle().digest().await.unwrap(), digest);
    drop(sm);

    // A crash in the middle of installing that snapshot: marker present, state half-replaced.
    let snap_name = std::fs::read_dir(dir.path().join("snapshots"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .find(|n| n.ends_with(".snap"))
        .unwrap();
    std::fs::write(dir.path().join("sm.installing"), &snap_name).unwrap();
    {
        use raftlane_statemachine::storage::Store;
        let mut store =
            raftlane_statemachine::rocks::RocksStore::open(&dir.path().join("sm")).unwrap();
        store.clear().unwrap();
    }
    let mut sm = SmAdapter::open(dir.path()).unwrap();
    assert!(!dir.path().join("sm.installing").exists());
    assert_eq!(sm.applied_state().await.unwrap().0, Some(log_id(101)));
    assert_eq!(sm.handle().digest().await.unwrap(), digest);
}
