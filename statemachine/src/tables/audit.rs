//! The audit chains: `Audit` (org ‖ seq → [`AuditRow`]) and `AuditHeads` (org → [`AuditHead`]).
//! How a row is hashed is [`crate::model::audit`]. A row's principal, when it is not its actor
//! (docs/SPEC.md §9.8), is kept beside it in `AuditPrincipals` (org ‖ seq → principal) and put
//! back into every row read here.
//!
//! The actor index: `AuditActors` (org ‖ actor ‖ seq → ()) holds every row with an actor
//! appended since the index exists, and `AuditIndexFrom` (org → seq) the seq of the first row
//! appended with it (0 for a chain started since). Rows of a chain older than the index are
//! not in it; [`by_actor`] scans those few instead, so a query never depends on when the
//! cluster was upgraded.

use crate::model::audit::{row_hash, AuditHead, AuditRow};
use crate::storage::keys::{prefix_end, trailing_u64, Key};
use crate::storage::{Direction, Store, StoreError, Table, Txn};
use crate::tables::Db;

fn row_key(org: &str, seq: u64) -> Vec<u8> {
    Key::new().str(org).u64(seq).build()
}

fn head_key(org: &str) -> Vec<u8> {
    Key::new().str(org).build()
}

fn actor_key(org: &str, actor: &str, seq: u64) -> Vec<u8> {
    Key::new().str(org).str(actor).u64(seq).build()
}

pub(crate) fn head<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    org: &str,
) -> Result<AuditHead, StoreError> {
    Ok(txn
        .get(Table::AuditHeads, &head_key(org))?
        .unwrap_or_default())
}

pub(crate) fn put_head(cx: &mut Db<'_, '_>, org: &str, head: &AuditHead) {
    cx.txn.put(Table::AuditHeads, head_key(org), head);
}

/// Append a row to `org`'s chain at `t`, by `actor` (empty: none), and move the head.
pub(crate) fn append(
    cx: &mut Db<'_, '_>,
    actor: &str,
    org: &str,
    action: &str,
    channel: Option<&str>,
    detail: Option<String>,
) -> Result<AuditRow, StoreError> {
    append_via(cx, actor, None, org, action, channel, detail)
}

/// [`append`] for a row whose actor the caller named: `principal`, who wrote it, is recorded
/// beside the actor (and hashed with the row).
pub(crate) fn append_via(
    cx: &mut Db<'_, '_>,
    actor: &str,
    principal: Option<&str>,
    org: &str,
    action: &str,
    channel: Option<&str>,
    detail: Option<String>,
) -> Result<AuditRow, StoreError> {
    let mut tip = head(cx.txn, org)?;
    let mut row = AuditRow {
        seq: tip.count,
        ts: cx.t,
        actor: (!actor.is_empty()).then(|| actor.to_string()),
        action: action.to_string(),
        channel_id: channel.map(str::to_string),
        org: org.to_string(),
        detail,
        prev_hash: tip.head_hash,
        hash: [0; 32],
        principal: principal.map(str::to_string),
    };
    row.hash = row_hash(&row.prev_hash, &row);
    cx.txn.put(Table::Audit, row_key(org, row.seq), &row);
    if let Some(principal) = &row.principal {
        cx.txn
            .put(Table::AuditPrincipals, row_key(org, row.seq), principal);
    }
    if let Some(actor) = &row.actor {
        cx.txn.put_raw(
            Table::AuditActors,
            actor_key(org, actor, row.seq),
            Vec::new(),
        );
    }
    if index_from(cx.txn, org)?.is_none() {
        cx.txn.put(Table::AuditIndexFrom, head_key(org), &row.seq);
    }
    tip.count += 1;
    tip.head_hash = row.hash;
    put_head(cx, org, &tip);
    Ok(row)
}

/// Rows of `org` from `from_seq`, at most `limit`.
pub(crate) fn list<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    org: &str,
    from_seq: u64,
    limit: usize,
) -> Result<Vec<AuditRow>, StoreError> {
    let start = row_key(org, from_seq);
    let end = prefix_end(&head_key(org));
    let mut out = Vec::new();
    for item in txn
        .scan(Table::Audit, &start, end.as_deref(), Direction::Forward)?
        .take(limit)
    {
        out.push(with_principal(
            txn,
            Txn::<S>::decode(Table::Audit, &item?.1)?,
        )?);
    }
    Ok(out)
}

