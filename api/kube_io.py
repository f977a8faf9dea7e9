"""I/O of the Kubernetes activities (status, finalizers). Pure pydantic: workflows import it."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from osprov.api.activity import Activity


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


# --- activities: the typed contracts (osprov.api.activity) -----------------------------------------
PATCH_STATUS: Activity[PatchStatus, WriteResult] = Activity("kube.patch_status", PatchStatus, WriteResult)
ADD_FINALIZER: Activity[FinalizerChange, WriteResult] = Activity(
    "kube.add_finalizer", FinalizerChange, WriteResult
)
REMOVE_FINALIZER: Activity[FinalizerChange, WriteResult] = Activity(
    "kube.remove_finalizer", FinalizerChange, WriteResult
)
CHECK_SECRET: Activity[SecretKey, SecretVersion] = Activity("kube.check_secret", SecretKey, SecretVersion)
