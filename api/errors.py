"""The error types activities raise and workflows branch on (ApplicationError.type).

Pure names: workflows import them inside Temporal's sandbox; osprov.activities.errors builds the
ApplicationErrors. Messages must be user-safe (no secret values, no raw provider diagnostics).
"""

from __future__ import annotations

NOT_FOUND = "NotFound"  # the object (or a dependency) does not exist; not retried blindly
CONFLICT = "Conflict"  # 409 from the provider, or a stale resourceVersion
CONSISTENCY = "Consistency"  # the cloud is in a state with no safe next action (duplicates, ERROR)
UNAUTHORIZED = "Unauthorized"  # 401 from the provider
INVALID = "Invalid"  # the request can never succeed as written (bad input); fix the resource
TRANSIENT = "Transient"  # timeouts, connection errors, 5xx: retried by Temporal with backoff
UNKNOWN_OUTCOME = "UnknownOutcome"  # a destructive call may or may not have been accepted

NON_RETRYABLE = frozenset({NOT_FOUND, CONFLICT, CONSISTENCY, UNAUTHORIZED, INVALID, UNKNOWN_OUTCOME})
