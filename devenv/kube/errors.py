"""metav1.Status errors shaped exactly like a real kube-apiserver's, so clients branch on reason/code."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Cause:
    """One metav1.StatusCause (what `kubectl` prints after "is invalid:")."""

    reason: str  # FieldValueInvalid, FieldValueRequired, FieldValueNotSupported, FieldValueForbidden, …
    message: str
    field: str

    def as_dict(self) -> dict[str, str]:
        return {"reason": self.reason, "message": self.message, "field": self.field}


@dataclass
class ApiError(Exception):
    code: int
    reason: str
    message: str
    details: dict[str, Any] = field(default_factory=dict)
    list_continue: str = ""  # a 410 for an expired continue token carries a token to go on with

    def __str__(self) -> str:
        return f"{self.code} {self.reason}: {self.message}"

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {"continue": self.list_continue} if self.list_continue else {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details:
            body["details"] = self.details
        return body


def _details(group: str, kind_plural: str, name: str) -> dict[str, Any]:
    details: dict[str, Any] = {"kind": kind_plural}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    return details


def _qualified(group: str, plural: str) -> str:
    return f"{plural}.{group}" if group else plural


def not_found(group: str, plural: str, name: str) -> ApiError:
    return ApiError(
        404, "NotFound", f'{_qualified(group, plural)} "{name}" not found', _details(group, plural, name)
    )


def already_exists(group: str, plural: str, name: str) -> ApiError:
    return ApiError(
        409,
        "AlreadyExists",
        f'{_qualified(group, plural)} "{name}" already exists',
        _details(group, plural, name),
    )


def conflict(group: str, plural: str, name: str, why: str) -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {_qualified(group, plural)} "{name}": {why}',
        _details(group, plural, name),
    )


def not_supported(field: str, value: Any, supported: tuple[str, ...]) -> Cause:
    """apimachinery's field.NotSupported."""
    allowed = ", ".join(f'"{s}"' for s in supported)
    return Cause(
        "FieldValueNotSupported", f'Unsupported value: "{value}": supported values: {allowed}', field
    )


STALE = "the object has been modified; please apply your changes to the latest version and try again"


def invalid(kind: str, group: str, name: str, causes: list[Cause]) -> ApiError:
    """422 Invalid, message formatted like apimachinery's NewInvalid."""
    parts = [f"{c.field}: {c.message}" if c.field else c.message for c in causes]
    joined = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    qualified_kind = f"{kind}.{group}" if group else kind
    details = {"name": name, "kind": kind, "causes": [c.as_dict() for c in causes]}
    if group:
        details["group"] = group
    return ApiError(422, "Invalid", f'{qualified_kind} "{name}" is invalid: {joined}', details)


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def method_not_allowed(
    message: str = "the server does not allow this method on the requested resource",
) -> ApiError:
    return ApiError(405, "MethodNotAllowed", message)


def unsupported_media_type(content_type: str) -> ApiError:
    return ApiError(
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
    )


def gone(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


def forbidden(group: str, plural: str, name: str, why: str) -> ApiError:
    return ApiError(
        403,
        "Forbidden",
        f'{_qualified(group, plural)} "{name}" is forbidden: {why}',
        _details(group, plural, name),
    )


def internal(message: str) -> ApiError:
    return ApiError(500, "InternalError", message)


def reason_for_code(code: int) -> str:
    return {
        400: "BadRequest",
        401: "Unauthorized",
        403: "Forbidden",
        404: "NotFound",
        405: "MethodNotAllowed",
        409: "Conflict",
        410: "Expired",
        415: "UnsupportedMediaType",
        422: "Invalid",
        429: "TooManyRequests",
        500: "InternalError",
        503: "ServiceUnavailable",
        504: "Timeout",
    }.get(code, "Unknown")
