"""What one call through the Python client costs: latency and the client process's CPU per call,
for the client's own connections and for httpx, side by side on one three-node cluster.

    RAFTLANE_BIN=~/.cache/raftlane/target/release/raftlane \\
      ~/.cache/raftlane/venv/bin/python clients/python/benchmarks/client_calls.py --calls 2000

Each round sends ``--calls`` enqueues of 1 KiB, ``--concurrency`` at a time, through one
``Client`` (leader following on), and prints calls/s, latency p50/p99 and the client's CPU
microseconds per call (``time.process_time``: this process only, not the nodes). Rounds
alternate between the two wires so both see the same cluster and machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time

import httpx

from raftlane import Client
from raftlane.testing import empty_cluster


async def _round(client: Client, calls: int, concurrency: int, body: str) -> dict[str, float]:
    latencies: list[float] = []
    queue = iter(range(calls))

    async def worker() -> None:
        for _ in queue:
            t = time.perf_counter()
            await client.enqueue("bench", body)
            latencies.append(time.perf_counter() - t)

    cpu0, t0 = time.process_time(), time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - t0
    latencies.sort()
    return {
        "calls_per_s": calls / wall,
        "p50_ms": statistics.median(latencies) * 1e3,
        "p99_ms": latencies[int(len(latencies) * 0.99) - 1] * 1e3,
        "cpu_us_per_call": cpu / calls * 1e6,
    }


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--calls", type=int, default=2000, help="enqueues per round (default 2000)")
    ap.add_argument("--concurrency", type=int, default=1, help="calls in flight (default 1)")
    ap.add_argument("--rounds", type=int, default=2, help="rounds per wire (default 2)")
    ap.add_argument("--json", action="store_true", help="print one JSON object per round")
    args = ap.parse_args()
    body = "x" * 1024
    async with empty_cluster() as (endpoints, token):
        lean = Client(endpoints, token)
        via_httpx = Client(endpoints, token, transport=httpx.AsyncHTTPTransport())
        for c in (lean, via_httpx):  # warm: leader found, connections open
            for _ in range(50):
                await c.enqueue("bench", body)
        for r in range(args.rounds):
            for name, c in (("lean", lean), ("httpx", via_httpx)):
                fig = await _round(c, args.calls, args.concurrency, body)
                if args.json:
                    print(json.dumps({"wire": name, "round": r, **fig}))
                else:
                    print(
                        f"{name:>5} round {r}: {fig['calls_per_s']:7.0f} calls/s  "
                        f"p50 {fig['p50_ms']:5.2f} ms  p99 {fig['p99_ms']:6.2f} ms  "
                        f"client CPU {fig['cpu_us_per_call']:5.0f} µs/call"
                    )
        await lean.aclose()
        await via_httpx.aclose()


if __name__ == "__main__":
    asyncio.run(main())
