"""Nova activities: each makes one idempotent Compute API call in the Server's project.

Raw REST through the project-scoped openstacksdk connection, at a pinned microversion, so the fields
the rebuild protocol decides from (image.id, OS-EXT-STS:task_state, OS-SRV-USG:launched_at) are read
exactly as Nova sends them. Errors leave as the typed ApplicationErrors of activities/errors.py.
"""

from __future__ import annotations

from typing import Any

import openstack.connection
import openstack.exceptions
import requests
import structlog
from keystoneauth1 import exceptions as ksa_exceptions

from osprov.activities import nova_ssh, siblings
from osprov.activities.cloud import openstack_errors, poll, project_connection, scoped_connection
from osprov.activities.contract import implements, implements_async
from osprov.activities.errors import conflict, consistency, error, not_found
from osprov.api.errors import UNKNOWN_OUTCOME
from osprov.api.nova_io import (
    ATTACH_VOLUME,
    AWAIT_SERVER,
    CONFIRM_RESIZE,
    CREATE_SERVER,
    DELETE_SERVER,
    DETACH_VOLUME,
    FIND_IMPORTED_SERVER,
    FIND_SERVER,
    FLAVOR_NAME,
    GET_SERVER,
    REBUILD,
    RESIZE,
    RESIZE_ACTIONS,
    SET_METADATA,
    AttachResult,
    AwaitServer,
    CreateServer,
    FindImportedServer,
    FindServer,
    FlavorRef,
    Project,
    Rebuild,
    Resize,
    ResizeActions,
    ServerId,
    ServerLookup,
    ServerRead,
    SetMetadata,
    VolumeAttachment,
    settled,
)

log = structlog.get_logger("osprov.activities.nova")

# 2.37: networks "auto"/"none"; 2.47: flavor embedded; image stays {"id": …} for image-booted servers.
MICROVERSION = "2.60"
PINNED_MICROVERSION = "2.74"  # host / hypervisor_hostname on create


def _conn(project: Project) -> openstack.connection.Connection:
    return scoped_connection(project.name, project.domain, project.credential)


def _checked(resp: requests.Response) -> requests.Response:
    openstack.exceptions.raise_from_response(resp)
    return resp


def _read(raw: dict[str, Any]) -> ServerRead:
    image = raw.get("image")
    image_id = image.get("id") if isinstance(image, dict) else None
    flavor = raw.get("flavor")
    flavor_name = flavor.get("original_name") if isinstance(flavor, dict) else None
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
        flavor=str(flavor_name) if flavor_name else None,
    )


def _find(conn: openstack.connection.Connection, name: str) -> list[ServerRead]:
    # Nova's name filter is a regular expression: anchor it, then compare exactly anyway.
    resp = _checked(
        conn.compute.get("/servers/detail", params={"name": f"^{name}$"}, microversion=MICROVERSION)
    )
    found = [_read(s) for s in resp.json().get("servers", []) if s.get("name") == name]
    return sorted(found, key=lambda s: s.id)


@implements(FIND_SERVER)
def find_server(req: FindServer) -> list[ServerRead]:
    """Every server of the project named exactly req.name (lowest ID first)."""
    with openstack_errors(f"find server {req.name}", service="Nova"):
        return _find(_conn(req.project), req.name)


@implements(FIND_IMPORTED_SERVER)
def find_imported_server(req: FindImportedServer) -> list[ServerRead]:
    """The project's server with req.server_id, or every one named exactly req.name. By ID, another
    project's server counts as absent: re-scoped admin credentials (spec.project) could read any."""
    with openstack_errors(f"find imported server {req.server_id or req.name}", service="Nova"):
        conn = _conn(req.project)
        if req.server_id is None:
            return _find(conn, req.name or "")
        resp = conn.compute.get(f"/servers/{req.server_id}", microversion=MICROVERSION)
        if resp.status_code == 404:
            return []
        raw = _checked(resp).json()["server"]
        return [_read(raw)] if raw.get("tenant_id") == conn.current_project_id else []


