"""Nova activities: each makes one idempotent Compute API call in the Server's project.

Raw REST through the project-scoped openstacksdk connection, at a pinned microversion, so the fields
the rebuild protocol decides from (image.id, OS-EXT-STS:task_state, OS-SRV-USG:launched_at) are read
exactly as Nova sends them. Errors leave as the typed ApplicationErrors of activities/errors.py.
"""

from __future__ import annotations

import base64
from typing import Any

import openstack.connection
import openstack.exceptions
import requests
import structlog
from keystoneauth1 import exceptions as ksa_exceptions
from temporalio import activity

from activities.cloud import openstack_errors, project_connection
from activities.errors import UNKNOWN_OUTCOME, consistency, error
from api.nova_io import (
    CREATE_SERVER,
    DELETE_SERVER,
    FIND_SERVER,
    GET_SERVER,
    REBUILD,
    SET_METADATA,
    CreateServer,
    FindServer,
    Project,
    Rebuild,
    ServerId,
    ServerLookup,
    ServerRead,
    SetMetadata,
)

log = structlog.get_logger("osprov.activities.nova")

# 2.37: networks "auto"/"none"; 2.47: flavor embedded; image stays {"id": …} for image-booted servers.
MICROVERSION = "2.60"


def _conn(project: Project) -> openstack.connection.Connection:
    return project_connection(project.name, project.domain)


def _checked(resp: requests.Response) -> requests.Response:
    openstack.exceptions.raise_from_response(resp)
    return resp


def _read(raw: dict[str, Any]) -> ServerRead:
    image = raw.get("image")
    image_id = image.get("id") if isinstance(image, dict) else None
    mac = None
    for ports in (raw.get("addresses") or {}).values():
        if ports:
            mac = ports[0].get("OS-EXT-IPS-MAC:mac_addr")
            break
    return ServerRead(
        id=raw["id"],
        name=raw.get("name") or "",
        status=raw.get("status") or "UNKNOWN",
        image_id=str(image_id) if image_id else None,
        task_state=raw.get("OS-EXT-STS:task_state") or None,
        launched_at=raw.get("OS-SRV-USG:launched_at") or None,
        mac_address=mac,
        metadata={str(k): str(v) for k, v in (raw.get("metadata") or {}).items()},
    )


def _find(conn: openstack.connection.Connection, name: str) -> list[ServerRead]:
    # Nova's name filter is a regular expression: anchor it, then compare exactly anyway.
    resp = _checked(
        conn.compute.get("/servers/detail", params={"name": f"^{name}$"}, microversion=MICROVERSION)
    )
    found = [_read(s) for s in resp.json().get("servers", []) if s.get("name") == name]
    return sorted(found, key=lambda s: s.id)


@activity.defn(name=FIND_SERVER)
def find_server(req: FindServer) -> list[ServerRead]:
    """Every server of the project named exactly req.name (lowest ID first)."""
    with openstack_errors(f"find server {req.name}", service="Nova"):
        return _find(_conn(req.project), req.name)


@activity.defn(name=GET_SERVER)
def get_server(req: ServerId) -> ServerLookup:
    """A fresh GET /servers/{id}; server=None when it is gone."""
    with openstack_errors(f"read server {req.server_id}", service="Nova"):
        resp = _conn(req.project).compute.get(f"/servers/{req.server_id}", microversion=MICROVERSION)
        if resp.status_code == 404:
            return ServerLookup()
        return ServerLookup(server=_read(_checked(resp).json()["server"]))


@activity.defn(name=CREATE_SERVER)
def create_server(req: CreateServer) -> ServerRead:
    """Create-if-absent: a retried create after a worker crash adopts the first attempt's server."""
    with openstack_errors(f"create server {req.name}", service="Nova"):
        conn = _conn(req.project)
        existing = _find(conn, req.name)
        if len(existing) > 1:
            raise consistency(f"{len(existing)} Nova servers are named {req.name}; delete the extra ones")
        if existing:
            return existing[0]
        flavor = conn.compute.find_flavor(req.flavor, ignore_missing=True)
        if flavor is None:
            raise error("Invalid", f"flavor {req.flavor!r} does not exist in Nova")
        body: dict[str, Any] = {
            "name": req.name,
            "imageRef": req.image_id,
            "flavorRef": flavor.id,
            # No networks listed: no NIC. ("auto" would need Neutron's auto-allocated topology, and
            # a port needs a binding-capable Neutron; the local stack's API-only Neutron has neither.)
            "networks": [{"uuid": n} for n in req.network_ids] if req.network_ids else "none",
            "metadata": req.metadata,
        }
        if req.key_name:
            body["key_name"] = req.key_name
        if req.user_data:
            body["user_data"] = base64.b64encode(req.user_data.encode()).decode()
        resp = _checked(conn.compute.post("/servers", json={"server": body}, microversion=MICROVERSION))
        server_id = resp.json()["server"]["id"]
        log.info("server created", name=req.name, server_id=server_id)
        got = _checked(conn.compute.get(f"/servers/{server_id}", microversion=MICROVERSION))
        return _read(got.json()["server"])


@activity.defn(name=DELETE_SERVER)
def delete_server(req: ServerId) -> bool:
    """DELETE /servers/{id}; False when it was already gone. The workflow waits for absence."""
    with openstack_errors(f"delete server {req.server_id}", service="Nova"):
        resp = _conn(req.project).compute.delete(f"/servers/{req.server_id}", microversion=MICROVERSION)
        if resp.status_code == 404:
            return False
        _checked(resp)
        return True


@activity.defn(name=SET_METADATA)
def set_metadata(req: SetMetadata) -> None:
    """POST /servers/{id}/metadata: merges the given keys (system keys come last in the dict)."""
    with openstack_errors(f"set metadata of server {req.server_id}", service="Nova"):
        _checked(
            _conn(req.project).compute.post(
                f"/servers/{req.server_id}/metadata",
                json={"metadata": req.metadata},
                microversion=MICROVERSION,
            )
        )


@activity.defn(name=REBUILD)
def rebuild(req: Rebuild) -> None:
    """The single destructive call: only imageRef (Nova keeps the keypair and create-time user data).

    Never retried by Temporal (the workflow's retry policy has maximum_attempts=1). A transport failure
    after the request may have left is an UnknownOutcome: the workflow resolves it with a fresh read.
    409 Conflict (another action holds the task) comes back as Conflict: nothing was accepted.
    """
    action = f"rebuild server {req.server_id}"
    conn = _conn(req.project)
    with openstack_errors(action, service="Nova"):
        try:
            resp = conn.compute.post(
                f"/servers/{req.server_id}/action",
                json={"rebuild": {"imageRef": req.image_id}},
                microversion=MICROVERSION,
            )
        except (ksa_exceptions.ConnectFailure, requests.exceptions.ConnectionError):
            # Refused before anything was sent: the generic mapping (Transient) is accurate.
            raise
        except (ksa_exceptions.ClientException, requests.exceptions.RequestException) as exc:
            log.warning("rebuild outcome unknown", server_id=req.server_id, error=type(exc).__name__)
            raise error(
                UNKNOWN_OUTCOME, f"{action}: no answer from Nova ({type(exc).__name__}); re-reading"
            ) from None
        _checked(resp)
    log.info("rebuild accepted", server_id=req.server_id, image_id=req.image_id)


ACTIVITIES: list[Any] = [find_server, get_server, create_server, delete_server, set_metadata, rebuild]
