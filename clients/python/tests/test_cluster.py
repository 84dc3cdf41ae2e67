"""The client against real three-node clusters of the raftlane binary (raftlane.testing)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
from openapi_check import route_problems, schema_problems
from pipeline_steps import outbound_row

from raftlane import (
    BadRequestError,
    Client,
    ConflictError,
    ForbiddenError,
    NotFoundError,
    RetryPolicy,
    RowAction,
    StaleFenceError,
    TooLargeError,
    UnauthorizedError,
    VersionMismatchError,
    WrongStatusError,
    client_routes,
)
from raftlane.testing import ClusterHandle, empty_cluster

pytestmark = pytest.mark.cluster

TTL = 30_000


async def to_outbound(client: Client, channel: str, dest: str, raw: str = "MSH|1") -> int:
    """Enqueue on ``channel`` and hand the ingress row on to ``dest``; the message id."""
    sent = await client.enqueue(channel, raw)
    (row,) = await client.claim("ingress", owner="router", ttl_ms=TTL, channel=channel)
    assert (await client.handoff(row.row_id, row.fence, [(dest, f"OUT {raw}")])).applied
    return sent.message_id


# --- the OpenAPI document -------------------------------------------------------------------


async def test_every_client_route_is_served_and_every_served_route_has_a_method(
    client: Client,
) -> None:
    doc = await client.openapi()
    assert doc["openapi"].startswith("3.")
    assert route_problems(doc, client_routes()) == []


async def test_types_fit_the_served_schemas(client: Client) -> None:
    doc = await client.openapi()
    problems, compared = schema_problems(doc, client_routes())
    if compared == 0:
        pytest.skip("the served document has no answer or request-body schemas yet")
    assert problems == []


# --- the pipeline ---------------------------------------------------------------------------


async def test_enqueue_claim_handoff_done(client: Client, name: str) -> None:
    dest = f"{name}-emr"
    sent = await client.enqueue(name, "MSH|1", control_id="c-1", metadata={"k": 1})
    view = await client.message(sent.message_id)
    assert (view.message.channel_id, view.message.status, view.message.control_id) == (
        name,
        "received",
        "c-1",
    )
    assert json.loads(view.message.metadata or "null") == {"k": 1}
    assert [(r.stage, r.status) for r in view.rows] == [("ingress", "pending")]

    (row,) = await client.claim("ingress", owner="w1", ttl_ms=TTL, channel=name)
    assert (row.message_id, row.payload, row.attempts) == (sent.message_id, "MSH|1", 1)
    assert (await client.handoff(row.row_id, row.fence, [(dest, "OUT|1")])).applied
    # A retried handoff of a consumed row changes nothing.
    assert not (await client.handoff(row.row_id, row.fence, [(dest, "OUT|1")])).applied

    (out,) = await client.claim("outbound", owner="w1", ttl_ms=TTL, destination=dest)
    assert (out.payload, out.destination_name) == ("OUT|1", dest)
    assert (await client.done(out.row_id, out.fence)).ok
    with pytest.raises(WrongStatusError):
        await client.done(out.row_id, out.fence)

    view = await client.message(sent.message_id)
    assert view.message.status == "processed"
    kinds = [e.event for e in view.events]
    assert kinds[0] == "received" and "routed" in kinds and kinds[-1] == "delivered"
    listed = await client.list_messages(channel=name)
    assert [m.id for m in listed] == [sent.message_id]
    page = await client.message_page(channel=name, limit=1)
    assert [m.id for m in page.messages] == [sent.message_id]
    if page.next_cursor is not None:
        assert (await client.message_page(channel=name, cursor=page.next_cursor)).messages == []
    # Lists and plain reads carry no body; a body read is recorded as a `viewed` event.
    assert not hasattr(listed[0], "raw") and view.message.raw is None
    assert all(r.payload is None for r in view.rows)
    seen = await client.message(sent.message_id, body=True, viewer="dr.who")
    assert seen.message.raw == "MSH|1" and seen.viewed_index is not None
    last = (await client.message(sent.message_id)).events[-1]
    assert (last.event, last.detail) == ("viewed", "dr.who (via admin)")


async def test_an_idempotency_key_and_a_request_id_each_make_one_message(
    client: Client, name: str
) -> None:
    a = await client.enqueue(name, "x", idempotency_key="k1")
    b = await client.enqueue(name, "x", idempotency_key="k1")
    assert (a.duplicate, b.duplicate, b.message_id) == (False, True, a.message_id)

    # The same write sent twice under one Request-Id is applied once: the repeat gets the first
    # answer (this is what every retry of the client relies on).
    once = client.for_request(f"rid-{name}")
    first = await once.enqueue(name, "y")
    repeat = await once.enqueue(name, "y")
    assert (repeat.message_id, repeat.index) == (first.message_id, first.index)
    assert len(await client.list_messages(channel=name)) == 2


async def test_fail_backoff_dead_letter_replay_and_purge(client: Client, name: str) -> None:
    dest = f"{name}-lis"
    mid = await to_outbound(client, name, dest)
    (out,) = await client.claim("outbound", owner="w", ttl_ms=TTL, destination=dest)
    slow = RetryPolicy(backoff_ms=600_000, multiplier=2.0, max_backoff_ms=600_000)
    failed = await client.fail(out.row_id, out.fence, "timeout", retry=slow)
    assert not failed.dead and failed.next_attempt_at > out.lease_expires_at - TTL
    # Backing off: nothing to claim, and the lane still holds it.
    assert await client.claim("outbound", owner="w", ttl_ms=TTL, destination=dest) == []
    lane = await client.lane("outbound", dest)
    assert (lane.depth, lane.inflight) == (1, 0)
    assert (lane.stage, lane.name) == ("outbound", dest)
    # The listing shows the same lane, paged in key order.
    listed: list[str] = []
    cursor: str | None = None
    while True:
        page = await client.lanes(stage="outbound", limit=50, cursor=cursor)
        listed += [item.lane for item in page.lanes]
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert f"outbound:{dest}" in listed and len(listed) == len(set(listed))
    with pytest.raises(StaleFenceError):
        await client.done(out.row_id, out.fence)

    # Dead-lettered without a fence while pending.
    assert (await client.dead(out.row_id, "poison")).ok
    dead = await client.dead_letters(destination=dest)
    assert [(d.id, d.status, d.last_error) for d in dead] == [(out.row_id, "dead", "poison")]
    assert (await client.message(mid)).message.status == "error"

    assert (await client.replay_dead(destination=dest)).requeued == 1
    assert (await client.message(mid)).message.status == "routed"
    (again,) = await client.claim("outbound", owner="w", ttl_ms=TTL, destination=dest)
    assert (again.row_id, again.attempts) == (out.row_id, 1)
    once = RetryPolicy(backoff_ms=10, multiplier=1.0, max_backoff_ms=10, max_attempts=1)
    assert (await client.fail(again.row_id, again.fence, "refused", retry=once)).dead

    await asyncio.sleep(0.05)
    assert (await client.purge("dead_letters", older_than_ms=0)).purged >= 1
    (purged,) = await client.dead_letters(destination=dest)
    assert purged.last_error is None and not hasattr(purged, "payload")
    (row,) = (await client.message(mid, body=True, record_view=False)).rows
    assert (row.payload, row.status) == ("", "dead")

    # Replay of the message recovers its dead row.
    assert (await client.replay(mid)).requeued == 1
    assert [r.status for r in (await client.message(mid)).rows] == ["pending"]


async def test_fifo_lane_order_leases_and_fences(client: Client, name: str) -> None:
    ids = [(await client.enqueue(name, f"m{i}")).message_id for i in range(3)]
    first = await client.claim_fifo("ingress", name, owner="a", ttl_ms=TTL)
    assert first.item is not None and first.item.message_id == ids[0]

    busy = await client.claim_fifo("ingress", name, owner="b", ttl_ms=TTL)
    assert (busy.item, busy.reason, busy.holder) == (None, "lane_busy", "a")
    # A retried claim gets the owner's own row back under the same fence.
    retried = await client.claim_fifo("ingress", name, owner="a", ttl_ms=TTL)
    assert retried.item is not None
    assert (retried.item.row_id, retried.item.fence) == (first.item.row_id, first.item.fence)
    with pytest.raises(StaleFenceError) as stale:
        await client.done(first.item.row_id, first.item.fence + 1)
    assert stale.value.code == "stale_fence" and stale.value.status == 409

    second = await client.done_then_claim_next(
        first.item.row_id, first.item.fence, owner="a", ttl_ms=TTL
    )
    assert second.item is not None and second.item.message_id == ids[1]
    lane = await client.lane("ingress", name)
    assert (lane.depth, lane.inflight) == (1, 1)
    assert lane.holder is not None and lane.holder.owner == "a"
    assert await client.renew([second.item.row_id], owner="a", ttl_ms=TTL) == 1
    assert await client.renew([second.item.row_id], owner="b", ttl_ms=TTL) == 0

    assert await client.release_lane("ingress", name, owner="a") is True
    assert await client.release_lane("ingress", name, owner="a") is False
    # Released, but a's live row still keeps the lane from b (it would be overtaken).
    still = await client.claim_fifo("ingress", name, owner="b", ttl_ms=TTL)
    assert (still.item, still.reason) == (None, "lane_busy")
    await client.done(second.item.row_id, second.item.fence)
    third = await client.claim_fifo("ingress", name, owner="b", ttl_ms=TTL)
    assert third.item is not None and third.item.message_id == ids[2]
    await client.done(third.item.row_id, third.item.fence)
    empty = await client.claim_fifo("ingress", name, owner="b", ttl_ms=TTL)
    assert (empty.item, empty.reason) == (None, "empty")


async def test_route_transform_state_and_reference(client: Client, name: str) -> None:
    handler, dest, ns = f"{name}-h", f"{name}-out", f"{name}-ns"
    sent = await client.enqueue(name, "MSH|ADT")
    (row,) = await client.claim("ingress", owner="r", ttl_ms=TTL, channel=name)
    assert (await client.route(row.row_id, row.fence, [(handler, "P1")])).applied
    (routed,) = await client.claim("routed", owner="t", ttl_ms=TTL, channel=name)
    assert (routed.handler_name, routed.payload) == (handler, "P1")
    t = await client.transform(
        routed.row_id, routed.fence, [(dest, "T1")], state_ops=[(ns, "mrn", {"n": 1})]
    )
    assert t.applied
    assert (await client.namespace(ns)).version == 1
    entry = await client.state_entry(ns, "mrn")
    assert (entry.value, entry.message_id) == ({"n": 1}, sent.message_id)
    with pytest.raises(NotFoundError):
        await client.state_entry(ns, "absent")

    written = await client.put_reference(name, 3, {"a": "1", "b": "2"})
    assert written.row_count == 2
    ref = await client.reference(name)
    assert (ref.version, ref.rows, ref.row_count) == (3, {"a": "1", "b": "2"}, 2)


async def test_response_capture_and_reingress(client: Client, name: str) -> None:
    dest, loop = f"{name}-partner", f"{name}-loop"
    mid = await to_outbound(client, name, dest)
    (out,) = await client.claim("outbound", owner="w", ttl_ms=TTL, destination=dest)
    assert (await client.respond(out.row_id, out.fence, "ACK|1", "AA", reingress_to=loop)).ok
    view = await client.message(mid, body=True, record_view=False)
    assert [(r.destination, r.response_seq, r.body, r.outcome) for r in view.responses] == [
        (dest, 1, "ACK|1", "AA")
    ]
    (resp,) = await client.claim("response", owner="w", ttl_ms=TTL, channel=loop)
    child = (await client.reingress(resp.row_id, resp.fence, loop)).child_message_id
    assert child is not None
    cv = await client.message(child, body=True, record_view=False)
    assert (cv.message.channel_id, cv.message.raw) == (loop, "ACK|1")
    assert cv.message.correlation is not None and cv.message.correlation.correlation_id == mid


async def test_cancel_and_batched_row_actions(client: Client, name: str) -> None:
    dest = f"{name}-q"
    for i in range(3):
        await to_outbound(client, name, dest, f"m{i}")
    assert await client.cancel(dest, top_only=True) == 1
    assert (await client.lane("outbound", dest)).depth == 2
    rows = await client.claim("outbound", owner="w", ttl_ms=TTL, destination=dest, limit=10)
    assert len(rows) == 2
    results = await client.row_actions(
        [
            RowAction.done(rows[0].row_id, rows[0].fence),
            RowAction.done(rows[1].row_id, rows[1].fence + 1),
        ]
    )
    assert results[0].ok and results[0].answer is not None and results[0].answer["ok"] is True
    assert isinstance(results[1].error, StaleFenceError)
    assert await client.cancel(dest) == 0, "inflight rows are not cancelled"


async def test_config_compare_and_set(client: Client, name: str) -> None:
    current = await client.config()
    # "*" keeps every channel taking messages: the session's other tests enqueue on their own.
    doc = {"channels": {name: {"description": "lab results"}, "*": {}}}
    written = await client.put_config(current.version, doc)
    assert written.version == current.version + 1
    with pytest.raises(VersionMismatchError) as stale:
        await client.put_config(current.version, {})
    assert (stale.value.status, stale.value.current_version) == (412, written.version)
    now = await client.config()
    assert (now.version, now.config["channels"][name]["description"], now.set_by) == (
        written.version,
        "lab results",
        "admin",
    )
    assert (await client.config_version(current.version)).version == current.version
    with pytest.raises(NotFoundError):
        await client.config_version(written.version + 100)
    with pytest.raises(BadRequestError) as bad:
        await client.put_config(written.version, {"nonsense": 1})
    assert bad.value.code == "invalid"


async def test_audit_chain_anchor_seal_and_verify(client: Client, name: str) -> None:
    a1 = await client.audit_append("test.one", org=name, detail="first")
    a2 = await client.audit_append("test.two", org=name, channel=name)
    assert (a1.seq, a2.seq) == (0, 1)
    rows = await client.audit_list(name)
    assert [r.action for r in rows] == ["test.one", "test.two"]
    assert rows[0].prev_hash == "0" * 64 and rows[1].prev_hash == rows[0].hash == a1.hash
    assert (rows[0].actor, rows[1].channel) == ("admin", name)
    anchor = await client.audit_anchor(name)
    assert (anchor.count, anchor.head, anchor.era) == (2, a2.hash, 0)

    seal = await client.audit_seal(name)
    assert seal.seq == 2
    ok = await client.audit_verify(name, anchor=anchor)
    assert (ok.ok, ok.count, ok.first_bad_seq) == (True, 3, None)
    forged = await client.audit_verify(name, anchor=(2, a1.hash))
    assert not forged.ok and forged.reason is not None
    with pytest.raises(BadRequestError) as no_org:
        await client.request("GET", "/v1/audit")
    assert no_org.value.field == "org"


async def test_errors_are_typed(client: Client, name: str) -> None:
    with pytest.raises(BadRequestError) as bad:
        await client.claim_fifo("ingress", name, owner="w", ttl_ms=0)
    assert (bad.value.status, bad.value.code, bad.value.field) == (400, "invalid", "ttl_ms")
    with pytest.raises(BadRequestError) as stage:
        await client.claim("sideways", owner="w", ttl_ms=TTL)
    assert stage.value.field == "stage"
    with pytest.raises(NotFoundError) as missing:
        await client.message(10**12)
    assert missing.value.code == "not_found"
    with pytest.raises(NotFoundError):
        await client.request("POST", "/v1/rows/1/explode", json={})
    with pytest.raises(UnauthorizedError) as unauth:
        await client.with_token("not-a-token").stats()
    assert unauth.value.code == "unauthorized"

    with pytest.raises(BadRequestError) as kind:
        await client.purge("everything", older_than_ms=0)
    assert kind.value.field == "kind"
    with pytest.raises(BadRequestError) as addr:
        await client.add_learner(9, "no port")
    assert addr.value.field == "addr"
    with pytest.raises(ConflictError) as keyring:
        await client.rotate_keys()
    assert keyring.value.code == "no_keyring"

    viewer = await client.create_token(f"{name}-viewer", "viewer")
    assert viewer.token.startswith("rl_")
    with pytest.raises(ForbiddenError) as forbidden:
        await client.with_token(viewer.token).enqueue(name, "x")
    assert forbidden.value.code == "forbidden"


async def test_tokens_scope_and_revocation(client: Client, name: str) -> None:
    created = await client.create_token(f"{name}-w", "worker", channels=[name])
    worker = client.with_token(created.token)
    assert (await worker.enqueue(name, "ok")).duplicate is False
    with pytest.raises(ForbiddenError):
        await worker.enqueue(f"{name}-other", "no")
    listed = {p.name: p for p in await client.tokens()}
    assert listed[f"{name}-w"].role == "worker" and listed[f"{name}-w"].channels == [name]
    assert (await client.revoke_token(f"{name}-w")).revoked
    with pytest.raises(UnauthorizedError):
        await worker.enqueue(name, "after revocation")


async def test_approvals_need_another_principal(client: Client, name: str) -> None:
    op = await client.create_token(f"{name}-op", "operator")
    made = await client.create_approval("config.change", params={"why": name}, ttl_ms=60_000)
    with pytest.raises(ForbiddenError) as own:
        await client.decide_approval(made.id, True)
    assert own.value.code == "self_approval"
    decided = await client.with_token(op.token).decide_approval(made.id, True)
    assert (decided.id, decided.approved) == (made.id, True)
    with pytest.raises(ConflictError) as twice:
        await client.with_token(op.token).decide_approval(made.id, False)
    assert twice.value.code == "already_decided"
    a = await client.approval(made.id)
    assert (a.status, a.approver, a.requester) == ("approved", f"{name}-op", "admin")
    assert json.loads(a.params) == {"why": name}


async def test_the_engines_users_roles_and_sessions(client: Client, name: str) -> None:
    """The engine's auth records (docs/SPEC.md §13.6) answer typed, as the server shapes them."""
    made = await client.create_user({"id": name, "username": name, "auth_provider": "local"})
    assert made.id == name
    with pytest.raises(ConflictError):
        await client.create_user({"id": name, "username": f"{name}-2", "auth_provider": "ad"})
    user = await client.get_user(name)
    assert (user.username, user.auth_provider, user.disabled, user.email) == (
        name,
        "local",
        False,
        None,
    )
    listed = await client.list_users(username=name)
    assert ([u.id for u in listed.users], listed.count) == ([name], 1)
    assert (await client.list_users(limit=0)).users == []

    changed = await client.change_user(name, "profile", {"display_name": "Dr Who"})
    assert changed.changed and changed.consumed is None
    assert (await client.get_user(name)).display_name == "Dr Who"
    await client.change_user(name, "totp-enable", {"recovery_code_hashes": ["h1", "h2"]})
    secrets = await client.user_secrets(name)
    assert (secrets.recovery_code_hashes, secrets.totp_secret) == (["h1", "h2"], None)
    consume = {"recovery_code_hash": "h1"}
    assert (await client.change_user(name, "consume", consume)).consumed is True
    assert (await client.change_user(name, "consume", consume)).consumed is False

    role = f"{name}-role"
    assert (await client.put_role(role, "A role", description="for tests")).id == role
    assert any(
        (r.id, r.description, r.builtin) == (role, "for tests", False)
        for r in (await client.list_roles()).roles
    )
    assert (await client.set_user_roles(name, [role, role], assigned_by="admin")).assigned == 1
    roles = await client.user_roles(name)
    assert roles.role_ids == [role]
    assert [(a.role_id, a.assigned_by) for a in roles.assignments] == [(role, "admin")]
    assert (await client.put_group_map("roles", [(f"{name}-Group", role)])).stored == 1
    groups = await client.group_map("roles", groups=[f"{name}-group"])
    assert [e.value for e in groups.entries] == [role] and groups.values == [role]
    assert (await client.group_map("roles")).values is None

    far = int(time.time() * 1000) + 3_600_000
    for token_hash in (f"{name}-s1", f"{name}-s2", f"{name}-s3"):
        body = {"token_hash": token_hash, "user_id": name, "expires_at": far, "client": "pytest"}
        assert (await client.create_session(body)).token_hash == token_hash
    s1 = await client.get_session(f"{name}-s1")
    assert (s1.user_id, s1.client, s1.revoked_at) == (name, "pytest", None)
    assert s1.mfa_verified_at is None
    assert s1.reauth_at == s1.created_at
    assert (await client.change_session(f"{name}-s1", "mfa-verified")).changed
    assert (await client.get_session(f"{name}-s1")).mfa_verified_at is not None
    assert not (await client.change_session(f"{name}-none", "touch")).changed
    live = await client.user_sessions(name)
    assert sorted(s.token_hash for s in live.sessions) == [f"{name}-s1", f"{name}-s2", f"{name}-s3"]
    assert (await client.cap_user_sessions(name, 2)).revoked == 1
    revoked = await client.revoke_user_sessions(name, except_token_hash=f"{name}-s3")
    assert revoked.revoked == 1
    assert [s.token_hash for s in (await client.user_sessions(name)).sessions] == [f"{name}-s3"]
    assert (await client.purge_expired_sessions()).purged >= 0

    gone = await client.delete_user(name)
    assert gone.deleted and not (await client.delete_user(name)).deleted
    with pytest.raises(NotFoundError):
        await client.get_user(name)
    with pytest.raises(NotFoundError):
        await client.get_session(f"{name}-s3")


