"""HTTP layer: route kube API paths onto the store (watches: streaming.py), discovery and admin endpoints."""

from __future__ import annotations

import asyncio
import base64
import copy
import json
from dataclasses import dataclass, field
from typing import Any

import yaml
from aiohttp import web

from . import discovery, protobuf
from .errors import ApiError, bad_request, method_not_allowed, unsupported_media_type
from .faults import Faults, resource_names
from .httpio import Target, error_response, include_object, json_response, out, parse_target
from .options import WriteOptions
from .patch import json_patch, merge_patch
from .selectors import selector_from_query
from .store import Store
from .streaming import serve_watch
from .table import to_table


@dataclass
class Emulator:
    store: Store
    faults: Faults = field(default_factory=lambda: Faults([]))
    bookmark_interval_s: float = 5.0
    on_change: Any = None  # called after every successful write (persistence)
    audit: Any = None  # text file: one JSON line per resource request (verb, resource, user agent)


async def _body(request: web.Request) -> Any:
    raw = await request.read()
    if not raw:
        return None
    if request.content_type == protobuf.PROTOBUF:
        return protobuf.decode(raw)
    try:
        if "yaml" in (request.content_type or ""):
            return yaml.safe_load(raw)
        return json.loads(raw)
    except (ValueError, yaml.YAMLError) as exc:
        raise bad_request(f"the request body could not be decoded: {exc}") from None


def _opts(request: web.Request) -> WriteOptions:
    return WriteOptions(
        dry_run=bool(request.query.get("dryRun")),
        strict_fields=request.query.get("fieldValidation", "") == "Strict",
    )


