"""Compare the client's routes and types with an OpenAPI document.

``route_problems`` checks paths and verbs (both ways: every client method's route is documented,
every documented route has a client method) and, for a route whose query parameters the
document lists, that every query member a method sends is one of them. ``schema_problems`` checks, wherever the document
gives a JSON schema for an answer or a request body, that the client's dataclass (or the body
members it sends) fit it: every member the schema requires is a field, every field is a member
of the schema, and a field the client cannot do without is required by the schema; nested
dataclasses are compared with nested schemas the same way.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, Union

from raftlane.client import RouteInfo


def route_problems(doc: dict[str, Any], routes: list[RouteInfo]) -> list[str]:
    paths: dict[str, Any] = doc.get("paths", {})
    problems = []
    covered = set()
    for r in routes:
        covered.add((r.method, r.path))
        op = paths.get(r.path, {}).get(r.method)
        if op is None:
            problems.append(f"{r.name}: {r.method.upper()} {r.path} is not in the document")
            continue
        documented = {
            p.get("name")
            for p in op.get("parameters", [])
            if isinstance(p, dict) and p.get("in") == "query"
        }
        for name in r.query if documented else ():
            if name not in documented:
                problems.append(
                    f"{r.name}: sends query {name!r}, not a parameter of "
                    f"{r.method.upper()} {r.path}"
                )
    for path, ops in paths.items():
        for method in ops:
            if (
                method in ("get", "put", "post", "delete", "patch")
                and (method, path) not in covered
            ):
                problems.append(f"{method.upper()} {path} has no client method")
    return problems


def _resolve(doc: dict[str, Any], schema: Any, seen: int = 0) -> dict[str, Any] | None:
    """Follow ``$ref``s and merge ``allOf``; ``None`` for what cannot be compared (no object
    shape, e.g. ``oneOf`` of several objects)."""
    if not isinstance(schema, dict) or seen > 20:
        return None
    if "$ref" in schema:
        ref = schema["$ref"]
        if not isinstance(ref, str) or not ref.startswith("#/"):
            return None
        node: Any = doc
        for part in ref[2:].split("/"):
            node = node.get(part) if isinstance(node, dict) else None
        return _resolve(doc, node, seen + 1)
    if "allOf" in schema:
        merged: dict[str, Any] = {"type": "object", "properties": {}, "required": []}
        for part in schema["allOf"]:
            p = _resolve(doc, part, seen + 1)
            if p is None:
                return None
            merged["properties"].update(p.get("properties", {}))
            merged["required"] += p.get("required", [])
        return merged
    for key in ("oneOf", "anyOf"):
        if key in schema:
            options = [
                o for o in schema[key] if not (isinstance(o, dict) and o.get("type") == "null")
            ]
            return _resolve(doc, options[0], seen + 1) if len(options) == 1 else None
    return schema


def _json_schema(op: dict[str, Any], where: str) -> Any:
    if where == "request":
        content = (op.get("requestBody") or {}).get("content", {})
    else:
        responses = op.get("responses", {})
        ok = responses.get("200") or responses.get("201") or {}
        content = ok.get("content", {})
    return (content.get("application/json") or {}).get("schema")


def _strip_optional(tp: Any) -> tuple[Any, bool]:
    if typing.get_origin(tp) in (Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1 and len(typing.get_args(tp)) == 2:
            return args[0], True
    return tp, False


def _dataclass_problems(
    doc: dict[str, Any], cls: type, schema: dict[str, Any], where: str, depth: int = 0
) -> list[str]:
    props = schema.get("properties")
    if not isinstance(props, dict) or depth > 8:
        return []
    required = set(schema.get("required", []))
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    problems = []
    for name in sorted(required - set(fields)):
        problems.append(
            f"{where}: the document requires {name!r}, {cls.__name__} has no such field"
        )
    for name, f in fields.items():
        if name not in props:
            problems.append(f"{where}: {cls.__name__}.{name} is not a member of the schema")
            continue
        inner, optional = _strip_optional(hints[name])
        has_default = not (
            f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        )
        if not optional and not has_default and name not in required:
            problems.append(
                f"{where}: {cls.__name__}.{name} is required by the client but optional in the document"
            )
        sub = _resolve(doc, props[name])
        if sub is None:
            continue
        if typing.get_origin(inner) is list:
            (inner,) = typing.get_args(inner)
            sub = _resolve(doc, sub.get("items"))
            if sub is None:
                continue
        if dataclasses.is_dataclass(inner) and isinstance(inner, type):
            problems += _dataclass_problems(doc, inner, sub, f"{where}.{name}", depth + 1)
    return problems


def schema_problems(doc: dict[str, Any], routes: list[RouteInfo]) -> tuple[list[str], int]:
    """The mismatches, and how many answers and request bodies had a schema to compare with."""
    paths: dict[str, Any] = doc.get("paths", {})
    problems: list[str] = []
    compared = 0
    for r in routes:
        op = paths.get(r.path, {}).get(r.method)
        if not isinstance(op, dict):
            continue
        if dataclasses.is_dataclass(r.answer) and isinstance(r.answer, type):
            schema = _resolve(doc, _json_schema(op, "response"))
            if schema is not None and isinstance(schema.get("properties"), dict):
                compared += 1
                problems += _dataclass_problems(
                    doc, r.answer, schema, f"{r.name} ({r.method.upper()} {r.path}) answer"
                )
        schema = _resolve(doc, _json_schema(op, "request"))
        if schema is not None and isinstance(schema.get("properties"), dict):
            compared += 1
            props = set(schema["properties"])
            where = f"{r.name} ({r.method.upper()} {r.path}) request"
            for name in r.body:
                if name not in props:
                    problems.append(f"{where}: sends {name!r}, not a member of the schema")
            for name in schema.get("required", []):
                if name not in r.body:
                    problems.append(f"{where}: the document requires {name!r}, never sent")
    return problems, compared
