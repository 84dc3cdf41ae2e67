"""End-to-end figure: messagefoundry's engine moving HL7 over MLLP, on raftlane versus on its own
PostgreSQL store, on this machine, in one run.

The flow is the end-to-end test's (clients/python/tests/messagefoundry/test_cluster_e2e.py): an
MLLP inbound → router → handler → an MLLP outbound to a receiver that answers AA. One sender
sends N synthetic ADT messages over one MLLP connection, each after the previous one's ACK (as
an HL7 sender does). For each store the engine runs clustered (``[cluster].enabled``), as a
multi-node deployment must:

- raftlane: ``python -m raftlane.messagefoundry serve`` on a fresh local three-node cluster
  (``raftlane.testing.empty_cluster``, the ``raftlane`` binary from ``RAFTLANE_BIN``);
- PostgreSQL: ``python -m messagefoundry serve`` with ``[store].backend = "postgres"`` on a
  throwaway PostgreSQL server (``initdb`` in a temporary directory, port chosen free; needs the
  PostgreSQL server binaries and the ``asyncpg`` package).

Printed per store: messages/s (N over the time from the first send to the last delivery), and
the p50 / p99 of each message's latency from its send to its arrival at the receiver; also the
ACK round trip's p50 / p99.

    RAFTLANE_BIN=... python clients/python/benchmarks/engine_flow.py --messages 2000
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from raftlane.messagefoundry.testing import (
    EngineProcess,
    Receiver,
    Sender,
    adt,
    free_port,
    write_project,
)
from raftlane.testing import empty_cluster

CLUSTER = {"heartbeat_seconds": 1.0, "leader_lease_ttl_seconds": 5.0}
CLUSTER_FENCE = {"leader_fence_timeout_seconds": 3.0}


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))]


async def measure(engine: EngineProcess, receiver: Receiver, n: int) -> dict[str, float]:
    """Start ``engine``, run the flow through it, stop it and the receiver."""
    engine.start()
    try:
        return await run_flow(engine, receiver, n)
    finally:
        engine.stop()
        await receiver.stop()


async def run_flow(engine: EngineProcess, receiver: Receiver, n: int) -> dict[str, float]:
    await engine.wait_listening(timeout=120.0)
    sender = Sender("127.0.0.1", engine.inbound_port, timeout=30.0)
    # Warm-up (connections, caches), not measured.
    for i in range(20):
        assert await sender.send(adt(900_000 + i)) == "AA"
    sent_at: dict[str, float] = {}
    acks: list[float] = []
    start = time.perf_counter()
    for i in range(n):
        control = f"MSG{i:06d}"
        t0 = time.perf_counter()
        sent_at[control] = t0
        code = await sender.send(adt(i))
        acks.append(time.perf_counter() - t0)
        if code != "AA":
            raise RuntimeError(f"{control} answered {code}")
    await sender.close()
    deadline = time.perf_counter() + 300
    while not set(sent_at) <= set(receiver.arrived):
        if time.perf_counter() > deadline:
            raise RuntimeError("not every message arrived within 300 s")
        await asyncio.sleep(0.05)
    last = max(receiver.arrived[c] for c in sent_at)
    latencies = [receiver.arrived[c] - sent_at[c] for c in sent_at]
    return {
        "msgs_per_s": n / (last - start),
        "p50_ms": percentile(latencies, 0.50) * 1000,
        "p99_ms": percentile(latencies, 0.99) * 1000,
        "ack_p50_ms": percentile(acks, 0.50) * 1000,
        "ack_p99_ms": percentile(acks, 0.99) * 1000,
    }


async def on_raftlane(n: int, work: Path) -> dict[str, float]:
    receiver = Receiver(free_port())
    await receiver.start()
    project = write_project(
        work / "raftlane",
        emr_port=receiver.port,
        settings={"cluster": {**CLUSTER, **CLUSTER_FENCE}},
    )
    async with empty_cluster() as (endpoints, token):
        token_file = work / "token"
        token_file.write_text(token)
        engine = EngineProcess(
            "engine-raftlane", project, raftlane=endpoints, token_file=token_file
        )
        engine.start()
        try:
            return await run_flow(engine, receiver, n)
        finally:
            engine.stop()
            await receiver.stop()


@contextmanager
def postgres() -> Iterator[int]:
    """A throwaway PostgreSQL server (trust auth, user ``postgres``) on a free port, in a
    temporary directory of its own (removed after)."""
    with tempfile.TemporaryDirectory(prefix="mf-bench-pg-") as tmp, _postgres_in(Path(tmp)) as port:
        yield port


@contextmanager
def _postgres_in(work: Path) -> Iterator[int]:
    initdb = shutil.which("initdb") or next(Path("/usr/lib/postgresql").glob("*/bin/initdb"), None)
    if initdb is None:
        raise RuntimeError("no PostgreSQL server binaries (initdb): apt-get install postgresql")
    bindir = Path(initdb).parent
    data = work / "pgdata"
    data.mkdir(parents=True)
    runas: list[str] = []
    if os.geteuid() == 0:  # initdb refuses root: run the server as the postgres user
        shutil.chown(work, "postgres", "postgres")
        shutil.chown(data, "postgres", "postgres")
        runas = ["runuser", "-u", "postgres", "--"]
    port = free_port()
    subprocess.run(
        [*runas, str(bindir / "initdb"), "-D", str(data), "--auth=trust", "-U", "postgres"],
        check=True,
        capture_output=True,
    )
    subprocess.run(
        [
            *runas,
            str(bindir / "pg_ctl"),
            "-D",
            str(data),
            "-l",
            str(work / "postgres.log"),
            "-w",
            "-o",
            f"-p {port} -k {work} -c listen_addresses=127.0.0.1",
            "start",
        ],
        check=True,
        capture_output=True,
    )
    try:
        yield port
    finally:
        subprocess.run(
            [*runas, str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"],
            capture_output=True,
            check=False,
        )


async def on_postgres(n: int, work: Path) -> dict[str, float]:
    receiver = Receiver(free_port())
    await receiver.start()
    with postgres() as port:
        project = write_project(
            work / "postgres",
            emr_port=receiver.port,
            settings={
                "store": {
                    "backend": "postgres",
                    "server": "127.0.0.1",
                    "port": port,
                    "database": "postgres",
                    "username": "postgres",
                    "encrypt": False,
                },
                "cluster": {"enabled": True, **CLUSTER, **CLUSTER_FENCE},
            },
        )
        # A loopback server without TLS: messagefoundry wants that said explicitly.
        engine = EngineProcess("engine-postgres", project, env={"MEFOR_ALLOW_INSECURE_TLS": "1"})
        return await measure(engine, receiver, n)


def show(name: str, r: dict[str, float]) -> None:
    print(
        f"{name:<12} {r['msgs_per_s']:8.1f} msgs/s   end-to-end p50 {r['p50_ms']:7.1f} ms"
        f"  p99 {r['p99_ms']:7.1f} ms   ACK p50 {r['ack_p50_ms']:6.1f} ms"
        f"  p99 {r['ack_p99_ms']:6.1f} ms"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=1000)
    parser.add_argument("--skip-postgres", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mf-bench-") as tmp:
        work = Path(tmp)
        results = {"raftlane": await on_raftlane(args.messages, work)}
        if not args.skip_postgres:
            results["postgresql"] = await on_postgres(args.messages, work)
    print(f"\n{args.messages} ADT messages, one MLLP sender, one engine (clustered mode):")
    for name, r in results.items():
        show(name, r)


if __name__ == "__main__":
    asyncio.run(main())
