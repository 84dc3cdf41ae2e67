"""The operator's page (``/ui``) in a real headless browser (Debian's ``chromium`` driven
through ``chromedriver``): a viewer types its token, the page reads a three-node cluster with
traffic, and what it shows matches the API. A screenshot is kept under
``$RAFTLANE_TEST_ARTIFACTS`` (default ``~/.cache/raftlane/artifacts``).

Skipped, saying why, where no browser, driver or selenium is installed; ``scripts/test.sh``
installs them (Debian's ``chromium`` and ``chromium-driver``, selenium from PyPI)."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from pipeline_steps import outbound_row

from raftlane import Client, RetryPolicy
from raftlane.testing import ClusterHandle

pytestmark = pytest.mark.cluster

BROWSER = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")


def artifacts() -> Path:
    default = Path.home() / ".cache" / "raftlane" / "artifacts"
    out = Path(os.environ.get("RAFTLANE_TEST_ARTIFACTS", str(default)))
    out.mkdir(parents=True, exist_ok=True)
    return out


def read_page(url: str, token: str, screenshot: Path) -> dict[str, Any]:
    """Open ``url`` headless, sign in with ``token``, wait for a read, and return what it shows."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    options = webdriver.ChromeOptions()
    options.binary_location = BROWSER or ""
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,1000"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(executable_path=DRIVER), options=options)
    try:
        driver.get(url)
        driver.find_element(By.ID, "token").send_keys(token)
        driver.find_element(By.ID, "auth").submit()
        WebDriverWait(driver, 20).until(
            lambda d: (
                (
                    d.find_element(By.ID, "status").text.startswith("Read at")
                    and d.find_element(By.ID, "audit").text != ""
                )
                or "bad" in (d.find_element(By.ID, "status").get_attribute("class") or "")
            )
        )
        driver.save_screenshot(str(screenshot))

        def table(table_id: str) -> list[list[str]]:
            rows = driver.find_elements(By.CSS_SELECTOR, f"#{table_id} tr")
            return [[td.text for td in r.find_elements(By.TAG_NAME, "td")] for r in rows]

        return {
            "status": driver.find_element(By.ID, "status").text,
            "status_class": driver.find_element(By.ID, "status").get_attribute("class") or "",
            "indexes": driver.find_element(By.ID, "indexes").text,
            "members": table("members"),
            "stages": table("stages"),
            "lanes": table("lanes"),
            "dead": table("dead"),
            "paused": table("paused"),
            "audit": driver.find_element(By.ID, "audit").text,
            "token_field": driver.find_element(By.ID, "token").get_attribute("value"),
        }
    finally:
        driver.quit()


async def test_the_operator_page_shows_what_the_api_answers(
    client: Client, cluster: ClusterHandle, name: str
) -> None:
    missing = [
        what for what, found in (("chromium", BROWSER), ("chromedriver", DRIVER)) if found is None
    ]
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("selenium")
    if missing:
        pytest.skip(f"no headless browser to drive: {', '.join(missing)} not installed")

    for n in range(3):
        await client.enqueue(name, f"MSH|page|{n}")
    # A dead letter with its error, and a row in the default org's audit chain.
    dest = f"{name}-emr"
    await outbound_row(client, f"{name}-d", dest, "MSH|page|dead")
    (out,) = await client.claim("outbound", owner="w", ttl_ms=30_000, destination=dest)
    once = RetryPolicy(backoff_ms=1000, multiplier=1.0, max_backoff_ms=1000, max_attempts=1)
    failed = await client.fail(out.row_id, out.fence, "connection refused by the EMR", retry=once)
    assert failed.dead
    await client.audit_append("page.check", org="default", detail="operator page test")
    await client.pause_destination(f"{name}-held", reason="page test")
    viewer = await client.create_token(f"{name}-viewer", "viewer")
    shot = artifacts() / "operator-page.png"
    page = await asyncio.to_thread(read_page, f"{cluster.endpoints[0]}/ui", viewer.token, shot)

    # Read with a viewer's token: nothing on the page needs more.
    assert page["status"].startswith("Read at"), page
    assert page["token_field"] == "", "the token does not stay in the field"
    assert shot.stat().st_size > 0

    status = await client.cluster()
    members = {int(r[0]): r[2] for r in page["members"]}
    assert set(members) == {m.id for m in status.membership}, page["members"]
    assert members[status.leader_id] == "leader", page["members"]

    stats = await client.stats()
    shown = re.search(r"(\d+) messages", page["indexes"])
    assert shown is not None and int(shown.group(1)) == stats.messages, page["indexes"]
    stages = {r[0]: [int(c) for c in r[1:]] for r in page["stages"]}
    assert stages["ingress"][0] == stats.rows["ingress"]["pending"], page["stages"]

    lane = next((r for r in page["lanes"] if r[:2] == ["ingress", name]), None)
    assert lane is not None and lane[2] == "3", page["lanes"]

    dead = next((r for r in page["dead"] if r[:2] == ["outbound", dest]), None)
    assert dead is not None and dead[2] == "1", page["dead"]
    assert dead[4] == "connection refused by the EMR", page["dead"]

    held = next((r for r in page["paused"] if r[0] == f"{name}-held"), None)
    assert held is not None and held[3] == "page test", page["paused"]

    chain = await client.audit_verify("default")
    assert page["audit"].startswith(f"default: verified, {chain.count} rows"), page["audit"]
