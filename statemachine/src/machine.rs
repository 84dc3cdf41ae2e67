//! The state machine: applies batches of committed commands to a [`Store`], atomically (each
//! command through [`crate::apply`]), and reads, snapshots and digests the state it keeps.

use crate::model::meta::MetaState;
use crate::query::Reader;
use crate::storage::{Direction, Store, StoreError, Table, TableEntry, Txn, WriteBatch};
use crate::tables;
use crate::wire::command::Envelope;
use crate::wire::outcome::Response;
use crate::wire::rejection::Rejection;

/// One log entry of a batch as the state machine sees it.
pub enum BatchItem<'e> {
    /// A client command at `index`.
    Command { index: u64, envelope: &'e Envelope },
    /// An entry without a command (blank or membership): advances `last_applied` only.
    Noop { index: u64 },
}

impl BatchItem<'_> {
    fn index(&self) -> u64 {
        match self {
            BatchItem::Command { index, .. } | BatchItem::Noop { index } => *index,
        }
    }
}

/// The replicated state machine over a store.
pub struct StateMachine<S: Store> {
    store: S,
    meta: MetaState,
}

impl<S: Store + 'static> StateMachine<S> {
    /// Open the state kept in `store` (empty store = empty state).
    pub fn open(store: S) -> Result<Self, StoreError> {
        let meta = tables::meta::load(&store)?;
        Ok(Self { store, meta })
    }

    pub fn store(&self) -> &S {
        &self.store
    }

    pub fn store_mut(&mut self) -> &mut S {
        &mut self.store
    }

    pub fn meta(&self) -> &MetaState {
        &self.meta
    }

    pub fn last_applied(&self) -> u64 {
        self.meta.last_applied
    }

    /// Apply one batch of committed entries in order, then write every effect, the counters,
    /// `last_applied` and the adapter's `external` metadata in one atomic store write.
    ///
    /// Entries at or below `last_applied` are skipped (a replay after a crash between the log's
    /// commit and this write re-delivers them). Returns one response per command item, in order
    /// (`None` for skipped and no-op items).
    pub fn apply_batch(
        &mut self,
        items: &[BatchItem<'_>],
        external: &[(Vec<u8>, Option<Vec<u8>>)],
    ) -> Result<Vec<Option<Response>>, StoreError> {
        let mut meta = self.meta.clone();
        let mut responses = Vec::with_capacity(items.len());
        let batch = {
            let base: &dyn Store = &self.store;
            let mut txn = Txn::new(base);
            for item in items {
                let index = item.index();
                if index <= meta.last_applied {
                    responses.push(None);
                    continue;
                }
                let response = match item {
                    BatchItem::Noop { .. } => None,
                    BatchItem::Command { envelope, .. } => {
                        Some(crate::apply::entry(&mut txn, &mut meta, index, envelope)?)
                    }
                };
                meta.last_applied = index;
                responses.push(response);
            }
            tables::meta::save(&mut txn, &meta);
            for (key, value) in external {
                tables::meta::put_external(&mut txn, key, value.as_ref());
            }
            txn.into_batch()
        };
        self.store.write(batch)?;
        self.meta = meta;
        Ok(responses)
    }

    /// Convenience for tests and tools: apply a single command at `index`.
    pub fn apply(&mut self, index: u64, envelope: &Envelope) -> Result<Response, StoreError> {
        let items = [BatchItem::Command { index, envelope }];
        let mut out = self.apply_batch(&items, &[])?;
        Ok(out
            .pop()
            .flatten()
            .unwrap_or(Err(Rejection::invalid("index", "already applied"))))
    }

    /// Read an adapter-owned metadata value written through `apply_batch`'s `external`.
    pub fn external(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        tables::meta::external(&self.store, key)
    }

    /// A read-only view for queries.
    pub fn read(&self) -> Reader<'_> {
        Reader::new(&self.store, &self.meta)
    }

    /// Replace the whole state with `entries` (a snapshot stream of `(table, key, value)`),
    /// atomically from the point of view of readers of this struct.
    pub fn install<I>(&mut self, entries: I) -> Result<(), StoreError>
    where
        I: IntoIterator<Item = TableEntry>,
    {
        self.store.clear()?;
        let mut batch = WriteBatch::default();
        for (table, key, value) in entries {
            batch.put(table, key, value);
            if batch.ops.len() >= 4096 {
                self.store.write(std::mem::take(&mut batch))?;
            }
        }
        self.store.write(batch)?;
        self.meta = tables::meta::load(&self.store)?;
        Ok(())
    }

    /// Every `(table, key, value)` of the state in canonical order: the snapshot stream.
    pub fn export(&self) -> impl Iterator<Item = Result<TableEntry, StoreError>> + '_ {
        Table::ALL.into_iter().flat_map(move |table| {
            let iter: Box<dyn Iterator<Item = Result<TableEntry, StoreError>>> =
                match self.store.scan(table, &[], None, Direction::Forward) {
                    Ok(it) => Box::new(it.map(move |r| r.map(|(k, v)| (table, k, v)))),
                    Err(e) => Box::new(std::iter::once(Err(e))),
                };
            iter
        })
    }

    /// SHA-256 over the canonical walk of the logical state (see [`crate::storage::digest`]).
    pub fn digest(&self) -> Result<[u8; 32], StoreError> {
        crate::storage::digest::digest(&self.store)
    }
}
