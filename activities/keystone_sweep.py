"""The Keystone sweep's activities (api/sweep.py): reports to their shard, a shard's wake of the lead, and
the drift scan.

`scan` is the one activity that reads more than one object: a read-only list per reported kind (paged
where Keystone pages; the same projection, `keystone.to_object`, that an object workflow's read digests),
one list of role assignments, and one login per password osprov manages. It writes nothing; what differs
is returned and the lead wakes those objects' workflows, which decide and write as always. The reports
are read with a query per shard, not passed as input, so the lead's history stays one activity per tick
however many objects there are, and no payload holds more than one shard's reports.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from datetime import timedelta
from typing import Any

from temporalio import activity
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from osprov.activities import cloud, keystone, ownership
from osprov.activities.cloud import openstack_errors
from osprov.activities.contract import implements_async
from osprov.activities.errors import transient
from osprov.api import sweep as sw
from osprov.api.keystone_io import Grant
from osprov.api.sweep import (
    Drift,
    Forget,
    Report,
    Scan,
    ScanResult,
    ShardInput,
    SweepInput,
    SweepState,
    Swept,
    Wake,
)

log = logging.getLogger(__name__)

# A shard started by a report runs its first workflow task this much later, and never later than one
# resync period of that report (no scan is due for it sooner than that when the lead is idle). The
# report is durable at once (the start's signal event); what waits is the shard's task, its wake of the
# lead and the lead's task: a bundle applied at once (a chart's identity resources) starts a dozen
# shards, and their tasks ran beside the bundle's own steps on a worker and a server short of CPU
# (docs/architecture.md, "Drift detection: the Keystone sweep"). A report to a running shard is a plain
# signal, handled at once; a second report to a shard still waiting ends the wait (signal-with-start's
# rule).
SHARD_FIRST_TASK_DELAY = timedelta(seconds=5)


def shard_start_delay(report: Report) -> timedelta:
    return min(SHARD_FIRST_TASK_DELAY, timedelta(seconds=report.swept.period_seconds))


@implements_async(sw.REPORT)
async def report(request: Report) -> None:
    """To the report's shard, started if needed (its first task a little later: SHARD_FIRST_TASK_DELAY)."""
    keystone_name, queue = request.keystone, activity.info().task_queue
    shard = sw.shard_of(request.swept.key.path)
    start = ShardInput(keystone=keystone_name, shard=shard)
    workflow_id = sw.shard_workflow_id(keystone_name, queue, shard)
    label = f"the drift reports of the Keystone objects of {keystone_name} (shard {shard})"
    await ownership.signal_with_start(
        sw.SHARD_WORKFLOW_TYPE,
        start,
        workflow_id,
        sw.SIGNAL_REPORT,
        request,
        label=label,
        start_delay=shard_start_delay(request),
    )


@implements_async(sw.FORGET)
async def forget(request: Forget) -> None:
    """To the report's shard and to the lead (which holds reports sent before the shards), if running:
    a forget starts nothing."""
    queue, client = activity.info().task_queue, activity.client()
    for workflow_id in (
        sw.shard_workflow_id(request.keystone, queue, sw.shard_of(request.path)),
        sw.workflow_id(request.keystone, queue),
    ):
        try:
            await client.get_workflow_handle(workflow_id).signal(sw.SIGNAL_FORGET, request)
        except RPCError as err:
            if err.status != RPCStatusCode.NOT_FOUND:
                raise transient(
                    f"cannot reach the drift scan of {request.keystone}: {err.status.name}"
                ) from None


@implements_async(sw.WAKE)
async def wake(request: Wake) -> None:
    """A shard's summary to the lead, started if needed (the first report of a deployment starts it)."""
    workflow_id = sw.workflow_id(request.keystone, activity.info().task_queue)
    start = SweepInput(keystone=request.keystone)
    label = f"the drift scan of the Keystone objects of {request.keystone}"
    await ownership.signal_with_start(
        sw.WORKFLOW_TYPE, start, workflow_id, sw.SIGNAL_WAKE, request, label=label
    )


Located = dict[str, tuple[Swept, str]]  # path -> (report, the workflow ID of the table holding it)


