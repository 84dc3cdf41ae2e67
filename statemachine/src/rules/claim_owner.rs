//! A row's claim is its principal's (docs/SPEC.md §9.8).
//!
//! A fence proves that a command comes after the claim it names, not who sends it: fences are
//! log indexes, and a row read once showed them to anyone, so a worker could hand another
//! principal's in-flight row on with a payload of its own, or dead-letter it. So the claim
//! itself names its principal, and only that principal acts on it, unless the proposer vouched
//! for the caller as an operator (the envelope's [`as_operator`](crate::wire::command::Envelope::as_operator)); every such
//! override is an audit row of its own.
//!
//! The claiming principal is recorded with the claim through its owner name: a claim binds its
//! owner name to the principal that made it, for good, in the same command
//! ([`crate::rules::lease_owner`]), and no other principal may ever claim under that name. So
//! `LeaseOwners[claim.owner]` is exactly the principal of every claim made since owner names
//! are bound, without a field the stored row encoding would have to grow. A claim whose owner
//! name is bound to nobody (made by an older build) is nobody's: only an operator may act on
//! it.

use crate::model::audit::DEFAULT_ORG;
use crate::model::row::{Claim, WorkRow};
use crate::rules::ApplyResult;
use crate::storage::StoreError;
use crate::tables::{audit, lease_owners, Db};
use crate::wire::rejection::Rejection;

/// The audit action of an operator's act on another principal's claim.
pub const OVERRIDE_ACTION: &str = "row.override";

/// Who performs a command, as the rules about claims see it.
#[derive(Clone, Copy, Debug)]
pub struct Acting<'a> {
    /// The envelope's principal.
    pub principal: &'a str,
    /// The proposer vouched that the principal holds the operator role.
    pub operator: bool,
    /// The command's name, for the audit row of an override.
    pub what: &'static str,
}

/// The principal a claim belongs to: the one its owner name is bound to (`None`: a claim of an
/// older build, bound to nobody).
pub(crate) fn principal_of(db: &Db<'_, '_>, claim: &Claim) -> Result<Option<String>, StoreError> {
    lease_owners::principal(db.txn, &claim.owner)
}

/// Whether `who` may take `row`'s claim back (a recovery, docs/SPEC.md §9.8): an operator any
/// claim, anyone else only a claim of its own principal.
pub(crate) fn may_take_back(
    db: &Db<'_, '_>,
    who: &Acting<'_>,
    row: &WorkRow,
) -> Result<bool, StoreError> {
    Ok(match &row.claim {
        _ if who.operator => true,
        None => true,
        Some(claim) => principal_of(db, claim)?.as_deref() == Some(who.principal),
    })
}

/// The principal a recovery by `who` is confined to: `None` (everyone's) for an operator, else
/// its own.
pub(crate) fn confined_to<'a>(who: &Acting<'a>) -> Option<&'a str> {
    (!who.operator).then_some(who.principal)
}

/// `who` may act on `row` as its claim stands: the claim is its own, or there is none; else
/// only as an operator, and that act is audited (`row.override`, the row's channel, detail
/// naming the command, the row, the claim's principal and owner). Refused otherwise
/// ([`Rejection::ClaimOfAnother`]), before anything changed.
pub(crate) fn check(db: &mut Db<'_, '_>, who: &Acting<'_>, row: &WorkRow) -> ApplyResult<()> {
    let Some(claim) = &row.claim else {
        return Ok(());
    };
    let holder = principal_of(db, claim)?;
    if holder.as_deref() == Some(who.principal) {
        return Ok(());
    }
    if !who.operator {
        return Err(Rejection::ClaimOfAnother { row: row.id }.into());
    }
    let detail = format!(
        "{} of row {} claimed by {} (owner {})",
        who.what,
        row.id,
        holder.as_deref().unwrap_or("no principal"),
        claim.owner
    );
    audit::append(
        db,
        who.principal,
        DEFAULT_ORG,
        OVERRIDE_ACTION,
        Some(&row.channel_id),
        Some(detail),
    )?;
    Ok(())
}
