//! The apply context: what one command's application may touch, and how a command applies.

use crate::model::ids::{MessageId, RowId};
use crate::model::message::Message;
use crate::model::row::WorkRow;
use crate::rules::claim_owner::Acting;
use crate::tables::{messages, rows, Db};
use crate::wire::log_format::LogFormat;
use crate::wire::outcome::Outcome;
use crate::wire::rejection::Rejection;
use std::ops::{Deref, DerefMut};

/// Why a command could not be applied (defined with the rules, the first layer that rejects).
pub use crate::rules::{ApplyError, ApplyResult};

/// Everything one command's application may touch: the tables through [`Db`] (the batch
/// overlay, the counters, and the clamped time `t`), the operation id `index` (what fences and
/// approval ids are made of: the log index, or a batched envelope's own id), the acting
/// principal and whether the proposer vouched for it as an operator
/// (the envelope's [`as_operator`](crate::wire::command::Envelope::as_operator)). Derefs to its [`Db`], so rules and
/// tables take a `Ctx` as they are.
pub(crate) struct Ctx<'t, 's> {
    pub db: Db<'t, 's>,
    pub index: u64,
    pub actor: &'t str,
    pub operator: bool,
    /// The log format the entry was written in: a rule that changed with a format applies to
    /// the entries of that format and later only (docs/SPEC.md §2.8), so a node replaying an
    /// older entry reaches the state every node reached when it was new.
    pub format: LogFormat,
}

impl<'t, 's> Deref for Ctx<'t, 's> {
    type Target = Db<'t, 's>;

    fn deref(&self) -> &Db<'t, 's> {
        &self.db
    }
}

impl DerefMut for Ctx<'_, '_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.db
    }
}

impl<'t> Ctx<'t, '_> {
    /// A row, or the rejection `UnknownRow`.
    pub fn row(&self, id: RowId) -> ApplyResult<WorkRow> {
        rows::get(self.db.txn, id)?.ok_or_else(|| Rejection::UnknownRow(id).into())
    }

    /// Refuse `owner` (carried in `field`) when it belongs to another principal than this
    /// command's (`crate::rules::lease_owner`).
    pub fn check_owner(&self, field: &str, owner: &str) -> ApplyResult<()> {
        crate::rules::lease_owner::check(&self.db, field, owner, self.actor)
    }

    /// [`Ctx::check_owner`] for an act on what `owner` holds (`what`, a command's name): an
    /// operator may act under another principal's name, audited.
    pub fn check_owner_or_override(
        &mut self,
        field: &str,
        owner: &str,
        what: &'static str,
    ) -> ApplyResult<()> {
        let who = self.acting(what);
        crate::rules::lease_owner::check_or_override(&mut self.db, field, owner, &who)
    }

    /// `owner` (carried in `field`) took a lease, or named an engine, for this command's
    /// principal: bind it to it.
    pub fn bind_owner(&mut self, field: &str, owner: &str) -> ApplyResult<()> {
        let actor = self.actor;
        crate::rules::lease_owner::bind(&mut self.db, field, owner, actor)
    }

    /// Who performs `what` (a command's name), for the rules that judge whose a row's claim is
    /// (`crate::rules::claim_owner`). Holds no borrow of the context.
    pub fn acting(&self, what: &'static str) -> Acting<'t> {
        Acting {
            principal: self.actor,
            operator: self.operator,
            what,
        }
    }

    /// A message, or the rejection `UnknownMessage`.
    pub fn message(&self, id: MessageId) -> ApplyResult<Message> {
        messages::get(self.db.txn, id)?.ok_or_else(|| Rejection::UnknownMessage(id).into())
    }
}

/// A command's effect on the state: implemented by each command struct, next to the rest of
/// its family. A rejection changes nothing: the caller rolls back whatever was written.
pub(crate) trait Apply {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome>;
}
