//! OpenAPI schemas of the contract's types, and a structural check of JSON values against them.
//!
//! # Why schemars
//! The schemas come from `schemars`' derive, not `utoipa`'s: schemars reads a type's serde
//! attributes through serde's own attribute parser (`serde_derive_internals`), so `rename_all`,
//! `skip_serializing_if`, `default`, `flatten`, `deny_unknown_fields` and adjacently tagged
//! enums give the schema exactly the shape serde gives the wire, from one declaration. It also
//! tells the two directions apart: a member the server always sends is `required` in an answer's
//! schema, while a member a request may leave out is not (`Contract::Serialize` for answers,
//! `Contract::Deserialize` for request bodies). It was already in the dependency tree (through
//! openraft), needs no RocksDB, and only its derive crate is added for it.
//!
//! # Two generators, one set of components
//! Answers and request bodies are generated separately, each with its contract. A type whose
//! two schemas agree is one component; one whose schemas differ (the configuration document:
//! every member is sent, none is required in a request) gets its request schema under
//! `<Name>Input`.

use schemars::generate::{SchemaGenerator, SchemaSettings};
/// The derive and trait the contract's types use, for code that names them in bounds without
/// depending on schemars itself.
pub use schemars::JsonSchema;
use serde_json::{Map, Value};

/// Where components live in the document.
const COMPONENTS: &str = "#/components/schemas/";
/// Where request schemas are parked until [`Schemas::finish`] names them.
const REQUEST_PATH: &str = "/components/requestSchemas";
const REQUEST_REFS: &str = "#/components/requestSchemas/";

/// Collects the schemas an OpenAPI document refers to.
pub struct Schemas {
    answers: SchemaGenerator,
    requests: SchemaGenerator,
}

impl Default for Schemas {
    fn default() -> Self {
        Self::new()
    }
}

impl Schemas {
    pub fn new() -> Self {
        Schemas {
            answers: SchemaSettings::openapi3().for_serialize().into_generator(),
            requests: SchemaSettings::openapi3()
                .for_deserialize()
                .with(|s| s.definitions_path = REQUEST_PATH.into())
                .into_generator(),
        }
    }

    /// The schema of an answer `T` (usually a `$ref` into the components).
    pub fn answer<T: JsonSchema>(&mut self) -> Value {
        self.answers.subschema_for::<T>().to_value()
    }

    /// The schema of a request body `T`. Its `$ref`s are final only after [`Schemas::finish`].
    pub fn request<T: JsonSchema>(&mut self) -> Value {
        self.requests.subschema_for::<T>().to_value()
    }

    /// The OpenAPI `parameters` (`in: query`) of a query string parsed as `T`: one per member of
    /// `T`, with its name, whether it is required, its schema and its doc comment. `T` is a
    /// struct of plain members (what a query string can spell); anything else is
    /// [`NotAQuery`]. Schemas the members refer to are request schemas, named by
    /// [`Schemas::finish`] like a body's.
    pub fn query<T: JsonSchema>(&mut self) -> Result<Vec<Value>, NotAQuery> {
        let not_a_query = || NotAQuery(T::schema_name().into_owned());
        // The type's own schema rather than a `$ref` to it: a query type is no component.
        let mut schema = T::json_schema(&mut self.requests);
        for transform in self.requests.transforms_mut() {
            transform.transform(&mut schema);
        }
        let schema = schema.to_value();
        if schema.get("type").and_then(Value::as_str) != Some("object")
            || COMPOSITIONS.iter().any(|k| schema.get(*k).is_some())
        {
            return Err(not_a_query());
        }
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let Some(members) = schema.get("properties").and_then(Value::as_object) else {
            return Err(not_a_query());
        };
        Ok(members
            .iter()
            .map(|(name, member)| {
                let mut member = member.clone();
                let description = member
                    .as_object_mut()
                    .and_then(|m| {
                        // An absent parameter is how a query says "none": never `null`.
                        m.remove("nullable");
                        m.remove("description")
                    })
                    .unwrap_or(Value::Null);
                let mut parameter = Map::new();
                parameter.insert("name".into(), name.as_str().into());
                parameter.insert("in".into(), "query".into());
                parameter.insert("required".into(), required.contains(&name.as_str()).into());
                if !description.is_null() {
                    parameter.insert("description".into(), description);
                }
                parameter.insert("schema".into(), unwrapped(member));
                Value::Object(parameter)
            })
            .collect())
    }

