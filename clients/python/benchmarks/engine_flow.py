"""End-to-end figure: messagefoundry's engine moving HL7 over MLLP, on raftlane versus on its own
PostgreSQL store, on this machine, in one run.

The flow is the end-to-end test's (clients/python/tests/messagefoundry/test_cluster_e2e.py),
widened: ``--channels`` C channels, each an MLLP inbound → router → handler that sends every
message to ``--fanout`` K MLLP outbounds, each delivering to its own receiver (in this process)
that answers AA. ``--senders`` S senders (default 1) share ``--messages`` N synthetic ADT
messages; sender ``s`` has its own MLLP connection to channel ``s mod C``'s inbound and sends
each message after the previous one's ACK (as an HL7 sender does); the senders run concurrently.
Before the timed part, each sender sends ``--warmup`` messages and the run waits for them to be
delivered. For each store the engine runs clustered (``[cluster].enabled``), as a multi-node
deployment must:

- raftlane: ``python -m raftlane.messagefoundry serve`` on a fresh local three-node cluster
  (``raftlane.testing.empty_cluster``, the ``raftlane`` binary from ``RAFTLANE_BIN`` or PATH);
- PostgreSQL: ``python -m messagefoundry serve`` with ``[store].backend = "postgres"`` on a
  throwaway PostgreSQL server (``initdb`` in a temporary directory, port chosen free).

The PostgreSQL run needs the ``asyncpg`` package and the PostgreSQL server binaries; both are
installed when missing (``_deps.py``: ``pip install`` into this interpreter's environment;
Debian's ``postgresql`` package through ``apt-get``, or ``PG_BINDIR`` names the binaries).

Engine settings, written identically into both engines' ``messagefoundry.toml``: messagefoundry
0.1.0's configuration has no worker-count or poll-interval setting. Its engine runs one router
and one transform worker per inbound and one delivery worker per outbound (so ``--channels`` and
``--fanout`` set the worker concurrency), woken by events with a fixed 0.25 s poll as backstop,
and claims up to 20 outbound rows at a time when unordered. What its configuration does expose:

- ``--ordering fifo|unordered``: ``[delivery].ordering``, how each delivery worker drains its
  outbound (``fifo``, messagefoundry's default: oldest first, one at a time; ``unordered``:
  a claimed batch);
- ``--pool-size N``: ``[store].pool_size``, the PostgreSQL store's connection pool (default 5,
  messagefoundry's; the raftlane store has no pool and ignores it).

Figures per store: messages/s (messages fully delivered, i.e. at every one of its channel's K
destinations, over the time from the first timed send to the last full delivery), deliveries/s
(K times that), the p50 / p99 of each message's end-to-end latency (from its send to its arrival
at the last of its K destinations), and the ACK round trip's p50 / p99. ``--json FILE`` writes
them with the options and the host. The last line printed is
``raftlane/postgres throughput ratio: X.XX`` (``n/a`` unless both stores ran).

    RAFTLANE_BIN=... python clients/python/benchmarks/engine_flow.py --messages 2000 \\
        --senders 4 --fanout 2 --json engine_flow.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import platform
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import _deps

from raftlane.messagefoundry.testing import (
    EngineProcess,
    Receiver,
    Sender,
    adt,
    free_port,
    write_project,
)
from raftlane.testing import binary, empty_cluster

CLUSTER = {
    "enabled": True,
    "heartbeat_seconds": 1.0,
    "leader_lease_ttl_seconds": 5.0,
    "leader_fence_timeout_seconds": 3.0,
}
STORES = ("raftlane", "postgres")
#: Control ids of the warm-up messages start here (the timed ones count from 0).
WARMUP_BASE = 9_000_000


@dataclass(frozen=True)
class Options:
    messages: int
    senders: int
    channels: int
    fanout: int
    ordering: str
    pool_size: int
    warmup: int
    drain_timeout: float
    #: The raftlane store's ``claim_wait_seconds`` (``None``: the store's default).
    claim_wait: float | None = None

    def settings(self) -> dict[str, dict[str, object]]:
        """The ``messagefoundry.toml`` sections both engines share."""
        return {
            "store": {"pool_size": self.pool_size},
            "delivery": {"ordering": self.ordering},
            "cluster": dict(CLUSTER),
        }

    def per_sender(self) -> list[int]:
        """How many timed messages each sender sends (they add up to ``messages``)."""
        q, r = divmod(self.messages, self.senders)
        return [q + (1 if s < r else 0) for s in range(self.senders)]


def percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))]


class Topology:
    """The receivers: ``receivers[c][k]`` is channel ``c``'s ``k``-th destination."""

    def __init__(self, opts: Options) -> None:
        self.receivers = [
            [Receiver(free_port()) for _ in range(opts.fanout)] for _ in range(opts.channels)
        ]

    @property
    def ports(self) -> list[list[int]]:
        return [[r.port for r in channel] for channel in self.receivers]

    async def start(self) -> None:
        for channel in self.receivers:
            for r in channel:
                await r.start()

    async def stop(self) -> None:
        for channel in self.receivers:
            for r in channel:
                await r.stop()

    def delivered_at(self, channel: int, control: str) -> float | None:
        """When ``control`` had reached every destination of ``channel`` (None: not yet)."""
        last = 0.0
        for r in self.receivers[channel]:
            t = r.arrived.get(control)
            if t is None:
                return None
            last = max(last, t)
        return last

    def duplicates(self) -> int:
        """Deliveries of a message to a destination that already had it."""
        return sum(len(r.received) - len(r.arrived) for ch in self.receivers for r in ch)