async def test_a_row_and_an_actors_audit_rows_answer_typed(client: Client, name: str) -> None:
    await client.enqueue(name, "MSH|1")
    (claimed,) = await client.claim("ingress", owner="w1", ttl_ms=TTL, channel=name)
    detail = await client.row(claimed.row_id)
    row = detail.row
    assert (row.id, row.stage, row.status, row.payload) == (
        claimed.row_id,
        "ingress",
        "inflight",
        "MSH|1",
    )
    assert row.claim is not None and (row.claim.owner, row.claim.fence) == ("w1", claimed.fence)
    assert (await client.done(claimed.row_id, claimed.fence)).ok
    done = (await client.row(claimed.row_id)).row
    assert (done.status, done.claim, done.last_fence) == ("done", None, claimed.fence)

    await client.audit_append("test.one", org=name)
    await client.audit_append("other.two", org=name)
    found = await client.audit_search(name, "admin", action_prefix="test.")
    assert found.org == name
    assert [(r.action, r.actor) for r in found.rows] == [("test.one", "admin")]
    assert [r.action for r in (await client.audit_search(name, "admin")).rows] == [
        "other.two",
        "test.one",
    ]


async def test_configured_channels_take_messages_and_refuse_others(
    client: Client, name: str
) -> None:
    """SPEC §6.1: a config that names channels refuses a message on another with a 404 naming
    it; "*" (or an empty section) takes any again."""
    current = await client.config()
    only = {**current.config, "channels": {name: {}}}
    written = await client.put_config(current.version, only)
    try:
        assert (await client.enqueue(name, "configured")).message_id >= 0
        before = await client.count_messages(channel=f"{name}-other")
        with pytest.raises(NotFoundError) as refused:
            await client.enqueue(f"{name}-other", "not configured")
        assert (refused.value.status, refused.value.code) == (404, "not_found")
        assert refused.value.field == "channel"
        assert f"'{name}-other'" in str(refused.value)
        assert await client.count_messages(channel=f"{name}-other") == before
    finally:
        # The shared cluster goes back to taking any channel.
        await client.put_config(written.version, {**only, "channels": {"*": {}}})
    assert (await client.enqueue(f"{name}-other", "open again")).message_id >= 0


