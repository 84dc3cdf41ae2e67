//! The query types as the server reads them and the document describes them: each is a struct of
//! plain members (so it can be documented as query parameters), reads back what a client wrote,
//! and refuses a value outside a closed set naming the member, as the server's extractor (axum's
//! `Query`: serde_urlencoded, its errors located by serde_path_to_error) reports it.

use raftlane_contract::schema::{JsonSchema, Schemas};
use raftlane_contract::*;
use raftlane_statemachine::model::message::MessageStatus;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};
use std::fmt::Debug;

/// `query` read as the server's extractor reads it; an error as `(member, reason)`.
fn parse<T: DeserializeOwned>(query: &str) -> Result<T, (String, String)> {
    let de = serde_urlencoded::Deserializer::new(form_urlencoded::parse(query.as_bytes()));
    serde_path_to_error::deserialize(de).map_err(|e| (e.path().to_string(), e.inner().to_string()))
}

/// Where a JSON body `value` is refused as a `T`, as the server's body parser names it.
fn refused<T: DeserializeOwned + Debug>(value: Value) -> String {
    let text = value.to_string();
    let mut de = serde_json::Deserializer::from_str(&text);
    let e = serde_path_to_error::deserialize::<_, T>(&mut de).expect_err("refused");
    e.path().to_string()
}

/// `value` written as a client writes it, and read back the same.
fn round_trip<T: Serialize + DeserializeOwned + PartialEq + Debug>(value: &T) -> String {
    let written = serde_urlencoded::to_string(value).expect("a query type encodes");
    assert_eq!(
        &parse::<T>(&written).expect("reads back"),
        value,
        "{written}"
    );
    written
}

/// The document's query parameters of `T`, by name.
fn parameters<T: JsonSchema>(schemas: &mut Schemas) -> Value {
    let list = schemas.query::<T>().expect("a struct of members");
    Value::Object(
        list.into_iter()
            .map(|p| (p["name"].as_str().unwrap_or("").to_string(), p))
            .collect(),
    )
}

#[test]
fn every_query_type_is_documented_as_parameters() {
    let mut s = Schemas::new();
    let names = |v: Value| -> Vec<String> { v.as_object().unwrap().keys().cloned().collect() };
    assert_eq!(
        names(parameters::<MessageQuery>(&mut s)),
        [
            "allowed_channels",
            "channel",
            "consistency",
            "control_id",
            "cursor",
            "limit",
            "message_type",
            "offset",
            "status"
        ]
    );
    assert_eq!(
        names(parameters::<MessageDetailQuery>(&mut s)),
        ["body", "consistency", "record_view", "viewer"]
    );
    assert_eq!(
        names(parameters::<DeadLetterQuery>(&mut s)),
        [
            "allowed_channels",
            "channel",
            "consistency",
            "destination",
            "limit",
            "offset",
            "order",
            "stage"
        ]
    );
    assert_eq!(
        names(parameters::<TrafficQuery>(&mut s)),
        ["consistency", "rate_window_ms", "since"]
    );
    assert_eq!(
        names(parameters::<LaneListQuery>(&mut s)),
        ["consistency", "cursor", "limit", "stage"]
    );
    assert_eq!(
        names(parameters::<ApprovalListQuery>(&mut s)),
        ["consistency", "limit", "status"]
    );
    assert_eq!(
        names(parameters::<UserQuery>(&mut s)),
        ["consistency", "limit", "username"]
    );
    assert_eq!(
        names(parameters::<GroupMapQuery>(&mut s)),
        ["consistency", "groups"]
    );
    assert_eq!(
        names(parameters::<AuditQuery>(&mut s)),
        [
            "action_prefix",
            "actor",
            "consistency",
            "count",
            "from",
            "head",
            "limit",
            "org"
        ]
    );
    assert_eq!(
        names(parameters::<NamespaceQuery>(&mut s)),
        ["consistency", "entries"]
    );
    assert_eq!(names(parameters::<ReadOpts>(&mut s)), ["consistency"]);
}

