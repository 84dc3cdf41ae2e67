"""conftest.py of the rewritten messagefoundry suite (copied beside it by harness.py).

- ``MEFOR_TEST_POSTGRES=1``: the module's skip gate, set before the module is imported.
- ``store``: a ``RaftlaneStore`` on a fresh three-node cluster per test (the PostgreSQL fixture
  truncated every table; raftlane's state clock only moves forward, so each test gets its own
  cluster), started with ``--test-client-clock`` when the binary has it (harness.py decides and
  says so in its summary).
- ``PostgresStore.open`` is patched for the test's duration: a test that opens a second handle
  (a "follower" or "other owner") gets another ``RaftlaneStore`` on the same cluster, with its
  own ``_owner`` and empty caches loaded from the cluster.
- ``journal_mode="postgres"``: the label ``db_status`` reports, because the suite asserts the
  label of the backend it was written for (a label, not behaviour; docs/MESSAGEFOUNDRY.md §7).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import Any

os.environ["MEFOR_TEST_POSTGRES"] = "1"

import pytest
import pytest_asyncio

from raftlane.messagefoundry import RaftlaneStore
from raftlane.testing import empty_cluster

CLIENT_CLOCK = os.environ.get("RAFTLANE_MF_CLIENT_CLOCK") == "1"


@pytest_asyncio.fixture
async def store(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[RaftlaneStore]:
    from messagefoundry.store.postgres import PostgresStore

    node_args = ["--test-client-clock"] if CLIENT_CLOCK else []
    async with empty_cluster(node_args=node_args) as cluster:
        endpoints, token = cluster
        opened: list[RaftlaneStore] = []

        async def open_handle() -> RaftlaneStore:
            s = await RaftlaneStore.open(
                endpoints,
                token,
                journal_mode="postgres",
                deadline=10.0,
                client_clock=CLIENT_CLOCK,
            )
            opened.append(s)
            return s

        async def open_second(cls: Any, settings: Any = None, *, cipher: Any = None) -> Any:
            return await open_handle()

        monkeypatch.setattr(PostgresStore, "open", classmethod(open_second))
        first = await open_handle()
        try:
            yield first
        finally:
            for s in opened:
                await s.close()
