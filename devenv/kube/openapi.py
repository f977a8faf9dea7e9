"""OpenAPI v3 documents, enough for kubectl: per group-version paths whose PATCH operations carry
`x-kubernetes-group-version-kind` and a `fieldValidation` parameter. kubectl then relies on server-side
field validation (which the store implements), so `kubectl apply` validates without `--validate=false`.
CR PATCH operations do not offer strategic merge, so kubectl sends JSON merge patches for them.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from aiohttp import web

from .errors import ApiError
from .httpio import error_response, json_response
from .registry import Registry as Store
from .resources import ResourceType

_QUERY_PARAMS = ("dryRun", "fieldManager", "fieldValidation", "force", "pretty")


def _gvk(rtype: ResourceType, version: str) -> dict[str, str]:
    return {"group": rtype.group, "version": version, "kind": rtype.kind}


def _schema_id(rtype: ResourceType, version: str) -> str:
    reversed_group = ".".join(reversed(rtype.group.split("."))) if rtype.group else "io.k8s.api.core"
    return f"{reversed_group}.{version}.{rtype.kind}"


def _operation(
    rtype: ResourceType, version: str, action: str, ref: str, content_types: list[str]
) -> dict[str, Any]:
    op: dict[str, Any] = {
        "operationId": f"{action}{rtype.kind}",
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": _gvk(rtype, version),
        "parameters": [
            {"name": p, "in": "query", "schema": {"type": "string", "uniqueItems": True}}
            for p in _QUERY_PARAMS
        ],
        "responses": {
            "200": {"description": "OK", "content": {"application/json": {"schema": {"$ref": ref}}}}
        },
    }
    if content_types:
        op["requestBody"] = {
            "content": {ct: {"schema": {"$ref": ref}} for ct in content_types},
            "required": True,
        }
    return op


def _schema(rtype: ResourceType, version: str) -> dict[str, Any]:
    vinfo = rtype.version(version)
    base = (
        dict(vinfo.schema)
        if vinfo is not None and vinfo.schema
        else {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    )
    base["x-kubernetes-group-version-kind"] = [_gvk(rtype, version)]
    return base


def group_version_doc(store: Store, group: str, version: str) -> dict[str, Any] | None:
    paths: dict[str, Any] = {}
    schemas: dict[str, Any] = {}
    prefix = f"/apis/{group}/{version}" if group else f"/api/{version}"
    for rtype in store.served_types():
        if rtype.group != group or rtype.version(version) is None:
            continue
        ref = f"#/components/schemas/{_schema_id(rtype, version)}"
        schemas[_schema_id(rtype, version)] = _schema(rtype, version)
        collection = (
            f"{prefix}/namespaces/{{namespace}}/{rtype.plural}"
            if rtype.namespaced
            else f"{prefix}/{rtype.plural}"
        )
        patch_types = [
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/apply-patch+yaml",
        ]
        paths[collection] = {
            "get": _operation(rtype, version, "list", ref, []),
            "post": _operation(rtype, version, "post", ref, ["application/json", "application/yaml"]),
        }
        item = {
            "get": _operation(rtype, version, "get", ref, []),
            "put": _operation(rtype, version, "put", ref, ["application/json", "application/yaml"]),
            "patch": _operation(rtype, version, "patch", ref, patch_types),
            "delete": _operation(rtype, version, "delete", ref, []),
        }
        paths[f"{collection}/{{name}}"] = item
    if not paths:
        return None
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes (osprov emulator)", "version": "v1.36.0"},
        "paths": paths,
        "components": {"schemas": schemas},
    }


def _gv_keys(store: Store) -> list[tuple[str, str]]:
    keys: list[tuple[str, str]] = []
    for rtype in store.served_types():
        for v in rtype.versions:
            if v.served and (rtype.group, v.name) not in keys:
                keys.append((rtype.group, v.name))
    return keys


class OpenAPI:
    def __init__(self, store: Store) -> None:
        self.store = store

    def handle(self, request: web.Request) -> web.Response:
        parts = [p for p in request.path.split("/") if p]
        if parts == ["openapi", "v3"]:
            index: dict[str, Any] = {}
            for group, version in _gv_keys(self.store):
                doc = group_version_doc(self.store, group, version)
                key = f"apis/{group}/{version}" if group else f"api/{version}"
                digest = hashlib.sha512(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:32].upper()
                index[key] = {"serverRelativeURL": f"/openapi/v3/{key}?hash={digest}"}
            return json_response({"paths": index})
        if parts[:2] == ["openapi", "v3"] and len(parts) in (4, 5):
            rest = parts[2:]
            group, version = (
                ("", rest[1]) if rest[0] == "api" else (rest[1], rest[2] if len(rest) > 2 else "")
            )
            doc = group_version_doc(self.store, group, version)
            if doc is not None:
                return json_response(doc)
        return error_response(ApiError(404, "NotFound", "the server could not find the requested resource"))
