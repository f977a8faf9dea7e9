"""PATCH: JSON merge patch, JSON patch, strategic merge patch (built-ins) and server-side apply."""

from __future__ import annotations

import copy
from typing import Any

from aiohttp import web

from . import fieldmanager
from .errors import STALE, ApiError, Cause, bad_request, conflict, invalid, not_found, unsupported_media_type
from .fieldpaths import FieldPathError
from .httpio import Target, json_response, out
from .patch import json_patch, merge_patch
from .requests import Query, read_body, write_options
from .smp import strategic_merge
from .store import Store

MAX_JSON_PATCH_OPERATIONS = 10000
APPLY = "application/apply-patch+yaml"


def _patch_options_invalid(field: str, message: str, reason: str = "FieldValueRequired") -> ApiError:
    return invalid("PatchOptions", "meta.k8s.io", "", [Cause(reason, message, field)])


async def patch(request: web.Request, store: Store, t: Target) -> web.Response:
    content_type = request.content_type or ""
    body = await read_body(request)
    if content_type == APPLY:
        return apply(request, store, t, body)
    if request.query.get("force"):
        raise _patch_options_invalid(
            "force", "Forbidden: may not be specified for non-apply patch", "FieldValueForbidden"
        )
    ns = t.namespace or ""
    current = out(store.get(t.rtype, ns, t.name), t.rtype, t.version)
    if content_type == "application/merge-patch+json":
        if not isinstance(body, dict):
            raise bad_request("a merge patch must be a JSON object")
        patched = merge_patch(copy.deepcopy(current), body)
    elif content_type == "application/json-patch+json":
        if isinstance(body, list) and len(body) > MAX_JSON_PATCH_OPERATIONS:
            raise ApiError(
                413,
                "RequestEntityTooLarge",
                f"The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {len(body)}",
            )
        patched = json_patch(current, body)
    elif content_type == "application/strategic-merge-patch+json" and t.rtype.builtin:
        vinfo = t.rtype.version(t.version)
        patched = strategic_merge(current, body, (vinfo.schema if vinfo is not None else None) or {})
    else:
        raise unsupported_media_type(content_type)
    if not isinstance(patched, dict):
        raise bad_request("the patch produced a value that is not an object")
    meta = patched.setdefault("metadata", {})
    if not isinstance(meta, dict):
        raise bad_request("metadata must be an object")
    if not meta.get("resourceVersion"):
        meta["resourceVersion"] = current["metadata"]["resourceVersion"]
    opts = write_options(request, "PatchOptions")
    obj = store.update(t.rtype, ns, t.name, patched, t.subresource, opts, t.version)
    return json_response(out(obj, t.rtype, t.version))


def apply(request: web.Request, store: Store, t: Target, body: Any) -> web.Response:
    """Server-side apply: merge the applied configuration with field ownership (fieldmanager.apply)."""
    if not request.query.get("fieldManager"):
        raise _patch_options_invalid("fieldManager", "Required value: is required for apply patch")
    opts = write_options(request, "PatchOptions")
    opts.applied = True
    force = Query(request.query).boolean("force")
    if not isinstance(body, dict):
        raise bad_request("error decoding YAML: the applied configuration must be an object")
    config = copy.deepcopy(body)
    meta = config.setdefault("metadata", {})
    if not isinstance(meta, dict):
        raise bad_request("metadata must be an object")
    if meta.get("name", t.name) != t.name:
        raise bad_request(
            f"the name of the object ({meta.get('name')}) does not match the name on the URL ({t.name})"
        )
    meta["name"] = t.name
    given_rv = meta.pop("resourceVersion", None)
    meta.pop("managedFields", None)
    ns = t.namespace or ""
    live = store.state(t.rtype).objects.get((ns, t.name))
    if live is None and t.subresource:
        raise not_found(t.rtype.group, t.rtype.plural, t.name)
    if live is not None and given_rv and str(given_rv) != live["metadata"]["resourceVersion"]:
        raise conflict(t.rtype.group, t.rtype.plural, t.name, STALE)
    storage = store.state(t.rtype).rtype
    if t.rtype.to_storage is not None:
        config = t.rtype.to_storage(config)
    config["apiVersion"], config["kind"] = storage.api_version(storage.storage_version), storage.kind
    change = store.field_change(t.rtype, t.version, opts, t.subresource)
    try:
        merged, managed = fieldmanager.apply(live or {}, config, change, force)
    except FieldPathError as exc:
        raise bad_request(f"failed to create typed patch object: {exc}") from None
    merged["metadata"]["managedFields"] = managed
    shown = out(merged, t.rtype, t.version)
    if live is None:
        obj = store.create(t.rtype, ns, shown, opts, t.version)
        return json_response(out(obj, t.rtype, t.version), 201)
    shown["metadata"]["resourceVersion"] = live["metadata"]["resourceVersion"]
    obj = store.update(t.rtype, ns, t.name, shown, t.subresource, opts, t.version)
    return json_response(out(obj, t.rtype, t.version))