async def test_dual_control_uses_an_approval_once(client: Client, name: str) -> None:
    """SPEC §9.5: a purge the config lists needs another principal's approval, used once."""
    alice = client.with_token((await client.create_token(f"{name}-alice", "operator")).token)
    bob = client.with_token((await client.create_token(f"{name}-bob", "operator")).token)
    current = await client.config()
    listed = {**current.config, "approvals_required": ["purge"]}
    written = await client.put_config(current.version, listed)
    try:
        with pytest.raises(ForbiddenError) as needed:
            await alice.purge("state", older_than=0)
        assert needed.value.code == "approval_required"
        made = await alice.create_approval(
            "purge", params={"kind": "state", "older_than": 0}, ttl_ms=60_000
        )
        await bob.decide_approval(made.id, True)
        assert (await alice.purge("state", older_than=0, approval=made.id)).purged >= 0
        assert (await client.approval(made.id)).status == "consumed"
        with pytest.raises(ConflictError) as again:
            await alice.purge("state", older_than=0, approval=made.id)
        assert again.value.code == "approval_not_usable"
    finally:
        # Lifting the requirement takes purge off the list, which the list guards itself: it
        # needs its own approval (SPEC §9.5), and then the shared cluster goes back as it was.
        back = {
            **listed,
            "approvals_required": sorted(current.config.get("approvals_required", [])),
        }
        with pytest.raises(ForbiddenError) as unlisting:
            await client.put_config(written.version, back)
        assert unlisting.value.code == "approval_required"
        lift = await alice.create_approval(
            "put_config",
            params={"expected_version": written.version, "config": back},
            ttl_ms=60_000,
        )
        await bob.decide_approval(lift.id, True)
        await alice.put_config(written.version, back, approval=lift.id)


