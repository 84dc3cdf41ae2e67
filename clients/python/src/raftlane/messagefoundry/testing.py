"""Test tooling for messagefoundry on raftlane, for this package's tests and benchmarks and for
users' own: a minimal MLLP sender and receiver (HL7 v2 over TCP, each message framed as
0x0B ... 0x1C 0x0D), synthetic ADT messages, a project directory with a code-first registry
(MLLP inbound → router → handler → MLLP outbound; or several such channels, each handler
sending every message to several outbounds), and :class:`EngineProcess`, one
``python -m raftlane.messagefoundry serve`` child process."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "REGISTRY",
    "EngineProcess",
    "Receiver",
    "Sender",
    "ack_for",
    "adt",
    "field_of",
    "free_port",
    "inbound_value_key",
    "registry",
    "write_project",
]

START, END = b"\x0b", b"\x1c\x0d"


def _absolute_pythonpath() -> dict[str, str]:
    """The caller's ``PYTHONPATH`` with every entry made absolute, for a child run in another
    directory: there a relative entry (``PYTHONPATH=src`` from clients/python) would name
    nothing, and the child would import whichever raftlane is installed instead of the
    caller's."""
    given = os.environ.get("PYTHONPATH")
    if not given:
        return {}
    paths = [str(Path(p).resolve()) for p in given.split(os.pathsep) if p]
    return {"PYTHONPATH": os.pathsep.join(paths)}


def frame(message: str) -> bytes:
    return START + message.encode() + END


async def read_frame(reader: asyncio.StreamReader) -> str:
    data = await reader.readuntil(END)
    start = data.find(START)
    if start < 0:
        raise ValueError("an MLLP frame without its start byte")
    return data[start + 1 : -len(END)].decode()


def field_of(message: str, segment: str, index: int) -> str | None:
    """Field ``index`` of the first ``segment`` (MSH counts its field separator as MSH-1)."""
    for line in message.replace("\n", "\r").split("\r"):
        parts = line.split("|")
        if parts[0] == segment:
            i = index - 1 if segment == "MSH" else index
            return parts[i] if 0 <= i < len(parts) else None
    return None


def ack_for(message: str, code: str = "AA") -> str:
    control = field_of(message, "MSH", 10) or ""
    return f"MSH|^~\\&|RECV|TEST|||20261205000000||ACK|A{control}|P|2.5.1\rMSA|{code}|{control}\r"


def adt(n: int) -> str:
    """Synthetic ADT^A01 number ``n`` (control id ``MSG<n>``)."""
    return (
        f"MSH|^~\\&|LAB|NORTH|EMR|SOUTH|20261205120000||ADT^A01|MSG{n:06d}|P|2.5.1\r"
        f"EVN|A01|20261205120000\r"
        f"PID|1||{n}^^^NORTH^MR||DOE^JANE\r"
    )


class Sender:
    """One MLLP connection that sends a message and waits for its ACK."""

    def __init__(self, host: str, port: int, timeout: float = 10.0) -> None:
        self.host, self.port, self.timeout = host, port, timeout
        self._conn: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def send(self, message: str) -> str:
        """The ACK code (``AA``, ``AE``, ``AR``) the peer answered."""
        if self._conn is None:
            self._conn = await asyncio.wait_for(
                asyncio.open_connection(self.host, self.port), self.timeout
            )
        reader, writer = self._conn
        try:
            writer.write(frame(message))
            await writer.drain()
            ack = await asyncio.wait_for(read_frame(reader), self.timeout)
        except BaseException:
            await self.close()
            raise
        return field_of(ack, "MSA", 1) or "??"

    async def close(self) -> None:
        if self._conn is not None:
            _, writer = self._conn
            self._conn = None
            writer.close()
            try:
                await writer.wait_closed()
            except OSError:
                pass


@dataclass
class Receiver:
    """An MLLP listener that records every message it receives, in arrival order, and answers
    AA; ``arrived`` keeps when each control id first arrived (``time.perf_counter()``)."""

    port: int
    received: list[str] = field(default_factory=list)
    arrived: dict[str, float] = field(default_factory=dict)
    _server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                message = await read_frame(reader)
                self.received.append(message)
                self.arrived.setdefault(field_of(message, "MSH", 10) or "", time.perf_counter())
                writer.write(frame(ack_for(message)))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    def control_ids(self) -> list[str]:
        return [field_of(m, "MSH", 10) or "" for m in self.received]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()


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


