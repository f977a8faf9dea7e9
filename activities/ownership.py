"""Ownership activities: messages to KeystoneObject workflows, and the operator's policy for an object.

A workflow can signal a running workflow but cannot signal-with-start one, so a claim or a watch (which
must start the object's workflow if it is not running yet) is one call of the worker's own Temporal client.
The policy is configuration of the controller — never of a resource — plus what must never be touched:
the controller's own user, project and domains, `admin`, and the identity service with its endpoints.

Environment (worker):
  OSPROV_OWNERSHIP_ALLOW   comma-separated object paths (fnmatch patterns, e.g. `project/Default/service`)
                           that osprov may converge although it did not create them
  OSPROV_OWNERSHIP_DENY    object paths osprov never writes or deletes (added to the built-in ones)
An object path is `kind/part/…` (api.ownership.ObjectKey.path), e.g. `domain/service`, `user/Default/nova`,
`role/admin`, `service/keystone/identity`, `endpoint/keystone/identity/RegionOne/public`; a grant's parts
are the escaped paths of its role, subject and scope: `grant/role%2Fmember/user%2FDefault%2Fosprov/project%2F*`.
A grant *to* a protected user (the controller's own) is made only when the allow-list names that grant.
"""

from __future__ import annotations

import asyncio
import fnmatch
import functools
import os
from datetime import timedelta
from typing import Any

import structlog
from temporalio import activity
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHandle
from temporalio.common import WorkflowIDReusePolicy
from temporalio.service import RPCError, RPCStatusCode

from osprov.activities import cloud
from osprov.activities.cloud import openstack_errors
from osprov.activities.contract import implements_async
from osprov.activities.errors import transient
from osprov.api import ownership as own
from osprov.api import releases
from osprov.api.messages import WORKFLOW_TASK_TIMEOUT
from osprov.api.ownership import Answer, Claim, ObjectKey, Policy, Release, Tell, Told, Watch, WatchAnswer

log = structlog.get_logger("osprov.activities.ownership")

# How long a watch waits for its parent's memo before falling back to the parent's signal answer.
READ_PARENT_TIMEOUT = timedelta(seconds=1)

# Built-in protections by object path (the bootstrap admin and the identity service's catalog entry).
PROTECTED: dict[str, str] = {
    "user/Default/admin": "the bootstrap admin user",
    "project/Default/admin": "the bootstrap admin project",
    "role/admin": "the admin role",
    "service/*/identity": "the identity service",
    "endpoint/*/identity/*": "the identity service's endpoints",
}


async def signal_with_start(
    workflow_type: str,
    start: object,
    workflow_id: str,
    signal: str,
    arg: object,
    *,
    label: str,
    start_delay: timedelta | None = None,
) -> None:
    """Signal a workflow of this worker's task queue, starting it with `start` if it is not running.
    `label` names it in the Web UI and in the (transient, retried) error when Temporal is unreachable.
    `start_delay`: a workflow this call starts takes its first task that much later (the signal is
    recorded at once); a running one handles the signal at once."""
    client: Client = activity.client()
    try:
        await client.start_workflow(
            workflow_type,
            start,
            id=workflow_id,
            task_queue=activity.info().task_queue,
            start_signal=signal,
            start_signal_args=[arg],
            id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
            task_timeout=WORKFLOW_TASK_TIMEOUT,
            static_summary=label,
            start_delay=start_delay,
        )
    except RPCError as err:
        raise transient(f"cannot reach the workflow of {label}: {err.status.name}") from None


async def _start_with(signal: str, keystone: str, key: ObjectKey, arg: object) -> None:
    workflow_id = key.workflow_id(keystone, activity.info().task_queue)
    start = own.ObjectInput(keystone=keystone, key=key, generation=releases.GENERATION)
    await signal_with_start(own.WORKFLOW_TYPE, start, workflow_id, signal, arg, label=f"Keystone {key}")


