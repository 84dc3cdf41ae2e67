"""The client over TLS against a real node of the raftlane binary (docs/SPEC.md §9.6): with the
cluster's CA (``verify=``) it works, bare addresses included; without it, or with another CA, it
gets no answer; with mutual TLS it needs the client certificate (``cert=``)."""

from __future__ import annotations

import asyncio
import os
import ssl
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from raftlane import Client, UnavailableError
from raftlane.testing import NodeProcess, _free_ports, binary

pytestmark = pytest.mark.cluster

ADMIN = "py-tls-admin"


def _certs(out: Path, client: bool = False) -> Path:
    bin_ = binary()
    assert bin_ is not None
    argv = [bin_, "certs", "--out", str(out), "--nodes", "n1", "--extra-names", "127.0.0.1"]
    if client:
        argv += ["--client", "tool"]
    subprocess.run(argv, check=True, capture_output=True)
    return out


@asynccontextmanager
async def _node(tmp: Path, mutual: bool) -> AsyncIterator[NodeProcess]:
    bin_ = binary()
    assert bin_ is not None
    certs = _certs(tmp / "certs", client=True)
    (port,) = _free_ports(1)
    addr = f"127.0.0.1:{port}"
    argv = [
        bin_, "node", "--id", "1", "--listen", addr, "--peers", f"1={addr}",
        "--bootstrap", "true", "--data-dir", str(tmp / "data"),
        "--tls-cert", str(certs / "n1.pem"), "--tls-key", str(certs / "n1.key"),
        "--tls-ca", str(certs / "ca.pem"),
    ]  # fmt: skip
    if mutual:
        argv += ["--tls-client-ca", str(certs / "ca.pem")]
    env = dict(os.environ, RAFTLANE_CLUSTER_SECRET="py-tls-secret", RAFTLANE_ADMIN_TOKEN=ADMIN)
    node = NodeProcess(1, addr, argv, env, tmp / "node.log")
    node.start()
    try:
        yield node
    finally:
        await node.stop()


async def _ready(client: Client, node: NodeProcess, within: float = 30.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        try:
            if (await client.cluster()).leader_id is not None:
                return
        except (UnavailableError, ssl.SSLError):
            if loop.time() > deadline:
                raise AssertionError(f"node not ready over TLS:\n{node.log_tail()}") from None
        await asyncio.sleep(0.2)


async def test_the_client_talks_tls_with_the_cluster_ca_and_only_with_it(tmp_path: Path) -> None:
    async with _node(tmp_path, mutual=False) as node:
        ca = tmp_path / "certs" / "ca.pem"
        # A bare host:port: dialled over https because a CA is given.
        async with Client([node.addr], ADMIN, verify=str(ca), deadline=5.0) as c:
            await _ready(c, node)
            sent = await c.enqueue("lab", "MSH|tls")
            assert sent.message_id >= 0 and not sent.duplicate
        # An SSL context works the same.
        ctx = ssl.create_default_context(cafile=str(ca))
        async with Client([f"https://{node.addr}"], ADMIN, verify=ctx, deadline=5.0) as c:
            assert (await c.cluster()).leader_id == 1
        # Another CA: refused.
        other = _certs(tmp_path / "other")
        async with Client([node.addr], ADMIN, verify=str(other / "ca.pem"), deadline=2.0) as c:
            with pytest.raises(UnavailableError):
                await c.cluster()
        # Plain HTTP: no answer.
        async with Client([f"http://{node.addr}"], ADMIN, deadline=2.0) as c:
            with pytest.raises(UnavailableError):
                await c.cluster()


async def test_mutual_tls_needs_the_client_certificate(tmp_path: Path) -> None:
    async with _node(tmp_path, mutual=True) as node:
        certs = tmp_path / "certs"
        ca = str(certs / "ca.pem")
        pair = (str(certs / "tool.pem"), str(certs / "tool.key"))
        async with Client([node.addr], ADMIN, verify=ca, cert=pair, deadline=5.0) as c:
            await _ready(c, node)
            assert (await c.cluster()).leader_id == 1
        async with Client([node.addr], ADMIN, verify=ca, deadline=2.0) as c:
            with pytest.raises(UnavailableError):
                await c.cluster()
