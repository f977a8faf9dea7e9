"""Helpers shared by the identity integration modules (test_identity_*.py); this module has no tests.

Everything here reads the real systems: Keystone's own database for failed logins and password writes,
Temporal for workflow histories, the worker/bridge logs and the resources' status for the leak scan.
"""

from __future__ import annotations

import asyncio
import base64
import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from openstack.identity.v3._proxy import Proxy as Identity
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from devenv.faults.proxy import FaultProxy
from devenv.openstack.infra import mysql_exec
from devenv.testing import StackEnv
from osprov.activities import keystone_sweep
from osprov.api import sweep
from osprov.api.ownership import SIGNAL_OBJECT_RESULT, ObjectKey
from osprov.api.registry import IDENTITY_KINDS
from tests.support.osprov import Osprov, admin_connection, clouds_env
from tests.support.waiting import wait_for


def uniq(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _hex_id(user_id: str) -> str:
    if not user_id or not all(c in "0123456789abcdef" for c in user_id):
        raise ValueError(f"unexpected user id {user_id!r}")
    return user_id


@dataclass(frozen=True)
class LoginRecord:
    """Keystone's own record for a local user: failed logins since the last success, and the newest
    password row (a new row is inserted on every password write)."""

    failed_auth_count: int
    failed_auth_at: str | None
    password_row: int


def login_record(user_id: str) -> LoginRecord:
    out = mysql_exec(
        "SELECT IFNULL(lu.failed_auth_count, 0), IFNULL(lu.failed_auth_at, ''), "
        "IFNULL(MAX(p.id), 0) FROM local_user lu LEFT JOIN password p ON p.local_user_id = lu.id "
        f"WHERE lu.user_id = '{_hex_id(user_id)}' GROUP BY lu.id;",
        "keystone",
    ).strip()
    if not out:
        raise LookupError(f"no local user {user_id} in Keystone")
    count, failed_at, row = out.split("\t")
    return LoginRecord(int(count), failed_at or None, int(row))


# ----- Temporal ---------------------------------------------------------------------------------


async def _client(stack: StackEnv) -> Client:
    return await Client.connect(stack.temporal_address, namespace=stack.temporal_namespace)


def histories(stack: StackEnv, namespace: str, since: datetime) -> dict[str, list[bytes]]:
    """Serialized history of every run of every workflow of a Kubernetes namespace started since `since`."""

    async def fetch() -> dict[str, list[bytes]]:
        client = await _client(stack)
        found: dict[str, list[bytes]] = {}
        query = f"StartTime >= '{since.astimezone(UTC).strftime('%Y-%m-%dT%H:%M:%SZ')}'"
        async for wf in client.list_workflows(query=query):
            if f"/{namespace}/" not in wf.id:
                continue
            history = await client.get_workflow_handle(wf.id, run_id=wf.run_id).fetch_history()
            found.setdefault(wf.id, []).extend(e.SerializeToString() for e in history.events)
        return found

    return asyncio.run(fetch())


def entity_state(osprov: Osprov, kind: str, name: str) -> dict[str, Any]:
    """A resource's workflow state (its `state` query, as JSON)."""

    async def query() -> dict[str, Any]:
        client = await Client.connect(
            osprov.stack.temporal_address, namespace=osprov.stack.temporal_namespace
        )
        state: dict[str, Any] = await client.get_workflow_handle(workflow_id(osprov, kind, name)).query(
            "state"
        )
        return state

    return asyncio.run(query())


def sweep_state(osprov: Osprov) -> sweep.SweepState:
    """The controller's Keystone sweep (its objects' drift check; workflows/keystone/sweep.py): the scans
    it has begun, and as `swept` every report its next scan compares (its shards' and its own).
    `osprov`: the controller's first namespace (its task queue)."""

    async def query() -> sweep.SweepState:
        client = await Client.connect(
            osprov.stack.temporal_address,
            namespace=osprov.stack.temporal_namespace,
            data_converter=pydantic_data_converter,
        )
        state, located = await keystone_sweep.read_all(client, "keystone", f"osprov-{osprov.namespace}")
        return state.model_copy(update={"swept": {path: x for path, (x, _) in located.items()}})

    return asyncio.run(query())


def sweep_ticks(osprov: Osprov) -> int:
    return sweep_state(osprov).ticks


def activity_runs(stack: StackEnv, workflow_id: str, activity: str) -> int:
    """How many times `activity` ran for a resource: in its workflow (all runs) and in the workflows of the
    Keystone objects it claimed (where its Keystone calls happen), scheduled or run as a local activity."""

    async def count() -> int:
        client = await _client(stack)
        ids = [workflow_id, *await _claimed_object_workflows(client, workflow_id)]
        total = 0
        for wid in ids:
            async for wf in client.list_workflows(query=f"WorkflowId = '{wid}'"):
                history = await client.get_workflow_handle(wf.id, run_id=wf.run_id).fetch_history()
                total += sum(1 for e in history.events if _activity_type(e) == activity)
        return total

    return asyncio.run(count())


async def _claimed_object_workflows(client: Client, workflow_id: str) -> list[str]:
    """The Keystone objects' workflows that answered this resource (read from the answers it received, so
    also after the resource's workflow ended)."""
    found: set[str] = set()
    async for wf in client.list_workflows(query=f"WorkflowId = '{workflow_id}'"):
        history = await client.get_workflow_handle(wf.id, run_id=wf.run_id).fetch_history()
        started = history.events[0].workflow_execution_started_event_attributes
        keystone = json.loads(started.input.payloads[0].data)["config"]["keystone_name"]
        for e in history.events:
            signal = e.workflow_execution_signaled_event_attributes
            if (
                e.HasField("workflow_execution_signaled_event_attributes")
                and signal.signal_name == SIGNAL_OBJECT_RESULT
            ):
                key = ObjectKey.model_validate(json.loads(signal.input.payloads[0].data)["key"])
                found.add(key.workflow_id(keystone, started.task_queue.name))
    return sorted(found)


def _activity_type(event: HistoryEvent) -> str | None:
    if event.HasField("activity_task_scheduled_event_attributes"):
        return event.activity_task_scheduled_event_attributes.activity_type.name
    marker = event.marker_recorded_event_attributes
    if event.HasField("marker_recorded_event_attributes") and marker.marker_name == "core_local_activity":
        data = json.loads(marker.details["data"].payloads[0].data)
        return str(data.get("activity_type"))
    return None


def workflow_id(osprov: Osprov, kind: str, name: str) -> str:
    obj = osprov.get(kind, name)
    assert obj is not None, f"{kind} {name} does not exist"
    return f"{kind}/{osprov.namespace}/{name}/{obj['metadata']['uid']}"


# ----- the leak scan ----------------------------------------------------------------------------


@dataclass
class Passwords:
    """Every test password a module put in a Secret, for the final scan."""

    values: list[str] = field(default_factory=list)

    def new(self) -> str:
        value = "pw-" + uuid.uuid4().hex + "-Zq"
        self.values.append(value)
        return value

    def forms(self) -> list[bytes]:
        """The value as it could appear: plain, base64 (Secret data, payloads), JSON-escaped."""
        out: list[bytes] = []
        for v in self.values:
            raw = v.encode()
            out += [raw, base64.b64encode(raw), json.dumps(v).encode()]
        return out


def all_statuses(osprov: Osprov) -> list[dict[str, Any]]:
    statuses: list[dict[str, Any]] = []
    for info in IDENTITY_KINDS:
        listed = cast(
            dict[str, Any],
            osprov.custom.list_namespaced_custom_object(
                info.group, info.version, osprov.namespace, info.plural
            ),
        )
        statuses += [i.get("status") or {} for i in listed["items"]]
    return statuses


def status_of(osprov: Osprov, kind: str, name: str) -> dict[str, Any]:
    return (osprov.get(kind, name) or {}).get("status") or {}


def wait_condition(
    osprov: Osprov,
    kind: str,
    name: str,
    want: Callable[[dict[str, Any]], bool],
    what: str,
    timeout_s: float = 60,
) -> dict[str, Any]:
    """Wait until the resource's Ready condition satisfies `want`; returns the condition."""

    def check() -> dict[str, Any] | None:
        cond = osprov.condition(kind, name)
        return cond if cond is not None and want(cond) else None

    return cast(dict[str, Any], wait_for(check, f"{kind} {name}: {what}", timeout_s))


def wait_new_id(osprov: Osprov, kind: str, name: str, field: str, old: str, timeout_s: float = 60) -> str:
    def check() -> str | None:
        current = status_of(osprov, kind, name).get(field)
        return str(current) if current and current != old else None

    return cast(str, wait_for(check, f"{kind} {name}: a new {field}", timeout_s))


def ready_status(
    osprov: Osprov, kind: str, name: str, timeout_s: float = 60, generation: int | None = None
) -> dict[str, Any]:
    """The status of the resource once Ready at `generation` (default: its current one)."""
    status: dict[str, Any] = osprov.wait_ready(kind, name, timeout_s=timeout_s, generation=generation)[
        "status"
    ]
    return status


def identity_client(stack: StackEnv) -> Iterator[Identity]:
    conn = admin_connection(stack)
    yield cast(Identity, conn.identity)
    conn.close()


def keystone_domain_id(ks: Identity, name: str) -> str:
    found = ks.find_domain(name)
    assert found is not None, f"domain {name} not in Keystone"
    return str(found.id)


def scan(osprov: Osprov, forms: list[bytes], since: datetime) -> tuple[list[tuple[str, str]], int]:
    """Where any of `forms` occurs, as (source, detail) with source "history", "<process> log" or
    "status"; and how much was scanned (events, log lines, statuses)."""
    hits: list[tuple[str, str]] = []
    scanned = 0
    for wf_id, events in histories(osprov.stack, osprov.namespace, since).items():
        for raw in events:
            scanned += 1
            hits += [("history", wf_id) for f in forms if f in raw]
    for proc in osprov.procs:
        text = proc.log_text().encode()
        scanned += text.count(b"\n")
        hits += [(f"{proc.name} log", str(proc.log_path)) for f in forms if f in text]
    for status in all_statuses(osprov):
        scanned += 1
        blob = json.dumps(status).encode()
        hits += [("status", blob[:80].decode(errors="replace")) for f in forms if f in blob]
    return hits, scanned


def plant_canary(osprov: Osprov) -> str:
    """A value that reaches every source the scan reads, the way a leaked secret would: a Project named
    after it and naming it as its (missing) domain. The bridge logs the name when it signals, the
    history carries the spec, the workflow logs and writes "domain '…' does not exist" into status."""
    canary = uniq("leak-canary")
    osprov.apply("Project", canary, {"name": canary, "domain": canary})
    wait_condition(
        osprov, "Project", canary, lambda c: canary in c.get("message", ""), "the canary in its Ready message"
    )
    wait_for(
        lambda: all(canary in p.log_text() for p in osprov.procs), "the canary in the worker and bridge logs"
    )
    return canary


def assert_no_leaks(osprov: Osprov, passwords: Passwords, since: datetime) -> int:
    """Zero hits for any test password in histories, logs and statuses; returns how much was scanned.

    Positive control first: a planted canary must be found in every source, so the scan cannot pass by
    reading nothing (a wrong query, an empty log path, a status list of another namespace)."""
    assert passwords.values, "the module made no passwords: the scan would prove nothing"
    canary = plant_canary(osprov)
    found, _ = scan(osprov, Passwords([canary]).forms(), since)
    wanted = {"history", "status"} | {f"{p.name} log" for p in osprov.procs}
    assert wanted <= {source for source, _ in found}, (
        f"the planted canary was not found in {sorted(wanted - {s for s, _ in found})}: the scan misses them"
    )
    hits, scanned = scan(osprov, passwords.forms(), since)
    assert not hits, f"test passwords found in: {sorted(set(hits))}"
    return scanned


# ----- a Keystone the worker reaches through a proxy (outages without stopping the shared one) ---


def proxied_clouds_env(stack: StackEnv, tmp: Path, proxy: FaultProxy) -> dict[str, str]:
    """Env for a worker whose every Keystone request (auth and API) goes through `proxy`."""

    def through_proxy(entry: dict[str, Any]) -> None:
        entry["auth"]["auth_url"] = f"{proxy.url}/v3"
        entry["identity_endpoint_override"] = f"{proxy.url}/v3"

    return clouds_env(stack, tmp, through_proxy)


def now() -> datetime:
    return datetime.now(UTC)
