//! The durable Raft log: its own RocksDB instance in `<data_dir>/log`.
//!
//! Why a separate database from the state machine's (`<data_dir>/sm`): the log is written with
//! an fsync per append and per vote, the state machine never is (its writes are replayed from the
//! log after a crash), and RocksDB syncs a whole WAL at a time. Sharing one WAL would make every
//! state-machine write pay for the log's fsyncs and vice versa.
//!
//! Durability rules (Raft safety depends on them):
//! - `save_vote` returns only after the vote is fsynced: a node that forgot its vote after a
//!   crash could vote twice in one term.
//! - `append` writes every entry openraft hands it in **one** RocksDB write batch with **one**
//!   fsync, and only then calls the flush callback: entries acknowledged to a leader must survive
//!   `kill -9` and power loss, and one sync per batch is what makes batched replication (group
//!   commit) cheap on followers: an AppendEntries request carries everything the leader has
//!   accumulated, up to `max_payload_entries`. (On the leader, openraft 0.9 appends each
//!   `client_write` as its own one-entry batch and waits for its flush before the next, so the
//!   leader pays one fsync per write; docs/DEVELOPING.md, "Design notes".)
//! - `truncate` and `purge` are single atomic batches; `purge` records `last_purged` in the same
//!   batch as the deletion, so the log state is never inconsistent after a crash.
//!
//! - Opening checks the log against its durable mark ([`crate::durable_mark`], a file fsynced
//!   apart from RocksDB): a log that recovered shorter than it was (a damaged WAL tail, which
//!   point-in-time recovery drops silently) is refused with [`OpenError::Damaged`], logged at
//!   ERROR with the lost range, so the node does not rejoin as a voter without entries it may
//!   have acknowledged.
//!
//! Layout: column family `logs` maps the big-endian index to the bincode entry (big-endian keys
//! sort numerically); column family `meta` holds `vote`, `last_purged` and `committed` as JSON;
//! the file `RAFTLANE-DURABLE-MARK.json` beside RocksDB's own files is the durable mark.

use crate::durable_mark::{DurableMark, LogDamage, Mark};
use crate::eager_replication::EagerReplication;
use crate::types::{Entry, LogId, LogState, StorageError, TypeConfig, Vote};
use openraft::storage::{LogFlushed, RaftLogStorage};
use openraft::{ErrorSubject, ErrorVerb, OptionalSend, RaftLogId, RaftLogReader, StorageIOError};
use raftlane_statemachine::codec;
use rocksdb::{
    ColumnFamilyDescriptor, Direction, IteratorMode, Options, WriteBatch, WriteOptions, DB,
};
use std::fmt::Debug;
use std::ops::{Bound, RangeBounds};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

const CF_LOGS: &str = "logs";
const CF_META: &str = "meta";

/// The vote a node starts with: its stored vote, uncommitted.
///
/// Why: openraft 0.9 restores a node whose stored vote is its own committed leadership as the
/// leader of that term at once, without an election (`Engine::startup`). With eager replication
/// ([`crate::eager_replication`]) its followers may hold entries of that term which it never
/// wrote itself: it offered a batch and died before its own write. Back as leader of the same
/// term it would write other entries under the same log ids, and a follower holding the old
/// ones keeps them (same log id: nothing to replace) and applies them: two states from one log.
/// Uncommitted, the vote still binds the node to its term (it votes for no one else in it), so
/// nothing a vote guarantees is lost; leadership is won back only by an election in a new term,
/// where voters refuse a log shorter than theirs, and a new leader's entries replace a stale
/// term's. A follower's committed vote read back uncommitted changes nothing: its leader's
/// appends carry the committed vote, which supersedes it.
pub(crate) fn as_restarted(vote: Vote) -> Vote {
    Vote {
        committed: false,
        ..vote
    }
}
const KEY_VOTE: &[u8] = b"vote";
const KEY_LAST_PURGED: &[u8] = b"last_purged";
const KEY_COMMITTED: &[u8] = b"committed";
/// Obsolete WAL files kept for reuse (see [`LogStore::open`]); each is at most one memtable's
/// worth of log (16 MiB), so this is the disk they hold.
const WAL_FILES_RECYCLED: usize = 4;

