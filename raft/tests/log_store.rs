//! The RocksDB log store: group commit (one sync per append batch), purge/truncate across
//! reopen, WAL files freed and reused, and durability of acknowledged appends and votes under
//! `kill -9` (a child process is SIGKILLed while appending into a recycled WAL file), and a
//! damaged WAL (truncated or garbled tail) refused at open with the lost range named.

use openraft::storage::{RaftLogStorage, RaftLogStorageExt};
use openraft::{CommittedLeaderId, RaftLogReader};
use raftlane_raft::log_store::{LogStore, OpenError};
use raftlane_raft::types::{Entry, EntryPayload, LogId, Vote};
use raftlane_statemachine::wire::command::AuditAuthor;
use raftlane_statemachine::wire::command::RecordAudit;
use raftlane_statemachine::{Command, Envelope};
use std::io::{BufRead, BufReader};
use std::process::{Command as Proc, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

fn log_id(term: u64, index: u64) -> LogId {
    LogId::new(CommittedLeaderId::new(term, 1), index)
}

fn entry(term: u64, index: u64) -> Entry {
    entry_with(term, index, 100)
}

/// An entry whose command carries `detail` bytes: large ones fill WAL files quickly.
fn entry_with(term: u64, index: u64, detail: usize) -> Entry {
    Entry {
        log_id: log_id(term, index),
        payload: EntryPayload::Normal(Envelope::new(
            index,
            "t",
            Command::RecordAudit(RecordAudit {
                action: format!("e{index}"),
                channel: None,
                org: None,
                detail: Some("x".repeat(detail)),
                author: AuditAuthor::Principal,
            }),
        )),
    }
}

async fn indexes(log: &mut LogStore) -> Vec<u64> {
    log.try_get_log_entries(..)
        .await
        .unwrap()
        .iter()
        .map(|e| e.log_id.index)
        .collect()
}

#[tokio::test]
async fn a_batch_is_one_synced_write() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = LogStore::open(dir.path()).unwrap();
    let stats = log.stats();
    log.blocking_append((1..=100).map(|i| entry(1, i)))
        .await
        .unwrap();
    assert_eq!(stats.appends.load(Ordering::Relaxed), 1);
    assert_eq!(stats.entries.load(Ordering::Relaxed), 100);
    assert_eq!(
        stats.syncs.load(Ordering::Relaxed),
        1,
        "100 entries, one fsync"
    );
    let got = log.try_get_log_entries(10..20).await.unwrap();
    assert_eq!(got, (10..20).map(|i| entry(1, i)).collect::<Vec<_>>());
}

#[tokio::test]
async fn truncate_purge_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut log = LogStore::open(dir.path()).unwrap();
        log.blocking_append((0..=30).map(|i| entry(1, i)))
            .await
            .unwrap();
        log.save_vote(&Vote::new(2, 1)).await.unwrap();

        log.truncate(log_id(1, 21)).await.unwrap();
        assert_eq!(indexes(&mut log).await, (0..=20).collect::<Vec<_>>());
        let st = log.get_log_state().await.unwrap();
        assert_eq!(st.last_log_id, Some(log_id(1, 20)));
        assert_eq!(st.last_purged_log_id, None);

        log.purge(log_id(1, 9)).await.unwrap();
        assert_eq!(indexes(&mut log).await, (10..=20).collect::<Vec<_>>());
        // Purging less than already purged is a no-op.
        log.purge(log_id(1, 3)).await.unwrap();
        // Overwrite after truncation with a new term.
        log.blocking_append((21..=25).map(|i| entry(2, i)))
            .await
            .unwrap();
    }
    let mut log = LogStore::open(dir.path()).unwrap();
    assert_eq!(indexes(&mut log).await, (10..=25).collect::<Vec<_>>());
    let st = log.get_log_state().await.unwrap();
    assert_eq!(st.last_purged_log_id, Some(log_id(1, 9)));
    assert_eq!(st.last_log_id, Some(log_id(2, 25)));
    assert_eq!(log.read_vote().await.unwrap(), Some(Vote::new(2, 1)));
    assert_eq!(
        log.try_get_log_entries(24..=24).await.unwrap(),
        vec![entry(2, 24)]
    );

    // Purge everything: the log state keeps the purged id as its last id.
    log.purge(log_id(2, 25)).await.unwrap();
    let st = log.get_log_state().await.unwrap();
    assert_eq!(st.last_log_id, Some(log_id(2, 25)));
    assert!(indexes(&mut log).await.is_empty());
}

const CHILD_ENV: &str = "RAFTLANE_KILL9_CHILD_DIR";

/// Bytes of detail in the kill -9 test's entries: 3,000 of them fill several 16 MiB WAL files,
/// so the child is killed while writing into a recycled one, whose stale tail recovery must not
/// mistake for acknowledged entries (nor lose those that were).
const KILL9_DETAIL: usize = 24 * 1024;
const KILL9_ACKS: u64 = 3_000;