async def read_reports(client: Client, request: Scan) -> tuple[Located, list[str]]:
    """Every report to compare, by path, with the shard it came from ("" = the lead's own table), and the
    lead's reports that a shard holds too (stale: the object reports to its shard now)."""

    async def table(workflow_id: str) -> dict[str, Swept]:
        try:
            state = await client.get_workflow_handle(workflow_id).query(
                sw.QUERY_SWEPT, result_type=SweepState
            )
        except RPCError as err:
            if err.status == RPCStatusCode.NOT_FOUND:
                return {}  # a shard that ended (or never ran) holds nothing
            raise transient(f"cannot read the sweep's reports: {err.status.name}") from None
        return state.swept if state is not None else {}

    lead, *shards = await asyncio.gather(table(request.sweep_workflow_id), *map(table, request.shards))
    located: Located = {}
    for workflow_id, reports in zip(request.shards, shards, strict=True):
        located |= {path: (x, workflow_id) for path, x in reports.items()}
    stale = [path for path in lead if path in located]
    located |= {path: (x, "") for path, x in lead.items() if path not in located}
    return located, stale


def periods(located: Located) -> dict[int, float]:
    """Each shard's shortest period, by shard number (only shards that hold reports)."""
    shortest: dict[int, float] = {}
    for x, table in located.values():
        if table:
            n = sw.shard_number(table)
            shortest[n] = min(shortest.get(n, x.period_seconds), x.period_seconds)
    return shortest


async def read_all(client: Client, keystone_name: str, task_queue: str) -> tuple[SweepState, Located]:
    """The lead's state and every report its next scan would compare (tools and tests read them so)."""
    lead = sw.workflow_id(keystone_name, task_queue)
    try:
        state = await client.get_workflow_handle(lead).query(sw.QUERY_SWEPT, result_type=SweepState)
    except RPCError as err:
        raise transient(f"cannot read the sweep's reports: {err.status.name}") from None
    shards = [sw.shard_workflow_id(keystone_name, task_queue, n) for n in range(sw.SHARDS)]
    located, _ = await read_reports(client, Scan(sweep_workflow_id=lead, shards=shards))
    return state, located


def locate(drifted: list[Drift], located: Located) -> list[Drift]:
    """Each drift with the object's workflow to wake and the table that holds its report."""
    return [
        d.model_copy(update={"workflow_id": located[d.path][0].workflow_id, "table": located[d.path][1]})
        for d in drifted
    ]


@implements_async(sw.SCAN)
async def scan(request: Scan) -> ScanResult:
    located, stale = await read_reports(activity.client(), request)
    result = await asyncio.to_thread(compare, [x for x, _ in located.values()])
    update = {"drifted": locate(result.drifted, located), "stale": stale, "periods": periods(located)}
    return result.model_copy(update=update)


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
            listed = _listed(conn, kind, {x.id for x in reports if x.id})
            digests = {obj.id: sw.digest(obj.fields) for obj in (keystone.to_object(kind, r) for r in listed)}
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


# Keystone pages projects (domains are projects), users and groups by marker, and a list of them that names
# no `limit` is cut at its [DEFAULT] max_db_limit (1,000 by default) with no sign that it was cut: past it,
# every reported object would read as deleted. The other kinds' lists are not cut (their drivers take no
# marker, so they are read whole, as before).
PAGED_KINDS = frozenset({"domain", "project", "user", "group"})
PAGE = 1000  # Keystone's default max_db_limit; a deployment's lower cap only means more, shorter pages


def _listed(conn: Any, kind: str, wanted: set[str]) -> list[Any]:
    """What the comparison needs of a kind's list: a paged kind is read page by page until every reported
    ID is seen or a page comes back empty, so a converged deployment under one page pays one request."""
    list_kind = keystone.proxy_call(conn, "list", kind)
    if kind not in PAGED_KINDS:
        return list(list_kind())
    found: list[Any] = []
    missing, marker = set(wanted), None
    while True:
        page = list(list_kind(paginated=False, limit=PAGE, **({"marker": marker} if marker else {})))
        found += page
        missing -= {str(r.id) for r in page}
        if not page or not missing:
            return found
        marker = page[-1].id


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


ACTIVITIES = [report, forget, wake, scan]
