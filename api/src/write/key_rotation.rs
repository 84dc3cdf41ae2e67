//! Key rotation (docs/SPEC.md §2.6): every covered value re-encrypted under the active key.
//!
//! The write path holds the keyring ([`super::at_rest`]), so the decrypting and re-encrypting a
//! rotation does happens here, never in a route. A first pass checks that every covered value
//! decrypts (a value no configured key can decrypt stops the rotation before anything is
//! written). The second pass walks the values again in bounded pages, re-encrypts those not
//! already under the active key (legacy plaintext included) and proposes one compare-and-set
//! `RewriteValues` per batch, split further so no command outgrows the request size limit. A
//! value that changed meanwhile is left alone and counted in `conflicts` (run the rotation
//! again).

use super::{Proposer, WriteError};
use crate::crypto::{self, CryptoError, Keyring};
use raftlane_statemachine::wire::command::RewriteValues;
use raftlane_statemachine::wire::rewrite::{Rewrite, ValueRef};
use raftlane_statemachine::{Command, Envelope, Outcome, Rejection};

/// Covered values read per batch of a rotation, by default.
pub const ROTATE_BATCH: usize = 500;
/// Largest batch a caller may ask for.
pub const MAX_ROTATE_BATCH: usize = 5000;

/// A rotation ready to run: this node has a keyring and the batch size is in bounds.
pub struct KeyRotation<'a> {
    writes: &'a Proposer,
    keyring: &'a Keyring,
    /// Covered values read per page.
    size: usize,
    /// Bytes of expected and new values per command: a forwarded command must fit the
    /// leader's request limit.
    budget: usize,
}

/// What a rotation did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rotated {
    /// The key every value is now under.
    pub active_key: String,
    pub rewritten: u64,
    /// Values already under the active key (or empty).
    pub skipped: u64,
    /// Values that changed between the read and their rewrite, left alone.
    pub conflicts: u64,
    /// `RewriteValues` commands applied.
    pub batches: u64,
}

fn undecryptable(target: ValueRef, value: &str, cause: CryptoError) -> WriteError {
    WriteError::Undecryptable {
        target,
        key_id: crypto::key_id_of(value).map(str::to_string),
        cause,
    }
}

impl Proposer {
    /// A rotation reading `batch_size` values per page (default [`ROTATE_BATCH`]) and proposing
    /// commands of at most `budget` bytes of values: [`WriteError::Invalid`] naming
    /// `batch_size` out of bounds, [`WriteError::NoKeyring`] with encryption at rest off.
    pub fn key_rotation(
        &self,
        batch_size: Option<usize>,
        budget: usize,
    ) -> Result<KeyRotation<'_>, WriteError> {
        let size = batch_size.unwrap_or(ROTATE_BATCH);
        if size == 0 || size > MAX_ROTATE_BATCH {
            return Err(WriteError::Invalid(Rejection::invalid(
                "batch_size",
                format!("must be between 1 and {MAX_ROTATE_BATCH}"),
            )));
        }
        let keyring = self.keyring().ok_or(WriteError::NoKeyring)?;
        Ok(KeyRotation {
            writes: self,
            keyring,
            size,
            budget,
        })
    }
}

