//! A URL query string built member by member: absent members are left out, values are
//! percent-encoded as path segments are, so a value with `&`, `=` or `#` stays one value.

use raftlane_contract::path::encode_segment;
use std::fmt::Display;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Query {
    pairs: Vec<(&'static str, String)>,
}

impl Query {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `name=value`.
    pub fn set(mut self, name: &'static str, value: impl Display) -> Self {
        self.pairs.push((name, value.to_string()));
        self
    }

    /// Adds `name=value` when there is a value.
    pub fn opt(self, name: &'static str, value: Option<impl Display>) -> Self {
        match value {
            Some(v) => self.set(name, v),
            None => self,
        }
    }

    /// Adds `name=a,b,c` (the API's spelling of a list) when there is a list.
    pub fn list<S: AsRef<str>>(self, name: &'static str, values: Option<&[S]>) -> Self {
        let joined = values.map(|vs| {
            vs.iter()
                .map(|v| v.as_ref().to_string())
                .collect::<Vec<_>>()
                .join(",")
        });
        self.opt(name, joined)
    }

    /// `?a=1&b=2`, or nothing when empty.
    pub fn render(&self) -> String {
        if self.pairs.is_empty() {
            return String::new();
        }
        let parts: Vec<String> = self
            .pairs
            .iter()
            .map(|(k, v)| format!("{k}={}", encode_segment(v)))
            .collect();
        format!("?{}", parts.join("&"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_members_are_left_out_and_values_encoded() {
        let q = Query::new()
            .set("org", "a&b=c")
            .opt("from", None::<u64>)
            .opt("limit", Some(5))
            .list("allowed_channels", Some(&["lab", "adt"][..]));
        assert_eq!(
            q.render(),
            "?org=a%26b%3Dc&limit=5&allowed_channels=lab%2Cadt"
        );
        assert_eq!(Query::new().render(), "");
    }
}