@implements(GET_SERVER)
def get_server(req: ServerId) -> ServerLookup:
    """A fresh GET /servers/{id}; server=None when it is gone."""
    with openstack_errors(f"read server {req.server_id}", service="Nova"):
        resp = _conn(req.project).compute.get(f"/servers/{req.server_id}", microversion=MICROVERSION)
        if resp.status_code == 404:
            return ServerLookup()
        return ServerLookup(server=_read(_checked(resp).json()["server"]))


@implements_async(AWAIT_SERVER)
async def await_server(req: AwaitServer) -> ServerLookup:
    """One activity for a whole wait on Nova (a build or an accepted rebuild; a read every 0.5 s, as a
    plain script polls) instead of a workflow timer and a pass per read; returns the last read."""
    return await poll(
        lambda: get_server(req.server),
        lambda found: settled(found, req.busy_statuses),
        req.interval_seconds,
        req.within_seconds,
        req.busy_seen_at,
    )


def _networks(conn: openstack.connection.Connection, req: CreateServer) -> list[dict[str, str]]:
    """spec.networks in order as Nova's networks: an ID as given, a Network resource by its Neutron network."""
    if not req.nics:
        return [{"uuid": n} for n in req.network_ids]
    place = _place(req.project)
    return [
        {"uuid": nic.network_id or siblings.network_id(conn, req.namespace, str(nic.network), **place)}
        for nic in req.nics
    ]


def _security_groups(conn: openstack.connection.Connection, req: CreateServer) -> list[str]:
    place = _place(req.project)
    return [siblings.security_group_id(conn, req.namespace, name, **place) for name in req.security_groups]


@implements(CREATE_SERVER)
def create_server(req: CreateServer) -> ServerRead:
    """Create-if-absent: a retried create after a worker crash adopts the first attempt's server."""
    with openstack_errors(f"create server {req.name}", service="Nova"):
        conn = _conn(req.project)
        existing = _find(conn, req.name)
        if len(existing) > 1:
            raise consistency(f"{len(existing)} Nova servers are named {req.name}; delete the extra ones")
        if existing:
            return existing[0]
        # ssh mode ca: a worker without the operator's CA (or userData too long with it) answers before any
        # write; an adopted server (above) needs neither.
        user_data = nova_ssh.with_ca_trust(req.user_data, nova_ssh.ca_keys()) if req.ssh_ca else req.user_data
        flavor = conn.compute.find_flavor(req.flavor, ignore_missing=True)
        if flavor is None:
            raise error("Invalid", f"flavor {req.flavor!r} does not exist in Nova")
        # The Networks and SecurityGroups it names, resolved before anything is written (a missing one fails
        # the pass with a message and nothing made).
        networks, groups = _networks(conn, req), _security_groups(conn, req)
        key_name = req.key_name
        if req.identity_keypair:
            key_name, public_key = nova_ssh.identity_public_key(req.project.credential)
            nova_ssh.ensure_keypair(conn, key_name, public_key)
        body: dict[str, Any] = {
            "name": req.name,
            "imageRef": req.image_id,
            "flavorRef": flavor.id,
            # No networks listed: no NIC, as the spec says ("auto" would depend on Neutron's
            # auto-allocated topology, which a cloud may not offer: an operator lists networks).
            "networks": networks or "none",
            "metadata": req.metadata,
        }
        if groups:  # Nova takes a group ID where it says "name"
            body["security_groups"] = [{"name": g} for g in groups]
        if key_name:
            body["key_name"] = key_name
        if user_data:
            body["user_data"] = nova_ssh.encode(user_data)
        microversion = MICROVERSION
        if req.host or req.hypervisor_hostname:
            # Pinned (the workflow checked the operator allows it): Nova's policy for a requested destination
            # is admin's, so this one POST runs on the controller's credentials scoped to the same project.
            conn = project_connection(req.project.name, req.project.domain)
            body.update(
                {k: v for k, v in (("host", req.host), ("hypervisor_hostname", req.hypervisor_hostname)) if v}
            )
            microversion = PINNED_MICROVERSION
        resp = _checked(conn.compute.post("/servers", json={"server": body}, microversion=microversion))
        server_id = resp.json()["server"]["id"]
        log.info("server created", name=req.name, server_id=server_id)
        # The 202 carries the new ID only, and a new server is in BUILD (Nova's API reference). The wait
        # that follows reads it at once: a GET here would only make that read twice.
        return ServerRead(
            id=server_id,
            name=req.name,
            status="BUILD",
            image_id=req.image_id,
            task_state=None,
            launched_at=None,
            metadata=dict(req.metadata),
            flavor=str(flavor.name),
        )


