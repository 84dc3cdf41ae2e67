"""raftlane.testing.empty_cluster against a stand-in binary: the flags and environment each node
gets, waiting for readiness and a leader, and the clean-up. (tests/test_cluster.py runs it with the
real binary.)"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import httpx
import pytest

from raftlane.testing import binary, empty_cluster

# A node that records how it was started, then answers /readyz and /v1/cluster (node 1 leads)
# until SIGTERM.
FAKE_NODE = textwrap.dedent(
    """\
    #!{python}
    import json, os, sys
    from http.server import BaseHTTPRequestHandler, HTTPServer

    args = sys.argv[1:]
    flag = lambda name: args[args.index(name) + 1]
    host, port = flag("--listen").rsplit(":", 1)
    data = flag("--data-dir")
    os.makedirs(data, exist_ok=True)
    env = {{k: v for k, v in os.environ.items() if k.startswith(("RAFTLANE_", "FAKE_"))}}
    with open(os.path.join(data, "started.json"), "w") as f:
        json.dump({{"argv": args, "env": env}}, f)
    peers = [p.split("=") for p in flag("--peers").split(",")]
    token = flag("--admin-token")

    class H(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def answer(self, status, body):
            raw = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def do_GET(self):
            if self.path == "/readyz":
                return self.answer(200, {{"ready": True}})
            if self.path == "/v1/cluster":
                if self.headers.get("authorization") != "Bearer " + token:
                    return self.answer(401, {{"error": {{"code": "unauthorized", "message": "no"}}}})
                return self.answer(200, {{
                    "node_id": int(flag("--id")), "leader_id": 1, "term": 1,
                    "last_log_index": 1, "last_applied": 1,
                    "membership": [{{"id": int(i), "addr": a, "voter": True}} for i, a in peers],
                }})
            self.answer(404, {{"error": {{"code": "not_found", "message": "no such route"}}}})

    HTTPServer((host, int(port)), H).serve_forever()
    """
)


@pytest.fixture
def fake_binary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    exe = tmp_path / "raftlane"
    exe.write_text(FAKE_NODE.format(python=sys.executable))
    exe.chmod(0o755)
    monkeypatch.setenv("RAFTLANE_BIN", str(exe))
    return exe


def test_binary_prefers_the_environment(fake_binary: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert binary() == str(fake_binary)
    monkeypatch.setenv("RAFTLANE_BIN", str(fake_binary.parent / "missing"))
    assert binary() is None


async def test_three_nodes_get_their_flags_and_are_cleaned_up(
    fake_binary: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAFTLANE_CLUSTER_SECRET", "must-not-leak")
    async with empty_cluster(
        node_args=["--clock", "client"], node_env={"FAKE_MODE": "1"}
    ) as handle:
        endpoints, token = handle
        assert len(endpoints) == 3 and len(set(endpoints)) == 3
        assert all(e.startswith("http://127.0.0.1:") for e in endpoints)
        started = [
            json.loads((handle.data_dir / f"node{i}" / "started.json").read_text())
            for i in (1, 2, 3)
        ]
        for i, s in enumerate(started, start=1):
            argv = s["argv"]
            assert argv[0] == "node"
            assert argv[argv.index("--id") + 1] == str(i)
            assert argv[argv.index("--admin-token") + 1] == token
            assert argv[argv.index("--bootstrap") + 1] == ("true" if i == 1 else "false")
            assert argv[-2:] == ["--clock", "client"], "extra flags come last, on every node"
            assert s["env"].get("FAKE_MODE") == "1"
            assert "RAFTLANE_CLUSTER_SECRET" not in s["env"], "our RAFTLANE_* settings stay ours"
        secrets = {s["argv"][s["argv"].index("--cluster-secret") + 1] for s in started}
        assert len(secrets) == 1 and "must-not-leak" not in secrets
        assert (await handle.leader()).node_id == 1
        async with httpx.AsyncClient() as http:
            assert (await http.get(f"{endpoints[2]}/readyz")).status_code == 200
        root = handle.data_dir
    assert not root.exists()
    assert all(not n.running for n in handle.nodes)


async def test_a_node_that_exits_fails_the_start_with_its_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    exe = tmp_path / "raftlane"
    exe.write_text(f"#!{sys.executable}\nimport sys\nprint('bad flag --nope')\nsys.exit(2)\n")
    exe.chmod(0o755)
    monkeypatch.setenv("RAFTLANE_BIN", str(exe))
    with pytest.raises(RuntimeError, match="bad flag"):
        async with empty_cluster(startup_timeout=10):
            pass  # pragma: no cover - never reached


async def test_no_binary_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("RAFTLANE_BIN", str(tmp_path / "absent"))
    with pytest.raises(FileNotFoundError, match="RAFTLANE_BIN"):
        async with empty_cluster():
            pass  # pragma: no cover - never reached
