"""Two messagefoundry engine nodes on one three-node raftlane cluster, end to end over MLLP,
through faults.

Each engine is ``python -m raftlane.messagefoundry serve`` (messagefoundry's own service with
raftlane as store and coordinator) on the same code-first registry: an MLLP inbound, a router,
a handler, and an MLLP outbound to a test receiver that answers AA. A sender sends 1,000
synthetic ADT messages one by one to the first engine, failing over to the second when the
first is gone, and records each ACK. After 300 ACKs the raftlane leader is killed with SIGKILL
and restarted; after 600 the first engine is killed with SIGKILL. It runs twice: on plaintext
nodes, and with encryption at rest on (the same fresh keyring on every node, docs/SPEC.md §2.6).

Afterwards: every message ACKed AA reached the receiver; the first deliveries arrived in send
order (one destination, FIFO); duplicates (a message in flight at a crash, delivered again by
the surviving engine) are counted and reported; no row is left pending or in flight; the audit
chains verify; the three raftlane nodes agree on their state digest. With the keyring, every
value it covers was written encrypted under the active key: a key rotation to that same key finds
nothing to rewrite (it would re-encrypt any value stored as plaintext).
"""

from __future__ import annotations

import asyncio
import base64
import os
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
import pytest_asyncio

pytest.importorskip("messagefoundry")


from raftlane import Client
from raftlane.errors import RaftlaneError
from raftlane.messagefoundry import AUDIT_ORG
from raftlane.messagefoundry.testing import (
    EngineProcess,
    Receiver,
    Sender,
    adt,
    free_port,
    write_project,
)
from raftlane.testing import ClusterHandle, empty_cluster

pytestmark = pytest.mark.cluster

MESSAGES = int(os.environ.get("RAFTLANE_E2E_MESSAGES", "1000"))
KILL_LEADER_AT = MESSAGES * 3 // 10
KILL_ENGINE_AT = MESSAGES * 6 // 10
#: Row and lane leases of the engines' claims: a killed engine's lanes free up after this.
LEASE_TTL = 3.0


@pytest.fixture(params=[False, True], ids=["plaintext", "keyring"])
def keyring(request: pytest.FixtureRequest) -> bool:
    """Whether the nodes encrypt at rest."""
    return bool(request.param)


@pytest_asyncio.fixture
async def cluster(keyring: bool) -> AsyncIterator[ClusterHandle]:
    env = {}
    if keyring:
        # A key made for this run only: never a key kept anywhere.
        key = base64.b64encode(secrets.token_bytes(32)).decode()
        env["RAFTLANE_KEYRING"] = f"e2e:{key}"
    # RAFTLANE_E2E_KEEP=1 keeps the nodes' data directories for a look after a failure.
    keep = bool(os.environ.get("RAFTLANE_E2E_KEEP"))
    async with empty_cluster(node_env=env, keep_data=keep) as handle:
        yield handle


async def wait_for(check: Callable[[], Awaitable[bool]], what: str, timeout: float) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not await check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.5)


async def where_they_are(endpoints: list[str], token: str, controls: list[str]) -> str:
    """What the cluster holds about undelivered messages, for the failure report: the row
    counts, every lane with its holder, and each named message's rows."""
    lines = []
    try:
        async with Client(endpoints, token) as client:
            stats = await client.stats()
            lines.append(f"rows by stage and status: {stats.rows} (clock {stats.clock})")
            for lane in (await client.lanes()).lanes:
                lines.append(f"lane {lane}")
            # The first few as they are, and every row of the others that is out or was tried.
            for n, control in enumerate(controls):
                for listed in await client.list_messages(control_id=control):
                    view = await client.message(listed.id, record_view=False)
                    for row in view.rows:
                        if n < 3 or row.status == "inflight" or row.attempts > 1 or row.last_error:
                            lines.append(f"{control} ({view.message.status}): {row}")
    except (RaftlaneError, OSError) as e:
        lines.append(f"(could not read the cluster: {e})")
    return "\n".join(lines) + "\n"


async def stored_values_are_ciphertext(cluster: ClusterHandle, client: Client) -> None:
    """What a node holds on disk, seen through a node restarted without the keyring (it serves
    values as stored): every message's body and every row's payload is ciphertext under the
    cluster's key, and none of the bodies' text is there."""
    node = cluster.nodes[-1]
    await cluster.stop_node(node)
    node.env = {k: v for k, v in node.env.items() if k != "RAFTLANE_KEYRING"}
    await cluster.start_node(node)
    listed_messages = await client.list_messages(limit=20)
    assert listed_messages, "no message to look at"
    async with Client([node.endpoint], cluster.token, follow_leader=False) as plain:
        for listed in listed_messages:
            view = await plain.message(listed.id, body=True, record_view=False)
            raw = view.message.raw or ""
            assert raw.startswith("enc:v1:e2e:"), f"message {listed.id} stored as {raw[:40]!r}"
            assert "MSH|" not in raw
            for row in view.rows:
                if row.payload:
                    assert row.payload.startswith("enc:v1:e2e:"), (listed.id, row.payload[:40])


