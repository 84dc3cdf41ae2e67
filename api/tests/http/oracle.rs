//! docs/SPEC.md §9.4, ids: a row or a message of a channel outside the caller's scope answers
//! exactly as an id that does not exist (same status, same body but for the id the caller
//! gave, no channel named), reads and writes alike. Row and message ids are sequential: any
//! difference would let a scoped token enumerate the other channels' ids, and a refusal naming
//! the channel would list the channels too.

use crate::harness::*;

/// The caller's channel, and the channel whose ids it must not be able to tell from unused ones.
const MINE: &str = "tenant-mine";
const THEIRS: &str = "tenant-theirs";

/// Every call that names a row by id: the row read, each row action by name, and the batch.
fn row_calls(row: u64) -> Vec<Call> {
    let mut calls = vec![(Method::GET, format!("/v1/rows/{row}"), None)];
    for (action, body) in [
        ("route", json!({ "fence": 1, "handlers": [] })),
        ("handoff", json!({ "fence": 1, "deliveries": [] })),
        ("transform", json!({ "fence": 1, "deliveries": [] })),
        ("done", json!({ "fence": 1 })),
        ("response", json!({ "fence": 1, "body": "r" })),
        ("fail", json!({ "fence": 1, "error": "e" })),
        ("dead", json!({ "fence": 1, "error": "e" })),
        ("dead", json!({ "error": "e" })),
        ("reingress", json!({ "fence": 1, "loopback_channel": MINE })),
        // A body that would be refused as bad input must not tell either.
        ("done", json!({ "fence": "x" })),
    ] {
        calls.push((Method::POST, format!("/v1/rows/{row}/{action}"), Some(body)));
    }
    calls.push((
        Method::POST,
        "/v1/rows/actions".into(),
        Some(json!({ "actions": [{ "row": row, "action": "done", "body": { "fence": 1 } }] })),
    ));
    calls
}

/// Every call that names a message by id.
fn message_calls(message: u64) -> Vec<Call> {
    vec![
        (Method::GET, format!("/v1/messages/{message}"), None),
        (
            Method::GET,
            format!("/v1/messages/{message}?body=true"),
            None,
        ),
        (
            Method::POST,
            format!("/v1/messages/{message}/viewed"),
            Some(json!({})),
        ),
        (Method::POST, format!("/v1/messages/{message}/replay"), None),
    ]
}

/// `r`'s status and body with the id `id` written as `ID`.
fn shape(r: &Resp, id: u64) -> (u16, String) {
    (r.status.as_u16(), r.text().replace(&id.to_string(), "ID"))
}

type Call = (Method, String, Option<Value>);

/// Send `theirs` (on another channel's id) and `unused` (on an id that does not exist) as
/// `token`; they must answer alike, and the first must not name the other channel. Returns
/// the first's status.
async fn compare(
    api: &Api,
    token: &str,
    role: &str,
    theirs: Call,
    unused: Call,
    their_id: u64,
    unused_id: u64,
) -> u16 {
    let a = api
        .call(theirs.0.clone(), &theirs.1, Some(token), theirs.2)
        .await;
    let b = api
        .call(unused.0.clone(), &unused.1, Some(token), unused.2)
        .await;
    assert_eq!(
        shape(&a, their_id),
        shape(&b, unused_id),
        "{role}: {} {} (another channel's) answers unlike {} (no such id)",
        theirs.0,
        theirs.1,
        unused.1
    );
    assert!(
        !a.text().contains(THEIRS),
        "{role}: {} names the other channel: {}",
        theirs.1,
        a.text()
    );
    a.status.as_u16()
}

#[tokio::test]
async fn another_channels_ids_answer_as_ids_that_do_not_exist() {
    let api = start().await;
    // Theirs: a message routed on to an outbound row, which the admin then holds claimed; an
    // ingress row still pending; and one of mine, so that the caller has something of its own.
    let routed = api.message_at(THEIRS, "their-out").await;
    let claimed = api.claim_head("their-out", "their-sender", LONG_TTL).await;
    let pending = api.enqueue(THEIRS, "MSH|pending").await;
    let mine = api.enqueue(MINE, "MSH|mine").await;
    let mut their_rows = vec![claimed.row_id.0];
    for message in [routed, pending] {
        let r = api.get(&format!("/v1/messages/{message}")).await;
        ok(&r, 200);
        for row in r.body["rows"].as_array().expect("rows") {
            their_rows.push(row["id"].as_u64().expect("row id"));
        }
    }
    their_rows.sort_unstable();
    their_rows.dedup();
    let unused_row = their_rows.iter().max().copied().unwrap_or(0) + 1000;
    let unused_message = mine + 1000;

    let mut tokens = Vec::new();
    for role in ["operator", "worker", "viewer"] {
        let token = api
            .token(&format!("oracle-{role}"), role, Some(&[MINE]))
            .await;
        tokens.push((role, token));
    }
    let before = api.digest().await;
    let mut checked = 0;
    for (role, token) in &tokens {
        let role = *role;
        for &row in &their_rows {
            for (theirs, unused) in row_calls(row).into_iter().zip(row_calls(unused_row)) {
                let status = compare(&api, token, role, theirs, unused, row, unused_row).await;
                checked += 1;
                // A worker or an operator reaches rows; the answer is the missing row's 404
                // (inside a 200 for the batch); a viewer is refused by its role on both.
                assert!(matches!(status, 200 | 403 | 404), "{status}");
            }
        }
        for (theirs, unused) in message_calls(routed)
            .into_iter()
            .zip(message_calls(unused_message))
        {
            compare(&api, token, role, theirs, unused, routed, unused_message).await;
            checked += 1;
        }
    }
    assert!(checked >= 3 * (2 * 12 + 4), "{checked} calls compared");
    nothing_proposed(&api, &before, "calls on another channel's ids").await;

    // The rule hides nothing from whoever may see the channel: the same calls on its own row
    // and message are judged on their merits (a stale fence, not a 404).
    let worker = api.token("oracle-mine", "worker", Some(&[MINE])).await;
    let r = api.get_as(&worker, &format!("/v1/messages/{mine}")).await;
    ok(&r, 200);
    let own_row = r.body["rows"][0]["id"].as_u64().expect("own row");
    let r = api
        .post_as(
            &worker,
            &format!("/v1/rows/{own_row}/done"),
            json!({ "fence": 1 }),
        )
        .await;
    assert_ne!(r.status.as_u16(), 404, "{}", r.text());
    assert_ne!(r.status.as_u16(), 403, "{}", r.text());
}