/// Counters that make the log's I/O behaviour observable (tests assert group commit with them).
#[derive(Debug, Default)]
pub struct LogStats {
    /// Synced writes (appends, votes, truncations).
    pub syncs: AtomicU64,
    /// Calls to `append`.
    pub appends: AtomicU64,
    /// Entries written by `append`.
    pub entries: AtomicU64,
    /// Microseconds spent in synced writes, fsync included: over `syncs`, the mean time a
    /// write waits for the disk, the first thing to look at when writes slow down.
    pub sync_micros: AtomicU64,
    /// Each synced write's time, as a histogram; slow ones are logged
    /// ([`crate::storage_latency`]).
    pub sync_latency: crate::storage_latency::SyncLatency,
    /// Each `append`'s time from the call to its entries being durable (encoding, the eager
    /// offer and the synced write): what a commit waits for on this node.
    pub append_latency: crate::storage_latency::LatencyHistogram,
}

struct Inner {
    db: DB,
    stats: Arc<LogStats>,
    mark: Arc<DurableMark>,
    /// Set once the node runs: the leader's batches are offered to it before they are written.
    eager: OnceLock<Arc<EagerReplication>>,
    /// The last entry handed to `append`: the `prev_log_id` of the next batch of the same
    /// leader term, without reading it back.
    last_appended: Mutex<Option<LogId>>,
}

impl Drop for Inner {
    /// Closing: bring the durable mark up to the last append, so a clean restart checks the
    /// whole log.
    fn drop(&mut self) {
        if let Err(e) = self.mark.flush() {
            tracing::warn!(path = ?self.db.path(), error = %e, "cannot write the log's durable mark at close");
        }
    }
}

/// Why the log could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error(transparent)]
    Rocks(#[from] rocksdb::Error),
    /// Reading or writing the durable mark failed.
    #[error("the log's durable mark: {0}")]
    Mark(#[from] std::io::Error),
    /// The log's state (last entry, vote) could not be read back.
    #[error("cannot read the log's state: {0}")]
    State(String),
    /// The log recovered shorter than its durable mark.
    #[error(transparent)]
    Damaged(#[from] LogDamage),
}

/// The RocksDB Raft log store. Cloning is cheap and shares the database (the clone serves as
/// the log reader for replication tasks).
#[derive(Clone)]
pub struct LogStore {
    inner: Arc<Inner>,
}

impl Debug for LogStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogStore")
            .field("path", &self.inner.db.path())
            .finish()
    }
}

fn index_key(index: u64) -> [u8; 8] {
    index.to_be_bytes()
}

fn key_index(key: &[u8]) -> Result<u64, StorageError> {
    let bytes: [u8; 8] = key
        .try_into()
        .map_err(|_| read_err(format!("log key of {} bytes, expected 8", key.len())))?;
    Ok(u64::from_be_bytes(bytes))
}

fn read_err(msg: impl ToString) -> StorageError {
    StorageIOError::read_logs(openraft::AnyError::error(msg)).into()
}

fn write_err(msg: impl ToString) -> StorageError {
    StorageIOError::write_logs(openraft::AnyError::error(msg)).into()
}

fn vote_err(verb: ErrorVerb, msg: impl ToString) -> StorageError {
    StorageIOError::new(ErrorSubject::Vote, verb, openraft::AnyError::error(msg)).into()
}

fn sync_opts() -> WriteOptions {
    let mut o = WriteOptions::default();
    o.set_sync(true);
    o
}

