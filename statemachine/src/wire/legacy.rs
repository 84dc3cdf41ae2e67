//! Commands that are decoded, not proposed: no build proposes them any more, and a log may
//! still hold them, so every build applies them as their build did (`crate::apply::retention`,
//! `crate::apply::dispatch`).
//! Their variants keep their places in [`Command`](crate::wire::command::Command) (variants are
//! encoded by position), and their structs live here, apart from the live vocabulary, so that a
//! reader of `command/` sees what is proposed today.

use crate::model::ids::Millis;
use serde::{Deserialize, Serialize};

/// Blank the bodies of ended messages received before `older_than`. The retention timer and
/// route propose the paged `RetentionPage` instead (docs/SPEC.md §8.6): an unbounded purge is
/// one apply as long as the state is large.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PurgeMessageBodies {
    pub older_than: Millis,
}

/// Blank payload and error of dead outbound rows that died before `older_than`. Replaced by
/// `RetentionPage` like [`PurgeMessageBodies`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PurgeDeadLetters {
    pub older_than: Millis,
}

/// A format 1/2 command found where no proposer put one: a wrapper ([`AtClientTime`],
/// [`Fingerprinted`], [`AsOperator`]) nested in another order than the one proposers wrote, or
/// around a batch. Kept whole, as its format 1 bytes (the codec's bytes of a
/// [`CommandV1`](crate::wire::layout_v1::CommandV1); bytes rather than the value, so that the
/// one vocabulary does not name the old one), so the entry is written back byte for byte, and
/// refused by `apply` as the misplaced wrapper itself was (`crate::apply::dispatch`).
///
/// [`AtClientTime`]: crate::wire::layout_v1::AtClientTime
/// [`Fingerprinted`]: crate::wire::layout_v1::Fingerprinted
/// [`AsOperator`]: crate::wire::layout_v1::AsOperator
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Nested(pub Vec<u8>);