async def _signal_if_running(keystone: str, key: ObjectKey, signal: str, arg: object) -> bool:
    workflow_id = key.workflow_id(keystone, activity.info().task_queue)
    handle: WorkflowHandle[object, object] = activity.client().get_workflow_handle(workflow_id)
    try:
        await handle.signal(signal, arg)
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            return False  # not running: nothing is claimed or watched there
        raise transient(f"cannot reach the workflow of {key}: {err.status.name}") from None
    return True


@implements_async(own.CLAIM)
async def claim(request: Claim) -> None:
    """Deliver a claim to the object's workflow, starting it if needed."""
    await _start_with(own.SIGNAL_CLAIM, request.keystone, request.key, request)


@implements_async(own.WATCH)
async def watch(request: Watch) -> WatchAnswer | None:
    """Ask an object's workflow (started if needed) to tell a dependent its ID, and to wake it on change.

    When the object's memo already holds its ID, that is the answer, and the watch carries it as
    `known_id`: the object only registers the watcher, and answers with a signal only if its ID is no
    longer that one when the watch arrives (its handler compares, so a change between this read and the
    watch is never missed). Else (None) the object answers with a parent-ready signal. A domain with
    thousands of dependents thus writes one event per dependent instead of a step and a signal back each.

    A parent whose run is far past its length bound is behind (api/ownership.py `defers_watch`): the
    answer is the ID it holds, unregistered, and nothing is sent; the dependent registers again later."""
    known, length = await _read_parent(request.keystone, request.key)
    if known is not None and own.defers_watch(length):
        log.info("parent busy, watch deferred", parent=str(request.key), history_length=length)
        return WatchAnswer(key=known.key, present=known.present, id=known.id, registered=False)
    if known is not None:
        request = request.model_copy(update={"known_id": known.id})
    await _start_with(own.SIGNAL_WATCH, request.keystone, request.key, request)
    return known


async def _read_parent(keystone: str, key: ObjectKey) -> tuple[WatchAnswer | None, int]:
    """The object's ID from its running workflow's memo, and its run's length in events; None on any doubt
    (not running, no ID yet, an older worker's run without the memo, the server slow to answer): the
    signal answer is then the way.

    A describe, not a query: the server answers it from its record of the run, while a query waits for a
    worker's task and is refused ("consistent query buffer is full", retried for ~10 s) when the parent is
    busy with the watches of hundreds of dependents, as a shared domain is in a cold apply."""
    workflow_id = key.workflow_id(keystone, activity.info().task_queue)
    handle: WorkflowHandle[object, object] = activity.client().get_workflow_handle(workflow_id)
    try:
        described = await handle.describe(rpc_timeout=READ_PARENT_TIMEOUT)
        if described.status != WorkflowExecutionStatus.RUNNING:
            return None, 0  # a closed run's record is not news
        known = await described.memo_value(own.MEMO_ID, None, type_hint=str)
    except RPCError as err:
        if err.status != RPCStatusCode.NOT_FOUND:
            log.info("parent's memo unread, answer by signal", parent=str(key), reason=err.status.name)
        return None, 0
    length = described.history_length
    return (WatchAnswer(key=key, present=True, id=known) if known else None), length


@implements_async(own.RELEASE)
async def release(request: Release) -> bool:
    """Withdraw a claim; False when the object's workflow is not running (nothing was claimed there)."""
    return await _signal_if_running(request.keystone, request.key, own.SIGNAL_RELEASE, request)


@implements_async(own.UNWATCH)
async def unwatch(request: Watch) -> bool:
    return await _signal_if_running(request.keystone, request.key, "unwatch", request)