@implements(DELETE_SERVER)
def delete_server(req: ServerId) -> bool:
    """DELETE /servers/{id}; False when it was already gone. The workflow waits for absence."""
    with openstack_errors(f"delete server {req.server_id}", service="Nova"):
        resp = _conn(req.project).compute.delete(f"/servers/{req.server_id}", microversion=MICROVERSION)
        if resp.status_code == 404:
            return False
        _checked(resp)
        return True


@implements(SET_METADATA)
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


@implements(REBUILD)
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


# --- resize (docs/resize.md) -----------------------------------------------------------------------


def _post_once(req_project: Project, server_id: str, body: dict[str, Any], action: str) -> None:
    """One POST /servers/{id}/action, never retried: an answer lost after the request may have left is an
    UnknownOutcome (the workflow attributes it from Nova's instance actions); 409 comes back as Conflict."""
    conn = _conn(req_project)
    with openstack_errors(action, service="Nova"):
        try:
            resp = conn.compute.post(f"/servers/{server_id}/action", json=body, microversion=MICROVERSION)
        except (ksa_exceptions.ConnectFailure, requests.exceptions.ConnectionError):
            raise  # refused before anything was sent: Transient is accurate
        except (ksa_exceptions.ClientException, requests.exceptions.RequestException) as exc:
            log.warning("outcome unknown", server_id=server_id, action=action, error=type(exc).__name__)
            raise error(
                UNKNOWN_OUTCOME, f"{action}: no answer from Nova ({type(exc).__name__}); re-reading"
            ) from None
        _checked(resp)


@implements(FLAVOR_NAME)
def flavor_name(req: FlavorRef) -> str:
    """The name of the flavor spec.flavor names (by name or ID), as GET /servers shows it."""
    with openstack_errors(f"find flavor {req.flavor}", service="Nova"):
        flavor = _conn(req.project).compute.find_flavor(req.flavor, ignore_missing=True)
        if flavor is None:
            raise error("Invalid", f"flavor {req.flavor!r} does not exist in Nova")
        return str(flavor.name)


@implements(RESIZE)
def resize(req: Resize) -> None:
    """The resize, sent once (the workflow's retry policy has maximum_attempts=1)."""
    conn = _conn(req.project)
    with openstack_errors(f"find flavor {req.flavor}", service="Nova"):
        flavor = conn.compute.find_flavor(req.flavor, ignore_missing=True)
        if flavor is None:
            raise error("Invalid", f"flavor {req.flavor!r} does not exist in Nova")
    action = f"resize server {req.server_id} to flavor {req.flavor}"
    _post_once(req.project, req.server_id, {"resize": {"flavorRef": flavor.id}}, action)
    log.info("resize accepted", server_id=req.server_id, flavor=req.flavor)


@implements(CONFIRM_RESIZE)
def confirm_resize(req: ServerId) -> None:
    """confirmResize, sent once; only for a VERIFY_RESIZE the workflow attributed to its own resize."""
    _post_once(
        req.project, req.server_id, {"confirmResize": None}, f"confirm resize of server {req.server_id}"
    )
    log.info("resize confirm accepted", server_id=req.server_id)


@implements(RESIZE_ACTIONS)
def resize_actions(req: ServerId) -> ResizeActions:
    """Count the server's resize and confirmResize instance actions (the attribution evidence)."""
    with openstack_errors(f"list instance actions of server {req.server_id}", service="Nova"):
        names = [a.action for a in _conn(req.project).compute.server_actions(req.server_id)]
        return ResizeActions(resizes=names.count("resize"), confirms=names.count("confirmResize"))