/// A closed set is a named enum in the document, listing its values; a parameter that names
/// one is that enum itself (no `null`: absence is how a query says "none"); the rest keep
/// their plain schemas and descriptions.
#[test]
fn closed_sets_are_listed_and_parameters_stay_plain() {
    let mut s = Schemas::new();
    let messages = parameters::<MessageQuery>(&mut s);
    let dead = parameters::<DeadLetterQuery>(&mut s);
    let approvals = parameters::<ApprovalListQuery>(&mut s);
    let users = parameters::<UserQuery>(&mut s);
    let mut doc = json!({ "paths": [messages, dead, approvals, users], "components": {} });
    s.finish(&mut doc);
    let [messages, dead, approvals, users] = [0, 1, 2, 3].map(|i| doc["paths"][i].clone());
    let components = &doc["components"]["schemas"];
    let values = |param: &Value| -> Vec<Value> {
        let name = param["schema"]["$ref"]
            .as_str()
            .and_then(|r| r.strip_prefix("#/components/schemas/"))
            .unwrap_or_else(|| panic!("a named enum: {param}"));
        let schema = &components[name];
        match schema.get("enum") {
            Some(e) => e.as_array().cloned().unwrap_or_default(),
            None => schema["oneOf"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|v| v["enum"].as_array().cloned().unwrap_or_default())
                .collect(),
        }
    };
    assert_eq!(
        values(&messages["consistency"]),
        [json!("linearizable"), json!("stale")]
    );
    assert!(messages["consistency"]["description"]
        .as_str()
        .is_some_and(|d| d.starts_with("`stale`")));
    assert_eq!(values(&messages["status"]).len(), MessageStatus::ALL.len());
    assert_eq!(
        values(&dead["stage"]),
        ["ingress", "routed", "outbound", "response", "all"].map(|v| json!(v))
    );
    let mut order = values(&dead["order"]);
    order.sort_by_key(|v| v.to_string());
    assert_eq!(order, [json!("newest_failed"), json!("row_id")]);
    assert_eq!(values(&approvals["status"]), [json!("pending")]);
    assert_eq!(approvals["status"]["required"], json!(true));
    assert_eq!(messages["channel"]["schema"], json!({ "type": "string" }));
    assert_eq!(
        messages["allowed_channels"]["schema"],
        json!({ "type": "string" })
    );
    assert_eq!(messages["limit"]["schema"]["default"], json!(50));
    assert!(users["limit"]["schema"].get("default").is_none());
}

#[test]
fn what_a_client_writes_the_server_reads() {
    let full = MessageQuery {
        channel: Some("a&b=c d".into()),
        status: Some(MessageStatus::Processed),
        message_type: Some("ADT^A01".into()),
        control_id: Some("c,1".into()),
        allowed_channels: Some(["lab", "adt"].into_iter().collect()),
        limit: PageLimit::new(7),
        offset: Offset::new(3),
        cursor: Some(9),
        consistency: Some(Consistency::Stale),
    };
    assert_eq!(
        round_trip(&full),
        "channel=a%26b%3Dc+d&status=processed&message_type=ADT%5EA01&control_id=c%2C1&\
         allowed_channels=lab%2Cadt&limit=7&offset=3&cursor=9&consistency=stale"
    );
    assert_eq!(round_trip(&MessageQuery::default()), "");
    let dead = DeadLetterQuery {
        stage: Some(DeadLetterStage::All),
        order: Some(DeadLetterOrder::NewestFailed),
        ..DeadLetterQuery::default()
    };
    assert_eq!(round_trip(&dead), "stage=all&order=newest_failed");
    let lanes = LaneListQuery {
        stage: Some(Stage::Routed),
        limit: PageLimit::new(5000),
        cursor: Some("routed:x".into()),
        consistency: None,
    };
    assert_eq!(
        round_trip(&lanes),
        "stage=routed&limit=1000&cursor=routed%3Ax"
    );
    assert_eq!(round_trip(&ApprovalListQuery::default()), "status=pending");
    let users = UserQuery {
        limit: UnboundedLimit::new(0),
        ..UserQuery::default()
    };
    assert_eq!(round_trip(&users), "limit=0");
    let groups = GroupMapQuery {
        groups: Some(["a", "b"].into_iter().collect()),
        consistency: None,
    };
    assert_eq!(round_trip(&groups), "groups=a%2Cb");
    let audit = AuditQuery {
        org: Some("clinic".into()),
        count: Some(3),
        head: Some("ab".into()),
        ..AuditQuery::default()
    };
    assert_eq!(round_trip(&audit), "org=clinic&count=3&head=ab");
    let detail = MessageDetailQuery {
        body: Some(true),
        record_view: Some(false),
        viewer: Some("dr x".into()),
        consistency: None,
    };
    assert_eq!(
        round_trip(&detail),
        "body=true&record_view=false&viewer=dr+x"
    );
    round_trip(&TrafficQuery {
        since: Some(1),
        rate_window_ms: Some(2),
        consistency: Some(Consistency::Linearizable),
    });
    round_trip(&NamespaceQuery {
        entries: true,
        consistency: None,
    });
}

