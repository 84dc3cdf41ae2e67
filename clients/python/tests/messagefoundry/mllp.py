"""A minimal MLLP sender and receiver for the end-to-end tests (HL7 v2 over TCP: each message
framed as 0x0B ... 0x1C 0x0D). Our own, small and strict: it is the test's outside world."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

START, END = b"\x0b", b"\x1c\x0d"


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
    AA."""

    port: int
    received: list[str] = field(default_factory=list)
    _server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                message = await read_frame(reader)
                self.received.append(message)
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
