#!/usr/bin/env python3
"""Write the client's wire dataclasses (``src/raftlane/_generated.py``) from the API's OpenAPI
document (``api/openapi.json`` at the repository root, the document the nodes serve at
``GET /openapi.json``, generated from the Rust contract's types).

Why generate: the answer types were written by hand beside the Rust ones, and kept in step only
by a test against a running node. Generated from the document, a member added, renamed or made
optional in the contract reaches the Python types by running this script, and the drift check
(``tests/test_generated_types.py``) fails while the committed module differs from what it writes.

What is generated: one frozen dataclass per entry of :data:`CLASSES`, named by its Python name
and built from the schema named beside it (the table keeps the client's established names where
they differ from the contract's). Required members come first, without a default; a member the
schema does not require defaults to its schema default, else ``None``. A member that may be
``null`` is ``T | None``. Where the client keeps a Python-side type for a member (JSON text it
decodes itself, a free-form object), :data:`MEMBER_TYPES` says so. ``raftlane.types`` re-exports
the classes with the client-side types (``Stage``, ``RetryPolicy``, ...) and ``decode``.

    clients/python/scripts/gen_types.py [--openapi FILE] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import keyword
import re
import sys
import textwrap
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PACKAGE = HERE.parent
REPO = PACKAGE.parent.parent
DEFAULT_OPENAPI = REPO / "api" / "openapi.json"
DEFAULT_OUT = PACKAGE / "src" / "raftlane" / "_generated.py"

#: Python name -> the schema it is generated from, in the order the module lists them: a name in
#: ``components/schemas``, or ``Name/N`` for the N-th alternative of an ``anyOf`` there (the
#: row actions' answers are one untagged union in the contract, a class each here). A schema may
#: give several classes; a ``$ref`` to it decodes into the first.
CLASSES: dict[str, str] = {
    # messages
    "Enqueued": "Enqueued",
    "Correlation": "Correlation",
    "Event": "Event",
    "Claim": "Claim",
    "Message": "DetailMessage",
    "WorkRow": "DetailRow",
    "CapturedResponse": "DetailResponse",
    "MessageView": "MessageDetail",
    "ListedMessage": "ListedMessage",
    "MessageList": "MessageList",
    "DeadLetterRow": "DeadLetterRow",
    "DeadLetters": "DeadLetters",
    "Requeued": "Requeued",
    "Stats": "Stats",
    "StorageStats": "StorageStats",
    "Count": "Count",
    "Viewed": "Viewed",
    "InboundTraffic": "InboundTraffic",
    "DestinationTraffic": "DestinationTraffic",
    "ConnectionTraffic": "ConnectionMetrics",
    # work: claims, lanes, leases, row actions
    "ClaimedRow": "ClaimedRow",
    "Claims": "Claimed",
    "FifoClaim": "FifoClaim",
    "LaneLease": "LaneLease",
    "LaneView": "LaneStatus",
    "LaneList": "LaneList",
    "Released": "Released",
    "PauseState": "PauseState",
    "PausedDestination": "PausedDestinationView",
    "PausedDestinations": "PausedDestinations",
    "Cancelled": "Cancelled",
    "Renewed": "Renewed",
    "Reclaimed": "Reclaimed",
    "ResetRows": "ResetRows",
    "Recovered": "Recovered",
    "Swept": "Swept",
    "RowDetail": "RowDetail",
    "HandedOff": "RowAnswer/0",
    "HandedOnNext": "RowAnswer/0",
    "Ack": "RowAnswer/1",
    "DoneNext": "RowAnswer/1",
    "Failed": "RowAnswer/2",
    "Reingressed": "RowAnswer/3",
    "RowActionResults": "RowActionResults",
    # configuration
    "ConfigVersion": "ConfigAnswer",
    "ConfigWritten": "ConfigWritten",
    # audit
    "AuditAppended": "AuditAppended",
    "AuditRow": "AuditEntry",
    "AuditRows": "AuditRows",
    "AuditAnchor": "AuditAnchor",
    "AuditVerification": "AuditVerification",
    # transform state, reference sets, retention
    "Namespace": "NamespaceVersion",
    "NamespaceList": "NamespaceList",
    "StateEntry": "StateValue",
    "ReferenceSetInfo": "ReferenceSetInfo",
    "ReferenceSetList": "ReferenceList",
    "ReferenceWritten": "ReferenceWritten",
    "ReferenceSnapshot": "Reference",
    "Purged": "Purged",
    # approvals, tokens, owners, keys
    "ApprovalCreated": "ApprovalCreated",
    "Approval": "ApprovalView",
    "ApprovalList": "ApprovalList",
    "KeyedDecided": "KeyedDecided",
    "ApprovalDecided": "ApprovalDecided",
    "Principal": "TokenInfo",
    "TokenList": "TokenList",
    "TokenCreated": "TokenCreated",
    "Revoked": "Revoked",
    "OwnerBinding": "OwnerBinding",
    "KeyRotation": "Rotated",
    # cluster
    "ClusterMember": "Member",
    "RemovedLearner": "RemovedLearner",
    "ClusterStatus": "ClusterStatus",
    "StateDigest": "StateDigest",
    "LeaderTransferred": "LeaderTransferred",
    "LogFormatStatus": "LogFormatStatus",
    "SnapshotTaken": "SnapshotTaken",
    "Health": "Health",
    "Readiness": "Readiness",
    # the engine's users, roles and sessions
    "UserCreated": "UserCreated",
    "UserView": "UserView",
    "UserList": "UserList",
    "UserSecrets": "UserSecrets",
    "UserDeleted": "UserDeleted",
    "UserChanged": "UserChanged",
    "RoleView": "RoleView",
    "RoleList": "RoleList",
    "RoleWritten": "RoleWritten",
    "RoleAssignmentView": "RoleAssignmentView",
    "UserRoles": "UserRoles",
    "RolesAssigned": "RolesAssigned",
    "GroupEntry": "GroupEntry",
    "GroupMap": "GroupMap",
    "GroupMapWritten": "GroupMapWritten",
    "SessionCreated": "SessionCreated",
    "SessionView": "SessionView",
    "SessionList": "SessionList",
    "SessionChanged": "SessionChanged",
    "SessionsRevoked": "SessionsRevoked",
    "SessionsPurged": "SessionsPurged",
    # engine coordination
    "HeartbeatAck": "HeartbeatAck",
    "EngineNode": "EngineNode",
    "EngineNodes": "EngineNodes",
    "Leadership": "Leadership",
    "NodeLeft": "NodeLeft",
    "Resigned": "Resigned",
    "CounterValue": "CounterValue",
    "HeldLanes": "HeldLanes",
}

#: Schemas referenced by a member whose values decode into a class generated from another
#: schema that admits them too: a current row (``WorkRow``, payload always there) and a
#: message's row (``DetailRow``, payload only with bodies) are one class, ``WorkRow``.
REFS: dict[str, str] = {"WorkRow": "WorkRow"}

#: (Python class, member) -> the member's Python type, where the client keeps its own: the
#: configuration document stays the JSON object it is (its own schema is the config's), and a
#: batch's results stay JSON until ``Client.row_actions`` makes each an answer or an error.
MEMBER_TYPES: dict[tuple[str, str], str] = {
    ("ConfigVersion", "config"): "dict[str, Any]",
    ("RowActionResults", "results"): "list[dict[str, Any]]",
}

#: The member order of the classes written by hand before they were generated, where it differs
#: from the document's (the contract keeps some answers' members alphabetical, the order they
#: always went on the wire in): a dataclass's order is its positional constructor, so
#: ``AuditAnchor(org, count, head, era)`` keeps meaning what it meant. Members not listed follow,
#: and required members always precede the others.
ORDER: dict[str, str] = {
    "Ack": "ok index",
    "Approval": (
        "id operation params requester requested_at status expires_at approver decided_at key"
    ),
    "ApprovalDecided": "id approved index",
    "AuditAnchor": "org count head era",
    "AuditAppended": "seq hash index",
    "AuditRow": "seq ts action org prev_hash hash actor channel detail principal",
    "AuditVerification": "ok count head_hash eras first_bad_seq reason",
    "CapturedResponse": "message_id destination response_seq outcome captured_at detail body",
    "ClaimedRow": (
        "row_id message_id stage channel_id payload attempts fence lease_expires_at "
        "destination_name handler_name"
    ),
    "ClusterMember": "id addr voter",
    "ClusterStatus": "node_id term last_log_index last_applied membership leader_id",
    "ConfigVersion": "version config set_at set_by",
    "DeadLetterRow": (
        "id message_id stage channel_id status attempts next_attempt_at created_at updated_at "
        "destination_name handler_name last_error claim last_fence control_id message_type "
        "received_at summary"
    ),
    "DestinationTraffic": (
        "channel destination queue_depth written dead recent_done oldest_pending_at last_done_at"
    ),
    "DoneNext": "ok index next",
    "EngineNode": "node_id started_at last_seen status host pid",
    "Failed": "dead next_attempt_at index",
    "FifoClaim": "item reason due_at holder expires_at",
    "KeyRotation": "active_key rewritten skipped conflicts batches",
    "LaneView": "lane depth inflight oldest holder stage name oldest_age_ms",
    "Leadership": "group now owner expires_at fence",
    "ListedMessage": (
        "id channel_id received_at status purged source_type control_id message_type error summary "
        "metadata correlation idempotency_key last_event"
    ),
    "Message": (
        "id channel_id received_at status purged source_type control_id message_type error summary "
        "metadata correlation idempotency_key raw"
    ),
    "MessageView": "message events rows responses viewed_index",
    "Principal": "name role created_at channels",
    "Purged": "purged index",
    "ReferenceSnapshot": "version rows synced_at row_count label",
    "ReferenceWritten": "row_count index",
    "Requeued": "requeued index",
    "Revoked": "revoked index",
    "RoleView": "id display_name builtin description",
    "StateEntry": "namespace key value set_at message_id",
    "Stats": "messages rows clock last_applied",
    "TokenCreated": "name role token index",
    "UserSecrets": "recovery_code_hashes totp_secret last_totp_step",
    "UserView": (
        "id username auth_provider disabled created_at updated_at must_change_password "
        "failed_attempts totp_enabled display_name email last_login_at password_hash "
        "password_changed_at locked_until channel_scope totp_enrolled_at"
    ),
    "WorkRow": (
        "id message_id stage channel_id status attempts next_attempt_at created_at updated_at "
        "destination_name handler_name last_error claim last_fence payload"
    ),
}

#: Members the client requires although the schema does not: ``next`` of a ``done`` sent with
#: ``claim_next`` (the same answer without it is :class:`Ack`).
REQUIRED: set[tuple[str, str]] = {("DoneNext", "next")}

LINE = 100


def _is_text(schema: Any) -> bool:
    """A string, or a choice of strings (an enum of the contract, which the client keeps as
    ``str`` so that a value added later still decodes)."""
    if not isinstance(schema, dict):
        return False
    if schema.get("type") == "string":
        return True
    options = schema.get("oneOf") or schema.get("anyOf")
    return isinstance(options, list) and bool(options) and all(_is_text(o) for o in options)


class GenerationError(Exception):
    """The document does not fit the table (a schema missing, a reference to a schema with no
    Python name, a shape this generator does not map)."""


def _resolve_ref(doc: dict[str, Any], ref: str) -> tuple[str, dict[str, Any]]:
    prefix = "#/components/schemas/"
    if not ref.startswith(prefix):
        raise GenerationError(f"unsupported $ref {ref!r}")
    name = ref[len(prefix) :]
    schema = doc.get("components", {}).get("schemas", {}).get(name)
    if not isinstance(schema, dict):
        raise GenerationError(f"$ref {ref!r} names no schema")
    return name, schema


class Generator:
    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc
        self.schemas: dict[str, Any] = doc.get("components", {}).get("schemas", {})
        self.python_name: dict[str, str] = {}
        for py, schema in CLASSES.items():
            if "/" not in schema:
                self.python_name.setdefault(schema, py)
        for schema, py in REFS.items():
            if py not in CLASSES:
                raise GenerationError(f"REFS: {py!r} is not a generated class")
            self.python_name[schema] = py

    # --- types ------------------------------------------------------------------------------

    def nullable(self, schema: Any) -> tuple[Any, bool]:
        """The schema without its ``null`` alternative, and whether it had one."""
        if not isinstance(schema, dict):
            return schema, False
        if schema.get("nullable") is True:
            rest = {k: v for k, v in schema.items() if k != "nullable"}
            return rest, True
        t = schema.get("type")
        if isinstance(t, list) and "null" in t:
            others = [x for x in t if x != "null"]
            rest = dict(schema, type=others[0] if len(others) == 1 else others)
            return rest, True
        for key in ("anyOf", "oneOf"):
            options = schema.get(key)
            if isinstance(options, list) and any(self._is_null(o) for o in options):
                kept = [o for o in options if not self._is_null(o)]
                rest = {k: v for k, v in schema.items() if k != key}
                if len(kept) == 1 and isinstance(kept[0], dict):
                    rest.update(kept[0])
                else:
                    rest[key] = kept
                return rest, True
        return schema, False

    @staticmethod
    def _is_null(o: Any) -> bool:
        return isinstance(o, dict) and (o.get("type") == "null" or o.get("enum") == [None])

    def type_of(self, schema: Any, where: str) -> str:
        """The Python type (as source text) of a member schema, ``| None`` included."""
        inner, null = self.nullable(schema)
        t = self._type(inner, where)
        return f"{t} | None" if null and t != "Any" else t

    def _type(self, schema: Any, where: str) -> str:
        if schema is True or schema == {} or not isinstance(schema, dict):
            return "Any"
        if "$ref" in schema:
            name, target = _resolve_ref(self.doc, schema["$ref"])
            if _is_text(target):
                return "str"
            if name not in self.python_name:
                raise GenerationError(f"{where}: refers to {name!r}, which has no Python name")
            return self.python_name[name]
        all_of = schema.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1:
            return self.type_of(all_of[0], where)
        if "oneOf" in schema or "anyOf" in schema or "allOf" in schema:
            return "Any"
        if "const" in schema or "enum" in schema:
            values = schema.get("enum", [schema.get("const")])
            if all(isinstance(v, str) for v in values):
                return "str"
        t = schema.get("type")
        if t == "string":
            return "str"
        if t == "boolean":
            return "bool"
        if t == "integer":
            return "int"
        if t == "number":
            return "float"
        if t == "array":
            return f"list[{self.type_of(schema.get('items', {}), where + '[]')}]"
        if t == "object" or t is None:
            extra = schema.get("additionalProperties")
            if schema.get("properties"):
                raise GenerationError(f"{where}: an inline object; give it a named schema")
            if isinstance(extra, dict) and extra:
                return f"dict[str, {self.type_of(extra, where + '{}')}]"
            return "dict[str, Any]" if t == "object" else "Any"
        if isinstance(t, list):
            return "Any"
        raise GenerationError(f"{where}: cannot map schema {schema!r}")

    # --- classes ----------------------------------------------------------------------------

    def schema_at(self, py: str, address: str) -> Any:
        name, _, variant = address.partition("/")
        schema = self.schemas.get(name)
        if not isinstance(schema, dict):
            raise GenerationError(f"{py}: the document has no schema {name!r}")
        if variant:
            options = schema.get("anyOf") or schema.get("oneOf")
            n = int(variant) if variant.isdigit() else -1
            if not isinstance(options, list) or not 0 <= n < len(options):
                raise GenerationError(f"{py}: {name!r} has no alternative {variant}")
            schema = options[n]
        return schema

    def object_schema(self, py: str, name: str) -> dict[str, Any]:
        schema = self.schema_at(py, name)
        props: dict[str, Any] = {}
        required: list[str] = []
        description = schema.get("description")
        parts = schema.get("allOf") if isinstance(schema.get("allOf"), list) else [schema]
        for part in parts:
            if isinstance(part, dict) and "$ref" in part:
                _, part = _resolve_ref(self.doc, part["$ref"])
            if not isinstance(part, dict) or not isinstance(part.get("properties"), dict):
                raise GenerationError(f"{py}: schema {name!r} is not an object with members")
            props.update(part["properties"])
            required += [r for r in part.get("required", []) if r not in required]
            description = description or part.get("description")
        return {"properties": props, "required": required, "description": description}

    def default_of(self, prop: Any) -> str:
        """The default of a member the schema does not require."""
        if isinstance(prop, dict) and "default" in prop:
            d = prop["default"]
            if d == []:
                return "field(default_factory=list)"
            if d == {}:
                return "field(default_factory=dict)"
            if d is None or isinstance(d, (bool, int, float, str)):
                return repr(d)
        return "None"

    def render_class(self, py: str, name: str) -> str:
        s = self.object_schema(py, name)
        props: dict[str, Any] = s["properties"]
        required = [m for m in s["required"] if m in props]
        required += [m for m in props if (py, m) in REQUIRED and m not in required]
        # The document's order: its required members in the order it lists them (the
        # contract's declaration order), then the rest; a class of ORDER first takes its own.
        order = required + [m for m in props if m not in required]
        if py in ORDER:
            listed = ORDER[py].split()
            stale = [m for m in listed if m not in props]
            if stale:
                raise GenerationError(f"ORDER[{py!r}] names members {stale} the schema lacks")
            order = listed + [m for m in order if m not in listed]
        first: list[str] = []
        then: list[str] = []
        for member in order:
            prop = props[member]
            if not member.isidentifier() or keyword.iskeyword(member):
                raise GenerationError(f"{py}: member {member!r} is not a Python name")
            t = MEMBER_TYPES.get((py, member)) or self.type_of(prop, f"{name}.{member}")
            if (py, member) in REQUIRED and t.endswith(" | None"):
                t = t[: -len(" | None")]
            described = prop.get("description") if isinstance(prop, dict) else None
            lines = _comment(described, self.python_name)
            if member in required:
                first += lines + [f"    {member}: {t}"]
            else:
                default = self.default_of(prop)
                if default == "None" and not t.endswith("| None") and t != "Any":
                    t = f"{t} | None"
                then += lines + [f"    {member}: {t} = {default}"]
        doc = _docstring(s["description"], self.python_name)
        return "\n".join(["@dataclass(frozen=True)", f"class {py}:", *doc, *(first + then)])

    def module(self, source: str) -> str:
        missing = [
            f"{py} ({name})"
            for py, name in CLASSES.items()
            if name.partition("/")[0] not in self.schemas
        ]
        if missing:
            raise GenerationError("the document has no schema for " + ", ".join(missing))
        classes = [self.render_class(py, name) for py, name in CLASSES.items()]
        code = "\n".join(classes)
        imports = ["from __future__ import annotations", ""]
        imports.append(
            "from dataclasses import dataclass, field"
            if "field(" in code
            else "from dataclasses import dataclass"
        )
        if re.search(r"(: |\[|, )Any\b", code):
            imports.append("from typing import Any")
        names = "".join(f'    "{py}",\n' for py in sorted(CLASSES))
        head = (
            f'"""The API\'s wire types as frozen dataclasses, generated from {source} by\n'
            "clients/python/scripts/gen_types.py: do not edit; change the contract (or the\n"
            "script's tables) and run the script again. ``raftlane.types`` re-exports them.\n"
            '"""\n\n' + "\n".join(imports) + f"\n\n__all__ = [\n{names}]\n"
        )
        return head + "".join(f"\n\n{c}\n" for c in classes)


