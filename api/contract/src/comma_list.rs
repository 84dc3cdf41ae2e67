//! A list in a query string, the API's one spelling of a parameter that holds several values:
//! its items joined by commas (`?groups=a,b`), so a list is one parameter and a query stays a
//! struct of plain members.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Items as a comma-separated query value. Read back exactly as split (`a,,b` has an empty
/// item, an empty value is one empty item): what an empty item means is each route's to say,
/// as it was before the list had a type.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommaList(pub Vec<String>);

impl CommaList {
    pub fn items(&self) -> &[String] {
        &self.0
    }

    pub fn into_items(self) -> Vec<String> {
        self.0
    }
}

impl<S: Into<String>> FromIterator<S> for CommaList {
    fn from_iter<I: IntoIterator<Item = S>>(items: I) -> Self {
        CommaList(items.into_iter().map(Into::into).collect())
    }
}

impl Serialize for CommaList {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0.join(","))
    }
}

impl<'de> Deserialize<'de> for CommaList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let joined = String::deserialize(d)?;
        Ok(joined.split(',').collect())
    }
}

/// The document describes the list as what travels: one string.
impl schemars::JsonSchema for CommaList {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        "CommaList".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "string" })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_are_joined_and_split_by_commas() {
        let list: CommaList = ["lab", "adt"].into_iter().collect();
        assert_eq!(serde_json::to_string(&list).unwrap(), r#""lab,adt""#);
        let back: CommaList = serde_json::from_str(r#""lab,,adt""#).unwrap();
        assert_eq!(back.items(), ["lab", "", "adt"]);
        let empty: CommaList = serde_json::from_str(r#""""#).unwrap();
        assert_eq!(empty.into_items(), vec![String::new()]);
    }
}
