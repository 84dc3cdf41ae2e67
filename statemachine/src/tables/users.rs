//! The engine's users and roles (docs/SPEC.md §13):
//!
//! - `Users`: user id (raw bytes) → [`User`];
//! - `Usernames`: username (raw bytes) → user id, so usernames are unique and `users_by_name`
//!   walks them in byte order;
//! - `UserRoles`: user id (length-prefixed) ‖ role id (raw) → [`RoleAssignment`], a user's
//!   roles in role-id order;
//! - `Roles`: role id (raw) → [`AuthRole`];
//! - `AdGroupMaps`: map tag (u8) ‖ group (length-prefixed) ‖ role id or channel (raw) → ().
//!
//! A key made of one string is that string's bytes, so the table's order is byte order.

use crate::model::user::{AdGroupMap, AuthRole, RoleAssignment, User};
use crate::storage::keys::{read_str, Key};
use crate::storage::{Direction, Store, StoreError, Table, Txn};
use crate::tables::Db;

// --- users ---

pub(crate) fn get<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    user_id: &str,
) -> Result<Option<User>, StoreError> {
    txn.get(Table::Users, user_id.as_bytes())
}

/// The id of the user holding `username`.
pub(crate) fn id_of<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    username: &str,
) -> Result<Option<String>, StoreError> {
    txn.get(Table::Usernames, username.as_bytes())
}

/// Store a user; a new user's username goes into the index with [`put_username`].
pub(crate) fn put(cx: &mut Db<'_, '_>, user: &User) {
    cx.txn.put(Table::Users, user.id.as_bytes().to_vec(), user);
}

pub(crate) fn put_username(cx: &mut Db<'_, '_>, username: &str, user_id: &str) {
    cx.txn
        .put(Table::Usernames, username.as_bytes().to_vec(), &user_id);
}

/// Delete a user and its username; its roles and sessions are the caller's.
pub(crate) fn delete(cx: &mut Db<'_, '_>, user: &User) {
    cx.txn
        .delete(Table::Usernames, user.username.as_bytes().to_vec());
    cx.txn.delete(Table::Users, user.id.as_bytes().to_vec());
}

/// Every user, by username (byte order).
pub(crate) fn all_by_username<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
) -> Result<Vec<User>, StoreError> {
    let mut out = Vec::new();
    for item in txn.scan(Table::Usernames, &[], None, Direction::Forward)? {
        let user_id: String = Txn::<S>::decode(Table::Usernames, &item?.1)?;
        if let Some(user) = get(txn, &user_id)? {
            out.push(user);
        }
    }
    Ok(out)
}

/// Every username, in byte order (the keys of `Usernames` only: no user is decoded).
pub(crate) fn usernames<S: Store + ?Sized>(txn: &Txn<'_, S>) -> Result<Vec<String>, StoreError> {
    let mut out = Vec::new();
    for item in txn.scan(Table::Usernames, &[], None, Direction::Forward)? {
        if let Ok(name) = String::from_utf8(item?.0) {
            out.push(name);
        }
    }
    Ok(out)
}

/// How many users there are.
pub(crate) fn count<S: Store + ?Sized>(txn: &Txn<'_, S>) -> Result<u64, StoreError> {
    let mut n = 0u64;
    for item in txn.scan(Table::Usernames, &[], None, Direction::Forward)? {
        item?;
        n += 1;
    }
    Ok(n)
}

// --- role assignments ---

fn user_prefix(user_id: &str) -> Vec<u8> {
    Key::new().str(user_id).build()
}

fn assignment_key(user_id: &str, role_id: &str) -> Vec<u8> {
    Key::new().str(user_id).bytes(role_id.as_bytes()).build()
}

/// A user's role assignments, by role id.
pub(crate) fn assignments<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    user_id: &str,
) -> Result<Vec<RoleAssignment>, StoreError> {
    let mut out = Vec::new();
    for item in txn.scan_prefix(Table::UserRoles, &user_prefix(user_id), Direction::Forward)? {
        out.push(Txn::<S>::decode(Table::UserRoles, &item?.1)?);
    }
    Ok(out)
}

pub(crate) fn put_assignment(cx: &mut Db<'_, '_>, user_id: &str, assignment: &RoleAssignment) {
    cx.txn.put(
        Table::UserRoles,
        assignment_key(user_id, &assignment.role_id),
        assignment,
    );
}