/// The server reads the spellings it always read, and refuses any other value with the
/// member's name first, which its extractor turns into `400 invalid` naming the member.
#[test]
fn values_outside_a_closed_set_are_refused_naming_the_member() {
    let q: MessageQuery = parse("status=error&consistency=linearizable").expect("parsed");
    assert_eq!(
        (q.status, q.consistency),
        (Some(MessageStatus::Error), Some(Consistency::Linearizable))
    );
    let q: DeadLetterQuery = parse("stage=response&order=row_id").expect("parsed");
    assert_eq!(
        (q.stage, q.order),
        (
            Some(DeadLetterStage::Response),
            Some(DeadLetterOrder::RowId)
        )
    );
    for (bad, member) in [
        ("status=bogus", "status"),
        ("consistency=eventual", "consistency"),
        ("limit=abc", "limit"),
    ] {
        let (at, why) = parse::<MessageQuery>(bad).expect_err(bad);
        assert_eq!(at, member, "{bad}: {why}");
    }
    for (bad, member) in [("stage=sideways", "stage"), ("order=sideways", "order")] {
        let (at, why) = parse::<DeadLetterQuery>(bad).expect_err(bad);
        assert_eq!(at, member, "{bad}: {why}");
        assert!(why.contains("unknown variant"), "{why}");
    }
    let (at, _) = parse::<LaneListQuery>("stage=all").expect_err("not a lane's stage");
    assert_eq!(at, "stage");
    let (at, _) = parse::<ApprovalListQuery>("status=approved").expect_err("not listed");
    assert_eq!(at, "status");
    let (_, why) = parse::<ApprovalListQuery>("limit=5").expect_err("status is required");
    assert!(why.contains("missing field `status`"), "{why}");
    // Empty items of a list are kept for the route to judge.
    let q: GroupMapQuery = parse("groups=a,,b").expect("parsed");
    assert_eq!(
        q.groups.map(CommaList::into_items),
        Some(vec!["a".into(), String::new(), "b".into()])
    );
}

/// The bodies whose closed sets became enums still read (and write) the spellings they always
/// had, and refuse others naming the member.
#[test]
fn body_enums_keep_their_spellings() {
    let purge: PurgeRequest =
        serde_json::from_value(json!({ "kind": "dead_letters", "older_than_ms": 1 }))
            .expect("parsed");
    assert_eq!(purge.kind, PurgeKind::DeadLetters);
    assert_eq!(
        serde_json::to_value(&purge).expect("encodes"),
        json!({ "kind": "dead_letters", "older_than_ms": 1 })
    );
    let user: CreateUserRequest =
        serde_json::from_value(json!({ "id": "u", "username": "a", "auth_provider": "ad" }))
            .expect("parsed");
    assert_eq!(user.auth_provider, AuthProvider::Ad);
    assert_eq!(
        refused::<PurgeRequest>(json!({ "kind": "everything", "older_than_ms": 0 })),
        "kind"
    );
    assert_eq!(
        refused::<TokenRequest>(json!({ "name": "x", "role": "root" })),
        "role"
    );
    assert_eq!(
        refused::<CreateUserRequest>(
            json!({ "id": "u", "username": "b", "auth_provider": "kerberos" })
        ),
        "auth_provider"
    );
    assert_eq!(
        refused::<ClaimRequest>(
            json!({ "stage": "bogus", "limit": 1, "owner": "w", "ttl_ms": 100 })
        ),
        "stage"
    );
    assert_eq!(
        refused::<SweepRequest>(json!({ "stage": "handler", "keep": [] })),
        "stage"
    );
    assert_eq!(
        refused::<StageScope>(json!({ "stage": "handler" })),
        "stage"
    );
}
