"""Kubernetes activities: status write-back, finalizers, Secret reads and Events (one API call each).

Writes carry `metadata.uid` as a precondition, so a write meant for a deleted resource can never
land on a recreated one of the same name (the apiserver answers 409, reported as exists=False).
"""

from __future__ import annotations

import base64
import socket
import threading
from datetime import UTC, datetime
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from temporalio import activity

from osprov.activities import errors
from osprov.api.kube_io import (
    EventRecorded,
    FinalizerChange,
    ObjectRef,
    PatchStatus,
    RecordEvent,
    SecretKey,
    SecretVersion,
    WriteResult,
)
from osprov.api.operations import REPORTING_CONTROLLER
from osprov.runtime import kube, logs

log = logs.log("osprov.worker")

MERGE_PATCH = "application/merge-patch+json"
_local = threading.local()

# The kubernetes package imports its API classes on first use, and CoreV1Api alone takes ~0.4 s (a
# 30,000-line module). Loaded here, at worker start, a new worker's first Secret read (a User's password,
# on the path of every grant that waits for that user) does not pay it inside a reconcile.
APIS = (client.CoreV1Api, client.CustomObjectsApi, client.EventsV1Api)


def api_client() -> client.ApiClient:
    """One ApiClient per thread: the activity pool is threaded and the client is not thread-safe."""
    if getattr(_local, "api", None) is None:
        _local.api = kube.api_client("osprov-worker")
    return _local.api  # type: ignore[no-any-return]


def _custom() -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api_client())


def _raise_for(err: ApiException, what: str) -> None:
    if err.status is not None and (err.status >= 500 or err.status == 429):
        raise errors.transient(f"Kubernetes API error {err.status} on {what}")
    if err.status == 409:
        raise errors.transient(f"Kubernetes API conflict on {what}; retrying")
    raise errors.invalid(f"Kubernetes API refused {what}: {err.status} {err.reason}")


def _uid_mismatch(err: ApiException) -> bool:
    return err.status == 409 and "UID" in str(err.body or "")


@activity.defn(name="kube.patch_status")
def patch_status(req: PatchStatus) -> WriteResult:
    """Merge-patch `.status` through the /status subresource (the only status writer is the workflow)."""
    o = req.obj
    body = {"metadata": {"uid": o.uid}, "status": req.status}
    try:
        _custom().patch_namespaced_custom_object_status(
            o.group, o.version, o.namespace, o.plural, o.name, body, _content_type=MERGE_PATCH
        )
    except ApiException as err:
        if err.status == 404 or _uid_mismatch(err):
            return WriteResult(exists=False)
        _raise_for(err, f"status of {o.plural}/{o.name}")
    return WriteResult(exists=True, changed=True)


def _set_finalizer(o: ObjectRef, finalizer: str, present: bool) -> WriteResult:
    """Read, then write the finalizer list with resourceVersion and uid as preconditions."""
    api = _custom()
    for _ in range(5):  # lost races against other writers of metadata: re-read and try again
        try:
            obj: dict[str, Any] = api.get_namespaced_custom_object(  # type: ignore[assignment]
                o.group, o.version, o.namespace, o.plural, o.name
            )
        except ApiException as err:
            if err.status == 404:
                return WriteResult(exists=False)
            _raise_for(err, f"read of {o.plural}/{o.name}")
        meta = obj.get("metadata", {})
        if meta.get("uid") != o.uid:
            return WriteResult(exists=False)
        current: list[str] = list(meta.get("finalizers") or [])
        if (finalizer in current) == present:
            return WriteResult(exists=True, changed=False)
        wanted = [*current, finalizer] if present else [f for f in current if f != finalizer]
        body = {"metadata": {"finalizers": wanted, "resourceVersion": meta["resourceVersion"], "uid": o.uid}}
        try:
            api.patch_namespaced_custom_object(
                o.group, o.version, o.namespace, o.plural, o.name, body, _content_type=MERGE_PATCH
            )
            return WriteResult(exists=True, changed=True)
        except ApiException as err:
            if err.status == 404 or _uid_mismatch(err):
                return WriteResult(exists=False)
            if err.status == 409:
                continue
            if err.status == 422 and present:
                # Deletion already started: no new finalizer may be added; the delete signal follows.
                return WriteResult(exists=True, changed=False)
            _raise_for(err, f"finalizers of {o.plural}/{o.name}")
    raise errors.transient(f"finalizers of {o.plural}/{o.name} kept changing under us; retrying")


@activity.defn(name="kube.add_finalizer")
def add_finalizer(req: FinalizerChange) -> WriteResult:
    return _set_finalizer(req.obj, req.finalizer, present=True)