impl LogStore {
    /// Open (or create) the log database at `path` (conventionally `<data_dir>/log`) and check
    /// it against its durable mark: [`OpenError::Damaged`] (logged at ERROR) when it lost
    /// entries or its vote.
    pub fn open(path: &Path) -> Result<Self, OpenError> {
        let mut opts = Options::default();
        opts.create_if_missing(true);
        opts.create_missing_column_families(true);
        // Appends are sequential and read back soon (replication) or never (after purge); a
        // modest write buffer keeps memory bounded, and small enough that it is full (and the
        // resident size level) within a minute or two of steady load.
        opts.set_write_buffer_size(16 * 1024 * 1024);
        // Reuse obsolete WAL files instead of creating new ones. An fdatasync after appending
        // to a fresh (or preallocated) file must also commit the file system's metadata (the
        // file's size, its extents); after overwriting blocks already written it need not.
        // On this machine's ext4 that made a 4 KiB write + fdatasync 3-4x faster, and every
        // append's fsync blocks openraft's core on the leader and on each follower
        // (docs/BENCHMARKS.md, "the log's WAL recycled"). Recovery stays point-in-time: a recycled file's stale tail is told apart
        // from new records by the log number in each record.
        opts.set_recycle_log_file_num(WAL_FILES_RECYCLED);
        // A WAL file is obsolete (and can be recycled) only once every column family with
        // records in it has been flushed. `meta` takes a few small writes per second and would
        // otherwise not flush until the WALs reach `max_total_wal_size`, pinning every WAL
        // before that (and lengthening recovery). Flushing both families together frees each
        // WAL as soon as the `logs` memtable it backed is flushed.
        opts.set_atomic_flush(true);
        let cfs = [CF_LOGS, CF_META].map(|name| ColumnFamilyDescriptor::new(name, opts.clone()));
        let db = DB::open_cf_descriptors(&opts, path, cfs)?;
        let (mark, marked) = DurableMark::load(path)?;
        let store = Self {
            inner: Arc::new(Inner {
                db,
                stats: Arc::new(LogStats::default()),
                mark,
                eager: OnceLock::new(),
                last_appended: Mutex::new(None),
            }),
        };
        let found = store
            .durable_state()
            .map_err(|e| OpenError::State(e.to_string()))?;
        match marked {
            Some(marked) => {
                if let Err(damage) = marked.check(&found) {
                    tracing::error!(
                        path = %path.display(),
                        marked_last_log = ?marked.last_log,
                        found_last_log = ?found.last_log,
                        lost_entries = damage.lost,
                        first_lost = damage.first_lost,
                        last_lost = damage.last_lost,
                        marked_vote = ?marked.vote,
                        found_vote = ?found.vote,
                        "RAFT LOG DAMAGED: {damage}"
                    );
                    return Err(damage.into());
                }
            }
            None => tracing::info!(
                path = %path.display(),
                last_log = ?found.last_log,
                "the log has no durable mark yet (new, or written by a version without one): writing one"
            ),
        }
        store.inner.mark.set_now(|m| *m = found)?;
        Ok(store)
    }

    /// The last log id and the vote as the database has them now.
    fn durable_state(&self) -> Result<Mark, StorageError> {
        Ok(Mark {
            last_log: self.last_log_id()?,
            vote: self
                .get_meta(KEY_VOTE)
                .map_err(|e| vote_err(ErrorVerb::Read, e))?,
        })
    }

    /// The log id of the entry at `index`, if the log holds it.
    fn log_id_at(&self, index: u64) -> Result<Option<LogId>, StorageError> {
        let cf = self.cf(CF_LOGS)?;
        match self
            .inner
            .db
            .get_cf(cf, index_key(index))
            .map_err(|e| read_err(e.to_string()))?
        {
            None => Ok(None),
            Some(value) => {
                let entry: Entry = codec::decode(&value).map_err(|e| read_err(e.to_string()))?;
                Ok(Some(*entry.get_log_id()))
            }
        }
    }

