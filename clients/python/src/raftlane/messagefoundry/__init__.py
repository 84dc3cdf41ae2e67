"""raftlane as a messagefoundry store: :class:`RaftlaneStore` implements messagefoundry 0.1.0's
``Store`` protocol with every change a replicated raftlane command (docs/MESSAGEFOUNDRY.md).

Needs messagefoundry (``pip install 'raftlane[messagefoundry]'``), imported for its answer types.
"""

from .coordinator import CONFIG_VERSION_COUNTER, LEADERSHIP_GROUP, RaftlaneCoordinator
from .store import AUDIT_ORG, CLIENT_TIME_HEADER, RaftlaneStore, StoreSettings, is_missing_route

__all__ = [
    "AUDIT_ORG",
    "CLIENT_TIME_HEADER",
    "CONFIG_VERSION_COUNTER",
    "LEADERSHIP_GROUP",
    "RaftlaneCoordinator",
    "RaftlaneStore",
    "StoreSettings",
    "is_missing_route",
]
