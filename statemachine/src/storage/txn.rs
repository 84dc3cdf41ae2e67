//! A write overlay over a [`Store`]: the unit in which a batch of commands is applied.
//!
//! Reads see the batch's own earlier writes (a command in the middle of a batch must see what
//! the previous command did); nothing reaches the store until [`Txn::into_batch`] hands the
//! whole overlay to [`Store::write`] as one atomic batch. A command that is rejected part-way
//! rolls its writes back with [`Txn::checkpoint`] / [`Txn::rollback`], so it never half-applies.

use crate::storage::store::{
    range_bounds, Direction, KvPair, Store, StoreError, Table, WriteBatch,
};
use crate::wire::codec;
use serde::{de::DeserializeOwned, Serialize};
use std::collections::BTreeMap;
use std::iter::Peekable;

type Overlay = BTreeMap<Table, BTreeMap<Vec<u8>, Option<Vec<u8>>>>;
/// `(table, key, previous overlay value)`; `None` = the key was absent from the overlay.
type UndoEntry = (Table, Vec<u8>, Option<Option<Vec<u8>>>);
type OverlayIter<'a> = Box<dyn Iterator<Item = (&'a Vec<u8>, &'a Option<Vec<u8>>)> + 'a>;

pub struct Txn<'s, S: Store + ?Sized> {
    base: &'s S,
    overlay: Overlay,
    /// Undo log for rollback: previous overlay value of each key written since the checkpoint
    /// (`None` = the key was absent from the overlay).
    undo: Vec<UndoEntry>,
}

/// Marker returned by [`Txn::checkpoint`].
pub struct Checkpoint(usize);

impl<'s, S: Store + ?Sized> Txn<'s, S> {
    pub fn new(base: &'s S) -> Self {
        Self {
            base,
            overlay: Overlay::new(),
            undo: Vec::new(),
        }
    }

    pub fn checkpoint(&self) -> Checkpoint {
        Checkpoint(self.undo.len())
    }

    /// Undo every write made since `cp`.
    pub fn rollback(&mut self, cp: Checkpoint) {
        while self.undo.len() > cp.0 {
            let Some((table, key, prev)) = self.undo.pop() else {
                break;
            };
            let t = self.overlay.entry(table).or_default();
            match prev {
                Some(v) => {
                    t.insert(key, v);
                }
                None => {
                    t.remove(&key);
                }
            }
        }
    }

    /// Forget the undo log (the command was accepted).
    pub fn release(&mut self, cp: Checkpoint) {
        self.undo.truncate(cp.0);
    }

    pub fn get_raw(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        if let Some(v) = self.overlay.get(&table).and_then(|t| t.get(key)) {
            return Ok(v.clone());
        }
        self.base.get(table, key)
    }

    pub fn get<T: DeserializeOwned>(
        &self,
        table: Table,
        key: &[u8],
    ) -> Result<Option<T>, StoreError> {
        match self.get_raw(table, key)? {
            None => Ok(None),
            Some(bytes) => codec::decode(&bytes)
                .map(Some)
                .map_err(|e| StoreError::Corrupt {
                    table,
                    reason: e.to_string(),
                }),
        }
    }

    pub fn contains(&self, table: Table, key: &[u8]) -> Result<bool, StoreError> {
        Ok(self.get_raw(table, key)?.is_some())
    }

    fn set(&mut self, table: Table, key: Vec<u8>, value: Option<Vec<u8>>) {
        let t = self.overlay.entry(table).or_default();
        let prev = t.insert(key.clone(), value);
        self.undo.push((table, key, prev));
    }

    pub fn put_raw(&mut self, table: Table, key: Vec<u8>, value: Vec<u8>) {
        self.set(table, key, Some(value));
    }

    pub fn put<T: Serialize>(&mut self, table: Table, key: Vec<u8>, value: &T) {
        self.set(table, key, Some(codec::encode(value)));
    }

    pub fn delete(&mut self, table: Table, key: Vec<u8>) {
        self.set(table, key, None);
    }

    /// Ordered scan of `[start, end)` merging the overlay over the store. Lazy: taking the first
    /// item of a scan costs one seek, whatever the table's size.
    pub fn scan(
        &self,
        table: Table,
        start: &[u8],
        end: Option<&[u8]>,
        dir: Direction,
    ) -> Result<MergeIter<'_>, StoreError> {
        let base = self.base.scan(table, start, end, dir)?.peekable();
        let over: OverlayIter<'_> =
            match (self.overlay.get(&table), end.is_some_and(|e| e <= start)) {
                (Some(t), false) => {
                    let r = t.range::<[u8], _>(range_bounds(start, end));
                    match dir {
                        Direction::Forward => Box::new(r),
                        Direction::Reverse => Box::new(r.rev()),
                    }
                }
                _ => Box::new(std::iter::empty()),
            };
        Ok(MergeIter {
            base,
            over: over.peekable(),
            dir,
        })
    }

    /// Scan every key starting with `prefix`.
    pub fn scan_prefix(
        &self,
        table: Table,
        prefix: &[u8],
        dir: Direction,
    ) -> Result<MergeIter<'_>, StoreError> {
        let end = crate::storage::keys::prefix_end(prefix);
        self.scan(table, prefix, end.as_deref(), dir)
    }

    /// Decode helper for scans.
    pub fn decode<T: DeserializeOwned>(table: Table, bytes: &[u8]) -> Result<T, StoreError> {
        codec::decode(bytes).map_err(|e| StoreError::Corrupt {
            table,
            reason: e.to_string(),
        })
    }

    /// The collected writes, ready for one atomic [`Store::write`].
    pub fn into_batch(self) -> WriteBatch {
        let mut batch = WriteBatch::default();
        for (table, entries) in self.overlay {
            for (key, value) in entries {
                match value {
                    Some(v) => batch.put(table, key, v),
                    None => batch.delete(table, key),
                }
            }
        }
        batch
    }
}

/// Merge of a store scan with the overlay's entries in the same range; overlay wins, and
/// overlay deletions hide store entries.
pub struct MergeIter<'a> {
    base: Peekable<crate::storage::store::KvIter<'a>>,
    over: Peekable<OverlayIter<'a>>,
    dir: Direction,
}

impl Iterator for MergeIter<'_> {
    type Item = Result<KvPair, StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let take_over = match (self.base.peek(), self.over.peek()) {
                (None, None) => return None,
                (Some(Err(_)), _) => return self.base.next(),
                (None, Some(_)) => true,
                (Some(_), None) => false,
                (Some(Ok((bk, _))), Some((ok, _))) => {
                    if bk == *ok {
                        // Same key: the overlay shadows the store.
                        self.base.next();
                        true
                    } else {
                        match self.dir {
                            Direction::Forward => *ok < bk,
                            Direction::Reverse => *ok > bk,
                        }
                    }
                }
            };
            if take_over {
                let (k, v) = self.over.next()?;
                if let Some(v) = v {
                    return Some(Ok((k.clone(), v.clone())));
                }
                // A deletion: skip and look again.
            } else {
                return self.base.next();
            }
        }
    }
}