async def test_cluster_views(client: Client, cluster: ClusterHandle, name: str) -> None:
    await client.enqueue(name, "counted")
    status = await client.cluster()
    assert status.leader_id in {m.id for m in status.membership}
    assert len(status.membership) == 3
    assert (await client.digest()).digest
    stats = await client.stats()
    assert stats.messages >= 1 and stats.rows.get("ingress", {}).get("pending", 0) >= 1
    assert stats.last_applied >= status.last_applied
    assert (await client.healthz()).status == "ok"
    for endpoint in cluster.endpoints:
        assert (await client.readyz(endpoint)).ready
    assert "raftlane_last_applied" in await client.metrics()


async def test_snapshot_and_backup(client: Client, name: str, tmp_path: Path) -> None:
    sent = await client.enqueue(name, "kept")
    taken = await client.snapshot()
    assert taken.index >= sent.index
    target = tmp_path / "cluster.backup"
    saved = await client.backup(target)
    assert saved.index >= sent.index and saved.path == str(target)
    data = target.read_bytes()
    assert saved.bytes == len(data) and data.startswith(b"RLSNAP01")
    assert target.stat().st_mode & 0o777 == 0o600
    assert not (tmp_path / "cluster.backup.part").exists()
    reader = client.with_token("not-a-token")
    with pytest.raises(UnauthorizedError):
        await reader.backup(tmp_path / "refused.backup")


