//! Owner names and engine node ids belong to principals (docs/SPEC.md §9.4, §9.8).
//!
//! An owner name is what a worker claims, renews and releases under; lanes and rows record it.
//! Were it a free string, any principal could renew or release another principal's leases by
//! naming its owner (a worker of channel `a` once kept a channel-`b` row leased for a day and
//! let go of `b`'s lane). So the first principal to claim under an owner name owns that name for
//! good: another principal's claim, renewal or release under it is refused, and nothing
//! changes. Principals therefore pick owner names of their own (a node id, a process id), as
//! they would anyway. The cluster's own actors (`raftlane:…`) and operators' recovery
//! (`RecoverInflightOnPromotion`, `ReclaimExpired`) act on leases without claiming them and
//! are not bound.
//!
//! An engine's node id (docs/SPEC.md §15) is the same kind of name, in the same namespace: the
//! clustered engine leases its FIFO lanes under its node id, so one table says whose both are.
//! The first coordination write that uses a node id (a heartbeat, a campaign) binds it, and
//! another principal can then neither heartbeat nor campaign as that node, nor resign its
//! leadership, nor mark it left.
//!
//! A name that is bound at first use can be squatted: another principal that guesses a
//! predictable name (an engine's `--node-id`) and uses it first locks the engine out. So an
//! admin may bind a name to a principal ahead of use, and release a binding
//! ([`crate::wire::command::ReserveOwner`]). Acts on what a name already holds (a lane
//! release, a resignation, a leave) are also open to an operator through
//! the envelope's [`as_operator`](crate::wire::command::Envelope::as_operator), each audited (`owner.override`); taking
//! new work (claims, heartbeats, campaigns) under another principal's name is open to nobody.

use crate::model::audit::DEFAULT_ORG;
use crate::rules::claim_owner::Acting;
use crate::rules::ApplyResult;
use crate::tables::{audit, lease_owners, Db};
use crate::wire::rejection::Rejection;

/// The audit action of an operator's act under a name bound to another principal.
pub const OVERRIDE_ACTION: &str = "owner.override";

/// Refused when `name` (carried in `field`) belongs to another principal than `principal`.
/// Checked before a claim, a renewal, a release or a coordination write changes anything.
pub(crate) fn check(db: &Db<'_, '_>, field: &str, name: &str, principal: &str) -> ApplyResult<()> {
    match lease_owners::principal(db.txn, name)? {
        Some(holder) if holder != principal => Err(Rejection::NameOfAnother {
            field: field.to_string(),
            name: name.to_string(),
            principal: holder,
        }
        .into()),
        _ => Ok(()),
    }
}

/// [`check`] for an act on what `name` already holds: an operator may act under another
/// principal's name, and that act is audited (`owner.override`, detail naming the command, the
/// name and its principal).
pub(crate) fn check_or_override(
    db: &mut Db<'_, '_>,
    field: &str,
    name: &str,
    who: &Acting<'_>,
) -> ApplyResult<()> {
    match lease_owners::principal(db.txn, name)? {
        Some(holder) if holder != who.principal => {
            if !who.operator {
                return Err(Rejection::NameOfAnother {
                    field: field.to_string(),
                    name: name.to_string(),
                    principal: holder,
                }
                .into());
            }
            let detail = format!("{} under {field} {name} of {holder}", who.what);
            audit::append(
                db,
                who.principal,
                DEFAULT_ORG,
                OVERRIDE_ACTION,
                None,
                Some(detail),
            )?;
            Ok(())
        }
        _ => Ok(()),
    }
}

/// `name` was used for `principal`: from now on it is `principal`'s. Written only when the use
/// took or changed something, so a claim that found nothing changes nothing.
pub(crate) fn bind(
    db: &mut Db<'_, '_>,
    field: &str,
    name: &str,
    principal: &str,
) -> ApplyResult<()> {
    check(db, field, name, principal)?;
    if lease_owners::principal(db.txn, name)?.is_none() {
        lease_owners::put(db, name, principal);
    }
    Ok(())
}
