//! The production [`Store`]: RocksDB, one column family per [`Table`].
//!
//! Column families give every table its own ordered key space, so a scan of one table never has
//! to skip over another's keys, and a table can be dropped as a whole (see [`RocksStore::clear`]).
//! A [`WriteBatch`] maps one-to-one onto a RocksDB write batch, which RocksDB applies atomically
//! across column families: a replica never sees half of an applied batch, and `last_applied`
//! (written in the same batch) always matches the state it describes.
//!
//! The queue indexes ([`MIRRORED`]) are also kept in memory and every read of them is served
//! from there (see [`RocksStore::open`] for why).

use crate::storage::store::{
    range_bounds, Direction, KvIter, Store, StoreError, Table, WriteBatch,
};
use rocksdb::checkpoint::Checkpoint;
use rocksdb::{
    BlockBasedOptions, ColumnFamily, ColumnFamilyDescriptor, DBCompressionType, IteratorMode,
    Options, ReadOptions, WriteOptions, DB,
};
use std::collections::BTreeMap;
use std::path::Path;

/// The index tables mirrored in memory: keys only (their values are always empty), consumed from
/// the front. A queue drained from its head leaves a RocksDB delete tombstone for every consumed
/// key until compaction, and a scan from the head of a stage or lane had to step over all of them
/// (65 % of the CPU in the pipeline benchmark, and the reason claim throughput decayed during a
/// run). An ordered map in memory has no tombstones: finding the first live key is one descent.
pub const MIRRORED: [Table; 7] = [
    Table::Due,
    Table::LanePending,
    Table::LaneInflight,
    Table::Leases,
    Table::DeadRows,
    Table::IdempotencyExpiry,
    Table::RequestExpiry,
];

/// One mirrored table. Values are kept (not just keys) so the mirror answers exactly what
/// RocksDB would even if a value were ever non-empty; an empty `Box<[u8]>` does not allocate.
type Mirror = BTreeMap<Box<[u8]>, Box<[u8]>>;

/// Whether [`RocksStore`] keeps the [`MIRRORED`] tables in memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mirroring {
    /// Load the mirrored tables at open and serve their reads from memory (a live replica).
    On,
    /// Serve every read from RocksDB: for a store that is read once from start to end (exporting
    /// a checkpoint into a snapshot), where loading the indexes first would only cost time and
    /// memory. Its scans also bypass the block cache: one pass over every table would fill the
    /// caches (32 MiB per column family) with blocks never read again.
    Off,
}

/// A [`Store`] backed by a RocksDB database.
pub struct RocksStore {
    db: DB,
    /// Indexed by [`Table::tag`]; `Some` for the [`MIRRORED`] tables when mirroring is on.
    mirrors: Vec<Option<Mirror>>,
    /// Whether scans keep the blocks they read in the block cache (see [`Mirroring::Off`]).
    fill_cache: bool,
}

impl std::fmt::Debug for RocksStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RocksStore")
            .field("path", &self.db.path())
            .field("mirrored_keys", &self.mirrored_keys())
            .finish()
    }
}

/// RocksDB errors carry only a message; that is all the caller needs, since any storage error
/// stops the replica.
fn io(e: rocksdb::Error) -> StoreError {
    StoreError::Io(e.into_string())
}

/// Options shared by the database and every column family. LZ4 is cheap enough to sit on the
/// apply path and the values (bincode rows, JSON payloads) compress well.
///
/// Writes skip RocksDB's write-ahead log (see [`Store::write`] on `RocksStore`), so the
/// memtables of all column families are flushed together (`atomic_flush`): whatever survives a
/// crash is then the state after one whole batch, never one table ahead of another.
///
/// The memtables of all column families together are capped at [`MEMTABLE_BUDGET`], each at
/// [`MEMTABLE_SIZE`]: otherwise each of the tables may hold 64 MiB (×2 while flushing) and a
/// node's resident size kept climbing for minutes of steady load as one table after another
/// filled its own.
fn options() -> Options {
    let mut opts = Options::default();
    opts.create_if_missing(true);
    opts.create_missing_column_families(true);
    opts.set_compression_type(DBCompressionType::Lz4);
    opts.set_db_write_buffer_size(MEMTABLE_BUDGET);
    opts.set_write_buffer_size(MEMTABLE_SIZE);
    opts.set_atomic_flush(true);
    opts
}