@functools.cache
def _controller_paths(cloud_name: str, config_file: str | None) -> dict[str, str]:
    """Object paths of the controller's own user, project and domains (cached per credentials)."""
    conn = cloud.admin_connection()
    identity: Any = conn.identity  # the v3 proxy (clouds.yaml pins identity v3)
    with openstack_errors("read the controller's own identity"):
        user = identity.get_user(conn.current_user_id)
        user_domain = identity.get_domain(user.domain_id).name
        paths = {
            ObjectKey(kind="user", domain=user_domain, name=user.name).path: "the controller's own user",
            ObjectKey(kind="domain", name=user_domain).path: "the controller's own domain",
        }
        if conn.current_project_id:
            project = identity.get_project(conn.current_project_id)
            project_domain = identity.get_domain(project.domain_id).name
            paths[ObjectKey(kind="project", domain=project_domain, name=project.name).path] = (
                "the controller's own project"
            )
            paths[ObjectKey(kind="domain", name=project_domain).path] = "the controller's own domain"
    return paths


def _patterns(variable: str) -> list[str]:
    return [p.strip() for p in os.environ.get(variable, "").split(",") if p.strip()]


def _matches(path: str, pattern: str) -> bool:
    return fnmatch.fnmatchcase(path, pattern)


def policy_for(key: ObjectKey, controller: dict[str, str]) -> Policy:
    """The ownership policy of one object: built-in protections, the controller's own identity, the
    operator's deny- and allow-lists (deny wins)."""
    allowed = any(_matches(key.path, p) for p in _patterns("OSPROV_OWNERSHIP_ALLOW"))
    subjects = [key.subject] if key.kind == "grant" and key.subject is not None else []
    for path in [key.path, *(s.path for s in subjects)]:
        if any(_matches(path, p) for p in _patterns("OSPROV_OWNERSHIP_DENY")):
            return Policy(protected=True, reason="the operator's deny-list names it")
        for pattern, why in [*PROTECTED.items(), *controller.items()]:
            if not _matches(path, pattern):
                continue
            if path == key.path:
                return Policy(protected=True, reason=why)
            # A grant *to* a protected user widens what that user (often the controller) may do: only
            # when the operator's allow-list names that grant (the local stack allows member roles).
            if not allowed:
                return Policy(protected=True, reason=f"it grants a role to {why}")
    return Policy(allowed=allowed, reason="the operator's allow-list names it" if allowed else "")


def controller_paths() -> dict[str, str]:
    """The controller's own objects (protected), for the credentials the worker runs with (cached)."""
    settings = cloud.CloudSettings.from_env()
    return _controller_paths(settings.cloud, settings.config_file)


@implements_async(own.POLICY)
async def policy(request: ObjectKey) -> Policy:
    # Async, so a claim's first task never waits for one of the activity threads behind Keystone calls:
    # the controller's paths are read once (in a thread of their own) and cached, the rest is a match.
    return policy_for(request, await asyncio.to_thread(controller_paths))


async def _signal_running(workflow_id: str, signal: str, arg: object) -> bool:
    """Signal a workflow; False when it is not running (NOT_FOUND), a transient error otherwise."""
    handle: WorkflowHandle[object, object] = activity.client().get_workflow_handle(workflow_id)
    try:
        await handle.signal(signal, arg)
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            return False
        raise transient(f"cannot reach the workflow of {workflow_id}: {err.status.name}") from None
    return True


@implements_async(own.ANSWER)
async def answer(request: Answer) -> bool:
    """Signal a claimant's workflow its object's result; False when that workflow is not running. A retry
    may deliver it twice: the claimant keeps the latest result per object, so a repeat changes nothing."""
    return await _signal_running(request.workflow_id, own.SIGNAL_OBJECT_RESULT, request.result)


@implements_async(own.TELL)
async def tell_watchers(request: Tell) -> Told:
    """Signal every watcher its parent's news at once: whom it reached, and the watchers whose workflows
    are not running. A retry may tell one twice: a dependent keeps its parent's latest answer, so a repeat
    costs it at most a step that changes nothing."""
    reached = await asyncio.gather(
        *(_signal_running(w, own.SIGNAL_PARENT_READY, request.ready) for w in request.watchers)
    )
    pairs = list(zip(request.watchers, reached, strict=True))
    return Told(told=[w for w, ok in pairs if ok], gone=[w for w, ok in pairs if not ok])


ACTIVITIES = [claim, watch, release, unwatch, policy, answer, tell_watchers]
