"""Endpoints outside resources: discovery documents, health, and the emulator's fault-injection API."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from . import discovery
from .errors import ApiError, bad_request
from .faults import Faults
from .httpio import json_response
from .requests import read_body
from .store import Store
from .watch import TypeState

NOT_FOUND = ApiError(404, "NotFound", "the server could not find the requested resource")


def discovery_response(store: Store, request: web.Request) -> web.Response:
    path = request.path.rstrip("/")
    if path == "/version":
        return json_response(discovery.SERVER_VERSION)
    if path == "/api":
        return json_response(discovery.api_versions(request.host))
    if path == "/apis":
        return json_response(discovery.api_group_list(store))
    parts = [p for p in path.split("/") if p]
    doc: dict[str, Any] | None = None
    if parts == ["api", "v1"]:
        doc = discovery.resource_list(store, "", "v1")
    elif len(parts) == 2 and parts[0] == "apis":
        doc = discovery.api_group(store, parts[1])
    elif len(parts) == 3 and parts[0] == "apis":
        doc = discovery.resource_list(store, parts[1], parts[2])
    if doc is None:
        raise NOT_FOUND
    return json_response(doc)


def _states(store: Store, resource: str) -> list[TypeState]:
    states = [s for s in store.types.values() if resource in ("*", s.rtype.plural, s.rtype.key)]
    if not states:
        raise bad_request(f"unknown resource {resource!r}")
    return states


async def faults_response(store: Store, faults: Faults, request: web.Request) -> web.Response:
    """POST /_emulator/faults (not part of the Kubernetes API): see docs/kube-emulator.md."""
    if request.method == "DELETE":
        faults.injections.clear()
        for state in store.types.values():
            state.force_gone = 0
        return json_response({"faults": []})
    if request.method == "GET":
        return json_response({"faults": faults.describe()})
    raw = await read_body(request) or {}
    if not isinstance(raw, dict):
        raise bad_request("the fault must be an object")
    action = raw.get("action")
    if action == "gone_on_next_watch":
        for state in _states(store, str(raw.get("resource", "*"))):
            state.force_gone += 1
    elif action == "cut_watches":
        for state in _states(store, str(raw.get("resource", "*"))):
            state.cut_all()
    elif action == "inject":
        faults.add(raw)
    else:
        raise bad_request("action must be one of gone_on_next_watch, cut_watches, inject")
    return json_response({"faults": faults.describe()})