    /// Put every collected schema into `doc["components"]["schemas"]` and point the `$ref`s of
    /// request schemas anywhere in `doc` at their final names.
    pub fn finish(mut self, doc: &mut Value) {
        let answers = self.answers.take_definitions(true);
        let requests = self.requests.take_definitions(true);
        let mut renames: Vec<(String, String)> = Vec::new();
        let mut schemas = answers.clone();
        for (name, schema) in &requests {
            let target = match answers.get(name) {
                Some(same) if same == schema => name.clone(),
                Some(_) => format!("{name}Input"),
                None => name.clone(),
            };
            renames.push((
                format!("{REQUEST_REFS}{name}"),
                format!("{COMPONENTS}{target}"),
            ));
            schemas.insert(target, schema.clone());
        }
        let mut schemas = Value::Object(schemas);
        rewrite_refs(&mut schemas, &renames);
        rewrite_refs(doc, &renames);
        if let Some(components) = doc.get_mut("components").and_then(Value::as_object_mut) {
            let slot = components
                .entry("schemas")
                .or_insert_with(|| Value::Object(Map::new()));
            if let (Some(slot), Value::Object(new)) = (slot.as_object_mut(), schemas) {
                slot.extend(new);
            }
        }
    }
}

/// A query member's schema without the wrapping the generator gives a `$ref` with siblings or an
/// `Option` of a named type (`allOf: [ref]`, `anyOf: [ref, null]`): once its description has
/// moved to the parameter and `null` is no value a query can spell, the named type itself (e.g.
/// an enum's `$ref`, which lists the allowed values).
fn unwrapped(member: Value) -> Value {
    let Value::Object(m) = &member else {
        return member;
    };
    if m.len() != 1 {
        return member;
    }
    let branches: Vec<&Value> = ["allOf", "anyOf"]
        .iter()
        .filter_map(|k| m.get(*k))
        .filter_map(Value::as_array)
        .flatten()
        .filter(|b| !is_null_schema(b))
        .collect();
    match branches.as_slice() {
        [only] => unwrapped((*only).clone()),
        _ => member,
    }
}

/// A schema that admits only `null` (an `Option`'s other branch).
fn is_null_schema(s: &Value) -> bool {
    s.get("type").and_then(Value::as_str) == Some("null")
        || s.get("enum")
            .and_then(Value::as_array)
            .is_some_and(|e| e.iter().all(Value::is_null))
}

/// A type named as a route's query whose schema is not a struct of members.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0} is not a struct of members, so it cannot be a query")]
pub struct NotAQuery(pub String);

fn rewrite_refs(v: &mut Value, renames: &[(String, String)]) {
    match v {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get_mut("$ref") {
                if let Some((_, to)) = renames.iter().find(|(from, _)| from == r) {
                    *r = to.clone();
                }
            }
            for child in map.values_mut() {
                rewrite_refs(child, renames);
            }
        }
        Value::Array(items) => {
            for child in items {
                rewrite_refs(child, renames);
            }
        }
        _ => {}
    }
}

/// Why a value does not fit its schema: where (a JSON pointer) and what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    pub at: String,
    pub reason: String,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.at, self.reason)
    }
}

/// Whether `value` fits `schema`, whose `$ref`s point into `components` (the document's
/// `components/schemas`).
///
/// Not a full validator, only what holds the contract's types and their schemas together: every
/// member of an object is declared (or the schema allows more), every required member is there,
/// JSON types, `enum`s, `nullable`, and `anyOf`/`oneOf` (some branch fits) and `allOf` (every
/// part fits). A member declared by one part of a composed object (a `#[serde(flatten)]`ed
/// enum next to plain members) counts as declared in the others. Formats, bounds and patterns
/// are not checked.
pub fn conforms(value: &Value, schema: &Value, components: &Value) -> Result<(), Mismatch> {
    check(value, schema, components, "", 0, &[])
}

fn mismatch(at: &str, reason: impl Into<String>) -> Mismatch {
    Mismatch {
        at: if at.is_empty() { "/".into() } else { at.into() },
        reason: reason.into(),
    }
}

/// `$ref` chains deeper than this are a cycle (none of the contract's types nests this deep).
const MAX_DEPTH: usize = 64;

const COMPOSITIONS: [&str; 3] = ["allOf", "anyOf", "oneOf"];

/// `schema` itself when it is not a `$ref`, else what it points at (`None`: dangling).
fn resolve<'a>(schema: &'a Value, components: &'a Value) -> Option<&'a Value> {
    match schema.get("$ref").and_then(Value::as_str) {
        Some(r) => r
            .strip_prefix(COMPONENTS)
            .and_then(|name| components.get(name)),
        None => Some(schema),
    }
}

