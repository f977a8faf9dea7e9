"""Resource requests: route a kube API path onto the store, with the audit log and injected faults.

Reads are in listing.py, PATCH in patching.py, watches in streaming.py, request parsing in requests.py.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from .admin import NOT_FOUND
from .errors import ApiError, method_not_allowed
from .faults import Faults, resource_names
from .httpio import Target, json_response, out, parse_target
from .listing import list_response, object_response, selector_for
from .patching import patch
from .requests import Query, delete_options, negotiate, read_body, write_options
from .store import Store
from .streaming import serve_watch

WRITE_VERBS = ("create", "update", "patch", "delete", "deletecollection")


@dataclass
class Emulator:
    store: Store
    faults: Faults = field(default_factory=lambda: Faults([]))
    bookmark_interval_s: float = 5.0
    on_change: Any = None  # called after every successful write (persistence)
    audit: Any = None  # text file: one JSON line per resource request (who called what, for RBAC tests)


def request_verb(request: web.Request, target: Target, watch: bool) -> str:
    """The RBAC verb of a request."""
    if watch:
        return "watch"
    if request.method == "GET":
        return "get" if target.name else "list"
    if request.method == "DELETE":
        return "delete" if target.name else "deletecollection"
    return {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(request.method, request.method.lower())


class Handlers:
    def __init__(self, emulator: Emulator) -> None:
        self.emu = emulator
        self.store = emulator.store

    async def resource(self, request: web.Request) -> web.StreamResponse:
        target = parse_target(self.store, request.path)
        if target is None:
            raise NOT_FOUND
        watch = Query(request.query).boolean("watch")
        verb = request_verb(request, target, watch)
        self._audit(request, target, verb)
        injection = self.emu.faults.take(verb, resource_names(target.rtype, target.subresource))
        if injection is not None:
            if injection.delay_s:
                await asyncio.sleep(injection.delay_s)  # injected latency, not synchronisation
            err = injection.error()
            if err is not None:
                raise err
        self._check_subresource(target)
        if watch:
            return await serve_watch(request, self.store, target, self.emu.bookmark_interval_s)
        response = await self._dispatch(request, target, verb)
        if verb in WRITE_VERBS and self.emu.on_change is not None:
            self.emu.on_change()
        return response

    def _audit(self, request: web.Request, t: Target, verb: str) -> None:
        if self.emu.audit is None:
            return
        # Who called what (the RBAC test replays it against deploy/rbac.yaml); `as` records metadata-only
        # reads (PartialObjectMetadata), which never carry Secret data.
        try:
            shown_as = negotiate(request.headers.get("Accept", "")).kind
        except ApiError:
            shown_as = ""
        line = {
            "verb": verb,
            "group": t.rtype.group,
            "resource": t.rtype.plural,
            "subresource": t.subresource,
            "namespace": t.namespace or "",
            "name": t.name,
            "as": shown_as,
            "user_agent": request.headers.get("User-Agent", ""),
        }
        self.emu.audit.write(json.dumps(line) + "\n")
        self.emu.audit.flush()

    @staticmethod
    def _check_subresource(t: Target) -> None:
        if not t.subresource:
            return
        vinfo = t.rtype.version(t.version)
        if t.subresource != "status" or vinfo is None or not vinfo.status_subresource:
            raise NOT_FOUND

    async def _dispatch(self, request: web.Request, t: Target, verb: str) -> web.Response:
        store, rtype, ns = self.store, t.rtype, t.namespace or ""
        if verb not in rtype.verbs:
            raise method_not_allowed()
        if verb == "get":
            return object_response(request, t, store.get(rtype, ns, t.name))
        if verb == "list":
            return list_response(request, store, t)
        if verb == "create":
            if t.name:
                raise method_not_allowed()
            opts = write_options(request, "CreateOptions")
            obj = store.create(rtype, ns, await read_body(request), opts, t.version)
            return object_response(request, t, obj, 201)
        if verb == "update":
            opts = write_options(request, "UpdateOptions")
            obj = store.update(rtype, ns, t.name, await read_body(request), t.subresource, opts, t.version)
            return object_response(request, t, obj)
        if verb == "patch":
            return await patch(request, store, t)
        options = delete_options(request, await read_body(request))
        if verb == "deletecollection":
            return self._delete_collection(request, t, options)
        obj, gone = store.delete(rtype, ns, t.name, options)
        if gone and rtype.builtin:
            details = {
                "name": t.name,
                "group": rtype.group,
                "kind": rtype.plural,
                "uid": obj["metadata"]["uid"],
            }
            return json_response(
                {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "metadata": {},
                    "status": "Success",
                    "details": details,
                }
            )
        return object_response(request, t, obj)  # 200 whether gone or held by finalizers

    def _delete_collection(self, request: web.Request, t: Target, options: Any) -> web.Response:
        selector = selector_for(request, t)
        deleted = []
        for obj in self.store.list_objects(t.rtype, t.namespace):
            meta = obj["metadata"]
            if (
                selector.matches(obj)
                and (meta.get("namespace", ""), meta["name"]) in self.store.state(t.rtype).objects
            ):
                result, _ = self.store.delete(t.rtype, meta.get("namespace", ""), meta["name"], options)
                deleted.append(out(result, t.rtype, t.version))
        return json_response(
            {
                "kind": t.rtype.list_kind,
                "apiVersion": t.rtype.api_version(t.version),
                "metadata": {"resourceVersion": str(self.store.rv)},
                "items": deleted,
            }
        )
