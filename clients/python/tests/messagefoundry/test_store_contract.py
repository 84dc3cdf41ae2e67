"""messagefoundry's store contract on ``RaftlaneStore``, behaviour by behaviour.

Written from messagefoundry 0.1.0's ``Store`` protocol (``messagefoundry/store/base.py``), its
docstrings and its SQLite store as the reference behaviour (docs/MESSAGEFOUNDRY.md §5 names each
behaviour and where raftlane knowingly differs). Each test drives one behaviour on a real cluster
in client-clock mode (``--test-client-clock``: a method's ``now=`` is its command's time) and
checks what the contract promises, not what raftlane happened to do.

One cluster serves the module; each test works on its own channel and destination names, and its
own stretch of the (forward-only) clock, so the tests do not see each other's rows.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

pytest.importorskip("messagefoundry")

from messagefoundry.config.models import RetryPolicy
from messagefoundry.store.store import MessageStatus, OutboxStatus, Stage

from raftlane.messagefoundry import RaftlaneStore
from raftlane.testing import empty_cluster

pytestmark = pytest.mark.cluster

#: An HL7 fragment carrying patient identifiers, as a failing handler might put it in an error.
PHI = "PID|1||100^^^H^MR||DOE^JANE"
RAW = "MSH|^~\\&|S|F|R|RF|20260101||ADT^A01|MSG1|P|2.5.1\rPID|1||100||DOE^JANE\r"

_clock = itertools.count(1)


def epoch() -> float:
    """A fresh stretch of client time for one test: the cluster's clock only moves forward, and
    the tests share one cluster, so each starts 10^6 s after the previous one."""
    return 1_000_000.0 * next(_clock)


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def endpoints() -> AsyncIterator[tuple[list[str], str]]:
    async with empty_cluster(node_args=["--test-client-clock"]) as (eps, token):
        yield eps, token


@pytest_asyncio.fixture(loop_scope="session")
async def store(endpoints: tuple[list[str], str]) -> AsyncIterator[RaftlaneStore]:
    eps, token = endpoints
    s = await RaftlaneStore.open(eps, token, client_clock=True)
    try:
        yield s
    finally:
        await s.close()


@pytest.fixture
def names() -> tuple[str, str]:
    """A channel and a destination no other test uses."""
    tag = uuid.uuid4().hex[:8]
    return f"IB{tag}", f"OB{tag}"


# --- retry policy -------------------------------------------------------------------------------


async def test_the_default_retry_policy_retries_forever(
    store: RaftlaneStore, names: tuple[str, str]
) -> None:
    """``RetryPolicy()`` has no ``max_attempts``: "retry forever", never dead-lettered by
    ``mark_failed`` however many attempts fail (the server's default limit does not apply)."""
    channel, dest = names
    t = epoch()
    mid = await store.enqueue_message(channel_id=channel, raw=RAW, deliveries=[(dest, "p")], now=t)
    policy = RetryPolicy()
    assert policy.max_attempts is None
    for attempt in range(1, 13):
        t += 10_000.0  # past any backoff (the policy caps it at 300 s)
        item = await store.claim_next_fifo(dest, now=t)
        assert item is not None, f"attempt {attempt}: the row must still be claimable"
        assert item.attempts == attempt
        await store.mark_failed(item.id, "connection refused", policy, now=t)
    (row,) = await store.outbox_for(mid)
    assert row["status"] == OutboxStatus.PENDING.value
    assert row["attempts"] == 12
    assert await store.count_dead() == 0 or all(
        d["message_id"] != mid for d in await store.list_dead(limit=1000)
    )


async def test_a_finite_retry_policy_dead_letters_on_its_last_attempt(
    store: RaftlaneStore, names: tuple[str, str]
) -> None:
    channel, dest = names
    t = epoch()
    mid = await store.enqueue_message(channel_id=channel, raw=RAW, deliveries=[(dest, "p")], now=t)
    policy = RetryPolicy(max_attempts=2, backoff_seconds=1.0)
    for _ in range(2):
        t += 100.0
        item = await store.claim_next_fifo(dest, now=t)
        assert item is not None
        await store.mark_failed(item.id, "AE from partner", policy, now=t)
    (row,) = await store.outbox_for(mid)
    assert row["status"] == OutboxStatus.DEAD.value
    assert (await store.get_message(mid) or {})["status"] == MessageStatus.ERROR.value


# --- the PHI chokepoint -------------------------------------------------------------------------


async def test_failure_texts_are_scrubbed_of_hl7_content(
    store: RaftlaneStore, names: tuple[str, str]
) -> None:
    """The store layer is messagefoundry's PHI chokepoint: ``mark_failed``'s and
    ``dead_letter_now``'s error and ``record_received``'s error reach neither the row's
    ``last_error``, the message's ``error`` nor any event's detail with HL7 field data in them."""
    channel, dest = names
    t = epoch()
    failed = await store.enqueue_message(
        channel_id=channel, raw=RAW, deliveries=[(dest, "p")], now=t
    )
    item = await store.claim_next_fifo(dest, now=t + 1)
    assert item is not None
    await store.mark_failed(item.id, f"bad value in {PHI}", RetryPolicy(), now=t + 1)

    killed = await store.enqueue_message(
        channel_id=channel, raw=RAW, deliveries=[(f"{dest}x", "p")], now=t + 2
    )
    item = await store.claim_next_fifo(f"{dest}x", now=t + 3)
    assert item is not None
    await store.dead_letter_now(item.id, f"AR: {PHI}", now=t + 3)

    errored = await store.record_received(
        channel_id=channel,
        raw=RAW,
        status=MessageStatus.ERROR,
        error=f"parse error near {PHI}",
        now=t + 4,
    )

    texts: list[str] = []
    for mid in (failed, killed, errored):
        message = await store.get_message(mid)
        assert message is not None
        texts.append(message["error"] or "")
        texts += [r["last_error"] or "" for r in await store.outbox_for(mid)]
        texts += [e["detail"] or "" for e in await store.events_for(mid)]
    leaked = [x for x in texts if "DOE" in x or "100^^^H^MR" in x]
    assert not leaked, leaked
    # The useful, non-PHI part survives: the text around it and the segment id.
    assert any(x.startswith("bad value in PID|") for x in texts)
    assert (await store.get_message(errored) or {})["error"].startswith("parse error near PID|")


# --- FIFO claims without a lane owner (one engine) ----------------------------------------------


async def test_a_held_head_is_not_handed_out_again(
    store: RaftlaneStore, names: tuple[str, str]
) -> None:
    """Without an owner a FIFO claim is "the oldest due *pending* row": the only row of a lane,
    once claimed, is not delivered a second time by the next claim."""
    channel, dest = names
    t = epoch()
    await store.enqueue_message(channel_id=channel, raw=RAW, deliveries=[(dest, "p")], now=t)
    first = await store.claim_next_fifo(dest, now=t + 1)
    assert first is not None
    assert await store.claim_next_fifo(dest, now=t + 2) is None
    await store.mark_done(first.id, now=t + 3)
    assert await store.claim_next_fifo(dest, now=t + 4) is None


async def test_outbound_claims_without_owner_take_pending_rows_in_arrival_order(
    store: RaftlaneStore, names: tuple[str, str]
) -> None:
    channel, dest = names
    t = epoch()
    mids = [
        await store.enqueue_message(
            channel_id=channel, raw=RAW, deliveries=[(dest, f"p{i}")], now=t + i
        )
        for i in range(3)
    ]
    claimed = [await store.claim_next_fifo(dest, now=t + 10) for _ in range(4)]
    assert [c.message_id if c else None for c in claimed] == [*mids, None]
    assert [c.attempts for c in claimed if c] == [1, 1, 1]


async def test_routed_claims_hand_out_each_handler_row_in_arrival_order(
    store: RaftlaneStore, names: tuple[str, str]
) -> None:
    """A routed lane (keyed by channel) drained by one serial worker: message 1's handler rows in
    the order the router named them, then message 2's, one per call."""
    channel, _ = names
    t = epoch()
    got = []
    for i in range(2):
        mid = await store.enqueue_ingress(channel_id=channel, raw=RAW, now=t + i)
        ingress = await store.claim_next_fifo(channel, stage=Stage.INGRESS.value, now=t + 5)
        assert ingress is not None and ingress.message_id == mid
        assert await store.route_handoff(
            ingress_id=ingress.id,
            message_id=mid,
            channel_id=channel,
            handlers=[("h1", "x"), ("h2", "y")],
            disposition=MessageStatus.ROUTED,
            now=t + 5,
        )
        got.append(mid)
    order = []
    for _ in range(5):
        item = await store.claim_next_fifo(channel, stage=Stage.ROUTED.value, now=t + 10)
        order.append(None if item is None else (item.message_id, item.handler_name))
    assert order == [(got[0], "h1"), (got[0], "h2"), (got[1], "h1"), (got[1], "h2"), None]


async def test_ingress_claims_without_owner_hand_out_messages_in_arrival_order(
    store: RaftlaneStore, names: tuple[str, str]
) -> None:
    channel, _ = names
    t = epoch()
    mids = [await store.enqueue_ingress(channel_id=channel, raw=RAW, now=t + i) for i in range(2)]
    a = await store.claim_next_fifo(channel, stage=Stage.INGRESS.value, now=t + 5)
    b = await store.claim_next_fifo(channel, stage=Stage.INGRESS.value, now=t + 5)
    assert (a and a.message_id, b and b.message_id) == tuple(mids)
    assert await store.claim_next_fifo(channel, stage=Stage.INGRESS.value, now=t + 5) is None
    assert (await store.get_message(mids[0]) or {})["status"] == MessageStatus.RECEIVED.value


# --- ids the store never issued -----------------------------------------------------------------


@pytest.mark.parametrize("row_id", ["999999999", "not-a-row", "-3"])
async def test_completions_of_unknown_rows_are_no_ops(store: RaftlaneStore, row_id: str) -> None:
    """Completing, failing or dead-lettering a row that does not exist changes nothing and does
    not raise; a handoff of one answers ``False`` (nothing was consumed)."""
    t = epoch()
    before = await store.stats()
    await store.mark_done(row_id, now=t)
    await store.complete_with_response(row_id, body="MSA|AA", outcome="AA", now=t)
    await store.mark_failed(row_id, "boom", RetryPolicy(), now=t)
    await store.dead_letter_now(row_id, "boom", now=t)
    assert not await store.handoff(
        ingress_id=row_id,
        message_id="1",
        channel_id="IB",
        deliveries=[("OB", "p")],
        disposition=MessageStatus.ROUTED,
        now=t,
    )
    assert not await store.route_handoff(
        ingress_id=row_id,
        message_id="1",
        channel_id="IB",
        handlers=[("h", "p")],
        disposition=MessageStatus.ROUTED,
        now=t,
    )
    assert not await store.transform_handoff(
        routed_id=row_id, message_id="1", channel_id="IB", deliveries=[], now=t
    )
    assert not await store.ingress_handoff(
        response_row_id=row_id,
        loopback_channel_id="LOOP",
        correlation_depth_cap=3,
        control_id=None,
        message_type=None,
        summary=None,
        now=t,
    )
    assert await store.response_body_for_work_row(row_id) is None
    assert await store.renew_leases([row_id], now=t) == 0
    assert await store.stats() == before


@pytest.mark.parametrize("message_id", ["999999999", "f3a9c0de"])
async def test_reads_of_unknown_messages_answer_nothing(
    store: RaftlaneStore, message_id: str
) -> None:
    assert await store.get_message(message_id) is None
    assert await store.outbox_for(message_id) == []
    assert await store.outbox_payloads_for(message_id) == []
    assert await store.events_for(message_id) == []
    assert await store.correlate_response(message_id) == []
    assert await store.replay(message_id, now=epoch()) == 0


# --- sessions dated by the engine's clock, on a cluster without the client clock ----------------


@pytest_asyncio.fixture(loop_scope="session")
async def wall_clock_store() -> AsyncIterator[RaftlaneStore]:
    """A store on a cluster of its own WITHOUT ``--test-client-clock``: every write is stamped
    with the cluster's time, except what the caller dates itself."""
    async with empty_cluster() as (eps, token):
        s = await RaftlaneStore.open(eps, token)
        try:
            yield s
        finally:
            await s.close()


async def test_session_times_are_the_engines_even_when_its_clock_is_behind_the_clusters(
    wall_clock_store: RaftlaneStore,
) -> None:
    """messagefoundry revokes a session stamped ahead of its own clock (AUTH-CLOCK) and ages it
    by ``now - last_used_at``: an engine host a few seconds behind the cluster must read back
    exactly the times it named (docs/SPEC.md §13.2, docs/MESSAGEFOUNDRY.md §5.7)."""
    import time

    store = wall_clock_store
    await store.create_user(user_id="u-behind", username="behind", auth_provider="local")
    behind = time.time() - 4.0  # this host's clock, 4 s behind the cluster's

    def ms(t: float) -> float:
        return round(t * 1000) / 1000

    token_hash = uuid.uuid4().hex * 2
    await store.create_session(
        token_hash=token_hash,
        user_id="u-behind",
        expires_at=behind + 3600,
        client="10.0.0.9",
        now=behind,
    )
    s = await store.get_session(token_hash)
    assert s is not None
    assert (s.created_at, s.last_used_at, s.reauth_at) == (ms(behind),) * 3
    assert s.mfa_verified_at is None and s.revoked_at is None

    await store.touch_session(token_hash, now=behind + 1.25)
    await store.mark_session_mfa_verified(token_hash, now=behind + 1.5)
    await store.mark_session_reauthed(token_hash, now=behind + 1.75, client="10.0.0.10")
    s = await store.get_session(token_hash)
    assert s is not None
    assert (s.created_at, s.last_used_at, s.mfa_verified_at, s.reauth_at, s.client) == (
        ms(behind),
        ms(behind + 1.25),
        ms(behind + 1.5),
        ms(behind + 1.75),
        "10.0.0.10",
    )
    # Nothing "from the future" for the engine that wrote it: its AUTH-CLOCK check passes.
    assert time.time() >= s.created_at and time.time() >= s.last_used_at

    await store.revoke_session(token_hash, now=behind + 2)
    s = await store.get_session(token_hash)
    assert s is not None and s.revoked_at == ms(behind + 2)

    # A user's sessions revoked at the engine's time too.
    other = uuid.uuid4().hex * 2
    await store.create_session(
        token_hash=other, user_id="u-behind", expires_at=behind + 3600, now=behind + 2.5
    )
    assert await store.revoke_user_sessions("u-behind", now=behind + 3) == 1
    s = await store.get_session(other)
    assert s is not None
    assert (s.created_at, s.revoked_at) == (ms(behind + 2.5), ms(behind + 3))