def _clean(text: str, names: dict[str, str]) -> str:
    """A description as Python documentation: one paragraph, code in double backquotes, the
    contract's type names (a link such as ``[`MessageDetail`]``) as the client's
    (``MessageView``)."""
    text = " ".join(text.replace('"""', "'''").replace("\\", "\\\\").split())
    text = re.sub(r"\[`([A-Za-z]+)`\]", lambda m: f"``{names.get(m[1], m[1])}``", text)
    return re.sub(r"(?<!`)`([^`]+)`(?!`)", r"``\1``", text)


def _docstring(description: str | None, names: dict[str, str]) -> list[str]:
    if not description:
        return []
    text = _clean(description, names)
    if len(text) + 10 <= LINE:
        return [f'    """{text}"""', ""]
    lines = textwrap.wrap(text, LINE - 10, break_on_hyphens=False)
    lines[0] = '"""' + lines[0]
    lines[-1] += '"""'
    return [f"    {ln}" for ln in lines] + [""]


def _comment(description: str | None, names: dict[str, str]) -> list[str]:
    if not description:
        return []
    text = _clean(description, names)
    return [f"    #: {ln}" for ln in textwrap.wrap(text, LINE - 7, break_on_hyphens=False)]


def generate(openapi: Path, source: str = "api/openapi.json") -> str:
    doc = json.loads(openapi.read_text())
    return Generator(doc).module(source)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--openapi", type=Path, default=DEFAULT_OPENAPI)
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = p.parse_args(argv)
    try:
        text = generate(args.openapi)
    except GenerationError as e:
        print(f"gen_types: {e}", file=sys.stderr)
        return 1
    args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
