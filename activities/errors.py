"""Typed activity errors, mapped onto Temporal's retry policy.

Every activity raises one of these (never a raw library exception), so a workflow can branch on
`ApplicationError.type` and the Web UI shows a stable, readable type. Messages must be user-safe:
no secret values, no raw provider diagnostics (those go to the operator log only).
"""

from __future__ import annotations

from temporalio.exceptions import ApplicationError

from osprov.api.errors import CONFLICT, CONSISTENCY, INVALID, NON_RETRYABLE, NOT_FOUND, TRANSIENT


def error(kind: str, message: str, *details: object) -> ApplicationError:
    """Build an ApplicationError of one of the types of osprov.api.errors; only TRANSIENT is retryable."""
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
