"""Two messagefoundry engine nodes on one three-node raftlane cluster, end to end over MLLP,
through faults.

Each engine is ``python -m raftlane.messagefoundry serve`` (messagefoundry's own service with
raftlane as store and coordinator) on the same code-first registry: an MLLP inbound, a router,
a handler, and an MLLP outbound to a test receiver that answers AA. A sender sends 1,000
synthetic ADT messages one by one to the first engine, failing over to the second when the
first is gone, and records each ACK. After 300 ACKs the raftlane leader is killed with SIGKILL
and restarted; after 600 the first engine is killed with SIGKILL.

Afterwards: every message ACKed AA reached the receiver; the first deliveries arrived in send
order (one destination, FIFO); duplicates (a message in flight at a crash, delivered again by
the surviving engine) are counted and reported; no row is left pending or in flight; the audit
chains verify; the three raftlane nodes agree on their state digest.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
import pytest_asyncio

pytest.importorskip("messagefoundry")

from mllp import Receiver, Sender, adt

from raftlane import Client
from raftlane.errors import RaftlaneError
from raftlane.messagefoundry import AUDIT_ORG
from raftlane.testing import ClusterHandle, empty_cluster

pytestmark = pytest.mark.cluster

MESSAGES = int(os.environ.get("RAFTLANE_E2E_MESSAGES", "1000"))
KILL_LEADER_AT = MESSAGES * 3 // 10
KILL_ENGINE_AT = MESSAGES * 6 // 10
#: Row and lane leases of the engines' claims: a killed engine's lanes free up after this.
LEASE_TTL = 3.0

REGISTRY = """\
from messagefoundry import MLLP, Send, env, handler, inbound, outbound, router

inbound("IB_LAB", MLLP(port=env("lab_in_port", cast=int)), router="lab_router")
outbound("OB_EMR", MLLP(host="127.0.0.1", port=env("emr_port", cast=int), timeout_seconds=5.0))


@router("lab_router")
def route(msg):
    return ["lab_handler"] if msg["MSH-9.1"] == "ADT" else []


@handler("lab_handler")
def handle(msg):
    return Send("OB_EMR", msg)
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Engine:
    """One ``python -m raftlane.messagefoundry serve`` process."""

    def __init__(self, name: str, project: Path, cluster: ClusterHandle, token_file: Path) -> None:
        self.name = name
        self.inbound_port = free_port()
        self.api_port = free_port()
        self.log = project / f"{name}.log"
        self.argv = [
            sys.executable,
            "-m",
            "raftlane.messagefoundry",
            "serve",
            "--raftlane",
            ",".join(cluster.endpoints),
            "--token-file",
            str(token_file),
            "--node-id",
            name,
            "--lease-ttl",
            str(LEASE_TTL),
            "--config",
            str(project / "config"),
            "--env",
            "dev",
            "--project-root",
            str(project),
            "--port",
            str(self.api_port),
            "--service-config",
            str(project / "messagefoundry.toml"),
        ]
        self.env = {**os.environ, "MEFOR_VALUE_LAB_IN_PORT": str(self.inbound_port)}
        self.cwd = project
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(
                self.argv, env=self.env, cwd=self.cwd, stdout=out, stderr=subprocess.STDOUT
            )

    async def wait_listening(self, timeout: float = 60.0) -> None:
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            assert self.proc is not None and self.proc.poll() is None, self.tail()
            try:
                _, w = await asyncio.open_connection("127.0.0.1", self.inbound_port)
                w.close()
                return
            except OSError:
                if asyncio.get_running_loop().time() > deadline:
                    raise AssertionError(f"{self.name} never listened\n{self.tail()}") from None
                await asyncio.sleep(0.2)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()

    def tail(self, lines: int = 40) -> str:
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(line for line in text.splitlines() if "HTTP Request" not in line)[-6000:]


@pytest_asyncio.fixture
async def cluster() -> AsyncIterator[ClusterHandle]:
    async with empty_cluster() as handle:
        yield handle


async def wait_for(check: Callable[[], Awaitable[bool]], what: str, timeout: float) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not await check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.5)


async def test_two_engines_deliver_every_acked_message_in_order_through_crashes(
    cluster: ClusterHandle, tmp_path: Path
) -> None:
    endpoints, token = cluster
    project = tmp_path / "project"
    (project / "config").mkdir(parents=True)
    (project / "environments").mkdir()
    (project / "config" / "lab.py").write_text(REGISTRY)
    # messagefoundry 0.1.0 runs its clustered engine active-passive: only the leader runs the
    # graph (listeners and workers); a standby takes over once the leader's lease ran out.
    (project / "messagefoundry.toml").write_text(
        "[cluster]\nheartbeat_seconds = 0.5\nnode_timeout_seconds = 5.0\n"
        "leader_lease_ttl_seconds = 3.0\nleader_fence_timeout_seconds = 2.0\n"
        "reclaim_interval_seconds = 2.0\n"
    )
    receiver = Receiver(free_port())
    (project / "environments" / "dev.toml").write_text(
        f"lab_in_port = 1\nemr_port = {receiver.port}\n"
    )
    token_file = tmp_path / "token"
    token_file.write_text(token)
    await receiver.start()
    engines = [Engine(f"engine-{i}", project, cluster, token_file) for i in (1, 2)]
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
                    # The engine is gone or slow: this message is un-ACKed; send it again, to
                    # the other engine once the first is dead.
                    proc = engines[target].proc
                    if proc is not None and proc.poll() is not None:
                        target = 1 - target
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
            for org in (AUDIT_ORG, "default"):
                verification = await client.audit_verify(org)
                assert verification.ok, (org, verification)

            async def digests_agree() -> bool:
                digests = []
                for ep in endpoints:
                    try:
                        digests.append(await client.digest(ep))
                    except RaftlaneError:
                        return False
                return (
                    len({d.last_applied for d in digests}) == 1
                    and len({d.digest for d in digests}) == 1
                )

            await wait_for(digests_agree, "equal state digests on the three nodes", 60.0)
    finally:
        for e in engines:
            e.stop()
        await receiver.stop()