async def test_leadership_moves_to_the_voter_asked_for(client: Client, name: str) -> None:
    before = await client.cluster()
    target = next(m.id for m in before.membership if m.id != before.leader_id)
    moved = await client.transfer_leader(target)
    assert moved.leader_id == target
    assert (await client.cluster()).leader_id == target
    # The new leader takes writes: committed after everything the old one had applied.
    sent = await client.enqueue(name, "after the transfer")
    assert sent.index > before.last_applied and not sent.duplicate
    # Every node counts the change it saw (/metrics, raftlane_leader_changes_total).
    counted = [
        float(line.split()[-1])
        for line in (await client.metrics()).splitlines()
        if line.startswith("raftlane_leader_changes_total ")
    ]
    assert counted and counted[0] >= 1, counted
    with pytest.raises(BadRequestError) as refused:
        await client.transfer_leader(99)
    assert refused.value.field == "to"


# --- claims that wait for work (docs/SPEC.md §4.7a) ------------------------------------------


async def test_a_claim_waits_for_a_row_and_answers_as_it_arrives(client: Client, name: str) -> None:
    async def enqueue_later() -> float:
        await asyncio.sleep(0.3)
        await client.enqueue(name, "MSH|1")
        return time.monotonic()

    started = time.monotonic()
    rows, enqueued = await asyncio.gather(
        client.claim("ingress", owner="router", ttl_ms=TTL, channel=name, wait_ms=15_000),
        enqueue_later(),
    )
    assert len(rows) == 1 and rows[0].attempts == 1
    assert time.monotonic() - started >= 0.3
    assert time.monotonic() - enqueued < 1.5
    lane = f"{name}-fifo"
    head, _ = await asyncio.gather(
        client.claim_fifo("ingress", lane, owner="router", ttl_ms=TTL, wait_ms=15_000),
        client.enqueue(lane, "MSH|2"),
    )
    assert head.item is not None