/// The tables whose point reads mostly find nothing: every proposal looks up its request id in
/// `Requests` (a repeat is rare), and an enqueue with an idempotency key looks it up in
/// `Idempotency`. Without a filter such a miss seeks the memtable's skip list and reads a block
/// of every SST file whose key range covers the (random) key: the most expensive read of the
/// pipeline. A bloom filter on the memtable and on each SST file answers "absent" from memory.
const MOSTLY_ABSENT: [Table; 2] = [Table::Requests, Table::Idempotency];

/// [`options`] plus the bloom filters of the [`MOSTLY_ABSENT`] tables.
fn table_options(table: Table) -> Options {
    let mut opts = options();
    if MOSTLY_ABSENT.contains(&table) {
        let mut block = BlockBasedOptions::default();
        block.set_bloom_filter(10.0, false);
        opts.set_block_based_table_factory(&block);
        opts.set_memtable_whole_key_filtering(true);
        opts.set_memtable_prefix_bloom_ratio(0.05);
    }
    opts
}

/// Bytes of memtables the state machine's database keeps in all (see [`options`]).
///
/// Memtables fill at the rate the state is written and are only given back by a flush, so a
/// node's resident size climbs until they reach this budget: with 256 MiB that took the whole
/// of a 10-minute run at 300 messages/s, which is why memory never looked flat. 64 MiB is
/// reached in about two minutes at that rate, and the smaller skip lists are also cheaper to
/// insert into (their inserts were the largest single cost of applying an enqueue).
const MEMTABLE_BUDGET: usize = 64 * 1024 * 1024;
/// Bytes one column family's memtable holds before it is flushed (RocksDB's default: 64 MiB).
const MEMTABLE_SIZE: usize = 16 * 1024 * 1024;

/// Empty mirrors for the [`MIRRORED`] tables (`None` for every other table).
fn empty_mirrors(mirroring: Mirroring) -> Vec<Option<Mirror>> {
    Table::ALL
        .iter()
        .map(|t| (mirroring == Mirroring::On && MIRRORED.contains(t)).then(Mirror::new))
        .collect()
}

/// The entries of `[start, end)` of a mirror in `dir` order, copied out like RocksDB's.
fn scan_mirror<'a>(
    mirror: &'a Mirror,
    start: &[u8],
    end: Option<&[u8]>,
    dir: Direction,
) -> KvIter<'a> {
    if end.is_some_and(|e| e <= start) {
        return Box::new(std::iter::empty());
    }
    let range = mirror.range::<[u8], _>(range_bounds(start, end));
    match dir {
        Direction::Forward => Box::new(range.map(|(k, v)| Ok((k.to_vec(), v.to_vec())))),
        Direction::Reverse => Box::new(range.rev().map(|(k, v)| Ok((k.to_vec(), v.to_vec())))),
    }
}

/// Where a RocksDB database's memory and disk go, summed over its column families: what
/// `/metrics` reports per database, so a growing resident size can be traced to its part.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DbMemory {
    /// Active and immutable memtables (`rocksdb.size-all-mem-tables`).
    pub memtables: u64,
    /// Index and filter blocks of open SST files held outside the block cache
    /// (`rocksdb.estimate-table-readers-mem`).
    pub table_readers: u64,
    /// Bytes in the block caches (`rocksdb.block-cache-usage`; each column family has its own).
    pub block_cache: u64,
    /// Live SST files on disk (`rocksdb.live-sst-files-size`).
    pub sst_bytes: u64,
}

impl DbMemory {
    /// Read the figures of `db` for the column families `cfs` (missing ones count zero).
    pub fn of(db: &DB, cfs: &[&str]) -> DbMemory {
        let mut m = DbMemory::default();
        for cf in cfs.iter().filter_map(|name| db.cf_handle(name)) {
            let prop = |name: &str| {
                db.property_int_value_cf(cf, name)
                    .ok()
                    .flatten()
                    .unwrap_or(0)
            };
            m.memtables += prop("rocksdb.size-all-mem-tables");
            m.table_readers += prop("rocksdb.estimate-table-readers-mem");
            m.block_cache += prop("rocksdb.block-cache-usage");
            m.sst_bytes += prop("rocksdb.live-sst-files-size");
        }
        m
    }
}

