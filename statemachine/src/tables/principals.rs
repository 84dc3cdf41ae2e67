//! `Principals` (name → [`Principal`]), `PrincipalTokens` (token hash → name) and
//! `PrincipalOrgs` (name → the audit orgs in its scope).

use crate::model::principal::Principal;
use crate::storage::keys::Key;
use crate::storage::{Direction, Store, StoreError, Table, Txn};
use crate::tables::Db;

fn name_key(name: &str) -> Vec<u8> {
    Key::new().str(name).build()
}

pub(crate) fn get<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    name: &str,
) -> Result<Option<Principal>, StoreError> {
    txn.get(Table::Principals, &name_key(name))
}

pub(crate) fn put(cx: &mut Db<'_, '_>, principal: &Principal) {
    cx.txn
        .put(Table::Principals, name_key(&principal.name), principal);
}

pub(crate) fn delete(cx: &mut Db<'_, '_>, name: &str) {
    cx.txn.delete(Table::Principals, name_key(name));
}

/// The name of the principal a token hash is assigned to.
pub(crate) fn token_holder<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    token_hash: &str,
) -> Result<Option<String>, StoreError> {
    txn.get(Table::PrincipalTokens, token_hash.as_bytes())
}

pub(crate) fn put_token(cx: &mut Db<'_, '_>, token_hash: &str, name: &str) {
    cx.txn.put(
        Table::PrincipalTokens,
        token_hash.as_bytes().to_vec(),
        &name,
    );
}

pub(crate) fn delete_token(cx: &mut Db<'_, '_>, token_hash: String) {
    cx.txn
        .delete(Table::PrincipalTokens, token_hash.into_bytes());
}

/// The principal holding a token hash.
pub(crate) fn by_token_hash<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    token_hash: &str,
) -> Result<Option<Principal>, StoreError> {
    let Some(name) = token_holder(txn, token_hash)? else {
        return Ok(None);
    };
    get(txn, &name)
}

/// Every principal, by name.
pub(crate) fn all<S: Store + ?Sized>(txn: &Txn<'_, S>) -> Result<Vec<Principal>, StoreError> {
    let mut out = Vec::new();
    for item in txn.scan(Table::Principals, &[], None, Direction::Forward)? {
        out.push(Txn::<S>::decode(Table::Principals, &item?.1)?);
    }
    Ok(out)
}

/// The audit orgs `name` is scoped to; `None` when no org scope was set.
pub(crate) fn orgs<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    name: &str,
) -> Result<Option<Vec<String>>, StoreError> {
    txn.get(Table::PrincipalOrgs, &name_key(name))
}

pub(crate) fn set_orgs(cx: &mut Db<'_, '_>, name: &str, orgs: Option<&[String]>) {
    match orgs {
        Some(orgs) => cx
            .txn
            .put(Table::PrincipalOrgs, name_key(name), &orgs.to_vec()),
        None => cx.txn.delete(Table::PrincipalOrgs, name_key(name)),
    }
}
