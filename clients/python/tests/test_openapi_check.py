"""The checker of tests/openapi_check.py on small documents, so that it is known to catch
mismatches before it is run against the served document (tests/test_cluster.py)."""

from __future__ import annotations

from typing import Any

from openapi_check import route_problems, schema_problems

from raftlane import client_routes
from raftlane.client import RouteInfo
from raftlane.types import Enqueued, FifoClaim


def test_every_method_names_a_route_and_every_route_is_called() -> None:
    routes = client_routes()
    names = [r.name for r in routes]
    assert len(names) == len(set(names)), "one route per method"
    public = {
        n
        for n in dir(__import__("raftlane").Client)
        if not n.startswith("_")
        and n
        not in {
            "for_request",
            "with_token",
            "with_deadline",
            "with_headers",
            "aclose",
            "request",
            "endpoints",
            "current_endpoint",
        }
    }
    assert public == set(names), public ^ set(names)
    assert all(
        r.path.startswith("/") and r.method in {"get", "post", "put", "delete"} for r in routes
    )


def doc_with(paths: dict[str, Any], schemas: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"openapi": "3.0.3", "paths": paths, "components": {"schemas": schemas or {}}}


ENQ = RouteInfo("post", "/v1/channels/{channel}/messages", "enqueue", ("raw", "summary"), Enqueued)


def test_route_problems_both_ways() -> None:
    doc = doc_with({"/v1/channels/{channel}/messages": {"post": {}}, "/v1/other": {"get": {}}})
    assert route_problems(doc, [ENQ]) == ["GET /v1/other has no client method"]
    doc = doc_with({"/v1/channels/{channel}/messages": {"get": {}}})
    problems = route_problems(doc, [ENQ])
    assert "enqueue: POST /v1/channels/{channel}/messages is not in the document" in problems


def test_query_members_must_be_documented_parameters() -> None:
    route = RouteInfo("get", "/v1/stats", "stats", (), None, ("consistency", "verbose"))
    documented = {
        "get": {
            "parameters": [{"name": "consistency", "in": "query"}, {"name": "x", "in": "header"}]
        }
    }
    assert route_problems(doc_with({"/v1/stats": documented}), [route]) == [
        "stats: sends query 'verbose', not a parameter of GET /v1/stats"
    ]
    # A document that lists no query parameter for the route says nothing about them.
    undocumented = {"get": {"parameters": [{"name": "x", "in": "header"}]}}
    assert route_problems(doc_with({"/v1/stats": undocumented}), [route]) == []


def test_a_text_answer_is_not_compared_with_a_schema() -> None:
    route = RouteInfo("get", "/metrics", "metrics", (), str)
    schema = {"type": "object", "properties": {"x": {}}, "required": ["x"]}
    assert schema_problems(doc_with({"/metrics": {"get": op(schema)}}), [route]) == ([], 0)


def op(answer: Any = None, request: Any = None) -> dict[str, Any]:
    o: dict[str, Any] = {"responses": {"201": {"description": "x"}}}
    if answer is not None:
        o["responses"]["201"]["content"] = {"application/json": {"schema": answer}}
    if request is not None:
        o["requestBody"] = {"content": {"application/json": {"schema": request}}}
    return o


ENQUEUED_SCHEMA = {
    "type": "object",
    "required": ["message_id", "duplicate", "index"],
    "properties": {
        "message_id": {"type": "integer"},
        "duplicate": {"type": "boolean"},
        "index": {"type": "integer"},
    },
}


def test_no_schema_compares_nothing() -> None:
    doc = doc_with({ENQ.path: {"post": op()}})
    assert schema_problems(doc, [ENQ]) == ([], 0)


def test_a_matching_schema_behind_a_ref_passes() -> None:
    request = {
        "type": "object",
        "required": ["raw"],
        "properties": {"raw": {"type": "string"}, "summary": {"type": "string"}},
    }
    doc = doc_with(
        {ENQ.path: {"post": op({"$ref": "#/components/schemas/Enqueued"}, request)}},
        {"Enqueued": ENQUEUED_SCHEMA},
    )
    assert schema_problems(doc, [ENQ]) == ([], 2)


def test_mismatches_are_reported() -> None:
    answer = {
        "type": "object",
        "required": ["message_id", "index", "node"],
        "properties": {"message_id": {}, "index": {}, "node": {}, "duplicate": {}},
    }
    request = {
        "type": "object",
        "required": ["raw", "channel"],
        "properties": {"raw": {}, "channel": {}},
    }
    doc = doc_with({ENQ.path: {"post": op(answer, request)}})
    problems, compared = schema_problems(doc, [ENQ])
    assert compared == 2
    text = "\n".join(problems)
    assert "requires 'node'" in text
    assert "Enqueued.duplicate is required by the client but optional" in text
    assert "sends 'summary'" in text
    assert "requires 'channel', never sent" in text


def test_nested_dataclasses_are_compared() -> None:
    route = RouteInfo(
        "post", "/v1/lanes/{stage}/{name}/claim", "claim_fifo", ("owner", "ttl_ms"), FifoClaim
    )
    claimed = {
        "type": "object",
        "required": ["row_id"],
        "properties": {"row_id": {}, "message_id": {}},
    }
    answer = {
        "type": "object",
        "required": ["item"],
        "properties": {
            "item": {"oneOf": [{"$ref": "#/components/schemas/ClaimedRow"}, {"type": "null"}]},
            "reason": {},
            "due_at": {},
            "holder": {},
            "expires_at": {},
        },
    }
    doc = doc_with({route.path: {"post": op(answer)}}, {"ClaimedRow": claimed})
    problems, _ = schema_problems(doc, [route])
    text = "\n".join(problems)
    assert "ClaimedRow.stage is not a member of the schema" in text
    assert "ClaimedRow.fence is not a member" in text
    assert "answer.item" in text
