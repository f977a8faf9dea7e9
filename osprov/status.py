"""`osprov status KIND/NAME [-n NAMESPACE]`: what one resource's workflow is doing now, read from Temporal.

For an operator at a terminal, the essentials of the workflow's Web UI page: the step it is on or waits in,
the last failure (the user-safe text its status condition carries, never a secret), the generation it
applied against the one it wants, when it retries or resyncs, the activity Temporal is retrying right now
with its attempt count and last failure (decoded with the codec keys, as the Web UI's codec server does),
the resource's recent Events, and the Web UI link (OSPROV_TEMPORAL_UI_URL). Read-only: one visibility
list, one query, one describe, one Event list. The workflow is found by the search attributes the bridge
sets when it starts it (api/search_attributes.py), so a recreated resource (a new UID) shows its current
workflow.

Exit status: 0 converged (the ready condition is True), 1 not converged, 2 no such workflow or bad usage.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException
from kubernetes.config import ConfigException
from temporalio.client import Client, WorkflowExecution, WorkflowExecutionStatus

from osprov.api import registry
from osprov.api import search_attributes as sa
from osprov.api.messages import QUERY_STATE, EntityState
from osprov.runtime import kube, logs
from osprov.runtime.settings import Settings
from osprov.runtime.temporal import connect


@dataclass
class Report:
    """What `osprov status` prints about one resource."""

    kind: str
    namespace: str
    name: str
    workflow_id: str
    run_status: str
    ready: str | None = None  # "True" | "False" | "Unknown": the kind's ready condition
    reason: str | None = None
    message: str | None = None
    step: str | None = None
    last_failure: str | None = None
    failures: int = 0
    wanted_generation: int | None = None
    applied_generation: int | None = None
    retry_at: datetime | None = None
    resync_at: datetime | None = None
    paused: bool = False
    retrying: list[str] = field(default_factory=list)  # "name (attempt n): last failure"
    events: list[str] = field(default_factory=list)  # the resource's most recent Events, oldest first
    link: str | None = None  # the workflow in the Temporal Web UI

    @property
    def converged(self) -> bool:
        return self.ready == "True" and self.wanted_generation == self.applied_generation


def resolve_kind(text: str) -> registry.KindInfo:
    """A kind by its name or plural, any case (`Volume`, `volume`, `volumes`)."""
    wanted = text.lower()
    for info in registry.ALL_KINDS:
        if wanted in (info.kind.lower(), info.plural):
            return info
    known = ", ".join(sorted(i.kind for i in registry.ALL_KINDS))
    raise ValueError(f"unknown kind {text!r} (known: {known})")


def _quote(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


async def latest_workflow(
    client: Client, info: registry.KindInfo, namespace: str, name: str
) -> WorkflowExecution | None:
    """The resource's workflow: a running one first, else the latest (found by its search attributes)."""
    query = " AND ".join(
        f"{key.name} = {_quote(value)}"
        for key, value in ((sa.KIND, info.kind), (sa.NAMESPACE, namespace), (sa.NAME, name))
    )
    found = [wf async for wf in client.list_workflows(query)]
    if not found:
        return None
    running = [wf for wf in found if wf.status == WorkflowExecutionStatus.RUNNING]
    return max(running or found, key=lambda wf: wf.start_time)


async def find(client: Client, info: registry.KindInfo, namespace: str, name: str) -> Report | None:
    """The resource's workflow (a running one first, else the latest), its state and pending activities."""
    latest = await latest_workflow(client, info, namespace, name)
    if latest is None:
        return None
    report = Report(
        kind=info.kind,
        namespace=namespace,
        name=name,
        workflow_id=latest.id,
        run_status=latest.status.name if latest.status else "UNKNOWN",
    )
    handle = client.get_workflow_handle(latest.id, run_id=latest.run_id)
    description = await handle.describe()
    for activity in description.raw_description.pending_activities:
        if activity.attempt > 1:
            line = f"{activity.activity_type.name} (attempt {activity.attempt})"
            if activity.HasField("last_failure"):
                failure = await client.data_converter.decode_failure(activity.last_failure)
                line += f": {failure}"
            report.retrying.append(line)
    ui = os.environ.get("OSPROV_TEMPORAL_UI_URL", "").rstrip("/")
    if ui:
        report.link = f"{ui}/namespaces/{client.namespace}/workflows/{quote(latest.id, safe='')}"
    if latest.status == WorkflowExecutionStatus.RUNNING:
        state = await handle.query(QUERY_STATE, result_type=EntityState[Any])
        _fill(report, state, info.ready_condition)
    return report


