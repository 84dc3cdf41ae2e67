"""A throwaway local cluster for tests: three ``raftlane node`` processes on loopback ports.

>>> async with empty_cluster() as (endpoints, token):
...     async with Client(endpoints, token) as c:
...         await c.enqueue("lab", "hello")

The binary is ``$RAFTLANE_BIN``, else ``raftlane`` on ``PATH``. Each node gets its own data
directory under one temporary directory, node 1 bootstraps the cluster, every node gets the same
cluster secret and admin token (the token yielded), and the context waits until every node is
ready and one of them names a leader. On exit the processes are stopped (SIGTERM, then SIGKILL
after 10 s) and the directory is removed.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Self

from .wire import LeanWire, WireError

__all__ = ["ClusterHandle", "NodeProcess", "binary", "empty_cluster"]


def binary() -> str | None:
    """The raftlane binary: ``$RAFTLANE_BIN`` if set, else ``raftlane`` on ``PATH``."""
    env = os.environ.get("RAFTLANE_BIN")
    if env:
        return env if os.access(env, os.X_OK) else None
    return shutil.which("raftlane")


def _free_ports(n: int) -> list[int]:
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


class NodeProcess:
    """One ``raftlane node`` child process."""

    def __init__(self, node_id: int, addr: str, argv: list[str], env: dict[str, str], log: Path):
        self.node_id = node_id
        self.addr = addr
        self.argv = argv
        self.env = env
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None
        self._log_file: IO[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://{self.addr}"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self) -> None:
        if self.running:
            return
        self._log_file = open(self.log, "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            self.argv,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
        )

    async def stop(self, *, kill: bool = False, grace: float = 10.0) -> None:
        """SIGTERM (or SIGKILL with ``kill``), waiting up to ``grace`` seconds before SIGKILL."""
        proc = self.proc
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
            deadline = time.monotonic() + grace
            while proc.poll() is None and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
        self.proc = None
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


class ClusterHandle(tuple):  # type: ignore[type-arg]
    """What :func:`empty_cluster` yields: unpacks as ``(endpoints, token)``, and also has the
    node processes, so a test can stop or restart one (e.g. the leader)."""

    endpoints: list[str]
    token: str
    nodes: list[NodeProcess]
    data_dir: Path

    def __new__(
        cls, endpoints: list[str], token: str, nodes: list[NodeProcess], data_dir: Path
    ) -> Self:
        self = super().__new__(cls, (endpoints, token))
        self.endpoints = endpoints
        self.token = token
        self.nodes = nodes
        self.data_dir = data_dir
        return self

    async def leader(self, timeout: float = 30.0) -> NodeProcess:
        """The running node that the running nodes agree leads."""
        return await _wait_for_leader(self.nodes, self.token, timeout)

    async def stop_node(self, node: NodeProcess, *, kill: bool = False) -> None:
        await node.stop(kill=kill)

    async def start_node(self, node: NodeProcess, timeout: float = 30.0) -> None:
        node.start()
        await _wait_ready([node], timeout)


async def _wait_ready(nodes: Sequence[NodeProcess], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    pending = list(nodes)
    # The package's own connections: they log nothing per call above DEBUG (httpx logs each at
    # INFO), and a test that polls readiness should not fill the log.
    http = LeanWire()
    try:
        while pending:
            for n in list(pending):
                if n.proc is not None and n.proc.poll() is not None:
                    raise RuntimeError(
                        f"node {n.node_id} exited with {n.proc.returncode}:\n{n.log_tail()}"
                    )
                try:
                    r = await http.request(
                        "GET", f"{n.endpoint}/readyz", headers={}, body=None, timeout=2.0
                    )
                    if r.status_code == 200:
                        pending.remove(n)
                except WireError:
                    pass
            if pending and time.monotonic() > deadline:
                tails = "\n".join(f"--- node {n.node_id}\n{n.log_tail()}" for n in pending)
                raise TimeoutError(f"nodes not ready within {timeout} s:\n{tails}")
            if pending:
                await asyncio.sleep(0.1)
    finally:
        await http.aclose()


async def _wait_for_leader(nodes: Sequence[NodeProcess], token: str, timeout: float) -> NodeProcess:
    deadline = time.monotonic() + timeout
    headers = {"authorization": f"Bearer {token}"}
    http = LeanWire()
    try:
        while True:
            running = [n for n in nodes if n.running]
            seen: list[int | None] = []
            for n in running:
                try:
                    r = await http.request(
                        "GET", f"{n.endpoint}/v1/cluster", headers=headers, body=None, timeout=2.0
                    )
                    seen.append(r.json().get("leader_id") if r.status_code == 200 else None)
                except (WireError, ValueError):
                    seen.append(None)
            leaders = {s for s in seen if s is not None}
            if len(leaders) == 1 and len(seen) == len(running) and None not in seen:
                (lid,) = leaders
                for n in running:
                    if n.node_id == lid:
                        return n
            if time.monotonic() > deadline:
                raise TimeoutError(f"no agreed leader within {timeout} s (seen {seen})")
            await asyncio.sleep(0.1)
    finally:
        await http.aclose()


@contextlib.asynccontextmanager
async def empty_cluster(
    *,
    node_args: Sequence[str] = (),
    node_env: Mapping[str, str] | None = None,
    nodes: int = 3,
    startup_timeout: float = 60.0,
    keep_data: bool = False,
) -> AsyncIterator[ClusterHandle]:
    """Start an empty cluster of ``nodes`` raftlane processes; yield ``(endpoints, token)``.

    ``node_args`` are extra flags for every ``raftlane node`` (e.g. a test clock mode);
    ``node_env`` extra environment variables. Other ``RAFTLANE_*`` variables of this process
    (except ``RAFTLANE_LOG``) are not passed on, so they cannot change the nodes' settings.
    """
    exe = binary()
    if exe is None:
        raise FileNotFoundError("no raftlane binary: set RAFTLANE_BIN or put raftlane on PATH")
    root = Path(tempfile.mkdtemp(prefix="raftlane-py-"))
    token = f"rl_test_{secrets.token_hex(16)}"
    secret = secrets.token_hex(16)
    ports = _free_ports(nodes)
    peers = ",".join(f"{i + 1}=127.0.0.1:{p}" for i, p in enumerate(ports))
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAFTLANE_")}
    env["RAFTLANE_LOG"] = os.environ.get("RAFTLANE_LOG", "info,openraft=warn")
    env.update(node_env or {})
    procs: list[NodeProcess] = []
    for i, port in enumerate(ports):
        node_id = i + 1
        addr = f"127.0.0.1:{port}"
        argv = [
            exe,
            "node",
            "--id",
            str(node_id),
            "--listen",
            addr,
            "--advertise",
            addr,
            "--peers",
            peers,
            "--data-dir",
            str(root / f"node{node_id}"),
            "--bootstrap",
            "true" if node_id == 1 else "false",
            "--cluster-secret",
            secret,
            "--admin-token",
            token,
            *node_args,
        ]
        procs.append(NodeProcess(node_id, addr, argv, env, root / f"node{node_id}.log"))
    try:
        for p in procs:
            p.start()
        await _wait_ready(procs, startup_timeout)
        await _wait_for_leader(procs, token, startup_timeout)
        yield ClusterHandle([p.endpoint for p in procs], token, procs, root)
    finally:
        await asyncio.gather(*(p.stop() for p in procs), return_exceptions=True)
        if not keep_data:
            shutil.rmtree(root, ignore_errors=True)