async def wait_delivered(
    topology: Topology, pending: dict[str, int], timeout: float
) -> dict[str, float]:
    """Wait until every ``control → channel`` in ``pending`` reached all its destinations, or
    ``timeout`` s; answer when each one that did got there."""
    done: dict[str, float] = {}
    waiting = dict(pending)
    deadline = time.perf_counter() + timeout
    while waiting:
        for control, channel in list(waiting.items()):
            t = topology.delivered_at(channel, control)
            if t is not None:
                done[control] = t
                del waiting[control]
        if not waiting or time.perf_counter() > deadline:
            break
        await asyncio.sleep(0.05)
    return done


async def run_flow(engine: EngineProcess, topology: Topology, opts: Options) -> dict[str, Any]:
    await engine.wait_listening(timeout=120.0)
    senders = [
        Sender("127.0.0.1", engine.inbound_ports[s % opts.channels], timeout=30.0)
        for s in range(opts.senders)
    ]
    try:
        return await _drive(senders, topology, opts)
    finally:
        for sender in senders:
            await sender.close()


async def _drive(senders: list[Sender], topology: Topology, opts: Options) -> dict[str, Any]:
    # Warm-up (connections, caches, the workers' first claims): sent and delivered, not measured.
    warm: dict[str, int] = {}

    async def warm_up(s: int) -> None:
        for i in range(opts.warmup):
            n = WARMUP_BASE + s * 10_000 + i
            code = await senders[s].send(adt(n))
            if code != "AA":
                raise RuntimeError(f"warm-up message {n} answered {code}")
            warm[f"MSG{n:06d}"] = s % opts.channels

    await asyncio.gather(*(warm_up(s) for s in range(opts.senders)))
    if len(await wait_delivered(topology, warm, opts.drain_timeout)) < len(warm):
        raise RuntimeError(f"the warm-up messages were not delivered within {opts.drain_timeout} s")
    duplicates_before = topology.duplicates()

    sent_at: dict[str, float] = {}
    channel_of: dict[str, int] = {}
    acks: list[float] = []
    counts = opts.per_sender()
    firsts = [sum(counts[:s]) for s in range(opts.senders)]

    async def send_all(s: int) -> None:
        channel = s % opts.channels
        for n in range(firsts[s], firsts[s] + counts[s]):
            control = f"MSG{n:06d}"
            channel_of[control] = channel
            t0 = time.perf_counter()
            sent_at[control] = t0
            code = await senders[s].send(adt(n))
            acks.append(time.perf_counter() - t0)
            if code != "AA":
                raise RuntimeError(f"{control} answered {code}")

    start = time.perf_counter()
    await asyncio.gather(*(send_all(s) for s in range(opts.senders)))
    sent = time.perf_counter()
    done = await wait_delivered(topology, channel_of, opts.drain_timeout)
    latencies = [done[c] - sent_at[c] for c in done]
    elapsed = (max(done.values()) - start) if done else float("nan")
    delivered = len(done)
    return {
        "messages": opts.messages,
        "delivered": delivered,
        "complete": delivered == opts.messages,
        "duplicates": topology.duplicates() - duplicates_before,
        "elapsed_s": elapsed,
        "send_s": sent - start,
        "msgs_per_s": delivered / elapsed if done else 0.0,
        "deliveries_per_s": delivered * opts.fanout / elapsed if done else 0.0,
        "p50_ms": percentile(latencies, 0.50) * 1000,
        "p99_ms": percentile(latencies, 0.99) * 1000,
        "max_ms": max(latencies, default=float("nan")) * 1000,
        "ack_p50_ms": percentile(acks, 0.50) * 1000,
        "ack_p99_ms": percentile(acks, 0.99) * 1000,
    }