/// The member names a schema declares itself (`properties`) or through its composed parts.
fn declared(schema: &Value, components: &Value, depth: usize, out: &mut Vec<String>) {
    if depth > MAX_DEPTH {
        return;
    }
    let Some(s) = resolve(schema, components) else {
        return;
    };
    if let Some(props) = s.get("properties").and_then(Value::as_object) {
        out.extend(props.keys().cloned());
    }
    for key in COMPOSITIONS {
        for part in s.get(key).and_then(Value::as_array).into_iter().flatten() {
            declared(part, components, depth + 1, out);
        }
    }
}

fn check(
    value: &Value,
    schema: &Value,
    components: &Value,
    at: &str,
    depth: usize,
    extra: &[String],
) -> Result<(), Mismatch> {
    if depth > MAX_DEPTH {
        return Err(mismatch(at, "schema nests too deep (a $ref cycle?)"));
    }
    let Some(s) = schema.as_object() else {
        // `true` (or a non-object) accepts anything, `false` nothing.
        return if schema == &Value::Bool(false) {
            Err(mismatch(at, "the schema admits no value"))
        } else {
            Ok(())
        };
    };
    if let Some(r) = s.get("$ref").and_then(Value::as_str) {
        let target = r
            .strip_prefix(COMPONENTS)
            .and_then(|name| components.get(name))
            .ok_or_else(|| mismatch(at, format!("$ref {r} does not resolve")))?;
        check(value, target, components, at, depth + 1, extra)?;
    }
    if value.is_null() && nullable(s) {
        return Ok(());
    }
    // Members this object's own properties declare, for its composed parts, and the members
    // every part declares, for the object itself.
    let mut own: Vec<String> = extra.to_vec();
    if let Some(props) = s.get("properties").and_then(Value::as_object) {
        own.extend(props.keys().cloned());
    }
    let mut all_parts = own.clone();
    for key in COMPOSITIONS {
        for part in s.get(key).and_then(Value::as_array).into_iter().flatten() {
            declared(part, components, depth + 1, &mut all_parts);
        }
    }
    if let Some(all) = s.get("allOf").and_then(Value::as_array) {
        let mut siblings = own.clone();
        for part in all {
            declared(part, components, depth + 1, &mut siblings);
        }
        for part in all {
            check(value, part, components, at, depth + 1, &siblings)?;
        }
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(branches) = s.get(key).and_then(Value::as_array) {
            let mut why = Vec::new();
            for b in branches {
                match check(value, b, components, at, depth + 1, &own) {
                    Ok(()) => {
                        why.clear();
                        break;
                    }
                    Err(e) => why.push(e.to_string()),
                }
            }
            if !why.is_empty() {
                return Err(mismatch(
                    at,
                    format!("fits no branch of {key}: [{}]", why.join("; ")),
                ));
            }
        }
    }
    if let Some(options) = s.get("enum").and_then(Value::as_array) {
        if !options.contains(value) {
            return Err(mismatch(at, format!("{value} is not one of {options:?}")));
        }
    }
    if let Some(c) = s.get("const") {
        if c != value {
            return Err(mismatch(at, format!("{value} is not {c}")));
        }
    }
    let typed = |t: &str| check_typed(value, t, s, components, at, depth, &all_parts);
    match s.get("type") {
        None => Ok(()),
        Some(Value::String(t)) => typed(t),
        Some(Value::Array(ts)) => {
            let fits = ts
                .iter()
                .filter_map(Value::as_str)
                .any(|t| (t == "null" && value.is_null()) || typed(t).is_ok());
            if fits {
                Ok(())
            } else {
                typed(ts.iter().find_map(Value::as_str).unwrap_or("null"))
            }
        }
        Some(other) => Err(mismatch(at, format!("unreadable type {other}"))),
    }
}

fn nullable(s: &Map<String, Value>) -> bool {
    s.get("nullable") == Some(&Value::Bool(true))
        || s.get("type") == Some(&Value::String("null".into()))
        || s.get("type")
            .and_then(Value::as_array)
            .is_some_and(|ts| ts.iter().any(|t| t == "null"))
}

fn check_typed(
    value: &Value,
    t: &str,
    s: &Map<String, Value>,
    components: &Value,
    at: &str,
    depth: usize,
    declared_elsewhere: &[String],
) -> Result<(), Mismatch> {
    let fits = match t {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "string" => value.is_string(),
        "array" => {
            let Some(items) = value.as_array() else {
                return Err(mismatch(at, format!("{value} is not an array")));
            };
            if let Some(item_schema) = s.get("items") {
                for (i, item) in items.iter().enumerate() {
                    let here = format!("{at}/{i}");
                    check(item, item_schema, components, &here, depth + 1, &[])?;
                }
            }
            true
        }
        "object" => {
            let Some(members) = value.as_object() else {
                return Err(mismatch(at, format!("{value} is not an object")));
            };
            check_object(members, s, components, at, depth, declared_elsewhere)?;
            true
        }
        other => return Err(mismatch(at, format!("unknown type {other}"))),
    };
    if fits {
        Ok(())
    } else {
        Err(mismatch(at, format!("{value} is not of type {t}")))
    }
}

