"""The store's edge translations between messagefoundry's values and raftlane's.

- ids: raftlane's integer ids become ``str`` (``"17"``) and come back with ``int()``;
- times: messagefoundry's float epoch seconds become integer milliseconds (``round(s * 1000)``)
  and back (``ms / 1000``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def ms(seconds: float) -> int:
    """Epoch (or a duration in) seconds as integer milliseconds."""
    return round(seconds * 1000)


def s(millis: int | None) -> float | None:
    """Milliseconds as seconds, ``None`` kept."""
    return None if millis is None else millis / 1000


def s0(millis: int) -> float:
    """Milliseconds as seconds, for a time the cluster always has."""
    return float(millis) / 1000


def sid(value: int | None) -> str | None:
    """A raftlane id as messagefoundry's text id, ``None`` kept."""
    return None if value is None else str(value)


def row_id(value: str | int) -> int:
    """A row id the caller must name correctly (an inspection read): anything else is refused."""
    try:
        return int(value)
    except (TypeError, ValueError) as e:
        raise ValueError(f"not a raftlane row id: {value!r}") from e


def known_row_id(value: str | int) -> int | None:
    """``value`` as raftlane's integer id, ``None`` for text that names no raftlane row (which
    no row can have: the contract makes completing such an id a no-op, not an error)."""
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number if number >= 0 else None


def drop_none(d: Mapping[str, Any]) -> dict[str, Any]:
    """``d`` without its ``None`` members: an absent member is the server's default."""
    return {k: v for k, v in d.items() if v is not None}
