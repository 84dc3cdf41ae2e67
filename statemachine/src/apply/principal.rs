//! API principals ([`crate::model::principal`]): PutPrincipal and RevokePrincipal. A bearer token
//! is stored only as its SHA-256 hash; the token never enters the log.

use crate::apply::{audit, Apply, ApplyResult, Ctx};
use crate::model::principal::{Principal, Role};
use crate::rules::{principal_name, validate};
use crate::tables::{lease_owners, principals};
use crate::wire::command::{
    IssueToken, PutPrincipal, ReserveOwner, RevokePrincipal, SetPrincipalOrgs,
};
use crate::wire::outcome::Outcome;
use crate::wire::rejection::Rejection;

impl Apply for PutPrincipal {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let PutPrincipal {
            name,
            token_hash,
            role,
            channels,
        } = self;
        put(cx, name, token_hash, *role, channels.as_deref())
    }
}

impl Apply for RevokePrincipal {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let RevokePrincipal { name } = self;
        revoke(cx, name)
    }
}

/// Longest nonce an [`IssueToken`] may carry (the API draws 32 hex digits).
const MAX_NONCE_LEN: usize = 64;

/// A principal put with a token the proposer drew at random: the same effects as
/// [`PutPrincipal`], answered with the nonce so that a retry re-derives the stored token.
impl Apply for IssueToken {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let IssueToken { principal, nonce } = self;
        if nonce.len() > MAX_NONCE_LEN || !nonce.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Err(Rejection::invalid(
                "nonce",
                format!("must be at most {MAX_NONCE_LEN} ASCII letters or digits"),
            )
            .into());
        }
        principal.apply(cx)?;
        Ok(Outcome::TokenIssued {
            nonce: nonce.clone(),
        })
    }
}

fn put(
    cx: &mut Ctx<'_, '_>,
    name: &str,
    token_hash: &str,
    role: Role,
    channels: Option<&[String]>,
) -> ApplyResult<Outcome> {
    check_name(cx, name)?;
    if token_hash.len() != 64
        || !token_hash
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    {
        return Err(
            Rejection::invalid("token_hash", "must be 64 lowercase hex digits (SHA-256)").into(),
        );
    }
    for c in channels.unwrap_or_default() {
        validate::name("channels", c)?;
    }
    if let Some(holder) = principals::token_holder(cx.txn, token_hash)? {
        if holder != name {
            return Err(
                Rejection::invalid("token_hash", "already assigned to another principal").into(),
            );
        }
    }
    if let Some(old) = principals::get(cx.txn, name)? {
        principals::delete_token(cx, old.token_hash);
    }
    let principal = Principal {
        name: name.to_string(),
        token_hash: token_hash.to_string(),
        role,
        channels: channels.map(<[String]>::to_vec),
        created_at: cx.t,
    };
    principals::put(cx, &principal);
    principals::put_token(cx, token_hash, &principal.name);
    audit::record_default(
        cx,
        "principal.put",
        None,
        format!("{name} as {}", role.as_str()),
    )?;
    Ok(Outcome::Done)
}

/// A principal's name in its one normal form, neither reserved nor confusable with another
/// principal's (`rules::principal_name`, docs/SPEC.md §9.1); the same name again (a token
/// rotation) is the same principal.
fn check_name(cx: &Ctx<'_, '_>, name: &str) -> ApplyResult<()> {
    principal_name::check_form("name", name)?;
    let existing = principals::all(cx.txn)?;
    principal_name::check_distinct("name", name, existing.iter().map(|p| p.name.as_str()))?;
    Ok(())
}

fn revoke(cx: &mut Ctx<'_, '_>, name: &str) -> ApplyResult<Outcome> {
    let old: Principal = principals::get(cx.txn, name)?
        .ok_or_else(|| Rejection::UnknownPrincipal(name.to_string()))?;
    principals::delete_token(cx, old.token_hash);
    principals::delete(cx, name);
    audit::record_default(cx, "principal.revoke", None, name.to_string())?;
    Ok(Outcome::Done)
}

impl Apply for SetPrincipalOrgs {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let SetPrincipalOrgs { name, orgs } = self;
        check_name(cx, name)?;
        for org in orgs.as_deref().unwrap_or_default() {
            validate::name("orgs", org)?;
        }
        principals::set_orgs(cx, name, orgs.as_deref());
        let scope = match orgs {
            Some(orgs) => orgs.join(","),
            None => "unset".to_string(),
        };
        audit::record_default(cx, "principal.orgs", None, format!("{name}: {scope}"))?;
        Ok(Outcome::Done)
    }
}

/// An admin's reservation or release of a name (`rules::lease_owner`, docs/SPEC.md §9.8).
impl Apply for ReserveOwner {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let ReserveOwner { owner, principal } = self;
        validate::name("owner", owner)?;
        let holder = lease_owners::principal(cx.txn, owner)?;
        match principal {
            Some(principal) => {
                validate::name("principal", principal)?;
                if principals::get(cx.txn, principal)?.is_none() {
                    return Err(Rejection::UnknownPrincipal(principal.clone()).into());
                }
                match holder.as_deref() {
                    Some(h) if h == principal.as_str() => Ok(Outcome::Count(0)),
                    Some(_) => Err(Rejection::AlreadyExists {
                        field: "owner".into(),
                        value: owner.clone(),
                    }
                    .into()),
                    None => {
                        lease_owners::put(cx, owner, principal);
                        audit::record_default(
                            cx,
                            "owner.reserve",
                            None,
                            format!("{owner} for {principal}"),
                        )?;
                        Ok(Outcome::Count(1))
                    }
                }
            }
            None => {
                let Some(was) = holder else {
                    return Ok(Outcome::Count(0));
                };
                lease_owners::delete(cx, owner);
                audit::record_default(cx, "owner.release", None, format!("{owner} (was {was})"))?;
                Ok(Outcome::Count(1))
            }
        }
    }
}
