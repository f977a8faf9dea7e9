"""Reads over HTTP: get and list, in the representation the client negotiated (the object, a Table,
PartialObjectMetadata / PartialObjectMetadataList), with list paging over consistent snapshots."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from .encoding import encode_object, list_body
from .errors import ApiError, Cause, bad_request, invalid, not_supported
from .httpio import (
    Target,
    include_object,
    json_response,
    out,
    partial,
    raw_json_response,
)
from .paging import EXPIRED, Token, decode_token, encode_token, expired_continue, snapshot
from .requests import Query, Transform, negotiate
from .selectors import Selector, selector_from_query
from .store import Store
from .table import to_table


def selector_for(request: web.Request, t: Target) -> Selector:
    return selector_from_query(
        request.query.get("labelSelector", ""), request.query.get("fieldSelector", ""), t.rtype.fields
    )


def _not_acceptable(message: str) -> ApiError:
    return ApiError(406, "NotAcceptable", message)


def _partial(obj: dict[str, Any], transform: Transform) -> dict[str, Any]:
    shown = partial(obj)
    shown["apiVersion"] = transform.api_version
    return shown


def object_response(request: web.Request, t: Target, obj: dict[str, Any], status: int = 200) -> web.Response:
    transform = negotiate(request.headers.get("Accept", ""))
    shown = out(obj, t.rtype, t.version)
    if transform.kind == "Table":
        rv = obj["metadata"].get("resourceVersion", "")
        return json_response(to_table(t.rtype, t.version, [shown], rv, include_object(request)), status)
    if transform.kind == "PartialObjectMetadata":
        return json_response(_partial(shown, transform), status)
    if transform.kind == "PartialObjectMetadataList":
        raise _not_acceptable(
            "you requested PartialObjectMetadataList, but the requested object is not a list (*unstructured.Unstructured)"
        )
    return raw_json_response(encode_object(shown), status)


def _list_at(
    store: Store, t: Target, query: Query
) -> tuple[dict[tuple[str, str], dict[str, Any]], int, Token | None]:
    """(objects, resourceVersion of the list, continue token) per resourceVersion/resourceVersionMatch."""
    state = store.state(t.rtype)
    rv_param, match = query.get("resourceVersion"), query.get("resourceVersionMatch")
    if match and match not in ("Exact", "NotOlderThan"):
        cause = not_supported("resourceVersionMatch", match, ("Exact", "NotOlderThan"))
        raise invalid("ListOptions", "meta.k8s.io", "", [cause])
    if match and not rv_param:
        cause = Cause(
            "FieldValueForbidden",
            "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
            "resourceVersionMatch",
        )
        raise invalid("ListOptions", "meta.k8s.io", "", [cause])
    if query.get("continue"):
        if rv_param not in ("", "0"):
            raise bad_request("specifying resource version is not allowed when using continue")
        token = decode_token(query.get("continue"))
        if token.rv < 0:
            return dict(state.objects), store.rv, token
        objects = snapshot(state, token.rv)
        if objects is None:
            raise expired_continue(token.after)
        return objects, token.rv, token
    requested = query.integer("resourceVersion") if rv_param not in ("", "0") else None
    if requested is not None and requested > store.rv:
        raise ApiError(
            504,
            "Timeout",
            f"Too large resource version: {requested}, current: {store.rv}",
            {
                "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
                "retryAfterSeconds": 1,
            },
        )
    if requested is not None and match == "Exact":
        objects = snapshot(state, requested)
        if objects is None:
            raise ApiError(410, "Expired", EXPIRED)
        return objects, requested, None
    return dict(state.objects), store.rv, None


def list_response(request: web.Request, store: Store, t: Target) -> web.Response:
    query = Query(request.query)
    transform = negotiate(request.headers.get("Accept", ""))
    if transform.kind == "PartialObjectMetadata":
        raise _not_acceptable(
            "you requested PartialObjectMetadata, but the requested object is a list (*unstructured.UnstructuredList)"
        )
    selector = selector_for(request, t)
    limit = query.integer("limit") or 0
    objects, list_rv, token = _list_at(store, t, query)
    keys = sorted(k for k in objects if t.namespace is None or k[0] == t.namespace)
    if token is not None:
        keys = [k for k in keys if k > token.after]
    items = [objects[k] for k in keys if selector.matches(objects[k])]
    meta: dict[str, Any] = {"resourceVersion": str(list_rv)}
    if limit > 0 and len(items) > limit:
        last = items[limit - 1]["metadata"]
        meta["continue"] = encode_token(list_rv, (last.get("namespace", ""), last["name"]))
        if selector.empty:
            meta["remainingItemCount"] = len(items) - limit
        items = items[:limit]
    shown = [out(o, t.rtype, t.version) for o in items]
    if transform.kind == "Table":
        table = to_table(t.rtype, t.version, shown, str(list_rv), include_object(request))
        table["metadata"] = meta  # keeps continue/remainingItemCount: kubectl get pages with limit=500
        return json_response(table)
    if transform.kind == "PartialObjectMetadataList":
        return json_response(
            {
                "kind": "PartialObjectMetadataList",
                "apiVersion": transform.api_version,
                "metadata": meta,
                "items": [_partial(o, transform) for o in shown],
            }
        )
    return raw_json_response(list_body(t.rtype.list_kind, t.rtype.api_version(t.version), meta, shown))