fn check_object(
    members: &Map<String, Value>,
    s: &Map<String, Value>,
    components: &Value,
    at: &str,
    depth: usize,
    declared_elsewhere: &[String],
) -> Result<(), Mismatch> {
    let empty = Map::new();
    let properties = s
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    for name in s
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if !members.contains_key(name) {
            return Err(mismatch(at, format!("required member '{name}' is missing")));
        }
    }
    let additional = s.get("additionalProperties");
    for (name, member) in members {
        let here = format!("{at}/{name}");
        match (properties.get(name), additional) {
            (Some(p), _) => check(member, p, components, &here, depth + 1, &[])?,
            // Declared by another part of the same composed object, which checks it.
            (None, _) if declared_elsewhere.contains(name) => {}
            (None, Some(Value::Bool(false))) => {
                return Err(mismatch(&here, "member not declared (none may be added)"))
            }
            (None, Some(more)) => check(member, more, components, &here, depth + 1, &[])?,
            // Undeclared and the schema says nothing about others: for the contract's types
            // that is a member its schema forgot (a map schema says `additionalProperties`).
            (None, None) => return Err(mismatch(&here, "member not declared in the schema")),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn components() -> Value {
        json!({
            "Row": {
                "type": "object",
                "required": ["id"],
                "properties": {
                    "id": { "type": "integer" },
                    "note": { "type": "string", "nullable": true },
                    "stage": { "$ref": "#/components/schemas/Stage" },
                },
                "additionalProperties": false,
            },
            "Stage": { "type": "string", "enum": ["ingress", "outbound"] },
        })
    }

    #[test]
    fn members_are_checked_by_name_type_and_requirement() {
        let c = components();
        let row = json!({ "$ref": "#/components/schemas/Row" });
        assert_eq!(conforms(&json!({ "id": 1 }), &row, &c), Ok(()));
        assert_eq!(
            conforms(
                &json!({ "id": 1, "note": null, "stage": "ingress" }),
                &row,
                &c
            ),
            Ok(())
        );
        let e = conforms(&json!({ "note": "x" }), &row, &c).expect_err("missing id");
        assert!(e.reason.contains("'id'"), "{e}");
        let e = conforms(&json!({ "id": 1, "extra": 2 }), &row, &c).expect_err("extra");
        assert_eq!(e.at, "/extra");
        let e = conforms(&json!({ "id": "1" }), &row, &c).expect_err("type");
        assert_eq!(e.at, "/id");
        let e = conforms(&json!({ "id": 1, "stage": "routed" }), &row, &c).expect_err("enum");
        assert_eq!(e.at, "/stage");
        let e = conforms(
            &json!({ "id": 1 }),
            &json!({ "$ref": "#/components/schemas/Nope" }),
            &c,
        )
        .expect_err("dangling ref");
        assert!(e.reason.contains("does not resolve"), "{e}");
    }

    #[test]
    fn an_object_without_additional_properties_still_refuses_undeclared_members() {
        let schema = json!({ "type": "object", "properties": { "a": { "type": "integer" } } });
        assert!(conforms(&json!({ "a": 1 }), &schema, &json!({})).is_ok());
        assert!(conforms(&json!({ "b": 1 }), &schema, &json!({})).is_err());
        let map = json!({ "type": "object", "additionalProperties": { "type": "integer" } });
        assert!(conforms(&json!({ "b": 1 }), &map, &json!({})).is_ok());
        assert!(conforms(&json!({ "b": "x" }), &map, &json!({})).is_err());
    }

    #[test]
    fn some_branch_of_any_of_must_fit() {
        let schema = json!({ "anyOf": [
            { "type": "object", "required": ["ok"], "properties": { "ok": { "type": "boolean" } } },
            { "type": "object", "required": ["n"], "properties": { "n": { "type": "integer" } } },
        ] });
        assert!(conforms(&json!({ "ok": true }), &schema, &json!({})).is_ok());
        assert!(conforms(&json!({ "n": 3 }), &schema, &json!({})).is_ok());
        assert!(conforms(&json!({ "x": 3 }), &schema, &json!({})).is_err());
    }
}