def _fill(report: Report, state: EntityState[Any], ready_type: str) -> None:
    ready = next((c for c in state.conditions if c.type == ready_type), None)
    if ready is not None:
        report.ready, report.reason, report.message = ready.status, ready.reason, ready.message
    report.step, report.last_failure, report.failures = state.step, state.last_error, state.failures
    report.wanted_generation = state.desired.generation if state.desired else None
    applied = (state.applied_fingerprint or "").split("|", 1)[0]
    report.applied_generation = int(applied) if applied.isdigit() else None
    report.retry_at, report.resync_at, report.paused = state.retry_at, state.resync_at, state.ops.paused


def _when(at: datetime | None, now: datetime) -> str:
    if at is None:
        return "-"
    seconds = (at - now).total_seconds()
    return f"{at.isoformat(timespec='seconds')} (in {seconds:.0f}s)" if seconds >= 0 else "due now"


def _resync(report: Report, now: datetime) -> str:
    keystone = report.kind in {k.kind for k in registry.IDENTITY_KINDS}
    if keystone and report.resync_at is None and report.retry_at is None and not report.last_failure:
        return "- (converged: the Keystone sweep checks its objects for drift)"
    return _when(report.resync_at, now)


def render(report: Report, now: datetime | None = None) -> str:
    now = now or datetime.now(UTC)
    condition = report.ready or "-"
    if report.reason:
        condition += f" ({report.reason})"
    rows = [
        ("resource", f"{report.kind} {report.namespace}/{report.name}"),
        ("workflow", f"{report.workflow_id} [{report.run_status}]"),
        ("ready", condition + (f": {report.message}" if report.message else "")),
        ("step", report.step or "-"),
        ("last failure", report.last_failure or "-"),
        ("generation", f"wanted {report.wanted_generation}, applied {report.applied_generation}"),
        ("paused", "yes (annotation)" if report.paused else "no"),
        ("next retry", _when(report.retry_at, now)),
        ("next resync", _resync(report, now)),
        ("retrying now", "; ".join(report.retrying) or "-"),
        ("web ui", report.link or "- (set OSPROV_TEMPORAL_UI_URL)"),
    ]
    if report.failures:
        rows[4] = ("last failure", f"{report.last_failure} ({report.failures} failed passes in a row)")
    width = max(len(k) for k, _ in rows)
    lines = [f"{k + ':':<{width + 1}} {v}" for k, v in rows]
    lines.append("events:" + ("" if report.events else " -"))
    lines.extend(f"  {e}" for e in report.events)
    return "\n".join(lines)


def recent_events(kind: str, namespace: str, name: str, limit: int = 5) -> list[str]:
    """The resource's latest Events as `kubectl describe` lists them (its kubeconfig or in-cluster
    account; none when the API cannot be reached: the report stands without them)."""
    try:
        core = k8s.CoreV1Api(kube.api_client("osprov-status"))
        selector = f"involvedObject.kind={kind},involvedObject.name={name}"
        items = core.list_namespaced_event(namespace, field_selector=selector).items
    except (ApiException, OSError, ConfigException) as err:
        return [f"(cannot list Events: {type(err).__name__})"]

    def when(e: Any) -> datetime:
        t = e.last_timestamp or e.event_time or e.first_timestamp
        return t if t is not None else datetime.min.replace(tzinfo=UTC)

    shown = sorted(items, key=when)[-limit:]
    return [f"{e.type} {e.reason} (x{e.count or 1}): {e.message}" for e in shown]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="osprov status", description=__doc__.split("\n\n")[0])
    parser.add_argument("resource", help="KIND/NAME, e.g. Volume/data or volumes/data")
    parser.add_argument("-n", "--namespace", default=os.environ.get("OSPROV_STATUS_NAMESPACE", "default"))
    args = parser.parse_args(argv)
    kind, _, name = args.resource.partition("/")
    try:
        info = resolve_kind(kind)
    except ValueError as err:
        parser.error(str(err))
    if not name:
        parser.error("give the resource as KIND/NAME")
    report = asyncio.run(_report(info, args.namespace, name))
    if report is None:
        print(f"no osprov workflow for {info.kind} {args.namespace}/{name}")
        return 2
    print(render(report))
    return 0 if report.converged else 1


async def _report(info: registry.KindInfo, namespace: str, name: str) -> Report | None:
    logs.configure("WARNING", component="status")  # stdout is the report
    temporal = await connect(Settings())
    report = await find(temporal, info, namespace, name)
    if report is not None:
        report.events = await asyncio.to_thread(recent_events, info.kind, namespace, name)
    return report
