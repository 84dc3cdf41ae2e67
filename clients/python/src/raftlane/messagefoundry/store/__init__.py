"""``RaftlaneStore``: messagefoundry's ``Store`` protocol on a raftlane cluster.

Every change is one replicated command sent through :class:`raftlane.Client`'s typed methods (one
``Request-Id`` per write across retries); reads are linearizable reads. The store translates at
its edge only (:mod:`.convert`: ids, times), keeps the fences of the rows it claimed (raftlane
fences every completion, docs/SPEC.md §4.6; :mod:`.leases`), and sends a method's ``now=`` as the
caller's clock to a cluster in client-clock test mode (:mod:`.context`). Every method calls
routes the cluster serves (docs/SPEC.md §10.1); nothing is emulated here. docs/MESSAGEFOUNDRY.md
§5 maps every method.

One module per part of messagefoundry's protocols, each a class over the shared context that
:class:`RaftlaneStore` (:mod:`.composed`) composes:

- ``QueueStore``: :mod:`.pipeline` (write path), :mod:`.state` (transform state, reference sets),
  :mod:`.delivery` (claims, completions, responses), :mod:`.recovery` (recovery, replay, and
  the ``ReclaimingStore`` of its leader tasks), :mod:`.reads` (API and console reads),
  :mod:`.maintenance` (key rotation, retention, health);
- ``AuditStore``: :mod:`.audit`;
- ``AuthStore``: :mod:`.users`, :mod:`.roles`, :mod:`.sessions`.

Every part calls :class:`raftlane.Client`'s typed methods only.

messagefoundry (AGPL) is an optional dependency: it is imported at run time for its answer types
(``OutboxItem``, ``CapturedResponse``, ``DbStatus``, ...) and its audit tee; none of its code is
copied here.
"""

from .audit import AUDIT_ORG, NEVER_MS
from .composed import RaftlaneStore
from .context import CLAIM_WAIT_S, CLIENT_TIME_HEADER, StoreContext, StoreSettings
from .leases import FENCE_MEMORY
from .outcomes import NeverClaimedError, is_missing_route
from .sessions import TOUCH_COALESCE_S

__all__ = [
    "AUDIT_ORG",
    "CLAIM_WAIT_S",
    "CLIENT_TIME_HEADER",
    "FENCE_MEMORY",
    "NEVER_MS",
    "TOUCH_COALESCE_S",
    "NeverClaimedError",
    "RaftlaneStore",
    "StoreContext",
    "StoreSettings",
    "is_missing_route",
]