def inbound_value_key(channel: int) -> str:
    """The environment value naming channel ``channel``'s inbound port in :func:`registry`'s
    graphs (``MEFOR_VALUE_<KEY>`` in upper case; :class:`EngineProcess` sets it)."""
    return f"lab_in_port_{channel}"


def registry(channels: int, fanout: int) -> str:
    """A registry of ``channels`` independent channels: channel ``c`` is the MLLP inbound
    ``IB_LAB_<c>`` (port :func:`inbound_value_key`) → router ``lab_router_<c>`` (ADT only) →
    handler ``lab_handler_<c>``, which sends each message to every one of the ``fanout`` MLLP
    outbounds ``OB_EMR_<c>_<k>`` (peer port value ``emr_port_<c>_<k>``). Each connection has
    its own workers in the engine (one router and one transform worker per inbound, one delivery
    worker per outbound)."""
    if channels < 1 or fanout < 1:
        raise ValueError("a registry needs at least one channel and one outbound per channel")
    parts = ["from messagefoundry import MLLP, Send, env, handler, inbound, outbound, router\n"]
    for c in range(channels):
        outs = [f"OB_EMR_{c}_{k}" for k in range(fanout)]
        parts.append(
            f'\n\ninbound("IB_LAB_{c}", MLLP(port=env("{inbound_value_key(c)}", cast=int)), '
            f'router="lab_router_{c}")\n'
        )
        for k, name in enumerate(outs):
            parts.append(
                f'outbound("{name}", MLLP(host="127.0.0.1", '
                f'port=env("emr_port_{c}_{k}", cast=int), timeout_seconds=5.0))\n'
            )
        sends = ", ".join(f'Send("{name}", msg)' for name in outs)
        parts.append(
            f'\n\n@router("lab_router_{c}")\n'
            f"def route_{c}(msg):\n"
            f'    return ["lab_handler_{c}"] if msg["MSH-9.1"] == "ADT" else []\n'
            f'\n\n@handler("lab_handler_{c}")\n'
            f"def handle_{c}(msg):\n"
            f"    return [{sends}]\n"
        )
    return "".join(parts)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_project(
    root: Path,
    *,
    emr_port: int | None = None,
    settings: Mapping[str, Mapping[str, object]] | None = None,
    destinations: Sequence[Sequence[int]] | None = None,
) -> Path:
    """A messagefoundry project under ``root``: ``config/lab.py``, ``environments/dev.toml``
    and ``messagefoundry.toml`` with ``settings`` (``{section: {key: value}}``). Answers
    ``root``.

    With ``emr_port``: one channel, :data:`REGISTRY`, its outbound peer on ``emr_port``; each
    engine's inbound port comes from ``MEFOR_VALUE_LAB_IN_PORT``. With ``destinations`` instead:
    :func:`registry` of ``len(destinations)`` channels, channel ``c`` sending each message to
    the peers on ports ``destinations[c]`` (every channel the same number of them); channel
    ``c``'s inbound port comes from ``MEFOR_VALUE_LAB_IN_PORT_<c>`` (an :class:`EngineProcess`
    with ``inbounds=len(destinations)`` sets them)."""
    if (emr_port is None) == (destinations is None):
        raise ValueError("write_project needs either emr_port or destinations")
    (root / "config").mkdir(parents=True, exist_ok=True)
    (root / "environments").mkdir(exist_ok=True)
    if destinations is None:
        (root / "config" / "lab.py").write_text(REGISTRY)
        env_values = f"lab_in_port = 1\nemr_port = {emr_port}\n"
    else:
        fanouts = {len(ports) for ports in destinations}
        if len(fanouts) != 1:
            raise ValueError("every channel needs the same number of destinations")
        (root / "config" / "lab.py").write_text(registry(len(destinations), fanouts.pop()))
        env_values = "".join(
            f"{inbound_value_key(c)} = 1\n"
            + "".join(f"emr_port_{c}_{k} = {port}\n" for k, port in enumerate(ports))
            for c, ports in enumerate(destinations)
        )
    (root / "environments" / "dev.toml").write_text(env_values)
    lines = []
    for section, values in (settings or {}).items():
        lines.append(f"[{section}]")
        for key, value in values.items():
            rendered = str(value).lower() if isinstance(value, bool) else repr(value)
            lines.append(f"{key} = {rendered}".replace("'", '"'))
    (root / "messagefoundry.toml").write_text("\n".join(lines) + "\n")
    return root


