"""Typed activity errors, mapped onto Temporal's retry policy.

Every activity raises one of these (never a raw library exception), so a workflow can branch on
`ApplicationError.type` and the Web UI shows a stable, readable type. Messages must be user-safe:
no secret values, no raw provider diagnostics (those go to the operator log only).
"""

from __future__ import annotations

from temporalio.exceptions import ApplicationError

# Error type names (ApplicationError.type). Workflows compare against these strings.
NOT_FOUND = "NotFound"  # the object (or a dependency) does not exist; not retried blindly
CONFLICT = "Conflict"  # 409 from the provider, or a stale resourceVersion
CONSISTENCY = "Consistency"  # the cloud is in a state with no safe next action (duplicates, ERROR)
UNAUTHORIZED = "Unauthorized"  # 401 from the provider
INVALID = "Invalid"  # the request can never succeed as written (bad input); fix the resource
TRANSIENT = "Transient"  # timeouts, connection errors, 5xx: retried by Temporal with backoff
UNKNOWN_OUTCOME = "UnknownOutcome"  # a destructive call may or may not have been accepted

NON_RETRYABLE = {NOT_FOUND, CONFLICT, CONSISTENCY, UNAUTHORIZED, INVALID, UNKNOWN_OUTCOME}


def error(kind: str, message: str, *details: object) -> ApplicationError:
    """Build an ApplicationError of one of the types above; only TRANSIENT is retryable."""
    return ApplicationError(message, *details, type=kind, non_retryable=kind in NON_RETRYABLE)


def not_found(message: str) -> ApplicationError:
    return error(NOT_FOUND, message)


def conflict(message: str) -> ApplicationError:
    return error(CONFLICT, message)


def consistency(message: str) -> ApplicationError:
    return error(CONSISTENCY, message)


def invalid(message: str) -> ApplicationError:
    return error(INVALID, message)


def transient(message: str) -> ApplicationError:
    return error(TRANSIENT, message)
