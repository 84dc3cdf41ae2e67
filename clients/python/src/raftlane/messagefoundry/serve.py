"""``python -m raftlane.messagefoundry serve``: messagefoundry's own ``serve`` with its store and
its cluster coordinator swapped for raftlane's.

messagefoundry 0.1.0's service opens its store with ``open_store(settings)`` and builds its
coordinator with ``build_coordinator(store, cluster_settings)`` inside its API app
(``messagefoundry.api.app``). :func:`install` replaces those two names there, so everything else
(configuration loading, the engine, the API, auth bootstrap, retention, its command line) is
messagefoundry's, unchanged: a :class:`RaftlaneStore` on the given cluster, and a
:class:`RaftlaneCoordinator` for it, whatever ``[store]`` and ``[cluster]`` say. The coordinator
is always the clustered one: several engine processes sharing raftlane must lease lanes per node
and must not reset each other's in-flight rows at start-up.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .coordinator import RaftlaneCoordinator
from .store import CLAIM_WAIT_S, RaftlaneStore

__all__ = ["SETTINGS_ENV", "install", "main"]

#: messagefoundry settings the service runs under on raftlane, as ``MEFOR_<SECTION>_<KEY>``
#: overrides (they win over its TOML file). messagefoundry accepts ``[cluster].enabled`` only
#: with a server-database ``[store]`` and then checks its connection fields; the store it would
#: open is replaced by :func:`install`, so those fields only name raftlane and are never used.
SETTINGS_ENV = {
    "MEFOR_STORE_BACKEND": "postgres",
    "MEFOR_STORE_SERVER": "raftlane",
    "MEFOR_STORE_DATABASE": "raftlane",
    "MEFOR_STORE_USERNAME": "raftlane",
    "MEFOR_CLUSTER_ENABLED": "true",
}


def install(
    endpoints: Sequence[str],
    token: str,
    *,
    node_id: str | None = None,
    lease_ttl_seconds: float = 30.0,
    claim_wait_seconds: float = CLAIM_WAIT_S,
    log_level: str | None = None,
) -> None:
    """Make messagefoundry's service open a :class:`RaftlaneStore` on ``endpoints`` and coordinate
    through a :class:`RaftlaneCoordinator` (node id ``node_id``, else the store's owner id).
    ``claim_wait_seconds``: how long the engine's worker claims wait at the node for work.
    ``log_level``: the level of raftlane's own loggers (the client's, the store's, the
    coordinator's), whatever the engine's: ``DEBUG`` logs every call the store makes."""
    from messagefoundry.api import app

    async def open_store(_settings: Any) -> RaftlaneStore:
        # messagefoundry has configured its logging by now; this narrows it for raftlane's own.
        if log_level is not None:
            logging.getLogger("raftlane").setLevel(log_level)
        return await RaftlaneStore.open(
            endpoints,
            token,
            owner=node_id,
            lease_ttl_seconds=lease_ttl_seconds,
            claim_wait_seconds=claim_wait_seconds,
        )

    def build_coordinator(store: Any, cluster_settings: Any) -> RaftlaneCoordinator:
        return RaftlaneCoordinator.for_store(store, cluster_settings)

    # Module attributes that messagefoundry's app looks up at start-up: set by name.
    setattr(app, "open_store", open_store)  # noqa: B010
    setattr(app, "build_coordinator", build_coordinator)  # noqa: B010


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m raftlane.messagefoundry",
        description="Run messagefoundry 0.1.0 with raftlane as its store and cluster coordinator.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser(
        "serve",
        help="messagefoundry's `serve` on a raftlane cluster",
        description="Every argument not listed here goes to messagefoundry's own `serve` "
        "(--config DIR, --env NAME, --port N, --service-config FILE, ...).",
    )
    serve.add_argument(
        "--raftlane",
        required=True,
        metavar="URL[,URL...]",
        help="the raftlane nodes' HTTP addresses (any node accepts any request)",
    )
    serve.add_argument(
        "--token-file",
        required=True,
        type=Path,
        help="a file holding the raftlane API token of role `engine` (or `admin`): the engine "
        "manages its users and sessions, replays, purges and appends audit rows, which a "
        "`worker` token may not (docs/SPEC.md §9.3)",
    )
    serve.add_argument(
        "--node-id",
        default=None,
        help="this engine's stable identity in the cluster (default: host:pid:random); bound to "
        "the token's principal at first use, or reserved for it ahead (PUT /v1/owners/{id})",
    )
    serve.add_argument(
        "--lease-ttl",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="row and lane lease length of this engine's claims (default 30)",
    )
    serve.add_argument(
        "--claim-wait",
        type=float,
        default=CLAIM_WAIT_S,
        metavar="SECONDS",
        help="how long a worker's claim waits at the node for work when there is none, "
        f"0 to 30; 0 answers at once (default {CLAIM_WAIT_S:g})",
    )
    serve.add_argument(
        "--raftlane-log-level",
        default=None,
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="the level of raftlane's own loggers, whatever the engine's (--log-level): DEBUG "
        "logs every call the store makes to the cluster, with its status and time",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args, rest = _parser().parse_known_args(argv)
    endpoints = [u.strip() for u in args.raftlane.split(",") if u.strip()]
    if not endpoints:
        print("error: --raftlane names no node", file=sys.stderr)
        return 2
    try:
        token = args.token_file.read_text().strip()
    except OSError as e:
        print(f"error: cannot read --token-file {args.token_file}: {e}", file=sys.stderr)
        return 2
    if not token:
        print(f"error: --token-file {args.token_file} is empty", file=sys.stderr)
        return 2
    if not 0 <= args.claim_wait <= 30:
        print("error: --claim-wait must be between 0 and 30 seconds", file=sys.stderr)
        return 2
    install(
        endpoints,
        token,
        node_id=args.node_id,
        lease_ttl_seconds=args.lease_ttl,
        claim_wait_seconds=args.claim_wait,
        log_level=args.raftlane_log_level,
    )
    os.environ.update(SETTINGS_ENV)
    from messagefoundry.__main__ import main as messagefoundry_main

    return int(messagefoundry_main(["serve", *rest]))
