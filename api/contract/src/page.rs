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
//!
//! Both types are the contract's, so a client builds its query with the same rule the server
//! reads it with: a limit it asks is clamped as the server would clamp it, and a default is
//! left out of the query string (use `skip_serializing_if = "PageLimit::is_default"` and
//! `"Offset::is_zero"` beside `#[serde(default)]`).

use serde::{Deserialize, Deserializer, Serialize, Serializer};

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
    /// The page size a query asking `asked` gets.
    pub fn new(asked: usize) -> Self {
        PageLimit(asked.clamp(MIN, MAX))
    }

    pub fn get(self) -> usize {
        self.0
    }

    /// Whether this is the size a query naming no `limit` gets: a client leaves it out then.
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

impl<const DEFAULT: usize, const MIN: usize, const MAX: usize> Default
    for PageLimit<DEFAULT, MIN, MAX>
{
    fn default() -> Self {
        Self::new(DEFAULT)
    }
}

impl<'de, const DEFAULT: usize, const MIN: usize, const MAX: usize> Deserialize<'de>
    for PageLimit<DEFAULT, MIN, MAX>
{
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        usize::deserialize(d).map(Self::new)
    }
}

impl<const DEFAULT: usize, const MIN: usize, const MAX: usize> Serialize
    for PageLimit<DEFAULT, MIN, MAX>
{
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

/// How many items a page skips (`?offset=`; 0 when the query names none, use with
/// `#[serde(default)]`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Offset(usize);

impl Offset {
    pub fn new(skip: usize) -> Self {
        Offset(skip)
    }

    pub fn get(self) -> usize {
        self.0
    }

    /// Whether the page skips nothing (a query naming no `offset`): a client leaves it out then.
    pub fn is_zero(&self) -> bool {
        self.0 == 0
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

    #[derive(Deserialize, Serialize)]
    struct Q {
        #[serde(default, skip_serializing_if = "PageLimit::is_default")]
        limit: PageLimit<100>,
        #[serde(default, skip_serializing_if = "Offset::is_zero")]
        offset: Offset,
        #[serde(default, skip_serializing_if = "PageLimit::is_default")]
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
    fn offsets_default_to_zero() {
        assert_eq!(query("{}").offset.get(), 0);
        assert_eq!(query(r#"{"offset": 9}"#).offset.get(), 9);
    }

    /// A client's query holds what the server would read: clamped limits, and no member that
    /// only says "the default".
    #[test]
    fn a_client_sends_clamped_limits_and_leaves_defaults_out() {
        let q = Q {
            limit: PageLimit::new(5000),
            offset: Offset::new(3),
            all: UnboundedLimit::new(0),
        };
        assert_eq!(
            serde_json::to_string(&q).unwrap(),
            r#"{"limit":1000,"offset":3,"all":0}"#
        );
        let q = Q {
            limit: PageLimit::new(100),
            offset: Offset::default(),
            all: UnboundedLimit::default(),
        };
        assert_eq!(serde_json::to_string(&q).unwrap(), "{}");
    }
}
