"""HTTP helpers shared by the handlers: parsed resource URLs, JSON responses, per-version output."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aiohttp import web

from .encoding import dumps
from .errors import ApiError, bad_request
from .registry import Registry
from .resources import ResourceType

JSON = "application/json"


@dataclass
class Target:
    """A parsed resource URL."""

    rtype: ResourceType
    version: str
    namespace: str | None  # None: all namespaces (or a cluster-scoped type)
    name: str = ""
    subresource: str = ""


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return raw_json_response(dumps(body), status, headers)


def raw_json_response(body: bytes, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(body=body, status=status, content_type=JSON, headers=headers)


def error_response(err: ApiError) -> web.Response:
    return json_response(err.status(), err.code)


def out(obj: dict[str, Any], rtype: ResourceType, version: str) -> dict[str, Any]:
    """Serve the object in the requested version (no conversion webhook: only apiVersion changes), or
    through the type's second view (events.k8s.io/v1 Events)."""
    api_version = rtype.api_version(version)
    if rtype.from_storage is not None:
        return rtype.from_storage(obj, api_version)
    if obj.get("apiVersion") == api_version:
        return obj
    out = dict(obj)
    out["apiVersion"] = api_version
    return out


def partial(obj: dict[str, Any]) -> dict[str, Any]:
    """meta.k8s.io/v1 PartialObjectMetadata: the object's metadata only (no spec, status or data)."""
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj["metadata"]}


def parse_target(store: Registry, path: str) -> Target | None:
    parts = [p for p in path.split("/") if p]
    if parts[:2] == ["api", "v1"]:
        group, version, rest = "", "v1", parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    namespace: str | None = None
    if len(rest) >= 3 and rest[0] == "namespaces" and rest[2] not in ("status", "finalize"):
        namespace, rest = rest[1], rest[2:]
    if not rest or len(rest) > 3:
        return None
    rtype = store.find(group, version, rest[0])
    if rtype is None:
        return None
    if rtype.namespaced != (namespace is not None) and len(rest) > 1:
        return None  # a namespaced object must be addressed inside its namespace (and vice versa)
    if not rtype.namespaced and namespace is not None:
        return None
    return Target(
        rtype, version, namespace, rest[1] if len(rest) > 1 else "", rest[2] if len(rest) > 2 else ""
    )


def include_object(request: web.Request) -> str:
    for part in request.headers.get("Accept", "").split(";"):
        if part.strip().startswith("includeObject="):
            return part.strip().split("=", 1)[1].split(",")[0]
    value = request.query.get("includeObject", "PartialObjectMetadata") or "PartialObjectMetadata"
    if value not in ("None", "Object", "PartialObjectMetadata"):
        raise bad_request(f'unrecognized includeObject value: "{value}"')
    return value