class EngineProcess:
    """One messagefoundry engine process on the project at ``project``: on raftlane
    (``python -m raftlane.messagefoundry serve``) when ``raftlane`` names the nodes, else
    messagefoundry's own ``serve`` on the store its settings name (``env`` may set them).

    It gets ``inbounds`` free inbound ports, ``inbound_ports`` (``inbound_port`` is the first):
    ``MEFOR_VALUE_LAB_IN_PORT`` names the first, ``MEFOR_VALUE_LAB_IN_PORT_<c>`` each one (the
    values :data:`REGISTRY` and :func:`registry` read)."""

    def __init__(
        self,
        name: str,
        project: Path,
        *,
        raftlane: Sequence[str] | None = None,
        token_file: Path | None = None,
        lease_ttl: float = 30.0,
        env: Mapping[str, str] | None = None,
        inbounds: int = 1,
        claim_wait: float | None = None,
    ) -> None:
        self.name = name
        if inbounds < 1:
            raise ValueError("an engine needs at least one inbound port")
        self.inbound_ports = [free_port() for _ in range(inbounds)]
        self.inbound_port = self.inbound_ports[0]
        self.api_port = free_port()
        self.log = project / f"{name}.log"
        common = [
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
        # RAFTLANE_ENGINE_LOG_LEVEL=DEBUG: an engine on raftlane logs every store call (the
        # client's per-request lines), for a look at what it did after a failure.
        level = os.environ.get("RAFTLANE_ENGINE_LOG_LEVEL")
        if raftlane is not None:
            if token_file is None:
                raise ValueError("an engine on raftlane needs its token file")
            self.argv = [
                sys.executable,
                "-m",
                "raftlane.messagefoundry",
                "serve",
                "--raftlane",
                ",".join(raftlane),
                "--token-file",
                str(token_file),
                "--node-id",
                name,
                "--lease-ttl",
                str(lease_ttl),
                *(["--claim-wait", str(claim_wait)] if claim_wait is not None else []),
                *(["--raftlane-log-level", level] if level else []),
                *common,
            ]
        else:
            self.argv = [sys.executable, "-m", "messagefoundry", "serve", *common]
        self.env = {
            **os.environ,
            **_absolute_pythonpath(),
            **(env or {}),
            "MEFOR_VALUE_LAB_IN_PORT": str(self.inbound_port),
            **{
                f"MEFOR_VALUE_{inbound_value_key(c).upper()}": str(port)
                for c, port in enumerate(self.inbound_ports)
            },
        }
        self.cwd = project
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self) -> None:
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(
                self.argv, env=self.env, cwd=self.cwd, stdout=out, stderr=subprocess.STDOUT
            )

    async def wait_listening(self, timeout: float = 60.0) -> None:
        """Until every one of the engine's MLLP inbounds accepts connections (only a leading
        engine listens: messagefoundry 0.1.0 runs its clustered engine active-passive)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        waiting = list(self.inbound_ports)
        while waiting:
            if not self.running:
                raise AssertionError(f"{self.name} exited\n{self.tail()}")
            try:
                _, w = await asyncio.open_connection("127.0.0.1", waiting[0])
                w.close()
                waiting.pop(0)
            except OSError:
                if loop.time() > deadline:
                    raise AssertionError(f"{self.name} never listened\n{self.tail()}") from None
                await asyncio.sleep(0.2)

    def kill(self) -> None:
        """SIGKILL, as a crash."""
        if self.proc is not None and self.running:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc is not None and self.running:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()

    def tail(self) -> str:
        """The end of the engine's log (the client logs its calls at DEBUG only, so at the
        engine's INFO this is the engine's own story)."""
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return ""
        return text[-6000:]
