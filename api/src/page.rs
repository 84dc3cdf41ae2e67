//! The server's half of the paging rule: a listing whose page examines a bounded number of
//! items refuses an offset no page could reach. The rule itself (`limit` and `offset`, their
//! defaults and clamping) is the contract's, `raftlane_contract::page`, which clients build
//! their queries with.

use crate::error::{ApiError, ApiResult};
use raftlane_contract::Offset;

/// `offset` of a listing whose page examines at most `budget` `items`: an offset at or past it
/// could only come back empty, so it is refused (naming `offset` and how to page further) where
/// an empty page would not tell the caller so.
pub fn within(offset: Offset, budget: usize, items: &str) -> ApiResult<usize> {
    if offset.get() >= budget {
        return Err(ApiError::invalid(
            "offset",
            format!(
                "must be below {budget} (a page examines at most {budget} {items}); page \
                 further with cursor, the previous page's next_cursor"
            ),
        ));
    }
    Ok(offset.get())
}

#[cfg(test)]
mod tests {
    use super::*;
    use raftlane_contract::{PageLimit, UnboundedLimit};
    use serde::Deserialize;

    #[derive(Deserialize)]
    struct Q {
        #[serde(default)]
        limit: PageLimit<100>,
        #[serde(default)]
        offset: Offset,
        #[serde(default)]
        all: UnboundedLimit,
    }

    #[test]
    fn offsets_stay_within_a_scan_budget() {
        assert_eq!(within(Offset::new(9), 10, "rows").ok(), Some(9));
        let e = within(Offset::new(10), 10, "rows").expect_err("at the budget");
        assert_eq!(
            (e.status.as_u16(), e.field.as_deref()),
            (400, Some("offset"))
        );
        assert!(e.message.contains("at most 10 rows"), "{}", e.message);
    }

    /// The query extractor reads a query string's numbers through the contract's page types as
    /// it does a plain number (no `flatten`, which would see every value as a string).
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