class Handlers:
    def __init__(self, emulator: Emulator) -> None:
        self.emu = emulator
        self.store = emulator.store

    # ------------------------------------------------------------------------------------ discovery
    async def discovery(self, request: web.Request) -> web.Response:
        path = request.path.rstrip("/")
        if path == "/version":
            return json_response(discovery.SERVER_VERSION)
        if path == "/api":
            return json_response(discovery.api_versions(request.host))
        if path == "/apis":
            return json_response(discovery.api_group_list(self.store))
        parts = [p for p in path.split("/") if p]
        doc: dict[str, Any] | None = None
        if parts == ["api", "v1"]:
            doc = discovery.resource_list(self.store, "", "v1")
        elif len(parts) == 2 and parts[0] == "apis":
            doc = discovery.api_group(self.store, parts[1])
        elif len(parts) == 3 and parts[0] == "apis":
            doc = discovery.resource_list(self.store, parts[1], parts[2])
        if doc is None:
            return error_response(
                ApiError(404, "NotFound", "the server could not find the requested resource")
            )
        return json_response(doc)

    # ------------------------------------------------------------------------------------ resources
    async def resource(self, request: web.Request) -> web.StreamResponse:
        target = parse_target(self.store, request.path)
        if target is None:
            return error_response(
                ApiError(404, "NotFound", "the server could not find the requested resource")
            )
        watch = request.query.get("watch", "").lower() in ("1", "true")
        verb = self._verb(request, target, watch)
        if self.emu.audit is not None:
            # Who called what, for the RBAC test (deploy/ must allow every call osprov makes).
            self.emu.audit.write(
                json.dumps(
                    {
                        "verb": verb,
                        "group": target.rtype.group,
                        "resource": target.rtype.plural,
                        "subresource": target.subresource,
                        "user_agent": request.headers.get("User-Agent", ""),
                    }
                )
                + "\n"
            )
            self.emu.audit.flush()
        injection = self.emu.faults.take(verb, resource_names(target.rtype, target.subresource))
        if injection is not None:
            if injection.delay_s:
                await asyncio.sleep(injection.delay_s)  # injected latency, not synchronisation
            err = injection.error()
            if err is not None:
                return error_response(err)
        try:
            if watch:
                return await serve_watch(request, self.store, target, self.emu.bookmark_interval_s)
            response = await self._dispatch(request, target, verb)
        except ApiError as err:
            return error_response(err)
        if verb in ("create", "update", "patch", "delete") and self.emu.on_change is not None:
            self.emu.on_change()
        if self.store.warnings:
            # RFC 7234 warn-text is a quoted-string: escape the quotes inside it.
            texts = (w.replace("\\", "\\\\").replace('"', '\\"') for w in self.store.warnings)
            response.headers["Warning"] = ", ".join(f'299 - "{text}"' for text in texts)
            self.store.warnings = []
        return response

    @staticmethod
    def _verb(request: web.Request, target: Target, watch: bool) -> str:
        method = request.method
        if watch:
            return "watch"
        if method == "GET":
            return "get" if target.name else "list"
        return {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(
            method, method.lower()
        )

    async def _dispatch(self, request: web.Request, t: Target, verb: str) -> web.Response:
        store, rtype = self.store, t.rtype
        ns = t.namespace or ""
        if t.subresource and t.subresource != "status":
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if t.subresource == "status":
            vinfo = rtype.version(t.version)
            if vinfo is None or not vinfo.status_subresource:
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if verb == "get":
            obj = store.get(rtype, ns, t.name)
            return self._object_response(request, t, obj)
        if verb == "list":
            return self._list(request, t)
        if verb == "create":
            if t.name:
                raise method_not_allowed()
            obj = store.create(rtype, ns, await _body(request), _opts(request), t.version)
            return json_response(out(obj, rtype, t.version), 201)
        if verb == "update":
            obj = store.update(
                rtype, ns, t.name, await _body(request), t.subresource, _opts(request), t.version
            )
            return json_response(out(obj, rtype, t.version))
        if verb == "patch":
            return await self._patch(request, t)
        if verb == "delete":
            if not t.name:
                return self._delete_collection(request, t)
            options = await _body(request) or {}
            preconditions = options.get("preconditions") if isinstance(options, dict) else None
            obj, gone = store.delete(rtype, ns, t.name, preconditions, _opts(request))
            if gone and rtype.builtin:
                uid = obj["metadata"]["uid"]
                details = {"name": t.name, "group": rtype.group, "kind": rtype.plural, "uid": uid}
                return json_response(
                    {
                        "kind": "Status",
                        "apiVersion": "v1",
                        "metadata": {},
                        "status": "Success",
                        "details": details,
                    }
                )
            return json_response(out(obj, rtype, t.version))  # 200 whether gone or held by finalizers
        raise method_not_allowed()

    def _delete_collection(self, request: web.Request, t: Target) -> web.Response:
        selector = selector_from_query(
            request.query.get("labelSelector", ""), request.query.get("fieldSelector", "")
        )
        deleted = []
        for obj in self.store.list_objects(t.rtype, t.namespace):
            if selector.matches(obj):
                result, _ = self.store.delete(
                    t.rtype,
                    obj["metadata"].get("namespace", ""),
                    obj["metadata"]["name"],
                    None,
                    _opts(request),
                )
                deleted.append(out(result, t.rtype, t.version))
        return json_response(
            {
                "kind": t.rtype.list_kind,
                "apiVersion": t.rtype.api_version(t.version),
                "metadata": {"resourceVersion": str(self.store.rv)},
                "items": deleted,
            }
        )

    def _object_response(self, request: web.Request, t: Target, obj: dict[str, Any]) -> web.Response:
        accept = request.headers.get("Accept", "")
        if "as=Table" in accept:
            return json_response(
                to_table(
                    t.rtype, t.version, [obj], obj["metadata"]["resourceVersion"], include_object(request)
                )
            )
        return json_response(out(obj, t.rtype, t.version))

    def _list(self, request: web.Request, t: Target) -> web.Response:
        query = request.query
        selector = selector_from_query(query.get("labelSelector", ""), query.get("fieldSelector", ""))
        objects = [o for o in self.store.list_objects(t.rtype, t.namespace) if selector.matches(o)]
        list_rv = str(self.store.rv)
        start_after: list[str] | None = None
        if query.get("continue"):
            try:
                token = json.loads(base64.urlsafe_b64decode(query["continue"].encode()))
                start_after, list_rv = token["after"], token["rv"]
            except (ValueError, KeyError):
                raise bad_request("continue key is not valid") from None
        if start_after is not None:
            after = (start_after[0], start_after[1])
            objects = [
                o for o in objects if (o["metadata"].get("namespace", ""), o["metadata"]["name"]) > after
            ]
        meta: dict[str, Any] = {"resourceVersion": list_rv}
        limit = int(query.get("limit", "0") or 0)
        if limit > 0 and len(objects) > limit:
            last = objects[limit - 1]["metadata"]
            token = {"after": [last.get("namespace", ""), last["name"]], "rv": list_rv}
            meta["continue"] = base64.urlsafe_b64encode(json.dumps(token).encode()).decode()
            meta["remainingItemCount"] = len(objects) - limit
            objects = objects[:limit]
        if "as=Table" in request.headers.get("Accept", ""):
            table = to_table(t.rtype, t.version, objects, list_rv, include_object(request))
            table["metadata"] = meta  # keeps continue/remainingItemCount: kubectl get pages with limit=500
            return json_response(table)
        return json_response(
            {
                "kind": t.rtype.list_kind,
                "apiVersion": t.rtype.api_version(t.version),
                "metadata": meta,
                "items": [out(o, t.rtype, t.version) for o in objects],
            }
        )

    async def _patch(self, request: web.Request, t: Target) -> web.Response:
        content_type = request.content_type or ""
        ns = t.namespace or ""
        body = await _body(request)
        if content_type == "application/apply-patch+yaml":
            return self._apply(request, t, body)
        try:
            current = self.store.get(t.rtype, ns, t.name)
        except ApiError:
            raise
        current = out(current, t.rtype, t.version)
        if content_type == "application/merge-patch+json":
            patched = merge_patch(copy.deepcopy(current), body)
        elif content_type == "application/json-patch+json":
            patched = json_patch(current, body)
        elif content_type == "application/strategic-merge-patch+json" and t.rtype.builtin:
            patched = merge_patch(copy.deepcopy(current), _drop_directives(body))
        else:
            raise unsupported_media_type(content_type)
        if not isinstance(patched, dict):
            raise bad_request("the patch produced a value that is not an object")
        meta = patched.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise bad_request("metadata must be an object")
        if not meta.get("resourceVersion"):
            meta["resourceVersion"] = current["metadata"]["resourceVersion"]
        obj = self.store.update(t.rtype, ns, t.name, patched, t.subresource, _opts(request), t.version)
        return json_response(out(obj, t.rtype, t.version))

    def _apply(self, request: web.Request, t: Target, body: Any) -> web.Response:
        """Server-side apply, approximated: create if absent, else merge the applied config in (no field managers)."""
        ns = t.namespace or ""
        if not isinstance(body, dict):
            raise bad_request("apply patch must be an object")
        existing = self.store.state(t.rtype).objects.get((ns, t.name))
        if existing is None:
            if t.subresource:
                raise ApiError(404, "NotFound", f'{t.rtype.key} "{t.name}" not found')
            body.setdefault("metadata", {})["name"] = t.name
            obj = self.store.create(t.rtype, ns, body, _opts(request), t.version)
            return json_response(out(obj, t.rtype, t.version), 201)
        patched = merge_patch(copy.deepcopy(out(existing, t.rtype, t.version)), body)
        patched["metadata"]["resourceVersion"] = existing["metadata"]["resourceVersion"]
        obj = self.store.update(t.rtype, ns, t.name, patched, t.subresource, _opts(request), t.version)
        return json_response(out(obj, t.rtype, t.version))

    # ---------------------------------------------------------------------------------------- admin
    async def faults(self, request: web.Request) -> web.Response:
        faults = self.emu.faults
        if request.method == "DELETE":
            faults.injections.clear()
            for state in self.store.types.values():
                state.force_gone = 0
            return json_response({"faults": []})
        if request.method == "GET":
            return json_response({"faults": faults.describe()})
        try:
            raw = await _body(request) or {}
            action = raw.get("action")
            if action == "gone_on_next_watch":
                for state in self._states(str(raw.get("resource", "*"))):
                    state.force_gone += 1
            elif action == "cut_watches":
                for state in self._states(str(raw.get("resource", "*"))):
                    state.cut_all()
            elif action == "inject":
                faults.add(raw)
            else:
                raise bad_request("action must be one of gone_on_next_watch, cut_watches, inject")
        except ApiError as err:
            return error_response(err)
        return json_response({"faults": faults.describe()})

    def _states(self, resource: str) -> list[Any]:
        states = [s for s in self.store.types.values() if resource in ("*", s.rtype.plural, s.rtype.key)]
        if not states:
            raise bad_request(f"unknown resource {resource!r}")
        return states

    async def health(self, request: web.Request) -> web.Response:
        return web.Response(text="ok")


def _drop_directives(patch: Any) -> Any:
    """Strategic merge patch on built-ins: treated as a merge patch without the $-directives."""
    if isinstance(patch, dict):
        return {k: _drop_directives(v) for k, v in patch.items() if not k.startswith("$")}
    return patch