/// Every row of `org`'s chain in seq order, lazily.
pub(crate) fn chain<'a, S: Store + ?Sized>(
    txn: &'a Txn<'_, S>,
    org: &str,
) -> Result<impl Iterator<Item = Result<AuditRow, StoreError>> + 'a, StoreError> {
    let scan = txn.scan_prefix(Table::Audit, &head_key(org), Direction::Forward)?;
    Ok(scan.map(move |item| {
        item.and_then(|(_, v)| with_principal(txn, Txn::<S>::decode(Table::Audit, &v)?))
    }))
}

/// `row` with the principal recorded beside it, if any.
fn with_principal<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    mut row: AuditRow,
) -> Result<AuditRow, StoreError> {
    row.principal = txn.get(Table::AuditPrincipals, &row_key(&row.org, row.seq))?;
    Ok(row)
}

/// Every org that has a chain.
pub(crate) fn orgs<S: Store + ?Sized>(txn: &Txn<'_, S>) -> Result<Vec<String>, StoreError> {
    let mut out = Vec::new();
    for item in txn.scan(Table::AuditHeads, &[], None, Direction::Forward)? {
        let (key, _) = item?;
        if let Some(name) = key.get(4..).and_then(|b| std::str::from_utf8(b).ok()) {
            out.push(name.to_string());
        }
    }
    Ok(out)
}

/// The first seq of `org`'s chain the actor index covers (`None`: no row appended with it yet).
fn index_from<S: Store + ?Sized>(txn: &Txn<'_, S>, org: &str) -> Result<Option<u64>, StoreError> {
    txn.get(Table::AuditIndexFrom, &head_key(org))
}

/// `org`'s rows by `actor` whose action starts with `action_prefix`, newest first, at most
/// `limit`: from the actor index, then, if the chain is older than the index, from a reverse
/// scan of the rows before it.
pub(crate) fn by_actor<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    org: &str,
    actor: &str,
    action_prefix: &str,
    limit: usize,
) -> Result<Vec<AuditRow>, StoreError> {
    let mut out = Vec::new();
    if limit == 0 {
        return Ok(out);
    }
    let prefix = Key::new().str(org).str(actor).build();
    for item in txn.scan_prefix(Table::AuditActors, &prefix, Direction::Reverse)? {
        let (key, _) = item?;
        let Some(seq) = trailing_u64(&key) else {
            continue;
        };
        let Some(row) = txn.get::<AuditRow>(Table::Audit, &row_key(org, seq))? else {
            continue;
        };
        let row = with_principal(txn, row)?;
        if row.action.starts_with(action_prefix) {
            out.push(row);
            if out.len() >= limit {
                return Ok(out);
            }
        }
    }
    let legacy_end = match index_from(txn, org)? {
        Some(from) => from,
        None => head(txn, org)?.count,
    };
    if legacy_end == 0 {
        return Ok(out);
    }
    let start = row_key(org, 0);
    let end = row_key(org, legacy_end);
    for item in txn.scan(Table::Audit, &start, Some(&end), Direction::Reverse)? {
        let row = with_principal(txn, Txn::<S>::decode(Table::Audit, &item?.1)?)?;
        if row.actor.as_deref() == Some(actor) && row.action.starts_with(action_prefix) {
            out.push(row);
            if out.len() >= limit {
                break;
            }
        }
    }
    Ok(out)
}

/// The last `limit` rows of `org`'s chain, newest first.
pub(crate) fn newest<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    org: &str,
    limit: usize,
) -> Result<Vec<AuditRow>, StoreError> {
    let mut out = Vec::new();
    for item in txn
        .scan_prefix(Table::Audit, &head_key(org), Direction::Reverse)?
        .take(limit)
    {
        out.push(with_principal(
            txn,
            Txn::<S>::decode(Table::Audit, &item?.1)?,
        )?);
    }
    Ok(out)
}
