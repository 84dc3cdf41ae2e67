//! A call's query string, built from the contract's query types (`raftlane_contract::*Query`,
//! `ReadOpts`): each member goes under the name the contract gives it, so no parameter name is
//! spelled here. Absent members (`None`, a page's default) are left out, a list keeps the API's
//! comma-joined spelling, and values are form-encoded as the server's query extractor decodes
//! them, so a value with `&`, `=`, `#` or `,` stays one value.

use crate::error::ClientError;
use raftlane_contract::{Offset, PageLimit};
use serde::Serialize;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Query {
    /// Encoded `name=value` pairs, `&`-joined, one entry per contract query added.
    parts: Vec<String>,
}

impl Query {
    /// This query with the members of `query` added after its own.
    pub fn with<Q: Serialize>(mut self, query: &Q) -> Result<Self, ClientError> {
        let encoded = serde_urlencoded::to_string(query).map_err(query_error)?;
        if !encoded.is_empty() {
            self.parts.push(encoded);
        }
        Ok(self)
    }

    /// `?a=1&b=2`, or nothing when empty.
    pub fn render(&self) -> String {
        if self.parts.is_empty() {
            return String::new();
        }
        format!("?{}", self.parts.join("&"))
    }
}

/// The page size a caller asked (`None`: the route's default, left out of the query), clamped
/// as the server would clamp it.
pub(crate) fn page_limit<const DEFAULT: usize, const MIN: usize, const MAX: usize>(
    asked: Option<u32>,
) -> PageLimit<DEFAULT, MIN, MAX> {
    asked.map_or_else(PageLimit::default, |n| {
        PageLimit::new(usize::try_from(n).unwrap_or(usize::MAX))
    })
}

/// The items a caller asked a page to skip (`None`: none, left out of the query).
pub(crate) fn offset(asked: Option<u64>) -> Offset {
    Offset::new(asked.map_or(0, |n| usize::try_from(n).unwrap_or(usize::MAX)))
}

/// A query that would not encode (not expected of the contract's query types, whose members
/// are all plain values).
fn query_error(e: serde_urlencoded::ser::Error) -> ClientError {
    ClientError::Decode(format!("query: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use raftlane_contract::{
        Consistency, DeadLetterQuery, DeadLetterStage, MessageQuery, PageLimit, ReadOpts,
    };

    #[test]
    fn absent_members_are_left_out_and_values_encoded() {
        let q = MessageQuery {
            channel: Some("a&b=c d".into()),
            allowed_channels: Some(["lab", "adt"].into_iter().collect()),
            limit: PageLimit::new(5),
            ..MessageQuery::default()
        };
        let rendered = Query::default().with(&q).expect("encodes").render();
        assert_eq!(
            rendered,
            "?channel=a%26b%3Dc+d&allowed_channels=lab%2Cadt&limit=5"
        );
        assert_eq!(Query::default().render(), "");
        let nothing = Query::default()
            .with(&MessageQuery::default())
            .expect("encodes");
        assert_eq!(nothing.render(), "");
    }

    #[test]
    fn enums_go_as_the_contract_spells_them_and_queries_add_up() {
        let dead = DeadLetterQuery {
            stage: Some(DeadLetterStage::All),
            ..DeadLetterQuery::default()
        };
        let stale = ReadOpts {
            consistency: Some(Consistency::Stale),
        };
        let q = Query::default()
            .with(&dead)
            .and_then(|q| q.with(&stale))
            .expect("encodes");
        assert_eq!(q.render(), "?stage=all&consistency=stale");
    }
}
