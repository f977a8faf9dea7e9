"""Cinder activities: each makes one idempotent Block Storage call with a token scoped to the volume's project.

Workflows call these by name (api/cinder_io.py holds the names and the models). A volume of an Identity is
handled with that Identity's application credential (activities.cloud.identity_connection); one with a
spec.project the tenancy mapping allows, with the controller's credentials re-scoped to that project
(project_connection). Region-level authority is never used for a volume. For the re-scoped path only:
Keystone answers 401 to a token request for a project that does not exist and for one the controller's
user has no role in; only then is the project looked up (identity, not a project-owned resource) to tell
the two apart. Cinder's diagnostics of an errored volume are logged here, for operators, and never returned.
"""

from __future__ import annotations

from typing import Any, TypeVar

import openstack.connection
import openstack.exceptions
import structlog

from osprov.activities import cloud
from osprov.activities.cloud import openstack_errors
from osprov.activities.contract import implements, implements_async
from osprov.activities.errors import conflict, consistency, not_found
from osprov.activities.project_scope import ProjectMissing, describe, scoped
from osprov.api.cinder_io import (
    AWAIT_VOLUME,
    CREATE_VOLUME,
    DELETE_VOLUME,
    EXTEND_VOLUME,
    FIND_VOLUMES,
    PROVISIONED_STATUSES,
    TAG_PREFIX,
    UPDATE_METADATA,
    AwaitVolume,
    CreateVolume,
    DeleteResult,
    DeleteVolume,
    ExtendVolume,
    FindVolumes,
    UpdateMetadata,
    Volume,
    VolumeLookup,
    is_error,
    project_missing,
    volume_metadata,
)

log = structlog.get_logger("osprov.activities.cinder")

T = TypeVar("T")

# Fields of an errored volume worth an operator's attention (never shown to users).
_DIAGNOSTIC_FIELDS = ("status", "host", "migration_status", "replication_status", "volume_type", "updated_at")


# Set once Cinder answered 400 to a name filter (not allowed for non-admins by its resource_filters.json).
_name_filter_rejected = False


def _to_volume(resource: Any) -> Volume:
    return Volume(
        id=str(resource.id),
        name=str(resource.name or ""),
        status=str(resource.status or ""),
        size=int(resource.size or 0),
        metadata={str(k): str(v) for k, v in (resource.metadata or {}).items()},
    )


def _list_named(conn: openstack.connection.Connection, name: str) -> list[Any]:
    """The project's volumes, filtered by name server-side when Cinder allows it.

    Which filters a non-admin may use is the operator's choice (Cinder's resource_filters.json); where
    "name" is not allowed Cinder answers 400, and the project's whole list is matched here instead.
    """
    global _name_filter_rejected
    if not _name_filter_rejected:
        try:
            return list(conn.block_storage.volumes(details=True, name=name))
        except openstack.exceptions.BadRequestException as exc:
            log.info(
                "cinder rejects the name filter; matching over the project's list", detail=str(exc)[:200]
            )
            _name_filter_rejected = True
    return list(conn.block_storage.volumes(details=True))


def _find_exact(conn: openstack.connection.Connection, name: str) -> list[Volume]:
    """Cinder's name filter is not an exact match everywhere: re-check the name, sort by ID."""
    matches = [r for r in _list_named(conn, name) if r.name == name]
    for r in matches:
        if is_error(str(r.status or "")):
            diagnostics = {f: str(getattr(r, f, None)) for f in _DIAGNOSTIC_FIELDS}
            log.warning("cinder volume in an error state", volume_id=r.id, name=name, **diagnostics)
    return sorted((_to_volume(r) for r in matches), key=lambda v: v.id)


def _by_id(conn: openstack.connection.Connection, volume_id: str) -> list[Volume]:
    """The project's volume with this ID (none if absent or another project's: an admin token sees all)."""
    # A GET by ID, not find_volume: on a 404 that falls back to a list filtered by name, which Cinder
    # refuses non-admin tokens (400) unless its resource_filters allow it — a deleted volume would fail.
    try:
        found = conn.block_storage.get_volume(volume_id)
    except openstack.exceptions.NotFoundException:
        return []
    owner = getattr(found, "project_id", None)
    if owner is not None and owner != conn.current_project_id:
        return []
    return [_to_volume(found)]


