//! The engine's users, roles, directory-group maps and sessions (docs/SPEC.md §13): admin only,
//! typed answers, rejections as 404/409, bad bodies as 400 naming the field.

use crate::harness::*;
use raftlane_client::contract::{
    AuthProvider, CreateSessionRequest, CreateUserRequest, GroupEntry,
};

fn alice() -> Value {
    json!({ "id": "u1", "username": "alice", "auth_provider": "local",
            "display_name": "Alice", "password_hash": "h1", "must_change_password": true })
}

#[tokio::test]
async fn users_are_created_read_changed_and_deleted() {
    let api = start().await;
    let r = api.post("/v1/users", alice()).await;
    ok(&r, 201);
    assert_eq!(r.body["id"], "u1");
    let r = api.get("/v1/users/u1").await;
    ok(&r, 200);
    assert_eq!(r.body["username"], "alice");
    assert_eq!(r.body["auth_provider"], "local");
    assert_eq!(r.body["password_hash"], "h1");
    assert_eq!(r.body["must_change_password"], true);
    assert_eq!(r.body["disabled"], false);
    assert!(
        r.body.get("totp_secret").is_none(),
        "secrets stay out: {}",
        r.body
    );
    let created = r.body["created_at"].as_u64().expect("created_at");
    assert_eq!(r.body["password_changed_at"], created);

    // Taken id, taken username: 409 naming which.
    let r = api.post("/v1/users", alice()).await;
    api_error(&r, 409, "already_exists", Some("user_id"));
    let r = api
        .post(
            "/v1/users",
            json!({ "id": "u2", "username": "alice", "auth_provider": "ad" }),
        )
        .await;
    api_error(&r, 409, "already_exists", Some("username"));
    // Bad bodies name the field.
    let r = api
        .post(
            "/v1/users",
            json!({ "id": "u2", "username": "bob", "auth_provider": "kerberos" }),
        )
        .await;
    api_error(&r, 400, "invalid", Some("auth_provider"));
    let r = api
        .post("/v1/users", json!({ "id": "u2", "auth_provider": "ad" }))
        .await;
    api_error(&r, 400, "invalid", Some("username"));
    let r = api
        .post(
            "/v1/users",
            json!({ "id": "", "username": "bob", "auth_provider": "ad" }),
        )
        .await;
    api_error(&r, 400, "invalid", Some("id"));
    let r = api
        .post(
            "/v1/users",
            json!({ "id": "u2", "username": "bob", "auth_provider": "ad", "role": "x" }),
        )
        .await;
    api_error(&r, 400, "invalid", Some("role"));
    let r = api
        .post(
            "/v1/users",
            json!({ "id": "u2", "username": "bob", "auth_provider": "ad" }),
        )
        .await;
    ok(&r, 201);

    // Lists: by username, all, count only.
    let r = api.get("/v1/users").await;
    ok(&r, 200);
    assert_eq!(r.body["count"], 2);
    let names: Vec<&str> = r.body["users"]
        .as_array()
        .expect("users")
        .iter()
        .map(|u| u["username"].as_str().expect("username"))
        .collect();
    assert_eq!(names, ["alice", "bob"]);
    let r = api.get("/v1/users?username=bob").await;
    ok(&r, 200);
    assert_eq!(
        (r.body["count"].as_u64(), r.body["users"][0]["id"].as_str()),
        (Some(1), Some("u2"))
    );
    let r = api.get("/v1/users?username=nobody").await;
    ok(&r, 200);
    assert_eq!(r.body, json!({ "users": [], "count": 0 }));
    let r = api.get("/v1/users?limit=0").await;
    ok(&r, 200);
    assert_eq!(r.body, json!({ "users": [], "count": 2 }));
    let r = api.get("/v1/users?limit=x").await;
    api_error(&r, 400, "invalid", Some("limit"));
    let r = api.get("/v1/users/nobody").await;
    api_error(&r, 404, "not_found", None);

    // Changes, one command each.
    let change = |c: &'static str, body: Value| {
        let api = &api;
        async move { api.post(&format!("/v1/users/u1/{c}"), body).await }
    };
    let r = change("password", json!({ "password_hash": "h2" })).await;
    ok(&r, 200);
    assert_eq!(
        (r.body["changed"].as_bool(), r.body.get("consumed")),
        (Some(true), None)
    );
    let r = change("disabled", json!({ "disabled": true })).await;
    ok(&r, 200);
    let r = change("profile", json!({ "email": "a@x" })).await;
    ok(&r, 200);
    let r = change(
        "login-failure",
        json!({ "failed_attempts": 3, "locked_until": 99 }),
    )
    .await;
    ok(&r, 200);
    let r = change("channel-scope", json!({ "scope": "[\"lab\"]" })).await;
    ok(&r, 200);
    let r = api.get("/v1/users/u1").await;
    ok(&r, 200);
    assert_eq!(r.body["password_hash"], "h2");
    assert_eq!(r.body["must_change_password"], false);
    assert_eq!(r.body["disabled"], true);
    assert_eq!(r.body["display_name"], Value::Null, "profile replaces both");
    assert_eq!(r.body["email"], "a@x");
    assert_eq!(
        (
            r.body["failed_attempts"].as_u64(),
            r.body["locked_until"].as_u64()
        ),
        (Some(3), Some(99))
    );
    assert_eq!(r.body["channel_scope"], "[\"lab\"]");
    let r = change("login-success", json!({})).await;
    ok(&r, 200);
    let r = api.get("/v1/users/u1").await;
    assert_eq!(
        (r.body["failed_attempts"].as_u64(), &r.body["locked_until"]),
        (Some(0), &Value::Null)
    );
    assert!(r.body["last_login_at"].as_u64().is_some());

    // TOTP: staged, enabled with recovery codes, each consumed once.
    ok(
        &change("totp-secret", json!({ "secret": "S3CRET" })).await,
        200,
    );
    ok(
        &change(
            "totp-enable",
            json!({ "recovery_code_hashes": ["r1", "r2"] }),
        )
        .await,
        200,
    );
    let r = api.get("/v1/users/u1/secrets").await;
    ok(&r, 200);
    assert_eq!(r.body["totp_secret"], "S3CRET");
    assert_eq!(r.body["recovery_code_hashes"], json!(["r1", "r2"]));
    assert_eq!(api.get("/v1/users/u1").await.body["totp_enabled"], true);
    for (body, consumed) in [
        (json!({ "recovery_code_hash": "r1" }), true),
        (json!({ "recovery_code_hash": "r1" }), false),
        (json!({ "totp_step": 5 }), true),
        (json!({ "totp_step": 5 }), false),
        (json!({ "totp_step": 4 }), false),
        (json!({ "totp_step": 6 }), true),
    ] {
        let r = change("consume", body.clone()).await;
        ok(&r, 200);
        assert_eq!(r.body["consumed"], consumed, "{body}");
    }
    let r = api.get("/v1/users/u1/secrets").await;
    assert_eq!(r.body["recovery_code_hashes"], json!(["r2"]));
    assert_eq!(r.body["last_totp_step"], 6);
    let r = change(
        "consume",
        json!({ "totp_step": 7, "recovery_code_hash": "r2" }),
    )
    .await;
    api_error(&r, 400, "invalid", Some("recovery_code_hash"));
    let r = change("consume", json!({})).await;
    api_error(&r, 400, "invalid", Some("recovery_code_hash"));
    ok(&change("totp-disable", json!({})).await, 200);
    let r = api.get("/v1/users/u1/secrets").await;
    assert_eq!(r.body["totp_secret"], Value::Null);

    // Bad changes name the field; an unknown user changes nothing.
    let r = change("password", json!({ "must_change_password": true })).await;
    api_error(&r, 400, "invalid", Some("password_hash"));
    let r = change("disabled", json!({ "disabled": "yes" })).await;
    api_error(&r, 400, "invalid", Some("disabled"));
    let r = change("channel-scope", json!({ "scope": "not json" })).await;
    api_error(&r, 400, "invalid", Some("scope"));
    let r = change("totp-disable", json!({ "extra": 1 })).await;
    api_error(&r, 400, "invalid", Some("extra"));
    let r = change("rename", json!({})).await;
    api_error(&r, 400, "invalid", Some("change"));
    let r = api
        .post("/v1/users/nobody/disabled", json!({ "disabled": true }))
        .await;
    ok(&r, 200);
    assert_eq!(r.body["changed"], false);

    // Delete: with its roles and sessions; a second delete deletes nothing.
    let r = api
        .call(Method::DELETE, "/v1/users/u2", Some(ADMIN), None)
        .await;
    ok(&r, 200);
    assert_eq!(r.body["deleted"], true);
    let r = api
        .call(Method::DELETE, "/v1/users/u2", Some(ADMIN), None)
        .await;
    ok(&r, 200);
    assert_eq!(r.body["deleted"], false);
    api_error(&api.get("/v1/users/u2").await, 404, "not_found", None);

    // The typed client.
    let c = &api.admin;
    c.create_user(&CreateUserRequest {
        id: "u3".into(),
        username: "carol".into(),
        auth_provider: AuthProvider::Ad,
        display_name: None,
        email: None,
        password_hash: None,
        must_change_password: false,
    })
    .await
    .expect("create");
    assert_eq!(c.user("u3").await.expect("user").auth_provider, "ad");
    assert_eq!(c.users(Some("carol")).await.expect("users").count, 1);
    let changed = c
        .change_user("u3", "disabled", &json!({ "disabled": true }))
        .await
        .expect("change");
    assert!(changed.changed);
    assert!(c.delete_user("u3").await.expect("delete").deleted);
    let e = c.user("u3").await.expect_err("gone");
    assert_eq!(e.status(), Some(404));
}

