//! The one rule for how many items a listing answers (`?limit=`): a [`PageLimit`] field in a
//! route's query. Asked for nothing, a page holds the route's default; asked for 0 it holds one
//! item, asked for more than [`MAX_PAGE`] it holds [`MAX_PAGE`]. A limit that is not a number
//! is refused by the query extractor, naming `limit`.
//!
//! Why clamp instead of refusing: clients page with whatever size they like and follow the
//! cursor or offset they are given; a page smaller than asked is already normal at the end of a
//! list, so no client can rely on getting its whole `limit`.

use serde::{Deserialize, Deserializer};

/// The largest page any listing answers.
pub const MAX_PAGE: usize = 1000;

/// A page size, `DEFAULT` when the query names none (use with `#[serde(default)]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageLimit<const DEFAULT: usize>(usize);

impl<const DEFAULT: usize> PageLimit<DEFAULT> {
    pub fn get(self) -> usize {
        self.0
    }
}

impl<const DEFAULT: usize> Default for PageLimit<DEFAULT> {
    fn default() -> Self {
        PageLimit(DEFAULT.clamp(1, MAX_PAGE))
    }
}

impl<'de, const DEFAULT: usize> Deserialize<'de> for PageLimit<DEFAULT> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let asked = usize::deserialize(d)?;
        Ok(PageLimit(asked.clamp(1, MAX_PAGE)))
    }
}

/// A page size as the document describes it: an integer whose absence means `DEFAULT`.
impl<const DEFAULT: usize> schemars::JsonSchema for PageLimit<DEFAULT> {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        format!("PageLimit{DEFAULT}").into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let default = Self::default().get();
        schemars::json_schema!({
            "type": "integer",
            "format": "uint",
            "minimum": 0,
            "default": default,
            "description": format!("Items per page: 0 is 1, more than {MAX_PAGE} is {MAX_PAGE}."),
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
    }

    fn limit(json: &str) -> usize {
        serde_json::from_str::<Q>(json).unwrap().limit.get()
    }

    #[test]
    fn absent_zero_and_too_large_limits() {
        assert_eq!(limit("{}"), 100);
        assert_eq!(limit(r#"{"limit": 0}"#), 1);
        assert_eq!(limit(r#"{"limit": 7}"#), 7);
        assert_eq!(limit(r#"{"limit": 5000}"#), MAX_PAGE);
        assert!(serde_json::from_str::<Q>(r#"{"limit": -1}"#).is_err());
    }
}
