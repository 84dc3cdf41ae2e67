"""The routes :class:`~raftlane.messagefoundry.RaftlaneStore` calls that the server does not serve
yet (proposed on 2026-12-05 from docs/MESSAGEFOUNDRY.md §2), in one table.

Each entry names the route, the body or query it sends and the answer it reads, and the store
methods that use it. ``clients/python/README.md`` lists the same table ("Routes the store needs
that the server does not serve yet"); ``tests/test_messagefoundry_store.py`` checks that the two
agree. Until a route exists the methods that use it fail with the server's ``404`` (or ``400`` for
a body member the route does not know yet): nothing is emulated on the client.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PROPOSED_ROUTES", "ProposedRoute"]


@dataclass(frozen=True)
class ProposedRoute:
    method: str
    path: str
    #: The body (or query) the store sends and the answer it reads.
    contract: str
    #: The store methods that call it.
    used_by: tuple[str, ...]


PROPOSED_ROUTES: tuple[ProposedRoute, ...] = (
    # --- rows, leases, sweeps ------------------------------------------------------------------
    ProposedRoute(
        "GET",
        "/v1/rows/{id}",
        "answer: the work row as in `GET /v1/messages/{id}` `rows[]` (`id, message_id, stage, "
        "status, payload, claim {owner, lease_expires_at, fence}?, last_fence?, ...`); 404 for an "
        "unknown or consumed row",
        (
            "row_lease",
            "response_body_for_work_row",
            "completions of rows this handle did not claim",
        ),
    ),
    ProposedRoute(
        "POST",
        "/v1/lanes/{stage}/{name}/claim",
        "new body members: `lane_lease: false` (claim the head with no lane lease, neither taken "
        "nor checked, for `owner=None`) and `row_owner` (the row's claim owner when it differs from "
        "`owner`, the lane-lease holder)",
        ("claim_next_fifo",),
    ),
    ProposedRoute(
        "POST",
        "/v1/leases/reclaim",
        "`{stage?}` → `{reclaimed}`: ReclaimExpired (inflight rows whose lease expired go back to "
        "pending, due now, claim cleared)",
        ("reclaim_expired_leases",),
    ),
    ProposedRoute(
        "POST",
        "/v1/leases/reset",
        "`{stage?}` → `{reset}`: every inflight row (of the stage) back to pending regardless of "
        "its lease, due now, claim cleared, attempts kept",
        ("reset_stale_inflight",),
    ),
    ProposedRoute(
        "POST",
        "/v1/leases/recover",
        "`{owner, lane_owner?}` → `{recovered}`: inflight rows whose claim owner is not `owner` "
        "back to pending ignoring their leases, and lane leases not held by `lane_owner` dropped, "
        "in one command",
        ("recover_inflight_on_promotion",),
    ),
    ProposedRoute(
        "POST",
        "/v1/dead-letters/sweep",
        "`{stage, keep: [name]}` (`stage` is `outbound` or `routed`) → `{dead}`: dead-letter the stage's live rows "
        "whose destination (outbound) or handler (routed) is not in `keep`, event `dead`, finalizer",
        ("dead_letter_missing_destinations", "dead_letter_missing_handlers"),
    ),
    # --- producing messages --------------------------------------------------------------------
    ProposedRoute(
        "POST",
        "/v1/channels/{channel}/messages",
        "new body member `deliveries: [{destination, payload}]` (EnqueueMessage: one outbound row "
        "per delivery, `unrouted` when empty)",
        ("enqueue_message",),
    ),
    ProposedRoute(
        "POST",
        "/v1/channels/{channel}/messages",
        "new body members `status` (`filtered` or `error`) and `error?` (RecordReceived: no rows)",
        ("record_received",),
    ),
    ProposedRoute(
        "POST",
        "/v1/rows/{id}/reingress",
        "new body members `child_key` (the id the engine knows the child by), `control_id?`, "
        "`message_type?`, `summary?`, `peek_failed?`; `GET /v1/messages/{child_key}` resolves the "
        "key to the child",
        ("ingress_handoff",),
    ),
    # --- reads ---------------------------------------------------------------------------------
    ProposedRoute(
        "GET",
        "/v1/messages",
        "new query `allowed_channels` (comma-separated) and a `last_event` member on each message",
        ("list_messages",),
    ),
    ProposedRoute(
        "GET",
        "/v1/messages/count",
        "query as `GET /v1/messages` (without limit/offset) → `{count}`",
        ("count_messages",),
    ),
    ProposedRoute(
        "GET",
        "/v1/dead-letters",
        "new query `offset`, `allowed_channels` and `order=newest_failed` (by `updated_at` then id, "
        "descending); each row with its message's `control_id`, `message_type`, `received_at`, "
        "`summary`",
        ("list_dead",),
    ),
    ProposedRoute(
        "GET",
        "/v1/dead-letters/count",
        "query `channel?`, `destination?`, `allowed_channels?` → `{count}`",
        ("count_dead",),
    ),
    ProposedRoute(
        "GET",
        "/v1/state",
        "→ `{namespaces: [{namespace, version}]}`",
        ("open", "converge_state_cache"),
    ),
    ProposedRoute(
        "GET",
        "/v1/state/{namespace}?entries=true",
        "→ `{namespace, version, entries: [{key, value, set_at, message_id}]}` (entries read at "
        "that version)",
        ("open", "converge_state_cache"),
    ),
    ProposedRoute(
        "GET",
        "/v1/reference",
        "→ `{sets: [{name, version, synced_at, row_count}]}`",
        ("open", "converge_reference_cache"),
    ),
    ProposedRoute(
        "PUT",
        "/v1/reference/{name}",
        "`version` as text (the engine's versions are strings such as `v1`); `rows` values are "
        "JSON text",
        ("write_reference_snapshot",),
    ),
    ProposedRoute(
        "POST",
        "/v1/retention/purge",
        "new body member `older_than` (absolute cutoff, ms) instead of the age `older_than_ms`",
        ("purge_message_bodies", "purge_dead_letters", "purge_state"),
    ),
    ProposedRoute(
        "GET",
        "/v1/stats",
        "new members `events` (message events) and `size_bytes` (state on disk)",
        ("db_status",),
    ),
    ProposedRoute(
        "GET",
        "/v1/metrics/connections",
        "query `since`, `rate_window_ms` → `{inbound: [{channel, read, errored, last_at}], "
        "destinations: [{channel, destination, queue_depth, written, dead, oldest_pending_at, "
        "recent_done, last_done_at}]}`",
        ("connection_metrics",),
    ),
    # --- audit and approvals -------------------------------------------------------------------
    ProposedRoute(
        "POST",
        "/v1/audit",
        "new body member `actor` (recorded instead of the token's principal)",
        ("record_audit",),
    ),
    ProposedRoute(
        "GET",
        "/v1/audit/search",
        "query `org`, `actor`, `action_prefix`, `limit` → `{rows}` newest first",
        ("security_events_for_user",),
    ),
    ProposedRoute(
        "POST",
        "/v1/messages/{id}/viewed",
        "`{actor?}` → `{ok, index}`: event `viewed` with the viewer as detail",
        ("record_view",),
    ),
    ProposedRoute(
        "POST",
        "/v1/approvals",
        "new body members `id` (the engine's text id), `requester`, `requested_at`, `expires_at?` "
        "(ms; none = no expiry); `GET /v1/approvals/{id}` and `.../decide` take that id",
        ("create_pending_approval", "get_pending_approval"),
    ),
    ProposedRoute(
        "GET",
        "/v1/approvals",
        "query `status=pending`, `limit` → `{approvals}` pending and unexpired, newest first",
        ("list_pending_approvals",),
    ),
    ProposedRoute(
        "POST",
        "/v1/approvals/{id}/decide",
        "body `{status, approver?, decided_at}` (`status` is `approved`, `rejected` or `expired`) (409 `already_decided` "
        "when it is no longer pending)",
        ("decide_pending_approval",),
    ),
    # --- users, roles, sessions (the AuthStore) ------------------------------------------------
    ProposedRoute(
        "POST",
        "/v1/users",
        "`{id, username, auth_provider, display_name?, email?, password_hash?, "
        "must_change_password}` (409 when the username is taken)",
        ("create_user",),
    ),
    ProposedRoute(
        "GET",
        "/v1/users",
        "query `username?`, `limit?` → `{users, count}`",
        ("get_user_by_username", "list_users", "count_users"),
    ),
    ProposedRoute("GET", "/v1/users/{id}", "→ the user (times in ms)", ("get_user",)),
    ProposedRoute(
        "DELETE",
        "/v1/users/{id}",
        "deletes the user with its role assignments and sessions",
        ("delete_user",),
    ),
    ProposedRoute(
        "POST",
        "/v1/users/{id}/{change}",
        "one command per `change`: `password {password_hash, must_change_password}`, "
        "`disabled {disabled}`, `profile {display_name, email}`, `totp-secret {secret}`, "
        "`totp-enable {recovery_code_hashes}`, `totp-disable {}`, `login-success {}`, "
        "`login-failure {failed_attempts, locked_until}`, `channel-scope {scope}`",
        (
            "set_password",
            "set_user_disabled",
            "update_user_profile",
            "set_totp_secret",
            "enable_totp",
            "disable_totp",
            "record_login_success",
            "record_login_failure",
            "set_user_channel_scope",
        ),
    ),
    ProposedRoute(
        "GET",
        "/v1/users/{id}/secrets",
        "→ `{totp_secret, recovery_code_hashes}`",
        ("get_totp_secret", "get_recovery_code_hashes"),
    ),
    ProposedRoute(
        "POST",
        "/v1/users/{id}/consume",
        "`{recovery_code_hash}` or `{totp_step}` → `{consumed}` (compare-and-set, once "
        "cluster-wide)",
        ("consume_recovery_code_hash", "consume_totp_step"),
    ),
    ProposedRoute(
        "GET",
        "/v1/roles",
        "→ `{roles: [{id, display_name, description, builtin}]}`",
        ("list_roles",),
    ),
    ProposedRoute(
        "PUT",
        "/v1/roles/{id}",
        "`{display_name, description?, builtin}`",
        ("upsert_role",),
    ),
    ProposedRoute(
        "GET",
        "/v1/users/{id}/roles",
        "→ `{role_ids}`",
        ("get_user_role_ids",),
    ),
    ProposedRoute(
        "PUT",
        "/v1/users/{id}/roles",
        "`{role_ids, assigned_by?}` (replaces the user's roles)",
        ("set_user_roles",),
    ),
    ProposedRoute(
        "GET",
        "/v1/directory-groups/{map}",
        "`map` = `roles` or `channels` → `{entries: [{group, value}]}` (group as written)",
        (
            "list_ad_group_role_map",
            "list_ad_group_scope_map",
            "roles_for_ad_groups",
            "channels_for_ad_groups",
        ),
    ),
    ProposedRoute(
        "PUT",
        "/v1/directory-groups/{map}",
        "`{entries: [{group, value}]}` (replaces the whole map; groups compare case-insensitively)",
        ("set_ad_group_role_map", "set_ad_group_scope_map"),
    ),
    ProposedRoute(
        "POST",
        "/v1/sessions",
        "`{token_hash, user_id, expires_at, client?, seed_reauth}`",
        ("create_session",),
    ),
    ProposedRoute(
        "GET", "/v1/sessions/{token_hash}", "→ the session (times in ms)", ("get_session",)
    ),
    ProposedRoute(
        "GET",
        "/v1/users/{id}/sessions",
        "→ `{sessions}` (the user's live sessions at the request's time)",
        ("list_sessions",),
    ),
    ProposedRoute(
        "POST",
        "/v1/sessions/{token_hash}/{change}",
        "`touch {}`, `reauth {client?}`, `mfa-verified {}`, `revoke {}`",
        (
            "touch_session",
            "mark_session_reauthed",
            "mark_session_mfa_verified",
            "revoke_session",
        ),
    ),
    ProposedRoute(
        "POST",
        "/v1/users/{id}/sessions/revoke",
        "`{except_token_hash?}` → `{revoked}`",
        ("revoke_user_sessions",),
    ),
    ProposedRoute(
        "POST",
        "/v1/users/{id}/sessions/cap",
        "`{keep}`: revoke all but the newest `keep` live sessions",
        ("enforce_session_cap",),
    ),
    ProposedRoute(
        "POST",
        "/v1/sessions/purge-expired",
        "`{}` → `{purged}`",
        ("purge_expired_sessions",),
    ),
)
