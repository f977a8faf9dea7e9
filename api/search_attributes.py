"""The custom search attributes osprov upserts on its workflows: each key defined once, here.

The local stack registers SEARCH_ATTRIBUTES with the Temporal dev server at start; docker-compose and the
deploy docs register the same list (a test compares them). Values are upserted only when they change.
Never put a secret here: search attributes are stored and indexed unencrypted.
"""

from __future__ import annotations

from temporalio.common import SearchAttributeKey

KIND = SearchAttributeKey.for_keyword("OsprovKind")  # e.g. "Domain", "Volume"
NAMESPACE = SearchAttributeKey.for_keyword("OsprovNamespace")  # Kubernetes namespace of the resource
NAME = SearchAttributeKey.for_keyword("OsprovName")  # Kubernetes name of the resource
READY = SearchAttributeKey.for_keyword("OsprovReady")  # "True" | "False" | "Unknown"
REASON = SearchAttributeKey.for_keyword("OsprovReason")  # reason of Ready/Available, e.g. "ReconcileError"
REBUILD = SearchAttributeKey.for_keyword("OsprovRebuild")  # Server only: marker state, "Failed" when parked

ALL = (KIND, NAMESPACE, NAME, READY, REASON, REBUILD)
# name -> Temporal indexed value type, for registration (`temporal operator search-attribute create`)
SEARCH_ATTRIBUTES: dict[str, str] = {key.name: "Keyword" for key in ALL}
