"""How the contract's no-ops are told from errors: a completion of a row that is gone, a read
of a record that is not there, a route the server does not serve."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass

from ...errors import NotFoundError, RaftlaneError, StaleFenceError, WrongStatusError

log = logging.getLogger("raftlane.messagefoundry.store")

#: The message raftlane's router answers an unknown path with (``404 not_found``).
_NO_SUCH_ROUTE = "no such route"


def is_missing_route(err: NotFoundError) -> bool:
    """True when a ``404`` says the server has no such route (as opposed to no such record)."""
    return err.message == _NO_SUCH_ROUTE


def raise_unless_gone(err: NotFoundError) -> None:
    """A completion of a row the cluster does not have is the contract's no-op; a route the
    server does not serve is still an error."""
    if is_missing_route(err):
        raise err


class NeverClaimedError(RaftlaneError):
    """A row was to be completed that no claim ever took: it has no fence to complete it with."""


@dataclass
class Applied:
    """Whether the write inside :func:`unless_gone` took effect."""

    applied: bool = True


@contextlib.contextmanager
def unless_gone(what: str, row_id: int, held: set[int]) -> Iterator[Applied]:
    """Run one completion or handoff of ``row_id`` as the contract has it: a row that is not
    there, no longer this claim's, or already past this step is a no-op (``applied`` false),
    not an error. A route the server does not serve still raises.

    - ``404`` (no such row, or consumed by a handoff): messagefoundry's "unknown id" no-op;
    - ``wrong_status`` (already done, dead or handed off): the step already happened;
    - ``stale_fence`` (the claim's lease ran out and the row went to another claim): raftlane
      completes a row only under its current claim, so the late completion changes nothing and
      the row is delivered by its current holder (logged: it means a lease shorter than the
      work);
    - a row never claimed: it has no fence, so only a claim may complete it (logged).

    Whichever of these it was, the handle no longer holds the row (``held``: the rows whose
    leases it renews); an error that is none of them leaves it held, for the engine's retry."""
    result = Applied()
    try:
        yield result
        held.discard(row_id)
        return
    except NotFoundError as e:
        raise_unless_gone(e)
        result.applied = False
    except WrongStatusError:
        result.applied = False
    except StaleFenceError:
        log.warning("%s of row %s ignored: its claim was taken back (lease expired)", what, row_id)
        result.applied = False
    except NeverClaimedError:
        log.warning("%s of row %s ignored: the row was never claimed", what, row_id)
        result.applied = False
    held.discard(row_id)
