"""Every :class:`raftlane.Client` route method, called once or more against a scripted transport:
the request it sends (verb, path and query, headers, body bytes) and what it makes of a served
answer, compared with ``tests/golden/client_requests.json``.

The routes are declared once, in ``client.py``'s ``@_route`` decorators, which build the
requests; this file pins what goes on the wire so that a change to that machinery (or to a
route's declaration) that alters a request or an answer shows up as a diff. Regenerate after an
intended change with ``RAFTLANE_UPDATE_GOLDEN=1`` and review the diff.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import os
import typing
from pathlib import Path
from typing import Any

import httpx
import pytest

from raftlane import Client, RetryPolicy, RowAction, Stage, client_routes
from raftlane.types import AuditAnchor, Delivery, Handler, StateOp

GOLDEN = Path(__file__).parent / "golden" / "client_requests.json"

#: (method, positional arguments, keyword arguments); every route method appears at least once.
CALLS: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
    ("enqueue", ("lab/a b", "MSH|1"), {}),
    (
        "enqueue",
        ("lab", "MSH|2"),
        {
            "control_id": "c1",
            "message_type": "ADT^A01",
            "source_type": "mllp",
            "summary": "s",
            "metadata": {"k": [1, 2]},
            "idempotency_key": "order-1",
        },
    ),
    ("enqueue", ("lab", "MSH|3"), {"deliveries": [("d1", "p1"), Delivery("d2", "p2")]}),
    ("enqueue", ("lab", "MSH|4"), {"status": "error", "error": "bad segment"}),
    ("list_messages", (), {}),
    (
        "list_messages",
        (),
        {
            "channel": "lab",
            "status": "received",
            "message_type": "ADT",
            "control_id": "c",
            "allowed_channels": ["a", "b"],
            "limit": 5,
            "offset": 2,
            "cursor": 9,
            "consistency": "leader",
        },
    ),
    ("message_page", (), {"allowed_channels": ("x",), "limit": 1}),
    ("message", (7,), {}),
    ("message", (7,), {"body": True, "record_view": False, "viewer": "v", "consistency": "local"}),
    ("message", (7,), {"record_view": True}),
    ("replay", (7,), {}),
    ("dead_letters", (), {}),
    (
        "dead_letters",
        (),
        {
            "stage": Stage.ROUTED,
            "channel": "c",
            "destination": "d",
            "allowed_channels": ["a"],
            "limit": 3,
            "offset": 1,
            "newest_failed": True,
            "consistency": "leader",
        },
    ),
    ("dead_letters", (), {"stage": "all"}),
    ("replay_dead", (), {}),
    ("replay_dead", (), {"channel": "c", "destination": "d", "approval": 42}),
    ("stats", (), {}),
    ("stats", (), {"consistency": "leader"}),
    ("count_messages", (), {}),
    ("count_messages", (), {"channel": "lab", "status": None, "allowed_channels": "a,b"}),
    ("count_dead_letters", (), {"stage": "all", "destination": "emr"}),
    ("record_view", (7,), {}),
    ("record_view", ("8",), {"actor": "alice"}),
    ("storage_stats", (), {}),
    ("connection_metrics", (), {}),
    ("connection_metrics", (), {"since": 5, "rate_window_ms": 1000}),
    ("row", (3,), {}),
    ("reclaim_expired", (), {}),
    ("reclaim_expired", (), {"stage": Stage.OUTBOUND}),
    ("reset_inflight", (), {}),
    ("reset_inflight", (), {"stage": "ingress"}),
    ("recover_inflight", ("w1",), {}),
    ("recover_inflight", ("w1",), {"lane_owner": "l1"}),
    ("sweep_dead_letters", (Stage.OUTBOUND, ("emr", "lab")), {}),
    ("lanes", (), {}),
    (
        "lanes",
        (),
        {"stage": Stage.OUTBOUND, "limit": 2, "cursor": "outbound:a", "consistency": "x"},
    ),
    ("lane", ("outbound", "e/m r"), {}),
    ("lane", (Stage.INGRESS, "lab"), {"consistency": "leader"}),
    ("claim_fifo", ("outbound", "emr"), {"owner": "w", "ttl_ms": 100}),
    (
        "claim_fifo",
        (Stage.OUTBOUND, "emr"),
        {"owner": "w", "ttl_ms": 100, "lane_lease": False, "row_owner": "r", "wait_ms": 2500},
    ),
    ("claim_fifo", ("outbound", "emr"), {"owner": "w", "ttl_ms": 100, "wait_ms": 0}),
    ("release_lane", ("outbound", "emr"), {"owner": "w"}),
    ("pause_destination", ("emr",), {}),
    ("pause_destination", ("emr",), {"reason": "maintenance"}),
    ("resume_destination", ("emr",), {}),
    ("paused_destinations", (), {}),
    ("paused_destinations", (), {"consistency": "leader"}),
    ("cancel", ("emr",), {}),
    ("cancel", ("emr",), {"channel": "lab", "top_only": True}),
    ("claim", ("ingress",), {"owner": "w", "ttl_ms": 100}),
    (
        "claim",
        (Stage.OUTBOUND,),
        {
            "owner": "w",
            "ttl_ms": 100,
            "limit": 8,
            "channel": "c",
            "destination": "d",
            "wait_ms": 1500,
        },
    ),
    ("claim", ("ingress",), {"owner": "w", "ttl_ms": 100, "wait_ms": 0}),
    ("renew", ((1, 2),), {"owner": "w", "ttl_ms": 100}),
    ("renew", (iter([3]),), {"owner": "w", "ttl_ms": 100}),
    ("route", (1, 2, [("h1", "p1"), Handler("h2")]), {}),
    ("route", (1, 2, [Handler("h", "p")]), {"disposition": "filtered"}),
    ("handoff", (1, 2, [("emr", "p"), Delivery("lab")]), {}),
    ("handoff", (1, 2, []), {"disposition": "filtered"}),
    ("transform", (1, 2, [("emr", "p")]), {}),
    ("transform", (1, 2, [Delivery("emr", "p")]), {"state_ops": [("ns", "k", {"v": 1})]}),
    ("transform", (1, 2, []), {"state_ops": (StateOp("ns", "k", None),)}),
    (
        "hand_on_then_claim_next",
        (RowAction.handoff(5, 6, [("emr", "p")]),),
        {"owner": "w", "ttl_ms": 100},
    ),
    (
        "hand_on_then_claim_next",
        (RowAction.route(5, 6, [("h", "p")], "routed"),),
        {"owner": "w", "ttl_ms": 100},
    ),
    (
        "hand_on_then_claim_next",
        (RowAction.transform(5, 6, [("emr", "p")], [("ns", "k", 1)]),),
        {"owner": "w", "ttl_ms": 100},
    ),
    ("hand_on_then_claim_next", (RowAction.done(5, 6),), {"owner": "w", "ttl_ms": 100}),
    ("done", (1, 2), {}),
    ("done_then_claim_next", (1, 2), {"owner": "w", "ttl_ms": 100}),
    ("respond", (1, 2, "ACK", "ok"), {}),
    ("respond", (1, 2, "ACK", "ok"), {"detail": "d", "reingress_to": "lab"}),
    ("fail", (1, 2, "boom"), {}),
    (
        "fail",
        (1, 2, "boom"),
        {"retry": RetryPolicy(backoff_ms=10, multiplier=1.5, max_backoff_ms=100)},
    ),
    (
        "fail",
        (1, 2, "boom"),
        {"retry": RetryPolicy(backoff_ms=10, multiplier=2, max_backoff_ms=100, max_attempts=-1)},
    ),
    ("dead", (1, "gone"), {}),
    ("dead", (1, "gone"), {"fence": 4}),
    ("reingress", (1, 2, "loop"), {}),
    ("reingress", (1, 2, "loop"), {"depth_cap": 3}),
    (
        "reingress",
        (1, 2, "loop"),
        {
            "child_key": "k1",
            "control_id": "c",
            "message_type": "ACK",
            "summary": "s",
            "peek_failed": True,
        },
    ),
    (
        "row_actions",
        (
            [
                RowAction.done(1, 2),
                RowAction.fail(3, 4, "e", RetryPolicy(1, 1.0, 1, 2)),
                RowAction.dead(5, "e"),
                RowAction.response(6, 7, "b", "ok", "d", "lab"),
                RowAction.reingress(8, 9, "loop", 2),
            ],
        ),
        {},
    ),
    ("config", (), {}),
    ("config", (), {"consistency": "leader"}),
    ("put_config", (3, {"channels": {"lab": {}}}), {}),
    ("put_config", (3, {}), {"approval": 9}),
    ("config_version", (2,), {}),
    ("config_version", (2,), {"consistency": "leader"}),
    ("create_user", ({"id": "u1", "username": "alice", "auth_provider": "local"},), {}),
    ("list_users", (), {}),
    ("list_users", (), {"username": "al", "limit": 0}),
    ("get_user", ("u/1",), {}),
    ("delete_user", ("u1",), {}),
    ("user_secrets", ("u1",), {}),
    ("user_roles", ("u1",), {}),
    ("set_user_roles", ("u1", ("r1", "r2")), {}),
    ("set_user_roles", ("u1", []), {"assigned_by": "admin"}),
    ("user_sessions", ("u1",), {}),
    ("revoke_user_sessions", ("u1",), {}),
    ("revoke_user_sessions", ("u1",), {"except_token_hash": "h", "at": 5}),
    ("cap_user_sessions", ("u1", 3), {}),
    ("cap_user_sessions", ("u1", 3), {"at": 5}),
    ("change_user", ("u1", "disabled"), {}),
    ("change_user", ("u1", "password"), {"body": {"password_hash": "x", "at": 1}}),
    ("list_roles", (), {}),
    ("put_role", ("r1", "Role one"), {}),
    ("put_role", ("r1", "Role one"), {"description": "d", "builtin": False}),
    ("group_map", ("roles",), {}),
    ("group_map", ("channels",), {"groups": ["g1", "g2"]}),
    ("put_group_map", ("roles", [("g1", "r1"), ("g2", "r2")]), {}),
    ("create_session", ({"token_hash": "h", "user_id": "u1", "expires_at": 9},), {}),
    ("purge_expired_sessions", (), {}),
    ("get_session", ("h",), {}),
    ("change_session", ("h", "touch"), {}),
    ("change_session", ("h", "reauth"), {"body": {"at": 3, "client": "c"}}),
    ("audit_append", ("login",), {}),
    ("audit_append", ("login",), {"channel": "c", "org": "o", "detail": "d"}),
    ("audit_append", ("login",), {"actor": "alice"}),
    ("audit_list", ("o",), {}),
    ("audit_list", ("o",), {"start": 3, "limit": 10, "consistency": "leader"}),
    ("audit_anchor", ("o",), {}),
    ("audit_anchor", ("o",), {"consistency": "leader"}),
    ("audit_verify", ("o",), {}),
    ("audit_verify", ("o",), {"anchor": AuditAnchor("o", 3, "abc", 1), "consistency": "x"}),
    ("audit_verify", ("o",), {"anchor": (4, "def")}),
    ("audit_search", ("o", "alice"), {}),
    ("audit_search", ("o", "alice"), {"action_prefix": "login", "limit": 5}),
    ("audit_seal", ("o",), {}),
    ("namespace", ("ns",), {}),
    ("namespace", ("ns",), {"entries": True, "consistency": "leader"}),
    ("state_entry", ("ns", "k/1"), {}),
    ("state_entry", ("ns", "k"), {"consistency": "leader"}),
    ("namespaces", (), {}),
    ("namespaces", (), {"consistency": "leader"}),
    ("reference_sets", (), {}),
    ("reference_sets", (), {"consistency": "leader"}),
    ("put_reference", ("codes", 3, {"a": "1"}), {}),
    ("put_reference", ("codes", "v2", {}), {}),
    ("reference", ("codes",), {}),
    ("reference", ("codes",), {"consistency": "leader"}),
    ("purge", ("bodies",), {}),
    ("purge", ("bodies",), {"older_than_ms": 5, "older_than": 6, "approval": 7}),
    ("create_approval", ("purge",), {}),
    ("create_approval", ("purge",), {"params": {"kind": "bodies"}, "ttl_ms": 1000}),
    ("approval", (3,), {}),
    ("approval", (3,), {"consistency": "leader"}),
    ("decide_approval", (3, True), {}),
    ("decide_approval", (3, False), {}),
    ("pending_approvals", (), {}),
    ("pending_approvals", (), {"limit": 5}),
    (
        "create_keyed_approval",
        ("k1", "op"),
        {"params": "{}", "requester": "alice", "requested_at": 5},
    ),
    (
        "create_keyed_approval",
        ("k1", "op"),
        {"params": "{}", "requester": "alice", "requested_at": 5, "expires_at": 9},
    ),
    ("keyed_approval", ("k1",), {}),
    ("decide_keyed_approval", ("k1", "approved"), {"decided_at": 5}),
    ("decide_keyed_approval", ("k1", "rejected"), {"approver": "bob", "decided_at": 5}),
    ("engine_heartbeat", ("n1",), {}),
    ("engine_heartbeat", ("n1",), {"host": "h", "pid": 5}),
    ("engine_leave", ("n1",), {}),
    ("engine_nodes", (), {}),
    ("campaign", ("g", "n1"), {"ttl_ms": 100}),
    ("resign", ("g", "n1"), {}),
    ("leadership", ("g",), {}),
    ("bump_counter", ("c",), {}),
    ("counter", ("c",), {}),
    ("held_lanes", ("w1",), {}),
    ("tokens", (), {}),
    ("tokens", (), {"consistency": "leader"}),
    ("create_token", ("svc", "worker"), {}),
    ("create_token", ("svc", "worker"), {"channels": [], "orgs": []}),
    ("create_token", ("svc", "worker"), {"channels": ("a",), "orgs": ["o"], "approval": 3}),
    ("revoke_token", ("svc",), {}),
    ("owner", ("w1",), {}),
    ("reserve_owner", ("w1", "svc"), {}),
    ("release_owner", ("w1",), {}),
    ("rotate_keys", (), {}),
    ("rotate_keys", (), {"batch_size": 5, "approval": 2}),
    ("cluster", (), {}),
    ("digest", (), {}),
    ("digest", ("127.0.0.1:7003",), {}),
    ("snapshot", (), {}),
    ("backup", ("backup.snap",), {}),
    ("transfer_leader", (), {}),
    ("transfer_leader", (2,), {}),
    ("log_format", (), {}),
    ("raise_log_format", (2,), {}),
    ("add_learner", (4, "127.0.0.1:7004"), {}),
    ("change_membership", ((1, 2, 3),), {}),
    ("healthz", (), {}),
    ("readyz", (), {}),
    ("readyz", ("http://127.0.0.1:7002",), {}),
    ("metrics", (), {}),
    ("operator_page", (), {}),
    ("openapi", (), {}),
]

#: Answers of the routes whose answer the client once read member by member, as the nodes send
#: them; and of the routes whose answer is not JSON.
SPECIAL_ANSWERS: dict[str, Any] = {
    "count_messages": {"count": 7},
    "count_dead_letters": {"count": 8},
    "reclaim_expired": {"index": 21, "reclaimed": 2},
    "reset_inflight": {"index": 22, "reset": 3},
    "recover_inflight": {"index": 23, "recovered": 4},
    "sweep_dead_letters": {"index": 24, "dead": 5},
    "engine_leave": {"left": True, "index": 28},
    "resign": {"resigned": False, "index": 25},
    "bump_counter": {"name": "c", "value": 11},
    "counter": {"name": "c", "value": 12},
    "held_lanes": {"owner": "w1", "lanes": ["outbound:emr", "routed:h"]},
    "owner": {"owner": "w1", "principal": "svc"},
    "reserve_owner": {"owner": "w1", "principal": "svc", "index": 26, "changed": True},
    "release_owner": {"owner": "w1", "principal": None, "index": 27, "changed": False},
    "row_actions": {
        "results": [
            {"ok": True, "index": 3},
            {"status": 409, "error": {"code": "stale_fence", "message": "m", "field": "fence"}},
            {"ok": True, "index": 4},
            {"status": 404, "error": {"code": "not_found", "message": "no row"}},
            {"child_message_id": 9, "index": 5},
        ]
    },
    "hand_on_then_claim_next": {
        "applied": True,
        "index": 6,
        "next": {"item": None, "reason": "lane_busy", "holder": "w2", "expires_at": 99},
    },
    "add_learner": {},
    "change_membership": {},
    "openapi": {"openapi": "3.0.3", "paths": {}},
    "metrics": "# TYPE raftlane_up gauge\nraftlane_up 1\n",
    "operator_page": "<html>page</html>",
    "backup": "SNAPSHOT-BYTES",
}
BACKUP_HEADERS = {"x-raftlane-snapshot-index": "12", "x-raftlane-node-id": "2"}

#: Headers the transport adds by itself, not the client's.
_TRANSPORT_HEADERS = {"host", "accept", "accept-encoding", "connection", "user-agent"}


def _sample(tp: Any, name: str, depth: int = 0) -> Any:
    """A value of type ``tp`` for an answer member called ``name``: every optional member
    present, every list one item long, so decoding is exercised all the way down."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, __import__("types").UnionType):
        inner = [a for a in typing.get_args(tp) if a is not type(None)]
        return _sample(inner[0], name, depth)
    if origin is list:
        return [_sample(typing.get_args(tp)[0], name, depth + 1)]
    if origin is dict:
        return {"k": _sample(typing.get_args(tp)[1], name, depth + 1)}
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return _sample_of(tp, depth + 1)
    if tp is bool:
        return True
    if tp is int:
        return len(name) + depth
    if tp is float:
        return 1.5
    if tp is str:
        return f"{name}-{depth}"
    return {"any": name}