/// Remove every role assignment of a user; returns how many there were.
pub(crate) fn clear_assignments(cx: &mut Db<'_, '_>, user_id: &str) -> Result<u64, StoreError> {
    let mut keys = Vec::new();
    for item in cx
        .txn
        .scan_prefix(Table::UserRoles, &user_prefix(user_id), Direction::Forward)?
    {
        keys.push(item?.0);
    }
    let n = keys.len() as u64;
    for k in keys {
        cx.txn.delete(Table::UserRoles, k);
    }
    Ok(n)
}

// --- roles ---

pub(crate) fn role<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    role_id: &str,
) -> Result<Option<AuthRole>, StoreError> {
    txn.get(Table::Roles, role_id.as_bytes())
}

pub(crate) fn role_exists<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    role_id: &str,
) -> Result<bool, StoreError> {
    txn.contains(Table::Roles, role_id.as_bytes())
}

pub(crate) fn put_role(cx: &mut Db<'_, '_>, role: &AuthRole) {
    cx.txn.put(Table::Roles, role.id.as_bytes().to_vec(), role);
}

/// Every role, by id (byte order).
pub(crate) fn roles<S: Store + ?Sized>(txn: &Txn<'_, S>) -> Result<Vec<AuthRole>, StoreError> {
    let mut out = Vec::new();
    for item in txn.scan(Table::Roles, &[], None, Direction::Forward)? {
        out.push(Txn::<S>::decode(Table::Roles, &item?.1)?);
    }
    Ok(out)
}

// --- AD group maps ---

fn map_prefix(map: AdGroupMap) -> Vec<u8> {
    Key::new().u8(map.tag()).build()
}

fn group_prefix(map: AdGroupMap, group: &str) -> Vec<u8> {
    Key::new().u8(map.tag()).str(group).build()
}

fn map_key(map: AdGroupMap, group: &str, value: &str) -> Vec<u8> {
    Key::new()
        .u8(map.tag())
        .str(group)
        .bytes(value.as_bytes())
        .build()
}

/// `(group, value)` of a key of `map`.
fn read_map_key(key: &[u8]) -> Option<(String, String)> {
    let mut at = 1;
    let group = read_str(key, &mut at)?;
    let value = std::str::from_utf8(key.get(at..)?).ok()?.to_string();
    Some((group, value))
}

fn corrupt(key: &[u8]) -> StoreError {
    StoreError::Corrupt {
        table: Table::AdGroupMaps,
        reason: format!("bad key {key:?}"),
    }
}

/// Every entry of `map`, in key order (groups by length, then bytes; the reader sorts).
pub(crate) fn map_entries<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    map: AdGroupMap,
) -> Result<Vec<(String, String)>, StoreError> {
    let mut out = Vec::new();
    for item in txn.scan_prefix(Table::AdGroupMaps, &map_prefix(map), Direction::Forward)? {
        let (key, _) = item?;
        out.push(read_map_key(&key).ok_or_else(|| corrupt(&key))?);
    }
    Ok(out)
}

/// The values (role ids or channels) `map` gives one group, by value.
pub(crate) fn group_values<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    map: AdGroupMap,
    group: &str,
) -> Result<Vec<String>, StoreError> {
    let mut out = Vec::new();
    for item in txn.scan_prefix(
        Table::AdGroupMaps,
        &group_prefix(map, group),
        Direction::Forward,
    )? {
        let (key, _) = item?;
        out.push(read_map_key(&key).ok_or_else(|| corrupt(&key))?.1);
    }
    Ok(out)
}

/// Replace `map` whole with `entries` (already normalised).
pub(crate) fn replace_map(
    cx: &mut Db<'_, '_>,
    map: AdGroupMap,
    entries: &[(String, String)],
) -> Result<(), StoreError> {
    let mut keys = Vec::new();
    for item in cx
        .txn
        .scan_prefix(Table::AdGroupMaps, &map_prefix(map), Direction::Forward)?
    {
        keys.push(item?.0);
    }
    for k in keys {
        cx.txn.delete(Table::AdGroupMaps, k);
    }
    for (group, value) in entries {
        cx.txn
            .put_raw(Table::AdGroupMaps, map_key(map, group, value), Vec::new());
    }
    Ok(())
}