@implements(FIND_VOLUMES)
def find_volumes(request: FindVolumes) -> VolumeLookup:
    """Every volume of the project named exactly `name` (or the one with `id`); project_found=False if the
    project does not exist."""
    what = request.id or request.name
    with openstack_errors(f"find volume {what} in {describe(request.scope)}", service="Cinder"):
        try:
            volumes = scoped(
                request.scope,
                lambda conn: _by_id(conn, request.id) if request.id else _find_exact(conn, request.name),
            )
        except ProjectMissing:
            return VolumeLookup(project_found=False)
        return VolumeLookup(project_found=True, volumes=volumes)


def settled(lookup: VolumeLookup, gone: bool) -> bool:
    """Whether a wait for the volume is over: it is gone, or (not waiting for that) provisioned or errored."""
    if not lookup.project_found or not lookup.volumes:
        return True
    status = lookup.volumes[0].status
    return not gone and (status in PROVISIONED_STATUSES or is_error(status))


@implements_async(AWAIT_VOLUME)
async def await_volume(request: AwaitVolume) -> VolumeLookup:
    """One activity for a whole wait on Cinder (reads by ID at a short interval) instead of a workflow
    timer and an activity per read; returns the last read, settled or not (the workflow decides)."""
    read = FindVolumes(scope=request.scope, name="", id=request.id)
    return await cloud.poll(
        lambda: find_volumes(read),
        lambda lookup: settled(lookup, request.gone),
        request.interval_seconds,
        request.within_seconds,
        request.busy_seen_at,
    )


def _region(conn: openstack.connection.Connection) -> str:
    return conn.config.get_region_name("block-storage") or ""


def _create(conn: openstack.connection.Connection, request: CreateVolume) -> Volume:
    existing = _find_exact(conn, request.name)
    if len(existing) > 1:
        raise consistency(
            f"{len(existing)} Cinder volumes are named {request.name}; refusing to create or adopt any"
        )
    if existing:  # a retried create after a crash: adopt what the first attempt made
        return existing[0]
    metadata = volume_metadata(request.tags, request.system | {"region": _region(conn)})
    created = conn.block_storage.create_volume(
        name=request.name, size=request.size, volume_type=request.volume_type, metadata=metadata
    )
    log.info("cinder volume create accepted", volume_id=created.id, name=request.name)
    return _to_volume(created)


@implements(CREATE_VOLUME)
def create_volume(request: CreateVolume) -> Volume:
    """Create-if-absent: an existing exact-name volume is returned instead of creating a second one."""
    with openstack_errors(f"create volume {request.name} in {describe(request.scope)}", service="Cinder"):
        try:
            return scoped(request.scope, lambda conn: _create(conn, request))
        except ProjectMissing:
            raise not_found(project_missing(request.scope.project, request.scope.domain)) from None


def _update_metadata(conn: openstack.connection.Connection, request: UpdateMetadata) -> bool:
    want = volume_metadata(request.tags, request.system | {"region": _region(conn)})
    current = conn.block_storage.get_volume(request.id).metadata or {}
    changed = {k: v for k, v in want.items() if current.get(k) != v}  # keeps linkage keys last
    stale = [k for k in current if k.startswith(TAG_PREFIX) and k not in want]
    if changed:
        conn.block_storage.set_volume_metadata(request.id, **changed)
    if stale:
        conn.block_storage.delete_volume_metadata(request.id, keys=stale)
    return bool(changed or stale)


@implements(UPDATE_METADATA)
def update_metadata(request: UpdateMetadata) -> bool:
    """Set the osprov metadata keys that differ and remove dropped tags; True if anything changed."""
    with openstack_errors(f"update metadata of volume {request.id}", service="Cinder"):
        try:
            return scoped(request.scope, lambda conn: _update_metadata(conn, request))
        except ProjectMissing:
            raise not_found(f"{describe(request.scope)} does not exist in Keystone") from None


# Cinder extends an attached (in-use) volume only at volume API 3.42+ (and only where its policy
# volume:extend_attached_volume allows); below, it refuses any extend of an in-use volume (400), and a
# Cinder older than 3.42 refuses the version itself (406).
ONLINE_EXTEND_MICROVERSION = "3.42"
ONLINE_EXTEND_REFUSED = (
    "Cinder refuses to extend the volume while it is attached (online extend needs Cinder volume API 3.42 "
    "and its policy volume:extend_attached_volume); detach it (remove it from the Server's volumes) to "
    "extend it offline — retrying"
)