# --- volume attachments (volumes.md "Server attachments": observe in Cinder, write through Nova) -------


def _volume_resource_uid(req: VolumeAttachment) -> str | None:
    """UID of the Volume resource (its Cinder volume is named volume-{uid}); None when it does not exist.
    It must live where the Server does (the same Identity, or the same spec.project)."""
    return siblings.sibling_uid("Volume", req.namespace, req.volume, **_place(req.project))


def _place(project: Project) -> dict[str, Any]:
    return {"project": project.name, "domain": project.domain, "credential": project.credential}


def _cinder_volume(conn: openstack.connection.Connection, req: VolumeAttachment) -> Any | None:
    uid = _volume_resource_uid(req)
    if uid is None:
        return None
    name = f"volume-{uid}"
    try:
        listed = list(conn.block_storage.volumes(details=True, name=name))
    except openstack.exceptions.BadRequestException:
        # Cinder lets the operator forbid the name filter to non-admins (resource_filters.json).
        listed = list(conn.block_storage.volumes(details=True))
    found = [v for v in listed if v.name == name]
    if len(found) > 1:
        raise consistency(f"{len(found)} Cinder volumes are named {name}; delete the extra ones")
    return found[0] if found else None


def _attachment_on(volume: Any, server_id: str | None = None) -> list[dict[str, Any]]:
    rows = list(volume.attachments or [])
    return [a for a in rows if server_id is None or a.get("server_id") == server_id]


@implements(ATTACH_VOLUME)
def attach_volume(req: VolumeAttachment) -> AttachResult:
    """Attach (no multi-attach): already attached here = success without a Nova call."""
    action = f"attach Volume {req.volume} to server {req.server_id}"
    with openstack_errors(action, service="Nova"):
        conn = _conn(req.project)
        volume = _cinder_volume(conn, req)
        if volume is None:
            raise not_found(f"{action}: the Volume has no Cinder volume (yet)")
        mine = _attachment_on(volume, req.server_id)
        if mine:
            return AttachResult(device=mine[0].get("device"))
        if _attachment_on(volume):
            raise conflict(f"{action}: the volume is attached to another server (no multi-attach)")
        body: dict[str, Any] = {"volumeId": volume.id}
        if req.device:
            body["device"] = req.device
        path = f"/servers/{req.server_id}/os-volume_attachments"
        resp = conn.compute.post(path, json={"volumeAttachment": body}, microversion=MICROVERSION)
        if resp.status_code == 409:
            # A concurrent attach of the same volume here counts as success; anything else is a conflict.
            rows = _checked(conn.compute.get(path, microversion=MICROVERSION)).json()["volumeAttachments"]
            match = [r for r in rows if r.get("volumeId") == volume.id]
            if match:
                return AttachResult(device=match[0].get("device"))
            raise conflict(f"{action}: Nova reports a conflict")
        return AttachResult(device=_checked(resp).json()["volumeAttachment"].get("device"))


@implements(DETACH_VOLUME)
def detach_volume(req: VolumeAttachment) -> None:
    """Detach: missing server, volume or attachment (or Nova 404) means detached already holds."""
    action = f"detach Volume {req.volume} from server {req.server_id}"
    with openstack_errors(action, service="Nova"):
        conn = _conn(req.project)
        volume = _cinder_volume(conn, req)
        if volume is None or not _attachment_on(volume, req.server_id):
            return
        resp = conn.compute.delete(
            f"/servers/{req.server_id}/os-volume_attachments/{volume.id}", microversion=MICROVERSION
        )
        if resp.status_code == 404:
            return
        if resp.status_code == 409:
            raise conflict(f"{action}: Nova reports a conflict")
        _checked(resp)


ACTIVITIES: list[Any] = [
    find_server,
    find_imported_server,
    get_server,
    await_server,
    create_server,
    delete_server,
    set_metadata,
    rebuild,
    flavor_name,
    resize,
    confirm_resize,
    resize_actions,
    attach_volume,
    detach_volume,
]