async def test_a_waiting_claim_answers_empty_after_its_wait(client: Client, name: str) -> None:
    started = time.monotonic()
    head = await client.claim_fifo("ingress", name, owner="w", ttl_ms=TTL, wait_ms=500)
    assert head.item is None
    assert await client.claim("ingress", owner="w", ttl_ms=TTL, channel=name, wait_ms=500) == []
    assert 1.0 <= time.monotonic() - started < 4.0
    with pytest.raises(BadRequestError) as refused:
        await client.claim("ingress", owner="w", ttl_ms=TTL, wait_ms=30_001)
    assert refused.value.field == "wait_ms"


async def test_a_cancelled_waiting_claim_claims_nothing_later(client: Client, name: str) -> None:
    waiting = asyncio.ensure_future(
        client.claim("ingress", owner="gone", ttl_ms=TTL, channel=name, wait_ms=15_000)
    )
    await asyncio.sleep(0.3)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    await client.enqueue(name, "MSH|1")
    # Not claimed by the claim that went away: still there for the next one.
    (row,) = await client.claim("ingress", owner="next", ttl_ms=TTL, channel=name, wait_ms=5_000)
    assert row.attempts == 1


# --- leader loss, node flags, clean-up ------------------------------------------------------


async def test_the_client_keeps_working_when_the_leader_stops(name: str) -> None:
    async with empty_cluster(node_args=["--max-body-bytes", "4096"]) as handle:
        endpoints, token = handle
        async with Client(endpoints, token, deadline=30.0) as c:
            before = await c.enqueue(name, "before")
            leader = await handle.leader()
            assert c.current_endpoint == leader.endpoint, "it sends to the leader"
            # The extra node flag reached every node.
            with pytest.raises(TooLargeError):
                await c.enqueue(name, "x" * 8192)

            await leader.stop(kill=True)
            after = await c.enqueue(name, "after")
            assert after.message_id != before.message_id
            claimed = await c.claim("ingress", owner="w", ttl_ms=TTL, channel=name, limit=10)
            assert {r.message_id for r in claimed} == {before.message_id, after.message_id}
            new_leader = await handle.leader()
            assert new_leader.node_id != leader.node_id
            assert (await c.done(claimed[0].row_id, claimed[0].fence)).ok
        data = handle.data_dir
        assert data.exists()
    assert not data.exists(), "the cluster's data is removed on exit"
    assert all(not n.running for n in handle.nodes)