impl RocksStore {
    /// Open (or create) the database at `path`, creating any missing table, with the
    /// [`MIRRORED`] index tables loaded into memory.
    ///
    /// Loading is one full scan of those tables (tens of bytes per key; ~2 keys per queued row).
    /// RocksDB still stores them, so checkpoints, snapshots and a reopen see the same data.
    ///
    /// A database holding a column family that is not a [`Table`] (written by a newer version,
    /// say) fails to open rather than being silently ignored.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        Self::open_with(path, Mirroring::On)
    }

    /// [`RocksStore::open`] with the choice of [`Mirroring`].
    pub fn open_with(path: &Path, mirroring: Mirroring) -> Result<Self, StoreError> {
        let cfs = Table::ALL
            .iter()
            .map(|t| ColumnFamilyDescriptor::new(t.name(), table_options(*t)));
        let db = DB::open_cf_descriptors(&options(), path, cfs).map_err(io)?;
        let mut store = Self {
            db,
            mirrors: empty_mirrors(mirroring),
            fill_cache: mirroring == Mirroring::On,
        };
        store.load_mirrors()?;
        Ok(store)
    }

    /// Fill every mirror from its column family.
    fn load_mirrors(&mut self) -> Result<(), StoreError> {
        for table in MIRRORED {
            if !matches!(self.mirrors.get(usize::from(table.tag())), Some(Some(_))) {
                continue;
            }
            let mut mirror = Mirror::new();
            for item in self.db.iterator_cf(self.cf(table)?, IteratorMode::Start) {
                let (k, v) = item.map_err(io)?;
                mirror.insert(k, v);
            }
            self.mirrors[usize::from(table.tag())] = Some(mirror);
        }
        Ok(())
    }

    fn mirror(&self, table: Table) -> Option<&Mirror> {
        self.mirrors.get(usize::from(table.tag()))?.as_ref()
    }

    /// Replay an accepted batch onto the mirrors, in order (later ops win, as in RocksDB).
    fn update_mirrors(&mut self, batch: WriteBatch) {
        for (table, key, value) in batch.ops {
            let Some(Some(mirror)) = self.mirrors.get_mut(usize::from(table.tag())) else {
                continue;
            };
            match value {
                Some(v) => {
                    mirror.insert(key.into_boxed_slice(), v.into_boxed_slice());
                }
                None => {
                    mirror.remove(key.as_slice());
                }
            }
        }
    }

    /// The underlying database, for what the [`Store`] trait does not cover (properties,
    /// compaction, metrics).
    pub fn db(&self) -> &DB {
        &self.db
    }

    /// Write a consistent copy of the whole store into `dir`, which must not exist yet.
    ///
    /// The copy hard-links the SST files when `dir` is on the same filesystem, so it is cheap
    /// whatever the store's size, and it can be opened with [`RocksStore::open`]. Memtables are
    /// flushed first, so the copy holds every batch written before the call; that flush also
    /// makes those batches durable in this store.
    pub fn checkpoint(&self, dir: &Path) -> Result<(), StoreError> {
        Checkpoint::new(&self.db)
            .and_then(|cp| cp.create_checkpoint(dir))
            .map_err(io)
    }

    /// Force every batch written so far to stable storage: flush the memtables of every column
    /// family, atomically (see [`Store::write`] for why this is not done on every write). Used
    /// after installing a snapshot, whose data the Raft log no longer holds.
    pub fn sync(&self) -> Result<(), StoreError> {
        let cfs = Table::ALL
            .iter()
            .map(|t| self.cf(*t))
            .collect::<Result<Vec<_>, _>>()?;
        let mut opts = rocksdb::FlushOptions::default();
        opts.set_wait(true);
        self.db.flush_cfs_opt(&cfs, &opts).map_err(io)
    }

    /// The database's memory and disk figures (see [`DbMemory`]).
    pub fn memory(&self) -> DbMemory {
        DbMemory::of(&self.db, &Table::ALL.map(Table::name))
    }

    /// Keys held by the in-memory mirrors of the [`MIRRORED`] tables.
    pub fn mirrored_keys(&self) -> usize {
        self.mirrors.iter().flatten().map(BTreeMap::len).sum()
    }

    fn cf(&self, table: Table) -> Result<&ColumnFamily, StoreError> {
        self.db
            .cf_handle(table.name())
            .ok_or_else(|| StoreError::Io(format!("missing column family {}", table.name())))
    }
}

