from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from raftlane import Client
from raftlane.testing import ClusterHandle, binary, empty_cluster


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if binary() is not None:
        return
    skip = pytest.mark.skip(reason="no raftlane binary (set RAFTLANE_BIN or put raftlane on PATH)")
    for item in items:
        if "cluster" in item.keywords:
            item.add_marker(skip)


@pytest_asyncio.fixture(scope="session")
async def cluster() -> AsyncIterator[ClusterHandle]:
    """One empty cluster shared by the tests that leave it running (each uses its own names)."""
    async with empty_cluster() as handle:
        yield handle


@pytest_asyncio.fixture
async def client(cluster: ClusterHandle) -> AsyncIterator[Client]:
    endpoints, token = cluster
    async with Client(endpoints, token) as c:
        yield c


@pytest.fixture
def name() -> str:
    """A name no other test uses (channels, lanes, orgs...)."""
    return f"t{uuid.uuid4().hex[:10]}"
