//! API principals: bearer tokens stored only as SHA-256 hashes, with a role and an optional
//! channel scope. The token never enters the log; the API hashes what a client presents.

use crate::audit;
use crate::command::{Outcome, Rejection};
use crate::ids::Millis;
use crate::keys::Key;
use crate::machine::{ApplyResult, Ctx};
use crate::store::{Store, StoreError, Table};
use crate::txn::Txn;
use crate::validate;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Admin,
    Operator,
    Worker,
    Viewer,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::Operator => "operator",
            Role::Worker => "worker",
            Role::Viewer => "viewer",
        }
    }

    pub fn parse(s: &str) -> Option<Role> {
        [Role::Admin, Role::Operator, Role::Worker, Role::Viewer]
            .into_iter()
            .find(|r| r.as_str() == s)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Principal {
    pub name: String,
    /// Hex SHA-256 of the token.
    pub token_hash: String,
    pub role: Role,
    /// `None` = every channel.
    pub channels: Option<Vec<String>>,
    pub created_at: Millis,
}

impl Principal {
    pub fn may_see_channel(&self, channel: &str) -> bool {
        self.channels
            .as_ref()
            .is_none_or(|c| c.iter().any(|x| x == channel))
    }
}

fn name_key(name: &str) -> Vec<u8> {
    Key::new().str(name).build()
}

pub(crate) fn put(
    cx: &mut Ctx<'_, '_>,
    name: &str,
    token_hash: &str,
    role: Role,
    channels: Option<&[String]>,
) -> ApplyResult<Outcome> {
    validate::name("name", name)?;
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
    if let Some(holder) = cx
        .txn
        .get::<String>(Table::PrincipalTokens, token_hash.as_bytes())?
    {
        if holder != name {
            return Err(
                Rejection::invalid("token_hash", "already assigned to another principal").into(),
            );
        }
    }
    if let Some(old) = cx
        .txn
        .get::<Principal>(Table::Principals, &name_key(name))?
    {
        cx.txn
            .delete(Table::PrincipalTokens, old.token_hash.into_bytes());
    }
    let principal = Principal {
        name: name.to_string(),
        token_hash: token_hash.to_string(),
        role,
        channels: channels.map(<[String]>::to_vec),
        created_at: cx.t,
    };
    cx.txn.put(Table::Principals, name_key(name), &principal);
    cx.txn.put(
        Table::PrincipalTokens,
        token_hash.as_bytes().to_vec(),
        &principal.name,
    );
    audit::record_default(
        cx,
        "principal.put",
        None,
        format!("{name} as {}", role.as_str()),
    )?;
    Ok(Outcome::Done)
}

pub(crate) fn revoke(cx: &mut Ctx<'_, '_>, name: &str) -> ApplyResult<Outcome> {
    let old: Principal = cx
        .txn
        .get(Table::Principals, &name_key(name))?
        .ok_or_else(|| Rejection::UnknownPrincipal(name.to_string()))?;
    cx.txn
        .delete(Table::PrincipalTokens, old.token_hash.into_bytes());
    cx.txn.delete(Table::Principals, name_key(name));
    audit::record_default(cx, "principal.revoke", None, name.to_string())?;
    Ok(Outcome::Done)
}

/// The principal holding a token hash.
pub fn by_token_hash<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    token_hash: &str,
) -> Result<Option<Principal>, StoreError> {
    let Some(name) = txn.get::<String>(Table::PrincipalTokens, token_hash.as_bytes())? else {
        return Ok(None);
    };
    txn.get(Table::Principals, &name_key(&name))
}
