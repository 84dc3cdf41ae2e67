"""``/metrics`` read by Prometheus's own parsers (the ``prometheus-client`` package's strict
OpenMetrics parser and its classic text parser) on a three-node cluster with traffic, and by
``promtool check metrics`` where Debian's ``prometheus`` package is installed: every family typed,
counters as counters, histograms whole, and the per-lane, per-route, Raft and engine figures
agreeing with what the API answers."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from typing import Any

import httpx
import pytest
from pipeline_steps import outbound_row

from raftlane import Client, RetryPolicy
from raftlane.testing import ClusterHandle

pytestmark = pytest.mark.cluster

OPENMETRICS = "application/openmetrics-text; version=1.0.0"


async def scrape(endpoint: str, token: str, accept: str | None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"}
    if accept is not None:
        headers["Accept"] = accept
    async with httpx.AsyncClient(timeout=10) as http:
        r = await http.get(f"{endpoint}/metrics", headers=headers)
    assert r.status_code == 200, r.text
    return r


def families(text: str, openmetrics: bool) -> dict[str, Any]:
    if openmetrics:
        from prometheus_client.openmetrics.parser import text_string_to_metric_families
    else:
        from prometheus_client.parser import text_string_to_metric_families
    return {f.name: f for f in text_string_to_metric_families(text)}


def value(fams: dict[str, Any], family: str, sample: str, **labels: str) -> float | None:
    for s in fams[family].samples:
        if s.name == sample and all(s.labels.get(k) == v for k, v in labels.items()):
            return float(s.value)
    return None


async def test_metrics_parse_and_agree_with_the_api(
    client: Client, cluster: ClusterHandle, name: str
) -> None:
    pytest.importorskip("prometheus_client", reason="the prometheus-client package parses")
    # Traffic: a lane with depth, and an outbound row delivered twice then dead-lettered.
    for n in range(3):
        await client.enqueue(name, f"MSH|metrics|{n}")
    dest = f"{name}-out"
    await outbound_row(client, f"{name}-d", dest, "MSH|metrics|dead")
    twice = RetryPolicy(backoff_ms=1, multiplier=1.0, max_backoff_ms=1, max_attempts=2)
    for attempt in range(2):
        claimed: list[Any] = []
        for _ in range(50):
            claimed = await client.claim("outbound", owner="w", ttl_ms=30_000, destination=dest)
            if claimed:
                break
        (out,) = claimed
        assert out.attempts == attempt + 1
        failed = await client.fail(out.row_id, out.fence, "refused", retry=twice)
        assert failed.dead == (attempt == 1)
    engine = f"{name}-engine"
    await client.engine_heartbeat(engine, host="h", pid=1)
    await client.campaign(f"{name}-group", engine, ttl_ms=60_000)

    status = await client.cluster()
    leader = next(m.addr for m in status.membership if m.id == status.leader_id)
    lane = await client.lane("ingress", name)
    for endpoint in cluster.endpoints:
        om = await scrape(endpoint, cluster.token, OPENMETRICS)
        assert om.headers["content-type"].startswith("application/openmetrics-text")
        assert om.text.endswith("# EOF\n")
        classic = await scrape(endpoint, cluster.token, None)
        assert classic.headers["content-type"].startswith("text/plain; version=0.0.4")
        for text, is_om in ((om.text, True), (classic.text, False)):
            fams = families(text, is_om)
            for fam in fams.values():
                assert fam.documentation, f"{fam.name} has no HELP"
                assert fam.type in ("counter", "gauge", "histogram"), (fam.name, fam.type)
                for s in fam.samples:
                    if s.name.endswith("_total"):
                        assert fam.type == "counter", f"{s.name} is typed {fam.type}"
            # Both parsers name a counter's family without `_total` (the samples keep it).
            assert fams["raftlane_commands"].type == "counter"
            assert fams["raftlane_http_requests"].type == "counter"
            hist = fams["raftlane_http_request_duration_seconds"]
            assert hist.type == "histogram"
            sync = fams["raftlane_log_sync_latency_seconds"]
            count = value(fams, sync.name, "raftlane_log_sync_latency_seconds_count")
            inf = value(fams, sync.name, "raftlane_log_sync_latency_seconds_bucket", le="+Inf")
            assert count is not None and count > 0 and count == inf
            assert (
                value(
                    fams, "raftlane_lane_depth", "raftlane_lane_depth", stage="ingress", lane=name
                )
                == lane.depth
                == 3
            )
            assert (
                value(
                    fams,
                    "raftlane_lane_redeliveries",
                    "raftlane_lane_redeliveries_total",
                    stage="outbound",
                    lane=dest,
                )
                == 1
            )
            assert (
                value(
                    fams,
                    "raftlane_lane_dead_lettered",
                    "raftlane_lane_dead_lettered_total",
                    stage="outbound",
                    lane=dest,
                )
                == 1
            )
            assert (
                value(
                    fams,
                    "raftlane_engine_leader",
                    "raftlane_engine_leader",
                    group=f"{name}-group",
                    engine=engine,
                )
                == 1
            )
            age = value(
                fams,
                "raftlane_engine_heartbeat_age_seconds",
                "raftlane_engine_heartbeat_age_seconds",
                engine=engine,
            )
            assert age is not None and 0 <= age < 60
            assert value(fams, "raftlane_term", "raftlane_term") == status.term
            if endpoint.split("://")[-1] == leader:
                assert value(fams, "raftlane_is_leader", "raftlane_is_leader") == 1
                lags = [s for s in fams["raftlane_replication_lag_entries"].samples]
                assert len(lags) == 2, lags
                commit = value(fams, "raftlane_commit_index", "raftlane_commit_index")
                applied = value(fams, "raftlane_last_applied", "raftlane_last_applied")
                assert commit is not None and applied is not None and commit >= applied
        # The enqueue route counted under its template, not the channel's path.
        fams = families(classic.text, False)
        if endpoint == cluster.endpoints[0]:
            enq = sum(
                s.value
                for s in fams["raftlane_http_requests"].samples
                if s.labels.get("route") == "/v1/channels/{channel}/messages"
                and s.labels.get("method") == "POST"
            )
            assert enq >= 4, fams["raftlane_http_requests"].samples
        promtool = shutil.which("promtool")
        if promtool is not None:
            check = await asyncio.to_thread(
                subprocess.run,
                [promtool, "check", "metrics"],
                input=classic.text,
                capture_output=True,
                text=True,
                check=False,
            )
            assert check.returncode == 0, check.stdout + check.stderr