    /// The last entry's log id, else the last purged one.
    fn last_log_id(&self) -> Result<Option<LogId>, StorageError> {
        let last_purged = self.last_purged()?;
        let cf = self.cf(CF_LOGS)?;
        let last = match self.inner.db.iterator_cf(cf, IteratorMode::End).next() {
            None => None,
            Some(item) => {
                let (_, value) = item.map_err(|e| read_err(e.to_string()))?;
                let entry: Entry = codec::decode(&value).map_err(|e| read_err(e.to_string()))?;
                Some(*entry.get_log_id())
            }
        };
        Ok(last.or(last_purged))
    }

    /// The log database's memory and disk figures.
    pub fn memory(&self) -> raftlane_statemachine::rocks::DbMemory {
        raftlane_statemachine::rocks::DbMemory::of(&self.inner.db, &[CF_LOGS, CF_META])
    }

    /// I/O counters of this log.
    pub fn stats(&self) -> Arc<LogStats> {
        self.inner.stats.clone()
    }

    /// A weak handle, used to wait until every user of the database has let go of it (so that
    /// the same directory can be reopened, e.g. after a restart in the same process).
    pub(crate) fn release_probe(&self) -> crate::util::ReleaseProbe {
        crate::util::ReleaseProbe::of(&self.inner)
    }

    fn cf(&self, name: &str) -> Result<&rocksdb::ColumnFamily, StorageError> {
        self.inner
            .db
            .cf_handle(name)
            .ok_or_else(|| read_err(format!("missing column family {name}")))
    }

    fn get_meta<T: serde::de::DeserializeOwned>(&self, key: &[u8]) -> Result<Option<T>, String> {
        let cf = self.cf(CF_META).map_err(|e| e.to_string())?;
        match self.inner.db.get_cf(cf, key).map_err(|e| e.to_string())? {
            None => Ok(None),
            Some(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| e.to_string()),
        }
    }

    fn last_purged(&self) -> Result<Option<LogId>, StorageError> {
        self.get_meta(KEY_LAST_PURGED).map_err(read_err)
    }

    /// Run a synced write off the async executor and count it.
    /// Offer the leader's batches to `eager` before writing them ([`EagerReplication`]).
    pub fn set_eager(&self, eager: Arc<EagerReplication>) {
        let _ = self.inner.eager.set(eager);
    }

    /// The log id just before `first` (`Some(None)`: `first` is the log's first entry); `None`
    /// when it cannot be told (purged past, unreadable). `appended` is the last entry of the
    /// previous append: of the same leader term and right before `first`, it is the answer.
    fn prev_log_id(&self, first: &LogId, appended: Option<LogId>) -> Option<Option<LogId>> {
        let Some(index) = first.index.checked_sub(1) else {
            return Some(None);
        };
        if let Some(a) = appended.filter(|a| a.index == index && a.leader_id == first.leader_id) {
            return Some(Some(a));
        }
        match self.log_id_at(index) {
            Ok(Some(id)) => Some(Some(id)),
            _ => match self.last_purged() {
                Ok(Some(p)) if p.index == index => Some(Some(p)),
                _ => None,
            },
        }
    }

    async fn write_synced(&self, batch: WriteBatch) -> Result<(), String> {
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || {
            let started = Instant::now();
            inner.stats.sync_latency.started();
            crate::storage_latency::test_delay();
            if let Err(e) = inner.db.write_opt(batch, &sync_opts()) {
                inner.stats.sync_latency.abandoned();
                return Err(e.to_string());
            }
            let took = crate::util::micros_since(started);
            inner.stats.syncs.fetch_add(1, Ordering::Relaxed);
            inner.stats.sync_micros.fetch_add(took, Ordering::Relaxed);
            inner.stats.sync_latency.record(took);
            Ok(())
        })
        .await
        .map_err(|e| format!("log writer task failed: {e}"))?
    }

    fn read_range(&self, start: u64, end: u64) -> Result<Vec<Entry>, StorageError> {
        let mut out = Vec::new();
        if start >= end {
            return Ok(out);
        }
        let cf = self.cf(CF_LOGS)?;
        let first = index_key(start);
        let iter = self
            .inner
            .db
            .iterator_cf(cf, IteratorMode::From(&first, Direction::Forward));
        for item in iter {
            let (key, value) = item.map_err(|e| read_err(e.to_string()))?;
            let index = key_index(&key)?;
            if index >= end {
                break;
            }
            let entry: Entry = codec::decode(&value).map_err(|e| {
                StorageError::from(StorageIOError::read_log_at_index(
                    index,
                    openraft::AnyError::error(e),
                ))
            })?;
            out.push(entry);
        }
        Ok(out)
    }
}