impl Store for RocksStore {
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        if let Some(mirror) = self.mirror(table) {
            return Ok(mirror.get(key).map(|v| v.to_vec()));
        }
        self.db.get_cf(self.cf(table)?, key).map_err(io)
    }

    /// The range is handed to RocksDB as iterator bounds rather than checked on each key: the
    /// iterator then stops by itself at either end, and a reverse scan starts at the last key
    /// strictly below `end` without us having to step over `end` itself.
    fn scan<'a>(
        &'a self,
        table: Table,
        start: &[u8],
        end: Option<&[u8]>,
        dir: Direction,
    ) -> Result<KvIter<'a>, StoreError> {
        if let Some(mirror) = self.mirror(table) {
            return Ok(scan_mirror(mirror, start, end, dir));
        }
        let cf = self.cf(table)?;
        if end.is_some_and(|e| e <= start) {
            return Ok(Box::new(std::iter::empty()));
        }
        let mut opts = ReadOptions::default();
        opts.fill_cache(self.fill_cache);
        opts.set_iterate_lower_bound(start);
        if let Some(end) = end {
            opts.set_iterate_upper_bound(end);
        }
        let mode = match dir {
            Direction::Forward => IteratorMode::Start,
            Direction::Reverse => IteratorMode::End,
        };
        let iter = self
            .db
            .iterator_cf_opt(cf, opts, mode)
            .map(|item| item.map(|(k, v)| (k.into_vec(), v.into_vec())).map_err(io));
        Ok(Box::new(iter))
    }

    /// Written to the memtables only, without RocksDB's write-ahead log. The Raft log is the
    /// durability boundary: every applied entry is already fsynced there, so a second log of
    /// the same changes (2–3 KB per enqueued 1 KiB message, on every node) bought nothing but
    /// CPU and disk bandwidth. A crash loses the batches since the last memtable flush; since
    /// each batch carries its own `last_applied` and flushes are atomic across column families
    /// (see [`options`]), the store comes back at an earlier consistent point and openraft
    /// replays the rest from the log. The log still holds those entries: it is purged only
    /// behind a snapshot, and building one takes a checkpoint, which flushes the memtables
    /// first; a store found behind its snapshot is restored from it (`raftlane-raft`'s
    /// `sm_adapter`).
    ///
    /// The mirrors change only once RocksDB has accepted the batch, so a failed write leaves
    /// memory and disk agreeing (and the replica stops anyway).
    fn write(&mut self, batch: WriteBatch) -> Result<(), StoreError> {
        let mut wb = rocksdb::WriteBatch::default();
        for (table, key, value) in &batch.ops {
            let cf = self.cf(*table)?;
            match value {
                Some(v) => wb.put_cf(cf, key, v),
                None => wb.delete_cf(cf, key),
            }
        }
        let mut opts = WriteOptions::default();
        opts.disable_wal(true);
        self.db.write_opt(wb, &opts).map_err(io)?;
        self.update_mirrors(batch);
        Ok(())
    }

    /// Drops and recreates every column family. Unlike deleting keys, this frees the space at
    /// once and leaves no tombstones for later scans to wade through. It is not atomic: after a
    /// crash part-way, reopening recreates whatever is missing, and the caller (installing a
    /// snapshot) must start over anyway.
    fn clear(&mut self) -> Result<(), StoreError> {
        for table in Table::ALL {
            if self.db.cf_handle(table.name()).is_some() {
                self.db.drop_cf(table.name()).map_err(io)?;
            }
            self.db
                .create_cf(table.name(), &table_options(table))
                .map_err(io)?;
            if let Some(Some(mirror)) = self.mirrors.get_mut(usize::from(table.tag())) {
                mirror.clear();
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::keys::Key;
    use crate::storage::store::{KvPair, MemStore};

    /// Deterministic pseudo-random numbers (Knuth's MMIX LCG), so failures reproduce.
    struct Lcg(u64);

    impl Lcg {
        fn next(&mut self) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            self.0 >> 33
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }

        /// Short keys over a tiny alphabet (including 0x00 and 0xff), so keys share prefixes,
        /// collide, and land exactly on scan bounds.
        fn key(&mut self) -> Vec<u8> {
            const ALPHABET: [u8; 5] = [0x00, 0x01, 0x7f, 0x80, 0xff];
            let len = self.below(5);
            (0..len)
                .map(|_| ALPHABET[self.below(ALPHABET.len() as u64) as usize])
                .collect()
        }
    }

    fn collect(iter: KvIter<'_>) -> Vec<KvPair> {
        iter.collect::<Result<Vec<_>, _>>().unwrap()
    }

    fn put(table: Table, key: &[u8], value: &[u8]) -> WriteBatch {
        let mut b = WriteBatch::default();
        b.put(table, key.to_vec(), value.to_vec());
        b
    }

    fn all(store: &dyn Store) -> Vec<(Table, KvPair)> {
        Table::ALL
            .iter()
            .flat_map(|&t| {
                collect(store.scan(t, &[], None, Direction::Forward).unwrap())
                    .into_iter()
                    .map(move |kv| (t, kv))
            })
            .collect()
    }

    /// Fill both stores with the same batches of puts, overwrites and deletes.
    fn fill(rocks: &mut RocksStore, mem: &mut MemStore, rng: &mut Lcg) {
        let tables = [Table::Meta, Table::Rows, Table::LanePending];
        for _ in 0..40 {
            let mut batch = WriteBatch::default();
            for _ in 0..rng.below(20) + 1 {
                let table = tables[rng.below(tables.len() as u64) as usize];
                let key = rng.key();
                if rng.below(4) == 0 {
                    batch.delete(table, key);
                } else {
                    let value = rng.next().to_be_bytes().to_vec();
                    batch.put(table, key, value);
                }
            }
            rocks.write(batch.clone()).unwrap();
            mem.write(batch).unwrap();
        }
    }

    #[test]
    fn put_get_delete() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = RocksStore::open(dir.path()).unwrap();
        assert_eq!(store.get(Table::Rows, b"a").unwrap(), None);

        store.write(put(Table::Rows, b"a", b"1")).unwrap();
        assert_eq!(store.get(Table::Rows, b"a").unwrap(), Some(b"1".to_vec()));
        // Tables are separate key spaces.
        assert_eq!(store.get(Table::Messages, b"a").unwrap(), None);

        // Later ops in a batch win, as in MemStore.
        let mut b = WriteBatch::default();
        b.put(Table::Rows, b"a".to_vec(), b"2".to_vec());
        b.put(Table::Rows, b"b".to_vec(), b"3".to_vec());
        b.delete(Table::Rows, b"b".to_vec());
        store.write(b).unwrap();
        assert_eq!(store.get(Table::Rows, b"a").unwrap(), Some(b"2".to_vec()));
        assert_eq!(store.get(Table::Rows, b"b").unwrap(), None);

        let mut b = WriteBatch::default();
        b.delete(Table::Rows, b"a".to_vec());
        store.write(b).unwrap();
        assert_eq!(store.get(Table::Rows, b"a").unwrap(), None);

        // The empty key and an empty value are ordinary entries.
        store.write(put(Table::Meta, b"", b"")).unwrap();
        assert_eq!(store.get(Table::Meta, b"").unwrap(), Some(Vec::new()));
    }

    #[test]
    fn scans_match_memstore() {
        let dir = tempfile::tempdir().unwrap();
        let mut rocks = RocksStore::open(dir.path()).unwrap();
        let mut mem = MemStore::new();
        let mut rng = Lcg(42);
        fill(&mut rocks, &mut mem, &mut rng);
        assert!(all(&mem).len() > 100, "the data set should not be trivial");

        let mut nonempty = 0;
        for i in 0..400 {
            let table = [Table::Meta, Table::Rows, Table::LanePending, Table::Audit][i % 4];
            let start = rng.key();
            let end = match rng.below(3) {
                0 => None,
                _ => Some(rng.key()),
            };
            for dir in [Direction::Forward, Direction::Reverse] {
                let got = collect(rocks.scan(table, &start, end.as_deref(), dir).unwrap());
                let want = collect(mem.scan(table, &start, end.as_deref(), dir).unwrap());
                assert_eq!(got, want, "{table:?} [{start:?}, {end:?}) {dir:?}");
                nonempty += usize::from(got.len() > 1);
            }
        }
        assert!(nonempty > 200, "most scans should return several entries");
    }

    #[test]
    fn reverse_scan_excludes_end_key() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = RocksStore::open(dir.path()).unwrap();
        let mut b = WriteBatch::default();
        for k in [&b"a"[..], b"b", b"c", b"d"] {
            b.put(Table::Due, k.to_vec(), k.to_vec());
        }
        store.write(b).unwrap();

        let keys = |start: &[u8], end: Option<&[u8]>, dir| {
            collect(store.scan(Table::Due, start, end, dir).unwrap())
                .into_iter()
                .map(|(k, _)| k)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            keys(b"b", Some(b"d"), Direction::Reverse),
            vec![b"c".to_vec(), b"b".to_vec()]
        );
        assert_eq!(
            keys(b"b", None, Direction::Reverse),
            vec![b"d".to_vec(), b"c".to_vec(), b"b".to_vec()]
        );
        assert_eq!(
            keys(b"b", Some(b"d"), Direction::Forward),
            vec![b"b".to_vec(), b"c".to_vec()]
        );
        assert!(keys(b"c", Some(b"c"), Direction::Reverse).is_empty());
        assert!(keys(b"d", Some(b"b"), Direction::Forward).is_empty());
    }

    #[test]
    fn clear_empties_every_table_and_stays_usable() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = RocksStore::open(dir.path()).unwrap();
        let mut b = WriteBatch::default();
        for table in Table::ALL {
            b.put(table, b"k".to_vec(), table.name().as_bytes().to_vec());
        }
        store.write(b).unwrap();
        assert_eq!(all(&store).len(), Table::ALL.len());

        store.clear().unwrap();
        assert!(all(&store).is_empty());
        assert_eq!(store.get(Table::Meta, b"k").unwrap(), None);

        store.write(put(Table::Meta, b"k", b"v")).unwrap();
        assert_eq!(store.get(Table::Meta, b"k").unwrap(), Some(b"v".to_vec()));

        // A cleared store reopens cleared, with every table present.
        drop(store);
        let store = RocksStore::open(dir.path()).unwrap();
        assert_eq!(
            all(&store),
            vec![(Table::Meta, (b"k".to_vec(), b"v".to_vec()))]
        );
    }

    #[test]
    fn data_survives_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let mut mem = MemStore::new();
        {
            let mut rocks = RocksStore::open(dir.path()).unwrap();
            fill(&mut rocks, &mut mem, &mut Lcg(7));
            rocks.sync().unwrap();
        }
        let rocks = RocksStore::open(dir.path()).unwrap();
        assert_eq!(all(&rocks), all(&mem));
    }

    #[test]
    fn checkpoint_opens_with_the_same_data() {
        let dir = tempfile::tempdir().unwrap();
        let mut rocks = RocksStore::open(&dir.path().join("db")).unwrap();
        let mut mem = MemStore::new();
        fill(&mut rocks, &mut mem, &mut Lcg(99));

        let cp_dir = dir.path().join("checkpoint");
        rocks.checkpoint(&cp_dir).unwrap();
        // Later writes to the original do not leak into the copy.
        rocks.write(put(Table::Rows, b"after", b"x")).unwrap();

        let copy = RocksStore::open(&cp_dir).unwrap();
        assert_eq!(all(&copy), all(&mem));
        assert_eq!(copy.get(Table::Rows, b"after").unwrap(), None);

        // The target must not exist yet; that is an error, not a panic.
        assert!(matches!(rocks.checkpoint(&cp_dir), Err(StoreError::Io(_))));
    }

    /// Puts and deletes of index-like keys (empty values) in every mirrored table, plus a
    /// non-mirrored one, with most keys deleted again, as a drained queue leaves them.
    fn fill_indexes(rocks: &mut RocksStore, mem: &mut MemStore) {
        let tables = [MIRRORED.as_slice(), &[Table::Rows]].concat();
        for round in 0u64..20 {
            let mut batch = WriteBatch::default();
            for (i, &table) in tables.iter().enumerate() {
                for n in 0..200u64 {
                    let key = Key::new().u8(i as u8).u64(round * 1000 + n).build();
                    batch.put(table, key, Vec::new());
                }
            }
            rocks.write(batch.clone()).unwrap();
            mem.write(batch).unwrap();
            let mut batch = WriteBatch::default();
            for (i, &table) in tables.iter().enumerate() {
                // Keep one key in ten.
                for n in (0..200u64).filter(|n| n % 10 != 3) {
                    let key = Key::new().u8(i as u8).u64(round * 1000 + n).build();
                    batch.delete(table, key);
                }
            }
            rocks.write(batch.clone()).unwrap();
            mem.write(batch).unwrap();
        }
    }

    #[test]
    fn mirrored_indexes_survive_reopen_and_are_stored_in_rocksdb() {
        let dir = tempfile::tempdir().unwrap();
        let mut mem = MemStore::new();
        {
            let mut rocks = RocksStore::open(dir.path()).unwrap();
            fill_indexes(&mut rocks, &mut mem);
            assert_eq!(all(&rocks), all(&mem));
            rocks.sync().unwrap();
        }
        let want = all(&mem);
        assert_eq!(
            want.len(),
            (MIRRORED.len() + 1) * 20 * 20,
            "20 live keys per round and table"
        );
        let reopened = RocksStore::open(dir.path()).unwrap();
        assert_eq!(all(&reopened), want);
        for table in MIRRORED {
            assert!(reopened.mirror(table).is_some_and(|m| m.len() == 400));
        }
        drop(reopened);
        // What RocksDB itself holds, read without the mirrors, is the same.
        let raw = RocksStore::open_with(dir.path(), Mirroring::Off).unwrap();
        assert!(MIRRORED.iter().all(|&t| raw.mirror(t).is_none()));
        assert_eq!(all(&raw), want);
    }

    #[test]
    fn scans_over_deleted_keys_return_exactly_the_live_keys() {
        let dir = tempfile::tempdir().unwrap();
        let mut rocks = RocksStore::open(&dir.path().join("db")).unwrap();
        let mut mem = MemStore::new();
        fill_indexes(&mut rocks, &mut mem);
        // The same data on RocksDB's own path, tombstones and all.
        rocks.checkpoint(&dir.path().join("raw")).unwrap();
        let raw = RocksStore::open_with(&dir.path().join("raw"), Mirroring::Off).unwrap();

        let key = |prefix: u8, n: u64| Key::new().u8(prefix).u64(n).build();
        let mut checked = 0;
        for (i, &table) in MIRRORED.iter().enumerate() {
            let p = i as u8;
            let ranges: Vec<(Vec<u8>, Option<Vec<u8>>)> = vec![
                (vec![], None),
                (vec![p], Some(vec![p + 1])),
                (key(p, 0), Some(key(p, 3))),       // only deleted keys
                (key(p, 3), Some(key(p, 4))),       // exactly one live key
                (key(p, 4), Some(key(p, 13))),      // end bound on a live key
                (key(p, 2500), Some(key(p, 7013))), // across rounds
                (key(p, 7013), None),
                (key(p, 9), Some(key(p, 9))),       // empty range
                (key(p, 19_000), Some(key(p, 10))), // inverted range
            ];
            for (start, end) in &ranges {
                for dir in [Direction::Forward, Direction::Reverse] {
                    let want = collect(mem.scan(table, start, end.as_deref(), dir).unwrap());
                    let got = collect(rocks.scan(table, start, end.as_deref(), dir).unwrap());
                    let got_raw = collect(raw.scan(table, start, end.as_deref(), dir).unwrap());
                    assert_eq!(got, want, "{table:?} [{start:?}, {end:?}) {dir:?}");
                    assert_eq!(got_raw, want, "raw {table:?} [{start:?}, {end:?}) {dir:?}");
                    assert!(
                        got.iter().all(|(k, _)| trailing(k) % 10 == 3),
                        "only live keys"
                    );
                    checked += got.len();
                }
            }
            // Point reads agree too: a live key, a deleted one, one never written.
            for n in [3u64, 4, 19_013, 55_555] {
                assert_eq!(
                    rocks.get(table, &key(p, n)).unwrap(),
                    mem.get(table, &key(p, n)).unwrap()
                );
            }
        }
        assert!(checked > 6 * 2 * 400, "the scans should return many keys");
    }

    fn trailing(key: &[u8]) -> u64 {
        crate::storage::keys::trailing_u64(key).unwrap()
    }

    #[test]
    fn clear_empties_the_mirrors() {
        let dir = tempfile::tempdir().unwrap();
        let mut rocks = RocksStore::open(dir.path()).unwrap();
        fill_indexes(&mut rocks, &mut MemStore::new());
        rocks.clear().unwrap();
        assert!(all(&rocks).is_empty());
        assert!(MIRRORED
            .iter()
            .all(|&t| rocks.mirror(t).is_some_and(BTreeMap::is_empty)));
        rocks.write(put(Table::Due, b"k", b"")).unwrap();
        assert_eq!(rocks.get(Table::Due, b"k").unwrap(), Some(Vec::new()));
    }

    /// Set in the child process of [`a_crash_leaves_a_consistent_prefix`]: the store to fill
    /// before aborting.
    const CRASH_CHILD: &str = "RAFTLANE_ROCKS_CRASH_CHILD";
    /// Batches the child writes, and the one after which it forces a flush.
    const CRASH_BATCHES: u64 = 300;
    const CRASH_SYNCED: u64 = 120;

    /// Batch `i` of the crash test: a counter in `Meta` and one row in each of three tables, so
    /// a store that kept some tables' part of a batch and lost another's shows.
    fn crash_batch(i: u64) -> WriteBatch {
        let mut b = WriteBatch::default();
        let k = i.to_be_bytes().to_vec();
        b.put(Table::Meta, b"last".to_vec(), k.clone());
        b.put(Table::Rows, k.clone(), vec![7; 900]);
        b.put(Table::Messages, k.clone(), vec![8; 900]);
        b.put(Table::Due, k, Vec::new());
        b
    }

    /// Writes skip the WAL, so a process killed without a flush loses its recent batches. What
    /// survives must be a prefix of whole batches: every table agrees with the `Meta` counter,
    /// nothing flushed is lost, and nothing after the counter is there. The child is this test
    /// binary run again, which aborts (no destructor, no flush) after writing.
    #[test]
    fn a_crash_leaves_a_consistent_prefix() {
        if let Ok(path) = std::env::var(CRASH_CHILD) {
            let mut rocks = RocksStore::open(Path::new(&path)).unwrap();
            for i in 1..=CRASH_BATCHES {
                rocks.write(crash_batch(i)).unwrap();
                if i == CRASH_SYNCED {
                    rocks.sync().unwrap();
                }
            }
            std::process::abort();
        }
        let dir = tempfile::tempdir().unwrap();
        let status = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "storage::rocks::tests::a_crash_leaves_a_consistent_prefix",
            ])
            .env(CRASH_CHILD, dir.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(!status.success(), "the child must have aborted");

        let rocks = RocksStore::open(dir.path()).unwrap();
        let last = rocks
            .get(Table::Meta, b"last")
            .unwrap()
            .map(|v| crate::storage::keys::read_u64(&v, 0).unwrap())
            .unwrap_or(0);
        assert!(
            (CRASH_SYNCED..=CRASH_BATCHES).contains(&last),
            "flushed batches must survive; found {last}"
        );
        for table in [Table::Rows, Table::Messages, Table::Due] {
            let keys: Vec<u64> = collect(rocks.scan(table, &[], None, Direction::Forward).unwrap())
                .iter()
                .map(|(k, _)| trailing(k))
                .collect();
            assert_eq!(keys, (1..=last).collect::<Vec<_>>(), "{table:?}");
        }
    }
}