def _extend_pending(volume: Volume, size: int) -> bool:
    """An extend needs sending: a provisioned volume smaller than `size` (not one already extending: an
    earlier attempt's extend was accepted, and Cinder would refuse a second with 400 anyway)."""
    return volume.status in PROVISIONED_STATUSES and volume.size < size


def _extend(conn: openstack.connection.Connection, request: ExtendVolume) -> Volume:
    # Read first: a retried attempt (the worker died after Cinder accepted the first) finds the volume
    # extending or extended and sends nothing. Cinder itself moves available|in-use -> extending atomically
    # before it answers, so two extends for one target can never both be accepted.
    found = _by_id(conn, request.id)
    if not found:
        raise not_found(f"volume {request.id} does not exist in {describe(request.scope)}")
    before = found[0]
    if not _extend_pending(before, request.size):
        return before
    online = before.status == "in-use"
    try:
        if online:
            # The SDK's extend_volume takes no microversion and negotiates none where the endpoint is not
            # discoverable (an endpoint override): ask for 3.42 on this call only, through the same proxy.
            resp = conn.block_storage.post(
                f"/volumes/{request.id}/action",
                json={"os-extend": {"new_size": request.size}},
                microversion=ONLINE_EXTEND_MICROVERSION,
            )
            openstack.exceptions.raise_from_response(resp)
        else:
            conn.block_storage.extend_volume(request.id, request.size)
    except openstack.exceptions.HttpException as exc:
        # 400: the state or size changed, or over a limit; 403: policy; 406: no volume API 3.42 here.
        if exc.status_code not in (400, 403, 406):
            raise
        log.warning(
            "cinder refused the extend",
            volume_id=request.id,
            status=exc.status_code,
            detail=str(exc.details)[:300],
        )
        after = next(iter(_by_id(conn, request.id)), before)
        if not _extend_pending(after, request.size):  # raced with our own earlier, accepted extend
            return after
        if online:
            raise conflict(ONLINE_EXTEND_REFUSED) from None
        raise conflict(
            f"Cinder refused to extend the volume to {request.size} GiB (over quota, or beyond what its "
            "volume type allows?) — retrying"
        ) from None
    log.info("cinder volume extend accepted", volume_id=request.id, size=request.size, online=online)
    return next(iter(_by_id(conn, request.id)), before)


@implements(EXTEND_VOLUME)
def extend_volume(request: ExtendVolume) -> Volume:
    """Extend-if-smaller: at most one extend is accepted per target size; returns a read after the call."""
    with openstack_errors(f"extend volume {request.id} in {describe(request.scope)}", service="Cinder"):
        try:
            return scoped(request.scope, lambda conn: _extend(conn, request))
        except ProjectMissing:
            raise not_found(f"{describe(request.scope)} does not exist in Keystone") from None


def _delete(conn: openstack.connection.Connection, volume_id: str) -> DeleteResult:
    try:
        conn.block_storage.delete_volume(volume_id, ignore_missing=False)
    except openstack.exceptions.NotFoundException:
        return DeleteResult(outcome="absent")
    except openstack.exceptions.BadRequestException as exc:
        # Cinder refuses deletes by state (attached, snapshots, migrating): its text goes to the log only.
        log.warning("cinder refused the delete", volume_id=volume_id, detail=str(exc.details)[:300])
        raise conflict(
            "Cinder refused to delete the volume in its current state (attached, with snapshots or "
            "migrating?) — retrying"
        ) from None
    return DeleteResult(outcome="accepted")


@implements(DELETE_VOLUME)
def delete_volume(request: DeleteVolume) -> DeleteResult:
    """Delete by ID: "accepted" (Cinder deletes asynchronously) or "absent" (already gone, or no project)."""
    with openstack_errors(f"delete volume {request.id} in {describe(request.scope)}", service="Cinder"):
        try:
            return scoped(request.scope, lambda conn: _delete(conn, request.id))
        except ProjectMissing:
            return DeleteResult(outcome="absent")


ACTIVITIES = [find_volumes, await_volume, create_volume, update_metadata, extend_volume, delete_volume]