@activity.defn(name="kube.remove_finalizer")
def remove_finalizer(req: FinalizerChange) -> WriteResult:
    return _set_finalizer(req.obj, req.finalizer, present=False)


def read_secret_data(namespace: str, name: str) -> tuple[dict[str, str], str]:
    """A Secret's decoded data and its resourceVersion, read inside an activity (the data never leaves it)."""
    try:
        secret = client.CoreV1Api(api_client()).read_namespaced_secret(name, namespace)
    except ApiException as err:
        if err.status == 404:
            raise errors.not_found(f"Secret {namespace}/{name} does not exist; create it") from None
        _raise_for(err, f"read of Secret {namespace}/{name}")
        raise
    return decoded(secret, namespace, name), str(secret.metadata.resource_version if secret.metadata else "")


def decoded(secret: client.V1Secret, namespace: str, name: str) -> dict[str, str]:
    """The Secret's data as text (raises Invalid, naming the key, for one that is not UTF-8)."""
    data: dict[str, str] = {}
    for key, encoded in (secret.data or {}).items():
        try:
            data[key] = base64.b64decode(encoded).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            raise errors.invalid(f"Secret {namespace}/{name} key {key} is not valid UTF-8 text") from None
    return data


def _read_secret(namespace: str, name: str, key: str) -> tuple[str, str]:
    data, version = read_secret_data(namespace, name)
    if key not in data:
        raise errors.not_found(f"Secret {namespace}/{name} has no key {key}; add it or fix the key name")
    value = data[key]
    if not value:
        raise errors.invalid(f"Secret {namespace}/{name} key {key} is empty; put the password there")
    return value, version


def read_secret_value(namespace: str, name: str, key: str) -> str:
    """A Secret's value, read inside an activity. The value never leaves the calling activity."""
    return _read_secret(namespace, name, key)[0]


@activity.defn(name="kube.check_secret")
def check_secret(req: SecretKey) -> SecretVersion:
    """Fail early (before any cloud write) when a Secret or its key is missing; return its version only."""
    return SecretVersion(resource_version=_read_secret(req.namespace, req.name, req.key)[1])


def _micro_time(value: datetime) -> str:
    """metav1.MicroTime: exactly six fractional digits, UTC (the client's isoformat() drops zeros)."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _event_body(req: RecordEvent) -> dict[str, Any]:
    o, e = req.obj, req.event
    body: dict[str, Any] = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": req.name, "namespace": o.namespace},
        "eventTime": _micro_time(req.event_time),
        "regarding": {
            "apiVersion": f"{o.group}/{o.version}",
            "kind": req.kind,
            "namespace": o.namespace,
            "name": o.name,
            "uid": o.uid,
        },
        "type": e.type,
        "reason": e.reason,
        "action": e.action,
        "note": e.note,
        "reportingController": REPORTING_CONTROLLER,
        "reportingInstance": socket.gethostname()[:128] or "osprov-worker",
    }
    if req.count >= 2:
        body["series"] = _series(req)
    return body


def _series(req: RecordEvent) -> dict[str, Any]:
    return {"count": req.count, "lastObservedTime": _micro_time(req.last_observed or req.event_time)}


@activity.defn(name="kube.record_event")
def record_event(req: RecordEvent) -> EventRecorded:
    """An Event about a resource: created under the workflow's deterministic name (a retried create finds
    it there), or a repeat folded into its series with a patch (client-go's events.k8s.io recorder). Events
    are best effort: a refusal is logged and reported, never raised (the pass goes on)."""
    api = client.EventsV1Api(api_client())
    ns = req.obj.namespace
    try:
        if req.count >= 2:
            try:
                api.patch_namespaced_event(req.name, ns, {"series": _series(req)}, _content_type=MERGE_PATCH)
                return EventRecorded(recorded=True)
            except ApiException as err:
                if err.status != 404:  # expired (Events live an hour): create it again, series and all
                    raise
        api.create_namespaced_event(ns, _event_body(req))  # type: ignore[arg-type] # a dict: MicroTime as Go writes it
    except ApiException as err:
        if err.status == 409:
            return EventRecorded(recorded=True)  # a retried create: it is there
        if err.status is not None and (err.status >= 500 or err.status == 429):
            raise errors.transient(f"Kubernetes API error {err.status} on an Event") from None
        log.warning("event refused", status=err.status, reason=err.reason, event=req.name, namespace=ns)
        return EventRecorded(recorded=False)
    return EventRecorded(recorded=True)


ACTIVITIES = [patch_status, add_finalizer, remove_finalizer, check_secret, record_event]
