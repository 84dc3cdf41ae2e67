"""The request and answer types of the raftlane HTTP API, as frozen dataclasses.

The wire types (every answer, and what they nest) are generated from the API's OpenAPI document
into :mod:`raftlane._generated` by ``clients/python/scripts/gen_types.py``, and re-exported here
under the client's names; this module adds the types only the client has: :class:`Stage`, the
parts of a row action's request (:class:`Handler`, :class:`Delivery`, :class:`StateOp`,
:class:`RetryPolicy`), :class:`RowActionResult` and :class:`Backup`, and :func:`decode`.

Each answer type decodes with :func:`decode` from the JSON the server sends (docs/SPEC.md §10.1).
Members the server adds later are ignored, so an older client keeps working against a newer
node; a member the document requires and the answer lacks is a
:class:`~raftlane.errors.DecodeError`. The contract's enums (a row's ``stage`` and ``status``, an
event's kind...) decode as ``str``, so a value added later still decodes.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass
from enum import Enum
from typing import Any, TypeVar, Union

from . import _generated
from ._generated import *  # every wire type, listed once: in _generated
from .errors import DecodeError

__all__ = [
    "UNLIMITED_ATTEMPTS",
    "Backup",
    "Delivery",
    "Handler",
    "MessageMeta",
    "RetryPolicy",
    "RowActionResult",
    "RowMeta",
    "Stage",
    "StateOp",
    "decode",
]
__all__ += _generated.__all__

#: What the client called a message without its body before the types were generated: a
#: :class:`Message` (its ``raw`` is ``None`` unless asked for).
MessageMeta = Message
#: What the client called a work row without its payload before the types were generated: a
#: :class:`WorkRow` (its ``payload`` is ``None`` unless asked for).
RowMeta = WorkRow


class Stage(str, Enum):
    """A work row's stage; a lane is ``(stage, name)``."""

    INGRESS = "ingress"
    ROUTED = "routed"
    OUTBOUND = "outbound"
    RESPONSE = "response"


# --- the parts of a row action's request ----------------------------------------------------


@dataclass(frozen=True)
class Handler:
    """One handler of a ``route``, with the payload its routed row gets."""

    handler: str
    payload: str = ""


@dataclass(frozen=True)
class Delivery:
    """One outbound row of a ``handoff`` or ``transform``."""

    destination: str
    payload: str = ""


@dataclass(frozen=True)
class StateOp:
    """A transform-state write of a ``transform``; ``value`` is any JSON value."""

    namespace: str
    key: str
    value: Any


#: ``RetryPolicy.max_attempts`` for "no limit: retry with backoff forever" (docs/SPEC.md §5.2).
UNLIMITED_ATTEMPTS = -1


@dataclass(frozen=True)
class RetryPolicy:
    """The retry policy of a ``fail``: ``multiplier`` from 1.0 to 100.0, sent as
    ``multiplier_milli`` (thousandths, the config's spelling, docs/SPEC.md §5.2);
    ``max_attempts``: at least 1, :data:`UNLIMITED_ATTEMPTS` (``-1``) to retry forever, or
    ``None`` for the server's default limit (10 attempts). ``backoff_ms`` and
    ``max_backoff_ms`` are at most a day."""

    backoff_ms: int
    multiplier: float
    max_backoff_ms: int
    max_attempts: int | None = None

    @property
    def multiplier_milli(self) -> int:
        """The multiplier as it travels: thousandths, rounded (1.5 -> 1500)."""
        return round(self.multiplier * 1000)


@dataclass(frozen=True)
class RowActionResult:
    """One result of ``POST /v1/rows/actions``: ``answer`` is the action's own answer (as JSON)
    when it succeeded, else ``error`` is the :class:`~raftlane.errors.ApiError` it got."""

    answer: dict[str, Any] | None
    error: Exception | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class Backup:
    """A backup :meth:`raftlane.Client.backup` wrote (``GET /v1/cluster/snapshot``)."""

    path: str
    #: The last log index the backup reflects (its ``x-raftlane-snapshot-index`` header).
    index: int
    #: The node that served it.
    node_id: int
    #: The file's size.
    bytes: int


# --- decoding -------------------------------------------------------------------------------

T = TypeVar("T")

_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    hints = _HINTS.get(cls)
    if hints is None:
        hints = typing.get_type_hints(cls)
        _HINTS[cls] = hints
    return hints


def _convert(tp: Any, value: Any, where: str) -> Any:
    if tp is Any:
        return value
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None:
            if type(None) in args:
                return None
            raise DecodeError(f"{where}: null where {tp} was expected")
        inner = [a for a in args if a is not type(None)]
        if len(inner) == 1:
            return _convert(inner[0], value, where)
        return value
    if origin is list:
        if not isinstance(value, list):
            raise DecodeError(f"{where}: expected a list, got {type(value).__name__}")
        (item,) = typing.get_args(tp)
        return [_convert(item, v, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise DecodeError(f"{where}: expected an object, got {type(value).__name__}")
        _, item = typing.get_args(tp)
        return {k: _convert(item, v, f"{where}.{k}") for k, v in value.items()}
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return decode(tp, value, where)
    if tp is bool:
        if not isinstance(value, bool):
            raise DecodeError(f"{where}: expected a boolean, got {value!r}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise DecodeError(f"{where}: expected an integer, got {value!r}")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise DecodeError(f"{where}: expected a number, got {value!r}")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise DecodeError(f"{where}: expected a string, got {value!r}")
        return value
    return value


def decode(cls: type[T], value: Any, where: str = "answer") -> T:
    """``value`` (parsed JSON) as a ``cls``; a missing required member or a member of the wrong
    type is a :class:`~raftlane.errors.DecodeError`. Unknown members are ignored."""
    if not isinstance(value, dict):
        raise DecodeError(f"{where}: expected an object for {cls.__name__}, got {value!r}")
    kwargs: dict[str, Any] = {}
    hints = _hints(cls)
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if not f.init:
            continue
        if f.name in value:
            kwargs[f.name] = _convert(hints[f.name], value[f.name], f"{where}.{f.name}")
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise DecodeError(f"{where}: {cls.__name__} needs member {f.name!r}")
    return cls(**kwargs)
