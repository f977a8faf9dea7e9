"""Watch over HTTP: one JSON event per line, flushed as soon as it is committed, in resourceVersion order.

Event objects are rendered as negotiated, like kube-apiserver's watch encoder: the object, a one-row
Table (`kubectl get -w`), or PartialObjectMetadata (metadata-only watches, `as=PartialObjectMetadata`;
BOOKMARKs too). A watch asking for `as=PartialObjectMetadataList` gets what the apiserver's failed
transform gives: custom resources in full, and for built-in kinds a stream that ends without events.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from aiohttp import web

from .errors import ApiError, bad_request
from .httpio import JSON, Target, include_object, out
from .requests import Query, Transform, negotiate
from .selectors import selector_from_query
from .store import Store
from .table import to_table
from .watch import Watcher, encode_event

DEFAULT_WATCH_TIMEOUT_S = 1800
MAX_CHUNK = 1 << 16
Render = Callable[[str, dict[str, Any]], dict[str, Any]]


def bookmark(store: Store, t: Target) -> dict[str, Any]:
    return {
        "kind": t.rtype.kind,
        "apiVersion": t.rtype.api_version(t.version),
        "metadata": {"resourceVersion": str(store.rv)},
    }


def _table_renderer(t: Target, include: str) -> Render:
    """`kubectl get -w`: each event carries a one-row Table; only the first one has the column definitions."""
    first = True

    def render(event_type: str, obj: dict[str, Any]) -> dict[str, Any]:
        nonlocal first
        if event_type == "BOOKMARK":
            return obj
        table = to_table(t.rtype, t.version, [obj], obj["metadata"]["resourceVersion"], include)
        if not first:
            table["columnDefinitions"] = []
        first = False
        return table

    return render


def _partial_renderer(transform: Transform) -> Render:
    def render(event_type: str, obj: dict[str, Any]) -> dict[str, Any]:
        return {
            "kind": "PartialObjectMetadata",
            "apiVersion": transform.api_version,
            "metadata": obj["metadata"],
        }

    return render


def _renderer(request: web.Request, t: Target) -> Render | None:
    transform = negotiate(request.headers.get("Accept", ""))
    if transform.kind == "Table":
        return _table_renderer(t, include_object(request))
    if transform.kind == "PartialObjectMetadata":
        return _partial_renderer(transform)
    return None


async def serve_watch(
    request: web.Request, store: Store, t: Target, bookmark_interval_s: float
) -> web.StreamResponse:
    query = Query(request.query)
    field_selector = f"metadata.name={t.name}" if t.name else query.get("fieldSelector")
    selector = selector_from_query(query.get("labelSelector"), field_selector, t.rtype.fields)
    rv_param = query.get("resourceVersion")
    # sendInitialEvents (watch-list, used by client-go reflectors and so by `kubectl wait`): the current
    # state as ADDED events, then a bookmark annotated k8s.io/initial-events-end, then live events.
    initial_events = query.boolean("sendInitialEvents")
    try:
        since = None if rv_param in ("", "0") or initial_events else int(rv_param)
    except ValueError:
        raise bad_request(f"invalid resourceVersion {rv_param!r}") from None
    timeout = query.integer("timeoutSeconds") or DEFAULT_WATCH_TIMEOUT_S
    bookmarks = query.boolean("allowWatchBookmarks")
    render = _renderer(request, t)
    failed_transform = negotiate(request.headers.get("Accept", "")).kind == "PartialObjectMetadataList"
    state = store.state(t.rtype)
    watcher = Watcher(t.namespace, selector, t.version)
    response = web.StreamResponse(status=200, headers={"Content-Type": JSON, "Cache-Control": "no-cache"})
    response.enable_chunked_encoding()
    try:
        state.start_watch(watcher, since)
        if initial_events:
            mark = bookmark(store, t)
            mark["metadata"]["annotations"] = {"k8s.io/initial-events-end": "true"}
            watcher.queue.put_nowait(("BOOKMARK", mark))
    except ApiError as err:
        # Like the apiserver: 200, then a single ERROR event carrying the Status (410 Expired), then EOF.
        await response.prepare(request)
        await response.write(encode_event("ERROR", err.status()))
        await response.write_eof()
        return response
    try:
        await response.prepare(request)
        if failed_transform and t.rtype.builtin:
            # The apiserver cannot encode a typed object as a list: the stream ends without events.
            await response.write_eof()
            return response
        await _stream(
            response, store, watcher, t, timeout, bookmark_interval_s if bookmarks else None, render
        )
    except ConnectionResetError:
        pass  # the client went away; a cancelled handler propagates CancelledError after cleanup
    finally:
        state.stop_watch(watcher)
    return response


async def _stream(
    response: web.StreamResponse,
    store: Store,
    watcher: Watcher,
    t: Target,
    timeout: float,
    bookmark_every: float | None,
    render: Render | None = None,
) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        remaining = deadline - loop.time()
        if remaining <= 0:
            break
        try:
            item = await asyncio.wait_for(watcher.queue.get(), min(remaining, bookmark_every or remaining))
        except TimeoutError:
            if bookmark_every is not None and watcher.queue.empty():
                # Everything up to the current RV has been delivered: safe to advertise it.
                mark = bookmark(store, t)
                await response.write(encode_event("BOOKMARK", render("BOOKMARK", mark) if render else mark))
            continue
        # Batch what is already queued into one write; None means the watch was cut.
        chunk = b""
        while item is not None:
            obj = item[1] if item[0] == "BOOKMARK" else out(item[1], t.rtype, t.version)
            chunk += encode_event(item[0], render(item[0], obj) if render is not None else obj)
            if watcher.queue.empty() or len(chunk) > MAX_CHUNK:
                break
            item = watcher.queue.get_nowait()
        if chunk:
            await response.write(chunk)
        if item is None:
            break
    await response.write_eof()