fn range_to_bounds<RB: RangeBounds<u64>>(range: &RB) -> (u64, u64) {
    let start = match range.start_bound() {
        Bound::Included(&s) => s,
        Bound::Excluded(&s) => s.saturating_add(1),
        Bound::Unbounded => 0,
    };
    let end = match range.end_bound() {
        Bound::Included(&e) => e.saturating_add(1),
        Bound::Excluded(&e) => e,
        Bound::Unbounded => u64::MAX,
    };
    (start, end)
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, StorageError> {
        let (start, end) = range_to_bounds(&range);
        self.read_range(start, end)
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = LogStore;

    async fn get_log_state(&mut self) -> Result<LogState, StorageError> {
        Ok(LogState {
            last_log_id: self.last_log_id()?,
            last_purged_log_id: self.last_purged()?,
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote) -> Result<(), StorageError> {
        let bytes = serde_json::to_vec(vote).map_err(|e| vote_err(ErrorVerb::Write, e))?;
        let mut batch = WriteBatch::default();
        batch.put_cf(self.cf(CF_META)?, KEY_VOTE, bytes);
        self.write_synced(batch)
            .await
            .map_err(|e| vote_err(ErrorVerb::Write, e))?;
        // At once, not in the background: a vote lost to a damaged WAL could be cast twice.
        let (mark, vote) = (self.inner.mark.clone(), *vote);
        tokio::task::spawn_blocking(move || mark.set_now(|m| m.vote = Some(vote)))
            .await
            .map_err(|e| vote_err(ErrorVerb::Write, e))?
            .map_err(|e| vote_err(ErrorVerb::Write, e))
    }

    /// The stored vote, read back uncommitted ([`as_restarted`]): openraft reads it once, when
    /// the node starts.
    async fn read_vote(&mut self) -> Result<Option<Vote>, StorageError> {
        let vote: Option<Vote> = self
            .get_meta(KEY_VOTE)
            .map_err(|e| vote_err(ErrorVerb::Read, e))?;
        Ok(vote.map(as_restarted))
    }

    /// Not synced: the committed index is an optimisation (it lets a restarted node re-apply
    /// committed entries before it hears from a leader); losing it is safe.
    async fn save_committed(&mut self, committed: Option<LogId>) -> Result<(), StorageError> {
        let bytes = serde_json::to_vec(&committed).map_err(|e| write_err(e.to_string()))?;
        let cf = self.cf(CF_META)?;
        self.inner
            .db
            .put_cf(cf, KEY_COMMITTED, bytes)
            .map_err(|e| write_err(e.to_string()))
    }

    async fn read_committed(&mut self) -> Result<Option<LogId>, StorageError> {
        Ok(self
            .get_meta::<Option<LogId>>(KEY_COMMITTED)
            .map_err(read_err)?
            .flatten())
    }

    async fn append<I>(
        &mut self,
        entries: I,
        callback: LogFlushed<TypeConfig>,
    ) -> Result<(), StorageError>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let started = Instant::now();
        let cf = self.cf(CF_LOGS)?;
        let mut batch = WriteBatch::default();
        let mut count = 0u64;
        let mut last = None;
        let entries: Vec<Entry> = entries.into_iter().collect();
        for entry in &entries {
            let bytes = codec::try_encode(entry).map_err(|e| {
                StorageError::from(StorageIOError::write_log_entry(
                    *entry.get_log_id(),
                    openraft::AnyError::error(e),
                ))
            })?;
            batch.put_cf(cf, index_key(entry.get_log_id().index), bytes);
            last = Some(*entry.get_log_id());
            count += 1;
        }
        // The leader's own batch goes to the followers now, to be written while this node
        // writes it (crate::eager_replication).
        let prev_appended = std::mem::replace(
            &mut *self
                .inner
                .last_appended
                .lock()
                .unwrap_or_else(|p| p.into_inner()),
            last,
        );
        if let (Some(eager), Some(first)) = (
            self.inner.eager.get(),
            entries.first().map(|e| *e.get_log_id()),
        ) {
            if let Some(plan) = eager.plan(&first) {
                if let Some(prev) = self.prev_log_id(&first, prev_appended) {
                    eager.offer(plan, prev, entries);
                }
            }
        }
        let stats = &self.inner.stats;
        stats.appends.fetch_add(1, Ordering::Relaxed);
        stats.entries.fetch_add(count, Ordering::Relaxed);
        // One batch, one fsync, then the acknowledgement.
        match self.write_synced(batch).await {
            Ok(()) => {
                if let Some(last) = last {
                    self.inner.mark.raise_soon(last);
                }
                stats
                    .append_latency
                    .record(crate::util::micros_since(started));
                callback.log_io_completed(Ok(()));
                Ok(())
            }
            Err(e) => {
                callback.log_io_completed(Err(std::io::Error::other(e.clone())));
                Err(write_err(e))
            }
        }
    }

    async fn truncate(&mut self, log_id: LogId) -> Result<(), StorageError> {
        tracing::debug!(%log_id, "truncate log");
        *self
            .inner
            .last_appended
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = None;
        // Lower the durable mark first: a crash between the two leaves it below the log, which
        // is what it promises (a mark above the log would read as damage at the next start).
        let new_last = match log_id.index.checked_sub(1) {
            Some(prev) => self.log_id_at(prev)?.or(self.last_purged()?),
            None => None,
        };
        let mark = self.inner.mark.clone();
        tokio::task::spawn_blocking(move || {
            mark.set_now(|m| {
                if m.last_log.is_some_and(|l| l.index >= log_id.index) {
                    m.last_log = new_last;
                }
            })
        })
        .await
        .map_err(|e| write_err(e.to_string()))?
        .map_err(|e| write_err(e.to_string()))?;
        let mut batch = WriteBatch::default();
        batch.delete_range_cf(
            self.cf(CF_LOGS)?,
            index_key(log_id.index),
            index_key(u64::MAX),
        );
        self.write_synced(batch).await.map_err(write_err)
    }

    async fn purge(&mut self, log_id: LogId) -> Result<(), StorageError> {
        tracing::debug!(%log_id, "purge log");
        if let Some(prev) = self.last_purged()? {
            if prev >= log_id {
                return Ok(());
            }
        }
        let bytes = serde_json::to_vec(&log_id).map_err(|e| write_err(e.to_string()))?;
        let mut batch = WriteBatch::default();
        batch.put_cf(self.cf(CF_META)?, KEY_LAST_PURGED, bytes);
        // `index_key(index + 1)` is exclusive; index u64::MAX is never a real entry.
        batch.delete_range_cf(
            self.cf(CF_LOGS)?,
            index_key(0),
            index_key(log_id.index.saturating_add(1)),
        );
        // Not synced: a purge lost in a crash only brings back entries that are still valid.
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || inner.db.write(batch).map_err(|e| e.to_string()))
            .await
            .map_err(|e| write_err(e.to_string()))?
            .map_err(write_err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds() {
        assert_eq!(range_to_bounds(&(3..7)), (3, 7));
        assert_eq!(range_to_bounds(&(3..=7)), (3, 8));
        assert_eq!(range_to_bounds(&(..)), (0, u64::MAX));
        assert_eq!(range_to_bounds(&(5..)), (5, u64::MAX));
        assert_eq!(range_to_bounds(&(..=u64::MAX)), (0, u64::MAX));
    }
}