def _sample_of(cls: type, depth: int = 0) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    return {
        f.name: _sample(hints[f.name], f.name, depth)
        for f in dataclasses.fields(cls)  # type: ignore[arg-type]
        if f.init
    }


def _served_answer(method: str) -> Any:
    if method in SPECIAL_ANSWERS:
        return SPECIAL_ANSWERS[method]
    route = next(r for r in client_routes() if r.name == method)
    assert route.answer is not None, method
    return _sample_of(route.answer)


def _plain(v: Any) -> Any:
    """A result as JSON: dataclasses with their type's name, exceptions by type and text."""
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        out = {"__type__": type(v).__name__}
        out.update({f.name: _plain(getattr(v, f.name)) for f in dataclasses.fields(v)})
        return out
    if isinstance(v, BaseException):
        return {"__error__": type(v).__name__, "text": str(v)}
    if isinstance(v, enum.Enum):
        return v.value
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if v is None or isinstance(v, (str, int, float)):
        return v
    return f"<{type(v).__name__}>"


async def _run(
    method: str, args: tuple[Any, ...], kwargs: dict[str, Any], served: Any
) -> dict[str, Any]:
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if isinstance(served, str):
            headers = BACKUP_HEADERS if method == "backup" else {}
            return httpx.Response(200, content=served.encode(), headers=headers)
        return httpx.Response(200, json=served)

    nodes = ["127.0.0.1:7001", "127.0.0.1:7002"]
    async with Client(
        nodes, "tok", follow_leader=False, transport=httpx.MockTransport(answer)
    ) as c:
        try:
            result = await getattr(c, method)(*args, **kwargs)
        except (ValueError, TypeError) as e:
            result = e
    requests = []
    for r in seen:
        headers = {k: v for k, v in sorted(r.headers.items()) if k not in _TRANSPORT_HEADERS}
        if headers.get("request-id", "").startswith("py-"):
            headers["request-id"] = "py-<generated>"
        requests.append(
            {
                "method": r.method,
                "url": r.url.raw_path.decode(),
                "port": r.url.port,
                "headers": headers,
                "body": r.content.decode(),
            }
        )
    return {
        "call": [method, _plain(list(args)), _plain(kwargs)],
        "requests": requests,
        "served": served,
        "result": _plain(result),
    }


async def test_every_route_method_is_called() -> None:
    called = {m for m, _, _ in CALLS}
    assert {r.name for r in client_routes()} <= called


async def test_requests_and_results_match_the_golden_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    update = os.environ.get("RAFTLANE_UPDATE_GOLDEN") == "1"
    # The answers served are the golden file's, so that a change to the answer types shows as a
    # change of the results, not of the answers.
    want = [] if update and not GOLDEN.exists() else json.loads(GOLDEN.read_text())
    served = [w["served"] for w in want] if len(want) == len(CALLS) else None
    got = [
        await _run(m, a, k, served[i] if served else _served_answer(m))
        for i, (m, a, k) in enumerate(CALLS)
    ]
    if update:
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(json.dumps(got, indent=1, ensure_ascii=False) + "\n")
        want = got
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g == w, g["call"]
