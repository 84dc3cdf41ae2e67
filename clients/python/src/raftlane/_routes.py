"""Route declarations: what a :class:`~raftlane.Client` method calls, said once, in its decorator.

A route method is declared with :func:`route`: the verb, the path template, which of the
method's parameters fill the path, the query, the headers and the JSON body, and the type its
answer decodes into. The decorator builds the request from the call's arguments and decodes the
answer, so the method itself states only its Python signature, defaults and docstring. A method
that does more than that (validates its arguments, calls one node without failover, turns the
answer into something else) is declared ``by_hand=True``: the decorator only records the route
and the method's body makes the call through ``Client._invoke``, which builds the request from
the same declaration.

The declarations are also what ``tests/openapi_check.py`` compares with the served OpenAPI
document (:class:`RouteInfo`), and what :class:`~raftlane.RowAction` builds its bodies from.
"""

from __future__ import annotations

import enum
import functools
import inspect
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from string import Formatter
from typing import Any, NamedTuple, TypeVar, cast
from urllib.parse import quote

from . import wire
from .errors import DecodeError
from .types import decode

__all__ = ["Request", "Route", "RouteInfo", "route", "route_of", "segment"]

F = TypeVar("F", bound=Callable[..., Awaitable[Any]])

#: A wire member's source: one parameter, or several gathered into one JSON object.
Source = str | tuple[str, ...]


#: RFC 3986's unreserved characters: what a path segment carries as it is.
_UNRESERVED = re.compile(r"[A-Za-z0-9._~-]*")


def segment(name: str | int) -> str:
    """``name`` as one path segment: every byte but RFC 3986's unreserved characters
    percent-encoded, so a name with ``/``, ``?``, ``#``, ``%`` or a space stays one segment."""
    s = str(name)
    return s if _UNRESERVED.fullmatch(s) else quote(s, safe="")


@dataclass(frozen=True)
class RouteInfo:
    """The route a :class:`~raftlane.Client` method calls, the body and query members it may
    send and the type its answer decodes into (``tests/test_cluster.py`` checks them against the
    served OpenAPI document, with ``tests/openapi_check.py``)."""

    method: str
    path: str
    name: str
    body: tuple[str, ...] = ()
    answer: type | None = None
    query: tuple[str, ...] = ()


class Request(NamedTuple):
    """One call's request as its route builds it: the filled path, the query (``None`` values
    are left out by the wire), extra headers, the JSON body (``None``: no body) and how long the
    server may hold the call."""

    path: str
    query: dict[str, Any]
    headers: dict[str, str]
    json: Any
    wait_s: float = 0.0


def _plain(v: Any) -> Any:
    """A member's value as JSON takes it: an enum as its value, a mapping as a dict, any other
    iterable (a tuple, a generator) as a list."""
    if isinstance(v, enum.Enum):
        return v.value
    if v is None or isinstance(v, (str, bytes, int, float, bool, dict, list)):
        return v
    if isinstance(v, Mapping):
        return dict(v)
    if isinstance(v, Iterable):
        return list(v)
    return v


#: What :func:`_plain` leaves as it is.
_AS_IS = frozenset({str, int, bool, float, dict, list})


def _to_wire(v: Any, encode: Callable[[Any], Any] | None) -> Any:
    """A member's value as it travels: ``None`` (left out) stays ``None``, ``encode`` (if any)
    applies to the rest, then :func:`_plain`."""
    if v is None:
        return None
    if encode is not None:
        v = encode(v)
        if v is None:
            return None
    return v if type(v) in _AS_IS else _plain(v)


def _query_value(v: Any) -> Any:
    """A query member: lists travel comma-separated (``allowed_channels=a,b``)."""
    if isinstance(v, list):
        return ",".join(str(_plain(x)) for x in v)
    return v


Binder = Callable[[tuple[Any, ...], dict[str, Any]], dict[str, Any]]


def _binder(signature: inspect.Signature) -> Binder:
    """A function binding a call's arguments (without ``self``) to parameter names, defaults
    applied, as ``signature.bind`` does but several times faster: route methods sit on the
    engine's hot path. A call it cannot bind simply goes to ``signature.bind``, which raises
    Python's own ``TypeError``."""
    params = list(signature.parameters.values())[1:]
    kinds = inspect.Parameter
    positional = [p.name for p in params if p.kind is kinds.POSITIONAL_OR_KEYWORD]
    named = (kinds.POSITIONAL_OR_KEYWORD, kinds.KEYWORD_ONLY)
    keyword = {p.name for p in params if p.kind in named}
    defaults = {p.name: p.default for p in params if p.default is not kinds.empty}
    required = len(keyword)
    varkw = next((p.name for p in params if p.kind is kinds.VAR_KEYWORD), None)
    if any(p.kind in (kinds.POSITIONAL_ONLY, kinds.VAR_POSITIONAL) for p in params):
        raise TypeError("route methods take no positional-only or *args parameters")

    def slow(a: tuple[Any, ...], kw: dict[str, Any]) -> dict[str, Any]:
        bound = signature.bind(None, *a, **kw)
        bound.apply_defaults()
        out = dict(bound.arguments)
        del out[next(iter(signature.parameters))]
        return out

    def bind(a: tuple[Any, ...], kw: dict[str, Any]) -> dict[str, Any]:
        if len(a) > len(positional):
            return slow(a, kw)
        out = dict(defaults)
        out.update(zip(positional, a))
        extra: dict[str, Any] = {}
        for k, v in kw.items():
            if k in keyword and k not in positional[: len(a)]:
                out[k] = v
            elif varkw is not None and k not in keyword:
                extra[k] = v
            else:
                return slow(a, kw)
        if len(out) < required:
            return slow(a, kw)
        if varkw is not None:
            out[varkw] = extra
        return out

    return bind