async def test_two_engines_deliver_every_acked_message_in_order_through_crashes(
    cluster: ClusterHandle, keyring: bool, tmp_path: Path
) -> None:
    endpoints, token = cluster
    receiver = Receiver(free_port())
    # messagefoundry 0.1.0 runs its clustered engine active-passive: only the leader runs the
    # graph (listeners and workers); a standby takes over once the leader's lease ran out.
    project = write_project(
        tmp_path / "project",
        emr_port=receiver.port,
        settings={
            "cluster": {
                "heartbeat_seconds": 0.5,
                "node_timeout_seconds": 5.0,
                "leader_lease_ttl_seconds": 3.0,
                "leader_fence_timeout_seconds": 2.0,
                "reclaim_interval_seconds": 2.0,
            }
        },
    )
    # The engines run on an `engine` token, as `serve --help` says (docs/SPEC.md §9.3): one
    # principal for both, so that a promoted standby takes back its predecessor's claims.
    async with Client(endpoints, token) as admin:
        engine_token = (await admin.create_token("mf-engines", "engine")).token
    token_file = tmp_path / "token"
    token_file.write_text(engine_token)
    await receiver.start()
    engines = [
        EngineProcess(
            f"engine-{i}", project, raftlane=endpoints, token_file=token_file, lease_ttl=LEASE_TTL
        )
        for i in (1, 2)
    ]
    try:
        # engine-1 starts first and leads; engine-2 stands by.
        engines[0].start()
        await engines[0].wait_listening()
        engines[1].start()

        acked: list[str] = []
        refused: list[str] = []
        target = 0
        sender = Sender("127.0.0.1", engines[0].inbound_port)
        for n in range(MESSAGES):
            message = adt(n)
            control = f"MSG{n:06d}"
            if n == KILL_LEADER_AT:
                leader = await cluster.leader()
                await cluster.stop_node(leader, kill=True)
                asyncio.get_running_loop().call_later(
                    2.0, lambda node=leader: asyncio.ensure_future(cluster.start_node(node))
                )
            if n == KILL_ENGINE_AT:
                engines[0].kill()
            for _attempt in range(60):
                try:
                    code = await sender.send(message)
                except (TimeoutError, OSError, asyncio.IncompleteReadError):
                    # The engine is gone, slow, or standing by (it lost its lease while the
                    # raftlane leader was down, so its listener closed): this message is
                    # un-ACKed; send it again to the other engine if it runs, as a sender
                    # configured with both engines' addresses fails over.
                    other = 1 - target
                    if engines[other].running or not engines[target].running:
                        await sender.close()
                        target = other
                        sender = Sender("127.0.0.1", engines[target].inbound_port)
                    await asyncio.sleep(0.5)
                    continue
                if code == "AA":
                    acked.append(control)
                    break
                # AE/AR: the engine could not store it (say, during a raftlane election); a
                # sender sends it again, as HL7 senders do.
                await asyncio.sleep(0.5)
            else:
                refused.append(control)
        await sender.close()
        assert len(acked) + len(refused) == MESSAGES

        async def all_delivered() -> bool:
            return set(acked) <= set(receiver.control_ids())

        try:
            await wait_for(all_delivered, "every AA message at the receiver", 180.0)
        except AssertionError:
            missing = sorted(set(acked) - set(receiver.control_ids()))
            raise AssertionError(
                f"{len(missing)} ACKed messages never delivered, e.g. {missing[:5]}\n"
                + await where_they_are(endpoints, token, missing)
                + "\n".join(e.tail() for e in engines)
            ) from None

        # First deliveries in send order; repeats only of messages in flight at a crash.
        received = receiver.control_ids()
        first: list[str] = []
        seen: set[str] = set()
        for c in received:
            if c not in seen:
                seen.add(c)
                first.append(c)
        assert first == sorted(first), "first deliveries out of send order"
        duplicates = len(received) - len(first)
        print(
            f"\n{MESSAGES} sent, {len(acked)} ACKed AA, {len(refused)} refused, "
            f"{len(first)} delivered, {duplicates} duplicate deliveries (in flight at a crash)"
        )
        assert duplicates <= 10, f"{duplicates} duplicates: more than a crash's in-flight window"

        async with Client(endpoints, token) as client:

            async def settled() -> bool:
                try:
                    stats = await client.stats()
                except RaftlaneError:
                    return False
                live = sum(
                    by_status.get("pending", 0) + by_status.get("inflight", 0)
                    for by_status in stats.rows.values()
                )
                return live == 0

            await wait_for(settled, "no pending or in-flight row", 60.0)
            # Every message reached a terminal status: none left received or routed.
            for status in ("received", "routed"):
                assert await client.count_messages(status=status) == 0, status
            assert await client.count_messages(status="processed") >= len(first)
            for org in (AUDIT_ORG, "default"):
                verification = await client.audit_verify(org)
                assert verification.ok, (org, verification)

            seen: list[str] = []

            async def digests_agree() -> bool:
                digests = []
                for ep in endpoints:
                    try:
                        digests.append(await client.digest(ep))
                    except RaftlaneError:
                        return False
                seen[:] = [
                    f"{ep}: {d.last_applied} {d.digest}" for ep, d in zip(endpoints, digests)
                ]
                return (
                    len({d.last_applied for d in digests}) == 1
                    and len({d.digest for d in digests}) == 1
                )

            # The engines beat, campaign and poll twice a second: the digests are compared on a
            # quiet cluster, once they stopped (three reads at one index while they write would be
            # luck).
            for e in engines:
                e.stop()
            try:
                await wait_for(digests_agree, "equal state digests on the three nodes", 60.0)
            except AssertionError as e:
                raise AssertionError(f"{e}: {seen} (data under {cluster.data_dir})") from None
            if keyring:
                await stored_values_are_ciphertext(cluster, client)
    finally:
        for e in engines:
            e.stop()
        await receiver.stop()