fn kill9_entry(index: u64) -> Entry {
    entry_with(1, index, KILL9_DETAIL)
}

fn wal_files(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|f| {
            f.as_ref()
                .map(|f| f.file_name().to_string_lossy().ends_with(".log"))
                .unwrap_or(false)
        })
        .count()
}

/// The log's WAL files are freed once the memtable they back is flushed, and then reused, so
/// the disk they hold stays bounded however long the node runs (the two column families are
/// flushed together, so the `meta` family's few small writes cannot pin every WAL until the
/// total reaches RocksDB's `max_total_wal_size`).
#[tokio::test]
async fn wal_files_are_freed_and_reused() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = LogStore::open(dir.path()).unwrap();
    let mut index = 0u64;
    // ~160 MiB of entries in 1 MiB appends, with a vote and a committed index among them.
    for batch in 0..160u64 {
        let first = index + 1;
        index += 16;
        log.blocking_append((first..=index).map(|i| entry_with(1, i, 64 * 1024)))
            .await
            .unwrap();
        log.save_committed(Some(log_id(1, index))).await.unwrap();
        if batch % 40 == 0 {
            log.save_vote(&Vote::new(batch + 1, 1)).await.unwrap();
        }
    }
    let files = wal_files(dir.path());
    assert!(
        files <= 6,
        "{files} WAL files after ~160 MiB of appends (one live, at most four kept for reuse)"
    );
    drop(log);
    let mut log = LogStore::open(dir.path()).unwrap();
    let st = log.get_log_state().await.unwrap();
    assert_eq!(st.last_log_id, Some(log_id(1, index)));
    assert_eq!(log.read_committed().await.unwrap(), Some(log_id(1, index)));
    let got = log.try_get_log_entries(index - 2..=index).await.unwrap();
    assert_eq!(
        got,
        (index - 2..=index)
            .map(|i| entry_with(1, i, 64 * 1024))
            .collect::<Vec<_>>()
    );
}

/// Child mode of `acknowledged_appends_survive_kill_9`: append one entry at a time and report
/// each acknowledgement on stdout, until killed. A no-op in a normal test run.
#[tokio::test]
async fn kill9_child() {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return;
    };
    let mut log = LogStore::open(std::path::Path::new(&dir)).unwrap();
    for i in 1u64.. {
        log.blocking_append([kill9_entry(i)]).await.unwrap();
        if i % 10 == 0 {
            log.save_vote(&Vote::new(i, 1)).await.unwrap();
        }
        println!("acked {i}");
    }
}

#[test]
fn acknowledged_appends_survive_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Proc::new(std::env::current_exe().unwrap())
        .args(["--exact", "kill9_child", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut acked = 0u64;
    let deadline = Instant::now() + Duration::from_secs(120);
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap();
        if let Some(n) = line.strip_prefix("acked ") {
            acked = n.trim().parse().unwrap();
            if acked >= KILL9_ACKS || Instant::now() > deadline {
                break;
            }
        }
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert!(
        acked >= KILL9_ACKS,
        "child acknowledged only {acked} appends (too few to reach a recycled WAL file)"
    );

    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let mut log = LogStore::open(dir.path()).unwrap();
        let entries = log.try_get_log_entries(1..=acked).await.unwrap();
        assert_eq!(entries.len() as u64, acked, "acknowledged entries lost");
        for (i, e) in entries.iter().enumerate() {
            assert_eq!(*e, kill9_entry(i as u64 + 1));
        }
        let vote = log.read_vote().await.unwrap().unwrap();
        assert!(
            vote >= Vote::new(acked / 10 * 10, 1),
            "vote {vote} older than acknowledged"
        );
    });
}

/// The newest WAL file of the log in `dir` (RocksDB numbers them; the highest is the live one).
fn newest_wal(dir: &std::path::Path) -> std::path::PathBuf {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|f| f.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .max()
        .expect("a WAL file")
}

/// Append 1..=300 one entry per append (one WAL record each) with a vote, and close: the
/// entries are in the WAL only (opening again would flush them into a table file).
async fn write_300(dir: &std::path::Path) {
    let mut log = LogStore::open(dir).unwrap();
    log.save_vote(&Vote::new(3, 1)).await.unwrap();
    for i in 1..=300 {
        log.blocking_append([entry_with(3, i, 1000)]).await.unwrap();
    }
}

/// The same log, closed and reopened without damage, opens whole (and again after that).
#[tokio::test]
async fn an_intact_log_reopens_whole() {
    let dir = tempfile::tempdir().unwrap();
    write_300(dir.path()).await;
    for _ in 0..2 {
        let mut log = LogStore::open(dir.path()).expect("an intact log reopens");
        let st = log.get_log_state().await.unwrap();
        assert_eq!(st.last_log_id, Some(log_id(3, 300)));
        assert_eq!(log.read_vote().await.unwrap(), Some(Vote::new(3, 1)));
    }
}

