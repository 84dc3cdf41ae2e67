//! The production [`Store`]: RocksDB, one column family per [`Table`].
//!
//! Column families give every table its own ordered key space, so a scan of one table never has
//! to skip over another's keys, and a table can be dropped as a whole (see [`RocksStore::clear`]).
//! A [`WriteBatch`] maps one-to-one onto a RocksDB write batch, which RocksDB applies atomically
//! across column families: a replica never sees half of an applied batch, and `last_applied`
//! (written in the same batch) always matches the state it describes.

use crate::store::{Direction, KvIter, Store, StoreError, Table, WriteBatch};
use rocksdb::checkpoint::Checkpoint;
use rocksdb::{
    ColumnFamily, ColumnFamilyDescriptor, DBCompressionType, IteratorMode, Options, ReadOptions,
    WriteOptions, DB,
};
use std::path::Path;

/// A [`Store`] backed by a RocksDB database.
pub struct RocksStore {
    db: DB,
}

impl std::fmt::Debug for RocksStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RocksStore")
            .field("path", &self.db.path())
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
fn options() -> Options {
    let mut opts = Options::default();
    opts.create_if_missing(true);
    opts.create_missing_column_families(true);
    opts.set_compression_type(DBCompressionType::Lz4);
    opts
}

impl RocksStore {
    /// Open (or create) the database at `path`, creating any missing table.
    ///
    /// A database holding a column family that is not a [`Table`] (written by a newer version,
    /// say) fails to open rather than being silently ignored.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let cfs = Table::ALL
            .iter()
            .map(|t| ColumnFamilyDescriptor::new(t.name(), options()));
        let db = DB::open_cf_descriptors(&options(), path, cfs).map_err(io)?;
        Ok(Self { db })
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

    /// Force every batch written so far to stable storage (see [`Store::write`] for why this is
    /// not done on every write). Useful before discarding Raft log entries that the state
    /// machine has already applied.
    pub fn sync(&self) -> Result<(), StoreError> {
        self.db.flush_wal(true).map_err(io)
    }

    fn cf(&self, table: Table) -> Result<&ColumnFamily, StoreError> {
        self.db
            .cf_handle(table.name())
            .ok_or_else(|| StoreError::Io(format!("missing column family {}", table.name())))
    }
}

impl Store for RocksStore {
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
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
        let cf = self.cf(table)?;
        if end.is_some_and(|e| e <= start) {
            return Ok(Box::new(std::iter::empty()));
        }
        let mut opts = ReadOptions::default();
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

    /// Written to the WAL but not fsynced. The Raft log is the durability boundary: a crash may
    /// lose the last few batches, but each batch carries its own `last_applied`, so the store
    /// comes back at an earlier consistent point and the log replays the rest. Syncing here
    /// would add an fsync per batch to the apply path for nothing.
    fn write(&mut self, batch: WriteBatch) -> Result<(), StoreError> {
        let mut wb = rocksdb::WriteBatch::default();
        for (table, key, value) in &batch.ops {
            let cf = self.cf(*table)?;
            match value {
                Some(v) => wb.put_cf(cf, key, v),
                None => wb.delete_cf(cf, key),
            }
        }
        self.db.write_opt(wb, &WriteOptions::default()).map_err(io)
    }

    /// Drops and recreates every column family. Unlike deleting keys, this frees the space at
    /// once and leaves no tombstones for later scans to wade through. It is not atomic: after a
    /// crash part-way, reopening recreates whatever is missing, and the caller (installing a
    /// snapshot) must start over anyway.
    fn clear(&mut self) -> Result<(), StoreError> {
        let opts = options();
        for table in Table::ALL {
            if self.db.cf_handle(table.name()).is_some() {
                self.db.drop_cf(table.name()).map_err(io)?;
            }
            self.db.create_cf(table.name(), &opts).map_err(io)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{KvPair, MemStore};

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
}