async def measure(engine: EngineProcess, topology: Topology, opts: Options) -> dict[str, Any]:
    """Start ``engine``, run the flow through it, stop it."""
    engine.start()
    try:
        return await run_flow(engine, topology, opts)
    finally:
        engine.stop()


async def on_raftlane(opts: Options, work: Path) -> dict[str, Any]:
    topology = Topology(opts)
    await topology.start()
    try:
        project = write_project(
            work / "raftlane", destinations=topology.ports, settings=opts.settings()
        )
        async with empty_cluster() as (endpoints, token):
            token_file = work / "token"
            token_file.write_text(token)
            engine = EngineProcess(
                "engine-raftlane",
                project,
                raftlane=endpoints,
                token_file=token_file,
                inbounds=opts.channels,
                claim_wait=opts.claim_wait,
            )
            return await measure(engine, topology, opts)
    finally:
        await topology.stop()


@contextmanager
def postgres(bindir: Path) -> Iterator[int]:
    """A throwaway PostgreSQL server (trust auth, user ``postgres``) on a free port, in a
    temporary directory of its own (removed after)."""
    with (
        tempfile.TemporaryDirectory(prefix="mf-bench-pg-") as tmp,
        _postgres_in(bindir, Path(tmp)) as port,
    ):
        yield port


