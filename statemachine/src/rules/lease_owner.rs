//! Lease owners belong to principals (docs/SPEC.md §9.4).
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

use crate::rules::ApplyResult;
use crate::tables::{lease_owners, Db};
use crate::wire::rejection::Rejection;

/// Refused when `owner` belongs to another principal than `principal`. Checked before a claim,
/// a renewal or a release changes anything.
pub(crate) fn check(db: &Db<'_, '_>, owner: &str, principal: &str) -> ApplyResult<()> {
    match lease_owners::principal(db.txn, owner)? {
        Some(holder) if holder != principal => Err(Rejection::OwnerOfAnother {
            owner: owner.to_string(),
            principal: holder,
        }
        .into()),
        _ => Ok(()),
    }
}

/// `owner` took a lease for `principal`: from now on the name is `principal`'s. Written only
/// when a claim took something, so a claim that found nothing changes nothing.
pub(crate) fn bind(db: &mut Db<'_, '_>, owner: &str, principal: &str) -> ApplyResult<()> {
    check(db, owner, principal)?;
    if lease_owners::principal(db.txn, owner)?.is_none() {
        lease_owners::put(db, owner, principal);
    }
    Ok(())
}
