"""I/O of the Kubernetes activities (status, finalizers). Pure pydantic: workflows import it."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel

from osprov.api.activity import Activity
from osprov.api.operations import EventNote


class ObjectRef(BaseModel):
    """A custom resource pinned to its UID: writes to a recreated object of the same name fail."""

    group: str
    version: str
    plural: str
    namespace: str
    name: str
    uid: str


class PatchStatus(BaseModel):
    obj: ObjectRef
    status: dict[str, Any]


class FinalizerChange(BaseModel):
    obj: ObjectRef
    finalizer: str


class WriteResult(BaseModel):
    """exists=False: the object (with this UID) is gone; nothing was written."""

    exists: bool
    changed: bool = False


class SecretKey(BaseModel):
    namespace: str
    name: str
    key: str


class SecretVersion(BaseModel):
    """A Secret key exists; only its version crosses into history, never the value or a hash of it."""

    resource_version: str


class RecordEvent(BaseModel):
    """Create an events.k8s.io/v1 Event about `obj` named `name` (idempotent: an Event of that name that
    already exists counts as recorded), or, with `count` >= 2, patch its series (count, lastObservedTime)."""

    obj: ObjectRef
    kind: str  # regarding.kind
    name: str
    event: EventNote
    event_time: datetime
    count: int = 1
    last_observed: datetime | None = None


class EventRecorded(BaseModel):
    recorded: bool  # False: the apiserver refused it (logged by the worker; Events are best effort)


# --- activities: the typed contracts (osprov.api.activity) -----------------------------------------
PATCH_STATUS: Activity[PatchStatus, WriteResult] = Activity("kube.patch_status", PatchStatus, WriteResult)
ADD_FINALIZER: Activity[FinalizerChange, WriteResult] = Activity(
    "kube.add_finalizer", FinalizerChange, WriteResult
)
REMOVE_FINALIZER: Activity[FinalizerChange, WriteResult] = Activity(
    "kube.remove_finalizer", FinalizerChange, WriteResult
)
CHECK_SECRET: Activity[SecretKey, SecretVersion] = Activity("kube.check_secret", SecretKey, SecretVersion)
RECORD_EVENT: Activity[RecordEvent, EventRecorded] = Activity("kube.record_event", RecordEvent, EventRecorded)
