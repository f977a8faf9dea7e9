"""The Keystone sweep's activities (api/sweep.py): reports to the sweep workflow, and the drift scan.

`scan` is the one activity that reads more than one object: a read-only list per reported kind (the same
projection, `keystone.to_object`, that an object workflow's read digests), one list of role assignments,
and one login per password osprov manages. It writes nothing; what differs is returned and the sweep
wakes those objects' workflows, which decide and write as always. The reports are read with a query,
not passed as input, so the sweep's history stays one activity per tick however many objects there are.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from typing import Any

from temporalio import activity
from temporalio.service import RPCError

from osprov.activities import cloud, keystone, ownership
from osprov.activities.cloud import openstack_errors
from osprov.activities.contract import implements_async
from osprov.activities.errors import transient
from osprov.api import sweep as sw
from osprov.api.keystone_io import Grant
from osprov.api.sweep import Drift, Forget, Report, Scan, ScanResult, SweepInput, SweepState, Swept

log = logging.getLogger(__name__)


async def _signal_with_start(keystone_name: str, signal: str, arg: object) -> None:
    workflow_id = sw.workflow_id(keystone_name, activity.info().task_queue)
    start = SweepInput(keystone=keystone_name)
    label = f"the drift scan of the Keystone objects of {keystone_name}"
    await ownership.signal_with_start(sw.WORKFLOW_TYPE, start, workflow_id, signal, arg, label=label)


@implements_async(sw.REPORT)
async def report(request: Report) -> None:
    await _signal_with_start(request.keystone, sw.SIGNAL_REPORT, request)


@implements_async(sw.FORGET)
async def forget(request: Forget) -> None:
    await _signal_with_start(request.keystone, sw.SIGNAL_FORGET, request)


@implements_async(sw.SCAN)
async def scan(request: Scan) -> ScanResult:
    handle = activity.client().get_workflow_handle(request.sweep_workflow_id)
    try:
        state = await handle.query(sw.QUERY_SWEPT, result_type=SweepState)
    except RPCError as err:
        raise transient(f"cannot read the sweep's reports: {err.status.name}") from None
    return await asyncio.to_thread(compare, list(state.swept.values()))


def compare(swept: list[Swept]) -> ScanResult:
    """Which reports Keystone no longer matches (and why): the whole comparison, one list per kind."""
    by_kind: dict[str, list[Swept]] = {}
    for x in swept:
        by_kind.setdefault(x.key.kind, []).append(x)
    conn = cloud.admin_connection()
    drifted: list[Drift] = []
    for kind, reports in sorted(by_kind.items()):
        if kind == "grant":
            granted = _grants(conn)
            drifted += [
                Drift(path=x.key.path, reason="grant missing") for x in reports if x.grant not in granted
            ]
            continue
        with openstack_errors(f"list {kind}s"):
            digests = {
                obj.id: sw.digest(obj.fields)
                for obj in (keystone.to_object(kind, r) for r in keystone.proxy_call(conn, "list", kind)())
            }
        for x in reports:
            if x.id not in digests:
                drifted.append(Drift(path=x.key.path, reason="deleted"))
            elif digests[x.id] != x.digest:
                drifted.append(Drift(path=x.key.path, reason="fields changed"))
    seen = {d.path for d in drifted}
    drifted += [Drift(path=p, reason=why) for p, why in _policies(swept).items() if p not in seen]
    seen |= {d.path for d in drifted}
    drifted += [Drift(path=p, reason="password changed") for p in _passwords(swept) if p not in seen]
    return ScanResult(checked=len(swept), drifted=drifted)


def _grants(conn: Any) -> set[Grant]:
    """Every direct role assignment, as the Grant models the object workflows report."""
    with openstack_errors("list role assignments"):
        found: set[Grant] = set()
        for a in conn.identity.role_assignments():
            scope = a.scope or {}
            if "OS-INHERIT:inherited_to" in scope:
                continue
            found.add(
                Grant(
                    role_id=(a.role or {}).get("id", ""),
                    user_id=(a.user or {}).get("id"),
                    group_id=(a.group or {}).get("id"),
                    project_id=scope.get("project", {}).get("id"),
                    domain_id=scope.get("domain", {}).get("id"),
                    system="all" if scope.get("system") else None,
                )
            )
        return found


def _policies(swept: list[Swept]) -> dict[str, str]:
    """Objects whose operator policy changed since their step (the allow- or deny-list was edited)."""
    policy = functools.partial(ownership.policy_for, controller=ownership.controller_paths())
    return {x.key.path: "the operator's policy changed" for x in swept if policy(x.key) != x.policy}


def _passwords(swept: list[Swept]) -> list[str]:
    """Users whose Secret's password no longer logs in. Anything but a clear 401 is not drift (the next
    tick looks again), so a Keystone outage never wakes every user."""
    changed = []
    for x in swept:
        if x.probe is None:
            continue
        try:
            if keystone.probe_password(x.probe).outcome == "unauthorized":
                changed.append(x.key.path)
        except Exception as err:  # a typed ApplicationError: its message is user-safe
            log.warning("password check skipped for %s: %s", x.key.path, getattr(err, "message", type(err)))
    return changed


ACTIVITIES = [report, forget, scan]