async def test_a_paused_destination_keeps_its_rows_and_hands_none_out(
    client: Client, name: str
) -> None:
    dest = f"{name}-emr"
    await outbound_row(client, name, dest, "MSH|pause|1")

    paused = await client.pause_destination(dest, reason="EMR upgrade")
    assert (paused.destination, paused.paused, paused.changed) == (dest, True, True)
    assert (await client.pause_destination(dest)).changed is False
    listed = {d.destination: d for d in (await client.paused_destinations()).destinations}
    assert listed[dest].reason == "EMR upgrade" and listed[dest].paused_at > 0

    # Neither claim hands the row out; a waiting FIFO claim answers empty when its wait ends.
    assert await client.claim("outbound", owner="w", ttl_ms=30_000, destination=dest) == []
    fifo = await client.claim_fifo("outbound", dest, owner="w", ttl_ms=30_000, wait_ms=300)
    assert fifo.item is None and fifo.reason == "empty"
    lane = await client.lane("outbound", dest)
    assert lane.depth == 1 and lane.inflight == 0

    resumed = await client.resume_destination(dest)
    assert (resumed.paused, resumed.changed) == (False, True)
    assert dest not in {d.destination for d in (await client.paused_destinations()).destinations}
    fifo = await client.claim_fifo("outbound", dest, owner="w", ttl_ms=30_000)
    assert fifo.item is not None and fifo.item.destination_name == dest
    anchor = await client.audit_anchor("default")
    newest = await client.audit_list("default", start=max(0, anchor.count - 50), limit=50)
    mine = [(r.action, r.detail) for r in newest if (r.detail or "").startswith(dest)]
    assert ("destination.pause", f"{dest}: EMR upgrade") in mine, mine
    assert ("destination.resume", dest) in mine, mine