#[tokio::test]
async fn roles_and_directory_groups() {
    let api = start().await;
    ok(&api.post("/v1/users", alice()).await, 201);
    let put = |path: String, body: Value| {
        let api = &api;
        async move { api.call(Method::PUT, &path, Some(ADMIN), Some(body)).await }
    };
    let r = put(
        "/v1/roles/admin".into(),
        json!({ "display_name": "Admin", "builtin": true }),
    )
    .await;
    ok(&r, 200);
    assert_eq!(r.body["id"], "admin");
    let r = put(
        "/v1/roles/ops".into(),
        json!({ "display_name": "Ops", "description": "operators" }),
    )
    .await;
    ok(&r, 200);
    let r = put("/v1/roles/x".into(), json!({ "description": "no name" })).await;
    api_error(&r, 400, "invalid", Some("display_name"));
    let r = api.get("/v1/roles").await;
    ok(&r, 200);
    assert_eq!(
        r.body["roles"],
        json!([
            { "id": "admin", "display_name": "Admin", "description": null, "builtin": true },
            { "id": "ops", "display_name": "Ops", "description": "operators", "builtin": false },
        ])
    );

    // Assignments: unknown roles and users are 404; a set replaces the user's roles.
    let r = put(
        "/v1/users/u1/roles".into(),
        json!({ "role_ids": ["admin", "nope"] }),
    )
    .await;
    api_error(&r, 404, "not_found", None);
    let r = put(
        "/v1/users/nobody/roles".into(),
        json!({ "role_ids": ["admin"] }),
    )
    .await;
    api_error(&r, 404, "not_found", None);
    let r = put(
        "/v1/users/u1/roles".into(),
        json!({ "role_ids": ["ops", "admin"], "assigned_by": "root" }),
    )
    .await;
    ok(&r, 200);
    assert_eq!(r.body["assigned"], 2);
    let r = api.get("/v1/users/u1/roles").await;
    ok(&r, 200);
    assert_eq!(r.body["role_ids"], json!(["admin", "ops"]));
    assert_eq!(r.body["assignments"][0]["assigned_by"], "root");
    ok(
        &put("/v1/users/u1/roles".into(), json!({ "role_ids": ["ops"] })).await,
        200,
    );
    assert_eq!(
        api.get("/v1/users/u1/roles").await.body["role_ids"],
        json!(["ops"])
    );
    let r = api.get("/v1/users/nobody/roles").await;
    ok(&r, 200);
    assert_eq!(r.body["role_ids"], json!([]));

    // Directory-group maps: replaced whole; groups compare as the map normalises them.
    let r = put(
        "/v1/directory-groups/roles".into(),
        json!({ "entries": [{ "group": "Domain Admins", "value": "admin" }, { "group": "Ops", "value": "ops" }] }),
    )
    .await;
    ok(&r, 200);
    assert_eq!(r.body["stored"], 2);
    let r = put(
        "/v1/directory-groups/roles".into(),
        json!({ "entries": [{ "group": "g", "value": "no-such-role" }] }),
    )
    .await;
    api_error(&r, 404, "not_found", None);
    let r = put(
        "/v1/directory-groups/channels".into(),
        json!({ "entries": [{ "group": "Lab Staff", "value": "lab" }] }),
    )
    .await;
    ok(&r, 200);
    let r = api.get("/v1/directory-groups/roles").await;
    ok(&r, 200);
    assert_eq!(r.body["map"], "roles");
    assert_eq!(r.body["entries"].as_array().expect("entries").len(), 2);
    assert!(r.body.get("values").is_none());
    let r = api
        .get("/v1/directory-groups/roles?groups=DOMAIN%20ADMINS,other")
        .await;
    ok(&r, 200);
    assert_eq!(r.body["values"], json!(["admin"]));
    let r = api
        .get("/v1/directory-groups/channels?groups=lab%20staff")
        .await;
    ok(&r, 200);
    assert_eq!(r.body["values"], json!(["lab"]));
    let r = api.get("/v1/directory-groups/scopes").await;
    api_error(&r, 400, "invalid", Some("map"));
    let r = put(
        "/v1/directory-groups/roles".into(),
        json!({ "entries": [{ "group": "g" }] }),
    )
    .await;
    api_error(&r, 400, "invalid", Some("entries[0]"));
    message_contains(&r, "missing field `value`");
    let map = api
        .admin
        .put_group_map(
            "channels",
            vec![GroupEntry {
                group: "B".into(),
                value: "b".into(),
            }],
        )
        .await
        .expect("put map");
    assert_eq!(map.stored, 1);
    assert_eq!(
        api.admin
            .group_map("channels")
            .await
            .expect("map")
            .entries
            .len(),
        1
    );

    // Only the admin role touches these tables.
    let operator = api.token("op", "operator", None).await;
    for (method, path, body) in [
        (Method::GET, "/v1/users", None),
        (Method::GET, "/v1/users/u1", None),
        (Method::POST, "/v1/users", Some(alice())),
        (
            Method::POST,
            "/v1/users/u1/disabled",
            Some(json!({ "disabled": true })),
        ),
        (Method::GET, "/v1/roles", None),
        (
            Method::PUT,
            "/v1/roles/x",
            Some(json!({ "display_name": "X" })),
        ),
        (Method::GET, "/v1/directory-groups/roles", None),
        (Method::GET, "/v1/sessions/abc", None),
        (Method::POST, "/v1/sessions/purge-expired", Some(json!({}))),
    ] {
        let r = api.call(method.clone(), path, Some(&operator), body).await;
        api_error(&r, 403, "forbidden", None);
    }
}