/// The damage `LogStore::open` reports, checked to name a lost range that ends at 300.
fn lost_range(dir: &std::path::Path) -> (u64, u64, String) {
    match LogStore::open(dir) {
        Err(OpenError::Damaged(d)) => {
            assert_eq!(d.last_lost, 300, "{d}");
            assert!(d.first_lost > 1 && d.first_lost <= 300, "{d}");
            assert_eq!(d.lost, 300 - d.first_lost + 1);
            let text = d.to_string();
            assert!(
                text.contains(&format!("indexes {}..=300", d.first_lost)),
                "{text}"
            );
            assert!(text.contains("must not rejoin as a voter"), "{text}");
            (d.first_lost, d.lost, text)
        }
        Err(e) => panic!("expected the damage to be reported, got {e}"),
        Ok(_) => panic!("a log that lost its WAL tail opened as if whole"),
    }
}

/// A WAL cut short (a torn or truncated file): RocksDB's point-in-time recovery would open the
/// log at the last whole record, silently without the fsynced entries after it; the durable
/// mark makes opening fail and name them.
#[tokio::test]
async fn a_truncated_wal_tail_is_refused_naming_the_lost_entries() {
    let dir = tempfile::tempdir().unwrap();
    write_300(dir.path()).await;
    let wal = newest_wal(dir.path());
    let len = std::fs::metadata(&wal).unwrap().len();
    let f = std::fs::OpenOptions::new().write(true).open(&wal).unwrap();
    f.set_len(len / 2).unwrap();
    f.sync_all().unwrap();
    drop(f);
    let (first, lost, _) = lost_range(dir.path());
    assert!(lost >= 100, "lost {lost} from {first}, expected about half");
    // It stays refused: nothing was rewritten by the failed open.
    lost_range(dir.path());
}

/// A garbled WAL record in the tail: recovery stops there, and the rest is reported lost.
#[tokio::test]
async fn a_garbled_wal_tail_is_refused_naming_the_lost_entries() {
    use std::io::{Seek, SeekFrom, Write};
    let dir = tempfile::tempdir().unwrap();
    write_300(dir.path()).await;
    let wal = newest_wal(dir.path());
    let len = std::fs::metadata(&wal).unwrap().len();
    let mut f = std::fs::OpenOptions::new().write(true).open(&wal).unwrap();
    f.seek(SeekFrom::Start(len * 3 / 4)).unwrap();
    f.write_all(&[0xA5; 512]).unwrap();
    f.sync_all().unwrap();
    drop(f);
    let (_, lost, _) = lost_range(dir.path());
    assert!(lost >= 10, "lost {lost}");
}

/// Truncations lower the mark before deleting, and a vote raises it: neither an intact log
/// whose tail Raft truncated nor a newer vote reads as damage.
#[tokio::test]
async fn a_truncated_log_and_a_new_vote_reopen_as_whole() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut log = LogStore::open(dir.path()).unwrap();
        log.blocking_append((0..=30).map(|i| entry(1, i)))
            .await
            .unwrap();
        log.truncate(log_id(1, 11)).await.unwrap();
        log.save_vote(&Vote::new(4, 2)).await.unwrap();
    }
    let mut log = LogStore::open(dir.path()).expect("a truncated log is not damaged");
    let st = log.get_log_state().await.unwrap();
    assert_eq!(st.last_log_id, Some(log_id(1, 10)));
    assert_eq!(log.read_vote().await.unwrap(), Some(Vote::new(4, 2)));
    // Truncating everything, then closing, is whole too.
    log.truncate(log_id(1, 0)).await.unwrap();
    drop(log);
    let mut log = LogStore::open(dir.path()).expect("an emptied log is not damaged");
    assert!(indexes(&mut log).await.is_empty());
}

/// A leader's committed vote is read back uncommitted when its node starts again, so openraft
/// does not restore it as the leader of that term without an election: its followers may hold
/// entries of that term it never wrote (eager replication), which it would otherwise write over
/// with others under the same log ids. The vote keeps its term and candidate.
#[tokio::test]
async fn a_committed_vote_is_read_back_uncommitted_at_start() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut log = LogStore::open(dir.path()).unwrap();
        log.save_vote(&Vote::new_committed(5, 1)).await.unwrap();
    }
    let mut log = LogStore::open(dir.path()).unwrap();
    let vote = log.read_vote().await.unwrap().expect("a vote");
    assert!(!vote.is_committed(), "{vote:?}");
    assert_eq!(vote, Vote::new(5, 1));
    // An uncommitted vote reads back as it was.
    log.save_vote(&Vote::new(6, 2)).await.unwrap();
    assert_eq!(log.read_vote().await.unwrap(), Some(Vote::new(6, 2)));
}