impl KeyRotation<'_> {
    /// Run the rotation, each command proposed as `envelope` wraps it (the caller's actor and
    /// request ids).
    pub async fn run<E>(&self, envelope: &E) -> Result<Rotated, WriteError>
    where
        E: Fn(Command) -> Envelope + Sync,
    {
        let active = self.keyring.active_id().to_string();
        tracing::info!(active = %active, "key rotation: checking every covered value decrypts");
        let total = self.preflight().await?;
        tracing::info!(active = %active, values = total, "key rotation: rewriting");
        let mut done = Rotated {
            active_key: active,
            ..Rotated::default()
        };
        let mut cursor: Option<ValueRef> = None;
        loop {
            let values = self.page(cursor.as_ref()).await?;
            let Some((last, _)) = values.last() else {
                break;
            };
            cursor = Some(last.clone());
            let items = self.rewrites(values, &mut done)?;
            for chunk in chunks(items, self.budget) {
                self.propose(chunk, envelope, &mut done).await?;
            }
        }
        let Rotated {
            rewritten,
            skipped,
            conflicts,
            batches,
            ..
        } = done;
        tracing::info!(active = %done.active_key, rewritten, skipped, conflicts, batches, "key rotation done");
        Ok(done)
    }

    /// The next page of covered values after `cursor` (linearizable, so a page reflects every
    /// write acknowledged before it, including this rotation's own previous batches).
    async fn page(&self, cursor: Option<&ValueRef>) -> Result<Vec<(ValueRef, String)>, WriteError> {
        self.writes.linearize().await?;
        Ok(crate::backend::read(self.writes.backend.as_ref(), |r| {
            r.covered_values(cursor, self.size)
        })?)
    }

    /// Pass 1: every covered value must decrypt under some configured key, or nothing is
    /// written. Answers how many values there are.
    async fn preflight(&self) -> Result<u64, WriteError> {
        let mut cursor: Option<ValueRef> = None;
        let mut seen = 0u64;
        loop {
            let values = self.page(cursor.as_ref()).await?;
            let Some((last, _)) = values.last() else {
                return Ok(seen);
            };
            let next = last.clone();
            for (target, value) in values.iter() {
                if value.is_empty() || self.keyring.is_current(value) {
                    continue;
                }
                if let Err(e) = self.keyring.open(value) {
                    return Err(undecryptable(target.clone(), value, e));
                }
            }
            seen += values.len() as u64;
            cursor = Some(next);
        }
    }

    /// A page's values re-encrypted under the active key, the whole page before any of it is
    /// proposed: a value that became undecryptable since the first pass stops the rotation
    /// before this page is written. Values already current are counted as skipped.
    fn rewrites(
        &self,
        values: Vec<(ValueRef, String)>,
        done: &mut Rotated,
    ) -> Result<Vec<Rewrite>, WriteError> {
        let mut items = Vec::with_capacity(values.len());
        for (target, value) in values {
            match self.keyring.rotate(&value) {
                Ok(Some(new)) => items.push(Rewrite {
                    target,
                    expected: value,
                    value: new,
                }),
                Ok(None) => done.skipped += 1,
                Err(e) => {
                    let (rewritten, batches) = (done.rewritten, done.batches);
                    tracing::warn!(?target, %e, rewritten, batches, "key rotation stopped");
                    return Err(undecryptable(target, &value, e));
                }
            }
        }
        Ok(items)
    }

    /// Propose one batch of rewrites and count what it did.
    async fn propose<E>(
        &self,
        items: Vec<Rewrite>,
        envelope: &E,
        done: &mut Rotated,
    ) -> Result<(), WriteError>
    where
        E: Fn(Command) -> Envelope + Sync,
    {
        let requested = items.len() as u64;
        let command = Command::RewriteValues(RewriteValues { items });
        let (index, response) = self.writes.write(envelope(command)).await?;
        match response.map_err(WriteError::Rejected)? {
            Outcome::Count(n) => {
                done.batches += 1;
                done.rewritten += n;
                done.conflicts += requested.saturating_sub(n);
                tracing::info!(
                    batch = done.batches,
                    index,
                    rewritten = n,
                    total_rewritten = done.rewritten,
                    "key rotation: batch applied"
                );
                Ok(())
            }
            other => Err(WriteError::UnexpectedOutcome(Box::new(other))),
        }
    }
}

/// `items` in consecutive chunks of at most `budget` bytes of expected and new values (a
/// single item larger than that is a chunk of its own).
fn chunks(items: Vec<Rewrite>, budget: usize) -> Vec<Vec<Rewrite>> {
    let mut out = Vec::new();
    let mut chunk: Vec<Rewrite> = Vec::new();
    let mut bytes = 0usize;
    let mut rest = items.into_iter().peekable();
    while let Some(item) = rest.next() {
        bytes += item.expected.len() + item.value.len();
        chunk.push(item);
        let full = rest
            .peek()
            .is_none_or(|n| bytes + n.expected.len() + n.value.len() > budget);
        if full {
            out.push(std::mem::take(&mut chunk));
            bytes = 0;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use raftlane_statemachine::MessageId;

    fn item(n: u64, bytes: usize) -> Rewrite {
        Rewrite {
            target: ValueRef::MessageRaw {
                message_id: MessageId(n),
            },
            expected: "e".repeat(bytes),
            value: String::new(),
        }
    }

    #[test]
    fn batches_stay_within_the_byte_budget() {
        let sizes =
            |chunks: Vec<Vec<Rewrite>>| -> Vec<usize> { chunks.iter().map(Vec::len).collect() };
        assert!(chunks(Vec::new(), 10).is_empty());
        let items = (0..5).map(|n| item(n, 4)).collect();
        assert_eq!(sizes(chunks(items, 10)), [2, 2, 1]);
        // One item over the budget still goes, alone.
        let items = vec![item(0, 3), item(1, 50), item(2, 3)];
        assert_eq!(sizes(chunks(items, 10)), [1, 1, 1]);
        let items = (0..4).map(|n| item(n, 1)).collect();
        assert_eq!(sizes(chunks(items, 100)), [4]);
    }
}
