"""The route declarations (raftlane/_routes.py): what each method says it returns matches what its
route decodes, a declaration that names a member no parameter fills fails when the class is
built, and the decorated methods bind their arguments as Python would."""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

import httpx
import pytest

from raftlane import Client
from raftlane._routes import route, route_of

PUBLIC_ROUTES = [
    getattr(Client, name)
    for name in vars(Client)
    if hasattr(getattr(Client, name), "__raftlane_route__")
]


def _returned(method: Any) -> Any:
    return typing.get_type_hints(method)["return"]


@pytest.mark.parametrize("method", PUBLIC_ROUTES, ids=lambda m: f"Client.{m.__name__}")
def test_the_declared_return_type_is_what_the_route_decodes(method: Any) -> None:
    spec = route_of(method)
    returned = _returned(method)
    if spec.by_hand:
        return  # the method's own body builds what it returns (checked by mypy)
    if spec.answer is None:
        assert returned is type(None)
    elif spec.answer is str:
        assert returned is str
    elif spec.answer is dict:
        assert typing.get_origin(returned) is dict
    elif spec.unwrap is None:
        assert returned is spec.answer
    elif isinstance(spec.unwrap, str):
        field = typing.get_type_hints(spec.answer)[spec.unwrap]
        assert returned == field, f"{spec.answer.__name__}.{spec.unwrap} is {field}"
    else:
        assert returned == _returned(spec.unwrap)


def test_every_answer_type_is_a_dataclass_and_no_method_returns_any() -> None:
    for method in PUBLIC_ROUTES:
        spec = route_of(method)
        assert _returned(method) is not Any, method.__name__
        if spec.answer not in (None, str, dict):
            assert dataclasses.is_dataclass(spec.answer), method.__name__


def test_a_member_without_a_parameter_fails_at_declaration() -> None:
    with pytest.raises(TypeError, match="member 'nme' has no parameter 'nme'"):

        @route("get", "/v1/things/{nme}")
        async def thing(self: Any, name: str) -> None: ...

    with pytest.raises(TypeError, match="parameters that reach no member: \\['limit'\\]"):

        @route("get", "/v1/things", query=("name",))
        async def things(self: Any, name: str, limit: int = 1) -> None: ...

    with pytest.raises(TypeError, match="encoders for no member"):

        @route("post", "/v1/things", body=("name",), encode={"nam": str})
        async def make(self: Any, name: str) -> None: ...


async def test_calls_bind_their_arguments_as_python_does() -> None:
    seen: list[httpx.Request] = []

    def answer(r: httpx.Request) -> httpx.Response:
        seen.append(r)
        return httpx.Response(200, json={"applied": True, "index": 1, "renewed": 2})

    async with Client(["127.0.0.1:7001"], "t", transport=httpx.MockTransport(answer)) as c:
        assert await c.renew([1], owner="w", ttl_ms=5) == 2
        assert await c.renew(ids=[1], ttl_ms=5, owner="w") == 2
        with pytest.raises(TypeError):
            await c.renew([1], owner="w")  # type: ignore[call-arg]
        with pytest.raises(TypeError):
            await c.renew([1], "w", 5)  # type: ignore[misc]
        with pytest.raises(TypeError):
            await c.renew([1], ids=[2], owner="w", ttl_ms=5)  # type: ignore[misc]
        with pytest.raises(TypeError):
            await c.renew([1], owner="w", ttl_ms=5, colour="red")  # type: ignore[call-arg]
    assert len(seen) == 2
    assert seen[0].content == seen[1].content == b'{"owner":"w","ids":[1],"ttl_ms":5}'


def test_decorated_methods_keep_their_names_signatures_and_docstrings() -> None:
    import inspect

    assert Client.claim.__name__ == "claim"
    assert "wait_ms" in inspect.signature(Client.claim).parameters
    assert Client.claim.__doc__ and "wait_ms" in Client.claim.__doc__