class Route:
    """A method's declared route (see :func:`route` for what each part means), checked against
    the method's signature when the class is built: every member has a source and every
    parameter reaches the request, so a misspelt name fails at import, not on the wire."""

    def __init__(
        self,
        fn: Callable[..., Any],
        verb: str,
        path: str,
        *,
        body: Sequence[str] | None,
        query: Sequence[str],
        headers: Mapping[str, str],
        answer: type | None,
        unwrap: str | Callable[[Any], Any] | None,
        args: Mapping[str, Source],
        const: Mapping[str, Any],
        encode: Mapping[str, Callable[[Any], Any]],
        body_from: str | None,
        wait: str | None,
        by_hand: bool,
    ) -> None:
        self.name = fn.__name__
        self.verb = verb.upper()
        self.path = path
        #: The template as literal text and members, in order: ``("/v1/rows/", None),
        #: ("", "id")``...
        self._path_pieces: list[tuple[str, str | None]] = []
        for literal, member, _, _ in Formatter().parse(path):
            self._path_pieces.append((literal, None))
            if member:
                self._path_pieces.append(("", member))
        self.path_members = tuple(m for _, m in self._path_pieces if m)
        self.query = tuple(query)
        self.body = None if body is None else tuple(body)
        self.headers = dict(headers)
        self.answer = answer
        self.unwrap = unwrap
        self.const = dict(const)
        self.encode = dict(encode)
        self.body_from = body_from
        self.wait = wait
        self.by_hand = by_hand
        self.info = RouteInfo(
            verb.lower(), path, self.name, tuple(body or ()), answer, tuple(query)
        )
        self.signature = inspect.signature(fn)
        params = self.signature.parameters
        self.varkw = next(
            (p.name for p in params.values() if p.kind is inspect.Parameter.VAR_KEYWORD), None
        )
        members = [*self.path_members, *self.query]
        if body_from is None:
            members += self.body or ()
        #: wire member -> the parameter(s) its value comes from
        self.sources: dict[str, Source] = {}
        for m in members:
            if m in self.const:
                continue
            src = args.get(m, m)
            if all(p in params for p in ((src,) if isinstance(src, str) else src)):
                self.sources[m] = src
            elif not (by_hand or (self.varkw and m in self.query and m not in args)):
                # (A method by hand passes its members' values itself.)
                raise TypeError(f"{self.name}: member {m!r} has no parameter {src!r}")
        for h, p in self.headers.items():
            if p not in params:
                raise TypeError(f"{self.name}: header {h!r} has no parameter {p!r}")
        for name in (body_from, wait):
            if name is not None and name not in params:
                raise TypeError(f"{self.name}: no parameter {name!r}")
        unknown = set(self.encode) - set(members) - set(self.headers)
        if unknown:
            raise TypeError(f"{self.name}: encoders for no member: {sorted(unknown)}")
        if not by_hand:
            used = {body_from, wait, self.varkw, *self.headers.values()}
            for src in self.sources.values():
                used.update((src,) if isinstance(src, str) else src)
            unused = [p for p in list(params)[1:] if p not in used]
            if unused:
                raise TypeError(f"{self.name}: parameters that reach no member: {unused}")

    # --- building the request -----------------------------------------------------------------

    def values(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Each member's value taken from a call's arguments (by parameter name), before
        encoding; a member gathered from several parameters is an object of those not
        ``None``."""
        out = dict(self.const)
        for m, src in self.sources.items():
            if isinstance(src, str):
                out[m] = arguments[src]
            else:
                out[m] = {p: arguments[p] for p in src if arguments[p] is not None}
        for h, p in self.headers.items():
            out[h] = arguments[p]
        return out

    def request(
        self,
        values: Mapping[str, Any],
        *,
        body: Mapping[str, Any] | None = None,
        extra_query: Mapping[str, Any] | None = None,
        wait_s: float = 0.0,
    ) -> Request:
        """The request for the members' ``values`` (constants added); ``body`` stands for the
        whole body (a route with ``body_from``, or a method by hand)."""
        if self.const:
            values = {**self.const, **values}
        enc = self.encode.get
        path = "".join(
            [
                piece if member is None else segment(_to_wire(values[member], enc(member)))
                for piece, member in self._path_pieces
            ]
        )
        query = {m: _query_value(_to_wire(values.get(m), enc(m))) for m in self.query}
        if extra_query:
            query.update((k, _query_value(_to_wire(v, None))) for k, v in extra_query.items())
        headers = {}
        for h in self.headers:
            v = _to_wire(values.get(h), enc(h))
            if v is not None:
                headers[h] = str(v)
        json: Any = None
        if body is not None:
            json = dict(body)
        elif self.body is not None:
            json = {}
            for m in self.body:
                v = _to_wire(values.get(m), enc(m))
                if v is not None:
                    json[m] = v
        return Request(path, query, headers, json, wait_s)

    def request_for(self, arguments: Mapping[str, Any]) -> Request:
        """The request of a call with these arguments (by parameter name, defaults applied)."""
        body = None
        if self.body_from is not None:
            body = dict(arguments[self.body_from] or {})
        wait_s = (arguments[self.wait] or 0) / 1000 if self.wait is not None else 0.0
        return self.request(
            self.values(arguments),
            body=body,
            extra_query=arguments[self.varkw] if self.varkw is not None else None,
            wait_s=wait_s,
        )

    # --- reading the answer -------------------------------------------------------------------

    def answer_of(self, r: wire.Answer, path: str) -> Any:
        """The answer as the method returns it: decoded into the route's type (text for
        ``str``, nothing for ``None``), then unwrapped."""
        where = f"{self.verb} {path}"
        if self.answer is None:
            return None
        if self.answer is str:
            return r.text
        try:
            body = r.json()
        except ValueError as e:
            raise DecodeError(f"{where}: not JSON: {e}") from e
        if self.answer is dict:
            if not isinstance(body, dict):
                raise DecodeError(f"{where}: not a JSON object")
            return body
        value: Any = decode(self.answer, body, where)
        if self.unwrap is None:
            return value
        if isinstance(self.unwrap, str):
            return getattr(value, self.unwrap)
        return self.unwrap(value)


def route(
    method: str,
    path: str,
    *,
    body: Sequence[str] | None = None,
    query: Sequence[str] = (),
    headers: Mapping[str, str] | None = None,
    answer: type | None = None,
    unwrap: str | Callable[[Any], Any] | None = None,
    args: Mapping[str, Source] | None = None,
    const: Mapping[str, Any] | None = None,
    encode: Mapping[str, Callable[[Any], Any]] | None = None,
    body_from: str | None = None,
    wait: str | None = None,
    by_hand: bool = False,
) -> Callable[[F], F]:
    """Declare the route a method calls and, unless ``by_hand``, make the call from it.

    - ``path``: the template as the OpenAPI document writes it; each ``{member}`` is filled with
      a parameter's value as one path segment.
    - ``body``: the JSON object's members, in order (``None``: the request has no body; ``()``:
      an empty object). ``query``: the query members. ``headers``: header name -> parameter.
    - A member's value is the parameter of the same name, else ``args[member]`` (a parameter,
      or a tuple of parameters gathered into one object), else ``const[member]``. ``None`` is
      left out; ``encode[member]`` turns any other value into what travels (returning ``None``
      leaves it out too); enums travel as their value, other iterables as lists (in a query,
      comma-separated).
    - ``body_from``: the parameter holding the whole body (a mapping); ``body`` then only names
      the members it is expected to have. A ``**kwargs`` parameter's items join the query.
    - ``wait``: the parameter (ms) the server may hold the call for, added to its timeout.
    - ``answer``: the dataclass the answer decodes into (``str``: the answer's text, ``dict``:
      a JSON object as it is, ``None``: nothing); ``unwrap``: the member of it the method
      returns, or a function of it.
    """

    def declare(fn: F) -> F:
        spec = Route(
            fn,
            method,
            path,
            body=body,
            query=query,
            headers=headers or {},
            answer=answer,
            unwrap=unwrap,
            args=args or {},
            const=const or {},
            encode=encode or {},
            body_from=body_from,
            wait=wait,
            by_hand=by_hand,
        )
        if by_hand:
            fn.__raftlane_route__ = spec  # type: ignore[attr-defined]
            return fn
        bind = _binder(spec.signature)

        async def call(self: Any, *a: Any, **kw: Any) -> Any:
            return await self._invoke_route(spec, spec.request_for(bind(a, kw)))

        functools.update_wrapper(call, fn)
        call.__raftlane_route__ = spec  # type: ignore[attr-defined]
        return cast(F, call)

    return declare


def route_of(method: Callable[..., Any]) -> Route:
    """The route a method was declared with."""
    spec = getattr(method, "__raftlane_route__", None)
    if not isinstance(spec, Route):
        raise TypeError(f"{getattr(method, '__name__', method)!r} declares no route")
    return spec
