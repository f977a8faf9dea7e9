"""Custom search attributes osprov upserts on every workflow (names and types).

The local stack registers these with the Temporal dev server at start; docker-compose and the
deploy docs register the same list. Values are upserted only when they change.
"""

from __future__ import annotations

# name -> Temporal indexed value type
SEARCH_ATTRIBUTES: dict[str, str] = {
    "OsprovKind": "Keyword",  # e.g. "Domain", "Volume"
    "OsprovNamespace": "Keyword",  # Kubernetes namespace of the resource
    "OsprovName": "Keyword",  # Kubernetes name of the resource
    "OsprovReady": "Keyword",  # "True" | "False" | "Unknown"
    "OsprovReason": "Keyword",  # reason of the Ready/Available condition, e.g. "ReconcileError"
    "OsprovRebuild": "Keyword",  # Server only: rebuild marker state, e.g. "Failed" when parked
}