/// Far before the wall clock: a session that expires at T+1000 is live only for requests that
/// say it is earlier than that.
const T: u64 = 1_000_000;

#[tokio::test]
async fn sessions_live_by_the_request_time() {
    let api = start_client_clock().await;
    let at = |ms: u64, method: Method, path: &str, body: Option<Value>| {
        let api = &api;
        let path = path.to_string();
        async move { api.call_at(ms, method, &path, body).await }
    };
    ok(&at(T, Method::POST, "/v1/users", Some(alice())).await, 201);
    let session = |hash: &str, expires_at: u64| json!({ "token_hash": hash, "user_id": "u1", "expires_at": expires_at, "client": "10.0.0.1" });
    let r = at(
        T,
        Method::POST,
        "/v1/sessions",
        Some(session("s1", T + 1000)),
    )
    .await;
    ok(&r, 201);
    assert_eq!(r.body["token_hash"], "s1");
    let r = api.get("/v1/sessions/s1").await;
    ok(&r, 200);
    assert_eq!(
        r.body,
        json!({ "token_hash": "s1", "user_id": "u1", "created_at": T, "expires_at": T + 1000,
                "last_used_at": T, "revoked_at": null, "client": "10.0.0.1", "reauth_at": T,
                "mfa_verified_at": null })
    );
    let r = at(
        T + 1,
        Method::POST,
        "/v1/sessions",
        Some(session("s1", T + 1000)),
    )
    .await;
    api_error(&r, 409, "already_exists", Some("token_hash"));
    let r = at(
        T + 1,
        Method::POST,
        "/v1/sessions",
        Some(json!({ "token_hash": "s9", "user_id": "nobody", "expires_at": T + 9 })),
    )
    .await;
    api_error(&r, 404, "not_found", None);
    let r = at(
        T + 1,
        Method::POST,
        "/v1/sessions",
        Some(json!({ "token_hash": "s9", "user_id": "u1" })),
    )
    .await;
    api_error(&r, 400, "invalid", Some("expires_at"));
    let r = at(T + 2, Method::POST, "/v1/sessions", Some(json!({ "token_hash": "s2", "user_id": "u1", "expires_at": T + 5000, "seed_reauth": false }))).await;
    ok(&r, 201);
    assert_eq!(
        api.get("/v1/sessions/s2").await.body["reauth_at"],
        Value::Null
    );
    api_error(&api.get("/v1/sessions/nope").await, 404, "not_found", None);

    // Live sessions at the request's time.
    let live = |ms: u64| {
        let api = &api;
        async move {
            let r = api
                .call_at(ms, Method::GET, "/v1/users/u1/sessions", None)
                .await;
            ok(&r, 200);
            r.body["sessions"]
                .as_array()
                .expect("sessions")
                .iter()
                .map(|s| s["token_hash"].as_str().expect("hash").to_string())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(live(T + 10).await, ["s2", "s1"], "most recently used first");
    assert_eq!(live(T + 2000).await, ["s2"], "s1 expired by then");

    // Changes.
    let r = at(
        T + 50,
        Method::POST,
        "/v1/sessions/s1/touch",
        Some(json!({})),
    )
    .await;
    ok(&r, 200);
    assert_eq!(r.body["changed"], true);
    assert_eq!(
        api.get("/v1/sessions/s1").await.body["last_used_at"],
        T + 50
    );
    ok(
        &at(
            T + 60,
            Method::POST,
            "/v1/sessions/s2/reauth",
            Some(json!({ "client": "10.0.0.2" })),
        )
        .await,
        200,
    );
    ok(
        &at(T + 70, Method::POST, "/v1/sessions/s2/mfa-verified", None).await,
        200,
    );
    let s2 = api.get("/v1/sessions/s2").await.body;
    assert_eq!(
        (
            s2["reauth_at"].as_u64(),
            s2["client"].as_str(),
            s2["mfa_verified_at"].as_u64()
        ),
        (Some(T + 60), Some("10.0.0.2"), Some(T + 70))
    );
    let r = at(
        T + 80,
        Method::POST,
        "/v1/sessions/s2/revoke",
        Some(json!({})),
    )
    .await;
    assert_eq!(r.body["changed"], true);
    let r = at(
        T + 81,
        Method::POST,
        "/v1/sessions/s2/revoke",
        Some(json!({})),
    )
    .await;
    assert_eq!(r.body["changed"], false, "already revoked");
    let r = at(
        T + 82,
        Method::POST,
        "/v1/sessions/nope/touch",
        Some(json!({})),
    )
    .await;
    assert_eq!(r.body["changed"], false);
    let r = at(
        T + 83,
        Method::POST,
        "/v1/sessions/s1/forget",
        Some(json!({})),
    )
    .await;
    api_error(&r, 400, "invalid", Some("change"));
    let r = at(
        T + 83,
        Method::POST,
        "/v1/sessions/s1/touch",
        Some(json!({ "client": "x" })),
    )
    .await;
    api_error(&r, 400, "invalid", Some("client"));
    assert_eq!(live(T + 90).await, ["s1"]);

    // Revoke all but one, then a cap.
    for (i, hash) in ["s3", "s4", "s5"].into_iter().enumerate() {
        ok(
            &at(
                T + 100 + i as u64,
                Method::POST,
                "/v1/sessions",
                Some(session(hash, T + 9000)),
            )
            .await,
            201,
        );
    }
    let r = at(
        T + 200,
        Method::POST,
        "/v1/users/u1/sessions/revoke",
        Some(json!({ "except_token_hash": "s5" })),
    )
    .await;
    ok(&r, 200);
    assert_eq!(r.body["revoked"], 3, "s1, s3, s4");
    assert_eq!(live(T + 201).await, ["s5"]);
    for (i, hash) in ["s6", "s7"].into_iter().enumerate() {
        ok(
            &at(
                T + 300 + i as u64,
                Method::POST,
                "/v1/sessions",
                Some(session(hash, T + 9000)),
            )
            .await,
            201,
        );
    }
    let r = at(
        T + 400,
        Method::POST,
        "/v1/users/u1/sessions/cap",
        Some(json!({ "keep": 1 })),
    )
    .await;
    ok(&r, 200);
    assert_eq!(r.body["revoked"], 2);
    assert_eq!(live(T + 401).await, ["s7"]);
    let r = at(
        T + 400,
        Method::POST,
        "/v1/users/u1/sessions/cap",
        Some(json!({ "keep": -1 })),
    )
    .await;
    api_error(&r, 400, "invalid", Some("keep"));

    // Purge what expired before the request's time: s1 (T+1000) at T+3000; the rest live on.
    let r = at(T + 3000, Method::POST, "/v1/sessions/purge-expired", None).await;
    ok(&r, 200);
    assert_eq!(r.body["purged"], 1);
    api_error(&api.get("/v1/sessions/s1").await, 404, "not_found", None);
    ok(&api.get("/v1/sessions/s3").await, 200);

    // The typed client, on the client's clock.
    let c = api.admin.with_client_time(T + 4000);
    c.create_session(&CreateSessionRequest {
        token_hash: "s8".into(),
        user_id: "u1".into(),
        expires_at: T + 4500,
        client: None,
        seed_reauth: true,
        at: None,
    })
    .await
    .expect("create");
    assert_eq!(c.session("s8").await.expect("session").created_at, T + 4000);
    let hashes: Vec<String> = c
        .user_sessions("u1")
        .await
        .expect("live")
        .sessions
        .into_iter()
        .map(|s| s.token_hash)
        .collect();
    assert_eq!(hashes, ["s8", "s7"]);
    assert!(
        c.change_session("s8", "touch", None)
            .await
            .expect("touch")
            .changed
    );
    assert_eq!(
        c.revoke_user_sessions("u1", None)
            .await
            .expect("revoke")
            .revoked,
        2
    );
    let later = api.admin.with_client_time(T + 10_000);
    assert_eq!(
        later.purge_expired_sessions().await.expect("purge").purged,
        7
    );

    // Deleting the user deletes its sessions.
    ok(
        &at(
            T + 10_001,
            Method::POST,
            "/v1/sessions",
            Some(session("s9", T + 20_000)),
        )
        .await,
        201,
    );
    let r = at(T + 10_002, Method::DELETE, "/v1/users/u1", None).await;
    assert_eq!(r.body["deleted"], true);
    api_error(&api.get("/v1/sessions/s9").await, 404, "not_found", None);
}

/// A session write with `at` (docs/SPEC.md §13.2) is dated by the caller, on a node without the
/// client clock: an engine host a few seconds behind the cluster reads back exactly its own
/// times, and a time beyond the skew bound is `400 invalid` naming `at`, changing nothing.
#[tokio::test]
async fn session_writes_are_dated_by_the_callers_at() {
    let api = start().await;
    ok(&api.post("/v1/users", alice()).await, 201);
    let behind = now_ms() - 5_000;
    let r = api
        .post(
            "/v1/sessions",
            json!({ "token_hash": "d1", "user_id": "u1", "expires_at": behind + 3_600_000,
                    "client": "10.0.0.1", "at": behind }),
        )
        .await;
    ok(&r, 201);
    let r = api.get("/v1/sessions/d1").await;
    ok(&r, 200);
    assert_eq!(
        r.body,
        json!({ "token_hash": "d1", "user_id": "u1", "created_at": behind,
                "expires_at": behind + 3_600_000, "last_used_at": behind, "revoked_at": null,
                "client": "10.0.0.1", "reauth_at": behind, "mfa_verified_at": null })
    );
    let change = |change: &'static str, body: Value| {
        let api = &api;
        async move { api.post(&format!("/v1/sessions/d1/{change}"), body).await }
    };
    let r = change("touch", json!({ "at": behind + 1 })).await;
    ok(&r, 200);
    assert_eq!(r.body["changed"], true);
    ok(
        &change("mfa-verified", json!({ "at": behind + 2 })).await,
        200,
    );
    ok(
        &change("reauth", json!({ "client": "10.0.0.2", "at": behind + 3 })).await,
        200,
    );
    let s = api.get("/v1/sessions/d1").await.body;
    assert_eq!(
        (
            &s["created_at"],
            &s["last_used_at"],
            &s["mfa_verified_at"],
            &s["reauth_at"],
            &s["client"]
        ),
        (
            &json!(behind),
            &json!(behind + 1),
            &json!(behind + 2),
            &json!(behind + 3),
            &json!("10.0.0.2")
        )
    );

    // Beyond the bound (30 s) either way: refused, naming `at`; nothing changes.
    let far_behind = now_ms() - 120_000;
    let far_ahead = now_ms() + 120_000;
    for at in [far_behind, far_ahead] {
        for name in ["touch", "mfa-verified", "revoke"] {
            api_error(
                &change(name, json!({ "at": at })).await,
                400,
                "invalid",
                Some("at"),
            );
        }
        api_error(
            &change("reauth", json!({ "at": at })).await,
            400,
            "invalid",
            Some("at"),
        );
        let r = api
            .post(
                "/v1/sessions",
                json!({ "token_hash": "d2", "user_id": "u1", "expires_at": at + 3_600_000,
                        "at": at }),
            )
            .await;
        api_error(&r, 400, "invalid", Some("at"));
        let r = api
            .post("/v1/users/u1/sessions/revoke", json!({ "at": at }))
            .await;
        api_error(&r, 400, "invalid", Some("at"));
        let r = api
            .post("/v1/users/u1/sessions/cap", json!({ "keep": 1, "at": at }))
            .await;
        api_error(&r, 400, "invalid", Some("at"));
    }
    assert_eq!(api.get("/v1/sessions/d1").await.body, s);
    api_error(&api.get("/v1/sessions/d2").await, 404, "not_found", None);
    // Not a number: the body is refused naming it.
    api_error(
        &change("touch", json!({ "at": "soon" })).await,
        400,
        "invalid",
        Some("at"),
    );

    // Revoked at the caller's time, by one change or for the whole user.
    ok(
        &api.post(
            "/v1/sessions",
            json!({ "token_hash": "d3", "user_id": "u1", "expires_at": behind + 3_600_000,
                    "at": behind + 10 }),
        )
        .await,
        201,
    );
    ok(&change("revoke", json!({ "at": behind + 20 })).await, 200);
    assert_eq!(
        api.get("/v1/sessions/d1").await.body["revoked_at"],
        behind + 20
    );
    let r = api
        .post("/v1/users/u1/sessions/revoke", json!({ "at": behind + 30 }))
        .await;
    ok(&r, 200);
    assert_eq!(r.body["revoked"], 1);
    assert_eq!(
        api.get("/v1/sessions/d3").await.body["revoked_at"],
        behind + 30
    );
    // Without `at`, the cluster's time, as before.
    ok(
        &api.post(
            "/v1/sessions",
            json!({ "token_hash": "d4", "user_id": "u1", "expires_at": behind + 3_600_000 }),
        )
        .await,
        201,
    );
    let created = api.get("/v1/sessions/d4").await.body["created_at"]
        .as_u64()
        .expect("created_at");
    assert!(created > behind + 4_000, "{created} is the cluster's time");
}