@contextmanager
def _postgres_in(bindir: Path, work: Path) -> Iterator[int]:
    data = work / "pgdata"
    data.mkdir(parents=True)
    runas: list[str] = []
    if os.geteuid() == 0:  # initdb refuses root: run the server as the postgres user
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            raise _deps.DependencyError(
                "running as root, the PostgreSQL server must run as the user `postgres`, and "
                "there is none (Debian's postgresql package creates it): "
                "`useradd --system postgres`, or run the benchmark as an ordinary user"
            ) from None
        shutil.chown(work, "postgres", "postgres")
        shutil.chown(data, "postgres", "postgres")
        runas = ["runuser", "-u", "postgres", "--"]
    port = free_port()
    _run([*runas, str(bindir / "initdb"), "-D", str(data), "--auth=trust", "-U", "postgres"])
    _run(
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
        log=work / "postgres.log",
    )
    try:
        yield port
    finally:
        subprocess.run(
            [*runas, str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"],
            capture_output=True,
            check=False,
        )


def _run(argv: list[str], log: Path | None = None) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = ""
        if log is not None and log.exists():
            tail = "\n" + log.read_text(errors="replace")[-2000:]
        raise RuntimeError(
            f"{' '.join(argv)} exited with {done.returncode}:\n{done.stdout}{done.stderr}{tail}"
        )


async def on_postgres(opts: Options, work: Path, bindir: Path) -> dict[str, Any]:
    topology = Topology(opts)
    await topology.start()
    try:
        with postgres(bindir) as port:
            settings = opts.settings()
            settings["store"] = {
                **settings["store"],
                "backend": "postgres",
                "server": "127.0.0.1",
                "port": port,
                "database": "postgres",
                "username": "postgres",
                "encrypt": False,
            }
            project = write_project(
                work / "postgres", destinations=topology.ports, settings=settings
            )
            # A loopback server without TLS: messagefoundry wants that said explicitly.
            engine = EngineProcess(
                "engine-postgres",
                project,
                env={"MEFOR_ALLOW_INSECURE_TLS": "1"},
                inbounds=opts.channels,
            )
            return await measure(engine, topology, opts)
    finally:
        await topology.stop()


def show(name: str, r: Mapping[str, Any]) -> None:
    print(
        f"{name:<10} {r['msgs_per_s']:8.1f} msgs/s ({r['deliveries_per_s']:8.1f} deliveries/s)"
        f"   end-to-end p50 {r['p50_ms']:7.1f} ms  p99 {r['p99_ms']:7.1f} ms"
        f"   ACK p50 {r['ack_p50_ms']:6.1f} ms  p99 {r['ack_p99_ms']:6.1f} ms"
    )
    if not r["complete"]:
        print(f"{'':<10} only {r['delivered']} of {r['messages']} messages fully delivered")
    if r["duplicates"]:
        print(f"{'':<10} {r['duplicates']} duplicate deliveries")


def _finite(value: Any) -> Any:
    """``value`` with NaN (a figure without samples) as null: strict JSON has no NaN."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=(__doc__ or "").split("\n\n")[0],
    )
    parser.add_argument(
        "--messages", type=positive, default=1000, help="timed messages in all (%(default)s)"
    )
    parser.add_argument(
        "--senders",
        type=positive,
        default=1,
        help="concurrent MLLP senders, each sequential (%(default)s)",
    )
    parser.add_argument(
        "--channels",
        type=positive,
        default=None,
        help="channels (inbound → router → handler); sender s uses channel s mod C "
        "(default: one per sender)",
    )
    parser.add_argument(
        "--fanout",
        type=positive,
        default=1,
        help="MLLP destinations each message goes to (%(default)s)",
    )
    parser.add_argument(
        "--ordering",
        choices=("fifo", "unordered"),
        default="fifo",
        help="[delivery].ordering of both engines (%(default)s)",
    )
    parser.add_argument(
        "--pool-size",
        type=int,
        default=5,
        help="[store].pool_size of both engines (PostgreSQL's connection pool; at least 2 "
        "when clustered; the raftlane store ignores it; %(default)s)",
    )
    parser.add_argument(
        "--claim-wait",
        type=float,
        default=None,
        metavar="SECONDS",
        help="how long the raftlane engine's worker claims wait at the node for work "
        "(`serve --claim-wait`; 0: answer at once and poll; "
        "default: the store's, 5)",
    )
    parser.add_argument(
        "--warmup", type=int, default=20, help="untimed warm-up messages per sender (%(default)s)"
    )
    parser.add_argument(
        "--drain-timeout",
        type=float,
        default=300.0,
        help="seconds to wait, after the last send, for every message to be delivered "
        "(%(default)s)",
    )
    parser.add_argument(
        "--store", choices=(*STORES, "both"), default="both", help="which runs (%(default)s)"
    )
    parser.add_argument("--json", type=Path, metavar="FILE", help="write the figures as JSON")
    parser.add_argument("--skip-postgres", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.skip_postgres:  # the option's former spelling
        args.store = "raftlane"
    if args.channels is None:
        args.channels = args.senders
    if args.pool_size < 2:
        parser.error("--pool-size: messagefoundry's clustered engine needs at least 2")
    if not 0 <= args.warmup <= 10_000:
        parser.error("--warmup: from 0 to 10000")
    return args


async def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    opts = Options(
        messages=args.messages,
        senders=args.senders,
        channels=args.channels,
        fanout=args.fanout,
        ordering=args.ordering,
        pool_size=args.pool_size,
        warmup=args.warmup,
        drain_timeout=args.drain_timeout,
        claim_wait=args.claim_wait,
    )
    stores = STORES if args.store == "both" else (args.store,)
    # Dependencies first, so a missing one fails before any measurement.
    if "raftlane" in stores and binary() is None:
        print(
            "error: no raftlane binary: set RAFTLANE_BIN or put raftlane on PATH", file=sys.stderr
        )
        return 2
    bindir: Path | None = None
    if "postgres" in stores:
        try:
            _deps.ensure_module("asyncpg", "asyncpg>=0.29")  # messagefoundry[postgres]'s pin
            bindir = _deps.postgres_bindir()
        except _deps.DependencyError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    if opts.channels > opts.senders:
        print(f"note: {opts.channels - opts.senders} of {opts.channels} channels get no sender")

    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="mf-bench-") as tmp:
        work = Path(tmp)
        for store in stores:
            print(f"running on {store} ...", flush=True)
            if store == "raftlane":
                results[store] = await on_raftlane(opts, work)
            else:
                assert bindir is not None
                results[store] = await on_postgres(opts, work, bindir)

    ratio: float | None = None
    if "raftlane" in results and "postgres" in results and results["postgres"]["msgs_per_s"]:
        ratio = results["raftlane"]["msgs_per_s"] / results["postgres"]["msgs_per_s"]
    print(
        f"\n{opts.messages} ADT messages, {opts.senders} MLLP sender(s) on {opts.channels} "
        f"channel(s), fan-out {opts.fanout}, ordering {opts.ordering}, "
        f"one engine (clustered mode):"
    )
    for name, r in results.items():
        show(name, r)
    if args.json is not None:
        document = {
            "benchmark": "engine_flow",
            "at": datetime.now(UTC).isoformat(timespec="seconds"),
            "host": {
                "cpus": os.cpu_count(),
                "platform": platform.platform(),
                "python": platform.python_version(),
            },
            "options": {**asdict(opts), "stores": list(stores)},
            "results": results,
            "raftlane_postgres_throughput_ratio": ratio,
        }
        args.json.write_text(json.dumps(_finite(document), indent=2) + "\n")
        print(f"figures written to {args.json}")
    print(f"raftlane/postgres throughput ratio: {'n/a' if ratio is None else f'{ratio:.2f}'}")
    return 0 if all(r["complete"] for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
