//! The one rule for how a listing pages: its query's `limit` is a [`PageLimit`] and its
//! `offset` an [`Offset`], in every paged route (messages, dead letters, lanes, approvals,
//! audit rows, users). Each route names its own bounds in the type, e.g. `PageLimit<50>`;
//! a route's `cursor` is the key its list is ordered by, so it stays the route's own type.
//!
//! Asked for no `limit`, a page holds the route's default; asked for less than the route's
//! least it holds that least (1 unless the route says otherwise), asked for more than its most
//! (by default [`MAX_PAGE`]) it holds that most. A limit or offset that is not a number is
//! refused by the query extractor, naming it.
//!
//! Why clamp instead of refusing: clients page with whatever size they like and follow the
//! cursor or offset they are given; a page smaller than asked is already normal at the end of a
//! list, so no client can rely on getting its whole `limit`.

use crate::error::{ApiError, ApiResult};
use serde::{Deserialize, Deserializer};

/// The largest page a listing answers unless the route says otherwise.
pub const MAX_PAGE: usize = 1000;

/// A page size: `DEFAULT` when the query names none (use with `#[serde(default)]`), else what
/// it asks clamped to `MIN..=MAX`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageLimit<const DEFAULT: usize, const MIN: usize = 1, const MAX: usize = MAX_PAGE>(
    usize,
);

/// A limit that may be 0 (the count without any item) and has no bound: the users list, whose
/// answer is every match unless a limit is given.
pub type UnboundedLimit = PageLimit<{ usize::MAX }, 0, { usize::MAX }>;

impl<const DEFAULT: usize, const MIN: usize, const MAX: usize> PageLimit<DEFAULT, MIN, MAX> {
    pub fn get(self) -> usize {
        self.0
    }
}

impl<const DEFAULT: usize, const MIN: usize, const MAX: usize> Default
    for PageLimit<DEFAULT, MIN, MAX>
{
    fn default() -> Self {
        PageLimit(DEFAULT.clamp(MIN, MAX))
    }
}

impl<'de, const DEFAULT: usize, const MIN: usize, const MAX: usize> Deserialize<'de>
    for PageLimit<DEFAULT, MIN, MAX>
{
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let asked = usize::deserialize(d)?;
        Ok(PageLimit(asked.clamp(MIN, MAX)))
    }
}

/// How many items a page skips (`?offset=`; 0 when the query names none, use with
/// `#[serde(default)]`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct Offset(usize);

impl Offset {
    pub fn get(self) -> usize {
        self.0
    }

    /// The offset of a listing whose page examines at most `budget` `items`: an offset at or
    /// past it could only come back empty, so it is refused (naming `offset` and how to page
    /// further) where an empty page would not tell the caller so.
    pub fn within(self, budget: usize, items: &str) -> ApiResult<usize> {
        if self.0 >= budget {
            return Err(ApiError::invalid(
                "offset",
                format!(
                    "must be below {budget} (a page examines at most {budget} {items}); page \
                     further with cursor, the previous page's next_cursor"
                ),
            ));
        }
        Ok(self.0)
    }
}

/// A page size as the document describes it: an integer whose absence means `DEFAULT` (no
/// default for an unbounded one: everything), clamped to the route's bounds.
impl<const DEFAULT: usize, const MIN: usize, const MAX: usize> schemars::JsonSchema
    for PageLimit<DEFAULT, MIN, MAX>
{
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        format!("PageLimit{DEFAULT}_{MIN}_{MAX}").into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        if MAX == usize::MAX {
            return schemars::json_schema!({
                "type": "integer",
                "format": "uint",
                "minimum": 0,
                "description": "Items answered (every match when absent; 0: only the count).",
            });
        }
        let default = Self::default().get();
        schemars::json_schema!({
            "type": "integer",
            "format": "uint",
            "minimum": 0,
            "default": default,
            "description": format!("Items per page: less than {MIN} is {MIN}, more than {MAX} is {MAX}."),
        })
    }
}

/// An offset as the document describes it: a count of items skipped, 0 when absent.
impl schemars::JsonSchema for Offset {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Offset".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "integer",
            "format": "uint",
            "minimum": 0,
            "default": 0,
            "description": "Items the page skips.",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct Q {
        #[serde(default)]
        limit: PageLimit<100>,
        #[serde(default)]
        offset: Offset,
        #[serde(default)]
        all: UnboundedLimit,
    }

    fn query(json: &str) -> Q {
        serde_json::from_str::<Q>(json).unwrap()
    }

    #[test]
    fn absent_zero_and_too_large_limits() {
        assert_eq!(query("{}").limit.get(), 100);
        assert_eq!(query(r#"{"limit": 0}"#).limit.get(), 1);
        assert_eq!(query(r#"{"limit": 7}"#).limit.get(), 7);
        assert_eq!(query(r#"{"limit": 5000}"#).limit.get(), MAX_PAGE);
        assert!(serde_json::from_str::<Q>(r#"{"limit": -1}"#).is_err());
    }

    #[test]
    fn an_unbounded_limit_keeps_zero_and_defaults_to_everything() {
        assert_eq!(query("{}").all.get(), usize::MAX);
        assert_eq!(query(r#"{"all": 0}"#).all.get(), 0);
        assert_eq!(query(r#"{"all": 5000}"#).all.get(), 5000);
    }

    #[test]
    fn offsets_default_to_zero_and_stay_within_a_scan_budget() {
        assert_eq!(query("{}").offset.get(), 0);
        assert_eq!(
            query(r#"{"offset": 9}"#).offset.within(10, "rows").ok(),
            Some(9)
        );
        let e = query(r#"{"offset": 10}"#)
            .offset
            .within(10, "rows")
            .expect_err("at the budget");
        assert_eq!(
            (e.status.as_u16(), e.field.as_deref()),
            (400, Some("offset"))
        );
        assert!(e.message.contains("at most 10 rows"), "{}", e.message);
    }

    /// The query extractor reads a query string's numbers through these types as it does a
    /// plain number (no `flatten`, which would see every value as a string).
    #[test]
    fn query_strings_parse_into_page_members() {
        let parse = |uri: &'static str| {
            let uri = axum::http::Uri::from_static(uri);
            axum::extract::Query::<Q>::try_from_uri(&uri).map(|q| q.0)
        };
        let q = parse("/x?limit=5&offset=3&all=0").expect("parsed");
        assert_eq!((q.limit.get(), q.offset.get(), q.all.get()), (5, 3, 0));
        assert!(parse("/x?offset=x").is_err());
    }
}
